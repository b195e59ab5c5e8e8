"""Audit: do a scene's boxes, poses and intrinsics agree with what the sensors saw?

Two kinds of evidence, both in the *pose world* (metres, +Z up):

* **Depth frames** (``frames[i].depth``): each audited frame's depth is looked up on a
  working grid of colour-camera rays (vistest.visibility.table.depth_samples: through the
  depth camera, nearest pixel) and back-projected with the frame's pose into world points.
  Per frame and box, the box's *visible silhouette* (grid rays whose nearest box is
  this one; boxes are solids) is compared with the depth: a ray *agrees* when the
  measured z-depth lies within the box's entry/exit depth +- ``depth_tol``. A box is
  *seen* in a frame when its silhouette holds at least ``seen_share`` of the grid and
  ``min_samples`` rays with depth; a sighting is *contradicted* when fewer than
  ``agree_min`` of those rays agree (something is far in front of or behind the box
  everywhere in its silhouette). A box that contains the camera is not judged there.
* **Mesh or point cloud** (``mesh``): surface samples (or the points) of the file.
  A mesh lives in the pose world and does not depend on the cameras, so on its own it
  cannot test pose conventions.
* **Colour** (``colour``): when the mesh or point cloud has colours (per vertex, per
  face, per point) and the audited frames have images (``frames[i].image`` files, else
  the scene's video), the coloured surface points are projected through each frame's pose
  and intrinsics, z-buffered per cell of a coarse grid (the nearest surface in a cell
  wins) and compared with the image averaged over the same cells: Spearman rank
  correlation per colour channel, averaged (:func:`colour_consistency`). Ranks make it
  robust to exposure and white balance. Only the right pose, axes and intrinsics make the
  colours line up, so colour tests pose and intrinsics conventions without depth frames.

Per box, against the union of the observed points:

* ``near_dist``: distance from the box (a solid) to the nearest observed point, 0 if a
  point lies inside (ReSTI's check: STI-Bench's released centres sat a median 2.61 m
  from the nearest physical object);
* ``surface_dist``: median, over points sampled on the box's six faces, of the distance
  to the nearest observed point: how well the box hugs observed surfaces.

**Hypotheses**: the same checks re-run under each plausible convention error, applied
as a fix to the scene: ``boxes_to_world`` inverted or dropped, each known alignment
matrix (from ``provenance.json`` beside the scene, written by ``vistest import``, or
``--alignment``) applied or inverted, box rotations transposed, poses inverted
(world-to-camera given as camera-to-world), OpenGL camera axes (``c2w @ diag(1,-1,-1,1)``),
intrinsics for another resolution (scaled to the frames: the resolution the principal
point implies, the depth images', half and double). Pose and intrinsics hypotheses need
depth frames or colour evidence. Each gets a score = ``median surface_dist /
surface_dist_m + contradicted share / contradicted_share + (1 - colour) / (1 -
colour_min)`` (the terms it has evidence for; with depth frames, a hypothesis under which
no box is ever seen counts as fully contradicted); the lowest wins.

**Verdict** (thresholds in :class:`Thresholds`, documented in docs/audit.md): the scene
fails when, as given, the median ``surface_dist`` exceeds ``surface_dist_m``, or more
than ``far_share`` of the boxes are farther than ``far_dist_m`` from every observed
point, or more than ``contradicted_share`` of sightings are contradicted, or the median
colour correlation is below ``colour_min``, or a hypothesis scores ``better_factor`` times
better (with an absolute gain of at least ``min_gain_m`` in surface distance or
``min_gain_share`` in contradicted share), or scores better with a colour correlation at
least ``colour_min`` and ``min_gain_colour`` above the scene's.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Iterable

import numpy as np

from ..errors import InputError
from ..geometry import CV_TO_GL, rigid_inverse
from ..jsonl import read_text
from ..progress import progress_bar
from ..scene import Frame, Scene

RATIO_FLOOR_M = 0.01  # distances below this are noise: ratios use max(d, 1 cm)
RATIO_FLOOR_SHARE = 0.01


@dataclass(frozen=True)
class Thresholds:
    """Pass/fail limits (see the module docstring and docs/audit.md)."""

    surface_dist_m: float = 0.15
    far_dist_m: float = 0.5
    far_share: float = 0.2
    contradicted_share: float = 0.25
    better_factor: float = 2.0
    min_gain_m: float = 0.02
    min_gain_share: float = 0.10
    colour_min: float = 0.25
    min_gain_colour: float = 0.20


@dataclass(frozen=True)
class CheckParams:
    """How the evidence is sampled. ``grid``: longer side of the working ray grid;
    ``max_frames``: frames audited (evenly spaced valid frames); ``voxel``: metres,
    down-sampling of observed points; ``mesh_samples``: points sampled on a mesh.
    Colour: ``colour_points`` coloured surface points at most (a seeded subset);
    ``colour_grid`` cells on the image's longer side; a cell counts when a
    surface point falls in it; the points within ``colour_window`` (a fraction of the
    depth, plus 3 cm) of the cell's nearest point are averaged; a frame needs
    ``colour_min_cells`` such cells, else its correlation counts as 0."""

    depth_tol: float = 0.10
    seen_share: float = 0.01
    min_samples: int = 8
    agree_min: float = 0.05
    grid: int = 96
    max_frames: int = 60
    voxel: float = 0.02
    mesh_samples: int = 200_000
    near: float = 0.05
    colour_grid: int = 32
    colour_points: int = 100_000
    colour_window: float = 0.05
    colour_min_cells: int = 20


@dataclass(frozen=True)
class Hypothesis:
    """A convention fix to try: ``boxes_to_world`` replaced (None: kept), box rotations
    transposed, poses changed (``None``, ``"inverted"`` or ``"opengl"``), intrinsics
    scaled by ``intrinsics_scale`` (sx, sy) (``Intrinsics.scaled``: they were for
    another resolution)."""

    name: str
    fix: str
    boxes_to_world: np.ndarray | None = None
    transpose: bool = False
    pose: str | None = None
    intrinsics_scale: tuple[float, float] | None = None


@dataclass(frozen=True)
class ObjectFit:
    """One box under one hypothesis: distances in metres, sighting counts."""

    id: str
    label: str
    near_dist: float
    surface_dist: float
    seen: int
    contradicted: int


@dataclass(frozen=True)
class Fit:
    """All boxes under one hypothesis; NaN where the evidence is missing."""

    name: str
    fix: str
    surface_dist: float
    far_share: float
    contradicted_share: float
    sightings: int
    score: float
    objects: tuple[ObjectFit, ...] = ()
    colour: float = float("nan")
    colour_frames: tuple[float, ...] = ()


@dataclass(frozen=True)
class AuditReport:
    """The audit of one scene: ``fits[0]`` is the scene as given."""

    scene_id: str
    evidence: tuple[str, ...]
    frames_audited: int
    thresholds: Thresholds
    fits: tuple[Fit, ...]
    best: str
    passed: bool
    failures: tuple[str, ...]
    message: str

    @property
    def as_is(self) -> Fit:
        return self.fits[0]

    def fit(self, name: str) -> Fit:
        return next(f for f in self.fits if f.name == name)

    def to_dict(self) -> dict:
        """JSON-ready dict (NaN -> None)."""
        def clean(x):
            if isinstance(x, float):
                return None if not np.isfinite(x) else round(x, 6)
            if isinstance(x, dict):
                return {k: clean(v) for k, v in x.items()}
            if isinstance(x, (list, tuple)):
                return [clean(v) for v in x]
            return x
        return clean({"format": "vistest.audit/1", "scene_id": self.scene_id, "passed": self.passed,
                      "message": self.message, "failures": list(self.failures), "best": self.best,
                      "evidence": list(self.evidence), "frames_audited": self.frames_audited,
                      "thresholds": asdict(self.thresholds), "fits": [asdict(f) for f in self.fits]})

    def text(self, per_object: bool = False) -> str:
        """Human-readable report: verdict, the hypothesis table, optionally per object."""
        lines = [f"{self.scene_id}: {'PASS' if self.passed else 'FAIL'} - {self.message}",
                 f"evidence: {', '.join(self.evidence)}; {self.frames_audited} frames audited", "",
                 f"{'hypothesis':<34} {'surface m':>9} {'far':>6} {'contra':>7} {'seen':>6} {'colour':>7} "
                 f"{'score':>7}"]
        for f in self.fits:
            mark = "*" if f.name == self.best else " "
            lines.append(f"{mark}{f.name:<33} {_num(f.surface_dist, '.3f'):>9} {_num(f.far_share, '.0%'):>6} "
                         f"{_num(f.contradicted_share, '.0%'):>7} {f.sightings:>6} {_num(f.colour, '.2f'):>7} "
                         f"{_num(f.score, '.2f'):>7}")
        if self.failures:
            lines += [""] + [f"- {x}" for x in self.failures]
        if per_object:
            lines += ["", f"{'object':<16} {'label':<16} {'near m':>7} {'surface m':>9} {'seen':>5} {'contra':>6}"]
            for o in self.as_is.objects:
                lines.append(f"{o.id:<16} {o.label[:16]:<16} {_num(o.near_dist, '.3f'):>7} "
                             f"{_num(o.surface_dist, '.3f'):>9} {o.seen:>5} {o.contradicted:>6}")
        return "\n".join(lines) + "\n"


def _num(x: float, fmt: str) -> str:
    return "-" if not np.isfinite(x) else format(x, fmt)


# ---------------------------------------------------------------------------------------
# hypotheses
# ---------------------------------------------------------------------------------------
def hypotheses(scene: Scene, alignments: Iterable[tuple[str, np.ndarray]] = (), poses: bool = True
               ) -> list[Hypothesis]:
    """The scene as given, then every plausible single convention error's fix.

    ``poses``: include the pose and intrinsics fixes (only depth frames or colour evidence
    can tell them apart: a mesh lives in the pose world and does not depend on the cameras)."""
    a = np.asarray(scene.boxes_to_world, float)
    out = [Hypothesis("as given", "nothing")]
    seen = [a]

    def add_b2w(name: str, fix: str, m: np.ndarray) -> None:
        if not any(np.allclose(m, s, atol=1e-6) for s in seen):
            seen.append(m)
            out.append(Hypothesis(name, fix, boxes_to_world=m))

    if not np.allclose(a, np.eye(4), atol=1e-9):
        add_b2w("boxes_to_world inverted", "use the inverse of boxes_to_world", rigid_inverse(a))
        add_b2w("boxes_to_world dropped", "drop boxes_to_world (boxes already in the pose world)", np.eye(4))
    for name, m in alignments:
        m = np.asarray(m, float)
        add_b2w(f"inverse({name}) as boxes_to_world",
                f"set boxes_to_world = inverse({name}): the boxes are in the aligned world, the poses are not",
                rigid_inverse(m))
        add_b2w(f"{name} as boxes_to_world", f"set boxes_to_world = {name}", m)
    out.append(Hypothesis("rotation transposed", "transpose every box rotation (rows were read as columns)",
                          transpose=True))
    if poses:
        out.append(Hypothesis("pose inverted", "invert every pose (they are world-to-camera)", pose="inverted"))
        out.append(Hypothesis("OpenGL camera axes", "convert poses from OpenGL axes: c2w @ diag(1, -1, -1, 1)",
                              pose="opengl"))
        out += intrinsics_hypotheses(scene)
    return out


def intrinsics_hypotheses(scene: Scene) -> list[Hypothesis]:
    """Intrinsics given for another resolution than the frames' ``image_size`` (W, H): the
    one the principal point implies (``2 (cx + 0.5)`` x ``2 (cy + 0.5)``, when it is more than
    10% off), the depth images' (when they differ), and half and double. Each fix scales K
    to (W, H) with :meth:`Intrinsics.scaled`; scales within 2% of 1 or of one already listed
    are skipped."""
    w, h = scene.image_size
    k = scene.camera
    cands = [(round(2 * (k.cx + 0.5)), round(2 * (k.cy + 0.5)))]
    if scene.depth is not None and scene.depth.image_size is not None:
        cands.append(tuple(scene.depth.image_size))
    cands += [(2 * w, 2 * h), (max(1, w // 2), max(1, h // 2))]
    out, scales = [], []
    for cw, ch in cands:
        if cw <= 0 or ch <= 0:
            continue
        sx, sy = w / cw, h / ch
        if max(abs(sx - 1), abs(sy - 1)) < 0.1 or any(abs(sx - a) < 0.02 * a and abs(sy - b) < 0.02 * b
                                                      for a, b in scales):
            continue
        scales.append((sx, sy))
        out.append(Hypothesis(f"intrinsics for {cw}x{ch}",
                              f"scale the intrinsics from {cw}x{ch} to the frames' {w}x{h} (they were for another "
                              f"resolution)", intrinsics_scale=(sx, sy)))
    return out


def apply(scene: Scene, h: Hypothesis) -> Scene:
    """``scene`` with hypothesis ``h``'s fix applied (a new Scene; the input is unchanged)."""
    objects = scene.objects
    if h.transpose:
        objects = tuple(replace(o, rotation=o.rotation.T.copy()) for o in objects)
    frames = scene.frames
    if h.pose is not None:
        frames = tuple(f if f.camera_to_world is None
                       else replace(f, camera_to_world=_pose_fix(f.camera_to_world, h.pose)) for f in frames)
    camera = scene.camera
    if h.intrinsics_scale is not None:
        sx, sy = h.intrinsics_scale
        camera = camera.scaled(sx, sy)
        frames = tuple(replace(f, intrinsics=f.intrinsics.scaled(sx, sy)) if f.intrinsics is not None else f
                       for f in frames)
    b2w = scene.boxes_to_world if h.boxes_to_world is None else h.boxes_to_world
    return replace(scene, objects=objects, frames=frames, camera=camera, boxes_to_world=np.asarray(b2w, float))


