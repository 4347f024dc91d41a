"""What `hwcheck gradescope` says when the wheels cannot be fetched, and for a Python no base image has (h91).

Offline, pip retries every package at every index: its screens of `WARNING: Retrying ...` came first in the
error and the advice (--torch-wheel, --online) only at its end. The advice now comes first and pip's output is cut
to the lines that say why. A zip built for a Python that none of Gradescope's base images has (its setup.sh
refuses every one of them) is warned about as the build starts. No wheel is fetched or built here.
"""
import subprocess

import pytest
from click.testing import CliRunner

from checker.cli import main
from checker.errors import HwcheckError
from checker.platforms import autograder

RETRY = ("WARNING: Retrying (Retry(total={n}, connect=None, read=None, redirect=None, status=None)) after connection "
         "broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object>: Failed to "
         "establish a new connection: [Errno -3] Temporary failure in name resolution')': /simple/{pkg}/")
PIP_OFFLINE = "\n".join(
    [RETRY.format(n=n, pkg=pkg) for pkg in ("torch", "numpy", "click", "pytest", "filelock") for n in range(4, -1, -1)]
    + ["WARNING: Location 'file:///opt/pypi/simple/torch/' is ignored: it is neither a file nor a directory.",
       "ERROR: Could not find a version that satisfies the requirement torch==2.13.0+cpu (from versions: none)",
       "ERROR: No matching distribution found for torch==2.13.0+cpu"])


def test_offline_the_advice_comes_first_and_pips_retries_are_cut(tmp_path, monkeypatch):
    wheel = tmp_path / "hwcheck-1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 1, "", PIP_OFFLINE))
    with pytest.raises(HwcheckError) as e:
        autograder.download_wheels(str(tmp_path / "w"), str(wheel), python="3.10")
    said = str(e.value)
    assert said.index("--torch-wheel") < said.index("No matching distribution"), said
    assert said.index("--online") < said.index("No matching distribution"), said
    assert "Retrying" not in said and "is ignored" not in said, said
    assert len(said.splitlines()) <= 5, said


def test_pip_failure_keeps_the_last_lines_when_pip_says_no_error():
    out = "\n".join(f"line {i}" for i in range(20))
    assert autograder.pip_failure(out).splitlines()[:-1] == [f"line {i}" for i in range(14, 20)]
    assert autograder.pip_failure("") == ""


def _fake_zip(output, assignment, **kw):
    return {"path": output, "size": 1e6, "files": [], "torch": "2.13.0", "python": kw["python"], "pinned": True}


@pytest.mark.parametrize("python, warned", [("3.11", True), ("3.9", True), ("3.10", False), ("3.12", False)])
def test_a_python_no_gradescope_image_has_is_warned_about_at_build_time(tmp_path, monkeypatch, python, warned):
    monkeypatch.setattr(autograder, "write_autograder_zip", _fake_zip)
    r = CliRunner().invoke(main, ["gradescope", "-a", "attention", "-o", str(tmp_path / "a.zip"), "--python", python])
    assert r.exit_code == 0, r.output
    assert ("none of Gradescope's base images has Python" in r.stderr) == warned, r.stderr
    if warned:
        assert "Ubuntu 22.04: 3.10" in r.stderr and "Ubuntu 24.04: 3.12" in r.stderr, r.stderr
    else:
        image = autograder.GRADESCOPE_PYTHONS[python]
        assert f"base image {image}" in r.stdout, r.stdout


def test_online_zips_are_not_warned_about(tmp_path, monkeypatch):
    monkeypatch.setattr(autograder, "write_autograder_zip", _fake_zip)
    r = CliRunner().invoke(main, ["gradescope", "-a", "attention", "-o", str(tmp_path / "a.zip"), "--online",
                                  "--python", "3.11"])
    assert r.exit_code == 0 and "base images" not in r.stderr, r.output
