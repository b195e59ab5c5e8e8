"""BudgetTruth: the ground truth the sampled frames support, per question and budget (stage 4).

For each frame budget, a sampler profile (vistest/budget/sampling.py) selects the decoded frames
an evaluator feeds the model; the visibility table says what those frames show; each
question's ground truth is re-derived from them with a status and a reason:

* ``kept``: the frames support the all-frame answer;
* ``changed``: they support a different answer (``ground_truth`` is the new one);
* ``unanswerable``: they cannot support any answer (``ground_truth`` is None);
* ``unknown`` (2D scenes, vistest.tracks2d): the answer depends on selected frames where the
  annotation does not say whether a referenced object is in view (``ground_truth`` is None; the row
  names the frames and objects, ``unknown_frames``/``unknown_objects``, and gives the answer those
  frames would have if the objects were unseen there, ``status_if_unknown_unseen``,
  ``ground_truth_if_unknown_unseen``). Never silently "unseen": :func:`_unknown_truth`.

Rules (each threshold a parameter of :func:`budget_truth`):

* An object is *seen* in a frame by the seen rule (vistest.budget.seen): by default when its
  visible coverage (fraction of the image area after occlusion) exceeds ``seen_threshold``
  (0.05, ReVSI's 5%); alternatives: a share of its own silhouette, a native pixel count.
* A selected frame witnesses nothing when its pose is invalid or it has no row in the
  visibility table; such frames are reported (``invalid_frames``,
  ``frames_without_visibility``). No witnessing frame at all: ``unanswerable``/``no_valid_frames``.
* Counting: the number of instances of the category (sum over labels for
  ``object_counting_multiple``) seen in at least one selected frame. Equal to the
  original: kept; another non-zero value: changed; zero: unanswerable unless the question
  has ``allow_zero`` (then changed to 0).
* Size / distance / direction: unanswerable when any referenced object is seen in no
  selected frame; kept otherwise (the geometry does not depend on the frames).
* Presence (``object_presence``: "yes"/"no" options): "yes" when every subject (an object, or any
  instance of a category) is seen in a selected frame; a subject unseen: "no" with ``allow_zero``,
  else unanswerable. The original's answer: kept (``presence_supported`` / ``presence_unseen``);
  the other: changed (``presence_changed``).
  A count with a time window or an instant counts inside its *time span* only (issue #44;
  :func:`counted_frames`, vistest.budget.windows.frames_in_span: the window's witnessing selected
  frames, those within the instant tolerance of the instant): the frames its dummies remove the
  counted objects from, so the budget row and the dummy row follow one rule.
* Appearance order: recomputed from first sightings (earliest selected frame in which the
  object, or any instance of the category, is seen). Unanswerable when a subject is never
  seen, when two first sightings fall on the same frame, or when the new order is not one
  of the options.
* Room size and route planning: unanswerable below ``min_budget_room_route`` frames
  (default 32: ReVSI excludes them at 16); ``"all"`` is never below.
* Time windows (any question with ``time_start``/``time_end`` or ``time``; vistest.budget.windows):
  the row states the selected frames inside the window (``window_frames``, ``window_frame_count``)
  and, for an instant, the selected frame nearest it and its distance in seconds
  (``instant_frame``, ``instant_offset_s``, against ``instant_tolerance_s``, default
  vistest.budget.windows.DEFAULT_INSTANT_TOLERANCE_S). The STI-Bench types (rule ``window``)
  are decided on that alone: an instant is answerable when a witnessing selected frame is
  within the tolerance, a window when it holds at least the type's ``window_frames``
  witnessing selected frames (QuestionType.window_frames); kept then, unanswerable otherwise.
  This is a necessary condition only (whether the moving object is seen there needs tracks).
  A pose change (:data:`POSE_CHANGE_TYPES`: Pose Estimation, Ego-Centric Orientation) with a
  window compares the camera at its two ends: it needs a witnessing selected frame *inside* the
  window within the instant tolerance of each end (the tolerance applied inward,
  vistest.budget.windows.window_ends; two distinct frames), else unanswerable
  (``window_ends_unsampled``). A Speed & Acceleration row asked at an instant (ReSTI's
  ``time_start == time_end``; its quantity from the ``instant_quantity`` column, else the wording:
  vistest.questions.instant_quantity) is measured between anchors (vistest.motion.ANCHORS: a speed
  over t -/+ 0.5 s, an acceleration from t - 1, t, t + 1): it needs a witnessing selected frame
  within vistest.motion.ANCHOR_TOLERANCE_S (0.1 s) of each anchor (``instant_anchors_sampled``, the
  anchor frames the evidence), else unanswerable (``instant_anchor_unsampled``, the anchor named in
  words); a row naming neither quantity keeps the instant rule, saying so. Other instants (pose
  rows, groundings) keep the instant rule.
* The camera's own motion (rule ``camera``): the quantity over the witnessing selected frames
  inside the window, from the first (at most the instant tolerance after its start) to the last
  (at most the tolerance before its end), never a frame outside the window (:func:`_camera`).
* Tracks (the dynamic types, rule ``track``; docs/questions-format.md "Dynamic questions"): the
  *seen window frames* are the witnessing selected frames inside the window in which the
  question's object (``objects[0]``) is seen (``track_frames``). Fewer than the type's
  ``window_frames`` (2; acceleration 3): unanswerable (``track_undersampled``). Otherwise the
  quantity (vistest.motion: metres, m/s, m/s^2, or the heading angle in degrees in the frame of
  the camera at the window's first decoded frame) is recomputed over them (``track_value``) and
  gives an option (:func:`track_answer`: the nearest number; the heading's sector). The
  original's option: kept (``track_supported``); another: changed to it, ``track_changed`` when
  every frame of the window that sees the object (``track_value_all``, the all-frame answer)
  gives the original option, else ``track_disagrees_with_scene`` (the ground truth disagrees
  with the scene, as ``count_exceeds_original``); no value (``track_undefined``), or a heading
  none of the options (``track_not_in_options``): unanswerable. An instant quantity
  (``motion_instant_speed``; vistest.motion.ANCHORS) takes its frames from its anchors' span
  widened by the anchor tolerance, and needs a seen sampled frame within that tolerance of each
  anchor, else unanswerable (``track_instant_unbracketed``, the anchor named in words).
* Reformulated questions (vistest/reformulate.py): an open appearance order's answer is the
  new order's labels (``"bed, plant, sofa"``); a question offering "None of these" answers
  it when the new order is none of the other options. Where a rule finds the question
  unanswerable and the question offers an answer for that (``Question.unsupported_answer``:
  the "Cannot be determined from the video" option, else "None of these"; for numbers and
  texts that accept abstention, that phrase), the ground truth is that answer, the status
  ``kept`` or ``changed`` against the original, the reason the rule's finding, and the
  record carries ``"unsupported": true``.

2D scenes (a table with ``params["input"] == "tracks2d"``, vistest.visibility.tracks2d): a type
whose answer needs 3D geometry (:attr:`vistest.questions.QuestionType.needs_3d`: size, distance,
direction, room size, route planning, tracks, the camera's motion) is unanswerable with reason
``needs_3d``; a question of the 2D types naming no object is kept (``no_objects_named``: nothing
to check). Counting and appearance order apply as they are (distinct track ids seen, first sightings).

Reason codes (machine-readable, the ``reason`` field) are the ``REASON_*`` constants. Each row also
says it in words (``reason_text``) and, per referenced object that counts unseen in the selected
frames, why (``unseen_detail``: in how many of the witnessing frames it is in view, the most it
shows there in the rule's unit, against the rule). A row whose status or answer changes when
occlusion is ignored (the rule applied to ``projected``, the box silhouette) carries
``occlusion_sensitive: true`` and ``status_without_occlusion``: its answerability depends on the
occlusion mode.
"""
from __future__ import annotations

