"""Rule ``counting`` (docs/truth.md): the instances of the category seen in at least one selected frame
(inside the question's time span, :func:`vistest.budget.rules.base.counted_frames`) against the count."""
from __future__ import annotations

from ...questions import Question
from ..rows import CHANGED, KEPT
from .base import (REASON_CATEGORY_UNSEEN, REASON_COUNT_EXCEEDS, REASON_COUNT_REDUCED, REASON_COUNT_SUPPORTED,
                   FrameSelection, QuestionTruth, RuleTable, count_like, counted_frames, unanswerable)


def counting(q: Question, sel: FrameSelection, t: RuleTable) -> QuestionTruth:
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
        return unanswerable(q, sel, REASON_CATEGORY_UNSEEN, unseen_labels)
    if n_seen == original:
        return QuestionTruth(q, sel, q.ground_truth, KEPT, REASON_COUNT_SUPPORTED, tuple(unseen_labels),
                             tuple(evidence))
    reason = (REASON_CATEGORY_UNSEEN if n_seen == 0 else
              REASON_COUNT_REDUCED if n_seen < original else REASON_COUNT_EXCEEDS)
    return QuestionTruth(q, sel, count_like(q.ground_truth, n_seen), CHANGED, reason, tuple(unseen_labels),
                         tuple(evidence))
