"""Relative direction: standing by A (at its centre) and facing B (forward) or facing away from B
(backward), where is C? Angles are measured in the floor plane, counter-clockwise seen from above
from the facing direction to C's centre (vistest.generate.geometry.ccw_angle_deg), as ReVSI's
``obj_rel_dir_qa.py`` ``_calculate_angle``. Levels (answer words in templates):

* ``easy`` (ReVSI ``*_easy``, VSI-Bench ``object_rel_direction_medium``): left below
  ``back_turn_deg``, back up to ``360 - back_turn_deg``, right above;
* ``lr`` (VSI-Bench ``object_rel_direction_easy``): left / right, the same regions, a C in the
  back region is not asked (VLM-3R ``get_obj_rel_direction_v3_qa.py``);
* ``hard`` (ReVSI ``*_hard``, VSI-Bench ``object_rel_direction_hard``): the quadrant.

Filters (vistest.generate.rules.RelDirectionRules, ReVSI's by default): A, B, C labels unique and
seen; every box's extents along its first two axes at most ``max_object_xy_extent_m``; pairwise
closest-point distances at least ``min_separation_m`` (3D boxes) and ``min_floor_separation_m``
(footprints), at most ``max_separation_m``; C's centre at least ``min_angle_from_boundary_deg``
from every boundary between answers (0 and 360 included); at most
``max_corners_in_other_region`` of C's 8 corners in another answer region than its centre.
"""
from __future__ import annotations

import numpy as np

from . import geometry as geo
from . import templates as tpl
from .candidates import Candidate
from .facts import SceneFacts
from .rules import RelDirectionRules

LEVELS = ("forward_easy", "backward_easy", "forward_hard", "backward_hard")
TYPES = tuple(f"object_rel_direction_{lv}" for lv in LEVELS)
# VSI-Bench's three levels: type -> (level, template); all face B (forward)
VSIBENCH_LEVELS = {"object_rel_direction_easy": "forward_lr", "object_rel_direction_medium": "forward_easy",
                   "object_rel_direction_hard": "forward_hard"}
VSIBENCH_TYPES = tuple(VSIBENCH_LEVELS)


def boundaries(level: str, back_turn_deg: float) -> np.ndarray:
    """Angles (degrees) separating the answers of a level, 0 and 360 included."""
    if level.endswith("hard"):
        return np.array([0.0, 90.0, 180.0, 270.0, 360.0])
    return np.array([0.0, back_turn_deg, 360.0 - back_turn_deg, 360.0])


def region(angles: np.ndarray, level: str, back_turn_deg: float) -> np.ndarray:
    """The region of each angle in [0, 360): an index into :func:`answer_words` (easy, hard), or
    for ``lr`` 0 left, 1 right, 2 back (not asked)."""
    a = np.asarray(angles, float)
    if level.endswith("hard"):  # templates.HARD_ANSWERS: front-left, front-right, back-left, back-right
        quadrant = np.floor(a / 90.0).astype(int) % 4  # 0 front-left, 1 back-left, 2 back-right, 3 front-right
        return np.array([0, 2, 3, 1])[quadrant]
    return np.where(a < back_turn_deg, 0, np.where(a < 360.0 - back_turn_deg, 2, 1))  # left, right, back


def answer_words(level: str) -> tuple[str, ...]:
    if level.endswith("hard"):
        return tpl.HARD_ANSWERS
    return tpl.LR_ANSWERS if level.endswith("lr") else tpl.EASY_ANSWERS


def boundary_distance(angles: np.ndarray, level: str, back_turn_deg: float) -> np.ndarray:
    """Degrees from each angle to the nearest answer boundary."""
    b = boundaries(level, back_turn_deg)
    return np.abs(np.asarray(angles, float)[:, None] - b[None]).min(axis=1)


def _pairs_ok(facts: SceneFacts, objs, rules: RelDirectionRules) -> np.ndarray:
    """(n, n) bool: may the two objects be two of A, B, C (the separation rules)."""
    n = len(objs)
    ok = np.zeros((n, n), bool)
    for i in range(n):
        for j in range(i + 1, n):
            d3 = facts.distance(objs[i].id, objs[j].id)
            good = d3 >= rules.min_separation_m and (not rules.max_separation_m or d3 <= rules.max_separation_m)
            if good and rules.min_floor_separation_m > 0:
                good = facts.floor_distance(objs[i].id, objs[j].id) >= rules.min_floor_separation_m
            ok[i, j] = ok[j, i] = good
    return ok


def candidates(facts: SceneFacts, rules: RelDirectionRules, types: tuple[str, ...]) -> list[Candidate]:
    """Every (A, B, C) and requested type passing the filters, ordered by (A, B, C) ids."""
    wanted = [(t, lv, tpl.REL_DIRECTION[lv]) for lv, t in zip(LEVELS, TYPES) if t in types]
    wanted += [(t, lv, tpl.VSIBENCH_REL_DIRECTION[t]) for t, lv in VSIBENCH_LEVELS.items() if t in types]
    if not wanted:
        return []
    objs = [o for o in facts.unique(exclude=rules.exclude_labels)
            if not rules.max_object_xy_extent_m or max(o.size[0], o.size[1]) <= rules.max_object_xy_extent_m]
    n = len(objs)
    if n < 3:
        return []
    far = _pairs_ok(facts, objs, rules)
    corners = np.stack([geo.corners(*o.box)[:, :2] for o in objs])  # (n, 8, 2)
    centers = np.stack([o.center[:2] for o in objs])
    out: list[Candidate] = []
    for ia, a in enumerate(objs):
        for ib, b in enumerate(objs):
            if ib == ia or not far[ia, ib]:
                continue
            cs = [ic for ic in range(n) if ic not in (ia, ib) and far[ia, ic] and far[ib, ic]]
            if not cs:
                continue
            to_b = centers[ib] - centers[ia]
            vec_c = centers[cs] - centers[ia]
            vec_corners = (corners[cs] - centers[ia]).reshape(-1, 2)
            for qtype, level, template in wanted:
                facing = -to_b if level.startswith("backward") else to_b
                ang = geo.ccw_angle_deg(facing, vec_c)
                ang_corners = geo.ccw_angle_deg(facing, vec_corners).reshape(len(cs), 8)
                reg = region(ang, level, rules.back_turn_deg)
                ok = boundary_distance(ang, level, rules.back_turn_deg) >= rules.min_angle_from_boundary_deg
                across = (region(ang_corners.ravel(), level, rules.back_turn_deg).reshape(len(cs), 8)
                          != reg[:, None]).sum(axis=1)
                ok &= across <= rules.max_corners_in_other_region
                if level.endswith("lr"):
                    ok &= reg != 2  # C behind: VSI-Bench's easy level asks left or right only
                words = answer_words(level)
                for k in np.flatnonzero(ok):
                    c = objs[cs[k]]
                    ans = words[int(reg[k])]
                    out.append(Candidate(
                        facts.scene_id, qtype, template,
                        (("positioning_object", a.label), ("orienting_object", b.label), ("querying_object", c.label)),
                        objects=(a.id, b.id, c.id), answer=ans, distractors=tuple(w for w in words if w != ans),
                        detail=(("angle_deg", float(ang[k])),)))
    return out
