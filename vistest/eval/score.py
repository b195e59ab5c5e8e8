"""Score: accuracy / MRA per budget and question type, hallucination on dummies, blind baselines.

Inputs (docs/scoring.md has the full field tables):

* **Ground truth** as :class:`Truth` records, one per (question ``id``, ``variant``,
  ``budget``). Real videos have ``variant == "budget"`` (:data:`REAL_VARIANT`) and come from
  the ``{budget}_frame.jsonl`` files ``vistest budget`` writes; dummy videos (evidence
  removed) have a variant starting with ``"dummy"`` (``"dummy"``, ``"dummy-drop"`` …) and come
  from ``dummy_gt.jsonl`` (:data:`DUMMY_GT_FILE`). :func:`load_run_dir` reads both.
* **Predictions** as :class:`Prediction` records with the same key, read from a plain JSONL
  (``id``, ``variant``, ``budget``, ``prediction``) or from the per-sample JSONL lmms-eval
  writes with ``--log_samples`` (:func:`load_predictions` tells them apart).

Conventions:

* Budgets are labels: ``"16"``, ``"32"``, ``"all"`` (vistest.budget.sampling.budget_label); they sort
  numerically with ``"all"`` last (:func:`budget_sort_key`).
* A row is *answerable* when its status is ``kept`` or ``changed``; only answerable rows of
  the real variant are scored for accuracy / MRA (exporters leave unanswerable rows out, so
  this is what lmms-eval scores). Rows whose evidence was removed (every dummy row, and
  real rows that are ``unanswerable``) are scored for hallucination instead.
* Answers are parsed and scored exactly as lmms-eval does (:class:`Protocol`: ``revsi``,
  ``vsibench``, ``vsibench-legacy``); scores are floats in [0, 1].
* Evidence sensitivity pairs a dummy row with the real row of the same ``id`` and
  ``budget``: (score of the real prediction) - (score of the dummy prediction), both against
  the real ground truth. A model that ignores the video scores 0; one that uses it, > 0.

Errors are :class:`ScoreError` (a ValueError) naming file, line, field and what was expected.
"""
from __future__ import annotations

import json
import math
import os
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from ..atomic import atomic_path, write_atomic
from ..errors import InputError
from ..budget.truth import STATUSES, UNANSWERABLE
from ..jsonl import iter_jsonl as _iter_jsonl
from ..questions import ANSWER_MCQ, QUESTION_TYPES, RULE_COUNTING, option_letter
from ..budget.sampling import budget_label, parse_budget

if TYPE_CHECKING:  # baselines imports this module; the report only carries its result
    from .baselines import RankAttack

REAL_VARIANT = "budget"
DUMMY_PREFIX = "dummy"
DUMMY_GT_FILE = "dummy_gt.jsonl"
PREDICTIONS_MODEL = "predictions"

_BUDGET_FILE_RE = re.compile(r"^(\d+|all)_frame\.jsonl$")
_TASK_FROM_LOG_RE = re.compile(r"_samples_(?P<task>.+)\.jsonl$")
_TASK_BUDGET_RE = re.compile(r"(?:^|_)(\d+|all)_frame(?:_|$)")
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

    @property
    def kind(self) -> str:
        """``"mcq"`` or ``"number"`` (vistest.questions.QUESTION_TYPES)."""
        return QUESTION_TYPES[self.question_type].answer

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
        """Dummy rows and unanswerable rows: scored for hallucination, not accuracy."""
        return self.is_dummy or not self.answerable

    @property
    def scorable(self) -> bool:
        """An answerable real row lmms-eval's rules can score (an MCQ needs a letter string:
        an appearance order given as a list of ids is not scorable)."""
        if self.is_dummy or not self.answerable:
            return False
        return isinstance(self.ground_truth, str) if self.kind == ANSWER_MCQ else _gt_float(self.ground_truth) is not None

    @property
    def option_letters(self) -> frozenset[str]:
        """Upper-case letters of the options (empty for numeric types or unlettered options)."""
        return frozenset(x for x in (option_letter(o)[0] for o in self.options or ()) if x)


