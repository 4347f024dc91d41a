"""Hostile tests: student-controlled text must not drive the TA's terminal, a CI log, a step summary or a spreadsheet.

Real submission files whose names hold an OSC title sequence, a carriage
return, a bidi override, `::error::` and `%0A`, and whose code raises
exceptions with such text and writes a formula as its written answer, go
through the real `hwcheck grade`, `hwcheck check --ci` and `hwcheck show`
(subprocesses, output captured). Nothing raw may come out: no ESC, BEL, CR or
bidi override byte, no line read as a GitHub workflow command but hwcheck's own
one-line annotations, no Markdown structure from the student, no spreadsheet
formula. (checker.render.escape is the one mechanism; tests/test_escape.py tests it alone.)
"""

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from checker.records.ids import file_name

ROOT = Path(__file__).resolve().parents[1]
CORRECT = ROOT / "submissions" / "attention" / "correct.py"

# An OSC window-title sequence, a CR that would rewrite the line, a workflow command, an encoded newline,
# a bidi override and Markdown/HTML: in the file name and so in the submission id.
HOSTILE_NAME = "osc\x1b]0;pwned\x07\r::error::x%0A\u202e|<img src=x>bad"
FORMULA_NAME = '=HYPERLINK("evil.example","x")'

# What the student's code raises: each piece would act if printed raw.
EVIL = ("\\x1b]0;pwned\\x07\\r\\n::error file=x.py,line=1::injected\\r\\n##[error]v1"
        " %0A | cell | <img src=x onerror=alert(1)> [link](http://evil) \\u202eevil \\x1b[2J")

RAW = {"\x1b": "ESC", "\x07": "BEL", "\r": "CR", "\u202e": "RLO", "\x9b": "CSI"}


def _hostile_source():
    src = CORRECT.read_text(encoding="utf-8")
    src = src.replace("def get_scores(", "def _unused_get_scores(", 1)
    # the written answer (a '# Q3-text' comment) opens with a formula and a title sequence
    src = src.replace("# Q3-text\n# ", "# Q3-text\n# =HYPERLINK(\"http://evil\",\"x\") \x1b]0;pwned\x07 ", 1)
    assert "=HYPERLINK" in src
    return src + f'''

EVIL = "{EVIL}"
print("printed at the top level: " + EVIL)


def get_scores(matrix, vector):
    print("printed in a function: " + EVIL)
    raise ValueError("student says " + EVIL)
'''


def _hwcheck(*args, cwd, env=None):
    base = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS")}
    env = {**base, **(env or {}), "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "checker.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, encoding="utf-8", errors="surrogateescape",
                          timeout=600)


def _assert_nothing_raw(text, where):
    found = {name for ch, name in RAW.items() if ch in text}
    assert not found, f"{where} holds raw {sorted(found)}:\n{text!r}"[:3000]


def _command_lines(text):
    """Lines that the GitHub runner would read as a workflow command (it trims spaces first)."""
    return [line for line in text.split("\n") if line.strip().startswith(("::", "##["))]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile_output")
    subs = d / "subs"
    subs.mkdir()
    (subs / f"{HOSTILE_NAME}.py").write_text(_hostile_source(), encoding="utf-8")
    shutil.copy(CORRECT, subs / f"{FORMULA_NAME}.py")
    return d


@pytest.fixture(scope="module")
def graded(folder):
    out = folder / "out"
    r = _hwcheck("grade", "subs", "-a", "attention", "-o", "out", "--public", "-j", "1", cwd=folder)
    assert r.returncode == 0, r.stdout + r.stderr
    return r, out


def test_grade_prints_ids_and_messages_escaped_one_line_each(graded):
    r, _ = graded
    _assert_nothing_raw(r.stdout, "grade's stdout")
    _assert_nothing_raw(r.stderr, "grade's stderr")
    assert not _command_lines(r.stdout + "\n" + r.stderr)
    progress = [line for line in r.stderr.split("\n") if line.startswith("[")]
    assert len(progress) == 2, r.stderr  # one line per submission: an id cannot break its line
    mine = next(line for line in progress if "osc" in line)
    assert "osc\\x1b]0;pwned\\x07\\r::error::x%0A\\u202e|<img src=x>bad: " in mine, mine


def test_grades_and_answers_csv_hold_no_formula_and_no_control_character(graded):
    _, out = graded
    for name in ("grades.csv", "answers.csv"):
        text = (out / name).read_text(encoding="utf-8-sig")
        _assert_nothing_raw(text.replace("\r\n", "\n"), name)
        rows = list(csv.reader(text.splitlines()))[1:]
        assert len(rows) == 2
        for row in rows:
            for cell in row:
                assert not cell.lstrip()[:1] in ("=", "+", "-", "@"), (name, cell)
        ids = sorted(row[0] for row in rows)
        assert ids[0] == "'" + FORMULA_NAME, ids
    answers = {row[0]: row[1] for row in csv.reader((out / "answers.csv").read_text(encoding="utf-8-sig")
                                                     .splitlines()[1:]) if row}
    hostile = next(v for k, v in answers.items() if k.startswith("osc"))
    assert hostile.startswith("'=HYPERLINK(") and "\\x1b]0;pwned\\x07" in hostile


