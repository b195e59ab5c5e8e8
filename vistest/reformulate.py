"""Reformulate: stress variants of each question, as ordinary question JSONL (``vistest reformulate``).

VGenST-Bench shows that multiple-choice accuracy hides shortcuts: position bias (vanilla above
circular accuracy), ranking the options instead of verifying them (accuracy collapses when the
correct option is replaced by "None of these"), and a reasoning gap that open-ended questions
expose. ReVSI's dummy videos measure hallucination but give a model no answer that is right
when the evidence is gone. Each base question becomes a *group*: the base question itself and
its variants (:data:`VARIANTS`), each a question of its own with the fields

* ``id``: ``{base id}~{variant}`` (circular: ``{base id}~circular{shift}``), :data:`ID_SEP`;
* ``group_id``: the base question's id (the base row carries its own id);
* ``reformulation``: ``base`` or the variant;
* ``shift`` (circular), ``answer_kind`` (open), ``accepts_abstention`` (abstain, numbers).

Variants (docs/questions-format.md, scoring in docs/scoring.md):

* ``circular``: every other cyclic permutation of the options (``k`` options: shifts
  1..k-1; shift s puts the base's option ``(i + s) mod k`` at letter i); the base row is
  shift 0, so a group of ``k`` rows covers every position of the correct option once;
* ``nota-add`` (VGenST V1): the option "None of these" appended after the options; the answer
  is unchanged;
* ``nota-replace`` (V2): the correct option removed, the others re-lettered in their order,
  "None of these" appended: it is the answer;
* ``open``: the options removed. When every option starts with a number the answer is that
  number (``answer_kind`` ``number``, scored by MRA); otherwise the correct option's text
  (``answer_kind`` ``text``, scored by a normalised match: vistest.answers.normalize_text);
* ``abstain``: multiple choice: the option "Cannot be determined from the video" appended;
  numbers: the question asks for that phrase when the video cannot tell
  (:data:`ABSTAIN_INSTRUCTION`) and ``accepts_abstention`` is set.

"None of these" and "Cannot be determined from the video" always come last, so their letter is
the last one. Variants that do not apply to a question (no options, numeric types, unlettered
options, options that already hold a special option) are skipped and counted.

**Leak-free texts.** A variant's text never tells which option was removed or how the options
moved: every variant with options names exactly what they offer, in their order. The lists in
the question that name the options (:func:`enumeration`, :func:`find_lists`) are rewritten to the
variant's options (:func:`join_list`); options that are orders of the same labels (appearance
order) have their labels listed in the first option's order. nota-replace is not written where
no leak-free text exists (:func:`_nota_replace_block`): a closed answer set
(:data:`CLOSED_ANSWER_SETS`), a binary list, a list naming other choices, a numeric ladder with
the answer inside, the removed option still named. Every skip is kept per question
(:class:`Skip`, the base row's :data:`SKIPPED_FIELD`). Two options with the same text and a
question id equal to a variant id are input errors. Every later
stage reads the output unchanged: the budget and dummy ground truth carry over, and where the
frames support no answer a question offering "Cannot be determined from the video" or "None of
these" gets that answer (vistest.budget.truth, vistest.videos.plan).
"""
from __future__ import annotations

import json
import math
import os
import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .atomic import write_atomic
from .answers import ABSTAIN, BASE, CANNOT_DETERMINE, CIRCULAR, NONE_OF_THESE, NOTA_ADD, NOTA_REPLACE, OPEN
from .motion import HEADINGS
from .questions import (
    ANSWER_MCQ,
    ANSWER_NUMBER,
    ANSWER_TEXT,
    Question,
    QuestionError,
    is_special_option,
    load_questions,
    option_letter,
    option_number,
    parse_questions,
)

VARIANTS = (CIRCULAR, NOTA_ADD, NOTA_REPLACE, OPEN, ABSTAIN)
ID_SEP = "~"
ABSTAIN_INSTRUCTION = f'If the video does not show enough to answer, answer "{CANNOT_DETERMINE}".'
LETTERS = string.ascii_uppercase
SKIPPED_FIELD = "skipped_variants"  # on a base row: variant -> why it was not written

