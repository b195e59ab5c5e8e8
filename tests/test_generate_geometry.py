"""The generator's geometry against independent references: dense point sampling of the boxes'
surfaces for closest-point distances, sampled polygons, analytic angles."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import cKDTree

from vistest.synthetic import random_rotation
from vistest.generate import geometry as geo


def box_surface(center, size, rotation, step=0.01) -> np.ndarray:
    """Points on the 6 faces of a box, on a grid at most ``step`` apart (world coordinates)."""
    center, size, rotation = (np.asarray(a, float) for a in (center, size, rotation))
    pts = []
    for ax in range(3):
        u, v = [i for i in range(3) if i != ax]
        gu = np.linspace(-size[u] / 2, size[u] / 2, max(2, int(np.ceil(size[u] / step)) + 1))
        gv = np.linspace(-size[v] / 2, size[v] / 2, max(2, int(np.ceil(size[v] / step)) + 1))
        uu, vv = np.meshgrid(gu, gv)
        for sign in (-1.0, 1.0):
            p = np.zeros((uu.size, 3))
            p[:, u], p[:, v], p[:, ax] = uu.ravel(), vv.ravel(), sign * size[ax] / 2
            pts.append(p)
    return np.concatenate(pts) @ rotation.T + center


def sampled_distance(box_a, box_b, step=0.02) -> float:
    """Smallest distance between the sampled surfaces of two boxes."""
    return float(cKDTree(box_surface(*box_b, step=step)).query(box_surface(*box_a, step=step))[0].min())


@pytest.mark.parametrize("seed", range(3))
def test_box_distance_matches_dense_sampling(seed):
    rng = np.random.default_rng(seed)
    checked = 0
    for _ in range(12):
        a = (rng.uniform(-1, 1, 3), rng.uniform(0.1, 0.8, 3), random_rotation(rng))
        b = (rng.uniform(-1.5, 1.5, 3), rng.uniform(0.1, 0.8, 3), random_rotation(rng))
        d = geo.box_distance(a, b)
        ref = sampled_distance(a, b)
        if d == 0.0:
            # intersecting: a point of one box lies inside the other (sampled interior test)
            inside = geo.point_box_distance(box_surface(*a, step=0.05), *b).min()
            assert inside == 0.0 or ref < 0.03
            continue
        checked += 1
        # the sampled surfaces can only be farther apart, by at most about the grid's diagonal
        assert d <= ref + 1e-9 and ref - d < 0.03, (d, ref)
    assert checked >= 5


def test_touching_and_nested_boxes_are_at_distance_zero():
    eye = np.eye(3)
    assert geo.box_distance(([0, 0, 0], [1, 1, 1], eye), ([1, 0, 0], [1, 1, 1], eye)) == 0.0  # faces touch
    assert geo.box_distance(([0, 0, 0], [2, 2, 2], eye), ([0, 0, 0], [0.5, 0.5, 0.5], eye)) == 0.0  # nested
    # a "+" of two bars: no corner of either is inside the other, their edges cross
    assert geo.box_distance(([0, 0, 0], [3, 0.2, 0.2], eye), ([0, 0, 0], [0.2, 3, 0.2], eye)) == 0.0
    # parallel faces 0.5 apart, offset sideways: the distance is attained between faces
    assert geo.box_distance(([0, 0, 0], [1, 1, 1], eye), ([0.3, 0.2, 1.5], [1, 1, 1], eye)) == pytest.approx(0.5)


def test_polygon_distance_area_and_footprint():
    rng = np.random.default_rng(4)
    for _ in range(20):
        a = geo.footprint(rng.uniform(-1, 1, 3), rng.uniform(0.2, 1.5, 3), random_rotation(rng))
        b = geo.footprint(rng.uniform(-3, 3, 3), rng.uniform(0.2, 1.5, 3), random_rotation(rng))
        d = geo.polygon_distance(a, b)

        def boundary(p, n=400):
            t = np.linspace(0, 1, n, endpoint=False)
            return np.concatenate([p[i] + t[:, None] * (p[(i + 1) % len(p)] - p[i]) for i in range(len(p))])

        ref = cKDTree(boundary(b)).query(boundary(a))[0].min()
        if d > 0:
            assert d <= ref + 1e-9 and ref - d < 0.01
        else:  # overlapping: a vertex of one inside the other, or crossing edges (sampled: touching)
            assert ref < 0.01 or _inside(a, b[0]) or _inside(b, a[0])
    # an upright box's footprint is its size x size rectangle, whatever its yaw
    yaw = np.radians(33.0)
    rz = np.array([[np.cos(yaw), -np.sin(yaw), 0], [np.sin(yaw), np.cos(yaw), 0], [0, 0, 1]])
    fp = geo.footprint([1, 2, 0.5], [0.8, 0.5, 1.0], rz)
    assert len(fp) == 4 and geo.polygon_area(fp) == pytest.approx(0.4)


def _inside(poly, p) -> bool:
    """Point in convex CCW polygon."""
    e = np.roll(poly, -1, axis=0) - poly
    w = p - poly
    return bool((e[:, 0] * w[:, 1] - e[:, 1] * w[:, 0] >= 0).all())


def test_ccw_angles_left_is_90_right_is_270():
    facing = np.array([0.0, 1.0])
    targets = np.array([[0, 1], [-1, 0], [0, -1], [1, 0], [-1, 1]], float)
    np.testing.assert_allclose(geo.ccw_angle_deg(facing, targets), [0, 90, 180, 270, 45], atol=1e-9)
