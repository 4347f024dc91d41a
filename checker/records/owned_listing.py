"""Which entries of a folder are hwcheck's outputs: the listing of a folder that OUT lies in, and a scorecard's maker.

What it is for: OUT may be the folder of students' files itself, so the listing of submissions
(`checker.records.entries`) asks `is_ours(outdir, path)`: whether an entry is OUT itself, its state
folder, a file or folder hwcheck recorded writing there (a file only with the bytes it wrote), or another
output folder of hwcheck's (this key's state folder, an older hwcheck's lock or `gradescope/` folder).
`written_by_hwcheck(path)` tells whether a scorecard file is one hwcheck wrote and left unchanged.

What it is not: the records themselves (`checker.records.owned_records`), nor writing or reading by
them (`checker.records.owned`).
"""

from __future__ import annotations

import os

from checker.records.atomic import is_temp_name
from checker.records.owned_records import has_hash, load_record, sha256_bytes, state_dir

__all__ = ["is_ours", "written_by_hwcheck", "own_dir_shape"]


def own_dir_shape(path):
    """An older hwcheck's gradescope/ folder: every entry a folder holding only results.json."""
    try:
        names = os.listdir(path)
        return bool(names) and all(
            not os.path.islink(os.path.join(path, n)) and
            {m for m in os.listdir(os.path.join(path, n)) if not is_temp_name(m)} <= {"results.json"}
            for n in names)
    except OSError:
        return False


def _inside(path, root):
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _older_outdir(path):
    """A folder that is an output folder of hwcheck's: its state folder (this key), or an older hwcheck's lock."""
    try:
        names = os.listdir(path)
    except OSError:
        return False
    return os.path.basename(state_dir(path)) in names or ".hwcheck.lock" in names


_index_cache = {}


def _all_records(outdir):
    """Every verified record of OUT, read once per state of the records folder (the listing asks per entry)."""
    folder = os.path.join(state_dir(outdir), "records")
    try:
        st = os.stat(folder)
    except OSError:
        return []
    stamp = (os.path.realpath(folder), st.st_mtime_ns, st.st_ino)
    if _index_cache.get("stamp") != stamp:
        recs = []
        for n in sorted(os.listdir(folder)):
            rec = load_record(os.path.join(folder, n)) if n.endswith(".json") else None
            if rec is not None:
                recs.append(rec)
        _index_cache.clear()
        _index_cache.update(stamp=stamp, records=recs)
    return _index_cache["records"]


def written_by_hwcheck(path, levels=3):
    """Whether the file at `path` is one hwcheck wrote into an output folder and left unchanged: (OUT, True) when
    a verified record of the nearest output folder above it (at most `levels` folders up: OUT/alice.json,
    OUT/gradescope/alice/results.json) names this very file with these very bytes; (OUT, False) when that folder
    records no such file (a student's upload, or one edited since); (None, None) when no output folder of this
    key holds it (a scorecard saved elsewhere: nothing to tell)."""
    real = os.path.realpath(path)
    folder = os.path.dirname(real)
    for _ in range(levels):
        if os.path.isdir(state_dir(folder)):
            rel = os.path.relpath(real, folder).replace(os.sep, "/")
            for rec in _all_records(folder):
                if rec["path"] == rel and rec["sha256"] is not None:
                    try:
                        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW)
                    except OSError:
                        return folder, False
                    with os.fdopen(fd, "rb") as f:
                        return folder, sha256_bytes(f.read()) == rec["sha256"]
            return folder, False
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return None, None


def is_ours(outdir, path):
    """True when `path` (an entry of the folder being graded) is hwcheck's: OUT, its state folder or anything in
    them that hwcheck recorded writing (a file with its bytes, a folder), or another output folder of hwcheck's."""
    out = os.path.realpath(outdir)
    real = os.path.realpath(path)
    if real == out or _inside(real, os.path.realpath(state_dir(outdir))):
        return True
    if _inside(real, out):
        rel = os.path.relpath(real, out).replace(os.sep, "/")
        for rec in _all_records(outdir):
            if not (rec["path"] == rel or rel.startswith(rec["path"] + "/")):
                continue
            if rec["kind"] == "stage":  # the folder is hwcheck's, the submissions copied inside it are not
                if rec["path"] == rel:
                    return True
                continue
            if rec["kind"] in ("folder", "kept") or (rec["path"] == rel and has_hash(real, rec["sha256"])):
                return True
    if os.path.isdir(real) and not os.path.islink(path):
        return _older_outdir(real) or (os.path.basename(real) == "gradescope" and own_dir_shape(real))
    return False
