"""``vistest generate``: questions from scene ground truth (vistest.generate, docs/generate.md)."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click

from ..errors import InputError
from .options import quiet_option, truth_config, truth_options


@click.command("generate")
@click.argument("scene_jsons", metavar="SCENE_JSON...", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(),
              help="Questions JSONL (one scene), or a folder of {scene_id}.jsonl (several scenes, or a folder given).")
@click.option("--visibility", "visibility_npz", multiple=True, type=click.Path(dir_okay=False),
              help="Visibility .npz of a scene from 'vistest visibility' (repeatable, matched by scene id; "
                   "default: computed now).")
@click.option("--types", default="revsi", show_default=True,
              help="Question types: 'revsi' (ReVSI's twelve), 'all' (also appearance order, route planning, numeric "
                   "options and the dynamic types), 'vsibench' (the stock lmms-eval vsibench task's, VSI-Bench's "
                   "wording), 'motion' (the dynamic types, from scenes with tracks), or a comma-separated list.")
@click.option("--rules", "preset", default="revsi", show_default=True, type=click.Choice(["revsi", "vlm3r"]),
              help="Rule preset: the thresholds and sampling probabilities of ReVSI's released generator, or of "
                   "VLM-3R's; --rule overrides single values on top.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of every random draw.")
@click.option("--answerable-at", default="all", show_default=True,
              help="Keep a question only when the budget stage keeps its answer at each of these budgets "
                   "(comma-separated; 'all' is always checked).")
@truth_options(budgets=None, profile_help="The budget stage's, for --answerable-at.")
@click.option("--rule", "rule_items", multiple=True, metavar="FAMILY.PARAM=VALUE",
              help="Override a rule (repeatable), e.g. abs_distance.min_distance_m=0.2; see docs/generate.md.")
@click.option("--report", "report_dir", type=click.Path(file_okay=False), default=None,
              help="Also write report.json, report.md, bias_scores.jsonl (each question's bias score) and "
                   "curve.png (the pruning's trade-off) into this folder.")
@quiet_option("No progress bar and no report on the terminal.")
def generate_cmd(scene_jsons, output, visibility_npz, types, preset, seed, answerable_at, rule_items, report_dir,
                 quiet, **settings):
    """Generate ReVSI / VSI-Bench questions from the ground truth of SCENE_JSON(s), balanced over the
    set, answerable in the video; write them as vistest question JSONL and report the answer
    distributions, the blind baselines against chance and the answerability per frame budget."""
    from ..atomic import write_atomic
    from ..budgets import ALL, parse_budgets
    from ..generate import Rules, SceneInput, generate, parse_types, write_questions
    from ..generate.report import curve_png
    from ..scene import Scene
    from ..visibility.table import Visibility, compute_visibility

    budgets = (ALL,) + tuple(b for b in parse_budgets(answerable_at, "--answerable-at") if b != ALL)
    rules = Rules.preset_named(preset)
    truth = dataclasses.replace(truth_config(settings), budgets=budgets)
    rules = dataclasses.replace(rules, frames=dataclasses.replace(rules.frames, truth=truth))
    rules = rules.with_overrides(rule_items)
    qtypes = parse_types(types)
    scenes = [Scene.load(p) for p in scene_jsons]
    tables = {}
    for path in visibility_npz:
        vis = Visibility.load(path)
        if vis.scene_id in tables:
            raise InputError(f"{path}: scene_id: a second visibility table for scene {vis.scene_id!r}")
        tables[vis.scene_id] = (vis, path)
    known = {s.scene_id for s in scenes}
    for sid, (_, path) in tables.items():
        if sid not in known:
            raise InputError(f"{path}: scene_id: {sid!r} is none of the scenes given ({', '.join(sorted(known))})")
    inputs = []
    for sc, path in zip(scenes, scene_jsons):
        if sc.scene_id in tables:
            vis, src = tables[sc.scene_id]
        else:
            vis, src = compute_visibility(sc, progress=not quiet), f"{path} (visibility computed)"
        inputs.append(SceneInput(sc, vis, str(src)))
    gen = generate(inputs, qtypes, rules, seed=seed, progress=not quiet)
    folder = len(scenes) > 1 or Path(output).is_dir() or str(output).endswith(("/", "\\"))
    paths = write_questions(gen, output, folder)
    if report_dir is not None:
        write_atomic(Path(report_dir) / "report.json", json.dumps(gen.report.to_dict(), indent=1) + "\n")
        write_atomic(Path(report_dir) / "report.md", gen.report.markdown())
        write_atomic(Path(report_dir) / "bias_scores.jsonl", gen.report.bias_lines())
        curve_png(gen.report, Path(report_dir) / "curve.png")
    if not quiet:
        click.echo(gen.report.text(), nl=False)
        click.echo(f"wrote {gen.report.n_questions} questions: " + ", ".join(str(p) for p in paths[:4])
                   + (f" ... ({len(paths)} files)" if len(paths) > 4 else "")
                   + (f"; report: {report_dir}" if report_dir else ""), err=True)
