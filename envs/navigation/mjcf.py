"""Scene dict -> MJCF text. Deterministic: the same dict always gives the same string.

Structure (floors, walls, ceilings, decor) sits in the world body; each furniture piece and each target
object is its own static body (``furniture:<id>``, ``object:<id>``), which is how the per-pixel object-id
mask maps geoms to scene entities. Nothing collides or moves: the agent is a camera whose collisions are
resolved in 2-D (:mod:`envs.navigation.geometry`). Shadows, reflections and multisampling are off so
rendering stays fast on a CPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from xml.sax.saxutils import quoteattr

from envs.navigation.assets import Part, furniture_parts, object_parts
from envs.navigation.scene import DOOR_HEIGHT, room_walls, validate_scene

AGENT_CAMERA = "agent"
_CEILING_T = 0.05
_FLOOR_T = 0.05


def _f(values: Sequence[float] | float) -> str:
    if isinstance(values, (int, float)):
        values = [values]
    return " ".join(f"{float(v):.4g}" if abs(float(v)) >= 1e-4 else "0" for v in values)


def _attrs(**kw: Any) -> str:
    return " ".join(f"{k}={quoteattr(str(v))}" for k, v in kw.items() if v is not None)


def _geom(part: Part, name: str, scale: float = 1.0) -> str:
    size = [s * scale for s in part.size]
    kw: dict[str, Any] = {"name": name, "type": part.type, "size": _f(size)}
    if part.fromto is not None:
        kw["fromto"] = _f([v * scale for v in part.fromto])
    else:
        kw["pos"] = _f([v * scale for v in part.pos])
    if part.euler is not None:
        kw["euler"] = _f(part.euler)
    if part.emission > 0:
        kw["material"] = name  # one material per emissive part, defined in the assets
    elif part.material is not None:
        kw["material"] = part.material
    else:
        kw["rgba"] = _f([*part.rgb, 1.0])  # type: ignore[misc]
    return f"<geom {_attrs(**kw)}/>"


def _emissive_materials(parts: list[Part], prefix: str) -> list[str]:
    return [
        f"<material {_attrs(name=f'{prefix}{k}', rgba=_f([*p.rgb, 1]), emission=_f(p.emission))}/>"  # type: ignore[misc]
        for k, p in enumerate(parts)
        if p.emission > 0
    ]


# ------------------------------------------------------------------------------------------ assets


def _floor_texture(i: int, floor: dict[str, Any]) -> tuple[str, str]:
    """Texture and material of room i's floor; texrepeat is per metre (texuniform)."""
    style, rgb1, rgb2 = floor["style"], floor["rgb1"], floor["rgb2"]
    edge = _f([c * 0.7 for c in rgb2])
    if style in ("wood", "tiles"):  # wood: checker cells stretched into 1 m x 0.2 m planks
        tex = _attrs(
            name=f"floor{i}",
            type="2d",
            builtin="checker",
            rgb1=_f(rgb1),
            rgb2=_f(rgb2),
            mark="edge",
            markrgb=edge,
            width=128,
            height=128,
        )
        repeat = "0.5 2.5" if style == "wood" else "1 1"
    else:  # carpet / concrete: speckled flat colour
        tex = _attrs(
            name=f"floor{i}",
            type="2d",
            builtin="flat",
            rgb1=_f(rgb1),
            rgb2=_f(rgb2),
            mark="random",
            markrgb=_f(rgb2),
            random=0.25 if style == "carpet" else 0.08,
            width=128,
            height=128,
        )
        repeat = "3 3"
    mat = _attrs(
        name=f"floor{i}",
        texture=f"floor{i}",
        texrepeat=repeat,
        texuniform="true",
        reflectance=0,
        shininess=0.1 if style != "tiles" else 0.4,
        specular=0.1,
    )
    return f"<texture {tex}/>", f"<material {mat}/>"


def _assets(scene: dict[str, Any]) -> list[str]:
    out = [
        '<texture name="speckle" type="2d" builtin="flat" rgb1="1 1 1" rgb2="1 1 1" mark="random" '
        'markrgb="0.86 0.86 0.86" random="0.12" width="64" height="64"/>',
        '<texture name="grain" type="2d" builtin="gradient" rgb1="1 1 1" rgb2="0.82 0.82 0.82" '
        'width="64" height="64"/>',
    ]
    for i, room in enumerate(scene["rooms"]):
        out += _floor_texture(i, room["floor"])
        out.append(
            f"<material {_attrs(name=f'wall{i}', rgba=_f([*room['wall_rgb'], 1]), specular=0.05, shininess=0)}/>"
        )
    out.append(
        '<material name="ceiling" rgba="0.95 0.95 0.94 1" emission="0.45" specular="0" shininess="0"/>'
    )
    out.append('<material name="lamp" rgba="1 0.98 0.9 1" emission="0.9"/>')
    out.append('<material name="sky" rgba="0.62 0.80 0.95 1" emission="0.65"/>')
    for item in scene["furniture"]:
        out += _furniture_materials(item)
    for obj in scene["objects"]:
        out += _emissive_materials(object_parts(obj["category"], obj["colour"]), f"{obj['id']}:")
    return out


