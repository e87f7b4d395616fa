"""Official-compatible behaviour: what each public scorer actually does, quirks included.

Published numbers come from these scorers, so comparing with a paper means scoring the same way. Each
module reproduces one public scorer's parsing and aggregation from its observed behaviour (see the
"official-compatible modes" table of docs/guide/static-benchmarks.md for every difference from the project's own parsers):

- :mod:`.spatialscore`: SpatialScore's ``test_qwen.py`` and ``utils/util.py`` parsers.
- :mod:`.space10`: the SpaCE-10 lmms-eval fork (list-string predictions, judge, "E"/"F" fallback).
- :mod:`.multihop`: MultihopSpatial's repository script and lmms-eval's ``multihopspatial`` task.
- :mod:`.spatialtree`: lmms-eval's ``spatialtreebench`` metrics and name-matched tree aggregation.
- :mod:`.goal_lmms_eval`: lmms-eval's ``spatialtreebench`` goal-image (L4) scorers, ``manipulateeval`` and
  ``agenticnaveval`` (``--scorer lmms-eval`` of goal scoring).

The functions are pure and deterministic: where a public scorer draws a random letter, a generator seeded
from the item id draws it, and the parse is flagged as a random fallback.
"""
