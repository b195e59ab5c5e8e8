"""The video stage's settings: what the dummies remove (:class:`DummyConfig`), how videos are
encoded (:class:`EncodeConfig`) and what the writer may use (:class:`ResourceConfig`).

Nested frozen dataclasses in the style of vistest.generate.rules: every field has a default
(owned here, the stage that uses it) and ``metadata["doc"]`` saying what it does, with its
unit. vistest.job.RunConfig holds one of each; docs/videos.md lists the fields (a test checks).
``DummyConfig`` and ``EncodeConfig`` decide the outputs (they are in the run's key);
``ResourceConfig`` decides only how fast and in how much memory (never in a key: libx264's
threads follow from ``cpus``, which a batch fixes per scene).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..budget.config import setting
from ..budgets import ALL, BudgetValue, budget_label, parse_budget
from ..errors import InputError
from .ffmpeg import X264_PRESETS

DUMMY_MODES = ("drop", "black", "mask", "allblack")
FILLS = ("black", "blur", "inpaint")
DEFAULT_DUMMY_MODES = DUMMY_MODES
DEFAULT_BUDGET_FPS = 1.0  # frames/s: the one rate at which every fps-based profile takes every frame
DEFAULT_EVIDENCE_THRESHOLD = 0.0  # fraction of the image area: "> 0" = any visible part
DEFAULT_MASK_MARGIN = 2  # native pixels added around each visible box before even alignment
DEFAULT_MAX_MEMORY_MB = 500.0  # MB the video writer's process tree may use

# How long a video is: an n-frame video at budget_fps (budget videos, budget dummies), or the
# whole recipe at the source rate (all_frame, full-length dummies).
LENGTH_BUDGET, LENGTH_FULL = "budget", "full"
DUMMY_LENGTHS = (LENGTH_BUDGET, LENGTH_FULL)
DEFAULT_DUMMY_LENGTH = LENGTH_BUDGET


@dataclass(frozen=True)
class EncoderSettings:
    """libx264 settings: ``crf`` (0-51, lower = better) for every encoded video; ``preset``
    for the long-GOP full-length videos (all_frame when it cannot be a stream copy, full-length
    dummies); ``intra_preset`` for the all-intra n-frame videos (budget videos, budget dummies)."""

    crf: int = 18
    preset: str = "medium"
    intra_preset: str = "superfast"

    def __post_init__(self):
        if isinstance(self.crf, bool) or not isinstance(self.crf, int) or not 0 <= self.crf <= 51:
            raise InputError(f"crf: expected an integer in 0..51 (libx264), got {self.crf!r}")
        for name in ("preset", "intra_preset"):
            if getattr(self, name) not in X264_PRESETS:
                raise InputError(f"{name}: expected one of {', '.join(X264_PRESETS)}, got {getattr(self, name)!r}")

    def to_json(self, intra: bool = False) -> dict:
        """The encoder part of a content key (``intra``: the all-intra settings)."""
        if intra:
            return {"codec": "libx264", "pix_fmt": "yuv420p", "crf": self.crf, "preset": self.intra_preset,
                    "gop": 1}
        return {"codec": "libx264", "pix_fmt": "yuv420p", "crf": self.crf, "preset": self.preset}


@dataclass(frozen=True)
class EncodeConfig:
    """How the budget and dummy videos are encoded (``vistest run --crf --preset --intra-preset
    --budget-fps``)."""

    settings: EncoderSettings = setting(EncoderSettings(), "libx264 crf (0-51), preset of the long-GOP "
                                        "full-length videos, preset of the all-intra n-frame videos")
    budget_fps: float = setting(DEFAULT_BUDGET_FPS, "frames/s of the n-frame videos (budget videos, budget "
                                "dummies); 1: fps-based samplers take every frame")

    def __post_init__(self):
        f = self.budget_fps
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not math.isfinite(f) or f <= 0:
            raise InputError(f"budget_fps: expected a positive number of frames per second, got {f!r}")


@dataclass(frozen=True)
class DummyConfig:
    """What the dummy videos remove and for which budgets (``vistest run --dummy --fill
    --evidence-threshold --mask-margin --keep-unknown-frames --dummy-length --dummy-budgets``;
    vistest.videos.plan, docs/videos.md)."""

    modes: tuple[str, ...] = setting(DEFAULT_DUMMY_MODES, "dummy modes written: drop, black, mask, allblack "
                                     "(empty: no dummies)")
    fill: str = setting(FILLS[0], "how mask dummies fill the evidence objects' boxes: black, blur, inpaint")
    evidence_threshold: float = setting(DEFAULT_EVIDENCE_THRESHOLD, "fraction of the image area [0, 1) a "
                                        "referenced object's visible part must exceed for its frame to carry "
                                        "evidence (0: any visible part)")
    mask_margin: int = setting(DEFAULT_MASK_MARGIN, "pixels added around each masked box")
    unknown_as_evidence: bool = setting(True, "frames without a valid pose or visibility row count as evidence "
                                        "(removed, black, black in full); false: dummies keep them")
    length: str = setting(DEFAULT_DUMMY_LENGTH, "budget: each numeric budget's dummy holds the frames the "
                          "profile takes from the full-length dummy; full: the full-length dummy for every budget")
    budgets: tuple[BudgetValue, ...] | None = setting(None, "budgets dummies are written for (None: the numeric run "
                                                 "budgets; 'all' always uses the full-length dummy)")
    evidence_frame_margin: int = setting(0, "frames: each evidence frame's neighbours this many frames before "
                                         "and after also count as evidence (drop and black remove them too): "
                                         "guards against the object showing just under the threshold, or in "
                                         "motion blur, beside the frames that carry it")

    def __post_init__(self):
        for m in self.modes:
            if m not in DUMMY_MODES:
                raise InputError(f"dummy mode: expected one of {', '.join(DUMMY_MODES)}, got {m!r}")
        if self.fill not in FILLS:
            raise InputError(f"fill: expected one of {', '.join(FILLS)}, got {self.fill!r}")
        if self.length not in DUMMY_LENGTHS:
            raise InputError(f"dummy_length: expected one of {', '.join(DUMMY_LENGTHS)}, got {self.length!r}")
        m = self.mask_margin
        if isinstance(m, bool) or not isinstance(m, int) or m < 0:
            raise InputError(f"mask_margin: expected a non-negative number of pixels, got {m!r}")
        if isinstance(self.evidence_frame_margin, bool) or not isinstance(self.evidence_frame_margin, int) \
                or self.evidence_frame_margin < 0:
            raise InputError(f"evidence_frame_margin: expected a non-negative number of frames, "
                             f"got {self.evidence_frame_margin!r}")
        t = self.evidence_threshold
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t < 1:
            raise InputError(f"evidence_threshold: expected a fraction of the image area in [0, 1), got {t!r}")

    def budgets_of(self, budgets: tuple[BudgetValue, ...]) -> tuple[BudgetValue, ...]:
        """The budgets dummies are written for, among the run's ``budgets``: :attr:`budgets`
        (each one of ``budgets``), or by default the numeric ones (an ``all`` dummy is a
        full-length encode per question and mode: ask for it explicitly); none without modes."""
        if not self.modes:
            return ()
        if self.budgets is None:
            return tuple(b for b in budgets if b != ALL)
        out = []
        for b in self.budgets:
            pb = parse_budget(b, "dummy_budgets")
            if pb not in budgets:
                raise InputError(f"dummy_budgets: {budget_label(pb)} is not one of the budgets "
                                 f"({', '.join(budget_label(x) for x in budgets)})")
            if pb not in out:
                out.append(pb)
        return tuple(out)


@dataclass(frozen=True)
class ResourceConfig:
    """What one scene's writer may use (``--max-memory --jobs --threads``; vistest.videos.write.
    plan_resources). Never part of a run's key: the outputs do not depend on it, except through
    ``cpus`` on a machine without a fixed count (vistest batch fixes it per scene)."""

    max_memory_mb: float = setting(DEFAULT_MAX_MEMORY_MB, "MB the writer's process tree may use (sets "
                                   "encoders per decode pass and threads)")
    jobs: int | None = setting(None, "encoders per decode pass (None: from the memory and the CPUs)")
    threads: int | None = setting(None, "libx264 threads per encoder (None: from the memory and the CPUs)")
    cpus: int | None = setting(None, "CPUs the scene uses (None: this machine's); vistest batch: "
                               "--cpus-per-scene, also the visibility child's threads")
    ffmpeg: str | None = setting(None, "the ffmpeg binary (None: $VISTEST_FFMPEG, else imageio-ffmpeg's)")
