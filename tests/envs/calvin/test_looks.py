"""The built-in play-table's generated looks: deterministic textures and meshes, and a static image whose
regions have CALVIN's colours (oak table, light checkerboard floor, white arm)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from envs.calvin import constants as C
from envs.calvin import looks
from envs.calvin.assets import generated_assets

pytest.importorskip("pybullet")


def test_textures_are_deterministic_seamless_and_oak_coloured():
    first = looks.wood_texture.__wrapped__()  # bypass the per-process cache: generate twice
    assert np.array_equal(first, looks.wood_texture.__wrapped__())
    assert not np.array_equal(first, looks.wood_texture.__wrapped__(seed=1))
    assert np.abs(first.reshape(-1, 3).mean(0) - np.array(looks.WOOD_MEAN)).max() < 3
    # grain along the rows: neighbours along a row are far more alike than neighbours down a column
    red = first[..., 0].astype(float)
    assert np.abs(np.diff(red, axis=1)).mean() < 0.5 * np.abs(np.diff(red, axis=0)).mean()
    # seamless: the wrap-around step is no larger than the steps inside the tile
    assert np.abs(red[:, 0] - red[:, -1]).mean() < 2 * np.abs(np.diff(red, axis=1)).mean() + 1
    checker = looks.checker_texture()
    assert sorted(np.unique(checker).tolist()) == sorted(looks.CHECKER_LEVELS)


def test_png_bytes_round_trip_and_are_stable():
    rgb = looks.wood_texture()
    data = looks.png_bytes(rgb)
    assert data == looks.png_bytes(rgb.copy())
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(data)).convert("RGB")), rgb)
    with pytest.raises(ValueError, match="uint8"):
        looks.png_bytes(rgb.astype(np.float32))


def test_box_mesh_faces_point_outwards_with_metric_uvs():
    mesh = looks.ObjMesh()
    looks.add_box(mesh, np.array([0.4, 0.2, 0.1]), np.zeros(3), np.eye(3), 1.0)
    assert len(mesh.faces) == 12 and len(mesh.normals) == 6
    verts = np.array(mesh.vertices)
    for k, (a, b, c) in enumerate(mesh.faces):
        p = verts[[a[0] - 1, b[0] - 1, c[0] - 1]]
        n = np.cross(p[1] - p[0], p[2] - p[0])
        assert np.dot(n, p.mean(0)) > 0, f"face {k} winds inwards"
        assert np.allclose(n / np.linalg.norm(n), mesh.normals[a[2] - 1])
    uvs = np.array(mesh.uvs).reshape(6, 4, 2)  # per face: metres along (u) and across (v) the grain
    spans = sorted((round(float(np.ptp(f[:, 0])), 6), round(float(np.ptp(f[:, 1])), 6)) for f in uvs)
    # u: the longer side
    assert spans == [
        (0.2, 0.1),
        (0.2, 0.1),
        (0.4, 0.1),
        (0.4, 0.1),
        (0.4, 0.2),
        (0.4, 0.2),
    ]


def test_dressed_assets_are_content_addressed(tmp_path):
    import pybullet_data

    first = generated_assets(pybullet_data.getDataPath(), cache_dir=tmp_path)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert generated_assets(pybullet_data.getDataPath(), cache_dir=tmp_path) == first
    assert sorted(p.name for p in tmp_path.iterdir()) == files  # nothing new the second time
    table = Path(first.table).read_text()
    meshes = [line.split('"')[1] for line in table.splitlines() if "<mesh" in line]
    assert meshes and all((tmp_path / m).is_file() for m in meshes)
    assert any(name.startswith("wood-") and name.endswith(".png") for name in files)
    assert any(name.startswith("checker-") for name in files)


@pytest.fixture(scope="module")
def static_view():
    from envs.calvin.env import PlayTableEnv
    from envs.calvin.sequences import get_sequences, initial_env_state

    env = PlayTableEnv(cameras=("static",))
    robot_obs, scene_obs = initial_env_state(get_sequences(1)[0][0])
    obs, _ = env.reset(options={"robot_obs": robot_obs, "scene_obs": scene_obs})
    yield env, np.asarray(obs["rgb_static"], dtype=float)
    env.close()


def _patch(env, image: np.ndarray, point: tuple[float, float, float], half: int = 2) -> np.ndarray:
    """Mean colour of a small square around a world point's pixel in the static image."""
    pixels, _ = env.sim.cameras.project("static", np.array([point]))
    c, r = (int(round(v)) for v in pixels[0])
    assert half <= r < C.STATIC_CAMERA.height - half and half <= c < C.STATIC_CAMERA.width - half, point
    return image[r - half : r + half + 1, c - half : c + half + 1].reshape(-1, 3).mean(0)


def test_static_image_regions_have_calvins_colours(static_view):
    env, image = static_view
    top = _patch(env, image, (0.30, -0.10, C.WORK_SURFACE_Z))  # table top, clear of the blocks
    # oak, not tan or grey
    assert top[0] > top[1] > top[2] and 100 < top[0] < 210 and top[2] < 0.56 * top[0], top
    cabinet = _patch(env, image, (0.35, 0.17, 0.60))  # cabinet wall right of the switch
    assert cabinet[0] > cabinet[1] > cabinet[2], cabinet
    # two floor squares left of the table, either side of the y = 0 square boundary
    near, far = (_patch(env, image, (-0.7, y, 0.0), half=1) for y in (-0.1, 0.1))
    assert np.ptp(near) < 3 and np.ptp(far) < 3, (near, far)  # grey
    assert abs(near[0] - far[0]) > 15 and min(near[0], far[0]) > 140, (near, far)  # a light checkerboard
