"""The submissions in a folder a TA hands to `hwcheck grade`, and the entries it does not grade.

What it is for: `list_entries(folder)` gives [(id, path)]: a .py or .ipynb
file (id: its stem) or a folder (id: its name), ids in their canonical form
(`checker.records.ids`), cut to fit a file name and always valid Unicode;
`scan_entries(folder)` also gives the entries refused (look-alike ids, a name
with no id left) and why; `skipped_entries(folder)` names the other entries
not graded (a .zip to unpack, a .txt, a hidden file), so a TA can see them.

What it is not: the LMS layouts (Canvas, Moodle, Gradescope exports,
GitHub Classroom: `checker.records.lms` groups their files over this), or grading.
"""

import hashlib
import os
import unicodedata

from checker.errors import HwcheckError
from checker.records.ids import canonical, collisions, key

__all__ = ["SUBMISSION_SUFFIXES", "MAX_ID_BYTES", "list_entries", "scan_entries", "skipped_entries"]

SUBMISSION_SUFFIXES = (".py", ".ipynb")
# a link to a folder is never graded from a batch: a student's archive, unpacked, can hold one to `..` or `/`
# (the other students' files, the TA's, /proc), and the grader copies what it grades before any wall is up
LINKED_FOLDER = ("a link to a folder: not followed (an unpacked archive can link anywhere on this machine); "
                 "copy the folder in to grade it")
MAX_ID_BYTES = 150          # OUTDIR/<id>.raw.json must fit a file name's 255 bytes

_QUIET = {".git", ".hwcheck.lock", ".DS_Store", "__pycache__", "__MACOSX", ".ipynb_checkpoints", "Thumbs.db",
          "desktop.ini"}


def list_entries(folder, notes=None):
    """[(id, path)] of the submissions in `folder`, sorted by id (`scan_entries` without what it refused).

    Sentences for the TA (suffixes kept in ids, submissions refused) are
    appended to `notes` when a list is given.
    """
    entries, refused, said = scan_entries(folder)
    if notes is not None:
        notes.extend(said)
        notes.extend(f"{name}: not graded: {why}" for name, why in refused)
    return entries


def scan_entries(folder, skip=None):
    """([(id, path)], refused [(name, why)], notes [text]) of the submissions in `folder`.

    skip(path): True for an entry that is no submission at all (hwcheck's own output folder inside
    `folder`): it neither is graded nor takes an id from a submission.

    A submission is a `.py` or `.ipynb` file (id: the file's stem) or a folder
    (id: its name); hidden entries (starting with '.'), `__pycache__` and other
    files are not (`skipped_entries` names them). An id is the name's canonical
    form (`checker.records.ids.canonical`: NFC, no spaces, quotes or invisible
    characters at its ends), cut to fit its output files' names when over
    `MAX_ID_BYTES` bytes in UTF-8 (ending with a hash of the whole name, so two
    long names that share a beginning stay apart). Entries whose names are one
    name with different suffixes (`bob.py` and `bob.ipynb`, or a folder `bob`;
    or `bob.raw.py`, whose raw report would be `bob`'s) keep their suffix in
    the id (`bob.py`, `bob.ipynb`), with a note. Entries whose ids would differ
    only by letter case, Unicode form, or spaces, quotes and invisible
    characters at their ends (`JDOE.py` beside `jdoe.py`) are all refused,
    each with a reason naming the others: no file is graded first-come under
    a name another student's grades hang on, and no two ids share an output
    file on a case-insensitive disk. A name with nothing left for an id is
    refused too.
    """
    if not os.path.isdir(folder):
        raise HwcheckError(f"{folder} is not a folder")
    found, refused = {}, []
    for name in sorted(os.listdir(folder)):
        if name.startswith(".") or name == "__pycache__":
            continue
        path = os.path.join(folder, name)
        if skip is not None and skip(path):
            continue
        if os.path.isdir(path) and os.path.islink(path):
            continue  # a link to a folder: skipped_entries says why
        if os.path.isdir(path):
            stem = name
        elif os.path.isfile(path) and name.endswith(SUBMISSION_SUFFIXES):
            stem = os.path.splitext(name)[0]
        else:
            continue
        sid = _short_id(stem)
        if not sid or sid.startswith("."):
            refused.append((_shown(name), "its name leaves no id once the spaces, quotes and invisible characters "
                                          "at its ends are taken off: rename it"))
            continue
        found.setdefault(key(_utf8(stem)), []).append((_utf8(stem), sid, path))  # the whole name, not cut
    entries, notes = [], []
    suffixed = {k for k, group in found.items() if len(group) > 1}
    suffixed |= {k for k in found if k.endswith(".raw") and k[:-4] in found}
    for k, group in sorted(found.items()):
        if len({stem for stem, _, _ in group}) > 1:  # look-alikes: no one gets the id
            refused += _refuse([path for _, _, path in group])
            continue
        if k not in suffixed:
            entries.append((group[0][1], group[0][2]))
            continue
        kept = []
        for _, sid, path in group:
            new = _short_id(os.path.basename(path)) if os.path.isfile(path) else sid
            entries.append((new, path))
            kept.append(new)
        notes.append(f"{' and '.join(_shown(os.path.basename(p)) for _, _, p in group)} would share the output "
                     f"files of {group[0][1]!r}: graded as {', '.join(kept)}; if they are one student's, keep one")
    clashes = collisions([sid for sid, _ in entries])
    if clashes:  # a clash the suffixes made (a file `bob.py.py` beside `bob.py`?): none of them is graded
        taken = {sid for group in clashes.values() for sid in group}
        refused += _refuse([path for sid, path in entries if sid in taken])
        entries = [(sid, path) for sid, path in entries if sid not in taken]
    return sorted(entries), sorted(refused), notes


