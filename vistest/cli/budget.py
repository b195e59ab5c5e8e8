"""Commands of the budget stage: ``frames`` (vistest.budget.sampling, docs/sampling.md),
``budget`` (vistest.budget.truth, docs/questions-format.md) and ``windows`` (the sampled frames in
each question's time window: vistest.budget.windows)."""
from __future__ import annotations

import json
from pathlib import Path

import click

from ..budget.sampling import rounding_note, select_frames
from ..budgets import parse_budget
from .options import (OUTDIR_ALIAS, budgets_option, output_option, profile_options, quiet_option, setting_option,
                      truth_config, truth_options, visibility_option, warn)


def _rate(ctx, param, value):
    """--fps: a number or a ratio (30000/1001), as vistest.budget.sampling.parse_rate reads it."""
    from ..budget.sampling import parse_rate

    return None if value is None else parse_rate(value, "--fps")


@click.command("frames")
@profile_options()
@click.option("--budget", "-n", required=True, help="Frames to sample: a positive integer or 'all'.")
@click.option("--num-frames", "-N", type=int, default=None, help="Decoded frames in the video (default: --video's, "
                                                                  "counted by decoding).")
@click.option("--fps", type=str, default=None, callback=_rate, metavar="RATE",
              help="Video frames per second, a number or a ratio (30000/1001 for NTSC's 29.97; default: --video's "
                   "own average rate). Needed by some profiles.")
@click.option("--video", type=click.Path(dir_okay=False), default=None,
              help="The video: its decoded frame count and exact average frame rate (the rate decord and PyAV "
                   "return), where --num-frames / --fps are not given.")
def frames(profile: str, options: dict, budget: str, num_frames: int | None, fps: float | None,
           video: str | None) -> None:
    """Print the 0-based frame indices PROFILE samples from a video, as a JSON list (on stderr: how a
    qwen-vl-utils profile rounded the frame count, and the client versions that rounding is; with
    --video, the frame count and rate read from it)."""
    from ..budgets import MAX_BUDGET
    from ..errors import InputError

    if video is not None and (num_frames is None or fps is None):
        from ..videos.ffmpeg import average_frame_rate, probe

        rate, packets = average_frame_rate(video)
        if num_frames is None:
            num_frames = int(probe(video, count=True).num_frames)
        if fps is None:
            fps = float(rate)
        click.echo(f"{video}: {num_frames} decoded frames, average rate {rate} = {float(rate):.10g} frames/s "
                   f"({packets} packets)", err=True)
    if num_frames is None:
        raise InputError("--num-frames: expected the decoded frame count (or give --video)")
    if not 1 <= num_frames <= MAX_BUDGET:  # before an array is sized by it (1e12: 7.3 TiB)
        raise InputError(f"--num-frames: expected a decoded frame count in 1..{MAX_BUDGET} (vistest.scene."
                         f"MAX_FRAME_INDEX + 1), got {num_frames}")
    idx = select_frames(profile, num_frames, parse_budget(budget, "--budget"), fps=fps, **options)
    note = rounding_note(profile, options)
    if note:
        click.echo(f"{profile}: {note}; {len(idx)} frames", err=True)
    click.echo(json.dumps([int(i) for i in idx]))


@click.command("budget")
@click.argument("scene_json", type=click.Path(dir_okay=False))
@click.argument("questions_jsonl", type=click.Path(dir_okay=False))
@truth_options()
@output_option("Output folder for {budget}_frame.jsonl.", folder=True, aliases=OUTDIR_ALIAS)
@visibility_option("Visibility .npz from 'vistest visibility' (default: computed now, occlusion auto).")
@quiet_option("No progress and no summary table.")
def budget(scene_json: str, questions_jsonl: str, output: str, visibility_npz: str | None, quiet: bool,
           **settings) -> None:
    """Frame-budget ground truth: write OUTPUT/{budget}_frame.jsonl for each budget and
    print kept / changed / unanswerable per budget and question type."""
    from ..atomic import check_writable
    from ..budget.truth import budget_truth, summary_table, write_budget_files
    from ..questions import ignored_times, load_questions
    from ..scene import Scene
    from ..visibility.table import Visibility, choose_occlusion, compute_visibility

    scene = Scene.load(scene_json)
    questions = load_questions(questions_jsonl, scene=scene)
    if not questions:
        warn(f"{questions_jsonl}: no questions (the file holds no question line): the budget files hold no row")
    for w in ignored_times(questions):
        warn(w)
    check_writable(output)
    if visibility_npz:
        vis = Visibility.load(visibility_npz)
    else:
        occlusion, why = choose_occlusion(scene)
        if not quiet:
            click.echo(f"occlusion: {occlusion} ({why})", err=True)
        vis = compute_visibility(scene, occlusion=occlusion, progress=not quiet)
    truth = budget_truth(scene, vis, questions, truth_config(settings))
    paths = write_budget_files(truth, output)
    if not quiet:
        click.echo(summary_table(truth), nl=False)
        click.echo("wrote " + ", ".join(str(Path(p)) for p in paths), err=True)


