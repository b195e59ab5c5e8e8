"""Timelines: one picture of what every frame shows, what a budget keeps and what a dummy removes.

A timeline PNG (``vistest timeline``) has, on one shared axis of decoded frame numbers:

* a heat map, frames x objects, of **visible coverage** (fraction of the image area after
  occlusion: the visibility table's ``evidence``, the box bound that the dummies below remove,
  through vistest.videos.evidence.EvidenceTable; with an instance mesh the seen rule reads
  ``visible``, the object's own pixels, so a cell may be coloured seen at a coverage shown from
  the looser bound). The colour scale breaks at the *seen*
  threshold (default 5%, ReVSI's, the budget stage's ``seen_threshold``): pale blue-grey
  below it (visible but not seen), viridis above it (seen), white for 0, grey for unknown
  (invalid pose or no visibility row). The colour bar marks the threshold. Under another seen
  rule (vistest.budget.seen: a silhouette share, a pixel count) the cells the rule sees are the
  viridis ones, whatever their coverage, and the bar keeps ReVSI's 5% as its break.
* a ``pose`` row marking frames without a valid pose (red);
* one row per budget: the frames the sampler profile selects (vistest.budget.truth's
  ``FrameSelection``, exactly what ``vistest budget``/``vistest run`` use; selected frames
  that cannot witness are red);
* one row per question: the frames its dummy removes (``drop`` removes them, ``black``
  blacks them out): frames where a referenced object is visible above the video stage's
  ``evidence_threshold`` (:data:`vistest.videos.config.DEFAULT_EVIDENCE_THRESHOLD`, 0 = any
  visible part), plus unknown frames unless ``unknown_as_evidence`` is off, and each one's
  ``evidence_frame_margin`` neighbours, only inside a timed question's time span at the
  ``instant_tolerance_s`` (vistest.videos.evidence.time_span) - the dummies' own function,
  :func:`vistest.videos.evidence.dummy_evidence`, with the options of ``vistest videos``.

Drawn with numpy and OpenCV (rectangles, lines, Hershey text), 1300 pixels wide: matplotlib drew it
until issue #47, and its import and layout were a second of every ``vistest run``; :func:`figure`
returns the picture and where each panel lies (:class:`Axes`), so tests read its pixels.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ..atomic import write_atomic
from ..budget.config import TruthConfig
from ..budget.seen import DEFAULT_SEEN_THRESHOLD, IMAGE, SeenRule
from ..budget.truth import FrameSelection, budget_truth
from ..questions import Question
from ..scene import Scene
from ..videos.config import DEFAULT_EVIDENCE_THRESHOLD
from ..videos.evidence import EvidenceTable, dummy_evidence
from ..visibility.table import DEFAULT_OCCLUSION, Visibility

BELOW = 0.15  # share of the colour scale given to (0, seen threshold]
PALE = (np.array([0.90, 0.93, 0.97]), np.array([0.62, 0.71, 0.82]))  # colours of 0+ and of the threshold
UNKNOWN_RGB = (0.78, 0.78, 0.78)
MARK_RGB = (0.10, 0.20, 0.55)  # selected frames
BAD_RGB = (0.85, 0.15, 0.15)  # invalid / cannot witness
REMOVED_RGB = (0.85, 0.35, 0.10)  # frames a dummy removes


@dataclass(frozen=True)
class Removal:
    """The frames one question's dummy removes.

    ``objects``: the ids whose evidence is removed (empty: the question is about no object,
    so only the all-black dummy exists and ``frames`` is every frame). ``frames``: sorted
    decoded frame numbers.
    """

    question_id: str
    question_type: str
    subject: str
    objects: tuple[str, ...]
    frames: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class Timeline:
    """What a timeline shows (see the module docstring).

    ``coverage`` (O, N): visible fraction of the image per scene object (scene order) and
    decoded frame 0..N-1, NaN where unknown; ``known`` (N,): valid pose and a visibility
    row; ``selections``: per budget; ``removals``: per question.
    """

    scene_id: str
    num_frames: int
    fps: float
    object_ids: tuple[str, ...]
    labels: tuple[str, ...]
    coverage: np.ndarray
    known: np.ndarray
    seen_threshold: float
    evidence_threshold: float
    selections: tuple[FrameSelection, ...]
    removals: tuple[Removal, ...]
    seen: np.ndarray  # (O, N) bool: seen by ``seen_rule`` (vistest.visibility.table.Visibility.seen)
    seen_rule: SeenRule = SeenRule()

    @property
    def break_threshold(self) -> float:
        """Where the colour scale breaks: the rule's threshold for the image rule, else 5%."""
        return self.seen_threshold if self.seen_rule.kind == IMAGE else DEFAULT_SEEN_THRESHOLD

    def seen_mask(self) -> np.ndarray:
        """(O, N) bool: object seen in frame."""
        return self.seen


