"""The key that signs what hwcheck writes into an output folder, OUT's state folder, and the signed records.

What it is for: the ground `checker.records.owned` stands on.
- the per-account secret key (`HWCHECK_KEY`, else the file `outdir.key` in
  `$HWCHECK_STATE_DIR`, `$XDG_STATE_HOME/hwcheck` or `~/.local/state/hwcheck`,
  created 0600 on first use), and the HMAC-SHA256 made with it;
- `state_dir(outdir)`: OUT's state folder, `.hwcheck-<12 hex>`, a name derived
  from the key, so no student can have put anything there, nor block it;
  `alternate_name`: the `<stem>.hwcheck-<8 hex>.<ext>` name only the key gives;
- one signed record per file or folder hwcheck writes (its name, where it
  really is, its kind, the sha256 of the bytes written, the submission id):
  `write_record`, `record_of` (None unless it verifies), `records(outdir, kind)`;
- `join_inside(folder, *parts)`: the one way a path is built from a
  submission id: every part a plain name (no separator, not `.`/`..`, no NUL),
  and the folder it lands in, links resolved, inside `folder` (ValueError
  otherwise); `split_name` the same rule for a record's `a/b` names.

What it is not: writing or reading hwcheck's files by their records (`checker.records.owned`), nor
telling which entries of a folder are hwcheck's (`checker.records.owned_listing`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets

from checker.records.atomic import dumps_json, write_text_atomic

__all__ = ["join_inside", "split_name", "state_dir", "alternate_name", "sha256_bytes", "has_hash", "record_path",
           "load_record", "record_of", "write_record", "records", "each_record"]

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


def split_name(name):
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


def alternate_name(name, last):
    stem, ext = os.path.splitext(last)
    return f"{stem}.hwcheck-{_mac('alternate', name)[:8]}{ext}"


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


def has_hash(full, sha):
    """Whether the file at `full` holds bytes of this sha256 (False when it cannot be read)."""
    try:
        with open(full, "rb") as f:
            return sha256_bytes(f.read()) == sha
    except OSError:
        return False


# ---------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------

def record_path(outdir, name):
    return os.path.join(state_dir(outdir), "records", hashlib.sha256(name.encode("utf-8", "surrogateescape"))
                        .hexdigest()[:40] + ".json")


def load_record(path):
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
        split_name(rec["path"])
        split_name(rec["name"])
    except ValueError:
        return None
    return rec


def record_of(outdir, name):
    rec = load_record(record_path(outdir, name))
    return rec if rec is not None and rec["name"] == name else None


def write_record(outdir, name, path, kind, sha, sid=None):
    rec = {"name": name, "path": path, "kind": kind, "sha256": sha, "id": sid,
           "mac": _mac(name, path, kind, sha, sid)}
    write_text_atomic(record_path(outdir, name), dumps_json(rec))


def each_record(outdir):
    """Every record of OUT's state folder that is one of this key's (`load_record`), a temporary file left out."""
    folder = os.path.join(state_dir(outdir), "records")
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return
    for n in names:
        if n.endswith(".json") and not n.startswith("."):
            rec = load_record(os.path.join(folder, n))
            if rec is not None:
                yield rec


def records(outdir, kind):
    """[(name, id)] of the files of `kind` hwcheck recorded writing into OUT (their content is checked on reading)."""
    return sorted((rec["name"], rec.get("id")) for rec in each_record(outdir) if rec["kind"] == kind)
