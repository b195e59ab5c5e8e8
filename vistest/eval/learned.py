"""The learned blind model and bias pruning (``vistest baseline --model learned [--prune OUT]``).

The strongest blind baseline, in the style of test-set stress-testing (Brown et al., "Benchmark
designers should train on the test set", the method behind VSI-Bench-Debiased): models that see
the question text and options alone, trained on held-out folds of the ground truth itself
(vistest.eval.baselines.Folds: by scene by default), so every row is answered by a model that
never saw its question. What they find is what a model could learn without the video.

Models (scikit-learn; features are strings, vectorised per training fold):

* multiple choice: one logistic regression over (question, option) pairs, label "this option is
  right"; the answer is the option with the highest probability. Option features: its words,
  its letter position (with the question type, the reformulation and the option count), a
  "None of these" / "Cannot be determined" flag, its rank by value when it starts with a
  number, whether its text occurs in the question, and every (question word, option word)
  pair, which is how a word of the question can point at an answer;
* numbers: per question type, ridge regression of ``log1p(answer)`` on the question's words,
  word pairs and the budget (fewer than 3 training rows: their median);
* open texts: per question type, a logistic regression over the answers seen in training
  (one answer seen: that answer).

The **bias score** of a scorable row is how well the held-out model answers it without the
video, 0 at chance and 1 when certain: multiple choice, ``(p - 1/k) / (1 - 1/k)`` with ``p``
the probability it gives the correct option (normalised over the row's ``k`` options), so a
two-option and a four-option question compare; open texts, the probability it gives the
correct text; numbers, the MRA of its answer. A question group's bias is the mean over the
base question's rows (every budget); a group without a base row uses all its rows.

**Pruning** (iterative, as VSI-Bench-Debiased's bias pruning): fit, score, remove every group
whose bias exceeds the threshold (the most biased first, at most ``max_fraction`` of the groups
in all), refit on what is left, repeat until no group exceeds it or ``rounds`` rounds have run.
The blind score after pruning is the refitted held-out model's on the kept questions.

``vistest baseline`` (:func:`write_baseline`) writes a blind model's predictions (with ``bias``
per row for the learned model) and, with ``--prune``, the kept questions as question JSONL.
"""
from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import write_atomic
from ..budget.rows import TruthRow, question_record
from ..errors import InputError
from ..questions import ANSWER_MCQ, ANSWER_TEXT, option_letter, option_number
from ..answers import BASE, is_special_option, mean_relative_accuracy, normalize_text, python_float
from .baselines import (
    BASELINE_SOURCE,
    BLIND_MODELS,
    DEFAULT_FOLDS,
    HOLDOUT_AUTO,
    LEARNED,
    Folds,
    blind_predictions,
    format_number,
    holdout_folds,
    predictions_jsonl,
)
from ..budgets import budget_sort_key
from .records import Prediction, load_run_dir

DEFAULT_PRUNE_THRESHOLD = 0.5
DEFAULT_PRUNE_ROUNDS = 5
DEFAULT_MAX_FRACTION = 0.5
MIN_REGRESSION_ROWS = 3
_WORD_RE = re.compile(r"[a-z]+|\d+(?:\.\d+)?")


# ---------------------------------------------------------------------------------------
# features
# ---------------------------------------------------------------------------------------
def words(text: str) -> list[str]:
    """Lower-case words and numbers of a text, in order."""
    return _WORD_RE.findall(str(text).lower())


@lru_cache(maxsize=1 << 16)
def question_features(t: TruthRow) -> dict[str, float]:
    """Question words and word pairs, the question type, the reformulation and the budget."""
    ws = words(t.question)
    f = {f"q:{w}": 1.0 for w in ws}
    f.update({f"q2:{a}_{b}": 1.0 for a, b in zip(ws, ws[1:])})
    f.update({f"type:{t.question_type}": 1.0, f"ref:{t.reformulation}": 1.0, f"budget:{t.budget}": 1.0})
    return f


