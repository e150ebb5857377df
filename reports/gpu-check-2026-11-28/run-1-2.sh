#!/bin/bash
# The device session's one command: wheels the GPU image lacks, the tokenizer sources, then benchmarks/gpu_check.sh.
set -o pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD ABSPOS_CACHE=/tmp/cache PYTHON=python3 PYTHONUNBUFFERED=1
mkdir -p /tmp/cache && cp -r .gpu/cache/* /tmp/cache/
nproc; free -g | head -2
python3 -c "import transformers, torch, regex, syrupy, hypothesis, pytest, sklearn; print('versions', transformers.__version__, torch.__version__, pytest.__version__, hypothesis.__version__)" || exit 1
bash benchmarks/gpu_check.sh --out /tmp/gc --budget "${BUDGET:-520}" --synthetic "${SYNTHETIC:-}" --papers llama-3.2-1b 2>&1 | tee /tmp/gc-console.log
mv /tmp/gc/synthetic/*.pt "$OUT"/ 2>/dev/null
cp /tmp/gc-console.log /tmp/gc/
tar czf "$OUT/gpu-check.tar.gz" --exclude='*.png' --exclude='*.pt' -C /tmp gc
ls -la "$OUT"
