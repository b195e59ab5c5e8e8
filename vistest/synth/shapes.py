"""Objects that look like their category: shapes composed of primitives inside the object's box.

:func:`object_parts` gives a category's parts for a box of full extents ``size`` (metres, the object's
own x, y, z; z up): a chair is a seat on four legs with a back, a table a top on legs, a ball a sphere,
a lamp a shade on a pole and base, a cup a body with a handle, a car a body, a cabin and four wheels
(module table :data:`BUILDERS`; a category without a builder is a plain box). :func:`part_arrays`
makes a part's triangles, :func:`object_mesh` an object's whole mesh (the renderer draws it, ``mesh.ply``
holds it, ``mesh_objects`` names its vertices).

Conventions (tests/test_synth_shapes.py checks them for every category of every scale's catalogue):

* A part is ``(kind, lo, hi, slot, radii)``: ``lo``/``hi`` (3,) its axis-aligned bounds in the object's
  frame (metres, centred on the box centre); ``kind`` ``box``, ``cyl`` (a cylinder or frustum along
  ``axis`` z, x or y: ``cyl``, ``cylx``, ``cyly``; ``radii`` = (start, end) radius as a fraction of the
  bounds' half extent, 1 = touching them), ``sphere`` (an ellipsoid inscribed in the bounds) or
  ``wedge`` (a gable roof: a triangular prism whose ridge runs along x at the top); ``slot`` the colour:
  0 the look's ``colour``, 1 its ``colour2``, 2 a dark shade of ``colour``, 3 a pale one.
* Every part lies inside the box and the parts together reach all six faces: the object's axis-aligned
  box (what scene.json records, VSI-Bench's convention) is exactly the box of its shape.
* Every part is a closed solid whose triangles wind counter-clockwise seen from outside (normals
  outward): the renderer culls back faces.
* Geometry depends on (label, size) alone; colours on the look. Nothing keys a colour to a category.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

SECTIONS = 20  # sides of a cylinder or frustum
SPHERE_SUBDIVISIONS = 2  # an icosphere of 320 faces


class Part(NamedTuple):
    """One primitive of an object (module docstring): kind, bounds ``lo``/``hi`` (m, object frame),
    colour ``slot``, ``radii`` (start, end) fractions for a cylinder/frustum."""

    kind: str
    lo: np.ndarray
    hi: np.ndarray
    slot: int
    radii: tuple[float, float] = (1.0, 1.0)


def box_arrays(size: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A box of full extents ``size`` centred at the origin, 24 vertices (4 per face, flat normals,
    UV 0-1 per face), outward counter-clockwise faces: (positions, normals, uvs, triangles).

    For the face of normal ``sign * e_axis`` the quad runs along the two other axes (a, b) in cyclic
    order after ``axis`` (x: y, z; y: z, x; z: x, y), so ``e_a x e_b = +e_axis``; a negative face swaps
    them."""
    pos, nrm, uv, tri = [], [], [], []
    h = np.asarray(size, float) / 2
    for axis in range(3):
        for sign in (-1.0, 1.0):
            n = np.zeros(3)
            n[axis] = sign
            a, b = (axis + 1) % 3, (axis + 2) % 3  # cyclic: e_a x e_b = +e_axis
            if sign < 0:
                a, b = b, a  # keep the winding outward
            base = len(pos)
            for du, dv in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                p = n * h
                p[a], p[b] = du * h[a], dv * h[b]
                pos.append(p)
                nrm.append(n)
                uv.append(((du + 1) / 2, (dv + 1) / 2))
            tri += [(base, base + 1, base + 2), (base, base + 2, base + 3)]
    return (np.array(pos, np.float32), np.array(nrm, np.float32), np.array(uv, np.float32),
            np.array(tri, np.uint32))


