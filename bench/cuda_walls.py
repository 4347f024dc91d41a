"""Which of the worker's walls lets CUDA start, one wall at a time: a diagnosis run on a machine with a GPU.

What it is for: on a machine with an NVIDIA GPU, each case below starts a fresh Python, imports torch (as
the zygote does before it forks a worker), puts up some of the walls of `checker.worker.isolation`, then
starts CUDA (`cuInit` through libcuda, then a tensor on the GPU) and prints what happened, with what the
process sees of the GPU's device files when it fails. "full-without-X" cases take one wall out of the
whole set, so a failing wall shows as the one whose removal makes CUDA start.
What it is not: a test (a GPU is needed; CI has none) nor a benchmark.

Usage: python bench/cuda_walls.py [CASE...]   (every case when none is named)
"""
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PRELUDE = """
import ctypes, os, resource, sys, tempfile
sys.path.insert(0, {root!r})
import torch
from checker.worker import isolation, landlock, memory, namespaces, seccomp
work = tempfile.mkdtemp(prefix="cudawalls-")
os.chmod(work, 0o755)
GPU_DEVS = sorted(isolation._gpu_devices())  # before the walls: Landlock may hide /dev's listing
def without(name):
    if name == "data":
        real = isolation._set_limit
        isolation._set_limit = lambda which, v: False if which == resource.RLIMIT_DATA else real(which, v)
    elif name == "seccomp":
        seccomp.restrict = lambda **k: None
    elif name == "landlock":
        landlock.restrict = lambda *a, **k: None
    elif name == "fallocate":
        from checker.worker import diskcap
        diskcap.deny_fallocate = lambda: None
    elif name == "sys":
        real_bind = namespaces._bind
        namespaces._bind = lambda s, d, **k: None if s == "/sys" else real_bind(s, d, **k)
"""

CUSTOM = """
def custom(fs_mask=None, net=True, scoped=True, extra=()):
    # Landlock as checker.worker.landlock.restrict puts it up (no namespaces), with parts changed
    abi = landlock.landlock_abi()
    libc = landlock._libc()
    fs = fs_mask if fs_mask is not None else landlock.FS_BY_ABI.get(abi, landlock.FS_BY_ABI[5])
    attr = landlock._RulesetAttr(fs, (landlock.NET_BIND | landlock.NET_CONNECT) if net and abi >= 4 else 0,
                                 (landlock.SCOPE_ABSTRACT_UNIX | landlock.SCOPE_SIGNAL) if scoped and abi >= 6 else 0)
    fd = libc.syscall(landlock._SYS_create, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    def add(path, access):
        pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        if not os.path.isdir(path):
            access &= landlock.EXECUTE | landlock.WRITE_FILE | landlock.READ_FILE | landlock.TRUNCATE | landlock.IOCTL_DEV
        rule = landlock._PathBeneath(access & fs, pfd)
        libc.syscall(landlock._SYS_add_rule, ctypes.c_int(fd), ctypes.c_int(1), ctypes.byref(rule), ctypes.c_uint32(0))
    for p in landlock.allowed_read_roots([]) + [work, "/proc", "/sys"]:
        add(p, landlock.READ)
    for p in ["/dev/null", "/dev/shm", *GPU_DEVS]:
        add(p, landlock.READ | landlock.WRITE_FILE | landlock.TRUNCATE | landlock.IOCTL_DEV)
    for p, acc in extra:
        add(p, acc)
    libc.prctl(38, 1, 0, 0, 0)
    print("restrict ->", libc.syscall(landlock._SYS_restrict, ctypes.c_int(fd), ctypes.c_uint32(0)))
ALL = (1 << 16) - 1
RW = landlock.READ | landlock.WRITE_FILE | landlock.TRUNCATE | landlock.IOCTL_DEV
"""

