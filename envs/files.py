"""Files read and written safely: pickles through an allow-list, atomic writes with the usual file mode.

- :func:`load_pickled_npy` reads an ``.npy`` file that holds pickled Python objects (CALVIN's
  ``auto_lang_ann.npy`` is a pickled dict) with :class:`SafeUnpickler`, which rebuilds only plain containers,
  strings, numbers and NumPy arrays and refuses every other global, so a crafted file cannot run code
  (``np.load(..., allow_pickle=True)`` would run whatever the pickle names).
- :data:`TORCH_NUMPY_GLOBALS` are the NumPy globals ``torch.load(..., weights_only=True)`` needs for files
  that hold NumPy arrays (LIBERO's initial states).
- :func:`atomic_write_text` writes through a temporary file and a rename, and gives the file the mode a
  plain ``open()`` would (``0o666`` less the umask): ``tempfile.mkstemp`` creates ``0o600`` files, which made
  result files readable by their owner only.
"""

from __future__ import annotations

import functools
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

_MULTIARRAY = ("numpy.core.multiarray", "numpy._core.multiarray")  # NumPy 1.x and 2.x spell it differently
_BUILTINS = {"set": set, "frozenset": frozenset, "complex": complex, "bytearray": bytearray, "slice": slice}


def _numpy_dtype_classes() -> dict[str, type]:
    """``numpy.dtypes.Float32DType`` and friends: newer NumPy pickles a dtype through its class."""
    dtypes = getattr(np, "dtypes", None)
    return {n: getattr(dtypes, n) for n in dir(dtypes) if n.endswith("DType")} if dtypes else {}


def _allowed_globals() -> dict[tuple[str, str], Any]:
    try:
        from numpy._core import multiarray  # NumPy 2 (1.26 ships it as an alias)
    except ImportError:  # older NumPy
        from numpy.core import multiarray  # type: ignore[no-redef]
    allowed: dict[tuple[str, str], Any] = {("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype}
    for module in _MULTIARRAY:
        # private NumPy functions, absent from its stubs: ndarray.__reduce__ makes an empty array, then
        # NumPy scalars (np.int64 in a list)
        allowed[(module, "_reconstruct")] = multiarray._reconstruct  # type: ignore[attr-defined]
        allowed[(module, "scalar")] = multiarray.scalar  # type: ignore[attr-defined]
    allowed.update({("numpy.dtypes", n): cls for n, cls in _numpy_dtype_classes().items()})
    allowed.update({("builtins", n): obj for n, obj in _BUILTINS.items()})
    # protocol 2 files from Python 2
    allowed.update({("__builtin__", n): obj for n, obj in _BUILTINS.items()})
    return allowed


class UnsafePickleError(ValueError):
    """A pickle names something outside the allow-list (it could run code): nothing was run."""


class SafeUnpickler(pickle.Unpickler):
    """Rebuilds dicts, lists, tuples, sets, strings, bytes, numbers, ``None`` and NumPy arrays, scalars and
    dtypes; any other global (a class, ``os.system``, ``builtins.eval``, ...) raises
    :class:`UnsafePickleError` before it is called. Object arrays are safe too: their items come from the
    same stream, through the same check."""

    _allowed = _allowed_globals()

    def find_class(self, module: str, name: str) -> Any:
        try:
            return self._allowed[(module, name)]
        except KeyError:
            raise UnsafePickleError(f"refers to {module}.{name}, which is not plain data") from None

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickleError(f"holds a persistent reference ({str(pid)[:60]}), which is not plain data")


def safe_unpickle(stream: BinaryIO, source: str) -> Any:
    """Unpickle one object from ``stream`` through :class:`SafeUnpickler`; errors name ``source``."""
    try:
        return SafeUnpickler(stream).load()
    except UnsafePickleError as err:
        raise UnsafePickleError(
            f"{source}: refused to unpickle: the pickle {err}; only containers, strings, "
            f"numbers and NumPy arrays are loaded (re-save it as plain data)"
        ) from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as err:
        raise ValueError(f"{source}: not a readable pickle ({type(err).__name__}: {err})") from None


def load_pickled_npy(path: str | os.PathLike[str]) -> Any:
    """The object in an ``.npy`` file; object arrays (pickles) go through :func:`safe_unpickle`.

    A 0-d object array (``np.save(path, some_dict, allow_pickle=True)``) comes back as the object itself,
    as ``np.load(path, allow_pickle=True).item()`` would give it."""
    path = Path(path)
    with path.open("rb") as f:
        try:
            version = np.lib.format.read_magic(f)
            header = {
                (1, 0): np.lib.format.read_array_header_1_0,
                (2, 0): np.lib.format.read_array_header_2_0,
            }
            if version not in header:
                raise ValueError(f"unsupported .npy format version {version}")
            shape, _, dtype = header[version](f)
        except ValueError as err:
            raise ValueError(f"{path}: not a NumPy .npy file ({err})") from None
        value = safe_unpickle(f, str(path)) if dtype.hasobject else None
    if not dtype.hasobject:
        return np.load(path, allow_pickle=False)
    if isinstance(value, np.ndarray) and value.dtype == object and value.shape == () == tuple(shape):
        return value.item()
    return value


TORCH_NUMPY_GLOBALS: list[Any] = [
    *dict.fromkeys(v for (m, _), v in SafeUnpickler._allowed.items() if m.startswith("numpy"))
]


@functools.lru_cache(maxsize=1)
def process_umask() -> int:
    """The process umask, read without changing it where Linux shows it (``os.umask`` sets it while it
    reads it, which races with threads creating files)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode ``open(path, "w")`` gives a new file: ``0o666`` less the umask."""
    return 0o666 & ~process_umask()


def atomic_write_text(path: str | os.PathLike[str], text: str, *, fsync: bool = False) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename (readers never see
    half a file), with the file mode a plain ``open()`` would give."""
    return atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, fsync: bool = False) -> Path:
    """:func:`atomic_write_text` for bytes (generated textures, say)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, file_mode())
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
            if fsync:
                stream.flush()
                os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
