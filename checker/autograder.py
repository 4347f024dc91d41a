"""Build the Gradescope autograder zip of one assignment (`hwcheck gradescope`).

What it is for: Gradescope runs an autograder zip in its own container, as
root: `setup.sh` once when it builds the image, `run_autograder` once per
student. `autograder_files(...)` is a pure function that returns the text
files of that zip:

    setup.sh                  installs the CPU build of torch (a wheel inside the
                              zip when built with --torch-wheel, else
                              torch==<the TA's version> from PyTorch's CPU index)
                              and this exact hwcheck (a wheel inside the zip, with
                              the hidden tests and the reference) into a venv at
                              /opt/hwcheck-venv, the other dependencies from PyPI
                              pinned by constraints.txt; links `hwcheck` into
                              /usr/local/bin
    run_autograder            runs `hwcheck autograde` (checker.autograde) on
                              $HWCHECK_AUTOGRADER_ROOT (default /autograder) and,
                              should hwcheck be missing or write nothing valid,
                              writes a results.json that says so
    constraints.txt           the versions installed where the zip was built
    hwcheck-autograder.json   what the zip was built from (for the TA)

`build_wheel(dest)` builds hwcheck's wheel from its source tree (a copy of it,
so nothing is written into the tree), `check_wheel` makes sure it holds the
assignment's grading tests and reference, and `write_autograder_zip` puts it
all together.

What it is not: the grading inside the container (`checker.autograde`), or a
Gradescope client: the TA uploads the zip by hand (README, "Gradescope").
"""

from __future__ import annotations

import datetime
import glob
import importlib.metadata
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile

from checker import __version__
from checker.errors import HwcheckError

