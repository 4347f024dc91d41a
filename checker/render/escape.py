"""Escaping of student-controlled text for each place hwcheck writes it.

What it is for: one pure function per kind of output, applied where a string
that a student controls (a submission's file name or id, an exception's
message, captured output, a load message quoting their code, a name they
defined, a written answer, anything read back from a scorecard, which could
have been edited) is put into text that something else interprets:

- `for_terminal(s, newlines=True)` — a terminal or a CI log. C0 and C1
  control characters (ESC, BEL, CR, backspace ...), DEL, the bidirectional
  overrides and isolates (U+202A-202E, U+2066-2069, and the marks U+200E,
  U+200F, U+061C), the line and paragraph separators U+2028/2029 and lone
  surrogates (a file name that is not UTF-8) become visible escapes such as
  `\\x1b` or `\\u202e`; tab is kept. With newlines=True a newline (and
  CR LF) is kept as a line break; with newlines=False it is shown as `\\n`,
  so the string stays inside its one line (an id in a progress line).
  Zero-width and other default-ignorable characters (U+00AD, U+200B,
  U+2060-206F, U+FEFF, tags, Hangul fillers ...) and every other format
  character are escaped too: the runner compares text the way .NET's culture
  rules do, which skip them, so `:\\u200b:` would read as `::`. Those that
  writing needs (the zero-width joiner and non-joiner, variation selectors,
  U+034F) are kept, and the command patterns allow them anywhere inside.
  GitHub Actions workflow commands are defused (actions/runner,
  ActionCommand.cs): a line whose text starts with `::` after .NET's
  TrimStart (every Unicode space: NBSP and the ideographic space too) gets
  a `\\` in front, and `##[` anywhere in a line (the runner's v1 form,
  `TryParse`, looks for it at any place) becomes `#\\#[`.
- `for_output(text, color=False, commands=False)` — the last pass over a
  whole text hwcheck prints (`checker.cli` prints through it and nothing
  else): what `for_terminal` does, over the composed lines, so that no two
  pieces put side by side can form what neither holds; with color=True the
  few SGR colour codes hwcheck itself uses stay; with commands=True the
  lines are hwcheck's own workflow commands (their `::` stays).
- `for_json_text(text)` — a JSON document to print: every character the
  terminal escaping would show as an escape becomes a JSON `\\uXXXX`
  escape (JSON text stays valid and means the same), and `##[` is written
  `#\\u0023[`.
- `for_annotation_data(s)` / `for_annotation_property(s)` — the message and
  the `file=`/`title=` values of a `::error ...::message` workflow command:
  the terminal escaping with its newlines kept (so each line the runner
  unescapes is defused as well), then GitHub's own (`%` `\\n` as `%25`
  `%0A`; in properties also `:` `,` as `%3A` `%2C`), so one annotation is
  one line whatever the student wrote.
- `for_gradescope(s)` — a text of Gradescope's results.json (the top-level
  `output`, each test's `output` and `name`; shown as plain text, the
  default `output_format`): the terminal escaping, newlines kept, so a
  student's exception message shows its ESC or U+202E as `\\x1b` /
  `\\u202e` there as everywhere else.
- `for_markdown(s)` — inline Markdown (a table cell, a heading, a list
  item of a step summary): one line, control characters escaped, and the
  characters that make structure (`|` cells, `<` `>` HTML, `(` `)` `!`
  links and images, `` ` `` `*` `~` `&` spans and entities, `\\`) escaped
  with a backslash.
- `for_markdown_code(s)` — the lines of a fenced code block (the caller
  picks a fence longer than any run of backticks): control characters
  escaped, newlines kept.
- `for_xml(s)` — XML text and attribute values (JUnit): the terminal
  escaping plus the code points XML 1.0 cannot hold; ElementTree does the
  `<`/`&` quoting.
- `for_csv_cell(v)` — a spreadsheet cell (grades.csv, answers.csv): control
  characters escaped as for a terminal (newlines kept: the csv module
  quotes them), and a text that a spreadsheet would read as a formula
  (starting, after spaces, with `=` `+` `-` `@` or their full-width forms,
  or starting with tab or CR) gets a `'` in front, the usual defence
  against CSV injection. Numbers are returned as they are.

What it is not: a sanitiser of hwcheck's own text (the report's layout,
ANSI colours it chooses) — callers escape the student's pieces and then
compose; nor a quoting layer for shells, JSON or XML syntax (those have
their own writers).
"""

import re

__all__ = ["for_terminal", "for_output", "for_json_text", "for_annotation_data", "for_annotation_property",
           "for_gradescope", "for_markdown", "for_markdown_code", "for_xml", "for_csv_cell"]

# Everything a terminal, a log viewer or a text renderer may act on instead of showing, and what .NET's culture
# comparison skips: C0 (but tab and newline, handled apart), DEL, C1, every format character (Cf: bidi controls,
# zero-width ones, the BOM, tags ...), the other default-ignorable code points (variation selectors, Hangul
# fillers, U+034F ...), the line and paragraph separators, lone surrogates.
_UNSAFE_CHARS = ("\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2"
                 "\u115f-\u1160\u17b4-\u17b5\u180e\u200b\u200e\u200f\u2028-\u202e\u2060-\u206f\u3164"
                 "\ud800-\udfff\ufeff\uffa0\ufff0-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
                 "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e00ff\U000e01f0-\U000e0fff")
