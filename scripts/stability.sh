#!/usr/bin/env bash
# Stability of every verdict on the bundled models under three seeds (prompts, pairs, sign flips and
# permutations, bootstrap resamples all redrawn): three full runs (~15-20 min each on 2 cores), then
# fixtures/stability.json and the list METHODS.md keeps ("Unstable verdicts"). Extra seeds: SEEDS="0 1 2 3".
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
out=${STABILITY_DIR:-reports/stability}
runs=()
for seed in ${SEEDS:-0 1 2}; do
  # a failing claim is a verdict here, not an error of this script; baselines of the other seeds stay in $out
  .venv/bin/python -m pytest claims --models bundled --seed "$seed" --report-dir "$out/seed-$seed" \
    --baseline-dir "$out/baselines" -q -p no:randomly "$@" || true
  runs+=("$out/seed-$seed/latest")
done
.venv/bin/python -m harness.stability record "${runs[@]}"
