"""Overlays: the scene's video with every ground-truth box drawn on it, to check GT by eye.

Each frame shows, for every (selected) object:

* its box as a projected wireframe (a moving object's at its pose in that frame, nothing while
  it is absent). The geometry is the visibility engine's own:
  :func:`vistest.visibility.raster.clip_project_box` clips the box at the near plane and projects
  the clipped solid's vertices, so the overlay draws exactly what ``projected`` measures.
  A box straddling the camera plane is drawn clipped (its edges run off towards the
  image border on the side where the box is), never mirrored; a box wholly behind the
  camera is not drawn. Boxes in view but fully hidden (``visible == 0``) are drawn thin
  and dim.
* a light fill where it is visible: the engine's box z-buffer at the working grid
  (:func:`vistest.visibility.raster.visibility_kernel` with ``out_labels``), shown at native
  resolution (nearest sample) and limited to the visibility's ``bbox`` (so a depth- or
  mesh-occlusion table from ``--visibility`` narrows it).
* a label ``id label visible%`` (visible coverage, percent of the image area).

and a banner: scene id, frame index, time (s), and ``INVALID POSE`` (red, with a red
border) for frames whose pose is unknown; such frames get no boxes.

Conventions: images are RGB ``uint8`` (H, W, 3), row 0 at the top; pixel coordinates are
OpenCV's (integer = pixel centre), which is also what OpenCV's drawing functions use;
frame numbers are 0-based decoded frames of the scene's video. A scene without a video
is drawn on a grey canvas.
"""
from __future__ import annotations

import colorsys
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from ..visibility import raster
from . import OVERLAY_COLUMNS, OVERLAY_SHEET_FRAMES, OVERLAY_TILE_WIDTH
from .tiles import contact_sheet, tile, write_png
from ..errors import InputError
from ..geometry import box_corners, rigid_inverse
from ..scene import Frame, Scene
from ..visibility.table import DEFAULT_NEAR, DEFAULT_OCCLUSION, Visibility

FILL_ALPHA = 0.30  # opacity of the visible-region fill
CANVAS_GREY = 96  # background of scenes without a video
INVALID_RGB = (230, 40, 40)
DEFAULT_SHEET_FRAMES, DEFAULT_COLUMNS, DEFAULT_TILE_WIDTH = OVERLAY_SHEET_FRAMES, OVERLAY_COLUMNS, OVERLAY_TILE_WIDTH


# ---------------------------------------------------------------------------------------
# geometry: the engine's clipped projection
# ---------------------------------------------------------------------------------------
@raster.njit_cached()
def _project_boxes(corners, r, t, fx, fy, cx, cy, near, cu, cv, eu, ev):
    """For every box o (world corners (O, 8, 3)), fill cu/cv (O, 8) and eu/ev (O, 12) with
    :func:`vistest.visibility.raster.clip_project_box`'s pixel coordinates; NaN where undefined."""
    pc = np.empty((8, 3))
    px = np.empty(raster.MAXV)
    py = np.empty(raster.MAXV)
    for o in range(corners.shape[0]):
        cu[o, :] = np.nan
        cv[o, :] = np.nan
        eu[o, :] = np.nan
        ev[o, :] = np.nan
        if raster.camera_corners(corners[o], r, t, near, pc) > 0:
            raster.clip_project_box(pc, near, fx, fy, cx, cy, cu[o], cv[o], eu[o], ev[o], px, py)


@dataclass(frozen=True, eq=False)
class BoxProjection:
    """The boxes of one frame as the engine projects them (pixels, OpenCV convention).

    ``corners`` (O, 8, 2): each corner in front of the near plane (NaN for corners
    behind it). ``crossings`` (O, 12, 2): where edge e (``raster.EDGES[e]``) crosses the
    near plane (NaN when it does not).
    """

    corners: np.ndarray
    crossings: np.ndarray

    def vertices(self, o: int) -> np.ndarray:
        """(n, 2) vertices of box o's clipped solid, in the engine's order (corners, then crossings)."""
        pts = np.concatenate([self.corners[o], self.crossings[o]])
        return pts[np.isfinite(pts).all(axis=1)]

    def segments(self, o: int) -> np.ndarray:
        """(S, 4) ``x0, y0, x1, y1``: the edges of box o's clipped solid.

        The kept part of each box edge (corner to corner, or corner to its near-plane
        crossing) and the outline of the near-plane cap (the crossings' convex hull).
        Empty for a box wholly behind the camera.
        """
        c, x = self.corners[o], self.crossings[o]
        segs = []
        for e, (a, b) in enumerate(raster.EDGES):
            ca, cb = np.isfinite(c[a, 0]), np.isfinite(c[b, 0])
            if ca and cb:
                segs.append((*c[a], *c[b]))
            elif ca or cb:
                segs.append((*(c[a] if ca else c[b]), *x[e]))
        cap = x[np.isfinite(x[:, 0])]
        if len(cap) >= 3:
            hull = _convex_hull(cap)
            segs += [(*hull[k], *hull[(k + 1) % len(hull)]) for k in range(len(hull))]
        return np.array(segs, float).reshape(-1, 4)


