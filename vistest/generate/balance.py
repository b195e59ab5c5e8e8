"""Debiasing over the whole set of generated questions (every scene together).

In order (vistest.generate.rules.BalanceRules):

1. **Answer caps** per type (on the whole pool, again after step 2 and after every pruning
   round): a counting answer may hold at most ``max_count_share`` of its type's questions (20%:
   VSI-Bench-Debiased's ``max_pct_threshold``), a direction word (left, back-right ...; the
   dynamic heading's right, away ...) at most ``1/k + direction_answer_tolerance``. The largest
   set meeting the cap is kept; which questions of an over-represented answer go is drawn at
   random (so is which of several answers tied at the cap keeps its last place: every answer is
   capped alike). With fewer distinct answers than the cap allows (3 counts under a 20% cap),
   the cap is raised to an equal share (1/distinct) and the report says so. Direction words are
   capped again within each fold of scenes (the folds of the balancing's first fold seed; a fold
   lacking a word keeps what the share allows): capped only over the whole set, the word a
   held-out fold lacks is the most frequent one in training, and the held-out "most frequent word"
   attack lands up to 15 points below chance (measured on 30 rooms). Counting is capped over the
   whole set only (a fold holds too few counting questions to cap).
2. **Per-scene caps**: at most the family's ``max_per_scene`` questions of the type per scene
   (ReVSI's caps), drawn at random; for a multiple-choice type whose options are texts (not
   numbers), **counterbalanced** instead (``herd_option_texts``, :func:`option_items`): every
   option item (a label, with its place in an order) should win as often as chance says over the
   set, and every text-length rank of the keyed option too, so the draw herds: scenes in random
   order, each place of a scene to the candidate that leaves the summed imbalance of the kept
   candidates shortest, while that sum is longer than independent scenes without a prior would
   make it (``herd_share``: its squared length against the sum of the kept scenes' own), at
   random below. A prior on the option texts is then spent by the set's design, wherever it was
   learned: the attacks held out within a set of 30 rooms cannot estimate the appearance-order
   prior (large categories first), which a model trained on another set of the generator used
   (+3 to +15 points; docs/generate.md, "Transfer"), and herding the draw against an estimated
   prior kept its noise instead. Herded on to exact balance, the scenes' imbalances cancel each
   other (a scene's questions share its one order of appearance), and every attack held out by
   scene answers the other scenes' compensation: appearance order's option-label 14-22 points
   below chance, more than re-drawn keys reproduce (docs/generate.md).
3. **Twins** (issue #23): a numeric question and its numeric-option twin (``*_mcq``: the same
   object(s), vistest.generate.candidates.twin_key) are one unit: the twin keeps exactly the
   questions whose numeric partner the caps kept, and every later removal takes both.
4. **Blind attacks** (every attack of vistest.eval.attacks, held out by scene as the report
   holds them out), **cross-fitted**: the report judges on fold seeds ``seed`` .. ``seed +
   judge_fold_seeds - 1``; the balancing never scores on those. Each round scores every attack
   on ``fit_fold_seeds`` fold seeds of its own, new every round (:func:`fold_seeds`: the pruning
   of one round is checked on folds it was not chosen with; scored on fixed folds, the loop
   stops where those folds' noise happens to favour the set, and fresh folds find 3-7 cells
   above chance + 3 on 30 rooms). A cell's gap is its worst over the round's seeds (the
   largest), a question's score per attack its mean over them. The options are placed (step
   5), every attack is scored, and while a judged
   (type, attack) cell is more than ``blind_margin`` above chance (the failed target; an
   attack's complement cell ``not-X`` above the margin, i.e. the attack far below chance, is
   judged by the report and not pruned: removing what an attack gets wrong, tried, shrank every
   type to the floor, and putting pruned questions back cycled; docs/generate.md) the
   questions (units) it answers best relative to their chance are removed, at least one and
   about ``(gap - margin) x n``, never more than ``max_prune_fraction`` of a type nor below
   ``min_questions`` (for twins: of either type); the options are drawn again and everything
   rescored, at most ``max_rounds`` times. As VSI-Bench-Debiased's size filter
   (``get_object_size_estimation_scores_v2`` / ``filter_object_size_estimation_scored_v2`` in
   ``debias_vsi_clean.py`` of vision-x-nyu/test-set-training: drop the questions nearest their
   label's mean, iterated) this removes first what the per-label prior predicts. A cell still
   above with nothing left to prune goes further: past ``max_prune_fraction`` down to
   ``min_questions`` (the type and its twin), and when it stays above there, or it is a pool of
   types each below the floor, its type is dropped from the set with its twin (only when the
   attacks are held out by scene: never on one scene) (``drop_leaky_types``; in a pool, the type
   the attack answers most above chance) and the report's notes say which attack, by how much,
   on how many questions. Attacks that only see where the options are (the letter as a constant,
   the rank of a numeric option, the offset from "None of these") are answered by the new draw
   of the next round alone, not by pruning (with ``option_draws`` above 1, the draw of the most
   within the margin on the round's seeds is kept: a choice fitted to those seeds). What the
   last round could not bring within the margin stays in the report as a failed target (the
   last round prunes nothing: the set returned is the one it scored).
5. **Options**: per type and fold of scenes (the folds of the balancing's first fold seed), the
   correct option's position (letter) follows a balanced sequence (each letter ``floor`` or
   ``ceil`` of the fold's n/k times, the extra places to the letters used least in the folds
   before) shuffled at random, the wrong options fill the other positions in random order;
   numeric options (``*_mcq``, and the numeric dynamic types ``motion_*``) put the answer's rank
   among the values on a second, independent sequence drawn the same way, then build the ladder
   around it (:func:`numeric_options`; vistest.generate.rules.NumericMcqRules, MotionRules). Balanced per fold, not
   only over the whole set: with only a global balance, the letter a held-out fold lacks is the
   most frequent one in the other folds, so a held-out "always the training folds' most frequent
   letter" attack lands far below chance (the option order leaks in reverse: measured -10
   points on 30 rooms before issue #23).
6. **Swaps with the pool** (two-sided; ``swap_*`` rules): the pruning of step 4 removes what the
   attacks answer and overshoots (13 of 14 judged attacks more than 3 points below chance on 30
   rooms, their complements ``not-X`` up to 6 points above). Per type judged alone (at least
   ``min_judged`` kept), ``swap_proposals`` proposals each swap a kept question, at random,
   with one of the type's pool (after the caps, options drawn for it) that the pruning left
   out; a numeric-option type (``*_mcq``) and its numeric twins swap twin *pairs* (a kept pair
   out, a left-out pair in: twins stay both or neither), judged on the numeric-option type's
   two-sided miss, kept only when no numeric twin's (one-sided, MRA) miss grows
   (:func:`_swap_groups`, :func:`_swap_search`). A swap is kept when it lowers :func:`miss`: every judged cell
   of the type, attacks and complements, scored as the report scores them (held out by scene,
   refitted on the kept questions: the cheap attacks on every proposal, the learned model's
   answers on the pool every ``learned_refit``, trained on every type, :class:`TrainOn`) on
   ``swap_fold_seeds`` fold seeds of its own (:func:`swap_seeds`: after every pruning round's,
   never the report's; an attack on its worst seed, a complement on its mean), beyond
   ``blind_margin`` minus ``swap_attack_slack`` (attacks) or minus ``swap_slack``
   (complements). A swap must leave the letters (numeric ranks) within the report's
   ``letter_tolerance``, and the answer caps of step 1 no more exceeded than before
   (:func:`cap_excess`: checked after the swap, over the type and, for direction words, within
   each fold of scenes; a swap may change the answer); the type's size does not change. A draw
   against the attacks' answers from the whole pool instead of pruning, tried first
   (docs/generate.md, "what was tried"), did not converge: refitted on the draw, the attacks
   moved by +-10 points.

Every draw comes from one ``numpy.random.Generator``, over questions in their sorted order
(Candidate.key): the same candidates and seed give the same set.
"""
from __future__ import annotations

