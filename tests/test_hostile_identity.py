"""Hostile tests of a worker's own identity and of the folders its imports look in (issue 31).

Two gaps of the walls, attacked for real, in both modes (marked `walls`: tests/test_wall_modes.py
runs them again with CAP_SYS_ADMIN dropped, Gradescope's container, where there are no namespaces):

  * workers graded at once (two students', or the oracle's beside the main one) all ran as `nobody`:
    without namespaces, where Landlock is older than ABI 6 one could signal the other, and where Landlock
    is absent open its /proc/<pid>/mem; RLIMIT_NPROC was shared. Each worker now has a uid and gid of its
    own (2^30 + its pid, owning nothing): a student's worker tries to signal, ptrace, and read the mem
    and environ of a classmate's worker running at the same time; everything is refused, the two run
    as two uids (read from /proc by the test, not asked of the workers), and the classmate still answers.
    (This kernel may have Landlock, which refuses most of it too; the distinct uids are what refuse it
    where Landlock is missing, and are asserted for themselves.)
  * a module the code writes while it loads, named after an installed module not yet imported
    (`colorsys.py`), was imported from the submission's folder, first on `sys.path`, and the by-hand
    scan took the import for the installed library: a helper thread ran scipy's softmax and kept the
    by-hand points. The folders on `sys.path` are now read-only to the code and its cwd (where an honest
    notebook saves a file) is a scratch copy not on `sys.path`: the written module is not imported, and
    code that puts its cwd on `sys.path` itself is judged unclear by the scan. Both attacks lose the
    by-hand points; an honest notebook that writes files in its cwd keeps full marks.
"""

import os
import textwrap

import numpy as np
import pytest

from checker.running.runner import Grader
from checker.running.sandbox import Limits, SubmissionHandle, Zygote
from sandbox_helpers import GOOD, write

pytestmark = [pytest.mark.slow, pytest.mark.walls]

PEEK = GOOD + textwrap.dedent('''
    import ctypes
    import os
    import signal
    import sys

    def _try(f):
        try:
            return "ok: " + str(f())[:100]
        except BaseException as e:
            return "refused: " + type(e).__name__

    def whoami():
        return {"uid": os.getuid(), "gid": os.getgid(), "cwd": os.getcwd(), "path": list(sys.path)}

    def attack(pids):
        libc = ctypes.CDLL(None, use_errno=True)
        out = {}
        for pid in pids:
            def trace():
                if libc.ptrace(16, pid, 0, 0) != 0:  # PTRACE_ATTACH
                    raise OSError(ctypes.get_errno(), "ptrace")
                libc.ptrace(17, pid, 0, 0)  # PTRACE_DETACH
                return "attached"
            out[f"signal {pid}"] = _try(lambda: os.kill(pid, signal.SIGSTOP))
            out[f"mem {pid}"] = _try(lambda: os.close(os.open(f"/proc/{pid}/mem", os.O_RDONLY)) or "opened")
            out[f"environ {pid}"] = _try(lambda: open(f"/proc/{pid}/environ", "rb").read())
            out[f"ptrace {pid}"] = _try(trace)
        return out
    ''')


def _children(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(k) for k in f.read().split()]
    except OSError:
        pass
    return out


def _uids(pid):
    with open(f"/proc/{pid}/status") as f:
        return [int(x) for x in next(ln for ln in f if ln.startswith("Uid:")).split()[1:]]


def _handle(zyg, path):
    h = SubmissionHandle(str(path), zyg, Limits(call_s=10, cell_s=10, submission_s=60))
    report = h.load()
    if not report["ok"] and any("unavailable(refused to run code as root)" in w for w in h.isolation):
        h.close()  # root without namespaces where no other uid can reach Python (tests/test_hostile_fallback.py)
        pytest.skip("the grader refuses to run code here: root, no namespaces, this Python closed to others")
    assert report["ok"], report
    return h


def test_two_workers_graded_at_once_cannot_reach_each_other(tmp_path):
    with Zygote() as zyg:
        victim = _handle(zyg, write(tmp_path / "alice", "hw.py", PEEK))
        mallory = _handle(zyg, write(tmp_path / "mallory", "hw.py", PEEK))
        try:
            # the victim's processes as the host sees them: its worker and the worker's body (and below)
            pids = [victim.pid, *_children(victim.pid)]
            bodies = {h: _children(h.pid)[0] for h in (victim, mallory)}
            assert len(pids) >= 2, pids
            out = mallory.call("attack", pids)
            assert out and all(v.startswith("refused") for v in out.values()), out
            # two uids, neither the grader's nor shared, and each said in grader.isolation
            if os.geteuid() == 0:  # as an ordinary user they are the grader's own uid outside a user namespace
                uv, um = _uids(bodies[victim]), _uids(bodies[mallory])
                assert len(set(uv)) == 1 and len(set(um)) == 1, (uv, um)
                assert uv[0] != um[0] and 0 not in (uv[0], um[0]) and 65534 not in (uv[0], um[0]), (uv, um)
            seen = {h: h.call("whoami") for h in (victim, mallory)}
            assert seen[victim]["uid"] != seen[mallory]["uid"], seen
            for h in (victim, mallory):
                assert f"user-unique(uid {seen[h]['uid']}" in " ".join(h.isolation), h.isolation
                # its cwd is its scratch folder, and neither it nor '' is where its imports look
                scratch = os.path.join(h.workdir, "scratch")
                assert seen[h]["cwd"].startswith(scratch + os.sep), seen[h]
                assert not [p for p in seen[h]["path"] if p in ("", ".") or p.startswith(scratch)], seen[h]
                assert not [w for w in h.isolation if "shared by the workers" in w], h.isolation
            # the classmate was neither stopped nor killed: it still answers, correctly
            got = victim.call("get_scores", np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([2.0, 3.0]))
            assert np.allclose(got, [2.0, 3.0]), got
        finally:
            mallory.close()
            victim.close()


