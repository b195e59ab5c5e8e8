"""Rule ``window`` (the STI-Bench types; docs/truth.md): a time window or an instant decided on the
selected frames inside it alone; a pose change on frames near both ends; an imported instant speed or
acceleration on frames at its anchors."""
from __future__ import annotations

from dataclasses import replace

from ... import motion
from ...questions import STI_SPEED_ACCELERATION, Question, instant_quantity
from ..rows import KEPT
from ..windows import frames_in_window, nearest_frame, window_ends
from .base import (REASON_INSTANT_ANCHOR_UNSAMPLED, REASON_INSTANT_ANCHORS_SAMPLED, REASON_INSTANT_SAMPLED,
                   REASON_INSTANT_UNSAMPLED, REASON_WINDOW_ENDS_SAMPLED, REASON_WINDOW_ENDS_UNSAMPLED,
                   REASON_WINDOW_SAMPLED, REASON_WINDOW_UNDERSAMPLED, FrameSelection, QuestionTruth, RuleTable,
                   unanswerable)

# STI-Bench tasks comparing the camera at the two ends of the window (ReSTI: "Taking the camera pose at t=0 s as the
# identity ..., what is the camera pose at t=15 s?"; "Between ... 0.000000 and 19.696910 seconds, ... heading change")
POSE_CHANGE_TYPES = ("sti_pose_estimation", "sti_ego_centric_orientation")


def window(q: Question, sel: FrameSelection, t: RuleTable) -> QuestionTruth:
    """Rule ``window`` (module docstring) over the witnessing selected frames."""
    if q.instant is not None:
        judged, why = instant_anchors(q, sel, t) if q.question_type == STI_SPEED_ACCELERATION else (None, "")
        if judged is not None:
            return judged
        m = nearest_frame(sel.witnesses, q.instant, t.fps, t.config.instant_tolerance_s)
        qt = (unanswerable(q, sel, REASON_INSTANT_UNSAMPLED) if not m.within else
              QuestionTruth(q, sel, q.ground_truth, KEPT, REASON_INSTANT_SAMPLED, (), (m.frame,)))
        return replace(qt, note=f"{why}: the instant rule") if why else qt
    if q.question_type in POSE_CHANGE_TYPES and q.window[0] < q.window[1]:
        ends = window_ends(sel.witnesses, q.window[0], q.window[1], t.fps, t.config.instant_tolerance_s)
        found = tuple(f for f in (ends.start, ends.end) if f is not None)
        if not ends.served:
            return replace(unanswerable(q, sel, REASON_WINDOW_ENDS_UNSAMPLED, (), tuple(sorted(set(found)))),
                           note=ends.why)
        return QuestionTruth(q, sel, q.ground_truth, KEPT, REASON_WINDOW_ENDS_SAMPLED, (), found,
                             note=f"ends: frames {ends.start} and {ends.end}, inside the window")
    inside = frames_in_window(sel.witnesses, q.window[0], q.window[1], t.fps)
    if len(inside) < q.type.window_frames:
        return unanswerable(q, sel, REASON_WINDOW_UNDERSAMPLED, (), inside)
    return QuestionTruth(q, sel, q.ground_truth, KEPT, REASON_WINDOW_SAMPLED, (), tuple(inside))


def instant_anchors(q: Question, sel: FrameSelection, t: RuleTable) -> tuple[QuestionTruth | None, str]:
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
        return replace(unanswerable(q, sel, REASON_INSTANT_ANCHOR_UNSAMPLED), note=f"{lead}; {e}"), ""
    frames = ", ".join(str(f) for f in anchors)
    return QuestionTruth(q, sel, q.ground_truth, KEPT, REASON_INSTANT_ANCHORS_SAMPLED, (), tuple(anchors),
                         note=f"{lead}: frames {frames}"), ""
