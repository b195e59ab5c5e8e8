"""lmms-eval's answer rules: parse a model's response and score it as lmms-eval's revsi and vsibench tasks do.

This file is the one answer parser of vistest. ``vistest score`` imports it, and ``vistest export
lmms-eval-task`` embeds its text verbatim in the task's ``utils.py``
(vistest/eval/exporters/lmms_eval_task.py), so a model's answers are parsed and scored by the
same code inside lmms-eval and in ``vistest score``. Hence, binding for this file:

* standard library only, and nothing from vistest (lmms-eval's environment need not have it);
* no ``from __future__ import annotations``: lmms-eval loads utils.py by file location without
  registering it in ``sys.modules``, where ``dataclasses`` cannot resolve string annotations;
  annotations here are evaluated, so they must be valid at runtime on Python >= 3.10
  (lmms-eval's minimum);
* every name defined here becomes a name of utils.py: no ``main``, no side effects.

Conventions:

* A response is the text lmms-eval passes to ``process_results`` (``str``).
* ``kind``: :data:`MCQ` (``"mcq"``) or :data:`NUMBER` (``"number"``), as
  vistest.questions.ANSWER_MCQ / ANSWER_NUMBER (tests/test_score.py checks they agree).
* A parsed answer is the MCQ token (``str``) or a number (``float``; None when the parse fails).
* Ground truth: MCQ, the option letter as a string; numeric, a number or numeric string
  (:func:`ground_truth_number`). Scores are floats in [0, 1].
* The lmms-eval code reproduced is named per rule (:data:`PROTOCOLS`, ``source``); where lmms-eval
  raises on an input vistest scores 0 instead, the docstring says so.
"""
import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

MCQ = "mcq"
NUMBER = "number"


# ---- mean relative accuracy ------------------------------------------------------------
def mra_thresholds(start: float = 0.5, end: float = 0.95, interval: float = 0.05) -> tuple[float, ...]:
    """The confidence thresholds θ as lmms-eval builds them: ``numpy.linspace(start, end,
    int((end - start) / interval + 2))``, here in plain floats (numpy's linspace computes
    ``start + i * step`` with ``step = (end - start) / (n - 1)`` and sets the last point to
    ``end``; tests compare with numpy). With the defaults the float quotient is 8.999…, so
    ``int`` truncates 10.999… to 10 points: 0.50, 0.55, …, 0.95."""
    n = int((end - start) / interval + 2)
    if n <= 1:
        return (float(start),) if n == 1 else ()
    step = (end - start) / (n - 1)
    return tuple(start + i * step for i in range(n - 1)) + (float(end),)


MRA_START, MRA_END, MRA_INTERVAL = 0.5, 0.95, 0.05
MRA_THRESHOLDS = mra_thresholds(MRA_START, MRA_END, MRA_INTERVAL)


def mean_relative_accuracy(pred: float, target: float) -> float:
    """MRA: the fraction of θ in :data:`MRA_THRESHOLDS` with ``|pred - target| / target <= 1 - θ``.

    Float arithmetic as lmms-eval's (``1 - θ`` per threshold, a Python float compared with
    each), so decimal boundaries follow float rounding: ``1 - 0.8`` is 0.19999999999999996, so
    pred 8 for target 10 (error 0.2) fails θ = 0.8 and scores 0.6. Raises ZeroDivisionError
    when ``target`` is 0 (callers score that 0, as revsi does).
    """
    rel = abs(float(pred) - float(target)) / float(target)
    return sum(1 for t in MRA_THRESHOLDS if rel <= 1 - t) / len(MRA_THRESHOLDS)


# ---- parsing -----------------------------------------------------------------------------
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


def python_float(text: object) -> float | None:
    """``float(text)`` or None when Python's float() rejects it (it accepts ``" 3 "``,
    ``"1e3"``, ``"1_000"``, ``"nan"``, ``"inf"``)."""
    try:
        return float(text)
    except (TypeError, ValueError, OverflowError):
        return None


NUMBER_WORDS = MappingProxyType({
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "thousand": 1000})
DIGITS_RE = re.compile(r"-?\d+(?:\.\d+)?")
WORD_RE = re.compile(r"[a-z]+")


def number_word_run(s: str) -> tuple[int | None, list[str]]:
    """The first run of number words in lower-cased ``s``: (start offset, words). Inside a run
    ``and`` is skipped and any other word ends it; ``None`` when there is no number word."""
    start, words = None, []
    for m in WORD_RE.finditer(s):
        w = m.group(0)
        if start is None:
            if w in NUMBER_WORDS:
                start, words = m.start(), [w]
        elif w in NUMBER_WORDS:
            words.append(w)
        elif w != "and":
            break
    return start, words


