"""The answer-key stand-in on state probes: a twin of the closed-loop stand-in that answers probes.

The closed-loop stand-in answers from the env's expert (an ``EnvTruth``), which knows plans, not probe
questions; with ``--probe`` the composition root (:func:`benchmarks.attribution.config.probe_model`) gives the
probes a twin built with their gold answers (a :class:`~benchmarks.attribution.questions.ProbeBook`) and its
own seeded rate of confident wrong answers (``--answer-key-probe-error-rate``, kind ``wrong_answer``), so that
misperception can be injected without touching the actions, and action errors
(``--answer-key-error-rate``) without touching the probes.
"""

from __future__ import annotations

from benchmarks.attribution.questions import ProbeBook
from policies.backends.answer_key import AnswerKeyBackend
from policies.backends.base import Backend
from policies.backends.injection import PERCEPTION_ERROR_KINDS


def probe_twin(backend: Backend, error_rate: float, error_seed: int) -> tuple[Backend, ProbeBook] | None:
    """The probes' twin of ``backend`` and the book it answers from, when ``backend`` is the stand-in;
    ``None`` for a model (the probes then ask the model itself)."""
    if not isinstance(backend, AnswerKeyBackend):
        return None
    book = ProbeBook()
    twin = AnswerKeyBackend(
        backend.config,
        truth=book,
        error_rate=error_rate,
        error_seed=error_seed,
        error_kinds=PERCEPTION_ERROR_KINDS,
        model=backend.model_id,
    )
    return twin, book
