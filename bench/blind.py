"""Benchmark: every blind attack, held out by scene, on generated question sets (issue #23).

Generates ``--types all`` with seed 0 over ``--rooms`` random furnished rooms
(``vistest.datasets.synthetic.random_room_scene(seed, num_frames=100)``, as tests/test_generate.py)
and, when ``--demo SCENE.json`` is given, over those rooms plus the demo scene, and over the demo
alone (the demo's `make demo` rule: ``abs_distance.skip_probability=[]``; one scene, so the
attacks are held out by question there). Every attack of ``vistest.eval.attacks`` is scored
held out on each set (``vistest.generate.blind.attack_report``: 5 folds by scene) and printed per
type against chance, with the counting answers' largest share and the letters' largest deviation
from 1/k. The attacks are judged on the report's fold seeds (0, 1, 2: the generator's
``balance.judge_fold_seeds``, which its balancing never scores on) and on ``--fresh`` fold seeds
no seed-0 balancing round uses (100 ...): per group, the cells more than 3 points above chance on
each seed, on the mean over the group and on its worst. ``--questions DIR`` scores an existing
folder of generated ``*.jsonl`` instead (how the "before" column of docs/generate.md was
measured: the questions of the generator before issue #23, scored with this script).
Complements are judged against their held-out chance (the report's ``balance.null_permutations``
re-drawn answer keys per fold seed, vistest.eval.attacks.held_out_chance). ``--external``
generates a second set over ``--rooms`` other rooms (seeds ``--rooms`` ... ``2 x --rooms - 1``)
and scores each of the two room sets with every attack fitted on the other
(vistest.eval.attacks.transfer_attacks: a blind model trained on another set of the same
generator), two-sided against ``1/k``.

    python bench/blind.py [--rooms 30] [--demo out/demo/scene.json] [--cache DIR] [--questions DIR]
                          [--markdown] [--fresh 5] [--external]

Visibility tables are cached in ``--cache`` (box occlusion for the rooms, ``auto`` for the demo).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vistest.eval.attacks import across_seeds, seeds_table  # noqa: E402
from vistest.eval.tables import markdown_table, text_table  # noqa: E402
from vistest.generate import Rules, SceneInput, generate, parse_types  # noqa: E402
from vistest.generate.blind import attack_report, transfer_report  # noqa: E402

NULL = Rules().balance.null_permutations  # the report's held-out chance of a complement


def rooms(n: int, cache: Path, start: int = 0) -> list[SceneInput]:
    from vistest.datasets.synthetic import random_room_scene
    from vistest.visibility.table import Visibility, compute_visibility

    out = []
    for seed in range(start, start + n):
        scene = random_room_scene(seed, num_frames=100)
        path = cache / f"room{seed}.npz"
        if path.exists():
            vis = Visibility.load(path)
        else:
            vis = compute_visibility(scene)
            vis.save(path)
        out.append(SceneInput(scene, vis))
    return out


def demo(scene_json: str, cache: Path) -> SceneInput:
    from vistest.scene import Scene
    from vistest.visibility.table import Visibility, compute_visibility

    scene = Scene.load(scene_json)
    path = cache / "demo.npz"
    if path.exists():
        vis = Visibility.load(path)
    else:
        vis = compute_visibility(scene)
        vis.save(path)
    return SceneInput(scene, vis)


def set_stats(records: list[dict]) -> list[str]:
    """The counting answers' largest share and the letters' largest deviation from 1/k, per type."""
    by: dict[str, list[dict]] = {}
    for r in records:
        by.setdefault(r["question_type"], []).append(r)
    lines = []
    for t, rs in sorted(by.items()):
        parts = [f"{t} (n={len(rs)})"]
        if t.startswith("object_counting"):
            c = Counter(str(r["ground_truth"]) for r in rs)
            parts.append(f"largest count share {max(c.values()) / len(rs):.1%}")
        if rs[0].get("options"):
            k = len(rs[0]["options"])
            c = Counter(r["ground_truth"] for r in rs)
            dev = max(abs(c.get(x, 0) / len(rs) - 1 / k) for x in "ABCDEFGH"[:k])
            parts.append(f"letters max |share - 1/k| {100 * dev:.1f} pts")
        lines.append("  " + "; ".join(parts))
    return lines


def seed_groups(fresh: int) -> list[tuple[str, tuple[int, ...]]]:
    """The fold seeds judged: the report's and ``fresh`` ones no generation run uses."""
    return [("the report's fold seeds", (0, 1, 2)), ("fresh fold seeds", tuple(range(100, 100 + fresh)))]


