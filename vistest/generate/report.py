"""What ``vistest generate`` made: how many questions each step kept, the answer distributions,
the debiasing targets (pass / fail), vistest's blind baselines against chance, and how many
answers hold at each frame budget. ``GenerateReport.to_dict`` is report.json; ``text`` and
``markdown`` render the same tables.

Targets checked (issues #14, #23, #34): no counting answer above ``balance.max_count_share`` of
its type; correct letters uniform (each within ``balance.letter_tolerance`` of 1/k) per
multiple-choice type; numeric options within ``[min_ratio, max_ratio]`` times the answer and
``step_ratio`` apart, the answer's rank uniform; every blind attack of vistest.eval.attacks (the
world prior fitted on real scans included), held out by scene, at most ``balance.blind_margin``
above chance (per type from ``balance.min_judged`` questions on; smaller types pooled, and the
pool judged from that size on), two-sided for multiple choice (every attack's complement
``not-X``, one of the options X does not pick, against its held-out chance: its mean gap with
the answer keys re-drawn within the set's balances, ``balance.null_permutations`` on the first
fold seed's folds: what holding out alone gives on a balanced set), on ``balance.judge_fold_seeds``
fold seeds (``seed``, ``seed + 1`` ...), which the pruning never scores on: a cell is judged on
its mean gap over the seeds, and the table of fold seeds gives its gap on each, the mean and the
worst. What a user decides on: per type the answerable pool, the questions drawn within the
per-scene caps, kept, and the kept shares; the trade-off curve of the pruning (questions kept
against the worst held-out gap, :func:`curve_png`); each question's bias score
(``bias_scores.jsonl``, :meth:`GenerateReport.bias_lines`); per numeric type, beside its chance,
the held-out training median, per-label median and world prior (issue #43,
:meth:`GenerateReport.numeric_baselines`: every type on its own, however small); the attacks that
raised, if any (a bug, named in the notes; the set is still written).
"""
from __future__ import annotations

import dataclasses
import io
import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..budgets import budget_label, parse_budget
from ..budget.rows import CHANGED, KEPT, UNANSWERABLE
from ..budget.truth import budget_truth
from ..questions import option_letter, parse_questions
from ..eval.attacks import (NUMERIC_BASELINES, TRAINING_MEDIAN, AttackReport, SeedCell, across_seeds,
                            attack_cells, seeds_table)
from .balance import CurvePoint, ladder_rules, letter_granularity
from .blind import attack_report
from .candidates import LADDER_TYPES
from .rules import Rules, rule_table


@dataclass(frozen=True)
class Funnel:
    """Questions of one type after each step: candidates ``found``, ``pooled`` (the random pool
    per scene), ``answerable`` (the budget stage keeps the answer), ``final`` (after balancing);
    ``removed``: (balancing step, n)."""

    question_type: str
    found: int
    pooled: int
    answerable: int
    final: int
    removed: tuple[tuple[str, int], ...] = ()

    @property
    def drawn(self) -> int:
        """The questions before the pruning: answerable, within the per-scene caps and answer caps."""
        return self.answerable - sum(n for s, n in self.removed if s != "bias_pruning")


@dataclass(frozen=True)
class Distribution:
    """The answers of one type: ``answers`` (value or option text, n) sorted by value;
    ``letters`` (letter, n) for multiple choice; ``ranks`` (rank of the answer among numeric
    options from the smallest, n); ``quantiles`` (min, 25%, median, 75%, max) of numbers."""

    question_type: str
    n: int
    answers: tuple[tuple[str, int], ...]
    letters: tuple[tuple[str, int], ...] = ()
    ranks: tuple[tuple[int, int], ...] = ()
    quantiles: tuple[float, ...] = ()


@dataclass(frozen=True)
class Check:
    """One debiasing target: ``value`` measured, ``limit`` (text), ``ok``."""

    target: str
    question_type: str
    value: float
    limit: str
    ok: bool


@dataclass(frozen=True)
class Answerability:
    """Budget stage statuses of one type at one budget (``kept`` + ``changed`` are answerable)."""

    budget: str
    question_type: str
    kept: int
    changed: int
    unanswerable: int


