"""Visibility: the frames x objects table (stage 2 of the pipeline).

For every frame f and object o of a scene:

* ``projected[f, o]``: fraction of the image area covered by the box silhouette,
  ignoring every other surface. Exact (polygon geometry, no pixels): the box is
  clipped against the near plane ``z = near`` (so a box straddling the camera plane
  is clipped, never dropped or mirrored), projected, its convex hull clipped to the
  image rectangle ``[-0.5, W-0.5] x [-0.5, H-0.5]`` and measured.
* ``evidence[f, o]``: fraction of the image area of the object's **evidence region**: the box
  silhouette minus what hides it, by the occlusion mode's rule (docs/visibility.md). It errs
  toward "may be visible", so it is what dummy videos remove and mask:

  - ``depth`` / ``mesh`` (observed geometry: the frame's depth image, or the scene mesh
    z-buffered): boxes do not hide each other; a silhouette sample is visible unless the
    observed surface is nearer than the box's *entry* surface (where the ray enters the
    solid) by more than ``depth_tol``. A loose box's entry lies in front of the object,
    so the object's own surface (behind the entry) counts as visible, and an object
    nested in another's box is seen wherever its own surface shows.
  - ``boxes`` (no observed geometry): boxes are opaque solids seen from outside, except
    that a box never hides a box it *contains*: one with at least ``CONTAIN_SHARE`` of
    its volume inside it (a table inside an L-sofa's box, pillows on a sofa, a chair
    tucked under a desk). A box that contains the camera centre is seen from inside:
    its inner walls are its surface.
  - ``none``: ``evidence = projected``.

  Computed at a working resolution (``scale``) and reported as
  ``projected * visible_samples / silhouette_samples`` so that an unoccluded box is
  exact and only occlusion boundaries carry sampling error (see docs/visibility.md).
* ``visible[f, o]``: fraction of the image area where the object is seen. With ``mesh``
  occlusion and per-vertex object ids (``scene.mesh_objects``): the **instance share**, the
  working-grid samples where the object's own faces are the nearest surface of the whole
  mesh, over all samples (BOP's visible pixels of an object, as a share of the image), capped
  by ``evidence`` (the two differ by sampling along the boundary only, for a surface inside its
  box; the cap keeps ``visible <= evidence <= projected``: what counts as seen is always in the
  region dummies remove). Else,
  and for objects with no vertex in the mesh (listed in ``params["box_fallback"]``):
  ``visible = evidence``. ``params["visible"]`` says which (``"instance"`` or ``"box"``).
* ``bbox[f, o]``: ``[x0, y0, x1, y1]`` integer pixel bounds (half-open, for
  ``image[y0:y1, x0:x1]``) of the evidence region at native resolution; NaN when it is empty.

Moving objects (tracks, docs/scene-format.md) are taken at their pose in each frame, in every mode
(:func:`box_geometry`); an object absent at a frame has 0 in every fraction there and a NaN bbox.
The mesh and depth frames are what was observed: moving boxes are tested against them, and a
moving object's ``visible`` is its ``evidence`` (a static mesh holds no surface of it).

Invalid frames (no pose) give NaN in every field, never zeros. A 2D scene (vistest.tracks2d) is
computed by vistest.visibility.tracks2d: the same table from its annotated regions. ``occlusion="auto"``
(the default) uses the scene's observed geometry when it has some: the mesh, else the
depth frames, else the boxes (:func:`choose_occlusion`).
"""
from __future__ import annotations

import csv
import dataclasses
import io
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import freshness
from ..atomic import atomic_path
from ..errors import InputError
from ..geometry import box_corners, rigid_inverse

OCCLUSION_MODES = ("none", "boxes", "depth", "mesh")
OCCLUSION_CHOICES = ("auto",) + OCCLUSION_MODES  # what a user may ask for; "auto": choose_occlusion
DEFAULT_OCCLUSION = "auto"
CONTAIN_SHARE = 0.5  # boxes mode: box a does not hide box b when this share of b's volume is inside a
ARRAYS = ("scene_id", "projected", "visible", "bbox", "object_ids", "frame_index", "valid", "params")  # + evidence


class StaleTable(InputError):
    """A visibility table computed under other visibility rules than the current ones (Visibility.load)."""


