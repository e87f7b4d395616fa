"""EmbodiedBench-style navigation in procedurally generated MuJoCo homes.

Importing this package is cheap (no MuJoCo): the environment lives in :mod:`envs.navigation.env`, the
scene generator in :mod:`envs.navigation.scene`, episode sets in :mod:`envs.navigation.episodes`; the
shortest-path expert is a policy (:mod:`policies.experts.navigation`) and the episode loop lives with its
benchmark (:mod:`benchmarks.embodied.navigation`).
"""
