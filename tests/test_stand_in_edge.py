"""The competent stand-in (``answer-key``) lives at the edge: its own files and the composition root that builds
it with its truth name it; no other library module does (policies, runners, parsers and counters see a
``Backend`` and ``Generation.injected_error`` only). "oracle" is left to CALVIN's task checker.

The sets below are the whole allowance, file by file; a module that starts naming the stand-in fails here, and
so does an allowed file that no longer needs to (take it off the list).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ("action_mapping", "envs", "policies", "vla", "benchmarks")

#: The stand-in's own files: the backend and its truths, each named for it.
STAND_IN = {
    "policies/backends/answer_key.py",
    "policies/mllm/answer_key_spatial.py",
    "policies/mllm/answer_key_eb.py",
    "policies/agent/answer_key_core.py",
    "policies/agent/answer_key_nav.py",
    "benchmarks/static/answer_key_agent.py",
    "benchmarks/attribution/answer_key_probes.py",
}
#: The composition root: the backend registry, the configs holding its flags (and its former names), and the
#: code that builds it with its truth.
COMPOSITION_ROOT = {
    "policies/backends/factory.py",
    "policies/mllm/config.py",
    "policies/agent/policy.py",
    "benchmarks/static/config.py",
    "benchmarks/static/backends.py",
    "benchmarks/static/agent_ablation.py",
    "benchmarks/goal_scoring/config.py",
    "benchmarks/goal_scoring/cli.py",
    "benchmarks/attribution/config.py",
}
#: "oracle" in CALVIN's sense: the task checker over two scene snapshots, and what reports its success.
CALVIN_CHECKER = {
    "envs/calvin/__init__.py",
    "envs/calvin/env.py",
    "envs/calvin/official.py",
    "envs/calvin/tasks.py",
    "benchmarks/calvin/__init__.py",
    "benchmarks/calvin/chain.py",
    "benchmarks/core/episode_record.py",
    "vla/calvin_recording.py",
    "vla/demos.py",
}

#: The stand-in's names: the model and flag names, its module, constant and classes, its files' former names.
#: ``answer_key_letters`` and "answer key" (a benchmark's gold answer) are not it.
STAND_IN_NAME = re.compile(
    r"answer-key|\banswer_key\b|answer_key_(?:spatial|eb|core|nav|agent|error|probe)|ANSWER_KEY|AnswerKey|EnvTruth"
    r"|spatial_oracle|eb_oracle|oracle_core|nav_oracle|agent_oracle"
)
ORACLE = re.compile(r"oracle", re.IGNORECASE)


def mentions(pattern: re.Pattern[str]) -> dict[str, list[int]]:
    """Library file -> the line numbers where ``pattern`` occurs."""
    found: dict[str, list[int]] = {}
    for package in LIBRARY:
        for path in sorted((ROOT / package).rglob("*.py")):
            lines = [i for i, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
            if lines:
                found[path.relative_to(ROOT).as_posix()] = lines
    return found


def test_only_the_stand_ins_files_and_the_composition_root_name_it() -> None:
    named = mentions(STAND_IN_NAME)
    assert {f: lines for f, lines in named.items() if f not in STAND_IN | COMPOSITION_ROOT} == {}
    assert sorted((STAND_IN | COMPOSITION_ROOT) - set(named)) == []  # every allowance still used


#: Where "oracle" may still be the stand-in: its former name, accepted with a note (the backend's alias table and
#: the configs and help texts of the composition root).
FORMER_NAME = {"policies/backends/answer_key.py"} | COMPOSITION_ROOT


def test_oracle_means_calvins_task_checker_elsewhere() -> None:
    said = mentions(ORACLE)
    assert {f: lines for f, lines in said.items() if f not in CALVIN_CHECKER | FORMER_NAME} == {}
    assert sorted(CALVIN_CHECKER - set(said)) == []


def test_the_patterns_catch_the_stand_in_and_spare_benchmark_answer_keys() -> None:
    caught = [
        'build_policy("mllm", model="answer-key")',
        "from policies.backends.answer_key import EnvTruth",
        "config.answer_key_error_rate",
        "from policies.mllm.spatial_oracle import spatial_truth",
    ]
    spared = ["key = answer_key_letters(answer)", "an answer key written 'A, C'", "def _answer_key(text):"]
    assert all(STAND_IN_NAME.search(line) for line in caught)
    assert not any(STAND_IN_NAME.search(line) for line in spared)
    for path in STAND_IN | COMPOSITION_ROOT | CALVIN_CHECKER:
        assert (ROOT / path).is_file(), path
