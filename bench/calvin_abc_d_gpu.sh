#!/usr/bin/env bash
# CALVIN ABC->D at the published scale on a CUDA machine: play data in scenes A, B and C, a VLM4VLA-size
# backbone trained on it with vla.train (the published recipe: 2 epochs, batch 128, lr 2e-5, bf16), the
# 1000 evaluation chains in scene D with benchmarks.calvin, then the same checkpoint in every scene side by
# side (bench/calvin_scenes.py). Logs, summaries and the results files go to $OUT.
#   usage: bench/calvin_abc_d_gpu.sh BACKBONE [PYTHON]
#     BACKBONE: a VLM directory (e.g. a local Qwen3-VL-4B-Instruct) or a tiny-* test model
#   environment: OUT (default /tmp/calvin_abc_d_gpu), FRAMES (play frames per scene, default 50000),
#     GPUS (training processes, default: every visible GPU), WORKERS (evaluation processes, default 8),
#     CHAINS (default 1000), SCENE_CHAINS (chains per scene in the side-by-side run, default 100; 0: skip),
#     DATA (existing play data to train on instead of generating it: a folder with training/),
#     TINY=1 (a dry run on a CPU: tiny backbone, a few frames, 2 optimizer steps, 2 short chains).
# Play generation runs on the CPU at 15-20 frames/s per process (bench/results/calvin_play.md), so 3 x 50,000
# frames take about 2-3 hours: generate them once (or on a CPU machine, then pass DATA) and keep the GPU
# time for training and the evaluation.
set -euo pipefail
backbone=${1:?usage: bench/calvin_abc_d_gpu.sh BACKBONE [PYTHON]}
py=${2:-python3}
out=${OUT:-/tmp/calvin_abc_d_gpu}
frames=${FRAMES:-50000}
workers=${WORKERS:-8}
chains=${CHAINS:-1000}
scene_chains=${SCENE_CHAINS:-100}
train=(--epochs 2 --batch-size 128 --lr 2e-5 --precision auto --num-workers 8 --save-every 2000)
device=cuda
eval=()
if [[ "${TINY:-0}" == 1 ]]; then
    frames=150 workers=1 chains=2 scene_chains=2 device=cpu
    train=(--max-steps 2 --batch-size 2 --precision fp32 --num-workers 0)
    eval=(--ep-len 8)
fi
mkdir -p "$out"
if [[ "$device" == cuda ]]; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/device.txt"
fi
gpus=${GPUS:-$($py -c "import torch; print(max(1, torch.cuda.device_count()))")}
$py -c "import torch, transformers, numpy; print('torch', torch.__version__, 'transformers', transformers.__version__, 'numpy', numpy.__version__)" | tee -a "$out/device.txt"

# 1. play data (CALVIN's layout), scenes A, B and C: one continuous episode per scene, seed 0
data=${DATA:-$out/data}
if [[ ! -f "$data/training/ep_start_end_ids.npy" ]]; then
    $py -m vla.demos --env calvin --scenes A,B,C --frames "$frames" --seed 0 --format calvin --out "$data" \
        2>&1 | tee "$out/play.log"
fi

# 2. training: the published recipe on every GPU (accelerate; one plain process on a CPU)
launch=("$py")
if [[ "$device" == cuda ]]; then
    launch=("$py" -m accelerate.commands.launch --num_processes "$gpus")
    if [[ "$gpus" -gt 1 ]]; then launch+=(--multi_gpu); fi
fi
"${launch[@]}" -m vla.train --backbone "$backbone" --data "$data/training" --output "$out/run" \
    "${train[@]}" 2>&1 | tee "$out/train.log"
cp "$out/run/train_log.jsonl" "$out/train_log.jsonl"
checkpoint=$(readlink -f "$out/run/checkpoints/last")

# 3. the protocol: the 1000 chains in scene D
$py -m benchmarks.calvin --scene D --policy vla --checkpoint "$checkpoint" --device "$device" \
    --num-sequences "$chains" --workers "$workers" --output "$out/eval" --run-name abc_d --resume --no-progress \
    "${eval[@]}" 2>&1 | tail -40 | tee "$out/eval_d.log"
cp "$out/eval/calvin/abc_d/summary.json" "$out/summary_d.json"

# 4. scene generalisation: the same checkpoint in A, B, C and D on the first SCENE_CHAINS chains
if [[ "$scene_chains" -gt 0 ]]; then
    $py bench/calvin_scenes.py --scenes A,B,C,D --num-sequences "$scene_chains" --output "$out/eval" \
        --json "$out/calvin_abc_d_scenes.json" -- --policy vla --checkpoint "$checkpoint" --device "$device" \
        --workers "$workers" "${eval[@]}" 2>&1 | tail -40 | tee "$out/scenes.log"
fi
