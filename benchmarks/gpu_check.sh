#!/usr/bin/env bash
# The GPU checks in one prepared command, sized to ten minutes on one H100-class GPU:
#   bash benchmarks/gpu_check.sh [--bundle DIR] [--out DIR] [--budget SECONDS] [--no-tier] [--papers NAMES]
#                                [--synthetic ENCODINGS] [--dry-run] [-- DRESS-REHEARSAL ARGS]
# 1. with --bundle, installs the offline bundle (`abspos-claims bundle --torch node`: the GPU image's CUDA torch) into
#    ./gpu-node and runs from there; otherwise from this checkout's .venv (or $PYTHON);
# 2. provenance.json: GPU, driver, CUDA, torch, transformers;
# 3. the GPU tier, `pytest tests -m gpu` (tier.log, tier.xml), unless --no-tier (the nightly's check: the whole budget
#    goes to the dress rehearsals);
# 4. the dress rehearsal of Llama-3.2-1B's full build (built on first use) through the nightly's whole selection at the
#    nightly's settings (512 prompts x 512 tokens, bfloat16) on the GPU: per claim, seconds (forward and statistics),
#    layer-tokens, peak host and GPU memory (dress-1b/dress.md, rewritten as each test ends, so a stop at any point
#    leaves the tests that finished), stopped at its share of the budget; then as much of the 8B build as the time
#    left allows (dress-8b/); --papers names others.
# --dry-run checks the machinery on a CPU: Llama-3.2-1B's narrow 4-layer build, 12 prompts x 64 tokens, float32, no
# tier (a CUDA device is not needed). Arguments after -- go to bench_dress_rehearsal.py (e.g. -- -k "T5 or T6").
# SIGINT, SIGTERM or SIGHUP stops the step under way the way its time limit does (its table is kept) and ends the
# check, exit 128 + the signal's number.
# With --synthetic "rope nope", the related paper's paper-size models (Task 1, the authors' architecture, seed 0) train
# on the same GPU from the start, beside the GPU tier (benchmarks/synthetic_gpu.py; synthetic/ and synthetic-*.log);
# the dress rehearsal waits for them up to three fifths of the budget, so its timings are its own where they finish;
# a model not finished a minute before the budget stops after an epoch and leaves its checkpoint in synthetic/ for
# the next machine to resume (docs/gpus.md).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
bundle="" out=reports/gpu-check budget=540 synthetic="" papers="llama-3.2-1b llama-3.1-8b" tier=1 dry=0 extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) bundle=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --synthetic) synthetic=$2; shift 2 ;;
    --papers) papers=$2; shift 2 ;;
    --no-tier) tier=0; shift ;;
    --dry-run) dry=1; tier=0; shift ;;
    --) shift; extra=("$@"); break ;;
    *) echo "gpu_check.sh: unknown option $1 (--bundle DIR, --out DIR, --budget SECONDS, --no-tier, --dry-run," \
         "--synthetic ENCODINGS, --papers NAMES, -- DRESS-REHEARSAL ARGS)" >&2; exit 2 ;;
  esac
done
case "$budget" in ''|*[!0-9]*) echo "gpu_check.sh: --budget $budget: a whole number of seconds" >&2; exit 2 ;; esac
start=$(date +%s)
left() { echo $(( budget - ($(date +%s) - start) )); }
at() { echo "t=$(( $(date +%s) - start ))s"; }
out=$(mkdir -p "$out" && cd "$out" && pwd)
if [ -n "$bundle" ]; then
  bash "$bundle/install.sh" "$PWD/gpu-node" || exit 1
  cd gpu-node || exit 1
fi
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
child="" training=()
exec 3>&2  # the check's own stderr, for a stop's line while a step's output is redirected
stop() {  # the step under way stops as at its time limit (its table is kept), then the check ends. SIGTERM to it
  # whatever came (a background step may ignore SIGINT from its start; the claims run treats both alike), sent to the
  # step's own process under `timeout`: told by us, `timeout` would arm its kill-after and cut the table's writing
  echo "[gpu-check] $(at): SIG$1: stopping" >&3
  if [ -n "$child" ]; then
    kids=$(pgrep -P "$child")
    # shellcheck disable=SC2086 # one pid per word
    kill -TERM ${kids:-$child} 2>/dev/null
    wait "$child" 2>/dev/null
  fi
  [ "${#training[@]}" -gt 0 ] && kill "${training[@]}" 2>/dev/null
  wait 2>/dev/null
  exit "$2"
}
trap 'stop INT 130' INT
trap 'stop TERM 143' TERM
trap 'stop HUP 129' HUP
run() {  # a step in the background, so a stop reaches it at once; its exit code
  "$@" &
  child=$!
  wait "$child"
  local rc=$?
  child=""
  return $rc
}
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
if [ -n "$synthetic" ] && has_cuda; then
  for encoding in $synthetic; do
    "$PY" benchmarks/synthetic_gpu.py --encoding "$encoding" --task task1 --size paper --device cuda --keep-weights \
      --time-limit $(( budget - 60 )) --out "$out/synthetic" > "$out/synthetic-$encoding.log" 2>&1 &
    training+=($!)
    echo "[gpu-check] $(at): training the paper-size task1-$encoding model in the background (pid $!)"
  done
fi
if [ "$tier" = 1 ]; then
  echo "[gpu-check] $(at): the GPU tier ($(left) s left)"
  run timeout -s TERM $(( $(left) * 2 / 5 )) "$PY" -m pytest tests -m gpu -q -p no:cacheprovider -p no:randomly -rs \
    --junitxml "$out/tier.xml" > "$out/tier.log" 2>&1
  rc=$?
  echo "[gpu-check] $(at): tier exit $rc ($(tail -n 1 "$out/tier.log"))"
fi
if [ "$dry" = 1 ]; then
  dress=(--size rehearsal --seq-len 64 --n-prompts 12 --threads 1)
  papers=${papers%% *}
  echo "[gpu-check] dry run on the CPU: ${papers}'s narrow build, 12 prompts x 64 tokens, float32"
elif ! has_cuda; then
  echo "[gpu-check] no CUDA device visible: the GPU tier was skipped and no dress rehearsal runs" >&2
  exit 1
else
  dress=(--device cuda --dtype bfloat16)
fi
running() { for p in "${training[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }
while running && [ $(( $(date +%s) - start )) -lt $(( budget * 3 / 5 )) ]; do sleep 5; done
running && echo "[gpu-check] $(at): the synthetic training still runs: the dress rehearsal shares the GPU with it"
last=${papers##* }
for paper in $papers; do
  share=$(( $(left) - 30 ))
  [ "$paper" != "$last" ] && share=$(( share * 3 / 4 ))
  if [ "$share" -lt 90 ]; then echo "[gpu-check] $paper: no time left ($(left) s)"; continue; fi
  echo "[gpu-check] $(at): dress rehearsal of $paper for at most $share s (dress-${paper##*-}/dress.md)"
  run timeout -k 10 $(( share + 45 )) "$PY" benchmarks/bench_dress_rehearsal.py --paper "$paper" --time-limit "$share" \
    --out "$out/dress-${paper##*-}" "${dress[@]}" "${extra[@]}" > "$out/dress-${paper##*-}.log" 2>&1
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
