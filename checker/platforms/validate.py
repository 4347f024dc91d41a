"""`hwcheck validate`: does an assignment hold together? (issue 29, run by CI for every assignment)

What it is for: the checks an author needs before students see an assignment, each saying what is
wrong in a sentence:
  spec       the spec reads, its id is its folder's name, questions have unique ids and points, every
             question that is not graded by hand has tests, every test names exactly one question of
             the spec, every `hidden_tests` name is a test of its question, every `test_tolerances`
             name is a test;
  handout    the handout (README.md) names every function the spec grades, and the starter notebook
             defines each;
  kit        what the student kit takes of this folder holds no hidden test, no reference.py and no
             answer models (`_answers.py`); and no code the kit ships computes an answer: the kit is
             built into a temporary folder (the reference's public answers recorded as `hwcheck kit`
             does), and checker/platforms/kit_probe.py, in a process of its own (in namespaces where it can,
             with a time limit), calls every function and method the kit ships on fresh inputs of
             the graded functions (the shapes and values the public tests gave the reference, the
             float arrays drawn anew); one whose result equals the reference's answer by the spec's
             comparison (`checker.judging.compare.tolerance`, the question's tolerances) is named with its file;
  reference  the reference earns full marks on the public and the hidden tests;
  examples   every example submission (the folder's `examples/`) earns
             the verdicts its `expected.json` gives, and every example has an entry there.
The reference and examples checks grade in hidden mode at run seed 1234, and with `seeds` at more run
seeds as well: a hidden test's inputs come from the seed, so a test that fails honest code (or lets a
mistake through) on some draws only shows at some seeds; what a seed finds that 1234 did not is named with
that seed (`hwcheck grade --seed S` grades a batch at it).
The expected.json format: {"<example id>": {"verdicts": {"<question>": "full" | "lost" | "zero"},
"hints": {"<question>": ["text that must appear in its messages"]}, "not_hints": {...: [text that must
not]}, "with_cuda": {"verdicts": ..., "hints": ..., "not_hints": ...}}}; an example's id is its file name
without .py/.ipynb, or its folder's name; a question it does not name must get full marks (questions
graded by hand excepted). `with_cuda` replaces, question by question, what it names where the CUDA
variants ran (a real GPU: a bfloat16 input or a real device mismatch shows more than the CPU and the meta
stand-in do).

What it is not: a check of students' work, or a proof that the kit computes no answer (only float
array answers of graded functions are looked for, on the inputs the probe can make; a graded class is
not probed).
"""

import ast
import json
import os

from checker.errors import HwcheckError
from checker.judging.scorecard import SEE_QUESTION_MESSAGE, test_message
from checker.spec import spec_problems, test_functions  # noqa: F401 - the spec check lives with the spec

__all__ = ["resolve", "validate", "spec_problems", "handout_problems", "kit_problems", "grading_problems",
           "example_problems", "judge_example", "test_functions", "extra_seeds", "start_line", "CHECKS"]

CHECKS = ("spec", "handout", "kit", "reference", "examples")
VERDICTS = ("full", "lost", "zero")


def resolve(target):
    """The assignment id `target` names: an id, or a folder (an assignment folder, which is added to
    HWCHECK_ASSIGNMENTS for this process when hwcheck does not find it already)."""
    from checker.spec import ENV_VAR, assignment_dirs
    if os.path.isdir(target):
        folder = os.path.abspath(target)
        if not os.path.isfile(os.path.join(folder, "spec.toml")):
            raise HwcheckError(f"{target} holds no spec.toml: it is not an assignment folder")
        aid = os.path.basename(folder.rstrip(os.sep))
        found = assignment_dirs().get(aid)
        if found is None:
            os.environ[ENV_VAR] = os.pathsep.join(filter(None, [folder, os.environ.get(ENV_VAR, "")]))
        elif os.path.realpath(found) != os.path.realpath(folder):
            raise HwcheckError(f"{target}: the assignment {aid!r} is already {found}; give the folder another name")
        return aid
    if target not in assignment_dirs():
        raise HwcheckError(f"no assignment {target!r} (neither an assignment hwcheck finds nor a folder); "
                           f"known: {', '.join(sorted(assignment_dirs()))}")
    return target


