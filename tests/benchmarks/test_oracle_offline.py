"""The offline routes driven by the oracle backend: static benchmarks (every benchmark x mode) and goal-image
``predict``. The oracle's answers go through the real prompt, budget, parser, scorer and aggregation, so:

- with no injected errors every rule-scored item scores 1 (100 % headlines), and the judge path agrees;
- with injected errors the recorded parse failures equal the injected "unusable" answers exactly;
- the generation budget the backend was built with is the one in the manifest (and it really cuts answers);
- a failed call is counted, never read as a result, and makes the CLI exit non-zero unless --allow-errors;
- an answer the scorer cannot handle scores 0 with the error on the item, and the run goes on.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.goal_scoring.cli import main as goal_main
from benchmarks.goal_scoring.dataset import DatasetWriter
from benchmarks.goal_scoring.sources import generate_dataset
from benchmarks.static import runner
from benchmarks.static.__main__ import main as static_main
from benchmarks.static.config import RunConfig
from benchmarks.static.registry import get_benchmark
from benchmarks.static.runner import run
from policies.backends.injection import expected_effect
from tests import static_helpers as H
from tests.goal_data import WallPairSource

WRITERS = {
    "spatialscore": H.write_spatialscore,
    "space10": H.write_space10,
    "multihopspatial": H.write_multihop,
    "spatialtree": H.write_spatialtree,
    "vsibench": H.write_vsibench,
}
#: every (benchmark, mode, prompt style): each mode with its own style, and the other style in the project
#: mode
CASES = [(b, m, None) for b in WRITERS for m in get_benchmark(b).modes] + [
    ("spatialscore", "project", "repo"),
    ("multihopspatial", "project", "repo"),
    ("vsibench", "project", "api"),
]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("static-oracle")
    return {bench: write(root / bench) for bench, write in WRITERS.items()}


def oracle_run(
    data: dict[str, Path], out: Path, bench: str, mode: str, style: str | None, **options
) -> runner.RunResult:
    config = RunConfig(
        bench=bench,
        data=data[bench],
        output=out,
        model="answer-key",
        mode=mode,
        prompt_style=style,
        judge_model="answer-key",
        plot=False,
        **options,
    )
    return run(config)


def rule_path_ceiling(bench: str, mode: str, record: dict) -> bool:
    """Items the mode's rules never credit, whatever the answer: documented official behaviour, not errors."""
    if mode in JUDGE_PATH_MODES:  # the list string "['B']" defeats the letter rules; the judge path reads it
        return True
    return mode == "spatialtree-lmms-eval" and record["tags"]["scorer_type"] == "gpteval"  # 0 without a judge


#: SpaCE-10 modes whose rules read the list string, so the judge path is what credits an answer.
JUDGE_PATH_MODES = ("space10-lmms-eval", "space10-single", "space10-double")


def never_credited(mode: str, record: dict) -> bool:
    """Items a SpaCE-10 task can never credit, whatever the answer: a two-letter key under the single-answer
    task, and "B, E" (letters without "X.") under the fork's statistics script."""
    return mode in ("space10-single", "space10-stats") and record["tags"].get("answer_kind") == "multiple"


def first_token_miss(mode: str, record: dict) -> bool:
    """Public scorers that cannot read "Answer: B": lmms-eval's VSI-Bench scorer reads a letter only as the
    first token, and SpaCE-10's statistics script only a one-character answer or letters written "X."."""
    sentence = record.get("injected_error") == "answer_sentence"
    return sentence and (
        (mode == "vsibench-lmms-eval" and record["task"] == "mcq") or mode == "space10-stats"
    )


