"""Appearance order: ``obj_appearance_order``, VSI-Bench's template: the order in which
``num_categories`` labels first appear in the video (vistest.generate.facts: the first valid
frame whose visible fraction exceeds the seen threshold, any instance of the label). Consecutive
first appearances at least ``min_gap_s`` apart; the labels are listed in the question in a
random order; the wrong options are other orders drawn uniformly
(vistest.generate.rules.AppearanceRules)."""
from __future__ import annotations

from itertools import combinations, permutations

import numpy as np

from . import templates as tpl
from .candidates import Candidate
from .facts import SceneFacts
from .rules import AppearanceRules

TYPE = "obj_appearance_order"


def candidates(facts: SceneFacts, rules: AppearanceRules, rng: np.random.Generator) -> list[Candidate]:
    """Every label set passing the gap rule, in label order."""
    ex = {x.lower() for x in rules.exclude_labels}
    lowered = [lab.lower() for lab in facts.by_label]
    times = {}
    for lab in facts.by_label:  # a label must read back from an option: no comma, unique when lower-cased
        if lab.lower() in ex or "," in lab or lowered.count(lab.lower()) > 1:
            continue
        t = facts.label_first_time(lab)
        if t is not None:
            times[lab] = t
    out = []
    k = rules.num_categories
    for combo in combinations(sorted(times), k):
        order = sorted(combo, key=lambda lab: times[lab])
        gaps = np.diff([times[lab] for lab in order])
        if gaps.min() < rules.min_gap_s:
            continue
        listed = [combo[i] for i in rng.permutation(k)]
        others = [p for p in permutations(order) if list(p) != order]
        pick = rng.choice(len(others), size=rules.num_options - 1, replace=False)
        distractors = tuple(", ".join(others[i]) for i in sorted(pick.tolist()))
        out.append(Candidate(facts.scene_id, TYPE, tpl.APPEARANCE_ORDER, (("categories", ", ".join(listed)),),
                             category=tuple(listed), category_list=True, answer=", ".join(order),
                             distractors=distractors, detail=tuple((lab, times[lab]) for lab in order)))
    return out