__all__ = ["autograder_files", "installed_constraints", "build_wheel", "check_wheel", "torch_version",
           "write_autograder_zip", "CONFIG_NAME", "VENV", "TORCH_CPU_INDEX", "FAILURE_TEXT"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG_NAME = "hwcheck-autograder.json"
VENV = "/opt/hwcheck-venv"  # outside /autograder: workers run as nobody and must read the Python tree
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# what run_autograder writes when hwcheck itself could not run (plain ASCII: it goes into JSON as is)
FAILURE_TEXT = ("The autograder could not grade this submission: the grading program did not run "
                "(exit status %d). This is not a problem with your work: please tell your course staff.")
# never pinned: torch is installed on its own (CPU build), the rest are installers or CUDA-only
_NOT_PINNED = ("hwcheck", "torch", "triton", "pip", "setuptools", "wheel")
_SOURCE_PARTS = ("pyproject.toml", "README.md", "checker", "reference", "assignments")

SETUP_SH = r"""#!/usr/bin/env bash
# Gradescope runs this once, as root, in /autograder/source, when it builds the autograder image.
# Written by `hwcheck gradescope` (hwcheck @VERSION@) for the assignment @ASSIGNMENT@.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="${HWCHECK_VENV:-@VENV@}"
TORCH_VERSION=@TORCH_VERSION@
TORCH_INDEX=@TORCH_INDEX@
TORCH_WHEEL=@TORCH_WHEEL@    # a wheel inside this zip (hwcheck gradescope --torch-wheel), or empty
HWCHECK_WHEEL=@HWCHECK_WHEEL@

if ! python3 -c 'import venv, ensurepip' 2>/dev/null && command -v apt-get >/dev/null; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-venv python3-pip
fi
python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else
    "hwcheck needs Python 3.10 or later; this image has " + sys.version.split()[0] +
    ": choose a newer base image (Ubuntu 22.04 or later)")'
echo "hwcheck setup: Python $(python3 -c 'import platform; print(platform.python_version())') here, @PYTHON@ where the zip was built"

python3 -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check --no-input)

# 1. torch, the CPU build (no CUDA libraries: Gradescope has no GPU)
if [ -n "$TORCH_WHEEL" ]; then
    "${PIP[@]}" install -c "$HERE/constraints.txt" "$HERE/wheels/$TORCH_WHEEL"
else
    "${PIP[@]}" install "torch==$TORCH_VERSION" --index-url "$TORCH_INDEX"
fi

# 2. this exact hwcheck (with the hidden tests), its other dependencies pinned to the TA's versions
if ! "${PIP[@]}" install -c "$HERE/constraints.txt" "$HERE/wheels/$HWCHECK_WHEEL"; then
    echo "hwcheck setup: WARNING: the pinned versions of constraints.txt do not install on this Python;" \
         "installing the newest versions hwcheck allows instead (grades may differ from your tests)" >&2
    "${PIP[@]}" install "$HERE/wheels/$HWCHECK_WHEEL"
fi

chmod -R a+rX "$VENV"
ln -sf "$VENV/bin/hwcheck" /usr/local/bin/hwcheck
"$VENV/bin/python" -c "import torch; v = torch.__version__.split('+')[0]; print('hwcheck setup: torch', torch.__version__, 'cuda:', torch.version.cuda); assert v == '$TORCH_VERSION', 'torch ' + v + ' is not $TORCH_VERSION'"
hwcheck --version
hwcheck list
echo "hwcheck setup: done"
"""

RUN_AUTOGRADER = r"""#!/usr/bin/env bash
# Gradescope runs this once per submission, as root: it grades /autograder/submission (whatever it holds)
# and writes /autograder/results/results.json. HWCHECK_AUTOGRADER_ROOT moves /autograder (for tests).
# Written by `hwcheck gradescope` (hwcheck @VERSION@) for the assignment @ASSIGNMENT@.
ROOT="${HWCHECK_AUTOGRADER_ROOT:-/autograder}"
RESULTS="$ROOT/results/results.json"
mkdir -p "$ROOT/results"
hwcheck autograde -a @ASSIGNMENT@ --root "$ROOT"@OPTIONS@
status=$?
# results.json must never be missing or malformed: Gradescope then shows only "The autograder failed".
if ! python3 -c 'import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
sys.exit(0 if isinstance(d, dict) and isinstance(d.get("tests", []), list) else 1)' "$RESULTS" 2>/dev/null; then
    echo "run_autograder: hwcheck wrote no valid results.json (exit status $status); writing one that says so" >&2
    printf '{"score": 0, "execution_time": 0, "output": "@FAILURE@", "tests": []}\n' "$status" > "$RESULTS.tmp.$$" \
        && mv -f "$RESULTS.tmp.$$" "$RESULTS"
fi
exit 0
"""


def _fill(template, values):
    for key, value in values.items():
        template = template.replace(f"@{key}@", value)
    return template


def autograder_files(assignment, *, hwcheck_wheel, torch_version, constraints, torch_wheel=None,
                     timeout=None, python_version=None, built_at=None):
    """The text files of the autograder zip: {name: (text, unix mode)}. Pure.

    `hwcheck_wheel` / `torch_wheel` are file names under `wheels/` in the zip;
    `torch_version` is a public version (no `+cpu`); `constraints` is the text
    of constraints.txt.
    """
    torch_version = str(torch_version).split("+")[0]
    python_version = python_version or ".".join(map(str, sys.version_info[:3]))
    options = f" --timeout {float(timeout):g}" if timeout else ""
    values = {
        "VERSION": __version__, "ASSIGNMENT": shlex.quote(assignment), "VENV": shlex.quote(VENV),
        "TORCH_VERSION": shlex.quote(torch_version), "TORCH_INDEX": shlex.quote(TORCH_CPU_INDEX),
        "TORCH_WHEEL": shlex.quote(torch_wheel or ""), "HWCHECK_WHEEL": shlex.quote(hwcheck_wheel),
        "PYTHON": python_version, "OPTIONS": options,
        "FAILURE": FAILURE_TEXT.replace("\\", "\\\\").replace('"', '\\"'),
    }
    config = {
        "assignment": assignment, "hwcheck": __version__, "torch": torch_version,
        "torch_from": f"wheels/{torch_wheel}" if torch_wheel else TORCH_CPU_INDEX,
        "hwcheck_wheel": f"wheels/{hwcheck_wheel}", "python": python_version, "timeout": timeout,
        "built_at": built_at,
    }
    return {
        "setup.sh": (_fill(SETUP_SH, values), 0o755),
        "run_autograder": (_fill(RUN_AUTOGRADER, values), 0o755),
        "constraints.txt": (constraints, 0o644),
        CONFIG_NAME: (json.dumps(config, indent=2) + "\n", 0o644),
    }


def installed_constraints(exclude=_NOT_PINNED):
    """constraints.txt pinning every distribution installed here (but torch, hwcheck and installers)."""
    pins = {}
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").strip()
        key = name.lower().replace("_", "-").replace(".", "-")
        if not name or key in exclude or key.startswith("nvidia-") or "+" in dist.version:
            continue
        pins[key] = f"{name}=={dist.version}"
    header = (f"# the versions installed where `hwcheck gradescope` built this zip (hwcheck {__version__}, "
              f"Python {'.'.join(map(str, sys.version_info[:3]))})\n")
    return header + "".join(pins[k] + "\n" for k in sorted(pins))


def torch_version():
    """The installed torch's version, without its local label (`2.13.0+cpu` -> `2.13.0`)."""
    try:
        return importlib.metadata.version("torch").split("+")[0]
    except importlib.metadata.PackageNotFoundError:
        raise HwcheckError("torch is not installed here: build the autograder where you graded") from None


def build_wheel(dest, *, source=ROOT):
    """Build hwcheck's wheel from its source tree into folder `dest`; return the wheel's path.

    The tree is copied first (setuptools writes build/ and *.egg-info beside
    the sources), so the checkout stays as it is.
    """
    if not os.path.isfile(os.path.join(source, "pyproject.toml")) or \
            not os.path.isdir(os.path.join(source, "assignments")):
        raise HwcheckError(f"hwcheck's source tree is not at {source}: the autograder is built from a checkout "
                           "of hwcheck (with the hidden tests), not from the student kit")
    with tempfile.TemporaryDirectory(prefix="hwcheck-wheel-") as tmp:
        tree = os.path.join(tmp, "src")
        os.makedirs(tree)
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")
        for part in _SOURCE_PARTS:
            p = os.path.join(source, part)
            if os.path.isdir(p):
                shutil.copytree(p, os.path.join(tree, part), ignore=ignore)
            elif os.path.isfile(p):
                shutil.copyfile(p, os.path.join(tree, part))
        out = os.path.join(tmp, "out")
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q",
               "-w", out, tree]
        try:
            import setuptools  # noqa: F401 - present: build without fetching it again
            cmd.insert(-1, "--no-build-isolation")
        except ImportError:
            pass
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wheels = glob.glob(os.path.join(out, "hwcheck-*.whl"))
        if proc.returncode or len(wheels) != 1:
            raise HwcheckError(f"building hwcheck's wheel failed: {(proc.stderr or proc.stdout)[-1500:]}")
        os.makedirs(dest, exist_ok=True)
        target = os.path.join(dest, os.path.basename(wheels[0]))
        shutil.copyfile(wheels[0], target)
        return target


