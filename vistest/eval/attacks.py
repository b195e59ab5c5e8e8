"""Every blind attack in one place, held out, per question type, against chance (issue #23).

One implementation for ``vistest baseline`` (its attack table) and ``vistest generate`` (its
report and its balancing loop, vistest.generate.blind). An attack answers each row from a fit on
the *other* folds (vistest.eval.baselines.Folds: by scene when there are two or more scenes),
never from the row's own scene, and is scored with the protocol's rules (accuracy for options,
MRA for numbers). Attacks (:data:`ATTACKS`):

* ``constant``: the best constant of the type in the training folds: for options, the letter
  that wins most often (the best constant for accuracy); for numbers, the value with the
  highest mean MRA over the training answers (whole numbers for counting); for open texts, the
  most frequent text.
* ``option-label``: which option *text* tends to win: every option's items (an option
  ``"chair, table, bed"`` has three, each with its place in the list) get the smoothed share
  of training questions of the type they won when offered, ``(won + 1/k) / (offered + 1)``; the
  option with the highest mean wins. Multiple choice whose options are not numbers.
* ``option-rank``: options that are all numbers sorted by value; always the rank that won most
  often in training (the ReSTI audit's attack).
* ``numeric-prior``: per label / label pair: the questions' words as a set (``How many
  chair(s) and table(s)...`` and ``... table(s) and chair(s)`` are one key; a size question's
  key is its label, a distance question's its two labels), answered with the best-MRA constant
  of the training answers with the same key, else of the type. Numbers, and numeric options
  (the option nearest the prior, in ratio).
* ``learned``: the learned text-only model (vistest.eval.learned), fitted on the same folds.
* ``nota-position``: on rows offering "None of these" / "Cannot be determined from the
  video": the option at the offset from that special option that won most often in training.
* ``answer-length``: the option whose text-length rank (shortest first, ties in option order)
  won most often in training.
* ``training-median`` / ``label-median``: the median answer of the type in the training folds,
  and the median per label / label pair (the question's words, as ``numeric-prior``), else the
  type's (issue #43: the baselines a test-set-trained forest and a language model's per-label
  table reach on numbers). Numbers, and numeric options (the option nearest, in ratio).
* ``world-prior``: what a blind model knows of the world, fitted *outside* the set on real scans'
  annotations (vistest.eval.world_prior: typical object sizes, room areas, object-pair
  distances): size, distance and room-size questions answered with the typical value (numeric
  options: the nearest in ratio), relative distance with the option typically closest /
  farthest. It ignores the training folds.

Ties between training counts go to the smaller letter / rank / offset (an attack is a fixed
rule; the balancing makes ties rare).

**Chance** per row: ``1/k`` for ``k`` options; for a number, the expected MRA of a blind guess
drawn from the other answers of its type (the mean over ``j != i`` of ``MRA(answer_j,
answer_i)``): what a model that knows the answer distribution but not the question scores.

**Judging** (:class:`AttackCell`): per (attack, type), the mean score minus the mean chance over
the rows the attack applies to, with a 95% confidence interval that treats each scene as one
sample (cluster-robust standard error of the per-row gaps; per row when there is one scene).
A judged cell is within target (``ok``) when ``gap <= margin`` (issue #23: "within chance + 3
points"; an attack above chance is a model that passes without looking). **Two-sided**: an
attack far *below* chance leaks too, through its complement: on a ``k``-option row, picking
uniformly among the ``k - 1`` options the attack does not pick scores ``0`` when the attack is
right and ``1/(k - 1)`` when it is wrong (``(1 - s) / (k - 1)`` for a score ``s``). Every
multiple-choice attack ``X`` therefore has a complement cell ``not-X`` (:data:`COMPLEMENT`
prefix; per-row scores from the same held-out answers, the same chance ``1/k``, interval and
judging): ``not-X`` above chance + margin is a blind pass as well. On ``k`` options the
complement's gap is ``-gap(X) / (k - 1)``, so the two cells bound the attack's gap to ``[-(k -
1) x margin, +margin]`` (-9 .. +3 points on 4 options). Numbers scored with MRA have no
complement (no "other options" to spread over): those cells are one-sided. A cell more than
``margin`` below chance is still flagged (``below``, reported). Each cell also says whether
``chance + margin`` lies inside its 95% interval (``margin_in_ci``: the point estimate's side of
the margin is not resolved at this size). Types with fewer than ``min_judged`` rows are not
judged alone: their rows are pooled into one cell per attack (``pooled (<N): type, ...``),
judged when the pool reaches ``min_judged``.

**Held-out chance of a complement** (:func:`held_out_chance`). Holding out is itself below
chance on a finite set whose answers are balanced: with every letter used exactly ``n/k`` times,
the letter most frequent in the training folds is the one the held-out fold has *fewest* of (a
leave-one-out majority vote on a balanced set scores 0%), so the held-out ``constant`` lands
10-17 points below ``1/k`` on 30-60 questions of four options whatever the questions say, and
``not-constant`` 3-6 points above chance with no blind model able to use it (a model answers
one question; the anti-correlation lives in the rest of the answer key). The same holds for
every other feature a set balances (the option items vistest.generate counterbalances, the
numeric options' value ranks). A complement is therefore judged against what its attack scores
held out on answer keys that carry no information but keep the set's balances: the keys re-drawn
within each cell by letter swaps that keep every letter's count and leave the items, length
ranks and value ranks no less balanced than the set's (:func:`permuted_keys`: a restricted
randomization), scored with the same folds, ``permutations`` times (the permutation null of a
cross-validated classifier, Ojala & Garriga, "Permutation tests for studying classifier
performance", JMLR 11, 2010, test 1, restricted to the design as after rerandomization). A
complement's ``null`` is its mean gap under those re-draws and its judged gap
(:attr:`AttackCell.excess`) ``gap - null``: the attack's distance below chance that the
questions, not the holding out, account for. Attacks (the upper side, the issue's target) are
judged against ``1/k`` as before, never against the null.

**Transfer** (:func:`transfer_attacks`): every attack fitted on *another* set of questions over
other scenes (e.g. the same generator run on other rooms) and scored on this one: a blind model
trained on other data of the same generator (VSI-Bench-Debiased's test-set training with an
outside training split). The two answer keys are independent, so chance is ``1/k`` on both
sides. It sees priors that holding out within a small set estimates too noisily to see
(docs/generate.md, "Transfer")."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..questions import ANSWER_MCQ, ANSWER_TEXT, option_letter, option_number
from ..answers import MRA_THRESHOLDS, PROTOCOLS, Protocol, is_special_option, normalize_text, python_float, score_answer
from .baselines import DEFAULT_FOLDS, HOLDOUT_AUTO, HOLDOUT_SCENE, Folds, format_number, holdout_folds, option_order
from . import world_prior
from .learned import fit_learned, words
from ..budgets import budget_sort_key
from ..budget.rows import TruthRow
from .records import ScoreError, load_run_dir
from .tables import Table

CONSTANT, OPTION_LABEL, OPTION_RANK, NUMERIC_PRIOR, LEARNED_ATTACK, NOTA_POSITION, ANSWER_LENGTH, WORLD_PRIOR = (
    "constant", "option-label", "option-rank", "numeric-prior", "learned", "nota-position", "answer-length",
    "world-prior")
TRAINING_MEDIAN, LABEL_MEDIAN = "training-median", "label-median"
ATTACKS = (CONSTANT, OPTION_LABEL, OPTION_RANK, NUMERIC_PRIOR, LEARNED_ATTACK, NOTA_POSITION, ANSWER_LENGTH,
           WORLD_PRIOR, TRAINING_MEDIAN, LABEL_MEDIAN)
NUMERIC_BASELINES = (TRAINING_MEDIAN, LABEL_MEDIAN, WORLD_PRIOR)  # shown beside each numeric type's chance
COMPLEMENT = "not-"  # the complement cell of attack X is named "not-X" (module docstring: two-sided)
DEFAULT_MARGIN = 0.03  # issue #23: every held-out attack within chance + 3 points
DEFAULT_MIN_JUDGED = 20  # vistest.generate.rules.BalanceRules.min_judged: SE of a mean MRA ~0.3/sqrt(n)
NULL_PERMUTATIONS = 10  # re-drawn answer keys per fold seed for a complement's held-out chance (docstring)
NULL_SWEEPS = 20  # proposals per row of permuted_keys' restricted randomization
Z95 = 1.959964


# =======================================================================================
# shared helpers
# =======================================================================================
def mra_matrix(pred: np.ndarray, target: np.ndarray) -> np.ndarray:
    """``out[i, j]`` = MRA of prediction ``pred[j]`` for ground truth ``target[i]``: the share of
    thresholds θ in ``MRA_THRESHOLDS`` with ``|pred - target| / target <= 1 - θ`` (lmms-eval's
    ``_mean_relative_accuracy``, vectorised; equal to vistest.answers.mean_relative_accuracy)."""
    t = np.asarray(target, float)[:, None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rel = np.abs(np.asarray(pred, float)[None, :] - t) / t
    return (rel[..., None] <= (1 - np.asarray(MRA_THRESHOLDS))).mean(axis=-1)


MAX_COUNT_SPAN = 1000  # best_constant tries every whole count between the extremes up to this count


def best_constant(values: Sequence[float], counting: bool) -> float | None:
    """The value with the highest mean MRA over ``values`` (candidates: the finite positive values
    themselves, and for counting every whole number between their extremes when the largest is at
    most :data:`MAX_COUNT_SPAN`); ties: the smaller value."""
    v = np.asarray([x for x in values if x is not None and math.isfinite(x) and x > 0], float)
    if not len(v):
        return None
    cands = np.unique(np.round(v)) if counting else np.unique(v)
    if counting and cands.max() <= MAX_COUNT_SPAN:
        cands = np.arange(max(1.0, cands.min()), max(1.0, cands.max()) + 1.0)
    return float(cands[int(np.argmax(mra_matrix(cands, v).mean(axis=0)))])


def chance_scores(rows: Sequence[TruthRow]) -> np.ndarray:
    """Chance per row of *one question type* (module docstring)."""
    if not rows:
        return np.zeros(0)
    out = np.zeros(len(rows))
    numeric = [i for i, t in enumerate(rows) if t.kind != ANSWER_MCQ and python_float(t.ground_truth) is not None]
    for i, t in enumerate(rows):
        if t.kind == ANSWER_MCQ and t.options:
            out[i] = 1.0 / len(t.options)
    if len(numeric) >= 2:
        values = np.array([python_float(rows[i].ground_truth) for i in numeric])
        m = mra_matrix(values, values)
        np.fill_diagonal(m, 0.0)
        out[numeric] = m.sum(axis=1) / (len(values) - 1)
    return out


@functools.lru_cache(maxsize=1 << 16)
def _parsed(options: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...], tuple[float, ...] | None,
                                               int | None]:
    """(letters, texts, values, the last special option's index) of one option list, parsed once
    (every attack reads them on every fold: the balancing scores a set many times)."""
    letters = tuple(option_letter(o)[0] or o for o in options)
    texts = tuple(option_letter(o)[1] for o in options)
    special = [is_special_option(o) for o in options]
    values: list[float] | None = []
    for sp, text in zip(special, texts):
        v = math.inf if sp else option_number(text)
        if v is None:
            values = None
            break
        values.append(v)
    if values is not None and not (values and any(math.isfinite(v) for v in values)):
        values = None
    idx = [i for i, sp in enumerate(special) if sp]
    return letters, texts, None if values is None else tuple(values), idx[-1] if idx else None


def option_texts(t: TruthRow) -> list[str]:
    return list(_parsed(tuple(t.options or ()))[1])


def option_letters_of(t: TruthRow) -> list[str]:
    return list(_parsed(tuple(t.options or ()))[0])


def keyed_index(t: TruthRow) -> int | None:
    """The 0-based index of the keyed option, None when the ground truth is no option letter."""
    letters = option_letters_of(t)
    gt = str(t.ground_truth).strip().upper()
    return letters.index(gt) if gt in letters else None


def option_values(t: TruthRow) -> list[float] | None:
    """Every option's number (special options: inf), None unless every option other than a
    special one is a number."""
    v = _parsed(tuple(t.options or ()))[2]
    return None if v is None else list(v)


def _words(text: str) -> frozenset[str]:
    return frozenset(words(text))


def _argmax_key(counts: Mapping, default=None):
    """The most frequent key (ties: the smallest); ``default`` when empty."""
    return min(counts, key=lambda k: (-counts[k], k)) if counts else default


def complement_of(attack: str) -> str:
    """The name of attack ``attack``'s complement cell (module docstring: two-sided)."""
    return COMPLEMENT + attack


def base_attack(name: str) -> str:
    """The attack a cell name scores: ``X`` for ``X`` and for its complement ``not-X``."""
    return name[len(COMPLEMENT):] if is_complement(name) else name


def is_complement(name: str) -> bool:
    """Whether a cell name is an attack's complement (``not-X``)."""
    return name.startswith(COMPLEMENT) and name[len(COMPLEMENT):] in ATTACKS


def complement_scores(rows: Sequence[TruthRow], scores: np.ndarray) -> np.ndarray:
    """Per row, the complement strategy's score (module docstring): on a multiple-choice row of
    ``k >= 2`` options the attack answered with score ``s``, ``(1 - s) / (k - 1)`` (the mean over
    the ``k - 1`` options it did not pick); NaN elsewhere (numbers: one-sided)."""
    out = np.full(len(rows), np.nan)
    for i, t in enumerate(rows):
        k = len(t.options or ())
        if t.kind == ANSWER_MCQ and k >= 2 and not np.isnan(scores[i]):
            out[i] = (1.0 - scores[i]) / (k - 1)
    return out


# =======================================================================================
# the attacks: fit(train rows of one cell) -> answer(row) -> response text or None
# =======================================================================================
Answerer = Callable[[TruthRow], "str | None"]


def _letter(t: TruthRow, index: int | None) -> str | None:
    letters = option_letters_of(t)
    return letters[index] if index is not None and 0 <= index < len(letters) else None


def fit_constant(train: Sequence[TruthRow]) -> Answerer:
    mcq = Counter(str(t.ground_truth).strip().upper() for t in train if t.kind == ANSWER_MCQ)
    texts = Counter(normalize_text(t.ground_truth) for t in train if t.kind == ANSWER_TEXT)
    names = {normalize_text(t.ground_truth): str(t.ground_truth) for t in train if t.kind == ANSWER_TEXT}
    nums = [python_float(t.ground_truth) for t in train if t.kind not in (ANSWER_MCQ, ANSWER_TEXT)]
    counting = any(t.is_counting for t in train)
    value = best_constant(nums, counting)
    letter, text = _argmax_key(mcq), _argmax_key(texts)

    def answer(t: TruthRow) -> str | None:
        if t.kind == ANSWER_MCQ:
            return letter if letter in option_letters_of(t) else None
        if t.kind == ANSWER_TEXT:
            return names.get(text) if text is not None else None
        return None if value is None else format_number(value)
    return answer


def _items(text: str) -> list[tuple[int | None, str]]:
    parts = [normalize_text(p) for p in str(text).split(",")]
    return [(None, parts[0])] if len(parts) == 1 else list(enumerate(parts))


def fit_option_label(train: Sequence[TruthRow]) -> Answerer:
    offered: Counter = Counter()
    won: Counter = Counter()
    for t in train:
        if t.kind != ANSWER_MCQ or not t.options or option_values(t) is not None:
            continue
        key = keyed_index(t)
        for i, text in enumerate(option_texts(t)):
            for item in _items(text):
                offered[item] += 1
                won[item] += int(i == key)

    def answer(t: TruthRow) -> str | None:
        if t.kind != ANSWER_MCQ or not t.options or option_values(t) is not None:
            return None
        k = len(t.options)
        scores, seen = [], False
        for text in option_texts(t):
            items = _items(text)
            seen = seen or any(offered[it] for it in items)
            scores.append(float(np.mean([(won[it] + 1.0 / k) / (offered[it] + 1.0) for it in items])))
        return _letter(t, int(np.argmax(scores))) if seen else None
    return answer


def fit_option_rank(train: Sequence[TruthRow]) -> Answerer:
    ranks = Counter()
    for t in train:
        order, key = option_order(t.options), keyed_index(t)
        if t.kind == ANSWER_MCQ and order is not None and key is not None:
            ranks[order.index(key)] += 1
    best = _argmax_key(ranks)

    def answer(t: TruthRow) -> str | None:
        order = option_order(t.options) if t.kind == ANSWER_MCQ else None
        if order is None or best is None:
            return None
        return _letter(t, order[min(best, len(order) - 1)])
    return answer


def _row_value(t: TruthRow) -> float | None:
    """The row's numeric answer: its ground truth, or the keyed option's number."""
    if t.kind == ANSWER_MCQ:
        v, key = option_values(t), keyed_index(t)
        return None if v is None or key is None or not math.isfinite(v[key]) else v[key]
    return python_float(t.ground_truth) if t.kind != ANSWER_TEXT else None


def nearest_option(values: Sequence[float] | None, target: float | None) -> int | None:
    """The index of the option nearest ``target``: in ratio (``|log(x / target)|``) among the
    positive options when ``target`` is positive, else by difference among the finite ones (a
    typical distance of 0 m: two objects that touch); None when ``target`` is not a finite number
    or no option can be compared (issue #43: total over zero, negative, NaN and inf). Ties: the
    first option."""
    if values is None or target is None or not math.isfinite(target):
        return None
    if target > 0:
        dist = [abs(math.log(x / target)) if math.isfinite(x) and x > 0 else math.inf for x in values]
    else:
        dist = [abs(x - target) if math.isfinite(x) else math.inf for x in values]
    if not dist or not math.isfinite(min(dist)):
        return None
    return int(np.argmin(dist))


def fit_numeric_prior(train: Sequence[TruthRow]) -> Answerer:
    per: dict[frozenset, list[float]] = defaultdict(list)
    every = []
    counting = any(t.is_counting for t in train)
    for t in train:
        v = _row_value(t)
        if v is not None:
            per[_words(t.question)].append(v)
            every.append(v)
    priors = {k: best_constant(vs, counting) for k, vs in per.items()}
    fallback = best_constant(every, counting)

    def answer(t: TruthRow) -> str | None:
        value = priors.get(_words(t.question), fallback)
        if value is None:
            return None
        if t.kind == ANSWER_MCQ:
            return _letter(t, nearest_option(option_values(t), value))
        return None if t.kind == ANSWER_TEXT else format_number(value)
    return answer


def _median_answerer(per: Mapping[frozenset, float], fallback: float | None, by_label: bool) -> Answerer:
    def answer(t: TruthRow) -> str | None:
        value = per.get(_words(t.question), fallback) if by_label else fallback
        if value is None or t.kind == ANSWER_TEXT:
            return None
        if t.kind == ANSWER_MCQ:
            return _letter(t, nearest_option(option_values(t), value))
        return format_number(value)
    return answer


def _finite_values(train: Sequence[TruthRow]) -> list[tuple[TruthRow, float]]:
    out = []
    for t in train:
        v = _row_value(t)
        if v is not None and math.isfinite(v):
            out.append((t, v))
    return out


def fit_training_median(train: Sequence[TruthRow]) -> Answerer:
    """``training-median``: always the median answer of the type in the training folds (numeric
    options: the option nearest it). What a test-set-trained random forest scores on numbers
    (TsT-RF, vision-x-nyu/test-set-training: issue #43), shown beside MRA chance."""
    vals = [v for _, v in _finite_values(train)]
    return _median_answerer({}, float(np.median(vals)) if vals else None, False)


def fit_label_median(train: Sequence[TruthRow]) -> Answerer:
    """``label-median``: per label / label pair (the question's words as a set, as
    ``numeric-prior``), the median training answer, else the type's: the per-label median table a
    language model knows (issue #43)."""
    per: dict[frozenset, list[float]] = defaultdict(list)
    every = []
    for t, v in _finite_values(train):
        per[_words(t.question)].append(v)
        every.append(v)
    return _median_answerer({k: float(np.median(v)) for k, v in per.items()},
                            float(np.median(every)) if every else None, True)


def _special_index(t: TruthRow) -> int | None:
    return _parsed(tuple(t.options or ()))[3]


def fit_nota_position(train: Sequence[TruthRow]) -> Answerer:
    offsets = Counter()
    for t in train:
        s, key = _special_index(t), keyed_index(t)
        if t.kind == ANSWER_MCQ and s is not None and key is not None:
            offsets[key - s] += 1
    best = _argmax_key(offsets)

    def answer(t: TruthRow) -> str | None:
        s = _special_index(t) if t.kind == ANSWER_MCQ else None
        if s is None or best is None:
            return None
        i = s + best
        return _letter(t, i if 0 <= i < len(t.options) else s)
    return answer


def _length_order(texts: Sequence[str]) -> list[int]:
    """Option indices by text length, shortest first (ties in option order)."""
    return sorted(range(len(texts)), key=lambda i: (len(texts[i]), i))


def fit_answer_length(train: Sequence[TruthRow]) -> Answerer:
    ranks = Counter()
    for t in train:
        key = keyed_index(t)
        if t.kind == ANSWER_MCQ and t.options and key is not None:
            ranks[_length_order(option_texts(t)).index(key)] += 1
    best = _argmax_key(ranks)

    def answer(t: TruthRow) -> str | None:
        if t.kind != ANSWER_MCQ or not t.options or best is None:
            return None
        order = _length_order(option_texts(t))
        return _letter(t, order[min(best, len(order) - 1)])
    return answer


def fit_world_prior(train: Sequence[TruthRow]) -> Answerer:
    """The ``world-prior`` attack (module docstring); ``train`` is not used: the prior was fitted
    on real scans (vistest.eval.world_prior)."""

    def answer(t: TruthRow) -> str | None:
        if t.kind == ANSWER_TEXT:
            return None
        value = world_prior.prior_value(t.question_type, t.question, t.label)
        if value is None:
            pick = world_prior.prior_choice(t.question, option_texts(t)) if t.kind == ANSWER_MCQ and t.options else None
            return None if pick is None else _letter(t, pick)
        if t.kind != ANSWER_MCQ:
            return format_number(value)
        return _letter(t, nearest_option(option_values(t), value))
    return answer


FITTERS: Mapping[str, Callable[[Sequence[TruthRow]], Answerer]] = {
    CONSTANT: fit_constant, OPTION_LABEL: fit_option_label, OPTION_RANK: fit_option_rank,
    NUMERIC_PRIOR: fit_numeric_prior, NOTA_POSITION: fit_nota_position, ANSWER_LENGTH: fit_answer_length,
    WORLD_PRIOR: fit_world_prior, TRAINING_MEDIAN: fit_training_median, LABEL_MEDIAN: fit_label_median}


# =======================================================================================
# scoring every row, and the cells
# =======================================================================================
def cell_key(t: TruthRow) -> str:
    """The cell a row is judged in: its type, with its reformulation when not the base one."""
    return t.question_type if t.reformulation == "base" else f"{t.question_type} [{t.reformulation}]"


@dataclass(frozen=True)
class RowScores:
    """Per row (in ``rows`` order): ``chance`` and, per attack, the held-out score (NaN where
    the attack does not apply); ``errors``: each attack that raised on a cell, in words (a bug,
    :func:`_attack_failed`)."""

    rows: tuple[TruthRow, ...]
    chance: np.ndarray
    scores: Mapping[str, np.ndarray]
    errors: tuple[str, ...] = ()


def attack_rows(truths: Sequence[TruthRow], budget: str | None = None) -> list[TruthRow]:
    """The rows the attacks judge: the scorable real rows at ``budget`` (default: the largest)."""
    rows = [t for t in truths if t.scorable]
    if not rows:
        return []
    if budget is None:
        budget = max({t.budget for t in rows}, key=budget_sort_key)
    return [t for t in rows if t.budget == budget]


def score_rows(rows: Sequence[TruthRow], folds: Folds, protocol: Protocol = PROTOCOLS["revsi"],
               attacks: Sequence[str] = ATTACKS) -> RowScores:
    """Every attack's held-out score on every row, and each attack's complement ``not-X`` on the
    multiple-choice rows (module docstring: two-sided)."""
    rows = tuple(rows)
    index = {t.key: i for i, t in enumerate(rows)}
    cells: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(rows):
        cells[cell_key(t)].append(i)
    chance = np.zeros(len(rows))
    for idx in cells.values():
        chance[idx] = chance_scores([rows[i] for i in idx])
    scores = {a: np.full(len(rows), np.nan) for a in attacks}
    errors: list[str] = []

    def put(attack: str, t: TruthRow, text: str | None) -> None:
        if text is not None:
            scores[attack][index[t.key]] = score_answer(protocol, t.kind, text, t.ground_truth)

    split = folds.split(rows)
    for attack in attacks:
        if attack == LEARNED_ATTACK:
            continue
        for train, test in split:
            train_by: dict[str, list[TruthRow]] = defaultdict(list)
            for t in train:
                train_by[cell_key(t)].append(t)
            test_by: dict[str, list[TruthRow]] = defaultdict(list)
            for t in test:
                test_by[cell_key(t)].append(t)
            for cell, ts in test_by.items():
                try:
                    fit = FITTERS[attack](train_by.get(cell, []))
                    for t in ts:
                        put(attack, t, fit(t))
                except Exception as e:  # noqa: BLE001  (a bug of one attack: reported, never fatal)
                    _attack_failed(attack, cell, e, errors)
    if LEARNED_ATTACK in attacks and rows:
        try:
            for t, p in zip(rows, fit_learned(rows, folds).predictions):
                put(LEARNED_ATTACK, t, p.prediction)
        except Exception as e:  # noqa: BLE001
            _attack_failed(LEARNED_ATTACK, "every type", e, errors)
    for attack in attacks:
        comp = complement_scores(rows, scores[attack])
        if not np.isnan(comp).all():
            scores[complement_of(attack)] = comp
    return RowScores(rows, chance, scores, tuple(errors))


STRICT_ENV = "VISTEST_STRICT_ATTACKS"  # "1": an attack's exception propagates (the test suite sets it)


def _attack_failed(attack: str, cell: str, error: Exception, errors: list[str]) -> None:
    """An attack raised on one cell (a bug in the attack, issue #43): with ``VISTEST_STRICT_ATTACKS=1``
    (the tests) re-raised with its traceback; otherwise its rows stay unanswered (NaN: the
    attack does not apply there) and the error is recorded for the report, so that a check of
    the generator never aborts a user's run."""
    if os.environ.get(STRICT_ENV) == "1":
        raise error
    text = f"{attack} on {cell}: {type(error).__name__}: {error}"
    if text not in errors:
        errors.append(text)


@dataclass(frozen=True)
class AttackCell:
    """One attack on one type (or a pool of small types): ``n`` rows it applies to, over
    ``scenes`` scenes; mean ``score`` and ``chance``; ``ci``: 95% interval of the gap; ``judged``
    when ``n >= min_judged``; ``pooled``: the types of a pool (empty for one type)."""

    attack: str
    question_type: str
    n: int
    scenes: int
    score: float
    chance: float
    ci: tuple[float, float]
    judged: bool
    margin: float
    pooled: tuple[str, ...] = ()
    null: float | None = None

    @property
    def gap(self) -> float:
        return self.score - self.chance

    @property
    def excess(self) -> float:
        """The gap judged: ``gap`` for an attack; for a complement with a held-out chance
        (``null``: its mean gap on re-drawn answer keys, module docstring), ``gap - null``."""
        return self.gap - self.null if self.complement and self.null is not None else self.gap

    @property
    def complement(self) -> bool:
        """Whether this is an attack's complement cell ``not-X`` (module docstring: two-sided)."""
        return is_complement(self.attack)

    @property
    def above(self) -> bool:
        """Judged and more than ``margin`` above chance: a blind pass (the failed target; for a
        complement cell, its attack far below its held-out chance: :attr:`excess`)."""
        return self.judged and self.excess > self.margin + 1e-9

    @property
    def below(self) -> bool:
        """Judged and more than ``margin`` below chance (reported, not failed: module docstring)."""
        return self.judged and self.gap < -self.margin - 1e-9

    @property
    def ok(self) -> bool:
        """Not judged, or at most ``margin`` above chance (module docstring)."""
        return not self.above

    @property
    def margin_in_ci(self) -> bool:
        """``chance + margin`` lies inside the 95% interval of the judged gap (:attr:`excess`)."""
        shift = self.gap - self.excess
        return self.ci[0] - shift <= self.margin <= self.ci[1] - shift

    def to_dict(self) -> dict:
        return {"attack": self.attack, "question_type": self.question_type, "n": self.n, "scenes": self.scenes,
                "score": self.score, "chance": self.chance, "gap": self.gap, "ci95": list(self.ci),
                "held_out_chance_gap": self.null, "judged_gap": self.excess,
                "judged": self.judged, "ok": self.ok, "above": self.above, "below": self.below,
                "margin_in_ci95": self.margin_in_ci, "complement": self.complement, "pooled": list(self.pooled)}


def gap_interval(gaps: np.ndarray, scenes: Sequence[str]) -> tuple[float, float]:
    """95% interval of the mean of ``gaps`` (per row), scenes as clusters (module docstring)."""
    n = len(gaps)
    if n == 0:
        return (math.nan, math.nan)
    mean = float(gaps.mean())
    groups: dict[str, float] = defaultdict(float)
    for g, s in zip(gaps, scenes):
        groups[s] += float(g) - mean
    s_n = len(groups)
    if s_n >= 2:
        se = math.sqrt(s_n / (s_n - 1) * sum(e * e for e in groups.values())) / n
    else:
        se = float(gaps.std(ddof=1)) / math.sqrt(n) if n > 1 else math.inf
    return (mean - Z95 * se, mean + Z95 * se)


def _cell(attack: str, name: str, idx: list[int], rs: RowScores, min_judged: int, margin: float,
          pooled: tuple[str, ...] = ()) -> AttackCell | None:
    s = rs.scores[attack][idx]
    ok = ~np.isnan(s)
    if not ok.any():
        return None
    use = [i for i, k in zip(idx, ok) if k]
    gaps = s[ok] - rs.chance[use]
    scenes = [rs.rows[i].scene_id for i in use]
    return AttackCell(attack, name, len(use), len(set(scenes)), float(s[ok].mean()), float(rs.chance[use].mean()),
                      gap_interval(gaps, scenes), len(use) >= min_judged, margin, pooled)


def attack_cells(rs: RowScores, min_judged: int = DEFAULT_MIN_JUDGED, margin: float = DEFAULT_MARGIN
                 ) -> tuple[AttackCell, ...]:
    """Per attack: a cell per type with at least ``min_judged`` rows, and one pooled cell of
    the types with fewer (module docstring)."""
    by: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(rs.rows):
        by[cell_key(t)].append(i)
    out = []
    for attack in rs.scores:
        small: list[str] = []
        for name in sorted(by):
            applies = int((~np.isnan(rs.scores[attack][by[name]])).sum())
            if applies and applies < min_judged:
                small.append(name)
                continue
            c = _cell(attack, name, by[name], rs, min_judged, margin)
            if c is not None:
                out.append(c)
        if small:
            idx = [i for name in small for i in by[name]]
            c = _cell(attack, f"pooled (<{min_judged}): " + ", ".join(small), idx, rs, min_judged, margin,
                      tuple(small))
            if c is not None:
                out.append(c)
    return tuple(out)


@dataclass(frozen=True)
class AttackReport:
    """Every attack held out on a set of rows: the ``folds`` (their scheme and warning), the
    ``budget`` judged, the ``cells``, and the per-row scores they came from."""

    folds: Folds
    budget: str
    cells: tuple[AttackCell, ...]
    row_scores: RowScores

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.cells)

    @property
    def failing(self) -> tuple[AttackCell, ...]:
        return tuple(c for c in self.cells if not c.ok)

    def to_dict(self) -> dict:
        return {"holdout": self.folds.scheme, "warning": self.folds.warning, "budget": self.budget,
                "all_within_margin": self.ok, "cells": [c.to_dict() for c in self.cells]}

    def table(self) -> Table:
        note = (f"Held out ({self.folds.scheme}), budget {self.budget}; gap = score - chance in points with its 95% "
                f"interval (scenes as clusters); two-sided: 'not-X' is attack X's complement (uniformly one of the "
                f"options X does not pick: per row 0 when X is right, 1/(k-1) when wrong), judged like X; numbers "
                f"(MRA) have no complement (one-sided); 'held-out chance': a complement's mean gap with the "
                f"answer keys re-drawn within the type's balances (what holding out alone gives), judged on gap "
                f"minus that; within: the judged gap <= margin (NO: a blind pass), "
                f"'below': more than the margin below chance (reported); 'margin in CI': chance + margin lies "
                f"inside the interval" + (f". Warning: {self.folds.warning}" if self.folds.warning else ""))
        rows = tuple((c.question_type, c.attack, str(c.n), str(c.scenes), f"{c.score:.3f}", f"{c.chance:.3f}",
                      f"{100 * c.gap:+.1f}", f"[{100 * c.ci[0]:+.1f}, {100 * c.ci[1]:+.1f}]",
                      "-" if c.null is None else f"{100 * c.null:+.1f}",
                      "yes" if c.margin_in_ci else "no",
                      ("NO" if c.above else "ok, below" if c.below else "ok") if c.judged else "not judged")
                     for c in sorted(self.cells, key=_cell_order))
        title = ("Blind attacks vs chance (fitted on another set)" if isinstance(self.folds, TransferFolds)
                 else "Blind attacks vs chance (held out)")
        return Table(title, note,
                     ("type", "attack", "n", "scenes", "score", "chance", "gap", "95% CI", "held-out chance",
                      "margin in CI", "within"),
                     rows, 1)


