"""Debiasing over the whole set of generated questions (every scene together).

In order, per question type (vistest.generate.rules.BalanceRules):

1. **Answer caps** (on the whole pool, again after step 2): a counting answer may hold at most
   ``max_count_share`` of its type's questions, a direction word (left, back-right ...) at most
   ``1/k + direction_answer_tolerance``.
   The largest set meeting the cap is kept; which questions of an over-represented answer go
   is drawn at random. With fewer distinct answers than the cap allows (3 counts under a 25%
   cap), the cap is raised to an equal share (1/distinct) and the report says so.
2. **Per-scene caps**: at most the family's ``max_per_scene`` questions of the type per scene,
   drawn at random (ReVSI's caps).
3. **Blind pruning** (numeric types): while a blind baseline (most-frequent, size-prior) scores
   more than ``blind_margin`` above chance (vistest.generate.blind), the ``prune_step`` share of
   questions it answers best relative to their own chance is removed, never more than
   ``max_prune_fraction`` of the type and never below ``min_questions`` (as VSI-Bench-Debiased's
   test-set stress test prunes what blind models answer).
4. **Options**: the correct option's position (letter) follows a balanced sequence (each letter
   ``ceil`` or ``floor`` of n/k times) shuffled at random, the wrong options fill the other
   positions in random order; for numeric options (``*_mcq``) the answer's rank among the values
   follows a second, independent balanced sequence (vistest.generate.rules.NumericMcqRules), so
   neither the letter nor the rank carries the answer.

Every draw comes from one ``numpy.random.Generator``, over questions in their sorted order
(Candidate.key): the same candidates and seed give the same set.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from . import blind
from .candidates import NUMERIC_MCQ_TYPES, Candidate, significant, to_record
from .rules import BalanceRules, NumericMcqRules, Rules
from .templates import LETTERS

COUNTING_TYPES = ("object_counting_single", "object_counting_multiple")
DIRECTION_PREFIX = "object_rel_direction_"


@dataclass(frozen=True)
class Placed:
    """A balanced question: its candidate, option texts in order (None for numeric) and the
    correct letter (None for numeric). ``rank``: numeric options only, the answer's rank
    among the values (0 = smallest)."""

    candidate: Candidate
    options: tuple[str, ...] | None = None
    letter: str | None = None
    rank: int | None = None


@dataclass(frozen=True)
class Removal:
    """``n`` questions of ``question_type`` removed by the balancing step ``step``; ``note`` says why."""

    question_type: str
    step: str
    n: int
    note: str = ""


def _groups(cands: Sequence[Candidate]) -> dict[str, list[Candidate]]:
    out: dict[str, list[Candidate]] = defaultdict(list)
    for c in sorted(cands, key=lambda c: c.key):
        out[c.question_type].append(c)
    return dict(sorted(out.items()))


def answer_of(c: Candidate) -> str:
    """The answer a cap counts: the number written (numeric) or the correct option's text."""
    return c.answer if c.answer is not None else c.answer_text


def cap_shares(cands: list[Candidate], share: float, rng: np.random.Generator) -> tuple[list[Candidate], str]:
    """The largest subset in which no answer exceeds ``share`` of the subset (module docstring).
    Returns (kept in key order, a note when the cap had to be raised)."""
    by_answer: dict[str, list[Candidate]] = defaultdict(list)
    for c in cands:
        by_answer[answer_of(c)].append(c)
    note = ""
    distinct = len(by_answer)
    if distinct and share * distinct < 1.0 - 1e-12:
        note = f"{distinct} distinct answers: cap raised from {share:.0%} to {1 / distinct:.0%}"
        share = 1.0 / distinct
    counts = {a: len(v) for a, v in by_answer.items()}
    keep_n = 0
    for total in range(len(cands), 0, -1):
        cap = math.floor(share * total + 1e-9)
        if sum(min(n, cap) for n in counts.values()) >= total:
            keep_n = total
            break
    cap = math.floor(share * keep_n + 1e-9)
    kept: list[Candidate] = []
    for a in sorted(by_answer):
        group = by_answer[a]
        if len(group) > cap:
            pick = np.sort(rng.permutation(len(group))[:cap])
            group = [group[i] for i in pick]
        kept.extend(group)
    return sorted(kept, key=lambda c: c.key), note


def prune_blind(cands: list[Candidate], rules: BalanceRules, rng: np.random.Generator) -> list[Candidate]:
    """Blind pruning of one numeric type (module docstring); returns the kept candidates in key order."""
    n0 = len(cands)
    if n0 < rules.min_questions:
        return cands
    floor_n = max(rules.min_questions, math.ceil(n0 * (1.0 - rules.max_prune_fraction)))
    kept = list(cands)
    tiebreak = {c.key: float(x) for c, x in zip(cands, rng.random(n0))}
    while len(kept) > floor_n:
        rows = blind.truths([to_record(c, f"q{i}") for i, c in enumerate(kept)])
        chance = blind.chance_scores(rows)
        scores = np.stack([blind.model_scores(rows, m) for m in blind.BLIND_MODELS])
        if (scores.mean(axis=1) - chance.mean()).max() <= rules.blind_margin:
            break
        advantage = scores.max(axis=0) - chance
        step = max(1, min(len(kept) - floor_n, math.floor(rules.prune_step * len(kept))))
        order = sorted(range(len(kept)), key=lambda i: (-advantage[i], tiebreak[kept[i].key]))
        drop = set(order[:step])
        kept = [c for i, c in enumerate(kept) if i not in drop]
    return kept


