"""Commands of the budget stage: ``frames`` (vistest.budget.sampling, docs/sampling.md) and
``budget`` (vistest.budget.truth, docs/questions-format.md)."""
from __future__ import annotations

import json
from pathlib import Path

import click

from ..budget.sampling import select_frames
from ..budgets import parse_budget
from .options import (OUTDIR_ALIAS, budgets_option, min_budget_room_route_option, output_option, profile_options,
                      quiet_option, seen_threshold_option, visibility_option, warn)


@click.command("frames")
@profile_options()
@click.option("--budget", "-n", required=True, help="Frames to sample: a positive integer or 'all'.")
@click.option("--num-frames", "-N", required=True, type=int, help="Decoded frames in the video.")
@click.option("--fps", type=float, default=None, help="Video frames per second (needed by some profiles).")
def frames(profile: str, options: dict, budget: str, num_frames: int, fps: float | None) -> None:
    """Print the 0-based frame indices PROFILE samples from a video, as a JSON list."""
    idx = select_frames(profile, num_frames, parse_budget(budget, "--budget"), fps=fps, **options)
    click.echo(json.dumps([int(i) for i in idx]))


@click.command("budget")
@click.argument("scene_json", type=click.Path(dir_okay=False))
@click.argument("questions_jsonl", type=click.Path(dir_okay=False))
@budgets_option()
@profile_options()
@output_option("Output folder for {budget}_frame.jsonl.", folder=True, aliases=OUTDIR_ALIAS)
@visibility_option("Visibility .npz from 'vistest visibility' (default: computed now, occlusion auto).")
@seen_threshold_option()
@min_budget_room_route_option()
@quiet_option("No progress and no summary table.")
def budget(scene_json: str, questions_jsonl: str, budgets: tuple, profile: str, options: dict, output: str,
           visibility_npz: str | None, seen_threshold: float, min_budget_room_route: int, quiet: bool) -> None:
    """Frame-budget ground truth: write OUTPUT/{budget}_frame.jsonl for each budget and
    print kept / changed / unanswerable per budget and question type."""
    from ..atomic import check_writable
    from ..budget.truth import budget_truth, summary_table, write_budget_files
    from ..questions import load_questions
    from ..scene import Scene
    from ..visibility.table import Visibility, choose_occlusion, compute_visibility

    scene = Scene.load(scene_json)
    questions = load_questions(questions_jsonl, scene=scene)
    if not questions:
        warn(f"{questions_jsonl}: no questions (the file holds no question line): the budget files hold no row")
    check_writable(output)
    if visibility_npz:
        vis = Visibility.load(visibility_npz)
    else:
        occlusion, why = choose_occlusion(scene)
        if not quiet:
            click.echo(f"occlusion: {occlusion} ({why})", err=True)
        vis = compute_visibility(scene, occlusion=occlusion, progress=not quiet)
    truth = budget_truth(scene, vis, questions, budgets=budgets, profile=profile, seen_threshold=seen_threshold,
                         min_budget_room_route=min_budget_room_route, profile_options=options)
    paths = write_budget_files(truth, output)
    if not quiet:
        click.echo(summary_table(truth), nl=False)
        click.echo("wrote " + ", ".join(str(Path(p)) for p in paths), err=True)
