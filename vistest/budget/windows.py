"""Time windows: which sampled frames fall inside a question's window, and which is nearest its instant.

Conventions (docs/questions-format.md "Time windows"):

* decoded frame i (0-based) is at ``i / fps`` seconds from the video's first frame, ``fps`` the
  video's average frame rate (the one the sampler profiles read);
* a window [``time_start``, ``time_end``] is closed at both ends: frame i is inside when
  ``time_start <= i / fps <= time_end``, compared with :data:`TIME_EPS_S` of slack so that a bound
  written as a decimal (``2.0`` s at 29.97 frames/s) does not drop the frame it names; a
  zero-length window (``time_start == time_end``) holds the frame at that time, if any;
* an instant ``time`` is served by the sampled frame nearest it (the earlier one on a tie); its
  distance ``|i / fps - time|`` in seconds is compared with a tolerance
  (:data:`DEFAULT_INSTANT_TOLERANCE_S` unless the caller gives one);
* a window's two *ends* (a quantity comparing the camera at its start and its end) are served by the
  first and the last frame *inside* the window, each within the tolerance of its end (the tolerance
  applied inward: :func:`window_ends`).

Everything here is plain arithmetic on frame numbers; nothing reads a video. The window report
(:func:`window_report`, ``vistest windows``) counts, per task and sampling configuration, the
questions whose window receives 0, 1, 2 or >= 3 sampled frames.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..budgets import ALL, MAX_BUDGET, BudgetValue, budget_label
from ..errors import InputError
from .sampling import select_frames

TIME_EPS_S = 1e-6                   # seconds of slack on each window bound (floating-point rounding only)
DEFAULT_INSTANT_TOLERANCE_S = 0.5   # seconds: the nearest sampled frame serves an instant when at most this far


def frame_time(index: int, fps: float) -> float:
    """Seconds from the first frame of decoded frame ``index`` (0-based) at ``fps`` frames/s."""
    return index / fps


def window_range(time_start: float, time_end: float, fps: float) -> tuple[int, int]:
    """(first, last) decoded frame numbers inside the closed window, last < first when none is
    (whatever the video's length: the caller intersects with its frames). Both are capped at
    :data:`vistest.budgets.MAX_BUDGET`, past the last frame any video may have, so that no
    finite time or rate overflows."""
    first = math.ceil(min(max(0.0, (time_start - TIME_EPS_S) * fps), MAX_BUDGET))
    last = math.floor(min((time_end + TIME_EPS_S) * fps, MAX_BUDGET))
    return first, last


def frames_in_window(frames: Iterable[int], time_start: float, time_end: float, fps: float) -> list[int]:
    """The distinct frames of ``frames`` inside the window (sorted)."""
    first, last = window_range(time_start, time_end, fps)
    return sorted({int(f) for f in frames if first <= int(f) <= last})


def frames_in_span(frames: Iterable[int], window: tuple[float, float] | None, instant: float | None, fps: float,
                   tolerance_s: float = DEFAULT_INSTANT_TOLERANCE_S) -> list[int] | None:
    """The distinct frames of ``frames`` (sorted) a timed question asks about, its *time span*: with a
    window, those inside it (:func:`frames_in_window`); with an instant, those at most ``tolerance_s``
    seconds from it (those :func:`nearest_frame` accepts); with both, the union (the instant lies in the
    window; the tolerance may reach past its ends). None for a question with neither. The one rule the
    budget stage (a count over a window) and the dummies (vistest.videos.evidence.time_span) share."""
    if window is None and instant is None:
        return None
    frames = {int(f) for f in frames}
    span: set[int] = set()
    if window is not None:
        span.update(frames_in_window(frames, window[0], window[1], fps))
    if instant is not None:
        span.update(f for f in frames if abs(frame_time(f, fps) - instant) <= tolerance_s + TIME_EPS_S)
    return sorted(span)


@dataclass(frozen=True)
class InstantMatch:
    """The sampled frame nearest an instant: ``frame`` (None when no frame was sampled),
    ``offset_s`` (seconds, >= 0), ``within`` (``offset_s <= tolerance_s``)."""

    frame: int | None
    offset_s: float | None
    tolerance_s: float

    @property
    def within(self) -> bool:
        return self.offset_s is not None and self.offset_s <= self.tolerance_s + TIME_EPS_S


def nearest_frame(frames: Iterable[int], time: float, fps: float,
                  tolerance_s: float = DEFAULT_INSTANT_TOLERANCE_S) -> InstantMatch:
    """The sampled frame nearest ``time`` (seconds), the earlier on a tie."""
    best: tuple[float, int] | None = None
    for f in sorted({int(x) for x in frames}):
        d = abs(frame_time(f, fps) - time)
        if best is None or d < best[0]:
            best = (d, f)
    if best is None:
        return InstantMatch(None, None, tolerance_s)
    return InstantMatch(best[1], best[0], tolerance_s)


@dataclass(frozen=True)
class WindowEnds:
    """The frames that stand for a window's two ends (:func:`window_ends`): ``start`` and ``end``
    (None where no frame serves that end), ``inside`` (every given frame inside the window, sorted)
    and ``why`` (in words, empty when both ends are served by two distinct frames)."""

    start: int | None
    end: int | None
    inside: tuple[int, ...]
    why: str

    @property
    def served(self) -> bool:
        return not self.why


def window_ends(frames: Iterable[int], time_start: float, time_end: float, fps: float,
                tolerance_s: float = DEFAULT_INSTANT_TOLERANCE_S) -> WindowEnds:
    """The frames of ``frames`` that stand for the two ends of the window [``time_start``, ``time_end``]
    (seconds), measured *inside* it: the first frame inside the window, which must lie at most
    ``tolerance_s`` after ``time_start``, and the last, at most ``tolerance_s`` before ``time_end``
    (the tolerance applied inward: a frame outside the window never stands for an end, so a quantity
    between the ends is measured over the window's own time). Two distinct frames, else ``why``
    says which end is not served, naming the nearest frame inside."""
    inside = tuple(frames_in_window(frames, time_start, time_end, fps))
    if not inside:
        return WindowEnds(None, None, inside, f"no frame inside the window [{time_start:g}, {time_end:g}] s")
    first, last = inside[0], inside[-1]
    start = first if frame_time(first, fps) - time_start <= tolerance_s + TIME_EPS_S else None
    end = last if time_end - frame_time(last, fps) <= tolerance_s + TIME_EPS_S else None
    why = []
    if start is None:
        why.append(f"no frame inside the window within {tolerance_s:g} s after its start {time_start:g} s (the "
                   f"first inside is frame {first} at {frame_time(first, fps):.3g} s)")
    if end is None:
        why.append(f"no frame inside the window within {tolerance_s:g} s before its end {time_end:g} s (the last "
                   f"inside is frame {last} at {frame_time(last, fps):.3g} s)")
    if not why and start == end:
        why.append(f"the same frame {start} serves both ends of the window [{time_start:g}, {time_end:g}] s")
    return WindowEnds(start, end, inside, "; ".join(why))


def window_count_bin(count: int) -> str:
    """The window report's bin of a count of sampled frames: ``"0"``, ``"1"``, ``"2"`` or ``">=3"``."""
    return str(count) if count < 3 else ">=3"


WINDOW_BINS = ("0", "1", "2", ">=3")


# ---------------------------------------------------------------------------------------
# the window report (``vistest windows``): how many sampled frames each question's window receives
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VideoTiming:
    """A video's decoded frame count and average frame rate (frames/s)."""

    num_frames: int
    fps: float


@dataclass(frozen=True)
class SamplingConfig:
    """One way of sampling a video in the report: an evaluator configuration over the full video
    (what its ``all`` ground truth assumes) or a sampler profile at a budget. ``take(N, fps)``
    returns the frames (raises InputError where the client fails on the video)."""

    name: str
    what: str
    take: Callable[[int, float], Sequence[int]]


def evaluator_config(evaluator: Any) -> SamplingConfig:
    """An evaluator configuration (vistest.budget.evaluators.Evaluator) over the full video."""
    return SamplingConfig(evaluator.name, f"evaluator {evaluator.name}: {evaluator.source}",
                          lambda n, fps: evaluator.takes(n, fps, ALL).tolist())


def profile_config(profile: str, budget: BudgetValue, options: Mapping[str, Any] | None = None) -> SamplingConfig:
    """A sampler profile (vistest.budget.sampling) at one budget."""
    opts = dict(options or {})
    return SamplingConfig(f"{profile}@{budget_label(budget)}", f"profile {profile}, budget {budget_label(budget)}",
                          lambda n, fps: select_frames(profile, n, budget, fps=fps, **opts).tolist())


def question_task(q: Any) -> str:
    """The task a question is reported under: its ``task`` field (STI-Bench), else its type."""
    task = q.record.get("task")
    return task if isinstance(task, str) and task else q.question_type


def timed(q: Any) -> bool:
    """Does the question have a window or an instant?"""
    return q.window is not None or q.instant is not None


def window_counts(questions: Sequence[Any], timings: Mapping[str, VideoTiming], configs: Sequence[SamplingConfig],
                  tolerance_s: float = DEFAULT_INSTANT_TOLERANCE_S) -> list[dict]:
    """One record per (question with a window or an instant, configuration): ``id``, ``task``,
    ``config``, ``frames_in_window``: the distinct sampled frames inside the window; for a
    question with an instant (``time``), 1 when the nearest sampled frame is within
    ``tolerance_s`` of it, else 0 (the rule of vistest.budget.truth); None when the client fails
    on the video (``error`` says why). ``timings``: by the question's ``scene_id``."""
    out = []
    cache: dict[tuple[str, str], tuple[list[int] | None, str | None]] = {}
    for q in questions:
        if not timed(q):
            continue
        t = timings[q.scene_id]
        for c in configs:
            key = (c.name, q.scene_id)
            if key not in cache:
                try:
                    cache[key] = (list(c.take(t.num_frames, t.fps)), None)
                except InputError as e:
                    cache[key] = (None, str(e))
            frames, err = cache[key]
            if frames is None:
                count = None
            elif q.instant is not None:
                count = int(nearest_frame(frames, q.instant, t.fps, tolerance_s).within)
            else:
                count = len(frames_in_window(frames, *q.window, t.fps))
            rec = {"id": q.id, "task": question_task(q), "config": c.name, "frames_in_window": count}
            if err is not None:
                rec["error"] = err
            out.append(rec)
    return out


def window_report(questions: Sequence[Any], timings: Mapping[str, VideoTiming], configs: Sequence[SamplingConfig],
                  tolerance_s: float = DEFAULT_INSTANT_TOLERANCE_S) -> dict:
    """Per configuration and task (and ``(all tasks)``): questions with a window or an instant
    (``n``), how many of them receive 0, 1, 2, >= 3 sampled frames (``counts``;
    :func:`window_counts`) and the shares (``shares``, of ``n`` less ``errors``: videos the
    client fails on). Questions with neither are counted apart (``without_window``).
    ``timings`` must cover every such question's ``scene_id`` (InputError naming the missing
    ones)."""
    missing = sorted({q.scene_id for q in questions if timed(q) and q.scene_id not in timings})
    if missing:
        raise InputError(f"videos: no frame count and fps for {len(missing)} video(s) the questions name: "
                         f"{', '.join(missing[:8])}{' ...' if len(missing) > 8 else ''} (give --scene, "
                         f"--video-info or --videos)")
    recs = window_counts(questions, timings, configs, tolerance_s)
    tasks = sorted({r["task"] for r in recs})
    table: dict[str, dict[str, dict]] = {}
    for c in configs:
        rows = {}
        for task in [*tasks, "(all tasks)"]:
            sel = [r for r in recs if r["config"] == c.name and (task == "(all tasks)" or r["task"] == task)]
            counted = [r["frames_in_window"] for r in sel if r["frames_in_window"] is not None]
            counts = {b: 0 for b in WINDOW_BINS}
            for k in counted:
                counts[window_count_bin(k)] += 1
            rows[task] = {"n": len(sel), "errors": len(sel) - len(counted), "counts": counts,
                          "shares": {b: (counts[b] / len(counted) if counted else None) for b in WINDOW_BINS}}
        table[c.name] = rows
    return {"questions": len(questions), "with_window": sum(timed(q) for q in questions),
            "without_window": sum(not timed(q) for q in questions), "instant_tolerance_s": tolerance_s,
            "configs": [{"name": c.name, "what": c.what} for c in configs], "per_config": table}


def report_markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown: one table per configuration, a row per task, the share of
    questions whose window receives 0, 1, 2, >= 3 sampled frames (percent of those counted)."""
    lines = ["# Sampled frames inside each question's time window", "",
             f"{report['with_window']} of {report['questions']} questions have a window or an instant "
             f"(frame i at i / fps s; the window closed at both ends; an instant counts 1 when a sampled frame is "
             f"within {report['instant_tolerance_s']:g} s of it, else 0).", ""]
    for c in report["configs"]:
        lines += [f"## {c['name']}", "", c["what"], "",
                  "| task | n | 0 | 1 | 2 | >=3 | client fails |", "|---|---:|---:|---:|---:|---:|---:|"]
        for task, row in report["per_config"][c["name"]].items():
            cells = ["-" if row["shares"][b] is None else f"{100 * row['shares'][b]:.1f}%" for b in WINDOW_BINS]
            lines.append(f"| {task} | {row['n']} | " + " | ".join(cells) + f" | {row['errors']} |")
        lines.append("")
    return "\n".join(lines)
