"""Metrics: predictions joined to the ground truth, parsed and scored, then grouped into cells.

Conventions:

* Rows are parsed and scored by lmms-eval's rules (vistest.answers) under one
  :class:`~vistest.answers.Protocol`; :func:`resolve_protocol` picks it from the question
  types. Scores are floats in [0, 1].
* Only answerable real rows (:attr:`vistest.budget.rows.TruthRow.scorable`) are scored for
  accuracy (MCQ) / MRA (numbers) / text match (open reformulations): exporters leave
  unanswerable rows out, so this is what lmms-eval scores. Every response gets a class
  (:func:`vistest.answers.response_class`: abstained, none_of_these, zero, confident,
  unparsed); rows whose evidence was removed (every dummy row, real rows that are
  ``unanswerable``, and unsupported rows) count a ``confident`` response as a hallucination.
* Reformulated questions: score cells are kept per reformulation (the report's main tables
  show ``base``); the stress metrics (circular accuracy, none-of-these drop, open gap,
  accuracy by the correct letter) come from vistest.answers, the code the exported
  lmms-eval task runs.
* Evidence sensitivity pairs a dummy row with the real row of the same ``id`` and
  ``budget``: (score of the real prediction) - (score of the dummy prediction), both against
  the real ground truth. A model that ignores the video scores 0; one that uses it, > 0.
* Cells are sorted by budget (:func:`vistest.budgets.budget_sort_key`), then by name.
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from ..questions import ANSWER_MCQ, ANSWER_TEXT, QUESTION_TYPES
from ..answers import (
    ABSTAINED_CLASS,
    BASE,
    COMPOSITE_COMPLETE,
    COMPOSITE_RULES,
    CONFIDENT_CLASS,
    NONE_CLASS,
    PRESENT_COMPOSITE_SOURCE,
    PROTOCOLS,
    STRESS_METRICS,
    UNPARSED_CLASS,
    VLMEVALKIT_COMPOSITE_SOURCE,
    ZERO_CLASS,
    Protocol,
    abstention_rate,
    hallucination_rate,
    lmms_eval_subscores,
    parse_answer,
    position_accuracy,
    reformulation_order,
    response_class,
    score_parsed,
    stress_summary,
    stress_values,
    type_means,
)
from ..budgets import budget_json, budget_sort_key
from ..budget.rows import REAL_VARIANT, TruthRow
from .records import Prediction, ScoreError, check_unique

PROTOCOL_CHOICES = ("auto", *PROTOCOLS)
COMPOSITE_CHOICES = ("protocol", *COMPOSITE_RULES)


def resolve_protocol(name: str, question_types: Iterable[str], composites: str = "protocol") -> Protocol:
    """``name`` from :data:`PROTOCOL_CHOICES`. ``auto``: ``vsibench`` when the types include a
    VSI-Bench-only type, else ``revsi``; mixing ReVSI-only and VSI-Bench-only types is an
    error (no single lmms-eval task scores both). ``composites`` (:data:`COMPOSITE_CHOICES`):
    the protocol's own rule for partial composite groups, or one of vistest.answers.COMPOSITE_RULES."""
    proto = _named_protocol(name, question_types)
    if composites == "protocol" or composites == proto.composite_rule:
        return proto
    if composites not in COMPOSITE_RULES:
        raise ScoreError(f"composites: expected one of {', '.join(COMPOSITE_CHOICES)}, got {composites!r}")
    source = VLMEVALKIT_COMPOSITE_SOURCE if composites == COMPOSITE_COMPLETE else PRESENT_COMPOSITE_SOURCE
    return replace(proto, composite_rule=composites, composite_source=source)


def _named_protocol(name: str, question_types: Iterable[str]) -> Protocol:
    """:func:`resolve_protocol` without the composite rule."""
    if name != "auto":
        if name not in PROTOCOLS:
            raise ScoreError(f"protocol: expected one of {', '.join(PROTOCOL_CHOICES)}, got {name!r}")
        return PROTOCOLS[name]
    types = set(question_types)
    only = {b: sorted(t for t in types if QUESTION_TYPES[t].benchmarks == (b,)) for b in ("ReVSI", "VSI-Bench")}
    if only["ReVSI"] and only["VSI-Bench"]:
        raise ScoreError(f"protocol: the ground truth mixes ReVSI-only types ({', '.join(only['ReVSI'])}) and "
                         f"VSI-Bench-only types ({', '.join(only['VSI-Bench'])}); choose one with --protocol")
    return PROTOCOLS["vsibench" if only["VSI-Bench"] else "revsi"]


