#!/usr/bin/env bash
# GPU checks (a CUDA machine; CI has none): the gpu-marked tests, then SFT in bf16 and a few GRPO steps of
# benchmarks.posttrain on a tiny Qwen2.5-VL and a small generated corpus. Logs and metrics go to $OUT.
#   usage: bench/gpu_check.sh CORPUS_DIR [PYTHON]
set -uo pipefail
corpus=${1:?usage: bench/gpu_check.sh CORPUS_DIR [PYTHON]}
py=${2:-python3}
out=${OUT:-/tmp/gpu_check}
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/device.txt"
$py -c "import torch, transformers, numpy; print('torch', torch.__version__, 'transformers', transformers.__version__, 'numpy', numpy.__version__)" | tee -a "$out/device.txt"
$py -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu.py 2>&1 | tee "$out/gpu_tests.log"
tests_rc=${PIPESTATUS[0]}
model=$($py -c "from policies.tiny import cached_tiny_vlm; import os; print(cached_tiny_vlm('qwen2_5_vl', 0, os.environ.get('SPATIAL_ARENA_TINY_DIR', '.cache/tiny_models')))")
$py -m benchmarks.posttrain sft --model "$model" --data "$corpus" --output /tmp/gpu_sft --max-steps 40 \
    --batch-size 4 --lr 2e-3 --eval-steps 10 --bf16 --save-steps 40 2>&1 | tail -5 | tee "$out/sft.log"
cp /tmp/gpu_sft/metrics.jsonl "$out/sft_metrics.jsonl"
$py -m benchmarks.posttrain grpo --model /tmp/gpu_sft/final --data "$corpus" --output /tmp/gpu_grpo --kinds multihop,localisation --max-steps 4 \
    --batch-size 4 --num-generations 4 --max-completion-length 32 --bf16 --save-steps 4 2>&1 | tail -5 | tee "$out/grpo.log"
cp /tmp/gpu_grpo/metrics.jsonl "$out/grpo_metrics.jsonl"
exit "$tests_rc"
