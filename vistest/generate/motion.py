"""The dynamic types: what a tracked object does over a time window (vistest.generate.rules.MotionRules).

For each tracked object (``SceneFacts.tracked``) whose label no other object of the scene
carries (the question names it by its label):

* **Windows**: ``[t0, t1]`` with both ends on multiples of ``window_step_s`` seconds, ``t1 - t0``
  in ``[min_window_s, max_window_s]``, inside the video (frame i at ``i / fps``,
  vistest.budget.windows). The window's frames are the visibility table's frames inside it; the
  object must be seen (``frames.truth.seen_threshold``, the budget stage's) at the first and the last of
  them and in at least ``min_seen_share`` of them. Its *observed frames* are the window's frames
  where it is seen: the answer is vistest.motion's quantity over them (what the budget stage's
  rule ``track`` recomputes at the ``all`` budget, where every frame is sampled).
* **Well defined** (else not asked): displacement, direction and speed (STI-Bench's: the average
  velocity's magnitude, vistest.motion) need the displacement, path length and acceleration the
  path length, at least ``min_displacement_m``; speed at
  least ``min_speed_mps``; acceleration at least ``min_acceleration_mps2`` in magnitude, with the
  speeds of the first and the last chord ``min_speed_change_mps`` apart (the sign is clear);
  direction the displacement's angle at least ``min_heading_margin_deg`` from its sector's
  boundary (vistest.motion.heading), seen from the camera of the window's first frame (which
  has a pose: the object is seen there).
* **Instants** (``motion_instant_speed``, ReSTI's instantaneous speed): :func:`instant_candidates`.
* **The camera** (``camera_orientation_change``, ``camera_displacement``, ``camera_path_length``: STI-Bench's
  Ego-Centric Orientation and the camera's Displacement & Path Length): :func:`camera_candidates`.
* **Options**: the numeric types (``motion_displacement``, ``_path_length``, ``_speed``,
  ``_acceleration``) are numeric multiple choice: the balancing pass puts ``num_options``
  values on a geometric ladder around the answer (vistest.generate.balance.numeric_options,
  the rank drawn first and balanced over the set; an acceleration's ladder keeps its sign).
  ``motion_direction`` offers the four headings of vistest.motion.HEADINGS, placed like every
  other multiple-choice type's options, its answers capped like the direction words.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import motion as mo
from ..budget.windows import window_range
from .candidates import MOTION_DIRECTION_TYPE, MOTION_TYPE_OF, MOTION_TYPES, Candidate
from .facts import SceneFacts
from .rules import MotionRules

DISPLACEMENT, PATH_LENGTH, SPEED, ACCELERATION = (MOTION_TYPE_OF[q] for q in (mo.DISPLACEMENT, mo.PATH_LENGTH, mo.SPEED,
                                                                          mo.ACCELERATION))
DIRECTION = MOTION_DIRECTION_TYPE
INSTANT_SPEED = MOTION_TYPE_OF[mo.INSTANT_SPEED]
CAMERA_TURN, CAMERA_DISPLACEMENT, CAMERA_PATH = (MOTION_TYPE_OF[q] for q in mo.CAMERA_QUANTITIES)
CAMERA_TYPES = (CAMERA_TURN, CAMERA_DISPLACEMENT, CAMERA_PATH)
_WHEN = "From {time_start} s to {time_end} s, "
TEMPLATES = {
    DISPLACEMENT: _WHEN + ("how far does the {object_name} move (its displacement: the straight-line distance "
                           "between where it is at {time_start} s and at {time_end} s), in meters?"),
    PATH_LENGTH: _WHEN + ("what is the length of the path the {object_name} travels (the distance along its "
                          "trajectory), in meters?"),
    SPEED: _WHEN + ("what is the magnitude of the average velocity of the {object_name} (the straight-line "
                    "displacement between where it is at {time_start} s and at {time_end} s divided by the elapsed "
                    "time), in meters per second?"),
    ACCELERATION: _WHEN + ("what is the average acceleration of the {object_name} (the change of its speed from "
                           "{time_start} s to {time_end} s divided by the time; negative when it slows down), in "
                           "meters per second squared?"),
    DIRECTION: _WHEN + ("which of these directions ({choices}) does the {object_name} move in, as seen from the "
                        "camera at {time_start} s?"),
    CAMERA_TURN: _WHEN + ("what is the signed horizontal heading change of the camera (its optical-forward direction "
                          "projected onto the plane perpendicular to gravity; positive counterclockwise about +up "
                          "when viewed from above, wrapped to [-180, 180)), in degrees?"),
    CAMERA_DISPLACEMENT: _WHEN + ("what is the displacement of the camera (the straight-line distance between where "
                                  "it is at {time_start} s and at {time_end} s), in meters?"),
    CAMERA_PATH: _WHEN + "what is the trajectory length of the camera (the total distance it travels), in meters?",
    INSTANT_SPEED: ("What is the speed of the {object_name} at t={time} s, measured over a 1-second window centered "
                    "on that instant (the straight-line distance it moves from {anchor_start} s to {anchor_end} s "
                    "divided by 1 second), in meters per second?"),
}
DECIMALS = 3  # the answer as written before the options are made (the budget check's single option)


@dataclass(frozen=True)
class Window:
    """One window of one object: its bounds in seconds, the table frames inside it and the
    frames where the object is seen (``observed``, sorted)."""

    start_s: float
    end_s: float
    inside: np.ndarray
    observed: np.ndarray


def time_decimals(step_s: float) -> int:
    """Decimals that write every multiple of ``step_s`` exactly (at least 1, at most 3)."""
    for d in (1, 2, 3):
        if abs(round(step_s * 10 ** d) - step_s * 10 ** d) < 1e-6:
            return d
    return 3


def grid_times(num_frames: int, fps: float, step_s: float) -> list[float]:
    """Multiples of ``step_s`` from 0 to the last frame's time (seconds, rounded to the written decimals)."""
    if num_frames < 1:
        return []
    last = (num_frames - 1) / fps
    d = time_decimals(step_s)
    return [round(k * step_s, d) for k in range(int(math.floor(last / step_s + 1e-9)) + 1)]