def numpy_mean(values: Sequence[float]) -> float:
    """``numpy.mean`` as a Python float: the mean vistest's reports use (lmms-eval's per-type
    means are pandas/numpy means; its composite and overall means differ from it at most in
    the last bit)."""
    return float(np.mean(values))


def question_kind(question_type: str) -> str:
    """``"mcq"`` or ``"number"`` (vistest.questions.QUESTION_TYPES)."""
    return QUESTION_TYPES[question_type].answer


def lmms_eval_summary(type_scores: Mapping[str, float], protocol: Protocol) -> dict[str, float]:
    """lmms-eval's subscores and overall from per-type mean scores
    (:func:`vistest.answers.lmms_eval_subscores`, means by :func:`numpy_mean`)."""
    return lmms_eval_subscores(type_scores, protocol, question_kind, numpy_mean)


@dataclass(frozen=True)
class RowResult:
    """One predicted row. ``parsed``: the protocol's parse. ``score``: vs the row's own ground
    truth, for answerable real rows (None otherwise). ``hallucinated``: for evidence-removed
    rows (None otherwise). ``response``: the response's class
    (vistest.answers.RESPONSE_CLASSES)."""

    truth: TruthRow
    prediction: Prediction
    parsed: str | float | None
    score: float | None
    hallucinated: bool | None
    response: str = UNPARSED_CLASS

    def to_dict(self, model: str) -> dict:
        t = self.truth
        parsed = self.parsed if not isinstance(self.parsed, float) or math.isfinite(self.parsed) else str(self.parsed)
        return {"model": model, "id": t.id, "variant": t.variant, "budget": budget_json(t.budget),
                "question_type": t.question_type, "reformulation": t.reformulation, "group_id": t.group_key,
                "status": t.status, "ground_truth": t.ground_truth, "prediction": self.prediction.prediction,
                "parsed": parsed, "score": self.score, "response": self.response, "hallucinated": self.hallucinated}

    def stress_row(self) -> dict:
        """The row as vistest.answers' stress functions read it (and the exported task logs it)."""
        t = self.truth
        mcq = t.kind == ANSWER_MCQ
        return {"question_type": t.question_type, "reformulation": t.reformulation, "group_id": t.group_key,
                "score": self.score, "n_options": len(t.options) if mcq and t.options else None,
                "correct": str(t.ground_truth).strip().upper() if mcq and self.score is not None else None,
                "picked": self.parsed.upper() if mcq and isinstance(self.parsed, str) else None,
                "response": self.response, "evidence": not t.evidence_removed}


def evaluate_row(protocol: Protocol, truth: TruthRow, pred: Prediction) -> RowResult:
    """Parse and score one prediction against its truth (module conventions)."""
    parsed = parse_answer(protocol, truth.kind, pred.prediction, truth.offers_abstention)
    response = response_class(truth.kind, pred.prediction, parsed, truth.is_counting, truth.options)
    score = score_parsed(truth.kind, parsed, truth.ground_truth) if truth.scorable else None
    hallucinated = response == CONFIDENT_CLASS if truth.evidence_removed else None
    return RowResult(truth, pred, parsed, score, hallucinated, response)


@dataclass(frozen=True)
class Matching:
    """Predictions joined to truths: ``rows`` (in truth order), ``missing`` truths without a
    prediction, ``unmatched`` predictions without a truth."""

    rows: tuple[RowResult, ...]
    missing: tuple[TruthRow, ...]
    unmatched: tuple[Prediction, ...]


def match_predictions(protocol: Protocol, truths: Sequence[TruthRow], predictions: Sequence[Prediction]) -> Matching:
    """Join on (id, variant, budget) and evaluate every matched row; duplicate prediction
    keys raise (naming both places)."""
    check_unique(predictions, "prediction")
    by_key = {p.key: p for p in predictions}
    keys = {t.key for t in truths}
    rows, missing = [], []
    for t in truths:
        p = by_key.get(t.key)
        if p is None:
            missing.append(t)
        else:
            rows.append(evaluate_row(protocol, t, p))
    return Matching(tuple(rows), tuple(missing), tuple(p for p in predictions if p.key not in keys))


