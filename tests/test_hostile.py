"""Hostile submissions, run for real: the trust boundary holds and hwcheck keeps going.

Every submission here is a small numpy-only `.py` file (or folder) for the
`attention` assignment, written into tmp_path and run in a real worker forked
by a real zygote (or graded end to end by `Grader.grade`). Each test checks that
  - hwcheck keeps running: the zygote is alive and a fresh handle answers
    (checked after every test by the autouse fixture);
  - the result is right: the hostile part scores nothing, the rest still works;
  - nothing is forged: no file the grader reads changes, the trusted side's
    numpy is untouched;
  - no process is left behind: nothing remains under the zygote once the
    handles are closed (its orphan sweep runs every 0.2 s).
"""
import builtins
import json
import os
import resource
import textwrap
import time

import numpy as np
import numpy.testing
import pytest

from checker.errors import BadReturn, StudentError, StudentTimeout, WorkerCrashed
from checker.worker.isolation import landlock_abi
from checker.running.sandbox import Limits, SubmissionHandle, Zygote, sha256_of
from sandbox_helpers import (CONTEXT_D1, GOOD, H_D1, H_E, WRONG, cmdline, descendants, wait_until,
                             with_marker, write)

FAST = dict(call_s=2, cell_s=2, submission_s=30)
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ABI = landlock_abi()
needs_landlock = pytest.mark.skipif(ABI == 0, reason="Landlock is not available on this kernel: a worker can "
                                                       "read and write every file its user can")


@pytest.fixture(scope="module")
def zyg():
    with Zygote() as z:
        yield z


@pytest.fixture(autouse=True)
def nothing_left_behind(request, tmp_path_factory):
    """After each test: every zygote used is alive, has no process under it any more, and a fresh
    handle on a correct submission works."""
    zygotes = []
    request.node.zygotes = zygotes
    yield
    for z in zygotes:
        assert z.alive(), "the zygote died"
        assert_no_workers(z)
        assert_healthy(z, tmp_path_factory.mktemp("healthy"))
        assert_no_workers(z)


def assert_no_workers(z):
    left = wait_until(lambda: not descendants(z.pid), timeout=1.5)
    assert left, f"processes left under the zygote: {[(p, cmdline(p)) for p in descendants(z.pid)]}"


def use(request, z):
    request.node.zygotes.append(z)
    return z


def open_sub(z, path, **limits):
    h = SubmissionHandle(str(path), z, Limits(**{**FAST, **limits}))
    return h, h.load()


def assert_healthy(z, tmp_path):
    """A fresh handle on a correct submission loads and answers correctly."""
    h, report = open_sub(z, write(tmp_path, "healthy/good.py", GOOD))
    try:
        assert report["ok"], report["messages"]
        got = h.call("context_vector", np.array(H_E), np.array(H_D1))
        np.testing.assert_allclose(got, CONTEXT_D1, atol=1e-6)
    finally:
        h.close()


def line_of(src, text):
    return src.splitlines().index(text) + 1


def auto_scores(card):
    return {q["id"]: q["score"] for q in card["questions"] if not q["manual"]}


def assert_no_better_than(card, control):
    """The hostile submission earns nothing its plain-wrong twin (the control) does not."""
    got, base = auto_scores(card), auto_scores(control)
    for qid, score in got.items():
        assert score <= base[qid], f"{qid}: {score} > control {base[qid]}"
    assert sum(got.values()) < sum(q["max_score"] for q in card["questions"] if not q["manual"])
    assert card["status"] == "graded"


@pytest.fixture(scope="module")
def control_card(grader, tmp_path_factory):
    return grader.grade(write(tmp_path_factory.mktemp("control"), "wrong.py", WRONG), "attention")


# --------------------------------------------------------------------------- exits

EXIT_AT_IMPORT = GOOD + textwrap.dedent('''
    import os
    import sys
    sys.exit(0)
    def after_sys_exit():
        return 1
    os._exit(0)
    def after_os_exit():
        return 2
''')


def test_exit_at_import(request, zyg, tmp_path):
    use(request, zyg)
    path = write(tmp_path, "exits.py", EXIT_AT_IMPORT)
    h, report = open_sub(zyg, path)
    try:
        text = "\n".join(report["messages"])
        assert f"exits.py, line {line_of(EXIT_AT_IMPORT, 'sys.exit(0)')}" in text and "sys.exit(0)" in text
        assert f"exits.py, line {line_of(EXIT_AT_IMPORT, 'os._exit(0)')}" in text and "os._exit(0)" in text
        assert "skipped" in text
        assert not report["ok"]
        assert h.call("after_sys_exit") == 1 and h.call("after_os_exit") == 2
        np.testing.assert_allclose(h.call("context_vector", np.array(H_E), np.array(H_D1)), CONTEXT_D1, atol=1e-6)
    finally:
        h.close()


EXIT_IN_CALL = GOOD + textwrap.dedent('''
    def leave():
        import sys
        sys.exit(3)

    def vanish():
        import os
        os._exit(0)

    def denied():
        raise PermissionError(13, "Permission denied", "/somewhere")

    def close_fds():
        import os
        for fd in range(3, 256):
            try:
                os.close(fd)
            except OSError:
                pass
        return 1
''')


def test_exit_in_call(request, zyg, tmp_path):
    use(request, zyg)
    h, report = open_sub(zyg, write(tmp_path, "exits_call.py", EXIT_IN_CALL))
    try:
        assert report["ok"], report["messages"]
        with pytest.raises(StudentError, match=r"sys\.exit\(3\)") as e:
            h.call("leave")
        assert str(e.value).endswith("\n    sys.exit(3)"), "the quoted line of code comes last, alone"
        with pytest.raises(StudentError, match="PermissionError") as e:
            h.call("denied")
        assert "runs your code in a sandbox" in str(e.value)
        assert h.restarts == 0  # sys.exit is just an exception: the same worker goes on
        assert h.call("head_weight_shape", 8, 2) == (8, 4)
        with pytest.raises(WorkerCrashed, match=r"os\._exit\(0\)") as e:
            h.call("vanish")
        assert "restarted" in str(e.value)
        assert h.call("head_weight_shape", 8, 2) == (8, 4)
        assert h.restarts == 1
        with pytest.raises(WorkerCrashed, match="closed the connection the grader uses") as e:
            h.call("close_fds")  # really closes the worker's socket: no reply can reach the grader
        assert "os._exit" not in str(e.value)
        assert h.call("head_weight_shape", 8, 2) == (8, 4) and h.restarts == 2
    finally:
        h.close()


