"""Does a written video show what scene.json says? Helpers of tests/test_synth_video.py.

Two independent sides, compared per object and frame:

* **the video's pixels**: the scene's own pyrender renderer (the one that wrote ``video.mp4``: its
  geometry, poses, culling and frame order) drawing each object in one flat, unlit colour
  (:func:`flat_id_pass`), written by the same video writer (H.264, yuv420p) as bit planes of the
  object's index, **decoded** with ffmpeg (:func:`id_videos`);
* **the reference**: scene.json's objects projected by a z-buffer written here in numpy
  (:func:`raster_labels`: OpenCV pinhole, pixel centres at integer coordinates, triangles clipped at
  the near plane, both windings drawn so the winding under test cannot hide a face here), each object's
  triangles given by the caller (its box, or the shape scene.json and mesh.ply define).
"""
from __future__ import annotations

import numpy as np

NEAR = 0.02  # m: the renderers' near plane


def id_colours(n: int) -> np.ndarray:
    """(n, 3) uint8 exact segmentation colours: object i is (i + 1) in 24-bit RGB (black: none)."""
    i = np.arange(1, n + 1)
    return np.stack([i & 255, (i >> 8) & 255, (i >> 16) & 255], 1).astype(np.uint8)


def flat_id_pass(pyr_scene, renderer, node_object: dict) -> None:
    """Make ``renderer`` (the pyrender.OffscreenRenderer drawing ``pyr_scene``) draw each node of
    ``node_object`` in :func:`id_colours` of ``node_object[node]`` and every other mesh node black, unlit
    and without anti-aliasing (pyrender's segmentation pass: back faces culled, as the single-sided
    materials of the renders under test), whenever it is asked for a plain colour render."""
    import pyrender

    colours = id_colours(max(node_object.values(), default=0) + 1)
    seg = {node: colours[node_object[node]] if node in node_object else np.zeros(3, np.uint8)
           for node in pyr_scene.mesh_nodes}
    render = renderer.render

    def flat(scene, flags=pyrender.RenderFlags.NONE, **kw):
        if flags == pyrender.RenderFlags.NONE:
            return render(scene, flags=pyrender.RenderFlags.SEG, seg_node_map=seg)
        return render(scene, flags=flags, **kw)

    renderer.render = flat


def id_videos(render, frames: int, fps: float, size: tuple[int, int], outdir, n: int) -> np.ndarray:
    """Write the id pass as videos and decode them: (F, H, W) int object index per pixel (-1: none).

    ``render(i)`` gives frame i of the id pass (:func:`flat_id_pass`). Bit b of (index + 1) of every
    pixel becomes a black-or-white frame of ``outdir/bit{b}/video.mp4``, written by vistest's video writer
    (H.264, yuv420p: the source videos' codec; a white-on-black mask keeps its edges in full-resolution
    luma, where a colour per object would be blended by the half-resolution chroma), decoded by ffmpeg
    (imageio-ffmpeg's binary) and read back with a threshold at mid-grey."""
    from pathlib import Path

    import imageio_ffmpeg

    from vistest.synth.demo import write_video_and_depth

    ids = []
    for i in range(frames):
        c = render(i)[0].astype(np.int64)
        ids.append(c[..., 0] + (c[..., 1] << 8) + (c[..., 2] << 16))
    ids = np.array(ids)
    assert ids.max() <= n, "the id pass drew a colour of no object"
    out = np.zeros_like(ids)
    for b in range(int(n).bit_length()):
        folder = Path(outdir) / f"bit{b}"
        folder.mkdir(parents=True)
        plane = np.where(((ids >> b) & 1)[..., None] == 1, 255, 0).astype(np.uint8).repeat(3, -1)
        write_video_and_depth(folder, lambda i: (plane[i], None), frames, fps, size, f"bit {b}", True, depth=False)
        reader = imageio_ffmpeg.read_frames(str(folder / "video.mp4"), pix_fmt="rgb24")
        w, h = next(reader)["size"]
        decoded = np.array([np.frombuffer(f, np.uint8).reshape(h, w, 3).mean(-1) for f in reader])
        assert decoded.shape == ids.shape, f"bit {b}: {decoded.shape} frames decoded, {ids.shape} written"
        out |= (decoded >= 128).astype(np.int64) << b
    return out - 1


def box_triangles(center, size, rotation) -> np.ndarray:
    """(12, 3, 3) world triangles of a box (any winding)."""
    s = np.asarray(size, float) / 2
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * s
    w = corners @ np.asarray(rotation, float).T + np.asarray(center, float)
    quads = [(0, 1, 3, 2), (4, 5, 7, 6), (0, 1, 5, 4), (2, 3, 7, 6), (0, 2, 6, 4), (1, 3, 7, 5)]
    return np.array([[w[a], w[b], w[c]] for a, b, c, d in quads for a, b, c in ((a, b, c), (a, c, d))])


def _clip_near(tri: np.ndarray, near: float) -> list[np.ndarray]:
    """Triangles of camera-space ``tri`` (3, 3) in front of z = near (Sutherland-Hodgman on one plane)."""
    poly = []
    for i in range(3):
        a, b = tri[i], tri[(i + 1) % 3]
        if a[2] > near:
            poly.append(a)
        if (a[2] > near) != (b[2] > near):
            t = (near - a[2]) / (b[2] - a[2])
            poly.append(a + t * (b - a))
    return [np.array([poly[0], poly[k], poly[k + 1]]) for k in range(1, len(poly) - 1)]


