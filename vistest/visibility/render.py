"""pyrender renders: the independent references for the visibility engine (boxes, mesh depth, mesh instances).

Conventions:

* Poses: our ``camera_to_world`` uses OpenCV axes; pyrender (OpenGL) looks down -z
  with y up, so ``pose_gl = c2w_cv @ diag(1, -1, -1, 1)``.
* Intrinsics: pyrender's ``IntrinsicsCamera`` places the principal point in window
  coordinates, where pixel j's centre is at j + 0.5; OpenCV puts it at j. So an
  OpenCV (cx, cy) is passed as (cx + 0.5, cy + 0.5). tests/test_render.py checks this
  against analytic silhouettes.
* Boxes are closed solids seen from outside: single-sided, back faces culled, so
  stacked boxes never z-fight. A box that contains the camera centre is drawn with
  its faces inverted for that frame, so its inner walls are its surface, as in the
  engine (pyrender's SEG pass always culls back faces, whatever the material says).
* We never call ``pyrender.Scene.bounds`` (or ``centroid``/``scale``), which use
  ``np.infty`` and fail on numpy 2: every camera and light gets an explicit pose.

Import this module only after ``vistest`` (which sets ``PYOPENGL_PLATFORM=egl``).
"""
from __future__ import annotations

import os

os.environ.setdefault("PYOPENGL_PLATFORM", "egl")

import numpy as np  # noqa: E402
import pyrender  # noqa: E402
import trimesh  # noqa: E402

from ..errors import InputError  # noqa: E402
from ..geometry import CV_TO_GL, boxes_contain  # noqa: E402
from ..scene import Intrinsics  # noqa: E402

ZFAR = 100.0


def gl_pose(c2w_cv: np.ndarray) -> np.ndarray:
    """OpenGL camera pose for an OpenCV camera-to-world matrix."""
    return np.asarray(c2w_cv, float) @ CV_TO_GL


def free_renderer(renderer: pyrender.OffscreenRenderer) -> None:
    """Free ``renderer``'s OpenGL resources and its EGL context, as pyrender 0.1.45's
    ``OffscreenRenderer.delete`` does, without the full garbage collection (``gc.collect()``)
    that delete ends with. Every OpenGL object is released explicitly before it (the renderer's
    programs, meshes' buffers, textures, framebuffers, then the context), so that collection frees
    nothing of OpenGL's; it walks every object of the process: 0.1-0.2 s of CPU in a test worker
    (40 renderers in `make test`'s two workers made 8 s of its CPU, issue #47), more in a long batch. Python's own
    collector still runs as usual. A second call, and pyrender's ``__del__`` after it, do nothing."""
    platform, inner = getattr(renderer, "_platform", None), getattr(renderer, "_renderer", None)
    if platform is None or inner is None:
        return
    platform.make_current()
    inner.delete()
    platform.delete_context()
    renderer._renderer = renderer._platform = None


def gl_camera(k: Intrinsics, near: float, far: float = ZFAR) -> pyrender.IntrinsicsCamera:
    """pyrender camera for OpenCV intrinsics (half-pixel shift, see module docstring)."""
    return pyrender.IntrinsicsCamera(fx=k.fx, fy=k.fy, cx=k.cx + 0.5, cy=k.cy + 0.5, znear=near, zfar=far)


def box_mesh(center: np.ndarray, size: np.ndarray, rotation: np.ndarray) -> trimesh.Trimesh:
    """A closed box mesh (outward faces) in world coordinates."""
    tf = np.eye(4)
    tf[:3, :3] = rotation
    tf[:3, 3] = center
    return trimesh.creation.box(extents=np.asarray(size, float), transform=tf)


