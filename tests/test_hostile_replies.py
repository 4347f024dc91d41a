"""Hostile replies (issue 31, items 6 and 7): what a worker writes to the grader is matched to a call and bounded.

Student code can reach the worker's end of the grader's socket (the serve loop's `sock`, up its own
stack) and write frames to it. Each submission here does that for real, in a real worker forked by a real
zygote:
  * a forged frame with no call id, or another call's: it ends that worker, the call gets a message, and no
    later call is answered with a shifted answer (a reply used to carry no id: a forged frame was read as
    the answer, and the real answer as the answer of the next call);
  * a forged frame with its own call's id (read from the stack): the student's own claim about its own
    answer, no more than returning that value; the real reply then arrives unasked and ends the worker;
  * a value whose array cannot be rebuilt (shape [0, 2**62]): a message, never a plain ValueError;
  * a frame written while loading: that statement is skipped with the message, the rest loads;
  * an answer far larger than the inputs can need (128 MiB for a softmax of 4 numbers), also from a worker
    whose limit the student's code removed: refused before it is read.
The trusted process's peak memory is measured in a subprocess grading such a softmax end to end (item 6).
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from checker.errors import BadReturn, WorkerCrashed
from checker.running.sandbox import TAMPERED, Limits, SubmissionHandle, Zygote
from sandbox_helpers import GOOD, write

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAST = dict(call_s=10, cell_s=10, submission_s=120)

# how student code finds the grader's socket and the request being answered, and writes a frame by hand
FORGER = textwrap.dedent('''\
    import json
    import struct
    import sys

    import numpy as np


    def _up(name):
        f = sys._getframe(1)
        while f is not None:
            if name in f.f_locals:
                return f.f_locals[name]
            f = f.f_back
        raise RuntimeError(name + " not found")


    def _send(header, bufs=()):
        head = json.dumps(header).encode()
        out = b"HWC1" + struct.pack("!II", len(head), len(bufs)) + head
        for b in bufs:
            out += struct.pack("!Q", len(b)) + b
        _up("sock").sendall(out)


    def echo(x):
        return x
''')

ATTACKS = FORGER + textwrap.dedent('''

    def no_id(x):
        _send({"ok": True, "value": "forged"})
        return "real"


    def other_id(x):
        _send({"ok": True, "value": "forged", "id": _up("header")["id"] + 1})
        return "real"


    def own_id(x):
        _send({"ok": True, "value": "forged", "id": _up("header")["id"]})
        return "real"


    def bad_shape(x):
        _send({"ok": True, "value": {"$array": 0, "dtype": "float64", "shape": [0, 2**62]},
               "id": _up("header")["id"]}, [b""])
        return "real"


    def huge(x):
        return np.zeros(16 * 2**20)  # 128 MiB for an answer to one number


    def huge_uncapped(x):
        # the worker's own limits removed by the student's code: the trusted side's bound still holds
        del _up("header")["max_reply"]
        _up("state")["max_reply"] = None
        return np.zeros(16 * 2**20)
''')


@pytest.fixture(scope="module")
def zyg():
    with Zygote() as z:
        yield z


@pytest.fixture
def sub(zyg, tmp_path):
    h = SubmissionHandle(write(tmp_path, "attack.py", ATTACKS), zyg, Limits(**FAST))
    report = h.load()
    assert report["ok"], report["messages"]
    yield h
    h.close()


@pytest.mark.parametrize("attack", ["no_id", "other_id"])
def test_a_frame_for_no_call_of_this_one_ends_the_worker_and_shifts_nothing(sub, attack):
    with pytest.raises(WorkerCrashed) as e:
        sub.call(attack, 1)
    assert "did not ask for" in e.value.message and "restarted" in e.value.message
    restarts = sub.restarts
    assert sub.call("echo", 7) == 7  # the real reply ("real") never reaches a later call
    assert sub.call("echo", "x") == "x"
    assert sub.restarts == restarts + 1


def test_a_frame_forged_with_its_own_id_costs_the_next_call_not_its_answer(sub):
    # the student's claim about its own answer, accepted as a return value would be
    assert sub.call("own_id", 1) == "forged"
    with pytest.raises(WorkerCrashed) as e:  # the real reply comes unasked: the worker is ended
        sub.call("echo", 7)
    assert TAMPERED in e.value.message
    assert sub.call("echo", 8) == 8


def test_an_array_that_cannot_be_rebuilt_is_a_message_not_a_crash(sub):
    with pytest.raises(BadReturn) as e:
        sub.call("bad_shape", 1)
    assert "plain data" in e.value.message
    assert sub.call("echo", 9) == 9  # the worker that sent it was ended: no stale reply follows


def test_a_frame_written_while_loading_skips_that_statement_only(zyg, tmp_path):
    src = GOOD + FORGER + textwrap.dedent('''
        _send({"ok": True, "names": ["forged_name"], "messages": [], "classes": [], "origins": {}})
        after = 1
    ''')
    h = SubmissionHandle(write(tmp_path, "load.py", src), zyg, Limits(**FAST))
    try:
        report = h.load()
        assert "forged_name" not in h.names
        assert {"get_scores", "echo", "after"} <= set(h.names)
        assert any("did not ask for" in m and "skipped this statement" in m for m in report["messages"]), \
            report["messages"]
        assert h.call("echo", 3) == 3
    finally:
        h.close()


@pytest.mark.parametrize("attack", ["huge", "huge_uncapped"])
def test_an_answer_far_larger_than_its_inputs_is_refused_unread(sub, attack):
    with pytest.raises(BadReturn) as e:
        sub.call(attack, 1.0)
    assert "32 MiB" in e.value.message, e.value.message
    assert sub.call("echo", 5) == 5


def test_answers_as_large_as_their_inputs_need_still_cross(sub):
    big = np.arange(6 * 2**20, dtype=np.float64)  # 48 MiB in, 48 MiB back: above the 32 MiB floor
    got = sub.call("echo", big)
    assert got.shape == big.shape and got[-1] == big[-1]


# ------------------------------------------------------------------ the trusted process's memory (item 6)

SOFTMAX_HUGE = '''

def get_attention_weights(scores):
    return np.zeros(16 * 2**20)  # 128 MiB, whatever the scores
'''

MEASURE = textwrap.dedent('''\
    import json, sys
    from checker.running.runner import Grader
    out = {}
    with Grader(mode="hidden", seed=20261122, pytest_args=json.loads(sys.argv[1])) as g:
        for name in sys.argv[2:]:
            card = g.grade(name, "attention")
            out[name] = sum(q["score"] for q in card["questions"] if not q["manual"])
    peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
    print(json.dumps({"scores": out, "peak_kib": peak}))
''')


@pytest.mark.slow
def test_the_trusted_process_stays_small_when_every_softmax_answers_128_mib(tmp_path):
    """It reached 4.2 GB (and 2 minutes) when every call did; 2.4 GB when only the first 12 did."""
    correct = _correct()
    huge = write(tmp_path, "huge.py", correct + SOFTMAX_HUGE)
    uncapped = write(tmp_path, "uncapped.py", correct + FORGER.split("\n\n\ndef echo")[0] + textwrap.dedent('''

        def get_attention_weights(scores):
            del _up("header")["max_reply"]
            _up("state")["max_reply"] = None
            return np.zeros(16 * 2**20)
    '''))
    from checker.spec import example_dirs, load_spec
    honest = next(os.path.join(d, "correct.py") for d in example_dirs("attention")
                  if os.path.isfile(os.path.join(d, "correct.py")))
    auto = sum(q["points"] for q in load_spec("attention")["questions"] if not q.get("manual"))
    result = _measure([], honest, huge, uncapped)
    assert result["scores"][honest] == auto  # the honest classmate keeps full marks
    assert result["scores"][huge] < auto and result["scores"][uncapped] < auto
    assert result["peak_kib"] < 1536 * 1024, f"peak {result['peak_kib'] / 1024:.0f} MiB"


@pytest.mark.slow
def test_failed_tests_keep_nothing_of_their_answers(tmp_path):
    """Answers just under the bound (24 MiB, on every call) fail each test they reach: a failed test's
    frames (and pytest's snapshot of their locals) kept each one alive, 90 MiB more per test (637 MiB
    after six tests). Now what a test held is dropped once its report is made."""
    under = write(tmp_path, "under.py", _correct() + SOFTMAX_HUGE.replace("16 * 2**20", "3 * 2**20"))
    result = _measure(["-k", "softmax_large or softmax_random or softmax_2d"], under)
    assert result["scores"][under] < 90
    assert result["peak_kib"] < 600 * 1024, f"peak {result['peak_kib'] / 1024:.0f} MiB"


def _correct():
    with open(os.path.join(REPO, "submissions", "attention", "correct.py")) as f:
        return f.read()


def _measure(pytest_args, *paths):
    """Grade `paths` in a fresh trusted process: their scores and that process's peak memory."""
    run = subprocess.run([sys.executable, "-c", MEASURE, json.dumps(pytest_args), *paths], cwd=REPO,
                         capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": REPO})
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])