def _cell_order(c) -> tuple:
    return (c.pooled != (), c.question_type, ATTACKS.index(base_attack(c.attack)), is_complement(c.attack))


@dataclass(frozen=True)
class SeedCell:
    """One (attack, type) judged on several fold seeds: its ``gaps`` (the judged gap
    :attr:`AttackCell.excess`, one per seed, in ``seeds`` order; NaN where that seed gave no
    cell), the largest ``n``, ``judged`` on some seed, ``pooled`` types. Judged on the mean gap
    (repeated cross-validation: one fold split's gap at 20-50 rows moves by +-5 points from
    split to split); the worst seed and the seeds above the margin are reported."""

    attack: str
    question_type: str
    n: int
    seeds: tuple[int, ...]
    gaps: tuple[float, ...]
    judged: bool
    margin: float
    pooled: tuple[str, ...] = ()

    @property
    def mean(self) -> float:
        return float(np.nanmean(self.gaps))

    @property
    def complement(self) -> bool:
        """Whether this is an attack's complement cell ``not-X`` (module docstring: two-sided)."""
        return is_complement(self.attack)

    @property
    def worst(self) -> float:
        """The largest gap over the seeds (the upper side the target judges)."""
        return float(np.nanmax(self.gaps))

    @property
    def seeds_above(self) -> tuple[int, ...]:
        """The fold seeds on which the judged cell is more than ``margin`` above chance."""
        return tuple(s for s, g in zip(self.seeds, self.gaps) if self.judged and g > self.margin + 1e-9)

    @property
    def above(self) -> bool:
        """Judged and its mean gap over the seeds more than ``margin`` above chance (the failed target)."""
        return self.judged and self.mean > self.margin + 1e-9

    @property
    def ok(self) -> bool:
        """Not judged, or its mean gap over the seeds at most ``margin`` (module docstring)."""
        return not self.above

    def to_dict(self) -> dict:
        return {"attack": self.attack, "question_type": self.question_type, "n": self.n,
                "fold_seeds": list(self.seeds), "gaps": [None if math.isnan(g) else g for g in self.gaps],
                "mean_gap": self.mean, "worst_gap": self.worst, "judged": self.judged, "ok": self.ok,
                "above": self.above, "complement": self.complement,
                "seeds_above": list(self.seeds_above), "pooled": list(self.pooled)}


