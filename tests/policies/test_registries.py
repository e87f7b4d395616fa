"""Built-in policies come from the policy registry like any other, and make_backend dispatches through a
backend registry that a user extends."""

import sys
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from benchmarks.core.policy_cli import PolicySpec, build_policy_from_spec, parse_benchmark_args
from benchmarks.embodied import EmbodiedConfig
from policies import registry
from policies.backends import (
    Backend,
    Generation,
    GenerationConfig,
    Message,
    factory,
    make_backend,
    registered_backends,
)
from policies.backends.answer_key import AnswerKeyBackend
from policies.backends.cache import CachedBackend
from policies.backends.http_backend import HTTPBackend
from policies.baselines import ConstantPolicy
from policies.builtins import ExpertConfig, RandomConfig
from policies.config_cli import arg
from policies.experts.navigation import ShortestPathExpert
from policies.mllm.config import MLLMPolicyConfig
from policies.registry import policy_config_class, registered_policies


class EchoBackend(Backend):
    """A user's backend: answers with the last user text, upper-cased by ``shout``."""

    def __init__(self, model: str, *, config: GenerationConfig | None = None, shout: bool = False) -> None:
        self.model_id, self.config, self.shout = model, config or GenerationConfig(), shout

    def generate(self, messages: Sequence[Message]) -> Generation:
        text = str(messages[-1]["content"])
        return Generation(
            text=text.upper() if self.shout else text, prompt_tokens=None, completion_tokens=1, latency_s=0.0
        )


@pytest.fixture
def echo(monkeypatch):
    monkeypatch.setitem(factory._BACKENDS, "echo", f"{__name__}:EchoBackend")
    return "echo"


def test_builtin_policies_are_registered_with_their_configs():
    assert {"expert", "random", "replay", "constant", "mllm", "vla"} <= set(registered_policies())
    assert policy_config_class("expert") is ExpertConfig and policy_config_class("random") is RandomConfig


def test_vla_registers_through_the_entry_point_group_and_the_registry_names_no_higher_layer():
    """Issue 30: ``policies.registry`` named ``vla`` by string; now the package's metadata declares it."""
    import re
    from pathlib import Path

    from vla.policy import POLICY, VLAPolicyConfig

    root = Path(__file__).resolve().parents[2]
    declared = re.search(
        r'\[project\.entry-points\."spatial_arena\.policies"\]\n(.*?)(?:\n\[|\Z)',
        (root / "pyproject.toml").read_text(),
        re.S,
    )
    assert declared and 'vla = "vla.policy:POLICY"' in declared.group(1)
    assert isinstance(POLICY, registry.PolicyEntry) and POLICY.benchmarks == ("calvin", "libero")
    assert registry.load_entry_point(POLICY.config) is VLAPolicyConfig
    higher = [
        f"{path.relative_to(root)}: {line.strip()}"
        for path in (root / "policies").rglob("*.py")
        for line in path.read_text().splitlines()
        if re.search(r"""["'](vla|benchmarks)[.:]""", line)
    ]
    assert higher == []


