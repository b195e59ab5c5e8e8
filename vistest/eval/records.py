"""Scoring records: the ground truth of a run folder and a model's predictions, validated.

* **Ground truth** as :class:`Truth` records, one per (question ``id``, ``variant``,
  ``budget``). Real videos have ``variant == "budget"`` (:data:`REAL_VARIANT`) and come from
  the ``{budget}_frame.jsonl`` files ``vistest budget`` writes; dummy videos (evidence
  removed) have a variant starting with ``"dummy"`` (``"dummy"``, ``"dummy-drop"`` …) and come
  from ``dummy_gt.jsonl`` (:data:`DUMMY_GT_FILE`). :func:`load_run_dir` reads both, for one
  scene folder or a whole ``vistest run`` output folder.
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
was expected.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import layout
from ..budget.truth import STATUSES, UNANSWERABLE
from ..errors import InputError
from ..jsonl import iter_jsonl as _iter_jsonl
from ..jsonl import read_text
from ..questions import ANSWER_MCQ, ANSWER_NUMBER, ANSWER_TEXT, QUESTION_TYPES, RULE_COUNTING
from ..answers import BASE, REFORMULATIONS, abstain_letter, ground_truth_number, is_abstain_answer, option_letters
from ..budgets import FOLDER_PATTERN, Budget, budget_json, budget_sort_key

REAL_VARIANT = "budget"
DUMMY_PREFIX = "dummy"
DUMMY_GT_FILE = layout.DUMMY_GT

_TASK_FROM_LOG_RE = re.compile(r"_samples_(?P<task>.+)\.jsonl$")
_TASK_BUDGET_RE = re.compile(rf"(?:^|_){FOLDER_PATTERN}(?:_|$)")
# VSI-Bench size template: "... longest dimension (length, width, or height) of the bed, measured in
# centimeters?": the label is the last "of the X" that ends at a comma, "?", "(" or the end
_SIZE_LABEL_RE = re.compile(r"\bof the ([^,?()]+?)\s*(?:,|\?|\(|$)")


class ScoreError(InputError):
    """Invalid scoring input; the message names file, line, field and the expectation."""


def _fail(where: str, fld: str, msg: str) -> ScoreError:
    return ScoreError(f"{where}: {fld}: {msg}")


# =======================================================================================
# records
# =======================================================================================
class _Keyed:
    """Shared by Truth and Prediction: rows match on ``key`` = (id, variant, budget);
    ``where`` = ``source:line`` (1-based) for messages."""

    id: str
    variant: str
    budget: str
    source: str
    line: int

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.id, self.variant, self.budget)

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"


@dataclass(frozen=True)
class Truth(_Keyed):
    """The ground truth of one (question, variant, budget).

    ``ground_truth``: an option letter (MCQ) or a number / numeric string; None when the row
    is unanswerable. ``options``: the MCQ options (``"A. text"``), None for numeric types.
    ``label``: the object category of a size question (for the category-mean size prior),
    None when unknown. ``group``: the benchmark's source dataset (``dataset`` field, e.g.
    ``scannet``), "" when absent; it splits rank-attack cells as the ReSTI audit does.
    ``source``/``line`` locate the record (1-based line).

    ``scene_id`` and ``question`` (the text) feed the held-out blind baselines (folds by scene)
    and the learned blind model. Reformulations: ``group_id`` (the base question's id; the
    row's own id when absent), ``reformulation`` (``base`` when absent), ``shift``
    (circular), ``answer_kind`` (``text`` / ``number`` for a multiple-choice type asked
    without options), ``accepts_abstention``, ``unsupported`` (the frames support no answer;
    the ground truth is the one the question offers for that), ``skipped_variants`` (a base
    row: (variant, why) of each variant vistest reformulate did not write).
    """

    id: str
    variant: str
    budget: str
    question_type: str
    ground_truth: Any
    status: str
    options: tuple[str, ...] | None = None
    label: str | None = None
    group: str = ""
    source: str = "<truth>"
    line: int = 0
    scene_id: str = ""
    question: str = ""
    group_id: str = ""
    reformulation: str = BASE
    shift: int | None = None
    answer_kind: str | None = None
    accepts_abstention: bool = False
    unsupported: bool = False
    skipped_variants: tuple[tuple[str, str], ...] = ()

    @property
    def kind(self) -> str:
        """``"mcq"``, ``"number"`` (vistest.questions.QUESTION_TYPES) or, for an open
        reformulation, its ``answer_kind`` (``"text"`` or ``"number"``)."""
        return self.answer_kind or QUESTION_TYPES[self.question_type].answer

    @property
    def group_key(self) -> str:
        """The id of the row's group (its base question)."""
        return self.group_id or self.id

    @property
    def offers_abstention(self) -> bool:
        """A "Cannot be determined from the video" option, or ``accepts_abstention``."""
        return self.accepts_abstention or abstain_letter(self.options) is not None

    @property
    def is_counting(self) -> bool:
        return QUESTION_TYPES[self.question_type].rule == RULE_COUNTING

    @property
    def is_dummy(self) -> bool:
        return self.variant != REAL_VARIANT

    @property
    def answerable(self) -> bool:
        return self.status != UNANSWERABLE and self.ground_truth is not None

    @property
    def evidence_removed(self) -> bool:
        """Dummy, unanswerable and unsupported rows: scored for hallucination (an unsupported
        real row is scored for accuracy too)."""
        return self.is_dummy or not self.answerable or self.unsupported

    @property
    def scorable(self) -> bool:
        """An answerable real row lmms-eval's rules can score: an MCQ ground truth must be a
        string (an appearance order given as a list of ids is not), a numeric one a number
        or numeric string, not a boolean (vistest.answers.ground_truth_number), or the
        abstention phrase where the question accepts it; a text one a string."""
        if self.is_dummy or not self.answerable:
            return False
        if self.kind in (ANSWER_MCQ, ANSWER_TEXT):
            return isinstance(self.ground_truth, str)
        return ground_truth_number(self.ground_truth) is not None or (
            self.accepts_abstention and is_abstain_answer(self.ground_truth))

    @property
    def option_letters(self) -> frozenset[str]:
        """Upper-case letters of the options (empty for numeric types or unlettered options)."""
        return option_letters(self.options)


@dataclass(frozen=True)
class Prediction(_Keyed):
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


def is_size_type(question_type: str) -> bool:
    """Object size questions with a numeric answer (VSI-Bench and ReVSI ``object_size_estimation``;
    not vistest's multiple-choice ``object_size_estimation_mcq``)."""
    return question_type.startswith("object_size") and QUESTION_TYPES[question_type].answer != ANSWER_MCQ


# =======================================================================================
# reading
# =======================================================================================
def _read_lines(path: Path) -> list[str]:
    return read_text(path, ScoreError, "file").splitlines()


def iter_jsonl(lines: Iterable[str], source: str) -> Iterator[tuple[int, dict]]:
    """(1-based line, object) for each non-blank line; a line that is not a JSON object raises ScoreError."""
    return _iter_jsonl(lines, source, ScoreError)


def _ident(v: Any, where: str, fld: str) -> str:
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    if isinstance(v, str) and v:
        return v
    raise _fail(where, fld, f"expected a non-empty string or an integer id, got {v!r}")


def _budget(v: Any, where: str, fld: str) -> str:
    try:
        return Budget.parse(v, fld).label
    except ValueError:
        raise _fail(where, fld, f"expected a frame budget (a positive integer or 'all'), got {v!r}") from None


def _variant(v: Any, where: str, fld: str = "variant") -> str:
    if not isinstance(v, str) or not v.strip():
        raise _fail(where, fld, f"expected {REAL_VARIANT!r} or a dummy variant name starting with "
                                f"{DUMMY_PREFIX!r}, got {v!r}")
    v = v.strip()
    if v != REAL_VARIANT and not v.startswith(DUMMY_PREFIX):
        raise _fail(where, fld, f"expected {REAL_VARIANT!r} or a name starting with {DUMMY_PREFIX!r}, got {v!r}")
    return v


def _size_label(doc: Mapping[str, Any]) -> str | None:
    """A size question's object category: ``object_label``, else a one-label ``category``,
    else the VSI-Bench template "... of the {category}, measured ..." in the question."""
    for key in ("object_label", "category"):
        v = doc.get(key)
        if isinstance(v, list) and len(v) == 1:
            v = v[0]
        if isinstance(v, str) and v.strip():
            return v.strip().lower()
    found = _SIZE_LABEL_RE.findall(str(doc.get("question", "")))
    return found[-1].strip().lower() if found else None


def truth_from_record(doc: Mapping[str, Any], source: str, line: int, variant: str | None = None) -> Truth:
    """A :class:`Truth` from one budget-file or dummy-GT record.

    Required: ``id``, ``question_type`` (a vistest type), ``num_frames`` or ``budget``,
    ``ground_truth`` (null when unanswerable). ``options`` (MCQ; the hallucination check and
    the rank attack need their letters). ``status`` (kept /
    changed / unanswerable) is required unless the ground truth is null or the string
    ``"unanswerable"`` (then unanswerable) or a value (then ``changed``: a dummy's 0).
    ``variant``: fixed by the caller (budget files), else the record's (default ``"budget"``).
    """
    where = f"{source}:{line}"
    if "id" not in doc:
        raise _fail(where, "id", "missing required field")
    qid = _ident(doc["id"], where, "id")
    qtype = doc.get("question_type")
    if qtype not in QUESTION_TYPES:
        raise _fail(where, "question_type", f"expected one of {', '.join(sorted(QUESTION_TYPES))}, got {qtype!r}")
    bkey = "budget" if "budget" in doc else "num_frames"
    if bkey not in doc:
        raise _fail(where, "num_frames", "missing required field (the frame budget: an integer or 'all')")
    budget = _budget(doc[bkey], where, bkey)
    var = variant if variant is not None else _variant(doc.get("variant", REAL_VARIANT), where)
    if "ground_truth" not in doc:
        raise _fail(where, "ground_truth", "missing required field (null when unanswerable)")
    gt = doc["ground_truth"]
    status = doc.get("status")
    if status is None:
        status = UNANSWERABLE if gt is None or gt == UNANSWERABLE else "changed"
    if status not in STATUSES:
        raise _fail(where, "status", f"expected one of {', '.join(STATUSES)}, got {status!r}")
    if status == UNANSWERABLE:
        gt = None
    elif gt is None:
        raise _fail(where, "ground_truth", f"expected an answer for status {status!r}, got null")
    answer_kind = doc.get("answer_kind")
    if answer_kind is not None and (answer_kind not in (ANSWER_TEXT, ANSWER_NUMBER)
                                    or QUESTION_TYPES[qtype].answer != ANSWER_MCQ):
        raise _fail(where, "answer_kind", f"expected 'text' or 'number' on a multiple-choice type asked without "
                                          f"options, got {answer_kind!r} on {qtype!r}")
    options = doc.get("options")
    if QUESTION_TYPES[qtype].answer == ANSWER_MCQ and answer_kind is None and options is not None:
        if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
            raise _fail(where, "options", f"expected a list of strings, got {options!r}")
        options = tuple(options)
    else:
        options = None
    group = doc.get("dataset") if isinstance(doc.get("dataset"), str) else ""
    label = _size_label(doc) if is_size_type(qtype) else None
    ref = doc.get("reformulation") or BASE
    if ref not in REFORMULATIONS:
        raise _fail(where, "reformulation", f"expected one of {', '.join(REFORMULATIONS)}, got {ref!r}")
    group_id = _ident(doc["group_id"], where, "group_id") if doc.get("group_id") is not None else qid
    shift = doc.get("shift")
    if shift is not None and (isinstance(shift, bool) or not isinstance(shift, int)):
        raise _fail(where, "shift", f"expected an integer (a circular reformulation's shift), got {shift!r}")
    flags = {}
    for key in ("accepts_abstention", "unsupported"):
        flags[key] = doc.get(key, False)
        if not isinstance(flags[key], bool):
            raise _fail(where, key, f"expected true or false, got {flags[key]!r}")
    skipped = doc.get("skipped_variants") or {}
    if not isinstance(skipped, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in skipped.items()):
        raise _fail(where, "skipped_variants", f"expected an object mapping a variant to why vistest reformulate did "
                                               f"not write it, got {skipped!r}")
    return Truth(qid, var, budget, qtype, gt, status, options, label, group, source, line,
                 scene_id=str(doc.get("scene_id") or ""), question=str(doc.get("question") or ""), group_id=group_id,
                 reformulation=ref, shift=shift, answer_kind=answer_kind, skipped_variants=tuple(skipped.items()),
                 **flags)


def check_unique(records: Sequence[Any], what: str) -> None:
    """Raise when two records share a key, naming both places."""
    first: dict[tuple, Any] = {}
    for r in records:
        if r.key in first:
            raise _fail(r.where, "id", f"duplicate {what} for id {r.key[0]!r}, variant {r.key[1]!r}, budget "
                                       f"{r.key[2]!r} (also {first[r.key].where})")
        first[r.key] = r


def load_budget_file(path: str | os.PathLike) -> tuple[Truth, ...]:
    """The real-variant truths of one ``{budget}_frame.jsonl``; each record's ``num_frames``
    must match the file name."""
    path = Path(path)
    label = layout.budget_of_file(path.name)
    out = []
    for line, doc in iter_jsonl(_read_lines(path), str(path)):
        t = truth_from_record(doc, str(path), line, variant=REAL_VARIANT)
        if label and t.budget != label:
            raise _fail(t.where, "num_frames", f"expected {budget_json(label)!r} (the file is {path.name}), "
                                               f"got {budget_json(t.budget)!r}")
        out.append(t)
    return tuple(out)


def load_dummy_truth(path: str | os.PathLike) -> tuple[Truth, ...]:
    """The dummy truths of a ``dummy_gt.jsonl`` (every record names its dummy ``variant``)."""
    path = Path(path)
    out = []
    for line, doc in iter_jsonl(_read_lines(path), str(path)):
        t = truth_from_record(doc, str(path), line)
        if not t.is_dummy:
            raise _fail(t.where, "variant", f"expected a dummy variant (starting with {DUMMY_PREFIX!r}), got "
                                            f"{t.variant!r}")
        out.append(t)
    return tuple(out)


@dataclass(frozen=True)
class RunTruth:
    """Every truth of a run directory and the files they came from."""

    truths: tuple[Truth, ...]
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
    truths: list[Truth] = [t for p in files for t in load_budget_file(p)]
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
        out.append(Prediction(_ident(doc["id"], where, "id"), _variant(doc.get("variant", REAL_VARIANT), where),
                              _budget(doc[bkey], where, bkey), _prediction_text(doc["prediction"], where, "prediction"),
                              source, line))
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
            budget = _budget(d[bkey], where, f"doc.{bkey}")
        elif tb:
            budget = _budget(tb.group(1), where, "task name")
        else:
            raise _fail(where, "doc.num_frames", "missing, and the file name names no {budget}_frame task")
        out.append(Prediction(_ident(d["id"], where, "doc.id"), _variant(d.get("variant", REAL_VARIANT), where,
                                                                         "doc.variant"),
                              budget, text, source, line, _logged_score(d), d.get("ground_truth")))
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
