"""The common columns of table-shaped exports (``datasets`` / Arrow, TSV): one schema for every row.

Arrow infers one type per column, so a column must not mix strings and numbers across rows
(a run's ground truth may be ``"3"`` in one question and ``3.7`` in another, a ``category``
a label or a list of labels). :func:`base_record` therefore writes a fixed set of columns
with fixed types, answers as strings (:func:`vistest.eval.exporters.rundir.answer_text`), and the
run's whole record, whatever its fields and types, as JSON text in ``vistest_record``.

Columns (in this order): ``id`` (str), ``scene_id`` (str), ``num_frames`` (int, or the
string ``"all"``: uniform within one part), ``question_type`` (str), ``question`` (str),
``options`` (list of str; null for numeric types), ``ground_truth`` (str; null when
unanswerable), ``variant`` (``budget`` or ``dummy-{mode}``), ``status``, ``reason``,
``original_ground_truth`` (str), ``sampler_profile`` (str or null), ``frame_indices`` (list
of int: the source frame of each frame of the row's video, or, for an evaluator's ``all``
row, the source frames that evaluator takes), ``video_frames`` (int: frames in the video),
``evaluator`` (str or null: the evaluator configuration an ``all`` row's ground truth is
computed for; vistest.budget.evaluators), ``vistest_record`` (str: JSON).

:data:`COLUMN_TYPES` states each column's ``datasets`` type, so that a reader that infers
types (Arrow) gets the same schema in every config even where a column is null in every row
(``options`` in a config without multiple-choice rows).
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from .rundir import ExportRow, answer_text


def base_record(row: ExportRow) -> dict[str, Any]:
    """The common columns of ``row`` (module docstring)."""
    return {
        "id": row.id, "scene_id": row.scene_id, "num_frames": row.num_frames, "question_type": row.question_type,
        "question": row.question, "options": list(row.options) if row.options is not None else None,
        "ground_truth": answer_text(row.ground_truth), "variant": row.variant, "status": row.status,
        "reason": row.reason, "original_ground_truth": answer_text(row.original_ground_truth),
        "sampler_profile": row.sampler_profile, "frame_indices": list(row.frame_indices),
        "video_frames": row.video_frames, "evaluator": row.record.get("evaluator"),
        "vistest_record": json.dumps(dict(row.record), ensure_ascii=False, sort_keys=True),
    }


# the datasets feature of each column of base_record (``num_frames``: int64, or string in the
# all budget's part, where it is "all"); ("sequence", dtype) is a list of dtype
COLUMN_TYPES: dict[str, str | tuple[str, str]] = {
    "id": "string", "scene_id": "string", "num_frames": "int64", "question_type": "string", "question": "string",
    "options": ("sequence", "string"), "ground_truth": "string", "variant": "string", "status": "string",
    "reason": "string", "original_ground_truth": "string", "sampler_profile": "string",
    "frame_indices": ("sequence", "int64"), "video_frames": "int64", "evaluator": "string",
    "vistest_record": "string",
}


def features_yaml(columns: dict[str, str | tuple[str, str]], indent: str = "  ") -> list[str]:
    """The ``features:`` list of a dataset card's ``dataset_info`` (what ``datasets`` reads from
    README.md front matter) for ``columns`` {name: dtype or ("sequence", dtype)}, in order."""
    lines = [f"{indent}features:"]
    for name, t in columns.items():
        lines.append(f"{indent}- name: {json.dumps(name)}")
        lines.append(f"{indent}  {t[0]}: {t[1]}" if isinstance(t, tuple) else f"{indent}  dtype: {t}")
    return lines


def jsonl_text(records: Iterable[Mapping[str, Any]]) -> str:
    """One JSON object per line, UTF-8, keys in insertion order (a rerun writes the same bytes)."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
