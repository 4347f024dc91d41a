#!/usr/bin/env bash
# One run of hwcheck on a machine with a real NVIDIA GPU: what the README's "On a real GPU" reports came from it.
#
# What it is for: the checks that need CUDA and cannot run in CI (CI has no GPU): the suite's CUDA items,
# the hostile tests of the walls with the GPU's devices present, and a graded batch of every example
# submission with `--device all`, under the namespaces (as root) and again in the fallback mode
# (CAP_SYS_ADMIN dropped with capsh, Gradescope's), each step under its own time limit.
# What it is not: a test (it asserts nothing itself; read its log) nor an installer for a user's machine.
#
# Usage: OUT=folder bash bench/cuda_run.sh   (wheels of missing pure-Python packages may lie in .whl/)
set -u -o pipefail
OUT=${OUT:-/tmp/cuda_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
step() { echo; echo "=== $1 ($(date +%T))"; }

step "machine"
nvidia-smi -L; uname -r; python3 --version; command -v capsh unshare
step "install (into the image's own Python, which holds torch; offline)"
# the image's python3 holding torch (a venv of its own); hwcheck is installed into it, editable
PY=$(ls /opt/torch/.venv/bin/python3 2>/dev/null || command -v python3)
export PATH=$(dirname "$PY"):$PATH
"$PY" -m pip install -q --no-index --no-deps --no-build-isolation -e . $(ls .whl/*.whl 2>/dev/null) 2>&1 | tail -3
python - <<'EOF'
import torch, numpy
print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
EOF

step "the walls one at a time: does CUDA start (bench/cuda_walls.py)"
timeout 60 python bench/cuda_walls.py none full fallback 2>&1 | grep -E "^---|RESULT|cuInit|^\['"

step "check a correct vit file, every device"
timeout 90 hwcheck check --device all assignments/vit/examples/correct.py

for aid in vit charlm; do
    step "batch $aid under the namespaces (root): every example, --device all, hidden seed 7"
    timeout 100 hwcheck grade "assignments/$aid/examples" -a "$aid" -o "/tmp/cards/ns/$aid" -j 8 --seed 7 \
        --device all 2>&1 | tail -15
done
# the fallback walls (no namespaces): with capsh as Gradescope has them, else HWCHECK_NAMESPACES=0
for aid in vit charlm; do
    step "batch $aid in the fallback mode"
    if command -v capsh >/dev/null; then
        timeout 100 capsh --drop=cap_sys_admin -- -c \
            "hwcheck grade assignments/$aid/examples -a $aid -o /tmp/cards/fb/$aid -j 8 --seed 7 --device all" 2>&1 | tail -8
    else
        HWCHECK_NAMESPACES=0 timeout 100 hwcheck grade "assignments/$aid/examples" -a "$aid" -o "/tmp/cards/fb/$aid" \
            -j 8 --seed 7 --device all 2>&1 | tail -8
    fi
done
step "CUDA items in the batches' scorecards"
python - <<'EOF'
import collections, glob, json, os
shown = set()
for mode in ("ns", "fb"):
    for path in sorted(glob.glob(f"/tmp/cards/{mode}/*/*.json")):
        try:
            card = json.load(open(path))
        except ValueError:
            continue
        if "questions" not in card:
            continue
        cuda = [t for q in card["questions"] for t in q["tests"] if t.get("device") == "cuda"]
        c = collections.Counter(t["outcome"] for t in cuda)
        msgs = sorted({(t.get("message") or "")[:110] for t in cuda if t["outcome"] != "passed"})
        print(mode, os.path.relpath(path, f"/tmp/cards/{mode}"), f"{card['score']}/{card['max_score']}", dict(c),
              *msgs[:2], sep=" ")
        if mode not in shown:
            shown.add(mode)
            print("   walls:", ",".join(card.get("grader", {}).get("isolation", [])))
EOF

tar -C /tmp -czf "$OUT/cards.tgz" cards 2>/dev/null
step "suite: CUDA items and device portability"
timeout 150 python -m pytest -q -n 8 -p no:cacheprovider -rs tests/test_plugin.py tests/test_portability.py \
    tests/test_cuda_probe.py 2>&1 | tail -25

step "hostile tests of the walls with the GPU's devices present"
timeout 150 python -m pytest -q -n 12 -p no:cacheprovider -rs tests/test_hostile_gpu_walls.py \
    tests/test_hostile_walls.py tests/test_hostile_identity.py tests/test_hostile_fallback.py 2>&1 | tail -25

step "done"
