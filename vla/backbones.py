"""VLM backbones that return the last hidden states at appended action tokens, one small class each.

A backbone wraps a transformers image-text-to-text model and its processor. Turning samples into tensors
(:meth:`VLMBackbone.build_inputs`, a classmethod so data-loader workers need only the processor) renders
the architecture's prompt with the image(s) and the instruction, left-pads the batch so every row ends in
the same column, and appends ``num_action_tokens`` placeholder positions. :meth:`VLMBackbone.forward`
embeds the tokens, writes the learnable action vector into the placeholders and runs the VLM's base model
on ``inputs_embeds`` only (Qwen3-VL rejects ``input_ids`` together with ``inputs_embeds``; the image
placeholders are found by comparing embeddings with the image token's), with explicit position ids:

- Qwen2.5-VL / Qwen3-VL / Qwen3-VL-MoE: M-RoPE ids from the model's ``get_rope_index`` with ``mm_token_type_ids`` (left
  without them, transformers silently falls back to plain 1-D positions). ``position_ids="plain"``
  reproduces the public VLM4VLA Qwen code, which feeds ``arange`` positions to all three M-RoPE axes.
- PaliGemma / PaliGemma 2: 1-indexed plain positions that skip left padding; image + prompt form the
  bidirectional prefix and the action tokens the causal suffix (``token_type_ids`` 0 / 1), PaliGemma's
  prefix-LM layout.
- Kosmos-2: its decoder's sinusoidal positions, counted from ``pad_token_id + 1`` over attended tokens;
  image features go where ``image_embeds_position_mask`` says (0 at the action tokens).
- Gemma 3: plain positions from 0; each image's tokens attend to each other both ways (``token_type_ids``
  1), the action tokens are text (0).
- InternVL, LLaVA-OneVision, SmolVLM: plain positions from 0.

Prompts: Qwen's ChatML text with the image(s) and "What action should the robotic arm take to
{instruction}" as the user turn and the assistant turn opened (the published Qwen prompt; VLM4VLA's
InternVL prompt is the same with ``<IMG_CONTEXT>`` per image; LLaVA-OneVision uses it with ``<image>``);
PaliGemma ``<image>... <bos>{instruction}\\n`` (published); Kosmos-2, Gemma 3 and SmolVLM put the same
question in their own chat format (see each class).

Adding an architecture: subclass :class:`VLMBackbone`, set ``model_types`` (and ``label`` / ``checkpoints``
for the table), implement ``render_prompts`` and, if needed, set ``action_token_values`` / ``forward_keys``
and override ``position_ids`` / ``run_base``; decorate it with :func:`register_backbone`. ``python -m
vla.backbones --list`` prints the table of registered backbones.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np
import torch
from PIL import Image
from torch import nn

if TYPE_CHECKING:  # transformers is imported with the backbone that needs it
    from transformers import ProcessorMixin

#: Smoke-test backbones built locally by :mod:`policies.tiny` (name -> tiny architecture).
TINY_BACKBONES: dict[str, str] = {
    "tiny-qwen2.5-vl": "qwen2_5_vl",
    "tiny-qwen3-vl": "qwen3_vl",
    "tiny-qwen3-vl-moe": "qwen3_vl_moe",
    "tiny-paligemma": "paligemma",
    "tiny-paligemma2": "paligemma2",
    "tiny-kosmos2": "kosmos2",
    "tiny-internvl": "internvl",
    "tiny-gemma3": "gemma3",
    "tiny-smolvlm": "smolvlm",
    "tiny-llava-onevision": "llava_onevision",
}
#: The model_type each tiny architecture of :mod:`policies.tiny` builds.
TINY_MODEL_TYPES: dict[str, str] = {
    "qwen2_5_vl": "qwen2_5_vl",
    "qwen3_vl": "qwen3_vl",
    "qwen3_vl_moe": "qwen3_vl_moe",
    "paligemma": "paligemma",
    "paligemma2": "paligemma",
    "kosmos2": "kosmos-2",
    "internvl": "internvl",
    "gemma3": "gemma3",
    "smolvlm": "smolvlm",
    "llava_onevision": "llava_onevision",
}
#: Backbones that are not transformers checkpoints: a name builds a fresh one (name -> model_type), and a
#: saved directory holds ``vla_backbone.json`` naming its ``model_type``; each model_type's module is imported
#: on use.
NATIVE_BACKBONES: dict[str, str] = {
    "efficientnet-lite0": "efficientnet_lite",
    "efficientnet-lite0-frozen": "efficientnet_lite",
}
NATIVE_MODULES: dict[str, str] = {"efficientnet_lite": "vla.vision_backbones"}
NATIVE_CONFIG_FILE = "vla_backbone.json"
POSITION_MODES = ("mrope", "plain")
#: The published Qwen prompt (public VLM4VLA code, the same for Qwen2.5-VL and Qwen3-VL): the user turn holds
#: the image(s) and the question, and the assistant turn is opened for the action token(s).
QUESTION = "What action should the robotic arm take to {instruction}"
QWEN_TEMPLATE = (
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n{images}"
    + QUESTION
    + "<|im_end|>\n<|im_start|>assistant\n"
)
_BACKBONES: dict[str, type[VLMBackbone]] = {}

ImageLike = np.ndarray | Image.Image


class Checkpoint(NamedTuple):
    """A published checkpoint a backbone class loads: hub id, size as published, used by VLM4VLA's configs."""

    hub_id: str
    size: str
    vlm4vla: bool = False


