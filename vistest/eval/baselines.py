"""Blind baselines: what a model can score from the questions alone, without the video.

The baselines learn from the answerable real rows (:attr:`TruthRow.scorable`) of a ground truth.
By default they are **held out** (:func:`holdout_folds`): each row is answered by a model
fitted on other scenes only (leave-one-scene-out up to :data:`LEAVE_ONE_OUT_MAX` scenes,
k-fold by scene beyond), so a baseline shows what a blind model scores on questions it has not
seen. With a single scene nothing can be held out by scene: the folds are then question
groups (a question with its reformulations; leave-one-out up to :data:`LEAVE_ONE_OUT_MAX`
groups, k-fold beyond) and :attr:`Folds.warning` says so. ``in-sample`` fits on every row,
the upper bound of each family (its most-frequent answer is each cell's own mode).

* ``most-frequent`` (:data:`MOST_FREQUENT`): per (budget, question type, reformulation), the
  modal answer: an option letter for MCQ ("always A"), a count for counting types
  (VSI-Bench's always "2", which scores 62% there), the most frequent text for open
  questions; for continuous numbers (sizes, distances, room areas), whose values do not
  repeat, the median (or "Cannot be determined from the video" where most answers are
  that). Ties go to the smallest letter / text; tied counts are drawn at random (seeded by the
  tied values: a set capped at 20% per count has several tied at the cap, and the smallest is
  the worst guess for MRA). Every row of that type and budget
  gets it: unanswerable and dummy rows too, so the blind model's hallucination shows.
  Fallbacks where the training rows have no such cell: the type's answer pooled over budgets,
  then (MCQ) the modal letter of every MCQ of that reformulation; otherwise the empty answer
  (scores 0).
* ``size-prior`` (:data:`SIZE_PRIOR`): for size questions, the mean ground truth of the
  *other* size questions of the training rows (other ids) at the same budget whose object has
  the same category (``TruthRow.label``); with none, the mean of all of them at that budget.
  Other types: most-frequent. ReVSI found expert models hitting "typical category sizes" on
  black frames; this is that prior.
* ``learned`` (vistest.eval.learned): a model over the question text and options alone.
* Option-rank attack (the ReSTI audit of STI-Bench): for MCQ whose options all start with
  a number, sort the options by value and always pick the option of one rank ("None of these"
  and "Cannot be determined from the video" rank after every number). Reported per cell
  (budget, source dataset, question type, reformulation) for every rank, with the one-sided
  binomial p-value of the best rank against chance (mean 1/k) and its Bonferroni correction
  over all (cell, rank) tests of the budget. The held-out version learns the best rank per
  cell on a random half of each cell's rows and scores it on the other half, averaged over
  ``splits`` seeded splits (cells with no training row use the best rank pooled over the
  split's training rows): what a model with a rank prior would get on unseen questions.
"""
from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..questions import ANSWER_MCQ, ANSWER_TEXT, option_letter, option_number
from ..answers import (
    BASE,
    CANNOT_DETERMINE,
    is_abstain_answer,
    is_special_option,
    normalize_text,
    python_float,
    reformulation_order,
)
from ..budgets import budget_json, budget_sort_key
from ..budget.rows import TruthRow, is_size_type
from .records import Prediction
from .tables import Table

MOST_FREQUENT = "most-frequent"
SIZE_PRIOR = "size-prior"
LEARNED = "learned"
BLIND_MODELS = (MOST_FREQUENT, SIZE_PRIOR)
BASELINE_SOURCE = "<blind baseline>"
HOLDOUT_AUTO, HOLDOUT_SCENE, HOLDOUT_QUESTION, IN_SAMPLE = "auto", "scene", "question", "in-sample"
HOLDOUT_CHOICES = (HOLDOUT_AUTO, HOLDOUT_SCENE, HOLDOUT_QUESTION, IN_SAMPLE)
LEAVE_ONE_OUT_MAX = 10
DEFAULT_FOLDS = 5