# why a variant was not written for a question
SKIP_NUMBER = "answered with a number"
SKIP_NO_OPTIONS = "no options"
SKIP_UNLETTERED = "unlettered options"
SKIP_HAS_SPECIAL = "already offers a special option"
SKIP_ONE_OPTION = "a single option"
SKIP_TOO_MANY = "too many options to letter"
# the reasons a variant does not apply at all (the others: it would give its answer away)
NOT_APPLICABLE = (SKIP_NUMBER, SKIP_NO_OPTIONS, SKIP_UNLETTERED, SKIP_HAS_SPECIAL, SKIP_ONE_OPTION, SKIP_TOO_MANY)
SKIP_OTHER_LIST = "the question lists other choices than its options: no text lists exactly the options offered"
SKIP_CLOSED = "the options are a closed answer set ({}): the one removed is known without the video"
SKIP_BINARY = "a binary question whose text names both answers: no text names only the one left"
SKIP_LADDER = ("numeric options on a regular ladder with the answer inside it: the gap the removed value leaves "
               "shows it")
SKIP_NAMED = "the question text names the removed option"

# Answer spaces a question's options can cover completely: removing one leaves a set whose missing
# member anyone can name. VSI-Bench's object_rel_direction_easy (left / right), ReVSI's easy
# directions and VSI-Bench's medium (left / right / back: vistest.generate.templates.EASY_ANSWERS),
# the quadrants of the hard directions (templates.HARD_ANSWERS), yes / no, the four headings of the
# dynamic type motion_direction (vistest.motion.HEADINGS: right / away / left / toward).
CLOSED_ANSWER_SETS = (("left", "right"), ("left", "right", "back"),
                      ("front-left", "front-right", "back-left", "back-right"), ("yes", "no"),
                      HEADINGS)
# a list in a question: items joined by ", " / " or " / " and " / ", or " (an optional "the" after)
LIST_SEP_RE = re.compile(r"(?:\s*,\s*(?:(?:or|and)\s+)?|\s+(?:or|and)\s+)(?:the\s+)?", re.IGNORECASE)
LADDER_TOLERANCE = 0.15  # relative spread of a ladder's steps (log-ratios or differences): rounded rungs


def parse_variants(text: str) -> tuple[str, ...]:
    """``"circular,open"`` -> the variants in :data:`VARIANTS` order; an unknown or empty list raises."""
    names = [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in names if v not in VARIANTS]
    if bad or not names:
        raise QuestionError(f"--variants: expected a comma-separated subset of {','.join(VARIANTS)}, got {text!r}")
    return tuple(v for v in VARIANTS if v in names)


def variant_id(base_id: str, variant: str, shift: int | None = None) -> str:
    """The id of a variant row: ``{base}~{variant}``, circular ``{base}~circular{shift}``."""
    return f"{base_id}{ID_SEP}{variant}{shift if shift is not None else ''}"


def lettered(texts: Sequence[str]) -> list[str]:
    """``["x", "y"]`` -> ``["A. x", "B. y"]``."""
    return [f"{LETTERS[i]}. {t}" for i, t in enumerate(texts)]


def _norm(text: str) -> str:
    """Case-folded, whitespace collapsed: how option texts and list items are compared."""
    return " ".join(text.split()).casefold()


def _labels(text: str) -> list[str]:
    """The comma-separated labels of an option that is an order (``"bed, plant, sofa"``)."""
    return [p.strip() for p in text.split(",") if p.strip()]


@dataclass(frozen=True)
class TextList:
    """A list in a question's text: ``items`` (normalised, see :func:`_norm`) joined by ``seps``
    (as written), spanning ``text[start:end]``."""

    start: int
    end: int
    items: tuple[str, ...]
    seps: tuple[str, ...]


def find_lists(text: str, items: Iterable[str]) -> list[TextList]:
    """Every run of two or more of ``items`` in ``text`` (whole words, any case, longest first)
    joined only by list separators (:data:`LIST_SEP_RE`)."""
    alts = sorted({_norm(i) for i in items if i.strip()}, key=len, reverse=True)
    if not alts:
        return []
    pat = re.compile(r"(?<![\w-])(" + "|".join(r"\s+".join(map(re.escape, a.split())) for a in alts) + r")(?![\w-])",
                     re.IGNORECASE)
    out: list[TextList] = []
    run: list[re.Match] = []
    seps: list[str] = []

    def close() -> None:
        if len(run) > 1:
            out.append(TextList(run[0].start(), run[-1].end(), tuple(_norm(m.group(1)) for m in run), tuple(seps)))

    for m in pat.finditer(text):
        gap = text[run[-1].end():m.start()] if run else ""
        if run and LIST_SEP_RE.fullmatch(gap):
            run.append(m)
            seps.append(gap)
        else:
            close()
            run, seps = [m], []
    close()
    return out


