"""The one rule for submission ids: their canonical form, and when two of them are one.

What it is for: a submission id is the name a file, a folder or an LMS gave a
student's work, and every record of that student hangs on it (OUTDIR/<id>.json,
manual.csv's rows, the roster's match, canvas.csv's row). A student chooses
those names, so two ids must never be told apart only by what a person reading
them cannot see or what a file system ignores:

- `canonical(text)`: NFC, with no spaces, control or invisible characters
  (U+200F, U+FEFF, fillers, variation selectors) at either end, a control
  character inside written as its escape (one line wherever an id is written),
  and no `'` at the start (hwcheck writes `'` before a CSV cell starting with `=`, so an id
  never starts with one of its own). The id a submission gets.
- `key(text)`: what an id is compared by: the canonical form in NFKC,
  case-folded, invisible characters removed, spaces squeezed. Two ids with one
  key collide: on macOS, Windows or FAT their output files would be one file,
  and to a TA they are one name.
- `collisions(names)`: {key: [names]} of the keys held by more than one name.
- `blank(ch)`: whether a character shows nothing.
- `file_name(sid)`: the name an id's output files are made of (OUTDIR/<name>.json,
  gradescope/<name>/), one that every file system holds as itself: the id
  where it is one, else escaped as `%XX` (the characters Windows refuses,
  `<>:"/\\|?*` and controls; `%` itself; a trailing dot; the first letter of
  a Windows device name: CON, PRN, AUX, NUL, COM0-9, LPT0-9, with any
  extension), cut with a hash beyond FILE_NAME_BYTES. Distinct ids (distinct
  keys) give names that stay distinct on a case-insensitive disk. The id
  itself (grades.csv's row, the roster's match) is not changed: a student
  named `CON` or `a:b` is graded as such, and OUTDIR can be copied to Windows.

- `spreadsheet_forms(sid)`: the other texts a spreadsheet (Excel, LibreOffice, Google Sheets) may save an id
  as, having read it as a number when it opened the CSV file: `1e5` as `100000` or `1.00E+05`, `1.50` as
  `1.5`, `+5` and `5.` as `5`, `0012345` as `12345`, `123456789012` as `1.23457E+11`, `1,234` as `1234`.
  `checker.records.manual` names a row whose id is such a form of another graded id as no one's.

What it is not: a reader of folders (`checker.records.entries`, `checker.records.lms`) or a
matcher of rosters and manual rows (`checker.records.roster`, `checker.records.manual`), which
apply this rule.
"""

import collections
import hashlib
import math
import re
import unicodedata
from decimal import Decimal

__all__ = ["canonical", "key", "collisions", "blank", "file_name", "FILE_NAME_BYTES", "spreadsheet_forms"]

# letters and marks that show nothing (Hangul and Braille fillers, Mongolian and Khmer vowel marks, CGJ)
_BLANK_EXTRA = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f\u17b4\u17b5\u180e")


def blank(ch):
    """True for a character that shows nothing: spaces, controls, format characters, fillers, selectors."""
    if ch.isspace() or ch in _BLANK_EXTRA:
        return True
    if "\ufe00" <= ch <= "\ufe0f" or "\U000e0100" <= ch <= "\U000e01ef":  # variation selectors
        return True
    return unicodedata.category(ch) in ("Cc", "Cf", "Zs", "Zl", "Zp", "Cs", "Co", "Cn")


_CONTROL = re.compile("[\x00-\x1f\x7f]")
_SHOWN = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def canonical(text):
    """The id of a name: NFC, no blank characters at its ends and no `'` (or several) at its start, and a
    control character inside it written as its escape (`a\\nb` for a file named `a`, newline, `b`): an id is
    one line wherever it is written (a raw newline in a grades.csv cell ends the row for Excel in a `;` locale,
    an attacker's probe, h42), and it reads as the terminal shows it."""
    text = unicodedata.normalize("NFC", str(text))
    start, end = 0, len(text)
    while start < end and (blank(text[start]) or text[start] == "'"):
        start += 1
    while end > start and blank(text[end - 1]):
        end -= 1
    return _CONTROL.sub(lambda m: _SHOWN.get(m.group(), f"\\x{ord(m.group()):02x}"), text[start:end])


def key(text):
    """What two ids are compared by: equal keys are one name to a person and to a case-insensitive disk."""
    text = unicodedata.normalize("NFKC", canonical(text))
    text = "".join(" " if ch.isspace() else ch for ch in text if ch.isspace() or not blank(ch))
    text = " ".join(text.split())
    return unicodedata.normalize("NFKC", text.casefold())


