"""The worker's side of the conversation: load the submission, answer calls.

What it is for: the body of a forked worker process. It puts up the walls
(`isolation`), moves into its private temp dir, reports the walls to the
trusted side before any student code runs, loads the submission
(`loader`; its current directory is the scratch copy of the folder holding
the submission, the one folder it may write, while the read-only copy's
folders are on `sys.path`: `isolation.scratch_of`), then answers requests from the trusted side one at a time:
`call` a student function or run a `probe`, returning plain data (`wire`)
with the student's captured output (the first 64 KiB, and a count of the
rest), or the student's exception with the student's own file/cell/line.

What it is not: trusted. Everything here can be changed by the submission
once it has run; the trusted side validates every byte it receives.
"""

import io
import os
import sys
import tempfile
import time

from checker import wire
from checker.worker.isolation import WallsRefused, apply_isolation, scratch_of
from checker.worker.loader import Loader
from checker.worker.probes import Probes, ProbeError
from checker.worker.tracebacks import format_student_tb, student_where
from checker.worker.unit_guard import UnitTimeout, restore_builtins

__all__ = ["serve", "CappedWriter"]

KEEP = 64 * 1024


class CappedWriter(io.TextIOBase):
    """Keeps the first 64 KiB written and counts the rest."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.parts, self.kept, self.dropped = [], 0, 0

    def write(self, s):
        s = str(s)
        room = KEEP - self.kept
        if room > 0:
            self.parts.append(s[:room])
            self.kept += min(len(s), room)
        self.dropped += max(0, len(s) - max(room, 0))
        return len(s)

    def writable(self):
        return True

    def flush(self):
        pass

    def take(self):
        text, dropped = "".join(self.parts), self.dropped
        self.reset()
        return text, dropped


def _silence_fds():
    """Point fds 1 and 2 at /dev/null: C-level output is dropped, never fills a pipe."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)


SERVING = False  # True in a worker's body once it serves: checker.check() there does nothing


def serve(sock, params):
    """Run the worker until told to stop or the socket closes. Never returns normally."""
    global SERVING
    SERVING = True
    out = CappedWriter()
    _silence_fds()
    sys.stdout = sys.stderr = out
    sys.stdin = io.StringIO("")
    workdir = params["workdir"]
    os.chdir(workdir)
    refused = None
    try:
        isolation = apply_isolation(workdir, params.get("secrets", []), params.get("memory_mb", 4096),
                                    cgroup_parent=params.get("cgroup_parent"),
                                    use_namespaces=params.get("namespaces", True))
    except WallsRefused as e:  # no student code runs here: every load is answered with why
        isolation, refused = e.walls, str(e)
    os.environ.clear()
    os.environ.update(params.get("env", {}))
    scratch = scratch_of(workdir, workdir)  # the one folder the code may write, not on sys.path
    os.environ["HOME"] = os.environ["TMPDIR"] = scratch
    # who it is, as a login says: its uid is in no passwd of the host (without namespaces it has none of its
    # own), and getpass.getuser() (torch asks it for its caches' folders) would raise KeyError from pwd
    os.environ["USER"] = os.environ["LOGNAME"] = "nobody"
    # `checker.check()` in a notebook being graded does nothing (checker.platforms.notebook): the student's
    # `import checker` gets a fresh copy of the package (_forget_grader_modules), which cannot see SERVING
    os.environ["HWCHECK_WORKER"] = "1"
    tempfile.tempdir = scratch  # the zygote's cached temp dir (/tmp) is one the walls forbid
    state = {"loader": None, "probes": None, "max_reply": params.get("max_reply"), "refused": refused,
             "workdir": workdir, "made": {}}
    ok_id = None  # the id of the last request answered ok (an ask sent "after" it runs only then)
    while True:
        try:
            header, bufs = wire.recv_msg(sock)
        except (EOFError, OSError, wire.WireError):
            os._exit(0)
        op = header.get("op")
        call_id = header.get("id")  # echoed in the reply and the events: the trusted side matches them
        if op == "bye":
            wire.send_msg(sock, {"ok": True, "id": call_id})
            os._exit(0)
        t0 = time.perf_counter()
        out.reset()
        after = header.get("after")
        try:
            if after is not None and after != ok_id:
                # one of asks sent together (wire.py, "Asks sent together"): the ask before it did not answer
                # ok, so this one is not run; the trusted side asks it again alone if it still wants it
                reply, rbufs = {"ok": False, "error": {"type": "NotRun", "message": "not run"}}, []
            elif op == "load":
                reply, rbufs = _load(sock, header, state, isolation)
            else:
                reply, rbufs = _dispatch(header, bufs, state)
        except BaseException as e:  # noqa: BLE001 - the student's exception, whatever it is
            reply, rbufs = _error_reply(e, state), []
        sys.stdout = sys.stderr = out  # a submission may have replaced them
        text, dropped = out.take()
        reply.update(id=call_id, stdout=text, stdout_dropped=dropped, duration_s=time.perf_counter() - t0)
        ok_id = None
        try:
            wire.send_msg(sock, reply, rbufs)
            ok_id = call_id if reply.get("ok") is True else None
        except OSError:
            os._exit(wire.CHANNEL_LOST_EXIT)
        except BaseException as e:  # noqa: BLE001 - e.g. MemoryError, or a value json cannot write
            reply, rbufs = None, None
            try:
                wire.send_msg(sock, {"ok": False, "id": call_id, "stdout": "", "stdout_dropped": dropped, "error": {
                    "type": "BadReturn", "message": f"the answer could not be sent ({type(e).__name__}: {e})"[:500]}})
            except BaseException:  # noqa: BLE001
                os._exit(0)


