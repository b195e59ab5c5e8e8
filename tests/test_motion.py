"""vistest.motion against analytic motions: uniform, constant acceleration, a turn, headings."""
import math

import numpy as np
import pytest

from vistest import motion as m
from vistest.scene import SceneObject, TrackKey


def _line(times, x_of_t):
    return np.c_[[x_of_t(t) for t in times], np.zeros(len(times)), np.zeros(len(times))]


def test_uniform_motion_any_frames():
    fps = 10.0
    for frames in ([0, 30], [0, 7, 19, 30], list(range(31))):
        t = np.array(frames) / fps
        p = _line(t, lambda s: 0.5 * s)  # 0.5 m/s along x
        assert m.displacement(p) == pytest.approx(1.5)
        assert m.path_length(p) == pytest.approx(1.5)
        assert m.speed(p, frames, fps) == pytest.approx(0.5)
        assert m.path_speed(p, frames, fps) == pytest.approx(0.5)
        if len(frames) >= 3:
            assert m.acceleration(p, frames, fps) == pytest.approx(0.0, abs=1e-12)


def test_constant_acceleration_is_exact_for_any_three_or_more_frames():
    fps = 30.0
    rng = np.random.default_rng(0)
    for _ in range(20):
        frames = np.sort(rng.choice(np.arange(1, 300), size=rng.integers(3, 12), replace=False))
        t = frames / fps
        p = _line(t, lambda s: 0.2 * s + 0.5 * 0.7 * s * s)  # a = 0.7 m/s^2
        assert m.acceleration(p, frames, fps) == pytest.approx(0.7, rel=1e-9)
    decel = _line(np.array([0, 1, 2.0]), lambda s: 2 * s - 0.5 * 0.4 * s * s)
    assert m.acceleration(decel, [0, 30, 60], 30.0) == pytest.approx(-0.4)


def test_path_longer_than_displacement_on_a_turn():
    p = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0.0]])
    assert m.displacement(p) == pytest.approx(math.sqrt(2))
    assert m.path_length(p) == pytest.approx(2.0)
    assert m.speed(p, [0, 10, 20], 10.0) == pytest.approx(math.sqrt(2) / 2)  # STI: displacement / time
    assert m.path_speed(p, [0, 10, 20], 10.0) == pytest.approx(1.0)


def test_sti_speed_on_a_circle_is_the_chord_over_the_time():
    """A uniform circle of radius r at angular speed w: over [0, T] the average velocity's
    magnitude is the chord 2 r sin(w T / 2) / T (ReSTI: "straight-line endpoint displacement
    divided by elapsed time"), the path speed r w; densely sampled, path speed -> r w."""
    r, w, fps = 2.0, 0.5, 30.0
    frames = np.arange(0, 181)  # 6 s
    t = frames / fps
    p = np.c_[r * np.cos(w * t), r * np.sin(w * t), np.zeros(len(t))]
    T = t[-1]
    assert m.speed(p, frames, fps) == pytest.approx(2 * r * math.sin(w * T / 2) / T, rel=1e-12)
    assert m.path_speed(p, frames, fps) == pytest.approx(r * w, rel=1e-4)
    assert m.path_speed(p, frames, fps) > 1.1 * m.speed(p, frames, fps)
    # a full turn: the STI speed is 0, the path speed is not
    w = 2 * math.pi / T  # one full turn in the 6 s
    p = np.c_[r * np.cos(w * t), r * np.sin(w * t), np.zeros(len(t))]
    assert m.speed(p, frames, fps) == pytest.approx(0.0, abs=1e-12)
    assert m.path_speed(p, frames, fps) == pytest.approx(r * w, rel=1e-3)


def test_instant_speed_over_the_centred_second():
    """Constant acceleration a from rest along a line, x = a s^2 / 2: the average velocity over
    [t - 0.5, t + 0.5] is a t exactly (the speed at the window's middle); on a circle the chord
    2 r sin(w / 2) over 1 s; no frame within the tolerance of an anchor: an error in words."""
    a, fps = 0.6, 30.0
    frames = list(range(0, 301))
    p = _line(np.array(frames) / fps, lambda s: a * s * s / 2)
    for t in (1.0, 2.5, 7.3):
        anchors = m.anchor_frames(m.INSTANT_SPEED, frames, t, fps)
        assert [f / fps for f in anchors] == pytest.approx([t - 0.5, t + 0.5], abs=0.5 / fps)
        if abs(t * fps - round(t * fps)) < 1e-9:
            assert m.instant_value(m.INSTANT_SPEED, p[anchors], anchors, fps) == pytest.approx(a * t, rel=1e-12)
    r, w = 1.5, 0.8
    tt = np.array(frames) / fps
    c = np.c_[r * np.cos(w * tt), r * np.sin(w * tt), np.zeros(len(tt))]
    anchors = m.anchor_frames(m.INSTANT_SPEED, frames, 4.0, fps)
    assert m.instant_value(m.INSTANT_SPEED, c[anchors], anchors, fps) == pytest.approx(2 * r * math.sin(w / 2))
    sparse = [0, 20, 40, 60, 80]  # every 0.667 s: nothing within 0.1 s of 1.5 - 0.5 s ... 1.5 + 0.5 s
    with pytest.raises(m.MotionError, match=r"no observed frame within 0.1 s of 2 s \(nearest frame 60 at 2 s\)"
                       "|no observed frame within 0.1 s of 1 s"):
        m.anchor_frames(m.INSTANT_SPEED, sparse, 1.5, fps)