@dataclass(frozen=True)
class Prediction(_Keyed):
    """A model's answer to one (question, variant, budget).

    ``prediction``: the response text lmms-eval would pass to ``process_results``.
    ``logged_score`` / ``logged_ground_truth``: what an lmms-eval log recorded for the row
    (its ``acc`` / ``accuracy`` / ``MRA:.5:.95:.05`` and the doc's ``ground_truth``), None for
    plain predictions; used to check this module against lmms-eval.
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


def budget_sort_key(label: str) -> tuple:
    """Numeric budgets ascending, then ``"all"``, then anything else by name."""
    if label.isdigit():
        return (0, int(label), "")
    return (1, 0, "") if label == "all" else (2, 0, label)


def budget_json(label: str) -> int | str:
    """A budget label as the JSON value the budget files use: ``"16"`` -> 16, ``"all"`` stays."""
    return int(label) if label.isdigit() else label


# =======================================================================================
# lmms-eval's rules, re-implemented
# =======================================================================================
MRA_START, MRA_END, MRA_INTERVAL = 0.5, 0.95, 0.05


def mra_thresholds(start: float = MRA_START, end: float = MRA_END, interval: float = MRA_INTERVAL) -> np.ndarray:
    """The confidence thresholds θ as lmms-eval builds them: ``linspace(start, end,
    int((end - start) / interval + 2))``. With the defaults the float quotient is
    8.999…, so ``int`` truncates 10.999… to 10 points: 0.50, 0.55, …, 0.95."""
    return np.linspace(start, end, int((end - start) / interval + 2))


MRA_THRESHOLDS = mra_thresholds()
MRA_THRESHOLDS.flags.writeable = False


def mean_relative_accuracy(pred: float, target: float) -> float:
    """MRA: the fraction of θ in :data:`MRA_THRESHOLDS` with ``|pred - target| / target <= 1 - θ``.

    The relative error is a Python float compared with the float64 array ``1 - θ``, as in
    lmms-eval, so decimal boundaries follow float rounding: ``1 - 0.8`` is
    0.19999999999999996, so pred 8 for target 10 (error 0.2) fails θ = 0.8 and scores 0.6.
    Raises ZeroDivisionError when ``target`` is 0 (callers score that 0, as revsi does).
    """
    rel = abs(float(pred) - float(target)) / float(target)
    return float(np.mean(rel <= (1 - MRA_THRESHOLDS)))


def first_token(text: str, strip_first: bool) -> str:
    """lmms-eval's answer token: split on single spaces (not tabs or newlines), keep the first
    piece, drop trailing periods, strip whitespace. ``"B. chair"`` -> ``"B"``, ``"3 chairs"`` ->
    ``"3"``, ``"The answer is 3"`` -> ``"The"``, ``"B\\nchair"`` -> ``"B\\nchair"``.

    ``strip_first``: revsi strips the response before splitting; vsibench's
    ``fuzzy_matching`` does not, so there ``" B"`` gives the empty token.
    """
    if strip_first:
        text = text.strip()
    return text.split(" ")[0].rstrip(".").strip()


def python_float(text: Any) -> float | None:
    """``float(text)`` or None when Python's float() rejects it (it accepts ``" 3 "``,
    ``"1e3"``, ``"1_000"``, ``"nan"``, ``"inf"``)."""
    try:
        return float(text)
    except (TypeError, ValueError, OverflowError):
        return None


_NUMBER_WORDS = MappingProxyType({
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "thousand": 1000})
_DIGITS_RE = re.compile(r"-?\d+(?:\.\d+)?")
_WORD_RE = re.compile(r"[a-z]+")


def _number_word_run(s: str) -> tuple[int | None, list[str]]:
    """The first run of number words in lower-cased ``s``: (start offset, words). Inside a run
    ``and`` is skipped and any other word ends it; ``None`` when there is no number word."""
    start, words = None, []
    for m in _WORD_RE.finditer(s):
        w = m.group(0)
        if start is None:
            if w in _NUMBER_WORDS:
                start, words = m.start(), [w]
        elif w in _NUMBER_WORDS:
            words.append(w)
        elif w != "and":
            break
    return start, words


def _number_words_value(words: Sequence[str]) -> float:
    """``hundred`` multiplies what came before (at least 1), ``thousand`` closes a group,
    everything else adds: "three hundred and twenty one" -> 321, "two two" -> 4."""
    total, current = 0, 0
    for w in words:
        v = _NUMBER_WORDS[w]
        if v == 100:
            current = max(current, 1) * 100
        elif v == 1000:
            total, current = total + max(current, 1) * 1000, 0
        else:
            current += v
    return float(total + current)


def extract_number(text: Any) -> float | None:
    """vsibench's numeric parse (lmms-eval since eab6655a, 2026-07-14): the first number in
    the response, digits (``-?\\d+(\\.\\d+)?``, so ``".5"`` -> 5 and ``"1e3"`` -> 1) or English
    number words, whichever starts first; None when there is neither."""
    if text is None:
        return None
    s = str(text).strip().lower()
    if not s:
        return None
    digits = _DIGITS_RE.search(s)
    start, words = _number_word_run(s)
    if digits is not None and (start is None or digits.start() < start):
        return float(digits.group(0))
    return None if start is None else _number_words_value(words)


@dataclass(frozen=True)
class Protocol:
    """How one lmms-eval task parses a response and aggregates scores.

    ``mcq_token(text)``: the token compared (case-insensitively) with the option letter.
    ``number(text)``: the parsed number, None when the parse fails (scored 0).
    ``type_key(question_type, kind)``: lmms-eval's per-type subscore name; ``composites``: subscores that lmms-eval
    replaces by the unweighted mean of their member types; ``overall``: the name of the
    unweighted mean of what remains. ``source``: the lmms-eval code reproduced.
    """

    name: str
    source: str
    mcq_token: Callable[[str], str]
    number: Callable[[str], float | None]
    type_key: Callable[[str, str], str]
    composites: Mapping[str, tuple[str, ...]]
    overall: str


def _revsi_number(text: str) -> float | None:
    return python_float(first_token(text, strip_first=True))


def _vsibench_legacy_number(text: str) -> float | None:
    return python_float(first_token(text, strip_first=False))


_REVSI_COMPOSITES = MappingProxyType({
    "object_rel_direction_acc": ("object_rel_direction_forward_easy", "object_rel_direction_backward_easy",
                                 "object_rel_direction_forward_hard", "object_rel_direction_backward_hard"),
    "object_rel_distance_acc": ("object_rel_distance_closest", "object_rel_distance_farthest"),
    "object_counting_acc": ("object_counting_single", "object_counting_multiple"),
    "room_size_estimation_acc": ("room_size_estimation_single", "room_size_estimation_multiple"),
})
_VSIBENCH_COMPOSITES = MappingProxyType({
    "object_rel_direction_accuracy": ("object_rel_direction_easy", "object_rel_direction_medium",
                                      "object_rel_direction_hard"),
})


def _revsi_key(qtype: str, kind: str) -> str:
    return f"{qtype}_acc"


def _vsibench_key(qtype: str, kind: str) -> str:
    return f"{qtype}_accuracy" if kind == ANSWER_MCQ else f"{qtype}_MRA:.5:.95:.05"


PROTOCOLS: Mapping[str, Protocol] = MappingProxyType({
    "revsi": Protocol(
        "revsi", "lmms_eval/tasks/revsi/utils.py: revsi_process_results, _mean_relative_accuracy, "
                 "_compute_all_subscores",
        lambda t: first_token(t, strip_first=True), _revsi_number, _revsi_key,
        _REVSI_COMPOSITES, "overall_acc"),
    "vsibench": Protocol(
        "vsibench", "lmms_eval/tasks/vsibench/utils.py (since eab6655a, 2026-07-14): vsibench_process_results, "
                    "fuzzy_matching, exact_match, extract_number, mean_relative_accuracy, _compute_all_subscores",
        lambda t: first_token(t, strip_first=False), extract_number, _vsibench_key, _VSIBENCH_COMPOSITES, "overall"),
    "vsibench-legacy": Protocol(
        "vsibench-legacy", "lmms_eval/tasks/vsibench/utils.py (638db7ee 2025-04-21 to eab6655a^): "
                           "to_float(fuzzy_matching(pred)) for numbers",
        lambda t: first_token(t, strip_first=False), _vsibench_legacy_number, _vsibench_key,
        _VSIBENCH_COMPOSITES, "overall"),
})
PROTOCOL_CHOICES = ("auto", *PROTOCOLS)


def resolve_protocol(name: str, question_types: Iterable[str]) -> Protocol:
    """``name`` from :data:`PROTOCOL_CHOICES`. ``auto``: ``vsibench`` when the types include a
    VSI-Bench-only type, else ``revsi``; mixing ReVSI-only and VSI-Bench-only types is an
    error (no single lmms-eval task scores both)."""
    if name != "auto":
        if name not in PROTOCOLS:
            raise ScoreError(f"protocol: expected one of {', '.join(PROTOCOL_CHOICES)}, got {name!r}")
        return PROTOCOLS[name]
    types = set(question_types)
    only = {b: sorted(t for t in types if QUESTION_TYPES[t].benchmarks == (b,)) for b in ("ReVSI", "VSI-Bench")}
    if only["ReVSI"] and only["VSI-Bench"]:
        raise ScoreError(f"protocol: the ground truth mixes ReVSI-only types ({', '.join(only['ReVSI'])}) and "
                         f"VSI-Bench-only types ({', '.join(only['VSI-Bench'])}); choose one with --protocol")
    return PROTOCOLS["vsibench" if only["VSI-Bench"] else "revsi"]


def parse_answer(protocol: Protocol, kind: str, text: str) -> str | float | None:
    """The parsed answer: the MCQ token (a string) or the number (None when unparsed)."""
    return protocol.mcq_token(text) if kind == ANSWER_MCQ else protocol.number(text)


def _gt_float(gt: Any) -> float | None:
    if isinstance(gt, bool) or not isinstance(gt, (str, int, float)):
        return None
    return python_float(gt)


def score_parsed(kind: str, parsed: str | float | None, ground_truth: Any) -> float:
    """lmms-eval's per-row score of a parsed answer. MCQ: 1.0 when ``parsed.lower() ==
    ground_truth.lower()`` (no other normalisation), else 0.0. Numeric: MRA; 0.0 when either
    side does not parse or the ground truth is 0 (revsi catches the ZeroDivisionError)."""
    if kind == ANSWER_MCQ:
        return 1.0 if isinstance(ground_truth, str) and str(parsed).lower() == ground_truth.lower() else 0.0
    gt = _gt_float(ground_truth)
    if parsed is None or gt is None:
        return 0.0
    try:
        return mean_relative_accuracy(float(parsed), gt)
    except ZeroDivisionError:
        return 0.0


def score_answer(protocol: Protocol, kind: str, text: str, ground_truth: Any) -> float:
    """Parse ``text`` and score it against ``ground_truth`` (what lmms-eval logs as the row's
    ``acc`` / ``accuracy`` / ``MRA:.5:.95:.05``)."""
    return score_parsed(kind, parse_answer(protocol, kind, text), ground_truth)


def is_confident(truth: Truth, parsed: str | float | None) -> bool:
    """A confident answer where the evidence was removed (a hallucination): a finite non-zero
    count for counting types; any finite number for other numeric types; a token that is one
    of the option letters (case-insensitive) for MCQ. The parse is the protocol's, so an
    answer lmms-eval could not parse ("I can't tell", "The answer is B") is not counted."""
    if truth.kind == ANSWER_MCQ:
        return isinstance(parsed, str) and parsed.upper() in truth.option_letters
    if parsed is None or not math.isfinite(parsed):
        return False
    return parsed != 0 if truth.is_counting else True


def lmms_eval_summary(type_scores: Mapping[str, float], protocol: Protocol) -> dict[str, float]:
    """lmms-eval's ``_compute_all_subscores`` on per-type mean scores: each type under its
    lmms-eval name, composite groups replaced by the unweighted mean of the members present,
    and ``protocol.overall`` = the unweighted mean of what remains (a missing group member is
    skipped, where vsibench would raise a KeyError)."""
    def key(qtype: str) -> str:
        return protocol.type_key(qtype, QUESTION_TYPES[qtype].answer)

    out = {key(t): v for t, v in type_scores.items()}
    for name, members in protocol.composites.items():
        keys = [key(m) for m in members if key(m) in out]
        if keys:
            out[name] = float(np.mean([out.pop(k) for k in keys]))
    out[protocol.overall] = float(np.mean(list(out.values()))) if out else 0.0
    return out


# =======================================================================================
# reading
# =======================================================================================
def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ScoreError(f"{path}: cannot read ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise ScoreError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None


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
        return budget_label(parse_budget(v, fld))
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
    options = doc.get("options")
    if QUESTION_TYPES[qtype].answer == ANSWER_MCQ and options is not None:
        if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
            raise _fail(where, "options", f"expected a list of strings, got {options!r}")
        options = tuple(options)
    else:
        options = None
    group = doc.get("dataset") if isinstance(doc.get("dataset"), str) else ""
    label = _size_label(doc) if is_size_type(qtype) else None
    return Truth(qid, var, budget, qtype, gt, status, options, label, group, source, line)


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
    m = _BUDGET_FILE_RE.match(path.name)
    out = []
    for line, doc in iter_jsonl(_read_lines(path), str(path)):
        t = truth_from_record(doc, str(path), line, variant=REAL_VARIANT)
        if m and t.budget != m.group(1):
            raise _fail(t.where, "num_frames", f"expected {budget_json(m.group(1))!r} (the file is {path.name}), "
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
    for folder in (run_dir, run_dir / "budget"):
        found = [p for p in folder.glob("*_frame.jsonl") if _BUDGET_FILE_RE.match(p.name)] if folder.is_dir() else []
        if found:
            return sorted(found, key=lambda p: budget_sort_key(_BUDGET_FILE_RE.match(p.name).group(1)))
    return []


def load_run_dir(run_dir: str | os.PathLike) -> RunTruth:
    """The ground truth of a run directory: every ``{budget}_frame.jsonl`` written by
    ``vistest budget`` plus, when present, ``dummy_gt.jsonl`` beside them. The output folder
    of ``vistest run`` (``scenes/{scene_id}/`` holding those files) gives every scene's rows;
    question ids must then be unique across scenes."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ScoreError(f"{run_dir}: run directory: not a folder")
    scenes = sorted(p for p in (run_dir / "scenes").glob("*") if p.is_dir() and budget_files(p))
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