@lru_cache(maxsize=1 << 16)
def option_features(t: TruthRow) -> list[dict[str, float]]:
    """One feature dict per option of an MCQ row (module docstring); cached, as every fold
    reads the same rows (callers must not change the dicts)."""
    opts = list(t.options or ())
    k = len(opts)
    texts = [option_letter(o)[1] for o in opts]
    special = [is_special_option(o) for o in opts]
    values = [None if sp else option_number(x) for sp, x in zip(special, texts)]
    content = [v for sp, v in zip(special, values) if not sp]
    ranked = sorted(content) if len(content) > 1 and all(v is not None for v in content) else None
    qwords = sorted(set(words(t.question)))
    qnorm = f" {normalize_text(t.question)} "
    out = []
    for i, (o, text) in enumerate(zip(opts, texts)):
        ows = sorted(set(words(text)))
        ctx = (f"type:{t.question_type}", f"ref:{t.reformulation}", f"k:{k}")
        f = {f"o:{w}": 1.0 for w in ows}
        f.update({f"o:{w}|type:{t.question_type}": 1.0 for w in ows})
        f.update({f"pos:{i}": 1.0, f"last:{i == k - 1}": 1.0})
        f.update({f"pos:{i}|{c}": 1.0 for c in ctx})
        f.update({f"last:{i == k - 1}|{c}": 1.0 for c in ctx})
        if special[i]:
            kind = normalize_text(text)
            f.update({f"special:{kind}": 1.0, f"special:{kind}|ref:{t.reformulation}": 1.0,
                      f"special:{kind}|type:{t.question_type}": 1.0})
        if ranked is not None and values[i] is not None:
            r = ranked.index(values[i])
            f.update({f"rank:{r}": 1.0, f"rankdesc:{len(ranked) - 1 - r}": 1.0,
                      f"rank:{r}|type:{t.question_type}": 1.0})
        if normalize_text(text) and f" {normalize_text(text)} " in qnorm:
            f["in_question"] = 1.0
        f.update({f"q:{a}|o:{b}": 1.0 for a in qwords for b in ows})
        out.append(f)
    return out


# ---------------------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Answer:
    """A model's answer to one row: the response text and, for scorable rows, the bias score."""

    text: str
    bias: float | None


Model = Callable[[Sequence[TruthRow]], list[Answer]]  # answers a batch of rows, in order


def int32(x: Any) -> Any:
    """A scipy sparse matrix with 32-bit indices (liblinear refuses 64-bit ones)."""
    x = x.tocsr()
    x.indices = x.indices.astype(np.int32)
    x.indptr = x.indptr.astype(np.int32)
    return x


def _mcq_bias(t: TruthRow, letters: Sequence[str], p: np.ndarray) -> float | None:
    """``(p_correct - 1/k) / (1 - 1/k)`` for a scorable row (module docstring), else None."""
    if not t.scorable:
        return None
    chance = 1.0 / len(letters)
    gt = str(t.ground_truth).strip().upper()
    return ((float(p[letters.index(gt)]) if gt in letters else 0.0) - chance) / (1.0 - chance)


def _fit_mcq(train: Sequence[TruthRow]) -> Model:
    """The pairwise logistic regression over options (module docstring)."""
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    feats, labels = [], []
    for t in train:
        if t.scorable and t.kind == ANSWER_MCQ and t.options:
            gt = str(t.ground_truth).strip().upper()
            feats += option_features(t)
            labels += [int(option_letter(o)[0] == gt) for o in t.options]
    model = vec = None
    if len(set(labels)) == 2:
        vec = DictVectorizer()
        model = LogisticRegression(C=1.0, solver="liblinear", random_state=0, max_iter=1000)
        model.fit(int32(vec.fit_transform(feats)), labels)

    def answer(rows: Sequence[TruthRow]) -> list[Answer]:
        asked = [t for t in rows if t.options]
        probs = iter(())
        if model is not None and asked:
            feats = vec.transform([f for t in asked for f in option_features(t)])
            probs = iter(model.predict_proba(int32(feats))[:, 1])
        out = []
        for t in rows:
            if not t.options:
                out.append(Answer("", None))
                continue
            letters = [option_letter(o)[0] or o for o in t.options]
            p = np.array([next(probs) for _ in letters]) if model is not None else np.ones(len(letters))
            p = p / p.sum()
            out.append(Answer(letters[int(np.argmax(p))], _mcq_bias(t, letters, p)))
        return out
    return answer


