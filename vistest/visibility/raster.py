"""Numba kernels of the visibility engine: exact silhouettes, box occlusion, the observed-depth test.

Conventions (shared with :mod:`vistest.visibility.table`):

* Camera coordinates are OpenCV (x right, y down, z forward), metres.
* Pixel coordinates are OpenCV: integer coordinates are pixel centres, so the image
  of W x H pixels is the rectangle [-0.5, W-0.5] x [-0.5, H-0.5].
* A box is a solid. It is clipped by the near plane z = ``near``; the clipped solid is
  convex, its silhouette is the convex hull of the projections of its vertices (the
  box corners in front of the plane plus the points where box edges cross it).
* The working grid (W_s x H_s samples) spans the same image rectangle; sample (j, i)
  sits at the centre of working pixel (j, i), i.e. at working-resolution pixel
  coordinates (j, i) for intrinsics scaled with :meth:`Intrinsics.scaled`.
* Rasterisation is half-open: sample j is inside a span [xl, xr) when
  xl <= j < xr, and likewise for rows, so faces that share an edge never both
  claim a sample on it.
* The z-buffer holds inverse depth 1/z (0 = empty); a larger value is nearer. In
  ``boxes`` occlusion a box can show through the boxes that contain it (``contains[a,
  b]``: box a does not hide box b). Boxes in no such pair go to a plain z-buffer, drawn
  first; the others ("involved") are resolved per sample from their surfaces in front of the
  plain front, nearest first: the first box shows, and each box that every box before it
  contains. When ``kd = 1 +`` the largest number of containers of any box is at most
  :data:`KBUFFER_LAYERS`, a *k-buffer* keeps the ``kd`` nearest (enough: a box with more
  surfaces in front of it has a non-container in front); nested deeper, uncapped per-sample
  lists hold them all (rows listed in bands of bounded memory). Both are exact
  (:func:`_kbuffer_boxes`, :func:`_listed_boxes`).
* With observed geometry (a depth row per frame), boxes do not hide each other at all:
  a sample of a box's silhouette is visible unless the observed depth is nearer than
  the box's *entry* surface (where the ray enters the solid; the near plane when the
  camera is inside the box) by more than the tolerance.

Box corners are numbered by bits: corner k has local sign (-1)^(1 - bit_b(k)) on
axis b (bit 0 = x, bit 1 = y, bit 2 = z).

:func:`clip_project_box` is the one place a box is clipped at the near plane and
projected: the silhouettes, the z-buffer and the drawn overlays (:mod:`vistest.look.overlay`)
all take their vertices from it.

Compiled kernels are cached on disk (Numba's cache: ``__pycache__`` beside this file, else
``$NUMBA_CACHE_DIR`` or the user's cache folder); where none is writable (a read-only install
without a writable home) :func:`njit_cached` compiles without the cache, with a one-line warning.
"""
from __future__ import annotations

import math
import sys

import numpy as np
from numba import njit, prange

_warned_no_cache: list[bool] = []


def njit_cached(**options):
    """``numba.njit(cache=True, **options)``; where Numba finds no writable cache location
    (it raises "cannot cache function" when the function is defined), the function is compiled
    without the on-disk cache instead (compiled again in every process), and one line says so
    on stderr, once per process."""
    def decorate(f):
        try:
            return njit(cache=True, **options)(f)
        except RuntimeError as e:
            if "cannot cache function" not in str(e):
                raise
            if not _warned_no_cache:
                _warned_no_cache.append(True)
                sys.stderr.write(f"vistest: warning: Numba cannot cache compiled code (no writable __pycache__ "
                                 f"beside {f.__module__}, $NUMBA_CACHE_DIR or user cache folder); compiling on "
                                 f"every start\n")
            return njit(cache=False, **options)(f)
    return decorate


# Faces as corner cycles, with the local axis and sign of their outward normal.
FACES = np.array([[0, 2, 6, 4], [1, 3, 7, 5], [0, 1, 5, 4], [2, 3, 7, 6], [0, 1, 3, 2], [4, 5, 7, 6]], np.int64)
FACE_AXIS = np.array([0, 0, 1, 1, 2, 2], np.int64)
FACE_SIGN = np.array([-1.0, 1.0, -1.0, 1.0, -1.0, 1.0])
# The 12 edges (corner pairs differing in one bit, lower corner first) and a lookup.
EDGES = np.array([(k, k | (1 << b)) for k in range(8) for b in range(3) if not k & (1 << b)], np.int64)
EDGE_ID = np.full((8, 8), -1, np.int64)
for _e, (_a, _b) in enumerate(EDGES):
    EDGE_ID[_a, _b] = EDGE_ID[_b, _a] = _e

MAXV = 64  # vertex capacity of the polygon work buffers (a clipped hull has <= 18)
# Integer constants the kernels pass to other kernels: a literal 0 or 1 in a call (or a counter that
# starts at one) would make Numba compile the callee once more for Literal[int](0) beside int64 (twice
# the compile time on a first run, issue #47); np.int64(...) is typed int64.
ZERO = np.int64(0)
ONE = np.int64(1)


@njit_cached()
def convex_hull(px, py, n, hx, hy):
    """Convex hull (Andrew's monotone chain) of n points, counter-clockwise in (x, y).

    Writes the hull into hx, hy and returns its vertex count (collinear points dropped).
    """
    idx = np.arange(n)  # insertion sort by (x, y): n <= 20
    for a in range(1, n):
        v = idx[a]
        b = a - 1
        while b >= 0 and (px[idx[b]] > px[v] or (px[idx[b]] == px[v] and py[idx[b]] > py[v])):
            idx[b + 1] = idx[b]
            b -= 1
        idx[b + 1] = v
    m = 0
    for k in range(n):  # lower hull
        p = idx[k]
        while m >= 2 and ((hx[m - 1] - hx[m - 2]) * (py[p] - hy[m - 2])
                          - (hy[m - 1] - hy[m - 2]) * (px[p] - hx[m - 2])) <= 0.0:
            m -= 1
        hx[m] = px[p]
        hy[m] = py[p]
        m += 1
    lower = m + 1
    for k in range(n - 2, -1, -1):  # upper hull
        p = idx[k]
        while m >= lower and ((hx[m - 1] - hx[m - 2]) * (py[p] - hy[m - 2])
                              - (hy[m - 1] - hy[m - 2]) * (px[p] - hx[m - 2])) <= 0.0:
            m -= 1
        hx[m] = px[p]
        hy[m] = py[p]
        m += 1
    return max(m - 1, 0)


