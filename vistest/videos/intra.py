"""The frame pool's encoder and the n-frame videos muxed from it (stage 5).

Budget videos and budget dummies (n frames at the budget rate) are all-intra H.264: every
distinct frame they hold is encoded once, as an IDR frame of the scene's pool
(vistest.videos.pool: the plan of the pool), into ``pool.h264`` in the work folder; each video
is then assembled by stream copy of its frames' access units (``ffmpeg -f h264 -i
concatf:LIST -c copy``, at most :data:`MUX_BATCH` videos per ffmpeg process, as many processes at
once as the scene's CPUs) and kept once its sample table holds its frame count. The pool is fed by
the decode pass (vistest.videos.encode).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Sequence

from .ffmpeg import VideoError, VideoWriter, mp4_sample_count, mux_h264_command
from .memory import check_decoder_memory_mb, plan_mux
from .pixels import fill_rects
from .plan import Variant
from .recipes import X264_INTRA
from .pool import PoolPlan, concat_list, file_access_units
from .session import WriteSession
from .stored import key_metadata

MUX_BATCH = 32         # n-frame videos muxed by one ffmpeg process
SCAN_CHUNK = 1 << 22   # bytes of the pool read at a time when finding its access units


class PoolFeed:
    """Feeds the pool encoder ``sink``: for each decoded frame, its pool entries in pool order
    (the frame as decoded, then each masked version)."""

    def __init__(self, pool: PoolPlan, sink):
        self.by_frame = pool.by_frame()
        self.sink = sink

    def feed(self, i: int, buf, size: tuple[int, int]) -> None:
        """Give the sink decoded frame ``i`` (raw yuv420p ``buf`` of ``size``) as the pool needs it."""
        for e in self.by_frame.get(i, ()):
            self.sink.write_raw(buf if e[0] == "frame" else fill_rects(buf, size, e[2], e[3]))


def start_pool(s: WriteSession, pool: PoolPlan) -> VideoWriter:
    """Start the all-intra pool encoder (its black frame, if any, written first)."""
    st = s.plan.settings
    w = VideoWriter(s.work.path() / "pool.h264", s.plan.budget_fps, s.plan.size, crf=st.crf,
                    preset=st.intra_preset, pix_fmt="yuv420p", threads=s.res.threads, verify=False,
                    intra=True)
    s.procs.start(w)
    if pool.has_black:
        w.write_raw(s.black)
    return w


def finish_pool(s: WriteSession, w: VideoWriter, pool: PoolPlan) -> None:
    """Wait for the pool encoder (its input closed) to write its stream."""
    w.finish()
    s.procs.finished(w)
    s.frames_encoded += len(pool.entries)


def pool_units(path: Path, expected: int):
    """The pool's access units (read in chunks: constant memory); VideoError unless there
    is one per entry."""
    try:
        units = file_access_units(path, SCAN_CHUNK)
    except ValueError as e:
        raise VideoError(f"{path}: {e}") from None
    if len(units) != expected:
        raise VideoError(f"{path}: the pool encoder wrote {len(units)} frames, {expected} were given")
    return units


def mux_intra(s: WriteSession, pool_path: Path, units, pool: PoolPlan, variants: Sequence[Variant]) -> None:
    """Assemble each n-frame variant by stream copy of its pool frames: batches of at most
    ``MUX_BATCH`` videos per ffmpeg process, as many processes at once as the plan's CPUs and
    memory allow (vistest.videos.memory.plan_mux; the decode that checks a stream copy may still
    run beside them). Each output is staged, in the variants' order, once its sample table holds
    its frame count; a failed batch stops the others."""
    size, res = s.plan.size, s.res
    at_once, per = plan_mux(size, len(variants), MUX_BATCH, res.cpus, res.max_memory_mb,
                            check_decoder_memory_mb(size, res.decoder_threads))
    batches = []
    for k in range(0, len(variants), per or 1):
        batch, jobs, temps = variants[k:k + per], [], []
        for j, v in enumerate(batch):
            lst = s.work.write(f"mux{k + j}.txt", concat_list(pool_path, units, pool.uses[v.path]))
            tmp = s.procs.temp(s.outdir / v.path)
            temps.append(tmp)
            jobs.append((lst, tmp, key_metadata(v.key)))
        what = f"{s.outdir / batch[0].path} (and {len(batch) - 1} more n-frame videos)"
        batches.append((batch, temps, mux_h264_command(jobs, s.plan.budget_fps), what))
    with ThreadPoolExecutor(max_workers=at_once) as ex:
        futures = [ex.submit(s.procs.run, args, what) for _b, _t, args, what in batches]
        try:
            for (batch, temps, _a, _w), fut in zip(batches, futures):
                fut.result()
                for v, tmp in zip(batch, temps):
                    got = mp4_sample_count(tmp)
                    if got != v.num_frames:
                        raise VideoError(f"{s.outdir / v.path}: {v.num_frames} frames were muxed but the written "
                                         f"file holds {got}; not keeping it")
                    s.staging.stage(tmp, v.path, X264_INTRA)
                    s.bar.update(v.num_frames)
        except BaseException:
            for f in futures:
                f.cancel()
            raise


def write_pool(s: WriteSession, pool: PoolPlan, variants: Sequence[Variant], writer: VideoWriter | None) -> None:
    """After the pass that fed the pool (or, for a black-only pool, now): find its units
    and mux the n-frame variants."""
    if writer is None:  # no source frame in the pool: only the black frame
        writer = start_pool(s, pool)
        writer.close_input()
        finish_pool(s, writer, pool)
    units = pool_units(writer.path, len(pool.entries))
    mux_intra(s, writer.path, units, pool, variants)
