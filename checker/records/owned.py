"""Which files of an output folder hwcheck wrote: a signed record of each, and writing and reading by it.

What it is for: OUT may be the folder of students' files itself (the README
allows `-o` equal to the download folder), so a file in OUT proves nothing:
a student's `alice.json`, `notes.json`, `.students.json` or folder
`grades.csv` is as much "in OUT" as hwcheck's own. hwcheck trusts only what
this module says it wrote:

- a per-account secret key (`HWCHECK_KEY`, else the file `outdir.key` in
  `$HWCHECK_STATE_DIR`, `$XDG_STATE_HOME/hwcheck` or `~/.local/state/hwcheck`,
  created 0600 on first use) signs (HMAC-SHA256) one record per file hwcheck
  writes: its name (`grades.csv`, `alice.json`, `gradescope/alice/results.json`),
  where it really is, and the sha256 of the bytes written. Records live in
  OUT's state folder, `.hwcheck-<12 hex>`, a name derived from the key, so no
  student can have put anything there, nor block it. A folder moved to another account or machine (another
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
  where the file of a name is (or would be written), `records(outdir, kind)`
  the names hwcheck wrote of one kind (the scorecards, for `checker.records.outfolder`).
- `place_kept(outdir, name)`: the path of a file hwcheck creates once and
  then leaves to the TA (manual.csv): a regular file there is the TA's.
- `is_ours(outdir, path)`: whether an entry of the folder being graded is one
  of OUT's (OUT itself, its state folder, a file or folder recorded here, an
  older output folder), for the listing of submissions.
- `join_inside(folder, *parts)`: the one way a path is built from a
  submission id: every part a plain name (no separator, not `.`/`..`, no NUL),
  and the folder it lands in, links resolved, inside `folder` (ValueError
  otherwise).

What it is not: the JSON or CSV formats (`checker.records.atomic`, `checker.records.csvfile`),
a lock (`checker.records.outfolder.lock_outdir`), or a defence against someone who can
write OUT while hwcheck runs or read the key: it keeps a student's uploaded
files from being taken for hwcheck's.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import json
import os
import secrets

from checker.records.atomic import (copy_whole, discard_temp, dumps_json, encode_text, is_temp_name, put_in_place,
                                    write_temp, write_text_atomic)

__all__ = ["join_inside", "state_dir", "set_aside_file", "write_text", "write_json", "read_bytes", "read_json", "path_of",
           "written_by_hwcheck",
           "records", "has_record", "place_kept", "folder_of", "changed_bytes", "alternates", "ensure_folder",
           "remove", "is_ours", "set_aside", "sha256_bytes"]

_KEY_FILE = "outdir.key"
_key_cache = {}


# ---------------------------------------------------------------------------
# paths built from names a student chose
# ---------------------------------------------------------------------------

def _plain(part):
    part = str(part)
    return (part not in ("", ".", "..") and "/" not in part and "\0" not in part
            and (os.altsep is None or os.altsep not in part))


def join_inside(folder, *parts):
    """folder/part/... where every part is a plain name and the result stays inside `folder` (links resolved).

    Raises ValueError naming the part otherwise (an id such as `../x` or `a/b`).
    """
    for part in parts:
        if not _plain(part):
            raise ValueError(f"{part!r} is not a plain file name: it would leave {folder}")
    path = os.path.join(folder, *map(str, parts))
    root = os.path.realpath(folder)
    parent = os.path.realpath(os.path.dirname(path))
    if parent != root and not parent.startswith(root.rstrip(os.sep) + os.sep):
        raise ValueError(f"{os.path.join(*map(str, parts))!r} would be written outside {folder} (a link?)")
    return path


def _split(name):
    parts = name.split("/")
    for part in parts:
        if not _plain(part):
            raise ValueError(f"{name!r}: {part!r} is not a plain file name")
    return parts


# ---------------------------------------------------------------------------
# the key and the state folder
# ---------------------------------------------------------------------------

def _state_dirs():
    from checker.running.submission_files import state_dirs
    return state_dirs()


def _key_from(folder):
    os.makedirs(folder, mode=0o700, exist_ok=True)
    st = os.stat(folder)
    if st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise PermissionError(f"{folder} is not this user's own")
    path = os.path.join(folder, _KEY_FILE)
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32) + "\n")
        try:
            os.link(tmp, path)  # never replaces a key another process made meanwhile
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    with open(path, encoding="ascii") as f:
        key = f.read().strip()
    if len(key) < 32:
        raise ValueError(f"{path} holds no key")
    return key.encode()


def _key():
    env = os.environ.get("HWCHECK_KEY")
    if env:
        return hashlib.sha256(env.encode()).digest()
    cached = _key_cache.get("key")
    if cached is None:
        cached = None
        for folder in _state_dirs():
            try:
                cached = _key_from(folder)
                break
            except (OSError, ValueError):
                continue
        if cached is None:  # nowhere to keep one: this process trusts only what it writes itself
            cached = secrets.token_bytes(32)
        _key_cache["key"] = cached
    return cached


def _mac(*fields):
    return hmac.new(_key(), json.dumps(fields, ensure_ascii=True).encode(), hashlib.sha256).hexdigest()


def state_dir(outdir):
    """OUT's state folder (`.hwcheck-<hex>`, named by the key): records, the lock, files set aside."""
    return os.path.join(outdir, ".hwcheck-" + _mac("state folder")[:12])


