"""The backbone comparison recipe (bench/vla_compare.py) end to end at the smallest scale."""

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("pybullet")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.vla_compare import main
from tests.vla_helpers import write_calvin_split


def test_two_backbones_same_data_budget_and_episodes(tmp_path, tiny_vlm, capsys):
    data = tmp_path / "data" / "training"
    write_calvin_split(
        data, episodes=[(0, 12)], windows=[(0, 12, "open_drawer", "pull the handle to open the drawer")]
    )
    backbones = [str(tiny_vlm("paligemma")), str(tiny_vlm("kosmos2"))]
    main(
        [
            "--backbones",
            ",".join(backbones),
            "--data",
            str(data),
            "--steps",
            "2",
            "--warmup-steps",
            "1",
            "--batch-size",
            "2",
            "--eval-episodes",
            "2",
            "--ep-len",
            "3",
            "--image-size",
            "56",
            "--out",
            str(tmp_path),
        ]
    )
    comparison = json.loads((tmp_path / "comparison.json").read_text())
    rows = comparison["rows"]
    assert [r["backbone"] for r in rows] == backbones
    assert [r["model_type"] for r in rows] == ["paligemma", "kosmos-2"]
    for row in rows:
        # the same episodes
        assert row["episodes"] == 2 and [e["steps"] for e in row["per_episode"]] == [
            3,
            3,
        ]
        assert [step for step, _ in row["loss_curve"]][-1] == 2  # the same budget
        assert row["backbone_params"] > 0 and row["query_ms"] > 0
    assert rows[0]["backbone_params"] != rows[1]["backbone_params"]
    table = (tmp_path / "comparison.md").read_text()
    assert table.count("\n| `") == 2 and "0/2" in table
    assert table in capsys.readouterr().out
    assert (tmp_path / "comparison.png").stat().st_size > 0
