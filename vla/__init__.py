"""VLM4VLA-style action-head models: VLM backbone + learnable action tokens + MLP action head.

- :mod:`vla.backbones`: transformers VLMs as backbones, one small class per architecture (registry).
- :mod:`vla.vision_backbones`: EfficientNet-Lite0 (pretrained, from a registry package) as a CPU backbone.
- :mod:`vla.head`: the published FCDecoder head and its loss.
- :mod:`vla.normalization`: action normalisation with the training data's statistics.
- :mod:`vla.model`: ``VLAModel`` (build, forward, predict, ``save_pretrained`` / ``from_pretrained``).
- :mod:`vla.data`: CALVIN, LIBERO HDF5 and LeRobotDataset v3 readers and writers.
- :mod:`vla.demos`: ``python -m vla.demos`` (``spatial-arena demos``): scripted-expert demonstrations,
  ``--env calvin`` (the play-table, CALVIN layout) or ``--env libero`` (:mod:`vla.libero_demos`).
- :mod:`vla.train`: ``python -m vla.train`` (accelerate; CPU, one GPU, many GPUs/nodes).
- :mod:`vla.policy`: the closed-loop policy ``vla``, registered through the ``spatial_arena.policies`` entry point.

Submodules are imported on use, so ``import vla`` stays cheap (no torch).
"""
