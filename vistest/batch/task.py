"""One scene of a batch as one task: :func:`run_task`, the function every engine runs.

The task is :func:`vistest.pipeline.run_scene` (visibility -> budget GT -> videos -> manifest
lines) with the options of ``vistest run`` (:class:`TaskOptions`), wrapped so that it can run
on any worker of any machine that sees ``RUN_DIR``:

1. claim the scene (vistest.batch.claims: counts attempts, clears a lost attempt's leftovers);
2. forget the scene's fragment (vistest.batch.state): from here on nothing of it is trusted;
3. key the inputs (content keys), load and validate scene and questions, run the pipeline
   without touching the shared ``manifest.jsonl`` (``manifest=False``);
4. write the fragment (the scene's inputs, outputs and manifest lines), last;
5. release the claim.

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
import hashlib
import json
import os
import socket
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..pipeline import VideoOptions
from ..workers import ChildLost
from ..visibility.table import DEFAULT_OCCLUSION
from . import claims
from .failures import ERROR, INFRASTRUCTURE, INPUT, Failure
from .specs import SceneSpec
from .state import Fragment, InputKey, outputs_of, remove_fragment, write_fragment

# VideoOptions fields that set resources only (how fast, in how much memory): not in the options
# key, as they are not in the videos' content keys (vistest.videos.plan).
RESOURCE_FIELDS = ("max_memory_mb", "jobs", "threads", "cpus")
# Peak RSS (MB) of the visibility child process (vistest.pipeline.isolated_visibility) with the
# task's own process beside it: measured 166 MB (child) + 40 MB on the 640x480, 300-frame demo
# with occlusion boxes; rounded up for longer scenes and the mesh/depth modes.
VISIBILITY_MB = 300.0
# exit status of a worker process ended because a child process of its task was lost (EX_TEMPFAIL)
EXIT_LOST = 75


def scene_memory_mb(video: VideoOptions) -> float:
    """What one scene's task may use at its peak (MB): the video writer's budget
    (``--max-memory``, the writer's whole process tree) or, before it, the visibility stage."""
    return max(video.max_memory_mb, VISIBILITY_MB)


@dataclass(frozen=True)
class TaskOptions:
    """``vistest run``'s options for every scene of a batch. ``video``: the video stage's
    (``video.cpus``: the CPUs each task declares; libx264 threads follow from it, so outputs do
    not depend on the machine); ``occlusion``, ``scale_intrinsics`` as in ``vistest run``;
    ``visibility``: a precomputed table, relative paths resolved in each scene's folder;
    ``ffmpeg``: the ffmpeg binary workers use (else theirs)."""

    video: VideoOptions = VideoOptions()
    occlusion: str = DEFAULT_OCCLUSION
    scale_intrinsics: bool = False
    visibility: str | None = None
    ffmpeg: str | None = None

    def key(self) -> str:
        """sha256 of the options that decide a scene's outputs (not resources, not ffmpeg's path)."""
        video = {k: v for k, v in dataclasses.asdict(self.video).items() if k not in RESOURCE_FIELDS}
        doc = {"video": video, "occlusion": self.occlusion, "scale_intrinsics": self.scale_intrinsics,
               "visibility": self.visibility}
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def visibility_path(self, spec: SceneSpec) -> Path | None:
        """The visibility table for ``spec``'s scene: ``visibility`` in its folder when relative."""
        if self.visibility is None:
            return None
        return spec.scene_json.parent / self.visibility


@dataclass(frozen=True)
class SceneTask:
    """What a worker needs: the scene, its id (read by the driver), the absolute run folder,
    the options and the batch run's id (for the claim)."""

    spec: SceneSpec
    scene_id: str
    run_dir: Path
    options: TaskOptions
    run_id: str


@dataclass(frozen=True)
class Outcome:
    """How a scene ended. ``status``: ``done`` or ``failed`` (then ``failure``); ``attempts``:
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


def _input_keys(paths) -> tuple[InputKey, ...]:
    return tuple(InputKey.of(p) for p in paths if p is not None and Path(p).is_file())


def run_task(task: SceneTask) -> Outcome:
    """Run one scene (see the module docstring); returns its outcome."""
    from ..pipeline import run_scene
    from ..questions import load_questions
    from ..scene import Scene
    from ..visibility.table import Visibility

    t0 = time.perf_counter()
    spec, out, opts, sid = task.spec, Path(task.run_dir), task.options, task.scene_id
    cpus = opts.video.cpus or 1
    os.environ["NUMBA_NUM_THREADS"] = str(cpus)  # the visibility child's threads: the task's CPUs
    if opts.ffmpeg:
        os.environ["VISTEST_FFMPEG"] = opts.ffmpeg
    host = socket.gethostname()
    try:
        claim, lost = claims.take(out, sid, task.run_id)
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
        remove_fragment(out, sid)
        inputs = _input_keys([spec.scene_json, spec.questions])
        scene = Scene.load(spec.scene_json)
        if scene.scene_id != sid:
            raise InputError(f"{spec.scene_json}: scene_id: changed to {scene.scene_id!r} while the batch ran "
                             f"(was {sid!r})")
        stage("questions")
        questions = load_questions(spec.questions, scene=scene)
        stage("video")
        vis_path = opts.visibility_path(spec)
        inputs += _input_keys([scene.path(scene.video) if scene.video else None, vis_path])
        vis = Visibility.load(vis_path) if vis_path is not None else None
        res = run_scene(spec.scene_json, questions, out, opts.video, visibility=vis, occlusion=opts.occlusion,
                        scale_intrinsics=opts.scale_intrinsics, progress=False, scene=scene, manifest=False,
                        stage=stage, questions_path=spec.questions)
        frag = Fragment(sid, str(spec.scene_json), str(spec.questions), opts.key(), inputs,
                        outputs_of(out, res.outputs(out)), res.manifest, res.evidence)
        write_fragment(out, frag)
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