@dataclass(frozen=True)
class ScoreCell:
    """Mean score of ``model`` on the answerable real rows of one budget, question type and
    reformulation. ``metric``: ``accuracy`` (MCQ), ``MRA`` (numbers) or ``match`` (open
    texts); ``n``: rows scored; ``n_truth``: scorable rows."""

    model: str
    budget: str
    question_type: str
    metric: str
    n: int
    n_truth: int
    score: float | None
    reformulation: str = BASE


def metric_name(kind: str) -> str:
    """The metric of an answer kind: ``accuracy`` (MCQ), ``MRA`` (numbers), ``match`` (texts)."""
    return "accuracy" if kind == ANSWER_MCQ else "match" if kind == ANSWER_TEXT else "MRA"


def score_cells(model: str, rows: Sequence[RowResult], truths: Sequence[TruthRow]) -> tuple[ScoreCell, ...]:
    """Per (budget, question type, reformulation) mean of ``row.score`` over scored rows, with
    the count of scorable truths (so coverage shows); sorted by budget, type, reformulation.
    A cell's metric is its rows' answer kind's (an open cell of a numeric-option MCQ: MRA)."""
    scored: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r in rows:
        if r.score is not None:
            scored[(r.truth.budget, r.truth.question_type, r.truth.reformulation)].append(r.score)
    n_truth: Counter = Counter()
    kind: dict[tuple[str, str, str], str] = {}
    for t in truths:
        if t.scorable:
            key = (t.budget, t.question_type, t.reformulation)
            n_truth[key] += 1
            kind.setdefault(key, t.kind)
    out = []
    for key in sorted(n_truth, key=lambda k: (budget_sort_key(k[0]), k[1], reformulation_order(k[2]))):
        s = scored.get(key, [])
        out.append(ScoreCell(model, key[0], key[1], metric_name(kind[key]), len(s), n_truth[key],
                             float(np.mean(s)) if s else None, key[2]))
    return tuple(out)


@dataclass(frozen=True)
class SummaryCell:
    """lmms-eval's aggregate subscores of ``model`` at one budget over the rows of one
    reformulation (``values``: name -> score)."""

    model: str
    budget: str
    values: Mapping[str, float]
    reformulation: str = BASE


def summary_cells(cells: Sequence[ScoreCell], protocol: Protocol) -> tuple[SummaryCell, ...]:
    """:func:`lmms_eval_summary` per (model, budget, reformulation) over the cells that scored rows."""
    groups: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
    for c in cells:
        if c.score is not None:
            groups[(c.model, c.budget, c.reformulation)][c.question_type] = c.score
    order = sorted(groups.items(), key=lambda kv: (kv[0][0], budget_sort_key(kv[0][1]), reformulation_order(kv[0][2])))
    return tuple(SummaryCell(m, b, MappingProxyType(lmms_eval_summary(v, protocol)), ref) for (m, b, ref), v in order)


@dataclass(frozen=True)
class HallucinationCell:
    """Evidence-removed rows of one (variant, budget, question type) that were predicted.
    ``rule``: ``nonzero_count`` or ``confident_answer``; ``hallucinated``: confident answers
    (:func:`vistest.answers.response_class`); ``abstained``: abstentions (the "Cannot be
    determined" option or words); ``zero``: counts of 0 (counting only); ``none_of_these``:
    the "None of these" option; ``unparsed``: nothing the protocol could read."""

    variant: str
    budget: str
    question_type: str
    rule: str
    n: int
    hallucinated: int
    abstained: int
    zero: int
    none_of_these: int = 0
    unparsed: int = 0

    @property
    def rate(self) -> float:
        return self.hallucinated / self.n if self.n else 0.0


def hallucination_cells(rows: Sequence[RowResult]) -> tuple[HallucinationCell, ...]:
    """Group the evidence-removed rows (dummy, unanswerable or unsupported real) by (variant, budget, type)."""
    groups: dict[tuple[str, str, str], list[RowResult]] = defaultdict(list)
    for r in rows:
        if r.hallucinated is not None:
            groups[(r.truth.variant, r.truth.budget, r.truth.question_type)].append(r)
    out = []
    for (v, b, qt), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], budget_sort_key(kv[0][1]), kv[0][2])):
        n = Counter(r.response for r in rs)
        out.append(HallucinationCell(v, b, qt, "nonzero_count" if rs[0].truth.is_counting else "confident_answer",
                                     len(rs), n[CONFIDENT_CLASS], n[ABSTAINED_CLASS], n[ZERO_CLASS], n[NONE_CLASS],
                                     n[UNPARSED_CLASS]))
    return tuple(out)