@njit_cached()
def _clip_halfplane(xs, ys, n, a, b, c, ox, oy):
    """Sutherland-Hodgman: keep the part of polygon (xs, ys)[:n] with a*x + b*y + c >= 0."""
    m = 0
    for k in range(n):
        x0, y0 = xs[k], ys[k]
        x1, y1 = xs[(k + 1) % n], ys[(k + 1) % n]
        d0 = a * x0 + b * y0 + c
        d1 = a * x1 + b * y1 + c
        if d0 >= 0.0:
            ox[m] = x0
            oy[m] = y0
            m += 1
        if (d0 >= 0.0) != (d1 >= 0.0):
            t = d0 / (d0 - d1)
            ox[m] = x0 + t * (x1 - x0)
            oy[m] = y0 + t * (y1 - y0)
            m += 1
    return m


@njit_cached()
def _clip_rect_area(hx, hy, n, x0, y0, x1, y1, tx, ty, bb):
    """Clip a convex polygon to [x0, x1] x [y0, y1]; return its area, bounds into bb."""
    m = _clip_halfplane(hx, hy, n, 1.0, 0.0, -x0, tx, ty)
    m = _clip_halfplane(tx, ty, m, -1.0, 0.0, x1, hx, hy)
    m = _clip_halfplane(hx, hy, m, 0.0, 1.0, -y0, tx, ty)
    m = _clip_halfplane(tx, ty, m, 0.0, -1.0, y1, hx, hy)
    if m < 3:
        return 0.0
    area = 0.0
    bb[0] = bb[1] = np.inf
    bb[2] = bb[3] = -np.inf
    for k in range(m):
        area += hx[k] * hy[(k + 1) % m] - hx[(k + 1) % m] * hy[k]
        bb[0] = min(bb[0], hx[k])
        bb[1] = min(bb[1], hy[k])
        bb[2] = max(bb[2], hx[k])
        bb[3] = max(bb[3], hy[k])
    return abs(area) * 0.5


@njit_cached()
def _raster(us, vs, n, a0, aj, ai, ws, hs, oid, zk, ik, floor, cur, kd, kr, r0, r1, drow, see_all, vis, vb):
    """Fill a convex polygon of box ``oid`` on the working grid, inverse depth a0 + aj*j + ai*i.

    Only rows r0 <= i < r1 are filled. Without observed depth (``drow`` empty), one of:

    * ``floor`` empty: the polygon is drawn into the plain z-buffer ``zk``/``ik`` (per sample,
      row-major over the grid: the nearest inverse depth and its box);
    * else, at the samples s where the polygon is in front of ``floor[s]`` (the plain front's
      inverse depth; equal counts as behind), the involved boxes' entries (inverse depth,
      ``oid``): with ``kd`` > 0 inserted into the k-buffer ``zk``/``ik`` (``kd`` entries per
      sample, nearest first, over the rectangle ``kr`` = (j0, i0, width) of the grid:
      :func:`_kbuffer_boxes`); else with ``zk`` empty counted (``cur[s] += 1``), or appended to
      the sample's list (slot ``cur[s]`` of ``zk``/``ik``, and ``cur[s]`` moves on:
      :func:`_listed_boxes`).

    With it (``drow``: per sample ``d + tol`` for the frame's observed z-depth d in metres,
    ``inf`` where the depth is missing), each covered sample is tested at once: visible
    unless the observed depth is nearer than the polygon by more than ``tol``, i.e. when
    ``z (d + tol) >= 1`` for the polygon's inverse depth z (no division; missing depth is
    always visible, and so is everything with ``see_all``); visible samples are counted in
    ``vis[oid]`` and bound ``vb[oid]`` (j0, i0, j1, i1).
    Returns the samples covered (in rows r0..r1-1). Edges are evaluated with their endpoints in
    a canonical order so that two faces sharing an edge compute bit-identical span ends.
    """
    vmin = np.inf
    vmax = -np.inf
    for k in range(n):
        vmin = min(vmin, vs[k])
        vmax = max(vmax, vs[k])
    i0 = max(int(math.ceil(vmin)), r0)
    i1 = min(int(math.ceil(vmax)) - 1, r1 - 1)
    observed = drow.shape[0] > 0
    plain = floor.shape[0] == 0
    counting = kd == 0 and zk.shape[0] == 0
    count = 0
    for i in range(i0, i1 + 1):
        xl = np.inf
        xr = -np.inf
        for k in range(n):
            ua, va, ub, vb_ = us[k], vs[k], us[(k + 1) % n], vs[(k + 1) % n]
            if va > vb_ or (va == vb_ and ua > ub):
                ua, va, ub, vb_ = ub, vb_, ua, va
            if va <= i < vb_:
                x = ua + (i - va) * (ub - ua) / (vb_ - va)
                xl = min(xl, x)
                xr = max(xr, x)
        if xl > xr:
            continue
        j0 = max(int(math.ceil(xl)), 0)
        j1 = min(int(math.ceil(xr)) - 1, ws - 1)
        if j1 < j0:
            continue
        row = i * ws
        iz = a0 + ai * i
        count += j1 - j0 + 1
        if observed:
            first = j1 + 1
            last = j0 - 1
            seen = 0
            if see_all:
                first, last, seen = j0, j1, j1 - j0 + 1
            else:
                for j in range(j0, j1 + 1):  # branch-free count (vectorises); the ends are found below
                    seen += (iz + aj * j) * drow[row + j] >= 1.0
                if seen:
                    first = j0
                    while (iz + aj * first) * drow[row + first] < 1.0:
                        first += 1
                    last = j1
                    while (iz + aj * last) * drow[row + last] < 1.0:
                        last -= 1
            if seen:
                vis[oid] += seen
                vb[oid, 0] = min(vb[oid, 0], first)
                vb[oid, 1] = min(vb[oid, 1], i)
                vb[oid, 2] = max(vb[oid, 2], last)
                vb[oid, 3] = max(vb[oid, 3], i)
            continue
        if plain:
            for j in range(j0, j1 + 1):
                z = iz + aj * j
                if z > zk[row + j]:
                    zk[row + j] = z
                    ik[row + j] = oid
            continue
        if counting:
            for j in range(j0, j1 + 1):  # branch-free (vectorises)
                cur[row + j] += iz + aj * j > floor[row + j]
            continue
        if kd > 0:
            for j in range(j0, j1 + 1):
                z = iz + aj * j
                base = ((i - kr[1]) * kr[2] + (j - kr[0])) * kd
                if z > zk[base + kd - 1] and z > floor[row + j]:
                    p = kd - 1
                    while p > 0 and zk[base + p - 1] < z:
                        zk[base + p] = zk[base + p - 1]
                        ik[base + p] = ik[base + p - 1]
                        p -= 1
                    zk[base + p] = z
                    ik[base + p] = oid
            continue
        for j in range(j0, j1 + 1):
            z = iz + aj * j
            if z > floor[row + j]:
                e = cur[row + j]
                cur[row + j] = e + 1
                zk[e] = z
                ik[e] = oid
    return count