# --------------------------------------------------------------------------- loops

LOOP_AT_IMPORT = GOOD + textwrap.dedent('''
    while True:
        pass
    def after_loop():
        return 3
''')


def _healthy_load_s(zyg, tmp_path):
    """How long a worker takes here and now to start, put up its walls and load the good code: the part of a
    stopped load that is not the loop's own limit (a loaded 2-core machine took 4 s of it, past a fixed bound)."""
    t0 = time.monotonic()
    h, _ = open_sub(zyg, write(tmp_path, "healthy.py", GOOD))
    h.close()
    return time.monotonic() - t0


def test_infinite_loop_at_import(request, zyg, tmp_path):
    use(request, zyg)
    healthy = _healthy_load_s(zyg, tmp_path)
    t0 = time.monotonic()
    h, report = open_sub(zyg, write(tmp_path, "loop.py", LOOP_AT_IMPORT))
    try:
        # stopped at its 2 s limit: the limit, 2 s of slack, and three loads' worth of the rest
        assert time.monotonic() - t0 < 2 + 2 + 3 * healthy
        text = "\n".join(report["messages"])
        assert f"loop.py, line {line_of(LOOP_AT_IMPORT, 'while True:')}" in text and "longer than 2 s" in text
        assert h.call("after_loop") == 3
    finally:
        h.close()


STUBBORN_LOOP = GOOD + textwrap.dedent('''
    while True:
        try:
            while True:
                pass
        except BaseException:
            pass
    def after_stubborn_loop():
        return 3
''')


@pytest.mark.slow
def test_loop_that_swallows_the_alarm_at_import(request, zyg, tmp_path):
    use(request, zyg)
    healthy = _healthy_load_s(zyg, tmp_path)
    t0 = time.monotonic()
    h, report = open_sub(zyg, write(tmp_path, "stubborn.py", STUBBORN_LOOP))
    try:
        # its 2 s limit, the 1.5 s grace before the kill, then a new worker loads the code up to the loop
        assert time.monotonic() - t0 < 2 + 1.5 + 2 + 4 * healthy
        text = "\n".join(report["messages"])
        assert f"stubborn.py, line {line_of(STUBBORN_LOOP, 'while True:')}" in text
        assert "did not stop" in text and "skipped" in text
        assert h.call("after_stubborn_loop") == 3
    finally:
        h.close()


LOOP_IN_CALL = GOOD + textwrap.dedent('''
    def spin():
        while True:
            pass
''')


def test_infinite_loop_in_call(request, zyg, tmp_path):
    use(request, zyg)
    h, report = open_sub(zyg, write(tmp_path, "spin.py", LOOP_IN_CALL))
    try:
        t0 = time.monotonic()
        with pytest.raises(StudentTimeout, match="did not finish within 2 s"):
            h.call("spin")
        assert time.monotonic() - t0 < 4
        np.testing.assert_allclose(h.call("context_vector", np.array(H_E), np.array(H_D1)), CONTEXT_D1, atol=1e-6)
    finally:
        h.close()


def test_a_load_that_hangs_under_a_short_timeout_keeps_what_came_before(request, zyg, tmp_path):
    """--timeout 10 for attention: the top-level loop is stopped as one statement (the load limit shrinks
    with the budget), and the functions defined before it are graded; a load that runs out of time as a
    whole says so once, and each call is told it did not run, with no restart attempted."""
    use(request, zyg)
    from checker.spec import load_spec
    limits = Limits.from_spec(load_spec("attention"), 10)
    path = write(tmp_path, "top_loop.py", GOOD + "\nwhile True:\n    pass\n")
    h = SubmissionHandle(str(path), zyg, limits)
    try:
        report = h.load()
        assert any("ran longer than 2.5 s and was stopped" in m for m in report["messages"]), report["messages"]
        np.testing.assert_allclose(h.call("context_vector", np.array(H_E), np.array(H_D1)), CONTEXT_D1, atol=1e-6)
    finally:
        h.close()

    slow = GOOD + "".join("\ntime.sleep(0.9)" for _ in range(9))
    h, report = open_sub(zyg, write(tmp_path, "slow_load.py", "import time\n" + slow),
                         call_s=1, cell_s=1, submission_s=3)   # the whole load may take 6 s
    try:
        assert report["ok"] is False and h.status == "timeout"
        (message,) = report["messages"]
        assert message.startswith("loading the submission failed: slow_load.py, line ") and "6 s in all" in message
        t0 = time.monotonic()
        for _ in range(3):
            with pytest.raises(StudentTimeout, match="not run: your submission did not finish loading"):
                h.call("context_vector", np.array(H_E), np.array(H_D1))
        assert time.monotonic() - t0 < 1
        assert h.load_report()["messages"] == [message]   # told once
    finally:
        h.close()


HANGS_ON_2D = GOOD + textwrap.dedent('''
    _good_weights = get_attention_weights
    def get_attention_weights(scores):
        while np.ndim(scores) == 2:
            pass
        return _good_weights(scores)
''')


def test_a_function_that_hangs_cannot_spend_the_other_questions_time(request, zyg, tmp_path):
    """After one timeout, the same call gets the short retry limit: the function's other inputs and
    the other functions still run, and when the budget does run out the message names the culprit."""
    use(request, zyg)
    h, report = open_sub(zyg, write(tmp_path, "hangs.py", HANGS_ON_2D),
                         call_s=1.5, submission_s=30, retry_call_s=0.3)
    try:
        with pytest.raises(StudentTimeout, match=r"get_attention_weights\(array \(2, 3\) float64\) did not finish within 1.5 s"):
            h.call("get_attention_weights", np.zeros((2, 3)))
        with pytest.raises(StudentTimeout, match="within 0.3 s .*already not finished 1 time, so it now gets 0.3 s"):
            h.call("get_attention_weights", np.ones((3, 3)))
        np.testing.assert_allclose(h.call("get_attention_weights", np.zeros(4)), np.full(4, 0.25))
        np.testing.assert_allclose(h.call("context_vector", np.array(H_E), np.array(H_D1)), CONTEXT_D1, atol=1e-6)
        assert h.timeouts == {"get_attention_weights(...)": 2}
    finally:
        h.close()

    h, report = open_sub(zyg, write(tmp_path, "hangs2.py", HANGS_ON_2D), call_s=1, submission_s=2.5, retry_call_s=1)
    try:
        for _ in range(6):
            with pytest.raises(StudentTimeout) as e:
                h.call("get_attention_weights", np.zeros((2, 3)))
            if "budget" in str(e.value):
                break
        assert "used up its total time budget of 2.5 s; calls that did not finish: get_attention_weights(...) (" \
            in str(e.value)
    finally:
        h.close()


