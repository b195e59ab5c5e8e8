"""Writing a VariantPlan: one decode of the source feeds every encoder (stage 5).

How a scene's videos are written (docs/videos.md, "How the videos are written"):

* **n-frame videos from a frame pool.** Budget videos and budget dummies (n frames at the
  budget rate) are all-intra H.264: every distinct frame they hold (a source frame as
  decoded, with rectangles filled, or black) is encoded once, as an IDR frame of the
  scene's *pool* (vistest.videos.pool), and each video is assembled by stream copy of its
  frames' access units (``ffmpeg -f h264 -i concatf:LIST -c copy``, many videos per
  process). The cost is the distinct frames, not the sum of the videos' lengths.
* **One decode pass feeds every encoder.** ffmpeg decodes the source once to raw yuv420p
  (the codec's own format: no colour conversion, no loss) into a pipe; each frame goes to
  the pool encoder (as decoded and in each masked version the pool needs) and, as is,
  black, or masked, to every full-length encoder (long-GOP libx264: full-length dummies, and
  all_frame when it cannot be a stream copy). Python holds one frame (plus one masked copy
  at a time): memory does not grow with the video's length. Variants whose every frame is
  black need no source. The same decode also hashes every frame when all_frame is a stream
  copy (below).
* **all_frame by stream copy.** When the source is H.264 in MP4/MOV, all_frame is a stream
  copy of it (no re-encoding), kept only when its decode is frame-exact: as many frames as
  the source decodes to, every frame's hash equal to the source decode's, and constant
  frame timing at the scene's rate (and every coded sample of the source decoded, so no edit
  list hides frames). Otherwise it is encoded, and the manifest and the summary say why.
* **Memory budget.** Each libx264 encoder holds its look-ahead frames (hundreds of MB at
  1296x968 with ``preset=medium``), so the number of encoders one pass feeds (``jobs``)
  and their threads are chosen from an estimate (:func:`plan_resources`) to stay within
  ``max_memory_mb``; full-length variants beyond ``jobs`` go to further passes (one more
  decode each).
* **Atomic, verified, resumable.** Every output is written to a temporary file beside its
  destination and renamed into place only once verified: long-GOP encodes by decoding and
  counting their frames, stream-copied n-frame videos by their sample table (every sample
  one access unit the pool encoder produced), all_frame by its frame hashes. Each video
  carries its content key in the container's ``comment`` tag (``vistest:<key>``): a rerun
  skips an existing output whose key matches and redoes any other (the whole pool is encoded
  again, so a rerun writes the bytes an uninterrupted run writes). On an exception, Ctrl-C or
  SIGTERM (see :func:`signals_as_exit`) every ffmpeg process is killed and every temporary
  and work file removed.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from ..atomic import check_file, ensure_folder, process_tag, replace_output, temp_path_for
from ..errors import OutputError, is_environment_error, output_error
from ..layout import SPOOL_PREFIX
from ..progress import progress_bar
from .config import DEFAULT_MAX_MEMORY_MB, ResourceConfig
from .evidence import Rect
from .plan import Variant, VariantPlan
from .recipes import STREAM_COPY, X264, X264_INTRA
from .pool import BLACK, PoolPlan, concat_list, file_access_units
from .ffmpeg import (BlackFrames, FrameHashes, FrameReader, VideoError, VideoWriter, exit_text, ffmpeg_exe,
                     hash_command, mp4_intact, mp4_sample_count, mux_h264_command, parse_frame_hashes, probe,
                     remux_command, stderr_tail)

MUX_BATCH = 32         # n-frame videos muxed by one ffmpeg process
SCAN_CHUNK = 1 << 22   # bytes of the pool read at a time when finding its access units
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
                   threads: int | None = None, pool: bool = False) -> Resources:
    """Encoders at once (``jobs``) and threads per encoder, for ``encoders`` long-GOP
    encoders wanted plus, with ``pool``, the all-intra pool encoder (one of the first pass's jobs).

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
        per = encoder_memory_mb(size, preset, t) if encoders else intra_encoder_memory_mb(size, t)
        if pool and encoders:
            per = max(per, intra_encoder_memory_mb(size, t))
        return base + j * per

    job_options = [jobs] if jobs else list(range(max(1, encoders + pool), 0, -1))
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
# feeding encoders from the decode pass
# ---------------------------------------------------------------------------------------
class _Feed:
    """What one full-length variant takes from each decoded frame: how many copies
    (``frames`` may repeat a frame), and whether black, masked or as decoded."""

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


class _PoolFeed:
    """Feeds the pool encoder: for each decoded frame, its pool entries in pool order (the
    frame as decoded, then each masked version)."""

    def __init__(self, pool: PoolPlan, sink):
        self.by_frame = pool.by_frame()
        self.sink = sink

    def feed(self, i: int, buf, size: tuple[int, int]) -> None:
        for e in self.by_frame.get(i, ()):
            self.sink.write_raw(buf if e[0] == "frame" else fill_rects(buf, size, e[2], e[3]))


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


def encoding_of(v: Variant) -> str:
    """How ``v`` is written when encoded: all-intra from the pool, or long-GOP."""
    return X264_INTRA if v.intra else X264


def _key_encoding(v: Variant, key: str | None) -> str | None:
    """The encoding of an output of ``v`` holding ``key`` (its own key, or all_frame's stream-copy
    key), None for any other key."""
    if key is not None and key == v.key:
        return encoding_of(v)
    return STREAM_COPY if v.remux_key is not None and key == v.remux_key else None


def up_to_date(outdir: Path, variants: Sequence[Variant], records: Mapping[str, Mapping] | None = None,
               verify: bool = False) -> dict[str, str]:
    """{path: encoding} of the variants whose output is there with an expected key (its own, or
    all_frame's stream-copy key) and intact, checked in parallel.

    ``records``: the scene's record of its files (vistest.videos.manifest: ``bytes``,
    ``sha256``, ``mtime_ns``, ``key`` per path). A recorded output is up to date when its
    recorded key is expected and the file matches its record (vistest.atomic.check_file: the
    size, then the sha256 unless the modification time is the recorded one; ``verify``: always
    the sha256); a file that no longer matches is redone. An output without a record (written
    by another run folder's run and linked here, or by a run killed while renaming its outputs)
    is trusted when its ``comment`` tag holds an expected key, its MP4 boxes are whole and its
    sample table holds its frames."""
    records = records or {}

    def check(v: Variant) -> str | None:
        p = outdir / v.path
        rec = records.get(v.path)
        if rec is not None:
            enc = _key_encoding(v, rec.get("key"))
            return enc if enc is not None and check_file(p, rec, verify) is None else None
        if not p.is_file():
            return None
        enc = _key_encoding(v, stored_key(p))
        if enc is None or not mp4_intact(p) or mp4_sample_count(p) != v.num_frames:
            return None
        return enc

    with ThreadPoolExecutor(max_workers=8) as pool:
        return {v.path: enc for v, enc in zip(variants, pool.map(check, variants)) if enc}


# ---------------------------------------------------------------------------------------
# the work folder (spool)
# ---------------------------------------------------------------------------------------
SPOOL_ENV = "VISTEST_SPOOL"
# disk the frame pool may take per pixel of a pool frame, for the space check before it starts:
# all-intra libx264 at crf 18 measured 0.17 (the demo) and 0.54 (testsrc2) bits/pixel; 3 leaves room for
# noisy sources, and every 6 crf below 18 doubles it (x264's rate), up to raw yuv420p (12).
SPOOL_BITS_PER_PIXEL = 3.0
SPOOL_MARGIN_BYTES = 16 << 20


def spool_folder(outdir: str | os.PathLike, spool_dir: str | os.PathLike | None = None) -> Path:
    """Where a run's work folder goes: ``spool_dir``, else ``$VISTEST_SPOOL``, else ``outdir``."""
    return Path(spool_dir or os.environ.get(SPOOL_ENV) or outdir)


def spool_need_bytes(pool: PoolPlan | None, size: tuple[int, int], crf: int, num_frames: int) -> int:
    """Bytes the work folder may need: the frame pool (its entries at :data:`SPOOL_BITS_PER_PIXEL`,
    scaled by ``crf``), the source's frame hashes (about 100 bytes per frame), and a margin."""
    bpp = min(12.0, SPOOL_BITS_PER_PIXEL * 2 ** (max(0, 18 - crf) / 6))
    frames = len(pool.entries) if pool is not None else 0
    return int(frames * size[0] * size[1] * bpp / 8) + 100 * num_frames + SPOOL_MARGIN_BYTES


def check_spool_space(folder: Path, need: int, scene_id: str) -> None:
    """OutputError naming ``folder`` and the space needed when its file system has less free."""
    folder = ensure_folder(folder, "work folder")
    free = shutil.disk_usage(folder).free
    if free < need:
        raise OutputError(f"{folder}: the work folder of scene {scene_id} (its frame pool) needs about "
                          f"{need / 2**20:.0f} MB, {free / 2**20:.0f} MB are free there; free some space, or put the "
                          f"work folder on another disk with --spool-dir DIR (or {SPOOL_ENV}=DIR)")


# ---------------------------------------------------------------------------------------
# signals
# ---------------------------------------------------------------------------------------
@contextlib.contextmanager
def signals_as_exit():
    """Within the block, SIGTERM raises SystemExit(143) in the main thread, so that the
    same cleanup as for Ctrl-C (KeyboardInterrupt) runs: encoders killed, temporary and
    work files removed. Outside the main thread it does nothing."""
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
    """``written``/``skipped``: variant paths; ``passes``: decodes of the source (feeding
    encoders or hashing); ``seconds``: wall time; ``resources``: what :func:`plan_resources`
    chose; ``encodings``: {path: (encoding, note)} of every variant, written or skipped
    (``stream-copy``, ``x264``, ``x264-intra``; ``note``: why all_frame is not a stream copy);
    ``frames_encoded``: frames given to libx264 (pool entries, long-GOP and black frames);
    ``staged``: (temporary file, variant path) of every written output not yet renamed into
    place (``write_plan(..., commit=False)``: :func:`commit_videos` or :func:`discard_videos`)."""

    written: tuple[str, ...]
    skipped: tuple[str, ...]
    passes: int
    seconds: float
    resources: Resources
    encodings: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)
    frames_encoded: int = 0
    staged: tuple[tuple[str, str], ...] = ()