def format_number(x: float) -> str:
    """A number as a model would write it: an integer without a decimal point, otherwise
    at most 4 decimals, never an exponent (``2.0`` -> ``"2"``, ``1.23456`` -> ``"1.2346"``)."""
    if float(x).is_integer():
        return str(int(x))
    return f"{x:.4f}".rstrip("0").rstrip(".")


def _train_rows(truths: Iterable[TruthRow]) -> list[TruthRow]:
    return [t for t in truths if t.scorable]


# =======================================================================================
# held-out folds
# =======================================================================================
@dataclass(frozen=True)
class Folds:
    """How the blind baselines are held out. ``by``: ``scene``, ``question`` (a question
    group: the base question and its reformulations, within its scene) or ``""``
    (in-sample: one fold that trains on everything). ``fold_of``: unit -> fold (0-based);
    ``n_folds``; ``n_scenes`` in the ground truth; ``warning``: why the folds are weaker than
    asked (None when they are not)."""

    by: str
    fold_of: Mapping[str, int]
    n_folds: int
    n_scenes: int
    warning: str | None = None

    @property
    def in_sample(self) -> bool:
        return not self.by

    def unit(self, t: TruthRow) -> str:
        """The unit a row is held out with: its scene, or its scene and question group."""
        return t.scene_id if self.by == HOLDOUT_SCENE else f"{t.scene_id}\0{t.group_key}"

    def fold(self, t: TruthRow) -> int:
        return 0 if self.in_sample else self.fold_of[self.unit(t)]

    @property
    def scheme(self) -> str:
        """The folds in words, e.g. ``leave-one-scene-out (3 scenes)``."""
        if self.in_sample:
            return "in-sample (fitted on the rows it answers)"
        units = len(self.fold_of)
        noun = "scene" if self.by == HOLDOUT_SCENE else "question group"
        if self.n_folds == units:
            return f"leave-one-{noun.replace(' ', '-')}-out ({units} {noun}s)"
        return f"{self.n_folds}-fold by {noun} ({units} {noun}s)"

    def split(self, truths: Sequence[TruthRow]) -> list[tuple[list[TruthRow], list[TruthRow]]]:
        """[(training rows, rows to answer)] per fold (in-sample: every row, both sides)."""
        if self.in_sample:
            return [(list(truths), list(truths))]
        folds = [self.fold(t) for t in truths]
        return [([t for t, f in zip(truths, folds) if f != k], [t for t, f in zip(truths, folds) if f == k])
                for k in range(self.n_folds)]


def _assign(units: Sequence[str], k: int, seed: int) -> tuple[dict[str, int], int]:
    """Leave-one-out up to LEAVE_ONE_OUT_MAX units, else ``k`` folds of a seeded permutation."""
    units = sorted(units)
    if len(units) <= LEAVE_ONE_OUT_MAX:
        return {u: i for i, u in enumerate(units)}, len(units)
    k = max(2, min(k, len(units)))
    order = np.random.default_rng(seed).permutation(len(units))
    return {units[j]: i % k for i, j in enumerate(order)}, k


def scene_folds(scene_ids: Iterable[str], k: int = DEFAULT_FOLDS, seed: int = 0) -> Folds:
    """The folds by scene of :func:`holdout_folds` for these scenes (two or more)."""
    scenes = sorted(set(scene_ids))
    fold_of, n = _assign(scenes, k, seed)
    return Folds(HOLDOUT_SCENE, fold_of, n, len(scenes))


