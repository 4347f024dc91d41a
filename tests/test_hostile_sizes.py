"""Hostile sizes: one submission must not cost the trusted side (the grader process that never runs student
code) memory, disk or time out of proportion to an honest one.

Attacked, each with a real submission graded by a real `hwcheck check`:
  * a notebook beside the code built to be costly to parse: `{"cells":[{},{},...]}`, a few MB of JSON values.
    The by-hand scan parsed any notebook whole (60 MiB cost the trusted process 1.4 GB); every reader of a
    notebook now parses it through `checker.worker.sources.notebook_json`, which counts the bytes that start
    JSON values (`{`, `[`, `,`) before parsing and refuses past MAX_NOTEBOOK_VALUES, saying so, and an honest
    notebook made large by an image in its outputs is still read;
  * code files that add up past the folder copy's total: the copy counted only the other files, so eight
    60 MiB .py files were copied twice per worker, again at each restart; code now counts, a .py past
    MAX_COPY_CODE is left out, and each left-out file is named with why;
  * a reply frame forged by student code whose header is millions of `[]`: the trusted side parsed the whole
    header before any bound; now its values are counted first and the header's bytes count against the
    answer's bound, while honest answers (long lists, large dicts, many arrays) still pass.
"""

import base64
import json
import os
import socket
import struct
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from checker import wire
from checker.errors import WireError
from checker.records.identical import notebook_cells
from checker.running.scan_read import read_code
from checker.running import submission_files
from checker.worker import sources
from checker.worker.sources import NotebookError, _cells

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORRECT = os.path.join(REPO, "submissions", "attention", "correct.py")
MiB = 1 << 20
# the bounds (read where they are defined, their numbers where they are not: the attacks themselves need none)
MAX_COPY_CODE = getattr(submission_files, "MAX_COPY_CODE", 16 * MiB)
MAX_COPY_TOTAL = getattr(submission_files, "MAX_COPY_TOTAL", 128 * MiB)
MAX_NOTEBOOK_VALUES = getattr(sources, "MAX_NOTEBOOK_VALUES", 1_000_000)
MAX_HEADER_VALUES = getattr(wire, "MAX_HEADER_VALUES", 1_500_000)


def _check(path):
    r = subprocess.run([sys.executable, "-m", "checker.cli", "check", str(path), "-a", "attention"],
                       capture_output=True, text=True, cwd=REPO, timeout=300)
    assert "Traceback (most recent call last)" not in r.stdout + r.stderr, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout + r.stderr


