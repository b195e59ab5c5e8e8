"""The score report: what ``vistest score`` computes, prints and writes.

:func:`build_report` scores predictions against a run's ground truth (vistest.eval.metrics)
and adds the blind baselines computed from the ground truth alone (vistest.eval.baselines);
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
from typing import Any

from .. import layout
from ..atomic import atomic_path, write_atomic
from ..questions import QUESTION_TYPES
from .answers import MRA_THRESHOLDS, Protocol
from .baselines import MOST_FREQUENT, SIZE_PRIOR, RankAttack, blind_predictions, rank_attack
from .metrics import (
    Coverage,
    HallucinationCell,
    LmmsEvalCheck,
    RowResult,
    ScoreCell,
    SensitivityCell,
    SummaryCell,
    coverage_cells,
    hallucination_cells,
    lmms_eval_check,
    match_predictions,
    metric_name,
    resolve_protocol,
    score_cells,
    sensitivity_cells,
    summary_cells,
)
from .records import (
    REAL_VARIANT,
    Prediction,
    RunTruth,
    budget_sort_key,
    is_size_type,
    load_predictions,
    load_run_dir,
    prediction_files,
)
from .tables import Table, markdown_table, text_table

PREDICTIONS_MODEL = "predictions"


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

    @property
    def budgets(self) -> list[str]:
        return sorted({c.budget for c in self.scores}, key=budget_sort_key)

    def to_dict(self) -> dict:
        from .. import __version__

        return {
            "vistest_version": __version__,
            "protocol": {"name": self.protocol.name, "lmms_eval_source": self.protocol.source,
                         "mra_thresholds": [float(x) for x in MRA_THRESHOLDS]},
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
        }


def build_report(truth: RunTruth, predictions: Sequence[Prediction], protocol: str = "auto",
                 prediction_sources: Sequence[str] = (), run_dir: str = "", splits: int = 200,
                 seed: int = 0) -> Report:
    """Score ``predictions`` against ``truth``; add the blind baselines (vistest.eval.baselines)
    computed from the truths alone. ``protocol``: one of vistest.eval.metrics.PROTOCOL_CHOICES; ``splits``/``seed``:
    the held-out rank attack's random half-splits."""
    truths = truth.truths
    proto = resolve_protocol(protocol, {t.question_type for t in truths})
    m = match_predictions(proto, truths, predictions)
    cells = list(score_cells(PREDICTIONS_MODEL, m.rows, truths))
    for model in (MOST_FREQUENT, SIZE_PRIOR):
        blind = match_predictions(proto, truths, blind_predictions(truths, model))
        cells.extend(score_cells(model, blind.rows, truths))
    return Report(proto, run_dir, truth.files, tuple(prediction_sources), coverage_cells(truths, m),
                  tuple(p.where for p in m.unmatched[:10]), len(m.unmatched), tuple(cells),
                  summary_cells(cells, proto), hallucination_cells(m.rows), sensitivity_cells(m.rows),
                  rank_attack(truths, splits=splits, seed=seed), lmms_eval_check(m.rows), m.rows)