# =======================================================================================
# scoring
# =======================================================================================
@dataclass(frozen=True)
class RowResult:
    """One predicted row. ``parsed``: the protocol's parse. ``score``: vs the row's own ground
    truth, for answerable real rows (None otherwise). ``hallucinated``: for evidence-removed
    rows (None otherwise)."""

    truth: Truth
    prediction: Prediction
    parsed: str | float | None
    score: float | None
    hallucinated: bool | None

    def to_dict(self, model: str) -> dict:
        t = self.truth
        parsed = self.parsed if not isinstance(self.parsed, float) or math.isfinite(self.parsed) else str(self.parsed)
        return {"model": model, "id": t.id, "variant": t.variant, "budget": budget_json(t.budget),
                "question_type": t.question_type, "status": t.status, "ground_truth": t.ground_truth,
                "prediction": self.prediction.prediction, "parsed": parsed, "score": self.score,
                "hallucinated": self.hallucinated}


def evaluate_row(protocol: Protocol, truth: Truth, pred: Prediction) -> RowResult:
    """Parse and score one prediction against its truth (module conventions)."""
    parsed = parse_answer(protocol, truth.kind, pred.prediction)
    if truth.evidence_removed:
        return RowResult(truth, pred, parsed, None, is_confident(truth, parsed))
    score = score_parsed(truth.kind, parsed, truth.ground_truth) if truth.scorable else None
    return RowResult(truth, pred, parsed, score, None)