import copy
import json
import os
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..atomic import write_atomic
from ..errors import InputError
from ..answers import NUMBER, is_special_option, none_letter, normalize_text
from ..layout import budget_file_name
from .. import motion
from ..questions import (ANSWER_TEXT, RULE_APPEARANCE, RULE_CAMERA, RULE_COUNTING, RULE_MIN_BUDGET, RULE_OBJECTS,
                         RULE_PRESENCE, RULE_TRACK, RULE_WINDOW, STI_SPEED_ACCELERATION, Question, instant_quantity,
                         option_letter, option_number)
from .windows import (DEFAULT_INSTANT_TOLERANCE_S, frames_in_span, frames_in_window, nearest_frame, window_ends,
                      window_range)
from .evaluators import Evaluator
from .rows import CHANGED, KEPT, STATUSES, UNANSWERABLE, UNKNOWN, TruthRow, real_row
from .seen import BOUND_ARRAY, DEFAULT_SEEN_THRESHOLD, SeenRule, seen_rule
from ..budgets import ALL, BudgetValue, budget_label, parse_budget
from .sampling import DEFAULT_PROFILE, check_options, select_frames
from ..scene import Scene
from ..visibility.table import Visibility

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

DEFAULT_BUDGETS: tuple[BudgetValue, ...] = (16, 32, 64, ALL)
DEFAULT_MIN_BUDGET_ROOM_ROUTE = 32  # frames: ReVSI excludes room size and route planning at 16
OPEN_NUMBER_REL_TOL = 0.05  # an open (answer_kind number) dynamic answer is kept within 5% of the original
TRACK_UNITS = {**motion.UNITS, motion.HEADING: "deg"}  # the unit of track_value per vistest.motion quantity
# STI-Bench tasks comparing the camera at the two ends of the window (ReSTI: "Taking the camera pose at t=0 s as the
# identity ..., what is the camera pose at t=15 s?"; "Between ... 0.000000 and 19.696910 seconds, ... heading change")
POSE_CHANGE_TYPES = ("sti_pose_estimation", "sti_ego_centric_orientation")

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
    ``note``: what the rule adds to the reason in words (:func:`_explain`).
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

    def to_row(self, rule: SeenRule, min_budget_room_route: int) -> TruthRow:
        """The row (vistest.budget.rows.REAL_FIELDS): the question's fields, then the budget's, then
        the rule parameters it was computed with (``seen_threshold`` in ``rule``'s unit,
        ``seen_rule`` in words, ``min_budget_room_route``), so a file read on its own says how
        its answers were made. An evaluator's row (:func:`evaluator_truth`) adds ``evaluator``
        (its name), ``evaluator_config`` (profile, options, frames asked) and ``frames_taken``;
        its ``frame_indices`` are the source frames that configuration takes, the frames the
        row's answer assumes."""
        sel = self.selection
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
            seen_rule=rule.text, min_budget_room_route=min_budget_room_route)


@dataclass(frozen=True)
class BudgetTruth:
    """Every question under every budget, for one scene and sampler profile."""

    scene_id: str
    profile: str
    num_frames: int
    seen_threshold: float
    min_budget_room_route: int
    selections: tuple[FrameSelection, ...]
    items: tuple[QuestionTruth, ...]
    seen_rule: SeenRule = SeenRule()

    @property
    def occlusion_sensitive(self) -> tuple[QuestionTruth, ...]:
        """The items whose status or answer changes when occlusion is ignored."""
        return tuple(it for it in self.items if it.occlusion_sensitive)

    @property
    def budgets(self) -> tuple[BudgetValue, ...]:
        return tuple(s.budget for s in self.selections)

    def for_budget(self, budget: BudgetValue) -> tuple[QuestionTruth, ...]:
        """The items of one budget, in question order."""
        b = parse_budget(budget)
        return tuple(it for it in self.items if it.selection.budget == b)

    def row(self, item: QuestionTruth) -> TruthRow:
        """One item's row, with this truth's rule parameters (:meth:`QuestionTruth.to_row`)."""
        return item.to_row(self.seen_rule, self.min_budget_room_route)

    def rows(self, budget: BudgetValue) -> tuple[TruthRow, ...]:
        """The rows of one budget, in question order."""
        return tuple(self.row(it) for it in self.for_budget(budget))

    def counts(self, budget: BudgetValue) -> dict[str, dict[str, int]]:
        """``{question_type: {status: count}}`` for one budget."""
        out: dict[str, dict[str, int]] = {}
        for it in self.for_budget(budget):
            out.setdefault(it.question.question_type, dict.fromkeys(STATUSES, 0))[it.status] += 1
        return out


# ---------------------------------------------------------------------------------------
# computation
# ---------------------------------------------------------------------------------------
class _Table:
    """Visibility indexed for look-ups: frame number -> row, object id -> column, seen mask (by
    ``rule``), the rule's measure and the seen mask with occlusion ignored (``seen_bound``)."""

    def __init__(self, scene: Scene, vis: Visibility, rule: SeenRule):
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
        self.instant_tolerance_s = DEFAULT_INSTANT_TOLERANCE_S
        self.scene = scene  # rule track: the objects' tracks and the cameras (vistest.motion)
        self.every_witness = tuple(sorted(f for f, r in self.row.items() if valid[r]))  # what "all frames" see

    def bound(self) -> "_Table":
        """This table with occlusion ignored: seen by the rule applied to ``projected``."""
        t = copy.copy(self)
        t.seen = self.seen_bound
        return t

    def unknown_seen(self) -> "_Table":
        """This table with every unknown cell (2D scenes) counted seen: the other extreme of what the
        annotation leaves open (:func:`_unknown_truth`)."""
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


def _unanswerable(q: Question, sel: FrameSelection, reason: str, unseen: Sequence[str] = (),
                  evidence: Sequence[int] = ()) -> QuestionTruth:
    return QuestionTruth(q, sel, None, UNANSWERABLE, reason, tuple(unseen), tuple(evidence))


def counted_frames(q: Question, sel: FrameSelection, t: _Table) -> tuple[int, ...]:
    """The witnessing selected frames a count is decided over: every one, or for a question with a
    time window or an instant, those in its time span (vistest.budget.windows.frames_in_span: the
    window's frames, those within the instant tolerance of the instant), the frames its dummies remove
    the counted objects from (vistest.videos.evidence.time_span): one rule for the row and its dummy."""
    span = frames_in_span(sel.witnesses, q.window, q.instant, t.fps, t.instant_tolerance_s)
    return sel.witnesses if span is None else tuple(span)


