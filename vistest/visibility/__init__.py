"""Stage 2, visibility: the frames x objects coverage table of a scene.

* :mod:`.table`: :class:`Visibility` (the table, its .npz/CSV forms) and
  :func:`compute_visibility` (scene in, table out);
* :mod:`.raster`: the Numba kernels (exact silhouettes, box z-buffer, the observed-depth test);
* :mod:`.zbuffer`: the mesh z-buffer (depth and object id per working sample) for ``mesh`` occlusion;
* :mod:`.render`: pyrender, the independent references (boxes, mesh depth, mesh instances).
"""
from .table import OCCLUSION_MODES, Visibility, compute_visibility

__all__ = ["OCCLUSION_MODES", "Visibility", "compute_visibility"]