@pytest.mark.parametrize(("bench", "mode", "style"), CASES)
def test_oracle_scores_every_item_in_every_mode(data, tmp_path, bench, mode, style):
    result = oracle_run(data, tmp_path, bench, mode, style)
    counts, records = result.summary["counts"], result.records
    assert result.summary["status"] == "complete" and counts["errors"] == 0 and counts["scoring_errors"] == 0
    assert len(records) == counts["items"] > 0
    for record in records:
        if never_credited(mode, record):
            assert record["score"] == 0.0 and (record["judge"] is None or record["judge"]["score"] == 0.0), (
                record
            )
        elif rule_path_ceiling(bench, mode, record):
            assert record["judge"]["ok"] and record["judge"]["score"] == 1.0, record
        elif record["score"] is not None:
            assert record["score"] == 1.0 and record["parse"]["ok"], record
        else:  # open answers, scored by the judge only
            assert record["judge"] is None or record["judge"]["score"] == 1.0, record
    # A public scorer that cannot give a perfect model 100 says why, in one line, next to its headline.
    numbers = [
        v for k, v in result.summary["headline"].items() if isinstance(v, float) and k != "box_unreadable"
    ]
    below = any(v < 100.0 - 1e-9 for v in numbers)
    assert (
        ("headline_note" in result.summary)
        == below
        == (get_benchmark(bench).mode(mode).headline_note is not None)
    )
    if mode == "space10-stats":
        assert result.summary["headline"]["single_accuracy"] == 100.0
    elif mode == "space10-single":
        assert result.summary["judge"]["judge_assisted_single_answer_overall"] == 100.0
    elif mode in JUDGE_PATH_MODES:
        judge = result.summary["judge"]
        assert (
            judge["judge_assisted_single_answer_overall"]
            == judge["judge_assisted_multiple_answer_overall"]
            == 100.0
        )
    elif mode == "spatialtree-lmms-eval":  # lmms-eval counts the tree's leaves without items as 0
        scored = [r for r in records if not rule_path_ceiling(bench, mode, r) and r["score"] is not None]
        assert scored and all(r["score"] == 1.0 for r in scored)
        assert result.summary["judge"]["judge_assisted_item_mean"] == 100.0
    else:
        numbers = [
            v for k, v in result.summary["headline"].items() if isinstance(v, float) and k != "box_unreadable"
        ]
        assert numbers and all(v == pytest.approx(100.0) for v in numbers), result.summary["headline"]
        assert counts["parse_failures"] == 0
        judge = result.summary["judge"] or {}
        assert all(
            v == 100.0
            for k, v in judge.items()
            if k.startswith(("judge_assisted", "paper_combined", "mean_judge"))
        )


@pytest.mark.parametrize(("bench", "mode", "style"), CASES)
def test_parse_failures_equal_injected_unusable_answers(data, tmp_path, bench, mode, style):
    injected_total = 0
    for seed in range(3):
        result = oracle_run(
            data,
            tmp_path / str(seed),
            bench,
            mode,
            style,
            answer_key_error_rate=0.6,
            answer_key_error_seed=seed,
        )
        everything = result.records
        assert result.summary["counts"].get("injected_unusable", 0) == sum(
            1 for r in everything if unusable(r)
        )
        injected_total += sum(1 for r in everything if r.get("injected_error"))
        for (
            record
        ) in everything:  # open answers have no parser: text cut short is still text, for the judge to grade
            if record["task"] == "open_text" and unusable(record):
                assert record["judge"]["score"] == 0.0
        records = [r for r in everything if r["task"] != "open_text" and not never_credited(mode, r)]
        if mode in JUDGE_PATH_MODES:  # rules read nothing here by design; the judge finds no option instead
            assert sum(1 for r in records if r["judge"]["reply"] in ("E", "F")) == sum(
                1 for r in records if unusable(r)
            )
        else:
            failures = sum(1 for r in records if not r["parse"]["ok"])
            expected = sum(1 for r in records if unusable(r) or first_token_miss(mode, r))
            assert failures == expected, [(r["response"], r.get("injected_error")) for r in records]
        for record in records:  # every clean or usable answer still scores full marks
            if first_token_miss(mode, record):
                assert record["score"] == 0.0
            elif (
                not unusable(record)
                and record["score"] is not None
                and not rule_path_ceiling(bench, mode, record)
            ):
                assert record["score"] == 1.0, (record["response"], record["explanation"])
    assert injected_total > 0


def unusable(record: dict) -> bool:
    return expected_effect(record.get("injected_error")) == "unusable"


