"""Backbones at their published size with random weights: throughput, memory and latency at real scale
without a checkpoint (nothing is downloaded).

``--backbone random:HUB_ID`` (e.g. ``random:Qwen/Qwen2.5-VL-3B-Instruct``) builds the architecture of a
published checkpoint from the dimensions in :data:`PUBLISHED_SIZES` (copied from the checkpoint's
``config.json``); every checkpoint of every registered family (``python -m vla.backbones --list``) has an
entry. The tokenizer is the family's tiny one (:mod:`policies.tiny`) and the image processor the family's
tiny one rebuilt at the published image geometry (image side, tokens per image): the prompt tokens differ
from the real tokenizer's, but sequence lengths, image-token counts and every matrix shape are the
published model's, which is what the speed and memory of a forward pass depend on. The vocabulary keeps
its published size (the tiny tokenizer's ids all fall inside it).

:func:`parameter_count` counts a configuration's parameters on the meta device (no memory, no weights),
so the size is checked against the published figure without building the model; the weights are drawn
only when a model is loaded (:func:`build_random_vlm`). ``python -m vla.real_size`` prints each entry's
published and counted sizes.
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
    shares its tokenizer and processor class with, its text and vision dimensions, its parameter count as
    published (the model card's safetensors figure), top-level config fields, and the image geometry its
    processor needs where the tiny one's differs (image processor fields; processor arguments)."""

    tiny: str
    text: dict[str, Any]
    vision: dict[str, Any]
    parameters: float
    top: dict[str, Any] = field(default_factory=dict)
    image_processor: dict[str, Any] = field(default_factory=dict)
    processor: dict[str, Any] = field(default_factory=dict)


