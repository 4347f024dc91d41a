"""What the by-hand scan reads of a submission, as the worker runs and imports it, bounded (trusted side).

What it is for: `read_code(path, secrets)` gives `checker.running.by_hand` the submission's code as parsed
trees (`_Code`): every .py file of the folder, decoded as Python decodes it; notebook cells and the files
their `%%writefile` cells write; the .py members of every zip archive, read as zipimport reads them. It is
bounded so that no submission costs the trusted side much: files and members counted, archives inflated
within bounds (a zip bomb, overlapping members), at most MAX_SCAN_BYTES of code parsed, pasted data
(`NAME = <numbers, strings, brackets>`) blanked before parsing, and read once while the files stay as they
are (a grade's by-hand tests share it). What it could not read is said (`notes`, `unread`).

What it is not: the judgement of what the code calls (`checker.running.by_hand`), nor a runner of student
code: it never imports or runs anything.
"""

import ast
import bisect
import importlib.machinery
import os
import re
import struct
import zipfile
import zlib

from checker.running.submission_files import file_source
from checker.walk import walk
from checker.worker.sources import NotebookError, _cells, cell_pieces, py_pieces, read_source, read_source_bytes, writefile_target

__all__ = ["read_code", "MAX_FILES", "MAX_BYTES", "MAX_SCAN_BYTES", "MAX_ZIP_MEMBERS", "MAX_ZIP_BYTES",
           "MAX_SCAN_ZIP_BYTES"]

MAX_FILES = 2000          # files of a submission read (a submission is a handful)
MAX_BYTES = 8_000_000     # of one source file (a homework notebook holds some 50 kB of code; pasted data more)
# of all the source one scan parses (files, notebook cells, archive members; a file's pasted data is not parsed,
# `_without_numeric_data`), once per grade (the by-hand tests share it): parsing dense code costs the trusted side
# about a second and 200 MB a megabyte
MAX_SCAN_BYTES = 2_000_000
MAX_ZIP_MEMBERS = 2000    # members of one archive
MAX_ZIP_BYTES = 16_000_000       # inflated from the .py members of one archive, all together
MAX_SCAN_ZIP_BYTES = 32_000_000  # inflated from all the archives of one submission


class _Code:
    """What the worker can run of a submission, read as the worker reads it: `trees` (each piece the loader
    runs, or a module the code can import, parsed), `own` (the module and package names those files
    provide), `unread` (names the code could import from the submission whose source the grader does not
    read: compiled modules, extension modules), and `notes` (why some of it could not be read)."""

    def __init__(self):
        self.trees, self.own, self.unread, self.notes = [], set(), set(), []
        self.files = []  # the file each of `trees` came from, in the order the loader runs them within it
        self.binds = None  # by_hand's {name: binding statements} of `trees`, made once for the grade's by-hand tests
        self.replaced = None  # by_hand's first write that replaces what a function runs (scan_writes)
        self.instances = {}  # by_hand's {name: the submission's class whose instance it only holds} (scan_writes)
        self.edit = None  # by_hand's import_system_edit(trees): the code changes where Python finds modules
        self._file = None
        self.inflate_left = MAX_SCAN_ZIP_BYTES  # bytes the scan may still inflate from archives
        self.source_left = MAX_SCAN_BYTES  # characters of source the scan may still parse

    def take(self, relpath, text, module=True):
        """Whether the scan may still parse `text` (of `relpath`); if not, say so: its names are code the grader
        cannot read, and no by-hand point is earned where the scan cannot tell."""
        if len(text) > self.source_left:
            self.notes.append(f"{relpath} was not read: the submission holds more code than the grader reads "
                              f"({MAX_SCAN_BYTES / 1e6:g} MB)")
            if module:
                self.add_unread(relpath)
            return False
        self.source_left -= len(text)
        return True

    def add_pieces(self, pieces):
        for _line0, code in pieces:
            try:
                self.trees.append(_stub_data(ast.parse(code)))
                self.files.append(self._file)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue  # the loader cannot run it either (it reports it)

    def add_module(self, relpath, text):
        """A .py file the worker can import (or runs): its module name and packages, and its statements (one
        tree where the file parses, as the loader's pieces are then its statements; else those pieces)."""
        lean = _without_numeric_data(text)
        if not self.take(relpath, lean):
            return
        parts = relpath.replace(os.sep, "/").split("/")
        self.own.update(p for p in parts[:-1] if p.isidentifier())
        self.own.add(parts[-1][:-3])
        self._file = relpath
        try:
            tree = ast.parse(lean)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            # as the loader runs it: the parts that parse (the file as written, whatever was blanked)
            if lean is text or self.take(relpath, text):
                self.add_pieces(py_pieces(text).pieces)
            return
        for i, stmt in enumerate(tree.body):
            tree.body[i] = _stub_data(ast.Module(body=[stmt], type_ignores=[])).body[0]
        self.trees.append(tree)
        self.files.append(relpath)

    def add_unread(self, relpath):
        """A file the worker can import but whose source is not there to read (.pyc, .so)."""
        parts = relpath.replace(os.sep, "/").split("/")
        self.unread.update(p for p in parts[:-1] if p.isidentifier())
        self.unread.add(parts[-1].split(".")[0])