def across_seeds(reports: Sequence[AttackReport], seeds: Sequence[int]) -> tuple[SeedCell, ...]:
    """Per (attack, type): its gap on each report (one per fold seed in ``seeds``), worst and mean."""
    keys: dict[tuple[str, str], AttackCell] = {}
    for r in reports:
        for c in r.cells:
            keys.setdefault((c.question_type, c.attack), c)
    out = []
    for (qtype, attack), c0 in keys.items():
        cells = [{(c.question_type, c.attack): c for c in r.cells}.get((qtype, attack)) for r in reports]
        gaps = tuple(math.nan if c is None else c.excess for c in cells)
        out.append(SeedCell(attack, qtype, max(c.n for c in cells if c is not None), tuple(seeds), gaps,
                            any(c is not None and c.judged for c in cells), c0.margin, c0.pooled))
    return tuple(sorted(out, key=_cell_order))


def seeds_table(cells: Sequence[SeedCell], scheme: str) -> Table:
    """The judged cells of :func:`across_seeds` as a table: the gap per fold seed, mean, worst."""
    seeds = cells[0].seeds if cells else ()
    note = (f"Held out ({scheme}) on fold seeds {', '.join(map(str, seeds))}; gap = score - chance in points per "
            f"fold seed; two-sided ('not-X': attack X's complement, its gap less its held-out chance; numbers "
            f"(MRA): one-sided); judged on the "
            f"mean over the seeds: within target when at most the margin (NO: a blind "
            f"pass); 'seeds above': the fold seeds on which the gap alone is above the margin")
    rows = tuple((c.question_type, c.attack, str(c.n), " ".join(f"{100 * g:+.1f}" for g in c.gaps),
                  f"{100 * c.mean:+.1f}", f"{100 * c.worst:+.1f}", " ".join(map(str, c.seeds_above)) or "-",
                  "NO" if c.above else "ok")
                 for c in cells if c.judged)
    return Table("Blind attacks over fold seeds (held out)", note,
                 ("type", "attack", "n", "gap per seed", "mean", "worst", "seeds above", "within"), rows, 1)