@njit_cached(inline="always")
def camera_corners(pw, r, t, near, pc):
    """Camera coordinates of a box's 8 corners: pc[k] = r @ pw[k] + t (metres, OpenCV axes).

    pw: (8, 3) world corners; r, t: world-to-camera rotation (3, 3) and translation (3,).
    Returns how many corners are in front of the near plane (z >= near).
    """
    nfront = 0
    for k in range(8):
        for d in range(3):
            pc[k, d] = r[d, 0] * pw[k, 0] + r[d, 1] * pw[k, 1] + r[d, 2] * pw[k, 2] + t[d]
        if pc[k, 2] >= near:
            nfront += 1
    return nfront


@njit_cached(inline="always")
def clip_project_box(pc, near, fx, fy, cx, cy, cu, cv, eu, ev, px, py):
    """Project a camera-space box clipped to the half-space z >= near: the engine's geometry.

    pc: (8, 3) camera coordinates of the corners (numbering of :func:`vistest.geometry.box_corners`).
    Pixel coordinates (OpenCV: integer = pixel centre) for intrinsics (fx, fy, cx, cy) are
    written to cu, cv (8,) for every corner in front of the plane, and to eu, ev (12,) for
    the point where edge e (``EDGES[e]``) crosses z = near; entries of corners behind the
    plane and of edges that do not cross it are left untouched (fill them with NaN first
    to tell them apart). The clipped solid's vertices are exactly these points, also
    listed in px, py (corners in corner order, then crossings in edge order); its edges are
    the kept parts of the 12 box edges plus the near-plane cap. Nothing is projected from
    behind the plane, so nothing is ever mirrored. Returns the vertex count.
    """
    n = np.int64(0)  # typed int64, not Literal[int](0): one specialisation of the callees (ZERO)
    for k in range(8):
        if pc[k, 2] >= near:
            px[n] = fx * pc[k, 0] / pc[k, 2] + cx
            py[n] = fy * pc[k, 1] / pc[k, 2] + cy
            cu[k] = px[n]
            cv[k] = py[n]
            n += 1
    if 0 < n < 8:
        for e in range(EDGES.shape[0]):
            a, b = EDGES[e, 0], EDGES[e, 1]
            za, zb = pc[a, 2], pc[b, 2]
            if (za >= near) != (zb >= near):
                s = (near - za) / (zb - za)
                px[n] = fx * (pc[a, 0] + s * (pc[b, 0] - pc[a, 0])) / near + cx
                py[n] = fy * (pc[a, 1] + s * (pc[b, 1] - pc[a, 1])) / near + cy
                eu[e] = px[n]
                ev[e] = py[n]
                n += 1
    return n


@njit_cached(inline="always")
def _box_frame(pw, r, t, fx, fy, cx, cy, w, h, near, pc, cu, cv, eu, ev, px, py, hx, hy, tx, ty, bb):
    """Camera-space corners and exact projected area (pixels^2) of one box in one frame.

    pw: (8, 3) world corners; r, t: world-to-camera rotation, translation. Fills pc with
    camera coordinates, (cu, cv, eu, ev) as :func:`clip_project_box` does (only when the
    box is in front of the plane and not rejected by the frustum test) and bb with the
    clipped silhouette bounds. Returns the area.
    """
    nfront = camera_corners(pw, r, t, near, pc)
    if nfront == 0:
        return 0.0
    # frustum rejection: all corners outside one side plane (planes through the centre)
    for side in range(4):
        out = 0
        for k in range(8):
            x, y, z = pc[k, 0], pc[k, 1], pc[k, 2]
            if side == 0:
                s = fx * x + (cx + 0.5) * z
            elif side == 1:
                s = -fx * x + (w - 0.5 - cx) * z
            elif side == 2:
                s = fy * y + (cy + 0.5) * z
            else:
                s = -fy * y + (h - 0.5 - cy) * z
            if s < 0.0:
                out += 1
        if out == 8:
            return 0.0
    n = clip_project_box(pc, near, fx, fy, cx, cy, cu, cv, eu, ev, px, py)
    m = convex_hull(px, py, n, hx, hy)
    if m < 3:
        return 0.0
    return _clip_rect_area(hx, hy, m, -0.5, -0.5, w - 0.5, h - 0.5, tx, ty, bb)


