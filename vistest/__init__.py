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

_EXPORTS = {"Scene": "scene", "SceneError": "scene", "Frame": "scene", "SceneObject": "scene", "Intrinsics": "scene",
            "DepthSpec": "scene", "Visibility": "visibility", "compute_visibility": "visibility"}
__version__ = "0.1.0"
__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str):
    """The public names, imported at first use (PEP 562): importing vistest (as every ``vistest``
    command and child process does first) costs no NumPy, so vistest.launch starts its child at once."""
    if name in _EXPORTS:
        import importlib

        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'vistest' has no attribute {name!r}")