def raster_labels(tris: np.ndarray, owner: np.ndarray, c2w: np.ndarray, k, size: tuple[int, int],
                  near: float = NEAR) -> np.ndarray:
    """(H, W) int: per pixel, the ``owner`` of the nearest of world triangles ``tris`` (T, 3, 3) whose
    interior holds the pixel centre (-1: none), seen by OpenCV camera-to-world ``c2w`` with intrinsics ``k``
    (fx, fy, cx, cy; pixel (u, v)'s centre at u, v). Depth: 1/z interpolated linearly on the image."""
    w, h = size
    r, t = np.asarray(c2w, float)[:3, :3], np.asarray(c2w, float)[:3, 3]
    cam = (np.asarray(tris, float) - t) @ r  # (T, 3, 3): x_cam = R^T (X - t)
    z = cam[..., 2]
    front = (z > near).all(1)
    keep, own = [cam[front]], [owner[front]]
    for i in np.flatnonzero(~front & (z > near).any(1)):
        parts = _clip_near(cam[i], near)
        keep.append(np.array(parts).reshape(-1, 3, 3))
        own.append(np.full(len(parts), owner[i]))
    cam, own = np.concatenate(keep), np.concatenate(own)
    u = k.fx * cam[..., 0] / cam[..., 2] + k.cx
    v = k.fy * cam[..., 1] / cam[..., 2] + k.cy
    iz = 1.0 / cam[..., 2]
    lo_u, hi_u = np.ceil(u.min(1)).astype(int).clip(0, w), np.floor(u.max(1)).astype(int).clip(-1, w - 1)
    lo_v, hi_v = np.ceil(v.min(1)).astype(int).clip(0, h), np.floor(v.max(1)).astype(int).clip(-1, h - 1)
    area = (u[:, 1] - u[:, 0]) * (v[:, 2] - v[:, 0]) - (u[:, 2] - u[:, 0]) * (v[:, 1] - v[:, 0])
    ok = (hi_u >= lo_u) & (hi_v >= lo_v) & (np.abs(area) > 1e-12)
    span = np.maximum(hi_u - lo_u, hi_v - lo_v) + 1
    pix, depth, lab = [], [], []

    def fragments(chunk, pu, pv):  # the pixel centres (pu, pv) (n, m) inside each triangle of chunk (n,)
        uu, vv = u[chunk], v[chunk]
        ws = []
        for a, c in ((1, 2), (2, 0), (0, 1)):  # barycentric weight of the vertex opposite edge (a, c)
            ws.append(((uu[:, c, None] - uu[:, a, None]) * (pv - vv[:, a, None])
                       - (vv[:, c, None] - vv[:, a, None]) * (pu - uu[:, a, None])) / area[chunk, None])
        w0, w1, w2 = ws
        inside = (w0 >= 0) & (w1 >= 0) & (w2 >= 0) & (pu <= hi_u[chunk, None]) & (pv <= hi_v[chunk, None])
        zz = w0 * iz[chunk, 0, None] + w1 * iz[chunk, 1, None] + w2 * iz[chunk, 2, None]
        rows = np.nonzero(inside)
        pix.append(pv[rows] * w + pu[rows])
        depth.append(zz[rows])
        lab.append(own[chunk][rows[0]])

    for b in (2, 4, 8, 16, 32):  # small triangles in buckets of bounding-box size, b x b candidates each
        sel = np.flatnonzero(ok & (span <= b))
        ok[sel] = False
        du, dv = np.meshgrid(np.arange(b), np.arange(b))
        for chunk in np.array_split(sel, len(sel) * b * b // 1_000_000 + 1):
            if len(chunk):
                fragments(chunk, lo_u[chunk, None] + du.ravel()[None], lo_v[chunk, None] + dv.ravel()[None])
    for i in np.flatnonzero(ok):  # the larger ones one by one over their own bounding box
        pv, pu = np.mgrid[lo_v[i]:hi_v[i] + 1, lo_u[i]:hi_u[i] + 1]
        fragments(np.array([i]), pu.ravel()[None], pv.ravel()[None])
    out = np.full(w * h, -1, np.int64)
    if pix:
        pix, depth, lab = np.concatenate(pix), np.concatenate(depth), np.concatenate(lab)
        order = np.lexsort((depth, pix))  # by pixel, then nearest (largest 1/z) last
        last = np.r_[pix[order][1:] != pix[order][:-1], True]
        out[pix[order][last]] = lab[order][last]
    return out.reshape(h, w)


def iou_table(video: np.ndarray, ref: np.ndarray, n_objects: int, min_px: int = 200) -> list[tuple]:
    """[(frame, object, IoU, reference px, video px)] for every object-frame with at least ``min_px``
    pixels in the reference or in the video."""
    rows = []
    for f in range(len(ref)):
        for o in range(n_objects):
            a, b = ref[f] == o, video[f] == o
            na, nb = int(a.sum()), int(b.sum())
            if max(na, nb) >= min_px:
                rows.append((f, o, (a & b).sum() / (a | b).sum(), na, nb))
    return rows
