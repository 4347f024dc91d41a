"""What a worker's answers mean: its fields checked, and its failures in a student's words.

What it is for: the pure functions the trusted side's handle (`checker.running.sandbox`)
uses on what a worker sends or how it ended: the unit events and load messages
of a load reduced to plain fields of known types and lengths (`load_unit`,
`load_message`, `defs_from`), where a unit or cell is as the student's notebook
shows it (`where_text`, `cell_words`), why a def the student wrote never ran
(`unrun_text`), what ended a worker process (`describe_status`: "your code
crashed with a segmentation fault"), and a worker's error answer turned into
the `GradingFailure` to raise (`failure_from`, with `TORCH_ERROR_NOTES` saying
the usual cause of torch errors whose words do not).

What it is not: the handle itself (`checker.running.sandbox`: processes, sockets, time
limits and budgets), the wire format (`checker.wire`), or a judge of values
(`checker.judging.compare`). Nothing here talks to a process or reads the clock; every
input is untrusted data from a worker and is only read, never run.
"""

import os
import re
import signal

from checker import wire
from checker.errors import BadReturn, StudentError, StudentTimeout
from checker.worker.diskcap import DISK_FILES, DISK_MB

__all__ = ["TORCH_ERROR_NOTES", "describe_status", "load_unit", "cell_words", "where_text", "load_message",
           "defs_from", "unrun_text", "failure_from", "quoted", "QUOTE_INDENT"]

# Every line break str.splitlines knows (CR LF, LF, CR, VT, FF, FS, GS, RS, NEL, LS, PS): a student's text quoted
# into a message has each line after its first indented by QUOTE_INDENT, so no line of it starts where the
# grader's own lines do (its "Likely mistake:" hints start a line, and the class report counts only those).
_LINE_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
QUOTE_INDENT = "    "


def quoted(text):
    """A student's text (an exception's words, a name, a line of code) as quoted into a grader's message:
    its line breaks kept as newlines, each line after the first indented by QUOTE_INDENT."""
    return _LINE_BREAK.sub("\n" + QUOTE_INDENT, str(text))


# torch (and numpy) errors whose words do not say their usual cause in student code
TORCH_ERROR_NOTES = [
    (re.compile(r"element 0 of tensors does not require grad"),
     "the output is not connected to the parameters: forward runs under torch.no_grad() or @torch.no_grad(), "
     "or a tensor was detached (.detach(), .data, .numpy(), .item()) on the way"),
    (re.compile(r"modified by an inplace operation"),
     "an in-place operation (`x += ...`, `x[...] = ...`, `.masked_fill_()`, `nn.ReLU(inplace=True)`) changed a "
     "tensor that backward still needs: use the out-of-place form (`x = x + ...`, `.masked_fill(...)`)"),
    (re.compile(r"batch1 must be a 3D tensor|Expected 3-dimensional tensor|expected 3D tensor"),
     "torch.bmm takes exactly 3-D tensors: `@` (torch.matmul) works for any number of leading axes"),
    (re.compile(r"Cannot copy out of meta tensor"),
     "your code copied a tensor to a device chosen once for the whole program (`x.to(device)` with a global `device`, `.cuda()`, `.cpu()`); inside a "
     "module, make tensors on the device of the input or of the parameters (`x.device`)"),
    # .cuda() (or device="cuda") where this grader has no GPU: a device chosen by the code, not by its input
    (re.compile(r"Torch not compiled with CUDA enabled|Found no NVIDIA driver|No CUDA GPUs are available"),
     "your code moved a tensor to the GPU itself (`.cuda()`, `device=\"cuda\"`, `.to(\"cuda\")`), and this "
     "grader has none; code that runs on any device makes tensors on the device of its input or of the "
     "parameters: `.to(x.device)`, `torch.zeros(..., device=x.device)`"),
    (re.compile(r"Dimension out of range"),
     "an axis that only inputs with more axes have: count axes from the end (dim=-1, .transpose(-2, -1)), "
     "so that any number of leading batch or head axes works"),
    # numpy's words for the same (a softmax written for a 2-D batch, `axis=1`, given the scores of one query)
    (re.compile(r"axis -?\d+ is out of bounds for array of dimension \d+"),
     "an axis that only inputs with more axes have: count axes from the end (axis=-1 is the last axis of a 1-D "
     "and of a 2-D array alike), so that the function works on every shape the handout gives it"),
]