def _alternate(name, last):
    stem, ext = os.path.splitext(last)
    return f"{stem}.hwcheck-{_mac('alternate', name)[:8]}{ext}"


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------

def _record_path(outdir, name):
    return os.path.join(state_dir(outdir), "records", hashlib.sha256(name.encode("utf-8", "surrogateescape"))
                        .hexdigest()[:40] + ".json")


def _load_record(path):
    try:
        with open(path, encoding="utf-8") as f:
            rec = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or not all(isinstance(rec.get(k), str) for k in ("name", "path", "kind", "mac")):
        return None
    sha = rec.get("sha256")
    if sha is not None and not isinstance(sha, str):
        return None
    sid = rec.get("id")
    if not hmac.compare_digest(rec["mac"], _mac(rec["name"], rec["path"], rec["kind"], sha, sid)):
        return None
    try:
        _split(rec["path"])
        _split(rec["name"])
    except ValueError:
        return None
    return rec


def _record(outdir, name):
    rec = _load_record(_record_path(outdir, name))
    return rec if rec is not None and rec["name"] == name else None


def _write_record(outdir, name, path, kind, sha, sid=None):
    rec = {"name": name, "path": path, "kind": kind, "sha256": sha, "id": sid,
           "mac": _mac(name, path, kind, sha, sid)}
    write_text_atomic(_record_path(outdir, name), dumps_json(rec))


def records(outdir, kind):
    """[(name, id)] of the files of `kind` hwcheck recorded writing into OUT (their content is checked on reading)."""
    folder = os.path.join(state_dir(outdir), "records")
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    out = []
    for n in names:
        if n.endswith(".json") and not n.startswith("."):
            rec = _load_record(os.path.join(folder, n))
            if rec is not None and rec["kind"] == kind:
                out.append((rec["name"], rec.get("id")))
    return sorted(out)


# ---------------------------------------------------------------------------
# where a name is written
# ---------------------------------------------------------------------------

def _own_dir_shape(path):
    """An older hwcheck's gradescope/ folder: every entry a folder holding only results.json."""
    try:
        names = os.listdir(path)
        return bool(names) and all(
            not os.path.islink(os.path.join(path, n)) and
            {m for m in os.listdir(os.path.join(path, n)) if not is_temp_name(m)} <= {"results.json"}
            for n in names)
    except OSError:
        return False


def _dir(outdir, name, create, kind="folder"):
    """The real folder (relative to OUT) of the folder `name`, or None when it does not exist (create=False)."""
    rec = _record(outdir, name)
    if rec is not None and rec["kind"] in ("folder", "stage"):
        full = os.path.join(outdir, *rec["path"].split("/"))
        if os.path.isdir(full) and not os.path.islink(full):
            return rec["path"]
    parts = _split(name)
    parent = "" if len(parts) == 1 else _dir(outdir, "/".join(parts[:-1]), create)
    if parent is None:
        return None
    for last in (parts[-1], _alternate(name, parts[-1])):
        rel = f"{parent}/{last}" if parent else last
        full = os.path.join(outdir, *rel.split("/"))
        if not os.path.lexists(full):
            if not create:
                return None
            os.makedirs(full, exist_ok=True)
        elif os.path.islink(full) or not os.path.isdir(full):
            continue
        elif parent == "" and last == parts[-1] and not _own_dir_shape(full) and os.listdir(full):
            continue  # a folder of someone else's at OUT's top (a student's submission named `gradescope`)
        if create:
            os.makedirs(state_dir(outdir), exist_ok=True)
            _write_record(outdir, name, rel, kind, None)
        return rel
    raise OSError(f"{name}: neither it nor {_alternate(name, parts[-1])} can be a folder of hwcheck's in {outdir}")


