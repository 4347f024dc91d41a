"""A grader whose Python lives under /tmp (or /var/tmp, /dev/shm): the walls let its trees be read, nothing else there.

A probe (h39) installed hwcheck in a venv under /tmp (`pip install .`, so `assignments/` lay inside that
venv's site-packages) and graded as root: a correct charlm submission lost points, since inside the
walls nothing of site-packages that was not imported before them could be imported (torch imports sympy
on the meta device; a student's `import einops` read as the student's fault). The walls split
site-packages around the secret `assignments/` and Python, which lists a folder of `sys.path` to import
from it, could no longer list it (the mount namespace's copy is a new folder, so its cached listing was
dropped, and Landlock gave no rule on the folder itself).

These tests put up the walls exactly as a worker does (`apply_isolation`) in a small venv made under each
temp folder, whose own site-packages holds a package the code imports after the walls (`tinypkg`) beside a
secret one (`secretpkg`, as `assignments/` in a non-editable install). The package must import; the secret,
a file of the trusted side's in the same temp folder, and a file beside the venv must stay unreadable. Both
wall modes: with namespaces, and the fallback without them (HWCHECK_NAMESPACES=0 here; the capsh re-run of
`walls` makes it for real). A last test runs this Python (hwcheck as installed for the suite, an editable
install's finder included) and imports a module of hwcheck's that was not imported before the walls, while
the rest of the checkout (the reference, the grading tests) stays closed.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import pytest

pytestmark = [pytest.mark.walls]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORKER = textwrap.dedent('''
    import json, os, sys, tempfile
    {path_line}
    from checker.worker import isolation
    from checker.running.submission_files import secret_paths
    work = {work!r}  # made by the test, which removes it (the worker, once walled in, cannot)
    tempfile.gettempdir()  # known before the walls, as in a zygote, which made the worker's folder there
    try:
        walls = isolation.apply_isolation(work, secret_paths({secrets!r}), use_namespaces={namespaces})
    except isolation.WallsRefused as e:
        print(json.dumps({{"refused": str(e)}}))
        sys.exit(0)
    out = {{"walls": walls, "prefix": sys.prefix}}
    for module in {imports!r}:  # none of them imported before the walls
        try:
            __import__(module)
            out[module] = "imported"
        except Exception as e:
            out[module] = repr(e)
    for name, path in {reads!r}.items():
        try:
            with open(path) as f:
                out[name] = f.read()
        except OSError as e:
            out[name] = type(e).__name__
    print(json.dumps(out))
''')


def _run(python, namespaces, work, imports, reads, secrets=(), path_line=""):
    code = WORKER.format(path_line=path_line, work=work, secrets=list(secrets), namespaces=namespaces,
                         imports=list(imports), reads=reads)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    if not namespaces:
        env["HWCHECK_NAMESPACES"] = "0"
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=work)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert lines, proc.stdout + proc.stderr[-3000:]
    out = json.loads(lines[-1])
    if "refused" in out:
        pytest.skip("the grader refuses to run code here (root, no namespaces, this Python closed to others): "
                    + out["refused"][:120])
    return out


@pytest.fixture
def work():
    """The worker's folder, in the system's temp dir (open to the worker's identity), removed afterwards."""
    path = tempfile.mkdtemp(prefix="hwvenv-work-")
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _made_in(base):
    """A folder of everyone's in `base`, or skip where `base` is not there to write."""
    if not (os.path.isdir(base) and os.access(base, os.W_OK)):
        pytest.skip(f"no {base} to write here")
    path = tempfile.mkdtemp(prefix="hwvenv-", dir=base)
    os.chmod(path, 0o755)
    return path


@pytest.mark.parametrize("base", ["/tmp", "/var/tmp", "/dev/shm"])
@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "fallback"])
def test_a_venv_under_a_temp_folder_imports_its_packages_and_nothing_else_there(namespaces, base, work):
    folder = _made_in(base)  # a course's folder under /tmp, the venv in it, notes beside it
    trusted = _made_in(base)  # the trusted side's own temp files in the same temp folder
    try:
        venv = os.path.join(folder, "venv")
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True, timeout=120)
        python = os.path.join(venv, "bin", "python")
        site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
        os.makedirs(os.path.join(site, "tinypkg"))
        with open(os.path.join(site, "tinypkg", "__init__.py"), "w") as f:
            f.write("VALUE = 'tiny'\n")
        os.makedirs(os.path.join(site, "secretpkg"))  # as assignments/ in a non-editable install
        files = {"secret": os.path.join(site, "secretpkg", "reference.py"),
                 "trusted": os.path.join(trusted, "hidden-inputs.json"),
                 "beside": os.path.join(folder, "grades.csv"),
                 "pyvenv": os.path.join(venv, "pyvenv.cfg")}
        for name in ("secret", "trusted", "beside"):
            with open(files[name], "w") as f:
                f.write(f"the {name} file\n")
            os.chmod(files[name], 0o644)  # open to everyone by the usual permissions: only the walls keep it
        for root, dirs, names in os.walk(folder):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
        out = _run(python, namespaces, work, ["tinypkg"], files, secrets=[os.path.join(site, "secretpkg")],
                   path_line=f"sys.path.insert(0, {REPO!r})  # hwcheck from its checkout, as `pip install -e`")
        assert os.path.realpath(out["prefix"]) == os.path.realpath(venv), out
        if namespaces and not any(w == "mount-namespace" for w in out["walls"]):
            assert not any(w == "pid-namespace" for w in out["walls"]), out["walls"]  # the fallback, for real
        # the Python's own trees: its site-packages imports a package not loaded before the walls
        assert out["tinypkg"] == "imported", out
        assert out["pyvenv"].startswith("home"), out
        assert not any("python-trees-failed" in w for w in out["walls"]), out["walls"]
        # and nothing else: the secret inside site-packages, the trusted side's file, the folder's other files.
        # (Without a mount namespace /dev/shm is the host's, which every worker may use for POSIX shared memory:
        # there only file permissions guard a file, as they guard the grader's own shared memory, mode 0600.)
        if base == "/dev/shm" and "mount-namespace" not in out["walls"]:
            return
        for name in ("secret", "trusted", "beside"):
            assert out[name] != f"the {name} file\n", (name, out)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(trusted, ignore_errors=True)


