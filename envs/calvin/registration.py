"""Registered ids of the CALVIN play-table (string entry points: importing this loads no simulator).

- ``SpatialArena/CalvinPlayTable-v0``: relative actions, static + gripper cameras (CALVIN's evaluation).
- ``SpatialArena/CalvinPlayTable-Abs-v0``: absolute TCP targets, both cameras.
- ``SpatialArena/CalvinPlayTable-Static-v0``: relative actions, static camera only.
- ``SpatialArena/CalvinPlayTable-State-v0``: relative actions, no cameras (state-based policies, experts).
- ``SpatialArena/CalvinPlayTable-Official-v0``: the official ``calvin_env`` (a user's checkout; scene D,
  static + gripper cameras) behind the same interface (``--backend official``).

No ``max_episode_steps``: CALVIN's 360-step budget is per subtask, and a chain keeps one episode across
its subtasks; the protocol code enforces it.
"""

from envs.registration import register

_ENTRY = "envs.calvin.env:PlayTableEnv"

register("SpatialArena/CalvinPlayTable-v0", _ENTRY)
register("SpatialArena/CalvinPlayTable-Abs-v0", _ENTRY, action_mode="absolute")
register("SpatialArena/CalvinPlayTable-Static-v0", _ENTRY, cameras=["static"])
register("SpatialArena/CalvinPlayTable-State-v0", _ENTRY, cameras=[])
register("SpatialArena/CalvinPlayTable-Official-v0", "envs.calvin.official:OfficialPlayTableEnv")