def _load(sock, header, state, isolation):
    # first, before any student code runs: what protects this worker (the trusted side believes
    # only this report, since a submission could forge anything sent later)
    call_id = header.get("id")
    wire.send_msg(sock, {"event": "walls", "isolation": isolation, "id": call_id})
    if state["refused"]:
        return {"ok": False, "error": {"type": "GraderRefused", "message": state["refused"]}}, []

    def on_unit(unit):
        wire.send_msg(sock, {"event": "unit", **unit, "id": call_id})

    path = header["path"]
    # its cwd: the scratch copy of the folder it was loaded from (its data files are there; what it
    # writes there is never imported: the folders on sys.path are the read-only copy)
    os.chdir(scratch_of(state["workdir"], path))
    _forget_grader_modules()
    loader = Loader(unit_s=header.get("unit_s", 30), on_unit=on_unit,
                    skip=header.get("skip", ()))
    loader.load(path)
    state["loader"], state["probes"] = loader, Probes(loader.ns)
    state["probes"].loader = loader  # where names got their values, for messages
    names = sorted(n for n in list(loader.ns) if type(n) is str and not n.startswith("_")
                   and n not in ("display", "get_ipython"))
    base = os.path.realpath(path if os.path.isdir(path) else os.path.dirname(path))
    written = os.path.realpath(scratch_of(state["workdir"], path))  # where %%writefile cells put modules
    classes = [n for n in names if isinstance(loader.ns.get(n), type)
               and (_written_here(loader.ns[n], base) or _written_here(loader.ns[n], written))]
    return {"ok": True, "messages": loader.messages, "names": names, "classes": classes,
            "origins": loader.origins, "defs": loader.defs, "isolation": isolation,
            "unrun": {n: d for n, d in loader.unrun.items() if n not in loader.ns}}, []


def _forget_grader_modules():
    """Take hwcheck's own modules out of sys.modules before student code runs.

    The worker's code keeps the module objects it already imported (it imports nothing of hwcheck
    later), but `import checker` in a submission must find the student's own `checker.py` (a helper
    file of theirs), as it does in Jupyter, not the grader's package."""
    for name in [m for m in sys.modules if m == "checker" or m.startswith("checker.")]:
        del sys.modules[name]


