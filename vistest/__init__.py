"""vistest: frame-aware ground truth and evidence-removed videos for spatial-reasoning benchmarks.

Public API: :class:`Scene` (load/save a scene), :func:`compute_visibility` and
:class:`Visibility` (frames x objects coverage).
"""
import os as _os

# pyrender picks its OpenGL platform at import time; headless EGL unless the user chose one.
_os.environ.setdefault("PYOPENGL_PLATFORM", "egl")

from .scene import Scene, SceneError, Frame, SceneObject, Intrinsics, DepthSpec  # noqa: E402
from .visibility import Visibility, compute_visibility  # noqa: E402

__version__ = "0.1.0"
__all__ = ["Scene", "SceneError", "Frame", "SceneObject", "Intrinsics", "DepthSpec", "Visibility", "compute_visibility",
           "__version__"]
