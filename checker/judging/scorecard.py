"""Build the scorecard (hwcheck's one result format) from a pytest-json-report.

What it is for: pure functions, in the manner of pytest-json-report's
`make_*` helpers: a report dict and the parsed spec.toml go in, a plain,
JSON-ready scorecard dict comes out (schema: `schema/scorecard.schema.json`,
`schema_version` 1). It spreads each question's points over its tests, labels
outcomes, picks the one message a student should read, and makes the
student-safe copy (`student_view`).
What it is not: it runs no pytest, starts no process, reads no submission and
writes no file (see `checker.records.atomic`); it imports neither pytest nor torch.
Output formats built on the scorecard live in `gradescope`, `gradebook` and
`report`.

Points: a question's points are spread over its tests that ran (not skipped)
in proportion to their `weight` (default 1); each test's share is rounded to
4 decimals and the last runnable test gets the remainder, so a question with
every test passed scores exactly its points. A test that passed earns its
share; any other outcome earns 0. The question's score is its points times
the passed share of the weight, rounded once (5 of 9 equal tests of 36
points score 20, where the rounded shares would add up to 19.9999); it may
differ from the sum of the shown test points in the last decimal. Sums are done in `decimal.Decimal`; numbers
come out as `int` when whole, else `float`.
"""

from __future__ import annotations

import ast
import copy
import json
import math
import re
from decimal import ROUND_HALF_UP, Decimal
from importlib import resources

__all__ = [
    "SCHEMA_VERSION", "STATUSES", "OUTCOMES", "MODES",
    "MANUAL_MESSAGE", "SEE_QUESTION_MESSAGE",
    "build_scorecard", "not_started_stubs", "shared_raise_places", "student_view", "load_schema", "validate",
    "test_name", "test_message", "skip_reason", "iter_tests",
]

SCHEMA_VERSION = 1
STATUSES = ("graded", "load_failed", "timeout", "crashed")
OUTCOMES = ("passed", "failed", "error", "timeout", "skipped")
MODES = ("public", "hidden")
MANUAL_MESSAGE = "graded by a person"
SEE_QUESTION_MESSAGE = "see the question message"

_QUANTUM = Decimal("0.0001")
_FAILING_METADATA_OUTCOMES = ("failed", "error", "timeout")
_PHASES = ("setup", "call", "teardown")


# ---------------------------------------------------------------------------
# small helpers on one report test
# ---------------------------------------------------------------------------

def test_name(nodeid):
    """The test's name for people: the part of the nodeid after the first `::`.

    `assignments/attention/test_attention_q1.py::test_get_scores[float64]` ->
    `test_get_scores[float64]`.
    """
    nodeid = str(nodeid)
    return nodeid.split("::", 1)[1] if "::" in nodeid else nodeid


test_name.__test__ = False  # not a pytest test, despite its name


def skip_reason(longrepr):
    """The reason of a skip from a report phase's `longrepr`.

    pytest-json-report stores it as the text of a tuple,
    "('/path/test_x.py', 12, 'Skipped: CUDA is not available')"; the
    "Skipped: " prefix is removed. Anything else is returned as text.
    """
    if not longrepr:
        return ""
    if isinstance(longrepr, (list, tuple)):
        text = str(longrepr[2]) if len(longrepr) == 3 else " ".join(map(str, longrepr))
    else:
        text = str(longrepr)
        if text.startswith("(") and len(text) < 20000:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                value = None
            if isinstance(value, tuple) and len(value) == 3:
                text = str(value[2])
    text = text.strip()
    for prefix in ("Skipped: ", "Skipped:"):
        if text.startswith(prefix):
            text = text[len(prefix):].strip()
            break
    return text


def _phase(test, name):
    value = test.get(name)
    return value if isinstance(value, dict) else {}


def _skip_reason_of(test):
    # A skip raised by a fixture (e.g. `device`) lands in setup, one raised in
    # the test body in call: take the first skipped phase with a reason.
    for name in _PHASES:
        phase = _phase(test, name)
        if phase.get("outcome") == "skipped" and phase.get("longrepr"):
            return skip_reason(phase["longrepr"])
    for name in _PHASES:
        if _phase(test, name).get("longrepr"):
            return skip_reason(_phase(test, name)["longrepr"])
    return ""