def _folder(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    with open(CORRECT) as f:
        (sub / "main.py").write_text(f.read())
    return sub


def _nb(cells, outputs=()):
    return {"cells": [{"cell_type": "code", "execution_count": i + 1, "metadata": {}, "outputs": list(outputs),
                       "source": src} for i, src in enumerate(cells)],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_a_notebook_of_millions_of_json_values_is_not_parsed_and_said(tmp_path):
    sub = _folder(tmp_path)
    n = MAX_NOTEBOOK_VALUES // 2 + 1000  # `{},` is two such bytes: just past the bound, 1.5 MB
    (sub / "notes.ipynb").write_text('{"cells":[' + "{}," * n + "{}]}")
    # the trusted side's readers: the by-hand scan says what it did not read and why; the others read no code
    code = read_code(str(sub))
    assert any(note.startswith("notes.ipynb was not read: its JSON holds more values") for note in code.notes), \
        code.notes
    assert notebook_cells((sub / "notes.ipynb").read_text()) is None
    with pytest.raises(NotebookError, match="clear its outputs"):
        _cells(str(sub / "notes.ipynb"))
    out = _check(sub)
    assert "could not read notes.ipynb: its JSON holds more values than a notebook the grader reads" in out, out
    assert "Total: 90/100" in out, out  # the code beside it is graded as ever


def test_an_honest_notebook_with_a_large_image_is_read(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    with open(CORRECT) as f:
        code = f.read()
    image = base64.b64encode(os.urandom(9 * MiB)).decode()  # 12 MB of base64: a plot saved in the outputs
    outputs = [{"output_type": "display_data", "metadata": {}, "data": {"image/png": image}},
               {"output_type": "stream", "name": "stdout", "text": [f"epoch {i}, loss 0.{i}\n" for i in range(20000)]}]
    (sub / "hw.ipynb").write_text(json.dumps(_nb([code], outputs)))
    assert [src for _n, src, _c in _cells(str(sub / "hw.ipynb"))] == [code]
    assert notebook_cells((sub / "hw.ipynb").read_text()) == [code]
    assert not [n for n in read_code(str(sub)).notes if "hw.ipynb" in n]
    out = _check(sub)
    assert "Total: 90/100" in out and "could not read" not in out, out


@pytest.mark.walls
def test_code_files_count_toward_the_copy_total_and_a_huge_py_is_left_out(tmp_path):
    sub = _folder(tmp_path)
    (sub / "data").mkdir()

    def sparse(name, size):  # nothing written: the copy would read zeros
        with open(sub / "data" / name, "wb") as f:
            f.truncate(size)

    sparse("huge.py", MAX_COPY_CODE + MiB)
    per = 31 * MiB  # notebooks, each under the 64 MiB a file (and a notebook): few files to load
    n = MAX_COPY_TOTAL // per + 1  # one more than fits
    for i in range(n):
        sparse(f"w{i}.ipynb", per)
    out = _check(sub)
    assert "data/huge.py was not given to your code: it is larger than 16 MiB, far more code" in out, out
    last = f"data/w{n - 1}.ipynb"
    assert f"{last} was not given to your code: the submission's files past 128 MiB in all are not copied" in out, out
    assert "data/w0.ipynb was not given" not in out, out
    assert "Total: 90/100" in out, out


# how student code forges a reply with its own call's id (found up its stack), as /tmp probes did
FORGER = textwrap.dedent('''\
    import os
    import socket
    import struct
    import sys


    def _forge():
        f = sys._getframe()
        while f is not None and "call_id" not in f.f_locals:
            f = f.f_back
        n = {n}
        body = b'{{"id":%d,"ok":true,"value":[' % f.f_locals["call_id"] + b"[]," * n + b"[]]}}"
        s = socket.socket(fileno=os.dup(3))
        s.sendall(b"HWC1" + struct.pack("!II", len(body), 0) + body)


    def get_scores(matrix, vector):
        _forge()
        return matrix @ vector
''')


def test_a_forged_header_of_millions_of_values_is_refused_unparsed(tmp_path):
    n = MAX_HEADER_VALUES // 2 + 1000  # `[],` is two such bytes: 2.3 MB, far under MAX_HEADER
    path = tmp_path / "bighdr.py"
    path.write_text(FORGER.format(n=n))
    out = _check(path)
    assert "sent back something the grader cannot read: it holds more values than the grader reads" in out, out


def _receive(data, max_total=wire.MAX_TOTAL):
    """recv_msg's reading of the frame bytes `data` (sent from a thread, as a worker writes them)."""
    a, b = socket.socketpair()

    def send():
        try:
            a.sendall(data)
        except OSError:  # refused: the reader closed its end before reading it all
            pass

    t = threading.Thread(target=send)
    t.start()
    try:
        return wire.recv_msg(b, timeout=30, max_total=max_total, call_id=7)
    finally:
        b.close()
        t.join()
        a.close()


def _round_trip(value, max_total=wire.MAX_TOTAL):
    header, bufs = wire.encode(value)
    got, rbufs = _receive(wire.frame({"id": 7, "ok": True, "value": header}, bufs), max_total)
    return wire.decode_trusted(got["value"], rbufs)[0]


def test_honest_answers_still_cross_and_a_header_counts_against_the_bound():
    # the largest honest values the encoder sends (MAX_ITEMS items): none is refused by the count
    ints = list(range(wire.MAX_ITEMS - 2))
    assert _round_trip(ints) == ints
    pairs = {f"k{i}": i for i in range(wire.MAX_ITEMS // 2 - 2)}
    assert _round_trip(pairs) == pairs
    tuples = [(i, i + 1) for i in range(wire.MAX_ITEMS // 3 - 2)]
    assert _round_trip(tuples) == tuples
    arrays = [np.zeros((2, 3, 4)) for _ in range(4000)]
    assert len(_round_trip(arrays)) == 4000
    # a header larger than the whole answer may be: refused before it is read
    with pytest.raises(wire.FrameTooLarge):
        _round_trip(list(range(300_000)), max_total=1 * MiB)
    # a header of more values than any answer: refused unparsed, whatever its id
    body = b'{"id":7,"ok":true,"value":[' + b"[]," * (MAX_HEADER_VALUES // 2 + 10) + b"[]]}"
    with pytest.raises(WireError, match="more values than the grader reads"):
        _receive(b"HWC1" + struct.pack("!II", len(body), 0) + body)
