"""Command-line interface: one sub-command per pipeline stage.

Every command reports bad input as ``Error: <file>: <field>: <what was expected>`` and
exit status 2; long work draws a progress bar on stderr unless ``--quiet``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from .atomic import write_atomic
from .sampling import PROFILES, parse_budget, parse_budgets, select_frames
from .scene import Scene


def _fail(msg: str) -> None:
    raise click.ClickException(msg)


@click.group()
@click.version_option(package_name="vistest")
def main() -> None:
    """vistest: frame-aware ground truth for spatial-reasoning benchmarks."""


def load_scene(path: str) -> Scene:
    """Load a scene for a command; validation errors become clean CLI errors."""
    try:
        return Scene.load(path)
    except ValueError as e:
        _fail(str(e))


@main.command()
@click.argument("scene_json", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Output .npz.")
@click.option("--occlusion", type=click.Choice(["none", "boxes", "depth", "mesh"]), default="boxes",
              show_default=True, help="What can hide a box.")
@click.option("--scale", type=float, default=None,
              help="Working resolution / native (default: a 160-sample grid on the longer side).")
@click.option("--near", type=float, default=None, help="Near plane in metres (default 0.001).")
@click.option("--depth-tol", type=float, default=None, help="Depth tolerance in metres (default 0.05).")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), default=None, help="Also write a long CSV.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def visibility(scene_json, output, occlusion, scale, near, depth_tol, csv_path, quiet):
    """Frames x objects visibility of SCENE_JSON, written to an .npz (and CSV)."""
    from .visibility import DEFAULT_DEPTH_TOL, DEFAULT_NEAR, compute_visibility

    scene = load_scene(scene_json)
    try:
        vis = compute_visibility(scene, occlusion=occlusion, scale=scale,
                                 near=DEFAULT_NEAR if near is None else near,
                                 depth_tol=DEFAULT_DEPTH_TOL if depth_tol is None else depth_tol, progress=not quiet)
    except ValueError as e:
        _fail(f"{scene_json}: {e}")
    vis.save(output)
    if csv_path:
        write_atomic(csv_path, vis.to_csv())
    if not quiet:
        n_valid = int(vis.valid.sum())
        click.echo(f"{scene.scene_id}: {len(vis.frame_index)} frames ({n_valid} valid) x {len(vis.object_ids)} objects, "
                   f"occlusion={occlusion} -> {output}" + (f", {csv_path}" if csv_path else ""), err=True)


@main.command("demo-scene")
@click.argument("outdir", type=click.Path(file_okay=False))
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--frames", "num_frames", type=int, default=300, show_default=True)
@click.option("--size", default="640x480", show_default=True, help="WxH of the rendered video.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def demo_scene(outdir, seed, num_frames, size, quiet):
    """Synthesise the demo scene (room, boxes, camera walk, video.mp4, scene.json) into OUTDIR."""
    from .demo import make_demo_scene

    try:
        w, h = (int(x) for x in size.lower().split("x"))
    except ValueError:
        _fail(f"--size: expected WxH such as 640x480, got {size!r}")
    path = make_demo_scene(outdir, seed=seed, num_frames=num_frames, size=(w, h), quiet=quiet)
    click.echo(str(path))


# ---- frame selection and frame-budget ground truth -------------------------------------
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


@main.command("frames")
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


@main.command("budget")
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