def report(name: str, records: list[dict], markdown: bool, fresh: int = 5) -> None:
    t0 = time.time()
    rep = attack_report(records, permutations=NULL)
    judged = [c for c in rep.cells if c.judged]
    above = [c for c in judged if c.above and not c.complement]
    comp = [c for c in judged if c.above and c.complement]
    below = [c for c in judged if c.below and not c.complement]
    resolved = [c for c in above + comp if c.ci[0] > c.margin]
    print(f"\n## {name}: {len(records)} questions, {len({r['scene_id'] for r in records})} scene(s), attacks in "
          f"{time.time() - t0:.1f} s; {len(judged)} judged cells (attacks and complements 'not-X'): {len(above)} "
          f"attack(s) above chance + 3 points, {len(comp)} complement(s) above chance + 3 (their attack far below "
          f"chance) ({len(resolved)} of these with chance + 3 below their 95% interval); {len(below)} attack(s) "
          f"below chance - 3 points; chance + 3 inside the 95% interval of {sum(c.margin_in_ci for c in judged)} "
          f"of {len(judged)}")
    for label, seeds in seed_groups(fresh):  # folds the balancing never saw (vistest.generate.balance.fold_seeds)
        cells = [c for c in across_seeds([attack_report(records, s, permutations=NULL) for s in seeds], seeds)
                 if c.judged]
        per_seed = [sum(s in c.seeds_above for c in cells) for s in seeds]
        print(f"  {label} {', '.join(map(str, seeds))}: of {len(cells)} judged cells, above chance + 3 per seed "
              f"{per_seed}; mean over the seeds above: {sum(c.above and not c.complement for c in cells)} "
              f"attack(s), {sum(c.above and c.complement for c in cells)} complement(s) (largest mean "
              f"{100 * max(c.mean for c in cells):+.1f}); worst seed above: "
              f"{sum(c.worst > c.margin + 1e-9 for c in cells)}")
        if label.startswith("the report"):
            table = seeds_table(cells, rep.folds.scheme)
            print(markdown_table(table) if markdown else text_table(table))
    print(markdown_table(rep.table()) if markdown else text_table(rep.table()))
    print("\n".join(set_stats(records)))


def transfer(name: str, records: list[dict], train: list[dict], source: str, markdown: bool) -> None:
    """Every attack fitted on ``train`` (another set, other rooms) and scored on ``records``."""
    rep = transfer_report(records, train, source)
    judged = [c for c in rep.cells if c.judged]
    above = [c for c in judged if c.above]
    print(f"\n## transfer: {name} answered by attacks fitted on {source}: {len(judged)} judged cells, "
          f"{sum(not c.complement for c in above)} attack(s) and {sum(c.complement for c in above)} complement(s) "
          f"above chance + 3 ({sum(c.ci[0] > c.margin for c in above)} with chance + 3 below their 95% interval); "
          f"largest {100 * max((c.gap for c in judged), default=float('nan')):+.1f}")
    for c in above:
        print(f"  above: {c.question_type} {c.attack} n={c.n} {100 * c.gap:+.1f} "
              f"[{100 * c.ci[0]:+.1f}, {100 * c.ci[1]:+.1f}]")
    if markdown:
        print(markdown_table(rep.table()))


def load_questions(folder: str) -> list[dict]:
    out = []
    for p in sorted(Path(folder).glob("*.jsonl")):
        out += [json.loads(x) for x in p.read_text().splitlines() if x.strip()]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rooms", type=int, default=30)
    ap.add_argument("--demo", default=None, help="the demo's scene.json (vistest demo-scene)")
    ap.add_argument("--cache", default="/tmp/vistest-bench-blind")
    ap.add_argument("--questions", default=None, help="score this folder of generated questions instead")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--fresh", type=int, default=5, help="fresh fold seeds judged (100, 101 ...)")
    ap.add_argument("--external", action="store_true",
                    help="also generate over --rooms other rooms (seeds --rooms ... 2 x --rooms - 1) and score "
                         "each set's attacks fitted on the other (transfer)")
    args = ap.parse_args()
    if args.questions:
        report(args.questions, load_questions(args.questions), args.markdown, args.fresh)
        return
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    inputs = rooms(args.rooms, cache)
    sets = [(f"{args.rooms} random rooms", inputs, Rules())]
    if args.demo:
        d = demo(args.demo, cache)
        sets.append((f"{args.rooms} random rooms + the demo", inputs + [d], Rules()))
        sets.append(("the demo alone", [d], Rules().with_overrides(["abs_distance.skip_probability=[]"])))
    outputs = {}
    if args.external:
        sets.append((f"{args.rooms} other random rooms", rooms(args.rooms, cache, args.rooms), Rules()))
    for name, ins, rules in sets:
        t0 = time.time()
        gen = generate(ins, parse_types("all"), rules, seed=0)
        records = [r for recs in gen.questions.values() for r in recs]
        print(f"\n# generate: {name} in {time.time() - t0:.1f} s; report targets met: {gen.report.ok}")
        for n in gen.report.notes:
            print(f"  note: {n}")
        dropped = [f.question_type for f in gen.report.funnel if f.answerable and not f.final]
        print(f"  kept {sum(f.final for f in gen.report.funnel)} of {sum(f.answerable for f in gen.report.funnel)} "
              f"answerable questions; {len(dropped)} type(s) dropped: {', '.join(dropped) or '-'}")
        print("  questions per type, answerable before balancing -> kept: " + ", ".join(
            f"{f.question_type} {f.answerable} -> {f.final}" for f in gen.report.funnel))
        report(name, records, args.markdown, args.fresh)
        outputs[name] = records
    if args.external:
        a, b = f"{args.rooms} random rooms", f"{args.rooms} other random rooms"
        transfer(a, outputs[a], outputs[b], b, args.markdown)
        transfer(b, outputs[b], outputs[a], a, args.markdown)


if __name__ == "__main__":
    main()