def window_pairs(times: np.ndarray, rules: MotionRules, ends_ok) -> list[tuple[int, int]]:
    """Every pair ``(i, j)`` of grid indices, sorted, whose length ``times[j] - times[i]`` (seconds) lies
    within ``min_window_s`` .. ``max_window_s`` (0: no upper bound) and for which ``ends_ok(k)[i]`` holds,
    ``k = j - i`` (a bool array over ``i`` in ``0 .. len(times) - k - 1``: the caller's own rule on the
    window's ends). One vectorised pass per window length, so linear in the grid times the lengths
    asked; the pass stops at the first length longer than ``max_window_s`` everywhere."""
    longest = rules.max_window_s if rules.max_window_s > 0 else math.inf
    pairs = []
    for k in range(1, len(times)):  # window (i, i + k)
        length = times[k:] - times[:-k]
        if length.min() > longest + 1e-9:
            break
        ok = (length >= rules.min_window_s - 1e-9) & (length <= longest + 1e-9) & ends_ok(k)
        i = np.flatnonzero(ok)
        pairs += zip(i.tolist(), (i + k).tolist())
    return sorted(pairs)


def object_windows(facts: SceneFacts, oid: str, rules: MotionRules) -> list[Window]:
    """Every window of object ``oid`` (module docstring): the object seen at the window's first
    and last table frames and in at least ``min_seen_share`` of them; sorted by start, then end.

    Work: :func:`window_pairs`, linear in the video's length (grid times) times the lengths between
    ``min_window_s`` and ``max_window_s`` (15 at the defaults); ``max_window_s`` 0 (every length up to
    the whole video) makes it quadratic."""
    scene = facts.scene
    frames, seen = facts.table_frames, facts.seen_frames[oid]
    grid = grid_times(scene.num_frames, scene.fps, rules.window_step_s)
    if len(grid) < 2 or len(frames) < 2:
        return []
    times = np.asarray(grid)
    bounds = [window_range(t, t, scene.fps) for t in grid]  # a window [t_i, t_j] holds frames first_i..last_j
    lo = np.searchsorted(frames, [b[0] for b in bounds])  # its table rows: lo[i] <= row < hi[j]
    hi = np.searchsorted(frames, [b[1] for b in bounds], side="right")
    seen_row = np.isin(frames, seen)
    seen_before = np.concatenate([[0], np.cumsum(seen_row)])  # seen rows before each row

    def ends_ok(k: int) -> np.ndarray:
        """Two table rows or more, seen at the first and the last, seen in min_seen_share of them."""
        a, b = lo[:-k], hi[k:]
        return ((b - a >= 2) & seen_row[np.minimum(a, len(frames) - 1)] & seen_row[np.maximum(b - 1, 0)]
                & (seen_before[b] - seen_before[a] >= rules.min_seen_share * (b - a) - 1e-9))

    out = []
    for i, j in window_pairs(times, rules, ends_ok):
        inside = frames[lo[i]:hi[j]]
        out.append(Window(grid[i], grid[j], inside, seen[(seen >= inside[0]) & (seen <= inside[-1])]))
    return out


