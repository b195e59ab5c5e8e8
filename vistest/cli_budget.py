"""CLI commands of the frame-budget stage: ``vistest frames`` and ``vistest budget``.

Registered on the main group by vistest/cli.py. Bad input is reported by click as
``Error: <file>[:<line>]: <field>: <what was expected>`` (a ``click.ClickException``).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from .sampling import PROFILES, parse_budget, parse_budgets, select_frames


def _fail(msg: str) -> None:
    raise click.ClickException(msg)


def _parse_option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` with VALUE read as JSON when it parses (``2.5``, ``true``), else a string."""
    if "=" not in text:
        raise ValueError(f"--option: expected KEY=VALUE, got {text!r}")
    key, raw = text.split("=", 1)
    key = key.strip().replace("-", "_")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key, value


def _profile_options(items: tuple[str, ...]) -> dict[str, Any]:
    return dict(_parse_option(t) for t in items)


_PROFILE_HELP = "Sampler profile: " + ", ".join(PROFILES) + "."
_OPTION_HELP = ("Profile option KEY=VALUE (repeatable), e.g. sample_fps=1 for llava-vid, "
                "fma=false for qwen-vl-utils; see docs/sampling.md.")


@click.command("frames")
@click.option("--profile", "-p", default="uniform", show_default=True, type=click.Choice(list(PROFILES)),
              help=_PROFILE_HELP)
@click.option("--budget", "-n", required=True, help="Frames to sample: a positive integer or 'all'.")
@click.option("--num-frames", "-N", required=True, type=int, help="Decoded frames in the video.")
@click.option("--fps", type=float, default=None, help="Video frames per second (needed by some profiles).")
@click.option("--option", "-O", "options", multiple=True, help=_OPTION_HELP)
def frames(profile: str, budget: str, num_frames: int, fps: float | None, options: tuple[str, ...]) -> None:
    """Print the 0-based frame indices PROFILE samples from a video, as a JSON list."""
    try:
        idx = select_frames(profile, num_frames, parse_budget(budget, "--budget"), fps=fps,
                            **_profile_options(options))
    except ValueError as e:
        _fail(str(e))
    click.echo(json.dumps([int(i) for i in idx]))


@click.command("budget")
@click.argument("scene_json", type=click.Path(dir_okay=False))
@click.argument("questions_jsonl", type=click.Path(dir_okay=False))
@click.option("--budgets", default="16,32,64,all", show_default=True,
              help="Comma-separated frame budgets (positive integers and/or 'all').")
@click.option("--profile", "-p", default="uniform", show_default=True, type=click.Choice(list(PROFILES)),
              help=_PROFILE_HELP)
@click.option("--option", "-O", "options", multiple=True, help=_OPTION_HELP)
@click.option("-o", "--outdir", required=True, type=click.Path(file_okay=False),
              help="Output folder for {budget}_frame.jsonl.")
@click.option("--visibility", "visibility_npz", type=click.Path(dir_okay=False), default=None,
              help="Visibility .npz from 'vistest visibility' (default: computed now, box occlusion).")
@click.option("--seen-threshold", type=float, default=0.05, show_default=True,
              help="An object is seen in a frame when its visible fraction of the image exceeds this.")
@click.option("--min-budget-room-route", type=int, default=32, show_default=True,
              help="Smallest budget at which room size and route planning are answerable.")
@click.option("--quiet", is_flag=True, help="No progress and no summary table.")
def budget(scene_json: str, questions_jsonl: str, budgets: str, profile: str, options: tuple[str, ...], outdir: str,
           visibility_npz: str | None, seen_threshold: float, min_budget_room_route: int, quiet: bool) -> None:
    """Frame-budget ground truth: write OUTDIR/{budget}_frame.jsonl for each budget and
    print kept / changed / unanswerable per budget and question type."""
    from .budget import budget_truth, summary_table, write_budget_files
    from .questions import load_questions
    from .scene import Scene
    from .visibility import Visibility

    try:
        budget_list = parse_budgets(budgets)
        opts = _profile_options(options)
        scene = Scene.load(scene_json)
        questions = load_questions(questions_jsonl, scene=scene)
    except ValueError as e:
        _fail(str(e))
    if visibility_npz is not None:
        try:
            vis = Visibility.load(visibility_npz)
        except (OSError, ValueError, KeyError) as e:
            _fail(f"{visibility_npz}: cannot read visibility ({e})")
    else:
        from .visibility import compute_visibility  # lazy: numba compilation only when needed

        try:
            vis = compute_visibility(scene, progress=not quiet)
        except ValueError as e:
            _fail(f"{scene_json}: {e}")
    try:
        truth = budget_truth(scene, vis, questions, budgets=budget_list, profile=profile,
                             seen_threshold=seen_threshold, min_budget_room_route=min_budget_room_route,
                             profile_options=opts)
    except ValueError as e:
        msg = str(e)
        where = visibility_npz or scene_json
        _fail(msg if msg.startswith(str(Path(questions_jsonl))) else f"{where}: {msg}")
    paths = write_budget_files(truth, outdir)
    if not quiet:
        click.echo(summary_table(truth), nl=False)
        click.echo("wrote " + ", ".join(str(Path(p)) for p in paths), err=True)
