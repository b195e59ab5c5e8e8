"""Benchmark: the containment pass of ``boxes`` occlusion on 5,000 mutually overlapping boxes.

``vistest.visibility.table.containment`` (a sweep over the boxes' world bounds, bounds that
decide most pairs, points counted only until the answer is known) against the reference it
replaced: every overlapping pair tested on all 512 lattice points of the contained box (numpy,
re-implemented here). The reference runs on the first ``--ref-boxes`` boxes only (it is
quadratic: > 10 minutes for 5,000) and its time is scaled by the number of ordered pairs; both
answers are compared on that subset. Printed: seconds for all boxes, the reference's
extrapolated seconds, their ratio, and whether the answers agree. Issue #27's target: all boxes
in under a minute. Three layouts, every pair overlapping: ``mixed`` (sizes 0.5-1.5 m, half
rotated), ``jitter`` (near-identical axis-aligned boxes: shares near 1) and ``spread`` (centres
0.3 m apart, all rotated: shares on both sides of 50%).

    python bench/containment.py [--boxes 5000] [--ref-boxes 300] [--layout mixed|jitter|spread|all]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from vistest.geometry import random_rotation
from vistest.visibility.table import CONTAIN_SHARE, containment

LAYOUTS = {  # name: (centre spread m, size range m, rotated share)
    "mixed": (0.05, (0.5, 1.5), 0.5),
    "jitter": (0.02, (0.98, 1.02), 0.0),
    "spread": (0.3, (0.8, 1.2), 1.0),
}


def boxes(layout: str, n: int, seed: int = 1):
    """``n`` boxes of ``layout``: centres (n, 3), sizes (n, 3), rotations (n, 3, 3)."""
    spread, (lo, hi), rotated = LAYOUTS[layout]
    rng = np.random.default_rng(seed)
    centers = rng.normal(0.0, spread, (n, 3))
    sizes = rng.uniform(lo, hi, (n, 3))
    rots = np.stack([random_rotation(rng) if rng.random() < rotated else np.eye(3) for _ in range(n)])
    return centers, sizes, rots


def reference(centers, sizes, rots, share=CONTAIN_SHARE, grid=8):
    """The replaced rule, point by point: c[a, b] when at least ``share`` of b's 512 lattice
    points (cell centres) lie inside a; pairs with non-overlapping world bounds are False."""
    g = (np.arange(grid) + 0.5) / grid - 0.5
    cell = np.stack(np.meshgrid(g, g, g, indexing="ij"), axis=-1).reshape(-1, 3)
    extent = (np.abs(rots) @ (sizes[:, :, None] / 2.0))[..., 0]
    lo, hi = centers - extent, centers + extent
    out = np.zeros((len(centers),) * 2, bool)
    for b in range(len(centers)):
        pts = centers[b] + cell @ (rots[b] * sizes[b]).T
        for a in np.flatnonzero(((lo < hi[b]) & (hi > lo[b])).all(axis=1)):
            if a != b:
                local = (pts - centers[a]) @ rots[a]
                out[a, b] = (np.abs(local) <= sizes[a] / 2.0).all(axis=1).mean() >= share
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boxes", type=int, default=5000)
    ap.add_argument("--ref-boxes", type=int, default=300)
    ap.add_argument("--layout", choices=[*LAYOUTS, "all"], default="all")
    args = ap.parse_args()
    containment(*boxes("mixed", 8))  # compile / load the cached kernel
    for layout in LAYOUTS if args.layout == "all" else [args.layout]:
        c, s, r = boxes(layout, args.boxes)
        t0 = time.perf_counter()
        fast = containment(c, s, r)
        t_fast = time.perf_counter() - t0
        k = min(args.ref_boxes, args.boxes)
        t0 = time.perf_counter()
        ref = reference(c[:k], s[:k], r[:k])
        t_ref = (time.perf_counter() - t0) * (args.boxes * (args.boxes - 1)) / max(k * (k - 1), 1)
        same = bool((containment(c[:k], s[:k], r[:k]) == ref).all())
        print(f"{layout:7s} {args.boxes} boxes: containment {t_fast:6.1f} s; reference (all pairs x 512 points, "
              f"{k} boxes timed, scaled by pairs) {t_ref:7.1f} s; ratio {t_ref / t_fast:5.1f}x; "
              f"{fast.mean() * 100:5.1f}% of pairs contained; same answer on {k} boxes: {same}; "
              f"under a minute: {t_fast < 60}", flush=True)


if __name__ == "__main__":
    main()
