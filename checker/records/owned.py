"""Which files of an output folder hwcheck wrote, written and read only by their signed records.

What it is for: OUT may be the folder of students' files itself (the README
allows `-o` equal to the download folder), so a file in OUT proves nothing:
a student's `alice.json`, `notes.json`, `.students.json` or folder
`grades.csv` is as much "in OUT" as hwcheck's own. hwcheck trusts only what
it recorded writing: one record per file, signed with a per-account key, in
OUT's state folder (`checker.records.owned_records`: the key, the state folder,
the records, `join_inside`). A folder moved to another account or machine (another
key) is trusted with nothing: `grade` grades again, `--only`/`--resume`/`export`/`merge` refuse it (outfolder).
- `write_text` / `write_json(outdir, name, ...)`: the new file is written whole
  beside the old, then the record, then the file is renamed into place
  (`checker.records.atomic`): a file whose bytes match its record is complete,
  and a failure (a full disk) leaves what was there as it was. Where the name
  is taken by something hwcheck did not write: a regular file (a student's, or
  grades a TA typed) is kept in the state folder's `set-aside/` once the new
  file is whole, and only then replaced (never lost, and `set_aside(outdir)`
  lists them for the TA), a folder, link or
  other thing is left alone and hwcheck's file is written beside it as
  `<stem>.hwcheck-<8 hex>.<ext>` (a name only the key gives), which its record
  points to. So a student's file never blocks, replaces or is taken for one of
  hwcheck's outputs.
- `read_bytes` / `read_json(outdir, name)`: the file's content when its record
  verifies and the bytes read have its hash, else None: whatever sits at the
  name, hwcheck's file or not, decides nothing. `path_of(outdir, name)` is
  where the file of a name is (or would be written).
- `place_kept(outdir, name)`: the path of a file hwcheck creates once and
  then leaves to the TA (manual.csv): a regular file there is the TA's.

What it is not: the key and the records (`checker.records.owned_records`), the listing of a folder OUT
lies in (`checker.records.owned_listing.is_ours`), the JSON or CSV formats (`checker.records.atomic`,
`checker.records.csvfile`), a lock (`checker.records.outfolder.lock_outdir`), or a defence against someone who can
write OUT while hwcheck runs or read the key: it keeps a student's uploaded
files from being taken for hwcheck's.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os

from checker.records.atomic import (copy_whole, discard_temp, dumps_json, encode_text, put_in_place, write_temp)
from checker.records.owned_listing import own_dir_shape
from checker.records.owned_records import (alternate_name, each_record, has_hash, join_inside, load_record, record_of,
                                           record_path, sha256_bytes, split_name, state_dir, write_record)

__all__ = ["set_aside_file", "write_text", "write_json", "read_bytes", "read_json", "path_of", "has_record",
           "place_kept", "folder_of", "changed_bytes", "alternates", "ensure_folder", "remove", "set_aside",
           "keep_copy"]


# ---------------------------------------------------------------------------
# where a name is written
# ---------------------------------------------------------------------------

def _dir(outdir, name, create, kind="folder"):
    """The real folder (relative to OUT) of the folder `name`, or None when it does not exist (create=False)."""
    rec = record_of(outdir, name)
    if rec is not None and rec["kind"] in ("folder", "stage"):
        full = os.path.join(outdir, *rec["path"].split("/"))
        if os.path.isdir(full) and not os.path.islink(full):
            return rec["path"]
    parts = split_name(name)
    parent = "" if len(parts) == 1 else _dir(outdir, "/".join(parts[:-1]), create)
    if parent is None:
        return None
    for last in (parts[-1], alternate_name(name, parts[-1])):
        rel = f"{parent}/{last}" if parent else last
        full = os.path.join(outdir, *rel.split("/"))
        if not os.path.lexists(full):
            if not create:
                return None
            os.makedirs(full, exist_ok=True)
        elif os.path.islink(full) or not os.path.isdir(full):
            continue
        elif parent == "" and last == parts[-1] and not own_dir_shape(full) and os.listdir(full):
            continue  # a folder of someone else's at OUT's top (a student's submission named `gradescope`)
        if create:
            os.makedirs(state_dir(outdir), exist_ok=True)
            write_record(outdir, name, rel, kind, None)
        return rel
    raise OSError(f"{name}: neither it nor {alternate_name(name, parts[-1])} can be a folder of hwcheck's in {outdir}")


def _file(outdir, name, create):
    """(relative path, record) where the file `name` is or is to be written."""
    parts = split_name(name)
    parent = "" if len(parts) == 1 else _dir(outdir, "/".join(parts[:-1]), create)
    rec = record_of(outdir, name)
    if parent is None:
        return None, rec
    for last in (parts[-1], alternate_name(name, parts[-1])):
        rel = f"{parent}/{last}" if parent else last
        full = os.path.join(outdir, *rel.split("/"))
        if not os.path.lexists(full) or (os.path.isfile(full) and not os.path.islink(full)):
            return rel, rec
    raise OSError(f"{name}: neither it nor its alternate name can be a file of hwcheck's in {outdir}")


def _free_name(base):
    """base, else `base.2`, `base.3` ...: the first name not taken (its folder made)."""
    os.makedirs(os.path.dirname(base), exist_ok=True)
    dest, n = base, 1
    while os.path.lexists(dest):
        n += 1
        dest = f"{base}.{n}"
    return dest


def _keep_aside(outdir, rel):
    """Keep the file at rel (not hwcheck's, about to be replaced) in set-aside/ while it stays where it is: a
    hard link, else a whole copy (`copy_whole`); its path there. A failure leaves nothing half-made there."""
    src = os.path.join(outdir, *rel.split("/"))
    dest = _free_name(os.path.join(state_dir(outdir), "set-aside", rel.replace("/", "%")))
    try:
        os.link(src, dest, follow_symlinks=False)
    except OSError as e:
        if e.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", 122)):
            raise
        copy_whole(src, dest)  # no hard links there (another file system, a file system without them)
    return dest


def folder_of(outdir, name):
    """The path of hwcheck's folder `name` (`gradescope`), None when it has none."""
    try:
        rel = _dir(outdir, name, False)
    except OSError:
        return None
    return None if rel is None else os.path.join(outdir, *rel.split("/"))


def changed_bytes(outdir, name):
    """The bytes of the file at the place of hwcheck's file `name` when they are no longer those hwcheck wrote
    (edited since: grades typed into grades.csv), else None (unchanged, or hwcheck wrote none there)."""
    rec = record_of(outdir, name)
    if rec is None or rec["sha256"] is None:
        return None
    full = os.path.join(outdir, *rec["path"].split("/"))
    try:
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        data = f.read()
    return None if sha256_bytes(data) == rec["sha256"] else data


def alternates(outdir):
    """[(name, path)] of hwcheck's files and folders written beside a name someone else's thing holds."""
    return sorted((rec["name"], os.path.join(outdir, *rec["path"].split("/"))) for rec in each_record(outdir)
                  if rec["path"] != rec["name"] and rec["path"].split("/")[-1] != rec["name"].split("/")[-1])


def set_aside(outdir):
    """The names of the files of OUT that hwcheck moved into its state folder's set-aside/ (not its own)."""
    try:
        return sorted(os.listdir(os.path.join(state_dir(outdir), "set-aside")))
    except OSError:
        return []


def path_of(outdir, name):
    """Where the file `name` is (its record's place), else where it would be written."""
    rec = record_of(outdir, name)
    if rec is not None:
        return os.path.join(outdir, *rec["path"].split("/"))
    try:
        rel, _ = _file(outdir, name, False)
    except OSError:
        rel = None
    return os.path.join(outdir, *(rel or name).split("/"))


# ---------------------------------------------------------------------------
# writing and reading
# ---------------------------------------------------------------------------

def write_text(outdir, name, text, *, kind, sid=None, encoding="utf-8"):
    """Write hwcheck's file `name` into OUT (whole beside the old, the record, then renamed into place); its path."""
    data = encode_text(text, encoding)
    rel, old = _file(outdir, name, True)
    full = os.path.join(outdir, *rel.split("/"))
    foreign = os.path.lexists(full) and not (old is not None and old["path"] == rel and has_hash(full, old["sha256"]))
    os.makedirs(state_dir(outdir), exist_ok=True)
    tmp = write_temp(full, text, encoding=encoding)
    kept = None
    try:
        if foreign:  # not hwcheck's (a student's, an older hwcheck's, or edited since): kept aside, still in place
            kept = _keep_aside(outdir, rel)
        write_record(outdir, name, rel, kind, sha256_bytes(data), sid)
        put_in_place(tmp, full)
    except BaseException:
        discard_temp(tmp)
        if kept is not None:  # the file is still where it was: no copy of it is said to be set aside
            with contextlib.suppress(OSError):
                os.unlink(kept)
        raise
    if old is not None and old["path"] != rel:  # written at its alternate name before, free again now
        stale = os.path.join(outdir, *old["path"].split("/"))
        if os.path.isfile(stale) and not os.path.islink(stale) and has_hash(stale, old["sha256"]):
            os.unlink(stale)
    return full


def write_json(outdir, name, obj, *, kind, sid=None):
    """`write_text` of `obj` as hwcheck's JSON (`checker.records.atomic.dumps_json`)."""
    return write_text(outdir, name, dumps_json(obj), kind=kind, sid=sid)


def read_bytes(outdir, name, kind=None):
    """The bytes of hwcheck's file `name` when its record verifies and they have its hash, else None."""
    rec = record_of(outdir, name)
    if rec is None or rec["sha256"] is None or (kind is not None and rec["kind"] != kind):
        return None
    full = os.path.join(outdir, *rec["path"].split("/"))
    try:
        join_inside(outdir, *rec["path"].split("/"))
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW)
    except (OSError, ValueError):
        return None
    with os.fdopen(fd, "rb") as f:
        data = f.read()
    return data if sha256_bytes(data) == rec["sha256"] else None


