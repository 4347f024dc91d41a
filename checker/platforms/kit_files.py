"""The student kit's own pyproject.toml and README.md, and what it keeps of the test modules (written by
`checker.platforms.kit.build_kit`).

What it is for: pure functions of text. `kit_pyproject(full)` derives the kit's
packaging from the full package's pyproject text: the same runtime
dependencies and top-level packages (each found whole, with the
data files the full package ships) less the reference solutions, no extras and no
tool settings (they are the course staff's), the license as an SPDX string
and the build backend pinned to a range of setuptools that builds it without
a deprecation warning. `kit_readme(assignments, package)` is the README a
student reads: how to install it (the CPU build of torch first: a plain
`pip install` of the kit on Linux would pull CUDA's packages, gigabytes a
laptop does not need), how to check from a terminal, from a notebook
(Jupyter, VS Code) and on Colab, and how the check runs on their repository
(`hwcheck init-ci`). It names only what the kit does: no grading with
hidden tests, no `kit` command, no reference solutions; `installed_as_kit()` lets the
CLI offer only `STUDENT_COMMANDS` there.

`unreferenced_pruned(sources, pruned)` is what the kit keeps of an assignment's test modules once their
hidden tests are cut out (called by `build_kit` on the kit's copy of each assignment folder; the `pruned`
ones, which `local_imports` finds, are its grading test files, conftest.py and the folder's modules they
import): every module-level function, class and name bound to a lambda that nothing shipped still
references is removed too, so a helper only a hidden test used (one that makes inputs and computes their answer, say) is not shipped. A
reachability pass over the source: from the kept tests (`test*`, `Test*`), fixtures (`@pytest.fixture`:
pytest finds them by parameter name), pytest hooks (`pytest_*`, `setup_module`, ...), dunders and every
statement that defines nothing (imports, constants, `__all__`, `pytestmark`, `collect_ignore`), through the
names their code uses, to the definitions of those names in any of the folder's modules (the names are
not resolved to a module: a star import, `from ._common import x` and `_common.x` all count, as does a
parameter's name and a string constant equal to a definition's name, `getattr(m, "x")`). Definitions
nested in `if`/`try` blocks stay, and so does everything of the folder's other modules.

What it is not: the kit's builder (`checker.platforms.kit`) or the full README; nor a guarantee that no
shipped helper computes an answer: what a public test uses stays, and `hwcheck validate`'s kit probe
(checker.platforms.kit_probe) calls it.
"""

import ast
import json
import os
import re

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

__all__ = ["BUILD_REQUIRES", "TORCH_CPU_INDEX", "STUDENT_COMMANDS", "kit_pyproject", "kit_readme", "installed_as_kit",
           "unreferenced_pruned", "local_imports"]

# setuptools 77 reads an SPDX `license` string (a TOML table is deprecated from it on); <85 keeps the kit
# from meeting a later backend's new deprecations on a student's machine
BUILD_REQUIRES = "setuptools>=77,<85"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
STUDENT_COMMANDS = ("check", "list", "show", "init-ci")  # what the kit's `hwcheck --help` offers


def installed_as_kit():
    """Whether this hwcheck is the student kit (`build_kit` writes checker/kit.json with student_kit)."""
    try:
        with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kit.json"), encoding="utf-8") as f:
            return json.load(f).get("student_kit") is True
    except (OSError, ValueError, AttributeError):
        return False


def _toml(value):
    """A TOML value for a str, or a list of str (JSON's string syntax is TOML's basic string)."""
    if isinstance(value, list):
        return "[" + ", ".join(json.dumps(v) for v in value) + "]"
    return json.dumps(value)