@njit_cached()
def _raster_box(pc, axes, r, fxs, fys, cxs, cys, ws, hs, near, oid, zk, ik, floor, cur, kd, kr, r0, r1, drow, vis, vb,
                us, vs, cu, cv, eu, ev, px, py, hx, hy, nrm, off):
    """Rasterise one box (camera-space corners pc) on the working grid; return its sample count.

    Into the plain z-buffer, the k-buffer, counted or listed (rows r0..r1-1), or tested against observed depth
    (see :func:`_raster`); a box that
    contains the camera is entered at the near plane, so with observed depth every
    sample of its silhouette is visible.

    Seen from outside, a box is a solid clipped at z = near: its front faces (camera
    outside the face plane) clipped to z >= near, plus the near-plane cap where it
    straddles the plane. Seen from inside (camera centre inside the box), its surface
    is its inner walls: all six faces, clipped to z >= near. Either way the drawn faces
    partition the silhouette, so the count is the silhouette's sample count.
    """
    # the clipped solid's vertices on the working grid: corners in front of the plane and
    # the points where edges cross it (shared by the faces and the cap)
    n = clip_project_box(pc, near, fxs, fys, cxs, cys, cu, cv, eu, ev, px, py)
    nfront = 0
    for k in range(8):
        if pc[k, 2] >= near:
            nfront += 1
    ncap = n - nfront
    capx = px[nfront:n]
    capy = py[nfront:n]
    # outward normals (camera coords) and plane offsets c = n . p of the six faces;
    # the camera (origin) is inside the box when it is inside every face plane (c > 0)
    inside = True
    for f in range(6):
        ax = FACE_AXIS[f]
        sg = FACE_SIGN[f]
        for d in range(3):
            nrm[f, d] = sg * (r[d, 0] * axes[0, ax] + r[d, 1] * axes[1, ax] + r[d, 2] * axes[2, ax])
        p0 = FACES[f, 0]
        off[f] = nrm[f, 0] * pc[p0, 0] + nrm[f, 1] * pc[p0, 1] + nrm[f, 2] * pc[p0, 2]
        if off[f] <= 0.0:
            inside = False
    count = 0
    for f in range(6):
        c = off[f]
        if (inside and c < 1e-12) or (not inside and c > -1e-12):
            continue  # not a face the camera sees (or edge-on)
        n = np.int64(0)
        for k in range(4):
            a = FACES[f, k]
            b = FACES[f, (k + 1) % 4]
            if pc[a, 2] >= near:
                us[n] = cu[a]
                vs[n] = cv[a]
                n += 1
            if (pc[a, 2] >= near) != (pc[b, 2] >= near):
                e = EDGE_ID[a, b]
                us[n] = eu[e]
                vs[n] = ev[e]
                n += 1
        if n < 3:
            continue
        # 1/z on the face plane at working pixel (j, i) is (n . d) / c, d = ((j-cx)/fx, (i-cy)/fy, 1)
        nx, ny, nz = nrm[f, 0], nrm[f, 1], nrm[f, 2]
        aj = nx / (fxs * c)
        ai = ny / (fys * c)
        a0 = (nz - nx * cxs / fxs - ny * cys / fys) / c
        count += _raster(us, vs, n, a0, aj, ai, ws, hs, oid, zk, ik, floor, cur, kd, kr, r0, r1, drow, inside, vis,
                         vb)
    if not inside and ncap >= 3:
        m = convex_hull(capx, capy, ncap, hx, hy)
        if m >= 3:
            count += _raster(hx, hy, m, 1.0 / near, 0.0, 0.0, ws, hs, oid, zk, ik, floor, cur, kd, kr, r0, r1, drow,
                             inside, vis, vb)  # inside is False here (a variable: no Literal specialisation)
    return count


@njit_cached(inline="always")
def _count(vis, vb, o, j, i):
    """Sample (j, i) shows box o: count it and grow its bounds."""
    vis[o] += 1
    vb[o, 0] = min(vb[o, 0], j)
    vb[o, 1] = min(vb[o, 1], i)
    vb[o, 2] = max(vb[o, 2], j)
    vb[o, 3] = max(vb[o, 3], i)


KBUFFER_LAYERS = 8  # most entries per sample of the k-buffer (16 bytes each): boxes with at most 7 containers
# (k-buffer depth 1 + containers <= 8) are resolved by it in one rasterisation, insertion O(depth) per sample;
# deeper nesting (thousands of mutually containing boxes) goes to uncapped per-sample lists instead
LIST_ENTRIES = 1 << 22  # entries the per-sample lists hold at once per frame (16 bytes each: 64 MiB per frame
# being computed, one frame per thread): the grid's rows are listed in bands of at most this many entries (a
# row is never split), so memory stays bounded however many boxes overlap


@njit_cached()
def kbuffer_depth(contains):
    """Entries per sample a k-buffer needs for the ``boxes`` rule: 1 + the most containers any box
    has in any geometry (a box with more surfaces in front of it than that has a non-container in
    front: hidden). ``contains`` (G, O, O) bool, ``contains[g, a, b]``: box a does not hide box b
    in geometry g; (0, O, O) = none."""
    kd = 1
    for g in range(contains.shape[0]):
        for b in range(contains.shape[2]):
            n = 1
            for a in range(contains.shape[1]):
                if contains[g, a, b] and a != b:
                    n += 1
            kd = max(kd, n)
    return kd


@njit_cached(parallel=True)
def containee_bits(contains, loc, ni):
    """Bit sets of the ``boxes`` rule: (G, ni, ceil(ni / 64)) int64, bit m of row l set when the
    involved box numbered l contains the one numbered m (``contains[g, a, b]``, a != b); ``loc``
    (O,) numbers the involved boxes 0..ni-1, -1 for the others."""
    nw = (ni + 63) // 64
    no = loc.shape[0]
    bits = np.zeros((contains.shape[0], ni, nw), np.int64)
    for g in prange(contains.shape[0]):
        for a in range(no):
            la = loc[a]
            if la < 0:
                continue
            for b in range(no):
                lb = loc[b]
                if lb >= 0 and a != b and contains[g, a, b]:
                    bits[g, la, lb >> 6] |= np.int64(1) << np.int64(lb & 63)
    return bits


@njit_cached()
def _sort_entries(ez, eo, a, b):
    """Sort entries a..b-1 of one sample's list nearest first: inverse depth descending, ties by
    box index ascending (boxes are listed in index order, so a stable sort on depth gives it)."""
    if b - a <= 32:  # insertion sort, stable
        for x in range(a + 1, b):
            z = ez[x]
            o = eo[x]
            y = x
            while y > a and (ez[y - 1] < z or (ez[y - 1] == z and eo[y - 1] > o)):
                ez[y] = ez[y - 1]
                eo[y] = eo[y - 1]
                y -= 1
            ez[y] = z
            eo[y] = o
        return
    idx = np.argsort(-ez[a:b], kind="mergesort")
    tz = ez[a:b][idx]
    to = eo[a:b][idx]
    ez[a:b] = tz
    eo[a:b] = to