def test_static_cli_with_oracle_model_and_judge(data, tmp_path, capsys):
    args = [
        "--bench",
        "space10",
        "--data",
        str(data["space10"]),
        "--model",
        "answer-key",
        "--judge-model",
        "answer-key",
        "--mode",
        "space10-lmms-eval",
        "--output",
        str(tmp_path),
        "--no-plot",
    ]
    assert static_main(args) == 0
    out = capsys.readouterr().out
    assert "items: 3 (3 completed, 0 errored); complete" in out
    note = get_benchmark("space10").mode("space10-lmms-eval").headline_note
    assert f"note: {note}" in out.splitlines()  # one line under the headline, saying why it reads 0
    run_dir = tmp_path / "space10" / "answer-key-space10-lmms-eval"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (
        summary["judge"]["judge_assisted_single_answer_overall"] == 100.0 and summary["headline_note"] == note
    )
    assert (
        f"Why this headline differs from the project's: {note}"
        in (run_dir / "summary.md").read_text().splitlines()
    )
    assert static_main([*args[:6], "--answer-key-error-rate", "2", "--output", str(tmp_path)]) == 2
    assert "--answer-key-error-rate must be in [0, 1]" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------------
# Generation budgets


@pytest.mark.parametrize(
    ("bench", "published"), [("space10", 256), ("spatialtree", 16000), ("multihopspatial", 512)]
)
def test_static_budget_reaches_the_backend(data, tmp_path, bench, published):
    result = oracle_run(data, tmp_path / "default", bench, "project", None)
    manifest = json.loads((result.out_dir / "manifest.json").read_text())
    assert manifest["max_new_tokens"] == manifest["backend"]["config"]["max_new_tokens"] == published
    result = oracle_run(data, tmp_path / "one", bench, "project", None, max_new_tokens=1)
    manifest = json.loads((result.out_dir / "manifest.json").read_text())
    assert manifest["max_new_tokens"] == manifest["backend"]["config"]["max_new_tokens"] == 1
    if bench == "multihopspatial":  # one token of "Answer: (a) fork ..." is no answer: the budget really cuts
        assert all(r["response"] == "Answer:" for r in result.records)
        assert result.summary["counts"]["parse_failures"] == len(result.records)


def test_closed_loop_config_passes_the_budget():
    from policies.mllm.config import MLLMPolicyConfig, build_mllm_policy

    policy = build_mllm_policy(
        MLLMPolicyConfig(model="answer-key", loop="eb", task="navigation", max_new_tokens=77)
    )
    assert policy.backend.config.max_new_tokens == 77


# --------------------------------------------------------------------------------------------------------
# Failed items and answers the scorer cannot handle


def test_static_errored_items_are_counted_and_fail_the_command(data, tmp_path, monkeypatch, capsys):
    spec = get_benchmark("multihopspatial")
    items = spec.load(data["multihopspatial"], runner.LoadOptions())
    answers = {spec.build_prompt(item, "paper").text: spec.gold_answer(item, "paper") for item in items}

    # a model that answers right, except that its server fails on one item
    def make(config, budget, **kwargs):
        return H.ScriptedBackend(lambda text: answers[text], fail_on=lambda n, text: "keyboard" in text)

    monkeypatch.setattr(runner, "build_backend", make)
    monkeypatch.setattr(RunConfig, "preflight", lambda self: None)  # model "m" is the scripted backend above
    args = [
        "--bench",
        "multihopspatial",
        "--data",
        str(data["multihopspatial"]),
        "--model",
        "m",
        "--output",
        str(tmp_path),
        "--no-plot",
    ]
    assert static_main(args) == 3
    out = capsys.readouterr()
    assert "items: 2 (1 completed, 1 errored)" in out.out and "incomplete" in out.err
    folder = tmp_path / "multihopspatial" / "m"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"].startswith("incomplete: 1 of 2 items errored")
    assert summary["headline"]["mcq_accuracy"] == 100.0  # over the completed item only
    assert json.loads((folder / "manifest.json").read_text())["status"] == "incomplete"
    assert "errored" in (folder / "summary.md").read_text()
    assert static_main([*args, "--run-name", "again", "--allow-errors"]) == 0