@dataclass(frozen=True)
class Measures:
    """What the object does over a window's observed frames (vistest.motion): metres, seconds;
    ``acceleration``/``speed_change`` None with fewer than 3 frames, ``heading`` (sector,
    margin in degrees, angle in degrees) None when it cannot be had."""

    displacement: float
    path_length: float
    speed: float
    acceleration: float | None
    speed_change: float | None
    heading: tuple[str, float, float] | None


def measure(facts: SceneFacts, frames: np.ndarray, pts: np.ndarray) -> Measures:
    """The quantities of vistest.motion over ``frames`` (the observed frames), the object's
    centres there ``pts`` (vistest.motion.centers_at)."""
    fps = facts.scene.fps
    acc = change = None
    if len(frames) >= 3:
        acc = mo.acceleration(pts, frames, fps)
        d, t = mo.chords(pts), np.asarray(frames, float) / fps
        change = float(d[-1] / (t[-1] - t[-2]) - d[0] / (t[1] - t[0]))
    try:
        right, forward = mo.camera_axes(facts.scene, int(frames[0]))
        angle = mo.heading_angle(pts, right, forward)
        heading = (*mo.heading(angle), angle)
    except mo.MotionError:
        heading = None
    return Measures(mo.displacement(pts), mo.path_length(pts), mo.speed(pts, frames, fps), acc, change, heading)


def asked(qtype: str, m: Measures, rules: MotionRules) -> bool:
    """Is the quantity of ``qtype`` well defined and unambiguous over the window (module docstring)?"""
    if qtype in (DISPLACEMENT, DIRECTION, SPEED) and m.displacement < rules.min_displacement_m:
        return False
    if qtype in (PATH_LENGTH, ACCELERATION) and m.path_length < rules.min_displacement_m:
        return False
    if qtype == SPEED:
        return m.speed >= rules.min_speed_mps
    if qtype == ACCELERATION:
        return (m.acceleration is not None and abs(m.acceleration) >= rules.min_acceleration_mps2
                and abs(m.speed_change) >= rules.min_speed_change_mps)
    if qtype == DIRECTION:
        return m.heading is not None and m.heading[1] >= rules.min_heading_margin_deg
    return True


def unique_tracked(facts: SceneFacts) -> list:
    """The tracked objects whose label no other object of the scene carries (sorted by id)."""
    labels = [o.label.lower() for o in facts.scene.objects]
    return [o for o in facts.tracked if labels.count(o.label.lower()) == 1]


