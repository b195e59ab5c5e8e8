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

Drawn with matplotlib (Figure API, Agg backend; no pyplot state): axes, tick labels and a
colour bar are what it is for, and the PNG is a chart, not a video frame.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

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


def coverage_rgb(v: np.ndarray, threshold: float, seen: np.ndarray | None = None) -> np.ndarray:
    """RGB floats (..., 3) for coverages ``v`` (NaN: unknown grey; 0: white; up to the
    threshold: pale blue-grey; above it: viridis). ``seen``: where viridis goes instead (another
    seen rule's verdict)."""
    from matplotlib import colormaps

    v = np.asarray(v, float)
    u = scale_position(np.nan_to_num(v), threshold)
    t = np.clip(u / BELOW, 0.0, 1.0)[..., None]
    pale = PALE[0] * (1 - t) + PALE[1] * t
    hi = colormaps["viridis"](np.clip((u - BELOW) / (1 - BELOW), 0.0, 1.0))[..., :3]
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
# the figure
# ---------------------------------------------------------------------------------------
ROW_IN = 0.24  # inches per object row
STRIP_IN = 0.24  # inches per budget / question / pose strip
MIN_HEAT_IN = 1.6  # inches: the heat map (and its colour bar) is never shorter


def figure(tl: Timeline, width_in: float = 13.0, dpi: int = 100):
    """The timeline as a matplotlib Figure (Agg), and its axes by name: ``heat``,
    ``colorbar``, ``pose``, ``budget:{label}`` and ``question:{id}``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    n, no = tl.num_frames, len(tl.object_ids)
    strips = [("pose", "pose")] + [(f"budget:{s.label}", f"{s.label} frames") for s in tl.selections] \
        + [(f"question:{r.question_id}", f"Q {r.question_id}") for r in tl.removals]
    heights = [max(no * ROW_IN, MIN_HEAT_IN)] + [STRIP_IN] * len(strips)
    top_in, bottom_in = 0.85, 0.55
    fig = Figure(figsize=(width_in, sum(heights) + 0.08 * len(strips) + top_in + bottom_in), dpi=dpi)
    FigureCanvasAgg(fig)
    total = fig.get_figheight()
    gs = fig.add_gridspec(len(heights), 3, height_ratios=heights, width_ratios=[1, 0.1, 0.012], hspace=0.35,
                          wspace=0.0, left=0.12, right=0.71, top=1 - top_in / total, bottom=bottom_in / total)
    axes: dict[str, Any] = {}
    heat = fig.add_subplot(gs[0, 0])
    axes["heat"] = heat
    rgb = coverage_rgb(tl.coverage, tl.break_threshold, tl.seen_mask()) if no else np.ones((1, n, 3))
    heat.imshow(rgb, aspect="auto", interpolation="nearest", extent=(-0.5, n - 0.5, max(no, 1) - 0.5, -0.5))
    heat.set_yticks(range(no))
    heat.set_yticklabels([f"{i} {lab}" for i, lab in zip(tl.object_ids, tl.labels)], fontsize=8)
    heat.tick_params(axis="x", labelbottom=False)
    seen = tl.seen_mask().sum(axis=1)
    for r in range(no):
        heat.text(1.005, r, f"seen in {seen[r]}", transform=heat.get_yaxis_transform(), va="center", fontsize=7)
    secs = heat.secondary_xaxis("top", functions=(lambda f: f / tl.fps, lambda s: s * tl.fps))
    secs.set_xlabel("time (s)", fontsize=8)
    secs.tick_params(labelsize=7)
    heat.set_title(f"{tl.scene_id}: visible coverage per frame (fraction of the image after occlusion); "
                   f"seen = {tl.seen_rule.array} {tl.seen_rule.text}", fontsize=10, loc="left", pad=28)
    _colorbar(fig.add_subplot(gs[0, 2]), tl.break_threshold, axes)
    for k, (name, label) in enumerate(strips, start=1):
        ax = fig.add_subplot(gs[k, 0], sharex=heat)
        axes[name] = ax
        ax.set_ylim(0, 1)
        ax.set_yticks([0.5])
        ax.set_yticklabels([label], fontsize=8)
        ax.tick_params(axis="y", length=0)
        ax.tick_params(axis="x", labelbottom=k == len(strips), labelsize=8)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    _pose_strip(axes["pose"], tl)
    for s in tl.selections:
        _budget_strip(axes[f"budget:{s.label}"], s)
    for r in tl.removals:
        _removal_strip(axes[f"question:{r.question_id}"], r, n)
    last = axes[strips[-1][0]]
    last.set_xlabel("decoded frame", fontsize=9)
    heat.set_xlim(-0.5, n - 0.5)
    return fig, axes


def _colorbar(ax, threshold: float, axes: dict) -> None:
    """A vertical colour bar of :func:`coverage_rgb`, the seen threshold marked."""
    axes["colorbar"] = ax
    u = np.linspace(0, 1, 256)
    v = _inverse_position(u, threshold)
    ax.imshow(coverage_rgb(v, threshold)[::-1, None, :], aspect="auto", extent=(0, 1, 0, 1))
    ticks = [0.0, threshold, 0.1, 0.25, 0.5, 1.0]
    ticks = sorted({t for t in ticks if 0 <= t <= 1})
    ax.set_yticks(scale_position(np.array(ticks), threshold))
    ax.set_yticklabels([f"{t:.0%}" + (" seen" if t == threshold else "") for t in ticks], fontsize=7)
    ax.yaxis.tick_right()
    ax.set_xticks([])
    ax.axhline(BELOW, color="black", lw=1.2)


def _inverse_position(u: np.ndarray, threshold: float) -> np.ndarray:
    """Coverage at colour-scale position ``u`` (inverse of :func:`scale_position`)."""
    below = u / BELOW * threshold
    above = threshold + (1 - threshold) * ((u - BELOW) / (1 - BELOW)) ** 2
    return np.where(u <= BELOW, below, above)


def _pose_strip(ax, tl: Timeline) -> None:
    bad = [int(f) for f in np.flatnonzero(~tl.known)]
    for start, length in _runs(bad):
        ax.broken_barh([(start - 0.5, length)], (0.1, 0.8), color=BAD_RGB)
    ax.text(1.005, 0.5, f"{len(bad)} unknown" if bad else "all valid", transform=ax.transAxes, va="center",
            fontsize=7)


def _budget_strip(ax, sel: FrameSelection) -> None:
    bad = set(sel.invalid_frames) | set(sel.frames_without_visibility)
    good = sorted(set(sel.frame_indices) - bad)
    ax.vlines(good, 0.05, 0.95, color=MARK_RGB, lw=1.5, antialiased=False)
    if bad:
        ax.vlines(sorted(bad), 0.05, 0.95, color=BAD_RGB, lw=1.5, antialiased=False)
    ax.text(1.005, 0.5, f"{len(sel.frame_indices)} selected ({sel.profile})" + (f", {len(bad)} cannot witness"
                                                                               if bad else ""),
            transform=ax.transAxes, va="center", fontsize=7)


def _removal_strip(ax, r: Removal, n: int) -> None:
    colour = UNKNOWN_RGB if not r.objects else REMOVED_RGB
    for start, length in _runs(r.frames):
        ax.broken_barh([(start - 0.5, length)], (0.15, 0.7), color=colour)
    what = f"{r.question_type}: {r.subject}" if r.objects else f"{r.question_type}: no object, all-black dummy only"
    text = f"removes {len(r.frames)}/{n}  {what}"
    ax.text(1.005, 0.5, text if len(text) <= 64 else text[:63] + "\u2026", transform=ax.transAxes, va="center",
            fontsize=7)


def render_png(tl: Timeline, dpi: int = 100) -> bytes:
    """PNG bytes of :func:`figure`."""
    import io

    fig, _ = figure(tl, dpi=dpi)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def write_timeline(path: str | os.PathLike, tl: Timeline, dpi: int = 100) -> Path:
    """Write the timeline PNG atomically."""
    write_atomic(path, render_png(tl, dpi))
    return Path(path)


def make_timeline(scene_json: str | os.PathLike, out: str | os.PathLike, questions_jsonl: str | None = None,
                  truth: TruthConfig = TruthConfig(budgets=()), visibility_npz: str | None = None,
                  occlusion: str = DEFAULT_OCCLUSION, evidence_threshold: float = DEFAULT_EVIDENCE_THRESHOLD,
                  unknown_as_evidence: bool = True, progress: bool = False, evidence_frame_margin: int = 0
                  ) -> Timeline:
    """``vistest timeline``: load the scene (and questions, and visibility or compute it),
    build the timeline (``truth``: the budget stage's settings, :func:`build_timeline`) and write its
    PNG to ``out``. Errors name the file and the field."""
    from ..questions import load_questions
    from ..visibility.table import compute_visibility

    scene = Scene.load(scene_json)
    questions = load_questions(questions_jsonl, scene=scene) if questions_jsonl else ()
    if visibility_npz:
        vis = Visibility.load(visibility_npz)
    else:
        vis = compute_visibility(scene, occlusion=occlusion, progress=progress)
    tl = build_timeline(scene, vis, questions, truth, evidence_threshold, unknown_as_evidence, evidence_frame_margin)
    write_timeline(out, tl)
    return tl
