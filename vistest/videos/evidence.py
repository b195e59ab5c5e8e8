"""Evidence: which frames of a scene show a question's objects, and where (the dummies' input).

Frame f carries evidence for a question when any referenced object (``objects``, or every instance
of a ``category``: :func:`evidence_objects`) has ``visible[f, o] > threshold`` in the visibility
table's evidence region (:class:`EvidenceTable`; the box bound, so that removing evidence errs
toward "may be visible"). Frames without a valid pose or visibility row are *unknown*, and so, for
one object, are frames where its value is unknown (NaN: a 2D scene's frames the annotation says
nothing of, docs/tracks2d.md). A question with a time window or an instant
(``time_start``/``time_end``, ``time``) asks about those times only: its evidence is restricted to
its :func:`time_span`, the frames whose content can answer it (the window's frames, and those within
the instant tolerance of its instant, by the budget stage's own arithmetic: vistest.budget.windows);
outside it the object's presence answers nothing and stays. Rectangles (:data:`Rect`) are ``(x0, y0,
x1, y1)`` half-open pixel bounds in the written (even) frame size, with even coordinates (yuv420p
chroma covers 2x2 pixels).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..budget.windows import DEFAULT_INSTANT_TOLERANCE_S, frames_in_span
from ..errors import InputError
from ..questions import Question
from ..scene import Scene
from ..visibility.table import Visibility

Rect = tuple[int, int, int, int]
Span = frozenset[int] | None  # decoded frames a timed question asks about; None: every frame


def time_span(q: Question, num_frames: int, fps: float,
              instant_tolerance_s: float = DEFAULT_INSTANT_TOLERANCE_S) -> Span:
    """The decoded frames 0..``num_frames``-1 whose content can answer ``q``: with a window, the
    frames inside it (closed at both ends, :func:`vistest.budget.windows.frames_in_window`); with
    an instant, the frames at most ``instant_tolerance_s`` seconds from it (those
    :func:`vistest.budget.windows.nearest_frame` accepts); with both, the union (the instant lies
    in the window; the tolerance may reach past its ends). None for a question with neither."""
    span = frames_in_span(range(num_frames), q.window, q.instant, fps, instant_tolerance_s)
    return None if span is None else frozenset(span)


def evidence_objects(q: Question, scene: Scene) -> tuple[str, ...]:
    """Object ids whose evidence a dummy removes: ``objects``, then every instance of each
    ``category`` label (scene order); empty for questions about no object (room size)."""
    ids = list(q.objects)
    for lab in q.category:
        ids += [o.id for o in scene.objects if o.label == lab and o.id not in ids]
    return tuple(ids)


class EvidenceTable:
    """Visibility indexed by decoded frame 0..N-1: ``visible`` (N, O), the table's evidence
    region (``Visibility.evidence``: the box bound, never the instance share), NaN for unknown
    frames (invalid pose or no row), ``bbox`` (N, O, 4), ``known`` (N,), columns by object id."""

    def __init__(self, vis: Visibility, num_frames: int, threshold: float):
        self.source = vis.source
        if not 0.0 <= float(threshold) < 1.0:
            raise InputError(f"evidence_threshold: expected a fraction of the image area in [0, 1), got {threshold!r}")
        fidx = np.asarray(vis.frame_index, dtype=np.int64)
        ids = [str(x) for x in np.asarray(vis.object_ids).tolist()]
        self.col = {oid: c for c, oid in enumerate(ids)}
        self.num_frames = num_frames
        self.threshold = float(threshold)
        self.visible = np.full((num_frames, len(ids)), np.nan)
        self.bbox = np.full((num_frames, len(ids), 4), np.nan)
        rows = (fidx >= 0) & (fidx < num_frames)
        self.visible[fidx[rows]] = np.asarray(vis.evidence, dtype=np.float64)[rows]  # the evidence region (box bound)
        self.bbox[fidx[rows]] = np.asarray(vis.bbox, dtype=np.float64)[rows]
        valid = np.zeros(num_frames, bool)
        valid[fidx[rows]] = np.asarray(vis.valid, bool)[rows]
        self.valid = valid
        self.known = valid & np.isfinite(self.visible).all(axis=1)

    def unknown_of(self, object_ids: Sequence[str]) -> np.ndarray:
        """(N,) bool: frames where nothing says whether one of ``object_ids`` shows: no valid row,
        or that object's value unknown (NaN: a 2D scene's frames outside the annotation, docs/tracks2d.md).
        For a 3D scene the same frames for every object (a row is NaN as a whole)."""
        if not object_ids:
            return ~self.known
        return ~self.valid | np.isnan(self.visible[:, self.columns(object_ids)]).any(axis=1)

    def columns(self, object_ids: Sequence[str]) -> list[int]:
        """Column of each object id; InputError naming the ids the table lacks."""
        missing = [o for o in object_ids if o not in self.col]
        if missing:
            raise InputError(f"{self.source}: object_ids: no column for object(s) {missing} (stale visibility "
                             f"file?)")
        return [self.col[o] for o in object_ids]

    def evident(self, object_ids: Sequence[str], span: Span = None) -> np.ndarray:
        """(N, k) bool: object k visible above the threshold in frame f (False where unknown,
        and outside ``span`` when one is given: :func:`time_span`)."""
        v = self.visible[:, self.columns(object_ids)]
        with np.errstate(invalid="ignore"):
            ev = v > self.threshold
        return ev & self.in_span(span)[:, None] if span is not None else ev

    def in_span(self, span: Span) -> np.ndarray:
        """(N,) bool: frame f is in ``span`` (every frame for None)."""
        if span is None:
            return np.ones(self.num_frames, bool)
        out = np.zeros(self.num_frames, bool)
        out[np.fromiter((f for f in span if 0 <= f < self.num_frames), np.int64)] = True
        return out

    def evidence_frames(self, object_ids: Sequence[str], unknown_as_evidence: bool = True,
                        span: Span = None) -> tuple[int, ...]:
        """Sorted decoded frames carrying evidence of any of ``object_ids`` (plus unknown frames),
        within ``span`` when one is given (:func:`time_span`)."""
        if not object_ids:
            return ()
        ev = self.evident(object_ids, span).any(axis=1)
        if unknown_as_evidence:
            ev |= self.unknown_of(object_ids) & self.in_span(span)
        return tuple(int(f) for f in np.flatnonzero(ev))

    def mask_rects(self, object_ids: Sequence[str], size: tuple[int, int], margin: int,
                   span: Span = None) -> dict[int, tuple[Rect, ...]]:
        """{frame: rectangles} covering each evident object's visible box, grown by ``margin``
        pixels, aligned outward to even coordinates and clipped to ``size`` (W, H); only frames
        in ``span`` when one is given."""
        cols = self.columns(object_ids)
        ev = self.evident(object_ids, span)
        out: dict[int, tuple[Rect, ...]] = {}
        for f, k in zip(*np.nonzero(ev)):
            b = self.bbox[f, cols[k]]
            if not np.isfinite(b).all():
                continue  # visible above the threshold but no box: cannot happen with vistest's kernel
            out.setdefault(int(f), ())
            out[int(f)] += (even_rect(b, margin, size),)
        return {f: tuple(sorted(set(rs))) for f, rs in sorted(out.items())}


def even_rect(bbox: Sequence[float], margin: int, size: tuple[int, int]) -> Rect:
    """``[x0, y0, x1, y1]`` half-open pixel bounds grown by ``margin`` px, with x0, y0 rounded
    down and x1, y1 up to even numbers, clipped to the (even) frame ``size`` (W, H)."""
    w, h = size
    x0, y0, x1, y1 = (float(v) for v in bbox)
    x0, y0 = max(0, int(np.floor(x0)) - margin), max(0, int(np.floor(y0)) - margin)
    x1, y1 = min(w, int(np.ceil(x1)) + margin), min(h, int(np.ceil(y1)) + margin)
    x0, y0 = x0 - x0 % 2, y0 - y0 % 2
    x1, y1 = min(w, x1 + x1 % 2), min(h, y1 + y1 % 2)
    return (x0, y0, x1, y1)


def shown_evidence(table: EvidenceTable, object_ids: Sequence[str], frames: Sequence[int], black: Sequence[int],
                   masks: Sequence[tuple[int, tuple[Rect, ...]]], span: Span = None) -> tuple[int, ...]:
    """Frames a dummy shows (neither black nor masked there) in which an object of
    ``object_ids`` is visible above the evidence threshold (known frames only; within the
    question's ``span`` when it has one): what the dummy's ground truth must be computed over,
    and empty for every dummy vistest plans."""
    if not object_ids or not len(frames):
        return ()
    ev = table.evident(object_ids, span).any(axis=1)
    hidden = set(black) | {f for f, _ in masks}
    return tuple(sorted({int(f) for f in frames if ev[f] and f not in hidden}))


def dummy_evidence(table: EvidenceTable, q: Question, scene: Scene, unknown_as_evidence: bool = True,
                   frame_margin: int = 0, instant_tolerance_s: float = DEFAULT_INSTANT_TOLERANCE_S
                   ) -> tuple[tuple[str, ...], Span, tuple[int, ...]]:
    """What ``q``'s drop and black dummies remove: (its evidence objects (:func:`evidence_objects`),
    its :func:`time_span` at ``instant_tolerance_s``, the sorted frames). The frames carry evidence
    of the objects within the span (unknown frames too unless ``unknown_as_evidence`` is off),
    plus each one's ``frame_margin`` neighbours before and after (within the span). No objects:
    no frames (only the all-black dummy exists). The one rule of the dummy videos
    (vistest.videos.plan) and of ``vistest timeline``'s rows (vistest.look.timeline)."""
    objs = evidence_objects(q, scene)
    n = table.num_frames
    span = time_span(q, n, scene.fps, instant_tolerance_s)  # a timed question: only the frames it asks about
    evidence = table.evidence_frames(objs, unknown_as_evidence, span) if objs else ()
    if frame_margin:  # each evidence frame's neighbours too (within the span)
        m = frame_margin
        evidence = tuple(sorted({g for f in evidence for g in range(max(0, f - m), min(n, f + m + 1))
                                 if span is None or g in span}))
    return objs, span, evidence
