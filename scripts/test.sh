#!/usr/bin/env bash
# The test suite: harness mechanics (tests/) and the claims (claims/).
#
#   bash scripts/test.sh              # CI's run on every push: tests/ on two xdist workers (one file per worker at a
#                                     # time), then every claim on SmolLM2-135M, the paper models present and the related paper's synthetic smoke set
#                                     # but those marked costly (T11, DP1, DP2)
#   bash scripts/test.sh --run-slow   # the full run (weekly in CI): the slow harness tests too, then every claim on
#                                     # every bundled model and the paper models present
#   bash scripts/test.sh -x --durations=50    # options go to both runs (--models replaces the claims' models)
#   bash scripts/test.sh tests -m "not long"  # a path first: one pytest run of exactly those arguments (here the
#                                             # mechanics without the long-running tests, about 2 min)
#
# Gemma-3-270M and Qwen2.5-Coder-0.5B take 3/4 of the claims' time on 2 cores; they run in the full run and in the
# main job (scripts/run-claims.sh), not on every push (docs/development.md, Tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .   # lint first: a syntax or import error fails in seconds, not after the claims
.venv/bin/ruff format --check .   # formatting ([tool.ruff.format] in pyproject.toml)
.venv/bin/mypy           # types of the lower layers ([tool.mypy] in pyproject.toml lists them)
PYTEST=(.venv/bin/python -m pytest)
first=${1:-}
if [[ -n "$first" && "$first" != -* && -e "${first%%::*}" ]]; then exec "${PYTEST[@]}" "$@"; fi
claims_models=(--models smollm2-135m,paper,synthetic-smoke)
# per push, the claim tests marked costly (T11's 13 edited passes; DP1's one per head of layers 0-1) are deselected:
# they run in the main job and the full run; a -m given here replaces this one
claims_select=(-m "not costly")
for arg in "$@"; do
  case "$arg" in
    --models*) claims_models=(); break ;;   # the models named win, before or after --run-slow
    --run-slow) claims_models=(--models bundled,paper,synthetic-smoke); claims_select=() ;;
  esac
done
for arg in "$@"; do [ "$arg" = --run-slow ] && claims_select=(); done
# tests/ files are independent (each its own tmp folders and caches); --dist loadfile keeps a module's fixtures (a
# shared claims run) on one worker, so each is built once
harness_rc=0
"${PYTEST[@]}" tests -n 2 --dist loadfile "$@" || harness_rc=$?
if [ "$harness_rc" -eq 2 ]; then exit 2; fi   # interrupted: the claims are not started
# the claims in one process: each model's captures are made once and shared by its tests
claims_rc=0
"${PYTEST[@]}" claims ${claims_models[@]+"${claims_models[@]}"} ${claims_select[@]+"${claims_select[@]}"} "$@" || claims_rc=$?
# 5 (nothing collected) in one of the two runs is a selection (-k, -m) that names tests of the other only
if [ "$harness_rc" -eq 5 ] && [ "$claims_rc" -ne 5 ]; then harness_rc=0; fi
if [ "$claims_rc" -eq 5 ] && [ "$harness_rc" -ne 5 ]; then claims_rc=0; fi
if [ "$harness_rc" -ne 0 ]; then exit "$harness_rc"; fi
exit "$claims_rc"
