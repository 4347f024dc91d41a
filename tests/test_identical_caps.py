"""checker.records.identical reads a bounded amount of each submission and hashes its tokens as it goes (h90).

A folder submission of many large .py files made `grade`'s identical-code step tokenise all of it and keep every
token: ~6.5 MB of trusted memory and 0.4 s of CPU per MB submitted. Now at most MAX_CODE_BYTES of code is read
per submission (a submission with more is compared with no one), and memory does not grow with the tokens.
"""

import hashlib
import os
import shutil
import tracemalloc
from pathlib import Path

from checker.records import identical
from checker.records.identical import identical_groups, normalised_code
from checker.running import safe_read

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "submissions" / "attention"
CAP = 2_000_000  # checker.running.scan_read.MAX_SCAN_BYTES: what the by-hand scan parses of a submission


def _dense(path, nbytes, start=0):
    """A .py file of `nbytes` of distinct number tokens (what /tmp/h90/gen_fat.py wrote)."""
    parts, size, i = ["DATA = (\n"], 0, start
    while size < nbytes:
        s = f"    {i},\n"
        parts.append(s)
        size += len(s)
        i += 1
    parts.append(")\n")
    path.write_text("".join(parts))


def _fat(folder, files, nbytes):
    folder.mkdir(parents=True)
    shutil.copyfile(EXAMPLES / "correct.py", folder / "solution.py")
    for k in range(files):
        _dense(folder / f"data{k:02d}.py", nbytes, start=k * 10 ** 7)
    return folder


def test_the_bytes_read_per_submission_are_capped(tmp_path, monkeypatch):
    fat = _fat(tmp_path / "fat", 6, 1_000_000)   # 6 MB of code
    read = []
    real = safe_read.read_bytes

    def counting(path, *a, **kw):
        data = real(path, *a, **kw)
        read.append(len(data))
        return data

    monkeypatch.setattr(safe_read, "read_bytes", counting)
    assert identical_groups([("fat", str(fat)), ("alice", str(EXAMPLES / "correct.py"))]) == {}
    assert sum(read) <= CAP + os.path.getsize(EXAMPLES / "correct.py"), sum(read)


def test_two_identical_fat_submissions_are_not_compared_past_the_cap(tmp_path):
    a = _fat(tmp_path / "a", 3, 1_000_000)
    b = tmp_path / "b"
    shutil.copytree(a, b)
    assert identical_groups([("a", str(a)), ("b", str(b))]) == {}
    assert normalised_code(str(a)) is None


def test_memory_does_not_grow_with_the_tokens(tmp_path):
    big = tmp_path / "big"
    big.mkdir()
    shutil.copyfile(EXAMPLES / "correct.py", big / "solution.py")
    _dense(big / "data.py", 1_500_000)            # under the cap: ~170k tokens, 1.5 MB of text
    tracemalloc.start()
    try:
        groups = identical_groups([("big", str(big)), ("alice", str(EXAMPLES / "correct.py"))])
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert groups == {}
    # the text itself (1.5 MB, and io.StringIO's copy of it) and no list of its tokens (old: ~20 MB)
    assert peak < 10_000_000, peak


def test_the_digest_is_that_of_the_joined_tokens(tmp_path):
    """The same answer as the list of tokens joined by NUL (what identical_groups hashed before)."""
    names = sorted(p.name for p in EXAMPLES.iterdir() if p.suffix in (".py", ".ipynb"))[:8]
    assert names
    for name in names:
        toks = normalised_code(str(EXAMPLES / name))
        want = hashlib.sha256("\0".join(toks).encode("utf-8", "surrogatepass")).hexdigest()
        assert identical.code_digest(str(EXAMPLES / name)) == (want, len(toks)), name
    # text that does not tokenize: its words, as before
    odd = tmp_path / "odd.py"
    odd.write_text("def f(:\n    '''never closed\n  x\x1c y  \u3000 z\n")
    toks = normalised_code(str(odd))
    assert toks == odd.read_text().split()
    want = hashlib.sha256("\0".join(toks).encode("utf-8", "surrogatepass")).hexdigest()
    assert identical.code_digest(str(odd)) == (want, len(toks))


def test_copies_of_an_ordinary_submission_are_still_identical(tmp_path):
    for sid in ("alice", "bob"):
        (tmp_path / sid).mkdir()
        shutil.copyfile(EXAMPLES / "correct.py", tmp_path / sid / "attention.py")
        (tmp_path / sid / "helpers.py").write_text(f"# {sid}'s helpers\ndef helper(x):\n    return x + 1\n")
    shutil.copyfile(EXAMPLES / "no_scaling.py", tmp_path / "carol.py")
    entries = [("alice", str(tmp_path / "alice")), ("bob", str(tmp_path / "bob")), ("carol", str(tmp_path / "carol.py"))]
    assert identical_groups(entries) == {"alice": ["bob"], "bob": ["alice"]}


def test_a_large_group_of_identical_code_names_five_ids_and_a_count(tmp_path):
    """40 copies of one file: each note names five of the other 39 and counts the rest, so grades.csv's notes
    grow with the class, not with its square (h93)."""
    from checker.records.outputs import _people_notes
    entries = []
    for i in range(40):
        shutil.copyfile(EXAMPLES / "correct.py", tmp_path / f"s{i:02d}.py")
        entries.append((f"s{i:02d}", str(tmp_path / f"s{i:02d}.py")))
    groups = identical_groups(entries)
    assert sorted(groups["s00"]) == [f"s{i:02d}" for i in range(1, 40)]
    note = "; ".join(_people_notes("s00", {}, groups["s00"]))
    assert note.startswith("identical code to ") and note.split(" and ")[0].count(", ") == 4 and " and 34 more " in note
    assert all(sid in note for sid in groups["s00"][:5]) and groups["s00"][5] not in note
    assert "; ".join(_people_notes("s01", {}, ["s00"])) == (
        "identical code to s00 (comments, whitespace and the starter aside)")
