"""STI-Bench and ReSTI question sets in, vistest question JSONL out (docs/adapters.md "Question sets").

Two layouts, each checked column by column (a missing or unknown column is refused, naming
the file and the column):

* ``sti-bench``: MINT-SJTU/STI-Bench ``qa.parquet`` (Hugging Face dataset; read as its
  ``opensource_test.py`` reads it): columns ``Source``, ``Task``, ``Video``, ``ID``,
  ``Question``, ``Candidates`` (a mapping A..E -> text, or its JSON text), ``Answer`` (a
  letter), ``Answer Detail``, ``time_start``, ``time_end`` (seconds) and ``scene`` (the real
  rows' name; the script reads ``entry.get("scene") or entry.get("Scene")``, and so does this
  reader); ``QType`` and ``Prompt`` are accepted too (ReSTI says its schema retains the original
  columns, and it has them). Parquet needs pyarrow (``pip install 'vistest[sti-bench]'``); a
  ``.jsonl`` file with the same columns is read too.
* ``resti``: the ReSTI annotation JSONL (pengzhansun/ReSTI ``annotations/resti.jsonl``, its
  ``docs/data_format.md``): ``ReSTI ID``, ``Legacy Row Key``, ``Video``, ``Source``, ``Task``,
  ``QType``, ``Question``, ``Prompt``, ``time_start``, ``time_end``, ``Candidates``,
  ``Answer``, ``Answer Detail``, ``ID``, ``scene``; or ``resti.parquet`` (same columns). An
  exclusion record (``excluded.jsonl``: ``key``, ``reason_codes``, ...) is refused as such.

Each row becomes one question (vistest.questions): ``id`` (STI-Bench: ``{video stem}:{ID}``;
ReSTI: its ``ReSTI ID``), ``scene_id`` (the video's file name without extension),
``question_type`` (``sti_*``, vistest.questions.STI_TASKS: one type per task, the task name kept
in ``task``), ``question`` (the row's text; the client's "From {ts} s to {te} s." prefix is
not added), ``options`` (``"A. text"`` .. ``"E. text"``), ``ground_truth`` (the letter),
``time_start``/``time_end`` (seconds, carried as given; ``time`` too when they are equal: an
instant; a Speed & Acceleration instant also ``instant_quantity``, ``instant_speed`` or
``instant_acceleration`` as its wording says, vistest.questions.instant_quantity: the budget stage
measures it between that quantity's anchors), and, kept for the record: ``benchmark``,
``dataset`` (``Source``: ScanNet, Waymo, Omni6DPose; the rank-attack cells split by it), ``video``,
``legacy_id``, ``scene_kind``, ``answer_detail``, ``qtype`` and ``prompt`` where given, and for ReSTI
``legacy_row_key``.

Two rows with the same id (STI-Bench: Omni6DPose ``000070.mp4`` has two rows with ID 2, a
speed and an acceleration question) get ``{id}:row{n}`` (n the 0-based row number) and a
warning. Rows whose ``Answer Detail`` differs from ``Candidates[Answer]`` are counted in a
warning (the legacy file has such rows; the answer letter is what is scored).
"""
from __future__ import annotations

import json
import math
import os
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from ..atomic import write_atomic
from ..errors import InputError
from ..questions import (INSTANT_QUANTITY_FIELD, MAX_TIME_S, STI_SPEED_ACCELERATION, STI_TASKS, instant_quantity,
                         parse_questions)
from ..scene import check_scene_id
from .registry import Importer

STI_BENCH, RESTI = "sti-bench", "resti"
LETTERS = ("A", "B", "C", "D", "E")
# the real rows name it scene; opensource_test.py reads entry.get("scene") or entry.get("Scene")
SCENE_COLUMNS = ("scene", "Scene")
COLUMNS: dict[str, tuple[str, ...]] = {
    STI_BENCH: ("Source", "Task", "Video", "ID", "Question", "Candidates", "Answer", "Answer Detail", "time_start",
                "time_end"),
    RESTI: ("ReSTI ID", "Legacy Row Key", "Video", "Source", "Task", "QType", "Question", "Prompt", "time_start",
            "time_end", "Candidates", "Answer", "Answer Detail", "ID"),
}
# columns a layout accepts without requiring them: ReSTI's data_format.md says its schema "retains the original
# STI-Bench columns", which include QType and Prompt; the STI-Bench column list vistest was given does not name them
OPTIONAL_COLUMNS: dict[str, tuple[str, ...]] = {STI_BENCH: ("QType", "Prompt"), RESTI: ()}
EXCLUSION_COLUMNS = ("key", "reason_codes")  # ReSTI excluded.jsonl
QUESTIONS_FILE = "questions.jsonl"
REPORT_FILE = "import_report.json"
BY_SCENE = "by_scene"


