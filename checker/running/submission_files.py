"""A submission's files on the trusted side: what a worker gets, what it never sees.

What it is for: the secret trees no worker may read (`secret_paths`); a
submission's hash (`sha256_of`); following a linked file submission unless
it points at a secret (`file_source`); and copying a submission into a
worker's private dir without following links out of it, leaving out the
shipped starter beside the student's own file (`copy_submission`), and what
it does not copy (too many files, too big, a path too long, a link) named with
why in the student's words: a submission's own folder never fails the copy.
What is copied is bounded (MAX_COPY_TOTAL, code included), as it is copied
again for each worker a submission's crashes restart; so is what is hashed
(a file past what the copy would take counts by its size and mtime).
A hard link is a file with names elsewhere (an archive unpacked by Python's
tarfile makes one to an absolute target): a multiply-linked file that is also
a file of the secret trees (`SecretInodes`, walked only when such a file is
met, bounded) is left out of the copy (`hard_link_refused`), the one rule
`checker.running.safe_read` reads by too.

What it is not: a wall. The worker's namespaces and Landlock enforce what it
may read; this decides what is put in front of it.
"""

import errno
import hashlib
import importlib.util
import os
import shutil
import stat

from checker.walk import walk
from checker.worker.sources import MAX_NOTEBOOK_BYTES

__all__ = ["secret_paths", "state_dirs", "own_dirs", "sha256_of", "file_source", "copy_submission", "folder_refused",
           "LINK_REFUSED", "TOO_LONG", "MAX_COPY_PATH", "COPY_SKIPS", "SecretInodes", "hard_link_refused",
           "HARD_LINK_REFUSED", "HARD_LINK_UNCHECKED"]


def secret_paths(extra=()):
    """Trees a worker must not read: the reference solutions, the grading tests, plus `extra`."""
    out = []
    for pkg in ("assignments",):
        spec = importlib.util.find_spec(pkg)
        if spec and spec.submodule_search_locations:
            out.extend(os.path.realpath(p) for p in spec.submodule_search_locations)
    for root in _project_copies():
        for sub in PROJECT_SECRETS:
            if os.path.isdir(os.path.join(root, sub)):
                out.append(os.path.realpath(os.path.join(root, sub)))
    out.extend(_assignment_secrets())
    out.extend(os.path.realpath(p) for p in own_dirs())
    out.extend(os.path.realpath(p) for p in extra if p)
    return sorted(set(out))


PROJECT_SECRETS = ("assignments", "tests", "reference", "submissions", "bench", ".git")  # reference/, submissions/: links into assignments/


def _project_copies():
    """The roots of every copy of hwcheck's project a worker could read: the one this code runs from, and any
    other among the folders a worker imports from (`checker.worker.landlock.import_folders`): a folder on
    `sys.path` that holds a `checker` or `assignments` package, and the parent of a `checker`, `assignments` or
    `reference` folder an editable install maps (`pip install -e` of one checkout, run from another: the
    other's assignments would otherwise be readable)."""
    from checker.worker.landlock import import_folders
    roots = {os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))}  # checker/running/..
    for folder in import_folders():
        folder = os.path.realpath(folder)
        if os.path.basename(folder) in ("checker", "assignments", "reference"):
            roots.add(os.path.dirname(folder))
        elif any(os.path.isfile(os.path.join(folder, pkg, "__init__.py")) for pkg in ("checker", "assignments")):
            roots.add(folder)
    return sorted(roots)


def state_dirs():
    """Where hwcheck keeps this account's state (checker.records.owned: the key that signs an output folder's
    records), the first that works: $HWCHECK_STATE_DIR, else $XDG_STATE_HOME/hwcheck (~/.local/state/hwcheck),
    then /tmp/hwcheck-state-<uid>."""
    env = os.environ.get("HWCHECK_STATE_DIR")
    if env:
        return [env]
    xdg = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return [os.path.join(xdg, "hwcheck"), os.path.join("/tmp", f"hwcheck-state-{os.getuid()}")]


