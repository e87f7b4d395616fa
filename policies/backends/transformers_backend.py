"""Hugging Face transformers backend: any image-text-to-text model from a local directory or hub id.

Loads ``AutoModelForImageTextToText`` and the checkpoint's processor (image-only for Qwen-VL when torchvision
is missing, see :mod:`policies.backends.hf_processing`), renders chat messages with the processor's chat
template, and decodes greedily unless the :class:`GenerationConfig` asks for sampling. Conversations are
batched with left padding in :meth:`TransformersBackend.generate_batch`. Nothing is downloaded unless
``allow_download=True``: without it the Hub is offline while loading (:mod:`policies.backends.hub`), so an
id that is not in the local cache fails at once, without a DNS lookup.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from policies.backends.base import FINISH_DEADLINE, Backend, Generation, GenerationConfig, Message
from policies.backends.hub import hub_access
from policies.backends.images import is_image_part, to_pil, validate_messages

if TYPE_CHECKING:  # torch and transformers are imported when a model loads (the mllm extra)
    import torch
    from PIL import Image
    from transformers import BatchFeature, PreTrainedModel, PreTrainedTokenizerBase

_DTYPES = ("auto", "float32", "bfloat16", "float16")
_SMALL_FILES = (
    "config.json",
    "generation_config.json",
    "processor_config.json",
    "preprocessor_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
    "chat_template.json",
)
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")
_PROBE_BYTES = 1 << 20


class TransformersBackend(Backend):
    """A local transformers model behind :class:`Backend`.

    For a server in front of it (:mod:`policies.serve`): :attr:`context_length`, :attr:`longest_token_chars`
    and :meth:`count_prompt_tokens` size a prompt before it reaches the model, and :meth:`generate_batch`
    takes a deadline per conversation (``supports_deadlines``).

    Args:
        model: checkpoint directory or hub id.
        config: decoding settings (greedy by default).
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"`` or ``"auto"`` (CUDA when available).
        dtype: ``"auto"`` (float32 on CPU, the checkpoint's dtype elsewhere), ``"float32"``, ``"bfloat16"``,
            ``"float16"``.
        allow_download: fetch hub ids that are not in the local Hugging Face cache (off by default: runs are
            offline and reproducible).
        revision: hub revision (branch, tag or commit).
        trust_remote_code: run model code shipped with the checkpoint.
        batch_size: most conversations per forward pass in :meth:`generate_batch`.
        min_pixels / max_pixels: image-size bounds for Qwen-VL processors (``None``: the checkpoint's own).
        attn_implementation: e.g. ``"sdpa"`` or ``"eager"`` (``None``: the transformers default).
    """

    def __init__(
        self,
        model: str,
        *,
        config: GenerationConfig | None = None,
        device: str = "cpu",
        dtype: str = "auto",
        allow_download: bool = False,
        revision: str | None = None,
        trust_remote_code: bool = False,
        batch_size: int = 4,
        min_pixels: int | None = None,
        max_pixels: int | None = None,
        attn_implementation: str | None = None,
    ) -> None:
        if dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {_DTYPES}, got {dtype!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model_id = str(model)
        self.config = config or GenerationConfig()
        self.batch_size = batch_size
        self._image_kwargs = {k: v for k, v in (("min_pixels", min_pixels), ("max_pixels", max_pixels)) if v}
        load = {
            "local_files_only": not allow_download,
            "revision": revision,
            "trust_remote_code": trust_remote_code,
        }
        with hub_access(allow_download):  # local_files_only alone still lets huggingface_hub look the Hub up
            self._load(load, device, dtype, attn_implementation)
            self.fingerprint = checkpoint_fingerprint(self.model_id, revision)

    # ----------------------------------------------------------------------------------------- loading

    def _load(self, load: dict[str, Any], device: str, dtype: str, attn: str | None) -> None:
        import torch
        from transformers import AutoModelForImageTextToText

        from policies.backends.hf_processing import load_processor

        self.device = _resolve_device(device)
        extra = {"attn_implementation": attn} if attn else {}
        try:
            self.processor = load_processor(self.model_id, **load)
            self.model = AutoModelForImageTextToText.from_pretrained(
                self.model_id, dtype=_torch_dtype(dtype, self.device), **load, **extra
            )
        except OSError as err:
            raise OSError(_load_hint(self.model_id, load["local_files_only"], err)) from err
        self.model.to(self.device).eval()
        self.dtype = str(next(self.model.parameters()).dtype).removeprefix("torch.")
        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        self.tokenizer.padding_side = "left"
        self._eos_ids = _eos_ids(self.model, self.tokenizer)
        self._torch = torch

    # ------------------------------------------------------------------------------------ prompt size

    @property
    def context_length(self) -> int | None:
        """Tokens the language model attends over (``max_position_embeddings``), when its config says."""
        config = self.model.config
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        value = getattr(text, "max_position_embeddings", None)
        return int(value) if isinstance(value, int) and value > 0 else None

    @functools.cached_property
    def longest_token_chars(self) -> int:
        """Characters of the longest token in the vocabulary: a prompt of ``n`` characters has at least
        ``n / longest_token_chars`` tokens, known before any tokenising."""
        return max((len(token) for token in self.tokenizer.get_vocab()), default=1) or 1

    @functools.cached_property
    def _counting_tokenizer(self) -> PreTrainedTokenizerBase:
        """A copy of the tokenizer for counting on other threads: the model thread's padding calls change
        the tokenizer's state, which a fast tokenizer refuses to share ("Already borrowed")."""
        return copy.deepcopy(self.tokenizer)

    def count_prompt_tokens(self, messages: Sequence[Message]) -> int:
        """Tokens of the prompt as :meth:`generate` builds it, without decoding an image's pixels: the text
        with the chat template, plus each image's tokens from its size where the processor can tell them
        (Qwen-VL, LLaVA and other processors with ``_get_num_multimodal_tokens``; elsewhere images count
        as their placeholder, so the number is a lower bound)."""
        text, images = self._render(messages)
        tokens = len(self._counting_tokenizer(text)["input_ids"])
        counter = getattr(self.processor, "_get_num_multimodal_tokens", None)
        if not images or counter is None:
            return tokens
        sizes = [(image.height, image.width) for image in images]
        per_image = counter(image_sizes=sizes, **self._image_kwargs).num_image_tokens
        return tokens + sum(max(0, int(n) - 1) for n in per_image)  # each placeholder becomes n tokens

    # -------------------------------------------------------------------------------------- generation

    #: :meth:`generate_batch` stops each conversation at its deadline (``deadlines=``).
    supports_deadlines = True

    def generate(self, messages: Sequence[Message]) -> Generation:
        return self.generate_batch([messages])[0]

    def generate_batch(
        self, conversations: Sequence[Sequence[Message]], *, deadlines: Sequence[float] | None = None
    ) -> list[Generation]:
        """Answer conversations in chunks of ``batch_size``, left-padded, in the order given.

        ``deadlines`` (``time.monotonic()`` values, one per conversation) stop a conversation's decoding at
        the first new token after its deadline; its answer then has ``finish_reason == "deadline"``."""
        for messages in conversations:
            validate_messages(messages)
        if deadlines is not None and len(deadlines) != len(conversations):
            raise ValueError(f"{len(deadlines)} deadlines for {len(conversations)} conversations")
        out: list[Generation] = []
        for start in range(0, len(conversations), self.batch_size):
            chunk = slice(start, start + self.batch_size)
            out += self._generate_chunk(conversations[chunk], None if deadlines is None else deadlines[chunk])
        return out

    def _generate_chunk(
        self, conversations: Sequence[Sequence[Message]], deadlines: Sequence[float] | None = None
    ) -> list[Generation]:
        rendered = [self._render(m) for m in conversations]
        inputs = self._encode([t for t, _ in rendered], [imgs for _, imgs in rendered])
        width = inputs["input_ids"].shape[1]
        stop = _DeadlineCriteria(deadlines, width, self._torch) if deadlines is not None else None
        began = time.perf_counter()
        with self._torch.inference_mode():
            if self.config.temperature > 0:
                self._torch.manual_seed(self.config.seed)  # the same conversation gives the same sample
            extra = {"stopping_criteria": [stop]} if stop is not None else {}
            sequences = self.model.generate(**inputs, **self._generate_kwargs(), **extra)
        latency = time.perf_counter() - began
        new_tokens = sequences[:, width:]
        prompt_lengths = inputs["attention_mask"].sum(dim=1).tolist()
        out = [self._decode(row, int(n), latency) for row, n in zip(new_tokens, prompt_lengths)]
        return out if stop is None else [stop.mark(i, g) for i, g in enumerate(out)]

    def _render(self, messages: Sequence[Message]) -> tuple[str, list[Any]]:
        """Prompt text and the images in order of appearance (image parts become placeholders)."""
        images: list[Any] = []
        skeleton: list[dict[str, Any]] = []
        for message in messages:
            content = message["content"]
            if isinstance(content, list):
                parts = []
                for part in content:
                    if is_image_part(part):
                        images.append(to_pil(part["image"]))
                        parts.append({"type": "image"})
                    else:
                        parts.append({"type": "text", "text": part["text"]})
                content = parts
            skeleton.append({"role": message["role"], "content": content})
        template = getattr(self.processor, "chat_template", None) or getattr(
            self.tokenizer, "chat_template", None
        )
        if template:
            text = self.processor.apply_chat_template(
                skeleton, chat_template=template, add_generation_prompt=True, tokenize=False
            )
        else:  # models without a chat template (PaliGemma): image tokens first, then the plain text
            placeholder = getattr(self.processor, "image_token", "")
            text = placeholder * len(images) + "\n".join(_plain_text(m["content"]) for m in skeleton)
        return text, images

    def _encode(self, texts: list[str], images: list[list[Image.Image]]) -> BatchFeature:
        kwargs: dict[str, Any] = {
            "text": texts,
            "padding": True,
            "return_tensors": "pt",
            **self._image_kwargs,
        }
        if any(images):
            if not all(images):
                raise ValueError(
                    "a batch must have images in every conversation or in none; batch them apart"
                )
            kwargs["images"] = images
        # Processors return float32 pixels; cast floating inputs to the weights' dtype (bf16/fp16 on GPUs).
        return self.processor(**kwargs).to(self.device).to(self.model.dtype)

    def _generate_kwargs(self) -> dict[str, Any]:
        c = self.config
        kwargs: dict[str, Any] = {
            "max_new_tokens": c.max_new_tokens,
            "pad_token_id": self.tokenizer.pad_token_id,
        }
        if c.temperature > 0:
            return {**kwargs, "do_sample": True, "temperature": c.temperature, "top_p": c.top_p}
        return {**kwargs, "do_sample": False, "temperature": None, "top_p": None, "top_k": None}

    def _decode(self, row: torch.Tensor, prompt_tokens: int, latency: float) -> Generation:
        ids = row.tolist()
        stop = next((i for i, t in enumerate(ids) if t in self._eos_ids), None)
        kept = ids if stop is None else ids[: stop + 1]  # the end-of-turn token counts as generated
        text = self.tokenizer.decode(kept, skip_special_tokens=True)
        finish = "stop" if stop is not None else "length"
        return Generation(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=len(kept),
            latency_s=latency,
            finish_reason=finish,
        )

    # --------------------------------------------------------------------------------------- identity

    def describe(self) -> dict[str, Any]:
        return {
            "backend": type(self).__name__,
            "model_id": self.model_id,
            "config": asdict(self.config),
            "model_type": self.model.config.model_type,
            "device": str(self.device),
            "dtype": self.dtype,
            "fingerprint": self.fingerprint,
        }

    def cache_identity(self) -> dict[str, Any]:
        """What determines an answer besides the messages: weights, template, dtype and device kind."""
        device_kind = str(self.device).split(":")[0]
        return {
            "backend": "transformers",
            "fingerprint": self.fingerprint,
            "dtype": self.dtype,
            "device": device_kind,
            "image_kwargs": self._image_kwargs,
        }


# ---------------------------------------------------------------------------------------------- helpers


class _DeadlineCriteria:
    """A ``stopping_criteria`` entry: a row is done once its deadline has passed (checked after each new
    token, so a deadline moved earlier while generating, a cancelled request, counts); :meth:`mark` then
    labels that row's answer ``finish_reason="deadline"`` unless it had ended on its own by then."""

    def __init__(self, deadlines: Sequence[float], prompt_width: int, torch: ModuleType) -> None:
        self.deadlines, self.width, self._torch = deadlines, prompt_width, torch
        self.cut_at: dict[int, int] = {}  # row -> new tokens it had when its deadline passed

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        now = time.monotonic()
        late = [now > d for d in self.deadlines]
        for row, is_late in enumerate(late):
            if is_late:
                self.cut_at.setdefault(row, input_ids.shape[1] - self.width)
        return self._torch.tensor(late, dtype=self._torch.bool, device=input_ids.device)

    def mark(self, row: int, generation: Generation) -> Generation:
        cut = self.cut_at.get(row)
        ended = generation.finish_reason == "stop" and (generation.completion_tokens or 0) <= (cut or 0)
        if cut is None or ended:  # the padding after a cut may be an end-of-turn token: not an ending
            return generation
        return dataclasses.replace(generation, finish_reason=FINISH_DEADLINE)


def _plain_text(content: str | Sequence[Mapping[str, Any]]) -> str:
    if isinstance(content, str):
        return content
    return "".join(p["text"] for p in content if p.get("type") == "text")


def _resolve_device(device: str) -> torch.device:
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {device!r} requested but CUDA is not available; use device='cpu'")
    return dev


def _torch_dtype(dtype: str, device: torch.device) -> torch.dtype | str:
    import torch

    if dtype == "auto":
        return torch.float32 if device.type == "cpu" else "auto"
    return getattr(torch, dtype)


def _eos_ids(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> set[int]:
    ids = model.generation_config.eos_token_id
    ids = set(ids if isinstance(ids, list) else [ids] if ids is not None else [])
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return ids


def _load_hint(model: str, local_only: bool, err: Exception) -> str:
    where = "is not a checkpoint directory" if not os.path.isdir(model) else "is missing files"
    hint = (
        (
            f"model {model!r} {where} and is not in the local Hugging Face cache; pass a checkpoint directory "
            "(e.g. one written by `python -m policies.tiny`) or allow downloads (allow_download=True, "
            "--allow-download)"
        )
        if local_only
        else f"could not load model {model!r}"
    )
    return f"{hint}. Underlying error: {err}"


def _local_snapshot(model: str, revision: str | None) -> Path | None:
    if os.path.isdir(model):
        return Path(model)
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model, revision=revision, local_files_only=True))
    except Exception:  # not cached locally, or not a hub id: identity falls back to the name
        return None


def checkpoint_fingerprint(model: str, revision: str | None = None) -> str:
    """A short hash of a checkpoint's content: small config/tokenizer files in full, and for each weight
    file its size plus its first and last MiB (enough to tell two checkpoints apart without reading GBs).
    """
    root = _local_snapshot(model, revision)
    h = hashlib.sha256()
    if root is None:
        h.update(f"unresolved:{model}@{revision}".encode())
        return h.hexdigest()[:20]
    for path in sorted(p for p in root.iterdir() if p.is_file()):
        if path.name in _SMALL_FILES:
            h.update(path.name.encode() + b"\0" + path.read_bytes())
        elif path.suffix in _WEIGHT_SUFFIXES:
            size = path.stat().st_size
            with path.open("rb") as f:
                head = f.read(_PROBE_BYTES)
                f.seek(max(0, size - _PROBE_BYTES))
                tail = f.read(_PROBE_BYTES)
            h.update(f"{path.name}\0{size}\0".encode() + head + tail)
    return h.hexdigest()[:20]
