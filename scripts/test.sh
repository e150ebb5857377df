#!/usr/bin/env bash
# The whole test suite: harness mechanics (tests/) and every claim on the bundled models (claims/).
# Paper models run too when their weights are present, and skip with a reason otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .   # lint first: a syntax or import error fails in seconds, not after the claims
exec .venv/bin/python -m pytest "$@"
