"""Staging a scene's written videos and renaming them into place together (stage 5).

Every output is written to a temporary file beside its destination (vistest.atomic) and, once
verified, *staged*: kept under its temporary name (:class:`Staging`). Nothing is renamed into
place until every output of the plan is staged; then :func:`commit_videos` renames them all
(renames in one folder tree: no copy), or :func:`discard_videos` removes them. So a failure
leaves the previous outputs as they were. Paths of variants are relative to the output folder.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from ..atomic import replace_output
from .memory import ResourcePlan


class Staging:
    """The verified outputs of one write not yet in place: ``staged`` (temporary file, variant
    path), ``written`` (variant paths) and ``encodings`` ({path: (encoding, note)})."""

    def __init__(self):
        self.staged: list[tuple[Path, str]] = []
        self.written: list[str] = []
        self.encodings: dict[str, tuple[str, str | None]] = {}
        self._lock = threading.Lock()

    def stage(self, tmp: Path, path: str, encoding: str, note: str | None = None) -> None:
        """Keep the verified output ``tmp`` of variant ``path`` under its temporary name until
        every output of the plan is (:func:`commit_videos` renames them all)."""
        with self._lock:
            self.staged.append((tmp, path))
            self.written.append(path)
            self.encodings[path] = (encoding, note)


@dataclass(frozen=True)
class WriteReport:
    """``written``/``skipped``: variant paths; ``passes``: decodes of the source (feeding
    encoders or hashing); ``seconds``: wall time; ``resources``: what
    vistest.videos.memory.plan_resources chose; ``encodings``: {path: (encoding, note)} of every
    variant, written or skipped (``stream-copy``, ``x264``, ``x264-intra``; ``note``: why
    all_frame is not a stream copy); ``frames_encoded``: frames given to libx264 (pool entries,
    long-GOP and black frames); ``staged``: (temporary file, variant path) of every written
    output not yet renamed into place (``write_plan(..., commit=False)``: :func:`commit_videos`
    or :func:`discard_videos`)."""

    written: tuple[str, ...]
    skipped: tuple[str, ...]
    passes: int
    seconds: float
    resources: ResourcePlan
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
