"""What each sampler takes: the frames of a written video that every known sampler profile, and
every evaluator configuration of the run, takes for each budget the video serves.

The one place the manifest's ``profiles`` (:func:`video_takes`: per numeric budget, every
profile with its default options, the run's own with its options) and ``evaluators``
(:func:`evaluator_takes`) of every video come from; a profile that drops or repeats a frame is a
warning (:func:`take_warnings`), and on ``all_frame`` an evaluator that does not take every frame
is one naming its ``all`` ground truth, and on an n-frame budget video one naming its n-frame
ground truth (:func:`evaluator_warnings`: STI-Bench's client takes 30 of a 64-frame video).
"""
from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..budget.evaluators import Evaluator, EvaluatorTake, evaluator_take
from ..budget.sampling import PROFILES, select_frames
from ..budgets import ALL, BudgetValue, budget_label
from ..errors import InputError
from ..layout import evaluator_file


@dataclass(frozen=True)
class ProfileTake:
    """The frames of a written video that one sampler profile takes for one budget.

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


Takes = tuple[tuple[BudgetValue, tuple[ProfileTake, ...]], ...]  # per numeric budget served, every profile's take
EvaluatorTakes = tuple[tuple[BudgetValue, tuple[EvaluatorTake, ...]], ...]  # per budget served, every evaluator's take


def profile_takes(num_frames: int, budget: BudgetValue, fps: float, profile: str | None = None,
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
        except InputError as e:  # this profile cannot sample that video (e.g. too few frames)
            out.append(ProfileTake(name, num_frames, None, str(e)))
    return tuple(out)


def video_takes(num_frames: int, fps: float, budgets: Sequence[BudgetValue], profile: str | None = None,
                options: Mapping[str, Any] | None = None) -> Takes:
    """Per numeric budget a video serves, every profile's take of it when asked for that budget
    (:func:`profile_takes`): the one place the manifest's ``profiles`` of every video come from.
    The ``all`` budget asks a sampler profile for nothing (what a client takes of a full video
    depends on its settings): :func:`evaluator_takes` states it. Kept (:data:`MEMO_SIZE`): a scene's
    ~100 budget and dummy videos have a few frame counts, and the takes are a function of the arguments."""
    args = (num_frames, fps, tuple(budgets), profile, tuple(sorted((options or {}).items())))
    return _memo(_video_takes, *args)


def _video_takes(num_frames, fps, budgets, profile, options) -> Takes:
    return tuple((b, profile_takes(num_frames, b, fps, profile, dict(options))) for b in budgets if b != ALL)


def evaluator_takes(num_frames: int, fps: float, budgets: Sequence[BudgetValue],
                    evaluators: Sequence[Evaluator]) -> EvaluatorTakes:
    """Per budget a video serves, what each evaluator configuration takes of it (its profile's
    function of the video's frame count and rate, with its options and frame request): the one
    place the manifest's ``evaluators`` of every video come from. Kept as :func:`video_takes` is."""
    return _memo(_evaluator_takes, num_frames, fps, tuple(budgets), tuple(evaluators))


def _evaluator_takes(num_frames, fps, budgets, evaluators) -> EvaluatorTakes:
    return tuple((b, tuple(evaluator_take(e, num_frames, fps, b) for e in evaluators)) for b in budgets)


MEMO_SIZE = 512  # takes kept per function (frozen results; a scene needs a few dozen)
_cached = {f: functools.lru_cache(maxsize=MEMO_SIZE)(f) for f in (_video_takes, _evaluator_takes)}


def _memo(fn, *args):
    """``fn(*args)``, from :data:`_cached` when the arguments hash (an option value that does not, e.g.
    a list: computed each time)."""
    try:
        hash(args)
    except TypeError:
        return fn(*args)
    return _cached[fn](*args)


def evaluator_warnings(scene_id: str, takes: EvaluatorTakes) -> tuple[str, ...]:
    """One warning per evaluator that does not take every frame of the video once (all_frame, or
    an n-frame budget video: STI-Bench's client takes 30 of 64), naming the ground truth of that
    budget computed over the frames it takes (vistest.budget.truth.evaluator_truth; vistest.pipeline
    writes it); one per evaluator that fails on the video."""
    out = []
    for b, ts in takes:
        label = "all" if b == ALL else budget_label(b)
        for t in ts:
            if t.error is not None:
                out.append(f"evaluator {t.evaluator.name} fails on this {t.num_frames}-frame video: {t.error}")
            elif not t.every_frame:
                n, distinct = len(t.frames), len(set(t.frames))
                what = (f"takes {n} frames of this {t.num_frames}-frame video, repeating {n - distinct} "
                        f"({distinct} distinct)" if n > distinct else
                        f"takes {n} of this video's {t.num_frames} frames")
                out.append(f"evaluator {t.evaluator.name} {what} (its frame request: {t.request}): a model run "
                           f"through it sees only those, so its {label}-frame ground truth is computed over them: "
                           f"{evaluator_file(scene_id, t.evaluator.name, b)}")
    return tuple(out)


def take_warnings(takes: Takes) -> tuple[str, ...]:
    """Warnings of every profile that does not take every frame once (prefixed by the budget
    when a video serves several)."""
    out = []
    for b, ts in takes:
        for t in ts:
            w = t.warning()
            if w:
                out.append(w if len(takes) == 1 else f"budget {budget_label(b)}: {w}")
    return tuple(out)
