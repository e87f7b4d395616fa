"""Evidence from finished runs: read run folders into paired units (:mod:`.runs`), compare two runs
(``spatial-arena compare``, :mod:`.compare`) and size the next run (``spatial-arena power``, :mod:`.power`).

The statistics themselves are pure functions in :mod:`benchmarks.stats`; this room reads the families'
records through their own readers, so it sits above them."""
