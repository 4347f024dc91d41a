"""A cap on all of a worker's memory (private, shared `mmap(-1, n)`, tmpfs pages, page tables) and its tasks,
and its one CPU share: a worker's cgroups.

What it is for: RLIMIT_DATA counts private writable memory only, so a shared
anonymous mapping or a file in /dev/shm went past it. `cap_memory(mb)` puts
the calling process (before it forks the worker's body) under the strongest
cap the grader can make, and returns its name for `grader.isolation`:

- `cgroup2-memory.max-<N>MiB`: a cgroup v2 child of the zygote's cgroup,
  where the system delegated the memory controller to it (systemd
  `Delegate=yes`, a container's own cgroup). Memory and swap are capped.
- `cgroup1-memory.limit-<N>MiB`: the cgroup v1 memory controller, where it is
  mounted and writable (a root grader on a v1 or hybrid host).
- `address-space-<N>MiB` (RLIMIT_AS): every mapping counts, shared or not;
  the limit is the process's size after torch's import plus the budget plus
  headroom for thread stacks and lazily loaded libraries. Not used where a
  GPU is present (CUDA reserves far more address space than it uses).

`cap_tasks(parent)` caps the number of tasks (processes and threads) the
worker may have at once, by the same cgroup: `tasks-cgroup2-pids.max-<N>`
where v2's pids controller was delegated with the memory controller,
`tasks-cgroup1-pids.max-<N>` where cgroup v1's pids hierarchy is mounted and
writable (a hybrid host, as root). Where neither is there, `isolation` sets
RLIMIT_NPROC for the worker's own uid instead.

`cap_cpu(parent)` gives the worker one CPU share, by the same cgroup: all of
its processes, however many, weigh as one entity against a classmate's worker
graded beside it (`cpu-cgroup2-cpu.weight-<W>` where v2's cpu controller was
delegated with the memory controller, `cpu-cgroup1-cpu.shares-<S>` where
cgroup v1's cpu hierarchy is mounted and writable, as root). A task in a cpu
cgroup other than the root is in no scheduling autogroup either. Where neither
is there, nothing is named: the worker's processes share the one session its
outer process made (seccomp refuses setsid), so on a host with
sched_autogroup they weigh as one autogroup, and without it as one process
each, as any other user's processes do.

The cgroups a worker was put in are named `hwcheck-<pid>` under parents
the zygote made; `release(pid)` removes them after the worker was reaped.
A zygote removes its parents as it exits; one killed by SIGKILL cannot, and
the process that started and reaped it removes them (`remove_parent_of`).

What it is not: a CPU quota (no cpu.max: a worker may use every core nobody
else wants), a time limit (the trusted side's budgets), or a disk quota (the
worker's own dir is a small tmpfs, or watched: `checker.worker.diskcap`).
"""

import os
import resource
import time

__all__ = ["cap_memory", "data_limit", "cap_tasks", "cap_cpu", "release", "remove_parent", "remove_parent_of",
           "cgroup_parent", "HEADROOM_MB", "PIDS_MAX"]

HEADROOM_MB = 256
DATA_MARGIN_MB = 64  # RLIMIT_DATA stops this far under the cgroup's cap (data_limit)
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


def _own_cgroup_v1(controller="memory"):
    try:
        with open("/proc/self/cgroup") as f:
            rel = next((ln.split(":", 2)[2].strip() for ln in f
                        if controller in ln.split(":", 2)[1].split(",")), None)
        with open("/proc/self/mountinfo") as f:
            mnt = next((ln.split()[4] for ln in f
                        if " - cgroup " in ln and controller in ln.split()[-1].split(",")), None)
    except OSError:
        return None
    if rel is None or mnt is None:
        return None
    return mnt, rel


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def cgroup_parent():
    """Made once per zygote: where its workers' cgroups go, as (kind, memory parent, v1 pids parent,
    v1 cpu parent) or None.

    v2 needs the memory controller delegated to this process's cgroup (listed in its
    cgroup.subtree_control after we ask for it in a child of ours; pids with it where delegated
    too; cpu too where delegated); v1 needs a writable memory hierarchy, and, for the tasks and the CPU share,
    writable pids and cpu hierarchies.
    Anything else: kind None, and workers fall back to RLIMIT_AS (and RLIMIT_NPROC); so does HWCHECK_CGROUPS=0,
    the tests' way to put up the walls of a host whose cgroups are read-only (Gradescope's Docker)."""
    if "parent" in _PARENT:
        return _PARENT["parent"]
    if os.environ.get("HWCHECK_CGROUPS", "1") == "0":  # tests of the walls where none can be made (Gradescope)
        _PARENT["parent"] = None
        return None
    kind, base = _memory_parent()
    pids = _v1_parent("pids", "pids.max") if kind != "cgroup2" or not _has(base, "pids") else None
    cpu = _v1_parent("cpu", "cpu.shares") if kind != "cgroup2" or not _has(base, "cpu") else None
    _PARENT["parent"] = (kind, base, pids, cpu) if kind or pids or cpu else None
    return _PARENT["parent"]


