"""Counting: ``object_counting_single`` (instances of one label, counts of 1 included) and
``object_counting_multiple`` (the sum over two labels), ReVSI's templates and rules
(vistest.generate.rules.CountingRules). Every instance of a counted label must be seen in the
video, so the count holds for what the video shows."""
from __future__ import annotations

from itertools import combinations

import numpy as np

from . import templates as tpl
from .candidates import Candidate
from .facts import SceneFacts
from .rules import CountingRules

SINGLE, MULTIPLE = "object_counting_single", "object_counting_multiple"
TYPES = (SINGLE, MULTIPLE)


def candidates(facts: SceneFacts, rules: CountingRules, types: tuple[str, ...], rng: np.random.Generator
               ) -> list[Candidate]:
    """Every counting question the scene supports, in label order."""
    ex = {x.lower() for x in rules.exclude_labels}
    counts = {lab: len(ids) for lab, ids in facts.by_label.items() if lab.lower() not in ex and facts.all_seen(lab)}
    out: list[Candidate] = []
    if SINGLE in types:
        for lab, n in counts.items():
            if n >= rules.min_count_single:
                out.append(Candidate(facts.scene_id, SINGLE, tpl.COUNT_SINGLE, (("object_name", lab),),
                                     category=(lab,), value=float(n), decimals=0, detail=(("count", float(n)),)))
    if MULTIPLE in types:
        labels = [lab for lab, n in counts.items() if n >= rules.min_count_each_multiple]
        for a, b in combinations(labels, 2):
            if rng.random() < 0.5:  # the order the labels are named in: not alphabetical
                a, b = b, a
            n = counts[a] + counts[b]
            out.append(Candidate(facts.scene_id, MULTIPLE, tpl.COUNT_MULTIPLE,
                                 (("object_name_1", a), ("object_name_2", b)), category=(a, b), value=float(n),
                                 decimals=0, detail=((a, float(counts[a])), (b, float(counts[b])))))
    return out