def blind_attacks(truths: Sequence[TruthRow], folds: Folds, protocol: Protocol = PROTOCOLS["revsi"],
                  budget: str | None = None, attacks: Sequence[str] = ATTACKS,
                  min_judged: int = DEFAULT_MIN_JUDGED, margin: float = DEFAULT_MARGIN,
                  permutations: int = 0, seed: int = 0) -> AttackReport:
    """Every attack on the scorable real rows at ``budget`` (default: the largest), held out
    with ``folds`` (built on those rows' scenes or groups; vistest.eval.baselines.holdout_folds);
    with ``permutations``, every complement judged against its held-out chance
    (:func:`held_out_chance`, seeded with ``seed``; 0: against ``1/k``, as the balancing's
    rounds score them)."""
    rows = attack_rows(truths, budget)
    label = rows[0].budget if rows else (budget or "all")
    rs = score_rows(rows, folds, protocol, attacks)
    cells = attack_cells(rs, min_judged, margin)
    if permutations and rows:
        null = held_out_chance(rows, folds, protocol, attacks, min_judged, margin, permutations, seed)
        cells = tuple(dataclasses.replace(c, null=null.get((c.question_type, c.attack))) if c.complement else c
                      for c in cells)
    return AttackReport(folds, label, cells, rs)


