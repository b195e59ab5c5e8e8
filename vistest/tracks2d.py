"""Tracks2D: a video's objects as per-frame 2D regions, the input beside ``scene.json`` for video QA
benchmarks that give 2D annotations instead of 3D boxes and camera poses (stage 1; docs/tracks2d.md).

A 2D scene is one JSON file (format ``vistest.tracks2d/1``, usually named ``scene.json`` so that
every command taking a scene takes it; :meth:`vistest.scene.Scene.load` reads both formats and
makes the Scene the later stages read, with these tracks as its ``tracks2d``).
Conventions, stated once here and relied on by every 2D stage:

* Pixels: continuous *edge* coordinates, origin at the top-left corner of the top-left pixel;
  pixel (col i, row j) covers ``[i, i+1) x [j, j+1)``. A box ``[x0, y0, x1, y1]`` covers
  ``x0 <= x < x1``, ``y0 <= y < y1`` (so its area is ``(x1 - x0) * (y1 - y0)`` pixels). Each
  importer converts its format's convention to this one (docs/tracks2d.md, per format).
* Frames: ``frame`` is the 0-based decoded frame number of ``video``; ``num_frames`` decoded frames.
* Masks: COCO run-length encoding (``{"size": [h, w], "counts": ...}``, counts a list of ints or
  the compressed string), runs alternating 0 and 1 starting with 0 over the mask in
  *column-major* order (pycocotools ``maskApi.c``: ``rleDecode`` writes runs down each column;
  ``rleFrString`` the string form): :func:`rle_decode`; COCO polygons are rasterised on import
  by pycocotools' rule (:func:`polygon_mask`) and stored so. A mask is the object's own pixels; its
  ``box`` is then the mask's bounds (given or computed).
* ``annotated_frames``: the frames an annotator looked at (Perception Test: about one per second;
  MOT: every frame). At an annotated frame, an object with a region is *annotated*, one without
  is *absent* (not in view).
* Between two consecutive annotated frames at most ``max_gap_s`` seconds apart (plus half a
  frame): an object with a region at both is *interpolated* (its box linearly, its mask area
  linearly); absent at both, it is *absent*; present at one end only (it enters or leaves),
  *unknown*. Farther apart, and before the first or after the last annotated frame, every
  object is *unknown*: nothing says whether it is in view. Unknown is never unseen: the
  visibility table holds NaN there and the budget stage reports answers that depend on it
  (docs/tracks2d.md).

Everything is validated on load; a bad value raises :class:`Tracks2DError` (an InputError)
naming the file, the field and what was expected.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Sequence

import numpy as np

from .errors import InputError
from .budgets import MAX_BUDGET

FORMAT = "vistest.tracks2d/1"  # vistest.scene.TRACKS2D_FORMAT
MAX_IMAGE_SIDE = 16384  # pixels a side of a 2D scene's frames: bounds a mask's decoded size (268 M pixels)
MIN_FPS, MAX_FPS = 0.01, 1000.0
# bytes per (frame, object) of the states and the visibility table at their peak: measured 230 (6.9 GB of
# resident memory for `vistest visibility` on 10 M frames x 3 objects, issue #44), rounded up
TABLE_BYTES_PER_CELL = 240  # frames/s a 2D scene may have (ffmpeg's rational rate stays exact)
DEFAULT_MAX_GAP_S = 1.0  # seconds: Perception Test annotates about one frame per second (README "frame_ids")
# per (frame, object) states (:meth:`Tracks2D.states`)
ANNOTATED, INTERPOLATED, ABSENT, UNKNOWN = 0, 1, 2, 3
STATE_NAMES = ("annotated", "interpolated", "absent", "unknown")


class Tracks2DError(InputError):
    """Invalid 2D track input: the message names the file, the field and the expectation."""


# ---------------------------------------------------------------------------------------
# COCO run-length masks
# ---------------------------------------------------------------------------------------
def rle_counts_from_string(s: str) -> list[int]:
    """The run lengths of a compressed COCO RLE string (pycocotools ``maskApi.c`` ``rleFrString``):
    each count is a little-endian sequence of 5-bit groups, one character each (``chr(group + 48)``),
    0x20 set on every group but the last, 0x10 of the last group its sign; from the fourth count on
    (index > 2), each is stored as the difference to the count two before it."""
    counts: list[int] = []
    p = 0
    while p < len(s):
        x, k, more = 0, 0, True
        while more:
            if p >= len(s):
                raise ValueError("the string ends inside a count")
            c = ord(s[p]) - 48
            if not 0 <= c < 64:
                raise ValueError(f"character {s[p]!r} at {p} is not an RLE character ('0' .. 'o')")
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and c & 0x10:
                x -= 1 << (5 * k)  # sign-extend
        if len(counts) > 2:
            x += counts[-2]
        counts.append(x)
    return counts


def rle_decode(rle: Any, where: str = "mask") -> np.ndarray:
    """The (h, w) bool mask of a COCO RLE ``{"size": [h, w], "counts": list or str}`` (module
    docstring: runs of 0 then 1 alternating, column-major). Tracks2DError naming ``where`` when the
    runs do not add up to h * w."""
    if not isinstance(rle, dict) or "size" not in rle or "counts" not in rle:
        raise Tracks2DError(f"{where}: expected a COCO RLE {{\"size\": [h, w], \"counts\": ...}}, got {_short(rle)}")
    size = rle["size"]
    if (not isinstance(size, (list, tuple)) or len(size) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in size)):
        raise Tracks2DError(f"{where}.size: expected [h, w], two positive integers, got {_short(size)}")
    h, w = size
    if max(h, w) > MAX_IMAGE_SIDE:  # before the runs are expanded
        raise Tracks2DError(f"{where}.size: expected at most {MAX_IMAGE_SIDE} pixels a side, got {_short(size)}")
    counts = rle["counts"]
    try:
        if isinstance(counts, str):
            runs = rle_counts_from_string(counts)
        elif isinstance(counts, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in counts):
            runs = list(counts)
        else:
            raise ValueError("expected a list of integers or the compressed string")
    except ValueError as e:
        raise Tracks2DError(f"{where}.counts: {e}") from None
    if any(r < 0 for r in runs) or sum(runs) != h * w:
        raise Tracks2DError(f"{where}.counts: the runs add up to {sum(runs)} pixels (or one is negative), "
                            f"expected h * w = {h * w}")
    flat = np.repeat(np.arange(len(runs)) % 2 == 1, runs)
    return flat.reshape((w, h)).T  # column-major: the runs go down each column


def rle_encode(mask: np.ndarray) -> dict:
    """The uncompressed COCO RLE ``{"size": [h, w], "counts": [runs]}`` of an (h, w) bool mask: runs
    of 0 then 1 alternating, column-major (the inverse of :func:`rle_decode`)."""
    h, w = mask.shape
    flat = np.asarray(mask, bool).T.reshape(-1)  # column-major: down each column
    edges = np.flatnonzero(np.diff(flat.view(np.int8))) + 1
    bounds = np.concatenate(([0], edges, [flat.size]))
    runs = np.diff(bounds).tolist()
    if flat.size and flat[0]:
        runs = [0] + runs  # the first run counts zeros
    return {"size": [int(h), int(w)], "counts": [int(r) for r in runs]}


POLY_SCALE = 5  # pycocotools maskApi.c rleFrPoly: ``double scale=5``


def _poly_boundary(xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The dense boundary of a closed polygon on the upsampled integer grid, as pycocotools
    ``maskApi.c`` ``rleFrPoly`` walks it: vertices ``(int)(5 * x + .5)`` (C truncation), each edge
    stepped one unit along its longer axis, the other coordinate ``(int)(start + slope * t + .5)``,
    the slope taken from the edge's left (or top) end so that both directions round alike."""
    us, vs = [], []
    for j in range(len(xs)):
        x0, y0, x1, y1 = int(xs[j]), int(ys[j]), int(xs[(j + 1) % len(xs)]), int(ys[(j + 1) % len(xs)])
        dx, dy = abs(x1 - x0), abs(y1 - y0)
        if dx == 0 and dy == 0:  # a repeated vertex: one point (rleFrPoly's 0/0 slope is never read)
            us.append(np.array([x0]))
            vs.append(np.array([y0]))
            continue
        along_x = dx >= dy
        flip = (along_x and x0 > x1) or (not along_x and y0 > y1)
        if flip:
            x0, x1, y0, y1 = x1, x0, y1, y0
        n = dx if along_x else dy
        d = np.arange(n + 1)
        t = n - d if flip else d
        if along_x:
            us.append(t + x0)
            vs.append(np.trunc(y0 + (y1 - y0) / dx * t + .5).astype(np.int64))
        else:
            vs.append(t + y0)
            us.append(np.trunc(x0 + (x1 - x0) / dy * t + .5).astype(np.int64))
    return np.concatenate(us), np.concatenate(vs)