def _convex_hull(pts: np.ndarray) -> np.ndarray:
    """Convex hull (counter-clockwise) of (n, 2) points, via the engine's :func:`raster.convex_hull`."""
    n = len(pts)
    hx, hy = np.empty(max(n + 1, 4)), np.empty(max(n + 1, 4))
    m = raster.convex_hull(np.ascontiguousarray(pts[:, 0]), np.ascontiguousarray(pts[:, 1]), n, hx, hy)
    return np.stack([hx[:m], hy[:m]], axis=1)


def project_boxes(scene: Scene, frame: Frame, near: float = DEFAULT_NEAR,
                  corners: np.ndarray | None = None) -> BoxProjection | None:
    """The engine's projection of every box of ``scene`` into ``frame`` (None for an invalid
    frame). ``near``: near plane (metres); ``corners``: world corners (O, 8, 3) if already
    computed (:func:`world_corners`; None: computed, at this frame for moving objects)."""
    if not frame.valid:
        return None
    if corners is None:
        corners = world_corners(scene, frame.index)
    k = scene.intrinsics_for(frame)
    w2c = rigid_inverse(frame.camera_to_world)
    r, t = np.ascontiguousarray(w2c[:3, :3]), w2c[:3, 3]
    no = len(corners)
    cu, cv, eu, ev = np.empty((no, 8)), np.empty((no, 8)), np.empty((no, 12)), np.empty((no, 12))
    _project_boxes(corners, r, t, k.fx, k.fy, k.cx, k.cy, float(near), cu, cv, eu, ev)
    return BoxProjection(np.stack([cu, cv], axis=2), np.stack([eu, ev], axis=2))


def overlay_compiled() -> bool:
    """Whether :func:`_project_boxes` has code in this process or current code in Numba's on-disk
    cache (vistest.visibility.compile.is_compiled): then :func:`warm_overlay` has nothing to compile."""
    from ..visibility.compile import is_compiled

    return is_compiled(_project_boxes)


def warm_overlay() -> None:
    """Compile (or load from the cache) :func:`_project_boxes` on a tiny scene (``vistest compile``)."""
    from ..synthetic import random_box_scene

    scene = random_box_scene(seed=0, num_frames=2, num_boxes=2, image_size=(32, 24), inside_frame=None)
    project_boxes(scene, next(f for f in scene.frames if f.valid))


def world_corners(scene: Scene, frame: int | None = None) -> np.ndarray:
    """(O, 8, 3) box corners in the pose world (``boxes_to_world`` applied), contiguous: the static
    poses (a moving object's first key), or at decoded frame ``frame`` when given (an object absent
    then has NaN corners: nothing is drawn)."""
    if frame is None:
        return np.ascontiguousarray(box_corners(*scene.world_boxes()))
    return np.ascontiguousarray(box_corners(*scene.world_boxes_at(frame)[:3]))


def clip_segment(seg: Sequence[float], x0: float, y0: float, x1: float, y1: float) -> tuple | None:
    """Liang-Barsky: the part of segment ``(ax, ay, bx, by)`` inside [x0, x1] x [y0, y1], or None."""
    ax, ay, bx, by = seg
    dx, dy = bx - ax, by - ay
    t0, t1 = 0.0, 1.0
    for p, q in ((-dx, ax - x0), (dx, x1 - ax), (-dy, ay - y0), (dy, y1 - ay)):
        if p == 0.0:
            if q < 0.0:
                return None
            continue
        r = q / p
        if p < 0.0:
            t0 = max(t0, r)
        else:
            t1 = min(t1, r)
        if t0 > t1:
            return None
    return (ax + t0 * dx, ay + t0 * dy, ax + t1 * dx, ay + t1 * dy)


