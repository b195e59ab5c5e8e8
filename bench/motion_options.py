"""Benchmark: the dynamic types' numeric options on many random dynamic scenes (docs/generate.md
"Dynamic questions").

``--scenes`` random dynamic scenes (tests/motion_scenes.py; every third one slow: base speeds
0.01-0.15 m/s, near zero), every candidate of the numeric dynamic types (vistest.generate.motion,
default rules), at most ``motion.max_per_scene`` per scene and type drawn at random (the
generator's per-scene cap), options placed once as the generator places them (ranks and letters
balanced in the folds of a balancing fold seed, vistest.generate.balance.place_options; no
pruning). Printed per type: n, the keyed option's rank shares (read back from the option
values), and the held-out option-rank, answer-length and numeric-prior attacks (5 folds by
scene) on the report's fold seeds 0, 1, 2 (never the folds the ranks were balanced in): gap to
chance per seed and the largest, with the complement cells (not-X). ``--naive``: the same with a "floor then upward"
ladder (the lowest option at max(answer / 1.2^r, the type's floor), then upward): the ReSTI
pattern, for contrast.

    python bench/motion_options.py [--scenes 200] [--naive] [--rule motion.step_ratio=1.1]
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from motion_scenes import random_motion_scene  # noqa: E402
from vistest.eval.baselines import DEFAULT_FOLDS, scene_folds  # noqa: E402
from vistest.generate import Rules  # noqa: E402
from vistest.generate import balance as bal  # noqa: E402
from vistest.generate import motion as gm  # noqa: E402
from vistest.generate.blind import attack_report  # noqa: E402
from vistest.generate.candidates import MOTION_NUMERIC_TYPES, to_record  # noqa: E402
from vistest.generate.facts import SceneFacts  # noqa: E402

ATTACKS = ("option-rank", "answer-length", "numeric-prior")


def candidates(n: int, rules: Rules) -> list:
    out = []
    for s in range(n):
        sc, vis = random_motion_scene(1000 + s, speed_range=(0.01, 0.15) if s % 3 == 0 else (0.03, 1.0))
        cs = gm.candidates(SceneFacts(sc, vis, rules.frames.seen), rules.motion, MOTION_NUMERIC_TYPES)
        rng = np.random.default_rng(s)
        for t in MOTION_NUMERIC_TYPES:
            of_t = [c for c in cs if c.question_type == t]
            out += [of_t[i] for i in np.sort(rng.permutation(len(of_t))[:rules.motion.max_per_scene])]
    return out


def naive_options(value: float, rank: int, rules) -> list[float]:
    """A "floor then upward" ladder: the lowest option kept at the type's floor or above."""
    floor = NAIVE_FLOOR[0]
    lo = max(abs(value) / rules.step_ratio ** rank, floor)
    vals = sorted([lo * rules.step_ratio ** i for i in range(rules.num_options - 1)] + [abs(value)])
    return vals if value > 0 else [-v for v in reversed(vals)]


NAIVE_FLOOR = [0.0]
FLOORS = {"motion_displacement": "min_displacement_m", "motion_path_length": "min_displacement_m",
          "motion_speed": "min_speed_mps", "motion_acceleration": "min_acceleration_mps2"}


def place(cands: list, rules: Rules, naive: bool) -> list[dict]:
    scenes = sorted({c.scene_id for c in cands})
    unit_of = dict(scene_folds(scenes, DEFAULT_FOLDS, 3).fold_of)  # a balancing seed, not the report's 0-2
    rng = np.random.default_rng(0)
    recs = []
    orig = bal.numeric_options
    for t in MOTION_NUMERIC_TYPES:
        if naive:
            NAIVE_FLOOR[0] = getattr(rules.motion, FLOORS[t])
            bal.numeric_options = naive_options
        try:
            placed = bal.place_options([c for c in cands if c.question_type == t], rules.motion.ladder(), rng,
                                       unit_of)
        finally:
            bal.numeric_options = orig
        recs += [to_record(p.candidate, f"{t}-{i}", list(p.options), p.letter) for i, p in enumerate(placed)]
    return recs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenes", type=int, default=200)
    ap.add_argument("--naive", action="store_true")
    ap.add_argument("--rule", action="append", default=[], metavar="FAMILY.PARAM=VALUE",
                    help="a generator rule override (vistest generate --rule), e.g. motion.step_ratio=1.1")
    a = ap.parse_args()
    rules = Rules().with_overrides(a.rule)
    t0 = time.time()
    recs = place(candidates(a.scenes, rules), rules, a.naive)
    print(f"{a.scenes} scenes, {len(recs)} questions ({time.time() - t0:.0f} s); ladder: "
          f"{'naive floor-then-upward' if a.naive else 'geometric, rank drawn first'}")
    print("| type | n | rank shares 1..5 (%) | max dev (points) |")
    print("|---|---|---|---|")
    for t in MOTION_NUMERIC_TYPES:
        rs = [r for r in recs if r["question_type"] == t]
        vals = [[float(o.split(". ", 1)[1]) for o in r["options"]] for r in rs]
        ranks = Counter(sorted(range(5), key=lambda i: v[i]).index("ABCDE".index(r["ground_truth"]))
                        for r, v in zip(rs, vals))
        shares = [100 * ranks[k] / len(rs) for k in range(5)]
        dev = max(abs(s - 20) for s in shares)
        print(f"| {t} | {len(rs)} | {' / '.join(f'{s:.1f}' for s in shares)} | {dev:.1f} |")
    print()
    print("| type | attack | gap per fold seed 0, 1, 2 (points) | worst |")
    print("|---|---|---|---|")
    per: dict[tuple[str, str], list[float]] = {}
    for seed in (0, 1, 2):
        for c in attack_report(recs, seed, ATTACKS).cells:
            if c.judged and not c.pooled:
                per.setdefault((c.question_type, c.attack), []).append(100 * c.gap)
    for (t, att), gaps in sorted(per.items()):
        print(f"| {t} | {att} | {' '.join(f'{g:+.1f}' for g in gaps)} | {max(gaps):+.1f} |")


if __name__ == "__main__":
    main()
