"""The trusted side's handle on a submission running in a worker.

What it is for: starting the zygote, getting a fresh worker for a
submission (a private temp dir with a copy of the submission, limits and
walls), loading it, and calling into it with time limits. A worker that
dies, hangs or exceeds its memory is killed with its whole process group
and replaced; the call that broke it raises `StudentTimeout` or
`WorkerCrashed`, and later calls work again. A unit (cell or top-level
statement) that kills the worker while loading is skipped on the next try.
Everything a worker sends is checked here: an answer larger than
`Limits.reply_mb` is refused without being read, captured output is capped
at 64 KiB (`last_stdout`, with `last_stdout_dropped` counting the rest), and
the isolation report kept is the one sent before any student code ran.
Messages say what happened in a student's words ("your code crashed with a
segmentation fault", "... ended the process with os._exit(0)").

What it is not: a judge or a place that runs student code. It only moves
plain data (`wire`) and turns the worker's answers into values or
`GradingFailure`s; what those answers mean (their fields checked, a
failure or a process's end in a student's words) is `checker.running.answers`.
"""

import os
import secrets as _secrets
import signal
import sys
import time

from checker import wire
from checker.running.answers import (defs_from, describe_status, failure_from, load_message, load_unit, unrun_text,
                             where_text)
from checker.errors import BadReturn, MissingName, StudentTimeout, WorkerCrashed
from checker.running.limits import Limits
from checker.running.meta_scan import refuse_meta_aware
from checker.running.modules import ForwardResult, ModuleHandle
from checker.judging.names import call_text, close_names
from checker.running.submission_files import copy_submission, file_source, secret_paths, sha256_of
from checker.running.zygote_client import Zygote

# Limits, Zygote, secret_paths, close_names, call_text, sha256_of, file_source, ModuleHandle and ForwardResult live in
# their own modules (limits, zygote_client, submission_files, names, modules) and are named here too, for the callers
# that import them from here
__all__ = ["Zygote", "SubmissionHandle", "ModuleHandle", "ForwardResult", "Limits",
           "secret_paths", "close_names", "call_text", "sha256_of", "file_source"]

MAX_RESPAWNS = 6     # units skipped because they crashed or hung the worker while loading
MAX_RESTARTS = 50    # fresh workers after a call crashed or hung one (each costs a reload)
KEEP_STDOUT = 64 * 1024

TAMPERED = ("the process running your code wrote to the grader's connection something the grader did not ask "
            "for (code that writes to file descriptors it did not open?), so none of its answers could be "
            "matched to a call any more")


