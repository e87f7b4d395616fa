"""What the families need so that ``gym.make_vec(id, n, vectorization_mode="async")`` returns true data.

Gymnasium's ``AsyncVectorEnv`` (shared memory, its default) reads the batched observation out of shared
memory once, when it is made, and hands back that same object after every reset and step: arrays are live
views of the memory the workers write, but a ``Text`` subspace is read into a tuple of strings then and
never again, so instructions and feedback would stay those of an empty buffer (gymnasium 1.4).
:class:`TextObservation` is ``Text`` with a shared-memory reader that decodes the workers' latest writes
whenever it is read (and becomes a plain tuple when copied, as ``AsyncVectorEnv`` copies observations by
default). Every family declares its text observations with it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from multiprocessing.sharedctypes import SynchronizedArray
from typing import Any, overload

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import read_from_shared_memory


class TextObservation(spaces.Text):
    """A ``Text`` observation that stays current in async vector envs with shared memory."""


class SharedTexts(Sequence[str]):
    """The ``n`` strings in a batched text buffer, decoded at each read (a tuple when copied)."""

    def __init__(self, space: TextObservation, memory: SynchronizedArray[Any], n: int) -> None:
        self._space, self._memory, self._n = space, memory, n

    def _row(self, index: int) -> str:
        size = self._space.max_length
        buffer = memoryview(self._memory.get_obj())
        codes = np.frombuffer(buffer, dtype=np.int32)[index * size : (index + 1) * size]
        chars, count = self._space.character_list, len(self._space.character_set)
        return "".join(chars[c] for c in codes if c < count)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(self)[index]
        if not -self._n <= index < self._n:
            raise IndexError(index)
        return self._row(index % self._n)

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[str]:
        return (self._row(i) for i in range(self._n))

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, (SharedTexts, tuple)) else other)

    __hash__ = None  # type: ignore[assignment]

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __repr__(self) -> str:
        return repr(tuple(self))


@read_from_shared_memory.register(TextObservation)
def _read_texts(space: TextObservation, shared_memory: SynchronizedArray[Any], n: int = 1) -> SharedTexts:
    return SharedTexts(space, shared_memory, n)
