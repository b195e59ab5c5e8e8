"""Blind baselines: what a model can score from the questions alone, without the video.

All baselines learn from the answerable real rows (:attr:`Truth.scorable`) of the ground
truth they are scored on, so they are in-sample upper bounds for their family of blind
models (the held-out rank attack is the exception, and says so).

* ``most-frequent`` (:data:`MOST_FREQUENT`): per (budget, question type), the modal answer:
  an option letter for MCQ ("always A"), a count for counting types (VSI-Bench's always
  "2", which scores 62% there); for continuous numbers (sizes, distances, room areas),
  whose values do not repeat, the median. Ties go to the smallest letter / value. Every row
  of that type and budget gets it: unanswerable and dummy rows too, so the blind model's
  hallucination shows. A (budget, type) with no answerable row falls back to the type's
  answer pooled over budgets.
* ``size-prior`` (:data:`SIZE_PRIOR`): for size questions, the mean ground truth of the
  *other* size questions (other ids) at the same budget whose object has the same category
  (``Truth.label``); with none, the mean of all other size questions at that budget. Other
  types: most-frequent. ReVSI found expert models hitting "typical category sizes" on black
  frames; this is that prior.
* Option-rank attack (the ReSTI audit of STI-Bench): for MCQ whose options all start with
  a number, sort the options by value and always pick the option of one rank. Reported per
  cell (budget, source dataset, question type) for every rank, with the one-sided binomial
  p-value of the best rank against chance (mean 1/k) and its Bonferroni correction over all
  (cell, rank) tests of the budget. The held-out version learns the best rank per cell on
  a random half of each cell's rows and scores it on the other half, averaged over
  ``splits`` seeded splits (cells with no training row use the best rank pooled over the
  split's training rows): what a model with a rank prior would get on unseen questions.
"""
from __future__ import annotations

import json
import math
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..atomic import write_atomic
from ..questions import ANSWER_MCQ, option_letter
from .answers import python_float
from .records import Prediction, Truth, budget_json, budget_sort_key, is_size_type, load_run_dir
from .tables import Table

MOST_FREQUENT = "most-frequent"
SIZE_PRIOR = "size-prior"
BLIND_MODELS = (MOST_FREQUENT, SIZE_PRIOR)
BASELINE_SOURCE = "<blind baseline>"

# the ReSTI audit's option parse: a number at the start of the option text
_OPTION_NUMBER_RE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)")


def format_number(x: float) -> str:
    """A number as a model would write it: an integer without a decimal point, otherwise
    at most 4 decimals, never an exponent (``2.0`` -> ``"2"``, ``1.23456`` -> ``"1.2346"``)."""
    if float(x).is_integer():
        return str(int(x))
    return f"{x:.4f}".rstrip("0").rstrip(".")


def _train_rows(truths: Iterable[Truth]) -> list[Truth]:
    return [t for t in truths if t.scorable]


def modal_answer(rows: Sequence[Truth]) -> str | None:
    """The most-frequent answer of rows of one question type (module docstring); None if none."""
    if not rows:
        return None
    if rows[0].kind == ANSWER_MCQ:
        counts = Counter(str(t.ground_truth).strip().upper() for t in rows)
        return min(counts, key=lambda a: (-counts[a], a))
    values = [python_float(t.ground_truth) for t in rows]
    if rows[0].is_counting:
        counts = Counter(values)
        return format_number(min(counts, key=lambda v: (-counts[v], v)))
    return format_number(float(np.median(values)))


def most_frequent_answers(truths: Sequence[Truth]) -> dict[tuple[str | None, str], str]:
    """``{(budget, question_type): answer}`` plus ``{(None, question_type): answer}`` pooled
    over budgets (the fallback), learned from the answerable real rows."""
    groups: dict[tuple[str | None, str], list[Truth]] = defaultdict(list)
    for t in _train_rows(truths):
        groups[(t.budget, t.question_type)].append(t)
        groups[(None, t.question_type)].append(t)
    return {k: a for k, rows in groups.items() if (a := modal_answer(rows)) is not None}


def size_prior_answers(truths: Sequence[Truth]) -> dict[tuple[str, str, str], str]:
    """``{truth.key: answer}`` for every size row: the leave-one-question-out mean of the same
    category at the same budget, else of every other size question at that budget."""
    pool: dict[str, list[Truth]] = defaultdict(list)
    for t in _train_rows(truths):
        if is_size_type(t.question_type):
            pool[t.budget].append(t)
    out = {}
    for t in truths:
        if not is_size_type(t.question_type):
            continue
        others = [o for o in pool.get(t.budget, []) if o.id != t.id]
        same = [o for o in others if t.label is not None and o.label == t.label]
        use = same or others
        if use:
            out[t.key] = format_number(float(np.mean([python_float(o.ground_truth) for o in use])))
    return out