def holdout_folds(truths: Sequence[TruthRow], mode: str = HOLDOUT_AUTO, k: int = DEFAULT_FOLDS, seed: int = 0) -> Folds:
    """The folds of ``mode`` (:data:`HOLDOUT_CHOICES`; module docstring): ``auto`` and ``scene``
    hold out scenes when there are two or more, else question groups (with a warning);
    ``question`` holds out question groups; ``in-sample`` holds out nothing. ``k``: folds
    beyond leave-one-out; ``seed``: their assignment."""
    if mode not in HOLDOUT_CHOICES:
        raise InputError(f"--holdout: expected one of {', '.join(HOLDOUT_CHOICES)}, got {mode!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise InputError(f"--folds: expected an integer >= 2, got {k!r}")
    scenes = sorted({t.scene_id for t in truths})
    if mode == IN_SAMPLE:
        return Folds("", {}, 1, len(scenes))
    warning = None
    if mode in (HOLDOUT_AUTO, HOLDOUT_SCENE) and len(scenes) >= 2:
        return scene_folds(scenes, k, seed)
    if mode != HOLDOUT_QUESTION:
        warning = (f"only {len(scenes)} scene: too few to hold any out, so the blind baselines are held out by "
                   f"question group (a question and its reformulations) instead; other questions of the same scene "
                   f"stay in training (add scenes for held-out-by-scene baselines)")
    probe = Folds(HOLDOUT_QUESTION, {}, 0, len(scenes))
    fold_of, n = _assign(sorted({probe.unit(t) for t in truths}), k, seed)
    return Folds(HOLDOUT_QUESTION, fold_of, n, len(scenes), warning)


# =======================================================================================
# most-frequent and size prior
# =======================================================================================
def modal_answer(rows: Sequence[TruthRow]) -> str | None:
    """The most-frequent answer of rows of one question type and answer kind (module docstring); None if none."""
    if not rows:
        return None
    if rows[0].kind == ANSWER_MCQ:
        counts = Counter(str(t.ground_truth).strip().upper() for t in rows)
        return min(counts, key=lambda a: (-counts[a], a))
    if rows[0].kind == ANSWER_TEXT:
        counts = Counter(normalize_text(t.ground_truth) for t in rows)
        best = min(counts, key=lambda a: (-counts[a], a))
        return next(str(t.ground_truth) for t in rows if normalize_text(t.ground_truth) == best)
    abstain = sum(1 for t in rows if is_abstain_answer(t.ground_truth))
    values = [v for v in (python_float(t.ground_truth) for t in rows) if v is not None]
    if abstain > len(values):
        return CANNOT_DETERMINE
    if rows[0].is_counting:
        counts = Counter(values)
        top = max(counts.values())
        tied = sorted(v for v, n in counts.items() if n == top)
        return format_number(tied[_tie_draw(tied)])
    return format_number(float(np.median(values)))


def _tie_draw(tied: Sequence[float]) -> int:
    """An index into ``tied`` drawn at random, seeded by the tied values themselves (the same
    rows give the same answer in every run and process)."""
    import hashlib

    seed = int.from_bytes(hashlib.sha256(",".join(map(format_number, tied)).encode()).digest()[:8], "big")
    return int(np.random.default_rng(seed).integers(len(tied)))


MCQ_FALLBACK = "*mcq"


def most_frequent_answers(truths: Sequence[TruthRow]) -> dict[tuple, str]:
    """The answers of the module docstring, learned from the answerable real rows:
    ``{(budget, question_type, reformulation): answer}``, ``{(None, question_type,
    reformulation): answer}`` pooled over budgets, and ``{(MCQ_FALLBACK, reformulation):
    letter}`` over every MCQ. Answer kinds are not mixed (an open question of an MCQ type
    keys its own cells: its reformulation differs)."""
    groups: dict[tuple, list[TruthRow]] = defaultdict(list)
    for t in _train_rows(truths):
        groups[(t.budget, t.question_type, t.reformulation)].append(t)
        groups[(None, t.question_type, t.reformulation)].append(t)
        if t.kind == ANSWER_MCQ:
            groups[(MCQ_FALLBACK, t.reformulation)].append(t)
    return {k: a for k, rows in groups.items() if (a := modal_answer(rows)) is not None}


def most_frequent_answer(answers: Mapping[tuple, str], t: TruthRow) -> str | None:
    """The answer for row ``t`` with the fallbacks of the module docstring (None: no answer)."""
    for key in ((t.budget, t.question_type, t.reformulation), (None, t.question_type, t.reformulation)):
        if key in answers:
            return answers[key]
    return answers.get((MCQ_FALLBACK, t.reformulation)) if t.kind == ANSWER_MCQ else None


def size_prior_answers(train: Sequence[TruthRow], rows: Sequence[TruthRow]) -> dict[tuple[str, str, str], str]:
    """``{truth.key: answer}`` for every size row of ``rows``: the mean of the training size
    questions (other ids) of the same category at the same budget, else of all of them at that
    budget."""
    pool: dict[str, list[TruthRow]] = defaultdict(list)
    for t in _train_rows(train):
        if is_size_type(t.question_type) and python_float(t.ground_truth) is not None:
            pool[t.budget].append(t)
    out = {}
    for t in rows:
        if not is_size_type(t.question_type):
            continue
        others = [o for o in pool.get(t.budget, []) if o.id != t.id]
        same = [o for o in others if t.label is not None and o.label == t.label]
        use = same or others
        if use:
            out[t.key] = format_number(float(np.mean([python_float(o.ground_truth) for o in use])))
    return out


def blind_predictions(truths: Sequence[TruthRow], model: str = MOST_FREQUENT, folds: Folds | None = None
                      ) -> tuple[Prediction, ...]:
    """The blind model's answer for every truth row (every variant and status), in truth
    order; ``model``: one of :data:`BLIND_MODELS`; ``folds``: how it is held out (default:
    :func:`holdout_folds` ``auto``). A row the training folds give no answer gets ``""``."""
    if model not in BLIND_MODELS:
        raise InputError(f"--model: expected one of {', '.join(BLIND_MODELS + (LEARNED,))}, got {model!r}")
    folds = folds if folds is not None else holdout_folds(truths)
    answer: dict[tuple[str, str, str], str] = {}
    for train, rows in folds.split(truths):
        frequent = most_frequent_answers(train)
        sizes = size_prior_answers(train, rows) if model == SIZE_PRIOR else {}
        for t in rows:
            answer[t.key] = sizes.get(t.key) or most_frequent_answer(frequent, t) or ""
    return tuple(Prediction(t.id, t.variant, t.budget, answer[t.key], f"{BASELINE_SOURCE} {model}", i)
                 for i, t in enumerate(truths, start=1))


def predictions_jsonl(predictions: Sequence[Prediction], model: str,
                      extra: Mapping[tuple[str, str, str], Mapping] | None = None) -> str:
    """Plain prediction JSONL (``id``, ``variant``, ``budget``, ``prediction``, ``model``, then
    the fields ``extra`` gives the prediction's key, if any)."""
    extra = extra or {}
    return "".join(json.dumps({"id": p.id, "variant": p.variant, "budget": budget_json(p.budget),
                               "prediction": p.prediction, "model": model, **extra.get(p.key, {})},
                              ensure_ascii=False) + "\n" for p in predictions)


# =======================================================================================
# option-rank attack
# =======================================================================================
def option_order(options: Sequence[str] | None) -> list[int] | None:
    """Option indices sorted by value, smallest first (equal values keep option order; "None of
    these" and "Cannot be determined from the video" after every number). None unless every
    option is lettered and starts with a number (or is such a special option), one at least a
    number."""
    if not options:
        return None
    values = []
    for o in options:
        letter, text = option_letter(o)
        value = math.inf if is_special_option(o) else option_number(text)
        if letter is None or value is None:
            return None
        values.append(value)
    if all(v == math.inf for v in values):
        return None
    return sorted(range(len(values)), key=lambda i: values[i])


def option_rank(options: Sequence[str] | None, ground_truth: object) -> tuple[int, int] | None:
    """(rank, k): the keyed option's 0-based rank among the ``k`` options in :func:`option_order`.
    None when that order is None or the ground truth is none of the letters."""
    order = option_order(options) if isinstance(ground_truth, str) else None
    if order is None:
        return None
    letters = [option_letter(options[i])[0] for i in order]
    key = ground_truth.strip().upper()
    return (letters.index(key), len(order)) if key in letters else None


def binomial_tail(hits: int, n: int, p: float) -> float:
    """P(X >= hits) for X ~ Binomial(n, p), summed in log space (exact, no underflow)."""
    if hits <= 0 or p >= 1.0:
        return 1.0
    if p <= 0.0 or hits > n:
        return 0.0
    lp, lq = math.log(p), math.log1p(-p)
    terms = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq
             for i in range(hits, n + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(x - top) for x in terms))