def _counting(q: Question, sel: FrameSelection, t: _Table) -> QuestionTruth:
    n_seen, evidence_set, unseen_labels = 0, set(), []
    frames = counted_frames(q, sel, t)
    for label, cols in t.category_cols(q.category):
        sights = t.sightings(sel, cols, frames)
        seen_here = sum(1 for s in sights if s)
        n_seen += seen_here
        evidence_set.update(f for s in sights for f in s)
        if not seen_here:
            unseen_labels.append(label)
    evidence = sorted(evidence_set)
    original = int(float(q.ground_truth))
    if n_seen == 0 and not q.allow_zero:
        return _unanswerable(q, sel, REASON_CATEGORY_UNSEEN, unseen_labels)
    if n_seen == original:
        return QuestionTruth(q, sel, q.ground_truth, KEPT, REASON_COUNT_SUPPORTED, tuple(unseen_labels),
                             tuple(evidence))
    reason = (REASON_CATEGORY_UNSEEN if n_seen == 0 else
              REASON_COUNT_REDUCED if n_seen < original else REASON_COUNT_EXCEEDS)
    return QuestionTruth(q, sel, count_like(q.ground_truth, n_seen), CHANGED, reason, tuple(unseen_labels),
                         tuple(evidence))


def _objects(q: Question, sel: FrameSelection, t: _Table) -> QuestionTruth:
    if not q.objects:  # a 2D type's question naming no object (vistest.questions: 3D types need some)
        return QuestionTruth(q, sel, q.ground_truth, KEPT, REASON_NO_OBJECTS)
    sights = t.sightings(sel, [t.col[o] for o in q.objects])
    unseen = [o for o, s in zip(q.objects, sights) if not s]
    evidence = sorted({f for s in sights for f in s})
    if unseen:
        return _unanswerable(q, sel, REASON_OBJECT_UNSEEN, unseen, evidence)
    return QuestionTruth(q, sel, q.ground_truth, KEPT, REASON_OBJECTS_SEEN, (), tuple(evidence))


def presence_letters(q: Question) -> tuple[str | None, str | None]:
    """The option letters (or texts, unlettered) of "yes" and "no" of a presence question (None: absent)."""
    found: dict[str, str] = {}
    for opt in q.options or ():
        letter, text = option_letter(opt)
        if normalize_text(text) in ("yes", "no"):
            found.setdefault(normalize_text(text), letter if letter is not None else opt)
    return found.get("yes"), found.get("no")


def _presence(q: Question, sel: FrameSelection, t: _Table) -> QuestionTruth:
    """Rule presence (module docstring): "yes" when every subject (an object, or any instance of a
    category) is seen in a selected frame; else "no" with ``allow_zero``, unanswerable without."""
    evidence: set[int] = set()
    unseen = []
    for name, cols in _subject_cols(q, t):
        seen_at = {f for s in t.sightings(sel, cols) for f in s}
        evidence |= seen_at
        if not seen_at:
            unseen.append(name)
    yes, no = presence_letters(q)
    if unseen and not q.allow_zero:
        return _unanswerable(q, sel, REASON_OBJECT_UNSEEN if q.objects else REASON_CATEGORY_UNSEEN, unseen,
                             sorted(evidence))
    answer = no if unseen else yes
    if str(answer).strip().upper() == str(q.ground_truth).strip().upper():
        return QuestionTruth(q, sel, q.ground_truth, KEPT, REASON_ABSENT if unseen else REASON_PRESENT,
                             tuple(unseen), tuple(sorted(evidence)))
    return QuestionTruth(q, sel, answer, CHANGED, REASON_PRESENCE_CHANGED, tuple(unseen), tuple(sorted(evidence)))


def _appearance(q: Question, sel: FrameSelection, t: _Table) -> QuestionTruth:
    if q.category:
        groups = t.category_cols(q.category)
        names = list(q.category)
        labels = list(q.category)
    else:
        groups = [(o, [t.col[o]]) for o in q.objects]
        names = list(q.objects)
        labels = [t.labels[o] for o in q.objects]
    first: list[int | None] = []
    evidence: set[int] = set()
    for _, cols in groups:
        sights = t.sightings(sel, cols)
        seen_at = sorted({f for s in sights for f in s})
        evidence.update(seen_at)
        first.append(seen_at[0] if seen_at else None)
    unseen = [n for n, f in zip(names, first) if f is None]
    if unseen:
        return _unanswerable(q, sel, REASON_OBJECT_UNSEEN if not q.category else REASON_CATEGORY_UNSEEN,
                             unseen, sorted(evidence))
    if len(set(first)) < len(first):
        return _unanswerable(q, sel, REASON_FIRST_SIGHTING_TIE, (), sorted(evidence))
    order = sorted(range(len(names)), key=lambda k: first[k])
    if isinstance(q.ground_truth, list):
        new_gt: Any = [names[k] for k in order]
        same = [str(x) for x in q.ground_truth] == new_gt
    elif q.kind == ANSWER_TEXT:
        new_gt = ", ".join(labels[k] for k in order)
        same = normalize_text(new_gt) == normalize_text(q.ground_truth)
    else:
        letter = q.mcq_letter_of(tuple(labels[k] for k in order)) or none_letter(q.options)
        if letter is None:
            return _unanswerable(q, sel, REASON_ORDER_NOT_IN_OPTIONS, (), sorted(evidence))
        new_gt = letter
        same = letter.strip().upper() == str(q.ground_truth).strip().upper()
    if same:
        return QuestionTruth(q, sel, q.ground_truth, KEPT, REASON_ORDER_SUPPORTED, (), tuple(sorted(evidence)))
    return QuestionTruth(q, sel, new_gt, CHANGED, REASON_ORDER_CHANGED, (), tuple(sorted(evidence)))


def temporal_fields(q: Question, sel: FrameSelection, fps: float, tolerance_s: float) -> dict[str, Any] | None:
    """The row fields of a question's window and instant over ``sel``'s selected frames (module
    docstring; vistest.budget.rows.REAL_FIELDS), None for a question with neither."""
    if q.window is None and q.instant is None:
        return None
    out: dict[str, Any] = {"video_fps": fps}
    if q.window is not None:
        inside = frames_in_window(sel.frame_indices, q.window[0], q.window[1], fps)
        out.update(window_frames=inside, window_frame_count=len(inside))
    if q.instant is not None:
        m = nearest_frame(sel.frame_indices, q.instant, fps, tolerance_s)
        out.update(instant_frame=m.frame, instant_offset_s=m.offset_s, instant_tolerance_s=tolerance_s)
    return out


def _window(q: Question, sel: FrameSelection, t: _Table) -> QuestionTruth:
    """Rule ``window`` (module docstring) over the witnessing selected frames."""
    if q.instant is not None:
        judged, why = _instant_anchors(q, sel, t) if q.question_type == STI_SPEED_ACCELERATION else (None, "")
        if judged is not None:
            return judged
        m = nearest_frame(sel.witnesses, q.instant, t.fps, t.instant_tolerance_s)
        qt = (_unanswerable(q, sel, REASON_INSTANT_UNSAMPLED) if not m.within else
              QuestionTruth(q, sel, q.ground_truth, KEPT, REASON_INSTANT_SAMPLED, (), (m.frame,)))
        return replace(qt, note=f"{why}: the instant rule") if why else qt
    if q.question_type in POSE_CHANGE_TYPES and q.window[0] < q.window[1]:
        ends = window_ends(sel.witnesses, q.window[0], q.window[1], t.fps, t.instant_tolerance_s)
        found = tuple(f for f in (ends.start, ends.end) if f is not None)
        if not ends.served:
            return replace(_unanswerable(q, sel, REASON_WINDOW_ENDS_UNSAMPLED, (), tuple(sorted(set(found)))),
                           note=ends.why)
        return QuestionTruth(q, sel, q.ground_truth, KEPT, REASON_WINDOW_ENDS_SAMPLED, (), found,
                             note=f"ends: frames {ends.start} and {ends.end}, inside the window")
    inside = frames_in_window(sel.witnesses, q.window[0], q.window[1], t.fps)
    if len(inside) < q.type.window_frames:
        return _unanswerable(q, sel, REASON_WINDOW_UNDERSAMPLED, (), inside)
    return QuestionTruth(q, sel, q.ground_truth, KEPT, REASON_WINDOW_SAMPLED, (), tuple(inside))


