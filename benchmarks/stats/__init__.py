"""Statistics of results: intervals on every number (:mod:`.intervals`), paired comparisons of two runs
(:mod:`.paired`, ``spatial-arena compare``) and sample sizes (:mod:`.power`, ``spatial-arena power``).

Pure functions of numbers and run folders; no simulator, no model. The methods and their formulas are in
``docs/guide/statistics.md``."""
