"""Commands of the video stage: ``videos`` (budget and dummy videos) and ``run`` (the whole
pipeline of a scene; vistest.pipeline, vistest.videos, docs/videos.md)."""
from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

import click

from ..errors import InputError
from ..videos.ffmpeg import X264_PRESETS
from ..videos.config import (DEFAULT_BUDGET_FPS, DEFAULT_DUMMY_LENGTH, DEFAULT_EVIDENCE_THRESHOLD,
                             DEFAULT_MASK_MARGIN, DEFAULT_MAX_MEMORY_MB, DUMMY_LENGTHS, DUMMY_MODES, FILLS,
                             DummyConfig, EncodeConfig, EncoderSettings, ResourceConfig)
from ..videos.spool import SPOOL_ENV
from ..budgets import ALL, parse_budgets
from .options import (OUTDIR_ALIAS, compose, evaluator_option, evidence_frame_margin_option, occlusion_option,
                      output_option, quiet_option, truth_config, truth_options, visibility_option, warn)

_DEFAULT_SETTINGS = EncoderSettings()
DUMMY_PREFIX = "dummy_"  # an option whose value is named dummy_FIELD sets DummyConfig.FIELD (dummy_config)


def dummy_budgets_option(ctx, param, text: str | None) -> tuple | None:
    """click callback of ``--dummy-budgets`` (vistest run, batch, synth --grid): budgets, or None."""
    return None if text is None else parse_budgets(text, "--dummy-budgets")


def dummy_modes_option(ctx, param, text: str | None) -> tuple[str, ...] | None:
    """click callback of ``--dummy`` (vistest run, batch, synth --grid): the modes ('none': none), or None."""
    if text is None:
        return None
    modes = tuple(m for m in (s.strip() for s in text.split(",")) if m and m != "none")
    bad = [m for m in modes if m not in DUMMY_MODES]
    if bad:
        raise InputError(f"--dummy: expected modes from {', '.join(DUMMY_MODES)} (or 'none'), got {bad[0]!r}")
    return modes


