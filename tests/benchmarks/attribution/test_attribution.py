"""State probes and perception-vs-action attribution (``--probe``) on EB navigation, proven with stand-ins:
action errors alone are attributed to action, probe errors to perception, a blind model to both."""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest

from benchmarks.attribution import ProbeSchedule, attribution_table, probe_lines
from benchmarks.attribution.navigation import PROBES, nav_questions
from benchmarks.attribution.prober import Prober
from benchmarks.attribution.questions import ProbeBook, ask
from benchmarks.core import RunDir, comparable
from benchmarks.embodied import main
from policies.backends.injection import ERROR_KINDS
from policies.backends.scripted import ScriptedBackend

MLLM = ["--policy", "mllm", "--model", "answer-key"]


def run(tmp_path, name, *args):
    summary = main(
        [
            "nav",
            "--output",
            str(tmp_path),
            "--no-progress",
            "--image-size",
            "64",
            "--run-name",
            name,
            *MLLM,
            *args,
        ]
    )
    out = RunDir(tmp_path / "embodied-nav" / name)
    return summary, out


def state(x, y, heading, target_xy, pixels=0):
    return {
        "agent": {"x": x, "y": y, "heading_deg": heading, "pitch_deg": 0.0, "roll_deg": 0.0, "height": 1.5},
        "target": {"colour": "red", "category": "coffee_mug", "position": [*target_xy, 0.8]},
        "target_pixels": pixels,
        "success_distance": 1.0,
    }


def by_kind(questions):
    return {q.kind: q for q in questions}


# ---------------------------------------------------------------------------- schedule and questions


def test_the_schedule_parses_its_three_forms_and_refuses_others():
    assert ProbeSchedule.parse("decisions") == ProbeSchedule("decisions")
    every = ProbeSchedule.parse("every:3")
    assert [every.keeps(i) for i in range(5)] == [True, False, False, True, False]
    failures = ProbeSchedule.parse("failures")
    assert failures.asks(False) and not failures.asks(True) and ProbeSchedule("decisions").asks(True)
    for bad in ("every:0", "every:", "every:x", "sometimes", ""):
        with pytest.raises(ValueError, match="--probe"):
            ProbeSchedule.parse(bad)


def test_navigation_questions_answer_from_the_state_not_the_instruction():
    rng = np.random.default_rng(0)
    ahead = by_kind(nav_questions(state(0, 0, 0, (2.5, 0.2), pixels=400), rng))
    q = ahead["target_direction"]
    assert "the red coffee mug" in q.text and q.options[ord(q.key) - 65] == "ahead"
    assert (
        ahead["target_distance"].key.value == pytest.approx(2.51) and ahead["target_distance"].key.unit == "m"
    )
    assert (ahead["target_visible"].key, ahead["target_reached"].key) == ("yes", "no")
    assert ahead["turn_to_face"].options[ord(ahead["turn_to_face"].key) - 65] == "no turn needed"
    # heading 90 (facing +y): a target at -x is to the left; 0.6 m away: reached; no pixels: not visible
    left = by_kind(nav_questions(state(0, 0, 90, (-0.6, 0.0)), rng))
    assert left["target_direction"].options[ord(left["target_direction"].key) - 65] == "to the left"
    assert left["turn_to_face"].options[ord(left["turn_to_face"].key) - 65] == "turn left"
    assert (left["target_visible"].key, left["target_reached"].key) == ("no", "yes")
    # too close to call: a bearing on a sector edge, a distance on the radius, a few pixels
    edge = by_kind(nav_questions(state(0, 0, 0, (math_cos(31), math_sin(31)), pixels=5), rng))
    assert "target_direction" not in edge and "target_reached" not in edge and "target_visible" not in edge


