"""Writing a VariantPlan: one decode of the source feeds every variant's encoder (stage 5).

How a scene's videos are written (docs/videos.md, "How the videos are written"):

* **One decode pass feeds many encoders.** ffmpeg decodes the source once to raw yuv420p
  (the codec's own format: no colour conversion, no loss) into a pipe; each frame is
  handed, as is, black, or with rectangles filled, to every variant that uses it: to a
  running libx264 encoder (an ffmpeg process reading raw frames from its stdin) for
  long variants, or appended to a raw *spool* file for short ones (at most
  :data:`SPOOL_MAX_FRAMES` frames: the 16/32/64-frame budget videos), which are encoded
  from their spool after the pass. Variants whose every frame is black (``allblack``)
  need no source: ffmpeg generates their frames. Memory is one frame in Python plus the
  encoders' own buffers: it does not grow with the video's length.
* **Memory budget.** Each libx264 encoder holds its look-ahead frames (hundreds of MB at
  1296x968 with ``preset=medium``), so the number of encoders one pass feeds (``jobs``)
  and their threads are chosen from an estimate (:func:`plan_resources`) to stay within
  ``max_memory_mb``; long variants beyond ``jobs`` go to further passes (one more decode
  each, ~1/10 of an encode). On the demo scene everything fits in one pass.
* **Atomic, verified, resumable.** Every encoder writes a temporary file beside its
  destination; when it has finished, the file is decoded and its frame count checked,
  and only then renamed into place. Each video carries its content key in the container's
  ``comment`` tag (``vistest:<key>``): a rerun skips an existing output whose key matches
  and redoes any other. On an exception, Ctrl-C or SIGTERM (see :func:`signals_as_exit`)
  every encoder is killed and every temporary and spool file removed.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ..progress import progress_bar
from .plan import Rect, Variant, VariantPlan
from .ffmpeg import BlackFrames, FrameReader, RawFile, VideoError, VideoWriter, frame_bytes, probe

DEFAULT_MAX_MEMORY_MB = 500.0
SPOOL_MAX_FRAMES = 256  # variants this short are spooled to disk during the pass, encoded afterwards
SPOOL_PREFIX = ".vistest-spool-"  # OUTDIR/.vistest-spool-{scene_id}.XXXXXXXX/: a pass's spool files (mkdtemp)
KEY_TAG = "comment"     # container tag holding the content key
KEY_PREFIX = "vistest:"

# Memory model (MB) of the process tree, fitted on ffmpeg 9 / libx264 at 320x240 and 1296x968
# (peak RSS, /usr/bin/time and /proc sampling) and rounded up: one ffmpeg process is PROCESS_MB
# plus P MB per "frame equivalent", P = (W + 64)(H + 64) * 1.5 bytes (a padded yuv420p frame).
# libx264 holds X264_FRAMES[preset] + 16 (1 thread) / 32 (2) / +8 per further thread of them;
# the decoder (with its raw output queue) 20 + 6 per thread. The Python side is PYTHON_MB
# (numpy, cv2, one frame buffer; vistest run computes visibility in a child process so that
# the visibility engine's compiled code is not part of it).
PROCESS_MB = 30.0
PYTHON_MB = 80.0
X264_FRAMES = {"ultrafast": 18, "superfast": 40, "veryfast": 56, "faster": 76, "fast": 96, "medium": 116,
               "slow": 142, "slower": 172, "veryslow": 214, "placebo": 234}


# ---------------------------------------------------------------------------------------
# resources
# ---------------------------------------------------------------------------------------
def _frame_mb(size: tuple[int, int]) -> float:
    w, h = size
    return (w + 64) * (h + 64) * 1.5 / 2**20


def encoder_memory_mb(size: tuple[int, int], preset: str, threads: int) -> float:
    """Estimated peak RSS (MB) of one ffmpeg/libx264 encoder of (W, H) frames."""
    t = X264_FRAMES[preset] + 16 * min(threads, 2) + 8 * max(0, threads - 2)
    return PROCESS_MB + _frame_mb(size) * t


def decoder_memory_mb(size: tuple[int, int], threads: int) -> float:
    """Estimated peak RSS (MB) of the ffmpeg decoder of a (W, H) H.264 source."""
    return PROCESS_MB + _frame_mb(size) * (20 + 6 * threads)


@dataclass(frozen=True)
class Resources:
    """How a plan is written: ``jobs`` encoders per decode pass, ``threads`` libx264 threads
    each, ``decoder_threads``; ``estimate_mb``: the modelled peak of the process tree;
    ``fits``: whether that is within the memory budget (False: the smallest setting)."""

    jobs: int
    threads: int
    decoder_threads: int
    estimate_mb: float
    fits: bool


def plan_resources(size: tuple[int, int], preset: str, encoders: int, cpus: int | None = None,
                   max_memory_mb: float = DEFAULT_MAX_MEMORY_MB, jobs: int | None = None,
                   threads: int | None = None) -> Resources:
    """Encoders at once (``jobs``) and threads per encoder, for at most ``encoders`` wanted.

    Most encoders first (every variant of a phase at once; each encoder gets ``cpus // jobs``
    threads, at least 1: more encoders than CPUs share them), then fewer threads, then fewer
    encoders, until the modelled peak (Python + decoder + jobs encoders) is within
    ``max_memory_mb``. ``jobs``/``threads`` given explicitly are kept.
    Deterministic in its arguments, so a rerun encodes with the same threads (libx264's
    output depends on its thread count).
    """
    cpus = cpus or os.cpu_count() or 1
    dthreads = 1 if cpus <= 2 else 2
    base = PYTHON_MB + decoder_memory_mb(size, dthreads)

    def total(j: int, t: int) -> float:
        return base + j * encoder_memory_mb(size, preset, t)

    job_options = [jobs] if jobs else list(range(max(1, encoders), 0, -1))
    for j in job_options:
        t_options = [threads] if threads else list(range(max(1, cpus // j), 0, -1))
        for t in t_options:
            if total(j, t) <= max_memory_mb:
                return Resources(j, t, dthreads, round(total(j, t), 1), True)
    j, t = job_options[-1], (threads or 1)
    return Resources(j, t, dthreads, round(total(j, t), 1), False)


# ---------------------------------------------------------------------------------------
# pixels
# ---------------------------------------------------------------------------------------
def black_frame(size: tuple[int, int]) -> bytes:
    """One black yuv420p frame (limited range: Y = 16, U = V = 128) of even (W, H)."""
    w, h = size
    return bytes([16]) * (w * h) + bytes([128]) * (w * h // 2)


def _planes(a: np.ndarray, size: tuple[int, int]) -> list[tuple[np.ndarray, int, int]]:
    """(plane view, subsampling, neutral value) of Y, U, V in a flat I420 array."""
    w, h = size
    y = a[: w * h].reshape(h, w)
    u = a[w * h: w * h + w * h // 4].reshape(h // 2, w // 2)
    v = a[w * h + w * h // 4:].reshape(h // 2, w // 2)
    return [(y, 1, 16), (u, 2, 128), (v, 2, 128)]


def _fill_plane(plane: np.ndarray, rect: Rect, fill: str, neutral: int) -> None:
    """Fill ``plane[y0:y1, x0:x1]`` in place: ``black`` (the neutral value), ``blur`` (a Gaussian
    of sigma a quarter of the rectangle's longer side, computed with its surroundings) or
    ``inpaint`` (OpenCV Telea from a 16-pixel ring around it; neutral when no ring exists)."""
    import cv2

    x0, y0, x1, y1 = rect
    ph, pw = plane.shape
    if x1 <= x0 or y1 <= y0:
        return
    whole = x0 == 0 and y0 == 0 and x1 == pw and y1 == ph
    if fill == "black" or (fill == "inpaint" and whole):
        plane[y0:y1, x0:x1] = neutral
        return
    if fill == "blur":
        sigma = max(2.0, max(x1 - x0, y1 - y0) / 4.0)
        m = int(3 * sigma)
    else:
        m = 16
    ya, yb, xa, xb = max(0, y0 - m), min(ph, y1 + m), max(0, x0 - m), min(pw, x1 + m)
    region = np.ascontiguousarray(plane[ya:yb, xa:xb])
    if fill == "blur":
        out = cv2.GaussianBlur(region, (0, 0), sigmaX=sigma)
    elif fill == "inpaint":
        mask = np.zeros(region.shape, np.uint8)
        mask[y0 - ya:y1 - ya, x0 - xa:x1 - xa] = 255
        out = cv2.inpaint(region, mask, 3, cv2.INPAINT_TELEA)
    else:
        raise ValueError(f"fill: expected black, blur or inpaint, got {fill!r}")
    plane[y0:y1, x0:x1] = out[y0 - ya:y1 - ya, x0 - xa:x1 - xa]


def fill_rects(frame, size: tuple[int, int], rects: Iterable[Rect], fill: str = "black") -> np.ndarray:
    """A copy of a raw yuv420p frame (bytes-like, even (W, H)) with each even-aligned
    rectangle ``(x0, y0, x1, y1)`` (half-open, pixels) filled; returns the flat uint8 array."""
    a = np.frombuffer(frame, np.uint8).copy()
    planes = _planes(a, size)
    for x0, y0, x1, y1 in rects:
        for plane, sub, neutral in planes:
            _fill_plane(plane, (x0 // sub, y0 // sub, x1 // sub, y1 // sub), fill, neutral)
    return a


# ---------------------------------------------------------------------------------------
# feeding variants from the decode pass
# ---------------------------------------------------------------------------------------
class _Spool:
    """A raw yuv420p file collecting a short variant's frames during the pass."""

    def __init__(self, path: Path, nbytes: int):
        self.path = path
        self.nbytes = nbytes
        self.frames = 0
        self._f = open(path, "wb")

    def write_raw(self, data) -> None:
        self._f.write(data)
        self.frames += 1

    def close(self) -> None:
        if not self._f.closed:
            self._f.close()


class _Feed:
    """What one variant takes from each decoded frame: how many copies (``frames`` may
    repeat a frame), and whether black, masked or as decoded."""

    def __init__(self, v: Variant, num_frames: int, sink, black: bytes):
        frames = np.asarray(v.frames, dtype=np.int64)
        if len(frames) and (frames.min() < 0 or frames.max() >= num_frames):
            raise ValueError(f"{v.path}: source frames outside 0..{num_frames - 1}")
        self.variant = v
        self.count = np.bincount(frames, minlength=num_frames)
        self.is_black = np.zeros(num_frames, bool)
        self.is_black[list(v.black)] = True
        self.masks = dict(v.masks)
        self.sink = sink
        self._black = black

    def feed(self, i: int, buf, size: tuple[int, int]) -> None:
        c = int(self.count[i])
        if not c:
            return
        if self.is_black[i]:
            data = self._black
        elif i in self.masks:
            data = fill_rects(buf, size, self.masks[i], self.variant.fill or "black")
        else:
            data = buf
        for _ in range(c):
            self.sink.write_raw(data)


# ---------------------------------------------------------------------------------------
# keys of existing outputs
# ---------------------------------------------------------------------------------------
def stored_key(path: str | os.PathLike) -> str | None:
    """The content key stored in a video written by vistest, None when absent or unreadable."""
    try:
        tag = probe(path).metadata.get(KEY_TAG, "")
    except (OSError, VideoError):
        return None
    return tag[len(KEY_PREFIX):] if tag.startswith(KEY_PREFIX) else None


def up_to_date(outdir: Path, variants: Sequence[Variant]) -> set[str]:
    """Paths of the variants whose output exists with the expected key (probed in parallel)."""
    def check(v: Variant) -> bool:
        p = outdir / v.path
        return p.is_file() and stored_key(p) == v.key

    with ThreadPoolExecutor(max_workers=8) as pool:
        return {v.path for v, ok in zip(variants, pool.map(check, variants)) if ok}


# ---------------------------------------------------------------------------------------
# signals
# ---------------------------------------------------------------------------------------
@contextlib.contextmanager
def signals_as_exit():
    """Within the block, SIGTERM raises SystemExit(143) in the main thread, so that the
    same cleanup as for Ctrl-C (KeyboardInterrupt) runs: encoders killed, temporary and
    spool files removed. Outside the main thread it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise SystemExit(128 + signum)

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


# ---------------------------------------------------------------------------------------
# the writer
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WriteReport:
    """``written``/``skipped``: variant paths; ``passes``: decodes of the source;
    ``seconds``: wall time; ``resources``: what :func:`plan_resources` chose."""

    written: tuple[str, ...]
    skipped: tuple[str, ...]
    passes: int
    seconds: float
    resources: Resources


def is_long(v: Variant) -> bool:
    """A variant that needs source pixels and is too long to spool: it gets an encoder in a pass."""
    return not v.source_free and v.num_frames > SPOOL_MAX_FRAMES


def plan_passes(todo: Sequence[Variant], jobs: int) -> list[list[Variant]]:
    """Variants per decode pass: the first pass takes every short one (spooled) and up to
    ``jobs`` long ones, each further pass ``jobs`` long ones. Source-free variants take none."""
    long_ = [v for v in todo if is_long(v)]
    short = [v for v in todo if not v.source_free and not is_long(v)]
    if not long_ and not short:
        return []
    passes = [short + long_[:jobs]]
    passes += [long_[k:k + jobs] for k in range(jobs, len(long_), jobs)]
    return passes


class _Writer:
    """Runs the passes of one plan; keeps every live encoder and spool so that any failure
    or interruption can remove them all (:meth:`abort`)."""

    def __init__(self, plan: VariantPlan, outdir: Path, res: Resources, bar):
        self.plan, self.outdir, self.res, self.bar = plan, outdir, res, bar
        self.black = black_frame(plan.size)
        self.live: list[VideoWriter] = []
        self.spool_dir: Path | None = None
        self.written: list[str] = []

    def writer(self, v: Variant, source=None) -> VideoWriter:
        s = self.plan.settings
        return VideoWriter(self.outdir / v.path, v.fps, v.size, crf=s.crf, preset=s.preset, pix_fmt="yuv420p",
                           threads=self.res.threads, metadata={KEY_TAG: KEY_PREFIX + v.key}, source=source)

    def start(self, w: VideoWriter) -> VideoWriter:
        w.path.parent.mkdir(parents=True, exist_ok=True)  # w.path already includes outdir
        self.live.append(w)
        return w.start()

    def finish_all(self, writers: Sequence[VideoWriter]) -> None:
        """Close every input first (the encoders flush in parallel), then wait, verify and
        rename each; verification decodes run in parallel threads."""
        for w in writers:
            w.close_input()
        with ThreadPoolExecutor(max_workers=max(1, len(writers))) as pool:
            for w, _ in zip(writers, pool.map(lambda w: w.finish(), writers)):
                self.live.remove(w)
                self.written.append(str(w.path.relative_to(self.outdir)))

    def decode_pass(self, variants: Sequence[Variant]) -> list[tuple[Variant, _Spool]]:
        """Decode the source once, feeding ``variants``; long ones are encoded and in place at
        the end, short ones are returned with their spools."""
        plan = self.plan
        feeds, spools, writers = [], [], []
        nbytes = frame_bytes(plan.size, "yuv420p")
        for v in variants:
            if is_long(v):
                w = self.start(self.writer(v))
                writers.append(w)
                feeds.append(_Feed(v, plan.num_frames, w, self.black))
            else:
                if self.spool_dir is None:
                    self.spool_dir = Path(tempfile.mkdtemp(prefix=f"{SPOOL_PREFIX}{plan.scene_id}.",
                                                           dir=self.outdir))
                sp = _Spool(self.spool_dir / f"{len(spools)}.yuv", nbytes)
                spools.append((v, sp))
                feeds.append(_Feed(v, plan.num_frames, sp, self.black))
        with FrameReader(plan.source, plan.source_size, "yuv420p", threads=self.res.decoder_threads,
                         pad_even=True) as reader:
            for buf in reader:
                i = reader.frames_read - 1
                if i >= plan.num_frames:
                    raise VideoError(f"{plan.source}: decodes to more than the {plan.num_frames} frames the scene "
                                     f"describes (frames[].index: last + 1); fix the scene or the video")
                for f in feeds:
                    f.feed(i, buf, plan.size)
                self.bar.update(1)
        if reader.frames_read != plan.num_frames:
            raise VideoError(f"{plan.source}: decodes to {reader.frames_read} frames, the scene describes "
                             f"{plan.num_frames} (frames[].index: last + 1); fix the scene or the video")
        for _, sp in spools:
            sp.close()
        self.finish_all(writers)
        return spools

    def encode_sourceless(self, jobs: Sequence[tuple[Variant, RawFile | BlackFrames]]) -> None:
        """Encode spooled and black-only variants, ``res.jobs`` at a time."""
        for k in range(0, len(jobs), self.res.jobs):
            batch = [self.start(self.writer(v, source)) for v, source in jobs[k:k + self.res.jobs]]
            self.finish_all(batch)
            for w in batch:
                self.bar.update(w.frames_written)

    def abort(self) -> None:
        for w in self.live:
            w.abort()
        self.live.clear()
        self.cleanup()

    def cleanup(self) -> None:
        if self.spool_dir is not None:
            shutil.rmtree(self.spool_dir, ignore_errors=True)
            self.spool_dir = None


def write_plan(plan: VariantPlan, outdir: str | os.PathLike, *, max_memory_mb: float = DEFAULT_MAX_MEMORY_MB,
               jobs: int | None = None, threads: int | None = None, cpus: int | None = None,
               progress: bool = True) -> WriteReport:
    """Write every variant of ``plan`` under ``outdir`` (paths ``Variant.path``), skipping
    those already there with their key. ``max_memory_mb``/``jobs``/``threads``/``cpus``: see
    :func:`plan_resources` (computed over the whole plan, so reruns use the same threads).
    Raises VideoError (naming the file) when ffmpeg fails, the source's decoded frame count
    differs from ``plan.num_frames``, or a written file does not decode to its frames.
    """
    t0 = time.perf_counter()
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    variants = sorted(plan.variants, key=lambda v: v.path)
    n_long = sum(map(is_long, variants))
    res = plan_resources(plan.size, plan.settings.preset, max(n_long, len(variants) - n_long), cpus, max_memory_mb,
                         jobs, threads)
    done = up_to_date(outdir, variants)
    todo = [v for v in variants if v.path not in done]
    passes = plan_passes(todo, res.jobs)
    total = len(passes) * plan.num_frames + sum(v.num_frames for v in todo if not is_long(v))
    with progress_bar(total, f"videos {plan.scene_id}", enabled=progress and bool(todo)) as bar:
        w = _Writer(plan, outdir, res, bar)
        try:
            tail: list[tuple[Variant, RawFile | BlackFrames]] = []
            for pv in passes:
                tail += [(v, RawFile(sp.path, sp.frames)) for v, sp in w.decode_pass(pv)]
            tail += [(v, BlackFrames(v.num_frames)) for v in todo if v.source_free]
            w.encode_sourceless(tail)
        except BaseException:
            w.abort()
            raise
        w.cleanup()
    return WriteReport(tuple(sorted(w.written)), tuple(sorted(done)), len(passes), round(time.perf_counter() - t0, 3),
                       res)
