"""The visibility stage's command: ``visibility`` (vistest.visibility, docs/visibility.md)."""
from __future__ import annotations

from pathlib import Path

import click

from ..visibility.table import DEFAULT_DEPTH_TOL, DEFAULT_NEAR
from .options import occlusion_option, output_option, quiet_option


@click.command("visibility")
@click.argument("scene_json", type=click.Path(dir_okay=False))
@output_option("Output .npz.")
@occlusion_option("What can hide a box.")
@click.option("--scale", type=float, default=None,
              help="Working resolution / native (default: a 160-sample grid on the longer side).")
@click.option("--near", type=float, default=DEFAULT_NEAR, show_default=True, help="Near plane in metres.")
@click.option("--depth-tol", type=float, default=DEFAULT_DEPTH_TOL, show_default=True,
              help="Depth tolerance in metres (occlusion depth and mesh).")
@click.option("--cull-back", is_flag=True,
              help="Mesh occlusion: faces turned away from the camera hide nothing (closed, outward-wound meshes "
                   "only; default: two-sided, right for scans).")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), default=None, help="Also write a long CSV.")
@quiet_option()
def visibility(scene_json, output, occlusion, scale, near, depth_tol, cull_back, csv_path, quiet):
    """Frames x objects visibility of SCENE_JSON, written to an .npz (and CSV)."""
    from ..atomic import check_writable, write_atomic
    from ..scene import Scene
    from ..visibility.table import choose_occlusion, compute_visibility

    scene = Scene.load(scene_json)
    for out in (output, csv_path):  # before the work: a folder that cannot take the output stops it now
        if out:
            check_writable(Path(out).parent)
    occlusion, why = choose_occlusion(scene, occlusion)
    if not quiet:
        click.echo(f"occlusion: {occlusion} ({why})", err=True)
    vis = compute_visibility(scene, occlusion=occlusion, scale=scale, near=near, depth_tol=depth_tol,
                             progress=not quiet, cull_back=cull_back)
    vis.save(output)
    if csv_path:
        write_atomic(csv_path, vis.to_csv())
    if not quiet:
        n_valid = int(vis.valid.sum())
        click.echo(f"{scene.scene_id}: {len(vis.frame_index)} frames ({n_valid} valid) x {len(vis.object_ids)} "
                   f"objects, occlusion={occlusion} -> {output}" + (f", {csv_path}" if csv_path else ""), err=True)


@click.command("compile")
@click.option("--force", is_flag=True, help="Compile every kernel again, even those Numba's cache already holds.")
def compile_cmd(force):
    """Compile the Numba kernels now (make setup runs it), so that the first 'vistest run' does not
    wait on them: about a minute of CPU once; later processes load them from Numba's on-disk cache."""
    from ..visibility.compile import compile_kernels, steps_to_compile
    from ..visibility.table import WARM

    steps = None if force else steps_to_compile()
    if steps == []:
        click.echo("vistest: the visibility kernels are compiled (Numba's cache holds them); nothing to do", err=True)
    else:
        compile_kernels(WARM, steps, why="once, at set-up" if not force else "--force")
    from ..look.overlay import warm_overlay

    warm_overlay()  # the overlay's small projection kernel (about a second)
