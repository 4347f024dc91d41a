"""The submissions in a folder a TA hands to `hwcheck grade`, and the entries it does not grade.

What it is for: `list_entries(folder)` gives [(id, path)]: a .py or .ipynb
file (id: its stem) or a folder (id: its name), ids cut to fit a file name
and always valid Unicode; `skipped_entries(folder)` names what is not graded
(a .zip to unpack, a .txt, a hidden file), so a TA can see it.

What it is not: the LMS layouts (Canvas, Moodle, Gradescope exports,
GitHub Classroom: `checker.lms` groups their files over this), or grading.
"""

import collections
import hashlib
import os

from checker.errors import HwcheckError

__all__ = ["SUBMISSION_SUFFIXES", "MAX_ID_BYTES", "list_entries", "skipped_entries"]

SUBMISSION_SUFFIXES = (".py", ".ipynb")
MAX_ID_BYTES = 150          # OUTDIR/<id>.raw.json must fit a file name's 255 bytes

_QUIET = {".git", ".hwcheck.lock", ".DS_Store", "__pycache__", "__MACOSX", ".ipynb_checkpoints", "Thumbs.db",
          "desktop.ini"}


def list_entries(folder, notes=None):
    """[(id, path)] of the submissions in `folder`, sorted by id.

    A submission is a `.py` or `.ipynb` file (id: the file's stem) or a folder
    (id: its name). An id too long for its output files' names (over
    `MAX_ID_BYTES` bytes in UTF-8) is cut and ends with a hash of the whole
    name, so two long names that share a beginning stay apart. Hidden entries
    (starting with '.'), `__pycache__` and other files are skipped. Entries
    that would share an id (`bob.py` and `bob.ipynb`, or a folder `bob`; or
    `bob.raw.py`, whose raw report would be `bob`'s) keep their suffix in the
    id (`bob.py`, `bob.ipynb`), and a sentence saying so is appended to
    `notes` when a list is given.
    """
    if not os.path.isdir(folder):
        raise HwcheckError(f"{folder} is not a folder")
    found = {}
    for name in sorted(os.listdir(folder)):
        if name.startswith(".") or name == "__pycache__":
            continue
        path = os.path.join(folder, name)
        if os.path.isdir(path):
            sid = name
        elif os.path.isfile(path) and name.endswith(SUBMISSION_SUFFIXES):
            sid = os.path.splitext(name)[0]
        else:
            continue
        if not sid or sid.startswith("."):
            continue
        found.setdefault(_short_id(sid), []).append(path)
    clashing = {sid for sid, paths in found.items() if len(paths) > 1}
    clashing |= {sid for sid in found if sid.endswith(".raw") and sid[:-4] in found}
    entries = []
    for sid, paths in sorted(found.items()):
        if sid not in clashing:
            entries.append((sid, paths[0]))
            continue
        kept = []
        for path in paths:
            new = _short_id(os.path.basename(path)) if os.path.isfile(path) else sid
            entries.append((new, path))
            kept.append(new)
        if notes is not None:
            notes.append(f"{' and '.join(os.path.basename(p) for p in paths)} would share the output files of "
                         f"{sid!r}: graded as {', '.join(kept)}; if they are one student's, keep one")
    ids = collections.Counter(sid for sid, _ in entries)
    if any(n > 1 for n in ids.values()):  # a clash the renaming made (a file `bob.py` named `bob.py.py`?)
        sid = next(s for s, n in ids.items() if n > 1)
        raise HwcheckError(f"two submissions would share the output files of {sid!r}; rename one")
    return sorted(entries)


def _short_id(sid):
    # a name that is not UTF-8 (a Windows zip's cp1252 `café`) gets an id that is: `caf\xe9`
    sid = os.fsencode(sid).decode("utf-8", "backslashreplace")
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
        elif os.path.isdir(path) or (os.path.isfile(path) and name.endswith(SUBMISSION_SUFFIXES)):
            continue
        elif low.endswith((".zip", ".tar", ".tar.gz", ".tgz", ".rar", ".7z")):
            out.append((name, "an archive: unpack it into a folder of that name to grade it"))
        elif low.endswith((".py", ".ipynb")):
            out.append((name, "rename it to end in lower-case .py or .ipynb"))
        elif not os.path.isfile(path) and not os.path.isdir(path):
            out.append((name, "not a regular file (a broken link?)"))
        else:
            out.append((name, "not a .py or .ipynb file, nor a folder"))
    return out