def _question_matrix(rows: Sequence[TruthRow], vec: Any = None) -> tuple[Any, Any]:
    """(vectoriser, matrix) of the rows' question features; a new vectoriser when none is given."""
    from sklearn.feature_extraction import DictVectorizer

    feats = [question_features(t) for t in rows]
    if vec is None:
        vec = DictVectorizer()
        return vec, vec.fit_transform(feats)
    return vec, vec.transform(feats)


def _fit_number(train: Sequence[TruthRow]) -> Model:
    """Ridge regression of log1p(answer) on the question (module docstring)."""
    from sklearn.linear_model import Ridge

    rows = [t for t in train if t.scorable and python_float(t.ground_truth) is not None]
    y = np.array([python_float(t.ground_truth) for t in rows])
    model = vec = None
    if len(rows) >= MIN_REGRESSION_ROWS:
        vec, x = _question_matrix(rows)
        model = Ridge(alpha=1.0).fit(x, np.log1p(np.maximum(y, 0.0)))
    median = float(np.median(y)) if len(y) else None

    def answer(batch: Sequence[TruthRow]) -> list[Answer]:
        if model is not None:
            values: list[float | None] = list(np.expm1(model.predict(_question_matrix(batch, vec)[1])))
        else:
            values = [median] * len(batch)
        out = []
        for t, v in zip(batch, values):
            if v is None:
                out.append(Answer("", 0.0 if t.scorable else None))
                continue
            v = max(float(v), 0.0)
            if t.is_counting:
                v = float(round(v))
            gt = python_float(t.ground_truth) if t.scorable else None
            bias = None if not t.scorable else 0.0 if not gt else mean_relative_accuracy(v, gt)
            out.append(Answer(format_number(v), bias))
        return out
    return answer


def _fit_text(train: Sequence[TruthRow]) -> Model:
    """A logistic regression over the training answers (module docstring)."""
    from sklearn.linear_model import LogisticRegression

    rows = [t for t in train if t.scorable]
    names = {normalize_text(t.ground_truth): str(t.ground_truth) for t in rows}
    labels = [normalize_text(t.ground_truth) for t in rows]
    model = vec = None
    if len(set(labels)) >= 2:
        vec, x = _question_matrix(rows)
        model = LogisticRegression(C=1.0, max_iter=1000).fit(x, labels)

    def answer(batch: Sequence[TruthRow]) -> list[Answer]:
        if not labels:
            return [Answer("", 0.0 if t.scorable else None) for t in batch]
        if model is None:
            probs = [{labels[0]: 1.0} for _ in batch]
        else:
            probs = [dict(zip(model.classes_, p)) for p in model.predict_proba(_question_matrix(batch, vec)[1])]
        out = []
        for t, pr in zip(batch, probs):
            best = min(pr, key=lambda c: (-pr[c], c))
            out.append(Answer(names[best], float(pr.get(normalize_text(t.ground_truth), 0.0)) if t.scorable else None))
        return out
    return answer


