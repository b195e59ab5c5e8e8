"""Candidate questions: what a template found in a scene, before the set is balanced.

A :class:`Candidate` holds everything about one question except the order of its options
(and, for numeric multiple choice, the options themselves): the balancing pass decides those
over the whole set (vistest.generate.balance), then :func:`to_record` writes the question in
vistest's question JSONL (docs/questions-format.md): objects by id, ``category`` by label.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from .. import motion
from ..questions import MOTION_TYPES as MOTION_TYPE_SPECS
from .templates import LETTERS

# the question types the generator writes, in output order; vistest.questions.QUESTION_TYPES has them all
REVSI_TYPES = (
    "object_counting_single", "object_counting_multiple", "object_size_estimation", "object_abs_distance",
    "object_rel_distance_closest", "object_rel_distance_farthest", "object_rel_direction_forward_easy",
    "object_rel_direction_backward_easy", "object_rel_direction_forward_hard", "object_rel_direction_backward_hard",
    "room_size_estimation_single", "room_size_estimation_multiple")
APPEARANCE_TYPE = "obj_appearance_order"
ROUTE_TYPE = "route_planning"
NUMERIC_MCQ_TYPES = ("object_size_estimation_mcq", "object_abs_distance_mcq", "room_size_estimation_mcq")
GENERATED_TYPES = REVSI_TYPES + (APPEARANCE_TYPE,) + NUMERIC_MCQ_TYPES
ROUTE_TYPES = (ROUTE_TYPE,)  # both benchmarks' (VSI-Bench's rows, ReVSI's lmms-eval task)
# the dynamic types (vistest.generate.motion), named once in vistest.questions.MOTION_TYPES: numeric options,
# then the heading
MOTION_TYPE_OF = {spec[0]: name for name, spec in MOTION_TYPE_SPECS.items()}  # vistest.motion quantity -> type
MOTION_DIRECTION_TYPE = MOTION_TYPE_OF[motion.HEADING]
MOTION_NUMERIC_TYPES = tuple(name for name in MOTION_TYPE_SPECS if name != MOTION_DIRECTION_TYPE)
MOTION_TYPES = MOTION_NUMERIC_TYPES + (MOTION_DIRECTION_TYPE,)  # ``--types motion``
LADDER_TYPES = NUMERIC_MCQ_TYPES + MOTION_NUMERIC_TYPES  # numeric options on a geometric ladder (balance.py)
# the camera's own motion (no object): in ``--types motion``, not in ``all`` (every static scene's camera moves: they
# would change every static set); by name in any list
CAMERA_TYPES = tuple(name for name, spec in MOTION_TYPE_SPECS.items() if spec[0] in motion.CAMERA_QUANTITIES)
ALL_TYPES = GENERATED_TYPES + ROUTE_TYPES + tuple(t for t in MOTION_TYPES if t not in CAMERA_TYPES)  # ``--types all``
DEFAULT_TYPES = REVSI_TYPES
# ``--types vsibench``: the types of the stock lmms-eval ``vsibench`` task (lmms_eval/tasks/vsibench/utils.py
# MCA_QUESTION_TYPES and NA_QUESTION_TYPES), in VSI-Bench's wording (templates.VSIBENCH_*)
VSIBENCH_TYPES = (
    "object_counting", "object_size_estimation", "object_abs_distance", "object_rel_distance",
    "object_rel_direction_easy", "object_rel_direction_medium", "object_rel_direction_hard",
    "room_size_estimation", APPEARANCE_TYPE, ROUTE_TYPE)
# the types only VSI-Bench asks: a set with any of them uses VSI-Bench's wording for the shared ones
VSIBENCH_ONLY_TYPES = tuple(t for t in VSIBENCH_TYPES if t not in GENERATED_TYPES + ROUTE_TYPES)
WRITABLE_TYPES = (GENERATED_TYPES + tuple(t for t in VSIBENCH_ONLY_TYPES if t != ROUTE_TYPE) + ROUTE_TYPES
                  + MOTION_TYPES)


@dataclass(frozen=True)
class Candidate:
    """One question found in one scene.

    ``template`` is filled with ``fields`` (and, for options named in the text, ``choices``:
    the option texts in their final order, comma-separated). Numeric types: ``value`` is the
    exact answer in the answer's unit (cm, m, m^2, a count) and ``decimals`` its rounding.
    Multiple choice: ``answer`` is the correct option's text, ``distractors`` the others.
    Numeric multiple choice (``*_mcq``): ``value``/``decimals`` as numeric; the options are made
    by the balancing pass. ``objects`` (ids) or ``category`` (labels) are what the answer
    depends on. ``label``: a size question's object label. ``window``: a dynamic question's
    (time_start, time_end) in seconds (written as those fields). ``detail``: the measurements the
    answer came from (name, value), for reports. A numeric-option type's ``value`` may be
    negative (acceleration): its options then are all negative (balance.numeric_options).
    """

    scene_id: str
    question_type: str
    template: str
    fields: tuple[tuple[str, str], ...] = ()
    objects: tuple[str, ...] = ()
    category: tuple[str, ...] = ()
    category_list: bool = False
    value: float | None = None
    decimals: int = 0
    answer: str | None = None
    distractors: tuple[str, ...] = ()
    label: str | None = None
    window: tuple[float, float] | None = None
    detail: tuple[tuple[str, float], ...] = field(default=(), compare=False)

    @property
    def key(self) -> tuple:
        """A total order independent of how the candidate was found (scene, type, references, text)."""
        return (self.scene_id, WRITABLE_TYPES.index(self.question_type) if self.question_type in WRITABLE_TYPES
                else len(WRITABLE_TYPES), self.question_type, self.objects, self.category, self.window or (),
                self.fields, self.answer or "", self.distractors)

    @property
    def is_mcq(self) -> bool:
        return self.answer is not None or self.question_type in LADDER_TYPES

    @property
    def answer_text(self) -> str:
        """The numeric ground truth as written (``"3"``, ``"1.4"``, ``"87"``)."""
        assert self.value is not None
        return format_value(self.value, self.decimals)


TWIN_FAMILY = {"object_size_estimation": "size", "object_size_estimation_mcq": "size",
               "object_abs_distance": "abs_distance", "object_abs_distance_mcq": "abs_distance",
               "room_size_estimation_single": "room", "room_size_estimation_multiple": "room",
               "room_size_estimation_mcq": "room"}


def twin_key(c: Candidate) -> tuple:
    """What a numeric question and its numeric-option twin share (scene, family, objects):
    they are generated, kept and removed together (vistest.generate.balance). Other types: the
    candidate's own key."""
    fam = TWIN_FAMILY.get(c.question_type)
    return (c.scene_id, fam, c.objects) if fam else c.key


