"""Answer audit: do a question file's 3D answers land on the scene's objects, and do its static
answers agree with the scene?

Static answers (:func:`audit_static`, last section): size, distance, room size, relative distance
and direction, counting and appearance order recomputed from the scene with the generator's own
geometry (vistest.generate) and compared within :class:`StaticAuditConfig`'s tolerances.
The rest of this docstring is the 3D answers' audit (:func:`audit_answers`).

ReSTI's check of STI-Bench, made a tool: back-project each answer into the source scene and
measure the distance to the object it names. Audited rows are those whose answer is a 3D
point given in the camera frame at an instant (3D video grounding: an object's centre):

* ``time``: the instant, seconds from the start of the video (a JSON number); a row without
  ``time`` whose window is one instant (``time_start`` equal to ``time_end``) uses that;
* the centre, metres, OpenCV camera axes (x right, y down, z forward) of the camera at
  ``time``: ``answer_center`` ``[x, y, z]``, else the first ``(x, y, z)`` triple in the
  text of the keyed option (``ground_truth`` letter, ``options`` ``"A. text"``) of a row whose
  ``question_type`` is absent or names grounding (a pose's translation is not a centre);
* optional: ``id`` (else the line number), ``scene_id`` (rows of another scene are skipped),
  ``objects`` (exactly one object id of the scene: the distance is measured to that box).

Other rows are counted as skipped, with the reason. The pose of an instant is that of the
posed frame (valid ``camera_to_world``) whose decoded frame number is nearest to
``time * fps``; a row whose nearest posed frame is farther than ``max_gap_s`` is skipped.

Frames: the answer ``p`` (camera) goes to the pose world with the frame's camera-to-world
``P``: ``x = P p``; to the box world with ``boxes_to_world`` ``B``: ``B^-1 x``. Distances are
measured in the pose world against the boxes of ``Scene.world_boxes()`` and the observed
points: the mesh's vertices and surface samples, or, without a mesh, the depth image of the
frame whose pose the convention uses, back-projected with that pose.

**Conventions** (each a *fix*: how the producer's point is undone to reach the box world;
"as given" first):

* ``alignment inverse skipped``: the producer computed ``P^-1 c`` for a box-world centre
  ``c`` (ReSTI's ScanNet grounding bug: ``P^-1 A^-1 c`` was meant), so ``c = P p``;
* ``alignment inverted``: it computed ``P^-1 B^-1 c``, so ``c = B P p`` (both only when
  ``B`` is not the identity);
* ``OpenGL camera axes``: ``p`` is in OpenGL camera axes (x right, y up, z backward):
  ``diag(1, -1, -1) p``;
* ``camera y/z swapped``: ``p``'s y and z were swapped;
* ``world y/z swapped``: the centre's y and z were swapped in the box world (a y-up
  convention applied to a z-up world): ``S B^-1 P p`` with ``S`` the swap;
* ``wrong instant (k)``: the producer used the pose of the posed frame ``k`` places before
  (``k < 0``) or after the right one: the fix uses that frame's pose (for each ``k`` of
  ``offsets``; only where that frame exists).

Per row and convention: ``box_dist``, the distance from the point to the nearest box (to
the named box when ``objects`` names one), 0 inside (exact point-to-oriented-box distance),
and ``point_dist``, the distance to the nearest observed point. The fit measure is
``box_dist``. A convention *beats* "as given" when its distance is at least ``margin_m``
lower and ``better_factor`` times lower (distances floored at 1 cm); the winner is the
lowest distance among those that beat "as given" (ties: the order above). Named per row, and
over the file from the median ``box_dist`` per convention over the rows where it is defined,
compared with the median "as given" over the same rows (a convention defined for fewer than
half the rows is not named). The file passes
when it names "as given" and its median ``box_dist`` is at most ``fit_m``; a winner whose
median is above ``fit_m`` is reported as "none fits" (no tested convention explains it).
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..geometry import rigid_inverse
from ..jsonl import iter_jsonl, read_text
from ..scene import Frame, Scene
from .scene import RATIO_FLOOR_M, grid_rays

AS_GIVEN = "as given"
NONE_FITS = "none fits"
SWAP_YZ = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
GL_AXES = np.diag([1.0, -1.0, -1.0])
_NUM = r"([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)"
_TRIPLE = re.compile(rf"\(\s*{_NUM}\s*,\s*{_NUM}\s*,\s*{_NUM}\s*\)")  # "(x, y, z)" in an option's text


@dataclass(frozen=True)
class AnswerAuditConfig:
    """How answers are audited (see the module docstring)."""

    margin_m: float = 0.10
    """metres: a convention beats "as given" only when its distance is this much lower ..."""
    better_factor: float = 2.0
    """... and this many times lower (distances floored at 1 cm)."""
    fit_m: float = 0.25
    """metres: the largest median box distance (file) or box distance (row) that counts as fitting."""
    max_gap_s: float = 0.5
    """seconds: a row whose nearest posed frame is farther from ``time`` is skipped."""
    offsets: tuple[int, ...] = (-1, 1, -2, 2, -5, 5, -10, 10, -30, 30)
    """posed-frame offsets tried as a wrong instant (k places before/after the right frame)."""
    mesh_samples: int = 200_000
    """surface samples of a mesh (plus its vertices) as observed points."""
    grid: int = 96
    """longer side of the ray grid depth is sampled on (scenes without a mesh)."""


@dataclass(frozen=True, eq=False)
class Convention:
    """A fix for one convention error: ``camera`` (3x3) applied to the given camera-frame
    point, then the pose of the posed frame ``offset`` places away, then the producer's use of
    ``boxes_to_world`` ``B`` (``"as given"``: ``B^-1``, ``"skipped"``: identity, ``"inverted"``:
    ``B``) into the box world, then ``world`` (3x3) there."""

    name: str
    error: str
    camera: np.ndarray = field(default_factory=lambda: np.eye(3))
    boxes: str = "as given"
    world: np.ndarray = field(default_factory=lambda: np.eye(3))
    offset: int = 0


def conventions(scene: Scene, offsets: tuple[int, ...] = AnswerAuditConfig.offsets) -> list[Convention]:
    """"as given", then each known convention error's fix (module docstring), in tie-break order."""
    out = [Convention(AS_GIVEN, "none")]
    if not np.allclose(scene.boxes_to_world, np.eye(4), atol=1e-9):
        out.append(Convention("alignment inverse skipped", "the centres were computed as P(t)^-1 c: the "
                              "boxes_to_world (ScanNet: inverse axisAlignment) was not applied", boxes="skipped"))
        out.append(Convention("alignment inverted", "the centres were computed as P(t)^-1 B^-1 c: boxes_to_world "
                              "applied the wrong way", boxes="inverted"))
    out.append(Convention("OpenGL camera axes", "the centres are in OpenGL camera axes (y up, z backward)",
                          camera=GL_AXES))
    out.append(Convention("camera y/z swapped", "the centres' camera y and z were swapped", camera=SWAP_YZ))
    out.append(Convention("world y/z swapped", "the centres' world y and z were swapped (y-up vs z-up)",
                          world=SWAP_YZ))
    for k in sorted(offsets, key=lambda k: (abs(k), k)):
        out.append(Convention(f"wrong instant ({k:+d})", f"the pose of the posed frame {k:+d} places from the "
                              f"question's instant was used", offset=k))
    return out


