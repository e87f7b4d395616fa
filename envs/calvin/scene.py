"""The play-table's articulations, lights and blocks: loading, exact placement, observation, snapshot.

Articulations behave as in calvin.md: the sliding door, drawer and switch are velocity-controlled to rest
with force 4 (friction-like), the button is held at 0 by position control with force 4. The LED toggles
on each press edge of the button (joint past half its travel); the lightbulb turns on when the switch
passes half its travel and off when it comes back. Edges are detected once per control step, after the
physics sub-steps, as CALVIN does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.calvin import constants as C
from envs.calvin.assets import AssetPaths
from envs.calvin.bullet import BulletClient, pb
from envs.calvin.scenes import SCENES, SceneSpec


@dataclass
class Articulation:
    """One table joint and, for the button and switch, the light it drives."""

    joint: int
    lower: float
    upper: float
    pressed: bool = False  # button/switch: past the trigger at the last check

    @property
    def trigger(self) -> float:
        return (self.lower + self.upper) / 2


class PlayTableScene:
    """Table + blocks + floor in one PyBullet client."""

    def __init__(
        self, client: BulletClient, assets: AssetPaths, scaling: float = 1.0, spec: SceneSpec = SCENES["D"]
    ) -> None:
        self.p, self.spec = client, spec
        self.table = client.loadURDF(
            assets.table, (0, 0, 0), (0, 0, 0, 1), useFixedBase=True, globalScaling=scaling
        )
        self.links = self._table_links()
        self.parts = {
            name: self._articulation(f"{name}_link") for name in ("slide", "drawer", "button", "switch")
        }
        self.blocks = {
            c: client.loadURDF(assets.blocks[c], (0, 0, -1 - i), globalScaling=scaling)
            for i, c in enumerate(spec.block_colors)  # the scene's order: scene_obs follows it
        }
        self.plane = client.loadURDF(assets.plane, (0, 0, 0), (0, 0, 0, 1), useFixedBase=True)
        self.lights = {"lightbulb": 0, "led": 0}
        self._light_links = {"lightbulb": self.links["light_link"], "led": self.links["led_link"]}
        self._hold_articulations()

    def _table_links(self) -> dict[str, int]:
        links = {self.p.getBodyInfo(self.table)[0].decode(): -1}
        for i in range(self.p.getNumJoints(self.table)):
            links[self.p.getJointInfo(self.table, i)[12].decode()] = i
        missing = [n for n in C.TABLE_LINKS if n not in links]
        if missing:
            raise ValueError(f"table URDF lacks the CALVIN links {missing}; the task checks need them")
        return links

    def _articulation(self, link: str) -> Articulation:
        joint = self.links[link]
        lower, upper = self.p.getJointInfo(self.table, joint)[8:10]
        return Articulation(joint, lower, upper)

    def _hold_articulations(self) -> None:
        for name in ("slide", "drawer", "switch"):
            self.p.setJointMotorControl2(
                self.table,
                self.parts[name].joint,
                pb.VELOCITY_CONTROL,
                targetVelocity=0,
                force=C.ARTICULATION_FORCE,
            )
        self.p.setJointMotorControl2(
            self.table,
            self.parts["button"].joint,
            pb.POSITION_CONTROL,
            targetPosition=self.parts["button"].lower,
            force=C.ARTICULATION_FORCE,
        )

    # ----------------------------------------------------------------------------------------- reset

    def reset(self, scene_obs: np.ndarray) -> None:
        """Place joints, lights and blocks exactly as ``scene_obs`` says (velocities zero)."""
        for i, name in enumerate(("slide", "drawer", "button", "switch")):
            part = self.parts[name]
            self.p.resetJointState(self.table, part.joint, float(scene_obs[i]), 0.0)
            part.pressed = float(scene_obs[i]) > part.trigger
        self._set_light("lightbulb", round(float(scene_obs[4])))
        self._set_light("led", round(float(scene_obs[5])))
        for color, uid in self.blocks.items():
            pose = scene_obs[self.spec.block_slice(color)]
            quat = self.p.getQuaternionFromEuler(pose[3:6].tolist())
            self.p.resetBasePositionAndOrientation(uid, pose[:3].tolist(), quat)
            self.p.resetBaseVelocity(uid, [0, 0, 0], [0, 0, 0])

    def _set_light(self, name: str, state: int) -> None:
        if state not in (0, 1):
            raise ValueError(f"scene_obs {name} must be 0 or 1, got {state}")
        self.lights[name] = state
        rgba = C.LIGHT_ON_RGBA[name] if state else C.LIGHT_OFF_RGBA
        self.p.changeVisualShape(self.table, self._light_links[name], rgbaColor=list(rgba))

    # ------------------------------------------------------------------------------------------ step

    def update_lights(self) -> None:
        """Apply the button's and switch's edges since the last call to the LED and lightbulb."""
        button, switch = self.parts["button"], self.parts["switch"]
        if self._rising(button):
            self._set_light("led", 1 - self.lights["led"])
        switch_was = switch.pressed
        if self._rising(switch):
            self._set_light("lightbulb", 1)
        elif switch_was and not switch.pressed:
            self._set_light("lightbulb", 0)

    def _rising(self, part: Articulation) -> bool:
        was, part.pressed = part.pressed, self.joint_state(part) > part.trigger
        return part.pressed and not was

    def joint_state(self, part: Articulation) -> float:
        return float(self.p.getJointState(self.table, part.joint)[0])

    # ------------------------------------------------------------------------------------ observation

    def observation(self) -> np.ndarray:
        """CALVIN's 24-D ``scene_obs``: slide, drawer, button, switch, lightbulb, LED, 3 x block pose (in the
        scene's block order)."""
        joints = [self.joint_state(self.parts[n]) for n in ("slide", "drawer", "button", "switch")]
        poses = []
        for uid in self.blocks.values():
            pos, orn = self.p.getBasePositionAndOrientation(uid)
            poses += [*pos, *self.p.getEulerFromQuaternion(orn)]
        return np.array([*joints, self.lights["lightbulb"], self.lights["led"], *poses], dtype=np.float64)

    def link_pose(self, link: str) -> tuple[np.ndarray, np.ndarray]:
        """World position and rotation matrix of a table link's frame (e.g. ``"drawer_link"``)."""
        index = self.links[link]
        if index < 0:
            pos, orn = self.p.getBasePositionAndOrientation(self.table)
        else:
            state = self.p.getLinkState(self.table, index, computeForwardKinematics=True)
            pos, orn = state[4], state[5]
        return np.asarray(pos), np.asarray(self.p.getMatrixFromQuaternion(orn)).reshape(3, 3)