# --------------------------------------------------------------------------- memory

MEMORY_BOMB = GOOD + textwrap.dedent('''
    def bomb():
        hog = []
        while True:
            hog.append(np.ones(2**21))  # 16 MiB, every page written

    bomb()
    def after_bomb():
        return 4
''')


@pytest.mark.slow
def test_memory_bomb(request, zyg, tmp_path):
    use(request, zyg)
    h, report = open_sub(zyg, write(tmp_path, "bomb.py", MEMORY_BOMB), memory_mb=512, cell_s=15, call_s=15)
    try:
        text = "\n".join(report["messages"])
        # the statement that failed and the innermost line of the student's code, with their source
        hog_line = "        hog.append(np.ones(2**21))  # 16 MiB, every page written"
        assert f"bomb.py, line {line_of(MEMORY_BOMB, 'bomb()')} raised MemoryError" in text, text
        assert f"in bomb.py, line {line_of(MEMORY_BOMB, hog_line)}\n    {hog_line.strip()}" in text, text
        assert "ran out of the memory" in text
        assert h.call("after_bomb") == 4
        with pytest.raises(StudentError, match=r"ran out of memory \(the limit is 512 MiB\)"):
            h.call("bomb")
        # the hog was freed with the call's frame: the same worker goes on
        assert h.restarts == 0
        np.testing.assert_allclose(h.call("context_vector", np.array(H_E), np.array(H_D1)), CONTEXT_D1, atol=1e-6)
    finally:
        h.close()


# --------------------------------------------------------------------------- output

CHATTY = GOOD + textwrap.dedent('''
    def chatty(x):
        line = "y" * 999 + "\\n"
        for _ in range(200_000):          # 200 MB through print
            print(line, end="")
        import os, sys
        for _ in range(20):               # 20 MB straight to the file descriptors
            os.write(1, b"z" * 1_000_000)
            os.write(2, b"z" * 1_000_000)
        sys.__stdout__.write("w" * 100_000)
        return x * 2

    def chatty_unlimited(x):
        import gc
        try:  # where the worker can reach hwcheck's code (not from a checkout under /tmp, which it cannot see)
            import checker.worker.serve
            checker.worker.serve.KEEP = 10**9  # lift the worker-side cap: the trusted side caps again
        except ImportError:
            pass
        for o in gc.get_objects():
            if type(o).__name__ == "CappedWriter":
                o.kept = -10**9
                o.dropped = -5
        print("x" * 3_000_000)
        return x
''')


def test_200mb_of_printing(request, zyg, tmp_path):
    use(request, zyg)
    h, report = open_sub(zyg, write(tmp_path, "chatty.py", CHATTY), call_s=20)
    try:
        x = np.arange(5.0)
        np.testing.assert_array_equal(h.call("chatty", x), 2 * x)
        assert 0 < len(h.last_stdout) <= 64 * 1024
        assert set(h.last_stdout) <= {"y", "\n"}
        assert h.last_stdout_dropped >= 200_000_000 - 64 * 1024
        assert h.call("head_weight_shape", 8, 2) == (8, 4)
        assert h.last_stdout == "" and h.last_stdout_dropped == 0
        np.testing.assert_array_equal(h.call("chatty_unlimited", x), x)
        assert len(h.last_stdout) <= 64 * 1024 and h.last_stdout_dropped >= 3_000_000 - 64 * 1024
    finally:
        h.close()


# --------------------------------------------------------------------------- crashes

SEGFAULT = GOOD + textwrap.dedent('''
    import ctypes
    ctypes.string_at(0)
    def after_segfault():
        return 5

    def crash():
        ctypes.string_at(0)
''')


def test_segfault_at_import_and_in_call(request, zyg, tmp_path):
    use(request, zyg)
    h, report = open_sub(zyg, write(tmp_path, "segv.py", SEGFAULT))
    try:
        text = "\n".join(report["messages"])
        assert f"segv.py, line {line_of(SEGFAULT, 'ctypes.string_at(0)')}" in text
        assert "segmentation fault" in text and "skipped" in text
        assert h.call("after_segfault") == 5
        with pytest.raises(WorkerCrashed, match="segmentation fault"):
            h.call("crash")
        assert h.call("after_segfault") == 5
    finally:
        h.close()


KEYBOARD_INTERRUPT = GOOD + textwrap.dedent('''
    raise KeyboardInterrupt
    def after_interrupt():
        return 6

    def ctrl_c():
        raise KeyboardInterrupt("stop!")
''')


def test_keyboard_interrupt(request, zyg, tmp_path):
    use(request, zyg)
    h, report = open_sub(zyg, write(tmp_path, "ki.py", KEYBOARD_INTERRUPT))
    try:
        text = "\n".join(report["messages"])
        assert f"ki.py, line {line_of(KEYBOARD_INTERRUPT, 'raise KeyboardInterrupt')}" in text
        assert "KeyboardInterrupt" in text
        assert h.call("after_interrupt") == 6
        with pytest.raises(StudentError, match="KeyboardInterrupt: stop!"):
            h.call("ctrl_c")
        assert h.call("after_interrupt") == 6 and h.restarts == 0
    finally:
        h.close()


# --------------------------------------------------------------------------- tampering

