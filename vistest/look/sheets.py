"""Contact sheets of the written videos: see that each variant holds the frames it should.

``vistest sheet RUN_DIR -o SHEETS`` reads ``RUN_DIR/manifest.jsonl`` (docs/videos.md) and,
for every video it lists, writes ``SHEETS/{path without .mp4}.png``: the video's frames on a
grid, each captioned with its position in the video and the *source* frame it was made
from (``source_frames``), ``black``/``mask`` where the manifest says the frame was blacked
out or masked. Each shown frame is also compared with what the manifest says it must be -
the source frame (outside masked rectangles), or black - at tile resolution (each source
is decoded once for all its variants), and the caption says ``ok`` (green) when the peak
signal-to-noise ratio is at least :data:`MATCH_PSNR` dB, ``DIFF`` (red) otherwise; so a
wrong frame shows up in red at a glance.

The sheets are one set (vistest.atomic.StagedFiles): every PNG is staged beside its
destination and all are renamed into place once the last is drawn, so an interrupted or failed
``vistest sheet`` leaves the previous sheets whole (its temporary files are removed, or, after
``kill -9``, by the next ``vistest sheet``). The progress bar counts decoded frames (the source
frames compared with, then each video's shown frames): a long source video's decode advances it.

Videos longer than ``max_frames`` show ``max_frames`` positions spread as the ``uniform``
sampler spreads them (the title says so). Conventions: positions and source frames are
0-based decoded frame numbers; images are RGB.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from . import SHEET_COLUMNS, SHEET_MAX_FRAMES, SHEET_TILE_WIDTH
from .tiles import contact_sheet, png_bytes, tile
from .. import layout
from ..atomic import StagedFiles, remove_stale_tree
from ..errors import InputError
from ..videos.manifest import read_manifest

MATCH_PSNR = 30.0  # dB: a frame matches what the manifest says when at least this close (H.264, crf 18)
BLACK_MAX = 24  # RGB value a decoded "black" pixel stays under (video black is Y 16)
DEFAULT_MAX_FRAMES, DEFAULT_COLUMNS, DEFAULT_TILE_WIDTH = SHEET_MAX_FRAMES, SHEET_COLUMNS, SHEET_TILE_WIDTH
OK_RGB, DIFF_RGB = (120, 220, 120), (255, 90, 90)


@dataclass(frozen=True)
class SheetResult:
    """One written sheet: the variant's ``path`` (relative to the run folder), the sheet file,
    the positions shown and which of them did not match (``mismatched``)."""

    path: str
    sheet: Path
    positions: tuple[int, ...]
    mismatched: tuple[int, ...]


def sheet_path(sheets_dir: str | os.PathLike, variant_path: str) -> Path:
    """``SHEETS/{variant path without its suffix}.png``."""
    return Path(sheets_dir) / Path(variant_path).with_suffix(".png")


def shown_positions(num_frames: int, max_frames: int) -> tuple[int, ...]:
    """Every position, or ``max_frames`` of them spread like the ``uniform`` sampler."""
    from ..budget.sampling import select_frames

    if num_frames <= max_frames:
        return tuple(range(num_frames))
    return tuple(sorted(set(int(i) for i in select_frames("uniform", num_frames, max_frames))))


def psnr(a: np.ndarray, b: np.ndarray, keep: np.ndarray | None = None) -> float:
    """Peak signal-to-noise ratio (dB, peak 255) of two RGB frames over the ``keep`` pixels (all when None)."""
    d = (a.astype(np.float64) - b.astype(np.float64)) ** 2
    if keep is not None:
        d = d[keep]
    mse = float(d.mean()) if d.size else 0.0
    return float("inf") if mse == 0 else 10.0 * np.log10(255.0 ** 2 / mse)


def expected_match(frame: np.ndarray, source: np.ndarray | None, black: bool,
                   rects: Sequence[Sequence[float]]) -> bool:
    """Does a variant frame look like the manifest says: black, or the source frame outside
    the masked rectangles (``[x0, y0, x1, y1]`` half-open, in these frames' pixels)? Both
    frames are RGB of one size (tiles: the comparison runs at tile resolution)."""
    if black:
        return int(frame.max()) <= BLACK_MAX
    if source is None:
        return False
    h, w = source.shape[:2]
    keep = np.ones((h, w), bool)
    for x0, y0, x1, y1 in rects:
        keep[max(int(np.floor(y0)), 0):int(np.ceil(y1)), max(int(np.floor(x0)), 0):int(np.ceil(x1))] = False
    return psnr(frame[:h, :w], source, keep) >= MATCH_PSNR


def _plan(rec: dict, manifest: Path, max_frames: int) -> tuple[tuple[int, ...], list[int], set[int], dict]:
    """(positions shown, source frame of every position, black source frames, {source frame: rects})."""
    n = int(rec["num_frames"])
    src_frames = [int(f) for f in rec["source_frames"]]
    if len(src_frames) != n:
        raise InputError(f"{manifest}: {rec['path']}: source_frames: expected num_frames = {n} entries, "
                         f"got {len(src_frames)}")
    masks: dict[int, list] = {}
    for m in rec.get("masks", []):
        masks.setdefault(int(m[0]), []).append([int(v) for v in m[1:5]])
    return shown_positions(n, max_frames), src_frames, {int(f) for f in rec.get("black_frames", [])}, masks


def source_tiles(source: str | None, frames: Sequence[int], tile_width: int,
                 size: tuple[int, int] | None = None, tick: Callable[[int], None] | None = None
                 ) -> dict[int, np.ndarray]:
    """{source frame: tile} of a source video (one decode pass; empty when it is missing).
    ``size``: the variants' (W, H); the source is padded to it (odd sizes) before scaling.
    ``tick(1)``: called per frame decoded (a progress bar)."""
    from ..videos.ffmpeg import read_frames

    if not frames or not source or not Path(source).is_file():
        return {}
    out = {}
    for f, img in zip(frames, read_frames(source, frames)):
        if size is not None and (img.shape[1], img.shape[0]) != tuple(size):
            img = np.pad(img, ((0, size[1] - img.shape[0]), (0, size[0] - img.shape[1]), (0, 0)))
        out[f] = tile(img, tile_width)
        if tick is not None:
            tick(1)
    return out


def variant_sheet(run_dir: Path, rec: dict, max_frames: int = DEFAULT_MAX_FRAMES, tile_width: int = DEFAULT_TILE_WIDTH,
                  columns: int = DEFAULT_COLUMNS, sources: dict[int, np.ndarray] | None = None,
                  tick: Callable[[int], None] | None = None) -> tuple[np.ndarray, tuple[int, ...], tuple[int, ...]]:
    """(sheet RGB, positions shown, positions that do not match) of one manifest record.
    ``sources``: tiles of the source frames (:func:`source_tiles`), read here when None.
    ``tick(1)``: called per frame of the video decoded."""
    from ..videos.ffmpeg import read_frames

    positions, src_frames, black, masks = _plan(rec, layout.manifest_path(run_dir), max_frames)
    if sources is None:
        wanted = sorted({src_frames[p] for p in positions if src_frames[p] not in black})
        sources = source_tiles(rec.get("source"), wanted, tile_width, tuple(rec["size"]))
    k = tile_width / float(rec["size"][0])  # native pixels -> tile pixels
    tiles, captions, colours, bad = [], [], [], []
    for p, frame in zip(positions, read_frames(run_dir / rec["path"], positions, size=tuple(rec["size"]))):
        s = src_frames[p]
        t = tile(frame, tile_width)
        rects = [(x0 * k - 1, y0 * k - 1, x1 * k + 1, y1 * k + 1) for x0, y0, x1, y1 in masks.get(s, ())]
        ok = expected_match(t, sources.get(s), s in black, rects)
        if not ok:
            bad.append(p)
        tag = " black" if s in black else " mask" if s in masks else ""
        tiles.append(t)
        captions.append(f"{p}: src {s}{tag} " + ("ok" if ok else "DIFF"))
        colours.append(OK_RGB if ok else DIFF_RGB)
        if tick is not None:
            tick(1)
    n = int(rec["num_frames"])
    what = rec["variant"] + (f" {rec['budget']}" if rec.get("budget") is not None else "") + \
        (f" {rec['mode']}" if rec.get("mode") else "")
    shown = f"all {n} frames" if len(positions) == n else f"{len(positions)} of {n} frames (uniform spread)"
    title = f"{rec['path']}  ({what}; {shown}; position: src = source frame" + \
        (f"; removed objects {', '.join(rec['objects'])}" if rec.get("objects") else "") + \
        (f"; {len(bad)} DIFF" if bad else "") + ")"
    return contact_sheet(tiles, columns, captions, title, caption_colours=colours), positions, tuple(bad)


def write_sheets(run_dir: str | os.PathLike, sheets_dir: str | os.PathLike, scene_id: str | None = None,
                 max_frames: int = DEFAULT_MAX_FRAMES, tile_width: int = DEFAULT_TILE_WIDTH,
                 columns: int = DEFAULT_COLUMNS, progress: bool = False) -> list[SheetResult]:
    """Write a sheet for every video of ``RUN_DIR/manifest.jsonl`` (of ``scene_id`` only when
    given) into ``sheets_dir``, as one set (module docstring); returns what was written.
    ``progress``: a bar over the frames decoded, on stderr."""
    from ..progress import progress_bar

    run_dir = Path(run_dir)
    if max_frames < 1 or tile_width < 16 or columns < 1:
        raise InputError(f"--max-frames/--tile-width/--columns: expected >= 1, >= 16, >= 1, got {max_frames}, "
                         f"{tile_width}, {columns}")
    recs = [r for r in read_manifest(run_dir) if scene_id is None or r["scene_id"] == scene_id]
    manifest = layout.manifest_path(run_dir)
    if not recs:
        raise InputError(f"{manifest}: no video" + (f" of scene {scene_id!r}" if scene_id else ""))
    for rec in recs:
        if not (run_dir / rec["path"]).is_file():
            raise InputError(f"{manifest}: {rec['path']}: listed but not found at {run_dir / rec['path']}")
    by_source: dict[tuple, list[dict]] = {}
    for rec in recs:
        by_source.setdefault((rec.get("source"), tuple(rec["size"])), []).append(rec)
    plans = {id(rec): _plan(rec, manifest, max_frames) for rec in recs}
    wanted: dict[tuple, list[int]] = {}  # every source frame a group's sheets compare with: one decode pass
    for key, group in by_source.items():
        frames = set()
        for rec in group:
            positions, src_frames, black, _ = plans[id(rec)]
            frames.update(src_frames[p] for p in positions if src_frames[p] not in black)
        wanted[key] = sorted(frames) if key[0] and Path(key[0]).is_file() else []
    total = sum(len(f) for f in wanted.values()) + sum(len(plans[id(r)][0]) for r in recs)
    remove_stale_tree(sheets_dir)  # temporary files of killed `vistest sheet` commands
    out = []
    with progress_bar(total, "sheets (frames decoded)", enabled=progress) as bar, StagedFiles() as staged:
        for (source, size), group in by_source.items():
            tiles = source_tiles(source, wanted[(source, size)], tile_width, size, tick=bar.update)
            for rec in group:
                sheet, positions, bad = variant_sheet(run_dir, rec, max_frames, tile_width, columns, tiles,
                                                      tick=bar.update)
                dest = sheet_path(sheets_dir, rec["path"])
                staged.write(dest, png_bytes(sheet))
                out.append(SheetResult(rec["path"], dest, positions, bad))
    return sorted(out, key=lambda r: r.path)


