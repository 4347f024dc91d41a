"""Asks sent together (checker.running.together): one round trip, each ask's outcome its own.

Real submissions in real workers forked by a real zygote. Each test sends asks together and checks that
every ask gets exactly what it would get alone: a value, or its own failure (an exception, a timeout with
its own limit, a crash, an answer too large, a forged frame), and that the asks after a failure are asked
again alone (on a fresh worker) only when the test asks for them. The asks really go together: the
handle's one-ask path (`request`) is not used for them, and the worker counts what ran.
"""
import textwrap

import numpy as np
import pytest

from checker.errors import BadReturn, MissingName, StudentError, StudentTimeout, WorkerCrashed
from checker.running.sandbox import Limits, SubmissionHandle, Zygote
from sandbox_helpers import write

SRC = textwrap.dedent('''\
    import sys
    import time

    import numpy as np

    RAN = []


    def double(x):
        RAN.append(("double", x))
        print("double", x)
        return 2 * x


    def ran():
        return list(RAN)


    def slow(s):
        RAN.append(("slow", s))
        time.sleep(s)
        return s


    def hang(x):
        RAN.append(("hang", x))
        while True:
            pass


    def boom(x):
        RAN.append(("boom", x))
        raise ValueError("boom " + str(x))


    def crash(x):
        import ctypes
        ctypes.string_at(0)  # a segmentation fault


    def huge(x):
        return np.zeros(16 * 2**20)  # 128 MiB for an answer to one number


    def scale_in_place(a):
        a *= 2
        return a
    def halve_first(a, b):
        a.div_(2)  # a torch tensor changed in place; b left alone
        return a + b


    def forge_next(x):
        # student code reaches the grader's socket and writes a frame nobody asked for
        f = sys._getframe(0)
        while "sock" not in f.f_locals:
            f = f.f_back
        f.f_locals["sock"].sendall(b"HWC1garbage-garbage-garbage")
        return x


    try:
        import torch

        class Lin(torch.nn.Module):
            def __init__(self, d, broken=False):
                super().__init__()
                if broken:
                    raise RuntimeError("no module today")
                self.w = torch.nn.Linear(d, d)

            def forward(self, x):
                return self.w(x)
    except ImportError:
        pass
''')


@pytest.fixture(scope="module")
def zyg():
    with Zygote() as z:
        yield z


def _handle(zyg, tmp_path, **limits):
    h = SubmissionHandle(write(tmp_path, "sub.py", SRC), zyg, Limits(**{"call_s": 10, "cell_s": 10,
                                                                        "submission_s": 120, **limits}))
    assert h.load()["ok"]
    return h


@pytest.fixture
def sub(zyg, tmp_path):
    h = _handle(zyg, tmp_path)
    yield h
    h.close()


def _alone_counted(sub, monkeypatch):
    """Count the asks that go through the handle's one-ask path."""
    seen = []
    orig = type(sub).request

    def request(self, op, args, **kw):
        seen.append(kw.get("what") or op)
        return orig(self, op, args, **kw)
    monkeypatch.setattr(type(sub), "request", request)
    return seen


def test_asks_together_answer_as_alone_in_one_round_trip(sub, monkeypatch):
    seen = _alone_counted(sub, monkeypatch)
    with sub.together() as t:
        a, b = t.call("double", 3), t.call("double", np.arange(3.0))
        c = t.call_changes("scale_in_place", np.ones(2))
    assert t.round_trips == 1 and seen == []
    assert b.get().tolist() == [0.0, 2.0, 4.0] and sub.last_dtypes == ["float64"]
    assert a.get() == 6 and sub.last_stdout == "double 3\n" and sub.called[-2:] == ["double", "double"]
    value, changed = c.get()
    assert value.tolist() == [2.0, 2.0] and changed == [0]
    assert [r[0] for r in sub.call("ran")] == ["double", "double"]


def test_a_torch_argument_changed_in_place_is_seen(sub):
    """call_changes compares torch tensor arguments too (charlm's layer_norm(x) with `x -= mean`): the worker
    hands each back after the call and the trusted side compares it with its own copy of what it sent."""
    import torch
    a, b = torch.ones(3), torch.arange(3.0)
    value, changed = sub.call_changes("halve_first", a, b)
    assert changed == [0] and value.tolist() == [0.5, 1.5, 2.5]
    assert a.tolist() == [1.0, 1.0, 1.0]  # the trusted side's own tensor is never the worker's
    value, changed = sub.call_changes("double", torch.ones(2))
    assert changed == [] and value.tolist() == [2.0, 2.0]


def test_an_exception_is_its_own_ask_only(sub):
    with sub.together() as t:
        a, b, c = t.call("double", 1), t.call("boom", 2), t.call("double", 3)
    with pytest.raises(StudentError, match="boom 2"):
        b.get()
    assert a.get() == 2 and c.get() == 6
    assert [r[0] for r in sub.call("ran")] == ["double", "boom", "double"]


def test_chained_asks_after_a_failure_are_not_run_and_go_alone_if_wanted(sub, monkeypatch):
    seen = _alone_counted(sub, monkeypatch)
    with sub.together(chain=True) as t:
        a, b, c = t.call("boom", 1), t.call("double", 2), t.call("double", 3)
    with pytest.raises(StudentError, match="boom 1"):
        a.get()
    assert seen == [] and [r[0] for r in sub.call("ran")] == ["boom"]  # b and c did not run in the worker
    assert c.get() == 6 and seen[-1] == "double(3)"  # asked alone now, as the test asks for it
    asked_before = len(seen)
    assert c.get() == 6 and len(seen) == asked_before  # once: a second get() asks nothing
    assert [r[0] for r in sub.call("ran")] == ["boom", "double"]


