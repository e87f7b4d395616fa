"""Goal-image navigation pairs from the navigation env's homes (``generate --source nav``).

One sample: a home (``envs.navigation.scene.generate_scene`` with a seed drawn from the sample's
generator), an informative start view on free floor (median depth >= 1 m, >= 5 % furniture or objects),
and a random motion of 1-6 plan steps of SpatialTree's camera primitives with the navigation prompt's
step sizes (0.019375 m and 0.4509 rad per count), carried out as the env's agent could
(:mod:`envs.navigation.motion`: blocked translations shortened to the largest free whole count, tilt and
roll kept within limits). The goal view is kept only when the start camera sees at least
``min_overlap`` of it (goal pixels reprojected into the start view through depth and occlusion-tested,
:func:`envs.navigation.camera.view_overlap`), so the goal is recognisable from the start; the measured
overlap is recorded with the sample.

Ground truth is exact: ``trajectory`` holds the C2W matrices (OpenCV frame) of the cameras that rendered
the images and of the poses in between, and ``plan`` is ``action_mapping.trajectory_to_plan`` of that
trajectory, checked to equal the executed primitive counts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from action_mapping import NAVIGATION_STEP_SIZES, Plan, StepSizes
from benchmarks.goal_scoring.sources import GeneratedPair
from envs.navigation.camera import c2w_from_pose, pose_from_c2w, view_overlap
from envs.navigation.motion import MOTION_WEIGHTS, MotionRules, ground_truth_plan, random_motion
from envs.navigation.render import Frame
from envs.navigation.scene import generate_scene, scene_key
from envs.navigation.views import HomeRenderer, ViewRules, sample_view
from envs.navigation.world import AgentPose

INSTRUCTION = "Give the camera motion that turns the start view (image 1) into the goal view (image 2)."


class NavigationPairSource:
    """A :class:`~benchmarks.goal_scoring.sources.PairSource` of start/goal views in the navigation homes.

    Arguments: width, height, fov (the env's camera: 224 x 224, 100 deg vertical); min_steps, max_steps
    (plan length, 1-6); max_actions_per_step (primitives combined in one step); max_rotation_count
    (largest count of one rotation primitive in a step); min_overlap (fraction of the goal view the start
    camera must see); step_translation, step_rotation (metres / radians per count; the paper's navigation
    prompt by default); max_step_num (cap on a count); n_rooms (1-3, or None for random homes); max_homes,
    views_per_home, motions_per_view (search budget before a sample gives up).
    """

    kind = "nav"

    def __init__(
        self,
        width: int = 224,
        height: int = 224,
        fov: float = 100.0,
        min_steps: int = 1,
        max_steps: int = 6,
        max_actions_per_step: int = 2,
        max_rotation_count: int = 2,
        min_overlap: float = 0.5,
        step_translation: float = NAVIGATION_STEP_SIZES.translation,
        step_rotation: float = NAVIGATION_STEP_SIZES.rotation,
        max_step_num: int = 10,
        n_rooms: int | None = None,
        max_homes: int = 20,
        views_per_home: int = 8,
        motions_per_view: int = 8,
    ) -> None:
        if not 0.0 <= min_overlap <= 1.0:
            raise ValueError(f"min_overlap must be in [0, 1], got {min_overlap}")
        self.rules = MotionRules(min_steps, max_steps, max_actions_per_step, max_rotation_count, max_step_num)
        self.step_sizes = StepSizes(float(step_translation), float(step_rotation))
        self.max_step_num, self.min_overlap, self.n_rooms = int(max_step_num), float(min_overlap), n_rooms
        self.budget = (int(max_homes), int(views_per_home), int(motions_per_view))
        self.view_rules = ViewRules()
        self.renderer = HomeRenderer(width, height, fov)

    def sample(self, rng: np.random.Generator) -> GeneratedPair:
        """One pair drawn with ``rng`` only: a home, a start view, a motion whose goal view passes the overlap check."""
        max_homes, views, motions = self.budget
        n_steps = int(rng.integers(self.rules.min_steps, self.rules.max_steps + 1))  # drawn once: long plans,
        for _ in range(max_homes):  # which fail the overlap check more often, stay as common as short ones
            home_seed = int(rng.integers(2**31 - 1))
            scene = generate_scene(home_seed, n_rooms=self.n_rooms)
            self.renderer.load(scene)
            for _ in range(views):
                view = sample_view(self.renderer, rng, self.view_rules)
                if view is None:
                    continue
                for _ in range(motions):
                    pair = self._try_motion(rng, n_steps, *view, scene, home_seed)
                    if pair is not None:
                        return pair
        raise RuntimeError(
            f"no start/goal pair with overlap >= {self.min_overlap} in {max_homes} homes; "
            "lower min_overlap or max_steps, or raise max_homes"
        )

    def _try_motion(
        self,
        rng: np.random.Generator,
        n_steps: int,
        start: AgentPose,
        start_frame: Frame,
        scene: dict[str, Any],
        home_seed: int,
    ) -> GeneratedPair | None:
        start_c2w = c2w_from_pose(start)
        motion = random_motion(self.renderer.world, start_c2w, rng, self.rules, self.step_sizes, n_steps)
        if motion is None:
            return None
        goal_frame = self.renderer.render(pose_from_c2w(motion.poses[-1]), entity=False)
        assert goal_frame.depth is not None and start_frame.depth is not None  # rendered with depth
        overlap = view_overlap(
            goal_frame.depth, motion.poses[-1], start_frame.depth, start_c2w, self.renderer.intrinsics
        )
        if overlap < self.min_overlap:
            return None
        metadata = {
            "home_seed": home_seed,
            "scene_key": scene_key(scene),
            "overlap": round(overlap, 4),
            "min_overlap": self.min_overlap,
            "commanded_plan": Plan(motion.commanded).to_json(),
            "clipped_steps": motion.clipped_steps,
            "camera": self.camera(),
        }
        plan = ground_truth_plan(motion, self.step_sizes, self.max_step_num)
        return GeneratedPair(
            start_frame.rgb,
            goal_frame.rgb,
            trajectory=motion.poses,
            plan=plan,
            instruction=INSTRUCTION,
            metadata=metadata,
        )

    def camera(self) -> dict[str, Any]:
        """Image size and vertical field of view of the renders."""
        i = self.renderer.intrinsics
        return {"width": i.width, "height": i.height, "fovy_deg": i.fovy_deg}

    def describe(self) -> dict[str, Any]:
        """JSON-safe identity and settings (recorded in ``dataset.json``)."""
        max_homes, views, motions = self.budget
        rules = self.rules
        return {
            "class": f"{type(self).__module__}.{type(self).__name__}",
            "camera": self.camera(),
            "motion": {
                "min_steps": rules.min_steps,
                "max_steps": rules.max_steps,
                "max_actions_per_step": rules.max_actions_per_step,
                "max_rotation_count": rules.max_rotation_count,
                "weights": {p.value: w for p, w in MOTION_WEIGHTS.items()},
            },
            "min_overlap": self.min_overlap,
            "n_rooms": self.n_rooms,
            "search": {"max_homes": max_homes, "views_per_home": views, "motions_per_view": motions},
        }

    def close(self) -> None:
        """Free the renderer (``generate`` calls it when done)."""
        self.renderer.close()
