"""The answer-key core of the closed-loop SpatialAgent in EB-Navigation: it navigates by reading tool results.

At each decision the planner calls ``Detect3DObjects`` for the target on the current image (``image-0``);
for a goal-image task (``image-1`` is the goal view) it calls ``GetCameraParameters`` on both images. The
summarizer turns the results in its prompt into EB actions (``executable_plan``), never looking at the
scene itself:

- target found: turn towards it when it is more than 45 degrees off the optical axis, else step sideways to
  line it up (0.25 m steps) and walk forward until it is about 0.7 m ahead; after a blocked forward move,
  step sideways (towards the target's side, the other side after a blocked side step) before walking on;
  after a blocked side step, walk forward and line up from closer; when it drops out of view on the way,
  look down (and back up when it is not there either);
- target not found: turn left (a full turn at most), then walk forward to look from elsewhere;
- goal view: the goal camera's position in the current camera's frame (``-R^T t``) and its heading give the
  side steps, forward steps and turns.

The only privileged knowledge is what the instruction refers to (the target's name, e.g. "blue ball"), as
a reader of the instruction knows; where the target is and what blocks the way come from the tools. So
with simulator-truth tools its failures are the strategy's, and with learned tools the tools' errors add.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from policies.agent.answer_key_core import AnswerKeyCore
from policies.agent.core import GOAL_VIEW_LINE
from policies.mllm import eb_prompts
from policies.mllm.answer_key_eb import eb_answer

if TYPE_CHECKING:
    import gymnasium as gym

    from envs.navigation.env import EBNavigationEnv

_HISTORY = re.compile(r"^Step \d+, action id (\d+), [^\n]*?env feedback: ([^\n]*)$", re.MULTILINE)
_MOVE, _REACH = 0.25, 0.7  # metres per move; how far ahead the target is when the walk ends
_TURN_DEG = 45.0  # off-axis angle beyond which the core turns rather than steps sideways
FORWARD, BACK, RIGHT, LEFT, TURN_RIGHT, TURN_LEFT, LOOK_UP, LOOK_DOWN = range(8)
_TILT_DEG = 30.0  # EB's camera tilt step


def history_of(question: str) -> list[tuple[int, bool]]:
    """``(action id, blocked)`` of every action in the EB prompt's history, oldest first."""
    return [(int(i), "invalid" in feedback.lower()) for i, feedback in _HISTORY.findall(question)]


def tilt_deg(history: Sequence[tuple[int, bool]]) -> float:
    """The camera tilt the history has made (degrees, negative looks down; episodes start level)."""
    return _TILT_DEG * sum((a == LOOK_UP) - (a == LOOK_DOWN) for a, blocked in history if not blocked)


def level(box: Mapping[str, float], tilt: float) -> tuple[float, float]:
    """``(right, forward)`` of a camera-frame point in the level frame of a camera tilted by ``tilt`` degrees."""
    a = math.radians(-tilt)  # > 0: looking down
    return float(box["x"]), float(box["y"]) * math.sin(a) + float(box["z"]) * math.cos(a)


def approach(box: Mapping[str, float] | None, history: Sequence[tuple[int, bool]]) -> list[int]:
    """EB action ids towards a target whose 3D box centre (camera frame, metres) is ``box`` (``None``: unseen)."""
    last = history[-1] if history else None
    tilt = tilt_deg(history)
    if box is None:
        if tilt == 0 and last is not None and last[0] in (FORWARD, RIGHT, LEFT):
            return [LOOK_DOWN]  # walking up to it, the target can drop below the view
        if tilt < 0:
            return [LOOK_UP] * round(-tilt / _TILT_DEG)
        turns = 0
        for action, _ in reversed(history):
            if action != TURN_LEFT:
                break
            turns += 1
        if turns < 3:
            return [TURN_LEFT]
        return _sidestep(history, 1.0) if last and last[1] else [FORWARD, FORWARD]
    x, z = level(box, tilt)
    if abs(math.degrees(math.atan2(x, z))) > _TURN_DEG:
        return [TURN_RIGHT if x > 0 else TURN_LEFT]
    if last is not None and last[1] and last[0] in (RIGHT, LEFT):
        return [FORWARD, FORWARD]  # blocked sideways: walk on and line up from closer
    if last is not None and last[1] and last[0] == FORWARD:
        return [*_sidestep(history, x), FORWARD]
    lateral = round(x / _MOVE)
    plan = [RIGHT] * lateral if lateral > 0 else [LEFT] * -lateral
    plan += [FORWARD] * max(0, math.ceil((z - _REACH) / _MOVE))
    return plan or [FORWARD]


