"""Instructions for the five EmbodiedBench subsets, written from the scene's own facts.

Each function returns ``None`` when the target cannot be named unambiguously in that style (two objects
share the colour and shape, a confusable category is present...), so the episode generator picks
another target instead of writing an instruction with two right answers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from envs.navigation.catalog import CATEGORIES
from envs.navigation.scene import furniture_rect, room_of

SUBSETS: tuple[str, ...] = (
    "base",
    "common_sense",
    "complex_instruction",
    "visual_appearance",
    "long_horizon",
)

# Categories whose common-sense descriptions could fit each other: never a common-sense target together.
_CONFUSABLE: tuple[frozenset[str], ...] = (
    frozenset({"apple", "banana"}),
    frozenset({"lamp", "candle"}),
    frozenset({"mug", "bottle"}),
    frozenset({"bowl", "pot"}),
)

_OPENERS = (
    "I just got home after a really long day at work.",
    "We are expecting guests in about an hour.",
    "It is a bit of a mess in here today, sorry about that.",
    "I have been looking for my glasses all morning.",
    "The weather outside is terrible, so we are staying in.",
    "My sister is coming over later this afternoon.",
)
_FURNITURE_NOUN = {"tv_stand": "TV stand"}


def furniture_noun(kind: str) -> str:
    return _FURNITURE_NOUN.get(kind, kind.replace("_", " "))


def _noun(obj: dict[str, Any]) -> str:
    return CATEGORIES[obj["category"]].noun


def size_word(obj: dict[str, Any]) -> str:
    """ "small" or "large" from the object's largest dimension; "" in between."""
    cat = CATEGORIES[obj["category"]]
    extent = max(2 * cat.footprint, cat.height) * obj["scale"]
    return "small" if extent < 0.28 else "large" if extent > 0.42 else ""


def location_phrase(scene: dict[str, Any], obj: dict[str, Any]) -> str:
    """Where the object is: "on the table", or "on the floor near the sofa" (nearest furniture)."""
    if obj["support"] != "floor":
        kind = next(f["kind"] for f in scene["furniture"] if f["id"] == obj["support"])
        return f"on the {furniture_noun(kind)}"
    same_room = [f for f in scene["furniture"] if f["room"] == obj["room"]]
    if not same_room:
        return "on the floor"
    nearest = min(same_room, key=lambda f: _rect_distance(furniture_rect(f), obj["pos"]))
    return f"on the floor near the {furniture_noun(nearest['kind'])}"


def _rect_distance(rect: list[float], p: list[float]) -> float:
    dx = max(rect[0] - p[0], 0.0, p[0] - rect[2])
    dy = max(rect[1] - p[1], 0.0, p[1] - rect[3])
    return math.hypot(dx, dy)


def base_instruction(scene: dict[str, Any], target: dict[str, Any], rng: np.random.Generator) -> str | None:
    """EB's base style: name the object directly."""
    if _count(scene, lambda o: o["category"] == target["category"]) != 1:
        return None
    templates = ("navigate to the {t} in the room", "Navigate to the {t}.", "Go to the {t}.")
    return str(rng.choice(templates)).format(t=_noun(target))


def common_sense_instruction(
    scene: dict[str, Any], target: dict[str, Any], rng: np.random.Generator
) -> str | None:
    """Describe what the object is for, never what it is called."""
    present = {o["category"] for o in scene["objects"]}
    if any(target["category"] in group and len(group & present) > 1 for group in _CONFUSABLE):
        return None
    use = str(rng.choice(CATEGORIES[target["category"]].uses))
    templates = ("Navigate to {u}.", "Go to {u}.", "I need {u}; please go to it.")
    return str(rng.choice(templates)).format(u=use)


def complex_instruction(
    scene: dict[str, Any], target: dict[str, Any], rng: np.random.Generator
) -> str | None:
    """A longer request with context and distractor clauses that mention other objects in the home."""
    others = [o for o in scene["objects"] if o["id"] != target["id"]]
    if len(others) < 2 or _count(scene, lambda o: o["category"] == target["category"]) != 1:
        return None
    d1, d2 = (others[int(i)] for i in rng.choice(len(others), 2, replace=False))
    t, loc = _noun(target), location_phrase(scene, target)
    use = str(rng.choice(CATEGORIES[target["category"]].uses))
    templates = (
        "{opener} Please ignore the {d1} for now and go to the {t} that is {loc}.",
        "There is a {d1} {dloc} and a {t} {loc}. I only need the {t}, so navigate to it.",
        "Before you do anything about the {d1}, head over to the {t} {loc}, because I need {use}.",
        "{opener} My friend thinks the {d1} matters most, but it is the {t} {loc} I want you to reach.",
        "{opener} Navigate to the {t} {loc}; the {d1} and the {d2} can wait until later.",
    )
    return str(rng.choice(templates)).format(
        opener=str(rng.choice(_OPENERS)),
        d1=_noun(d1),
        d2=_noun(d2),
        t=t,
        loc=loc,
        dloc=location_phrase(scene, d1),
        use=use,
    )


def visual_instruction(scene: dict[str, Any], target: dict[str, Any], rng: np.random.Generator) -> str | None:
    """Name only the appearance: colour and shape, plus size when that is what tells objects apart."""
    shape = CATEGORIES[target["category"]].shape

    def same_look(o: dict[str, Any]) -> bool:
        return o["colour"] == target["colour"] and CATEGORIES[o["category"]].shape == shape

    words = [target["colour"], shape]
    if _count(scene, same_look) > 1:
        size = size_word(target)
        if not size or _count(scene, lambda o: same_look(o) and size_word(o) == size) > 1:
            return None
        words = [size, *words]
    templates = (
        "Navigate to the {d} object.",
        "Go to the {d} object in the room.",
        "Find the {d} object and move close to it.",
    )
    return str(rng.choice(templates)).format(d=" ".join(words))


def long_horizon_instruction(
    scene: dict[str, Any],
    target: dict[str, Any],
    rng: np.random.Generator,
    start_xy: Sequence[float] | np.ndarray | None = None,
) -> str | None:
    """Name the object, and the room it is in when that is not the room the agent starts in."""
    if _count(scene, lambda o: o["category"] == target["category"]) != 1:
        return None
    room = scene["rooms"][target["room"]]["type"]
    elsewhere = start_xy is not None and room_of(scene, start_xy) != target["room"]
    templates: tuple[str, ...]
    if elsewhere:
        templates = (
            "Navigate to the {t} in the {r}.",
            "Go to the {r} and find the {t}.",
            "The {t} is somewhere in the {r}; navigate to it.",
        )
    else:
        templates = ("navigate to the {t} in the room", "Find the {t} in this room and go to it.")
    return str(rng.choice(templates)).format(t=_noun(target), r=room)


def _count(scene: dict[str, Any], predicate: Callable[[dict[str, Any]], bool]) -> int:
    return sum(1 for o in scene["objects"] if predicate(o))


WRITERS = {
    "base": base_instruction,
    "common_sense": common_sense_instruction,
    "complex_instruction": complex_instruction,
    "visual_appearance": visual_instruction,
}