@dataclass(frozen=True, eq=False)
class Visibility:
    """Per frame x object visibility of one scene.

    Arrays: ``projected`` (F, O), ``visible`` (F, O) and ``evidence`` (F, O) fractions of
    image area in [0, 1] (module docstring: ``visible`` is what the object shows, ``evidence``
    the region dummies remove), ``bbox`` (F, O, 4) pixel bounds of the evidence region,
    ``object_ids`` (O,) str, ``frame_index`` (F,) int64 decoded video frame numbers,
    ``valid`` (F,) bool. Rows of invalid
    frames are NaN. ``params`` records how it was computed (occlusion, scale, near...).
    ``source`` names where it came from in error messages (the .npz read, or the scene file
    it was computed from); it is not saved. ``evidence`` defaults to ``visible`` (a table
    whose visible share is the box bound; files written before it existed).
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
    evidence: np.ndarray | None = None

    def __post_init__(self):
        if self.evidence is None:
            object.__setattr__(self, "evidence", self.visible)

    def save(self, path: str | os.PathLike) -> None:
        """Write an ``.npz`` atomically (temp file + rename). ``params["rules"]``: the visibility rules'
        stamp the table was computed under (vistest.freshness; compute_visibility sets it, and a
        table made by hand without one is stamped with the current rules)."""
        params = {"rules": freshness.stamp("visibility table"), **self.params}
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:  # a file object: numpy adds no suffix
            np.savez_compressed(
                fh, scene_id=np.array(self.scene_id), projected=self.projected, visible=self.visible,
                evidence=self.evidence, bbox=self.bbox, object_ids=self.object_ids.astype(str),
                frame_index=self.frame_index, valid=self.valid, params=np.array(repr(sorted(params.items()))))

    @classmethod
    def load(cls, path: str | os.PathLike, stale_ok: bool = False) -> "Visibility":
        """Read a file written by :meth:`save`; InputError naming the file when it cannot, and
        :class:`StaleTable` (an InputError) when it was computed under other visibility rules than
        the current ones (vistest.freshness: ``params["rules"]``; a table without it predates them)
        unless ``stale_ok``."""
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
        changed = freshness.changes(params.get("rules"), "visibility table")
        if changed and not stale_ok:
            raise StaleTable(f"{path}: params: rules: {'; '.join(changed)}: the table is stale; compute it again "
                             f"('vistest visibility SCENE.json -o {path}', or let 'vistest run' compute it)")
        return cls(scene_id=str(arrays["scene_id"]), projected=arrays["projected"], visible=arrays["visible"],
                   bbox=arrays["bbox"], object_ids=arrays["object_ids"], frame_index=arrays["frame_index"],
                   valid=arrays["valid"], params=params, source=str(path), evidence=arrays.get("evidence"))

    def seen(self, rule: Any, image_size: tuple[int, int], array: str | None = None) -> np.ndarray:
        """(F, O) bool: object o counts as seen in row f: the one seen predicate of vistest.

        ``rule``: a seen rule (vistest.budget.seen.SeenRule, checked when made): its ``measure``
        of an array of this table (the image share, the silhouette share or native pixels, for
        ``image_size`` (W, H) in pixels) must pass its threshold (``passes``). ``array``: read this
        array instead of the rule's (``projected``: occlusion ignored). Rows whose ``valid`` is
        False, and unknown (NaN) values, are never seen."""
        valid = np.asarray(self.valid, dtype=bool)
        return rule.passes(rule.measure(self, image_size, array)) & valid[:, None]

    def to_csv(self) -> str:
        """Long-format CSV: one row per (frame, object)."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["frame_index", "valid", "object_id", "projected", "visible", "evidence", "x0", "y0", "x1", "y1"])
        for fi, f in enumerate(self.frame_index):
            for oi, oid in enumerate(self.object_ids):
                b = self.bbox[fi, oi]
                w.writerow([int(f), int(self.valid[fi]), oid, _fmt(self.projected[fi, oi]),
                            _fmt(self.visible[fi, oi]), _fmt(self.evidence[fi, oi])] + [_fmt(x, int_=True) for x in b])
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
    nested: a solid-box z-buffer lets a container's box hide what stands inside it. A scene
    with moving objects (``scene.dynamic``) prefers ``depth`` to the mesh when it has depth
    frames: the mesh is static (moving boxes are tested against it, not against each other),
    while each depth frame observes the moving objects where they are at that frame.
    Any other value is checked against what the scene has and returned as is. A 2D scene
    (vistest.tracks2d) takes ``auto`` or ``none`` only, and gets ``none``.
    """
    if occlusion not in OCCLUSION_CHOICES:
        raise InputError(f"occlusion: expected one of {', '.join(OCCLUSION_CHOICES)}, got {occlusion!r}")
    if scene.tracks2d is not None:  # 2D regions are what shows (vistest.visibility.tracks2d)
        if occlusion not in ("auto", "none"):
            raise InputError(f"{scene.source}: occlusion: a 2D scene's regions are what shows (no boxes, depth or "
                             f"mesh to occlude them): expected auto or none, got {occlusion!r}")
        return "none", "a 2D scene: the annotated regions are what shows"
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
    if has_depth and faces and scene.dynamic:
        return "depth", (f"objects move: the scene's depth frames observe them where they are, its mesh "
                         f"({scene.mesh}) is static")
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
    ``mesh``: the mesh file (and its per-vertex object ids); ``depth``: every frame's depth image;
    ``boxes``, ``none``: none.
    A cached table is reused only while these are unchanged (vistest.pipeline.visibility_key):
    a mesh fixed or depth images re-exported beside an unchanged scene.json change the table."""
    def path(rel: str) -> Path:  # as scene.json names it: a linked folder is not resolved (its copy keys alike)
        return Path(os.path.normpath(os.path.abspath(Path(scene.root) / rel)))

    if occlusion == "mesh":
        return (path(scene.mesh),) + ((path(scene.mesh_objects),) if scene.mesh_objects else ())
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
                       progress: bool = False, cull_back: bool = False) -> Visibility:
    """Frames x objects visibility of ``scene`` (see the module docstring for definitions).

    ``occlusion``: ``auto`` (default: :func:`choose_occlusion`: mesh, else depth, else
    boxes), ``none`` (evidence = projected), ``boxes`` (boxes hide each other, not what
    they contain), ``depth`` (only the frame's depth image hides a box: where it is
    nearer than the box's entry surface by more than ``depth_tol`` metres; missing depth
    counts as visible), ``mesh`` (as ``depth``, with depth z-buffered from ``scene.mesh``
    at the working resolution by :mod:`vistest.visibility.zbuffer`; with
    ``scene.mesh_objects``, ``visible`` is each object's instance share).
    ``params["occlusion"]`` records the mode used, ``params["visible"]`` what ``visible`` is.
    ``scale``: working resolution as a fraction of the native one (0 < scale <= 1);
    None: :func:`default_scale` (a 160-sample grid on the longer side).
    ``near``: near plane in metres. Frames are processed ``chunk`` at a time (memory
    stays bounded; the progress bar advances per chunk). ``cull_back``: the mesh's faces
    turned away from the camera hide nothing (default False: a scan mesh is two-sided).
    Objects of a labelled mesh with no vertex in it fall back to ``visible = evidence``:
    listed in ``params["box_fallback"]`` and in one warning line on stderr.
    In a static scene, frames with the same pose, intrinsics and depth image (the held frames of
    ``vistest import --video-from-frames``, which repeat a photo) are computed once and their row copied.
    """
    if scene.tracks2d is not None:  # a 2D scene: the annotated regions (docs/tracks2d.md)
        from .tracks2d import tracks2d_visibility

        choose_occlusion(scene, occlusion)  # auto or none; another mode: its InputError
        return Visibility(**tracks2d_visibility(scene))
    from . import raster
    from .compile import ensure_compiled
    from ..progress import progress_bar

    first: dict = {}
    same = [first.setdefault((f.camera_to_world.tobytes() if f.valid else None, repr(f.intrinsics), f.depth), i)
            for i, f in enumerate(scene.frames)]
    if len(first) < len(same) and not scene.dynamic:
        once = sorted(first.values())
        vis = compute_visibility(dataclasses.replace(scene, frames=tuple(scene.frames[i] for i in once)), occlusion,
                                 scale, near, depth_tol, chunk, progress, cull_back)
        rows = np.searchsorted(once, same)
        return dataclasses.replace(vis, projected=vis.projected[rows], visible=vis.visible[rows],
                                   evidence=vis.evidence[rows], bbox=vis.bbox[rows], valid=vis.valid[rows],
                                   frame_index=np.array([f.index for f in scene.frames], np.int64))
    occlusion, _ = choose_occlusion(scene, occlusion)
    if scale is None:
        scale = default_scale(scene.image_size)
    if not (0.0 < scale <= 1.0):
        raise InputError(f"scale: expected 0 < scale <= 1, got {scale!r}")
    if not (near > 0.0):
        raise InputError(f"near: expected a positive distance in metres, got {near!r}")

    w, h = scene.image_size
    ws, hs = max(1, round(w * scale)), max(1, round(h * scale))
    ensure_compiled(occlusion, WARM)  # a first run says that it compiles, and for how long (issue #47)
    if not scene.dynamic:  # one geometry for every frame
        geom_all, corners, rots, contains = box_geometry(scene, None, occlusion == "boxes")
    nf, no = len(scene.frames), len(scene.objects)
    projected = np.full((nf, no), np.nan)
    evidence = np.full((nf, no), np.nan)
    bbox = np.full((nf, no, 4), np.nan)
    valid = np.array([f.valid for f in scene.frames], bool)
    mesh = load_scene_mesh(scene) if occlusion == "mesh" else None
    instance = None
    if mesh is not None and mesh.labelled:
        instance = np.full((nf, no), np.nan)
    with progress_bar(nf, f"visibility {scene.scene_id} ({occlusion})", enabled=progress) as bar:
        for s in range(0, nf, chunk):
            frames = scene.frames[s:s + chunk]
            w2c, kin = frame_cameras(scene, frames)
            depth = np.zeros((0, 0))
            if occlusion == "depth":
                depth = depth_samples(scene, frames, ws, hs)
            elif occlusion == "mesh":
                depth, counts = mesh.render(w2c, kin, valid[s:s + chunk], (w, h), (ws, hs), near, cull_back)
                if instance is not None:
                    instance[s:s + chunk] = np.where(valid[s:s + chunk, None], counts / float(ws * hs), np.nan)
            if scene.dynamic:  # the boxes at each frame of the chunk
                geom, corners, rots, contains = box_geometry(scene, frames, occlusion == "boxes")
            else:
                geom = geom_all[:len(frames)]
            raster.visibility_kernel(w2c, kin, valid[s:s + chunk], geom, corners, rots, w, h, ws, hs, near,
                                     occlusion != "none", depth, depth_tol, contains,
                                     projected[s:s + chunk], evidence[s:s + chunk], bbox[s:s + chunk])
            bar.update(len(frames))
    params = {"occlusion": occlusion, "scale": float(scale), "near": float(near), "depth_tol": float(depth_tol),
              "working_size": [ws, hs], "visible": "box", "rules": freshness.stamp("visibility table")}
    if occlusion == "boxes":
        params["contain_share"] = CONTAIN_SHARE
    if occlusion == "mesh":
        params["cull_back"] = bool(cull_back)
    tracked = np.array([o.track is not None for o in scene.objects], bool)
    if tracked.any():
        params["tracked"] = [o.id for o in scene.objects if o.track is not None]
    visible = evidence
    if instance is not None:
        fallback = [scene.objects[o].id for o in range(no) if not mesh.present[o] and not tracked[o]]
        visible = np.where(mesh.present[None, :], np.minimum(instance, evidence), evidence)
        params["visible"] = "instance"
        params["box_fallback"] = fallback
        if fallback:
            sys.stderr.write(f"vistest: warning: {scene.source}: {len(fallback)} object(s) have no vertex in "
                             f"{scene.mesh_objects} (absent from the reconstruction): their visible share is the "
                             f"box bound: {', '.join(fallback)}\n")
    return Visibility(scene_id=scene.scene_id, projected=projected, visible=visible, bbox=bbox,
                      object_ids=np.array(scene.object_ids, dtype=str),
                      frame_index=np.array([f.index for f in scene.frames], np.int64), valid=valid, params=params,
                      source=scene.source, evidence=evidence)


