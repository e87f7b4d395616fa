"""With downloads off, loading a hub id that is not cached makes no DNS lookup (HF_HUB_OFFLINE in force)."""

import os
import socket

import pytest

pytest.importorskip("transformers")

from huggingface_hub import constants
from huggingface_hub.utils import _detect_agent, build_hf_headers

from policies.backends.hub import hub_access

MISSING = "spatial-arena-tests/not-a-cached-model"


@pytest.fixture
def lookups(monkeypatch, tmp_path):
    """Every host name looked up (the lookup itself is refused, so nothing leaves the machine), with the
    Hub online as far as the environment goes and no cached agent registry to hide a fetch."""
    seen = []

    def refuse(host, *args, **kwargs):
        seen.append(host)
        raise socket.gaierror(f"test: lookup of {host} refused")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "AGENT_HARNESSES_PATH", str(tmp_path / "agent-harnesses.json"))
    monkeypatch.setattr(_detect_agent, "_registry", None)
    return seen


def test_the_probe_sees_what_local_files_only_alone_does(lookups):
    build_hf_headers()  # what hf_hub_download(..., local_files_only=True) does first
    assert "huggingface.co" in lookups


def test_transformers_backend_makes_no_lookup_with_downloads_off(lookups):
    from policies.backends.transformers_backend import TransformersBackend

    with pytest.raises(OSError, match="not in the local Hugging Face cache"):
        TransformersBackend(MISSING)
    assert lookups == []
    assert constants.HF_HUB_OFFLINE is False and "HF_HUB_OFFLINE" not in os.environ  # restored afterwards


def test_vla_backbone_makes_no_lookup_with_downloads_off(lookups):
    from vla.backbones import load_backbone

    with pytest.raises(OSError, match="downloads are off"):
        load_backbone(MISSING)
    assert lookups == []


def test_offline_periods_nest_and_leave_downloads_alone_when_allowed(lookups, monkeypatch):
    with hub_access(False):
        assert constants.HF_HUB_OFFLINE is True and os.environ["HF_HUB_OFFLINE"] == "1"
        with hub_access(False):
            pass
        assert constants.HF_HUB_OFFLINE is True and os.environ["TRANSFORMERS_OFFLINE"] == "1"
    assert constants.HF_HUB_OFFLINE is False and "TRANSFORMERS_OFFLINE" not in os.environ
    with hub_access(True):
        assert constants.HF_HUB_OFFLINE is False
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the user's own setting survives
    with hub_access(False):
        pass
    assert os.environ["HF_HUB_OFFLINE"] == "1"
