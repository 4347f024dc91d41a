"""A warm parent that forks one worker per submission: `python -m checker.worker.zygote FD`.

What it is for: importing torch takes seconds; forking a process that has
already imported it takes milliseconds. The zygote imports numpy, torch and
the worker-side modules of hwcheck (never `reference`, `assignments` or the
grading plugin), then waits on its control socket. For each request it
receives a socket end (SCM_RIGHTS), forks, and the child becomes a worker in
its own session (for a worker of a torch assignment, the request says
`warm_meta`: the zygote first pays, once, the lazy imports behind PyTorch's
meta device, which every such worker would otherwise pay). The zygote is a child subreaper: any process a worker
leaves behind (daemonised or in a new session) is re-parented here and
killed within 0.2 s. When the control socket closes, or the trusted process
dies (even by SIGKILL: the zygote gets SIGTERM, which stops the loop at its
next turn, never in the middle of a step), every worker and leftover dies and
the workers' temp dirs are removed (by the zygote itself, however long that
takes up to _ORPHAN_S, where no client is left to finish them). The zygote makes those dirs
itself (op "mkdir") before the trusted side fills them, so a trusted process
killed between making a dir and asking for its worker leaks nothing; and it
removes them (op "remove", and when a worker ends), with
`checker.worker.cleanup`: iteratively, a little at a time (what a student
left there may be a chain of folders deeper than any recursion, or millions
of files), and whatever is not gone yet stays on a list for the next turn of
the loop. Killed by SIGKILL it removes nothing: it names each dir in MADE of its
own folder before making it, and its client removes what is left, with the
same remover. Nothing a worker left can raise out of the loop: a step that fails
is written to the zygote's stderr and the loop goes on.

What it is not: a place student code ever runs; it runs only in the children.
"""

import ctypes
import json
import os
import secrets
import select
import signal
import socket
import sys
import tempfile
import time

from checker.worker import cleanup, memory, namespaces

__all__ = ["main", "make_worker_dir", "LEFTOVER", "MADE"]

_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER = 1, 36
_TURN_S = 0.1      # removing worker dirs: at most this long per turn of the loop
_REMOVE_S = 0.5    # ... and per "remove" request (the rest is finished in later turns)
_EXIT_S = 2.0      # ... and when the zygote exits (its client waits 3 s before SIGKILL, then finishes)
_ORPHAN_S = 30.0   # ... and then, when its client is gone (no one would finish them)
_STOP = []         # the signals that asked the loop to stop (SIGTERM)
_WARMED = []       # the meta device warmed in this zygote (_warm_meta)
LEFTOVER = "leftover"  # in the zygote's dir: worker dirs still to remove when it exited
MADE = "made"  # in the zygote's dir: every worker dir it made, a line each, for its client if it dies by SIGKILL


def _prctl(option, value):
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _children_of(ppid):
    kids = []
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return kids
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
            if int(stat.rsplit(")", 1)[1].split()[1]) == ppid:
                kids.append(pid)
        except (OSError, ValueError, IndexError):
            continue
    return kids


def _has_cap_sys_admin():
    try:
        with open("/proc/self/status") as f:
            return bool(int(next(ln.split()[1] for ln in f if ln.startswith("CapEff:")), 16) & (1 << 21))
    except (OSError, StopIteration, ValueError):
        return False


def _kill_tree(pid):
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()
        except OSError:
            pass


def _sweep_until_childless(deadline):
    """Kill and reap children until none is left.

    A dying worker's own children (daemons, new sessions) are re-parented to
    this subreaper only as it dies, so one pass is not enough: go on until
    waitpid says there is no child at all (or the deadline passes).
    """
    while time.monotonic() < deadline:
        for pid in _children_of(os.getpid()):
            _kill_tree(pid)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return
        time.sleep(0.01)


def _is_own(path, prefix):
    """Is `path` a dir of ours in the temp dir (named `prefix`...)? Nothing else is ever removed."""
    try:
        return (isinstance(path, str) and os.path.basename(path.rstrip("/")).startswith(prefix)
                and os.path.dirname(os.path.realpath(path)) == os.path.realpath(tempfile.gettempdir()))
    except (OSError, ValueError):
        return False


def _remove_dir(path, prefix, deadline=None):
    """Remove a temp dir of ours; True when it is gone (never raises: see checker.worker.cleanup)."""
    if not _is_own(path, prefix):
        return True
    return cleanup.remove_tree(path, deadline=deadline)