def _notebook_definitions(path):
    with open(path, encoding="utf-8") as f:
        nb = json.load(f)
    names = set()
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        src = src if isinstance(src, str) else "".join(src)
        src = "\n".join(line for line in src.splitlines() if not line.lstrip().startswith(("!", "%")))
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


def handout_problems(aid):
    from checker.spec import assignment_dir, load_spec
    spec, folder = load_spec(aid), assignment_dir(aid)
    names = [n for q in spec["questions"] for n in q.get("names", [])]
    problems = []
    readme = os.path.join(folder, "README.md")
    if not os.path.isfile(readme):
        problems.append("the handout README.md is missing")
    else:
        with open(readme, encoding="utf-8") as f:
            text = f.read()
        problems += [f"the handout README.md does not name `{n}`, which question {q['id']} grades"
                     for q in spec["questions"] for n in q.get("names", []) if f"`{n}" not in text]
    starter = os.path.join(folder, "starter.ipynb")
    if os.path.isfile(starter):
        defined = _notebook_definitions(starter)
        problems += [f"the starter notebook does not define {n}" for n in names if n not in defined]
    return problems


def kit_problems(aid):
    """What the student kit would take of this folder (see checker.platforms.kit.build_kit): no hidden test in the
    stripped grading tests, and none of the files the kit leaves out."""
    from checker.platforms.kit import _strip_hidden
    from checker.spec import hidden_tests, load_spec, grading_test_files
    spec = load_spec(aid)
    hidden = hidden_tests(spec)
    kept = set()
    for path in grading_test_files(spec):
        if not os.path.isfile(path):
            return []  # told by the spec check
        with open(path, encoding="utf-8") as f:
            stripped = _strip_hidden(f.read(), hidden)
        try:
            tree = ast.parse(stripped)
        except SyntaxError as e:
            return [f"the kit's copy of {os.path.basename(path)} (hidden tests removed) does not parse: {e}"]
        kept |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    problems = [f"the kit would ship the hidden test {h}" for h in sorted(hidden & kept)]
    text_left = [h for h in sorted(hidden - kept) if h in stripped]
    problems += [f"the kit's grading tests still name the hidden test {h} (outside its function)" for h in text_left]
    return problems


def judge_example(card, exp):
    """The problems of one example's scorecard against its expected.json entry ([] when it is as expected)."""
    problems = []
    cuda_ran = any(t.get("device") == "cuda" and t["outcome"] != "skipped" for q in card["questions"] for t in q["tests"])
    if cuda_ran and exp.get("with_cuda"):
        exp = {**exp, **{k: {**exp.get(k, {}), **v} for k, v in exp["with_cuda"].items()}}
    verdicts = exp.get("verdicts", {})
    ids = {q["id"] for q in card["questions"]}
    problems += [f"expected.json names question {q!r}, which the scorecard does not have"
                 for q in list(verdicts) + list(exp.get("hints", {})) + list(exp.get("not_hints", {})) if q not in ids]
    problems += [f"verdict {v!r} of {q} is none of {', '.join(VERDICTS)}" for q, v in verdicts.items() if v not in VERDICTS]
    for q in card["questions"]:
        if q["manual"]:
            continue
        want = verdicts.get(q["id"], "full")
        msgs = _messages(q)
        got = f"{q['score']:g}/{q['max_score']:g}"
        if want == "full" and q["score"] != q["max_score"]:
            problems.append(f"{q['id']} should get full marks, got {got}: {_shown(msgs)}")
        elif want == "zero" and q["score"] != 0:
            problems.append(f"{q['id']} should score 0, got {got}")
        elif want == "lost" and not 0 <= q["score"] < q["max_score"]:
            problems.append(f"{q['id']} should lose points, got {got}")
        for hint in exp.get("hints", {}).get(q["id"], []):
            if hint.lower() not in msgs.lower():
                problems.append(f"{q['id']}: the hint {hint!r} is not in its messages: {_shown(msgs)}")
        for hint in exp.get("not_hints", {}).get(q["id"], []):
            if hint.lower() in msgs.lower():
                problems.append(f"{q['id']}: the misleading {hint!r} is in its messages")
    return problems


