"""The blind attacks on generated questions: vistest.eval.attacks (the one implementation that
``vistest baseline`` uses too), held out by scene, against chance.

This is the one module of vistest.generate that calls the scoring stage; it uses only public
names of ``vistest.eval``: ``answers.PROTOCOLS``, ``baselines.holdout_folds`` and ``attacks``
(``blind_attacks``, ``score_rows``, ``attack_cells``, ``chance_scores``).

* The generated questions become ground-truth rows (vistest.budget.rows.TruthRow) of budget
  ``all``, status ``kept`` (what the budget stage gives them when the frames are all there),
  scored with lmms-eval's ``revsi`` rules (accuracy for multiple choice, MRA for numbers).
* Held out as ``vistest baseline`` and ``vistest score`` hold out by default: leave-one-scene-out
  up to 10 scenes, 5 folds by scene beyond (seeded), by question with one scene.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from ..answers import PROTOCOLS
from ..eval.attacks import (
    ATTACKS,
    DEFAULT_MARGIN,
    DEFAULT_MIN_JUDGED,
    AttackReport,
    attack_cells,
    blind_attacks,
    chance_scores,
    score_rows,
    transfer_attacks,
)
from ..eval.baselines import DEFAULT_FOLDS, HOLDOUT_AUTO, Folds, holdout_folds
from ..budget.rows import REAL_VARIANT, TruthRow

PROTOCOL = PROTOCOLS["revsi"]
SOURCE = "<generated>"

__all__ = ["ATTACKS", "AttackReport", "attack_cells", "attack_report", "chance_scores", "folds_of", "score_rows",
           "transfer_report", "truths"]


def truths(records: Sequence[Mapping]) -> list[TruthRow]:
    """One row per generated question (real variant, budget ``all``, status ``kept``)."""
    return [TruthRow.from_json({**r, "num_frames": "all", "status": "kept"}, SOURCE, i, REAL_VARIANT)
            for i, r in enumerate(records, start=1)]


def folds_of(rows: Sequence[TruthRow], seed: int = 0) -> Folds:
    """The folds the attacks are held out with (module docstring)."""
    return holdout_folds(rows, HOLDOUT_AUTO, DEFAULT_FOLDS, seed)


def attack_report(records: Sequence[Mapping], seed: int = 0, attacks: Sequence[str] = ATTACKS,
                  min_judged: int = DEFAULT_MIN_JUDGED, margin: float = DEFAULT_MARGIN,
                  folds: Folds | None = None, permutations: int = 0) -> AttackReport:
    """Every attack, held out (module docstring), on the generated ``records``; ``folds``: the
    folds of a larger set these records are part of (default: their own, :func:`folds_of`);
    ``permutations``: every complement judged against its held-out chance
    (vistest.eval.attacks.held_out_chance, seeded with ``seed``; 0: against ``1/k``)."""
    rows = truths(records)
    return blind_attacks(rows, folds or folds_of(rows, seed), PROTOCOL, "all", attacks, min_judged, margin,
                         permutations, seed)


def transfer_report(records: Sequence[Mapping], train_records: Sequence[Mapping], source: str = "another set",
                    min_judged: int = DEFAULT_MIN_JUDGED, margin: float = DEFAULT_MARGIN) -> AttackReport:
    """Every attack fitted on ``train_records`` (generated on other scenes) and scored on
    ``records`` (vistest.eval.attacks.transfer_attacks): what a blind model trained on another
    set of the same generator scores on this one."""
    return transfer_attacks(truths(records), truths(train_records), PROTOCOL, ATTACKS, min_judged, margin, source)