class _Removals:
    """Worker dirs to remove, oldest first; a dir not removed in one turn waits for the next."""

    def __init__(self):
        self.paths = {}  # path -> None (an ordered set)

    def add(self, path):
        if _is_own(path, "hwcheck-w-"):
            self.paths[path] = None

    def remove_now(self, path, seconds):
        """Try `path` now, for at most `seconds`; True when it is gone."""
        self.paths.pop(path, None)
        if _remove_dir(path, "hwcheck-w-", time.monotonic() + seconds):
            return True
        self.paths[path] = None
        return False

    def turn(self, seconds):
        """Work on the list for at most `seconds`."""
        deadline = time.monotonic() + seconds
        for path in list(self.paths):
            if time.monotonic() >= deadline:
                return
            if _remove_dir(path, "hwcheck-w-", deadline):
                self.paths.pop(path, None)


def make_worker_dir(made=MADE):
    """Make a fresh worker dir (mode 0700) in the temp dir, named in the file `made` (MADE of the zygote's
    own dir) BEFORE it exists: a zygote killed by SIGKILL (or stopped, then killed) removes none and names
    none in LEFTOVER, and its client (in a batch, not the process the dir was made for) removes from this
    list what is left. Named after it was made, a kill between the two left it to no one."""
    for _ in range(100):
        path = os.path.join(tempfile.gettempdir(), "hwcheck-w-" + secrets.token_hex(6))
        _note_made(path, made)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return path
    raise FileExistsError("no free name for a worker dir")


def _note_made(path, made):
    """One line in `made`, written by one write() (O_APPEND): never half a name, never left in a buffer."""
    try:
        fd = os.open(made, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, (path + "\n").encode())
        finally:
            os.close(fd)
    except OSError as e:
        _log("naming a worker dir", e)


def _write_leftovers(paths):
    """Name the worker dirs not removed yet in LEFTOVER of the zygote's own dir, for its client."""
    try:
        with open(LEFTOVER, "w") as f:
            f.write("".join(p + "\n" for p in paths))
    except OSError as e:
        _log("left behind", e)


def _log(what, e):
    try:
        os.write(2, f"hwcheck zygote: {what}: {type(e).__name__}: {e}\n"[:2000].encode(errors="replace"))
    except OSError:
        pass