_DATA = (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp, ast.USub, ast.UAdd, ast.Load,
         ast.keyword)


def _stub_data(tree):
    """`tree`, a piece that only binds names to literal data (`W = [[0.1, ...], ...]`, a weight table pasted
    into the file) with that data replaced by None: it calls nothing and names nothing, so the scan loses
    nothing, and the trusted side does not keep a node for every number."""
    if (len(tree.body) == 1 and isinstance(tree.body[0], (ast.Assign, ast.AnnAssign))
            and tree.body[0].value is not None
            and all(isinstance(n, _DATA) for n in ast.walk(tree.body[0].value))):
        tree.body[0].value = ast.Constant(None)
    return tree


_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][-+]?\d[\d_]*)?[jJ]?(?![\w.])")
_DATA_START = re.compile(r"[A-Za-z_]\w*[ \t]*=[ \t]*(?!=)")
_DATA_CHARS = set(" \t\r\n,:[](){}")


_STRING = re.compile(r"""(?<![\w"'])(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')""")  # one line, no prefix


def _numeric_only(s):
    """Whether `s` holds only numbers, plain one-line strings (no f-string), brackets, commas, colons and blanks
    (no name, comment or operator but a sign)."""
    if "'" in s or '"' in s:
        s = _STRING.sub(" ", s)
    return set(_NUMBER.sub("", s)) <= _DATA_CHARS


def _without_numeric_data(text):
    """`text` with each top-level statement `NAME = <numbers, strings and brackets only>` (a table of weights or data pasted
    into the file, over one line or many) blanked, its lines kept as empty lines. Such a statement calls and names
    nothing, so the scan loses nothing by not parsing it, and parsing pure numbers costs the trusted side most (a
    node per number: 2.4 MB of `x = 1` lines took 8 s and 1 GB). Anything else on its lines keeps it as it is."""
    if "=" not in text:
        return text
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = _DATA_START.match(lines[i])
        if not m or not _numeric_only(lines[i][m.end():]):
            out.append(lines[i])
            i += 1
            continue
        depth, j, ok = 0, i, True
        while True:
            part = lines[j][m.end():] if j == i else lines[j]
            if j > i and not _numeric_only(part):
                ok = False
                break
            bare = _STRING.sub(" ", part) if ("'" in part or '"' in part) else part  # a "(" in a string is none
            depth += sum(bare.count(c) for c in "([{") - sum(bare.count(c) for c in ")]}")
            if depth < 0:
                ok = False
                break
            if depth == 0:
                break
            j += 1
            if j == len(lines):
                ok = False
                break
        if ok:
            out.extend([""] * (j - i + 1))
            i = j + 1
        else:
            out.append(lines[i])
            i += 1
    return "\n".join(out)


_COMPILED = tuple(s for s in importlib.machinery.all_suffixes() if s != ".py")  # .pyc, .cpython-311-...so, .so


_SCANS = {}  # the last scans: {(path, secrets, what each file is now): _Code}; a submission's by-hand tests share one


