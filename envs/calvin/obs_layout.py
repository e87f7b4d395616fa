"""The two observation layouts of both CALVIN backends (``obs_layout=``), one implementation for both.

- ``"flat"`` (default): ``rgb_static``, ``rgb_gripper``, ``depth_static``, ``depth_gripper`` next to
  ``robot_obs`` and ``scene_obs``, as the project's policies read them.
- ``"calvin"``: calvin_env's own ``get_obs()`` layout, ``{"rgb_obs": {"rgb_static", "rgb_gripper"},
  "depth_obs": {"depth_static", "depth_gripper"}, "robot_obs", "scene_obs"}``, so a policy written for
  CALVIN's ``evaluate_policy`` (``obs["rgb_obs"]["rgb_static"]``) runs unchanged.

Both layouts hold the same arrays (the same objects, not copies); :func:`flat_observation` turns either
into the flat one (videos, logs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gymnasium import spaces

OBS_LAYOUTS = ("flat", "calvin")
#: calvin_env's groups, by the prefix of the flat keys they hold.
_GROUPS = {"rgb_obs": "rgb_", "depth_obs": "depth_"}


def check_obs_layout(layout: str) -> str:
    """``layout`` when it is one of :data:`OBS_LAYOUTS`; otherwise a ValueError naming both."""
    if layout not in OBS_LAYOUTS:
        raise ValueError(
            f"obs_layout must be one of {OBS_LAYOUTS} (calvin: calvin_env's nested rgb_obs/depth_obs "
            f"dicts), got {layout!r}"
        )
    return layout


def _nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    nested: dict[str, Any] = {
        group: {k: v for k, v in flat.items() if k.startswith(prefix)} for group, prefix in _GROUPS.items()
    }
    nested.update({k: v for k, v in flat.items() if not k.startswith(tuple(_GROUPS.values()))})
    return nested


def shaped_observation(flat: Mapping[str, Any], layout: str) -> dict[str, Any]:
    """A flat observation in ``layout`` (``flat``: a new dict with the same entries)."""
    return _nest(flat) if layout == "calvin" else dict(flat)


def shaped_space(flat: spaces.Dict, layout: str) -> spaces.Dict:
    """The observation space of :func:`shaped_observation` for a flat ``Dict`` space."""
    if layout != "calvin":
        return flat
    nested = _nest(flat.spaces)
    return spaces.Dict({k: spaces.Dict(v) if k in _GROUPS else v for k, v in nested.items()})


def flat_observation(obs: Mapping[str, Any]) -> dict[str, Any]:
    """Either layout as the flat one (a flat observation comes back as a new dict with the same entries)."""
    flat: dict[str, Any] = {}
    for key, value in obs.items():
        if key in _GROUPS and isinstance(value, Mapping):
            flat.update(value)
        else:
            flat[key] = value
    return flat


__all__ = ["OBS_LAYOUTS", "check_obs_layout", "flat_observation", "shaped_observation", "shaped_space"]
