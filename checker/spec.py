"""Assignment specs: finding assignments, reading their `spec.toml`, and facts derived from it.

What it is for: one place that knows which assignments there are and where
each one's spec, grading tests, reference and example submissions are, the
spec's hash (scorecards record it), and which assignment a set of defined
names most looks like.

An assignment is a folder holding `spec.toml`; its id is the folder's name.
They are found in:
  1. hwcheck's own `assignments/` folder (the built-in ones);
  2. the folders named by the environment variable HWCHECK_ASSIGNMENTS
     (`os.pathsep`-separated), each an assignment folder or a folder of them;
  3. installed packages' entry points of the group `hwcheck.assignments`, each
     naming a package (`mycourse.hw1 = "mycourse.hw1"`) whose folder is an
     assignment folder or a folder of them.
Two different folders with one id make the id ambiguous: every command that resolves it
(`assignment_dir`, `load_spec`) refuses, naming both folders (a course's copy of a built-in
assignment that kept its id once graded with the built-in silently); the other ids work.
An assignment is one folder: its `reference.py` (importable as
`hwcheck_reference.<id>`, a finder on sys.meta_path, which is what the spec's
`reference` says after `load_spec`; a spec may instead name a module of its
own with `reference = "..."`) and its `examples/` with an `expected.json` lie
beside its spec, the built-in assignments' as a course's. The student kit has
neither.

`spec_problems` is the cheap static check of a spec against its grading tests (reading files only:
every hidden_tests name is a test of its question, every test names one question of the spec ...):
`hwcheck validate`, `hwcheck kit` and `hwcheck grade` (before it writes anything) ask it.
`spec_sha256` hashes everything of the folder that decides a grade (spec.toml, the test and helper
modules, the reference): a scorecard graded with other grading files is not current.

What it is not: the rest of the validator of assignments (`checker.platforms.validate`), a check of
student work, or an importer of reference code beyond naming it.
"""

import ast
import copy
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
           "every_assignment_folder", "assignment_dir", "is_builtin", "discovery_problems", "load_spec",
           "spec_sha256", "tests_path", "grading_test_files", "reference_file", "example_dirs", "example_path",
           "points", "infer_assignment", "inference_note", "question_of_test", "hidden_tests", "grading_files",
           "ambiguous_ids", "spec_problems", "test_functions"]

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
    """({id: folder}, [problem], {ambiguous id: [(folder, source)]}) in the order of precedence (built-in,
    HWCHECK_ASSIGNMENTS, entry points); an ambiguous id's first folder is in the first."""
    found, problems, sources, clashes = {}, [], {}, {}

    def add(folder, source):
        folder = os.path.abspath(folder)
        aid = os.path.basename(folder)
        if aid in found:
            if os.path.realpath(found[aid]) != os.path.realpath(folder):
                clashes.setdefault(aid, [(found[aid], sources[aid])]).append((folder, source))
                problems.append(f"{folder} ({source}) has the id {aid!r} of {found[aid]} ({sources[aid]}): "
                                f"{_rename(aid)}")
            return
        found[aid], sources[aid] = folder, source

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
    return found, problems, clashes


def _rename(aid):
    return (f"hwcheck grades with neither, and refuses the assignment {aid!r}; give the course's copy an id of "
            f"its own (rename its folder, and its spec.toml's id, e.g. {aid + '_course'!r})")


def assignment_dirs():
    """{assignment id: its folder} of every assignment found (see the module's docstring)."""
    return _discover()[0]


def every_assignment_folder():
    """Every folder found holding an assignment, the folders of an ambiguous id too (refused for grading, but no
    worker may read them either: checker.running.submission_files.secret_paths)."""
    folders, _, clashes = _discover()
    return sorted(set(folders.values()) | {folder for where in clashes.values() for folder, _ in where})


def discovery_problems():
    """What was named but not used: a folder with no spec, an id already taken, a broken entry point."""
    return _discover()[1]


def ambiguous_ids():
    """{id: the message refusing it} of the ids two different folders have (see the module's docstring)."""
    return {aid: f"the assignment id {aid!r} is ambiguous: "
                 + " and ".join(f"{folder} ({source})" for folder, source in where)
                 + f" both have it; {_rename(aid)}"
            for aid, where in _discover()[2].items()}