@dataclass(frozen=True)
class RankCell:
    """Always-pick-one-rank on one cell. ``hits[r]``: rows whose keyed option has rank ``r``
    (0 = smallest) — the hits of always picking rank ``r``. ``k``: most options in the cell;
    ``chance``: mean 1/k over its rows. ``p_value``: binomial tail of the best rank's hits at
    ``chance``; ``p_bonferroni``: times the number of (cell, rank) tests at this budget."""

    budget: str
    group: str
    question_type: str
    n: int
    k: int
    hits: tuple[int, ...]
    chance: float
    p_value: float
    p_bonferroni: float
    reformulation: str = BASE

    @property
    def best_rank(self) -> int:
        return int(np.argmax(self.hits))

    @property
    def best_accuracy(self) -> float:
        return self.hits[self.best_rank] / self.n

    @property
    def name(self) -> str:
        name = f"{self.group}/{self.question_type}" if self.group else self.question_type
        return name if self.reformulation == BASE else f"{name} [{self.reformulation}]"


@dataclass(frozen=True)
class HeldOut:
    """The held-out rank attack at one budget: accuracy on the held-out halves, ``mean`` and
    ``std`` over ``splits`` splits seeded with ``seed``; ``chance``: mean 1/k."""

    budget: str
    n: int
    splits: int
    seed: int
    mean: float
    std: float
    chance: float


