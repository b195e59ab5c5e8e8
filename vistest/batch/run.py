"""The batch's driver: which scenes to run, run them on an engine, merge, report.

:func:`run_batch`:

1. read each scene's id (vistest.batch.specs.read_scene_id); a scene.json without a usable
   one fails at once (``input``, stage ``scene``); two scenes with one id stop the batch;
2. skip every scene whose record says it is current (vistest.job.SceneJob.status: outputs as
   written, inputs, options and rules versions unchanged; the rule of ``vistest run --if-stale``
   too), and nothing else; a scene with a record that is not current runs with why in its notes;
3. remove the manifest lines of the scenes about to run (vistest.batch.merge.forget);
4. run them on the engine (``local`` or ``ray``), one progress bar over scenes on stderr;
5. merge (vistest.batch.merge.merge): manifest.jsonl, failed.jsonl, index.html; also after
   Ctrl-C, with the scenes finished by then.

A scene's status in the report: ``done`` (run now), ``up to date`` (skipped), ``failed``,
``interrupted`` (not finished when the batch was interrupted; not a failure), or ``busy`` (another
live run holds its claim, vistest.batch.claims: not run, and nothing of it is touched: its outputs
are not removed, its ``failed.jsonl`` line is kept, its manifest lines are its record's when that
says it is complete and current; issue #44).
"""
from __future__ import annotations

import dataclasses
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence

from ..errors import InputError
from ..layout import scene_record_path
from ..progress import progress_bar
from .failures import INFRASTRUCTURE, INPUT, KINDS, Failure, failure_record
from .merge import Merged, forget, merge
from .specs import SceneSpec, read_scene_id
from ..config import RunConfig
from ..job import SceneJob
from .claims import busy
from .task import BUSY as TASK_BUSY, Outcome, SceneTask, scene_job

DONE, UP_TO_DATE, FAILED, INTERRUPTED, BUSY = "done", "up to date", "failed", "interrupted", "busy"


class Engine(Protocol):
    """What runs the tasks: vistest.batch.local.LocalEngine, vistest.batch.ray_engine.RayEngine."""

    name: str

    def describe(self) -> str: ...

    def run(self, tasks: Sequence[SceneTask], done) -> None: ...


@dataclass(frozen=True)
class SceneReport:
    """One scene of the batch: ``status`` (module docstring), ``attempts`` and ``seconds`` of
    this run, ``written``/``up_to_date`` videos, the ``failure`` and ``notes``."""

    spec: SceneSpec
    scene_id: str | None
    status: str
    attempts: int = 0
    seconds: float = 0.0
    written: int = 0
    up_to_date: int = 0
    failure: Failure | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class BatchReport:
    """The whole batch: every scene in the order given, the engine, wall time, whether it was
    interrupted, and the shared files written."""

    run_dir: Path
    engine: str
    scenes: tuple[SceneReport, ...]
    seconds: float
    interrupted: bool
    merged: Merged

    def count(self, status: str) -> int:
        return sum(s.status == status for s in self.scenes)

    @property
    def failed(self) -> list[SceneReport]:
        return [s for s in self.scenes if s.status == FAILED]


def _from_outcome(spec: SceneSpec, o: Outcome) -> SceneReport:
    status = {"done": DONE, TASK_BUSY: BUSY}.get(o.status, FAILED)
    return SceneReport(spec, o.scene_id, status, o.attempts, o.seconds, o.written, o.up_to_date, o.failure, o.notes)


def scene_ids(specs: Sequence[SceneSpec]) -> tuple[dict[SceneSpec, str], dict[SceneSpec, SceneReport]]:
    """(spec -> scene id, spec -> failed report for scene.json files without a usable id).
    InputError when two scenes share an id (their outputs would be one another's)."""
    ids, bad, seen = {}, {}, {}
    for spec in specs:
        try:
            sid = read_scene_id(spec)
        except InputError as e:
            bad[spec] = SceneReport(spec, None, FAILED, 1, failure=Failure(INPUT, "scene", str(e)))
            continue
        if sid in seen:
            raise InputError(f"{spec.scene_json}: scene_id: {sid!r} is also the id of {seen[sid].scene_json}; "
                             f"scenes of a batch need distinct ids (they name the outputs)")
        ids[spec], seen[sid] = sid, spec
    return ids, bad


def current_lines(job: SceneJob, run_dir: Path) -> list[dict] | None:
    """The manifest lines the scene's record keeps when the record says the scene is current
    (vistest.job.SceneJob.status), else None. Unreadable inputs count as not current (the
    task then fails on them with its error)."""
    return scene_state(job, run_dir)[0]


def scene_state(job: SceneJob, run_dir: Path) -> tuple[list[dict] | None, str | None]:
    """(:func:`current_lines`, why a scene with a record is not current: its status's reasons, at
    most three; None when current or never run here)."""
    try:
        status = job.status(run_dir)
    except InputError:
        return None, None
    if not status.current or not isinstance(status.record.get("manifest"), list):
        why = "; ".join(status.reasons[:3]) if status.record is not None else None
        return None, (f"stale: {why}" if why else None)
    return list(status.record["manifest"]), None


