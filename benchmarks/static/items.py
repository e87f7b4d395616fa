"""Benchmark items, data-file reading (JSON, JSONL, parquet) and the errors bad data raises.

Every loader turns its benchmark's official rows into :class:`StaticItem` s. Problems are raised as
:class:`DataError` with the file, the item and the fix, and nothing is silently dropped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from policies.config_cli import InputError

Media = str | bytes  # a resolved file path, or encoded image bytes from a parquet column


class DataError(InputError):
    """A benchmark file that cannot be used as given; the message names the item and the fix."""


@dataclass(frozen=True)
class StaticItem:
    """One benchmark question, in a benchmark-neutral form.

    Attributes:
        benchmark: registry name (``"spatialscore"``...).
        item_id: stable id, unique within the file (predictions are matched on it).
        index: position in the file, the order of every output.
        question: question text as published (options included when the benchmark writes them there).
        answer: ground truth as published.
        task: what kind of answer is expected (``"mcq"``, ``"judgment"``, ``"numeric"``, ``"multi_answer"``...).
        options: letter -> option text (empty when the question has none).
        media: image paths or bytes (video frames in order); a video file path for video items.
        modality: ``"single-image"``, ``"multi-image"`` or ``"video"``.
        category: the group of the benchmark's main per-category table.
        tags: other grouping keys (source, hop, view, level, ability, capabilities...).
        meta: scoring extras (ground-truth box, image size, annotation uncertainties...).
    """

    benchmark: str
    item_id: str
    index: int
    question: str
    answer: Any
    task: str
    options: Mapping[str, str] = field(default_factory=dict)
    media: tuple[Media, ...] = ()
    modality: str = "single-image"
    category: str = ""
    tags: Mapping[str, Any] = field(default_factory=dict)
    meta: Mapping[str, Any] = field(default_factory=dict)


def media_cluster(item: StaticItem) -> str:
    """The cluster key of an item for clustered standard errors: its media (image paths, a video's path,
    or the SHA-256 of image bytes), so questions about the same image, scene video or frame set share a
    cluster. An item without media is its own cluster."""
    if not item.media:
        return f"item:{item.item_id}"
    return "|".join(
        m if isinstance(m, str) else "sha256:" + hashlib.sha256(m).hexdigest()[:16] for m in item.media
    )


# --------------------------------------------------------------------------------------------------------
# Reading rows

DATA_SUFFIXES = (".json", ".jsonl", ".parquet")


def data_files(path: str | Path) -> list[Path]:
    """The data files at ``path``: the file itself, or every JSON/JSONL/parquet file below a directory."""
    path = Path(path)
    if not path.exists():
        raise DataError(
            f"data path {path} does not exist; pass --data with the benchmark's JSON/JSONL/parquet file or folder"
        )
    if path.is_file():
        if path.suffix.lower() not in DATA_SUFFIXES:
            raise DataError(
                f"{path}: unsupported file type {path.suffix!r}; expected one of {', '.join(DATA_SUFFIXES)}"
            )
        return [path]
    found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in DATA_SUFFIXES)
    if not found:
        raise DataError(f"no {'/'.join(DATA_SUFFIXES)} files under {path}")
    return found


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of one JSON (a list, or ``{"data": [...]}``), JSONL or parquet file."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return _read_parquet(path)
    text = path.read_text(encoding="utf-8")
    if suffix == ".jsonl":
        return [_json_line(path, n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise DataError(f"{path}: not valid JSON ({error}); JSONL files need the .jsonl suffix") from None
    if isinstance(data, Mapping) and isinstance(data.get("data"), list):
        data = data["data"]
    if not isinstance(data, list) or not all(isinstance(row, Mapping) for row in data):
        raise DataError(f"{path}: expected a JSON list of objects (one per item)")
    return [dict(row) for row in data]


def _json_line(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as error:
        raise DataError(f"{path}, line {number}: not valid JSON ({error})") from None
    if not isinstance(row, Mapping):
        raise DataError(f"{path}, line {number}: expected a JSON object")
    return dict(row)


def _read_parquet(path: Path) -> list[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as error:
        raise DataError(
            f"reading {path} needs pyarrow: pip install 'spatial-arena[static]' ({error})"
        ) from None
    return pq.read_table(path).to_pylist()


def require_fields(row: Mapping[str, Any], fields: Iterable[str], where: str, benchmark: str) -> None:
    """Raise a :class:`DataError` naming the missing fields of a row."""
    missing = [f for f in fields if f not in row or row[f] is None]
    if missing:
        present = ", ".join(sorted(row)) or "none"
        raise DataError(
            f"{where}: missing field(s) {', '.join(missing)} for a {benchmark} item (fields present: {present})"
        )


def first_present(row: Mapping[str, Any], names: Sequence[str]) -> Any:
    """The value of the first of ``names`` present (not None) in ``row``, else ``None``."""
    for name in names:
        if row.get(name) is not None:
            return row[name]
    return None


def item_ids(rows: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> list[str]:
    """Stable ids from the first id field present, else the row position; duplicates are an error."""
    ids = []
    for position, row in enumerate(rows):
        value = first_present(row, keys)
        ids.append(str(value) if value is not None else str(position))
    seen: dict[str, int] = {}
    for position, item_id in enumerate(ids):
        if item_id in seen:
            raise DataError(
                f"item id {item_id!r} appears at rows {seen[item_id]} and {position}; ids must be unique"
            )
        seen[item_id] = position
    return ids


# --------------------------------------------------------------------------------------------------------
# Media paths


@dataclass(frozen=True)
class MediaRoot:
    """Where relative media paths are resolved, and whether they must exist (not needed to score only)."""

    root: Path
    check: bool = True

    def resolve(self, relative: str, where: str) -> str:
        """The absolute path of one media file; a :class:`DataError` naming the item when it is missing."""
        path = Path(relative)
        if not path.is_absolute():
            path = self.root / relative
        if self.check and not path.is_file():
            raise DataError(
                f"{where}: media file {relative!r} not found (looked for {path}); "
                "pass --image-root with the folder the paths are relative to"
            )
        return str(path)


def choose_media_root(
    data_path: Path, explicit: Path | None, sample: str | None, check: bool, extra: Sequence[str] = ()
) -> MediaRoot:
    """The media root: ``explicit`` if given, else the first of the data folder, its ``extra`` sub-folders
    and its parent where ``sample`` (one item's media path) exists."""
    if explicit is not None:
        if check and not explicit.is_dir():
            raise DataError(f"--image-root {explicit} is not a folder")
        return MediaRoot(explicit, check)
    base = data_path if data_path.is_dir() else data_path.parent
    candidates = [base / e for e in extra] + [base, base.parent]
    if sample is None or Path(sample).is_absolute():
        return MediaRoot(base, check)
    for candidate in candidates:
        if (candidate / sample).is_file():
            return MediaRoot(candidate, check)
    if check:
        tried = ", ".join(str(c / sample) for c in candidates)
        raise DataError(
            f"media file {sample!r} of the first item not found (tried {tried}); pass --image-root"
        )
    return MediaRoot(base, check)


def iter_strings(value: object) -> Iterator[str]:
    """A string, or each string of a list (for path fields that hold one path or many)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list | tuple):
        for entry in value:
            if isinstance(entry, str):
                yield entry


def plain_number(value: float) -> str:
    """A number as a model writes it: shortest exact digits, never exponent notation ("2.0", "0.00001")."""
    return np.format_float_positional(float(value), trim="0")