@njit_cached()
def _walk_list(ez, eo, a, b, loc, bits, iset, vis, vb, j, i):
    """Resolve one sample's sorted list a..b-1 (the ``boxes`` rule): its first box shows, and each
    later box o shows when every box before it contains o. ``iset`` (ceil(ni / 64) words) holds I,
    the boxes contained by all boxes walked so far (rows of ``bits`` ANDed, ``loc`` numbering
    them); the walk stops when I is empty: nothing behind can show. Shown boxes are counted at
    sample (j, i) (:func:`_count`); returns the innermost (farthest) one."""
    o = eo[a]
    _count(vis, vb, o, j, i)
    shown = o
    nw = iset.shape[0]
    row = bits[loc[o]]
    left = np.int64(0)
    for w in range(nw):
        iset[w] = row[w]
        left |= row[w]
    e = a + 1
    while e < b and left != 0:
        o = eo[e]
        m = loc[o]
        if (iset[m >> 6] >> np.int64(m & 63)) & np.int64(1):
            _count(vis, vb, o, j, i)
            shown = o
        row = bits[m]
        left = np.int64(0)
        for w in range(nw):
            iset[w] &= row[w]
            left |= iset[w]
        e += 1
    return shown


@njit_cached()
def _kbuffer_boxes(cf, af, r, t, fxs, fys, cxs, cys, sx, sy, ws, hs, near, inview, hull_bb, loc, bits, z0, cnt, kd,
                   vis, vb, sil, lab, pc, us, vs, cu, cv, eu, ev, px, py, hx, hy, nrm, off):
    """The ``boxes`` rule for the involved boxes in view (``inview``) when ``kd`` (the k-buffer
    depth, :func:`kbuffer_depth`) is at most :data:`KBUFFER_LAYERS`: one rasterisation into a
    k-buffer that keeps, per sample, the ``kd`` nearest of their surfaces in front of the plain
    front ``z0`` (equal counts as behind), nearest first (ties: the lower box index, drawn first),
    over the samples their hulls may reach (plus one); each sample's entries are then walked
    (:func:`_walk_list`). Exact: a surface behind the first ``kd`` cannot show.

    Fills ``cnt`` (each sample's entries), ``sil`` (silhouette samples of each box in view),
    ``vis``/``vb`` (shown samples), ``lab`` (ws*hs, or empty: the innermost shown box of each
    sample with entries). ``hull_bb`` (O, 4): native hull bounds; ``sx``, ``sy``: working samples
    per native pixel."""
    no = inview.shape[0]
    kx0, ky0, kx1, ky1 = ws, hs, -1, -1
    for o in range(no):
        if inview[o]:
            kx0 = min(kx0, max(int(math.floor((hull_bb[o, 0] + 0.5) * sx - 0.5)) - 1, 0))
            ky0 = min(ky0, max(int(math.floor((hull_bb[o, 1] + 0.5) * sy - 0.5)) - 1, 0))
            kx1 = max(kx1, min(int(math.ceil((hull_bb[o, 2] + 0.5) * sx - 0.5)) + 1, ws - 1))
            ky1 = max(ky1, min(int(math.ceil((hull_bb[o, 3] + 0.5) * sy - 0.5)) + 1, hs - 1))
    if kx1 < kx0 or ky1 < ky0:
        return
    kr = np.array([kx0, ky0, kx1 - kx0 + 1], np.int64)
    nk = kr[2] * (ky1 - ky0 + 1) * kd
    zk = np.zeros(nk)
    ik = np.full(nk, -1, np.int64)
    for o in range(no):
        if inview[o]:
            camera_corners(cf[o], r, t, near, pc)
            sil[o] = _raster_box(pc, af[o], r, fxs, fys, cxs, cys, ws, hs, near, o, zk, ik, z0, cnt, kd, kr, ZERO, hs,
                                 np.zeros(0), vis, vb, us, vs, cu, cv, eu, ev, px, py, hx, hy, nrm, off)
    iset = np.empty(bits.shape[1], np.int64)
    for i in range(ky0, ky1 + 1):
        for j in range(kx0, kx1 + 1):
            base = ((i - ky0) * kr[2] + (j - kx0)) * kd
            n = 0
            while n < kd and ik[base + n] >= 0:
                n += 1
            k = i * ws + j
            cnt[k] = n
            if n == 0:
                continue
            shown = ik[base]
            if n == 1:  # one box: it shows (most samples)
                _count(vis, vb, shown, j, i)
            else:
                shown = _walk_list(zk, ik, base, base + n, loc, bits, iset, vis, vb, j, i)
            if lab.shape[0] > 0:
                lab[k] = shown