@dataclass(frozen=True)
class RankAttack:
    """The option-rank attack on a ground truth. ``n_mcq``: answerable real MCQ rows;
    ``cells``/``held_out`` cover the ``n_numeric`` of them whose options are all numbers."""

    n_mcq: int
    n_numeric: int
    cells: tuple[RankCell, ...]
    held_out: tuple[HeldOut, ...]

    def to_dict(self) -> dict:
        return {"n_mcq": self.n_mcq, "n_numeric_options": self.n_numeric,
                "cells": [{"budget": c.budget, "group": c.group, "question_type": c.question_type,
                           "reformulation": c.reformulation, "n": c.n, "k": c.k,
                           "hits_by_rank_from_smallest": list(c.hits), "best_rank_from_smallest": c.best_rank + 1,
                           "best_accuracy": c.best_accuracy, "chance": c.chance, "p_value": c.p_value,
                           "p_bonferroni": c.p_bonferroni} for c in self.cells],
                "held_out": [vars(h).copy() for h in self.held_out]}

    def tables(self) -> list[Table]:
        """The report tables (vistest.eval.report.report_tables)."""
        note = (f"MCQ whose options are all numbers ({self.n_numeric} of {self.n_mcq} answerable MCQ rows): sort "
                f"the options, always pick one rank (1 = smallest); hits per rank, the best rank's accuracy and "
                f"its binomial p-value against chance (Bonferroni over the budget's cell x rank tests).")
        cells = Table("Option-rank attack (ReSTI audit)", note,
                      ("budget", "cell", "n", "k", "hits by rank", "best", "accuracy", "chance", "p", "p (Bonf.)"),
                      tuple((c.budget, c.name, str(c.n), str(c.k), " ".join(map(str, c.hits)), str(c.best_rank + 1),
                             f"{c.best_accuracy:.3f}", f"{c.chance:.3f}", f"{c.p_value:.2g}", f"{c.p_bonferroni:.2g}")
                            for c in self.cells), 2)
        if not self.held_out:
            return [cells]
        h0 = self.held_out[0]
        held = Table("Held-out option-rank attack",
                     f"Best rank learned per cell on a random half of each cell, scored on the other half; "
                     f"mean (std) over {h0.splits} splits, seed {h0.seed}.",
                     ("budget", "rows", "held-out accuracy", "std", "chance"),
                     tuple((h.budget, str(h.n), f"{h.mean:.3f}", f"{h.std:.3f}", f"{h.chance:.3f}")
                           for h in self.held_out), 1)
        return [cells, held]


