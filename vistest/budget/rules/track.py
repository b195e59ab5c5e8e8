"""Rule ``track`` (the dynamic types; docs/truth.md): the question's quantity recomputed over the sampled
frames of its window that see its object, and the option it gives; :func:`value_verdict` judges the
camera rule's value too (vistest.budget.rules.camera)."""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from ... import motion
from ...answers import NUMBER, none_letter, normalize_text
from ...questions import ANSWER_TEXT, Question, option_letter, option_number
from ..rows import CHANGED, KEPT, UNANSWERABLE
from ..windows import frames_in_window, window_range
from .base import (REASON_TRACK_CHANGED, REASON_TRACK_DISAGREES, REASON_TRACK_NOT_IN_OPTIONS, REASON_TRACK_SUPPORTED,
                   REASON_TRACK_UNBRACKETED, REASON_TRACK_UNDEFINED, REASON_TRACK_UNDERSAMPLED, FrameSelection,
                   QuestionTruth, RuleTable)

TRACK_UNITS = {**motion.UNITS, motion.HEADING: "deg"}  # the unit of track_value per vistest.motion quantity


def track_value(q: Question, frames: Sequence[int], t: RuleTable) -> float:
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


def same_answer(q: Question, answer: Any, open_number_tolerance: float) -> bool:
    """Is ``answer`` (:func:`track_answer`) the question's own? An option: the same letter; an
    open text: the same words (normalised); an open number: within ``open_number_tolerance`` of the
    original, relatively (the config's; by default the strictest MRA threshold, vistest.answers.MRA_THRESHOLDS)."""
    if answer is None:
        return False
    if q.kind == NUMBER:
        gt = float(q.ground_truth)
        return abs(float(answer) - gt) <= open_number_tolerance * abs(gt)
    if q.kind == ANSWER_TEXT:
        return normalize_text(str(answer)) == normalize_text(str(q.ground_truth))
    return str(answer).strip().upper() == str(q.ground_truth).strip().upper()


def track_over(q: Question, frames: Sequence[int], t: RuleTable) -> tuple[float | None, str]:
    """(value, why none): :func:`track_value` over ``frames`` when there are enough of them
    (``q.type.window_frames``), else None with the reason in words."""
    need = q.type.window_frames
    if len(frames) < need:
        return None, f"object seen in {len(frames)} sampled frame(s) of the window, needs {need}"
    try:
        return track_value(q, frames, t), ""
    except motion.MotionError as e:
        return None, str(e)


def track_span(q: Question, t: RuleTable) -> tuple[float, float]:
    """The seconds a dynamic question's frames are taken from: its window, or for an instant
    quantity the span of its anchors widened by the anchor tolerance (vistest.motion)."""
    if q.type.motion in motion.ANCHORS:
        offs = motion.ANCHORS[q.type.motion]
        return (q.instant + offs[0] - motion.ANCHOR_TOLERANCE_S, q.instant + offs[-1] + motion.ANCHOR_TOLERANCE_S)
    return q.window


def track(q: Question, sel: FrameSelection, t: RuleTable) -> QuestionTruth:
    """Rule ``track`` (module docstring): the question's object over the witnessing selected
    frames of the window that see it, against every witnessing frame of the window that sees it;
    an instant quantity needs a seen sampled frame at each anchor (``track_instant_unbracketed``)."""
    oid, (ts, te) = q.objects[0], track_span(q, t)
    col, need, unit = t.col[oid], q.type.window_frames, TRACK_UNITS[q.type.motion]
    seen_sel = t.seen_in(sel.witnesses, col)
    frames = frames_in_window(seen_sel, ts, te, t.fps)
    every = frames_in_window(t.seen_in(t.every_witness, col), ts, te, t.fps)
    value, why = track_over(q, frames, t)
    value_all = track_over(q, every, t)[0]
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
    return value_verdict(base, q, t, value, value_all, note, unsupported)


def value_verdict(base: QuestionTruth, q: Question, t: RuleTable, value: float, value_all: float | None, note: str,
                  unsupported: str = "") -> QuestionTruth:
    """Rules ``track`` and ``camera`` (``t``: the table, with the stage's settings): ``base``
    (unanswerable) judged by the value over the sampled
    frames: its option (:func:`track_answer`) none of the options, the original answer (kept), or
    another (changed: ``track_changed`` when the value over every frame gives the original,
    ``track_disagrees_with_scene`` with ``unsupported`` added to the note otherwise)."""
    answer = track_answer(q, value)
    if answer is None:
        return replace(base, reason=REASON_TRACK_NOT_IN_OPTIONS, note=note)
    tol = t.config.open_number_tolerance
    if same_answer(q, answer, tol):
        return replace(base, ground_truth=q.ground_truth, status=KEPT, reason=REASON_TRACK_SUPPORTED, note=note)
    every_agrees = value_all is not None and same_answer(q, track_answer(q, value_all), tol)
    return replace(base, ground_truth=answer, status=CHANGED, note=note + ("" if every_agrees else unsupported),
                   reason=REASON_TRACK_CHANGED if every_agrees else REASON_TRACK_DISAGREES)
