"""A warm parent that forks one worker per submission: `python -m checker.worker.zygote FD`.

What it is for: importing torch takes seconds; forking a process that has
already imported it takes milliseconds. The zygote imports numpy, torch and
the worker-side modules of hwcheck (never `reference`, `assignments` or the
grading plugin), then waits on its control socket. For each request it
receives a socket end (SCM_RIGHTS), forks, and the child becomes a worker in
its own session. The zygote is a child subreaper: any process a worker
leaves behind (daemonised or in a new session) is re-parented here and
killed within 0.2 s. When the control socket closes, or the trusted process
dies (even by SIGKILL: the zygote gets SIGTERM), every worker and leftover
dies and the workers' temp dirs are removed. The zygote makes those dirs
itself (op "mkdir") before the trusted side fills them, so a trusted process
killed between making a dir and asking for its worker leaks nothing.

What it is not: a place student code ever runs; it runs only in the children.
"""

import ctypes
import json
import os
import select
import shutil
import signal
import socket
import sys
import tempfile
import time

from checker.worker import memory

__all__ = ["main"]

_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER = 1, 36


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


def _remove_dir(path, prefix):
    """Remove a temp dir the trusted side made for us, and nothing else."""
    if (isinstance(path, str) and os.path.basename(path.rstrip("/")).startswith(prefix)
            and os.path.dirname(os.path.realpath(path)) == os.path.realpath(tempfile.gettempdir())):
        shutil.rmtree(path, ignore_errors=True)


def _terminate(signum, frame):
    raise SystemExit(0)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ctrls = [socket.socket(fileno=int(a)) for a in argv]
    signal.signal(signal.SIGTERM, _terminate)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)  # the trusted process died: clean up, then go
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    import numpy  # noqa: F401  - warm imports shared by every worker
    import torch  # noqa: F401
    from checker.worker import serve  # noqa: F401

    torch.set_num_threads(int(os.environ.get("HWCHECK_THREADS", "1")))
    if os.environ.get("HWCHECK_WARM_META"):
        # ~1 s of lazy imports behind the first meta-device op: pay it once here, not in every worker
        with torch.device("meta"):
            torch.nn.functional.layer_norm(torch.empty(1, 2), (2,))
            torch.nn.functional.scaled_dot_product_attention(*[torch.empty(1, 1, 2, 2)] * 3)
    # namespaces can be turned off to test the fallback walls (HWCHECK_NAMESPACES=0)
    use_namespaces = os.environ.get("HWCHECK_NAMESPACES", "1") != "0"
    cgroup = memory.cgroup_parent()  # where each worker's memory cgroup goes (None: RLIMIT_AS)
    workers, statuses, workdirs = set(), {}, {}
    made = set()  # worker dirs made here but not yet given to a worker: a kill between the two leaks none
    for ctrl in ctrls:
        _reply(ctrl, {"ready": True, "pid": os.getpid()})

    def reap():
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in workers:
                workers.discard(pid)
                statuses[pid] = status
                _kill_tree(pid)  # its process group may still hold children
                memory.release(pid, cgroup)
                _remove_dir(workdirs.pop(pid, None), "hwcheck-w-")

    def sweep():
        for pid in _children_of(os.getpid()):
            if pid not in workers:
                _kill_tree(pid)
        reap()

    try:
        while ctrls:
            ready, _, _ = select.select(ctrls, [], [], 0.2)
            reap()
            sweep()
            for ctrl in ready:
                try:
                    msg, fds, _flags, _addr = socket.recv_fds(ctrl, 1 << 20, 1)
                    header = json.loads(msg.decode()) if msg else None
                except (OSError, ValueError):
                    header = None
                if not isinstance(header, dict):
                    ctrls.remove(ctrl)
                    continue
                op = header.get("op")
                if op == "fork" and fds:
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
                        path = tempfile.mkdtemp(prefix="hwcheck-w-")
                        made.add(path)
                        _reply(ctrl, {"path": path})
                    except OSError as e:
                        _reply(ctrl, {"error": f"cannot make a worker dir: {e}"})
                elif op == "status":
                    reap()
                    _reply(ctrl, {"status": statuses.pop(header.get("pid"), None)})
                else:
                    _reply(ctrl, {"error": f"unknown op {op!r}"})
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for pid in list(workers):
            _kill_tree(pid)
        _sweep_until_childless(deadline=time.monotonic() + 3)
        for path in [*workdirs.values(), *made]:
            _remove_dir(path, "hwcheck-w-")
        memory.remove_parent(cgroup)
        _remove_dir(os.getcwd(), "hwcheck-zygote-")
    os._exit(0)


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