@dataclass(frozen=True)
class SensitivityCell:
    """Real/dummy pairs of one (dummy variant, budget, type): mean score of the real and of
    the dummy prediction, both against the real ground truth; ``sensitivity = real - dummy``."""

    variant: str
    budget: str
    question_type: str
    n: int
    real: float
    dummy: float

    @property
    def sensitivity(self) -> float:
        return self.real - self.dummy


def sensitivity_cells(rows: Sequence[RowResult]) -> tuple[SensitivityCell, ...]:
    """Pair each predicted dummy row with the scored real row of its (id, budget)."""
    real = {(r.truth.id, r.truth.budget): r for r in rows if r.score is not None}
    groups: dict[tuple[str, str, str], list[tuple[float, float]]] = defaultdict(list)
    for r in rows:
        t = r.truth
        base = real.get((t.id, t.budget)) if t.is_dummy else None
        if base is None:
            continue
        dummy = score_parsed(base.truth.kind, r.parsed, base.truth.ground_truth)
        groups[(t.variant, t.budget, t.question_type)].append((base.score, dummy))
    return tuple(SensitivityCell(v, b, qt, len(p), float(np.mean([a for a, _ in p])), float(np.mean([d for _, d in p])))
                 for (v, b, qt), p in sorted(groups.items(),
                                             key=lambda kv: (kv[0][0], budget_sort_key(kv[0][1]), kv[0][2])))


@dataclass(frozen=True)
class Coverage:
    """Rows of one (variant, budget): ``n_truth`` rows, ``n_scorable`` (answerable, real),
    ``n_predicted`` rows with a prediction, ``n_missing`` without one."""

    variant: str
    budget: str
    n_truth: int
    n_scorable: int
    n_predicted: int
    n_missing: int


def coverage_cells(truths: Sequence[TruthRow], m: Matching) -> tuple[Coverage, ...]:
    """How much of each (variant, budget) the predictions cover."""
    total = Counter((t.variant, t.budget) for t in truths)
    scorable = Counter((t.variant, t.budget) for t in truths if t.scorable)
    missing = Counter((t.variant, t.budget) for t in m.missing)
    order = sorted(total, key=lambda k: (k[0] != REAL_VARIANT, k[0], budget_sort_key(k[1])))
    return tuple(Coverage(v, b, total[(v, b)], scorable[(v, b)], total[(v, b)] - missing[(v, b)], missing[(v, b)])
                 for v, b in order)


@dataclass(frozen=True)
class LmmsEvalCheck:
    """Rows of lmms-eval logs whose logged score was compared with this module's.
    ``disagreements``: (where, logged, ours) for the first few; ``gt_mismatch``: rows whose
    logged ground truth differs from the run's (stale export; not compared)."""

    compared: int
    agreed: int
    disagreements: tuple[tuple[str, float, float], ...]
    gt_mismatch: tuple[tuple[str, Any, Any], ...]


def lmms_eval_check(rows: Sequence[RowResult], keep: int = 10) -> LmmsEvalCheck:
    """Compare scores lmms-eval logged with ours, on rows scored against the same ground truth."""
    compared = agreed = 0
    bad: list[tuple[str, float, float]] = []
    gt_bad: list[tuple[str, Any, Any]] = []
    for r in rows:
        p = r.prediction
        if p.logged_score is None or r.score is None:
            continue
        if str(p.logged_ground_truth) != str(r.truth.ground_truth):
            gt_bad.append((p.where, p.logged_ground_truth, r.truth.ground_truth))
            continue
        compared += 1
        if abs(p.logged_score - r.score) <= 1e-9:
            agreed += 1
        else:
            bad.append((p.where, p.logged_score, r.score))
    return LmmsEvalCheck(compared, agreed, tuple(bad[:keep]), tuple(gt_bad[:keep]))


# ---------------------------------------------------------------------------------------
# stress tests: reformulations, position of the correct letter, abstention
# ---------------------------------------------------------------------------------------
ALL_TYPES = "(all types)"


