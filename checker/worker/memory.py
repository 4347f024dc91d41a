"""A cap on all of a worker's memory: private, shared (`mmap(-1, n)`), tmpfs pages and page tables.

What it is for: RLIMIT_DATA counts private writable memory only, so a shared
anonymous mapping or a file in /dev/shm went past it. `cap_memory(mb)` puts
the calling process (before it forks the worker's body) under the strongest
cap the grader can make, and returns its name for `grader.isolation`:

- `cgroup2-memory.max-<N>MiB`: a cgroup v2 child of the zygote's cgroup,
  where the system delegated the memory controller to it (systemd
  `Delegate=yes`, a container's own cgroup). Memory and swap are capped; the
  pids controller, where present, caps the number of processes too.
- `cgroup1-memory.limit-<N>MiB`: the cgroup v1 memory controller, where it is
  mounted and writable (a root grader on a v1 or hybrid host).
- `address-space-<N>MiB` (RLIMIT_AS): every mapping counts, shared or not;
  the limit is the process's size after torch's import plus the budget plus
  headroom for thread stacks and lazily loaded libraries. Not used where a
  GPU is present (CUDA reserves far more address space than it uses).

The cgroup a worker was put in is named `hwcheck-<pid>` under a parent
the zygote made; `release(pid)` removes it after the worker was reaped.

What it is not: a fair-share scheduler, or a disk quota (the file-size
rlimit and the small tmpfs mounts bound those).
"""

import os
import resource

__all__ = ["cap_memory", "release", "remove_parent", "cgroup_parent", "HEADROOM_MB"]

HEADROOM_MB = 256
PIDS_MAX = 512
_PARENT = {}


def _own_cgroup_v2():
    """(mount point, path) of this process's cgroup v2, or None."""
    try:
        with open("/proc/self/cgroup") as f:
            rel = next((ln.split(":", 2)[2].strip() for ln in f if ln.startswith("0::")), None)
        with open("/proc/self/mountinfo") as f:
            mnt = next((ln.split()[4] for ln in f if " - cgroup2 " in ln), None)
    except OSError:
        return None
    if rel is None or mnt is None:
        return None
    return mnt, rel


def _own_cgroup_v1_memory():
    try:
        with open("/proc/self/cgroup") as f:
            rel = next((ln.split(":", 2)[2].strip() for ln in f
                        if "memory" in ln.split(":", 2)[1].split(",")), None)
        with open("/proc/self/mountinfo") as f:
            mnt = next((ln.split()[4] for ln in f if " - cgroup " in ln and "memory" in ln.split()[-1].split(",")),
                       None)
    except OSError:
        return None
    if rel is None or mnt is None:
        return None
    return mnt, rel


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def cgroup_parent():
    """Made once per zygote: the cgroup under which its workers' cgroups go, as (kind, path) or None.

    v2 needs the memory controller delegated to this process's cgroup (listed in its
    cgroup.subtree_control after we ask for it in a child of ours); v1 needs a writable memory
    hierarchy. Anything else: None, and workers fall back to RLIMIT_AS."""
    if "parent" in _PARENT:
        return _PARENT["parent"]
    _PARENT["parent"] = None
    found = _own_cgroup_v2()
    if found:
        base = os.path.join(found[0], found[1].lstrip("/"), f"hwcheck-{os.getpid()}")
        try:
            os.mkdir(base)
            with open(os.path.join(base, "cgroup.controllers")) as f:
                controllers = f.read().split()
            if "memory" in controllers:
                _write(os.path.join(base, "cgroup.subtree_control"),
                       " ".join("+" + c for c in ("memory", "pids") if c in controllers))
                _PARENT["parent"] = ("cgroup2", base)
                return _PARENT["parent"]
            os.rmdir(base)
        except OSError:
            try:
                os.rmdir(base)
            except OSError:
                pass
    found = _own_cgroup_v1_memory()
    if found:
        base = os.path.join(found[0], found[1].lstrip("/"), f"hwcheck-{os.getpid()}")
        try:
            os.makedirs(base, exist_ok=True)
            if os.access(os.path.join(base, "memory.limit_in_bytes"), os.W_OK):
                _PARENT["parent"] = ("cgroup1", base)
                return _PARENT["parent"]
            os.rmdir(base)
        except OSError:
            pass
    return None


def cap_memory(memory_mb, parent=None, gpu=False):
    """Cap all of this process's (and its children's) memory; return the wall's name, or None."""
    limit = int(memory_mb) * 1024 * 1024
    if parent:
        kind, base = parent
        path = os.path.join(base, f"hwcheck-{os.getpid()}")
        try:
            os.mkdir(path)
            if kind == "cgroup2":
                _write(os.path.join(path, "memory.max"), str(limit))
                for name, value in (("memory.swap.max", "0"), ("pids.max", str(PIDS_MAX))):
                    if os.path.exists(os.path.join(path, name)):
                        _write(os.path.join(path, name), value)
                _write(os.path.join(path, "cgroup.procs"), "0")
                return f"cgroup2-memory.max-{memory_mb}MiB"
            _write(os.path.join(path, "memory.limit_in_bytes"), str(limit))
            sw = os.path.join(path, "memory.memsw.limit_in_bytes")
            if os.path.exists(sw):
                try:
                    _write(sw, str(limit))
                except OSError:
                    pass
            _write(os.path.join(path, "cgroup.procs"), "0")
            return f"cgroup1-memory.limit-{memory_mb}MiB"
        except OSError:
            try:
                os.rmdir(path)
            except OSError:
                pass
    if gpu:
        return None
    size = _vm_size_bytes()
    cap = size + limit + HEADROOM_MB * 1024 * 1024
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ValueError, OSError):
        return None
    return f"address-space-{cap // (1024 * 1024)}MiB"


def release(pid, parent):
    """Remove the cgroup of a reaped worker (and kill what is left in it, on cgroup v2)."""
    if not parent:
        return
    path = os.path.join(parent[1], f"hwcheck-{pid}")
    if not os.path.isdir(path):
        return
    if parent[0] == "cgroup2" and os.path.exists(os.path.join(path, "cgroup.kill")):
        try:
            _write(os.path.join(path, "cgroup.kill"), "1")
        except OSError:
            pass
    try:
        os.rmdir(path)
    except OSError:
        pass


def remove_parent(parent):
    """The zygote's own cgroup, with what is left of its workers' (all of them dead by now)."""
    if parent:
        for name in _listdir(parent[1]):
            if name.startswith("hwcheck-") and name[8:].isdigit():
                release(int(name[8:]), parent)
        try:
            os.rmdir(parent[1])
        except OSError:
            pass


def _vm_size_bytes():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 1024 * 1024 * 1024


def _listdir(p):
    try:
        return os.listdir(p)
    except OSError:
        return []