def read_json(outdir, name, kind=None):
    """The JSON value of hwcheck's file `name` (see `read_bytes`), None when it is not hwcheck's or not JSON."""
    data = read_bytes(outdir, name, kind)
    if data is None:
        return None
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError:
        return None


def remove(outdir, name):
    """Delete hwcheck's file `name` when it is hwcheck's (matching its record); anything else is left alone."""
    rec = record_of(outdir, name)
    if rec is None or rec["sha256"] is None:
        return
    full = os.path.join(outdir, *rec["path"].split("/"))
    if os.path.isfile(full) and not os.path.islink(full) and has_hash(full, rec["sha256"]):
        os.unlink(full)
    try:
        os.unlink(record_path(outdir, name))
    except OSError:
        pass


def set_aside_file(outdir, name):
    """Move the regular file `name` of OUT (not hwcheck's) into the state folder's set-aside/; its new path."""
    dest = _free_name(os.path.join(state_dir(outdir), "set-aside", name.replace("/", "%")))
    os.rename(os.path.join(outdir, *name.split("/")), dest)
    return dest


def keep_copy(outdir, path):
    """Copy the file at `path` (the TA's manual.csv, about to have a row rewritten) into the state folder's
    earlier/, under a name not taken (`manual.csv`, `manual.csv.2`, ...); its path. The copy is whole or not
    there (`checker.records.atomic.copy_whole`: a full disk leaves no empty copy). Not set-aside/: the file
    stays where it is, and set-aside/ lists the files hwcheck moved away."""
    return copy_whole(path, _free_name(os.path.join(state_dir(outdir), "earlier", os.path.basename(path))))


