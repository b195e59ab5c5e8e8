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
* ``kind``: :data:`MCQ` (``"mcq"``), :data:`NUMBER` (``"number"``), as
  vistest.questions.ANSWER_MCQ / ANSWER_NUMBER (tests/test_score.py checks they agree), or
  :data:`TEXT` (``"text"``: an open-ended categorical answer, vistest's reformulation ``open``).
* A parsed answer is the MCQ token (``str``), a number (``float``; None when the parse fails),
  a normalised text (:func:`normalize_text`), or :data:`ABSTAINED` (an abstention, where the
  question accepts one).
* Ground truth: MCQ, the option letter as a string; numeric, a number or numeric string
  (:func:`ground_truth_number`); text, a string; where the question accepts an abstention and
  the frames support no answer, :data:`CANNOT_DETERMINE`. Scores are floats in [0, 1].
* vistest's reformulations (vistest/reformulate.py) add two option wordings,
  :data:`NONE_OF_THESE` and :data:`CANNOT_DETERMINE`, recognised after normalisation.
* The lmms-eval code reproduced is named per rule (:data:`PROTOCOLS`, ``source``); where lmms-eval
  raises on an input vistest scores 0 instead, the docstring says so.
"""
import math
import re
import unicodedata
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

MCQ = "mcq"
NUMBER = "number"
TEXT = "text"


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
    lmms-eval code reproduced. ``composite_rule``: what a composite group missing a member
    becomes (:data:`COMPOSITE_RULES`); ``composite_source``: the code that rule follows.
    """

    name: str
    source: str
    mcq_token: Callable[[str], str]
    number: Callable[[str], float | None]
    type_key: Callable[[str, str], str]
    composites: Mapping[str, tuple[str, ...]]
    overall: str
    composite_rule: str = "present"
    composite_source: str = "lmms_eval/tasks/revsi/utils.py: _collapse_question_types"  # PRESENT_COMPOSITE_SOURCE


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


# What a composite group becomes on a set that lacks some of its member types (a partial set):
COMPOSITE_PRESENT = "present"    # the mean of the members present (lmms-eval revsi `_collapse_question_types`)
COMPOSITE_COMPLETE = "complete"  # the mean only when every member is present; otherwise the members stay
#                                  apart, each one subscore of the overall (VLMEvalKit vlmeval/dataset/vsibench.py
#                                  `VsiBench._aggregate`: `if all(k in output for k in rel_keys)`)
COMPOSITE_RULES = (COMPOSITE_PRESENT, COMPOSITE_COMPLETE)
PRESENT_COMPOSITE_SOURCE = Protocol.composite_source
VLMEVALKIT_COMPOSITE_SOURCE = ("VLMEvalKit vlmeval/dataset/vsibench.py: VsiBench._aggregate (ms-vlmeval 0.0.20); "
                               "lmms-eval's vsibench raises a KeyError on a partial group")

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
        vsibench_token, extract_number, vsibench_type_key, VSIBENCH_COMPOSITES, "overall",
        COMPOSITE_COMPLETE, VLMEVALKIT_COMPOSITE_SOURCE),
    "vsibench-legacy": Protocol(
        "vsibench-legacy", "lmms_eval/tasks/vsibench/utils.py (638db7ee 2025-04-21 to eab6655a^): "
                           "to_float(fuzzy_matching(pred)) for numbers",
        vsibench_token, vsibench_legacy_number, vsibench_type_key, VSIBENCH_COMPOSITES, "overall",
        COMPOSITE_COMPLETE, VLMEVALKIT_COMPOSITE_SOURCE),
})


# ---- reformulations: special options, abstention, open answers --------------------------
NONE_OF_THESE = "None of these"
CANNOT_DETERMINE = "Cannot be determined from the video"
ABSTAINED = "<cannot be determined>"  # the parse of an abstention: never the result of normalize_text
ARTICLES = frozenset({"a", "an", "the"})
NON_WORD_RE = re.compile(r"[\W_]+")
ABSTAIN_RE = re.compile(
    r"^(?:(?:i|it|this|that|answer)\s+)?(?:cannot|can\s+not|can\s+t|could\s+not|couldn\s+t)\s+(?:be\s+)?"
    r"(?:determined|determine|told|tell|answered|answer|known|know|say)\b"
    r"|^(?:unanswerable|unknown|not\s+determinable|i\s+do\s+not\s+know|i\s+don\s+t\s+know)\b")
