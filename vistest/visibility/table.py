"""Visibility: the frames x objects table (stage 2 of the pipeline).

For every frame f and object o of a scene:

* ``projected[f, o]``: fraction of the image area covered by the box silhouette,
  ignoring every other surface. Exact (polygon geometry, no pixels): the box is
  clipped against the near plane ``z = near`` (so a box straddling the camera plane
  is clipped, never dropped or mirrored), projected, its convex hull clipped to the
  image rectangle ``[-0.5, W-0.5] x [-0.5, H-0.5]`` and measured.
* ``visible[f, o]``: fraction of the image area where the object may be seen, by the
  occlusion mode's rule (docs/visibility.md):

  - ``depth`` / ``mesh`` (observed geometry: the frame's depth image, or the scene mesh
    rendered): boxes do not hide each other; a silhouette sample is visible unless the
    observed surface is nearer than the box's *entry* surface (where the ray enters the
    solid) by more than ``depth_tol``. A loose box's entry lies in front of the object,
    so the object's own surface (behind the entry) counts as visible, and an object
    nested in another's box is seen wherever its own surface shows.
  - ``boxes`` (no observed geometry): boxes are opaque solids seen from outside, except
    that a box never hides a box it *contains*: one with at least ``CONTAIN_SHARE`` of
    its volume inside it (a table inside an L-sofa's box, pillows on a sofa, a chair
    tucked under a desk). A box that contains the camera centre is seen from inside:
    its inner walls are its surface.
  - ``none``: ``visible = projected``.

  Computed at a working resolution (``scale``) and reported as
  ``projected * visible_samples / silhouette_samples`` so that an unoccluded box is
  exact and only occlusion boundaries carry sampling error (see docs/visibility.md).
* ``bbox[f, o]``: ``[x0, y0, x1, y1]`` integer pixel bounds (half-open, for
  ``image[y0:y1, x0:x1]``) of the visible region at native resolution; NaN when the
  object is not visible.

Invalid frames (no pose) give NaN in every field, never zeros. ``occlusion="auto"``
(the default) uses the scene's observed geometry when it has some: the mesh, else the
depth frames, else the boxes (:func:`choose_occlusion`).
"""
from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..atomic import atomic_path
from ..errors import InputError
from ..geometry import box_corners, rigid_inverse

OCCLUSION_MODES = ("none", "boxes", "depth", "mesh")
OCCLUSION_CHOICES = ("auto",) + OCCLUSION_MODES  # what a user may ask for; "auto": choose_occlusion
DEFAULT_OCCLUSION = "auto"
RULES_VERSION = 2  # bumped when the occlusion rules change (cached tables keyed by it): 2 = containment, entry depth
CONTAIN_SHARE = 0.5  # boxes mode: box a does not hide box b when this share of b's volume is inside a
ARRAYS = ("scene_id", "projected", "visible", "bbox", "object_ids", "frame_index", "valid", "params")


