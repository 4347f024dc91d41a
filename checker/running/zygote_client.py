"""The trusted side's client of the zygote (`python -m checker.worker.zygote`).

What it is for: starting the warm forking parent of workers with a clean
environment, and asking it over its control channels to make a worker dir,
fork a worker for a socket end, remove a worker dir, or report how a worker
ended. The zygote alone removes worker dirs (`checker.worker.cleanup`:
iterative, bounded, never following links); this side removes one itself
only when the zygote is gone, with the same code and a deadline.

What it is not: a worker, or the handle on one (`checker.running.sandbox`).
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from checker.errors import SandboxError
from checker.worker import cleanup, memory
from checker.worker.zygote import LEFTOVER, MADE

__all__ = ["Zygote", "SAFE_ENV"]

START_S = 120  # a zygote's first reply on a channel may wait for its import of torch
REPLY_S = 30   # a started zygote answers any request within this, or it is taken for hung (and replaced)

SAFE_ENV = ("PATH", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
            "LD_LIBRARY_PATH", "HWCHECK_NAMESPACES", "HWCHECK_CGROUPS")  # =0: test the fallback walls


class Zygote:
    """The warm forking parent of workers: one per batch, with one control channel per trusted
    process (`channel(i)`). It imports torch in the background; the first request waits for it."""

    def __init__(self, channels=1, warm_meta=False):
        pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET) for _ in range(channels)]
        env = {k: os.environ[k] for k in SAFE_ENV if k in os.environ}
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", HWCHECK_THREADS="1",
                   PYTHONPATH=_import_root(), PYTHONDONTWRITEBYTECODE="1",
                   PYTHONHASHSEED="0", TORCHINDUCTOR_CACHE_DIR="/nonexistent",
                   **({"HWCHECK_WARM_META": "1"} if warm_meta else {}))
        # the zygote removes only dirs in its temp dir: it must be ours, whatever TMPDIR says
        env["TMPDIR"] = os.path.realpath(tempfile.gettempdir())
        self._dir = tempfile.mkdtemp(prefix="hwcheck-zygote-")
        self._stderr = open(os.path.join(self._dir, "stderr"), "w+b")  # a pipe nobody reads could block it
        self.proc = subprocess.Popen(
            [sys.executable, "-s", "-m", "checker.worker.zygote", *[str(b.fileno()) for _, b in pairs]],
            pass_fds=[b.fileno() for _, b in pairs], env=env, cwd=self._dir,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._stderr,
            start_new_session=True)
        for _, b in pairs:
            b.close()
        self.channels = [a for a, _ in pairs]
        self.pid = self.proc.pid
        self.ctrl = self.channels[0]
        self._ready = set()  # channels whose "ready" message was read: the zygote starts in the background
        self._silent = set()  # channels where a request got no reply: a late one would answer the next request

    def channel(self, i):
        """A view of this zygote bound to control channel i (one per trusted process)."""
        view = object.__new__(Zygote)
        view.__dict__.update(self.__dict__)
        view.ctrl = self.channels[i]
        return view

    def _ask(self, obj, fds=(), timeout=None):
        """Send one request on this channel and return its reply.

        The zygote starts in the background and says "ready" once on every channel. Whoever reads
        that message skips it; no one waits for it first, because a trusted process that replaced a
        dead one cannot know whether the dead one (or `_Pool.drain`) already read it. Until this
        process has seen the zygote answer, the first reply may take as long as importing torch."""
        fd = self.ctrl.fileno()
        if fd in self._silent:  # fail at once, not after another REPLY_S: this zygote is replaced
            raise SandboxError("the worker zygote stopped answering (an earlier request got no reply)")
        deadline = time.monotonic() + (timeout or (REPLY_S if fd in self._ready else START_S))
        try:
            socket.send_fds(self.ctrl, [json.dumps(obj).encode()], list(fds))
            while True:
                self.ctrl.settimeout(max(0.05, deadline - time.monotonic()))
                msg = json.loads(self.ctrl.recv(65536) or b"null")
                self._ready.add(fd)
                if isinstance(msg, dict) and msg.get("ready") and len(msg) <= 2:
                    continue  # the start-up message, not a reply
                return msg
        except (OSError, ValueError) as e:
            self._silent.add(fd)
            if fd not in self._ready:
                err = ""
                if not self.alive():  # (not proc.poll(): a forked trusted process is not its parent)
                    self._stderr.seek(0)
                    err = self._stderr.read().decode(errors="replace")[-2000:]
                raise SandboxError(f"the worker zygote did not start: {err or e}") from None
            raise SandboxError(f"the worker zygote stopped answering ({e})") from None

    def mkdir(self):
        """A fresh worker dir (mode 0700) in the temp dir, made and remembered by the zygote, which removes
        it when it exits even if no worker was ever forked for it."""
        reply = self._ask({"op": "mkdir"})
        if not isinstance(reply, dict) or not isinstance(reply.get("path"), str):
            raise SandboxError(f"the worker zygote made no worker dir: {reply}")
        return reply["path"]

    def fork(self, params):
        a, b = socket.socketpair()
        try:
            reply = self._ask({"op": "fork", **params}, [b.fileno()])
        finally:
            b.close()
        if "pid" not in reply:
            a.close()
            raise SandboxError(f"fork failed: {reply}")
        return reply["pid"], a

    def remove(self, path):
        """The worker dir `path` is no longer needed: the zygote kills its worker, if any, and removes it
        (within half a second; the rest later). Never raises; True when it is gone.

        Where the zygote is gone, this process removes it (with the same bounded remover)."""
        try:
            reply = self._ask({"op": "remove", "path": path})
            if isinstance(reply, dict) and "removed" in reply:
                return bool(reply["removed"])
        except SandboxError:
            pass
        if self.alive() or not _is_worker_dir(path):
            return False
        return cleanup.remove_tree(path, deadline=time.monotonic() + 2)

    def answers(self, timeout=5.0):
        """Does the zygote answer at all (a short request)? False for a dead, hung or closed zygote."""
        if not self.alive():
            return False
        try:
            return isinstance(self._ask({"op": "ping"}, timeout=timeout), dict)
        except SandboxError:
            return False

    def status(self, pid):
        try:
            return self._ask({"op": "status", "pid": pid}).get("status")
        except SandboxError:
            return None

    def alive(self):
        """Is the zygote running? (Works from forked trusted processes too, where it is no child.)"""
        try:
            os.kill(self.pid, 0)
        except OSError:
            return False
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return True

    def close(self):
        for ch in getattr(self, "channels", []):
            try:
                ch.close()
            except OSError:
                pass
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        # the cgroups it made for its workers: gone already where it exited by itself; one killed by SIGKILL
        # (here, or by anyone) left them, with what its workers left running in them
        memory.remove_parent_of(self.proc.pid)
        self._stderr.close()
        self._finish_listed(LEFTOVER, 60)
        self._finish_listed(MADE, 10)
        shutil.rmtree(self._dir, ignore_errors=True)

    def _finish_listed(self, name, seconds):
        """Remove the worker dirs the zygote named in the file `name` of its folder that are still there, with
        the same bounded remover, within `seconds` at most: LEFTOVER, those it had no time to remove as it
        exited; MADE, every one it made, for a zygote killed by SIGKILL (by its client, as one that stops
        answering, or by anyone), which removed none and named none in LEFTOVER (in a batch they were made
        for the forked grading processes, not this one)."""
        try:
            with open(os.path.join(self._dir, name)) as f:
                paths = f.read().splitlines()
        except OSError:
            return
        deadline = time.monotonic() + seconds
        for path in paths:
            if os.path.lexists(path) and _is_worker_dir(path):
                cleanup.remove_tree(path, deadline=deadline)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _is_worker_dir(path):
    tmp = os.path.realpath(tempfile.gettempdir())
    try:
        return (isinstance(path, str) and os.path.basename(path).startswith("hwcheck-w-")
                and os.path.dirname(os.path.realpath(path)) == tmp)
    except (OSError, ValueError):
        return False


def _import_root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))  # checker/running/..
