"""The mesh z-buffer: depth and object id per working-grid sample, in Numba (``occlusion="mesh"``).

Conventions (those of :mod:`vistest.visibility.raster`):

* Camera coordinates are OpenCV (x right, y down, z forward), metres; the working grid has
  ``ws x hs`` samples at the centres of the working pixels, i.e. at integer working-pixel
  coordinates for intrinsics scaled as :meth:`vistest.scene.Intrinsics.scaled` does.
* A sample is covered by a triangle when it lies inside or on its edges (edge functions
  >= 0); the nearest covered surface wins (inverse depth 1/z interpolated linearly in
  screen space, which is exact for a plane). Ties keep the triangle drawn first.
* Triangles are clipped against the near plane ``z = near`` in camera space (nothing behind
  the camera is projected or mirrored); triangles whose samples' bounding box misses the grid
  are skipped before any other work (frustum culling).
* **Faces are two-sided by default** (``cull_back=False``): a scan mesh is an open surface
  whose back faces still hide what is behind them (the underside of a table top seen from
  the floor, a wall seen through a reconstruction hole), as the pyrender depth pass did by
  drawing every face in both windings. ``cull_back=True`` drops faces whose normal (right-hand
  rule on the vertex order) points away from the camera: right for closed, outward-wound
  meshes only (docs/visibility.md).
* Object ids: ``face_obj[t]`` is the index of the object face t belongs to, or -1 (walls,
  floor, unannotated surfaces: they hide, they count for nobody); :func:`face_objects` derives
  it from per-vertex ids.

:func:`zbuffer_kernel` runs in parallel over the frames of a chunk (each frame owns its buffers)
and also counts, per frame and object, the samples where the object's own surface is the
nearest: the object's instance share of the image is ``counts / (ws * hs)``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import prange

from .raster import njit_cached


def face_objects(faces: np.ndarray, vertex_obj: np.ndarray) -> np.ndarray:
    """(T,) int32 object index of each face from the per-vertex indices ``vertex_obj`` (V,)
    (-1 = no object): the index at least two of its three vertices share, else its first
    vertex's (ScanNet's segments label vertices; a face across a segment border goes with
    the majority of its corners)."""
    f = np.asarray(faces, np.int64)
    a, b, c = (np.asarray(vertex_obj, np.int64)[f[:, k]] for k in range(3))
    return np.where((b == c) & (a != b), b, a).astype(np.int32)


BLOCK_FACES = 64  # faces per culling block (:func:`face_blocks`)


def face_blocks(verts: np.ndarray, faces: np.ndarray, size: int = BLOCK_FACES
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The mesh in the z-buffer's order: ``(vertex_order, faces, face_order, blocks)``.

    Faces are sorted along a Morton (Z-order) curve of their centroids (10 bits per axis over
    the mesh's bounds: ``face_order``) and cut into runs of ``size`` consecutive faces, which are
    spatially compact. Each run is self-contained: it gets its own copy of the vertices its faces
    use, in one contiguous range (``vertex_order``: new vertex k is a copy of old vertex
    ``vertex_order[k]``; a vertex shared by several runs is copied once per run, unused vertices
    are dropped), so that the kernel projects a run's vertices only when the run is in view and
    reads them from a small scratch. ``faces`` (T, 3) int32 are the sorted faces in the new
    numbering; ``blocks`` (B, 8) float64 holds each run's first face, end face, first vertex, end
    vertex and a world sphere (centre x, y, z, radius, metres) containing its vertices, for
    :func:`zbuffer_kernel` to skip runs out of view."""
    v = np.ascontiguousarray(verts, np.float64)
    f = np.ascontiguousarray(faces, np.int64)
    face_order = np.argsort(_morton_codes(v, f))
    sorted_faces = f[face_order]
    blocks = np.empty(((len(f) + size - 1) // size, 8))
    new_faces = np.empty(sorted_faces.shape, np.int32)
    vertex_order = np.empty(sorted_faces.size, np.int64)
    n = _block_vertices(sorted_faces, len(v), size, new_faces, vertex_order, blocks)
    _block_spheres(v, sorted_faces, size, blocks)
    return vertex_order[:n], new_faces, face_order, blocks


@njit_cached()
def _block_vertices(faces, nv, size, new_faces, vertex_order, blocks):
    """Give each run of ``size`` faces its own vertex range, in order of first use in the run:
    fills ``new_faces``, ``vertex_order`` and columns 2, 3 of ``blocks``; returns the vertex count."""
    seen = np.full(nv, -1, np.int64)  # the run that last copied the vertex
    copy = np.empty(nv, np.int64)  # its index in that run's range
    n = 0
    for b in range(blocks.shape[0]):
        blocks[b, 2] = n
        for t in range(b * size, min((b + 1) * size, faces.shape[0])):
            for k in range(3):
                v = faces[t, k]
                if seen[v] != b:
                    seen[v] = b
                    copy[v] = n
                    vertex_order[n] = v
                    n += 1
                new_faces[t, k] = copy[v]
        blocks[b, 3] = n
    return n


@njit_cached()
def _morton_codes(v, f):
    """Morton (Z-order) code of each face centroid, 10 bits per axis over the centroids' bounds."""
    cen = np.empty((f.shape[0], 3))
    for t in range(f.shape[0]):
        for d in range(3):
            cen[t, d] = (v[f[t, 0], d] + v[f[t, 1], d] + v[f[t, 2], d]) / 3.0
    lo = np.empty(3)
    span = np.empty(3)
    for d in range(3):
        lo[d] = cen[:, d].min()
        span[d] = max(cen[:, d].max() - lo[d], 1e-12)
    code = np.zeros(f.shape[0], np.int64)
    for t in range(f.shape[0]):
        c = 0
        for d in range(3):
            q = min(max(int((cen[t, d] - lo[d]) / span[d] * 1023.0), 0), 1023)
            for bit in range(10):
                c |= ((q >> bit) & 1) << (3 * bit + d)
        code[t] = c
    return code


@njit_cached()
def _block_spheres(v, faces, size, blocks):
    """Fill columns 0, 1 and 4-7 of ``blocks`` (B, 8): first face, end face, centre (bounds middle)
    and radius of each run of ``size`` faces."""
    for b in range(blocks.shape[0]):
        t0, t1 = b * size, min((b + 1) * size, faces.shape[0])
        lo = np.full(3, np.inf)
        hi = np.full(3, -np.inf)
        for t in range(t0, t1):
            for k in range(3):
                for d in range(3):
                    lo[d] = min(lo[d], v[faces[t, k], d])
                    hi[d] = max(hi[d], v[faces[t, k], d])
        r2 = 0.0
        for t in range(t0, t1):
            for k in range(3):
                e = 0.0
                for d in range(3):
                    e += (v[faces[t, k], d] - (lo[d] + hi[d]) / 2) ** 2
                r2 = max(r2, e)
        blocks[b, 0], blocks[b, 1] = t0, t1
        for d in range(3):
            blocks[b, 4 + d] = (lo[d] + hi[d]) / 2
        blocks[b, 7] = math.sqrt(r2) + 1e-9


@njit_cached(inline="always")
def _triangle(u0, v0, q0, u1, v1, q1, u2, v2, q2, ws, hs, cull_back, oid, iz, ids):
    """Draw one projected triangle: vertices (u, v) in working-pixel coordinates with inverse
    depths q; every covered sample nearer than the buffer takes its 1/z and ``oid``. With
    ``cull_back``, a triangle wound clockwise on the screen (its right-hand normal turned away from
    the camera, for fx, fy > 0 in OpenCV's y-down image) is not drawn."""
    j0 = max(int(math.ceil(min(u0, min(u1, u2)))), 0)
    j1 = min(int(math.floor(max(u0, max(u1, u2)))), ws - 1)
    i0 = max(int(math.ceil(min(v0, min(v1, v2)))), 0)
    i1 = min(int(math.floor(max(v0, max(v1, v2)))), hs - 1)
    if (j0 > j1) | (i0 > i1):
        return
    _draw(j0, j1, i0, i1, u0, v0, q0, u1, v1, q1, u2, v2, q2, ws, cull_back, oid, iz, ids)


@njit_cached(inline="always")
def _draw(j0, j1, i0, i1, u0, v0, q0, u1, v1, q1, u2, v2, q2, ws, cull_back, oid, iz, ids):
    """:func:`_triangle` within the samples' bounding box ``j0..j1`` x ``i0..i1`` (inclusive, on the grid).

    ``ids`` has one slot more than the grid (index ``len(ids) - 1``, never read): the sample loop
    has no branch on whether a sample is covered and nearer (LLVM turns a conditional store into
    a jump, mispredicted for most of a small triangle's samples): it writes the nearer of the
    old and new 1/z and sends the object id to the sample when it won, to that spare slot when
    not."""
    area = (u1 - u0) * (v2 - v0) - (v1 - v0) * (u2 - u0)
    if area == 0.0 or (cull_back and area > 0.0):
        return
    inv = 1.0 / abs(area)
    if not (inv < math.inf):  # a sliver of subnormal area: no sample to cover, and 1/z would overflow
        return
    s = 1.0 if area > 0.0 else -1.0  # orient so that the inside has every edge function >= 0
    # edge k (opposite vertex k): e_k(j, i) = ak * i + bk * j + ck, >= 0 inside
    a0, b0 = (u2 - u1) * s, (v1 - v2) * s
    c0 = -a0 * v1 - b0 * u1
    a1, b1 = (u0 - u2) * s, (v2 - v0) * s
    c1 = -a1 * v2 - b1 * u2
    a2, b2 = (u1 - u0) * s, (v0 - v1) * s
    c2 = -a2 * v0 - b2 * u0
    q0, q1, q2 = q0 * inv, q1 * inv, q2 * inv  # 1/z = sum e_k q_k / |area|
    spare = ids.shape[0] - 1
    for i in range(i0, i1 + 1):
        row = i * ws
        r0 = a0 * i + c0
        r1 = a1 * i + c1
        r2 = a2 * i + c2
        for j in range(j0, j1 + 1):
            e0 = r0 + b0 * j
            e1 = r1 + b1 * j
            e2 = r2 + b2 * j
            z = e0 * q0 + e1 * q1 + e2 * q2
            k = row + j
            old = iz[k]
            win = np.int64(min(e0, min(e1, e2)) >= 0.0) & np.int64(z > old)  # covered and nearer: 1, else 0
            iz[k] = max(old, z * win)  # z > old >= 0 when it wins; max(old, 0) = old when not
            ids[spare + win * (k - spare)] = oid


@njit_cached()
def _render_frame(verts, faces, face_obj, blocks, m, fxs, fys, cxs, cys, ws, hs, near, cull_back, iz, ids, pv, pb):
    """Render one frame into ``iz`` (inverse depth, 0 = empty) and ``ids``: world-to-camera
    ``m`` (3, 4), working-grid intrinsics; ``pv`` (n, 4) scratch for the (u, v, 1/z, z) of a
    block's vertices (u, v, 1/z only where z >= near), n the most vertices a block has."""
    # side planes of the view through the camera centre (inside: >= 0), unit normals
    xl, xr = (-0.5 - cxs) / fxs, (ws - 0.5 - cxs) / fxs
    yt, yb = (-0.5 - cys) / fys, (hs - 0.5 - cys) / fys
    nl, nr = 1.0 / math.sqrt(1.0 + xl * xl), 1.0 / math.sqrt(1.0 + xr * xr)
    nt, nb = 1.0 / math.sqrt(1.0 + yt * yt), 1.0 / math.sqrt(1.0 + yb * yb)
    px = np.empty((4, 3))
    pc = np.empty((3, 3))
    for blk in range(blocks.shape[0]):
        bx, by, bz, rad = blocks[blk, 4], blocks[blk, 5], blocks[blk, 6], blocks[blk, 7]
        cx = m[0, 0] * bx + m[0, 1] * by + m[0, 2] * bz + m[0, 3]
        cy = m[1, 0] * bx + m[1, 1] * by + m[1, 2] * bz + m[1, 3]
        cz = m[2, 0] * bx + m[2, 1] * by + m[2, 2] * bz + m[2, 3]
        if (cz + rad < near or (cx - xl * cz) * nl < -rad or (xr * cz - cx) * nr < -rad
                or (cy - yt * cz) * nt < -rad or (yb * cz - cy) * nb < -rad):
            continue
        first = int(blocks[blk, 2])
        for k in range(first, int(blocks[blk, 3])):
            x = m[0, 0] * verts[k, 0] + m[0, 1] * verts[k, 1] + m[0, 2] * verts[k, 2] + m[0, 3]
            y = m[1, 0] * verts[k, 0] + m[1, 1] * verts[k, 1] + m[1, 2] * verts[k, 2] + m[1, 3]
            z = m[2, 0] * verts[k, 0] + m[2, 1] * verts[k, 1] + m[2, 2] * verts[k, 2] + m[2, 3]
            pv[k - first, 3] = z
            if z >= near:
                q = 1.0 / z
                pv[k - first, 0] = fxs * x * q + cxs
                pv[k - first, 1] = fys * y * q + cys
                pv[k - first, 2] = q
                pb[k - first, 0] = int(math.ceil(pv[k - first, 0]))
                pb[k - first, 1] = int(math.floor(pv[k - first, 0]))
                pb[k - first, 2] = int(math.ceil(pv[k - first, 1]))
                pb[k - first, 3] = int(math.floor(pv[k - first, 1]))
        for t in range(int(blocks[blk, 0]), int(blocks[blk, 1])):
            a, b, c = faces[t, 0] - first, faces[t, 1] - first, faces[t, 2] - first
            za, zb, zc = pv[a, 3], pv[b, 3], pv[c, 3]
            fa, fb, fc = za >= near, zb >= near, zc >= near
            if fa and fb and fc:  # the bounding box from the vertices' (ceil, floor) of u and v
                j0 = max(min(pb[a, 0], min(pb[b, 0], pb[c, 0])), 0)
                j1 = min(max(pb[a, 1], max(pb[b, 1], pb[c, 1])), ws - 1)
                i0 = max(min(pb[a, 2], min(pb[b, 2], pb[c, 2])), 0)
                i1 = min(max(pb[a, 3], max(pb[b, 3], pb[c, 3])), hs - 1)
                if (j0 <= j1) & (i0 <= i1):
                    _draw(j0, j1, i0, i1, pv[a, 0], pv[a, 1], pv[a, 2], pv[b, 0], pv[b, 1], pv[b, 2],
                          pv[c, 0], pv[c, 1], pv[c, 2], ws, cull_back, face_obj[t], iz, ids)
                continue
            if not (fa or fb or fc):
                continue
            # straddles the near plane: clip the triangle to z >= near in camera space (Sutherland-Hodgman)
            for e in range(3):
                vk = faces[t, e]
                for d in range(3):
                    pc[e, d] = m[d, 0] * verts[vk, 0] + m[d, 1] * verts[vk, 1] + m[d, 2] * verts[vk, 2] + m[d, 3]
            if cull_back:  # right-hand normal (B - A) x (C - A) turned away from the ray to A
                ex, ey, ez = pc[1, 0] - pc[0, 0], pc[1, 1] - pc[0, 1], pc[1, 2] - pc[0, 2]
                gx, gy, gz = pc[2, 0] - pc[0, 0], pc[2, 1] - pc[0, 1], pc[2, 2] - pc[0, 2]
                nx, ny, nz = ey * gz - ez * gy, ez * gx - ex * gz, ex * gy - ey * gx
                if nx * pc[0, 0] + ny * pc[0, 1] + nz * pc[0, 2] >= 0.0:
                    continue
            n = 0
            for e in range(3):
                zp, zq = pc[e, 2], pc[(e + 1) % 3, 2]
                if zp >= near:
                    px[n, 0], px[n, 1], px[n, 2] = pc[e, 0], pc[e, 1], zp
                    n += 1
                if (zp >= near) != (zq >= near):
                    s = (near - zp) / (zq - zp)
                    px[n, 0] = pc[e, 0] + s * (pc[(e + 1) % 3, 0] - pc[e, 0])
                    px[n, 1] = pc[e, 1] + s * (pc[(e + 1) % 3, 1] - pc[e, 1])
                    px[n, 2] = near
                    n += 1
            u0 = fxs * px[0, 0] / px[0, 2] + cxs
            v0 = fys * px[0, 1] / px[0, 2] + cys
            for k in range(1, n - 1):  # a fan; the clipped polygon keeps the triangle's winding
                _triangle(u0, v0, 1.0 / px[0, 2],
                          fxs * px[k, 0] / px[k, 2] + cxs, fys * px[k, 1] / px[k, 2] + cys, 1.0 / px[k, 2],
                          fxs * px[k + 1, 0] / px[k + 1, 2] + cxs, fys * px[k + 1, 1] / px[k + 1, 2] + cys,
                          1.0 / px[k + 1, 2], ws, hs, False, face_obj[t], iz, ids)


@njit_cached(parallel=True)
def zbuffer_kernel(verts, faces, face_obj, num_objects, blocks, w2c, kin, valid, w, h, ws, hs, near, cull_back,
                   out_depth, out_counts, parts=1):
    """Render F frames of a triangle mesh on the working grid.

    verts (V, 3) world (the poses' world), metres; faces (T, 3) int vertex indices;
    face_obj (T,) int32 object index per face (-1: none), objects ``0 .. num_objects-1``;
    blocks (B, 8) float64 rows (first face, end face, first vertex, end vertex, centre x, y, z,
    radius): consecutive runs of faces, the vertex range their faces use and a world sphere
    holding those vertices (:func:`face_blocks`); a block whose
    sphere lies wholly behind the near plane or outside a side plane of the view is skipped;
    w2c (F, 3, 4) world-to-camera [R | t]; kin (F, 4) native fx, fy, cx, cy; valid (F,);
    (w, h) native size; (ws, hs) working grid; near: near plane (metres); cull_back: drop
    faces turned away from the camera.
    Writes out_depth (F, hs*ws) z-depth in metres (0: no surface) and out_counts
    (F, num_objects) int64 samples where each object's own surface is the nearest (the per-sample
    object index of the nearest surface, -1 for none or an unlabelled surface, is scratch);
    rows of invalid frames are 0.
    ``parts``: the frames are split into that many runs, run in parallel, each with its own
    scratch buffers (a few per thread: ``4 * numba.get_num_threads()``).
    """
    nf = w2c.shape[0]
    nv = 1
    for blk in range(blocks.shape[0]):
        nv = max(nv, int(blocks[blk, 3] - blocks[blk, 2]))
    sx = ws / w
    sy = hs / h
    n = ws * hs
    nparts = max(min(nf, parts), 1)
    for part in prange(nparts):
        pv = np.empty((nv, 4))
        pb = np.empty((nv, 4), np.int64)
        iz = np.empty(n)
        ids = np.empty(n + 1, np.int32)  # + the spare slot of _draw
        for f in range(part * nf // nparts, (part + 1) * nf // nparts):
            iz[:] = 0.0
            ids[:] = -1
            if valid[f]:
                fxs, fys = kin[f, 0] * sx, kin[f, 1] * sy
                cxs, cys = (kin[f, 2] + 0.5) * sx - 0.5, (kin[f, 3] + 0.5) * sy - 0.5
                _render_frame(verts, faces, face_obj, blocks, w2c[f], fxs, fys, cxs, cys, ws, hs, near, cull_back,
                              iz, ids, pv, pb)
            for o in range(num_objects):
                out_counts[f, o] = 0
            for k in range(n):
                out_depth[f, k] = 1.0 / iz[k] if iz[k] > 0.0 else 0.0
                if ids[k] >= 0:
                    out_counts[f, ids[k]] += 1