def number_words_value(words: Iterable[str]) -> float:
    """``hundred`` multiplies what came before (at least 1), ``thousand`` closes a group,
    everything else adds: "three hundred and twenty one" -> 321, "two two" -> 4."""
    total, current = 0, 0
    for w in words:
        v = NUMBER_WORDS[w]
        if v == 100:
            current = max(current, 1) * 100
        elif v == 1000:
            total, current = total + max(current, 1) * 1000, 0
        else:
            current += v
    return float(total + current)


def extract_number(text: object) -> float | None:
    """vsibench's numeric parse (lmms-eval since eab6655a, 2026-07-14): the first number in
    the response, digits (``-?\\d+(\\.\\d+)?``, so ``".5"`` -> 5 and ``"1e3"`` -> 1) or English
    number words, whichever starts first; None when there is neither."""
    if text is None:
        return None
    s = str(text).strip().lower()
    if not s:
        return None
    digits = DIGITS_RE.search(s)
    start, words = number_word_run(s)
    if digits is not None and (start is None or digits.start() < start):
        return float(digits.group(0))
    return None if start is None else number_words_value(words)


# ---- the protocols -----------------------------------------------------------------------
@dataclass(frozen=True)
class Protocol:
    """How one lmms-eval task parses a response and aggregates scores.

    ``mcq_token(text)``: the token compared (case-insensitively) with the option letter.
    ``number(text)``: the parsed number, None when the parse fails (scored 0).
    ``type_key(question_type, kind)``: lmms-eval's per-type subscore name; ``composites``:
    subscores that lmms-eval replaces by the unweighted mean of their member types (question
    types); ``overall``: the name of the unweighted mean of what remains. ``source``: the
    lmms-eval code reproduced.
    """

    name: str
    source: str
    mcq_token: Callable[[str], str]
    number: Callable[[str], float | None]
    type_key: Callable[[str, str], str]
    composites: Mapping[str, tuple[str, ...]]
    overall: str


def revsi_token(text: str) -> str:
    """revsi: ``str(resp).strip().split(" ")[0].rstrip(".").strip()``."""
    return first_token(text, strip_first=True)


def vsibench_token(text: str) -> str:
    """vsibench ``fuzzy_matching``: ``resp.split(" ")[0].rstrip(".").strip()`` (no strip first)."""
    return first_token(text, strip_first=False)


def revsi_number(text: str) -> float | None:
    """revsi: ``float()`` of the revsi token."""
    return python_float(revsi_token(text))


def vsibench_legacy_number(text: str) -> float | None:
    """vsibench before eab6655a: ``to_float(fuzzy_matching(pred))``."""
    return python_float(vsibench_token(text))


def revsi_type_key(qtype: str, kind: str) -> str:
    """revsi's subscore name of a question type: ``{type}_acc``."""
    return f"{qtype}_acc"


def vsibench_type_key(qtype: str, kind: str) -> str:
    """vsibench's subscore name: ``{type}_accuracy`` (MCQ) or ``{type}_MRA:.5:.95:.05``."""
    return f"{qtype}_accuracy" if kind == MCQ else f"{qtype}_MRA:.5:.95:.05"


REVSI_COMPOSITES = MappingProxyType({
    "object_rel_direction_acc": ("object_rel_direction_forward_easy", "object_rel_direction_backward_easy",
                                 "object_rel_direction_forward_hard", "object_rel_direction_backward_hard"),
    "object_rel_distance_acc": ("object_rel_distance_closest", "object_rel_distance_farthest"),
    "object_counting_acc": ("object_counting_single", "object_counting_multiple"),
    "room_size_estimation_acc": ("room_size_estimation_single", "room_size_estimation_multiple"),
})
VSIBENCH_COMPOSITES = MappingProxyType({
    "object_rel_direction_accuracy": ("object_rel_direction_easy", "object_rel_direction_medium",
                                      "object_rel_direction_hard"),
})

PROTOCOLS = MappingProxyType({
    "revsi": Protocol(
        "revsi", "lmms_eval/tasks/revsi/utils.py: revsi_process_results, _mean_relative_accuracy, "
                 "_compute_all_subscores",
        revsi_token, revsi_number, revsi_type_key, REVSI_COMPOSITES, "overall_acc"),
    "vsibench": Protocol(
        "vsibench", "lmms_eval/tasks/vsibench/utils.py (since eab6655a, 2026-07-14): vsibench_process_results, "
                    "fuzzy_matching, exact_match, extract_number, mean_relative_accuracy, _compute_all_subscores",
        vsibench_token, extract_number, vsibench_type_key, VSIBENCH_COMPOSITES, "overall"),
    "vsibench-legacy": Protocol(
        "vsibench-legacy", "lmms_eval/tasks/vsibench/utils.py (638db7ee 2025-04-21 to eab6655a^): "
                           "to_float(fuzzy_matching(pred)) for numbers",
        vsibench_token, vsibench_legacy_number, vsibench_type_key, VSIBENCH_COMPOSITES, "overall"),
})