def candidates(facts: SceneFacts, rules: MotionRules, types: tuple[str, ...]) -> list[Candidate]:
    """Every dynamic question of ``types`` the scene supports (module docstring)."""
    want = [t for t in MOTION_TYPES if t in types and t != INSTANT_SPEED and t not in CAMERA_TYPES]
    out = instant_candidates(facts, rules) if INSTANT_SPEED in types else []
    out += camera_candidates(facts, rules, tuple(t for t in CAMERA_TYPES if t in types))
    if not want:
        return out
    d = time_decimals(rules.window_step_s)
    for obj in unique_tracked(facts):
        seen = facts.seen_frames[obj.id]
        try:  # the centres at every frame it is seen in, once (a seen object is present: its track has a pose)
            centres = mo.centers_at(obj, [int(f) for f in seen])
        except mo.MotionError:
            continue
        for w in object_windows(facts, obj.id, rules):
            rows = np.searchsorted(seen, w.observed)
            m = measure(facts, w.observed, centres[rows])
            fields = (("object_name", obj.label), ("time_end", f"{w.end_s:.{d}f}"),
                      ("time_start", f"{w.start_s:.{d}f}"))
            detail = (("displacement_m", m.displacement), ("path_length_m", m.path_length), ("speed_mps", m.speed),
                      ("observed_frames", float(len(w.observed))), ("window_frames", float(len(w.inside))))
            for qtype in want:
                if not asked(qtype, m, rules):
                    continue
                base = dict(scene_id=facts.scene_id, question_type=qtype, template=TEMPLATES[qtype], fields=fields,
                            objects=(obj.id,), window=(w.start_s, w.end_s))
                if qtype == DIRECTION:
                    sector, margin, angle = m.heading
                    others = tuple(h for h in mo.HEADINGS if h != sector)
                    out.append(Candidate(**base, answer=sector, distractors=others,
                                         detail=detail + (("heading_deg", angle), ("heading_margin_deg", margin))))
                else:
                    value = {DISPLACEMENT: m.displacement, PATH_LENGTH: m.path_length, SPEED: m.speed,
                             ACCELERATION: m.acceleration}[qtype]
                    out.append(Candidate(**base, value=value, decimals=DECIMALS,
                                         detail=detail + ((("acceleration_mps2", value),) if qtype == ACCELERATION
                                                          else ())))
    return out


def instant_candidates(facts: SceneFacts, rules: MotionRules) -> list[Candidate]:
    """``motion_instant_speed`` (module docstring): at every grid instant ``t`` (multiples of
    ``window_step_s``) whose 1 s window lies inside the video, each unique tracked object seen at
    both anchors (vistest.motion.anchor_frames over the frames where it is seen: with every frame
    these are the frames at ``t -/+ 0.5`` s) and at least ``min_seen_share`` of the window's frames,
    moving at least ``min_speed_mps`` there."""
    scene, d = facts.scene, time_decimals(rules.window_step_s)
    grid = grid_times(scene.num_frames, scene.fps, rules.window_step_s)
    last = (scene.num_frames - 1) / scene.fps
    out = []
    for obj in unique_tracked(facts):
        seen = facts.seen_frames[obj.id]
        for t in grid:
            lo, hi = t + mo.ANCHORS[mo.INSTANT_SPEED][0], t + mo.ANCHORS[mo.INSTANT_SPEED][-1]
            if lo < 0 or hi > last + 1e-9:
                continue
            tf = facts.table_frames  # sorted
            inside = tf[np.searchsorted(tf, window_range(lo, lo, scene.fps)[0]):
                        np.searchsorted(tf, window_range(hi, hi, scene.fps)[1], side="right")]
            observed = np.intersect1d(inside, seen)
            if len(inside) < 2 or len(observed) < rules.min_seen_share * len(inside) - 1e-9:
                continue
            try:  # over every frame seeing it, as the budget stage's rule track at the all budget
                anchors = mo.anchor_frames(mo.INSTANT_SPEED, seen.tolist(), t, scene.fps)
                value = mo.instant_value(mo.INSTANT_SPEED, mo.centers_at(obj, anchors), anchors, scene.fps)
            except mo.MotionError:
                continue
            if value < rules.min_speed_mps:
                continue
            fields = (("anchor_end", f"{hi:.{d}f}"), ("anchor_start", f"{lo:.{d}f}"), ("object_name", obj.label),
                      ("time", f"{t:.{d}f}"))
            out.append(Candidate(scene_id=facts.scene_id, question_type=INSTANT_SPEED,
                                 template=TEMPLATES[INSTANT_SPEED], fields=fields, objects=(obj.id,),
                                 window=(t, t), value=value, decimals=DECIMALS,
                                 detail=(("speed_mps", value), ("anchor_frames", float(len(anchors))),
                                         ("window_frames", float(len(inside))))))
    return out