def has_record(outdir, name):
    """Whether hwcheck recorded writing (or creating) `name` in OUT, with this key."""
    return record_of(outdir, name) is not None


def place_kept(outdir, name, record=False):
    """The path of a file hwcheck creates and then leaves to the TA (manual.csv): a regular file at `name` is
    the TA's, however it came; a folder or link there sends it to the alternate name. record: write down where
    it is (when hwcheck is about to write it), so the listing and later runs find it."""
    rec = record_of(outdir, name)
    if rec is not None and rec["kind"] == "kept":
        full = os.path.join(outdir, *rec["path"].split("/"))
        if not os.path.lexists(full) or (os.path.isfile(full) and not os.path.islink(full)):
            return full
    try:
        rel, _ = _file(outdir, name, False)
    except OSError:
        return None
    if rel is None:
        return None
    if record:
        try:
            os.makedirs(state_dir(outdir), exist_ok=True)
            write_record(outdir, name, rel, "kept", None)
        except OSError:
            pass
    return os.path.join(outdir, *rel.split("/"))


# ---------------------------------------------------------------------------
# hwcheck's folders, made before processes write into them
# ---------------------------------------------------------------------------

def ensure_folder(outdir, name, stage=False):
    """Make (and record) hwcheck's folder `name` now, before processes write into it side by side.

    stage=True: a folder whose content hwcheck copies from the students (`checker.records.lms`'s `.lms`): the
    folder is hwcheck's, what is inside it is graded as the students' (`is_ours` says so)."""
    return os.path.join(outdir, *_dir(outdir, name, True, "stage" if stage else "folder").split("/"))
