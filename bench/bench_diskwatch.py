"""How far past its bound a worker writes before the disk watch stops it: `python bench/bench_diskwatch.py [-n 3]`.

What it is for: without namespaces (no tmpfs of its own), `checker.worker.diskcap.Watch`
looks at the worker's dir every INTERVAL_S and the body is killed past DISK_MB or
DISK_FILES. Here a writer as fast as one process can go (64 MiB files of 1 MiB
writes; or empty files, 1000 to a folder) runs against the same `Watch.over` polled
at the same interval, and the dir is measured once the writer is dead: the
overshoot is what the writer managed between two looks. Run it on an idle machine;
a loaded one writes slower and overshoots less.

What it is not: a test; it asserts nothing, and the real watcher is the worker's
parent (`namespaces.fork_init(watch=...)`), not this loop.
"""

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from checker.worker import diskcap  # noqa: E402


def _writer(kind):
    chunk, i = b"x" * (1 << 20), 0
    while True:
        if kind == "bytes":
            with open(f"f{i}", "wb") as f:
                for _ in range(64):
                    f.write(chunk)
        else:
            if i % 1000 == 0:
                os.mkdir(f"d{i // 1000}")
            os.close(os.open(f"d{i // 1000}/{i}", os.O_CREAT | os.O_WRONLY, 0o600))
        i += 1


def once(kind):
    d = tempfile.mkdtemp(prefix="hwcheck-bench-disk-")
    try:
        watch = diskcap.Watch(d)
        pid = os.fork()
        if pid == 0:
            os.chdir(d)
            try:
                _writer(kind)
            finally:
                os._exit(0)
        t0 = time.perf_counter()
        while not watch.over(pid):
            time.sleep(diskcap.INTERVAL_S)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        took = time.perf_counter() - t0
        watch.max_bytes = watch.max_files = 1 << 62  # measure all of it now
        used, files, _ = watch._tree()
        return took, used, files
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=3)
    n = ap.parse_args().n
    print(f"bound: {diskcap.DISK_MB} MiB, {diskcap.DISK_FILES} files; a look every {diskcap.INTERVAL_S} s")
    for kind in ("bytes", "files"):
        for _ in range(n):
            took, used, files = once(kind)
            over = (f"{(used >> 20) - diskcap.DISK_MB:+d} MiB" if kind == "bytes"
                    else f"{files - diskcap.DISK_FILES:+d} files")
            print(f"{kind:5s}: stopped after {took:.2f} s at {used >> 20} MiB, {files} entries ({over} past the bound)")


if __name__ == "__main__":
    main()