def test_static_answer_the_scorer_cannot_handle_scores_zero(data, tmp_path, monkeypatch):
    """A scorer that raises on one answer (``parse_number`` did on 1e400 before the parsers were bounded;
    here it is made to again): the item scores 0 and the others are scored."""
    from benchmarks.static import spatialscore

    real = spatialscore.parse_number

    def parse_number(text, *args, **kwargs):
        if "1e400" in str(text):
            raise OverflowError("int too large to convert to float")
        return real(text, *args, **kwargs)

    monkeypatch.setattr(spatialscore, "parse_number", parse_number)
    backend = H.ScriptedBackend(lambda text: "Roughly 1e400 m" if "distance" in text else "(A)")
    result = run(
        RunConfig(bench="spatialscore", data=data["spatialscore"], output=tmp_path, model="fake", plot=False),
        backend=backend,
    )
    broken = [r for r in result.records if r.get("scoring_error")]
    assert len(broken) == 1 and broken[0]["score"] == 0.0 and "OverflowError" in broken[0]["scoring_error"]
    assert broken[0]["parse"]["method"] == "scoring_error"
    assert result.summary["counts"]["scoring_errors"] == 1 and result.summary["status"] == "complete"
    assert all(r["score"] is not None for r in result.records)


# --------------------------------------------------------------------------------------------------------
# Goal-image predict


@pytest.fixture(scope="module")
def goal_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("goal-oracle") / "data"
    generate_dataset(WallPairSource("nav"), 6, 3, root)
    manip = WallPairSource("manip")
    with DatasetWriter(root, append=True) as writer:
        for i in range(4):
            pair = manip.sample(np.random.default_rng([5, i]))
            record = {
                "id": f"manip-{i}",
                "kind": "manip",
                "instruction": "Grasp it.",
                "plan": pair.plan.to_json(),
                "step_sizes": {"translation": 0.05, "rotation": 0.1},
                "trajectory": pair.trajectory.tolist(),
            }
            writer.add(record, pair.start_image, pair.goal_image)
    return root


def goal_score(
    goal_dir: Path, predictions: Path, out: Path, scorer: str = "paper", *extra: str
) -> tuple[int, dict]:
    code = goal_main(
        [
            "score",
            "--dataset",
            str(goal_dir),
            "--predictions",
            str(predictions),
            "--scorer",
            scorer,
            "--output",
            str(out),
            "--no-baselines",
            *extra,
        ]
    )
    return code, json.loads((out / "summary.json").read_text())


def test_goal_predict_oracle_scores_one_with_the_paper_scorer(goal_dir, tmp_path):
    assert (
        goal_main(
            ["predict", "--dataset", str(goal_dir), "--model", "answer-key", "--output", str(tmp_path / "p")]
        )
        == 0
    )
    manifest = json.loads((tmp_path / "p" / "manifest.json").read_text())
    assert manifest["max_new_tokens"] == manifest["model"]["config"]["max_new_tokens"] == 16000
    code, paper = goal_score(goal_dir, tmp_path / "p" / "predictions.jsonl", tmp_path / "paper")
    assert (
        code == 0
        and paper["mean_score"] == 1.0
        and paper["parse_failures"] == 0
        and paper["status"] == "complete"
    )
    code, lmms = goal_score(goal_dir, tmp_path / "p" / "predictions.jsonl", tmp_path / "lmms", "lmms-eval")
    # its documented ceiling
    assert code == 0 and lmms["parse_failures"] == 0 and 0.0 < lmms["mean_score"] < 1.0
    assert (
        goal_main(
            [
                "predict",
                "--dataset",
                str(goal_dir),
                "--model",
                "answer-key",
                "--max-new-tokens",
                "2",
                "--output",
                str(tmp_path / "short"),
            ]
        )
        == 0
    )
    assert json.loads((tmp_path / "short" / "manifest.json").read_text())["max_new_tokens"] == 2
    code, short = goal_score(goal_dir, tmp_path / "short" / "predictions.jsonl", tmp_path / "short-paper")
    # two tokens of a JSON plan are no plan: the budget cuts
    assert short["parse_failures"] == short["n"] == 10


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_goal_parse_failures_equal_injected_unusable(goal_dir, tmp_path, seed):
    assert (
        goal_main(
            [
                "predict",
                "--dataset",
                str(goal_dir),
                "--model",
                "answer-key",
                "--answer-key-error-rate",
                "0.5",
                "--answer-key-error-seed",
                str(seed),
                "--output",
                str(tmp_path / "p"),
            ]
        )
        == 0
    )
    records = [json.loads(line) for line in (tmp_path / "p" / "predictions.jsonl").read_text().splitlines()]
    unusable = sum(1 for r in records if expected_effect(r.get("injected_error")) == "unusable")
    code, summary = goal_score(goal_dir, tmp_path / "p" / "predictions.jsonl", tmp_path / "s")
    assert code == 0 and summary["parse_failures"] == summary.get("injected_unusable", 0) == unusable
    assert summary["mean_score_parsed"] == 1.0 or summary["parse_failures"] == summary["n"]