def _pose_fix(c2w: np.ndarray, how: str) -> np.ndarray:
    if how == "inverted":
        return rigid_inverse(c2w)
    if how == "opengl":
        return np.asarray(c2w, float) @ CV_TO_GL
    raise ValueError(f"pose: expected 'inverted' or 'opengl', got {how!r}")


def load_alignments(path: str | os.PathLike) -> list[tuple[str, np.ndarray]]:
    """Named alignment matrices from a file: a ScanNet ``sceneXXXX_XX.txt``
    (``axisAlignment``), a ``provenance.json`` (its ``alignments``), a JSON 4x4, or a
    text file of 16 numbers (row-major)."""
    from ..datasets import scannet
    from ..datasets.common import AdapterError, read_json

    path = Path(path)
    if path.suffix == ".json":
        doc = read_json(path, "alignment")
        try:
            if isinstance(doc, dict) and "alignments" in doc:
                return [(str(a["name"]), _matrix4(a["matrix"])) for a in doc["alignments"]]
            m = np.asarray(doc, float)
        except (KeyError, TypeError, ValueError) as e:
            raise AdapterError(f"{path}: alignments: expected [{{name, matrix (4x4 numbers)}}, ...] or a JSON 4x4 "
                               f"matrix ({type(e).__name__}: {e})") from None
        if m.shape != (4, 4):
            raise AdapterError(f"{path}: expected a 4x4 matrix or a provenance.json, got shape {list(m.shape)}")
        return [(path.stem, m)]
    text = read_text(path, AdapterError, "alignment")
    if "axisAlignment" in text:
        m = scannet.axis_alignment(scannet.read_info(path), path)
        return [("axisAlignment", m)]
    try:
        vals = [float(x) for x in text.split()]
    except ValueError:
        raise AdapterError(f"{path}: expected axisAlignment = ..., a JSON 4x4 or 16 numbers") from None
    if len(vals) != 16:
        raise AdapterError(f"{path}: expected 16 numbers (a 4x4 matrix), got {len(vals)}")
    return [(path.stem, np.array(vals).reshape(4, 4))]


