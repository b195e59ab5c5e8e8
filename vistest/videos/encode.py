"""Encode passes: one decode of the source feeds every encoder (stage 5).

ffmpeg decodes the source once to raw yuv420p (the codec's own format: no colour conversion,
no loss) into a pipe; each frame goes to the pool encoder (vistest.videos.intra: as decoded and
in each masked version the pool needs) and, as is, black, or masked, to every full-length
long-GOP libx264 encoder (full-length dummies, and all_frame when it cannot be a stream copy).
Python holds one frame (plus one masked copy at a time): memory does not grow with the video's
length. Full-length variants beyond ``jobs`` encoders (vistest.videos.memory) go to further
passes (:func:`plan_passes`), one more decode each; variants whose every frame is black need no
source (:func:`encode_sourceless`). Frame numbers are 0-based decoded frames of the source.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from .ffmpeg import BlackFrames, FrameReader, VideoError, VideoWriter
from .intra import PoolFeed, finish_pool, start_pool
from .pixels import fill_rects
from .plan import Variant
from .recipes import X264
from .pool import PoolPlan
from .session import WriteSession
from .stored import key_metadata


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
        """Give the sink decoded frame ``i`` (raw yuv420p ``buf`` of ``size``) as the variant holds it."""
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


def long_writer(s: WriteSession, v: Variant, source=None) -> VideoWriter:
    """The long-GOP libx264 encoder of ``v`` (not started), its content key in its metadata;
    ``source``: frames ffmpeg reads itself (BlackFrames), else they are written to it."""
    st = s.plan.settings
    return VideoWriter(s.outdir / v.path, v.fps, v.size, crf=st.crf, preset=st.preset, pix_fmt="yuv420p",
                       threads=s.res.threads, metadata=key_metadata(v.key), source=source)


def finish_all(s: WriteSession, writers: Sequence[VideoWriter], variants: Sequence[Variant],
               notes: Mapping[str, str | None] = {}) -> None:
    """Close every input first (the encoders flush in parallel), then wait, verify and
    stage each; verification decodes run in parallel threads."""
    for w in writers:
        w.close_input()
    with ThreadPoolExecutor(max_workers=max(1, len(writers))) as pool:
        for w, v, tmp in zip(writers, variants, pool.map(lambda w: w.finish(place=False), writers)):
            s.procs.finished(w)
            s.staging.stage(tmp, v.path, X264, notes.get(v.path))
            s.frames_encoded += w.frames_written


def decode_pass(s: WriteSession, long_: Sequence[Variant], pool: PoolPlan | None = None, hashes: Path | None = None,
                notes: Mapping[str, str | None] = {}) -> VideoWriter | None:
    """Decode the source once, feeding ``long_`` (encoded, verified and staged at the end), the
    ``pool`` encoder (returned finished, its stream in the work folder) and, with ``hashes``,
    writing every frame's hash there. VideoError when the source does not decode to the
    scene's ``num_frames``."""
    plan = s.plan
    s.passes += 1
    feeds, writers = [], []
    for v in long_:
        w = s.procs.start(long_writer(s, v))
        writers.append(w)
        feeds.append(_Feed(v, plan.num_frames, w, s.black))
    pool_writer = start_pool(s, pool) if pool is not None else None
    if pool_writer is not None:
        feeds.append(PoolFeed(pool, pool_writer))
    with FrameReader(plan.source, plan.source_size, "yuv420p", threads=s.res.decoder_threads,
                     pad_even=True, hash_path=hashes, full_range=plan.source_full_range) as reader:
        for buf in reader:
            i = reader.frames_read - 1
            if i >= plan.num_frames:
                raise VideoError(f"{plan.source}: decodes to more than the {plan.num_frames} frames the scene "
                                 f"describes (frames[].index: last + 1); fix the scene or the video")
            for f in feeds:
                f.feed(i, buf, plan.size)
            s.bar.update(1)
    if reader.frames_read != plan.num_frames:
        raise VideoError(f"{plan.source}: decodes to {reader.frames_read} frames, the scene describes "
                         f"{plan.num_frames} (frames[].index: last + 1); fix the scene or the video")
    if pool_writer is not None:
        pool_writer.close_input()
    finish_all(s, writers, long_, notes)
    if pool_writer is not None:
        finish_pool(s, pool_writer, pool)
    return pool_writer


def encode_sourceless(s: WriteSession, variants: Sequence[Variant]) -> None:
    """Encode full-length all-black variants (ffmpeg generates the frames), ``res.jobs`` at a time."""
    for k in range(0, len(variants), s.res.jobs):
        batch = list(variants[k:k + s.res.jobs])
        writers = [s.procs.start(long_writer(s, v, BlackFrames(v.num_frames))) for v in batch]
        finish_all(s, writers, batch)
        for w in writers:
            s.bar.update(w.frames_written)
