"""The parallel batch: one zygote, several forked trusted worker processes, each grading in turn.

What it is for: `run_parallel(todo, n, options, report)`, what
`checker.records.batch.grade_batch` runs with jobs > 1. This process starts ONE
zygote with `n` control channels, then forks `n` trusted worker processes
(multiprocessing's "fork" context, so torch, pytest and the grading tests
are imported once). Each builds a `Grader` on its own channel
(`checker.records.grading.new_grader`), receives submissions one at a time on its
own pipe, grades them (`grade`, `checker.records.grading.grade_one` unless the
caller passes its own), writes that submission's files itself and sends
back a short result. One pipe per worker (rather than one shared task
queue) means this process always knows which submission a worker holds: if
a worker dies, that submission gets a crashed scorecard, the worker is
replaced, and the others go on. If the zygote itself dies (or stops
answering: a result with `grader_failure`), the workers are stopped, their
submissions are put back once, and a fresh zygote and workers take over.

What it is not: grading (`checker.records.grading`, `checker.running.runner`), the batch's
bookkeeping, resume or gradebook (`checker.records.batch`), or the output folder
(`checker.records.outfolder`); a Dask cluster is `checker.platforms.cluster`.
"""

import collections
import multiprocessing
import multiprocessing.connection
import os
import signal
import time

from checker.records.grading import crash, disk_full, grade_one, new_grader, one_line, warm_up
from checker.spec import uses_torch

__all__ = ["MAX_POOL_RESTARTS", "MAX_IDLE_DEATHS", "run_parallel"]

MAX_POOL_RESTARTS = 3       # fresh zygotes after the zygote died
MAX_IDLE_DEATHS = 3         # a worker slot that dies this often holding no submission is given up