def _matrix4(v) -> np.ndarray:
    m = np.asarray(v, float)
    if m.shape != (4, 4):
        raise ValueError(f"matrix: expected 4x4, got shape {list(m.shape)}")
    return m


def provenance_alignments(scene_path: str | os.PathLike) -> list[tuple[str, np.ndarray]]:
    """Alignments recorded by ``vistest import`` in ``provenance.json`` beside the scene."""
    p = Path(scene_path).parent / "provenance.json"
    return load_alignments(p) if p.is_file() else []


# ---------------------------------------------------------------------------------------
# evidence
# ---------------------------------------------------------------------------------------
@dataclass
class Evidence:
    """Per audited frame: depth on the working grid (F, N) metres (0 = none) or None;
    mesh points (M, 3) or None; the grid and frame choice. Colour: surface points
    (C, 3) and their RGB (C, 3) 0-255, and per audited frame its image averaged over the
    colour grid (ch, cw, 3), or None (no colours, or no image for that frame)."""

    frames: tuple[Frame, ...]
    ws: int
    hs: int
    depth: np.ndarray | None
    mesh_points: np.ndarray | None
    colour_points: np.ndarray | None = None
    colour_values: np.ndarray | None = None
    images: tuple[np.ndarray | None, ...] = ()


def _audit_frames(scene: Scene, params: CheckParams) -> tuple[Frame, ...]:
    """Up to ``max_frames`` evenly spaced valid frames (with depth when the scene has depth), each
    observation once: a frame with the same image or depth file and pose as the one before it (a held
    frame of ``--video-from-frames``, which is its photo) is left out."""
    cands, last = [], None
    for f in scene.frames:
        if f.valid and (f.depth is not None or not any(g.depth for g in scene.frames)):
            key = (f.image, f.depth, f.camera_to_world.tobytes())
            if key != last or (f.image is None and f.depth is None):
                cands.append(f)
            last = key
    if len(cands) <= params.max_frames:
        return tuple(cands)
    pick = np.unique(np.linspace(0, len(cands) - 1, params.max_frames).round().astype(int))
    return tuple(cands[i] for i in pick)


