"""Spatial post-training: the SFT/GRPO driver (:mod:`~benchmarks.posttrain.train`, ``python -m
benchmarks.posttrain sft|grpo``) and its GRPO reward functions (:mod:`~benchmarks.posttrain.multihop_rewards`,
MultihopSpatial's recipe; :mod:`~benchmarks.posttrain.spatial_rewards`, every kind of the corpus).

The corpus it trains on comes from :mod:`benchmarks.datagen.corpus`; the rewards reuse the scorers' parsers
and metrics (:mod:`benchmarks.scoring`), which know nothing of training.
"""

from benchmarks.posttrain.train import (
    MODES,
    PostTrainConfig,
    load_split,
    main,
    posttrain,
    read_metrics,
    usage,
)

__all__ = ["MODES", "PostTrainConfig", "load_split", "main", "posttrain", "read_metrics", "usage"]
