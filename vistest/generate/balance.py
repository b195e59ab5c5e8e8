"""Debiasing over the whole set of generated questions (every scene together): balanced by
construction, then pruned within a budget (issue #34). In order (vistest.generate.rules.BalanceRules):

1. **Per-scene draws, stratified** (:func:`draw_per_scene`): at most the family's
   ``max_per_scene`` questions of a type per scene (ReVSI's caps). With ``stratify`` each place
   goes to the *answer class* the set holds fewest of so far (:func:`answer_class`: a direction
   word, a count, a number's side of its world prior), among the classes the scene offers, a
   candidate of that class drawn at random; scenes in random order. ReVSI balances direction
   answers by choosing the query triples (``obj_rel_dir_qa.py``); drawing first and capping
   afterwards (the generator before issue #34) let the rarest word limit the whole type: 95-99%
   of the relative directions went to the answer caps. A numeric question and its
   numeric-option twin are one draw (the twin follows its numeric partner,
   vistest.generate.candidates.twin_key).
2. **Answer caps** per type, hard constraints (:func:`cap_answers`): a counting answer at most
   ``max_count_share`` of its type (20%: VSI-Bench-Debiased's ``max_pct_threshold``), a
   direction word (left, back-right ...; the dynamic heading's right, away ...) at most ``1/k +
   direction_answer_tolerance``. The largest set meeting the cap is kept (:func:`cap_shares`);
   with fewer distinct answers than the cap allows, the cap is raised to an equal share and the
   report says so. After step 1 they remove little. Never below the type's floor
   (:func:`draw_and_cap`, issue #43): the draw goes on past the per-scene caps first, then the
   cap is raised to the floor.
3. **Iterative Bias Pruning** (:func:`prune`, TsT's IBP, vision-x-nyu/test-set-training
   ``docs/ibp.md``, per-type allocation): every question gets a *bias score*
   (:func:`bias_scores`): the mean over the content attacks (:data:`CONTENT_ATTACKS`: every
   attack of vistest.eval.attacks that reads the question or the option texts, the world prior
   fitted on real scans included; not the letter constant nor the option rank, which the next
   draw of the options answers) of its held-out score of the gold answer (accuracy, MRA for
   numbers), fitted on other scenes, minus the question's chance. Per type (a numeric type with
   its twin: one group of units), the budget is ``removal_budget`` x its questions, never
   leaving fewer than ``min_per_type`` (TsT's floor: 10); each of ``ibp_rounds`` rounds removes
   the top ``budget / ibp_rounds`` units with a score of at least ``stop_score`` (ties: the
   question's key, as TsT's stable sort on (-score, id)), then the options are drawn again and
   every attack refitted on what is left. The rounds score on fold seeds the report never uses
   (``seed + judge_fold_seeds + round``). A removal list is an audit selection (TsT's words):
   the scores of the final set are written beside it (``bias_scores.jsonl``), so that a user
   can prune further at their own threshold; the trajectory (questions kept against the worst
   held-out gap) is the report's trade-off curve.
4. **Options** (:func:`place_options`): per type and fold of scenes (the round's folds), the
   correct option's position (letter) follows a balanced sequence (each letter ``floor`` or
   ``ceil`` of the fold's n/k times, the extra places to the letters used least in the folds
   before) shuffled at random, the wrong options fill the other positions in random order;
   numeric options (``*_mcq``, the numeric dynamic types ``motion_*``) put the answer's rank
   among the values on a second, independent sequence drawn the same way, then build the ladder
   around it (:func:`numeric_options`). Balanced per fold, not only over the whole set: the
   letter a held-out fold lacks would otherwise be the most frequent one in the other folds.

Every draw comes from one ``numpy.random.Generator``, over questions in their sorted order
(Candidate.key): the same candidates and seed give the same set.
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..eval import world_prior
from ..eval.attacks import attack_cells
from ..eval.baselines import DEFAULT_FOLDS, scene_folds
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

MIN_ANSWERS_LEFT = 3  # cap_shares drops rare counts while at least this many distinct answers remain
COUNTING_TYPES = ("object_counting_single", "object_counting_multiple", "object_counting")  # + VSI-Bench's
DIRECTION_PREFIX = "object_rel_direction_"
# the attacks a question's bias score averages (module docstring, step 3): what reads the question or the
# option texts; the letter constant, the option rank and the offset from "None of these" read only where the
# options are, which the next draw answers
CONTENT_ATTACKS = tuple(a for a in blind.ATTACKS if a not in ("constant", "option-rank", "nota-position"))


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


def cap_shares(cands: list[Candidate], share: float, rng: np.random.Generator, may_raise: bool = True,
               may_drop: bool = False, floor: int = 0) -> tuple[list[Candidate], str]:
    """The largest subset in which no answer exceeds ``share`` of the subset (module docstring).
    With fewer distinct answers than the cap allows (``share x distinct < 1``) the cap is raised to
    an equal share (``may_raise``; False: never raised). With ``may_drop`` (counting) a rare answer
    is *dropped* when that keeps more (issue #43: a counting pool 4:9, 5:16, 6:6, 7:1 keeps 18
    without its single 7, 4 with it): the rarest answers are left out one at a time while at least
    :data:`MIN_ANSWERS_LEFT` remain (a type of two counts would be a coin a prior reads), and the
    choice that keeps the most questions wins (ties: fewer answers dropped). Direction words are
    never dropped: a set with no 'back' teaches "never back" (their balance comes from what is
    asked: :func:`draw_per_scene`, vistest.generate.run.draw_pool). ``floor``: when the cap would
    keep fewer than ``min(floor, len(cands))``, the share is raised to the smallest that keeps that
    many (issue #43: a cap never cuts a type below its floor; the rooms' rarest word then has all
    its questions and the others one more each, and the note says by how much). Returns (kept in
    key order, a note when the cap was raised or answers dropped)."""
    by_answer: dict[str, list[Candidate]] = defaultdict(list)
    for c in cands:
        by_answer[answer_of(c)].append(c)
    rarest_first = sorted(by_answer, key=lambda a: (len(by_answer[a]), a))
    best: tuple[int, int, float] | None = None  # (kept, answers dropped, share)
    most = max(0, len(rarest_first) - MIN_ANSWERS_LEFT) if may_drop else 0
    for drop in range(0, most + 1):
        counts = [len(by_answer[a]) for a in rarest_first[drop:]]
        s = share
        if may_raise and counts and s * len(counts) < 1.0 - 1e-12:
            s = 1.0 / len(counts)
        n = _largest_capped(counts, s)
        if best is None or n > best[0]:
            best = (n, drop, s)
    if best is None:
        return [], ""
    want = min(floor, len(cands))
    for_floor = best[0] < want
    if for_floor:  # the floor: the smallest share that keeps it, every answer kept (nothing dropped)
        counts = [len(by_answer[a]) for a in rarest_first]
        s = _share_for(counts, want, best[2])
        best = (_largest_capped(counts, s), 0, s)
    keep_n, drop, share_used = best
    dropped = rarest_first[:drop]
    notes = []
    if for_floor:
        notes.append(f"{len(rarest_first)} distinct answers, the rarest {len(by_answer[rarest_first[0]])} time(s): "
                     f"cap raised from {share:.0%} to {share_used:.0%} to keep the type's floor of {want}")
    elif share_used > share + 1e-12:
        notes.append(f"{len(rarest_first) - drop} distinct answers: cap raised from {share:.0%} to {share_used:.0%}")
    if dropped:
        share_all = max(share, 1.0 / len(by_answer)) if may_raise else share
        without = _largest_capped([len(v) for v in by_answer.values()], share_all)
        notes.append(f"rare answer(s) dropped to keep the type "
                     f"({', '.join(f'{a}: {len(by_answer[a])}' for a in dropped)}): {keep_n} kept instead of {without}")
    cap = math.floor(share_used * keep_n + 1e-9)
    kept: list[Candidate] = []
    for a in sorted(by_answer):
        if a in dropped:
            continue
        group = by_answer[a]
        if len(group) > cap:
            pick = np.sort(rng.permutation(len(group))[:cap])
            group = [group[i] for i in pick]
        kept.extend(group)
    return sorted(kept, key=lambda c: c.key), "; ".join(notes)


def _share_for(counts: Sequence[int], want: int, share: float) -> float:
    """The smallest share, at least ``share``, under which ``want`` questions can be chosen from
    answers with ``counts`` questions each (:func:`_largest_capped`): ``cap / want`` for the
    smallest per-answer cap that allows it."""
    for cap in range(1, max(counts, default=0) + 1):
        if cap / want >= share - 1e-12 and sum(min(n, cap) for n in counts) >= want:
            return cap / want
    return 1.0


def _largest_capped(counts: Sequence[int], share: float) -> int:
    """The largest ``n`` such that ``n`` questions with every answer at most ``floor(share x n)``
    can be chosen from answers with ``counts`` questions each."""
    for total in range(sum(counts), 0, -1):
        cap = math.floor(share * total + 1e-9)
        if sum(min(n, cap) for n in counts) >= total:
            return total
    return 0


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


# each numeric-option type and the numeric types of its twin family (candidates.TWIN_FAMILY)
TWIN_BASE = {t: tuple(b for b, f in TWIN_FAMILY.items() if f == fam and b != t)
             for t, fam in TWIN_FAMILY.items() if t.endswith("_mcq")}


def _share(qtype: str, group: list[Candidate], b: BalanceRules) -> float:
    """The answer cap of a counting or direction type."""
    return (b.max_count_share if qtype in COUNTING_TYPES else 1.0 / (1 + len(group[0].distractors))
            + b.direction_answer_tolerance)


def letter_granularity(n: int, k: int) -> float:
    """The least largest deviation of ``k`` shares of ``n`` questions from 1/k (``n`` not a
    multiple of ``k``: some letter holds ``ceil(n / k)``, some ``floor(n / k)``); the letter
    tolerance is at least this."""
    if not n or n % k == 0:
        return 0.0
    return max(math.ceil(n / k) / n - 1 / k, 1 / k - math.floor(n / k) / n)


@dataclass(frozen=True)
class CurvePoint:
    """One point of the trade-off curve (module docstring, step 3): after ``removed`` questions
    (``share`` of the questions before pruning), ``kept`` are left; ``worst_gap``: the largest
    judged held-out gap above chance (points / 100) of any attack on any type, ``worst_cell`` its
    (attack, type), on that round's fold seed."""

    round: int
    removed: int
    kept: int
    share: float
    worst_gap: float
    worst_cell: str


