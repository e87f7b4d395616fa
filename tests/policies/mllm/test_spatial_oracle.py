"""The SpatialTree plan loop on CALVIN driven by a competent model: the oracle backend (privileged expert as
primitives), injected model errors counted exactly, a scripted model's plan, and an OpenAI-compatible
server on 127.0.0.1. Each closed-loop test runs one short single-subtask episode (``--tasks``)."""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import gymnasium as gym
import numpy as np
import pytest

from action_mapping import ExecutablePlan, StepSizes, render_manipulation_prompt
from benchmarks.calvin import main, parse_tasks, task_episodes
from benchmarks.core import RunDir
from envs.calvin.env import PLAN_STEP_SIZES
from policies.backends.injection import ERROR_KINDS
from policies.backends.scripted import ScriptedBackend
from policies.base import EpisodeContext
from policies.mllm.answer_key_spatial import CalvinPlanSource, read_prompt_format
from policies.mllm.spatial import SpatialPlanPolicy

pytest.importorskip("pybullet")

TASK = "turn_on_led"  # one of the easiest subtasks; its first evaluation chain is chain 0013


@pytest.fixture(scope="module")
def env():
    from envs.calvin import make_env

    made = make_env("builtin", cameras=("static",))
    yield made
    made.close()


def run_task(env, policy, task=TASK, ep_len=360):
    """One single-subtask episode from the first evaluation chain that starts with ``task``."""
    from benchmarks.calvin.chain import run_chain
    from envs.calvin import initial_env_state
    from envs.calvin.instructions import instruction_for

    ((_, state, tasks),) = task_episodes([task], 1)
    robot_obs, scene_obs = initial_env_state(state)
    return run_chain(
        env, policy, robot_obs, scene_obs, list(tasks), [instruction_for(t) for t in tasks], ep_len=ep_len
    )


def cli(tmp_path, *args):
    return main(["--output", str(tmp_path), "--no-progress", "--tasks", TASK, "--num-sequences", "1", *args])


# ------------------------------------------------------------------------------------- units (item 3)


def test_a_parseable_plan_runs_on_calvin_in_the_envs_units(env):
    """Regression (issue 16): any parseable plan killed the chain ("motion primitives but no step sizes")."""
    answer = '{"step_1": {"actions": ["W"], "step_nums": [5], "gripper": 0}}'
    backend = ScriptedBackend(lambda messages: answer)
    policy = SpatialPlanPolicy(backend)
    policy.bind(env)
    assert policy.step_sizes == PLAN_STEP_SIZES == env.unwrapped.plan_step_sizes
    from benchmarks.calvin.chain import run_chain
    from envs.calvin import initial_env_state

    ((_, state, _),) = task_episodes([TASK], 1)
    robot_obs, scene_obs = initial_env_state(state)
    env.reset(options={"robot_obs": robot_obs, "scene_obs": scene_obs})
    start_target = np.array(env.unwrapped.target_pose()[0])
    result = run_chain(env, policy, robot_obs, scene_obs, [TASK], ["press the button"], ep_len=3)
    subtask = result["extras"]["subtasks"][0]
    # 5 counts x 0.01 m = 5 cm, more than one relative action (2 cm): three equal actions, all executed
    assert subtask["steps"] == 3 and subtask["idle_steps"] == 0
    assert subtask["policy_stats"]["model_calls"] == 1 and subtask["policy_stats"]["parse_errors"] == 0
    moved = np.linalg.norm(np.array(env.unwrapped.target_pose()[0]) - start_target)
    assert moved == pytest.approx(0.05, abs=1e-6)
    system = backend.calls[0][0]["content"]
    assert system == render_manipulation_prompt(PLAN_STEP_SIZES, 6, 10, goal="instruction")
    assert "0.01 m per step" in system


def test_bind_keeps_sizes_the_user_set(env):
    mine = StepSizes(0.02, 0.05)
    policy = SpatialPlanPolicy(ScriptedBackend([]), step_sizes=mine)
    policy.bind(env)
    assert policy.step_sizes == mine
    from policies.registry import build_policy

    with pytest.raises(ValueError, match="set both --translation-step and --rotation-step"):
        build_policy("mllm", model="answer-key", translation_step=0.02)


