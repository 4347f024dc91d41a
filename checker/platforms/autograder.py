"""Build the Gradescope autograder zip of one assignment (`hwcheck gradescope`).

What it is for: Gradescope runs an autograder zip in its own container, as
root: `setup.sh` once when it builds the image, `run_autograder` once per
student. `autograder_files(...)` is a pure function that returns the text
files of that zip:

    setup.sh                  installs, from files inside the zip only (pip
                              --no-index), the CPU build of the torch installed
                              here, this exact hwcheck (its wheel holds the hidden
                              tests and the reference) and every other dependency
                              at the versions installed here, into a venv at
                              /opt/hwcheck-venv; links `hwcheck` into
                              /usr/local/bin. The wheels are fetched when the zip is
                              built (`download_wheels`), for the container's Python
                              (`--python`, default 3.10: Gradescope's default base
                              image, Ubuntu 22.04) on x86_64 Linux; setup.sh refuses
                              another Python with a message saying what to do.
                              Built with --online, the zip holds only hwcheck's
                              wheel and setup.sh fetches torch from PyTorch's CPU
                              index and the rest from PyPI (pinned by
                              constraints.txt), for a small zip.
    run_autograder            runs `hwcheck autograde` (checker.platforms.autograde) on
                              $HWCHECK_AUTOGRADER_ROOT (default /autograder) and,
                              should hwcheck be missing or write nothing valid,
                              writes a results.json that says so
    constraints.txt           the versions installed where the zip was built
    hwcheck-autograder.json   what the zip was built from (for the TA)

`build_wheel(dest)` builds hwcheck's wheel from its source tree (a copy of it,
so nothing is written into the tree), `check_wheel` makes sure it holds the
assignment's grading tests and reference, and `write_autograder_zip` puts it
all together.

What it is not: the grading inside the container (`checker.platforms.autograde`), or a
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

from checker._version import __version__
from checker.errors import HwcheckError

__all__ = ["autograder_files", "installed_constraints", "build_wheel", "check_wheel", "torch_version",
           "download_wheels", "write_autograder_zip", "CONFIG_NAME", "VENV", "TORCH_CPU_INDEX", "FAILURE_TEXT",
           "CONTAINER_PYTHON", "PLATFORMS", "GRADESCOPE_PYTHONS", "base_image_note", "pip_failure"]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # checker/platforms/..
CONFIG_NAME = "hwcheck-autograder.json"
VENV = "/opt/hwcheck-venv"  # outside /autograder: workers run as nobody and must read the Python tree
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
CONTAINER_PYTHON = "3.10"  # python3 of Gradescope's default base image (Ubuntu 22.04)
# Gradescope's containers are x86_64 Linux (Ubuntu 22.04: glibc 2.35); the newest tag first
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "linux_x86_64")
# what run_autograder writes when hwcheck itself could not run (plain ASCII: it goes into JSON as is)
FAILURE_TEXT = ("The autograder could not grade this submission: the grading program did not run "
                "(exit status %d). This is not a problem with your work: please tell your course staff.")
# never pinned: torch is installed on its own (CPU build), the rest are installers or CUDA-only
_NOT_PINNED = ("hwcheck", "torch", "triton", "pip", "setuptools", "wheel")
_SOURCE_PARTS = ("pyproject.toml", "README.md", "checker", "assignments")  # an assignment's reference is inside

SETUP_SH = r"""#!/usr/bin/env bash
# Gradescope runs this once, as root, in /autograder/source, when it builds the autograder image.
# Written by `hwcheck gradescope` (hwcheck @VERSION@) for the assignment @ASSIGNMENT@.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="${HWCHECK_VENV:-@VENV@}"
TORCH_VERSION=@TORCH_VERSION@
TORCH_INDEX=@TORCH_INDEX@
TORCH_WHEEL=@TORCH_WHEEL@    # torch's wheel inside this zip, or empty (--online: from TORCH_INDEX)
HWCHECK_WHEEL=@HWCHECK_WHEEL@
WHEELS_INSIDE=@WHEELS_INSIDE@  # 1: every wheel is in wheels/ (built for Python ZIP_PYTHON); 0: --online
ZIP_PYTHON=@ZIP_PYTHON@

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

