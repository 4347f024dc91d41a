#!/usr/bin/env bash
# A short run on a machine with a real NVIDIA GPU, of the fallback walls (no namespaces: Gradescope's mode) after
# a change to them: what a worker may read and write of /proc without a PID namespace (checker.worker.landlock.own_proc).
#
# What it is for: CUDA's cuInit reads and writes under /proc (its threads' names); the fallback now allows only
# the worker's own folder there. Batches of the ViT and char-LM examples with HWCHECK_NAMESPACES=0 (these VMs have
# no capsh), --device all, each scorecard judged against expected.json (bench/judge_cards.py); the GPU-wall and
# /proc tests in both modes. What it is not: a test (read its log), nor the full re-check (bench/cuda_recheck.sh).
#
# Usage: bash bench/cuda_fallback.sh   (wheels of missing pure-Python packages may lie in .whl/)
set -u -o pipefail
export PYTHONUNBUFFERED=1
step() { echo; echo "=== $1 ($(date +%T))"; }

step "machine"
nvidia-smi -L; id
PY=$(ls /opt/torch/.venv/bin/python3 2>/dev/null || command -v python3)
export PATH=$(dirname "$PY"):$PATH
"$PY" -m pip install -q --no-index --no-deps --no-build-isolation -e . $(ls .whl/*.whl 2>/dev/null) 2>&1 | tail -3

for aid in vit charlm; do
    step "batch $aid, fallback walls (HWCHECK_NAMESPACES=0), hidden seed 1234, --device all; judged"
    HWCHECK_NAMESPACES=0 timeout 120 hwcheck grade "assignments/$aid/examples" -a "$aid" -o "/tmp/cards/fb/$aid" \
        -j 12 --seed 1234 --device all 2>&1 | tail -2
    python bench/judge_cards.py "/tmp/cards/fb/$aid" "$aid" | tail -8
    python - "$aid" <<'PY'
import glob, json, sys
walls = {w for p in glob.glob(f"/tmp/cards/fb/{sys.argv[1]}/*.json") for w in json.load(open(p)).get("grader", {}).get("isolation", []) or []}
print("  walls seen:", sorted(w for w in walls if w.startswith(("landlock", "namespaces", "seccomp"))))
PY
done

for mode in namespaces fallback; do
    step "GPU walls and /proc tests, $mode"
    env $([ $mode = fallback ] && echo HWCHECK_NAMESPACES=0) timeout 150 python -m pytest -q -n 8 -p no:cacheprovider \
        -rs tests/test_hostile_gpu_walls.py tests/test_hostile_walls.py::test_a_worker_reads_no_other_process_command_line \
        tests/test_hostile_walls.py::test_own_proc_stays_readable_after_the_kernel_drops_its_dentries 2>&1 | tail -8
done
step "done"