def test_the_oracle_reads_the_prompts_format(env):
    sizes = StepSizes(0.02, 0.1)
    messages = [
        {"role": "system", "content": render_manipulation_prompt(sizes, 4, 7, goal="instruction")},
        {"role": "user", "content": [{"type": "text", "text": "Instruction: x"}]},
    ]
    fmt = read_prompt_format(messages)
    assert (fmt.sizes, fmt.max_steps, fmt.max_step_num) == (sizes, 4, 7)
    with pytest.raises(ValueError, match="without a SpatialTree plan prompt"):
        read_prompt_format([{"role": "system", "content": "Answer A or B."}])
    source = CalvinPlanSource(env)
    ((_, state, _),) = task_episodes(["open_drawer"], 1)
    from envs.calvin import initial_env_state

    env.reset(options=dict(zip(("robot_obs", "scene_obs"), initial_env_state(state))))
    env.unwrapped.begin_subtask("open_drawer")
    source.reset(EpisodeContext("open the drawer", 0, extras={"task": "open_drawer"}))
    plan = json.loads(source.answer(messages))
    assert 1 <= len(plan) <= 4
    for step in plan.values():
        assert all(1 <= n <= 7 for n in step["step_nums"]) and step["gripper"] in (0, 1)


class ToyEnv(gym.Env):
    """An env of a family with no plan source until a test registers one."""


class ToySource:
    def __init__(self, env):
        self.env = env

    def reset(self, context):
        pass

    def answer(self, messages):
        return "{}"


def test_plan_sources_are_registered_per_env_class(env, monkeypatch):
    """The stand-in asks the registry for the bound env's plan source: CALVIN's play-table gets CALVIN's, a
    family registers its own under its env class (subclasses match), an env with none is refused in one line,
    and a registered class whose module is not imported is never imported to look."""
    from policies.mllm import answer_key_spatial as plans

    monkeypatch.setattr(plans, "PLAN_SOURCES", dict(plans.PLAN_SOURCES))
    assert isinstance(plans.plan_source_for(env), CalvinPlanSource)
    with pytest.raises(
        ValueError, match=r"no plan source for ToyEnv .*registered: PlayTableInterface, LiberoEnv"
    ):
        plans.plan_source_for(ToyEnv())
    plans.register_plan_source("no_such_family.env:NoSuchEnv")(ToySource)
    plans.register_plan_source(f"{ToyEnv.__module__}:ToyEnv")(ToySource)
    source = plans.plan_source_for(type("SubEnv", (ToyEnv,), {})())
    assert isinstance(source, ToySource) and "no_such_family.env" not in sys.modules
    with pytest.raises(ValueError, match="already registered"):
        plans.register_plan_source(f"{ToyEnv.__module__}:ToyEnv")(ToySource)


# ------------------------------------------------------------------------- oracle matrix (items 1, 2)


def test_oracle_solves_the_task_where_random_does_not(tmp_path):
    summary = cli(tmp_path, "--policy", "mllm", "--model", "answer-key", "--cameras", "static")
    (record,) = RunDir(tmp_path / "calvin" / "mllm-answer-key").merged_records()
    subtask = record["result"]["extras"]["subtasks"][0]
    assert record["key"] == "chain-0013" and subtask["extras"]["task"] == TASK and subtask["success"]
    stats = subtask["policy_stats"]
    assert stats["parse_errors"] == stats["injected_errors"] == 0 and stats["model_calls"] >= 1
    assert summary.data["chain_sr"] == {"1": 1.0} and summary.data["model_calls"]["parse_errors"] == 0
    blind = cli(tmp_path, "--policy", "random", "--cameras", "none")
    assert blind.data["chain_sr"]["1"] == 0.0  # the blind baseline on the same episode


