"""checker.running.submission_files and checker.running.safe_read against hard links and sparse files.

A hard link has no path of its own to check: a file with more names (st_nlink) than the submission holds is
looked up among the secret trees' files (by st_dev and st_ino) and left out, or refused to a reader, when one
of its names is there. Here the secret tree is a folder of tmp_path passed as `secrets` (os.link needs one
filesystem); tests/test_hostile_hardlinks.py links to the real reference through a real `hwcheck grade`.
The hash is bounded like the copy, and identical to the old one under those bounds (scorecards keep theirs).
"""

import hashlib
import os
import stat

import pytest

from checker.running import safe_read, submission_files
from checker.running.submission_files import COPY_SKIPS, MAX_COPY_CODE, MAX_COPY_FILE, copy_submission, sha256_of
from checker.walk import walk
from checker.worker.sources import MAX_NOTEBOOK_BYTES

# the words, read where they are defined (their text where they are not: the attacks need neither)
HARD_LINK_REFUSED = getattr(submission_files, "HARD_LINK_REFUSED", "it is a hard link to a file the grader keeps")
HARD_LINK_UNCHECKED = getattr(submission_files, "HARD_LINK_UNCHECKED", "it is a hard link (the same file has")


def _old_sha256_of(path):
    """sha256_of as it was before its bounds (every byte read): what scorecards hold."""
    h = hashlib.sha256()

    def feed(p):
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)

    if os.path.isfile(path):
        feed(path)
        return h.hexdigest()
    for root, dirs, files in walk(path):
        dirs[:] = sorted(d for d in dirs if d not in COPY_SKIPS)
        for n in sorted(files):
            p = os.path.join(root, n)
            h.update(os.fsencode(os.path.relpath(p, path)) + b"\0")
            try:
                mode = os.lstat(p).st_mode
                if stat.S_ISLNK(mode):
                    h.update(b"\0link\0" + os.fsencode(os.readlink(p)))
                elif stat.S_ISREG(mode):
                    feed(p)
                else:
                    h.update(b"\0special\0")
            except OSError as e:
                h.update(b"\0unreadable\0" + str(e.errno).encode())
    return h.hexdigest()


def _sparse(path, size):
    with open(path, "wb"):
        pass
    os.truncate(path, size)


def _class(tmp_path):
    """(a secret tree holding ref.py, a folder submission) in tmp_path."""
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "ref.py").write_text("def get_scores(m, v):\n    return 'THE REFERENCE'\n")
    sub = tmp_path / "class" / "mallory"
    sub.mkdir(parents=True)
    (sub / "main.py").write_text("from helper import *\n")
    return secret, sub


# ------------------------------------------------------------------ the hash

def test_the_hash_is_unchanged_under_the_bounds(tmp_path):
    sub = tmp_path / "sub"
    (sub / ".impl" / "deep").mkdir(parents=True)
    (sub / "main.py").write_text("x = 1\n" * 1000)
    (sub / ".impl" / "deep" / "data.bin").write_bytes(os.urandom(3 << 20))
    (sub / "empty.txt").write_bytes(b"")
    (sub / "naïve.py").write_text("y = 2\n")
    os.symlink("main.py", sub / "alias.py")
    os.mkfifo(sub / "pipe")
    os.link(sub / "main.py", sub / "same.py")
    _sparse(sub / "exactly_the_cap.bin", MAX_COPY_FILE)
    assert sha256_of(str(sub)) == _old_sha256_of(str(sub))
    assert sha256_of(str(sub / "main.py")) == _old_sha256_of(str(sub / "main.py"))
    nb = tmp_path / "hw.ipynb"
    nb.write_text('{"cells": []}')
    assert sha256_of(str(nb)) == _old_sha256_of(str(nb))


def test_a_sparse_file_past_the_cap_is_hashed_by_size_and_mtime(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "main.py").write_text("x = 1\n")
    _sparse(sub / "data.bin", 30 << 30)
    first = sha256_of(str(sub))
    assert first == sha256_of(str(sub))
    os.truncate(sub / "data.bin", (30 << 30) + 1)
    assert sha256_of(str(sub)) != first  # a change of its size still regrades under --resume
    one = tmp_path / "big.py"
    _sparse(one, MAX_COPY_CODE + 1)
    h = sha256_of(str(one))
    os.utime(one, ns=(0, 12345))
    assert sha256_of(str(one)) != h


def test_past_the_hash_budget_the_rest_count_by_size_and_mtime(tmp_path, monkeypatch):
    sub = tmp_path / "sub"
    sub.mkdir()
    for i in range(4):
        (sub / f"f{i}.bin").write_bytes(bytes([i]) * 1000)
    monkeypatch.setattr(submission_files, "HASH_BUDGET", 4000, raising=False)
    assert sha256_of(str(sub)) == _old_sha256_of(str(sub))  # 4000 bytes: all read
    monkeypatch.setattr(submission_files, "HASH_BUDGET", 2500, raising=False)
    bounded = sha256_of(str(sub))
    assert bounded != _old_sha256_of(str(sub))
    with open(sub / "f3.bin", "r+b") as f:  # past the budget: its bytes are not read, its mtime is
        f.write(b"\xff")
    os.utime(sub / "f3.bin", ns=(os.stat(sub / "f3.bin").st_atime_ns, os.stat(sub / "f3.bin").st_mtime_ns + 10**9))
    assert sha256_of(str(sub)) != bounded


