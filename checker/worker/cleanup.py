"""Removing a worker's dir: iterative, bounded, never following a link, never raising.

What it is for: a worker dir holds whatever the student's code left there:
a directory chain deeper than Python's recursion limit (or than PATH_MAX),
FIFOs, sockets, device nodes, folders of mode 000, links to anywhere. A
recursive `shutil.rmtree` raised RecursionError on such a chain, which ended
the zygote's loop and with it the batch. `remove_tree(path, deadline=...)`
instead works on at most two open folders at a time: it empties the top
folder's subfolders one level down, moving their own subfolders up into the
top folder (a rename within one file system), so no chain is ever walked and
no path ever grows. Every name is handled relative to an open folder
(`dir_fd`): a link is removed as a link, never followed; a FIFO, socket or
device is unlinked, never opened; a folder is opened with O_NOFOLLOW and
made 0700 first (a non-root grader owns what its worker made). It stops at
the deadline or after `max_entries` names and says whether the dir is gone;
the caller tries again later (the zygote keeps a list). Nothing is raised.

What it is not: a judge of which dirs may be removed (the zygote checks the
path is one of its own worker dirs); it imports nothing of hwcheck, so the
zygote and the trusted side can both use it.
"""

import collections
import os
import secrets
import stat
import time

__all__ = ["remove_tree"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def remove_tree(path, *, deadline=None, max_entries=None):
    """Remove the folder `path` and everything in it; True when it is gone, False when left for later.

    deadline: a `time.monotonic()` value after which it stops; max_entries: names handled at
    most. A path that is a link or a file is unlinked itself (never followed)."""
    budget = _Budget(deadline, max_entries)
    try:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return True
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(path)
            return True
        top = _open_dir(path, None)
        try:
            done = _empty(top, budget)
        finally:
            os.close(top)
        if done:
            os.rmdir(path)
        return done
    except Exception:  # noqa: BLE001 - a folder that cannot be removed now is left for a later try
        return False


class _Budget:
    def __init__(self, deadline, max_entries):
        self.deadline, self.left = deadline, max_entries

    def spend(self):
        """Count one name; False once the budget is spent."""
        if self.left is not None:
            self.left -= 1
            if self.left < 0:
                return False
        return self.deadline is None or time.monotonic() < self.deadline


def _open_dir(name, dir_fd):
    """Open a folder (never a link); one we own is made 0700 first where its mode stops us (mode 000
    or 0500 stops its owner, unlike root)."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        _make_ours(name, dir_fd)
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    if os.geteuid() != 0:
        try:
            os.fchmod(fd, 0o700)  # writable, so that its entries can go
        except OSError:
            pass
    return fd


def _make_ours(name, dir_fd):
    """chmod 0700 the folder `name` itself, never what a link there points to."""
    handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:  # /proc/self/fd of an O_PATH handle names its very inode: no link is followed on the way
        os.chmod(f"/proc/self/fd/{handle}", 0o700)
    finally:
        os.close(handle)


def _names(fd):
    """(name, is_dir) of a folder's entries, the folder given by an open fd (never following links)."""
    with os.scandir(fd) as it:
        for entry in it:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            yield entry.name, is_dir


def _empty(top, budget):
    """Empty the open folder `top`; True when it is empty."""
    while True:
        queue = collections.deque(_names(top))
        if not queue:
            return True
        progress = False
        while queue:
            if not budget.spend():
                return False
            name, is_dir = queue.popleft()
            try:
                if not is_dir:
                    os.unlink(name, dir_fd=top)
                    progress = True
                else:
                    moved, empty, changed = _flatten(top, name, budget)
                    queue.extend((m, True) for m in moved)  # no new scan of `top` for each level
                    progress = progress or changed
                    if empty:
                        os.rmdir(name, dir_fd=top)
                        progress = True
            except FileNotFoundError:
                progress = True
            except OSError:
                pass  # left for the next pass, or for a later try
        if not progress:
            return False  # only names that refuse to go: a later try, not a loop here


def _flatten(top, name, budget):
    """Empty the folder `name` of `top` one level: unlink its files, move its folders up into `top`.
    Returns (the new names in `top`, whether `name` is now empty, whether anything changed)."""
    fd = _open_dir(name, top)
    moved, empty, changed = [], True, False
    try:
        for child, is_dir in list(_names(fd)):
            if not budget.spend():
                return moved, False, changed
            try:
                if is_dir:
                    new = _fresh_name()
                    try:
                        os.rename(child, new, src_dir_fd=fd, dst_dir_fd=top)
                    except PermissionError:  # moving a folder rewrites its "..": it must be writable
                        _make_ours(child, fd)
                        os.rename(child, new, src_dir_fd=fd, dst_dir_fd=top)
                    moved.append(new)
                else:
                    os.unlink(child, dir_fd=fd)
                changed = True
            except FileNotFoundError:
                changed = True
            except OSError:
                empty = False
        return moved, empty, changed
    finally:
        os.close(fd)


def _fresh_name():
    return f".hwcheck-rm-{secrets.token_hex(8)}"
