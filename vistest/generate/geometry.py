"""Exact geometry of oriented boxes for the question templates.

Conventions (those of :mod:`vistest.scene`): world in metres, right-handed, +Z up; a box is
``center`` (3,), ``size`` (3,) full extents and ``rotation`` (3, 3) whose *columns* are its
axes. Boxes are solids: two boxes that intersect or touch are at distance 0.

* :func:`box_distance`: the closest-point distance between two solid boxes (VSI-Bench's and
  ReVSI's "measuring from the closest point of each object"), exact: 0 when an edge of one
  box enters the other (slab clipping), else the smallest of vertex-to-box and
  edge-to-edge distances (the closest features of two disjoint convex polyhedra are a
  vertex and a face, or two edges).
* :func:`footprint`: a box's outline on the floor plane (convex hull of its corners' XY).
* :func:`polygon_distance`: closest-point distance between two convex polygons (0 when they
  overlap). :func:`polygon_area`: shoelace area (vistest.geometry's).
* :func:`ccw_angle_deg`: the angle, in degrees in [0, 360), from a facing direction to a
  target direction in the floor plane, counter-clockwise seen from above (+Z), so 90 is
  to the left and 270 to the right (ReVSI's ``_calculate_angle`` convention).
"""
from __future__ import annotations

import numpy as np

from ..geometry import box_corners, polygon_area

__all__ = ["EDGES", "corners", "point_box_distance", "segments_enter_box", "segment_distances", "boxes_intersect",
           "box_distance", "convex_hull_2d", "footprint", "polygon_area", "polygon_distance", "ccw_angle_deg"]

# corner pairs that differ in exactly one bit of the corner index: the 12 edges of a box
EDGES = np.array([(k, k | (1 << b)) for k in range(8) for b in range(3) if not k & (1 << b)], dtype=np.int64)
_EPS = 1e-12


def corners(center, size, rotation) -> np.ndarray:
    """(8, 3) world corners of one box (numbering of :func:`vistest.geometry.box_corners`)."""
    return box_corners(np.asarray(center, float)[None], np.asarray(size, float)[None],
                       np.asarray(rotation, float)[None])[0]


def point_box_distance(points: np.ndarray, center, size, rotation) -> np.ndarray:
    """(N,) distance from each point (N, 3) to the solid box (0 inside): clamp in the box frame."""
    local = (np.asarray(points, float) - np.asarray(center, float)) @ np.asarray(rotation, float)
    half = np.asarray(size, float) / 2.0
    return np.linalg.norm(local - np.clip(local, -half, half), axis=-1)


def segments_enter_box(p0: np.ndarray, p1: np.ndarray, center, size, rotation) -> np.ndarray:
    """(N,) bool: does segment ``p0[i]``-``p1[i]`` meet the closed solid box (slab clipping)."""
    r = np.asarray(rotation, float)
    a = (np.asarray(p0, float) - center) @ r
    d = (np.asarray(p1, float) - center) @ r - a
    half = np.asarray(size, float) / 2.0
    t0 = np.zeros(len(a))
    t1 = np.ones(len(a))
    ok = np.ones(len(a), bool)
    for k in range(3):
        dk, ak = d[:, k], a[:, k]
        flat = np.abs(dk) < _EPS
        ok &= ~(flat & (np.abs(ak) > half[k]))
        with np.errstate(divide="ignore", invalid="ignore"):
            lo = (-half[k] - ak) / dk
            hi = (half[k] - ak) / dk
        near, far = np.minimum(lo, hi), np.maximum(lo, hi)
        t0 = np.where(flat, t0, np.maximum(t0, near))
        t1 = np.where(flat, t1, np.minimum(t1, far))
    return ok & (t0 <= t1)


