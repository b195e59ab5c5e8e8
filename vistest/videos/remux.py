"""all_frame as a stream copy of the source, kept only when frame-exact (stage 5).

When the source is H.264 in MP4/MOV, all_frame is first written as a stream copy of it (no
re-encoding) and decoded to frame hashes in a thread (:func:`start_remux`, overlapping the
decode pass when the memory model allows: vistest.videos.memory.with_stream_check). It is kept
(:func:`finish_remux`) only when its decode is frame-exact (:func:`remux_check`): as many frames
as the source decodes to, every frame's hash equal to the source decode's, constant frame timing
at the scene's rate (frames/s), and every coded sample of the source decoded, so no edit list
hides frames. Otherwise it is removed and encoded in a further decode pass; the reason goes to
the manifest and the summary.
"""
from __future__ import annotations

import subprocess
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Sequence

from .ffmpeg import FrameHashes, VideoError, hash_command, mp4_sample_count, parse_frame_hashes, remux_command
from .plan import Variant
from .recipes import STREAM_COPY
from .session import WriteSession
from .stored import key_metadata


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


def start_remux(s: WriteSession, v: Variant) -> tuple[Path, Future]:
    """Copy the source's stream into a temporary all_frame and decode it to frame hashes,
    in a thread (it overlaps the decode pass); returns (temporary file, future of its hashes)."""
    tmp = s.procs.temp(s.outdir / v.path)
    args = remux_command(s.plan.source, tmp, key_metadata(v.remux_key))

    def job() -> FrameHashes:
        s.procs.run(args, f"{s.outdir / v.path} (stream copy of {s.plan.source})")
        return parse_frame_hashes(s.procs.run(hash_command(tmp, s.res.decoder_threads),
                                              f"{tmp} (decoding the stream copy)",
                                              stdout=subprocess.PIPE).decode("ascii", "replace"), str(tmp))

    executor = ThreadPoolExecutor(max_workers=1)
    future = executor.submit(job)
    executor.shutdown(wait=False)
    return tmp, future


def finish_remux(s: WriteSession, v: Variant, tmp: Path, future: Future, source: FrameHashes) -> str | None:
    """Stage the stream copy when frame-exact (None), else remove it and say why."""
    try:
        copy = future.result()
    except VideoError as e:  # ffmpeg could not copy or decode the stream: encode instead
        copy, why = None, f"the stream copy failed: {str(e).splitlines()[-1]}"
    if copy is not None:
        why = remux_check(source, copy, s.plan.source_fps, mp4_sample_count(s.plan.source))
    if why is None:
        s.staging.stage(tmp, v.path, STREAM_COPY)
        return None
    s.procs.drop_temp(tmp)
    return why


def finish_remuxes(s: WriteSession, remuxing: Sequence[tuple[Variant, Path, Future]],
                   hashes: Path) -> list[tuple[Variant, str]]:
    """Finish every started stream copy against the source's frame hashes (the ``hashes`` file
    the first decode pass wrote); (variant, why) of those not kept, to be encoded."""
    source = parse_frame_hashes(hashes.read_text(encoding="ascii"), str(s.plan.source))
    fallback = []
    for v, tmp, future in remuxing:
        why = finish_remux(s, v, tmp, future, source)
        if why is not None:
            fallback.append((v, why))
    return fallback