def own_dirs():
    """hwcheck's own folders of this account, its state and its cache: no submission is read from them (a
    submission that is a link there is left out) and no worker reads them."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return state_dirs() + [os.path.join(cache, "hwcheck")]


def _assignment_secrets():
    """Every assignment folder found (a course's own, from HWCHECK_ASSIGNMENTS or an entry point, as well as
    the built-in ones) and the file of each one's reference solutions, wherever it lies."""
    from checker.errors import SpecError
    from checker.spec import assignment_dirs, every_assignment_folder, load_spec, reference_file
    out = [os.path.realpath(folder) for folder in every_assignment_folder()]  # an ambiguous id's folders too
    for aid, folder in assignment_dirs().items():
        try:
            ref = reference_file(load_spec(aid))
        except SpecError:
            continue  # a spec that cannot be read grades nothing; its folder is secret all the same
        if ref:
            # a reference module that is a package's __init__ keeps its whole package
            out.append(os.path.realpath(os.path.dirname(ref) if os.path.basename(ref) == "__init__.py" else ref))
    return out


COPY_SKIPS = (".git", "__pycache__")  # folders of a submission that are not copied for the worker, nor hashed


def sha256_of(path):
    """A hash of a file, or of a folder's relevant files (names and contents).

    In a folder, a link counts by where it points and a pipe or device by its
    name only: neither is opened (a pipe would block the grader for ever). It covers
    every folder `copy_submission` copies (all but `COPY_SKIPS`), hidden ones too: a
    change under `.impl/` that the graded code reads must make `--resume` grade again.
    It is bounded as the copy is: a file larger than the copy would ever take (a folder's: MAX_COPY_FILE; a
    single file's: its code or notebook cap) and, once HASH_BUDGET bytes are read, every further file count by
    a marker, their size and mtime, not their bytes (a sparse 30 GiB file, 0 bytes on disk, took 134 s a
    grade). Under those bounds the hash is what it always was: scorecards' stored hashes still match.
    """
    h = hashlib.sha256()
    budget = [HASH_BUDGET]

    def feed(p, cap):
        with open(p, "rb") as f:
            st = os.fstat(f.fileno())
            if st.st_size > cap or st.st_size > budget[0]:
                h.update(b"\0large\0" + f"{st.st_size}:{st.st_mtime_ns}".encode())
                return
            left = st.st_size  # no more than it held when opened: a file that grows is not read without end
            budget[0] -= left
            while left > 0:
                block = f.read(min(1 << 20, left))
                if not block:
                    break
                h.update(block)
                left -= len(block)

    if os.path.isfile(path):
        feed(path, _single_cap(os.path.basename(path)))
        return h.hexdigest()
    for root, dirs, files in walk(path):
        dirs[:] = sorted(d for d in dirs if d not in COPY_SKIPS)
        for n in sorted(files):
            p = os.path.join(root, n)
            h.update(os.fsencode(os.path.relpath(p, path)) + b"\0")  # a name need not be UTF-8
            try:
                mode = os.lstat(p).st_mode
                if stat.S_ISLNK(mode):
                    h.update(b"\0link\0" + os.fsencode(os.readlink(p)))
                elif stat.S_ISREG(mode):
                    feed(p, MAX_COPY_FILE)
                else:
                    h.update(b"\0special\0")
            except OSError as e:  # a path past PATH_MAX (ENAMETOOLONG), a file unreadable: its name and the error
                h.update(b"\0unreadable\0" + str(e.errno).encode())
    return h.hexdigest()


def _single_cap(name):
    """The most bytes a single-file submission named `name` is copied with (its code or notebook cap)."""
    if name.endswith(".py"):
        return MAX_COPY_CODE
    if name.endswith(".ipynb"):
        return MAX_NOTEBOOK_BYTES
    return MAX_COPY_FILE