def commit_videos(report: WriteReport, outdir: str | os.PathLike) -> None:
    """Rename every staged output of ``report`` onto its path under ``outdir`` (renames in one
    folder tree: no copy, milliseconds for hundreds of videos)."""
    for tmp, path in report.staged:
        replace_output(tmp, Path(outdir) / path)


def discard_videos(report: WriteReport) -> None:
    """Remove the staged outputs of ``report`` that were not renamed into place."""
    for tmp, _ in report.staged:
        Path(tmp).unlink(missing_ok=True)


def is_long(v: Variant) -> bool:
    """A full-length variant that needs source pixels: it gets an encoder in a decode pass
    (all_frame only when it cannot be, or failed to be, a stream copy)."""
    return not v.intra and not v.source_free


def plan_passes(long_: Sequence[Variant], jobs: int, pool: bool = False) -> list[list[Variant]]:
    """Full-length variants per decode pass, ``jobs`` encoders each; with ``pool`` the pool
    encoder takes one of the first pass's places (with ``jobs`` 1 it has the first pass alone)."""
    first = jobs - 1 if pool else jobs
    passes = [list(long_[:first])] if (long_ or pool) else []
    passes += [list(long_[k:k + jobs]) for k in range(first, len(long_), jobs)]
    return passes


def remux_check(src: FrameHashes, copy: FrameHashes, fps: float, samples: int | None) -> str | None:
    """Why a stream copy is not frame-exact, or None when it is: ``src``/``copy``: the
    decodes' frame hashes; ``fps``: the scene's rate; ``samples``: coded frames in the
    source's sample table (None: unknown)."""
    n = len(src)
    if samples is not None and samples != n:
        return f"the source holds {samples} coded frames but decodes to {n} (an edit list or dropped frames)"
    if len(copy) != n:
        return f"the stream copy decodes to {len(copy)} frames, the source to {n}"
    bad = next((k for k in range(n) if copy.hashes[k] != src.hashes[k]), None)
    if bad is not None:
        return f"frame {bad} of the stream copy differs from the source's decode"
    steps = {b - a for a, b in zip(copy.pts, copy.pts[1:])}
    if len(steps) > 1:
        return f"the source has a variable frame rate (frame steps {sorted(steps)[:4]} x {copy.time_base})"
    if steps:
        rate = 1 / float(next(iter(steps)) * copy.time_base)
        if abs(rate - fps) > 1e-3 * fps:
            return f"the source runs at {rate:g} frames/s, the scene at {fps:g}"
    return None