def join_list(items: Sequence[str], seps: Sequence[str]) -> str:
    """``items`` joined in the style of a list written with ``seps``: the same separators for the
    same length; otherwise the first separator between the leading items and the last one before
    the final item (``"left, right, or back"`` with two items: ``"left or back"``)."""
    if len(items) == len(seps) + 1:
        use = list(seps)
    else:
        last = seps[-1]
        if len(items) == 2 and re.match(r"\s*,\s*(?:or|and)\b", last, re.IGNORECASE):
            last = re.sub(r"^\s*,\s*", " ", last)  # no serial comma between two items
        use = [seps[0]] * (len(items) - 2) + [last]
    return "".join(i + s for i, s in zip(items, use)) + items[-1]


def _rewrite(text: str, lists: Sequence[TextList], items: Sequence[str]) -> str:
    """``text`` with every list of ``lists`` replaced by ``items`` (:func:`join_list`)."""
    for tl in sorted(lists, key=lambda t: t.start, reverse=True):
        text = text[:tl.start] + join_list(items, tl.seps) + text[tl.end:]
    return text


def _phrase_re(phrase: str) -> re.Pattern:
    """``phrase`` as whole words, any case, any spacing."""
    words = r"\s+".join(map(re.escape, _norm(phrase).split())) or "$^"
    return re.compile(rf"(?<![\w-]){words}(?![\w-])", re.IGNORECASE)


def _names(text: str, phrase: str, offered: Sequence[str] = ()) -> bool:
    """Whether ``text`` names ``phrase`` (whole words, any case) other than inside one of the
    ``offered`` phrases (``"table"`` within ``"side table"``)."""
    for other in sorted(offered, key=len, reverse=True):
        if _norm(other) != _norm(phrase):
            text = _phrase_re(other).sub(" ", text)
    return _phrase_re(phrase).search(text) is not None


def _regular_ladder(values: Sequence[float]) -> bool:
    """Whether sorted ``values`` (3 or more, distinct) step evenly, by ratio or by difference,
    within :data:`LADDER_TOLERANCE`."""
    v = sorted(values)
    if len(v) < 3 or len(set(v)) < len(v):
        return False
    candidates = [[b - a for a, b in zip(v, v[1:])]]
    if v[0] > 0:
        candidates.append([math.log(b / a) for a, b in zip(v, v[1:])])
    for steps in candidates:
        mean = sum(steps) / len(steps)
        if mean > 0 and all(abs(s - mean) <= LADDER_TOLERANCE * mean for s in steps):
            return True
    return False


@dataclass(frozen=True)
class Enumeration:
    """How a question's text names its options. ``labels``: the options are orders of the same
    labels (appearance order), the text's lists are lists of those labels; else of the option
    texts. ``lists``: the lists naming exactly what the options offer (each once), to rewrite;
    ``other``: the text lists some of them with something else (nothing can be rewritten)."""

    labels: bool
    lists: tuple[TextList, ...]
    other: bool

    def items(self, texts: Sequence[str]) -> list[str]:
        """What a variant offering option ``texts`` lists: the texts in their order, or the first
        option's labels in its order (an order of labels: the text then names an offered order)."""
        return _labels(texts[0]) if self.labels else list(texts)


def enumeration(question: str, texts: Sequence[str]) -> Enumeration:
    """The lists of ``question`` that name the options ``texts`` (see :class:`Enumeration`)."""
    label_sets = {frozenset(_norm(x) for x in _labels(t)) for t in texts}
    labels = len(label_sets) == 1 and all(len(_labels(t)) > 1 for t in texts)
    names = sorted(next(iter(label_sets))) if labels else [_norm(t) for t in texts]
    exact, other = [], False
    for tl in find_lists(question, names):
        if sorted(tl.items) == sorted(names) and not _continues(question, tl):
            exact.append(tl)
        else:
            other = True
    return Enumeration(labels, tuple(exact), other)