def build_timeline(scene: Scene, vis: Visibility, questions: Sequence[Question] = (),
                   truth: TruthConfig = TruthConfig(budgets=()),
                   evidence_threshold: float = DEFAULT_EVIDENCE_THRESHOLD,
                   unknown_as_evidence: bool = True, evidence_frame_margin: int = 0) -> Timeline:
    """The timeline of ``scene``: ``vis`` its visibility; ``truth`` the budget stage's settings
    (vistest.budget.config.TruthConfig: its budgets' selected frames are marked, by
    :func:`vistest.budget.truth.budget_truth`; its seen rule colours the cells);
    ``evidence_threshold``/``unknown_as_evidence``/``evidence_frame_margin`` and the config's
    instant tolerance as for the dummy videos (:func:`vistest.videos.evidence.dummy_evidence`).
    Raises InputError (naming the file and the field) on inconsistent inputs."""
    n = scene.num_frames
    table = EvidenceTable(vis, n, evidence_threshold)
    cols = table.columns(scene.object_ids)
    coverage = np.ascontiguousarray(table.visible[:, cols].T)
    rule = truth.rule
    seen = np.zeros(coverage.shape, dtype=bool)
    by_row = vis.seen(rule, scene.image_size)[:, cols]
    for r, f in enumerate(np.asarray(vis.frame_index, dtype=np.int64).tolist()):
        if 0 <= f < n:
            seen[:, f] = by_row[r]
    selections = budget_truth(scene, vis, list(questions), truth).selections
    removals = []
    for q in questions:
        objs, _, frames = dummy_evidence(table, q, scene, unknown_as_evidence, evidence_frame_margin,
                                         truth.instant_tolerance_s)
        frames = frames if objs else tuple(range(n))  # no object: the all-black dummy only
        labels = {o.id: o.label for o in scene.objects}
        subject = ", ".join(q.category) if q.category else ", ".join(f"{o} {labels[o]}" for o in q.objects)
        removals.append(Removal(q.id, q.question_type, subject, objs, frames))
    return Timeline(scene.scene_id, n, float(scene.fps), scene.object_ids, tuple(o.label for o in scene.objects),
                    coverage, table.known.copy(), rule.threshold, float(evidence_threshold), selections,
                    tuple(removals), seen, rule)


# ---------------------------------------------------------------------------------------
# colours
# ---------------------------------------------------------------------------------------
def scale_position(v: np.ndarray, threshold: float) -> np.ndarray:
    """Position in [0, 1] on the colour scale of coverage ``v``: (0, threshold] fills the
    first :data:`BELOW`, (threshold, 1] the rest on a square-root scale (small coverages
    stay distinguishable)."""
    v = np.clip(np.asarray(v, float), 0.0, 1.0)
    below = BELOW * v / threshold if threshold > 0 else np.zeros_like(v)
    above = BELOW + (1 - BELOW) * np.sqrt(np.clip((v - threshold) / (1 - threshold), 0.0, 1.0))
    return np.where(v <= threshold, below, above)