# ---- one row -----------------------------------------------------------------------------
def parse_answer(protocol: Protocol, kind: str, text: str) -> str | float | None:
    """The parsed answer: the MCQ token (a string) or the number (None when unparsed)."""
    return protocol.mcq_token(text) if kind == MCQ else protocol.number(text)


def ground_truth_number(gt: object) -> float | None:
    """A numeric ground truth as lmms-eval's ``float(gt)`` reads it, None when it does not
    parse. A JSON boolean is None: lmms-eval's ``float(True)`` would give 1, but the exports
    write answers as strings (``"True"``, which ``float()`` rejects), so rejecting it here is
    what lmms-eval does on the data it is given."""
    if isinstance(gt, bool) or not isinstance(gt, (str, int, float)):
        return None
    return python_float(gt)


def score_parsed(kind: str, parsed: str | float | None, ground_truth: object) -> float:
    """lmms-eval's per-row score of a parsed answer. MCQ: 1.0 when ``parsed.lower() ==
    ground_truth.lower()`` (no other normalisation), else 0.0; a ground truth that is not a
    string scores 0.0 (lmms-eval calls ``.lower()`` on it and raises; vistest never scores such
    a row: vistest.eval.records.Truth.scorable, and the exports write option letters as
    strings). Numeric: MRA; 0.0 when either side does not parse or the ground truth is 0
    (revsi catches the ZeroDivisionError; vsibench would raise)."""
    if kind == MCQ:
        return 1.0 if isinstance(ground_truth, str) and str(parsed).lower() == ground_truth.lower() else 0.0
    gt = ground_truth_number(ground_truth)
    if parsed is None or gt is None:
        return 0.0
    try:
        return mean_relative_accuracy(float(parsed), gt)
    except ZeroDivisionError:
        return 0.0


def score_answer(protocol: Protocol, kind: str, text: str, ground_truth: object) -> float:
    """Parse ``text`` and score it against ``ground_truth`` (what lmms-eval logs as the row's
    ``acc`` / ``accuracy`` / ``MRA:.5:.95:.05``)."""
    return score_parsed(kind, parse_answer(protocol, kind, text), ground_truth)


OPTION_LETTER_RE = re.compile(r"^\s*([A-Za-z])\s*[.)]")


def option_letters(options: Iterable[str] | None) -> frozenset[str]:
    """Upper-case letters of lettered options (``"A. text"`` or ``"A) text"``, the format of
    vistest.questions.option_letter); unlettered options add nothing."""
    return frozenset(m.group(1).upper() for m in (OPTION_LETTER_RE.match(o) for o in options or ()) if m)


def is_confident(kind: str, parsed: str | float | None, counting: bool, letters: Collection[str]) -> bool:
    """vistest's hallucination rule, where the evidence was removed: a confident answer is a
    finite non-zero count (``counting`` types), any finite number (other numeric types), or a
    token that is one of the option ``letters`` (MCQ; case-insensitive). The parse is the
    protocol's, so an answer lmms-eval could not parse ("I can't tell", and for revsi also
    "The answer is B") is not counted."""
    if kind == MCQ:
        return isinstance(parsed, str) and parsed.upper() in letters
    if parsed is None or not math.isfinite(parsed):
        return False
    return parsed != 0 if counting else True


# ---- aggregation -------------------------------------------------------------------------
def mean_of(values: Collection[float]) -> float:
    """``sum(values) / len(values)``: lmms-eval's overall (revsi and vsibench)."""
    return sum(values) / len(values)


def lmms_eval_subscores(type_scores: Mapping[str, float], protocol: Protocol, kind_of: Callable[[str], str],
                        mean: Callable[[list[float]], float] = mean_of) -> dict[str, float]:
    """lmms-eval's ``_compute_all_subscores`` on per-type mean scores (``type_scores``:
    question type -> mean): each type under its lmms-eval name (``kind_of(type)`` gives its
    kind), composite groups replaced by the ``mean`` of the members present, and
    ``protocol.overall`` = the ``mean`` of what remains (0.0 when nothing was scored). A missing
    group member is skipped, where vsibench would raise a KeyError. lmms-eval takes the means
    with pandas, numpy or ``sum / len`` in different places; they differ at most in the last
    bit, and ``mean`` says which one a caller uses."""
    def key(qtype: str) -> str:
        return protocol.type_key(qtype, kind_of(qtype))

    out = {key(t): v for t, v in type_scores.items()}
    for name, members in protocol.composites.items():
        keys = [key(m) for m in members if key(m) in out]
        if keys:
            out[name] = mean([out.pop(k) for k in keys])
    out[protocol.overall] = mean(list(out.values())) if out else 0.0
    return out
