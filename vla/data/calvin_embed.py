"""CALVIN's sentence embeddings, from a local sentence-transformers checkpoint.

    python -m vla.data.calvin_embed --data DATA --lang-encoder PATH

CALVIN's own loaders train on embeddings, not on sentences: ``calvin_agent``'s disk dataset reads
``language.emb`` of ``lang_annotations/auto_lang_ann.npy`` (one row per annotation window, shape
``(N, 1, D)`` float32, the ``1`` being the encoder's output unsqueezed), and its rollouts and evaluation
read the validation split's ``lang_annotations/embeddings.npy``: a pickled dict keyed by the 34 task names,
each ``{"emb": (K, 1, D) float32, "ann": [K sentences]}`` for the task's validation annotations (one per
task, the evaluation instruction), looked up by ``ann[0]``. CALVIN makes both with an SBERT encoder
(its configuration names ``paraphrase-MiniLM-L6-v2``; its dataset server also offers the embeddings of
``paraphrase-MiniLM-L3-v2`` and others; D = 384 for both).

:class:`SentenceEncoder` is that encoder without the sentence-transformers package: the checkpoint's
transformers model (``AutoTokenizer``/``AutoModel``, local files only, no checkpoint code run) with mean
pooling over the attention mask, what sentence-transformers computes for such a checkpoint. The folder's
``modules.json`` (when present) must be a Transformer, a mean Pooling and optionally a Normalize module;
anything else is refused in one line. :func:`write_embeddings` adds both files to a split; the generators
(``spatial-arena demos --env calvin ... --lang-encoder PATH``) and this command call it, so data
generated without ``--lang-encoder`` gets the same embeddings later. ``embeddings.npy`` is written for a
split folder named ``validation``, as CALVIN's datasets have it.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from envs.files import atomic_write_bytes, load_pickled_npy
from policies.config_cli import InputError, arg, parse_config, run_cli
from vla.data.calvin import LANG_FILE, load_language

if TYPE_CHECKING:
    import torch

EMBEDDINGS_FILE = Path("lang_annotations") / "embeddings.npy"
VALIDATION_SPLIT = "validation"
FLAG = "--lang-encoder"
MODULE_PACKAGE = "sentence_transformers."
WEIGHTS = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
BATCH = 64


@dataclass(frozen=True)
class EncoderLayout:
    """What a checkpoint folder says about its encoder: where the transformers model is, whether the
    pooled vector is L2-normalised, the token limit and whether input is lower-cased first."""

    model_dir: Path
    normalize: bool = False
    max_length: int | None = None
    lowercase: bool = False


def _read_json(path: Path, root: str) -> Any:
    from policies.backends.jsonwire import loads_bounded

    try:
        return loads_bounded(path.read_bytes())
    except (OSError, ValueError) as err:
        raise InputError(
            f"{FLAG} {root}: {path.name} is not readable JSON ({err}); fix or remove it"
        ) from None


def _modules(folder: Path) -> tuple[Path, bool]:
    """The model folder and whether a Normalize module follows, from ``modules.json``; mean pooling only."""
    entries = _read_json(folder / "modules.json", str(folder))
    entries = entries if isinstance(entries, list) else []
    types = [str(e.get("type", "")) if isinstance(e, dict) else "?" for e in entries]
    # the class name: sentence-transformers 6 moved the classes (...base.modules.transformer.Transformer)
    kinds = [t.rpartition(".")[2] if t.startswith(MODULE_PACKAGE) else t for t in types]
    if kinds[:2] != ["Transformer", "Pooling"] or any(k != "Normalize" for k in kinds[2:]):
        raise InputError(
            f"{FLAG} {folder}: modules.json lists {kinds}; only a Transformer, a mean Pooling and an "
            f"optional Normalize are computed here (CALVIN's SBERT)"
        )
    pooling = _read_json(folder / str(entries[1].get("path", "")) / "config.json", str(folder))
    pooling = pooling if isinstance(pooling, dict) else {"pooling_mode": "unreadable"}
    modes = sorted(k for k, v in pooling.items() if k.startswith("pooling_mode_") and v is True)
    if pooling.get("pooling_mode", "mean") != "mean" or modes not in ([], ["pooling_mode_mean_tokens"]):
        raise InputError(
            f"{FLAG} {folder}: the checkpoint pools with {modes or pooling.get('pooling_mode')}, not the mean "
            f"of its token vectors (CALVIN's encoder); give a mean-pooling sentence-transformers checkpoint"
        )
    return folder / str(entries[0].get("path", "")), len(kinds) > 2


def encoder_layout(path: str | Path) -> EncoderLayout:
    """Check a checkpoint folder without loading it (one-line :class:`InputError` on what is wrong)."""
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise InputError(
            f"{FLAG} {path}: not a folder; pass a local sentence-transformers checkpoint folder "
            f"(e.g. CALVIN's paraphrase-MiniLM-L3-v2)"
        )
    model_dir, normalize = _modules(folder) if (folder / "modules.json").is_file() else (folder, False)
    if not (model_dir / "config.json").is_file() or not any((model_dir / w).is_file() for w in WEIGHTS):
        raise InputError(
            f"{FLAG} {path}: {model_dir} holds no transformers model (config.json and model.safetensors); "
            f"pass the checkpoint folder itself"
        )
    config = model_dir / "sentence_bert_config.json"
    st = _read_json(config, str(folder)) if config.is_file() else {}
    limit = st.get("max_seq_length") if isinstance(st, dict) else None
    lowercase = bool(st.get("do_lower_case", False)) if isinstance(st, dict) else False
    limit = limit if isinstance(limit, int) and limit > 0 else None  # else the model's own limit
    return EncoderLayout(model_dir, normalize, limit, lowercase)


class SentenceEncoder:
    """A sentence-transformers checkpoint as CALVIN uses it: ``encode(sentences) -> (N, D)`` float32."""

    def __init__(self, path: str | Path) -> None:
        from transformers import AutoModel, AutoTokenizer

        from policies.backends.hub import hub_access

        self.path, self.layout = Path(path), encoder_layout(path)
        load = {"local_files_only": True, "trust_remote_code": False}
        try:
            with hub_access(False):  # local_files_only alone still lets huggingface_hub look the Hub up
                self.tokenizer = AutoTokenizer.from_pretrained(str(self.layout.model_dir), **load)
                self.model = AutoModel.from_pretrained(str(self.layout.model_dir), weights_only=True, **load)
        except (OSError, ValueError) as err:
            message = " ".join(str(err).split())[:200]
            raise InputError(f"{FLAG} {path}: transformers cannot load it ({message})") from None
        self.model.float().eval()
        # sentence-transformers' limit: its config's max_seq_length, else the smaller of the model's and
        # the tokenizer's (newer versions keep it in tokenizer_config.json only)
        limits = [getattr(self.model.config, "max_position_embeddings", None), self.layout.max_length]
        if self.layout.max_length is None:
            limits.append(getattr(self.tokenizer, "model_max_length", None))
        self.max_length = min([n for n in limits if isinstance(n, int) and n > 0] or [512])

    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size)

    def _batch(self, sentences: Sequence[str]) -> torch.Tensor:
        import torch

        texts = [s.strip().lower() if self.layout.lowercase else s.strip() for s in sentences]
        tokens = self.tokenizer(
            texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        )
        with torch.inference_mode():
            hidden = self.model(**tokens).last_hidden_state
        mask = tokens["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, p=2, dim=1) if self.layout.normalize else pooled

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        """``(N, D)`` float32; each distinct sentence is encoded once, so equal sentences get equal rows."""
        unique = list(dict.fromkeys(sentences))
        rows = [self._batch(unique[i : i + BATCH]).numpy() for i in range(0, len(unique), BATCH)]
        table = np.concatenate(rows) if rows else np.zeros((0, self.dim), np.float32)
        where = {s: i for i, s in enumerate(unique)}
        return table[[where[s] for s in sentences]].astype(np.float32).reshape(len(sentences), self.dim)


def embed(encoder: SentenceEncoder, sentences: Sequence[str]) -> np.ndarray:
    """CALVIN's ``language.emb``: ``(N, 1, D)`` float32 (its encoder's output, unsqueezed at axis 1)."""
    return encoder.encode(sentences)[:, None, :]


def validation_embeddings(encoder: SentenceEncoder) -> dict[str, dict[str, Any]]:
    """CALVIN's ``embeddings.npy``: task -> ``{"emb": (1, 1, D), "ann": [sentence]}`` for each of the 34
    tasks, its validation annotation being the evaluation instruction."""
    from envs.calvin.instructions import CALVIN_TASKS, EVAL_INSTRUCTIONS

    vectors = embed(encoder, [EVAL_INSTRUCTIONS[t] for t in CALVIN_TASKS])
    return {t: {"emb": vectors[i : i + 1], "ann": [EVAL_INSTRUCTIONS[t]]} for i, t in enumerate(CALVIN_TASKS)}


def _save_pickled(path: Path, value: dict[str, Any]) -> None:
    """``np.save`` of a dict (a 0-d object array, as CALVIN's files), written atomically."""
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(value, dtype=object), allow_pickle=True)
    atomic_write_bytes(path, buffer.getvalue())


