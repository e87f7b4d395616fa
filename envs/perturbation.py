"""Robustness perturbations shared by every closed-loop family: the variant spec, the axis registry and the
sensor/actuator channel axes.

A variant is a :class:`PerturbationSpec` (axis, level 1-5, seed): small, frozen and JSON-safe. An env
applies it at reset, ``env.reset(options={"perturbation": spec})``; the same spec on the same episode
always gives the same scene, byte for byte. Each family declares the axes it supports with
:func:`register_axes`: scene axes (the family edits its own episode: camera, lighting, textures,
distractors, start pose, instruction) and the channel axes below, which every family shares: they corrupt
every camera image of an observation and the action channel, without touching the scene.

Nothing of the spec reaches the policy: envs apply it and keep it to themselves (no axis name, level or
seed in observations or ``info``).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import io
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

LEVELS = (1, 2, 3, 4, 5)
CHANNEL_AXES = ("image_noise", "image_blur", "image_jpeg", "action_noise")
_IMAGE_NOISE_STD = (4.0, 8.0, 14.0, 22.0, 32.0)  # Gaussian pixel noise, in 0-255 units
_BLUR_RADIUS = (1, 2, 3, 4, 6)  # box blur half-width in pixels, applied twice (about a Gaussian)
_JPEG_QUALITY = (60, 40, 25, 15, 8)
_ACTION_NOISE = (0.05, 0.1, 0.15, 0.25, 0.35)  # discrete: chance of a random other action; Box: std / bound
_BINS_PER_NOISE = 10.0  # MultiDiscrete: std in bins = this x the level's number (0.5 - 3.5 bins)


class PerturbationError(ValueError):
    """A perturbation spec or ``--perturb`` value is malformed; the message names it and the fix."""


@dataclass(frozen=True)
class PerturbationSpec:
    """One robustness variant: ``axis`` at ``level`` (1 mild - 5 strong), drawn with ``seed``."""

    axis: str
    level: int
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.axis, str) or not self.axis:
            raise PerturbationError(f"perturbation axis must be a non-empty name, got {self.axis!r}")
        if isinstance(self.level, bool) or not isinstance(self.level, int) or self.level not in LEVELS:
            raise PerturbationError(f"perturbation level must be an integer 1-5, got {self.level!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise PerturbationError(f"perturbation seed must be an integer >= 0, got {self.seed!r}")

    def to_json(self) -> dict[str, Any]:
        return {"axis": self.axis, "level": self.level, "seed": self.seed}

    @classmethod
    def from_json(cls, data: object) -> PerturbationSpec:
        if isinstance(data, PerturbationSpec):
            return data
        if not isinstance(data, Mapping) or set(data) - {"axis", "level", "seed"} or "axis" not in data:
            raise PerturbationError(
                f"a perturbation must be a PerturbationSpec or a dict with axis, level, seed; got {data!r}"
            )
        return cls(data["axis"], data.get("level", 3), data.get("seed", 0))

    def key(self) -> str:
        """A content hash of the spec (canonical JSON), e.g. for certificate caches."""
        return content_hash(self.to_json())

    def rng(self, salt: str = "") -> np.random.Generator:
        """The generator this variant draws from (``salt`` separates independent draws)."""
        digest = hashlib.sha256(f"{self.axis}/{self.level}/{self.seed}/{salt}".encode()).digest()
        return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def content_hash(data: object) -> str:
    """A short SHA-256 of ``data`` as canonical JSON."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ------------------------------------------------------------------------------------------- registry

#: A scene axis edits a copy of the family's episode: ``apply(episode, spec) -> episode``.
SceneAxis = Callable[[dict[str, Any], PerturbationSpec], dict[str, Any]]


@dataclass(frozen=True)
class Axis:
    """An axis a family supports: its name, what it changes, each level's parameters, and how to apply it
    (``apply`` is ``None`` for the shared channel axes).

    ``same_physics``: the axis changes only what a policy sees or reads (images, the camera, the light, the
    looks, the wording), never the simulator's state nor what the family's expert reads, so the expert
    plays a variant exactly as the clean episode and the clean episode's certificate stands for it. A
    family declares it for its own axes and its expert, with a test that the expert's state trajectory
    on each such axis equals the clean one.
    """

    name: str
    changes: str
    levels: tuple[str, str, str, str, str]
    apply: SceneAxis | None = None
    same_physics: bool = False


def level_texts(fmt: str, *columns: tuple[Any, ...]) -> tuple[str, str, str, str, str]:
    """An axis's five level descriptions: ``fmt`` filled from each column's value at that level."""
    texts = tuple(fmt.format(*values) for values in zip(*columns, strict=True))
    if len(texts) != len(LEVELS):
        raise ValueError(f"an axis describes {len(LEVELS)} levels, got {len(texts)} from {fmt!r}")
    return texts  # type: ignore[return-value]


