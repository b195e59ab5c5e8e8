"""Distances, measured between the closest points of two solid boxes (vistest.generate.geometry):

* ``object_abs_distance``: the distance in metres between two objects whose labels are unique;
  pairs under ``min_distance_m`` dropped, ReVSI's subsampling of short pairs
  (vistest.generate.rules.AbsDistanceRules);
* ``object_rel_distance_closest`` / ``_farthest``: which of ``num_options`` objects is closest to
  (farthest from) a primary object; all labels unique; dropped when the winner is within
  ``min_winner_margin_m`` of the runner-up, when two options' distances differ by no more than
  ``min_option_gap_m``, or when an option is closer than ``min_option_distance_m`` to the
  primary (vistest.generate.rules.RelDistanceRules).
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
REL_TYPES = (CLOSEST, FARTHEST)
SEARCH_PER_OBJECT = 24  # random option sets tried per primary object (bounds the search; see rel_candidates)


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


def rel_ok(dists: np.ndarray, farthest: bool, rules: RelDistanceRules) -> bool:
    """The ambiguity filters on the options' distances to the primary (metres)."""
    if dists.min() < rules.min_option_distance_m:
        return False
    d = np.sort(dists)
    if np.diff(d).min() <= rules.min_option_gap_m and rules.min_option_gap_m > 0:
        return False
    margin = d[-1] - d[-2] if farthest else d[1] - d[0]
    return bool(margin >= rules.min_winner_margin_m)


def rel_candidates(facts: SceneFacts, rules: RelDistanceRules, types: tuple[str, ...], rng: np.random.Generator
                   ) -> list[Candidate]:
    """Relative-distance questions: for each primary object (by id) and type, random option sets
    of ``num_options`` other unique objects are tried (at most ``SEARCH_PER_OBJECT``); the first
    that passes the filters is the candidate (one per primary object, as ReVSI's generator)."""
    objs = facts.unique(exclude=rules.exclude_labels)
    k = rules.num_options
    out: list[Candidate] = []
    for qtype in REL_TYPES:
        if qtype not in types:
            continue
        farthest = qtype == FARTHEST
        template = tpl.REL_DISTANCE_FARTHEST if farthest else tpl.REL_DISTANCE_CLOSEST
        for p in objs:
            others = [o for o in objs if o.id != p.id]
            if len(others) < k:
                continue
            seen: set[tuple[str, ...]] = set()
            for _ in range(SEARCH_PER_OBJECT):
                pick = sorted(rng.choice(len(others), size=k, replace=False).tolist())
                opts = [others[i] for i in pick]
                ids = tuple(o.id for o in opts)
                if ids in seen:
                    continue
                seen.add(ids)
                dists = np.array([facts.distance(p.id, o.id) for o in opts])
                if not rel_ok(dists, farthest, rules):
                    continue
                win = int(np.argmax(dists) if farthest else np.argmin(dists))
                out.append(Candidate(
                    facts.scene_id, qtype, template, (("object_name", p.label),), objects=(p.id,) + ids,
                    answer=opts[win].label, distractors=tuple(o.label for i, o in enumerate(opts) if i != win),
                    detail=tuple((o.label, float(d)) for o, d in zip(opts, dists))))
                break  # one option set per primary object and type, as ReVSI
    return out
