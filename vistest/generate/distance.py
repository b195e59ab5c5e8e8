"""Distances, measured between the closest points of two solid boxes (vistest.generate.geometry):

* ``object_abs_distance``: the distance in metres between two objects whose labels are unique;
  pairs under ``min_distance_m`` dropped, ReVSI's subsampling of short pairs
  (vistest.generate.rules.AbsDistanceRules);
* ``object_rel_distance_closest`` / ``_farthest`` (VSI-Bench: ``object_rel_distance``, closest):
  which of ``num_options`` objects is closest to (farthest from) a primary object; all labels
  unique; every option more than ``min_option_distance_m`` from the primary and every two
  options' distances more than ``min_option_gap_m`` apart (vistest.generate.rules.RelDistanceRules;
  ReVSI's ``obj_rel_dist_*_qa.py``: of all option sets that pass, one drawn at random per primary
  object).
"""
from __future__ import annotations

from itertools import combinations

import numpy as np

from . import templates as tpl
from .candidates import Candidate
from .facts import SceneFacts
from .rules import AbsDistanceRules, RelDistanceRules

ABS = "object_abs_distance"
CLOSEST, FARTHEST = "object_rel_distance_closest", "object_rel_distance_farthest"
VSIBENCH_REL = "object_rel_distance"
REL_TYPES = (CLOSEST, FARTHEST)
MAX_OPTION_SETS = 2000  # option sets enumerated per primary object at most (bounds the work in large scenes)


ABS_TWINS = (ABS, ABS + "_mcq")


def abs_candidates(facts: SceneFacts, rules: AbsDistanceRules, types: tuple[str, ...], rng: np.random.Generator
                   ) -> list[Candidate]:
    """Every absolute-distance question the scene supports, by id pair: one of each of
    :data:`ABS_TWINS` in ``types`` from the same draws (twins exist together or not at all)."""
    asked = [t for t in ABS_TWINS if t in types]
    if not asked:
        return []
    objs = facts.unique(exclude=rules.exclude_labels)
    out = []
    for a, b in combinations(objs, 2):
        d = facts.distance(a.id, b.id)
        draw = rng.random()
        if d < rules.min_distance_m:
            continue
        if any(lo < d < hi and draw < p for lo, hi, p in rules.skip_probability):
            continue
        if rng.random() < 0.5:  # which object is named first
            a, b = b, a
        out += [Candidate(facts.scene_id, qtype, tpl.ABS_DISTANCE,
                          (("object_name_1", a.label), ("object_name_2", b.label)), objects=(a.id, b.id),
                          value=d, decimals=rules.decimals, detail=(("distance_m", d),)) for qtype in asked]
    return out


def option_sets(dists: np.ndarray, k: int, rules: RelDistanceRules) -> list[tuple[int, ...]]:
    """Every set of ``k`` indices (ascending) whose distances (to the primary, metres) pass the
    ambiguity filters: every option more than ``min_option_distance_m`` away, every two more
    than ``min_option_gap_m`` apart; in lexicographic order (at most ``MAX_OPTION_SETS``)."""
    far = [i for i in range(len(dists)) if dists[i] > rules.min_option_distance_m]
    out: list[tuple[int, ...]] = []

    def grow(chosen: list[int], start: int) -> None:
        if len(out) >= MAX_OPTION_SETS:
            return
        if len(chosen) == k:
            out.append(tuple(chosen))
            return
        for j in range(start, len(far)):
            i = far[j]
            if all(abs(dists[i] - dists[c]) > rules.min_option_gap_m for c in chosen):
                grow(chosen + [i], j + 1)

    grow([], 0)
    return out


def rel_candidates(facts: SceneFacts, rules: RelDistanceRules, types: tuple[str, ...], rng: np.random.Generator
                   ) -> list[Candidate]:
    """Relative-distance questions: for each primary object (by id) and type, one of the option
    sets of ``num_options`` other unique objects that pass the filters, drawn at random (ReVSI's
    ``find_valid_4_tuples_from_pair_scores`` then ``rng.choice``); the options listed in random
    order by the balancing pass."""
    objs = facts.unique(exclude=rules.exclude_labels)
    k = rules.num_options
    out: list[Candidate] = []
    wanted = [(CLOSEST, False, tpl.REL_DISTANCE_CLOSEST), (FARTHEST, True, tpl.REL_DISTANCE_FARTHEST),
              (VSIBENCH_REL, False, tpl.VSIBENCH_REL_DISTANCE)]
    for qtype, farthest, template in wanted:
        if qtype not in types:
            continue
        for p in objs:
            others = [o for o in objs if o.id != p.id]
            if len(others) < k:
                continue
            dists = np.array([facts.distance(p.id, o.id) for o in others])
            sets = option_sets(dists, k, rules)
            if not sets:
                continue
            pick = sets[int(rng.integers(len(sets)))]
            opts = [others[i] for i in pick]
            d = dists[list(pick)]
            win = int(np.argmax(d) if farthest else np.argmin(d))
            out.append(Candidate(
                facts.scene_id, qtype, template, (("object_name", p.label),),
                objects=(p.id,) + tuple(o.id for o in opts),
                answer=opts[win].label, distractors=tuple(o.label for i, o in enumerate(opts) if i != win),
                detail=tuple((o.label, float(x)) for o, x in zip(opts, d))))
    return out