@dataclass(frozen=True)
class Matching:
    """Predictions joined to truths: ``rows`` (in truth order), ``missing`` truths without a
    prediction, ``unmatched`` predictions without a truth."""

    rows: tuple[RowResult, ...]
    missing: tuple[Truth, ...]
    unmatched: tuple[Prediction, ...]


def match_predictions(protocol: Protocol, truths: Sequence[Truth], predictions: Sequence[Prediction]) -> Matching:
    """Join on (id, variant, budget) and evaluate every matched row; duplicate prediction
    keys raise (naming both places)."""
    check_unique(predictions, "prediction")
    by_key = {p.key: p for p in predictions}
    keys = {t.key for t in truths}
    rows, missing = [], []
    for t in truths:
        p = by_key.get(t.key)
        if p is None:
            missing.append(t)
        else:
            rows.append(evaluate_row(protocol, t, p))
    return Matching(tuple(rows), tuple(missing), tuple(p for p in predictions if p.key not in keys))


@dataclass(frozen=True)
class ScoreCell:
    """Mean score of ``model`` on the answerable real rows of one budget and question type.
    ``metric``: ``accuracy`` (MCQ) or ``MRA``; ``n``: rows scored; ``n_truth``: scorable rows."""

    model: str
    budget: str
    question_type: str
    metric: str
    n: int
    n_truth: int
    score: float | None


def _metric_name(kind: str) -> str:
    return "accuracy" if kind == ANSWER_MCQ else "MRA"


def score_cells(model: str, rows: Sequence[RowResult], truths: Sequence[Truth]) -> tuple[ScoreCell, ...]:
    """Per (budget, question type) mean of ``row.score`` over scored rows, with the count of
    scorable truths (so coverage shows); sorted by budget then type."""
    scored: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        if r.score is not None:
            scored[(r.truth.budget, r.truth.question_type)].append(r.score)
    n_truth = Counter((t.budget, t.question_type) for t in truths if t.scorable)
    out = []
    for b, qt in sorted(n_truth, key=lambda k: (budget_sort_key(k[0]), k[1])):
        s = scored.get((b, qt), [])
        out.append(ScoreCell(model, b, qt, _metric_name(QUESTION_TYPES[qt].answer), len(s), n_truth[(b, qt)],
                             float(np.mean(s)) if s else None))
    return tuple(out)