class QuestionSetError(InputError):
    """A question set that cannot be imported; the message names the file, row and column."""


@dataclass(frozen=True)
class ImportedSet:
    """The questions of one file (JSON objects in row order) and what to know about them."""

    layout: str
    source: str
    questions: tuple[dict, ...]
    warnings: tuple[str, ...]

    def report(self) -> dict:
        """Counts per task and per source dataset, and the warnings (``import_report.json``)."""
        return {"layout": self.layout, "source": self.source, "questions": len(self.questions),
                "per_task": dict(sorted(Counter(q["task"] for q in self.questions).items())),
                "per_dataset": dict(sorted(Counter(q["dataset"] for q in self.questions).items())),
                "scenes": len({q["scene_id"] for q in self.questions}), "warnings": list(self.warnings)}


# ---------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------
def read_table(path: Path) -> list[tuple[str, Any]]:
    """(where, row) of every row of a ``.parquet`` (pyarrow) or JSON-lines file."""
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise QuestionSetError(f"{path}: reading parquet needs pyarrow: pip install 'vistest[sti-bench]' "
                                   f"(or give the JSONL file)") from None
        try:
            rows = pq.read_table(path).to_pylist()
        except (OSError, ValueError) as e:
            raise QuestionSetError(f"{path}: not a readable parquet file: {e}") from None
        return [(f"{path}: row {i}", r) for i, r in enumerate(rows)]
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise QuestionSetError(f"{path}: cannot read: {e}") from None
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((f"{path}:{n}", json.loads(line)))
        except json.JSONDecodeError as e:
            raise QuestionSetError(f"{path}:{n}: not JSON: {e.msg}") from None
    return out


def check_columns(layout: str, where: str, row: Any) -> str:
    """The row's scene column after checking that its columns are exactly the layout's."""
    if not isinstance(row, dict):
        raise QuestionSetError(f"{where}: expected an object with the {layout} columns, got {type(row).__name__}")
    if all(c in row for c in EXCLUSION_COLUMNS):
        raise QuestionSetError(f"{where}: a ReSTI exclusion record (columns {', '.join(EXCLUSION_COLUMNS)}), not a "
                               f"question: import annotations/resti.jsonl")
    want = COLUMNS[layout]
    missing = [c for c in want if c not in row]
    scene = [c for c in SCENE_COLUMNS if c in row]
    if not scene:
        missing.append(SCENE_COLUMNS[0])
    if missing:
        raise QuestionSetError(f"{where}: missing column(s) {', '.join(missing)} of the {layout} layout "
                               f"(expected {', '.join(want)} and scene or Scene)")
    unknown = [c for c in row if c not in want and c not in SCENE_COLUMNS and c not in OPTIONAL_COLUMNS[layout]]
    if unknown or len(scene) > 1:
        raise QuestionSetError(f"{where}: unknown column(s) {', '.join(unknown or scene)} for the {layout} layout "
                               f"(expected {', '.join(want)} and scene or Scene): another layout?")
    return scene[0]


def _text(v: Any, where: str, col: str) -> str:
    if not isinstance(v, str) or not v.strip():
        raise QuestionSetError(f"{where}: {col}: expected a non-empty string, got {v!r}")
    return v


def _seconds(v: Any, where: str, col: str) -> float:
    x = v
    if isinstance(v, str):
        try:
            x = float(v)
        except ValueError:
            x = None
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 <= x <= MAX_TIME_S:
        raise QuestionSetError(f"{where}: {col}: expected seconds (a number in 0..{MAX_TIME_S:.0f}), got {v!r}")
    return float(x)