def _fit(train: Sequence[TruthRow]) -> Model:
    """One model for every row: MCQ, and numbers and texts per (answer kind, question type)."""
    mcq = _fit_mcq(train)
    groups: dict[tuple[str, str], list[TruthRow]] = defaultdict(list)
    for t in train:
        if t.kind != ANSWER_MCQ:
            groups[(t.kind, t.question_type)].append(t)

    def answer(rows: Sequence[TruthRow]) -> list[Answer]:
        by: dict[tuple[str, str], list[int]] = defaultdict(list)
        for i, t in enumerate(rows):
            by[("mcq", "") if t.kind == ANSWER_MCQ else (t.kind, t.question_type)].append(i)
        out: list[Answer | None] = [None] * len(rows)
        for key, idx in by.items():
            fit = mcq if key[0] == "mcq" else (_fit_text if key[0] == ANSWER_TEXT else _fit_number)(groups.get(key, []))
            for i, a in zip(idx, fit([rows[i] for i in idx])):
                out[i] = a
        return out
    return answer


@dataclass(frozen=True)
class LearnedBlind:
    """The held-out learned model on a ground truth: ``predictions`` for every row (truth
    order), ``bias`` (truth key -> bias score) for the scorable real rows, the ``folds``."""

    folds: Folds
    predictions: tuple[Prediction, ...]
    bias: Mapping[tuple[str, str, str], float]

    def group_bias(self, truths: Sequence[TruthRow]) -> dict[tuple[str, str], float]:
        """(scene_id, group) -> the group's bias (module docstring), over groups with a scorable row."""
        rows: dict[tuple[str, str], list[TruthRow]] = defaultdict(list)
        for t in truths:
            if t.key in self.bias:
                rows[(t.scene_id, t.group_key)].append(t)
        out = {}
        for g, ts in rows.items():
            base = [t for t in ts if t.reformulation == BASE] or ts
            out[g] = float(np.mean([self.bias[t.key] for t in base]))
        return out


def fit_learned(truths: Sequence[TruthRow], folds: Folds) -> LearnedBlind:
    """Answer every row with the model fitted on the other folds (module docstring)."""
    answers: dict[tuple[str, str, str], Answer] = {}
    for train, rows in folds.split(truths):
        answers.update(zip((t.key for t in rows), _fit([t for t in train if t.scorable])(rows)))
    preds = tuple(Prediction(t.id, t.variant, t.budget, answers[t.key].text, f"{BASELINE_SOURCE} {LEARNED}", i)
                  for i, t in enumerate(truths, start=1))
    return LearnedBlind(folds, preds, {k: a.bias for k, a in answers.items() if a.bias is not None})


# ---------------------------------------------------------------------------------------
# pruning
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pruning:
    """Iterative bias pruning (module docstring). ``removed``: (scene_id, group, bias, round)
    in removal order; ``kept``: the truths of the kept groups; ``before``/``after``: the
    held-out learned model on every row and, refitted, on the kept rows."""

    threshold: float
    rounds: int
    removed: tuple[tuple[str, str, float, int], ...]
    kept: tuple[TruthRow, ...]
    n_groups: int
    before: LearnedBlind
    after: LearnedBlind

    def to_dict(self) -> dict:
        return {"threshold": self.threshold, "rounds": self.rounds, "groups": self.n_groups,
                "removed": [{"scene_id": s, "group_id": g, "bias": b, "round": r} for s, g, b, r in self.removed]}


def prune(truths: Sequence[TruthRow], folds_for: Callable[[Sequence[TruthRow]], Folds],
          threshold: float = DEFAULT_PRUNE_THRESHOLD, rounds: int = DEFAULT_PRUNE_ROUNDS,
          max_fraction: float = DEFAULT_MAX_FRACTION) -> Pruning:
    """Remove the most guessable question groups (module docstring); ``folds_for`` makes the
    folds of a set of truths (the same scheme before and after each round)."""
    if not 0.0 <= threshold <= 1.0:
        raise InputError(f"--prune-threshold: expected a bias score in [0, 1], got {threshold!r}")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise InputError(f"--prune-rounds: expected a positive integer, got {rounds!r}")
    keep = list(truths)
    first = current = fit_learned(keep, folds_for(keep))
    n_groups = len({(t.scene_id, t.group_key) for t in truths})
    budget = int(max_fraction * n_groups)
    removed: list[tuple[str, str, float, int]] = []
    ran = 0
    for r in range(1, rounds + 1):
        ran = r
        over = sorted(((b, g) for g, b in current.group_bias(keep).items() if b > threshold),
                      key=lambda x: (-x[0], x[1]))[: budget - len(removed)]
        if not over:
            break
        gone = {g for _, g in over}
        removed += [(g[0], g[1], b, r) for b, g in over]
        keep = [t for t in keep if (t.scene_id, t.group_key) not in gone]
        current = fit_learned(keep, folds_for(keep)) if keep else LearnedBlind(current.folds, (), {})
    return Pruning(threshold, ran, tuple(removed), tuple(keep), n_groups, first, current)


