"""checker.walk: a student's folder walked without recursion, links or other filesystems, to a bounded depth."""
import os
import sys

import pytest

from checker.walk import MAX_DEPTH, walk
from checker.worker.cleanup import remove_tree


@pytest.fixture
def deep(request):
    """deep(top, levels): a folder `levels` deep (d/d/.../d/x.py), made without a path too long for the OS to
    take at once, and removed at the end without recursion (pytest's own clean-up of its temporary folders
    is a recursive shutil.rmtree: it would raise RecursionError at a later session's start)."""
    made = []

    def make(top, levels):
        made.append(top)
        _deep(top, levels)
    yield make
    for top in made:
        assert remove_tree(os.path.join(top, "d"))


def _deep(top, levels):
    os.makedirs(top, exist_ok=True)
    here = os.open(top, os.O_RDONLY)
    try:
        for _ in range(levels):
            os.mkdir("d", dir_fd=here)
            nxt = os.open("d", os.O_RDONLY, dir_fd=here)
            os.close(here)
            here = nxt
        fd = os.open("x.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=here)
        os.close(fd)
    finally:
        os.close(here)


def test_a_folder_deeper_than_pythons_recursion_limit_is_walked_to_the_bound(tmp_path, deep):
    levels = sys.getrecursionlimit() + 100  # os.walk raised RecursionError here (Python 3.11)
    deep(str(tmp_path / "sub"), levels)
    cut = []
    seen = [path for path, _dirs, _files in walk(str(tmp_path / "sub"), cut=cut)]
    assert len(seen) == MAX_DEPTH + 1
    assert len(cut) == 1 and cut[0][1] == f"it is more than {MAX_DEPTH} folders deep"
    assert cut[0][0].count(os.sep + "d") == MAX_DEPTH + 1


def test_like_os_walk_top_down_sorted_prunable_and_links_listed_not_entered(tmp_path):
    for d in ("b/inner", "a", ".hidden", "c"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "b" / "inner" / "f.py").write_text("")
    (tmp_path / "z.py").write_text("")
    (tmp_path / "a" / "y.py").write_text("")
    os.symlink("/", tmp_path / "rootlink")
    os.symlink("..", tmp_path / "a" / "up")
    got = []
    for path, dirs, files in walk(str(tmp_path)):
        got.append((os.path.relpath(path, tmp_path), list(dirs), files))
        dirs[:] = [d for d in dirs if d != "c"]  # pruned as with os.walk
    assert got == [
        (".", [".hidden", "a", "b", "c", "rootlink"], ["z.py"]),
        (".hidden", [], []),
        ("a", ["up"], ["y.py"]),
        ("b", ["inner"], []),
        ("b/inner", [], ["f.py"]),
    ]
    want = [(os.path.relpath(p, tmp_path), sorted(d), sorted(f)) for p, d, f in os.walk(str(tmp_path))
            if not os.path.relpath(p, tmp_path).startswith("c")]
    assert sorted(got) == sorted(want)


def test_another_filesystem_is_not_entered():
    """/proc (where reading /proc/kmsg blocks) is a mount of its own: a walk from / does not go in."""
    if os.stat("/proc").st_dev == os.stat("/").st_dev:
        pytest.skip("/proc is not a filesystem of its own here")
    cut = []
    entered = [path for path, _dirs, _files in walk("/", max_depth=1, cut=cut)]
    assert "/proc" not in entered and ("/proc", "it lies on another filesystem (a mount point)") in cut
    assert "/usr" in entered or not os.path.isdir("/usr")
