"""Rule ``objects`` (size, distance, direction; docs/truth.md): every referenced object seen in a selected
frame keeps the answer (the geometry does not depend on the frames), one unseen makes it unanswerable."""
from __future__ import annotations

from ...questions import Question
from ..rows import KEPT
from .base import (REASON_NO_OBJECTS, REASON_OBJECT_UNSEEN, REASON_OBJECTS_SEEN, FrameSelection, QuestionTruth,
                   RuleTable, unanswerable)


def objects(q: Question, sel: FrameSelection, t: RuleTable) -> QuestionTruth:
    if not q.objects:  # a 2D type's question naming no object (vistest.questions: 3D types need some)
        return QuestionTruth(q, sel, q.ground_truth, KEPT, REASON_NO_OBJECTS)
    sights = t.sightings(sel, [t.col[o] for o in q.objects])
    unseen = [o for o, s in zip(q.objects, sights) if not s]
    evidence = sorted({f for s in sights for f in s})
    if unseen:
        return unanswerable(q, sel, REASON_OBJECT_UNSEEN, unseen, evidence)
    return QuestionTruth(q, sel, q.ground_truth, KEPT, REASON_OBJECTS_SEEN, (), tuple(evidence))