@dataclass(frozen=True)
class Balanced:
    """What :func:`balance` returns: the placed questions (key order), the removals per step, notes,
    each final question's bias score (by candidate key: (score, chance)) and the trade-off curve."""

    placed: tuple[Placed, ...]
    removals: tuple[Removal, ...]
    notes: tuple[str, ...]
    bias: Mapping[tuple, tuple[float, float]]
    curve: tuple[CurvePoint, ...]


def answer_class(c: Candidate) -> str | None:
    """The class a stratified draw balances (module docstring, step 1): a direction word (the
    relative directions, the dynamic heading), a count; for size, distance and room-size questions
    (and their numeric-option twins) whether the answer lies above or below the world prior's
    typical value (vistest.eval.world_prior), so that "always the typical value" is wrong on both
    sides alike; None where nothing is balanced (the numeric dynamic types, appearance orders,
    routes, relative distance: their options are drawn per question)."""
    qt = c.question_type
    if is_direction(qt):
        return c.answer
    if qt in COUNTING_TYPES:
        return c.answer_text
    if c.value is not None and qt not in MOTION_TYPES:
        text = c.template.format(**dict(c.fields)) if "{choices}" not in c.template else ""
        prior = world_prior.prior_value(qt, text, c.label)
        if prior is not None:
            return "above" if c.value > prior else "below"
    return None


