"""Rule ``presence`` (``object_presence``; docs/truth.md): "yes" when every subject is seen in a selected
frame, "no" with ``allow_zero``, else unanswerable."""
from __future__ import annotations

from ...answers import normalize_text
from ...questions import Question, option_letter
from ..rows import CHANGED, KEPT
from .base import (REASON_ABSENT, REASON_CATEGORY_UNSEEN, REASON_OBJECT_UNSEEN, REASON_PRESENCE_CHANGED,
                   REASON_PRESENT, FrameSelection, QuestionTruth, RuleTable, subject_cols, unanswerable)


def presence_letters(q: Question) -> tuple[str | None, str | None]:
    """The option letters (or texts, unlettered) of "yes" and "no" of a presence question (None: absent)."""
    found: dict[str, str] = {}
    for opt in q.options or ():
        letter, text = option_letter(opt)
        if normalize_text(text) in ("yes", "no"):
            found.setdefault(normalize_text(text), letter if letter is not None else opt)
    return found.get("yes"), found.get("no")


def presence(q: Question, sel: FrameSelection, t: RuleTable) -> QuestionTruth:
    """Rule presence (module docstring): "yes" when every subject (an object, or any instance of a
    category) is seen in a selected frame; else "no" with ``allow_zero``, unanswerable without."""
    evidence: set[int] = set()
    unseen = []
    for name, cols in subject_cols(q, t):
        seen_at = {f for s in t.sightings(sel, cols) for f in s}
        evidence |= seen_at
        if not seen_at:
            unseen.append(name)
    yes, no = presence_letters(q)
    if unseen and not q.allow_zero:
        return unanswerable(q, sel, REASON_OBJECT_UNSEEN if q.objects else REASON_CATEGORY_UNSEEN, unseen,
                             sorted(evidence))
    answer = no if unseen else yes
    if str(answer).strip().upper() == str(q.ground_truth).strip().upper():
        return QuestionTruth(q, sel, q.ground_truth, KEPT, REASON_ABSENT if unseen else REASON_PRESENT,
                             tuple(unseen), tuple(sorted(evidence)))
    return QuestionTruth(q, sel, answer, CHANGED, REASON_PRESENCE_CHANGED, tuple(unseen), tuple(sorted(evidence)))
