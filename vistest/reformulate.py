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
  (``answer_kind`` ``text``, scored by a normalised match: vistest.eval.answers.normalize_text);
* ``abstain``: multiple choice: the option "Cannot be determined from the video" appended;
  numbers: the question asks for that phrase when the video cannot tell
  (:data:`ABSTAIN_INSTRUCTION`) and ``accepts_abstention`` is set.

"None of these" and "Cannot be determined from the video" always come last, so their letter is
the last one. Variants that do not apply to a question (no options, numeric types, unlettered
options, options that already hold a special option) are skipped and counted. Every later
stage reads the output unchanged: the budget and dummy ground truth carry over, and where the
frames support no answer a question offering "Cannot be determined from the video" or "None of
these" gets that answer (vistest.budget.truth, vistest.videos.plan).
"""
from __future__ import annotations

import json
import os
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .atomic import write_atomic
from .eval.answers import ABSTAIN, BASE, CANNOT_DETERMINE, CIRCULAR, NONE_OF_THESE, NOTA_ADD, NOTA_REPLACE, OPEN
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

# why a variant was not written for a question
SKIP_NUMBER = "answered with a number"
SKIP_NO_OPTIONS = "no options"
SKIP_UNLETTERED = "unlettered options"
SKIP_HAS_SPECIAL = "already offers a special option"
SKIP_ONE_OPTION = "a single option"
SKIP_TOO_MANY = "too many options to letter"


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


def reformulate_question(q: Question, variants: Sequence[str] = VARIANTS) -> Group:
    """The group of one base question (module docstring), variants in :data:`VARIANTS` order.
    A question that is itself a reformulation raises QuestionError."""
    if q.reformulation != BASE or q.record.get("group_id") not in (None, q.record["id"]):
        raise QuestionError(f"{q.where}: reformulation: the question is already a reformulation "
                            f"({q.reformulation!r} of group {q.group_id!r}); reformulate the base questions")
    base = {**q.record, "group_id": q.record["id"], "reformulation": BASE}
    rows: list[dict] = [base]
    skipped: list[tuple[str, str]] = []
    mcq = q.type.answer == ANSWER_MCQ
    texts, correct, why = _options_texts(q) if mcq else (None, None, SKIP_NUMBER)
    if texts is not None and any(is_special_option(t) for t in texts):
        texts, why = None, SKIP_HAS_SPECIAL
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
            for s in range(1, k):
                rows.append(_row(base, q, CIRCULAR, shift=s, options=lettered([texts[(i + s) % k] for i in range(k)]),
                                 ground_truth=LETTERS[(correct - s) % k]))
        elif variant == NOTA_ADD:
            rows.append(_row(base, q, NOTA_ADD, options=lettered(texts + [NONE_OF_THESE])))
        elif variant == NOTA_REPLACE:
            rest = [t for i, t in enumerate(texts) if i != correct]
            rows.append(_row(base, q, NOTA_REPLACE, options=lettered(rest + [NONE_OF_THESE]),
                             ground_truth=LETTERS[len(rest)]))
        elif variant == OPEN:
            numbers = [option_number(t) for t in texts]
            if all(x is not None for x in numbers):
                rows.append(_row(base, q, OPEN, options=None, answer_kind=ANSWER_NUMBER,
                                 ground_truth=f"{numbers[correct]:g}"))
            else:
                rows.append(_row(base, q, OPEN, options=None, answer_kind=ANSWER_TEXT, ground_truth=texts[correct]))
        elif variant == ABSTAIN:
            rows.append(_row(base, q, ABSTAIN, options=lettered(texts + [CANNOT_DETERMINE])))
    return Group(tuple(rows), tuple(skipped))


@dataclass(frozen=True)
class Reformulated:
    """A reformulated question set: ``records`` (each base question followed by its variants),
    ``written``: rows per reformulation (``base`` included), ``skipped``: (variant, reason) ->
    questions for which the variant did not apply."""

    records: tuple[dict, ...]
    written: Mapping[str, int]
    skipped: Mapping[tuple[str, str], int]

    def jsonl(self) -> str:
        """The question JSONL text (one record per line, keys in the input's order, then the new ones)."""
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.records)

    def summary(self) -> str:
        """Rows written per reformulation and the questions each variant skipped, and why."""
        lines = [f"{'reformulation':<14}{'rows':>6}  skipped (questions: reason)"]
        for kind in (BASE, *VARIANTS):
            skip = "; ".join(f"{n}: {why}" for (v, why), n in sorted(self.skipped.items()) if v == kind)
            if kind in self.written or skip:
                lines.append(f"{kind:<14}{self.written.get(kind, 0):>6}  {skip or '-'}")
        return "\n".join(lines) + "\n"


def reformulate(questions: Iterable[Question], variants: Sequence[str] = VARIANTS) -> Reformulated:
    """Reformulate every question (module docstring); the output is checked with the question
    parser (an invalid row is a bug of this module: AssertionError)."""
    records: list[dict] = []
    skipped: Counter = Counter()
    for q in questions:
        g = reformulate_question(q, variants)
        records += g.records
        skipped.update(g.skipped)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    try:
        parse_questions(text.splitlines(), "<reformulated>")
    except QuestionError as e:  # every input was valid, so an invalid output is ours
        raise AssertionError(f"reformulate wrote an invalid question: {e}") from e
    written = Counter(r["reformulation"] for r in records)
    return Reformulated(tuple(records), dict(written), dict(skipped))


def write_reformulated(questions_path: str | os.PathLike, out: str | os.PathLike,
                       variants: Sequence[str] = VARIANTS) -> Reformulated:
    """``vistest reformulate``: read and validate QUESTIONS (no scene needed), write the
    reformulated set to ``out`` atomically (a rerun writes the same bytes)."""
    if Path(out).resolve() == Path(questions_path).resolve():
        raise QuestionError(f"{out}: -o: would overwrite the input questions; choose another file")
    result = reformulate(load_questions(questions_path), variants)
    write_atomic(Path(out), result.jsonl())
    return result