# ------------------------------------------------------------------ the copy: sizes

@pytest.mark.parametrize("name,size,said", [
    ("big.py", 2 << 30, f"it is larger than {MAX_COPY_CODE >> 20} MiB"),
    ("big.ipynb", MAX_NOTEBOOK_BYTES + 1, "larger than a notebook the grader reads"),
])
def test_a_single_file_past_its_cap_is_left_out_not_copied(tmp_path, name, size, said):
    src = tmp_path / name
    _sparse(src, size)
    dest = tmp_path / "dest"
    left = copy_submission(str(src), str(dest))
    assert [n for n, _ in left] == [name] and said in left[0][1], left
    assert not (dest / name).exists()


# ------------------------------------------------------------------ the copy: hard links

def test_a_hard_link_into_a_secret_tree_is_left_out(tmp_path):
    secret, sub = _class(tmp_path)
    os.link(secret / "ref.py", sub / "helper.py")
    os.symlink("helper.py", sub / "alias.py")  # a second path to the same file inside is still one name
    dest = tmp_path / "dest"
    left = dict(copy_submission(str(sub), str(dest), [str(secret)]))
    assert left == {"helper.py": HARD_LINK_REFUSED, "alias.py": HARD_LINK_REFUSED}, left
    assert (dest / "main.py").exists() and not (dest / "helper.py").exists()


def test_a_single_file_hard_link_into_a_secret_tree_is_left_out(tmp_path):
    secret, sub = _class(tmp_path)
    os.link(secret / "ref.py", tmp_path / "class" / "eve.py")
    other = tmp_path / "class" / "bob.py"  # a classmate's file, the class folder being secret
    other.write_text("def f():\n    return 'bob'\n")
    os.link(other, tmp_path / "class" / "zed.py")
    for name in ("eve.py", "zed.py"):
        left = copy_submission(str(tmp_path / "class" / name), str(tmp_path / f"dest-{name}"),
                               [str(secret), str(tmp_path / "class")])
        assert left == [(name, HARD_LINK_REFUSED)], left
        assert not (tmp_path / f"dest-{name}" / name).exists()


def test_hard_links_inside_the_submission_or_to_a_snapshot_are_copied_without_a_walk(tmp_path, monkeypatch):
    secret, sub = _class(tmp_path)
    (sub / "a.py").write_text("A = 1\n")
    os.link(sub / "a.py", sub / "b.py")  # both names inside: no secret tree is looked through
    monkeypatch.setattr(getattr(submission_files, "SecretInodes", None), "_walk", lambda self, dev: pytest.fail("walked"))
    dest = tmp_path / "dest"
    assert copy_submission(str(sub), str(dest), [str(secret)]) == []
    assert (dest / "b.py").read_text() == "A = 1\n"
    monkeypatch.undo()
    snapshot = tmp_path / "snapshot"  # a TA's `cp -al` copy, outside every secret tree
    snapshot.mkdir()
    (snapshot / "helper.py").write_text("H = 2\n")
    os.link(snapshot / "helper.py", sub / "helper.py")
    dest2 = tmp_path / "dest2"
    assert copy_submission(str(sub), str(dest2), [str(secret), str(tmp_path / "class")]) == []
    assert (dest2 / "helper.py").read_text() == "H = 2\n"
    os.link(snapshot / "helper.py", tmp_path / "class" / "carol.py")
    dest3 = tmp_path / "dest3"
    assert copy_submission(str(tmp_path / "class" / "carol.py"), str(dest3), [str(secret)]) == []
    assert (dest3 / "carol.py").exists()


def test_past_the_walk_cap_a_multiply_linked_file_is_refused(tmp_path, monkeypatch):
    secret, sub = _class(tmp_path)
    for i in range(20):
        (secret / f"f{i}.txt").write_text("x")
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    (snapshot / "helper.py").write_text("H = 2\n")
    os.link(snapshot / "helper.py", sub / "helper.py")
    monkeypatch.setattr(submission_files, "MAX_SECRET_ENTRIES", 5, raising=False)
    left = copy_submission(str(sub), str(tmp_path / "dest"), [str(secret)])
    assert left == [("helper.py", HARD_LINK_UNCHECKED)], left


# ------------------------------------------------------------------ the one reader

def test_safe_read_refuses_the_same_hard_links(tmp_path):
    secret, sub = _class(tmp_path)
    os.link(secret / "ref.py", sub / "helper.py")
    os.link(secret / "ref.py", tmp_path / "class" / "eve.py")
    with pytest.raises(safe_read.Refused) as e:
        safe_read.read_bytes(str(sub / "helper.py"), str(sub), secrets=[str(secret)])
    assert e.value.why == HARD_LINK_REFUSED
    with pytest.raises(safe_read.Refused) as e:
        safe_read.read_bytes(str(tmp_path / "class" / "eve.py"), secrets=[str(secret)])
    assert e.value.why == HARD_LINK_REFUSED
    assert not safe_read.readable(str(sub / "helper.py"), str(sub), secrets=[str(secret)])
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    (snapshot / "carol.py").write_text("C = 3\n")
    os.link(snapshot / "carol.py", sub / "carol.py")
    assert safe_read.read_bytes(str(sub / "carol.py"), str(sub), secrets=[str(secret)]) == b"C = 3\n"
