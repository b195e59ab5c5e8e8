"""Rule ``appearance`` (appearance order; docs/truth.md): the order of first sightings in the selected
frames."""
from __future__ import annotations

from typing import Any

from ...answers import none_letter, normalize_text
from ...questions import ANSWER_TEXT, Question
from ..rows import CHANGED, KEPT
from .base import (REASON_CATEGORY_UNSEEN, REASON_FIRST_SIGHTING_TIE, REASON_OBJECT_UNSEEN, REASON_ORDER_CHANGED,
                   REASON_ORDER_NOT_IN_OPTIONS, REASON_ORDER_SUPPORTED, FrameSelection, QuestionTruth, RuleTable,
                   unanswerable)


def appearance(q: Question, sel: FrameSelection, t: RuleTable) -> QuestionTruth:
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
        return unanswerable(q, sel, REASON_OBJECT_UNSEEN if not q.category else REASON_CATEGORY_UNSEEN,
                             unseen, sorted(evidence))
    if len(set(first)) < len(first):
        return unanswerable(q, sel, REASON_FIRST_SIGHTING_TIE, (), sorted(evidence))
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
            return unanswerable(q, sel, REASON_ORDER_NOT_IN_OPTIONS, (), sorted(evidence))
        new_gt = letter
        same = letter.strip().upper() == str(q.ground_truth).strip().upper()
    if same:
        return QuestionTruth(q, sel, q.ground_truth, KEPT, REASON_ORDER_SUPPORTED, (), tuple(sorted(evidence)))
    return QuestionTruth(q, sel, new_gt, CHANGED, REASON_ORDER_CHANGED, (), tuple(sorted(evidence)))
