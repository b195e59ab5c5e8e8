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
from .budget.sampling import PROFILES, parse_budget, parse_budgets, select_frames
from .scene import Scene


class InputError(click.ClickException):
    """Bad input (a file, a field, a value): ``Error: <message>`` and exit status 2."""

    exit_code = 2


def _fail(msg: str) -> None:
    raise InputError(msg)


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
@click.option("--occlusion", type=click.Choice(["auto", "none", "boxes", "depth", "mesh"]), default="auto",
              show_default=True,
              help="What can hide a box (auto: the scene's mesh, else its depth frames, else boxes).")
@click.option("--scale", type=float, default=None,
              help="Working resolution / native (default: a 160-sample grid on the longer side).")
@click.option("--near", type=float, default=None, help="Near plane in metres (default 0.001).")
@click.option("--depth-tol", type=float, default=None, help="Depth tolerance in metres (default 0.05).")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), default=None, help="Also write a long CSV.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def visibility(scene_json, output, occlusion, scale, near, depth_tol, csv_path, quiet):
    """Frames x objects visibility of SCENE_JSON, written to an .npz (and CSV)."""
    from .visibility.table import DEFAULT_DEPTH_TOL, DEFAULT_NEAR, choose_occlusion, compute_visibility

    scene = load_scene(scene_json)
    try:
        occlusion, why = choose_occlusion(scene, occlusion)
        if not quiet:
            click.echo(f"occlusion: {occlusion} ({why})", err=True)
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
@click.option("--force", is_flag=True, help="Render again even if OUTDIR holds this demo already.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def demo_scene(outdir, seed, num_frames, size, force, quiet):
    """Synthesise the demo scene (room, boxes, camera walk, video.mp4, scene.json) into OUTDIR."""
    from .datasets.demo import make_demo_scene

    try:
        w, h = (int(x) for x in size.lower().split("x"))
    except ValueError:
        _fail(f"--size: expected WxH such as 640x480, got {size!r}")
    try:
        path = make_demo_scene(outdir, seed=seed, num_frames=num_frames, size=(w, h), quiet=quiet, force=force)
    except ValueError as e:
        _fail(f"demo-scene: {e}")
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
              help="Visibility .npz from 'vistest visibility' (default: computed now, occlusion auto).")
@click.option("--seen-threshold", type=float, default=0.05, show_default=True,
              help="An object is seen in a frame when its visible fraction of the image exceeds this.")
@click.option("--min-budget-room-route", type=int, default=32, show_default=True,
              help="Smallest budget at which room size and route planning are answerable.")
@click.option("--quiet", is_flag=True, help="No progress and no summary table.")
def budget(scene_json: str, questions_jsonl: str, budgets: str, profile: str, options: tuple[str, ...], outdir: str,
           visibility_npz: str | None, seen_threshold: float, min_budget_room_route: int, quiet: bool) -> None:
    """Frame-budget ground truth: write OUTDIR/{budget}_frame.jsonl for each budget and
    print kept / changed / unanswerable per budget and question type."""
    from .budget.truth import budget_truth, summary_table, write_budget_files
    from .questions import load_questions
    from .scene import Scene
    from .visibility.table import Visibility

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
        from .visibility.table import choose_occlusion, compute_visibility  # lazy: numba compiles when needed

        try:
            occlusion, why = choose_occlusion(scene)
            if not quiet:
                click.echo(f"occlusion: {occlusion} ({why})", err=True)
            vis = compute_visibility(scene, occlusion=occlusion, progress=not quiet)
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


# ---- scoring and blind baselines (vistest/eval/score.py, vistest/eval/baselines.py, docs/scoring.md) ----
def _score_choices() -> tuple[tuple[str, ...], tuple[str, ...]]:
    from .eval.baselines import BLIND_MODELS
    from .eval.score import PROTOCOL_CHOICES

    return PROTOCOL_CHOICES, BLIND_MODELS


_RUN_DIR_HELP = "Folder with the {budget}_frame.jsonl of 'vistest budget' (and optionally dummy_gt.jsonl)."


