"""A scenario's geometry and looks, drawn from its spec's seed: ground, objects, movers' paths, camera.

:func:`build_layout` turns a :class:`~vistest.synth.spec.ScenarioSpec` into a :class:`Layout`, plain
data the renderer draws and scene.json records; everything random is drawn from
``numpy.random.default_rng(spec.seed)`` in a fixed order, so a spec gives one layout.

Conventions: world metres, right-handed, +Z up; the floor is ``[0, FX] x [0, FY]`` at ``z = 0``
(the scene's room polygon); camera poses are OpenCV camera-to-world (x right, y down, z forward),
as vistest.scene. Every object is an upright box (rotation about +Z by its ``yaw``, radians): its
``center`` is the box centre, ``size`` its full extents along its own axes.

* **Scales** (:data:`SCALES`): figural, a table (an object labelled ``table``) whose top is the
  ground, on a 4 x 4 m floor without walls; vista, a room of 5-10 x 4-8 m with 2.6 m walls, its floor
  the ground; environmental, an open yard of 16-30 x 12-24 m, no walls (more than one view covers).
* **Placement**: ``ground`` anywhere on the ground, ``inside`` in a region of it, ``on`` resting on
  the top face of an earlier object of category ``target`` (footprint inside that top), ``next_to``
  beside one (same base height and yaw, a gap of 2 cm to the scale's ``next_gap_m``; on the ground, or
  resting on the same top when the target stands on another object). No two boxes
  interpenetrate, and no camera position comes within ``clearance_m`` of a box, at any frame.
* **Movers**: their lane is planned when they are placed (objects listed later keep clear of the whole
  path: list movers first); they slide along a straight lane on the ground, heading = yaw of their x axis: distance
  ``s(tau) = v0 tau + a tau^2 / 2`` after their start (``tau`` seconds), the speed ``v0 + a tau``
  never below 0 (it stops), at most the lane's length (it stops at the end). Keys at every frame.
* **Camera**: the walk (egocentric) keeps eye height with a 1 cm bob, looks where it walks and
  around; fixed, orbit and pan (exocentric) look at the ground's centre from ``distance_m``.
"""
from __future__ import annotations

import colorsys
import math
from dataclasses import dataclass

import numpy as np

from .demo import boxes_overlap
from ..geometry import boxes_contain, look_at, look_rotation, rot_z
from .spec import CameraSpec, MoverSpec, ObjectSpec, ScenarioSpec, SpecError

# (bump vistest.freshness.VERSIONS["synth_layout"] whenever a spec's layout or looks change for the same seed: a
# folder rendered under another one is rendered again, vistest.synth.render's stamp)
# category -> (size min, size max) full extents (x, y, z) metres: a scale's catalogue when a spec gives no size
FIGURAL_CATALOGUE = {
    "cup": ((0.07, 0.07, 0.08), (0.10, 0.10, 0.12)), "bowl": ((0.12, 0.12, 0.05), (0.20, 0.20, 0.09)),
    "book": ((0.15, 0.20, 0.02), (0.25, 0.30, 0.05)), "phone": ((0.07, 0.14, 0.008), (0.08, 0.17, 0.012)),
    "bottle": ((0.06, 0.06, 0.18), (0.09, 0.09, 0.32)), "apple": ((0.07, 0.07, 0.07), (0.09, 0.09, 0.09)),
    "vase": ((0.08, 0.08, 0.15), (0.15, 0.15, 0.35)), "box": ((0.08, 0.06, 0.04), (0.25, 0.20, 0.15)),
    "remote": ((0.04, 0.15, 0.02), (0.05, 0.22, 0.03)), "plate": ((0.18, 0.18, 0.015), (0.28, 0.28, 0.025)),
    "candle": ((0.04, 0.04, 0.08), (0.08, 0.08, 0.20)), "toy car": ((0.10, 0.05, 0.04), (0.16, 0.08, 0.06)),
    "ball": ((0.06, 0.06, 0.06), (0.12, 0.12, 0.12)), "lamp": ((0.12, 0.12, 0.25), (0.20, 0.20, 0.45)),
}
ENVIRONMENTAL_CATALOGUE = {
    "bench": ((1.2, 0.4, 0.45), (2.0, 0.6, 0.9)), "tree": ((0.8, 0.8, 2.5), (2.0, 2.0, 6.0)),
    "car": ((3.8, 1.7, 1.4), (4.8, 1.9, 1.6)), "trash bin": ((0.5, 0.5, 0.8), (0.7, 0.7, 1.1)),
    "bicycle": ((1.6, 0.5, 1.0), (1.8, 0.6, 1.1)), "mailbox": ((0.4, 0.3, 1.1), (0.5, 0.4, 1.3)),
    "lamp post": ((0.2, 0.2, 3.0), (0.3, 0.3, 4.5)), "shed": ((2.0, 2.0, 2.2), (3.5, 3.0, 2.8)),
    "planter": ((0.6, 0.6, 0.5), (1.5, 0.8, 0.8)), "picnic table": ((1.6, 1.4, 0.7), (2.2, 1.8, 0.8)),
    "bollard": ((0.15, 0.15, 0.8), (0.25, 0.25, 1.0)), "scooter": ((1.1, 0.4, 1.0), (1.3, 0.5, 1.2)),
    "ball": ((0.2, 0.2, 0.2), (0.3, 0.3, 0.3)), "cart": ((0.8, 0.5, 0.9), (1.2, 0.7, 1.0)),
    "crate": ((0.4, 0.3, 0.3), (0.8, 0.6, 0.5)), "sign": ((0.6, 0.1, 1.8), (1.0, 0.15, 2.4)),
}


