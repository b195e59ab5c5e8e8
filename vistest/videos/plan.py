"""VariantPlan: which derived videos to write for one scene, and the ground truth of each (stage 5).

Two kinds of video (docs/videos.md has the full account):

* **Budget videos** ``{n}_frame/{scene_id}.mp4``: exactly the frames a sampler profile
  selects for budget n, in order (repeats kept), written at ``budget_fps`` (default
  1 frame/s, vistest.videos.config, so that fps-based samplers such as
  qwen-vl-utils at 2 frames/s and LLaVA-Video at 1 frame/s also take every frame);
  ``all_frame/{scene_id}.mp4`` holds every decoded frame at the source frame rate (a
  stream copy of the source where that is frame-exact, see vistest.videos.write).
* **Dummy videos** with a question's evidence removed: ``drop`` (evidence frames removed),
  ``black`` (evidence frames black, timing kept), ``mask`` (the evidence objects' visible
  boxes filled: ``black``, ``blur`` or ``inpaint``), ``allblack`` (every frame black; one
  per scene, serves every question). The *full-length* dummy is the whole recipe at the
  source frame rate (``dummy_{mode}/{scene_id}/{key[:16]}.mp4``). A *budget dummy*
  (``dummy_{mode}/{n}_frame/{scene_id}/{key[:16]}.mp4``) holds exactly the frames the
  sampler profile takes at budget n from the full-length dummy's timeline (its frame
  count, at the source frame rate), written like a budget video at ``budget_fps``: an
  evaluator sampling n frames from it sees what it would have seen from the full-length
  dummy (docs/videos.md, "Budget dummies"). Numeric dummy budgets get budget dummies by
  default (``dummy_length="budget"``); the ``all`` budget always uses the full-length one.
  Dummies are content-addressed: questions whose removals are identical share a file.

Every n-frame video (budget video, budget dummy) is *all-intra* H.264 (every frame an IDR
frame), assembled by stream copy from the scene's pool of encoded frames, so each distinct
frame is encoded once per scene however many videos hold it (vistest.videos.write).

For every video and every numeric budget it serves, the plan records which frames of the
*written* video each known sampler profile takes when asked for that budget
(vistest.videos.takes.video_takes, ProfileTake); one that drops or repeats a frame is a warning.
For every budget it serves, ``all`` included, it records what each evaluator configuration
of the run (vistest.budget.evaluators: a profile with the settings a real client runs it
with, e.g. qwen-vl-utils at 2 frames/s) takes from it (vistest.videos.takes.evaluator_takes); on
``all_frame`` one that does not take every frame is a warning naming its ``all`` ground truth.

Evidence (vistest.videos.evidence): frame f carries evidence for a question when any referenced
object (``objects``, or every instance of a ``category``) has ``visible[f, o] > evidence_threshold``
(default 0: any visible part at all). Decoded frames whose pose
is invalid or that have no visibility row are *unknown*: with ``unknown_as_evidence`` (the
default) they are removed (drop), black (black) or black in full (mask), since nothing
says the object is absent from them.

A question with a time window or an instant (``time_start``/``time_end``, ``time``) asks about
those times only: its evidence frames are those of its time span (vistest.videos.evidence.time_span:
the frames inside the window, closed at both ends, and those within the instant tolerance of the
instant, by vistest.budget.windows' arithmetic, the budget stage's), unknown frames and the
``evidence_frame_margin`` neighbours included only there. The object's frames outside the span stay:
they answer nothing about the window, and removing them would change other content for nothing.
``drop`` then shifts the frames after each removed one earlier, so by the dummy's clock the
question's times name other frames (its rows warn, :data:`TIMED_DROP_WARNING`); ``black`` and
``mask`` keep the timing.

Dummy ground truth, per (question, mode, budget), over the frames that budget's dummy holds:
counting -> 0 (``status`` changed, ``expectation`` "zero"); every other type ->
``unanswerable`` with ``expectation`` "abstain" (an answer is a prior-driven guess; the
original answer is kept in ``original_ground_truth`` for scoring), unless the question
offers an answer for that (reformulated questions: ``Question.unsupported_answer``, the
"Cannot be determined from the video" option, else "None of these", or for numbers and
texts that accept abstention that phrase): then that answer, ``status`` kept or changed
against the original, ``unsupported`` true, ``expectation`` "abstain" or "none_of_these".
The plan checks that no frame a dummy shows (neither black nor masked there) carries evidence.

Conventions: frame numbers are 0-based decoded frames of the source video; rectangles
are ``(x0, y0, x1, y1)`` half-open pixel bounds in the written (even) frame size, with
even coordinates (yuv420p chroma covers 2x2 pixels); fps is frames per second.
Every video carries a content *key* (vistest.videos.recipes: sha256 over source content, frames,
black frames, masks, mode, fill, size, rate and encoder settings): a rerun skips an output whose
key matches, and a dummy's file name is its key. Manifest lines: vistest.videos.manifest_lines.
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..budget.evaluators import Evaluator
from ..budget.sampling import select_frames
from ..budgets import ALL, BudgetValue, budget_label
from ..budget.dummy import DummyTruth, DummyVideo, dummy_ground_truth, dummy_jsonl
from ..budget.windows import DEFAULT_INSTANT_TOLERANCE_S
from ..budget.config import TruthConfig
from ..budget.truth import FrameSelection
from ..errors import InputError
from ..layout import budget_video_path, dummy_video_path
from ..questions import Question
from ..atomic import sha256_file as file_key  # noqa: F401  (the key of a file's bytes, used as plan.file_key)
from ..scene import Scene, check_scene_id
from .config import DEFAULT_DUMMY_LENGTH, LENGTH_BUDGET, LENGTH_FULL, DummyConfig, EncodeConfig, EncoderSettings
from .evidence import EvidenceTable, Rect, dummy_evidence, shown_evidence
from .ffmpeg import VideoInfo
from .recipes import budget_recipe, content_key, dummy_recipe, remux_recipe, video_recipe
from .takes import EvaluatorTakes, Takes, evaluator_takes, evaluator_warnings, take_warnings, video_takes
from ..visibility.table import Visibility

TIMED_DROP_WARNING = ("drop moves every frame after a removed one earlier: by this dummy's clock the question's "
                      "times name other frames (black and mask keep the timing)")


@dataclass(frozen=True)
class Variant:
    """One video to write. ``path``: relative to the output folder, '/'-separated.

    ``frames``: the source frame of each output frame, in order (non-decreasing; repeats
    allowed); ``black``: source frames written as black frames instead (sorted);
    ``masks``: (source frame, rectangles) pairs, sorted by frame, filled with ``fill``.
    ``source_free``: every frame is black, so no source pixel is needed (allblack).
    ``kind``: ``budget`` or ``dummy``; ``length``: ``budget`` (an n-frame video at the budget
    rate, all-intra from the frame pool) or ``full`` (the source rate: all_frame, full-length
    dummies). ``budget``: the budget of an n-frame video or of all_frame (None for a
    full-length dummy); ``budgets``: every budget whose rows use this video. ``profile``: the
    sampler profile whose selection the frames are. ``questions``: ids of the questions it
    serves. ``objects``/``evidence_frames``: a dummy's removed objects and their evidence
    frames. ``timeline``: a budget dummy's (frames of the full-length dummy, positions the
    profile takes there). ``remux_key``/``remux_note``: all_frame's key as a stream copy of
    the source (tried first), or why it cannot be one (None: it may). ``takes``: per numeric
    budget served, what each profile asked for it takes from this video (:func:`video_takes`);
    ``evaluator_takes``: per budget served, what each evaluator configuration takes
    (:func:`evaluator_takes`).
    """

    scene_id: str
    kind: str
    path: str
    fps: float
    size: tuple[int, int]
    frames: tuple[int, ...]
    key: str
    black: tuple[int, ...] = ()
    masks: tuple[tuple[int, tuple[Rect, ...]], ...] = ()
    fill: str | None = None
    mode: str | None = None
    budget: BudgetValue | None = None
    budgets: tuple[BudgetValue, ...] = ()
    length: str = LENGTH_FULL
    profile: str | None = None
    questions: tuple[str, ...] = ()
    objects: tuple[str, ...] = ()
    evidence_frames: tuple[int, ...] = ()
    timeline: tuple[int, tuple[int, ...]] | None = None
    remux_key: str | None = None
    remux_note: str | None = None
    takes: Takes = ()
    evaluator_takes: EvaluatorTakes = ()
    warnings: tuple[str, ...] = ()

    @property
    def num_frames(self) -> int:
        return len(self.frames)

    @property
    def source_free(self) -> bool:
        return len(self.black) == len(set(self.frames)) and set(self.black) == set(self.frames)

    @property
    def intra(self) -> bool:
        """An n-frame video: all-intra, assembled from the scene's frame pool."""
        return self.length == LENGTH_BUDGET

    @property
    def masked_frames(self) -> tuple[int, ...]:
        return tuple(f for f, _ in self.masks)