def _inside(path, root):
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def file_source(path, secrets=()):
    """Where a single-file submission is read from: the file, or where it links to; None when it is a link
    to a file outside its own folder that lies in one of `secrets` (the reference, the grading tests, the
    output folder, ...) or is no .py or .ipynb file (a store of submissions keeps their names; /etc/shadow,
    a key or ~/.ssh/id_rsa is none). The code's copy and the written answers (checker.running.runner) follow
    this one rule."""
    real = os.path.realpath(path)
    if (os.path.islink(path) and not _inside(real, os.path.realpath(os.path.dirname(path)))
            and (any(_inside(real, os.path.realpath(s)) for s in secrets) or not real.endswith(LINKED_SUFFIXES))):
        return None
    return real


LINKED_SUFFIXES = (".py", ".ipynb")  # what a link out of a submission's folder may lead to
LINK_REFUSED = ("it is a link to a file the grader does not read as a submission (in a folder it keeps from "
                "submissions, or not a .py or .ipynb file)")


def copy_submission(src, dest, secrets=()):
    """Copy a submission into a worker's temp dir without following links out of it.

    The copy is made by the trusted side, before any wall is up, so a link to
    `assignments/attention/reference.py` (or any file of the grading machine) must not be
    followed. Inside a folder submission a link is followed only to a regular
    file inside that folder; links to folders, links that leave, pipes and
    devices are left out. A single-file submission that is itself a link was
    put there by whoever runs hwcheck (a TA's export that links to a store,
    say), so it is followed, unless it points into one of `secrets` (the
    reference, the grading tests, the output folder, ...) or at a file that is
    no .py or .ipynb (`file_source`). A folder is walked without recursion, never deeper than
    checker.walk.MAX_DEPTH, never onto another filesystem (a mount of /proc, whose /proc/kmsg blocks a
    reader for ever) and never past MAX_COPY_ENTRIES entries; a folder that holds the grader's own files
    is not copied at all (`folder_refused`). A file or folder whose path inside the submission is longer than
    MAX_COPY_PATH bytes, or whose own path is past what the system takes (PATH_MAX), is left out with what it
    holds (`TOO_LONG`): a nest of long folder names (30 of 253 characters) made the copy raise ENAMETOOLONG,
    which was hwcheck's crash, not the student's message. Returns [(name, why)] of what was left out.
    """
    left_out = []
    if not os.path.isdir(src):
        os.makedirs(dest)
        name = os.path.basename(src)
        real = file_source(src, secrets)
        if real is None:
            left_out.append((name, LINK_REFUSED))
        elif not os.path.isfile(real):
            left_out.append((name, "it is not a regular file"))
        else:  # its own folder is the class folder, itself secret: only the file is its own
            st = os.stat(real)
            why = (hard_link_refused(real, st, real, SecretInodes(secrets))
                   or _code_refused(name, st.st_size, 0) or _too_big(st.st_size))
            if why:
                left_out.append((name, why))
            else:
                _copy(real, dest, name, left_out)
        return left_out
    root = os.path.realpath(src)
    why = folder_refused(src, secrets)
    if why:
        os.makedirs(dest, exist_ok=True)
        return [(os.path.basename(os.path.normpath(src)), why)]
    copied = 0  # bytes, of every file copied: code as it is walked, then the other files (`later`) in what is left
    later = []  # (real, name, size) of the files that are not code, copied after all the code
    linked = []  # (real, name, n, stat) of the files with other names (st_nlink > 1), judged after the walk
    cut, entries = [], 0
    for dirpath, dirnames, filenames in walk(src, cut=cut):
        entries += len(dirnames) + len(filenames)
        if entries > MAX_COPY_ENTRIES:
            left_out.append((os.path.relpath(dirpath, src), f"the submission holds more than {MAX_COPY_ENTRIES} "
                                                            "files and folders: the rest are not copied"))
            break
        rel = os.path.relpath(dirpath, src)
        try:
            os.makedirs(os.path.normpath(os.path.join(dest, rel)), exist_ok=True)
        except OSError as e:  # the checks below keep a copy short; in a long TMPDIR it may still pass PATH_MAX
            if e.errno != errno.ENAMETOOLONG or rel == os.curdir:
                raise  # the copy's own folder: the grader's, not the student's
            left_out.append((_shown_path(rel), TOO_LONG))
            dirnames[:] = []
            continue
        keep = []
        for d in sorted(dirnames):
            if d in COPY_SKIPS:
                continue
            if _too_long(os.path.join(dirpath, d), os.path.join(rel, d)):
                left_out.append((_shown_path(os.path.join(rel, d)), TOO_LONG))
                continue
            if os.path.islink(os.path.join(dirpath, d)):
                left_out.append((os.path.normpath(os.path.join(rel, d)), "links to folders are not followed"))
                continue
            keep.append(d)
        dirnames[:] = keep
        for n in sorted(filenames):
            p = os.path.join(dirpath, n)
            name = os.path.normpath(os.path.join(rel, n))
            if _too_long(p, name):
                left_out.append((_shown_path(name), TOO_LONG))
                continue
            real = os.path.realpath(p)
            if os.path.islink(p) and not _inside(real, root):
                left_out.append((name, "it is a link to a file outside the submission"))
            elif not os.path.isfile(real):
                left_out.append((name, "it is not a regular file"))
            else:
                st = os.stat(real)
                if st.st_nlink > 1:
                    linked.append((real, name, n, st))
                    continue
                copied += _take(real, name, n, st.st_size, copied, dest, later, left_out)
    names = {}  # (st_dev, st_ino) -> the paths met inside the submission: a link to one counts once
    for real, _, _, st in linked:
        names.setdefault((st.st_dev, st.st_ino), set()).add(real)
    inodes = SecretInodes(secrets)  # walked once, at its first question, for this whole copy
    for real, name, n, st in linked:
        why = hard_link_refused(real, st, root, inodes, len(names[st.st_dev, st.st_ino]))
        if why:
            left_out.append((name, why))
            continue
        copied += _take(real, name, n, st.st_size, copied, dest, later, left_out)
    for real, name, size in later:  # the data in what the code left: a dataset never crowds out the code
        if copied + size > MAX_COPY_TOTAL:
            left_out.append((name, f"the submission's other files past {MAX_COPY_TOTAL >> 20} MiB in all "
                                   "are not copied (the grader's own inputs are all a graded function gets)"))
            continue
        copied += _copy(real, dest, name, left_out)
    left_out += [(os.path.relpath(p, src), f"not copied: {why}") for p, why in cut]
    left_out += _leave_out_starters(dest)
    return left_out