def test_goal_errored_samples_are_counted_and_fail_the_command(goal_dir, tmp_path, capsys):
    from benchmarks.goal_scoring.cli import IncompleteRun, run_predict
    from benchmarks.goal_scoring.config import PredictConfig
    from benchmarks.goal_scoring.dataset import load_dataset
    from benchmarks.goal_scoring.predict import gold_conversations
    from policies.backends.answer_key import AnswerKey, AnswerKeyBackend

    class Flaky(AnswerKeyBackend):
        def generate(self, messages):
            if "Grasp" in json.dumps(messages[-1]["content"][-1]):
                raise ConnectionError("server went away")
            return super().generate(messages)

    with pytest.raises(IncompleteRun, match="4 of 10 samples errored"):
        run_predict(
            PredictConfig(goal_dir, tmp_path / "p", model="answer-key"),
            backend=Flaky(truth=AnswerKey(gold_conversations(load_dataset(goal_dir)))),
        )
    records = [json.loads(line) for line in (tmp_path / "p" / "predictions.jsonl").read_text().splitlines()]
    assert sum(1 for r in records if r["output"] is None and "ConnectionError" in r["error"]) == 4
    code, summary = goal_score(goal_dir, tmp_path / "p" / "predictions.jsonl", tmp_path / "s")
    assert code == 3 and "4 of 10 samples have no answer" in capsys.readouterr().err
    assert summary["errored"] == 4 and summary["n"] == 6 and summary["mean_score"] == 1.0
    assert summary["status"].startswith("incomplete: 4 of 10 samples errored")
    assert "| 4 |" in (tmp_path / "s" / "summary.md").read_text()
    code, _ = goal_score(
        goal_dir, tmp_path / "p" / "predictions.jsonl", tmp_path / "s2", "paper", "--allow-errors"
    )
    assert code == 0


def test_goal_scoring_survives_an_answer_the_scorer_cannot_handle(goal_dir, tmp_path, monkeypatch):
    """A scorer that raises on one answer (a 401-digit number did before the parsers were bounded; here the
    scorer is made to raise on it again): that sample scores 0 with the error and every other one is scored."""
    from benchmarks.goal_scoring import report
    from benchmarks.goal_scoring.dataset import load_dataset
    from benchmarks.scoring import goal

    real_get_scorer = report.get_scorer

    def get_scorer(*args, **kwargs):
        batch = real_get_scorer(*args, **kwargs)

        def score(answers, refs):
            if any("0" * 400 in a for a in answers):
                raise OverflowError("int too large to convert to float")
            return batch(answers, refs)

        return score

    monkeypatch.setattr(report, "get_scorer", get_scorer)

    dataset = load_dataset(goal_dir)
    records = [{"id": s.id, "output": goal.render_answer(s.plan, s.kind)} for s in dataset]
    records[3]["output"] = '{"executable_plan": [{"action": [1' + "0" * 400 + ", 0, 0, 0, 0, 0, 1]}]}"
    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    code, summary = goal_score(goal_dir, path, tmp_path / "s")
    assert code == 0 and summary["parse_failures"] == 1 and summary["failure_reasons"] == {"scoring_error": 1}
    rows = [json.loads(line) for line in (tmp_path / "s" / "records.jsonl").read_text().splitlines()]
    assert rows[3]["value"] == 0.0 and "OverflowError" in rows[3]["parse_errors"][0]
    assert all(r["value"] == 1.0 for i, r in enumerate(rows) if i != 3)