@main.command("score")
@click.argument("predictions", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("-r", "--run-dir", required=True, type=click.Path(file_okay=False), help=_RUN_DIR_HELP)
@click.option("-o", "--outdir", type=click.Path(file_okay=False), default=None,
              help="Output folder for report.json, report.md, rows.jsonl, plots [default: RUN_DIR/score].")
@click.option("--protocol", type=click.Choice(_score_choices()[0]), default="auto", show_default=True,
              help="lmms-eval parsing and aggregation rules (auto: from the question types).")
@click.option("--splits", type=click.IntRange(1), default=200, show_default=True, help="Held-out rank-attack splits.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the held-out splits.")
@click.option("--quiet", is_flag=True, help="No table on the terminal.")
def score(predictions, run_dir, outdir, protocol, splits, seed, quiet):
    """Score PREDICTIONS (plain JSONL or lmms-eval --log_samples files, or folders of them)
    against RUN_DIR: accuracy / MRA per budget and type, hallucination, blind baselines."""
    from .eval.score import render_text, run_score

    try:
        report, written = run_score(predictions, run_dir, outdir, protocol, splits, seed)
    except ValueError as e:
        _fail(str(e))
    if not quiet:
        click.echo(render_text(report), nl=False)
        click.echo("wrote " + ", ".join(str(p) for p in written.values()), err=True)


@main.command("baseline")
@click.option("-r", "--run-dir", required=True, type=click.Path(file_okay=False), help=_RUN_DIR_HELP)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Output predictions .jsonl.")
@click.option("--model", type=click.Choice(_score_choices()[1]), default="most-frequent", show_default=True,
              help="Blind model: most-frequent answer, or category-mean size prior on size questions.")
def baseline(run_dir, output, model):
    """Write a blind model's predictions for RUN_DIR as plain JSONL (score it with 'vistest score')."""
    from .eval.baselines import write_baseline

    try:
        n = write_baseline(run_dir, output, model)
    except ValueError as e:
        _fail(str(e))
    click.echo(f"{model}: {n} predictions -> {output}", err=True)


# ---- dataset import and frame-convention audit (vistest/datasets, vistest/datasets/audit.py) -----
def _import_epilog() -> str:
    from .datasets import ADAPTERS

    return "\b\nDatasets (options: -O KEY=VALUE; see docs/adapters.md):\n" + "\n".join(
        f"  {a.name}: {a.title}; PATH = {a.path_help}\n    options: {', '.join(o.name for o in a.options) or '-'}"
        for a in ADAPTERS.values())


@main.command("import", epilog=_import_epilog())
@click.argument("dataset")
@click.argument("path", type=click.Path())
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Scene folder to write (scene.json, provenance.json).")
@click.option("--boxes", default=None,
              help="native (default), none, or KIND:PATH such as vsibench:scannet_meta_info_val.json.")
@click.option("--frames", default=None, help="For a box-only DATASET (vsibench): KIND:PATH of the frames.")
@click.option("--video", default=None, type=click.Path(dir_okay=False), help="Video the frame indices refer to.")
@click.option("--option", "-O", "options", multiple=True, help="Adapter option KEY=VALUE (repeatable).")
@click.option("--quiet", is_flag=True, help="No progress bar and no summary.")
def import_cmd(dataset, path, out_dir, boxes, frames, video, options, quiet):
    """Read PATH in DATASET's native layout; write OUTPUT/scene.json in the canonical conventions."""
    from .datasets import import_scene

    try:
        scene_path = import_scene(dataset, path, out_dir, boxes=boxes, frames=frames, video=video,
                                  options=_profile_options(options), progress=not quiet)
        scene = Scene.load(scene_path)
    except ValueError as e:
        _fail(str(e))
    if not quiet:
        n_valid = sum(f.valid for f in scene.frames)
        click.echo(f"{scene.scene_id}: {len(scene.frames)} frames ({n_valid} valid), {len(scene.objects)} objects "
                   f"-> {scene_path} (check it: vistest audit {scene_path})", err=True)
    click.echo(str(scene_path))


@main.command("audit")
@click.argument("scene_json", type=click.Path(dir_okay=False))
@click.option("--alignment", "alignments", multiple=True, type=click.Path(dir_okay=False),
              help="Candidate alignment to test: ScanNet sceneXXXX_XX.txt, provenance.json, JSON 4x4 (repeatable).")
@click.option("--no-provenance", is_flag=True, help="Ignore the alignments in provenance.json beside the scene.")
@click.option("--evidence", type=click.Choice(["auto", "depth", "mesh"]), default="auto", show_default=True,
              help="What to check against (auto: depth frames, and the mesh with its colours against the "
                   "frames, whichever exist).")
@click.option("--max-frames", type=int, default=60, show_default=True, help="Frames audited (evenly spaced).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None, help="Also write the report as JSON.")
@click.option("--objects", is_flag=True, help="Also print the per-object table.")
@click.option("--quiet", is_flag=True, help="No progress bar and no report: the exit status only.")
def audit_cmd(scene_json, alignments, no_provenance, evidence, max_frames, json_path, objects, quiet):
    """Check that SCENE_JSON's boxes, poses and intrinsics agree with its depth/mesh, and which
    convention fix fits best. Exit status 0 = pass, 1 = fails the thresholds (docs/audit.md), 2 = bad input."""
    from .datasets.audit import CheckParams, audit_scene, load_alignments, provenance_alignments, write_report

    ctx = click.get_current_context()
    try:
        scene = Scene.load(scene_json)
        if max_frames < 1:
            raise ValueError(f"--max-frames: expected a positive integer, got {max_frames}")
        cands = [] if no_provenance else provenance_alignments(scene_json)
        for a in alignments:
            cands += load_alignments(a)
        report = audit_scene(scene, alignments=cands, use_depth=evidence in ("auto", "depth"),
                             use_mesh=evidence in ("auto", "mesh"), params=CheckParams(max_frames=max_frames),
                             progress=not quiet)
    except ValueError as e:  # exit 2: bad input, distinct from 1 = the scene fails the audit
        msg = str(e)
        click.echo(f"Error: {msg if msg.startswith(str(scene_json)) else f'{scene_json}: {msg}'}", err=True)
        ctx.exit(2)
    if json_path:
        write_report(report, json_path)
    if not quiet:
        click.echo(report.text(per_object=objects), nl=False)
    if not report.passed:
        ctx.exit(1)


# ---- videos: budget videos, dummy videos, the whole pipeline of a scene (docs/videos.md) ----
def _video_options(cmd):
    """The options `videos` and `run` share (applied bottom-up, listed top-down in --help)."""
    from .videos.write import DEFAULT_MAX_MEMORY_MB
    from .videos.plan import DEFAULT_BUDGET_FPS, DEFAULT_EVIDENCE_THRESHOLD, DEFAULT_MASK_MARGIN, DUMMY_MODES, FILLS
    from .videos.ffmpeg import X264_PRESETS

    opts = [
        click.option("-o", "--outdir", required=True, type=click.Path(file_okay=False),
                     help="Output folder (shared by scenes: {n}_frame/, dummy_*/, scenes/, manifest.jsonl)."),
        click.option("--budgets", default="16,32,64,all", show_default=True,
                     help="Comma-separated frame budgets (positive integers and/or 'all')."),
        click.option("--profile", "-p", default="uniform", show_default=True, type=click.Choice(list(PROFILES)),
                     help=_PROFILE_HELP + " Its selections are what the budget videos hold."),
        click.option("--option", "-O", "options", multiple=True, help=_OPTION_HELP),
        click.option("--dummy", default=",".join(DUMMY_MODES), show_default=True,
                     help="Dummy modes, comma-separated: " + ", ".join(DUMMY_MODES) + " (or 'none')."),
        click.option("--fill", type=click.Choice(list(FILLS)), default="black", show_default=True,
                     help="How mask dummies fill the evidence objects' boxes."),
        click.option("--evidence-threshold", type=float, default=DEFAULT_EVIDENCE_THRESHOLD, show_default=True,
                     help="A frame carries evidence when a referenced object's visible fraction of the image "
                          "exceeds this (0: any visible part)."),
        click.option("--mask-margin", type=int, default=DEFAULT_MASK_MARGIN, show_default=True,
                     help="Pixels added around each masked box."),
        click.option("--budget-fps", type=float, default=DEFAULT_BUDGET_FPS, show_default=True,
                     help="Frame rate of the n-frame budget videos (1: fps-based samplers take every frame)."),
        click.option("--keep-unknown-frames", is_flag=True,
                     help="Dummies keep frames without a valid pose (default: treated as evidence)."),
        click.option("--crf", type=click.IntRange(0, 51), default=18, show_default=True, help="libx264 quality."),
        click.option("--preset", type=click.Choice(list(X264_PRESETS)), default="medium", show_default=True,
                     help="libx264 preset."),
        click.option("--ffmpeg", "ffmpeg_path", type=click.Path(dir_okay=False), default=None,
                     help="ffmpeg binary (default: $VISTEST_FFMPEG, else the imageio-ffmpeg one)."),
        click.option("--max-memory", type=float, default=DEFAULT_MAX_MEMORY_MB, show_default=True,
                     help="MB the writer's processes may use (sets encoders per decode pass and threads)."),
        click.option("--jobs", type=click.IntRange(1), default=None, help="Encoders per decode pass (default: auto)."),
        click.option("--threads", type=click.IntRange(1), default=None,
                     help="libx264 threads per encoder (default: auto)."),
        click.option("--scale-intrinsics", is_flag=True,
                     help="Accept a video whose size differs from image_size: scale the intrinsics to it."),
        click.option("--visibility", "visibility_npz", type=click.Path(dir_okay=False), default=None,
                     help="Visibility .npz from 'vistest visibility' (default: computed now)."),
        click.option("--occlusion", type=click.Choice(["auto", "none", "boxes", "depth", "mesh"]), default="auto",
                     show_default=True, help="Occlusion mode when visibility is computed (auto: the scene's mesh, "
                                             "else its depth frames, else boxes)."),
        click.option("--seen-threshold", type=float, default=0.05, show_default=True,
                     help="Budget GT: an object is seen when its visible fraction exceeds this."),
        click.option("--min-budget-room-route", type=int, default=32, show_default=True,
                     help="Budget GT: smallest budget at which room size and route planning are answerable."),
        click.option("--quiet", is_flag=True, help="No progress bar and no summary."),
    ]
    for opt in reversed(opts):
        cmd = opt(cmd)
    return cmd


def _video_run(scene_json: str, questions_jsonl: str, kw: dict, full: bool, stamp: str | None = None) -> None:
    """Shared body of `videos` (full=False) and `run` (full=True)."""
    import os

    from .pipeline import VideoOptions, run_scene, write_stamp
    from .questions import load_questions
    from .videos.write import signals_as_exit
    from .videos.plan import DUMMY_MODES, EncoderSettings
    from .videos.ffmpeg import VideoError
    from .visibility.table import Visibility, choose_occlusion

    if kw["ffmpeg_path"]:
        os.environ["VISTEST_FFMPEG"] = str(Path(kw["ffmpeg_path"]).resolve())
    modes = tuple(m for m in (s.strip() for s in kw["dummy"].split(",")) if m and m != "none")
    bad = [m for m in modes if m not in DUMMY_MODES]
    if bad:
        _fail(f"--dummy: expected modes from {', '.join(DUMMY_MODES)} (or 'none'), got {bad[0]!r}")
    quiet = kw["quiet"]
    try:
        opts = VideoOptions(budgets=parse_budgets(kw["budgets"]), profile=kw["profile"],
                            profile_options=_profile_options(kw["options"]), dummy_modes=modes, fill=kw["fill"],
                            evidence_threshold=kw["evidence_threshold"], mask_margin=kw["mask_margin"],
                            budget_fps=kw["budget_fps"], unknown_as_evidence=not kw["keep_unknown_frames"],
                            settings=EncoderSettings(kw["crf"], kw["preset"]), seen_threshold=kw["seen_threshold"],
                            min_budget_room_route=kw["min_budget_room_route"], max_memory_mb=kw["max_memory"],
                            jobs=kw["jobs"], threads=kw["threads"])
        scene = Scene.load(scene_json)
        questions = load_questions(questions_jsonl, scene=scene)
        vis = Visibility.load(kw["visibility_npz"]) if kw["visibility_npz"] else None
        occlusion = kw["occlusion"]
        if vis is None:
            occlusion, why = choose_occlusion(scene, occlusion)
            if not quiet:
                click.echo(f"occlusion: {occlusion} ({why})", err=True)
    except (OSError, KeyError) as e:
        _fail(f"{kw['visibility_npz']}: cannot read visibility ({e})")
    except ValueError as e:
        _fail(str(e))
    try:
        with signals_as_exit():
            res = run_scene(scene_json, questions, kw["outdir"], opts, visibility=vis, occlusion=occlusion,
                            scale_intrinsics=kw["scale_intrinsics"], with_budget_files=full, progress=not quiet,
                            scene=scene)
    except (ValueError, VideoError, OSError) as e:
        _fail(str(e))
    if full:
        from .look.index import write_index

        # the run folder's page; `vistest sheet` rewrites it with contact sheets, and every
        # file later written under scenes/SCENE/ (timeline, overlay, score report) is linked
        write_index(kw["outdir"])
    if stamp:
        inputs = [scene_json, questions_jsonl, str(scene.path(scene.video))]
        write_stamp(stamp, inputs, res.outputs(kw["outdir"]),
                    {"scene_id": scene.scene_id, "videos": len(res.plan.variants)})
    if not quiet:
        _video_summary(res, kw["outdir"])


def _video_summary(res, outdir: str) -> None:
    """The budget GT table (``run``) on stdout; what was written, where, and every warning, on stderr."""
    from .budget.truth import summary_table

    r, plan = res.report, res.plan
    out = Path(outdir)
    if res.truth is not None:
        click.echo(summary_table(res.truth), nl=False)
    click.echo(f"{plan.scene_id}: {len(r.written)} videos written, {len(r.skipped)} up to date, "
               f"{r.passes} decode pass(es), {r.seconds:.1f} s ({r.resources.jobs} encoder(s) x "
               f"{r.resources.threads} thread(s), ~{r.resources.estimate_mb:.0f} MB modelled)", err=True)
    for w in plan.warnings:
        click.echo(f"  warning: {w}", err=True)
    for v in sorted(plan.variants, key=lambda v: v.path):
        for w in v.warnings:
            click.echo(f"  {v.path}: {w}", err=True)
    for f in res.files:
        click.echo(f"  wrote {f}", err=True)
    click.echo(f"  manifest: {out / 'manifest.jsonl'}", err=True)


@main.command("videos")
@click.argument("scene_json", type=click.Path(dir_okay=False))
@click.argument("questions_jsonl", type=click.Path(dir_okay=False))
@_video_options
def videos(scene_json: str, questions_jsonl: str, **kw) -> None:
    """Budget videos ({n}_frame/SCENE.mp4) and dummy videos with the evidence of each
    question removed, their ground truth (scenes/SCENE/dummy_gt.jsonl) and manifest.jsonl."""
    _video_run(scene_json, questions_jsonl, kw, full=False)


@main.command("run")
@click.argument("scene_json", type=click.Path(dir_okay=False))
@click.argument("questions_jsonl", type=click.Path(dir_okay=False))
@_video_options
@click.option("--stamp", type=click.Path(dir_okay=False), default=None,
              help="For make: on success write STAMP and STAMP.d (its inputs and outputs as dependencies).")
def run(scene_json: str, questions_jsonl: str, stamp: str | None, **kw) -> None:
    """The whole pipeline of one scene: visibility -> frame-budget GT -> budget videos ->
    dummy videos -> manifest, into OUTDIR (see docs/videos.md for the layout)."""
    _video_run(scene_json, questions_jsonl, kw, full=True, stamp=stamp)


# ---- looking at the ground truth: overlays and timelines (vistest/look/overlay.py, vistest/look/timeline.py, docs/looking.md) ----
@main.command("overlay")
@click.argument("scene_json", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Output .mp4 (or .png with --png).")
@click.option("--png", is_flag=True, help="Write a PNG contact sheet of the frames instead of a video.")
@click.option("--objects", default=None, help="Comma-separated object ids and/or labels to draw (default: all).")
@click.option("--frames", default=None,
              help="Decoded frames, e.g. 0,10,20-30,100-200:10 (default: all; --png: 16 spread uniformly).")
@click.option("--visibility", "visibility_npz", type=click.Path(dir_okay=False), default=None,
              help="Visibility .npz for the coverage labels (default: computed now).")
@click.option("--occlusion", type=click.Choice(["auto", "none", "boxes", "depth", "mesh"]), default="auto",
              show_default=True,
              help="Occlusion mode when visibility is computed (auto: mesh, else depth, else boxes).")
@click.option("--columns", type=int, default=4, show_default=True, help="--png: tiles per row.")
@click.option("--tile-width", type=int, default=320, show_default=True, help="--png: tile width in pixels.")
@click.option("--scale-intrinsics", is_flag=True, help="Accept a video whose size differs from image_size.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def overlay_cmd(scene_json, output, png, objects, frames, visibility_npz, occlusion, columns, tile_width,
                scale_intrinsics, quiet):
    """SCENE_JSON's video with every box drawn (clipped at the near plane, filled where visible,
    labelled with id, label and visible %), or with --png a contact sheet of frames."""
    from .look.overlay import make_overlay
    from .videos.ffmpeg import VideoError

    try:
        drawn = make_overlay(scene_json, output, png, objects, frames, visibility_npz, occlusion, columns, tile_width,
                             scale_intrinsics, progress=not quiet)
    except (ValueError, OSError, VideoError) as e:
        _fail(str(e))
    if not quiet:
        click.echo(f"overlay of {len(drawn)} frames -> {output}", err=True)


@main.command("timeline")
@click.argument("scene_json", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Output .png.")
@click.option("--questions", "questions_jsonl", type=click.Path(dir_okay=False), default=None,
              help="Questions .jsonl: one row per question with the frames its dummy removes.")
@click.option("--budget", "-n", "budgets", default=None,
              help="Comma-separated budgets whose selected frames are marked, e.g. 16,32,64.")
@click.option("--profile", "-p", default="uniform", show_default=True, type=click.Choice(list(PROFILES)),
              help=_PROFILE_HELP)
@click.option("--option", "-O", "options", multiple=True, help=_OPTION_HELP)
@click.option("--visibility", "visibility_npz", type=click.Path(dir_okay=False), default=None,
              help="Visibility .npz (default: computed now).")
@click.option("--occlusion", type=click.Choice(["auto", "none", "boxes", "depth", "mesh"]), default="auto",
              show_default=True,
              help="Occlusion mode when visibility is computed (auto: mesh, else depth, else boxes).")
@click.option("--seen-threshold", type=float, default=0.05, show_default=True,
              help="An object is seen when its visible fraction of the image exceeds this.")
@click.option("--evidence-threshold", type=float, default=None,
              help="A frame carries a question's evidence when a referenced object's visible fraction exceeds "
                   "this (default: the video stage's, 0 = any visible part).")
@click.option("--keep-unknown-frames", is_flag=True, help="Dummies keep frames without a valid pose.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def timeline_cmd(scene_json, output, questions_jsonl, budgets, profile, options, visibility_npz, occlusion,
                 seen_threshold, evidence_threshold, keep_unknown_frames, quiet):
    """A frames x objects heat map of visible coverage (the seen threshold marked), the frames
    each budget selects, and the frames each question's dummy removes, as a PNG."""
    from .look.timeline import make_timeline
    from .videos.plan import DEFAULT_EVIDENCE_THRESHOLD

    try:
        make_timeline(scene_json, output, questions_jsonl, parse_budgets(budgets, "--budget") if budgets else (),
                      profile, _profile_options(options), visibility_npz, occlusion, seen_threshold,
                      DEFAULT_EVIDENCE_THRESHOLD if evidence_threshold is None else evidence_threshold,
                      not keep_unknown_frames, progress=not quiet)
    except (ValueError, OSError) as e:
        _fail(str(e))
    if not quiet:
        click.echo(f"timeline -> {output}", err=True)


@main.command("sheet")
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("-o", "--outdir", default=None, type=click.Path(file_okay=False),
              help="Folder for the sheets, {video path}.png [default: RUN_DIR/sheets].")
@click.option("--scene", "scene_id", default=None, help="Only this scene's videos.")
@click.option("--max-frames", type=int, default=48, show_default=True,
              help="Frames shown per video (longer videos: spread uniformly).")
@click.option("--tile-width", type=int, default=160, show_default=True, help="Tile width in pixels.")
@click.option("--columns", type=int, default=8, show_default=True, help="Tiles per row.")
@click.option("--index/--no-index", default=True, show_default=True, help="Also (re)write RUN_DIR/index.html.")
@click.option("--quiet", is_flag=True, help="No progress bar and no summary.")
def sheet_cmd(run_dir, outdir, scene_id, max_frames, tile_width, columns, index, quiet):
    """A contact sheet of every video in RUN_DIR/manifest.jsonl, each frame captioned with its
    source frame and checked against it (ok / DIFF)."""
    from .look.index import write_index
    from .look.sheets import write_sheets
    from .videos.ffmpeg import VideoError

    outdir = outdir or str(Path(run_dir) / "sheets")
    try:
        res = write_sheets(run_dir, outdir, scene_id, max_frames, tile_width, columns, progress=not quiet)
        page = write_index(run_dir, outdir) if index else None
    except (ValueError, OSError, VideoError) as e:
        _fail(str(e))
    bad = [r for r in res if r.mismatched]
    if not quiet:
        click.echo(f"{len(res)} sheets -> {outdir}" + (f"; index: {page}" if page else ""), err=True)
    for r in bad:
        click.echo(f"  {r.path}: frames {list(r.mismatched)} do not match the manifest (DIFF)", err=True)
    if page:
        click.echo(str(Path(page).resolve()))


@main.command("index")
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("--sheets", "sheets_dir", default=None, type=click.Path(file_okay=False),
              help="Folder of the contact sheets [default: RUN_DIR/sheets].")
def index_cmd(run_dir, sheets_dir):
    """Write RUN_DIR/index.html linking the pictures, ground truth, videos and sheets; print its path."""
    from .look.index import write_index

    try:
        page = write_index(run_dir, sheets_dir)
    except (ValueError, OSError) as e:
        _fail(str(e))
    click.echo(str(page.resolve()))


# ---- into an evaluator: exports (vistest/eval/exporters, docs/export.md) ---------------------
def _export_choices() -> tuple[list[str], list[str]]:
    from .eval.exporters import FORMATS, LINK_MODES

    return list(FORMATS), list(LINK_MODES)


@main.command("export")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(_export_choices()[0]))
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False),
              help="Export folder (new, empty, or a previous export of the same FORMAT).")
@click.option("--link", type=click.Choice(_export_choices()[1]), default="hard", show_default=True,
              help="revsi: how the budget videos get into the export (hard links fall back to copies).")
@click.option("--protocol", type=click.Choice(_score_choices()[0]), default="auto", show_default=True,
              help="lmms-eval-task: parsing and scoring rules (as vistest score).")
@click.option("--name", default="vistest", show_default=True, help="lmms-eval-task: task name prefix.")
@click.option("--quiet", is_flag=True, help="No progress and no summary.")
def export_cmd(fmt, run_dir, output, link, protocol, name, quiet):
    """Export RUN_DIR (the output of 'vistest run') as FORMAT: revsi (ReVSI release layout for
    lmms-eval's revsi task and VLMEvalKit), lmms-eval-task (--include_path folder, real and
    dummy videos), vlmevalkit (TSVs), jsonl (every row, absolute paths, provenance)."""
    from .eval.exporters import ExportOptions, export

    try:
        res = export(fmt, run_dir, output, ExportOptions(link, protocol, name, progress=not quiet))
    except (ValueError, OSError) as e:
        _fail(str(e))
    if not quiet:
        click.echo(res.summary_text(), nl=False)
        click.echo(f"wrote {res.out / 'vistest_export.json'}", err=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
