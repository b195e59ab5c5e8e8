"""What a moving object's track says over a set of observed frames: displacement, path length,
speeds, accelerations and heading (the answers of the dynamic question types).

Conventions (docs/questions-format.md "Dynamic questions"):

* An answer is computed from the object's centre at the *observed frames* ``frames`` (decoded
  frame numbers, sorted, distinct): at ground truth for all frames, the frames of the question's
  window where the object is seen; at a frame budget, the sampled frames of the window where the
  object is seen (the budget stage's rule ``track`` recomputes the answer over them). Frame i is at ``i / fps``
  seconds (vistest.budget.windows). Centres are the track's interpolated pose
  (:meth:`vistest.scene.SceneObject.pose_at`), in the box world, metres (z up, gravity -z).
* Between two consecutive observed frames the object is taken to move on the straight chord:
  what a viewer of those frames alone can measure. With every frame observed this is the
  track itself (tracks are linear between keys).
* **displacement** (m): ``|p_last - p_first|``; **path length** (m): the sum of the chords.
* **speed** (m/s), STI-Bench's: the magnitude of the average velocity, ``|p_last - p_first| /
  (t_last - t_first)``. ReSTI words it "the magnitude of the camera's average velocity between t=15.7 s
  and t=19 s, computed as straight-line endpoint displacement divided by elapsed time"
  (pengzhansun/ReSTI ``annotations/resti.jsonl`` @ d4f4eff, ``resti-rem6-c0561391608ea0741280``);
  STI-Bench's code (MINT-SJTU/STI-Bench ``opensource_test.py`` @ 43ddebe) defines no quantity: it
  only scores the letter. On a curved path it is below the **path speed** (m/s): path length /
  (t_last - t_first), vistest's own, kept under that name.
* **acceleration** (m/s^2, signed: < 0 slows down, vistest's own over a window): the change of chord
  speed from the first chord to the last, over the time between their midpoints,
  ``(v_last - v_first) / (tm_last - tm_first)``: for motion along a line at constant
  acceleration this is the acceleration exactly, whatever the frames (a chord's mean speed is
  the speed at its midpoint).
* **Instants** (ReSTI's rows with ``time_start == time_end``): the quantity at an instant ``t``
  is measured between *anchor* frames: for each anchor time ``t + offset`` the observed frame
  nearest it, which must be within :data:`ANCHOR_TOLERANCE_S` (else MotionError, in words).
  **instant speed** (m/s): the average velocity's magnitude over the 1 s window centred on ``t``
  (anchors ``t - 0.5``, ``t + 0.5``; the issue's reading of ReSTI's "speed at t=21 s, measured over
  a 1-second window centered on that instant"). **instant acceleration** (m/s^2, a magnitude):
  ReSTI's "magnitude of the camera's acceleration at t=7 s, from velocities over 1-second
  central windows" (``resti-rem6r2-1e7047ecced77e03b9db``): the velocities over [t-1, t] and
  [t, t+1] (1 s windows centred on t -/+ 0.5), ``|v2 - v1| / 1 s``, each anchor's own time used.
* Displacement, path length and the speeds need 2 observed frames, acceleration 3
  (:data:`MIN_FRAMES`; an instant quantity: its anchors).
* **heading** (one of :data:`HEADINGS`): the direction of the displacement on the floor, in the
  frame of a reference camera (the camera at the window's first frame): ``"right"`` / ``"left"``
  along the camera's x axis projected on the floor, ``"away"`` / ``"toward"`` along its viewing
  direction projected on the floor; the sector of the angle (90 degrees each, centred on those
  axes). Its margin is the angle to the nearest sector boundary (degrees; 45 = on an axis).
  vistest's own: STI-Bench has no such task (its nearest, Ego-Centric Orientation, is the camera's).
"""
from __future__ import annotations

import bisect
import math
from typing import Sequence

import numpy as np

from .scene import Scene, SceneObject

DISPLACEMENT, PATH_LENGTH, SPEED, PATH_SPEED, ACCELERATION, HEADING = (
    "displacement", "path_length", "speed", "path_speed", "acceleration", "heading")
INSTANT_SPEED, INSTANT_ACCELERATION = "instant_speed", "instant_acceleration"
QUANTITIES = (DISPLACEMENT, PATH_LENGTH, SPEED, PATH_SPEED, ACCELERATION, HEADING, INSTANT_SPEED, INSTANT_ACCELERATION)
UNITS = {DISPLACEMENT: "m", PATH_LENGTH: "m", SPEED: "m/s", PATH_SPEED: "m/s", ACCELERATION: "m/s^2", HEADING: "",
         INSTANT_SPEED: "m/s", INSTANT_ACCELERATION: "m/s^2"}