def check_wheel(path, assignment):
    """Raise unless the wheel at `path` holds the assignment's grading tests, spec and reference."""
    from checker.spec import load_spec
    spec = load_spec(assignment)
    wanted = [f"assignments/{assignment}/test_{assignment}.py", f"assignments/{assignment}/spec.toml",
              spec["reference"].replace(".", "/") + ".py", "checker/cli.py", "checker/worker/__init__.py"]
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
    except (OSError, zipfile.BadZipFile) as e:
        raise HwcheckError(f"{path} is not a wheel: {e}") from None
    missing = [w for w in wanted if w not in names]
    if missing:
        raise HwcheckError(f"the wheel {os.path.basename(path)} lacks {', '.join(missing)}")


def write_autograder_zip(output, assignment, *, torch_wheel=None, timeout=None):
    """Build the wheel, write the autograder zip at `output` (atomically); return a dict of what is in it."""
    if torch_wheel is not None:
        base = os.path.basename(torch_wheel)
        if not (base.startswith("torch-") and base.endswith(".whl")) or not zipfile.is_zipfile(torch_wheel):
            raise HwcheckError(f"{torch_wheel} is not a torch wheel (torch-<version>-....whl)")
        if base.split("-")[1].split("+")[0] != torch_version():
            raise HwcheckError(f"{base} is not the torch installed here ({torch_version()}): the container "
                               "must grade with the version you tested")
    with tempfile.TemporaryDirectory(prefix="hwcheck-autograder-") as tmp:
        wheel = build_wheel(os.path.join(tmp, "wheels"))
        check_wheel(wheel, assignment)
        files = autograder_files(
            assignment, hwcheck_wheel=os.path.basename(wheel), torch_version=torch_version(),
            constraints=installed_constraints(), torch_wheel=os.path.basename(torch_wheel) if torch_wheel else None,
            timeout=timeout, built_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
        output = os.path.abspath(output)
        os.makedirs(os.path.dirname(output), exist_ok=True)
        fd, partial = tempfile.mkstemp(dir=os.path.dirname(output), prefix=".autograder.", suffix=".zip.tmp")
        os.close(fd)
        try:
            with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
                for name, (text, mode) in files.items():
                    _add(z, name, text.encode("utf-8"), mode)
                _add_file(z, f"wheels/{os.path.basename(wheel)}", wheel)
                if torch_wheel:
                    _add_file(z, f"wheels/{os.path.basename(torch_wheel)}", torch_wheel, compress=False)
            os.chmod(partial, 0o644)
            os.replace(partial, output)
        except BaseException:
            if os.path.exists(partial):
                os.unlink(partial)
            raise
    return {"path": output, "files": sorted(files) + [f"wheels/{os.path.basename(wheel)}"]
            + ([f"wheels/{os.path.basename(torch_wheel)}"] if torch_wheel else []),
            "torch": torch_version(), "size": os.path.getsize(output)}


def _info(name, mode):
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    info.external_attr = (0o100000 | mode) << 16  # a regular file with its unix permissions
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def _add(z, name, data, mode):
    z.writestr(_info(name, mode), data)


def _add_file(z, name, path, compress=True):
    info = _info(name, 0o644)
    if not compress:
        info.compress_type = zipfile.ZIP_STORED
    with open(path, "rb") as src, z.open(info, "w", force_zip64=True) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
