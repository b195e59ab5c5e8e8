"""Relative direction, ReVSI's four types ``object_rel_direction_{forward,backward}_{easy,hard}``:
standing by A (at its centre) and facing B (forward) or facing away from B (backward), where
is C? Easy: left / right / back (back = a turn of at least ``back_turn_deg``); hard: the
quadrant (front-left, back-left, back-right, front-right). Angles are measured in the floor
plane, counter-clockwise seen from above from the facing direction to C's centre
(vistest.generate.geometry.ccw_angle_deg).

Filters (vistest.generate.rules.RelDirectionRules): A, B, C labels unique and seen; A's
footprint area at most ``max_positioning_footprint_m2``; the footprints pairwise at least
``min_pairwise_distance_m`` apart on the floor; C's centre at least
``min_angle_from_boundary_deg`` from every boundary between answers; C's box (its 8 corners)
within one answer region unless ``box_may_span_answers``.
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


def boundaries(level: str, back_turn_deg: float) -> np.ndarray:
    """Angles (degrees) separating the answers of a level."""
    if level.endswith("easy"):
        return np.array([0.0, back_turn_deg, 360.0 - back_turn_deg, 360.0])
    return np.array([0.0, 90.0, 180.0, 270.0, 360.0])


def region(angles: np.ndarray, level: str, back_turn_deg: float) -> np.ndarray:
    """The answer (an index into the level's answer words) for each angle in [0, 360)."""
    a = np.asarray(angles, float)
    if level.endswith("easy"):  # templates.EASY_ANSWERS: left, right, back
        return np.where(a < back_turn_deg, 0, np.where(a < 360.0 - back_turn_deg, 2, 1))
    # templates.HARD_ANSWERS: front-left, front-right, back-left, back-right
    quadrant = np.floor(a / 90.0).astype(int) % 4  # 0 front-left, 1 back-left, 2 back-right, 3 front-right
    return np.array([0, 2, 3, 1])[quadrant]


def answer_words(level: str) -> tuple[str, ...]:
    return tpl.EASY_ANSWERS if level.endswith("easy") else tpl.HARD_ANSWERS


def boundary_distance(angles: np.ndarray, level: str, back_turn_deg: float) -> np.ndarray:
    """Degrees from each angle to the nearest answer boundary."""
    b = boundaries(level, back_turn_deg)
    return np.abs(np.asarray(angles, float)[:, None] - b[None]).min(axis=1)


def candidates(facts: SceneFacts, rules: RelDirectionRules, types: tuple[str, ...]) -> list[Candidate]:
    """Every (A, B, C) and requested level passing the filters, ordered by (A, B, C) ids."""
    levels = [lv for lv, t in zip(LEVELS, TYPES) if t in types]
    if not levels:
        return []
    objs = facts.unique(exclude=rules.exclude_labels)
    n = len(objs)
    if n < 3:
        return []
    far = np.zeros((n, n), bool)
    for i in range(n):
        for j in range(i + 1, n):
            far[i, j] = far[j, i] = facts.floor_distance(objs[i].id, objs[j].id) >= rules.min_pairwise_distance_m
    corners = np.stack([geo.corners(*o.box)[:, :2] for o in objs])  # (n, 8, 2)
    centers = np.stack([o.center[:2] for o in objs])
    out: list[Candidate] = []
    for ia, a in enumerate(objs):
        if geo.polygon_area(a.footprint) > rules.max_positioning_footprint_m2:
            continue
        for ib, b in enumerate(objs):
            if ib == ia or not far[ia, ib]:
                continue
            cs = [ic for ic in range(n) if ic not in (ia, ib) and far[ia, ic] and far[ib, ic]]
            if not cs:
                continue
            to_b = centers[ib] - centers[ia]
            vec_c = centers[cs] - centers[ia]
            vec_corners = (corners[cs] - centers[ia]).reshape(-1, 2)
            for level in levels:
                facing = -to_b if level.startswith("backward") else to_b
                ang = geo.ccw_angle_deg(facing, vec_c)
                ang_corners = geo.ccw_angle_deg(facing, vec_corners).reshape(len(cs), 8)
                reg = region(ang, level, rules.back_turn_deg)
                ok = boundary_distance(ang, level, rules.back_turn_deg) >= rules.min_angle_from_boundary_deg
                if not rules.box_may_span_answers:
                    ok &= (region(ang_corners.ravel(), level, rules.back_turn_deg).reshape(len(cs), 8)
                           == reg[:, None]).all(axis=1)
                words = answer_words(level)
                for k in np.flatnonzero(ok):
                    c = objs[cs[k]]
                    ans = words[int(reg[k])]
                    out.append(Candidate(
                        facts.scene_id, f"object_rel_direction_{level}", tpl.REL_DIRECTION[level],
                        (("positioning_object", a.label), ("orienting_object", b.label), ("querying_object", c.label)),
                        objects=(a.id, b.id, c.id), answer=ans, distractors=tuple(w for w in words if w != ans),
                        detail=(("angle_deg", float(ang[k])),)))
    return out