MIN_FRAMES = {DISPLACEMENT: 2, PATH_LENGTH: 2, SPEED: 2, PATH_SPEED: 2, ACCELERATION: 3, HEADING: 2,
              INSTANT_SPEED: 2, INSTANT_ACCELERATION: 3}
# seconds from the instant of each anchor of an instant quantity (module docstring)
ANCHORS = {INSTANT_SPEED: (-0.5, 0.5), INSTANT_ACCELERATION: (-1.0, 0.0, 1.0)}
ANCHOR_TOLERANCE_S = 0.1  # seconds: an anchor's observed frame at most this far from its time
HEADINGS = ("right", "away", "left", "toward")  # counter-clockwise from the camera's right, seen from above


class MotionError(ValueError):
    """The observed frames cannot give the quantity (too few, or the object absent at one)."""


def centers_at(obj: SceneObject, frames: Sequence[int]) -> np.ndarray:
    """(n, 3) box-world centres of ``obj`` at ``frames`` (metres); MotionError when it is absent
    at one of them (a tracked object outside its keyed span)."""
    out = []
    for f in frames:
        pose = obj.pose_at(f)
        if pose is None:
            raise MotionError(f"object {obj.id!r} is absent at frame {f} (outside its track's keys)")
        out.append(pose[0])
    return np.asarray(out, float).reshape(len(out), 3)


def _need(points: np.ndarray, k: int, what: str) -> None:
    if len(points) < k:
        raise MotionError(f"{what} needs {k} observed frames, got {len(points)}")


def _times(frames: Sequence[int], fps: float) -> np.ndarray:
    t = np.asarray(frames, float) / float(fps)
    if len(t) > 1 and not np.all(np.diff(t) > 0):
        raise MotionError(f"observed frames must be strictly increasing, got {list(frames)[:8]}")
    return t


def chords(points: np.ndarray) -> np.ndarray:
    """(n-1,) lengths (m) of the chords between consecutive points."""
    return np.linalg.norm(np.diff(points, axis=0), axis=1)


def displacement(points: np.ndarray) -> float:
    """``|p_last - p_first|`` in metres (module docstring)."""
    _need(points, 2, DISPLACEMENT)
    return float(np.linalg.norm(points[-1] - points[0]))


def path_length(points: np.ndarray) -> float:
    """The sum of the chords in metres (module docstring)."""
    _need(points, 2, PATH_LENGTH)
    return float(chords(points).sum())


def speed(points: np.ndarray, frames: Sequence[int], fps: float) -> float:
    """STI-Bench's speed in m/s: the average velocity's magnitude, displacement / (t_last - t_first)."""
    _need(points, 2, SPEED)
    t = _times(frames, fps)
    return displacement(points) / float(t[-1] - t[0])


def path_speed(points: np.ndarray, frames: Sequence[int], fps: float) -> float:
    """Mean path speed over the observed span in m/s: path length / (t_last - t_first)."""
    _need(points, 2, PATH_SPEED)
    t = _times(frames, fps)
    return path_length(points) / float(t[-1] - t[0])


def anchor_frames(name: str, frames: Sequence[int], time: float, fps: float,
                  tolerance_s: float = ANCHOR_TOLERANCE_S) -> list[int]:
    """The anchors of instant quantity ``name`` at ``time`` (s): for each offset of :data:`ANCHORS`
    the frame of ``frames`` nearest ``time + offset`` (the earlier on a tie). MotionError, saying
    which anchor lacks a frame and the nearest one, when one is farther than ``tolerance_s``."""
    fs = sorted({int(f) for f in frames})
    out = []
    for off in ANCHORS[name]:
        at = time + off
        k = bisect.bisect_left(fs, at * fps)  # the nearest frame is fs[k - 1] or fs[k]
        best = min(fs[max(0, k - 1):k + 1], key=lambda f: (abs(f / fps - at), f)) if fs else None
        if best is None or abs(best / fps - at) > tolerance_s + 1e-9:
            near = "none" if best is None else f"nearest frame {best} at {best / fps:.3g} s"
            raise MotionError(f"{name.replace('_', ' ')} at {time:g} s: no observed frame within {tolerance_s:g} s "
                              f"of {at:g} s ({near})")
        out.append(best)
    if len(set(out)) < len(out):
        raise MotionError(f"{name.replace('_', ' ')} at {time:g} s: two anchors fall on frame {out}")
    return out