def _tensor_copy(a):
    """A numpy copy of a CPU torch tensor argument (what the wire hands back of it: a numpy array of its dtype),
    or None for anything else (a bfloat16 tensor, which numpy cannot hold, is not compared)."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(a, torch.Tensor) or a.dtype == torch.bfloat16 or a.device.type != "cpu":
        return None
    return a.detach().numpy().copy()


class SubmissionHandle:
    """Everything the trusted side may do with one submission."""

    def __init__(self, path, zygote, limits=None, secrets=(), sub_id=None, warm_meta=False):
        self.path = os.path.abspath(path)
        self.warm_meta = warm_meta  # a torch assignment's: the zygote warms the meta device before the fork
        self.pidfd = None
        self.last_stdout, self.last_stdout_dropped, self.last_dtypes = "", 0, []
        self.id = sub_id or os.path.splitext(os.path.basename(self.path.rstrip("/")))[0]
        self.zygote = zygote
        self.limits = limits or Limits()
        self.secrets = list(secrets) or secret_paths()
        self.pid = None
        self.sock = None
        self.workdir = None
        self.generation = 0
        self.respawns = 0
        self.restarts = 0
        self.skip = []
        self.load_messages = []
        self.names = []
        self.classes = []  # the classes the student wrote (not imported)
        self.origins = {}
        self.defs = {}     # name -> {"file", "cell", "line"} of the student's def/class (see _defs)
        self.unrun = {}    # name -> {"file", "cell", "line", "why"} of a def/class that never ran
        self.called = []   # the student's names the current test called (the plugin clears it per test)
        self.isolation = []
        self.loaded = False
        self.load_ok = False
        self.used = 0.0      # seconds spent waiting on the worker: only the student's time is budgeted
        self.timeouts = {}   # what (e.g. "get_scores(...)") -> how many of its calls did not finish
        self._call_id = _secrets.randbits(40)  # the id of the last request; each reply must echo its own
        self._since = None   # when the current wait on the worker began
        self.status = "graded"
        self.meta_named = {}  # name -> what its code names of the meta device (meta_scan; None: the one-file look)

    # ------------------------------------------------------------ lifecycle
    def time_left(self):
        """The submission's budget minus the time spent waiting on its worker (the grader's own work is free)."""
        running = time.monotonic() - self._since if self._since is not None else 0.0
        return self.limits.submission_s - self.used - running

    def _clock(self, on):
        """Start (on=True) or stop counting the time spent waiting on the worker."""
        now = time.monotonic()
        if self._since is not None:
            self.used += now - self._since
        self._since = now if on else None

    def _spawn(self):
        self._kill()
        self.workdir = self.zygote.mkdir()  # the zygote owns it from birth: a SIGKILL here leaks nothing
        dest = os.path.join(self.workdir, "submission")
        left_out = copy_submission(self.path, dest, self.secrets)
        if self.generation == 0:
            for name, why in left_out:
                self.load_messages.append({"kind": "link", "file": name, "cell": None, "line": None,
                                           "text": f"{name} was not given to your code: {why}"})
        target = dest if os.path.isdir(self.path) else os.path.join(dest, os.path.basename(self.path))
        self.pid, self.sock = self.zygote.fork({
            "workdir": self.workdir, "secrets": self.secrets + [self.path],
            "memory_mb": self.limits.memory_mb, "max_reply": self.limits.reply_bytes,
            "env": {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, "warm_meta": self.warm_meta})
        try:  # a pidfd names this very process even after it exits and its pid is reused
            self.pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            self.pidfd = None
        self.generation += 1
        return target

    def _worker_alive(self):
        if self.pidfd is None:
            return True
        import select
        return not select.select([self.pidfd], [], [], 0)[0]  # readable once the process has exited

    def _kill(self):
        """SIGKILL the worker and its process group; the zygote reaps it and sweeps what it left."""
        if self.pid and self._worker_alive():
            try:
                os.killpg(self.pid, signal.SIGKILL)  # the live leader keeps the group id from being reused
            except OSError:
                pass
            try:
                if self.pidfd is not None:
                    signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
                else:
                    os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
        if self.pidfd is not None:
            os.close(self.pidfd)
        if self.sock:
            self.sock.close()
        if self.workdir:  # the zygote removes it (bounded, never recursing: it is the student's mess)
            self.zygote.remove(self.workdir)
        self.pid = self.sock = self.workdir = self.pidfd = None

    def close(self):
        if self.sock and self.pid:
            try:
                call_id = self._next_id()
                wire.send_msg(self.sock, {"op": "bye", "id": call_id})
                wire.recv_msg(self.sock, timeout=1, max_total=1 << 20, call_id=call_id)
            except (OSError, EOFError, TimeoutError, wire.WireError):
                pass
        self._kill()

    def __enter__(self):
        self.load()
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------ loading
    def load(self):
        """Load the submission (once); return a dict {ok, messages, names, origins, isolation}.

        The first load has a budget of its own (a notebook's training cells must not spend the time of
        the tests); a reload after a call crashed the worker counts against the submission's budget from
        the moment the new worker's walls are up (its "walls" event): the fork, the walls and the copy of
        the submission are the grader's own work, and a slower machine or a costlier wall must not spend a
        student's time."""
        first = self.generation == 0
        try:
            self._clock(False)
            return self._load(first)
        finally:
            self._clock(False)

    def _load(self, first=False):
        start = time.monotonic()
        cap = min(max(self.limits.cell_s * 50, 60), 2 * self.limits.submission_s)  # --timeout bounds it too
        # one unit's limit stays well inside the whole load's, so a hanging statement is skipped, not fatal
        unit_s = min(self.limits.cell_s, max(1.0, cap / 3))

        def load_left():
            return cap - (time.monotonic() - start) if first else min(cap, self.time_left())

        while True:
            target = self._spawn()
            self.loaded = True
            budget = load_left()
            deadline = time.monotonic() + max(budget, 1)
            unit_deadline = False  # whether the deadline is one unit's (cell_s) rather than the whole load's
            grace = min(5.0, 1.0 + unit_s / 4)  # the worker's own alarm fires at cell_s
            last_unit, walls = None, None
            try:
                call_id = self._next_id()
                wire.send_msg(self.sock, {"op": "load", "path": target, "unit_s": unit_s,
                                          "skip": self.skip, "id": call_id})
                while True:
                    left = deadline - time.monotonic()
                    header, _ = wire.recv_msg(self.sock, timeout=max(left, 0.01), max_total=64 << 20,
                                              call_id=call_id)
                    event = header.get("event")
                    if event == "walls" and walls is None and last_unit is None:
                        # sent before any student code ran: the only isolation report to believe
                        walls = [str(x)[:100] for x in header.get("isolation", [])][:20] \
                            if isinstance(header.get("isolation"), list) else []
                        if not first:  # a reload: the student's code runs from here on (see load)
                            self._clock(True)
                        else:  # the first load's own cap, too, counts the student's code, not the walls
                            start = time.monotonic()
                            deadline = time.monotonic() + max(load_left(), 1)
                        continue
                    if event == "unit":
                        last_unit = load_unit(header)
                        unit_deadline = unit_s + grace <= load_left()
                        deadline = time.monotonic() + min(unit_s + grace, max(load_left(), 0.01))
                        continue
                    if event is not None:
                        continue
                    break
            except (TimeoutError, EOFError, OSError, wire.WireError) as e:
                if isinstance(e, TimeoutError):
                    why = (f"ran longer than {unit_s:g} s and did not stop when interrupted, "
                           "so the grader stopped the process" if last_unit and unit_deadline else
                           f"loading took longer than {cap:g} s in all, and was stopped at this statement" if last_unit else
                           f"loading took longer than {max(budget, 1):g} s")
                elif isinstance(e, wire.ChannelTampered):
                    why = TAMPERED
                elif isinstance(e, wire.WireError):
                    why = f"the process running your code sent the grader garbage ({e})"
                else:
                    why = self._death_reason()
                self._kill()
                self.isolation = walls or self.isolation
                if last_unit and self.respawns < MAX_RESPAWNS and load_left() > 1:
                    self.respawns += 1
                    key = [last_unit["file"], last_unit["cell"] if last_unit["cell"] is not None else last_unit["line"]]
                    self.skip.append(key)
                    what = "cell" if last_unit["cell"] is not None else "statement"
                    kind = "timeout" if isinstance(e, TimeoutError) else "crash"
                    self.load_messages.append({"kind": kind, "file": last_unit["file"], "cell": last_unit["cell"],
                                               "line": last_unit["line"],
                                               "text": f"{where_text(last_unit)}: {why}. The grader skipped this {what} "
                                                       "and loaded the rest."})
                    continue
                self.load_messages.append({"kind": "crash", "file": None, "cell": None, "line": None,
                                           "text": "loading the submission failed: "
                                                   + (f"{where_text(last_unit)}: " if last_unit else "") + why})
                self.status = "timeout" if isinstance(e, TimeoutError) else "crashed"
                self.load_ok = False
                return self.load_report()
            self.isolation = walls if walls is not None else []
            if header.get("ok") is not True:
                err = header.get("error") if isinstance(header.get("error"), dict) else {}
                self.load_messages.append({"kind": "crash", "file": None, "cell": None, "line": None,
                                           "text": f"loading the submission failed: {str(err.get('type'))[:100]}: "
                                                   f"{str(err.get('message'))[:500]}"})
                self.status, self.load_ok = "crashed", False
                self._kill()
                return self.load_report()
            msgs = header.get("messages") if isinstance(header.get("messages"), list) else []
            self.load_messages.extend(load_message(m) for m in msgs[:500] if isinstance(m, dict))
            for m in self.load_messages:  # a unit stopped by the cell limit is not run again on a reload
                if m.get("kind") == "timeout" and isinstance(m.get("file"), str):
                    key = [m["file"], m.get("cell"), m.get("line")]  # that statement alone
                    if key not in self.skip:
                        self.skip.append(key)
            names = header.get("names") if isinstance(header.get("names"), list) else []
            self.names = [n for n in names if isinstance(n, str)]
            classes = header.get("classes") if isinstance(header.get("classes"), list) else []
            known = set(self.names)  # a set: a list made this quadratic in the number of names
            self.classes = [n for n in classes if isinstance(n, str) and n in known]
            origins = header.get("origins") if isinstance(header.get("origins"), dict) else {}
            self.origins = {k: v[:200] for k, v in origins.items() if isinstance(k, str) and isinstance(v, str)}
            self.defs = defs_from(header.get("defs"))
            self.unrun = defs_from(header.get("unrun"), whys=("main_guard", "block", "stopped"))
            self.load_ok = True
            return self.load_report()

    def load_report(self):
        ok = self.load_ok and not any(m.get("kind") in ("syntax_error", "error", "exit", "timeout", "crash")
                                      for m in self.load_messages)
        return {"ok": ok, "messages": [m.get("text", "") for m in self.load_messages],
                "names": self.names, "origins": self.origins, "isolation": self.isolation}

    def _next_id(self):
        self._call_id += 1
        return self._call_id

    def _unasked(self):
        """Whether the worker's socket holds bytes no request asked for (it is silent between requests)."""
        import select
        import socket
        try:
            if not select.select([self.sock], [], [], 0)[0]:
                return False
            return bool(self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))  # b"": it died, not this
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return False

    def _death_reason(self):
        status = None
        if self.pid:
            for _ in range(20):
                status = self.zygote.status(self.pid)
                if status is not None:
                    break
                time.sleep(0.05)
        return describe_status(status, self.limits.memory_mb)

    def _respawn(self):
        """Replace a dead worker and reload (units that crashed are already in self.skip)."""
        if self.restarts >= MAX_RESTARTS:
            raise WorkerCrashed(f"your code crashed or hung the grader's worker {self.restarts} times; "
                                "the remaining tests were not run")
        if not self.load_ok and self.status == "timeout":
            # the load itself ran out of time: loading again would spend the rest of the budget the same way
            raise StudentTimeout("not run: your submission did not finish loading in the time allowed "
                                 "(see the load messages)")
        self.restarts += 1
        saved = list(self.load_messages)
        self.load()
        texts = {m.get("text") for m in saved}
        new = [m for m in self.load_messages[len(saved):] if m.get("kind") in ("crash", "timeout")]
        self.load_messages = saved + [m for m in new if m.get("text") not in texts]
        if self.sock is None:
            raise WorkerCrashed("not run: your code could not be loaded again after the crash above ("
                                + "; ".join(m["text"] for m in new)[:1000] + ")")

    # ------------------------------------------------------------ calls
    def has(self, name):
        return name in self.names

    def missing(self, name):
        if name in self.unrun:
            return MissingName(unrun_text(name, self.unrun), missing_names=[name])
        close = close_names(name, self.names)
        hint = f" Close spellings that exist: {', '.join(close)}." if close else ""
        own = [n for n in self.classes if n != name]
        if not close and name[:1].isupper() and own:
            # a class under another name (ViT for VisionTransformer): name the classes the student wrote,
            # and suggest one only when its name is close (issue 19: never LayerNorm for CharTransformer)
            likely = close_names(name, own, n=1, cutoff=0.6, acronyms=True)
            shown = ", ".join(sorted(own[:1000])[:8]) + (", ..." if len(own) > 8 else "")
            hint = (f" Classes your submission defines: {shown}. "
                    + (f"If `{likely[0]}` is the `{name}` the handout asks for, rename it, or add a line "
                       f"`{name} = {likely[0]}` after it." if likely else
                       f"None of their names is close to `{name}`; if one of them is the class the handout "
                       f"asks for, rename it to `{name}`, or add a line `{name} = YourClass` after it."))
        return MissingName(f"`{name}` is not defined in your submission.{hint}", missing_names=[name])

    def request(self, op, args, timeout=None, what=None, key=None, expected_bytes=0):
        """Send one request; return the decoded value. Raises GradingFailure subclasses. `what` names the
        call in messages; `key` (default: `what`) is what repeated timeouts are counted by;
        `expected_bytes`: the array bytes a right answer holds, where the inputs do not say (a module's
        parameters), for the bound on this answer's size (`Limits.answer_bytes`)."""
        if not self.loaded:
            self.load()
        what = what or op
        key = key or what
        if self.time_left() <= 0:
            raise StudentTimeout(self._budget_message())
        if self.sock is None:
            self._respawn()
        timeout = self.ask_timeout(key, timeout)
        obj, bufs = wire.encode(args)
        cap = self.limits.answer_bytes(sum(len(b) for b in bufs), expected_bytes)
        self.last_stdout, self.last_stdout_dropped, self.last_dtypes = "", 0, []
        if self._unasked():  # written to the socket after the last reply: by the student's code
            self._kill()
            raise WorkerCrashed(f"{what} was not run: {TAMPERED}. The grader restarted your code for the next "
                                "tests.")
        call_id = self._next_id()
        try:
            self._clock(True)
            try:
                wire.send_msg(self.sock, {"op": op, "args": obj, "id": call_id, "max_reply": cap}, bufs)
                header, rbufs = self.receive(call_id, timeout, cap)
            finally:
                self._clock(False)
        except (TimeoutError, EOFError, OSError, wire.WireError) as e:
            self.broken(e, what, key, timeout, cap)
        value, failure, self.last_stdout, self.last_stdout_dropped, self.last_dtypes = self.answer(header, rbufs, what)
        if failure is not None:
            raise failure
        return value

    def ask_timeout(self, key, timeout=None):
        """The limit of one ask of `key` now: its own (call_s), retry_call_s once a call of the same key did
        not finish, never more than the submission's budget left (nor under 0.1 s)."""
        limit = timeout or self.limits.call_s
        if self.timeouts.get(key):
            limit = min(limit, self.limits.retry_call_s)
        return min(limit, max(self.time_left(), 0.1))

    def receive(self, call_id, timeout, cap):
        """Read the reply to the request `call_id` (at most `cap` array bytes, within `timeout` s): (header,
        buffers); raises TimeoutError, EOFError, OSError or wire.WireError (see `broken`)."""
        return wire.recv_msg(self.sock, timeout=timeout, max_total=cap + wire.MAX_HEADER, call_id=call_id)

    def broken(self, e, what, key, timeout, cap):
        """The worker did not answer `what` (e: what `receive` raised): end it and raise that ask's own
        failure (StudentTimeout counted under `key`, WorkerCrashed, BadReturn)."""
        if isinstance(e, TimeoutError):
            self._kill()
            before = self.timeouts.get(key, 0)
            self.timeouts[key] = before + 1
            again = (f" It had already not finished {before} time{'s' if before > 1 else ''}, so it now gets "
                     f"{self.limits.retry_call_s:g} s a call, to leave time for your other functions."
                     if before else "")
            raise StudentTimeout(f"{what} did not finish within {timeout:g} s (an infinite loop, or far too slow); "
                                 f"it was stopped.{again} The grader restarted your code for the next tests.") from None
        if isinstance(e, (EOFError, OSError)):
            reason = self._death_reason()
            self._kill()
            raise WorkerCrashed(f"{what}: {reason}. The grader restarted your code for the next tests.") from None
        self._kill()
        if isinstance(e, wire.FrameTooLarge):
            raise BadReturn(f"{what} returned more data than the grader accepts in this answer (at most "
                            f"{cap / 2**20:.3g} MiB, far more than a right answer holds); it was not read. The "
                            "grader restarted your code for the next tests.") from None
        if isinstance(e, wire.ChannelTampered):
            raise WorkerCrashed(f"{what}: {TAMPERED}. The grader restarted your code for the next tests.") from None
        raise BadReturn(f"{what} sent back something the grader cannot read: {e}") from None

    def answer(self, header, rbufs, what):
        """A reply read by `receive`: (value, failure, captured output, its dropped count, the value's
        dtypes); failure is the GradingFailure to raise (the student's exception, or a value that is not
        plain data, which ends the worker), else None."""
        stdout = header.get("stdout", "")
        stdout = stdout if isinstance(stdout, str) else ""
        dropped = header.get("stdout_dropped", 0)
        dropped = dropped if type(dropped) is int and dropped >= 0 else 0
        stdout, dropped = stdout[:KEEP_STDOUT], dropped + max(0, len(stdout) - KEEP_STDOUT)
        if header.get("ok") is True:
            try:
                value, dtypes = wire.decode_trusted(header.get("value"), rbufs)
            except wire.WireError as e:  # the worker's own encoder never sends this: its channel was written to
                self._kill()
                return None, BadReturn(f"{what} returned something that is not plain data ({e}). The grader "
                                       "restarted your code for the next tests."), stdout, dropped, []
            return value, None, stdout, dropped, dtypes
        return None, self._failure(header.get("error") or {}, what), stdout, dropped, []

    def _budget_message(self):
        text = f"the submission used up its total time budget of {self.limits.submission_s:g} s"
        if self.timeouts:
            worst = sorted(self.timeouts.items(), key=lambda kv: -kv[1])[:3]
            text += ("; calls that did not finish: "
                     + ", ".join(f"{w} ({n} time{'s' if n > 1 else ''})" for w, n in worst)
                     + ". Fix those first: the tests after them did not get to run")
        return text

    def _failure(self, err, what):
        return failure_from(err, what, self.limits.memory_mb, self.missing)

    def call(self, name, *args, **kwargs):
        self.called.append(name)
        if self.loaded and name not in self.names and self.load_ok:
            raise self.missing(name)
        return self.request("call", {"name": name, "args": list(args), "kwargs": kwargs},
                            what=call_text(name, args, kwargs), key=f"{name}(...)")

    def torch_calls(self, name, *args, **kwargs):
        """Call `name`; return (its value, the names of the torch functions it called): Probes.torch_calls.
        The names come from the student's own process: use them to fail a test, never to pass one
        (checker.running.by_hand reads the source for that)."""
        self.called.append(name)
        if self.loaded and name not in self.names and self.load_ok:
            raise self.missing(name)
        r = self.request("torch_calls", {"name": name, "args": list(args), "kwargs": kwargs},
                         what=call_text(name, args, kwargs), key=f"{name}(...)")
        return self.finish("torch_calls", r, {})

    def call_changes(self, name, *args, **kwargs):
        """Call `name`; return (its value, the positions of the array arguments it changed in place).
        Decided here, not in the worker: the worker hands back its array arguments as they are after the
        call (Probes.call_changes) and they are compared with the copies kept here of what was sent. An
        argument not handed back as an array of the same shape counts as changed (a report that cannot
        be read proves nothing); so a forged report must hand back what was sent, which is exactly what a
        caller sees of a function that leaves its arguments alone."""
        self.called.append(name)
        if self.loaded and name not in self.names and self.load_ok:
            raise self.missing(name)
        ctx = self.before("call_changes", args)
        r = self.request("call_changes", {"name": name, "args": list(args), "kwargs": kwargs},
                         what=call_text(name, args, kwargs), key=f"{name}(...)")
        return self.finish("call_changes", r, ctx)

    def before(self, op, args):
        """What the method of `op` keeps before asking, to judge the answer by (`finish`)."""
        if op != "call_changes":
            return {}
        import numpy as np
        return {"kept": [np.array(a, copy=True) if type(a) is np.ndarray else _tensor_copy(a) for a in args]}

    def finish(self, op, r, ctx):
        """What the method of `op` makes of the worker's answer `r` (ctx: from `before`, and for a module the
        class, device, dtype and the worker generation that made it): the one place for asks sent alone
        and asks sent together (checker.running.together)."""
        if op == "torch_calls":
            calls = r.get("calls") if isinstance(r, dict) else None
            return (r.get("value") if isinstance(r, dict) else None,
                    [c for c in calls if isinstance(c, str)] if isinstance(calls, list) else [])
        if op == "call_changes":
            import numpy as np
            kept = ctx["kept"]
            after = r.get("args") if isinstance(r, dict) else None
            after = after if isinstance(after, list) and len(after) == len(kept) else [None] * len(kept)
            changed = [i for i, (a, b) in enumerate(zip(after, kept)) if b is not None and not (
                isinstance(a, np.ndarray) and a.shape == b.shape and a.dtype == b.dtype
                and np.array_equal(a, b, equal_nan=b.dtype.kind in "fc"))]
            return (r.get("value") if isinstance(r, dict) else None), changed
        if op == "new":
            return ModuleHandle(self, ctx["cls"], r, ctx["device"], ctx["dtype"], ctx.get("generation"))
        if op == "forward":
            if not isinstance(r, dict) or not isinstance(r.get("outputs"), list):
                raise BadReturn(f"{ctx['cls']}.forward: malformed answer")
            return ForwardResult.from_reply(r, self.last_dtypes)
        return r

    def together(self, chain=False):
        """Asks sent to the worker together and answered together (checker.running.together.Together): one round
        trip for several calls of one test, each ask's outcome its own."""
        from checker.running.together import Together
        return Together(self, chain=chain)

    def top_level_ints(self):
        """{name: value} of the submission's top-level int variables (Probes.top_level_ints); {} if unreadable."""
        r = self.request("top_level_ints", {}, what="the submission's top-level numbers")
        if not isinstance(r, dict):
            return {}
        return {k: v for k, v in r.items() if isinstance(k, str) and type(v) is int}

    def parameters(self, name):
        """The parameter names of the student's `name` (a class: its __init__'s, without self), or None."""
        r = self.request("parameters", {"name": name}, what=f"the parameters of {name}")
        return [p for p in r if isinstance(p, str)] if isinstance(r, list) else None

    def call_on_meta(self, name, shapes, dtype="float32", lenient=False):
        """Call `name` with meta tensors of these shapes, in the worker (see Probes.call_on_meta)."""
        self.called.append(name)
        if self.loaded and name not in self.names and self.load_ok:
            raise self.missing(name)
        refuse_meta_aware(self, name, f"{name}(...)")
        return self.request("call_on_meta", {"name": name, "shapes": [list(s) for s in shapes], "dtype": dtype,
                                             "lenient": bool(lenient)}, what=f"{name}(...) on another device")

    def call_info(self, name, *args, **kwargs):
        value = self.call(name, *args, **kwargs)
        return value, {"dtypes": list(self.last_dtypes)}

    def new(self, cls, *args, seed=0, device="cpu", dtype="float32", example=None, **kwargs):
        """Build the student's module. `example` ({"shape": [...], "vocab": V or None}) describes an input of
        the tests' shape: the worker uses it only to materialise lazy layers (see Probes.new)."""
        self.called.append(cls)
        if self.loaded and cls not in self.names and self.load_ok:
            raise self.missing(cls)
        info = self.request("new", {"cls": cls, "args": list(args), "kwargs": kwargs, "seed": int(seed),
                                    "device": device, "dtype": dtype, "example": example},
                            what=call_text(cls, args, kwargs),
                            key=f"{cls}(...)")
        return self.finish("new", info, {"cls": cls, "device": device, "dtype": dtype})

    def meta_forward(self, cls, args, kwargs, input_shape, input_dtype="float32", vocab=None):
        self.called.append(cls)
        if self.loaded and cls not in self.names and self.load_ok:
            raise self.missing(cls)
        refuse_meta_aware(self, cls, cls)
        return self.request("meta_forward", {"cls": cls, "args": list(args), "kwargs": kwargs,
                                             "input_shape": list(input_shape), "input_dtype": input_dtype,
                                             "vocab": vocab}, what=f"{cls} on the meta device")