if [ "$WHEELS_INSIDE" = 1 ]; then
    # torch (CPU build), hwcheck (with the hidden tests) and every dependency, from this zip only
    here_python="$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    if [ "$here_python" != "$ZIP_PYTHON" ]; then
        echo "hwcheck setup: this zip holds wheels for Python $ZIP_PYTHON, but this image's python3 is" \
             "$here_python. Choose the base image whose python3 is $ZIP_PYTHON (Ubuntu 22.04: 3.10), or rebuild" \
             "the zip with: hwcheck gradescope -a @ASSIGNMENT@ --python $here_python" >&2
        exit 1
    fi
    "${PIP[@]}" install --no-index --find-links "$HERE/wheels" "$HERE/wheels/$TORCH_WHEEL" "$HERE/wheels/$HWCHECK_WHEEL"
else
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
fi

chmod -R a+rX "$VENV"
# the hidden tests and the reference, and this zip (hwcheck's wheel holds them too): root's alone. hwcheck
# grades as root and runs student code as nobody, so this wall holds even where the container lets
# hwcheck make no namespaces of its own.
SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
chmod -R go-rwx "$SITE/assignments" "$HERE"
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
                     timeout=None, python_version=None, built_at=None, wheels=None, container_python=None,
                     pinned=None):
    """The text files of the autograder zip: {name: (text, unix mode)}. Pure.

    `hwcheck_wheel` / `torch_wheel` are file names under `wheels/` in the zip;
    `torch_version` is a public version (no `+cpu`); `constraints` is the text
    of constraints.txt. `wheels`: the file names of every wheel in the zip when
    setup.sh is to install from them alone (built for `container_python`),
    else None (--online).
    """
    torch_version = str(torch_version).split("+")[0]
    python_version = python_version or ".".join(map(str, sys.version_info[:3]))
    options = f" --timeout {float(timeout):g}" if timeout else ""
    values = {
        "VERSION": __version__, "ASSIGNMENT": shlex.quote(assignment), "VENV": shlex.quote(VENV),
        "TORCH_VERSION": shlex.quote(torch_version), "TORCH_INDEX": shlex.quote(TORCH_CPU_INDEX),
        "TORCH_WHEEL": shlex.quote(torch_wheel or ""), "HWCHECK_WHEEL": shlex.quote(hwcheck_wheel),
        "PYTHON": python_version, "OPTIONS": options,
        "WHEELS_INSIDE": "1" if wheels else "0", "ZIP_PYTHON": shlex.quote(container_python or ""),
        "FAILURE": FAILURE_TEXT.replace("\\", "\\\\").replace('"', '\\"'),
    }
    config = {
        "assignment": assignment, "hwcheck": __version__, "torch": torch_version,
        "torch_from": f"wheels/{torch_wheel}" if torch_wheel else TORCH_CPU_INDEX,
        "hwcheck_wheel": f"wheels/{hwcheck_wheel}", "python": python_version, "timeout": timeout,
        "built_at": built_at, "container_python": container_python if wheels else None,
        "wheels": sorted(f"wheels/{w}" for w in wheels) if wheels else None,
        # False: the versions installed here do not exist for the container's Python; the newest allowed were taken
        "pinned_to_constraints": pinned,
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


def build_wheel(dest, *, source=ROOT, assignments=()):
    """Build hwcheck's wheel from its source tree into folder `dest`; return the wheel's path.

    The tree is copied first (setuptools writes build/ and *.egg-info beside
    the sources), so the checkout stays as it is. `assignments`: [(id, folder)] of assignments found
    outside hwcheck's tree (a course's own, checker.spec), copied into the wheel's `assignments/<id>/`
    (less their examples), where the container's hwcheck finds them as built-in ones.
    """
    if not os.path.isfile(os.path.join(source, "pyproject.toml")) or \
            not os.path.isdir(os.path.join(source, "assignments")):
        raise HwcheckError(f"hwcheck's source tree is not at {source}: the autograder is built from a checkout "
                           "of hwcheck (with the hidden tests), not from the student kit")
    with tempfile.TemporaryDirectory(prefix="hwcheck-wheel-") as tmp:
        tree = os.path.join(tmp, "src")
        os.makedirs(tree)
        ignore = shutil.ignore_patterns("examples", "__pycache__", "*.pyc", "*.egg-info", "build", "dist")
        for part in _SOURCE_PARTS:
            p = os.path.join(source, part)
            if os.path.isdir(p):
                shutil.copytree(p, os.path.join(tree, part), ignore=ignore)
            elif os.path.isfile(p):
                shutil.copyfile(p, os.path.join(tree, part))
        for aid, folder in assignments:
            shutil.copytree(folder, os.path.join(tree, "assignments", aid), dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("examples", "__pycache__", "*.pyc", "*.egg-info", "build", "dist"))
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
    from checker.spec import assignment_dir, load_spec, reference_file, grading_test_files
    spec = load_spec(assignment)
    folder = assignment_dir(assignment)
    ref = reference_file(spec)
    own_ref = ref is not None and os.path.dirname(os.path.abspath(ref)) == os.path.abspath(folder)
    wanted = [f"assignments/{assignment}/{os.path.relpath(p, folder)}" for p in grading_test_files(spec)]
    wanted += [f"assignments/{assignment}/spec.toml",
              f"assignments/{assignment}/reference.py" if own_ref else spec["reference"].replace(".", "/") + ".py",
              "checker/cli.py", "checker/worker/__init__.py"]
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
    except (OSError, zipfile.BadZipFile) as e:
        raise HwcheckError(f"{path} is not a wheel: {e}") from None
    missing = [w for w in wanted if w not in names]
    if missing:
        raise HwcheckError(f"the wheel {os.path.basename(path)} lacks {', '.join(missing)}")


def _check_python(python):
    if not (isinstance(python, str) and python.count(".") == 1 and all(p.isdigit() for p in python.split("."))):
        raise HwcheckError(f"--python {python!r}: give the container's Python as MAJOR.MINOR, e.g. 3.10")


def download_wheels(dest, hwcheck_wheel, *, python, torch_wheel=None, constraints=None):
    """Fetch into `dest` the wheels setup.sh installs with no index: torch's CPU build (of the
    version installed here, or the file `torch_wheel`), and hwcheck's wheel's dependencies, for
    CPython `python` ("3.10") on x86_64 Linux, from the indexes pip is configured with here plus
    PyTorch's CPU index. `constraints` (a file) pins them to the versions installed here; when
    those do not exist for that Python, the newest versions hwcheck allows are taken instead.

    Returns (wheel file names, pinned: whether the constraints held).
    """
    _check_python(python)
    os.makedirs(dest, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-input",
           "--dest", dest, "--only-binary=:all:", "--implementation", "cp", "--python-version", python,
           *(f"--platform={p}" for p in PLATFORMS), "--extra-index-url", TORCH_CPU_INDEX,
           os.path.abspath(torch_wheel) if torch_wheel else f"torch=={torch_version()}+cpu", hwcheck_wheel]
    failure = ""
    keep = os.path.basename(hwcheck_wheel)
    for pinned in ([True] if constraints else []) + [False]:
        for name in os.listdir(dest):  # nothing of an attempt that failed half way
            if name != keep:
                os.unlink(os.path.join(dest, name))
        proc = subprocess.run(cmd + (["-c", constraints] if pinned else []), capture_output=True, text=True)
        if proc.returncode == 0:
            names = sorted(n for n in os.listdir(dest) if n.endswith(".whl"))
            if any(n.startswith("nvidia_") or n.startswith("triton-") for n in names):
                raise HwcheckError(f"pip fetched CUDA packages for the zip ({', '.join(names)}): the zip must "
                                   "hold the CPU build of torch")
            return names, pinned
        failure = pip_failure(proc.stderr or proc.stdout)
    # the advice first, where it is read; pip's own last lines after it (h91: offline, screens of retries came
    # first and the advice last)
    raise HwcheckError(f"could not fetch the wheels for Python {python} on x86_64 Linux into the zip. Offline, give "
                       "torch's CPU wheel with --torch-wheel and make the rest reachable to pip, or build with "
                       "--online (setup.sh then fetches them when Gradescope builds the image). Is this Python "
                       f"version right for the base image (--python)? pip said:\n{failure}")


def pip_failure(output, keep=6):
    """The lines of pip's output that say why it failed: its ERROR lines (else its last `keep` lines), without the
    retry and ignored-location warnings it repeats for every package and index, at most `keep` lines."""
    lines = [ln.rstrip() for ln in (output or "").strip().splitlines() if ln.strip()]
    noise = ("WARNING: Retrying", "WARNING: Location ")
    said = [ln for ln in lines if not ln.lstrip().startswith(noise)]
    errors = [ln for ln in said if ln.lstrip().startswith("ERROR:")]
    shown = (errors or said or lines)[-keep:]
    left = len(lines) - len(shown)
    return "\n".join(shown)[-1500:] + (f"\n({left} more lines of pip's left out)" if left else "")


# Gradescope's base images whose python3 the zip's setup.sh accepts (3.10 or newer): tas.md lists them
GRADESCOPE_PYTHONS = {"3.10": "Ubuntu 22.04", "3.12": "Ubuntu 24.04"}


def base_image_note(python):
    """A warning, or None: no Gradescope base image has this python3, so the zip's setup.sh would refuse each
    (said at build time rather than at Gradescope's image build)."""
    try:
        _check_python(python)
    except HwcheckError:
        return None  # refused as it is (MAJOR.MINOR) by the build
    if python in GRADESCOPE_PYTHONS:
        return None
    known = ", ".join(f"{image}: {v}" for v, image in GRADESCOPE_PYTHONS.items())
    return (f"warning: none of Gradescope's base images has Python {python} ({known}): its setup.sh refuses an "
            f"image whose python3 is another; build for one of those (--python), unless the zip is for an image "
            f"of your own with Python {python}")


def write_autograder_zip(output, assignment, *, torch_wheel=None, timeout=None, python=CONTAINER_PYTHON,
                         online=False):
    """Build the wheel, write the autograder zip at `output` (atomically); return a dict of what is in it.

    Unless `online`, every wheel setup.sh installs goes into the zip (`download_wheels`, for the
    container's `python`).
    """
    from checker.spec import spec_problems
    wrong = spec_problems(assignment)  # what `hwcheck grade` refuses: on Gradescope it would crash every student
    if wrong:
        raise HwcheckError(f"the spec of {assignment} disagrees with its grading tests, so no autograder was "
                           "written: " + "; ".join(wrong[:5]) + ("; ..." if len(wrong) > 5 else "")
                           + f" (`hwcheck validate {assignment}` tells every problem)")
    if not online:
        _check_python(python)
    if torch_wheel is not None:
        base = os.path.basename(torch_wheel)
        if not (base.startswith("torch-") and base.endswith(".whl")) or not zipfile.is_zipfile(torch_wheel):
            raise HwcheckError(f"{torch_wheel} is not a torch wheel (torch-<version>-....whl)")
        if base.split("-")[1].split("+")[0] != torch_version():
            raise HwcheckError(f"{base} is not the torch installed here ({torch_version()}): the container "
                               "must grade with the version you tested")
    with tempfile.TemporaryDirectory(prefix="hwcheck-autograder-") as tmp:
        wheels_dir = os.path.join(tmp, "wheels")
        from checker.spec import assignment_dir, is_builtin
        course = [] if is_builtin(assignment) else [(assignment, assignment_dir(assignment))]
        wheel = build_wheel(wheels_dir, assignments=course)
        check_wheel(wheel, assignment)
        constraints = installed_constraints()
        pinned = None
        if online:
            wheels, torch_name = None, os.path.basename(torch_wheel) if torch_wheel else None
            extra = [torch_wheel] if torch_wheel else []
        else:
            path = os.path.join(tmp, "constraints.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write(constraints)
            wheels, pinned = download_wheels(wheels_dir, wheel, python=python, torch_wheel=torch_wheel,
                                             constraints=path)
            torch_name = next(w for w in wheels if w.startswith("torch-"))
            extra = []
        files = autograder_files(
            assignment, hwcheck_wheel=os.path.basename(wheel), torch_version=torch_version(),
            constraints=constraints, torch_wheel=torch_name, timeout=timeout, wheels=wheels,
            container_python=None if online else python, pinned=pinned,
            built_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
        output = os.path.abspath(output)
        os.makedirs(os.path.dirname(output), exist_ok=True)
        fd, partial = tempfile.mkstemp(dir=os.path.dirname(output), prefix=".autograder.", suffix=".zip.tmp")
        os.close(fd)
        inside = sorted(os.listdir(wheels_dir)) if not online else [os.path.basename(wheel)]
        try:
            with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
                for name, (text, mode) in files.items():
                    _add(z, name, text.encode("utf-8"), mode)
                for name in inside:  # wheels are zips already: stored, not compressed again
                    _add_file(z, f"wheels/{name}", os.path.join(wheels_dir, name), compress=False)
                for path in extra:
                    _add_file(z, f"wheels/{os.path.basename(path)}", path, compress=False)
            os.chmod(partial, 0o644)
            os.replace(partial, output)
        except BaseException:
            if os.path.exists(partial):
                os.unlink(partial)
            raise
    return {"path": output, "files": sorted(files) + [f"wheels/{n}" for n in inside]
            + [f"wheels/{os.path.basename(p)}" for p in extra],
            "torch": torch_version(), "size": os.path.getsize(output), "online": online,
            "python": None if online else python, "pinned": pinned}


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