def instant_value(name: str, points: np.ndarray, anchors: Sequence[int], fps: float) -> float:
    """Instant quantity ``name`` from the centres ``points`` at its anchor frames ``anchors``
    (:func:`anchor_frames`): the speed over the two anchors (m/s), or the magnitude of the change of
    velocity between the chords over the time between their midpoints (m/s^2)."""
    _need(points, MIN_FRAMES[name], name)
    t = _times(anchors, fps)
    if name == INSTANT_SPEED:
        return float(np.linalg.norm(points[1] - points[0]) / (t[1] - t[0]))
    v1 = (points[1] - points[0]) / (t[1] - t[0])
    v2 = (points[2] - points[1]) / (t[2] - t[1])
    return float(np.linalg.norm(v2 - v1) / ((t[2] - t[0]) / 2))


def acceleration(points: np.ndarray, frames: Sequence[int], fps: float) -> float:
    """Signed mean acceleration in m/s^2 (module docstring): first to last chord speed over the
    time between the chords' midpoints."""
    _need(points, 3, ACCELERATION)
    t = _times(frames, fps)
    d = chords(points)
    v_first, v_last = d[0] / (t[1] - t[0]), d[-1] / (t[-1] - t[-2])
    tm_first, tm_last = (t[0] + t[1]) / 2, (t[-2] + t[-1]) / 2
    return float((v_last - v_first) / (tm_last - tm_first))


def heading_angle(points: np.ndarray, cam_right: np.ndarray, cam_forward: np.ndarray,
                  up: np.ndarray = np.array([0.0, 0.0, 1.0])) -> float:
    """Angle (degrees, counter-clockwise seen from above, 0 = the camera's right, 90 = away from
    the camera) of the displacement ``p_last - p_first`` on the floor. ``cam_right`` and
    ``cam_forward``: the camera's x and z axes in the same (box-world) frame; they and the
    displacement are projected on the plane normal to ``up``. MotionError when the displacement
    or the camera's floor axes vanish (a still object; a camera looking straight down)."""
    _need(points, 2, HEADING)
    up = np.asarray(up, float) / np.linalg.norm(up)

    def flat(v):
        v = np.asarray(v, float)
        return v - np.dot(v, up) * up

    d, r = flat(points[-1] - points[0]), flat(cam_right)
    if np.linalg.norm(d) < 1e-9 or np.linalg.norm(r) < 1e-9:
        raise MotionError("heading: no floor displacement or no floor direction for the camera")
    r = r / np.linalg.norm(r)
    f = np.cross(up, r)  # the floor direction 90 degrees counter-clockwise of right
    if np.dot(f, flat(cam_forward)) < 0:  # a left-handed camera frame would flip it
        f = -f
    return math.degrees(math.atan2(float(np.dot(d, f)), float(np.dot(d, r)))) % 360.0


def camera_axes(scene: Scene, frame: int) -> tuple[np.ndarray, np.ndarray]:
    """(right, forward): the x and z axes (OpenCV camera: x right, z forward) of decoded frame
    ``frame``'s camera in the box world (``boxes_to_world`` undone); MotionError when the frame
    has no pose."""
    pose = scene.frames[frame].camera_to_world if 0 <= frame < len(scene.frames) else None
    if pose is None:
        raise MotionError(f"heading: frame {frame} has no camera pose")
    r = scene.boxes_to_world[:3, :3].T @ np.asarray(pose, float)[:3, :3]
    return r[:, 0], r[:, 2]


