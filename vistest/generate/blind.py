"""vistest's blind baselines on generated questions, against chance.

This is the one module of vistest.generate that calls the scoring stage; it uses only public
names: ``vistest.eval.answers`` (``PROTOCOLS``, ``score_answer``, ``MRA_THRESHOLDS``,
``mean_relative_accuracy`` in the tests), ``vistest.eval.records`` (``truth_from_record``,
``Truth``) and ``vistest.eval.baselines``
(``blind_predictions``, ``MOST_FREQUENT``, ``SIZE_PRIOR``, ``rank_attack``).

* The generated questions become ``Truth`` rows of budget ``all``, status ``kept`` (what the
  budget stage gives them when the frames are all there), scored with lmms-eval's ``revsi``
  rules (accuracy for multiple choice, MRA for numbers).
* **Chance** per question: ``1/k`` for a ``k``-option question; for a numeric question, the
  expected MRA of a blind guess drawn from the other answers of its type (the score of an
  answer that knows the answer distribution but not the question): the mean over ``j != i``
  of ``MRA(answer_j, answer_i)``.
* Baselines: ``most-frequent`` and ``size-prior`` (vistest.eval.baselines), and the held-out
  option-rank attack on multiple-choice questions whose options are all numbers.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..eval.baselines import IN_SAMPLE, MOST_FREQUENT, SIZE_PRIOR, blind_predictions, holdout_folds, rank_attack
from ..eval.answers import MRA_THRESHOLDS, PROTOCOLS, score_answer
from ..eval.records import Truth, truth_from_record
from ..questions import ANSWER_MCQ

BLIND_MODELS = (MOST_FREQUENT, SIZE_PRIOR)
PROTOCOL = PROTOCOLS["revsi"]
SOURCE = "<generated>"


def truths(records: Sequence[Mapping]) -> list[Truth]:
    """One ``Truth`` per generated question (real variant, budget ``all``, status ``kept``)."""
    return [truth_from_record({**r, "num_frames": "all", "status": "kept"}, SOURCE, i, variant="budget")
            for i, r in enumerate(records, start=1)]


def mra_matrix(pred: np.ndarray, target: np.ndarray) -> np.ndarray:
    """``out[i, j]`` = MRA of prediction ``pred[j]`` for ground truth ``target[i]``: the share of
    thresholds θ in ``MRA_THRESHOLDS`` with ``|pred - target| / target <= 1 - θ`` (lmms-eval's
    ``_mean_relative_accuracy``, vectorised; equal to vistest.eval.answers.mean_relative_accuracy)."""
    t = np.asarray(target, float)[:, None]
    rel = np.abs(np.asarray(pred, float)[None, :] - t) / t
    return (rel[..., None] <= (1 - np.asarray(MRA_THRESHOLDS))).mean(axis=-1)


def chance_scores(rows: Sequence[Truth]) -> np.ndarray:
    """Chance per row of *one question type* (module docstring)."""
    if not rows:
        return np.zeros(0)
    if rows[0].kind == ANSWER_MCQ:
        return np.array([1.0 / len(t.options) for t in rows])
    values = np.array([float(t.ground_truth) for t in rows])
    if len(values) < 2:
        return np.zeros(len(values))
    m = mra_matrix(values, values)
    np.fill_diagonal(m, 0.0)
    return m.sum(axis=1) / (len(values) - 1)


def model_scores(rows: Sequence[Truth], model: str) -> np.ndarray:
    """The blind model's score on each row. The model learns *in sample*, from ``rows``
    themselves (the strongest blind model of its family, so a set balanced against it is
    balanced against the held-out one too; vistest score reports the held-out one)."""
    answer = {p.key: p.prediction for p in blind_predictions(rows, model, holdout_folds(rows, IN_SAMPLE))}
    return np.array([score_answer(PROTOCOL, t.kind, answer[t.key], t.ground_truth) if t.key in answer else 0.0
                     for t in rows])


def by_type(rows: Sequence[Truth]) -> dict[str, list[int]]:
    """Row indices per question type, types sorted."""
    out: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(rows):
        out[t.question_type].append(i)
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class BlindCell:
    """A blind model on one question type (``"overall"``: every question, the mean over rows):
    ``score`` its mean score, ``chance`` the mean chance, ``n`` the questions."""

    question_type: str
    model: str
    n: int
    score: float
    chance: float

    @property
    def gap(self) -> float:
        """Points above chance (a fraction: 0.05 is 5 points)."""
        return self.score - self.chance


def blind_cells(records: Sequence[Mapping]) -> tuple[BlindCell, ...]:
    """Every blind model on every generated type, then ``overall`` per model. Each type is
    scored on its own (the baselines learn per type, as in vistest score)."""
    rows = truths(records)
    groups = by_type(rows)
    cells = []
    per_model: dict[str, list[np.ndarray]] = defaultdict(list)
    chances = []
    for qtype, idx in groups.items():
        sub = [rows[i] for i in idx]
        chance = chance_scores(sub)
        chances.append(chance)
        for model in BLIND_MODELS:
            s = model_scores(sub, model)
            per_model[model].append(s)
            cells.append(BlindCell(qtype, model, len(sub), float(s.mean()), float(chance.mean())))
    if rows:
        all_chance = np.concatenate(chances)
        for model in BLIND_MODELS:
            s = np.concatenate(per_model[model])
            cells.append(BlindCell("overall", model, len(rows), float(s.mean()), float(all_chance.mean())))
    return tuple(cells)


@dataclass(frozen=True)
class RankAttackResult:
    """The held-out option-rank attack on the numeric-option questions (vistest.eval.baselines):
    ``accuracy`` mean (``std``) over ``splits`` seeded splits, ``chance`` mean 1/k, ``n`` rows;
    ``best_in_sample``: the best always-pick-one-rank accuracy of any type (in-sample)."""

    n: int
    accuracy: float
    std: float
    chance: float
    splits: int
    seed: int
    best_in_sample: float

    @property
    def gap(self) -> float:
        return self.accuracy - self.chance


def rank_attack_result(records: Sequence[Mapping], splits: int = 200, seed: int = 0) -> RankAttackResult | None:
    """The held-out rank attack on the generated questions; None when no question has numeric options."""
    ra = rank_attack(truths(records), splits=splits, seed=seed)
    if not ra.held_out:
        return None
    h = ra.held_out[0]
    best = max(c.best_accuracy for c in ra.cells)
    return RankAttackResult(h.n, h.mean, h.std, h.chance, h.splits, h.seed, float(best))