OPTION_RE = re.compile(r"^\s*([A-Za-z])\s*[.)]\s*(.*)$", re.S)


def normalize_text(text: object) -> str:
    """An answer text for comparison: Unicode NFKC, case-folded, every run of characters that
    are not letters or digits (punctuation, ``_``, spaces) made one space, the articles *a*,
    *an*, *the* dropped, stripped. ``"The TV."`` -> ``"tv"``, ``"back-left"`` -> ``"back left"``,
    ``"chair, table, lamp"`` -> ``"chair table lamp"``, ``"can't"`` -> ``"can t"``."""
    s = unicodedata.normalize("NFKC", str(text)).casefold()
    return " ".join(w for w in NON_WORD_RE.split(s) if w and w not in ARTICLES)


def split_option(option: str) -> tuple[str | None, str]:
    """``"A. text"`` (or ``"A) text"``) -> (``"A"``, ``"text"``); (None, the stripped option) when unlettered."""
    m = OPTION_RE.match(option)
    if m:
        return m.group(1).upper(), m.group(2).strip()
    return None, option.strip()


def is_abstention_text(text: object) -> bool:
    """A response that declines to answer: after :func:`normalize_text` it starts with
    [*i* | *it* | *this* | *that* | *answer*] *cannot* / *can not* / *can't* / *could not* /
    *couldn't* [*be*] *determined* / *determine* / *tell* / *told* / *answer(ed)* / *know(n)* /
    *say*, or with *unanswerable*, *unknown*, *not determinable*, *I do not know*, *I don't know*.
    ``"Cannot be determined from the video"`` and ``"I cannot tell"`` are; ``"3"``, ``"None of
    these"`` and ``"It is 3, I cannot tell more"`` are not."""
    return bool(ABSTAIN_RE.match(normalize_text(text)))


def is_abstain_answer(ground_truth: object) -> bool:
    """The ground truth of a row whose frames support no answer where abstaining is accepted
    (a string that normalises as :data:`CANNOT_DETERMINE`)."""
    return isinstance(ground_truth, str) and normalize_text(ground_truth) == normalize_text(CANNOT_DETERMINE)


def special_letter(options: Iterable[str] | None, wording: str) -> str | None:
    """The (upper-case) letter of the lettered option whose text normalises as ``wording``."""
    want = normalize_text(wording)
    for o in options or ():
        letter, text = split_option(o)
        if letter is not None and normalize_text(text) == want:
            return letter
    return None


def none_letter(options: Iterable[str] | None) -> str | None:
    """The letter of the "None of these" option (:data:`NONE_OF_THESE`), None when there is none."""
    return special_letter(options, NONE_OF_THESE)


def abstain_letter(options: Iterable[str] | None) -> str | None:
    """The letter of the "Cannot be determined from the video" option (:data:`CANNOT_DETERMINE`)."""
    return special_letter(options, CANNOT_DETERMINE)


def is_special_option(option: str) -> bool:
    """An option worded :data:`NONE_OF_THESE` or :data:`CANNOT_DETERMINE` (lettered or not)."""
    text = normalize_text(split_option(option)[1])
    return text in (normalize_text(NONE_OF_THESE), normalize_text(CANNOT_DETERMINE))