# one more list item (up to 4 words) before the list's closing punctuation, or after its opening one
_ITEM = r"[\w][\w-]*(?:\s+[\w][\w-]*){0,3}"
_MORE_AFTER_RE = re.compile(rf"(?:{LIST_SEP_RE.pattern}){_ITEM}\s*[)?:;.\n]", re.IGNORECASE)
_MORE_BEFORE_RE = re.compile(rf"[(:]\s*{_ITEM}(?:{LIST_SEP_RE.pattern})$", re.IGNORECASE)


def _continues(text: str, tl: TextList) -> bool:
    """Whether the list ``tl`` goes on with an item that is not an option (``"(table, tv, lamp)"``
    with options table and tv)."""
    return bool(_MORE_AFTER_RE.match(text, tl.end) or _MORE_BEFORE_RE.search(text[:tl.start]))


@dataclass(frozen=True)
class Group:
    """One base question and its variants: ``records`` (the base first, then :data:`VARIANTS`
    order), ``skipped``: (variant, reason) of each variant that did not apply."""

    records: tuple[dict, ...]
    skipped: tuple[tuple[str, str], ...]


def _options_texts(q: Question) -> tuple[list[str] | None, int | None, str | None]:
    """(option texts, index of the correct one, None) or (None, None, why not) for an MCQ."""
    if not q.options:
        return None, None, SKIP_NO_OPTIONS
    split = [option_letter(o) for o in q.options]
    if not all(letter for letter, _ in split):
        return None, None, SKIP_UNLETTERED
    if len(split) < 2:
        return None, None, SKIP_ONE_OPTION
    if len(split) + 1 > len(LETTERS):
        return None, None, SKIP_TOO_MANY
    letters = [letter for letter, _ in split]
    return [text for _, text in split], letters.index(str(q.ground_truth).strip().upper()), None


def check_base(q: Question) -> None:
    """Refuse a question that is itself a reformulation: QuestionError naming its file:line."""
    if q.reformulation != BASE or q.record.get("group_id") not in (None, q.record["id"]):
        raise QuestionError(f"{q.where}: reformulation: the question is already a reformulation "
                            f"({q.reformulation!r} of group {q.group_id!r}); reformulate the base questions")


def check_options(q: Question) -> None:
    """Refuse two options offering the same text (any case and spacing): QuestionError naming
    the question's file:line and ``options``."""
    seen: dict[str, str] = {}
    for o in q.options or ():
        key = _norm(option_letter(o)[1])
        if key in seen:
            raise QuestionError(f"{q.where}: options: {seen[key]!r} and {o!r} offer the same text; every option "
                                f"of a question must differ")
        seen[key] = o


def _row(base: Mapping[str, Any], q: Question, variant: str, **fields: Any) -> dict:
    """A variant's record: the base record with ``fields`` replaced (a None value removes the field)."""
    rec = {**base, "id": variant_id(q.id, variant, fields.get("shift")), "group_id": q.record["id"],
           "reformulation": variant}
    for k, v in fields.items():
        if v is None:
            rec.pop(k, None)
        else:
            rec[k] = v
    return rec


def _nota_replace_block(q: Question, texts: list[str], correct: int, en: Enumeration) -> str | None:
    """Why no leak-free nota-replace exists for ``q`` (None: it does). Docs: questions-format.md."""
    offered = frozenset(_norm(t) for t in texts)
    closed = [c for c in CLOSED_ANSWER_SETS if offered <= set(c)]
    if closed:
        return SKIP_CLOSED.format(" / ".join(min(closed, key=len)))
    if en.other:
        return SKIP_OTHER_LIST
    if en.lists and len(texts) - 1 < 2:
        return SKIP_BINARY
    numbers = [option_number(t) for t in texts]
    if all(x is not None for x in numbers) and _regular_ladder(numbers):
        if min(numbers) < numbers[correct] < max(numbers):
            return SKIP_LADDER
    return None


