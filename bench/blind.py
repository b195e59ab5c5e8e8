"""Benchmark: the debiased set on rooms no test uses (issue #34): kept share, blind attacks, transfer, time.

Generates ``--types all`` with seed 0 over ``--rooms`` random furnished rooms of the project's room
generator (``vistest.datasets.synthetic.random_room_scene(seed, num_frames=--frames)``, seeds
``--start`` ...; box occlusion) and prints:

* the time of the whole ``generate`` (visibility tables cached in ``--cache``, not timed) against the
  same run with the balancing off (``balance.stratify=false``, ``balance.removal_budget=0``) measured
  in the same process: the ratio and both absolute figures;
* per type the answerable pool, what the per-scene and answer caps drew, what the pruning kept,
  and the shares;
* every judged blind attack of the report (held out by scene, mean over its fold seeds; the world
  prior included) above chance + the margin, the trade-off curve;
* with ``--external START``: a second set over rooms ``START`` ... and every attack fitted on it and
  scored on the first (vistest.eval.attacks.transfer_attacks: a blind model trained on another set of
  the same generator), and the other way round.

    python bench/blind.py [--rooms 40] [--start 1000] [--external 2000] [--frames 90] [--cache DIR]
                          [--rule FAMILY.PARAM=VALUE ...]

Measured figures: docs/generate.md, "Debiasing: measured".
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vistest.generate import Rules, SceneInput, generate, parse_types  # noqa: E402
from vistest.generate.blind import transfer_report  # noqa: E402

OFF = ["balance.stratify=false", "balance.removal_budget=0"]


def rooms(start: int, n: int, frames: int, cache: Path) -> list[SceneInput]:
    from vistest.datasets.synthetic import random_room_scene
    from vistest.visibility.table import Visibility, compute_visibility

    out = []
    for seed in range(start, start + n):
        scene = random_room_scene(seed, num_frames=frames)
        path = cache / f"room{seed}_{frames}.npz"
        if path.exists():
            vis = Visibility.load(path)
        else:
            vis = compute_visibility(scene, occlusion="boxes")
            vis.save(path)
        out.append(SceneInput(scene, vis))
    return out


def timed(inputs: list[SceneInput], rules: Rules):
    t0 = time.perf_counter()
    gen = generate(inputs, parse_types("all"), rules, seed=0)
    return gen, time.perf_counter() - t0


def summary(name: str, gen, seconds: float) -> list[dict]:
    rep = gen.report
    records = [r for recs in gen.questions.values() for r in recs]
    tot = [sum(getattr(f, k) for f in rep.funnel) for k in ("answerable", "drawn", "final")]
    print(f"\n# {name}: {tot[2]} questions kept of {tot[0]} answerable ({100 * tot[2] / max(1, tot[0]):.0f}%), "
          f"of {tot[1]} drawn within the caps ({100 * tot[2] / max(1, tot[1]):.0f}%); generate {seconds:.1f} s; "
          f"report targets met: {rep.ok}")
    print("type | answerable | drawn | kept | kept % answerable | kept % drawn")
    for f in rep.funnel:
        print(f"{f.question_type} | {f.answerable} | {f.drawn} | {f.final} | {100 * f.final / max(1, f.answerable):.0f}"
              f" | {100 * f.final / max(1, f.drawn):.0f}")
    judged = [c for c in rep.seed_cells if c.judged]
    print(f"judged cells (mean over fold seeds {', '.join(map(str, rep.fold_seeds))}): {len(judged)}; above chance + "
          f"{100 * rep.rules.balance.blind_margin:g} points: {sum(not c.ok for c in judged)}")
    for c in sorted(judged, key=lambda c: -c.mean):
        if not c.ok:
            print(f"  above: {c.question_type} {c.attack} n={c.n} mean {100 * c.mean:+.1f}")
    print("curve (removed %, kept, worst gap): " + ", ".join(
        f"{100 * p.share:.0f}% {p.kept} {100 * p.worst_gap:+.1f}" for p in rep.curve))
    by = Counter()
    letters: dict[str, Counter] = {}
    for r in records:
        by[r["question_type"]] += 1
        if r.get("options"):
            letters.setdefault(r["question_type"], Counter())[r["ground_truth"]] += 1
    dev = {t: max(abs(c.get(x, 0) / by[t] - 1 / len(c)) for x in c) for t, c in letters.items()}
    print(f"letters: largest |share - 1/k| {100 * max(dev.values(), default=0):.1f} points; counting: largest share "
          + ", ".join(f"{d.question_type} {max(n for _, n in d.answers) / d.n:.0%}" for d in rep.distributions
                      if d.question_type.startswith("object_counting")))
    return records


def transfer(name: str, records: list[dict], train: list[dict], source: str) -> None:
    rep = transfer_report(records, train, source, margin=Rules().balance.blind_margin,
                          min_judged=Rules().balance.min_judged)
    judged = [c for c in rep.cells if c.judged]
    print(f"\n# transfer: {name} answered by attacks fitted on {source}: {len(judged)} judged cells, "
          f"{sum(c.above for c in judged)} above chance + margin; largest "
          f"{100 * max((c.gap for c in judged), default=float('nan')):+.1f}")
    for c in judged:
        if c.above:
            print(f"  above: {c.question_type} {c.attack} n={c.n} {100 * c.gap:+.1f} "
                  f"[{100 * c.ci[0]:+.1f}, {100 * c.ci[1]:+.1f}]")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rooms", type=int, default=40)
    ap.add_argument("--start", type=int, default=1000)
    ap.add_argument("--external", type=int, default=None, help="first seed of a second set of rooms (transfer)")
    ap.add_argument("--frames", type=int, default=90)
    ap.add_argument("--cache", default="/tmp/vistest-bench-blind")
    ap.add_argument("--rule", action="append", default=[])
    args = ap.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    inputs = rooms(args.start, args.rooms, args.frames, cache)
    rules = Rules().with_overrides(args.rule)
    _, off = timed(inputs, rules.with_overrides(OFF))
    gen, on = timed(inputs, rules)
    print(f"generate over {args.rooms} rooms: {on:.1f} s balanced, {off:.1f} s with the balancing off "
          f"({', '.join(OFF)}): ratio {on / off:.2f}")
    a = summary(f"rooms {args.start}-{args.start + args.rooms - 1}", gen, on)
    if args.external is not None:
        other, t = timed(rooms(args.external, args.rooms, args.frames, cache), rules)
        b = summary(f"rooms {args.external}-{args.external + args.rooms - 1}", other, t)
        transfer("the first set", a, b, "the second set")
        transfer("the second set", b, a, "the first set")


if __name__ == "__main__":
    main()