@dataclass(frozen=True)
class VariantPlan:
    """Everything to write for one scene. ``source``: the source video (absolute path);
    ``source_key``: sha256 of its bytes; ``source_size``: its decoded (W, H); ``size``: the
    written (W, H), the decoded size padded to even with black on the right/bottom;
    ``source_fps``: frames/s; ``num_frames``: decoded frames of the source.
    ``dummy_budgets``: the budgets dummies are written for; ``dummy_length``: ``budget`` or
    ``full`` (what the numeric dummy budgets use); ``source_full_range``: the source's frames
    are full range (converted to video range when decoded for encoding)."""

    scene_id: str
    source: str
    source_key: str
    source_size: tuple[int, int]
    size: tuple[int, int]
    source_fps: float
    num_frames: int
    settings: EncoderSettings
    budget_fps: float
    evidence_threshold: float
    budgets: tuple[BudgetValue, ...]
    variants: tuple[Variant, ...]
    dummies: tuple[DummyTruth, ...]
    warnings: tuple[str, ...] = ()
    dummy_budgets: tuple[BudgetValue, ...] = ()
    dummy_length: str = DEFAULT_DUMMY_LENGTH
    source_full_range: bool = False

    def variant(self, path: str) -> Variant:
        """The variant written to ``path`` (relative to the output folder)."""
        for v in self.variants:
            if v.path == path:
                return v
        raise KeyError(f"no variant with path {path!r} in the plan of scene {self.scene_id!r}")