def test_injected_errors_are_counted_exactly(tmp_path):
    # Which kind each answer gets is drawn from the conversation, rendered image included, so a given seed
    # may inject no prose at all (about 1 run in 10 at 8 injections): the counting is checked on every run,
    # and the first run that injects both kinds shows prose being executed.
    for seed in range(2, 8):
        out = tmp_path / f"seed-{seed}"
        summary = cli(
            out,
            "--policy",
            "mllm",
            "--model",
            "answer-key",
            "--cameras",
            "static",
            "--answer-key-error-rate",
            "0.5",
            "--answer-key-error-seed",
            str(seed),
        )
        (record,) = RunDir(out / "calvin" / "mllm-answer-key").merged_records()
        subtask = record["result"]["extras"]["subtasks"][0]
        stats = subtask["policy_stats"]
        # every "unusable" injection is one parse error, and nothing else is; the "usable" kind (prose) parses
        assert (
            stats["parse_errors"] == stats["injected_unusable"]
            and stats["fallbacks"] == stats["parse_errors"]
        )
        # the oracle recovers: a failed answer costs one held step, then it asks again
        assert subtask["success"]
        totals = summary.data["model_calls"]
        assert totals["parse_errors"] == totals["injected_unusable"] == stats["injected_unusable"]
        assert "injected errors" in (out / "calvin" / "mllm-answer-key" / "summary.md").read_text()
        if stats["injected_unusable"] >= 1 and stats["injected_errors"] > stats["injected_unusable"]:
            return  # some prose was injected, parsed and executed
    pytest.fail("no seed in 2-7 injected both unusable answers and prose")


def test_each_error_kind_has_the_effect_it_declares():
    """The corruptions applied to a real oracle answer, through the spatial policy's parser."""
    answer = (
        '{"step_1": {"actions": ["W", "→"], "step_nums": [3, 1], "gripper": 0}, '
        '"step_2": {"actions": ["STOP"], "step_nums": [1], "gripper": 1}}'
    )
    for kind, (corrupt, effect) in ERROR_KINDS.items():
        policy = SpatialPlanPolicy(ScriptedBackend([corrupt(answer, np.random.default_rng(0))]))
        policy.reset(EpisodeContext("x", 0))
        action = policy.act({"rgb": np.zeros((8, 8, 3), np.uint8)})
        assert policy.episode_stats()["parse_errors"] == (effect == "unusable"), kind
        assert isinstance(action, ExecutablePlan) == (effect == "usable"), kind


# ---------------------------------------------------------------------------- the HTTP route (Tests)


class PlanServer:
    """An OpenAI-compatible chat-completions stub on 127.0.0.1 that answers with the expert's plan."""

    def __init__(self, env):
        self.source, self.instruction, self.requests = CalvinPlanSource(env), None, 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                payload = json.dumps(
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": server.answer(body)},
                                "finish_reason": "stop",
                            }
                        ],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def answer(self, body):
        self.requests += 1
        text = [p["text"] for p in body["messages"][-1]["content"] if p.get("type") == "text"][-1]
        instruction = text.splitlines()[0].removeprefix("Instruction: ")
        if instruction != self.instruction:  # a new subtask: the expert starts over
            self.instruction = instruction
            self.source.reset(EpisodeContext(instruction, 0))
        return self.source.answer(body["messages"])

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_calvin_task_through_an_openai_compatible_server(env):
    from policies.registry import build_policy

    server = PlanServer(env)
    try:
        policy = build_policy(
            "mllm", model="stub-planner", api_base=server.url, cache=False, timeout_s=10.0, max_retries=1
        )
        policy.bind(env)
        result = run_task(env, policy)
    finally:
        server.close()
    subtask = result["extras"]["subtasks"][0]
    assert subtask["success"] and subtask["policy_stats"]["parse_errors"] == 0
    assert server.requests == subtask["policy_stats"]["model_calls"] >= 1


def test_tasks_flag_selects_single_subtask_episodes():
    assert parse_tasks("open_drawer, turn_on_led,open_drawer") == ("open_drawer", "turn_on_led")
    episodes = task_episodes(["open_drawer"], 3)
    assert [tasks for _, _, tasks in episodes] == [("open_drawer",)] * 3
    assert [i for i, _, _ in episodes] == sorted(i for i, _, _ in episodes)
    with pytest.raises(ValueError, match=r"unknown CALVIN task; valid: .*open_drawer"):
        parse_tasks("open_drawr")
    with pytest.raises(ValueError, match="no evaluation chain starts with it"):
        parse_tasks("place_in_slider")