def _read_code(path, secrets=()):
    """The submission's code as the worker runs and imports it (see _Code): every .py file under the
    folder (`__hidden/` too: the worker can import it), decoded as Python decodes it (a `coding:` line);
    notebook cells and the files their `%%writefile` cells write; the .py members of every zip archive
    (whatever its name: `sys.path` takes any), each cut into the pieces the loader runs. Read once while
    the files stay as they are (their sizes, times and inodes): the by-hand tests of one grade ask in turn."""
    real = path if os.path.isdir(path) else file_source(path, secrets)
    if real is None:
        return _Code()
    notes = []
    if os.path.isdir(real):
        files = []
        for root, dirs, names in walk(real):
            dirs[:] = sorted(d for d in dirs if d not in (".git", "__pycache__"))  # the worker's copy has neither
            files += [os.path.join(root, n) for n in sorted(names)]
            if len(files) > MAX_FILES:
                notes.append(f"more than {MAX_FILES} files in the submission")
                break
        base = real
    else:
        files, base = [real], os.path.dirname(real)
    key = (path, real, tuple(secrets), tuple(_stamp(f) for f in files[:MAX_FILES]))
    if key not in _SCANS:
        code = _Code()
        code.notes += notes
        _scan(files, base, code)
        _SCANS.clear()  # one submission's scan at a time: a batch holds no more than the one it grades
        _SCANS[key] = code
    return _SCANS[key]


def _stamp(f):
    try:
        st = os.lstat(f)
    except OSError:
        return (f, None)
    return (f, st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode)


def _scan(files, base, code):
    for f in files[:MAX_FILES]:
        rel = os.path.relpath(f, base)
        try:
            if os.path.islink(f):  # the worker's copy holds a link's file only where it stays in the folder
                target = os.path.realpath(f)
                if not target.startswith(os.path.realpath(base) + os.sep) or not os.path.isfile(target):
                    continue
            elif not os.path.isfile(f):
                continue
            if f.endswith(".py"):
                if os.path.getsize(f) > MAX_BYTES:
                    code.notes.append(f"{rel} is larger than the grader reads")
                    code.add_unread(rel)
                    continue
                code.add_module(rel, read_source(f))
            elif f.endswith(".ipynb"):
                _read_notebook(f, rel, code)
            elif f.endswith(_COMPILED):
                code.add_unread(rel)
            if zipfile.is_zipfile(f):
                _read_zip(f, rel, code)
        except (OSError, ValueError, UnicodeError, zipfile.BadZipFile, RuntimeError) as e:
            code.notes.append(f"{rel} could not be read ({type(e).__name__})")


def _read_notebook(f, rel, code):
    """A notebook's cells as the loader reads them (`_cells`: within its bounds of bytes and JSON values, so a
    file built to be costly to parse costs the trusted side a count of its bytes, not a parse): one it does
    not read is said, with why (the loader does not run it either, and says so)."""
    try:
        cells = _cells(f)
    except NotebookError as e:
        code.notes.append(f"{rel} was not read: {e}")
        return
    code._file = f
    for _number, src, _count in cells:
        target = writefile_target(src)
        if target is not None:  # the loader writes this file: code can import it
            name, body, _append = target
            name = os.path.normpath(name) if name else name
            if name and (os.path.isabs(name) or name.startswith("..")):
                name = os.path.basename(name)
            if name and name.endswith(".py"):
                code.add_module(name, body)
                code._file = f
            elif name and name.endswith(_COMPILED):
                code.add_unread(name)
            continue
        if code.take(os.path.basename(f), src, module=False):
            code.add_pieces(cell_pieces(src)[2])


def _read_zip(f, rel, code):
    """The .py members of the archive `f` as the worker's import (zipimport) reads them, bounded: one bad
    or hostile archive (a zip bomb, a corrupt or encrypted member, entries sharing their data) costs only
    itself, with a note, and what was not read is code the grader cannot read (`add_unread`)."""
    try:
        with open(f, "rb") as fp, zipfile.ZipFile(fp) as z:
            members = z.infolist()
            if len(members) > MAX_ZIP_MEMBERS:
                code.notes.append(f"{rel} holds more files than the grader reads")
            _read_members(fp, members[:MAX_ZIP_MEMBERS], rel, code)
    except Exception as e:  # noqa: BLE001 - whatever the archive does, it costs only itself
        code.notes.append(f"{rel} could not be read ({type(e).__name__})")


