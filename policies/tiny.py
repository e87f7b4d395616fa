"""Tiny vision-language checkpoints for tests and demos, built locally with nothing downloaded.

``python -m policies.tiny --arch qwen2_5_vl --out DIR`` writes a directory that the normal loading code
(``AutoModelForImageTextToText`` + ``AutoProcessor``, or :mod:`policies.backends.transformers_backend`) reads
like any Hugging Face checkpoint: random weights from a tiny config of the real architecture, a tokenizer
trained in-process (byte-level BPE, SentencePiece-style BPE or Unigram, by family) with the architecture's
special tokens and a chat template, and its processor (image-only where the stock one needs torchvision).
Everything is a deterministic function of ``(arch, seed)``.

Adding an architecture is one entry in :data:`TINY_ARCHS`: a config builder and a processor builder.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # transformers is imported where it is used: the mllm extra is optional
    from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase, ProcessorMixin
    from transformers.image_processing_utils import BaseImageProcessor

QWEN_SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
GEMMA_SPECIAL_TOKENS = ("<pad>", "<eos>", "<bos>", "<unk>", "<mask>")

# Qwen-style ChatML template: a default system turn, images as <|vision_start|><|image_pad|><|vision_end|>.
QWEN_CHAT_TEMPLATE = (
    "{%- for message in messages -%}\n"
    "{%- if loop.first and message['role'] != 'system' -%}"
    "{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' -}}"
    "{%- endif -%}\n"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}\n"
    "{%- if message['content'] is string -%}{{- message['content'] -}}\n"
    "{%- else -%}{%- for part in message['content'] -%}\n"
    "{%- if part['type'] == 'image' -%}{{- '<|vision_start|><|image_pad|><|vision_end|>' -}}\n"
    "{%- elif part['type'] == 'text' -%}{{- part['text'] -}}{%- endif -%}\n"
    "{%- endfor -%}{%- endif -%}\n"
    "{{- '<|im_end|>\\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}\n"
)

TEXT_HIDDEN = 64  # 4 heads of 16: M-RoPE sections must sum to head_dim / 2 = 8
VISION_HIDDEN = 64
VOCAB_TARGET = 2048  # BPE merges stop here; special and (Gemma) byte tokens come on top


@dataclass(frozen=True)
class TinyArch:
    """How to build one architecture: its tokenizer family, config and processor."""

    tokenizer: str  # "qwen" (byte-level BPE), "gemma" (BPE with byte fallback) or "xlmr" (Unigram)
    build_config: Callable[[PreTrainedTokenizerBase], PretrainedConfig]  # tokenizer -> model config
    build_processor: Callable[[PreTrainedTokenizerBase], ProcessorMixin]  # tokenizer -> processor
    special_tokens: dict[str, str] = field(default_factory=dict)  # named special tokens the processor reads


# --------------------------------------------------------------------------------------------- corpus


_CORPUS_WORDS = (
    "navigate to the red blue green apple mug bowl cube drawer slider light switch block table pick "
    "up place push open close turn on off left right forward back above below into step action "
    "feedback executed successfully invalid last visual state description reasoning reflection "
    "language plan executable"
)


def _corpus(seed: int) -> list[str]:
    """Training text for the tokenizer: the project's prompts (so they encode compactly), plan JSON and
    instructions, shuffled by seed."""
    from action_mapping import EB_NAV_ACTIONS, render_manipulation_prompt, render_navigation_prompt
    from policies.mllm.eb_prompts import system_text

    rng = np.random.default_rng(seed)
    lines = [*render_navigation_prompt().splitlines(), *render_manipulation_prompt().splitlines()]
    lines += [
        *system_text("navigation", 20, 3).splitlines(),
        *system_text("manipulation", 15, 4).splitlines(),
    ]
    lines += [f"action id {i}: {name}" for i, (name, _) in enumerate(EB_NAV_ACTIONS)]
    words = _CORPUS_WORDS.split()
    symbols = ["W", "S", "A", "D", "space", "shift", "←", "→", "↑", "↓", "R", "L", "STOP"]
    for _ in range(400):
        lines.append(" ".join(rng.choice(words, size=int(rng.integers(4, 12)))).capitalize() + ".")
        acts = list(rng.choice(symbols, size=int(rng.integers(1, 3)), replace=False))
        nums = [int(n) for n in rng.integers(1, 11, size=len(acts))]
        step = {"actions": acts, "step_nums": nums, "gripper": int(rng.integers(0, 2))}
        lines.append(json.dumps({f"step_{int(rng.integers(1, 7))}": step}, ensure_ascii=False))
        lines.append(json.dumps({"action_id": int(rng.integers(0, 8)), "action_name": "MoveAhead"}))
    rng.shuffle(lines)
    return lines


def _train_bpe(lines: list[str], *, byte_level: bool) -> tuple[dict[str, int], list[tuple[str, str]]]:
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    if byte_level:  # the pre-tokenisation of Qwen2Tokenizer, so learned merges match its pipeline
        from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
        alphabet = pre_tokenizers.ByteLevel.alphabet()
    else:  # SentencePiece-style: spaces become "▁" and stay attached to the following word
        tok.normalizer = normalizers.Replace(" ", "▁")
        tok.pre_tokenizer = pre_tokenizers.Split("▁", behavior="merged_with_next")
        alphabet = []
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_TARGET, initial_alphabet=alphabet, show_progress=False)
    tok.train_from_iterator(lines, trainer)
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    return dict(model["vocab"]), merges


def build_tokenizer(family: str, seed: int, extra: dict[str, str] | None = None) -> PreTrainedTokenizerBase:
    """A tokenizer of the given family trained on :func:`_corpus`: ``qwen`` (Qwen2Tokenizer, byte-level BPE),
    ``gemma`` (GemmaTokenizer, BPE with byte fallback) or ``xlmr`` (XLMRobertaTokenizer, Unigram, Kosmos-2's).

    ``extra`` adds named special tokens (name -> token, e.g. ``{"image_token": "<image>"}``): they become
    attributes of the tokenizer (``tok.image_token``, ``tok.image_token_id``), as in the published files."""
    named = dict(extra or {})
    vocab, merges = _train_bpe(_corpus(seed), byte_level=family == "qwen")
    if family == "qwen":
        from transformers import Qwen2Tokenizer

        tok = Qwen2Tokenizer(
            vocab=vocab,
            merges=merges,
            eos_token="<|im_end|>",
            pad_token="<|endoftext|>",
            unk_token=None,
            extra_special_tokens=list(QWEN_SPECIAL_TOKENS[1:]),
            model_specific_special_tokens=named,
        )
        tok.chat_template = QWEN_CHAT_TEMPLATE
        return tok
    # SentencePiece layouts: special tokens first, then the 256 byte-fallback tokens, then learned pieces.
    pieces = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    if family == "gemma":
        from transformers import GemmaTokenizer

        ordered = [*GEMMA_SPECIAL_TOKENS, *(f"<0x{b:02X}>" for b in range(256))]
        ordered += [t for t in pieces if t not in ordered]
        return GemmaTokenizer(
            vocab={t: i for i, t in enumerate(ordered)}, merges=merges, model_specific_special_tokens=named
        )
    if family == "xlmr":
        from transformers import XLMRobertaTokenizer

        ordered = [
            "<s>",
            "<pad>",
            "</s>",
            "<unk>",
            *(t for t in pieces if t not in ("<s>", "<pad>", "</s>", "<unk>")),
        ]
        # earlier pieces are likelier
        scores = [(t, 0.0 if i < 4 else -float(i)) for i, t in enumerate(ordered)]
        return XLMRobertaTokenizer(vocab=[*scores, ("<mask>", 0.0)], model_specific_special_tokens=named)
    raise ValueError(f"unknown tokenizer family {family!r}; expected 'qwen', 'gemma' or 'xlmr'")


# ---------------------------------------------------------------------------------------- architectures


def _qwen_ids(tok: PreTrainedTokenizerBase) -> dict[str, int]:
    ids = {t: tok.convert_tokens_to_ids(t) for t in QWEN_SPECIAL_TOKENS}
    return {
        "image_token_id": ids["<|image_pad|>"],
        "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"],
        "vision_end_token_id": ids["<|vision_end|>"],
    }


def _qwen_text(tok: PreTrainedTokenizerBase) -> dict[str, Any]:
    return {
        "vocab_size": len(tok),
        "hidden_size": TEXT_HIDDEN,
        "intermediate_size": 2 * TEXT_HIDDEN,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 32768,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 2, 2]},
        "bos_token_id": tok.convert_tokens_to_ids("<|endoftext|>"),
        "eos_token_id": tok.convert_tokens_to_ids("<|im_end|>"),
        "pad_token_id": tok.convert_tokens_to_ids("<|endoftext|>"),
    }


def _qwen2_5_vl_config(tok: PreTrainedTokenizerBase) -> PretrainedConfig:
    from transformers import Qwen2_5_VLConfig

    vision = {
        "depth": 2,
        "hidden_size": VISION_HIDDEN,
        "intermediate_size": 2 * VISION_HIDDEN,
        "num_heads": 4,
        "patch_size": 14,
        "window_size": 112,
        "out_hidden_size": TEXT_HIDDEN,
        "fullatt_block_indexes": [1],
    }
    return Qwen2_5_VLConfig(text_config=_qwen_text(tok), vision_config=vision, **_qwen_ids(tok))


def _qwen3_vl_config(tok: PreTrainedTokenizerBase) -> PretrainedConfig:
    from transformers import Qwen3VLConfig

    text = {**_qwen_text(tok), "head_dim": TEXT_HIDDEN // 4}
    text["rope_parameters"] = {**text["rope_parameters"], "mrope_interleaved": True}
    vision = {
        "depth": 2,
        "hidden_size": VISION_HIDDEN,
        "intermediate_size": 2 * VISION_HIDDEN,
        "num_heads": 4,
        "patch_size": 16,
        "out_hidden_size": TEXT_HIDDEN,
        "num_position_embeddings": 64,
        "deepstack_visual_indexes": [0],
    }
    return Qwen3VLConfig(text_config=text, vision_config=vision, **_qwen_ids(tok))


def _qwen_image_processor(patch: int, mean: list[float], std: list[float]) -> BaseImageProcessor:
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    factor = 2 * patch  # merge_size 2: image sides become multiples of 2 x patch
    return Qwen2VLImageProcessorPil(
        patch_size=patch,
        merge_size=2,
        temporal_patch_size=2,
        image_mean=mean,
        image_std=std,
        size={"shortest_edge": factor * factor, "longest_edge": 8 * factor * 8 * factor},
    )


def _qwen2_5_vl_processor(tok: PreTrainedTokenizerBase) -> ProcessorMixin:
    from policies.backends.hf_processing import ImageOnlyQwen2_5_VLProcessor

    clip_mean, clip_std = [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]
    ip = _qwen_image_processor(14, clip_mean, clip_std)
    return ImageOnlyQwen2_5_VLProcessor(image_processor=ip, tokenizer=tok, chat_template=QWEN_CHAT_TEMPLATE)


def _qwen3_vl_processor(tok: PreTrainedTokenizerBase) -> ProcessorMixin:
    from policies.backends.hf_processing import ImageOnlyQwen3VLProcessor

    ip = _qwen_image_processor(16, [0.5] * 3, [0.5] * 3)
    return ImageOnlyQwen3VLProcessor(image_processor=ip, tokenizer=tok, chat_template=QWEN_CHAT_TEMPLATE)


PALIGEMMA_IMAGE_SIZE, PALIGEMMA_PATCH = 56, 14


def _paligemma_processor(tok: PreTrainedTokenizerBase) -> ProcessorMixin:
    from transformers import PaliGemmaProcessor
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

    ip = SiglipImageProcessorPil(
        size={"height": PALIGEMMA_IMAGE_SIZE, "width": PALIGEMMA_IMAGE_SIZE},
        image_seq_length=(PALIGEMMA_IMAGE_SIZE // PALIGEMMA_PATCH) ** 2,
    )
    return PaliGemmaProcessor(image_processor=ip, tokenizer=tok)  # adds <image>, <locXXXX>, <segXXX>


def _paligemma_config(tok: PreTrainedTokenizerBase) -> PretrainedConfig:
    from transformers import PaliGemmaConfig

    vision = {
        "model_type": "siglip_vision_model",
        "hidden_size": VISION_HIDDEN,
        "intermediate_size": 2 * VISION_HIDDEN,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "image_size": PALIGEMMA_IMAGE_SIZE,
        "patch_size": PALIGEMMA_PATCH,
        "projection_dim": TEXT_HIDDEN,
        "vision_use_head": False,
    }
    text = {
        "model_type": "gemma",
        "vocab_size": len(tok),
        "hidden_size": TEXT_HIDDEN,
        "intermediate_size": 2 * TEXT_HIDDEN,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": TEXT_HIDDEN // 4,
        "max_position_embeddings": 8192,
        "bos_token_id": tok.bos_token_id,
        "eos_token_id": tok.eos_token_id,
        "pad_token_id": tok.pad_token_id,
    }
    return PaliGemmaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        projection_dim=TEXT_HIDDEN,
    )


def _paligemma2_config(tok: PreTrainedTokenizerBase) -> PretrainedConfig:
    """PaliGemma 2: the same SigLIP + projector, with a Gemma 2 language model (model_type ``paligemma``)."""
    config = _paligemma_config(tok)
    text = {
        **config.text_config.to_dict(),
        "model_type": "gemma2",
        "sliding_window": 32,
        "query_pre_attn_scalar": 16,
        "final_logit_softcapping": 30.0,
        "attn_logit_softcapping": 50.0,
    }
    from transformers import PaliGemmaConfig

    return PaliGemmaConfig(
        vision_config=config.vision_config.to_dict(),
        text_config=text,
        image_token_index=config.image_token_index,
        projection_dim=TEXT_HIDDEN,
    )


def _qwen3_vl_moe_config(tok: PreTrainedTokenizerBase) -> PretrainedConfig:
    """Qwen3-VL-MoE (30B-A3B's architecture): Qwen3-VL with a mixture-of-experts text model."""
    from transformers import Qwen3VLMoeConfig

    dense = _qwen3_vl_config(tok)
    text = {
        **_qwen_text(tok),
        "head_dim": TEXT_HIDDEN // 4,
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": TEXT_HIDDEN,
        "decoder_sparse_step": 1,
    }
    text["rope_parameters"] = {**text["rope_parameters"], "mrope_interleaved": True}
    vision = {k: v for k, v in dense.vision_config.to_dict().items() if k != "model_type"}
    return Qwen3VLMoeConfig(text_config=text, vision_config=vision, **_qwen_ids(tok))


def _qwen3_vl_moe_processor(tok: PreTrainedTokenizerBase) -> ProcessorMixin:
    from policies.backends.hf_processing import ImageOnlyQwen3VLProcessor

    return ImageOnlyQwen3VLProcessor(
        image_processor=_qwen_image_processor(16, [0.5] * 3, [0.5] * 3),
        tokenizer=tok,
        chat_template=QWEN_CHAT_TEMPLATE,
    )


# 4 x 4 patches: the image sizes of the tiny SigLIP / InternViT / CLIP towers
SMALL_IMAGE, SMALL_PATCH = (
    56,
    14,
)


def _siglip_vision(image_size: int = SMALL_IMAGE, patch: int = SMALL_PATCH, **extra: Any) -> dict[str, Any]:
    return {
        "model_type": "siglip_vision_model",
        "hidden_size": VISION_HIDDEN,
        "intermediate_size": 2 * VISION_HIDDEN,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "image_size": image_size,
        "patch_size": patch,
        **extra,
    }


INTERNVL_TOKENS = {
    "start_image_token": "<img>",
    "end_image_token": "</img>",
    "context_image_token": "<IMG_CONTEXT>",
    "video_token": "<video>",
}


def _internvl_config(tok: PreTrainedTokenizerBase) -> PretrainedConfig:
    """InternVL 3.5: InternViT + pixel-shuffle MLP projector + a Qwen3 language model."""
    from transformers import InternVLConfig

    vision = {
        "hidden_size": VISION_HIDDEN,
        "intermediate_size": 2 * VISION_HIDDEN,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "image_size": [SMALL_IMAGE] * 2,
        "patch_size": [SMALL_PATCH] * 2,
    }
    text = {**_qwen_text(tok), "model_type": "qwen3", "head_dim": TEXT_HIDDEN // 4}
    text["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0}
    return InternVLConfig(
        vision_config=vision,
        text_config=text,
        image_token_id=tok.context_image_token_id,
        downsample_ratio=0.5,
        projector_hidden_act="gelu",
    )


def _internvl_processor(tok: PreTrainedTokenizerBase) -> ProcessorMixin:
    from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import GotOcr2ImageProcessorPil

    from policies.backends.hf_processing import ImageOnlyInternVLProcessor

    ip = GotOcr2ImageProcessorPil(
        size={"height": SMALL_IMAGE, "width": SMALL_IMAGE},
        max_patches=4,
        image_mean=[0.485, 0.456, 0.406],
        image_std=[0.229, 0.224, 0.225],
    )
    # tiles as InternVL cuts them (here at most 2 x 2 + a thumbnail); pixel shuffle (ratio 0.5) keeps a
    # quarter of each tile's 4 x 4 patches
    return ImageOnlyInternVLProcessor(
        image_processor=ip, tokenizer=tok, image_seq_length=4, chat_template=QWEN_CHAT_TEMPLATE
    )


LLAVA_OV_TOKENS = {"image_token": "<image>", "video_token": "<video>"}


def _llava_onevision_config(tok: PreTrainedTokenizerBase) -> PretrainedConfig:
    """LLaVA-OneVision: SigLIP + 2-layer MLP projector + a Qwen2 language model, "anyres" image tiles."""
    from transformers import LlavaOnevisionConfig

    text = {**_qwen_text(tok), "model_type": "qwen2"}
    text["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0}
    return LlavaOnevisionConfig(
        vision_config=_siglip_vision(vision_use_head=False),
        text_config=text,
        image_token_index=tok.image_token_id,
        video_token_index=tok.video_token_id,
        image_grid_pinpoints=LLAVA_OV_PINPOINTS,
        vision_feature_select_strategy="full",
        vision_aspect_ratio="anyres_max_9",
    )


LLAVA_OV_PINPOINTS = [
    [SMALL_IMAGE, SMALL_IMAGE],
    [SMALL_IMAGE, 2 * SMALL_IMAGE],
    [2 * SMALL_IMAGE, SMALL_IMAGE],
    [2 * SMALL_IMAGE, 2 * SMALL_IMAGE],
]


def _llava_onevision_processor(tok: PreTrainedTokenizerBase) -> ProcessorMixin:
    from transformers.models.llava_onevision.image_processing_pil_llava_onevision import (
        LlavaOnevisionImageProcessorPil,
    )

    from policies.backends.hf_processing import ImageOnlyLlavaOnevisionProcessor

    ip = LlavaOnevisionImageProcessorPil(
        size={"height": SMALL_IMAGE, "width": SMALL_IMAGE},
        image_grid_pinpoints=LLAVA_OV_PINPOINTS,
        image_mean=[0.5] * 3,
        image_std=[0.5] * 3,
    )
    return ImageOnlyLlavaOnevisionProcessor(
        image_processor=ip,
        tokenizer=tok,
        num_image_tokens=(SMALL_IMAGE // SMALL_PATCH) ** 2,
        vision_feature_select_strategy="full",
        vision_aspect_ratio="anyres_max_9",
        chat_template=QWEN_CHAT_TEMPLATE,
    )


SMOLVLM_TOKENS = {
    "image_token": "<image>",
    "fake_image_token": "<fake_token_around_image>",
    "global_image_token": "<global-img>",
    "end_of_utterance_token": "<end_of_utterance>",
}
SMOLVLM_IMAGE, SMOLVLM_PATCH = 64, 16  # 4 x 4 patches, pixel shuffle by 2: 4 tokens per image


def _smolvlm_config(tok: PreTrainedTokenizerBase) -> PretrainedConfig:
    """SmolVLM / SmolVLM2: SigLIP (Idefics3 vision) + pixel-shuffle projector + a Llama (SmolLM2) language model."""
    from transformers import SmolVLMConfig

    vision = {
        "hidden_size": VISION_HIDDEN,
        "intermediate_size": 2 * VISION_HIDDEN,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "image_size": SMOLVLM_IMAGE,
        "patch_size": SMOLVLM_PATCH,
    }
    text = {**_qwen_text(tok), "model_type": "llama", "head_dim": TEXT_HIDDEN // 4}
    text["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0}
    return SmolVLMConfig(
        vision_config=vision,
        text_config=text,
        image_token_id=tok.image_token_id,
        scale_factor=2,
        pad_token_id=tok.pad_token_id,
    )


def _smolvlm_processor(tok: PreTrainedTokenizerBase) -> ProcessorMixin:
    from transformers.models.smolvlm.image_processing_pil_smolvlm import SmolVLMImageProcessorPil

    from policies.backends.hf_processing import ImageOnlySmolVLMProcessor

    ip = SmolVLMImageProcessorPil(
        size={"longest_edge": SMOLVLM_IMAGE},
        max_image_size={"longest_edge": SMOLVLM_IMAGE},
        do_image_splitting=False,
        image_mean=[0.5] * 3,
        image_std=[0.5] * 3,
    )
    return ImageOnlySmolVLMProcessor(
        image_processor=ip, tokenizer=tok, image_seq_len=4, chat_template=QWEN_CHAT_TEMPLATE
    )


GEMMA3_TOKENS = {
    "boi_token": "<start_of_image>",
    "eoi_token": "<end_of_image>",
    "image_token": "<image_soft_token>",
    "start_of_turn_token": "<start_of_turn>",
    "end_of_turn_token": "<end_of_turn>",
}
GEMMA3_IMAGE, GEMMA3_PATCH, GEMMA3_IMAGE_TOKENS = 64, 8, 16  # 8 x 8 patches average-pooled to 4 x 4 tokens


def _gemma3_config(tok: PreTrainedTokenizerBase) -> PretrainedConfig:
    """Gemma 3: SigLIP + pooling projector + Gemma 3 (local sliding / global attention layers)."""
    from transformers import Gemma3Config

    text = {
        "vocab_size": len(tok),
        "hidden_size": TEXT_HIDDEN,
        "intermediate_size": 2 * TEXT_HIDDEN,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": TEXT_HIDDEN // 4,
        "query_pre_attn_scalar": TEXT_HIDDEN // 4,
        "sliding_window": 32,
        "layer_types": ["sliding_attention", "full_attention"],
        "max_position_embeddings": 8192,
        "bos_token_id": tok.bos_token_id,
        "eos_token_id": tok.eos_token_id,
        "pad_token_id": tok.pad_token_id,
    }
    return Gemma3Config(
        text_config=text,
        vision_config=_siglip_vision(GEMMA3_IMAGE, GEMMA3_PATCH, vision_use_head=False),
        mm_tokens_per_image=GEMMA3_IMAGE_TOKENS,
        boi_token_index=tok.boi_token_id,
        eoi_token_index=tok.eoi_token_id,
        image_token_index=tok.image_token_id,
    )


def _gemma3_processor(tok: PreTrainedTokenizerBase) -> ProcessorMixin:
    from transformers import Gemma3Processor
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

    ip = Gemma3ImageProcessorPil(
        size={"height": GEMMA3_IMAGE, "width": GEMMA3_IMAGE},
        do_pan_and_scan=False,
        image_mean=[0.5] * 3,
        image_std=[0.5] * 3,
    )
    return Gemma3Processor(image_processor=ip, tokenizer=tok, image_seq_length=GEMMA3_IMAGE_TOKENS)


KOSMOS2_IMAGE_TOKENS = 64  # Kosmos-2's latent queries: the processor's num_image_tokens


def _kosmos2_config(tok: PreTrainedTokenizerBase) -> PretrainedConfig:
    """Kosmos-2: CLIP ViT + latent-query resampler + a Magneto-style decoder with sinusoidal positions."""
    from transformers import Kosmos2Config

    text = {
        "vocab_size": len(tok),
        "embed_dim": TEXT_HIDDEN,
        "layers": 2,
        "ffn_dim": 2 * TEXT_HIDDEN,
        "attention_heads": 4,
        "dropout": 0.0,
        "attention_dropout": 0.0,
        "max_position_embeddings": 512,
        "pad_token_id": tok.pad_token_id,
        "bos_token_id": tok.bos_token_id,
        "eos_token_id": tok.eos_token_id,
    }
    vision = {
        "hidden_size": VISION_HIDDEN,
        "intermediate_size": 2 * VISION_HIDDEN,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "image_size": SMALL_IMAGE,
        "patch_size": SMALL_PATCH,
    }
    return Kosmos2Config(text_config=text, vision_config=vision, latent_query_num=KOSMOS2_IMAGE_TOKENS)


def _kosmos2_processor(tok: PreTrainedTokenizerBase) -> ProcessorMixin:
    from transformers import Kosmos2Processor
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    ip = CLIPImageProcessorPil(
        size={"shortest_edge": SMALL_IMAGE}, crop_size={"height": SMALL_IMAGE, "width": SMALL_IMAGE}
    )
    # adds <image>, </image>, <patch_index_XXXX>, ...
    return Kosmos2Processor(image_processor=ip, tokenizer=tok)


#: Architecture name -> how to build it. The processor is built first (PaliGemma's and Kosmos-2's add tokens).
TINY_ARCHS: dict[str, TinyArch] = {
    "qwen2_5_vl": TinyArch("qwen", _qwen2_5_vl_config, _qwen2_5_vl_processor),
    "qwen3_vl": TinyArch("qwen", _qwen3_vl_config, _qwen3_vl_processor),
    "qwen3_vl_moe": TinyArch("qwen", _qwen3_vl_moe_config, _qwen3_vl_moe_processor),
    "paligemma": TinyArch("gemma", _paligemma_config, _paligemma_processor),
    "paligemma2": TinyArch("gemma", _paligemma2_config, _paligemma_processor),
    "internvl": TinyArch("qwen", _internvl_config, _internvl_processor, INTERNVL_TOKENS),
    "llava_onevision": TinyArch("qwen", _llava_onevision_config, _llava_onevision_processor, LLAVA_OV_TOKENS),
    "smolvlm": TinyArch("qwen", _smolvlm_config, _smolvlm_processor, SMOLVLM_TOKENS),
    "gemma3": TinyArch("gemma", _gemma3_config, _gemma3_processor, GEMMA3_TOKENS),
    "kosmos2": TinyArch("xlmr", _kosmos2_config, _kosmos2_processor),
}


# ------------------------------------------------------------------------------------------------ build


def build_tiny_vlm(arch: str, out_dir: str | os.PathLike[str], seed: int = 0) -> Path:
    """Write a loadable tiny checkpoint of ``arch`` to ``out_dir`` and return the directory.

    Weights are drawn with ``torch.manual_seed(seed)``; the tokenizer is trained on a corpus shuffled by
    ``seed``; so the files are identical for identical ``(arch, seed)`` and library versions.
    """
    if arch not in TINY_ARCHS:
        raise ValueError(f"unknown tiny architecture {arch!r}; choose one of {sorted(TINY_ARCHS)}")
    import torch
    from transformers import AutoModelForImageTextToText

    spec = TINY_ARCHS[arch]
    processor = spec.build_processor(build_tokenizer(spec.tokenizer, seed, spec.special_tokens))
    config = spec.build_config(processor.tokenizer)
    torch.manual_seed(seed)
    model = AutoModelForImageTextToText.from_config(config)
    _fill_zero_matrices(model)
    _set_generation_defaults(model, processor.tokenizer)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with _quiet_progress():
        model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


@contextlib.contextmanager
def _quiet_progress() -> Iterator[None]:
    """No "Writing model shards" bar for a 2 MB file; restores the caller's setting."""
    from transformers.utils import logging as hf_logging

    was_disabled = hf_logging.is_progress_bar_enabled() is False
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if not was_disabled:
            hf_logging.enable_progress_bar()


def _fill_zero_matrices(model: PreTrainedModel) -> None:
    """Weight matrices that initialise to zero (Gemma 3's image projection) get small random values: in a
    random-weight model they would cut the image off from the text, and trained checkpoints never have them."""
    import torch

    with torch.no_grad():
        for param in model.parameters():
            if param.ndim >= 2 and not param.any():
                param.normal_(0.0, 0.02)


def _set_generation_defaults(model: PreTrainedModel, tok: PreTrainedTokenizerBase) -> None:
    gc = model.generation_config
    eos = [tok.eos_token_id] + ([tok.pad_token_id] if tok.pad_token_id != tok.eos_token_id else [])
    gc.eos_token_id, gc.pad_token_id, gc.do_sample = eos, tok.pad_token_id, False


def _fingerprint(arch: str, seed: int) -> str:
    """Changes whenever this builder or the libraries it uses change, so a cache never serves stale files."""
    import tokenizers
    import torch
    import transformers

    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(
        f"{arch}|{seed}|{transformers.__version__}|{tokenizers.__version__}|{torch.__version__}".encode()
    )
    return h.hexdigest()[:16]


def default_cache_root() -> Path:
    """``$SPATIAL_ARENA_TINY_DIR``, else ``$XDG_CACHE_HOME/spatial_arena/tiny`` (``~/.cache`` by default)."""
    if os.environ.get("SPATIAL_ARENA_TINY_DIR"):
        return Path(os.environ["SPATIAL_ARENA_TINY_DIR"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "spatial_arena" / "tiny"


def cached_tiny_vlm(arch: str, seed: int = 0, root: str | os.PathLike[str] | None = None) -> Path:
    """The tiny checkpoint for ``(arch, seed)`` under ``root``, built once and reused afterwards.

    Safe when several processes ask at once: each builds in a private folder and renames it into place.
    """
    root = Path(root) if root is not None else default_cache_root()
    target = root / f"{arch}-seed{seed}-{_fingerprint(arch, seed)}"
    if (target / "config.json").is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    from envs.files import process_umask

    staging = Path(tempfile.mkdtemp(prefix=f".{arch}-", dir=root))
    staging.chmod(0o777 & ~process_umask())  # mkdtemp makes it 0700: the cache would be its owner's alone
    try:
        build_tiny_vlm(arch, staging, seed)
        os.replace(staging, target)
    except OSError:
        if not (target / "config.json").is_file():  # not a lost race: a real failure
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for stale in root.glob(f"{arch}-seed{seed}-*"):  # builds of older code: never served again
        if stale != target:
            shutil.rmtree(stale, ignore_errors=True)
    return target


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m policies.tiny", description=__doc__.splitlines()[0])
    parser.add_argument("--arch", required=True, choices=sorted(TINY_ARCHS), help="architecture to build")
    parser.add_argument("--out", required=True, help="output directory (created if missing)")
    parser.add_argument("--seed", type=int, default=0, help="seed for weights and tokenizer corpus")
    args = parser.parse_args(argv)
    out = build_tiny_vlm(args.arch, args.out, args.seed)
    config = json.loads((out / "config.json").read_text())
    print(f"wrote {args.arch} (seed {args.seed}, model_type {config['model_type']}) to {out}")


if __name__ == "__main__":
    main()