def _vista_catalogue() -> dict:
    from ..synthetic import ROOM_CATALOG

    cat = {label: (lo, hi) for label, lo, hi, _ in ROOM_CATALOG}
    cat.update({"ball": ((0.2, 0.2, 0.2), (0.3, 0.3, 0.3)), "cart": ((0.6, 0.4, 0.7), (0.9, 0.6, 0.95)),
                "robot vacuum": ((0.33, 0.33, 0.09), (0.36, 0.36, 0.10))})
    return cat


@dataclass(frozen=True)
class ScaleParams:
    """One scale's constants: ``floor_m`` ((min, max) x, (min, max) y) of the floor, ``wall_m`` the wall
    height (0: none), ``table`` (figural: the top's (min, max) x, y and its height, m), ``eye_m`` the
    walk's eye height range, ``exo_height_m`` an exocentric camera's height range above the ground,
    ``exo_distance_m`` its distance range from the ground's centre beyond the ground's half extent (None:
    ``exo_inside`` times the smaller half extent for an orbit, of the half diagonal towards a corner for
    fixed and pan: inside the room or yard), ``target_z_m`` the height the
    exocentric camera looks at above the ground, ``next_gap_m`` next_to's largest gap, ``clearance_m``,
    ``ramp_mps2`` a mover's speed-up and brake (m/s^2: a hand pushing a toy, a person pushing a cart, a car
    pulling away gently)."""

    floor_m: tuple[tuple[float, float], tuple[float, float]]
    wall_m: float
    eye_m: tuple[float, float]
    exo_height_m: tuple[float, float]
    exo_distance_m: tuple[float, float] | None
    exo_inside: float
    target_z_m: float
    next_gap_m: float
    clearance_m: float
    table: tuple[tuple[float, float], tuple[float, float], float] | None = None
    ramp_mps2: float = 0.5


SCALES = {
    "figural": ScaleParams(((4.0, 4.0), (4.0, 4.0)), 0.0, (1.45, 1.65), (0.35, 0.6), (0.3, 0.6), 0.0, 0.05, 0.06,
                           0.15, table=((0.9, 1.4), (0.6, 0.9), 0.75), ramp_mps2=0.15),
    "vista": ScaleParams(((5.0, 10.0), (4.0, 8.0)), 2.6, (1.5, 1.7), (1.9, 2.3), None, 0.8, 0.5, 0.3, 0.3,
                         ramp_mps2=0.5),
    "environmental": ScaleParams(((16.0, 30.0), (12.0, 24.0)), 0.0, (1.5, 1.7), (3.0, 5.0), None, 0.9, 1.0, 1.0,
                                 0.4, ramp_mps2=1.5),
}


def catalogue(scale: str) -> dict:
    """category -> (size min, size max) of ``scale`` (metres, full extents x, y, z)."""
    return {"figural": FIGURAL_CATALOGUE, "vista": _vista_catalogue(),
            "environmental": ENVIRONMENTAL_CATALOGUE}[scale]


@dataclass(frozen=True)
class Ground:
    """The rectangle objects stand on: x0, y0, x1, y1 (m) at height ``z`` (m); the floor ``floor``
    (FX, FY) m and its ``wall`` height (0: none)."""

    x0: float
    y0: float
    x1: float
    y1: float
    z: float
    floor: tuple[float, float]
    wall: float

    @property
    def centre(self) -> np.ndarray:
        return np.array([(self.x0 + self.x1) / 2, (self.y0 + self.y1) / 2, self.z])

    @property
    def half(self) -> np.ndarray:
        return np.array([(self.x1 - self.x0) / 2, (self.y1 - self.y0) / 2])


@dataclass(frozen=True)
class Look:
    """An object's looks: ``colour`` RGB 0-1, ``pattern`` (plain, stripes, checker, dots) in ``colour2``,
    ``cells`` the pattern's repeats per face."""

    colour: tuple[float, float, float]
    colour2: tuple[float, float, float]
    pattern: str
    cells: int


