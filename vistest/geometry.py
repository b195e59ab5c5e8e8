"""Geometry helpers every stage shares: rigid transforms, rotations, camera poses, boxes.

Conventions (the same as vistest.scene's, stated once here):

* Units: metres for positions and sizes, degrees for the angles the rotation helpers take.
* World: right-handed, +Z up.
* Transforms are 4x4 matrices acting on *column* vectors: ``p_world = T @ [p, 1]``. A
  camera-to-world pose ``T`` holds the camera axes, in world coordinates, as the columns of
  ``T[:3, :3]`` and the camera centre as ``T[:3, 3]``.
* Camera axes are OpenCV's (x right, y down, z forward) unless a name says OpenGL (x right,
  y up, z backward, as pyrender and ARKit use).
* Rotations are 3x3 proper rotations (orthonormal, det +1). A box's rotation holds the
  box axes as its *columns*.
* A box is ``center`` (3,), ``size`` (3,) full extents along its axes, ``rotation`` (3, 3).
"""
from __future__ import annotations

import numpy as np

# Right-multiplying an OpenCV camera-to-world pose gives the OpenGL one (and back): it
# flips the camera's y and z axes, leaving x and the camera centre.
CV_TO_GL = np.diag([1.0, -1.0, -1.0, 1.0])


def rigid_inverse(m: np.ndarray) -> np.ndarray:
    """Inverse of a 4x4 rigid transform ``[R t; 0 1]``: ``[R^T -R^T t; 0 1]`` (rotation
    transposed, exact last row; no general matrix inversion)."""
    m = np.asarray(m, float)
    out = np.eye(4)
    out[:3, :3] = m[:3, :3].T
    out[:3, 3] = -m[:3, :3].T @ m[:3, 3]
    return out


def translation(t) -> np.ndarray:
    """4x4 translation by ``t`` (3,), metres."""
    m = np.eye(4)
    m[:3, 3] = np.asarray(t, float)
    return m


def rot_x(deg: float) -> np.ndarray:
    """3x3 rotation about +X by ``deg`` degrees (right-handed: +Y turns towards +Z)."""
    a = np.radians(deg)
    c, s = np.cos(a), np.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(deg: float) -> np.ndarray:
    """3x3 rotation about +Y by ``deg`` degrees (right-handed: +Z turns towards +X)."""
    a = np.radians(deg)
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rot_z(deg: float) -> np.ndarray:
    """3x3 rotation about +Z by ``deg`` degrees (counter-clockwise seen from above: +X turns
    towards +Y)."""
    a = np.radians(deg)
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def look_rotation(yaw_deg: float, pitch_deg: float) -> np.ndarray:
    """3x3 camera-to-world rotation, OpenCV axes (columns: right, down, forward), no roll.

    ``yaw_deg``: heading in the floor plane (0 = +X, 90 = +Y); ``pitch_deg``: positive
    upward. The camera's x axis stays horizontal (world +Z up).
    """
    yaw, pitch = np.radians(yaw_deg), np.radians(pitch_deg)
    fwd = np.array([np.cos(pitch) * np.cos(yaw), np.cos(pitch) * np.sin(yaw), np.sin(pitch)])
    right = cross3(fwd, np.array([0.0, 0.0, 1.0]))
    right /= np.linalg.norm(right)
    down = cross3(fwd, right)
    return np.stack([right, down, fwd], axis=1)


def cross3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b of two 3-vectors (or of (..., 3) arrays, broadcast), in numpy.cross's own order of operations
    (a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0: the same floats), without its axis handling, which costs
    ~60 us a call: the layouts call it hundreds of thousands of times."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.stack([a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1], a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                     a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]], axis=-1)


def look_at(eye, target, up=(0.0, 0.0, 1.0)) -> np.ndarray:
    """4x4 OpenCV camera-to-world pose at ``eye`` looking at ``target`` (z forward, y down,
    x = z cross ``up``). Looking along ``up`` itself, x is taken from z cross +X instead."""
    eye = np.asarray(eye, float)
    z = np.asarray(target, float) - eye
    z /= np.linalg.norm(z)
    x = np.cross(z, up)
    if np.linalg.norm(x) < 1e-9:  # looking straight up/down: any x orthogonal to z
        x = np.cross(z, [1.0, 0.0, 0.0])
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    pose = np.eye(4)
    pose[:3, 0], pose[:3, 1], pose[:3, 2], pose[:3, 3] = x, y, z, eye
    return pose


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    """A uniformly random 3x3 proper rotation (det +1), from a normalised Gaussian quaternion
    drawn with ``rng`` (4 normal draws)."""
    q = rng.normal(size=4)
    a, b, c, d = q / np.linalg.norm(q)
    return np.array([[a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c)],
                     [2 * (b * c + a * d), a * a - b * b + c * c - d * d, 2 * (c * d - a * b)],
                     [2 * (b * d - a * c), 2 * (c * d + a * b), a * a - b * b - c * c + d * d]])