def test_instant_acceleration_from_central_one_second_velocities():
    """ReSTI's "magnitude of the camera's acceleration at t=7 s, from velocities over 1-second
    central windows": x = v0 s + a s^2 / 2 gives |a| exactly (any sign); a circle, the magnitude of
    the second difference over 1 s, 2 r (1 - cos w) / 1 s^2 (-> r w^2 for small w)."""
    fps = 30.0
    frames = list(range(0, 301))
    s = np.array(frames) / fps
    for v0, a in ((0.2, 0.7), (2.0, -0.4)):
        p = _line(s, lambda u: v0 * u + a * u * u / 2)
        anchors = m.anchor_frames(m.INSTANT_ACCELERATION, frames, 5.0, fps)
        assert anchors == [120, 150, 180]
        assert m.instant_value(m.INSTANT_ACCELERATION, p[anchors], anchors, fps) == pytest.approx(abs(a), rel=1e-9)
    r, w = 1.0, 0.3
    c = np.c_[r * np.cos(w * s), r * np.sin(w * s), np.zeros(len(s))]
    anchors = m.anchor_frames(m.INSTANT_ACCELERATION, frames, 5.0, fps)
    assert m.instant_value(m.INSTANT_ACCELERATION, c[anchors], anchors, fps) == pytest.approx(2 * r * (1 - math.cos(w)))


def test_too_few_frames_and_absent_objects_are_errors():
    with pytest.raises(m.MotionError, match="needs 3"):
        m.acceleration(np.zeros((2, 3)), [0, 1], 30.0)
    with pytest.raises(m.MotionError, match="needs 2"):
        m.displacement(np.zeros((1, 3)))
    with pytest.raises(m.MotionError, match="increasing"):
        m.speed(np.zeros((2, 3)), [5, 5], 30.0)
    obj = SceneObject("cart", "cart", np.zeros(3), np.ones(3), np.eye(3),
                      track=(TrackKey(10, np.zeros(3), np.eye(3)), TrackKey(20, np.array([1.0, 0, 0]), np.eye(3))))
    assert m.centers_at(obj, [10, 15, 20])[:, 0] == pytest.approx([0.0, 0.5, 1.0])
    with pytest.raises(m.MotionError, match="absent at frame 21"):
        m.centers_at(obj, [10, 21])


@pytest.mark.parametrize("deg,sector,margin", [(0, "right", 45), (30, "right", 15), (60, "away", 15),
                                               (90, "away", 45), (170, "left", 35), (250, "toward", 25),
                                               (350, "right", 35)])
def test_heading_sectors_in_a_rotated_camera(deg, sector, margin):
    yaw = math.radians(37.0)  # the camera's right axis on the floor, at 37 degrees in the world
    right = np.array([math.cos(yaw), math.sin(yaw), 0.0])
    forward = np.array([-math.sin(yaw), math.cos(yaw), -0.3])  # looking slightly down
    a = math.radians(deg) + yaw
    p = np.array([[1.0, 2.0, 0.5], [1.0 + math.cos(a), 2.0 + math.sin(a), 0.9]])  # rising: ignored
    angle = m.heading_angle(p, right, forward)
    assert angle == pytest.approx(deg % 360, abs=1e-9)
    assert m.heading(angle) == (sector, pytest.approx(margin))


@pytest.mark.parametrize("yaw0,yaw1,change", [(0, 30, 30), (30, 0, -30), (170, -170, 20), (-170, 170, -20),
                                              (0, 180, -180), (10, 190, -180), (45, 44, -1)])
def test_camera_heading_change_is_signed_ccw_about_up_and_wrapped(yaw0, yaw1, change):
    """ReSTI's Ego-Centric Orientation: counter-clockwise about +up positive, wrapped to [-180, 180)
    (180 itself is -180); the forward's pitch does not matter, only its floor projection."""
    def fwd(yaw, pitch):
        y, p = math.radians(yaw), math.radians(pitch)
        return np.array([math.cos(p) * math.cos(y), math.cos(p) * math.sin(y), math.sin(p)])
    assert m.heading_change(fwd(yaw0, -20), fwd(yaw1, 35)) == pytest.approx(change, abs=1e-9)
    assert m.wrap_degrees(180.0) == -180.0 and m.wrap_degrees(-180.0) == -180.0


def test_camera_heading_change_needs_a_horizontal_forward():
    with pytest.raises(m.MotionError, match="straight up or down"):
        m.heading_change(np.array([0, 0, 1.0]), np.array([1.0, 0, 0]))