class _Renderer:
    """One pyrender scene + offscreen renderer with a movable camera."""

    def __init__(self, width: int, height: int, near: float):
        self.width, self.height, self.near = width, height, near
        self.scene = pyrender.Scene(bg_color=[0.0, 0.0, 0.0, 0.0], ambient_light=[1.0, 1.0, 1.0])
        self.renderer = pyrender.OffscreenRenderer(width, height)
        self._cam_node = None
        self._cam_key = None

    def _set_camera(self, c2w_cv: np.ndarray, k: Intrinsics) -> None:
        key = (k.fx, k.fy, k.cx, k.cy)
        if key != self._cam_key:
            if self._cam_node is not None:
                self.scene.remove_node(self._cam_node)
            self._cam_node = self.scene.add(gl_camera(k, self.near), pose=gl_pose(c2w_cv))
            self._cam_key = key
        else:
            self.scene.set_pose(self._cam_node, gl_pose(c2w_cv))

    def close(self) -> None:
        free_renderer(self.renderer)


class BoxSegRenderer(_Renderer):
    """Renders boxes as a segmentation; ``counts`` gives per-box visible pixel counts.

    Box i is drawn with colour i + 1 (24-bit RGB); 0 is background. Depth test and
    face culling are OpenGL's: the nearest drawn face wins.
    """

    def __init__(self, centers: np.ndarray, sizes: np.ndarray, rotations: np.ndarray,
                 width: int, height: int, near: float):
        super().__init__(width, height, near)
        self.centers, self.sizes, self.rotations = (np.asarray(a, float) for a in (centers, sizes, rotations))
        self.outside, self.inside = [], []
        for i in range(len(centers)):
            tm = box_mesh(centers[i], sizes[i], rotations[i])
            self.outside.append(self.scene.add(pyrender.Mesh.from_trimesh(tm, smooth=False)))
            inner = tm.copy()
            inner.invert()
            self.inside.append(self.scene.add(pyrender.Mesh.from_trimesh(inner, smooth=False)))
        self.num_boxes = len(centers)

    def contains(self, point: np.ndarray) -> np.ndarray:
        """(O,) bool: is ``point`` (world) strictly inside each box."""
        return boxes_contain(point, self.centers, self.sizes, self.rotations)

    def labels(self, c2w_cv: np.ndarray, k: Intrinsics, only: int | None = None, hide=()) -> np.ndarray:
        """(H, W) int image of box index + 1 per pixel (0 = none).

        ``only``: render just that box (its unoccluded silhouette); ``hide``: box indices
        left out of the render.
        """
        self._set_camera(c2w_cv, k)
        inside = self.contains(np.asarray(c2w_cv)[:3, 3])
        hidden = set(int(i) for i in hide)
        seg_map = {}
        for i in range(self.num_boxes):
            shown = (only is None or only == i) and i not in hidden
            node = self.inside[i] if inside[i] else self.outside[i]
            other = self.outside[i] if inside[i] else self.inside[i]
            node.mesh.is_visible = shown
            other.mesh.is_visible = False
            if shown:
                c = i + 1
                seg_map[node] = np.array([c & 255, (c >> 8) & 255, (c >> 16) & 255], np.uint8)
        color, _ = self.renderer.render(self.scene, flags=pyrender.RenderFlags.SEG, seg_node_map=seg_map)
        c = color.astype(np.int64)
        return c[..., 0] + (c[..., 1] << 8) + (c[..., 2] << 16)

    def counts(self, c2w_cv: np.ndarray, k: Intrinsics, contains: np.ndarray | None = None) -> np.ndarray:
        """(O,) visible pixel count of each box (nearest drawn face).

        ``contains`` (O, O) bool, ``contains[a, b]``: box a does not hide box b (the engine's
        ``boxes`` rule): such a box b is counted in a second render without its containers,
        where it is visible when it is the nearest drawn face.
        """
        lab = self.labels(c2w_cv, k)
        out = np.bincount(lab.ravel(), minlength=self.num_boxes + 1)[1:]
        if contains is not None:
            for b in np.flatnonzero(np.asarray(contains).any(axis=0)):
                out[b] = int((self.labels(c2w_cv, k, hide=np.flatnonzero(contains[:, b])) == b + 1).sum())
        return out