def viridis(x: np.ndarray) -> np.ndarray:
    """RGB floats (..., 3) of the viridis colour map at ``x`` in [0, 1]: OpenCV's 256-entry table
    (cv2.COLORMAP_VIRIDIS, the table of matplotlib's ``viridis``), entry ``min(int(x * 256), 255)`` as
    matplotlib's ``Colormap.__call__`` picks it."""
    import cv2

    lut = cv2.applyColorMap(np.arange(256, dtype=np.uint8)[:, None], cv2.COLORMAP_VIRIDIS)[:, 0, ::-1] / 255.0
    return lut[np.clip((np.asarray(x, float) * 256).astype(int), 0, 255)]


def coverage_rgb(v: np.ndarray, threshold: float, seen: np.ndarray | None = None) -> np.ndarray:
    """RGB floats (..., 3) for coverages ``v`` (NaN: unknown grey; 0: white; up to the
    threshold: pale blue-grey; above it: viridis). ``seen``: where viridis goes instead (another
    seen rule's verdict)."""
    v = np.asarray(v, float)
    u = scale_position(np.nan_to_num(v), threshold)
    t = np.clip(u / BELOW, 0.0, 1.0)[..., None]
    pale = PALE[0] * (1 - t) + PALE[1] * t
    hi = viridis(np.clip((u - BELOW) / (1 - BELOW), 0.0, 1.0))
    with np.errstate(invalid="ignore"):
        rgb = np.where((v > threshold if seen is None else seen)[..., None], hi, pale)
        rgb = np.where((v == 0)[..., None], 1.0, rgb)
    return np.where(np.isnan(v)[..., None], np.array(UNKNOWN_RGB), rgb)


def _runs(frames: Sequence[int]) -> list[tuple[int, int]]:
    """Consecutive runs of sorted frame numbers as (start, length)."""
    out: list[tuple[int, int]] = []
    for f in frames:
        if out and out[-1][0] + out[-1][1] == f:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((int(f), 1))
    return out


# ---------------------------------------------------------------------------------------
# the picture (numpy and OpenCV: no matplotlib, whose import and drawing took most of a run's
# picture time, issue #47)
# ---------------------------------------------------------------------------------------
WIDTH = 1300  # pixels of the PNG
PLOT_X = (150, 850)  # columns of the frame axis: frame f spans [x0 + f*w/n, x0 + (f+1)*w/n)
ROW_PX = 20  # pixels per object row
STRIP_PX = 22  # pixels per budget / question / pose strip
STRIP_GAP = 8
MIN_HEAT_PX = 140  # the heat map (and its colour bar) is never shorter
TOP_PX, BOTTOM_PX = 64, 48  # title and time axis above, frame axis below
FONT_SCALE = 0.36
TEXT_RGB, AXIS_RGB = (20, 20, 20), (90, 90, 90)
COLORBAR_X = (950, 966)  # columns of the colour bar, its labels to the right


@dataclass(frozen=True)
class Axes:
    """Where a panel of the picture lies: columns ``x0..x1`` (exclusive end) hold frames 0..n-1,
    rows ``y0..y1`` (exclusive end). Data coordinates as a chart's: x in frames (frame f's
    centre at x = f; the panel spans -0.5..n-0.5), y from 0 at the bottom to 1 at the top
    (a heat map's y: object rows, 0 at the top)."""

    x0: int
    x1: int
    y0: int
    y1: int
    n: int

    def column(self, x: float) -> int:
        """The image column of frame coordinate ``x``."""
        return int(np.floor(self.x0 + (x + 0.5) * (self.x1 - self.x0) / max(self.n, 1)))

    def pixel(self, x: float, y: float) -> tuple[int, int]:
        """Image (row, column) of data point (x, y) (y: 0 bottom, 1 top)."""
        row = int(np.floor(self.y1 - y * (self.y1 - self.y0)))
        return min(max(row, self.y0), self.y1 - 1), self.column(x)

    def span(self, start: int, length: int) -> tuple[int, int]:
        """Columns [a, b) of frames start..start+length-1 (at least one column)."""
        w = (self.x1 - self.x0) / max(self.n, 1)
        a = self.x0 + int(np.floor(start * w))
        return a, max(a + 1, self.x0 + int(np.floor((start + length) * w)))


def _rgb8(c) -> tuple[int, int, int]:
    return tuple(int(round(255 * float(v))) for v in c)