def held_out_accuracies(cells: Mapping[tuple, np.ndarray], k: int, splits: int, seed: int) -> np.ndarray:
    """Per split: hits / held-out rows of the rank learned per cell (``cells``: key -> 0-based
    ranks of the keyed options). Each cell is shuffled and its first ``n // 2`` rows train;
    the most-hit rank wins (ties: the smaller rank); a cell with no training row uses the
    best rank of all training rows of the split."""
    rng = np.random.default_rng(seed)
    keys = sorted(cells)
    out = np.empty(splits)
    for s in range(splits):
        parts = []
        for key in keys:
            r = cells[key]
            perm = rng.permutation(len(r))
            parts.append((r[perm[: len(r) // 2]], r[perm[len(r) // 2:]]))
        pooled = np.bincount(np.concatenate([tr for tr, _ in parts]), minlength=k)
        hits = total = 0
        for train, test in parts:
            best = int(np.argmax(np.bincount(train, minlength=k) if len(train) else pooled))
            hits += int(np.sum(test == best))
            total += len(test)
        out[s] = hits / total if total else 0.0
    return out


def rank_attack(truths: Sequence[TruthRow], splits: int = 200, seed: int = 0) -> RankAttack:
    """The in-sample and held-out option-rank attack on the answerable real MCQ rows."""
    mcq = [t for t in _train_rows(truths) if t.kind == ANSWER_MCQ]
    ranked: dict[tuple[str, str, str, str], list[tuple[int, int]]] = defaultdict(list)
    for t in mcq:
        rk = option_rank(t.options, t.ground_truth)
        if rk is not None:
            ranked[(t.budget, t.group, t.question_type, t.reformulation)].append(rk)
    order = sorted(ranked, key=lambda c: (budget_sort_key(c[0]), c[1], c[2], reformulation_order(c[3])))
    tests = Counter()
    for key in order:
        tests[key[0]] += max(k for _, k in ranked[key])
    cells, held = [], []
    for key in order:
        rows = ranked[key]
        k = max(kk for _, kk in rows)
        hits = tuple(int(x) for x in np.bincount([r for r, _ in rows], minlength=k))
        chance = float(np.mean([1.0 / kk for _, kk in rows]))
        p = binomial_tail(max(hits), len(rows), chance)
        cells.append(RankCell(key[0], key[1], key[2], len(rows), k, hits, chance, p, min(1.0, p * tests[key[0]]),
                              key[3]))
    for budget in sorted({c[0] for c in order}, key=budget_sort_key):
        keys = [c for c in order if c[0] == budget]
        k = max(kk for c in keys for _, kk in ranked[c])
        accs = held_out_accuracies({c: np.array([r for r, _ in ranked[c]]) for c in keys}, k, splits, seed)
        n = sum(len(ranked[c]) for c in keys)
        chance = float(np.mean([1.0 / kk for c in keys for _, kk in ranked[c]]))
        held.append(HeldOut(budget, n, splits, seed, float(accs.mean()), float(accs.std()), chance))
    return RankAttack(len(mcq), sum(c.n for c in cells), tuple(cells), tuple(held))