def _refuse(paths):
    """[(name, why)] for entries whose ids would be one: each reason names every one of them."""
    names = [_shown(os.path.basename(p)) for p in paths]
    shown = names
    if len({unicodedata.normalize("NFC", n) for n in names}) < len(names):
        # the same letters in two Unicode forms look alike on screen: show the code points that differ
        shown = [n.encode("ascii", "backslashreplace").decode("ascii") for n in names]
    both = ", ".join(f"'{n}'" for n in shown[:-1]) + f" and '{shown[-1]}'"
    why = (f"{both} would have one id (names that differ only by letter case, Unicode form, or spaces, quotes or "
           f"invisible characters at their ends are one name to a person and to a case-insensitive disk): none "
           f"of them is graded; rename or remove all but one")
    return [(name, why) for name in names]


def _utf8(name):
    # a name that is not UTF-8 (a Windows zip's cp1252 `café`) is shown as one that is: `caf\xe9`
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _shown(name):
    return _utf8(name)


def _short_id(sid):
    sid = canonical(_utf8(sid))
    raw = sid.encode("utf-8")
    if len(raw) <= MAX_ID_BYTES:
        return sid
    digest = hashlib.sha256(raw).hexdigest()[:10]
    head = raw[:MAX_ID_BYTES - 12].decode("utf-8", "ignore").rstrip()  # never half a character
    return f"{head}~{digest}"


def skipped_entries(folder):
    """[(name, why)] of the entries of `folder` that `list_entries` does not grade, so a TA can see them.

    Version-control folders, caches and the files operating systems leave
    behind are not listed.
    """
    out = []
    for name in sorted(os.listdir(folder)):
        if name in _QUIET:
            continue
        path = os.path.join(folder, name)
        low = name.lower()
        if name.startswith("."):
            if low.endswith(SUBMISSION_SUFFIXES) or os.path.isdir(path):
                out.append((name, "its name starts with '.' (hidden)"))
        elif os.path.isdir(path) and os.path.islink(path):
            out.append((name, LINKED_FOLDER))
        elif os.path.isdir(path) or (os.path.isfile(path) and name.endswith(SUBMISSION_SUFFIXES)):
            continue
        elif not os.path.isfile(path) and not os.path.isdir(path):  # a FIFO, a device, a broken link
            out.append((name, "not a regular file (a broken link?)"))
        elif low.endswith((".zip", ".tar", ".tar.gz", ".tgz", ".rar", ".7z")):
            out.append((name, "an archive: unpack it into a folder of that name to grade it"))
        elif low.endswith((".py", ".ipynb")):
            out.append((name, "rename it to end in lower-case .py or .ipynb"))
        else:
            out.append((name, "not a .py or .ipynb file, nor a folder"))
    return out