def _instant_anchors(q: Question, sel: FrameSelection, t: _Table) -> tuple[QuestionTruth | None, str]:
    """An imported Speed & Acceleration row asked at an instant (module docstring): its quantity
    (vistest.questions.instant_quantity: the ``instant_quantity`` column, else the wording) is
    measured between anchor times (vistest.motion.ANCHORS: speed t -/+ 0.5 s, acceleration t - 1, t,
    t + 1), each of which needs a witnessing sampled frame within vistest.motion.ANCHOR_TOLERANCE_S
    (the frames nearest the anchors are the evidence): kept, else unanswerable naming the anchor in
    words. (None, why) when the row names neither quantity (the instant rule then applies)."""
    quantity, how = instant_quantity(q.record)
    if quantity is None:
        return None, how
    at = ", ".join(f"{q.instant + off:g} s" for off in motion.ANCHORS[quantity])
    lead = (f"{quantity.replace('_', ' ')} at {q.instant:g} s (read from {how}) is measured between the anchors "
            f"{at}, each needing a witnessing sampled frame within {motion.ANCHOR_TOLERANCE_S:g} s")
    try:
        anchors = motion.anchor_frames(quantity, sel.witnesses, q.instant, t.fps)
    except motion.MotionError as e:
        return replace(_unanswerable(q, sel, REASON_INSTANT_ANCHOR_UNSAMPLED), note=f"{lead}; {e}"), ""
    frames = ", ".join(str(f) for f in anchors)
    return QuestionTruth(q, sel, q.ground_truth, KEPT, REASON_INSTANT_ANCHORS_SAMPLED, (), tuple(anchors),
                         note=f"{lead}: frames {frames}"), ""


def track_value(q: Question, frames: Sequence[int], t: _Table) -> float:
    """The quantity of a dynamic question (``q.type.motion``, vistest.motion) over ``frames`` (the
    observed frames, sorted): metres, m/s, m/s^2, or the heading angle in degrees in the frame of
    the camera at the window's first decoded frame; an instant quantity over its anchors among
    ``frames`` (vistest.motion.anchor_frames). Raises vistest.motion.MotionError where the frames
    give none."""
    obj = next(o for o in t.scene.objects if o.id == q.objects[0])
    if q.type.motion in motion.ANCHORS:
        anchors = motion.anchor_frames(q.type.motion, frames, q.instant, t.fps)
        return motion.instant_value(q.type.motion, motion.centers_at(obj, anchors), anchors, t.fps)
    points = motion.centers_at(obj, frames)
    if q.type.motion == motion.HEADING:
        right, forward = motion.camera_axes(t.scene, window_range(q.window[0], q.window[1], t.fps)[0])
        return motion.heading_angle(points, right, forward)
    return motion.quantity(q.type.motion, points, frames, t.fps)


def track_answer(q: Question, value: float) -> Any:
    """The answer a dynamic question's recomputed ``value`` gives: the letter of the option whose
    number is nearest it (the earlier option on a tie; options starting with no number, e.g. "None
    of these", are skipped), for a heading the option worded as its sector (vistest.motion.heading;
    "None of these" when no option is, else None); an open question (``answer_kind``): the sector's
    word, or the value itself (a number rounded to 4 decimals; a string when the original is)."""
    if q.kind == ANSWER_TEXT:
        return motion.heading(value)[0]
    if q.kind == NUMBER:
        return round(value, 4) if not isinstance(q.ground_truth, str) else f"{value:.4f}"
    if q.type.motion == motion.HEADING:
        sector = motion.heading(value)[0]
        for opt in q.options or ():
            letter, text = option_letter(opt)
            if normalize_text(text) == sector:
                return letter if letter is not None else opt
        return none_letter(q.options)
    best: tuple[float, str] | None = None
    for opt in q.options or ():
        letter, text = option_letter(opt)
        x = option_number(text)
        if x is not None and (best is None or abs(x - value) < best[0]):
            best = (abs(x - value), letter if letter is not None else opt)
    return None if best is None else best[1]


def same_answer(q: Question, answer: Any) -> bool:
    """Is ``answer`` (:func:`track_answer`) the question's own? An option: the same letter; an
    open text: the same words (normalised); an open number: within :data:`OPEN_NUMBER_REL_TOL` of
    the original, relatively (the strictest MRA threshold, vistest.answers.MRA_THRESHOLDS)."""
    if answer is None:
        return False
    if q.kind == NUMBER:
        gt = float(q.ground_truth)
        return abs(float(answer) - gt) <= OPEN_NUMBER_REL_TOL * abs(gt)
    if q.kind == ANSWER_TEXT:
        return normalize_text(str(answer)) == normalize_text(str(q.ground_truth))
    return str(answer).strip().upper() == str(q.ground_truth).strip().upper()


def _track_over(q: Question, frames: Sequence[int], t: _Table) -> tuple[float | None, str]:
    """(value, why none): :func:`track_value` over ``frames`` when there are enough of them
    (``q.type.window_frames``), else None with the reason in words."""
    need = q.type.window_frames
    if len(frames) < need:
        return None, f"object seen in {len(frames)} sampled frame(s) of the window, needs {need}"
    try:
        return track_value(q, frames, t), ""
    except motion.MotionError as e:
        return None, str(e)


def track_span(q: Question, t: _Table) -> tuple[float, float]:
    """The seconds a dynamic question's frames are taken from: its window, or for an instant
    quantity the span of its anchors widened by the anchor tolerance (vistest.motion)."""
    if q.type.motion in motion.ANCHORS:
        offs = motion.ANCHORS[q.type.motion]
        return (q.instant + offs[0] - motion.ANCHOR_TOLERANCE_S, q.instant + offs[-1] + motion.ANCHOR_TOLERANCE_S)
    return q.window