def test_show_of_an_edited_scorecard_prints_it_escaped(graded, tmp_path):
    _, out = graded
    path = next(p for p in out.glob("*.json") if p.name.startswith("osc"))
    card = json.loads(path.read_text(encoding="utf-8"))
    card["questions"][0]["title"] += " \x1b]0;edited\x07\r::warning::t \u2066x"
    card["questions"][0]["tests"][0]["name"] += "\x1b[2J\rname"
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(card, ensure_ascii=False), encoding="utf-8")
    for args in ([str(path)], [str(edited), "--all"]):
        r = _hwcheck("show", *args, cwd=tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
        _assert_nothing_raw(r.stdout + r.stderr, f"show {args}")
        assert "\u2066" not in r.stdout
        assert not _command_lines(r.stdout), _command_lines(r.stdout)
        assert "student says \\x1b]0;pwned\\x07" in r.stdout


@pytest.fixture(scope="module")
def checked(folder):
    summary = folder / "summary.md"
    summary.write_text("", encoding="utf-8")
    r = _hwcheck("check", f"subs/{HOSTILE_NAME}.py", "-a", "attention", "--ci", "--junit", "junit.xml",
                 cwd=folder, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert r.returncode == 1, r.stdout + r.stderr  # some tests failed; no traceback of hwcheck
    return r, summary.read_text(encoding="utf-8"), (folder / "junit.xml").read_text(encoding="utf-8")


_ANNOTATION = re.compile(r"::(error|warning) (file=[^:,]+,line=\d+,)?title=[^:,]+::\S.*")


def test_check_ci_prints_no_raw_byte_and_only_its_own_annotations(checked):
    r, _, _ = checked
    _assert_nothing_raw(r.stdout, "check --ci stdout")
    _assert_nothing_raw(r.stderr, "check --ci stderr")
    commands = _command_lines(r.stdout + "\n" + r.stderr)
    assert commands, r.stdout
    for line in commands:  # each is hwcheck's own, one line, its data and properties escaped
        assert _ANNOTATION.fullmatch(line), line
        assert "\r" not in line and line.count("::") >= 2
    # the student's '::error' lines sit inside the data of an annotation, escaped
    # (each line the runner unescapes from the data is defused too: no `::` at its start, no `##[`; a line of
    # the student's text after its first is indented, checker.running.answers.quoted)
    assert sum("%0A    \\::error file=x.py,line=1::injected%0A    #\\#[error]v1" in line for line in commands) >= 1
    assert any("osc\\x1b]0;pwned\\x07\\r%3A%3Aerror%3A%3Ax%250A\\u202e|<img src=x>bad.py" in line
               for line in commands), commands
    assert "student says \\x1b]0;pwned\\x07" in r.stdout  # the report is there, escaped


def _outside_fences(markdown):
    out, fence = [], None
    for line in markdown.split("\n"):
        stripped = line.strip()
        if fence:
            if stripped == fence:
                fence = None
            continue
        if stripped.startswith("```"):
            fence = re.match(r"`+", stripped).group()
            continue
        out.append(line)
    assert fence is None, "a code fence was never closed"
    return out


def _unescaped(line, chars):
    return re.findall(r"(?<!\\)(?:\\\\)*([" + re.escape(chars) + "])", line)


def test_step_summary_holds_no_student_markdown_or_control_character(checked):
    _, summary, _ = checked
    _assert_nothing_raw(summary, "the step summary")
    assert "student says" in summary
    lines = _outside_fences(summary)
    table = [line for line in lines if line.startswith("|")]
    assert len(table) >= 3
    for line in lines:
        pipes = len(_unescaped(line, "|"))
        assert pipes == (5 if line in table else 0), line  # 4 columns, no cell split by a student's '|'
        assert not _unescaped(line, "<>"), line  # no HTML
        assert not re.search(r"(?<!\\)\]\(", line), line  # no link or image
    heading = next(line for line in lines if line.startswith("## hwcheck"))
    assert "\\<img src=x\\>" in heading and "\\|" in heading


def test_junit_report_holds_no_control_character(checked):
    _, _, junit = checked
    _assert_nothing_raw(junit, "the JUnit report")
    assert "&#13;" not in junit and "&#27;" not in junit
    root = ET.fromstring(junit.split("?>", 1)[1])
    texts = [e.text or "" for e in root.iter()] + [v for e in root.iter() for v in e.attrib.values()]
    _assert_nothing_raw("".join(texts), "the JUnit report's parsed text")
    assert any("student says \\x1b]0;pwned\\x07" in t for t in texts)


def test_a_file_name_that_is_not_utf8_is_graded_not_a_batch_error(tmp_path):
    """A Windows zip's cp1252 `café.py` (byte 0xE9): the batch stopped with an internal UnicodeEncodeError
    while writing manual.csv, then the scorecard. It is now graded under the id `caf\\xe9`, every file
    hwcheck writes is valid UTF-8, and the scorecard's path still opens the file."""
    root = Path(__file__).resolve().parents[1]
    subs = tmp_path / "subs"
    subs.mkdir()
    good = (root / "submissions" / "attention" / "correct.py").read_bytes()
    with open(os.path.join(os.fsencode(subs), b"caf\xe9.py"), "wb") as f:
        f.write(good)
    (subs / "bob.py").write_bytes(good)
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "checker.cli", "grade", str(subs), "-a", "attention", "-o", str(out),
                        "--public"], capture_output=True, cwd=root, timeout=300)
    assert r.returncode == 0, (r.stdout + r.stderr).decode(errors="replace")
    rows = list(csv.DictReader((out / "grades.csv").read_text(encoding="utf-8-sig").splitlines()))
    assert {row["id"]: row["status"] for row in rows} == {"bob": "graded", "caf\\xe9": "graded"}
    assert rows[0]["total"] == rows[1]["total"]
    for p in out.rglob("*"):
        if p.is_file():
            p.read_bytes().decode("utf-8")  # nothing hwcheck wrote holds a byte that is not UTF-8
    card = json.loads((out / (file_name("caf\\xe9") + ".json")).read_text())  # the id escaped for any disk
    assert open(card["submission"]["path"], "rb").read() == good
