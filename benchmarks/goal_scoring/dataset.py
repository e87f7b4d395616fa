"""The goal-image dataset format: a directory with ``samples.jsonl``, ``dataset.json`` and PNG images.

One JSON object per line of ``samples.jsonl``::

    {"id": "nav-00000", "kind": "nav",
     "start_image": "images/nav-00000_start.png", "goal_image": "images/nav-00000_goal.png",
     "instruction": "Move the camera so that it sees the goal view.",
     "step_sizes": {"translation": 0.019375, "rotation": 0.4509}, "max_step_num": 10,
     "plan": {"step_1": {"actions": ["W", "←"], "step_nums": [4, 2]}},
     "trajectory": [[[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], ...],
     "source": "navigation-env", "metadata": {}}

``kind`` is ``nav`` or ``manip``; ``plan`` (the model output format, our symbols) and/or ``trajectory``
(camera-to-world 4x4 poses, OpenCV camera frame, one more pose than plan steps) give the ground truth;
with only a trajectory the plan is derived with :func:`action_mapping.trajectory_to_plan`.
``lmms_eval_extra_info`` (optional) holds a raw lmms-eval ground truth (``optimal_rel_pose`` and
``"0->1"`` segments) for exact reproduction of items imported from SpatialTree-Bench. Image paths are
relative to the dataset directory. ``dataset.json`` holds ``{"format": "spatialarena-goal/1", ...}`` and
how the data was made.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from action_mapping import Plan, StepSizes, parse_plan, trajectory_to_plan
from benchmarks.scoring.goal import KINDS, GoalReference
from benchmarks.scoring.official.goal_lmms_eval import check_lmms_eval_extra_info
from policies.config_cli import InputError

FORMAT = "spatialarena-goal/1"
SAMPLES_FILE = "samples.jsonl"
HEADER_FILE = "dataset.json"
IMAGES_DIR = "images"
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_FIELDS = (
    "id",
    "kind",
    "start_image",
    "goal_image",
    "instruction",
    "step_sizes",
    "max_step_num",
    "plan",
    "trajectory",
    "source",
    "metadata",
    "lmms_eval_extra_info",
)
_STEP_SIZES_EXAMPLE = (
    '{"translation": 0.019375, "rotation": 0.4509} (metres and radians per step, as in the paper)'
)


class DatasetError(InputError):
    """A dataset, sample or predictions file that cannot be used; the message names it and the fix."""


@dataclass(frozen=True, eq=False)
class GoalSample:
    """One start/goal pair with its ground truth (see the module docstring for the file format)."""

    id: str
    kind: str
    start_image: str
    goal_image: str
    instruction: str
    step_sizes: StepSizes
    plan: Plan
    trajectory: np.ndarray | None = None
    source: str = "unknown"
    max_step_num: int = 10
    metadata: dict[str, Any] = field(default_factory=dict)
    lmms_eval_extra_info: dict[str, Any] | None = None

    def reference(self) -> GoalReference:
        """What scorers compare predictions with (built once per sample)."""
        if not hasattr(self, "_reference"):
            ref = GoalReference(
                self.kind,
                self.plan,
                self.step_sizes,
                self.trajectory,
                self.lmms_eval_extra_info,
                self.max_step_num,
            )
            object.__setattr__(self, "_reference", ref)
        return self._reference  # type: ignore[attr-defined]

    def to_json(self) -> dict[str, Any]:
        """The ``samples.jsonl`` record (plan and trajectory both written when known)."""
        record: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "start_image": self.start_image,
            "goal_image": self.goal_image,
            "instruction": self.instruction,
            "step_sizes": {"translation": self.step_sizes.translation, "rotation": self.step_sizes.rotation},
            "max_step_num": self.max_step_num,
            "plan": self.plan.to_json(),
        }
        if self.trajectory is not None:
            record["trajectory"] = np.asarray(self.trajectory).tolist()
        record["source"] = self.source
        record["metadata"] = self.metadata
        if self.lmms_eval_extra_info is not None:
            record["lmms_eval_extra_info"] = self.lmms_eval_extra_info
        return record


@dataclass
class GoalDataset:
    """Samples of one dataset directory, in file order."""

    root: Path
    samples: list[GoalSample]
    header: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.samples)

    def __iter__(self) -> Iterator[GoalSample]:
        return iter(self.samples)

    def image_path(self, sample: GoalSample, which: str) -> Path:
        """Absolute path of ``which`` (``"start"`` or ``"goal"``) image of ``sample``."""
        rel = sample.start_image if which == "start" else sample.goal_image
        return (self.root / rel).resolve()

    def load_image(self, sample: GoalSample, which: str) -> np.ndarray:
        """The image as ``uint8`` ``H x W x 3`` RGB."""
        path = self.image_path(sample, which)
        try:
            with Image.open(path) as im:
                return np.asarray(im.convert("RGB"))
        except (OSError, ValueError) as e:
            raise DatasetError(
                f"sample {sample.id!r}: cannot read {which} image {path}: {e}. "
                "Fix: re-write the image as PNG or JPEG"
            ) from e

    def references(self) -> list[GoalReference]:
        return [s.reference() for s in self.samples]


# --------------------------------------------------------------------------------------------------------
# Reading


def load_dataset(root: str | Path, *, check_images: bool = True) -> GoalDataset:
    """Read and validate a dataset directory; any problem raises :class:`DatasetError` naming the sample."""
    root = Path(root)
    samples_path = root / SAMPLES_FILE
    if not samples_path.is_file():
        raise DatasetError(
            f"{samples_path} not found. Fix: point --dataset at a directory written by `python -m "
            f"benchmarks.goal_scoring generate` or `convert`, or write {SAMPLES_FILE} as docs/guide/goal-scoring.md describes"
        )
    header = _read_header(root)
    samples, seen = [], set()
    for line_no, obj in _jsonl_objects(samples_path):
        where = f"{samples_path}:{line_no}"
        sample = sample_from_json(obj, where)
        if sample.id in seen:
            raise DatasetError(
                f"{where}: duplicate sample id {sample.id!r}. Fix: give every sample its own id"
            )
        seen.add(sample.id)
        if check_images:
            _check_images(root, sample, where)
        samples.append(sample)
    if not samples:
        raise DatasetError(f"{samples_path} holds no samples. Fix: generate or convert some first")
    return GoalDataset(root, samples, header)


def _read_header(root: Path) -> dict[str, Any]:
    path = root / HEADER_FILE
    if not path.exists():
        return {}
    try:
        header = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise DatasetError(f"{path}: not valid JSON ({e}). Fix: repair or delete the file") from e
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise DatasetError(
            f"{path}: 'format' must be {FORMAT!r}, got {header.get('format') if isinstance(header, dict) else header!r}. "
            "Fix: this reader understands only that version"
        )
    return header


def _jsonl_objects(path: Path) -> Iterator[tuple[int, Any]]:
    with path.open(encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield line_no, json.loads(line)
            except ValueError as e:
                raise DatasetError(
                    f"{path}:{line_no}: not valid JSON ({e}). Fix: one JSON object per line"
                ) from e


def _check_images(root: Path, sample: GoalSample, where: str) -> None:
    for which, rel in (("start_image", sample.start_image), ("goal_image", sample.goal_image)):
        if not (root / rel).is_file():
            raise DatasetError(
                f"{where} (sample {sample.id!r}): {which} {root / rel} does not exist. "
                "Fix: paths are relative to the dataset directory; copy the image there"
            )


def sample_from_json(obj: object, where: str = "sample") -> GoalSample:
    """Validate one ``samples.jsonl`` record and build the sample (deriving the plan from a trajectory)."""
    if not isinstance(obj, dict):
        raise DatasetError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    sid = obj.get("id")
    if not isinstance(sid, str) or not _ID.match(sid):
        raise DatasetError(f"{where}: 'id' must be a string of letters, digits, '.', '_' or '-', got {sid!r}")
    where = f"{where} (sample {sid!r})"
    unknown = sorted(set(obj) - set(_FIELDS))
    if unknown:
        raise DatasetError(
            f"{where}: unknown field(s) {unknown}. Fix: move extra information under 'metadata'"
        )
    kind = _choice(obj, "kind", KINDS, where)
    sizes = _step_sizes(obj.get("step_sizes"), where)
    max_step_num = obj.get("max_step_num", 10)
    if isinstance(max_step_num, bool) or not isinstance(max_step_num, int) or max_step_num < 1:
        raise DatasetError(f"{where}: 'max_step_num' must be an integer >= 1, got {max_step_num!r}")
    trajectory = _trajectory(obj["trajectory"], where) if obj.get("trajectory") is not None else None
    plan = _ground_truth_plan(obj.get("plan"), trajectory, sizes, max_step_num, where)
    plan.step_sizes = sizes  # the counts of a ground-truth plan are in the sample's units
    return GoalSample(
        id=sid,
        kind=kind,
        start_image=_string(obj, "start_image", where, required=True),
        goal_image=_string(obj, "goal_image", where, required=True),
        instruction=_string(obj, "instruction", where),
        step_sizes=sizes,
        plan=plan,
        trajectory=trajectory,
        source=_string(obj, "source", where) or "unknown",
        max_step_num=max_step_num,
        metadata=_mapping(obj, "metadata", where),
        lmms_eval_extra_info=_extra_info(obj, where),
    )


def _choice(obj: Mapping[str, Any], key: str, allowed: tuple[str, ...], where: str) -> str:
    value = obj.get(key)
    if value not in allowed:
        raise DatasetError(f"{where}: '{key}' must be one of {list(allowed)}, got {value!r}")
    return value


def _string(obj: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str:
    value = obj.get(key, None if required else "")
    if not isinstance(value, str) or (required and not value):
        raise DatasetError(
            f"{where}: '{key}' must be a {'non-empty ' if required else ''}string, got {value!r}"
        )
    return value


def _mapping(obj: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    value = obj.get(key, {})
    if not isinstance(value, dict):
        raise DatasetError(f"{where}: '{key}' must be an object, got {type(value).__name__}")
    return value


def _step_sizes(value: Any, where: str) -> StepSizes:
    ok = (
        isinstance(value, dict)
        and set(value) == {"translation", "rotation"}
        and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
            for v in value.values()
        )
    )
    if not ok:
        raise DatasetError(f"{where}: 'step_sizes' must be {_STEP_SIZES_EXAMPLE}, got {value!r}")
    return StepSizes(float(value["translation"]), float(value["rotation"]))


def _trajectory(value: object, where: str) -> np.ndarray:
    try:
        poses = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as e:
        raise DatasetError(f"{where}: 'trajectory' must be a list of 4x4 matrices ({e})") from e
    problem = trajectory_problem(poses)
    if problem:
        raise DatasetError(f"{where}: 'trajectory' {problem}")
    return poses


def trajectory_problem(poses: np.ndarray) -> str | None:
    """Why ``poses`` is not a usable C2W trajectory (``None`` when it is), with the fix."""
    if poses.ndim != 3 or poses.shape[1:] != (4, 4) or len(poses) < 2:
        return f"must have shape (N >= 2, 4, 4), got {poses.shape}"
    if not np.isfinite(poses).all():
        return "has non-finite entries. Fix: drop or interpolate the failed frames"
    if not np.allclose(poses[:, 3], [0, 0, 0, 1], atol=1e-9):
        return "bottom rows must be [0, 0, 0, 1] (rigid camera-to-world poses)"
    R = poses[:, :3, :3]
    error = np.abs(R @ np.swapaxes(R, 1, 2) - np.eye(3)).max()
    if error > 1e-6 or (np.linalg.det(R) <= 0).any():
        return (
            f"rotations are not orthonormal with det +1 (max |R Rᵀ - I| = {error:.2g}). Fix: "
            "re-orthonormalise them, e.g. scipy Rotation.from_matrix(R).as_matrix()"
        )
    return None


def _ground_truth_plan(
    value: object, trajectory: np.ndarray | None, sizes: StepSizes, max_step_num: int, where: str
) -> Plan:
    if value is None:
        if trajectory is None:
            raise DatasetError(f"{where}: needs a ground truth: 'plan' and/or 'trajectory'")
        plan = trajectory_to_plan(trajectory, sizes.translation, sizes.rotation, max_count=max_step_num)
        if plan.errors:
            raise DatasetError(
                f"{where}: the trajectory needs more than {max_step_num} steps of one primitive "
                f"({'; '.join(plan.errors)}). Fix: larger step_sizes, more poses, or `convert --fit-step-sizes`"
            )
        return plan
    plan = _plan_from_json(value, max_step_num, where)
    if trajectory is not None and len(trajectory) != len(plan.steps) + 1:
        raise DatasetError(
            f"{where}: {len(plan.steps)} plan steps need {len(plan.steps) + 1} trajectory poses, "
            f"got {len(trajectory)}. Fix: one pose at the start and one after each step"
        )
    return plan


def _plan_from_json(value: object, max_step_num: int, where: str) -> Plan:
    if not isinstance(value, dict) or not value:
        raise DatasetError(
            f'{where}: \'plan\' must be an object {{"step_1": {{"actions": [...], "step_nums": [...]}}}}'
        )
    plan = parse_plan(json.dumps(value, ensure_ascii=False), max_step_num=max_step_num)
    if plan.errors or plan.format not in ("navigation", "manipulation") or not plan.steps:
        problems = "; ".join(plan.errors) or f"format {plan.format!r}"
        raise DatasetError(
            f"{where}: ground-truth 'plan' is not clean ({problems}). Fix: keys step_1..step_N, "
            f"known action symbols, integer step_nums 0..{max_step_num}, gripper 0/1"
        )
    return plan


def _extra_info(obj: Mapping[str, Any], where: str) -> dict[str, Any] | None:
    extra = obj.get("lmms_eval_extra_info")
    if extra is None:
        return None
    try:
        check_lmms_eval_extra_info(extra)
    except ValueError as e:
        raise DatasetError(f"{where}: {e}") from e
    return extra


# --------------------------------------------------------------------------------------------------------
# Writing


class DatasetWriter:
    """Append samples (records + PNG images) to a dataset directory, validating each as it is written.

    ``append=False`` creates a new dataset and refuses a directory that already holds one.
    """

    def __init__(
        self, root: str | Path, header: Mapping[str, Any] | None = None, *, append: bool = False
    ) -> None:
        self.root = Path(root)
        samples_path = self.root / SAMPLES_FILE
        self.ids: set[str] = set()
        if samples_path.exists() and not append:
            raise DatasetError(
                f"{self.root} already holds a dataset. Fix: choose a new directory, or delete it"
            )
        if samples_path.exists():
            self.ids = {s.id for s in load_dataset(self.root, check_images=False)}
        (self.root / IMAGES_DIR).mkdir(parents=True, exist_ok=True)
        if not (self.root / HEADER_FILE).exists():
            text = json.dumps({"format": FORMAT, **(header or {})}, indent=2, ensure_ascii=False)
            (self.root / HEADER_FILE).write_text(text + "\n", encoding="utf-8")
        self._file = samples_path.open("a", encoding="utf-8")

    def add(
        self,
        record: Mapping[str, Any],
        start_image: np.ndarray | str | Path,
        goal_image: np.ndarray | str | Path,
    ) -> GoalSample:
        """Write one sample. ``record`` is a ``samples.jsonl`` object without the image paths."""
        sid = record.get("id")
        if sid in self.ids:
            raise DatasetError(f"{self.root}: sample id {sid!r} already exists. Fix: pick another --id")
        full = {
            **record,
            "start_image": f"{IMAGES_DIR}/{sid}_start.png",
            "goal_image": f"{IMAGES_DIR}/{sid}_goal.png",
        }
        sample = sample_from_json(full, f"new sample for {self.root}")
        save_png(start_image, self.root / full["start_image"])
        save_png(goal_image, self.root / full["goal_image"])
        self._file.write(json.dumps(sample.to_json(), ensure_ascii=False) + "\n")
        self._file.flush()
        self.ids.add(sample.id)
        return sample

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> DatasetWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def save_png(image: np.ndarray | str | Path, path: Path) -> None:
    """Write ``image`` (``uint8`` ``H x W x 3`` array, or an image file to re-encode) as a PNG at ``path``."""
    if isinstance(image, (str, Path)):
        try:
            with Image.open(image) as im:
                im.convert("RGB").save(path, format="PNG")
        except OSError as e:
            raise DatasetError(f"cannot read image {image}: {e}. Fix: pass a PNG or JPEG file") from e
        return
    array = np.asarray(image)
    if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
        raise DatasetError(
            f"images must be uint8 arrays of shape (H, W, 3), got {array.dtype} {array.shape} "
            f"for {path.name}. Fix: convert with np.asarray(img, np.uint8)[..., :3]"
        )
    Image.fromarray(array).save(path, format="PNG")


# --------------------------------------------------------------------------------------------------------
# Predictions files: one {"id": ..., "output": "<raw model text>", ...} per line


def load_predictions(path: str | Path) -> dict[str, dict[str, Any]]:
    """Predictions by sample id; each record keeps every field it was written with. A record of a failed
    call has ``output`` null and an ``error`` string (``score`` counts it as errored, never as an answer)."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(
            f"predictions file {path} not found. Fix: run `predict` first, or pass a built-in reference "
            "(see score --help)"
        )
    out: dict[str, dict[str, Any]] = {}
    for line_no, obj in _jsonl_objects(path):
        where = f"{path}:{line_no}"
        errored = isinstance(obj, dict) and obj.get("output") is None and isinstance(obj.get("error"), str)
        if (
            not isinstance(obj, dict)
            or not isinstance(obj.get("id"), str)
            or not (isinstance(obj.get("output"), str) or errored)
        ):
            raise DatasetError(
                f"{where}: each line must be an object with string 'id' and 'output' (raw model text), "
                "or 'output' null with the call's 'error'"
            )
        if obj["id"] in out:
            raise DatasetError(
                f"{where}: duplicate prediction for sample {obj['id']!r}. Fix: keep one per sample"
            )
        out[obj["id"]] = obj
    return out


def write_jsonl(path: str | Path, records: list[dict[str, Any]]) -> None:
    """Write records as strict JSON lines (UTF-8, no NaN)."""
    with Path(path).open("w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n")