def polygon_mask(polygons: Any, h: int, w: int, where: str = "segmentation") -> np.ndarray:
    """The (h, w) bool mask of COCO polygons (a list of flat ``[x1, y1, x2, y2, ...]`` lists in
    vistest's continuous edge coordinates, as pycocotools ``frPyObjects`` takes them); several
    polygons are one object's parts, united (pycocotools ``coco.py`` ``annToRLE``: ``merge``).

    The pixel rule is pycocotools' (``common/maskApi.c`` ``rleFrPoly``, cocodataset/cocoapi @
    8c9bcc3), reproduced in numpy (not a port of its code): the polygon is upsampled by 5 and its
    boundary walked on that grid (:func:`_poly_boundary`); where the boundary crosses the vertical
    line through the *centre* of column i (x = i + 0.5: upsampled ``5 i + 2 | 5 i + 3``), it toggles
    column i from row ``ceil(V / 5 - 0.4)`` down, V the upsampled y of the crossing (the smaller of
    its two points), clamped to 0 .. h. So column i holds the rows between its crossings: for a
    polygon with integer vertices, pixel (i, j) is in when its centre is inside (an axis-aligned
    rectangle ``[x0, x1) x [y0, y1)`` gives exactly those pixels). Tracks2DError naming ``where``
    for anything but lists of an even count (>= 6) of numbers."""
    if not isinstance(polygons, list) or not polygons:
        raise Tracks2DError(f"{where}: expected COCO polygons, a list of [x1, y1, x2, y2, ...] lists, got "
                            f"{_short(polygons)}")
    toggles = np.zeros(h * w + 1, np.int64)
    for k, p in enumerate(polygons):
        if (not isinstance(p, list) or len(p) < 6 or len(p) % 2
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in p)):
            raise Tracks2DError(f"{where}[{k}]: expected a polygon [x1, y1, x2, y2, ...] of at least 3 points "
                                f"(an even count of finite numbers), got {_short(p)}")
        xy = np.asarray(p, np.float64).reshape(-1, 2)
        far = (xy[:, 0] < -w) | (xy[:, 0] > 2 * w) | (xy[:, 1] < -h) | (xy[:, 1] > 2 * h)
        if far.any():  # before the boundary is walked: its length grows with the coordinates (x = 1e9: 37 GiB)
            j = int(np.argmax(far))
            raise Tracks2DError(f"{where}[{k}]: expected vertices within one image size of the {w}x{h} image "
                                f"(x in -{w}..{2 * w}, y in -{h}..{2 * h}), got ({p[2 * j]!r}, {p[2 * j + 1]!r})")
        u, v = _poly_boundary(np.trunc(POLY_SCALE * xy[:, 0] + .5), np.trunc(POLY_SCALE * xy[:, 1] + .5))
        step = u[1:] != u[:-1]
        left = np.minimum(u[1:], u[:-1])[step]  # the crossing lies between upsampled columns left, left + 1
        top = np.minimum(v[1:], v[:-1])[step]
        at_centre = (left - 2) % POLY_SCALE == 0
        col = (left - 2) // POLY_SCALE
        keep = at_centre & (col >= 0) & (col <= w - 1)
        row = np.ceil(np.clip((top[keep] + .5) / POLY_SCALE - .5, 0, h)).astype(np.int64)
        np.add.at(toggles, col[keep] * h + row, 1)  # column-major index; row h is the next column's top
        part = (np.cumsum(toggles[:-1]) % 2).astype(bool)
        toggles[:] = 0
        if k == 0:
            mask = part
        else:
            mask |= part
    return mask.reshape(w, h).T


