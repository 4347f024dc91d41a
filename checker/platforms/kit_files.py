"""The student kit's own pyproject.toml and README.md (written by `checker.platforms.kit.build_kit`).

What it is for: two pure functions. `kit_pyproject(full)` derives the kit's
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

What it is not: the kit's builder (`checker.platforms.kit`) or the full README.
"""

import json
import os

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

__all__ = ["BUILD_REQUIRES", "TORCH_CPU_INDEX", "STUDENT_COMMANDS", "kit_pyproject", "kit_readme", "installed_as_kit"]

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