CHANNEL_AXIS_DOCS: dict[str, Axis] = {
    "image_noise": Axis(
        "image_noise",
        "Gaussian pixel noise on every camera image",
        level_texts("std {:g}/255", _IMAGE_NOISE_STD),
    ),
    "image_blur": Axis(
        "image_blur",
        "blur on every camera image",
        level_texts("box radius {} px, twice", _BLUR_RADIUS),
    ),
    "image_jpeg": Axis(
        "image_jpeg",
        "JPEG compression of every camera image",
        level_texts("quality {}", _JPEG_QUALITY),
    ),
    "action_noise": Axis(
        "action_noise",
        "noise on the action channel (discrete: a random other action; continuous: Gaussian; "
        "multi-discrete: Gaussian offsets of 10x as many bins on each non-binary index)",
        level_texts("p/std {:g}", _ACTION_NOISE),
    ),
}
_REGISTRY: dict[str, dict[str, Axis]] = {}


def register_axes(family: str, axes: Mapping[str, Axis]) -> None:
    """Declare ``family``'s axes (scene axes with their ``apply``, channel axes from CHANNEL_AXIS_DOCS)."""
    _REGISTRY[family] = dict(axes)


def family_axes(family: str) -> dict[str, Axis]:
    """The axes ``family`` declared, in their documented order."""
    if family not in _REGISTRY:
        raise PerturbationError(
            f"family {family!r} declares no perturbation axes; known: {sorted(_REGISTRY)}"
        )
    return _REGISTRY[family]


def same_physics_axes(family: str) -> frozenset[str]:
    """The axes ``family`` declared ``same_physics`` (see :class:`Axis`)."""
    return frozenset(name for name, axis in family_axes(family).items() if axis.same_physics)


def check_spec(family: str, spec: object) -> PerturbationSpec:
    """``spec`` as a :class:`PerturbationSpec` of one of ``family``'s axes, or a one-line error."""
    parsed = PerturbationSpec.from_json(spec)
    axes = family_axes(family)
    if parsed.axis not in axes:
        known = set().union(*(_REGISTRY.values()))
        what = "an axis the family lacks" if parsed.axis in known else "an unknown axis"
        raise PerturbationError(
            f"perturbation axis {parsed.axis!r} is {what} for {family}; use one of {', '.join(axes)}"
        )
    return parsed


def parse_perturb(value: str, family: str) -> list[tuple[str, tuple[int, ...]]]:
    """``--perturb`` (``AXIS[:LEVEL]``, several separated by commas, or ``all``) as (axis, levels) pairs."""
    axes = family_axes(family)
    pairs: list[tuple[str, tuple[int, ...]]] = []
    for item in [p.strip() for p in value.split(",") if p.strip()] or [""]:
        name, _, level = item.partition(":")
        names = list(axes) if name == "all" else [name]
        levels: tuple[int, ...] = LEVELS
        if level:
            if not level.isdigit() or int(level) not in LEVELS:
                raise PerturbationError(f"--perturb {item}: the level must be 1-5 (AXIS:LEVEL)")
            levels = (int(level),)
        for n in names:
            if n not in axes:
                raise PerturbationError(
                    f"--perturb {item}: no axis {n!r} for {family}; use all or {', '.join(axes)}"
                )
            pairs.append((n, levels))
    return pairs


# ------------------------------------------------------------------------------------- paraphrases


@functools.cache
def paraphrase_table(path: Path) -> tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]:
    """A shipped paraphrase table (JSON ``{"rows": [{"pattern", "levels": [5 templates]}]}``): compiled rows."""
    rows = json.loads(Path(path).read_text())["rows"]
    return tuple((re.compile(r["pattern"]), tuple(r["levels"])) for r in rows)


def paraphrase_instruction(path: Path, instruction: str, level: int) -> str:
    """The table's entry for ``instruction`` at ``level``: the first row matching it, its named groups filled
    in (a trailing digit in a group name marks an alternative spelling of the same field)."""
    for pattern, levels in paraphrase_table(path):
        match = pattern.match(instruction)
        if match is None:
            continue
        fields: dict[str, str] = {}
        for name, value in match.groupdict().items():
            if value is not None:
                fields[name.rstrip("0123456789")] = value
        return levels[level - 1].format(**fields)
    return instruction  # (a table's last row matches any instruction)


def instruction_paraphrase(wording: Callable[[str, int], str]) -> SceneAxis:
    """The ``paraphrase`` scene axis of a family whose episode holds one ``instruction``: the episode with
    it replaced by ``wording(instruction, level)`` (the family's paraphrase table)."""

    def apply(episode: dict[str, Any], spec: PerturbationSpec) -> dict[str, Any]:
        out = copy.deepcopy(episode)
        out["instruction"] = wording(out["instruction"], spec.level)
        return out

    return apply


@dataclass(frozen=True)
class ShippedParaphrases:
    """A family's shipped pattern table (:func:`paraphrase_table`) bound once: its rows, an instruction's
    wording at a level, and the family's ``paraphrase`` axis."""

    path: Path

    def rows(self) -> tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]:
        return paraphrase_table(self.path)

    def wording(self, instruction: str, level: int) -> str:
        return paraphrase_instruction(self.path, instruction, level)

    def axis(self) -> SceneAxis:
        return instruction_paraphrase(self.wording)