class MeshDepthRenderer(_Renderer):
    """Renders z-depth (metres, 0 = no surface) of a mesh file, every face in both windings: the
    previous renderer of ``occlusion='mesh'``, now the test reference for the depth of
    :mod:`vistest.visibility.zbuffer` (and the depth images of test scenes)."""

    def __init__(self, mesh_path, width: int, height: int, near: float):
        super().__init__(width, height, near)
        try:
            mesh = trimesh.load(str(mesh_path), force="mesh")
        except (OSError, ValueError) as e:
            raise InputError(f"{mesh_path}: mesh: cannot read it ({e}); expected a triangle mesh file") from None
        if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
            raise InputError(f"{mesh_path}: mesh: expected a triangle mesh with at least one face")
        # A scan mesh is not closed: its back faces hide what is behind them too. pyrender's
        # depth pass always culls back faces, so add every face in both windings.
        flipped = mesh.copy()
        flipped.invert()
        both = trimesh.util.concatenate([mesh, flipped])
        node = self.scene.add(pyrender.Mesh.from_trimesh(both, smooth=False))
        # The plain depth pass is multisampled and reads back one sample off the pixel
        # centre (up to 0.375 px away); the SEG pass is not multisampled.
        self._seg_map = {node: (255, 255, 255)}

    def render(self, c2w_cv: np.ndarray, k: Intrinsics) -> np.ndarray:
        """(H, W) float64 z-depth in metres along the optical axis; 0 where empty."""
        self._set_camera(c2w_cv, k)
        depth = self.renderer.render(self.scene, flags=pyrender.RenderFlags.DEPTH_ONLY | pyrender.RenderFlags.SEG,
                                     seg_node_map=self._seg_map)
        return np.asarray(depth, np.float64)


class MeshSegRenderer(_Renderer):
    """Renders a triangle mesh as an instance segmentation: the reference for the mesh z-buffer
    (:mod:`vistest.visibility.zbuffer`) and for the instance share ``visible``.

    ``face_obj`` (T,) gives each face's object index (-1: a surface of no object). Faces are
    drawn in both windings (two-sided, as the z-buffer's default), one pyrender node per object
    with its own segmentation colour; ``labels`` returns, per pixel, the object index of the
    nearest surface, -1 for an unlabelled surface and -2 where there is none.
    """

    def __init__(self, vertices: np.ndarray, faces: np.ndarray, face_obj: np.ndarray, width: int, height: int,
                 near: float, two_sided: bool = True):
        super().__init__(width, height, near)
        vertices, faces, face_obj = np.asarray(vertices, float), np.asarray(faces), np.asarray(face_obj)
        self._seg_map = {}
        for o in np.unique(face_obj):
            part = trimesh.Trimesh(vertices, faces[face_obj == o], process=False)
            if two_sided:
                flipped = part.copy()
                flipped.invert()
                part = trimesh.util.concatenate([part, flipped])
            node = self.scene.add(pyrender.Mesh.from_trimesh(part, smooth=False))
            c = int(o) + 2  # 0: nothing, 1: no object, 2 + k: object k
            self._seg_map[node] = np.array([c & 255, (c >> 8) & 255, (c >> 16) & 255], np.uint8)

    def labels(self, c2w_cv: np.ndarray, k: Intrinsics) -> np.ndarray:
        """(H, W) int64 object index of the nearest surface per pixel (-1: no object, -2: none)."""
        self._set_camera(c2w_cv, k)
        color, _ = self.renderer.render(self.scene, flags=pyrender.RenderFlags.SEG, seg_node_map=self._seg_map)
        c = color.astype(np.int64)
        return c[..., 0] + (c[..., 1] << 8) + (c[..., 2] << 16) - 2