def kit_pyproject(full):
    """The kit's pyproject.toml text from the full package's `full` pyproject.toml text."""
    data = tomllib.loads(full)
    project, setup = data["project"], data.get("tool", {}).get("setuptools", {})
    listed = setup.get("packages", [])  # a list, or found: `[tool.setuptools.packages.find] include = [...]`
    if isinstance(listed, dict) or "packages" not in setup:
        listed = (listed if isinstance(listed, dict) else {}).get("find", {}).get("include", [])
    packages = list(listed)  # each assignment's reference.py and examples/ are left out by build_kit
    lines = ["[build-system]", f"requires = {_toml([BUILD_REQUIRES])}", 'build-backend = "setuptools.build_meta"',
             "", "[project]", f"name = {_toml(project['name'])}", f"version = {_toml(project['version'])}",
             f"description = {_toml('Self-check of the transformer homework on its public tests (student kit)')}",
             'readme = "README.md"', f"requires-python = {_toml(project.get('requires-python', '>=3.10'))}",
             'license = "MIT"', "dependencies = ["]
    lines += [f"    {_toml(d)}," for d in project.get("dependencies", [])]
    lines += ["]", "", "[project.scripts]"]
    lines += [f"{name} = {_toml(target)}" for name, target in project.get("scripts", {}).items()]
    # every folder under the kit's top-level packages is a package (checker/schema too: listing packages one
    # by one left it out, which setuptools warns about), and each carries its data files
    tops = sorted({p.split(".")[0] for p in packages})
    suffixes = sorted({"*" + os.path.splitext(f)[1] for files in setup.get("package-data", {}).values()
                       for f in files if os.path.splitext(f)[1]})
    lines += ["", "[tool.setuptools.packages.find]", 'where = ["."]',
              f"include = {_toml([t for top in tops for t in (top, top + '.*')])}", "",
              "[tool.setuptools.package-data]", f'"*" = {_toml(suffixes)}']
    return "\n".join(lines) + "\n"


def kit_readme(assignments, package=None):
    """The student's README. `assignments` [(id, title)]; `package` the pip spec it is published as."""
    spec = package or "PATH/TO/hwcheck-student"
    where = (f"Your course publishes it as `{package}`." if package else
             "Use the place your course gave you (a folder you downloaded, or a `git+https://...` address) "
             "wherever this README says `PATH/TO/hwcheck-student`.")
    names = "\n".join(f"- `{aid}`: {title}" for aid, title in assignments)
    first = assignments[0][0] if assignments else "attention"
    # the workflow installs the kit on GitHub's machines: from where the course publishes it (built into a kit
    # built with --package; else the student names it, or init-ci refuses)
    init_ci = f"hwcheck init-ci -a {first} --path my_{first}.ipynb" + (
        "" if package else " --package git+https://PATH/TO/hwcheck-student")
    ci_where = ("" if package else
                "\n(`--package`: where GitHub's machines install this kit from, the `git+https://...` address your "
                "course gave you; a folder on your laptop is not reachable from there.)\n")
    return f"""# hwcheck: check your homework before you hand it in

This kit runs the **public checks** of the transformer homework on your own
work and tells you, question by question, what passes, what fails and why
(often with the likely mistake). Your work is graded later with the same
public checks plus more that you do not see here, so a full score here is a
good sign, not a promise.

The assignments it knows:

{names}

{where}

## Install (on your laptop)

Use Python 3.10 or newer, in a virtual environment. Install the **CPU build of
PyTorch first**: otherwise pip fetches the CUDA build and its `nvidia-*`
packages, several gigabytes your laptop does not need for this homework.

```bash
python -m venv .venv
source .venv/bin/activate            # Windows: .venv\\Scripts\\activate
pip install torch --index-url {TORCH_CPU_INDEX}
pip install {spec}
```

(On macOS, plain `pip install torch` is already the small build; the line above works too.)

## Check from a terminal

```bash
hwcheck check my_{first}.ipynb          # a notebook, a .py file, or a folder of them
hwcheck check my_{first}.ipynb -v       # also list the checks that passed
hwcheck list                            # the assignments, their questions and points
```

The exit status is 0 when every check that ran passed, 1 when some failed.
Save your notebook first (File > Save): the terminal checks the file on disk.

## Check from your notebook (Jupyter, JupyterLab, VS Code)

Install the kit into the environment your notebook's kernel uses (as above),
then run this in a cell at the end of your notebook:

```python
import checker
checker.check()          # every question; checker.check("Q1") for one
```

It checks the code you have run in this kernel, in the order you ran it (or
your saved notebook, when the kernel knows it and nothing differs), and shows
a table with a row per question; failures are folded open with their message.
Your code runs in a separate process, never in your kernel, so checking does
not change your variables. Prefer a magic? `%load_ext checker`, then
`%hwcheck` or `%hwcheck Q1`.

Before you hand it in, Restart & Run All, then check again: grading runs your
cells top to bottom, once.

## Check on Google Colab

Colab already has PyTorch. Add a cell at the top of your notebook and run it:

```python
!pip install -q {spec}
```

(A folder on your Google Drive works as `PATH/TO/hwcheck-student` once Drive
is mounted.) Then, after your own cells:

```python
import checker
checker.check()
```

Colab does not need the notebook saved anywhere: the check uses the code you ran.

## Check on every push (GitHub)

If you hand in through a GitHub repository (GitHub Classroom), let GitHub run
the check on every push:

```bash
{init_ci}
git add .github/workflows/hwcheck.yml && git commit -m "check my homework" && git push
```
{ci_where}
This writes `.github/workflows/hwcheck.yml`, which installs this kit (with the
CPU build of PyTorch) on GitHub's machines and runs
`hwcheck check my_{first}.ipynb --ci` on each push. The result is in the
**Actions** tab of your repository: a red cross when a check fails, with each
failure shown as an annotation on the line of your code it is about, and the
table of points in the run's summary.

## What the messages mean

- *Loading your submission*: a cell that failed when your code was run top to
  bottom (a file that is not there, a name used before it is defined). Cells are
  named as your notebook shows them: `In [7]`, or "the 4th code cell" for one
  that never ran.
- *FAILED test_...*: a check of a question that did not pass, with what was
  expected and what your code gave; *Likely mistake* names a common cause.
- *+ N hidden tests run at grading time*: the checks you do not see here.
"""


