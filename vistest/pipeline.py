"""One scene through the whole pipeline: visibility -> budget GT -> budget videos -> dummies -> manifest.

The output folder (``OUTDIR``, a run folder shared by any number of scenes) is laid out as
vistest.layout says: budget and dummy videos, ``scenes/{scene_id}/`` (the visibility table,
reused while the scene, the video size and the occlusion mode are unchanged; the budget
ground truth; the dummies' ground truth; per evaluator configuration, the ``all`` budget's
ground truth over the frames it takes, ``evaluators/{name}/all_frame.jsonl``) and
``manifest.jsonl`` (vistest.videos.manifest).
"""
from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from . import layout
from .atomic import write_atomic
from .budget.evaluators import DEFAULT_EVALUATORS, Evaluator
from .budget.truth import (DEFAULT_BUDGETS, DEFAULT_MIN_BUDGET_ROOM_ROUTE, DEFAULT_SEEN_THRESHOLD, BudgetTruth,
                           budget_truth, evaluator_truth, write_budget_files)
from .questions import Question
from .budget.sampling import ALL, DEFAULT_PROFILE, Budget
from .errors import InputError
from .scene import Scene
from .videos.write import DEFAULT_MAX_MEMORY_MB, WriteReport, write_plan
from .videos.plan import (DEFAULT_BUDGET_FPS, DEFAULT_DUMMY_LENGTH, DEFAULT_DUMMY_MODES, DEFAULT_EVIDENCE_THRESHOLD,
                          DEFAULT_MASK_MARGIN, EncoderSettings, VariantPlan, check_scene_id, dummy_gt_jsonl, file_key,
                          manifest_records, plan_variants)
from .videos.ffmpeg import VideoInfo, count_frames, probe
from .videos.manifest import prune_dummies, update_manifest
from .visibility.table import DEFAULT_OCCLUSION, RULES_VERSION, Visibility, choose_occlusion


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
    ``jobs``, ``threads``: vistest.videos.write.plan_resources. ``evaluators``: the evaluator
    configurations (vistest.budget.evaluators) whose takes the manifest states for every video
    and whose ``all`` ground truth is written (with the ``all`` budget).
    """

    budgets: tuple[Budget, ...] = DEFAULT_BUDGETS
    profile: str = DEFAULT_PROFILE
    profile_options: Mapping[str, Any] = field(default_factory=dict)
    dummy_modes: tuple[str, ...] = DEFAULT_DUMMY_MODES
    fill: str = "black"
    evidence_threshold: float = DEFAULT_EVIDENCE_THRESHOLD
    mask_margin: int = DEFAULT_MASK_MARGIN
    budget_fps: float = DEFAULT_BUDGET_FPS
    unknown_as_evidence: bool = True
    dummy_length: str = DEFAULT_DUMMY_LENGTH
    dummy_budgets: tuple[Budget, ...] | None = None
    settings: EncoderSettings = EncoderSettings()
    seen_threshold: float = DEFAULT_SEEN_THRESHOLD
    min_budget_room_route: int = DEFAULT_MIN_BUDGET_ROOM_ROUTE
    max_memory_mb: float = DEFAULT_MAX_MEMORY_MB
    jobs: int | None = None
    threads: int | None = None
    evaluators: tuple[Evaluator, ...] = DEFAULT_EVALUATORS


# ---------------------------------------------------------------------------------------
# the scene and its video
# ---------------------------------------------------------------------------------------
def scale_scene(scene: Scene, size: tuple[int, int]) -> Scene:
    """The scene for frames resized to ``size`` (W, H): image size and every intrinsics
    scaled (pixel edges scale, :meth:`Intrinsics.scaled`); poses and boxes unchanged."""
    sx, sy = size[0] / scene.image_size[0], size[1] / scene.image_size[1]
    frames = tuple(dataclasses.replace(f, intrinsics=f.intrinsics.scaled(sx, sy)) if f.intrinsics else f
                   for f in scene.frames)
    return dataclasses.replace(scene, image_size=tuple(size), camera=scene.camera.scaled(sx, sy), frames=frames)


def check_video(scene: Scene, scene_json: str | os.PathLike, scale_intrinsics: bool = False,
                ) -> tuple[Scene, VideoInfo, list[str]]:
    """Probe the scene's video and check it against the scene: decoded size == ``image_size``
    (else an error, or with ``scale_intrinsics`` the scene scaled to the video), decoded frame
    count == ``scene.num_frames`` (counted by decoding when the header's estimate differs;
    otherwise checked exactly while the videos are written). Returns (scene, info, warnings).
    """
    if scene.video is None:
        raise InputError(f"{scene_json}: video: missing; writing videos needs the scene's source video")
    path = scene.path(scene.video)
    info = probe(path)
    warnings = []
    if info.size != tuple(scene.image_size):
        if not scale_intrinsics:
            raise InputError(f"{path}: decodes to {info.size[0]}x{info.size[1]} frames but {scene_json} says "
                             f"image_size {list(scene.image_size)}; pass --scale-intrinsics to scale the "
                             f"intrinsics to the video")
        warnings.append(f"intrinsics scaled from {scene.image_size[0]}x{scene.image_size[1]} to the video's "
                        f"{info.size[0]}x{info.size[1]}")
        scene = scale_scene(scene, info.size)
    if info.frames_estimate != scene.num_frames:
        n = count_frames(path)
        if n != scene.num_frames:
            raise InputError(f"{path}: decodes to {n} frames but {scene_json} frames describe {scene.num_frames} "
                             f"(frames[].index: last + 1); the poses must match the decoded video")
    if abs(info.fps - scene.fps) > 0.01 * scene.fps:
        warnings.append(f"{path}: the video says {info.fps:g} fps, {scene_json} says fps {scene.fps:g}; "
                        f"samplers and the all_frame/dummy videos use the scene's")
    return scene, info, warnings


# ---------------------------------------------------------------------------------------
# visibility, cached per scene
# ---------------------------------------------------------------------------------------
def visibility_key(scene_json: str | os.PathLike, scene: Scene, occlusion: str) -> str:
    """What a cached visibility table depends on: scene.json's bytes, the (possibly scaled)
    image size, the occlusion mode (default scale, near and depth tolerance) and the version
    of the occlusion rules (a table computed under older rules is never reused)."""
    return f"{file_key(scene_json)}:{scene.image_size[0]}x{scene.image_size[1]}:{occlusion}:rules{RULES_VERSION}"


def _visibility_worker(scene: Scene, occlusion: str, progress: bool, path: str, key: str) -> None:
    """Compute and save a scene's visibility (in a child process: see :func:`isolated_visibility`)."""
    from .visibility.table import compute_visibility

    vis = compute_visibility(scene, occlusion=occlusion, progress=progress)
    vis = dataclasses.replace(vis, params={**vis.params, "vistest_key": key})
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    vis.save(path)


