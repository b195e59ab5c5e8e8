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

Rules (each a module of vistest.budget.rules, picked by the table vistest.budget.rules.RULES; each
threshold a field of vistest.budget.config.TruthConfig, which every function here takes whole):

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
  :func:`vistest.budget.rules.base.counted_frames`, vistest.budget.windows.frames_in_span: the window's
  witnessing selected frames, those within the instant tolerance of the instant): the frames its dummies remove the
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
  A pose change (:data:`vistest.budget.rules.window.POSE_CHANGE_TYPES`: Pose Estimation, Ego-Centric Orientation) with a
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
  (at most the tolerance before its end), never a frame outside the window (vistest.budget.rules.camera).
* Tracks (the dynamic types, rule ``track``; docs/questions-format.md "Dynamic questions"): the
  *seen window frames* are the witnessing selected frames inside the window in which the
  question's object (``objects[0]``) is seen (``track_frames``). Fewer than the type's
  ``window_frames`` (2; acceleration 3): unanswerable (``track_undersampled``). Otherwise the
  quantity (vistest.motion: metres, m/s, m/s^2, or the heading angle in degrees in the frame of
  the camera at the window's first decoded frame) is recomputed over them (``track_value``) and
  gives an option (:func:`vistest.budget.rules.track.track_answer`: the nearest number; the heading's sector). The
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

import json
import os
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .. import motion
from ..answers import is_special_option, normalize_text
from ..atomic import write_atomic
from ..budgets import ALL, BudgetValue, budget_label, parse_budget
from ..errors import InputError
from ..layout import budget_file_name
from ..questions import (RULE_APPEARANCE, RULE_CAMERA, RULE_COUNTING, RULE_MIN_BUDGET, RULE_OBJECTS, RULE_PRESENCE,
                         RULE_TRACK, Question, option_letter, option_number)
from ..scene import Scene
from ..visibility.table import Visibility
from .config import TruthConfig
from .evaluators import Evaluator
from .rows import CHANGED, KEPT, STATUSES, UNANSWERABLE, UNKNOWN, TruthRow
from .rules import rule_truth
from .rules.base import (REASON_BUDGET_BELOW_MINIMUM, REASON_BUDGET_SUFFICIENT, REASON_CATEGORY_UNSEEN,
                         REASON_COUNT_SUPPORTED, REASON_INSTANT_SAMPLED, REASON_INSTANT_UNSAMPLED,
                         REASON_NO_VALID_FRAMES, REASON_OBJECT_UNSEEN, REASON_OBJECTS_SEEN, REASON_UNKNOWN_FRAMES,
                         REASON_WINDOW_SAMPLED, REASON_WINDOW_UNDERSAMPLED, REASON_WORDS, FrameSelection,
                         QuestionTruth, RuleTable, counted_frames, subject_cols)
from .rules.presence import presence_letters
from .sampling import select_frames
from .seen import SeenRule
from .windows import frames_in_window, nearest_frame


@dataclass(frozen=True)
class BudgetTruth:
    """Every question under every budget, for one scene and sampler profile."""

    scene_id: str
    profile: str
    num_frames: int
    selections: tuple[FrameSelection, ...]
    items: tuple[QuestionTruth, ...]
    config: TruthConfig = TruthConfig()  # the settings the rows were computed with (checked)

    @property
    def seen_rule(self) -> SeenRule:
        """The seen rule of :attr:`config`."""
        return self.config.rule

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
        return item.to_row(self.config)

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



def offered_answer(qt: QuestionTruth) -> QuestionTruth:
    """An unanswerable finding turned into the answer the question offers for it, if any
    (module docstring); any other finding as it is."""
    answer = qt.question.unsupported_answer() if qt.status == UNANSWERABLE else None
    if answer is None:
        return qt
    same = str(answer).strip().upper() == str(qt.question.ground_truth).strip().upper()
    return replace(qt, ground_truth=answer, status=KEPT if same else CHANGED, unsupported=True)



def _unseen_ids(q: Question, sel: FrameSelection, t: RuleTable) -> list[str]:
    """The referenced objects (``objects``, or every instance of ``category``) seen in none of
    ``sel``'s frames, in question order."""
    if q.type.rule == RULE_MIN_BUDGET or not sel.witnesses:
        return []
    ids = list(q.objects) if q.objects else [t.ids[c] for _, cols in t.category_cols(q.category) for c in cols]
    sights = t.sightings(sel, [t.col[o] for o in ids])
    return [o for o, s in zip(ids, sights) if not s]


def _explain(qt: QuestionTruth, t: RuleTable) -> QuestionTruth:
    """``qt`` with ``reason_text`` and ``unseen_detail`` (module docstring)."""
    sel = qt.selection
    detail = tuple(t.unseen_detail(sel, oid) for oid in _unseen_ids(qt.question, sel, t))
    words = REASON_WORDS[qt.reason]
    if qt.reason in (REASON_COUNT_SUPPORTED, REASON_OBJECTS_SEEN):
        words += f" (rule: {t.rule.text})"
    elif qt.reason in (REASON_BUDGET_SUFFICIENT, REASON_BUDGET_BELOW_MINIMUM):
        b = sel.budget if sel.rule_budget is None else sel.rule_budget
        words += f" ({budget_label(b)} frames; minimum {t.config.min_budget_room_route})"
    elif qt.reason == REASON_NO_VALID_FRAMES:
        words += f" ({len(set(sel.frame_indices))} frames selected)"
    elif qt.reason in (REASON_WINDOW_SAMPLED, REASON_WINDOW_UNDERSAMPLED):
        words += (f" ({len(qt.evidence_frames)} witnessing frames in [{qt.question.window[0]:g}, "
                  f"{qt.question.window[1]:g}] s; needs {qt.question.type.window_frames})")
    elif qt.reason in (REASON_INSTANT_SAMPLED, REASON_INSTANT_UNSAMPLED):
        words += f" ({qt.question.instant:g} s; tolerance {t.config.instant_tolerance_s:g} s)"
    if qt.note:
        words += f" ({qt.note})"
    if detail:
        words += "; counts unseen: " + "; ".join(d["text"] for d in detail)
    return replace(qt, reason_text=words, unseen_detail=detail)


def question_truth(q: Question, sel: FrameSelection, table: RuleTable, bound: RuleTable | None = None
                   ) -> QuestionTruth:
    """Apply the question type's rule (module docstring) to one selection; an unanswerable
    finding becomes the answer the question offers for it (:func:`offered_answer`). The row says
    why in words (:func:`_explain`); with ``bound`` (the table with occlusion ignored,
    :meth:`RuleTable.bound`) it also carries the finding without occlusion (``without_occlusion``)."""
    qt = _explain(offered_answer(rule_truth(q, sel, table)), table)
    if table.unknown.any():
        qt = _unknown_truth(qt, table)
    qt = replace(qt, temporal=temporal_fields(q, sel, table.fps, table.config.instant_tolerance_s))
    if bound is not None:
        qt = replace(qt, without_occlusion=offered_answer(rule_truth(q, sel, bound)))
    return qt



def _undetermined(q: Question, sel: FrameSelection, t: RuleTable) -> tuple[list[int], list[str]]:
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
    for _, cols in subject_cols(q, t):
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


def _settled_either_way(qt: QuestionTruth, t: RuleTable) -> bool:
    """Whether ``qt`` (unknown cells counted unseen) is also the finding with every unknown cell counted
    seen. Counting, "every object seen" and presence are monotone in each object's sightings, so the two
    extremes agreeing settles every case between them (another subject unseen in every known frame
    already decides the row). Appearance order is not monotone: only a subject unseen at both extremes
    (unanswerable for it) settles it."""
    rule = qt.question.type.rule
    if rule not in (RULE_COUNTING, RULE_OBJECTS, RULE_PRESENCE, RULE_APPEARANCE):
        return False
    other = offered_answer(rule_truth(qt.question, qt.selection, t.unknown_seen()))
    same = (other.status, other.ground_truth) == (qt.status, qt.ground_truth)
    if rule == RULE_APPEARANCE:
        return same and qt.status == UNANSWERABLE and other.reason == qt.reason in (REASON_OBJECT_UNSEEN,
                                                                                   REASON_CATEGORY_UNSEEN)
    return same


def _unknown_truth(qt: QuestionTruth, t: RuleTable) -> QuestionTruth:
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



def _check_questions(scene: Scene, table: RuleTable, questions: Sequence[Question]) -> None:
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
    recomputed value maps to an option (:func:`vistest.budget.rules.track.track_answer`)."""
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


def _rule_table(scene: Scene, visibility: Visibility, questions: Sequence[Question], config: TruthConfig
                ) -> RuleTable:
    """The visibility indexed for the rules with ``config`` (checked: :meth:`TruthConfig.checked`),
    after checking the questions."""
    table = RuleTable(scene, visibility, config.checked())
    _check_questions(scene, table, questions)
    return table


def budget_truth(scene: Scene, visibility: Visibility, questions: Sequence[Question],
                 config: TruthConfig = TruthConfig(), num_frames: int | None = None) -> BudgetTruth:
    """GT(frames) for every question under every budget of ``config``.

    ``scene``/``visibility``: the scene and its frames x objects table (frames matched by
    ``visibility.frame_index``, objects by ``visibility.object_ids``). ``config``: the stage's
    settings (vistest.budget.config.TruthConfig, docs/truth.md): its budgets (positive ints and/or
    ``"all"``), selected by its sampler profile (vistest.budget.sampling.PROFILES) called with
    ``num_frames`` (default ``scene.num_frames``: last frame index + 1, the decoded frames of the
    video), ``scene.fps`` and its profile options; its seen rule, minimum budget of room size and
    route planning and instant tolerance, as the rules read them (vistest.budget.rules). Raises
    InputError (naming the scene, visibility or questions file, the field and the expectation) on
    inconsistent inputs.
    """
    table = _rule_table(scene, visibility, questions, config)
    config = table.config
    n = scene.num_frames if num_frames is None else num_frames
    bound = _bound(table, visibility)
    selections = []
    for b in config.budgets:
        try:
            selections.append(table.select(config.profile, b, n, scene.fps, dict(config.profile_options or {})))
        except InputError as e:  # the profile's arguments are valid: the scene's frames and fps are not
            raise InputError(f"{scene.source}: frames: profile {config.profile!r} cannot sample budget {b} from "
                             f"{n} frames at {scene.fps:g} fps: {e}") from None
    selections = tuple(selections)
    items = tuple(question_truth(q, sel, table, bound) for sel in selections for q in questions)
    return BudgetTruth(scene.scene_id, config.profile, n, selections, items, config)


def _bound(table: RuleTable, vis: Visibility) -> RuleTable | None:
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
                    config: TruthConfig = TruthConfig(budgets=(ALL,)), num_frames: int | None = None,
                    budget_fps: float = 1.0, failures: list | None = None) -> BudgetTruth:
    """GT(frames) of one evaluator configuration, over the source frames it takes.

    ``config``: the stage's settings (vistest.budget.config.TruthConfig), its budgets read as follows.
    ``all``: every question over the frames ``evaluator`` takes from the full video
    (``num_frames`` decoded frames, default ``scene.num_frames``, at ``scene.fps``: what it takes
    of ``all_frame``, which holds every source frame at the source rate). A numeric budget b: over
    the frames it takes from b's budget video (the config's profile with its options at b, written at
    ``budget_fps``; :func:`evaluator_budget_frames`), for the
    budgets where that is not every frame of the video once (the others are left out: the
    budget's own ground truth is the evaluator's; with ``failures`` a list, a budget video the client
    fails on is appended there as (budget, message) and left out, else raises). Room size and route planning compare the
    distinct frames it takes with ``min_budget_room_route`` (every frame counts as the budget).
    Each record names the evaluator and its configuration (:meth:`QuestionTruth.to_row`)."""
    table = _rule_table(scene, visibility, questions, config)
    config = table.config
    bound = _bound(table, visibility)
    n = scene.num_frames if num_frames is None else num_frames
    opts = dict(config.profile_options or {})
    sels = []
    for b in config.budgets:
        try:
            if b == ALL:
                idx = evaluator.takes(n, scene.fps, ALL)
                distinct = len(set(idx.tolist()))
                rule_b = ALL if distinct == n else distinct
                sels.append(table.selection(evaluator.profile, ALL, idx, evaluator.name, rule_b))
                continue
            src = select_frames(config.profile, n, b, fps=scene.fps, **opts)
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
            sels.append(table.selection(config.profile, b, taken, evaluator.name, b if distinct >= b else distinct))
    ev = evaluator.to_json()
    items = tuple(replace(question_truth(q, sel, table, bound), evaluator_config=ev) for sel in sels for q in questions)
    return BudgetTruth(scene.scene_id, evaluator.profile, n, tuple(sels), items, config)


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