# ---------------------------------------------------------------------------
# what the kit keeps of an assignment's test modules (see the module's docstring)
# ---------------------------------------------------------------------------

_XUNIT = {"setup_module", "teardown_module", "setup_function", "teardown_function", "setup", "teardown"}
_ROOT_DECORATORS = {"fixture", "yield_fixture", "hookimpl"}  # pytest reaches these by name, not by a reference
_NAMES = re.compile(r"\s*[A-Za-z_][\w.]*(\s*,\s*[A-Za-z_][\w.]*)*\s*")  # "x", "a, b", "pkg.mod.x"


def _definition(node):
    """The name a module-level statement defines that may be removed (a function, a class, `f = lambda`)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    target = (node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1
              else node.target if isinstance(node, ast.AnnAssign) else None)
    if isinstance(target, ast.Name) and isinstance(node.value, ast.Lambda):
        return target.id
    return None


def _decorator_name(node):
    node = node.func if isinstance(node, ast.Call) else node
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _is_root(node, name):
    """A definition pytest itself uses: a test, a test class, a fixture, a hook; or a dunder."""
    if isinstance(node, ast.ClassDef):
        tested = name.startswith("Test")
    else:
        tested = name.startswith("test") and not isinstance(node, (ast.Assign, ast.AnnAssign))
    return (tested or name.startswith("pytest_") or name in _XUNIT or (name.startswith("__") and name.endswith("__"))
            or any(_decorator_name(d) in _ROOT_DECORATORS for d in getattr(node, "decorator_list", [])))


def _uses(node):
    """Every name the code of `node` may refer to: names, attributes, imported names, parameters (a fixture's
    use), keywords, and string constants that are a name or a list of them (`getattr(m, "x")`, "a, b")."""
    names = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            names.add(n.id)
        elif isinstance(n, ast.Attribute):
            names.add(n.attr)
        elif isinstance(n, ast.alias):
            names.update(n.name.split("."))
        elif isinstance(n, ast.arg):
            names.add(n.arg)
        elif isinstance(n, ast.keyword) and n.arg:
            names.add(n.arg)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            names.update(n.names)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and len(n.value) <= 500 \
                and _NAMES.fullmatch(n.value):
            names.update(part.strip().split(".")[-1] for part in n.value.split(","))
    return names


def _cut(source, tree, gone):
    """`source` without the top-level statements in `gone` (decorators included) and the blank lines after
    each; a statement that shares a line with another (`x = 1; f = lambda: 0`) stays."""
    lines = source.splitlines(keepends=True)
    cut, body = set(), tree.body
    for i, node in enumerate(body):
        if id(node) not in gone:
            continue
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        if (i and body[i - 1].end_lineno >= start) or (i + 1 < len(body) and body[i + 1].lineno <= node.end_lineno):
            continue
        end = node.end_lineno
        if start == 1 or not lines[start - 2].strip():
            while end < len(lines) and not lines[end].strip() and (i + 1 == len(body) or end + 1 < body[i + 1].lineno):
                end += 1
        cut.update(range(start - 1, end))
    return "".join(line for i, line in enumerate(lines) if i not in cut)


def unreferenced_pruned(sources, pruned):
    """{path: source} of an assignment folder's modules, with each module in `pruned` (its tests, conftest.py,
    the modules they import) cut down to what is still referenced (see the module's docstring); the other
    modules as they are, their code counting as references. Nothing is cut while a module does not parse."""
    trees = {}
    for path, source in sources.items():
        try:
            trees[path] = ast.parse(source)
        except SyntaxError:
            return dict(sources)
    defined, todo = {}, []
    for path, tree in trees.items():
        for node in tree.body:
            name = _definition(node) if path in pruned else None
            if name is None or _is_root(node, name):
                todo.append(node)
            else:
                defined.setdefault(name, []).append(node)
    used = set()
    while todo:
        for name in _uses(todo.pop()) - used:
            used.add(name)
            todo += defined.pop(name, [])  # every definition of the name, in whichever module
    gone = {id(node) for nodes in defined.values() for node in nodes}
    return {path: _cut(source, trees[path], gone) if path in pruned and any(id(n) in gone for n in trees[path].body)
            else source for path, source in sources.items()}


def local_imports(sources, starts, packages=()):
    """The paths of `sources` ({path relative to the folder, "/"-separated: source}) that the modules `starts`
    import, directly or through each other, with `starts` themselves; relative imports, and absolute ones of
    the folder as one of `packages` ("assignments.hw9"). An `__init__.py` is never among them."""
    def found(parts):
        for path in ("/".join(parts) + ".py", "/".join(parts + ["__init__"]) + ".py"):
            if parts and path in sources:
                return path
        return None

    out, todo = set(), [s for s in starts if s in sources]
    while todo:
        path = todo.pop()
        if path in out:
            continue
        out.add(path)
        try:
            tree = ast.parse(sources[path])
        except SyntaxError:
            continue
        package = path[:-3].split("/")[:-1]
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level:
                    up = node.level - 1
                    base = package[:len(package) - up] if up <= len(package) else None
                else:
                    prefix = next((p for p in packages if module == p or module.startswith(p + ".")), None)
                    base, module = ([], module[len(prefix) + 1:]) if prefix else (None, module)
                if base is not None:
                    parts = base + [p for p in module.split(".") if p]
                    targets += [parts] + [parts + [a.name] for a in node.names]
            elif isinstance(node, ast.Import):
                for a in node.names:
                    prefix = next((p for p in packages if a.name.startswith(p + ".")), None)
                    if prefix:
                        targets.append(a.name[len(prefix) + 1:].split("."))
            todo += [p for p in map(found, targets) if p and p not in out]
    return {p for p in out if not p.endswith("__init__.py")}
