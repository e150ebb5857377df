#!/usr/bin/env bash
# The whole test suite: harness mechanics (tests/) and every claim on the bundled models (claims/).
# Paper models run too when their weights are present, and skip with a reason otherwise.
# This full run is the CI command. Arguments go to pytest; the fast tier while editing the harness is
#   bash scripts/test.sh tests -m "not long"    # the mechanics without the long-running tests (under 2 min)
# and the long ones alone: bash scripts/test.sh tests -m long (README, Testing).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .   # lint first: a syntax or import error fails in seconds, not after the claims
.venv/bin/ruff format --check .   # formatting ([tool.ruff.format] in pyproject.toml)
.venv/bin/mypy           # types of the lower layers ([tool.mypy] in pyproject.toml lists them)
exec .venv/bin/python -m pytest "$@"