@dataclass(frozen=True)
class Placed:
    """One object: id, category, centre (3,), size (3,), yaw (rad), looks; ``centres`` (N, 3) its centre
    at every frame when it moves (None: static), ``spec_index`` the ObjectSpec it came from."""

    id: str
    label: str
    center: np.ndarray
    size: np.ndarray
    yaw: float
    look: Look
    spec_index: int
    centres: np.ndarray | None = None

    @property
    def rotation(self) -> np.ndarray:
        return rot_z(np.degrees(self.yaw))

    @property
    def top(self) -> float:
        return float(self.center[2] + self.size[2] / 2)

    def at(self, frame: int) -> "Placed":
        """The object as a static box at ``frame`` (its own pose when static)."""
        if self.centres is None:
            return self
        return Placed(self.id, self.label, self.centres[frame], self.size, self.yaw, self.look, self.spec_index)


@dataclass(frozen=True)
class Lighting:
    """``background`` RGB 0-1 (sky or void), ``floor``/``walls`` RGB, ``light_dir`` unit (3,) the
    direction a directional light shines, ``intensity`` its strength, ``ambient`` 0-1."""

    background: tuple[float, float, float]
    floor: tuple[float, float, float]
    walls: tuple[tuple[float, float, float], tuple[float, float, float]]
    light_dir: np.ndarray
    intensity: float
    ambient: float


@dataclass(frozen=True)
class Layout:
    """A scenario's drawn geometry: ground, objects (the table first at figural scale), camera poses
    (N, 4, 4 OpenCV camera-to-world), lighting; movers' kinematics in ``motions`` (object id ->
    (start frame position (3,), heading unit (3,), v0 m/s, a m/s^2, start s, lane length m))."""

    spec: ScenarioSpec
    ground: Ground
    objects: tuple[Placed, ...]
    poses: np.ndarray
    lighting: Lighting
    motions: dict


def _hsv(h: float, s: float, v: float) -> tuple[float, float, float]:
    return tuple(float(c) for c in colorsys.hsv_to_rgb(h % 1.0, s, v))  # type: ignore[return-value]


def draw_look(rng: np.random.Generator) -> Look:
    """Random saturated colours and a pattern (module docstring)."""
    h = rng.uniform()
    c1 = _hsv(h, rng.uniform(0.5, 0.95), rng.uniform(0.45, 0.95))
    c2 = _hsv(h + rng.uniform(0.15, 0.5), rng.uniform(0.2, 0.9), rng.uniform(0.3, 1.0))
    return Look(c1, c2, str(rng.choice(["plain", "stripes", "checker", "dots"])), int(rng.integers(2, 7)))


def draw_lighting(rng: np.random.Generator, scale: str) -> Lighting:
    """Background (a sky outdoors, a pale void indoors), floor and wall colours, one directional light."""
    if scale == "environmental":
        bg = _hsv(rng.uniform(0.52, 0.64), rng.uniform(0.15, 0.6), rng.uniform(0.7, 1.0))
        floor = _hsv(rng.uniform(0.08, 0.35), rng.uniform(0.2, 0.6), rng.uniform(0.3, 0.6))
    else:
        bg = _hsv(rng.uniform(), rng.uniform(0.0, 0.25), rng.uniform(0.75, 1.0))
        floor = _hsv(rng.uniform(0.0, 0.15), rng.uniform(0.1, 0.5), rng.uniform(0.3, 0.7))
    walls = tuple(_hsv(rng.uniform(), rng.uniform(0.0, 0.2), rng.uniform(0.7, 0.92)) for _ in range(2))
    az, el = rng.uniform(0, 2 * np.pi), np.radians(rng.uniform(35, 70))
    d = -np.array([np.cos(az) * np.cos(el), np.sin(az) * np.cos(el), np.sin(el)])
    return Lighting(bg, floor, walls, d, float(rng.uniform(1.5, 3.5)), float(rng.uniform(0.25, 0.45)))


def draw_ground(spec: ScenarioSpec, rng: np.random.Generator) -> Ground:
    """The floor (drawn in the scale's range) and the ground (figural: the table's top, centred)."""
    p = SCALES[spec.scale]
    fx, fy = (float(rng.uniform(*r)) for r in p.floor_m)
    if p.table is not None:
        tx, ty = (float(rng.uniform(*r)) for r in p.table[:2])
        return Ground((fx - tx) / 2, (fy - ty) / 2, (fx + tx) / 2, (fy + ty) / 2, p.table[2], (fx, fy), p.wall_m)
    m = 0.02
    return Ground(m, m, fx - m, fy - m, 0.0, (fx, fy), p.wall_m)


# ---------------------------------------------------------------------------------------
# the camera
# ---------------------------------------------------------------------------------------
MAX_TURN_DEG = 170.0  # the most a drawn camera path turns (heading range over the whole video, degrees)


def turn_range_deg(poses: np.ndarray) -> float:
    """The range (degrees) of the camera's heading over ``poses`` (N, 4, 4): its optical axis projected
    on the floor, unwrapped frame to frame. Under 180: no window of the video turns 180 degrees or more,
    so a window's wrapped heading change (vistest.motion.heading_change) is the turn the camera made."""
    f = poses[:, :3, 2]
    yaw = np.unwrap(np.arctan2(f[:, 1], f[:, 0]))
    return float(np.degrees(np.ptp(yaw))) if len(yaw) else 0.0