def _plain(v: Any, where: str, col: str) -> Any:
    """A column kept as it is (``Answer Detail``, the scene kind, ``QType``, ``Prompt``): text, a
    finite number, true/false or null (what JSON can hold); bytes, NaN and other values are refused."""
    if v is None or isinstance(v, (str, bool, int)) or (isinstance(v, float) and math.isfinite(v)):
        return v
    raise QuestionSetError(f"{where}: {col}: expected text, a finite number or null, got {v!r}")


def _legacy_id(v: Any, where: str) -> int:
    if isinstance(v, str) and v.strip().isdigit():
        return int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise QuestionSetError(f"{where}: ID: expected an integer, got {v!r}")
    return int(v)


def _candidates(v: Any, where: str) -> dict[str, str]:
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except json.JSONDecodeError:
            raise QuestionSetError(f"{where}: Candidates: expected a mapping A..E -> text (or its JSON), got "
                                   f"{v[:60]!r}") from None
    if not isinstance(v, dict) or sorted(v) != list(LETTERS):
        raise QuestionSetError(f"{where}: Candidates: expected the five keys {', '.join(LETTERS)}, got "
                               f"{sorted(v) if isinstance(v, dict) else v!r}")
    out = {}
    for k in LETTERS:
        if isinstance(v[k], (int, float)) and not isinstance(v[k], bool):
            v[k] = str(v[k])
        out[k] = _text(v[k], where, f"Candidates.{k}")
    return out


def convert_row(layout: str, where: str, row: dict) -> dict:
    """One row as a vistest question (module docstring)."""
    scene_col = check_columns(layout, where, row)
    video = _text(row["Video"], where, "Video")
    task = _text(row["Task"], where, "Task")
    if task not in STI_TASKS:
        raise QuestionSetError(f"{where}: Task: unknown task {task!r}; expected one of {', '.join(STI_TASKS)}")
    cands = _candidates(row["Candidates"], where)
    answer = row["Answer"]
    if answer not in LETTERS:
        raise QuestionSetError(f"{where}: Answer: expected one of {', '.join(LETTERS)}, got {answer!r}")
    ts, te = _seconds(row["time_start"], where, "time_start"), _seconds(row["time_end"], where, "time_end")
    if ts > te:
        raise QuestionSetError(f"{where}: time_end: expected time_start <= time_end, got {ts!r} > {te!r}")
    legacy = _legacy_id(row["ID"], where)
    stem = Path(video).stem
    try:
        check_scene_id(stem, f"{where}: Video {video!r}")
    except InputError as e:
        raise QuestionSetError(str(e)) from None
    qid = _text(row["ReSTI ID"], where, "ReSTI ID") if layout == RESTI else f"{stem}:{legacy}"
    q: dict[str, Any] = {
        "id": qid, "scene_id": stem, "question_type": STI_TASKS[task][0],
        "question": _text(row["Question"], where, "Question"),
        "options": [f"{k}. {cands[k]}" for k in LETTERS], "ground_truth": answer,
        "time_start": ts, "time_end": te}
    if ts == te:
        q["time"] = ts
        if q["question_type"] == STI_SPEED_ACCELERATION:  # which quantity the instant asks: its anchors differ
            quantity, _ = instant_quantity(q)
            if quantity is not None:
                q[INSTANT_QUANTITY_FIELD] = quantity
    q.update(benchmark="ReSTI" if layout == RESTI else "STI-Bench", task=task,
             dataset=_text(row["Source"], where, "Source"), video=video, legacy_id=legacy,
             scene_kind=_plain(row[scene_col], where, scene_col),
             answer_detail=_plain(row["Answer Detail"], where, "Answer Detail"))
    if layout == RESTI:
        q["legacy_row_key"] = _text(row["Legacy Row Key"], where, "Legacy Row Key")
    for col, key in (("QType", "qtype"), ("Prompt", "prompt")):
        if col in row:
            q[key] = _plain(row[col], where, col)
    return q


