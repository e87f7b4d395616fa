"""Episode sets as JSON lines, one episode per line: the file format of the EB-style families."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

Validator = Callable[[dict[str, Any]], None]


def save_episodes_jsonl(episodes: Iterable[dict[str, Any]], path: str | Path, validate: Validator) -> Path:
    """Validate and write ``episodes`` (keys sorted, so files diff cleanly); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for episode in episodes:
            validate(episode)
            f.write(json.dumps(episode, sort_keys=True) + "\n")
    return path


def load_episodes_jsonl(
    path: str | Path, validate: Validator, error: type[ValueError] = ValueError
) -> list[dict[str, Any]]:
    """Read and validate a JSONL episode file; a bad line raises ``error`` naming the file and line."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"episode file {path} does not exist; write one with save_episodes()")
    episodes = []
    with path.open(encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                episode = json.loads(line)
            except json.JSONDecodeError as exc:
                raise error(f"{path}:{line_no}: not valid JSON ({exc.msg})") from exc
            try:
                validate(episode)
            except ValueError as exc:
                raise error(f"{path}:{line_no}: {exc}") from exc
            episodes.append(episode)
    return episodes