def _track(q: Question, sel: FrameSelection, t: _Table) -> QuestionTruth:
    """Rule ``track`` (module docstring): the question's object over the witnessing selected
    frames of the window that see it, against every witnessing frame of the window that sees it;
    an instant quantity needs a seen sampled frame at each anchor (``track_instant_unbracketed``)."""
    oid, (ts, te) = q.objects[0], track_span(q, t)
    col, need, unit = t.col[oid], q.type.window_frames, TRACK_UNITS[q.type.motion]
    seen_sel = t.seen_in(sel.witnesses, col)
    frames = frames_in_window(seen_sel, ts, te, t.fps)
    every = frames_in_window(t.seen_in(t.every_witness, col), ts, te, t.fps)
    value, why = _track_over(q, frames, t)
    value_all = _track_over(q, every, t)[0]
    fields = {"track_frames": frames, "track_value": value, "track_unit": unit, "track_value_all": value_all}
    where = f"object {oid} seen in {len(frames)} sampled frame(s) of the window [{ts:g}, {te:g}] s, needs {need}"
    unseen = () if seen_sel else (oid,)
    base = QuestionTruth(q, sel, None, UNANSWERABLE, REASON_TRACK_UNDERSAMPLED, unseen, tuple(seen_sel),
                         track=fields, note=where)
    if len(frames) < need:
        return base
    if value is None:
        reason = REASON_TRACK_UNBRACKETED if q.type.motion in motion.ANCHORS else REASON_TRACK_UNDEFINED
        return replace(base, reason=reason, note=f"{where}; {why}")
    note = f"{where}; {motion.heading(value)[0] + ' at ' if unit == 'deg' else ''}{value:.4g} {unit}".rstrip()
    unsupported = (f"; every frame: {'no value' if value_all is None else f'{value_all:.4g} {unit}'.rstrip()}, "
                   f"answer {q.ground_truth!r} not supported")
    return _value_verdict(base, q, value, value_all, note, unsupported)


def _value_verdict(base: QuestionTruth, q: Question, value: float, value_all: float | None, note: str,
                   unsupported: str = "") -> QuestionTruth:
    """Rules ``track`` and ``camera``: ``base`` (unanswerable) judged by the value over the sampled
    frames: its option (:func:`track_answer`) none of the options, the original answer (kept), or
    another (changed: ``track_changed`` when the value over every frame gives the original,
    ``track_disagrees_with_scene`` with ``unsupported`` added to the note otherwise)."""
    answer = track_answer(q, value)
    if answer is None:
        return replace(base, reason=REASON_TRACK_NOT_IN_OPTIONS, note=note)
    if same_answer(q, answer):
        return replace(base, ground_truth=q.ground_truth, status=KEPT, reason=REASON_TRACK_SUPPORTED, note=note)
    every_agrees = value_all is not None and same_answer(q, track_answer(q, value_all))
    return replace(base, ground_truth=answer, status=CHANGED, note=note + ("" if every_agrees else unsupported),
                   reason=REASON_TRACK_CHANGED if every_agrees else REASON_TRACK_DISAGREES)


def camera_frames(q: Question, frames: Sequence[int], t: _Table) -> tuple[list[int], str]:
    """The frames a camera question's value is measured over: the frames of ``frames`` (witnessing
    frames, sorted) inside the window, from the first (at most the instant tolerance after its start)
    to the last (at most the tolerance before its end): the tolerance applied inward
    (vistest.budget.windows.window_ends); ([], why in words) when an end has none."""
    ends = window_ends(frames, q.window[0], q.window[1], t.fps, t.instant_tolerance_s)
    return (list(ends.inside), "") if ends.served else ([], ends.why)


def _camera_value(q: Question, frames: Sequence[int], t: _Table) -> tuple[float | None, list[int], str]:
    used, why = camera_frames(q, frames, t)
    if not used:
        return None, [], why
    try:
        return motion.camera_quantity(q.type.motion, t.scene, used), used, ""
    except motion.MotionError as e:
        return None, used, str(e)


def _camera(q: Question, sel: FrameSelection, t: _Table) -> QuestionTruth:
    """Rule ``camera`` (the camera's own motion, vistest.motion.CAMERA_QUANTITIES): the value over
    the witnessing selected frames inside the window, the first within the instant tolerance after
    its start and the last within it before its end (:func:`camera_frames`: the tolerance applied
    inward, so the quantity is measured over the window's own time), against the same over every
    witnessing frame; the answer as rule ``track``'s."""
    ts, te = q.window
    unit = TRACK_UNITS[q.type.motion]
    value, frames, why = _camera_value(q, sel.witnesses, t)
    value_all = _camera_value(q, t.every_witness, t)[0]
    fields = {"track_frames": frames, "track_value": value, "track_unit": unit, "track_value_all": value_all}
    base = QuestionTruth(q, sel, None, UNANSWERABLE, REASON_CAMERA_ENDS_UNSAMPLED, (), tuple(frames), track=fields,
                         note=f"window [{ts:g}, {te:g}] s; {why}")
    if not frames:
        return base
    if value is None:
        return replace(base, reason=REASON_TRACK_UNDEFINED)
    note = f"camera over frames {frames[0]}..{frames[-1]} ({len(frames)} sampled): {value:.4g} {unit}"
    return _value_verdict(base, q, value, value_all, note)


def _min_budget(q: Question, sel: FrameSelection, minimum: int) -> QuestionTruth:
    budget = sel.budget if sel.rule_budget is None else sel.rule_budget
    if budget != ALL and int(budget) < minimum:
        return _unanswerable(q, sel, REASON_BUDGET_BELOW_MINIMUM)
    return QuestionTruth(q, sel, q.ground_truth, KEPT, REASON_BUDGET_SUFFICIENT)


def offered_answer(qt: QuestionTruth) -> QuestionTruth:
    """An unanswerable finding turned into the answer the question offers for it, if any
    (module docstring); any other finding as it is."""
    answer = qt.question.unsupported_answer() if qt.status == UNANSWERABLE else None
    if answer is None:
        return qt
    same = str(answer).strip().upper() == str(qt.question.ground_truth).strip().upper()
    return replace(qt, ground_truth=answer, status=KEPT if same else CHANGED, unsupported=True)


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


def _unseen_ids(q: Question, sel: FrameSelection, t: _Table) -> list[str]:
    """The referenced objects (``objects``, or every instance of ``category``) seen in none of
    ``sel``'s frames, in question order."""
    if q.type.rule == RULE_MIN_BUDGET or not sel.witnesses:
        return []
    ids = list(q.objects) if q.objects else [t.ids[c] for _, cols in t.category_cols(q.category) for c in cols]
    sights = t.sightings(sel, [t.col[o] for o in ids])
    return [o for o, s in zip(ids, sights) if not s]


def _explain(qt: QuestionTruth, t: _Table, min_budget_room_route: int) -> QuestionTruth:
    """``qt`` with ``reason_text`` and ``unseen_detail`` (module docstring)."""
    sel = qt.selection
    detail = tuple(t.unseen_detail(sel, oid) for oid in _unseen_ids(qt.question, sel, t))
    words = REASON_WORDS[qt.reason]
    if qt.reason in (REASON_COUNT_SUPPORTED, REASON_OBJECTS_SEEN):
        words += f" (rule: {t.rule.text})"
    elif qt.reason in (REASON_BUDGET_SUFFICIENT, REASON_BUDGET_BELOW_MINIMUM):
        b = sel.budget if sel.rule_budget is None else sel.rule_budget
        words += f" ({budget_label(b)} frames; minimum {min_budget_room_route})"
    elif qt.reason == REASON_NO_VALID_FRAMES:
        words += f" ({len(set(sel.frame_indices))} frames selected)"
    elif qt.reason in (REASON_WINDOW_SAMPLED, REASON_WINDOW_UNDERSAMPLED):
        words += (f" ({len(qt.evidence_frames)} witnessing frames in [{qt.question.window[0]:g}, "
                  f"{qt.question.window[1]:g}] s; needs {qt.question.type.window_frames})")
    elif qt.reason in (REASON_INSTANT_SAMPLED, REASON_INSTANT_UNSAMPLED):
        words += f" ({qt.question.instant:g} s; tolerance {t.instant_tolerance_s:g} s)"
    if qt.note:
        words += f" ({qt.note})"
    if detail:
        words += "; counts unseen: " + "; ".join(d["text"] for d in detail)
    return replace(qt, reason_text=words, unseen_detail=detail)


