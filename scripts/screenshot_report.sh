#!/usr/bin/env bash
# Render a report.html in headless Chromium and save a PNG of the WHOLE page, to check that its figures display.
# Usage: [WIDTH=1400] [MAX_HEIGHT=30000] scripts/screenshot_report.sh REPORT_HTML OUT_PNG
# Needs Chromium (Debian: apt-get install -y chromium) and python3. Prints the PNG's path and its size in pixels.
#
# Two passes: the page's height is measured first (a copy of the page, with a <base> pointing at the original's
# folder and a script that writes document.documentElement.scrollHeight into the DOM once everything has loaded,
# is dumped with --dump-dom), then the original page is captured in a window that tall. Pages taller than
# MAX_HEIGHT are cut there, and the script says so on stderr.
set -euo pipefail
if [ $# -ne 2 ]; then echo "usage: $0 REPORT_HTML OUT_PNG" >&2; exit 2; fi
if [ ! -f "$1" ]; then echo "$0: no such file: $1" >&2; exit 2; fi
html=$(realpath "$1")
out=$(realpath -m "$2")
width=${WIDTH:-1400}
max_height=${MAX_HEIGHT:-30000}
for v in "$width" "$max_height"; do
  case $v in ''|*[!0-9]*) echo "$0: WIDTH and MAX_HEIGHT must be whole numbers of pixels" >&2; exit 2 ;; esac
done
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then echo "no chromium found (apt-get install -y chromium)" >&2; exit 3; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$out")"

# The flags of every run: a fresh profile, nothing fetched besides the page.
chrome() {
  rm -rf "$tmp/profile" && mkdir "$tmp/profile"
  "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$tmp/profile" --hide-scrollbars "$@" 2>"$tmp/stderr"
}

# Pass 1: the page's height at this width. The window is short on purpose: scrollHeight is at least the viewport's
# height, and with --dump-dom the viewport is the window less about 140 px of (invisible) browser frame.
# It prints the page's file:// URL, percent-encoded (a '#' or '?' in a folder name stays part of the path).
url=$(python3 - "$html" "$tmp/measure.html" <<'EOF'
import pathlib, re, sys
src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
page = src.read_text(encoding="utf-8", errors="replace")
base = '<base href="%s/">' % src.parent.as_uri().rstrip("/")  # as_uri() percent-encodes quotes and spaces
probe = ("<script>addEventListener('load', () => document.documentElement.setAttribute("
         "'data-abspos-height', String(document.documentElement.scrollHeight)));</script>")
head = re.search(r"<head[^>]*>", page, re.I)
page = page[:head.end()] + base + page[head.end():] if head else base + page
dst.write_text(page + probe, encoding="utf-8")
print(src.as_uri())
EOF
)
dom=$(chrome --window-size="${width},200" --virtual-time-budget=5000 --dump-dom "file://$tmp/measure.html" || true)
height=$(printf '%s' "$dom" | grep -o 'data-abspos-height="[0-9]*"' | head -n1 | tr -dc '0-9' || true)
if [ -z "$height" ]; then
  echo "could not measure the page's height (chromium said: $(tail -n3 "$tmp/stderr" | tr '\n' ' '))" >&2
  exit 1
fi
if [ "$height" -gt "$max_height" ]; then
  echo "the page is ${height} px tall; capturing only its first ${max_height} px (raise MAX_HEIGHT for more)" >&2
  height=$max_height
fi

# Pass 2: the original page in a window as tall as the page.
rm -f "$out"
chrome --window-size="${width},${height}" --virtual-time-budget=5000 --screenshot="$out" "$url" >/dev/null || true
if [ ! -s "$out" ]; then
  echo "chromium wrote no screenshot (it said: $(tail -n3 "$tmp/stderr" | tr '\n' ' '))" >&2
  exit 1
fi
# A PNG's width and height are the big-endian 32-bit integers at bytes 16-23 (the IHDR chunk).
read -r w0 w1 w2 w3 h0 h1 h2 h3 < <(od -An -tu1 -j16 -N8 "$out")
echo "$out $(( (w0 << 24) | (w1 << 16) | (w2 << 8) | w3 ))x$(( (h0 << 24) | (h1 << 16) | (h2 << 8) | h3 ))"
