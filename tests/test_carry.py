"""checker.running.carry on real submissions in real workers, away from any assignment: a function B built from
the student's own function A passes with a note when A lost points in its own question, and only then;
A's answers come from a fresh worker and must be those of a function of its arguments.

The submissions are tiny: A is `double(x)` (wrong: 3 * x), B is `total(x)`, specified as the sum of
double over x's rows. The end-to-end cases (attention's multi_head_attention built from self_attention)
are example submissions graded by tests/test_submissions.py.
"""

import textwrap

import numpy as np
import pytest

from checker.running import carry
from checker.errors import GradingFailure
from checker.running.sandbox import SubmissionHandle, Zygote

X = np.arange(6.0).reshape(3, 2) + 1


@pytest.fixture(scope="module")
def zygote():
    with Zygote() as z:
        yield z


@pytest.fixture
def load(zygote, tmp_path):
    handles = []

    def load(source):
        path = tmp_path / f"sub{len(handles)}.py"
        path.write_text(textwrap.dedent(source))
        h = SubmissionHandle(str(path), zygote)
        h.load()
        handles.append(h)
        return h
    yield load
    carry.close_workers()
    for h in handles:
        h.close()


def close(got, expected, what="", dtype=None):
    got = np.asarray(got, dtype=np.float64)
    if got.shape != np.shape(expected) or not np.allclose(got, expected, rtol=1e-7, atol=1e-12):
        raise GradingFailure(f"{what}: values differ")


def _rows(calls):
    return [(x,) for x in calls]


def _grade(sub, notes, own_input=X):
    """A's own question (double of own_input), then B (total of X): the note, or the failure B ends with."""
    got_a = sub.call("double", own_input)
    with pytest.raises(GradingFailure):
        carry.judged(sub, "double", (own_input,), got_a, lambda: close(got_a, 2 * own_input, what="double"))
    return _judge_total(sub, notes)


def _judge_total(sub, notes):
    got = sub.call("total", X)
    try:
        close(got, (2 * X).sum(0), what="total")
        return "right"
    except GradingFailure as failure:
        carry.close_carried(sub, close, notes.append, failure, got, name="total", by="double", question="Q1",
                            compose=lambda ask: np.sum(ask([(row,) for row in X]), axis=0),
                            vary=lambda args: (args[0] + 1,))
        return "carried"


WRONG_DOUBLE = """
    import numpy as np
    def double(x):
        return 3 * np.asarray(x)
    def total(x):
        return sum(double(row) for row in x)
"""


def test_b_built_from_a_wrong_a_passes_with_a_note_naming_a(load):
    notes = []
    assert _grade(load(WRONG_DOUBLE), notes) == "carried"
    assert notes == ["right with your own double, which is wrong: counted in Q1 only (fix double and total follows)"]


def test_nothing_is_carried_when_a_lost_no_points_in_its_own_question(load):
    sub, notes = load(WRONG_DOUBLE), []
    with pytest.raises(GradingFailure, match="total: values differ"):
        _judge_total(sub, notes)  # double was never judged failing in this run
    assert notes == []


def test_b_with_its_own_mistake_still_fails(load):
    notes = []
    with pytest.raises(GradingFailure, match="total: values differ") as e:
        _grade(load(WRONG_DOUBLE + "    def total(x):\n        return sum(double(row) for row in x[1:])\n"), notes)
    assert "not used to excuse" not in e.value.message and notes == []


def test_a_steered_by_a_flag_that_b_sets_earns_nothing(load):
    """double answers what makes the stub total look built from it only once total ran in its process:
    asked in the worker that ran total, it would excuse the stub; the fresh worker never runs total."""
    sub, notes = load("""
        import numpy as np
        RAN = []
        def double(x):
            return np.asarray(x) * (7.0 if RAN else 3.0)
        def total(x):
            RAN.append(1)
            return np.asarray(x).sum(0) * 7.0
    """), []
    with pytest.raises(GradingFailure, match="total: values differ"):
        _grade(sub, notes)
    assert notes == []
    # the control: the same composition asked of the worker that ran total would have matched
    assert np.allclose(np.sum([sub.call("double", row) for row in X], axis=0), sub.call("total", X))