def _terminate(signum, frame):
    """SIGTERM (the trusted process died: PR_SET_PDEATHSIG): the loop stops at its next turn, never in the
    middle of a step, where a worker dir taken off one list and not yet put on the next, or made and not yet
    remembered, would be left behind."""
    _STOP.append(signum)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ctrls = [socket.socket(fileno=int(a)) for a in argv]
    client = os.getppid()
    signal.signal(signal.SIGTERM, _terminate)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)  # the trusted process died: clean up, then go
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    import numpy  # noqa: F401  - warm imports shared by every worker
    import torch  # noqa: F401
    from checker.worker import serve  # noqa: F401

    torch.set_num_threads(int(os.environ.get("HWCHECK_THREADS", "1")))
    if os.environ.get("HWCHECK_WARM_META"):
        _warm_meta()
    # namespaces can be turned off to test the fallback walls (HWCHECK_NAMESPACES=0)
    use_namespaces = os.environ.get("HWCHECK_NAMESPACES", "1") != "0"
    cgroup = memory.cgroup_parent()  # where each worker's memory cgroup goes (None: RLIMIT_AS)
    # a root grader whose workers get no PID namespace (HWCHECK_NAMESPACES=0, or no CAP_SYS_ADMIN: Gradescope) kills
    # every process of a worker's own uid as it reaps it (a worker killed from outside cleans up nothing itself);
    # with one, the namespace's end killed them (and a look in /proc for each worker would cost ~10 ms)
    by_uid = os.geteuid() == 0 and not (use_namespaces and _has_cap_sys_admin())
    workers, statuses, workdirs = set(), {}, {}
    made = set()  # worker dirs made here but not yet given to a worker: a kill between the two leaks none
    removals = _Removals()
    for ctrl in ctrls:
        _reply(ctrl, {"ready": True, "pid": os.getpid()})

    def reap():
        while True:
            try:  # a look first, the child left unreaped: its pid (its uid's half) is no one else's meanwhile
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if info is None or not info.si_pid:
                return
            if info.si_pid in workers and by_uid:  # no PID namespace holds its processes: all of its uid go
                namespaces.kill_uid(namespaces.WORKER_UIDS + info.si_pid)
            try:
                pid, status = os.waitpid(info.si_pid, os.WNOHANG)
            except ChildProcessError:
                continue
            if pid == 0:
                return
            if pid in workers:
                workers.discard(pid)
                statuses[pid] = status
                _kill_tree(pid)  # its process group may still hold children
                memory.release(pid, cgroup)
                removals.add(workdirs.pop(pid, None))

    def sweep():
        for pid in _children_of(os.getpid()):
            if pid not in workers:
                _kill_tree(pid)
        reap()

    def remove(path):
        """The trusted side is done with a worker dir: its worker (if any) goes, then the dir."""
        if not _is_own(path, "hwcheck-w-"):
            return {"error": f"not a worker dir: {path!r}"}
        owner = [pid for pid, p in workdirs.items() if p == path]
        if path not in made and not owner and path not in removals.paths:
            return {"removed": not os.path.lexists(path)}  # not ours (any more): not touched
        made.discard(path)
        deadline = time.monotonic() + 1
        for pid in owner:
            _kill_tree(pid)
            while pid in workers and time.monotonic() < deadline:
                reap()
                time.sleep(0.002)
        if any(pid in workers for pid in owner):
            return {"removed": False}  # removed once it is reaped
        return {"removed": removals.remove_now(path, _REMOVE_S)}

    def answer(ctrl, header, fds):
        op = header.get("op")
        if op == "fork" and fds:
            if header.get("warm_meta"):  # a worker of a torch assignment: it will use the meta device
                _warm_meta()
            pid = os.fork()
            if pid == 0:
                _child(ctrls, fds[0], {**header, "cgroup_parent": cgroup, "namespaces": use_namespaces})
            os.close(fds[0])
            workers.add(pid)
            workdirs[pid] = header.get("workdir")
            made.discard(workdirs[pid])
            _reply(ctrl, {"pid": pid})
        elif op == "mkdir":
            try:
                path = make_worker_dir()
                made.add(path)
                _reply(ctrl, {"path": path})
            except OSError as e:
                _reply(ctrl, {"error": f"cannot make a worker dir: {e}"})
        elif op == "remove":
            _reply(ctrl, remove(header.get("path")))
        elif op == "status":
            reap()
            _reply(ctrl, {"status": statuses.pop(header.get("pid"), None)})
        elif op == "ping":
            _reply(ctrl, {"pong": True})
        else:
            _reply(ctrl, {"error": f"unknown op {op!r}"})

    try:
        while ctrls and not _STOP:
            ready, _, _ = select.select(ctrls, [], [], 0.2)
            for step, what in ((reap, "reaping"), (sweep, "sweeping"),
                               (lambda: removals.turn(_TURN_S), "removing worker dirs")):
                try:  # nothing a worker left behind ends this loop
                    step()
                except Exception as e:  # noqa: BLE001
                    _log(what, e)
            for ctrl in ready:
                try:
                    msg, fds, _flags, _addr = socket.recv_fds(ctrl, 1 << 20, 1)
                    header = json.loads(msg.decode()) if msg else None
                except (OSError, ValueError):
                    header = None
                if not isinstance(header, dict):
                    ctrls.remove(ctrl)
                    continue
                try:
                    answer(ctrl, header, fds)
                except Exception as e:  # noqa: BLE001 - a failed request is answered, the loop goes on
                    _log(f"op {header.get('op')!r}", e)
                    _reply(ctrl, {"error": f"the zygote failed: {type(e).__name__}: {e}"[:500]})
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for pid in list(workers):  # each worker's processes, all at once (namespaces.kill_uid), then the rest
            _kill_tree(pid)
            if by_uid:
                namespaces.kill_uid(namespaces.WORKER_UIDS + pid, seconds=1)
        _sweep_until_childless(deadline=time.monotonic() + 3)
        for path in [*workdirs.values(), *made]:
            removals.add(path)
        removals.turn(_EXIT_S)
        if removals.paths and os.getppid() != client:  # its client is gone: no one else would finish them
            removals.turn(_ORPHAN_S)
        memory.remove_parent(cgroup)
        if removals.paths:  # not done in time: the client finishes them (checker.running.zygote_client)
            _write_leftovers(list(removals.paths))
        else:
            _remove_dir(os.getcwd(), "hwcheck-zygote-")
    os._exit(0)


def _warm_meta():
    """PyTorch imports about a second of modules (its meta kernels, decompositions) at the first meta-device
    op of a process and at the first layer norm there: done once here, before forking, not in every worker
    of a torch assignment (the meta device stands in for a GPU in its device tests). Once per zygote; a
    failure is logged, never fatal."""
    if _WARMED:
        return
    _WARMED.append(True)
    try:
        import torch
        with torch.device("meta"):
            torch.nn.functional.layer_norm(torch.empty(1, 2), (2,))
            torch.nn.functional.scaled_dot_product_attention(*[torch.empty(1, 1, 2, 2)] * 3)
    except Exception as e:  # noqa: BLE001
        _log("warming the meta device", e)


def _reply(ctrl, obj):
    try:
        ctrl.send(json.dumps(obj).encode())
    except OSError:
        pass


def _child(ctrls, fd, header):
    try:
        for ctrl in ctrls:
            ctrl.close()
        os.set_inheritable(fd, False)  # a program the submission starts must not hold the grader's socket
        os.setsid()
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        from checker.worker import serve
        serve.serve(socket.socket(fileno=fd), header)
    finally:
        os._exit(0)


if __name__ == "__main__":
    main()