def describe_status(status, memory_mb=None):
    """What ended a worker, in words for a student ("your code crashed with a segmentation fault ...")."""
    if status is None:
        return "your code stopped the process that runs it (it closed the grader's connection or died)"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        mem = f" (more than {memory_mb:g} MiB)" if memory_mb else ""
        words = {
            signal.SIGSEGV: "your code crashed with a segmentation fault (SIGSEGV: it read or wrote memory it "
                            "does not own, e.g. through ctypes or a C extension)",
            signal.SIGBUS: "your code crashed with a bus error (SIGBUS: a bad memory access)",
            signal.SIGABRT: "your code aborted the process (SIGABRT, e.g. a failed check inside a C library)",
            signal.SIGFPE: "your code crashed with a floating-point exception (SIGFPE)",
            signal.SIGILL: "your code crashed with an illegal instruction (SIGILL)",
            signal.SIGKILL: f"the process running your code was killed (SIGKILL), most often for using too "
                            f"much memory{mem}",
            signal.SIGXFSZ: f"your code wrote more than allowed: a file over 256 MiB, or more than {DISK_MB} MiB or "
                            f"{DISK_FILES} files in all in its folder (files it deleted but kept open count), or it kept more "
                            "files open across its processes than the grader can watch",
            signal.SIGXCPU: "your code used more CPU time than allowed",
        }
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return words.get(sig, f"the process running your code was ended by {name}")
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == wire.CHANNEL_LOST_EXIT:
        return ("your code closed the connection the grader uses to talk to the process that runs it (os.close "
                "of a file descriptor your code did not open?); leave descriptors you did not open alone")
    if os.WIFEXITED(status):
        code = os.WEXITSTATUS(status)
        return (f"your code ended the process that runs it with os._exit({code}) (or another hard exit); "
                "use `return` or raise an exception instead")
    return "the process running your code died"


def load_unit(header):
    """A unit event from the (untrusted) worker, checked: {file: str, cell: int|None, line: int|None}."""
    file, cell, line = header.get("file"), header.get("cell"), header.get("line")
    label = header.get("label")  # how the notebook shows the cell ("In [7]"), told by the loader
    return {"file": str(file)[:200] if file is not None else "?",
            "cell": cell if type(cell) is int else None,
            "line": line if type(line) is int else None,
            "label": label[:40] if isinstance(label, str) and type(cell) is int else None}


def cell_words(where):
    """How the student's notebook shows a cell: the worker's label ("In [7]", "the 4th code cell"), else its number."""
    label = where.get("label")
    return label[:40] if isinstance(label, str) and label else f"cell {where.get('cell')}"


def where_text(unit):
    return (f"{unit['file']}, {unit.get('label') or 'cell ' + str(unit['cell'])}" if unit["cell"] is not None
            else f"{unit['file']}, line {unit['line']}")


def load_message(m):
    """A load message from the worker, reduced to plain fields of known types."""
    def _int(v):
        return v if type(v) is int else None
    return {"kind": str(m.get("kind"))[:40], "file": str(m["file"])[:200] if m.get("file") is not None else None,
            "cell": _int(m.get("cell")), "line": _int(m.get("line")), "text": str(m.get("text", ""))[:4000]}


def defs_from(raw, whys=None):
    """The worker's {name: {file, cell, line}} of def/class statements, kept only where well-formed
    (and, given `whys`, only those whose "why" is one of them)."""
    out = {}
    if not isinstance(raw, dict):
        return out
    for name, d in list(raw.items())[:10000]:
        if not (isinstance(name, str) and isinstance(d, dict) and isinstance(d.get("file"), str)):
            continue
        if whys is not None and d.get("why") not in whys:
            continue
        cell, line = d.get("cell"), d.get("line")
        out[name[:200]] = {"file": d["file"][:200],
                           "cell": cell if type(cell) is int and cell >= 1 else None,
                           "line": line if type(line) is int and line >= 1 else None,
                           **({"label": d["label"][:40]} if isinstance(d.get("label"), str) else {}),
                           **({"why": d["why"]} if whys is not None else {})}
    return out


