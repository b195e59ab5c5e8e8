"""Why a scene of a batch failed, whether that is retried, and ``RUN_DIR/failed.jsonl``.

Three kinds (:data:`KINDS`):

* ``input``: bad input (an :class:`~vistest.errors.InputError`: the scene, its questions,
  its video, an ffmpeg failure on it). The message names the file, the field and what was
  expected. Not retried: the same input fails the same way.
* ``error``: any other exception in the task: a bug in vistest. Its traceback is kept in the
  record. Not retried.
* ``infrastructure``: the task did not finish for reasons outside the scene: its worker
  process was killed (signal, out-of-memory killer), its node was lost, the cluster failed.
  Retried up to ``--retries`` times; a scene still failing after that is recorded.

``failed.jsonl`` (one writer, the batch's driver, at the end) holds one JSON object per line,
sorted by ``scene_json``: ``scene`` (name), ``scene_json``, ``questions``, ``scene_id`` (null
when scene.json has none), ``kind``, ``stage`` (vistest.pipeline.STAGES, or null), ``error``,
``attempts`` and, for ``error``, ``traceback``. Lines of scenes not in the batch are kept (a
batch over part of the scenes forgets nothing), except stale ones: a line whose ``scene_json``
no longer exists (a list corrected after naming a missing folder: nothing can rerun it), and a
line whose ``scene_id`` is the id of a scene in the batch under another path (the batch just
ran that scene: its own line, or none, is what holds). A corrected rerun thus leaves the
``failed.jsonl`` and ``index.html`` of a clean run of the corrected list.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from .. import layout
from ..atomic import write_atomic
from ..errors import InputError
from ..jsonl import iter_jsonl
from .specs import SceneSpec

INPUT, ERROR, INFRASTRUCTURE = "input", "error", "infrastructure"
KINDS = (INPUT, ERROR, INFRASTRUCTURE)


@dataclass(frozen=True)
class Failure:
    """``kind`` (:data:`KINDS`), the ``stage`` it happened in (None: before any), ``error`` (one
    message) and, for ``error``, the ``traceback``."""

    kind: str
    stage: str | None
    error: str
    traceback: str | None = None

    @property
    def retried(self) -> bool:
        """Whether a batch retries a task that failed this way (infrastructure only)."""
        return self.kind == INFRASTRUCTURE


def failure_record(spec: SceneSpec, scene_id: str | None, failure: Failure, attempts: int) -> dict:
    """The ``failed.jsonl`` line of a scene (see the module docstring)."""
    rec = {"scene": spec.name, "scene_json": str(spec.scene_json), "questions": str(spec.questions),
           "scene_id": scene_id, "kind": failure.kind, "stage": failure.stage, "error": failure.error,
           "attempts": attempts}
    if failure.traceback:
        rec["traceback"] = failure.traceback
    return rec


def write_failed(run_dir: str | os.PathLike, batch: Mapping[str, dict | None],
                 scene_ids: Iterable[str] = ()) -> Path | None:
    """Rewrite ``RUN_DIR/failed.jsonl``: for every ``scene_json`` of ``batch``, its record (None:
    the scene did not fail, its line goes); other lines are kept unless stale (module docstring:
    their scene.json is gone, or their ``scene_id`` is in ``scene_ids``, the ids of the batch's
    scenes). The file is removed when no line is left. Returns its path, or None when removed."""
    path = layout.failed_path(run_dir)
    ids = set(scene_ids)
    rows: dict[str, str] = {}
    if path.is_file():
        for _, rec in iter_jsonl(path.read_text(encoding="utf-8").splitlines(), str(path), InputError):
            key = str(rec.get("scene_json"))
            stale = not os.path.isfile(key) or (rec.get("scene_id") is not None and rec.get("scene_id") in ids)
            if key not in batch and not stale:
                rows[key] = json.dumps(rec, ensure_ascii=False, sort_keys=True)
    for key, rec in batch.items():
        if rec is not None:
            rows[key] = json.dumps(rec, ensure_ascii=False, sort_keys=True)
    if not rows:
        path.unlink(missing_ok=True)
        return None
    write_atomic(path, "".join(rows[k] + "\n" for k in sorted(rows)))
    return path
