"""GRPO on the CALVIN corpus kinds: every kind's gold answer earns its row's full reward, wrong answers earn
less, and a few GRPO steps on CALVIN items run and change the policy (tiny model, one torch thread)."""

from __future__ import annotations

import pytest

pytest.importorskip("datasets")

from benchmarks.datagen.calvin_corpus import CALVIN_KINDS
from benchmarks.datagen.corpus import CorpusConfig, generate_corpus
from benchmarks.posttrain.multihop_rewards import PAPER_REWARD_FUNCS
from benchmarks.posttrain.spatial_rewards import (
    SPATIAL_REWARD_FUNCS,
    accuracy_score,
    format_score,
    reference_kind,
)


@pytest.fixture(scope="module")
def calvin_corpus(tmp_path_factory):
    """Every CALVIN kind once, plus a second multi-hop item (GRPO's default rows)."""
    out = tmp_path_factory.mktemp("calvin") / "c"
    kinds = [*CALVIN_KINDS, "calvin_multihop"]
    generate_corpus(
        CorpusConfig(out=out, n=len(kinds) + 1, validation=0.1, families="calvin", kinds=",".join(kinds))
    )
    return out


def _rewards(funcs, completions, rows):
    columns = {
        "response": [r["response"] for r in rows],
        "bbox_normalized": [r["bbox_normalized"] for r in rows],
    }
    return [sum(values) for values in zip(*(f(completions, **columns) for f in funcs))]


def test_gold_answers_earn_the_most_each_calvin_kind_allows(calvin_corpus):
    from datasets import load_from_disk

    rows = list(load_from_disk(str(calvin_corpus))["train"])
    assert {r["kind"] for r in rows} == set(CALVIN_KINDS)
    gold = [r["messages"][1]["content"][0]["text"] for r in rows]
    best = {"letter+box": 3.0, "box": 2.0, "letter": 2.0, "number": 2.0}
    kinds = [reference_kind(r["response"], r["bbox_normalized"]) for r in rows]
    assert set(kinds) == set(best)  # the CALVIN family asks all four ways
    assert _rewards(SPATIAL_REWARD_FUNCS, gold, rows) == [best[k] for k in kinds]
    wrong = ["I cannot tell."] * len(rows)
    assert _rewards(SPATIAL_REWARD_FUNCS, wrong, rows) == [0.0] * len(rows)
    multihop = [i for i, r in enumerate(rows) if r["kind"] == "calvin_multihop"]
    assert [_rewards(PAPER_REWARD_FUNCS, [gold[i]], [rows[i]]) for i in multihop] == [[3.0]] * len(multihop)


def test_single_hop_terms_by_hand():
    assert format_score("The answer is (B).", "(B)", None) == accuracy_score("(B)", "(B)", None) == 1.0
    assert accuracy_score("(C)", "(B)", None) == 0.0
    assert accuracy_score("About 0.24 m.", "0.20", None) == pytest.approx(0.7)  # MRA: error 0.2
    assert (
        format_score("no number here", "0.20", None) == accuracy_score("no number here", "0.20", None) == 0.0
    )
    assert format_score("Bounding Box: [1, 2, 30, 40]", "Bounding Box: [1, 2, 30, 40]", [1, 2, 30, 40]) == 1.0
    assert format_score("Answer: (a) red block", "(a) red block", [1, 2, 3, 4]) == 0.0  # the box is missing
    with pytest.raises(ValueError, match="neither a letter"):
        accuracy_score("1", "left", None)


def test_a_few_grpo_steps_on_calvin_items_change_the_policy(tiny_vlm, calvin_corpus, tmp_path):
    import torch
    from safetensors.torch import load_file

    from benchmarks.posttrain import PostTrainConfig, load_split, main, read_metrics

    model = tiny_vlm("qwen2_5_vl")
    default = load_split(PostTrainConfig(mode="grpo", model=str(model), data=str(calvin_corpus)), "train")
    assert set(default["kind"]) == {"calvin_multihop"}  # paper rewards: the rows with a letter and a box
    out = tmp_path / "grpo"
    main(
        [
            "grpo",
            "--model",
            str(model),
            "--data",
            str(calvin_corpus),
            "--output",
            str(out),
            "--rewards",
            "spatial",
            "--batch-size",
            "2",
            "--num-generations",
            "2",
            "--max-completion-length",
            "8",
            "--max-steps",
            "2",
            "--lr",
            "1e-2",
            "--save-steps",
            "2",
        ]
    )
    logs = [e for e in read_metrics(out) if "reward" in e]
    assert [e["step"] for e in logs] == [1, 2]
    for entry in logs:
        for name in ("spatial_format_reward", "spatial_accuracy_reward", "spatial_bbox_reward"):
            assert 0.0 <= entry[f"rewards/{name}/mean"] <= 1.0
    before, after = (
        load_file(str(model / "model.safetensors")),
        load_file(str(out / "final" / "model.safetensors")),
    )
    changed = [k for k in before if k in after and not torch.equal(before[k], after[k].to(before[k].dtype))]
    assert changed  # the policy moved