MONKEYPATCH = WRONG + textwrap.dedent('''
    import builtins
    import math
    import numpy
    import numpy.testing
    numpy.allclose = lambda *a, **k: True
    numpy.isclose = lambda a, b, *x, **k: numpy.ones(numpy.shape(a), bool)
    numpy.array_equal = lambda *a, **k: True
    numpy.testing.assert_allclose = lambda *a, **k: None
    numpy.testing.assert_array_equal = lambda *a, **k: None
    numpy.testing.assert_array_almost_equal = lambda *a, **k: None
    math.isclose = lambda *a, **k: True
    builtins.abs = lambda x: 0
    builtins.all = lambda x: True
    builtins.max = lambda *a, **k: 0
    builtins.AssertionError = type("AssertionError", (Exception,), {})
    try:
        import checker.judging.compare
        checker.judging.compare.compare = lambda *a, **k: None
        checker.judging.compare._matches = lambda *a, **k: True
    except Exception:
        pass
''')


def test_monkeypatching_numpy_and_builtins(request, grader, control_card, tmp_path):
    use(request, grader.zygote)
    real = (np.allclose, np.isclose, np.array_equal, numpy.testing.assert_allclose, builtins.abs,
            builtins.all, builtins.max, builtins.AssertionError)
    card = grader.grade(write(tmp_path, "patcher.py", MONKEYPATCH), "attention")
    assert_no_better_than(card, control_card)
    assert (np.allclose, np.isclose, np.array_equal, numpy.testing.assert_allclose, builtins.abs,
            builtins.all, builtins.max, builtins.AssertionError) == real
    assert not np.allclose([1.0], [2.0]) and abs(-3) == 3 and max(1, 2) == 2
    with pytest.raises(AssertionError):
        numpy.testing.assert_allclose([1.0], [2.0])
    failed = [t for q in card["questions"] if q["id"] in ("Q1", "Q2") for t in q["tests"]]
    assert failed and all(t["outcome"] != "passed" for t in failed)
    assert any("differ" in t["message"] for t in failed)


def _fake_files_source(outdir):
    return WRONG + textwrap.dedent(f'''
        import json
        import os
        OUTDIR = {outdir!r}
        FAKE = json.dumps({{"score": 100.0, "tests": [], "output": "forged by the submission"}})
        ATTEMPTS = {{}}

        def _write(path):
            try:
                with open(path, "w") as f:
                    f.write(FAKE)
                ATTEMPTS[path] = "written"
            except Exception as e:
                ATTEMPTS[path] = type(e).__name__

        def _targets():
            out, d = [], os.getcwd()
            while True:
                out += [os.path.join(d, n) for n in ("results.json", "grades.csv", "scorecard.json")]
                if d == "/":
                    break
                d = os.path.dirname(d)
            out += [os.path.join(OUTDIR, n) for n in ("results.json", "grades.csv", "scorecard.json", "new.json")]
            out += ["/autograder/results/results.json", "/tmp/results.json"]
            zyg = os.getppid()  # 0 in a PID namespace of its own: the grader's processes have no pid here
            try:
                with open(f"/proc/{{zyg}}/stat") as f:
                    grader = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError) as e:
                ATTEMPTS[f"/proc/{{zyg}}/stat"] = type(e).__name__
                grader = 0
            for pid in (zyg, grader):
                try:
                    out.append(os.path.join(os.readlink(f"/proc/{{pid}}/cwd"), "results.json"))
                except OSError as e:
                    ATTEMPTS[f"/proc/{{pid}}/cwd"] = type(e).__name__
                try:
                    with open(f"/proc/{{pid}}/cmdline", "rb") as f:
                        args = f.read().split(b"\\0")
                except OSError:
                    args = []
                for a in args:
                    a = a.decode(errors="replace")
                    if a.startswith("/") and os.path.isdir(a):
                        out.append(os.path.join(a, "results.json"))
            return out

        for _t in _targets():
            _write(_t)

        def attempts():
            return dict(ATTEMPTS)
    ''')


@needs_landlock
def test_fake_result_files(request, zyg, grader, control_card, tmp_path):
    use(request, zyg)
    use(request, grader.zygote)
    outdir = tmp_path / "grader-output"
    outdir.mkdir()
    for name in ("results.json", "grades.csv", "scorecard.json"):
        (outdir / name).write_text(json.dumps({"score": 0, "name": name}))
    path = write(tmp_path, "sub/forger.py", _fake_files_source(str(outdir)))
    watched = [str(outdir / n) for n in ("results.json", "grades.csv", "scorecard.json", "new.json")]
    watched += [os.path.join(d, "results.json") for d in ("/", "/tmp", str(tmp_path), os.getcwd(), REPO)]
    before = {p: (sha256_of(p) if os.path.exists(p) else None) for p in watched}
    original = sha256_of(path)

    h, report = open_sub(zyg, path)
    try:
        attempts = h.call("attempts")
        workdir = h.workdir
    finally:
        h.close()
    assert attempts, "the submission tried nothing"
    assert any(p.startswith(str(outdir)) for p in attempts)
    for p, outcome in attempts.items():
        inside = os.path.realpath(p).startswith(os.path.realpath(workdir) + os.sep)
        assert inside or outcome != "written", f"the worker wrote {p} outside its temp dir"
    assert not os.path.exists(workdir), "the worker's temp dir outlived its handle"

    card = grader.grade(path, "attention")
    assert_no_better_than(card, control_card)
    assert "forged" not in json.dumps(card)
    assert {p: (sha256_of(p) if os.path.exists(p) else None) for p in watched} == before
    assert sha256_of(path) == original