def draw_per_scene(cands: list[Candidate], cap: int, rng: np.random.Generator, stratify: bool = True,
                   floor: int = 0) -> list[Candidate]:
    """At most ``cap`` candidates per scene (0: all), key order kept (module docstring, step 1):
    scenes in random order; each place to a random candidate of the scene's answer class
    (:func:`answer_class`) that the draws so far hold fewest of (ties at random). Without
    ``stratify`` or classes: a uniform draw per scene. ``floor``: when the caps leave fewer
    (answerable questions concentrated in a few rooms), the draw goes on past the caps up to
    ``floor`` (:func:`_top_up`: the per-scene caps never cut a type below its floor, issue #43)."""
    if not cap:
        return cands
    out = _capped_draw(cands, cap, rng, stratify)
    if len(out) < floor:
        out = _top_up(cands, out, floor, rng, stratify)
    return out


def _top_up(cands: list[Candidate], drawn: list[Candidate], floor: int, rng: np.random.Generator,
            stratify: bool) -> list[Candidate]:
    """``drawn`` and more of ``cands`` until ``floor`` (or none left): each to the answer class held
    fewest so far, then to the scene that holds fewest, ties at random (draw_per_scene)."""
    keys = {c.key for c in drawn}
    left = [c for c in cands if c.key not in keys]
    left = [left[j] for j in rng.permutation(len(left))]
    held = Counter(answer_class(c) if stratify else None for c in drawn)
    per_scene = Counter(c.scene_id for c in drawn)
    out = list(drawn)
    while len(out) < floor and left:
        cls = [answer_class(c) if stratify else None for c in left]
        i = min(range(len(left)), key=lambda j: (held[cls[j]], per_scene[left[j].scene_id], j))
        c = left.pop(i)
        held[cls[i]] += 1
        per_scene[c.scene_id] += 1
        out.append(c)
    return sorted(out, key=lambda c: c.key)