@dataclass(frozen=True)
class SummaryCell:
    """lmms-eval's aggregate subscores of ``model`` at one budget (``values``: name -> score)."""

    model: str
    budget: str
    values: Mapping[str, float]


def summary_cells(cells: Sequence[ScoreCell], protocol: Protocol) -> tuple[SummaryCell, ...]:
    """:func:`lmms_eval_summary` per (model, budget) over the cells that scored rows."""
    groups: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for c in cells:
        if c.score is not None:
            groups[(c.model, c.budget)][c.question_type] = c.score
    return tuple(SummaryCell(m, b, MappingProxyType(lmms_eval_summary(v, protocol)))
                 for (m, b), v in sorted(groups.items(), key=lambda kv: (kv[0][0], budget_sort_key(kv[0][1]))))


@dataclass(frozen=True)
class HallucinationCell:
    """Evidence-removed rows of one (variant, budget, question type) that were predicted.
    ``rule``: ``nonzero_count`` or ``confident_answer``; ``hallucinated``: confident answers
    (:func:`is_confident`); ``abstained``: answers the protocol could not parse (or a token
    that is no option letter); ``zero``: counts of 0 (counting only)."""

    variant: str
    budget: str
    question_type: str
    rule: str
    n: int
    hallucinated: int
    abstained: int
    zero: int

    @property
    def rate(self) -> float:
        return self.hallucinated / self.n if self.n else 0.0


def hallucination_cells(rows: Sequence[RowResult]) -> tuple[HallucinationCell, ...]:
    """Group the evidence-removed rows (dummy, or unanswerable real) by (variant, budget, type)."""
    groups: dict[tuple[str, str, str], list[RowResult]] = defaultdict(list)
    for r in rows:
        if r.hallucinated is not None:
            groups[(r.truth.variant, r.truth.budget, r.truth.question_type)].append(r)
    out = []
    for (v, b, qt), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], budget_sort_key(kv[0][1]), kv[0][2])):
        counting = rs[0].truth.is_counting
        zero = sum(1 for r in rs if counting and r.parsed == 0)
        halluc = sum(1 for r in rs if r.hallucinated)
        out.append(HallucinationCell(v, b, qt, "nonzero_count" if counting else "confident_answer", len(rs), halluc,
                                     len(rs) - halluc - zero, zero))
    return tuple(out)


@dataclass(frozen=True)
class SensitivityCell:
    """Real/dummy pairs of one (dummy variant, budget, type): mean score of the real and of
    the dummy prediction, both against the real ground truth; ``sensitivity = real - dummy``."""

    variant: str
    budget: str
    question_type: str
    n: int
    real: float
    dummy: float

    @property
    def sensitivity(self) -> float:
        return self.real - self.dummy


def sensitivity_cells(rows: Sequence[RowResult]) -> tuple[SensitivityCell, ...]:
    """Pair each predicted dummy row with the scored real row of its (id, budget)."""
    real = {(r.truth.id, r.truth.budget): r for r in rows if r.score is not None}
    groups: dict[tuple[str, str, str], list[tuple[float, float]]] = defaultdict(list)
    for r in rows:
        t = r.truth
        base = real.get((t.id, t.budget)) if t.is_dummy else None
        if base is None:
            continue
        dummy = score_parsed(base.truth.kind, r.parsed, base.truth.ground_truth)
        groups[(t.variant, t.budget, t.question_type)].append((base.score, dummy))
    return tuple(SensitivityCell(v, b, qt, len(p), float(np.mean([a for a, _ in p])), float(np.mean([d for _, d in p])))
                 for (v, b, qt), p in sorted(groups.items(),
                                             key=lambda kv: (kv[0][0], budget_sort_key(kv[0][1]), kv[0][2])))


@dataclass(frozen=True)
class Coverage:
    """Rows of one (variant, budget): ``n_truth`` rows, ``n_scorable`` (answerable, real),
    ``n_predicted`` rows with a prediction, ``n_missing`` without one."""

    variant: str
    budget: str
    n_truth: int
    n_scorable: int
    n_predicted: int
    n_missing: int


def coverage_cells(truths: Sequence[Truth], m: Matching) -> tuple[Coverage, ...]:
    """How much of each (variant, budget) the predictions cover."""
    total = Counter((t.variant, t.budget) for t in truths)
    scorable = Counter((t.variant, t.budget) for t in truths if t.scorable)
    missing = Counter((t.variant, t.budget) for t in m.missing)
    order = sorted(total, key=lambda k: (k[0] != REAL_VARIANT, k[0], budget_sort_key(k[1])))
    return tuple(Coverage(v, b, total[(v, b)], scorable[(v, b)], total[(v, b)] - missing[(v, b)], missing[(v, b)])
                 for v, b in order)


@dataclass(frozen=True)
class LmmsEvalCheck:
    """Rows of lmms-eval logs whose logged score was compared with this module's.
    ``disagreements``: (where, logged, ours) for the first few; ``gt_mismatch``: rows whose
    logged ground truth differs from the run's (stale export; not compared)."""

    compared: int
    agreed: int
    disagreements: tuple[tuple[str, float, float], ...]
    gt_mismatch: tuple[tuple[str, Any, Any], ...]


def lmms_eval_check(rows: Sequence[RowResult], keep: int = 10) -> LmmsEvalCheck:
    """Compare scores lmms-eval logged with ours, on rows scored against the same ground truth."""
    compared = agreed = 0
    bad: list[tuple[str, float, float]] = []
    gt_bad: list[tuple[str, Any, Any]] = []
    for r in rows:
        p = r.prediction
        if p.logged_score is None or r.score is None:
            continue
        if str(p.logged_ground_truth) != str(r.truth.ground_truth):
            gt_bad.append((p.where, p.logged_ground_truth, r.truth.ground_truth))
            continue
        compared += 1
        if abs(p.logged_score - r.score) <= 1e-9:
            agreed += 1
        else:
            bad.append((p.where, p.logged_score, r.score))
    return LmmsEvalCheck(compared, agreed, tuple(bad[:keep]), tuple(gt_bad[:keep]))


