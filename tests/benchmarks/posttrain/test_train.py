"""Spatial post-training: the simulator corpus (content, determinism, disjointness from the test sets) and
``benchmarks.posttrain`` SFT/GRPO on a tiny Qwen2.5-VL with TRL (one torch thread, a few steps)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("datasets")
pytest.importorskip("trl")

from benchmarks.datagen.corpus import (
    CORPUS_HOME_SEEDS,
    CORPUS_KINDS,
    CorpusConfig,
    check_disjoint,
    corpus_rows,
    dataset_homes,
    generate_corpus,
)
from benchmarks.posttrain.multihop_rewards import msr_total_reward


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Ten items: every kind once in train, one validation item."""
    out = tmp_path_factory.mktemp("corpus") / "c"
    stats = generate_corpus(CorpusConfig(out=out, n=len(CORPUS_KINDS) + 1, validation=0.1, families="nav"))
    return out, stats


def test_corpus_rows_cover_every_kind_with_exact_targets(corpus):
    from datasets import load_from_disk

    out, stats = corpus
    data = load_from_disk(str(out))
    assert stats["splits"] == {"train": len(CORPUS_KINDS), "validation": 1}
    assert sorted(data["train"]["kind"]) == sorted(CORPUS_KINDS)
    assert stats["items_per_second"] > 0
    for row in data["train"]:
        user, assistant = row["messages"]
        assert [p["type"] for p in user["content"]].count("image") == len(row["images"]) >= 1
        assert row["prompt"] == [user] and assistant["role"] == "assistant"
        assert json.loads(row["truth"])["index"] == row["index"]
        low, high = CORPUS_HOME_SEEDS
        assert low <= row["home_seed"] < high
        if row["kind"] in ("multihop", "localisation"):
            x1, y1, x2, y2 = row["bbox_normalized"]
            assert 0 <= x1 < x2 <= 1000 and 0 <= y1 < y2 <= 1000
        if row["kind"] == "multihop":  # the gold answer earns the paper's full reward: format + letter + box
            text = assistant["content"][0]["text"]
            reward = msr_total_reward(
                [text], response=[row["response"]], bbox_normalized=[row["bbox_normalized"]]
            )
            assert reward == [3.0]
            assert row["response"].split(") ", 1)[1] in user["content"][-1]["text"]


def test_corpus_items_are_deterministic():
    config = CorpusConfig(n=2, width=96, height=96, kinds="multihop,counting", min_pixels=30, families="nav")
    first = [r["truth"] for r in corpus_rows(config, [1])]
    again = [r["truth"] for r in corpus_rows(config, [1])]
    other = [
        r["truth"]
        for r in corpus_rows(
            CorpusConfig(
                n=2, width=96, height=96, kinds="multihop,counting", min_pixels=30, seed=1, families="nav"
            ),
            [1],
        )
    ]
    assert first == again and first != other


def _static_test_homes(n: int) -> list[tuple[int, str]]:
    from benchmarks.datagen.generate import GenerateConfig, generate_questions

    return [(h["home_seed"], h["scene_key"]) for _, _, h in generate_questions(GenerateConfig(n=n))]


def _goal_nav_test_homes(n: int) -> list[tuple[int, str]]:
    from benchmarks.goal_scoring.nav_source import NavigationPairSource

    source = NavigationPairSource()
    # sources.generate_dataset's streams
    pairs = [source.sample(np.random.default_rng([0, i])) for i in range(n)]
    return [(p.metadata["home_seed"], p.metadata["scene_key"]) for p in pairs]


def _episode_test_homes() -> list[tuple[int, str]]:
    from envs.navigation.episodes import make_episode
    from envs.navigation.instructions import SUBSETS
    from envs.navigation.scene import scene_key

    return [(make_episode(s, 0)["scene"]["seed"], scene_key(make_episode(s, 0)["scene"])) for s in SUBSETS]


def test_corpus_is_disjoint_from_default_test_sets(corpus):
    out, _ = corpus
    test_homes = _static_test_homes(7) + _goal_nav_test_homes(2) + _episode_test_homes()
    assert all(seed < CORPUS_HOME_SEEDS[0] for seed, _ in test_homes)
    assert check_disjoint(dataset_homes(out), test_homes) == len(CORPUS_KINDS) + 1