def test_the_target_box_is_the_targets_pixels_in_the_entity_mask():
    import gymnasium as gym

    import envs  # noqa: F401  (registers the envs)
    from benchmarks.attribution.navigation import nav_state
    from benchmarks.datagen.corpus_format import box_1000

    env = gym.make("SpatialArena/EBNavigation-RGBD-v0", width=64, height=64)
    try:
        for seed in range(20):  # the first start that shows the target
            obs, info = env.reset(seed=seed)
            target = obs["object_ids"] == info["mask_labels"].index(env.unwrapped.target["id"])
            if target.sum() >= 30:
                break
        got = nav_state(env)["target_box_1000"]
        assert got == box_1000(target) and got is not None  # the segmentation pass's own pixels
        (question,) = [
            q for q in nav_questions(nav_state(env), np.random.default_rng(0)) if q.kind == "target_box"
        ]
        assert question.key == tuple(got) and target_name_of(env) in question.text
    finally:
        env.close()


def target_name_of(env):
    from benchmarks.attribution.navigation import target_name

    return target_name(env.unwrapped.target)


def test_a_box_probe_is_sent_as_the_corpus_asks_and_scored_by_iou():
    questions = nav_questions(
        {**state(0, 0, 0, (2.5, 0.2), pixels=400), "target_box_1000": [0, 100, 300, 400]},
        np.random.default_rng(0),
    )
    (box,) = [q for q in questions if q.kind == "target_box"]
    book, image = ProbeBook(), np.zeros((8, 8, 3), np.uint8)
    asked = ScriptedBackend(book)
    line = ask(asked, box, [image], book, "0")
    assert (line["gold"], line["score"], line["right"], line["scorer"]) == (
        "Bounding Box: [0, 100, 300, 400]",
        1.0,
        True,
        "box_iou",
    )
    ((message,),) = asked.calls
    assert message["content"][1]["text"].startswith(
        "Locate the red coffee mug in the image. Give its bounding box"
    )
    wrong = ERROR_KINDS["wrong_answer"][0]
    corrupted = ask(
        ScriptedBackend(lambda m: wrong(book(m), np.random.default_rng(0))), box, [image], None, "1"
    )
    assert corrupted["score"] < 0.2 and not corrupted["right"]  # (a box on the left edge keeps some overlap)
    half = ask(ScriptedBackend(lambda m: "Bounding Box: [0, 100, 150, 400]"), box, [image], None, "2")
    assert half["score"] == pytest.approx(0.5) and half["right"]  # IoU 0.5: Acc@50IoU


def math_cos(deg):
    return float(np.cos(np.radians(deg)))


def math_sin(deg):
    return float(np.sin(np.radians(deg)))


def test_probes_are_scored_by_spatialscores_scorer_and_the_book_answers_them():
    questions = nav_questions(state(0, 0, 0, (3.0, -3.0), pixels=0), np.random.default_rng(1))
    image = np.zeros((8, 8, 3), np.uint8)
    book = ProbeBook()
    perfect = [ask(ScriptedBackend(book), q, [image], book, str(i)) for i, q in enumerate(questions)]
    assert [line["score"] for line in perfect] == [1.0] * len(questions)
    distance = next(line for line in perfect if line["kind"] == "target_distance")
    assert distance["gold"] == "\\scalar{4.24} \\distance_unit{m}" and distance["scorer"] == "mra"
    asked = ScriptedBackend(book)
    ask(asked, questions[1], [image], book, "again")
    ((message,),) = asked.calls
    assert message["content"][0]["image"] is image  # the decision's own image, in SpatialScore's prompt
    assert message["content"][1]["text"].startswith(
        "Please answer the question by measuring the precise distance"
    )
    wrong = ERROR_KINDS["wrong_answer"][0]
    rng = np.random.default_rng(0)
    corrupted = [
        ask(ScriptedBackend(lambda m, b=book: wrong(b(m), rng)), q, [image], None, str(i))
        for i, q in enumerate(questions)
    ]
    assert [line["score"] for line in corrupted] == [0.0] * len(questions)