def question_truth(q: Question, sel: FrameSelection, table: _Table, min_budget_room_route: int,
                   bound: _Table | None = None) -> QuestionTruth:
    """Apply the question type's rule (module docstring) to one selection; an unanswerable
    finding becomes the answer the question offers for it (:func:`offered_answer`). The row says
    why in words (:func:`_explain`); with ``bound`` (the table with occlusion ignored,
    :meth:`_Table.bound`) it also carries the finding without occlusion (``without_occlusion``)."""
    qt = _explain(offered_answer(_rule_truth(q, sel, table, min_budget_room_route)), table, min_budget_room_route)
    if table.unknown.any():
        qt = _unknown_truth(qt, table)
    qt = replace(qt, temporal=temporal_fields(q, sel, table.fps, table.instant_tolerance_s))
    if bound is not None:
        qt = replace(qt, without_occlusion=offered_answer(_rule_truth(q, sel, bound, min_budget_room_route)))
    return qt


def _subject_cols(q: Question, t: _Table) -> list[tuple[str, list[int]]]:
    """The question's subjects and their columns: each object of ``objects`` (one column), each
    category label (every instance)."""
    return [(o, [t.col[o]]) for o in q.objects] + t.category_cols(q.category)


def _undetermined(q: Question, sel: FrameSelection, t: _Table) -> tuple[list[int], list[str]]:
    """(selected frames, objects) on which ``q``'s finding turns while the annotation says nothing
    of them (:data:`vistest.tracks2d.UNKNOWN`); empty when the finding holds whatever they show.

    Counting, "every object seen" and presence are monotone in each object: an object seen in a known
    frame is settled (presence: a subject with one instance seen); one unseen in every known frame,
    with unknown frames, is not. Appearance order:
    each subject's first sighting lies between its earliest unknown-or-seen frame and its first
    seen frame; the order is settled when those intervals are each a single frame, or disjoint.
    Rules that read no object (room size, route planning, windows, the camera) never turn on one."""
    frames = counted_frames(q, sel, t) if q.type.rule == RULE_COUNTING else sel.witnesses
    if q.type.rule not in (RULE_COUNTING, RULE_OBJECTS, RULE_APPEARANCE, RULE_PRESENCE) or not frames:
        return [], []
    open_frames: set[int] = set()
    open_objects: list[str] = []
    spans: list[tuple[int, float]] = []
    fr = np.asarray(frames, np.int64)
    rows = np.array([t.row[f] for f in frames], np.int64)
    for _, cols in _subject_cols(q, t):
        lo, hi = float("inf"), float("inf")
        pending: list[tuple[str, list[int]]] = []
        for c in cols:
            seen, unknown = fr[t.seen[rows, c]], fr[t.unknown[rows, c]]
            first = int(seen[0]) if len(seen) else float("inf")
            hi = min(hi, first)
            lo = min(lo, first, int(unknown[0]) if len(unknown) else float("inf"))
            early = unknown[unknown < first] if q.type.rule == RULE_APPEARANCE else \
                (unknown if not len(seen) else unknown[:0])
            if len(early):
                pending.append((t.ids[c], [int(f) for f in early]))
        spans.append((lo, hi))
        if q.type.rule == RULE_PRESENCE and hi < float("inf"):
            continue  # presence: one instance seen settles the subject
        if q.type.rule != RULE_APPEARANCE:
            for oid, fs in pending:
                open_objects.append(oid)
                open_frames.update(fs)
        elif pending and lo != hi:
            for oid, fs in pending:
                open_objects.append(oid)
                open_frames.update(fs)
    if q.type.rule == RULE_APPEARANCE and open_objects:
        ordered = sorted(spans)
        if all(a[1] < b[0] for a, b in zip(ordered, ordered[1:])) and all(hi < float("inf") for _, hi in spans):
            return [], []  # every subject seen, and no interval can cross another: the order holds
    return sorted(open_frames), open_objects


def _settled_either_way(qt: QuestionTruth, t: _Table) -> bool:
    """Whether ``qt`` (unknown cells counted unseen) is also the finding with every unknown cell counted
    seen. Counting, "every object seen" and presence are monotone in each object's sightings, so the two
    extremes agreeing settles every case between them (another subject unseen in every known frame
    already decides the row). Appearance order is not monotone: only a subject unseen at both extremes
    (unanswerable for it) settles it."""
    rule = qt.question.type.rule
    if rule not in (RULE_COUNTING, RULE_OBJECTS, RULE_PRESENCE, RULE_APPEARANCE):
        return False
    other = offered_answer(_rule_truth(qt.question, qt.selection, t.unknown_seen(), 0))
    same = (other.status, other.ground_truth) == (qt.status, qt.ground_truth)
    if rule == RULE_APPEARANCE:
        return same and qt.status == UNANSWERABLE and other.reason == qt.reason in (REASON_OBJECT_UNSEEN,
                                                                                   REASON_CATEGORY_UNSEEN)
    return same


def _unknown_truth(qt: QuestionTruth, t: _Table) -> QuestionTruth:
    """``qt``, or the ``unknown`` finding when it turns on frames the annotation says nothing of
    (:func:`_undetermined`): ground truth None, the frames and objects named, and the finding those
    frames would give if the objects were unseen there kept as ``status_if_unknown_unseen`` /
    ``ground_truth_if_unknown_unseen`` (module docstring)."""
    q, sel = qt.question, qt.selection
    frames, objects = _undetermined(q, sel, t)
    if not frames or _settled_either_way(qt, t):
        return qt
    names = ", ".join(f"{t.labels[o]} {o}" for o in objects[:6]) + (" ..." if len(objects) > 6 else "")
    shown = ", ".join(str(f) for f in frames[:8]) + (" ..." if len(frames) > 8 else "")
    text = (f"{REASON_WORDS[REASON_UNKNOWN_FRAMES]}: {names} in selected frame(s) {shown} (outside every "
            f"interpolation gap, or entering or leaving between two annotated frames: docs/tracks2d.md); if unseen "
            f"there: {qt.status}, {qt.ground_truth!r} ({qt.reason})")
    fields = {"unknown_frames": frames, "unknown_objects": objects, "status_if_unknown_unseen": qt.status,
              "ground_truth_if_unknown_unseen": qt.ground_truth, "reason_if_unknown_unseen": qt.reason}
    return replace(qt, ground_truth=None, status=UNKNOWN, reason=REASON_UNKNOWN_FRAMES, reason_text=text,
                   unsupported=False, unknown=fields)