@dataclass(frozen=True)
class GenerateReport:
    """Everything ``vistest generate`` reports (module docstring)."""

    seed: int
    scene_ids: tuple[str, ...]
    types: tuple[str, ...]
    rules: Rules
    funnel: tuple[Funnel, ...]
    distributions: tuple[Distribution, ...]
    checks: tuple[Check, ...]
    attacks: AttackReport | None
    answerability: tuple[Answerability, ...]
    notes: tuple[str, ...] = ()
    attack_seeds: tuple[AttackReport, ...] = ()
    fold_seeds: tuple[int, ...] = ()
    bias: Mapping[str, tuple[float, float]] | None = None
    curve: tuple[CurvePoint, ...] = ()
    dropped_candidates: int = 0

    @property
    def seed_cells(self) -> tuple[SeedCell, ...]:
        """Every (attack, type) on each of the report's fold seeds (``attack_seeds``): gaps, mean, worst."""
        return across_seeds(self.attack_seeds, self.fold_seeds) if self.attack_seeds else ()

    @property
    def n_questions(self) -> int:
        return sum(f.final for f in self.funnel)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def to_dict(self) -> dict:
        from .. import freshness

        return {"rules_versions": freshness.stamp("generate report"), "seed": self.seed, "scenes": list(self.scene_ids),
                "types": list(self.types), "questions": self.n_questions, "targets_met": self.ok,
                "rules": {name: json.loads(default) for name, default, _, _ in rule_table(self.rules)},
                "funnel": [dataclasses.asdict(f) for f in self.funnel],
                "distributions": [dataclasses.asdict(d) for d in self.distributions],
                "checks": [dataclasses.asdict(c) for c in self.checks],
                "blind_attacks": None if self.attacks is None else self.attacks.to_dict(),
                "blind_attacks_over_fold_seeds": {"fold_seeds": list(self.fold_seeds),
                                                  "cells": [c.to_dict() for c in self.seed_cells]},
                "numeric_baselines": [dict(zip(("question_type", "n", "chance", *NUMERIC_BASELINES, "largest"), r))
                                      for r in self.numeric_baselines()],
                "kept": [{"question_type": f.question_type, "answerable": f.answerable, "drawn": f.drawn,
                          "kept": f.final} for f in self.funnel],
                "curve": [{**dataclasses.asdict(p), "worst_gap": p.worst_gap if np.isfinite(p.worst_gap) else None}
                          for p in self.curve],
                "dropped_candidates": self.dropped_candidates,
                "answerability": [dataclasses.asdict(a) for a in self.answerability],
                "notes": list(self.notes)}

    def bias_lines(self) -> str:
        """``bias_scores.jsonl``: per question of the set (id order), its bias score (module
        docstring; vistest.generate.balance.bias_scores): ``score`` the content attacks' mean
        held-out score of the gold answer, ``chance``, ``bias`` their difference (null where no
        content attack applies)."""
        out = []
        for qid in sorted(self.bias or {}):
            score, chance = self.bias[qid]
            ok = np.isfinite(score)
            out.append(json.dumps({"id": qid, "score": round(score, 4) if ok else None, "chance": round(chance, 4),
                                   "bias": round(score - chance, 4) if ok else None}) + "\n")
        return "".join(out)

    def tables(self) -> list[tuple[str, list[str], list[list[str]]]]:
        """(title, header, rows) of every table, in report order."""
        t = []
        t.append(("Questions per step", ["type", "found", "pooled", "answerable", "final", "removed by balancing"],
                  [[f.question_type, str(f.found), str(f.pooled), str(f.answerable), str(f.final),
                    ", ".join(f"{s} {n}" for s, n in f.removed) or "-"] for f in self.funnel]))
        tot = [sum(getattr(f, k) for f in self.funnel) for k in ("answerable", "drawn", "final")]
        t.append(("Kept per type (drawn: answerable within the per-scene and answer caps, before the pruning)",
                  ["type", "answerable", "drawn", "kept", "kept % of answerable", "kept % of drawn"],
                  [[f.question_type, str(f.answerable), str(f.drawn), str(f.final),
                    f"{100 * f.final / max(1, f.answerable):.0f}", f"{100 * f.final / max(1, f.drawn):.0f}"]
                   for f in self.funnel]
                  + [["all types", *map(str, tot), f"{100 * tot[2] / max(1, tot[0]):.0f}",
                      f"{100 * tot[2] / max(1, tot[1]):.0f}"]]))
        if self.curve:
            t.append(("Trade-off of the pruning (each round: questions kept, the worst judged held-out attack gap "
                      "above chance on that round's fold seed)", ["round", "removed", "kept", "removed %",
                                                                  "worst gap (points)", "worst cell"],
                      [[str(p.round), str(p.removed), str(p.kept), f"{100 * p.share:.0f}",
                        f"{100 * p.worst_gap:+.1f}" if np.isfinite(p.worst_gap) else "-", p.worst_cell]
                       for p in self.curve]))
        t.append(("Answer distributions", ["type", "n", "answers", "letters", "answer rank"],
                  [[d.question_type, str(d.n), _answers_text(d), " ".join(f"{a}:{n}" for a, n in d.letters) or "-",
                    " ".join(f"{r + 1}:{n}" for r, n in d.ranks) or "-"] for d in self.distributions]))
        t.append(("Debiasing targets", ["target", "type", "value", "limit", "ok"],
                  [[c.target, c.question_type, f"{c.value:.3f}", c.limit, "yes" if c.ok else "NO"]
                   for c in self.checks]))
        if self.attacks is not None:
            a = self.attacks.table()
            t.append((f"{a.title}, fold seed {self.seed} (revsi scoring; numbers: MRA; {a.note})", list(a.headers),
                      [list(r) for r in a.rows]))
            a = seeds_table(self.seed_cells, self.attacks.folds.scheme)
            t.append((f"{a.title} ({a.note})", list(a.headers), [list(r) for r in a.rows]))
            rows = self.numeric_baselines()
            if rows:
                t.append(("Numeric types against their baselines (held out by scene, mean over the fold seeds; "
                          "score = MRA for numbers, accuracy for numeric options; gap = score - chance in points; "
                          "'largest': the attack of largest gap; a type under balance.min_judged is pooled in the "
                          "tables above, shown alone here)",
                          ["type", "n", "chance", *NUMERIC_BASELINES, "largest attack"], rows))
        t.append(("Answers that hold per frame budget (budget stage)",
                  ["budget", "type", "kept", "changed", "unanswerable", "kept %"],
                  [[a.budget, a.question_type, str(a.kept), str(a.changed), str(a.unanswerable),
                    f"{100 * a.kept / max(1, a.kept + a.changed + a.unanswerable):.0f}"] for a in self.answerability]))
        return t

    def numeric_baselines(self) -> list[list[str]]:
        """Per numeric type (numbers and numeric options): its chance and beside it the held-out
        gaps of the training median, the per-label median and the world prior (issue #43), and
        the attack of largest gap, each the mean over the report's fold seeds, every type on its
        own (small types too)."""
        if not self.attack_seeds:
            return []
        gaps: dict[tuple[str, str], list[float]] = defaultdict(list)
        chance: dict[str, float] = {}
        n: dict[str, int] = {}
        for r in self.attack_seeds:
            for c in attack_cells(r.row_scores, 1, r.cells[0].margin if r.cells else 0.05):
                if c.complement or c.pooled:
                    continue
                gaps[(c.question_type, c.attack)].append(c.gap)
                if c.attack == TRAINING_MEDIAN:
                    chance[c.question_type], n[c.question_type] = c.chance, c.n
        out = []
        for qtype in sorted(chance):
            mean = {a: float(np.mean(g)) for (t, a), g in gaps.items() if t == qtype}
            top = max(mean, key=lambda a: (mean[a], a))
            out.append([qtype, str(n[qtype]), f"{100 * chance[qtype]:.1f}",
                        *(f"{100 * mean[a]:+.1f}" if a in mean else "-" for a in NUMERIC_BASELINES),
                        f"{top} {100 * mean[top]:+.1f}"])
        return out

    def text(self) -> str:
        head = (f"vistest generate: {self.n_questions} questions from {len(self.scene_ids)} scene(s), "
                f"seed {self.seed}; "
                f"targets {'met' if self.ok else 'NOT met'}")
        out = [head]
        for title, header, rows in self.tables():
            out += ["", title, _text_table(header, rows)]
        out += [""] + [f"note: {n}" for n in self.notes]
        return "\n".join(out).rstrip() + "\n"

    def markdown(self) -> str:
        out = [f"# vistest generate\n\n{self.n_questions} questions from {len(self.scene_ids)} scene(s), seed "
               f"{self.seed}; debiasing targets {'met' if self.ok else '**not met**'}. Types: "
               f"{', '.join(self.types)}."]
        for title, header, rows in self.tables():
            out.append(f"## {title}\n\n" + _md_table(header, rows))
        if self.notes:
            out.append("## Notes\n\n" + "\n".join(f"- {n}" for n in self.notes))
        out.append("## Rules\n\n" + _md_table(["parameter", "value", "source"],
                                               [[n, f"`{v}`", s] for n, v, _, s in rule_table(self.rules)]))
        return "\n\n".join(out) + "\n"


