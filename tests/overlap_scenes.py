"""Heavily overlapping boxes for the ``boxes`` rule (tests/test_raster_overlap.py, bench/overlap.py):
a cluster of mutually overlapping boxes (the ``mixed`` layout of bench/containment.py: centres
within a few cm, sizes 0.5-1.5 m, half of them rotated; most pairs contain each other), and an
independent brute-force reference of what each working sample shows.

The reference shares nothing with the engine but the rule: per sample, the ray through the
sample's centre meets each box (slab test, numpy) at the surface the engine draws (where it
enters the solid; the near plane where the box straddles it; its inner wall when the camera is
inside the box); the boxes in no containment pair form a plain z-buffer; the others' depths in
front of it are sorted nearest first (ties by box index) and walked: the first shows, and each
later box that every box before it contains.
"""
from __future__ import annotations

import numpy as np

from vistest.geometry import look_at, random_rotation
from vistest.scene import FORMAT, Scene

EYES = ((3.0, -2.0, 1.5), (-2.5, -3.0, 1.0), (0.5, 3.5, 2.0), (0.15, -0.1, 0.05))  # the last inside the cluster


def overlap_scene(num_boxes: int, num_frames: int = 2, image_size=(640, 480), seed: int = 1, spread: float = 0.05,
                  loose: int = 0) -> Scene:
    """``num_boxes`` mutually overlapping boxes around the origin (centres N(0, ``spread``) m, sizes
    U(0.5, 1.5) m per axis, half rotated) and ``loose`` small boxes (0.2-0.4 m) scattered 1-2.5 m
    from it (in no containment pair: the plain z-buffer); cameras at ``EYES`` looking at the
    origin (the fourth inside the cluster's boxes)."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(0.0, spread, (num_boxes, 3))
    sizes = rng.uniform(0.5, 1.5, (num_boxes, 3))
    rots = [random_rotation(rng) if rng.random() < 0.5 else np.eye(3) for _ in range(num_boxes)]
    objects = [{"id": str(i), "label": "box", "center": centers[i].tolist(), "size": sizes[i].tolist(),
                "rotation": rots[i].tolist()} for i in range(num_boxes)]
    for k in range(loose):
        d = rng.normal(size=3)
        center = d / np.linalg.norm(d) * rng.uniform(1.0, 2.5)
        objects.append({"id": f"loose{k}", "label": "loose", "center": center.tolist(),
                        "size": rng.uniform(0.2, 0.4, 3).tolist(), "rotation": random_rotation(rng).tolist()})
    w, h = image_size
    frames = [{"index": i, "time": i / 30.0, "camera_to_world": look_at(np.array(EYES[i % len(EYES)]),
                                                                          np.zeros(3)).tolist()}
              for i in range(num_frames)]
    return Scene.from_dict({"format": FORMAT, "scene_id": f"overlap{num_boxes}", "fps": 30.0, "image_size": [w, h],
                            "camera": {"fx": 0.8 * w, "fy": 0.8 * w, "cx": 0.49 * w, "cy": 0.51 * h},
                            "frames": frames, "objects": objects})


def surface_depths(centers, sizes, rots, w2c, rays, near):
    """(O, S) z-depth (metres) where each ray (S, 3) camera-space directions with z = 1 meets
    each box's drawn surface (entry, near plane, or inner wall: module docstring); inf where it
    misses. Boxes (world): centres (O, 3), sizes (O, 3), rotations (O, 3, 3); w2c (3, 4)."""
    r, t = w2c[:, :3], w2c[:, 3]
    cc = centers @ r.T + t
    ax = np.einsum("dk,okj->odj", r, rots)  # camera-space box axes (columns)
    u = np.einsum("odj,sd->osj", ax, rays)  # the ray's direction in box coordinates
    p = np.einsum("odj,od->oj", ax, cc)[:, None, :]  # the box centre in box-axis coordinates
    half = sizes[:, None, :] / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        a, b = (p - half) / u, (p + half) / u
    inslab = np.abs(p) <= half
    lo = np.where(u == 0, np.where(inslab, -np.inf, np.inf), np.minimum(a, b))
    hi = np.where(u == 0, np.where(inslab, np.inf, -np.inf), np.maximum(a, b))
    t_in, t_out = lo.max(axis=2), hi.min(axis=2)
    inside = (np.abs(p) < half).all(axis=2)  # the camera centre inside the box: its inner wall
    z = np.where(inside, t_out, np.maximum(t_in, near))
    return np.where((t_in <= t_out) & (t_out >= near), z, np.inf)


def reference_shown(scene, frame: int, contains, working_size, near: float = 1e-3, samples=None):
    """What each working sample shows under the ``boxes`` rule, by brute force: a list (one per
    sample of ``samples``, row-major indices i * ws + j; default all) of the shown box indices,
    nearest first, and (O,) silhouette sample counts (over ``samples``)."""
    ws, hs = working_size
    (w, h), k = scene.image_size, scene.intrinsics_for(scene.frames[frame])
    sx, sy = ws / w, hs / h
    fxs, fys, cxs, cys = k.fx * sx, k.fy * sy, (k.cx + 0.5) * sx - 0.5, (k.cy + 0.5) * sy - 0.5
    samples = np.arange(ws * hs) if samples is None else np.asarray(samples)
    j, i = samples % ws, samples // ws
    rays = np.stack([(j - cxs) / fxs, (i - cys) / fys, np.ones(len(samples))], axis=1)
    w2c = np.linalg.inv(scene.frames[frame].camera_to_world)[:3]
    centers, sizes, rots = scene.world_boxes()
    z = surface_depths(centers, sizes, rots, w2c, rays, near)
    involved = (contains & ~np.eye(len(contains), dtype=bool)).any(axis=0) | \
        (contains & ~np.eye(len(contains), dtype=bool)).any(axis=1)
    shown = []
    for s in range(len(samples)):
        zs = z[:, s]
        plain = np.flatnonzero(~involved & np.isfinite(zs))
        front = plain[np.argmin(zs[plain])] if len(plain) else -1
        zf = zs[front] if front >= 0 else np.inf
        listed = np.flatnonzero(involved & (zs < zf))
        listed = listed[np.lexsort((listed, zs[listed]))]  # nearest first, ties by index
        if not len(listed):
            shown.append([front] if front >= 0 else [])
            continue
        here, common = [], np.ones(len(contains), bool)
        for o in listed:
            if common[o]:
                here.append(int(o))
            common &= contains[o]
            if not common.any():
                break
        shown.append(here)
    return shown, np.isfinite(z).sum(axis=1)