def test_installed_packages_register_policies_through_the_entry_point_group(tmp_path, monkeypatch):
    """A package's ``spatial_arena.policies`` entry point, read from its installed metadata, is a policy;
    one that names anything but a PolicyEntry is an error naming the entry point."""
    dist = tmp_path / "holdpkg-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: holdpkg\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[{registry.ENTRY_POINT_GROUP}]\nhold-ep = holdpkg_entry:POLICY\n"
    )
    (tmp_path / "holdpkg_entry.py").write_text(
        "from policies.registry import PolicyEntry\n"
        f"POLICY = PolicyEntry('{__name__}:HoldConfig', '{__name__}:build_hold', ('embodied-nav',))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    registry.register_installed_policies.cache_clear()
    try:
        assert "hold-ep" in registry.registered_policies()
        assert registry.policy_benchmarks("hold-ep") == ("embodied-nav",)
        assert registry.build_policy("hold-ep", hold=4).value == 4
        (tmp_path / "holdpkg_entry.py").write_text("POLICY = 'holdpkg:HoldConfig'\n")
        monkeypatch.delitem(sys.modules, "holdpkg_entry")
        registry.register_installed_policies.cache_clear()
        with pytest.raises(TypeError, match=r"entry point hold-ep = .holdpkg_entry:POLICY. .*expected a"):
            registry.registered_policies()
    finally:
        registry.register_installed_policies.cache_clear()


@dataclass(frozen=True)
class HoldConfig:
    """A user's policy: hold one discrete action."""

    hold: int = arg(3, "the action to hold", minimum=0)


def build_hold(config: HoldConfig) -> ConstantPolicy:
    return ConstantPolicy(config.hold)


def test_a_users_registered_policy_gets_flags_and_is_listed_like_the_builtins(monkeypatch):
    from benchmarks.command import policy_names

    monkeypatch.setitem(
        registry._REGISTRY, "hold", registry.PolicyEntry(f"{__name__}:HoldConfig", f"{__name__}:build_hold")
    )
    assert "hold" in policy_names()
    _, spec = parse_benchmark_args(EmbodiedConfig, ["--policy", "hold", "--hold", "5"])
    assert spec.options == {"hold": 5} and spec.label == "hold" and not spec.blind
    assert build_policy_from_spec(spec).value == 5
    with pytest.raises(SystemExit):
        parse_benchmark_args(EmbodiedConfig, ["--policy", "hold", "--hold", "-1"])


def test_what_a_benchmark_knows_of_a_policy_comes_from_its_config():
    expert, oracle, model = (
        PolicySpec("expert", {}),
        PolicySpec("mllm", {"model": "answer-key"}),
        PolicySpec("mllm", {"model": "/c/Qwen/"}),
    )
    assert expert.blind and PolicySpec("constant", {"action": 0}).blind and not model.blind
    assert not PolicySpec("tests.closed_loop_policies:Anything", {}).blind
    assert (
        expert.manifest()["privileged"]
        and oracle.manifest()["privileged"]
        and not model.manifest()["privileged"]
    )
    assert (expert.label, model.label, PolicySpec("constant", {"action": [1, 0.5]}).label) == (
        "expert",
        "mllm-Qwen",
        "constant-1_0.5",
    )


def test_the_expert_is_the_benchmarks_policy_default():
    _, spec = parse_benchmark_args(
        EmbodiedConfig,
        [],
        policy_defaults={"expert": {"expert": "policies.experts.navigation:ShortestPathExpert"}},
    )
    assert spec.name == "expert" and spec.options == {
        "expert": "policies.experts.navigation:ShortestPathExpert"
    }
    defaults = {"expert": {"expert": "policies.experts.navigation:ShortestPathExpert"}}
    assert isinstance(build_policy_from_spec(PolicySpec("expert", {}), defaults=defaults), ShortestPathExpert)
    with pytest.raises(ValueError, match="no scripted expert"):
        build_policy_from_spec(PolicySpec("expert", {}))


def test_replay_takes_the_benchmarks_replay_file(tmp_path):
    actions = tmp_path / "a.jsonl"
    actions.write_text('{"key": "e0", "actions": [[0, 0, 0, 0, 0, 0, 1]]}\n')
    _, spec = parse_benchmark_args(EmbodiedConfig, ["--policy", "replay", "--replay-file", str(actions)])
    assert spec.options == {"replay_file": str(actions)}
    assert list(build_policy_from_spec(spec).sequences) == ["e0"]


def test_make_backend_picks_the_builtin_backends_by_model_and_endpoint(tmp_path):
    assert {"transformers", "openai", "answer-key"} <= set(registered_backends())
    assert type(make_backend("answer-key")) is AnswerKeyBackend  # never cached
    http = make_backend("m", api_base="http://127.0.0.1:9/v1", cache=tmp_path / "c.sqlite", max_retries=0)
    assert (
        isinstance(http, CachedBackend)
        and isinstance(http.inner, HTTPBackend)
        and http.inner.max_retries == 0
    )
    assert (
        type(make_backend("m", backend="openai", api_base="http://127.0.0.1:9/v1", cache=False))
        is HTTPBackend
    )


def test_oracle_is_a_deprecated_name_of_the_answer_key_stand_in(monkeypatch, capsys):
    """``--model oracle`` (and ``--model-backend oracle``) still build the stand-in, under its new name, with
    one deprecation line on stderr per process."""
    from benchmarks.static.config import RunConfig
    from policies.backends import answer_key

    monkeypatch.setattr(answer_key, "_warned", set())
    backend = make_backend("oracle")
    assert type(backend) is AnswerKeyBackend and backend.model_id == "answer-key"
    assert MLLMPolicyConfig(model="oracle").model == "answer-key"
    assert MLLMPolicyConfig(model="m", model_backend="oracle").model_backend == "answer-key"
    assert RunConfig(model="oracle", judge_model="oracle").judge_model == "answer-key"
    assert (
        capsys.readouterr().err
        == "note: --model oracle is deprecated; use --model answer-key (the same stand-in)\n"
    )
    assert MLLMPolicyConfig(model="m").model == "m" and capsys.readouterr().err == ""


@pytest.mark.parametrize("command", ["mllm", "agent", "static", "goal"])
def test_the_stand_ins_former_error_flags_still_work_with_a_note(command, capsys):
    """``--oracle-error-rate``/``--oracle-error-seed`` set the answer-key's error options, with one note each;
    ``--help`` shows only the new names."""
    from benchmarks.goal_scoring.config import PredictConfig
    from benchmarks.static.config import RunConfig
    from policies.agent.policy import AgentPolicyConfig
    from policies.config_cli import config_from_namespace, config_parser

    cls = {
        "mllm": MLLMPolicyConfig,
        "agent": AgentPolicyConfig,
        "static": RunConfig,
        "goal": PredictConfig,
    }[command]
    parser = config_parser(cls, "x")
    base = ["--model", "answer-key", *(["--dataset", "d", "--output", "o"] if command == "goal" else [])]
    args = [*base, "--oracle-error-rate", "0.25", "--oracle-error-seed", "7"]
    config = config_from_namespace(cls, parser.parse_args(args))
    assert (config.answer_key_error_rate, config.answer_key_error_seed) == (0.25, 7)
    assert capsys.readouterr().err.splitlines() == [
        "note: --oracle-error-rate is deprecated; use --answer-key-error-rate (the same option)",
        "note: --oracle-error-seed is deprecated; use --answer-key-error-seed (the same option)",
    ]
    default = config_from_namespace(cls, parser.parse_args(base))
    assert (default.answer_key_error_rate, default.answer_key_error_seed) == (0.0, 0)
    assert "--answer-key-error-rate" in parser.format_help() and "--oracle-error" not in parser.format_help()


def test_a_registered_backend_is_built_checked_and_cached(echo, tmp_path):
    backend = make_backend(
        "my-model", backend=echo, cache=tmp_path / "c.sqlite", max_new_tokens=7, shout=True
    )
    assert isinstance(backend, CachedBackend) and isinstance(backend.inner, EchoBackend)
    assert backend.inner.config.max_new_tokens == 7 and backend.inner.model_id == "my-model"
    assert backend.generate([{"role": "user", "content": "left"}]).text == "LEFT"
    with pytest.raises(TypeError, match=r"EchoBackend does not take option.*'volume'.*accepts \['shout'\]"):
        make_backend("my-model", backend=echo, cache=False, volume=11)
    with pytest.raises(ValueError, match=r"unknown model backend 'nope'.*echo"):
        make_backend("my-model", backend="nope")
    with pytest.raises(ValueError, match="already registered"):
        factory.register_backend("echo", "somewhere.else:Backend")


def test_the_mllm_policy_reaches_a_registered_backend_with_model_backend(echo):
    config = MLLMPolicyConfig(model="my-model", model_backend=echo, cache=False)
    assert config.backend_options() == {**config.generation(), "cache": False, "backend": "echo"}
    assert isinstance(make_backend(config.model, **config.backend_options()), EchoBackend)
    assert MLLMPolicyConfig(model="m", model_backend="answer-key").privileged
