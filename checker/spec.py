"""Assignment specs: finding assignments, reading their `spec.toml`, and facts derived from it.

What it is for: one place that knows which assignments there are and where
each one's spec, grading tests, reference and example submissions are, the
spec's hash (scorecards record it), and which assignment a set of defined
names most looks like.

An assignment is a folder holding `spec.toml`; its id is the folder's name.
They are found (first one of an id wins) in:
  1. hwcheck's own `assignments/` folder (the built-in ones);
  2. the folders named by the environment variable HWCHECK_ASSIGNMENTS
     (`os.pathsep`-separated), each an assignment folder or a folder of them;
  3. installed packages' entry points of the group `hwcheck.assignments`, each
     naming a package (`mycourse.hw1 = "mycourse.hw1"`) whose folder is an
     assignment folder or a folder of them.
An assignment is one folder: its `reference.py` (importable as
`hwcheck_reference.<id>`, a finder on sys.meta_path, which is what the spec's
`reference` says after `load_spec`; a spec may instead name a module of its
own with `reference = "..."`) and its `examples/` with an `expected.json` lie
beside its spec, the built-in assignments' as a course's. The student kit has
neither.

What it is not: a validator of assignments (`checker.platforms.validate`), of student
work, or an importer of reference code beyond naming it.
"""

import functools
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from checker.errors import SpecError

