"""Backbones at their published size with random weights: throughput, memory and latency at real scale
without a checkpoint (nothing is downloaded).

``--backbone random:HUB_ID`` (e.g. ``random:Qwen/Qwen2.5-VL-3B-Instruct``) builds the architecture of a
published checkpoint from the dimensions in :data:`PUBLISHED_SIZES` (copied from the checkpoint's
``config.json``). The tokenizer and image processor are the family's tiny ones (:mod:`policies.tiny`):
the prompt tokens differ from the real tokenizer's, but sequence lengths, image-token counts and every
matrix shape are the published model's, which is what the speed of a forward pass depends on. The
vocabulary keeps its published size (the tiny tokenizer's ids all fall inside it).

:func:`parameter_count` counts a configuration's parameters on the meta device (no memory, no weights),
so the size can be checked against the published figure without building the model.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from transformers import PretrainedConfig, ProcessorMixin

RANDOM_PREFIX = "random:"


@dataclass(frozen=True)
class PublishedSize:
    """One published checkpoint's architecture: the tiny architecture (:data:`policies.tiny.TINY_ARCHS`) it
    shares its processor with, its
    text and vision dimensions, and its parameter count as the model card states it."""

    tiny: str
    text: dict[str, Any]
    vision: dict[str, Any]
    parameters: float
    top: dict[str, Any] = field(default_factory=dict)


_QWEN25_VISION = {
    "depth": 32,
    "hidden_size": 1280,
    "intermediate_size": 3420,
    "num_heads": 16,
    "patch_size": 14,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "window_size": 112,
    "fullatt_block_indexes": [7, 15, 23, 31],
}
_QWEN25_ROPE = {"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [16, 24, 24]}

#: Published checkpoints that can be built at full size with random weights (hub id -> architecture).
PUBLISHED_SIZES: dict[str, PublishedSize] = {
    "Qwen/Qwen2.5-VL-3B-Instruct": PublishedSize(
        "qwen2_5_vl",
        {
            "vocab_size": 151936,
            "hidden_size": 2048,
            "intermediate_size": 11008,
            "num_hidden_layers": 36,
            "num_attention_heads": 16,
            "num_key_value_heads": 2,
            "rope_parameters": _QWEN25_ROPE,
            "tie_word_embeddings": True,
        },
        {**_QWEN25_VISION, "out_hidden_size": 2048},
        3.75e9,
        {"tie_word_embeddings": True},
    ),
    "Qwen/Qwen2.5-VL-7B-Instruct": PublishedSize(
        "qwen2_5_vl",
        {
            "vocab_size": 152064,
            "hidden_size": 3584,
            "intermediate_size": 18944,
            "num_hidden_layers": 28,
            "num_attention_heads": 28,
            "num_key_value_heads": 4,
            "rope_parameters": _QWEN25_ROPE,
            "tie_word_embeddings": False,
        },
        {**_QWEN25_VISION, "out_hidden_size": 3584},
        8.29e9,
        {"tie_word_embeddings": False},
    ),
}


def random_hub_id(name: str) -> str | None:
    """The hub id of a ``random:HUB_ID`` backbone name (``None`` for any other name); ``ValueError`` naming
    the known ids when it has no published size here."""
    if not name.startswith(RANDOM_PREFIX):
        return None
    hub_id = name[len(RANDOM_PREFIX) :]
    if hub_id not in PUBLISHED_SIZES:
        raise ValueError(
            f"--backbone {name}: no published size for {hub_id!r}; random init knows "
            f"{', '.join(RANDOM_PREFIX + k for k in PUBLISHED_SIZES)}"
        )
    return hub_id


def published_config(hub_id: str) -> tuple[PretrainedConfig, ProcessorMixin]:
    """The configuration of ``hub_id`` at its published size and the tiny processor of its family."""
    from transformers import AutoConfig

    from policies.backends.hf_processing import load_processor
    from policies.tiny import cached_tiny_vlm

    size = PUBLISHED_SIZES[hub_id]
    location = str(cached_tiny_vlm(size.tiny))
    tiny = AutoConfig.from_pretrained(location, local_files_only=True).to_dict()
    # derived fields (one layer type per layer) are dropped so the config class derives them anew
    text = {k: v for k, v in tiny["text_config"].items() if k != "layer_types"}
    merged = {
        **tiny,
        **size.top,
        "text_config": {**text, **copy.deepcopy(size.text)},
        "vision_config": {**tiny["vision_config"], **copy.deepcopy(size.vision)},
    }
    config = AutoConfig.for_model(
        tiny["model_type"], **{k: v for k, v in merged.items() if k != "model_type"}
    )
    return config, load_processor(location, local_files_only=True)


def parameter_count(config: PretrainedConfig) -> int:
    """Parameters of the model ``config`` describes, counted on the meta device (nothing allocated);
    tied embeddings count once."""
    import torch
    from transformers import AutoModelForImageTextToText

    with torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(config)
    return sum(p.numel() for p in model.parameters())


def build_random_vlm(hub_id: str, dtype: torch.dtype, seed: int = 0) -> tuple[Any, ProcessorMixin]:
    """``hub_id``'s architecture at its published size with weights drawn from ``seed``, and its processor."""
    import torch
    from transformers import AutoModelForImageTextToText

    config, processor = published_config(hub_id)
    torch.manual_seed(seed)
    model = AutoModelForImageTextToText.from_config(config, dtype=dtype)
    return model.eval(), processor