def mask_box(mask: np.ndarray) -> np.ndarray | None:
    """``[x0, y0, x1, y1]`` edge coordinates of a mask's pixels (half-open), None when empty."""
    ys, xs = np.nonzero(mask)
    if not len(xs):
        return None
    return np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], np.float64)


# ---------------------------------------------------------------------------------------
# the data
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Region2D:
    """An object's region at one annotated ``frame``: ``box`` (4,) ``[x0, y0, x1, y1]`` edge
    coordinates (module docstring), ``mask`` a COCO RLE of the whole image or None, ``area`` the
    region's pixels inside the image (the mask's pixel count, else the clipped box's area),
    ``extra`` the format's own fields kept verbatim (e.g. Perception Test's ``is_masked``). In the
    file, ``area`` may give the pixels that show when there is no mask (at most the box's: MOT's
    box area times its ``visibility``); it is written back only where it differs from the box's."""

    frame: int
    box: np.ndarray
    area: float
    mask: dict | None = None
    extra: dict | None = None


@dataclass(frozen=True, eq=False)
class Track2D:
    """One object: ``id``, ``label`` and its regions (sorted by frame, one per frame at most)."""

    id: str
    label: str
    regions: tuple[Region2D, ...]
    extra: dict | None = None


def _gap_margins(ann: np.ndarray, at: dict, lim: np.ndarray) -> np.ndarray:
    """Per gap k between annotated frames ``ann[k]`` and ``ann[k + 1]``: the pixels an interpolated
    frame's evidence box (the hull of the two annotated boxes) is grown by on every side, the
    *neighbours' drift*: the largest move of any box edge (clipped to the image) between two
    consecutive annotated boxes of the object, over this gap and the one before and after it (0 where
    none has a box at both ends). An object that turns back inside a gap leaves the hull of its two
    boxes (issue #44: a TAO person annotated at 1 frame/s left a 2-pixel strip beside a mask dummy's
    fill); one that moves no faster than at its neighbouring annotations stays inside the grown hull."""
    drift = np.zeros(max(len(ann) - 1, 0))
    for k, (a0, a1) in enumerate(zip(ann[:-1], ann[1:])):
        r0, r1 = at.get(int(a0)), at.get(int(a1))
        if r0 is not None and r1 is not None:
            drift[k] = float(np.abs(np.clip(r1.box, 0, lim) - np.clip(r0.box, 0, lim)).max())
    if not len(drift):
        return drift
    padded = np.concatenate([[0.0], drift, [0.0]])
    return np.maximum(np.maximum(padded[:-2], padded[1:-1]), padded[2:])