class _Writer:
    """Runs the work of one plan; keeps every live ffmpeg process, temporary file and the
    work folder so that any failure or interruption can remove them all (:meth:`abort`)."""

    def __init__(self, plan: VariantPlan, outdir: Path, res: Resources, bar, spool: Path | None = None):
        self.plan, self.outdir, self.res, self.bar = plan, outdir, res, bar
        self.spool = spool or outdir
        self.staged: list[tuple[Path, str]] = []
        self.black = black_frame(plan.size)
        self.live: list[VideoWriter] = []
        self.procs: list[subprocess.Popen] = []
        self.temps: list[Path] = []
        self.work_dir: Path | None = None
        self.written: list[str] = []
        self.encodings: dict[str, tuple[str, str | None]] = {}
        self.frames_encoded = 0
        self.passes = 0
        self.aborted = False
        self._lock = threading.Lock()

    # ---- helpers ---------------------------------------------------------------------
    def work(self) -> Path:
        """The scene's work folder (pool stream, mux lists), created on first use in the spool
        folder: ``.vistest-spool-{scene_id}.{rand}_{pid}_{host}`` (vistest.atomic.process_tag),
        so that a later run can tell a stale one."""
        if self.work_dir is None:
            path = ensure_folder(self.spool, "work folder") / f"{SPOOL_PREFIX}{self.plan.scene_id}.{process_tag()}"
            self.work_dir = path  # registered first: an interrupted mkdir leaves nothing unknown
            try:
                path.mkdir()
            except OSError as e:
                if not is_environment_error(e):
                    raise
                raise output_error(path, e, "cannot create the work folder") from None
        return self.work_dir

    def write_work(self, path: Path, text: str) -> None:
        """Write a small file of the work folder (OutputError naming it when the disk refuses)."""
        try:
            path.write_text(text)
        except OSError as e:
            if not is_environment_error(e):
                raise
            raise output_error(path, e) from None

    def temp(self, v: Variant) -> Path:
        def register(t: Path) -> None:
            with self._lock:
                self.temps.append(t)

        return temp_path_for(self.outdir / v.path, register)

    def stage(self, tmp: Path, v: Variant, encoding: str, note: str | None = None) -> None:
        """Keep a verified output under its temporary name until every output of the plan is
        (:func:`commit_videos` renames them all); it stays registered for :meth:`abort`."""
        with self._lock:
            self.staged.append((tmp, v.path))
            self.written.append(v.path)
            self.encodings[v.path] = (encoding, note)

    def run(self, args: list[str], what: str, stdout=subprocess.DEVNULL) -> bytes:
        """Run one ffmpeg command (killed on abort); VideoError naming ``what`` on failure."""
        err = tempfile.TemporaryFile()
        with self._lock:
            if self.aborted:
                err.close()
                raise VideoError(f"{what}: not started, the writer was stopped")
            try:
                proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=stdout, stderr=err)
            except OSError as e:
                err.close()
                raise VideoError(f"{what}: cannot start ffmpeg {ffmpeg_exe()!r}: {e}") from None
            self.procs.append(proc)
        try:
            try:
                out, _ = proc.communicate()
            except BaseException:  # interrupted: stop ffmpeg before anyone removes its output
                proc.kill()
                proc.wait()
                raise
            if proc.returncode != 0:
                err.seek(0)
                raise VideoError(f"{what}: ffmpeg failed ({exit_text(proc.returncode)}):\n{stderr_tail(err.read())}")
            return out or b""
        finally:
            with self._lock:
                self.procs.remove(proc)
            err.close()

    def writer(self, v: Variant, source=None) -> VideoWriter:
        s = self.plan.settings
        return VideoWriter(self.outdir / v.path, v.fps, v.size, crf=s.crf, preset=s.preset, pix_fmt="yuv420p",
                           threads=self.res.threads, metadata={KEY_TAG: KEY_PREFIX + v.key}, source=source)

    def start(self, w: VideoWriter) -> VideoWriter:
        ensure_folder(w.path.parent, "folder")  # w.path already includes outdir
        self.live.append(w)
        w.start()
        with self._lock:
            self.temps.append(w.temp_path)
        return w

    def finish_all(self, writers: Sequence[VideoWriter], variants: Sequence[Variant],
                   notes: Mapping[str, str | None] = {}) -> None:
        """Close every input first (the encoders flush in parallel), then wait, verify and
        rename each; verification decodes run in parallel threads."""
        for w in writers:
            w.close_input()
        with ThreadPoolExecutor(max_workers=max(1, len(writers))) as pool:
            for w, v, tmp in zip(writers, variants, pool.map(lambda w: w.finish(place=False), writers)):
                self.live.remove(w)
                self.stage(tmp, v, X264, notes.get(v.path))
                self.frames_encoded += w.frames_written

    # ---- the decode pass ---------------------------------------------------------------
    def decode_pass(self, long_: Sequence[Variant], pool: PoolPlan | None = None, hashes: Path | None = None,
                    notes: Mapping[str, str | None] = {}) -> VideoWriter | None:
        """Decode the source once, feeding ``long_`` (encoded, verified and in place at the
        end), the ``pool`` encoder (returned finished, its stream in the work folder) and,
        with ``hashes``, writing every frame's hash there."""
        plan = self.plan
        self.passes += 1
        feeds, writers = [], []
        for v in long_:
            w = self.start(self.writer(v))
            writers.append(w)
            feeds.append(_Feed(v, plan.num_frames, w, self.black))
        pool_writer = self.start_pool(pool) if pool is not None else None
        if pool_writer is not None:
            feeds.append(_PoolFeed(pool, pool_writer))
        with FrameReader(plan.source, plan.source_size, "yuv420p", threads=self.res.decoder_threads,
                         pad_even=True, hash_path=hashes, full_range=plan.source_full_range) as reader:
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
        if pool_writer is not None:
            pool_writer.close_input()
        self.finish_all(writers, long_, notes)
        if pool_writer is not None:
            self.finish_pool(pool_writer, pool)
        return pool_writer

    # ---- the frame pool and the n-frame videos ----------------------------------------
    def start_pool(self, pool: PoolPlan) -> VideoWriter:
        """Start the all-intra pool encoder (its black frame, if any, written first)."""
        s = self.plan.settings
        w = VideoWriter(self.work() / "pool.h264", self.plan.budget_fps, self.plan.size, crf=s.crf,
                        preset=s.intra_preset, pix_fmt="yuv420p", threads=self.res.threads, verify=False,
                        intra=True)
        self.start(w)
        if pool.has_black:
            w.write_raw(self.black)
        return w

    def finish_pool(self, w: VideoWriter, pool: PoolPlan) -> None:
        w.finish()
        self.live.remove(w)
        self.frames_encoded += len(pool.entries)

    def pool_units(self, path: Path, expected: int):
        """The pool's access units (read in chunks: constant memory); VideoError unless there
        is one per entry."""
        try:
            units = file_access_units(path, SCAN_CHUNK)
        except ValueError as e:
            raise VideoError(f"{path}: {e}") from None
        if len(units) != expected:
            raise VideoError(f"{path}: the pool encoder wrote {len(units)} frames, {expected} were given")
        return units

    def mux_intra(self, pool_path: Path, units, pool: PoolPlan, variants: Sequence[Variant]) -> None:
        """Assemble each n-frame variant by stream copy of its pool frames, ``MUX_BATCH`` per
        ffmpeg process; each output is kept once its sample table holds its frame count."""
        work = self.work()
        for k in range(0, len(variants), MUX_BATCH):
            batch = variants[k:k + MUX_BATCH]
            jobs, temps = [], []
            for j, v in enumerate(batch):
                lst = work / f"mux{k + j}.txt"
                self.write_work(lst, concat_list(pool_path, units, pool.uses[v.path]))
                tmp = self.temp(v)
                temps.append(tmp)
                jobs.append((lst, tmp, {KEY_TAG: KEY_PREFIX + v.key}))
            self.run(mux_h264_command(jobs, self.plan.budget_fps), f"{self.outdir / batch[0].path} (and "
                     f"{len(batch) - 1} more n-frame videos)")
            for v, tmp in zip(batch, temps):
                got = mp4_sample_count(tmp)
                if got != v.num_frames:
                    raise VideoError(f"{self.outdir / v.path}: {v.num_frames} frames were muxed but the written file "
                                     f"holds {got}; not keeping it")
                self.stage(tmp, v, X264_INTRA)
                self.bar.update(v.num_frames)

    def write_pool(self, pool: PoolPlan, variants: Sequence[Variant], writer: VideoWriter | None) -> None:
        """After the pass that fed the pool (or, for a black-only pool, now): find its units
        and mux the n-frame variants."""
        if writer is None:  # no source frame in the pool: only the black frame
            writer = self.start_pool(pool)
            writer.close_input()
            self.finish_pool(writer, pool)
        units = self.pool_units(writer.path, len(pool.entries))
        self.mux_intra(writer.path, units, pool, variants)

    # ---- all_frame as a stream copy ----------------------------------------------------
    def start_remux(self, v: Variant):
        """Copy the source's stream into a temporary all_frame and decode it to frame hashes,
        in a thread (it overlaps the decode pass); returns (temporary file, future)."""
        tmp = self.temp(v)
        args = remux_command(self.plan.source, tmp, {KEY_TAG: KEY_PREFIX + v.remux_key})

        def job() -> FrameHashes:
            self.run(args, f"{self.outdir / v.path} (stream copy of {self.plan.source})")
            return parse_frame_hashes(self.run(hash_command(tmp, self.res.decoder_threads),
                                               f"{tmp} (decoding the stream copy)",
                                               stdout=subprocess.PIPE).decode("ascii", "replace"), str(tmp))

        executor = ThreadPoolExecutor(max_workers=1)
        future = executor.submit(job)
        executor.shutdown(wait=False)
        return tmp, future

    def finish_remux(self, v: Variant, tmp: Path, future, source: FrameHashes) -> str | None:
        """Keep the stream copy when frame-exact (None), else remove it and say why."""
        try:
            copy = future.result()
        except VideoError as e:  # ffmpeg could not copy or decode the stream: encode instead
            copy, why = None, f"the stream copy failed: {str(e).splitlines()[-1]}"
        if copy is not None:
            why = remux_check(source, copy, self.plan.source_fps, mp4_sample_count(self.plan.source))
        if why is None:
            self.stage(tmp, v, STREAM_COPY)
            return None
        tmp.unlink(missing_ok=True)
        with self._lock:
            self.temps.remove(tmp)
        return why

    # ---- black-only and cleanup ------------------------------------------------------------
    def encode_sourceless(self, variants: Sequence[Variant]) -> None:
        """Encode full-length all-black variants (ffmpeg generates the frames), ``res.jobs`` at a time."""
        for k in range(0, len(variants), self.res.jobs):
            batch = list(variants[k:k + self.res.jobs])
            writers = [self.start(self.writer(v, BlackFrames(v.num_frames))) for v in batch]
            self.finish_all(writers, batch)
            for w in writers:
                self.bar.update(w.frames_written)

    def abort(self) -> None:
        for w in self.live:
            w.abort()
        self.live.clear()
        with self._lock:
            self.aborted = True
            procs = list(self.procs)
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        for t in list(self.temps):
            if t.exists():
                t.unlink()
        self.temps.clear()
        self.cleanup()

    def cleanup(self) -> None:
        if self.work_dir is not None:
            shutil.rmtree(self.work_dir, ignore_errors=True)
            self.work_dir = None


