"""The named things of a home: every object and piece of furniture with its entity-mask label and the name
questions and instructions use for it ("red mug", "sofa"), shared by the question generator and the
simulator-truth perception tools."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envs.navigation.catalog import CATEGORIES
from envs.navigation.world import World

_IRREGULAR_PLURALS = {"shelf": "shelves", "knife": "knives", "box": "boxes", "bench": "benches"}
# Never named or counted: every room also has a ceiling lamp (structure, not an entity of the mask), so
# "the white lamp" or "how many lamps" could mean it.
UNNAMEABLE_NOUNS = frozenset({"lamp"})


@dataclass(frozen=True)
class Entity:
    """A named thing of a home: ``label`` in the entity mask, ``noun`` its category, ``name`` how questions say it."""

    label: int
    id: str
    noun: str
    name: str
    kind: str  # "object" or "furniture"


def home_entities(scene: dict[str, Any], world: World) -> list[Entity]:
    """Every object and piece of furniture of a home, in mask-label order."""
    objects = {o["id"]: o for o in scene["objects"]}
    out = []
    for label, entity_id in enumerate(world.labels[1:], start=1):
        if entity_id in objects:
            noun = CATEGORIES[objects[entity_id]["category"]].noun
            out.append(Entity(label, entity_id, noun, f"{objects[entity_id]['colour']} {noun}", "object"))
        else:
            noun = next(f["kind"] for f in scene["furniture"] if f["id"] == entity_id).replace("_", " ")
            out.append(Entity(label, entity_id, noun, noun, "furniture"))
    return out


def object_name(scene: dict[str, Any], entity_id: str) -> str:
    """The name of object ``entity_id`` of ``scene`` as questions say it (colour and category noun)."""
    obj = next(o for o in scene["objects"] if o["id"] == entity_id)
    return f"{obj['colour']} {CATEGORIES[obj['category']].noun}"


def plural(noun: str) -> str:
    """English plural of a category noun ("shelf" -> "shelves", "teddy bear" -> "teddy bears")."""
    head, _, last = noun.rpartition(" ")
    word = _IRREGULAR_PLURALS.get(last, last + ("es" if last.endswith(("s", "x", "ch", "sh")) else "s"))
    return f"{head} {word}".strip()
