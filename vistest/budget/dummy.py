"""Dummy ground truth: what a question's answer becomes on a video with its evidence removed.

vistest.videos.plan decides which frames a dummy keeps, blacks out or masks (``drop``, ``black``,
``mask``, ``allblack``) and writes the videos; this module says what each (question, mode,
budget) row of ``dummy_gt.jsonl`` holds (the row schema: vistest.budget.rows.DUMMY_FIELDS):

* counting -> 0 (typed like the original; ``status`` changed, ``expectation`` ``zero``);
* every other type -> ``unanswerable`` with ``expectation`` ``abstain`` (an answer is a
  prior-driven guess; the original answer is kept in ``original_ground_truth`` for scoring),
  unless the question offers an answer for that (reformulated questions:
  ``Question.unsupported_answer``, the "Cannot be determined from the video" option, else "None
  of these", or for numbers and texts that accept abstention that phrase): then that answer,
  ``status`` kept or changed against the original, ``unsupported`` true, ``expectation``
  ``abstain`` or ``none_of_these``.

``reason``: ``all_black`` for the allblack mode, ``evidence_removed`` otherwise.

Questions with a time window or an instant (the dynamic ``motion_*`` types, any question with
``time_start``/``time_end`` or ``time``) follow the same rules: their dummies remove the evidence
inside their time span only (vistest.videos.evidence.time_span), so no frame they ask about shows
the object, the budget rule would find it unseen there, and the answer is unanswerable (or the
offered "None of these"/abstention answer; a count over the window is 0: the budget rows count
inside the same span, vistest.budget.rules.base.counted_frames) even though the object still shows
outside the span.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from ..answers import none_letter
from ..questions import RULE_COUNTING, Question
from .rows import CHANGED, KEPT, UNANSWERABLE, TruthRow, dummy_row
from ..budgets import ALL, BudgetValue
from .rules.base import count_like

REASON_EVIDENCE_REMOVED = "evidence_removed"
REASON_ALL_BLACK = "all_black"
EXPECT_ZERO = "zero"        # the answer must be 0 (counting)
EXPECT_ABSTAIN = "abstain"  # the model should abstain; any answer is a prior-driven guess
EXPECT_NONE = "none_of_these"  # the model should answer the question's "None of these" option
ALL_BLACK_MODE = "allblack"  # every frame black: one dummy per scene, serves every question


@dataclass(frozen=True)
class DummyVideo:
    """The dummy video the rows of one (question, mode, budget) are asked on.

    ``path``/``key``: the video (None when not written: ``error`` says why, e.g. nothing is
    left, or the profile fails on the dummy's timeline as its evaluator would). ``frames``:
    the source frame of each of its frames; ``black``/``masked``: those shown black / with
    rectangles filled (sorted, unique); ``fps``: its rate; ``length``: ``budget`` or ``full``.
    """

    budget: BudgetValue
    path: str | None
    key: str | None
    frames: tuple[int, ...]
    black: tuple[int, ...]
    masked: tuple[int, ...]
    fps: float
    length: str
    error: str | None = None


@dataclass(frozen=True)
class DummyTruth:
    """The ground truth a question's dummies of one mode imply, per budget.

    ``ground_truth``: 0 (typed like the original) for counting, the offered answer of a
    reformulated question (module docstring), None otherwise. ``status``: ``kept``,
    ``changed`` or ``unanswerable``; ``reason``: ``evidence_removed`` or ``all_black``;
    ``expectation``: ``zero``, ``abstain`` or ``none_of_these``. ``timeline_frames``: frames of the full-length
    dummy (the timeline the evaluator samples, and budget dummies are taken from).
    ``videos``: the video of each dummy budget (:class:`DummyVideo`).
    """

    question: Question
    mode: str
    fill: str | None
    ground_truth: Any
    status: str
    reason: str
    expectation: str
    objects: tuple[str, ...]
    evidence_frames: tuple[int, ...]
    timeline_frames: int
    videos: tuple[DummyVideo, ...]
    warnings: tuple[str, ...] = ()

    @property
    def variant(self) -> str:
        """The scoring variant name: ``dummy-{mode}`` (vistest.eval.metrics pairs it with the real row)."""
        return f"dummy-{self.mode}"

    def video(self, budget: BudgetValue) -> DummyVideo:
        for v in self.videos:
            if v.budget == budget:
                return v
        raise KeyError(f"{self.question.id}: no {self.mode} dummy for budget {budget!r}")

    def to_row(self, budget: BudgetValue, evidence_threshold: float) -> TruthRow:
        """One row of ``dummy_gt.jsonl`` (vistest.budget.rows.DUMMY_FIELDS): the question's own
        fields, then the dummy's for an evaluator sampling ``budget`` frames. ``num_frames`` is
        the budget (as in the budget GT files); ``video_frames`` the frames the row's video holds,
        ``frame_indices`` their source frames; ``timeline_frames`` the full-length dummy's frames;
        ``evidence_threshold`` (fraction of the image area) the plan's."""
        v = self.video(budget)
        written = bool(v.path)
        extra = {"unsupported": True} if self.ground_truth is not None and self.expectation != EXPECT_ZERO else {}
        return dummy_row(
            self.question.record, self.question.source, self.question.line, variant=self.variant,
            num_frames=budget, dummy_mode=self.mode, dummy_length=v.length, fill=self.fill, video=v.path,
            video_key=v.key, video_frames=len(v.frames) if written else 0, fps=v.fps,
            frame_indices=list(v.frames) if written else [], black_frames=list(v.black) if written else [],
            masked_frames=list(v.masked) if written else [], timeline_frames=self.timeline_frames,
            fewer_frames_than_budget=budget != ALL and self.timeline_frames < int(budget),
            ground_truth=self.ground_truth, original_ground_truth=self.question.ground_truth, status=self.status,
            reason=self.reason, expectation=self.expectation, removed_objects=list(self.objects),
            evidence_frames=list(self.evidence_frames), warnings=list(self.warnings) + ([v.error] if v.error else []),
            **extra, evidence_threshold=evidence_threshold)


def dummy_ground_truth(q: Question, mode: str) -> tuple[Any, str, str, str]:
    """(ground_truth, status, reason, expectation) of ``q`` on a dummy of ``mode`` (module docstring)."""
    reason = REASON_ALL_BLACK if mode == ALL_BLACK_MODE else REASON_EVIDENCE_REMOVED
    if q.type.rule == RULE_COUNTING:
        return count_like(q.ground_truth, 0), CHANGED, reason, EXPECT_ZERO
    answer = q.unsupported_answer()
    if answer is None:
        return None, UNANSWERABLE, reason, EXPECT_ABSTAIN
    same = str(answer).strip().upper() == str(q.ground_truth).strip().upper()
    expectation = EXPECT_NONE if answer == none_letter(q.options) else EXPECT_ABSTAIN
    return answer, KEPT if same else CHANGED, reason, expectation


def dummy_jsonl(dummies: Sequence[DummyTruth], budgets: Sequence[BudgetValue], evidence_threshold: float) -> str:
    """``dummy_gt.jsonl``: one row per (question, mode, dummy budget), in question, mode, budget
    order (the format vistest.eval.records reads beside the budget GT files; docs/videos.md)."""
    return "".join(json.dumps(t.to_row(b, evidence_threshold).to_json(), ensure_ascii=False) + "\n"
                   for t in dummies for b in budgets)
