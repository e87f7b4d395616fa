"""The built-in policies every benchmark offers, registered like any other (``policies.registry``).

``expert`` (the benchmark's scripted expert), ``random``, ``replay`` and ``constant``: each is a config
dataclass whose fields are its command-line options, and a builder. Importing this module is cheap; the
policies themselves (:mod:`policies.baselines`, the experts) are imported by the builders only.

A config may say more about its policy than its options, and the benchmarks read it from there rather
than from the policy's name:

- ``blind`` (class attribute): the policy looks at no image, so a benchmark renders no camera for it
  unless it records videos;
- ``privileged``: the policy reads simulator state beyond the observation (recorded in the manifest);
- ``label()``: a short name for run folders (default: the policy's registered name);
- ``check_inputs()``: raises ``ValueError`` (naming the flag and the fix) for input that would otherwise
  fail in every worker;
- ``preflight()``: the same for what takes a look outside the flags (a model folder, a server, a device),
  run once before any worker starts;
- ``check_action_space(space)``: the same for an option that must fit the env's action space.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from policies.base import Policy
from policies.config_cli import arg, preview
from policies.entry_point import load_entry_point

if TYPE_CHECKING:
    import gymnasium as gym


@dataclass(frozen=True)
class ExpertConfig:
    """The benchmark's scripted expert: a privileged policy that reads the simulator it is bound to."""

    blind: ClassVar[bool] = True
    privileged: ClassVar[bool] = True

    expert: str = arg(
        "",
        "the expert class as package.module:Class; each benchmark sets its own "
        "(policy_defaults), so it is no flag",
        cli=False,
    )


def build_expert(config: ExpertConfig) -> Policy:
    """The expert class ``config.expert`` names, built without arguments."""
    if not config.expert:
        raise ValueError("this benchmark has no scripted expert")
    return load_entry_point(config.expert, what="scripted expert")()


@dataclass(frozen=True)
class RandomConfig:
    """Uniformly random actions from the env's action space, seeded by the episode seed."""

    blind: ClassVar[bool] = True


def build_random(config: RandomConfig) -> Policy:
    from policies.baselines import RandomPolicy

    return RandomPolicy()


@dataclass(frozen=True)
class ReplayConfig:
    """Recorded actions replayed episode by episode (see :class:`policies.baselines.ReplayPolicy`)."""

    blind: ClassVar[bool] = True

    replay_file: str | None = arg(
        None, "actions to replay (.jsonl keyed by episode, LIBERO .hdf5, .npy or .npz)", must_exist=True
    )

    def check_inputs(self) -> None:
        if not self.replay_file:
            raise ValueError(
                "--policy replay needs --replay-file PATH (a .jsonl, .hdf5, .npy or .npz of actions)"
            )

    def preflight(self) -> None:
        """The file reads as actions (its format, its keys), once here rather than in every worker."""
        from policies.baselines import ReplayPolicy

        try:
            ReplayPolicy.from_file(str(self.replay_file))
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ValueError(f"--replay-file {self.replay_file}: {error}") from None


def build_replay(config: ReplayConfig) -> Policy:
    from policies.baselines import ReplayPolicy

    if not config.replay_file:
        raise ValueError("--policy replay needs --replay-file PATH")
    return ReplayPolicy.from_file(config.replay_file)


def json_action(text: str) -> int | float | list[Any]:
    """``--action`` value: a JSON number or a flat list of numbers."""
    from policies.backends.jsonwire import loads_bounded

    try:
        value = loads_bounded(text)  # a deeply nested list is not an action, and no RecursionError
    except ValueError:  # not JSON, or nested too deep
        value = None
    numbers = value if isinstance(value, list) else [value]
    if not numbers or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers):
        raise argparse.ArgumentTypeError(
            f"{preview(text)} is not a number or a JSON list of numbers (e.g. 0 or '[0, 0, 1]')"
        )
    return value


@dataclass(frozen=True)
class ConstantConfig:
    """One native action sent at every step: a blind baseline (e.g. "always move forward")."""

    blind: ClassVar[bool] = True

    action: int | float | list[float] = dataclasses.field(
        metadata={
            "help": "the native action sent at every step: an integer (Discrete spaces, e.g. 0) or a JSON list "
            "(e.g. '[0, 0, 1, 0, 0, 0, -1]')",
            "parse": json_action,
            "metavar": "JSON",
        }
    )

    def check_action_space(self, space: gym.Space) -> None:
        """``--action`` is an action of the env's ``space`` (``ValueError`` naming both otherwise)."""
        from policies.baselines import constant_action

        constant_action(space, list(self.action) if isinstance(self.action, tuple) else self.action)

    def label(self) -> str:
        """``constant-0``; ``[0, 0.5, -1]`` -> ``constant-0_0.5_-1`` (safe in a folder name)."""
        values = list(self.action) if isinstance(self.action, (list, tuple)) else [self.action]
        return "constant-" + "_".join(f"{v:g}" if isinstance(v, (int, float)) else str(v) for v in values)


def build_constant(config: ConstantConfig) -> Policy:
    from policies.baselines import ConstantPolicy

    # A spec read back from JSON holds tuples where the flag gave a list (PolicySpec.config).
    return ConstantPolicy(list(config.action) if isinstance(config.action, tuple) else config.action)
