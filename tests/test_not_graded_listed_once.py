"""`hwcheck grade` lists what it did not grade once, in the summary at the end (issue 26 item 4's leftover: an
early stderr line repeated the summary's list)."""

import os
import shutil
import subprocess
import sys

import pytest

from checker.spec import example_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
def test_every_entry_not_graded_is_listed_once_with_its_reason(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copyfile(example_path("attention", "correct.py"), folder / "alice.py")
    (folder / "notes.txt").write_text("not a submission\n")
    (folder / "late_bob.zip").write_bytes(b"PK\x05\x06" + b"\0" * 18)
    shutil.copyfile(example_path("attention", "correct.py"), folder / "CAROL.PY")
    r = subprocess.run([sys.executable, "-m", "checker.cli", "grade", str(folder), "-a", "attention", "-o",
                        str(tmp_path / "out"), "--public"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    both = r.stdout + r.stderr
    for name, why in (("notes.txt", "not a .py or .ipynb file"), ("late_bob.zip", "an archive: unpack it"),
                      ("CAROL.PY", "rename it to end in lower-case .py")):
        assert both.count(name) == 1, both
        assert f"not graded: '{name}': {why}" in r.stdout, r.stdout
    assert "not graded: 3 entries of the folder graded" in r.stdout, r.stdout