def _has(base, controller):
    try:
        with open(os.path.join(base, "cgroup.subtree_control")) as f:
            return controller in f.read().split()
    except OSError:
        return False


def _memory_parent():
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
                if "cpu" in controllers:  # apart: a refusal (a realtime task somewhere) costs only the CPU share
                    try:
                        _write(os.path.join(base, "cgroup.subtree_control"), "+cpu")
                    except OSError:
                        pass
                return "cgroup2", base
            os.rmdir(base)
        except OSError:
            try:
                os.rmdir(base)
            except OSError:
                pass
    base = _v1_parent("memory", "memory.limit_in_bytes")
    return ("cgroup1", base) if base else (None, None)


def _v1_parent(controller, knob):
    """Our own folder in cgroup v1's `controller` hierarchy, where we may write `knob` of a child."""
    found = _own_cgroup_v1(controller)
    if not found:
        return None
    base = os.path.join(found[0], found[1].lstrip("/"), f"hwcheck-{os.getpid()}")
    try:
        os.makedirs(base, exist_ok=True)
        if os.access(os.path.join(base, knob), os.W_OK):
            return base
        os.rmdir(base)
    except OSError:
        pass
    return None


def cap_memory(memory_mb, parent=None, gpu=False):
    """Cap all of this process's (and its children's) memory; return the wall's name, or None."""
    limit = int(memory_mb) * 1024 * 1024
    if parent and parent[0]:
        kind, base = parent[0], parent[1]
        path = os.path.join(base, f"hwcheck-{os.getpid()}")
        try:
            os.mkdir(path)
            if kind == "cgroup2":
                _write(os.path.join(path, "memory.max"), str(limit))
                if os.path.exists(os.path.join(path, "memory.swap.max")):
                    _write(os.path.join(path, "memory.swap.max"), "0")
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


