"""Several asks of one grading test sent to a worker together, their answers read together.

What it is for: a test that asks the worker several things in a row (the call and the edge-case rule's
second call, the "arguments unchanged" calls, a module and then its forward) pays one round trip for
them instead of one each. `sub.together()` gives a `Together`; its `call`, `call_changes`, `torch_calls`,
`new`, `forward` and `set_params` collect asks and return `Pending`s; `send()` (or the end of a `with` block, or the
first `get()`) sends them all at once and reads every answer; `Pending.get()` gives what the same method
of `sub` gives alone: the value, or the same GradingFailure raised.

    with sub.together(chain=True) as t:
        edge = t.call("get_scores", M1, v1)
        other = t.call("get_scores", M5, v5)
    close(edge.get(), ...)            # raises as sub.call would
    only_if_right_elsewhere(..., lambda: close(other.get(), ...))

The rules that keep each ask's outcome its own:
  * the worker runs the asks in order, one at a time, exactly as it runs asks sent one by one; every
    frame carries its ask's call id, and each answer is bounded (its own cap) before it is read;
  * each ask's time limit is its own: the answer to ask k+1 is waited for at most its own limit (call_s,
    or retry_call_s once a call of its function did not finish; never beyond the budget left), counted
    from the moment answer k arrived, which is when the worker starts ask k+1; the submission's budget
    counts the wait, as it counts the wait of an ask alone;
  * an ask that times out, crashes the worker or answers garbage ends the worker as it would alone and is
    charged to that ask only (its message names it; its timeout is counted under its own function); the
    asks after it were lost with the worker: each is "not run" and is asked again alone, on a fresh worker,
    when (and only if) the test calls its get(), exactly as it would have been asked after that failure;
  * with `chain=True` an ask runs only if the one before it answered ok; if not, the worker answers "not
    run" without running it, and its get() asks it again alone if the test still wants it (a test that
    stops at the first failure never does). `forward` of a module made in the same batch is always
    chained to its `new`;
  * an ask the handle would not send alone right now (a name the submission lacks, the budget spent, a
    worker to restart, a channel written to by student code) is not sent together: its get() takes the
    path of the ask alone. Asks whose inputs add up to more than SEND_LIMIT bytes are not sent together
    either (the whole batch must fit in the socket's buffer, so that the worker's answers never wait on
    the grader's sending);
  * what a get() leaves in `sub` (`called`, `last_stdout`, `last_dtypes`) is what the call alone leaves.
What differs from asks sent one by one: an ask after one whose answer came back and is then judged wrong
on the trusted side still ran (with chain=False, also one after a failed ask); its answer is simply not
used, but its running time counts toward the submission's budget like any call's.

What it is not: a judge, or a way around a limit: each ask is the request `sub` would make alone (same
op, arguments, answer cap and message words), only written to the socket before the previous answer is
read.
"""

from checker import wire
from checker.judging.names import call_text

__all__ = ["Together", "Pending", "SEND_LIMIT", "SEND_TOGETHER", "asked"]

SEND_LIMIT = 64 * 1024  # bytes of requests in flight at once (a socketpair's buffer holds about 200 KiB)
SEND_TOGETHER = True    # False: every ask goes alone at its get() (tests/test_ref_cache.py compares)
_NOT_RUN = object()


class Pending:
    """One ask of a Together: `get()` gives its outcome, as the method of `sub` alone gives it."""

    def __init__(self, batch, op, name, args, kwargs, extra, what, key, module=None):
        self._batch, self.op, self.name, self.args, self.kwargs = batch, op, name, args, kwargs
        self._extra, self.what, self.key, self._module = extra, what, key, module
        self._outcome = _NOT_RUN  # else (value, failure, stdout, dropped, dtypes, generation)
        self._ctx = {}
        self._got = False
        self.call_id = None  # the id of its request once it went with the others
        self._alone_result = None  # (value, failure) once asked alone

    def get(self):
        """The value (a ModuleHandle for `new`, a ForwardResult for `forward`), or the failure raised."""
        self._batch.send()
        sub = self._batch.sub
        if self._outcome is _NOT_RUN:
            if self._alone_result is None:  # asked alone once, however often get() is called
                try:
                    self._alone_result = (self._alone(), None)
                except Exception as failure:  # noqa: BLE001 - a GradingFailure, raised again below
                    self._alone_result = (None, failure)
            value, failure = self._alone_result
            if failure is not None:
                raise failure
            return value
        value, failure, stdout, dropped, dtypes, generation = self._outcome
        if not self._got and self.op not in ("forward", "set_params"):
            sub.called.append(self.name)
        self._got = True
        sub.last_stdout, sub.last_stdout_dropped, sub.last_dtypes = stdout, dropped, list(dtypes)
        if failure is not None:
            raise failure
        return sub.finish(self.op, value, {**self._ctx, "generation": generation, "cls": self.name,
                                           "device": self._extra.get("device"), "dtype": self._extra.get("dtype")})

    def _alone(self):
        """The ask sent alone, now: what the test would have done without the batch."""
        sub = self._batch.sub
        if self.op == "forward":
            return self._module.get().forward(self.args[0], seed=self._extra.get("seed", 0))
        if self.op == "set_params":
            return self._module.get().set_params(self.args[0])
        if self.op == "new":
            return sub.new(self.name, *self.args, **self._extra, **self.kwargs)
        return getattr(sub, self.op)(self.name, *self.args, **self.kwargs)