@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "fallback"])
def test_hwcheck_imports_its_own_modules_inside_the_walls_not_the_rest_of_its_checkout(namespaces, work):
    """This Python as the suite runs it: hwcheck wherever it is installed (an editable install's finder puts no
    folder of the checkout on sys.path, and its package must be readable all the same)."""
    reads = {"reference": os.path.join(REPO, "assignments", "charlm", "reference.py"),
             "tests": os.path.join(REPO, "tests", "conftest.py"),
             "project": os.path.join(REPO, "pyproject.toml")}
    import checker
    package = os.path.dirname(os.path.realpath(checker.__file__))
    reads["own"] = os.path.join(package, "worker", "roots.py")
    out = _run(sys.executable, namespaces, work, ["checker.worker.roots"], reads)
    assert out["checker.worker.roots"] == "imported", out
    assert out["own"].startswith('"""'), out
    assert not any("python-trees-failed" in w for w in out["walls"]), out["walls"]
    for name in ("reference", "tests", "project"):
        if os.path.exists(reads[name]):
            assert out[name] in ("FileNotFoundError", "PermissionError"), (name, out)


@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "fallback"])
def test_a_second_copy_of_the_project_leaves_neither_copys_references_readable(namespaces, work):
    """hwcheck run from one copy of the project (a second checkout, `PYTHONPATH=.`) while this Python's editable
    install maps `checker` and `assignments` to another: the worker imports from both, so the references and
    grading tests of both stay closed (an attacker's probe, h82, read the editable install's reference.py by
    path and earned 85 of attention's 90 automatic points with a one-line submission)."""
    copy = _made_in("/tmp")
    try:
        ignore = shutil.ignore_patterns("__pycache__", "examples")
        for sub in ("checker", "assignments", "reference"):
            shutil.copytree(os.path.join(REPO, sub), os.path.join(copy, sub), ignore=ignore, symlinks=True)
        for root, dirs, names in os.walk(copy):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
            for n in names:
                os.chmod(os.path.join(root, n), 0o644)
        reads = {"copy's reference": os.path.join(copy, "assignments", "attention", "reference.py"),
                 "copy's tests": os.path.join(copy, "assignments", "attention", "test_attention_q1.py"),
                 "installed reference": os.path.join(REPO, "assignments", "attention", "reference.py"),
                 "installed answers": os.path.join(REPO, "assignments", "charlm", "_answers.py"),
                 "installed tests": os.path.join(REPO, "tests", "conftest.py")}
        out = _run(sys.executable, namespaces, work, ["checker.worker.roots"], reads,
                   path_line=f"sys.path.insert(0, {copy!r})  # this copy's checker, the editable install beside it")
        assert out["checker.worker.roots"] == "imported", out
        for name, path in reads.items():
            if os.path.exists(path):
                assert out[name] in ("FileNotFoundError", "PermissionError"), (name, out[name][:80])
    finally:
        shutil.rmtree(copy, ignore_errors=True)
