"""Hostile hard links and sparse files in a batch, graded by a real `hwcheck grade`.

A student's .tar whose member is a hard link to an absolute path (`/.../assignments/attention/reference.py`)
becomes a real hard link when the TA unpacks it with Python's shutil.unpack_archive or tarfile.extractall
(no filter): every check of a path passed it, so `helper.py` linked to the reference plus `from helper import
*` made a wrong submission score like a correct one, and `notes.txt` linked to a grading test put the hidden
tests' source in the student's scorecard. A regular file with more names than the submission holds is now
looked up among the secret trees' files (checker.running.submission_files.hard_link_refused) and left out,
saying why; a hard link to a file outside every secret (a TA's `cp -al` snapshot) is graded as before.

A sparse file (`truncate -s 30G`, nothing on disk) cost 134 s a grade in the hash and a single sparse .py was
copied whole into the worker's folder: both now finish in seconds with a message.

Marked `walls`: they hold in both wall modes (tests/test_wall_modes.py runs them again without
CAP_SYS_ADMIN). The links live in tmp_path and point at the real files, which they never change; pytest
removes them with tmp_path, and each test removes its own at its end.
"""

import errno
import json
import os
import shutil
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.walls]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ASSIGNMENT = os.path.join(ROOT, "assignments", "attention")
REFERENCE = os.path.join(ASSIGNMENT, "reference.py")
GRADING_TEST = os.path.join(ASSIGNMENT, "test_attention_q1.py")
CORRECT = os.path.join(ROOT, "submissions", "attention", "correct.py")
WRONG = os.path.join(ROOT, "submissions", "attention", "no_scaling.py")
REFUSED = "hard link to a file the grader keeps from submissions"


def _hwcheck(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "checker.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def _link(target, name, made):
    try:
        os.link(target, name)
    except OSError as e:
        if e.errno == errno.EXDEV:
            pytest.skip("the checkout and the temp folder are on different filesystems: no hard link between them")
        raise
    made.append(name)


def _same(path):
    st = os.stat(path)
    with open(path, "rb") as f:
        return st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns, f.read()


def _said(card):
    return [m if isinstance(m, str) else m.get("text", "") for m in card["load"]["messages"]]


def _secret_lines():
    """Lines of the grading test no submission holds (what a leak of its source would show)."""
    with open(CORRECT, encoding="utf-8") as f:
        theirs = set(f.read().splitlines())
    with open(GRADING_TEST, encoding="utf-8") as f:
        return [ln.strip() for ln in f.read().splitlines() if len(ln.strip()) > 30 and ln not in theirs]


def test_hard_links_into_the_grader_files_are_left_out_and_a_snapshot_link_is_graded(tmp_path):
    before = {p: _same(p) for p in (REFERENCE, GRADING_TEST)}
    subs = tmp_path / "class"
    for sid in ("wrong", "mallory", "mallory2"):
        (subs / sid).mkdir(parents=True)
    shutil.copyfile(WRONG, subs / "wrong" / "main.py")
    with open(WRONG, encoding="utf-8") as f:
        wrong = f.read()
    # the wrong code, whose names the reference's replace (as the probe's 90/100 showed)
    (subs / "mallory" / "main.py").write_text(wrong + "\n\nfrom helper import *\n")
    with open(CORRECT, encoding="utf-8") as f:
        (subs / "mallory2" / "main.py").write_text(
            f.read() + "\n\ntry:\n    _LEAK = open('notes.txt').read()\nexcept OSError as e:\n    _LEAK = str(e)\n"
            "def scale_scores(scores, n):\n    raise RuntimeError('LEAK ' + _LEAK[:3000])\n")
    snapshot = tmp_path / "snapshot"  # a TA's `cp -al` copy of the class: outside every secret tree
    snapshot.mkdir()
    shutil.copyfile(CORRECT, snapshot / "carol.py")
    made = []
    try:
        _link(REFERENCE, subs / "mallory" / "helper.py", made)
        _link(GRADING_TEST, subs / "mallory2" / "notes.txt", made)
        _link(REFERENCE, subs / "eve.py", made)  # a top-level hard link an unpacked tar put in the class folder
        _link(snapshot / "carol.py", subs / "carol.py", made)
        out = tmp_path / "out"
        proc = _hwcheck("grade", str(subs), "-a", "attention", "-o", str(out), "-j", "1", timeout=400)
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr[-3000:]
        cards = {sid: json.loads((out / f"{sid}.json").read_text()) for sid in
                 ("wrong", "mallory", "mallory2", "eve", "carol")}
        assert cards["mallory"]["score"] <= cards["wrong"]["score"] < 90, {s: c["score"] for s, c in cards.items()}
        assert any(m.startswith("helper.py was not given to your code") and REFUSED in m
                   for m in _said(cards["mallory"])), _said(cards["mallory"])
        assert any(m.startswith("notes.txt was not given to your code") and REFUSED in m
                   for m in _said(cards["mallory2"])), _said(cards["mallory2"])
        assert cards["eve"]["score"] == 0, cards["eve"]["score"]
        assert any(m.startswith("eve.py was not given to your code") and REFUSED in m
                   for m in _said(cards["eve"])), _said(cards["eve"])
        assert cards["carol"]["status"] == "graded" and cards["carol"]["score"] == 90, cards["carol"]["load"]
        secret = _secret_lines()
        assert secret
        for path in out.rglob("*"):
            if path.is_file():
                text = path.read_text(errors="replace")
                assert not [ln for ln in secret if ln in text], path
    finally:
        for name in made:
            os.unlink(name)
    assert {p: _same(p) for p in before} == before  # the targets are unchanged


def test_sparse_files_are_left_out_with_a_message(tmp_path):
    subs = tmp_path / "class"
    (subs / "sparse").mkdir(parents=True)
    shutil.copyfile(CORRECT, subs / "sparse" / "main.py")
    with open(subs / "sparse" / "data.bin", "wb"):
        pass
    os.truncate(subs / "sparse" / "data.bin", 30 << 30)  # 30 GiB, nothing on disk
    with open(subs / "big.py", "wb"):
        pass
    os.truncate(subs / "big.py", 3 << 30)
    out = tmp_path / "out"
    proc = _hwcheck("grade", str(subs), "-a", "attention", "-o", str(out), "-j", "1", timeout=300)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr[-3000:]
    sparse, big = (json.loads((out / f"{sid}.json").read_text()) for sid in ("sparse", "big"))
    assert sparse["status"] == "graded" and sparse["score"] == 90, sparse["load"]
    assert any(m.startswith("data.bin was not given to your code: it is larger than 64 MiB") for m in _said(sparse))
    assert big["score"] == 0 and not big["grader"].get("internal_error"), big["grader"]
    assert any(m.startswith("big.py was not given to your code: it is larger than 16 MiB") for m in _said(big)), \
        _said(big)
