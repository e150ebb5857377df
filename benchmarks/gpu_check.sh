#!/usr/bin/env bash
# The GPU checks in one prepared command, sized to ten minutes on one H100-class GPU:
#   bash benchmarks/gpu_check.sh [--bundle DIR] [--out DIR] [--budget SECONDS]
# 1. with --bundle, installs the offline bundle (`abspos-claims bundle --torch node`: the GPU image's CUDA torch) into
#    ./gpu-node and runs from there; otherwise from this checkout's .venv (or $PYTHON);
# 2. provenance.json: GPU, driver, CUDA, torch, transformers;
# 3. the GPU tier, `pytest tests -m gpu` (tier.log, tier.xml);
# 4. the dress rehearsal of Llama-3.2-1B's full build at the nightly's settings (512 prompts x 512 tokens, bfloat16)
#    on the GPU, per claim time and peak GPU memory (dress-1b/dress.md), stopped at the budget's share with the tests
#    that finished kept; then as much of the 8B build as the time left allows (dress-8b/).
set -uo pipefail
cd "$(dirname "$0")/.."
bundle="" out=reports/gpu-check budget=540
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) bundle=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    *) echo "gpu_check.sh: unknown option $1 (--bundle DIR, --out DIR, --budget SECONDS)" >&2; exit 2 ;;
  esac
done
start=$(date +%s)
left() { echo $(( budget - ($(date +%s) - start) )); }
out=$(mkdir -p "$out" && cd "$out" && pwd)
if [ -n "$bundle" ]; then
  bash "$bundle/install.sh" "$PWD/gpu-node" || exit 1
  cd gpu-node
fi
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
"$PY" - "$out/provenance.json" <<'PYEOF'
import json, subprocess, sys
import torch, transformers
try:
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip().splitlines()
except OSError:
    smi = []
json.dump({"gpus": smi, "cuda": torch.version.cuda, "torch": torch.__version__,
           "transformers": transformers.__version__, "cuda_available": torch.cuda.is_available()},
          open(sys.argv[1], "w"), indent=1)
PYEOF
cat "$out/provenance.json"
echo "[gpu-check] the GPU tier ($(left) s left)"
timeout -s INT $(( $(left) * 2 / 5 )) "$PY" -m pytest tests -m gpu -q -p no:cacheprovider -p no:randomly -rs \
  --junitxml "$out/tier.xml" > "$out/tier.log" 2>&1
echo "[gpu-check] tier exit $? ($(tail -n 1 "$out/tier.log"))"
if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  echo "[gpu-check] no CUDA device visible: the GPU tier was skipped and no dress rehearsal runs" >&2
  exit 1
fi
for paper in llama-3.2-1b llama-3.1-8b; do
  share=$(( $(left) - 30 ))
  [ "$paper" = llama-3.2-1b ] && share=$(( share * 3 / 4 ))
  if [ "$share" -lt 90 ]; then echo "[gpu-check] $paper: no time left ($(left) s)"; continue; fi
  echo "[gpu-check] dress rehearsal of $paper for at most $share s"
  timeout -k 10 $(( share + 45 )) "$PY" benchmarks/bench_dress_rehearsal.py --paper "$paper" --time-limit "$share" \
    --out "$out/dress-${paper##*-}" --device cuda --dtype bfloat16 > "$out/dress-${paper##*-}.log" 2>&1
  echo "[gpu-check] $paper exit $?"; head -n 1 "$out/dress-${paper##*-}/dress.md" 2>/dev/null
done
echo "[gpu-check] done in $(( $(date +%s) - start )) s: $out"