@dataclass(frozen=True, eq=False)
class Visibility:
    """Per frame x object visibility of one scene.

    Arrays: ``projected`` (F, O) and ``visible`` (F, O) fractions of image area in
    [0, 1], ``bbox`` (F, O, 4) pixel bounds, ``object_ids`` (O,) str, ``frame_index``
    (F,) int64 decoded video frame numbers, ``valid`` (F,) bool. Rows of invalid
    frames are NaN. ``params`` records how it was computed (occlusion, scale, near...).
    ``source`` names where it came from in error messages (the .npz read, or the scene file
    it was computed from); it is not saved.
    """

    scene_id: str
    projected: np.ndarray
    visible: np.ndarray
    bbox: np.ndarray
    object_ids: np.ndarray
    frame_index: np.ndarray
    valid: np.ndarray
    params: dict
    source: str = "visibility"

    def save(self, path: str | os.PathLike) -> None:
        """Write an ``.npz`` atomically (temp file + rename)."""
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:  # a file object: numpy adds no suffix
            np.savez_compressed(
                fh, scene_id=np.array(self.scene_id), projected=self.projected, visible=self.visible,
                bbox=self.bbox, object_ids=self.object_ids.astype(str), frame_index=self.frame_index,
                valid=self.valid, params=np.array(repr(sorted(self.params.items()))))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Visibility":
        """Read a file written by :meth:`save`; InputError naming the file when it cannot."""
        import ast
        import zipfile

        try:
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
        except (OSError, ValueError, zipfile.BadZipFile) as e:
            raise InputError(f"{path}: cannot read visibility ({e}); expected the .npz of 'vistest visibility'") \
                from None
        missing = sorted(set(ARRAYS) - set(arrays))
        if missing:
            raise InputError(f"{path}: not a vistest visibility file (missing arrays: {missing})")
        try:
            params = dict(ast.literal_eval(str(arrays["params"])))
        except (ValueError, SyntaxError, TypeError) as e:
            raise InputError(f"{path}: params: expected the parameters 'vistest visibility' records ({e})") from None
        return cls(scene_id=str(arrays["scene_id"]), projected=arrays["projected"], visible=arrays["visible"],
                   bbox=arrays["bbox"], object_ids=arrays["object_ids"], frame_index=arrays["frame_index"],
                   valid=arrays["valid"], params=params, source=str(path))

    def to_csv(self) -> str:
        """Long-format CSV: one row per (frame, object)."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["frame_index", "valid", "object_id", "projected", "visible", "x0", "y0", "x1", "y1"])
        for fi, f in enumerate(self.frame_index):
            for oi, oid in enumerate(self.object_ids):
                b = self.bbox[fi, oi]
                w.writerow([int(f), int(self.valid[fi]), oid, _fmt(self.projected[fi, oi]),
                            _fmt(self.visible[fi, oi])] + [_fmt(x, int_=True) for x in b])
        return buf.getvalue()


def _fmt(x: float, int_: bool = False) -> str:
    if np.isnan(x):
        return "nan"
    return str(int(x)) if int_ else f"{x:.6f}"


WORK_SIZE = 160  # default working grid: longer side in samples; see docs/visibility.md for its error
DEFAULT_NEAR = 1e-3  # metres: near clipping plane of the silhouettes and the z-buffer
DEFAULT_DEPTH_TOL = 0.05  # metres: a box sample is hidden when behind the depth map by more


def default_scale(image_size: tuple[int, int]) -> float:
    """Working scale whose grid has ``WORK_SIZE`` samples on the longer side (never above 1)."""
    return min(1.0, WORK_SIZE / max(image_size))


def choose_occlusion(scene, occlusion: str = DEFAULT_OCCLUSION) -> tuple[str, str]:
    """The occlusion mode to use for ``scene`` and why, as ``(mode, reason)``.

    ``auto``: ``mesh`` when the scene has a mesh with faces (a point cloud cannot be
    rendered as a surface), else ``depth`` when a frame has a depth image, else
    ``boxes``. Observed geometry is preferred because real annotations are loose and
    nested: a solid-box z-buffer lets a container's box hide what stands inside it.
    Any other value is checked against what the scene has and returned as is.
    """
    if occlusion not in OCCLUSION_CHOICES:
        raise InputError(f"occlusion: expected one of {', '.join(OCCLUSION_CHOICES)}, got {occlusion!r}")
    has_depth = any(f.depth for f in scene.frames)
    faces = scene.mesh is not None and mesh_has_faces(scene.path(scene.mesh))
    if occlusion == "mesh":
        if scene.mesh is None:
            raise InputError(f"{scene.source}: mesh: missing; expected a mesh file for occlusion 'mesh'")
        if not faces:
            raise InputError(f"{scene.path(scene.mesh)}: mesh: occlusion 'mesh' needs a triangle mesh, "
                             f"this file has no faces (a point cloud)")
        return "mesh", "asked for"
    if occlusion == "depth" and not has_depth:
        raise InputError(f"{scene.source}: frames[].depth: no frame has a depth image; expected some for "
                         f"occlusion 'depth'")
    if occlusion != "auto":
        return occlusion, "asked for"
    if faces:
        return "mesh", f"the scene's mesh ({scene.mesh}) hides what is behind it"
    if has_depth:
        why = "" if scene.mesh is None else f"; its mesh {scene.mesh} is a point cloud"
        return "depth", f"the scene's depth frames hide what is behind them{why}"
    why = ("no mesh or depth frames" if scene.mesh is None
           else f"its mesh {scene.mesh} is a point cloud and no depth frames")
    return "boxes", f"the scene has {why}: boxes hide each other (not what they contain)"


def occlusion_inputs(scene, occlusion: str) -> tuple[Path, ...]:
    """The files besides scene.json that a table computed in mode ``occlusion`` (a mode of
    :data:`OCCLUSION_MODES`, not ``auto``: :func:`choose_occlusion` first) is computed from:
    ``mesh``: the mesh file; ``depth``: every frame's depth image; ``boxes``, ``none``: none.
    A cached table is reused only while these are unchanged (vistest.pipeline.visibility_key):
    a mesh fixed or depth images re-exported beside an unchanged scene.json change the table."""
    def path(rel: str) -> Path:  # as scene.json names it: a linked folder is not resolved (its copy keys alike)
        return Path(os.path.normpath(os.path.abspath(Path(scene.root) / rel)))

    if occlusion == "mesh":
        return (path(scene.mesh),)
    if occlusion == "depth":
        return tuple(sorted({path(f.depth) for f in scene.frames if f.depth}))
    return ()


def mesh_has_faces(path) -> bool:
    """Does the mesh file hold triangles (rather than only points)? A PLY's header says
    so (its ``element face`` count); other formats are loaded with trimesh."""
    path = os.fspath(path)
    if path.lower().endswith(".ply"):
        try:
            with open(path, "rb") as fh:
                for _ in range(200):
                    line = fh.readline()
                    if not line or line.strip() == b"end_header":
                        return False
                    parts = line.split()
                    if parts[:2] == [b"element", b"face"] and len(parts) == 3:
                        return int(parts[2]) > 0
        except (OSError, ValueError) as e:
            raise InputError(f"{path}: mesh: cannot read the PLY header ({e})") from None
        return False
    import trimesh

    geom = trimesh.load(path, force="mesh")
    return len(getattr(geom, "faces", ())) > 0


def containment(centers: np.ndarray, sizes: np.ndarray, rots: np.ndarray, share: float = CONTAIN_SHARE) -> np.ndarray:
    """(O, O) bool ``c[a, b]``: box a contains box b, so a does not hide b in ``boxes`` mode.

    Contained means at least ``share`` of b's volume lies inside a, estimated on the 8^3 lattice
    of cell centres in b (``raster.CONTAIN_GRID``; each face of a cuts at most one layer of
    cells wrongly: at most 1/16 off per cutting face): ``count / 512 >= share``; a box does not
    contain itself, and boxes whose world-axis bounds do not overlap contain nothing of each
    other. :func:`vistest.visibility.raster.containment_kernel` finds the overlapping pairs by a
    sweep and decides most pairs from bounds, counting points only until the answer is known:
    the same answer as testing every lattice point of every pair (tests/test_faults.py), in
    under a minute for 5,000 mutually overlapping boxes (bench/containment.py).
    """
    from . import raster

    centers, sizes, rots = (np.ascontiguousarray(a, dtype=np.float64) for a in (centers, sizes, rots))
    n = len(centers)
    if n == 0:
        return np.zeros((0, 0), bool)
    g = raster.CONTAIN_GRID
    cell = (np.arange(g) + 0.5) / g - 0.5  # cell centres in units of b's size
    need = next(c for c in range(g ** 3 + 2) if c > g ** 3 or c / g ** 3 >= share)  # count/512 >= share
    extent = (np.abs(rots) @ (sizes[:, :, None] / 2.0))[..., 0]  # half extents of the world-axis bounds
    lo, hi = centers - extent, centers + extent
    order = np.argsort(lo[:, 0], kind="stable").astype(np.int64)
    eps = 1e-9 * (1.0 + float(np.abs(centers).max() + np.abs(sizes).max()))  # metres: far above rounding
    return raster.containment_kernel(centers, sizes, rots, lo, hi, order, cell, need, eps)


def compute_visibility(scene, occlusion: str = DEFAULT_OCCLUSION, scale: float | None = None,
                       near: float = DEFAULT_NEAR, depth_tol: float = DEFAULT_DEPTH_TOL, chunk: int = 256,
                       progress: bool = False) -> Visibility:
    """Frames x objects visibility of ``scene`` (see the module docstring for definitions).

    ``occlusion``: ``auto`` (default: :func:`choose_occlusion`: mesh, else depth, else
    boxes), ``none`` (visible = projected), ``boxes`` (boxes hide each other, not what
    they contain), ``depth`` (only the frame's depth image hides a box: where it is
    nearer than the box's entry surface by more than ``depth_tol`` metres; missing depth
    counts as visible), ``mesh`` (as ``depth``, with depth rendered from ``scene.mesh``
    by pyrender at the working resolution). ``params["occlusion"]`` records the mode used.
    ``scale``: working resolution as a fraction of the native one (0 < scale <= 1);
    None: :func:`default_scale` (a 160-sample grid on the longer side).
    ``near``: near plane in metres. Frames are processed ``chunk`` at a time (memory
    stays bounded; the progress bar advances per chunk).
    """
    from . import raster
    from ..progress import progress_bar

    occlusion, _ = choose_occlusion(scene, occlusion)
    if scale is None:
        scale = default_scale(scene.image_size)
    if not (0.0 < scale <= 1.0):
        raise InputError(f"scale: expected 0 < scale <= 1, got {scale!r}")
    if not (near > 0.0):
        raise InputError(f"near: expected a positive distance in metres, got {near!r}")

    w, h = scene.image_size
    ws, hs = max(1, round(w * scale)), max(1, round(h * scale))
    centers, sizes, rots = scene.world_boxes()
    corners = box_corners(centers, sizes, rots)
    contains = containment(centers, sizes, rots) if occlusion == "boxes" else np.zeros((0, 0), bool)
    if not contains.any():
        contains = np.zeros((0, 0), bool)
    nf, no = len(scene.frames), len(scene.objects)
    projected = np.full((nf, no), np.nan)
    visible = np.full((nf, no), np.nan)
    bbox = np.full((nf, no, 4), np.nan)
    valid = np.array([f.valid for f in scene.frames], bool)
    mesh_renderer = None
    if occlusion == "mesh":
        from .render import MeshDepthRenderer
        mesh_renderer = MeshDepthRenderer(scene.path(scene.mesh), ws, hs, near=near)
    try:
        with progress_bar(nf, f"visibility {scene.scene_id} ({occlusion})", enabled=progress) as bar:
            for s in range(0, nf, chunk):
                frames = scene.frames[s:s + chunk]
                w2c, kin = frame_cameras(scene, frames)
                depth = np.zeros((0, 0))
                if occlusion == "depth":
                    depth = depth_samples(scene, frames, ws, hs)
                elif occlusion == "mesh":
                    depth = np.stack([mesh_renderer.render(f.camera_to_world,
                                                           scene.intrinsics_for(f).scaled(ws / w, hs / h)).reshape(-1)
                                      if f.valid else np.zeros(ws * hs) for f in frames])
                raster.visibility_kernel(w2c, kin, valid[s:s + chunk], corners, rots, w, h, ws, hs, near,
                                         occlusion != "none", depth, depth_tol, contains,
                                         projected[s:s + chunk], visible[s:s + chunk], bbox[s:s + chunk])
                bar.update(len(frames))
    finally:
        if mesh_renderer is not None:
            mesh_renderer.close()
    params = {"occlusion": occlusion, "scale": float(scale), "near": float(near), "depth_tol": float(depth_tol),
              "working_size": [ws, hs]}
    if occlusion == "boxes":
        params["contain_share"] = CONTAIN_SHARE
    return Visibility(scene_id=scene.scene_id, projected=projected, visible=visible, bbox=bbox,
                      object_ids=np.array(scene.object_ids, dtype=str),
                      frame_index=np.array([f.index for f in scene.frames], np.int64), valid=valid, params=params,
                      source=scene.source)


def frame_cameras(scene, frames) -> tuple[np.ndarray, np.ndarray]:
    """World-to-camera ``[R | t]`` (F, 3, 4) (OpenCV axes, metres) and native intrinsics
    ``(fx, fy, cx, cy)`` (F, 4) of ``frames``; zeros for invalid frames."""
    w2c = np.zeros((len(frames), 3, 4))
    kin = np.zeros((len(frames), 4))
    for i, f in enumerate(frames):
        k = scene.intrinsics_for(f)
        kin[i] = (k.fx, k.fy, k.cx, k.cy)
        if f.valid:
            w2c[i] = rigid_inverse(f.camera_to_world)[:3]
    return w2c, kin


def depth_samples(scene, frames, ws: int, hs: int) -> np.ndarray:
    """Per-frame depth (metres) at the working-grid samples, (F, hs*ws); 0 = missing.

    Each sample's colour ray is looked up in the depth image through the depth
    camera (nearest pixel). Depth images are registered to the colour pose.
    """
    import cv2

    w, h = scene.image_size
    out = np.zeros((len(frames), ws * hs))
    j, i = np.meshgrid(np.arange(ws), np.arange(hs))
    for n, f in enumerate(frames):
        if f.depth is None or not f.valid:
            continue
        path = scene.path(f.depth)
        img = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
        if img is None or img.ndim != 2:
            raise InputError(f"{path}: frames[{f.index}].depth: expected a single-channel depth image")
        dh, dw = img.shape
        spec = scene.depth
        if spec is not None and spec.image_size is not None and spec.image_size != (dw, dh):
            raise InputError(f"{path}: depth image is {dw}x{dh}, {scene.source} depth.image_size says "
                             f"{spec.image_size}")
        kc = scene.intrinsics_for(f)
        kd = spec.camera if spec is not None and spec.camera is not None else kc.scaled(dw / w, dh / h)
        # working sample -> native pixel -> ray -> depth pixel
        u = (j + 0.5) * (w / ws) - 0.5
        v = (i + 0.5) * (h / hs) - 0.5
        ud = np.rint(kd.fx * (u - kc.cx) / kc.fx + kd.cx).astype(np.int64)
        vd = np.rint(kd.fy * (v - kc.cy) / kc.fy + kd.cy).astype(np.int64)
        inside = (ud >= 0) & (ud < dw) & (vd >= 0) & (vd < dh)
        d = np.zeros((hs, ws))
        d[inside] = img[vd[inside], ud[inside]] / (spec.scale if spec is not None else 1000.0)
        out[n] = d.reshape(-1)
    return out