def test_each_ask_has_its_own_time_limit(zyg, tmp_path):
    sub = _handle(zyg, tmp_path, call_s=1.5)
    try:
        with sub.together() as t:  # 2.4 s together, 1.2 s each: within each ask's own 1.5 s
            a, b = t.call("slow", 1.2), t.call("slow", 1.2)
        assert a.get() == 1.2 and b.get() == 1.2 and sub.generation == 1 and not sub.timeouts
    finally:
        sub.close()


def test_a_timeout_is_charged_to_its_own_ask_and_the_rest_go_alone(zyg, tmp_path):
    sub = _handle(zyg, tmp_path, call_s=1.0)
    try:
        with sub.together() as t:
            a, b, c = t.call("double", 1), t.call("hang", 2), t.call("double", 3)
        assert a.get() == 2
        with pytest.raises(StudentTimeout) as e:
            b.get()
        assert e.value.message.startswith("hang(2) did not finish within 1 s")
        assert sub.timeouts == {"hang(...)": 1}
        assert c.get() == 6 and sub.restarts == 1  # lost with the worker: asked alone on a fresh one
        assert [r[0] for r in sub.call("ran")] == ["double"]
    finally:
        sub.close()


def test_a_crash_is_charged_to_its_own_ask(sub):
    with sub.together() as t:
        a, b, c = t.call("double", 1), t.call("crash", 2), t.call("double", 3)
    assert a.get() == 2
    with pytest.raises(WorkerCrashed) as e:
        b.get()
    assert e.value.message.startswith("crash(2): ") and "segmentation fault" in e.value.message
    assert c.get() == 6 and sub.restarts == 1


def test_each_answer_is_bounded_before_it_is_read(sub):
    with sub.together() as t:
        a, b, c = t.call("double", 1.0), t.call("huge", 1.0), t.call("double", 2.0)
    assert a.get() == 2.0
    with pytest.raises(BadReturn, match="32 MiB"):
        b.get()
    assert c.get() == 4.0


def test_a_frame_written_by_student_code_ends_the_worker_not_the_earlier_answers(sub):
    with sub.together() as t:
        a, b, c = t.call("double", 1), t.call("forge_next", 2), t.call("double", 3)
    assert a.get() == 2
    with pytest.raises((WorkerCrashed, BadReturn)):
        b.get()
    assert c.get() == 6 and sub.restarts == 1


def test_a_missing_name_is_its_own_failure_and_never_sent(sub):
    with sub.together() as t:
        a, b = t.call("nope", 1), t.call("double", 2)
    with pytest.raises(MissingName):
        a.get()
    assert b.get() == 4


def test_a_module_and_its_forward_go_together(sub, monkeypatch):
    torch = pytest.importorskip("torch")
    x = torch.tensor(np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32))
    alone = sub.new("Lin", 4, seed=3).forward([x]).outputs[0]
    seen = _alone_counted(sub, monkeypatch)
    with sub.together(chain=True) as t:
        m = t.new("Lin", 4, seed=3)
        r = t.forward(m, [x])
    assert seen == [] and t.round_trips == 1
    assert np.array_equal(r.get().outputs[0], alone) and torch is not None
    module = m.get()
    assert module.handle and module.forward([x]).outputs[0].shape == (2, 4)  # the handle lives on


def test_a_forward_after_a_module_that_failed_raises_the_module_failure(sub):
    pytest.importorskip("torch")
    with sub.together() as t:
        m = t.new("Lin", 4, broken=True)
        r = t.forward(m, [np.zeros((1, 4), np.float32)])  # never run: its module was not made
    with pytest.raises(StudentError, match="no module today"):
        r.get()


def test_asked_checks_raise_each_failure_where_the_check_asked(sub):
    from checker.running.together import asked
    seen = []

    def check(asker, x):
        try:
            got = yield asker.call("boom" if x < 0 else "double", x)
        except StudentError as e:  # the ask's own failure, raised at its yield as sub.call raises it
            seen.append(("caught", x, e.message.splitlines()[0]))
            return None
        seen.append(("judged", x, got))
        return got

    with sub.together(chain=True) as t:
        first, second = asked(check(t, 2)), asked(check(t, 5))
    assert t.round_trips == 1 and first() == 4 and second() == 10
    with sub.together(chain=True) as t:
        first, second = asked(check(t, -1)), asked(check(t, 6))
    assert first() is None and second() == 12  # the second was not run together: asked alone here
    assert asked(check(sub, 7))() == 14  # over the handle itself: the same check, asked alone
    assert seen == [("judged", 2, 4), ("judged", 5, 10), ("caught", -1, "boom(-1) raised ValueError: boom -1 at sub.py, line 33:"),
                    ("judged", 6, 12), ("judged", 7, 14)]
    assert sub.call("ran") == [("double", 2), ("double", 5), ("boom", -1), ("double", 6), ("double", 7)]


def test_asks_larger_than_the_socket_holds_go_alone(sub, monkeypatch):
    from checker.running.together import SEND_LIMIT
    seen = _alone_counted(sub, monkeypatch)
    big = np.arange(SEND_LIMIT // 8 // 2 + 16, dtype=np.float64)  # two of them: more than SEND_LIMIT
    with sub.together() as t:
        a, b, c = t.call("double", 1), t.call("double", big), t.call("double", big)
    assert t.round_trips == 1 and seen == []  # the first two went together
    assert a.get() == 2 and b.get()[-1] == 2 * big[-1]
    assert c.get()[-1] == 2 * big[-1] and len(seen) == 1  # the third, alone
