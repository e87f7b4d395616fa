"""Small demonstration files in the real CALVIN and LIBERO formats, written with numpy / h5py directly
(not through the project's writer), so the readers are tested against the formats themselves."""

import json

import numpy as np


def calvin_frame(rng, gripper):
    arm = rng.uniform(-1, 1, 6)
    return {
        "rgb_static": rng.integers(0, 256, (200, 200, 3), dtype=np.uint8),
        "rgb_gripper": rng.integers(0, 256, (84, 84, 3), dtype=np.uint8),
        "rel_actions": np.concatenate([arm, [gripper]]),
        "actions": np.concatenate([rng.uniform(-1, 1, 6), [gripper]]),
        "robot_obs": rng.normal(size=15),
        "scene_obs": rng.normal(size=24),
        "depth_static": rng.uniform(0, 2, (200, 200)).astype(np.float32),
        "depth_gripper": rng.uniform(0, 2, (84, 84)).astype(np.float32),
    }


def write_calvin_split(root, episodes, windows, seed=0, first_index=0):
    """CALVIN split at ``root``: ``episodes`` = [(first, last)] frame ranges (inclusive, global numbers);
    ``windows`` = [(first, last, task, instruction)] language annotations. Returns {frame: rel_actions}."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    actions = {}
    for first, last in episodes:
        for frame in range(first, last + 1):
            data = calvin_frame(rng, 1.0 if (frame - first) % 6 < 3 else -1.0)
            np.savez_compressed(root / f"episode_{frame:07d}.npz", **data)
            actions[frame] = data["rel_actions"]
    np.save(root / "ep_start_end_ids.npy", np.asarray(episodes))
    (root / "lang_annotations").mkdir(exist_ok=True)
    ann = {
        "language": {
            "ann": [w[3] for w in windows],
            "task": [w[2] for w in windows],
            "emb": np.zeros((len(windows), 1, 384), np.float32),
        },
        "info": {"episodes": [], "indx": [(w[0], w[1]) for w in windows]},
    }
    np.save(root / "lang_annotations" / "auto_lang_ann.npy", ann, allow_pickle=True)
    return actions


def write_libero_file(path, instruction, demo_lengths, seed=0, size=32):
    """A LIBERO task file with ``len(demo_lengths)`` demos; frame t of demo i has its upper-left pixel
    set to (i, t, 7) *in the stored (bottom-row-first) layout*, so orientation can be checked."""
    import h5py

    rng = np.random.default_rng(seed)
    actions = {}
    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        data.attrs["problem_info"] = json.dumps(
            {
                "problem_name": "libero_tabletop_manipulation",
                "domain_name": "robosuite",
                "language_instruction": instruction,
            }
        )
        data.attrs["env_args"] = json.dumps({"type": 1, "env_name": "Libero_Tabletop_Manipulation"})
        for i, length in enumerate(demo_lengths):
            demo = data.create_group(f"demo_{i}")
            acts = np.concatenate(
                [rng.uniform(-1, 1, (length, 6)), np.where(rng.random((length, 1)) < 0.5, -1.0, 1.0)], 1
            )
            demo.create_dataset("actions", data=acts)
            for cam in ("agentview_rgb", "eye_in_hand_rgb"):
                frames = rng.integers(0, 256, (length, size, size, 3), dtype=np.uint8)
                frames[:, 0, 0] = [(i, t, 7) for t in range(length)]
                demo.create_dataset(f"obs/{cam}", data=frames)
            demo.create_dataset("robot_states", data=rng.normal(size=(length, 9)))
            actions[f"demo_{i}"] = acts
    return actions
