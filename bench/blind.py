"""Benchmark: the debiased set on rooms no test uses (issues #34, #43): kept shares, floors, blind
attacks, word priors, the size leak against a per-label median table, transfer, time.

Two kinds of rooms, ``--types all``, seed 0, box occlusion:

* ``--source real`` (the default): rooms from real layouts (vistest.generate.real_rooms: the boxes
  and labels of the VSI-Bench meta info in ``--meta``, a camera walk of ``--frames`` frames through
  each): ``--rooms`` scans drawn at random (``--split-seed``), the **world prior cross-fitted** on
  the other scans (vistest.generate.prior_tables.derive(only=...), made active with
  vistest.eval.world_prior.using): never judged on its own data;
* ``--source random``: ``--sets`` sets of ``--rooms`` random furnished rooms
  (``vistest.synthetic.random_room_scene(seed, num_frames=--frames)``, seeds ``--start``,
  ``--start + 1000`` ...), the committed world prior.

Per set it prints what ``vistest generate`` reports (per type the answerable pool, what the caps drew,
what the pruning kept; the judged attacks above chance + margin; the curve) and checks computed here,
independently of the report:

* **floors** (issue #43): every type with >= 10 answerable keeps >= 10, >= 100 answerable keeps
  >= 20; kept >= 60% of drawn;
* **word priors** of the relative directions (>= 40 questions): the answer *words* counted here,
  held out by scene (leave one scene out): "always the word most frequent in the other scenes" and
  "never the word rarest there" (uniform over the other options), each against 1/k;
* **size leak**: the report's largest judged gap on ``object_size_estimation`` (mean over its fold
  seeds) against a per-label median table computed here (real rooms: on the prior's scans, every
  instance of every label; random rooms: held out by scene on the set's own answers), MRA gap.

``--external START`` (random rooms): transfer between two sets. ``--timing``: the generation again
with the balancing off, and the ratio.

    python bench/blind.py [--source real|random] [--rooms N] [--sets 4] [--start 1000] [--frames 90]
                          [--meta DIR] [--external START] [--timing] [--cache DIR] [--rule FAMILY.PARAM=VALUE ...]

Measured figures: docs/generate.md, "Debiasing: measured".
"""
from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vistest.answers import mean_relative_accuracy  # noqa: E402
from vistest.generate import Rules, SceneInput, generate, parse_types  # noqa: E402
from vistest.generate.blind import transfer_report  # noqa: E402

OFF = ["balance.stratify=false", "balance.removal_budget=0"]
META = ROOT.parent / "shared" / "reference" / "vsibench-meta-info"
DIRECTION = "object_rel_direction_"


def _vis(scene, path: Path):
    from vistest.visibility.table import Visibility, compute_visibility

    if path.exists():
        return Visibility.load(path)
    vis = compute_visibility(scene, occlusion="boxes")
    vis.save(path)
    return vis


def random_rooms(start: int, n: int, frames: int, cache: Path) -> list[SceneInput]:
    from vistest.synthetic import random_room_scene

    return [SceneInput(s, _vis(s, cache / f"room{seed}_{frames}.npz"))
            for seed, s in ((seed, random_room_scene(seed, num_frames=frames)) for seed in range(start, start + n))]


def real_rooms(meta: Path, n: int, frames: int, cache: Path, split_seed: int):
    """(inputs, the cross-fitted world prior, the prior scans' size table: label -> every instance's cm)."""
    from vistest.generate.real_rooms import meta_files, read_scans, real_layout_scene, split_scans
    from vistest.generate.prior_tables import derive, world_prior_of

    files = meta_files(meta)
    scans = read_scans(files)
    rooms, prior_scans = split_scans(list(scans), n, split_seed)
    prior = world_prior_of(derive(files, only=set(prior_scans)), f"{len(prior_scans)} scans not used as rooms")
    inputs = [SceneInput(s, _vis(s, cache / f"real-{k}_{frames}.npz"))
              for k, s in ((k, real_layout_scene(k, scans[k], num_frames=frames)) for k in rooms)]
    sizes: dict[str, list[float]] = defaultdict(list)
    for k in prior_scans:
        for label, boxes in scans[k]["object_bbox"].items():
            sizes[label.strip().lower()] += [100.0 * max(b["axesLengths"]) for b in boxes]
    return inputs, prior, sizes