def _crash_message(test):
    """The crash message of the first phase that failed, else its last longrepr line."""
    for name in _PHASES:
        phase = _phase(test, name)
        if phase.get("outcome") != "failed":
            continue
        crash = phase.get("crash")
        if isinstance(crash, dict) and crash.get("message"):
            return str(crash["message"])
        longrepr = phase.get("longrepr")
        if longrepr:
            lines = [ln for ln in str(longrepr).splitlines() if ln.strip()]
            if lines:
                return lines[-1].strip()
    return ""


def _duration(test):
    total = 0.0
    for name in _PHASES:
        d = _phase(test, name).get("duration")
        if isinstance(d, (int, float)) and not isinstance(d, bool) and math.isfinite(d):
            total += float(d)
    return round(total, 6)


def _outcome(report_outcome, md_outcome):
    if report_outcome == "passed" or report_outcome == "xpassed":
        return "passed"
    if report_outcome == "skipped":
        return "skipped"
    if md_outcome in _FAILING_METADATA_OUTCOMES:
        return md_outcome
    if report_outcome == "error":
        return "error"
    # "failed", "xfailed", or anything unknown: not passed.
    return "failed"


def _weight(md, nodeid):
    weight = md.get("weight", 1)
    if weight is None:
        return Decimal(1)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) \
            or not math.isfinite(weight) or weight < 0:
        raise ValueError(f"test {nodeid}: weight must be a finite number >= 0, got {weight!r}")
    return Decimal(str(weight))


def _num(value):
    """A Decimal/number as JSON-friendly int (when whole) or float (4 decimals)."""
    d = Decimal(str(value)) if not isinstance(value, Decimal) else value
    d = d.quantize(_QUANTUM, rounding=ROUND_HALF_UP)
    if d == d.to_integral_value():
        return int(d)
    return float(d)


def make_test(test, md):
    """One scorecard test (plus its weight, kept aside) from a report test and its metadata."""
    nodeid = str(test.get("nodeid", ""))
    outcome = _outcome(test.get("outcome"), md.get("outcome"))
    message = md.get("message")
    if not message:
        if outcome == "skipped":
            message = _skip_reason_of(test)
        elif outcome != "passed":
            message = _crash_message(test)
    visibility = md.get("visibility") or "visible"
    if visibility not in ("visible", "hidden"):
        raise ValueError(f"test {nodeid}: visibility must be 'visible' or 'hidden', got {visibility!r}")
    out = {
        "name": test_name(nodeid),
        "outcome": outcome,
        "points": 0,
        "max_points": 0,
        "message": str(message or ""),
        "device": md.get("device"),
        "dtype": md.get("dtype"),
        "duration_s": _duration(test),
        "visibility": visibility,
    }
    where = md.get("where")
    if isinstance(where, dict) and where.get("file"):
        out["where"] = {"file": str(where["file"])}
        for key in ("cell", "line"):  # a notebook's line counts within its cell
            n = where.get(key)
            if isinstance(n, int) and not isinstance(n, bool) and n >= 1:
                out["where"][key] = n
        if "cell" in out["where"] and isinstance(where.get("label"), str):  # as the notebook shows it: "In [7]"
            out["where"]["label"] = where["label"][:40]
        if isinstance(where.get("function"), str):  # not where it failed, but the def the failure is about
            out["where"]["function"] = where["function"]
    missing = md.get("missing_names") or []
    return out, _weight(md, nodeid), [str(n) for n in missing]


# ---------------------------------------------------------------------------
# questions
# ---------------------------------------------------------------------------

def _spread(points, weights):
    """Each runnable test's max points: shares of `points` by weight, 4 decimals, exact sum."""
    if not weights:
        return []
    total = sum(weights)
    if total == 0:
        weights = [Decimal(1)] * len(weights)
        total = Decimal(len(weights))
    shares = [(points * w / total).quantize(_QUANTUM, rounding=ROUND_HALF_UP)
              for w in weights[:-1]]
    shares.append(points - sum(shares, Decimal(0)))
    return shares


