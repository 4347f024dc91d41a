#!/usr/bin/env bash
# A second, shorter run on a machine with a real NVIDIA GPU: re-checks what the first (bench/cuda_run.sh) led to change.
#
# What it is for: after fixes made from a GPU run's scorecards (device hints, the low-precision gate, expected.json's
# `with_cuda`), batches of the torch assignments' examples where CUDA runs, each scorecard judged against its
# expected.json verdicts and hints as `hwcheck validate` judges them, one batch in the fallback mode, the suite's CUDA and GPU-wall tests, and what the machine's
# cgroups offer and what the memory watch that fills the memory cap's gap there counts of a CUDA process; the
# scorecards of one pytest session per grader against a pytest.main per submission, CUDA items included
# (tests/test_ref_cache.py, whose graders keep the default devices, CUDA among them).
# What it is not: a test (it asserts nothing itself; read its log), nor the full run (bench/cuda_run.sh).
#
# Usage: bash bench/cuda_recheck.sh   (wheels of missing pure-Python packages may lie in .whl/)
set -u -o pipefail
export PYTHONUNBUFFERED=1
step() { echo; echo "=== $1 ($(date +%T))"; }

step "machine"
nvidia-smi -L; id; command -v capsh unshare
step "install (into the image's own Python, which holds torch; offline)"
PY=$(ls /opt/torch/.venv/bin/python3 2>/dev/null || command -v python3)
export PATH=$(dirname "$PY"):$PATH
"$PY" -m pip install -q --no-index --no-deps --no-build-isolation -e . $(ls .whl/*.whl 2>/dev/null) 2>&1 | tail -3

step "cgroups: where this process is, what its cgroup and the root offer"
cat /proc/self/cgroup; grep cgroup /proc/self/mountinfo
own=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
for f in cgroup.controllers cgroup.subtree_control cgroup.type; do echo "$own/$f: $(cat "$own/$f" 2>&1)"; done
echo "processes in own cgroup: $(wc -l < "$own/cgroup.procs" 2>/dev/null)"
echo "root: $(cat /sys/fs/cgroup/cgroup.controllers 2>&1) | $(cat /sys/fs/cgroup/cgroup.subtree_control 2>&1)"
python - <<'PY'
from checker.worker import memory
print("hwcheck's cgroup parent:", memory.cgroup_parent())
PY

judge() {  # every example's scorecard in $1 against its expected.json entry (bench/judge_cards.py)
    python bench/judge_cards.py "$@"
}
for aid in vit charlm; do
    step "batch $aid under the namespaces (root), hidden seed 1234 as validate uses, --device all; judged as validate does"
    timeout 100 hwcheck grade "assignments/$aid/examples" -a "$aid" -o "/tmp/cards/ns/$aid" -j 12 --seed 1234 \
        --device all 2>&1 | tail -4
    judge "/tmp/cards/ns/$aid" "$aid"
done

step "batch vit in the fallback mode (capsh, else HWCHECK_NAMESPACES=0), --device all; judged"
if command -v capsh >/dev/null; then
    timeout 80 capsh --drop=cap_sys_admin -- -c \
        "hwcheck grade assignments/vit/examples -a vit -o /tmp/cards/fb/vit -j 12 --seed 1234 --device all" 2>&1 | tail -4
else
    HWCHECK_NAMESPACES=0 timeout 80 hwcheck grade assignments/vit/examples -a vit -o /tmp/cards/fb/vit -j 12 \
        --seed 1234 --device all 2>&1 | tail -4
fi
judge /tmp/cards/fb/vit vit

step "what a CUDA process holds, as the memory watch counts it (checker.worker.memwatch), before and after CUDA starts"
python - <<'PY'
import os
from checker.worker import memwatch
w = memwatch.Watch(4096)
print("after import of checker (MiB):", w._held(os.getpid()) >> 20)
import torch
print("after import torch:", w._held(os.getpid()) >> 20)
x = torch.randn(4096, 4096, device="cuda") @ torch.randn(4096, 4096, device="cuda")
torch.cuda.synchronize()
print("after CUDA's start and a matmul:", w._held(os.getpid()) >> 20, "| VmData", [l for l in open("/proc/self/status") if l.startswith("VmData")][0].split()[1:])
PY

step "suite: CUDA items, device portability, the GPU gate and hints, the walls with a GPU, one pytest session per grader"
timeout 240 python -m pytest -q -n 12 -p no:cacheprovider -rs tests/test_plugin.py tests/test_portability.py \
    tests/test_session.py tests/test_ref_cache.py tests/test_cuda_probe.py tests/test_lowp_gate.py tests/test_vit_hints.py tests/test_hostile_gpu_walls.py \
    tests/test_hostile_walls.py tests/test_hostile_memwatch.py tests/test_runner.py tests/test_gpumem.py 2>&1 | tail -25
step "done"