def _too_big(size):
    if size > MAX_COPY_FILE:
        return f"it is larger than {MAX_COPY_FILE >> 20} MiB (the grader's own inputs are all a graded function gets)"
    return None


def _take(real, name, n, size, copied, dest, later, left_out):
    """Copy the code file `n` now, or keep any other file for `later`, or leave it out saying why: bytes copied."""
    why = _too_big(size)
    if not why and not n.endswith((".py", ".ipynb")):
        later.append((real, name, size))
        return 0
    why = why or _code_refused(n, size, copied)
    if why:
        left_out.append((name, why))
        return 0
    return _copy(real, dest, name, left_out)


def _copy(real, dest, name, left_out):
    """Copy one file of a folder submission; its size copied (0 when it could not be, said in `left_out`)."""
    try:
        shutil.copyfile(real, os.path.join(dest, name))
        return os.path.getsize(os.path.join(dest, name))
    except OSError as e:
        left_out.append((name, TOO_LONG if e.errno == errno.ENAMETOOLONG else
                         f"it could not be read ({e.strerror or e})"))
        return 0


def _code_refused(n, size, copied):
    """Why the code file `n` (`size` bytes, after `copied` bytes of code) is not copied, or None."""
    if n.endswith(".py") and size > MAX_COPY_CODE:
        return (f"it is larger than {MAX_COPY_CODE >> 20} MiB, far more code than a homework holds (data pasted "
                "into it? save the data in a file beside it and load that)")
    if n.endswith(".ipynb") and size > MAX_NOTEBOOK_BYTES:  # the loader would not read it (its own words)
        return (f"it is larger than a notebook the grader reads ({MAX_NOTEBOOK_BYTES >> 20} MiB); clear its "
                "outputs (Jupyter: Kernel > Restart & Clear Output; Colab: Edit > Clear all outputs) and save it again")
    if copied + size > MAX_COPY_TOTAL:
        return f"the submission's files past {MAX_COPY_TOTAL >> 20} MiB in all are not copied"
    return None


