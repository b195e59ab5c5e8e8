"""The memory model of writing a scene's videos: how many encoders one decode pass feeds and
with how many threads, so that the process tree stays within a memory budget (stage 5).

Units: memory in MB (2**20 bytes) of peak resident set size (RSS); sizes ``(W, H)`` in
pixels; threads and jobs are counts. The model was fitted on ffmpeg 9 / libx264 at 320x240 and
1296x968 (peak RSS, /usr/bin/time and /proc sampling) and rounded up: one ffmpeg process is
:data:`PROCESS_MB` plus P MB per "frame equivalent", P = (W + 64)(H + 64) * 1.5 bytes (a padded
yuv420p frame). libx264 holds ``X264_FRAMES[preset]`` + 16 (1 thread) / 32 (2) / +8 per further
thread of them; the decoder (with its raw output queue) 20 + 6 per thread; a process muxing n-frame
videos from the pool by stream copy one per video (each input's H.264 parser). The Python side is
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


def mux_memory_mb(size: tuple[int, int], videos: int) -> float:
    """Estimated peak RSS (MB) of one ffmpeg process muxing ``videos`` n-frame videos of (W, H)
    frames by stream copy (one ``concatf:`` input each; measured 46-48 MB for 32 videos at
    640x480, 87 MB at 1296x968: about one frame equivalent per input)."""
    return PROCESS_MB + _frame_mb(size) * videos


def plan_mux(size: tuple[int, int], videos: int, most: int, cpus: int, max_memory_mb: float,
             other_mb: float = 0.0) -> tuple[int, int]:
    """(processes at once, videos per process) to mux ``videos`` n-frame videos, at most
    ``most`` per process (its start-up is paid once per batch).

    As many processes at once as ``cpus``, fewer while Python, ``other_mb`` (a process still
    running beside them: the decode checking a stream copy) and theirs exceed ``max_memory_mb``
    (at least one); the batches are evened out so that every round keeps each process busy:
    105 videos, at most 32 a process, 2 CPUs: 4 batches of 27 or 26, two at a time (not 32, 32,
    32 and 9 one after another)."""
    if videos <= 0:
        return 1, 0
    batches = -(-videos // most)
    at_once = max(1, min(cpus, videos))
    while at_once > 1 and PYTHON_MB + other_mb + at_once * mux_memory_mb(size, -(-videos // max(batches, at_once))) \
            > max_memory_mb:
        at_once -= 1
    batches = min(videos, -(-max(batches, at_once) // at_once) * at_once)
    per = -(-videos // batches)
    return min(at_once, -(-videos // per)), per


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
    cpus: int = 1  # the CPUs planned for (the mux processes run this many at once: plan_mux)
    max_memory_mb: float = DEFAULT_MAX_MEMORY_MB  # the budget planned within


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
                return ResourcePlan(j, t, dthreads, round(total(j, t), 1), True, cpus, max_memory_mb)
    j, t = job_options[-1], (threads or 1)
    return ResourcePlan(j, t, dthreads, round(total(j, t), 1), False, cpus, max_memory_mb)


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