# ---- one row -----------------------------------------------------------------------------
def parse_answer(protocol: Protocol, kind: str, text: str, abstain: bool = False) -> str | float | None:
    """The parsed answer: the MCQ token (a string), the number (None when unparsed), or the
    normalised text (:data:`TEXT`). ``abstain``: the question accepts an abstention; then a
    number or text response that is one (:func:`is_abstention_text`) parses as
    :data:`ABSTAINED` (an MCQ abstains by the letter of its :data:`CANNOT_DETERMINE` option).
    Without ``abstain`` the parse is lmms-eval's alone."""
    if kind == MCQ:
        return protocol.mcq_token(text)
    if abstain and is_abstention_text(text):
        return ABSTAINED
    if kind == TEXT:
        return normalize_text(text)
    return protocol.number(text)


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
    a row: vistest.budget.rows.TruthRow.scorable, and the exports write option letters as
    strings). Numeric: MRA; 0.0 when either side does not parse or the ground truth is 0
    (revsi catches the ZeroDivisionError; vsibench would raise).

    vistest's additions: a :data:`CANNOT_DETERMINE` ground truth (numbers, text) scores 1.0
    for :data:`ABSTAINED` and 0.0 otherwise, and an abstention scores 0.0 against any other;
    text: 1.0 when the normalised response equals the normalised ground truth (and is not empty)."""
    if kind == MCQ:
        return 1.0 if isinstance(ground_truth, str) and str(parsed).lower() == ground_truth.lower() else 0.0
    if is_abstain_answer(ground_truth) or parsed == ABSTAINED:
        return 1.0 if is_abstain_answer(ground_truth) and parsed == ABSTAINED else 0.0
    if kind == TEXT:
        return 1.0 if isinstance(ground_truth, str) and parsed and parsed == normalize_text(ground_truth) else 0.0
    gt = ground_truth_number(ground_truth)
    if not isinstance(parsed, float) or gt is None:
        return 0.0
    try:
        return mean_relative_accuracy(parsed, gt)
    except ZeroDivisionError:
        return 0.0


def score_answer(protocol: Protocol, kind: str, text: str, ground_truth: object, abstain: bool = False) -> float:
    """Parse ``text`` and score it against ``ground_truth`` (what lmms-eval logs as the row's
    ``acc`` / ``accuracy`` / ``MRA:.5:.95:.05``)."""
    return score_parsed(kind, parse_answer(protocol, kind, text, abstain), ground_truth)


def option_letters(options: Iterable[str] | None) -> frozenset[str]:
    """Upper-case letters of lettered options (``"A. text"`` or ``"A) text"``, the format of
    vistest.questions.option_letter); unlettered options add nothing."""
    return frozenset(letter for letter, _ in map(split_option, options or ()) if letter)


def content_letters(options: Iterable[str] | None) -> frozenset[str]:
    """The letters of the options that are answers about the video: every lettered option but
    "None of these" and "Cannot be determined from the video" (:func:`is_special_option`)."""
    return frozenset(letter for letter, _ in map(split_option, options or ())
                     if letter) - {none_letter(options), abstain_letter(options)}


ABSTAINED_CLASS, NONE_CLASS, ZERO_CLASS, CONFIDENT_CLASS, UNPARSED_CLASS = (
    "abstained", "none_of_these", "zero", "confident", "unparsed")
RESPONSE_CLASSES = (ABSTAINED_CLASS, NONE_CLASS, ZERO_CLASS, CONFIDENT_CLASS, UNPARSED_CLASS)


def response_class(kind: str, text: str, parsed: str | float | None, counting: bool,
                   options: Iterable[str] | None) -> str:
    """What a response does, whatever the ground truth (one of :data:`RESPONSE_CLASSES`):

    * ``abstained``: the :data:`CANNOT_DETERMINE` option's letter (MCQ), or an abstention in
      words (:func:`is_abstention_text`; for numbers it wins over a number in the text);
    * ``none_of_these``: the :data:`NONE_OF_THESE` option's letter;
    * ``zero``: a count of 0 (``counting`` types);
    * ``confident``: an answer about the video: a letter of :func:`content_letters` (MCQ), a
      finite number (a non-zero one for counting), a non-empty text;
    * ``unparsed``: anything else (the protocol's parse failed: for revsi ``"The answer is B"``).

    Where the evidence was removed, ``confident`` is a hallucination (vistest's rule)."""
    if kind == MCQ:
        token = parsed.upper() if isinstance(parsed, str) else ""
        if token and token == abstain_letter(options):
            return ABSTAINED_CLASS
        if token and token == none_letter(options):
            return NONE_CLASS
        if token in content_letters(options):
            return CONFIDENT_CLASS
        return ABSTAINED_CLASS if is_abstention_text(text) else UNPARSED_CLASS
    if parsed == ABSTAINED or is_abstention_text(text):
        return ABSTAINED_CLASS
    if kind == TEXT:
        return CONFIDENT_CLASS if parsed else UNPARSED_CLASS
    if not isinstance(parsed, float) or not math.isfinite(parsed):
        return UNPARSED_CLASS
    return ZERO_CLASS if counting and parsed == 0 else CONFIDENT_CLASS


# ---- aggregation -------------------------------------------------------------------------
def mean_of(values: Collection[float]) -> float:
    """``sum(values) / len(values)``: lmms-eval's overall (revsi and vsibench)."""
    return sum(values) / len(values)


def lmms_eval_subscores(type_scores: Mapping[str, float], protocol: Protocol, kind_of: Callable[[str], str],
                        mean: Callable[[list[float]], float] = mean_of) -> dict[str, float]:
    """lmms-eval's ``_compute_all_subscores`` on per-type mean scores (``type_scores``:
    question type -> mean): each type under its lmms-eval name (``kind_of(type)`` gives its
    kind), composite groups replaced by the ``mean`` of their members, and ``protocol.overall``
    = the ``mean`` of what remains (0.0 when nothing was scored). A group missing a member
    follows ``protocol.composite_rule``: ``present`` averages the members present (revsi);
    ``complete`` keeps them apart, each a subscore of its own (VLMEvalKit's vsibench; lmms-eval's
    vsibench would raise a KeyError). lmms-eval takes the means with pandas, numpy or
    ``sum / len`` in different places; they differ at most in the last bit, and ``mean`` says
    which one a caller uses."""
    def key(qtype: str) -> str:
        return protocol.type_key(qtype, kind_of(qtype))

    out = {key(t): v for t, v in type_scores.items()}
    for name, members in protocol.composites.items():
        keys = [key(m) for m in members if key(m) in out]
        complete = len(keys) == len(members)
        if keys and (complete or protocol.composite_rule == COMPOSITE_PRESENT):
            out[name] = mean([out.pop(k) for k in keys])
    out[protocol.overall] = mean(list(out.values())) if out else 0.0
    return out


def partial_composites(question_types: Iterable[str], protocol: Protocol) -> dict[str, tuple[str, ...]]:
    """Composite group -> its members missing from ``question_types``, for the groups present
    but incomplete (the groups where :data:`COMPOSITE_RULES` give different overalls)."""
    present = set(question_types)
    return {name: tuple(m for m in members if m not in present)
            for name, members in protocol.composites.items()
            if present & set(members) and not set(members) <= present}


# ---- stress tests of reformulated questions (vistest/reformulate.py) -----------------------
# A scored row, for these functions, is a mapping with ``question_type``, ``reformulation`` (one
# of REFORMULATIONS; missing means BASE), ``group_id`` (the base question's id; missing: the
# row's own ``id``), ``score`` (against the row's own ground truth; None: not scored),
# ``n_options`` (MCQ), ``correct`` (MCQ: the ground-truth letter), ``picked`` (MCQ: the parsed
# token, upper-cased), ``response`` (a RESPONSE_CLASSES name) and ``evidence`` (False where the
# frames support no answer about the video: a dummy video, or an unanswerable budget).
# Callers pass the rows of one frame budget (a group is compared with itself at one budget).
BASE = "base"
CIRCULAR, NOTA_ADD, NOTA_REPLACE, OPEN, ABSTAIN = "circular", "nota-add", "nota-replace", "open", "abstain"
REFORMULATIONS = (BASE, CIRCULAR, NOTA_ADD, NOTA_REPLACE, OPEN, ABSTAIN)
STRESS_METRICS = MappingProxyType({
    "circular_accuracy": "groups (base + every cyclic shift, all scored) whose every permutation is right",
    "circular_vanilla_accuracy": "the base question's accuracy on those same groups",
    "nota_add_accuracy": "'None of these' added beside the options",
    "nota_replace_accuracy": "the correct option replaced by 'None of these'",
    "nota_replace_drop": "base minus nota-replace, on groups with both scored",
    "open_score": "options removed (text match or MRA)",
    "open_mcq_gap": "base (multiple choice) minus open, on groups with both scored",
    "abstain_accuracy": "'Cannot be determined from the video' offered",
})


def reformulation_order(name: str) -> int:
    """Sort key of a reformulation: :data:`REFORMULATIONS` order, unknown names last."""
    return REFORMULATIONS.index(name) if name in REFORMULATIONS else len(REFORMULATIONS)


def row_reformulation(row: Mapping) -> str:
    """The row's reformulation (:data:`BASE` when it has none)."""
    return row.get("reformulation") or BASE


def row_group(row: Mapping) -> str:
    """The row's group: its ``group_id``, else its own ``id``."""
    return str(row.get("group_id") or row.get("id"))


def stress_values(rows: Iterable[Mapping]) -> dict[str, list[tuple[str, float]]]:
    """Per stress metric (:data:`STRESS_METRICS`), the (question type, value) of each scored
    row or group of one budget: a reformulation's rows give their scores; ``circular_accuracy``
    gives 1.0 or 0.0 per complete group (its base and ``n_options - 1`` circular rows all
    scored), ``circular_vanilla_accuracy`` the base score of that group; the drop and the gap
    give base minus variant per group with both scored (a group's variant rows averaged)."""
    groups: dict[tuple[str, str], dict[str, list[Mapping]]] = {}
    for r in rows:
        if r.get("score") is not None:
            groups.setdefault((r["question_type"], row_group(r)), {}).setdefault(row_reformulation(r), []).append(r)
    out: dict[str, list[tuple[str, float]]] = {m: [] for m in STRESS_METRICS}
    simple = {NOTA_ADD: "nota_add_accuracy", NOTA_REPLACE: "nota_replace_accuracy", OPEN: "open_score",
              ABSTAIN: "abstain_accuracy"}
    for (qtype, _group), kinds in sorted(groups.items()):
        for kind, metric in simple.items():
            out[metric] += [(qtype, r["score"]) for r in kinds.get(kind, [])]
        base = kinds.get(BASE)
        if not base:
            continue
        b = base[0]["score"]
        circ = kinds.get(CIRCULAR, [])
        if circ and len(circ) + 1 == base[0].get("n_options"):
            out["circular_accuracy"].append((qtype, 1.0 if all(r["score"] == 1.0 for r in base + circ) else 0.0))
            out["circular_vanilla_accuracy"].append((qtype, b))
        for kind, metric in ((NOTA_REPLACE, "nota_replace_drop"), (OPEN, "open_mcq_gap")):
            if kinds.get(kind):
                out[metric].append((qtype, b - mean_of([r["score"] for r in kinds[kind]])))
    return out


def type_means(pairs: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Mean value per question type (``sum / len``), types sorted."""
    by: dict[str, list[float]] = {}
    for qtype, v in pairs:
        by.setdefault(qtype, []).append(v)
    return {t: mean_of(by[t]) for t in sorted(by)}


def stress_summary(rows: Iterable[Mapping], protocol: Protocol, kind_of: Callable[[str], str]) -> dict[str, float]:
    """Each stress metric with values, aggregated as lmms-eval aggregates a task (per-type
    means, composites, then the overall: :func:`lmms_eval_subscores` with ``sum / len``)."""
    return {m: lmms_eval_subscores(type_means(pairs), protocol, kind_of)[protocol.overall]
            for m, pairs in stress_values(rows).items() if pairs}


def position_rows(rows: Iterable[Mapping]) -> list[Mapping]:
    """The rows of the position report: scored MCQ rows (``correct`` set) of the base question
    and its cyclic shifts, where the letter is the only thing that moves."""
    return [r for r in rows if r.get("score") is not None and r.get("correct")
            and row_reformulation(r) in (BASE, CIRCULAR)]


def position_accuracy(rows: Iterable[Mapping]) -> dict[str, tuple[int, float, float]]:
    """Per ground-truth letter (sorted): (rows, accuracy on them, fraction of all the position
    rows answered with that letter) over :func:`position_rows`. A model that always answers
    "A" scores 1.0 where A is right, 0.0 elsewhere, and picks A on every row."""
    use = position_rows(rows)
    out = {}
    for letter in sorted({str(r["correct"]).upper() for r in use}):
        mine = [r["score"] for r in use if str(r["correct"]).upper() == letter]
        picked = sum(1 for r in use if r.get("picked") == letter)
        out[letter] = (len(mine), mean_of(mine), picked / len(use))
    return out


def abstention_rate(rows: Collection[Mapping]) -> float:
    """Fraction of rows whose response abstained (0.0 without rows)."""
    return sum(1 for r in rows if r["response"] == ABSTAINED_CLASS) / len(rows) if rows else 0.0


def hallucination_rate(rows: Iterable[Mapping]) -> float:
    """Fraction of the rows without evidence (``evidence`` False) answered confidently (0.0 without such rows)."""
    blind = [r for r in rows if not r["evidence"]]
    return sum(1 for r in blind if r["response"] == CONFIDENT_CLASS) / len(blind) if blind else 0.0
