"""Counting: ``object_counting_single`` (instances of one label), ``object_counting_multiple`` (the
sum over two labels) and VSI-Bench's ``object_counting`` (one label, its template), ReVSI's rules
by default (vistest.generate.rules.CountingRules, ``obj_count_single_qa.py`` /
``obj_count_multiple_qa.py``): a label needs at least ``min_count_single`` instances, except the
challenging labels, asked at any count but kept with ``challenging_keep_probability`` at the
listed counts (ReVSI: a count of 1 with 0.4, 2 with 0.05); a sum needs both labels with at least
``min_count_each_multiple`` and a sum of two challenging labels equal to ``challenging_pair_sum``
is kept with ``challenging_pair_keep_probability``. Every instance of a counted label must be seen
in the video, so the count holds for what the video shows."""
from __future__ import annotations

from itertools import combinations

import numpy as np

from . import templates as tpl
from .candidates import Candidate
from .facts import SceneFacts
from .rules import CountingRules

SINGLE, MULTIPLE = "object_counting_single", "object_counting_multiple"
VSIBENCH = "object_counting"
TYPES = (SINGLE, MULTIPLE)


def keep_single(label: str, n: int, draw: float, rules: CountingRules) -> bool:
    """ReVSI's ``_should_generate_question``: is a one-label question on ``label`` (``n``
    instances) kept, given a uniform ``draw`` in [0, 1)."""
    challenging = {x.lower() for x in rules.challenging_labels}
    if label.lower() not in challenging:
        return n >= rules.min_count_single
    p = dict(rules.challenging_keep_probability).get(n)
    return n >= 1 and (p is None or draw <= p)


def keep_pair(a: tuple[str, int], b: tuple[str, int], draw: float, rules: CountingRules) -> bool:
    """ReVSI's pair rule: a sum of two challenging labels equal to ``challenging_pair_sum`` is kept
    only when ``draw`` <= ``challenging_pair_keep_probability``."""
    challenging = {x.lower() for x in rules.challenging_labels}
    if a[0].lower() not in challenging or b[0].lower() not in challenging:
        return True
    return a[1] + b[1] != rules.challenging_pair_sum or draw <= rules.challenging_pair_keep_probability


def candidates(facts: SceneFacts, rules: CountingRules, types: tuple[str, ...], rng: np.random.Generator
               ) -> list[Candidate]:
    """Every counting question the scene supports, in label order (one draw per label and pair,
    whatever the rule decides, so one label's rule does not shift the others' draws)."""
    ex = {x.lower() for x in rules.exclude_labels}
    counts = {lab: len(ids) for lab, ids in facts.by_label.items() if lab.lower() not in ex and facts.all_seen(lab)}
    out: list[Candidate] = []
    for qtype, template in ((SINGLE, tpl.COUNT_SINGLE), (VSIBENCH, tpl.VSIBENCH_COUNT)):
        if qtype not in types:
            continue
        for lab, n in counts.items():
            if keep_single(lab, n, float(rng.random()), rules):
                out.append(Candidate(facts.scene_id, qtype, template, (("object_name", lab),),
                                     category=(lab,), value=float(n), decimals=0, detail=(("count", float(n)),)))
    if MULTIPLE in types:
        labels = [lab for lab, n in counts.items() if n >= rules.min_count_each_multiple]
        for a, b in combinations(labels, 2):
            if rng.random() < 0.5:  # the order the labels are named in: not alphabetical
                a, b = b, a
            if not keep_pair((a, counts[a]), (b, counts[b]), float(rng.random()), rules):
                continue
            n = counts[a] + counts[b]
            out.append(Candidate(facts.scene_id, MULTIPLE, tpl.COUNT_MULTIPLE,
                                 (("object_name_1", a), ("object_name_2", b)), category=(a, b), value=float(n),
                                 decimals=0, detail=((a, float(counts[a])), (b, float(counts[b])))))
    return out
