"""The VLA model: VLM backbone + learnable action token(s) + FCDecoder head, saved as one directory.

Checkpoint directory layout (``VLAModel.save_pretrained`` / ``VLAModel.from_pretrained``)::

    config.json          VLAConfig (architecture, chunk, cameras, data format) + format version
    normalization.json   ActionNormalizer: bounds, gripper convention, training-data statistics
    head.safetensors     the action token vector and the FCDecoder weights
    backbone/            the fine-tuned VLM (``save_pretrained`` + processor), unless it was frozen:
                         then ``config.json`` names where the backbone comes from instead
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from vla.backbones import ImageLike, InputBuilder, VLMBackbone, load_backbone, torch_dtype
from vla.head import GRIPPER_LOSS_WEIGHT, HEAD_WIDTH, FCDecoder, action_loss
from vla.normalization import ActionNormalizer

FORMAT_VERSION = 1
CONFIG_FILE, NORM_FILE, HEAD_FILE, BACKBONE_DIR = (
    "config.json",
    "normalization.json",
    "head.safetensors",
    "backbone",
)


@dataclass
class VLAConfig:
    """Everything besides weights that defines a VLA model (stored as ``config.json``)."""

    backbone: str  # where the backbone was loaded from (name, directory or hub id)
    model_type: str = ""  # transformers model_type of the backbone
    chunk_size: int = 10  # future actions predicted per query (CALVIN 10, LIBERO 4)
    num_action_tokens: int = 1  # "latent": copies of the learnable action vector appended to the input
    head_hidden_size: int = HEAD_WIDTH
    gripper_loss_weight: float = GRIPPER_LOSS_WEIGHT
    cameras: list[str] = field(default_factory=lambda: ["rgb_static"])  # dataset image keys, in order
    image_size: int = 224
    position_ids: str = "mrope"  # "mrope" (correct M-RoPE) or "plain" (as the public Qwen code)
    data_format: str = "calvin"  # "calvin" or "libero": the action/gripper convention of the data
    backbone_saved: bool = True  # False: the backbone was frozen and is reloaded from `backbone`

    def to_json(self) -> str:
        return json.dumps({"format_version": FORMAT_VERSION, **asdict(self)}, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> VLAConfig:
        data = json.loads(text)
        version = data.pop("format_version", None)
        if version != FORMAT_VERSION:
            raise ValueError(f"VLA checkpoint format {version} is not supported (expected {FORMAT_VERSION})")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"VLA config has unknown fields {unknown}; written by a newer version?")
        return cls(**data)


class VLAModel(nn.Module):
    """Images + instruction -> a chunk of ``chunk_size`` actions (6 arm values in [-1, 1] + gripper logit)."""

    def __init__(self, backbone: VLMBackbone, config: VLAConfig, normalizer: ActionNormalizer) -> None:
        super().__init__()
        config.model_type = backbone.model_type
        self.backbone, self.config, self.normalizer = backbone, config, normalizer
        hidden = backbone.hidden_size
        self.action_token = nn.Parameter(torch.zeros(hidden))  # zero-initialised, as published
        self.head = FCDecoder(hidden, config.chunk_size, config.num_action_tokens, config.head_hidden_size)

    # ------------------------------------------------------------------------------------ building

    @classmethod
    def build(
        cls,
        backbone: str,
        *,
        normalizer: ActionNormalizer | None = None,
        dtype: torch.dtype = torch.float32,
        allow_download: bool = False,
        seed: int = 0,
        **config: Any,
    ) -> VLAModel:
        """A fresh (untrained head) model on the backbone ``backbone`` (name, directory or hub id)."""
        cfg = VLAConfig(backbone=str(backbone), **config)
        with quiet_hf_progress():
            vlm = load_backbone(
                backbone, position_ids=cfg.position_ids, dtype=dtype, allow_download=allow_download
            )
        torch.manual_seed(seed)  # the head's initialisation is a function of the seed
        norm = normalizer or ActionNormalizer.published(1.0 if cfg.data_format == "calvin" else -1.0)
        return cls(vlm, cfg, norm).to(dtype)

    def input_builder(self) -> InputBuilder:
        """A picklable ``(images, instructions) -> inputs`` function for data-loader workers."""
        return functools.partial(
            _build_inputs,
            type(self.backbone),
            self.backbone.processor,
            num_action_tokens=self.config.num_action_tokens,
        )

    # ------------------------------------------------------------------------------------ forward

    def forward(
        self,
        inputs: dict[str, torch.Tensor],
        arm_target: torch.Tensor | None = None,
        gripper_target: torch.Tensor | None = None,
    ) -> Any:
        """(arm ``(B, C, 6)`` in [-1, 1], gripper open logits ``(B, C)``); with targets, the loss dict.

        The loss is computed inside ``forward`` so that a DDP-wrapped model sees one forward call."""
        states = self.backbone(
            inputs, self.action_token.view(1, -1).expand(self.config.num_action_tokens, -1)
        )
        arm, gripper = self.head(states.to(self.head.mlp[0].weight.dtype))
        if arm_target is None or gripper_target is None:
            return arm, gripper
        return action_loss(arm, gripper, arm_target, gripper_target, self.config.gripper_loss_weight)

    @torch.inference_mode()
    def predict(
        self,
        images: Sequence[Sequence[ImageLike]],
        instructions: Sequence[str],
        gripper_open_value: float | None = None,
    ) -> np.ndarray:
        """Raw-unit action chunks ``(B, C, 7)``: un-normalised arm values, gripper +/- ``gripper_open_value``."""
        device = self.action_token.device
        inputs = {k: v.to(device) for k, v in self.input_builder()(images, instructions).items()}
        arm, gripper = self(inputs)
        arm_raw = self.normalizer.unnormalize_arm(arm.float().cpu().numpy())
        grip = self.normalizer.gripper_value(torch.sigmoid(gripper.float()).cpu().numpy(), gripper_open_value)
        return np.concatenate([arm_raw, grip[..., None]], axis=-1)

    # ------------------------------------------------------------------------------------ files

    def head_state(self) -> dict[str, torch.Tensor]:
        state = {"action_token": self.action_token.detach()}
        state.update({f"head.{k}": v.detach() for k, v in self.head.state_dict().items()})
        return {k: v.contiguous().cpu() for k, v in state.items()}

    def save_pretrained(self, directory: str | os.PathLike[str], save_backbone: bool | None = None) -> Path:
        """Write the checkpoint directory; ``save_backbone=False`` stores only the backbone's name."""
        from safetensors.torch import save_file

        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        saving = self.config.backbone_saved if save_backbone is None else save_backbone
        config = dataclasses.replace(self.config, backbone_saved=saving)
        if saving:
            with quiet_hf_progress():
                self.backbone.save(out / BACKBONE_DIR)
        save_file(self.head_state(), str(out / HEAD_FILE))
        self.normalizer.save(out / NORM_FILE)
        (out / CONFIG_FILE).write_text(config.to_json())
        return out

    @classmethod
    def from_pretrained(
        cls,
        directory: str | os.PathLike[str],
        *,
        dtype: torch.dtype | str = torch.float32,
        device: str = "cpu",
        allow_download: bool = False,
    ) -> VLAModel:
        """Restore a model written by :meth:`save_pretrained`."""
        from safetensors.torch import load_file

        root = Path(directory)
        if not (root / CONFIG_FILE).is_file():
            raise FileNotFoundError(
                f"{root} is not a VLA checkpoint: {CONFIG_FILE} is missing (train one with vla.train)"
            )
        config = VLAConfig.from_json((root / CONFIG_FILE).read_text())
        dtype = torch_dtype(dtype, device) if isinstance(dtype, str) else dtype
        source = str(root / BACKBONE_DIR) if config.backbone_saved else config.backbone
        with quiet_hf_progress():
            backbone = load_backbone(
                source, position_ids=config.position_ids, dtype=dtype, allow_download=allow_download
            )
        model = cls(backbone, config, ActionNormalizer.load(root / NORM_FILE))
        model.load_head_state(load_file(str(root / HEAD_FILE)))
        return model.to(device=device, dtype=dtype).eval()

    def load_head_state(self, state: dict[str, torch.Tensor]) -> None:
        with torch.no_grad():
            self.action_token.copy_(state["action_token"])
        head = {k.removeprefix("head."): v for k, v in state.items() if k.startswith("head.")}
        self.head.load_state_dict(head)


@contextlib.contextmanager
def quiet_hf_progress() -> Iterator[None]:
    """No transformers progress bars for loading or writing weights; the caller's setting is restored."""
    from transformers.utils import logging as hf_logging

    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()


def _build_inputs(
    backbone_cls: type[VLMBackbone],
    processor: Any,
    images: Sequence[Sequence[ImageLike]],
    instructions: Sequence[str],
    num_action_tokens: int,
) -> dict[str, torch.Tensor]:
    return backbone_cls.build_inputs(processor, images, instructions, num_action_tokens)