def scarce_classes(per_scene_classes: Sequence[Sequence], cap: int) -> frozenset:
    """The answer classes the per-scene caps should take every one of (:func:`_capped_draw`): those
    the caps can reach fewer of (``n_k = sum over scenes of min(cap, the scene's candidates of
    k)``) than the level ``L`` at which the draw's places (``min(cap, n)`` per scene) would hold
    every class equally, ``sum_k min(n_k, L) = places`` (water-filling). The answer cap afterwards
    keeps about ``1/k`` of each word: the type's size is set by its scarcest words, so none of them
    may be left for a common word's place (a room with 12 of a set's 38 'back' gives its 4 places
    to 'back')."""
    avail: Counter = Counter()
    for classes in per_scene_classes:
        avail.update({k: min(cap, n) for k, n in Counter(classes).items()})
    places = sum(min(cap, len(classes)) for classes in per_scene_classes)
    counts = sorted(avail.values())
    level, left = 0.0, float(places)
    for i, n in enumerate(counts):
        share = left / (len(counts) - i)
        if n >= share:
            level = share
            break
        left -= n
    else:
        level = math.inf
    return frozenset(k for k, n in avail.items() if n < level)


def _capped_draw(cands: list[Candidate], cap: int, rng: np.random.Generator, stratify: bool) -> list[Candidate]:
    """The per-scene capped draw of :func:`draw_per_scene`: a scene's places go first to the
    classes that are scarce over the whole type (:func:`scarce_classes`: a room's 'back' is never
    left for a 'left' because the set held one more 'left' when the room came), then to the class
    held fewest."""
    per: dict[str, list[Candidate]] = defaultdict(list)
    for c in cands:
        per[c.scene_id].append(c)
    scarce = scarce_classes([[answer_class(c) for c in g] for g in per.values()], cap) if stratify else frozenset()
    held: Counter = Counter()
    out: list[Candidate] = []
    scenes = sorted(per)
    for sid in [scenes[j] for j in rng.permutation(len(scenes))]:
        g = per[sid]
        classes = [answer_class(c) for c in g] if stratify else [None] * len(g)
        if len(g) <= cap:
            out += g
            held.update(classes)
            continue
        left = {k: [i for i, x in enumerate(classes) if x == k] for k in sorted(set(classes), key=str)}
        for k in left:
            left[k] = [left[k][j] for j in rng.permutation(len(left[k]))]
        for _ in range(cap):
            open_ = [k for k, v in left.items() if v]
            tie = rng.random(len(open_))
            k = min(range(len(open_)), key=lambda j: (open_[j] not in scarce, held[open_[j]], tie[j]))
            i = left[open_[k]].pop()
            held[open_[k]] += 1
            out.append(g[i])
    return sorted(out, key=lambda c: c.key)


def cap_answers(qtype: str, cands: list[Candidate], b: BalanceRules, rng: np.random.Generator, floor: int = 0
                ) -> tuple[list[Candidate], str]:
    """The answer cap of a counting or direction type over the whole type (module docstring,
    step 2), never below ``floor`` (:func:`cap_shares`); other types unchanged."""
    if not cands or not (qtype in COUNTING_TYPES or is_direction(qtype)):
        return cands, ""
    return cap_shares(cands, _share(qtype, cands, b), rng, may_drop=qtype in COUNTING_TYPES, floor=floor)