def _file(outdir, name, create):
    """(relative path, record) where the file `name` is or is to be written."""
    parts = _split(name)
    parent = "" if len(parts) == 1 else _dir(outdir, "/".join(parts[:-1]), create)
    rec = _record(outdir, name)
    if parent is None:
        return None, rec
    for last in (parts[-1], _alternate(name, parts[-1])):
        rel = f"{parent}/{last}" if parent else last
        full = os.path.join(outdir, *rel.split("/"))
        if not os.path.lexists(full) or (os.path.isfile(full) and not os.path.islink(full)):
            return rel, rec
    raise OSError(f"{name}: neither it nor its alternate name can be a file of hwcheck's in {outdir}")


def _matches(full, sha):
    try:
        with open(full, "rb") as f:
            return sha256_bytes(f.read()) == sha
    except OSError:
        return False


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
    rec = _record(outdir, name)
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
    folder = os.path.join(state_dir(outdir), "records")
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    out = []
    for n in names:
        rec = _load_record(os.path.join(folder, n)) if n.endswith(".json") else None
        if rec is not None and rec["path"] != rec["name"] and rec["path"].split("/")[-1] != rec["name"].split("/")[-1]:
            out.append((rec["name"], os.path.join(outdir, *rec["path"].split("/"))))
    return sorted(out)


def set_aside(outdir):
    """The names of the files of OUT that hwcheck moved into its state folder's set-aside/ (not its own)."""
    try:
        return sorted(os.listdir(os.path.join(state_dir(outdir), "set-aside")))
    except OSError:
        return []


def path_of(outdir, name):
    """Where the file `name` is (its record's place), else where it would be written."""
    rec = _record(outdir, name)
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
    foreign = os.path.lexists(full) and not (old is not None and old["path"] == rel and _matches(full, old["sha256"]))
    os.makedirs(state_dir(outdir), exist_ok=True)
    tmp = write_temp(full, text, encoding=encoding)
    kept = None
    try:
        if foreign:  # not hwcheck's (a student's, an older hwcheck's, or edited since): kept aside, still in place
            kept = _keep_aside(outdir, rel)
        _write_record(outdir, name, rel, kind, sha256_bytes(data), sid)
        put_in_place(tmp, full)
    except BaseException:
        discard_temp(tmp)
        if kept is not None:  # the file is still where it was: no copy of it is said to be set aside
            with contextlib.suppress(OSError):
                os.unlink(kept)
        raise
    if old is not None and old["path"] != rel:  # written at its alternate name before, free again now
        stale = os.path.join(outdir, *old["path"].split("/"))
        if os.path.isfile(stale) and not os.path.islink(stale) and _matches(stale, old["sha256"]):
            os.unlink(stale)
    return full


def write_json(outdir, name, obj, *, kind, sid=None):
    """`write_text` of `obj` as hwcheck's JSON (`checker.records.atomic.dumps_json`)."""
    return write_text(outdir, name, dumps_json(obj), kind=kind, sid=sid)


def read_bytes(outdir, name, kind=None):
    """The bytes of hwcheck's file `name` when its record verifies and they have its hash, else None."""
    rec = _record(outdir, name)
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
    rec = _record(outdir, name)
    if rec is None or rec["sha256"] is None:
        return
    full = os.path.join(outdir, *rec["path"].split("/"))
    if os.path.isfile(full) and not os.path.islink(full) and _matches(full, rec["sha256"]):
        os.unlink(full)
    try:
        os.unlink(_record_path(outdir, name))
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
    return _record(outdir, name) is not None


def place_kept(outdir, name, record=False):
    """The path of a file hwcheck creates and then leaves to the TA (manual.csv): a regular file at `name` is
    the TA's, however it came; a folder or link there sends it to the alternate name. record: write down where
    it is (when hwcheck is about to write it), so the listing and later runs find it."""
    rec = _record(outdir, name)
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
            _write_record(outdir, name, rel, "kept", None)
        except OSError:
            pass
    return os.path.join(outdir, *rel.split("/"))


# ---------------------------------------------------------------------------
# the listing of a folder OUT lies in
# ---------------------------------------------------------------------------

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
            rec = _load_record(os.path.join(folder, n)) if n.endswith(".json") else None
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


def ensure_folder(outdir, name, stage=False):
    """Make (and record) hwcheck's folder `name` now, before processes write into it side by side.

    stage=True: a folder whose content hwcheck copies from the students (`checker.records.lms`'s `.lms`): the
    folder is hwcheck's, what is inside it is graded as the students' (`is_ours` says so)."""
    return os.path.join(outdir, *_dir(outdir, name, True, "stage" if stage else "folder").split("/"))


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
            if rec["kind"] in ("folder", "kept") or (rec["path"] == rel and _matches(real, rec["sha256"])):
                return True
    if os.path.isdir(real) and not os.path.islink(path):
        return _older_outdir(real) or (os.path.basename(real) == "gradescope" and _own_dir_shape(real))
    return False
