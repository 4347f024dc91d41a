"""The one rule for submission ids: their canonical form, and when two of them are one.

What it is for: a submission id is the name a file, a folder or an LMS gave a
student's work, and every record of that student hangs on it (OUTDIR/<id>.json,
manual.csv's rows, the roster's match, canvas.csv's row). A student chooses
those names, so two ids must never be told apart only by what a person reading
them cannot see or what a file system ignores:

- `canonical(text)`: NFC, with no spaces, control or invisible characters
  (U+200F, U+FEFF, fillers, variation selectors) at either end and no `'` at
  the start (hwcheck writes `'` before a CSV cell starting with `=`, so an id
  never starts with one of its own). The id a submission gets.
- `key(text)`: what an id is compared by: the canonical form in NFKC,
  case-folded, invisible characters removed, spaces squeezed. Two ids with one
  key collide: on macOS, Windows or FAT their output files would be one file,
  and to a TA they are one name.
- `collisions(names)`: {key: [names]} of the keys held by more than one name.
- `blank(ch)`: whether a character shows nothing.

What it is not: a reader of folders (`checker.entries`, `checker.lms`) or a
matcher of rosters and manual rows (`checker.roster`, `checker.manual`), which
apply this rule.
"""

import collections
import unicodedata

__all__ = ["canonical", "key", "collisions", "blank"]

# letters and marks that show nothing (Hangul and Braille fillers, Mongolian and Khmer vowel marks, CGJ)
_BLANK_EXTRA = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f\u17b4\u17b5\u180e")


def blank(ch):
    """True for a character that shows nothing: spaces, controls, format characters, fillers, selectors."""
    if ch.isspace() or ch in _BLANK_EXTRA:
        return True
    if "\ufe00" <= ch <= "\ufe0f" or "\U000e0100" <= ch <= "\U000e01ef":  # variation selectors
        return True
    return unicodedata.category(ch) in ("Cc", "Cf", "Zs", "Zl", "Zp", "Cs", "Co", "Cn")


def canonical(text):
    """The id of a name: NFC, no blank characters at its ends and no `'` (or several) at its start."""
    text = unicodedata.normalize("NFC", str(text))
    start, end = 0, len(text)
    while start < end and (blank(text[start]) or text[start] == "'"):
        start += 1
    while end > start and blank(text[end - 1]):
        end -= 1
    return text[start:end]


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
