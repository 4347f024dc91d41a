"""The autograder zip, as `hwcheck gradescope` builds it by default, in a Gradescope-shaped container.

Gradescope builds an image from its base, unpacks the zip in /autograder/source, runs setup.sh
there as root, copies run_autograder to /autograder/run_autograder; for each student it puts
the submission in /autograder/submission, runs /autograder/run_autograder as root in /autograder
and reads /autograder/results/results.json (gradescope/autograder_samples, docs/specs.md and
docs/tech.md).

Here the image is a Debian 12 root made by debootstrap (minbase + python3, python3-venv;
Ubuntu's archive is out of reach, and Debian 12's python3 is 3.11, so the zip is built with
`--python 3.11`). It is entered with chroot inside new mount, PID and network namespaces, so
  - there is no network at all: setup.sh can only install what the zip holds;
  - root has the capabilities Docker gives a container's root by default, without
    CAP_SYS_ADMIN: hwcheck cannot make its own namespaces there, as in Gradescope's
    container, and its other walls (nobody, file modes, Landlock, seccomp, rlimits) must hold;
  - /dev holds only the few devices Docker gives, /proc is the container's own, no /sys.
Then real submissions are graded by the real run_autograder, and a hostile one tries to take
the reference solution from the places it lies in such a container.

Needs root, debootstrap (Debian's package; .ci/run installs it), unshare and chroot, and
Debian's archive for debootstrap; skipped with the reason otherwise.
"""

import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from test_autograder import HWCHECK, validate

from checker.spec import example_path

MIRROR = os.environ.get("HWCHECK_TEST_DEBIAN_MIRROR", "http://deb.debian.org/debian")
PYTHON = "3.11"  # Debian 12's python3
# the capabilities Docker leaves a container's root (moby's defaults): no CAP_SYS_ADMIN
DOCKER_CAPS = ("chown", "dac_override", "fowner", "fsetid", "kill", "setgid", "setuid", "setpcap",
               "net_bind_service", "net_raw", "sys_chroot", "mknod", "audit_write", "setfcap")
ENTER = r"""
set -e
CAPS="$1"; R="$2"; shift 2
mount -t proc proc "$R/proc"
mount -t tmpfs -o mode=755,nosuid tmpfs "$R/dev"
for d in null zero full random urandom tty; do touch "$R/dev/$d"; mount --bind "/dev/$d" "$R/dev/$d"; done
mkdir -p "$R/dev/shm" "$R/dev/pts"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$R/dev/shm"
ln -s /proc/self/fd "$R/dev/fd"
ENV=(/usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8)
if [ "$CAPS" = docker ]; then
    exec chroot "$R" "${ENV[@]}" setpriv --bounding-set=-all,{caps} --inh-caps=-all -- "$@"
fi
exec chroot "$R" "${ENV[@]}" "$@"
""".replace("{caps}", ",".join("+" + c for c in DOCKER_CAPS))

missing = [tool for tool in ("debootstrap", "unshare", "chroot") if not shutil.which(tool)]
pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="a container needs root (CI runs as root)"),
    pytest.mark.skipif(bool(missing), reason=f"{', '.join(missing)} not installed (.ci/run installs debootstrap)"),
    pytest.mark.skipif(not os.path.exists(HWCHECK), reason="hwcheck is not installed in this venv"),
]