def box_corners(centers: np.ndarray, sizes: np.ndarray, rots: np.ndarray) -> np.ndarray:
    """(O, 8, 3) box corners from centers (O,3), full sizes (O,3), rotations (O,3,3).

    Corner k has local sign +1 on box axis b when bit b of k is set, else -1.
    """
    signs = np.array([[(k >> b) & 1 for b in range(3)] for k in range(8)], float) * 2.0 - 1.0
    local = signs[None, :, :] * (np.asarray(sizes)[:, None, :] / 2.0)
    return np.asarray(centers)[:, None, :] + np.einsum("okb,odb->okd", local, rots)


def boxes_contain(point: np.ndarray, centers: np.ndarray, sizes: np.ndarray, rots: np.ndarray) -> np.ndarray:
    """(O,) bool: is ``point`` (3,) strictly inside each box (centers (O,3), sizes, rots (O,3,3))."""
    local = np.einsum("odk,od->ok", rots, np.asarray(point, float) - centers)
    return (np.abs(local) < np.asarray(sizes) / 2.0).all(axis=1)


def polygon_area(points: np.ndarray) -> float:
    """Area (m^2) of a simple polygon (N, 2) in the floor plane (shoelace formula; either orientation)."""
    p = np.asarray(points, float)
    return float(abs(np.dot(p[:, 0], np.roll(p[:, 1], -1)) - np.dot(p[:, 1], np.roll(p[:, 0], -1))) / 2.0)


def rotation_to_quaternion(r: np.ndarray) -> np.ndarray:
    """Unit quaternion ``(w, x, y, z)``, ``w >= 0``, of a 3x3 proper rotation (Shepperd's method:
    the largest of the four squared components is taken from the diagonal, the others from it)."""
    r = np.asarray(r, float)
    tr = np.trace(r)
    diag = np.array([tr, r[0, 0], r[1, 1], r[2, 2]])
    k = int(np.argmax(diag))
    if k == 0:
        w = np.sqrt(max(1.0 + tr, 0.0)) / 2.0
        q = np.array([w, (r[2, 1] - r[1, 2]) / (4 * w), (r[0, 2] - r[2, 0]) / (4 * w), (r[1, 0] - r[0, 1]) / (4 * w)])
    else:
        i, j, m = k - 1, k % 3, (k + 1) % 3
        s = np.sqrt(max(1.0 + r[i, i] - r[j, j] - r[m, m], 0.0)) * 2.0  # 4 |q_i|
        q = np.empty(4)
        q[0] = (r[m, j] - r[j, m]) / s
        q[1 + i] = s / 4.0
        q[1 + j] = (r[j, i] + r[i, j]) / s
        q[1 + m] = (r[m, i] + r[i, m]) / s
    q /= np.linalg.norm(q)
    return q if q[0] >= 0 else -q


def quaternion_to_rotation(q: np.ndarray) -> np.ndarray:
    """3x3 rotation of a quaternion ``(w, x, y, z)`` (normalised first)."""
    a, b, c, d = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([[a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c)],
                     [2 * (b * c + a * d), a * a - b * b + c * c - d * d, 2 * (c * d - a * b)],
                     [2 * (b * d - a * c), 2 * (c * d + a * b), a * a - b * b - c * c + d * d]])


def rotation_slerp(r0: np.ndarray, r1: np.ndarray, t: float) -> np.ndarray:
    """The rotation a fraction ``t`` in [0, 1] of the way from ``r0`` to ``r1`` along the geodesic
    (the shorter great arc of their unit quaternions; constant angular speed): ``r0`` at 0, ``r1``
    at 1. Two rotations half a turn apart have two geodesics; the one the quaternion signs pick
    is taken."""
    q0, q1 = rotation_to_quaternion(r0), rotation_to_quaternion(r1)
    dot = float(q0 @ q1)
    if dot < 0.0:
        q1, dot = -q1, -dot
    dot = min(dot, 1.0)
    theta = np.arccos(dot)
    if theta < 1e-9:
        return quaternion_to_rotation(q0 + t * (q1 - q0))
    s = np.sin(theta)
    return quaternion_to_rotation(np.sin((1 - t) * theta) / s * q0 + np.sin(t * theta) / s * q1)