@dataclass(frozen=True)
class TransferFolds(Folds):
    """Two folds by *set*: fold 0 the rows answered, fold 1 another set's rows the attacks are
    fitted on (:func:`transfer_attacks`); ``source``: that set in words."""

    source: str = "another set"

    @property
    def scheme(self) -> str:
        return f"fitted on {self.source} ({sum(f == 1 for f in self.fold_of.values())} scenes), never on these rows"


def transfer_attacks(rows: Sequence[TruthRow], train: Sequence[TruthRow], protocol: Protocol = PROTOCOLS["revsi"],
                     attacks: Sequence[str] = ATTACKS, min_judged: int = DEFAULT_MIN_JUDGED,
                     margin: float = DEFAULT_MARGIN, source: str = "another set") -> AttackReport:
    """Every attack fitted on ``train`` (another set of questions on *other* scenes: a blind
    model trained on other data of the same generator, the test-set-training scenario of
    VSI-Bench-Debiased) and scored on ``rows``, judged two-sided against ``1/k`` (no held-out
    chance: the two sets' answer keys are independent, so no fold of ``rows`` is anti-correlated
    with the training one). Chance of a number: from ``rows`` alone. Raises ValueError when the
    two sets share a scene or a question (id, variant, budget)."""
    rows, train = list(rows), list(train)
    shared = {t.scene_id for t in rows} & {t.scene_id for t in train}
    if shared:
        raise ValueError(f"transfer_attacks: the sets share scene(s) {', '.join(sorted(shared)[:3])}")
    twice = {t.key for t in rows} & {t.key for t in train}
    if twice:
        raise ValueError(f"transfer_attacks: question id(s) in both sets: {', '.join(sorted(k[0] for k in twice)[:3])}")
    fold_of = {t.scene_id: 0 for t in rows} | {t.scene_id: 1 for t in train}
    folds = TransferFolds(HOLDOUT_SCENE, fold_of, 2, len(fold_of), source=source)
    both = score_rows(rows + train, folds, protocol, attacks)
    n = len(rows)
    chance = np.zeros(n)
    cells: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(rows):
        cells[cell_key(t)].append(i)
    for idx in cells.values():
        chance[idx] = chance_scores([rows[i] for i in idx])
    rs = RowScores(tuple(rows), chance, {a: s[:n] for a, s in both.scores.items()}, both.errors)
    label = rows[0].budget if rows else "all"
    return AttackReport(folds, label, attack_cells(rs, min_judged, margin), rs)