# ------------------------------------------------------------------------------------ channel axes


class Channels:
    """The channel axes of one variant, for an env to apply: ``images(obs)`` corrupts every camera image
    (every uint8 array of shape (H, W, 3)) and ``action(a)`` perturbs an action of ``action_space``.

    Draws come from the spec's own generator, so a variant's corruption is the same on every run. With
    ``spec=None`` (or a scene axis) both are the identity. ``noisy_dims`` limits a Box action's noise to
    its first components (e.g. a manipulator's motion, its gripper untouched).
    """

    def __init__(
        self, spec: PerturbationSpec | None, action_space: spaces.Space, noisy_dims: int | None = None
    ) -> None:
        self.axis = spec.axis if spec is not None and spec.axis in CHANNEL_AXES else None
        self.level = spec.level if spec is not None else 0
        self.action_space, self.noisy_dims = action_space, noisy_dims
        self._rng = spec.rng("channel") if spec is not None else np.random.default_rng(0)

    def images(self, obs: dict[str, Any]) -> dict[str, Any]:
        if self.axis not in ("image_noise", "image_blur", "image_jpeg"):
            return obs
        return {k: self._image(v) if _is_image(v) else v for k, v in obs.items()}

    def _image(self, image: np.ndarray) -> np.ndarray:
        i = self.level - 1
        if self.axis == "image_noise":
            noisy = image + self._rng.normal(0.0, _IMAGE_NOISE_STD[i], image.shape)
            return np.clip(np.rint(noisy), 0, 255).astype(np.uint8)
        if self.axis == "image_blur":
            return box_blur(box_blur(image, _BLUR_RADIUS[i]), _BLUR_RADIUS[i])
        return jpeg_roundtrip(image, _JPEG_QUALITY[i])

    def action(self, action: Any) -> Any:
        if self.axis != "action_noise":
            return action
        p = _ACTION_NOISE[self.level - 1]
        if isinstance(self.action_space, spaces.Discrete):
            draw, other = self._rng.random(), int(self._rng.integers(self.action_space.n - 1))
            if draw >= p or not np.issubdtype(np.asarray(action).dtype, np.integer):
                return action  # (invalid actions keep the env's own error)
            return np.int64(other + (other >= int(action)))  # a different valid action
        if isinstance(self.action_space, spaces.Box):
            a = np.asarray(action, dtype=np.float64)
            scale = np.where(np.isfinite(self.action_space.high), self.action_space.high, 1.0)
            noise = self._rng.normal(0.0, p, a.shape)
            if self.noisy_dims is not None:
                noise.reshape(-1)[self.noisy_dims :] = 0.0
            noisy = a + noise * scale
            return np.clip(noisy, self.action_space.low, self.action_space.high).astype(a.dtype)
        if isinstance(self.action_space, spaces.MultiDiscrete):
            return self._multi_discrete(action, p)
        return action

    def _multi_discrete(self, action: Any, p: float) -> Any:
        """Gaussian offsets (std ``10 p`` bins) on every index with more than two values; binary ones (a
        gripper) keep theirs. Non-integer actions keep the env's own error."""
        a = np.asarray(action)
        nvec = np.asarray(self.action_space.nvec)  # type: ignore[attr-defined]
        if a.shape != nvec.shape or not np.all(np.isfinite(a)) or not np.all(a == np.round(a)):
            return action
        offsets = np.rint(self._rng.normal(0.0, _BINS_PER_NOISE * p, a.shape)) * (nvec > 2)
        return np.clip(a + offsets, 0, nvec - 1).astype(a.dtype)


def _is_image(value: object) -> bool:
    return (
        isinstance(value, np.ndarray) and value.dtype == np.uint8 and value.ndim == 3 and value.shape[2] == 3
    )


def box_blur(image: np.ndarray, radius: int) -> np.ndarray:
    """A (2r+1)-wide box filter along both image axes, edges replicated (uint8 in, uint8 out)."""
    out = image.astype(np.float64)
    for axis in (0, 1):
        pad = [(0, 0)] * out.ndim
        pad[axis] = (radius + 1, radius)
        padded = np.cumsum(np.pad(out, pad, mode="edge"), axis=axis)
        n = out.shape[axis]
        hi = np.take(padded, np.arange(2 * radius + 1, 2 * radius + 1 + n), axis=axis)
        lo = np.take(padded, np.arange(n), axis=axis)
        out = (hi - lo) / (2 * radius + 1)
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def jpeg_roundtrip(image: np.ndarray, quality: int) -> np.ndarray:
    """``image`` encoded as JPEG at ``quality`` and decoded again."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, format="JPEG", quality=int(quality))
    buffer.seek(0)
    return np.asarray(Image.open(buffer).convert("RGB"), dtype=np.uint8)