def _written_here(cls, base):
    """Was this class written in the submission (not imported from a library)?"""
    module = getattr(cls, "__module__", None)
    if module in ("submission", "__main__"):  # a .py file's or a notebook's own class
        return True
    path = getattr(sys.modules.get(module), "__file__", None) or ""
    return os.path.realpath(path).startswith(base + os.sep)


def _dispatch(header, bufs, state):
    probes = state["probes"]
    if probes is None:
        return {"ok": False, "error": {"type": "NotLoaded", "message": "no submission loaded"}}, []
    args = wire.decode_worker(header.get("args", {}), bufs)
    op = header.get("op")
    made = state["made"]
    _grader_default_dtype()
    if isinstance(args, dict) and isinstance(args.get("handle"), dict):
        # a module made by an earlier ask of the same batch: its handle, by the id of the "new" that made it
        args["handle"] = made.get(args["handle"].get("made_by"))
    if op == "call_on_meta":
        value = probes.call_on_meta(args["name"], args.get("shapes", []), args.get("dtype", "float32"),
                                    bool(args.get("lenient")))
    elif op == "top_level_ints":
        value = probes.top_level_ints()
    elif op == "parameters":
        value = probes.parameters(args["name"])
    elif op in ("call", "torch_calls", "call_changes"):
        value = getattr(probes, op)(args["name"], args.get("args", []), args.get("kwargs", {}))
    elif op in ("new", "forward", "grads", "to", "attr_shape", "swap_rows", "meta_forward", "on_meta",
                "get_params", "set_params"):
        value = getattr(probes, op)(**args)
    else:
        return {"ok": False, "error": {"type": "UnknownOp", "message": f"unknown op {op!r}"}}, []
    restore_builtins()  # what the call rebound of the builtins module is not the encoder's to use
    if op == "new" and isinstance(value, dict) and type(header.get("id")) is int:
        made[header["id"]] = value.get("handle")
        while len(made) > 64:
            del made[next(iter(made))]
    # the trusted side's bound for this one answer (far above what an answer to these inputs needs)
    caps = [c for c in (header.get("max_reply"), state.get("max_reply")) if type(c) is int and c >= 0]
    try:
        obj, rbufs = wire.encode(value, max_bytes=min(caps) if caps else None)
    except wire.EncodeError as e:
        return {"ok": False, "error": {"type": "BadReturn", "message": str(e)}}, []
    return {"ok": True, "value": obj}, rbufs


def _grader_default_dtype():
    """torch's default dtype back to float32 before each ask: the grader chooses each module's dtype (`new` casts
    it), so a submission's own `torch.set_default_dtype(torch.float64)` (its whole program in float64, which is
    correct) must not leave float64 tensors made in forward beside the float32 parameters the grader gave it (h98:
    a correct model lost 29 of 35 points to "mixed dtype"). Tensors made in forward that do not follow the
    parameters' dtype are still told apart by the float64 tests, as for every other submission."""
    torch = sys.modules.get("torch")
    setter = getattr(torch, "set_default_dtype", None) if torch is not None else None
    if callable(setter) and getattr(torch, "get_default_dtype", lambda: None)() != getattr(torch, "float32", None):
        setter(torch.float32)


def _error_reply(e, state):
    files = state["loader"].files if state["loader"] else {}
    if isinstance(e, ProbeError):
        msg = str(e)
        if msg.startswith("missing:"):
            return {"ok": False, "error": {"type": "MissingName", "name": msg[8:], "message": msg}}
        return {"ok": False, "error": {"type": "ProbeError", "message": msg}}
    try:
        text = str(e)[:2000]
    except BaseException:  # noqa: BLE001
        text = "<unprintable exception>"
    err = {"type": type(e).__name__, "bases": [c.__name__ for c in type(e).__mro__][:20],
           "message": text, "where": student_where(e, files),
           "traceback": format_student_tb(e, files)[:8000],
           "timeout": isinstance(e, UnitTimeout)}
    return {"ok": False, "error": err}
