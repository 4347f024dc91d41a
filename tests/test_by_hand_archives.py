"""Zip archives the "by hand" scan reads on the trusted side: hostile ones cost only themselves.

`checker.running.by_hand` reads the .py members of every zip archive of a submission (whatever its name:
`sys.path` takes any, and the worker imports from it with `zipimport`). An archive is the student's bytes:
  * a zip bomb: one member whose headers declare 6 bytes (with the CRC of those 6) but whose deflate stream
    inflates to 200 MiB of zeros, named by 2000 central-directory entries that all point at the same data.
    The scan read it with `z.read(m)`, which inflates up to 2 GiB per call before cutting the result to the
    declared size: a 2 MB file stalled a batch for hours and took ~2 GB of the trusted process's memory.
    Now the bytes inflated are bounded (per member, per archive, per submission), never by a size the
    archive states, and data already read is never read again;
  * many honest-looking members that together inflate to more than the scan reads: the rest are code the
    grader cannot read (unclear if imported), not an unbounded read;
  * a corrupt member (raising zlib.error) made the whole scan raise: the student's by-hand tests came back as
    errors. Now it costs only itself (a note), and the honest members beside it are still read;
  * what zipimport really runs: it inflates a member to the end of its deflate stream whatever size and
    CRC the headers declare, and ignores the "encrypted" flag. `zipfile` stopped at the declared size (the
    forged 6 bytes) or refused the flagged member, so code hidden behind them ran unseen. The scan now reads
    the bytes the worker imports.
"""
import json
import os
import struct
import subprocess
import sys
import textwrap
import time
import zlib

import pytest

from checker.running.by_hand import MAX_BYTES, MAX_SCAN_BYTES, MAX_SCAN_ZIP_BYTES, _read_code, library_use
from sandbox_helpers import GOOD

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOFTMAX = {"softmax", "log_softmax", "Softmax", "LogSoftmax"}
SCIPY = b"from scipy.special import softmax as _w\n"
MiB = 1 << 20


# ------------------------------------------------------------------ forging archives byte by byte

def _local(name, comp, method=8, flags=0, crc=0, size=0):
    name = name.encode()
    return struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, flags, method, 0, 0, crc, len(comp), size,
                       len(name), 0) + name + comp


def _central(name, offset, csize, method=8, flags=0, crc=0, size=0):
    name = name.encode()
    return struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, flags, method, 0, 0, crc, csize, size,
                       len(name), 0, 0, 0, 0, 0, offset) + name


def _archive(members, extra_centrals=(), first_centrals=()):
    """members: (name, compressed bytes, method, flags, crc, declared size, central entries naming it);
    extra central entries (forged: their offsets and sizes are the caller's) after or before them."""
    body, cd = b"", list(first_centrals)
    for name, comp, method, flags, crc, size, copies in members:
        offset = len(body)
        body += _local(name, comp, method, flags, crc, size)
        cd += [_central(name, offset, len(comp), method, flags, crc, size)] * copies
    cd += list(extra_centrals)
    n = len(cd)
    cd = b"".join(cd)
    return body + cd + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, len(cd), len(body), 0)


def _deflate(data):
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def _honest(name, text, copies=1):
    return (name, _deflate(text), 8, 0, zlib.crc32(text), len(text), copies)


