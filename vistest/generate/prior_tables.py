"""The world prior's tables, derived from real scans' annotations (issue #34, item 3).

A blind language model knows what the world looks like: a bed is about 2 m long, a room about
20 m², a chair stands near a table. :mod:`vistest.eval.world_prior` holds that knowledge as
three tables, and the ``world-prior`` attack (vistest.eval.attacks) answers size, distance,
room-size and relative-distance questions from them with no scene data. This module derives the
tables from the VSI-Bench meta info (``data/meta_info/{scannet,arkitscenes,scannetpp}_meta_info_val.json``
of thinking-in-space: the boxes of 288 real validation scans; the copies in the project's
``shared/reference/vsibench-meta-info``), reading each box as vistest.datasets.vsibench does
(``axesLengths`` full extents, the rows of ``normalizedAxes`` the box axes):

* ``SIZE_CM``: per label (lower case), the median over its instances of the longest full extent
  in centimetres, and the number of instances;
* ``ROOM_M2``: the median of the scans' ``room_size`` (square metres) and their number;
* ``DISTANCE_M``: per unordered label pair (sorted), the median closest-point distance in metres
  between the two boxes (vistest.generate.geometry.box_distance, the generator's own measure),
  over the scans where both labels occur once (as the generator's distance questions ask), and
  ``ANY_DISTANCE_M``, the median over every such pair.

Medians, not means: one mislabelled giant box must not move a category. A label seen fewer than
:data:`MIN_INSTANCES` times is left out (the attack then falls back to its type's prior); it is 1
(issue #43): a label seen once is still a better guess than the median over every label, and the
prior must be at least as strong as a per-label median table (tests/test_generate_real_rooms.py);
with 3, the distances of rare pairs fell back to the overall median and the attack was weaker.

    python -m vistest.generate.prior_tables META.json [META.json ...] -o vistest/eval/world_prior_data.py

writes the data module (tests/test_generate_bias.py checks that the committed one re-derives).
"""
from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from ..errors import InputError
from .geometry import box_distance

MIN_INSTANCES = 1  # a label (a pair) needs this many instances (scans) to enter a table (issue #43: every one)


def meta_boxes(label_boxes: list, source: str, label: str) -> list[tuple]:
    """(center, size, rotation) of each box of one label (vistest.datasets.vsibench's reading)."""
    out = []
    for i, b in enumerate(label_boxes):
        try:
            center = np.asarray(b["centroid"], float).reshape(3)
            size = np.asarray(b["axesLengths"], float).reshape(3)
            rot = np.asarray(b["normalizedAxes"], float).reshape(3, 3).T
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(f"{source}: object_bbox[{label!r}][{i}]: expected centroid, axesLengths (3 numbers) "
                             f"and normalizedAxes (9 numbers); {e}") from None
        out.append((center, size, rot))
    return out


def derive(paths: list[Path], only=None) -> dict:
    """The tables (module docstring) from VSI-Bench meta-info files; ``only``: the scans used,
    as ``{dataset}-{scan id}`` (vistest.generate.real_rooms.read_scans' keys; default: all)."""
    sizes: dict[str, list[float]] = defaultdict(list)
    rooms: list[float] = []
    pairs: dict[tuple[str, str], list[float]] = defaultdict(list)
    for path in paths:
        doc = json.loads(Path(path).read_text())
        for sid in sorted(doc):
            scan = doc[sid]
            if only is not None and f"{scan.get('dataset') or Path(path).name.split('_')[0]}-{sid}" not in only:
                continue
            if scan.get("room_size") is not None:
                rooms.append(float(scan["room_size"]))
            unique = {}
            for label in sorted(scan.get("object_bbox", {})):
                boxes = meta_boxes(scan["object_bbox"][label], f"{path}: {sid}", label)
                key = label.strip().lower()
                sizes[key] += [float(np.max(s)) * 100.0 for _, s, _ in boxes]
                if len(boxes) == 1:
                    unique[key] = boxes[0]
            names = sorted(unique)
            for i, a in enumerate(names):
                for b in names[i + 1:]:
                    pairs[(a, b)].append(box_distance(unique[a], unique[b]))
    size_cm = {k: (float(np.median(v)), len(v)) for k, v in sorted(sizes.items()) if len(v) >= MIN_INSTANCES}
    dist = {k: (float(np.median(v)), len(v)) for k, v in sorted(pairs.items()) if len(v) >= MIN_INSTANCES}
    every = [d for v in pairs.values() for d in v]
    return {"sources": [Path(p).name for p in paths], "size_cm": size_cm,
            "room_m2": (float(np.median(rooms)), len(rooms)),
            "distance_m": dist, "any_distance_m": (float(np.median(every)), len(every))}


# the committed module's precision (module_text): 0.1 cm, 0.1 m^2, 1 cm; a cross-fitted prior (world_prior_of)
# keeps derive's full precision
DECIMALS = {"size_cm": 1, "room_m2": 1, "distance_m": 2, "any_distance_m": 2}


def _rounded(v: tuple, table: str) -> tuple:
    return (round(v[0], DECIMALS[table]), v[1])


def world_prior_of(prior: dict, source: str):
    """The tables of :func:`derive` as a vistest.eval.world_prior.WorldPrior (to cross-fit it:
    ``world_prior.using(world_prior_of(derive(paths, only=...), "..."))``), at full precision (the
    committed module rounds: :data:`DECIMALS`)."""
    from ..eval.world_prior import WorldPrior

    return WorldPrior(prior["size_cm"], prior["room_m2"], prior["distance_m"], prior["any_distance_m"], source)


def module_text(prior: dict) -> str:
    """The data module vistest.eval.world_prior_data (plain literals, one entry per line)."""
    lines = ['"""The world prior\'s tables (vistest.eval.world_prior). Generated by vistest.generate.prior_tables from',
             f"the VSI-Bench meta info ({', '.join(prior['sources'])});", "do not edit: re-derive.",
             '"""', "", "# label -> (median longest side in cm, instances)", "SIZE_CM = {"]
    lines += [f"    {k!r}: {_rounded(v, 'size_cm')!r}," for k, v in prior["size_cm"].items()]
    lines += ["}", "# (median room area in m^2, scans)", f"ROOM_M2 = {_rounded(prior['room_m2'], 'room_m2')!r}",
              "# (label, label) sorted -> (median closest-point distance in m, scans with both labels once)",
              "DISTANCE_M = {"]
    lines += [f"    {k!r}: {_rounded(v, 'distance_m')!r}," for k, v in prior["distance_m"].items()]
    lines += ["}", "# (median over every pair above, pairs)",
              f"ANY_DISTANCE_M = {_rounded(prior['any_distance_m'], 'any_distance_m')!r}", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("meta", nargs="+", type=Path)
    ap.add_argument("-o", "--output", type=Path, required=True)
    args = ap.parse_args(argv)
    from ..atomic import write_atomic

    write_atomic(args.output, module_text(derive(args.meta)))


if __name__ == "__main__":
    main()
