"""Assignment specs: reading `assignments/<id>/spec.toml` and facts derived from it.

What it is for: one place that knows where an assignment's spec, grading
tests and reference module are, the spec's hash (scorecards record it), and
which assignment a set of defined names most looks like.

What it is not: a validator of student work, or an importer of reference code.
"""

import hashlib
import os

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from checker.errors import SpecError

__all__ = ["ASSIGNMENTS_DIR", "assignment_ids", "load_spec", "spec_sha256", "tests_path",
           "infer_assignment", "question_of_test", "hidden_tests"]

ASSIGNMENTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "assignments")


def _dir(aid):
    return os.path.join(ASSIGNMENTS_DIR, aid)


def assignment_ids():
    return sorted(d for d in os.listdir(ASSIGNMENTS_DIR) if os.path.isfile(os.path.join(_dir(d), "spec.toml")))


def load_spec(aid):
    path = os.path.join(_dir(aid), "spec.toml")
    if aid not in assignment_ids():
        raise SpecError(f"unknown assignment {aid!r}; known: {', '.join(assignment_ids())}")
    try:
        with open(path, "rb") as f:
            spec = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise SpecError(f"cannot read {path}: {e}") from None
    for q in spec.get("questions", []):
        q.setdefault("names", [])
        q.setdefault("manual", False)
        q.setdefault("hidden_tests", [])
        q.setdefault("tolerances", {})
    return spec


def spec_sha256(aid):
    with open(os.path.join(_dir(aid), "spec.toml"), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def tests_path(spec):
    return os.path.join(_dir(spec["id"]), spec.get("tests", f"test_{spec['id']}.py"))


def hidden_tests(spec):
    return {t for q in spec["questions"] for t in q.get("hidden_tests", [])}


def question_of_test(spec, qid):
    for q in spec["questions"]:
        if q["id"] == qid:
            return q
    raise SpecError(f"assignment {spec['id']} has no question {qid!r}")


def infer_assignment(names):
    """(assignment id, share of its names defined) for the best match, or (None, 0.0)."""
    names = set(names)
    best = (None, 0.0)
    for aid in assignment_ids():
        wanted = {n for q in load_spec(aid)["questions"] for n in q["names"]}
        share = len(wanted & names) / len(wanted) if wanted else 0.0
        if share > best[1]:
            best = (aid, share)
    return best