@click.command("windows")
@click.argument("questions_jsonl", type=click.Path(dir_okay=False))
@click.option("--scene", "scenes", multiple=True, type=click.Path(dir_okay=False),
              help="scene.json whose frame count and fps its questions' videos have (repeatable).")
@click.option("--video-info", type=click.Path(dir_okay=False), default=None,
              help='JSON {scene_id or video file name: {"num_frames": N, "fps": F}}.')
@click.option("--videos", "videos_dir", type=click.Path(file_okay=False), default=None,
              help="Folder of the videos (the questions' video field, else SCENE_ID.mp4): frames counted by decoding.")
@click.option("--evaluator", "evaluator_specs", multiple=True, metavar="SPEC",
              help="Evaluator configuration over the full video (repeatable; default: every named one, "
                   "sti-bench.qwen2_5_vl included; docs/sampling.md).")
@budgets_option(help="Budgets of the sampler profile (--profile) reported too.")
@profile_options()
@setting_option("instant_tolerance_s")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the report as JSON.")
@output_option("Markdown report to write (default: stdout).", required=False)
def windows(questions_jsonl, scenes, video_info, videos_dir, evaluator_specs, budgets, profile, options,
            instant_tolerance_s, json_path, output):
    """Per task, the share of QUESTIONS_JSONL's questions whose time window receives 0, 1, 2, >= 3
    sampled frames under each evaluator configuration and each budget of the profile
    (vistest.budget.windows, docs/sampling.md "Time windows")."""
    from ..atomic import write_atomic
    from ..budget.evaluators import EVALUATORS, parse_evaluators
    from ..budget.windows import evaluator_config, profile_config, report_markdown, window_report
    from ..questions import load_questions

    questions = load_questions(questions_jsonl)
    timings = _video_timings(questions, scenes, video_info, videos_dir)
    evaluators = parse_evaluators(evaluator_specs) if evaluator_specs else tuple(EVALUATORS.values())
    configs = [evaluator_config(e) for e in evaluators] + [profile_config(profile, b, options) for b in budgets]
    report = window_report(questions, timings, configs, instant_tolerance_s)
    if json_path:
        write_atomic(json_path, json.dumps(report, indent=2) + "\n")
    text = report_markdown(report)
    if output:
        write_atomic(output, text)
    else:
        click.echo(text, nl=False)


def _video_timings(questions, scenes, video_info, videos_dir) -> dict:
    """{scene_id: VideoTiming} from scene files, a JSON table and/or a video folder (later sources
    fill only what earlier ones left)."""
    from ..budget.sampling import parse_rate
    from ..budget.windows import VideoTiming
    from ..budgets import MAX_BUDGET
    from ..errors import InputError
    from ..jsonl import parse_json, read_text
    from ..scene import Scene

    out: dict = {}
    for path in scenes:
        s = Scene.load(path)
        out[s.scene_id] = VideoTiming(s.num_frames, float(s.fps))
    if video_info:
        doc = parse_json(read_text(video_info, InputError, "video info"), video_info, InputError)
        if not isinstance(doc, dict):
            raise InputError(f"{video_info}: expected {{scene_id or video: {{num_frames, fps}}}}")
        by_name = {}
        for key, v in doc.items():
            n, fps = (v.get("num_frames"), v.get("fps")) if isinstance(v, dict) else (None, None)
            try:
                rate = parse_rate(fps, "fps")
            except InputError:
                rate = None
            if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_BUDGET or rate is None:
                raise InputError(f"{video_info}: {key}: expected {{\"num_frames\": an integer in 1..{MAX_BUDGET} (the "
                                 f"most decoded frames a scene may give), \"fps\": a positive finite number or a "
                                 f"ratio such as \"30000/1001\"}}, got {v!r}")
            by_name[key] = VideoTiming(n, rate)
        for q in questions:
            for key in (q.scene_id, q.record.get("video")):
                if q.scene_id not in out and key in by_name:
                    out[q.scene_id] = by_name[key]
    if videos_dir:
        from ..videos.ffmpeg import average_frame_rate, probe

        for q in questions:
            if q.scene_id in out or q.window is None:
                continue
            path = Path(videos_dir) / (q.record.get("video") or f"{q.scene_id}.mp4")
            if path.is_file():  # the exact average rate (30000/1001, not ffmpeg's printed 29.97)
                out[q.scene_id] = VideoTiming(int(probe(path, count=True).num_frames),
                                              float(average_frame_rate(path)[0]))
    return out
