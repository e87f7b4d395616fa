"""Certificates: keyed by what defines a variant, run once, kept in a plain JSON file that merges on save."""

from __future__ import annotations

import json

import pytest

from benchmarks.robustness import CertificateCache, certificate_key, certify
from envs.perturbation import PerturbationSpec
from policies.config_cli import InputError

SPEC = PerturbationSpec("camera", 2, 5)


def test_key_changes_with_episode_spec_and_expert():
    key = certificate_key("nav", "expert", {"episode_id": "x", "n": 1}, SPEC)
    assert key == certificate_key("nav", "expert", {"n": 1, "episode_id": "x"}, SPEC)
    assert key != certificate_key("nav", "expert", {"episode_id": "x", "n": 2}, SPEC)
    assert key != certificate_key(
        "nav", "expert", {"episode_id": "x", "n": 1}, PerturbationSpec("camera", 3, 5)
    )
    assert key != certificate_key("nav", "other", {"episode_id": "x", "n": 1}, SPEC)


def test_the_expert_runs_once_per_variant_and_the_file_merges(tmp_path):
    path = tmp_path / "certificates.json"
    calls = []

    def expert():
        calls.append(1)
        return {"success": False, "steps": 20}

    cache = CertificateCache(path)
    first = certify(cache, "k1", SPEC, "ep", expert)
    second = certify(cache, "k1", SPEC, "ep", expert)
    assert (first["certified"], first["cached"], second["cached"], len(calls)) == (False, False, True, 1)
    other = CertificateCache(path)
    other.put("k2", {"certified": True})
    other.save()
    cache.save()  # merges with what the other run wrote
    data = json.loads(path.read_text())
    assert set(data["certificates"]) == {"k1", "k2"} and CertificateCache(path).get("k1") is False


@pytest.mark.parametrize("text", ["not json", '{"format": "other", "certificates": {}}'])
def test_a_file_that_is_not_a_certificate_file_is_an_input_error(tmp_path, text):
    path = tmp_path / "c.json"
    path.write_text(text)
    with pytest.raises(InputError, match="--certificates"):
        CertificateCache(path)
