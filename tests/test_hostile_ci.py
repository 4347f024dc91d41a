"""Hostile tests: a student's text in `hwcheck check --ci` output forms no command the GitHub runner would obey.

The runner (actions/runner, src/Runner.Common/ActionCommand.cs and src/Runner.Worker/ActionCommandManager.cs)
reads each line of a step's stdout and stderr (lines end at LF, CR or CR LF: .NET's ReadLine) and tries
`TryParseV2` — the line, after TrimStart (every Unicode space), starts with `::` and holds a second `::` — then
`TryParse` — `##[` ANYWHERE in the line, then `]`. The command name is compared case-insensitively against the
registered ones; `stop-commands` makes it obey nothing until its token comes back. Its comparisons are .NET
culture ones, which skip zero-width and other ignorable characters: the port below deletes every format,
control and default-ignorable character before parsing (more than ICU skips, so the test is stricter).

A real submission raises an exception, prints, and is named with every form of command the issue names
(`##[` mid-line, `add-mask`, `stop-commands`, `::error::` after a non-breaking or ideographic space, after a
zero-width space, after a CR ...); it goes through the real `hwcheck check --ci` (and `--json -`) in a
subprocess, and the port parses what came out. The only commands obeyed are hwcheck's own.
"""

import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORRECT = ROOT / "submissions" / "attention" / "correct.py"

# ---------------------------------------------------------------------------------------------------------------
# a port of the runner's command parser
# ---------------------------------------------------------------------------------------------------------------

REGISTERED = {"stop-commands", "add-mask", "add-matcher", "add-path", "debug", "echo", "remove-matcher",
              "save-state", "set-env", "set-output", "warning", "error", "notice", "group", "endgroup"}
_DOTNET_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009" \
                "\u200a\u2028\u2029\u202f\u205f\u3000"
_DEFAULT_IGNORABLE = re.compile("[\xad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
                                "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
                                "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]")


def _culture(text):
    """The text as .NET's culture comparison sees it (ignorable characters skipped); a superset of ICU's."""
    text = _DEFAULT_IGNORABLE.sub("", text)
    return "".join(ch for ch in text if ch in _DOTNET_SPACE or unicodedata.category(ch) not in ("Cc", "Cf"))


def _unescape(text, pairs):
    for token, replacement in pairs:
        text = text.replace(replacement, token)
    return text


_DATA = [("\r", "%0D"), ("\n", "%0A"), ("%", "%25")]
_PROPERTY = [("\r", "%0D"), ("\n", "%0A"), (":", "%3A"), (",", "%2C"), ("%", "%25")]
_V1 = [(";", "%3B"), ("\r", "%0D"), ("\n", "%0A"), ("]", "%5D"), ("%", "%25")]


def parse_command(line, registered=REGISTERED):
    """(form, name, properties, data) of the command the runner reads in `line`, or None."""
    seen = _culture(line)
    v2 = seen.lstrip(_DOTNET_SPACE)
    if v2.startswith("::"):
        end = v2.find("::", 2)
        if end >= 0:
            info = v2[2:end]
            name = info.split(" ", 1)[0]
            if name.lower() in registered:
                props = {}
                if " " in info:
                    for part in info.split(" ", 1)[1].strip().split(","):
                        if "=" in part:
                            k, v = part.split("=", 1)
                            props[k] = _unescape(v, _PROPERTY)
                return "v2", name.lower(), props, _unescape(v2[end + 2:], _DATA)
    start = seen.find("##[")
    if start >= 0:
        close = seen.find("]", start)
        if close >= 0:
            info = seen[start + 3:close]
            name = info.split(" ", 1)[0]
            if name.lower() in registered:
                return "v1", name.lower(), {}, _unescape(seen[close + 1:], _V1)
    return None


def runner_lines(text):
    """The lines the runner reads from a stream (.NET ReadLine: LF, CR or CR LF ends one)."""
    return re.split(r"\r\n|\r|\n", text)


def obeyed(streams):
    """The commands the runner obeys over `streams` (stdout first), with stop-commands as the runner keeps it."""
    registered, stop, out = set(REGISTERED), None, []
    for text in streams:
        for line in runner_lines(text):
            cmd = parse_command(line, registered)
            if cmd is None:
                continue
            if stop is not None:
                if cmd[1] == stop:
                    registered.discard(stop)
                    out.append(("resume",) + cmd)
                    stop = None
                continue
            if cmd[1] == "stop-commands":
                stop = cmd[3].lower()
                registered.add(stop)
            out.append(("obeyed",) + cmd)
    return out


def test_the_port_reads_what_the_runner_reads():
    assert parse_command("text before ##[add-mask]secret")[:2] == ("v1", "add-mask")
    assert parse_command("\u00a0::error::x")[:2] == ("v2", "error")
    assert parse_command("\u3000::WARNING file=a.py::x")[1:3] == ("warning", {"file": "a.py"})
    assert parse_command("\u200b::error::x")[1] == "error"
    assert parse_command("#\u200d#[error]x")[1] == "error"
    assert parse_command("a ::error::x") is None and parse_command("::nothing::x") is None
    assert runner_lines("a\rb\r\nc") == ["a", "b", "c"]
    assert [c[0] for c in obeyed(["::stop-commands::tok\n::error::hidden\n::tok::\n::error::shown"])] == \
        ["obeyed", "resume", "obeyed"]