def _lm(
    vocab: int,
    hidden: int,
    intermediate: int,
    layers: int,
    heads: int,
    kv_heads: int,
    tied: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    """A decoder's dimensions as ``config.json`` names them (Llama / Qwen2 / Qwen3 style)."""
    return {
        "vocab_size": vocab,
        "hidden_size": hidden,
        "intermediate_size": intermediate,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "tie_word_embeddings": tied,
        **extra,
    }


# ------------------------------------------------------------------------------------------ Qwen-VL

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
_QWEN3_ROPE = {
    "rope_type": "default",
    "rope_theta": 5000000.0,
    "mrope_section": [24, 20, 20],
    "mrope_interleaved": True,
}
_QWEN3_VISION_300M = {
    "depth": 24,
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_heads": 16,
    "patch_size": 16,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "num_position_embeddings": 2304,
    "deepstack_visual_indexes": [5, 11, 17],
}
_QWEN3_VISION_SO400M = {
    **_QWEN3_VISION_300M,
    "depth": 27,
    "hidden_size": 1152,
    "intermediate_size": 4304,
    "deepstack_visual_indexes": [8, 16, 24],
}


def _qwen3_text(
    hidden: int, intermediate: int, layers: int, heads: int, kv_heads: int, tied: bool, **extra: Any
) -> dict[str, Any]:
    return _lm(
        151936,
        hidden,
        intermediate,
        layers,
        heads,
        kv_heads,
        tied,
        head_dim=128,
        rope_parameters=_QWEN3_ROPE,
        **extra,
    )


def _qwen3(
    text: dict[str, Any], vision: dict[str, Any], parameters: float, tiny: str = "qwen3_vl"
) -> PublishedSize:
    vision = {**vision, "out_hidden_size": text["hidden_size"]}
    return PublishedSize(tiny, text, vision, parameters, {"tie_word_embeddings": text["tie_word_embeddings"]})


# ------------------------------------------------------------------------------------------ SigLIP families

_SIGLIP_SO400M = {
    "hidden_size": 1152,
    "intermediate_size": 4304,
    "num_hidden_layers": 27,
    "num_attention_heads": 16,
    "patch_size": 14,
}


def _paligemma(tiny: str, text: dict[str, Any], parameters: float) -> PublishedSize:
    """PaliGemma (2) at 224 px: SigLIP-So400m/14 (256 image tokens) and a Gemma (2) decoder."""
    width = text["hidden_size"]
    vision = {**_SIGLIP_SO400M, "image_size": 224, "projection_dim": width}
    image = {"size": {"height": 224, "width": 224}, "image_seq_length": 256}
    return PublishedSize(
        tiny,
        {"vocab_size": 257216, "head_dim": 256, **text},
        vision,
        parameters,
        {"projection_dim": width},
        image,
    )


def _gemma2_text(hidden: int, intermediate: int, layers: int, heads: int, kv_heads: int) -> dict[str, Any]:
    return {
        "hidden_size": hidden,
        "intermediate_size": intermediate,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "query_pre_attn_scalar": 256,
        "sliding_window": 4096,
    }


def _gemma_text(hidden: int, intermediate: int, layers: int, heads: int, kv_heads: int) -> dict[str, Any]:
    """Gemma 3's decoder: head size 256, five local (1024-token window) layers to one global."""
    return {
        **_lm(262208, hidden, intermediate, layers, heads, kv_heads, head_dim=256),
        "query_pre_attn_scalar": 256,
        "sliding_window": 1024,
    }


def _gemma3(text: dict[str, Any], parameters: float) -> PublishedSize:
    """Gemma 3 (4B and up): SigLIP-So400m/14 at 896 px (64 x 64 patches average-pooled to 256 tokens)."""
    return PublishedSize(
        "gemma3",
        {k: v for k, v in text.items() if k != "tie_word_embeddings"},
        {**_SIGLIP_SO400M, "image_size": 896},
        parameters,
        {"mm_tokens_per_image": 256},
        {"size": {"height": 896, "width": 896}},
        {"image_seq_length": 256},
    )


def _internvl(text: dict[str, Any], parameters: float) -> PublishedSize:
    """InternVL 3 / 3.5 (``-hf``): InternViT-300M at 448 px, 32 x 32 patches pixel-shuffled to 256 tokens per
    tile, and an untied language-model head."""
    vision = {
        "hidden_size": 1024,
        "intermediate_size": 4096,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "image_size": [448, 448],
        "patch_size": [14, 14],
    }
    image = {"size": {"height": 448, "width": 448}, "max_patches": 12}
    tied = {"tie_word_embeddings": text["tie_word_embeddings"]}
    return PublishedSize("internvl", text, vision, parameters, tied, image, {"image_seq_length": 256})


#: LLaVA-OneVision's "anyres" grid: every arrangement of 1 to 6 x 1 to 6 tiles of 384 px
_LLAVA_OV_PINPOINTS = [[384 * rows, 384 * cols] for rows in range(1, 7) for cols in range(1, 7)]


def _llava_onevision(text: dict[str, Any], parameters: float) -> PublishedSize:
    """LLaVA-OneVision: SigLIP-So400m/14 at 384 px without its last layer (729 tokens per tile, "anyres"
    tiles plus the whole image) and a Qwen2 decoder."""
    return PublishedSize(
        "llava_onevision",
        text,
        {**_SIGLIP_SO400M, "num_hidden_layers": 26, "image_size": 384},
        parameters,
        {"tie_word_embeddings": text["tie_word_embeddings"], "image_grid_pinpoints": _LLAVA_OV_PINPOINTS},
        {"size": {"height": 384, "width": 384}, "image_grid_pinpoints": _LLAVA_OV_PINPOINTS},
        {
            "num_image_tokens": 729,
            "vision_feature_select_strategy": "full",
            "vision_aspect_ratio": "anyres_max_9",
        },
    )


_SIGLIP_B16_512 = {  # SmolVLM's SigLIP-B/16 at 512 px
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "patch_size": 16,
    "image_size": 512,
}


def _smolvlm(text: dict[str, Any], vision: dict[str, Any], scale: int, parameters: float) -> PublishedSize:
    """SmolVLM (2): one tile per image at the vision tower's size (the published processor also splits large
    images into such tiles), ``(side / patch)^2 / scale^2`` tokens each."""
    side, patch = vision["image_size"], vision["patch_size"]
    tokens = (side // patch) ** 2 // scale**2
    tied = text["tie_word_embeddings"]
    edge = {"longest_edge": side}
    return PublishedSize(
        "smolvlm",
        text,
        vision,
        parameters,
        {"scale_factor": scale, "tie_word_embeddings": tied},
        {"size": edge, "max_image_size": edge},
        {"image_seq_len": tokens},
    )


#: Published checkpoints that can be built at full size with random weights (hub id -> architecture); the
#: dimensions are copied from each checkpoint's ``config.json``, the parameter counts from its model card.
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
    "Qwen/Qwen3-VL-2B-Instruct": _qwen3(_qwen3_text(2048, 6144, 28, 16, 8, True), _QWEN3_VISION_300M, 2.13e9),
    "Qwen/Qwen3-VL-4B-Instruct": _qwen3(_qwen3_text(2560, 9728, 36, 32, 8, True), _QWEN3_VISION_300M, 4.44e9),
    "Qwen/Qwen3-VL-8B-Instruct": _qwen3(
        _qwen3_text(4096, 12288, 36, 32, 8, False), _QWEN3_VISION_SO400M, 8.77e9
    ),
    "Qwen/Qwen3-VL-30B-A3B-Instruct": _qwen3(
        _qwen3_text(
            2048,
            6144,
            48,
            32,
            4,
            False,
            num_local_experts=128,  # "num_experts" in config.json: the config class's own name for it
            num_experts_per_tok=8,
            moe_intermediate_size=768,
            decoder_sparse_step=1,
        ),
        _QWEN3_VISION_SO400M,
        31.07e9,
        tiny="qwen3_vl_moe",
    ),
    "google/paligemma-3b-pt-224": _paligemma(
        "paligemma",
        {
            "hidden_size": 2048,
            "intermediate_size": 16384,
            "num_hidden_layers": 18,
            "num_attention_heads": 8,
            "num_key_value_heads": 1,
        },
        2.92e9,
    ),
    "google/paligemma2-3b-pt-224": _paligemma("paligemma2", _gemma2_text(2304, 9216, 26, 8, 4), 3.03e9),
    "google/paligemma2-10b-pt-224": _paligemma("paligemma2", _gemma2_text(3584, 14336, 42, 16, 8), 9.66e9),
    "google/gemma-3-4b-it": _gemma3(_gemma_text(2560, 10240, 34, 8, 4), 4.30e9),
    "google/gemma-3-12b-it": _gemma3(_gemma_text(3840, 15360, 48, 16, 8), 12.19e9),
    "OpenGVLab/InternVL3_5-4B-HF": _internvl(_lm(151936, 2560, 9728, 36, 32, 8, head_dim=128), 4.73e9),
    "OpenGVLab/InternVL3-1B-hf": _internvl(_lm(151674, 896, 4864, 24, 14, 2, head_dim=64), 0.938e9),
    "OpenGVLab/InternVL3-2B-hf": _internvl(_lm(151674, 1536, 8960, 28, 12, 2, head_dim=128), 2.09e9),
    "OpenGVLab/InternVL3-8B-hf": _internvl(_lm(151674, 3584, 18944, 28, 28, 4, head_dim=128), 7.94e9),
    "llava-hf/llava-onevision-qwen2-0.5b-ov-hf": _llava_onevision(
        _lm(152000, 896, 4864, 24, 14, 2, tied=True), 0.894e9
    ),
    "llava-hf/llava-onevision-qwen2-7b-ov-hf": _llava_onevision(_lm(152128, 3584, 18944, 28, 28, 4), 8.03e9),
    "HuggingFaceTB/SmolVLM-256M-Instruct": _smolvlm(
        _lm(49280, 576, 1536, 30, 9, 3, head_dim=64), _SIGLIP_B16_512, 4, 0.256e9
    ),
    "HuggingFaceTB/SmolVLM-500M-Instruct": _smolvlm(
        _lm(49280, 960, 2560, 32, 15, 5, head_dim=64), _SIGLIP_B16_512, 4, 0.507e9
    ),
    "HuggingFaceTB/SmolVLM2-2.2B-Instruct": _smolvlm(
        _lm(49280, 2048, 8192, 24, 32, 32, head_dim=64), {**_SIGLIP_SO400M, "image_size": 384}, 3, 2.25e9
    ),
    "microsoft/kosmos-2-patch14-224": PublishedSize(
        "kosmos2",
        {
            "vocab_size": 65037,
            "embed_dim": 2048,
            "layers": 24,
            "ffn_dim": 8192,
            "attention_heads": 32,
            "max_position_embeddings": 2048,
        },
        {  # CLIP ViT-L/14 at 224 px, resampled to 64 latent queries
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "num_hidden_layers": 24,
            "num_attention_heads": 16,
            "image_size": 224,
            "patch_size": 14,
        },
        1.66e9,
        {},
        {"size": {"shortest_edge": 224}, "crop_size": {"height": 224, "width": 224}},
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
    return config, published_processor(load_processor(location, local_files_only=True), size)


def published_processor(processor: ProcessorMixin, size: PublishedSize) -> ProcessorMixin:
    """The family's tiny processor rebuilt at ``size``'s image geometry (image side, tokens per image), so an
    image becomes as many image tokens as the published model takes; the tiny tokenizer is kept."""
    if not (size.image_processor or size.processor):
        return processor  # Qwen-VL: the processor sizes images by patch, whatever the tower's width
    images = processor.image_processor
    image_processor = type(images).from_dict({**images.to_dict(), **size.image_processor})
    template = getattr(processor, "chat_template", None)
    extra = {"chat_template": template} if template else {}
    return type(processor)(
        image_processor=image_processor,
        tokenizer=processor.tokenizer,
        **extra,
        **size.processor,
    )


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


def size_table() -> str:
    """Each entry's family, published parameter count and the count on the meta device (Markdown)."""
    lines = ["| backbone | model_type | published | counted (meta) |", "|---|---|---|---|"]
    for hub_id, size in PUBLISHED_SIZES.items():
        config, _ = published_config(hub_id)
        counted = parameter_count(config)
        lines.append(
            f"| `random:{hub_id}` | `{config.model_type}` | {size.parameters / 1e9:.3f} B | {counted / 1e9:.3f} B |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(size_table())