def _grid(scene: Scene, params: CheckParams) -> tuple[int, int]:
    w, h = scene.image_size
    s = min(1.0, params.grid / max(w, h))
    return max(1, round(w * s)), max(1, round(h * s))


def surface_points(path, samples: int = 200_000) -> tuple[np.ndarray, np.ndarray | None]:
    """Points of a mesh or point cloud file, and their RGB colours (0-255) or None.

    A mesh gives its vertices plus ``samples`` area-uniform surface samples (seeded):
    colours interpolated from vertex colours (barycentric) or taken from face colours,
    where the file defines them (for face colours the vertices, shared by faces of
    different colours, are left out of the coloured set). A point cloud gives its points
    and their colours.
    """
    import trimesh

    try:
        geom = trimesh.load(str(path), process=False)
    except Exception as e:  # trimesh raises many types for bad files
        raise InputError(f"{path}: mesh: cannot read it ({e})") from None
    if isinstance(geom, trimesh.Scene):
        geom = geom.to_geometry() if hasattr(geom, "to_geometry") else geom.dump(concatenate=True)
    verts = np.asarray(getattr(geom, "vertices", np.zeros((0, 3))), float)
    if len(verts) == 0:
        raise InputError(f"{path}: mesh: expected a mesh or point cloud with vertices")
    if isinstance(geom, trimesh.PointCloud):
        cols = np.asarray(geom.colors)
        return verts, (cols[:, :3].astype(float) if len(cols) == len(verts) else None)
    if not isinstance(geom, trimesh.Trimesh) or len(geom.faces) == 0:
        return verts, None
    pts, face = trimesh.sample.sample_surface(geom, samples, seed=0)
    pts = np.asarray(pts, float)
    visual = geom.visual
    kind = getattr(visual, "kind", None) if getattr(visual, "defined", False) else None
    if kind == "vertex":
        bary = trimesh.triangles.points_to_barycentric(geom.triangles[face], pts)
        vc = np.asarray(visual.vertex_colors)[:, :3].astype(float)
        cols = np.einsum("nk,nkc->nc", bary, vc[geom.faces[face]])
        return np.concatenate([verts, pts]), np.concatenate([vc, cols])
    if kind == "face":
        # only the samples carry colour; vertices first, then samples, colours aligned to the samples
        return np.concatenate([pts, verts]), np.concatenate([np.asarray(visual.face_colors)[face, :3].astype(float),
                                                             np.full((len(verts), 3), np.nan)])
    return np.concatenate([verts, pts]), None


def gather_evidence(scene: Scene, use_depth: bool, use_mesh: bool, params: CheckParams,
                    use_colour: bool = True) -> Evidence:
    """The :class:`Evidence` :func:`audit_scene` checks ``scene`` against: its audited frames
    and grid, depth samples (``use_depth`` and the scene has depth), mesh points (``use_mesh``
    and it has a mesh) and, with ``use_colour``, the mesh's colours and the frames' images
    (for :func:`colour_scores`)."""
    from ..visibility.table import depth_samples

    frames = _audit_frames(scene, params)
    ws, hs = _grid(scene, params)
    depth = None
    if use_depth and any(f.depth for f in frames):
        depth = depth_samples(scene, frames, ws, hs)
    if not (use_mesh and scene.mesh is not None):
        return Evidence(frames, ws, hs, depth, None)
    points, colours = surface_points(scene.path(scene.mesh), params.mesh_samples)
    ev = Evidence(frames, ws, hs, depth, points)
    if use_colour and colours is not None:
        keep = np.flatnonzero(np.isfinite(colours).all(axis=1))
        if len(keep) > params.colour_points:
            keep = np.sort(np.random.default_rng(0).choice(keep, params.colour_points, replace=False))
        images = frame_images(scene, frames, colour_grid(scene.image_size, params.colour_grid))
        if any(im is not None for im in images):
            ev = replace(ev, colour_points=points[keep], colour_values=colours[keep], images=images)
    return ev


# ---------------------------------------------------------------------------------------
# colour evidence
# ---------------------------------------------------------------------------------------
def colour_grid(image_size: tuple[int, int], cells: int) -> tuple[int, int]:
    """(cw, ch): the colour grid, ``cells`` on the image's longer side, same aspect."""
    w, h = image_size
    s = cells / max(w, h)
    return max(1, round(w * s)), max(1, round(h * s))


