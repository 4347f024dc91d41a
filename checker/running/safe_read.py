"""Reading a student's files on the trusted side, by the rules grading copies them with: the one reader.

What it is for: every trusted-side reader of a submission's files outside grading's copy — the class
report and its similarity ranking (`checker.records.classreport.sources`), the identical-code notes
(`checker.records.identical`), the written answers (`checker.running.freetext`) — opens them through `read_bytes` (or
`readable`, to ask first), so what those show is what was graded and nothing else:

- a file inside a folder submission is read only when it is a regular file whose real path (links
  resolved) is inside the folder: a link to a classmate's file, to a TA's file or to `/dev/tty` is not
  followed, as `checker.running.submission_files.copy_submission` does not follow it;
- a single-file submission (no `root`) that is a link is followed as grading follows it
  (`checker.running.submission_files.file_source`), unless it points into a secret tree (the reference, the
  grading tests, `secrets` such as the output folder); it must end in .py or .ipynb, as a graded one does;
- a regular file with other names (a hard link, st_nlink > 1) is refused when one of them is a file of
  the secret trees outside the submission (`checker.running.submission_files.hard_link_refused`, the copy's
  own rule): a tar's hard link put the grading tests under a student's `notes.txt`;
- only a regular file is opened, checked with lstat before and fstat after an open with O_NOFOLLOW,
  O_NONBLOCK and O_NOCTTY (the same file both times), so a FIFO, a device or a terminal can neither
  block the reader nor be read;
- at most `limit` bytes are read (unless told: 4 MiB of a .py file, 32 MiB of a notebook, whose saved
  outputs, a plot's image, are most of it); a larger file is refused, not cut.

A refusal is `Refused` (an OSError) with `why`, in words for a note.

What it is not: the copy given to a worker (`checker.running.submission_files`), a wall against a student's
running code (the worker's namespaces and Landlock), nor a parser: callers decode and read the text.
"""

import os
import stat
import time

from checker.running.submission_files import LINK_REFUSED, SecretInodes, file_source, hard_link_refused, secret_paths
from checker.worker.sources import MAX_NOTEBOOK_BYTES as _LOADERS_NOTEBOOK_BYTES

__all__ = ["MAX_FILE_BYTES", "MAX_NOTEBOOK_BYTES", "SUFFIXES", "Refused", "readable", "read_bytes", "read_text"]

MAX_FILE_BYTES = 4 << 20
# a notebook's saved outputs (plots: base64 images) weigh far more than its code: every notebook the loader
# reads is read here too (checker.worker.sources.MAX_NOTEBOOK_BYTES)
MAX_NOTEBOOK_BYTES = _LOADERS_NOTEBOOK_BYTES
SUFFIXES = (".py", ".ipynb")
_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
          | getattr(os, "O_CLOEXEC", 0))


class Refused(OSError):
    """A file of a submission that grading's rules do not read; `why` says which rule, in words."""

    def __init__(self, path, why):
        super().__init__(f"{os.path.basename(os.fspath(path))}: {why}")
        self.path, self.why = path, why


def _inside(path, root):
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _resolve(path, root, secrets):
    """(real path, lstat of it) of a file grading's rules read, else Refused."""
    path = os.fspath(path)
    if root is None:
        if not path.endswith(SUFFIXES):
            raise Refused(path, "a submission file is a .py file or a notebook")
        trees = secret_paths(secrets)
        real = file_source(path, trees)
        if real is None:
            raise Refused(path, LINK_REFUSED)
        own = real  # a single file's folder is the class folder: only the file is its own
    else:
        real = os.path.realpath(path)
        own = os.path.realpath(os.fspath(root))
        if not _inside(real, own):
            raise Refused(path, "it is a link to a file outside the submission")
    try:
        st = os.lstat(real)
    except OSError as e:
        raise Refused(path, f"it could not be read ({e.strerror or e})") from None
    if not stat.S_ISREG(st.st_mode):
        raise Refused(path, "it is not a regular file")
    if st.st_nlink > 1:
        why = hard_link_refused(real, st, own, _inodes(trees if root is None else secret_paths(secrets)))
        if why:
            raise Refused(path, why)
    return real, st


_INODES = {}  # the secret trees' roots -> (when, SecretInodes): a report reads many files one after another
_INODES_S = 30.0


def _inodes(trees):
    """A SecretInodes of `trees`, shared by the reads of the next _INODES_S seconds (walked only when asked)."""
    key, now = tuple(sorted(trees)), time.monotonic()
    hit = _INODES.get(key)
    if hit is None or now - hit[0] > _INODES_S:
        _INODES.clear()
        hit = _INODES[key] = (now, SecretInodes(trees))
    return hit[1]


def readable(path, root=None, secrets=()):
    """Whether `path` (a file of the folder submission `root`, or a single-file submission) is one grading reads."""
    try:
        _resolve(path, root, secrets)
    except Refused:
        return False
    return True


def read_bytes(path, root=None, *, limit=None, secrets=()):
    """The bytes of `path`, a file of the folder submission `root` (None: `path` is a single-file submission),
    read by grading's rules (see the module's docstring); Refused when they do not read it. `limit`: by
    default MAX_NOTEBOOK_BYTES for a notebook, MAX_FILE_BYTES for any other file."""
    if limit is None:
        limit = MAX_NOTEBOOK_BYTES if os.fspath(path).endswith(".ipynb") else MAX_FILE_BYTES
    real, st = _resolve(path, root, secrets)
    if st.st_size > limit:
        raise Refused(path, f"it is larger than {limit / 2 ** 20:g} MiB")
    try:
        fd = os.open(real, _FLAGS)
    except OSError as e:
        raise Refused(path, f"it could not be read ({e.strerror or e})") from None
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            raise Refused(path, "it changed while it was read")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except Refused:
        raise
    except OSError as e:
        raise Refused(path, f"it could not be read ({e.strerror or e})") from None
    finally:
        os.close(fd)
    if size > limit:
        raise Refused(path, f"it is larger than {limit / 2 ** 20:g} MiB")
    return b"".join(chunks)


def read_text(path, root=None, *, limit=None, secrets=()):
    """read_bytes decoded: UTF-8 (a BOM dropped), else cp1252 (a Windows editor's), undecodable bytes replaced."""
    data = read_bytes(path, root, limit=limit, secrets=secrets)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")