import dataclasses
import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..eval.attacks import (LEARNED_ATTACK, AttackCell, RowScores, attack_cells, base_attack, option_features,
                            score_rows, worst_of)
from ..eval.baselines import DEFAULT_FOLDS, Folds, scene_folds
from . import blind
from .candidates import (
    LADDER_TYPES,
    MOTION_DIRECTION_TYPE,
    MOTION_TYPES,
    TWIN_FAMILY,
    Candidate,
    significant,
    to_record,
    twin_key,
)
from .rules import BalanceRules, NumericMcqRules, Rules
from .templates import LETTERS

COUNTING_TYPES = ("object_counting_single", "object_counting_multiple", "object_counting")  # + VSI-Bench's
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


def cap_shares(cands: list[Candidate], share: float, rng: np.random.Generator, may_raise: bool = True
               ) -> tuple[list[Candidate], str]:
    """The largest subset in which no answer exceeds ``share`` of the subset (module docstring).
    Returns (kept in key order, a note when the cap had to be raised; ``may_raise`` False: never
    raised, a part of a set that lacks answers keeps what the share allows)."""
    by_answer: dict[str, list[Candidate]] = defaultdict(list)
    for c in cands:
        by_answer[answer_of(c)].append(c)
    note = ""
    distinct = len(by_answer)
    if may_raise and distinct and share * distinct < 1.0 - 1e-12:
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


def numeric_options(value: float, rank: int, rules: NumericMcqRules) -> list[float]:
    """The option values, smallest first, the answer at ``rank``: ``value * step_ratio ** (i -
    rank)`` for a positive ``value``; for a negative one (a signed quantity: acceleration) the
    positive ladder of ``-value`` at the mirrored rank, negated: every option keeps the answer's
    sign and none is 0, whatever the answer's size."""
    k = rules.num_options
    if value < 0:
        return [-v for v in reversed(numeric_options(-value, k - 1 - rank, rules))]
    return [value * rules.step_ratio ** (i - rank) for i in range(k)]


def shared_decimals(values: Sequence[float], digits: int) -> list[str]:
    """The values written with one number of decimals: the one that gives the smallest value (in
    magnitude) ``digits`` significant digits, trailing zeros kept. Every option of a ladder then
    has the same length but across a power of 10 above 1 (``9.87``, ``11.85``): what
    :func:`vistest.generate.candidates.significant` writes per value varies in length around
    every power of 10 (``0.0917`` / ``0.11``), and which option is the shortest then follows the
    answer's rank (measured: the held-out answer-length attack +5.6 points on motion_speed)."""
    small = min(abs(v) for v in values)
    decimals = max(0, digits - 1 - int(np.floor(np.log10(small)))) if small > 0 else digits
    return [f"{v:.{decimals}f}" for v in values]


def ladder_rules(qtype: str, rules: Rules) -> NumericMcqRules:
    """The numeric-option rules of a ladder type: ``numeric_mcq``, or the dynamic types' own
    (vistest.generate.rules.MotionRules.ladder)."""
    return rules.motion.ladder() if qtype in MOTION_TYPES else rules.numeric_mcq


def is_direction(qtype: str) -> bool:
    """Is ``qtype`` answered by a direction word, capped as such (step 1): the relative
    directions and the dynamic heading."""
    return qtype.startswith(DIRECTION_PREFIX) or qtype == MOTION_DIRECTION_TYPE