def isolated_visibility(scene: Scene, path: Path, key: str, occlusion: str = DEFAULT_OCCLUSION,
                        progress: bool = True) -> Visibility:
    """Compute the visibility (default parameters) in a spawned child process, save it to
    ``path`` with ``params["vistest_key"] = key`` and load it here: the Numba engine's
    compiled code (~120 MB) then never joins the video writer's process."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:  # leaving the block terminates the child
        pool.apply(_visibility_worker, (scene, occlusion, progress, str(path), key))
    return Visibility.load(path)


def scene_visibility(scene: Scene, scene_json: str | os.PathLike, cache: Path, occlusion: str = DEFAULT_OCCLUSION,
                     progress: bool = True) -> Visibility:
    """The scene's visibility: read from ``cache`` when its key matches, else computed
    (default parameters, in a child process) and saved there atomically."""
    key = visibility_key(scene_json, scene, occlusion)
    if cache.is_file():
        try:
            vis = Visibility.load(cache)
            if vis.params.get("vistest_key") == key:
                return vis
        except InputError:  # unreadable: computed again and replaced
            pass
    return isolated_visibility(scene, cache, key, occlusion, progress)


# ---------------------------------------------------------------------------------------
# the stages
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SceneResult:
    """What a scene's run produced: the plan, the write report, the budget truth (``run``
    only), the files written besides videos, and warnings."""

    plan: VariantPlan
    report: WriteReport
    truth: BudgetTruth | None
    files: tuple[Path, ...]
    warnings: tuple[str, ...]

    def outputs(self, outdir: str | os.PathLike) -> list[Path]:
        """Every output file of the scene: videos, then the other files."""
        return [Path(outdir) / v.path for v in self.plan.variants] + list(self.files)


def make_videos(scene: Scene, info: VideoInfo, visibility: Visibility, questions: Sequence[Question],
                truth: BudgetTruth, outdir: str | os.PathLike, opts: VideoOptions, warnings: Sequence[str] = (),
                progress: bool = True) -> tuple[VariantPlan, WriteReport, Path]:
    """Plan and write the scene's budget and dummy videos, its ``dummy_gt.jsonl`` and its
    manifest lines. ``truth``: the budget GT whose selections the budget videos hold."""
    outdir = Path(outdir)
    source = scene.path(scene.video)
    plan = plan_variants(scene, visibility, questions, truth.selections, source=source, source_key=file_key(source),
                         size=info.size, dummy_modes=opts.dummy_modes, fill=opts.fill,
                         evidence_threshold=opts.evidence_threshold, mask_margin=opts.mask_margin,
                         budget_fps=opts.budget_fps, settings=opts.settings, profile_options=opts.profile_options,
                         unknown_as_evidence=opts.unknown_as_evidence, dummy_length=opts.dummy_length,
                         dummy_budgets=opts.dummy_budgets, source_info=info, warnings=warnings,
                         evaluators=opts.evaluators)
    update_manifest(outdir, scene.scene_id, [])
    report = write_plan(plan, outdir, max_memory_mb=opts.max_memory_mb, jobs=opts.jobs, threads=opts.threads,
                        progress=progress)
    dummy_path = layout.scene_dir(outdir, scene.scene_id) / layout.DUMMY_GT
    dummy_path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(dummy_path, dummy_gt_jsonl(plan))
    update_manifest(outdir, scene.scene_id, manifest_records(plan, report.encodings))
    prune_dummies(outdir, plan)
    return plan, report, dummy_path


def run_scene(scene_json: str | os.PathLike, questions: Sequence[Question], outdir: str | os.PathLike,
              opts: VideoOptions = VideoOptions(), *, visibility: Visibility | None = None,
              occlusion: str = DEFAULT_OCCLUSION, scale_intrinsics: bool = False, with_budget_files: bool = True,
              progress: bool = True, scene: Scene | None = None) -> SceneResult:
    """The whole pipeline for one scene (see the module docstring for what goes where).

    ``visibility``: a precomputed table (else computed, or reused from
    ``scenes/{id}/visibility.npz``) with ``occlusion`` (``auto``: the scene's mesh, else its
    depth frames, else boxes; :func:`vistest.visibility.table.choose_occlusion`).
    ``with_budget_files``: also write the visibility
    cache and ``{n}_frame.jsonl`` (``vistest run``); without it only videos, ``dummy_gt.jsonl``
    and manifest lines are written (``vistest videos``). Raises InputError (VideoError for
    the video) naming the file, the field and the expectation.
    """
    outdir = Path(outdir)
    scene = Scene.load(scene_json) if scene is None else scene
    check_scene_id(scene.scene_id, scene.source)
    scene, info, warnings = check_video(scene, scene_json, scale_intrinsics)
    scene_dir = layout.scene_dir(outdir, scene.scene_id)
    files: list[Path] = []
    if visibility is None:
        occlusion, _ = choose_occlusion(scene, occlusion)
        if with_budget_files:
            visibility = scene_visibility(scene, scene_json, scene_dir / layout.VISIBILITY, occlusion, progress)
            files.append(scene_dir / layout.VISIBILITY)
        else:
            with tempfile.TemporaryDirectory(prefix=".vistest-vis-", dir=outdir if outdir.is_dir() else None) as tmp:
                visibility = isolated_visibility(scene, Path(tmp) / layout.VISIBILITY,
                                                 visibility_key(scene_json, scene, occlusion), occlusion, progress)
    truth = budget_truth(scene, visibility, questions, budgets=opts.budgets, profile=opts.profile,
                         seen_threshold=opts.seen_threshold, min_budget_room_route=opts.min_budget_room_route,
                         profile_options=opts.profile_options)
    if with_budget_files:
        files += write_budget_files(truth, scene_dir)
        if ALL in truth.budgets:
            written, failed = write_evaluator_files(scene, visibility, questions, opts, outdir)
            files += written
            warnings = list(warnings) + failed
    plan, report, dummy_path = make_videos(scene, info, visibility, questions, truth, outdir, opts, warnings,
                                           progress)
    files.append(dummy_path)
    return SceneResult(plan, report, truth if with_budget_files else None, tuple(files),
                       tuple(plan.warnings))


def write_evaluator_files(scene: Scene, visibility: Visibility, questions: Sequence[Question], opts: VideoOptions,
                          outdir: str | os.PathLike) -> tuple[list[Path], list[str]]:
    """For each of ``opts.evaluators``, the ``all`` budget's ground truth over the frames it
    takes of the full video (vistest.budget.truth.evaluator_truth), written to
    ``scenes/{scene_id}/evaluators/{name}/all_frame.jsonl``. Returns the files and a warning per
    evaluator that fails on the video (as its client would; no file for it, and an earlier run's
    file for it, now not this video's, is removed). Folders of evaluators no longer configured
    are left alone."""
    files, failed = [], []
    for e in opts.evaluators:
        try:
            truth = evaluator_truth(scene, visibility, questions, e, opts.seen_threshold, opts.min_budget_room_route)
        except InputError as err:
            stale = layout.evaluator_dir(outdir, scene.scene_id, e.name) / layout.budget_file_name(ALL)
            gone = f" (removed the earlier run's {stale})" if stale.is_file() else ""
            stale.unlink(missing_ok=True)
            failed.append(f"evaluator {e.name}: no all ground truth: {err}{gone}")
            continue
        files += write_budget_files(truth, layout.evaluator_dir(outdir, scene.scene_id, e.name))
    return files, failed


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
    write_atomic(stamp, json.dumps(summary, sort_keys=True) + "\n")
