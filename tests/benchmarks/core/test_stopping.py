import pytest

from benchmarks.core.stopping import ProtocolPrefix, StoppingConfig
from benchmarks.core.work import WorkUnit


def test_the_prefix_grows_only_through_units_finished_in_protocol_order():
    units = [WorkUnit(i, f"u{i}", i, {}) for i in range(4)]
    prefix = ProtocolPrefix(units, [{"key": "u9"}])  # a unit of a longer run (--resume) is never part of it
    assert not prefix.add({"key": "u2"}) and not prefix.add({"key": "u1"})
    assert prefix.add({"key": "u0"}) and [r["key"] for r in prefix.records] == ["u0", "u1", "u2"]
    assert prefix.add({"key": "u3"}) and len(prefix.records) == 4


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"stop_when_decided": True}, "needs --against"),
        ({"stop_when_decided": True, "against": "1.5"}, "must be in"),
        ({"stop_when_decided": True, "against": "/no/such/run"}, "neither a rate"),
        ({"against": "0.5"}, "only applies with --stop-when-decided"),
    ],
)
def test_unusable_stopping_flags_are_one_line_errors(flags, message):
    with pytest.raises(ValueError, match=message):
        StoppingConfig(**flags).check_stopping()


def test_usable_stopping_flags(tmp_path):
    StoppingConfig(stop_when_decided=True, against="0").check_stopping()
    StoppingConfig(stop_when_decided=True, against=str(tmp_path)).check_stopping()
    StoppingConfig().check_stopping()