def _die_with_parent():
    """Ask the kernel to SIGKILL this process when its parent dies (Linux)."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _worker_main(index, zygote, conn, options, parent_pid, grade):
    """Body of one forked trusted worker: grade what arrives on `conn` until None or EOF."""
    _die_with_parent()
    if os.getppid() != parent_pid:  # the parent died before the line above took effect
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:  # several graders share the CPUs; torch's pool must not be used across the fork either
        import torch
        torch.set_num_threads(1)
    except Exception:  # noqa: BLE001
        pass
    try:
        grader = new_grader(options, zygote=zygote.channel(index))
    except Exception:  # noqa: BLE001 - the parent sees the exit and replaces this worker
        os._exit(3)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            break
        if task is None:
            break
        sid, path = task
        try:
            result = grade(grader, sid, path, options["assignment"], options["outdir"],
                           keep_raw=options["keep_raw"])
        except Exception as e:  # noqa: BLE001 - even writing failed: say so to the parent
            result = {"id": sid, "error": f"{type(e).__name__}: {one_line(e)}",
                      "errno": e.errno if isinstance(e, OSError) else None}
        try:
            conn.send(result)
        except (OSError, ValueError):
            break
    grader.close()  # its scratch dir (the zygote is the parent's to close)
    os._exit(0)


class _Slot:
    def __init__(self, process, conn):
        self.process, self.conn = process, conn
        self.task = None
        self.started = 0.0
        self.idle_deaths = 0


class _Pool:
    """One zygote with `n` channels and `n` forked trusted workers, one per channel."""

    def __init__(self, n, options, grade):
        from checker.running.zygote_client import Zygote
        # the zygote imports torch in the background while this process warms up, once, before forking
        # (no torch op runs in this process)
        self.zygote = Zygote(channels=n, warm_meta=uses_torch(options["assignment"]))
        warm_up(options["assignment"])
        self.options, self.grade = options, grade
        self.ctx = multiprocessing.get_context("fork")
        self.slots = [None] * n
        for i in range(n):
            self.start(i)

    def start(self, i):
        old = self.slots[i]
        parent_conn, child_conn = self.ctx.Pipe()
        process = self.ctx.Process(target=_worker_main, name=f"hwcheck-grader-{i}",
                                   args=(i, self.zygote, child_conn, self.options, os.getpid(), self.grade))
        process.daemon = True
        process.start()
        child_conn.close()
        slot = _Slot(process, parent_conn)
        slot.idle_deaths = old.idle_deaths if old else 0
        self.slots[i] = slot

    def drain(self, i):
        """Drop any reply of the zygote that a dead worker did not read (it would confuse the next)."""
        ch = self.zygote.channels[i]
        time.sleep(0.05)
        try:
            ch.setblocking(False)
            while True:
                ch.recv(65536)
        except (BlockingIOError, OSError):
            pass
        finally:
            try:
                ch.settimeout(30)
            except OSError:
                pass

    def close(self, kill=False):
        for slot in self.slots:
            if slot is None:
                continue
            if not kill:
                try:
                    slot.conn.send(None)
                except (OSError, ValueError):
                    pass
        for slot in self.slots:
            if slot is None:
                continue
            if kill:
                slot.process.kill()
            slot.process.join(timeout=10 if not kill else 2)
            if slot.process.is_alive():
                slot.process.kill()
                slot.process.join(timeout=2)
            slot.conn.close()
        self.zygote.close()


def run_parallel(todo, n, options, report, grade=grade_one):
    """Grade `todo` ([(id, path)]) in `n` forked workers; call report(result) as each one is done.

    options: the batch's (`checker.records.batch.grade_batch` builds them). grade: what a
    worker grades one submission with, `grade_one`'s signature (the batch passes
    its own name, so that a test's stand-in reaches the forked workers).
    """
    pending = collections.deque(todo)
    retried = set()
    restarts = 0
    pool = _Pool(n, options, grade)
    try:
        while True:
            live = [i for i, s in enumerate(pool.slots) if s is not None]
            if not live:  # every slot was given up: the rest cannot be graded in workers
                while pending:
                    sid, path = pending.popleft()
                    report(crash(sid, path, options, "the grading processes kept dying at start"))
                return
            for i in live:
                slot = pool.slots[i]
                if slot.task is None and pending and slot.process.is_alive():
                    slot.task = pending.popleft()
                    slot.started = time.monotonic()
                    try:
                        slot.conn.send(slot.task)
                    except (OSError, ValueError):
                        pass  # its death is handled below
            busy = [pool.slots[i] for i in live if pool.slots[i].task is not None]
            if not busy and not pending:
                return
            waitables = [s.conn for s in busy] + [pool.slots[i].process.sentinel for i in live]
            ready = multiprocessing.connection.wait(waitables, timeout=1.0)

            broken = False  # the zygote failed a grading (dead or not answering): a fresh one for all
            for i in live:
                slot = pool.slots[i]
                if slot.task is not None and slot.conn in ready:
                    try:
                        result = slot.conn.recv()
                    except (EOFError, OSError):
                        result = None
                    if result is not None:
                        sid, path = slot.task
                        slot.task = None
                        slot.idle_deaths = 0
                        failed = result.get("grader_failure") or (result.get("internal")
                                                                  and not pool.zygote.alive())
                        broken = broken or bool(result.get("grader_failure"))
                        if failed and sid not in retried:
                            retried.add(sid)  # the zygote's failure, not this submission: once more
                            pending.appendleft((sid, path))
                            continue
                        if "error" in result and disk_full(result.get("errno")):
                            pending.appendleft((sid, path))  # not graded: --resume grades it
                            raise OSError(result["errno"], f"writing the files of {sid} failed: {result['error']}")
                        if "error" in result:
                            result = crash(sid, path, options, f"writing its files failed: {result['error']}",
                                            time.monotonic() - slot.started)
                        report(result)
                if not slot.process.is_alive():
                    _replace_dead(pool, i, options, report)

            if broken or not pool.zygote.alive():
                # The zygote died (or hangs): every worker's next fork would fail. Stop them, put
                # their submissions back (once each), and start over with a fresh zygote.
                for slot in pool.slots:
                    if slot is not None and slot.task is not None:
                        sid, path = slot.task
                        slot.task = None
                        if sid in retried:
                            report(crash(sid, path, options, "the worker zygote died twice while grading it",
                                         grader_failure=True))
                        else:
                            retried.add(sid)
                            pending.appendleft((sid, path))
                pool.close(kill=True)
                restarts += 1
                if restarts > MAX_POOL_RESTARTS:
                    while pending:
                        sid, path = pending.popleft()
                        report(crash(sid, path, options, "the worker zygote kept dying", grader_failure=True))
                    pool = None
                    return
                pool = _Pool(n, options, grade)
    except BaseException:  # Ctrl-C or a bug: stop the workers now (files are atomic; resume redoes)
        if pool is not None:
            pool.close(kill=True)
            pool = None
        raise
    finally:
        if pool is not None:
            pool.close()


def _replace_dead(pool, i, options, report):
    """A trusted worker died: its submission (if any) is crashed, and a new worker takes its slot."""
    slot = pool.slots[i]
    try:  # a result sent just before dying still counts
        while slot.task is not None and slot.conn.poll():
            result = slot.conn.recv()
            if result is not None and "error" not in result:
                slot.task = None
                report(result)
    except (EOFError, OSError):
        pass
    slot.process.join(timeout=1)
    code = slot.process.exitcode
    why = (f"signal {signal.Signals(-code).name}" if code is not None and code < 0
           else f"exit status {code}")
    if slot.task is not None:
        sid, path = slot.task
        slot.task = None
        report(crash(sid, path, options, f"the grading process died while grading it ({why})",
                      time.monotonic() - slot.started))
        slot.idle_deaths = 0
    else:
        slot.idle_deaths += 1
    slot.conn.close()
    if slot.idle_deaths >= MAX_IDLE_DEATHS:
        pool.slots[i] = None
        return
    pool.drain(i)
    pool.start(i)
