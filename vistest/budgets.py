"""Frame budgets: the one value type, and every spelling of a budget defined once.

A *frame budget* is how many frames an evaluator samples from a video: a positive integer
(at most :data:`MAX_BUDGET`), or ``all`` (every decoded frame). A budget is spelled five ways,
each defined here and nowhere else:

* **value** (:data:`BudgetValue`): ``16`` or ``"all"``. What flows through vistest (function
  arguments, option tuples, dict keys of the budget stage) and what the JSON files hold
  (``num_frames``, ``budget``, ``budgets``); content keys hash it as is.
* **label**: ``"16"`` or ``"all"``: the name inside ReVSI's ``{n}_frame``; ``vistest score``
  keys its rows by it (vistest.eval.records).
* **folder / file name**: ``16_frame`` (budget videos, ReVSI's config names) and
  ``16_frame.jsonl`` (the budget's ground truth); :data:`FOLDER_PATTERN` matches the folder name.
* **order**: numbers ascending, ``all`` last (:func:`budget_sort_key`).
* **input**: CLI text (``"16"``, ``"all"``, ``"all_frame"``, case and spaces ignored) or a JSON
  value, read by :meth:`Budget.parse` with the error every command gives.

Design (least churn): the values in flight stay plain ``int | "all"`` (plain data at the
boundaries: the JSON files, the content keys and about forty signatures carry them unchanged),
and :class:`Budget`, a frozen value, does every conversion: a caller makes one where it converts
(``Budget.parse(v, field).label``) and lets it go. The module functions below are the plain-value
forms the stages call (``parse_budget(text) -> 16``), each one line over :class:`Budget`.

Standard library only (and vistest.errors, itself standard library only): a leaf at the bottom
of the stage order (README.md, tests/test_structure.py), importable by every stage.
"""
from __future__ import annotations

import functools
import numbers
from dataclasses import dataclass
from typing import Any, Union

from .errors import InputError

BudgetValue = Union[int, str]  # a positive int, or ALL
ALL = "all"
# the largest frame budget: the most decoded frames a scene may give (vistest.scene.MAX_FRAME_INDEX + 1,
# 10 million). A budget above the video's own frame count is legitimate (most evaluators repeat frames,
# docs/sampling.md); one above any video's is refused where it is parsed, before anything is allocated.
MAX_BUDGET = 10_000_000  # vistest.scene.MAX_FRAME_INDEX is MAX_BUDGET - 1
FOLDER_SUFFIX = "_frame"  # 16 -> "16_frame", ReVSI's name of a budget's videos and config
FOLDER_PATTERN = rf"(\d+|{ALL}){FOLDER_SUFFIX}"  # a budget's folder name as a regular expression; group 1: its label


@functools.total_ordering
@dataclass(frozen=True)
class Budget:
    """One frame budget. ``frames``: the number of frames, or None for ``all`` (every frame).
    Budgets order numerically with ``all`` last; build one with :meth:`parse`."""

    frames: int | None

    @classmethod
    def parse(cls, value: Any, field_name: str = "budget") -> Budget:
        """A budget from CLI text or a JSON value: a positive int (or its decimal string) or
        ``"all"`` (also ``"all_frame"``; case and surrounding spaces ignored).

        Raises InputError naming ``field_name`` and what was expected, also for a budget above
        :data:`MAX_BUDGET` (the most decoded frames any scene may give: every command samples, and
        may write, that many frames per budget).
        """
        number, shown = None, value
        if isinstance(value, str):
            text = shown = value.strip().lower()
            if text in (ALL, ALL + FOLDER_SUFFIX):
                return cls(None)
            if text.isascii() and text.isdigit():  # digits only: a long string is a huge budget, not int()'s error
                number = int(text) if len(text) <= 20 else MAX_BUDGET + 1
        elif isinstance(value, numbers.Integral) and not isinstance(value, bool):  # numpy integers too
            number = shown = int(value)
        if number is not None and number > MAX_BUDGET:
            raise InputError(f"{field_name}: budget {shown} is above the decoded frame count of any video: a scene "
                             f"gives at most {MAX_BUDGET} frames (vistest.scene.MAX_FRAME_INDEX + 1)")
        if number is not None and number > 0:
            return cls(number)
        raise InputError(f"{field_name}: expected a positive integer or 'all', got {value!r}")

    from_json = parse  # a JSON value (num_frames, budget) is read as CLI text is

    @property
    def is_all(self) -> bool:
        return self.frames is None

    @property
    def label(self) -> str:
        """``"16"``, ``"all"`` (as in ``16_frame``)."""
        return ALL if self.frames is None else str(self.frames)

    def to_json(self) -> BudgetValue:
        """The value: ``16`` or ``"all"`` (what the JSON files and the stages hold)."""
        return ALL if self.frames is None else self.frames

    @property
    def folder(self) -> str:
        """``16_frame``, ``all_frame``: the folder of its videos and ReVSI's config name."""
        return self.label + FOLDER_SUFFIX

    @property
    def file_name(self) -> str:
        """``16_frame.jsonl``: its ground truth's file name."""
        return self.folder + ".jsonl"

    def sort_key(self) -> tuple:
        """Numbers ascending, then ``all``."""
        return (1, 0, "") if self.frames is None else (0, self.frames, "")

    def __lt__(self, other: Budget) -> bool:
        if not isinstance(other, Budget):
            return NotImplemented
        return self.sort_key() < other.sort_key()


def parse_budget(value: Any, field_name: str = "budget") -> BudgetValue:
    """The value of a budget given as CLI text or a JSON value (:meth:`Budget.parse`, its errors)."""
    return Budget.parse(value, field_name).to_json()


def parse_budgets(text: str, field_name: str = "--budgets") -> tuple[BudgetValue, ...]:
    """Comma-separated budgets, e.g. ``"16,32,64,all"``; order kept, duplicates rejected."""
    parts = [p for p in (s.strip() for s in str(text).split(",")) if p]
    if not parts:
        raise InputError(f"{field_name}: expected a comma-separated list such as 16,32,64,all, got {text!r}")
    out: list[BudgetValue] = []
    for p in parts:
        b = parse_budget(p, field_name)
        if b in out:
            raise InputError(f"{field_name}: budget {b!r} given twice in {text!r}")
        out.append(b)
    return tuple(out)


def budget_label(budget: Any) -> str:
    """The label of a budget value (or label): ``16`` -> ``"16"``, ``"all"`` -> ``"all"``."""
    return Budget.parse(budget).label


def budget_json(label: Any) -> BudgetValue:
    """The value of a budget label (or value): ``"16"`` -> ``16``, ``"all"`` stays."""
    return Budget.parse(label).to_json()


def budget_sort_key(budget: Any) -> tuple:
    """Sort key of a budget label or value: numbers ascending, then ``all``, then anything that
    is not a budget, by its text."""
    try:
        return Budget.parse(budget).sort_key()
    except InputError:
        return (2, 0, str(budget))