def _rule_truth(q: Question, sel: FrameSelection, table: _Table, min_budget_room_route: int) -> QuestionTruth:
    rule = q.type.rule
    if table.is_2d and q.type.needs_3d:
        return _unanswerable(q, sel, REASON_NEEDS_3D)
    if not sel.witnesses:
        qt = _unanswerable(q, sel, REASON_NO_VALID_FRAMES)
        return replace(qt, track=_track(q, sel, table).track) if rule == RULE_TRACK else qt
    if rule == RULE_COUNTING:
        return _counting(q, sel, table)
    if rule == RULE_OBJECTS:
        return _objects(q, sel, table)
    if rule == RULE_APPEARANCE:
        return _appearance(q, sel, table)
    if rule == RULE_PRESENCE:
        return _presence(q, sel, table)
    if rule == RULE_MIN_BUDGET:
        return _min_budget(q, sel, min_budget_room_route)
    if rule == RULE_WINDOW:
        return _window(q, sel, table)
    if rule == RULE_TRACK:
        return _track(q, sel, table)
    if rule == RULE_CAMERA:
        return _camera(q, sel, table)
    raise AssertionError(f"no rule for {rule!r}")


def _check_questions(scene: Scene, table: _Table, questions: Sequence[Question]) -> None:
    labels = {o.label for o in scene.objects}
    for q in questions:
        if q.scene_id != scene.scene_id:
            raise InputError(f"{q.where}: scene_id: expected {scene.scene_id!r} (the scene given), got {q.scene_id!r}")
        for i, oid in enumerate(q.objects):
            if oid not in table.col:
                raise InputError(f"{q.where}: objects[{i}]: unknown object id {oid!r} in scene {scene.scene_id!r}")
        for lab in q.category:
            if lab not in labels:
                raise InputError(f"{q.where}: category: {lab!r} is absent from scene {scene.scene_id!r}")
        if q.type.rule in (RULE_TRACK, RULE_CAMERA):
            _check_track_options(q)
        if q.type.rule == RULE_PRESENCE:
            if not q.objects and not q.category:
                raise InputError(f"{q.where}: objects: a presence question names its objects or a category")
            if None in presence_letters(q):
                raise InputError(f"{q.where}: options: a presence question offers \"yes\" and \"no\" "
                                 f"(\"A. yes\", \"B. no\"), got {list(q.options or ())}")
        if q.type.rule == RULE_APPEARANCE and q.objects and not isinstance(q.ground_truth, list):
            labs = [table.labels[o].lower() for o in q.objects]
            if len(set(labs)) != len(labs):
                raise InputError(f"{q.where}: objects: appearance order by options needs distinct labels, got {labs}")


def _check_track_options(q: Question) -> None:
    """A dynamic question's options (but "None of these" and "Cannot be determined from the video")
    must each start with a number, or for a heading be one of vistest.motion.HEADINGS, so that a
    recomputed value maps to an option (:func:`track_answer`)."""
    for i, opt in enumerate(q.options or ()):
        text = option_letter(opt)[1]
        if is_special_option(opt):
            continue
        if q.type.motion == motion.HEADING and normalize_text(text) not in motion.HEADINGS:
            raise InputError(f"{q.where}: options[{i}]: expected a heading ({', '.join(motion.HEADINGS)}) after the "
                             f"letter, got {opt!r}")
        if q.type.motion != motion.HEADING and option_number(text) is None:
            raise InputError(f"{q.where}: options[{i}]: expected a number after the letter (\"A. 1.25 m\"), "
                             f"got {opt!r}")


def _rule_table(scene: Scene, visibility: Visibility, questions: Sequence[Question], rule: SeenRule,
                min_budget_room_route: int, instant_tolerance_s: float = DEFAULT_INSTANT_TOLERANCE_S) -> _Table:
    """The visibility indexed for the rules, after checking the rule parameters and the questions."""
    if (isinstance(min_budget_room_route, bool) or not isinstance(min_budget_room_route, int)
            or min_budget_room_route < 1):
        raise InputError(f"min_budget_room_route: expected a positive integer, got {min_budget_room_route!r}")
    if isinstance(instant_tolerance_s, bool) or not isinstance(instant_tolerance_s, (int, float)) or not (
            instant_tolerance_s >= 0):
        raise InputError(f"instant_tolerance_s: expected seconds >= 0, got {instant_tolerance_s!r}")
    table = _Table(scene, visibility, rule)
    table.instant_tolerance_s = float(instant_tolerance_s)
    _check_questions(scene, table, questions)
    return table


def budget_truth(scene: Scene, visibility: Visibility, questions: Sequence[Question],
                 budgets: Sequence[BudgetValue] = DEFAULT_BUDGETS, profile: str = DEFAULT_PROFILE,
                 seen_threshold: float | SeenRule = DEFAULT_SEEN_THRESHOLD,
                 min_budget_room_route: int = DEFAULT_MIN_BUDGET_ROOM_ROUTE,
                 num_frames: int | None = None, profile_options: Mapping[str, Any] | None = None,
                 instant_tolerance_s: float = DEFAULT_INSTANT_TOLERANCE_S) -> BudgetTruth:
    """GT(frames) for every question under every budget.

    ``scene``/``visibility``: the scene and its frames x objects table (frames matched by
    ``visibility.frame_index``, objects by ``visibility.object_ids``). ``budgets``: positive
    ints and/or ``"all"``. ``profile``: a sampler profile (vistest.budget.sampling.PROFILES),
    called with ``num_frames`` (default ``scene.num_frames``: last frame index + 1, the
    decoded frames of the video) and ``scene.fps``, plus ``profile_options``.
    ``seen_threshold``: the seen rule (vistest.budget.seen.SeenRule), or a number: the visible
    fraction of the image area an object must exceed to be seen in a frame (ReVSI's rule, the
    default 0.05). ``min_budget_room_route``: smallest budget at which room size and
    route planning are answerable. ``instant_tolerance_s``: seconds between an instant (``time``)
    and the nearest selected frame that still serve it (vistest.budget.windows). Raises InputError
    (naming the scene, visibility or questions file, the field and the expectation) on
    inconsistent inputs.
    """
    bs: list[BudgetValue] = []
    for b in budgets:
        pb = parse_budget(b, "budgets")
        if pb in bs:
            raise InputError(f"budgets: budget {pb!r} given twice")
        bs.append(pb)
    n = scene.num_frames if num_frames is None else num_frames
    opts = dict(profile_options or {})
    check_options(profile, opts)
    rule = seen_rule(seen_threshold, where="seen_threshold")
    table = _rule_table(scene, visibility, questions, rule, min_budget_room_route, instant_tolerance_s)
    bound = _bound(table, visibility)
    selections = []
    for b in bs:
        try:
            selections.append(table.select(profile, b, n, scene.fps, opts))
        except InputError as e:  # the profile's arguments are valid: the scene's frames and fps are not
            raise InputError(f"{scene.source}: frames: profile {profile!r} cannot sample budget {b} from "
                             f"{n} frames at {scene.fps:g} fps: {e}") from None
    selections = tuple(selections)
    items = tuple(question_truth(q, sel, table, min_budget_room_route, bound) for sel in selections for q in questions)
    return BudgetTruth(scene.scene_id, profile, n, rule.threshold, min_budget_room_route, selections, items, rule)


def _bound(table: _Table, vis: Visibility) -> _Table | None:
    """The table with occlusion ignored, where occlusion can matter (``params["occlusion"]`` is
    not ``none``: with it, ``visible`` is ``projected``)."""
    return None if vis.params.get("occlusion") == "none" else table.bound()


