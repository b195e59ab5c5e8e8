"""One scene of a batch as one task: :func:`run_task`, the function every engine runs.

The task is the scene's vistest.job.SceneJob (``vistest run``'s pipeline with the batch's
RunConfig: :func:`scene_job`), wrapped so that it can run on any worker of any machine that
sees ``RUN_DIR``:

1. claim the scene (vistest.batch.claims: counts attempts, clears a lost attempt's leftovers);
2. load and validate scene and questions, run the job without touching the shared
   ``manifest.jsonl`` (``manifest=False``); the job writes the scene's record last
   (vistest.videos.manifest: its outputs, inputs, options key and manifest lines), which is
   all the batch trusts (vistest.batch.run: SceneJob.status);
3. release the claim.

It returns an :class:`Outcome` in every case but an interruption and a lost child process:
bad input (InputError) and bugs (any other exception, traceback kept) are *returned* as
failures, so that one scene cannot stop the others and an engine never retries them; only a
lost process (which returns nothing) is retried by the engine. A child process of the task
killed under it (vistest.pipeline.ChildLost: the out-of-memory killer took the visibility
process) is raised with the claim kept; the engines end the worker with :data:`EXIT_LOST`, so
that it is a lost process too. Arguments and outcome are plain frozen dataclasses
(picklable for a process pool or Ray).
"""
from __future__ import annotations

import dataclasses
import os
import socket
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from ..config import RunConfig
from ..errors import InputError
from ..job import SceneJob
from ..videos.config import ResourceConfig
from ..workers import ChildLost
from . import claims
from .failures import ERROR, INFRASTRUCTURE, INPUT, Failure
from .specs import SceneSpec

# Peak RSS (MB) of the visibility child process (vistest.pipeline.isolated_visibility) with the
# task's own process beside it: measured 166 MB (child) + 40 MB on the 640x480, 300-frame demo
# with occlusion boxes; rounded up for longer scenes and the mesh/depth modes.
VISIBILITY_MB = 300.0
# exit status of a worker process ended because a child process of its task was lost (EX_TEMPFAIL)
EXIT_LOST = 75


def scene_memory_mb(resources: ResourceConfig) -> float:
    """What one scene's task may use at its peak (MB): the video writer's budget
    (``--max-memory``, the writer's whole process tree) or, before it, the visibility stage."""
    return max(resources.max_memory_mb, VISIBILITY_MB)


def scene_job(spec: SceneSpec, config: RunConfig, visibility: str | None = None) -> SceneJob:
    """The job of ``spec``'s scene: ``config`` (``resources.cpus``: the CPUs each task declares;
    libx264 threads follow from it, so outputs do not depend on the machine) and ``visibility``,
    a precomputed table in the scene's folder when relative (None: computed)."""
    vis = None if visibility is None else spec.scene_json.parent / visibility
    return SceneJob(spec.scene_json, spec.questions, config, vis)


@dataclass(frozen=True)
class SceneTask:
    """What a worker needs: the scene, its id (read by the driver), the absolute run folder,
    the run's config, the visibility table option (:func:`scene_job`) and the batch run's id
    (for the claim)."""

    spec: SceneSpec
    scene_id: str
    run_dir: Path
    config: RunConfig
    visibility: str | None
    run_id: str

    def job(self) -> SceneJob:
        """The scene's job (:func:`scene_job`)."""
        return scene_job(self.spec, self.config, self.visibility)


BUSY = "busy"  # an Outcome's status when another live run holds the scene's claim


@dataclass(frozen=True)
class Outcome:
    """How a scene ended. ``status``: ``done``, ``failed`` (then ``failure``) or ``busy`` (another run
    holds the scene: not run, its claim's holder in ``notes``); ``attempts``:
    this batch run's attempts at it (lost ones included); ``seconds``: the last attempt's wall
    time; ``written``/``up_to_date``: videos; ``notes``: lost attempts, warnings."""

    scene_id: str
    status: str
    attempts: int
    seconds: float
    host: str
    written: int = 0
    up_to_date: int = 0
    failure: Failure | None = None
    notes: tuple[str, ...] = ()


