"""A folder a student controls, walked without recursion, links or other filesystems, to a bounded depth.

What it is for: every walk of a submission's folder (the trusted side's copy, hash and scans; the worker's
list of files to load; the cluster's tarball). `os.walk` recurses in Python 3.11: a folder nested 1,100
deep (a path of 2,200 characters, which any archive or `mkdir -p` makes) raised RecursionError, and the
trusted side's handling of it walked the folder again, so one submission stopped a whole batch. `walk`
keeps its own stack; it goes at most `max_depth` folders down, never through a link to a folder, and never
onto another filesystem than the top's (a link or a mount that leads to /proc, where reading /proc/kmsg
blocks for ever); what it does not enter is listed in `cut` for the caller to say so.

What it is not: a judge of which files matter (its callers choose, pruning `dirnames` as with os.walk), nor
a wall (the worker's namespaces and Landlock are).
"""

import os

__all__ = ["walk", "MAX_DEPTH"]

MAX_DEPTH = 40  # folders below the top: far past any homework's layout (a package in a package in a src/)


def walk(top, *, max_depth=MAX_DEPTH, cut=None):
    """os.walk(top, followlinks=False)'s (dirpath, dirnames, filenames), top-down, sorted by name, the caller
    free to prune `dirnames`; never deeper than `max_depth` folders below `top`, never into a link to a folder
    (listed among `dirnames`, as os.walk lists it) or onto another filesystem. Each folder not entered is
    appended to `cut` (a list, when given) as (path, why). A folder that cannot be read is skipped."""
    try:
        device = os.stat(top).st_dev  # `top` itself may be a link the user named
    except OSError:
        return
    stack = [(os.fspath(top), 0)]
    while stack:
        path, depth = stack.pop()
        dirs, files, links = [], [], set()
        try:
            with os.scandir(path) as it:
                for entry in it:
                    try:
                        is_dir = entry.is_dir()
                        if is_dir and entry.is_symlink():
                            links.add(entry.name)
                    except OSError:
                        is_dir = False
                    (dirs if is_dir else files).append(entry.name)
        except OSError:
            continue
        dirs.sort()
        files.sort()
        yield path, dirs, files
        below = []
        for name in dirs:
            if name in links:
                continue
            sub = os.path.join(path, name)
            if depth + 1 > max_depth:
                _note(cut, sub, f"it is more than {max_depth} folders deep")
                continue
            try:
                if os.lstat(sub).st_dev != device:
                    _note(cut, sub, "it lies on another filesystem (a mount point)")
                    continue
            except OSError:
                continue
            below.append((sub, depth + 1))
        stack.extend(reversed(below))


def _note(cut, path, why):
    if cut is not None:
        cut.append((path, why))