def write_plan(plan: VariantPlan, outdir: str | os.PathLike, *, resources: ResourceConfig = ResourceConfig(),
               progress: bool = True, records: Mapping[str, Mapping] | None = None, verify: bool = False,
               spool_dir: str | os.PathLike | None = None, commit: bool = True) -> WriteReport:
    """Write every variant of ``plan`` under ``outdir`` (paths ``Variant.path``), skipping
    those up to date (:func:`up_to_date`: ``records``, the scene's record of its files, and
    ``verify``). ``resources``: the memory, encoders, threads and CPUs :func:`plan_resources`
    plans with (over the whole plan, so reruns use the same threads). ``spool_dir``: where the work
    folder goes (:func:`spool_folder`); its free space is checked before anything is encoded.

    Nothing is renamed into place until every output is written and verified; then, with
    ``commit``, all are (:func:`commit_videos`); without, the caller does it (or
    :func:`discard_videos`), e.g. after writing the files that go with them. So a failure
    leaves the previous outputs as they were. Raises VideoError (naming the file) when ffmpeg
    fails, the source's decoded frame count differs from ``plan.num_frames``, or a written file
    does not hold its frames; OutputError when the disk refuses (naming the path).
    """
    t0 = time.perf_counter()
    max_memory_mb, jobs, threads, cpus = resources.max_memory_mb, resources.jobs, resources.threads, resources.cpus
    outdir = ensure_folder(outdir)
    variants = sorted(plan.variants, key=lambda v: v.path)
    s = plan.settings
    n_long = sum(1 for v in variants if is_long(v) and v.remux_key is None)
    res = plan_resources(plan.size, s.preset, n_long, cpus, max_memory_mb, jobs, threads,
                         pool=any(v.intra for v in variants))
    check_mb = check_decoder_memory_mb(plan.size, res.decoder_threads)
    alongside = res.estimate_mb + check_mb <= max_memory_mb  # check all_frame's stream copy during the pass
    if alongside and any(v.remux_key is not None for v in variants):
        res = dataclasses.replace(res, estimate_mb=round(res.estimate_mb + check_mb, 1))
    done = up_to_date(outdir, variants, records, verify)
    todo = [v for v in variants if v.path not in done]
    intra_todo = [v for v in todo if v.intra]
    pool = PoolPlan.of([v for v in variants if v.intra]) if intra_todo else None  # the whole pool: same bytes
    source_pool = pool is not None and any(e != BLACK for e in pool.entries)
    remux = [v for v in todo if v.remux_key is not None]
    long_ = [v for v in todo if is_long(v) and v.remux_key is None]
    notes = {v.path: v.remux_note for v in long_ if v.remux_note}
    passes = plan_passes(long_, res.jobs, source_pool)
    if remux and not passes:
        passes = [[]]  # a decode pass only to hash the source's frames
    spool = spool_folder(outdir, spool_dir)
    if pool is not None or remux:
        check_spool_space(spool, spool_need_bytes(pool, plan.size, s.crf, plan.num_frames if remux else 0),
                          plan.scene_id)
    total = (len(passes) * plan.num_frames + sum(v.num_frames for v in intra_todo)
             + sum(v.num_frames for v in todo if not v.intra and v.source_free))
    encodings = {p: (enc, None) for p, enc in done.items()}
    with progress_bar(total, f"videos {plan.scene_id}", enabled=progress and bool(todo)) as bar:
        w = _Writer(plan, outdir, res, bar, spool)
        try:
            remuxing = [(v, *w.start_remux(v)) for v in remux] if alongside else []
            pool_writer = None
            for k, pv in enumerate(passes):
                hashes = w.work() / "source.framehash" if k == 0 and remux else None
                pw = w.decode_pass(pv, pool if k == 0 and source_pool else None, hashes, notes)
                pool_writer = pw or pool_writer
                if k == 0 and pool is not None:
                    w.write_pool(pool, intra_todo, pool_writer)
                if hashes is not None:
                    if not alongside:  # memory: the stream copy is checked after the pass
                        remuxing = [(v, *w.start_remux(v)) for v in remux]
                    source = parse_frame_hashes(hashes.read_text(encoding="ascii"), str(plan.source))
                    fallback = []
                    for v, tmp, future in remuxing:
                        why = w.finish_remux(v, tmp, future, source)
                        if why is not None:
                            fallback.append(v)
                            notes[v.path] = why
                    for k2 in range(0, len(fallback), res.jobs):
                        passes.append(fallback[k2:k2 + res.jobs])
                        if hasattr(bar, "length"):
                            bar.length += plan.num_frames
            if pool is not None and not passes:
                w.write_pool(pool, intra_todo, None)
            w.encode_sourceless([v for v in todo if not v.intra and v.source_free])
            staged = tuple((str(t), p) for t, p in w.staged)
            if commit:
                commit_videos(WriteReport((), (), 0, 0.0, res, staged=staged), outdir)
                staged = ()
            with w._lock:  # the staged files are the caller's now (or in place): not removed by abort
                w.temps.clear()
        except BaseException:
            w.abort()
            raise
        w.cleanup()
    for v in variants:  # why an all_frame kept from an earlier run is not a stream copy
        if encodings.get(v.path, (None,))[0] == X264 and v.kind == "budget":
            encodings[v.path] = (X264, v.remux_note or "the stream copy was not frame-exact when this file was "
                                                       "written")
    encodings.update(w.encodings)
    return WriteReport(tuple(sorted(w.written)), tuple(sorted(done)), w.passes, round(time.perf_counter() - t0, 3),
                       res, encodings, w.frames_encoded, staged)