def collisions(names):
    """{key: [names]} of every key more than one of `names` has (in the order given)."""
    groups = collections.defaultdict(list)
    for name in names:
        groups[key(name)].append(name)
    return {k: v for k, v in groups.items() if len(v) > 1}


# Windows's device names: a file `CON.json` (any case, any extension, spaces before the dot) is the device
_DEVICES = frozenset({"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$", "CLOCK$"}
                     | {f"{p}{d}" for p in ("COM", "LPT") for d in "0123456789\u00b9\u00b2\u00b3"})
_ESCAPED = frozenset('<>:"/\\|?*%') | frozenset(map(chr, range(32))) | {"\x7f"}
FILE_NAME_BYTES = 200  # OUTDIR/<name>.raw.json within a file name's 255 bytes


def _escape(ch):
    return "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))


def file_name(sid):
    """The name of `sid`'s output files: `sid` where every file system (Windows, macOS, FAT, Linux) holds it
    as itself, else `sid` with `%XX` escapes (see the module's docstring). One-to-one: `%` is always escaped."""
    sid = str(sid)
    out = "".join(_escape(ch) if ch in _ESCAPED else ch for ch in sid)
    end = len(out.rstrip(". "))
    out = out[:end] + "".join(_escape(ch) for ch in out[end:])  # Windows drops a trailing dot or space
    if out and out.split(".", 1)[0].rstrip(" ").upper() in _DEVICES:
        out = _escape(out[0]) + out[1:]
    if len(out.encode("utf-8", "surrogatepass")) > FILE_NAME_BYTES:  # escapes made it long: cut, with a hash
        digest = hashlib.sha256(sid.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        head = out.encode("utf-8", "surrogatepass")[:FILE_NAME_BYTES - 16].decode("utf-8", "ignore")
        out = re.sub(r"%[0-9A-F]?$", "", head) + f"%~{digest}"  # never half an escape; `%~` is no escape
    return out


# what a spreadsheet opening a CSV file reads as a number (rather than text): a decimal number with an optional
# sign, point and exponent (`1e5`, `+5`, `5.`, `.5`, `1.50`, `0012345`); one with thousands separators
# (`1,234`, a quoted cell); one with a decimal comma (`1,50`, in a `;` locale such as German or French)
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_GROUPED = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?")
_COMMA = re.compile(r"[+-]?\d*,\d+")


def _plain(x):
    """A number as a spreadsheet saves it in full: no exponent, no trailing zeros (`100000`, `1.5`)."""
    if x.is_integer():
        return str(int(x))
    return format(Decimal(repr(x)), "f")


def _scientific(x, places):
    """`1.23457E+11` (Excel's General format for a number too long for its cell: six digits, zeros dropped)."""
    mantissa, _, exponent = f"{x:.{places}E}".partition("E")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}E{exponent}"


def spreadsheet_forms(sid):
    """The texts other than `sid` itself that a spreadsheet may save `sid` as after reading it as a number: in
    full (`1e5` -> `100000`; `1.50` -> `1.5`; `+5`, `5.`, `005` -> `5`; precision beyond 15 digits lost:
    `123456789012345678` -> `123456789012346000`), in Excel's General format (ten significant digits; past
    eleven digits, `1.23457E+11`), and in the scientific format a spreadsheet gives a number typed in it
    (`1.00E+05`, `1E+05`). An id a spreadsheet reads as text (`alice`, `2026-01`) has none. Dates are not
    among them: which text a spreadsheet reads as a date, and how it writes it back, is its locale's."""
    text = canonical(sid)
    read = []  # (the number as Python reads it, whether the spreadsheet's locale writes a decimal comma)
    if _NUMBER.fullmatch(text):
        read.append((text, False))
    if _GROUPED.fullmatch(text):  # `1,234`: 1234 where `,` groups thousands
        read.append((text.replace(",", ""), False))
    if _COMMA.fullmatch(text):  # ... and 1.234 where it is the decimal comma
        read.append((text.replace(",", "."), True))
    forms = set()
    for number, comma in read:
        try:
            x = float(number)
        except ValueError:
            continue
        if not math.isfinite(x):
            continue
        shown = {_plain(x), _plain(float(f"{x:.15g}")), _scientific(x, 5), _scientific(x, 2), f"{x:.2E}"}
        if not x.is_integer():
            shown.add(_plain(float(f"{x:.10g}")))  # Excel's General format: ten significant digits
        forms |= {f.replace(".", ",") for f in shown} if comma else shown
    forms.discard(text)
    forms.discard(sid)
    return forms
