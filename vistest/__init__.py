"""vistest: frame-aware ground truth and evidence-removed videos for spatial-reasoning benchmarks.

Public API: :class:`Scene` (load/save a scene), :func:`compute_visibility` and
:class:`Visibility` (frames x objects coverage).
"""
import os as _os

# pyrender picks its OpenGL platform at import time; headless EGL unless the user chose one.
_os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
# One BLAS thread per process unless the user chose otherwise (read when numpy loads its BLAS: this import
# comes first in the CLI and every process it spawns inherits it). vistest spreads work over processes, one
# per core; each process's OpenBLAS threads spinning on the other cores after a BLAS call made a liblinear fit
# of the generator's learned blind attacks 10-20x slower, a generation ~3x, on 2 cores (docs/synth.md, "Time and
# memory").
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    _os.environ.setdefault(_var, "1")

from .scene import Scene, SceneError, Frame, SceneObject, Intrinsics, DepthSpec  # noqa: E402
from .visibility import Visibility, compute_visibility  # noqa: E402

__version__ = "0.1.0"
__all__ = ["Scene", "SceneError", "Frame", "SceneObject", "Intrinsics", "DepthSpec", "Visibility", "compute_visibility",
           "__version__"]