def _reference_search_source(repo):
    names = ["get_scores", "scale_scores", "get_attention_weights", "get_context_vector", "context_vector",
             "self_attention", "self_attention_token", "split_heads", "head_weight_shape", "head_output_shape",
             "concat_shape", "w_o_shape", "multi_head_attention"]
    return WRONG + textwrap.dedent(f'''
        import importlib.util
        import os
        import sys
        import time
        REPO = {repo!r}
        READ, ERRORS, REF = [], {{}}, None

        def _candidates():
            t0, seen = time.monotonic(), []
            for root in ["/", REPO] + [p for p in sys.path if p]:
                for dirpath, dirs, files in os.walk(root):
                    if time.monotonic() - t0 > 5:
                        break
                    if dirpath == "/":
                        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
                    if os.path.basename(dirpath) == "reference" and "attention.py" in files:
                        seen.append(os.path.join(dirpath, "attention.py"))
                    if os.path.basename(dirpath) == "attention" and "reference.py" in files:
                        seen.append(os.path.join(dirpath, "reference.py"))
            guesses = [os.path.join(p, "reference", "attention.py") for p in [REPO] + sys.path if p]
            guesses += [os.path.join(p, "assignments", "attention", "reference.py") for p in [REPO] + sys.path if p]
            return seen + guesses

        for _c in _candidates():
            try:
                with open(_c) as _f:
                    _f.read(10)
                READ.append(_c)
                _spec = importlib.util.spec_from_file_location("stolen_reference", _c)
                _mod = importlib.util.module_from_spec(_spec)
                _spec.loader.exec_module(_mod)
                REF = _mod
                break
            except Exception as e:
                ERRORS[_c] = type(e).__name__
        for _name in ("reference.attention", "assignments.attention.reference", "hwcheck_reference.attention"):
            try:
                _imported = importlib.import_module(_name)
                REF = REF or _imported
            except Exception as e:
                ERRORS["import " + _name] = type(e).__name__
        if REF is not None:
            for _n in {names!r}:
                globals()[_n] = getattr(REF, _n)

        def search_report():
            return {{"read": READ, "errors": ERRORS, "have_reference": REF is not None}}
    ''')


@pytest.mark.slow
@needs_landlock
def test_search_the_disk_for_the_reference(request, zyg, grader, control_card, tmp_path):
    use(request, zyg)
    use(request, grader.zygote)
    path = write(tmp_path, "thief.py", _reference_search_source(REPO))
    h, report = open_sub(zyg, path, cell_s=30)
    try:
        found = h.call("search_report")
    finally:
        h.close()
    assert found["read"] == [] and not found["have_reference"], found
    assert os.path.join(REPO, "reference", "attention.py") in found["errors"]
    assert os.path.join(REPO, "assignments", "attention", "reference.py") in found["errors"]
    for name in ("reference.attention", "assignments.attention.reference", "hwcheck_reference.attention"):
        assert found["errors"]["import " + name] in ("PermissionError", "ModuleNotFoundError", "ImportError")
    card = grader.grade(path, "attention")
    assert_no_better_than(card, control_card)


LINK_MAIN = textwrap.dedent('''
    from alias import triple
    for _m in ("stolen", "stolen_rel", "refdir.attention", "checker_link"):
        try:
            _mod = __import__(_m, fromlist=["*"])
            globals().update({k: v for k, v in vars(_mod).items() if not k.startswith("_")})
        except Exception:
            pass
''')


def test_links_out_of_a_folder_submission(request, zyg, grader, control_card, tmp_path):
    """Links in a folder are resolved by the trusted side's copy, before any wall is up: they must not leak."""
    use(request, zyg)
    use(request, grader.zygote)
    folder = tmp_path / "linky"
    folder.mkdir()
    secret = os.path.join(REPO, "reference", "attention.py")
    write(folder, "a_wrong.py", WRONG)                  # loads first; the links would override it
    write(folder, "helpers.py", "def triple(x):\n    return 3 * x\n")
    write(folder, "main.py", LINK_MAIN)
    os.symlink(secret, folder / "stolen.py")
    os.symlink(os.path.relpath(secret, folder), folder / "stolen_rel.py")
    os.symlink(os.path.join(REPO, "reference"), folder / "refdir")
    os.symlink("helpers.py", folder / "alias.py")      # a link inside the submission is fine
    os.mkfifo(folder / "pipe.py")                      # copying a pipe would hang the grader
    h, report = open_sub(zyg, folder)
    try:
        text = "\n".join(report["messages"])
        for name in ("stolen.py", "stolen_rel.py", "refdir", "pipe.py"):
            assert f"{name} was not given to your code" in text, text
        assert "alias.py" not in text
        assert h.call("triple", 2) == 6
        assert not np.allclose(h.call("context_vector", np.array(H_E), np.array(H_D1)), CONTEXT_D1)
    finally:
        h.close()
    card = grader.grade(str(folder), "attention")
    assert_no_better_than(card, control_card)
    assert auto_scores(card) == auto_scores(control_card)


def test_a_linked_file_submission_is_followed_unless_it_points_at_a_secret(request, zyg, tmp_path):
    """A TA's export may link each student's file to a store: followed. A link into reference/ is not."""
    use(request, zyg)
    store, entries = tmp_path / "store", tmp_path / "class"
    store.mkdir()
    entries.mkdir()
    write(store, "alice_v3.py", GOOD)
    os.symlink(store / "alice_v3.py", entries / "alice.py")
    os.symlink(os.path.join(REPO, "reference", "attention.py"), entries / "mallory.py")
    h, report = open_sub(zyg, entries / "alice.py")
    try:
        assert report["ok"], report["messages"]
        np.testing.assert_allclose(h.call("context_vector", np.array(H_E), np.array(H_D1)), CONTEXT_D1, atol=1e-6)
    finally:
        h.close()
    h, report = open_sub(zyg, entries / "mallory.py")
    try:
        assert "mallory.py was not given to your code" in "\n".join(report["messages"])
        assert "a folder it keeps from submissions" in "\n".join(report["messages"])
    finally:
        h.close()


def test_a_linked_file_submission_never_reads_hwchecks_own_key_or_cache(request, zyg, tmp_path, monkeypatch):
    """A submission that is a link to the key that signs output folders' records (or into hwcheck's cache), or
    to any file of the machine that is no .py or .ipynb (/etc/shadow), is left out like one into reference/: its
    text is never copied to the worker, so no message echoes it."""
    use(request, zyg)
    from checker.records.owned_records import _key_from
    state, entries = tmp_path / "state", tmp_path / "class"
    monkeypatch.setenv("HWCHECK_STATE_DIR", str(state))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    key = _key_from(str(state))
    entries.mkdir()
    (tmp_path / "cache" / "hwcheck").mkdir(parents=True)
    write(tmp_path / "cache" / "hwcheck", "kept.py", "cached_value = 1\n")
    os.symlink(state / "outdir.key", entries / "mallory.py")
    os.symlink(tmp_path / "cache" / "hwcheck" / "kept.py", entries / "eve.py")
    shadow = tmp_path / "etc" / "shadow"  # any file of the machine that is no .py or .ipynb
    write(tmp_path / "etc", "shadow", "root:$6$secret-hash:19000:0:99999:7:::\n")
    os.symlink(shadow, entries / "trudy.py")
    for name in ("mallory.py", "eve.py", "trudy.py"):
        h, report = open_sub(zyg, entries / name)
        try:
            text = "\n".join(report["messages"])
            assert f"{name} was not given to your code" in text, text
            assert key.decode() not in text and "cached_value" not in text and "secret-hash" not in text
            assert "cached_value" not in report.get("names", [])
        finally:
            h.close()