def draw_and_cap(qtype: str, group: list[Candidate], rules: Rules, rng: np.random.Generator, floor: int
                 ) -> tuple[list[Candidate], list[Candidate], str]:
    """Steps 1 and 2 of one type (module docstring): (drawn within the per-scene caps, kept within
    the answer caps, the cap's note). When the answer cap leaves fewer than ``floor`` (the rarest
    word of a direction type: 10 drawn as 4 left, 3 right, 3 back keep 9), the draw goes on
    (:func:`_top_up`: the classes held fewest first) until the capped set reaches the floor or the
    type's answerable questions run out; only then is the cap raised to the floor
    (:func:`cap_shares`)."""
    b = rules.balance
    drawn = draw_per_scene(group, per_scene_cap(qtype, rules), rng, b.stratify, floor)
    capped, note = cap_answers(qtype, drawn, b, rng)
    while len(capped) < floor and len(drawn) < len(group):
        drawn = _top_up(group, drawn, len(drawn) + floor - len(capped), rng, b.stratify)
        capped, note = cap_answers(qtype, drawn, b, rng)
    if len(capped) < min(floor, len(drawn)):
        capped, note = cap_answers(qtype, drawn, b, rng, floor)
    return drawn, capped, note


def _records(placed: Sequence[Placed]) -> list[dict]:
    return [to_record(p.candidate, f"q{i}", list(p.options) if p.options else None, p.letter)
            for i, p in enumerate(placed)]


def _group(qtype: str) -> str:
    """The group IBP allocates a budget to: a twin family (numeric type and its numeric-option
    twin, pruned as units), else the type."""
    return TWIN_FAMILY.get(qtype, qtype)


def _placed_and_folds(live: dict[str, list[Candidate]], rules: Rules, rng: np.random.Generator, seed: int):
    """The options placed and the folds the attacks are held out with: by scene (5 folds,
    seeded), as the report's, the letters balanced per fold; with one scene, by question group."""
    scenes = sorted({c.scene_id for g in live.values() for c in g})
    if len(scenes) >= 2:
        folds = scene_folds(scenes, DEFAULT_FOLDS, seed)
        return _place_all(live, rules, rng, dict(folds.fold_of)), folds
    placed = _place_all(live, rules, rng)
    return placed, blind.folds_of(blind.truths(_records(placed)), seed)


def bias_scores(placed: Sequence[Placed], folds, b: BalanceRules, errors: list[str] | None = None
                ) -> tuple[np.ndarray, np.ndarray, dict[str, float], float, str]:
    """Per question (in ``placed`` order): the content attacks' mean held-out score of the gold
    answer and its chance (module docstring, step 3; NaN where no content attack applies); per
    type, the largest gap above chance of a content attack (every type its own cell); and the
    worst judged gap of any attack cell (the trade-off curve) with its name. ``errors``: extended
    with every attack that raised (vistest.eval.attacks.RowScores.errors: a bug, reported)."""
    records = _records(placed)
    rows = blind.truths(records)
    rs = blind.score_rows(rows, folds, blind.PROTOCOL, blind.ATTACKS)
    if errors is not None:
        errors.extend(e for e in rs.errors if e not in errors)
    numeric = np.array([p.options is None for p in placed])
    stack = [rs.scores[a] for a in CONTENT_ATTACKS if a in rs.scores]
    stack.append(np.where(numeric, rs.scores["constant"], np.nan))  # the best constant of a number is content
    with np.errstate(all="ignore"):
        score = np.nanmean(np.vstack(stack), axis=0) if len(rows) else np.zeros(0)
    mcq = {p.candidate.question_type for p in placed if p.options is not None}
    per_type: dict[str, float] = defaultdict(lambda: -math.inf)
    for c in attack_cells(rs, 1, b.blind_margin):
        content = c.attack in CONTENT_ATTACKS or (c.attack == "constant" and c.question_type not in mcq)
        if content and not c.pooled:
            per_type[c.question_type] = max(per_type[c.question_type], c.gap)
    cells = [c for c in attack_cells(rs, b.min_judged, b.blind_margin) if c.judged and not c.complement]
    worst = max(cells, key=lambda c: c.gap, default=None)
    return (score, rs.chance, dict(per_type), worst.gap if worst else math.nan,
            f"{worst.attack} / {worst.question_type}" if worst else "-")