def folder_refused(src, secrets=()):
    """Why the folder submission `src` is not copied at all, or None: it holds one of `secrets` (a link to
    `..`, to `/` or to the course's repository, which an unpacked archive can make), or it is a link that
    leads into one of them (the reference's folder), as `file_source` refuses a file."""
    root = os.path.realpath(src)
    real = [os.path.realpath(s) for s in secrets if s]
    if any(_inside(s, root) for s in real):
        return ("it holds the grader's own files (the reference, the grading tests, the output folder or "
                "hwcheck's state): it is not copied; is it a link to a folder above it?")
    if os.path.islink(os.path.normpath(src)) and any(_inside(root, s) for s in real):
        return "it is a link to a folder the grader keeps from submissions (the reference, the grading tests, ...)"
    return None


HARD_LINK_REFUSED = ("it is a hard link to a file the grader keeps from submissions (the reference, the grading "
                     "tests, another submission or the output folder): it is not copied")
HARD_LINK_UNCHECKED = ("it is a hard link (the same file has other names on this disk) and the folders the grader "
                       "keeps from submissions are too large to look through for it: it is not copied")
MAX_SECRET_ENTRIES = 200_000  # files and folders of the secret trees looked at to find a hard link's other names


def hard_link_refused(real, st, own, inodes, names=1):
    """Why the regular file `real` (its os.stat `st`) is not read as a submission's, or None: it has more names
    (st_nlink) than the `names` met inside the submission, and one of them is a file of the secret trees
    (`inodes`, a SecretInodes) outside `own` (the submission's real folder; for a single file, the file itself,
    as its folder is the class folder, secret too). A tar member that is a hard link to an absolute path, which
    Python's tarfile makes unless it is given a filter, put the reference under a student's `helper.py`: every
    check of a path passed it. Other names elsewhere (a TA's `cp -al` snapshot, rsync --link-dest) are no
    reason; secret trees too large to look through all are (HARD_LINK_UNCHECKED)."""
    if not stat.S_ISREG(st.st_mode) or st.st_nlink <= names:
        return None
    paths, complete = inodes.paths(st.st_dev, st.st_ino)
    if any(not _inside(p, own) for p in paths):
        return HARD_LINK_REFUSED
    return None if complete else HARD_LINK_UNCHECKED


class SecretInodes:
    """The regular files with more than one name in the trees `secrets` names (as `secret_paths` gives them):
    (st_dev, st_ino) -> their real paths. A device's trees are walked when first asked about (most submissions
    never ask), once, skipping `.git` and COPY_SKIPS, never past MAX_SECRET_ENTRIES entries (`paths` then
    says it is not complete)."""

    def __init__(self, secrets, limit=None):
        roots = sorted({os.path.realpath(s) for s in secrets if s})
        self.roots = [r for i, r in enumerate(roots) if not any(_inside(r, o) for o in roots[:i])]
        self.limit = MAX_SECRET_ENTRIES if limit is None else limit
        self._devices = {}  # st_dev -> (index, complete)

    def paths(self, dev, ino):
        """(the secret paths of inode `ino` on device `dev`, whether every secret tree there was looked through)."""
        if dev not in self._devices:
            self._devices[dev] = self._walk(dev)
        index, complete = self._devices[dev]
        return index.get((dev, ino), ()), complete

    def _walk(self, dev):
        index, entries = {}, 0

        def note(p, st):
            if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                index.setdefault((st.st_dev, st.st_ino), []).append(p)

        for top in self.roots:
            try:
                st = os.lstat(top)
            except OSError:
                continue
            if st.st_dev != dev or os.path.basename(top) in COPY_SKIPS:
                continue
            if not stat.S_ISDIR(st.st_mode):
                note(top, st)
                continue
            for dirpath, dirnames, filenames in walk(top):
                dirnames[:] = [d for d in dirnames if d not in COPY_SKIPS]
                entries += len(dirnames) + len(filenames)
                if entries > self.limit:
                    return index, False
                for n in filenames:
                    p = os.path.join(dirpath, n)
                    try:
                        note(p, os.lstat(p))
                    except OSError:
                        continue
        return index, True


