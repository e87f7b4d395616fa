"""The table frame and how EB-Manipulation's voxel grid maps onto it.

EB discretises ``[-0.3, -0.5, 0.6] -> [0.7, 0.5, 1.6]`` (RLBench's world, metres) into 100 voxels per axis.
We keep the grid's size (a 1 m cube, 1 cm voxels) and its placement relative to the robot and the table:
the grid's X starts at the robot base and its floor lies 0.152 m below the table top, as EB's table top
(z = 0.752) lies above its grid floor (z = 0.6). Objects on the table then get the voxel coordinates EB's
published examples show (X about 30-80, Y 10-90, Z 15-20). Axes keep EB's meaning: +X away from the robot,
+Y to the right in the front camera's image, +Z up.
"""

from __future__ import annotations

import numpy as np

from action_mapping.adapters import EB_MANIP_BOUNDS, EB_MANIP_ROTATION_BIN_DEG, EB_MANIP_VOXELS

TABLE_TOP_Z = 0.8  # robosuite's table height
TABLE_FULL_SIZE = (0.8, 1.2, 0.05)
ROBOT_BASE_X = -0.16 - TABLE_FULL_SIZE[0] / 2  # robosuite's Panda placement at a table's edge
EB_TABLE_ABOVE_GRID_FLOOR = 0.752 - float(EB_MANIP_BOUNDS[0][2])

GRID_SIZE = EB_MANIP_BOUNDS[1] - EB_MANIP_BOUNDS[0]
_GRID_LOW = np.array([ROBOT_BASE_X, -GRID_SIZE[1] / 2, TABLE_TOP_Z - EB_TABLE_ABOVE_GRID_FLOOR])
WORKSPACE_BOUNDS: tuple[np.ndarray, np.ndarray] = (_GRID_LOW, _GRID_LOW + GRID_SIZE)
VOXELS = EB_MANIP_VOXELS
ROTATION_BIN_DEG = EB_MANIP_ROTATION_BIN_DEG
ROTATION_BINS = round(360 / ROTATION_BIN_DEG) + 1  # EB's prompt allows indices 0..120 (120 = +180 deg)
#: The action space's bins (``MultiDiscrete``): voxel x, y, z, roll, pitch, yaw bins, gripper closed/open.
ACTION_NVEC = np.array([VOXELS] * 3 + [ROTATION_BINS] * 3 + [2])

# Where episodes put objects (object centres, world frame): reachable with the gripper pointing down.
PLACEMENT_X = (-0.25, 0.10)
PLACEMENT_Y = (-0.27, 0.27)
# Dragging along the table (wiping) needs the arm well inside its reach: within this of the robot base.
DRAG_REACH = 0.66

# Cameras: EB's front view (from the far side of the table, looking at the robot), overhead, wrist.
FRONT_CAMERA = {"pos": (0.30, 0.0, 1.38), "target": (-0.12, 0.0, 0.80), "fovy": 58.0}
OVERHEAD_CAMERA = {
    "pos": (-0.08, 0.0, 1.95),
    "target": (-0.08, 0.0, 0.80),
    "fovy": 42.0,
    "up": (-1.0, 0.0, 0.0),
}
WRIST_CAMERA = "robot0_eye_in_hand"


def world_to_voxel(point: np.ndarray) -> np.ndarray:
    """Voxel index (ints, clipped to the grid) of a world point, as EB's ``point_to_voxel_index``."""
    lo, hi = WORKSPACE_BOUNDS
    frac = (np.asarray(point, dtype=float) - lo) / (hi - lo)
    return np.clip(np.floor(frac * VOXELS), 0, VOXELS - 1).astype(int)


def voxel_to_world(index: np.ndarray) -> np.ndarray:
    """World position of a voxel's centre."""
    lo, hi = WORKSPACE_BOUNDS
    return lo + (np.asarray(index, dtype=float) + 0.5) / VOXELS * (hi - lo)
