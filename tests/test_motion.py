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
    assert m.speed(p, [0, 10, 20], 10.0) == pytest.approx(1.0)


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