# What of a folder is given to the worker: its copy lies in the worker's tmpfs twice (the submission and its
# scratch copy, both memory) with namespaces and on disk without them, so a dataset or a checkpoint beside the
# code would cost the two modes differently (a 300 MB file crashed the worker with namespaces only)
MAX_COPY_FILE = 64 << 20   # one file
# every file, in all: code first (as the folder is walked), then the other files in what the code left. Code
# counts too: 8 .py files of 60 MiB were copied twice a worker (481 MB) and again at each restart after a crash
# (the copy is the grader's own work, outside the student's time budget), 150 s past a 120 s limit
MAX_COPY_TOTAL = 128 << 20
# one .py file: twice what the by-hand scan reads (checker.running.scan_read.MAX_BYTES, 8 MB), itself far above a
# homework's code with its pasted tables; a notebook's own bound is the loader's (MAX_NOTEBOOK_BYTES)
MAX_COPY_CODE = 16 << 20
MAX_COPY_ENTRIES = 20000   # files and folders looked at
HASH_BUDGET = MAX_COPY_TOTAL + MAX_COPY_FILE  # past what the copy takes, with room for what it leaves out
# A path inside the submission: the worker's copies of it lie deeper than the submission's own folder (its dir,
# twice under its new root, and the scratch copy), all within the system's PATH_MAX (4096 bytes on Linux)
MAX_COPY_PATH = 2048
_PATH_MAX = 4096
TOO_LONG = (f"a path in your folder is too long (more than {MAX_COPY_PATH} bytes from the folder's top): it and "
            f"what it holds are not copied, so your code does not have them; use fewer nested folders, with "
            f"shorter names")


def _too_long(path, rel):
    """Whether the file or folder `path` (`rel` inside the submission) is past what the copy takes: more than
    MAX_COPY_PATH bytes of `rel`, or a path the system refuses (PATH_MAX)."""
    return (len(os.fsencode(os.path.normpath(rel))) > MAX_COPY_PATH
            or len(os.fsencode(os.path.abspath(path))) >= _PATH_MAX)


def _shown_path(rel, room=160):
    """A path of the submission for a message: whole when short, else each name cut to its start, and of more
    than four folders the first two and the last two."""
    rel = os.path.normpath(rel)
    if len(rel) <= room:
        return rel
    parts = [p if len(p) <= 24 else p[:20] + "..." for p in rel.split(os.sep)]
    if len(parts) > 4:
        parts = parts[:2] + [f"({len(parts) - 4} more folders)"] + parts[-2:]
    return os.sep.join(parts)


def _leave_out_starters(dest):
    """The shipped starter notebook beside the student's own file is removed from the copy (its stubs would
    replace the student's code); a folder that holds only starters keeps them."""
    from checker.running.starter import LEFT_OUT, starter_units
    units = [os.path.join(d, n) for d, _, names in walk(dest) for n in names if n.endswith((".py", ".ipynb"))]
    starters = starter_units(units)
    if not starters:
        return []
    if len(starters) == len(units):  # nothing else to grade: the starter is the submission
        return []
    for p in starters:
        os.unlink(p)
    return [(os.path.relpath(p, dest), LEFT_OUT) for p in starters]