class Together:
    """Asks collected for one round trip (see the module's docstring)."""

    def __init__(self, sub, chain=False):
        self.sub, self.chain = sub, bool(chain)
        self.asks = []
        self.sent = False
        self.round_trips = 0  # 1 once the asks went together (0: each went, or goes, alone)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.send()

    # ------------------------------------------------------------ collecting
    def call(self, name, *args, **kwargs):
        return self._add("call", name, args, kwargs)

    def call_changes(self, name, *args, **kwargs):
        return self._add("call_changes", name, args, kwargs)

    def torch_calls(self, name, *args, **kwargs):
        return self._add("torch_calls", name, args, kwargs)

    def new(self, cls, *args, seed=0, device="cpu", dtype="float32", example=None, **kwargs):
        return self._add("new", cls, args, kwargs, {"seed": seed, "device": device, "dtype": dtype,
                                                    "example": example})

    def forward(self, module, inputs, seed=0):
        """forward of `module`: a Pending of this batch's `new`, or a ModuleHandle made before."""
        if not isinstance(module, Pending):
            p = Pending(self, "forward", module.cls, [list(inputs)], {}, {"seed": int(seed)},
                        f"{module.cls}.forward", f"{module.cls}.forward")
            p._module = _Made(module)
            return self._append(p)
        return self._append(Pending(self, "forward", module.name, [list(inputs)], {}, {"seed": int(seed)},
                                    f"{module.name}.forward", f"{module.name}.forward", module=module))

    def set_params(self, module, values):
        """set_params of a ModuleHandle made before the batch (overwrite named parameters, in the worker)."""
        p = Pending(self, "set_params", module.cls, [dict(values)], {}, {}, f"{module.cls} (setting its parameters)",
                    f"{module.cls}.set_params")
        p._module = _Made(module)
        return self._append(p)

    def _add(self, op, name, args, kwargs, extra=None):
        what = call_text(name, args, kwargs)
        return self._append(Pending(self, op, name, list(args), dict(kwargs), extra or {}, what, f"{name}(...)"))

    def _append(self, pending):
        self.asks.append(pending)  # one added after the others went goes alone, at its get()
        return pending

    # ------------------------------------------------------------ sending
    def _request(self, p, after):
        """The request p would make alone, as (header, buffers, cap), or None where it goes alone."""
        sub = self.sub
        if p.op in ("forward", "set_params"):
            if isinstance(p._module, _Made):
                m = p._module.handle
                if m.sub is not sub or m.generation != sub.generation:
                    return None
                handle = m.handle
            else:  # the module this batch's `new` made, named by that ask's id (the worker keeps the pair)
                if p._module.call_id is None:
                    return None
                handle = {"made_by": p._module.call_id}
            args = ({"handle": handle, "inputs": p.args[0], "seed": p._extra["seed"]} if p.op == "forward"
                    else {"handle": handle, "values": p.args[0]})
        elif p.name not in sub.names:
            return None  # missing (or a worker that did not load): the ask alone says so
        elif p.op == "new":
            e = p._extra
            args = {"cls": p.name, "args": p.args, "kwargs": p.kwargs, "seed": int(e["seed"]),
                    "device": e["device"], "dtype": e["dtype"], "example": e["example"]}
        else:
            args = {"name": p.name, "args": p.args, "kwargs": p.kwargs}
            p._ctx = sub.before(p.op, p.args)
        obj, bufs = wire.encode(args)
        cap = sub.limits.answer_bytes(sum(len(b) for b in bufs))
        header = {"op": p.op, "args": obj, "id": sub._next_id(), "max_reply": cap}
        if after is not None:
            header["after"] = after
        return header, bufs, cap

    def send(self):
        """Send every ask at once and read every answer (once; later calls do nothing)."""
        if self.sent:
            return
        self.sent = True
        sub = self.sub
        if not SEND_TOGETHER or len(self.asks) < 2 or not (sub.loaded and sub.load_ok and sub.sock is not None) \
                or sub.time_left() <= 0 or sub._unasked():
            return  # each ask goes alone at its get(), as it would without the batch
        frames, size, after = [], 0, None
        for p in self.asks:
            req = self._request(p, after if self.chain else None)
            if req is None:
                if self.chain:
                    break  # the asks after it wait for it: they go alone, in the test's order
                continue
            p.call_id = req[0]["id"]
            frames.append((p, req))
            size += sum(len(b) for b in req[1]) + 1024
            after = p.call_id
            if size > SEND_LIMIT:  # this one and the rest go alone, at their get()
                frames.pop()
                p.call_id = None
                break
        if len(frames) < 2:
            return
        data = b"".join(wire.frame(header, bufs) for _, (header, bufs, _) in frames)
        dead = False
        sub.last_stdout, sub.last_stdout_dropped, sub.last_dtypes = "", 0, []
        sub._clock(True)
        try:
            try:
                sub.sock.sendall(data)
            except OSError:
                sub._clock(False)
                p, dead = frames[0][0], True
                try:
                    sub.broken(EOFError(), p.what, p.key, 0, 0)
                except Exception as failure:  # noqa: BLE001 - a GradingFailure: the first ask's, as alone
                    p._outcome = (None, failure, "", 0, [], sub.generation)
            self.round_trips = 1
            for p, (header, _, cap) in frames:
                if dead or sub.time_left() <= 0:
                    if not dead:  # the budget is spent: the worker is running an ask nobody waits for
                        sub._clock(False)
                        sub._kill()
                        dead = True
                    continue  # not run: asked alone at its get() (which says the budget is spent)
                timeout = sub.ask_timeout(p.key)
                try:
                    reply, rbufs = sub.receive(header["id"], timeout, cap)
                except (TimeoutError, EOFError, OSError, wire.WireError) as e:
                    sub._clock(False)
                    dead = True
                    try:
                        sub.broken(e, p.what, p.key, timeout, cap)
                    except Exception as failure:  # noqa: BLE001 - a GradingFailure: this ask's own
                        p._outcome = (None, failure, "", 0, [], sub.generation)
                    continue
                if p.op == "forward" and isinstance(p._module, Pending) and (
                        p._module._outcome is _NOT_RUN or p._module._outcome[1] is not None):
                    continue  # its module was not made: asked alone at its get(), which raises the new's failure
                err = reply.get("error")
                if "after" in header and reply.get("ok") is not True and isinstance(err, dict) \
                        and err.get("type") == "NotRun":
                    continue  # the ask before it failed: asked alone at its get(), if ever
                p._outcome = (*sub.answer(reply, rbufs, p.what), sub.generation)
                if sub.sock is None:  # the answer was not plain data: answer() ended the worker
                    sub._clock(False)
                    dead = True
        except BaseException:
            sub._clock(False)
            raise
        sub._clock(False)


