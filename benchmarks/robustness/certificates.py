"""Expert certificates of perturbed variants, cached in a JSON file by the hash of what defines the variant.

A certificate says whether the family's expert solved a variant: the spec applied to one episode. Its key
hashes the family, the expert, the episode's content and the spec, so a suite is certified once and an
edited episode or a different expert is certified again. The file is plain JSON (no pickle)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from benchmarks.core.episode_record import EpisodeRecord
from envs.perturbation import PerturbationSpec, content_hash
from policies.config_cli import InputError

FORMAT = "spatial-arena-certificates/1"


def certificate_key(
    family: str, expert: str, episode: Mapping[str, Any], spec: PerturbationSpec | None
) -> str:
    """The cache key of ``spec`` applied to ``episode`` (``None``: the clean episode) and checked by ``expert``."""
    data = None if spec is None else spec.to_json()
    return content_hash({"family": family, "expert": expert, "episode": episode, "spec": data})


class CertificateCache:
    """``key -> certificate`` (``{"certified": bool, "axis", "level", "episode_id", "expert_steps"}``; axis and
    level ``None`` for a clean episode's certificate)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.entries: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            self.entries = _read(self.path)

    def get(self, key: str) -> bool | None:
        entry = self.entries.get(key)
        return None if entry is None else bool(entry["certified"])

    def put(self, key: str, certificate: dict[str, Any]) -> None:
        self.entries[key] = dict(certificate)

    def save(self) -> None:
        """Merge with what is on disk now (another run may have added some) and write atomically."""
        merged = {**(_read(self.path) if self.path.exists() else {}), **self.entries}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"format": FORMAT, "certificates": merged}, indent=1, sort_keys=True))
        tmp.replace(self.path)
        self.entries = merged


def _read(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise InputError(f"--certificates {path}: not a readable JSON certificate file ({error})") from None
    if (
        not isinstance(data, dict)
        or data.get("format") != FORMAT
        or not isinstance(data.get("certificates"), dict)
    ):
        raise InputError(
            f"--certificates {path}: not a certificate file (format {FORMAT!r}); remove it or pick another path"
        )
    return data["certificates"]


def certify(
    cache: CertificateCache,
    key: str,
    spec: PerturbationSpec | None,
    episode_id: object,
    run_expert: Callable[[], EpisodeRecord],
) -> dict[str, Any]:
    """The variant's certificate (``spec`` ``None``: the clean episode's): from ``cache``, or by running the
    expert (``run_expert``) on it once."""
    if key in cache.entries:
        return {**cache.entries[key], "key": key, "cached": True}
    record = run_expert()
    certificate = {
        "certified": bool(record["success"]),
        "axis": None if spec is None else spec.axis,
        "level": None if spec is None else spec.level,
        "episode_id": episode_id,
        "expert_steps": int(record["steps"]),
    }
    cache.put(key, certificate)
    return {**certificate, "key": key, "cached": False}
