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
  so the string stays inside its one line (an id in a progress line). A
  line whose text starts with `::` or `##[` (a GitHub Actions workflow
  command, which the runner reads from any line of a step's output after
  trimming spaces) gets a `\\` in front, so it is printed, not obeyed.
- `for_annotation_data(s)` / `for_annotation_property(s)` — the message and
  the `file=`/`title=` values of a `::error ...::message` workflow command:
  the terminal escaping, then GitHub's own (`%` `\\r` `\\n` as `%25` `%0D`
  `%0A`; in properties also `:` `,` as `%3A` `%2C`), so one annotation is
  one line whatever the student wrote.
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

__all__ = ["for_terminal", "for_annotation_data", "for_annotation_property", "for_markdown",
           "for_markdown_code", "for_xml", "for_csv_cell"]

# Everything a terminal, a log viewer or a text renderer may act on instead of showing. \n is handled apart.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                     "\ud800-\udfff]")
_UNSAFE_ONE_LINE = re.compile(_UNSAFE.pattern[:-1] + "\n]")
_NAMED = {"\r": "\\r", "\n": "\\n"}
# A GitHub Actions workflow command: `::name ...::` (v2) or `##[name ...]` (v1), after leading spaces.
_COMMAND_LINE = re.compile(r"^(\s*)(?=::|##\[)", re.MULTILINE)
_MARKDOWN_SPECIAL = re.compile(r"([\\`*|<>()!~&])")
_XML_INVALID = re.compile("[\ufffe\uffff]")
_FORMULA_START = ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def _visible(ch):
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


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
    return _COMMAND_LINE.sub(lambda m: m.group(1) + "\\", _escape_controls(text, newlines))


def for_annotation_data(text):
    """The message of a `::error ...::message` line: one line, GitHub-escaped."""
    text = str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return _escape_controls(text, False)


def for_annotation_property(text):
    """A property value (`file=`, `line=`, `title=`) of a workflow command: also `:` and `,` escaped."""
    return for_annotation_data(text).replace(":", "%3A").replace(",", "%2C")


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