# ---------------------------------------------------------------------------------------
# geometry: plain numpy, frames and units in the docstrings
# ---------------------------------------------------------------------------------------
def camera_to_box_world(p_cam: np.ndarray, c2w: np.ndarray, boxes_to_world: np.ndarray) -> np.ndarray:
    """Camera-frame points ``p_cam`` (N, 3) metres, OpenCV axes, to the box world:
    ``B^-1 (P p)`` with ``P`` = ``c2w`` (4x4 camera-to-pose-world) and ``B`` =
    ``boxes_to_world`` (4x4 box world to pose world)."""
    x = np.asarray(p_cam, float) @ c2w[:3, :3].T + c2w[:3, 3]
    b = np.asarray(boxes_to_world, float)
    return (x - b[:3, 3]) @ b[:3, :3]  # rigid: B^-1 x = R^T (x - t)


def point_box_distance(points: np.ndarray, centers: np.ndarray, sizes: np.ndarray, rots: np.ndarray
                       ) -> np.ndarray:
    """(N, O) Euclidean distance in metres from each point (N, 3) to each solid oriented box
    (centres (O, 3), full sizes (O, 3), rotations (O, 3, 3) whose columns are the box axes),
    all in one frame; 0 inside or on the box."""
    local = np.einsum("okd,nok->nod", rots, np.asarray(points, float)[:, None, :] - centers[None])
    out = np.maximum(np.abs(local) - sizes[None] / 2.0, 0.0)
    return np.sqrt((out ** 2).sum(-1))


def frame_at(scene: Scene, time_s: float) -> tuple[int, float]:
    """(position in the scene's posed frames, gap in seconds) of the posed frame (valid pose)
    whose decoded frame number is nearest to ``time_s * fps`` (ties: the earlier frame);
    (-1, inf) when the scene has no posed frame."""
    posed = np.array([f.index for f in scene.frames if f.valid], float)
    if not len(posed):
        return -1, math.inf
    gaps = np.abs(posed - time_s * scene.fps)
    i = int(np.argmin(gaps))
    return i, float(gaps[i]) / scene.fps