def _real_by_budget(rows: Sequence[RowResult]) -> dict[str, list[dict]]:
    """The stress rows (RowResult.stress_row) of the real videos, per budget in budget order."""
    out: dict[str, list[dict]] = defaultdict(list)
    for r in sorted((r for r in rows if not r.truth.is_dummy), key=lambda r: budget_sort_key(r.truth.budget)):
        out[r.truth.budget].append(r.stress_row())
    return out


@dataclass(frozen=True)
class StressCell:
    """One stress metric (vistest.answers.STRESS_METRICS) of ``model`` at one budget:
    ``types``: question type -> (rows or groups, mean value); ``overall``: lmms-eval's
    aggregation over the types (vistest.answers.stress_summary, the exported task's)."""

    model: str
    budget: str
    metric: str
    types: Mapping[str, tuple[int, float]]
    overall: float


def stress_cells(model: str, rows: Sequence[RowResult], protocol: Protocol) -> tuple[StressCell, ...]:
    """Every stress metric with values, per budget (budget order, then STRESS_METRICS order)."""
    out = []
    for budget, srows in _real_by_budget(rows).items():
        values = stress_values(srows)
        summary = stress_summary_of(srows, protocol)
        for metric in STRESS_METRICS:
            pairs = values[metric]
            if not pairs:
                continue
            n = Counter(t for t, _ in pairs)
            means = type_means(pairs)
            out.append(StressCell(model, budget, metric, MappingProxyType({t: (n[t], means[t]) for t in means}),
                                  summary[metric]))
    return tuple(out)


def stress_summary_of(stress_rows: Sequence[Mapping], protocol: Protocol) -> dict[str, float]:
    """vistest.answers.stress_summary with vistest's answer kinds."""
    return stress_summary(stress_rows, protocol, question_kind)


@dataclass(frozen=True)
class PositionCell:
    """Accuracy of ``model`` on the base and circular rows of one budget whose correct option
    has ``letter``: ``n`` rows, ``accuracy``, ``picked`` (fraction of all those rows answered
    with ``letter``)."""

    model: str
    budget: str
    letter: str
    n: int
    accuracy: float
    picked: float


def position_cells(model: str, rows: Sequence[RowResult]) -> tuple[PositionCell, ...]:
    """vistest.answers.position_accuracy per budget."""
    return tuple(PositionCell(model, b, letter, n, acc, picked) for b, srows in _real_by_budget(rows).items()
                 for letter, (n, acc, picked) in position_accuracy(srows).items())


@dataclass(frozen=True)
class AbstentionCell:
    """Both sides of abstaining, for one (videos, budget, question type): ``videos`` is
    ``budget`` (the real budget video) or a dummy variant; ``question_type`` may be
    :data:`ALL_TYPES`. ``n``: predicted rows; ``abstention``: fraction that abstained;
    ``n_blind``: rows whose frames support no answer (evidence removed), ``hallucination``:
    fraction of those answered confidently; ``n_scored``/``score``: rows scored against their
    own ground truth (real videos) and their mean."""

    videos: str
    budget: str
    question_type: str
    n: int
    abstention: float
    n_blind: int
    hallucination: float | None
    n_scored: int
    score: float | None


def abstention_cells(rows: Sequence[RowResult]) -> tuple[AbstentionCell, ...]:
    """Per (videos, budget), every question type and then all types pooled (rates from
    vistest.answers.abstention_rate / hallucination_rate, as the exported task)."""
    groups: dict[tuple[str, str], list[RowResult]] = defaultdict(list)
    for r in rows:
        groups[(r.truth.variant, r.truth.budget)].append(r)
    out = []
    for (v, b), rs in sorted(groups.items(), key=lambda kv: (kv[0][0] != REAL_VARIANT, kv[0][0],
                                                             budget_sort_key(kv[0][1]))):
        by_type: dict[str, list[RowResult]] = defaultdict(list)
        for r in rs:
            by_type[r.truth.question_type].append(r)
        for qt, part in [*sorted(by_type.items()), (ALL_TYPES, rs)]:
            srows = [r.stress_row() for r in part]
            blind = [x for x in srows if not x["evidence"]]
            scored = [r.score for r in part if r.score is not None]
            out.append(AbstentionCell(v, b, qt, len(part), abstention_rate(srows), len(blind),
                                      hallucination_rate(srows) if blind else None, len(scored),
                                      float(np.mean(scored)) if scored else None))
    return tuple(out)