def _furniture_materials(item: dict[str, Any]) -> list[str]:
    name = f"mat:{item['id']}"
    texture = {"wood": "grain", "fabric": "speckle"}.get(item["material"])
    spec = {"white": 0.3, "black": 0.3, "grey": 0.4}.get(item["material"], 0.1)
    return [
        f"<material {_attrs(name=name, texture=texture, rgba=_f([*item['rgb'], 1]), specular=spec, shininess=0.2, reflectance=0)}/>",
        f"<material {_attrs(name=f'{name}_accent', texture='speckle', rgba=_f([*item['accent_rgb'], 1]), specular=0.05)}/>",
    ]


# --------------------------------------------------------------------------------------- structure


def _room_structure(scene: dict[str, Any], i: int) -> list[str]:
    room = scene["rooms"][i]
    x0, y0, x1, y1 = room["bounds"]
    cx, cy, hx, hy = (x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0) / 2, (y1 - y0) / 2
    h = scene["wall_height"]
    out = [
        f"<geom {_attrs(name=f'floor{i}', type='box', size=_f([hx, hy, _FLOOR_T / 2]), pos=_f([cx, cy, -_FLOOR_T / 2]), material=f'floor{i}')}/>",
        f"<geom {_attrs(name=f'ceiling{i}', group=2, type='box', size=_f([hx, hy, _CEILING_T / 2]), pos=_f([cx, cy, h + _CEILING_T / 2]), material='ceiling')}/>",
        f"<geom {_attrs(name=f'ceiling_lamp{i}', group=2, type='cylinder', size=_f([0.22, 0.02]), pos=_f([cx, cy, h - 0.02]), material='lamp')}/>",
    ]
    for k, slab in enumerate(room_walls(scene, i)):
        out += _wall_geoms(slab, f"wall{i}_{k}", f"wall{i}", h)
    return out


def _wall_geoms(slab: dict[str, Any], name: str, material: str, height: float) -> list[str]:
    r = slab["rect"]
    z0 = DOOR_HEIGHT if slab["door_above"] else 0.0
    half = [(r[2] - r[0]) / 2, (r[3] - r[1]) / 2, (height - z0) / 2]
    pos = [(r[0] + r[2]) / 2, (r[1] + r[3]) / 2, (height + z0) / 2]
    out = [f"<geom {_attrs(name=name, type='box', size=_f(half), pos=_f(pos), material=material)}/>"]
    if not slab["door_above"]:  # a skirting board along the foot of the wall
        out.append(
            f"<geom {_attrs(name=name + '_skirt', type='box', size=_f(_skirt_half(slab)), pos=_f(_skirt_pos(slab)), rgba='0.9 0.9 0.88 1')}/>"
        )
    return out


def _skirt_half(slab: dict[str, Any]) -> list[float]:
    r = slab["rect"]
    along_x = slab["side"] in ("north", "south")
    return [(r[2] - r[0]) / 2, 0.012, 0.045] if along_x else [0.012, (r[3] - r[1]) / 2, 0.045]


def _skirt_pos(slab: dict[str, Any]) -> list[float]:
    r = slab["rect"]
    face = {
        "south": (0, r[3] + 0.012),
        "north": (0, r[1] - 0.012),
        "west": (r[2] + 0.012, 0),
        "east": (r[0] - 0.012, 0),
    }
    fx, fy = face[slab["side"]]
    if slab["side"] in ("north", "south"):
        return [(r[0] + r[2]) / 2, fy, 0.045]
    return [fx, (r[1] + r[3]) / 2, 0.045]


def _decor_geoms(scene: dict[str, Any]) -> list[str]:
    out = []
    for k, d in enumerate(scene["decor"]):
        if d["kind"] == "rug":
            r = d["rect"]
            out.append(
                f"<geom {_attrs(name=f'rug{k}', type='box', size=_f([(r[2] - r[0]) / 2, (r[3] - r[1]) / 2, 0.004]), pos=_f([(r[0] + r[2]) / 2, (r[1] + r[3]) / 2, 0.004]), rgba=_f([*d['rgb'], 1]))}/>"
            )
        else:
            out += _wall_panel(d, k)
    return out