# ---------------------------------------------------------------------------------------
# vistest baseline
# ---------------------------------------------------------------------------------------
def pruned_questions(run_dir: str | os.PathLike, kept: Sequence[TruthRow]) -> str:
    """The kept questions as question JSONL (vistest.budget.rows.question_record of each
    question's record at its largest budget), in run order."""
    best: dict[tuple[str, str], TruthRow] = {}
    for t in kept:
        if not t.is_dummy:
            k = (t.scene_id, t.id)
            if k not in best or budget_sort_key(t.budget) > budget_sort_key(best[k].budget):
                best[k] = t
    first: dict[tuple[str, str], int] = {}
    for i, t in enumerate(kept):
        first.setdefault((t.scene_id, t.id), i)
    return "".join(json.dumps(question_record(t.fields), ensure_ascii=False) + "\n"
                   for t in sorted(best.values(), key=lambda t: (t.scene_id, first[(t.scene_id, t.id)])))


@dataclass(frozen=True)
class BaselineResult:
    """What ``vistest baseline`` wrote: ``n`` predictions, the ``folds``, and the pruning."""

    n: int
    folds: Folds
    pruning: Pruning | None = None
    files: tuple[str, ...] = field(default=())


def write_baseline(run_dir: str | os.PathLike, output: str | os.PathLike, model: str = "most-frequent",
                   holdout: str = HOLDOUT_AUTO, folds: int = DEFAULT_FOLDS, seed: int = 0,
                   prune_out: str | os.PathLike | None = None, threshold: float = DEFAULT_PRUNE_THRESHOLD,
                   rounds: int = DEFAULT_PRUNE_ROUNDS) -> BaselineResult:
    """``vistest baseline``: the blind ``model``'s held-out predictions for a run directory as
    plain JSONL (the learned model adds ``bias`` per scorable row) and, with ``prune_out``
    (learned model only), the questions pruning keeps. Files written atomically. (The attack
    table of ``vistest baseline`` is vistest.eval.attacks.run_attacks.)"""
    if model not in BLIND_MODELS + (LEARNED,):
        raise InputError(f"--model: expected one of {', '.join(BLIND_MODELS + (LEARNED,))}, got {model!r}")
    if prune_out is not None and model != LEARNED:
        raise InputError(f"--prune: pruning ranks questions by the learned model's bias; use --model {LEARNED}")
    truths = load_run_dir(run_dir).truths

    def folds_for(ts: Sequence[TruthRow]) -> Folds:
        return holdout_folds(ts, holdout, folds, seed)

    fs = folds_for(truths)
    pruning = None
    if model != LEARNED:
        text = predictions_jsonl(blind_predictions(truths, model, fs), model)
        n = len(truths)
    else:
        if prune_out is not None:
            pruning = prune(truths, folds_for, threshold, rounds)
            learned = pruning.before
        else:
            learned = fit_learned(truths, fs)
        text = predictions_jsonl(learned.predictions, LEARNED, {k: {"bias": b} for k, b in learned.bias.items()})
        n = len(learned.predictions)
    write_atomic(Path(output), text)
    files = [str(output)]
    if pruning is not None:
        write_atomic(Path(prune_out), pruned_questions(run_dir, pruning.kept))
        files.append(str(prune_out))
    return BaselineResult(n, fs, pruning, tuple(files))