def test_wrong_answer_keeps_the_format_and_changes_the_answer():
    wrong, rng = ERROR_KINDS["wrong_answer"][0], np.random.default_rng(0)
    assert re.fullmatch(r"\([ACD]\)", wrong("(B)", rng))
    assert wrong("yes", rng) == "no" and wrong("No", rng) == "Yes"
    scaled = float(re.search(r"[\d.]+", wrong("\\scalar{2.0} \\distance_unit{m}", rng)).group(0))
    assert 5.0 <= scaled <= 8.0
    assert wrong("", rng) == ERROR_KINDS["refusal"][0]("", rng)


# ---------------------------------------------------------------------------- closed loop


def test_probes_leave_the_episode_records_unchanged(tmp_path):
    args = ["--episodes", "4", "--subset", "base,long_horizon", "--answer-key-error-rate", "0.5"]
    _, off = run(tmp_path, "off", *args)
    summary, on = run(tmp_path, "on", *args, "--probe", "decisions")
    assert [comparable(r) for r in on.merged_records()] == [comparable(r) for r in off.merged_records()]
    policy_calls = [d for d in on.load_decisions() if "probe" not in d]
    assert policy_calls == off.load_decisions()
    lines = probe_lines(on.load_decisions())
    assert lines and {d["kind"] for d in lines} >= {"target_direction", "target_distance", "turn_to_face"}
    costs = summary.data["attribution"]["costs"]
    assert costs["probe_calls"] == len(lines) and costs["decisions_probed"] >= 8
    assert "## Attribution (state probes, `--probe decisions`)" in summary.markdown


def _expected_misperceived(lines, rate):
    """The share of decisions whose mean probe score is below one half when each probe is wrong (score 0)
    with ``rate``: a binomial tail per decision's number of probes."""
    from math import comb

    counts = Counter((line["key"], line["decision"]) for line in lines)
    tails = [
        sum(comb(n, k) * rate**k * (1 - rate) ** (n - k) for k in range(n + 1) if (n - k) / n < 0.5)
        for n in counts.values()
    ]
    return float(np.mean(tails))


def test_action_errors_alone_are_attributed_to_action(tmp_path):
    summary, out = run(
        tmp_path,
        "act",
        "--episodes",
        "8",
        "--subset",
        "base",
        "--answer-key-error-rate",
        "0.8",
        "--probe",
        "failures",
    )
    group = summary.data["attribution"]["groups"]["all"]
    assert group["failed_decisions"] >= 5  # the injected action errors made episodes fail
    assert group["probe_accuracy_failures"]["estimate"] == 1.0
    share = group["perceived_acted_wrongly"]
    assert share["estimate"] == 1.0 and share["ci"][0] < 1.0 <= share["ci"][1]
    assert all(not line["success"] for line in probe_lines(out.load_decisions()))  # failures only


def test_probe_errors_alone_are_attributed_to_perception(tmp_path):
    rate = 0.3
    args = ["--episodes", "10", "--subset", "base", "--probe", "decisions"]
    summary, out = run(tmp_path, "see", *args, "--answer-key-probe-error-rate", str(rate))
    group = summary.data["attribution"]["groups"]["all"]
    assert group["success_rate"]["estimate"] == 1.0 and group["failed_decisions"] == 0  # actions untouched
    lines = probe_lines(out.load_decisions())
    accuracy = group["probe_accuracy_successes"]
    assert accuracy["ci"][0] <= 1 - rate <= accuracy["ci"][1]
    low, high = group["misperceived_all"]["ci"]
    assert group["misperceived_all"]["estimate"] > 0 and low <= _expected_misperceived(lines, rate) <= high
    injected = sum(line["injected_error"] == "wrong_answer" for line in lines)
    assert injected == sum(not line["right"] for line in lines) > 0  # each injected answer scored wrong