def write_embeddings(split: Path, encoder: SentenceEncoder) -> int:
    """Add ``language.emb`` to ``split``'s ``auto_lang_ann.npy`` (replacing any), and ``embeddings.npy``
    when the split is ``validation``; returns the number of annotations embedded."""
    _, anns, _ = load_language(split)  # checks the layout
    data = load_pickled_npy(split / LANG_FILE)
    data["language"]["emb"] = embed(encoder, anns)
    _save_pickled(split / LANG_FILE, data)
    if split.name == VALIDATION_SPLIT:
        _save_pickled(split / EMBEDDINGS_FILE, validation_embeddings(encoder))
    return len(anns)


def annotated_splits(path: str | Path) -> list[Path]:
    """``path`` itself when it holds ``auto_lang_ann.npy``, else its split folders that do."""
    root = Path(path)
    if (root / LANG_FILE).is_file():
        return [root]
    return sorted(p for p in root.iterdir() if (p / LANG_FILE).is_file()) if root.is_dir() else []


@dataclass
class EmbedConfig:
    """Add CALVIN's sentence embeddings (language.emb in every split's auto_lang_ann.npy, and the validation
    split's embeddings.npy) to a dataset in CALVIN's layout."""

    data: str = arg("", "a CALVIN dataset root (its training/, validation/ splits) or one split folder")
    lang_encoder: str = arg(
        "",
        "local sentence-transformers checkpoint folder with mean pooling (e.g. CALVIN's paraphrase-MiniLM-L3-v2)",
    )

    def check(self) -> None:
        if not self.data or not self.lang_encoder:
            raise InputError("--data DIR and --lang-encoder DIR are both required")
        if not annotated_splits(self.data):
            raise InputError(
                f"--data {self.data}: no {LANG_FILE} in it or in a split folder under it; pass a dataset "
                f"written in CALVIN's layout"
            )
        encoder_layout(self.lang_encoder)


def main(argv: list[str] | None = None) -> dict[str, int]:
    config = parse_config(EmbedConfig, argv, prog="python -m vla.data.calvin_embed")
    encoder = SentenceEncoder(config.lang_encoder)
    counts = {}
    for split in annotated_splits(config.data):
        counts[str(split)] = write_embeddings(split, encoder)
        extra = f" and {EMBEDDINGS_FILE}" if split.name == VALIDATION_SPLIT else ""
        print(f"[calvin_embed] {split}: {counts[str(split)]} annotations embedded (D={encoder.dim}){extra}")
    return counts


if __name__ == "__main__":
    sys.exit(run_cli(main))
