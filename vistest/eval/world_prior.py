"""What a blind model knows of the world: typical object sizes, room areas and object-pair
distances, fitted *outside* any generated set, on real scans' annotations (the tables of
vistest.eval.world_prior_data, derived by vistest.datasets.world_prior from the VSI-Bench meta
info of 288 ScanNet / ARKitScenes / ScanNet++ validation scans).

:func:`prior_answer` is the ``world-prior`` attack of vistest.eval.attacks (issue #34, item 3): it
answers from the question's words alone, as a language model with no video would:

* object size (``object_size_estimation[_mcq]``): the label's median longest side in cm;
* absolute distance (``object_abs_distance[_mcq]``): the label pair's median closest-point
  distance in m, else the median over every pair;
* room size (``room_size_estimation*``): the median room area in m²;
* relative distance (closest / farthest): the option whose label pair with the primary object has
  the smallest (closest) / largest (farthest) typical distance; labels without a pair prior take
  the median over every pair (ties: the first option).

A label missing from the tables falls back to the median over the table's labels (sizes) or
pairs (distances): a model still guesses. Labels are matched in lower case, a trailing ``s``
dropped when only the singular is known. Numeric options: the option nearest the prior in ratio.
Other types: no answer (the attack does not apply).
"""
from __future__ import annotations

import re
import statistics

from . import world_prior_data as data

_SIZE_RE = re.compile(r".*of the (.+?), measured in centimeters")
_ABS_RE = re.compile(r"between the (.+?) and the (.+?) \(in meters\)")
_REL_RE = re.compile(r"is the (closest|farthest) (?:to|from) the (.+?)\?")
TYPICAL_SIZE_CM = statistics.median(v for v, _ in data.SIZE_CM.values())


def _label(text: str, table_keys) -> str:
    key = text.strip().lower()
    if key not in table_keys and key.endswith("s") and key[:-1] in table_keys:
        return key[:-1]
    return key


def size_cm(label: str) -> float:
    """The typical longest side of ``label`` in centimetres (module docstring)."""
    hit = data.SIZE_CM.get(_label(label, data.SIZE_CM))
    return hit[0] if hit else TYPICAL_SIZE_CM


def distance_m(a: str, b: str) -> float:
    """The typical closest-point distance between a ``a`` and a ``b`` in metres."""
    ka = _label(a, {x for pair in data.DISTANCE_M for x in pair})
    kb = _label(b, {x for pair in data.DISTANCE_M for x in pair})
    hit = data.DISTANCE_M.get(tuple(sorted((ka, kb))))
    return hit[0] if hit else data.ANY_DISTANCE_M[0]


def room_m2() -> float:
    """The typical room area in square metres."""
    return data.ROOM_M2[0]


def prior_value(question_type: str, question: str, label: str | None = None) -> float | None:
    """The prior's number for a numeric question (or its numeric-option twin), None when the
    type is not one the prior answers or the question's labels cannot be read."""
    if question_type.startswith("object_size_estimation"):
        m = _SIZE_RE.search(question)
        lab = label or (m.group(1) if m else None)
        return size_cm(lab) if lab else None
    if question_type.startswith("object_abs_distance"):
        m = _ABS_RE.search(question)
        return distance_m(m.group(1), m.group(2)) if m else None
    if question_type.startswith("room_size_estimation"):
        return room_m2()
    return None


def prior_choice(question: str, option_texts: list[str]) -> int | None:
    """The option index a relative-distance question's prior picks (module docstring), None for
    other questions."""
    m = _REL_RE.search(question)
    if not m or not option_texts:
        return None
    d = [distance_m(m.group(2), t) for t in option_texts]
    pick = min(d) if m.group(1) == "closest" else max(d)
    return d.index(pick)