def test_both_errors_split_failed_decisions_as_injected(tmp_path):
    rate = 0.4
    args = ["--episodes", "10", "--subset", "base", "--probe", "failures", "--answer-key-error-rate", "0.8"]
    summary, out = run(tmp_path, "both", *args, "--answer-key-probe-error-rate", str(rate))
    group = summary.data["attribution"]["groups"]["all"]
    low, high = group["misperceived"]["ci"]
    assert 0 < group["misperceived"]["estimate"] < 1
    assert (
        group["failed_decisions"] >= 5
        and low <= _expected_misperceived(probe_lines(out.load_decisions()), rate) <= high
    )


def blind_model(seed=0):
    """A model that cannot see: it reads the prompt, never the image, and guesses (sampling: each call draws
    afresh from a seeded generator, so its guesses are independent)."""
    rng = np.random.default_rng(seed)

    def answer(messages):
        text = messages[-1]["content"][-1]["text"] if isinstance(messages[-1]["content"], list) else ""
        if "'yes' or 'no'" in text:
            return str(rng.choice(["yes", "no"]))
        if "capital letter" in text:
            return f"({rng.choice(re.findall(r'^[(]([A-D])[)]', text, re.MULTILINE))})"
        if "distance_unit" in text:
            return "\\scalar{0} \\distance_unit{m}"
        action = int(rng.integers(8))
        return json.dumps({"executable_plan": [{"action_id": action, "action_name": "x"}]})

    return ScriptedBackend(answer)


def _chance(line):
    if line["answer_type"] == "mcq":
        return 1 / len(re.findall(r"^\([A-D]\)", line["question"], re.MULTILINE))
    return 0.5 if line["answer_type"] == "judgment" else 0.0


def test_a_blind_model_is_attributed_to_both():
    """Blind: it fails to act and its probe accuracy is near chance, far below a sighted model's, so its failed
    decisions are mostly misperceived and the few it got right by luck "perceived, acted wrongly"."""
    import gymnasium as gym

    import envs  # noqa: F401  (registers the ids)
    from benchmarks.embodied.navigation import run_episode
    from envs.navigation.episodes import make_episode_set
    from policies.mllm.config import MLLMPolicyConfig, build_mllm_policy

    env = gym.make("SpatialArena/EBNavigation-v0", width=48, height=48)
    config = MLLMPolicyConfig(model="blind", loop="eb", task="navigation", image_keys=("rgb",))
    policy = build_mllm_policy(config, backend=blind_model())
    policy.bind(env)
    prober = Prober(ProbeSchedule("every", 3), PROBES, env, policy, policy.backend)
    records, lines = [], []
    for i, episode in enumerate(make_episode_set("long_horizon", n=6, seed=0)):
        record = run_episode(env, policy, episode, seed=i, on_decision=prober.start(i))
        records.append({"key": f"e{i}", "result": record})
        lines += [{"key": f"e{i}", **line} for line in prober.finish(record["success"])]
    env.close()
    group = attribution_table(records, lines)["groups"]["all"]
    assert group["success_rate"]["estimate"] <= 0.5
    accuracy = group["probe_accuracy_failures"]
    chance = float(np.mean([_chance(line) for line in lines if not line["success"]]))
    assert abs(accuracy["estimate"] - chance) < 0.1 and accuracy["ci"][1] < 0.6
    assert group["misperceived"]["estimate"] > 0.5 and group["perceived_acted_wrongly"]["estimate"] > 0


@pytest.mark.slow
def test_a_real_model_answers_its_probes_through_its_own_backend(tmp_path, tiny_vlm):
    """A tiny random-weight VLM through transformers: the probes go to the policy's own backend (with its
    cache), their replies are scored (wrong: random weights), and the episode's record is unchanged."""
    model = str(tiny_vlm("qwen2_5_vl"))
    args = ["nav", "--output", str(tmp_path), "--no-progress", "--image-size", "32", "--episodes", "1"]
    args += ["--subset", "base", "--policy", "mllm", "--model", model, "--max-new-tokens", "4"]
    main([*args, "--run-name", "off", "--cache-path", str(tmp_path / "off.sqlite")])
    summary = main(
        [*args, "--run-name", "on", "--probe", "every:10", "--cache-path", str(tmp_path / "on.sqlite")]
    )
    off, on = RunDir(tmp_path / "embodied-nav" / "off"), RunDir(tmp_path / "embodied-nav" / "on")
    assert [comparable(r) for r in on.merged_records()] == [comparable(r) for r in off.merged_records()]
    lines = probe_lines(on.load_decisions())
    (record,) = on.merged_records()
    decisions = int(record["result"]["policy_stats"]["model_calls"])
    assert {line["decision"] for line in lines} == set(range(0, decisions, 10)) and decisions >= 1
    assert all(isinstance(line["text"], str) and line["injected_error"] is None for line in lines)
    assert summary.data["attribution"]["costs"]["probe_calls"] == len(lines)