# ---------------------------------------------------------------------------------------
# the visible region: the engine's box z-buffer, per frame
# ---------------------------------------------------------------------------------------
def label_images(scene: Scene, frames: Sequence[Frame], working_size: tuple[int, int], near: float,
                 corners: np.ndarray | None = None) -> np.ndarray:
    """(len(frames), hs, ws) int64: the index of the box visible at each working-grid sample
    (boxes hide each other but not the boxes they contain, as in ``boxes`` occlusion; where a
    box and its container both show, the inner box; -1 = none; all -1 for invalid frames),
    from the engine's kernel. ``corners``: the static boxes' world corners (ignored for a scene with
    moving objects: their boxes are taken at each frame)."""
    from ..visibility.table import box_geometry, frame_cameras

    ws, hs = working_size
    w, h = scene.image_size
    n, no = len(frames), len(scene.objects)
    labels = np.full((n, hs * ws), -1, np.int64)
    if n == 0 or no == 0:
        return labels.reshape(n, hs, ws)
    w2c, kin = frame_cameras(scene, frames)
    valid = np.array([f.valid for f in frames], bool)
    proj, vis, bbox = np.empty((n, no)), np.empty((n, no)), np.empty((n, no, 4))
    geom, boxes, axes, contains = box_geometry(scene, frames if scene.dynamic else None, True)
    if not scene.dynamic:
        geom = np.zeros(n, np.int64)
        if corners is not None:
            boxes = np.ascontiguousarray(corners, np.float64)[None]
    from ..visibility.compile import ensure_compiled
    from ..visibility.table import WARM

    ensure_compiled("boxes", WARM)  # a first run says that it compiles (issue #47)
    raster.visibility_kernel(w2c, kin, valid, geom, boxes, axes, w, h, ws, hs, float(near), True,
                             np.zeros((0, 0)), 0.0, contains, proj, vis, bbox, labels)
    return labels.reshape(n, hs, ws)


def upsample_labels(labels: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """(H, W) labels at native ``size`` (W, H) from a working-grid (hs, ws) image: each native
    pixel takes the sample whose working pixel contains its centre."""
    hs, ws = labels.shape
    w, h = size
    jx = np.minimum(((np.arange(w) + 0.5) * ws / w).astype(np.int64), ws - 1)
    iy = np.minimum(((np.arange(h) + 0.5) * hs / h).astype(np.int64), hs - 1)
    return labels[iy[:, None], jx[None, :]]


# ---------------------------------------------------------------------------------------
# drawing
# ---------------------------------------------------------------------------------------
def object_colours(n: int) -> np.ndarray:
    """(n, 3) uint8 RGB: distinct bright colours (golden-ratio hue steps), object order."""
    return np.array([[round(255 * c) for c in colorsys.hsv_to_rgb((0.13 + 0.618034 * i) % 1.0, 0.85, 1.0)]
                     for i in range(n)], np.uint8).reshape(n, 3)


@dataclass(frozen=True)
class OverlayStyle:
    """Sizes of what is drawn, in native pixels. ``text_scale``: OpenCV font scale;
    ``line``: wireframe thickness; ``fill_alpha``: opacity of the visible-region fill."""

    text_scale: float = 0.45
    line: int = 2
    fill_alpha: float = FILL_ALPHA

    @classmethod
    def for_output(cls, native_height: int, shown_height: int | None = None) -> OverlayStyle:
        """A style for frames ``native_height`` pixels tall that are shown ``shown_height``
        pixels tall (default: as they are): text about 2.8% of the shown height (at least
        9 shown pixels; OpenCV's simplex font is ~22 px tall at scale 1), lines ~1 shown
        pixel per 240."""
        shown = float(shown_height or native_height)
        shrink = native_height / shown
        cap = max(9.0, 0.028 * shown)
        return cls(text_scale=cap / 22.0 * shrink, line=max(1, round(max(1.0, shown / 240.0) * shrink)))


@dataclass(frozen=True, eq=False)
class FrameInfo:
    """What the visibility table says about one decoded frame for the drawn objects.

    ``frame``: the scene's Frame (None when the scene has no pose row for it). ``projected``,
    ``visible`` (k,) fractions of the image area and ``bbox`` (k, 4) half-open native pixel
    bounds, NaN when unknown; ``has_row``: the visibility table has a row for the frame.
    """

    index: int
    time: float
    frame: Frame | None
    projected: np.ndarray
    visible: np.ndarray
    bbox: np.ndarray
    has_row: bool

    @property
    def valid(self) -> bool:
        return self.frame is not None and self.frame.valid and self.has_row


def _text(img: np.ndarray, text: str, org: tuple[int, int], scale: float, colour, bg=(0, 0, 0),
          alpha: float = 0.65) -> tuple[int, int, int, int]:
    """Draw ``text`` with its top-left at ``org`` on a translucent background; returns its rect."""
    import cv2

    th = max(1, round(scale * 2))
    (tw, tht), base = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, scale, th)
    pad = max(1, round(scale * 4))
    x0, y0 = org
    x1, y1 = x0 + tw + 2 * pad, y0 + tht + base + 2 * pad
    h, w = img.shape[:2]
    cx0, cy0, cx1, cy1 = max(x0, 0), max(y0, 0), min(x1, w), min(y1, h)
    if cx1 > cx0 and cy1 > cy0:
        roi = img[cy0:cy1, cx0:cx1]
        roi[:] = (roi * (1 - alpha) + np.array(bg, float) * alpha).astype(np.uint8)
    cv2.putText(img, text, (x0 + pad, y0 + pad + tht), cv2.FONT_HERSHEY_SIMPLEX, scale, colour, th, cv2.LINE_AA)
    return x0, y0, x1, y1