ATTACK_PARENT = GOOD + textwrap.dedent('''
    import os
    import signal

    def _family():
        """The zygote and the grader: by /proc where they are visible (0 in a PID namespace of its own)."""
        zyg = os.getppid()
        try:
            with open(f"/proc/{zyg}/stat") as f:
                grader = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            grader = 0
        return zyg, grader

    def _try(out, name, fn):
        try:
            fn()
            out[name] = "done"
        except Exception as e:
            out[name] = type(e).__name__

    def _read(path):
        with open(path, "rb") as f:
            return f.read(64)

    def _write(path):
        with open(path, "w") as f:
            f.write("forged output\\n")

    def _killpg(pid):
        """SIGKILL the process group of `pid`, unless it is this process's own (without namespaces the parent
        seen at import is the worker's watcher, whose group the worker is in: that would only be suicide)."""
        group = os.getpgid(pid)
        if group != os.getpgid(0):
            os.killpg(group, signal.SIGKILL)
        else:
            raise PermissionError("its own group")

    def attack(victim=0, grader_too=True, zyg=0, grader=0):
        out = {}
        seen = _family()
        zyg, grader = zyg or seen[0], grader or seen[1]  # the test tells it the real pids: the strongest attack
        if not zyg or not grader:  # kill(0, ...) would signal its own group: nothing found to attack
            return {"find the zygote and the grader": "ProcessLookupError"}
        _try(out, "read zygote environ", lambda: _read(f"/proc/{zyg}/environ"))
        _try(out, "read grader environ", lambda: _read(f"/proc/{grader}/environ"))
        _try(out, "read zygote mem", lambda: _read(f"/proc/{zyg}/mem"))
        _try(out, "read grader mem", lambda: _read(f"/proc/{grader}/mem"))
        _try(out, "write zygote stderr", lambda: _write(f"/proc/{zyg}/fd/2"))
        _try(out, "write grader stdout", lambda: _write(f"/proc/{grader}/fd/1"))
        _try(out, "kill zygote", lambda: os.kill(zyg, signal.SIGKILL))
        _try(out, "killpg zygote", lambda: _killpg(zyg))
        if grader_too:
            _try(out, "kill grader", lambda: os.kill(grader, signal.SIGKILL))
            _try(out, "killpg grader", lambda: _killpg(grader))
            _try(out, "stop grader", lambda: os.kill(grader, signal.SIGSTOP))
        if victim:
            _try(out, "kill sibling worker", lambda: os.kill(victim, signal.SIGKILL))
        return out

    ATTACK_AT_IMPORT = attack(grader_too=False)  # the grader itself is attacked once the walls are seen

    def import_attack():
        return ATTACK_AT_IMPORT

    def kill_everything():
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:  # alone in its PID namespace: nothing to signal at all
            pass
        return "still here"
''')


@pytest.mark.walls
@pytest.mark.skipif(ABI < 6, reason="without Landlock signal scoping (ABI 6, Linux 6.12) a worker running as "
                                    "the grader's user could signal the grader, which would end this test run")
def test_attack_the_parent_and_the_grader(request, zyg, tmp_path):
    use(request, zyg)
    victim, _ = open_sub(zyg, write(tmp_path, "victim/good.py", GOOD))
    h, report = open_sub(zyg, write(tmp_path, "attacker.py", ATTACK_PARENT))
    try:
        assert any("signals" in w for w in h.isolation), h.isolation
        # denied, or (in a PID namespace of its own) no such process: the grader's pids name nothing there
        refused = {"PermissionError", "ProcessLookupError", "FileNotFoundError"}
        for result in (h.call("import_attack"), h.call("attack", victim.pid, True, zyg.pid, os.getpid())):
            assert result and set(result.values()) <= refused, result
        assert zyg.alive()
        assert h.call("head_weight_shape", 8, 2) == (8, 4)
        # kill(-1): every process this worker may signal, which is only its own descendants
        assert h.call("kill_everything") == "still here"
        assert zyg.alive() and h.restarts == 0
        np.testing.assert_allclose(victim.call("context_vector", np.array(H_E), np.array(H_D1)), CONTEXT_D1,
                                   atol=1e-6)
        assert victim.restarts == 0
    finally:
        h.close()
        victim.close()


BACKGROUND = GOOD + textwrap.dedent('''
    import os
    import shutil
    import subprocess
    SLEEP = shutil.which("sleep") or "/bin/sleep"

    def spawn(tag):
        try:
            p = subprocess.Popen([SLEEP, tag + ".5"], start_new_session=True, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except PermissionError:  # seccomp refuses setsid (a new session is a CPU share of its own)
            p = subprocess.Popen([SLEEP, tag + ".5"], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        pid = os.fork()
        if pid == 0:  # a classic double-forked daemon
            try:
                try:
                    os.setsid()
                except OSError:  # refused, as above: a daemon in the worker's session
                    pass
                if os.fork() == 0:
                    os.execv(SLEEP, [SLEEP, tag + ".6"])
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        return p.pid

    AT_IMPORT = spawn("302")
''')


@pytest.mark.walls
def test_background_processes_do_not_outlive_the_handle(request, zyg, tmp_path):
    use(request, zyg)
    h, report = open_sub(zyg, write(tmp_path, "daemon.py", BACKGROUND))
    try:
        assert report["ok"], report["messages"]
        h.call("spawn", "301")
        assert wait_until(lambda: with_marker("sleep 301.5")), "the background process did not start"
        assert with_marker("sleep 302.5"), "the background process started at import did not start"
        daemons = wait_until(lambda: with_marker("sleep 301.6"))
        assert daemons
        if "pid-namespace" in h.isolation:  # the double-forked daemon stays in the worker's PID namespace
            assert all(os.readlink(f"/proc/{p}/ns/pid") != os.readlink("/proc/self/ns/pid") for p in daemons)
        else:  # without one, below the worker's watcher, a child subreaper: the daemon's parent is not init
            assert all(_ppid(p) not in (0, 1) for p in daemons), [_ppid(p) for p in daemons]
    finally:
        h.close()
    for tag in ("301.5", "301.6", "302.5", "302.6"):
        assert wait_until(lambda: not with_marker(f"sleep {tag}"), timeout=1.0), f"`sleep {tag}` survived"