def _removable(u_types: Sequence[str], answers: Sequence[str], counts: dict[str, Counter], b: BalanceRules,
               kept: dict[str, list[Candidate]]) -> bool:
    """May a unit (its types, its answers per type) go without an answer cap being exceeded (a
    hard constraint of the set, module docstring step 2): every answer of the type at most
    ``floor(share x n)`` after the removal."""
    for t, a in zip(u_types, answers):
        if not (t in COUNTING_TYPES or is_direction(t)):
            continue
        c = counts[t]
        n = sum(c.values()) - 1
        share = _share(t, kept[t], b)
        distinct = len([x for x, k in c.items() if k > 0])
        if t in COUNTING_TYPES:
            share = max(share, 1.0 / max(1, distinct))
        cap = math.floor(share * n + 1e-9)
        if any((k - (x == a)) > cap for x, k in c.items()):
            return False
    return True


def type_floor(answerable: int, b: BalanceRules) -> int:
    """The fewest questions the balancing leaves a type with answerable pool ``answerable``:
    ``min_per_large_type`` from ``large_type`` answerable on, else ``min_per_type`` (never more
    than the pool; issue #43)."""
    want = b.min_per_large_type if answerable >= b.large_type else b.min_per_type
    return min(want, answerable)


def prune(kept: dict[str, list[Candidate]], rules: Rules, rng: np.random.Generator, seed: int,
          errors: list[str] | None = None, floors: Mapping[str, int] | None = None
          ) -> tuple[list[Placed], dict[str, int], dict[tuple, tuple[float, float]], list[CurvePoint]]:
    """Iterative Bias Pruning (module docstring, step 3): (the placed questions left, removed per
    type, the final bias scores by key, the curve); ``errors``: attacks that raised (bias_scores);
    ``floors``: per type the fewest questions left (default ``balance.min_per_type``; :func:`type_floor`)."""
    b = rules.balance
    floor = defaultdict(lambda: b.min_per_type, floors or {})
    group_floor: dict[str, int] = defaultdict(int)
    for qtype in kept:
        group_floor[_group(qtype)] = max(group_floor[_group(qtype)], floor[qtype])
    units: dict[str, set] = defaultdict(set)
    for qtype, g in kept.items():
        units[_group(qtype)].update(twin_key(c) for c in g)
    n0 = {g: len(u) for g, u in units.items()}
    budget = {g: max(0, min(math.floor(b.removal_budget * n), n - group_floor[g])) for g, n in n0.items()}
    left = dict(budget)
    total0 = sum(len(g) for g in kept.values())
    removed_per: Counter = Counter()
    curve: list[CurvePoint] = []
    dropped: set = set()
    for r in range(b.ibp_rounds + 1):
        live = {t: [c for c in g if twin_key(c) not in dropped] for t, g in kept.items()}
        placed, folds = _placed_and_folds(live, rules, rng, seed + b.judge_fold_seeds + r)
        if not placed:
            return placed, dict(removed_per), {}, curve
        score, chance, type_gap, worst, name = bias_scores(placed, folds, b, errors)
        removed = sum(removed_per.values())
        curve.append(CurvePoint(r, removed, total0 - removed, removed / max(1, total0), worst, name))
        bias = score - chance
        if r == b.ibp_rounds or not any(left.values()):
            break
        by_unit: dict[tuple, list[int]] = defaultdict(list)
        for i, p in enumerate(placed):
            by_unit[twin_key(p.candidate)].append(i)
        ranked: dict[str, list[tuple]] = defaultdict(list)
        for u, idx in by_unit.items():
            s = bias[idx]
            s = s[~np.isnan(s)]
            if len(s):
                ranked[_group(placed[idx[0]].candidate.question_type)].append(
                    (-round(float(s.mean()), 12), min(placed[i].candidate.key for i in idx), u))
        counts: dict[str, Counter] = defaultdict(Counter)
        for p in placed:
            counts[p.candidate.question_type][answer_of(p.candidate)] += 1
        group_gap: dict[str, float] = defaultdict(lambda: -math.inf)
        for t, gap in type_gap.items():
            group_gap[_group(t)] = max(group_gap[_group(t)], gap)
        any_removed = False
        for g in sorted(ranked):
            if group_gap[g] <= b.blind_margin:
                continue  # every content attack on the group within the margin: pruning more overshoots
            n, batch = 0, min(left[g], math.ceil(budget[g] / b.ibp_rounds))
            for neg, _, u in sorted(ranked[g]):
                if n >= batch or -neg < b.stop_score:
                    break
                members = [placed[i].candidate for i in by_unit[u]]
                types_, answers = [c.question_type for c in members], [answer_of(c) for c in members]
                if any(sum(counts[t].values()) <= floor[t] for t in types_) or not _removable(
                        types_, answers, counts, b, live):
                    continue  # a type at its floor (a twin family's types each), or an answer cap
                dropped.add(u)
                left[g] -= 1
                n += 1
                any_removed = True
                for t, a in zip(types_, answers):
                    counts[t][a] -= 1
                    removed_per[t] += 1
        if not any_removed:
            break
    scores = {p.candidate.key: (float(score[i]), float(chance[i])) for i, p in enumerate(placed)}
    return placed, dict(removed_per), scores, curve


