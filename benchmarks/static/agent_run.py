"""``--policy agent``: SpatialAgent answering a static benchmark through the same runner, prompts and scorers.

The agent gets each item's benchmark prompt (instruction and question) and images, runs its paradigm, and
hands its final answer to the benchmark's parser and scorer exactly as a plain model's response. Each item's
full trace (every core call with its prompt, response, tokens and parse; every tool run with its backend and
result) is appended to ``traces.jsonl`` in the run folder; the agent's counters travel with the prediction
and are summed in ``summary.json`` under ``counts.agent``.

Tool sets (``--agent-tools``):

- ``truth``: every perception tool from the simulator (generated sets only: needs ``ground_truth.jsonl``);
- ``cv``: OpenCV only (SIFT matching, homography, optical flow, essential-matrix camera pose); questions that
  need depth, boxes or counts get no tool, as a core with only these tools would;
- ``mixed``: OpenCV where it has a tool, simulator truth for the rest: the gap to ``truth`` is the error of the
  classical motion tools alone;
- ``learned``: the tools of the local models given (``--agent-depth-model``; ``--agent-detector-model`` for
  detection and counting, ``--agent-segmenter-model`` for masks, ``--agent-matcher-model`` for homography and
  camera pose; see :mod:`policies.agent.learned_tools`), OpenCV's motion tools, simulator truth for the rest.
  Without a detector, object regions for depth come from the simulator, so the gap to ``truth`` on depth
  questions is the depth model's;
- ``none``: only ``Terminate``: the same core and prompts without perception (the ablation's no-tool row).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.static.items import StaticItem
from benchmarks.static.media import load_media
from benchmarks.static.registry import Prompt
from policies.agent import AgentConfig, SpatialAgent, Toolbox
from policies.agent.core import AGENT_ERROR_KINDS  # noqa: F401  (re-exported for the runner)
from policies.agent.cv_tools import OpenCVTools
from policies.backends.base import Backend
from policies.config_cli import InputError

TOOL_SETS = ("truth", "cv", "mixed", "learned", "none")


@dataclass(frozen=True)
class ItemEpisode:
    """What a privileged backend hears when the agent starts an item: the item, its truth record, the scene."""

    item: StaticItem
    truth: Mapping[str, Any]
    scenes: Any


AGENT_MAX_NEW_TOKENS = 4096  # the paper's per-call budget for agent roles (Appendix B.1)


class AgentAnswerer:
    """Answers benchmark items with a :class:`SpatialAgent`, writing each item's trace."""

    def __init__(
        self,
        backend: Backend,
        tools: str,
        config: AgentConfig,
        data: Path,
        out_dir: Path,
        video_frames: int,
        depth_model: Path | None = None,
        *,
        detector_model: Path | None = None,
        segmenter_model: Path | None = None,
        matcher_model: Path | None = None,
    ) -> None:
        if tools not in TOOL_SETS:
            raise InputError(f"--agent-tools must be one of {', '.join(TOOL_SETS)} (got {tools!r})")
        models = {
            "depth": depth_model,
            "detector": detector_model,
            "segmenter": segmenter_model,
            "matcher": matcher_model,
        }
        if (tools == "learned") != any(m is not None for m in models.values()):
            raise InputError(
                "--agent-tools learned needs a local model folder (--agent-depth-model, --agent-detector-model, "
                "--agent-segmenter-model or --agent-matcher-model), and only it takes them"
            )
        self.backend, self.privileged = backend, bool(getattr(backend, "privileged", False))
        self.truth: dict[str, dict[str, Any]] = {}
        self.scenes: Any = None
        if tools in ("truth", "mixed", "learned") or self.privileged:
            from benchmarks.static.agent_truth import SimScenes, min_pixels_of, read_truth

            self.truth, self.scenes = read_truth(data), SimScenes(min_pixels_of(data))
        backends = self._tool_backends(tools, models)
        self.agent = SpatialAgent(backend, Toolbox(backends), config)
        self.tools, self.trace_path, self.video_frames = tools, out_dir / "traces.jsonl", video_frames

    def _tool_backends(self, tools: str, models: dict[str, Path | None]) -> list[Any]:
        """The tool backends of ``--agent-tools``: learned models, OpenCV, the simulator's truth."""
        backends: list[Any] = []
        if tools == "learned":
            from benchmarks.static.agent_truth import SimTruthTools
            from policies.agent.learned_tools import learned_backends

            try:
                paths = {k: None if v is None else str(v) for k, v in models.items()}
                backends += learned_backends(
                    detector=paths["detector"],
                    segmenter=paths["segmenter"],
                    depth=paths["depth"],
                    matcher=paths["matcher"],
                    regions=SimTruthTools(self.scenes),
                )
            except (ValueError, OSError) as error:
                raise InputError(f"--agent-tools learned: {error}") from None
        if tools in ("cv", "mixed", "learned"):
            backends.append(OpenCVTools())
        if tools in ("truth", "mixed", "learned"):
            from benchmarks.static.agent_truth import SimTruthTools

            backends.append(SimTruthTools(self.scenes))
        return backends

    def describe(self) -> dict[str, Any]:
        return {**self.agent.describe(), "tool_set": self.tools}

    def ask(
        self, items: Sequence[StaticItem], item_prompts: Sequence[Prompt]
    ) -> list[tuple[str | None, str | None, dict[str, Any]]]:
        """``(response, error, generation info)`` per item; a failure on one item is recorded on it."""
        out: list[tuple[str | None, str | None, dict[str, Any]]] = []
        with self.trace_path.open("a", encoding="utf-8") as sink:
            for item, prompt in zip(items, item_prompts):
                try:
                    result = self._answer(item, prompt)
                except InputError:
                    raise
                except (
                    Exception
                ) as error:  # recorded on the item (errored, retried by --resume), the run goes on
                    out.append((None, f"agent failed: {type(error).__name__}: {str(error)[:300]}", {}))
                    continue
                sink.write(
                    json.dumps(
                        {
                            "item_id": item.item_id,
                            "response": result.response,
                            "answered": result.answered,
                            "counters": result.counters,
                            "trace": result.trace,
                        },
                        ensure_ascii=False,
                        default=_plain,
                    )
                    + "\n"
                )
                info = {"agent": result.counters, "completion_tokens": result.counters["completion_tokens"]}
                failure = next(
                    (e["error"] for e in reversed(result.trace) if e.get("error") and e["role"] != "tool"),
                    "no response",
                )
                out.append(
                    (
                        result.response,
                        None if result.response is not None else f"agent core failed: {failure}",
                        info,
                    )
                )
        return out

    def _answer(self, item: StaticItem, prompt: Prompt) -> Any:
        images = [np.asarray(image.convert("RGB")) for image in load_media(prompt.media, self.video_frames)]
        truth = self.truth.get(item.item_id)
        if self.truth and truth is None:
            raise InputError(
                f"item {item.item_id}: no record in the set's ground_truth.jsonl; the data and truth files differ"
            )
        if self.privileged:
            self._start_item(item, truth)
        question = prompt.text if prompt.preamble is None else f"{prompt.preamble}\n{prompt.text}"
        meta = {"intrinsics": _calibration(truth["camera"])} if truth is not None else {}
        return self.agent.answer(
            question, images, truth if self.tools in ("truth", "mixed", "learned") else None, meta
        )

    def _start_item(self, item: StaticItem, truth: Mapping[str, Any] | None) -> None:
        """A privileged backend (one that answers from the simulator's truth) hears each item with its truth
        record and loaded scene (:meth:`Backend.start_episode`)."""
        assert truth is not None and self.scenes is not None  # read_truth ran for a privileged backend
        self.scenes.load(truth)
        self.backend.start_episode(ItemEpisode(item, truth, self.scenes))

    def close(self) -> None:
        if self.scenes is not None:
            self.scenes.close()