def timed(inputs: list[SceneInput], rules: Rules):
    t0 = time.perf_counter()
    gen = generate(inputs, parse_types("all"), rules, seed=0)
    return gen, time.perf_counter() - t0


def records_of(gen) -> list[dict]:
    return [r for recs in gen.questions.values() for r in recs]


def summary(name: str, gen, seconds: float) -> list[dict]:
    rep = gen.report
    records = records_of(gen)
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
    for n in rep.notes:
        if "raised" in n or "dropped" in n:
            print(f"note: {n}")
    return records


def floors(gen) -> bool:
    """The issue's floors (module docstring), printed; True when all hold."""
    ok = True
    drawn = sum(f.drawn for f in gen.report.funnel)
    final = sum(f.final for f in gen.report.funnel)
    for f in gen.report.funnel:
        need = 20 if f.answerable >= 100 else 10 if f.answerable >= 10 else 0
        if f.final < need:
            ok = False
            print(f"  FLOOR: {f.question_type}: {f.final} kept of {f.answerable} answerable (needs {need})")
    share = final / max(1, drawn)
    print(f"floors: {'met' if ok else 'NOT met'}; kept {final} of {drawn} drawn ({100 * share:.0f}%, needs >= 60%)")
    return ok and share >= 0.6


def answer_word(r: dict) -> str:
    letter = r["ground_truth"]
    return next(o.split(". ", 1)[1] for o in r["options"] if o.startswith(f"{letter}. "))


def word_priors(records: list[dict], min_n: int = 40) -> float:
    """Held-out word priors of the relative directions (module docstring), counted here; returns the
    largest gap above 1/k (points / 100) over the types of >= ``min_n`` questions."""
    by: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        if r["question_type"].startswith(DIRECTION):
            by[r["question_type"]].append(r)
    worst = -1.0
    for qtype, rs in sorted(by.items()):
        k = len(rs[0]["options"])
        words = Counter(answer_word(r) for r in rs)
        scenes = sorted({r["scene_id"] for r in rs})
        always, never = [], []
        for s in scenes:
            train = Counter(answer_word(r) for r in rs if r["scene_id"] != s)
            test = [answer_word(r) for r in rs if r["scene_id"] == s]
            offered = sorted({o.split(". ", 1)[1] for r in rs for o in r["options"]})
            top = min(offered, key=lambda w: (-train[w], w))
            rare = min(offered, key=lambda w: (train[w], w))
            always += [float(w == top) for w in test]
            never += [0.0 if w == rare else 1.0 / (k - 1) for w in test]
        gaps = (np.mean(always) - 1 / k, np.mean(never) - 1 / k)
        judged = len(rs) >= min_n
        if judged:
            worst = max(worst, *gaps)
        print(f"  words {qtype} n={len(rs)} {dict(sorted(words.items()))}: held out 'always the most frequent' "
              f"{100 * gaps[0]:+.1f}, 'never the rarest' {100 * gaps[1]:+.1f}{'' if judged else ' (not judged: < 40)'}")
    return worst


