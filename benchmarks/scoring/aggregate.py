"""Aggregation: grouped tables, SpaCE-10 capability scores, and SpatialTree's weighted capability tree.

Weights are data: a tree is read from a JSON or YAML file of nodes ``{"name", "weight", "children"}``
(the layout of lmms-eval's ``spatree_hierarchy.json``), never written into code.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.scoring.metrics import mean
from benchmarks.stats.intervals import score_interval


@dataclass
class Group:
    """Scores collected for one group of samples."""

    n: int = 0
    scores: list[float] = field(default_factory=list)
    parse_failures: int = 0
    #: the cluster key of each scored sample (the image, scene or video it shares with others), in order
    clusters: list[Hashable] = field(default_factory=list)

    @property
    def mean(self) -> float | None:
        """Mean of the scored samples (``None`` when none was scorable)."""
        return mean(self.scores)


def group_records(
    records: Iterable[Mapping[str, Any]], key: Callable[[Mapping[str, Any]], Hashable]
) -> dict[Hashable, Group]:
    """Group per-sample records by ``key(record)``, in first-seen order. ``score`` may be ``None`` (unscored)."""
    groups: dict[Hashable, Group] = {}
    for record in records:
        group = groups.setdefault(key(record), Group())
        group.n += 1
        if record.get("score") is not None:
            group.scores.append(float(record["score"]))
            group.clusters.append(record.get("cluster", (key(record), len(group.scores))))
        if not (record.get("parse") or {}).get("ok", True):
            group.parse_failures += 1
    return groups


def percent(value: float | None) -> float | None:
    """0-1 -> percent; ``None`` stays ``None``."""
    return None if value is None else 100.0 * value


def group_table(
    records: Sequence[Mapping[str, Any]], key: Callable[[Mapping[str, Any]], Hashable], label: str
) -> list[dict[str, Any]]:
    """Rows ``{label, n, scored, score, score_ci, parse_failures}`` (score and its 95 % interval in percent,
    :func:`benchmarks.stats.intervals.score_interval` over the scored samples, clustered by each record's
    ``cluster`` when it has one), sorted by group name."""
    groups = group_records(records, key)
    rows = [
        {
            label: name,
            "n": g.n,
            "scored": len(g.scores),
            "score": percent(g.mean),
            "score_ci": score_interval(g.scores, g.clusters).scaled(100).bounds(),
            "parse_failures": g.parse_failures,
        }
        for name, g in groups.items()
    ]
    return sorted(rows, key=lambda row: str(row[label]))


def capability_scores(
    links: Iterable[tuple[float, Sequence[str]]], capabilities: Sequence[str]
) -> dict[str, dict[str, float | int | None]]:
    """SpaCE-10 Sec. E: Score(C_i) = mean of Score(q) over questions linked to C_i.

    A question linked to several capabilities counts, unweighted, for each; a capability with no question
    is ``None`` (N/A).

    Args:
        links: (score, linked capabilities) per scored question.
        capabilities: all capability names, in report order.
    """
    pooled: dict[str, list[float]] = defaultdict(list)
    for score, linked in links:
        for capability in linked:
            pooled[capability].append(score)
    return {c: {"n": len(pooled[c]), "score": mean(pooled[c])} for c in capabilities}


# --------------------------------------------------------------------------------------------------------
# Weight trees


@dataclass(frozen=True)
class WeightNode:
    """A capability node: its weight within its parent, and its children (none for a leaf)."""

    name: str
    weight: float = 1.0
    children: tuple[WeightNode, ...] = ()

    def leaves(self, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
        """Paths (below the root) of all leaves."""
        if not self.children:
            return [prefix]
        return [p for child in self.children for p in child.leaves((*prefix, child.name))]


class WeightTreeError(ValueError):
    """A weight file that does not describe a tree of named, non-negatively weighted nodes."""


def weight_tree_from_dict(data: Mapping[str, Any], where: str = "root") -> WeightNode:
    """Build a :class:`WeightNode` tree, checking names, weights and children."""
    if not isinstance(data, Mapping) or not isinstance(data.get("name"), str):
        raise WeightTreeError(f"{where}: every node needs a string 'name' (got {data!r:.80})")
    weight = data.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or weight < 0:
        raise WeightTreeError(f"{where}/{data['name']}: 'weight' must be a number >= 0 (got {weight!r})")
    children = data.get("children", [])
    if not isinstance(children, list):
        raise WeightTreeError(f"{where}/{data['name']}: 'children' must be a list")
    path = f"{where}/{data['name']}" if where != "root" else data["name"]
    nodes = tuple(weight_tree_from_dict(child, path) for child in children)
    names = [n.name for n in nodes]
    if len(set(names)) != len(names):
        raise WeightTreeError(
            f"{path}: duplicate child names {sorted({n for n in names if names.count(n) > 1})}"
        )
    return WeightNode(data["name"], float(weight), nodes)


def load_weight_tree(path: str | Path) -> WeightNode:
    """Read a weight tree from ``.json`` or ``.yaml``/``.yml``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"weight tree file {path} does not exist; pass --weights with a JSON/YAML tree"
        )
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml  # only needed for YAML weight files

        data = yaml.safe_load(text)
    else:
        data = json.loads(text)
    try:
        return weight_tree_from_dict(data)
    except WeightTreeError as error:
        raise WeightTreeError(f"{path}: {error}") from None


def aggregate_tree(
    node: WeightNode,
    leaf_score: Callable[[tuple[str, ...]], float | None],
    *,
    missing: str = "exclude",
    path: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Score a tree bottom-up: a parent is the weighted mean of its children's scores.

    Args:
        leaf_score: score of the leaf at a path below the root (``None`` when it has no data).
        missing: ``"exclude"`` drops children without data and renormalises the remaining weights (a node
            with no data is ``None``); ``"zero"`` counts them as 0 (lmms-eval's behaviour).

    Returns:
        ``{"name", "weight", "score", "children": [...]}`` for every node.
    """
    if missing not in ("exclude", "zero"):
        raise ValueError(f"missing must be 'exclude' or 'zero', got {missing!r}")
    if not node.children:
        score = leaf_score(path)
        if score is None and missing == "zero":
            score = 0.0
        return {"name": node.name, "weight": node.weight, "score": score, "children": []}
    children = [aggregate_tree(c, leaf_score, missing=missing, path=(*path, c.name)) for c in node.children]
    scored = [(c["weight"], c["score"]) for c in children if c["score"] is not None]
    total = sum(w for w, _ in scored)
    score = (
        sum(w * s for w, s in scored) / total
        if scored and total > 0
        else (0.0 if missing == "zero" else None)
    )
    return {"name": node.name, "weight": node.weight, "score": score, "children": children}


def flatten_tree(result: Mapping[str, Any], depth: int = 0, path: str = "") -> list[dict[str, Any]]:
    """Rows ``{path, depth, weight, score}`` (score in percent) of an :func:`aggregate_tree` result."""
    here = f"{path}/{result['name']}" if path else result["name"]
    rows = [{"node": here, "depth": depth, "weight": result["weight"], "score": percent(result["score"])}]
    for child in result["children"]:
        rows += flatten_tree(child, depth + 1, here)
    return rows
