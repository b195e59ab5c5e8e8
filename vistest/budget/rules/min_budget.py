"""Rule ``min_budget`` (room size, route planning; docs/truth.md): unanswerable below the config's
``min_budget_room_route`` frames; ``all`` is never below."""
from __future__ import annotations

from ...budgets import ALL
from ...questions import Question
from ..rows import KEPT
from .base import REASON_BUDGET_BELOW_MINIMUM, REASON_BUDGET_SUFFICIENT, FrameSelection, QuestionTruth, RuleTable, \
    unanswerable


def min_budget(q: Question, sel: FrameSelection, t: RuleTable) -> QuestionTruth:
    """The budget the rule compares (the selection's, or its ``rule_budget``) against
    ``t.config.min_budget_room_route``."""
    budget = sel.budget if sel.rule_budget is None else sel.rule_budget
    if budget != ALL and int(budget) < t.config.min_budget_room_route:
        return unanswerable(q, sel, REASON_BUDGET_BELOW_MINIMUM)
    return QuestionTruth(q, sel, q.ground_truth, KEPT, REASON_BUDGET_SUFFICIENT)