def _sidestep(history: Sequence[tuple[int, bool]], x: float) -> list[int]:
    """Two side steps towards the target's side, or the other way when the last side step was blocked."""
    side = RIGHT if x >= 0 else LEFT
    blocked_sides = [a for a, blocked in history[-3:] if blocked and a in (RIGHT, LEFT)]
    if side in blocked_sides:
        side = LEFT if side == RIGHT else RIGHT
    return [side, side]


def to_goal(extrinsic: Sequence[Sequence[float]]) -> list[int]:
    """EB action ids from the current camera to the goal camera (``[R|t]``: current frame -> goal frame)."""
    E = np.asarray(extrinsic, dtype=float)
    R, t = E[:3, :3], E[:3, 3]
    centre = -R.T @ t  # the goal camera's position in the current camera's frame (x right, z forward)
    lateral, forward = round(centre[0] / _MOVE), round(centre[2] / _MOVE)
    plan = [RIGHT] * lateral if lateral > 0 else [LEFT] * -lateral
    plan += [FORWARD] * forward if forward > 0 else [BACK] * -forward
    goal_forward = R.T @ np.array([0.0, 0.0, 1.0])  # the goal's optical axis in the current frame
    turns = round(math.degrees(math.atan2(goal_forward[0], goal_forward[2])) / 90.0)
    plan += [TURN_RIGHT] * turns if turns > 0 else [TURN_LEFT] * -turns
    return plan


class NavigationAnswerKeyCore(AnswerKeyCore):
    """Answers the agent's roles for the current EB-Navigation decision of ``env`` (see the module docstring)."""

    def __init__(self, env: gym.Env) -> None:
        self.env = env

    def target_name(self) -> str:
        """How the instruction's target is named (colour and category), the core's only privileged fact."""
        from envs.navigation.entities import object_name

        nav = cast("EBNavigationEnv", self.env.unwrapped)
        episode = nav.episode
        assert episode is not None  # asked during an episode
        return object_name(episode["scene"], nav.target["id"])

    def plan(self, question: str) -> list[dict[str, Any]]:
        if GOAL_VIEW_LINE in question:
            return [{"name": "GetCameraParameters", "arguments": {"images": ["image-0", "image-1"]}}]
        return [
            {"name": "Detect3DObjects", "arguments": {"image": "image-0", "objects": [self.target_name()]}}
        ]

    def solve(self, question: str, evidence: Sequence[Mapping[str, Any]]) -> str:
        if GOAL_VIEW_LINE in question:
            poses = [o for e in evidence for o in e.get("output", []) if o.get("image_index") == 1]
            ids = to_goal(poses[0]["extrinsic"]) if poses else [TURN_LEFT]
            return self._answer(question, ids or [FORWARD], "the goal camera's pose relative to mine")
        name = self.target_name()
        boxes = [o["bbox_3d"] for e in evidence for o in e.get("objects", []) if o.get("label") == name]
        box = min(boxes, key=lambda b: math.hypot(b["x"], b["z"])) if boxes else None
        seen = (
            f"the {name} is {math.hypot(box['x'], box['z']):.1f} m from the camera"
            if box
            else f"no {name} in view"
        )
        return self._answer(question, approach(box, history_of(question)), seen)

    def guess(self, question: str) -> str:
        return self._answer(question, [TURN_LEFT], "without tools I cannot locate the target")

    @staticmethod
    def _answer(question: str, ids: list[int], seen: str) -> str:
        names = [eb_prompts.NAV_ACTION_NAMES[i] for i in ids]
        plan = [{"action_id": i, "action_name": n} for i, n in zip(ids, names)]
        texts = {
            "visual_state_description": seen.capitalize() + ".",
            "reasoning_and_reflection": "From the tool results.",
            "language_plan": ", ".join(names),
        }
        return eb_answer(question, plan, texts)