# =======================================================================================
# the report
# =======================================================================================
@dataclass(frozen=True)
class Report:
    """Everything ``vistest score`` reports (``to_dict`` is report.json)."""

    protocol: Protocol
    run_dir: str
    truth_files: tuple[str, ...]
    prediction_files: tuple[str, ...]
    coverage: tuple[Coverage, ...]
    unmatched: tuple[str, ...]
    n_unmatched: int
    scores: tuple[ScoreCell, ...]
    summaries: tuple[SummaryCell, ...]
    hallucination: tuple[HallucinationCell, ...]
    sensitivity: tuple[SensitivityCell, ...]
    rank_attack: RankAttack
    lmms_check: LmmsEvalCheck
    rows: tuple[RowResult, ...] = field(repr=False, default=())

    @property
    def budgets(self) -> list[str]:
        return sorted({c.budget for c in self.scores}, key=budget_sort_key)

    def to_dict(self) -> dict:
        from .. import __version__

        return {
            "vistest_version": __version__,
            "protocol": {"name": self.protocol.name, "lmms_eval_source": self.protocol.source,
                         "mra_thresholds": [float(x) for x in MRA_THRESHOLDS]},
            "inputs": {"run_dir": self.run_dir, "truth_files": list(self.truth_files),
                       "predictions": list(self.prediction_files)},
            "coverage": [asdict(c) for c in self.coverage],
            "unmatched_predictions": {"count": self.n_unmatched, "examples": list(self.unmatched)},
            "scores": [asdict(c) for c in self.scores],
            "summary": [{"model": s.model, "budget": s.budget, **dict(s.values)} for s in self.summaries],
            "hallucination": [{**asdict(c), "rate": c.rate} for c in self.hallucination],
            "evidence_sensitivity": [{**asdict(c), "sensitivity": c.sensitivity} for c in self.sensitivity],
            "rank_attack": self.rank_attack.to_dict(),
            "lmms_eval_check": asdict(self.lmms_check),
        }


def build_report(truth: RunTruth, predictions: Sequence[Prediction], protocol: str = "auto",
                 prediction_sources: Sequence[str] = (), run_dir: str = "", splits: int = 200,
                 seed: int = 0) -> Report:
    """Score ``predictions`` against ``truth``; add the blind baselines (vistest.eval.baselines)
    computed from the truths alone. ``protocol``: :data:`PROTOCOL_CHOICES`; ``splits``/``seed``:
    the held-out rank attack's random half-splits."""
    from .baselines import MOST_FREQUENT, SIZE_PRIOR, blind_predictions, rank_attack

    truths = truth.truths
    proto = resolve_protocol(protocol, {t.question_type for t in truths})
    m = match_predictions(proto, truths, predictions)
    cells = list(score_cells(PREDICTIONS_MODEL, m.rows, truths))
    for model in (MOST_FREQUENT, SIZE_PRIOR):
        blind = match_predictions(proto, truths, blind_predictions(truths, model))
        cells.extend(score_cells(model, blind.rows, truths))
    return Report(proto, run_dir, truth.files, tuple(prediction_sources), coverage_cells(truths, m),
                  tuple(p.where for p in m.unmatched[:10]), len(m.unmatched), tuple(cells),
                  summary_cells(cells, proto), hallucination_cells(m.rows), sensitivity_cells(m.rows),
                  rank_attack(truths, splits=splits, seed=seed), lmms_eval_check(m.rows), m.rows)


# ---- tables: built once, rendered as text or Markdown ---------------------------------
@dataclass(frozen=True)
class Table:
    """A titled table; ``note`` is a sentence under the title. The first ``text_columns``
    columns are left-aligned, the others (numbers) right-aligned."""

    title: str
    note: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    text_columns: int = 1