# ---------------------------------------------------------------------------------------
# budget videos
# ---------------------------------------------------------------------------------------
def remux_note(codec: str | None, container: str | None, size: tuple[int, int]) -> str | None:
    """Why ``all_frame`` cannot be a stream copy of a source with this codec, container and
    decoded (W, H), or None when it may be one (then the copy is still verified frame by frame)."""
    fmts = set((container or "").split(","))
    if codec != "h264" or not fmts & {"mov", "mp4"}:
        return f"the source is {codec or 'an unknown codec'} in {container or 'an unknown container'}, not H.264 " \
               f"in MP4/MOV"
    if size[0] % 2 or size[1] % 2:
        return f"the source is {size[0]}x{size[1]}; written videos are padded to even sizes"
    return None


def budget_variant(scene_id: str, selection: FrameSelection, source_key: str, size: tuple[int, int],
                   source_fps: float, budget_fps: float, settings: EncoderSettings, questions: Sequence[str] = (),
                   profile_options: Mapping[str, Any] | None = None,
                   remux_blocker: str | None = "the source was not probed",
                   evaluators: Sequence[Evaluator] = ()) -> Variant:
    """The budget video of one selection: its frames in selection order at ``budget_fps``,
    all-intra (``all``: every frame at ``source_fps``, tried as a stream copy of the source
    when ``remux_blocker``, the source's :func:`remux_note`, is None), with the profile and
    ``evaluators`` takes and their warnings."""
    frames = tuple(int(i) for i in selection.frame_indices)
    if any(b < a for a, b in zip(frames, frames[1:])):
        raise InputError(f"{scene_id}: budget {selection.label}: profile {selection.profile!r} selected frames out "
                         f"of order ({list(frames)[:12]} ...); a budget video needs them in decode order")
    full = selection.budget == ALL
    fps = source_fps if full else budget_fps
    takes = video_takes(len(frames), fps, (selection.budget,), selection.profile, profile_options)
    etakes = evaluator_takes(len(frames), fps, (selection.budget,), evaluators)
    warnings = take_warnings(takes) + evaluator_warnings(scene_id, etakes)
    key = content_key(video_recipe(source_key, size, fps, settings, frames, intra=not full))
    remux_key = content_key(remux_recipe(source_key, size, fps, frames)) if full and remux_blocker is None else None
    return Variant(scene_id, "budget", budget_video_path(scene_id, selection.budget), float(fps), size, frames, key,
                   budget=selection.budget, budgets=(selection.budget,),
                   length=LENGTH_FULL if full else LENGTH_BUDGET, profile=selection.profile,
                   questions=tuple(questions), remux_key=remux_key,
                   remux_note=remux_blocker if full else None, takes=takes, evaluator_takes=etakes,
                   warnings=warnings)