def _earned(points, weights, passed):
    """A question's score: its points times the passed share of the weight, rounded once to 4 decimals
    (adding up rounded test shares gave 84.9999 for 85)."""
    if not weights:
        return Decimal(0)
    total = sum(weights)
    if total == 0:
        weights, total = [Decimal(1)] * len(weights), Decimal(len(weights))
    got = sum((w for w, p in zip(weights, passed) if p), Decimal(0))
    return (points * got / total).quantize(_QUANTUM, rounding=ROUND_HALF_UP)


def make_question(qspec, entries, *, mode="public", shared_raises=()):
    """One scorecard question from its spec table and its (test, weight, missing) entries.

    Returns (question dict, Decimal score). Manual questions take no tests.
    shared_raises: `shared_raise_places` of the whole report (for `not_started_stubs`).
    """
    points = Decimal(str(qspec.get("points", 0)))
    question = {
        "id": str(qspec["id"]),
        "title": str(qspec.get("title", "")),
        "score": 0,
        "max_score": _num(points),
        "manual": bool(qspec.get("manual", False)),
        "tests": [],
    }
    if question["manual"]:
        question["pending"] = True
        question["message"] = MANUAL_MESSAGE
        question["hidden_tests"] = 0
        return question, Decimal(0)

    tests = [e[0] for e in entries]
    runnable = [i for i, t in enumerate(tests) if t["outcome"] != "skipped"]
    weights = [entries[i][1] for i in runnable]
    shares = _spread(points, weights)
    for i, share in zip(runnable, shares):
        tests[i]["max_points"] = _num(share)
        if tests[i]["outcome"] == "passed":
            tests[i]["points"] = _num(share)
    score = _earned(points, weights, [tests[i]["outcome"] == "passed" for i in runnable])
    question["score"] = _num(score)
    question["tests"] = tests

    if not runnable:
        if tests:
            reasons = _unique(t["message"] for t in tests if t["message"])
            why = f": {'; '.join(reasons)}" if reasons else ""
            question["message"] = f"None of the tests of this question could run here{why}."
        else:
            question["message"] = "No test of this question ran."
    elif all(tests[i]["outcome"] != "passed" and entries[i][2] for i in runnable):
        # Every runnable test failed for want of a name: say it once.
        messages = _unique(tests[i]["message"] for i in runnable if tests[i]["message"])
        if not messages:
            names = _unique(n for i in runnable for n in entries[i][2])
            messages = [f"Not found in your submission: {', '.join(names)}."]
        question["message"] = "\n".join(messages)
        for i in runnable:
            tests[i]["message"] = SEE_QUESTION_MESSAGE
    else:
        stubs = not_started_stubs([tests[i] for i in runnable], shared_raises)
        if stubs:  # the starter's stubs, untouched: one line instead of a hint per test
            question["not_started"] = True
            question["message"] = _not_started_message(stubs)
            for i in runnable:
                tests[i]["message"] = SEE_QUESTION_MESSAGE

    hidden_in_report = sum(1 for t in tests if t["visibility"] == "hidden")
    if hidden_in_report == 0 and mode == "public":
        # Public runs do not collect hidden tests: announce how many the spec names.
        hidden_in_report = len(qspec.get("hidden_tests") or [])
    question["hidden_tests"] = hidden_in_report
    return question, score


_RAISED_NOT_IMPLEMENTED = re.compile(r"\braised NotImplementedError\b")
_SUBJECT = re.compile(r"\s*([A-Za-z_]\w*)")
_STUB_LINE = re.compile(r"\n\s*raise NotImplementedError\b")  # the line of the student's code that raised


def _raise_of(test):
    """(the name a NotImplementedError failure is about, the place it was raised), or None."""
    message = str(test.get("message") or "")
    subject = _SUBJECT.match(message)
    if not (subject and _RAISED_NOT_IMPLEMENTED.search(message) and _STUB_LINE.search(message)):
        return None  # torch's own NotImplementedError (a forward defined outside its class) is no stub
    where = test.get("where") if isinstance(test.get("where"), dict) else {}
    return subject.group(1), (where.get("file"), where.get("cell"), where.get("line"))


