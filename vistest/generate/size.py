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


TWINS = (TYPE, TYPE + "_mcq")


def candidates(facts: SceneFacts, rules: SizeRules, types: tuple[str, ...], rng: np.random.Generator,
               template: str = tpl.SIZE) -> list[Candidate]:
    """Every size question the scene supports, by object id: for each object that passes, one
    question of each of :data:`TWINS` in ``types`` from the same draw (a numeric question and its
    numeric-option twin exist together or not at all). ``template``: ReVSI's wording, or
    VSI-Bench's for ``--types vsibench``."""
    asked = [t for t in TWINS if t in types]
    if not asked:
        return []
    sub = {lab.lower(): (lo, hi, keep) for lab, lo, hi, keep in rules.subsample}
    out = []
    for o in facts.unique(exclude=rules.exclude_labels):
        cm = longest_side_cm(o.size)
        draw = rng.random()  # drawn for every object, so one rule does not shift the others' draws
        rule = sub.get(o.label.lower())
        if rule is not None and rule[0] < cm < rule[1] and draw > rule[2]:
            continue
        out += [Candidate(facts.scene_id, qtype, template, (("object_name", o.label),), objects=(o.id,),
                          value=cm, decimals=rules.decimals, label=o.label, detail=(("longest_side_cm", cm),))
                for qtype in asked]
    return out