def register_backbone(cls: type[VLMBackbone]) -> type[VLMBackbone]:
    """Class decorator: make ``cls`` the backbone for each of its ``model_types``."""
    for model_type in cls.model_types:
        if model_type in _BACKBONES and _BACKBONES[model_type] is not cls:
            raise ValueError(
                f"model_type {model_type!r} already has backbone {_BACKBONES[model_type].__name__}"
            )
        _BACKBONES[model_type] = cls
    return cls


def supported_model_types() -> list[str]:
    return sorted(_BACKBONES)


def backbone_class(model_type: str) -> type[VLMBackbone]:
    if model_type not in _BACKBONES:
        raise ValueError(
            f"no VLA backbone for model_type {model_type!r}; supported: {supported_model_types()} "
            f"(add one with a VLMBackbone subclass decorated with @register_backbone)"
        )
    return _BACKBONES[model_type]


def _to_pil(image: ImageLike) -> Image.Image:
    if isinstance(image, Image.Image):
        return image.convert("RGB")
    array = np.asarray(image)
    if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
        raise ValueError(
            f"images must be uint8 H x W x 3 arrays, got dtype {array.dtype} shape {array.shape}"
        )
    return Image.fromarray(array)


class VLMBackbone(nn.Module):
    """A transformers VLM whose last hidden states at the appended action tokens feed the action head."""

    model_types: ClassVar[tuple[str, ...]] = ()
    #: For the backbone table (:func:`backbone_table`): the family's name, its position-id scheme, and the
    #: published checkpoints this class loads.
    label: ClassVar[str] = ""
    positions: ClassVar[str] = "1-D, from 0, left padding skipped"
    checkpoints: ClassVar[tuple[Checkpoint, ...]] = ()
    #: Per-token tensors of the processor's output, and the value each takes at the appended action tokens.
    action_token_values: ClassVar[dict[str, int]] = {}
    #: Processor outputs the base model's forward takes besides the embeddings, mask and positions.
    forward_keys: ClassVar[tuple[str, ...]] = ("pixel_values",)
    #: The processor wants one list of images per sample (SmolVLM, Gemma 3) instead of one flat list.
    nested_images: ClassVar[bool] = False
    #: Most images one sample may hold (Kosmos-2's processor places exactly one).
    max_images: ClassVar[int | None] = None

    def __init__(self, vlm: nn.Module, processor: ProcessorMixin, position_ids: str = "mrope") -> None:
        super().__init__()
        if position_ids not in POSITION_MODES:
            raise ValueError(f"position_ids must be one of {POSITION_MODES}, got {position_ids!r}")
        self.vlm, self.processor, self.position_mode = vlm, processor, position_ids
        _freeze_untied_lm_head(vlm)

    @property
    def hidden_size(self) -> int:
        return int(self.vlm.config.get_text_config().hidden_size)

    @property
    def model_type(self) -> str:
        return str(self.vlm.config.model_type)

    def stop_caching(self) -> None:
        """Training images will not repeat (they are augmented): drop any per-image cache (none here)."""

    # ------------------------------------------------------------------------------------ input side

    @classmethod
    def render_prompts(
        cls, processor: ProcessorMixin, instructions: Sequence[str], image_counts: Sequence[int]
    ) -> list[str]:
        raise NotImplementedError

    @classmethod
    def extra_inputs(
        cls, encoded: dict[str, torch.Tensor], num_action_tokens: int
    ) -> dict[str, torch.Tensor]:
        """Architecture-specific per-token tensors (:attr:`action_token_values`), extended over the action tokens."""
        out = {}
        for key, value in cls.action_token_values.items():
            tensor = encoded[key]
            out[key] = torch.cat([tensor, tensor.new_full((tensor.shape[0], num_action_tokens), value)], 1)
        return out

    @classmethod
    def processor_kwargs(cls) -> dict[str, Any]:
        return {}

    @classmethod
    def build_inputs(
        cls,
        processor: ProcessorMixin,
        images: Sequence[Sequence[ImageLike]],
        instructions: Sequence[str],
        num_action_tokens: int,
    ) -> dict[str, torch.Tensor]:
        """Tensors for a batch: one list of images and one instruction per sample, action tokens appended."""
        check_batch(images, instructions)
        if cls.max_images is not None and any(len(imgs) > cls.max_images for imgs in images):
            raise ValueError(
                f"{cls.__name__} takes at most {cls.max_images} image(s) per sample, got "
                f"{max(len(imgs) for imgs in images)}: use one camera (--cameras rgb_static)"
            )
        processor.tokenizer.padding_side = "left"  # every row ends in the same column: action tokens go last
        texts = cls.render_prompts(processor, instructions, [len(imgs) for imgs in images])
        nested = [[_to_pil(img) for img in imgs] for imgs in images]
        pil: Any = nested if cls.nested_images else [img for imgs in nested for img in imgs]
        encoded = dict(
            processor(text=texts, images=pil, padding=True, return_tensors="pt", **cls.processor_kwargs())
        )
        # PaliGemma's processor adds LM labels; the action head has its own targets
        encoded.pop("labels", None)
        return _append_action_slots(
            encoded, num_action_tokens, processor.tokenizer.pad_token_id
        ) | cls.extra_inputs(encoded, num_action_tokens)

    # ------------------------------------------------------------------------------------ model side

    def position_ids(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        return plain_positions(inputs["attention_mask"])

    def base_model_kwargs(self, inputs: dict[str, torch.Tensor], dtype: torch.dtype) -> dict[str, Any]:
        """The :attr:`forward_keys` inputs, floating-point ones (pixels) in the model's dtype."""
        return {
            key: inputs[key].to(dtype) if inputs[key].is_floating_point() else inputs[key]
            for key in self.forward_keys
        }

    def run_base(self, embeds: torch.Tensor, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The base (headless) model's last hidden states on ``embeds`` with explicit position ids."""
        out = self.vlm.model(
            inputs_embeds=embeds,
            attention_mask=inputs["attention_mask"],
            position_ids=self.position_ids(inputs),
            use_cache=False,
            **self.base_model_kwargs(inputs, embeds.dtype),
        )
        return out.last_hidden_state

    def forward(self, inputs: dict[str, torch.Tensor], action_embeds: torch.Tensor) -> torch.Tensor:
        """Last hidden states ``(B, L, d)`` at the ``L`` action tokens, whose input embedding is ``action_embeds``."""
        input_ids, slots = inputs["input_ids"], inputs["action_mask"]
        batch, num_tokens = input_ids.shape[0], action_embeds.shape[0]
        embeds = self.vlm.get_input_embeddings()(input_ids)
        fill = action_embeds.to(embeds.dtype).unsqueeze(0).expand(batch, -1, -1)
        embeds = embeds.masked_scatter(slots.unsqueeze(-1), fill)
        return self.run_base(embeds, inputs)[slots].view(batch, num_tokens, -1)

    # ------------------------------------------------------------------------------------ files

    def save(self, directory: str | os.PathLike[str]) -> None:
        self.vlm.save_pretrained(directory)
        self.processor.save_pretrained(directory)


def check_batch(images: Sequence[Sequence[ImageLike]], instructions: Sequence[str]) -> None:
    """A batch has one non-empty image list per instruction."""
    if len(images) != len(instructions) or not instructions:
        raise ValueError(f"need one image list per instruction, got {len(images)} and {len(instructions)}")
    if any(len(imgs) == 0 for imgs in images):
        raise ValueError("every sample needs at least one image")


def _freeze_untied_lm_head(vlm: nn.Module) -> None:
    """The language-model head is never used; freezing it keeps DDP from waiting for its gradients.

    A tied head shares its weight with the input embeddings, which do train, so it is left alone."""
    head = getattr(vlm, "lm_head", None)
    if head is not None and head.weight is not vlm.get_input_embeddings().weight:
        head.requires_grad_(False)


def _append_action_slots(
    encoded: dict[str, torch.Tensor], count: int, pad_id: int
) -> dict[str, torch.Tensor]:
    if count < 1:
        raise ValueError(f"num_action_tokens must be >= 1, got {count}")
    ids, mask = encoded["input_ids"], encoded["attention_mask"]
    batch = ids.shape[0]
    encoded["input_ids"] = torch.cat([ids, ids.new_full((batch, count), pad_id)], dim=1)
    encoded["attention_mask"] = torch.cat([mask, mask.new_ones((batch, count))], dim=1)
    slots = torch.zeros_like(encoded["input_ids"], dtype=torch.bool)
    slots[:, -count:] = True
    encoded["action_mask"] = slots
    return encoded


def plain_positions(attention_mask: torch.Tensor, start: int = 0) -> torch.Tensor:
    """Positions ``start, start+1, ...`` over the attended tokens of each row (left padding skipped)."""
    return (attention_mask.long().cumsum(-1) - 1 + start).clamp(min=start)


# ------------------------------------------------------------------------------------------- Qwen family


class QwenVLBackbone(VLMBackbone):
    """Qwen-VL models: ChatML prompt, M-RoPE positions over (temporal, height, width)."""

    positions = "M-RoPE (temporal, height, width) from get_rope_index"

    @classmethod
    def render_prompts(
        cls, processor: ProcessorMixin, instructions: Sequence[str], image_counts: Sequence[int]
    ) -> list[str]:
        image = "<|vision_start|><|image_pad|><|vision_end|>"  # the processor expands <|image_pad|> per image
        return [
            QWEN_TEMPLATE.format(images=image * count, instruction=instruction.strip())
            for instruction, count in zip(instructions, image_counts)
        ]

    action_token_values: ClassVar[dict[str, int]] = {"mm_token_type_ids": 0}  # text
    forward_keys = ("pixel_values", "image_grid_thw")

    @classmethod
    def processor_kwargs(cls) -> dict[str, Any]:
        return {"return_mm_token_type_ids": True}

    def position_ids(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        mask = inputs["attention_mask"]
        if self.position_mode == "plain":
            return plain_positions(mask).unsqueeze(0).expand(3, -1, -1)
        positions, _ = self.vlm.model.get_rope_index(
            inputs["input_ids"],
            mm_token_type_ids=inputs["mm_token_type_ids"],
            image_grid_thw=inputs["image_grid_thw"],
            attention_mask=mask,
        )
        return positions


@register_backbone
class Qwen2_5_VLBackbone(QwenVLBackbone):
    model_types = ("qwen2_5_vl",)
    label = "Qwen2.5-VL"
    checkpoints = (
        Checkpoint("Qwen/Qwen2.5-VL-3B-Instruct", "3B", True),
        Checkpoint("Qwen/Qwen2.5-VL-7B-Instruct", "7B", True),
    )


@register_backbone
class Qwen3VLBackbone(QwenVLBackbone):
    model_types = ("qwen3_vl",)
    label = "Qwen3-VL"
    checkpoints = (
        Checkpoint("Qwen/Qwen3-VL-2B-Instruct", "2B", True),
        Checkpoint("Qwen/Qwen3-VL-4B-Instruct", "4B", True),
        Checkpoint("Qwen/Qwen3-VL-8B-Instruct", "8B", True),
    )


@register_backbone
class Qwen3VLMoeBackbone(QwenVLBackbone):
    """Qwen3-VL-MoE (30B-A3B): Qwen3-VL's vision side and M-RoPE over a mixture-of-experts text model."""

    model_types = ("qwen3_vl_moe",)
    label = "Qwen3-VL-MoE"
    checkpoints = (Checkpoint("Qwen/Qwen3-VL-30B-A3B-Instruct", "30B (3B active)", True),)


# ------------------------------------------------------------------------------------------- PaliGemma


@register_backbone
class PaliGemmaBackbone(VLMBackbone):
    """PaliGemma / PaliGemma 2: image tokens, ``<bos>``, instruction, newline; prefix-LM attention."""

    model_types = ("paligemma",)
    label = "PaliGemma / PaliGemma 2"
    positions = "1-D, from 1, left padding skipped; image + prompt bidirectional prefix, action tokens causal"
    checkpoints = (
        Checkpoint("google/paligemma-3b-pt-224", "3B", True),
        Checkpoint("google/paligemma2-3b-pt-224", "3B", True),
        Checkpoint("google/paligemma2-10b-pt-224", "10B"),
    )
    action_token_values: ClassVar[dict[str, int]] = {"token_type_ids": 1}  # the causal suffix
    forward_keys = ("pixel_values", "token_type_ids")

    @classmethod
    def render_prompts(
        cls, processor: ProcessorMixin, instructions: Sequence[str], image_counts: Sequence[int]
    ) -> list[str]:
        # The processor expands each <image> to the image's token count and adds <bos> and the newline.
        return [
            processor.image_token * count + instruction.strip()
            for instruction, count in zip(instructions, image_counts)
        ]

    def position_ids(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        return plain_positions(inputs["attention_mask"], start=1)  # PaliGemma counts positions from 1


# ------------------------------------------------------------------------------------------- others


def _questions(
    template: str, image: str, instructions: Sequence[str], image_counts: Sequence[int], **fields: str
) -> list[str]:
    """``template`` with ``{images}`` (``image`` once per image) and ``{question}`` (the published question)."""
    return [
        template.format(
            images=image * count, question=QUESTION.format(instruction=instruction.strip()), **fields
        )
        for instruction, count in zip(instructions, image_counts)
    ]


@register_backbone
class InternVLBackbone(VLMBackbone):
    """InternVL 3 / 3.5 (transformers format, ``-hf`` checkpoints): InternViT tiles + pixel-shuffle projector +
    Qwen2.5 / Qwen3. The published VLM4VLA prompt: Qwen's ChatML text with ``<IMG_CONTEXT>`` per image (the
    processor expands it to ``<img>`` + one token per tile feature + ``</img>``; a 224 px image is one
    tile, as in VLM4VLA); plain 1-D positions from 0."""

    model_types = ("internvl",)
    label = "InternVL 3 / 3.5"
    checkpoints = (
        Checkpoint("OpenGVLab/InternVL3_5-4B-HF", "4B", True),
        Checkpoint("OpenGVLab/InternVL3-1B-hf", "1B"),
        Checkpoint("OpenGVLab/InternVL3-2B-hf", "2B"),
        Checkpoint("OpenGVLab/InternVL3-8B-hf", "8B"),
    )

    @classmethod
    def render_prompts(
        cls, processor: ProcessorMixin, instructions: Sequence[str], image_counts: Sequence[int]
    ) -> list[str]:
        return _questions(
            QWEN_TEMPLATE.replace(QUESTION, "{question}"), processor.image_token, instructions, image_counts
        )


@register_backbone
class LlavaOnevisionBackbone(VLMBackbone):
    """LLaVA-OneVision: SigLIP "anyres" tiles + MLP projector + Qwen2. ChatML prompt, each image ``<image>`` +
    newline (expanded by the processor to the tiles' unpadded feature grid); plain 1-D positions from 0."""

    model_types = ("llava_onevision",)
    label = "LLaVA-OneVision"
    checkpoints = (
        Checkpoint("llava-hf/llava-onevision-qwen2-0.5b-ov-hf", "0.5B"),
        Checkpoint("llava-hf/llava-onevision-qwen2-7b-ov-hf", "7B"),
    )
    forward_keys = ("pixel_values", "image_sizes", "batch_num_images")

    @classmethod
    def render_prompts(
        cls, processor: ProcessorMixin, instructions: Sequence[str], image_counts: Sequence[int]
    ) -> list[str]:
        return _questions(
            QWEN_TEMPLATE.replace(QUESTION, "{question}"),
            processor.image_token + "\n",
            instructions,
            image_counts,
        )


@register_backbone
class SmolVLMBackbone(VLMBackbone):
    """SmolVLM / SmolVLM2: SigLIP + pixel-shuffle projector + SmolLM2 (Llama). Prompt
    ``<|im_start|>User:<image>...{question}<end_of_utterance>\nAssistant:``; plain 1-D positions from 0."""

    model_types = ("smolvlm",)
    label = "SmolVLM / SmolVLM2"
    checkpoints = (
        Checkpoint("HuggingFaceTB/SmolVLM-256M-Instruct", "256M"),
        Checkpoint("HuggingFaceTB/SmolVLM-500M-Instruct", "500M"),
        Checkpoint("HuggingFaceTB/SmolVLM2-2.2B-Instruct", "2.2B"),
    )
    forward_keys = ("pixel_values", "pixel_attention_mask")
    nested_images = True

    @classmethod
    def render_prompts(
        cls, processor: ProcessorMixin, instructions: Sequence[str], image_counts: Sequence[int]
    ) -> list[str]:
        template = "<|im_start|>User:{images}{question}{eou}\nAssistant:"
        return _questions(
            template, processor.image_token, instructions, image_counts, eou=processor.end_of_utterance_token
        )


@register_backbone
class Gemma3Backbone(VLMBackbone):
    """Gemma 3: SigLIP + pooling projector + Gemma 3. Gemma's chat turn with ``<start_of_image>`` per image (the
    processor expands it to the soft tokens); image tokens attend to each other both ways (``token_type_ids``
    1; the action tokens are text, 0); plain 1-D positions from 0."""

    model_types = ("gemma3",)
    label = "Gemma 3"
    positions = "1-D, from 0, left padding skipped; each image's tokens bidirectional"
    checkpoints = (Checkpoint("google/gemma-3-4b-it", "4B"), Checkpoint("google/gemma-3-12b-it", "12B"))
    action_token_values: ClassVar[dict[str, int]] = {"token_type_ids": 0}
    forward_keys = ("pixel_values", "token_type_ids")
    nested_images = True

    @classmethod
    def render_prompts(
        cls, processor: ProcessorMixin, instructions: Sequence[str], image_counts: Sequence[int]
    ) -> list[str]:
        # <bos> written here as Gemma 3's chat template does, so the processor must not add another one
        template = "{bos}<start_of_turn>user\n{images}{question}<end_of_turn>\n<start_of_turn>model\n"
        return _questions(
            template, processor.boi_token, instructions, image_counts, bos=processor.tokenizer.bos_token
        )

    @classmethod
    def processor_kwargs(cls) -> dict[str, Any]:
        return {"add_special_tokens": False}


@register_backbone
class Kosmos2Backbone(VLMBackbone):
    """Kosmos-2: CLIP ViT + 64 latent queries + a decoder with sinusoidal positions. One image per sample:
    the processor writes ``<s><image>`` + 64 image slots + ``</image>`` before the question. Positions are
    the decoder's own (1-D, counted from ``pad_token_id + 1``, left padding skipped)."""

    model_types = ("kosmos-2",)
    label = "Kosmos-2"
    positions = "1-D sinusoidal, from pad_token_id + 1, left padding skipped"
    checkpoints = (Checkpoint("microsoft/kosmos-2-patch14-224", "1.6B", True),)
    action_token_values: ClassVar[dict[str, int]] = {"image_embeds_position_mask": 0}
    max_images = 1

    @classmethod
    def render_prompts(
        cls, processor: ProcessorMixin, instructions: Sequence[str], image_counts: Sequence[int]
    ) -> list[str]:
        return _questions("{question}", "", instructions, image_counts)

    def position_ids(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        return plain_positions(
            inputs["attention_mask"], start=int(self.vlm.config.text_config.pad_token_id) + 1
        )

    def run_base(self, embeds: torch.Tensor, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        # Kosmos-2 has no headless ``.model``: image features, then the text decoder
        image = self.vlm.get_image_features(
            inputs["pixel_values"].to(embeds.dtype), return_dict=True
        ).pooler_output
        out = self.vlm.text_model.model(
            inputs_embeds=embeds,
            attention_mask=inputs["attention_mask"],
            image_embeds=image,
            image_embeds_position_mask=inputs["image_embeds_position_mask"],
            position_ids=self.position_ids(inputs),
            use_cache=False,
        )
        return out.last_hidden_state


# ------------------------------------------------------------------------------------------- loading


def resolve_backbone(
    name_or_path: str | os.PathLike[str], tiny_root: str | os.PathLike[str] | None = None
) -> str:
    """A loadable location: ``tiny-*`` names build (once, cached) a tiny model; others pass through."""
    name = str(name_or_path)
    if name in TINY_BACKBONES:
        from policies.tiny import cached_tiny_vlm

        return str(cached_tiny_vlm(TINY_BACKBONES[name], 0, tiny_root))
    if name.startswith("tiny-"):
        raise ValueError(f"unknown tiny backbone {name!r}; choose one of {sorted(TINY_BACKBONES)}")
    return name


def torch_dtype(dtype: str, device: str | torch.device) -> torch.dtype:
    """``auto`` is float32 on CPU and bfloat16 on GPUs that support it (else float16); or name one."""
    names = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if dtype == "auto":
        if torch.device(device).type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    if dtype not in names:
        raise ValueError(f"dtype must be auto, float32, bfloat16 or float16, got {dtype!r}")
    return names[dtype]


def load_backbone(
    name_or_path: str | os.PathLike[str],
    *,
    position_ids: str = "mrope",
    dtype: torch.dtype = torch.float32,
    allow_download: bool = False,
    tiny_root: str | os.PathLike[str] | None = None,
) -> VLMBackbone:
    """Load the VLM at ``name_or_path`` (directory, hub id, a ``tiny-*`` name, or ``random:HUB_ID`` for a
    published architecture with random weights, :mod:`vla.real_size`) as a backbone.

    Names in :data:`NATIVE_BACKBONES` (e.g. ``efficientnet-lite0``) and directories they were saved to
    load through their own module instead of transformers."""
    native = load_native_backbone(name_or_path)
    if native is not None:
        return native.to(dtype)
    from vla.real_size import build_random_vlm, random_hub_id

    if hub_id := random_hub_id(str(name_or_path)):  # published size, random weights, no download
        vlm, processor = build_random_vlm(hub_id, dtype)
        return backbone_class(vlm.config.model_type)(vlm, processor, position_ids=position_ids)
    from transformers import AutoConfig, AutoModelForImageTextToText

    from policies.backends.hf_processing import load_processor
    from policies.backends.hub import hub_access

    location = resolve_backbone(name_or_path, tiny_root)
    load = {"local_files_only": not allow_download}
    with hub_access(allow_download):  # local_files_only alone still lets huggingface_hub look the Hub up
        try:
            config = AutoConfig.from_pretrained(location, **load)
        except OSError as err:
            hint = (
                ""
                if allow_download or Path(location).exists()
                else " (not a local directory; downloads are off)"
            )
            raise OSError(f"cannot load VLA backbone {str(name_or_path)!r}{hint}: {err}") from err
        cls = backbone_class(config.model_type)
        processor = load_processor(location, **load)
        vlm = AutoModelForImageTextToText.from_pretrained(location, dtype=dtype, **load)
    return cls(vlm, processor, position_ids=position_ids)


def load_native_backbone(name_or_path: str | os.PathLike[str]) -> VLMBackbone | None:
    """The non-transformers backbone ``name_or_path`` names or holds, or None when it is not one."""
    import json

    name, root = str(name_or_path), Path(name_or_path)
    if name in NATIVE_BACKBONES:
        return _native_class(NATIVE_BACKBONES[name]).from_name(name)
    if not (root / NATIVE_CONFIG_FILE).is_file():
        return None
    model_type = json.loads((root / NATIVE_CONFIG_FILE).read_text()).get("model_type", "")
    if model_type not in NATIVE_MODULES:
        raise ValueError(
            f"{root / NATIVE_CONFIG_FILE}: unknown backbone model_type {model_type!r}; "
            f"known: {sorted(NATIVE_MODULES)}"
        )
    return _native_class(model_type).from_directory(root)


def _native_class(model_type: str) -> type[VLMBackbone]:
    import importlib

    importlib.import_module(NATIVE_MODULES[model_type])  # registers the class
    return backbone_class(model_type)


InputBuilder = Callable[[Sequence[Sequence[ImageLike]], Sequence[str]], dict[str, torch.Tensor]]


# ------------------------------------------------------------------------------------------- table


def backbone_table() -> list[dict[str, Any]]:
    """One row per registered transformers backbone class: family, model_type(s), positions, tiny test
    names, and the published checkpoints it loads (the table in docs/guide/vla.md is this, checked by a test)."""
    import importlib

    for module in NATIVE_MODULES.values():  # registers the native backbones (lazily, as load_native does)
        importlib.import_module(module)

    tiny: dict[str, list[str]] = {}
    for name, arch in TINY_BACKBONES.items():
        tiny.setdefault(TINY_MODEL_TYPES[arch], []).append(name)
    rows, seen = [], set()
    for model_type in supported_model_types():
        cls = _BACKBONES[model_type]
        if cls in seen or not cls.checkpoints:
            continue
        seen.add(cls)
        rows.append(
            {
                "backbone": cls.label,
                "class": cls.__name__,
                "model_types": list(cls.model_types),
                "positions": cls.positions,
                "tiny": sorted(n for t in cls.model_types for n in tiny.get(t, [])),
                "checkpoints": [c._asdict() for c in cls.checkpoints],
            }
        )
    return sorted(rows, key=lambda r: r["backbone"].lower())


def backbone_table_markdown() -> str:
    """:func:`backbone_table` as a Markdown table (checkpoints marked * are VLM4VLA's public configs)."""
    lines = [
        "| backbone | model_type | positions | published checkpoints (size) | tiny test model |",
        "|---|---|---|---|---|",
    ]
    for row in backbone_table():
        ckpts = ", ".join(
            f"`{c['hub_id']}` ({c['size']}){'*' if c['vlm4vla'] else ''}" for c in row["checkpoints"]
        )
        types = ", ".join(f"`{t}`" for t in row["model_types"])
        tiny = ", ".join(f"`{t}`" for t in row["tiny"])
        lines.append(f"| {row['backbone']} | {types} | {row['positions']} | {ckpts} | {tiny} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    """``python -m vla.backbones --list [--json]``: the registered backbones and the checkpoints they load."""
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m vla.backbones", description=main.__doc__)
    parser.add_argument("--list", action="store_true", help="print the table of backbones (Markdown)")
    parser.add_argument("--json", action="store_true", help="print it as JSON instead")
    args = parser.parse_args(argv)
    if not (args.list or args.json):
        parser.error("nothing to do: pass --list (or --json)")
    print(json.dumps(backbone_table(), indent=2) if args.json else backbone_table_markdown(), end="")


if __name__ == "__main__":
    main()
