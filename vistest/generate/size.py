"""Object size: ``object_size_estimation``, the longest side (full extent) of an object's box in
centimetres, for objects whose label is unique in the scene; ReVSI's exclusion list and its
subsampling of typical-sized instances (vistest.generate.rules.SizeRules)."""
from __future__ import annotations

import numpy as np

from . import templates as tpl
from .candidates import Candidate
from .facts import SceneFacts
from .rules import SizeRules

TYPE = "object_size_estimation"


def longest_side_cm(size: np.ndarray) -> float:
    """The longest full extent of a box, in centimetres."""
    return float(np.max(size)) * 100.0


def candidates(facts: SceneFacts, rules: SizeRules, qtype: str, rng: np.random.Generator,
               template: str = tpl.SIZE) -> list[Candidate]:
    """Every size question the scene supports (``qtype``: the numeric type or its ``_mcq``), by object id
    (``template``: ReVSI's wording, or VSI-Bench's for ``--types vsibench``)."""
    sub = {lab.lower(): (lo, hi, keep) for lab, lo, hi, keep in rules.subsample}
    out = []
    for o in facts.unique(exclude=rules.exclude_labels):
        cm = longest_side_cm(o.size)
        draw = rng.random()  # drawn for every object, so one rule does not shift the others' draws
        rule = sub.get(o.label.lower())
        if rule is not None and rule[0] < cm < rule[1] and draw > rule[2]:
            continue
        out.append(Candidate(facts.scene_id, qtype, template, (("object_name", o.label),), objects=(o.id,),
                             value=cm, decimals=rules.decimals, label=o.label, detail=(("longest_side_cm", cm),)))
    return out
