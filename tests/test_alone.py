"""A test marked `alone` runs with no other test beside it when the suite runs in parallel (tests/conftest.py).

A small suite with this folder's conftest.py runs under pytest-xdist with two workers: one test marked
`alone` and four others. Every test logs its start and its end, and waits (a bounded poll, 3 s) for a sign
of the other kind of test: the others for the `alone` one to start, the `alone` one for any other to start.
With the lock, nothing can start meanwhile, so the waits run out and the log shows the `alone` test with no
other test open around it; without the lock the two workers overlap within those waits.
"""
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

SUITE = r'''
import os, time
import pytest

LOG = os.environ["ALONE_LOG"]


def log(word):
    with open(LOG, "a") as f:
        f.write(word + "\n")


def seen(pred):
    with open(LOG) as f:
        return pred(f.read().split())


def wait_for(pred, limit=3.0):
    end = time.monotonic() + limit
    while time.monotonic() < end and not seen(pred):
        time.sleep(0.05)


@pytest.mark.alone
def test_alone():
    log("start:alone")
    n = seen(lambda words: words.count("start:alone") and len([w for w in words if w.startswith("start:o")]))
    wait_for(lambda words: len([w for w in words if w.startswith("start:o")]) > n)
    log("end:alone")


@pytest.mark.parametrize("i", range(4))
def test_other(i):
    log(f"start:o{i}")
    wait_for(lambda words: "start:alone" in words)
    log(f"end:o{i}")
'''


@pytest.mark.slow
def test_an_alone_test_has_no_other_test_beside_it(tmp_path):
    pytest.importorskip("xdist")
    shutil.copy(os.path.join(HERE, "conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_suite.py").write_text(SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    alone: runs alone\n")
    log = tmp_path / "log.txt"
    log.write_text("")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider", str(tmp_path)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "ALONE_LOG": str(log), "PYTHONPATH": os.path.dirname(HERE)})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    words = log.read_text().split()
    assert sorted(words) == sorted(["start:alone", "end:alone"] + [f"{e}:o{i}" for i in range(4)
                                                                    for e in ("start", "end")]), words
    a, b = words.index("start:alone"), words.index("end:alone")
    assert b == a + 1, words  # nothing started or ended while it ran
    before = words[:a]
    open_then = {w[6:] for w in before if w.startswith("start:")} - {w[4:] for w in before if w.startswith("end:")}
    assert not open_then, (open_then, words)  # and no other test was still running when it started
