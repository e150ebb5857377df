#!/usr/bin/env bash
# Render a report.html in headless Chromium and save a full-page PNG, to check that its figures display.
# Usage: [WINDOW_SIZE=1400,4000] scripts/screenshot_report.sh REPORT_HTML OUT_PNG   (needs Debian's chromium: apt-get install -y chromium)
set -euo pipefail
if [ $# -ne 2 ]; then echo "usage: $0 REPORT_HTML OUT_PNG" >&2; exit 2; fi
html=$(realpath "$1")
out=$(realpath -m "$2")
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then echo "no chromium found (apt-get install -y chromium)" >&2; exit 3; fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
mkdir -p "$(dirname "$out")"
"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$profile" --hide-scrollbars \
  --screenshot="$out" --window-size="${WINDOW_SIZE:-1400,4000}" "file://$html" >/dev/null 2>&1 || true
if [ ! -s "$out" ]; then echo "chromium wrote no screenshot" >&2; exit 1; fi
echo "$out"