def test_disjointness_check_catches_a_shared_or_stray_home(corpus):
    out, _ = corpus
    homes = dataset_homes(out)
    with pytest.raises(ValueError, match="also a test scene"):
        check_disjoint(homes, [(5, homes[3][1])])
    with pytest.raises(ValueError, match="outside"):
        check_disjoint([(12, "abc")], [])
    with pytest.raises(ValueError, match="corpus range"):
        check_disjoint(homes, [(CORPUS_HOME_SEEDS[0], "x")])


# ------------------------------------------------------------------------------------------ trainers


def _run(tiny_vlm, corpus, tmp_path, mode, *extra):
    from benchmarks.posttrain import main, read_metrics

    out = tmp_path / mode
    main(
        [mode, "--model", str(tiny_vlm("qwen2_5_vl")), "--data", str(corpus[0]), "--output", str(out), *extra]
    )
    return out, read_metrics(out)


def test_sft_loss_falls_on_a_fixed_batch(tiny_vlm, corpus, tmp_path):
    out, logs = _run(
        tiny_vlm,
        corpus,
        tmp_path,
        "sft",
        "--max-items",
        "2",
        "--batch-size",
        "2",
        "--max-steps",
        "4",
        "--lr",
        "2e-3",
        "--save-steps",
        "4",
    )
    losses = [entry["loss"] for entry in logs if "loss" in entry]
    assert len(losses) == 4 and losses[-1] < losses[0]
    assert (out / "final" / "config.json").is_file() and (out / "final" / "processor_config.json").is_file()


def test_grpo_logs_multihop_rewards_and_resumes(tiny_vlm, corpus, tmp_path):
    common = [
        "--kinds",
        "multihop,localisation",
        "--batch-size",
        "2",
        "--num-generations",
        "2",
        "--max-completion-length",
        "8",
        "--save-steps",
        "1",
    ]
    out, logs = _run(tiny_vlm, corpus, tmp_path, "grpo", *common, "--max-steps", "2")
    steps = [e for e in logs if "reward" in e]
    assert [e["step"] for e in steps] == [1, 2]
    for entry in steps:
        for name in ("msr_format_reward", "msr_mcq_reward", "msr_bbox_reward"):
            assert 0.0 <= entry[f"rewards/{name}/mean"] <= 1.0
        assert 0.0 <= entry["reward"] <= 3.0
    _, logs = _run(tiny_vlm, corpus, tmp_path, "grpo", *common, "--max-steps", "3", "--resume")
    assert [e["step"] for e in logs if "reward" in e] == [1, 2, 3]  # the resumed run did step 3 only
    state = json.loads((out / "checkpoint-3" / "trainer_state.json").read_text())
    assert state["global_step"] == 3


def test_bad_input_is_one_line_naming_the_fix(tmp_path, capsys):
    from benchmarks.datagen.corpus import main as corpus_main
    from benchmarks.posttrain import main
    from policies.config_cli import run_cli

    assert run_cli(main, ["sft", "--model", str(tmp_path / "none"), "--data", str(tmp_path)]) == 2
    assert run_cli(main, ["train", "--model", "x"]) == 2
    assert (
        run_cli(main, ["sft", "--model", str(tmp_path), "--data", str(tmp_path), "--report-to", "mlflow"])
        == 2
    )
    assert corpus_main(["--out", str(tmp_path / "c"), "--kinds", "depth"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 4
    assert "--model" in lines[0] and "config.json" in lines[0]
    assert "sft|grpo" in lines[1] and "--report-to 'mlflow'" in lines[2] and "unknown ['depth']" in lines[3]


def test_check_command_proves_or_refuses(corpus, tmp_path, capsys):
    from benchmarks.datagen.corpus import main as corpus_main

    out, _ = corpus
    _, key = dataset_homes(out)[0]
    clean, dirty = tmp_path / "clean.jsonl", tmp_path / "dirty.jsonl"
    clean.write_text(json.dumps({"index": 0, "home_seed": 7, "scene_key": "0123456789abcdef"}) + "\n")
    dirty.write_text(json.dumps({"index": 0, "home_seed": 7, "scene_key": key}) + "\n")
    assert corpus_main(["check", str(out), str(clean)]) == 0
    assert "no shared home" in capsys.readouterr().out
    assert corpus_main(["check", str(out), str(clean), str(dirty)]) == 1
    assert key in capsys.readouterr().err