def _forged(name, shown, hidden=b"", zeros=0, copies=1, flags=0):
    """A deflated member whose headers declare `shown` (its size and CRC) while its stream inflates to
    shown + hidden + `zeros` zero bytes."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    parts, chunk = [c.compress(shown + hidden)], bytes(16 * MiB)
    while zeros > 0:
        parts.append(c.compress(chunk if zeros >= len(chunk) else chunk[:zeros]))
        zeros -= len(chunk)
    parts.append(c.flush())
    return (name, b"".join(parts), 8, flags, zlib.crc32(shown), len(shown), copies)


def _submission(tmp_path, files):
    root = tmp_path / "sub"
    root.mkdir()
    for name, data in files.items():
        (root / name).write_bytes(data if isinstance(data, bytes) else data.encode())
    return str(root)


def _worker_imports(zip_path, module):
    """The names `module` binds when Python imports it from the archive (zipimport), as the worker does."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import sys, json
        sys.path.insert(0, {str(zip_path)!r})
        import {module}
        print(json.dumps(sorted(n for n in vars({module}) if not n.startswith("__"))))
        """)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


# ------------------------------------------------------------------ the zip bomb

BOMB_ZEROS = 200 * MiB


@pytest.fixture(scope="module")
def bomb_member():
    """helper.py declared as `x = 1\\n` (6 bytes, their CRC), inflating to 200 MiB."""
    return _forged("helper.py", b"x = 1\n", zeros=BOMB_ZEROS)


@pytest.fixture(scope="module")
def bomb(bomb_member):
    """The bomb named by 2000 central-directory entries, all pointing at the same data."""
    return _archive([bomb_member[:-1] + (2000,)])


SCAN_IN_A_CHILD = """
import json, resource, sys, time
from checker.running.by_hand import _read_code, library_use
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.monotonic()
code = _read_code(sys.argv[1])
report = library_use(sys.argv[1], "get_attention_weights", {"softmax"})
print(json.dumps({"seconds": time.monotonic() - t0, "clean": report.clean, "notes": code.notes[:5],
                  "unread": sorted(code.unread), "own": sorted(code.own),
                  "grew_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before}))
"""


@pytest.mark.alone
def test_a_zip_bomb_is_read_promptly_and_in_bounded_memory(tmp_path, bomb):
    """The bomb, hidden in a folder submission under a name that is not .zip, beside an honest hw.py: the
    scan ends in well under a few seconds, its peak memory does not grow by the inflated size, the honest
    code stays clean, and the bomb's module is code the grader could not read."""
    assert len(bomb) < 2 * MiB
    path = _submission(tmp_path, {"hw.py": GOOD, "notes.txt": bomb})
    try:  # in a child process: without the bound it runs for hours, and its memory is measured alone
        out = subprocess.run([sys.executable, "-c", SCAN_IN_A_CHILD, path], capture_output=True, text=True,
                             timeout=60, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})
    except subprocess.TimeoutExpired:
        pytest.fail("the scan of a 2 MB archive ran for more than a minute")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["seconds"] < 3, got
    assert got["grew_kib"] * 1024 < 64 * MiB, got  # the member inflates to 200 MiB (per entry)
    assert got["clean"], got
    assert "helper" in got["unread"] and "helper" not in got["own"], got
    assert any("helper.py" in n for n in got["notes"]), got


def test_a_zip_bomb_in_process_with_tracemalloc(tmp_path, bomb_member):
    """The same, measured in this process with three entries naming the bomb (so that an unbounded read
    fails here in seconds rather than hours): the memory traced while scanning stays far below the
    inflated size (each entry used to inflate all of it)."""
    import time
    import tracemalloc
    path = _submission(tmp_path, {"hw.py": GOOD, "notes.txt": _archive([bomb_member[:-1] + (3,)])})
    tracemalloc.start()
    try:
        t0 = time.monotonic()
        code = _read_code(path)
        seconds = time.monotonic() - t0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seconds < 10, seconds
    assert peak < 4 * MAX_BYTES, peak
    assert "helper" in code.unread


# ------------------------------------------------------------------ bounds per archive and per submission

def test_members_that_inflate_past_the_bounds_are_not_read(tmp_path):
    """Three archives of eight members just under the per-file bound (each a valid module): the scan stops
    inflating at its per-submission bound, and the members it left are code it could not read."""
    text = b"x = 0\ns = '" + b"." * (MAX_BYTES - 100) + b"'\n"  # pasted data: inflated, not parsed
    files = {}
    for a in range(3):
        files[f"data{a}.bin"] = _archive([_honest(f"m{a}_{i}.py", text) for i in range(8)])
    code = _read_code(_submission(tmp_path, files))
    names = {f"m{a}_{i}" for a in range(3) for i in range(8)}
    read = names & code.own
    assert read and len(read) * len(text) <= MAX_SCAN_ZIP_BYTES, sorted(read)
    assert names - read <= code.unread and names - read, sorted(code.unread)
    assert any("inflate to more than the grader reads" in n for n in code.notes), code.notes


@pytest.mark.parametrize("outer_first", [True, False])
def test_entries_that_overlap_another_members_data_are_not_read(tmp_path, outer_first):
    """The overlapping-files bomb: a member's data holds another member's local header and data, each named
    by its own central entry. Whichever comes first is read; the other is refused (code the grader could not
    read), not inflated again. A second name for exactly the same data is read once, and is a module too."""
    inner = _local("zinner.py", SCIPY, method=0, size=len(SCIPY), crc=zlib.crc32(SCIPY))
    head = b"# -*- coding: latin-1 -*-\n#"  # zouter.py decodes (its NUL bytes then do not parse)
    outer = ("zouter.py", head + inner, 0, 0, zlib.crc32(head + inner), len(head + inner), 0)
    body_start = 30 + len("zouter.py")
    entries = [_central("zouter.py", 0, len(outer[1]), method=0),
               _central("zinner.py", body_start + len(head), len(SCIPY), method=0)]
    if not outer_first:
        entries.reverse()
    alias = _central("zalias.py", 0, len(outer[1]), method=0)  # exactly zouter.py's data
    code = _read_code(_submission(tmp_path, {"hw.py": GOOD, "lib.zip": _archive([outer], entries + [alias])}))
    first, second = ("zouter", "zinner") if outer_first else ("zinner", "zouter")
    assert first in code.own and first not in code.unread, (code.own, code.unread)
    assert second in code.unread and second not in code.own, (code.own, code.unread)
    assert any(f"{second}.py overlaps" in n for n in code.notes), code.notes
    assert ("zalias" in code.own) == outer_first and ("zalias" in code.unread) != outer_first


# ------------------------------------------------------------------ a corrupt member costs only itself

def test_a_corrupt_member_is_skipped_and_the_honest_one_beside_it_read(tmp_path):
    corrupt = ("broken.py", b"\xff" * 64, 8, 0, 0, 64, 1)  # not a deflate stream: zlib.error
    zipbytes = _archive([corrupt, _honest("zhelper.py", SCIPY)])
    hw = "import sys\nsys.path.insert(0, 'lib.zip')\nfrom zhelper import _w\n" + GOOD.replace(
        "e = np.exp(scores - scores.max(axis=-1, keepdims=True))\n    return e / e.sum(axis=-1, keepdims=True)",
        "return _w(np.asarray(scores), axis=-1)")
    assert "_w(np.asarray" in hw
    path = _submission(tmp_path, {"hw.py": hw, "lib.zip": zipbytes})
    code = _read_code(path)  # no exception
    assert "zhelper" in code.own and "broken" in code.unread
    assert any("broken.py" in n for n in code.notes), code.notes
    report = library_use(path, "get_attention_weights", SOFTMAX)
    assert "scipy.special.softmax" in report.used, (report.used, report.unclear)


@pytest.mark.parametrize("corrupt", ["not_deflate", "truncated_stream", "past_the_end", "bad_local_header"])
def test_an_honest_student_with_a_corrupt_archive_keeps_a_clean_report(tmp_path, corrupt):
    """The trusted side's own failure costs only what it was for: a correct student whose folder holds a
    damaged archive (not imported) still gets a clean report, with no exception, and the archive's honest
    member after the damaged one is still read."""
    honest = _honest("notes.py", b"x = 1\n")
    text = repr(list(range(3000))).encode()
    if corrupt == "not_deflate":
        zipbytes = _archive([("a.py", b"\xff" * 64, 8, 0, 0, 64, 1), honest])
    elif corrupt == "truncated_stream":  # the deflate stream stops half way (zipfile: a bad CRC)
        comp = _deflate(text)
        zipbytes = _archive([("a.py", comp[:len(comp) // 2], 8, 0, zlib.crc32(text), len(text), 1), honest])
    elif corrupt == "past_the_end":  # an entry claims more data than the archive holds
        zipbytes = _archive([honest], first_centrals=[_central("a.py", 0, 10 ** 9, method=8)])
    else:  # an entry whose offset is not a local header
        zipbytes = _archive([honest], first_centrals=[_central("a.py", 3, 6, method=0)])
    path = _submission(tmp_path, {"hw.py": GOOD, "stuff.zip": zipbytes})
    report = library_use(path, "get_attention_weights", SOFTMAX)
    assert report.clean, (report.used, report.unclear, report.missing)
    assert "notes" in _read_code(path).own


# ------------------------------------------------------------------ what zipimport runs is what is read

def test_code_past_a_forged_declared_size_is_read(tmp_path):
    """The headers declare `x = 1\\n` (size and CRC); the stream goes on with an import of scipy's softmax.
    zipimport runs all of it, so the scan must read all of it."""
    zipbytes = _archive([_forged("zh.py", b"x = 1\n", hidden=SCIPY)])
    path = _submission(tmp_path, {"hw.py": "import sys\nsys.path.insert(0, 'lib.zip')\nfrom zh import _w\n" + GOOD.replace(
        "e = np.exp(scores - scores.max(axis=-1, keepdims=True))\n    return e / e.sum(axis=-1, keepdims=True)",
        "return _w(np.asarray(scores), axis=-1)"), "lib.zip": zipbytes})
    assert "_w" in _worker_imports(os.path.join(path, "lib.zip"), "zh")  # the attack really runs
    report = library_use(path, "get_attention_weights", SOFTMAX)
    assert "scipy.special.softmax" in report.used, (report.used, report.unclear)


def test_a_member_flagged_encrypted_but_plain_is_read(tmp_path):
    """zipimport ignores the "encrypted" flag (zipfile refuses the member): the scan reads it as imported."""
    text = b"import json as _j\n" + SCIPY
    zipbytes = _archive([("zenc.py", _deflate(text), 8, 1, zlib.crc32(text), len(text), 1)])
    path = _submission(tmp_path, {"hw.py": "import sys\nsys.path.insert(0, 'lib.zip')\nfrom zenc import _w\n" + GOOD.replace(
        "e = np.exp(scores - scores.max(axis=-1, keepdims=True))\n    return e / e.sum(axis=-1, keepdims=True)",
        "return _w(np.asarray(scores), axis=-1)"), "lib.zip": zipbytes})
    assert "_j" in _worker_imports(os.path.join(path, "lib.zip"), "zenc")
    report = library_use(path, "get_attention_weights", SOFTMAX)
    assert "scipy.special.softmax" in report.used, (report.used, report.unclear)


def test_honest_archives_read_as_before(tmp_path):
    """zipfile's own archives, deflated and stored, a package folder inside: every module is read."""
    import io
    import zipfile
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("pkg/", b"")
        z.writestr("pkg/__init__.py", b"", compress_type=zipfile.ZIP_STORED)
        z.writestr("pkg/ops.py", SCIPY, compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("plain.py", b"# -*- coding: latin-1 -*-\nname = 'caf\xe9'.upper()\n", compress_type=zipfile.ZIP_STORED)
        z.writestr("mod.pyc", b"\0" * 16)
        z.writestr("README.txt", b"hello")
    code = _read_code(_submission(tmp_path, {"hw.py": GOOD, "lib.zip": buf.getvalue()}))
    assert {"pkg", "ops", "plain", "hw"} <= code.own, code.own
    assert "mod" in code.unread and not code.notes, (code.unread, code.notes)
    dumped = [n for t in code.trees for n in __import__("ast").walk(t)]
    assert any(getattr(n, "module", None) == "scipy.special" for n in dumped)
    assert any(getattr(n, "value", None) == "caf\xe9" for n in dumped)


# ------------------------------------------------------------------ the source one scan parses

def _padding(n):
    """n characters of valid, dense Python that is no pasted data (what costs `ast` most: ~200 MB a megabyte)."""
    line = "x{i}=y{i}+z{i}*(w{i}-v{i})\n"
    out, i, size = [], 0, 0
    while size < n:
        out.append(line.format(i=i))
        size += len(out[-1])
        i += 1
    return "".join(out)[:n - 1].rsplit("\n", 1)[0] + "\n"


def test_a_scan_parses_a_bounded_amount_of_source_once_per_submission(tmp_path):
    """A correct file beside three padding modules of dense code (12 MB of it took the trusted side minutes and
    2 GB, parsed again for each by-hand test): the scan parses at most MAX_SCAN_BYTES, says what it left, and
    the by-hand tests of a grade share it."""
    pad = _padding(MAX_SCAN_BYTES * 3 // 4)
    path = _submission(tmp_path, {"hw.py": GOOD, **{f"pad{i}.py": pad for i in range(3)}})
    t0 = time.monotonic()
    code = _read_code(path)
    assert time.monotonic() - t0 < 60
    assert {"pad2"} <= code.unread and "hw" in code.own, (code.own, code.unread)
    assert any("more code than the grader reads" in n for n in code.notes), code.notes
    assert sum(len(pad) for i in range(3) if f"pad{i}" in code.own) <= MAX_SCAN_BYTES
    assert _read_code(path) is code  # read once while the files stay as they are
    report = library_use(path, "get_attention_weights", SOFTMAX)
    assert report.clean, (report.used, report.unclear, report.unread)
    os.utime(os.path.join(path, "hw.py"), ns=(1, 1))
    assert _read_code(path) is not code  # a file changed: read again


def test_a_def_in_what_the_scan_left_unread_is_said_to_be_unread(tmp_path):
    """Where the function's file lies past the bound, the by-hand test says the grader could not read all of
    the code, not that there is no def."""
    path = _submission(tmp_path, {"a_pad.py": _padding(MAX_SCAN_BYTES - 1000), "z_hw.py": GOOD})
    report = library_use(path, "get_attention_weights", SOFTMAX)
    assert not report.missing and not report.clean
    assert any("z_hw.py" in n for n in report.unread), report.unread


def test_a_data_literal_pasted_into_the_file_is_read_as_a_stub(tmp_path):
    """A correct file with 2.4 MB of data pasted in after its functions (a weight table, a dataset): the scan
    reads it (a by-hand test found no def when the file passed a 1 MB bound) and keeps no node per number."""
    rows = ",\n".join("[" + ", ".join(f"{(i * 37 + j) % 1000 / 7:.6f}" for j in range(16)) + "]" for i in range(20000))
    path = _submission(tmp_path, {"hw.py": GOOD + "\nWEIGHTS = [\n" + rows + "]\n"})
    assert os.path.getsize(os.path.join(path, "hw.py")) > 2_000_000
    code = _read_code(path)
    assert not code.notes, code.notes
    assert sum(1 for t in code.trees for _ in __import__("ast").walk(t)) < 10_000
    assert library_use(path, "get_attention_weights", SOFTMAX).clean


def test_only_pasted_data_is_blanked_before_parsing():
    """What the scan leaves unparsed names nothing: numbers, plain strings and brackets bound to a name at the top
    level, over one line or many; a name, an f-string, a call, a comment or an unbalanced bracket keeps the line."""
    from checker.running.by_hand import _without_numeric_data as lean
    for data in ("x = 1", "x = -.5e-3", "W = [\n[1, 2.5],\n[-3, 4e3]]", 'x = ["a)", 1]', "t = ('(', 2)",
                 "x = 1_000"):
        assert lean(data).strip() == "", data
    for code in ("x = e", "x = F.softmax", "x = f'{F.softmax(y)}'", "x = 1  # note", "x = (1,\nsoftmax)",
                 "    y = 1", "x = 1; y = f", "x == 1", "x = [1, 2", "x = b'\\x00'"):
        assert lean(code) == code, code
    # a keyword of pure data on a line of its own inside a call may go too: what is left keeps every name
    assert "F.softmax" in lean("y = g(\nk = 1,\nF.softmax)")
    assert lean("W = [\n1,\n2]\ny = F.softmax(x)") == "\n\n\ny = F.softmax(x)"  # line numbers kept
