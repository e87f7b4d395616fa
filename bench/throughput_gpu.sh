#!/usr/bin/env bash
# The 1000 CALVIN chains with a 3B-class VLM4VLA backbone (Qwen2.5-VL-3B at its published size, random
# weights: nothing downloaded) on one GPU: W env shards feed one batched policy server of batch B. First
# `bench/throughput.py --autotune --no-run` measures env demand (1..16 shards) and model supply (batch
# 1..16, with peak GPU memory) and picks W and B (printed with why, in $OUT/autotune.json); then the run.
# Reports wall time, GPU utilisation (nvidia-smi, sampled each second), decisions/s and how full the
# server's batches were (the run's summary.json, serving). Logs and numbers go to $OUT.
#   usage: bench/throughput_gpu.sh [PYTHON] [WORKERS|auto] [CHAINS] [MAX_BATCH|auto]
# Not a success-rate run (random weights); it measures how fast the protocol runs at real model size.
set -uo pipefail
py=${1:-python3}
workers=${2:-auto}
chains=${3:-1000}
batch=${4:-auto}
backbone=random:Qwen/Qwen2.5-VL-3B-Instruct
out=${OUT:-/tmp/throughput_gpu}
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/device.txt"
nproc | sed 's/^/cpus /' | tee -a "$out/device.txt"
# demand and supply first (a few minutes), so a slow model shows before the long run
$py bench/throughput.py --backbone "$backbone" --device cuda --dtype bfloat16 --shards 1,4,8,16 \
    --batches 1,4,8,16 --chains 16 --ep-len 60 --seconds 10 --autotune --no-run --out "$out/autotune" \
    2>&1 | tee "$out/autotune.log"
pick() { $py -c "import json; print(json.load(open('$out/autotune.json'))['autotune']['$1'])" 2>/dev/null; }
[ "$workers" = auto ] && workers=$(pick shards)
[ "$batch" = auto ] && batch=$(pick max_batch)
workers=${workers:-16}
batch=${batch:-$workers}
echo "run: $workers shards, --max-batch $batch" | tee -a "$out/device.txt"
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader,nounits -l 1 > "$out/gpu_util.csv" &
smi=$!
start=$(date +%s.%N)
$py -m benchmarks.calvin --policy vla --backbone "$backbone" --device cuda \
    --dtype bfloat16 --num-sequences "$chains" --workers "$workers" --serve batched --max-batch "$batch" \
    --max-wait-ms 5 --no-progress --output "$out/runs" --run-name qwen2.5-vl-3b-random --allow-errors \
    2>&1 | tail -30 | tee "$out/calvin.log"
rc=${PIPESTATUS[0]}
end=$(date +%s.%N)
kill "$smi"
$py - "$out" "$start" "$end" <<'PY' | tee "$out/throughput.json"
import csv, json, sys
from pathlib import Path
out, start, end = Path(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
run = out / "runs/calvin/qwen2.5-vl-3b-random"
records = [json.loads(l) for l in (run / "records.jsonl").open()]
summary = json.loads((run / "summary.json").read_text()) if (run / "summary.json").is_file() else {}
ok = [r for r in records if r["status"] == "ok"]
calls = sum(r["result"]["policy_stats"].get("model_calls", 0) for r in ok)
util = [float(row[1]) for row in csv.reader((out / "gpu_util.csv").open()) if len(row) > 2]
wall = end - start
print(json.dumps({"chains": len(records), "errored": len(records) - len(ok), "wall_s": round(wall, 1),
                  "steps": sum(r["result"]["steps"] for r in ok), "decisions": calls,
                  "decisions_per_s": round(calls / wall, 1), "chains_per_hour": round(3600 * len(records) / wall, 1),
                  "gpu_util_mean_pct": round(sum(util) / max(1, len(util)), 1),
                  "gpu_util_samples": len(util), "serving": summary.get("serving")}, indent=2))
PY
exit "$rc"
