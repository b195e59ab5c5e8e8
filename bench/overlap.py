"""Benchmark: ``boxes`` occlusion on 5,000 mutually overlapping boxes, 2 frames (issue #35).

The scene of tests/overlap_scenes.py (bench/containment.py's ``mixed`` layout: most pairs contain
each other, so every box is "involved"; a sample lists up to all 5,000, ~1,600 on average, and
shows up to ~300 nested ones) at 640x480 (the default 160x120 working grid). Printed, as CPU seconds (all threads,
``time.process_time``: robust to a shared machine's other jobs, unlike wall time): the whole
``compute_visibility`` (its containment pass and the raster) against issue #35's target (under
30 s; the 1 + containers k-buffer it replaced took 272 s); the raster kernel alone; and the
independent brute-force reference (tests/overlap_scenes.py: slab depths of every box, sorted and
walked per sample), timed on ``--ref-samples`` random covered samples per frame and scaled to all
covered samples, its ratio to the kernel, and whether both show the same innermost box there.

    python bench/overlap.py [--boxes 5000] [--frames 2] [--ref-samples 200]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from overlap_scenes import overlap_scene, reference_shown  # noqa: E402
from vistest.visibility import raster  # noqa: E402
from vistest.visibility.table import box_geometry, compute_visibility, frame_cameras  # noqa: E402


def kernel_labels(scene, geom, corners, axes, contains, ws, hs):
    """The kernel on ``scene``'s frames (``boxes`` occlusion): labels (F, ws*hs) of the innermost shown box."""
    w2c, kin = frame_cameras(scene, scene.frames)
    nf, no = len(scene.frames), len(scene.objects)
    proj, vis, bbox = np.zeros((nf, no)), np.zeros((nf, no)), np.zeros((nf, no, 4))
    labels = np.zeros((nf, ws * hs), np.int64)
    raster.visibility_kernel(w2c, kin, np.ones(nf, bool), geom, corners, axes, *scene.image_size, ws, hs, 1e-3, True,
                             np.zeros((0, 0)), 0.05, contains, proj, vis, bbox, labels)
    return labels


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boxes", type=int, default=5000)
    ap.add_argument("--frames", type=int, default=2)
    ap.add_argument("--ref-samples", type=int, default=200, help="covered samples per frame the reference walks")
    args = ap.parse_args()
    small = overlap_scene(20)
    compute_visibility(small, occlusion="boxes")  # compile / load the kernels
    kernel_labels(small, *box_geometry(small, None, True), 16, 12)
    scene = overlap_scene(args.boxes, args.frames)

    t0, w0 = time.process_time(), time.perf_counter()
    vis = compute_visibility(scene, occlusion="boxes")
    cpu, wall = time.process_time() - t0, time.perf_counter() - w0
    ws, hs = vis.params["working_size"]
    t0 = time.process_time()
    geom, corners, axes, contains = box_geometry(scene, None, True)
    t_contain = time.process_time() - t0
    t0 = time.process_time()
    labels = kernel_labels(scene, geom, corners, axes, contains, ws, hs)
    t_kernel = time.process_time() - t0

    rng = np.random.default_rng(0)
    t_ref, agree, checked, covered = 0.0, 0, 0, 0
    for f in range(args.frames):
        hit = np.flatnonzero(labels[f] >= 0)
        covered += len(hit)
        pick = np.sort(rng.choice(hit, min(args.ref_samples, len(hit)), replace=False))
        t0 = time.process_time()
        shown, _ = reference_shown(scene, f, contains[0], (ws, hs), samples=pick)
        t_ref += (time.process_time() - t0) * len(hit) / max(len(pick), 1)
        agree += sum(int(labels[f, k]) == (s[-1] if s else -1) for k, s in zip(pick, shown))
        checked += len(pick)
    print(f"{args.boxes} overlapping boxes x {args.frames} frames ({ws}x{hs} samples, {covered} covered, "
          f"{contains[0].mean() * 100:.0f}% of pairs contained): compute_visibility {cpu:.1f} CPU s "
          f"({wall:.1f} s wall; containment {t_contain:.1f} CPU s, raster kernel {t_kernel:.1f} CPU s); "
          f"under 30 s: {cpu < 30}", flush=True)
    print(f"brute-force reference ({checked} samples walked, scaled to {covered}): {t_ref:.1f} CPU s; "
          f"ratio to the kernel {t_ref / t_kernel:.1f}x; same innermost box at {agree}/{checked} samples", flush=True)


if __name__ == "__main__":
    main()
