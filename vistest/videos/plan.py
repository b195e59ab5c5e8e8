"""VariantPlan: which derived videos to write for one scene, and the ground truth of each (stage 5).

Two kinds of video (docs/videos.md has the full account):

* **Budget videos** ``{n}_frame/{scene_id}.mp4``: exactly the frames a sampler profile
  selects for budget n, in order (repeats kept), written at ``budget_fps`` (default
  :data:`DEFAULT_BUDGET_FPS` = 1 frame/s, so that fps-based samplers such as
  qwen-vl-utils at 2 frames/s and LLaVA-Video at 1 frame/s also take every frame);
  ``all_frame/{scene_id}.mp4`` holds every decoded frame at the source frame rate. For
  every known profile the plan records which frames of the *written* video that profile
  takes (:class:`ProfileTake`); one that drops or repeats a frame is a warning.
* **Dummy videos**, one per question and mode, with the question's evidence removed:
  ``drop`` (evidence frames removed), ``black`` (evidence frames black, timing kept),
  ``mask`` (the evidence objects' visible boxes filled: ``black``, ``blur`` or
  ``inpaint``), ``allblack`` (every frame black; one per scene, serves every question).
  Dummies are written at the source frame rate and are content-addressed: questions whose
  removals are identical share one file ``dummy_{mode}/{scene_id}/{key[:16]}.mp4``.

Evidence: frame f carries evidence for a question when any referenced object (``objects``,
or every instance of a ``category``) has ``visible[f, o] > evidence_threshold`` (default
:data:`DEFAULT_EVIDENCE_THRESHOLD` = 0: any visible part at all). Decoded frames whose pose
is invalid or that have no visibility row are *unknown*: with ``unknown_as_evidence`` (the
default) they are removed (drop), black (black) or black in full (mask), since nothing
says the object is absent from them.

Dummy ground truth: counting -> 0 (``status`` changed, ``expectation`` "zero"); every other
type -> ``unanswerable`` with ``expectation`` "abstain" (an answer is a prior-driven guess;
the original answer is kept in ``original_ground_truth`` for scoring), unless the question
offers an answer for that (reformulated questions: ``Question.unsupported_answer``, the
"Cannot be determined from the video" option, else "None of these", or for numbers and
texts that accept abstention that phrase): then that answer, ``status`` kept or changed
against the original, ``unsupported`` true, ``expectation`` "abstain" or "none_of_these".

Conventions: frame numbers are 0-based decoded frames of the source video; rectangles
are ``(x0, y0, x1, y1)`` half-open pixel bounds in the written (even) frame size, with
even coordinates (yuv420p chroma covers 2x2 pixels); fps is frames per second.
Every video carries a content *key* (sha256 over source content, frames, black frames,
masks, mode, fill, size, rate and encoder settings): a rerun skips an output whose key
matches, and a dummy's file name is its key.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..budget.truth import CHANGED, KEPT, UNANSWERABLE, FrameSelection, count_like
from ..errors import InputError
from ..eval.answers import none_letter
from ..questions import RULE_COUNTING, Question
from ..budget.sampling import ALL, PROFILES, Budget, select_frames
from ..layout import budget_video_path, dummy_video_path
from ..scene import Scene
from .ffmpeg import X264_PRESETS, frame_rate
from ..visibility.table import Visibility

KEY_FORMAT = "vistest.variant/1"
DUMMY_MODES = ("drop", "black", "mask", "allblack")
FILLS = ("black", "blur", "inpaint")
DEFAULT_DUMMY_MODES = DUMMY_MODES
DEFAULT_BUDGET_FPS = 1.0  # frames/s: the one rate at which every fps-based profile takes every frame
DEFAULT_EVIDENCE_THRESHOLD = 0.0  # fraction of the image area: "> 0" = any visible part
DEFAULT_MASK_MARGIN = 2  # native pixels added around each visible box before even alignment

REASON_EVIDENCE_REMOVED = "evidence_removed"
REASON_ALL_BLACK = "all_black"
EXPECT_ZERO = "zero"        # the answer must be 0 (counting)
EXPECT_ABSTAIN = "abstain"  # the model should abstain; any answer is a prior-driven guess
EXPECT_NONE = "none_of_these"  # the model should answer the question's "None of these" option

Rect = tuple[int, int, int, int]
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class EncoderSettings:
    """libx264 settings of every written video: ``crf`` (0-51, lower = better), ``preset``."""

    crf: int = 18
    preset: str = "medium"

    def __post_init__(self):
        if isinstance(self.crf, bool) or not isinstance(self.crf, int) or not 0 <= self.crf <= 51:
            raise InputError(f"crf: expected an integer in 0..51 (libx264), got {self.crf!r}")
        if self.preset not in X264_PRESETS:
            raise InputError(f"preset: expected one of {', '.join(X264_PRESETS)}, got {self.preset!r}")

    def to_json(self) -> dict:
        return {"codec": "libx264", "pix_fmt": "yuv420p", "crf": self.crf, "preset": self.preset}


@dataclass(frozen=True)
class ProfileTake:
    """The frames of a written budget video that one sampler profile takes.

    ``frames``: positions in the written video (0-based), None when the profile raises
    (``error`` says why, as the evaluator would fail). ``num_frames``: frames in the video.
    """

    profile: str
    num_frames: int
    frames: tuple[int, ...] | None
    error: str | None = None

    @property
    def missing(self) -> tuple[int, ...]:
        return () if self.frames is None else tuple(sorted(set(range(self.num_frames)) - set(self.frames)))

    @property
    def repeated(self) -> tuple[int, ...]:
        return () if self.frames is None else tuple(sorted(i for i, c in Counter(self.frames).items() if c > 1))

    @property
    def ok(self) -> bool:
        """True when the profile takes every frame exactly once, in order."""
        return self.frames == tuple(range(self.num_frames))

    def warning(self) -> str | None:
        """A one-line warning when the profile does not take every frame once, else None."""
        if self.error is not None:
            return f"profile {self.profile} fails on this {self.num_frames}-frame video: {self.error}"
        if self.ok:
            return None
        parts = [f"misses {list(self.missing)}"] if self.missing else []
        parts += [f"repeats {list(self.repeated)}"] if self.repeated else []
        if not parts:
            parts = ["reorders frames"]
        return f"profile {self.profile} takes {len(self.frames)} frames of this {self.num_frames}-frame video: " \
               + ", ".join(parts)

    def to_json(self) -> dict:
        out: dict[str, Any] = {"takes_every_frame": self.ok}
        if self.error is not None:
            out["error"] = self.error
        else:
            out["frames"] = list(self.frames)
            if not self.ok:
                out["missing"], out["repeated"] = list(self.missing), list(self.repeated)
        return out


@dataclass(frozen=True)
class Variant:
    """One video to write. ``path``: relative to the output folder, '/'-separated.

    ``frames``: the source frame of each output frame, in order (non-decreasing; repeats
    allowed); ``black``: source frames written as black frames instead (sorted);
    ``masks``: (source frame, rectangles) pairs, sorted by frame, filled with ``fill``.
    ``source_free``: every frame is black, so no source pixel is needed (allblack).
    ``kind``: ``budget`` or ``dummy``. ``questions``: ids of the questions it serves.
    ``objects``/``evidence_frames``: the dummy's removed objects and their evidence frames.
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
    budget: Budget | None = None
    profile: str | None = None
    questions: tuple[str, ...] = ()
    objects: tuple[str, ...] = ()
    evidence_frames: tuple[int, ...] = ()
    takes: tuple[ProfileTake, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def num_frames(self) -> int:
        return len(self.frames)

    @property
    def source_free(self) -> bool:
        return len(self.black) == len(set(self.frames)) and set(self.black) == set(self.frames)


@dataclass(frozen=True)
class DummyTruth:
    """The ground truth one dummy video implies for one question.

    ``path``: the dummy video (None when no frame is left to write). ``ground_truth``: 0
    (typed like the original) for counting, the offered answer of a reformulated question
    (module docstring), None otherwise. ``status``: ``kept``, ``changed`` or
    ``unanswerable``; ``reason``: ``evidence_removed`` or ``all_black``; ``expectation``:
    ``zero``, ``abstain`` or ``none_of_these``. ``short_of_budgets``: budgets larger than the
    video's frame count.
    """

    question: Question
    mode: str
    fill: str | None
    path: str | None
    key: str | None
    num_frames: int
    fps: float
    ground_truth: Any
    status: str
    reason: str
    expectation: str
    objects: tuple[str, ...]
    evidence_frames: tuple[int, ...]
    short_of_budgets: tuple[Budget, ...]
    warnings: tuple[str, ...] = ()

    @property
    def variant(self) -> str:
        """The scoring variant name: ``dummy-{mode}`` (vistest.eval.metrics pairs it with the real row)."""
        return f"dummy-{self.mode}"

    def to_record(self, budget: Budget) -> dict:
        """One line of ``dummy_gt.jsonl``: the question's own fields, then the dummy's for an
        evaluator sampling ``budget`` frames of the dummy video. ``num_frames`` is the budget
        (as in the budget GT files); ``video_frames`` the frames the dummy video holds."""
        rec = dict(self.question.record)
        rec.update({
            "variant": self.variant, "num_frames": budget, "dummy_mode": self.mode, "fill": self.fill,
            "video": self.path, "video_key": self.key, "video_frames": self.num_frames, "fps": self.fps,
            "fewer_frames_than_budget": budget != ALL and self.num_frames < int(budget),
            "ground_truth": self.ground_truth, "original_ground_truth": self.question.ground_truth,
            "status": self.status, "reason": self.reason, "expectation": self.expectation,
            "removed_objects": list(self.objects), "evidence_frames": list(self.evidence_frames),
            "warnings": list(self.warnings),
        })
        if self.ground_truth is not None and self.expectation != EXPECT_ZERO:
            rec["unsupported"] = True  # the answer the question offers where the frames support none
        return rec


@dataclass(frozen=True)
class VariantPlan:
    """Everything to write for one scene. ``source``: the source video (absolute path);
    ``source_key``: sha256 of its bytes; ``source_size``: its decoded (W, H); ``size``: the
    written (W, H), the decoded size padded to even with black on the right/bottom;
    ``source_fps``: frames/s; ``num_frames``: decoded frames of the source."""

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
    budgets: tuple[Budget, ...]
    variants: tuple[Variant, ...]
    dummies: tuple[DummyTruth, ...]
    warnings: tuple[str, ...] = ()

    def variant(self, path: str) -> Variant:
        """The variant written to ``path`` (relative to the output folder)."""
        for v in self.variants:
            if v.path == path:
                return v
        raise KeyError(f"no variant with path {path!r} in the plan of scene {self.scene_id!r}")


# ---------------------------------------------------------------------------------------
# keys and names
# ---------------------------------------------------------------------------------------
def file_key(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """sha256 (hex) of a file's bytes, read in ``chunk``-byte pieces (constant memory)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def content_key(recipe: Mapping[str, Any]) -> str:
    """sha256 (hex) of a recipe's canonical JSON (sorted keys, no spaces)."""
    text = json.dumps({"format": KEY_FORMAT, **recipe}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def check_scene_id(scene_id: str, source: str = "scene") -> str:
    """``scene_id`` if it can name files (letters, digits, ``._-``, not starting with ``.``);
    InputError naming ``source`` (the scene file) otherwise."""
    if not _SAFE_ID.fullmatch(scene_id):
        raise InputError(f"{source}: scene_id: {scene_id!r} cannot name video files; expected letters, digits, "
                         f"'.', '_' or '-', not starting with '.'")
    return scene_id


def _recipe(source_key: str | None, size, fps: float, settings: EncoderSettings, frames, black=(), masks=(),
            mode=None, fill=None) -> dict:
    return {"source": source_key, "size": list(size), "rate": frame_rate(fps), "frames": list(frames),
            "black": list(black), "masks": [[f, [list(r) for r in rs]] for f, rs in masks], "mode": mode,
            "fill": fill, "encoder": settings.to_json()}


# ---------------------------------------------------------------------------------------
# budget videos
# ---------------------------------------------------------------------------------------
def profile_takes(num_frames: int, budget: Budget, fps: float, profile: str | None = None,
                  options: Mapping[str, Any] | None = None) -> tuple[ProfileTake, ...]:
    """For every known profile, the frames of a ``num_frames``-frame video at ``fps`` that it
    takes for ``budget``. ``profile``/``options``: the run's own profile gets its options,
    the others their defaults."""
    out = []
    for name in PROFILES:
        opts = dict(options or {}) if name == profile else {}
        try:
            idx = select_frames(name, num_frames, budget, fps=fps, **opts)
            out.append(ProfileTake(name, num_frames, tuple(int(i) for i in idx)))
        except InputError as e:  # this profile cannot sample the written video (e.g. too few frames)
            out.append(ProfileTake(name, num_frames, None, str(e)))
    return tuple(out)


def budget_variant(scene_id: str, selection: FrameSelection, source_key: str, size: tuple[int, int],
                   source_fps: float, budget_fps: float, settings: EncoderSettings, questions: Sequence[str] = (),
                   profile_options: Mapping[str, Any] | None = None) -> Variant:
    """The budget video of one selection: its frames in selection order at ``budget_fps``
    (``all``: at ``source_fps``), with the profile takes and their warnings."""
    frames = tuple(int(i) for i in selection.frame_indices)
    if any(b < a for a, b in zip(frames, frames[1:])):
        raise InputError(f"{scene_id}: budget {selection.label}: profile {selection.profile!r} selected frames out "
                         f"of order ({list(frames)[:12]} ...); a budget video needs them in decode order")
    fps = source_fps if selection.budget == ALL else budget_fps
    takes = profile_takes(len(frames), selection.budget, fps, selection.profile, profile_options)
    warnings = tuple(w for w in (t.warning() for t in takes) if w)
    key = content_key(_recipe(source_key, size, fps, settings, frames))
    return Variant(scene_id, "budget", budget_video_path(scene_id, selection.budget), float(fps), size, frames, key,
                   budget=selection.budget, profile=selection.profile, questions=tuple(questions), takes=takes,
                   warnings=warnings)


# ---------------------------------------------------------------------------------------
# evidence
# ---------------------------------------------------------------------------------------
def evidence_objects(q: Question, scene: Scene) -> tuple[str, ...]:
    """Object ids whose evidence a dummy removes: ``objects``, then every instance of each
    ``category`` label (scene order); empty for questions about no object (room size)."""
    ids = list(q.objects)
    for lab in q.category:
        ids += [o.id for o in scene.objects if o.label == lab and o.id not in ids]
    return tuple(ids)


class EvidenceTable:
    """Visibility indexed by decoded frame 0..N-1: ``visible`` (N, O) with NaN for unknown
    frames (invalid pose or no row), ``bbox`` (N, O, 4), ``known`` (N,), columns by object id."""

    def __init__(self, vis: Visibility, num_frames: int, threshold: float):
        self.source = vis.source
        if not 0.0 <= float(threshold) < 1.0:
            raise InputError(f"evidence_threshold: expected a fraction of the image area in [0, 1), got {threshold!r}")
        fidx = np.asarray(vis.frame_index, dtype=np.int64)
        ids = [str(x) for x in np.asarray(vis.object_ids).tolist()]
        self.col = {oid: c for c, oid in enumerate(ids)}
        self.num_frames = num_frames
        self.threshold = float(threshold)
        self.visible = np.full((num_frames, len(ids)), np.nan)
        self.bbox = np.full((num_frames, len(ids), 4), np.nan)
        rows = (fidx >= 0) & (fidx < num_frames)
        self.visible[fidx[rows]] = np.asarray(vis.visible, dtype=np.float64)[rows]
        self.bbox[fidx[rows]] = np.asarray(vis.bbox, dtype=np.float64)[rows]
        valid = np.zeros(num_frames, bool)
        valid[fidx[rows]] = np.asarray(vis.valid, bool)[rows]
        self.known = valid & np.isfinite(self.visible).all(axis=1)

    def columns(self, object_ids: Sequence[str]) -> list[int]:
        """Column of each object id; InputError naming the ids the table lacks."""
        missing = [o for o in object_ids if o not in self.col]
        if missing:
            raise InputError(f"{self.source}: object_ids: no column for object(s) {missing} (stale visibility "
                             f"file?)")
        return [self.col[o] for o in object_ids]

    def evident(self, object_ids: Sequence[str]) -> np.ndarray:
        """(N, k) bool: object k visible above the threshold in frame f (False where unknown)."""
        v = self.visible[:, self.columns(object_ids)]
        with np.errstate(invalid="ignore"):
            return v > self.threshold

    def evidence_frames(self, object_ids: Sequence[str], unknown_as_evidence: bool = True) -> tuple[int, ...]:
        """Sorted decoded frames carrying evidence of any of ``object_ids`` (plus unknown frames)."""
        if not object_ids:
            return ()
        ev = self.evident(object_ids).any(axis=1)
        if unknown_as_evidence:
            ev |= ~self.known
        return tuple(int(f) for f in np.flatnonzero(ev))

    def mask_rects(self, object_ids: Sequence[str], size: tuple[int, int], margin: int) -> dict[int, tuple[Rect, ...]]:
        """{frame: rectangles} covering each evident object's visible box, grown by ``margin``
        pixels, aligned outward to even coordinates and clipped to ``size`` (W, H)."""
        cols = self.columns(object_ids)
        ev = self.evident(object_ids)
        out: dict[int, tuple[Rect, ...]] = {}
        for f, k in zip(*np.nonzero(ev)):
            b = self.bbox[f, cols[k]]
            if not np.isfinite(b).all():
                continue  # visible above the threshold but no box: cannot happen with vistest's kernel
            out.setdefault(int(f), ())
            out[int(f)] += (even_rect(b, margin, size),)
        return {f: tuple(sorted(set(rs))) for f, rs in sorted(out.items())}


def even_rect(bbox: Sequence[float], margin: int, size: tuple[int, int]) -> Rect:
    """``[x0, y0, x1, y1]`` half-open pixel bounds grown by ``margin`` px, with x0, y0 rounded
    down and x1, y1 up to even numbers, clipped to the (even) frame ``size`` (W, H)."""
    w, h = size
    x0, y0, x1, y1 = (float(v) for v in bbox)
    x0, y0 = max(0, int(np.floor(x0)) - margin), max(0, int(np.floor(y0)) - margin)
    x1, y1 = min(w, int(np.ceil(x1)) + margin), min(h, int(np.ceil(y1)) + margin)
    x0, y0 = x0 - x0 % 2, y0 - y0 % 2
    x1, y1 = min(w, x1 + x1 % 2), min(h, y1 + y1 % 2)
    return (x0, y0, x1, y1)


# ---------------------------------------------------------------------------------------
# dummies
# ---------------------------------------------------------------------------------------
def dummy_ground_truth(q: Question, mode: str) -> tuple[Any, str, str, str]:
    """(ground_truth, status, reason, expectation) of ``q`` on a dummy of ``mode`` (module docstring)."""
    reason = REASON_ALL_BLACK if mode == "allblack" else REASON_EVIDENCE_REMOVED
    if q.type.rule == RULE_COUNTING:
        return count_like(q.ground_truth, 0), CHANGED, reason, EXPECT_ZERO
    answer = q.unsupported_answer()
    if answer is None:
        return None, UNANSWERABLE, reason, EXPECT_ABSTAIN
    same = str(answer).strip().upper() == str(q.ground_truth).strip().upper()
    expectation = EXPECT_NONE if answer == none_letter(q.options) else EXPECT_ABSTAIN
    return answer, KEPT if same else CHANGED, reason, expectation


def _dummy_recipe(mode: str, n: int, evidence: Sequence[int], rects: Mapping[int, tuple[Rect, ...]],
                  unknown: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...], tuple]:
    """(frames, black, masks) of a dummy of ``mode`` over ``n`` source frames."""
    everything = tuple(range(n))
    if mode == "drop":
        gone = set(evidence)
        return tuple(f for f in everything if f not in gone), (), ()
    if mode == "black":
        return everything, tuple(evidence), ()
    if mode == "mask":
        black = set(unknown)
        return everything, tuple(sorted(black)), tuple((f, rs) for f, rs in rects.items() if f not in black)
    if mode == "allblack":
        return everything, everything, ()
    raise InputError(f"dummy mode: expected one of {', '.join(DUMMY_MODES)}, got {mode!r}")


def plan_dummies(scene: Scene, table: EvidenceTable, questions: Sequence[Question], modes: Sequence[str],
                 source_key: str, size: tuple[int, int], fps: float, settings: EncoderSettings,
                 budgets: Sequence[Budget], fill: str = "black", margin: int = DEFAULT_MASK_MARGIN,
                 unknown_as_evidence: bool = True) -> tuple[tuple[Variant, ...], tuple[DummyTruth, ...]]:
    """Dummy videos (shared by questions with identical recipes) and one DummyTruth per
    (question, mode). Questions about no object (room size, route planning) get only the
    allblack dummy."""
    for m in modes:
        if m not in DUMMY_MODES:
            raise InputError(f"dummy mode: expected one of {', '.join(DUMMY_MODES)}, got {m!r}")
    if fill not in FILLS:
        raise InputError(f"fill: expected one of {', '.join(FILLS)}, got {fill!r}")
    n = table.num_frames
    unknown = tuple(int(f) for f in np.flatnonzero(~table.known)) if unknown_as_evidence else ()
    groups: dict[str, dict] = {}  # key -> variant fields and served questions, in first-seen order
    truths: list[DummyTruth] = []
    for q in questions:
        objs = evidence_objects(q, scene)
        evidence = table.evidence_frames(objs, unknown_as_evidence) if objs else ()
        for mode in modes:
            if mode != "allblack" and not objs:
                continue
            rects = table.mask_rects(objs, size, margin) if mode == "mask" else {}
            frames, black, masks = _dummy_recipe(mode, n, evidence, rects, unknown)
            mode_fill = fill if mode == "mask" else None
            warnings = []
            if mode != "allblack" and not set(evidence) - set(unknown):
                warnings.append("no frame shows the removed objects: apart from unknown frames the dummy "
                                "equals the source")
            key = None
            path = None
            if frames:
                src = None if mode == "allblack" else source_key
                key = content_key(_recipe(src, size, fps, settings, frames, black, masks, mode, mode_fill))
                path = dummy_video_path(scene.scene_id, mode, key)
                g = groups.setdefault(key, {"mode": mode, "fill": mode_fill, "frames": frames, "black": black,
                                            "masks": masks, "path": path, "questions": [], "objects": [],
                                            "evidence": set()})
                g["questions"].append(q.id)
                g["objects"] += [o for o in objs if o not in g["objects"]]
                g["evidence"].update(evidence if mode != "allblack" else ())
            else:
                warnings.append("every frame carries evidence: nothing is left to write")
            short = tuple(b for b in budgets if b != ALL and int(b) > len(frames))
            gt, status, reason, expectation = dummy_ground_truth(q, mode)
            truths.append(DummyTruth(q, mode, mode_fill, path, key, len(frames), float(fps), gt, status, reason,
                                     expectation, objs if mode != "allblack" else (),
                                     evidence if mode != "allblack" else (), short, tuple(warnings)))
    variants = tuple(Variant(scene.scene_id, "dummy", g["path"], float(fps), size, g["frames"], key,
                             black=g["black"], masks=g["masks"], fill=g["fill"], mode=g["mode"],
                             questions=tuple(g["questions"]), objects=tuple(g["objects"]),
                             evidence_frames=tuple(sorted(g["evidence"])))
                     for key, g in groups.items())
    return variants, tuple(truths)


# ---------------------------------------------------------------------------------------
# the plan
# ---------------------------------------------------------------------------------------
def plan_variants(scene: Scene, visibility: Visibility, questions: Sequence[Question],
                  selections: Sequence[FrameSelection], *, source: str | os.PathLike, source_key: str,
                  size: tuple[int, int], dummy_modes: Sequence[str] = DEFAULT_DUMMY_MODES, fill: str = "black",
                  evidence_threshold: float = DEFAULT_EVIDENCE_THRESHOLD, mask_margin: int = DEFAULT_MASK_MARGIN,
                  budget_fps: float = DEFAULT_BUDGET_FPS, settings: EncoderSettings = EncoderSettings(),
                  profile_options: Mapping[str, Any] | None = None, unknown_as_evidence: bool = True,
                  warnings: Sequence[str] = ()) -> VariantPlan:
    """The VariantPlan of one scene.

    ``selections``: the frame selections of the budgets (``BudgetTruth.selections``, so the
    videos hold exactly the frames the ground truth was computed from). ``source``: the
    video; ``source_key``: :func:`file_key` of it; ``size``: its decoded (W, H) (odd sizes
    are padded to even on the right/bottom).
    ``scene.num_frames`` must be the decoded frame count (checked by the caller against
    the video). Other parameters: see the module docstring.
    """
    check_scene_id(scene.scene_id, scene.source)
    if not (isinstance(budget_fps, (int, float)) and np.isfinite(budget_fps) and budget_fps > 0):
        raise InputError(f"budget_fps: expected a positive number of frames per second, got {budget_fps!r}")
    if isinstance(mask_margin, bool) or not isinstance(mask_margin, int) or mask_margin < 0:
        raise InputError(f"mask_margin: expected a non-negative number of pixels, got {mask_margin!r}")
    n = scene.num_frames
    source_size = (int(size[0]), int(size[1]))
    size = (source_size[0] + source_size[0] % 2, source_size[1] + source_size[1] % 2)
    qids = tuple(q.id for q in questions)
    variants = [budget_variant(scene.scene_id, sel, source_key, size, scene.fps, budget_fps, settings, qids,
                               profile_options) for sel in selections]
    table = EvidenceTable(visibility, n, evidence_threshold)
    dummies, truths = plan_dummies(scene, table, questions, dummy_modes, source_key, size, scene.fps, settings,
                                   [s.budget for s in selections], fill, mask_margin, unknown_as_evidence)
    variants += dummies
    paths = Counter(v.path for v in variants)
    dup = [p for p, c in paths.items() if c > 1]
    if dup:
        raise AssertionError(f"two variants share the path {dup[0]!r}")
    plan_warnings = list(warnings)
    unknown = int((~table.known).sum())
    if unknown and dummy_modes:
        plan_warnings.append(f"{unknown} of {n} decoded frames have no valid pose or no visibility row; "
                             + ("dummies treat them as evidence" if unknown_as_evidence else
                                "dummies keep them (--keep-unknown-frames)"))
    if size != source_size:
        plan_warnings.append(f"the video is {source_size[0]}x{source_size[1]}; written videos are padded to "
                             f"{size[0]}x{size[1]} (yuv420p needs even sizes)")
    return VariantPlan(scene.scene_id, str(Path(source).resolve()), source_key, source_size, size, float(scene.fps), n,
                       settings, float(budget_fps), float(evidence_threshold), tuple(s.budget for s in selections),
                       tuple(variants), truths, tuple(plan_warnings))


# ---------------------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------------------
def manifest_record(plan: VariantPlan, v: Variant) -> dict:
    """One line of ``manifest.jsonl`` for variant ``v`` (see docs/videos.md)."""
    rec: dict[str, Any] = {
        "scene_id": plan.scene_id, "variant": v.kind, "path": v.path,
        "budget": v.budget if v.budget is None or v.budget == ALL else int(v.budget),
        "profile": v.profile, "mode": v.mode, "fill": v.fill, "source": plan.source,
        "source_key": None if v.source_free else plan.source_key,
        "source_frames": list(v.frames), "black_frames": list(v.black),
        "masks": [[f, *r] for f, rs in v.masks for r in rs],
        "num_frames": v.num_frames, "fps": v.fps, "size": list(v.size), "questions": list(v.questions),
        "key": v.key, "crf": plan.settings.crf, "preset": plan.settings.preset,
    }
    if v.kind == "budget":
        rec["profiles"] = {t.profile: t.to_json() for t in v.takes}
    else:
        rec["objects"] = list(v.objects)
        rec["evidence_frames"] = list(v.evidence_frames)
        rec["short_of_budgets"] = [int(b) for b in plan.budgets if b != ALL and int(b) > v.num_frames]
    rec["warnings"] = list(v.warnings)
    return rec


def manifest_records(plan: VariantPlan) -> list[dict]:
    """Manifest lines of every variant, sorted by path."""
    return [manifest_record(plan, v) for v in sorted(plan.variants, key=lambda v: v.path)]


def dummy_gt_jsonl(plan: VariantPlan) -> str:
    """``dummy_gt.jsonl``: one line per (question, mode, budget), in question, mode, budget
    order (the format vistest.eval.records reads beside the budget GT files; docs/videos.md)."""
    params = {"evidence_threshold": plan.evidence_threshold}
    return "".join(json.dumps({**t.to_record(b), **params}, ensure_ascii=False) + "\n"
                   for t in plan.dummies for b in plan.budgets)