def frame_images(scene: Scene, frames: tuple[Frame, ...], grid: tuple[int, int]) -> tuple[np.ndarray | None, ...]:
    """Each frame's RGB image averaged over the colour grid (ch, cw, 3) float, from
    ``frames[i].image`` when set, else decoded from the scene's video (None when neither)."""
    import cv2

    out: dict[int, np.ndarray] = {}
    for f in frames:
        if f.image is not None:
            img = cv2.imread(str(scene.path(f.image)), cv2.IMREAD_COLOR)
            if img is None:
                raise InputError(f"{scene.path(f.image)}: frames[{f.index}].image: cannot read the image")
            out[f.index] = cv2.resize(img[:, :, ::-1], grid, interpolation=cv2.INTER_AREA).astype(float)
    rest = [f.index for f in frames if f.index not in out]
    if rest and scene.video is not None:
        from ..videos.ffmpeg import read_frames

        for idx, img in zip(rest, read_frames(scene.path(scene.video), rest)):
            out[idx] = cv2.resize(img, grid, interpolation=cv2.INTER_AREA).astype(float)
    return tuple(out.get(f.index) for f in frames)


def colour_consistency(points: np.ndarray, colours: np.ndarray, image_cells: np.ndarray, c2w: np.ndarray,
                       k, image_size: tuple[int, int], window: float = 0.05, min_cells: int = 20
                       ) -> tuple[float, float]:
    """Photometric consistency of coloured surface points with one frame: (rho, cover).

    The points (world, metres) are projected with camera-to-world ``c2w`` (OpenCV axes)
    and intrinsics ``k`` for ``image_size``; each lands in a cell of the grid of
    ``image_cells`` (ch, cw, 3) (the frame's image averaged per cell). Per cell the nearest
    point wins, with the points within ``window`` x its depth + 3 cm of it averaged (a
    z-buffer that tolerates the scatter of points on one surface). ``rho``: the Spearman
    rank correlation of cell colour and image colour over the covered cells, per channel,
    averaged (0 when fewer than ``min_cells`` cells are covered); ``cover``: the covered
    share of the cells.
    """
    ch, cw = image_cells.shape[:2]
    w, h = image_size
    r, t = c2w[:3, :3], c2w[:3, 3]
    pc = np.einsum("nd,dk->nk", points - t, r)  # camera coordinates (einsum: BLAS is slow on (N, 3) @ (3, 3))
    z = pc[:, 2]
    front = np.flatnonzero(z > 1e-3)
    zf = z[front]
    u = k.fx * pc[front, 0] / zf + k.cx
    v = k.fy * pc[front, 1] / zf + k.cy
    ci = np.floor((u + 0.5) * (cw / w)).astype(np.int64)
    cj = np.floor((v + 0.5) * (ch / h)).astype(np.int64)
    inside = (ci >= 0) & (ci < cw) & (cj >= 0) & (cj < ch)
    cell = (cj * cw + ci)[inside]
    zs = zf[inside]
    cols = colours[front[inside]]
    if len(cell) == 0:
        return 0.0, 0.0
    order = np.lexsort((zs, cell))  # by cell, nearest first
    first = np.ones(len(order), bool)
    first[1:] = cell[order][1:] != cell[order][:-1]
    zmin = np.full(cw * ch, np.inf)
    zmin[cell[order][first]] = zs[order][first]
    keep = zs <= zmin[cell] * (1.0 + window) + 0.03
    count = np.bincount(cell[keep], minlength=cw * ch)
    covered = count > 0
    cover = float(covered.mean())
    if covered.sum() < min_cells:
        return 0.0, cover
    sums = np.stack([np.bincount(cell[keep], weights=cols[keep, c], minlength=cw * ch) for c in range(3)], -1)
    mean = sums[covered] / count[covered, None]
    img = image_cells.reshape(-1, 3)[covered]
    rhos = []
    for c in range(3):
        a, b = _ranks(mean[:, c]), _ranks(img[:, c])
        if a.std() == 0 or b.std() == 0:
            rhos.append(0.0)
            continue
        rhos.append(float(np.corrcoef(a, b)[0, 1]))
    return float(np.mean(rhos)), cover


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 0..n-1 of ``x``, ties sharing their average rank (as Spearman's rho needs)."""
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    new = np.ones(len(x), bool)
    new[1:] = xs[1:] != xs[:-1]
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, len(x)))
    out = np.empty(len(x))
    out[order] = np.repeat(starts + (counts - 1) / 2.0, counts)
    return out


def colour_scores(scene: Scene, ev: Evidence, params: CheckParams) -> tuple[float, ...]:
    """Per audited frame with an image: :func:`colour_consistency`'s rho for ``scene``'s
    poses and intrinsics (a frame whose pose is unknown under the scene scores 0)."""
    by_index = {f.index: f for f in scene.frames}
    out = []
    for f0, img in zip(ev.frames, ev.images):
        if img is None:
            continue
        f = by_index[f0.index]
        if f.camera_to_world is None:
            out.append(0.0)
            continue
        rho, _ = colour_consistency(ev.colour_points, ev.colour_values, img, f.camera_to_world,
                                    scene.intrinsics_for(f), scene.image_size, params.colour_window,
                                    params.colour_min_cells)
        out.append(rho)
    return tuple(out)