def shared_raise_places(tests):
    """The places where NotImplementedError was raised for failures about more than one name: a
    written function calling a helper that is still a stub (self_attention -> the softmax)."""
    names = {}
    for test in tests:
        found = _raise_of(test)
        if found and found[1][0]:
            names.setdefault(found[1], set()).add(found[0])
    return {place for place, who in names.items() if len(who) > 1}


def not_started_stubs(tests, shared_raises=()):
    """The names still at the starter's stub, when a question's runnable `tests` say it is not started; else [].

    Not started: no test passed, at least one failed because the student's code raised
    NotImplementedError at a `raise NotImplementedError` line (the starter's stubs do), and every other failure is about one of those
    same names (`where.function`: a class whose forward is a stub has no parameters either).
    A name is what the failure's message is about, its first word (`get_scores(...) raised ...`,
    `VisionTransformer.forward raised ...`), as every failure message of a call starts.
    A raise at a place shared by failures about several names (`shared_raise_places`) is the stub
    of the one its text names (the starter's stubs name themselves); for the others it is a
    helper's stub, so they are started. One started function or method (a failure about anything
    else, a passed test) makes the question started, and its failures keep their hints.
    """
    if not tests or any(t.get("outcome") in ("passed", "skipped") for t in tests):
        return []
    stubs, others = [], []
    for t in tests:
        found = _raise_of(t)
        if not found:
            others.append(t)
            continue
        name, place = found
        if place in shared_raises:
            said = str(t.get("message") or "").split("raised NotImplementedError", 1)[1]
            if not re.search(rf"\b{re.escape(name)}\b", said):
                return []
        stubs.append(name)
    stubs = _unique(stubs)
    for t in others:
        where = t.get("where") if isinstance(t.get("where"), dict) else {}
        if where.get("function") not in stubs:
            return []
    return stubs


def _not_started_message(stubs):
    names = [f"`{n}`" for n in stubs]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    one = len(names) == 1
    return (f"Not started: {listed} still raise{'s' if one else ''} NotImplementedError, as in the starter. "
            f"Write {'it' if one else 'them'} and check again.")


def _unique(items):
    seen, out = set(), []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


# ---------------------------------------------------------------------------
# the scorecard
# ---------------------------------------------------------------------------

def _merged(defaults, given, what):
    if given is None:
        return dict(defaults)
    if not isinstance(given, dict):
        raise TypeError(f"{what} must be a dict, not {type(given).__name__}")
    out = dict(defaults)
    out.update(copy.deepcopy(given))
    return out