def run_task(task: SceneTask) -> Outcome:
    """Run one scene (see the module docstring); returns its outcome."""
    from ..scene import Scene

    t0 = time.perf_counter()
    spec, out, sid = task.spec, Path(task.run_dir), task.scene_id
    job = task.job()
    if not job.config.resources.cpus:  # the visibility child's threads: the task's CPUs
        os.environ["NUMBA_NUM_THREADS"] = "1"
    host = socket.gethostname()
    try:
        claim, lost = claims.take(out, sid, task.run_id)
    except claims.SceneClaimed as e:  # another run writes it now: nothing of it is touched (vistest.batch.run)
        return Outcome(sid, BUSY, 0, 0.0, host, notes=(str(e),))
    except InputError as e:
        return Outcome(sid, "failed", 1, 0.0, host, failure=Failure(INPUT, None, str(e)))
    notes = (f"lost {lost.describe()}",) if lost is not None and lost.run == task.run_id else ()
    stage_now = ["scene"]
    keep_claim = False

    def stage(name: str) -> None:
        nonlocal claim
        stage_now[0] = name
        claim = dataclasses.replace(claim, stage=name)
        claims.write_claim(out, sid, claim)

    def failed(failure: Failure) -> Outcome:
        return Outcome(sid, "failed", claim.attempt, round(time.perf_counter() - t0, 3), host, failure=failure,
                       notes=notes)

    try:
        scene = Scene.load(spec.scene_json)
        if scene.scene_id != sid:
            raise InputError(f"{spec.scene_json}: scene_id: changed to {scene.scene_id!r} while the batch ran "
                             f"(was {sid!r})")
        loaded = job.load(scene, stage)
        stage("video")
        res = job.run(out, loaded=loaded, progress=False, manifest=False, stage=stage)
        return Outcome(sid, "done", claim.attempt, round(time.perf_counter() - t0, 3), host,
                       written=len(res.report.written), up_to_date=len(res.report.skipped),
                       notes=notes + tuple(res.warnings))
    except InputError as e:
        return failed(Failure(INPUT, stage_now[0], str(e)))
    except ChildLost:  # as if this process was lost: its claim stays for the next attempt (the engine's wrapper)
        keep_claim = True
        raise
    except Exception as e:  # a bug: recorded with its traceback (failed.jsonl), and the other scenes go on
        return failed(Failure(ERROR, stage_now[0], f"{type(e).__name__}: {e}", traceback.format_exc()))
    finally:
        if not keep_claim:
            claims.release(out, sid)


def run_task_or_exit(task: SceneTask) -> Outcome:
    """:func:`run_task`, in a worker process the engine owns (local engine, Ray): a lost
    child process (ChildLost) ends this process with :data:`EXIT_LOST` (no outcome: the engine
    retries the scene as for a killed worker)."""
    try:
        return run_task(task)
    except ChildLost as e:
        sys.stderr.write(f"vistest batch: {e}\n")
        sys.stderr.flush()
        os._exit(EXIT_LOST)


def lost(task: SceneTask, attempts: int, error: str) -> Outcome:
    """The outcome of a task given up after ``attempts`` lost attempts (an infrastructure
    failure; ``error`` says how the last was lost). Its leftovers and claim are cleared; the
    claim's stage is where the scene was lost."""
    claim = claims.clear_lost(task.run_dir, task.scene_id)
    stage = claim.stage if claim is not None else None
    where = f" on {claim.host}" if claim is not None else ""
    return Outcome(task.scene_id, "failed", attempts, 0.0, claim.host if claim is not None else "",
                   failure=Failure(INFRASTRUCTURE, stage, f"{error}{where}, {attempts} attempt(s)"))