def grid_rays(scene: Scene, frame: Frame, ws: int, hs: int) -> np.ndarray:
    """(N, 3) camera-frame ray directions with z = 1 for the working grid samples
    (sample (i, j) sits at native pixel ((j + .5) W/ws - .5, (i + .5) H/hs - .5))."""
    w, h = scene.image_size
    k = scene.intrinsics_for(frame)
    j, i = np.meshgrid(np.arange(ws), np.arange(hs))
    u = (j + 0.5) * (w / ws) - 0.5
    v = (i + 0.5) * (h / hs) - 0.5
    return np.stack([(u - k.cx) / k.fx, (v - k.cy) / k.fy, np.ones_like(u, float)], -1).reshape(-1, 3)


def _observed_points(scene: Scene, ev: Evidence, params: CheckParams) -> np.ndarray | None:
    """Observed points in the pose world under ``scene``'s poses and intrinsics (a
    hypothesis applied): back-projected depth images (if any) plus mesh points;
    voxel-downsampled."""
    parts = []
    by_index = {f.index: f for f in scene.frames}
    if ev.depth is not None:
        for n, f0 in enumerate(ev.frames):
            d = ev.depth[n]
            ok = d > 0
            f = by_index[f0.index]
            if not ok.any() or f.camera_to_world is None:
                continue
            c2w = f.camera_to_world
            pts = grid_rays(scene, f, ev.ws, ev.hs)[ok] * d[ok, None]
            parts.append(pts @ c2w[:3, :3].T + c2w[:3, 3])
    if ev.mesh_points is not None:
        parts.append(ev.mesh_points)
    if not parts:
        return None
    pts = np.concatenate(parts)
    return pts[_first_per_voxel(np.floor(pts / params.voxel).astype(np.int64))]


