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


def tiny_sentence_encoder(folder, pooling="mean_tokens", layers=1, seed=0):
    """A tiny BERT (hidden 32) saved as a sentence-transformers checkpoint folder: the model, a WordPiece
    tokenizer over the words of CALVIN's sentences (plus single letters, so any word splits into known
    pieces), ``modules.json`` (Transformer, Pooling) and ``1_Pooling/config.json`` with ``pooling``'s mode
    switched on. Returns ``folder``."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    from envs.calvin.instructions import EVAL_INSTRUCTIONS, train_instructions

    sentences = [*EVAL_INSTRUCTIONS.values(), *(s for group in train_instructions().values() for s in group)]
    words = sorted({w for s in sentences for w in s.lower().replace(",", " ").split()})
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *letters, *("##" + c for c in letters), *words]
    vocab = {t: i for i, t in enumerate(dict.fromkeys(tokens))}
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(folder)
    BertTokenizer(vocab=vocab).save_pretrained(folder)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    (folder / "modules.json").write_text(json.dumps(modules))
    modes = ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens")
    pool = {"word_embedding_dimension": 32, **{f"pooling_mode_{m}": m == pooling for m in modes}}
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pool))
    (folder / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": 48, "do_lower_case": False})
    )
    return folder