def run_batch(specs: Sequence[SceneSpec], run_dir: str | os.PathLike, config: RunConfig, engine: Engine,
              visibility: str | None = None, progress: bool = True) -> BatchReport:
    """Run the scenes' jobs (``config``; ``visibility``: a precomputed table per scene,
    vistest.batch.task.scene_job) into ``run_dir`` on ``engine`` (see the module docstring)."""
    t0 = time.perf_counter()
    run_dir = Path(os.path.abspath(run_dir))
    run_dir.mkdir(parents=True, exist_ok=True)
    ids, reports = scene_ids(specs)
    run_id = uuid.uuid4().hex
    finished: dict[str, list[dict]] = {}  # scene id -> its manifest lines, from its record
    todo: list[SceneTask] = []
    stale: dict[str, str] = {}  # scene id -> why its record is not current (the report's notes)
    for spec, sid in ids.items():
        held = busy(run_dir, sid)
        if held is not None:  # another batch writes it now: not run, not forgotten, nothing of it removed
            reports[spec] = SceneReport(spec, sid, BUSY, notes=(str(held),))
            continue
        lines, why = scene_state(scene_job(spec, config, visibility), run_dir)
        if lines is not None:
            finished[sid] = lines
            reports[spec] = SceneReport(spec, sid, UP_TO_DATE)
        else:
            todo.append(SceneTask(spec, sid, run_dir, config, visibility, run_id))
            if why:
                stale[sid] = why
    spec_of = {t.scene_id: t.spec for t in todo}
    forget(run_dir, spec_of)
    interrupted = False
    with progress_bar(len(specs), "scenes", enabled=progress) as bar:
        bar.update(len(specs) - len(todo))

        def done(outcome: Outcome) -> None:
            spec = spec_of[outcome.scene_id]
            if outcome.status == "done":
                lines = current_lines(scene_job(spec, config, visibility), run_dir)
                if lines is None:
                    path = scene_record_path(run_dir, outcome.scene_id)
                    outcome = dataclasses.replace(outcome, status="failed", failure=Failure(
                        INFRASTRUCTURE, None, f"finished on {outcome.host}, but its record {path} does not show it "
                                              f"complete and current here: the run folder must be on a filesystem "
                                              f"every node shares, at the same path"))
                else:
                    finished[outcome.scene_id] = lines
            if outcome.scene_id in stale:
                outcome = dataclasses.replace(outcome, notes=(stale[outcome.scene_id], *outcome.notes))
            reports[spec] = _from_outcome(spec, outcome)
            bar.update(1)

        try:
            engine.run(todo, done)
        except KeyboardInterrupt:
            interrupted = True
    for t in todo:
        reports.setdefault(t.spec, SceneReport(t.spec, t.scene_id, INTERRUPTED))
    held = {s.scene_id for s in reports.values() if s.status == BUSY}
    for spec, sid in ids.items():  # a busy scene's lines are listed when its record is current (the other run's)
        lines = current_lines(scene_job(spec, config, visibility), run_dir) if sid in held else None
        if lines is not None:
            finished[sid] = lines
    failed = {str(s.spec.scene_json): (failure_record(s.spec, s.scene_id, s.failure, s.attempts)
                                       if s.status == FAILED else None)
              for s in reports.values() if s.status not in (INTERRUPTED, BUSY)}
    merged = merge(run_dir, finished, [sid for sid in ids.values() if sid not in finished and sid not in held],
                   failed)
    return BatchReport(run_dir, engine.describe(), tuple(reports[s] for s in specs),
                       round(time.perf_counter() - t0, 3), interrupted, merged)


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 3] + "..."


def summary_table(report: BatchReport, error_chars: int = 100) -> str:
    """The end-of-batch table: one row per scene that ran or failed (scenes skipped as up to
    date are only counted), then the totals and where the failures are recorded."""
    rows = [("scene", "status", "tries", "stage", "seconds", "videos", "error / notes")]
    for s in report.scenes:
        if s.status == UP_TO_DATE:
            continue
        videos = f"{s.written} new, {s.up_to_date} kept" if s.status == DONE else ""
        detail = f"{s.failure.kind}: {s.failure.error}" if s.failure else "; ".join(s.notes)
        rows.append((s.scene_id or s.spec.name, s.status, str(s.attempts or ""),
                     (s.failure.stage or "") if s.failure else "", f"{s.seconds:.1f}" if s.attempts else "",
                     videos, _clip(detail, error_chars)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows] if len(rows) > 1 else []
    by_kind = {k: sum(1 for s in report.failed if s.failure.kind == k) for k in KINDS}
    kinds = ", ".join(f"{k} {n}" for k, n in by_kind.items() if n)
    retried = sum(1 for s in report.scenes if s.attempts > 1)
    total = (f"{len(report.scenes)} scene(s): {report.count(DONE)} done, {report.count(UP_TO_DATE)} up to date, "
             f"{len(report.failed)} failed" + (f" ({kinds})" if kinds else "")
             + (f", {report.count(INTERRUPTED)} interrupted" if report.interrupted else "")
             + (f", {report.count(BUSY)} busy (another run writes them)" if report.count(BUSY) else "")
             + (f"; {retried} retried" if retried else "") + f"; {report.seconds:.1f} s on {report.engine}")
    lines += [total, f"manifest: {report.merged.manifest}"]
    if report.merged.failed is not None:
        lines.append(f"failed:   {report.merged.failed}")
    return "\n".join(lines) + "\n"