# ---------------------------------------------------------------------------------------------------------------
# the attack
# ---------------------------------------------------------------------------------------------------------------

# Each form of command in a student's text; each would be obeyed if printed as it is. (Python escapes: the
# submission's source spells them, so the characters exist only when its code runs.)
FORMS = [
    r"mid-line v1 ##[error file=forged.py,line=1]forged annotation",
    r"##[add-mask]hwcheck",
    r"::stop-commands::studenttoken",
    r"::add-mask::Q1",
    r"\u00a0::error::after a non-breaking space",
    r"\u3000::warning::after an ideographic space",
    r"\u200b::error::after a zero-width space",
    r"#\u200d#[error]zero-width joiner inside",
    r"\u200c:\ufe0f:error::zero-width non-joiner and a variation selector (kept: writing needs them)",
    r"\ufeff::error title=bom::after a BOM",
    r"x\r::error::after a carriage return",
    r"\x85::error::after NEL",
    r"\u2028::error::after a line separator",
    r"::ERROR::upper case",
    r"%0A::error::encoded newline",
]
EVIL = r"\n".join(FORMS) + r" | and on one line: " + " ".join(FORMS).replace(r"\r", "").replace(r"\n", "")
# the file name holds them too (it is the annotation's `file=` and the report's header)
NAME = "sub ##[error]name\u3000::warning::w ##[add-mask]score"


def _hostile_source():
    src = CORRECT.read_text(encoding="utf-8")
    src = src.replace("def get_scores(", "def _unused_get_scores(", 1)
    return src + f'''

EVIL = "{EVIL}"
print("printed at the top level: " + EVIL)


def get_scores(matrix, vector):
    print("printed in a function: " + EVIL)
    raise ValueError("student says " + EVIL)
'''


def _check(*args, cwd):
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    env.update(PYTHONPATH=str(ROOT), NO_COLOR="1", GITHUB_ACTIONS="true")
    return subprocess.run([sys.executable, "-m", "checker.cli", "check", *args, "-a", "attention", "--ci"],
                          cwd=cwd, env=env, capture_output=True, text=True, encoding="utf-8",
                          errors="surrogateescape", timeout=600)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile_ci")
    (d / f"{NAME}.py").write_text(_hostile_source(), encoding="utf-8")
    return d


@pytest.fixture(scope="module", params=["report", "json"])
def checked(request, folder):
    extra = ["--json", "-"] if request.param == "json" else []
    r = _check(f"{NAME}.py", *extra, cwd=folder)
    assert r.returncode == 1, r.stdout + r.stderr  # get_scores fails; no traceback of hwcheck
    assert "Traceback" not in r.stderr, r.stderr
    r.mode = request.param
    return r


def _own_annotation(cmd):
    form, name, props, data = cmd
    return form == "v2" and name in ("error", "warning", "notice") and set(props) <= {"file", "line", "title"}


@pytest.mark.slow
def test_the_runner_obeys_only_hwchecks_own_commands(checked):
    r = checked
    cmds = obeyed([r.stdout, r.stderr])
    assert cmds, r.stdout
    first = cmds[0]
    assert first[:3] == ("obeyed", "v2", "stop-commands") and first[4].startswith("hwcheck-"), cmds[:2]
    assert cmds[1][:3] == ("resume", "v2", first[4]), cmds[:3]
    rest = cmds[2:]
    assert rest and all(c[0] == "obeyed" and _own_annotation(c[1:]) for c in rest), rest
    # the student's failure is annotated, its message there in words, escaped
    assert any("student says" in c[4] and "after an ideographic space" in c[4] for c in rest), rest


@pytest.mark.slow
def test_no_line_is_a_students_command_even_were_stop_commands_ignored(checked):
    """The second wall alone: every line, read as if no command were ever stopped, is hwcheck's own."""
    r = checked
    for text in (r.stdout, r.stderr):
        for line in runner_lines(text):
            cmd = parse_command(line)
            if cmd is None:
                continue
            own = cmd[1] == "stop-commands" or cmd[1].startswith("hwcheck-") or _own_annotation(cmd)
            assert own and line.startswith("::"), line


@pytest.mark.slow
def test_an_annotations_message_unescaped_by_the_runner_forms_no_command(checked):
    """The runner turns %0A back into line breaks and writes the message to the log: none of its lines is a
    command (the log viewer shows `##[error]` lines as errors)."""
    for c in obeyed([checked.stdout, checked.stderr])[2:]:
        for piece in [c[4], *c[3].values()]:
            for line in runner_lines(piece):
                assert parse_command(line) is None, (line, piece)


@pytest.mark.slow
def test_the_students_text_is_shown_not_dropped(checked):
    if checked.mode == "json":
        import json
        start = checked.stdout.index("\n{") + 1
        view = json.loads(checked.stdout[start:checked.stdout.index("\n}", start) + 2])
        assert "\u3000::warning::after an ideographic space" in json.dumps(view, ensure_ascii=False)
    else:
        assert "student says" in checked.stdout and "after an ideographic space" in checked.stdout
