"""bench/vla_learning.py's reuse rule for data and runs made earlier."""

from __future__ import annotations

import dataclasses
import json

from bench.vla_learning import same_settings
from vla.demos import DemoConfig


def test_a_field_added_since_the_data_was_made_counts_at_its_default() -> None:
    config = DemoConfig(task="open_drawer", episodes=3, out="/tmp/a")
    saved = json.loads(json.dumps(dataclasses.asdict(config)))
    newest = next(
        f.name for f in reversed(dataclasses.fields(DemoConfig)) if f.default is not dataclasses.MISSING
    )
    del saved[newest]  # as written before that field existed
    assert same_settings(saved, config)
    assert same_settings({**saved, "out": "/elsewhere"}, config, ignore=("out",))
    assert not same_settings({**saved, "out": "/elsewhere"}, config)
    assert not same_settings({**saved, "episodes": 4}, config, ignore=("out",))
    assert not same_settings({**saved, newest: "something else"}, config)