def _text(img: np.ndarray, text: str, x: int, y: int, align: str = "left", scale: float = FONT_SCALE,
          colour=TEXT_RGB, max_width: int | None = None) -> None:
    """``text`` with its vertical centre at row ``y``; ``align`` left (starts at ``x``), right (ends at
    ``x``) or center; cut with an ellipsis ("...") to ``max_width`` pixels."""
    import cv2

    font = cv2.FONT_HERSHEY_SIMPLEX
    (w, h), _ = cv2.getTextSize(text, font, scale, 1)
    if max_width is not None and w > max_width:
        while text and cv2.getTextSize(text + "...", font, scale, 1)[0][0] > max_width:
            text = text[:-1]
        text += "..."
        (w, h), _ = cv2.getTextSize(text, font, scale, 1)
    x = x - w if align == "right" else x - w // 2 if align == "center" else x
    cv2.putText(img, text, (int(x), int(y + h // 2)), font, scale, colour, 1, cv2.LINE_AA)


def nice_ticks(lo: float, hi: float, most: int = 10) -> list[float]:
    """Tick values in [lo, hi] at a step of 1, 2 or 5 times a power of ten, at most ``most`` of them."""
    span = max(hi - lo, 1e-9)
    step = 10.0 ** np.floor(np.log10(span / most))
    for m in (1, 2, 5, 10):
        if span / (m * step) <= most:
            step *= m
            break
    first = np.ceil(lo / step) * step
    return [float(v) for v in np.arange(first, hi + step * 1e-6, step)]


def _tick_text(v: float) -> str:
    return f"{v:g}"


def figure(tl: Timeline, width: int = WIDTH) -> tuple[np.ndarray, dict[str, Axes]]:
    """The timeline as an RGB ``uint8`` image, and its panels by name (:class:`Axes`): ``heat``,
    ``colorbar``, ``pose``, ``budget:{label}`` and ``question:{id}``."""
    import cv2

    n, no = tl.num_frames, len(tl.object_ids)
    strips = [("pose", "pose")] + [(f"budget:{s.label}", f"{s.label} frames") for s in tl.selections] \
        + [(f"question:{r.question_id}", f"Q {r.question_id}") for r in tl.removals]
    heat_h = max(no * ROW_PX, MIN_HEAT_PX)
    height = TOP_PX + heat_h + len(strips) * (STRIP_PX + STRIP_GAP) + STRIP_GAP + BOTTOM_PX
    img = np.full((height, width, 3), 255, np.uint8)
    x0, x1 = PLOT_X
    axes: dict[str, Axes] = {}
    heat = Axes(x0, x1, TOP_PX, TOP_PX + heat_h, n)
    axes["heat"] = heat
    rgb = coverage_rgb(tl.coverage, tl.break_threshold, tl.seen_mask()) if no else np.ones((1, max(n, 1), 3))
    cols = np.clip(((np.arange(x1 - x0) + 0.5) * max(n, 1) / (x1 - x0)).astype(int), 0, rgb.shape[1] - 1)
    rows = np.clip(((np.arange(heat_h) + 0.5) * rgb.shape[0] / heat_h).astype(int), 0, rgb.shape[0] - 1)
    img[heat.y0:heat.y1, x0:x1] = np.round(rgb[rows][:, cols] * 255).astype(np.uint8)
    cv2.rectangle(img, (x0 - 1, heat.y0 - 1), (x1, heat.y1), AXIS_RGB, 1)
    seen = tl.seen_mask().sum(axis=1)
    for r in range(no):
        y = heat.y0 + (r + 0.5) * heat_h / no
        _text(img, f"{tl.object_ids[r]} {tl.labels[r]}", x0 - 6, y, "right", max_width=x0 - 10)
        _text(img, f"seen in {seen[r]}", x1 + 5, y)
    _text(img, f"{tl.scene_id}: visible coverage per frame (fraction of the image after occlusion); "
          f"seen = {tl.seen_rule.array} {tl.seen_rule.text}", 8, 12, scale=0.45, max_width=width - 16)
    if tl.fps > 0 and n:  # the time axis, on top
        for t in nice_ticks(0.0, (n - 1) / tl.fps, 12):
            c = heat.column(t * tl.fps)
            cv2.line(img, (c, heat.y0 - 5), (c, heat.y0 - 1), AXIS_RGB, 1)
            _text(img, _tick_text(t), c, heat.y0 - 13, "center")
        _text(img, "time (s)", (x0 + x1) // 2, heat.y0 - 30, "center")
    _colorbar(img, Axes(COLORBAR_X[0], COLORBAR_X[1], heat.y0, heat.y1, 1), tl.break_threshold, axes)
    y = heat.y1 + STRIP_GAP
    for name, label in strips:
        ax = Axes(x0, x1, y, y + STRIP_PX, n)
        axes[name] = ax
        _text(img, label, x0 - 6, (ax.y0 + ax.y1) / 2, "right", max_width=x0 - 10)
        cv2.line(img, (x0 - 1, ax.y0), (x0 - 1, ax.y1 - 1), AXIS_RGB, 1)
        cv2.line(img, (x0 - 1, ax.y1), (x1, ax.y1), AXIS_RGB, 1)
        y += STRIP_PX + STRIP_GAP
    _pose_strip(img, axes["pose"], tl)
    for s in tl.selections:
        _budget_strip(img, axes[f"budget:{s.label}"], s)
    for r in tl.removals:
        _removal_strip(img, axes[f"question:{r.question_id}"], r, n, width)
    last = axes[strips[-1][0]]
    for f in nice_ticks(0.0, max(n - 1, 0), 12) if n else []:
        c = last.column(f)
        cv2.line(img, (c, last.y1), (c, last.y1 + 4), AXIS_RGB, 1)
        _text(img, _tick_text(f), c, last.y1 + 12, "center")
    _text(img, "decoded frame", (x0 + x1) // 2, last.y1 + 30, "center", scale=0.42)
    return img, axes


def _colorbar(img: np.ndarray, ax: Axes, threshold: float, axes: dict) -> None:
    """A vertical colour bar of :func:`coverage_rgb` (bottom 0, top 1 on the colour scale), the seen
    threshold marked by a black line and its tick label."""
    import cv2

    axes["colorbar"] = ax
    h = ax.y1 - ax.y0
    u = (h - 0.5 - np.arange(h)) / h  # colour-scale position of each row, top row near 1
    bar = coverage_rgb(_inverse_position(u, threshold), threshold)
    img[ax.y0:ax.y1, ax.x0:ax.x1] = np.round(bar * 255).astype(np.uint8)[:, None, :]
    cv2.rectangle(img, (ax.x0 - 1, ax.y0 - 1), (ax.x1, ax.y1), AXIS_RGB, 1)
    ticks = sorted({t for t in (0.0, threshold, 0.1, 0.25, 0.5, 1.0) if 0 <= t <= 1})
    for t in ticks:
        row = ax.pixel(0, float(scale_position(np.array(t), threshold)))[0]
        cv2.line(img, (ax.x1, row), (ax.x1 + 3, row), AXIS_RGB, 1)
        _text(img, f"{t:.0%}" + (" seen" if t == threshold else ""), ax.x1 + 6, row)
    row = ax.pixel(0, BELOW)[0]
    cv2.line(img, (ax.x0, row), (ax.x1 - 1, row), (0, 0, 0), 2)


def _inverse_position(u: np.ndarray, threshold: float) -> np.ndarray:
    """Coverage at colour-scale position ``u`` (inverse of :func:`scale_position`)."""
    below = u / BELOW * threshold
    above = threshold + (1 - threshold) * ((u - BELOW) / (1 - BELOW)) ** 2
    return np.where(u <= BELOW, below, above)


def _bar(img: np.ndarray, ax: Axes, start: int, length: int, lo: float, hi: float, rgb) -> None:
    """Fill frames start..start+length-1 between heights ``lo`` and ``hi`` (0 bottom, 1 top) of ``ax``."""
    a, b = ax.span(start, length)
    top, bottom = ax.pixel(0, hi)[0], ax.pixel(0, lo)[0]
    img[top:bottom + 1, a:b] = _rgb8(rgb)


def _mark(img: np.ndarray, ax: Axes, frame: int, rgb) -> None:
    """A 2-pixel vertical line at frame ``frame``'s centre, 5% to 95% of ``ax``'s height."""
    c = ax.column(frame)
    top, bottom = ax.pixel(0, 0.95)[0], ax.pixel(0, 0.05)[0]
    img[top:bottom + 1, max(c - 1, ax.x0):c + 1] = _rgb8(rgb)


def _pose_strip(img: np.ndarray, ax: Axes, tl: Timeline) -> None:
    bad = [int(f) for f in np.flatnonzero(~tl.known)]
    for start, length in _runs(bad):
        _bar(img, ax, start, length, 0.1, 0.9, BAD_RGB)
    _text(img, f"{len(bad)} unknown" if bad else "all valid", ax.x1 + 5, (ax.y0 + ax.y1) / 2)


def _budget_strip(img: np.ndarray, ax: Axes, sel: FrameSelection) -> None:
    bad = set(sel.invalid_frames) | set(sel.frames_without_visibility)
    for f in sorted(set(sel.frame_indices) - bad):
        _mark(img, ax, f, MARK_RGB)
    for f in sorted(bad):
        _mark(img, ax, f, BAD_RGB)
    _text(img, f"{len(sel.frame_indices)} selected ({sel.profile})" + (f", {len(bad)} cannot witness" if bad else ""),
          ax.x1 + 5, (ax.y0 + ax.y1) / 2)


def _removal_strip(img: np.ndarray, ax: Axes, r: Removal, n: int, width: int) -> None:
    colour = UNKNOWN_RGB if not r.objects else REMOVED_RGB
    for start, length in _runs(r.frames):
        _bar(img, ax, start, length, 0.15, 0.85, colour)
    what = f"{r.question_type}: {r.subject}" if r.objects else f"{r.question_type}: no object, all-black dummy only"
    _text(img, f"removes {len(r.frames)}/{n}  {what}", ax.x1 + 5, (ax.y0 + ax.y1) / 2, max_width=width - ax.x1 - 9)


def render_png(tl: Timeline) -> bytes:
    """PNG bytes of :func:`figure`."""
    import cv2

    img, _ = figure(tl)
    ok, buf = cv2.imencode(".png", cv2.cvtColor(img, cv2.COLOR_RGB2BGR))
    if not ok:
        raise RuntimeError("OpenCV could not encode the PNG")
    return buf.tobytes()


def write_timeline(path: str | os.PathLike, tl: Timeline) -> Path:
    """Write the timeline PNG atomically."""
    write_atomic(path, render_png(tl))
    return Path(path)


def make_timeline(scene_json: str | os.PathLike, out: str | os.PathLike, questions_jsonl: str | None = None,
                  truth: TruthConfig = TruthConfig(budgets=()), visibility_npz: str | None = None,
                  occlusion: str = DEFAULT_OCCLUSION, evidence_threshold: float = DEFAULT_EVIDENCE_THRESHOLD,
                  unknown_as_evidence: bool = True, progress: bool = False, evidence_frame_margin: int = 0,
                  scene: Scene | None = None, questions: Sequence | None = None) -> Timeline:
    """``vistest timeline``: load the scene (and questions, and visibility or compute it),
    build the timeline (``truth``: the budget stage's settings, :func:`build_timeline`) and write its
    PNG to ``out``. ``scene``/``questions``: already loaded from ``scene_json``/``questions_jsonl``
    (``vistest run`` has them; not read again). Errors name the file and the field."""
    from ..questions import load_questions
    from ..visibility.table import compute_visibility

    scene = scene if scene is not None else Scene.load(scene_json)
    if questions is None:
        questions = load_questions(questions_jsonl, scene=scene) if questions_jsonl else ()
    if visibility_npz:
        vis = Visibility.load(visibility_npz)
    else:
        vis = compute_visibility(scene, occlusion=occlusion, progress=progress)
    tl = build_timeline(scene, vis, questions, truth, evidence_threshold, unknown_as_evidence, evidence_frame_margin)
    write_timeline(out, tl)
    return tl
