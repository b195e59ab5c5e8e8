"""The 12 cells of VGenST's taxonomy as scenario specs, each cell's task and the level of each question.

:func:`cell_spec` makes the k-th scenario of a cell from a seed: the scale's categories (drawn from its
catalogue, vistest.synth.layout), :data:`KIND_LEVELS` kinds (cycling with k), each at a count level of
:data:`COUNT_LEVELS` (1, 1-2, 1, 1, 2-6 instances; 2-3 on a table: :data:`REPEATED`), cycling over the kinds
from a level that shifts with k // 3: every scenario mixes unique labels, which most types ask about (relative
distance needs five, the order of appearance four), with repeated ones, which counting asks about (2-6, not
2-3, in a room or a yard: ReVSI's counting cap keeps no answer above 20% of its type,
vistest.generate.rules.BalanceRules.max_count_share, which three counts cannot meet, so the cap cut counting
to its floor: 63 of 189 answerable on 100 vista-exocentric-static scenarios; up to 4 on a table left 1 of the
400 figural specs of a 1,200 grid that ten draws could not lay out); sizes in the lower or the upper half of
the catalogue's range (k // 9), so that a cell's scenarios spread over counts and sizes; the exocentric camera
cycles fixed, orbit, pan; a dynamic cell adds one or two movers (the scale's movable categories) with the
scale's speeds (m/s) and accelerations (m/s^2), starting at a tenth of the video, listed first (their lanes
are planned before the other objects are placed, which keep clear of them), in a region of the ground the
camera's path looks at (:func:`in_view_region`: the egocentric walk sees one side of the room, so its movers
go there; an exocentric camera looks at the ground's centre, :data:`CENTRE`).

Tasks (:data:`CELL_TASKS`): VGenST asks one dedicated reasoning task per cell (the summary in
shared/reference/vgenst-bench-summary.txt, "Video taxonomy" and "Task design": "12 task cells ... one
dedicated reasoning task per category", its examples "figural attribute mapping, vista direction
estimation, and environmental directional-signage grounding", and LS_E_EXO_STA, an environmental
exocentric static task; the project page names the figural row: Multi-Container Attribute Mapping, Quantity
Change Tracking, Container Intersection Inference, Causal Mapping). vistest has no containers, signs nor
causes: each cell's dedicated task is the vistest.generate type nearest its VGenST task, named in
:data:`CELL_TASKS` beside it (a proxy, not VGenST's task). Around it a cell asks every type the
cell allows (:func:`cell_types`, VGenST's task-QA applicability): the static types everywhere, room size
only where walls stand (vista: a room; no room question on a table or in a yard), the order of appearance
and the camera's motion where the camera moves (egocentric cells; orbit and pan in an exocentric one: a
scene whose camera stands still gets none, and the grid's notes say so), the movers' motion in dynamic cells.

Levels (:data:`LEVELS`, VGenST's hierarchy: "L1 isolates recognition and attributes from individual
frames, while higher levels require integration across frames and temporal structure"): L1 visual
perception (counting, an object's size), L2 scene understanding (distances, directions, the room's size:
the layout integrated over views), L3 spatio-temporal reasoning (the order of appearance, the movers' and
the camera's motion over a time window).
"""
from __future__ import annotations

import numpy as np

from .layout import catalogue
from .spec import CELLS, SCALES, ScenarioSpec, cell_name, spec_from_dict

MOVERS = {"figural": ("toy car", "ball"), "vista": ("ball", "robot vacuum", "cart"),
          "environmental": ("car", "bicycle", "ball", "cart")}
SPEED_MPS = {"figural": (0.08, 0.2), "vista": (0.3, 0.8), "environmental": (1.0, 3.0)}
ACCEL_MPS2 = {"figural": (-0.02, 0.04), "vista": (-0.08, 0.15), "environmental": (-0.3, 0.4)}
COUNT_LEVELS = ((1, 1), (1, 2), (1, 1), (1, 1), None)  # None: the scale's REPEATED
REPEATED = {"figural": (2, 3), "vista": (2, 6), "environmental": (2, 6)}  # a table holds fewer
# kinds a scenario of the scale draws, cycling with k (vista 7-9 kept 13.3 questions a scenario on 100
# vista-exocentric-static scenarios, 8-10 kept 16.4: docs/synth.md "--grid N")
KIND_LEVELS = {"figural": (5, 6, 7), "vista": (8, 9, 10), "environmental": (7, 8, 9)}
CENTRE = [0.15, 0.15, 0.85, 0.85]  # an exocentric mover's region: the ground's centre, where the camera looks
EXO_MODES = ("fixed", "orbit", "pan")