def format_value(value: float, decimals: int) -> str:
    """``value`` with ``decimals`` decimals (ReVSI's ``f"{x:.1f}"``); integers without a point."""
    return f"{value:.{decimals}f}"


def significant(value: float, digits: int) -> str:
    """``value`` to ``digits`` significant digits, never in exponent form, no trailing zeros after
    the point (``1.44``, ``173``, ``0.579``, ``12``)."""
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - int(np.floor(np.log10(abs(value)))))
    text = f"{round(value, decimals):.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def letter_options(texts: list[str] | tuple[str, ...]) -> list[str]:
    """``["A. left", "B. back", ...]``."""
    return [f"{LETTERS[i]}. {t}" for i, t in enumerate(texts)]


def to_record(c: Candidate, qid: str, options: list[str] | None = None, ground_truth: str | None = None) -> dict:
    """The question JSONL record of ``c``: ``options`` are the option texts in their final order
    (MCQ), ``ground_truth`` the correct letter (MCQ); numeric types use ``c.answer_text``."""
    fields_ = dict(c.fields)
    if options is not None and "{choices}" in c.template:
        fields_["choices"] = ", ".join(options)
    rec: dict = {"id": qid, "scene_id": c.scene_id, "question_type": c.question_type,
                 "question": c.template.format(**fields_)}
    if options is not None:
        rec["options"] = letter_options(options)
        rec["ground_truth"] = ground_truth
    else:
        rec["ground_truth"] = c.answer_text
    if c.objects:
        rec["objects"] = list(c.objects)
    if c.category:
        rec["category"] = list(c.category) if c.category_list or len(c.category) > 1 else c.category[0]
    if c.label is not None:
        rec["object_label"] = c.label
    if c.window is not None:
        rec["time_start"], rec["time_end"] = c.window
        if c.window[0] == c.window[1]:  # an instant (ReSTI's rows: time_start == time_end)
            rec["time"] = c.window[0]
    return rec


def stable_int(text: str) -> int:
    """A 64-bit integer from ``text`` that is the same in every process (unlike ``hash``)."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def scene_rng(seed: int, scene_id: str) -> np.random.Generator:
    """The generator of one scene's candidates: depends on the seed and the scene id only, so a
    scene's candidates do not change with the other scenes of the set."""
    return np.random.default_rng(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, stable_int(scene_id)]))