def _answers_text(d: Distribution, keep: int = 8) -> str:
    if d.quantiles:
        return "min/25%/median/75%/max " + " / ".join(f"{q:g}" for q in d.quantiles)
    shown = sorted(d.answers, key=lambda a: -a[1])[:keep]
    more = len(d.answers) - len(shown)
    return " ".join(f"{a}:{n}" for a, n in shown) + (f" (+{more} more)" if more > 0 else "")


def _text_table(header: list[str], rows: list[list[str]]) -> str:
    w = [max(len(str(x)) for x in col) for col in zip(header, *rows)] if rows else [len(h) for h in header]
    lines = ["  ".join(h.ljust(w[i]) for i, h in enumerate(header))]
    lines += ["  ".join(str(c).ljust(w[i]) for i, c in enumerate(r)) for r in rows]
    return "\n".join(x.rstrip() for x in lines)


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    def cell(s: str) -> str:
        return str(s).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# building
# ---------------------------------------------------------------------------------------
def _by_type(records: Sequence[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        out[r["question_type"]].append(r)
    return dict(sorted(out.items()))


def _option_texts(r: dict) -> list[str]:
    return [option_letter(o)[1] for o in r["options"]]


def _answer_text(r: dict) -> str:
    if r.get("options"):
        letters = [option_letter(o)[0] for o in r["options"]]
        return _option_texts(r)[letters.index(r["ground_truth"])]
    return str(r["ground_truth"])


def distributions(records: Sequence[dict], placed_ranks: Mapping[str, int]) -> list[Distribution]:
    """Per type: the answers, letters and numeric-option ranks of the final questions."""
    out = []
    for qtype, rs in _by_type(records).items():
        answers = Counter(_answer_text(r) for r in rs)
        letters = tuple(sorted(Counter(r["ground_truth"] for r in rs if r.get("options")).items()))
        ranks = tuple(sorted(Counter(placed_ranks[r["id"]] for r in rs if r["id"] in placed_ranks).items()))
        quantiles: tuple[float, ...] = ()
        if not rs[0].get("options") and not qtype.startswith("object_counting"):
            v = np.array([float(r["ground_truth"]) for r in rs])
            quantiles = tuple(float(x) for x in np.round(np.quantile(v, [0, 0.25, 0.5, 0.75, 1.0]), 3))
        key = (lambda a: (float(a[0]), a[0])) if not rs[0].get("options") else (lambda a: (0.0, a[0]))
        out.append(Distribution(qtype, len(rs), tuple(sorted(answers.items(), key=key)), letters, ranks, quantiles))
    return out


def checks(records: Sequence[dict], dists: Sequence[Distribution], attacks: Sequence[SeedCell],
           rules: Rules) -> list[Check]:
    """The debiasing targets (module docstring)."""
    b = rules.balance
    out = []
    by_type = _by_type(records)
    for d in dists:
        rs = by_type[d.question_type]
        if d.question_type.startswith("object_counting"):
            share = max(n for _, n in d.answers) / d.n
            out.append(Check("max count share", d.question_type, share, f"<= {b.max_count_share:g}",
                             share <= b.max_count_share + 1e-9))
        if d.letters:
            k = len(rs[0]["options"])
            dev = max(abs(dict(d.letters).get(letter, 0) / d.n - 1 / k) for letter in "ABCDEFGHIJ"[:k])
            tol = max(b.letter_tolerance, letter_granularity(d.n, k))
            out.append(Check("letter share - 1/k", d.question_type, dev, f"<= {tol:.3g}", dev <= tol + 1e-9))
        if d.question_type.startswith("object_rel_direction_"):
            k = len(rs[0]["options"])
            share = max(n for _, n in d.answers) / d.n
            limit = 1 / k + b.direction_answer_tolerance
            out.append(Check("max direction share", d.question_type, share, f"<= {limit:.3f}", share <= limit + 1e-9))
        if d.question_type in LADDER_TYPES:
            m = ladder_rules(d.question_type, rules)
            lo, hi, step = _numeric_option_extent(rs)
            tol = 10.0 ** (1 - m.significant_digits)  # rounding of the shown values (relative, on a ratio of two)
            out.append(Check("options / answer", d.question_type, lo, f">= {m.min_ratio:g}",
                             lo >= m.min_ratio * (1 - tol)))
            out.append(Check("options / answer", d.question_type, hi, f"<= {m.max_ratio:g}",
                             hi <= m.max_ratio * (1 + tol)))
            out.append(Check("neighbour option ratio", d.question_type, step, f">= {m.step_ratio:g}",
                             step >= m.step_ratio * (1 - tol)))
            k = m.num_options
            dev = max(abs(dict(d.ranks).get(r, 0) / d.n - 1 / k) for r in range(k))
            tol = max(b.letter_tolerance, letter_granularity(d.n, k))
            out.append(Check("answer rank share - 1/k", d.question_type, dev, f"<= {tol:.3g}", dev <= tol + 1e-9))
    for c in attacks:
        if c.judged:  # too few questions: the gap is within sampling error (BalanceRules.min_judged)
            seeds = ", ".join(map(str, c.seeds))
            what = "held-out chance" if c.complement and b.null_permutations else "chance"
            out.append(Check(f"attack {c.attack} - {what} (mean over fold seeds {seeds})", c.question_type, c.mean,
                             f"<= {c.margin:g}", c.ok))
    return out


def _numeric_option_extent(rs: Sequence[dict]) -> tuple[float, float, float]:
    """(smallest option / answer, largest option / answer, smallest neighbour ratio) over questions,
    in magnitude (a signed ladder's options share the answer's sign)."""
    lo, hi, step = np.inf, 0.0, np.inf
    for r in rs:
        vals = np.abs([float(t) for t in _option_texts(r)])
        ans = abs(float(_answer_text(r)))
        lo, hi = min(lo, vals.min() / ans), max(hi, vals.max() / ans)
        s = np.sort(vals)
        step = min(step, float((s[1:] / s[:-1]).min()))
    return float(lo), float(hi), float(step)


def answerability(questions: Mapping[str, Sequence[dict]], scenes: Mapping[str, tuple], rules: Rules
                  ) -> list[Answerability]:
    """Budget-stage statuses of the final questions at every ``frames.report_budgets`` budget (the
    stage's other settings: ``frames.truth``)."""
    fr = rules.frames
    budgets = [parse_budget(b) for b in fr.report_budgets]
    truth = dataclasses.replace(fr.truth, budgets=tuple(budgets))
    counts: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for sid, recs in questions.items():
        if not recs:
            continue
        scene, vis = scenes[sid]
        qs = parse_questions([json.dumps(r) for r in recs], source=f"<generated {sid}>", scene=scene)
        bt = budget_truth(scene, vis, qs, truth)
        for it in bt.items:
            lab = budget_label(it.selection.budget)
            counts[(lab, it.question.question_type)][it.status] += 1
            counts[(lab, "all types")][it.status] += 1
    order = {budget_label(b): i for i, b in enumerate(budgets)}
    return [Answerability(b, t, c[KEPT], c[CHANGED], c[UNANSWERABLE])  # generated scenes are 3D: never unknown
            for (b, t), c in sorted(counts.items(), key=lambda kv: (order[kv[0][0]], kv[0][1] == "all types",
                                                                   kv[0][1]))]


def build_report(questions: Mapping[str, Sequence[dict]], ranks: Mapping[str, int],
                 funnel: Mapping[str, Mapping[str, int]], removals, notes: Sequence[str],
                 scenes: Mapping[str, tuple], types: tuple[str, ...], rules: Rules, seed: int,
                 bias: Mapping[str, tuple[float, float]] | None = None, curve: Sequence[CurvePoint] = (),
                 dropped: int = 0) -> GenerateReport:
    """The report of one generation (see GenerateReport). ``ranks``: the answer's rank among the
    numeric options, by question id; ``funnel``: counts per type and step; ``removals``:
    vistest.generate.balance.Removal; ``scenes``: scene id -> (scene, visibility); ``bias``: each
    question's (score, chance) by id; ``curve``: the pruning's trade-off; ``dropped``: candidates
    that failed their own checks."""
    records = [r for sid in sorted(questions) for r in questions[sid]]
    final = Counter(r["question_type"] for r in records)
    removed: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for rm in removals:
        removed[rm.question_type].append((rm.step, rm.n))
    fun = tuple(Funnel(t, f["found"], f["pooled"], f["answerable"], final.get(t, 0), tuple(removed.get(t, ())))
                for t, f in sorted(funnel.items()))
    if len(questions) < 10:
        notes = [*notes, f"{len(questions)} scene(s): the targets are properties of a set; over a few scenes most "
                         f"types have too few questions to meet them (generate over many scenes, docs/generate.md)"]
    dists = distributions(records, ranks) if records else []
    b = rules.balance
    judge = tuple(range(seed, seed + b.judge_fold_seeds))
    runs = tuple(attack_report(records, s, min_judged=b.min_judged, margin=b.blind_margin,
                               permutations=b.null_permutations if s == seed else 0) for s in judge) if records else ()
    if runs and b.null_permutations:  # the held-out chance, drawn on the first fold seed, judges every seed
        null = {(c.question_type, c.attack): c.null for c in runs[0].cells if c.complement}
        runs = (runs[0],) + tuple(dataclasses.replace(r, cells=tuple(
            dataclasses.replace(c, null=null.get((c.question_type, c.attack))) if c.complement else c
            for c in r.cells)) for r in runs[1:])
    if runs:
        notes = [*notes, f"blind attacks: judged on the mean over fold seeds {', '.join(map(str, judge))}; the "
                         f"pruning scored on other fold seeds ({seed + b.judge_fold_seeds} first)"
                 + ("" if len(runs) < 2 or len({tuple(sorted(r.folds.fold_of.items())) for r in runs}) > 1 else
                    f" (held out {runs[0].folds.scheme}: every fold seed gives the same folds, so the balancing "
                    f"was scored on the folds judged here)")]
    errors = sorted({e for r in runs for e in r.row_scores.errors})
    if errors:
        notes = [*notes, f"{len(errors)} blind attack(s) raised and were left out of these tables (a vistest bug: "
                         f"please report it): {'; '.join(errors[:3])}"]
    rep = GenerateReport(seed, tuple(sorted(questions)), types, rules, fun, tuple(dists), (),
                         runs[0] if runs else None, tuple(answerability(questions, scenes, rules)), tuple(notes),
                         runs, judge, dict(bias or {}), tuple(curve), dropped)
    return dataclasses.replace(rep, checks=tuple(checks(records, dists, rep.seed_cells, rules)))


def curve_png(report: GenerateReport, path) -> bool:
    """The trade-off curve as a PNG (questions kept against the worst judged held-out attack gap,
    the target's margin drawn); False when there is no curve. Matplotlib's object API, Agg."""
    if not report.curve:
        return False
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from ..atomic import write_atomic

    fig = Figure(figsize=(6, 3.6), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    pts = [p for p in report.curve if np.isfinite(p.worst_gap)]
    ax.plot([100 * p.share for p in pts], [100 * p.worst_gap for p in pts], "o-", color="#1f77b4")
    for p in pts:
        ax.annotate(str(p.kept), (100 * p.share, 100 * p.worst_gap), textcoords="offset points", xytext=(3, 4),
                    fontsize=7)
    ax.axhline(100 * report.rules.balance.blind_margin, color="#d62728", ls="--", lw=1, label="target margin")
    ax.set_xlabel("questions removed by the pruning (%)")
    ax.set_ylabel("worst held-out attack gap (points)")
    ax.set_title("Bias pruning: questions kept (labels) vs the worst attack", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    write_atomic(path, buf.getvalue())
    return True