def _f(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _score_table(report: Report, models: Sequence[str], title: str, note: str,
                 show: Callable[[str, str], bool] = lambda model, qtype: True) -> Table:
    """Types as rows, budgets as columns, then lmms-eval's overall per model; ``show(model,
    question_type)`` selects the type rows (the overall always covers every type)."""
    budgets = report.budgets
    rows = []
    for model in models:
        cells = {(c.budget, c.question_type): c for c in report.scores if c.model == model and show(model, c.question_type)}
        for qt in sorted({qt for _, qt in cells}):
            first = next(c for (b, t), c in cells.items() if t == qt)
            vals = []
            for b in budgets:
                c = cells.get((b, qt))
                vals.append("" if c is None else f"{_f(c.score)} ({c.n}/{c.n_truth})")
            rows.append(((model,) if len(models) > 1 else ()) + (qt, first.metric, *vals))
        summ = {s.budget: s.values for s in report.summaries if s.model == model}
        if summ:
            name = f"overall [lmms-eval {report.protocol.overall}]"
            rows.append(((model,) if len(models) > 1 else ()) + (name, "", *(_f(summ.get(b, {}).get(
                report.protocol.overall)) if b in summ else "" for b in budgets)))
    head = (("model",) if len(models) > 1 else ()) + ("question_type", "metric", *budgets)
    return Table(title, note, head, tuple(rows), len(head) - len(budgets))


def report_tables(report: Report) -> list[Table]:
    """The report's tables, in order: scores, blind baselines, coverage, hallucination,
    evidence sensitivity, rank attack."""
    from .baselines import MOST_FREQUENT, SIZE_PRIOR

    p = report.protocol
    tables = [
        _score_table(report, [PREDICTIONS_MODEL], "Scores on the real videos",
                     f"Accuracy (MCQ) or MRA (numeric), parsed and scored as lmms-eval's {p.name} task; "
                     f"cells show score (rows predicted / answerable rows)."),
        _score_table(report, [MOST_FREQUENT, SIZE_PRIOR], "Blind baselines (from the questions alone)",
                     "most-frequent: the modal answer per type and budget (the median for continuous numbers); "
                     "size-prior: the leave-one-out mean size of the object's category (most-frequent elsewhere, "
                     "so its overall is the best blind model's).",
                     show=lambda model, qtype: model != SIZE_PRIOR or is_size_type(qtype)),
        Table("Coverage", f"{report.n_unmatched} prediction(s) matched no ground-truth row.",
              ("variant", "budget", "rows", "answerable", "predicted", "missing"),
              tuple((c.variant, c.budget, str(c.n_truth), str(c.n_scorable), str(c.n_predicted), str(c.n_missing))
                    for c in report.coverage), 2),
    ]
    if report.hallucination:
        tables.append(Table(
            "Hallucination where the evidence was removed",
            "Dummy videos and unanswerable budget rows: a non-zero count (counting) or a confident number / "
            "option letter (others) is a hallucination; abstained = no parsable answer.",
            ("variant", "budget", "question_type", "rule", "n", "hallucinated", "rate", "abstained", "zero"),
            tuple((c.variant, c.budget, c.question_type, c.rule, str(c.n), str(c.hallucinated), _f(c.rate),
                   str(c.abstained), str(c.zero) if c.rule == "nonzero_count" else "") for c in report.hallucination),
            4))
    if report.sensitivity:
        tables.append(Table(
            "Evidence sensitivity", "Score on the real video minus score on its dummy, both against the real "
                                    "ground truth (0: the answer does not depend on the evidence).",
            ("variant", "budget", "question_type", "pairs", "real", "dummy", "sensitivity"),
            tuple((c.variant, c.budget, c.question_type, str(c.n), _f(c.real), _f(c.dummy), _f(c.sensitivity))
                  for c in report.sensitivity), 3))
    tables.extend(report.rank_attack.tables())
    return tables


def _right_aligned(t: Table) -> list[bool]:
    return [i >= t.text_columns for i in range(len(t.headers))]


def _text_table(t: Table) -> str:
    if not t.rows:
        return f"{t.title}\n{t.note}\n(none)"
    widths = [max(len(h), *(len(r[i]) for r in t.rows)) for i, h in enumerate(t.headers)]
    right = _right_aligned(t)

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()

    lines = [t.title, t.note, fmt(t.headers), fmt(tuple("-" * w for w in widths))]
    return "\n".join(lines + [fmt(r) for r in t.rows])


def _md_cell(s: str) -> str:
    return s.replace("|", "\\|")


def _md_table(t: Table) -> str:
    lines = [f"## {t.title}", "", t.note, ""]
    if not t.rows:
        return "\n".join(lines + ["(none)"])
    lines.append("| " + " | ".join(map(_md_cell, t.headers)) + " |")
    lines.append("|" + "|".join("---:" if r else "---" for r in _right_aligned(t)) + "|")
    lines += ["| " + " | ".join(map(_md_cell, r)) + " |" for r in t.rows]
    return "\n".join(lines)


def _header_lines(report: Report) -> list[str]:
    return [f"protocol: {report.protocol.name} (lmms-eval {report.protocol.source})",
            f"ground truth: {', '.join(report.truth_files)}",
            f"predictions: {', '.join(report.prediction_files) or '(none)'}"] + _check_lines(report)


def _check_lines(report: Report) -> list[str]:
    c = report.lmms_check
    if not c.compared and not c.gt_mismatch:
        return []
    out = [f"lmms-eval check: {c.agreed}/{c.compared} logged row scores reproduced"]
    out += [f"  disagrees at {w}: logged {a}, vistest {b}" for w, a, b in c.disagreements]
    if c.gt_mismatch:
        out.append(f"  {len(c.gt_mismatch)}+ logged rows carry another ground truth than the run "
                   f"(first at {c.gt_mismatch[0][0]}: logged {c.gt_mismatch[0][1]!r}, run {c.gt_mismatch[0][2]!r})")
    return out


def render_text(report: Report) -> str:
    """The terminal report."""
    return "\n\n".join(["\n".join(_header_lines(report))] + [_text_table(t) for t in report_tables(report)]) + "\n"


def render_markdown(report: Report, plots: Mapping[str, str]) -> str:
    """report.md: the same tables, with the plots (``plots``: caption -> file name)."""
    parts = ["# vistest score report", "\n".join(f"- {x}" for x in _header_lines(report))]
    for caption, name in plots.items():
        parts.append(f"![{caption}]({name})")
    if not plots:
        parts.append("(no plots: nothing was scored)")
    parts += [_md_table(t) for t in report_tables(report)]
    return "\n\n".join(parts) + "\n"


# ---- plots ------------------------------------------------------------------------------
PLOT_BUDGET = "accuracy_vs_budget.png"
PLOT_DUMMY = "real_vs_dummy.png"


def _save_figure(fig: Any, path: Path) -> None:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100, metadata={"Software": None})


