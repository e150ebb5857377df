#!/usr/bin/env bash
# The GPU checks in one prepared command, sized to ten minutes on one H100-class GPU:
#   bash benchmarks/gpu_check.sh [--bundle DIR] [--out DIR] [--budget SECONDS]
# 1. with --bundle, installs the offline bundle (`abspos-claims bundle --torch node`: the GPU image's CUDA torch) into
#    ./gpu-node and runs from there; otherwise from this checkout's .venv (or $PYTHON);
# 2. provenance.json: GPU, driver, CUDA, torch, transformers;
# 3. the GPU tier, `pytest tests -m gpu` (tier.log, tier.xml);
# 4. the dress rehearsal of Llama-3.2-1B's full build at the nightly's settings (512 prompts x 512 tokens, bfloat16)
#    on the GPU, per claim time and peak GPU memory (dress-1b/dress.md), stopped at the budget's share with the tests
#    that finished kept; then as much of the 8B build as the time left allows (dress-8b/); --papers names others.
# With --synthetic "rope nope", the related paper's paper-size models (Task 1, the authors' architecture, seed 0) train
# on the same GPU from the start, beside the GPU tier (benchmarks/synthetic_gpu.py; synthetic/ and synthetic-*.log);
# the dress rehearsal waits for them up to three fifths of the budget, so its timings are its own where they finish;
# a model not finished a minute before the budget stops after an epoch and leaves its checkpoint in synthetic/ for
# the next machine to resume (docs/gpus.md).
set -uo pipefail
cd "$(dirname "$0")/.."
bundle="" out=reports/gpu-check budget=540 synthetic="" papers="llama-3.2-1b llama-3.1-8b"
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) bundle=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --synthetic) synthetic=$2; shift 2 ;;
    --papers) papers=$2; shift 2 ;;
    *) echo "gpu_check.sh: unknown option $1 (--bundle DIR, --out DIR, --budget SECONDS, --synthetic ENCODINGS," \
         "--papers NAMES)" >&2; exit 2 ;;
  esac
done
start=$(date +%s)
left() { echo $(( budget - ($(date +%s) - start) )); }
at() { echo "t=$(( $(date +%s) - start ))s"; }
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
cat "$out/provenance.json"; echo
has_cuda() { "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; }
training=()
if [ -n "$synthetic" ] && has_cuda; then
  for encoding in $synthetic; do
    "$PY" benchmarks/synthetic_gpu.py --encoding "$encoding" --task task1 --size paper --device cuda --keep-weights \
      --time-limit $(( budget - 60 )) --out "$out/synthetic" > "$out/synthetic-$encoding.log" 2>&1 &
    training+=($!)
    echo "[gpu-check] $(at): training the paper-size task1-$encoding model in the background (pid $!)"
  done
fi
echo "[gpu-check] $(at): the GPU tier ($(left) s left)"
timeout -s INT $(( $(left) * 2 / 5 )) "$PY" -m pytest tests -m gpu -q -p no:cacheprovider -p no:randomly -rs \
  --junitxml "$out/tier.xml" > "$out/tier.log" 2>&1
rc=$?
echo "[gpu-check] $(at): tier exit $rc ($(tail -n 1 "$out/tier.log"))"
if ! has_cuda; then
  echo "[gpu-check] no CUDA device visible: the GPU tier was skipped and no dress rehearsal runs" >&2
  exit 1
fi
running() { for p in "${training[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }
while running && [ $(( $(date +%s) - start )) -lt $(( budget * 3 / 5 )) ]; do sleep 5; done
running && echo "[gpu-check] $(at): the synthetic training still runs: the dress rehearsal shares the GPU with it"
last=${papers##* }
for paper in $papers; do
  share=$(( $(left) - 30 ))
  [ "$paper" != "$last" ] && share=$(( share * 3 / 4 ))
  if [ "$share" -lt 90 ]; then echo "[gpu-check] $paper: no time left ($(left) s)"; continue; fi
  echo "[gpu-check] dress rehearsal of $paper for at most $share s"
  timeout -k 10 $(( share + 45 )) "$PY" benchmarks/bench_dress_rehearsal.py --paper "$paper" --time-limit "$share" \
    --out "$out/dress-${paper##*-}" --device cuda --dtype bfloat16 > "$out/dress-${paper##*-}.log" 2>&1
  rc=$?
  echo "[gpu-check] $(at): $paper exit $rc"; head -n 1 "$out/dress-${paper##*-}/dress.md" 2>/dev/null
done
if running; then  # stopped at the budget: each keeps its last epoch's checkpoint (train() resumes from it)
  echo "[gpu-check] $(at): the synthetic training did not finish inside the budget; stopped"
  kill "${training[@]}" 2>/dev/null
fi
wait
for f in "$out"/synthetic-*.log; do [ -f "$f" ] && echo "[gpu-check] $f: $(grep -E 'epoch|accuracy' "$f" | tail -n 1)"; done
echo "[gpu-check] done in $(( $(date +%s) - start )) s: $out"