def _read_members(fp, members, rel, code):
    left = MAX_ZIP_BYTES  # of this archive
    starts, ends = [], []  # the data spans read so far, sorted (they never overlap)
    done = {}  # (start, end) -> "read", "unread" or "undecoded": an entry naming data already read reuses it
    for m in members:
        if m.is_dir():
            continue
        if m.filename.endswith(".pyc"):
            code.add_unread(m.filename)
            continue
        if not m.filename.endswith(".py"):
            continue
        try:
            span = _data_span(fp, m)
        except Exception as e:  # noqa: BLE001
            code.notes.append(f"{rel}: {m.filename} could not be read ({type(e).__name__})")
            code.add_unread(m.filename)
            continue
        if span in done:  # more entries for one member's data: read once, each name is still a module
            if done[span] == "read":
                parts = m.filename.replace(os.sep, "/").split("/")
                code.own.update(p for p in parts[:-1] if p.isidentifier())
                code.own.add(parts[-1][:-3])
            elif done[span] == "unread":
                code.add_unread(m.filename)
            continue
        i = bisect.bisect_left(starts, span[0])
        if (i > 0 and ends[i - 1] > span[0]) or (i < len(starts) and starts[i] < span[1]):
            code.notes.append(f"{rel}: {m.filename} overlaps another member's data (not read)")
            code.add_unread(m.filename)
            continue
        starts.insert(i, span[0])
        ends.insert(i, span[1])
        done[span] = "unread"
        limit = max(0, min(MAX_BYTES, left, code.inflate_left))
        try:
            raw = _inflate(fp, m, span, limit)
        except Exception as e:  # noqa: BLE001 - a corrupt member (zlib.error, EOFError...) costs only itself
            code.notes.append(f"{rel}: {m.filename} could not be read ({type(e).__name__})")
            code.add_unread(m.filename)
            continue
        left -= len(raw)
        code.inflate_left -= len(raw)
        if len(raw) > limit:
            code.notes.append(f"{rel}: {m.filename} is larger than the grader reads" if limit == MAX_BYTES else
                              f"{rel}: {m.filename} was not read (the archives inflate to more than the grader reads)")
            code.add_unread(m.filename)
            continue
        try:
            text = read_source_bytes(raw)
        except Exception as e:  # noqa: BLE001 - as a .py file of the folder that does not decode: a note
            done[span] = "undecoded"
            code.notes.append(f"{rel}: {m.filename} could not be read ({type(e).__name__})")
            continue
        done[span] = "read"
        try:
            code.add_module(m.filename, text)
        except Exception as e:  # noqa: BLE001
            code.notes.append(f"{rel}: {m.filename} could not be read ({type(e).__name__})")


def _data_span(fp, m):
    """(start, end) of member m's data in the archive, found as zipimport finds it: after the local header
    at the central directory's offset, `compress_size` bytes long (all of them in the file)."""
    fp.seek(m.header_offset)
    head = fp.read(30)
    if len(head) != 30 or head[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile("bad local file header")
    name_size, extra_size = struct.unpack("<HH", head[26:30])
    start = m.header_offset + 30 + name_size + extra_size
    if start + m.compress_size > os.fstat(fp.fileno()).st_size:  # zipimport reads all of it, or fails
        raise EOFError("a member's data runs past the end of the archive")
    return start, start + m.compress_size


def _inflate(fp, m, span, limit):
    """At most limit + 1 bytes of member m's source as zipimport reads it: stored data as is, anything else
    inflated with zlib (zipimport inflates whatever the method field says), to the end of the deflate
    stream, whatever size the archive declares (zipimport checks neither the size nor the CRC). The bytes
    inflated are bounded by `limit`, never by a size the archive states."""
    start, end = span
    fp.seek(start)
    if m.compress_type == zipfile.ZIP_STORED:
        raw = fp.read(min(end - start, limit + 1))
        if len(raw) < min(end - start, limit + 1):
            raise EOFError("the archive ends inside a member")
        return raw
    d = zlib.decompressobj(-15)
    out, n, pos = [], 0, start
    while n <= limit and not d.eof:
        data = d.unconsumed_tail
        if not data:
            if pos >= end:
                raise zlib.error("incomplete or truncated stream")
            data = fp.read(min(end - pos, 1 << 16))
            if not data:
                raise EOFError("the archive ends inside a member")
            pos += len(data)
        piece = d.decompress(data, limit + 1 - n)  # max_length > 0: never more than the bound
        out.append(piece)
        n += len(piece)
    return b"".join(out)


read_code = _read_code