def balance(cands: Sequence[Candidate], rules: Rules, rng: np.random.Generator, seed: int = 0) -> Balanced:
    """The balanced set (module docstring). ``seed``: the generation's; the pruning holds the
    attacks out on fold seeds after the report's (``seed + judge_fold_seeds`` ...)."""
    b = rules.balance
    removals: list[Removal] = []
    notes: list[str] = []

    def step(qtype: str, name: str, before: int, after: list[Candidate], note: str = "") -> list[Candidate]:
        if before - len(after):
            removals.append(Removal(qtype, name, before - len(after), note))
        return after

    groups = _groups(cands)
    floors = {t: type_floor(len({twin_key(c) for c in g}), b) for t, g in groups.items()}
    kept: dict[str, list[Candidate]] = {}
    for qtype, group in groups.items():  # numeric and other types first, then the numeric-option twins
        if qtype in TWIN_BASE and any(t in groups for t in TWIN_BASE[qtype]):
            continue
        drawn, capped, note = draw_and_cap(qtype, group, rules, rng, floors[qtype])
        step(qtype, "per_scene_cap", len(group), drawn)
        kept[qtype] = step(qtype, "answer_cap", len(drawn), capped, note)
        if note:
            notes.append(f"{qtype}: {note}")
    for qtype, group in groups.items():
        if qtype not in kept:  # the twin follows its numeric partner
            partners = {twin_key(c) for t in TWIN_BASE[qtype] for c in kept.get(t, ())}
            kept[qtype] = step(qtype, "twin", len(group), [c for c in group if twin_key(c) in partners])
    errors: list[str] = []
    placed, removed, scores, curve = prune(kept, rules, rng, seed, errors, floors)
    if errors:
        notes.append(f"{len(errors)} blind attack(s) raised during the pruning and were left out there (a vistest "
                     f"bug: please report it; the set is still written): {'; '.join(errors[:3])}")
    for qtype, n in sorted(removed.items()):
        removals.append(Removal(qtype, "bias_pruning", n))
    for qtype in sorted(kept):
        pool = len({twin_key(c) for c in kept[qtype]})
        if 0 < pool < b.min_per_type:
            notes.append(f"{qtype}: {pool} question(s) before pruning, below balance.min_per_type "
                         f"({b.min_per_type}): kept, not pruned")
    return Balanced(tuple(sorted(placed, key=lambda p: p.candidate.key)), tuple(removals), tuple(notes), scores,
                    tuple(curve))


def _place_all(groups: dict[str, list[Candidate]], rules: Rules, rng: np.random.Generator,
               unit_of: dict[str, int] | None = None) -> list[Placed]:
    placed: list[Placed] = []
    for qtype in sorted(groups):
        placed.extend(place_options(groups[qtype], ladder_rules(qtype, rules), rng, unit_of))
    return sorted(placed, key=lambda p: p.candidate.key)