@njit_cached()
def _listed_boxes(cf, af, r, t, fxs, fys, cxs, cys, sy, ws, hs, near, inview, hull_bb, loc, bits, z0, cnt, budget,
                  vis, vb, sil, lab, pc, us, vs, cu, cv, eu, ev, px, py, hx, hy, nrm, off):
    """The ``boxes`` rule for the involved boxes in view (``inview``) when they nest deeper than
    :data:`KBUFFER_LAYERS`: count, list, sort, walk.

    Every surface sample of an involved box in front of the plain front (``z0``: inverse depth
    per sample, already drawn; equal counts as behind) is an entry (inverse depth, box) of its
    sample's list, and none is dropped: each list is sorted nearest first
    (:func:`_sort_entries`) and walked (:func:`_walk_list`). Exact for any number of
    overlapping boxes: no cap on a sample's entries, so nothing is approximated (5,000 mutually
    containing boxes list up to all 5,000 at a sample, ~1,600 on average, and show up to ~300).
    Cost: two rasterisations of the involved boxes (count, then list), a sort of each list and
    the walks, O(entries x (log entries + involved boxes / 64)); memory at most ``budget``
    entries (or a row's, when more): rows are listed in bands, a box only into the bands its
    hull's rows meet.

    Fills ``cnt``, ``sil``, ``vis``/``vb`` and ``lab`` as :func:`_kbuffer_boxes` does;
    ``hull_bb`` (O, 4): native hull bounds, ``sy``: working samples per native pixel (rows).
    """
    no = inview.shape[0]
    empty_z = np.zeros(0)
    empty_i = np.zeros(0, np.int64)
    no_kr = np.zeros(3, np.int64)
    for o in range(no):  # count the entries of each sample (and each box's silhouette samples)
        if inview[o]:
            camera_corners(cf[o], r, t, near, pc)
            sil[o] = _raster_box(pc, af[o], r, fxs, fys, cxs, cys, ws, hs, near, o, empty_z, empty_i, z0, cnt, ZERO,
                                 no_kr, ZERO, hs, empty_z, vis, vb, us, vs, cu, cv, eu, ev, px, py, hx, hy, nrm, off)
    rows = np.zeros(hs, np.int64)
    for i in range(hs):
        for j in range(ws):
            rows[i] += cnt[i * ws + j]
    size = 0
    for i in range(hs):
        size = max(size, rows[i])
    size = max(min(rows.sum(), budget), size)
    ez = np.empty(size)
    eo = np.empty(size, np.int64)
    cur = np.empty(ws * hs, np.int64)
    iset = np.empty(bits.shape[1], np.int64)
    b0 = ZERO
    while b0 < hs:  # bands of rows b0..b1-1 of at most ``budget`` entries (at least one row)
        b1 = b0 + 1
        n = rows[b0]
        while b1 < hs and n + rows[b1] <= budget:
            n += rows[b1]
            b1 += 1
        if n > 0:
            e = 0
            for k in range(b0 * ws, b1 * ws):
                cur[k] = e
                e += cnt[k]
            for o in range(no):
                if not inview[o]:
                    continue
                if (math.floor((hull_bb[o, 1] + 0.5) * sy - 0.5) - 1 >= b1
                        or math.ceil((hull_bb[o, 3] + 0.5) * sy - 0.5) + 1 < b0):
                    continue  # the box's hull does not reach the band
                camera_corners(cf[o], r, t, near, pc)
                _raster_box(pc, af[o], r, fxs, fys, cxs, cys, ws, hs, near, o, ez, eo, z0, cur, ZERO, no_kr, b0, b1,
                            empty_z, vis, vb, us, vs, cu, cv, eu, ev, px, py, hx, hy, nrm, off)
            for i in range(b0, b1):
                for j in range(ws):
                    k = i * ws + j
                    if cnt[k] == 0:
                        continue
                    a = cur[k] - cnt[k]
                    _sort_entries(ez, eo, a, cur[k])
                    shown = _walk_list(ez, eo, a, cur[k], loc, bits, iset, vis, vb, j, i)
                    if lab.shape[0] > 0:
                        lab[k] = shown
        b0 = b1


def visibility_kernel(w2c, kin, valid, geom, corners, axes, w, h, ws, hs, near, raster, depth, depth_tol, contains,
                      out_proj, out_vis, out_bbox, out_labels=None, list_entries=LIST_ENTRIES,
                      kbuffer_layers=KBUFFER_LAYERS) -> None:
    """:func:`visibility_kernel_jit` with its arguments given one type each (float64 and int64 arrays,
    C order; Python numbers as int64 / float64 / bool; ``out_labels`` None as an empty (0, 0)
    array), so that every caller (every occlusion mode, the overlay's labels) runs the one compiled
    specialisation: compiled once, about half the first run's compile time (issue #47). The
    ``out_*`` arrays are written in place and must already be float64 (labels: int64), C order."""
    for name, a, dt in (("out_proj", out_proj, np.float64), ("out_vis", out_vis, np.float64),
                        ("out_bbox", out_bbox, np.float64)):
        if a.dtype != dt or not a.flags.c_contiguous:
            raise TypeError(f"visibility_kernel: {name}: expected a C-ordered {np.dtype(dt).name} array")
    labels = np.zeros((0, 0), np.int64) if out_labels is None else out_labels
    if labels.dtype != np.int64 or not labels.flags.c_contiguous:
        raise TypeError("visibility_kernel: out_labels: expected a C-ordered int64 array")
    f64 = np.ascontiguousarray
    visibility_kernel_jit(f64(w2c, np.float64), f64(kin, np.float64), f64(valid, np.bool_), f64(geom, np.int64),
                       f64(corners, np.float64), f64(axes, np.float64), int(w), int(h), int(ws), int(hs),
                       float(near), bool(raster), f64(np.reshape(depth, (depth.shape[0], -1)) if depth.size else
                                                      np.zeros((0, 0)), np.float64), float(depth_tol),
                       f64(contains, np.bool_), out_proj, out_vis, out_bbox, labels, int(list_entries),
                       int(kbuffer_layers))


