"""Write a file so that readers see either the old content or the new, never half.

What it is for: every file hwcheck hands to someone else (scorecards,
Gradescope's results.json, the gradebook CSV) is written here: to a temporary
file in the same folder, flushed and fsync'ed, then renamed over the target
with `os.replace` (atomic on POSIX within one file system). Parent folders are
created. A failed write leaves the old file untouched and no temporary behind.
`write_temp` and `put_in_place` are the two halves, for a caller that must do
something between the new file being whole on disk and the old one being
replaced (`checker.records.owned` keeps a file that is not hwcheck's first);
`copy_whole` copies a file so the copy is never left half-written.
`read_json` reads such a file back, None when it is missing or not JSON.
`is_temp_name(name)` tells a temporary file of this module by its name (for
removing what a kill left behind): `.<target>.<random>.tmp`.
What it is not: a lock (two writers race; the last rename wins) or a
serializer beyond `json.dumps`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile

__all__ = ["write_text_atomic", "write_temp", "put_in_place", "discard_temp", "copy_whole", "write_json_atomic",
           "dumps_json", "encode_text", "read_json", "temp_affixes", "is_temp_name"]

_DEFAULT_MODE = 0o644
_TEMP_SUFFIX = ".tmp"
# what temp_affixes and mkstemp make: '.', the target's name (or its hash), '.', mkstemp's random letters, '.tmp'
_TEMP_NAME = re.compile(r"\A\..+\.[^.]+" + re.escape(_TEMP_SUFFIX) + r"\Z", re.DOTALL)


def temp_affixes(path):
    """(prefix, suffix) of the temporary file that a write of `path` makes in its folder."""
    return "." + _temp_stem(os.path.basename(os.fspath(path))) + ".", _TEMP_SUFFIX


def is_temp_name(name):
    """Whether `name` is the name of a temporary file of this module (whatever the file it was written for)."""
    return bool(_TEMP_NAME.match(name))


_SURROGATE = re.compile("[\ud800-\udfff]")


def encode_text(text, encoding="utf-8"):
    """The bytes of `text` in `encoding`, a lone surrogate written as its escape (`\\udcff`): it stands for a
    byte of a file name that is not UTF-8 (Python's surrogateescape), which no encoding can write; any other
    character the encoding lacks still raises UnicodeEncodeError."""
    if _SURROGATE.search(text):
        text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text.encode(encoding)


def write_text_atomic(path, text, *, encoding="utf-8", mode=None):
    """Replace the file at `path` with `text`, atomically.

    The text is written as given (no newline translation). The new file keeps
    the permission bits of the file it replaces, else `mode` (default 0o644).
    Returns the path as a string.
    """
    tmp = write_temp(path, text, encoding=encoding, mode=mode)
    put_in_place(tmp, path)
    return os.fspath(path)


def write_temp(path, text, *, encoding="utf-8", mode=None):
    """The first half of `write_text_atomic`: `text` written whole into a temporary file beside `path`,
    flushed and fsync'ed, with the mode the file at `path` will have; its path. Nothing at `path` is touched:
    `put_in_place(tmp, path)` puts it there, `discard_temp(tmp)` drops it. A failure (a full disk) leaves no
    temporary behind."""
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    path = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    if mode is None:
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            mode = _DEFAULT_MODE
    data = encode_text(text, encoding)
    prefix, suffix = temp_affixes(path)
    fd, tmp = tempfile.mkstemp(dir=parent, prefix=prefix, suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
    except BaseException:
        discard_temp(tmp)
        raise
    return tmp


def put_in_place(tmp, path):
    """The second half of `write_text_atomic`: rename the temporary `tmp` (`write_temp`'s) over `path`
    (a failure drops the temporary and leaves `path` as it was)."""
    path = os.fspath(path)
    try:
        os.replace(tmp, path)
    except BaseException:
        discard_temp(tmp)
        raise
    _fsync_dir(os.path.dirname(os.path.abspath(path)))


def discard_temp(tmp):
    """Remove a temporary of `write_temp` that is not to be put in place (gone already: nothing to do)."""
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass


def copy_whole(src, dest):
    """Copy the file `src` to `dest` (a name not taken) so that `dest` is never left half-written: copied into
    a temporary beside it, fsync'ed, then renamed; a failure (a full disk) leaves no `dest` and no temporary."""
    with open(src, "rb") as f:
        data = f.read()
    prefix, suffix = temp_affixes(dest)
    parent = os.path.dirname(os.path.abspath(dest))
    fd, tmp = tempfile.mkstemp(dir=parent, prefix=prefix, suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _DEFAULT_MODE)
        os.rename(tmp, dest)
    except BaseException:
        discard_temp(tmp)
        raise
    _fsync_dir(parent)
    return dest


def _temp_stem(name):
    """The temporary file's stem: the name itself, or a hash of it where the name is long.

    File names hold at most 255 bytes: a 240-byte target plus a dot and
    mkstemp's suffix would be refused. The extension is kept, so a stale
    temporary is still recognised by its kind (`.json.XXXX.tmp`).
    """
    if len(name.encode("utf-8", "surrogateescape")) <= 200:
        return name
    ext = os.path.splitext(name)[1][:16]
    return hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:16] + ext


def dumps_json(obj):
    """The JSON text hwcheck writes: indented, UTF-8, no NaN/Infinity, final newline.

    NaN and Infinity are refused (ValueError): they are not JSON, and a strict
    reader such as Gradescope's would reject the whole file.
    """
    text = json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a path whose name is not UTF-8 (surrogate-escaped): \udcXX escapes keep it
        text = json.dumps(obj, indent=2, ensure_ascii=True, allow_nan=False) + "\n"
    return text


def write_json_atomic(path, obj, *, mode=None):
    """Replace the file at `path` with `obj` as JSON (see `dumps_json`), atomically."""
    text = dumps_json(obj)  # serialize first: a bad object must not touch the file
    return write_text_atomic(path, text, mode=mode)


def _fsync_dir(folder):
    """Make the rename itself durable (best effort: not every system allows it)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_json(path):
    """The JSON value of the file at `path`, or None when it is missing, unreadable or not JSON."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