def _record(key, success, subset="base", subtasks=None):
    extras = {"subset": subset} if subtasks is None else {"subtasks": subtasks}
    result = {"success": success, "steps": 1, "policy_calls": 1, "idle_steps": 0, "extras": extras}
    return {"key": key, "status": "ok", "result": {**result, "policy_stats": {"model_calls": 2.0}}}


def test_the_attribution_table_by_hand():
    """Two failed episodes (decisions: one perceived, two misperceived), a success, and a CALVIN chain whose
    second subtask failed: counted per decision, per episode and per subtask."""

    def line(key, decision, score, **extra):
        return {"key": key, "probe": True, "decision": decision, "score": score, "kind": "k", **extra}

    lines = [line("a", 0, 1.0), line("a", 0, 0.5), line("a", 1, 0.0), line("b", 0, 0.0), line("b", 0, 1.0)]
    lines += [line("b", 0, 0.0), line("c", 0, 1.0)]
    subtask = {"success": True, "steps": 1, "policy_calls": 1, "idle_steps": 0, "policy_stats": {}}
    chain = [
        {**subtask, "extras": {"task": "open_drawer"}},
        {**subtask, "success": False, "extras": {"task": "x"}},
    ]
    lines += [line("d", 0, 1.0, subtask=0), line("d", 1, 0.0, subtask=1)]
    records = [
        _record("a", False),
        _record("b", False),
        _record("c", True),
        _record("d", False, subtasks=chain),
    ]
    table = attribution_table(records, lines)
    everything = table["groups"]["all"]
    assert everything["episodes"] == 5 and everything["failed_decisions"] == 4  # a: 2, b: 1, d#1: 1
    assert everything["perceived_acted_wrongly"]["estimate"] == 0.25  # a's decision 0 (mean 0.75)
    assert table["groups"]["open_drawer"]["probe_accuracy_successes"]["estimate"] == 1.0
    assert table["groups"]["x"]["misperceived"]["estimate"] == 1.0
    assert [(f["key"], f["perceived_acted_wrongly"], f["misperceived"]) for f in table["failures"]] == [
        ("a", 1, 1),
        ("b", 0, 1),
        ("d#1", 0, 1),
    ]
    assert table["costs"]["probe_calls"] == 9 and table["costs"]["decisions_probed"] == 6
    # one failed decision says little: Wilson's interval, not a certain 100 %
    assert table["groups"]["x"]["misperceived"]["ci"][0] < 0.5
    # two decisions of one episode, both perceived: Wilson over the one episode, not a zero-width interval
    same = attribution_table([_record("e", False)], [line("e", 0, 1.0), line("e", 1, 1.0)])["groups"]["all"]
    assert (
        same["perceived_acted_wrongly"]["estimate"] == 1.0 and same["perceived_acted_wrongly"]["ci"][0] < 0.5
    )


def test_a_share_from_one_episode_names_its_n_instead_of_an_interval() -> None:
    from benchmarks.attribution.report import _pct

    assert _pct({"estimate": 5 / 6, "ci": None, "n": 6}) == "83.3 (n = 6, no interval)"
    assert _pct({"estimate": 0.5, "ci": (0.2, 0.8), "n": 10}) == "50.0 [20.0, 80.0]"