L1, L2, L3 = "L1", "L2", "L3"
LEVEL_NAMES = {L1: "visual perception", L2: "scene understanding", L3: "spatio-temporal reasoning"}
STATIC_TYPES = {  # by level (module docstring)
    "object_counting_single": L1, "object_size_estimation": L1,
    "object_abs_distance": L2, "object_rel_distance_closest": L2, "object_rel_distance_farthest": L2,
    "object_rel_direction_forward_easy": L2, "object_rel_direction_forward_hard": L2,
    "object_rel_direction_backward_easy": L2, "object_rel_direction_backward_hard": L2,
}
ROOM = ("room_size_estimation_single",)
CAMERA_MOTION = ("camera_orientation_change", "camera_displacement", "camera_path_length")
MOTION = ("motion_displacement", "motion_path_length", "motion_speed", "motion_acceleration", "motion_direction")
APPEARANCE = ("obj_appearance_order",)
LEVELS = {**STATIC_TYPES, **dict.fromkeys(ROOM, L2), **dict.fromkeys(APPEARANCE + CAMERA_MOTION + MOTION, L3)}

# cell -> (VGenST's task, where its sources name it, else None; the vistest type asked as its proxy)
CELL_TASKS = {
    "figural-egocentric-static": ("Multi-Container Attribute Mapping (MC)", "object_size_estimation"),
    "figural-egocentric-dynamic": ("Quantity Change Tracking (QC)", "motion_displacement"),
    "figural-exocentric-static": ("Container Intersection Inference (CI)", "object_abs_distance"),
    "figural-exocentric-dynamic": ("Causal Mapping (CM)", "motion_direction"),
    "vista-egocentric-static": ("direction estimation (the summary names it at vista scale, not its cell)",
                                "object_rel_direction_forward_hard"),
    "vista-egocentric-dynamic": (None, "motion_speed"),
    "vista-exocentric-static": (None, "room_size_estimation_single"),
    "vista-exocentric-dynamic": (None, "motion_acceleration"),
    "environmental-egocentric-static": (None, "object_rel_distance_closest"),
    "environmental-egocentric-dynamic": (None, "camera_displacement"),
    "environmental-exocentric-static": ("directional-signage grounding (LS_E_EXO_STA)",
                                        "object_rel_direction_forward_easy"),
    "environmental-exocentric-dynamic": (None, "motion_path_length"),
}


def cell_types(cell: str) -> tuple[str, ...]:
    """The question types a cell asks (module docstring), in the generator's order."""
    from ..generate.candidates import WRITABLE_TYPES

    scale, persp, dyn = cell.split("-")
    want = set(STATIC_TYPES) | set(APPEARANCE) | set(CAMERA_MOTION)
    if scale == "vista":
        want |= set(ROOM)
    if dyn == "dynamic":
        want |= set(MOTION)
    return tuple(t for t in WRITABLE_TYPES if t in want)


CELL_TYPES = {c: cell_types(c) for c in CELLS}
assert all(CELL_TASKS[c][1] in CELL_TYPES[c] for c in CELLS)