def reformulate_question(q: Question, variants: Sequence[str] = VARIANTS) -> Group:
    """The group of one base question (module docstring), variants in :data:`VARIANTS` order.
    A question that is itself a reformulation raises QuestionError, so do two options with the
    same text (:func:`check_options`)."""
    check_base(q)
    check_options(q)
    base = {k: v for k, v in q.record.items() if k != SKIPPED_FIELD}
    base = {**base, "group_id": q.record["id"], "reformulation": BASE}
    rows: list[dict] = [base]
    skipped: list[tuple[str, str]] = []
    mcq = q.type.answer == ANSWER_MCQ
    texts, correct, why = _options_texts(q) if mcq else (None, None, SKIP_NUMBER)
    if texts is not None and any(is_special_option(t) for t in texts):
        texts, why = None, SKIP_HAS_SPECIAL
    en = enumeration(q.question, texts) if texts is not None else None

    def text_for(offered: list[str]) -> str:
        """The question listing exactly ``offered`` (the variant's non-special options, in order)."""
        return _rewrite(q.question, en.lists, en.items(offered))

    for variant in (v for v in VARIANTS if v in variants):
        if variant == ABSTAIN and not mcq:
            rows.append(_row(base, q, ABSTAIN, question=f"{q.question.rstrip()} {ABSTAIN_INSTRUCTION}",
                             accepts_abstention=True))
            continue
        if texts is None:
            skipped.append((variant, why))
            continue
        k = len(texts)
        if variant == CIRCULAR:
            if en.other:
                skipped.append((variant, SKIP_OTHER_LIST))
                continue
            for s in range(1, k):
                rotated = [texts[(i + s) % k] for i in range(k)]
                rows.append(_row(base, q, CIRCULAR, shift=s, question=text_for(rotated), options=lettered(rotated),
                                 ground_truth=LETTERS[(correct - s) % k]))
        elif variant == NOTA_ADD:
            rows.append(_row(base, q, NOTA_ADD, question=text_for(texts), options=lettered(texts + [NONE_OF_THESE])))
        elif variant == NOTA_REPLACE:
            rest = [t for i, t in enumerate(texts) if i != correct]
            block = _nota_replace_block(q, texts, correct, en)
            question = text_for(rest) if block is None else ""
            if block is None and _names(question, texts[correct], rest):
                block = SKIP_NAMED
            if block is not None:
                skipped.append((variant, block))
                continue
            rows.append(_row(base, q, NOTA_REPLACE, question=question, options=lettered(rest + [NONE_OF_THESE]),
                             ground_truth=LETTERS[len(rest)]))
        elif variant == OPEN:
            numbers = [option_number(t) for t in texts]
            if all(x is not None for x in numbers):
                rows.append(_row(base, q, OPEN, options=None, answer_kind=ANSWER_NUMBER,
                                 ground_truth=f"{numbers[correct]:g}"))
            else:
                rows.append(_row(base, q, OPEN, options=None, answer_kind=ANSWER_TEXT, ground_truth=texts[correct]))
        elif variant == ABSTAIN:
            rows.append(_row(base, q, ABSTAIN, question=text_for(texts), options=lettered(texts + [CANNOT_DETERMINE])))
    if skipped:
        base[SKIPPED_FIELD] = dict(skipped)
    return Group(tuple(rows), tuple(skipped))


@dataclass(frozen=True)
class Skip:
    """A variant not written for one question: the question's ``id``, ``question_type`` and
    ``where`` (file:line), the ``variant`` and the ``reason``."""

    id: str
    question_type: str
    where: str
    variant: str
    reason: str

    @property
    def leak(self) -> bool:
        """Skipped because the variant would give its answer away (else: it does not apply)."""
        return self.reason not in NOT_APPLICABLE

    def to_record(self) -> dict:
        return {"id": self.id, "question_type": self.question_type, "where": self.where, "variant": self.variant,
                "reason": self.reason, "leak": self.leak}