video_options = compose(
    output_option("Output folder, a run folder shared by scenes ({n}_frame/, dummy_*/, scenes/, manifest.jsonl; "
                  "see vistest/layout.py).", folder=True, aliases=OUTDIR_ALIAS),
    truth_options("Budget GT: ", profile_help="Its selections are what the budget videos hold."),
    evaluator_option(),
    click.option("--dummy", "dummy_modes", default=",".join(DUMMY_MODES), show_default=True,
                 callback=dummy_modes_option,
                 help="Dummy modes, comma-separated: " + ", ".join(DUMMY_MODES) + " (or 'none')."),
    click.option("--dummy-length", "dummy_length", type=click.Choice(list(DUMMY_LENGTHS)), default=DEFAULT_DUMMY_LENGTH,
                 show_default=True,
                 help="budget: each numeric budget's dummy holds the frames the profile takes from the full-length "
                      "dummy (n frames at --budget-fps); full: one full-length dummy for every budget. The all "
                      "budget always uses the full-length dummy."),
    click.option("--dummy-budgets", "dummy_budgets", default=None, callback=dummy_budgets_option,
                 help="Budgets to write dummies for (default: the numeric --budgets; add 'all' for full-length "
                      "dummies, one long encode per question and mode)."),
    click.option("--fill", "dummy_fill", type=click.Choice(list(FILLS)), default=FILLS[0], show_default=True,
                 help="How mask dummies fill the evidence objects' boxes."),
    click.option("--evidence-threshold", "dummy_evidence_threshold", type=click.FloatRange(0.0, 1.0, max_open=True),
                 default=DEFAULT_EVIDENCE_THRESHOLD, show_default=True,
                 help="A frame carries evidence when a referenced object's visible fraction of the image exceeds this "
                      "(0: any visible part)."),
    click.option("--mask-margin", "dummy_mask_margin", type=click.IntRange(0), default=DEFAULT_MASK_MARGIN,
                 show_default=True,
                 help="Pixels added around each masked box."),
    click.option("--budget-fps", type=click.FloatRange(0.0, min_open=True), default=DEFAULT_BUDGET_FPS,
                 show_default=True,
                 help="Frame rate of the n-frame budget videos (1: fps-based samplers take every frame)."),
    evidence_frame_margin_option("dummy_evidence_frame_margin"),
    click.option("--keep-unknown-frames", "dummy_unknown_as_evidence", flag_value=False, default=True,
                 help="Dummies keep frames without a valid pose (default: treated as evidence)."),
    click.option("--crf", type=click.IntRange(0, 51), default=_DEFAULT_SETTINGS.crf, show_default=True,
                 help="libx264 quality."),
    click.option("--preset", type=click.Choice(list(X264_PRESETS)), default=_DEFAULT_SETTINGS.preset,
                 show_default=True, help="libx264 preset of the full-length (long-GOP) videos."),
    click.option("--intra-preset", type=click.Choice(list(X264_PRESETS)), default=_DEFAULT_SETTINGS.intra_preset,
                 show_default=True, help="libx264 preset of the all-intra n-frame videos (docs/videos.md)."),
    click.option("--ffmpeg", "ffmpeg_path", type=click.Path(dir_okay=False), default=None,
                 help="ffmpeg binary (default: $VISTEST_FFMPEG, else the imageio-ffmpeg one)."),
    click.option("--max-memory", type=float, default=DEFAULT_MAX_MEMORY_MB, show_default=True,
                 help="MB the writer's processes may use (sets encoders per decode pass and threads)."),
    click.option("--jobs", type=click.IntRange(1), default=None, help="Encoders per decode pass (default: auto)."),
    click.option("--threads", type=click.IntRange(1), default=None,
                 help="libx264 threads per encoder (default: auto)."),
    click.option("--scale-intrinsics", is_flag=True,
                 help="Accept a video whose size differs from image_size: scale the intrinsics to it."),
    visibility_option(),
    occlusion_option(),
    click.option("--spool-dir", type=click.Path(file_okay=False), default=None, envvar=SPOOL_ENV,
                 show_envvar=True,
                 help="Folder for the run's work folder (the frame pool; default: the output folder). Its free "
                      "space is checked first."),
    click.option("--verify", is_flag=True,
                 help="Hash every existing output before keeping it (default: its size and time, and the hash "
                      "only when its time changed)."),
    click.option("--wait/--no-wait", default=True, show_default=True,
                 help="When another run is writing this scene into the same folder: wait for it, or stop with an "
                      "error."),
    quiet_option("No progress bar and no summary."),
)
picture_options = compose(
    click.option("--pictures/--no-pictures", default=True, show_default=True,
                 help="Draw the timeline (scenes/SCENE/timeline.png) and each question's sampled frames with the "
                      "evidence boxes and its dummies' frames (scenes/SCENE/questions/) for index.html."),
    click.option("--sheets", is_flag=True,
                 help="Also draw a contact sheet of every video, each frame checked against the manifest "
                      "(sheets/; what vistest sheet does: a decode of every video)."),
)


def dummy_config(kw: dict) -> DummyConfig:
    """The DummyConfig of :data:`video_options`' values: each field from the value named
    ``dummy_FIELD`` (so a new dummy setting is a DummyConfig field and one click option)."""
    return DummyConfig(**{f.name: kw[DUMMY_PREFIX + f.name] for f in dataclasses.fields(DummyConfig)})


def run_config(kw: dict, budget_files: bool = True, cpus: int | None = None):
    """The RunConfig that :data:`video_options`' parsed values ``kw`` say (``budget_files``:
    ``vistest run``, not ``videos``; ``cpus``: ResourceConfig.cpus)."""
    from ..config import RunConfig

    ffmpeg = str(Path(kw["ffmpeg_path"]).resolve()) if kw["ffmpeg_path"] else None
    return RunConfig(
        truth=truth_config(kw),
        dummy=dummy_config(kw),
        encode=EncodeConfig(EncoderSettings(kw["crf"], kw["preset"], kw["intra_preset"]), kw["budget_fps"]),
        resources=ResourceConfig(kw["max_memory"], kw["jobs"], kw["threads"], cpus, ffmpeg),
        occlusion=kw["occlusion"], scale_intrinsics=kw["scale_intrinsics"], evaluators=kw["evaluators"],
        budget_files=budget_files)