def heading(angle_deg: float) -> tuple[str, float]:
    """(sector of :data:`HEADINGS`, margin in degrees to the nearest sector boundary) of a heading
    angle from :func:`heading_angle`."""
    a = angle_deg % 360.0
    k = int(((a + 45.0) % 360.0) // 90.0)
    off = abs(((a - 90.0 * k + 180.0) % 360.0) - 180.0)  # degrees from the sector's axis, 0..45
    return HEADINGS[k], 45.0 - off


def quantity(name: str, points: np.ndarray, frames: Sequence[int], fps: float) -> float:
    """The numeric window quantity ``name`` (displacement, path_length, speed, path_speed,
    acceleration) over the observed frames (module docstring)."""
    if name == DISPLACEMENT:
        return displacement(points)
    if name == PATH_LENGTH:
        return path_length(points)
    if name == SPEED:
        return speed(points, frames, fps)
    if name == PATH_SPEED:
        return path_speed(points, frames, fps)
    if name == ACCELERATION:
        return acceleration(points, frames, fps)
    raise ValueError(f"quantity: expected one of {QUANTITIES[:5]}, got {name!r}")


# ---------------------------------------------------------------------------------------
# the camera's own motion (STI-Bench's Ego-Centric Orientation, Displacement & Path Length of the camera)
# ---------------------------------------------------------------------------------------
CAMERA_HEADING_CHANGE, CAMERA_DISPLACEMENT, CAMERA_PATH_LENGTH = (
    "camera_heading_change", "camera_displacement", "camera_path_length")
CAMERA_QUANTITIES = (CAMERA_HEADING_CHANGE, CAMERA_DISPLACEMENT, CAMERA_PATH_LENGTH)
UNITS.update({CAMERA_HEADING_CHANGE: "deg", CAMERA_DISPLACEMENT: "m", CAMERA_PATH_LENGTH: "m"})
MIN_FRAMES.update({CAMERA_HEADING_CHANGE: 2, CAMERA_DISPLACEMENT: 2, CAMERA_PATH_LENGTH: 2})


def camera_poses(scene: Scene, frames: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """((n, 3) centres in metres, (n, 3) optical-forward unit vectors) of the cameras of decoded
    frames ``frames`` in the box world (``boxes_to_world`` undone: z up, gravity -z; OpenCV camera,
    forward = its z axis). MotionError naming a frame without a pose."""
    a = np.asarray(scene.boxes_to_world, float)
    inv = np.linalg.inv(a)
    centres, forwards = [], []
    for f in frames:
        pose = scene.frames[f].camera_to_world if 0 <= f < len(scene.frames) else None
        if pose is None:
            raise MotionError(f"camera: frame {f} has no camera pose")
        m = inv @ np.asarray(pose, float)
        centres.append(m[:3, 3])
        forwards.append(m[:3, 2])
    return np.asarray(centres, float).reshape(-1, 3), np.asarray(forwards, float).reshape(-1, 3)


def wrap_degrees(angle: float) -> float:
    """``angle`` wrapped to [-180, 180) degrees."""
    return (float(angle) + 180.0) % 360.0 - 180.0


def heading_change(forward_start: np.ndarray, forward_end: np.ndarray) -> float:
    """STI-Bench's Ego-Centric Orientation (degrees): the signed horizontal heading change from the
    first forward direction to the second, each projected on the plane normal to +z (gravity),
    counter-clockwise about +up seen from above positive, wrapped to [-180, 180). ReSTI's wording:
    "the signed horizontal heading change of the camera? Project the camera's optical-forward
    direction onto the plane perpendicular to gravity. Positive angles are counterclockwise about
    +up when viewed from above; report the wrapped angle in [-180°, 180°)" (pengzhansun/ReSTI
    ``annotations/resti.jsonl`` @ d4f4eff, ``resti-orientation-v1:Waymo:10203656353524179475_7625_000_7645_000_
    camera_1.mp4:3``). MotionError when a forward direction is vertical (no heading)."""
    a, b = np.asarray(forward_start, float)[:2], np.asarray(forward_end, float)[:2]
    if np.linalg.norm(a) < 1e-9 or np.linalg.norm(b) < 1e-9:
        raise MotionError("camera heading change: the camera looks straight up or down (no horizontal heading)")
    return wrap_degrees(math.degrees(math.atan2(a[0] * b[1] - a[1] * b[0], a[0] * b[0] + a[1] * b[1])))


def camera_quantity(name: str, scene: Scene, frames: Sequence[int]) -> float:
    """Camera quantity ``name`` over the observed frames ``frames`` (sorted, distinct; the first and
    the last are the window's ends): the heading change from the first frame's camera to the last's
    (degrees, :func:`heading_change`), the displacement of the camera centre (m) or its path length
    over the frames' chords (m)."""
    _need(np.zeros((len(frames), 3)), MIN_FRAMES[name], name)
    _times(frames, 1.0)
    centres, forwards = camera_poses(scene, frames)
    if name == CAMERA_HEADING_CHANGE:
        return heading_change(forwards[0], forwards[-1])
    if name == CAMERA_DISPLACEMENT:
        return displacement(centres)
    if name == CAMERA_PATH_LENGTH:
        return path_length(centres)
    raise ValueError(f"camera_quantity: expected one of {CAMERA_QUANTITIES}, got {name!r}")
