"""Tiny vision-language checkpoints for tests and demos, built locally with nothing downloaded.

``python -m policies.tiny --arch qwen2_5_vl --out DIR`` writes a directory that the normal loading code
(``AutoModelForImageTextToText`` + ``AutoProcessor``, or :mod:`policies.backends.transformers_backend`) reads
like any Hugging Face checkpoint: random weights from a tiny config of the real architecture, a byte-level
BPE tokenizer trained in-process with the architecture's special tokens and a chat template, and an
image-only processor. Everything is a deterministic function of ``(arch, seed)``.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

QWEN_SPECIAL_TOKENS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
)  # fmt: skip
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

    tokenizer: str  # "qwen" (byte-level BPE) or "gemma" (BPE with byte fallback)
    build_config: Callable[[Any], Any]  # tokenizer -> model config
    build_processor: Callable[[Any], Any]  # tokenizer -> processor


# --------------------------------------------------------------------------------------------- corpus


def _corpus(seed: int) -> list[str]:
    """Training text for the tokenizer: the project's prompts (so they encode compactly), plan JSON and
    instructions, shuffled by seed."""
    from action_mapping import EB_NAV_ACTIONS, render_manipulation_prompt, render_navigation_prompt
    from policies.mllm.eb_prompts import system_text

    rng = np.random.default_rng(seed)
    lines = [*render_navigation_prompt().splitlines(), *render_manipulation_prompt().splitlines()]
    lines += [*system_text("navigation", 20, 3).splitlines(), *system_text("manipulation", 15, 4).splitlines()]
    lines += [f"action id {i}: {name}" for i, (name, _) in enumerate(EB_NAV_ACTIONS)]
    words = [
        "navigate", "to", "the", "red", "blue", "green", "apple", "mug", "bowl", "cube", "drawer", "slider",
        "light", "switch", "block", "table", "pick", "up", "place", "push", "open", "close", "turn", "on", "off",
        "left", "right", "forward", "back", "above", "below", "into", "step", "action", "feedback", "executed",
        "successfully", "invalid", "last", "visual", "state", "description", "reasoning", "reflection",
        "language", "plan", "executable",
    ]  # fmt: skip
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

        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])  # fmt: skip
        alphabet = pre_tokenizers.ByteLevel.alphabet()
    else:  # SentencePiece-style: spaces become "▁" and stay attached to the following word
        tok.normalizer = normalizers.Replace(" ", "▁")
        tok.pre_tokenizer = pre_tokenizers.Split("▁", behavior="merged_with_next")
        alphabet = []
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_TARGET, initial_alphabet=alphabet, show_progress=False)
    tok.train_from_iterator(lines, trainer)
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    return dict(model["vocab"]), merges  # type: ignore[return-value]


def build_tokenizer(family: str, seed: int) -> Any:
    """A tokenizer of the given family trained on :func:`_corpus` (Qwen2Tokenizer or GemmaTokenizer)."""
    vocab, merges = _train_bpe(_corpus(seed), byte_level=family == "qwen")
    if family == "qwen":
        from transformers import Qwen2Tokenizer

        tok = Qwen2Tokenizer(
            vocab=vocab, merges=merges, eos_token="<|im_end|>", pad_token="<|endoftext|>",
            unk_token=None, additional_special_tokens=list(QWEN_SPECIAL_TOKENS[1:]),
        )  # fmt: skip
        tok.chat_template = QWEN_CHAT_TEMPLATE
        return tok
    if family == "gemma":
        from transformers import GemmaTokenizer

        # Gemma's layout: special tokens first, then the 256 byte-fallback tokens, then learned pieces.
        ordered = [*GEMMA_SPECIAL_TOKENS, *(f"<0x{b:02X}>" for b in range(256))]
        ordered += [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1]) if t not in ordered]
        return GemmaTokenizer(vocab={t: i for i, t in enumerate(ordered)}, merges=merges)
    raise ValueError(f"unknown tokenizer family {family!r}; expected 'qwen' or 'gemma'")


# ---------------------------------------------------------------------------------------- architectures


def _qwen_ids(tok: Any) -> dict[str, int]:
    ids = {t: tok.convert_tokens_to_ids(t) for t in QWEN_SPECIAL_TOKENS}
    return {
        "image_token_id": ids["<|image_pad|>"], "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"], "vision_end_token_id": ids["<|vision_end|>"],
    }  # fmt: skip


def _qwen_text(tok: Any) -> dict[str, Any]:
    return {
        "vocab_size": len(tok), "hidden_size": TEXT_HIDDEN, "intermediate_size": 2 * TEXT_HIDDEN,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "max_position_embeddings": 32768,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 2, 2]},
        "bos_token_id": tok.convert_tokens_to_ids("<|endoftext|>"),
        "eos_token_id": tok.convert_tokens_to_ids("<|im_end|>"),
        "pad_token_id": tok.convert_tokens_to_ids("<|endoftext|>"),
    }  # fmt: skip


def _qwen2_5_vl_config(tok: Any) -> Any:
    from transformers import Qwen2_5_VLConfig

    vision = {
        "depth": 2, "hidden_size": VISION_HIDDEN, "intermediate_size": 2 * VISION_HIDDEN, "num_heads": 4,
        "patch_size": 14, "window_size": 112, "out_hidden_size": TEXT_HIDDEN, "fullatt_block_indexes": [1],
    }  # fmt: skip
    return Qwen2_5_VLConfig(text_config=_qwen_text(tok), vision_config=vision, **_qwen_ids(tok))


def _qwen3_vl_config(tok: Any) -> Any:
    from transformers import Qwen3VLConfig

    text = {**_qwen_text(tok), "head_dim": TEXT_HIDDEN // 4}
    text["rope_parameters"] = {**text["rope_parameters"], "mrope_interleaved": True}
    vision = {
        "depth": 2, "hidden_size": VISION_HIDDEN, "intermediate_size": 2 * VISION_HIDDEN, "num_heads": 4,
        "patch_size": 16, "out_hidden_size": TEXT_HIDDEN, "num_position_embeddings": 64,
        "deepstack_visual_indexes": [0],
    }  # fmt: skip
    return Qwen3VLConfig(text_config=text, vision_config=vision, **_qwen_ids(tok))


def _qwen_image_processor(patch: int, mean: list[float], std: list[float]) -> Any:
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    factor = 2 * patch  # merge_size 2: image sides become multiples of 2 x patch
    return Qwen2VLImageProcessorPil(
        patch_size=patch, merge_size=2, temporal_patch_size=2, image_mean=mean, image_std=std,
        size={"shortest_edge": factor * factor, "longest_edge": 8 * factor * 8 * factor},
    )  # fmt: skip


def _qwen2_5_vl_processor(tok: Any) -> Any:
    from policies.backends.hf_processing import ImageOnlyQwen2_5_VLProcessor

    clip_mean, clip_std = [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]
    ip = _qwen_image_processor(14, clip_mean, clip_std)
    return ImageOnlyQwen2_5_VLProcessor(image_processor=ip, tokenizer=tok, chat_template=QWEN_CHAT_TEMPLATE)


def _qwen3_vl_processor(tok: Any) -> Any:
    from policies.backends.hf_processing import ImageOnlyQwen3VLProcessor

    ip = _qwen_image_processor(16, [0.5] * 3, [0.5] * 3)
    return ImageOnlyQwen3VLProcessor(image_processor=ip, tokenizer=tok, chat_template=QWEN_CHAT_TEMPLATE)


PALIGEMMA_IMAGE_SIZE, PALIGEMMA_PATCH = 56, 14


def _paligemma_processor(tok: Any) -> Any:
    from transformers import PaliGemmaProcessor
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

    ip = SiglipImageProcessorPil(
        size={"height": PALIGEMMA_IMAGE_SIZE, "width": PALIGEMMA_IMAGE_SIZE},
        image_seq_length=(PALIGEMMA_IMAGE_SIZE // PALIGEMMA_PATCH) ** 2,
    )
    return PaliGemmaProcessor(image_processor=ip, tokenizer=tok)  # adds <image>, <locXXXX>, <segXXX>


def _paligemma_config(tok: Any) -> Any:
    from transformers import PaliGemmaConfig

    vision = {
        "model_type": "siglip_vision_model", "hidden_size": VISION_HIDDEN, "intermediate_size": 2 * VISION_HIDDEN,
        "num_hidden_layers": 2, "num_attention_heads": 4, "image_size": PALIGEMMA_IMAGE_SIZE,
        "patch_size": PALIGEMMA_PATCH, "projection_dim": TEXT_HIDDEN, "vision_use_head": False,
    }  # fmt: skip
    text = {
        "model_type": "gemma", "vocab_size": len(tok), "hidden_size": TEXT_HIDDEN,
        "intermediate_size": 2 * TEXT_HIDDEN, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 1, "head_dim": TEXT_HIDDEN // 4, "max_position_embeddings": 8192,
        "bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id, "pad_token_id": tok.pad_token_id,
    }  # fmt: skip
    return PaliGemmaConfig(
        vision_config=vision, text_config=text, image_token_index=tok.convert_tokens_to_ids("<image>"),
        projection_dim=TEXT_HIDDEN,
    )


#: Architecture name -> how to build it. The processor is built first (PaliGemma's adds tokens).
TINY_ARCHS: dict[str, TinyArch] = {
    "qwen2_5_vl": TinyArch("qwen", _qwen2_5_vl_config, _qwen2_5_vl_processor),
    "qwen3_vl": TinyArch("qwen", _qwen3_vl_config, _qwen3_vl_processor),
    "paligemma": TinyArch("gemma", _paligemma_config, _paligemma_processor),
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
    processor = spec.build_processor(build_tokenizer(spec.tokenizer, seed))
    config = spec.build_config(processor.tokenizer)
    torch.manual_seed(seed)
    model = AutoModelForImageTextToText.from_config(config)
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


def _set_generation_defaults(model: Any, tok: Any) -> None:
    gc = model.generation_config
    eos = [tok.eos_token_id] + ([tok.pad_token_id] if tok.pad_token_id != tok.eos_token_id else [])
    gc.eos_token_id, gc.pad_token_id, gc.do_sample = eos, tok.pad_token_id, False


def _fingerprint(arch: str, seed: int) -> str:
    """Changes whenever this builder or the libraries it uses change, so a cache never serves stale files."""
    import tokenizers
    import torch
    import transformers

    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(f"{arch}|{seed}|{transformers.__version__}|{tokenizers.__version__}|{torch.__version__}".encode())
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