def _video_run(scene_json: str, questions_jsonl: str, kw: dict, full: bool, if_stale: bool = False) -> None:
    """Shared body of `videos` (full=False) and `run` (full=True): one SceneJob."""
    from ..job import SceneJob
    from ..videos.processes import signals_as_exit

    quiet, outdir = kw["quiet"], kw["output"]
    vis = Path(kw["visibility_npz"]) if kw["visibility_npz"] else None
    job = SceneJob(Path(scene_json), Path(questions_jsonl), run_config(kw, full), vis)
    if if_stale:
        status = job.status(outdir, kw["verify"])
        if status.current:  # said even with --quiet: make's log shows which scenes ran
            click.echo(f"{status.scene_id}: up to date in {outdir} (its record: every output, input, "
                       f"option and rules version unchanged)", err=True)
            return
        if status.record is not None:  # said even with --quiet: why make's log shows the scene running again
            click.echo(f"{status.scene_id}: stale in {outdir}: {'; '.join(status.reasons[:3])}"
                       + (f" (and {len(status.reasons) - 3} more)" if len(status.reasons) > 3 else ""), err=True)
    loaded = job.load()
    if not loaded.questions:
        warn(f"{questions_jsonl}: no questions (the file holds no question line): only the budget videos are "
             f"written, no ground truth and no dummies")
    if loaded.occlusion_reason is not None and not quiet:
        click.echo(f"occlusion: {loaded.config.occlusion} ({loaded.occlusion_reason})", err=True)
    with _source_tiles(loaded.scene, full and kw["pictures"]) as tiles:
        def stage(name: str) -> None:  # the pictures' decode while the pipeline waits for its visibility child
            if name == "visibility" and tiles is not None:
                tiles.prefetch()

        with signals_as_exit():
            res = job.run(outdir, loaded=loaded, progress=not quiet, spool_dir=kw["spool_dir"], verify=kw["verify"],
                          wait=kw["wait"], on_wait=lambda msg: click.echo(msg, err=True), stage=stage)
        page = _pictures_and_page(scene_json, questions_jsonl, kw, res.plan.scene_id, loaded, tiles) if full else None
    if not quiet:
        _video_summary(res, outdir)
        if page is not None:
            click.echo(f"  page: {page.resolve()} (open it in a browser)", err=True)


def _source_tiles(scene, pictures: bool):
    """The question pictures' source tiles (vistest.look.per_question.SourceTiles) when ``pictures``
    (``run``'s default), else None; a context manager: leaving it stops a prefetch still decoding."""
    if not pictures or not scene.video:
        return contextlib.nullcontext(None)
    from ..look.per_question import SourceTiles

    return SourceTiles(scene.path(scene.video), scene.image_size, len(scene.frames))


def _pictures_and_page(scene_json: str, questions_jsonl: str, kw: dict, scene_id: str, loaded=None,
                       tiles=None) -> Path:
    """``run``'s pictures (unless ``--no-pictures``): the timeline (scenes/SCENE/timeline.png) and each
    question's sampled and dummy frames (vistest.look.per_question), the contact sheets with
    ``--sheets``; then the run folder's index.html, whose path is returned. ``loaded``: the run's
    vistest.job.LoadedJob (its scene and questions are not read again); ``tiles``: the scene video's
    tiles (:func:`_source_tiles`; prefetched while the visibility child runs). Every file written later
    under scenes/SCENE/ (overlay, score report) is linked when the page is written again
    (``vistest index`` / ``vistest sheet``)."""
    from .. import layout
    from ..look.index import write_index
    from ..videos.manifest import shared_lock

    outdir = kw["output"]
    if kw["pictures"]:
        from ..look.per_question import write_question_pictures
        from ..look.timeline import make_timeline

        folder = layout.scene_dir(outdir, scene_id)
        vis = kw["visibility_npz"] or str(folder / layout.VISIBILITY)  # --visibility FILE: none in the folder
        truth = truth_config(kw)
        make_timeline(scene_json, folder / layout.TIMELINE, questions_jsonl,
                      dataclasses.replace(truth, budgets=tuple(b for b in truth.budgets if b != ALL)), vis,
                      evidence_threshold=kw["dummy_evidence_threshold"],
                      unknown_as_evidence=kw["dummy_unknown_as_evidence"],
                      evidence_frame_margin=kw["dummy_evidence_frame_margin"],
                      scene=loaded.scene if loaded else None, questions=loaded.questions if loaded else None)
        write_question_pictures(outdir, scene_id, vis, scene=loaded.scene if loaded else None, tiles=tiles)
    if kw["sheets"]:
        from ..look.sheets import write_sheets

        write_sheets(outdir, layout.sheets_dir(outdir), scene_id, progress=not kw["quiet"])
    with shared_lock(outdir):
        return write_index(outdir)