class _Made:
    """A ModuleHandle made before the batch, as the `module` of a forward ask."""

    def __init__(self, handle):
        self.handle = handle

    def get(self):
        return self.handle


def asked(check):
    """Run `check`, a check written as a generator over a Together (`got = yield t.call(...)`, then the
    judging), up to its ask; return a function that finishes it: the ask's value is sent in at the `yield`,
    or the ask's failure is raised there (so an `except` around the yield sees it as around `sub.call`),
    and the judging runs. A check that asks again after its first ask asks alone (the batch is gone).

        with sub.together(chain=True) as t:
            edge = asked(_check_get_scores(t, ref, close, rng, 1, 4, dtype))
            other = asked(_check_get_scores(t, ref, close, rng, 5, 3, dtype))
        edge()                                   # judged as if called alone
        only_if_right_elsewhere("get_scores", ..., other)
    """
    try:
        first = next(check)
    except StopIteration as stop:
        return lambda: stop.value

    def finish():
        pending = first
        while True:
            try:
                value = pending.get() if isinstance(pending, Pending) else pending
            except Exception as failure:  # noqa: BLE001 - the ask's own failure, raised where it asked
                step = check.throw, failure
            else:
                step = check.send, value
            try:
                pending = step[0](step[1])
            except StopIteration as stop:
                return stop.value
    return finish
