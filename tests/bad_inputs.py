"""The bad-input table: every command, each with inputs a user gets wrong, and a word the one-line error
must contain (the flag or the value). ``tests/test_cli_errors.py`` runs each row in-process through the
shared handler; ``bench/bad_inputs.py`` runs each as ``python -m MODULE ARGS`` and counts tracebacks.

Placeholders in ``argv`` and the named word, filled by :func:`fill`: ``{empty_dir}`` (an empty folder),
``{model_dir}`` (a folder with a ``config.json``, as a checkpoint has), ``{file}`` (a small text file),
``{calvin_dir}`` (a folder that looks like a CALVIN split: an ``ep_start_end_ids.npy`` with one episode,
but no language annotations), ``{calvin_gap}`` (a CALVIN split with one annotated episode of 13 frames whose
frame 5 is missing), ``{max_pooling}`` (a sentence-transformers folder whose Pooling takes the max, no
weights) and ``{dead}`` (``http://127.0.0.1:PORT/v1`` with nothing listening on PORT).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import numpy as np

#: command -> the ``python -m`` module it is.
MODULES = {
    "calvin": "benchmarks.calvin",
    "libero": "benchmarks.libero",
    "embodied": "benchmarks.embodied",
    "static": "benchmarks.static",
    "goal": "benchmarks.goal_scoring",
    "serve": "policies.serve",
    "train": "vla.train",
    "demos": "vla.demos",
    "embed": "vla.data.calvin_embed",
    "arena": "benchmarks.command",
}

MLLM = ["--policy", "mllm", "--model", "answer-key"]
AGENT = ["--policy", "agent", "--model", "answer-key"]
STATIC = ["--bench", "spatialscore", "--data", "{file}"]

BAD_INPUTS: list[tuple[str, list[str], str]] = [
    # (command, argv, a word the message must contain)
    # --- CALVIN: counts, flags, JSON
    ("calvin", ["--num-sequences", "0"], "--num-sequences"),
    ("calvin", ["--ep-len", "0"], "--ep-len"),
    ("calvin", ["--ep-len", "-5"], "--ep-len"),
    ("calvin", ["--serve", "batched", "--workers", "2", "--max-batch", "4"], "--max-batch"),
    ("calvin", ["--serve", "batched", "--policy", "random"], "--serve"),
    ("calvin", ["--serve", "batched", "--ray", "local"], "--ray"),
    (
        "calvin",
        ["--serve", "batched", "--policy", "mllm", "--model", "m", "--api-base", "{dead}"],
        "--api-base",
    ),
    ("calvin", ["--video", "-1"], "--video"),
    ("calvin", ["--workers", "0"], "--workers"),
    ("calvin", ["--num-sequences", "ten"], "--num-sequences"),
    ("calvin", ["--seed", "abc"], "--seed"),
    ("calvin", ["--no-such-flag"], "--no-such-flag"),
    ("calvin", ["--policy-kwargs", "{bad"], "--policy-kwargs"),
    ("calvin", ["--policy-kwargs", "[1, 2]"], "--policy-kwargs"),
    ("calvin", ["--policy-kwargs", "{deep}"], "--policy-kwargs"),
    ("calvin", ["--tasks", "fly_away"], "--tasks"),
    ("calvin", ["--latency", "soon"], "--latency"),
    ("calvin", ["--latency", "steps:2.5"], "--latency"),
    ("calvin", ["--renderer", "vulkan"], "--renderer"),
    ("calvin", ["--scene", "E"], "--scene"),
    ("calvin", ["--scene", "A,B,C,D"], "--scene"),
    ("calvin", ["--calvin-assets", "/no/such/calvin/data"], "/no/such/calvin/data"),
    ("calvin", ["--calvin-env", "{empty_dir}"], "--calvin-env"),
    ("calvin", ["--cameras", "front"], "--cameras"),
    ("calvin", ["--perturb", "weather"], "weather"),
    ("calvin", ["--perturb", "camera:7"], "--perturb"),
    ("calvin", ["--perturb", "initial_position"], "initial_position"),
    ("calvin", ["--perturb", "camera", "--backend", "official"], "--backend official"),
    ("calvin", ["--perturb", "camera", "--certificates", "{file}"], "--certificates"),
    ("calvin", ["--backend", "mujoco"], "--backend"),
    ("calvin", ["--output", "/etc/hostname/sub", "--num-sequences", "1", "--no-progress"], "/etc/hostname"),
    # --- CALVIN: policies and where they run
    ("calvin", ["--policy", "nope"], "--policy"),
    ("calvin", ["--policy", "no_such_module_xyz:Policy"], "no_such_module_xyz"),
    ("calvin", [*AGENT], "--policy agent"),
    ("calvin", ["--policy", "replay"], "--replay-file"),
    ("calvin", ["--policy", "replay", "--replay-file", "/no/such/file.jsonl"], "/no/such/file.jsonl"),
    ("calvin", ["--policy", "replay", "--replay-file", "{empty_dir}"], "--replay-file"),
    ("calvin", ["--policy", "replay", "--replay-file", "{file}"], "--replay-file"),
    ("calvin", ["--policy", "constant"], "--action"),
    ("calvin", ["--policy", "constant", "--action", "[0, 0]"], "--action"),
    ("calvin", ["--policy", "constant", "--action", "2"], "--action"),
    ("calvin", ["--policy", "constant", "--action", "{deep}"], "--action"),
    ("calvin", ["--policy", "constant", "--action", "[5, 0, 0, 0, 0, 0, 1]"], "--action"),
    ("calvin", ["--policy", "constant", "--action", "forward"], "--action"),
    # --- CALVIN: the MLLM policy, its model, server and device
    ("calvin", ["--policy", "mllm"], "--model"),
    (
        "calvin",
        ["--policy", "mllm", "--model", "/ckpt/Qwen2.5-VL-7B-Instruct"],
        "/ckpt/Qwen2.5-VL-7B-Instruct",
    ),
    ("calvin", ["--policy", "mllm", "--model", "{empty_dir}"], "config.json"),
    (
        "calvin",
        ["--policy", "mllm", "--model", "no-such-org/no-such-model-xyz"],
        "no-such-org/no-such-model-xyz",
    ),
    ("calvin", ["--policy", "mllm", "--model", "{file}"], "not a checkpoint folder"),
    ("calvin", ["--policy", "mllm", "--model", "m", "--api-base", "{dead}"], "{dead}"),
    ("calvin", ["--policy", "mllm", "--model", "m", "--api-base", "localhost:8000"], "--api-base"),
    ("calvin", ["--policy", "mllm", "--model", "m", "--api-base", "http://127.0.0.1:99999/v1"], "--api-base"),
    ("calvin", ["--policy", "mllm", "--model", "{model_dir}", "--device", "cuda:99"], "--device"),
    ("calvin", ["--policy", "mllm", "--model", "{model_dir}", "--device", "gpu"], "--device"),
    ("calvin", ["--policy", "mllm", "--model", "m", "--model-backend", "nope"], "--model-backend"),
    ("calvin", [*MLLM, "--max-new-tokens", "0"], "--max-new-tokens"),
    ("calvin", [*MLLM, "--answer-key-error-rate", "2"], "--answer-key-error-rate"),
    ("calvin", [*MLLM, "--oracle-error-rate", "2"], "--oracle-error-rate"),
    ("calvin", [*MLLM, "--num-steps", "0"], "--num-steps"),
    ("calvin", [*MLLM, "--loop", "react"], "--loop"),
    ("calvin", [*MLLM, "--task", "cooking"], "--task"),
    ("calvin", [*MLLM, "--fallback", "random"], "--fallback"),
    ("calvin", [*MLLM, "--dtype", "float8"], "--dtype"),
    ("calvin", [*MLLM, "--translation-step", "0.02"], "--rotation-step"),
    ("calvin", [*MLLM, "--top-p", "1.5"], "--top-p"),
    ("calvin", [*MLLM, "--n-examples", "2"], "--n-examples"),  # EB loop only
    ("calvin", [*MLLM, "--no-chat-history"], "--no-chat-history"),  # EB loop only
    # --- CALVIN: the VLA policy
    ("calvin", ["--policy", "vla"], "--checkpoint"),
    ("calvin", ["--backbone", "x", "--policy", "random"], "--backbone"),
    ("calvin", ["--checkpoint", "/no/such/checkpoint"], "/no/such/checkpoint"),
    ("calvin", ["--checkpoint", "{empty_dir}"], "{empty_dir}"),
    ("calvin", ["--backbone", "tiny-nope"], "tiny-nope"),
    ("calvin", ["--backbone", "random:Nobody/Model"], "random:Nobody/Model"),
    ("calvin", ["--backbone", "/no/such/backbone"], "/no/such/backbone"),
    ("calvin", ["--backbone", "tiny-qwen2.5-vl", "--execute-steps", "0"], "--execute-steps"),
    ("calvin", ["--backbone", "tiny-qwen2.5-vl", "--execute-steps", "20"], "--execute-steps"),
    ("calvin", ["--backbone", "tiny-qwen2.5-vl", "--data-format", "rlds"], "--data-format"),
    ("calvin", ["--backbone", "tiny-qwen2.5-vl", "--device", "cuda:99"], "--device"),
    # --- CALVIN: Ray
    ("calvin", ["--ray-num-gpus", "1"], "--ray-num-gpus"),
    ("calvin", ["--ray", "local", "--ray-num-gpus", "64"], "--ray-num-gpus"),
    ("calvin", ["--ray-num-cpus", "-1"], "--ray-num-cpus"),
    # --- sequential stopping (shared by every closed-loop CLI)
    ("calvin", ["--stop-when-decided"], "--against"),
    ("calvin", ["--stop-when-decided", "--against", "1.5"], "--against"),
    ("calvin", ["--stop-when-decided", "--against", "/no/such/run"], "/no/such/run"),
    ("calvin", ["--against", "0.5"], "--stop-when-decided"),
    ("calvin", ["--stop-when-decided", "--against", "{empty_dir}"], "manifest.json"),
    ("calvin", ["--probe", "every:x", *MLLM], "--probe"),
    ("calvin", ["--probe", "decisions"], "--probe"),
    ("calvin", ["--answer-key-probe-error-rate", "0.1", *MLLM], "--answer-key-probe-error-rate"),
    # --- LIBERO
    ("libero", ["--trials-per-task", "0"], "--trials-per-task"),
    ("libero", ["--image-size", "0"], "--image-size"),
    ("libero", ["--suite", "libero_100"], "--suite"),
    ("libero", ["--serve", "batched", "--workers", "2", "--max-batch", "3"], "--max-batch"),
    ("libero", ["--serve", "batched"], "--serve"),
    ("libero", ["--tasks", "99"], "--tasks"),
    ("libero", ["--tasks", "first"], "--tasks"),
    ("libero", ["--policy", "expert", "--suite", "libero_100"], "--suite"),
    ("libero", ["--policy", "expert", "--suite", "libero_goal", "--tasks", "10"], "--tasks"),
    ("libero", ["--max-steps", "0"], "--max-steps"),
    ("libero", ["--num-steps-wait", "-1"], "--num-steps-wait"),
    ("libero", ["--image-orientation", "sideways"], "--image-orientation"),
    ("libero", ["--latency-mode", "skip"], "--latency-mode"),
    ("libero", [*AGENT], "--policy agent"),
    ("libero", ["--policy", "constant", "--action", "[0]"], "--action"),
    ("libero", ["--policy", "vla"], "--checkpoint"),
    ("libero", ["--checkpoint", "/no/such/checkpoint"], "/no/such/checkpoint"),
    (
        "libero",
        ["--policy", "mllm", "--model", "/ckpt/Qwen2.5-VL-7B-Instruct"],
        "/ckpt/Qwen2.5-VL-7B-Instruct",
    ),
    ("libero", ["--policy", "mllm", "--model", "m", "--api-base", "{dead}"], "{dead}"),
    ("libero", [*MLLM, "--n-examples", "3"], "--n-examples"),  # EB loop only
    ("libero", [*MLLM, "--loop", "eb"], "--loop"),  # LIBERO runs the spatial loop only
    ("libero", ["--stop-when-decided", "--against", "-0.1"], "--against"),
    ("libero", ["--perturb", "weather"], "weather"),
    ("libero", ["--perturb", "camera:6"], "--perturb"),
    ("libero", ["--perturb", "initial_position"], "initial_position"),  # EB navigation's, not LIBERO's
    ("libero", ["--perturb", "camera", "--certificates", "{file}"], "--certificates"),
    ("libero", ["--probe", "every:two", *MLLM], "--probe"),
    ("libero", ["--probe", "decisions"], "--probe"),
    # --- EB navigation and manipulation
    ("embodied", [], "nav"),
    ("embodied", ["boat"], "nav"),
    ("embodied", ["nav", "--episodes", "0"], "--episodes"),
    ("embodied", ["nav", "--serve", "batched"], "--serve"),
    ("embodied", ["nav", "--serve", "batched", *MLLM], "answer-key"),
    ("embodied", ["nav", "--serve", "batched", *AGENT], "policies.serve"),
    (
        "embodied",
        ["nav", "--serve", "batched", "--policy", "mllm", "--model", "{model_dir}", "--max-new-tokens", "16"],
        "could not load",
    ),
    ("embodied", ["nav", "--image-size", "0"], "--image-size"),
    ("embodied", ["manip", "--latency", "fixed:-5"], "--latency"),
    ("embodied", ["nav", "--env-kwargs", "{"], "--env-kwargs"),
    ("embodied", ["nav", "--env-kwargs", '{"nope": 1}'], "nope"),
    ("embodied", ["nav", "--episodes-file", "/no/such/episodes.jsonl"], "/no/such/episodes.jsonl"),
    ("embodied", ["nav", "--episodes-file", "{file}"], "{file}"),
    ("embodied", ["nav", "--subset", "attic"], "--subset"),
    ("embodied", ["nav", "--perturb", "weather"], "weather"),
    ("embodied", ["nav", "--perturb", "camera:9"], "--perturb"),
    ("embodied", ["nav", "--perturb", "camera", "--certificates", "{file}"], "--certificates"),
    ("embodied", ["nav", "--perturb", "robot_joints"], "robot_joints"),
    ("embodied", ["nav", "--probe", "sometimes", *MLLM], "--probe"),
    ("embodied", ["nav", "--probe", "every:0", *MLLM], "--probe"),
    ("embodied", ["nav", "--probe", "decisions"], "--probe"),
    ("embodied", ["manip", "--probe", "every:-1", *MLLM], "--probe"),
    ("embodied", ["nav", "--answer-key-probe-error-rate", "0.2", *MLLM], "--answer-key-probe-error-rate"),
    (
        "embodied",
        ["nav", "--probe", "failures", "--answer-key-probe-error-rate", "1.5", *MLLM],
        "--answer-key-probe-error-rate",
    ),
    ("embodied", ["nav", "--policy", "vla", "--backbone", "tiny-qwen2.5-vl"], "--policy vla"),
    ("embodied", ["nav", "--checkpoint", "/no/such/checkpoint"], "--policy vla"),
    ("embodied", ["nav", "--policy", "constant", "--action", "99"], "--action"),
    ("embodied", ["nav", "--policy", "constant", "--action", "1.5"], "--action"),
    ("embodied", ["nav", "--policy", "constant", "--action", "[0, 1]"], "--action"),
    ("embodied", ["nav", *AGENT, "--agent-tools", "xray"], "--agent-tools"),
    ("embodied", ["nav", *AGENT, "--agent-paradigm", "chain"], "--agent-paradigm"),
    ("embodied", ["nav", *AGENT, "--agent-tools", "learned"], "--agent-tools learned"),
    (
        "embodied",
        ["nav", *AGENT, "--agent-tools", "learned", "--detector-model", "/no/such/owlv2"],
        "/no/such/owlv2",
    ),
    (
        "embodied",
        ["nav", "--policy", "agent", "--model", "/ckpt/Qwen2.5-VL-7B-Instruct"],
        "/ckpt/Qwen2.5-VL-7B",
    ),
    ("embodied", ["nav", "--policy", "agent", "--model", "m", "--api-base", "{dead}"], "{dead}"),
    ("embodied", ["nav", *AGENT, "--device", "cuda:99"], "--device"),
    ("embodied", ["nav", *MLLM, "--object-info-key", "objects"], "--object-info-key"),  # manipulation only
    ("embodied", ["nav", *MLLM, "--loop", "react"], "--loop"),
    ("embodied", ["nav", "--policy", "mllm", "--model", "m", "--api-base", "{dead}"], "{dead}"),
    ("embodied", ["manip", "--workers", "-1"], "--workers"),
    ("embodied", ["manip", *AGENT], "--policy agent"),
    ("embodied", ["manip", "--policy", "vla", "--checkpoint", "/no/such/checkpoint"], "--policy vla"),
    ("embodied", ["nav", "--stop-when-decided"], "--against"),
    ("embodied", ["manip", "--policy", "constant", "--action", "3"], "--action"),
    ("embodied", ["manip", "--policy", "mllm", "--model", "m", "--api-base", "{dead}"], "{dead}"),
    (
        "embodied",
        ["manip", "--policy", "mllm", "--model", "/ckpt/Qwen2.5-VL-7B-Instruct"],
        "/ckpt/Qwen2.5-VL-7B",
    ),
    # --- static benchmarks
    ("static", ["--bench", "nope", "--data", "x.json", "--model", "m"], "--bench"),
    ("static", ["--bench", "spatialscore", "--data", "x.json"], "--model"),
    ("static", ["generate", "--format", "gqa", "--out", "x"], "--format"),
    ("static", ["generate", "--format", "multihop", "--kinds", "counting", "--out", "x"], "--kinds"),
    ("static", [*STATIC, "--model", "m", "--limit", "0"], "--limit"),
    ("static", [*STATIC, "--model", "m", "--batch-size", "0"], "--batch-size"),
    ("static", [*STATIC, "--model", "answer-key", "--mode", "official"], "--mode"),
    ("static", [*STATIC, "--model", "answer-key", "--prompt-style", "fancy"], "--prompt-style"),
    (
        "static",
        ["--bench", "spatialscore", "--data", "/no/such/data.json", "--model", "answer-key"],
        "/no/such/data.json",
    ),
    ("static", [*STATIC, "--model", "/ckpt/Qwen2.5-VL-7B-Instruct"], "/ckpt/Qwen2.5-VL-7B-Instruct"),
    ("static", [*STATIC, "--model", "m", "--api-base", "{dead}"], "{dead}"),
    (
        "static",
        [*STATIC, "--model", "answer-key", "--judge-model", "j", "--judge-api-base", "{dead}"],
        "--judge-api-base",
    ),
    ("static", [*STATIC, "--score-only", "/no/such/predictions.jsonl"], "/no/such/predictions.jsonl"),
    (
        "static",
        [*STATIC, "--model", "answer-key", "--weights", "/no/such/weights.json"],
        "/no/such/weights.json",
    ),
    ("static", [*STATIC, "--model", "answer-key", "--policy", "vla"], "--policy"),
    (
        "static",
        [*STATIC, "--model", "answer-key", "--policy", "agent", "--agent-tools", "xray"],
        "--agent-tools",
    ),
    (
        "static",
        [
            *STATIC,
            "--model",
            "answer-key",
            "--policy",
            "agent",
            "--agent-tools",
            "learned",
            "--agent-depth-model",
            "/no/such/depth",
        ],
        "/no/such/depth",
    ),
    ("static", [*STATIC, "--model", "m", "--answer-key-error-rate", "0.5"], "--answer-key-error-rate"),
    ("static", [*STATIC, "--model", "answer-key", "--max-new-tokens", "0"], "--max-new-tokens"),
    # --- goal-image scoring, the server, VLA training and demonstrations, the umbrella command
    ("goal", ["predict"], "--dataset"),
    (
        "goal",
        ["score", "--dataset", "/no/such/goal_set", "--predictions", "/no/such/p.jsonl", "--output", "o"],
        "/no/such",
    ),
    ("goal", ["fly"], "fly"),
    ("serve", [], "--model"),
    ("serve", ["--model", "m", "--port", "-1"], "--port"),
    ("serve", ["--model", "m", "--max-batch", "0"], "--max-batch"),
    ("serve", ["--model", "m", "--host", "node"], "--host"),
    ("train", ["--batch-size", "0"], "--batch-size"),
    ("train", ["--lr", "-1"], "--lr"),
    ("train", ["--data", "/no/such/data"], "--backbone"),
    ("train", ["--backbone", "tiny-qwen2.5-vl", "--data", "{file}", "--precision", "fp8"], "--precision"),
    ("train", ["--backbone", "tiny-qwen2.5-vl", "--data", "/no/such/task_ABC_D"], "/no/such/task_ABC_D"),
    ("train", ["--backbone", "tiny-qwen2.5-vl", "--data", "{empty_dir}"], "--data"),
    (
        "train",
        ["--backbone", "tiny-qwen2.5-vl", "--data", "{empty_dir}", "--data-format", "calvin"],
        "--data",
    ),
    (
        "train",
        ["--backbone", "/ckpt/Qwen3-VL-4B-Instruct", "--data", "{calvin_dir}"],
        "/ckpt/Qwen3-VL-4B-Instruct",
    ),
    ("train", ["--backbone", "tiny-qwen2.5-vl", "--data", "{calvin_dir}"], "auto_lang_ann.npy"),
    ("train", ["--backbone", "tiny-qwen2.5-vl", "--data", "{calvin_gap}"], "episode_0000005.npz"),
    ("demos", ["--episodes", "0"], "--episodes"),
    ("demos", ["--ep-len", "0"], "--ep-len"),
    ("demos", ["--out", "{empty_dir}", "--task", "fly_away"], "fly_away"),
    ("demos", ["--env", "mujoco", "--out", "{empty_dir}"], "--env"),
    ("demos", ["--scenes", "A,E", "--out", "{empty_dir}"], "--scenes"),
    ("demos", ["--scenes", "A", "--frames", "0", "--out", "{empty_dir}"], "--frames"),
    ("demos", ["--scenes", "A", "--window", "0", "--out", "{empty_dir}"], "--window"),
    ("demos", ["--scenes", "A", "--rest", "2", "--out", "{empty_dir}"], "--rest"),
    ("demos", ["--scenes", "A", "--format", "rlds", "--out", "{empty_dir}"], "--format"),
    ("demos", ["--scenes", "A", "--tasks", "open_drawer,fly_away", "--out", "{empty_dir}"], "--tasks"),
    ("demos", ["--scenes", "A", "--tasks", "place_in_slider", "--out", "{empty_dir}"], "--tasks"),
    ("demos", ["--frames", "10"], "--out"),
    (
        "demos",
        ["--scenes", "A", "--out", "{empty_dir}", "--lang-encoder", "/no/such/encoder"],
        "/no/such/encoder",
    ),
    ("demos", ["--scenes", "A", "--out", "{empty_dir}", "--lang-encoder", "{max_pooling}"], "max_tokens"),
    (
        "demos",
        ["--scenes", "A", "--format", "lerobot", "--out", "{empty_dir}", "--lang-encoder", "{empty_dir}"],
        "--format",
    ),
    ("demos", ["--out", "{empty_dir}", "--lang-encoder", "{empty_dir}"], "--lang-encoder"),
    ("demos", ["--out", "{empty_dir}", "--lang-encoder", "{file}"], "--lang-encoder"),
    ("demos", ["--env"], "--env"),
    ("demos", ["--env", "libero"], "--out"),
    ("demos", ["--env", "libero", "--suite", "libero_100", "--out", "{empty_dir}"], "--suite"),
    (
        "demos",
        ["--env", "libero", "--suite", "libero_goal", "--tasks", "10", "--out", "{empty_dir}"],
        "--tasks",
    ),
    ("demos", ["--env", "libero", "--tasks", "two", "--out", "{empty_dir}"], "--tasks"),
    ("demos", ["--env", "libero", "--format", "rlds", "--out", "{empty_dir}"], "--format"),
    ("demos", ["--env", "libero", "--states", "0-50", "--out", "{empty_dir}"], "--states"),
    ("demos", ["--env", "libero", "--out", "{model_dir}"], "--resume"),
    ("demos", ["--env", "libero", "--out", "{model_dir}", "--resume"], "--resume"),
    ("demos", ["--env", "libero", "--out", "{file}"], "--out"),
    ("demos", ["--env", "libero", "--out", "{empty_dir}", "--resume", "--overwrite"], "--overwrite"),
    ("arena", ["calvn"], "calvn"),
    # --- spatial-arena compare / power (issue 34)
    ("arena", ["compare", "/no/such/run_a", "/no/such/run_b"], "/no/such/run_a"),
    ("arena", ["compare", "{empty_dir}", "{empty_dir}"], "manifest.json"),
    ("arena", ["compare", "{empty_dir}", "{empty_dir}", "--alpha", "2"], "--alpha"),
    ("arena", ["compare", "{empty_dir}"], "two run folders"),
    ("arena", ["compare", "{empty_dir}", "{empty_dir}", "--seed", "x"], "--seed"),
    ("arena", ["power", "--difference", "0.1"], "--rate"),
    ("arena", ["power", "--difference", "0.1", "--rate", "0.5", "--alpha", "0"], "--alpha"),
    ("arena", ["power", "--difference", "0.1", "--rate", "0.5", "--power", "1"], "--power"),
    ("arena", ["power", "--difference", "-1", "--sd", "1"], "--difference"),
    ("arena", ["power", "--difference", "0.1", "--rate", "1.5"], "--rate"),
    ("arena", ["power", "--rate", "0.5"], "--difference"),
    ("arena", ["power", "--difference", "0.1", "/no/such/pilot"], "/no/such/pilot"),
    # --- python -m vla.data.calvin_embed (CALVIN's sentence embeddings)
    ("embed", [], "--data"),
    ("embed", ["--data", "{empty_dir}", "--lang-encoder", "{empty_dir}"], "--data"),
    ("embed", ["--data", "{calvin_gap}", "--lang-encoder", "{max_pooling}"], "max_tokens"),
    ("embed", ["--data", "{calvin_gap}", "--lang-encoder", "{model_dir}"], "--lang-encoder"),
    ("embed", ["--data", "{calvin_gap}", "--lang-encoder", "/no/such/encoder"], "/no/such/encoder"),
    # --- spatial-arena report (issue 34)
    ("arena", ["report", "/no/such/run"], "/no/such/run"),
    ("arena", ["report", "{empty_dir}"], "manifest.json"),
    ("arena", ["report", "{empty_dir}", "-o", "/no/such/folder/report.html"], "/no/such/folder"),
    ("arena", ["report", "{empty_dir}", "-o", "{empty_dir}"], "-o"),
]


DEEP_JSON = "[" * 50_000 + "]" * 50_000  # JSON nested past Python's recursion limit


def fill(text: str, root: Path, dead: str) -> str:
    """``text`` with the placeholders filled in (files under ``root``, which this creates)."""
    (root / "empty_dir").mkdir(parents=True, exist_ok=True)
    (root / "model_dir").mkdir(exist_ok=True)
    (root / "model_dir" / "config.json").write_text("{}")
    (root / "file.txt").write_text("not what any command wants\n")
    (root / "calvin_dir").mkdir(exist_ok=True)
    np.save(root / "calvin_dir" / "ep_start_end_ids.npy", np.zeros((1, 2), np.int64))  # no annotations
    calvin_gap(root / "calvin_gap")
    max_pooling(root / "max_pooling")
    for name, value in {
        "empty_dir": root / "empty_dir",
        "model_dir": root / "model_dir",
        "file": root / "file.txt",
        "calvin_dir": root / "calvin_dir",
        "calvin_gap": root / "calvin_gap",
        "max_pooling": root / "max_pooling",
        "dead": dead,
        "deep": DEEP_JSON,
    }.items():
        text = text.replace("{" + name + "}", str(value))
    return text


def calvin_gap(split: Path) -> None:
    """A CALVIN split whose one annotated episode (frames 0-12) lacks frame 5 (the others are only names:
    the reader refuses the gap before it opens a frame)."""
    (split / "lang_annotations").mkdir(parents=True, exist_ok=True)
    np.save(split / "ep_start_end_ids.npy", np.asarray([[0, 12]], np.int64))
    ann = {"language": {"ann": ["open the drawer"], "task": ["open_drawer"]}, "info": {"indx": [(0, 12)]}}
    np.save(
        split / "lang_annotations" / "auto_lang_ann.npy", np.asarray(ann, dtype=object), allow_pickle=True
    )
    for frame in (t for t in range(13) if t != 5):
        (split / f"episode_{frame:07d}.npz").touch()


def max_pooling(folder: Path) -> None:
    """A sentence-transformers checkpoint folder's module files, its Pooling taking the max (no model)."""
    (folder / "1_Pooling").mkdir(parents=True, exist_ok=True)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    (folder / "modules.json").write_text(json.dumps(modules))
    pooling = {
        "word_embedding_dimension": 384,
        "pooling_mode_max_tokens": True,
        "pooling_mode_mean_tokens": False,
    }
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling))


def dead_endpoint() -> str:
    """An ``http://127.0.0.1:PORT/v1`` URL with nothing listening on PORT (a port just released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def case_id(command: str, argv: list[str]) -> str:
    return f"{command}:{' '.join(argv)}"