# ---- tables -----------------------------------------------------------------------------
def _f(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _score_table(report: Report, models: Sequence[str], title: str, note: str,
                 show: Callable[[str, str], bool] = lambda model, qtype: True) -> Table:
    """Types as rows, budgets as columns, then lmms-eval's overall per model; ``show(model,
    question_type)`` selects the type rows (the overall always covers every type)."""
    budgets = report.budgets
    rows = []
    for model in models:
        cells = {(c.budget, c.question_type): c for c in report.scores
                 if c.model == model and show(model, c.question_type)}
        for qt in sorted({qt for _, qt in cells}):
            first = next(c for (b, t), c in cells.items() if t == qt)
            vals = []
            for b in budgets:
                c = cells.get((b, qt))
                vals.append("" if c is None else f"{_f(c.score)} ({c.n}/{c.n_truth})")
            rows.append(((model,) if len(models) > 1 else ()) + (qt, first.metric, *vals))
        summ = {s.budget: s.values for s in report.summaries if s.model == model}
        if summ:
            name = f"overall [lmms-eval {report.protocol.overall}]"
            rows.append(((model,) if len(models) > 1 else ()) + (name, "", *(_f(summ.get(b, {}).get(
                report.protocol.overall)) if b in summ else "" for b in budgets)))
    head = (("model",) if len(models) > 1 else ()) + ("question_type", "metric", *budgets)
    return Table(title, note, head, tuple(rows), len(head) - len(budgets))


def report_tables(report: Report) -> list[Table]:
    """The report's tables, in order: scores, blind baselines, coverage, hallucination,
    evidence sensitivity, rank attack."""
    p = report.protocol
    tables = [
        _score_table(report, [PREDICTIONS_MODEL], "Scores on the real videos",
                     f"Accuracy (MCQ) or MRA (numeric), parsed and scored as lmms-eval's {p.name} task; "
                     f"cells show score (rows predicted / answerable rows)."),
        _score_table(report, [MOST_FREQUENT, SIZE_PRIOR], "Blind baselines (from the questions alone)",
                     "most-frequent: the modal answer per type and budget (the median for continuous numbers); "
                     "size-prior: the leave-one-out mean size of the object's category (most-frequent elsewhere, "
                     "so its overall is the best blind model's).",
                     show=lambda model, qtype: model != SIZE_PRIOR or is_size_type(qtype)),
        Table("Coverage", f"{report.n_unmatched} prediction(s) matched no ground-truth row.",
              ("variant", "budget", "rows", "answerable", "predicted", "missing"),
              tuple((c.variant, c.budget, str(c.n_truth), str(c.n_scorable), str(c.n_predicted), str(c.n_missing))
                    for c in report.coverage), 2),
    ]
    if report.hallucination:
        tables.append(Table(
            "Hallucination where the evidence was removed",
            "Dummy videos and unanswerable budget rows: a non-zero count (counting) or a confident number / "
            "option letter (others) is a hallucination; abstained = no parsable answer.",
            ("variant", "budget", "question_type", "rule", "n", "hallucinated", "rate", "abstained", "zero"),
            tuple((c.variant, c.budget, c.question_type, c.rule, str(c.n), str(c.hallucinated), _f(c.rate),
                   str(c.abstained), str(c.zero) if c.rule == "nonzero_count" else "") for c in report.hallucination),
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
    return [f"protocol: {report.protocol.name} (lmms-eval {report.protocol.source})",
            f"ground truth: {', '.join(report.truth_files)}",
            f"predictions: {', '.join(report.prediction_files) or '(none)'}"] + _check_lines(report)


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
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100, metadata={"Software": None})


def plot_accuracy_vs_budget(report: Report, path: Path) -> bool:
    """One line per question type (score vs budget), the lmms-eval overall in black and the
    blind most-frequent overall dashed. False (nothing written) when nothing was scored."""
    from matplotlib.figure import Figure

    cells = [c for c in report.scores if c.model == PREDICTIONS_MODEL and c.score is not None]
    if not cells:
        return False
    budgets = report.budgets
    x = {b: i for i, b in enumerate(budgets)}
    fig = Figure(figsize=(8, 5))
    ax = fig.add_subplot()
    for qt in sorted({c.question_type for c in cells}):
        pts = sorted((x[c.budget], c.score) for c in cells if c.question_type == qt)
        label = f"{qt} ({metric_name(QUESTION_TYPES[qt].answer)})"
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    for model, style in ((PREDICTIONS_MODEL, {"color": "black", "linewidth": 2.5, "label": "overall"}),
                         (MOST_FREQUENT, {"color": "gray", "linestyle": "--", "label": "blind most-frequent overall"})):
        pts = [(x[s.budget], s.values[report.protocol.overall]) for s in report.summaries if s.model == model]
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


def plot_real_vs_dummy(report: Report, path: Path) -> bool:
    """Per question type, pooled over budgets: real vs dummy score (against the real ground
    truth) per dummy variant, and the hallucination rate on dummies. False when no dummy
    rows were predicted."""
    from matplotlib.figure import Figure

    dummy_h = [c for c in report.hallucination if c.variant != REAL_VARIANT]
    if not report.sensitivity and not dummy_h:
        return False
    fig = Figure(figsize=(11, 4.5))
    ax1, ax2 = fig.subplots(1, 2)
    variants = sorted({c.variant for c in report.sensitivity})
    types = sorted({c.question_type for c in report.sensitivity})
    width = 0.8 / (1 + len(variants))
    for i, qt in enumerate(types):
        for j, v in enumerate(variants):
            cs = [c for c in report.sensitivity if c.question_type == qt and c.variant == v]
            if j == 0:
                ax1.bar(i, _weighted(cs, lambda c: c.real), width, color="tab:blue", label="real" if i == 0 else None)
            ax1.bar(i + (j + 1) * width, _weighted(cs, lambda c: c.dummy), width, color=f"C{j + 1}",
                    label=v if i == 0 else None)
    ax1.set_xticks([i + width * len(variants) / 2 for i in range(len(types))], types, rotation=30, ha="right",
                   fontsize=7)
    ax1.set_ylim(0, 1.05)
    ax1.set_ylabel("score vs the real ground truth")
    ax1.set_title("real vs dummy")
    if types:
        ax1.legend(fontsize=7)
    htypes = sorted({(c.variant, c.question_type) for c in dummy_h})
    ax2.bar(range(len(htypes)), [_weighted([c for c in dummy_h if (c.variant, c.question_type) == k],
                                           lambda c: c.rate) for k in htypes], color="tab:red")
    ax2.set_xticks(range(len(htypes)), [f"{qt}\n[{v}]" for v, qt in htypes], rotation=30, ha="right", fontsize=7)
    ax2.set_ylim(0, 1.05)
    ax2.set_ylabel("hallucination rate")
    ax2.set_title("hallucination on dummies")
    fig.tight_layout()
    _save_figure(fig, path)
    return True


def write_report(report: Report, outdir: str | os.PathLike, model: str = PREDICTIONS_MODEL) -> dict[str, Path]:
    """Write ``report.json``, ``report.md``, ``rows.jsonl`` (every predicted row, parsed and
    scored) and the PNG plots into ``outdir``, each atomically. Returns name -> path."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    plots: dict[str, str] = {}
    for caption, name, fn in (("score vs frame budget", PLOT_BUDGET, plot_accuracy_vs_budget),
                              ("real vs dummy", PLOT_DUMMY, plot_real_vs_dummy)):
        if fn(report, outdir / name):
            plots[caption] = name
            written[name] = outdir / name
        elif (outdir / name).exists():
            (outdir / name).unlink()  # a stale plot from an earlier run would contradict report.md
    for name, text in (("report.json", json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"),
                       ("report.md", render_markdown(report, plots)),
                       ("rows.jsonl", "".join(json.dumps(r.to_dict(model), ensure_ascii=False) + "\n"
                                              for r in report.rows))):
        write_atomic(outdir / name, text)
        written[name] = outdir / name
    return written


def run_score(prediction_paths: Sequence[str | os.PathLike], run_dir: str | os.PathLike,
              outdir: str | os.PathLike | None = None, protocol: str = "auto", splits: int = 200,
              seed: int = 0) -> tuple[Report, dict[str, Path]]:
    """``vistest score``: load, score, write (default OUT: ``RUN_DIR/score``). Files of an
    earlier report under OUT are not read as predictions when a folder is given."""
    out = Path(outdir) if outdir else layout.score_dir(run_dir)
    truth = load_run_dir(run_dir)
    files = [f for f in prediction_files(prediction_paths) if out.resolve() not in f.resolve().parents]
    preds = [p for f in files for p in load_predictions(f)]
    report = build_report(truth, preds, protocol, [str(f) for f in files], str(run_dir), splits, seed)
    return report, write_report(report, out)
