"""``vistest synth``: scenario specs rendered into scene folders, or a benchmark over the 3x2x2 grid
(vistest.synth, docs/synth.md)."""
from __future__ import annotations

import click

from ..errors import InputError
from ..videos.config import DUMMY_MODES
from .options import quiet_option
from .videos import dummy_budgets_option, dummy_modes_option


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise InputError(f"--size: expected WxH such as 640x480, got {text!r}") from None
    return w, h


@click.command("synth")
@click.argument("spec", required=False, type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False),
              help="SPEC: the scene folder to write (video.mp4, scene.json, mesh.ply, mesh_objects.txt, spec.json). "
                   "--grid: the benchmark folder.")
@click.option("--grid", "grid_n", type=int, default=None,
              help="Instead of SPEC: N scenarios spread evenly over the 12 cells (scale x perspective x dynamics), "
                   "rendered, their questions generated per cell, run through the batch engine, exported, reported.")
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True,
              help="--grid: the seed of every scenario's draw.")
@click.option("--frames", "num_frames", type=click.IntRange(2), default=None,
              help="Frames per video (SPEC: overrides the spec's; --grid default 300).")
@click.option("--size", default=None, help="WxH of the video (SPEC: overrides the spec's; --grid default 640x480).")
@click.option("--fps", type=click.FloatRange(0.1, 1000.0), default=None,
              help="Frame rate (SPEC: overrides the spec's; --grid default 30).")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="--grid: the batch engine (docs/batch.md).")
@click.option("-j", "--workers", type=int, default=None,
              help="--grid: scenarios rendered at once, and the batch engine's workers (default: the CPUs).")
@click.option("--address", default=None, help="--grid with --engine ray: the cluster (HOST:PORT or local).")
@click.option("--budgets", default="16,32,64,all", show_default=True, help="--grid: the frame budgets.")
@click.option("--dummy", "dummy_modes", default=None, callback=dummy_modes_option,
              help="--grid: the batch's dummy modes, comma-separated: " + ", ".join(DUMMY_MODES) + " (or 'none'; "
                   "default: all, as vistest run). Dummies are most of a grid's disk: docs/synth.md.")
@click.option("--dummy-budgets", "dummy_budgets", default=None, callback=dummy_budgets_option,
              help="--grid: the budgets dummies are written for (default: the numeric --budgets, as vistest run).")
@click.option("--no-export", is_flag=True, help="--grid: skip the lmms-eval and VLMEvalKit exports.")
@click.option("--force", is_flag=True, help="Render again even if a folder holds the render of the same spec.")
@quiet_option()
def synth_cmd(spec, output, grid_n, seed, num_frames, size, fps, engine, workers, address, budgets, dummy_modes,
              dummy_budgets, no_export, force, quiet):
    """Render the scenario SPEC (JSON or YAML, docs/synth.md) into OUTPUT: what 'vistest import' gives
    (video.mp4, scene.json), ground truth exact by construction. With --grid N: a whole benchmark."""
    from ..synth.spec import load_spec

    if (spec is None) == (grid_n is None):
        raise InputError("SPEC, --grid: expected a spec file or --grid N (one of them)")
    if grid_n is not None:
        from ..synth.grid import GridConfig, run_grid

        w, h = _size(size) if size else (640, 480)
        cfg = GridConfig(n=grid_n, seed=seed, frames=300 if num_frames is None else num_frames, resolution=(w, h),
                         fps=30.0 if fps is None else fps,
                         engine=engine, workers=workers, address=address, budgets=budgets, dummy_modes=dummy_modes,
                         dummy_budgets=dummy_budgets, export=not no_export, force=force)
        report = run_grid(cfg, output, progress=not quiet)
        if not quiet:
            click.echo(report, nl=False)
        return
    from ..synth.render import render_scenario

    sp = load_spec(spec)
    if num_frames is not None or size or fps is not None:
        sp = sp.with_render(frames=num_frames, resolution=_size(size) if size else None, fps=fps,
                            source=f"{spec} with --frames/--size/--fps")
    click.echo(str(render_scenario(sp, output, quiet=quiet, force=force)))
