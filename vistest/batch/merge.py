"""One writer for the run folder's shared files: the batch's driver, once, at the end.

Tasks write only their own scene's files and record (vistest.job.SceneJob); the files every
scene shares are written here, by one process, after the tasks (and, before them, the
manifest lines of the scenes about to run are removed, so that a batch killed in between
leaves no line describing a video that may have changed):

* ``manifest.jsonl``: each finished scene's lines from its record; scenes of the batch that
  did not finish have none; lines of scenes outside the batch are kept byte for byte
  (vistest.videos.manifest.replace_scenes); the scene folder of a scene that did not finish
  (``scenes/{id}/``: visibility, budget and dummy GT; export and score take every scene folder
  as a scene of the run) is removed with its lines (:func:`retract`); its videos stay,
  unlisted, for a rerun, which keeps those that still match their content keys;
* ``failed.jsonl``: vistest.batch.failures.write_failed;
* ``index.html``: vistest.look.index.write_index, over the merged folder.

``vistest export`` and ``vistest score`` read the merged folder as they read the output of
``vistest run``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .. import layout
from ..look.index import write_index
from ..videos.manifest import replace_scenes
from .failures import write_failed


@dataclass(frozen=True)
class Merged:
    """The shared files written: ``manifest``, ``failed`` (None: no failure left), ``index``."""

    manifest: Path
    failed: Path | None
    index: Path


def forget(run_dir: str | os.PathLike, scene_ids: Iterable[str]) -> None:
    """Remove the manifest lines of the scenes about to run (before any task starts)."""
    ids = list(scene_ids)
    if ids:
        replace_scenes(run_dir, {sid: [] for sid in ids})


def retract(run_dir: str | os.PathLike, scene_id: str) -> list[Path]:
    """Remove what the pipeline writes in a scene's folder (visibility table, budget GT, dummy
    GT), and the folder when nothing else is left in it; returns the files removed."""
    folder = layout.scene_dir(run_dir, scene_id)
    gone = [p for p in sorted(folder.glob("*")) if p.is_file() and (
        p.name in (layout.VISIBILITY, layout.DUMMY_GT) or layout.budget_of_file(p.name))]
    for p in gone:
        p.unlink()
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
    return gone


def merge(run_dir: str | os.PathLike, finished: Mapping[str, Sequence[Mapping[str, Any]]], unfinished: Iterable[str],
          failed: Mapping[str, dict | None]) -> Merged:
    """Write the shared files. ``finished``: scene id -> its manifest lines, from its record
    (run now or skipped as current); ``unfinished``: ids of the batch's other scenes (failed, interrupted);
    ``failed``: ``scene_json`` -> failed.jsonl record, or None to clear the scene's line (and
    the stale lines of other paths of the batch's scenes, vistest.batch.failures)."""
    unfinished = list(unfinished)
    lines = {sid: [] for sid in unfinished}
    for sid in lines:
        retract(run_dir, sid)
    lines.update({sid: list(m) for sid, m in finished.items()})
    manifest = replace_scenes(run_dir, lines)
    return Merged(manifest, write_failed(run_dir, failed, [*finished, *unfinished]), write_index(run_dir))
