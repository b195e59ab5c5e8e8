"""Writing a VariantPlan: the entry :func:`write_plan` (stage 5).

How a scene's videos are written (docs/videos.md, "How the videos are written"), and where:

* **What is left to write** (vistest.videos.stored): each video carries its content key in the
  container's ``comment`` tag (``vistest:<key>``); a rerun skips an existing output whose key
  matches and redoes any other (the whole pool is encoded again, so a rerun writes the bytes an
  uninterrupted run writes).
* **Memory budget** (vistest.videos.memory): the number of encoders one pass feeds (``jobs``)
  and their threads are chosen from a model of the process tree's peak RSS to stay within
  ``max_memory_mb``; full-length variants beyond ``jobs`` go to further passes.
* **The spool** (vistest.videos.spool): the work folder (frame pool, mux lists, frame hashes),
  its free space checked before anything is encoded.
* **One decode pass feeds every encoder** (vistest.videos.encode): the pool encoder and every
  full-length long-GOP encoder; all-black variants need no source.
* **n-frame videos from a frame pool** (vistest.videos.intra): every distinct frame of the
  budget videos and budget dummies is encoded once, all-intra; each video is a stream copy of
  its frames' access units.
* **all_frame by stream copy** (vistest.videos.remux), kept only when its decode is frame-exact.
* **Atomic, verified, resumable** (vistest.videos.staging, vistest.videos.processes): every
  output is written to a temporary file beside its destination, verified (long-GOP encodes by
  decoding and counting their frames, n-frame videos by their sample table, all_frame by its
  frame hashes), staged, and renamed into place with all the others. On an exception, Ctrl-C or
  SIGTERM (vistest.videos.processes.signals_as_exit) every ffmpeg process is killed and every
  temporary and work file removed.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..atomic import ensure_folder
from ..progress import progress_bar
from .encode import decode_pass, encode_sourceless, is_long, plan_passes
from .intra import write_pool
from .config import ResourceConfig
from .memory import plan_resources, with_stream_check
from .plan import Variant, VariantPlan
from .recipes import X264
from .pool import BLACK, PoolPlan
from .remux import finish_remuxes, start_remux
from .session import WriteSession
from .spool import WorkFolder, check_spool_space, spool_folder, spool_need_bytes
from .staging import WriteReport, commit_videos
from .stored import up_to_date


@dataclass(frozen=True)
class _Todo:
    """What a write still has to do, the outputs ``done`` ({path: encoding}) being kept:
    ``todo`` (variants to write), ``intra`` (its n-frame videos), ``pool`` (the whole frame pool
    of the plan when any n-frame video is to write: a rerun writes the same bytes),
    ``source_pool`` (the pool holds a source frame), ``remux`` (all_frame as a stream copy),
    ``long_`` (full-length variants encoded in decode passes), ``sourceless`` (all-black ones)."""

    todo: tuple[Variant, ...]
    intra: tuple[Variant, ...]
    pool: PoolPlan | None
    source_pool: bool
    remux: tuple[Variant, ...]
    long_: tuple[Variant, ...]
    sourceless: tuple[Variant, ...]


def _todo(variants: Sequence[Variant], done: Mapping[str, str]) -> _Todo:
    """What is left once the outputs ``done`` ({path: encoding}, vistest.videos.stored.up_to_date) are kept."""
    todo = [v for v in variants if v.path not in done]
    intra = [v for v in todo if v.intra]
    pool = PoolPlan.of([v for v in variants if v.intra]) if intra else None
    return _Todo(tuple(todo), tuple(intra), pool, pool is not None and any(e != BLACK for e in pool.entries),
                 tuple(v for v in todo if v.remux_key is not None),
                 tuple(v for v in todo if is_long(v) and v.remux_key is None),
                 tuple(v for v in todo if not v.intra and v.source_free))


def _run(s: WriteSession, t: _Todo, alongside: bool, notes: dict[str, str | None]) -> None:
    """Every decode pass (the first feeds the pool and hashes the source for the stream copy;
    all_frame whose stream copy is not kept goes to further passes), the n-frame videos and the
    all-black ones; every output staged."""
    passes = plan_passes(t.long_, s.res.jobs, t.source_pool)
    if t.remux and not passes:
        passes = [[]]  # a decode pass only to hash the source's frames
    remuxing = [(v, *start_remux(s, v)) for v in t.remux] if alongside else []
    pool_writer = None
    for k, pv in enumerate(passes):  # passes grows with the stream copies not kept
        hashes = s.work.path() / "source.framehash" if k == 0 and t.remux else None
        pw = decode_pass(s, pv, t.pool if k == 0 and t.source_pool else None, hashes, notes)
        pool_writer = pw or pool_writer
        if k == 0 and t.pool is not None:
            write_pool(s, t.pool, t.intra, pool_writer)
        if hashes is not None:
            if not alongside:  # memory: the stream copy is checked after the pass
                remuxing = [(v, *start_remux(s, v)) for v in t.remux]
            fallback = []
            for v, why in finish_remuxes(s, remuxing, hashes):
                fallback.append(v)
                notes[v.path] = why
            for k2 in range(0, len(fallback), s.res.jobs):
                passes.append(fallback[k2:k2 + s.res.jobs])
                if hasattr(s.bar, "length"):
                    s.bar.length += s.plan.num_frames
    if t.pool is not None and not passes:
        write_pool(s, t.pool, t.intra, None)
    encode_sourceless(s, t.sourceless)


def _kept_encodings(variants: Sequence[Variant], done: Mapping[str, str]) -> dict[str, tuple[str, str | None]]:
    """{path: (encoding, note)} of the outputs kept from an earlier run; the note says why a kept
    all_frame is not a stream copy."""
    encodings: dict[str, tuple[str, str | None]] = {p: (enc, None) for p, enc in done.items()}
    for v in variants:
        if encodings.get(v.path, (None,))[0] == X264 and v.kind == "budget":
            encodings[v.path] = (X264, v.remux_note or "the stream copy was not frame-exact when this file was "
                                                       "written")
    return encodings


def write_plan(plan: VariantPlan, outdir: str | os.PathLike, *, resources: ResourceConfig = ResourceConfig(),
               progress: bool = True, records: Mapping[str, Mapping] | None = None, verify: bool = False,
               spool_dir: str | os.PathLike | None = None, commit: bool = True) -> WriteReport:
    """Write every variant of ``plan`` under ``outdir`` (paths ``Variant.path``), skipping
    those up to date (vistest.videos.stored.up_to_date: ``records``, the scene's record of its
    files, and ``verify``). ``resources``: the memory (MB), encoders, threads and CPUs
    vistest.videos.memory.plan_resources plans with (over the whole plan, so reruns use the same
    threads). ``spool_dir``: where the work folder goes (vistest.videos.spool.spool_folder); its
    free space is checked before anything is encoded.

    Nothing is renamed into place until every output is written and verified; then, with
    ``commit``, all are (vistest.videos.staging.commit_videos); without, the caller does it (or
    discard_videos), e.g. after writing the files that go with them. So a failure
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
    res, alongside = with_stream_check(res, plan.size, max_memory_mb,
                                       any(v.remux_key is not None for v in variants))
    done = up_to_date(outdir, variants, records, verify)
    t = _todo(variants, done)
    notes = {v.path: v.remux_note for v in t.long_ if v.remux_note}
    n_passes = len(plan_passes(t.long_, res.jobs, t.source_pool)) or (1 if t.remux else 0)
    spool = spool_folder(outdir, spool_dir)
    if t.pool is not None or t.remux:
        check_spool_space(spool, spool_need_bytes(t.pool, plan.size, s.crf, plan.num_frames if t.remux else 0),
                          plan.scene_id)
    total = (n_passes * plan.num_frames + sum(v.num_frames for v in t.intra)
             + sum(v.num_frames for v in t.sourceless))
    with progress_bar(total, f"videos {plan.scene_id}", enabled=progress and bool(t.todo)) as bar:
        w = WriteSession(plan, outdir, res, bar, WorkFolder(spool, plan.scene_id))
        try:
            _run(w, t, alongside, notes)
            staged = tuple((str(tmp), p) for tmp, p in w.staging.staged)
            if commit:
                commit_videos(WriteReport((), (), 0, 0.0, res, staged=staged), outdir)
                staged = ()
            w.procs.release()  # the staged files are the caller's now (or in place): not removed by abort
        except BaseException:
            w.procs.abort()
            w.work.remove()
            raise
        w.work.remove()
    encodings = _kept_encodings(variants, done)
    encodings.update(w.staging.encodings)
    return WriteReport(tuple(sorted(w.staging.written)), tuple(sorted(done)), w.passes,
                       round(time.perf_counter() - t0, 3), res, encodings, w.frames_encoded, staged)