def _place(rect_size: tuple[int, int], anchor: tuple[float, float], taken: list, size: tuple[int, int],
           top: int) -> tuple[int, int]:
    """Top-left for a label of ``rect_size`` near ``anchor``, inside the image below ``top``,
    moved down past labels already placed (``taken``) where it can be."""
    w, h = size
    lw, lh = rect_size
    x = int(min(max(anchor[0], 0), max(w - lw, 0)))
    y = int(min(max(anchor[1], top), max(h - lh, top)))
    for _ in range(12):
        hit = next((r for r in taken if x < r[2] and r[0] < x + lw and y < r[3] and r[1] < y + lh), None)
        if hit is None or hit[3] + lh > h:
            break
        y = hit[3]
    return x, y


def draw_banner(img: np.ndarray, info: FrameInfo, scene_id: str, style: OverlayStyle, note: str = "") -> int:
    """The frame banner (scene, frame index, time in seconds, invalid-pose marker) across the
    top of ``img``; returns its height in pixels."""
    import cv2

    text = f"{scene_id}  frame {info.index}  t={info.time:.2f} s" + (f"  {note}" if note else "")
    rect = _text(img, text, (0, 0), style.text_scale, (255, 255, 255), alpha=0.6)
    if not info.valid:
        why = "INVALID POSE" if info.frame is not None and not info.frame.valid else \
            "NO POSE" if info.frame is None else "NO VISIBILITY ROW"
        _text(img, why, (rect[2] + 4, 0), style.text_scale, (255, 255, 255), bg=INVALID_RGB, alpha=0.9)
        h, w = img.shape[:2]
        cv2.rectangle(img, (0, 0), (w - 1, h - 1), INVALID_RGB, max(2, style.line))
    return rect[3]