def _messages(q):
    """A question's own message, then its tests' (those failed, or with a message), each once; a test's message
    that only points to the question's (`SEE_QUESTION_MESSAGE`, the scorecard's placeholder where the question
    says it once) is that message, already first, so it is not repeated."""
    out = []
    for text in [q.get("message", "")] + [test_message(q, t) for t in q["tests"]
                                          if t["outcome"] != "passed" or t.get("message")]:
        text = str(text or "").strip()
        if text and text != SEE_QUESTION_MESSAGE and text not in out:
            out.append(text)
    return "\n".join(out)


def _shown(msgs):
    """Messages as one line of a problem (the report's lines are one per problem), at most 300 characters."""
    return " / ".join(line.strip() for line in msgs.splitlines() if line.strip())[:300]


def _full_marks(card):
    out = []
    for q in card["questions"]:
        if q["manual"] or q["score"] == q["max_score"]:
            continue
        failed = [test_message(q, t) for t in q["tests"] if t["outcome"] != "passed"]
        first = next((m for m in failed if m and m != SEE_QUESTION_MESSAGE), "") or _messages(q)
        out.append(f"{q['id']} {q['score']:g}/{q['max_score']:g}: {_shown(first)}")
    return out


def grading_problems(aid, grader):
    """The reference, graded on the public and the hidden tests, must earn full marks."""
    from checker.spec import load_spec, reference_file
    spec = load_spec(aid)
    ref = reference_file(spec)
    if ref is None:
        return [f"no reference solutions: neither reference.py in the folder nor the module {spec['reference']}"]
    card = grader.grade(ref, aid)
    shared = _shared_data_problems(card, "the reference", set())
    if card["status"] != "graded":
        return shared + [f"the reference was not graded ({card['status']}): {card.get('message', '')[:300]}"]
    problems = shared + [f"the reference loses points on {p}" for p in _full_marks(card)]
    ran = {q["id"]: len(q["tests"]) for q in card["questions"]}
    problems += [f"question {q['id']}: no test ran on the reference" for q in spec["questions"]
                 if not q.get("manual") and not ran.get(q["id"])]
    return problems


def _examples(folder):
    with open(os.path.join(folder, "expected.json"), encoding="utf-8") as f:
        expected = json.load(f)
    entries = {}
    for e in sorted(os.listdir(folder)):
        if e == "expected.json" or e.startswith(".") or e == "__pycache__":
            continue
        entries[os.path.splitext(e)[0] if e.endswith((".py", ".ipynb")) else e] = os.path.join(folder, e)
    return expected, entries


def example_problems(aid, grader, only=None):
    """Every example submission against its expected.json entry; `only`: a set of example ids to grade."""
    from checker.spec import example_dirs
    problems, told = [], set()
    for folder in example_dirs(aid):
        try:
            expected, entries = _examples(folder)
        except (OSError, ValueError) as e:
            problems.append(f"{folder}/expected.json cannot be read: {e}")
            continue
        problems += [f"{folder}: {sid} has no entry in expected.json" for sid in entries if sid not in expected]
        for sid, exp in sorted(expected.items()):
            if only is not None and sid not in only:
                continue
            if sid not in entries:
                problems.append(f"{folder}/expected.json names {sid!r}, which is not in that folder")
                continue
            card = grader.grade(entries[sid], aid)
            problems += _shared_data_problems(card, f"example {sid}", told)
            problems += [f"example {sid}: {p}" for p in judge_example(card, exp)]
    return problems


def _shared_data_problems(card, what, told):
    """The shared data of the grading modules that grading `what` changed (checker.running.session.SharedData: the
    grader graded the next submission with a fresh session, but a batch's grades would pay a fresh import for
    each), each told once per `told`: the module, the global and the test that changed it."""
    from checker.running.session import shared_data_changes
    out = []
    for c in shared_data_changes(card):
        key = (c.get("file"), c.get("global"), c.get("test"))
        if key in told:
            continue
        told.add(key)
        test = f" (test {c['test']})" if c.get("test") else ""
        out.append(f"the grading tests changed {c.get('global')} of {c.get('file')} while grading {what}{test}: "
                   f"a test must not change shared data in place; copy it first ({c.get('copy')})")
    return out