def level_of(question_type: str) -> str:
    """The level (L1, L2, L3) of a type a cell asks (:data:`LEVELS`)."""
    return LEVELS[question_type]


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
        counts = COUNT_LEVELS[(k // 3 + j) % len(COUNT_LEVELS)] or REPEATED[scale]
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
    doc = {"scenario_id": f"{cell}-{k:04d}", "scale": scale, "objects": objects, "camera": camera,
           "dynamics": dynamics, "frames": frames, "fps": fps, "resolution": list(resolution),
           "seed": int(rng.integers(2 ** 31))}
    source = f"<grid cell {cell} #{k}>"
    spec = spec_from_dict(doc, source)
    if dyn and persp == "egocentric":  # the camera's path depends on the seed alone: the movers go where it looks
        region = in_view_region(spec)
        for o in objects[:len(dynamics)]:
            o["region"] = region
        spec = spec_from_dict(doc, source)
    return spec


REGION_HALF = 0.2  # half the side of an egocentric mover's region (a fraction of the ground's extent)


def in_view_region(spec: ScenarioSpec) -> list[float]:
    """Where an egocentric walk's movers go: of the squares of side ``2 * REGION_HALF`` (fractions of the
    ground) centred on a grid of step 0.05 within the ground, the one the camera sees best after the movers
    start: the most (frame, point) pairs, over its centre, corners and edges' middles at the ground's
    height, projected in front of the camera, more than 0.3 m away, inside the image's central 80%
    (vistest.synth.demo.demo_intrinsics); the one nearest the ground's centre on ties (then the first)."""
    from .demo import demo_intrinsics
    from .layout import draw_camera

    _, _, g, poses = draw_camera(spec)
    k = demo_intrinsics(spec.resolution)
    w, h = spec.resolution
    first = int(np.ceil(min((m.start_s for m in spec.dynamics), default=0.0) * spec.fps))
    poses = poses[min(first, len(poses) - 1):]
    grid = np.round(np.arange(REGION_HALF, 1 - REGION_HALF + 1e-9, 0.05), 3)
    offsets = np.array([(dx, dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1)], float) * REGION_HALF
    best, score = None, (-1, 0.0)
    for fx in grid:
        for fy in grid:
            frac = np.array([fx, fy]) + offsets
            pts = np.c_[g.x0 + frac[:, 0] * (g.x1 - g.x0), g.y0 + frac[:, 1] * (g.y1 - g.y0), np.full(9, g.z)]
            u, v, z = project(poses, np.broadcast_to(pts, (len(poses), *pts.shape)), k)
            n = int(np.sum((z > 0.3) & (abs(u - w / 2) < 0.4 * w) & (abs(v - h / 2) < 0.4 * h)))
            key = (n, -round(abs(fx - 0.5) + abs(fy - 0.5), 6))
            if best is None or key > score:
                best, score = (float(fx), float(fy)), key
    assert best is not None
    return [round(best[0] - REGION_HALF, 3), round(best[1] - REGION_HALF, 3), round(best[0] + REGION_HALF, 3),
            round(best[1] + REGION_HALF, 3)]


def project(poses: np.ndarray, pts: np.ndarray, k) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(u, v, z) of world points ``pts`` (N, P, 3) in metres seen from OpenCV camera-to-world ``poses`` (N,
    4, 4), one pose per row of points: pixel coordinates (``k``: Intrinsics, pinhole, no distortion) and
    the depth along the optical axis (m; <= 0: behind the camera, u and v then meaningless)."""
    cam = np.einsum("nji,npj->npi", poses[:, :3, :3], pts - poses[:, None, :3, 3])  # R^T (p - t)
    z = cam[..., 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        return k.fx * cam[..., 0] / z + k.cx, k.fy * cam[..., 1] / z + k.cy, z


SEEN_KIND = "silhouette"  # a scenario's objects count as seen when 10% of their own silhouette shows


# figural scale: the motion rules' thresholds (vistest.generate.rules.MotionRules) for tabletop motion, lower
# than the room-scale defaults (0.3 m, 0.05 m/s, 0.1 m/s^2, 0.1 m/s): 0.3 m is a quarter of a table
FIGURAL_MOTION = {"min_displacement_m": 0.1, "min_speed_mps": 0.02, "min_acceleration_mps2": 0.02,
                  "min_speed_change_mps": 0.03}
# figural scale: ReVSI's room-scale distances (obj_abs_dist_qa.py, obj_rel_dist_closest_qa.py, obj_rel_dir_qa.py:
# pairs 1 m apart, options 1 m from the primary and 0.3 m from each other, objects 1.5 m apart and at most 1.4 m
# wide) a tenth as large on a table about a metre across (none of them holds on a table at room scale), and the
# distance in centimetres (ReVSI gives a tenth of a metre: a third of a 0.3 m distance)
FIGURAL_SPACE = {"abs_distance": {"min_distance_m": 0.1, "decimals": 2},
                 "rel_distance": {"min_option_distance_m": 0.1, "min_option_gap_m": 0.03},
                 "rel_direction": {"min_separation_m": 0.15, "min_floor_separation_m": 0.15,
                                   "max_object_xy_extent_m": 0.35}}


def synth_rules(scale: str = "vista", answerable_at: tuple[str, ...] = ("all",)):
    """The generator's rules for synthetic scenarios: ReVSI's preset with the ``silhouette`` seen rule
    (vistest.budget.seen: small and far objects, the figural and environmental scales' usual case, count
    as seen when plainly in view; ReVSI's 5%-of-the-image rule would drop them), ``answerable_at``, and
    at figural scale :data:`FIGURAL_MOTION` and :data:`FIGURAL_SPACE`."""
    import dataclasses

    from ..budget.seen import seen_rule
    from ..budgets import parse_budget
    from ..generate.rules import Rules

    rules = Rules.preset_named("revsi")
    truth = dataclasses.replace(rules.frames.truth, seen_threshold=seen_rule(None, SEEN_KIND).compact(),
                                budgets=tuple(parse_budget(b, "answerable_at") for b in answerable_at))
    rules = dataclasses.replace(rules, frames=dataclasses.replace(rules.frames, truth=truth))
    if scale == "figural":
        rules = dataclasses.replace(rules, motion=dataclasses.replace(rules.motion, **FIGURAL_MOTION), **{
            name: dataclasses.replace(getattr(rules, name), **values) for name, values in FIGURAL_SPACE.items()})
    return rules