def box_geometry(scene, frames, boxes_rule: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The box geometry :func:`vistest.visibility.raster.visibility_kernel` takes: ``(geom (F,) int64,
    corners (G, O, 8, 3), axes (G, O, 3, 3), contains (G or 0, O, O) bool)`` in the pose world.

    ``frames`` None: the static poses (``Scene.world_boxes``), one row (G = 1) for any number of
    frames (``geom`` then has one zero per frame of the scene). Else a row per frame of ``frames``: the
    boxes at that frame (``Scene.world_boxes_at``; an absent box has NaN corners). ``contains``:
    the ``boxes`` rule's pairs (:func:`containment`) of each row among its present boxes when
    ``boxes_rule``; no rows when no pair is contained anywhere."""
    no = len(scene.objects)
    if frames is None:
        rows = [scene.world_boxes() + (np.ones(no, bool),)]
        geom = np.zeros(len(scene.frames), np.int64)
    else:
        rows = [scene.world_boxes_at(f.index) for f in frames]
        geom = np.arange(len(frames), dtype=np.int64)
    corners = np.empty((len(rows), no, 8, 3))
    axes = np.empty((len(rows), no, 3, 3))
    contains = np.zeros((len(rows), no, no), bool)
    moving = np.array([o.track is not None for o in scene.objects], bool)
    still = None  # the static boxes' pairs: decided once (a pair's answer depends on its two boxes only)
    if boxes_rule and frames is not None and (~moving).any():
        c, sz, r = scene.world_boxes()
        still = np.flatnonzero(~moving)
        fixed = containment(c[still], sz[still], r[still])
    for g, (c, sz, r, present) in enumerate(rows):
        corners[g] = box_corners(c, sz, r)  # NaN where absent
        axes[g] = r
        if not boxes_rule or not present.any():
            continue
        idx = np.flatnonzero(present)
        if still is not None:  # only the moving boxes and the static ones whose bounds meet theirs
            contains[g][np.ix_(still, still)] = fixed
            idx = idx[moving[idx] | _meets(c, sz, r, idx, moving)]
        if len(idx):
            contains[g][np.ix_(idx, idx)] = containment(c[idx], sz[idx], r[idx])
    if not contains.any():
        contains = np.zeros((0, no, no), bool)
    return geom, corners, axes, contains


def _meets(c, sz, r, idx, moving) -> np.ndarray:
    """(len(idx),) bool: box idx[k]'s world-axis bounds overlap those of a moving box among ``idx``."""
    ext = (np.abs(r[idx]) @ (sz[idx, :, None] / 2.0))[..., 0]
    lo, hi = c[idx] - ext, c[idx] + ext
    m = moving[idx]
    if not m.any():
        return np.zeros(len(idx), bool)
    return ((lo[:, None] < hi[None, m]) & (hi[:, None] > lo[None, m])).all(axis=2).any(axis=1)


@dataclass(frozen=True, eq=False)
class SceneMesh:
    """A scene's triangle mesh for the z-buffer: ``verts`` (V, 3) float64 in the poses' world
    (metres), ``faces`` (T, 3) int32, ``face_obj`` (T,) int32 index of the scene object each face
    belongs to (-1: none), ``labelled`` (the scene gives per-vertex object ids), ``present`` (O,)
    bool (the object has at least one vertex in the mesh). Faces are kept in the z-buffer's
    culling order and the vertices copied per block to match (:func:`vistest.visibility.zbuffer.face_blocks`);
    ``blocks`` are their runs."""

    verts: np.ndarray
    faces: np.ndarray
    face_obj: np.ndarray
    labelled: bool
    present: np.ndarray
    blocks: np.ndarray

    def render(self, w2c, kin, valid, size, work, near, cull_back=False) -> tuple[np.ndarray, np.ndarray]:
        """z-depth (F, hs*ws) in metres (0: none) and per-object sample counts (F, O) of the
        frames ``w2c``/``kin``/``valid`` (:func:`frame_cameras`) on the working grid ``work``."""
        import numba

        from .zbuffer import zbuffer_kernel

        (w, h), (ws, hs) = size, work
        nf, no = len(w2c), len(self.present)
        depth = np.empty((nf, ws * hs))
        counts = np.empty((nf, no), np.int64)
        zbuffer_kernel(self.verts, self.faces, self.face_obj, no, self.blocks, w2c, kin, np.asarray(valid, bool),
                       w, h, ws, hs, float(near), bool(cull_back), depth, counts, 4 * numba.get_num_threads())
        return depth, counts


def read_mesh(path) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (V, 3) float64 in file order (no merging: per-vertex ids stay aligned) and
    triangles (T, 3) int64 of a mesh file; InputError naming the file when it is not one.
    A binary PLY of triangles (ScanNet's, trimesh's exports) is read directly with numpy
    (:func:`read_binary_ply`); anything else with trimesh."""
    got = read_binary_ply(path)
    if got is None:
        import trimesh

        try:
            mesh = trimesh.load(str(path), force="mesh", process=False)
        except Exception as e:  # trimesh raises many types for bad files
            raise InputError(f"{path}: mesh: cannot read it ({e}); expected a triangle mesh file") from None
        got = (np.asarray(mesh.vertices), np.asarray(getattr(mesh, "faces", np.zeros((0, 3)))))
    verts, faces = np.ascontiguousarray(got[0], np.float64), np.ascontiguousarray(got[1], np.int64)
    if faces.ndim != 2 or faces.shape[1] != 3 or len(faces) == 0:
        raise InputError(f"{path}: mesh: expected a triangle mesh with at least one face")
    return verts, faces


PLY_TYPES = {"char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1", "short": "i2", "int16": "i2",
             "ushort": "u2", "uint16": "u2", "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4",
             "float": "f4", "float32": "f4", "double": "f8", "float64": "f8"}


def read_binary_ply(path) -> tuple[np.ndarray, np.ndarray] | None:
    """(vertices, faces) of a binary PLY holding exactly a ``vertex`` element (with x, y, z) and
    then a ``face`` element whose first property is the index list, every face a triangle; None
    for any other file (the caller falls back to trimesh)."""
    try:
        with open(path, "rb") as fh:
            if fh.readline().strip() != b"ply":
                return None
            fmt, elements = None, []
            for _ in range(1000):
                words = fh.readline().decode("ascii", "replace").split()
                if not words or words[0] in ("comment", "obj_info"):
                    continue
                if words[0] == "end_header":
                    break
                if words[0] == "format":
                    fmt = {"binary_little_endian": "<", "binary_big_endian": ">"}.get(words[1])
                elif words[0] == "element":
                    elements.append((words[1], int(words[2]), []))
                elif words[0] == "property" and elements:
                    elements[-1][2].append(words[1:])
            else:
                return None
            if fmt is None or [e[0] for e in elements] != ["vertex", "face"]:
                return None
            (_, nv, vprops), (_, nf, fprops) = elements
            if any(p[0] == "list" or p[0] not in PLY_TYPES for p in vprops) or not fprops or fprops[0][0] != "list":
                return None
            vdt = np.dtype([(p[1], fmt + PLY_TYPES[p[0]]) for p in vprops])
            if not {"x", "y", "z"} <= set(vdt.names):
                return None
            count_t, index_t = PLY_TYPES.get(fprops[0][1]), PLY_TYPES.get(fprops[0][2])
            if count_t is None or index_t is None or any(p[0] == "list" or p[0] not in PLY_TYPES for p in fprops[1:]):
                return None
            fdt = np.dtype([("n", fmt + count_t), ("v", fmt + index_t, (3,))]
                           + [(f"p{k}", fmt + PLY_TYPES[p[0]]) for k, p in enumerate(fprops[1:])])
            v = np.fromfile(fh, vdt, nv)
            f = np.fromfile(fh, fdt, nf)
    except (OSError, ValueError, IndexError):
        return None
    if len(v) != nv or len(f) != nf or (f["n"] != 3).any():
        return None
    return np.column_stack([v["x"], v["y"], v["z"]]), f["v"]


def read_mesh_objects(path, num_vertices: int, object_ids) -> np.ndarray:
    """Per-vertex object indices (V,) int32 from a ``mesh_objects`` file: UTF-8 text, one line
    per mesh vertex in the mesh's vertex order, holding the id of the object (scene.json
    ``objects[].id``) the vertex belongs to, or nothing (an empty line: walls, floor, any
    surface of no listed object). Ids not among ``object_ids`` count as no object (a scene
    whose object list was cut down keeps its labels). InputError on a wrong line count."""
    try:
        lines = Path(path).read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: mesh_objects: cannot read it ({e}); expected UTF-8 text, one object id per "
                         f"mesh vertex") from None
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != num_vertices:
        raise InputError(f"{path}: mesh_objects: {len(lines)} lines, expected one per mesh vertex "
                         f"({num_vertices})")
    index = {str(o): k for k, o in enumerate(object_ids)}
    names, inverse = np.unique(np.array([ln.strip() for ln in lines], dtype=str), return_inverse=True)
    lookup = np.array([index.get(str(n), -1) for n in names], np.int32)
    return lookup[inverse.reshape(-1)]


def load_scene_mesh(scene) -> SceneMesh:
    """The scene's mesh (:func:`read_mesh`) with its faces' objects from ``scene.mesh_objects``
    (:func:`read_mesh_objects`, :func:`vistest.visibility.zbuffer.face_objects`); unlabelled
    (every face -1) when the scene has none."""
    from .zbuffer import face_blocks, face_objects

    verts, faces = read_mesh(scene.path(scene.mesh))
    if faces.max() >= len(verts) or faces.min() < 0:
        raise InputError(f"{scene.path(scene.mesh)}: mesh: a face names a vertex that does not exist")
    no = len(scene.objects)
    vorder, sorted_faces, forder, blocks = face_blocks(verts, faces)
    nv, verts = len(verts), np.ascontiguousarray(verts[vorder])
    if scene.mesh_objects is None:
        return SceneMesh(verts, sorted_faces, np.full(len(faces), -1, np.int32), False, np.zeros(no, bool), blocks)
    vobj = read_mesh_objects(scene.path(scene.mesh_objects), nv, scene.object_ids)
    tracked = np.array([o.track is not None for o in scene.objects] + [False], bool)  # [-1]: no object
    vobj = np.where(tracked[vobj], -1, vobj).astype(np.int32)  # the static mesh holds no moving object
    present = np.zeros(no, bool)
    present[np.unique(vobj[vobj >= 0])] = True
    return SceneMesh(verts, sorted_faces, face_objects(faces, vobj)[forder], True, present, blocks)


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


def keyed_visibility(scene, occlusion: str, progress: bool, key: str) -> Visibility:
    """:func:`compute_visibility` with ``params["vistest_key"] = key``: what vistest.pipeline's
    child process computes (here, so that the child imports this stage only, issue #47)."""
    vis = compute_visibility(scene, occlusion=occlusion, progress=progress)
    return dataclasses.replace(vis, params={**vis.params, "vistest_key": key})


def child_visibility(scene, occlusion: str, progress: bool, key: str) -> Visibility:
    """:func:`keyed_visibility` in a process started for it alone (vistest.pipeline.isolated_visibility's
    child): Numba's target is set up first without its BLAS probe (:func:`skip_numba_blas_probe`), so the
    child never imports SciPy's linear algebra, which no kernel of this stage uses (issue #47)."""
    skip_numba_blas_probe()
    return keyed_visibility(scene, occlusion, progress, key)


def prepare_engine() -> None:
    """What :func:`child_visibility` needs before its scene is known: Numba's target set up
    (:func:`skip_numba_blas_probe`) and the kernels' modules imported. A child that vistest.launch
    starts with the ``vistest`` command (vistest.workers.prestart) runs it while the command reads its
    inputs (issue #47); the cached kernels themselves load at their first call."""
    skip_numba_blas_probe()
    from . import raster, zbuffer  # noqa: F401


def skip_numba_blas_probe() -> bool:
    """Set up Numba's CPU target (which imports every Numba implementation module) while
    ``scipy.linalg`` cannot be imported; True when it did, False when the target was already set up,
    SciPy's linear algebra already imported, or the set-up failed (then nothing changed: it happens
    on the first kernel call as usual).

    Why: Numba 0.68's ``numba/np/arraymath.py`` runs ``_HAVE_BLAS = _check_blas()`` at import, which
    calls ``numba/np/linalg.py``'s ``ensure_blas()``: ``import scipy.linalg.cython_blas`` and, in
    ``_check_lapack_int_width``, ``scipy.__config__``. That import is about 0.15-0.2 s of CPU (SciPy's
    array-API layer imports ``numpy.f2py``) in every process that loads a cached kernel, for a flag
    that only picks BLAS for ``np.convolve``/``np.correlate`` (arraymath's ``_get_inner_prod``: without
    it their inner product is a plain loop). The visibility kernels call neither, nor any other BLAS
    routine, and Numba's cache index does not depend on the flag, so their cached code and results are
    the same. ``scipy.linalg`` is importable again as soon as the target is set up (e.g. by trimesh
    reading a mesh). Only for a process that runs the visibility stage alone: in a user's session
    this would change what their own ``np.convolve`` kernels call."""
    if "scipy.linalg" in sys.modules or "numba.np.arraymath" in sys.modules:
        return False
    sys.modules["scipy.linalg"] = None  # importing it raises ImportError, which _check_blas catches
    try:
        from numba.core.registry import cpu_target

        cpu_target.target_context.refresh()
        return True
    except Exception:  # another Numba: its first kernel call sets the target up, as it always does
        return False
    finally:
        if sys.modules.get("scipy.linalg", 0) is None:
            del sys.modules["scipy.linalg"]


# The warm-up that compiles the kernels (vistest.visibility.compile): the real entry points on a tiny scene.

def _tiny_scene():
    """2 frames (the camera at the origin, OpenCV axes = world axes; one frame without a pose) x 3
    boxes 3 m ahead (the third inside the second), 32 x 24 pixels."""
    from ..scene import FORMAT, Scene

    eye = np.eye(4).tolist()
    boxes = [([-0.8, 0.0, 3.0], [0.6, 0.6, 0.6]), ([0.6, 0.0, 3.0], [1.0, 1.0, 1.0]), ([0.6, 0.0, 3.0], [0.3] * 3)]
    return Scene.from_dict({
        "format": FORMAT, "scene_id": "compile", "fps": 30.0, "image_size": [32, 24],
        "camera": {"fx": 24.0, "fy": 24.0, "cx": 15.5, "cy": 11.5},
        "frames": [{"index": 0, "time": 0.0, "camera_to_world": eye},
                   {"index": 1, "time": 1 / 30.0, "camera_to_world": None}],
        "objects": [{"id": str(i), "label": "box", "center": c, "size": sz, "rotation": np.eye(3).tolist()}
                    for i, (c, sz) in enumerate(boxes)]})


def _warm_boxes() -> None:
    """Every visibility mode's kernel (one specialisation) and the containment kernel."""
    compute_visibility(_tiny_scene(), occlusion="boxes")


def _warm_mesh() -> None:
    """The mesh z-buffer, through the calls :func:`~vistest.visibility.table.load_scene_mesh` and
    :meth:`~vistest.visibility.table.SceneMesh.render` make, on a unit cube's 12 triangles."""
    from .zbuffer import face_blocks

    verts = np.ascontiguousarray(box_corners(np.array([[0.0, 0.0, 3.0]]), np.ones((1, 3)), np.eye(3)[None])[0],
                                 np.float64)
    faces = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1], [2, 3, 7], [2, 7, 6],
                      [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]], np.int64)
    vorder, sorted_faces, _forder, blocks = face_blocks(verts, faces)
    mesh = SceneMesh(np.ascontiguousarray(verts[vorder]), sorted_faces, np.full(len(faces), -1, np.int32), False,
                     np.zeros(1, bool), blocks)
    scene = _tiny_scene()
    w2c, kin = frame_cameras(scene, scene.frames)
    mesh.render(w2c, kin, [f.valid for f in scene.frames], scene.image_size, (16, 12), 0.05)


WARM: dict[str, tuple[str, Any]] = {
    "boxes": ("box silhouettes and occlusion", _warm_boxes),
    "mesh": ("mesh z-buffer", _warm_mesh),
}
"""The compile steps' warm-ups (vistest.visibility.compile: a step's description and the call that
compiles its kernels), run by ``vistest compile``, ``make setup`` and a first run."""