@njit_cached(parallel=True)
def visibility_kernel_jit(w2c, kin, valid, geom, corners, axes, w, h, ws, hs, near, raster, depth, depth_tol, contains,
                       out_proj, out_vis, out_bbox, out_labels, list_entries, kbuffer_layers):
    """Fill projected, visible (fractions of image area) and bbox for F frames x O boxes.

    w2c (F, 3, 4) world-to-camera; kin (F, 4) native fx, fy, cx, cy; valid (F,);
    box geometry: G rows of corners (G, O, 8, 3) and axes (G, O, 3, 3) in the pose world,
    frame f using row ``geom[f]`` ((F,) int64; a static scene: one row, every frame 0;
    moving boxes: a row per frame); a box absent from a row has NaN corners (never in
    front of the near plane: projected = visible = 0, bbox NaN); (w, h) native size;
    (ws, hs) working grid; raster: False for occlusion "none" (visible = projected).
    depth (F, hs*ws): observed z-depth in metres per sample (<= 0: missing, counts as
    visible): boxes do not hide each other, only the observed surface does (see the module
    docstring); or shape (0, 0): boxes hide each other, except that box a never hides box
    b where ``contains[geom[f], a, b]`` ((G, O, O) bool, or (0, O, O) for no such pair).
    Invalid frames get NaN everywhere.
    ``out_labels``: (0, 0) for none, or (F, hs*ws) int64 that
    receives, for valid frames with ``raster`` and no depth, the index of the box visible
    at each working sample (row-major, sample (j, i) at i*ws + j) or -1; where several are
    visible (a box and the boxes containing it), the innermost: the farthest visible one.
    Other rows are untouched. ``kbuffer_layers``: the k-buffer's cap (:data:`KBUFFER_LAYERS`),
    ``list_entries``: what the lists hold at once per frame (:data:`LIST_ENTRIES`): speed and
    memory only, the answer depends on neither (tests/test_raster_overlap.py).
    """
    nf = w2c.shape[0]
    no = corners.shape[1]
    sx = ws / w
    sy = hs / h
    use_depth = depth.shape[0] > 0
    use_contains = contains.shape[0] > 0
    has_labels = out_labels.shape[0] > 0
    loc = np.full(no, -1, np.int64)  # the involved boxes (in a containment pair), numbered
    ni = ZERO
    if raster and use_contains and not use_depth:
        involved = np.zeros(no, np.bool_)
        for g in range(contains.shape[0]):
            for a in range(no):
                for b in range(no):
                    if contains[g, a, b] and a != b:
                        involved[a] = True
                        involved[b] = True
        for o in range(no):
            if involved[o]:
                loc[o] = ni
                ni += 1
    bits = containee_bits(contains, loc, ni)
    kd = kbuffer_depth(contains) if ni > 0 else 1
    nbuf = ws * hs if raster and not use_depth else 0
    no_depth = np.zeros(0)
    no_labels = np.zeros(0, np.int64)
    no_kr = np.zeros(3, np.int64)
    for f in prange(nf):
        if not valid[f]:
            for o in range(no):
                out_proj[f, o] = np.nan
                out_vis[f, o] = np.nan
                for q in range(4):
                    out_bbox[f, o, q] = np.nan
            continue
        r = w2c[f, :, :3]
        t = w2c[f, :, 3]
        g = geom[f]
        cf = corners[g]
        af = axes[g]
        fx, fy, cx, cy = kin[f, 0], kin[f, 1], kin[f, 2], kin[f, 3]
        fxs, fys = fx * sx, fy * sy
        cxs, cys = (cx + 0.5) * sx - 0.5, (cy + 0.5) * sy - 0.5
        pc = np.empty((8, 3))
        px = np.empty(MAXV)
        py = np.empty(MAXV)
        hx = np.empty(MAXV)
        hy = np.empty(MAXV)
        tx = np.empty(MAXV)
        ty = np.empty(MAXV)
        us = np.empty(MAXV)
        vs = np.empty(MAXV)
        cu = np.empty(8)
        cv = np.empty(8)
        eu = np.empty(12)
        ev = np.empty(12)
        bb = np.empty(4)
        nrm = np.empty((6, 3))
        off = np.empty(6)
        hull_bb = np.full((no, 4), np.nan)
        sil = np.zeros(no, np.int64)
        vis = np.zeros(no, np.int64)
        vb = np.empty((no, 4))
        for o in range(no):
            vb[o, 0] = vb[o, 1] = np.inf
            vb[o, 2] = vb[o, 3] = -np.inf
        z0 = np.zeros(nbuf)  # plain z-buffer: boxes in no containment pair
        i0 = np.full(nbuf, -1, np.int64)
        drow = no_depth
        if use_depth:  # d + tol per sample, inf where the depth is missing (visible: z (d + tol) >= 1 for z > 0)
            drow = np.empty(ws * hs)
            for k in range(ws * hs):
                d = depth[f, k]
                drow[k] = d + depth_tol if d > 0.0 else np.inf
        area_img = float(w) * float(h)
        inview = np.zeros(no, np.bool_)  # involved boxes in view: drawn after the plain ones
        for o in range(no):
            area = _box_frame(cf[o], r, t, fx, fy, cx, cy, w, h, near, pc, cu, cv, eu, ev, px, py, hx, hy, tx,
                              ty, bb)
            out_proj[f, o] = min(area / area_img, 1.0)
            if area > 0.0:
                for q in range(4):
                    hull_bb[o, q] = bb[q]
                if raster and loc[o] >= 0:
                    inview[o] = True
                elif raster:
                    sil[o] = _raster_box(pc, af[o], r, fxs, fys, cxs, cys, ws, hs, near, o, z0, i0, no_depth, i0, ONE,
                                         no_kr, ZERO, hs, drow, vis, vb, us, vs, cu, cv, eu, ev, px, py, hx, hy, nrm,
                                         off)
        if not raster:
            for o in range(no):
                out_vis[f, o] = out_proj[f, o]
                if out_proj[f, o] <= 0.0:
                    for q in range(4):
                        out_bbox[f, o, q] = np.nan
                    continue
                _bbox_pixels(hull_bb[o], -np.inf, -np.inf, np.inf, np.inf, w, h, out_bbox[f, o])
            continue
        if not use_depth:
            lab = no_labels
            if has_labels:
                out_labels[f, :] = -1
                lab = out_labels[f]
            cnt = np.zeros(ws * hs if inview.any() else 0, np.int64)
            if cnt.shape[0] > 0 and kd <= kbuffer_layers:
                _kbuffer_boxes(cf, af, r, t, fxs, fys, cxs, cys, sx, sy, ws, hs, near, inview, hull_bb, loc, bits[g],
                               z0, cnt, kd, vis, vb, sil, lab, pc, us, vs, cu, cv, eu, ev, px, py, hx, hy, nrm, off)
            elif cnt.shape[0] > 0:
                _listed_boxes(cf, af, r, t, fxs, fys, cxs, cys, sy, ws, hs, near, inview, hull_bb, loc, bits[g], z0,
                              cnt, list_entries, vis, vb, sil, lab, pc, us, vs, cu, cv, eu, ev, px, py, hx, hy, nrm,
                              off)
            for i in range(hs):
                for j in range(ws):
                    k = i * ws + j
                    o = i0[k]
                    if o >= 0 and (cnt.shape[0] == 0 or cnt[k] == 0):  # no involved box in front of it
                        _count(vis, vb, o, j, i)
                        if has_labels:
                            out_labels[f, k] = o
        for o in range(no):
            p = out_proj[f, o]
            if p <= 0.0:
                out_vis[f, o] = 0.0
                for q in range(4):
                    out_bbox[f, o, q] = np.nan
            elif sil[o] == 0:
                # smaller than one working sample: occlusion unknown, counted visible
                out_vis[f, o] = p
                _bbox_pixels(hull_bb[o], -np.inf, -np.inf, np.inf, np.inf, w, h, out_bbox[f, o])
            else:
                out_vis[f, o] = p * min(vis[o] / sil[o], 1.0)
                # visible samples, grown by one working pixel, in native coordinates
                _bbox_pixels(hull_bb[o], (vb[o, 0] - 1.0 + 0.5) / sx - 0.5, (vb[o, 1] - 1.0 + 0.5) / sy - 0.5,
                             (vb[o, 2] + 1.0 + 0.5) / sx - 0.5, (vb[o, 3] + 1.0 + 0.5) / sy - 0.5,
                             w, h, out_bbox[f, o])