def _first_per_voxel(cells: np.ndarray) -> np.ndarray:
    """Sorted indices of the first row of each distinct row of ``cells`` (N, 3) int64: what
    ``np.sort(np.unique(cells, axis=0, return_index=True)[1])`` gives, without sorting rows as
    structured records (several times slower)."""
    order = np.lexsort(cells.T[::-1])  # stable: equal rows keep their order, the first comes first
    ordered = cells[order]
    first = np.ones(len(order), bool)
    first[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    return np.sort(order[first])


# ---------------------------------------------------------------------------------------
# checks
# ---------------------------------------------------------------------------------------
def _face_samples(k: int = 4) -> np.ndarray:
    """(6 k^2, 3) points on the faces of the unit cube [-.5, .5]^3 (cell centres)."""
    g = (np.arange(k) + 0.5) / k - 0.5
    a, b = (x.ravel() for x in np.meshgrid(g, g))
    out = []
    for axis in range(3):
        for s in (-0.5, 0.5):
            p = np.zeros((k * k, 3))
            p[:, axis] = s
            others = [x for x in range(3) if x != axis]
            p[:, others[0]], p[:, others[1]] = a, b
            out.append(p)
    return np.concatenate(out)


FACE_SAMPLES = _face_samples()


def box_distances(points: np.ndarray, centers: np.ndarray, sizes: np.ndarray, rots: np.ndarray, tree=None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Per box: (near_dist, surface_dist) in metres to the observed ``points`` (see module doc).

    ``near_dist`` is 0 when a point lies inside the box, else the smallest face-sample
    distance (the box surface is sampled on a 4 x 4 grid per face). ``tree``: a
    ``scipy.spatial.cKDTree`` of ``points`` already built (hypotheses that keep the cameras
    share one), else built here.
    """
    if tree is None:
        from scipy.spatial import cKDTree

        tree = cKDTree(points)
    near, surf = np.full(len(centers), np.nan), np.full(len(centers), np.nan)
    for o, (c, s, r) in enumerate(zip(centers, sizes, rots)):
        samples = c + (FACE_SAMPLES * s) @ r.T
        dist, _ = tree.query(samples)
        surf[o] = float(np.median(dist))
        inside = False
        cand = tree.query_ball_point(c, float(np.linalg.norm(s)) / 2.0)
        if cand:
            local = (points[cand] - c) @ r
            inside = bool((np.abs(local) <= s / 2.0).all(axis=1).any())
        near[o] = 0.0 if inside else float(dist.min())
    return near, surf


def sightings(scene: Scene, frames: tuple[Frame, ...], depth: np.ndarray, ws: int, hs: int, params: CheckParams
              ) -> tuple[np.ndarray, np.ndarray]:
    """Per box: (seen, contradicted) frame counts over ``frames`` with ``depth`` (F, N).

    Uses the scene's own poses and ``world_boxes()``; see the module docstring.
    """
    centers, sizes, rots = scene.world_boxes()
    no = len(centers)
    seen, contra = np.zeros(no, int), np.zeros(no, int)
    if no == 0:
        return seen, contra
    half = sizes / 2.0
    # frames are the audited ones; a hypothesis' frames have the same order and indices
    by_index = {f.index: f for f in scene.frames}
    for n, f0 in enumerate(frames):
        f = by_index[f0.index]
        if f.camera_to_world is None:
            continue
        rc, t = f.camera_to_world[:3, :3], f.camera_to_world[:3, 3]
        dirs = grid_rays(scene, f, ws, hs) @ rc.T  # world directions, camera z-component 1
        org = np.einsum("odk,od->ok", rots, t - centers)  # camera centre in each box frame (O, 3)
        # slabs, one box axis at a time ((O, N) arrays; a reduction over a length-3 axis is slow)
        tmin, tmax = np.full((no, len(dirs)), -np.inf), np.full((no, len(dirs)), np.inf)
        for k in range(3):
            dk = np.einsum("od,nd->on", rots[:, :, k], dirs)  # ray directions along box axis k
            dk = np.where(np.abs(dk) < 1e-12, 1e-12, dk)
            t1 = (-half[:, k, None] - org[:, k, None]) / dk
            t2 = (half[:, k, None] - org[:, k, None]) / dk
            np.maximum(tmin, np.minimum(t1, t2), out=tmin)
            np.minimum(tmax, np.maximum(t1, t2), out=tmax)
        inside = (np.abs(org) < half).all(axis=1)
        hit = tmax > np.maximum(tmin, params.near)
        front = np.where(inside[:, None], tmax, np.maximum(tmin, params.near))  # z-buffer depth
        front = np.where(hit, front, np.inf)
        owner = np.argmin(front, axis=0)
        owned = np.isfinite(front.min(axis=0))
        d = depth[n]
        valid = d > 0
        for o in range(no):
            if inside[o]:
                continue
            sil = owned & (owner == o)
            if sil.sum() < params.seen_share * len(d):
                continue
            m = sil & valid
            if m.sum() < params.min_samples:
                continue
            lo, hi = np.maximum(tmin[o, m], params.near), tmax[o, m]
            agree = (d[m] >= lo - params.depth_tol) & (d[m] <= hi + params.depth_tol)
            seen[o] += 1
            if agree.mean() < params.agree_min:
                contra[o] += 1
    return seen, contra


def _fit(scene: Scene, h: Hypothesis, ev: Evidence, params: CheckParams, th: Thresholds, cache: dict) -> Fit:
    """Run every available check on ``scene`` under hypothesis ``h``."""
    s = apply(scene, h)
    centers, sizes, rots = s.world_boxes()
    camera_key = (h.pose, h.intrinsics_scale)  # what the colours and the depth's points depend on
    if camera_key not in cache:
        colour = colour_scores(s, ev, params) if ev.colour_points is not None else ()
        points_key = camera_key if ev.depth is not None else None  # a mesh alone does not move with the cameras
        if ("points", points_key) not in cache:  # the points and their k-d tree, shared by the hypotheses
            from scipy.spatial import cKDTree

            points = _observed_points(s, ev, params)
            cache[("points", points_key)] = (points, None if points is None else cKDTree(points))
        cache[camera_key] = (points_key, colour)
    points_key, colour = cache[camera_key]
    pts, tree = cache[("points", points_key)]
    no = len(centers)
    near, surf = (box_distances(pts, centers, sizes, rots, tree) if pts is not None and no
                  else (np.full(no, np.nan), np.full(no, np.nan)))
    if ev.depth is not None and ev.frames:
        seen, contra = sightings(s, ev.frames, ev.depth, ev.ws, ev.hs, params)
    else:
        seen, contra = np.zeros(no, int), np.zeros(no, int)
    objs = tuple(ObjectFit(o.id, o.label, float(near[i]), float(surf[i]), int(seen[i]), int(contra[i]))
                 for i, o in enumerate(s.objects))
    sd = float(np.median(surf)) if no and np.isfinite(surf).any() else float("nan")
    far = float(np.mean(near > th.far_dist_m)) if no and np.isfinite(near).any() else float("nan")
    total = int(seen.sum())
    cs = float(contra.sum() / total) if total else float("nan")
    # with depth frames, a convention under which no box is ever seen scores as fully contradicted
    cs_score = (1.0 if not total else cs) if ev.depth is not None and no else float("nan")
    rho = float(np.median(colour)) if colour else float("nan")
    terms = [x for x in (sd / th.surface_dist_m, cs_score / th.contradicted_share,
                         (1.0 - rho) / (1.0 - th.colour_min)) if np.isfinite(x)]
    return Fit(h.name, h.fix, sd, far, cs, total, float(sum(terms)) if terms else float("nan"), objs,
               rho, tuple(round(x, 4) for x in colour))


def _better(best: Fit, base: Fit, th: Thresholds, depth: bool) -> bool:
    """Does ``best`` beat ``base`` by the configured factor and absolute gain, or with a
    decisive colour gain (a lower score, colour at least ``colour_min`` and
    ``min_gain_colour`` above the scene's)?"""
    if not (np.isfinite(best.score) and np.isfinite(base.score)) or best.name == base.name:
        return False
    if best.score < base.score and np.isfinite(best.colour) and np.isfinite(base.colour) \
            and best.colour >= th.colour_min and best.colour - base.colour >= th.min_gain_colour:
        return True
    if base.score < th.better_factor * best.score:
        return False
    gain_m = base.surface_dist - best.surface_dist if np.isfinite(base.surface_dist) else 0.0
    gain_s = _cs_effective(base, depth) - _cs_effective(best, depth)
    return gain_m >= th.min_gain_m or (np.isfinite(gain_s) and gain_s >= th.min_gain_share)


def _cs_effective(f: Fit, depth: bool) -> float:
    """Contradicted share for comparisons: with depth frames, no sighting at all counts as 1."""
    if depth and f.sightings == 0:
        return 1.0
    return f.contradicted_share if np.isfinite(f.contradicted_share) else (float("nan") if depth else 0.0)


def _ratio(a: float, b: float, floor: float) -> float:
    return max(a, floor) / max(b, floor)


def _describe(base: Fit, best: Fit, depth: bool) -> str:
    """'the scene fits 40x better with ...: numbers' for a winning hypothesis (the evidence
    that changed: surface distance by 5 mm or more, contradicted share by 1 point, colour
    correlation by 0.05)."""
    parts, ratios = [], []
    if np.isfinite(base.surface_dist) and np.isfinite(best.surface_dist) \
            and abs(base.surface_dist - best.surface_dist) >= 0.005:
        parts.append(f"median box-to-surface distance {base.surface_dist:.2f} m -> {best.surface_dist:.2f} m")
        ratios.append(_ratio(base.surface_dist, best.surface_dist, RATIO_FLOOR_M))
    a, b = _cs_effective(base, depth), _cs_effective(best, depth)
    if np.isfinite(a) and np.isfinite(b) and (base.sightings or best.sightings) and abs(a - b) >= 0.01:
        parts.append(f"depth contradicts {a:.0%} of {base.sightings} -> {b:.0%} of {best.sightings} sightings")
        ratios.append(_ratio(a, b, RATIO_FLOOR_SHARE))
    if np.isfinite(base.colour) and np.isfinite(best.colour) and abs(base.colour - best.colour) >= 0.05:
        parts.append(f"mesh colours vs images: rank correlation {base.colour:.2f} -> {best.colour:.2f}")
        ratios.append(_ratio(1.0 - base.colour, 1.0 - best.colour, RATIO_FLOOR_SHARE))
    r = max(ratios) if ratios else float("nan")
    return f"the scene fits {r:.0f}x better with the fix '{best.name}' ({'; '.join(parts)}). Likely fix: {best.fix}"


def audit_scene(scene: Scene, alignments: Iterable[tuple[str, np.ndarray]] = (), use_depth: bool = True,
                use_mesh: bool = True, thresholds: Thresholds = Thresholds(), params: CheckParams = CheckParams(),
                progress: bool = False, use_colour: bool = True) -> AuditReport:
    """Audit ``scene`` (see the module docstring). ``alignments``: named 4x4 candidate
    matrices (e.g. ScanNet's axisAlignment) to try as ``boxes_to_world`` and inverse.
    ``use_colour``: use the mesh's colours against the frames' images when both exist
    (with ``use_mesh``). Raises InputError when the scene has no depth frame and no mesh
    to check against."""
    scene.require_3d("vistest audit")
    if not scene.objects:
        raise InputError(f"{scene.source}: objects: expected at least one box to audit, got none")
    has_depth = use_depth and any(f.depth for f in scene.frames)
    has_mesh = use_mesh and scene.mesh is not None
    if not (has_depth or has_mesh):
        raise InputError(f"{scene.source}: nothing to audit against: expected depth frames "
                         f"(frames[i].depth) or a mesh (mesh)")
    ev = gather_evidence(scene, has_depth, has_mesh, params, use_colour)
    hyps = hypotheses(scene, alignments, poses=ev.depth is not None or ev.colour_points is not None)
    cache: dict = {}
    fits = []
    with progress_bar(len(hyps), f"audit {scene.scene_id}", enabled=progress) as bar:
        for h in hyps:
            fits.append(_fit(scene, h, ev, params, thresholds, cache))
            bar.update(1)
    base = fits[0]
    finite = [f for f in fits if np.isfinite(f.score)]
    best = min(finite, key=lambda f: f.score) if finite else base
    failures = []
    if np.isfinite(base.surface_dist) and base.surface_dist > thresholds.surface_dist_m:
        failures.append(f"median box-to-surface distance {base.surface_dist:.2f} m > {thresholds.surface_dist_m} m")
    if np.isfinite(base.far_share) and base.far_share > thresholds.far_share:
        failures.append(f"{base.far_share:.0%} of boxes are more than {thresholds.far_dist_m} m from any observed "
                        f"surface (> {thresholds.far_share:.0%})")
    if ev.depth is not None and base.sightings == 0:
        failures.append(f"with depth frames, no box is seen in any of the {len(ev.frames)} audited frames")
    if np.isfinite(base.contradicted_share) and base.contradicted_share > thresholds.contradicted_share:
        failures.append(f"depth contradicts the box everywhere in its silhouette in {base.contradicted_share:.0%} "
                        f"of {base.sightings} sightings (> {thresholds.contradicted_share:.0%})")
    if np.isfinite(base.colour) and base.colour < thresholds.colour_min:
        failures.append(f"the mesh colours projected through the poses do not match the images (median rank "
                        f"correlation {base.colour:.2f} < {thresholds.colour_min})")
    suspect = _better(best, base, thresholds, ev.depth is not None)
    if suspect:
        failures.append(_describe(base, best, ev.depth is not None))
    passed = not failures
    if passed:
        measured = [text for x, text in (
            (base.surface_dist, f"median box-to-surface distance {_num(base.surface_dist, '.2f')} m"),
            (base.contradicted_share, f"depth contradicts {_num(base.contradicted_share, '.0%')} of "
                                      f"{base.sightings} sightings"),
            (base.colour, f"colour rank correlation {_num(base.colour, '.2f')}")) if np.isfinite(x)]
        message = (f"boxes agree with the observed geometry ({', '.join(measured) or 'nothing measured'}); "
                   f"no convention change fits better")
    elif suspect:
        message = _describe(base, best, ev.depth is not None)
    else:
        message = ("; ".join(failures) + ". No tested convention fix explains it"
                   + ("" if any("as boxes_to_world" in f.name for f in fits)
                      else " (pass the scan's alignment with --alignment to test it)"))
    evidence = tuple(x for x, ok in (("depth", ev.depth is not None), ("mesh", ev.mesh_points is not None),
                                     ("colour", ev.colour_points is not None)) if ok)
    return AuditReport(scene.scene_id, evidence, len(ev.frames), thresholds, tuple(fits),
                       best.name if suspect else base.name, passed, tuple(failures), message)


def write_report(report: AuditReport, path: str | os.PathLike) -> None:
    """Write the report as JSON, atomically."""
    from ..atomic import write_atomic

    write_atomic(path, json.dumps(report.to_dict(), indent=1) + "\n")
