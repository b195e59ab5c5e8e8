"""Command-line interface: one sub-command per pipeline stage.

Every command reports bad input as ``Error: <file>: <field>: <what was expected>`` and
exit status 2; long work draws a progress bar on stderr unless ``--quiet``.
"""
from __future__ import annotations

import sys

import click

from .atomic import write_atomic
from .cli_budget import budget, frames
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


main.add_command(frames)
main.add_command(budget)

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