def camera_candidates(facts: SceneFacts, rules: MotionRules, types: tuple[str, ...]) -> list[Candidate]:
    """The camera's own motion (``camera_*``; vistest.motion.camera_quantity) over every window of
    the grid (as the objects' windows: ends on multiples of ``window_step_s``, ``min_window_s`` to
    ``max_window_s`` long) whose two ends are table frames with a camera pose: the orientation
    change (its magnitude in [``min_turn_deg``, 180 - ``min_turn_deg``], and so the turn the camera
    made: frame to frame over the window's frames, :func:`unwrapped_turn`, as well; a camera that turned
    +242.8 degrees would otherwise be asked -117.2), the displacement and the path length (at least
    ``min_displacement_m``), each over the window's table frames (the ends and every frame between: what
    rule ``camera`` recomputes at ``all``)."""
    if not types:
        return []
    scene, d = facts.scene, time_decimals(rules.window_step_s)
    out = []
    for t0, t1, inside in camera_windows(facts.table_frames, scene.num_frames, scene.fps, rules):
        try:
            values = {q: mo.camera_quantity(mo.CAMERA_QUANTITIES[CAMERA_TYPES.index(q)], scene, inside.tolist())
                      for q in types}
        except mo.MotionError:
            continue
        fields = (("time_end", f"{t1:.{d}f}"), ("time_start", f"{t0:.{d}f}"))
        for q, v in values.items():
            if q == CAMERA_TURN and not (rules.min_turn_deg <= abs(v) <= 180.0 - rules.min_turn_deg
                                         and abs(unwrapped_turn(scene, inside) - v) < 1e-6):
                continue
            if q != CAMERA_TURN and v < rules.min_displacement_m:
                continue
            out.append(Candidate(scene_id=facts.scene_id, question_type=q, template=TEMPLATES[q], fields=fields,
                                 window=(t0, t1), value=v, decimals=DECIMALS,
                                 detail=(("value", v), ("window_frames", float(len(inside))))))
    return out


def camera_windows(frames: np.ndarray, num_frames: int, fps: float, rules: MotionRules
                   ) -> list[tuple[float, float, np.ndarray]]:
    """(start s, end s, table frames inside) of every camera window (:func:`camera_candidates`): grid
    times ``t0 < t1`` ``min_window_s`` to ``max_window_s`` apart whose two ends are table frames (the
    frame at ``t0`` and the one at ``t1``, each a pose); sorted by start, then end.

    Work: :func:`window_pairs`, as :func:`object_windows` (issue #44:
    a frame at 9,999,999 made a pair-by-pair loop over 667,000 grid times run for minutes); Python
    handles only the windows found."""
    frames = np.asarray(frames, np.int64)
    grid = grid_times(num_frames, fps, rules.window_step_s)
    if len(grid) < 2 or len(frames) < 2:
        return []
    times = np.asarray(grid)
    bounds = np.array([window_range(t, t, fps) for t in grid], np.int64)
    first, last = bounds[:, 0], bounds[:, 1]  # the window [t_i, t_j] holds frames first_i .. last_j
    starts = np.isin(first, frames)  # t_i can start a window: its frame has a pose
    ends = np.isin(last, frames)
    out = []
    # two distinct table frames at the ends
    for i, j in window_pairs(times, rules, lambda k: starts[:-k] & ends[k:] & (last[k:] > first[:-k])):
        inside = frames[np.searchsorted(frames, first[i]):np.searchsorted(frames, last[j], side="right")]
        out.append((grid[i], grid[j], inside))
    return out


def unwrapped_turn(scene, frames: np.ndarray) -> float:
    """The camera's heading change (degrees, counter-clockwise from above positive) summed frame to frame
    over ``frames`` (each step vistest.motion.heading_change, wrapped): the turn it made, not wrapped."""
    _, forwards = mo.camera_poses(scene, [int(f) for f in frames])
    return float(sum(mo.heading_change(a, b) for a, b in zip(forwards[:-1], forwards[1:])))
