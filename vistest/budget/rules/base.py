"""What every ground-truth rule shares (vistest.budget.rules): the reason codes and their words, the
frames a budget selects (:class:`FrameSelection`), one question's finding (:class:`QuestionTruth`), the
visibility indexed for the rules with the stage's settings (:class:`RuleTable`), and the helpers the
rules share. The rules themselves are the other modules of this package (docs/truth.md)."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ...budgets import BudgetValue, budget_label
from ...errors import InputError
from ...questions import Question
from ...scene import Scene
from ...visibility.table import Visibility
from ..config import TruthConfig
from ..rows import UNANSWERABLE, TruthRow, real_row
from ..sampling import select_frames
from ..seen import BOUND_ARRAY
from ..windows import frames_in_span

REASON_NO_VALID_FRAMES = "no_valid_frames"            # no selected frame can witness anything
REASON_COUNT_SUPPORTED = "count_supported"            # every counted instance is seen
REASON_COUNT_REDUCED = "count_reduced"                # fewer instances seen than the original count
REASON_COUNT_EXCEEDS = "count_exceeds_original"       # more seen than the original count (GT disagrees with scene)
REASON_CATEGORY_UNSEEN = "category_unseen"            # no instance of the category seen
REASON_OBJECTS_SEEN = "objects_seen"                  # every referenced object is seen
REASON_OBJECT_UNSEEN = "object_unseen"                # a referenced object is seen in no selected frame
REASON_ORDER_SUPPORTED = "order_supported"            # first sightings give the original order
REASON_ORDER_CHANGED = "order_changed"                # first sightings give another order (an option)
REASON_FIRST_SIGHTING_TIE = "first_sighting_tie"      # two subjects first seen in the same frame
REASON_ORDER_NOT_IN_OPTIONS = "order_not_in_options"  # the new order is none of the options
REASON_BUDGET_SUFFICIENT = "budget_sufficient"        # room size / route planning at >= the minimum budget
REASON_BUDGET_BELOW_MINIMUM = "budget_below_minimum"  # room size / route planning below the minimum budget
REASON_WINDOW_SAMPLED = "window_sampled"              # the window holds the frames the type needs
REASON_WINDOW_UNDERSAMPLED = "window_undersampled"    # fewer selected frames in the window than the type needs
REASON_INSTANT_SAMPLED = "instant_sampled"            # a selected frame within the tolerance of the instant
REASON_INSTANT_UNSAMPLED = "instant_unsampled"        # no selected frame within the tolerance of the instant
REASON_WINDOW_ENDS_SAMPLED = "window_ends_sampled"    # a pose change: a selected frame near each end of the window
REASON_WINDOW_ENDS_UNSAMPLED = "window_ends_unsampled"  # a pose change: no selected frame near an end
REASON_INSTANT_ANCHORS_SAMPLED = "instant_anchors_sampled"    # an imported instant speed / acceleration: each anchor
REASON_INSTANT_ANCHOR_UNSAMPLED = "instant_anchor_unsampled"  # ... has a sampled frame, or one has none
REASON_TRACK_SUPPORTED = "track_supported"            # the seen window frames give the original answer
REASON_TRACK_CHANGED = "track_changed"                # they give another answer (every frame gives the original)
REASON_TRACK_DISAGREES = "track_disagrees_with_scene"  # another answer, and every frame does not give the original
REASON_TRACK_UNDERSAMPLED = "track_undersampled"      # the object seen in too few sampled frames of the window
REASON_TRACK_UNDEFINED = "track_undefined"            # the seen frames give no value (e.g. no floor displacement)
REASON_TRACK_NOT_IN_OPTIONS = "track_not_in_options"  # the recomputed heading is none of the options
REASON_TRACK_UNBRACKETED = "track_instant_unbracketed"  # an instant's anchor has no sampled frame seeing the object
REASON_CAMERA_ENDS_UNSAMPLED = "camera_ends_unsampled"  # no witnessing sampled frame near an end of the window
REASON_PRESENT = "presence_supported"                # presence: every subject seen, the answer yes
REASON_ABSENT = "presence_unseen"                    # presence: a subject unseen, "no" allowed (allow_zero)
REASON_PRESENCE_CHANGED = "presence_changed"         # presence: the frames give the other answer
REASON_NO_OBJECTS = "no_objects_named"                # a 2D question naming no object: nothing to check in the frames
REASON_NEEDS_3D = "needs_3d"                          # a 2D scene: the type's answer needs 3D boxes or camera poses
REASON_UNKNOWN_FRAMES = "depends_on_unknown_frames"   # 2D: the answer turns on frames the annotation says nothing of

REASON_WORDS = {
    REASON_NO_VALID_FRAMES: "no selected frame can witness anything (invalid pose or no visibility row)",
    REASON_PRESENT: "every subject is seen: the answer is yes",
    REASON_ABSENT: "a subject is seen in no selected frame: the answer is no (allow_zero)",
    REASON_PRESENCE_CHANGED: "the selected frames give the other answer",
    REASON_NO_OBJECTS: "the question names no object: nothing to check in the frames (give its objects to check them)",
    REASON_NEEDS_3D: "the answer needs 3D geometry (boxes, camera poses); the scene gives 2D tracks only",
    REASON_UNKNOWN_FRAMES: "the answer depends on selected frames where the annotation does not say whether a "
                           "referenced object is in view",
    REASON_COUNT_SUPPORTED: "every counted instance is seen",
    REASON_COUNT_REDUCED: "fewer instances are seen than the original count",
    REASON_COUNT_EXCEEDS: "more instances are seen than the original count",
    REASON_CATEGORY_UNSEEN: "no instance of a category is seen",
    REASON_OBJECTS_SEEN: "every referenced object is seen",
    REASON_OBJECT_UNSEEN: "a referenced object is seen in no selected frame",
    REASON_ORDER_SUPPORTED: "first sightings give the original order",
    REASON_ORDER_CHANGED: "first sightings give another order",
    REASON_FIRST_SIGHTING_TIE: "two subjects are first seen in the same frame",
    REASON_ORDER_NOT_IN_OPTIONS: "first sightings give an order that is none of the options",
    REASON_BUDGET_SUFFICIENT: "enough frames for room size and route planning",
    REASON_BUDGET_BELOW_MINIMUM: "too few frames for room size and route planning",
    REASON_WINDOW_SAMPLED: "the time window holds the selected frames the question needs",
    REASON_WINDOW_UNDERSAMPLED: "too few selected frames fall inside the time window",
    REASON_INSTANT_SAMPLED: "a selected frame is within the tolerance of the instant",
    REASON_INSTANT_UNSAMPLED: "no selected frame is within the tolerance of the instant",
    REASON_WINDOW_ENDS_SAMPLED: "a selected frame inside the window is within the tolerance of each end (a pose "
                                "change)",
    REASON_WINDOW_ENDS_UNSAMPLED: "no selected frame inside the window is within the tolerance of an end (a pose "
                                  "change compares the camera at both)",
    REASON_TRACK_SUPPORTED: "the sampled frames of the window that see the object give the original answer",
    REASON_TRACK_CHANGED: "the sampled frames of the window that see the object give another answer",
    REASON_TRACK_DISAGREES: "the sampled frames of the window that see the object give another answer, and every "
                            "frame of the window that sees it does not give the original one either (the ground "
                            "truth disagrees with the scene's track)",
    REASON_TRACK_UNDERSAMPLED: "the object is seen in too few sampled frames of the time window",
    REASON_TRACK_UNDEFINED: "the sampled frames of the window that see the object give no value",
    REASON_TRACK_NOT_IN_OPTIONS: "the recomputed heading is none of the options",
    REASON_TRACK_UNBRACKETED: "the sampled frames that see the object do not bracket the instant's window",
    REASON_CAMERA_ENDS_UNSAMPLED: "no witnessing sampled frame inside the window is within the tolerance of an end",
    REASON_INSTANT_ANCHORS_SAMPLED: "a witnessing sampled frame is at each anchor the instant's quantity is measured "
                                    "between",
    REASON_INSTANT_ANCHOR_UNSAMPLED: "no witnessing sampled frame is at an anchor the instant's quantity is measured "
                                     "between",
}



@dataclass(frozen=True)
class FrameSelection:
    """The frames a profile selects for one budget.

    ``frame_indices``: 0-based decoded frame numbers in selection order (duplicates kept).
    ``invalid_frames``: selected frames whose pose is invalid. ``frames_without_visibility``:
    selected frames with no row in the visibility table. Both sorted, unique; neither
    witnesses anything. ``evaluator``: the evaluator configuration whose frames these are
    (vistest.budget.evaluators; None: the run's sampler profile at this budget).
    ``rule_budget``: the budget the room size / route planning rule compares with its minimum
    (None: ``budget``; an evaluator's ``all`` selection: the distinct frames it takes, or
    ``"all"`` when it takes every frame).
    """

    profile: str
    budget: BudgetValue
    frame_indices: tuple[int, ...]
    invalid_frames: tuple[int, ...]
    frames_without_visibility: tuple[int, ...]
    evaluator: str | None = None
    rule_budget: BudgetValue | None = None

    @property
    def label(self) -> str:
        return budget_label(self.budget)

    @property
    def witnesses(self) -> tuple[int, ...]:
        """Selected frames that can witness (sorted, unique)."""
        bad = set(self.invalid_frames) | set(self.frames_without_visibility)
        return tuple(sorted(set(self.frame_indices) - bad))


@dataclass(frozen=True)
class QuestionTruth:
    """One question under one budget: the GT the selected frames support, and why.

    ``ground_truth``: the supported answer (same JSON type as the original), None when
    unanswerable. ``reason``: a ``REASON_*`` code. ``unseen``: referenced object ids (or
    labels) seen in no selected frame. ``evidence_frames``: selected frames in which a
    referenced object is seen (sorted). ``track`` (rule ``track``): the row's ``track_*`` fields;
    ``note``: what the rule adds to the reason in words (vistest.budget.truth writes it into ``reason_text``).
    """

    question: Question
    selection: FrameSelection
    ground_truth: Any
    status: str
    reason: str
    unseen: tuple[str, ...] = ()
    evidence_frames: tuple[int, ...] = ()
    unsupported: bool = False
    evaluator_config: Mapping[str, Any] | None = None
    reason_text: str = ""
    unseen_detail: tuple[Mapping[str, Any], ...] = ()
    without_occlusion: "QuestionTruth | None" = None
    temporal: Mapping[str, Any] | None = None
    track: Mapping[str, Any] | None = None
    note: str = ""
    unknown: Mapping[str, Any] | None = None  # status unknown: the row's unknown_* and *_if_unknown_unseen fields

    @property
    def occlusion_sensitive(self) -> bool:
        """Does the status or the answer change when occlusion is ignored (module docstring)?"""
        w = self.without_occlusion
        return w is not None and (w.status != self.status or w.ground_truth != self.ground_truth)

    @property
    def original_ground_truth(self) -> Any:
        return self.question.ground_truth

    def to_row(self, config: TruthConfig) -> TruthRow:
        """The row (vistest.budget.rows.REAL_FIELDS): the question's fields, then the budget's, then
        the rule parameters of ``config`` it was computed with (``seen_threshold`` in the seen rule's unit,
        ``seen_rule`` in words, ``min_budget_room_route``), so a file read on its own says how
        its answers were made. An evaluator's row (:func:`evaluator_truth`) adds ``evaluator``
        (its name), ``evaluator_config`` (profile, options, frames asked) and ``frames_taken``;
        its ``frame_indices`` are the source frames that configuration takes, the frames the
        row's answer assumes."""
        sel, rule = self.selection, config.rule
        extra: dict[str, Any] = {}
        if self.unsupported:
            extra["unsupported"] = True
        if self.occlusion_sensitive:
            extra.update(occlusion_sensitive=True, status_without_occlusion=self.without_occlusion.status,
                         ground_truth_without_occlusion=self.without_occlusion.ground_truth)
        if sel.evaluator is not None:
            extra.update(evaluator=sel.evaluator, evaluator_config=dict(self.evaluator_config or {}),
                         frames_taken=len(sel.frame_indices))
        if self.temporal is not None:
            extra.update(self.temporal)
        if self.track is not None:
            extra.update(self.track)
        if self.unknown is not None:
            extra.update(self.unknown)
        return real_row(
            self.question.record, self.question.source, self.question.line, num_frames=sel.budget,
            frame_indices=list(sel.frame_indices),
            ground_truth=self.ground_truth, status=self.status, reason=self.reason,
            original_ground_truth=self.question.ground_truth, sampler_profile=sel.profile, unseen=list(self.unseen),
            evidence_frames=list(self.evidence_frames), invalid_frames=list(sel.invalid_frames),
            frames_without_visibility=list(sel.frames_without_visibility), reason_text=self.reason_text,
            unseen_detail=[dict(d) for d in self.unseen_detail], **extra, seen_threshold=rule.threshold,
            seen_rule=rule.text, min_budget_room_route=config.min_budget_room_route)


class RuleTable:
    """Visibility indexed for look-ups: frame number -> row, object id -> column, seen mask (by
    the seen rule of ``config``), the rule's measure and the seen mask with occlusion ignored
    (``seen_bound``); ``config``: the stage's settings (a checked vistest.budget.config.TruthConfig),
    which every rule reads its parameters from."""

    def __init__(self, scene: Scene, vis: Visibility, config: TruthConfig):
        rule = config.rule
        visible = np.asarray(vis.visible, dtype=np.float64)
        fidx = np.asarray(vis.frame_index, dtype=np.int64)
        valid = np.asarray(vis.valid, dtype=bool)
        ids = [str(x) for x in np.asarray(vis.object_ids).tolist()]
        where = vis.source
        if visible.ndim != 2 or visible.shape != (len(fidx), len(ids)) or valid.shape != fidx.shape:
            raise InputError(f"{where}: visible: expected visible (F, O) with F = len(frame_index) = {len(fidx)}, "
                             f"O = len(object_ids) = {len(ids)} and valid (F,), got visible {visible.shape}, "
                             f"valid {valid.shape}")
        if vis.scene_id and vis.scene_id != scene.scene_id:
            raise InputError(f"{where}: scene_id: expected {scene.scene_id!r} (the scene of {scene.source}), got "
                             f"{vis.scene_id!r}")
        self.row: dict[int, int] = {}
        for r, f in enumerate(fidx.tolist()):
            if f in self.row:
                raise InputError(f"{where}: frame_index: {f} appears twice (rows {self.row[f]} and {r})")
            self.row[f] = r
        self.col: dict[str, int] = {}
        for c, oid in enumerate(ids):
            if oid in self.col:
                raise InputError(f"{where}: object_ids: {oid!r} appears twice")
            self.col[oid] = c
        missing = [o.id for o in scene.objects if o.id not in self.col]
        if missing:
            raise InputError(f"{where}: object_ids: no column for object(s) {missing[:8]} of {scene.source} (stale "
                             f"visibility file?)")
        self.valid = valid
        self.ids = ids
        self.rule = rule
        self.config = config
        self.occlusion = str(vis.params.get("occlusion", "?"))
        size = scene.image_size
        self.measure = rule.measure(vis, size)  # the rule's unit, for unseen_detail
        self.seen = vis.seen(rule, size)
        self.seen_bound = vis.seen(rule, size, array=BOUND_ARRAY)
        with np.errstate(invalid="ignore"):
            self.in_view = (self.measure > 0) & valid[:, None]
            self.in_fov = (np.asarray(vis.projected, dtype=np.float64) > 0) & valid[:, None]
        self.unknown = np.isnan(np.asarray(self.measure, np.float64)) & valid[:, None]  # 2D: no annotation says
        self.is_2d = vis.params.get("input") == "tracks2d"
        self.labels = {o.id: o.label for o in scene.objects}
        self.fps = float(scene.fps)
        self.scene = scene  # rule track: the objects' tracks and the cameras (vistest.motion)
        self.every_witness = tuple(sorted(f for f, r in self.row.items() if valid[r]))  # what "all frames" see

    def bound(self) -> "RuleTable":
        """This table with occlusion ignored: seen by the rule applied to ``projected``."""
        t = copy.copy(self)
        t.seen = self.seen_bound
        return t

    def unknown_seen(self) -> "RuleTable":
        """This table with every unknown cell (2D scenes) counted seen: the other extreme of what the
        annotation leaves open (vistest.budget.truth's unknown findings)."""
        t = copy.copy(self)
        t.seen = self.seen | self.unknown
        return t

    def unseen_detail(self, sel: FrameSelection, oid: str) -> dict:
        """Why object ``oid`` counts unseen in ``sel``'s witnessing frames: in how many it is in
        the field of view (``projected`` > 0), in view (the rule's measure > 0), the most it shows
        (``max``, the rule's unit) and in which frame, and the sentence saying so (``text``)."""
        frames = sel.witnesses
        c = self.col[oid]
        rows = np.array([self.row[f] for f in frames], dtype=np.int64)
        m = np.nan_to_num(self.measure[rows, c]) if len(rows) else np.zeros(0)
        n_view = int(self.in_view[rows, c].sum()) if len(rows) else 0
        n_fov = int(self.in_fov[rows, c].sum()) if len(rows) else 0
        k = int(np.argmax(m)) if len(m) else -1
        best = float(m[k]) if len(m) else 0.0
        name = f"{self.labels[oid]} {oid}"
        if n_view:
            text = (f"{name}: in view in {n_view} of {len(frames)} frames, at most {self.rule.value_text(best)} "
                    f"(frame {frames[k]}; rule: {self.rule.text})")
        elif n_fov:
            text = (f"{name}: inside the field of view in {n_fov} of {len(frames)} frames but hidden there "
                    f"(occlusion {self.occlusion})")
        else:
            text = f"{name}: outside the field of view in all {len(frames)} frames"
        return {"id": oid, "label": self.labels[oid], "frames": len(frames), "in_field_of_view": n_fov,
                "in_view": n_view, "max": best, "max_frame": frames[k] if n_view else None,
                "rule": self.rule.text, "text": text}

    def select(self, profile: str, budget: BudgetValue, num_frames: int, fps: float,
               options: Mapping[str, Any]) -> FrameSelection:
        return self.selection(profile, budget, select_frames(profile, num_frames, budget, fps=fps, **options))

    def selection(self, profile: str, budget: BudgetValue, idx: Sequence[int], evaluator: str | None = None,
                  rule_budget: BudgetValue | None = None) -> FrameSelection:
        """The FrameSelection of the source frames ``idx`` (selection order), with the ones that
        cannot witness."""
        idx = [int(x) for x in idx]
        uniq = sorted(set(idx))
        no_row = tuple(f for f in uniq if f not in self.row)
        invalid = tuple(f for f in uniq if f in self.row and not self.valid[self.row[f]])
        return FrameSelection(profile, budget, tuple(idx), invalid, no_row, evaluator, rule_budget)

    def sightings(self, sel: FrameSelection, cols: Sequence[int],
                  frames: Sequence[int] | None = None) -> list[list[int]]:
        """For each column, the witnessing selected frames (sorted) in which it is seen (``frames``: of
        those witnessing frames only)."""
        frames = sel.witnesses if frames is None else frames
        if not frames:
            return [[] for _ in cols]
        rows = np.array([self.row[f] for f in frames], dtype=np.int64)
        block = (self.seen[np.ix_(rows, np.asarray(cols, dtype=np.int64))] if len(cols)
                 else np.zeros((len(rows), 0), bool))
        return [[frames[k] for k in np.flatnonzero(block[:, j])] for j in range(len(cols))]

    def seen_in(self, frames: Sequence[int], col: int) -> list[int]:
        """The frames of ``frames`` (witnessing frames, sorted) in which column ``col`` is seen."""
        return [f for f in frames if self.seen[self.row[f], col]]

    def category_cols(self, labels: Iterable[str]) -> list[tuple[str, list[int]]]:
        """(label, columns of every object with that label), in the given label order."""
        return [(lab, [self.col[oid] for oid, label in self.labels.items() if label == lab]) for lab in labels]


def count_like(original: Any, value: int) -> Any:
    """``value`` with the JSON type of ``original`` (``"3"`` stays a string, 3.0 a float)."""
    if isinstance(original, str):
        return str(value)
    if isinstance(original, float):
        return float(value)
    return int(value)


def unanswerable(q: Question, sel: FrameSelection, reason: str, unseen: Sequence[str] = (),
                  evidence: Sequence[int] = ()) -> QuestionTruth:
    return QuestionTruth(q, sel, None, UNANSWERABLE, reason, tuple(unseen), tuple(evidence))


def counted_frames(q: Question, sel: FrameSelection, t: RuleTable) -> tuple[int, ...]:
    """The witnessing selected frames a count is decided over: every one, or for a question with a
    time window or an instant, those in its time span (vistest.budget.windows.frames_in_span: the
    window's frames, those within the instant tolerance of the instant), the frames its dummies remove
    the counted objects from (vistest.videos.evidence.time_span): one rule for the row and its dummy."""
    span = frames_in_span(sel.witnesses, q.window, q.instant, t.fps, t.config.instant_tolerance_s)
    return sel.witnesses if span is None else tuple(span)



def subject_cols(q: Question, t: RuleTable) -> list[tuple[str, list[int]]]:
    """The question's subjects and their columns: each object of ``objects`` (one column), each
    category label (every instance)."""
    return [(o, [t.col[o]]) for o in q.objects] + t.category_cols(q.category)