def _calibration(camera: Mapping[str, Any]) -> list[list[float]]:
    """The 3x3 calibration of a generated set's camera (square pixels, vertical field of view): what a
    camera's owner knows, so the OpenCV pose may use it (it is not the pose)."""
    from envs.navigation.camera import Intrinsics

    return (
        Intrinsics(int(camera["width"]), int(camera["height"]), float(camera["fovy_deg"])).matrix().tolist()
    )


def _plain(value: object) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def sum_counters(counters: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The agent's per-item counters summed over a run (numbers summed, flags and stop reasons counted)."""
    total: defaultdict[str, float] = defaultdict(int)  # sums ints and floats (a typed Counter holds ints)
    stopped: Counter[str] = Counter()
    for c in counters:
        for key, value in c.items():
            if key == "stopped":
                if value:
                    stopped[str(value)] += 1
            elif isinstance(value, bool):
                total[key] += int(value)
            elif isinstance(value, (int, float)):
                total[key] += value
    out: dict[str, Any] = dict(sorted(total.items()))
    out["items"], out["stopped"] = len(counters), dict(stopped)
    out["injected_unusable_in_tool_call_roles"] = sum(
        v
        for k, v in total.items()
        if k.startswith("injected.")
        and k.endswith(".unusable")
        and k.split(".")[1] in ("planner", "observer", "react_summarizer")
    )
    return out