def size_leak(gen, records: list[dict], table: dict[str, list[float]] | None) -> tuple[float, float]:
    """(the report's largest judged mean gap on object_size_estimation, a per-label median table's
    MRA gap on its questions); ``table``: label -> sizes (cm) outside the set, else held out by scene."""
    rs = [r for r in records if r["question_type"] == "object_size_estimation"]
    if not rs:
        return float("nan"), float("nan")
    gts = np.array([float(r["ground_truth"]) for r in rs])
    chance = np.array([np.mean([mean_relative_accuracy(gts[j], gts[i]) for j in range(len(rs)) if j != i])
                       for i in range(len(rs))])
    labels = [r["object_label"] for r in rs]
    preds = []
    for i, r in enumerate(rs):
        if table is not None:
            vals = table.get(labels[i]) or [v for vs in table.values() for v in vs]
        else:
            vals = [gts[j] for j in range(len(rs)) if rs[j]["scene_id"] != r["scene_id"] and labels[j] == labels[i]]
            vals = vals or [gts[j] for j in range(len(rs)) if rs[j]["scene_id"] != r["scene_id"]]
        preds.append(statistics.median(vals))
    score = np.array([mean_relative_accuracy(p, g) for p, g in zip(preds, gts)])
    report = max((c.mean for c in gen.report.seed_cells if c.judged and c.question_type == "object_size_estimation"
                  and not c.complement), default=float("nan"))
    return report, float(np.mean(score - chance))


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


def one_set(name: str, inputs: list[SceneInput], rules: Rules, table, timing: bool, prior=None) -> list[dict]:
    from vistest.eval import world_prior

    with world_prior.using(prior) if prior is not None else contextlib.nullcontext():
        if timing:
            _, off = timed(inputs, rules.with_overrides(OFF))
        gen, on = timed(inputs, rules)
    if timing:
        print(f"generate over {len(inputs)} rooms: {on:.1f} s balanced, {off:.1f} s with the balancing off "
              f"({', '.join(OFF)}): ratio {on / off:.2f}")
    records = summary(name, gen, on)
    floors(gen)
    worst = word_priors(records)
    print("word priors: " + (f"largest held-out gap on a direction type of >= 40: {100 * worst:+.1f} (target <= +5)"
                             if worst > -1.0 else "no direction type of >= 40 questions (nothing judged)"))
    rep, tab = size_leak(gen, records, table)
    print(f"size leak: the report's largest judged gap {100 * rep:+.1f}, a per-label median table "
          f"{100 * tab:+.1f} (target: within 3 points or above)")
    return records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", choices=("real", "random"), default="real")
    ap.add_argument("--rooms", type=int, default=None, help="rooms per set (real: 144, random: 40)")
    ap.add_argument("--sets", type=int, default=1, help="random: sets of rooms, seeds START, START + 1000 ...")
    ap.add_argument("--start", type=int, default=1000)
    ap.add_argument("--external", type=int, default=None, help="random: first seed of a set for transfer")
    ap.add_argument("--frames", type=int, default=90)
    ap.add_argument("--meta", type=Path, default=META)
    ap.add_argument("--split-seed", type=int, default=0)
    ap.add_argument("--timing", action="store_true")
    ap.add_argument("--json", type=Path, default=None, help="write every set's questions here (one file per set)")
    ap.add_argument("--cache", default="/tmp/vistest-bench-blind")
    ap.add_argument("--rule", action="append", default=[])
    args = ap.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    rules = Rules().with_overrides(args.rule)
    if args.source == "real":
        n = args.rooms or 144
        inputs, prior, sizes = real_rooms(args.meta, n, args.frames, cache, args.split_seed)
        print(f"{n} real-layout rooms; world prior cross-fitted on {prior.source}")
        one_set(f"{n} real-layout rooms", inputs, rules, sizes, args.timing, prior)
        return
    n = args.rooms or 40
    sets = []
    for i in range(args.sets):
        start = args.start + 1000 * i
        sets.append(one_set(f"rooms {start}-{start + n - 1}", random_rooms(start, n, args.frames, cache), rules, None,
                            args.timing))
    if args.external is not None:
        b = one_set(f"rooms {args.external}-{args.external + n - 1}",
                    random_rooms(args.external, n, args.frames, cache), rules, None, False)
        transfer("the first set", sets[0], b, "the second set")
        transfer("the second set", b, sets[0], "the first set")
    if args.json:
        args.json.write_text(json.dumps(sets))


if __name__ == "__main__":
    main()
