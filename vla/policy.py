"""``--policy vla``: a VLA model in closed loop, querying every ``execute_steps`` steps.

The policy keeps its own queue of pending actions (LeRobot's habit): :meth:`VLAPolicy.select_action`
returns the next queued action and refills the queue from :meth:`VLAPolicy.predict_action_chunk` when it is
empty, keeping the first ``execute_steps`` actions of each predicted chunk (VLM4VLA's ``execute_step``).
Actions come out in the env's units: arm values un-normalised with the checkpoint's statistics, the gripper
as the env's open/close values (CALVIN: 1 open / -1 close; LIBERO: -1 open / +1 close).

Importing this module is cheap; torch and transformers load when a policy is built.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from policies.base import EpisodeContext, Policy
from policies.config_cli import arg
from policies.registry import PolicyEntry

if TYPE_CHECKING:  # torch is imported when a model loads
    from vla.model import VLAConfig, VLAModel


@dataclass(frozen=True)
class VLAPolicyConfig:
    """A VLM4VLA-style VLA: a checkpoint from ``vla.train``, or an untrained head on a backbone."""

    backbone: str | None = arg(
        None,
        "VLM for an untrained model (directory, hub id, tiny-*, or random:HUB_ID for a published size with "
        "random weights); ignored when --checkpoint is given",
    )
    checkpoint: str | None = arg(
        None, "VLA checkpoint directory written by vla.train (e.g. outputs/vla/checkpoints/last)"
    )
    execute_steps: int | None = arg(
        None,
        "actions executed from each predicted chunk before querying again (default: the whole chunk)",
        minimum=1,
    )
    device: str = arg("cpu", "cpu, cuda, cuda:N or auto")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = arg(
        "auto", "auto (float32 on CPU, bf16 on GPUs that support it), float32, bfloat16 or float16"
    )
    image_keys: tuple[str, ...] = arg(
        (), "observation keys of the model's cameras, in order (default: from the checkpoint)"
    )
    gripper_open: float | None = arg(
        None, "the env's gripper value for 'open' (default: the training data's: CALVIN 1, LIBERO -1)"
    )
    chunk_size: int = arg(10, "chunk length of an untrained model (a checkpoint fixes its own)", minimum=1)
    data_format: Literal["calvin", "libero"] = arg(
        "calvin", "action convention of an untrained model: calvin or libero"
    )
    seed: int = arg(0, "initialisation seed of an untrained model's head")
    allow_download: bool = arg(False, "let transformers download a hub id that is not cached locally")

    def check_inputs(self) -> None:
        """A model to build (a checkpoint or a backbone); ``ValueError`` naming the flags otherwise."""
        if not (self.checkpoint or self.backbone):
            raise ValueError(
                "--policy vla needs --checkpoint DIR (a model trained with vla.train) or --backbone "
                "NAME_OR_PATH (an untrained head)"
            )
        if (
            not self.checkpoint
            and self.execute_steps is not None
            and not 1 <= self.execute_steps <= self.chunk_size
        ):
            raise ValueError(
                f"--execute-steps {self.execute_steps}: must be between 1 and --chunk-size {self.chunk_size}"
            )

    def preflight(self) -> None:
        """Before any worker starts (nothing loaded): the checkpoint folder holds a VLA config, the backbone is a
        built-in name, a model folder or a cached hub id, the device exists."""
        from policies.preflight import check_device

        if self.checkpoint:
            if not (Path(self.checkpoint) / "config.json").is_file():
                where = "has no config.json" if Path(self.checkpoint).is_dir() else "does not exist"
                raise ValueError(
                    f"--checkpoint {self.checkpoint}: {where}, so it is no VLA checkpoint; pass a "
                    f"folder written by vla.train (e.g. outputs/vla/checkpoints/last)"
                )
        elif self.backbone:
            check_backbone("--backbone", self.backbone, allow_download=self.allow_download)
        check_device("--device", self.device)

    def label(self) -> str:
        """``vla-`` and the checkpoint (``RUN/checkpoints/last`` -> ``RUN-last``, how vla.train lays them out)
        or the backbone (``RUN/final`` / ``RUN/checkpoint-500`` -> ``RUN-final`` / ``RUN-checkpoint-500``, how
        ``benchmarks.posttrain`` lays a run out, so two post-trained backbones get two run folders; else its
        last path part), for run folders."""
        if self.checkpoint:
            parts = self.checkpoint.rstrip("/").split("/")
            has_run = len(parts) >= 3 and parts[-2] == "checkpoints"
            return "vla-" + (f"{parts[-3]}-{parts[-1]}" if has_run else parts[-1])
        parts = str(self.backbone or "").rstrip("/").split("/")
        posttrained = len(parts) >= 2 and (parts[-1] == "final" or parts[-1].startswith("checkpoint-"))
        return "vla-" + (f"{parts[-2]}-{parts[-1]}" if posttrained else parts[-1])


class VLAPolicy(Policy):
    """Closed-loop control with a :class:`vla.model.VLAModel`."""

    name = "vla"

    def __init__(
        self,
        model: VLAModel,
        *,
        execute_steps: int | None = None,
        image_keys: tuple[str, ...] = (),
        gripper_open: float | None = None,
        identity: Mapping[str, Any] | None = None,
    ) -> None:
        chunk = model.config.chunk_size
        steps = chunk if execute_steps is None else int(execute_steps)
        if not 1 <= steps <= chunk:
            raise ValueError(
                f"execute_steps must be between 1 and the chunk size {chunk}, got {execute_steps}"
            )
        self.model, self.execute_steps, self.gripper_open = model, steps, gripper_open
        self.image_keys = tuple(image_keys) or default_image_keys(model.config)
        self.identity = dict(identity or {})
        self.queue: deque[np.ndarray] = deque()
        self.tail: np.ndarray = np.zeros((0, 7))  # the last chunk beyond execute_steps (never executed)
        self.instruction, self.model_calls, self.steps = "", 0, 0

    def reset(self, context: EpisodeContext) -> None:
        self.instruction = context.instruction
        self.queue.clear()
        self.tail = np.zeros((0, 7))
        self.model_calls, self.steps = 0, 0

    def act(self, observation: Mapping[str, Any]) -> np.ndarray:
        return self.select_action(observation)

    def select_action(self, observation: Mapping[str, Any]) -> np.ndarray:
        """The next action, querying the model when the queue of executed-chunk actions is empty."""
        if not self.queue:
            chunk = self.predict_action_chunk(observation)
            self.queue.extend(chunk[: self.execute_steps])
            self.tail = chunk[self.execute_steps :]
        self.steps += 1
        return self.queue.popleft()

    def pending_actions(self) -> list[np.ndarray]:
        """The last chunk's actions not executed yet: the queue, then the tail beyond ``execute_steps``
        (what a latency-aware loop keeps running while the next chunk is computed)."""
        return [*self.queue, *self.tail]

    def predict_action_chunk(self, observation: Mapping[str, Any]) -> np.ndarray:
        """The model's full chunk ``(chunk, 7)`` for ``observation``, in the env's units."""
        images = [self._image(observation, key) for key in self.image_keys]
        self.model_calls += 1
        return self.model.predict([images], [self.instruction], self.gripper_open)[0].astype(np.float64)

    def _image(self, observation: Mapping[str, Any], key: str) -> np.ndarray:
        from vla.data import resize_image

        if key not in observation:
            raise KeyError(
                f"observation has no image {key!r} (keys: {sorted(observation)}); set --image-keys"
            )
        return resize_image(np.asarray(observation[key]), self.model.config.image_size)

    def episode_stats(self) -> dict[str, float]:
        return {"model_calls": float(self.model_calls), "steps": float(self.steps)}

    def describe(self) -> dict[str, Any]:
        config = self.model.config
        return {
            **super().describe(),
            **self.identity,
            "backbone": config.backbone,
            "model_type": config.model_type,
            "chunk_size": config.chunk_size,
            "execute_steps": self.execute_steps,
            "image_keys": list(self.image_keys),
        }


def check_backbone(flag: str, name: str, *, allow_download: bool = False) -> None:
    """A backbone that loads without a download (unless allowed): a ``tiny-*`` or native name, a model folder,
    or a hub id in the local Hugging Face cache; ``ValueError`` naming ``flag`` otherwise (nothing loaded)."""
    from policies.preflight import check_model

    if not _builtin_backbone(name):
        check_model(flag, name, allow_download=allow_download)


def _builtin_backbone(name: str) -> bool:
    """A ``--backbone`` name built locally (``tiny-*``) or loaded by its own module (e.g. EfficientNet), or a
    folder such a backbone was saved to (it holds ``vla_backbone.json``, no ``config.json``); ``ValueError``
    for a ``tiny-*`` name that is none of them."""
    from vla.backbones import NATIVE_BACKBONES, NATIVE_CONFIG_FILE, TINY_BACKBONES

    if (Path(name) / NATIVE_CONFIG_FILE).is_file():
        return True
    from vla.real_size import random_hub_id

    if random_hub_id(name):  # built from the published configuration: nothing to find on disk
        return True
    if "/" in name:
        return False

    if name.startswith("tiny-") and name not in TINY_BACKBONES:
        raise ValueError(
            f"--backbone {name}: no such tiny backbone; choose one of {', '.join(TINY_BACKBONES)}"
        )
    return name in TINY_BACKBONES or name in NATIVE_BACKBONES


def default_image_keys(config: VLAConfig) -> tuple[str, ...]:
    """Observation keys for the checkpoint's dataset cameras (CALVIN names match; LIBERO's are mapped)."""
    from vla.data import LIBERO_OBSERVATION_KEYS

    return tuple(LIBERO_OBSERVATION_KEYS.get(c, c) for c in config.cameras)


def _resolve_device(device: str) -> str:
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load_vla_model(config: VLAPolicyConfig) -> VLAModel:
    """The model ``config`` names: its checkpoint, or an untrained head on ``backbone``."""
    from vla.backbones import torch_dtype
    from vla.model import VLAModel

    device = _resolve_device(config.device)
    dtype = torch_dtype(config.dtype, device)
    if config.checkpoint:
        return VLAModel.from_pretrained(
            config.checkpoint, dtype=dtype, device=device, allow_download=config.allow_download
        )
    if not config.backbone:
        raise ValueError(
            "the vla policy needs --checkpoint DIR (a trained model) or --backbone NAME_OR_PATH (untrained)"
        )
    model = VLAModel.build(
        config.backbone,
        dtype=dtype,
        allow_download=config.allow_download,
        seed=config.seed,
        chunk_size=config.chunk_size,
        data_format=config.data_format,
        cameras=["rgb_static"] if config.data_format == "calvin" else ["agentview_rgb"],
    )
    return model.to(device).eval()


def build_vla_policy(config: VLAPolicyConfig, model: VLAModel | None = None) -> VLAPolicy:
    """The policy ``config`` describes; ``model`` replaces the one it would load (tests, shared models)."""
    model = model if model is not None else load_vla_model(config)
    identity = {"checkpoint": config.checkpoint, "trained": bool(config.checkpoint), "dtype": config.dtype}
    return VLAPolicy(
        model,
        execute_steps=config.execute_steps,
        image_keys=config.image_keys,
        gripper_open=config.gripper_open,
        identity=identity,
    )


#: ``--policy vla``, found by :mod:`policies.registry` through the ``spatial_arena.policies`` entry point
#: ``vla = "vla.policy:POLICY"`` (pyproject.toml), so that no lower layer names this one. It acts in
#: continuous 7-D end-effector space: CALVIN and LIBERO.
POLICY = PolicyEntry(
    config="vla.policy:VLAPolicyConfig",
    builder="vla.policy:build_vla_policy",
    benchmarks=("calvin", "libero"),
)
