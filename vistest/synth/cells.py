"""The 12 cells of VGenST's taxonomy as scenario specs, and each cell's task (the question types asked).

:func:`cell_spec` makes the k-th scenario of a cell from a seed: the scale's categories (drawn from its
catalogue, vistest.synth.layout), :data:`KIND_LEVELS` kinds (cycling with k), each at a count level of
:data:`COUNT_LEVELS` (1, 1-2, 1, 2-3 instances, cycling over the kinds from a level that shifts with
k // 3: every scenario mixes unique labels, which most types ask about, with repeated ones, which
counting asks about), sizes in the lower or the upper half of the catalogue's range (k // 9), so that a
cell's scenarios spread over counts and sizes; the exocentric camera cycles fixed, orbit, pan; a dynamic cell
adds one or two movers (the scale's movable categories) with the scale's speeds (m/s) and accelerations
(m/s^2), starting at a tenth of the video, in the ground's central 70% (:data:`CENTRE`: every camera
looks there, and their lanes stay in it), listed first (their lanes are planned before the other objects
are placed, which keep clear of them).

:data:`CELL_TYPES`: one task per cell, as vistest.generate types (VGenST asks one reasoning task per
cell; these are the generator's types closest to each): static cells ask the static types of their
scale (:data:`STATIC_TYPES`: figural: sizes, counting, relative distance; vista: absolute and relative
distance, direction, room size; environmental: absolute and relative distance, direction, counting),
egocentric ones also the order of appearance along the walk; dynamic cells ask the motion types of
the movers and the camera-motion types of a moving camera.
"""
from __future__ import annotations

import numpy as np

from .layout import catalogue
from .spec import CELLS, SCALES, ScenarioSpec, cell_name, spec_from_dict

MOVERS = {"figural": ("toy car", "ball"), "vista": ("ball", "robot vacuum", "cart"),
          "environmental": ("car", "bicycle", "ball", "cart")}
SPEED_MPS = {"figural": (0.08, 0.2), "vista": (0.3, 0.8), "environmental": (1.0, 3.0)}
ACCEL_MPS2 = {"figural": (-0.02, 0.04), "vista": (-0.08, 0.15), "environmental": (-0.3, 0.4)}
COUNT_LEVELS = ((1, 1), (1, 2), (1, 1), (2, 3))
KIND_LEVELS = {"figural": (3, 4, 5), "vista": (5, 6, 8), "environmental": (5, 6, 8)}
CENTRE = [0.15, 0.15, 0.85, 0.85]  # a mover's region: the ground's centre, where every camera looks
EXO_MODES = ("fixed", "orbit", "pan")

STATIC_TYPES = {
    "figural": ("object_size_estimation", "object_counting_single", "object_rel_distance_closest",
                "object_rel_distance_farthest"),
    "vista": ("object_abs_distance", "object_rel_distance_closest", "object_rel_direction_forward_easy",
              "object_rel_direction_forward_hard", "room_size_estimation_single"),
    "environmental": ("object_abs_distance", "object_rel_distance_farthest", "object_rel_direction_forward_easy",
                      "object_counting_single"),
}
EGO_EXTRA = ("obj_appearance_order",)
MOTION = ("motion_displacement", "motion_path_length", "motion_speed", "motion_acceleration", "motion_direction")
CAMERA_MOTION = ("camera_orientation_change", "camera_displacement", "camera_path_length")


def cell_types(cell: str) -> tuple[str, ...]:
    """The question types of a cell's task (module docstring), in the generator's order."""
    from ..generate.candidates import WRITABLE_TYPES

    scale, persp, dyn = cell.split("-")
    want = set(STATIC_TYPES[scale]) | (set(EGO_EXTRA) if persp == "egocentric" else set())
    if dyn == "dynamic":
        want = set(MOTION) | set(CAMERA_MOTION)
    return tuple(t for t in WRITABLE_TYPES if t in want)


CELL_TYPES = {c: cell_types(c) for c in CELLS}


def split_cell(cell: str) -> tuple[str, str, bool]:
    scale, persp, dyn = cell.split("-")
    return scale, persp, dyn == "dynamic"


