#!/bin/bash
# The device session's last short command: the tiny models' capture on CUDA against the CPU's (random init now on
# the CPU), then the dress rehearsal of Llama-3.2-1B's full build at 512 x 512 in bf16 for what time is left.
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD ABSPOS_CACHE=/tmp/cache PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
mkdir -p /tmp/cache /tmp/r && cp -r .gpu/cache/* /tmp/cache/
s=$(date +%s)
timeout -s INT 40 python3 -m pytest tests/test_gpu.py -m gpu -k "tiny" -q -p no:cacheprovider -p no:randomly -rs > /tmp/r/tiny.log 2>&1
echo "tiny exit $? after $(( $(date +%s) - s )) s: $(tail -n 1 /tmp/r/tiny.log)"
timeout -k 5 ${DRESS_HARD:-160} python3 benchmarks/bench_dress_rehearsal.py --paper llama-3.2-1b --time-limit ${DRESS:-140} \
  --out /tmp/r/dress-1b --device cuda --dtype bfloat16 > /tmp/r/dress-1b.log 2>&1
echo "dress exit $? after $(( $(date +%s) - s )) s"; tail -n 5 /tmp/r/dress-1b.log; cat /tmp/r/dress-1b/dress.md 2>/dev/null | head -40
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > /tmp/r/gpu.txt
tar czf "$OUT/gpu-check-2.tar.gz" --exclude='*.png' -C /tmp r
