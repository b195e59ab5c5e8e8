"""The score report: what ``vistest score`` computes, prints and writes.

:func:`build_report` scores predictions against a run's ground truth (vistest.eval.metrics)
and adds the blind baselines computed from the ground truth alone, held out by scene by
default (vistest.eval.baselines, vistest.eval.learned: the learned blind model and the blind
score before and after bias pruning); reformulated question sets get the stress tables
(circular accuracy, none-of-these drop, open gap, accuracy by the correct letter) and every
report the abstention table;
:func:`report_tables` lays it out as tables (vistest.eval.tables), rendered for the terminal
(:func:`render_text`) and as ``report.md`` (:func:`render_markdown`); :func:`write_report`
writes ``report.json``, ``report.md``, ``rows.jsonl`` and the PNG plots; :func:`run_score` is
the command.

Conventions: the model whose predictions are scored is named :data:`PREDICTIONS_MODEL` in
every cell; budgets are columns in budget order; scores print with 3 decimals (``-``: none).
Every file is written atomically (vistest.atomic) and a rerun writes the same bytes (PNG
metadata carries no timestamp). Plots use matplotlib's object-oriented ``Figure`` API (Agg,
no display, no pyplot state).
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from .. import layout
from ..atomic import StagedFiles, ensure_folder, output_errors
from ..questions import ANSWER_MCQ
from ..reformulate import NOT_APPLICABLE
from ..answers import (BASE, COMPOSITE_PRESENT, MRA_THRESHOLDS, STRESS_METRICS, Protocol, partial_composites,
                       reformulation_order)
from .baselines import (
    DEFAULT_FOLDS,
    HOLDOUT_AUTO,
    IN_SAMPLE,
    LEARNED,
    MOST_FREQUENT,
    SIZE_PRIOR,
    Folds,
    RankAttack,
    blind_predictions,
    holdout_folds,
    rank_attack,
)
from .learned import DEFAULT_PRUNE_THRESHOLD, Pruning, prune
from .metrics import (
    ALL_TYPES,
    AbstentionCell,
    Coverage,
    HallucinationCell,
    LmmsEvalCheck,
    PositionCell,
    RowResult,
    ScoreCell,
    SensitivityCell,
    StressCell,
    SummaryCell,
    abstention_cells,
    coverage_cells,
    hallucination_cells,
    lmms_eval_check,
    lmms_eval_summary,
    match_predictions,
    position_cells,
    resolve_protocol,
    score_cells,
    sensitivity_cells,
    stress_cells,
    summary_cells,
)
from ..budget.rows import REAL_VARIANT, TruthRow, is_size_type
from .records import (
    Prediction,
    RunTruth,
    load_predictions,
    load_run_dir,
    prediction_files,
)
from .tables import Table, markdown_table, text_table
from ..budgets import budget_sort_key

PREDICTIONS_MODEL = "predictions"
IN_SAMPLE_MOST_FREQUENT = "most-frequent (in-sample)"
PRUNED_SUFFIX = " after pruning"


@dataclass(frozen=True)
class BlindPruning:
    """The learned blind model's pruning and the held-out blind scores on every row
    (``before``) and on the kept rows, refitted (``after``): model -> budget -> lmms-eval
    overall over the base questions; ``chance``: budget -> the overall of 1/k over the base
    MCQ rows (MCQ types only); ``groups``: budget -> (groups before, groups after)."""

    pruning: Pruning
    before: Mapping[str, Mapping[str, float]]
    after: Mapping[str, Mapping[str, float]]
    chance: Mapping[str, float]
    groups: Mapping[str, tuple[int, int]]

    def to_dict(self) -> dict:
        return {**self.pruning.to_dict(), "before": {m: dict(v) for m, v in self.before.items()},
                "after": {m: dict(v) for m, v in self.after.items()}, "chance": dict(self.chance),
                "groups_by_budget": {b: list(v) for b, v in self.groups.items()}}


@dataclass(frozen=True)
class Report:
    """Everything ``vistest score`` reports (``to_dict`` is report.json)."""

    protocol: Protocol
    run_dir: str
    truth_files: tuple[str, ...]
    prediction_files: tuple[str, ...]
    coverage: tuple[Coverage, ...]
    unmatched: tuple[str, ...]
    n_unmatched: int
    scores: tuple[ScoreCell, ...]
    summaries: tuple[SummaryCell, ...]
    hallucination: tuple[HallucinationCell, ...]
    sensitivity: tuple[SensitivityCell, ...]
    rank_attack: RankAttack
    lmms_check: LmmsEvalCheck
    rows: tuple[RowResult, ...] = field(repr=False, default=())
    folds: Folds | None = None
    stress: tuple[StressCell, ...] = ()
    positions: tuple[PositionCell, ...] = ()
    abstention: tuple[AbstentionCell, ...] = ()
    blind_pruning: BlindPruning | None = None
    skipped_variants: tuple[tuple[str, str, str, str], ...] = ()

    @property
    def budgets(self) -> list[str]:
        return sorted({c.budget for c in self.scores}, key=budget_sort_key)

    @property
    def partial_composites(self) -> dict[str, tuple[str, ...]]:
        """Composite groups whose members this set holds only partly at some budget
        (vistest.answers.partial_composites over the base questions' types with answerable rows)."""
        out: dict[str, tuple[str, ...]] = {}
        for b in self.budgets:
            types = {c.question_type for c in self.scores if c.budget == b and c.reformulation == BASE and c.n_truth}
            out.update(partial_composites(types, self.protocol))
        return dict(sorted(out.items()))

    @property
    def reformulations(self) -> list[str]:
        """The reformulations with scorable rows, in vistest.answers.REFORMULATIONS order."""
        return sorted({c.reformulation for c in self.scores}, key=reformulation_order)

    def to_dict(self) -> dict:
        return {
            "protocol": {"name": self.protocol.name, "lmms_eval_source": self.protocol.source,
                         "mra_thresholds": [float(x) for x in MRA_THRESHOLDS],
                         "composite_rule": self.protocol.composite_rule,
                         "composite_source": self.protocol.composite_source,
                         "partial_composites": {k: list(v) for k, v in self.partial_composites.items()}},
            "inputs": {"run_dir": self.run_dir, "truth_files": list(self.truth_files),
                       "predictions": list(self.prediction_files)},
            "coverage": [asdict(c) for c in self.coverage],
            "unmatched_predictions": {"count": self.n_unmatched, "examples": list(self.unmatched)},
            "scores": [asdict(c) for c in self.scores],
            "summary": [{"model": s.model, "budget": s.budget, **dict(s.values)} for s in self.summaries],
            "hallucination": [{**asdict(c), "rate": c.rate} for c in self.hallucination],
            "evidence_sensitivity": [{**asdict(c), "sensitivity": c.sensitivity} for c in self.sensitivity],
            "rank_attack": self.rank_attack.to_dict(),
            "lmms_eval_check": asdict(self.lmms_check),
            "blind_holdout": None if self.folds is None else {
                "scheme": self.folds.scheme, "by": self.folds.by or IN_SAMPLE, "folds": self.folds.n_folds,
                "scenes": self.folds.n_scenes, "warning": self.folds.warning},
            "stress": [{"model": c.model, "budget": c.budget, "metric": c.metric, "overall": c.overall,
                        "by_type": {t: {"n": n, "value": v} for t, (n, v) in c.types.items()}} for c in self.stress],
            "position": [asdict(c) for c in self.positions],
            "abstention": [asdict(c) for c in self.abstention],
            "learned_pruning": None if self.blind_pruning is None else self.blind_pruning.to_dict(),
            "skipped_variants": [{"group_id": g, "question_type": t, "variant": v, "reason": why}
                                 for g, t, v, why in self.skipped_variants],
        }


def build_report(truth: RunTruth, predictions: Sequence[Prediction], protocol: str = "auto",
                 prediction_sources: Sequence[str] = (), run_dir: str = "", splits: int = 200,
                 seed: int = 0, holdout: str = HOLDOUT_AUTO, folds: int = DEFAULT_FOLDS, learned: bool = True,
                 prune_threshold: float = DEFAULT_PRUNE_THRESHOLD, composites: str = "protocol") -> Report:
    """Score ``predictions`` against ``truth``; add the blind baselines (vistest.eval.baselines)
    computed from the truths alone. ``protocol``: one of vistest.eval.metrics.PROTOCOL_CHOICES; ``splits``/``seed``:
    the held-out rank attack's random half-splits (``seed`` also assigns k-fold units); ``composites``: the rule for
    composite groups missing a member (vistest.eval.metrics.COMPOSITE_CHOICES).
    ``holdout``/``folds``: how the blind baselines are held out (vistest.eval.baselines.holdout_folds);
    ``learned``: fit the learned blind model and prune at ``prune_threshold`` (vistest.eval.learned)."""
    truths = truth.truths
    proto = resolve_protocol(protocol, {t.question_type for t in truths}, composites)
    m = match_predictions(proto, truths, predictions)
    cells = list(score_cells(PREDICTIONS_MODEL, m.rows, truths))

    def folds_for(ts: Sequence[TruthRow]) -> Folds:
        return holdout_folds(ts, holdout, folds, seed)

    fs = folds_for(truths)
    blind = [(model, blind_predictions(truths, model, fs)) for model in (MOST_FREQUENT, SIZE_PRIOR)]
    if not fs.in_sample:
        in_sample = holdout_folds(truths, IN_SAMPLE)
        blind.append((IN_SAMPLE_MOST_FREQUENT, blind_predictions(truths, MOST_FREQUENT, in_sample)))
    pruning = None
    if learned and any(t.scorable for t in truths):
        pruning = prune(truths, folds_for, prune_threshold)
        blind.append((LEARNED, pruning.before.predictions))
    for model, preds in blind:
        cells.extend(score_cells(model, match_predictions(proto, truths, preds).rows, truths))
    summaries = summary_cells(cells, proto)
    return Report(proto, run_dir, truth.files, tuple(prediction_sources), coverage_cells(truths, m),
                  tuple(p.where for p in m.unmatched[:10]), len(m.unmatched), tuple(cells), summaries,
                  hallucination_cells(m.rows), sensitivity_cells(m.rows), rank_attack(truths, splits=splits, seed=seed),
                  lmms_eval_check(m.rows), m.rows, fs, stress_cells(PREDICTIONS_MODEL, m.rows, proto),
                  position_cells(PREDICTIONS_MODEL, m.rows), abstention_cells(m.rows),
                  None if pruning is None else blind_pruning(truths, pruning, summaries, proto, folds_for),
                  skipped_variants(truths))


def skipped_variants(truths: Sequence[TruthRow]) -> tuple[tuple[str, str, str, str], ...]:
    """(group id, question type, variant, why) of every variant vistest reformulate did not write,
    from the base rows' ``skipped_variants`` (each question once)."""
    seen: dict[str, TruthRow] = {}
    for t in truths:
        if t.reformulation == BASE and t.skipped_variants:
            seen.setdefault(t.group_id, t)
    return tuple((g, t.question_type, v, why) for g, t in seen.items() for v, why in t.skipped_variants)


def _base_overall(proto: Protocol, model: str, truths: Sequence[TruthRow], preds: Sequence[Prediction]
                  ) -> dict[str, float]:
    """budget -> lmms-eval overall of ``preds`` over the base questions of ``truths``."""
    cells = score_cells(model, match_predictions(proto, truths, preds).rows, truths)
    return {s.budget: s.values[proto.overall] for s in summary_cells(cells, proto) if s.reformulation == BASE}


def blind_pruning(truths: Sequence[TruthRow], pruning: Pruning, summaries: Sequence[SummaryCell], proto: Protocol,
                  folds_for: Callable[[Sequence[TruthRow]], Folds]) -> BlindPruning:
    """Before/after numbers of the pruning (:class:`BlindPruning`)."""
    kept = list(pruning.kept)
    before = {model: {s.budget: s.values[proto.overall] for s in summaries
                      if s.model == model and s.reformulation == BASE} for model in (LEARNED, MOST_FREQUENT)}
    after = {LEARNED: _base_overall(proto, LEARNED, kept, pruning.after.predictions),
             MOST_FREQUENT: _base_overall(proto, MOST_FREQUENT, kept,
                                          blind_predictions(kept, MOST_FREQUENT, folds_for(kept)) if kept else ())}
    chance: dict[str, float] = {}
    for b in sorted({t.budget for t in truths}, key=budget_sort_key):
        by_type: dict[str, list[float]] = {}
        for t in truths:
            if t.budget == b and t.scorable and t.reformulation == BASE and t.kind == ANSWER_MCQ and t.options:
                by_type.setdefault(t.question_type, []).append(1.0 / len(t.options))
        if by_type:
            chance[b] = lmms_eval_summary({q: float(np.mean(v)) for q, v in by_type.items()}, proto)[proto.overall]
    groups = {}
    for b in sorted({t.budget for t in truths}, key=budget_sort_key):
        g0 = {(t.scene_id, t.group_key) for t in truths if t.budget == b and t.scorable}
        g1 = {(t.scene_id, t.group_key) for t in kept if t.budget == b and t.scorable}
        groups[b] = (len(g0), len(g1))
    return BlindPruning(pruning, MappingProxyType(before), MappingProxyType(after), MappingProxyType(chance),
                        MappingProxyType(groups))


# ---- tables -----------------------------------------------------------------------------
def _f(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _score_table(report: Report, models: Sequence[str], title: str, note: str,
                 show: Callable[[str, str], bool] = lambda model, qtype: True) -> Table:
    """Types as rows, budgets as columns, then lmms-eval's overall per model, over the base
    questions; ``show(model, question_type)`` selects the type rows (the overall always covers
    every type)."""
    budgets = report.budgets
    rows = []
    for model in models:
        cells = {(c.budget, c.question_type): c for c in report.scores
                 if c.model == model and c.reformulation == BASE and show(model, c.question_type)}
        for qt in sorted({qt for _, qt in cells}):
            first = next(c for (b, t), c in cells.items() if t == qt)
            vals = []
            for b in budgets:
                c = cells.get((b, qt))
                vals.append("" if c is None else f"{_f(c.score)} ({c.n}/{c.n_truth})")
            rows.append(((model,) if len(models) > 1 else ()) + (qt, first.metric, *vals))
        summ = {s.budget: s.values for s in report.summaries if s.model == model and s.reformulation == BASE}
        if summ:
            name = f"overall [lmms-eval {report.protocol.overall}; composites: {report.protocol.composite_rule}]"
            rows.append(((model,) if len(models) > 1 else ()) + (name, "", *(_f(summ.get(b, {}).get(
                report.protocol.overall)) if b in summ else "" for b in budgets)))
    head = (("model",) if len(models) > 1 else ()) + ("question_type", "metric", *budgets)
    return Table(title, note, head, tuple(rows), len(head) - len(budgets))


def _blind_models(report: Report) -> list[str]:
    present = {c.model for c in report.scores}
    return [m for m in (MOST_FREQUENT, SIZE_PRIOR, LEARNED, IN_SAMPLE_MOST_FREQUENT) if m in present]


def _blind_note(report: Report) -> str:
    folds = report.folds.scheme if report.folds is not None else "in-sample"
    return (f"Held out: {folds}. most-frequent: the modal answer per type and budget (the median for continuous "
            f"numbers); size-prior: the mean size of the object's category (most-frequent elsewhere); learned: a "
            f"model over the question text and options alone (docs/scoring.md); most-frequent (in-sample): fitted "
            f"on the very rows it answers, the upper bound.")


def _reformulation_table(report: Report) -> Table:
    """lmms-eval's overall per (model, reformulation) and budget."""
    budgets = report.budgets
    rows = []
    for model in [PREDICTIONS_MODEL, *_blind_models(report)]:
        for ref in report.reformulations:
            summ = {s.budget: s.values[report.protocol.overall] for s in report.summaries
                    if s.model == model and s.reformulation == ref}
            if summ:
                rows.append((model, ref, *(_f(summ.get(b)) for b in budgets)))
    return Table("Scores per reformulation",
                 f"lmms-eval's overall ({report.protocol.overall}) over the rows of each reformulation "
                 f"(docs/questions-format.md); blind models held out as above.",
                 ("model", "reformulation", *budgets), tuple(rows), 2)


def _stress_table(report: Report) -> Table:
    budgets = report.budgets
    cells = {(c.metric, c.budget): c for c in report.stress}
    rows = []
    for metric in STRESS_METRICS:
        mine = {b: c for (m, b), c in cells.items() if m == metric}
        if not mine:
            continue
        for qt in sorted({t for c in mine.values() for t in c.types}):
            rows.append((metric, qt, *(f"{_f(mine[b].types[qt][1])} ({mine[b].types[qt][0]})"
                                       if b in mine and qt in mine[b].types else "" for b in budgets)))
        rows.append((metric, "overall", *(_f(mine[b].overall) if b in mine else "" for b in budgets)))
    return Table("Stress tests of the reformulated questions",
                 "The model's answers; value (rows, or groups for circular and the paired differences). "
                 + "; ".join(f"{m}: {d}" for m, d in STRESS_METRICS.items()) + ".",
                 ("metric", "question_type", *budgets), tuple(rows), 2)


def _skipped_table(report: Report) -> Table:
    """The variants vistest reformulate did not write: each that would give its answer away, by
    question; those that do not apply (numbers have no options ...), by reason."""
    rows = [(v, t, g, why) for g, t, v, why in report.skipped_variants if why not in NOT_APPLICABLE]
    rest: dict[tuple[str, str], list[str]] = {}
    for g, _, v, why in report.skipped_variants:
        if why in NOT_APPLICABLE:
            rest.setdefault((v, why), []).append(g)
    for (v, why), groups in rest.items():
        more = ", ..." if len(groups) > 10 else ""
        rows.append((v, "", f"{len(groups)} questions: " + ", ".join(groups[:10]) + more, why))
    return Table("Variants not written by vistest reformulate",
                 "A variant whose text could not offer its options without giving the answer away (the removed option "
                 "still named, a closed answer set, a gap in a numeric ladder) is not written, per question; then the "
                 "variants that do not apply, per reason (docs/questions-format.md).",
                 ("variant", "question_type", "question", "reason"), tuple(rows), 4)


def _position_table(report: Report) -> Table:
    budgets = [b for b in report.budgets if any(c.budget == b for c in report.positions)]
    letters = sorted({c.letter for c in report.positions})
    cells = {(c.letter, c.budget): c for c in report.positions}
    rows = tuple((letter, *(f"{_f(cells[(letter, b)].accuracy)} ({cells[(letter, b)].n}) / "
                            f"{_f(cells[(letter, b)].picked)}" if (letter, b) in cells else "" for b in budgets))
                 for letter in letters)
    return Table("Accuracy by position of the correct option",
                 "Base and circular MCQ rows by the letter of their correct option: accuracy (rows) / fraction of "
                 "all these rows answered with that letter. A position-biased model is right where its favourite "
                 "letter is correct and picks it everywhere.", ("correct letter", *budgets), rows, 1)


def _abstention_table(report: Report) -> Table:
    rows = tuple((c.videos, c.budget, c.question_type, str(c.n), _f(c.abstention), str(c.n_blind),
                  _f(c.hallucination), str(c.n_scored), _f(c.score)) for c in report.abstention)
    return Table("Abstention and hallucination, real and dummy videos",
                 "Both sides of abstaining: abstention = fraction of predicted rows answered 'Cannot be determined "
                 "from the video' (its option, or those words); hallucination = fraction of the rows whose frames "
                 "support no answer (dummies, unanswerable budgets) answered confidently; score = accuracy / MRA "
                 "against the row's own ground truth (real videos). A model that always abstains scores 0 there.",
                 ("videos", "budget", "question_type", "rows", "abstention", "no-evidence rows", "hallucination",
                  "scored", "score"), rows, 3)


def _pruning_table(report: Report) -> Table:
    bp = report.blind_pruning
    pr = bp.pruning
    rows = []
    for b, (g0, g1) in bp.groups.items():
        rows.append((b, str(g0), str(g1), _f(bp.chance.get(b)), _f(bp.before[LEARNED].get(b)),
                     _f(bp.after[LEARNED].get(b)), _f(bp.before[MOST_FREQUENT].get(b)),
                     _f(bp.after[MOST_FREQUENT].get(b))))
    note = (f"Held-out learned blind model; bias = how well it answers a question without the video (0 at chance, 1 "
            f"certain). Pruning removed {len(pr.removed)} of {pr.n_groups} question groups with bias > "
            f"{pr.threshold:g} in {pr.rounds} round(s); the blind models are refitted on what is left (held out the "
            f"same way). Scores: lmms-eval overall over the base questions; chance: 1/k on the MCQ types.")
    return Table("Learned blind model and bias pruning", note,
                 ("budget", "groups", "kept", "chance (MCQ)", "learned", "learned pruned", "most-frequent",
                  "most-frequent pruned"), tuple(rows), 1)


def report_tables(report: Report) -> list[Table]:
    """The report's tables, in order: scores, blind baselines, learned blind model and pruning,
    reformulations (per reformulation, stress tests), position, abstention, coverage,
    hallucination, evidence sensitivity, rank attack."""
    p = report.protocol
    tables = [
        _score_table(report, [PREDICTIONS_MODEL], "Scores on the real videos",
                     f"Accuracy (MCQ) or MRA (numeric), parsed and scored as lmms-eval's {p.name} task, over the base "
                     f"questions; cells show score (rows predicted / answerable rows)."),
        _score_table(report, _blind_models(report), "Blind baselines (from the questions alone)", _blind_note(report),
                     show=lambda model, qtype: model != SIZE_PRIOR or is_size_type(qtype)),
    ]
    if report.blind_pruning is not None:
        tables.append(_pruning_table(report))
    if len(report.reformulations) > 1:
        tables.append(_reformulation_table(report))
    if report.stress:
        tables.append(_stress_table(report))
    if report.skipped_variants:
        tables.append(_skipped_table(report))
    if report.positions:
        tables.append(_position_table(report))
    tables += [
        _abstention_table(report),
        Table("Coverage", f"{report.n_unmatched} prediction(s) matched no ground-truth row.",
              ("variant", "budget", "rows", "answerable", "predicted", "missing"),
              tuple((c.variant, c.budget, str(c.n_truth), str(c.n_scorable), str(c.n_predicted), str(c.n_missing))
                    for c in report.coverage), 2),
    ]
    if report.hallucination:
        tables.append(Table(
            "Hallucination where the evidence was removed",
            "Dummy videos, unanswerable budget rows and unsupported rows: a non-zero count (counting) or a confident "
            "number / option letter / text (others) is a hallucination; abstained = 'Cannot be determined' (option "
            "or words); none = 'None of these'; unparsed = nothing the protocol could read.",
            ("variant", "budget", "question_type", "rule", "n", "hallucinated", "rate", "abstained", "zero", "none",
             "unparsed"),
            tuple((c.variant, c.budget, c.question_type, c.rule, str(c.n), str(c.hallucinated), _f(c.rate),
                   str(c.abstained), str(c.zero) if c.rule == "nonzero_count" else "", str(c.none_of_these),
                   str(c.unparsed)) for c in report.hallucination),
            4))
    if report.sensitivity:
        tables.append(Table(
            "Evidence sensitivity", "Score on the real video minus score on its dummy, both against the real "
                                    "ground truth (0: the answer does not depend on the evidence).",
            ("variant", "budget", "question_type", "pairs", "real", "dummy", "sensitivity"),
            tuple((c.variant, c.budget, c.question_type, str(c.n), _f(c.real), _f(c.dummy), _f(c.sensitivity))
                  for c in report.sensitivity), 3))
    tables.extend(report.rank_attack.tables())
    return tables


def _header_lines(report: Report) -> list[str]:
    lines = [f"protocol: {report.protocol.name} (lmms-eval {report.protocol.source})",
             *_composite_lines(report),
             f"ground truth: {', '.join(report.truth_files)}",
             f"predictions: {', '.join(report.prediction_files) or '(none)'}"]
    if report.folds is not None:
        lines.append(f"blind baselines held out: {report.folds.scheme}")
        if report.folds.warning:
            lines.append(f"WARNING: {report.folds.warning}")
    return lines + _check_lines(report)


def _composite_lines(report: Report) -> list[str]:
    """The composite rule behind every overall number, and the groups this set holds partly."""
    p = report.protocol
    how = ("a group's members present are averaged" if p.composite_rule == COMPOSITE_PRESENT else
           "a group is averaged only when every member is present; otherwise its members count apart")
    lines = [f"composites: {p.composite_rule} ({how}; {p.composite_source}); every overall below follows it"]
    for name, missing in report.partial_composites.items():
        lines.append(f"partial group {name}: no {', '.join(missing)} in this set, so the overall differs between the "
                     f"rules (vistest score --composites present|complete)")
    return lines


def _check_lines(report: Report) -> list[str]:
    c = report.lmms_check
    if not c.compared and not c.gt_mismatch:
        return []
    out = [f"lmms-eval check: {c.agreed}/{c.compared} logged row scores reproduced"]
    out += [f"  disagrees at {w}: logged {a}, vistest {b}" for w, a, b in c.disagreements]
    if c.gt_mismatch:
        out.append(f"  {len(c.gt_mismatch)}+ logged rows carry another ground truth than the run "
                   f"(first at {c.gt_mismatch[0][0]}: logged {c.gt_mismatch[0][1]!r}, run {c.gt_mismatch[0][2]!r})")
    return out


def render_text(report: Report) -> str:
    """The terminal report."""
    return "\n\n".join(["\n".join(_header_lines(report))] + [text_table(t) for t in report_tables(report)]) + "\n"


def render_markdown(report: Report, plots: Mapping[str, str]) -> str:
    """report.md: the same tables, with the plots (``plots``: caption -> file name)."""
    parts = ["# vistest score report", "\n".join(f"- {x}" for x in _header_lines(report))]
    for caption, name in plots.items():
        parts.append(f"![{caption}]({name})")
    if not plots:
        parts.append("(no plots: nothing was scored)")
    parts += [markdown_table(t) for t in report_tables(report)]
    return "\n\n".join(parts) + "\n"


# ---- plots ------------------------------------------------------------------------------
PLOT_BUDGET = "accuracy_vs_budget.png"
PLOT_DUMMY = "real_vs_dummy.png"


def _save_figure(fig: Any, path: Path) -> None:
    """Save ``fig`` as PNG to ``path``: a staged temporary file (write_report puts it in place)."""
    with output_errors(path):
        fig.savefig(path, format="png", dpi=100, metadata={"Software": None})


def plot_accuracy_vs_budget(report: Report, path: Path) -> bool:
    """One line per question type (score vs budget), the lmms-eval overall in black and the
    blind most-frequent overall dashed. False (nothing written) when nothing was scored."""
    from matplotlib.figure import Figure

    cells = [c for c in report.scores if c.model == PREDICTIONS_MODEL and c.score is not None
             and c.reformulation == BASE]
    if not cells:
        return False
    budgets = report.budgets
    x = {b: i for i, b in enumerate(budgets)}
    fig = Figure(figsize=(8, 5))
    ax = fig.add_subplot()
    for qt in sorted({c.question_type for c in cells}):
        pts = sorted((x[c.budget], c.score) for c in cells if c.question_type == qt)
        label = f"{qt} ({next(c.metric for c in cells if c.question_type == qt)})"
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    for model, style in ((PREDICTIONS_MODEL, {"color": "black", "linewidth": 2.5, "label": "overall"}),
                         (MOST_FREQUENT, {"color": "gray", "linestyle": "--", "label": "blind most-frequent overall"})):
        pts = [(x[s.budget], s.values[report.protocol.overall]) for s in report.summaries
               if s.model == model and s.reformulation == BASE]
        if pts:
            ax.plot([p[0] for p in sorted(pts)], [p[1] for p in sorted(pts)], marker="s", **style)
    ax.set_xticks(range(len(budgets)), [f"{b} frames" for b in budgets])
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("frame budget")
    ax.set_ylabel("accuracy (MCQ) / MRA (numeric)")
    ax.set_title(f"Score vs frame budget ({report.protocol.name} rules)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    _save_figure(fig, path)
    return True


def _weighted(cells: Sequence[Any], value: Callable[[Any], float]) -> float:
    n = sum(c.n for c in cells)
    return sum(value(c) * c.n for c in cells) / n if n else 0.0


LABEL_ROW_INCHES = 0.24  # height per labelled bar row of the real-vs-dummy plot: 7-point labels never overlap


def real_vs_dummy_figure(sensitivity: Sequence[Any], hallucination: Sequence[Any]) -> Any:
    """The real-vs-dummy figure (None when there is nothing to plot): per question type, pooled
    over budgets, real vs dummy score (against the real ground truth) per dummy variant, and the
    hallucination rate per (dummy variant, question type). Horizontal bars, one label per row on
    the y axis, the figure :data:`LABEL_ROW_INCHES` taller per row: a ``--types all`` set (about
    20 types x 2 variants = 40 labels) stays readable, where rotated x labels ran together."""
    from matplotlib.figure import Figure

    dummy_h = [c for c in hallucination if c.variant != REAL_VARIANT]
    if not sensitivity and not dummy_h:
        return None
    variants = sorted({c.variant for c in sensitivity})
    types = sorted({c.question_type for c in sensitivity})
    htypes = sorted({(c.variant, c.question_type) for c in dummy_h}, key=lambda k: (k[1], k[0]))
    rows = max(len(types) * (1 + len(variants)) * 0.6, len(htypes), 4)
    fig = Figure(figsize=(12, 1.4 + LABEL_ROW_INCHES * rows))
    ax1, ax2 = fig.subplots(1, 2)
    height = 0.8 / (1 + len(variants))
    for i, qt in enumerate(types):
        for j, v in enumerate(variants):
            cs = [c for c in sensitivity if c.question_type == qt and c.variant == v]
            if j == 0:
                ax1.barh(i, _weighted(cs, lambda c: c.real), height, color="tab:blue", label="real" if i == 0 else None)
            ax1.barh(i + (j + 1) * height, _weighted(cs, lambda c: c.dummy), height, color=f"C{j + 1}",
                     label=v if i == 0 else None)
    ax1.set_yticks([i + height * len(variants) / 2 for i in range(len(types))], types, fontsize=7)
    ax1.set_xlim(0, 1.05)
    ax1.invert_yaxis()  # the first type on top, as in the tables
    ax1.set_xlabel("score vs the real ground truth")
    ax1.set_title("real vs dummy")
    if types:
        ax1.legend(fontsize=7, loc="lower right")
    ax2.barh(range(len(htypes)), [_weighted([c for c in dummy_h if (c.variant, c.question_type) == k],
                                            lambda c: c.rate) for k in htypes], color="tab:red")
    ax2.set_yticks(range(len(htypes)), [f"{qt} [{v}]" for v, qt in htypes], fontsize=7)
    ax2.set_xlim(0, 1.05)
    ax2.invert_yaxis()
    ax2.set_xlabel("hallucination rate")
    ax2.set_title("hallucination on dummies")
    fig.tight_layout()
    return fig


def plot_real_vs_dummy(report: Report, path: Path) -> bool:
    """:func:`real_vs_dummy_figure` of the report, saved to ``path``. False when no dummy rows
    were predicted."""
    fig = real_vs_dummy_figure(report.sensitivity, report.hallucination)
    if fig is None:
        return False
    _save_figure(fig, path)
    return True


PLOT_STRESS = "stress.png"


def plot_stress(report: Report, path: Path) -> bool:
    """Three panels: the model's score per reformulation and circular accuracy per budget;
    accuracy and pick rate by the correct letter (pooled over budgets); abstention and
    hallucination rates on the real and dummy videos (all types, pooled over budgets). False
    (nothing written) when the ground truth has no reformulated question."""
    from matplotlib.figure import Figure

    if len(report.reformulations) <= 1 and not report.stress:
        return False
    budgets = report.budgets
    fig = Figure(figsize=(15, 4.8))
    ax1, ax2, ax3 = fig.subplots(1, 3)
    series: list[tuple[str, dict[str, float]]] = []
    for ref in report.reformulations:
        series.append((ref, {s.budget: s.values[report.protocol.overall] for s in report.summaries
                             if s.model == PREDICTIONS_MODEL and s.reformulation == ref}))
    series.append(("circular accuracy", {c.budget: c.overall for c in report.stress
                                         if c.metric == "circular_accuracy"}))
    width = 0.8 / max(1, len(series))
    for j, (name, vals) in enumerate(series):
        ax1.bar([i + j * width for i in range(len(budgets))], [vals.get(b, 0.0) for b in budgets], width,
                label=name, color=f"C{j}")
    ax1.set_xticks([i + width * (len(series) - 1) / 2 for i in range(len(budgets))], [f"{b} frames" for b in budgets])
    ax1.set_ylim(0, 1.05)
    ax1.set_ylabel(f"lmms-eval {report.protocol.overall}")
    ax1.set_title("per reformulation")
    ax1.legend(fontsize=7)
    letters = sorted({c.letter for c in report.positions})
    acc = [_weighted([c for c in report.positions if c.letter == x], lambda c: c.accuracy) for x in letters]
    rows_at = {b: sum(c.n for c in report.positions if c.budget == b) for b in budgets}  # position rows per budget
    picked = [sum(c.picked * rows_at[c.budget] for c in report.positions if c.letter == x) for x in letters]
    total = sum(rows_at.values()) or 1
    ax2.bar([i - 0.2 for i in range(len(letters))], acc, 0.4, label="accuracy where it is correct", color="tab:blue")
    ax2.bar([i + 0.2 for i in range(len(letters))], [x / total for x in picked], 0.4, label="fraction answered with it",
            color="tab:orange")
    ax2.set_xticks(range(len(letters)), letters)
    ax2.set_ylim(0, 1.05)
    ax2.set_xlabel("letter of the correct option")
    ax2.set_title("position of the correct option")
    ax2.legend(fontsize=7)
    pooled = [c for c in report.abstention if c.question_type == ALL_TYPES]
    videos = sorted({c.videos for c in pooled}, key=lambda v: (v != "budget", v))
    ab = [_weighted([c for c in pooled if c.videos == v], lambda c: c.abstention) for v in videos]
    ha = [sum((c.hallucination or 0.0) * c.n_blind for c in pooled if c.videos == v)
          / max(1, sum(c.n_blind for c in pooled if c.videos == v)) for v in videos]
    ax3.bar([i - 0.2 for i in range(len(videos))], ab, 0.4, label="abstention", color="tab:green")
    ax3.bar([i + 0.2 for i in range(len(videos))], ha, 0.4, label="hallucination (no-evidence rows)", color="tab:red")
    ax3.set_xticks(range(len(videos)), ["real" if v == "budget" else v for v in videos], rotation=20, fontsize=8)
    ax3.set_ylim(0, 1.05)
    ax3.set_title("abstention vs hallucination")
    ax3.legend(fontsize=7)
    fig.tight_layout()
    _save_figure(fig, path)
    return True


def write_report(report: Report, outdir: str | os.PathLike, model: str = PREDICTIONS_MODEL) -> dict[str, Path]:
    """Write ``report.json``, ``report.md``, ``rows.jsonl`` (every predicted row, parsed and
    scored) and the PNG plots into ``outdir`` as one set (vistest.atomic.StagedFiles: all staged,
    then renamed into place together; a plot the report no longer has is removed then, since it
    would contradict report.md): an interrupted or failed score leaves the previous set whole.
    Returns name -> path."""
    outdir = ensure_folder(outdir)
    written: dict[str, Path] = {}
    plots: dict[str, str] = {}
    with StagedFiles() as staged:
        for caption, name, fn in (("score vs frame budget", PLOT_BUDGET, plot_accuracy_vs_budget),
                                  ("real vs dummy", PLOT_DUMMY, plot_real_vs_dummy),
                                  ("reformulations, position, abstention", PLOT_STRESS, plot_stress)):
            if fn(report, staged.path(outdir / name)):
                plots[caption] = name
                written[name] = outdir / name
            else:
                staged.remove(outdir / name)
        for name, text in (("report.json", json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"),
                           ("report.md", render_markdown(report, plots)),
                           ("rows.jsonl", "".join(json.dumps(r.to_dict(model), ensure_ascii=False) + "\n"
                                                  for r in report.rows))):
            staged.write(outdir / name, text)
            written[name] = outdir / name
    return written


def run_score(prediction_paths: Sequence[str | os.PathLike], run_dir: str | os.PathLike,
              outdir: str | os.PathLike | None = None, protocol: str = "auto", splits: int = 200,
              seed: int = 0, holdout: str = HOLDOUT_AUTO, folds: int = DEFAULT_FOLDS, learned: bool = True,
              prune_threshold: float = DEFAULT_PRUNE_THRESHOLD, composites: str = "protocol"
              ) -> tuple[Report, dict[str, Path]]:
    """``vistest score``: load, score, write (default OUT: ``RUN_DIR/score``). Files of an
    earlier report under OUT are not read as predictions when a folder is given."""
    out = Path(outdir) if outdir else layout.score_dir(run_dir)
    truth = load_run_dir(run_dir)
    files = [f for f in prediction_files(prediction_paths) if out.resolve() not in f.resolve().parents]
    preds = [p for f in files for p in load_predictions(f)]
    report = build_report(truth, preds, protocol, [str(f) for f in files], str(run_dir), splits, seed, holdout, folds,
                          learned, prune_threshold, composites)
    return report, write_report(report, out)