def plot_accuracy_vs_budget(report: Report, path: Path) -> bool:
    """One line per question type (score vs budget), the lmms-eval overall in black and the
    blind most-frequent overall dashed. False (nothing written) when nothing was scored."""
    from matplotlib.figure import Figure

    from .baselines import MOST_FREQUENT

    cells = [c for c in report.scores if c.model == PREDICTIONS_MODEL and c.score is not None]
    if not cells:
        return False
    budgets = report.budgets
    x = {b: i for i, b in enumerate(budgets)}
    fig = Figure(figsize=(8, 5))
    ax = fig.add_subplot()
    for qt in sorted({c.question_type for c in cells}):
        pts = sorted((x[c.budget], c.score) for c in cells if c.question_type == qt)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{qt} ({_metric_name(QUESTION_TYPES[qt].answer)})")
    for model, style in ((PREDICTIONS_MODEL, {"color": "black", "linewidth": 2.5, "label": "overall"}),
                         (MOST_FREQUENT, {"color": "gray", "linestyle": "--", "label": "blind most-frequent overall"})):
        pts = [(x[s.budget], s.values[report.protocol.overall]) for s in report.summaries if s.model == model]
        if pts:
            ax.plot([p[0] for p in sorted(pts)], [p[1] for p in sorted(pts)], marker="s", **style)
    ax.set_xticks(range(len(budgets)), [f"{b} frames" for b in budgets])
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("frame budget")
    ax.set_ylabel("accuracy (MCQ) / MRA (numeric)")
    ax.set_title(f"Score vs frame budget ({report.protocol.name} rules)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    _save_figure(fig, path)
    return True


def _weighted(cells: Sequence[Any], value: Callable[[Any], float]) -> float:
    n = sum(c.n for c in cells)
    return sum(value(c) * c.n for c in cells) / n if n else 0.0


def plot_real_vs_dummy(report: Report, path: Path) -> bool:
    """Per question type, pooled over budgets: real vs dummy score (against the real ground
    truth) per dummy variant, and the hallucination rate on dummies. False when no dummy
    rows were predicted."""
    from matplotlib.figure import Figure

    dummy_h = [c for c in report.hallucination if c.variant != REAL_VARIANT]
    if not report.sensitivity and not dummy_h:
        return False
    fig = Figure(figsize=(11, 4.5))
    ax1, ax2 = fig.subplots(1, 2)
    variants = sorted({c.variant for c in report.sensitivity})
    types = sorted({c.question_type for c in report.sensitivity})
    width = 0.8 / (1 + len(variants))
    for i, qt in enumerate(types):
        for j, v in enumerate(variants):
            cs = [c for c in report.sensitivity if c.question_type == qt and c.variant == v]
            if j == 0:
                ax1.bar(i, _weighted(cs, lambda c: c.real), width, color="tab:blue", label="real" if i == 0 else None)
            ax1.bar(i + (j + 1) * width, _weighted(cs, lambda c: c.dummy), width, color=f"C{j + 1}",
                    label=v if i == 0 else None)
    ax1.set_xticks([i + width * len(variants) / 2 for i in range(len(types))], types, rotation=30, ha="right",
                   fontsize=7)
    ax1.set_ylim(0, 1.05)
    ax1.set_ylabel("score vs the real ground truth")
    ax1.set_title("real vs dummy")
    if types:
        ax1.legend(fontsize=7)
    htypes = sorted({(c.variant, c.question_type) for c in dummy_h})
    ax2.bar(range(len(htypes)), [_weighted([c for c in dummy_h if (c.variant, c.question_type) == k],
                                           lambda c: c.rate) for k in htypes], color="tab:red")
    ax2.set_xticks(range(len(htypes)), [f"{qt}\n[{v}]" for v, qt in htypes], rotation=30, ha="right", fontsize=7)
    ax2.set_ylim(0, 1.05)
    ax2.set_ylabel("hallucination rate")
    ax2.set_title("hallucination on dummies")
    fig.tight_layout()
    _save_figure(fig, path)
    return True


def write_report(report: Report, outdir: str | os.PathLike, model: str = PREDICTIONS_MODEL) -> dict[str, Path]:
    """Write ``report.json``, ``report.md``, ``rows.jsonl`` (every predicted row, parsed and
    scored) and the PNG plots into ``outdir``, each atomically. Returns name -> path."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    plots: dict[str, str] = {}
    for caption, name, fn in (("score vs frame budget", PLOT_BUDGET, plot_accuracy_vs_budget),
                              ("real vs dummy", PLOT_DUMMY, plot_real_vs_dummy)):
        if fn(report, outdir / name):
            plots[caption] = name
            written[name] = outdir / name
        elif (outdir / name).exists():
            (outdir / name).unlink()  # a stale plot from an earlier run would contradict report.md
    for name, text in (("report.json", json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"),
                       ("report.md", render_markdown(report, plots)),
                       ("rows.jsonl", "".join(json.dumps(r.to_dict(model), ensure_ascii=False) + "\n"
                                              for r in report.rows))):
        write_atomic(outdir / name, text)
        written[name] = outdir / name
    return written


def run_score(prediction_paths: Sequence[str | os.PathLike], run_dir: str | os.PathLike,
              outdir: str | os.PathLike | None = None, protocol: str = "auto", splits: int = 200,
              seed: int = 0) -> tuple[Report, dict[str, Path]]:
    """``vistest score``: load, score, write (default OUT: ``RUN_DIR/score``). Files of an
    earlier report under OUT are not read as predictions when a folder is given."""
    out = Path(outdir) if outdir else Path(run_dir) / "score"
    truth = load_run_dir(run_dir)
    files = [f for f in prediction_files(prediction_paths) if out.resolve() not in f.resolve().parents]
    preds = [p for f in files for p in load_predictions(f)]
    report = build_report(truth, preds, protocol, [str(f) for f in files], str(run_dir), splits, seed)
    return report, write_report(report, out)
