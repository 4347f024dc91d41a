"""Hostile tests: nothing a student wrote reaches a TA's or a student's terminal raw (issue 26, item 7).

Every command that prints a student's text — `check` (in colour, `--json -`, `--ci`), `grade` (its
progress bar redrawn in place), `show`, `report` (the note naming the submissions it could not read)
— runs in a pseudo-terminal of its own (a real tty: colours on, progress bars drawn) over real
submissions whose file names hold a window-title sequence (OSC 0), a clipboard write (OSC 52), an
erase (CSI 2J), C1 controls (U+009B CSI, U+0085 NEL), bidi overrides and isolates, a byte that is not
UTF-8, and whose code raises and prints such text. What reaches the terminal is read back byte for
byte: the only escape sequences in it are hwcheck's own colours, and no C1 or bidi character is in it.
(`checker.render.escape.for_output` is the one pass every printed line goes through: checker.cli_base.echo.)
"""

import glob
import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time
import tty
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORRECT = ROOT / "submissions" / "attention" / "correct.py"

# window title, clipboard write (OSC 52), erase display and line, C1 CSI and NEL, bidi override and isolate
HOSTILE = "t\x1b]0;owned\x07c\x1b]52;c;cHduZWQ=\x07e\x1b[2J\x1b[1Kb\u202eevil\u2066i\x9b31m\x85n"
RAW_BYTES_NAME = b"raw\x9b\xff"  # not UTF-8: a C1 CSI byte and a stray byte
EVIL = r"\x1b]0;title\x07 \x1b]52;c;cHduZWQ=\x07 \x1b[2J \u202eevil \x9b31m \x85"
_OWN_SGR = re.compile(rb"\x1b\[(?:0|1|31|32|33)m")
_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                        "\ud800-\udfff]")


def _hostile_source():
    src = CORRECT.read_text(encoding="utf-8").replace("def get_scores(", "def _unused_get_scores(", 1)
    return src + f'''

EVIL = "{EVIL}"
print("at the top level: " + EVIL)


def get_scores(matrix, vector):
    raise ValueError("student says " + EVIL)
'''


def in_terminal(args, cwd, timeout=300):
    """(exit status, the bytes hwcheck wrote to its terminal): stdout and stderr are a pseudo-terminal in raw
    mode (no newline translation), so every byte is read back as it was written."""
    master, slave = pty.openpty()
    tty.setraw(slave)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100", "TERM": "xterm-256color"}
    for name in ("NO_COLOR", "GITHUB_STEP_SUMMARY", "CI"):
        env.pop(name, None)
    proc = subprocess.Popen([sys.executable, "-m", "checker.cli", *args], cwd=cwd, stdin=slave, stdout=slave,
                            stderr=slave, env=env, start_new_session=True)
    os.close(slave)
    out, deadline = bytearray(), time.monotonic() + timeout
    try:
        while True:
            ready, _, _ = select.select([master], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                proc.kill()
                raise AssertionError(f"hwcheck {args[0]} did not finish in {timeout} s: {bytes(out)[-2000:]!r}")
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the other side is closed
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
    return proc.wait(timeout=60), bytes(out)


def assert_nothing_raw(data, what, progress=False):
    """Only hwcheck's own colour codes as escape sequences; no C0 but tab and newline (a progress bar's CR
    where one is drawn), no C1, no bidi control, nothing that is not UTF-8."""
    text = _OWN_SGR.sub(b"", data).decode("utf-8", errors="surrogateescape")
    if progress:
        text = text.replace("\r", "")
    found = sorted({f"U+{ord(c):04X}" for c in _FORBIDDEN.findall(text)})
    assert not found, f"{what} wrote raw {found} to the terminal:\n{text[-3000:]!r}"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile_terminal")
    subs = base / "subs"
    subs.mkdir()
    (subs / f"{HOSTILE}.py").write_text(_hostile_source(), encoding="utf-8")
    with open(os.path.join(os.fsencode(subs), RAW_BYTES_NAME + b".py"), "wb") as f:
        f.write(CORRECT.read_bytes())
    (subs / f"d{HOSTILE}").mkdir()
    shutil.copy(CORRECT, subs / f"d{HOSTILE}" / "attention.py")
    return base


@pytest.fixture(scope="module")
def graded(folder):
    status, data = in_terminal(["grade", "subs", "-a", "attention", "-o", "out", "--public", "-j", "1"], folder)
    assert status == 0, data.decode(errors="replace")
    return folder / "out", data


@pytest.mark.slow
def test_grade(graded):
    _, data = graded
    assert_nothing_raw(data, "grade", progress=True)
    assert b"\\x1b]0;owned\\x07" in data  # the name is shown, escaped


@pytest.mark.slow
@pytest.mark.parametrize("extra", [[], ["--ci"], ["--json", "-"], ["-v"]], ids=["colour", "ci", "json", "verbose"])
def test_check(folder, extra):
    status, data = in_terminal(["check", f"subs/{HOSTILE}.py", "-a", "attention", *extra], folder)
    assert status == 1, data.decode(errors="replace")  # get_scores fails: no traceback of hwcheck
    assert_nothing_raw(data, f"check {' '.join(extra)}")
    if extra == ["--json", "-"]:
        view = json.loads(data.decode("utf-8"))
        assert "\u202eevil" in json.dumps(view, ensure_ascii=False)  # the same text, escaped as JSON
    else:
        assert b"student says" in data


@pytest.mark.slow
def test_show(graded):
    out, _ = graded
    for path in glob.glob(str(out / "*.json")):
        for extra in ([], ["--all", "-v"]):
            status, data = in_terminal(["show", path, *extra], out.parent)
            assert status == 0, data.decode(errors="replace")
            assert_nothing_raw(data, f"show {os.path.basename(path)!r}")


@pytest.mark.slow
def test_report_names_the_submissions_it_could_not_read_escaped(graded):
    pytest.importorskip("copydetect")
    out, _ = graded
    moved = out.parent / "moved"
    os.rename(out.parent / "subs", moved)  # the report now finds none of them where they were graded
    try:
        status, data = in_terminal(["report", "out"], out.parent)
    finally:
        os.rename(moved, out.parent / "subs")
    assert status == 0, data.decode(errors="replace")
    assert_nothing_raw(data, "report", progress=True)
    assert b"were not found" in data and b"\\x1b]52;c;cHduZWQ=\\x07" in data
    # the page too: outside its JSON numbers, no id shows a raw control or bidi character
    page = (out / "report.html").read_text(encoding="utf-8")
    shown = re.sub(r'<script type="application/json".*?</script>', "", page, flags=re.DOTALL)
    assert "\\u202eevil" in shown
    assert_nothing_raw(shown.encode("utf-8", "surrogateescape"), "report.html")