def option_features(texts: Sequence[str], values: Sequence[float] | None = None) -> list[list[tuple]]:
    """Per option (``texts`` in option order), the features a set may balance besides the
    letters: its items as option-label reads them (``("item", place or None, text)``, :func:`_items`),
    the rank of its text length (``("length", rank)``, :func:`_length_order`) and, with
    ``values`` (options that are all numbers), the rank of its value (``("value", rank)``,
    option-rank's). What :func:`permuted_keys` keeps balanced, and what the generator
    counterbalances (vistest.generate.balance.option_items)."""
    out = [[("item", *it) for it in _items(text)] for text in texts]
    for r, j in enumerate(_length_order(texts)):
        out[j].append(("length", r))
    if values is not None:
        for r, j in enumerate(sorted(range(len(values)), key=lambda i: values[i])):
            out[j].append(("value", r))
    return out


def permuted_keys(rows: Sequence[TruthRow], rng: np.random.Generator, sweeps: int = NULL_SWEEPS) -> list[TruthRow]:
    """``rows`` with the answer keys of every cell's multiple-choice rows (:func:`cell_key`)
    re-drawn at random *within the set's design* (the null of :func:`held_out_chance`): a
    restricted randomization, as inference after rerandomization restricts it to the
    assignments its design accepts (Morgan & Rubin, "Rerandomization to improve covariate balance
    in experiments", Annals of Statistics 40, 2012). Each move swaps the keyed letters of two
    rows of the cell, so every letter keeps its count exactly; a move is kept only while the
    option items' wins (each item's wins minus its offers / k, summed over the cell), the keyed
    option's text-length ranks and its value ranks (numeric options) each stay no less balanced
    than the set's own (their squared norms at most the set's). A set that balances none of them
    gets a plain permutation of its letters; one whose generator balanced the items, the value
    ranks (docs/generate.md) keeps that balance, so holding out reproduces what the balance does
    to the attacks. ``sweeps`` x n proposals per cell. Other
    rows are returned as they are."""
    out = list(rows)
    by: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(rows):
        if t.kind == ANSWER_MCQ and keyed_index(t) is not None:
            by[cell_key(t)].append(i)
    for idx in by.values():
        feats = [option_features(option_texts(rows[i]), option_values(rows[i])) for i in idx]
        letters = [option_letters_of(rows[i]) for i in idx]
        key = [keyed_index(rows[i]) for i in idx]
        imbalance: dict = defaultdict(float)

        def move(m: int, j: int, sign: float) -> None:
            for f in feats[m][j]:
                imbalance[f] += sign

        for m, options in enumerate(feats):
            move(m, key[m], 1.0)
            for j in range(len(options)):
                move(m, j, -1.0 / len(options))

        norm: dict[str, float] = defaultdict(float)  # per kind ("item", "length", "value"): squared norm
        for f, v in imbalance.items():
            norm[f[0]] += v * v
        limit = {g: v + 1e-9 for g, v in norm.items()}
        n = len(idx)
        for _ in range(sweeps * n):
            a, b = int(rng.integers(n)), int(rng.integers(n))
            la, lb = letters[a][key[a]], letters[b][key[b]]
            if la == lb or la not in letters[b] or lb not in letters[a]:
                continue
            ja, jb = letters[a].index(lb), letters[b].index(la)
            touched = set((*feats[a][key[a]], *feats[b][key[b]], *feats[a][ja], *feats[b][jb]))
            before = {f: imbalance[f] for f in touched}
            move(a, key[a], -1.0), move(b, key[b], -1.0), move(a, ja, 1.0), move(b, jb, 1.0)
            delta: dict[str, float] = defaultdict(float)  # only the touched features' squares change
            for f in touched:
                delta[f[0]] += imbalance[f] ** 2 - before[f] ** 2
            if all(norm[g] + d <= limit[g] for g, d in delta.items()):
                key[a], key[b] = ja, jb
                for g, d in delta.items():
                    norm[g] += d
            else:
                imbalance.update(before)
        for m, i in enumerate(idx):
            out[i] = dataclasses.replace(rows[i], ground_truth=letters[m][key[m]])
    return out


