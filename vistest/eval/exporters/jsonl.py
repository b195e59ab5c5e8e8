"""``vistest export jsonl``: every (question, variant, budget) of a run as one JSON line.

Written (``OUT``)::

    vistest.jsonl          one line per row: real rows of every status, then dummy rows
    vistest_export.json    the record

Each line is the run's own record (the question's fields, the budget or dummy ground truth:
docs/questions-format.md, docs/videos.md) with these fields set:

* ``variant``: ``budget`` (the budget video) or ``dummy-{mode}``;
* ``budget``: the frame budget (as ``num_frames``: an integer or ``"all"``);
* ``ground_truth``, ``status``, ``reason``: what the video supports (null when ``unanswerable``);
* ``video``: absolute path of the video (null: a dummy left with no frame); ``video_relpath``:
  the same, relative to the run directory; ``video_frames``: frames in the video;
* ``frame_indices``: the source frame of each frame of the video, in order; ``black_frames``:
  source frames written black (dummies);
* ``provenance``: ``run_dir``, ``scene_id``, ``source_video`` and ``source_key`` (sha256 of
  its bytes), ``video_key`` (the video's content key), ``sampler_profile``,
  ``seen_threshold``, ``seen_rule``, ``min_budget_room_route``, ``evidence_threshold`` (null where the run
  directory does not record them), ``rules``: the rules versions the run's ground truth and videos were made
  under (vistest.freshness; an export refuses a run made under others).

Nothing is left out: a consumer filters on ``status`` and ``video``.
"""
from __future__ import annotations

from pathlib import Path

from ... import freshness
from .output import ExportResult, OutputFolder, Part
from .columns import jsonl_text
from .rundir import ExportRow, RunData

FILE = "vistest.jsonl"
_THRESHOLDS = ("seen_threshold", "seen_rule", "min_budget_room_route", "evidence_threshold")


def provenance(run: RunData, row: ExportRow) -> dict:
    """Where a row comes from (see the module docstring's table)."""
    entry = run.videos.get(row.video) if row.video else None
    out = {"run_dir": str(run.root), "scene_id": row.scene_id,
           "source_video": entry.source if entry else None, "source_key": entry.source_key if entry else None,
           "video_key": entry.key if entry else None,
           "sampler_profile": row.sampler_profile or run.profile(row.scene_id)}
    out.update({k: row.record.get(k) for k in _THRESHOLDS})
    out["rules"] = freshness.stamp("export")
    return out


def jsonl_record(run: RunData, row: ExportRow) -> dict:
    """One line: the run's record, then the export's fields."""
    rec = dict(row.record)
    entry = run.videos.get(row.video) if row.video else None
    rec.update({
        "variant": row.variant, "budget": row.num_frames, "ground_truth": row.ground_truth, "status": row.status,
        "reason": row.reason, "video": str(run.video_abspath(row.video)) if row.video else None,
        "video_relpath": row.video, "video_frames": row.video_frames, "frame_indices": list(row.frame_indices),
        "black_frames": list(entry.black_frames) if entry else [], "provenance": provenance(run, row),
    })
    return rec


def write(run: RunData, out: str | Path, **_) -> ExportResult:
    """Export ``run`` to ``out/vistest.jsonl`` (module docstring)."""
    folder = OutputFolder(out, "jsonl", run.root)
    folder.text(FILE, jsonl_text(jsonl_record(run, r) for r in run.rows))
    return folder.finish([Part("vistest", FILE, len(run.rows))], [], run.warnings, run.export_info())
