"""The memory model of writing a scene's videos: how many encoders one decode pass feeds and
with how many threads, so that the process tree stays within a memory budget (stage 5).

Units: memory in MB (2**20 bytes) of peak resident set size (RSS); sizes ``(W, H)`` in
pixels; threads and jobs are counts. The model was fitted on ffmpeg 9 / libx264 at 320x240 and
1296x968 (peak RSS, /usr/bin/time and /proc sampling) and rounded up: one ffmpeg process is
:data:`PROCESS_MB` plus P MB per "frame equivalent", P = (W + 64)(H + 64) * 1.5 bytes (a padded
yuv420p frame). libx264 holds ``X264_FRAMES[preset]`` + 16 (1 thread) / 32 (2) / +8 per further
thread of them; the decoder (with its raw output queue) 20 + 6 per thread. The Python side is
:data:`PYTHON_MB` (numpy, cv2, one frame buffer; vistest run computes visibility in a child
process so that the visibility engine's compiled code is not part of it).

Every function is deterministic in its arguments, so a rerun encodes with the same threads
(libx264's output depends on its thread count).
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from .config import DEFAULT_MAX_MEMORY_MB

PROCESS_MB = 30.0
PYTHON_MB = 80.0
X264_FRAMES = {"ultrafast": 18, "superfast": 40, "veryfast": 56, "faster": 76, "fast": 96, "medium": 116,
               "slow": 142, "slower": 172, "veryslow": 214, "placebo": 234}


def _frame_mb(size: tuple[int, int]) -> float:
    """MB of one padded yuv420p frame of (W, H) pixels: the model's frame equivalent."""
    w, h = size
    return (w + 64) * (h + 64) * 1.5 / 2**20


def encoder_memory_mb(size: tuple[int, int], preset: str, threads: int) -> float:
    """Estimated peak RSS (MB) of one ffmpeg/libx264 encoder of (W, H) frames."""
    t = X264_FRAMES[preset] + 16 * min(threads, 2) + 8 * max(0, threads - 2)
    return PROCESS_MB + _frame_mb(size) * t


def intra_encoder_memory_mb(size: tuple[int, int], threads: int) -> float:
    """Estimated peak RSS (MB) of the all-intra pool encoder (libx264 ``-g 1`` holds no
    look-ahead: measured 95 / 99 MB at 1296x968 with 1 / 2 threads, any preset)."""
    return PROCESS_MB + _frame_mb(size) * (36 + 4 * threads)


def decoder_memory_mb(size: tuple[int, int], threads: int) -> float:
    """Estimated peak RSS (MB) of the ffmpeg decoder of a (W, H) H.264 source."""
    return PROCESS_MB + _frame_mb(size) * (20 + 6 * threads)


def check_decoder_memory_mb(size: tuple[int, int], threads: int) -> float:
    """Estimated peak RSS (MB) of the decoder hashing all_frame's stream copy (no raw output
    queue: measured 46 MB at 1296x968, one thread)."""
    return PROCESS_MB + _frame_mb(size) * (8 + 6 * threads)


@dataclass(frozen=True)
class ResourcePlan:
    """How a plan is written (computed by :func:`plan_resources`): ``jobs`` encoders per decode
    pass, ``threads`` libx264 threads each, ``decoder_threads``; ``estimate_mb``: the modelled
    peak (MB) of the process tree; ``fits``: whether that is within the memory budget (False:
    the smallest setting)."""

    jobs: int
    threads: int
    decoder_threads: int
    estimate_mb: float
    fits: bool


def plan_resources(size: tuple[int, int], preset: str, encoders: int, cpus: int | None = None,
                   max_memory_mb: float = DEFAULT_MAX_MEMORY_MB, jobs: int | None = None,
                   threads: int | None = None, pool: bool = False) -> ResourcePlan:
    """Encoders at once (``jobs``) and threads per encoder, for ``encoders`` long-GOP
    encoders wanted plus, with ``pool``, the all-intra pool encoder (one of the first pass's jobs).

    Most encoders first (every variant of a phase at once; each encoder gets ``cpus // jobs``
    threads, at least 1: more encoders than CPUs share them), then fewer threads, then fewer
    encoders, until the modelled peak (Python + decoder + jobs encoders) is within
    ``max_memory_mb``. ``jobs``/``threads`` given explicitly are kept.
    """
    cpus = cpus or os.cpu_count() or 1
    dthreads = 1 if cpus <= 2 else 2
    base = PYTHON_MB + decoder_memory_mb(size, dthreads)

    def total(j: int, t: int) -> float:
        per = encoder_memory_mb(size, preset, t) if encoders else intra_encoder_memory_mb(size, t)
        if pool and encoders:
            per = max(per, intra_encoder_memory_mb(size, t))
        return base + j * per

    job_options = [jobs] if jobs else list(range(max(1, encoders + pool), 0, -1))
    for j in job_options:
        t_options = [threads] if threads else list(range(max(1, cpus // j), 0, -1))
        for t in t_options:
            if total(j, t) <= max_memory_mb:
                return ResourcePlan(j, t, dthreads, round(total(j, t), 1), True)
    j, t = job_options[-1], (threads or 1)
    return ResourcePlan(j, t, dthreads, round(total(j, t), 1), False)


def with_stream_check(res: ResourcePlan, size: tuple[int, int], max_memory_mb: float,
                      remux: bool) -> tuple[ResourcePlan, bool]:
    """Whether the decode checking all_frame's stream copy (:func:`check_decoder_memory_mb`)
    fits beside the first pass within ``max_memory_mb`` (else it runs after that pass), and
    ``res`` with that decoder added to its estimate when it does and the plan has a stream
    copy (``remux``)."""
    check_mb = check_decoder_memory_mb(size, res.decoder_threads)
    alongside = res.estimate_mb + check_mb <= max_memory_mb
    if alongside and remux:
        res = dataclasses.replace(res, estimate_mb=round(res.estimate_mb + check_mb, 1))
    return res, alongside