def build_scorecard(report, spec, *, submission, load, environment, grader,
                    duration_s, status=None, answers=None):
    """The scorecard dict for one submission.

    report: a pytest-json-report dict (or None when pytest wrote none); each
    test's `metadata` is set by checker.running.plugin. Tests without a known question
    are listed under `unassigned` (a bug of the grading tests) and score nothing.
    spec: the parsed spec.toml. submission: {id, path, sha256}. load: {ok,
    messages}. environment: {python, torch, numpy, platform, cuda}. grader:
    {version, mode, spec_sha256, ...}. status: overrides the default "graded".
    answers: {question id: the student's text or None} for questions graded by a
    person (checker.running.freetext); each such question then carries `answer`.
    """
    status = "graded" if status is None else status
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
    submission = _merged({"id": None, "path": None, "sha256": None}, submission, "submission")
    if submission["id"] is None:
        raise ValueError("submission needs an 'id'")
    submission["id"] = str(submission["id"])
    load = _merged({"ok": True, "messages": []}, load, "load")
    load["ok"] = bool(load["ok"])
    load["messages"] = [str(m) for m in (load.get("messages") or [])]
    environment = _merged({"python": None, "torch": None, "numpy": None,
                           "platform": None, "cuda": None}, environment, "environment")
    grader = _merged({"version": None, "mode": "public", "spec_sha256": None},
                     grader, "grader")
    if grader["mode"] not in MODES:
        raise ValueError(f"grader mode must be one of {MODES}, got {grader['mode']!r}")

    qspecs = list(spec.get("questions") or [])
    by_question = {str(q["id"]): [] for q in qspecs}
    manual = {str(q["id"]) for q in qspecs if q.get("manual")}
    unassigned = []
    for test in (report or {}).get("tests") or []:
        md = test.get("metadata")
        qid = md.get("question") if isinstance(md, dict) else None
        nodeid = str(test.get("nodeid", ""))
        if qid is None:
            why = "no question metadata"
        elif str(qid) not in by_question:
            why = f"question {qid!r} is not in the spec"
        elif str(qid) in manual:
            why = f"question {qid!r} is graded by a person"
        else:
            by_question[str(qid)].append(make_test(test, md))
            continue
        unassigned.append({"nodeid": nodeid, "outcome": str(test.get("outcome")), "why": why})

    questions, auto_score, max_total = [], Decimal(0), Decimal(0)
    shared = shared_raise_places(e[0] for entries in by_question.values() for e in entries)
    for qspec in qspecs:
        question, score = make_question(qspec, by_question[str(qspec["id"])],
                                        mode=grader["mode"], shared_raises=shared)
        if question["manual"] and answers is not None and question["id"] in answers:
            answer = answers[question["id"]]
            question["answer"] = str(answer) if answer is not None else None
        questions.append(question)
        auto_score += score
        max_total += Decimal(str(qspec.get("points", 0)))

    duration = float(duration_s) if duration_s is not None else 0.0
    if not math.isfinite(duration):
        duration = 0.0
    return {
        "schema_version": SCHEMA_VERSION,
        "assignment": str(spec.get("id", "")),
        "submission": submission,
        "status": status,
        "score": _num(auto_score),
        "max_score": _num(max_total),
        "questions": questions,
        "load": load,
        "environment": environment,
        "grader": grader,
        "duration_s": round(duration, 3),
        "unassigned": unassigned,
    }


def iter_tests(scorecard):
    """Yield (question_index, question, test_index, test), both indices 1-based."""
    for qi, question in enumerate(scorecard.get("questions") or [], 1):
        for ti, test in enumerate(question.get("tests") or [], 1):
            yield qi, question, ti, test


def test_message(question, test):
    """The message to show for `test` where its question's message is not shown beside it.

    A test whose message only points to the question message (collapsed
    missing names) gets the question's message instead.
    """
    message = str(test.get("message") or "")
    if message == SEE_QUESTION_MESSAGE and question.get("message"):
        return str(question["message"])
    return message


test_message.__test__ = False


def _drop_key(obj, key):
    if isinstance(obj, dict):
        obj.pop(key, None)
        for value in obj.values():
            _drop_key(value, key)
    elif isinstance(obj, list):
        for value in obj:
            _drop_key(value, key)


def student_view(scorecard):
    """A deep copy safe to show the student.

    Hidden tests are removed from each question's `tests` (the question keeps
    their number in `hidden_tests`; their points stay in the scores), every
    `seed` key is dropped wherever it is, and so is `unassigned` (grader bugs,
    named by node id). The result still validates against the schema.
    """
    view = copy.deepcopy(scorecard)
    for question in view.get("questions") or []:
        tests = question.get("tests") or []
        shown = [t for t in tests if t.get("visibility") != "hidden"]
        removed = len(tests) - len(shown)
        question["tests"] = shown
        question["hidden_tests"] = max(int(question.get("hidden_tests") or 0), removed)
    view.pop("unassigned", None)
    _drop_key(view, "seed")
    return view


# ---------------------------------------------------------------------------
# schema
# ---------------------------------------------------------------------------

def load_schema():
    """The scorecard JSON Schema (draft 2020-12), read from the package data."""
    path = resources.files("checker").joinpath("schema").joinpath("scorecard.schema.json")
    return json.loads(path.read_text(encoding="utf-8"))


def validate(scorecard):
    """Raise `jsonschema.ValidationError` if `scorecard` does not fit the schema.

    Needs the optional `jsonschema` package (extra `test`).
    """
    try:
        import jsonschema
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "checker.judging.scorecard.validate needs the 'jsonschema' package: "
            "pip install 'hwcheck[test]' (or pip install jsonschema)") from e
    schema = load_schema()
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(scorecard))
    if error is not None:
        raise error
