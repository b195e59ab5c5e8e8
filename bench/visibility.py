"""Benchmark: Numba visibility engine vs pyrender at native resolution, in one run.

Prints frames/s of the engine's box mode (occlusion="boxes", default scale) and of
the pyrender reference (segmentation render + per-box pixel counts at native
resolution) on the same scene, their ratio, and the engine's max error against the
reference (fraction of image area, per object-frame; boxes that contain others do not
hide them, so the reference renders each contained box again without its containers:
only the first render is timed). Also the kernel's frames/s with observed depth
(in-memory depth rows, as ``depth``/``mesh`` occlusion gets them). The machine is noisy:
only the ratios measured here, in the same process, mean anything.

    python bench/visibility.py [--frames 1000] [--boxes 60] [--size 640x480] [--ref-frames 150]
"""
from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

import vistest  # noqa: F401  (sets PYOPENGL_PLATFORM)
from vistest.visibility.render import BoxSegRenderer
from vistest.synthetic import random_box_scene
from vistest.geometry import box_corners
from vistest.visibility import raster
from vistest.visibility.table import compute_visibility, containment, default_scale, frame_cameras


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=1000)
    ap.add_argument("--boxes", type=int, default=60)
    ap.add_argument("--size", default="640x480")
    ap.add_argument("--ref-frames", type=int, default=150, help="frames rendered by pyrender (timed and compared)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    w, h = (int(x) for x in args.size.split("x"))
    scene = random_box_scene(seed=7, num_frames=args.frames, num_boxes=args.boxes, image_size=(w, h))
    n_valid = sum(f.valid for f in scene.frames)

    compute_visibility(dataclasses.replace(scene, frames=scene.frames[:4]), occlusion="boxes")  # compile / load
    best = np.inf
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        vis = compute_visibility(scene, occlusion="boxes")
        best = min(best, time.perf_counter() - t0)
    engine_fps = len(scene.frames) / best
    depth_fps = observed_depth_fps(scene, vis.params["working_size"], args.repeats)

    boxes = scene.world_boxes()
    contains = containment(*boxes)
    ref = BoxSegRenderer(*boxes, w, h, near=vis.params["near"])
    frames = [i for i, f in enumerate(scene.frames) if f.valid][: args.ref_frames]
    ref.counts(scene.frames[frames[0]].camera_to_world, scene.camera)  # warm up the GL context
    t0 = time.perf_counter()
    for i in frames:
        ref.counts(scene.frames[i].camera_to_world, scene.camera)
    ref_fps = len(frames) / (time.perf_counter() - t0)
    counts = [ref.counts(scene.frames[i].camera_to_world, scene.camera, contains) for i in frames]
    ref.close()
    err = np.abs(np.array(counts) / (w * h) - vis.visible[frames])

    print(f"scene: {len(scene.frames)} frames ({n_valid} valid), {args.boxes} boxes, {w}x{h}; "
          f"working scale {default_scale((w, h)):.4f} "
          f"({vis.params['working_size'][0]}x{vis.params['working_size'][1]})")
    print(f"contained boxes (not hidden by their containers): {int(contains.any(axis=0).sum())}")
    print(f"engine (occlusion=boxes, default scale): {engine_fps:10.1f} frames/s")
    print(f"kernel with observed depth (in memory):  {depth_fps:10.1f} frames/s")
    print(f"pyrender reference (native, {len(frames)} frames): {ref_fps:10.1f} frames/s")
    print(f"ratio engine / pyrender: {engine_fps / ref_fps:.1f}x")
    print(f"max error vs pyrender: {err.max() * 100:.3f}% of image area "
          f"(mean {err.mean() * 100:.4f}%, over {err.size} object-frames)")


def observed_depth_fps(scene, working_size, repeats: int) -> float:
    """Frames/s of the kernel given a depth row per frame (random depths 1-6 m)."""
    ws, hs = working_size
    w, h = scene.image_size
    centers, sizes, rots = scene.world_boxes()
    corners = box_corners(centers, sizes, rots)
    w2c, kin = frame_cameras(scene, scene.frames)
    valid = np.array([f.valid for f in scene.frames])
    nf, no = len(scene.frames), len(centers)
    depth = np.random.default_rng(0).uniform(1.0, 6.0, (nf, ws * hs))
    out = [np.empty((nf, no)), np.empty((nf, no)), np.empty((nf, no, 4))]
    none = np.zeros((0, no, no), bool)
    geom = np.zeros(nf, np.int64)
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        raster.visibility_kernel(w2c, kin, valid, geom, corners[None], rots[None], w, h, ws, hs, 1e-3, True, depth,
                                 0.05, none, *out)
        best = min(best, time.perf_counter() - t0)
    return nf / best


if __name__ == "__main__":
    main()