def _kit_code_problems(aid):
    from checker.platforms.kit_check import kit_code_problems  # builds the kit and probes it in a process of its own
    return kit_code_problems(aid)


def _at_seeds(graded, aid, grader, seeds):
    """graded(aid, grader) with `grader`, then with a grader at each other seed of `seeds` (sharing its zygote):
    the problems found, those of another seed named with it (those the first seed found too are not repeated)."""
    from checker.running.runner import Grader
    found = list(graded(aid, grader))
    for seed in seeds:
        if seed == grader.seed:
            continue
        with Grader(mode="hidden", seed=seed, zygote=grader.zygote, timeout=grader.timeout,
                    devices=grader.devices) as other:
            found += [f"at seed {seed}: {p}" for p in graded(aid, other) if p not in found]
    return found


def extra_seeds(n, first=1234):
    """[first] and n-1 fresh run seeds, none equal."""
    import secrets
    seeds = [first]
    while len(seeds) < n:
        s = secrets.randbits(31)
        if s not in seeds:
            seeds.append(s)
    return seeds


def _example_count(aid):
    """How many example submissions the examples check grades (0 where expected.json cannot be read)."""
    from checker.spec import example_dirs
    n = 0
    try:
        folders = example_dirs(aid)
    except (HwcheckError, OSError, ValueError):
        return 0  # the check itself says why
    for folder in folders:
        try:
            expected, entries = _examples(folder)
        except (OSError, ValueError):
            continue
        n += len(set(expected) & set(entries))
    return n


def start_line(aid, check, seeds=1):
    """The line said as `check` starts (validate's `started`): what it does and, for the slow ones, how long it
    takes (the kit and examples checks take minutes, and validate said nothing until they were done: h91)."""
    at = f", at {seeds} seeds" if seeds > 1 else ""
    what = {"spec": "reading the spec and the grading tests",
            "handout": "reading the handout and the starter notebook",
            "kit": "building the student kit and probing the code it ships (one to three minutes)",
            "reference": f"grading the reference on the public and hidden tests{at} (seconds)",
            "examples": f"grading the {_example_count(aid)} example submissions{at} (a second or more each)"}[check]
    return f"{aid}: {check}: {what}..."


def validate(aid, *, checks=CHECKS, grader=None, echo=print, seeds=None, started=None):
    """Run `checks` on the assignment; echo one line per check; return [(check, problem)]. `seeds`: the run
    seeds the reference and examples checks grade at (default: the grader's own, 1234). `started(line)`, when
    given, is told as each check starts (`start_line`: the `hwcheck validate` command says it on stderr)."""
    from checker.running.session import watching_each_test
    out = []
    own = None
    try:
        for check in checks:
            if check in ("reference", "examples") and grader is None:
                from checker.running.runner import Grader
                grader = own = Grader(mode="hidden", seed=1234)
            at = list(seeds or [grader.seed]) if check in ("reference", "examples") else []
            if started is not None:
                started(start_line(aid, check, max(len(at), 1)))
            run = {"spec": spec_problems, "handout": handout_problems,
                   "kit": lambda a: kit_problems(a) + _kit_code_problems(a),
                   "reference": lambda a: _at_seeds(grading_problems, a, grader, at),
                   "examples": lambda a: _at_seeds(example_problems, a, grader, at)}[check]
            try:
                with watching_each_test():  # a change of the grading modules' data names the test that made it
                    found = run(aid)
            except (HwcheckError, OSError, ValueError) as e:
                found = [f"could not be checked: {e}"]
            seen = f" at {len(at)} seeds ({', '.join(map(str, at))})" if len(at) > 1 else ""
            echo(f"{aid}: {check}: " + ("ok" if not found else f"{len(found)} problem(s)") + seen)
            for p in found:
                echo(f"  - {p}")
            out += [(check, p) for p in found]
            if check == "spec" and found:
                echo(f"{aid}: the other checks need a sound spec; stopped")
                break
    finally:
        if own is not None:
            own.close()
    return out