def _ppid(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


TEMP_USER = GOOD + textwrap.dedent('''
    import tempfile
    _fd, _path = tempfile.mkstemp()  # at import, as a notebook cell saving a figure would
    def where_temp_files_go():
        return tempfile.gettempdir()
''')


def test_temp_files_go_to_the_workers_own_dir_whatever_came_before(tmp_path):
    """Python caches the temp dir on first use; the zygote uses it when it reaps a worker, so a
    worker forked after that must still put temp files (the student's, torch's caches) in its own
    private dir, not in /tmp, which its walls forbid: a correct submission must not fail for
    being second in a batch."""
    with Zygote() as z:
        for i in range(3):
            h, report = open_sub(z, write(tmp_path, f"s{i}/temp_user.py", TEMP_USER))
            try:
                assert report["ok"], report["messages"]
                assert h.call("where_temp_files_go") == os.path.join(h.workdir, "scratch")  # its writable folder
            finally:
                h.close()
            assert wait_until(lambda: not descendants(z.pid), timeout=1.5)
            time.sleep(0.3)  # the zygote reaps within 0.2 s: the next worker is forked after that


KILLED_GRADER = textwrap.dedent('''
    import json, sys, time
    from checker.running.sandbox import Limits, SubmissionHandle, Zygote
    z = Zygote()
    h = SubmissionHandle(sys.argv[1], z, Limits(call_s=5, cell_s=5, submission_s=60))
    h.load()
    h.call("spawn", "303")
    print(json.dumps({"zygote": z.pid, "zygote_dir": z._dir, "worker": h.pid, "workdir": h.workdir}), flush=True)
    time.sleep(60)
''')


@pytest.mark.slow
def test_a_grader_killed_by_sigkill_leaves_nothing(tmp_path):
    """The trusted process dies without any cleanup: the zygote (PDEATHSIG) kills every worker and
    leftover and removes the temp dirs."""
    import subprocess
    import sys
    sub = write(tmp_path, "daemon.py", BACKGROUND.replace('AT_IMPORT = spawn("302")', ""))
    script = write(tmp_path, "grader.py", KILLED_GRADER)
    proc = subprocess.Popen([sys.executable, script, sub], cwd=REPO, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": REPO})
    try:
        info = json.loads(proc.stdout.readline())
        assert with_marker("sleep 303.5") and os.path.isdir(info["workdir"])
    finally:
        proc.kill()  # SIGKILL: no finally, no atexit in the grader
        proc.wait()
        proc.stdout.close()
    gone = lambda pid: not os.path.exists(f"/proc/{pid}") or cmdline(pid) == ""  # noqa: E731
    assert wait_until(lambda: gone(info["zygote"]) and gone(info["worker"]), timeout=3)
    assert wait_until(lambda: not with_marker("sleep 303."), timeout=1)
    assert wait_until(lambda: not os.path.exists(info["workdir"]) and not os.path.exists(info["zygote_dir"]),
                      timeout=2), "temp dirs outlived the grader"



KILLED_BEFORE_FORK = textwrap.dedent('''
    import json, sys, time
    from checker.running.sandbox import Zygote
    z = Zygote()
    path = z.mkdir()  # a worker dir made, filled, but no worker asked for yet: the SIGKILL lands here
    print(json.dumps({"zygote": z.pid, "workdir": path}), flush=True)
    time.sleep(60)
''')


def test_a_grader_killed_between_making_a_worker_dir_and_forking_leaks_no_dir(tmp_path):
    """The CI race of a SIGKILLed batch: the trusted side had made a worker dir and was copying the
    submission into it when it died, so the zygote had never heard of that dir. The zygote makes
    worker dirs itself, so it removes them too."""
    import subprocess
    import sys
    script = write(tmp_path, "grader.py", KILLED_BEFORE_FORK)
    proc = subprocess.Popen([sys.executable, script], cwd=REPO, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": REPO})
    try:
        info = json.loads(proc.stdout.readline())
        assert os.path.isdir(info["workdir"]) and os.path.basename(info["workdir"]).startswith("hwcheck-w-")
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
    assert wait_until(lambda: not os.path.exists(info["workdir"]), timeout=5), "the unused worker dir outlived the grader"


# --------------------------------------------------------------------------- lying values

ALWAYS_EQUAL = textwrap.dedent('''
    import numpy as np

    class AlwaysEqual(np.ndarray):
        def __eq__(self, other):
            return True

        def __ne__(self, other):
            return False

        def __array__(self, dtype=None, copy=None):
            return np.array([0.095787, 0.149822, 0.246732, 0.38855])

        __hash__ = None

    def _ae(shape):
        return np.zeros(shape).view(AlwaysEqual)

    class Liar:
        def __array__(self, dtype=None, copy=None):
            return np.zeros(4)

        def __len__(self):
            return 4

        def __float__(self):
            return 0.0

        def __eq__(self, other):
            return True

        def __iter__(self):
            return iter([0.0] * 4)

        def __getitem__(self, i):
            return 0.0

    class LyingTuple(tuple):
        def __eq__(self, other):
            return True

        __hash__ = tuple.__hash__

    class LyingFloat(float):
        def __eq__(self, other):
            return True

        __hash__ = float.__hash__

    def get_scores(matrix, vector):
        return _ae(len(matrix))

    def scale_scores(scores, n):
        return _ae(np.shape(scores))

    def get_attention_weights(scores):
        return _ae(np.shape(scores))

    def get_context_vector(attention_weights, hidden_encoder_matrix):
        return _ae(np.shape(hidden_encoder_matrix)[-1])

    def context_vector(encoder_states, decoder_state):
        return _ae(np.shape(encoder_states)[-1])

    def self_attention(X, W_Q, W_K, W_V):
        return Liar()

    def self_attention_token(X, W_Q, W_K, W_V, i):
        return LyingFloat(0.0)

    def split_heads(W, num_heads):
        return [Liar() for _ in range(num_heads)]

    def head_weight_shape(d_model, num_heads):
        return LyingTuple((0, 0))

    head_output_shape = concat_shape = lambda *a: LyingTuple((0, 0))
    w_o_shape = head_weight_shape

    def multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads):
        return _ae((len(X), np.shape(W_O)[-1]))
''')


def test_always_equal_and_lying_objects(request, zyg, grader, tmp_path):
    use(request, zyg)
    use(request, grader.zygote)
    path = write(tmp_path, "liar.py", ALWAYS_EQUAL)
    h, report = open_sub(zyg, path)
    try:
        got = h.call("context_vector", np.array(H_E), np.array(H_D1))
        assert type(got) is np.ndarray and got.tolist() == [0.0] * 4
        assert not np.allclose(got, CONTEXT_D1)
        for name, args in (("self_attention", (np.eye(3),) * 4), ("split_heads", (np.eye(4), 2))):
            with pytest.raises(BadReturn, match="not plain data"):
                h.call(name, *args)
        # subclasses of plain types arrive as their base-class data: the overridden __eq__ is gone
        token = h.call("self_attention_token", *(np.eye(3),) * 4, 0)
        shape = h.call("head_weight_shape", 8, 2)
        assert (type(token), token, type(shape), shape) == (float, 0.0, tuple, (0, 0))
        assert shape != (8, 4)
        assert h.restarts == 0
    finally:
        h.close()
    card = grader.grade(path, "attention")
    assert card["status"] == "graded"
    by_id = {q["id"]: q for q in card["questions"]}
    for qid in ("Q1", "Q2"):
        assert by_id[qid]["score"] == 0
        assert by_id[qid]["tests"] and all(t["outcome"] != "passed" for t in by_id[qid]["tests"])
    q1 = " ".join(t["message"] for t in by_id["Q1"]["tests"])
    q2 = " ".join(t["message"] for t in by_id["Q2"]["tests"])
    assert "differ" in q1, q1
    assert "not plain data" in q2, q2


DEGENERATE_SOFTMAX = textwrap.dedent('''
    import numpy as np

    def get_attention_weights(scores):          # a "softmax" that answers zeros (or NaN) for everything
        return np.zeros_like(np.asarray(scores, dtype=float)) * (np.nan if NAN else 1)

    def self_attention(X, W_Q, W_K, W_V):       # and stubs that answer the same
        return np.zeros((len(X), np.shape(W_V)[1])) * (np.nan if NAN else 1)

    def self_attention_token(X, W_Q, W_K, W_V, i):
        return np.zeros(np.shape(W_V)[1]) * (np.nan if NAN else 1)

    def multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads):
        return np.zeros((len(X), np.shape(W_O)[1])) * (np.nan if NAN else 1)
''')


@pytest.mark.parametrize("nan", [False, True], ids=["zeros", "nan"])
def test_a_stub_matching_a_degenerate_softmax_earns_no_carried_credit(request, grader, tmp_path, nan):
    """Q2/Q3 carry a Q1 softmax mistake forward (an answer right with the student's own softmax passes);
    a softmax that answers zeros or NaN must not turn stubs that answer the same into points."""
    use(request, grader.zygote)
    card = grader.grade(write(tmp_path, "stub.py", f"NAN = {nan}\n" + DEGENERATE_SOFTMAX), "attention")
    by_id = {q["id"]: q for q in card["questions"]}
    for qid in ("Q2", "Q3"):
        assert by_id[qid]["score"] == 0, [(t["name"], t["outcome"], t["message"]) for t in by_id[qid]["tests"]]
        assert not any("your own get_attention_weights" in (t["message"] or "") for t in by_id[qid]["tests"])


HUGE = GOOD + textwrap.dedent('''
    def big():
        return np.ones(2**21)            # 16 MiB

    def enormous():
        return np.broadcast_to(np.zeros(1), (2**28,))   # 2 GiB of values, 8 bytes of memory

    def lying_frame():
        import gc, json, socket, struct, sys
        f = sys._getframe()
        while "header" not in f.f_locals:  # the request being answered: its call id, so the frame is read
            f = f.f_back
        head = json.dumps({"id": f.f_locals["header"]["id"]}).encode()
        for s in gc.get_objects():
            if isinstance(s, socket.socket) and s.fileno() >= 0:
                # a frame that declares a 1 TiB buffer, then nothing
                s.sendall(b"HWC1" + struct.pack("!II", len(head), 1) + head + struct.pack("!Q", 2**40))
        return 1
''')


def test_huge_answers(request, zyg, tmp_path):
    use(request, zyg)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    h, report = open_sub(zyg, write(tmp_path, "huge.py", HUGE), reply_mb=8, memory_mb=1024)
    try:
        with pytest.raises(BadReturn, match="more data than the grader accepts"):
            h.call("big")
        with pytest.raises(BadReturn, match="more data than the grader accepts"):
            h.call("enormous")
        assert h.restarts == 0
        with pytest.raises(BadReturn, match=r"more data than the grader accepts in this answer \(at most 8 MiB"):
            h.call("lying_frame")
        assert h.call("head_weight_shape", 8, 2) == (8, 4)
    finally:
        h.close()
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0 < 200 * 1024  # KiB: nothing big was allocated


def test_a_students_own_checker_module_is_the_one_imported(request, zyg, tmp_path):
    """hwcheck's package is called `checker`, a name students give their own helper files too: the
    submission's `import checker` finds its own file, and nothing names the grader's files."""
    folder = tmp_path / "sub"
    write(tmp_path, "sub/checker.py", "def double(x):\n    return 2 * x\n")
    write(tmp_path, "sub/main.py", GOOD + textwrap.dedent('''
        from checker import double
        import checker
        def which_checker():
            return [double(21), checker.__file__.rsplit("/", 1)[-1]]
    '''))
    h, report = open_sub(zyg, str(folder))
    request.node.zygotes.append(zyg)
    try:
        assert report["ok"] and not report["messages"], report["messages"]
        assert h.call("which_checker") == [42, "checker.py"]
    finally:
        h.close()
