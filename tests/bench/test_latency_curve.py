"""The latency curve recipe (bench/latency_curve.py): its pieces, and the whole pipeline at the smallest size."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import latency_curve as lc


def test_points_latencies_and_the_gate_test():
    assert lc.points([0, 2, 5], ["hold", "continue"]) == [
        (0, "none"),
        (2, "hold"),
        (2, "continue"),
        (5, "hold"),
        (5, "continue"),
    ]
    assert lc.points([3], ["hold"]) == [(3, "hold")]
    assert lc.latency_for(0, "hold") is None  # delay 0: the frozen-world protocol
    latency = lc.latency_for(5, "continue")
    assert (
        latency.steps(0.0) == 5 and latency.mode == "continue" and latency.describe()["latency"] == "steps:5"
    )

    # the gate pairs the policies on the held-out starts: only the starts one of them solved count
    def run(*outcomes):
        return {"per_episode": [{"success": bool(o)} for o in outcomes]}

    trained, replay = run(1, 1, 1, 0, 1, 0), run(1, 0, 0, 0, 1, 1)
    assert lc.discordant(trained, replay) == (2, 1) and lc.discordant(replay, trained) == (1, 2)
    with pytest.raises(ValueError):  # a baseline measured on other starts cannot be paired
        lc.discordant(trained, run(1, 0))


def test_arguments_pass_through_and_bad_ones(capsys):
    args, vla = lc.parse_args(["--delays", "5,0,5", "--backbone", "b", "--lr", "1e-3", "--out", "o"])
    assert args.delays == [0, 5] and args.modes == ["hold", "continue"]
    assert (vla.backbone, vla.lr, vla.out, vla.max_steps, vla.eval_episodes) == ("b", 1e-3, "o", 1500, 100)
    assert (vla.image_size, vla.train_episodes, vla.min_lr_ratio) == (224, 100, 0.05)
    assert lc.parse_args(["--policies", "answer-key"])[0].policies == ["answer-key"]
    assert args.curve_episodes == 30  # 30 by default, at most the gate's starts
    assert lc.parse_args(["--eval-episodes", "20"])[0].curve_episodes == 20
    bad_ones = (["--delays", "1,x"], ["--delays", "-2"], ["--modes", "skip"], ["--policies", "vla,x"])
    bad_ones += (["--curve-episodes", "101"], ["--curve-episodes", "0"])
    for bad in (*bad_ones, ["--env", "libero"]):
        with pytest.raises(SystemExit) as stop:
            lc.parse_args(bad)
        assert stop.value.code == 2
    assert "--delays" in capsys.readouterr().err


def test_two_invocations_fill_one_curve_and_other_settings_start_over(tmp_path, capsys):
    """Each save merges with the file (so --policies vla and --policies answer-key can run side by side);
    a point in the file is reused, not measured again; a file made with other settings is discarded."""
    path = tmp_path / "curve.json"
    first, second = lc.Store(path, {"a": 1}), lc.Store(path, {"a": 1})
    first.point("vla/d0", lambda: {"success": 1, "episodes": 2})
    second.point("answer-key/d0", lambda: {"success": 2, "episodes": 2})
    assert second.point("vla/d0", lambda: 1 / 0)["success"] == 1  # the other invocation's point
    first.save()
    assert sorted(json.loads(path.read_text())["points"]) == ["answer-key/d0", "vla/d0"]
    assert lc.Store(path, {"a": 2}).data["points"] == {} and not path.exists()
    assert "other settings" in capsys.readouterr().out


def test_tiny_pipeline_end_to_end_then_resumed(tmp_path, monkeypatch):
    """Data -> step-budget training -> gate -> both curves -> JSON, table and plot; a rerun reuses it all."""
    pytest.importorskip("pybullet")
    pytest.importorskip(
        "efficientnet_lite_pytorch", reason="optional group vla-efficientnet is not installed"
    )
    tiny = ["--tiny", "--curve-episodes", "1", "--out", str(tmp_path)]  # the gate's 2 starts, the curve's 1
    assert lc.main(tiny) == 0  # the gate only reports in --tiny
    data = json.loads((tmp_path / "curve.json").read_text())
    points = data["points"]
    curves = [f"{p}/d3/{m}" for p in ("vla", "answer-key") for m in ("hold", "continue")]
    assert sorted(points) == sorted(
        ["vla/d0", "random/d0", "constant/d0", "replay/d0", "answer-key/d0", *curves]
    )
    assert all(
        p["episodes"] == (2 if k.endswith("/d0") and k != "answer-key/d0" else 1) for k, p in points.items()
    )
    assert all(e["steps"] <= 12 for p in points.values() for e in p["per_episode"])
    assert data["training"]["training"]["steps"] == 2 and set(data["gate"]["baselines"]) == {
        "random",
        "constant",
        "replay",
    }
    assert data["gate"]["test"] == "one-sided exact McNemar"
    for name, row in data["gate"]["baselines"].items():  # the pairs come from the same two starts
        assert (row["only_trained"], row["only_baseline"]) == lc.discordant(
            points["vla/d0"], points[f"{name}/d0"]
        )
    # a plan loop has nothing pending when asked again: continuing is holding
    assert points["answer-key/d3/continue"]["per_episode"] == points["answer-key/d3/hold"]["per_episode"]
    table = (tmp_path / "latency_curve.md").read_text()
    assert "| 3 | 100 ms | " in table and "| not run" not in table and "Gate NOT passed" in table
    # the curve's delay 0 is the gate's point on the curve's first start
    vla0 = points["vla/d0"]["per_episode"][0]["success"]
    assert f"| 0 | 0 ms | {int(vla0)}/1 (" in table and "the first 1 at every point of the curve" in table
    row0 = next(line for line in table.splitlines() if line.startswith("| 0 | 0 ms"))
    assert ", p " not in row0  # delay 0 is the reference, not compared with itself
    assert next(line for line in table.splitlines() if line.startswith("| 3 | ")).count(", p ") == 4
    assert "solved by trained only / baseline only | trained better: one-sided exact McNemar p |" in table
    assert (tmp_path / "latency_curve.png").stat().st_size > 0
    results = json.loads((tmp_path / "latency_curve.json").read_text())
    assert all(results[k] for k in ("title", "date", "machine", "source", "command", "setup"))
    assert results["points"] == points and results["command"].endswith(" ".join(tiny))
    log = (tmp_path / "run-efficientnet-lite0-frozen" / "train_log.jsonl").read_text()

    def no_evaluation(*args, **kwargs):
        raise AssertionError("a rerun with the same settings evaluates nothing again")

    monkeypatch.setattr(lc.learning, "evaluate", no_evaluation)
    assert lc.main(tiny) == 0
    assert (tmp_path / "run-efficientnet-lite0-frozen" / "train_log.jsonl").read_text() == log
    assert json.loads((tmp_path / "curve.json").read_text())["points"] == points
    (tmp_path / "latency_curve.md").unlink()
    assert lc.main([*tiny, "--report-only"]) == 0
    assert (tmp_path / "latency_curve.md").read_text() == table
    assert lc.main(["--tiny", "--report-only", "--out", str(tmp_path / "none")]) == 2