_UNSAFE = re.compile(f"[{_UNSAFE_CHARS}]")
_UNSAFE_ONE_LINE = re.compile(f"[{_UNSAFE_CHARS}\n]")
_NAMED = {"\r": "\\r", "\n": "\\n"}
# Ignorable characters that writing needs and so are kept: the zero-width (non-)joiner (Persian, Indic scripts,
# emoji), variation selectors (emoji, CJK, Mongolian), the combining grapheme joiner. The runner's comparison
# skips them too, so the command patterns below allow them between the characters of a command.
_KEPT = "[\u034f\u180b-\u180d\u180f\u200c\u200d\ufe00-\ufe0f\U000e0100-\U000e01ef]"
# GitHub Actions workflow commands (actions/runner, ActionCommand.cs): `::name ...::` (TryParseV2) at the start of
# a line after TrimStart (every Unicode space; Python's \s holds them all), `##[name ...]` (TryParse) anywhere.
_COMMAND_LINE = re.compile(rf"^((?:\s|{_KEPT})*)(?=:{_KEPT}*:)", re.MULTILINE)
_COMMAND_V1 = re.compile(rf"(#{_KEPT}*)#(?={_KEPT}*\[)")
# The same line start, with hwcheck's own colour codes allowed among the spaces (for_output with color=True).
_OWN_SGR = re.compile(r"\x1b\[(?:0|1|31|32|33)m")
_COMMAND_LINE_COLORED = re.compile(rf"^((?:\s|{_KEPT}|\x1b\[(?:0|1|31|32|33)m)*)(?=:{_KEPT}*:)", re.MULTILINE)
_MARKDOWN_SPECIAL = re.compile(r"([\\`*|<>()!~&])")
_XML_INVALID = re.compile("[\ufffe\uffff]")
_FORMULA_START = ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def _visible(ch):
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _escape_controls(text, newlines):
    text = str(text)
    if newlines:
        text = text.replace("\r\n", "\n")
        return _UNSAFE.sub(lambda m: _visible(m.group()), text)
    return _UNSAFE_ONE_LINE.sub(lambda m: _visible(m.group()), text)


def for_terminal(text, newlines=True):
    """`text` made safe to print: control, bidi and surrogate characters shown as escapes, workflow commands defused.

    newlines=False keeps the result on one line (a newline is shown as `\\n`).
    """
    return _defuse_commands(_escape_controls(text, newlines))


def _defuse_commands(text, line_start=_COMMAND_LINE):
    """No `::` at a (space-trimmed) line start, no `##[` anywhere: what the runner would obey is shown instead."""
    return _COMMAND_V1.sub(r"\1\\#", line_start.sub(lambda m: m.group(1) + "\\", text))


def for_output(text, color=False, commands=False):
    """A whole text hwcheck prints, made safe line by line (see the module's docstring).

    color=True keeps hwcheck's own SGR colour codes (and nothing else of ESC); commands=True is for lines that
    are hwcheck's own workflow commands, whose data was escaped by for_annotation_data: their `::` stays.
    """
    text = str(text)
    if color:
        own = _OWN_SGR.findall(text)
        pieces = [_escape_controls(p, True) for p in _OWN_SGR.split(text)]
        text = "".join(p + (own[i] if i < len(own) else "") for i, p in enumerate(pieces))
    else:
        text = _escape_controls(text, True)
    if commands:
        return _COMMAND_V1.sub(r"\1\\#", text)
    return _defuse_commands(text, _COMMAND_LINE_COLORED if color else _COMMAND_LINE)


def _json_escape(ch):
    data = ch.encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{int.from_bytes(data[i:i + 2], 'big'):04x}" for i in range(0, len(data), 2))


def for_json_text(text):
    """A JSON document to print: unsafe characters as JSON \\u escapes, `##[` as `#\\u0023[` (same JSON value)."""
    text = _UNSAFE.sub(lambda m: _json_escape(m.group()), str(text))
    return _COMMAND_V1.sub(r"\1\\u0023", text)


def for_annotation_data(text):
    """The message of a `::error ...::message` line: one line, GitHub-escaped, and each line the runner
    unescapes from it defused as for_terminal does."""
    text = _defuse_commands(_escape_controls(text, True))
    return text.replace("%", "%25").replace("\n", "%0A")


def for_annotation_property(text):
    """A property value (`file=`, `line=`, `title=`) of a workflow command: also `:` and `,` escaped."""
    return for_annotation_data(text).replace(":", "%3A").replace(",", "%2C")


def for_gradescope(text):
    """A text of Gradescope's results.json: shown as plain text, escaped as for a terminal (newlines kept)."""
    return for_terminal(text, newlines=True)


def for_markdown(text):
    """Inline Markdown text: one line, nothing in it read as table, HTML, link, image or span syntax."""
    text = str(text).replace("\r\n", " ").replace("\r", " ").replace("\n", " ")
    return _MARKDOWN_SPECIAL.sub(r"\\\1", _escape_controls(text, False))


def for_markdown_code(text):
    """The text of a fenced code block: control characters escaped, newlines kept."""
    return _escape_controls(text, True)


def for_xml(text):
    """XML character data or an attribute value: nothing XML 1.0 refuses or a viewer would act on."""
    return _XML_INVALID.sub(lambda m: _visible(m.group()), _escape_controls(text, True))


def for_csv_cell(value):
    """A spreadsheet cell: text escaped, and defused when a spreadsheet would read it as a formula."""
    if not isinstance(value, str):
        return value
    text = _escape_controls(value, True)
    if value[:1] in ("\t", "\r") or text.lstrip()[:1] in _FORMULA_START:
        return "'" + text
    return text
