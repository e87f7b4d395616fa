"""Question and corpus generators from the simulators: test sets with exact answers and the post-training corpus.

- :mod:`~benchmarks.datagen.nav_questions`: SpatialScore-style questions about views of the navigation homes;
- :mod:`~benchmarks.datagen.generate` and :mod:`~benchmarks.datagen.sample_formats`: fresh test sets in each
  static benchmark's own file layout (``python -m benchmarks.static generate``);
- :mod:`~benchmarks.datagen.corpus`: the spatial SFT/GRPO corpus, disjoint from every test set
  (``python -m benchmarks.datagen.corpus``), with its families (:mod:`~benchmarks.datagen.calvin_corpus`,
  :mod:`~benchmarks.datagen.manip_corpus`, :mod:`~benchmarks.datagen.libero_corpus`, the tabletop kinds they
  share in :mod:`~benchmarks.datagen.table_corpus`) and the answer format they share
  (:mod:`~benchmarks.datagen.corpus_format`).

The static benchmarks (:mod:`benchmarks.static`) read what these write; nothing here imports them.
"""
