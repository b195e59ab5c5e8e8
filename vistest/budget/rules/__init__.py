"""The ground-truth rules of the budget stage, one module each, and their table.

Each question type names its rule (vistest.questions.QuestionType.rule, one of the ``RULE_*``
constants); :data:`RULES` maps each rule name to its function ``(question, selection, table) ->
QuestionTruth``, which reads the visibility and the stage's settings from the table
(:class:`vistest.budget.rules.base.RuleTable`: ``table.config`` is the run's TruthConfig). What each rule
decides, with its reasons: docs/truth.md and vistest.budget.truth's module docstring. A new rule is a
module here, one entry in :data:`RULES` and its ``RULE_*`` name on its question types."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from ...questions import (RULE_APPEARANCE, RULE_CAMERA, RULE_COUNTING, RULE_MIN_BUDGET, RULE_OBJECTS, RULE_PRESENCE,
                          RULE_TRACK, RULE_WINDOW, Question)
from .appearance import appearance
from .base import REASON_NEEDS_3D, REASON_NO_VALID_FRAMES, FrameSelection, QuestionTruth, RuleTable, unanswerable
from .camera import camera
from .counting import counting
from .min_budget import min_budget
from .objects import objects
from .presence import presence
from .track import track
from .window import window

Rule = Callable[[Question, FrameSelection, RuleTable], QuestionTruth]

RULES: dict[str, Rule] = {
    RULE_COUNTING: counting,
    RULE_OBJECTS: objects,
    RULE_APPEARANCE: appearance,
    RULE_PRESENCE: presence,
    RULE_MIN_BUDGET: min_budget,
    RULE_WINDOW: window,
    RULE_TRACK: track,
    RULE_CAMERA: camera,
}


def rule_truth(q: Question, sel: FrameSelection, table: RuleTable) -> QuestionTruth:
    """The finding of ``q``'s rule (:data:`RULES`) over one selection: a 2D scene cannot answer a type
    that needs 3D (``needs_3d``); a selection with no witnessing frame answers nothing
    (``no_valid_frames``; a track row still carries its ``track_*`` fields)."""
    rule = q.type.rule
    if table.is_2d and q.type.needs_3d:
        return unanswerable(q, sel, REASON_NEEDS_3D)
    if not sel.witnesses:
        qt = unanswerable(q, sel, REASON_NO_VALID_FRAMES)
        return replace(qt, track=track(q, sel, table).track) if rule == RULE_TRACK else qt
    return RULES[rule](q, sel, table)