def evaluator_budget_frames(evaluator: Evaluator, budget_frames: Sequence[int], budget: BudgetValue,
                            budget_fps: float) -> tuple[int, ...] | None:
    """The source frames ``evaluator`` takes from the budget video of ``budget``, which holds the
    source frames ``budget_frames`` in order at ``budget_fps`` frames/s (vistest.videos.plan):
    its client's function of that video (:meth:`Evaluator.takes`) mapped back to the source;
    None when it takes every frame of the video once, in order (the budget's own ground truth
    holds for it). InputError where the client fails on that video. E.g. STI-Bench's client
    (``MAX_FRAMES = 30``, MINT-SJTU/STI-Bench ``opensource_test.py`` line 35) takes 30 of a 64-frame
    video."""
    idx = [int(i) for i in evaluator.takes(len(budget_frames), budget_fps, budget)]
    if idx == list(range(len(budget_frames))):
        return None
    return tuple(int(budget_frames[i]) for i in idx)


def evaluator_truth(scene: Scene, visibility: Visibility, questions: Sequence[Question], evaluator: Evaluator,
                    seen_threshold: float | SeenRule = DEFAULT_SEEN_THRESHOLD,
                    min_budget_room_route: int = DEFAULT_MIN_BUDGET_ROOM_ROUTE,
                    num_frames: int | None = None,
                    instant_tolerance_s: float = DEFAULT_INSTANT_TOLERANCE_S,
                    budgets: Sequence[BudgetValue] = (ALL,), profile: str = DEFAULT_PROFILE,
                    profile_options: Mapping[str, Any] | None = None, budget_fps: float = 1.0,
                    failures: list | None = None) -> BudgetTruth:
    """GT(frames) of one evaluator configuration, over the source frames it takes.

    ``all``: every question over the frames ``evaluator`` takes from the full video
    (``num_frames`` decoded frames, default ``scene.num_frames``, at ``scene.fps``: what it takes
    of ``all_frame``, which holds every source frame at the source rate). A numeric budget b of
    ``budgets``: over the frames it takes from b's budget video (``profile`` with
    ``profile_options`` at b, written at ``budget_fps``; :func:`evaluator_budget_frames`), for the
    budgets where that is not every frame of the video once (the others are left out: the
    budget's own ground truth is the evaluator's; with ``failures`` a list, a budget video the client
    fails on is appended there as (budget, message) and left out, else raises). Room size and route planning compare the
    distinct frames it takes with ``min_budget_room_route`` (every frame counts as the budget).
    Each record names the evaluator and its configuration (:meth:`QuestionTruth.to_row`)."""
    rule = seen_rule(seen_threshold, where="seen_threshold")
    table = _rule_table(scene, visibility, questions, rule, min_budget_room_route, instant_tolerance_s)
    bound = _bound(table, visibility)
    n = scene.num_frames if num_frames is None else num_frames
    opts = dict(profile_options or {})
    sels = []
    for b in (parse_budget(x, "budgets") for x in budgets):
        try:
            if b == ALL:
                idx = evaluator.takes(n, scene.fps, ALL)
                distinct = len(set(idx.tolist()))
                rule_b = ALL if distinct == n else distinct
                sels.append(table.selection(evaluator.profile, ALL, idx, evaluator.name, rule_b))
                continue
            src = select_frames(profile, n, b, fps=scene.fps, **opts)
            taken = evaluator_budget_frames(evaluator, src, b, budget_fps)
        except InputError as e:
            what = (f"the {n}-frame video at {scene.fps:g} fps" if b == ALL else
                    f"the {budget_label(b)}-frame budget video at {budget_fps:g} fps")
            if b != ALL and failures is not None:
                failures.append((b, f"evaluator {evaluator.name!r} cannot sample {what}: {e}"))
                continue
            raise InputError(f"{scene.source}: frames: evaluator {evaluator.name!r} cannot sample {what}: "
                             f"{e}") from None
        if taken is not None:
            distinct = len(set(taken))
            sels.append(table.selection(profile, b, taken, evaluator.name, b if distinct >= b else distinct))
    config = evaluator.to_json()
    items = tuple(replace(question_truth(q, sel, table, min_budget_room_route, bound), evaluator_config=config)
                  for sel in sels for q in questions)
    return BudgetTruth(scene.scene_id, evaluator.profile, n, rule.threshold, min_budget_room_route, tuple(sels),
                       items, rule)


# ---------------------------------------------------------------------------------------
# outputs
# ---------------------------------------------------------------------------------------
def budget_jsonl(truth: BudgetTruth, budget: BudgetValue) -> str:
    """The JSONL text of one budget: one row per question, in question order (:meth:`BudgetTruth.rows`)."""
    return "".join(json.dumps(row.to_json(), ensure_ascii=False) + "\n" for row in truth.rows(budget))


def write_budget_files(truth: BudgetTruth, outdir: str | os.PathLike) -> list[Path]:
    """Write ``OUTDIR/{budget}_frame.jsonl`` for every budget, each atomically
    (temporary file in OUTDIR + ``os.replace``). Returns the paths written."""
    outdir = Path(outdir)
    paths = []
    for b in truth.budgets:
        p = outdir / budget_file_name(b)
        write_atomic(p, budget_jsonl(truth, b))
        paths.append(p)
    return paths


def summary_table(truth: BudgetTruth) -> str:
    """Per-budget counts of kept / changed / unanswerable (and unknown, where a row is) by question type, as text.

    One block per budget: a row per question type (sorted), then a total row; the header
    line of a block gives the frames selected and how many of them cannot witness.
    """
    head = (f"scene {truth.scene_id}  profile {truth.profile}  N={truth.num_frames}  "
            f"seen: {truth.seen_rule.array} {truth.seen_rule.text}")
    types = sorted({it.question.question_type for it in truth.items})
    w = max([len("question_type")] + [len(t) for t in types] + [len("total")])
    unknown = any(it.status == UNKNOWN for it in truth.items)  # a column of its own only where some row is (2D)

    def cells(c) -> str:
        return f"{c[KEPT]:>5}  {c[CHANGED]:>7}  {c[UNANSWERABLE]:>12}" + (f"  {c[UNKNOWN]:>7}" if unknown else "")

    lines = [head, f"{'budget':>6}  {'question_type':<{w}}  {'kept':>5}  {'changed':>7}  {'unanswerable':>12}"
             + (f"  {'unknown':>7}" if unknown else "")]
    for sel in truth.selections:
        counts = truth.counts(sel.budget)
        bad = len(sel.invalid_frames) + len(sel.frames_without_visibility)
        lines.append(f"{sel.label:>6}  ({len(sel.frame_indices)} frames selected, {bad} cannot witness)")
        tot = Counter()
        for t in types:
            c = counts.get(t, dict.fromkeys(STATUSES, 0))
            tot.update(c)
            lines.append(f"{'':>6}  {t:<{w}}  {cells(c)}")
        lines.append(f"{'':>6}  {'total':<{w}}  {cells(tot)}")
    sensitive = truth.occlusion_sensitive
    if sensitive:
        lines.append(f"warning: {len(sensitive)} row(s) of {len({it.question.id for it in sensitive})} question(s) "
                     f"change status or answer when occlusion is ignored (occlusion_sensitive in the rows): "
                     f"their answerability depends on the occlusion mode")
    return "\n".join(lines) + "\n"
