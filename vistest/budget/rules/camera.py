"""Rule ``camera`` (the camera's own motion; docs/truth.md): the quantity over the witnessing selected
frames inside the window, judged as rule ``track``'s value (vistest.budget.rules.track.value_verdict)."""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from ... import motion
from ...questions import Question
from ..rows import UNANSWERABLE
from ..windows import window_ends
from .base import REASON_CAMERA_ENDS_UNSAMPLED, REASON_TRACK_UNDEFINED, FrameSelection, QuestionTruth, RuleTable
from .track import TRACK_UNITS, value_verdict


def camera_frames(q: Question, frames: Sequence[int], t: RuleTable) -> tuple[list[int], str]:
    """The frames a camera question's value is measured over: the frames of ``frames`` (witnessing
    frames, sorted) inside the window, from the first (at most the instant tolerance after its start)
    to the last (at most the tolerance before its end): the tolerance applied inward
    (vistest.budget.windows.window_ends); ([], why in words) when an end has none."""
    ends = window_ends(frames, q.window[0], q.window[1], t.fps, t.config.instant_tolerance_s)
    return (list(ends.inside), "") if ends.served else ([], ends.why)


def camera_value(q: Question, frames: Sequence[int], t: RuleTable) -> tuple[float | None, list[int], str]:
    used, why = camera_frames(q, frames, t)
    if not used:
        return None, [], why
    try:
        return motion.camera_quantity(q.type.motion, t.scene, used), used, ""
    except motion.MotionError as e:
        return None, used, str(e)


def camera(q: Question, sel: FrameSelection, t: RuleTable) -> QuestionTruth:
    """Rule ``camera`` (the camera's own motion, vistest.motion.CAMERA_QUANTITIES): the value over
    the witnessing selected frames inside the window, the first within the instant tolerance after
    its start and the last within it before its end (:func:`camera_frames`: the tolerance applied
    inward, so the quantity is measured over the window's own time), against the same over every
    witnessing frame; the answer as rule ``track``'s."""
    ts, te = q.window
    unit = TRACK_UNITS[q.type.motion]
    value, frames, why = camera_value(q, sel.witnesses, t)
    value_all = camera_value(q, t.every_witness, t)[0]
    fields = {"track_frames": frames, "track_value": value, "track_unit": unit, "track_value_all": value_all}
    base = QuestionTruth(q, sel, None, UNANSWERABLE, REASON_CAMERA_ENDS_UNSAMPLED, (), tuple(frames), track=fields,
                         note=f"window [{ts:g}, {te:g}] s; {why}")
    if not frames:
        return base
    if value is None:
        return replace(base, reason=REASON_TRACK_UNDEFINED)
    note = f"camera over frames {frames[0]}..{frames[-1]} ({len(frames)} sampled): {value:.4g} {unit}"
    return value_verdict(base, q, t, value, value_all, note)