@njit_cached()
def _bbox_pixels(hb, lx0, ly0, lx1, ly1, w, h, out):
    """Integer half-open pixel bounds of (hull bounds hb) intersected with [lx0, lx1] x [ly0, ly1].

    Continuous OpenCV coordinates; pixel p spans [p - 0.5, p + 0.5). NaN when empty.
    """
    x0 = max(hb[0], lx0)
    y0 = max(hb[1], ly0)
    x1 = min(hb[2], lx1)
    y1 = min(hb[3], ly1)
    if not (x0 <= x1 and y0 <= y1):
        for q in range(4):
            out[q] = np.nan
        return
    out[0] = max(math.floor(x0 + 0.5), 0.0)
    out[1] = max(math.floor(y0 + 0.5), 0.0)
    out[2] = min(math.ceil(x1 + 0.5), float(w))
    out[3] = min(math.ceil(y1 + 0.5), float(h))


# ---------------------------------------------------------------------------------------
# containment (the ``boxes`` rule: a box never hides a box it contains)
# ---------------------------------------------------------------------------------------
CONTAIN_GRID = 8  # lattice points per axis in the contained box: 8^3 = 512 cell centres


@njit_cached()
def _lattice_count_at_least(a, b, centers, sizes, rots, cell, need, eps):
    """Whether at least ``need`` of box b's lattice points (cell centres ``cell``, in units of
    b's size, in [-0.5, 0.5]) lie inside box a (``|R_a^T (p - c_a)| <= size_a / 2`` per axis).

    Exact against counting every point, but usually without counting: a bound from a's extent
    along each of b's axes rejects; the 8 extreme lattice points inside a (with margin ``eps``
    metres, so rounding cannot matter; the others are their convex combinations) accept;
    otherwise points are counted until the answer is decided (early exit either way).
    """
    g = cell.shape[0]
    total = g * g * g
    if need <= 0:
        return True
    if need > total:
        return False
    ha0, ha1, ha2 = sizes[a, 0] / 2.0, sizes[a, 1] / 2.0, sizes[a, 2] / 2.0
    # 1. reject: a lattice point of b inside a has each b-local coordinate within a's extent along that axis
    bound = 1
    for k in range(3):
        t = 0.0
        e = 0.0
        for d in range(3):
            t += rots[b, d, k] * (centers[a, d] - centers[b, d])
        for j in range(3):
            dot = 0.0
            for d in range(3):
                dot += rots[b, d, k] * rots[a, d, j]
            e += abs(dot) * sizes[a, j] / 2.0
        n_k = 0
        for i in range(g):
            if abs(sizes[b, k] * cell[i] - t) <= e + eps:
                n_k += 1
        bound *= n_k
    if bound < need:
        return False
    # 2. accept: the 8 extreme lattice points inside a with margin eps
    inside_all = True
    for corner in range(8):
        u = np.empty(3)
        for k in range(3):
            u[k] = cell[g - 1] if (corner >> k) & 1 else cell[0]
        for j in range(3):
            loc = 0.0
            for d in range(3):
                p = centers[b, d]
                for k in range(3):
                    p += u[k] * rots[b, d, k] * sizes[b, k]
                loc += rots[a, d, j] * (p - centers[a, d])
            if abs(loc) > sizes[a, j] / 2.0 - eps:
                inside_all = False
                break
        if not inside_all:
            break
    if inside_all:
        return True
    # 3. count, deciding as soon as the answer is known: in a's frame, b's point (i0, i1, i2) is
    #    t + sum_k cell[i_k] * m[:, k] with t = R_a^T (c_b - c_a), m = R_a^T R_b diag(size_b)
    t = np.zeros(3)
    m = np.zeros((3, 3))
    for j in range(3):
        for d in range(3):
            t[j] += rots[a, d, j] * (centers[b, d] - centers[a, d])
            for k in range(3):
                m[j, k] += rots[a, d, j] * rots[b, d, k] * sizes[b, k]
    count = 0
    seen = 0
    for i0 in range(g):
        for i1 in range(g):
            x0 = t[0] + cell[i0] * m[0, 0] + cell[i1] * m[0, 1]
            x1 = t[1] + cell[i0] * m[1, 0] + cell[i1] * m[1, 1]
            x2 = t[2] + cell[i0] * m[2, 0] + cell[i1] * m[2, 1]
            for i2 in range(g):
                seen += 1
                if (abs(x0 + cell[i2] * m[0, 2]) <= ha0 and abs(x1 + cell[i2] * m[1, 2]) <= ha1
                        and abs(x2 + cell[i2] * m[2, 2]) <= ha2):
                    count += 1
                    if count >= need:
                        return True
                elif count + (total - seen) < need:
                    return False
    return count >= need


@njit_cached(parallel=True)
def containment_kernel(centers, sizes, rots, lo, hi, order, cell, need, eps):
    """(O, O) bool ``c[a, b]``: at least ``need`` of box b's lattice points lie inside box a.

    Pairs come from a sweep over the boxes sorted by their lower world x bound (``order``): a
    box meets only the boxes after it whose lower x is below its upper x, and of those only the
    ones whose world-axis bounds ``lo``/``hi`` overlap on every axis (strictly) are tested,
    both ways. Parallel over the sweep's boxes; each unordered pair is written by one thread.
    """
    n = centers.shape[0]
    out = np.zeros((n, n), np.bool_)
    for i in prange(n):
        a = order[i]
        for j in range(i + 1, n):
            b = order[j]
            if lo[b, 0] >= hi[a, 0]:
                break
            if not (lo[b, 1] < hi[a, 1] and hi[b, 1] > lo[a, 1] and lo[b, 2] < hi[a, 2] and hi[b, 2] > lo[a, 2]
                    and hi[b, 0] > lo[a, 0]):
                continue
            out[a, b] = _lattice_count_at_least(a, b, centers, sizes, rots, cell, need, eps)
            out[b, a] = _lattice_count_at_least(b, a, centers, sizes, rots, cell, need, eps)
    return out