__all__ = ["ASSIGNMENTS_DIR", "ENV_VAR", "ENTRY_POINT_GROUP", "assignment_ids", "assignment_dirs",
           "assignment_dir", "is_builtin", "discovery_problems", "load_spec", "spec_sha256", "tests_path", "grading_test_files",
           "reference_file", "example_dirs", "example_path", "points", "infer_assignment", "question_of_test", "hidden_tests"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ASSIGNMENTS_DIR = os.path.join(ROOT, "assignments")
ENV_VAR = "HWCHECK_ASSIGNMENTS"
ENTRY_POINT_GROUP = "hwcheck.assignments"
REFERENCE_PACKAGE = "hwcheck_reference"  # a folder's own reference.py is imported as hwcheck_reference.<id>
SPEC_FILE = "spec.toml"


def _is_assignment(folder):
    return os.path.isfile(os.path.join(folder, SPEC_FILE))


def _folders_in(path):
    """The assignment folders `path` names: itself, or the assignment folders directly inside it."""
    if _is_assignment(path):
        return [path]
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return []
    return [os.path.join(path, n) for n in names if not n.startswith((".", "_")) and _is_assignment(os.path.join(path, n))]


@functools.lru_cache(maxsize=1)
def _entry_point_folders():
    """[(entry point text, folder or None, problem or None)] of the installed `hwcheck.assignments` entry points."""
    from importlib.metadata import entry_points
    out = []
    try:
        eps = entry_points(group=ENTRY_POINT_GROUP)
    except TypeError:  # Python < 3.10's API
        eps = entry_points().get(ENTRY_POINT_GROUP, [])
    for ep in eps:
        what = f"{ep.name} = {ep.value}"
        try:
            found = importlib.util.find_spec(ep.module)
        except (ImportError, ValueError) as e:
            out.append((what, None, f"cannot be found: {e}"))
            continue
        if found is None:
            out.append((what, None, "names no installed module"))
        elif found.submodule_search_locations:
            out.append((what, list(found.submodule_search_locations)[0], None))
        elif found.origin:
            out.append((what, os.path.dirname(found.origin), None))
        else:
            out.append((what, None, "names a module with no folder"))
    return out


def _discover():
    """({id: folder}, [problem]) in the order of precedence (built-in, HWCHECK_ASSIGNMENTS, entry points)."""
    found, problems = {}, []

    def add(folder, source):
        folder = os.path.abspath(folder)
        aid = os.path.basename(folder)
        if aid in found:
            if os.path.realpath(found[aid]) != os.path.realpath(folder):
                problems.append(f"{folder} ({source}) is not used: the assignment {aid!r} is already {found[aid]}")
            return
        found[aid] = folder

    for folder in _folders_in(ASSIGNMENTS_DIR):
        add(folder, "built in")
    for entry in filter(None, os.environ.get(ENV_VAR, "").split(os.pathsep)):
        folders = _folders_in(entry)
        if not folders:
            problems.append(f"{ENV_VAR} names {entry}, which holds no {SPEC_FILE} (neither it nor a folder in it)")
        for folder in folders:
            add(folder, ENV_VAR)
    for what, path, problem in _entry_point_folders():
        if problem or not _folders_in(path):
            problems.append(f"the entry point {what} (group {ENTRY_POINT_GROUP}) "
                            f"{problem or 'names a package holding no ' + SPEC_FILE}")
            continue
        for folder in _folders_in(path):
            add(folder, f"entry point {what}")
    return found, problems


def assignment_dirs():
    """{assignment id: its folder} of every assignment found (see the module's docstring)."""
    return _discover()[0]


def discovery_problems():
    """What was named but not used: a folder with no spec, an id already taken, a broken entry point."""
    return _discover()[1]


def assignment_ids():
    return sorted(assignment_dirs())


def assignment_dir(aid):
    folders = assignment_dirs()
    if aid not in folders:
        raise SpecError(f"unknown assignment {aid!r}; known: {', '.join(sorted(folders))}")
    return folders[aid]


def _dir(aid):
    return assignment_dir(aid)


def is_builtin(aid):
    """True for an assignment of hwcheck's own `assignments/` folder."""
    return os.path.dirname(assignment_dir(aid)) == ASSIGNMENTS_DIR


def reference_file(spec):
    """The file of the assignment's reference solutions: the folder's own reference.py, else the file of
    the spec's `reference` module; None where neither is there (the student kit)."""
    own = os.path.join(_dir(spec["id"]), "reference.py")
    if os.path.isfile(own):
        return own
    try:
        found = importlib.util.find_spec(spec["reference"])
    except (ImportError, ValueError):
        return None
    return found.origin if found is not None and found.has_location else None


def example_dirs(aid):
    """The folders of the assignment's example submissions (each with an expected.json): the folder's own
    `examples/` (a list, so that a later layout may add more); none in the student kit."""
    out = [os.path.join(_dir(aid), "examples")]
    return [d for d in out if os.path.isfile(os.path.join(d, "expected.json"))]


def example_path(aid, name):
    """The example submission `name` (a file or folder name) of the assignment, from the first of its
    example folders that holds it; None where none does."""
    for folder in example_dirs(aid):
        if os.path.lexists(os.path.join(folder, name)):
            return os.path.join(folder, name)
    return None


def points(aid, manual=None):
    """The assignment's points: every question's (manual=None), the automatic ones' (False) or the
    ones graded by a person (True)."""
    return sum(q["points"] for q in load_spec(aid)["questions"] if manual is None or bool(q["manual"]) == manual)


class _ReferenceFinder(importlib.abc.MetaPathFinder):
    """Imports an assignment folder's own reference.py as `hwcheck_reference.<id>`."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == REFERENCE_PACKAGE:
            return importlib.machinery.ModuleSpec(fullname, None, is_package=True)
        prefix = REFERENCE_PACKAGE + "."
        if not fullname.startswith(prefix):
            return None
        aid = fullname[len(prefix):]
        folder = assignment_dirs().get(aid)
        own = os.path.join(folder, "reference.py") if folder else None
        if own is None or not os.path.isfile(own):
            return None
        return importlib.util.spec_from_file_location(fullname, own)


if not any(isinstance(f, _ReferenceFinder) for f in sys.meta_path):
    sys.meta_path.append(_ReferenceFinder())


def load_spec(aid):
    path = os.path.join(_dir(aid), SPEC_FILE)
    try:
        with open(path, "rb") as f:
            spec = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise SpecError(f"cannot read {path}: {e}") from None
    spec.setdefault("id", aid)
    if spec["id"] != aid:
        raise SpecError(f"{path} says id = {spec['id']!r}, but its folder is named {aid!r}: an assignment's "
                        f"id is its folder's name")
    if os.path.isfile(os.path.join(_dir(aid), "reference.py")):
        spec["reference"] = f"{REFERENCE_PACKAGE}.{aid}"
    spec.setdefault("reference", f"{REFERENCE_PACKAGE}.{aid}")  # found by the finder; absent in the kit
    for q in spec.get("questions", []):
        q.setdefault("names", [])
        q.setdefault("manual", False)
        q.setdefault("hidden_tests", [])
        q.setdefault("tolerances", {})
    return spec


def uses_torch(aid):
    """Whether the assignment's grading is torch's (`framework = "torch"`): its workers then meet PyTorch's
    meta device, whose first use in a process imports about a second of PyTorch (the zygote does it once)."""
    return load_spec(aid).get("framework") == "torch"


def spec_sha256(aid):
    with open(os.path.join(_dir(aid), SPEC_FILE), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def grading_test_files(spec):
    """The assignment's grading test files, in order: the spec's `tests` (a file name or a list of them,
    relative to the folder), else every `test_*.py` directly in the folder, sorted (one file per question
    reads best: `test_<id>_q1.py`, ...). A name need not exist: `checker.platforms.validate` says so."""
    folder = _dir(spec["id"])
    named = spec.get("tests")
    if named is None:
        try:
            named = sorted(n for n in os.listdir(folder) if n.startswith("test_") and n.endswith(".py"))
        except OSError:
            named = []
    elif isinstance(named, str):
        named = [named]
    return [os.path.join(folder, n) for n in named]


def tests_path(spec):
    """The folder of the assignment's grading tests (pytest's rootdir for them)."""
    return _dir(spec["id"])


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
