"""Commands for looking at the ground truth: ``overlay``, ``timeline``, ``sheet``, ``index``
(vistest.look, docs/looking.md)."""
from __future__ import annotations

from pathlib import Path

import click

from ..layout import sheets_dir
from ..look import (OVERLAY_COLUMNS, OVERLAY_SHEET_FRAMES, OVERLAY_TILE_WIDTH, SHEET_COLUMNS, SHEET_MAX_FRAMES,
                    SHEET_TILE_WIDTH)
from ..videos.config import DEFAULT_EVIDENCE_THRESHOLD
from .options import (BUDGET_ALIASES, OUTDIR_ALIAS, budgets_option, evidence_frame_margin_option, occlusion_option,
                      output_option, quiet_option, truth_config, truth_options, visibility_option, warn)


@click.command("overlay")
@click.argument("scene_json", type=click.Path(dir_okay=False))
@output_option("Output .mp4 (or .png with --png).")
@click.option("--png", is_flag=True, help="Write a PNG contact sheet of the frames instead of a video.")
@click.option("--objects", default=None, help="Comma-separated object ids and/or labels to draw (default: all).")
@click.option("--frames", default=None,
              help=f"Decoded frames, e.g. 0,10,20-30,100-200:10 (default: every frame with a camera pose; --png: "
                   f"{OVERLAY_SHEET_FRAMES} of them spread uniformly).")
@visibility_option("Visibility .npz for the coverage labels (default: computed now).")
@occlusion_option()
@click.option("--columns", type=click.IntRange(1), default=OVERLAY_COLUMNS, show_default=True,
              help="--png: tiles per row.")
@click.option("--tile-width", type=click.IntRange(16), default=OVERLAY_TILE_WIDTH, show_default=True,
              help="--png: tile width in pixels.")
@click.option("--scale-intrinsics", is_flag=True, help="Accept a video whose size differs from image_size.")
@quiet_option()
def overlay_cmd(scene_json, output, png, objects, frames, visibility_npz, occlusion, columns, tile_width,
                scale_intrinsics, quiet):
    """SCENE_JSON's video with every box drawn (clipped at the near plane, filled where visible,
    labelled with id, label and visible %), or with --png a contact sheet of frames."""
    from ..look.overlay import make_overlay

    drawn = make_overlay(scene_json, output, png, objects, frames, visibility_npz, occlusion, columns, tile_width,
                         scale_intrinsics, progress=not quiet, note=warn)
    if not quiet:
        click.echo(f"overlay of {len(drawn)} frames -> {output}", err=True)


@click.command("timeline")
@click.argument("scene_json", type=click.Path(dir_okay=False))
@output_option("Output .png.")
@click.option("--questions", "questions_jsonl", type=click.Path(dir_okay=False), default=None,
              help="Questions .jsonl: one row per question with the frames its dummy removes.")
@truth_options(budgets=budgets_option(default=None, aliases=BUDGET_ALIASES,
                                      help="Comma-separated budgets whose selected frames are marked, e.g. 16,32,64."))
@visibility_option("Visibility .npz (default: computed now).")
@occlusion_option()
@click.option("--evidence-threshold", type=click.FloatRange(0.0, 1.0, max_open=True),
              default=DEFAULT_EVIDENCE_THRESHOLD, show_default=True,
              help="A frame carries a question's evidence when a referenced object's visible fraction exceeds "
                   "this (the video stage's default; 0 = any visible part).")
@click.option("--keep-unknown-frames", is_flag=True, help="Dummies keep frames without a valid pose.")
@evidence_frame_margin_option()
@quiet_option()
def timeline_cmd(scene_json, output, questions_jsonl, visibility_npz, occlusion, evidence_threshold,
                 keep_unknown_frames, evidence_frame_margin, quiet, **settings):
    """A frames x objects heat map of visible coverage (the seen threshold marked), the frames
    each budget selects, and the frames each question's dummy removes, as a PNG."""
    from ..look.timeline import make_timeline

    make_timeline(scene_json, output, questions_jsonl, truth_config(settings), visibility_npz, occlusion,
                  evidence_threshold, not keep_unknown_frames, progress=not quiet,
                  evidence_frame_margin=evidence_frame_margin)
    if not quiet:
        click.echo(f"timeline -> {output}", err=True)


@click.command("sheet")
@click.argument("run_dir", type=click.Path(file_okay=False))
@output_option("Folder for the sheets, {video path}.png [default: RUN_DIR/sheets].", folder=True, required=False,
               aliases=OUTDIR_ALIAS)
@click.option("--scene", "scene_id", default=None, help="Only this scene's videos.")
@click.option("--max-frames", type=click.IntRange(1), default=SHEET_MAX_FRAMES, show_default=True,
              help="Frames shown per video (longer videos: spread uniformly).")
@click.option("--tile-width", type=click.IntRange(16), default=SHEET_TILE_WIDTH, show_default=True,
              help="Tile width in pixels.")
@click.option("--columns", type=click.IntRange(1), default=SHEET_COLUMNS, show_default=True, help="Tiles per row.")
@click.option("--index/--no-index", default=True, show_default=True, help="Also (re)write RUN_DIR/index.html.")
@quiet_option("No progress bar and no summary.")
def sheet_cmd(run_dir, output, scene_id, max_frames, tile_width, columns, index, quiet):
    """A contact sheet of every video in RUN_DIR/manifest.jsonl (RUN_DIR: the output folder of
    'vistest run'), each frame captioned with its source frame and checked against it (ok / DIFF)."""
    from ..look.index import write_index
    from ..look.sheets import write_sheets

    output = output or str(sheets_dir(run_dir))
    res = write_sheets(run_dir, output, scene_id, max_frames, tile_width, columns, progress=not quiet)
    page = write_index(run_dir, output) if index else None
    bad = [r for r in res if r.mismatched]
    if not quiet:
        click.echo(f"{len(res)} sheets -> {output}" + (f"; index: {page}" if page else ""), err=True)
    for r in bad:
        click.echo(f"  {r.path}: frames {list(r.mismatched)} do not match the manifest (DIFF)", err=True)
    if page:
        click.echo(str(Path(page).resolve()))


@click.command("index")
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("--sheets", "sheets", default=None, type=click.Path(file_okay=False),
              help="Folder of the contact sheets [default: RUN_DIR/sheets].")
def index_cmd(run_dir, sheets):
    """Write RUN_DIR/index.html (RUN_DIR: the output folder of 'vistest run') linking the pictures,
    ground truth, videos and sheets; print its path."""
    from ..look.index import write_index

    click.echo(str(write_index(run_dir, sheets).resolve()))