def held_out_chance(rows: Sequence[TruthRow], folds: Folds, protocol: Protocol = PROTOCOLS["revsi"],
                    attacks: Sequence[str] = ATTACKS, min_judged: int = DEFAULT_MIN_JUDGED,
                    margin: float = DEFAULT_MARGIN, permutations: int = NULL_PERMUTATIONS,
                    seed: int = 0) -> dict[tuple[str, str], float]:
    """Per complement cell ``(type, not-X)``: its mean gap over ``permutations`` permuted answer
    keys (:func:`permuted_keys`, seeded with ``seed``), every attack held out with the same
    ``folds``: the complement's chance under holding out (module docstring)."""
    rng = np.random.default_rng([seed, 0x6E756C6C])
    gaps: dict[tuple[str, str], list[float]] = defaultdict(list)
    for _ in range(permutations):
        for c in attack_cells(score_rows(permuted_keys(rows, rng), folds, protocol, attacks), min_judged, margin):
            if c.complement:
                gaps[(c.question_type, c.attack)].append(c.gap)
    return {k: float(np.mean(v)) for k, v in gaps.items()}


def _protocol(protocol: str, truths: Sequence[TruthRow]) -> Protocol:
    """``protocol`` for ``truths`` (``auto``: from the question types; ``revsi`` when they mix
    ReVSI- and VSI-Bench-only types, as a generated ``--types all`` set does)."""
    from .metrics import resolve_protocol

    try:
        return resolve_protocol(protocol, {t.question_type for t in truths})
    except ScoreError:
        if protocol != "auto":
            raise
        return PROTOCOLS["revsi"]