def back_project(p_cam: np.ndarray, c2w: np.ndarray, boxes_to_world: np.ndarray, conv: Convention
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The answer ``p_cam`` (3,) metres, OpenCV camera frame, under convention ``conv``:
    (box-world point, pose-world point), metres. ``c2w``: the camera-to-pose-world pose the
    convention uses (that of the posed frame ``conv.offset`` places from the answer's);
    ``boxes_to_world`` ``B`` (4x4, box world to pose world)."""
    b = np.asarray(boxes_to_world, float)
    p = (conv.camera @ np.asarray(p_cam, float))[None]
    if conv.boxes == "skipped":  # the producer left B out: P p is already the box-world centre
        x_box = camera_to_box_world(p, c2w, np.eye(4))[0]
    elif conv.boxes == "inverted":  # the producer applied B^-1: the centre is B P p
        x_box = camera_to_box_world(p, c2w, rigid_inverse(b))[0]
    else:
        x_box = camera_to_box_world(p, c2w, b)[0]
    x_box = conv.world @ x_box
    return x_box, b[:3, :3] @ x_box + b[:3, 3]


# ---------------------------------------------------------------------------------------
# question rows
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AnswerRow:
    """One audited row: ``center`` (3,) metres, OpenCV camera frame at ``time`` seconds;
    ``source`` says where the centre was read (``answer_center`` or ``option B``);
    ``objects``: the object ids the row names (may be empty)."""

    id: str
    line: int
    time: float
    center: tuple[float, float, float]
    source: str
    objects: tuple[str, ...] = ()


def _number(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def answer_row(row: dict, line: int, where: str) -> tuple[AnswerRow | None, str]:
    """(the row as an :class:`AnswerRow`, "") or (None, why it is not audited). A present but
    malformed ``time`` or ``answer_center`` raises InputError naming ``where`` and the field."""
    rid = str(row.get("id", f"line {line}"))
    key = "time"
    if row.get("time") is None:
        if row.get("time_start") is None or row.get("time_start") != row.get("time_end"):
            return None, "no time"
        key = "time_start"  # a window of one instant
    t = _number(row[key])
    if t is None or t < 0:
        raise InputError(f"{where}: {key}: expected a non-negative number of seconds, got {row[key]!r}")
    objects = row.get("objects") or ()
    objects = tuple(str(o) for o in (objects if isinstance(objects, list) else [objects]))
    if row.get("answer_center") is not None:
        c = row["answer_center"]
        vals = [_number(x) for x in c] if isinstance(c, list) and len(c) == 3 else [None]
        if None in vals:
            raise InputError(f"{where}: answer_center: expected [x, y, z] metres (three numbers), got {c!r}")
        return AnswerRow(rid, line, t, tuple(vals), "answer_center", objects), ""
    qtype = row.get("question_type")
    if qtype is not None and "grounding" not in str(qtype).lower():
        return None, "no answer_center (keyed options are read for grounding types only)"
    key, options = row.get("ground_truth"), row.get("options")
    if isinstance(key, str) and isinstance(options, list):
        from ..answers import split_option

        for opt in options:
            letter, text = split_option(str(opt))
            if letter is not None and letter == key.strip().upper():
                m = _TRIPLE.search(text)
                if m is None:
                    return None, f"keyed option {letter} holds no (x, y, z)"
                return AnswerRow(rid, line, t, tuple(float(x) for x in m.groups()), f"option {letter}", objects), ""
        return None, f"no option keyed {key!r}"
    return None, "no answer_center and no keyed option"


def read_answer_rows(path: str | os.PathLike, scene_id: str | None = None
                     ) -> tuple[list[AnswerRow], list[tuple[str, str]]]:
    """The audited rows of a question file (JSONL) and the skipped ones as (id, reason);
    rows whose ``scene_id`` differs from ``scene_id`` are skipped."""
    path = Path(path)
    rows, skipped = [], []
    for line, row in iter_jsonl(read_text(path, InputError, "question file").splitlines(), str(path), InputError):
        rid = str(row.get("id", f"line {line}"))
        if scene_id is not None and row.get("scene_id") not in (None, scene_id):
            skipped.append((rid, f"scene_id {row.get('scene_id')!r} is not {scene_id!r}"))
            continue
        got, why = answer_row(row, line, f"{path}:{line}")
        if got is None:
            skipped.append((rid, why))
        else:
            rows.append(got)
    return rows, skipped


# ---------------------------------------------------------------------------------------
# observed points
# ---------------------------------------------------------------------------------------
class ObservedPoints:
    """Nearest observed point (pose world, metres): the mesh's vertices and surface samples
    (``kind`` ``mesh``), else the depth image of the frame asked about, back-projected with its
    pose on a ray grid (``depth``; per-frame point sets cached), else nothing (``none``)."""

    def __init__(self, scene: Scene, config: AnswerAuditConfig):
        from scipy.spatial import cKDTree

        from .scene import surface_points

        self.scene, self.config, self._trees = scene, config, {}
        self.mesh = None
        if scene.mesh is not None:
            self.mesh = cKDTree(surface_points(scene.path(scene.mesh), config.mesh_samples)[0])
        self.kind = "mesh" if self.mesh is not None else (
            "depth" if any(f.depth is not None and f.valid for f in scene.frames) else "none")

    def distance(self, x_pose: np.ndarray, frame: Frame) -> float:
        """Metres from ``x_pose`` (3,) to the nearest observed point (of ``frame``'s depth when
        there is no mesh); NaN without evidence."""
        tree = self.mesh if self.mesh is not None else self._frame_tree(frame)
        return float(tree.query(x_pose)[0]) if tree is not None else math.nan

    def _frame_tree(self, frame: Frame):
        if frame.index not in self._trees:
            self._trees[frame.index] = None
            pts = depth_points(self.scene, frame, self.config.grid)
            if len(pts):
                from scipy.spatial import cKDTree

                self._trees[frame.index] = cKDTree(pts)
        return self._trees[frame.index]


def depth_points(scene: Scene, frame: Frame, grid: int) -> np.ndarray:
    """(M, 3) pose-world points (metres) of ``frame``'s depth image, looked up on a ray grid of
    ``grid`` samples on the image's longer side and back-projected with the frame's pose;
    empty without depth or pose."""
    if frame.depth is None or not frame.valid:
        return np.zeros((0, 3))
    from ..visibility.table import depth_samples

    w, h = scene.image_size
    s = min(1.0, grid / max(w, h))
    ws, hs = max(1, round(w * s)), max(1, round(h * s))
    d = depth_samples(scene, (frame,), ws, hs)[0]
    ok = d > 0
    pts = grid_rays(scene, frame, ws, hs)[ok] * d[ok, None]
    return pts @ frame.camera_to_world[:3, :3].T + frame.camera_to_world[:3, 3]


# ---------------------------------------------------------------------------------------
# the audit
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RowFit:
    """One row under one convention: the back-projected point (box world, metres; None
    where the convention is undefined for the row) and its distances (metres; NaN when
    undefined or, for ``point_dist``, without observed points)."""

    convention: str
    box_dist: float
    point_dist: float
    point: tuple[float, float, float] | None


@dataclass(frozen=True)
class RowResult:
    """An audited row: its instant, the posed frame used (decoded frame number) and the gap
    to ``time`` (seconds), the box distances are measured to (``named``: the named object's
    id, else None: the nearest box), a fit per convention, and the convention named."""

    id: str
    line: int
    time: float
    frame: int
    gap_s: float
    source: str
    named: str | None
    fits: tuple[RowFit, ...]
    best: str


@dataclass(frozen=True)
class ConventionSummary:
    """A convention over the file: rows where it is defined, median distances (metres), how
    many rows name it, and the median box distance as given over the same rows (what it is
    compared with)."""

    name: str
    error: str
    rows: int
    median_box_dist: float
    median_point_dist: float
    named: int
    as_given_box_dist: float


@dataclass(frozen=True)
class AnswerAuditReport:
    """The answer audit of one question file against one scene (``summary[0]``: as given)."""

    scene_id: str
    questions: str
    evidence: str
    config: AnswerAuditConfig
    rows: tuple[RowResult, ...]
    skipped: tuple[tuple[str, str], ...]
    summary: tuple[ConventionSummary, ...]
    best: str
    passed: bool
    message: str

    def to_dict(self) -> dict:
        """JSON-ready dict (NaN -> None, floats rounded to 1e-6)."""
        def clean(x):
            if isinstance(x, float):
                return None if not math.isfinite(x) else round(x, 6)
            if isinstance(x, dict):
                return {k: clean(v) for k, v in x.items()}
            if isinstance(x, (list, tuple)):
                return [clean(v) for v in x]
            return x
        return clean({"format": "vistest.answer_audit/1", "scene_id": self.scene_id, "questions": self.questions,
                      "passed": self.passed, "best": self.best, "message": self.message, "evidence": self.evidence,
                      "config": asdict(self.config), "summary": [asdict(s) for s in self.summary],
                      "rows": [asdict(r) for r in self.rows],
                      "skipped": [{"id": i, "reason": why} for i, why in self.skipped]})

    def markdown(self, per_row: bool = True) -> str:
        """The report as markdown: verdict, the convention table, optionally a row table."""
        lines = [f"# Answer audit: {self.questions} on {self.scene_id}", "",
                 f"**{'PASS' if self.passed else 'FAIL'}**: {self.message}", "",
                 f"{len(self.rows)} rows audited, {len(self.skipped)} skipped; observed points: {self.evidence}.", "",
                 "| convention | rows | median box dist (m) | as given, same rows (m) | median observed dist (m) "
                 "| rows naming it |", "|---|---:|---:|---:|---:|---:|"]
        for s in self.summary:
            mark = "**" if s.name == self.best else ""
            lines.append(f"| {mark}{s.name}{mark} | {s.rows} | {_fmt(s.median_box_dist)} | "
                         f"{_fmt(s.as_given_box_dist)} | {_fmt(s.median_point_dist)} | {s.named} |")
        if per_row and self.rows:
            lines += ["", "| row | time s | frame | box dist as given (m) | named | its box dist (m) |",
                      "|---|---:|---:|---:|---|---:|"]
            for r in self.rows:
                d = {f.convention: f for f in r.fits}
                lines.append(f"| {r.id} | {r.time:g} | {r.frame} | {_fmt(d[AS_GIVEN].box_dist)} | {r.best} | "
                             f"{_fmt(d[r.best].box_dist) if r.best in d else '-'} |")
        if self.skipped:
            reasons: dict[str, int] = {}
            for _, why in self.skipped:
                reasons[why] = reasons.get(why, 0) + 1
            lines += ["", "Skipped: " + "; ".join(f"{n} x {why}" for why, n in sorted(reasons.items()))]
        return "\n".join(lines) + "\n"


def _fmt(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:.3f}"


def name_fit(dists: dict[str, float], order: list[str], config: AnswerAuditConfig,
             bases: dict[str, float] | None = None) -> str:
    """The convention named from distances (metres) per convention (``order``: "as given"
    first, then the tie-break order): the lowest among those that beat "as given" by
    ``margin_m`` and ``better_factor``, else "as given"; "none fits" when that one's
    distance is above ``fit_m`` (or undefined). ``bases``: per convention, the "as given"
    distance to compare it with (file medians over the same rows), else ``dists["as given"]``."""
    def base(n: str) -> float:
        return (bases or {}).get(n, dists.get(AS_GIVEN, math.nan))

    beat = [n for n in order[1:] if math.isfinite(dists.get(n, math.nan))
            and (not math.isfinite(base(n)) or (base(n) - dists[n] >= config.margin_m and max(base(n), RATIO_FLOOR_M)
                                                >= config.better_factor * max(dists[n], RATIO_FLOOR_M)))]
    best = min(beat, key=lambda n: dists[n]) if beat else AS_GIVEN
    d = dists.get(best, math.nan)
    return best if math.isfinite(d) and d <= config.fit_m else NONE_FITS


def audit_answers(scene: Scene, questions: str | os.PathLike, config: AnswerAuditConfig = AnswerAuditConfig()
                  ) -> AnswerAuditReport:
    """Audit the 3D answers of ``questions`` (JSONL) against ``scene`` (module docstring).
    Raises InputError when no row can be audited."""
    scene.require_3d("vistest audit --questions")
    rows, skipped = read_answer_rows(questions, scene.scene_id)
    if not scene.objects:
        raise InputError(f"{scene.source}: objects: expected at least one box to measure answers against, got none")
    posed = [f for f in scene.frames if f.valid]
    convs = conventions(scene, config.offsets)
    located = []
    for r in rows:
        pos, gap = frame_at(scene, r.time)
        if pos < 0 or gap > config.max_gap_s:
            skipped.append((r.id, f"no posed frame within {config.max_gap_s} s of time {r.time:g} s"))
        else:
            located.append((r, pos, gap))
    if not located:
        raise InputError(f"{questions}: no row to audit: expected rows with time (seconds) and answer_center [x, y, z] "
                         f"or a keyed option holding (x, y, z), for scene {scene.scene_id} "
                         f"({len(skipped)} rows skipped: {'; '.join(sorted({w for _, w in skipped})) or '-'})")
    observed = ObservedPoints(scene, config)
    centers, sizes, rots = scene.world_boxes()
    ids = list(scene.object_ids)
    results = []
    order = [c.name for c in convs]
    for r, pos, gap in located:
        named = r.objects[0] if len(r.objects) == 1 and r.objects[0] in ids else None
        sel = [ids.index(named)] if named is not None else list(range(len(ids)))
        fits = []
        for c in convs:
            if not 0 <= pos + c.offset < len(posed):
                fits.append(RowFit(c.name, math.nan, math.nan, None))
                continue
            frame = posed[pos + c.offset]
            x_box, x_pose = back_project(np.asarray(r.center), frame.camera_to_world, scene.boxes_to_world, c)
            bd = float(point_box_distance(x_pose[None], centers[sel], sizes[sel], rots[sel]).min())
            pd = observed.distance(x_pose, frame)
            fits.append(RowFit(c.name, bd, pd, tuple(float(v) for v in x_box)))
        best = name_fit({f.convention: f.box_dist for f in fits}, order, config)
        results.append(RowResult(r.id, r.line, r.time, posed[pos].index, gap, r.source, named, tuple(fits), best))
    summary = []
    for k, c in enumerate(convs):
        box = np.array([res.fits[k].box_dist for res in results])
        pts = np.array([res.fits[k].point_dist for res in results])
        ok = np.isfinite(box)
        enough = ok.sum() * 2 >= len(results)
        base_box = np.array([res.fits[0].box_dist for res in results])
        summary.append(ConventionSummary(
            c.name, c.error, int(ok.sum()), float(np.median(box[ok])) if enough else math.nan,
            float(np.nanmedian(pts[ok])) if enough and np.isfinite(pts[ok]).any() else math.nan,
            sum(res.best == c.name for res in results),
            float(np.median(base_box[ok])) if enough else math.nan))
    best = name_fit({s.name: s.median_box_dist for s in summary}, order, config,
                    {s.name: s.as_given_box_dist for s in summary})
    base = summary[0]
    passed = best == AS_GIVEN
    n = len(results)
    if passed:
        message = (f"the answers land on the objects as given: median distance to the "
                   f"{'named' if any(r.named for r in results) else 'nearest'} box {_fmt(base.median_box_dist)} m "
                   f"over {n} rows; no convention error fits better")
    elif best == NONE_FITS:
        message = (f"the answers sit a median {_fmt(base.median_box_dist)} m from the boxes as given and no tested "
                   f"convention brings them within {config.fit_m} m")
    else:
        win = next(s for s in summary if s.name == best)
        message = (f"'{best}' fits: the answers sit a median {_fmt(win.as_given_box_dist)} m from the boxes as given, "
                   f"{_fmt(win.median_box_dist)} m under this fix (over the {win.rows} rows it applies to; {win.named} "
                   f"of {n} rows name it); likely error: {win.error}")
    return AnswerAuditReport(scene.scene_id, str(questions), observed.kind, config, tuple(results),
                             tuple(skipped), tuple(summary), best, passed, message)


# ---------------------------------------------------------------------------------------
# static answers: recomputed from the scene with the generator's own geometry
# ---------------------------------------------------------------------------------------
STATIC_FAMILIES = {
    "size": ("object_size_estimation", "object_size_estimation_mcq"),
    "distance": ("object_abs_distance", "object_abs_distance_mcq"),
    "room size": ("room_size_estimation", "room_size_estimation_single", "room_size_estimation_multiple",
                  "room_size_estimation_mcq"),
    "relative distance": ("object_rel_distance", "object_rel_distance_closest", "object_rel_distance_farthest"),
    "relative direction": ("object_rel_direction_easy", "object_rel_direction_medium", "object_rel_direction_hard",
                           "object_rel_direction_forward_easy", "object_rel_direction_backward_easy",
                           "object_rel_direction_forward_hard", "object_rel_direction_backward_hard"),
    "counting": ("object_counting", "object_counting_single", "object_counting_multiple"),
    "appearance order": ("obj_appearance_order",),
}
FAMILY_OF = {t: fam for fam, types in STATIC_FAMILIES.items() for t in types}
OTHER = "other"
AGREE, DISAGREE, NOT_CHECKABLE = "agree", "disagree", "not checkable"
# VSI-Bench's direction types as the generator's levels (vistest.generate.direction.VSIBENCH_LEVELS)
_LEVEL = {"object_rel_direction_easy": "forward_lr", "object_rel_direction_medium": "forward_easy",
          "object_rel_direction_hard": "forward_hard"}


@dataclass(frozen=True)
class StaticAuditConfig:
    """Tolerances of the static answer audit (docs/audit.md, "Static answers"). A given answer
    disagrees with the scene only beyond them."""

    rel_tol: float = 0.10
    """numbers (size cm, distance m, room m^2): |given - recomputed| / recomputed at most this agrees
    (MRA's 0.90 threshold: an answer scored correct at every MRA threshold up to 0.90)."""
    tie_m: float = 0.05
    """metres: relative distance: a keyed option at most this much closer (farther) than the
    recomputed winner is a tie, not a disagreement."""
    angle_tol_deg: float = 10.0
    """degrees: relative direction: the keyed answer agrees when it is the answer of some angle
    within this of the recomputed one (a query object near a boundary)."""
    order_tol_s: float = 0.5
    """seconds: appearance order: two labels whose first appearances are at most this far apart
    may be given in either order."""


@dataclass(frozen=True)
class StaticRow:
    """One row: its family (key of :data:`STATIC_FAMILIES`, or ``other``), the answer given
    (number or text), the recomputed one, the verdict (``agree``, ``disagree``, ``not checkable``)
    and why (the recomputation in words: objects, values with units, tolerance)."""

    id: str
    line: int
    question_type: str
    family: str
    given: Any
    recomputed: Any
    verdict: str
    why: str


@dataclass(frozen=True)
class StaticAuditReport:
    """The static answer audit of one question file against one scene."""

    scene_id: str
    questions: str
    config: StaticAuditConfig
    rows: tuple[StaticRow, ...]

    def summary(self) -> dict[str, dict[str, int]]:
        """Per family (those with rows, in :data:`STATIC_FAMILIES` order, then ``other``):
        checked (agree + disagree), agree, disagree, not checkable."""
        out: dict[str, dict[str, int]] = {}
        for fam in (*STATIC_FAMILIES, OTHER):
            rows = [r for r in self.rows if r.family == fam]
            if rows:
                n = {v: sum(r.verdict == v for r in rows) for v in (AGREE, DISAGREE, NOT_CHECKABLE)}
                out[fam] = {"checked": n[AGREE] + n[DISAGREE], **n}
        return out

    @property
    def disagreements(self) -> tuple[StaticRow, ...]:
        return tuple(r for r in self.rows if r.verdict == DISAGREE)

    @property
    def checked(self) -> int:
        return sum(r.verdict != NOT_CHECKABLE for r in self.rows)

    @property
    def passed(self) -> bool:
        return not self.disagreements

    def to_dict(self) -> dict:
        return {"format": "vistest.static_answer_audit/1", "scene_id": self.scene_id, "questions": self.questions,
                "passed": self.passed, "config": asdict(self.config), "summary": self.summary(),
                "rows": [asdict(r) for r in self.rows]}

    def markdown(self, per_row: bool = True) -> str:
        """Verdict, the table per family, every disagreement with the recomputed value and why;
        with ``per_row`` every row."""
        bad = self.disagreements
        lines = [f"# Static answers: {self.questions} on {self.scene_id}", "",
                 f"**{'PASS' if self.passed else 'FAIL'}**: {len(bad)} of {self.checked} checked answers disagree "
                 f"with the scene beyond the tolerances (numbers {self.config.rel_tol:.0%} relative, counts exact, "
                 f"ties {self.config.tie_m} m, angles {self.config.angle_tol_deg:g} deg, first appearances "
                 f"{self.config.order_tol_s:g} s)", "",
                 "| type | checked | agree | disagree | not checkable |", "|---|---:|---:|---:|---:|"]
        for fam, n in self.summary().items():
            lines.append(f"| {fam} | {n['checked']} | {n[AGREE]} | {n[DISAGREE]} | {n[NOT_CHECKABLE]} |")
        shown = self.rows if per_row else bad
        if shown:
            lines += ["", "| row | type | given | recomputed | verdict | why |", "|---|---|---|---|---|---|"]
            for r in shown:
                lines.append(f"| {r.id} | {r.question_type} | {_show(r.given)} | {_show(r.recomputed)} | "
                             f"{r.verdict} | {r.why} |")
        return "\n".join(lines) + "\n"


def _show(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.4g}"
    return "-" if x is None else str(x).replace("|", "/")


class _StaticScene:
    """The scene as the generator's templates see it: boxes in the pose world, labels, and (on
    demand) first appearances from a visibility table under the budget stage's default seen rule."""

    def __init__(self, scene: Scene, visibility=None):
        self.scene, self._vis, self._facts = scene, visibility, None
        centers, sizes, rots = scene.world_boxes()
        self.box = {o.id: (centers[i], sizes[i], rots[i]) for i, o in enumerate(scene.objects)}
        self.label = {o.id: o.label for o in scene.objects}
        self.moving = {o.id for o in scene.objects if o.track is not None}
        self.moving_labels = {o.label for o in scene.objects if o.track is not None}

    def instances(self, label: str) -> list[str]:
        return [oid for oid, lab in self.label.items() if lab == label]

    def facts(self):
        if self._facts is None:
            from ..budget.seen import DEFAULT_SEEN_THRESHOLD
            from ..generate.facts import SceneFacts
            from ..visibility.table import compute_visibility

            vis = self._vis if self._vis is not None else compute_visibility(self.scene)
            self._facts = SceneFacts(self.scene, vis, DEFAULT_SEEN_THRESHOLD)
        return self._facts


def _given(q) -> tuple[Any, str]:
    """(the answer the row gives, "") or (None, why it has none to check): the keyed option's text
    for multiple choice, else ``ground_truth``."""
    gt = q.ground_truth
    if q.options and isinstance(gt, str) and len(gt.strip()) == 1:
        from ..answers import is_special_option, split_option

        for opt in q.options:
            letter, text = split_option(opt)
            if letter == gt.strip().upper():
                if is_special_option(text):
                    return None, f"the keyed option is {text!r}"
                return text.strip(), ""
        return None, f"no option keyed {gt!r}"
    return gt, ""


def _number_of(x: Any) -> float | None:
    from ..questions import option_number

    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return float(x)
    return option_number(str(x)) if x is not None else None


def _check_number(given: Any, value: float, unit: str, what: str, cfg: StaticAuditConfig) -> tuple[Any, str, str]:
    g = _number_of(given)
    if g is None:
        return None, NOT_CHECKABLE, f"the answer {given!r} is not a number"
    err = abs(g - value) / value if value > 0 else (0.0 if g == value else math.inf)
    verdict = AGREE if err <= cfg.rel_tol else DISAGREE
    return (round(value, 3), verdict, f"{what} is {value:.3g} {unit}; the answer {g:g} {unit} is off by "
            f"{err:.0%} ({'within' if verdict == AGREE else 'beyond'} {cfg.rel_tol:.0%})")


def _static_row(q, fam: str, s: _StaticScene, cfg: StaticAuditConfig) -> tuple[Any, str, str]:
    """(recomputed, verdict, why) of one parsed question of family ``fam`` (its check in :data:`_CHECKS`)."""
    given, why = _given(q)
    if given is None:
        return None, NOT_CHECKABLE, why
    named = [*q.objects, *(oid for lab in q.category for oid in s.instances(lab))]
    if any(oid in s.moving for oid in named) or any(lab in s.moving_labels for lab in q.category):
        return None, NOT_CHECKABLE, "it names a moving object: a static answer is not defined"
    return _CHECKS[fam](q, given, s, cfg)


def _size(q, given, s: _StaticScene, cfg: StaticAuditConfig) -> tuple[Any, str, str]:
    from ..generate.size import longest_side_cm

    o = q.objects[0]
    return _check_number(given, longest_side_cm(s.box[o][1]), "cm", f"the longest side of {s.label[o]} {o}'s box", cfg)


def _distance(q, given, s: _StaticScene, cfg: StaticAuditConfig) -> tuple[Any, str, str]:
    from ..generate import geometry as geo

    a, b = q.objects[:2]
    d = geo.box_distance(s.box[a], s.box[b])
    return _check_number(given, d, "m", f"the closest-point distance of {s.label[a]} {a} and {s.label[b]} {b}", cfg)


def _room_size(q, given, s: _StaticScene, cfg: StaticAuditConfig) -> tuple[Any, str, str]:
    area = s.scene.room_area_m2
    if area is None:
        return None, NOT_CHECKABLE, "the scene has no room area"
    return _check_number(given, float(area), "m^2", "the scene's room area", cfg)


def _counting(q, given, s: _StaticScene, cfg: StaticAuditConfig) -> tuple[Any, str, str]:
    g = _number_of(given)
    n = sum(len(s.instances(lab)) for lab in q.category)
    if g is None:
        return None, NOT_CHECKABLE, f"the answer {given!r} is not a number"
    per = ", ".join(f"{lab} {len(s.instances(lab))}" for lab in q.category)
    return n, AGREE if g == n else DISAGREE, f"the scene has {n} instances ({per}); the answer is {g:g}"


def _relative_distance(q, given, s: _StaticScene, cfg: StaticAuditConfig) -> tuple[Any, str, str]:
    """Each option's distance from the primary object (an option label with several instances: its
    nearest, or farthest for a farthest question); a keyed option within ``tie_m`` of the winner agrees."""
    from ..generate import geometry as geo
    from ..questions import option_labels

    p, farthest = q.objects[0], q.question_type.endswith("farthest")
    dists: dict[str, float] = {}
    notes = []
    for opt in q.options or ():
        lab = option_labels(opt)[0] if option_labels(opt) else ""
        ids = [o for o in q.objects[1:] if s.label[o].lower() == lab] or \
            [o for o, lb in s.label.items() if lb.lower() == lab and o != p]
        if not ids:
            continue
        if len(ids) > 1:
            notes.append(f"{lab}: {len(ids)} instances, the {'farthest' if farthest else 'nearest'} counts")
        ds = [geo.box_distance(s.box[p], s.box[o]) for o in ids]
        dists[lab] = max(ds) if farthest else min(ds)
    key = str(given).lower()
    if key not in dists:
        return None, NOT_CHECKABLE, f"the answer {given!r} names no object of the scene"
    best = (max if farthest else min)(dists, key=lambda k: dists[k])
    gap = abs(dists[best] - dists[key])
    verdict = AGREE if gap <= cfg.tie_m else DISAGREE
    text = ", ".join(f"{k} {v:.2f} m" for k, v in sorted(dists.items(), key=lambda kv: kv[1]))
    return best, verdict, (f"closest-point distances from {s.label[p]} {p}: {text}; {best} is the "
                           f"{'farthest' if farthest else 'closest'}" + (f" ({'; '.join(notes)})" if notes else "")
                           + ("" if key == best else f"; the answer {key} is {gap:.2f} m "
                              f"{'nearer' if farthest else 'farther'} "
                              f"({'within' if verdict == AGREE else 'beyond'} the {cfg.tie_m} m tie)"))


def _relative_direction(q, given, s: _StaticScene, cfg: StaticAuditConfig) -> tuple[Any, str, str]:
    """The generator's rule (vistest.generate.direction): in the floor plane from A's centre, facing
    B's centre (backward: away from it), C's centre's counter-clockwise angle seen from above; the
    keyed word agrees when some angle within ``angle_tol_deg`` gives it."""
    from ..generate import direction as gdir
    from ..generate import geometry as geo
    from ..generate.rules import RelDirectionRules

    if len(q.objects) < 3:
        return None, NOT_CHECKABLE, "objects: expected [standing by, facing, asked about]"
    level = _LEVEL.get(q.question_type, q.question_type.removeprefix("object_rel_direction_"))
    a, b, c = (s.box[o][0][:2] for o in q.objects[:3])
    facing = (a - b) if level.startswith("backward") else (b - a)
    back = RelDirectionRules().back_turn_deg
    ang = float(geo.ccw_angle_deg(facing, (c - a)[None])[0])
    words = gdir.answer_words(level)
    reg = gdir.region(np.array([ang, ang - cfg.angle_tol_deg, ang + cfg.angle_tol_deg]) % 360.0, level, back)
    near = [words[i] if i < len(words) else "back" for i in reg]
    key = str(given).strip().lower()
    if key not in words:
        return near[0], NOT_CHECKABLE, f"the answer {given!r} is not one of {', '.join(words)}"
    verdict = AGREE if key in near else DISAGREE
    na, nb, nc = (f"{s.label[o]} {o}" for o in q.objects[:3])
    away = "away from " if level.startswith("backward") else ""
    other = next((w for w in near[1:] if w != near[0]), None)
    return near[0], verdict, (f"standing by {na} facing {away}{nb}, {nc} is {ang:.0f} deg counter-clockwise "
                              f"from ahead (90 left, 270 right): {near[0]}"
                              + (f" (within {cfg.angle_tol_deg:g} deg of {other})" if other else ""))


def _appearance_order(q, given, s: _StaticScene, cfg: StaticAuditConfig) -> tuple[Any, str, str]:
    """First appearances under the default seen rule (vistest.generate.facts); two labels at most
    ``order_tol_s`` apart may come in either order."""
    f = s.facts()
    labels = list(q.category) or [s.label[o] for o in q.objects]
    times = {lab.lower(): f.label_first_time(lab) if lab in f.by_label else None for lab in labels}
    unseen = [lab for lab, t in times.items() if t is None]
    order = sorted(times, key=lambda lab: (times[lab] is None, times[lab] or 0.0))
    text = ", ".join(f"{lab} {times[lab]:.2f} s" if times[lab] is not None else f"{lab} never" for lab in order)
    if unseen:
        return None, NOT_CHECKABLE, f"first appearances: {text}: {', '.join(unseen)} never seen in the video"
    got = [x.strip().lower() for x in str(given).split(",")]
    if sorted(got) != sorted(times):
        return ", ".join(order), NOT_CHECKABLE, f"the answer {given!r} does not list the question's labels"
    wrong = [(x, y) for i, x in enumerate(got) for y in got[i + 1:] if times[x] - times[y] > cfg.order_tol_s]
    verdict = DISAGREE if wrong else AGREE
    return ", ".join(order), verdict, (f"first appearances: {text}"
                                       + (f"; the answer puts {wrong[0][0]} before {wrong[0][1]}" if wrong else ""))


# each static family's check: (question, the answer given, the scene, tolerances) -> (recomputed, verdict, why)
_CHECKS = {"size": _size, "distance": _distance, "room size": _room_size, "counting": _counting,
           "relative distance": _relative_distance, "relative direction": _relative_direction,
           "appearance order": _appearance_order}
assert set(_CHECKS) == set(STATIC_FAMILIES)


def audit_static(scene: Scene, questions: str | os.PathLike, config: StaticAuditConfig = StaticAuditConfig(),
                 visibility=None) -> StaticAuditReport:
    """Recompute every static answer of ``questions`` (JSONL) from ``scene`` with the generator's
    geometry (vistest.generate: longest box side, closest-point box distances, floor-plane angles,
    first appearances under the default seen rule from ``visibility``, computed when needed and
    not given) and compare within ``config``'s tolerances. Rows of another ``scene_id`` are left
    out; rows of other types (grounding, route, time windows, tracks) are ``other``, not checkable.
    A row of a static type that does not validate raises QuestionError (file, line, field)."""
    scene.require_3d("vistest audit --questions")
    from ..questions import QUESTION_TYPES, parse_question

    path = Path(questions)
    s = _StaticScene(scene, visibility)
    rows = []
    for line, doc in iter_jsonl(read_text(path, InputError, "question file").splitlines(), str(path), InputError):
        if doc.get("scene_id") not in (None, scene.scene_id):
            continue
        qtype = str(doc.get("question_type"))
        fam = FAMILY_OF.get(qtype, OTHER)
        rid = str(doc.get("id", f"line {line}"))
        if fam == OTHER:
            what = (f"type {qtype}: not a static question (3D answers at an instant are back-projected instead)"
                    if qtype not in QUESTION_TYPES else f"type {qtype}: no static answer (a route, a time window "
                    f"or a track)")
            rows.append(StaticRow(rid, line, qtype, OTHER, doc.get("ground_truth"), None, NOT_CHECKABLE, what))
            continue
        q = parse_question(doc, str(path), line, scene)
        recomputed, verdict, why = _static_row(q, fam, s, config)
        rows.append(StaticRow(q.id, line, qtype, fam, _given(q)[0], recomputed, verdict, why))
    return StaticAuditReport(scene.scene_id, str(path), config, tuple(rows))


# ---------------------------------------------------------------------------------------
# static answers over many scenes (a benchmark's rows, e.g. VSI-Bench's imported)
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StaticAuditSet:
    """The static answer audit of one question file over several scenes: a report per scene that has
    rows, and the rows whose ``scene_id`` is none of the scenes given (``unmatched``: (id, scene_id))."""

    questions: str
    reports: tuple[StaticAuditReport, ...]
    unmatched: tuple[tuple[str, str], ...]

    def summary(self) -> dict[str, dict[str, int]]:
        """Per family, summed over the scenes: checked, agree, disagree, not checkable."""
        out: dict[str, dict[str, int]] = {}
        for rep in self.reports:
            for fam, n in rep.summary().items():
                acc = out.setdefault(fam, {"checked": 0, AGREE: 0, DISAGREE: 0, NOT_CHECKABLE: 0})
                for k, v in n.items():
                    acc[k] += v
        order = [*STATIC_FAMILIES, OTHER]
        return dict(sorted(out.items(), key=lambda kv: order.index(kv[0])))

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.reports)

    def to_dict(self) -> dict:
        return {"format": "vistest.static_answer_audit_set/1", "questions": self.questions, "passed": self.passed,
                "summary": self.summary(), "scenes": [r.to_dict() for r in self.reports],
                "unmatched": [{"id": i, "scene_id": s} for i, s in self.unmatched]}

    def markdown(self, per_row: bool = False) -> str:
        """Verdict, the table per family over every scene (with the share of checked answers that
        disagree), then every disagreement (scene, row, given, recomputed, why); ``per_row``: every row."""
        bad = [(rep.scene_id, r) for rep in self.reports for r in (rep.rows if per_row else rep.disagreements)]
        n_bad = sum(len(rep.disagreements) for rep in self.reports)
        checked = sum(rep.checked for rep in self.reports)
        cfg = self.reports[0].config if self.reports else StaticAuditConfig()
        lines = [f"# Static answers: {self.questions} on {len(self.reports)} scenes", "",
                 f"**{'PASS' if self.passed else 'FAIL'}**: {n_bad} of {checked} checked answers disagree with "
                 f"their scene beyond the tolerances (numbers {cfg.rel_tol:.0%} relative, counts exact, ties "
                 f"{cfg.tie_m} m, angles {cfg.angle_tol_deg:g} deg, first appearances {cfg.order_tol_s:g} s)"
                 + (f"; {len(self.unmatched)} rows name a scene not given (not audited)" if self.unmatched else ""),
                 "", "| type | checked | agree | disagree | disagree % | not checkable |",
                 "|---|---:|---:|---:|---:|---:|"]
        for fam, n in self.summary().items():
            share = f"{100 * n[DISAGREE] / n['checked']:.1f}" if n["checked"] else "-"
            lines.append(f"| {fam} | {n['checked']} | {n[AGREE]} | {n[DISAGREE]} | {share} | {n[NOT_CHECKABLE]} |")
        if bad:
            lines += ["", "| scene | row | type | given | recomputed | verdict | why |",
                      "|---|---|---|---|---|---|---|"]
            for sid, r in bad:
                lines.append(f"| {sid} | {r.id} | {r.question_type} | {_show(r.given)} | {_show(r.recomputed)} | "
                             f"{r.verdict} | {r.why} |")
        return "\n".join(lines) + "\n"


def audit_static_set(scene_paths: list[str | os.PathLike], questions: str | os.PathLike,
                     config: StaticAuditConfig = StaticAuditConfig(), progress=None) -> StaticAuditSet:
    """:func:`audit_static` of ``questions`` on each scene (``scene.json`` paths) that has rows in it
    (by ``scene_id``); rows of no given scene are listed as unmatched. ``progress(i, n, scene_id)``:
    called before each scene. InputError when no row names a given scene."""
    path = Path(questions)
    ids_by_scene: dict[str, list[str]] = {}
    for line, doc in iter_jsonl(read_text(path, InputError, "question file").splitlines(), str(path), InputError):
        ids_by_scene.setdefault(str(doc.get("scene_id")), []).append(str(doc.get("id", f"line {line}")))
    scenes = {}
    for p in scene_paths:
        scene = Scene.load(p)
        if scene.scene_id in scenes:
            raise InputError(f"{p}: scene_id: {scene.scene_id!r} is also the id of {scenes[scene.scene_id]}; expected "
                             f"one scene per id")
        scenes[scene.scene_id] = p
    todo = [s for s in scenes if s in ids_by_scene]
    if not todo:
        raise InputError(f"{questions}: scene_id: no row names one of the {len(scenes)} scenes given "
                         f"({', '.join(sorted(scenes)[:5])}{' ...' if len(scenes) > 5 else ''})")
    reports = []
    for i, sid in enumerate(sorted(todo)):
        if progress is not None:
            progress(i, len(todo), sid)
        reports.append(audit_static(Scene.load(scenes[sid]), path, config))
    unmatched = tuple((rid, sid) for sid, rids in ids_by_scene.items() if sid not in scenes for rid in rids)
    return StaticAuditSet(str(path), tuple(reports), unmatched)
