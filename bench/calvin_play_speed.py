"""Frames per second of play-data generation (``spatial-arena demos --env calvin --scenes ... --frames N``).

Runs the generator for each ``--formats`` choice on the same scenes, frames and seed, into a temporary
folder, and prints frames per second per scene (both cameras and both depth maps rendered, the expert's
subtasks, the frame files, and for ``calvin,lerobot`` the LeRobot videos too). Writes the rows as JSON.

    nice python bench/calvin_play_speed.py --scenes A,B,C --frames 300 --json bench/results/calvin_play.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time


def run(scenes: str, frames: int, formats: str, seed: int) -> dict:
    from vla.calvin_play import PlayConfig, generate

    with tempfile.TemporaryDirectory() as tmp:
        began = time.perf_counter()
        summary = generate(PlayConfig(scenes=scenes, frames=frames, out=tmp, seed=seed, format=formats))
        wall = time.perf_counter() - began
    rows = {
        s: {k: r[k] for k in ("frames", "succeeded", "failed", "frames_per_second")}
        for s, r in summary["scenes"].items()
    }
    return {
        "formats": formats,
        "frames": summary["frames"],
        "wall_s": round(wall, 1),
        "frames_per_second_wall": round(summary["frames"] / wall, 2),
        "scenes": rows,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenes", default="A,B,C")
    p.add_argument("--frames", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--formats", default="calvin;calvin,lerobot", help="runs, separated by ';'")
    p.add_argument("--json", default="")
    args = p.parse_args()
    results = []
    for formats in args.formats.split(";"):
        row = run(args.scenes, args.frames, formats, args.seed)
        results.append(row)
        print(
            f"{formats:16s} {row['frames']} frames in {row['wall_s']} s: {row['frames_per_second_wall']} frames/s "
            + " ".join(f"{s}={r['frames_per_second']}" for s, r in row["scenes"].items()),
            flush=True,
        )
    if args.json:
        load = os.getloadavg()[0]
        record = {
            "title": "CALVIN play-data generation: frames per second",
            "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "machine": f"{os.cpu_count()} CPUs, 1-min load {load:.1f} at the end, Python {platform.python_version()}",
            "source": "bench/calvin_play_speed.py",
            "config": vars(args),
            "runs": results,
        }
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