@pytest.mark.parametrize("source,why", [
    ("""
        import numpy as np
        N = [0]
        def double(x):
            N[0] += 1
            return 3 * np.asarray(x) + N[0]
        def total(x):
            return sum(double(row) for row in x)
    """, "it gave two different answers to the same inputs"),
    ("""
        import numpy as np
        def double(x):
            return np.array([3.0, 6.0])
        def total(x):
            return np.array([9.0, 18.0])
    """, "its answer did not change when its inputs did"),
])
def test_a_that_is_not_a_function_of_its_arguments_is_refused_with_the_reason(load, source, why):
    sub, notes = load(source), []
    with pytest.raises(GradingFailure) as e:
        _grade(sub, notes)
    assert notes == [] and e.value.message.startswith("total: values differ")
    assert f"(Your double was not used to excuse this answer: {why}.)" in e.value.message
    with pytest.raises(GradingFailure, match="not used to excuse"):  # refused at once from then on
        _judge_total(sub, notes)


def test_a_that_answers_its_own_question_otherwise_is_refused(load):
    """The answers A gave in its own question's tests are asked again of the fresh worker: here the
    trusted side's record of them (what the main worker said) differs from what the fresh worker says."""
    sub, notes = load(WRONG_DOUBLE), []
    with pytest.raises(GradingFailure):
        carry.judged(sub, "double", (X,), 5 * X, lambda: close(5 * X, 2 * X, what="double"))
    with pytest.raises(GradingFailure) as e:
        _judge_total(sub, notes)
    assert "it answered inputs of its own question's tests otherwise than it did in those tests" in e.value.message
    assert notes == []



# A that drops an axis (np.squeeze: a one-row x gives a 1-D answer); B is `pairs(x)`, specified as the doubles of
# x's rows, each asked as a one-row array, joined along axis 1 (or, the same for right answers, the last axis)
SCALAR_DOUBLE = """
    import numpy as np
    def double(x):
        x = np.asarray(x)
        return np.squeeze(3 * x)
    def pairs(x):
        return np.concatenate([double(row[None, :]) for row in x], axis=1)
"""


def _join(axis):
    return lambda ask: np.concatenate(ask([(row[None, :],) for row in X]), axis=axis)


def _grade_pairs(sub, notes, compose):
    got_a = sub.call("double", X[:1])
    with pytest.raises(GradingFailure):
        carry.judged(sub, "double", (X[:1],), got_a, lambda: close(got_a, 2 * X[:1], what="double"))
    try:
        sub.call("pairs", X)
    except carry.StudentError as error:
        carry.close_raised(sub, notes.append, error, name="pairs", by="double", question="Q1", compose=compose,
                           vary=lambda args: (args[0] + 1,))
        return "carried"
    return "answered"


def test_an_error_that_the_composition_of_a_wrong_a_raises_too_is_carried(load):
    notes = []
    assert _grade_pairs(load(SCALAR_DOUBLE), notes, [_join(-1), _join(1)]) == "carried"
    assert notes == ["right with your own double, which is wrong: counted in Q1 only (fix double and pairs follows)"]


def test_an_error_that_no_composition_raises_is_b_own(load):
    notes = []
    with pytest.raises(carry.StudentError, match="AxisError|axis 1"):
        _grade_pairs(load(SCALAR_DOUBLE), notes, [_join(-1)])  # joined along the last axis: no error
    assert notes == []


def test_an_error_is_not_carried_when_a_lost_no_points(load):
    sub, notes = load(SCALAR_DOUBLE), []
    with pytest.raises(carry.StudentError):
        try:
            sub.call("pairs", X)
        except carry.StudentError as error:
            carry.close_raised(sub, notes.append, error, name="pairs", by="double", question="Q1",
                               compose=_join(1), vary=lambda args: (args[0] + 1,))
    assert notes == []


def test_a_composition_that_raises_on_a_answers_carries_no_value_and_says_why(load):
    sub, notes = load(SCALAR_DOUBLE + "    def total(x):\n        return sum(double(row) for row in x)\n"), []
    got_a = sub.call("double", X)
    with pytest.raises(GradingFailure):
        carry.judged(sub, "double", (X,), got_a, lambda: close(got_a, 2 * X, what="double"))
    got = sub.call("total", X)
    with pytest.raises(GradingFailure) as e:
        try:
            close(got, (2 * X).sum(0), what="total")
        except GradingFailure as failure:
            carry.close_carried(sub, close, notes.append, failure, got, name="total", by="double", question="Q1",
                                compose=lambda ask: np.concatenate(ask([(row[None, :],) for row in X]), axis=1),
                                vary=lambda args: (args[0] + 1,))
    assert "with its answers, the handout's total itself raises AxisError" in e.value.message and notes == []