# ---------------------------------------------------------------------------------------
# dummies
# ---------------------------------------------------------------------------------------
def _dummy_video(scene_id: str, mode: str, fill: str | None, src: str | None, size: tuple[int, int],
                 encode: EncodeConfig, recipe: tuple, budget: BudgetValue, full: bool, fps: float, profile: str,
                 opts: Mapping[str, Any]) -> tuple[DummyVideo, dict | None]:
    """The dummy video of one budget for a full-length ``recipe`` (frames, black, masks): the
    full-length dummy itself (``full``, at the source's ``fps``), or the budget dummy the profile
    takes from it (at ``encode.budget_fps``); with the fields of its Variant (None when nothing
    is written)."""
    frames, black, masks = recipe
    length = LENGTH_FULL if full else LENGTH_BUDGET
    settings, budget_fps = encode.settings, encode.budget_fps
    if not frames:
        return DummyVideo(budget, None, None, (), (), (), float(fps if full else budget_fps), length), None
    if full:
        vf, vb, vm, rate, timeline = frames, black, masks, float(fps), None
        key = content_key(video_recipe(src, size, rate, settings, vf, vb, vm, mode, fill))
        path = dummy_video_path(scene_id, mode, key)
    else:
        try:
            positions = tuple(int(p) for p in select_frames(profile, len(frames), budget, fps=fps, **opts))
        except InputError as e:  # this profile cannot sample that video (e.g. too few frames)
            return DummyVideo(budget, None, None, (), (), (), float(budget_fps), length,
                              f"profile {profile} fails on the {len(frames)}-frame full-length dummy at budget "
                              f"{budget_label(budget)} (as its evaluator would): {e}"), None
        vf, vb, vm = budget_recipe(frames, black, masks, positions)
        rate, timeline = float(budget_fps), (len(frames), positions)
        key = content_key(video_recipe(src, size, rate, settings, vf, vb, vm, mode, fill, intra=True))
        path = dummy_video_path(scene_id, mode, key, budget)
    video = DummyVideo(budget, path, key, vf, tuple(sorted(set(vb))), tuple(f for f, _ in vm), rate, length)
    return video, {"mode": mode, "fill": fill, "frames": vf, "black": vb, "masks": vm, "key": key, "fps": rate,
                   "full": full, "budget": None if full else budget, "timeline": timeline}