PROBE = """
def probe():
    try:
        cu = ctypes.CDLL("libcuda.so.1")
        r = cu.cuInit(0)
        n = ctypes.c_int(-1)
        cu.cuDeviceGetCount(ctypes.byref(n))
        print("cuInit ->", r, "devices", n.value)
    except OSError as e:
        print("libcuda:", e)
        r = -1
    try:
        x = torch.ones(3, device="cuda") * 2
        print("RESULT OK", x.sum().item(), "uid", os.getuid())
    except Exception as e:
        print("RESULT FAIL", type(e).__name__, str(e)[:160], "uid", os.getuid())
        for p in GPU_DEVS:
            try:
                fd = os.open(p, os.O_RDWR) if not os.path.isdir(p) else None
                print("  open", p, "ok")
                if fd is not None:
                    os.close(fd)
            except OSError as e2:
                print("  open", p, "->", e2.strerror)
        for p in ("/proc/driver/nvidia/version", "/sys/module/nvidia/version", "/proc/self/status"):
            try:
                with open(p) as f:
                    text = f.read()
                print("  read", p, "ok", len(text), [l for l in text.splitlines() if l.startswith(("Seccomp", "NoNewPrivs", "Cap"))][:6])
            except OSError as e2:
                print("  read", p, "->", e2.strerror)
        print("  rlimits: data", resource.getrlimit(resource.RLIMIT_DATA), "as", resource.getrlimit(resource.RLIMIT_AS),
              "memlock", resource.getrlimit(resource.RLIMIT_MEMLOCK), "nproc", resource.getrlimit(resource.RLIMIT_NPROC))
    sys.stdout.flush()
"""

CASES = {
    "none": "",
    "data-4096": "resource.setrlimit(resource.RLIMIT_DATA, (4096 << 20, 4096 << 20))",
    "seccomp": "seccomp.restrict(sockets=True)",
    "uid": "os.setgroups([]); n = isolation.UID_BASE + os.getpid(); os.setresgid(n, n, n); os.setresuid(n, n, n)",
    "landlock": textwrap.dedent("""
        devs = ["/dev/null", "/dev/shm", *isolation._gpu_devices()]
        landlock.restrict(landlock.landlock_abi(), landlock.allowed_read_roots([]) + [work, "/proc", "/sys"],
                          [work], devs, refer=False)"""),
    "ll-as-is": "custom()",
    "ll-no-net-no-scope": "custom(net=False, scoped=False)",
    "ll-no-scope": "custom(scoped=False)",
    "ll-ioctl-not-handled": "custom(fs_mask=landlock.FS_BY_ABI[4])",
    "ll-root-read": "custom(extra=[('/', landlock.READ)])",
    "ll-root-rw": "custom(extra=[('/', RW)])",
    "ll-root-all": "custom(extra=[('/', ALL)])",
    "ll-dev-all": "custom(extra=[('/dev', ALL)])",
    "namespaces": textwrap.dedent("""
        namespaces.unshare_all()
        namespaces.fork_init()
        namespaces.build_root(work, landlock.allowed_read_roots([]), isolation._link_paths())"""),
    "namespaces-drop": textwrap.dedent("""
        namespaces.unshare_all()
        namespaces.fork_init()
        namespaces.build_root(work, landlock.allowed_read_roots([]), isolation._link_paths())
        n = isolation.UID_BASE + os.getpid()
        namespaces.drop_privileges(n, n)"""),
    "full": "print(isolation.apply_isolation(work, []))",
    "full-without-data": "without('data'); print(isolation.apply_isolation(work, []))",
    "full-without-seccomp": "without('seccomp'); print(isolation.apply_isolation(work, []))",
    "full-without-landlock": "without('landlock'); print(isolation.apply_isolation(work, []))",
    "full-without-data-seccomp-landlock": "without('data'); without('seccomp'); without('landlock'); "
                                          "print(isolation.apply_isolation(work, []))",
    "fallback": "print(isolation.apply_isolation(work, [], use_namespaces=False))",
    "fallback-without-data": "without('data'); print(isolation.apply_isolation(work, [], use_namespaces=False))",
    "fallback-without-seccomp": "without('seccomp'); print(isolation.apply_isolation(work, [], use_namespaces=False))",
    "fallback-without-fallocate": "without('fallocate'); "
                                  "print(isolation.apply_isolation(work, [], use_namespaces=False))",
    "fallback-without-landlock": "without('landlock'); print(isolation.apply_isolation(work, [], use_namespaces=False))",
}


def main(names):
    for name in names or CASES:
        code = PRELUDE.format(root=ROOT) + CUSTOM + PROBE + CASES[name] + "\nprobe()\n"
        try:
            env = dict(os.environ)
            if os.environ.get("CUDA_WALLS_SHIM"):  # a preloaded library printing each refused open, ioctl, connect
                env["LD_PRELOAD"] = os.environ["CUDA_WALLS_SHIM"]
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
            text = (out.stdout + out.stderr[-3000:]).strip()
        except subprocess.TimeoutExpired:
            text = "timed out"
        print(f"--- {name}\n{text}\n", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