def cell_spec(cell: str, k: int, seed: int = 0, frames: int = 300, resolution: tuple[int, int] = (640, 480),
              fps: float = 30.0) -> ScenarioSpec:
    """The ``k``-th scenario of ``cell`` (module docstring); its id ``{cell}-{k:04d}``, its seed drawn
    from (``seed``, the cell's index, ``k``)."""
    scale, persp, dyn = split_cell(cell)
    assert scale in SCALES and cell == cell_name(scale, persp, dyn)
    rng = np.random.default_rng([seed, CELLS.index(cell), k])
    cat = catalogue(scale)
    movers = MOVERS[scale]
    pool = sorted(c for c in cat if c not in movers and c != "table")
    kinds = KIND_LEVELS[scale][k % 3]
    upper = bool((k // 9) % 2)
    objects = []
    for j, c in enumerate(rng.choice(pool, size=kinds, replace=False)):
        counts = COUNT_LEVELS[(k // 3 + j) % len(COUNT_LEVELS)]
        lo, hi = (np.array(v, float) for v in cat[str(c)])
        mid = (lo + hi) / 2
        smin, smax = (mid, hi) if upper else (lo, mid)
        objects.append({"category": str(c), "count": list(counts), "size_min": [round(float(x), 3) for x in smin],
                        "size_max": [round(float(x), 3) for x in smax]})
    if len(objects) >= 2 and rng.uniform() < 0.5:
        objects[-1].update(relation="next_to", target=objects[0]["category"])
    camera = {"perspective": persp, "mode": "walk" if persp == "egocentric" else EXO_MODES[k % 3]}
    dynamics = []
    if dyn:  # listed first: their lanes are planned before the other objects are placed
        for m in rng.choice(movers, size=1 + k % 2, replace=False):
            objects.insert(0, {"category": str(m), "count": 1, "relation": "inside", "region": CENTRE})
            dynamics.append({"category": str(m), "speed_mps": list(SPEED_MPS[scale]),
                             "accel_mps2": list(ACCEL_MPS2[scale]), "start_s": round(0.1 * frames / fps, 3)})
    return spec_from_dict({"scenario_id": f"{cell}-{k:04d}", "scale": scale, "objects": objects, "camera": camera,
                           "dynamics": dynamics, "frames": frames, "fps": fps, "resolution": list(resolution),
                           "seed": int(rng.integers(2 ** 31))}, source=f"<grid cell {cell} #{k}>")


SEEN_KIND = "silhouette"  # a scenario's objects count as seen when 10% of their own silhouette shows


# figural scale: the motion rules' thresholds (vistest.generate.rules.MotionRules) for tabletop motion, lower
# than the room-scale defaults (0.3 m, 0.05 m/s, 0.1 m/s^2, 0.1 m/s): 0.3 m is a quarter of a table
FIGURAL_MOTION = {"min_displacement_m": 0.1, "min_speed_mps": 0.02, "min_acceleration_mps2": 0.02,
                  "min_speed_change_mps": 0.03}


def synth_rules(scale: str = "vista", answerable_at: tuple[str, ...] = ("all",)):
    """The generator's rules for synthetic scenarios: ReVSI's preset with the ``silhouette`` seen rule
    (vistest.budget.seen: small and far objects, the figural and environmental scales' usual case, count
    as seen when plainly in view; ReVSI's 5%-of-the-image rule would drop them), ``answerable_at``, and
    at figural scale :data:`FIGURAL_MOTION`."""
    import dataclasses

    from ..budget.seen import seen_rule
    from ..generate.rules import Rules

    rules = Rules.preset_named("revsi")
    seen = seen_rule(None, SEEN_KIND)
    rules = dataclasses.replace(rules, frames=dataclasses.replace(
        rules.frames, seen_threshold=seen.threshold, seen_rule=seen.kind_option, answerable_at=answerable_at))
    if scale == "figural":
        rules = dataclasses.replace(rules, motion=dataclasses.replace(rules.motion, **FIGURAL_MOTION))
    return rules