@dataclass(frozen=True)
class States:
    """Per (frame, object) what the annotation says (:meth:`Tracks2D.states`): ``state`` (F, O)
    int8 (:data:`ANNOTATED`, :data:`INTERPOLATED`, :data:`ABSENT`, :data:`UNKNOWN`), ``box`` (F, O, 4)
    the region's box (annotated, or linearly interpolated; NaN otherwise), ``evidence_box`` (F, O, 4)
    where the object may be (the box; between two annotated boxes, the hull of both, grown on every
    side by the neighbours' drift, :func:`_gap_margins`: an object that turns back between them may
    leave the bare hull), ``area`` (F, O) its pixels
    (the mask's or box's; interpolated linearly; 0 absent, NaN unknown). Boxes clipped to the image."""

    state: np.ndarray
    box: np.ndarray
    evidence_box: np.ndarray
    area: np.ndarray


@dataclass(frozen=True, eq=False)
class Tracks2D:
    """A video's 2D tracks (module docstring): ``image_size`` (W, H) pixels, ``num_frames`` decoded
    frames at ``fps``, ``annotated_frames`` (sorted), ``max_gap_s`` the longest interpolated gap,
    ``source_format`` the format imported from (``perception-test``, ``mot``, ...; informative)."""

    scene_id: str
    fps: float
    image_size: tuple[int, int]
    num_frames: int
    annotated_frames: tuple[int, ...]
    objects: tuple[Track2D, ...]
    max_gap_s: float = DEFAULT_MAX_GAP_S
    video: str | None = None
    source_format: str = ""
    source: str = "<tracks2d>"

    @property
    def max_gap_frames(self) -> float:
        """The longest interpolated gap in frames: ``max_gap_s * fps`` plus half a frame (frame
        numbers are rounded from times)."""
        return self.max_gap_s * self.fps + 0.5

    def check_table_size(self) -> None:
        """Tracks2DError naming ``num_frames`` and the objects when the frames x objects tables (the
        states, then the visibility table: :data:`TABLE_BYTES_PER_CELL` each) would not fit in the
        memory available now (vistest.workers.available_memory_mb): the one number ``num_frames``
        sizes them, up to 10 million frames, so it is checked before anything is allocated."""
        from .workers import available_memory_mb

        need = self.num_frames * max(1, len(self.objects)) * TABLE_BYTES_PER_CELL / 2**20
        have = available_memory_mb()
        if need > have:
            raise Tracks2DError(f"{self.source}: num_frames: {self.num_frames} frames x {len(self.objects)} objects "
                                f"need about {need:,.0f} MB for the per-frame tables, {have:,.0f} MB are available; "
                                f"expected the decoded frame count of the video (is num_frames right?)")

    @cached_property
    def states(self) -> States:
        """Every object's state at every decoded frame (module docstring); the memory it and the
        visibility table need is checked first (:meth:`check_table_size`)."""
        self.check_table_size()
        n, no = self.num_frames, len(self.objects)
        w, h = self.image_size
        state = np.full((n, no), UNKNOWN, np.int8)
        box = np.full((n, no, 4), np.nan)
        ebox = np.full((n, no, 4), np.nan)
        area = np.full((n, no), np.nan)
        ann = np.asarray(self.annotated_frames, np.int64)
        lim = np.array([w, h, w, h], np.float64)
        for o, tr in enumerate(self.objects):
            at = {r.frame: r for r in tr.regions}
            grow = _gap_margins(ann, at, lim)
            for a in ann:
                r = at.get(int(a))
                if r is None:
                    state[a, o], area[a, o] = ABSENT, 0.0
                else:
                    state[a, o], area[a, o] = ANNOTATED, r.area
                    box[a, o] = ebox[a, o] = np.clip(r.box, 0, lim)
            for k, (a0, a1) in enumerate(zip(ann[:-1], ann[1:])):
                if a1 - a0 < 2:
                    continue
                mid = np.arange(a0 + 1, a1)
                if a1 - a0 > self.max_gap_frames:
                    continue  # unknown
                r0, r1 = at.get(int(a0)), at.get(int(a1))
                if r0 is None and r1 is None:
                    state[mid, o], area[mid, o] = ABSENT, 0.0
                elif r0 is not None and r1 is not None:
                    s = ((mid - a0) / (a1 - a0))[:, None]
                    b0, b1 = np.clip(r0.box, 0, lim), np.clip(r1.box, 0, lim)
                    state[mid, o] = INTERPOLATED
                    box[mid, o] = (1 - s) * b0 + s * b1
                    hull = np.concatenate([np.minimum(b0[:2], b1[:2]), np.maximum(b0[2:], b1[2:])])
                    ebox[mid, o] = np.clip(hull + grow[k] * np.array([-1, -1, 1, 1]), 0, lim)
                    area[mid, o] = (1 - s[:, 0]) * r0.area + s[:, 0] * r1.area
        return States(state, box, ebox, area)

    # ---- I/O ------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, doc: Any, source: str = "<tracks2d>") -> "Tracks2D":
        """Validate a parsed ``vistest.tracks2d/1`` document (docs/tracks2d.md)."""
        return _Parser(source).tracks(doc)

    def to_dict(self) -> dict:
        """The JSON document (inverse of :meth:`from_dict`)."""
        doc: dict[str, Any] = {"format": FORMAT, "scene_id": self.scene_id}
        if self.video is not None:
            doc["video"] = self.video
        doc.update(fps=self.fps, image_size=list(self.image_size), num_frames=self.num_frames,
                   max_gap_s=self.max_gap_s, annotated_frames=list(self.annotated_frames))
        if self.source_format:
            doc["source_format"] = self.source_format
        objs = []
        for t in self.objects:
            od: dict[str, Any] = {"id": t.id, "label": t.label}
            if t.extra:
                od["extra"] = t.extra
            regions = []
            for r in t.regions:
                rd: dict[str, Any] = {"frame": r.frame, "box": [float(v) for v in r.box]}
                if r.mask is not None:
                    rd["mask"] = r.mask
                elif r.area != box_area(r.box, self.image_size):
                    rd["area"] = r.area
                if r.extra:
                    rd["extra"] = r.extra
                regions.append(rd)
            od["regions"] = regions
            objs.append(od)
        doc["objects"] = objs
        return doc


