"""Tests of checker.render.escape: each output's escaping of student-controlled text, alone (pure functions)."""

import csv
import io
import json
import re
import xml.etree.ElementTree as ET

import pytest

from checker.render.escape import (for_annotation_data, for_annotation_property, for_csv_cell, for_json_text, for_markdown,
                            for_markdown_code, for_output, for_terminal, for_xml)

OSC = "\x1b]0;pwned\x07"
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def test_terminal_shows_control_and_bidi_characters_as_escapes():
    text = for_terminal(f"a{OSC}b\x1b[2J\x00\x08\x7f\x9b{BIDI}\u2028c\tend")
    assert text == ("a\\x1b]0;pwned\\x07b\\x1b[2J\\x00\\x08\\x7f\\x9b"
                    "\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069\\u2028c\tend")
    assert all(ch.isprintable() or ch == "\t" for ch in text)


def test_terminal_keeps_newlines_only_where_allowed():
    assert for_terminal("one\r\ntwo\nthree") == "one\ntwo\nthree"
    assert for_terminal("over\rwrite") == "over\\rwrite"  # a lone CR would rewrite the line
    assert for_terminal("one\r\ntwo\nthree", newlines=False) == "one\\r\\ntwo\\nthree"
    assert "\n" not in for_terminal("a\nb\rc", newlines=False)


def test_terminal_defuses_workflow_commands_at_any_line_start():
    text = for_terminal("fine :: here\n::error::x\n   ::add-mask::y\n##[error]z\nok")
    assert text.split("\n") == ["fine :: here", "\\::error::x", "   \\::add-mask::y", "#\\#[error]z", "ok"]
    assert for_terminal("::set-output name=a::b", newlines=False) == "\\::set-output name=a::b"


def test_terminal_survives_a_file_name_that_is_not_utf8():
    name = b"bad\xff.py".decode("utf-8", "surrogateescape")
    assert for_terminal(name) == "bad\\udcff.py"
    for_terminal(name).encode("utf-8")  # printable without UnicodeEncodeError


def test_terminal_leaves_ordinary_text_alone():
    text = "Q1  ERROR test_x[5-3-float64]  (cpu)\n    got [0.8, 0.2], ünïcödé, 注意, 100%"
    assert for_terminal(text) == text


def test_annotation_data_is_one_line_with_githubs_escapes():
    assert for_annotation_data("50%\r\ndone") == "50%25%0Adone"
    data = for_annotation_data(f"msg {OSC}\n::error::x %0A")
    assert data == "msg \\x1b]0;pwned\\x07%0A\\::error::x %250A"  # the line the runner unescapes is defused
    assert "\n" not in data and "\r" not in data


def test_annotation_property_also_escapes_colon_and_comma():
    assert for_annotation_property("C:/x,y.py") == "C%3A/x%2Cy.py"
    prop = for_annotation_property(f"a{OSC}\r::error::b")
    assert prop == "a\\x1b]0;pwned\\x07\\r%3A%3Aerror%3A%3Ab"
    assert ":" not in prop and "," not in prop


def test_markdown_cell_cannot_make_structure():
    text = for_markdown("a | b\n## head <img src=x onerror=1> [l](http://e) ![i](u) `c` **b** &#x202e; \\")
    assert "\n" not in text
    assert "\\|" in text and "\\<img" in text and "\\>" in text
    assert "](" not in text.replace("]\\(", "")
    assert "\\`c\\`" in text and "\\*\\*b\\*\\*" in text and "\\&#x202e;" in text and text.endswith("\\\\")
    assert for_markdown(f"x{OSC}") == "x\\\\x1b]0;pwned\\\\x07"  # shown, as a backslash and text


def test_markdown_table_row_keeps_its_columns():
    row = f"| {for_markdown('a|b|c')} | {for_markdown('x')} |"
    unescaped = [i for i, ch in enumerate(row) if ch == "|" and row[i - 1] != "\\"]
    assert len(unescaped) == 3


def test_markdown_code_keeps_lines_and_escapes_controls():
    assert for_markdown_code(f"line 1\r\nline 2 {OSC}\rx") == "line 1\nline 2 \\x1b]0;pwned\\x07\\rx"


def test_xml_text_is_legal_and_visible():
    text = for_xml(f"nul \x00 bell \x07 {OSC} \ufffe \ud800 tab\t line\nend")
    ET.fromstring(f"<a b='{text.replace(chr(39), '')}'>{text}</a>")
    assert "\\x00" in text and "\\x07" in text and "\\ufffe" in text and "\\ud800" in text
    assert "\t" in text and "\n" in text


@pytest.mark.parametrize("cell", ['=HYPERLINK("http://evil","x")', "+1+1", "-2+3", "@SUM(A1)", "\t=1",
                                  "\r=1", "  =1+1", "\n=1", "\uff1d1+1", "=cmd|' /C calc'!A0"])
