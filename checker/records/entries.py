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


def scan_entries(folder, skip=None, held=None):
    """([(id, path)], refused [(name, why)], notes [text]) of the submissions in `folder`.

    skip(path): True for an entry that is no submission at all (hwcheck's own output folder inside
    `folder`): it neither is graded nor takes an id from a submission.
    held(id): the name of the entry OUT graded under `id` before (its scorecard's submission, the file or
    folder name without its folder: OUT may have been graded from a copy of this folder), or None; see below.

    A submission is a `.py` or `.ipynb` file (id: the file's stem) or a folder
    (id: its name); hidden entries (starting with '.'), `__pycache__` and other
    files are not (`skipped_entries` names them). An id is the name's canonical
    form (`checker.records.ids.canonical`: NFC, no spaces, quotes or invisible
    characters at its ends), cut to fit its output files' names when over
    `MAX_ID_BYTES` bytes in UTF-8 (ending with a hash of the whole name, so two
    long names that share a beginning stay apart).

    Entries whose names are one name with different suffixes (`bob.py` and `bob.ipynb`, or a folder `bob`)
    would share the bare id `bob`. Ids are stable, since every record of a student hangs on one (their
    scorecard, manual.csv's grades, the roster's row): the entry OUT graded under the bare id before (`held`)
    keeps it; the others, and all of them where none did, are graded under their own forms, a file under its
    whole name (`bob.py`, `bob.ipynb`), a folder as `bob (folder)`; the note says which got what. So a folder
    `dave/` appearing beside `dave.py`, graded as `dave` before, never takes `dave`'s scorecard, typed grades
    or roster row. An entry OUT graded under its own form before keeps that form when alone again. Where OUT
    holds a scorecard of the bare id graded from an entry that none of them is, no one takes the id, and the
    note says its grades and roster row no longer match a submission. A name whose raw report would be
    another's (`bob.raw.py` beside `bob.py`) is graded under its own form too.

    Entries whose ids would differ
    only by letter case, Unicode form, or spaces, quotes and invisible
    characters at their ends (`JDOE.py` beside `jdoe.py`) are all refused,
    each with a reason naming the others: no file is graded first-come under
    a name another student's grades hang on, and no two ids share an output
    file on a case-insensitive disk. So are entries whose own forms would be one
    (`dave.py` beside `dave` and `dave.py.py`). A name with nothing left for an id is
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
    owner = _earlier(held)
    entries, shared = [], []
    suffixed = {k for k, group in found.items() if len(group) > 1}
    suffixed |= {k for k in found if k.endswith(".raw") and k[:-4] in found}
    for k, group in sorted(found.items()):
        if len({stem for stem, _, _ in group}) > 1:  # look-alikes: no one gets the id
            refused += _refuse([path for _, _, path in group])
            continue
        if k not in suffixed:
            _, sid, path = group[0]
            own = _own_form(sid, path)
            # graded under its own form before (beside a namesake since gone), and not under the bare id: kept
            entries.append((own if owner(own) == _name(path) and owner(sid) != _name(path) else sid, path))
            continue
        bare = group[0][1]
        # the entry OUT graded under the bare id before keeps it (never a raw report's namesake's); else no one
        keeper = next((path for _, _, path in group if len(group) > 1 and owner(bare) == _name(path)), None)
        for _, sid, path in group:
            entries.append((bare if path == keeper else _own_form(sid, path), path))
        shared.append((bare, [path for _, _, path in group], keeper))
    clashes = collisions([sid for sid, _ in entries])
    if clashes:  # a clash the own forms made (a file `bob.py.py` beside `bob.py`?): none of them is graded
        taken = {sid for group in clashes.values() for sid in group}
        refused += _refuse([path for sid, path in entries if sid in taken], own_forms=True)
        entries = [(sid, path) for sid, path in entries if sid not in taken]
    notes = [_shared_note(bare, paths, keeper, dict((p, sid) for sid, p in entries), owner(bare))
             for bare, paths, keeper in shared]
    return sorted(entries), sorted(refused), notes


def _name(path):
    """An entry's name as OUT's scorecards are compared with it (`held`): without its folder, NFC."""
    return unicodedata.normalize("NFC", _utf8(os.path.basename(os.path.normpath(path))))


def _earlier(held):
    """owner(id): the name (`_name`) of the entry OUT graded under `id` before, or None (`held` None: none)."""
    cache = {}

    def owner(sid):
        if held is None:
            return None
        if sid not in cache:
            path = held(sid)
            cache[sid] = _name(path) if path else None
        return cache[sid]
    return owner


def _own_form(sid, path):
    """The id of an entry that may not take its bare id: a file's whole name (`bob.py`), a folder's name with
    ` (folder)` (`bob (folder)`; no file's stem ends so but one named to look like it, which then clashes and
    is refused: never graded under another's id)."""
    if os.path.isfile(path):
        return _short_id(os.path.basename(path))
    return _short_id(f"{_utf8(os.path.basename(path))} (folder)")


def _shared_note(bare, paths, keeper, graded, before):
    """The TA's line on entries that would share the bare id `bare`: what each was graded as, or that it was not."""
    names = [_shown(os.path.basename(p)) for p in paths]
    said = []
    for p, n in zip(paths, names):
        if p not in graded:
            said.append(f"{n} is not graded (its own form clashes: see its \"not graded\" line)")
        elif p == keeper:
            said.append(f"{n} keeps {bare!r}, the id it was graded under into the output folder before")
        else:
            said.append(f"{n} is graded as {graded[p]!r}")
    line = f"{' and '.join(names)} would share the output files of {bare!r}: {'; '.join(said)}"
    mine = [n for p, n in zip(paths, names) if _name(p) == before]
    if keeper is None and before is not None:  # OUT's records of the bare id are no entry's now: said, never moved
        line += (f"; {mine[0]} was graded as {bare!r} into the output folder before and cannot keep it" if mine else
                 f"; the output folder graded {bare!r} before from {before!r}, which none of them is, so none takes "
                 f"that id") + (f": the grades manual.csv gives {bare!r} and its roster row no longer match a "
                                f"submission (move them to the id graded now if they are its student's)")
    elif keeper is None and len(paths) > 1:
        line += f"; none of them takes {bare!r}, as none was graded under it before"
    return line + ("; if they are one student's, keep one" if len(paths) > 1 else "")


def _refuse(paths, own_forms=False):
    """[(name, why)] for entries whose ids would be one: each reason names every one of them (own_forms: the ids
    are the forms `_own_form` gave names that would otherwise share one, `dave.py` of `dave.py` and of
    `dave.py.py`)."""
    names = [_shown(os.path.basename(p)) for p in paths]
    shown = names
    if len({unicodedata.normalize("NFC", n) for n in names}) < len(names):
        # the same letters in two Unicode forms look alike on screen: show the code points that differ
        shown = [n.encode("ascii", "backslashreplace").decode("ascii") for n in names]
    both = ", ".join(f"'{n}'" for n in shown[:-1]) + f" and '{shown[-1]}'"
    if own_forms:
        return [(name, f"{both} would have one id (each is graded under its whole name where it shares its bare id "
                       f"with another entry, and those names are then one): none of them is graded; rename or remove "
                       f"all but one") for name in names]
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