@dataclass(frozen=True)
class Reformulated:
    """A reformulated question set: ``records`` (each base question followed by its variants),
    ``written``: rows per reformulation (``base`` included), ``skips``: every variant not
    written, per question (:class:`Skip`, input order)."""

    records: tuple[dict, ...]
    written: Mapping[str, int]
    skips: tuple[Skip, ...] = ()

    @property
    def skipped(self) -> dict[tuple[str, str], int]:
        """(variant, reason) -> questions for which the variant was not written."""
        return dict(Counter((s.variant, s.reason) for s in self.skips))

    def jsonl(self) -> str:
        """The question JSONL text (one record per line, keys in the input's order, then the new ones)."""
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.records)

    def skipped_jsonl(self) -> str:
        """``skipped.jsonl``: one :class:`Skip` record per line."""
        return "".join(json.dumps(s.to_record(), ensure_ascii=False) + "\n" for s in self.skips)

    def summary(self) -> str:
        """Rows written per reformulation and the questions each variant skipped, and why."""
        lines = [f"{'reformulation':<14}{'rows':>6}  skipped (questions: reason)"]
        skipped = self.skipped
        for kind in (BASE, *VARIANTS):
            skip = "; ".join(f"{n}: {why}" for (v, why), n in sorted(skipped.items()) if v == kind)
            if kind in self.written or skip:
                lines.append(f"{kind:<14}{self.written.get(kind, 0):>6}  {skip or '-'}")
        return "\n".join(lines) + "\n"

    def report_md(self, source: str = "") -> str:
        """``report.md``: the summary, then every skipped variant with its question and reason."""
        out = [f"# vistest reformulate{': ' + source if source else ''}", "", "```", self.summary().rstrip(), "```",
               "", "## Variants not written: they would give the answer away", ""]
        leaks = [s for s in self.skips if s.leak]
        if leaks:
            out += ["| question | type | line | variant | reason |", "|---|---|---|---|---|"]
            out += [f"| {s.id} | {s.question_type} | {s.where} | {s.variant} | {s.reason} |" for s in leaks]
        else:
            out.append("None.")
        out += ["", "## Variants that do not apply", ""]
        rest: dict[str, list[Skip]] = {}
        for s in self.skips:
            if not s.leak:
                rest.setdefault(s.reason, []).append(s)
        for reason, skips in rest.items():
            ids = list(dict.fromkeys(s.id for s in skips))
            out.append(f"- {reason}: {', '.join(dict.fromkeys(s.variant for s in skips))} ({len(ids)} questions: "
                       f"{', '.join(ids[:20])}{', ...' if len(ids) > 20 else ''})")
        if not rest:
            out.append("None.")
        return "\n".join(out) + "\n"


def check_ids(questions: Sequence[Question], groups: Sequence[Group]) -> None:
    """Refuse a question whose id is the id a variant of another question gets
    (``demo-9~circular1``): QuestionError naming the file:line and ``id`` of both."""
    ids = {str(q.record["id"]): q for q in questions}
    for q, g in zip(questions, groups):
        for r in g.records[1:]:
            if str(r["id"]) in ids:
                raise QuestionError(f"{ids[str(r['id'])].where}: id: {r['id']!r} is the id vistest reformulate gives "
                                    f"a variant of question {q.id!r} ({q.where}); rename the question (ids must not "
                                    f"end in {ID_SEP}<variant>)")


def reformulate(questions: Iterable[Question], variants: Sequence[str] = VARIANTS) -> Reformulated:
    """Reformulate every question (module docstring). Input errors (QuestionError): a
    reformulated question, two options with the same text, an id a variant would take. The
    output is checked with the question parser (an invalid row is a bug of this module:
    AssertionError)."""
    questions = tuple(questions)
    for q in questions:
        check_base(q)
    groups = [reformulate_question(q, variants) for q in questions]
    check_ids(questions, groups)
    records: list[dict] = []
    skips: list[Skip] = []
    for q, g in zip(questions, groups):
        records += g.records
        skips += [Skip(q.id, q.type.name, q.where, v, why) for v, why in g.skipped]
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    try:
        parse_questions(text.splitlines(), "<reformulated>")
    except QuestionError as e:  # every input was valid, so an invalid output is ours
        raise AssertionError(f"reformulate wrote an invalid question: {e}") from e
    written = Counter(r["reformulation"] for r in records)
    return Reformulated(tuple(records), dict(written), tuple(skips))


SKIPPED_FILE = "skipped.jsonl"
REPORT_FILE = "report.md"


def write_reformulated(questions_path: str | os.PathLike, out: str | os.PathLike,
                       variants: Sequence[str] = VARIANTS, report: str | os.PathLike | None = None) -> Reformulated:
    """``vistest reformulate``: read and validate QUESTIONS (no scene needed), write the
    reformulated set to ``out`` atomically (a rerun writes the same bytes); ``report``: a folder
    for :data:`SKIPPED_FILE` and :data:`REPORT_FILE` (the variants not written, and why)."""
    if Path(out).resolve() == Path(questions_path).resolve():
        raise QuestionError(f"{out}: -o: would overwrite the input questions; choose another file")
    result = reformulate(load_questions(questions_path), variants)
    write_atomic(Path(out), result.jsonl())
    if report is not None:
        Path(report).mkdir(parents=True, exist_ok=True)
        write_atomic(Path(report) / SKIPPED_FILE, result.skipped_jsonl())
        write_atomic(Path(report) / REPORT_FILE, result.report_md(str(questions_path)))
    return result
