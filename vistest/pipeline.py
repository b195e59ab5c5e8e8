"""One scene through the whole pipeline: visibility -> budget GT -> budget videos -> dummies -> manifest.

The output folder (``OUTDIR``, a run folder shared by any number of scenes) is laid out as
vistest.layout says: budget and dummy videos, ``scenes/{scene_id}/`` (the visibility table,
reused while the scene, the video size, the occlusion mode and the mesh or depth images it
reads are unchanged: :func:`visibility_key`; the budget
ground truth; the dummies' ground truth; per evaluator configuration, the ``all`` budget's
ground truth over the frames it takes, ``evaluators/{name}/all_frame.jsonl``), ``manifest.jsonl``
and the scene's record and lock
(vistest.videos.manifest). :func:`run_scene` checks its inputs before it writes anything and
replaces the scene's outputs only once all are written (its docstring), with the settings of a
vistest.config.RunConfig; entry points reach it through vistest.job.SceneJob, whose ``status``
says, cheaply, from the record (:func:`record_options`), whether a scene is complete and up to date.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from . import freshness, layout
from .atomic import check_writable, file_record, files_record, write_atomic
from .budget.truth import BudgetTruth, budget_truth, evaluator_truth, write_budget_files
from .config import RunConfig
from .questions import Question, ignored_times
from .budgets import ALL
from .errors import InputError
from .scene import Scene, check_scene_id
from .videos.spool import spool_folder
from .videos.staging import WriteReport, commit_videos, discard_videos
from .videos.write import write_plan
from .videos.manifest_lines import manifest_records
from .videos.plan import VariantPlan, dummy_gt_jsonl, file_key, plan_variants
from .videos.recipes import STREAM_COPY
from .videos.source import check_video
from .videos.manifest import (SceneLock, input_record, prune_dummies, read_scene_record, remove_stale_files,
                              update_manifest, write_scene_record)
from .visibility.table import DEFAULT_OCCLUSION, Visibility, child_visibility, keyed_visibility, occlusion_inputs
from .workers import ChildLost, call_in_child, describe_exit


STAGES = ("scene", "questions", "video", "visibility", "budget", "videos")
"""A scene's stages in order, as :func:`run_scene`'s ``stage`` callback names them (scene.json
validated; questions validated (by the caller); the source video probed; visibility; budget
GT; videos, dummy GT and manifest lines): failure records (vistest.batch) name one."""


# ---------------------------------------------------------------------------------------
# visibility, cached per scene
# ---------------------------------------------------------------------------------------
def visibility_key(scene_json: str | os.PathLike, scene: Scene, occlusion: str, evidence: Mapping | None = None
                   ) -> str:
    """What a cached visibility table depends on: scene.json's bytes, the (possibly scaled)
    image size, the occlusion mode (default scale, near and depth tolerance) and, for
    ``mesh`` and ``depth``, the content of the files occlusion reads (``evidence``: their
    vistest.atomic.files_record, see :func:`occlusion_evidence`; None: computed here). The rules
    it was computed under are the table's own stamp (``params["rules"]``, vistest.freshness):
    Visibility.load refuses a stale table, and :func:`scene_visibility` computes it again."""
    if evidence is None:
        evidence = occlusion_evidence(scene, occlusion)
    key = f"{file_key(scene_json)}:{scene.image_size[0]}x{scene.image_size[1]}:{occlusion}"
    return key if evidence is None else f"{key}:evidence{evidence['sha256']}"


def occlusion_evidence(scene: Scene, occlusion: str, known: Mapping | None = None) -> dict | None:
    """The record (vistest.atomic.files_record, relative to the scene's folder) of the files
    a table in mode ``occlusion`` reads (vistest.visibility.table.occlusion_inputs: the mesh,
    or every depth image); None for ``boxes`` and ``none``. ``known``: the scene's earlier
    record of them (no hashing while sizes and times are unchanged)."""
    files = occlusion_inputs(scene, occlusion)
    if not files:
        return None
    try:
        return files_record(scene.root, files, known)
    except FileNotFoundError as e:
        raise InputError(f"{e.filename}: missing; {scene.source} names it for occlusion {occlusion!r}") from None


def engine_loaded() -> bool:
    """Whether this process has imported the visibility engine's Numba kernels
    (vistest.visibility.raster, which imports Numba)."""
    return "vistest.visibility.raster" in sys.modules


def isolated_visibility(scene: Scene, key: str, occlusion: str = DEFAULT_OCCLUSION,
                        progress: bool = True) -> Visibility:
    """Compute the visibility (default parameters, ``params["vistest_key"] = key``) in a spawned
    child process (vistest.workers.call_in_child: it dies with this one), so that the Numba
    engine's compiled code (~120 MB) never joins the video writer's process; the child imports
    vistest.visibility.table (where its function, child_visibility, lives), not this module's video
    stages, and sets Numba up without SciPy (vistest.visibility.table.skip_numba_blas_probe). A child killed
    without an answer (the out-of-memory killer) raises vistest.workers.ChildLost naming the
    scene (vistest.batch retries it like a lost worker).

    Where this process already holds the engine (:func:`engine_loaded`: a Python session or a test
    process that computed a table before), it is computed here: a child would only load again what
    this process holds (about 0.7 s of CPU per child on the demo, most of it Numba's import and its
    cached kernels), and the memory it would keep apart is already here. ``vistest run`` and
    ``vistest batch``'s workers never load the engine themselves, so they always use a child."""
    if engine_loaded():
        return keyed_visibility(scene, occlusion, progress, key)
    try:
        return call_in_child(child_visibility, scene, occlusion, progress, key)
    except ChildLost as e:
        raise ChildLost(f"scene {scene.scene_id}: the visibility process ended without a result "
                        f"({describe_exit(e.exitcode)})", e.exitcode) from None


def scene_visibility(scene: Scene, scene_json: str | os.PathLike, cache: Path, occlusion: str = DEFAULT_OCCLUSION,
                     progress: bool = True, evidence: Mapping | None = None) -> tuple[Visibility, bool]:
    """The scene's visibility: read from ``cache`` when its key (:func:`visibility_key`, with
    ``evidence``) matches, else computed (default parameters, in a child process). Returns
    (visibility, computed); a computed one is not saved here: :func:`run_scene` writes it
    with the scene's other files."""
    key = visibility_key(scene_json, scene, occlusion, evidence)
    if cache.is_file():
        try:
            vis = Visibility.load(cache)
            if vis.params.get("vistest_key") == key:
                return vis, False
        except InputError:  # unreadable, or stale (vistest.visibility.table.StaleTable): computed again
            pass
    return isolated_visibility(scene, key, occlusion, progress), True


# ---------------------------------------------------------------------------------------
# the stages
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SceneResult:
    """What a scene's run produced: the plan, the write report, the budget truth (``run``
    only), the files written besides videos, warnings, its manifest lines, and the record of
    the mesh or depth files its visibility was computed from (None: none read)."""

    plan: VariantPlan
    report: WriteReport
    truth: BudgetTruth | None
    files: tuple[Path, ...]
    warnings: tuple[str, ...]
    manifest: tuple[dict, ...] = ()  # the scene's manifest lines (with each video's bytes and sha256)
    evidence: Mapping[str, Any] | None = None  # the occlusion files read (occlusion_evidence), None: none

    def outputs(self, outdir: str | os.PathLike) -> list[Path]:
        """Every output file of the scene: videos, then the other files."""
        return [Path(outdir) / v.path for v in self.plan.variants] + list(self.files)


def questions_key(questions: Sequence[Question]) -> str:
    """sha256 of the questions' records (canonical JSON): what the outputs depend on, whatever file held them."""
    text = json.dumps([dict(q.record) for q in questions], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def record_options(config: RunConfig, questions: Sequence[Question], visibility_given: bool = False
                   ) -> dict[str, Any]:
    """What the scene record keeps as the run's options, besides the input files: the config's
    output settings (:meth:`RunConfig.to_json`, its :meth:`~RunConfig.key`; resources never),
    the questions' content key, whether the visibility table was given or computed, and the
    rules' versions (vistest.freshness.stamp("scene record"): ``ground_truth``, ``visibility``,
    ``videos``). vistest.videos.manifest.check_scene compares their
    key (and names changed rules); vistest.job.SceneJob computes them for a run and for its status alike."""
    return {"config": config.to_json(), "config_key": config.key(), "questions_key": questions_key(questions),
            "visibility": "given" if visibility_given else "computed", "rules": freshness.stamp("scene record")}


def run_scene(scene_json: str | os.PathLike, questions: Sequence[Question], outdir: str | os.PathLike,
              config: RunConfig = RunConfig(), *, visibility: Visibility | None = None,
              visibility_path: str | os.PathLike | None = None, progress: bool = True, scene: Scene | None = None,
              questions_path: str | os.PathLike | None = None, spool_dir: str | os.PathLike | None = None,
              verify: bool = False, wait: bool = True, on_wait: Callable[[str], None] | None = None,
              manifest: bool = True, stage: Callable[[str], None] | None = None) -> SceneResult:
    """The whole pipeline for one scene (see the module docstring for what goes where), with
    the settings of ``config``. Entry points go through vistest.job.SceneJob, which loads the
    inputs; this takes them loaded.

    ``visibility``: a precomputed table (else computed with ``config.occlusion``, or reused from
    ``scenes/{id}/visibility.npz``; ``auto`` resolved by RunConfig.resolved); ``visibility_path``:
    the file it came from (recorded as an input). ``config.budget_files``: also write the
    visibility cache and ``{n}_frame.jsonl`` (``vistest run``); without it only videos,
    ``dummy_gt.jsonl`` and manifest lines are written (``vistest videos``). ``questions_path``: the
    file the questions came from (recorded as an input). ``spool_dir``: the work folder's location
    (vistest.videos.spool.spool_folder). ``verify``: hash every output a rerun would keep.
    ``wait``/``on_wait``: what to do when another run holds the scene
    (vistest.videos.manifest.SceneLock). ``manifest=False``: leave ``manifest.jsonl`` alone
    (vistest.batch merges the scene's lines, kept in its record, once). ``stage``: called
    with each stage's name as it starts (:data:`STAGES`; "scene" only when ``scene`` is not given).

    In order: the inputs are checked (scene id, the video against the scene, the output folder
    writable); the scene's lock is taken and what killed runs left is removed; visibility,
    budget GT and videos are computed and written aside (nothing replaced yet: a failure, an
    interruption or a full disk leaves every previous output as it was); then the videos are
    renamed into place, the visibility, budget GT, ``dummy_gt.jsonl``, the scene record and its
    manifest lines written, and dummies no longer planned deleted (after the manifest stops
    listing them). Raises InputError (VideoError for the video, OutputError for the disk)
    naming the file, the field and the expectation.
    """
    outdir = Path(outdir)
    stage = stage or (lambda name: None)
    if scene is None:
        stage("scene")
        scene = Scene.load(scene_json)
    check_scene_id(scene.scene_id, scene.source)
    stage("video")
    scene, info, warnings = check_video(scene, scene_json, config.scale_intrinsics)
    warnings = list(warnings) + ignored_times(questions)
    check_writable(outdir)
    spool = spool_folder(outdir, spool_dir)
    sid = scene.scene_id
    if visibility is None:
        config, _ = config.resolved(scene)  # the record keeps the mode used, never "auto"
    options = record_options(config, questions, visibility is not None)
    occlusion, with_budget_files, truth_config = config.occlusion, config.budget_files, config.truth
    with SceneLock(outdir, sid, wait=wait, on_wait=on_wait):
        remove_stale_files(outdir, sid, spool)
        previous = read_scene_record(outdir, sid) or {}
        before = previous.get("files", {})
        known = previous.get("inputs", {})
        inputs = {"scene": input_record(scene_json, known.get("scene")),
                  "video": input_record(scene.path(scene.video), known.get("video"))}
        if questions_path is not None:
            inputs["questions"] = input_record(questions_path, known.get("questions"))
        if visibility_path is not None:
            inputs["visibility"] = input_record(visibility_path, known.get("visibility"))
        evidence = None if visibility is not None else occlusion_evidence(scene, occlusion, known.get("occlusion"))
        if evidence is not None:
            inputs["occlusion"] = evidence
        scene_dir = layout.scene_dir(outdir, sid)
        cache = None  # the visibility file of the run: None (none), False (kept as it is), True (to write)
        stage("visibility")
        if visibility is None:
            if with_budget_files:
                visibility, cache = scene_visibility(scene, scene_json, scene_dir / layout.VISIBILITY, occlusion,
                                                     progress, evidence)
            else:
                visibility = isolated_visibility(scene, visibility_key(scene_json, scene, occlusion, evidence),
                                                 occlusion, progress)
        stage("budget")
        truth = budget_truth(scene, visibility, questions, truth_config)
        evaluators, stale_evaluators = [], []
        if with_budget_files:
            evaluators, failed, stale_evaluators = evaluator_truths(scene, visibility, questions, config, outdir)
            warnings = list(warnings) + failed
        stage("videos")
        plan = plan_variants(scene, visibility, questions, truth.selections, source=scene.path(scene.video),
                             source_key=inputs["video"]["sha256"], size=info.size, dummy=config.dummy,
                             encode=config.encode, truth=truth_config, source_info=info, warnings=warnings,
                             evaluators=config.evaluators)
        report = write_plan(plan, outdir, resources=config.resources, progress=progress, records=before,
                            verify=verify, spool_dir=spool, commit=False)
        try:
            files, lines = commit_scene(outdir, plan, report, truth if with_budget_files else None,
                                        None if cache is None else visibility if cache else False, before, inputs,
                                        options, "run" if with_budget_files else "videos", manifest, evaluators,
                                        stale_evaluators)
        finally:
            discard_videos(report)
    return SceneResult(plan, report, truth if with_budget_files else None, tuple(files), tuple(plan.warnings),
                       tuple(lines), evidence)


def commit_scene(outdir: Path, plan: VariantPlan, report: WriteReport, truth: BudgetTruth | None,
                 visibility: Visibility | bool | None, before: Mapping[str, Mapping], inputs: Mapping[str, Mapping],
                 options: Mapping[str, Any], command: str, manifest: bool = True,
                 evaluators: Sequence[tuple[str, BudgetTruth]] = (), stale_evaluators: Sequence[Path] = ()
                 ) -> tuple[list[Path], list[dict]]:
    """Put a scene's outputs in place (the scene's lock held): the staged videos, the
    ``visibility`` file (a Visibility: written; False: the cached file, kept; None: none), the
    budget files of ``truth`` (None: none), the ``all`` ground truth of each of ``evaluators``
    ((name, truth); ``stale_evaluators``: earlier runs' files of evaluators that now fail, removed),
    ``dummy_gt.jsonl``, the scene record (with the manifest lines), the manifest lines (with each
    video's size and sha256), then delete the dummies the plan no longer lists. ``before``: the previous
    record's files (hashes of unchanged files are reused); ``manifest=False``: the lines are not
    written (vistest.batch merges them). Returns the files besides videos and the manifest lines."""
    sid = plan.scene_id
    scene_dir = layout.scene_dir(outdir, sid)
    commit_videos(report, outdir)
    files: list[Path] = []
    if isinstance(visibility, Visibility):
        visibility.save(scene_dir / layout.VISIBILITY)
    if visibility is not None:
        files.append(scene_dir / layout.VISIBILITY)
    if truth is not None:
        files += write_budget_files(truth, scene_dir)
    for name, t in evaluators:
        files += write_budget_files(t, layout.evaluator_dir(outdir, sid, name))
    for stale in stale_evaluators:
        stale.unlink(missing_ok=True)
    dummy_path = scene_dir / layout.DUMMY_GT
    write_atomic(dummy_path, dummy_gt_jsonl(plan))
    files.append(dummy_path)
    records: dict[str, dict] = {}
    for v in plan.variants:
        key = v.remux_key if report.encodings.get(v.path, (None,))[0] == STREAM_COPY else v.key
        records[v.path] = {**file_record(outdir / v.path, before.get(v.path)), "key": key}
    for f in files:
        rel = f.relative_to(outdir).as_posix()
        records[rel] = file_record(f, before.get(rel))
    lines = [{**r, "bytes": records[r["path"]]["bytes"], "sha256": records[r["path"]]["sha256"]}
             for r in manifest_records(plan, report.encodings)]
    write_scene_record(outdir, sid, records, inputs, options, command, lines)
    if manifest:
        update_manifest(outdir, sid, lines)
    prune_dummies(outdir, plan)
    return files, lines


def evaluator_truths(scene: Scene, visibility: Visibility, questions: Sequence[Question], config: RunConfig,
                     outdir: str | os.PathLike) -> tuple[list[tuple[str, BudgetTruth]], list[str], list[Path]]:
    """For each of ``config.evaluators``, the ground truth over the frames it takes
    (vistest.budget.truth.evaluator_truth): of the full video (``all``), and of each numeric
    budget's video where it does not take every frame once (STI-Bench's client: 30 of a 32- or
    64-frame video), to be written to ``scenes/{scene_id}/evaluators/{name}/{b}_frame.jsonl``
    (:func:`commit_scene`; each video's manifest line warns of it, vistest.videos.takes). Returns
    (name, truth) per evaluator, a warning per evaluator that fails on the full video (as its client
    would: no file for it), and the earlier run's files of those, which are no longer
    this video's (removed at commit). Folders of evaluators no longer configured are left alone."""
    truths, failed, stale = [], [], []
    for e in config.evaluators:
        try:
            fails: list = []
            t = evaluator_truth(scene, visibility, questions, e, config.truth, budget_fps=config.encode.budget_fps,
                                failures=fails)
            truths.append((e.name, t))  # a budget video it fails on: that video's manifest line says so
        except InputError as err:
            old = layout.evaluator_dir(outdir, scene.scene_id, e.name) / layout.budget_file_name(ALL)
            gone = f" (removed the earlier run's {old})" if old.is_file() else ""
            if old.is_file():
                stale.append(old)
            failed.append(f"evaluator {e.name}: no all ground truth: {err}{gone}")
    return truths, failed, stale