def _short(v: Any, limit: int = 80) -> str:
    text = repr(v)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class _Parser:
    """Validates a tracks2d document field by field; every error names source and field."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, fld: str, msg: str) -> Tracks2DError:
        return Tracks2DError(f"{self.source}: {fld}: {msg}")

    def number(self, v: Any, fld: str, positive: bool = False) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
            raise self.fail(fld, f"expected a finite number, got {_short(v)}")
        if positive and v <= 0:
            raise self.fail(fld, f"expected a positive number, got {v!r}")
        return float(v)

    def integer(self, v: Any, fld: str, lo: int = 0) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise self.fail(fld, f"expected an integer >= {lo}, got {_short(v)}")
        return int(v)

    def tracks(self, doc: Any) -> Tracks2D:
        max_frames = MAX_BUDGET  # frames a scene may give (vistest.scene.MAX_FRAME_INDEX + 1)
        if not isinstance(doc, dict):
            raise self.fail("<top>", f"expected a JSON object, got {type(doc).__name__}")
        if doc.get("format") != FORMAT:
            raise self.fail("format", f"expected {FORMAT!r}, got {doc.get('format')!r}")
        for key in ("scene_id", "fps", "image_size", "num_frames", "objects"):
            if key not in doc:
                raise self.fail(key, "missing required field")
        sid = doc["scene_id"]
        if not isinstance(sid, str):
            raise self.fail("scene_id", f"expected a string, got {_short(sid)}")  # vistest.scene checks the rest
        fps = self.number(doc["fps"], "fps", positive=True)
        if not MIN_FPS <= fps <= MAX_FPS:
            raise self.fail("fps", f"expected frames/s in {MIN_FPS:g}..{MAX_FPS:g}, got {fps:g}")
        size = doc["image_size"]
        if (not isinstance(size, list) or len(size) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in size)):
            raise self.fail("image_size", f"expected [W, H] as two positive integers, got {_short(size)}")
        w, h = size
        if max(w, h) > MAX_IMAGE_SIDE:
            raise self.fail("image_size", f"expected at most {MAX_IMAGE_SIDE} pixels a side, got {size}")
        n = self.integer(doc["num_frames"], "num_frames", 1)
        if n > max_frames:
            raise self.fail("num_frames", f"expected at most {max_frames} decoded frames, got {n}")
        gap = self.number(doc.get("max_gap_s", DEFAULT_MAX_GAP_S), "max_gap_s")
        if gap < 0:
            raise self.fail("max_gap_s", f"expected seconds >= 0, got {gap!r}")
        video = doc.get("video")
        if video is not None and (not isinstance(video, str) or not video):
            raise self.fail("video", f"expected a file name, got {_short(video)}")
        objs_doc = doc["objects"]
        if not isinstance(objs_doc, list):
            raise self.fail("objects", f"expected a list, got {type(objs_doc).__name__}")
        objects: list[Track2D] = []
        seen: dict[str, int] = {}
        for i, od in enumerate(objs_doc):
            fld = f"objects[{i}]"
            if not isinstance(od, dict):
                raise self.fail(fld, f"expected an object {{id, label, regions}}, got {_short(od)}")
            for key in ("id", "label", "regions"):
                if key not in od:
                    raise self.fail(f"{fld}.{key}", "missing required field")
            oid = od["id"]
            if isinstance(oid, int) and not isinstance(oid, bool):
                oid = str(oid)
            if not isinstance(oid, str) or not oid:
                raise self.fail(f"{fld}.id", f"expected a non-empty string or an integer, got {_short(od['id'])}")
            if oid in seen:
                raise self.fail(f"{fld}.id", f"duplicate object id {oid!r} (also objects[{seen[oid]}])")
            seen[oid] = i
            label = od["label"]
            if not isinstance(label, str) or not label:
                raise self.fail(f"{fld}.label", f"expected a non-empty string, got {_short(label)}")
            regs = od["regions"]
            if not isinstance(regs, list):
                raise self.fail(f"{fld}.regions", f"expected a list of {{frame, box}}, got {_short(regs)}")
            regions: list[Region2D] = []
            for k, rd in enumerate(regs):
                rf = f"{fld}.regions[{k}]"
                regions.append(self.region(rd, rf, n, (w, h)))
                if len(regions) > 1 and regions[-1].frame <= regions[-2].frame:
                    raise self.fail(f"{rf}.frame", f"expected frames strictly increasing, got {regions[-1].frame} "
                                                   f"after {regions[-2].frame}")
            extra = od.get("extra")
            objects.append(Track2D(oid, label, tuple(regions), extra if isinstance(extra, dict) else None))
        region_frames = sorted({r.frame for t in objects for r in t.regions})
        if doc.get("annotated_frames") is None:
            annotated = region_frames
        else:
            af = doc["annotated_frames"]
            if not isinstance(af, list):
                raise self.fail("annotated_frames", f"expected a list of frame numbers, got {_short(af)}")
            annotated = [self.integer(v, f"annotated_frames[{i}]") for i, v in enumerate(af)]
            if any(b <= a for a, b in zip(annotated, annotated[1:])):
                raise self.fail("annotated_frames", "expected frame numbers strictly increasing")
            if annotated and annotated[-1] >= n:
                raise self.fail("annotated_frames", f"frame {annotated[-1]} is past the video's {n} frames")
            missing = sorted(set(region_frames) - set(annotated))
            if missing:
                raise self.fail("annotated_frames", f"frames {missing[:8]} hold regions but are not listed as "
                                                    f"annotated")
        fmt = doc.get("source_format", "")
        return Tracks2D(scene_id=sid, fps=fps, image_size=(w, h), num_frames=n, annotated_frames=tuple(annotated),
                        objects=tuple(objects), max_gap_s=gap, video=video, source_format=str(fmt), source=self.source)

    def region(self, rd: Any, rf: str, n: int, size: tuple[int, int]) -> Region2D:
        if not isinstance(rd, dict):
            raise self.fail(rf, f"expected an object {{frame, box}}, got {_short(rd)}")
        if "frame" not in rd:
            raise self.fail(f"{rf}.frame", "missing required field")
        frame = self.integer(rd["frame"], f"{rf}.frame")
        if frame >= n:
            raise self.fail(f"{rf}.frame", f"expected a decoded frame number below num_frames ({n}), got {frame}")
        w, h = size
        mask = rd.get("mask")
        pixels = None
        if mask is not None:
            sz = mask.get("size") if isinstance(mask, dict) else None
            if isinstance(mask, dict) and not (isinstance(sz, (list, tuple)) and list(sz) == [h, w]):  # not decoded
                raise self.fail(f"{rf}.mask.size", f"expected the image's [h, w] = [{h}, {w}], got "
                                                   f"{_short(mask.get('size'))}")
            m = rle_decode(mask, f"{self.source}: {rf}.mask")
            pixels = float(m.sum())
        if rd.get("box") is not None:
            b = rd["box"]
            if not isinstance(b, list) or len(b) != 4:
                raise self.fail(f"{rf}.box", f"expected [x0, y0, x1, y1] (pixel edges), got {_short(b)}")
            box = np.array([self.number(v, f"{rf}.box[{i}]") for i, v in enumerate(b)])
            if box[2] < box[0] or box[3] < box[1]:
                raise self.fail(f"{rf}.box", f"expected x0 <= x1 and y0 <= y1, got {box.tolist()}")
            mb = mask_box(m) if mask is not None else None
            if mb is not None and (mb[0] < box[0] or mb[1] < box[1] or mb[2] > box[2] or mb[3] > box[3]):
                raise self.fail(f"{rf}.box", f"expected it to hold the mask's pixels (their box {mb.tolist()}: the "
                                             f"region a mask dummy fills is the box), got {box.tolist()}")
        elif mask is not None:
            mb = mask_box(m)
            box = mb if mb is not None else np.zeros(4)
        else:
            raise self.fail(f"{rf}.box", "missing: a region needs a box, a mask, or both")
        if pixels is None and rd.get("area") is not None:  # the pixels that show (MOT: box area x visibility)
            pixels = min(self.number(rd["area"], f"{rf}.area"), box_area(box, size))
            if pixels < 0:
                raise self.fail(f"{rf}.area", f"expected the region's visible pixels (>= 0), got {rd['area']!r}")
        if pixels is None:
            pixels = box_area(box, size)
        extra = rd.get("extra")
        box.setflags(write=False)
        return Region2D(frame, box, pixels, mask, extra if isinstance(extra, dict) else None)


def box_area(box: Sequence[float], size: tuple[int, int]) -> float:
    """Pixels of ``box`` ``[x0, y0, x1, y1]`` (edge coordinates) inside an image of ``size`` (W, H)."""
    w, h = size
    return max(0.0, min(box[2], w) - max(box[0], 0.0)) * max(0.0, min(box[3], h) - max(box[1], 0.0))
