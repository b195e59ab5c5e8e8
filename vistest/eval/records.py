"""Scoring records: the ground truth of a run folder and a model's predictions, validated.

* **Ground truth** as vistest.budget.rows.TruthRow records (the one row schema the budget and
  dummy stages write), one per (question ``id``, ``variant``, ``budget``). Real videos have
  ``variant == "budget"`` (:data:`REAL_VARIANT`) and come from the ``{budget}_frame.jsonl``
  files ``vistest budget`` writes; dummy videos (evidence removed) have a variant starting with
  ``"dummy"`` (``"dummy"``, ``"dummy-drop"`` …) and come from ``dummy_gt.jsonl``
  (:data:`DUMMY_GT_FILE`). :func:`load_run_dir` reads both, for one scene folder or a whole
  ``vistest run`` output folder.
* **Predictions** as :class:`Prediction` records with the same key, read from a plain JSONL
  (``id``, ``variant``, ``budget``, ``prediction``) or from the per-sample JSONL lmms-eval
  writes with ``--log_samples`` (:func:`load_predictions` tells them apart).

Conventions (docs/scoring.md has the field tables):

* Budgets are labels: ``"16"``, ``"32"``, ``"all"`` (vistest.budgets.Budget.label); they sort
  numerically with ``"all"`` last (vistest.budgets.budget_sort_key).
* A row is *answerable* when its status is ``kept`` or ``changed``; *scorable* when it is an
  answerable real row whose ground truth lmms-eval's rules can score (vistest.answers).
  Rows whose evidence was removed (every dummy row, real rows that are ``unanswerable``, and
  ``unsupported`` rows: a reformulated question answered "Cannot be determined from the video"
  or "None of these" because its frames support no answer) are scored for hallucination
  (vistest.eval.metrics); an unsupported real row is scored for accuracy as well.
* Reformulated questions (vistest/reformulate.py) carry ``group_id``, ``reformulation``,
  ``shift``, ``answer_kind`` and ``accepts_abstention``; rows without them are base questions
  of their own group.
* ``source``/``line`` (1-based) locate every record for messages.

Errors are :class:`ScoreError` (a vistest.errors.InputError) naming file, line, field and what
was expected (a ground-truth row: vistest.budget.rows.TruthRow.from_json, raising ScoreError).
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import layout
from ..budget.rows import DUMMY_PREFIX, REAL_VARIANT, Keyed, TruthRow, budget_field, ident, variant_field
from ..budgets import FOLDER_PATTERN, budget_json, budget_sort_key
from ..errors import InputError
from ..jsonl import iter_jsonl as _iter_jsonl
from ..jsonl import read_text

DUMMY_GT_FILE = layout.DUMMY_GT

_TASK_FROM_LOG_RE = re.compile(r"_samples_(?P<task>.+)\.jsonl$")
_TASK_BUDGET_RE = re.compile(rf"(?:^|_){FOLDER_PATTERN}(?:_|$)")


class ScoreError(InputError):
    """Invalid scoring input; the message names file, line, field and the expectation."""


def _fail(where: str, fld: str, msg: str) -> ScoreError:
    return ScoreError(f"{where}: {fld}: {msg}")


@dataclass(frozen=True)
class Prediction(Keyed):
    """A model's answer to one (question, variant, budget).

    ``prediction``: the response text lmms-eval would pass to ``process_results``.
    ``logged_score`` / ``logged_ground_truth``: what an lmms-eval log recorded for the row
    (its ``acc`` / ``accuracy`` / ``MRA:.5:.95:.05`` and the doc's ``ground_truth``), None for
    plain predictions; vistest.eval.metrics.lmms_eval_check compares them with vistest's scores.
    """

    id: str
    variant: str
    budget: str
    prediction: str
    source: str = "<predictions>"
    line: int = 0
    logged_score: float | None = None
    logged_ground_truth: Any = None


# =======================================================================================
# reading
# =======================================================================================
def _read_lines(path: Path) -> list[str]:
    return read_text(path, ScoreError, "file").splitlines()


def iter_jsonl(lines: Iterable[str], source: str) -> Iterator[tuple[int, dict]]:
    """(1-based line, object) for each non-blank line; a line that is not a JSON object raises ScoreError."""
    return _iter_jsonl(lines, source, ScoreError)


def check_unique(records: Sequence[Any], what: str) -> None:
    """Raise when two records share a key, naming both places."""
    first: dict[tuple, Any] = {}
    for r in records:
        if r.key in first:
            raise _fail(r.where, "id", f"duplicate {what} for id {r.key[0]!r}, variant {r.key[1]!r}, budget "
                                       f"{r.key[2]!r} (also {first[r.key].where})")
        first[r.key] = r


def load_budget_file(path: str | os.PathLike) -> tuple[TruthRow, ...]:
    """The real-variant truths of one ``{budget}_frame.jsonl``; each record's ``num_frames``
    must match the file name."""
    path = Path(path)
    label = layout.budget_of_file(path.name)
    out = []
    for line, doc in iter_jsonl(_read_lines(path), str(path)):
        t = TruthRow.from_json(doc, str(path), line, REAL_VARIANT, ScoreError)
        if label and t.budget != label:
            raise _fail(t.where, "num_frames", f"expected {budget_json(label)!r} (the file is {path.name}), "
                                               f"got {budget_json(t.budget)!r}")
        out.append(t)
    return tuple(out)


def load_dummy_truth(path: str | os.PathLike) -> tuple[TruthRow, ...]:
    """The dummy truths of a ``dummy_gt.jsonl`` (every record names its dummy ``variant``)."""
    path = Path(path)
    out = []
    for line, doc in iter_jsonl(_read_lines(path), str(path)):
        t = TruthRow.from_json(doc, str(path), line, error=ScoreError)
        if not t.is_dummy:
            raise _fail(t.where, "variant", f"expected a dummy variant (starting with {DUMMY_PREFIX!r}), got "
                                            f"{t.variant!r}")
        out.append(t)
    return tuple(out)


@dataclass(frozen=True)
class RunTruth:
    """Every truth of a run directory and the files they came from."""

    truths: tuple[TruthRow, ...]
    files: tuple[str, ...]


def budget_files(run_dir: str | os.PathLike) -> list[Path]:
    """``RUN_DIR/{budget}_frame.jsonl`` (or, when none, ``RUN_DIR/budget/{budget}_frame.jsonl``),
    in budget order."""
    run_dir = Path(run_dir)
    for folder in (run_dir, run_dir / layout.BUDGET_DIR):
        found = [p for p in folder.glob("*_frame.jsonl") if layout.budget_of_file(p.name)] if folder.is_dir() else []
        if found:
            return sorted(found, key=lambda p: budget_sort_key(layout.budget_of_file(p.name)))
    return []


def load_run_dir(run_dir: str | os.PathLike) -> RunTruth:
    """The ground truth of a run directory: every ``{budget}_frame.jsonl`` written by
    ``vistest budget`` plus, when present, ``dummy_gt.jsonl`` beside them. The output folder
    of ``vistest run`` (``scenes/{scene_id}/`` holding those files) gives every scene's rows;
    question ids must then be unique across scenes."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ScoreError(f"{run_dir}: run directory: not a folder")
    scenes = sorted(p for p in (run_dir / layout.SCENES_DIR).glob("*") if p.is_dir() and budget_files(p))
    if scenes and not budget_files(run_dir):
        parts = [load_run_dir(p) for p in scenes]
        truths = [t for part in parts for t in part.truths]
        check_unique(truths, "ground truth (question ids must be unique across the run's scenes)")
        return RunTruth(tuple(truths), tuple(f for part in parts for f in part.files))
    files = budget_files(run_dir)
    if not files:
        raise ScoreError(f"{run_dir}: run directory: expected {{budget}}_frame.jsonl files (the output folder of "
                         f"'vistest budget'), found none here or in {run_dir / 'budget'}")
    truths: list[TruthRow] = [t for p in files for t in load_budget_file(p)]
    dummy = files[0].parent / DUMMY_GT_FILE
    if dummy.is_file():
        files.append(dummy)
        truths.extend(load_dummy_truth(dummy))
    check_unique(truths, "ground truth")
    return RunTruth(tuple(truths), tuple(str(p) for p in files))


# ---- predictions ----------------------------------------------------------------------
def _prediction_text(v: Any, where: str, fld: str) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    raise _fail(where, fld, f"expected the model's response (a string), got {v!r}")


def parse_plain_predictions(lines: Iterable[str], source: str) -> tuple[Prediction, ...]:
    """Plain JSONL: ``id``, ``budget`` (or ``num_frames``), ``prediction`` (a string; a
    number is taken as its ``str``), ``variant`` (default ``"budget"``). Other fields ignored."""
    out = []
    for line, doc in iter_jsonl(lines, source):
        where = f"{source}:{line}"
        if "id" not in doc:
            raise _fail(where, "id", "missing required field")
        bkey = "budget" if "budget" in doc else "num_frames"
        if bkey not in doc:
            raise _fail(where, "budget", "missing required field (the frame budget: an integer or 'all')")
        if "prediction" not in doc:
            raise _fail(where, "prediction", "missing required field (the model's response)")
        out.append(Prediction(ident(doc["id"], where, "id", ScoreError),
                              variant_field(doc.get("variant", REAL_VARIANT), where, error=ScoreError),
                              budget_field(doc[bkey], where, bkey, ScoreError),
                              _prediction_text(doc["prediction"], where, "prediction"), source, line))
    return tuple(out)


def _first_response(v: Any, where: str) -> str:
    """The response lmms-eval scores: ``filtered_resps`` is a string (v0.7 flattening) or a
    list per request (earlier); the first request's first response is ``results[0]``."""
    while isinstance(v, list) and v:
        v = v[0]
    if not isinstance(v, str):
        raise _fail(where, "filtered_resps", f"expected a generate_until response (a string or a list whose first "
                                             f"element is one), got {v!r}")
    return v


def _logged_doc(doc: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The dataset row of a log line: ``doc`` (lmms-eval < 0.4), else the first per-metric field
    holding a dict with ``question_type`` (revsi and vsibench return the doc as every metric)."""
    if isinstance(doc.get("doc"), dict):
        return doc["doc"]
    for v in doc.values():
        if isinstance(v, dict) and "question_type" in v:
            return v
    return None


def _logged_score(d: Mapping[str, Any]) -> float | None:
    for key in ("acc", "accuracy", "MRA:.5:.95:.05"):
        v = d.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    return None


def parse_log_samples(lines: Iterable[str], source: str) -> tuple[Prediction, ...]:
    """lmms-eval ``--log_samples`` JSONL (``{date}_samples_{task}.jsonl``): the response is the
    first of ``filtered_resps``; ``id``, ``variant`` (default ``"budget"``) and ``budget`` (else
    ``num_frames``, else the ``{budget}_frame`` in the task name) come from the logged doc."""
    m = _TASK_FROM_LOG_RE.search(Path(source).name)
    tb = _TASK_BUDGET_RE.search(m.group("task")) if m else None
    out = []
    for line, doc in iter_jsonl(lines, source):
        where = f"{source}:{line}"
        if "filtered_resps" not in doc:
            raise _fail(where, "filtered_resps", "missing (expected an lmms-eval --log_samples line)")
        text = _first_response(doc["filtered_resps"], where)
        d = _logged_doc(doc)
        if d is None:
            raise _fail(where, "doc", "no logged dataset row: expected a 'doc' field or a per-metric field holding "
                                      "the doc with 'question_type' (as lmms-eval's revsi and vsibench tasks log)")
        if "id" not in d:
            raise _fail(where, "doc.id", "missing: the exported rows must carry vistest's question 'id'")
        if "budget" in d or "num_frames" in d:
            bkey = "budget" if "budget" in d else "num_frames"
            budget = budget_field(d[bkey], where, f"doc.{bkey}", ScoreError)
        elif tb:
            budget = budget_field(tb.group(1), where, "task name", ScoreError)
        else:
            raise _fail(where, "doc.num_frames", "missing, and the file name names no {budget}_frame task")
        variant = variant_field(d.get("variant", REAL_VARIANT), where, "doc.variant", ScoreError)
        out.append(Prediction(ident(d["id"], where, "doc.id", ScoreError), variant, budget, text, source, line,
                              _logged_score(d), d.get("ground_truth")))
    return tuple(out)


def is_log_samples(doc: Mapping[str, Any]) -> bool:
    """A line lmms-eval wrote with --log_samples (it has ``doc_id`` and ``filtered_resps``)."""
    return "filtered_resps" in doc and "doc_id" in doc


def load_predictions(path: str | os.PathLike) -> tuple[Prediction, ...]:
    """Predictions from one file, plain or lmms-eval log samples (told by the first line)."""
    path = Path(path)
    lines = _read_lines(path)
    first = next(iter_jsonl(lines, str(path)), None)
    if first is not None and is_log_samples(first[1]):
        return parse_log_samples(lines, str(path))
    return parse_plain_predictions(lines, str(path))


def prediction_files(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Files as given; a folder stands for every ``*.jsonl`` under it (sorted)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(p.rglob("*.jsonl"))
            if not found:
                raise ScoreError(f"{p}: predictions: expected .jsonl files in this folder, found none")
            out.extend(found)
        elif p.is_file():
            out.append(p)
        else:
            raise ScoreError(f"{p}: predictions: no such file or folder")
    return out