def unit_positions(units: Sequence, k: int, rng: np.random.Generator) -> np.ndarray:
    """A position in ``range(k)`` per question: within each unit (a fold of scenes), each
    position ``floor`` or ``ceil`` of the unit's n/k times, in random order; a unit's extra
    places go to the positions used least so far over the units before it (ties drawn at
    random), so the whole type is balanced too (module docstring, step 5). ``units``: each
    question's unit, questions in order."""
    out = np.zeros(len(units), int)
    per: dict = defaultdict(list)
    for i, s in enumerate(units):
        per[s].append(i)
    used = np.zeros(k, int)
    for u in sorted(per):
        idx = per[u]
        n = len(idx)
        tie = rng.random(k)
        extra = sorted(range(k), key=lambda j: (used[j], tie[j]))[: n % k]
        seq = np.concatenate([np.tile(np.arange(k), n // k), np.array(extra, int)]).astype(int)
        used += np.bincount(seq, minlength=k)
        out[idx] = seq[rng.permutation(n)]
    return out


def place_options(cands: list[Candidate], mcq: NumericMcqRules, rng: np.random.Generator,
                  unit_of: dict[str, int] | None = None) -> list[Placed]:
    """Options and letters for one type (module docstring, step 5); ``unit_of``: scene id ->
    the fold its letters are balanced in (default: one fold, the whole type)."""
    if not cands:
        return []
    c0 = cands[0]
    if not c0.is_mcq:
        return [Placed(c) for c in cands]
    numeric = c0.question_type in LADDER_TYPES
    k = mcq.num_options if numeric else 1 + len(c0.distractors)
    units = [(unit_of or {}).get(c.scene_id, 0) for c in cands]
    letters = unit_positions(units, k, rng)
    ranks = unit_positions(units, k, rng) if numeric else None
    out = []
    for i, c in enumerate(cands):
        pos = int(letters[i])
        if numeric:
            r = int(ranks[i])
            values = numeric_options(c.value, r, mcq)
            texts = (shared_decimals(values, mcq.significant_digits) if c.question_type in MOTION_TYPES
                     else [significant(v, mcq.significant_digits) for v in values])
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
            # --types vsibench: VSI-Bench's names for the same families
            "object_counting": r.counting.max_single_per_scene,
            "object_rel_distance": r.rel_distance.max_closest_per_scene,
            "route_planning": r.route.max_per_scene,
            "obj_appearance_order": r.appearance.max_per_scene}
    if qtype in MOTION_TYPES:
        return r.motion.max_per_scene
    if qtype.startswith(DIRECTION_PREFIX):
        return r.rel_direction.max_per_scene
    return caps.get(qtype, 0)


def cap_per_scene(cands: list[Candidate], cap: int, rng: np.random.Generator,
                  items: list[dict] | None = None, herd_share: float = 1.0) -> list[Candidate]:
    """At most ``cap`` candidates of each scene (0: no cap), drawn at random; key order kept.
    ``items`` (one sparse vector per candidate: :func:`option_items`): the draw is herded
    instead (module docstring, step 2): scenes in random order, each scene's candidates in
    random order; a place is taken by the candidate that leaves the summed vector of the
    candidates kept so far shortest (the first of equals) while its squared length is above
    ``herd_share`` x the sum of the kept scenes' own squared lengths (what independent scenes
    without a prior would sum to; the scene being drawn counted with what it has so far), by the
    next candidate of the random order otherwise."""
    if not cap:
        return cands
    per: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(cands):
        per[c.scene_id].append(i)
    total: dict = defaultdict(float)
    natural = 0.0  # sum over the kept scenes of their summed vectors' squared lengths

    def summed(idx: Sequence[int]) -> dict:
        out: dict = defaultdict(float)
        for i in idx:
            for k, v in items[i].items():
                out[k] += v
        return out

    def sq(vec: dict) -> float:
        return sum(v * v for v in vec.values())

    def growth(i: int) -> float:
        return sum(2 * total[k] * v + v * v for k, v in items[i].items())

    out = []
    scenes = sorted(per)
    for sid in (scenes if items is None else [scenes[j] for j in rng.permutation(len(scenes))]):
        g = per[sid]
        if items is None:
            if len(g) > cap:
                g = [g[i] for i in np.sort(rng.choice(len(g), size=cap, replace=False))]
            out.extend(cands[i] for i in g)
            continue
        if len(g) > cap:
            left, take = [g[i] for i in rng.permutation(len(g))], []
            for _ in range(cap):
                herd = sq(total) > herd_share * (natural + sq(summed(take)))
                take.append(left.pop(int(np.argmin([growth(i) for i in left])) if herd else 0))
                for k, v in items[take[-1]].items():
                    total[k] += v
            g = take
        else:
            for k, v in summed(g).items():
                total[k] += v
        natural += sq(summed(g))
        out.extend(cands[i] for i in g)
    return sorted(out, key=lambda c: c.key)


def option_items(cands: list[Candidate]) -> list[dict] | None:
    """Per candidate of one multiple-choice type whose options are texts, what a prior on the
    options' texts learns from it (module docstring, step 2), as a sparse vector: per item of
    an option (an option ``chair, table, bed`` has three, each with its place; one item
    otherwise: vistest.eval.attacks.option_features, as option-label reads them) ``won - offered / k``, and per
    rank of the keyed option's text length among the options (answer-length) ``1 - 1/k`` for
    the keyed rank, ``-1/k`` for the others; where options tie on length with the answer, the
    letters drawn later decide its rank, and each rank of the tie gets an equal share (counted
    as rank 0 before, every appearance-order candidate, whose options all have one length,
    added the same constant, which made the herding's total look far from balance). Their sum
    over a set is 0 when every item wins as often as chance says and every length rank too: then
    no prior on option texts, wherever it was learned, has anything to find in the set. None for
    other types."""
    if not cands or not cands[0].is_mcq or cands[0].question_type in LADDER_TYPES:
        return None
    out = []
    for c in cands:
        texts = [c.answer, *c.distractors]  # the answer first
        features = option_features(texts)
        k = len(features)
        vec: dict = defaultdict(float)
        for j, fs in enumerate(features):
            for f in fs:
                if f[0] == "item":
                    vec[f] += (1.0 if j == 0 else 0.0) - 1.0 / k
        # the keyed option's length rank: among options of equal length, the letters drawn later
        # decide it (ties go in option order), so each rank of the answer's tie group gets an equal share
        tied = [f[1] for j, fs in enumerate(features) for f in fs
                if f[0] == "length" and len(texts[j]) == len(texts[0])]
        for r in range(k):
            vec[("length", r)] += (1.0 / len(tied) if r in tied else 0.0) - 1.0 / k
        out.append({f: v for f, v in vec.items() if abs(v) > 1e-12})
    return out


# each numeric-option type and the numeric types of its twin family (candidates.TWIN_FAMILY)
TWIN_BASE = {t: tuple(b for b, f in TWIN_FAMILY.items() if f == fam and b != t)
             for t, fam in TWIN_FAMILY.items() if t.endswith("_mcq")}
# attacks a new draw of the options answers (module docstring, step 4): placement, not content
PLACEMENT_ATTACKS = ("option-rank", "nota-position")


def _share(qtype: str, group: list[Candidate], b: BalanceRules) -> float:
    """The answer cap of a counting or direction type."""
    return (b.max_count_share if qtype in COUNTING_TYPES else 1.0 / (1 + len(group[0].distractors))
            + b.direction_answer_tolerance)


def cap_answers(qtype: str, cands: list[Candidate], b: BalanceRules, rng: np.random.Generator,
                unit_of: dict[str, int]) -> tuple[list[Candidate], str]:
    """The answer cap of a counting or direction type (module docstring, step 1): over the whole
    type, then, for direction types, within each fold of scenes (``unit_of``) at the same share."""
    if not cands:
        return cands, ""
    share = _share(qtype, cands, b)
    kept, note = cap_shares(cands, share, rng)
    if not is_direction(qtype) or not unit_of or note:
        return kept, note
    per: dict[int, list[Candidate]] = defaultdict(list)
    for c in kept:
        per[unit_of.get(c.scene_id, 0)].append(c)
    out: list[Candidate] = []
    for u in sorted(per):
        out += cap_shares(per[u], share, rng, may_raise=False)[0]
    return sorted(out, key=lambda c: c.key), note


def _cap_steps(qtype: str, group: list[Candidate], rules: Rules, rng: np.random.Generator, step,
               unit_of: dict[str, int]) -> list[Candidate]:
    """Steps 1-2 on one type."""
    b = rules.balance
    capped = qtype in COUNTING_TYPES or is_direction(qtype)
    note = ""
    if capped:  # on the whole pool first, so the per-scene caps draw from a balanced pool
        kept, note = cap_answers(qtype, group, b, rng, unit_of)
        group = step(qtype, "answer_cap", len(group), kept, note)
    items = option_items(group) if b.herd_option_texts else None
    kept = cap_per_scene(group, per_scene_cap(qtype, rules), rng, items, b.herd_share)
    group = step(qtype, "per_scene_cap", len(group), kept)
    if capped:  # again: the per-scene draw may have tilted the shares
        kept, _ = cap_answers(qtype, group, b, rng, unit_of)
        group = step(qtype, "answer_cap", len(group), kept, note)
    return group


def _place_all(groups: dict[str, list[Candidate]], rules: Rules, rng: np.random.Generator,
               unit_of: dict[str, int] | None = None) -> list[Placed]:
    placed: list[Placed] = []
    for qtype in sorted(groups):
        placed.extend(place_options(groups[qtype], ladder_rules(qtype, rules), rng, unit_of))
    return sorted(placed, key=lambda p: p.candidate.key)


def _is_placement(attack: str, qtype: str, mcq: bool) -> bool:
    attack = base_attack(attack)  # an attack's complement too (not-X): the same draw answers both
    return attack in PLACEMENT_ATTACKS or (attack == "constant" and mcq)


def prune_floor(qtype: str, n0: dict[str, int], b: BalanceRules, deep: set[str]) -> int:
    """The fewest questions pruning leaves of ``qtype`` (module docstring, step 4): ``min_questions``,
    and while the type is not ``deep`` also ``1 - max_prune_fraction`` of its ``n0``."""
    if qtype in deep:
        return b.min_questions
    return max(b.min_questions, math.ceil(n0[qtype] * (1.0 - b.max_prune_fraction)))


def prune_round(placed: Sequence[Placed], report, n0: dict[str, int], b: BalanceRules, deep: set[str] = frozenset()
                ) -> tuple[set[tuple], list[tuple[str, str, int]], list]:
    """The units to remove after one scoring (module docstring, step 4): (twin keys, [(type,
    attack, n removed)], the failing cells nothing could be pruned from: every question they
    answer above chance is at its type's :func:`prune_floor`, or they are pooled)."""
    rs = report.row_scores
    units = [twin_key(p.candidate) for p in placed]
    types = [p.candidate.question_type for p in placed]
    left: dict[str, int] = defaultdict(int)
    unit_types: dict[tuple, list[str]] = defaultdict(list)  # a unit's types (twins: two)
    for t, u in zip(types, units):
        left[t] += 1
        unit_types[u].append(t)
    drop: set[tuple] = set()
    log: list[tuple[str, str, int]] = []
    stuck = []
    touched: set[str] = set()
    for cell in report.failing:  # judged cells above chance + margin (vistest.eval.attacks.AttackCell.ok)
        if cell.complement:
            continue  # not-X: the attack far below chance, reported, not pruned (module docstring)
        names = set(cell.pooled or (cell.question_type,))
        mcq = placed[[i for i, t in enumerate(types) if t in names][0]].options is not None
        if _is_placement(cell.attack, cell.question_type, mcq):
            continue  # a new draw of the options answers it (module docstring)
        if cell.pooled:  # its types are each below the judging floor: no question of theirs is pruned
            stuck.append(cell)
            continue
        s = rs.scores[cell.attack]
        idx = [i for i, t in enumerate(types) if t in names and not np.isnan(s[i]) and units[i] not in drop]
        adv = np.array([s[i] - rs.chance[i] for i in idx])
        order = [idx[j] for j in np.argsort(-adv, kind="stable") if adv[j] > 0]
        want = max(1, math.ceil((abs(cell.gap) - b.blind_margin) * cell.n))
        n = 0
        for i in order:
            ts = unit_types[units[i]]
            if n >= want or units[i] in drop or any(left[t] <= prune_floor(t, n0, b, deep) for t in ts):
                continue
            drop.add(units[i])
            for t in ts:
                left[t] -= 1
            n += 1
        if n:
            log.append((cell.question_type, cell.attack, n))
            touched.update(names)
        elif not names & touched:  # (a type another cell pruned this round is scored again first)
            stuck.append(cell)
    return drop, log, stuck


def fold_seeds(seed: int, b: BalanceRules, round_: int = 0) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(the report's fold seeds, the balancing round's): ``seed`` .. ``seed + judge_fold_seeds - 1``
    judge; round ``round_`` scores on the ``fit_fold_seeds`` after those of the rounds before
    (module docstring, cross-fitting: each round's seeds are new, none is the report's)."""
    judge = tuple(range(seed, seed + b.judge_fold_seeds))
    start = judge[-1] + 1 + round_ * b.fit_fold_seeds
    return judge, tuple(range(start, start + b.fit_fold_seeds))


def balance(cands: Sequence[Candidate], rules: Rules, rng: np.random.Generator, seed: int = 0
            ) -> tuple[list[Placed], list[Removal], list[str]]:
    """The balanced set (module docstring): (placed questions in key order, removals, notes).
    ``seed``: the generation's; the attacks are held out with the folds of :func:`fold_seeds`'s
    balancing seeds, never the report's."""
    b = rules.balance
    removals: list[Removal] = []
    notes: list[str] = []

    def step(qtype: str, name: str, before: int, after: list[Candidate], note: str = "") -> list[Candidate]:
        if before - len(after):
            removals.append(Removal(qtype, name, before - len(after), note))
        return after

    groups = _groups(cands)
    scenes = sorted({c.scene_id for c in cands})
    fit = fold_seeds(seed, b)[1]
    unit_of = dict(scene_folds(scenes, DEFAULT_FOLDS, fit[0]).fold_of) if len(scenes) >= 2 else {}
    kept: dict[str, list[Candidate]] = {}
    for qtype, group in groups.items():  # numeric and other types first, then the twins
        if qtype not in TWIN_BASE:
            kept[qtype] = _cap_steps(qtype, group, rules, rng, step, unit_of)
    for qtype, group in groups.items():
        if qtype not in TWIN_BASE:
            continue
        bases = [t for t in TWIN_BASE[qtype] if t in groups]
        if bases:  # the twin follows its numeric partner (step 3)
            partners = {twin_key(c) for t in bases for c in kept[t]}
            kept[qtype] = step(qtype, "twin", len(group), [c for c in group if twin_key(c) in partners])
        else:
            kept[qtype] = _cap_steps(qtype, group, rules, rng, step, unit_of)
    for qtype, group in groups.items():  # a numeric question whose twin the caps removed goes too
        twins = [t for t, bs in TWIN_BASE.items() if qtype in bs and t in groups]
        if twins:
            partners = {twin_key(c) for t in twins for c in kept[t]}
            kept[qtype] = step(qtype, "twin", len(kept[qtype]), [c for c in kept[qtype] if twin_key(c) in partners])
    for qtype, group in kept.items():
        if group and qtype in COUNTING_TYPES:
            _, note = cap_shares(group, b.max_count_share, rng)
            if note:
                notes.append(f"{qtype}: {note}")
    pool = {t: list(g) for t, g in kept.items()}  # what step 6 draws back from
    placed = _attack_loop(kept, rules, rng, seed, step, notes, unit_of)
    placed = _swap_resample(placed, pool, rules, rng, seed, removals, unit_of)
    merged: dict[tuple[str, str], Removal] = {}
    for rm in removals:
        k = (rm.question_type, rm.step)
        merged[k] = Removal(rm.question_type, rm.step, rm.n + (merged[k].n if k in merged else 0), rm.note)
    return placed, list(merged.values()), notes


def _records(placed: Sequence[Placed]) -> list[dict]:
    return [to_record(p.candidate, f"q{i}", list(p.options) if p.options else None, p.letter)
            for i, p in enumerate(placed)]


def _fold_units(folds) -> dict[str, int]:
    """Scene id -> fold, when the attacks are held out by scene (else one unit)."""
    return dict(folds.fold_of) if folds.by == "scene" else {}


def _resample(kept: dict[str, list[Candidate]], rules: Rules, rng: np.random.Generator, folds: Sequence, attacks
              ) -> list[Placed]:
    """Per multiple-choice type with at least ``min_judged`` questions: the draw of the options,
    among ``option_draws``, whose attacks are nearest chance (the largest |gap| over the
    balancing's ``folds`` smallest); letters balanced in the first folds."""
    b = rules.balance
    placed: list[Placed] = []
    for qtype in sorted(kept):
        group = kept[qtype]
        best, best_worst = None, (np.inf, np.inf)
        draws = b.option_draws if group and group[0].is_mcq and len(group) >= b.min_judged else 1
        for _ in range(draws):
            cand = place_options(group, ladder_rules(qtype, rules), rng, _fold_units(folds[0]))
            if draws == 1:
                best = cand
                break
            records = _records(cand)
            judged = [c for f in folds for c in blind.attack_report(records, attacks=attacks, min_judged=b.min_judged,
                                                                    margin=b.blind_margin, folds=f).cells
                      if c.judged]
            # the largest excess above chance + margin first, then the largest distance from chance
            worst = (max((max(0.0, c.gap - b.blind_margin) for c in judged), default=0.0),
                     max((abs(c.gap) for c in judged), default=0.0))
            if best is None or worst < best_worst:
                best, best_worst = cand, worst
            if worst[0] <= 0.0:  # no judged cell above the margin on any balancing seed
                break
        placed.extend(best)
    return sorted(placed, key=lambda p: p.candidate.key)


def _round_folds(kept: dict[str, list[Candidate]], first: Sequence[Placed], seeds: Sequence[int]) -> list:
    """The folds of each balancing fold seed, held out as the report holds out
    (vistest.generate.blind.folds_of): by the scenes that still have questions (a scene the
    pruning empties changes every fold), by question group with one scene. Folds equal to
    another seed's (leave-one-scene-out up to 10 scenes) are listed once."""
    scenes = sorted({c.scene_id for g in kept.values() for c in g})
    out = []
    for seed in seeds:
        f = (scene_folds(scenes, DEFAULT_FOLDS, seed) if len(scenes) >= 2
             else blind.folds_of(blind.truths(_records(first)), seed))
        if all(dict(f.fold_of) != dict(g.fold_of) for g in out):
            out.append(f)
    return out


def _attack_loop(kept: dict[str, list[Candidate]], rules: Rules, rng: np.random.Generator, seed: int,
                 step, notes: list[str], unit_of: dict[str, int]) -> list[Placed]:
    """Step 4: draw the options, score on the folds of the round's fold seeds (:func:`fold_seeds`:
    new every round, never the report's), prune, until every judged attack is within the margin
    on each (module docstring)."""
    b = rules.balance
    n0 = {t: len(g) for t, g in kept.items()}
    first = _place_all(kept, rules, rng)
    if not first:
        return []
    placed: list[Placed] = []
    deep: set[str] = set()
    for round_ in range(b.max_rounds):
        folds = _round_folds(kept, first, fold_seeds(seed, b, round_)[1])
        placed = _resample(kept, rules, rng, folds, blind.ATTACKS)
        if not placed:
            return placed
        records = _records(placed)
        report = worst_of([blind.attack_report(records, 0, blind.ATTACKS, b.min_judged, b.blind_margin, f)
                           for f in folds])
        drop, log, stuck = prune_round(placed, report, n0, b, deep)
        if not drop and not stuck:
            return placed
        if round_ == b.max_rounds - 1:
            break  # nothing of this round's is pruned: the set returned is the one scored
        deepened: set[str] = set()
        for cell in stuck:
            t = cell.question_type
            if t in deepened:
                continue  # pruned past max_prune_fraction from the next round on
            if not cell.pooled and t not in deep and prune_floor(t, n0, b, deep) > b.min_questions:
                units = {twin_key(p.candidate) for p in placed if p.candidate.question_type == t}
                deepened |= {p.candidate.question_type for p in placed if twin_key(p.candidate) in units}
                deep |= deepened  # past max_prune_fraction, down to the judging floor (module docstring)
            elif b.drop_leaky_types and folds[0].by == "scene":  # held out by question (one scene): never
                gone = _leaky_type(cell, placed, report)
                units = {twin_key(p.candidate) for p in placed if p.candidate.question_type == gone}
                if units - drop:
                    drop |= units
                    notes.append(_drop_note(gone, cell, placed, units))
                    log.append((cell.question_type, cell.attack, len(units)))
        if not drop and not deepened:
            return placed
        for t in kept:
            before = len(kept[t])
            kept[t] = [c for c in kept[t] if twin_key(c) not in drop]
            step(t, "blind_attack", before, kept[t], ", ".join(sorted({a for q, a, _ in log if t in q})))
            if kept[t] and (t in COUNTING_TYPES or is_direction(t)):  # the caps hold again
                kept[t] = step(t, "answer_cap", len(kept[t]), cap_answers(t, kept[t], b, rng, unit_of)[0])
    notes.append(f"blind attacks: {b.max_rounds} balancing rounds did not bring every judged attack to at most "
                 f"{100 * b.blind_margin:g} points above chance (the report's targets say which)")
    return placed


def _leaky_type(cell, placed: Sequence[Placed], report) -> str:
    """The type a stuck cell drops (module docstring, step 4): the cell's own, or in a pool the
    type whose questions the attack answers most above their chance (summed; ties: the first name)."""
    if not cell.pooled:
        return cell.question_type
    rs = report.row_scores
    s = rs.scores[cell.attack]
    gain: dict[str, float] = defaultdict(float)
    for i, p in enumerate(placed):
        t = p.candidate.question_type
        if t in cell.pooled and not np.isnan(s[i]):
            gain[t] += float(s[i] - rs.chance[i])
    return min(cell.pooled, key=lambda t: (-gain.get(t, -np.inf), t))


def _drop_note(qtype: str, cell, placed: Sequence[Placed], units: set) -> str:
    """The report's line for a type dropped as leaky."""
    with_twin = sorted({p.candidate.question_type for p in placed if twin_key(p.candidate) in units})
    return (f"{', '.join(with_twin)}: dropped ({len(units)} question(s) or twin pairs): attack {cell.attack} "
            f"held out {100 * cell.gap:+.1f} points from chance (the worst of a balancing round's fold seeds) on "
            f"{cell.question_type} (n={cell.n}) with no "
            f"question left to prune (at the judging floor of the type, or a pool of types below it)")


# =======================================================================================
# step 6: swaps with the pool (two-sided)
# =======================================================================================
@dataclass(frozen=True)
class TrainOn(Folds):
    """Folds whose training side holds only the rows keyed in ``train``: the pool's rows are
    answered as if held out of the kept set (module docstring, step 6)."""

    train: frozenset = frozenset()

    def split(self, truths):
        return [([t for t in tr if t.key in self.train], te) for tr, te in super().split(truths)]


def swap_seeds(seed: int, b: BalanceRules) -> tuple[int, ...]:
    """The fold seeds step 6 scores on: the ``swap_fold_seeds`` after every pruning round's
    (:func:`fold_seeds`), none of them the report's."""
    start = fold_seeds(seed, b, b.max_rounds)[1][0]
    return tuple(range(start, start + b.swap_fold_seeds))


def _seed_cells(seed_cells: Sequence[Sequence[AttackCell]]) -> list[AttackCell]:
    """Per (type, attack) over the fold seeds: an attack's cell on its worst seed (the largest
    gap: the upper side, the issue's target, as the pruning judges it), a complement's on its
    mean score (as the report judges it)."""
    group: dict[tuple[str, str], list[AttackCell]] = defaultdict(list)
    for cells in seed_cells:
        for c in cells:
            group[(c.question_type, c.attack)].append(c)
    return [dataclasses.replace(cs[0], score=float(np.mean([c.score for c in cs])) if cs[0].complement
                                else max(c.score for c in cs)) for cs in group.values()]


def miss(cells: Sequence[AttackCell], b: BalanceRules) -> float:
    """How far a type's kept questions are from the two-sided target (0: met with room to
    spare): the summed squared excess of every judged cell's gap (:func:`_seed_cells`: an
    attack's worst over the seeds, a complement's mean) over ``blind_margin`` minus
    ``swap_attack_slack`` (an attack) or minus ``swap_slack`` (a complement ``not-X``)."""
    return float(sum(max(0.0, c.gap - b.blind_margin + (b.swap_slack if c.complement else b.swap_attack_slack)) ** 2
                     for c in cells if c.judged))


def letter_granularity(n: int, k: int) -> float:
    """The least largest deviation of ``k`` shares of ``n`` questions from 1/k (``n`` not a
    multiple of ``k``: some letter holds ``ceil(n / k)``, some ``floor(n / k)``); the letter
    tolerance is at least this."""
    if not n or n % k == 0:
        return 0.0
    return max(math.ceil(n / k) / n - 1 / k, 1 / k - math.floor(n / k) / n)


def positions_ok(placed: Sequence[Placed], b: BalanceRules) -> bool:
    """The correct letters (and numeric ranks) of one type within ``letter_tolerance`` (at
    least :func:`letter_granularity`) of 1/k: the report's check."""
    if not placed or placed[0].options is None:
        return True
    n, k = len(placed), len(placed[0].options)
    tol = max(b.letter_tolerance, letter_granularity(n, k)) + 1e-9
    for pos in ([p.letter for p in placed], [p.rank for p in placed if p.rank is not None]):
        if pos and max(abs(c / n - 1 / k) for c in Counter(pos).values()) > tol:
            return False
        if pos and len(set(pos)) < k and 1 / k > tol:
            return False
    return True


def answer_share(qtype: str, cands: Sequence[Candidate], b: BalanceRules) -> float:
    """The answer cap step 1 applies to a counting or direction type (1.0: not capped): its share
    (:func:`_share`), a counting type's raised to an equal share when ``cands`` (its pool) hold
    fewer distinct answers than the cap allows (as :func:`cap_shares` raises it)."""
    if not cands or not (qtype in COUNTING_TYPES or is_direction(qtype)):
        return 1.0
    share = _share(qtype, list(cands), b)
    distinct = len({answer_of(c) for c in cands})
    return max(share, 1.0 / distinct) if qtype in COUNTING_TYPES else share


def cap_excess(answers: Sequence[str], units: Sequence[int], share: float, per_unit: bool) -> int:
    """How many questions exceed the answer cap ``share`` (0: within it): over the whole type,
    and, ``per_unit``, within each fold of scenes too (``units``: each question's fold), each
    answer's count beyond ``floor(share x n)`` of its set (step 1's cap, checked after a swap)."""
    def over(ans: Sequence[str]) -> int:
        cap = math.floor(share * len(ans) + 1e-9)
        return sum(max(0, n - cap) for n in Counter(ans).values())

    out = over(answers)
    if per_unit:
        per: dict[int, list[str]] = defaultdict(list)
        for a, u in zip(answers, units):
            per[u].append(a)
        out += sum(over(v) for v in per.values())
    return out


class _TypeSearch:
    """One type's kept questions and the rest of its pool, scored as the report scores
    (module docstring, step 6): the cheap attacks refitted on every proposal, the learned
    model's held-out answers on the pool refreshed every ``learned_refit`` proposals.
    ``unit``: each question's swap unit (an index into the search's keep mask: a twin pair's
    two questions share one; default: one unit per question, kept first)."""

    def __init__(self, qtype: str, kept: list[Placed], rest: list[Placed], others: list[Placed], folds: list[Folds],
                 b: BalanceRules, unit: Sequence[int] | None = None):
        self.qtype, self.folds, self.b = qtype, folds, b
        self.items = kept + rest
        self.unit = np.arange(len(self.items)) if unit is None else np.asarray(unit, int)
        every = blind.truths(_records(list(others) + self.items))  # the learned model trains on every type
        self.others, self.rows = every[: len(others)], every[len(others):]
        self.cheap = tuple(a for a in blind.ATTACKS if a != LEARNED_ATTACK)
        self.learned: list[dict[str, np.ndarray]] = []

    def refit_learned(self, keep: np.ndarray) -> None:
        """The learned model (and its complement) on every row of the type's pool, trained on
        the kept rows of every type (as the report trains it); ``keep``: the units kept."""
        mine = keep[self.unit]
        train = frozenset(t.key for t in self.others) | {self.rows[i].key for i in np.flatnonzero(mine)}
        every = self.others + self.rows
        self.learned = []
        for f in self.folds:
            tf = TrainOn(f.by, f.fold_of, f.n_folds, f.n_scenes, f.warning, frozenset(train))
            rs = score_rows(every, tf, blind.PROTOCOL, (LEARNED_ATTACK,))
            self.learned.append({a: v[len(self.others):] for a, v in rs.scores.items()})

    def kept(self, keep: np.ndarray) -> list[Placed]:
        """The questions of the units in ``keep``."""
        return [p for p, k in zip(self.items, keep[self.unit]) if k]

    def cells(self, keep: np.ndarray) -> list[AttackCell]:
        """The judged cells of the rows of the units in ``keep`` over the folds (:func:`_seed_cells`)."""
        idx = np.flatnonzero(keep[self.unit])
        rows = [self.rows[i] for i in idx]
        per_seed = []
        for f, learned in zip(self.folds, self.learned):
            rs = score_rows(rows, f, blind.PROTOCOL, self.cheap)
            scores = dict(rs.scores)
            scores.update({a: v[idx] for a, v in learned.items()})
            per_seed.append(attack_cells(RowScores(rs.rows, rs.chance, scores), self.b.min_judged,
                                         self.b.blind_margin))
        return _seed_cells(per_seed)

    def miss(self, keep: np.ndarray) -> float:
        return miss(self.cells(keep), self.b)


def _swap_search(parts: Sequence[_TypeSearch], n_kept: int, rng: np.random.Generator, b: BalanceRules,
                 unit_of: dict[str, int]) -> tuple[np.ndarray, float, float]:
    """Swap proposals over units (module docstring, step 6): a kept unit out at random, in at
    random one of the pool's. ``parts[0]``: the type judged (two-sided); ``parts[1:]``: its
    numeric twins (one-sided), whose questions go with the unit. A swap is kept when the letters
    (ranks) of ``parts[0]`` stay within their target (:func:`positions_ok`), the answer cap is no
    more exceeded than before (:func:`cap_excess`, a counting or direction type), the summed
    :func:`miss` of the parts drops and no twin's miss grows; stops at 0. ``n_kept``: the units
    kept first (units ``0 .. n_kept - 1``). Returns (the units kept, summed miss before, after)."""
    head = parts[0]
    n_units = int(max(int(p.unit.max()) for p in parts)) + 1
    keep = np.zeros(n_units, bool)
    keep[:n_kept] = True
    share = answer_share(head.qtype, [p.candidate for p in head.items], b)

    def excess(k: np.ndarray) -> int:
        if share >= 1.0:
            return 0
        ps = head.kept(k)
        return cap_excess([answer_of(p.candidate) for p in ps], [unit_of.get(p.candidate.scene_id, 0) for p in ps],
                          share, is_direction(head.qtype) and bool(unit_of))

    for p in parts:
        p.refit_learned(keep)
    cur = [p.miss(keep) for p in parts]
    before = sum(cur)
    cur_excess = excess(keep)
    for j in range(b.swap_proposals):
        if sum(cur) <= 0.0 or keep.all():
            break
        if j and j % b.learned_refit == 0:
            for p in parts:
                p.refit_learned(keep)
            cur = [p.miss(keep) for p in parts]
        out = int(rng.choice(np.flatnonzero(keep)))
        into = int(rng.choice(np.flatnonzero(~keep)))
        trial = keep.copy()
        trial[out], trial[into] = False, True
        if not positions_ok(head.kept(trial), b):
            continue
        e = excess(trial)
        if e > cur_excess:
            continue
        m = [p.miss(trial) for p in parts]
        if sum(m) < sum(cur) and all(a <= c + 1e-12 for a, c in zip(m[1:], cur[1:])):
            keep, cur, cur_excess = trial, m, e
    return keep, before, sum(cur)


def _swap_groups(types: Sequence[str]) -> list[tuple[str, ...]]:
    """The types step 6 swaps together, the judged type first: a numeric-option type with its
    numeric twins present (their questions swapped in pairs), every other type alone."""
    groups: list[tuple[str, ...]] = []
    paired: set[str] = set()
    for t in sorted(types):
        bases = tuple(x for x in TWIN_BASE.get(t, ()) if x in types)
        if bases:
            groups.append((t, *bases))
            paired.update(bases)
    return sorted(groups + [(t,) for t in types if t not in paired and not TWIN_BASE.get(t)]
                  + [(t,) for t in types if TWIN_BASE.get(t) and not any(x in types for x in TWIN_BASE[t])])


def _swap_resample(placed: list[Placed], pool: dict[str, list[Candidate]], rules: Rules, rng: np.random.Generator,
                   seed: int, removals: list[Removal], unit_of: dict[str, int]) -> list[Placed]:
    """Step 6 (module docstring): per type judged alone (at least ``min_judged`` kept; a
    numeric-option type with its numeric twins, swapped in pairs: :func:`_swap_groups`), swaps
    of kept questions with the rest of its pool (capped, options drawn for it) until every
    judged cell of the type, attacks and complements, is within ``blind_margin`` minus the
    slack on :func:`swap_seeds`, or ``swap_proposals`` are spent (:func:`_swap_search`).
    ``unit_of``: scene id -> the fold of scenes the direction caps hold within."""
    b = rules.balance
    if not b.swap_proposals or not placed:
        return placed
    scenes = sorted({p.candidate.scene_id for p in placed})
    if len(scenes) < 2:
        return placed  # held out by question with one scene: the folds are the report's (fold_seeds)
    folds = [scene_folds(scenes, DEFAULT_FOLDS, s) for s in swap_seeds(seed, b)]
    by: dict[str, list[Placed]] = defaultdict(list)
    for p in placed:
        by[p.candidate.question_type].append(p)
    out: list[Placed] = []
    in_set = set(scenes)
    for group in _swap_groups(list(by)):
        t = group[0]
        units = [twin_key(p.candidate) for p in by[t]]
        index = {u: i for i, u in enumerate(units)}
        rest_units = [twin_key(c) for c in pool.get(t, []) if twin_key(c) not in index and c.scene_id in in_set]
        if len(by[t]) < b.min_judged or not rest_units:
            out += [p for x in group for p in by[x]]
            continue
        out += [p for x in group[1:] for p in by[x] if twin_key(p.candidate) not in index]  # no partner: kept
        index.update({u: len(units) + i for i, u in enumerate(rest_units)})
        parts = []
        for x in group:
            kept = [p for p in by[x] if twin_key(p.candidate) in index]
            rest = [c for c in pool.get(x, []) if index.get(twin_key(c), -1) >= len(units)]
            rest_placed = place_options(rest, ladder_rules(x, rules), rng)
            others = [p for p in placed if p.candidate.question_type != x]
            parts.append(_TypeSearch(x, kept, rest_placed, others, folds, b,
                                     [index[twin_key(p.candidate)] for p in kept + rest_placed]))
        keep, _, _ = _swap_search(parts, len(units), rng, b, unit_of)
        for x, part in zip(group, parts):
            new = part.kept(keep)
            gone = len({p.candidate.key for p in by[x]} - {p.candidate.key for p in new})
            if gone:
                what = "twin pairs" if len(group) > 1 else "questions"
                removals.append(Removal(x, "swap", gone, f"{gone} swapped for as many of the pool (two-sided; {what})"))
            out += new
    return sorted(out, key=lambda p: p.candidate.key)