def segment_distances(p0: np.ndarray, p1: np.ndarray, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
    """(N,) closest distance between segments ``p0-p1`` and ``q0-q1`` (rows broadcast).

    Clamped closest-point parameters (Ericson, Real-Time Collision Detection 5.1.9), with the
    parallel case handled by clamping one parameter and re-solving the other.
    """
    d1, d2 = p1 - p0, q1 - q0
    r = p0 - q0
    a = np.sum(d1 * d1, -1)
    e = np.sum(d2 * d2, -1)
    f = np.sum(d2 * r, -1)
    c = np.sum(d1 * r, -1)
    b = np.sum(d1 * d2, -1)
    denom = a * e - b * b
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(denom > _EPS * np.maximum(a * e, _EPS), np.clip((b * f - c * e) / denom, 0.0, 1.0), 0.0)
        t = np.where(e > _EPS, (b * s + f) / e, 0.0)
        s_lo = np.where(a > _EPS, np.clip(-c / a, 0.0, 1.0), 0.0)
        s_hi = np.where(a > _EPS, np.clip((b - c) / a, 0.0, 1.0), 0.0)
    s = np.where(e > _EPS, np.where(t < 0.0, s_lo, np.where(t > 1.0, s_hi, s)), s_lo)
    t = np.clip(t, 0.0, 1.0)
    return np.linalg.norm((p0 + d1 * s[..., None]) - (q0 + d2 * t[..., None]), axis=-1)


def boxes_intersect(box_a: tuple, box_b: tuple) -> bool:
    """True when two solid boxes ``(center, size, rotation)`` intersect or touch: some edge of
    one meets the other (the intersection of two convex polyhedra has a vertex on an edge of one
    of them)."""
    ca, cb = corners(*box_a), corners(*box_b)
    return bool(segments_enter_box(ca[EDGES[:, 0]], ca[EDGES[:, 1]], *box_b).any()
                or segments_enter_box(cb[EDGES[:, 0]], cb[EDGES[:, 1]], *box_a).any())


def box_distance(box_a: tuple, box_b: tuple) -> float:
    """Closest-point distance in metres between two solid boxes ``(center, size, rotation)``
    (0 when they intersect or touch). Exact; see the module docstring."""
    if boxes_intersect(box_a, box_b):
        return 0.0
    ca, cb = corners(*box_a), corners(*box_b)
    vertex = min(point_box_distance(ca, *box_b).min(), point_box_distance(cb, *box_a).min())
    ea0, ea1 = ca[EDGES[:, 0]], ca[EDGES[:, 1]]
    eb0, eb1 = cb[EDGES[:, 0]], cb[EDGES[:, 1]]
    edge = segment_distances(ea0[:, None], ea1[:, None], eb0[None], eb1[None]).min()
    return float(min(vertex, edge))


# ---------------------------------------------------------------------------------------
# the floor plane
# ---------------------------------------------------------------------------------------
def convex_hull_2d(points: np.ndarray) -> np.ndarray:
    """Counter-clockwise convex hull (M, 2) of (N, 2) points (monotone chain; collinear dropped)."""
    pts = sorted(set(map(tuple, np.round(np.asarray(points, float), 12))))
    if len(pts) <= 2:
        return np.array(pts, float)

    def half(seq):
        out: list[tuple[float, float]] = []
        for p in seq:
            while len(out) >= 2 and ((out[-1][0] - out[-2][0]) * (p[1] - out[-2][1])
                                     - (out[-1][1] - out[-2][1]) * (p[0] - out[-2][0])) <= 0:
                out.pop()
            out.append(p)
        return out

    lower, upper = half(pts), half(reversed(pts))
    return np.array(lower[:-1] + upper[:-1], float)


def footprint(center, size, rotation) -> np.ndarray:
    """A box's outline on the floor plane: the CCW convex hull (M, 2) of its corners' XY."""
    return convex_hull_2d(corners(center, size, rotation)[:, :2])


def _separated_2d(a: np.ndarray, b: np.ndarray) -> bool:
    """Separating-axis test for two convex polygons (edge normals of both)."""
    for poly in (a, b):
        edges = np.roll(poly, -1, axis=0) - poly
        normals = np.stack([-edges[:, 1], edges[:, 0]], axis=1)
        for n in normals:
            pa, pb = a @ n, b @ n
            if pa.max() < pb.min() or pb.max() < pa.min():
                return True
    return False


def polygon_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Closest-point distance between two convex polygons (M, 2), (K, 2); 0 when they overlap."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if not _separated_2d(a, b):
        return 0.0

    def lift(p):
        return np.concatenate([p, np.zeros((len(p), 1))], axis=1)

    a3, b3 = lift(a), lift(b)
    a0, a1 = a3, np.roll(a3, -1, axis=0)
    b0, b1 = b3, np.roll(b3, -1, axis=0)
    return float(segment_distances(a0[:, None], a1[:, None], b0[None], b1[None]).min())


def ccw_angle_deg(facing: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Angles in [0, 360) degrees from the floor-plane direction ``facing`` (2,) to each target
    direction (N, 2), counter-clockwise seen from above: 90 = left, 180 = behind, 270 = right."""
    f = np.asarray(facing, float)
    t = np.atleast_2d(np.asarray(targets, float))
    cross = f[0] * t[:, 1] - f[1] * t[:, 0]
    dot = t @ f
    return np.mod(np.degrees(np.arctan2(cross, dot)), 360.0)