def camera_poses(cam: CameraSpec, scale: str, g: Ground, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, 4, 4) OpenCV camera-to-world poses (:func:`drawn_poses`), the drawn path's arc narrowed by
    steps of 10% (every draw repeated) until its heading range (:func:`turn_range_deg`) is at most
    :data:`MAX_TURN_DEG`; a ``sweep_deg`` the spec gives is kept as given (the generator then asks no
    camera turn over a window that turned more than 180 - ``min_turn_deg``: vistest.generate.motion)."""
    state = rng.bit_generator.state
    shrink = 1.0
    while True:
        rng.bit_generator.state = state
        poses = drawn_poses(cam, scale, g, n, rng, shrink)
        if cam.sweep_deg is not None or turn_range_deg(poses) <= MAX_TURN_DEG or shrink < 0.01:
            return poses
        shrink *= 0.9


PACE_SWING = (0.3, 0.8)  # the pace's swing: the camera's speed along its path from (1 - a) to (1 + a) times its mean
PACE_CYCLES = (1, 2)  # slow-fast cycles of the pace over the video (drawn)


def pace(t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """How far along its path (0 to 1) a moving camera is at times ``t`` (0 to 1): ``t - a sin(2 pi m t) /
    (2 pi m)``, the swing ``a`` drawn from :data:`PACE_SWING` and ``m`` from :data:`PACE_CYCLES`, so that its
    speed ``1 - a cos(2 pi m t)`` (times the mean) starts slow, speeds up and slows down smoothly (bounded
    acceleration, never stopping: a < 1), as a person walks or a camera operator pans, where a constant pace
    gave every window of a video one speed. Measured on 100 scenarios of each static exocentric or vista cell
    (issue #49): the pruning keeps as many camera questions as at a constant pace (half of what the caps
    draw: a blind answer near the set's median still beats chance on camera displacement), so the pace is
    for the motion's look, not the debiasing."""
    m = int(rng.integers(PACE_CYCLES[0], PACE_CYCLES[1] + 1))
    a = float(rng.uniform(*PACE_SWING))
    return t - a * np.sin(2 * np.pi * m * t) / (2 * np.pi * m)


def drawn_poses(cam: CameraSpec, scale: str, g: Ground, n: int, rng: np.random.Generator,
                shrink: float = 1.0) -> np.ndarray:
    """(n, 4, 4) OpenCV camera-to-world poses for frame i at ``t = i / (n - 1)`` (module docstring); the
    walk's arc, its look-around and the orbit's or pan's default sweep times ``shrink``. The walk, orbit and
    pan go along their path at :func:`pace` (``s``), drawn first; the look-around and the bob keep ``t``.

    walk: figural, an arc around the table at eye height looking at a point drifting over the top;
    vista, an elliptical loop at 0.55 of the room's half extents looking 30 deg inward of ahead and
    +-35 deg around, pitched 15 deg down; environmental, a loop wobbling between 0.5 and 0.7 of the yard's
    half extents looking 50 deg inward and +-30 deg around, pitched 8 deg down. fixed / pan stand at one
    azimuth (figural: ``exo_distance_m`` beyond the table's half diagonal; vista, environmental:
    ``exo_inside`` of the way to a corner); orbit circles
    ``sweep_deg`` (150) at ``exo_inside`` of the smaller half extent; pan turns ``sweep_deg`` (90) about
    the direction to the centre. ``distance_m`` replaces the distance."""
    p = SCALES[scale]
    t = np.linspace(0.0, 1.0, n)
    s = pace(t, rng)
    c, half = g.centre, g.half
    if cam.perspective == "egocentric":
        eye_h = cam.height_m if cam.height_m is not None else float(rng.uniform(*p.eye_m))
        bob = 0.01 * np.sin(2 * np.pi * 8 * t)
        sign = float(rng.choice([-1.0, 1.0]))
        a0 = rng.uniform(0, 2 * np.pi)
        poses = []
        if scale == "figural":
            r = float(np.hypot(*half)) + float(rng.uniform(0.45, 0.7))
            sweep = np.radians(rng.uniform(120, 180)) * shrink
            b0 = rng.uniform(0, 2 * np.pi)
            for i, si in enumerate(s):
                a = a0 + sign * sweep * si
                eye = np.array([c[0] + r * np.cos(a), c[1] + r * np.sin(a), eye_h + bob[i]])
                b = b0 + 2 * np.pi * si * shrink
                tgt = c + np.array([0.5 * half[0] * np.cos(b), 0.5 * half[1] * np.sin(b), 0.0])
                poses.append(look_at(eye, tgt))
            return np.stack(poses)
        a = a0 + sign * 2 * np.pi * shrink * s
        if scale == "vista":
            xy = c[:2] + 0.55 * half * np.stack([np.cos(a), np.sin(a)], 1)
            look_amp, inward, pitch = 35.0, 30.0, -15.0
        else:  # a wobbling loop
            r = 0.6 + 0.1 * np.sin(3 * a)
            xy = c[:2] + r[:, None] * half * np.stack([np.cos(a), np.sin(a)], 1)
            look_amp, inward, pitch = 30.0, 50.0, -8.0
        d = np.gradient(xy, axis=0)
        heading = np.degrees(np.unwrap(np.arctan2(d[:, 1], d[:, 0])))
        yaw = heading + sign * inward + look_amp * shrink * np.sin(2 * np.pi * 1.5 * t + rng.uniform(0, 2 * np.pi))
        out = np.tile(np.eye(4), (n, 1, 1))
        for i in range(n):
            out[i, :3, :3] = look_rotation(yaw[i], pitch)
            out[i, :3, 3] = (xy[i, 0], xy[i, 1], eye_h + bob[i])
        return out
    # a given height is above the floor; the scale's range is above the ground (the table top at figural scale)
    h = cam.height_m if cam.height_m is not None else g.z + float(rng.uniform(*p.exo_height_m))
    corner = int(rng.integers(4))
    az = rng.uniform(0, 2 * np.pi)
    if cam.distance_m is not None:
        d = cam.distance_m
    elif p.exo_distance_m is not None:
        d = float(np.hypot(*half)) + float(rng.uniform(*p.exo_distance_m))
    elif cam.mode == "orbit":
        d = p.exo_inside * float(min(half))
    else:  # a tripod in a corner of the room or yard, looking across it
        az = float(np.arctan2(half[1] * (1 if corner < 2 else -1), half[0] * (1 if corner % 2 == 0 else -1)))
        d = p.exo_inside * float(np.hypot(*half))
    tgt = c + np.array([0.0, 0.0, p.target_z_m])
    if cam.mode == "orbit":
        sweep = np.radians(cam.sweep_deg if cam.sweep_deg is not None else 150.0 * shrink) * float(
            rng.choice([-1.0, 1.0]))
        return np.stack([look_at(np.array([c[0] + d * np.cos(az + sweep * si), c[1] + d * np.sin(az + sweep * si), h]),
                                 tgt) for si in s])
    eye = np.array([c[0] + d * np.cos(az), c[1] + d * np.sin(az), h])
    if cam.mode == "fixed":
        return np.tile(look_at(eye, tgt), (n, 1, 1))
    v = tgt - eye
    yaw0 = np.degrees(np.arctan2(v[1], v[0]))
    pitch = np.degrees(np.arctan2(v[2], np.hypot(v[0], v[1])))
    sweep = (cam.sweep_deg if cam.sweep_deg is not None else 90.0 * shrink) * float(rng.choice([-1.0, 1.0]))
    out = np.tile(np.eye(4), (n, 1, 1))
    for i, si in enumerate(s):
        out[i, :3, :3] = look_rotation(yaw0 + sweep * (si - 0.5), pitch)
        out[i, :3, 3] = eye
    return out


# ---------------------------------------------------------------------------------------
# objects
# ---------------------------------------------------------------------------------------
def _footprint_inside(o: Placed, x0: float, y0: float, x1: float, y1: float) -> bool:
    r = o.rotation[:2, :2]
    pts = (np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * o.size[:2] / 2) @ r.T + o.center[:2]
    return bool(pts[:, 0].min() >= x0 - 1e-9 and pts[:, 0].max() <= x1 + 1e-9 and pts[:, 1].min() >= y0 - 1e-9
                and pts[:, 1].max() <= y1 + 1e-9)


def _clear_of_camera(o: Placed, eyes: np.ndarray, clearance: float) -> bool:
    """No camera centre inside the box grown by ``clearance`` on every side."""
    size = o.size + 2 * clearance
    return not any(boxes_contain(e, o.center[None], size[None], o.rotation[None])[0] for e in eyes)


def _free(o: Placed, others: list[Placed]) -> bool:
    """``o`` (static) overlaps none of ``others``: a mover at none of its sampled frames."""
    for b in others:
        if b.centres is None:
            if boxes_overlap(o, b):
                return False
        elif any(boxes_overlap(o, b.at(f)) for f in _sampled(len(b.centres))):
            return False
    return True


def _sizes(spec: ScenarioSpec, k: int) -> tuple[np.ndarray, np.ndarray]:
    o = spec.objects[k]
    if o.size_min is not None:
        return np.array(o.size_min), np.array(o.size_max)
    cat = catalogue(spec.scale)
    if o.category not in cat:
        raise SpecError(file=spec.scenario_id, field=f"objects[{k}].size_min",
                        expected=f"a size range (category {o.category!r} is not in the {spec.scale} catalogue: "
                                 f"{', '.join(sorted(cat))})")
    lo, hi = cat[o.category]
    return np.array(lo, float), np.array(hi, float)


def place_objects(spec: ScenarioSpec, g: Ground, eyes: np.ndarray, rng: np.random.Generator,
                  attempts: int = 200) -> tuple[list[Placed], dict]:
    """Every instance of every ObjectSpec, in order (module docstring); the figural table first (id 1). A
    mover's lane is planned as soon as it is placed (:func:`plan_lane`, against the objects placed before
    it), and every later object keeps clear of its whole path: list movers first for long lanes. Returns
    the objects and the movers' kinematics (Layout.motions). SpecError naming ``objects[k].count`` when an
    instance finds no place in ``attempts`` draws."""
    p = SCALES[spec.scale]
    placed: list[Placed] = []
    motions: dict = {}
    if p.table is not None:
        size = np.array([g.x1 - g.x0, g.y1 - g.y0, g.z])
        placed.append(Placed("1", "table", np.append(g.centre[:2], g.z / 2), size, 0.0, draw_look(rng), -1))
    movers = {(m.category, m.instance): (i, m) for i, m in enumerate(spec.dynamics)}
    for k, os_ in enumerate(spec.objects):
        lo, hi = _sizes(spec, k)
        n = int(rng.integers(os_.count[0], os_.count[1] + 1))
        for j in range(n):
            for _ in range(attempts):
                o = _draw_instance(spec, k, os_, lo, hi, g, placed, rng, len(placed) + 1)
                if o is not None and _free(o, placed) and _clear_of_camera(o, eyes, p.clearance_m):
                    placed.append(o)
                    break
            else:
                raise SpecError(file=spec.scenario_id, field=f"objects[{k}].count",
                                expected=f"fewer {os_.category!r} instances or a larger ground: instance {j + 1} of "
                                         f"{n} found no free place in {attempts} draws (seed {spec.seed})")
            nth = sum(b.label == o.label and b.spec_index >= 0 for b in placed) - 1
            if (o.label, nth) in movers:
                mi, m = movers[(o.label, nth)]
                placed[-1], motions[o.id] = plan_lane(spec, g, o, m, mi, placed[:-1], eyes, rng)
    return placed, motions


def region_bounds(g: Ground, region: tuple[float, float, float, float] | None) -> tuple[float, float, float, float]:
    """(x0, y0, x1, y1) metres of a region given as fractions of the ground (None: the whole ground)."""
    if region is None:
        return g.x0, g.y0, g.x1, g.y1
    fx0, fy0, fx1, fy1 = region
    w, d = g.x1 - g.x0, g.y1 - g.y0
    return g.x0 + fx0 * w, g.y0 + fy0 * d, g.x0 + fx1 * w, g.y0 + fy1 * d


def _rests_on(o: Placed, b: Placed) -> bool:
    """Does ``o`` stand on ``b``'s top face: its base at ``b``'s top, its footprint inside that top?"""
    if abs(o.center[2] - o.size[2] / 2 - b.top) > 1e-9:
        return False
    rel = Placed("", "", np.append(b.rotation[:2, :2].T @ (o.center[:2] - b.center[:2]), 0.0), o.size, o.yaw - b.yaw,
                 o.look, o.spec_index)
    hx, hy = b.size[:2] / 2
    return _footprint_inside(rel, -hx, -hy, hx, hy)


def _draw_instance(spec, k: int, os_: ObjectSpec, lo, hi, g: Ground, placed: list[Placed], rng, num: int
                   ) -> Placed | None:
    """One random draw of instance ``num`` (None when its relation has no candidate support)."""
    size = rng.uniform(lo, hi)
    look = draw_look(rng)
    if os_.relation in ("ground", "inside"):
        x0, y0, x1, y1 = region_bounds(g, os_.region)
        yaw = float(rng.uniform(0, np.pi))
        c = np.array([rng.uniform(x0, x1), rng.uniform(y0, y1), g.z + size[2] / 2])
        o = Placed(str(num), os_.category, c, size, yaw, look, k)
        return o if _footprint_inside(o, x0, y0, x1, y1) else None
    supports = [b for b in placed if b.label == os_.target]
    if not supports:
        return None
    b = supports[int(rng.integers(len(supports)))]
    if os_.relation == "on":
        yaw = b.yaw + float(rng.uniform(-0.3, 0.3))
        local = rng.uniform(-b.size[:2] / 2, b.size[:2] / 2)
        c = np.append(b.center[:2] + b.rotation[:2, :2] @ local, b.top + size[2] / 2)
        o = Placed(str(num), os_.category, c, size, yaw, look, k)
        return o if _rests_on(o, b) else None
    # next_to: beside one of the support's four sides, same base and yaw
    gap = float(rng.uniform(0.02, SCALES[spec.scale].next_gap_m))
    axis, side = int(rng.integers(2)), float(rng.choice([-1.0, 1.0]))
    local = np.zeros(2)
    local[axis] = side * (b.size[axis] / 2 + gap + size[axis] / 2)
    local[1 - axis] = rng.uniform(-b.size[1 - axis] / 2, b.size[1 - axis] / 2)
    base = b.center[2] - b.size[2] / 2
    c = np.append(b.center[:2] + b.rotation[:2, :2] @ local, base + size[2] / 2)
    o = Placed(str(num), os_.category, c, size, b.yaw, look, k)
    if base <= g.z + 1e-9:  # on the ground beside it
        return o if _footprint_inside(o, g.x0, g.y0, g.x1, g.y1) else None
    return o if any(_rests_on(o, s) for s in placed) else None  # on the same top as it


@dataclass(frozen=True)
class Motion:
    """A mover's kinematics (module docstring): at rest at ``start`` (centre, (3,) m) until ``start_s`` s,
    then along the unit ``heading`` (3,): speeding up at ``ramp`` m/s^2 to ``v0`` m/s, then constant
    acceleration ``accel`` m/s^2 (``|accel| <= ramp``) until the speed reaches 0 (it stops) or until it
    must brake at ``ramp`` to stop at the lane's end, ``lane`` m from ``start``. Distance, speed and
    acceleration are piecewise quadratic, linear and constant in ``tau`` (seconds after ``start_s``):
    :meth:`phases`."""

    start: np.ndarray
    heading: np.ndarray
    v0: float
    accel: float
    start_s: float
    lane: float
    ramp: float

    def phases(self) -> tuple[tuple[float, float, float, float], ...]:
        """``(tau0, s0, v0, a)`` pieces, ``tau0`` ascending from 0: from ``tau0`` on, distance
        ``s0 + v0 x + a x^2 / 2`` and speed ``v0 + a x`` (``x = tau - tau0``); the last piece is at rest
        or still moving at a constant acceleration that never reaches the lane's end."""
        big_a, v, a, lane = self.ramp, self.v0, self.accel, self.lane
        if v <= 0 or lane <= 0:
            return ((0.0, 0.0, 0.0, 0.0),)
        t1, s1 = v / big_a, v * v / (2 * big_a)
        if math.isinf(lane):  # an endless lane (how far the video would take it)
            if a < 0:
                return (0.0, 0.0, 0.0, big_a), (t1, s1, v, a), (t1 + v / -a, s1 + v * v / (-2 * a), 0.0, 0.0)
            return (0.0, 0.0, 0.0, big_a), (t1, s1, v, a)
        if 2 * s1 >= lane:  # no room for the cruise: speed up for half the lane, brake for the other half
            tp = math.sqrt(lane / big_a)
            return ((0.0, 0.0, 0.0, big_a), (tp, lane / 2, big_a * tp, -big_a), (2 * tp, lane, 0.0, 0.0))
        ramp_up = (0.0, 0.0, 0.0, big_a)
        if a < 0 and s1 + v * v / (-2 * a) <= lane:  # slows to a stop before it must brake
            x0 = v / -a
            return ramp_up, (t1, s1, v, a), (t1 + x0, s1 + v * v / (-2 * a), 0.0, 0.0)
        # brake once distance + braking distance reaches the lane: a x^2 / 2 + v x = d (module docstring)
        d = (lane - s1 - v * v / (2 * big_a)) / (1 + a / big_a)
        if abs(a) < 1e-12:
            x = d / v
        else:
            x = (-v + math.sqrt(max(v * v + 2 * a * d, 0.0))) / a
        sb, vb = s1 + v * x + a * x * x / 2, v + a * x
        return ramp_up, (t1, s1, v, a), (t1 + x, sb, vb, -big_a), (t1 + x + vb / big_a, lane, 0.0, 0.0)

    def _piece(self, tau) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        tau = np.maximum(np.asarray(tau, float), 0.0)
        ph = np.array(self.phases())
        k = np.searchsorted(ph[:, 0], tau, side="right") - 1
        return tau - ph[k, 0], ph[k, 1], ph[k, 2], ph[k, 3]

    def distance(self, tau) -> np.ndarray:
        """Distance (m) along the heading ``tau`` s after ``start_s`` (tau <= 0: 0)."""
        x, s0, v0, a = self._piece(tau)
        return np.minimum(s0 + v0 * x + a * x * x / 2, self.lane)

    def speed(self, tau) -> np.ndarray:
        """Speed (m/s) ``tau`` s after ``start_s``."""
        x, _, v0, a = self._piece(tau)
        return np.maximum(v0 + a * x, 0.0) * (np.asarray(tau, float) > 0)

    def acceleration(self, tau) -> np.ndarray:
        """Acceleration (m/s^2, signed along the heading) ``tau`` s after ``start_s`` (0 at rest)."""
        return self._piece(tau)[3] * (np.asarray(tau, float) > 0)

    def centres(self, times: np.ndarray) -> np.ndarray:
        """(N, 3) centres at ``times`` (s since the video's start)."""
        return self.start[None] + self.distance(np.asarray(times, float) - self.start_s)[:, None] * self.heading[None]


def plan_lane(spec: ScenarioSpec, g: Ground, o: Placed, m: MoverSpec, mi: int, others: list[Placed],
              eyes: np.ndarray, rng: np.random.Generator, tries: int = 24) -> tuple[Placed, tuple]:
    """Mover ``o``'s lane (module docstring): of ``tries`` random headings, each with the start backed up from
    where ``o`` was placed as far as it goes against the heading, those along which its path stays on its
    ground (or region) and clear of ``others`` (movers among them: at every 60th of the video) and of the
    camera at every frame; the first whose lane is as long as the video needs, else the longest (it stops
    at the lane's end). Returns the moving object and its kinematics (start centre, heading unit
    vector, v0, a, start s, lane m)."""
    p = SCALES[spec.scale]
    n = spec.frames
    times = np.arange(n) / spec.fps
    v0, a = float(rng.uniform(*m.speed_mps)), float(rng.uniform(*m.accel_mps2))
    ramp = max(m.ramp_mps2 if m.ramp_mps2 is not None else p.ramp_mps2, abs(a))
    need = float(Motion(np.zeros(3), np.zeros(3), v0, a, m.start_s, np.inf, ramp).distance(times[-1] - m.start_s))
    bounds = region_bounds(g, spec.objects[o.spec_index].region)
    planned = [b for b in others if b.centres is not None]
    best = None
    for heading in rng.uniform(0, 2 * np.pi, tries):
        u = np.array([np.cos(heading), np.sin(heading), 0.0])
        back = _lane_length(o, -u, float(heading), bounds, others, need)  # first back up as far as it can
        if back is None:
            continue
        start = Placed(o.id, o.label, o.center - back * u, o.size, float(heading), o.look, o.spec_index)
        lane = _lane_length(start, u, float(heading), bounds, others, need)
        if lane is None or (best is not None and lane <= best[0]):
            continue
        motion = Motion(start.center.copy(), u, v0, a, m.start_s, lane, ramp)
        centres = motion.centres(times)
        moving = Placed(o.id, o.label, centres[0], o.size, float(heading), o.look, o.spec_index, centres)
        if _path_clear_of_camera(moving, eyes, p.clearance_m) and not any(
                boxes_overlap(moving.at(f), b.at(f)) for b in planned for f in _sampled(n)):
            best = (lane, moving, motion)
            if lane >= need:
                break
    if best is None:
        raise SpecError(file=spec.scenario_id, field=f"dynamics[{mi}]",
                        expected=f"a mover with room to move: no free lane for {m.category!r} in {tries} headings "
                                 f"(seed {spec.seed}); fewer objects or a slower mover")
    _, moving, motion = best
    return moving, motion


def _sampled(n: int) -> range:
    """The frames a moving box is checked at against other boxes: every 60th of the video."""
    return range(0, n, max(1, n // 60))


def _path_clear_of_camera(o: Placed, eyes: np.ndarray, clearance: float) -> bool:
    """At no frame i is camera centre ``eyes[i]`` inside the mover ``o`` at frame i grown by ``clearance``."""
    local = np.einsum("nk,kj->nj", eyes - o.centres, o.rotation)  # camera centres in the box's axes
    return not bool(np.any(np.all(np.abs(local) < o.size / 2 + clearance, axis=1)))


def _lane_length(o: Placed, u: np.ndarray, heading: float, bounds, others: list[Placed], need: float
                 ) -> float | None:
    """How far ``o`` (turned to ``heading``: its x axis along ``u``) can slide along ``u`` from its place, up
    to ``need`` m, staying inside ``bounds`` and clear of ``others``; None when it cannot stand there.
    Sampled every quarter of its length (at least 2 cm): consecutive samples overlap, so their union is
    the whole swept box."""
    step = max(0.02, float(o.size[0]) / 4)
    x0, y0, x1, y1 = bounds
    statics = [b for b in others if b.centres is None]
    moving_now = [b.at(0) for b in others if b.centres is not None]
    dist = 0.0
    while True:
        s = min(dist, need)
        c = o.center + s * u
        box = Placed(o.id, o.label, c, o.size, heading, o.look, o.spec_index)
        if not _footprint_inside(box, x0, y0, x1, y1) or not _free(box, statics + (moving_now if s == 0 else [])):
            return None if s == 0 else max(s - step, 0.0)
        if s >= need:
            return need
        dist += step


def draw_camera(spec: ScenarioSpec) -> tuple[np.random.Generator, Lighting, Ground, np.ndarray]:
    """The first draws of :func:`build_layout` (lighting, ground, camera poses), which no object changes:
    the generator, left where the objects' draws begin, and them."""
    rng = np.random.default_rng(spec.seed)
    lighting = draw_lighting(rng, spec.scale)
    g = draw_ground(spec, rng)
    return rng, lighting, g, camera_poses(spec.camera, spec.scale, g, spec.frames, rng)


def build_layout(spec: ScenarioSpec) -> Layout:
    """The scenario's layout (module docstring); SpecError when the spec cannot be laid out."""
    rng, lighting, g, poses = draw_camera(spec)
    eyes = poses[:, :3, 3]
    objects, motions = place_objects(spec, g, eyes, rng)
    return Layout(spec, g, tuple(objects), poses, lighting, motions)
