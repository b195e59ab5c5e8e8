"""One scene through the whole pipeline: visibility -> budget GT -> budget videos -> dummies -> manifest.

The output folder (``OUTDIR``, a run folder shared by any number of scenes) is laid out as
vistest.layout says: budget and dummy videos, ``scenes/{scene_id}/`` (the visibility table,
reused while the scene, the video size, the occlusion mode and the mesh or depth images it
reads are unchanged: :func:`visibility_key`; the budget
ground truth; the dummies' ground truth; per evaluator configuration, the ``all`` budget's
ground truth over the frames it takes, ``evaluators/{name}/all_frame.jsonl``), ``manifest.jsonl``
and the scene's record and lock
(vistest.videos.manifest). :func:`run_scene` checks its inputs before it writes anything and
replaces the scene's outputs only once all are written (its docstring); :func:`scene_status`
says, cheaply, whether a scene is complete and up to date.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from . import layout
from .atomic import check_writable, file_record, files_record, write_atomic
from .budget.evaluators import DEFAULT_EVALUATORS, Evaluator
from .budget.truth import (DEFAULT_BUDGETS, DEFAULT_MIN_BUDGET_ROOM_ROUTE, DEFAULT_SEEN_THRESHOLD, BudgetTruth,
                           budget_truth, evaluator_truth, write_budget_files)
from .questions import Question, load_questions
from .budget.sampling import DEFAULT_PROFILE
from .budgets import ALL, BudgetValue
from .errors import InputError
from .jsonl import parse_json, read_text
from .scene import Scene, check_scene_id
from .videos.memory import DEFAULT_MAX_MEMORY_MB
from .videos.spool import spool_folder
from .videos.staging import WriteReport, commit_videos, discard_videos
from .videos.write import write_plan
from .videos.plan import (DEFAULT_BUDGET_FPS, DEFAULT_DUMMY_LENGTH, DEFAULT_DUMMY_MODES, DEFAULT_EVIDENCE_THRESHOLD,
                          DEFAULT_MASK_MARGIN, STREAM_COPY, EncoderSettings, VariantPlan, dummy_gt_jsonl, file_key,
                          manifest_records, plan_variants)
from .videos.ffmpeg import VideoInfo
from .videos.source import check_video
from .videos.manifest import (SceneLock, SceneStatus, check_scene, input_record, prune_dummies, read_scene_record,
                              remove_stale_files, update_manifest, write_scene_record)
from .visibility.table import DEFAULT_OCCLUSION, RULES_VERSION, Visibility, choose_occlusion, occlusion_inputs
from .workers import ChildLost, call_in_child, describe_exit


STAGES = ("scene", "questions", "video", "visibility", "budget", "videos")
"""A scene's stages in order, as :func:`run_scene`'s ``stage`` callback names them (scene.json
validated; questions validated (by the caller); the source video probed; visibility; budget
GT; videos, dummy GT and manifest lines): failure records (vistest.batch) name one."""


@dataclass(frozen=True)
class VideoOptions:
    """Options of the video stage (defaults as on the command line; docs/videos.md).

    ``budgets``: frame budgets (ints and/or ``"all"``); ``profile``/``profile_options``: the
    sampler profile whose selections the budget videos hold; ``dummy_modes``: subset of
    drop, black, mask, allblack; ``fill``: mask fill; ``evidence_threshold``: fraction of the
    image area; ``mask_margin``: pixels; ``budget_fps``: frames/s of the n-frame videos;
    ``unknown_as_evidence``: frames without a valid pose count as evidence; ``dummy_length``:
    ``budget`` (numeric dummy budgets get n-frame budget dummies) or ``full``;
    ``dummy_budgets``: the budgets dummies are written for (None: the numeric ``budgets``;
    ``all`` always uses full-length dummies); ``seen_threshold``
    and ``min_budget_room_route``: the budget GT's (vistest.budget.truth); ``max_memory_mb``,
    ``jobs``, ``threads``, ``cpus`` (default: this machine's): vistest.videos.write.plan_resources.
    ``evaluators``: the evaluator configurations (vistest.budget.evaluators) whose takes the
    manifest states for every video and whose ``all`` ground truth is written (with the ``all`` budget).
    """

    budgets: tuple[BudgetValue, ...] = DEFAULT_BUDGETS
    profile: str = DEFAULT_PROFILE
    profile_options: Mapping[str, Any] = field(default_factory=dict)
    dummy_modes: tuple[str, ...] = DEFAULT_DUMMY_MODES
    fill: str = "black"
    evidence_threshold: float = DEFAULT_EVIDENCE_THRESHOLD
    mask_margin: int = DEFAULT_MASK_MARGIN
    budget_fps: float = DEFAULT_BUDGET_FPS
    unknown_as_evidence: bool = True
    dummy_length: str = DEFAULT_DUMMY_LENGTH
    dummy_budgets: tuple[BudgetValue, ...] | None = None
    settings: EncoderSettings = EncoderSettings()
    seen_threshold: float = DEFAULT_SEEN_THRESHOLD
    min_budget_room_route: int = DEFAULT_MIN_BUDGET_ROOM_ROUTE
    max_memory_mb: float = DEFAULT_MAX_MEMORY_MB
    jobs: int | None = None
    threads: int | None = None
    cpus: int | None = None
    evaluators: tuple[Evaluator, ...] = DEFAULT_EVALUATORS


# ---------------------------------------------------------------------------------------
# visibility, cached per scene
# ---------------------------------------------------------------------------------------
def visibility_key(scene_json: str | os.PathLike, scene: Scene, occlusion: str, evidence: Mapping | None = None
                   ) -> str:
    """What a cached visibility table depends on: scene.json's bytes, the (possibly scaled)
    image size, the occlusion mode (default scale, near and depth tolerance), the version
    of the occlusion rules (a table computed under older rules is never reused) and, for
    ``mesh`` and ``depth``, the content of the files occlusion reads (``evidence``: their
    vistest.atomic.files_record, see :func:`occlusion_evidence`; None: computed here)."""
    if evidence is None:
        evidence = occlusion_evidence(scene, occlusion)
    key = f"{file_key(scene_json)}:{scene.image_size[0]}x{scene.image_size[1]}:{occlusion}:rules{RULES_VERSION}"
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


def _visibility_worker(scene: Scene, occlusion: str, progress: bool, key: str) -> Visibility:
    """A scene's visibility with ``params["vistest_key"] = key`` (in a child process: see
    :func:`isolated_visibility`)."""
    from .visibility.table import compute_visibility

    vis = compute_visibility(scene, occlusion=occlusion, progress=progress)
    return dataclasses.replace(vis, params={**vis.params, "vistest_key": key})


def isolated_visibility(scene: Scene, key: str, occlusion: str = DEFAULT_OCCLUSION,
                        progress: bool = True) -> Visibility:
    """Compute the visibility (default parameters, ``params["vistest_key"] = key``) in a spawned
    child process (vistest.workers.call_in_child: it dies with this one), so that the Numba
    engine's compiled code (~120 MB) never joins the video writer's process. A child killed
    without an answer (the out-of-memory killer) raises vistest.workers.ChildLost naming the
    scene (vistest.batch retries it like a lost worker)."""
    try:
        return call_in_child(_visibility_worker, scene, occlusion, progress, key)
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
        except InputError:  # unreadable: computed again and replaced
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


def plan_scene_videos(scene: Scene, info: VideoInfo, visibility: Visibility, questions: Sequence[Question],
                      truth: BudgetTruth, opts: VideoOptions, source_key: str, warnings: Sequence[str] = ()
                      ) -> VariantPlan:
    """The scene's budget and dummy videos (vistest.videos.plan.plan_variants with ``opts``);
    ``truth``: the budget GT whose selections the budget videos hold; ``source_key``: the
    sha256 of the source video."""
    return plan_variants(scene, visibility, questions, truth.selections, source=scene.path(scene.video),
                         source_key=source_key, size=info.size, dummy_modes=opts.dummy_modes, fill=opts.fill,
                         evidence_threshold=opts.evidence_threshold, mask_margin=opts.mask_margin,
                         budget_fps=opts.budget_fps, settings=opts.settings, profile_options=opts.profile_options,
                         unknown_as_evidence=opts.unknown_as_evidence, dummy_length=opts.dummy_length,
                         dummy_budgets=opts.dummy_budgets, source_info=info, warnings=warnings,
                         evaluators=opts.evaluators)


def questions_key(questions: Sequence[Question]) -> str:
    """sha256 of the questions' records (canonical JSON): what the outputs depend on, whatever file held them."""
    text = json.dumps([dict(q.record) for q in questions], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def run_options(opts: VideoOptions, questions: Sequence[Question], occlusion: str = DEFAULT_OCCLUSION,
                scale_intrinsics: bool = False, with_budget_files: bool = True, visibility_given: bool = False
                ) -> dict[str, Any]:
    """Everything besides the input files that a scene's outputs depend on, as the scene record
    keeps it (vistest.videos.manifest.check_scene compares its key). Numbers are canonical (a
    whole float is an int: ``--max-memory 500`` and ``max_memory_mb=500.0`` are one option)."""
    def canonical(v: Any) -> Any:
        if isinstance(v, Mapping):
            return {str(k): canonical(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [canonical(x) for x in v]
        if isinstance(v, float) and v.is_integer():
            return int(v)
        return v

    return canonical({"video": dataclasses.asdict(opts), "questions_key": questions_key(questions),
                      "occlusion": occlusion, "scale_intrinsics": scale_intrinsics,
                      "with_budget_files": with_budget_files,
                      "visibility": "given" if visibility_given else "computed"})


def scene_status(outdir: str | os.PathLike, scene_json: str | os.PathLike, questions_jsonl: str | os.PathLike,
                 opts: VideoOptions = VideoOptions(), *, occlusion: str = DEFAULT_OCCLUSION,
                 scale_intrinsics: bool = False, with_budget_files: bool = True, verify: bool = False
                 ) -> SceneStatus:
    """Whether ``vistest run`` (``with_budget_files``; ``vistest videos`` without) of this scene
    into ``outdir`` with these options would find everything done: the scene's record
    (vistest.videos.manifest) lists every output as written (sizes always; sha256 when a
    modification time changed, or with ``verify``), the same scene.json, questions file and
    video (unchanged), and the same options and questions. Cheap: reads scene.json's
    ``scene_id`` (no validation; the whole scene only to resolve ``occlusion="auto"`` to the mode
    a run records, vistest.visibility.table.choose_occlusion) and the questions (to key their
    content), then one ``stat`` per file. For batch drivers that skip finished scenes."""
    path = Path(scene_json)
    doc = parse_json(read_text(path, InputError, "scene file"), str(path), InputError)
    scene_id = check_scene_id(doc.get("scene_id") if isinstance(doc, dict) else None, str(path))
    if occlusion == "auto":
        occlusion, _ = choose_occlusion(Scene.load(path), occlusion)
    questions = load_questions(questions_jsonl)
    options = run_options(opts, questions, occlusion, scale_intrinsics, with_budget_files)
    return check_scene(outdir, scene_id, {"scene": path, "questions": questions_jsonl}, options, verify)


def run_scene(scene_json: str | os.PathLike, questions: Sequence[Question], outdir: str | os.PathLike,
              opts: VideoOptions = VideoOptions(), *, visibility: Visibility | None = None,
              occlusion: str = DEFAULT_OCCLUSION, scale_intrinsics: bool = False, with_budget_files: bool = True,
              progress: bool = True, scene: Scene | None = None, questions_path: str | os.PathLike | None = None,
              spool_dir: str | os.PathLike | None = None, verify: bool = False, wait: bool = True,
              on_wait: Callable[[str], None] | None = None, manifest: bool = True,
              stage: Callable[[str], None] | None = None) -> SceneResult:
    """The whole pipeline for one scene (see the module docstring for what goes where).

    ``visibility``: a precomputed table (else computed, or reused from
    ``scenes/{id}/visibility.npz``) with ``occlusion`` (``auto``: the scene's mesh, else its
    depth frames, else boxes; :func:`vistest.visibility.table.choose_occlusion`).
    ``with_budget_files``: also write the visibility
    cache and ``{n}_frame.jsonl`` (``vistest run``); without it only videos, ``dummy_gt.jsonl``
    and manifest lines are written (``vistest videos``). ``questions_path``: the file the
    questions came from (recorded as an input). ``spool_dir``: the work folder's location
    (vistest.videos.write.spool_folder). ``verify``: hash every output a rerun would keep.
    ``wait``/``on_wait``: what to do when another run holds the scene
    (vistest.videos.manifest.SceneLock). ``manifest=False``: leave ``manifest.jsonl`` alone
    (vistest.batch merges the scene's lines, ``SceneResult.manifest``, once). ``stage``: called
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
    scene, info, warnings = check_video(scene, scene_json, scale_intrinsics)
    check_writable(outdir)
    spool = spool_folder(outdir, spool_dir)
    sid = scene.scene_id
    if visibility is None:
        occlusion, _ = choose_occlusion(scene, occlusion)  # the record keeps the mode used, never "auto"
    options = run_options(opts, questions, occlusion, scale_intrinsics, with_budget_files, visibility is not None)
    with SceneLock(outdir, sid, wait=wait, on_wait=on_wait):
        remove_stale_files(outdir, sid, spool)
        previous = read_scene_record(outdir, sid) or {}
        before = previous.get("files", {})
        known = previous.get("inputs", {})
        inputs = {"scene": input_record(scene_json, known.get("scene")),
                  "video": input_record(scene.path(scene.video), known.get("video"))}
        if questions_path is not None:
            inputs["questions"] = input_record(questions_path, known.get("questions"))
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
        truth = budget_truth(scene, visibility, questions, budgets=opts.budgets, profile=opts.profile,
                             seen_threshold=opts.seen_threshold, min_budget_room_route=opts.min_budget_room_route,
                             profile_options=opts.profile_options)
        evaluators, stale_evaluators = [], []
        if with_budget_files and ALL in truth.budgets:
            evaluators, failed, stale_evaluators = evaluator_truths(scene, visibility, questions, opts, outdir)
            warnings = list(warnings) + failed
        stage("videos")
        plan = plan_scene_videos(scene, info, visibility, questions, truth, opts, inputs["video"]["sha256"], warnings)
        report = write_plan(plan, outdir, max_memory_mb=opts.max_memory_mb, jobs=opts.jobs, threads=opts.threads,
                            cpus=opts.cpus, progress=progress, records=before, verify=verify, spool_dir=spool,
                            commit=False)
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
    ``dummy_gt.jsonl``, the scene record, the manifest lines (with each video's size and
    sha256), then delete the dummies the plan no longer lists. ``before``: the previous
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
    write_scene_record(outdir, sid, records, inputs, options, command)
    lines = [{**r, "bytes": records[r["path"]]["bytes"], "sha256": records[r["path"]]["sha256"]}
             for r in manifest_records(plan, report.encodings)]
    if manifest:
        update_manifest(outdir, sid, lines)
    prune_dummies(outdir, plan)
    return files, lines


def evaluator_truths(scene: Scene, visibility: Visibility, questions: Sequence[Question], opts: VideoOptions,
                     outdir: str | os.PathLike) -> tuple[list[tuple[str, BudgetTruth]], list[str], list[Path]]:
    """For each of ``opts.evaluators``, the ``all`` budget's ground truth over the frames it
    takes of the full video (vistest.budget.truth.evaluator_truth), to be written to
    ``scenes/{scene_id}/evaluators/{name}/all_frame.jsonl`` (:func:`commit_scene`). Returns
    (name, truth) per evaluator, a warning per evaluator that fails on the video (as its client
    would; no file for it), and the earlier run's files of those, which are no longer this
    video's (removed at commit). Folders of evaluators no longer configured are left alone."""
    truths, failed, stale = [], [], []
    for e in opts.evaluators:
        try:
            truths.append((e.name, evaluator_truth(scene, visibility, questions, e, opts.seen_threshold,
                                                   opts.min_budget_room_route)))
        except InputError as err:
            old = layout.evaluator_dir(outdir, scene.scene_id, e.name) / layout.budget_file_name(ALL)
            gone = f" (removed the earlier run's {old})" if old.is_file() else ""
            if old.is_file():
                stale.append(old)
            failed.append(f"evaluator {e.name}: no all ground truth: {err}{gone}")
    return truths, failed, stale


def _make_escape(path: str) -> str:
    return path.replace("$", "$$").replace(" ", "\\ ").replace("#", "\\#")


def _dep_path(path: str | os.PathLike) -> str:
    """``path`` relative to the working directory when inside it, else absolute (as make reads it)."""
    rel = os.path.relpath(path)
    return os.path.abspath(path) if rel == ".." or rel.startswith(".." + os.sep) else rel


def write_stamp(stamp: str | os.PathLike, inputs: Sequence[str | os.PathLike], outputs: Sequence[str | os.PathLike],
                summary: Mapping[str, Any]) -> None:
    """For make: ``STAMP.d`` says the stamp depends on the scene's inputs and outputs, each
    also an empty target (so a deleted output or input makes the stamp out of date instead
    of stopping make); then ``STAMP`` itself (a JSON summary) is written, last."""
    stamp = str(stamp)
    rel = sorted({_dep_path(p) for p in inputs}) + sorted({_dep_path(p) for p in outputs})
    text = f"{_make_escape(stamp)}: " + " \\\n  ".join(_make_escape(p) for p in rel) + "\n"
    text += "".join(f"{_make_escape(p)}:\n" for p in rel)
    Path(stamp).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(stamp + ".d", text)
    write_atomic(stamp, json.dumps(summary, sort_keys=True) + "\n", keep_same=False)  # make reads its time
