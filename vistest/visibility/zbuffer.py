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


@njit_cached(inline="always")
def _triangle(u0, v0, q0, u1, v1, q1, u2, v2, q2, ws, hs, oid, iz, ids):
    """Draw one projected triangle: vertices (u, v) in working-pixel coordinates with inverse
    depths q; every covered sample nearer than the buffer takes its 1/z and ``oid``."""
    umin = min(u0, min(u1, u2))
    umax = max(u0, max(u1, u2))
    vmin = min(v0, min(v1, v2))
    vmax = max(v0, max(v1, v2))
    j0 = max(int(math.ceil(umin)), 0)
    j1 = min(int(math.floor(umax)), ws - 1)
    if j0 > j1:
        return
    i0 = max(int(math.ceil(vmin)), 0)
    i1 = min(int(math.floor(vmax)), hs - 1)
    if i0 > i1:
        return
    area = (u1 - u0) * (v2 - v0) - (v1 - v0) * (u2 - u0)
    if area == 0.0:
        return
    if area < 0.0:  # orient so that the inside has every edge function >= 0
        u1, v1, q1, u2, v2, q2 = u2, v2, q2, u1, v1, q1
        area = -area
    inv = 1.0 / area
    for i in range(i0, i1 + 1):
        row = i * ws
        for j in range(j0, j1 + 1):
            e0 = (u2 - u1) * (i - v1) - (v2 - v1) * (j - u1)
            e1 = (u0 - u2) * (i - v2) - (v0 - v2) * (j - u2)
            e2 = (u1 - u0) * (i - v0) - (v1 - v0) * (j - u0)
            if e0 < 0.0 or e1 < 0.0 or e2 < 0.0:
                continue
            z = (e0 * q0 + e1 * q1 + e2 * q2) * inv
            if z > iz[row + j]:
                iz[row + j] = z
                ids[row + j] = oid


@njit_cached(parallel=True)
def zbuffer_kernel(verts, faces, face_obj, num_objects, w2c, kin, valid, w, h, ws, hs, near, cull_back,
                   out_depth, out_ids, out_counts):
    """Render F frames of a triangle mesh on the working grid.

    verts (V, 3) world (the poses' world), metres; faces (T, 3) int vertex indices;
    face_obj (T,) int32 object index per face (-1: none), objects ``0 .. num_objects-1``;
    w2c (F, 3, 4) world-to-camera [R | t]; kin (F, 4) native fx, fy, cx, cy; valid (F,);
    (w, h) native size; (ws, hs) working grid; near: near plane (metres); cull_back: drop
    faces turned away from the camera.
    Writes out_depth (F, hs*ws) z-depth in metres (0: no surface), out_ids (F, hs*ws) int32
    object index of the nearest surface (-1: none or an unlabelled surface) and out_counts
    (F, num_objects) int64 samples per object; rows of invalid frames are 0 / -1 / 0.
    """
    nf = w2c.shape[0]
    nv = verts.shape[0]
    nt = faces.shape[0]
    sx = ws / w
    sy = hs / h
    for f in prange(nf):
        n = ws * hs
        iz = np.zeros(n)
        ids = np.full(n, -1, np.int32)
        if valid[f]:
            fxs, fys = kin[f, 0] * sx, kin[f, 1] * sy
            cxs, cys = (kin[f, 2] + 0.5) * sx - 0.5, (kin[f, 3] + 0.5) * sy - 0.5
            cam = np.empty((nv, 3))
            uv = np.empty((nv, 2))
            for k in range(nv):
                for d in range(3):
                    cam[k, d] = (w2c[f, d, 0] * verts[k, 0] + w2c[f, d, 1] * verts[k, 1]
                                 + w2c[f, d, 2] * verts[k, 2] + w2c[f, d, 3])
                z = cam[k, 2]
                if z >= near:
                    uv[k, 0] = fxs * cam[k, 0] / z + cxs
                    uv[k, 1] = fys * cam[k, 1] / z + cys
            px = np.empty((4, 3))
            for t in range(nt):
                a, b, c = faces[t, 0], faces[t, 1], faces[t, 2]
                za, zb, zc = cam[a, 2], cam[b, 2], cam[c, 2]
                fa, fb, fc = za >= near, zb >= near, zc >= near
                if not (fa or fb or fc):
                    continue
                if cull_back:  # normal (B - A) x (C - A) against the ray to A
                    ex, ey, ez = cam[b, 0] - cam[a, 0], cam[b, 1] - cam[a, 1], zb - za
                    gx, gy, gz = cam[c, 0] - cam[a, 0], cam[c, 1] - cam[a, 1], zc - za
                    nx, ny, nz = ey * gz - ez * gy, ez * gx - ex * gz, ex * gy - ey * gx
                    if nx * cam[a, 0] + ny * cam[a, 1] + nz * za >= 0.0:
                        continue
                oid = face_obj[t]
                if fa and fb and fc:
                    _triangle(uv[a, 0], uv[a, 1], 1.0 / za, uv[b, 0], uv[b, 1], 1.0 / zb,
                              uv[c, 0], uv[c, 1], 1.0 / zc, ws, hs, oid, iz, ids)
                    continue
                # straddles the near plane: clip the triangle to z >= near (Sutherland-Hodgman)
                m = 0
                for e in range(3):
                    p = faces[t, e]
                    q = faces[t, (e + 1) % 3]
                    zp, zq = cam[p, 2], cam[q, 2]
                    if zp >= near:
                        px[m, 0], px[m, 1], px[m, 2] = cam[p, 0], cam[p, 1], zp
                        m += 1
                    if (zp >= near) != (zq >= near):
                        s = (near - zp) / (zq - zp)
                        px[m, 0] = cam[p, 0] + s * (cam[q, 0] - cam[p, 0])
                        px[m, 1] = cam[p, 1] + s * (cam[q, 1] - cam[p, 1])
                        px[m, 2] = near
                        m += 1
                u0 = fxs * px[0, 0] / px[0, 2] + cxs
                v0 = fys * px[0, 1] / px[0, 2] + cys
                for k in range(1, m - 1):
                    _triangle(u0, v0, 1.0 / px[0, 2],
                              fxs * px[k, 0] / px[k, 2] + cxs, fys * px[k, 1] / px[k, 2] + cys, 1.0 / px[k, 2],
                              fxs * px[k + 1, 0] / px[k + 1, 2] + cxs, fys * px[k + 1, 1] / px[k + 1, 2] + cys,
                              1.0 / px[k + 1, 2], ws, hs, oid, iz, ids)
        for o in range(num_objects):
            out_counts[f, o] = 0
        for k in range(n):
            out_depth[f, k] = 1.0 / iz[k] if iz[k] > 0.0 else 0.0
            out_ids[f, k] = ids[k]
            if ids[k] >= 0:
                out_counts[f, ids[k]] += 1