def assignment_ids():
    return sorted(assignment_dirs())


def assignment_dir(aid):
    folders, _, clashes = _discover()
    if aid not in folders:
        raise SpecError(f"unknown assignment {aid!r}; known: {', '.join(sorted(folders))}")
    if aid in clashes:
        raise SpecError(ambiguous_ids()[aid])
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


def _stamp(path):
    """What says a file changed (its inode, size and modification time in ns), or None where it is not there."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


_PARSED = {}  # spec.toml path -> (its stamp, what tomllib read): a grade reads the spec several times


def load_spec(aid):
    path = os.path.join(_dir(aid), SPEC_FILE)
    stamp = _stamp(path)
    kept = _PARSED.get(path)
    if stamp is not None and kept is not None and kept[0] == stamp:
        spec = copy.deepcopy(kept[1])  # callers fill in and change their spec
    else:
        try:
            with open(path, "rb") as f:
                spec = tomllib.load(f)
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise SpecError(f"cannot read {path}: {e}") from None
        if stamp is not None and stamp == _stamp(path):
            _PARSED[path] = (stamp, copy.deepcopy(spec))
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


def grading_files(aid):
    """[(name, path)] of every file of the assignment that decides a grade, sorted by name: its spec.toml and
    every .py file of its folder and the folders in it (the grading tests, conftest.py, helpers such as
    _common.py and _answers.py, the reference), except the example submissions (examples/), caches and hidden
    folders; and its reference file where that lies outside the folder. A name is the path relative to the
    folder with '/' (the reference outside it: `<reference MODULE>`), so that two installs agree."""
    folder = _dir(aid)
    out = [(SPEC_FILE, os.path.join(folder, SPEC_FILE))]
    for here, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__"
                         and not (here == folder and d == "examples"))
        for name in files:
            if name.endswith(".py") and not name.startswith("."):
                path = os.path.join(here, name)
                out.append((os.path.relpath(path, folder).replace(os.sep, "/"), path))
    try:
        spec = load_spec(aid)
        ref = reference_file(spec)
    except SpecError:
        ref = None
    if ref and not os.path.realpath(ref).startswith(os.path.realpath(folder) + os.sep):
        out.append((f"<reference {spec['reference']}>", ref))
    return sorted(out)


def spec_sha256(aid):
    """The sha256 of the assignment's grading files (`grading_files`: each one's name and bytes, in order):
    scorecards record it, and one graded with other grading files is not current (`--resume` regrades it)."""
    files = grading_files(aid)
    stamps = tuple((name, path, _stamp(path)) for name, path in files)
    kept = _HASHED.get(aid)
    if kept is not None and kept[0] == stamps and None not in (s for _, _, s in stamps):
        return kept[1]
    h = hashlib.sha256()
    for name, path in files:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue  # gone since the folder was listed
        for part in (name.encode("utf-8", "surrogateescape"), data):
            h.update(len(part).to_bytes(8, "big"))
            h.update(part)
    digest = h.hexdigest()
    if stamps == tuple((name, path, _stamp(path)) for name, path in files):  # none changed while it was read
        _HASHED[aid] = (stamps, digest)
    return digest


_HASHED = {}  # assignment id -> (every grading file's name, path and stamp, their hash): read once while unchanged


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


def _matches(names):
    """[(id, share of its names defined, how many)] of every assignment with names, best first: the larger
    share, then more names found (a course's copy that adds a question to a built-in beats it at 100%
    each), then the id."""
    names = set(names)
    out = []
    for aid in assignment_ids():
        wanted = {n for q in load_spec(aid)["questions"] for n in q["names"]}
        if wanted:
            out.append((aid, len(wanted & names) / len(wanted), len(wanted & names)))
    return sorted(out, key=lambda m: (-m[1], -m[2], m[0]))


def infer_assignment(names):
    """(assignment id, share of its names defined) for the best match (`_matches`), or (None, 0.0)."""
    best = _matches(names)[:1]
    return (best[0][0], best[0][1]) if best and best[0][1] > 0 else (None, 0.0)


def inference_note(names):
    """The line `check` says after inferring the assignment from `names`: which one and the share of its
    names found, and every other assignment of which half the names or more are found too (a course's copy
    of a built-in, which the student may be doing before its extra question is written)."""
    matches = _matches(names)
    if not matches or matches[0][1] <= 0:
        return None
    aid, share, _ = matches[0]
    note = f"assignment inferred from the names defined: {aid} ({share:.0%} of its names found)"
    near = [m for m in matches[1:] if m[1] >= 0.5]
    for other, other_share, _ in near:
        note += f"; also {other_share:.0%} of {other}'s names: pass -a {other} if that is your assignment"
    return note


def test_functions(path):
    """{test function name: [question ids of its @pytest.mark.question markers]} of a grading test file."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            marks = []
            for d in node.decorator_list:
                if (isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "question"):
                    marks.append(d.args[0].value if d.args and isinstance(d.args[0], ast.Constant) else None)
            out[node.name] = marks
    return out