def _flat(vertices: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unshared vertices with each face's own normal (from its winding): (positions, normals, triangles)."""
    p = vertices[faces].reshape(-1, 3)
    n = np.cross(vertices[faces[:, 1]] - vertices[faces[:, 0]], vertices[faces[:, 2]] - vertices[faces[:, 0]])
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    return p, np.repeat(n, 3, axis=0), np.arange(len(p)).reshape(-1, 3)


def _unit_frustum(r0: float, r1: float) -> tuple[np.ndarray, np.ndarray]:
    """A closed frustum along z from -0.5 (radius ``r0``) to 0.5 (radius ``r1``), :data:`SECTIONS`
    sides, outward winding: (vertices, faces)."""
    n = SECTIONS
    ang = 2 * np.pi * np.arange(n) / n
    ring = np.stack([np.cos(ang), np.sin(ang)], 1) * 0.5
    v = np.vstack([np.c_[ring * r0, np.full(n, -0.5)], np.c_[ring * r1, np.full(n, 0.5)],
                   [[0, 0, -0.5], [0, 0, 0.5]]])
    f = []
    for i in range(n):
        j = (i + 1) % n
        f += [(i, j, n + j), (i, n + j, n + i)]  # side, counter-clockwise seen from outside
        f += [(2 * n, j, i), (2 * n + 1, n + i, n + j)]  # bottom (seen from below), top (from above)
    return v, np.array(f)


def _unit_sphere() -> tuple[np.ndarray, np.ndarray]:
    import trimesh

    s = trimesh.creation.icosphere(subdivisions=SPHERE_SUBDIVISIONS, radius=0.5)
    return np.asarray(s.vertices, float), np.asarray(s.faces)


def _unit_wedge() -> tuple[np.ndarray, np.ndarray]:
    """A gable: base rectangle [-0.5, 0.5]^2 at z = -0.5, ridge along x at (y 0, z 0.5)."""
    v = np.array([[-0.5, -0.5, -0.5], [0.5, -0.5, -0.5], [0.5, 0.5, -0.5], [-0.5, 0.5, -0.5],
                  [-0.5, 0.0, 0.5], [0.5, 0.0, 0.5]])
    f = [(0, 2, 1), (0, 3, 2),  # bottom
         (0, 1, 5), (0, 5, 4),  # -y slope
         (2, 3, 4), (2, 4, 5),  # +y slope
         (0, 4, 3), (1, 2, 5)]  # gable ends
    return v, np.array(f)


def _fit(v: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Scale and move vertices so that their bounds are exactly [lo, hi] (positive scales: winding kept)."""
    vmin, vmax = v.min(0), v.max(0)
    return lo + (v - vmin) / (vmax - vmin) * (hi - lo)


_AXES = {"cyl": (0, 1, 2), "cylx": (2, 0, 1), "cyly": (1, 2, 0)}  # axis j = unit axis _AXES[j] (cyclic)


def part_arrays(part: Part) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(positions (V, 3) float32 m, normals (V, 3) float32 unit outward, triangles (T, 3) uint32) of a part
    in the object's frame; flat-shaded except spheres (smooth: the ellipsoid's normals)."""
    lo, hi = np.asarray(part.lo, float), np.asarray(part.hi, float)
    if part.kind == "box":
        p, n, _, t = box_arrays(hi - lo)
        return (p + (lo + hi) / 2).astype(np.float32), n, t
    if part.kind == "sphere":
        v, f = _unit_sphere()
        p = _fit(v, lo, hi)
        half = (hi - lo) / 2
        n = (p - (lo + hi) / 2) / half ** 2  # the ellipsoid's gradient
        n /= np.linalg.norm(n, axis=1, keepdims=True)
        return p.astype(np.float32), n.astype(np.float32), f.astype(np.uint32)
    if part.kind in _AXES:
        v, f = _unit_frustum(*part.radii)
        v = v[:, list(_AXES[part.kind])]  # a cyclic permutation of the axes: a rotation, winding kept
        centre, half = (lo + hi) / 2, (hi - lo) / 2
        p = centre + v * 2 * half  # unit radius 0.5 spans the bounds when the radius fraction is 1
    elif part.kind == "wedge":
        v, f = _unit_wedge()
        p = _fit(v, lo, hi)
    else:
        raise ValueError(f"unknown part kind {part.kind!r}")
    p, n, t = _flat(p, f)
    return p.astype(np.float32), n.astype(np.float32), t.astype(np.uint32)


def object_parts(label: str, size) -> list[Part]:
    """The parts of a ``label`` object in a box of full extents ``size`` (m), in the object's frame."""
    size = np.asarray(size, float)
    return BUILDERS.get(label, _plain)(_Kit(size))


def object_mesh(label: str, size, rotation=None, center=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(vertices (V, 3) float64, faces (T, 3) int64, slot of each face (T,)) of an object's whole shape, in
    its frame, or in the world when ``rotation`` (3, 3) and ``center`` (3,) are given (its box's pose)."""
    vs, fs, slots, base = [], [], [], 0
    for part in object_parts(label, size):
        p, _, t = part_arrays(part)
        vs.append(p.astype(float))
        fs.append(t.astype(np.int64) + base)
        slots.append(np.full(len(t), part.slot))
        base += len(p)
    v = np.vstack(vs)
    if rotation is not None:
        v = v @ np.asarray(rotation, float).T + np.asarray(center, float)
    return v, np.vstack(fs), np.concatenate(slots)


def slot_colours(colour, colour2) -> np.ndarray:
    """(4, 3) RGB 0-1 of the colour slots: the look's colour, its second colour, dark, pale."""
    c, c2 = np.asarray(colour, float), np.asarray(colour2, float)
    return np.array([c, c2, c * 0.35, 0.35 * c + 0.65])


# ---------------------------------------------------------------------------------------
# the categories
# ---------------------------------------------------------------------------------------
class _Kit:
    """Builds parts in box fractions: ``f(x0, x1, y0, y1, z0, z1)`` are fractions of the box in
    [-0.5, 0.5]; ``fz(m)`` turns a height in metres into a z fraction (clipped to the box), and so on."""

    def __init__(self, size: np.ndarray):
        self.size = size
        self.parts: list[Part] = []

    def add(self, kind, x, y, z, slot=0, radii=(1.0, 1.0)) -> "_Kit":
        lo = np.array([x[0], y[0], z[0]]) * self.size
        hi = np.array([x[1], y[1], z[1]]) * self.size
        self.parts.append(Part(kind, lo, hi, slot, tuple(radii)))
        return self

    def frac(self, metres: float, axis: int, most: float = 1.0) -> float:
        """``metres`` along ``axis`` as a fraction of the box, at most ``most``."""
        return float(min(metres / self.size[axis], most))

    def legs(self, top: float, t: float = 0.05, inset: float = 0.0, slot: int = 2, kind: str = "box") -> "_Kit":
        """Four legs of ``t`` m square from the floor to fraction ``top``, ``inset`` fraction from the edges."""
        tx, ty = self.frac(t, 0, 0.25), self.frac(t, 1, 0.25)
        for sx in (-1, 1):
            for sy in (-1, 1):
                x = sorted((sx * (0.5 - inset), sx * (0.5 - inset - tx)))
                y = sorted((sy * (0.5 - inset), sy * (0.5 - inset - ty)))
                self.add(kind, x, y, (-0.5, top), slot)
        return self


F = (-0.5, 0.5)  # the box's full extent along an axis


def _plain(k: _Kit) -> list[Part]:
    return k.add("box", F, F, F).parts


def _box(k: _Kit) -> list[Part]:  # a cardboard box: body and a lid band
    return k.add("box", F, F, (-0.5, 0.3)).add("box", F, F, (0.3, 0.5), 1).parts


def _crate(k: _Kit) -> list[Part]:  # a core and four corner posts, slats across the middle
    k.add("box", (-0.45, 0.45), (-0.45, 0.45), F)
    for sx in (-1, 1):
        for sy in (-1, 1):
            k.add("box", sorted((sx * 0.5, sx * 0.38)), sorted((sy * 0.5, sy * 0.38)), F, 2)
    k.add("box", (-0.38, 0.38), F, (-0.1, 0.1), 2)
    return k.add("box", F, (-0.38, 0.38), (-0.1, 0.1), 2).parts


def _table(k: _Kit) -> list[Part]:  # a top on four legs
    top = 0.5 - k.frac(0.04, 2, 0.3)
    return k.add("box", F, F, (top, 0.5)).legs(top, t=min(0.06, 0.12 * k.size[:2].min()), inset=0.04).parts


def _desk(k: _Kit) -> list[Part]:  # a top on legs and a drawer block
    top = 0.5 - k.frac(0.035, 2, 0.3)
    k.add("box", F, F, (top, 0.5)).legs(top, t=0.05, inset=0.02)
    k.add("box", (0.12, 0.42), (-0.46, 0.4), (-0.1, top), 1)
    return k.add("box", (0.2, 0.34), (-0.48, -0.46), (0.1, 0.2), 2).parts


def _side_table(k: _Kit) -> list[Part]:  # a round top on a pedestal and a base
    top = 0.5 - k.frac(0.03, 2, 0.3)
    k.add("cyl", F, F, (top, 0.5))
    k.add("cyl", (-0.08, 0.08), (-0.08, 0.08), (-0.46, top), 2)
    return k.add("cyl", (-0.35, 0.35), (-0.35, 0.35), (-0.5, -0.46), 2).parts


def _picnic_table(k: _Kit) -> list[Part]:  # a top, two benches, legs
    seat = -0.5 + k.frac(0.45, 2, 0.7)
    top = 0.5 - k.frac(0.05, 2, 0.2)
    k.add("box", F, (-0.3, 0.3), (top, 0.5))
    for sy in (-1, 1):
        k.add("box", F, sorted((sy * 0.5, sy * 0.36)), (seat - k.frac(0.05, 2), seat), 1)
    for sx in (-1, 1):
        x = sorted((sx * 0.4, sx * 0.34))
        k.add("box", x, (-0.06, 0.06), (-0.5, top), 2)
        k.add("box", x, (-0.5, 0.5), (seat - 0.12, seat - k.frac(0.05, 2)), 2)
    return k.parts


def _stool(k: _Kit) -> list[Part]:  # a round seat on four legs with a foot rest
    top = 0.5 - k.frac(0.05, 2, 0.3)
    k.add("cyl", F, F, (top, 0.5)).legs(top, t=0.035, inset=0.12)
    return k.add("box", (-0.32, 0.32), (-0.32, 0.32), (-0.2, -0.16), 2).parts


def _chair(k: _Kit) -> list[Part]:  # a seat on four legs, a back along +y
    seat = -0.5 + k.frac(0.46, 2, 0.6)
    t = k.frac(0.05, 2, 0.1)
    k.add("box", F, F, (seat - t, seat)).legs(seat - t, t=0.045)
    return k.add("box", F, (0.38, 0.5), (seat, 0.5), 1).parts


def _bench(k: _Kit) -> list[Part]:  # a seat on legs; a back rest when tall enough
    tall = k.size[2] > 0.6
    seat = -0.5 + k.frac(0.45, 2) if tall else 0.5
    t = k.frac(0.05, 2, 0.2)
    y = (-0.5, 0.2) if tall else F
    k.add("box", F, y, (seat - t, seat))
    for sx in (-1, 1):
        k.add("box", sorted((sx * 0.44, sx * 0.38)), (y[0] + 0.05, y[1] - 0.05), (-0.5, seat - t), 2)
    if tall:
        k.add("box", F, (0.35, 0.5), (seat - t, 0.5), 1)
    return k.parts


def _upholstered(k: _Kit, cushions: int) -> list[Part]:  # sofa, armchair: base, cushions, arms, back
    seat = -0.5 + k.frac(0.42, 2, 0.55)
    arm = min(seat + k.frac(0.2, 2), 0.3)
    ax = k.frac(0.15, 0, 0.2)
    k.add("box", F, F, (-0.5, seat - 0.12), 2)
    k.add("box", (-0.5 + ax, 0.5 - ax), (-0.5, 0.25), (seat - 0.12, seat))
    w = (1 - 2 * ax) / cushions
    for i in range(cushions):
        x0 = -0.5 + ax + i * w
        k.add("box", (x0 + 0.01, x0 + w - 0.01), (-0.48, 0.25), (seat, seat + 0.08), 1)
    for sx in (-1, 1):
        k.add("box", sorted((sx * 0.5, sx * (0.5 - ax))), F, (seat - 0.12, arm))
    return k.add("box", (-0.5 + ax, 0.5 - ax), (0.25, 0.5), (seat - 0.12, 0.5)).parts


def _bed(k: _Kit) -> list[Part]:  # frame, mattress, headboard at -x, pillow, blanket
    frame = -0.5 + k.frac(0.2, 2, 0.4)
    mat = min(frame + k.frac(0.22, 2), 0.3)
    hx = k.frac(0.06, 0, 0.1)
    k.add("box", (-0.5 + hx, 0.5), F, (-0.5, frame), 2)
    k.add("box", (-0.5 + hx, 0.48), (-0.48, 0.48), (frame, mat), 3)
    k.add("box", (-0.5, -0.5 + hx), F, F, 2)
    k.add("box", (-0.5 + hx + 0.02, -0.5 + hx + 0.16), (-0.4, 0.4), (mat, mat + 0.08), 3)
    return k.add("box", (-0.1, 0.5), F, (mat - 0.1, mat + 0.02), 0).parts


def _shelf(k: _Kit, boards: int, books: bool) -> list[Part]:  # sides, back, boards, books on them
    sx, by = k.frac(0.025, 0, 0.1), k.frac(0.02, 1, 0.1)
    bz = k.frac(0.025, 2, 0.05)
    for s in (-1, 1):
        k.add("box", sorted((s * 0.5, s * (0.5 - sx))), F, F)
    k.add("box", (-0.5 + sx, 0.5 - sx), (0.5 - by, 0.5), F, 2)
    levels = np.linspace(-0.5, 0.5 - bz, boards + 1)
    for j, z in enumerate(levels):
        k.add("box", (-0.5 + sx, 0.5 - sx), (-0.5, 0.5 - by), (z, z + bz))
        if books and j < boards:
            gap = levels[1] - levels[0]
            k.add("box", (-0.45, -0.05), (-0.35, 0.4), (z + bz, z + bz + 0.7 * (gap - bz)), 1)
            k.add("box", (0.05, 0.3), (-0.35, 0.4), (z + bz, z + bz + 0.55 * (gap - bz)), 3)
    return k.parts


def _drawers(k: _Kit, n: int, legs: bool) -> list[Part]:  # cabinet, dresser, nightstand: drawer fronts, knobs
    z0 = -0.5 + (k.frac(0.08, 2, 0.2) if legs else 0.0)
    if legs:
        k.legs(z0, t=0.04, inset=0.02)
    k.add("box", F, (-0.44, 0.5), (z0, 0.5))
    h = (0.5 - z0) / n
    for i in range(n):
        z = z0 + i * h
        k.add("box", (-0.46, 0.46), (-0.47, -0.44), (z + 0.02, z + h - 0.02), 1)
        k.add("box", (-0.06, 0.06), (-0.5, -0.47), (z + h / 2 - 0.03, z + h / 2 + 0.03), 2)
    return k.parts


def _refrigerator(k: _Kit) -> list[Part]:  # body, two doors, handles
    k.add("box", F, (-0.42, 0.5), F, 3)
    k.add("box", (-0.48, 0.48), (-0.46, -0.42), (-0.48, 0.16), 3)
    k.add("box", (-0.48, 0.48), (-0.46, -0.42), (0.2, 0.48), 3)
    k.add("box", (0.3, 0.36), (-0.5, -0.46), (-0.1, 0.12), 2)
    return k.add("box", (0.3, 0.36), (-0.5, -0.46), (0.24, 0.4), 2).parts


def _washing_machine(k: _Kit) -> list[Part]:  # body, round door, control panel
    k.add("box", F, (-0.44, 0.5), F, 3)
    k.add("cyly", (-0.32, 0.32), (-0.5, -0.44), (-0.38, 0.22), 2)
    return k.add("box", (-0.46, 0.46), (-0.47, -0.44), (0.32, 0.46), 1).parts


def _tv(k: _Kit) -> list[Part]:  # a dark screen in a frame on a stand
    neck = -0.5 + k.frac(0.12, 2, 0.3)
    k.add("box", F, (-0.25, 0.3), (neck, 0.5), 0)
    k.add("box", (-0.46, 0.46), (-0.3, -0.25), (neck + 0.04, 0.46), 2)
    k.add("box", (-0.06, 0.06), (-0.15, 0.15), (-0.45, neck), 0)
    return k.add("box", (-0.25, 0.25), F, (-0.5, -0.45), 0).parts


def _board(k: _Kit, mirror: bool) -> list[Part]:  # whiteboard on legs, floor mirror: a frame and its face
    if mirror:
        k.add("box", F, (-0.3, 0.5), F, 0)
        return k.add("box", (-0.42, 0.42), (-0.5, -0.3), (-0.44, 0.44), 3).parts
    foot = k.frac(0.45, 2, 0.5)
    k.add("box", F, (-0.2, 0.2), (-0.5 + foot, 0.5), 0)
    k.add("box", (-0.46, 0.46), (-0.25, -0.2), (-0.5 + foot + 0.04, 0.46), 3)
    for sx in (-1, 1):
        k.add("box", sorted((sx * 0.4, sx * 0.34)), (-0.1, 0.1), (-0.46, -0.5 + foot), 2)
        k.add("box", sorted((sx * 0.42, sx * 0.32)), F, (-0.5, -0.46), 2)
    return k.parts


def _radiator(k: _Kit) -> list[Part]:  # vertical fins on two rails and feet
    n = max(4, int(k.size[0] / 0.08))
    w = 1.0 / n
    for i in range(n):
        x0 = -0.5 + i * w
        k.add("box", (x0 + 0.15 * w, x0 + 0.85 * w), F, (-0.4, 0.5))
    k.add("box", F, (-0.2, 0.2), (-0.35, -0.28), 2)
    for sx in (-1, 1):
        k.add("box", sorted((sx * 0.42, sx * 0.36)), (-0.3, 0.3), (-0.5, -0.4), 2)
    return k.parts


def _rug(k: _Kit) -> list[Part]:
    return k.add("box", F, F, (-0.5, 0.2)).add("box", (-0.42, 0.42), (-0.38, 0.38), (0.2, 0.5), 1).parts


def _piano(k: _Kit) -> list[Part]:  # an upright: body, key bed with keys, legs
    bed = -0.5 + k.frac(0.72, 2, 0.7)
    k.add("box", F, (-0.1, 0.5), F, 2)
    k.add("box", (-0.46, 0.46), (-0.46, -0.1), (bed - 0.08, bed), 0)
    k.add("box", (-0.44, 0.44), (-0.44, -0.14), (bed, bed + 0.03), 3)
    for sx in (-1, 1):
        k.add("box", sorted((sx * 0.44, sx * 0.4)), (-0.5, -0.44), (-0.5, bed), 2)
    return k.parts


def _bathtub(k: _Kit) -> list[Part]:  # an open tub: a floor and four walls, pale inside
    t = (k.frac(0.06, 0, 0.2), k.frac(0.06, 1, 0.2))
    k.add("box", F, F, (-0.5, -0.3), 0)
    k.add("box", (-0.5 + t[0], 0.5 - t[0]), (-0.5 + t[1], 0.5 - t[1]), (-0.3, -0.26), 3)
    for s in (-1, 1):
        k.add("box", sorted((s * 0.5, s * (0.5 - t[0]))), F, (-0.3, 0.5))
        k.add("box", (-0.5 + t[0], 0.5 - t[0]), sorted((s * 0.5, s * (0.5 - t[1]))), (-0.3, 0.5))
    return k.parts


def _ottoman(k: _Kit) -> list[Part]:
    k.add("box", F, F, (-0.42, 0.2)).add("box", (-0.46, 0.46), (-0.46, 0.46), (0.2, 0.5), 1)
    return k.legs(-0.42, t=0.04, inset=0.05).parts


def _suitcase(k: _Kit) -> list[Part]:  # a body with a handle on top and a band
    k.add("box", F, F, (-0.5, 0.38)).add("box", (-0.5, 0.5), (-0.44, 0.44), (-0.05, 0.05), 2)
    for sx in (-1, 1):
        k.add("box", sorted((sx * 0.2, sx * 0.14)), (-0.1, 0.1), (0.38, 0.5), 2)
    return k.add("box", (-0.2, 0.2), (-0.1, 0.1), (0.45, 0.5), 2).parts


def _basket(k: _Kit) -> list[Part]:  # a flared body and a handle across
    k.add("cyl", F, F, (-0.5, 0.15), radii=(0.8, 1.0))
    for sx in (-1, 1):
        k.add("box", sorted((sx * 0.44, sx * 0.38)), (-0.05, 0.05), (0.15, 0.5), 2)
    return k.add("box", (-0.44, 0.44), (-0.05, 0.05), (0.44, 0.5), 2).parts


def _fan(k: _Kit) -> list[Part]:  # base, pole, round head facing -y
    head = k.frac(k.size[0], 2, 0.7)
    k.add("cyl", (-0.4, 0.4), (-0.4, 0.4), (-0.5, -0.46), 2)
    k.add("cyl", (-0.05, 0.05), (-0.05, 0.05), (-0.46, 0.5 - head / 2), 2)
    return k.add("cyly", F, (-0.1, 0.5), (0.5 - head, 0.5), 0).add("cyly", (-0.15, 0.15), (-0.5, -0.1),
                                                                      (0.5 - head * 0.65, 0.5 - head * 0.35), 1).parts


def _speaker(k: _Kit) -> list[Part]:  # a cabinet with a woofer and a tweeter on its -y face
    k.add("box", F, (-0.4, 0.5), F, 2)
    k.add("cyly", (-0.38, 0.38), (-0.5, -0.4), (-0.4, 0.05), 0)
    return k.add("cyly", (-0.18, 0.18), (-0.5, -0.4), (0.15, 0.4), 1).parts


def _printer(k: _Kit) -> list[Part]:
    k.add("box", F, F, (-0.5, 0.2), 3).add("box", (-0.42, 0.42), (-0.5, 0.3), (0.2, 0.5), 0)
    return k.add("box", (-0.3, 0.3), (0.3, 0.5), (0.2, 0.42), 3).parts


def _coat_rack(k: _Kit) -> list[Part]:  # base, pole, hooks at the top
    k.add("cyl", F, F, (-0.5, -0.47), 2).add("cyl", (-0.06, 0.06), (-0.06, 0.06), (-0.47, 0.5), 0)
    k.add("box", F, (-0.04, 0.04), (0.34, 0.38), 1)
    return k.add("box", (-0.04, 0.04), F, (0.3, 0.34), 1).parts


def _guitar(k: _Kit) -> list[Part]:  # lower and upper bouts, neck, head
    k.add("cyly", F, F, (-0.5, -0.08), 0)
    k.add("cyly", (-0.38, 0.38), (-0.45, 0.45), (-0.2, 0.12), 0)
    k.add("cyly", (-0.12, 0.12), (-0.5, -0.45), (-0.3, -0.2), 2)
    k.add("box", (-0.06, 0.06), (-0.2, 0.2), (0.1, 0.42), 1)
    return k.add("box", (-0.1, 0.1), (-0.2, 0.2), (0.42, 0.5), 2).parts


def _aquarium(k: _Kit) -> list[Part]:  # a pale tank with a dark base and lid
    return k.add("box", F, F, (-0.5, -0.38), 2).add("box", F, F, (-0.38, 0.42), 3).add(
        "box", F, F, (0.42, 0.5), 2).add("box", (-0.2, 0.1), (-0.2, 0.2), (-0.38, -0.2), 1).parts


def _lamp(k: _Kit) -> list[Part]:  # base, pole, shade
    shade = k.frac(0.9 * min(k.size[0], k.size[1]), 2, 0.45)
    k.add("cyl", (-0.35, 0.35), (-0.35, 0.35), (-0.5, -0.46), 2)
    k.add("cyl", (-0.06, 0.06), (-0.06, 0.06), (-0.46, 0.5 - shade), 2)
    return k.add("cyl", F, F, (0.5 - shade, 0.5), 1, radii=(1.0, 0.55)).parts


def _lamp_post(k: _Kit) -> list[Part]:  # base, pole, lantern
    head = k.frac(1.2 * k.size[0], 2, 0.2)
    k.add("cyl", F, F, (-0.5, -0.47), 2).add("cyl", (-0.22, 0.22), (-0.22, 0.22), (-0.47, 0.5 - head), 2)
    return k.add("cyl", F, F, (0.5 - head, 0.5), 3, radii=(0.6, 1.0)).parts


def _plant(k: _Kit) -> list[Part]:  # a pot and a leafy crown
    pot = k.frac(0.7 * min(k.size[0], k.size[1]), 2, 0.35)
    k.add("cyl", (-0.35, 0.35), (-0.35, 0.35), (-0.5, -0.5 + pot), 2, radii=(0.75, 1.0))
    return k.add("sphere", F, F, (-0.5 + 0.8 * pot, 0.5), 1).parts


def _tree(k: _Kit) -> list[Part]:  # a trunk and a crown
    return k.add("cyl", (-0.1, 0.1), (-0.1, 0.1), (-0.5, -0.05), 2).add("sphere", F, F, (-0.25, 0.5), 1).parts


def _planter(k: _Kit) -> list[Part]:  # a box of soil with a shrub
    return k.add("box", F, F, (-0.5, 0.1), 0).add("sphere", (-0.45, 0.45), (-0.45, 0.45), (-0.1, 0.5), 1).parts


def _shed(k: _Kit) -> list[Part]:  # walls, a gable roof, a door
    k.add("box", (-0.46, 0.46), (-0.45, 0.45), (-0.5, 0.1), 3)
    k.add("wedge", F, F, (0.1, 0.5), 0)
    return k.add("box", (-0.15, 0.15), (-0.5, -0.45), (-0.5, -0.05), 2).parts


def _mailbox(k: _Kit) -> list[Part]:  # a post and a round-topped box
    k.add("box", (-0.08, 0.08), (-0.1, 0.1), (-0.5, 0.24), 2)
    return k.add("box", F, F, (0.24, 0.4), 0).add("cylx", F, F, (0.3, 0.5), 0).add(
        "box", (0.3, 0.36), (0.4, 0.5), (0.25, 0.45), 1).parts


def _sign(k: _Kit) -> list[Part]:  # two posts and a panel
    for sx in (-1, 1):
        k.add("box", sorted((sx * 0.42, sx * 0.36)), (-0.3, 0.3), (-0.5, 0.05), 2)
    return k.add("box", F, F, (0.05, 0.5), 1).add("box", (-0.4, 0.4), (-0.5, 0.5), (0.15, 0.4), 3).parts


def _bollard(k: _Kit) -> list[Part]:  # a post with a reflective band and a dome
    return k.add("cyl", F, F, (-0.5, 0.15), 0).add("cyl", F, F, (0.15, 0.3), 3).add(
        "sphere", F, F, (0.1, 0.5), 0).parts


def _trash_bin(k: _Kit) -> list[Part]:  # a flared bin and its lid
    return k.add("cyl", F, F, (-0.5, 0.42), 0, radii=(0.82, 0.98)).add("cyl", F, F, (0.42, 0.5), 2).parts


def _vehicle(k: _Kit, wheel: float, cabin: float) -> list[Part]:  # car, toy car: body, cabin, four wheels
    d = min(wheel * k.size[2], 0.2 * k.size[0])
    dz, dx = d / k.size[2], d / k.size[0]
    low = -0.5 + 0.45 * dz
    mid = min(low + 0.4 * cabin, 0.1)
    k.add("box", F, (-0.45, 0.45), (low, mid), 0)
    k.add("box", (-0.28, 0.22), (-0.4, 0.4), (mid, 0.5), 1)
    for cx in (-0.32, 0.32):
        for sy in (-1, 1):
            k.add("cyly", (cx - dx / 2, cx + dx / 2), sorted((sy * 0.5, sy * 0.36)), (-0.5, -0.5 + dz), 2)
    return k.parts


def _car(k: _Kit) -> list[Part]:
    return _vehicle(k, 0.42, 1.0)


def _cart(k: _Kit) -> list[Part]:  # an open basket on four wheels, a handle at -x
    dz = k.frac(min(0.16, 0.3 * k.size[2]), 2)
    dx = k.frac(min(0.16, 0.3 * k.size[2]), 0)
    b0 = -0.5 + dz * 1.2
    t = k.frac(0.03, 0, 0.1), k.frac(0.03, 1, 0.1)
    k.add("box", (-0.35, 0.5), F, (b0, b0 + 0.06), 0)
    for s in (-1, 1):
        k.add("box", (-0.35, 0.5), sorted((s * 0.5, s * (0.5 - t[1]))), (b0, 0.3), 0)
    k.add("box", sorted((0.5, 0.5 - t[0])), (-0.5 + t[1], 0.5 - t[1]), (b0, 0.3), 0)
    k.add("box", (-0.35, -0.35 + t[0]), (-0.5 + t[1], 0.5 - t[1]), (b0, 0.3), 0)
    for cx in (-0.3 + dx / 2, 0.48 - dx / 2):
        for sy in (-1, 1):
            k.add("cyly", (cx - dx / 2, cx + dx / 2), sorted((sy * 0.46, sy * 0.34)), (-0.5, -0.5 + dz), 2)
    for sy in (-1, 1):
        k.add("box", (-0.5, -0.44), sorted((sy * 0.4, sy * 0.34)), (b0, 0.5), 2)
    return k.add("box", (-0.5, -0.44), (-0.4, 0.4), (0.44, 0.5), 1).parts


def _bicycle(k: _Kit) -> list[Part]:  # two wheels, a frame, a saddle, handlebars across
    d = min(0.68 * k.size[2], 0.42 * k.size[0])
    dz, dx = d / k.size[2], d / k.size[0]
    hub = -0.5 + dz / 2
    for x0 in (-0.5, 0.5 - dx):
        k.add("cyly", (x0, x0 + dx), (-0.12, 0.12), (-0.5, -0.5 + dz), 2)
        k.add("cyly", (x0 + dx * 0.3, x0 + dx * 0.7), (-0.14, 0.14), (hub - dz * 0.2, hub + dz * 0.2), 0)
    rear, front = -0.5 + dx / 2, 0.5 - dx / 2
    k.add("box", (rear, front - 0.1), (-0.05, 0.05), (hub + 0.1, hub + 0.16), 0)
    k.add("box", (rear, -0.12), (-0.05, 0.05), (hub - 0.03, hub + 0.03), 0)
    k.add("box", (-0.16, -0.1), (-0.05, 0.05), (hub, 0.42), 0)
    k.add("box", (-0.26, -0.02), (-0.25, 0.25), (0.42, 0.5), 2)
    k.add("box", (front - 0.12, front - 0.06), (-0.05, 0.05), (hub, 0.44), 0)
    return k.add("box", (front - 0.14, front - 0.04), F, (0.44, 0.5), 2).parts


def _scooter(k: _Kit) -> list[Part]:  # a deck on two wheels, a stem and handlebars across
    d = min(0.25 * k.size[2], 0.2 * k.size[0])
    dz, dx = d / k.size[2], d / k.size[0]
    for x0 in (-0.5, 0.5 - dx):
        k.add("cyly", (x0, x0 + dx), (-0.12, 0.12), (-0.5, -0.5 + dz), 2)
    k.add("box", (-0.5 + dx * 0.6, 0.5 - dx * 0.6), (-0.3, 0.3), (-0.5 + dz * 0.55, -0.5 + dz * 0.85), 0)
    k.add("box", (0.34, 0.4), (-0.06, 0.06), (-0.5 + dz * 0.85, 0.44), 1)
    return k.add("box", (0.3, 0.44), F, (0.44, 0.5), 2).parts


def _robot_vacuum(k: _Kit) -> list[Part]:  # a disc with a bumper and a button
    return k.add("cyl", F, F, (-0.5, 0.35), 0).add("cyl", (-0.5, 0.5), (-0.5, 0.5), (-0.3, -0.05), 2,
                                                     radii=(1.0, 1.0)).add(
        "cyl", (-0.12, 0.12), (0.2, 0.44), (0.35, 0.5), 1).parts


def _ball(k: _Kit) -> list[Part]:
    return k.add("sphere", F, F, F, 0).parts


def _apple(k: _Kit) -> list[Part]:
    return k.add("sphere", F, F, (-0.5, 0.42), 0).add("cyl", (-0.05, 0.05), (-0.05, 0.05), (0.3, 0.5), 2).parts


def _cup(k: _Kit) -> list[Part]:  # a body and a handle at +x
    k.add("cyl", (-0.5, 0.26), F, (-0.5, 0.5), 0, radii=(0.85, 1.0))
    k.add("box", (0.16, 0.5), (-0.06, 0.06), (0.18, 0.3), 1)
    k.add("box", (0.16, 0.5), (-0.06, 0.06), (-0.3, -0.18), 1)
    return k.add("box", (0.4, 0.5), (-0.06, 0.06), (-0.18, 0.18), 1).parts


def _bowl(k: _Kit) -> list[Part]:  # a flared bowl, a dark inside
    return k.add("cyl", F, F, (-0.5, 0.4), 0, radii=(0.55, 1.0)).add(
        "cyl", (-0.44, 0.44), (-0.44, 0.44), (0.4, 0.5), 2).parts


def _plate(k: _Kit) -> list[Part]:  # a rim and a pale centre
    return k.add("cyl", F, F, (-0.5, 0.3), 0, radii=(0.7, 1.0)).add(
        "cyl", (-0.33, 0.33), (-0.33, 0.33), (0.3, 0.5), 3).parts


def _bottle(k: _Kit) -> list[Part]:  # a body, shoulder, neck and cap
    k.add("cyl", F, F, (-0.5, 0.15), 0).add("cyl", F, F, (0.15, 0.3), 0, radii=(1.0, 0.4))
    return k.add("cyl", (-0.2, 0.2), (-0.2, 0.2), (0.3, 0.42), 0).add(
        "cyl", (-0.24, 0.24), (-0.24, 0.24), (0.42, 0.5), 1).parts


def _vase(k: _Kit) -> list[Part]:  # a belly, a waist, a lip
    k.add("cyl", F, F, (-0.5, -0.05), 0, radii=(0.6, 1.0)).add("cyl", F, F, (-0.05, 0.35), 0, radii=(1.0, 0.45))
    return k.add("cyl", (-0.35, 0.35), (-0.35, 0.35), (0.35, 0.5), 1, radii=(0.65, 1.0)).parts


def _candle(k: _Kit) -> list[Part]:  # a pale stick and a dark wick
    return k.add("cyl", F, F, (-0.5, 0.4), 3).add("cyl", (-0.1, 0.1), (-0.1, 0.1), (0.4, 0.5), 2).parts


def _book(k: _Kit) -> list[Part]:  # covers, a spine along -x, pale pages
    k.add("box", F, F, (-0.5, -0.35), 0).add("box", F, F, (0.35, 0.5), 0)
    return k.add("box", (-0.5, -0.44), F, (-0.35, 0.35), 0).add("box", (-0.44, 0.47), (-0.47, 0.47),
                                                                   (-0.35, 0.35), 3).parts


def _phone(k: _Kit) -> list[Part]:  # a dark slab with a pale screen on top
    return k.add("box", F, F, (-0.5, 0.3), 2).add("box", (-0.42, 0.42), (-0.44, 0.44), (0.3, 0.5), 3).parts


def _remote(k: _Kit) -> list[Part]:  # a body and buttons
    k.add("box", F, F, (-0.5, 0.2), 2)
    for y in (-0.3, 0.0, 0.25):
        k.add("box", (-0.25, 0.25), (y - 0.06, y + 0.06), (0.2, 0.5), 1)
    return k.parts


BUILDERS: dict[str, Callable[[_Kit], list[Part]]] = {
    "box": _box, "crate": _crate, "table": _table, "dining table": _table, "desk": _desk,
    "side table": _side_table, "picnic table": _picnic_table, "stool": _stool, "chair": _chair, "bench": _bench,
    "sofa": lambda k: _upholstered(k, 3), "armchair": lambda k: _upholstered(k, 1), "bed": _bed,
    "shelf": lambda k: _shelf(k, 3, False), "bookcase": lambda k: _shelf(k, 4, True),
    "cabinet": lambda k: _drawers(k, 2, False), "dresser": lambda k: _drawers(k, 4, False),
    "nightstand": lambda k: _drawers(k, 2, True), "refrigerator": _refrigerator, "washing machine": _washing_machine,
    "tv": _tv, "whiteboard": lambda k: _board(k, False), "floor mirror": lambda k: _board(k, True),
    "radiator": _radiator, "rug": _rug, "piano": _piano, "bathtub": _bathtub, "ottoman": _ottoman,
    "suitcase": _suitcase, "basket": _basket, "fan": _fan, "speaker": _speaker, "printer": _printer,
    "coat rack": _coat_rack, "guitar": _guitar, "aquarium": _aquarium, "lamp": _lamp, "lamp post": _lamp_post,
    "plant": _plant, "tree": _tree, "planter": _planter, "shed": _shed, "mailbox": _mailbox, "sign": _sign,
    "bollard": _bollard, "trash bin": _trash_bin, "car": _car, "toy car": lambda k: _vehicle(k, 0.5, 1.0),
    "cart": _cart, "bicycle": _bicycle, "scooter": _scooter, "robot vacuum": _robot_vacuum, "ball": _ball,
    "apple": _apple, "cup": _cup, "bowl": _bowl, "plate": _plate, "bottle": _bottle, "vase": _vase,
    "candle": _candle, "book": _book, "phone": _phone, "remote": _remote,
}
