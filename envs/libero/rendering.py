"""Fast software rendering for robosuite's offscreen render context, and explicit clean-up.

On CPU (Mesa llvmpipe) MuJoCo's default 4096² shadow map, planar reflections and 4x multisampling cost
most of a LIBERO step. Fast rendering turns the three off; everything else (lights, textures, skybox)
stays, so the scene looks the same apart from shadows and reflections.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import mujoco

if TYPE_CHECKING:
    from robosuite.utils.binding_utils import MjRenderContext


def apply_fast_rendering(context: MjRenderContext) -> None:
    """Shadows, reflections and multisampling off for a robosuite ``MjRenderContext``.

    The multisample count is read when the MuJoCo GL context is built, so that context is rebuilt here.
    Must be applied again whenever robosuite builds a new render context (hard resets).
    """
    context.scn.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
    context.scn.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
    model = context.model._model
    if model.vis.quality.offsamples != 0:
        model.vis.quality.offsamples = 0
        _rebuild_mujoco_context(context)


def is_fast(context: MjRenderContext) -> bool:
    """True when shadows, reflections and multisampling are all off for ``context``."""
    flags = context.scn.flags
    return (
        not flags[mujoco.mjtRndFlag.mjRND_SHADOW]
        and not flags[mujoco.mjtRndFlag.mjRND_REFLECTION]
        and context.model._model.vis.quality.offsamples == 0
    )


def free_render_context(context: MjRenderContext) -> None:
    """Release the MuJoCo and GL contexts now, instead of in ``__del__`` at interpreter exit (EGL errors)."""
    context.gl_ctx.make_current()
    context.con.free()
    context.gl_ctx.free()  # robosuite's later __del__ finds both already freed; both frees are idempotent


def _rebuild_mujoco_context(context: MjRenderContext) -> None:
    context.gl_ctx.make_current()
    context.con.free()
    context.con = mujoco.MjrContext(context.model._model, mujoco.mjtFontScale.mjFONTSCALE_150)
    mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, context.con)
