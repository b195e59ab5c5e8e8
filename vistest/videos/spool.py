"""The spool: where a scene's work folder (its frame pool stream, mux lists, the source's frame
hashes) goes while its videos are written, and the check that it has room (stage 5).

The spool is ``--spool-dir``, else ``$VISTEST_SPOOL``, else the output folder. A work folder is
``.vistest-spool-{scene_id}.{rand}_{pid}_{host}`` in it (vistest.layout.SPOOL_PREFIX,
vistest.atomic.process_tag), so that a later run can tell a stale one. Sizes in bytes.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..atomic import ensure_folder, output_errors, process_tag
from ..errors import OutputError
from ..layout import SPOOL_PREFIX
from .pool import PoolPlan

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


class WorkFolder:
    """One scene's work folder in the spool ``spool``: created on first use (:meth:`path`),
    removed with everything in it by :meth:`remove`."""

    def __init__(self, spool: Path, scene_id: str):
        self.spool, self.scene_id = spool, scene_id
        self.created: Path | None = None

    def path(self) -> Path:
        """The work folder, created on first use (OutputError naming it when the disk refuses)."""
        if self.created is None:
            path = ensure_folder(self.spool, "work folder") / f"{SPOOL_PREFIX}{self.scene_id}.{process_tag()}"
            self.created = path  # registered first: an interrupted mkdir leaves nothing unknown
            with output_errors(path, "cannot create the work folder"):
                path.mkdir()
        return self.created

    def write(self, name: str, text: str) -> Path:
        """Write a small file of the work folder (OutputError naming it when the disk refuses)."""
        path = self.path() / name
        with output_errors(path):
            path.write_text(text)
        return path

    def remove(self) -> None:
        """Remove the work folder and its files (nothing when it was never created)."""
        if self.created is not None:
            shutil.rmtree(self.created, ignore_errors=True)
            self.created = None