def balanced_positions(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` positions in ``range(k)``, each used floor or ceil of n/k times, in random order."""
    seq = np.tile(np.arange(k), -(-n // k))[:n] if n else np.zeros(0, int)
    return seq[rng.permutation(n)] if n else seq


def numeric_options(value: float, rank: int, rules: NumericMcqRules) -> list[float]:
    """The option values, smallest first: ``value * step_ratio ** (i - rank)``."""
    return [value * rules.step_ratio ** (i - rank) for i in range(rules.num_options)]


def place_options(cands: list[Candidate], mcq: NumericMcqRules, rng: np.random.Generator) -> list[Placed]:
    """Options and letters for one type (module docstring, step 4)."""
    if not cands:
        return []
    c0 = cands[0]
    if not c0.is_mcq:
        return [Placed(c) for c in cands]
    numeric = c0.question_type in NUMERIC_MCQ_TYPES
    k = mcq.num_options if numeric else 1 + len(c0.distractors)
    letters = balanced_positions(len(cands), k, rng)
    ranks = balanced_positions(len(cands), k, rng) if numeric else None
    out = []
    for i, c in enumerate(cands):
        pos = int(letters[i])
        if numeric:
            r = int(ranks[i])
            texts = [significant(v, mcq.significant_digits) for v in numeric_options(c.value, r, mcq)]
            answer, others = texts[r], [t for j, t in enumerate(texts) if j != r]
        else:
            r, answer, others = None, c.answer, list(c.distractors)
        others = [others[j] for j in rng.permutation(len(others))]
        options = others[:pos] + [answer] + others[pos:]
        out.append(Placed(c, tuple(options), LETTERS[pos], r))
    return out


def per_scene_cap(qtype: str, rules: Rules) -> int:
    """The cap of one type per scene (0: none), from the family's rules."""
    r = rules
    caps = {"object_counting_single": r.counting.max_single_per_scene,
            "object_counting_multiple": r.counting.max_multiple_per_scene,
            "object_size_estimation": r.size.max_per_scene, "object_size_estimation_mcq": r.size.max_per_scene,
            "object_abs_distance": r.abs_distance.max_per_scene,
            "object_abs_distance_mcq": r.abs_distance.max_per_scene,
            "object_rel_distance_closest": r.rel_distance.max_closest_per_scene,
            "object_rel_distance_farthest": r.rel_distance.max_farthest_per_scene,
            "obj_appearance_order": r.appearance.max_per_scene}
    if qtype.startswith(DIRECTION_PREFIX):
        return r.rel_direction.max_per_scene
    return caps.get(qtype, 0)


def cap_per_scene(cands: list[Candidate], cap: int, rng: np.random.Generator) -> list[Candidate]:
    """At most ``cap`` candidates of each scene (0: no cap), drawn at random; key order kept."""
    if not cap:
        return cands
    per: dict[str, list[Candidate]] = defaultdict(list)
    for c in cands:
        per[c.scene_id].append(c)
    out = []
    for sid in sorted(per):
        g = per[sid]
        if len(g) > cap:
            g = [g[i] for i in np.sort(rng.choice(len(g), size=cap, replace=False))]
        out.extend(g)
    return sorted(out, key=lambda c: c.key)


def balance(cands: Sequence[Candidate], rules: Rules, rng: np.random.Generator
            ) -> tuple[list[Placed], list[Removal], list[str]]:
    """The balanced set (module docstring): (placed questions in key order, removals, notes)."""
    b = rules.balance
    removals: list[Removal] = []
    notes: list[str] = []
    placed: list[Placed] = []

    def step(qtype: str, name: str, before: int, after: list[Candidate], note: str = "") -> list[Candidate]:
        if before - len(after):
            removals.append(Removal(qtype, name, before - len(after), note))
        return after

    for qtype, group in _groups(cands).items():
        capped_answers = qtype in COUNTING_TYPES or qtype.startswith(DIRECTION_PREFIX)
        share = (b.max_count_share if qtype in COUNTING_TYPES else 1.0 / (1 + len(group[0].distractors))
                 + b.direction_answer_tolerance)
        note = ""
        if capped_answers:  # on the whole pool first, so the per-scene caps draw from a balanced pool
            kept, note = cap_shares(group, share, rng)
            group = step(qtype, "answer_cap", len(group), kept, note)
        group = step(qtype, "per_scene_cap", len(group), cap_per_scene(group, per_scene_cap(qtype, rules), rng))
        if capped_answers:  # again: the per-scene draw may have tilted the shares
            kept, _ = cap_shares(group, share, rng)
            group = step(qtype, "answer_cap", len(group), kept, note)
        if note:
            notes.append(f"{qtype}: {note}")
        if group and not group[0].is_mcq:
            group = step(qtype, "blind_pruning", len(group), prune_blind(group, b, rng))
        placed.extend(place_options(group, rules.numeric_mcq, rng))
    merged: dict[tuple[str, str], Removal] = {}
    for rm in removals:
        k = (rm.question_type, rm.step)
        merged[k] = Removal(rm.question_type, rm.step, rm.n + (merged[k].n if k in merged else 0), rm.note)
    return sorted(placed, key=lambda p: p.candidate.key), list(merged.values()), notes