# ------------------------------------------------------------------------------- default scene states

_SPOT_NAMES = ("table", "table", "slider_left", "slider_right")


def _spots(spec: SceneSpec) -> tuple[tuple[float, float, float], ...]:
    """The four evaluation spots of a scene: two on the table, one per slider compartment."""
    return (*spec.spots("table"), spec.spots("slider_left")[0], spec.spots("slider_right")[0])


def random_scene_state(rng: np.random.Generator) -> dict[str, object]:
    """A valid symbolic scene like CALVIN's evaluation states (12 block placements x door/drawer/lights).

    Block placements are drawn over the four evaluation spots (two on the table, one per slider
    compartment); the result also keeps the chosen spot indices under ``"_spots"``.
    """
    spots = rng.permutation(len(_SPOT_NAMES))[:3]
    state: dict[str, object] = {
        "led": int(rng.integers(2)),
        "lightbulb": int(rng.integers(2)),
        "slider": "left" if rng.integers(2) else "right",
        "drawer": "open" if rng.integers(2) else "closed",
    }
    for color, spot in zip(C.BLOCK_COLORS, spots):
        state[f"{color}_block"] = _SPOT_NAMES[spot]
    state["_spots"] = [int(s) for s in spots]
    return state


def scene_obs_for_state(
    state: dict[str, object], rng: np.random.Generator, spec: SceneSpec = SCENES["D"]
) -> np.ndarray:
    """The 24-D ``scene_obs`` of a state from :func:`random_scene_state` in scene ``spec`` (its spots, its
    block order), block yaws in pi/2 +- pi/8."""
    obs = np.zeros(24)
    obs[0] = spec.slide_travel if state["slider"] == "left" else 0.0
    obs[1] = C.DRAWER_RANGE[1] if state["drawer"] == "open" else 0.0
    obs[3] = C.SWITCH_RANGE[1] if state["lightbulb"] else 0.0
    obs[4], obs[5] = float(state["lightbulb"]), float(state["led"])
    spots = _spots(spec)
    for color, spot in zip(C.BLOCK_COLORS, state["_spots"]):  # type: ignore[call-overload]
        s = spec.block_slice(color)
        obs[s.start : s.start + 3] = spots[spot]
        obs[s.start + 5] = rng.uniform(*C.BLOCK_YAW_RANGE)
    return obs