def _wall_panel(d: dict[str, Any], k: int) -> list[str]:
    """A painting (frame, canvas, a patch of a second colour) or a window (frame and bright sky)."""
    inward = {"south": (0, 1), "north": (0, -1), "west": (1, 0), "east": (-1, 0)}[d["side"]]
    along_x = d["side"] in ("north", "south")

    def panel(name: str, width: float, height: float, depth: float, offset: float, **kw: Any) -> str:
        centre = (
            [d["center"], d["wall"] + inward[1] * offset]
            if along_x
            else [d["wall"] + inward[0] * offset, d["center"]]
        )
        half = [width / 2, depth / 2, height / 2] if along_x else [depth / 2, width / 2, height / 2]
        return f"<geom {_attrs(name=name, type='box', size=_f(half), pos=_f([*centre, d['z']]), **kw)}/>"

    w, h = d["width"], d["height"]
    if d["kind"] == "window":
        return [
            panel(f"window{k}_frame", w + 0.1, h + 0.1, 0.03, 0.015, rgba="0.95 0.95 0.95 1"),
            panel(f"window{k}_sky", w, h, 0.01, 0.032, material="sky"),
            panel(f"window{k}_bar", 0.04, h, 0.01, 0.04, rgba="0.95 0.95 0.95 1"),
        ]
    return [
        panel(f"painting{k}_frame", w + 0.06, h + 0.06, 0.025, 0.0125, rgba="0.15 0.12 0.1 1"),
        panel(f"painting{k}_canvas", w, h, 0.01, 0.03, rgba=_f([*d["rgb"], 1])),
        panel(f"painting{k}_patch", w * 0.45, h * 0.5, 0.01, 0.036, rgba=_f([*d["rgb2"], 1])),
    ]


# ------------------------------------------------------------------------------------------ bodies


def _furniture_body(item: dict[str, Any]) -> str:
    parts = furniture_parts(item["kind"], item["size"], f"mat:{item['id']}")
    geoms = "".join(_geom(p, f"{item['id']}:{k}") for k, p in enumerate(parts))
    attrs = _attrs(
        name="furniture:" + item["id"], pos=_f([*item["center"], 0.0]), euler=_f([0, 0, item["yaw"]])
    )
    return f"<body {attrs}>{geoms}</body>"


def _object_body(obj: dict[str, Any]) -> str:
    parts = object_parts(obj["category"], obj["colour"])
    geoms = "".join(_geom(p, f"{obj['id']}:{k}", obj["scale"]) for k, p in enumerate(parts))
    attrs = _attrs(name="object:" + obj["id"], pos=_f(obj["pos"]), euler=_f([0, 0, obj["yaw"]]))
    return f"<body {attrs}>{geoms}</body>"


def _lights(scene: dict[str, Any]) -> list[str]:
    out = []
    for i, room in enumerate(scene["rooms"]):
        x0, y0, x1, y1 = room["bounds"]
        diffuse = [c * room["light"]["intensity"] for c in room["light"]["rgb"]]
        out.append(
            f"<light {_attrs(name=f'light{i}', pos=_f([(x0 + x1) / 2, (y0 + y1) / 2, scene['wall_height'] - 0.1]), dir=_f(room['light'].get('dir', [0, 0, -1])), diffuse=_f(diffuse), specular='0.05 0.05 0.05', cutoff=85, exponent=1, castshadow='false', attenuation='1 0.05 0.02')}/>"
        )
    return out


def scene_to_mjcf(scene: dict[str, Any]) -> str:
    """The MJCF of a scene dict (validated first; a malformed dict raises a ``SceneError``)."""
    validate_scene(scene)
    ambient, head = scene["lighting"]["ambient"], scene["lighting"]["headlight"]
    structure = [g for i in range(len(scene["rooms"])) for g in _room_structure(scene, i)]
    bodies = [_furniture_body(f) for f in scene["furniture"]] + [_object_body(o) for o in scene["objects"]]
    return "\n".join(
        [
            '<mujoco model="spatialarena_navigation">',
            '<compiler angle="degree" autolimits="true"/>',
            '<option timestep="0.01" gravity="0 0 0"/>',
            "<visual>",
            '<global offwidth="640" offheight="640" fovy="100"/>',
            '<quality shadowsize="0" offsamples="0" numslices="14" numstacks="8" numquads="1"/>',
            f'<headlight ambient="{_f([ambient] * 3)}" diffuse="{_f([head] * 3)}" specular="0 0 0"/>',
            '<map znear="0.02" zfar="60"/>',
            "</visual>",
            '<default><geom contype="0" conaffinity="0"/></default>',
            "<asset>",
            *_assets(scene),
            "</asset>",
            "<worldbody>",
            *_lights(scene),
            f'<camera name="{AGENT_CAMERA}" pos="0 0 1.5" fovy="100"/>',
            *structure,
            *_decor_geoms(scene),
            *bodies,
            "</worldbody>",
            "</mujoco>",
        ]
    )


def entity_labels(scene: dict[str, Any]) -> list[str]:
    """Labels of the object-id mask: 0 is everything that is not an entity, then objects, then furniture."""
    return ["none", *[o["id"] for o in scene["objects"]], *[f["id"] for f in scene["furniture"]]]
