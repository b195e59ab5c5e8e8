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
  (:data:`DEFAULT_INSTANT_TOLERANCE_S` unless the caller gives one).

Everything here is plain arithmetic on frame numbers; nothing reads a video.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

TIME_EPS_S = 1e-6                   # seconds of slack on each window bound (floating-point rounding only)
DEFAULT_INSTANT_TOLERANCE_S = 0.5   # seconds: the nearest sampled frame serves an instant when at most this far


def frame_time(index: int, fps: float) -> float:
    """Seconds from the first frame of decoded frame ``index`` (0-based) at ``fps`` frames/s."""
    return index / fps


def window_range(time_start: float, time_end: float, fps: float) -> tuple[int, int]:
    """(first, last) decoded frame numbers inside the closed window, last < first when none is
    (whatever the video's length: the caller intersects with its frames)."""
    first = max(0, math.ceil((time_start - TIME_EPS_S) * fps))
    last = math.floor((time_end + TIME_EPS_S) * fps)
    return first, last


def frames_in_window(frames: Iterable[int], time_start: float, time_end: float, fps: float) -> list[int]:
    """The distinct frames of ``frames`` inside the window (sorted)."""
    first, last = window_range(time_start, time_end, fps)
    return sorted({int(f) for f in frames if first <= int(f) <= last})


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


def window_count_bin(count: int) -> str:
    """The window report's bin of a count of sampled frames: ``"0"``, ``"1"``, ``"2"`` or ``">=3"``."""
    return str(count) if count < 3 else ">=3"


WINDOW_BINS = ("0", "1", "2", ">=3")
