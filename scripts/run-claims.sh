#!/usr/bin/env bash
# The main job: every claim on the bundled models; writes reports/<run>/ and reports/latest.
# Extra arguments go to pytest, e.g. `bash scripts/run-claims.sh -m llama` or `--models all`.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
.venv/bin/python -m pytest claims --models bundled "$@"
rc=$?
[ -e reports/latest/report.html ] && echo "report: reports/latest/report.html (and report.md)"
exit $rc