def spec_problems(aid):
    """What is wrong with the spec against its grading tests, in sentences (files read, nothing run): the spec
    reads, question ids are unique and points positive, every test names exactly one question of the spec,
    every question not graded by hand has tests, every hidden_tests name is a test of its question (a typo
    makes the hidden test public), every test_tolerances name is a test. `hwcheck validate`'s spec check;
    `hwcheck kit` and `hwcheck grade` refuse on any."""
    try:
        spec = load_spec(aid)
    except SpecError as e:
        return [str(e)]
    problems = []
    questions = spec.get("questions") or []
    if not questions:
        return [f"{aid}'s spec has no [[questions]]"]
    ids = [q.get("id") for q in questions]
    problems += [f"the question id {q!r} is used more than once" for q in sorted({i for i in ids if ids.count(i) > 1})]
    for q in questions:
        pts = q.get("points")
        if not isinstance(pts, (int, float)) or isinstance(pts, bool) or pts <= 0:
            problems.append(f"question {q.get('id')!r}: points must be a positive number, not {pts!r}")
    named = spec.get("tests")
    if named is not None and not (isinstance(named, str) or
                                  (isinstance(named, list) and named and all(isinstance(n, str) for n in named))):
        return problems + [f"the spec's tests must be a file name or a list of them, not {named!r}"]
    paths = grading_test_files(spec)
    if not paths:
        return problems + ["no grading tests: no test_*.py in the folder"]
    tests = {}
    for path in paths:
        if not os.path.isfile(path):
            return problems + [f"the grading tests {os.path.relpath(path, assignment_dir(aid))} are missing"]
        try:
            found = test_functions(path)
        except SyntaxError as e:
            return problems + [f"{path} does not parse: {e}"]
        # a test's name (not its file) gives its inputs' seed and its hidden_tests entry: one per assignment
        problems += [f"the test {n} is defined in more than one grading test file" for n in sorted(set(found) & set(tests))]
        tests.update(found)
    for name, marks in sorted(tests.items()):
        if len(marks) != 1:
            problems.append(f"{name} has {len(marks)} @pytest.mark.question markers; it needs exactly one")
        elif marks[0] not in ids:
            problems.append(f"{name} is marked for question {marks[0]!r}, which the spec does not have")
    by_question = {qid: {n for n, m in tests.items() if m == [qid]} for qid in ids}
    for q in questions:
        if q.get("manual"):
            if q.get("hidden_tests") or by_question[q["id"]]:
                problems.append(f"question {q['id']} is graded by hand (manual = true) but has tests")
            continue
        if not by_question[q["id"]]:
            problems.append(f"question {q['id']} has no test (a test marked @pytest.mark.question({q['id']!r}))")
        for h in q.get("hidden_tests", []):
            if h not in tests:
                problems.append(f"question {q['id']}: hidden_tests names {h!r}, which is no test function of "
                                f"{os.path.basename(path)} (a typo makes the hidden test public)")
            elif h not in by_question[q["id"]]:
                problems.append(f"question {q['id']}: hidden_tests names {h!r}, a test of another question")
        if by_question[q["id"]] and by_question[q["id"]] <= set(q.get("hidden_tests", [])):
            problems.append(f"question {q['id']}: every test is hidden; students' checks would show it empty")
    for name in spec.get("test_tolerances", {}):
        if name not in tests:
            problems.append(f"test_tolerances names {name!r}, which is no test function")
    return problems
