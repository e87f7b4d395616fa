"""Image-only processors for VLMs whose stock processor needs a video processor, so they run without torchvision.

The stock Qwen2.5-VL, Qwen3-VL (and -MoE), InternVL, LLaVA-OneVision and SmolVLM processors always build a video processor, and those need torchvision,
which has no CPU build for this torch. Benchmarks only ever send images, so the subclasses below drop the
video processor (their ``__init__`` has no ``video_processor`` argument, which is how transformers decides
which sub-processors to load). Importing this module registers them with ``AutoProcessor`` (checkpoints
written by :mod:`policies.tiny` name them in ``processor_config.json``); :func:`load_processor` also uses
them for real Qwen checkpoints when torchvision is missing.
"""

from __future__ import annotations

from typing import Any

from transformers import (
    AutoConfig,
    AutoProcessor,
    InternVLConfig,
    LlavaOnevisionConfig,
    PreTrainedTokenizerBase,
    ProcessorMixin,
    Qwen2_5_VLConfig,
    Qwen3VLConfig,
    Qwen3VLMoeConfig,
    SmolVLMConfig,
)
from transformers.image_processing_utils import BaseImageProcessor
from transformers.models.internvl.processing_internvl import InternVLProcessor
from transformers.models.llava_onevision.processing_llava_onevision import LlavaOnevisionProcessor
from transformers.models.qwen2_5_vl.processing_qwen2_5_vl import Qwen2_5_VLProcessor
from transformers.models.qwen3_vl.processing_qwen3_vl import Qwen3VLProcessor
from transformers.models.smolvlm.processing_smolvlm import SmolVLMProcessor
from transformers.utils import is_torchvision_available


class ImageOnlyQwen2_5_VLProcessor(Qwen2_5_VLProcessor):
    """Qwen2.5-VL processor with images and text only (no video processor, so no torchvision)."""

    def __init__(
        self,
        image_processor: BaseImageProcessor | None = None,
        tokenizer: PreTrainedTokenizerBase | None = None,
        chat_template: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(
            image_processor, tokenizer, video_processor=None, chat_template=chat_template, **kwargs
        )


class ImageOnlyQwen3VLProcessor(Qwen3VLProcessor):
    """Qwen3-VL processor with images and text only (no video processor, so no torchvision)."""

    def __init__(
        self,
        image_processor: BaseImageProcessor | None = None,
        tokenizer: PreTrainedTokenizerBase | None = None,
        chat_template: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(
            image_processor, tokenizer, video_processor=None, chat_template=chat_template, **kwargs
        )


class ImageOnlyInternVLProcessor(InternVLProcessor):
    """InternVL processor with images and text only (no video processor, so no torchvision)."""

    def __init__(
        self,
        image_processor: BaseImageProcessor | None = None,
        tokenizer: PreTrainedTokenizerBase | None = None,
        image_seq_length: int = 256,
        chat_template: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(
            image_processor,
            tokenizer,
            video_processor=None,
            image_seq_length=image_seq_length,
            chat_template=chat_template,
            **kwargs,
        )


class ImageOnlyLlavaOnevisionProcessor(LlavaOnevisionProcessor):
    """LLaVA-OneVision processor with images and text only (no video processor, so no torchvision)."""

    def __init__(
        self,
        image_processor: BaseImageProcessor | None = None,
        tokenizer: PreTrainedTokenizerBase | None = None,
        num_image_tokens: int | None = None,
        vision_feature_select_strategy: str | None = None,
        chat_template: str | None = None,
        vision_aspect_ratio: str = "anyres_max_9",
        **kwargs: Any,
    ):
        # named arguments, not **kwargs: ProcessorMixin saves (and reloads) only what __init__ names
        super().__init__(
            image_processor,
            tokenizer,
            video_processor=None,
            num_image_tokens=num_image_tokens,
            vision_feature_select_strategy=vision_feature_select_strategy,
            chat_template=chat_template,
            vision_aspect_ratio=vision_aspect_ratio,
            **kwargs,
        )


class ImageOnlySmolVLMProcessor(SmolVLMProcessor):
    """SmolVLM processor with images and text only (no video processor, so no torchvision).

    The stock processor refuses to start without the ``num2words`` package, which it uses only to spell out a
    video's frame count; without videos it is never called, so a stand-in that says so takes its place."""

    def __init__(
        self,
        image_processor: BaseImageProcessor | None = None,
        tokenizer: PreTrainedTokenizerBase | None = None,
        image_seq_len: int = 169,
        chat_template: str | None = None,
        **kwargs: Any,
    ):
        from transformers.models.smolvlm import processing_smolvlm

        if processing_smolvlm.num2words is None:
            processing_smolvlm.num2words = _no_num2words
        super().__init__(
            image_processor,
            tokenizer,
            video_processor=None,
            image_seq_len=image_seq_len,
            chat_template=chat_template,
            **kwargs,
        )


def _no_num2words(number: int, *args: Any, **kwargs: Any) -> str:
    raise ImportError(
        "SmolVLM video prompts need the num2words package: pip install num2words (images do not)"
    )


#: model_type -> the image-only processor used for it.
IMAGE_ONLY_PROCESSORS: dict[str, type[ProcessorMixin]] = {
    "qwen2_5_vl": ImageOnlyQwen2_5_VLProcessor,
    "qwen3_vl": ImageOnlyQwen3VLProcessor,
    "qwen3_vl_moe": ImageOnlyQwen3VLProcessor,
    "internvl": ImageOnlyInternVLProcessor,
    "llava_onevision": ImageOnlyLlavaOnevisionProcessor,
    "smolvlm": ImageOnlySmolVLMProcessor,
}

# exist_ok: the stock processors already claim these configs; ours take precedence in this process.
for _config, _processor in (
    (Qwen2_5_VLConfig, ImageOnlyQwen2_5_VLProcessor),
    (Qwen3VLConfig, ImageOnlyQwen3VLProcessor),
    (Qwen3VLMoeConfig, ImageOnlyQwen3VLProcessor),
    (InternVLConfig, ImageOnlyInternVLProcessor),
    (LlavaOnevisionConfig, ImageOnlyLlavaOnevisionProcessor),
    (SmolVLMConfig, ImageOnlySmolVLMProcessor),
):
    AutoProcessor.register(_config, _processor, exist_ok=True)


def load_processor(path_or_id: str, **kwargs: Any) -> ProcessorMixin:
    """The processor of a checkpoint, image-only for Qwen-VL models when torchvision is not installed.

    ``kwargs`` go to ``from_pretrained`` (``local_files_only``, ``revision``, ``trust_remote_code``, ...).
    """
    if not is_torchvision_available():
        config = AutoConfig.from_pretrained(path_or_id, **kwargs)
        image_only = IMAGE_ONLY_PROCESSORS.get(getattr(config, "model_type", ""))
        if image_only is not None:
            return image_only.from_pretrained(path_or_id, **kwargs)
    return AutoProcessor.from_pretrained(path_or_id, **kwargs)
