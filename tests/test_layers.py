"""The plan in the folder tree: checker.worker never imports the trusted side, each layer of checker/
(platforms, records, running, render, judging, then spec, wire, errors) imports only the layers below
it, and the modules import each other without circles.

Every import-linter contract in pyproject.toml is run for real, and each is shown to fail on a copy of
the tree that breaks it: a worker module importing the reference; a pure judging module importing the
batch (a layer above it); checker.records.lms importing checker.records.batch, which imports it. An AST
walk also catches a worker module that imports any trusted module, named in a contract or not.
"""

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / "checker" / "worker"
# what the worker side may import from hwcheck: itself, the wire protocol and the exception tree
ALLOWED = ("checker.worker", "checker.wire", "checker.errors", "checker.walk")


def _lint(root):
    exe = Path(sys.executable).with_name("lint-imports")
    if not exe.exists():
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    return subprocess.run([str(exe), "--no-logo", "--no-cache"], cwd=root, capture_output=True, text=True,
                          timeout=120, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)})


def _copy_tree(dest):
    for d in ("checker", "assignments"):
        shutil.copytree(ROOT / d, dest / d, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", dest)


def test_every_import_contract_is_kept():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert {c["type"] for c in contracts} >= {"forbidden", "layers", "acyclic_siblings"}
    r = _lint(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{len(contracts)} kept, 0 broken" in r.stdout


def test_acyclic_contract_breaks_when_two_modules_import_each_other(tmp_path):
    _copy_tree(tmp_path)
    lms = tmp_path / "checker" / "records" / "lms.py"  # checker.records.batch imports checker.records.lms
    lms.write_text(lms.read_text() + "\nfrom checker.records import batch  # noqa\n")
    r = _lint(tmp_path)
    assert r.returncode != 0
    assert "without circles BROKEN" in r.stdout and ".lms -> .batch" in r.stdout, r.stdout


def test_layers_contract_breaks_when_a_pure_module_imports_a_layer_above_it(tmp_path):
    _copy_tree(tmp_path)
    compare = tmp_path / "checker" / "judging" / "compare.py"
    compare.write_text(compare.read_text() + "\nfrom checker.records import batch  # noqa\n")
    r = _lint(tmp_path)
    assert r.returncode != 0
    assert "only the ones below it BROKEN" in r.stdout, r.stdout
    assert "checker.judging is not allowed to import checker.records" in r.stdout, r.stdout


def test_import_contract_breaks_when_a_worker_module_imports_the_reference(tmp_path):
    _copy_tree(tmp_path)
    probes = tmp_path / "checker" / "worker" / "probes.py"
    probes.write_text(probes.read_text() + "\nfrom assignments.attention import reference  # noqa\n")
    r = _lint(tmp_path)
    assert r.returncode != 0
    assert "BROKEN" in r.stdout and "checker.worker.probes -> assignments.attention.reference" in r.stdout


def _imports(path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{a.name}" for a in node.names if node.module == "checker")


@pytest.mark.parametrize("path", sorted(WORKER.glob("*.py")), ids=lambda p: p.name)
def test_worker_modules_import_only_the_shared_protocol(path):
    ours = [m for m in _imports(path) if m.split(".")[0] in ("checker", "reference", "assignments")]
    bad = [m for m in ours if not m.startswith(ALLOWED) and m != "checker"]
    assert not bad, f"{path.name} imports the trusted side: {bad}"