def plan_dummies(scene: Scene, table: EvidenceTable, questions: Sequence[Question], source_key: str,
                 size: tuple[int, int], budgets: Sequence[BudgetValue], dummy: DummyConfig = DummyConfig(),
                 encode: EncodeConfig = EncodeConfig(), profile: str = "uniform",
                 profile_options: Mapping[str, Any] | None = None, evaluators: Sequence[Evaluator] = (),
                 instant_tolerance_s: float = DEFAULT_INSTANT_TOLERANCE_S
                 ) -> tuple[tuple[Variant, ...], tuple[DummyTruth, ...]]:
    """Dummy videos (shared by questions with identical recipes) and one DummyTruth per
    (question, mode) with its video per dummy budget. ``budgets``: the dummy budgets;
    ``dummy.length``: ``budget`` (numeric budgets get budget dummies: ``profile`` with
    ``profile_options`` at budget n on the full-length dummy's timeline, at the scene's fps,
    written at ``encode.budget_fps``) or ``full`` (every budget uses the full-length dummy). The
    ``all`` budget always uses the full-length dummy. Questions about no object (room size, route
    planning) get only the allblack dummy. A question with a time window or an instant removes
    only the evidence inside its :func:`vistest.videos.evidence.time_span` (the window's frames,
    and those within ``instant_tolerance_s`` seconds of the instant: the budget stage's
    tolerance); unknown frames and ``evidence_frame_margin`` neighbours too. ``evaluators``: the
    configurations whose takes each dummy records (:func:`evaluator_takes`). ``source_key``:
    what the source's frames are."""
    opts = dict(profile_options or {})
    n, fps, fill = table.num_frames, scene.fps, dummy.fill
    row_unknown = tuple(int(f) for f in np.flatnonzero(~table.known)) if dummy.unknown_as_evidence else ()
    groups: dict[str, dict] = {}  # path -> variant fields and served questions/budgets, in first-seen order
    truths: list[DummyTruth] = []
    for q in questions:
        objs, span, evidence = dummy_evidence(table, q, scene, dummy.unknown_as_evidence,
                                              dummy.evidence_frame_margin, instant_tolerance_s)
        all_unknown = row_unknown
        if objs and dummy.unknown_as_evidence:  # the frames where nothing says whether its objects show
            all_unknown = tuple(int(f) for f in np.flatnonzero(table.unknown_of(objs)))
        unknown = all_unknown if span is None else tuple(f for f in all_unknown if f in span)
        for mode in dummy.modes:
            if mode != "allblack" and not objs:
                continue
            rects = table.mask_rects(objs, size, dummy.mask_margin, span) if mode == "mask" else {}
            frames, black, masks = dummy_recipe(mode, n, evidence, rects, unknown)
            mode_fill = fill if mode == "mask" else None
            removed = objs if mode != "allblack" else ()
            warnings = []
            if mode != "allblack" and not set(evidence) - set(unknown):
                warnings.append("no frame shows the removed objects: apart from unknown frames the dummy "
                                "equals the source" if span is None else
                                "no frame of the question's time span shows the removed objects: apart from "
                                "unknown frames the dummy equals the source")
            if mode == "drop" and span is not None and len(frames) < n:
                warnings.append(TIMED_DROP_WARNING)
            if not frames:
                warnings.append("every frame carries evidence: nothing is left to write")
            src = None if mode == "allblack" else source_key
            videos = []
            for b in budgets:
                v, fields = _dummy_video(scene.scene_id, mode, mode_fill, src, size, encode, (frames, black, masks),
                                         b, b == ALL or dummy.length == LENGTH_FULL, fps, profile, opts)
                videos.append(v)
                if v.path is None:
                    continue
                shown = shown_evidence(table, removed, fields["frames"], fields["black"], fields["masks"], span)
                if shown:
                    raise AssertionError(f"{scene.scene_id}: {q.id}: {mode} dummy {v.path} shows evidence in frames "
                                         f"{list(shown)[:10]}")
                g = groups.setdefault(v.path, {**fields, "budgets": [], "questions": [], "objects": [],
                                               "evidence": set()})
                if q.id not in g["questions"]:
                    g["questions"].append(q.id)
                if b not in g["budgets"]:
                    g["budgets"].append(b)
                g["objects"] += [o for o in removed if o not in g["objects"]]
                g["evidence"].update(evidence if mode != "allblack" else ())
            gt, status, reason, expectation = dummy_ground_truth(q, mode)
            truths.append(DummyTruth(q, mode, mode_fill, gt, status, reason, expectation, removed,
                                     evidence if mode != "allblack" else (), len(frames), tuple(videos),
                                     tuple(warnings)))
    variants = []
    for path, g in groups.items():
        budgets_served = tuple(g["budgets"])
        takes = video_takes(len(g["frames"]), g["fps"], budgets_served, profile, opts)
        etakes = evaluator_takes(len(g["frames"]), g["fps"], budgets_served, evaluators)
        variants.append(Variant(scene.scene_id, "dummy", path, g["fps"], size, g["frames"], g["key"], black=g["black"],
                                masks=g["masks"], fill=g["fill"], mode=g["mode"], budget=g["budget"],
                                budgets=budgets_served, length=LENGTH_FULL if g["full"] else LENGTH_BUDGET,
                                profile=profile, questions=tuple(g["questions"]), objects=tuple(g["objects"]),
                                evidence_frames=tuple(sorted(g["evidence"])), timeline=g["timeline"], takes=takes,
                                evaluator_takes=etakes, warnings=take_warnings(takes)))
    return tuple(variants), tuple(truths)