def data_limit(memory_mb):
    """RLIMIT_DATA's value for a budget of `memory_mb`: on top of the private memory this process already
    holds (torch's import, which is ~200 MiB with a CPU build and far more with a CUDA build), so the
    student's code gets the same budget whichever build the grader runs; DATA_MARGIN_MB under the budget,
    so that where a cgroup caps the same budget, a plain allocation past it is a MemoryError in the
    student's own traceback before the cgroup's OOM killer ends the worker."""
    budget = int(memory_mb) - min(DATA_MARGIN_MB, int(memory_mb) // 4)
    return _vm_size_bytes("VmData") + budget * 1024 * 1024


def cap_tasks(parent=None, limit=PIDS_MAX):
    """Cap the tasks (processes and threads) of this process and all it starts, by a cgroup; the wall's
    name, or None (the caller then sets RLIMIT_NPROC). Call after cap_memory (v2 uses its cgroup)."""
    if not parent:
        return None
    mine = f"hwcheck-{os.getpid()}"
    if parent[0] == "cgroup2" and _has(parent[1], "pids"):
        path = os.path.join(parent[1], mine)
        try:
            with open(os.path.join(path, "cgroup.procs")) as f:
                if str(os.getpid()) not in f.read().split():
                    return None
            _write(os.path.join(path, "pids.max"), str(limit))
            return f"tasks-cgroup2-pids.max-{limit}"
        except OSError:
            return None
    if parent[2]:
        path = os.path.join(parent[2], mine)
        try:
            os.mkdir(path)
            _write(os.path.join(path, "pids.max"), str(limit))
            _write(os.path.join(path, "cgroup.procs"), "0")
            return f"tasks-cgroup1-pids.max-{limit}"
        except OSError:
            try:
                os.rmdir(path)
            except OSError:
                pass
    return None


def cap_cpu(parent=None):
    """Put this process (and all it starts) in a cpu cgroup of its own: one CPU share however many processes
    it has; the wall's name, or None (no cpu controller here: nothing else is done). Call after cap_memory
    (v2 uses its cgroup)."""
    if not parent:
        return None
    mine = f"hwcheck-{os.getpid()}"
    if parent[0] == "cgroup2" and _has(parent[1], "cpu"):
        path = os.path.join(parent[1], mine)
        try:
            with open(os.path.join(path, "cgroup.procs")) as f:
                if str(os.getpid()) not in f.read().split():
                    return None
            return f"cpu-cgroup2-cpu.weight-{_read(os.path.join(path, 'cpu.weight'))}"
        except OSError:
            return None
    if len(parent) > 3 and parent[3]:
        path = os.path.join(parent[3], mine)
        try:
            os.mkdir(path)
            _write(os.path.join(path, "cgroup.procs"), "0")
            return f"cpu-cgroup1-cpu.shares-{_read(os.path.join(path, 'cpu.shares'))}"
        except OSError:
            try:
                os.rmdir(path)
            except OSError:
                pass
    return None


def _read(path):
    with open(path) as f:
        return f.read().strip()


def _v1_bases(parent):
    """The v1 folders besides the memory one (pids, cpu) that a parent names."""
    return [b for b in parent[2:] if b]


_LEFT = set()  # cgroups whose members were killed but not yet gone when their worker was released


def release(pid, parent):
    """Remove the cgroups of a reaped worker (and kill what is left in them). A cgroup whose killed members
    have not exited yet cannot be removed: it is waited for (at most RELEASE_WAIT_S, only while it is busy),
    and one still busy then is tried again at each later release, so a long batch of killed workers leaves at
    most the last few folders until the zygote removes its parents."""
    for path in list(_LEFT):
        try:
            os.rmdir(path)
            _LEFT.discard(path)
        except FileNotFoundError:
            _LEFT.discard(path)
        except OSError:
            pass
    if not parent:
        return
    for kind, base in ((parent[0], parent[1]), *[("cgroup1", b) for b in _v1_bases(parent)]):
        path = os.path.join(base, f"hwcheck-{pid}") if base else None
        if not path or not os.path.isdir(path):
            continue
        if kind == "cgroup2" and os.path.exists(os.path.join(path, "cgroup.kill")):
            try:
                _write(os.path.join(path, "cgroup.kill"), "1")
            except OSError:
                pass
        else:
            _kill_members(path)
        if not _removed(path):
            _LEFT.add(path)


RELEASE_WAIT_S = 2.0  # how long a release waits for a cgroup's killed members to exit


def _removed(path):
    """rmdir a cgroup, waiting while its killed members are still exiting (EBUSY); whether it is gone."""
    deadline = time.monotonic() + RELEASE_WAIT_S
    while True:
        try:
            os.rmdir(path)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            _kill_members(path)  # one that forked while the first kill went round
            time.sleep(0.005)


def _kill_members(path):
    try:
        with open(os.path.join(path, "cgroup.procs")) as f:
            pids = [int(p) for p in f.read().split()]
    except (OSError, ValueError):
        return
    for p in pids:
        try:
            os.kill(p, 9)
        except OSError:
            pass


def remove_parent(parent):
    """The zygote's own cgroups, with what is left of its workers' (all of them dead by now)."""
    if parent:
        for base in {parent[1], *_v1_bases(parent)} - {None}:
            for name in _listdir(base):
                if name.startswith("hwcheck-") and name[8:].isdigit():
                    release(int(name[8:]), parent)
            try:
                os.rmdir(base)
            except OSError:
                pass


def remove_parent_of(zygote_pid, seconds=2.0):
    """The cgroups of a zygote that could not remove them (killed by SIGKILL), removed by the process that
    started it, once it has reaped it: `hwcheck-<zygote_pid>` under this process's own cgroups (the zygote
    was forked here and never moves itself), with whatever its workers left running in them killed first
    (within `seconds`: a killed process leaves its cgroup only as it exits). True when none is left."""
    def mine(found):
        return os.path.join(found[0], found[1].lstrip("/"), f"hwcheck-{int(zygote_pid)}") if found else None
    v2, v1_memory = mine(_own_cgroup_v2()), mine(_own_cgroup_v1("memory"))
    v1_pids, v1_cpu = mine(_own_cgroup_v1("pids")), mine(_own_cgroup_v1("cpu"))
    if v2 and os.path.isdir(v2):
        parent = ("cgroup2", v2, v1_pids, v1_cpu)
    else:
        parent = ("cgroup1", v1_memory, v1_pids, v1_cpu)
    left = [p for p in parent[1:] if p and os.path.isdir(p)]
    deadline = time.monotonic() + seconds
    while left:
        remove_parent((parent[0], *[p if p in left else None for p in parent[1:]]))
        left = [p for p in left if os.path.isdir(p)]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    return not left


def _vm_size_bytes(field="VmSize"):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 1024 * 1024 * 1024


def _listdir(p):
    try:
        return os.listdir(p)
    except OSError:
        return []