def _write(report: AttackReport, output: str | os.PathLike | None) -> AttackReport:
    from ..atomic import write_atomic

    if output is not None:
        write_atomic(Path(output), json.dumps(report.to_dict(), indent=1) + "\n")
    return report


def run_attacks(run_dir: str | os.PathLike, holdout: str = HOLDOUT_AUTO, folds: int = DEFAULT_FOLDS, seed: int = 0,
                protocol: str = "auto", output: str | os.PathLike | None = None,
                permutations: int = NULL_PERMUTATIONS) -> AttackReport:
    """``vistest baseline``'s attack table: every attack on the ground truth of ``run_dir``, held
    out as its baseline (``holdout``, ``folds``, ``seed``: vistest.eval.baselines.holdout_folds),
    scored with ``protocol`` (:func:`_protocol`); ``output``: its JSON, written atomically;
    ``permutations``: complements against their held-out chance (0: against ``1/k``)."""
    truths = load_run_dir(run_dir).truths
    return _write(blind_attacks(truths, holdout_folds(truths, holdout, folds, seed), _protocol(protocol, truths),
                                permutations=permutations, seed=seed), output)


def run_transfer(run_dir: str | os.PathLike, train_dir: str | os.PathLike, protocol: str = "auto",
                 output: str | os.PathLike | None = None) -> AttackReport:
    """``vistest baseline --transfer-from``: every attack fitted on the ground truth of
    ``train_dir`` (another set, on other scenes: e.g. a lab's training split, or the generator run
    on other scans) and scored on that of ``run_dir`` (:func:`transfer_attacks`), each at its
    largest budget; ScoreError when the two share a scene or a question id."""
    rows = attack_rows(load_run_dir(run_dir).truths)
    train = attack_rows(load_run_dir(train_dir).truths)
    try:
        report = transfer_attacks(rows, train, _protocol(protocol, rows + train), source=str(train_dir))
    except ValueError as e:
        raise ScoreError(f"--transfer-from {train_dir}: {e} with {run_dir}; expected two sets on other scenes") from e
    return _write(report, output)