def blind_predictions(truths: Sequence[Truth], model: str = MOST_FREQUENT) -> tuple[Prediction, ...]:
    """The blind model's answer for every truth row (every variant and status) it can answer,
    in truth order; ``model``: one of :data:`BLIND_MODELS`."""
    if model not in BLIND_MODELS:
        raise InputError(f"--model: expected one of {', '.join(BLIND_MODELS)}, got {model!r}")
    frequent = most_frequent_answers(truths)
    sizes = size_prior_answers(truths) if model == SIZE_PRIOR else {}
    out = []
    for i, t in enumerate(truths, start=1):
        answer = sizes.get(t.key) or frequent.get((t.budget, t.question_type)) or frequent.get((None, t.question_type))
        if answer is not None:
            out.append(Prediction(t.id, t.variant, t.budget, answer, f"{BASELINE_SOURCE} {model}", i))
    return tuple(out)


def predictions_jsonl(predictions: Sequence[Prediction], model: str) -> str:
    """Plain prediction JSONL (``id``, ``variant``, ``budget``, ``prediction``, ``model``)."""
    return "".join(json.dumps({"id": p.id, "variant": p.variant, "budget": budget_json(p.budget),
                               "prediction": p.prediction, "model": model}, ensure_ascii=False) + "\n"
                   for p in predictions)


def write_baseline(run_dir: str | os.PathLike, output: str | os.PathLike, model: str = MOST_FREQUENT) -> int:
    """``vistest baseline``: write the blind model's predictions for a run directory as plain
    JSONL (atomically). Returns the number of predictions."""
    preds = blind_predictions(load_run_dir(run_dir).truths, model)
    write_atomic(Path(output), predictions_jsonl(preds, model))
    return len(preds)


# =======================================================================================
# option-rank attack
# =======================================================================================
def option_rank(options: Sequence[str] | None, ground_truth: object) -> tuple[int, int] | None:
    """(rank, k): the keyed option's 0-based rank among the ``k`` options sorted by value,
    smallest first (equal values keep option order). None unless every option is lettered
    and starts with a number, and the ground truth is one of the letters."""
    if not options or not isinstance(ground_truth, str):
        return None
    values = []
    for o in options:
        letter, text = option_letter(o)
        m = _OPTION_NUMBER_RE.match(text)
        if letter is None or m is None:
            return None
        values.append((float(m.group(1)), letter))
    order = [letter for _, letter in sorted(values, key=lambda v: v[0])]
    key = ground_truth.strip().upper()
    return (order.index(key), len(order)) if key in order else None


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

    @property
    def best_rank(self) -> int:
        return int(np.argmax(self.hits))

    @property
    def best_accuracy(self) -> float:
        return self.hits[self.best_rank] / self.n

    @property
    def name(self) -> str:
        return f"{self.group}/{self.question_type}" if self.group else self.question_type


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
                "cells": [{"budget": c.budget, "group": c.group, "question_type": c.question_type, "n": c.n, "k": c.k,
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


def rank_attack(truths: Sequence[Truth], splits: int = 200, seed: int = 0) -> RankAttack:
    """The in-sample and held-out option-rank attack on the answerable real MCQ rows."""
    mcq = [t for t in _train_rows(truths) if t.kind == ANSWER_MCQ]
    ranked: dict[tuple[str, str, str], list[tuple[int, int]]] = defaultdict(list)
    for t in mcq:
        rk = option_rank(t.options, t.ground_truth)
        if rk is not None:
            ranked[(t.budget, t.group, t.question_type)].append(rk)
    order = sorted(ranked, key=lambda c: (budget_sort_key(c[0]), c[1], c[2]))
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
        cells.append(RankCell(key[0], key[1], key[2], len(rows), k, hits, chance, p, min(1.0, p * tests[key[0]])))
    for budget in sorted({c[0] for c in order}, key=budget_sort_key):
        keys = [c for c in order if c[0] == budget]
        k = max(kk for c in keys for _, kk in ranked[c])
        accs = held_out_accuracies({c: np.array([r for r, _ in ranked[c]]) for c in keys}, k, splits, seed)
        n = sum(len(ranked[c]) for c in keys)
        chance = float(np.mean([1.0 / kk for c in keys for _, kk in ranked[c]]))
        held.append(HeldOut(budget, n, splits, seed, float(accs.mean()), float(accs.std()), chance))
    return RankAttack(len(mcq), sum(c.n for c in cells), tuple(cells), tuple(held))