# ---------------------------------------------------------------------------------------
# the plan
# ---------------------------------------------------------------------------------------
def plan_variants(scene: Scene, visibility: Visibility, questions: Sequence[Question],
                  selections: Sequence[FrameSelection], *, source: str | os.PathLike, source_key: str,
                  size: tuple[int, int], dummy: DummyConfig = DummyConfig(), encode: EncodeConfig = EncodeConfig(),
                  truth: TruthConfig = TruthConfig(), source_info: VideoInfo | None = None,
                  warnings: Sequence[str] = (), evaluators: Sequence[Evaluator] = ()) -> VariantPlan:
    """The VariantPlan of one scene.

    ``selections``: the frame selections of the budgets (``BudgetTruth.selections``, so the
    videos hold exactly the frames the ground truth was computed from; their profile, with
    ``truth.profile_options``, is the one budget dummies are taken with). ``truth``: the budget
    ground truth's settings (vistest.budget.config.TruthConfig). ``source``: the video;
    ``source_key``: :func:`file_key` of it; ``size``: its decoded (W, H) (odd sizes are padded
    to even on the right/bottom); ``source_info``: its probe (codec and container decide
    whether all_frame is tried as a stream copy; None: it is encoded). ``dummy``: what the
    dummies remove and for which budgets (:func:`plan_dummies`,
    vistest.videos.config.DummyConfig.budgets_of); ``encode``: encoder settings and the n-frame
    videos' rate. ``evaluators``: the evaluator configurations whose takes every video
    records. ``truth.instant_tolerance_s``: seconds around a question's instant whose frames its
    dummies remove evidence from (the budget ground truth's tolerance). ``scene.num_frames``
    must be the decoded frame count (checked by the caller
    against the video). See the module docstring.
    """
    check_scene_id(scene.scene_id, scene.source)
    n = scene.num_frames
    source_size = (int(size[0]), int(size[1]))
    size = (source_size[0] + source_size[0] % 2, source_size[1] + source_size[1] % 2)
    budgets = tuple(s.budget for s in selections)
    dbudgets = dummy.budgets_of(budgets)
    profiles = {s.profile for s in selections}
    profile = selections[0].profile if selections else "uniform"
    if len(profiles) > 1:
        raise InputError(f"selections: expected one sampler profile, got {sorted(profiles)}")
    blocker = remux_note(source_info.codec, source_info.container, source_size) if source_info else \
        "the source was not probed"
    qids = tuple(q.id for q in questions)
    full_range = bool(source_info and source_info.full_range)
    pixels = f"{source_key}/video-range" if full_range else source_key  # what the recipes' frames are made of
    variants = [budget_variant(scene.scene_id, sel, pixels, size, scene.fps, encode.budget_fps, encode.settings, qids,
                               truth.profile_options, blocker, evaluators) for sel in selections]
    table = EvidenceTable(visibility, n, dummy.evidence_threshold)
    dummies, truths = plan_dummies(scene, table, questions, pixels, size, dbudgets, dummy, encode, profile,
                                   truth.profile_options, evaluators, truth.instant_tolerance_s)
    variants += dummies
    paths = Counter(v.path for v in variants)
    dup = [p for p, c in paths.items() if c > 1]
    if dup:
        raise AssertionError(f"two variants share the path {dup[0]!r}")
    plan_warnings = list(warnings)
    unknown = int((~table.known).sum())
    if unknown and dummy.modes:
        plan_warnings.append(f"{unknown} of {n} decoded frames have no valid pose, no visibility row or an object "
                             f"of unknown state (2D); "
                             + ("dummies treat them as evidence" if dummy.unknown_as_evidence else
                                "dummies keep them (--keep-unknown-frames)"))
    if size != source_size:
        plan_warnings.append(f"the video is {source_size[0]}x{source_size[1]}; written videos are padded to "
                             f"{size[0]}x{size[1]} (yuv420p needs even sizes)")
    return VariantPlan(scene.scene_id, str(Path(source).resolve()), source_key, source_size, size, float(scene.fps), n,
                       encode.settings, float(encode.budget_fps), float(dummy.evidence_threshold), budgets,
                       tuple(variants), truths, tuple(plan_warnings), dbudgets, dummy.length, full_range)


def dummy_gt_jsonl(plan: VariantPlan) -> str:
    """``dummy_gt.jsonl``: one line per (question, mode, dummy budget), in question, mode,
    budget order (the format vistest.eval.score reads beside the budget GT files; docs/videos.md)."""
    return dummy_jsonl(plan.dummies, plan.dummy_budgets, plan.evidence_threshold)
