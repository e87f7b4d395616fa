"""Prompt snapshots: the exact text the MLLM policies send, frozen so it cannot drift silently.

To accept an intended change, run ``UPDATE_SNAPSHOTS=1 pytest tests/policies/mllm/test_prompts.py``
and review the diff of ``tests/snapshots/mllm/`` in the commit.
"""

import json

import numpy as np
import pytest

from action_mapping import render_manipulation_prompt, render_navigation_prompt
from policies.backends.scripted import ScriptedBackend
from policies.base import EpisodeContext
from policies.mllm.atomic import AtomicPrompting
from policies.mllm.embodied import EBAgentPolicy
from policies.mllm.spatial import SpatialPlanPolicy
from tests.snapshots import assert_matches_snapshot


def assert_snapshot(name, text):
    assert_matches_snapshot(f"mllm/{name}", text)


def flatten(messages):
    """Messages as text, images shown as <image HxW>."""
    lines = []
    for m in messages:
        content = m["content"]
        parts = (
            [content]
            if isinstance(content, str)
            else [
                p["text"] if p["type"] == "text" else f"<image {p['image'].shape[0]}x{p['image'].shape[1]}>"
                for p in content
            ]
        )
        lines.append(f"[{m['role']}]\n" + "\n".join(parts))
    return "\n\n".join(lines) + "\n"


def image(h=24, w=32):
    return np.zeros((h, w, 3), np.uint8)


def test_eb_navigation_turns():
    answer = json.dumps(
        {
            "executable_plan": [
                {"action_id": 0, "action_name": "MoveAhead"},
                {"action_id": 4, "action_name": "RotateRight"},
            ]
        }
    )
    backend = ScriptedBackend([answer, answer])
    policy = EBAgentPolicy(backend, task="navigation")
    policy.reset(EpisodeContext(instruction="navigate to the apple in the room.", seed=0))
    policy.act({"head_rgb": image(), "feedback": ""})
    policy.act({"head_rgb": image(), "feedback": "Last action MoveAhead executed successfully."})
    policy.act({"head_rgb": image(), "feedback": "Last action RotateRight is invalid. Blocked by a wall."})
    assert_snapshot("eb_navigation_first_turn.txt", flatten(backend.calls[0]))
    assert_snapshot("eb_navigation_third_message_window.txt", flatten(backend.calls[1]))


def test_eb_manipulation_turn():
    backend = ScriptedBackend(['{"executable_plan": [{"action": "[1, 2, 3, 0, 60, 90, 1]"}]}'])
    policy = EBAgentPolicy(backend, task="manipulation", atomic=AtomicPrompting(size=True))
    policy.reset(
        EpisodeContext(
            instruction="stack the green cube on the red cube", seed=0, extras={"size_hints": {"cube": 0.04}}
        )
    )
    policy.act(
        {
            "front_rgb": image(),
            "object_info": "object 1 (red cube): [50, 40, 18]; object 2 (green cube): [36, 58, 18]",
        }
    )
    assert_snapshot("eb_manipulation_first_turn.txt", flatten(backend.calls[0]))


def test_spatial_goal_image_and_instruction_messages():
    plan = '{"step_1": {"actions": ["W"], "step_nums": [1]}}'
    backend = ScriptedBackend([plan, plan])
    nav = SpatialPlanPolicy(backend, task="navigation", atomic=AtomicPrompting(depth=True))
    nav.reset(EpisodeContext(instruction="", seed=0, extras={"goal_image": image()}))
    nav.act({"rgb": image(), "depth": np.linspace(0.5, 3.0, 24 * 32, dtype=np.float32).reshape(24, 32)})
    manip = SpatialPlanPolicy(backend, task="manipulation")
    manip.reset(EpisodeContext(instruction="push the block to the left", seed=0))
    manip.act({"rgb_static": image(50, 50)})
    assert_snapshot("spatial_goal_navigation.txt", flatten(backend.calls[0]))
    assert_snapshot("spatial_instruction_manipulation.txt", flatten(backend.calls[1]))


def test_instruction_variant_only_changes_the_header():
    for render in (render_navigation_prompt, render_manipulation_prompt):
        image_lines, instruction_lines = render().splitlines(), render(goal="instruction").splitlines()
        assert image_lines[2:] == instruction_lines[2:] and image_lines[:2] != instruction_lines[:2]
    with pytest.raises(ValueError, match="goal"):
        render_navigation_prompt(goal="video")
