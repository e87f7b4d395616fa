"""Headless OpenGL defaults, applied before any simulator is imported, and the fork rule of rendering.

MuJoCo (and robosuite through it) choose their OpenGL platform from ``MUJOCO_GL`` when first imported.
Without a display the GLFW default fails, so unless the user chose a platform we use EGL, which Mesa
serves on CPU (llvmpipe) and NVIDIA on GPUs; ``MUJOCO_GL=osmesa`` is the fallback (``libosmesa6``).

A process that has rendered holds an initialised GL driver whose worker threads (llvmpipe's rasterisers)
do not survive ``fork``: a forked copy that renders waits on them forever. This is what made
``gym.make_vec(ID, N, vectorization_mode="async")`` hang once the process had made a navigation or
manipulation env (multiprocessing forks by default on Linux before Python 3.14). The MuJoCo families call
:func:`starting_gl` before they create a GL context: in such a forked copy it raises
:class:`ForkedAfterRenderingError` at once, naming the fix, a start method that begins a fresh
interpreter (``vector_kwargs={"context": "forkserver"}``, or ``"spawn"``). A fork that does not render
(a data-loader worker, a subprocess) is unaffected.
"""

from __future__ import annotations

import os

#: The start method for processes that render, given to ``AsyncVectorEnv`` as ``vector_kwargs``' context.
RENDER_SAFE_START = "forkserver"


class ForkedAfterRenderingError(RuntimeError):
    """Rendering was asked of a process forked from one that had already rendered (it would hang)."""


_rendering = {"started": False, "forked": False}


def ensure_headless_gl() -> None:
    """Default ``MUJOCO_GL``/``PYOPENGL_PLATFORM`` to EGL when no display is set and the user chose none."""
    if os.environ.get("MUJOCO_GL") or os.environ.get("DISPLAY"):
        return
    os.environ["MUJOCO_GL"] = "egl"
    os.environ.setdefault("PYOPENGL_PLATFORM", "egl")


def starting_gl() -> None:
    """Call before creating an OpenGL context. Raises :class:`ForkedAfterRenderingError` in a process
    forked after its parent rendered; otherwise notes that this process renders, so its forks know."""
    if _rendering["forked"]:
        raise ForkedAfterRenderingError(
            f"this process was forked from one that had already rendered with OpenGL ({os.environ.get('MUJOCO_GL')}), "
            "and rendering here would hang; start it with a fresh interpreter instead: "
            f"gym.make_vec(..., vectorization_mode='async', vector_kwargs={{'context': '{RENDER_SAFE_START}'}}) "
            f"or multiprocessing.get_context('{RENDER_SAFE_START}')"
        )
    if not _rendering["started"]:
        _rendering["started"] = True
        os.register_at_fork(after_in_child=_forked)


def _forked() -> None:
    _rendering["forked"] = True