def draw_overlay(img: np.ndarray, info: FrameInfo, proj: BoxProjection | None, labels: np.ndarray | None,
                 objects: Sequence[int], names: Sequence[str], colours: np.ndarray, scene_id: str,
                 style: OverlayStyle, note: str = "") -> np.ndarray:
    """Draw the boxes ``objects`` (scene object indices) of one frame onto ``img`` (RGB, in place).

    ``proj``: :func:`project_boxes` of the frame (None: invalid); ``labels``: native (H, W)
    z-buffer labels (scene object indices, -1 none) or None; ``info``: the frame's
    visibility rows for ``objects`` (same order); ``names``: each object's ``id label``.
    """
    import cv2

    h, w = img.shape[:2]
    if info.valid and labels is not None and len(objects):
        _fill(img, labels, info, objects, colours, style.fill_alpha)
    placed: list = []
    if info.valid and proj is not None:
        order = sorted(range(len(objects)), key=lambda k: (info.visible[k] > 0, info.visible[k]))
        for k in order:  # hidden boxes first, the most visible last (on top)
            o = objects[k]
            segs = proj.segments(o)
            vis = info.visible[k]
            hidden = not vis > 0
            col = tuple(int(c) for c in (colours[o] // 2 if hidden else colours[o]))
            thick = 1 if hidden else style.line
            drawn = []
            for s in segs:
                c = clip_segment(s, -2.0, -2.0, w + 1.0, h + 1.0)
                if c is None:
                    continue
                p0 = (int(round(c[0] * 16)), int(round(c[1] * 16)))
                p1 = (int(round(c[2] * 16)), int(round(c[3] * 16)))
                if not hidden:
                    cv2.line(img, p0, p1, (0, 0, 0), thick + 2, cv2.LINE_AA, shift=4)
                cv2.line(img, p0, p1, col, thick, cv2.LINE_AA, shift=4)
                drawn.append(c)
            if np.isfinite(info.projected[k]) and info.projected[k] > 0:
                b = info.bbox[k]
                if np.isfinite(b).all():
                    anchor = (b[0], b[1])
                elif drawn:
                    d = np.array(drawn)
                    anchor = (min(d[:, 0].min(), d[:, 2].min()), min(d[:, 1].min(), d[:, 3].min()))
                else:
                    anchor = (0.0, 0.0)
                text = f"{names[k]} {100 * vis:.1f}%" + (" hidden" if hidden else "")
                placed.append((k, text, anchor, col))
    top = draw_banner(img, info, scene_id, style, note)
    taken: list = []
    for k, text, anchor, col in sorted(placed, key=lambda p: (p[2][1], p[2][0])):
        (tw, th), base = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, style.text_scale * 0.9,
                                         max(1, round(style.text_scale * 1.8)))
        pad = max(1, round(style.text_scale * 0.9 * 4))
        size = (tw + 2 * pad, th + base + 2 * pad)
        org = _place(size, anchor, taken, (w, h), top)
        lum = 0.299 * col[0] + 0.587 * col[1] + 0.114 * col[2]
        taken.append(_text(img, text, org, style.text_scale * 0.9, (0, 0, 0) if lum > 110 else (255, 255, 255),
                           bg=col, alpha=0.8))
    return img


def _fill(img: np.ndarray, labels: np.ndarray, info: FrameInfo, objects: Sequence[int], colours: np.ndarray,
          alpha: float) -> None:
    """Blend each drawn object's colour over its visible pixels (labels within its bbox)."""
    no = int(max(int(labels.max()), max(objects))) + 1
    lut = np.full(no + 1, -1, np.int64)  # scene object index -> position in `objects` (-1: not drawn)
    lut[np.asarray(objects, np.int64)] = np.arange(len(objects))
    k = lut[labels]  # -1 maps to lut[-1] == -1
    box = np.where(np.isfinite(info.bbox), info.bbox, -1).astype(np.int64)
    ys, xs = np.nonzero(k >= 0)
    kk = k[ys, xs]
    inside = (xs >= box[kk, 0]) & (xs < box[kk, 2]) & (ys >= box[kk, 1]) & (ys < box[kk, 3])
    ys, xs, kk = ys[inside], xs[inside], kk[inside]
    if len(ys):
        cols = colours[np.asarray(objects)[kk]].astype(float)
        img[ys, xs] = (img[ys, xs] * (1 - alpha) + cols * alpha).astype(np.uint8)


# ---------------------------------------------------------------------------------------
# selections
# ---------------------------------------------------------------------------------------
def parse_frames(spec: str, num_frames: int, option: str = "--frames") -> tuple[int, ...]:
    """Decoded frame numbers from ``"0,10,20-30,100-200:10"`` (ranges inclusive, ``:step``),
    sorted and unique; each must be in [0, num_frames - 1]."""
    out: set[int] = set()
    for part in (p.strip() for p in str(spec).split(",")):
        if not part:
            continue
        try:
            rng, _, step = part.partition(":")
            a, sep, b = rng.partition("-")
            lo, hi, st = int(a), int(b) if sep else int(a), int(step) if step else 1
            if st < 1 or hi < lo:
                raise ValueError
        except ValueError:
            raise InputError(f"{option}: expected frame numbers and ranges such as 0,10,20-30,100-200:10, "
                             f"got {part!r}") from None
        if lo < 0 or hi >= num_frames:
            raise InputError(f"{option}: {part!r} is outside the video's decoded frames 0-{num_frames - 1}")
        out.update(range(lo, hi + 1, st))
    if not out:
        raise InputError(f"{option}: expected at least one frame number, got {spec!r}")
    return tuple(sorted(out))


def parse_objects(spec: str | None, scene: Scene, option: str = "--objects") -> tuple[int, ...]:
    """Scene object indices whose id or label is in the comma-separated ``spec`` (None: all)."""
    if spec is None:
        return tuple(range(len(scene.objects)))
    wanted = [s.strip() for s in spec.split(",") if s.strip()]
    unknown = [s for s in wanted if not any(s in (o.id, o.label) for o in scene.objects)]
    if not wanted or unknown:
        raise InputError(f"{option}: expected object ids or labels of scene {scene.scene_id!r} (ids "
                         f"{', '.join(scene.object_ids[:12])}{' ...' if len(scene.objects) > 12 else ''}), "
                         f"got {', '.join(unknown) if unknown else repr(spec)}")
    return tuple(i for i, o in enumerate(scene.objects) if o.id in wanted or o.label in wanted)


# ---------------------------------------------------------------------------------------
# a scene's overlay
# ---------------------------------------------------------------------------------------
class SceneOverlay:
    """Everything needed to draw a scene's frames: geometry, visibility rows, colours.

    ``vis``: the scene's visibility table (its ``params`` give the near plane and the
    working grid of the label images); ``objects``: scene object indices to draw;
    ``source``: where ``vis`` came from, for error messages.
    """

    def __init__(self, scene: Scene, vis: Visibility, objects: Sequence[int] | None = None, source: str = "visibility"):
        scene.require_3d("a box overlay")
        self.scene = scene
        self.objects = tuple(range(len(scene.objects))) if objects is None else tuple(objects)
        ids = [str(x) for x in np.asarray(vis.object_ids).tolist()]
        col = {oid: c for c, oid in enumerate(ids)}
        missing = [o.id for o in scene.objects if o.id not in col]
        if missing:
            raise InputError(f"{source}: object_ids: no column for scene object(s) {missing[:8]} of scene "
                             f"{scene.scene_id!r} (stale visibility file?)")
        self.cols = np.array([col[scene.objects[o].id] for o in self.objects], np.int64)
        self.rows = {int(f): r for r, f in enumerate(np.asarray(vis.frame_index).tolist())}
        self.vis = vis
        self.near = float(vis.params.get("near", DEFAULT_NEAR))
        if "working_size" not in vis.params:
            raise InputError(f"{source}: params: working_size missing; expected a table from compute_visibility "
                             f"(vistest visibility / vistest run)")
        self.working_size = tuple(int(v) for v in vis.params["working_size"])
        self.corners = None if scene.dynamic else world_corners(scene)  # moving boxes: per frame
        self.colours = object_colours(len(scene.objects))
        self.names = [f"{scene.objects[o].id} {scene.objects[o].label}" for o in self.objects]
        self.by_index = {f.index: f for f in scene.frames}

    def info(self, index: int) -> FrameInfo:
        """The frame's scene pose and visibility rows (NaN when there is no row)."""
        frame = self.by_index.get(index)
        r = self.rows.get(index)
        k = len(self.objects)
        if r is None:
            proj = vis = np.full(k, np.nan)
            bbox = np.full((k, 4), np.nan)
        else:
            proj = np.asarray(self.vis.projected[r], float)[self.cols]
            vis = np.asarray(self.vis.visible[r], float)[self.cols]
            bbox = np.asarray(self.vis.bbox[r], float)[self.cols]
        time = frame.time if frame is not None else index / self.scene.fps
        return FrameInfo(index, float(time), frame, proj, vis, bbox, r is not None)

    def draw(self, img: np.ndarray, index: int, style: OverlayStyle, labels: np.ndarray | None = None,
             note: str = "") -> np.ndarray:
        """Draw decoded frame ``index`` onto ``img`` (RGB, native size, in place); ``labels``:
        its working-grid label image (:meth:`labels`), computed when None."""
        info = self.info(index)
        proj = project_boxes(self.scene, info.frame, self.near, self.corners) if info.valid else None
        if info.valid and labels is None:
            labels = self.labels([index])[0]
        native = upsample_labels(labels, self.scene.image_size) if labels is not None and info.valid else None
        return draw_overlay(img, info, proj, native, self.objects, self.names, self.colours, self.scene.scene_id,
                            style, note)

    def labels(self, indices: Sequence[int]) -> np.ndarray:
        """Working-grid label images (len(indices), hs, ws) of decoded frames ``indices``."""
        frames = [self.by_index.get(i) for i in indices]
        known = [f if f is not None else Frame(i, 0.0, None) for i, f in zip(indices, frames)]
        return label_images(self.scene, known, self.working_size, self.near, self.corners)


def source_frames(scene: Scene, indices: Sequence[int], size: tuple[int, int] | None = None) -> Iterator[np.ndarray]:
    """RGB frames ``indices`` (sorted) of the scene's video, or grey canvases without a video."""
    if scene.video is None:
        w, h = scene.image_size
        for _ in indices:
            yield np.full((h, w, 3), CANVAS_GREY, np.uint8)
        return
    from ..videos.ffmpeg import read_frames

    yield from read_frames(scene.path(scene.video), indices, size=size)


def load_scene_video(scene_json: str | os.PathLike, scale_intrinsics: bool = False
                     ) -> tuple[Scene, tuple[int, int] | None]:
    """Load a scene for drawing: (scene, decoded video size, None without a video). The video
    must match the scene as for ``vistest run`` (:func:`vistest.videos.source.check_video`; with
    ``scale_intrinsics`` the scene is scaled to the video)."""
    scene = Scene.load(scene_json)
    if scene.video is None:
        return scene, None
    from ..videos.source import check_video

    scene, info, _ = check_video(scene, scene_json, scale_intrinsics)
    return scene, info.size


def _even(img: np.ndarray) -> np.ndarray:
    """Pad an RGB frame with black on the right/bottom to even sizes (yuv420p H.264)."""
    h, w = img.shape[:2]
    if h % 2 == 0 and w % 2 == 0:
        return img
    return np.pad(img, ((0, h % 2), (0, w % 2), (0, 0)))


def _chunks(seq: Sequence[int], n: int) -> Iterator[Sequence[int]]:
    for s in range(0, len(seq), n):
        yield seq[s:s + n]


def _frames_drawn(ov: SceneOverlay, frames: Sequence[int], size, style: OverlayStyle, note: str = "",
                  bar=None, chunk: int = 64) -> Iterator[tuple[int, np.ndarray]]:
    """(index, drawn RGB frame) for ``frames`` (sorted), label images computed ``chunk`` at a time."""
    src = source_frames(ov.scene, frames, size)
    for part in _chunks(list(frames), chunk):
        labs = ov.labels(part)
        for i, idx in enumerate(part):
            img = np.array(next(src))
            yield idx, ov.draw(img, idx, style, labs[i], note)
            if bar is not None:
                bar.update(1)


def write_overlay_video(ov: SceneOverlay, out: str | os.PathLike, frames: Sequence[int], size=None,
                        progress: bool = False, crf: int = 20, preset: str = "veryfast") -> Path:
    """Write the overlay of decoded ``frames`` (sorted) as H.264 at the scene's fps,
    atomically (:class:`vistest.videos.ffmpeg.VideoWriter`); odd sizes are padded to even."""
    from ..progress import progress_bar
    from ..videos.ffmpeg import VideoWriter

    w, h = ov.scene.image_size
    style = OverlayStyle.for_output(h)
    with progress_bar(len(frames), f"overlay {ov.scene.scene_id}", enabled=progress) as bar, \
            VideoWriter(out, fps=ov.scene.fps, size=(w + w % 2, h + h % 2), crf=crf, preset=preset) as vw:
        note = "" if ov.scene.video is not None else "(no video)"
        for _, img in _frames_drawn(ov, frames, size, style, note, bar):
            vw.write(_even(img))
    return Path(out)


def overlay_sheet(ov: SceneOverlay, frames: Sequence[int], size=None, columns: int = DEFAULT_COLUMNS,
                  tile_width: int = DEFAULT_TILE_WIDTH, title: str | None = None, progress: bool = False) -> np.ndarray:
    """Contact sheet (RGB) of the overlays of decoded ``frames`` (sorted), each drawn at native
    resolution with text sized to stay legible at ``tile_width``."""
    from ..progress import progress_bar

    w, h = ov.scene.image_size
    style = OverlayStyle.for_output(h, round(h * tile_width / w))
    tiles = []
    with progress_bar(len(frames), f"overlay sheet {ov.scene.scene_id}", enabled=progress) as bar:
        for _, img in _frames_drawn(ov, frames, size, style, "" if ov.scene.video is not None else "(no video)", bar):
            tiles.append(tile(img, tile_width))
    return contact_sheet(tiles, columns, title=title)


def default_sheet_frames(num_frames: int, count: int = DEFAULT_SHEET_FRAMES,
                         posed: Sequence[int] | None = None) -> tuple[int, ...]:
    """``count`` frames spread the way the ``uniform`` sampler picks them: over ``posed`` (the
    decoded frames with a known camera pose, sorted) when given and not empty, else over all
    ``num_frames`` decoded frames. A frame without a pose gets no boxes (a black ``INVALID POSE``
    tile), so a sheet meant to check the boxes picks posed frames."""
    from ..budget.sampling import select_frames

    pool = list(posed) if posed else list(range(num_frames))
    picks = select_frames("uniform", len(pool), min(count, len(pool))) if pool else ()
    return tuple(sorted(set(pool[int(i)] for i in picks)))


def posed_frames(scene: Scene) -> tuple[int, ...]:
    """Decoded frame numbers (sorted) whose camera pose is known."""
    return tuple(f.index for f in scene.frames if f.valid)


def make_overlay(scene_json: str | os.PathLike, out: str | os.PathLike, png: bool = False, objects: str | None = None,
                 frames: str | None = None, visibility_npz: str | None = None, occlusion: str = DEFAULT_OCCLUSION,
                 columns: int = DEFAULT_COLUMNS, tile_width: int = DEFAULT_TILE_WIDTH, scale_intrinsics: bool = False,
                 progress: bool = False, note=None) -> tuple[int, ...]:
    """``vistest overlay``: the overlay video of ``frames`` or, with ``png``, a contact sheet of
    them, written atomically to ``out``. Returns the frames drawn. Errors name file and field.

    Default frames are the posed ones (a frame without a pose gets no boxes): the video shows
    every decoded frame with a pose, the sheet :data:`DEFAULT_SHEET_FRAMES` of them spread
    uniformly. A scene where no frame has a pose gets all frames (each marked ``INVALID POSE``).
    Frames given explicitly are drawn whether posed or not. ``note(str)``, when given, is told
    how many frames the default left out for want of a pose."""
    if png and (columns < 1 or tile_width < 16):
        raise InputError(f"--columns/--tile-width: expected >= 1 column and >= 16 pixels, got {columns}, {tile_width}")
    scene, size = load_scene_video(scene_json, scale_intrinsics)
    drawn = parse_objects(objects, scene)
    n = scene.num_frames
    if frames is not None:
        chosen = parse_frames(frames, n)
    else:
        posed = posed_frames(scene)
        if note is not None and 0 < len(posed) < n:
            note(f"{n - len(posed)} of {n} frames have no pose: left out of the default frames "
                 f"(--frames draws them, marked INVALID POSE)")
        elif note is not None and not posed and n:
            note(f"none of the {n} frames has a pose: no boxes drawn")
        posed = posed or tuple(range(n))
        chosen = default_sheet_frames(n, posed=posed) if png else posed
    if visibility_npz:
        vis = Visibility.load(visibility_npz)
    else:
        from ..visibility.table import compute_visibility

        vis = compute_visibility(scene, occlusion=occlusion, progress=progress)
    ov = SceneOverlay(scene, vis, drawn, vis.source)
    if png:
        title = f"{scene.scene_id}: {len(chosen)} of {n} frames, boxes from {Path(scene_json).name}"
        write_png(out, overlay_sheet(ov, chosen, size, columns, tile_width, title, progress))
    else:
        write_overlay_video(ov, out, chosen, size, progress)
    return chosen