def in_container(root, *command, timeout=600, caps="docker"):
    """Run `command` as the container's root: chroot, no network, Docker's capabilities (caps="docker")
    or all of root's (caps="all": hwcheck can make its own namespaces, as in a privileged container)."""
    return subprocess.run(["unshare", "--mount", "--net", "--pid", "--fork", "--propagation", "private",
                           "bash", "-c", ENTER, "enter", caps, str(root), *command],
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    """The image Gradescope would build: a fresh root, the zip unpacked and set up by its setup.sh."""
    base = tmp_path_factory.mktemp("gradescope")
    zip_path = base / "autograder.zip"
    # the default build (every wheel inside); no retries, so an index out of reach fails fast
    env = dict(os.environ, PIP_RETRIES="0", PIP_TIMEOUT="15")
    build = subprocess.run([HWCHECK, "gradescope", "-a", "attention", "-o", str(zip_path), "--python", PYTHON],
                           capture_output=True, text=True, timeout=900, env=env)
    assert build.returncode == 0, build.stdout + build.stderr
    root = base / "root"
    boot = subprocess.run(["debootstrap", "--variant=minbase", "--include=python3,python3-venv", "bookworm",
                           str(root), MIRROR], capture_output=True, text=True, timeout=1200)
    assert boot.returncode == 0, boot.stdout[-3000:] + boot.stderr[-3000:]
    source = root / "autograder" / "source"
    source.mkdir(parents=True)
    with zipfile.ZipFile(zip_path) as z:
        for info in z.infolist():
            z.extract(info, source)
            os.chmod(source / info.filename, (info.external_attr >> 16) & 0o777 or 0o644)
    setup = in_container(root, "bash", "-c", "cd /autograder/source && ./setup.sh", timeout=1200)
    assert setup.returncode == 0, setup.stdout[-4000:] + setup.stderr[-4000:]
    shutil.copy2(source / "run_autograder", root / "autograder" / "run_autograder")
    return root, zip_path, setup


def grade(image, files, caps="docker"):
    """Put `files` ({name: path}) in /autograder/submission, run /autograder/run_autograder, return results.json."""
    root = image[0]
    for d in ("submission", "results"):
        shutil.rmtree(root / "autograder" / d, ignore_errors=True)
        (root / "autograder" / d).mkdir()
    for name, path in files.items():
        shutil.copyfile(path, root / "autograder" / "submission" / name)
    proc = in_container(root, "bash", "-c", "cd /autograder && /autograder/run_autograder", timeout=900, caps=caps)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(root / "autograder" / "results" / "results.json", encoding="utf-8") as f:
        results = json.load(f)
    validate(results)
    return results, proc


def _automatic(results):
    return sum(t["score"] for t in results["tests"]), sum(t["max_score"] for t in results["tests"])


def test_setup_installed_only_what_the_zip_holds(image):
    root, zip_path, setup = image
    with zipfile.ZipFile(zip_path) as z:
        config = json.loads(z.read("hwcheck-autograder.json"))
        wheels = {n[len("wheels/"):] for n in z.namelist() if n.startswith("wheels/")}
    assert config["container_python"] == PYTHON and config["wheels"]
    assert any(w.startswith("torch-") and "+cpu" in w for w in wheels)
    assert not any(w.startswith(("nvidia", "triton")) for w in wheels)
    assert "hwcheck setup: done" in setup.stdout
    import torch
    assert f"hwcheck setup: torch {torch.__version__}" in setup.stdout and "cuda: None" in setup.stdout
    # the venv holds exactly the distributions whose wheels are in the zip (pip, from ensurepip, aside)
    listing = in_container(root, "/opt/hwcheck-venv/bin/python", "-m", "pip", "list", "--format=json")
    assert listing.returncode == 0, listing.stderr
    installed = {d["name"].lower().replace("_", "-") for d in json.loads(listing.stdout)} - {"pip"}
    from_zip = {w.split("-")[0].lower().replace("_", "-") for w in wheels}
    assert installed == from_zip


def test_setup_refuses_a_python_the_wheels_are_not_for(image):
    root = image[0]
    text = (root / "autograder" / "source" / "setup.sh").read_text(encoding="utf-8")
    other = root / "autograder" / "source" / "setup_other.sh"
    other.write_text(text.replace(f"ZIP_PYTHON={PYTHON}", "ZIP_PYTHON=3.10"), encoding="utf-8")
    other.chmod(0o755)
    proc = in_container(root, "bash", "-c", "cd /autograder/source && HWCHECK_VENV=/tmp/v ./setup_other.sh")
    assert proc.returncode == 1
    assert "wheels for Python 3.10" in proc.stderr and "--python 3.11" in proc.stderr


def test_hidden_tests_and_reference_are_root_only_in_the_image(image):
    root = image[0]
    probe = ("import os, stat, sys, glob\n"
             "site = glob.glob('/opt/hwcheck-venv/lib/python3*/site-packages')[0]\n"
             "for p in [site + '/assignments', site + '/assignments/attention/reference.py', '/autograder/source']:\n"
             "    st = os.stat(p); print(p, oct(stat.S_IMODE(st.st_mode)), st.st_uid)\n")
    proc = in_container(root, "/opt/hwcheck-venv/bin/python", "-c", probe)
    assert proc.returncode == 0, proc.stderr
    for line in proc.stdout.splitlines():
        path, mode, uid = line.split()
        assert uid == "0" and int(mode, 8) & 0o077 == 0, line


def test_correct_submission_scores_full_points(image):
    results, _ = grade(image, {"attention.ipynb": example_path("attention", "correct_notebook.ipynb")})
    score, most = _automatic(results)
    assert most > 0 and score == pytest.approx(most)


def test_wrong_submission_loses_points_with_messages(image):
    results, _ = grade(image, {"attention.py": example_path("attention", "no_scaling.py")})
    score, most = _automatic(results)
    assert 0 < score < most
    assert any(t["score"] < t["max_score"] and t.get("output") for t in results["tests"])


THIEF = r'''
"""Takes the reference solution from wherever it lies in the container, else nothing works."""
import glob, os, sys, zipimport


def _load(path):
    ns = {"__name__": "stolen"}
    exec(compile(open(path).read(), path, "exec"), ns)
    return ns


def _steal():
    for path in glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "stolen_*.py")):
        return _load(path)  # the control: a copy handed in beside this file
    try:  # 1. the installed package
        import assignments.attention.reference as r
        return vars(r)
    except Exception:
        pass
    for whl in glob.glob("/autograder/source/wheels/hwcheck-*.whl"):  # 2. the wheel in the zip
        try:
            return vars(zipimport.zipimporter(whl).load_module("assignments/attention/reference"))
        except Exception:
            pass
    for path in glob.glob("/opt/*/lib*/python3*/site-packages/assignments/attention/reference.py") + \
            glob.glob("/usr/local/lib/python3*/*-packages/assignments/attention/reference.py"):  # 3. its file
        try:
            return _load(path)
        except Exception:
            pass
    return None


_stolen = _steal()
if _stolen:
    globals().update({k: v for k, v in _stolen.items() if not k.startswith("__")})
'''


def test_the_thief_scores_when_the_reference_is_in_reach(image, tmp_path):
    """The control: the same file with a copy of the reference handed in beside it scores, so the attack
    below would score too if any way to the reference were open."""
    thief = tmp_path / "attention.py"
    thief.write_text(THIEF, encoding="utf-8")
    reference = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "reference", "attention.py")
    results, _ = grade(image, {"attention.py": str(thief), "stolen_reference.py": reference})
    score, most = _automatic(results)
    assert score > most / 2, "the control did not score: the attack test would prove nothing"


@pytest.mark.parametrize("caps", ["docker", "all"])
def test_a_submission_cannot_take_the_reference_in_the_container(image, tmp_path, caps):
    """The reference as the container holds it: the installed package (through the venv's lib64 link
    too), the hwcheck wheel inside the zip, the file itself; with Docker's capabilities (no namespaces
    of hwcheck's own) and with all of root's."""
    thief = tmp_path / "attention.py"
    thief.write_text(THIEF, encoding="utf-8")
    results, _ = grade(image, {"attention.py": str(thief)}, caps=caps)
    score, most = _automatic(results)
    assert score == 0, [(t["name"], t["score"]) for t in results["tests"] if t["score"]]