def test_csv_cell_defuses_formulas(cell):
    out = for_csv_cell(cell)
    assert out.startswith("'")
    assert "\r" not in out


@pytest.mark.parametrize("cell", ["alice", "o'brien", "a=b", "1-2", "", "Several heads; each has its own softmax"])
def test_csv_cell_leaves_plain_text(cell):
    assert for_csv_cell(cell) == cell


def test_csv_cell_leaves_numbers_and_escapes_controls():
    assert for_csv_cell(3) == 3 and for_csv_cell(4.5) == 4.5 and for_csv_cell(None) is None
    assert for_csv_cell(f"bob{OSC}") == "bob\\x1b]0;pwned\\x07"
    answer = "first line\nsecond line"
    buffer = io.StringIO()
    csv.writer(buffer).writerow([for_csv_cell(answer)])
    assert next(csv.reader(io.StringIO(buffer.getvalue()))) == [answer]  # a written answer keeps its lines


# Every character the runner's .NET culture comparison may skip (more than ICU skips: the test is stricter).
_IGNORED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
                      "\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e0fff]")


# The runner (actions/runner, ActionCommand.cs) obeys `##[name]` anywhere in a line (TryParse) and `::name::` at a
# line start after .NET's TrimStart, which trims every Unicode space; its comparisons are .NET culture ones, which
# skip zero-width and other ignorable characters.
@pytest.mark.parametrize("attack", [
    "see ##[error]forged", "x ###[add-mask]secret", "\u00a0::error::nbsp", "\u3000::stop-commands::tok",
    "\u2003\u205f::add-mask::word", "\u200b::error::zwsp", "\ufeff::error::bom", ":\u00ad:error::shy",
    "#\u200d#[error]zwj", "#\ufe0f#[error]vs16", "\U000e0020::error::tag", "\u2028::error::ls",
    "\u200c\u3000:\u200d:error::zwnj", "x #\u034f#\ufe0f[add-mask]y", "##\u200d#[error]z",
])
def test_terminal_defuses_every_form_of_workflow_command(attack):
    for text in (for_terminal(attack), for_output(attack), for_annotation_data(attack).replace("%0A", "\n")):
        seen = _IGNORED.sub("", text)  # what the runner's comparison sees
        assert "##[" not in seen, text
        assert not any(line.lstrip().startswith("::") for line in seen.split("\n")), text
    assert "##[" not in _IGNORED.sub("", for_json_text(json.dumps(attack, ensure_ascii=False)))


def test_ignorables_that_writing_needs_are_kept_and_the_others_shown():
    assert for_terminal("\u0645\u06cc\u200c\u0634\u0648\u062f \U0001f469\u200d\U0001f4bb \u2764\ufe0f") == \
        "\u0645\u06cc\u200c\u0634\u0648\u062f \U0001f469\u200d\U0001f4bb \u2764\ufe0f"  # Persian ZWNJ, emoji ZWJ/VS16
    assert for_terminal("a\u200bb\u00adc\ufeffd\u2060e\U000e0041f") == "a\\u200bb\\xadc\\ufeffd\\u2060e\\U000e0041f"


def test_annotation_data_defuses_each_line_the_runner_unescapes():
    data = for_annotation_data("a\n\u3000::add-mask::b\nc ##[error]d")
    lines = data.replace("%0A", "\n").replace("%25", "%").split("\n")
    assert not any(line.lstrip().startswith("::") for line in lines) and "##[" not in data, data


def test_output_keeps_only_hwchecks_own_colours_and_defuses_composed_lines():
    text = for_output("\x1b[31mFAILED\x1b[0m \x1b]0;t\x07 \x1b[8mhidden\x1b[2J\n \x1b[1m::error::x", color=True)
    assert text == ("\x1b[31mFAILED\x1b[0m \\x1b]0;t\\x07 \\x1b[8mhidden\\x1b[2J\n \x1b[1m\\::error::x")
    assert "\x1b" not in for_output("\x1b[31mred\x1b[0m")  # without colour, no ESC at all
    # two pieces side by side: neither holds a command, together they would
    assert for_output("id #" + "#[error]x") == "id #\\#[error]x"
    own = "::error title=t::msg ::x"
    assert for_output(own, commands=True) == own


def test_json_text_stays_the_same_json_and_holds_no_raw_character():
    value = {"m": "\x85\u202e\u2066x\x9b[2J\ud800 ##[error]e \U000e0041 ünï"}
    text = for_json_text(json.dumps(value, ensure_ascii=False))
    assert json.loads(text) == value
    assert not re.search("[\x80-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff\U000e0000-\U000e0fff]", text)
    assert "##[" not in text and "ünï" in text