# ---------------------------------------------------------------- a module written while the code loads

SCIPY = "from scipy.special import softmax as _w\n"
# GOOD whose get_attention_weights calls `_w` from a helper thread (the worker's own trace does not follow it)
BASE = GOOD.replace('''def get_attention_weights(scores):
    scores = np.asarray(scores)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
''', '''def get_attention_weights(scores):
    out = []
    t = threading.Thread(target=lambda: out.append(_w(np.asarray(scores, dtype=float), axis=-1)))
    t.start()
    t.join()
    return out[0]
''').replace("import math\n", "import math\nimport threading\n")
assert BASE != GOOD
WRITE = f"open('colorsys.py', 'w').write({SCIPY!r})\n"
ATTACKS = {
    # written beside the code (the old cwd, first on sys.path), imported under an installed module's name
    "written_beside": WRITE + "from colorsys import _w\n" + BASE,
    # the same, with its cwd put on sys.path by the code itself: runs, and the scan cannot tell
    "cwd_put_on_path": "import sys\nsys.path.insert(0, '.')\n" + WRITE + "from colorsys import _w\n" + BASE,
    # written into the folder of the code itself, by its own path
    "written_by_path": ("import os\nopen(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'colorsys.py'), "
                        f"'w').write({SCIPY!r})\nfrom colorsys import _w\n" + BASE),
}
HONEST = GOOD + textwrap.dedent('''
    # a notebook saves its results and a plot beside it, and reads them back
    import os
    np.save("scores.npy", np.arange(3))
    with open("plot.txt", "w") as f:
        f.write("a plot")
    os.makedirs("figures", exist_ok=True)
    with open(os.path.join("figures", "fig1.txt"), "w") as f:
        f.write("x")
    SAVED = int(np.load("scores.npy").sum()) + len(open("plot.txt").read())
    assert SAVED == 9
    ''')


@pytest.fixture(scope="module")
def by_hand_grader():
    with Grader(mode="public", pytest_args=["-k", "test_attention_weights_by_hand or test_attention_weights_handout"]) as g:
        yield g


def _tests(card):
    return {t["name"]: t for q in card["questions"] for t in q["tests"]}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_module_written_at_load_time_loses_the_by_hand_points(by_hand_grader, tmp_path, attack):
    card = by_hand_grader.grade(write(tmp_path / "sub", "hw.py", ATTACKS[attack]), "attention")
    if any("unavailable(refused to run code as root)" in w for w in card["grader"]["isolation"]):
        pytest.skip("the grader refuses to run code here: root, no namespaces, this Python closed to others")
    by_hand = _tests(card)["test_attention_weights_by_hand"]
    assert by_hand["outcome"] != "passed" and by_hand["points"] == 0, by_hand
    if attack == "cwd_put_on_path":  # it ran scipy's softmax: the scan says why it cannot judge
        assert _tests(card)["test_attention_weights_handout"]["outcome"] == "passed", card
        assert "changes where Python finds modules" in by_hand["message"], by_hand["message"]


def test_an_honest_notebook_that_saves_files_in_its_cwd_keeps_full_marks(by_hand_grader, tmp_path):
    card = by_hand_grader.grade(write(tmp_path / "sub", "hw.py", HONEST), "attention")
    if any("unavailable(refused to run code as root)" in w for w in card["grader"]["isolation"]):
        pytest.skip("the grader refuses to run code here: root, no namespaces, this Python closed to others")
    tests = _tests(card)
    assert tests and all(t["outcome"] == "passed" for t in tests.values()), tests
    assert card["load"]["ok"] and not [m for m in card["load"]["messages"] if "Error" in m], card["load"]


WHO = GOOD + textwrap.dedent('''
    import getpass
    import os

    def user_name():
        return [getpass.getuser(), os.path.isdir(os.path.expanduser("~"))]
    ''')


def test_code_that_asks_for_its_user_name_gets_one_in_both_modes(tmp_path):
    """The worker's uid is in no passwd of the host (without namespaces there is no passwd of its own), so
    `getpass.getuser()` raised KeyError from `pwd`: on a real H200 without namespaces torch's own
    meta-device path asked for it (its compile cache's folder) and the correct ViT lost 8 points, its
    meta tests failing with "getpwuid(): uid not found" and then "Artifact ... already registered". The
    worker now says who it is in its environment (USER, LOGNAME), as a login would."""
    with Zygote() as zyg:
        h = _handle(zyg, write(tmp_path, "who.py", WHO))
        try:
            assert h.call("user_name") == ["nobody", True]
        finally:
            h.close()
