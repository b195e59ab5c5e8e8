"""``vistest batch``: many scenes, each through the whole pipeline of ``vistest run`` as one
task, on a local process pool or a Ray cluster (vistest.batch, docs/batch.md)."""
from __future__ import annotations

import contextlib
import os
import signal
import threading

import click

from ..errors import InputError
from .options import compose
from .videos import run_config, video_options

ENGINES = ("local", "ray")
DEFAULT_RETRIES = 2

batch_options = compose(
    click.option("--engine", type=click.Choice(ENGINES), default="local", show_default=True,
                 help="local: worker processes on this machine; ray: Ray tasks on a cluster (pip install "
                      "'vistest[ray]')."),
    click.option("-j", "--workers", type=click.IntRange(1), default=None,
                 help="local: scenes at once (default: as many as the CPUs and the memory allow, from "
                      "--cpus-per-scene and --memory-per-scene). ray: at most this many tasks submitted at once "
                      "(default: all), and the CPUs of --address local."),
    click.option("--retries", type=click.IntRange(0), default=DEFAULT_RETRIES, show_default=True,
                 help="Times a scene is started again when its worker process or node was lost. Bad input and "
                      "bugs are never retried."),
    click.option("--address", default=None,
                 help="ray: the cluster's address HOST:PORT (default: $RAY_ADDRESS); 'local' starts Ray on this "
                      "machine for the batch."),
    click.option("--cpus-per-scene", type=click.IntRange(1), default=1, show_default=True,
                 help="CPUs each scene declares and uses (encoder and visibility threads: outputs do not depend "
                      "on the machine)."),
    click.option("--memory-per-scene", type=click.FloatRange(1.0), default=None,
                 help="MB each scene declares (default: its modelled peak: --max-memory, at least the "
                      "visibility stage's)."),
)


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """SIGTERM stops the batch as Ctrl-C does (workers stopped, finished scenes merged)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@click.command("batch")
@click.argument("scenes", type=click.Path())
@video_options
@batch_options
@click.pass_context
def batch(ctx: click.Context, scenes: str, engine: str, workers: int | None, retries: int, address: str | None,
          cpus_per_scene: int, memory_per_scene: float | None, **kw) -> None:
    """Many scenes, each through the whole pipeline of 'vistest run' (visibility -> budget GT ->
    videos -> manifest lines) as one task, in parallel, into one run folder OUTPUT.

    SCENES: a folder of scene folders (each holding scene.json and questions.jsonl), or a list
    file of scenes (docs/batch.md). A rerun skips scenes that are complete with unchanged
    inputs and options. A failing scene is recorded in OUTPUT/failed.jsonl (scene id, stage,
    error) and the others go on; a lost worker's scene is retried (--retries). One writer merges
    manifest.jsonl and index.html at the end. Exit status: 0, 1 when a scene failed or was busy
    (another run writing it), 2 for bad options or scene list, 130 when interrupted (finished
    scenes are kept; rerun to complete).
    """
    from ..batch.local import LocalEngine, default_workers
    from ..batch.ray_engine import RayEngine
    from ..batch.run import run_batch, summary_table
    from ..batch.specs import discover
    from ..batch.task import scene_memory_mb

    specs = discover(scenes)
    if kw["visibility_npz"] and os.path.isabs(kw["visibility_npz"]) and len(specs) > 1:
        raise InputError(f"--visibility: {kw['visibility_npz']} is one table for {len(specs)} scenes; give a path "
                         f"relative to each scene's folder (e.g. visibility.npz)")
    if not kw["ffmpeg_path"] and os.environ.get("VISTEST_FFMPEG"):  # the workers' ffmpeg: this one's
        kw = {**kw, "ffmpeg_path": os.environ["VISTEST_FFMPEG"]}
    config = run_config(kw, cpus=cpus_per_scene)
    memory = memory_per_scene or scene_memory_mb(config.resources)
    if engine == "ray":
        runner = RayEngine(address, retries, cpus_per_scene, memory, in_flight=workers, local_cpus=workers)
    else:
        runner = LocalEngine(workers or default_workers(cpus_per_scene, memory), retries)
    quiet = kw["quiet"]
    with _sigterm_as_interrupt():
        report = run_batch(specs, kw["output"], config, runner, kw["visibility_npz"], progress=not quiet)
    if not quiet:
        click.echo(summary_table(report), nl=False)
    if report.interrupted:
        click.echo(f"interrupted: {report.count('done')} scene(s) finished and kept; run the same command again "
                   f"to complete the batch", err=True)
        ctx.exit(130)
    if report.failed:
        click.echo(f"{len(report.failed)} of {len(report.scenes)} scene(s) failed: {report.merged.failed}", err=True)
        ctx.exit(1)
    if report.count("busy"):
        click.echo(f"{report.count('busy')} of {len(report.scenes)} scene(s) busy: another run is writing them; run "
                   f"the same command again when it has ended", err=True)
        ctx.exit(1)
