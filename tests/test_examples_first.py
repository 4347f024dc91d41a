"""Property tests run their examples without hypothesis's engine while they pass (checker.running.examples_first).

The examples drawn once are the ones hypothesis's engine gives the body, in its order. A body that fails at
some example is handed over to the engine without running again what already ran: the body sees exactly the
calls it sees under the engine alone, and the engine raises the same failure. Bodies that need hypothesis's
build context, or raise something other than a grading failure, are left to the engine. Graded for real,
attention's examples and submissions that fail a property test late, time out in one, or answer differently
on a later call give the same scorecards (and the same JSON report, tracebacks aside) with and without it.
"""
import json
import shutil

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from checker.errors import GradingFailure
from checker.running import examples_first
from checker.running.plugin import HwcheckPlugin
from checker.running.runner import Grader
from checker.spec import example_dirs, load_spec, reference_file

from test_ref_cache import _without_times

SETTINGS = dict(deadline=None, max_examples=25, derandomize=True, database=None, report_multiple_bugs=False,
                phases=[Phase.explicit, Phase.generate, Phase.shrink],
                suppress_health_check=[HealthCheck.function_scoped_fixture])


def _property(fail_at=None, raise_type=GradingFailure):
    """A fresh @given test whose body logs every call into `log` and raises at the `fail_at`-th distinct example."""
    @settings(**SETTINGS)
    @given(T=st.integers(1, 7), n=st.integers(1, 6), f32=st.booleans())
    def prop(log, T, n, f32):
        log.append((T, n, f32))
        if fail_at is not None and len(set(log)) >= fail_at and T >= 2:
            raise raise_type(f"wrong at T={T}")
    return prop


def test_the_examples_drawn_once_are_the_engines_in_its_order():
    engine_log = []
    _property()(log=engine_log)  # hypothesis's engine alone
    drawn = examples_first._drawn(_property())
    assert [(e["T"], e["n"], e["f32"]) for e in drawn] == engine_log and len(engine_log) == 25


@pytest.mark.parametrize("fail_at", [1, 5, 20])
def test_a_failing_body_sees_what_it_sees_under_the_engine_alone(fail_at):
    engine_log = []
    with pytest.raises(GradingFailure) as engine_error:
        _property(fail_at)(log=engine_log)
    log = []
    prop = _property(fail_at)
    with pytest.raises(GradingFailure) as error:
        assert examples_first.run(prop, {"log": log}, GradingFailure)
    assert log == engine_log  # the examples before the failure ran once, shrinking asked the same
    assert str(error.value) == str(engine_error.value)
    assert examples_first._drawn(prop)  # a grading failure keeps the test replayed for the next submission


def test_another_exception_is_run_again_by_the_engine_and_the_test_is_left_to_it():
    prop, log = _property(3, ValueError), []
    with pytest.raises(ValueError):
        examples_first.run(prop, {"log": log}, GradingFailure)
    first_three = log[:3]
    assert log[3] == first_three[2] or log.count(first_three[2]) >= 2  # the engine ran the third example again
    assert examples_first._drawn(prop) == ()  # and runs this test from now on
    assert examples_first.run(prop, {"log": []}, GradingFailure) is False


def test_bodies_that_need_the_engine_are_left_to_it():
    @settings(**SETTINGS)
    @given(T=st.integers(1, 7))
    def uses_assume(log, T):
        assume(T != 3)
        log.append(T)

    @settings(**SETTINGS)
    @given(xs=st.lists(st.integers(), max_size=3))
    def draws_a_list(log, xs):
        log.append(xs)

    @settings(**{**SETTINGS, "derandomize": False})
    @given(T=st.integers(1, 7))
    def random_each_run(log, T):
        log.append(T)

    for fn in (uses_assume, draws_a_list, random_each_run):
        assert examples_first.run(fn, {"log": []}, GradingFailure) is False, fn.__name__


def _attention_cases(tmp_path):
    ref = reference_file(load_spec("attention"))
    source = open(ref).read()
    extra = {
        # fails the self-attention property only at a later example (d_v = 4, T > 2)
        "late": "\n_sa = self_attention\ndef self_attention(X, W_Q, W_K, W_V):\n    r = _sa(X, W_Q, W_K, W_V)\n"
                "    return r + 1e-3 if W_V.shape[1] == 4 and X.shape[0] > 2 else r\n",
        # every 7th call wrong: a property test's shrinking meets it as flaky
        "stateful": "\n_n = [0]\n_cv = get_context_vector\ndef get_context_vector(w, H):\n    _n[0] += 1\n"
                    "    r = _cv(w, H)\n    return r * 1.5 if _n[0] % 7 == 0 else r\n",
        # stops answering at T >= 5: a timeout inside a property test
        "slow": "\nimport time as _time\n_sa = self_attention\ndef self_attention(X, W_Q, W_K, W_V):\n"
                "    if X.shape[0] >= 5:\n        _time.sleep(60)\n    return _sa(X, W_Q, W_K, W_V)\n",
    }
    paths = [ref]
    for name, code in extra.items():
        (tmp_path / f"{name}.py").write_text(source + code)
        paths.append(str(tmp_path / f"{name}.py"))
    (examples,) = example_dirs("attention")
    for name in ["context_average.py", "no_scaling.py", "keys_with_w_q.py", "softmax_for_2d_only.py",
                 "bool_answers.py", "missing_names.py"]:
        shutil.copy(f"{examples}/{name}", tmp_path / name)
        paths.append(str(tmp_path / name))
    return paths


def _raw_tests(card):
    tests = json.loads(json.dumps(card.pop("_raw_report")["tests"]))
    for t in tests:
        for phase in ("setup", "call", "teardown"):
            if isinstance(t.get(phase), dict):
                t[phase].pop("duration", None)
                t[phase].pop("longrepr", None)  # pytest's traceback: this module's frames are in it
    return tests


def test_attentions_scorecards_are_the_same_with_and_without_it(tmp_path, monkeypatch):
    paths = _attention_cases(tmp_path)
    cards, replayed = {}, {}
    for on in (True, False):
        monkeypatch.setattr(HwcheckPlugin, "replay_examples", on)
        with Grader(mode="hidden", seed=4242, keep_raw=True) as g:
            cards[on] = [g.grade(p, "attention") for p in paths]
            (held,) = g._sessions.values()
            replayed[on] = held.plugin.examples_replayed
    assert replayed[False] == 0 and replayed[True] >= 2 * len(paths) - 2, replayed
    outcomes = {}
    for path, a, b in zip(paths, cards[True], cards[False]):
        assert _raw_tests(a) == _raw_tests(b), path
        assert _without_times(a) == _without_times(b), path
        for q in a["questions"]:
            for t in q["tests"]:
                if "_property" in t["name"]:
                    outcomes.setdefault(t["outcome"], []).append(t["message"][:60])
    # what the comparison covers: passes, failures (one of them flaky), a timeout, errors
    assert {"passed", "failed", "timeout", "error"} <= set(outcomes), outcomes
    assert any("different answers" in m for m in outcomes["failed"]), outcomes["failed"]
