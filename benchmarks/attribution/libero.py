"""LIBERO probes: what a decision's state says about the objects the task's BDDL names as of interest.

:func:`libero_state` reads, at a decision, the first two of the task's ``obj_of_interest`` (objects' bodies or
regions' sites, e.g. a drawer's inside), their positions and the hand's (the end-effector site), through the
read-only simulator views the LIBERO expert uses (:class:`policies.experts.libero.Scene`); the questions are
EB manipulation's object probes (:func:`benchmarks.attribution.manipulation.manip_questions`: the distance to
the first object, which of the two is closer to the gripper). Objects are named from their LIBERO names
(``akita_black_bowl_1`` -> "the akita black bowl").
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, cast

from benchmarks.attribution.manipulation import manip_questions
from benchmarks.attribution.prober import ProbeFamily

if TYPE_CHECKING:
    import gymnasium as gym

    from envs.libero.env import LiberoEnv

_INSTANCE = re.compile(r"_\d+(?=_|$)")


def object_name(name: str) -> str:
    """``"the akita black bowl"`` for LIBERO's ``akita_black_bowl_1`` (``wooden_cabinet_1_top_region``: "the
    wooden cabinet top region")."""
    return "the " + _INSTANCE.sub("", name).replace("_", " ")


def libero_state(env: gym.Env) -> dict[str, Any]:
    """What the probes of a decision need, read from the simulator (JSON-safe; the env is not changed)."""
    from policies.experts.libero import Scene

    scene = Scene(cast("LiberoEnv", env.unwrapped).raw_env)
    known = {*scene.env.obj_body_id, *scene.env.object_sites_dict}
    names = [n for n in scene.env.obj_of_interest if n in known][:2]
    return {
        "objects": [{"name": object_name(n), "position": scene.position(n).tolist()} for n in names],
        "grip_position": scene.hand().tolist(),
    }


#: LIBERO's probes (the LIBERO benchmark's ``--probe`` uses them).
PROBES = ProbeFamily(libero_state, manip_questions)