def _video_summary(res, outdir: str) -> None:
    """The budget GT table (``run``) on stdout; what was written, where, and every warning, on stderr."""
    from ..budget.truth import summary_table
    from ..layout import manifest_path

    r, plan = res.report, res.plan
    if res.truth is not None:
        click.echo(summary_table(res.truth), nl=False)
    click.echo(f"{plan.scene_id}: {len(r.written)} videos written, {len(r.skipped)} up to date, "
               f"{r.passes} decode pass(es), {r.frames_encoded} frames encoded, {r.seconds:.1f} s "
               f"({r.resources.jobs} encoder(s) x {r.resources.threads} thread(s), "
               f"~{r.resources.estimate_mb:.0f} MB modelled)", err=True)
    for v in plan.variants:
        if v.kind == "budget" and not v.intra:
            enc, note = r.encodings.get(v.path, (None, None))
            how = ("stream copy of the source (frame-exact: frame count and per-frame hashes checked)"
                   if enc == "stream-copy" else f"encoded with libx264, not a stream copy: {note}")
            click.echo(f"  {v.path}: {how}", err=True)
    for w in plan.warnings:
        click.echo(f"  warning: {w}", err=True)
    same: dict[str, list[str]] = {}  # one line per distinct warning (e.g. InternVL's, on every n-frame video)
    for v in sorted(plan.variants, key=lambda v: v.path):
        for w in v.warnings:
            same.setdefault(w, []).append(v.path)
    for w, paths in same.items():
        where = paths[0] if len(paths) == 1 else f"{len(paths)} videos ({paths[0]} ...)"
        click.echo(f"  {where}: {w}", err=True)
    for f in res.files:
        click.echo(f"  wrote {f}", err=True)
    click.echo(f"  manifest: {manifest_path(outdir)}", err=True)


@click.command("videos")
@click.argument("scene_json", type=click.Path(dir_okay=False))
@click.argument("questions_jsonl", type=click.Path(dir_okay=False))
@video_options
def videos(scene_json: str, questions_jsonl: str, **kw) -> None:
    """Budget videos ({n}_frame/SCENE.mp4) and dummy videos with the evidence of each
    question removed, their ground truth (scenes/SCENE/dummy_gt.jsonl) and manifest.jsonl."""
    _video_run(scene_json, questions_jsonl, kw, full=False)


@click.command("run")
@click.argument("scene_json", type=click.Path(dir_okay=False))
@click.argument("questions_jsonl", type=click.Path(dir_okay=False))
@video_options
@picture_options
@click.option("--if-stale", is_flag=True,
              help="Do nothing when the scene is up to date in OUTPUT: its record lists every output as written, "
                   "and the inputs and the output options (not --jobs, --threads, --max-memory) are unchanged; "
                   "the rule vistest batch skips scenes by (make variants uses it).")
def run(scene_json: str, questions_jsonl: str, if_stale: bool, **kw) -> None:
    """The whole pipeline of one scene: visibility -> frame-budget GT -> budget videos ->
    dummy videos -> manifest, into OUTPUT, a run folder (see docs/videos.md for the layout)."""
    _video_run(scene_json, questions_jsonl, kw, full=True, if_stale=if_stale)