def unrun_text(name, unrun):
    """Why a def/class the student wrote never ran, and what to do about it: one text for every name
    that failed the same way in the same place, so a question missing several says it once."""
    d = unrun[name]
    same = [n for n, e in unrun.items()
            if (e["file"], e["cell"], e["why"]) == (d["file"], d["cell"], d["why"])]
    same.sort(key=lambda n: (unrun[n]["line"] or 0, n))
    lines = [unrun[n]["line"] for n in same if unrun[n]["line"]]
    names = ", ".join(f"`{n}`" for n in same[:8]) + (f" and {len(same) - 8} more" if len(same) > 8 else "")
    it, is_ = ("they", "are") if len(same) > 1 else (f"`{name}`", "is")
    where = quoted(d["file"]) + (f", cell {d['cell']}" if d["cell"] else "")
    if lines:
        where += f", line {lines[0]}" if len(lines) == 1 else f", lines {lines[0]}-{lines[-1]}"
    if d["why"] == "main_guard":
        return (f"{names} {is_} defined in {where}, inside `if __name__ == \"__main__\":`. The grader imports "
                f"your file as a module, so that block does not run and {it} {'are' if it == 'they' else 'is'} "
                "never defined: move the defs to the top level of the file (keep only demo code under the `if`).")
    if d["why"] == "stopped":
        return (f"{names} {is_} defined in {where}, but running that code stopped with an error before "
                f"{it} {'were' if it == 'they' else 'was'} defined (see the loading messages): fix that error, "
                "or give the defs a cell of their own.")
    return (f"{names} {is_} defined in {where}, inside an if/for/while/with/try block whose code never "
            "reached the def: define functions and classes at the top level.")


def failure_from(err, what, memory_mb, missing):
    """What a worker's error answer to `what` means, as the GradingFailure to raise: `err` is the worker's
    (untrusted) {type, message, where, bases, timeout, name}; `missing(name)` makes the MissingName of a
    name the submission lacks, and `memory_mb` is the worker's memory cap named in a MemoryError."""
    if not isinstance(err, dict):
        err = {}
    etype = quoted(str(err.get("type", "Error"))[:100])
    said = str(err.get("message", ""))[:2000]
    msg = quoted(said)
    if etype == "MissingName":
        return missing(str(err.get("name", "?")))
    if etype == "BadReturn":
        return BadReturn(f"{what} returned a value the grader cannot read: {msg}")
    if etype == "ProbeError":
        return StudentError(f"{what}: {msg}")
    where = err.get("where") if isinstance(err.get("where"), dict) else None
    loc = ""
    if where:
        loc = quoted(f" at {where.get('file')}" + (f", {cell_words(where)}" if where.get("cell") is not None else "")
                     + f", line {where.get('line')}")
        if where.get("code"):
            loc += f":\n    {quoted(str(where['code'])[:200])}"
    if err.get("timeout"):
        return StudentTimeout(f"{what} was stopped by the time limit{loc}")
    bases = err.get("bases") if isinstance(err.get("bases"), list) else [etype]
    if etype == "SystemExit":
        text = (f"{what} called sys.exit({msg}) (a function should return its result; "
                f"the grader ignored the exit){loc}")
    elif etype == "MemoryError":
        text = (f"{what} ran out of memory (the limit is {memory_mb:g} MiB){loc}")
    else:
        text = f"{what} raised {etype}: {msg}{loc}" if msg else f"{what} raised {etype}{loc}"
        if "PermissionError" in bases:
            text += ("\n(the grader runs your code in a sandbox: it may read your submission and the "
                     "Python installation and write only its own temporary folder; no network, no "
                     "other processes)")
        text += next((f"\n({note})" for pattern, note in TORCH_ERROR_NOTES if pattern.search(said)), "")
    failure = StudentError(text)
    failure.where = where
    failure.exc_types = [str(b)[:100] for b in bases[:20]]
    return failure