def _unique_ids(questions: list[dict], wheres: list[str], path: Path) -> list[str]:
    """Make colliding ids unique (``{id}:row{n}``, n the 0-based row number); one warning per id.
    A new id that another row already has is an error naming both rows."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(questions):
        groups[q["id"]].append(i)
    warnings = []
    for qid, rows in groups.items():
        if len(rows) < 2:
            continue
        new = []
        for i in rows:
            made = f"{qid}:row{i}"
            if made in groups:
                col = "ReSTI ID" if questions[i]["benchmark"] == "ReSTI" else "ID"
                raise QuestionSetError(f"{wheres[i]}: {col}: id {qid!r} repeats ({len(rows)} rows), and its unique "
                                       f"form {made!r} is the id of {wheres[groups[made][0]]}; expected unique ids")
            questions[i]["id"] = made
            new.append(f"{questions[i]['id']} ({wheres[i].rsplit(': ', 1)[-1]}: {questions[i]['task']}: "
                       f"{questions[i]['question'][:60]!r})")
        warnings.append(f"{path}: id {qid!r} (video {questions[rows[0]]['video']}, legacy ID "
                        f"{questions[rows[0]]['legacy_id']}) names {len(rows)} rows; made unique: {'; '.join(new)}")
    return warnings


def import_question_set(layout: str, path: str | os.PathLike) -> ImportedSet:
    """Read one STI-Bench or ReSTI file (module docstring); QuestionSetError on a bad file."""
    if layout not in COLUMNS:
        raise QuestionSetError(f"question set: expected one of {', '.join(COLUMNS)}, got {layout!r}")
    path = Path(path)
    rows = read_table(path)
    if not rows:
        raise QuestionSetError(f"{path}: no rows")
    questions = [convert_row(layout, where, row) for where, row in rows]
    warnings = _unique_ids(questions, [w for w, _ in rows], path)
    unnamed = [q["id"] for q in questions if q["question_type"] == STI_SPEED_ACCELERATION and "time" in q
               and INSTANT_QUANTITY_FIELD not in q]
    if unnamed:
        warnings.append(f"{path}: {len(unnamed)} Speed & Acceleration row(s) asked at an instant name neither a speed "
                        f"nor an acceleration ({', '.join(unnamed[:4])}{' ...' if len(unnamed) > 4 else ''}): judged "
                        f"by the instant rule, not by anchors (add instant_quantity to their questions)")
    detail = sum(1 for q in questions if q["answer_detail"] != q["options"][LETTERS.index(q["ground_truth"])][3:])
    if detail:
        warnings.append(f"{path}: {detail} of {len(questions)} rows have an Answer Detail that differs from "
                        f"Candidates[Answer] (kept as answer_detail; the letter is the ground truth)")
    # the importer writes valid questions: check them as `vistest budget` will read them
    parse_questions([json.dumps(q, ensure_ascii=False) for q in questions], source=str(path))
    return ImportedSet(layout, str(path), tuple(questions), tuple(warnings))


def write_question_set(imported: ImportedSet, outdir: str | os.PathLike) -> Path:
    """``OUTDIR/questions.jsonl`` (every question, row order), ``OUTDIR/by_scene/{scene_id}.jsonl``
    (one file per video, for ``vistest run SCENE QUESTIONS``) and ``OUTDIR/import_report.json``,
    each written atomically. Returns the path of questions.jsonl."""
    outdir = Path(outdir)
    by_scene: dict[str, list[str]] = defaultdict(list)
    lines = []
    for q in imported.questions:
        line = json.dumps(q, ensure_ascii=False) + "\n"
        lines.append(line)
        by_scene[q["scene_id"]].append(line)
    for scene_id, part in sorted(by_scene.items()):
        write_atomic(outdir / BY_SCENE / f"{scene_id}.jsonl", "".join(part))
    write_atomic(outdir / REPORT_FILE, json.dumps(imported.report(), indent=2, ensure_ascii=False) + "\n")
    path = outdir / QUESTIONS_FILE
    write_atomic(path, "".join(lines))
    return path


# `vistest import sti-bench|resti PATH -o OUTPUT` (vistest.datasets.registry): ``read(path) -> ImportedSet``; the
# command writes OUTPUT/questions.jsonl, by_scene/, import_report.json (write_question_set)
IMPORTERS = (Importer(STI_BENCH, "STI-Bench (MINT-SJTU/STI-Bench)", "question-set", "qa.parquet",
                      read=partial(import_question_set, STI_BENCH)),
             Importer(RESTI, "ReSTI (pengzhansun/ReSTI)", "question-set", "annotations/resti.jsonl or resti.parquet",
                      read=partial(import_question_set, RESTI)))
