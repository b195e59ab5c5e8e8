"""Questions: the benchmark questions whose ground truth vistest re-derives per frame budget.

Format (docs/questions-format.md): JSONL, one JSON object per line, blank lines ignored.

* ``id`` (string or integer, unique in the file), ``scene_id``, ``question_type`` (one of
  :data:`QUESTION_TYPES`), ``question`` (text), ``ground_truth`` (the all-frame answer:
  an option letter for multiple-choice types, a number or numeric string otherwise);
* ``options``: list of strings, required for multiple-choice types (``"A. text"``);
* ``objects``: object ids of the scene the question is about (required for size,
  distance and direction types; appearance order takes ``objects`` or ``category``);
* ``category``: a label or list of labels (counting: all objects with that label; the
  ``object_counting_multiple`` sum of several labels; appearance order: the first
  appearance of any instance of each label);
* ``allow_zero`` (counting and presence only, default false): a count of 0 (presence: "no") is a
  valid answer;
* time (optional, any type; docs/questions-format.md "Time windows"): ``time_start`` and
  ``time_end`` (seconds from the video's first frame, both or neither, 0 <= time_start <=
  time_end) name a window, ``time`` (seconds, >= 0; inside the window when both are given) an
  instant. Decoded frame i is at i / fps seconds; a window holds the frames with
  time_start <= i / fps <= time_end (closed at both ends; vistest.budget.windows);
* STI-Bench (vistest.datasets.sti_bench): the eight tasks are the ``sti_*`` types
  (:data:`STI_TASKS`), five-way multiple choice, rule ``window``;
* reformulated questions (vistest/reformulate.py, docs/questions-format.md): ``group_id`` (the
  base question's id), ``reformulation`` (:data:`REFORMULATIONS`), ``shift`` (circular),
  ``answer_kind`` (``"text"`` or ``"number"``: a multiple-choice type asked without options),
  ``accepts_abstention`` (numbers and texts: "Cannot be determined from the video" is an answer);
  options may include "None of these" and "Cannot be determined from the video";
* any other field is kept and copied to the outputs unchanged.

Loading validates every line; a bad line raises :class:`QuestionError` (a ValueError)
naming the file, the line number (1-based) and the field, and what was expected.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from .budgets import MAX_BUDGET
from .errors import InputError
from .answers import (
    BASE,
    CANNOT_DETERMINE,
    CIRCULAR,
    NUMBER,
    REFORMULATIONS,
    TEXT,
    abstain_letter,
    is_special_option,
    none_letter,
    normalize_text,
    split_option,
)
from .jsonl import iter_jsonl, read_text

# the rule budget_truth applies to each type (see vistest/budget/truth.py)
RULE_COUNTING = "counting"            # count instances of category seen in the selected frames
RULE_OBJECTS = "objects"              # every referenced object must be seen
RULE_APPEARANCE = "appearance_order"  # order recomputed from first sightings
RULE_MIN_BUDGET = "min_budget"        # room size / route planning: needs enough frames
RULE_WINDOW = "window"                # STI-Bench: enough sampled frames in the window (or one near the instant)
RULE_TRACK = "track"                  # dynamic types: the moving object seen in enough sampled frames of the window
RULE_CAMERA = "camera"                # the camera's own motion: a sampled frame at each end of the window
RULE_PRESENCE = "presence"            # object presence: every subject seen in a selected frame -> "yes"

ANSWER_MCQ = "mcq"
ANSWER_NUMBER = "number"
ANSWER_TEXT = TEXT  # an open-ended categorical answer (reformulation "open")
ANSWER_KINDS_WITHOUT_OPTIONS = (TEXT, NUMBER)
# seconds: the latest time a question may name (``time_start``, ``time_end``, ``time``): a video of the most
# decoded frames a scene may give (vistest.budgets.MAX_BUDGET) at 1 frame/s; about 116 days
MAX_TIME_S = float(MAX_BUDGET)


class QuestionError(InputError):
    """Invalid question input; the message names file, line, field and the expectation."""


@dataclass(frozen=True)
class QuestionType:
    """A question type: its benchmark(s), answer kind, GT(frames) rule and object needs.

    ``min_objects``: how many object ids (``objects``) the question must reference
    (0: none needed). ``subjects``: which of ``objects``/``category`` it accepts.
    ``window_frames`` (rule ``window``): how many distinct sampled frames its time window must
    receive (a necessary condition only: imported STI-Bench questions name no scene objects, so
    whether the object is seen in them is not checked); rule ``track``: in how many sampled
    frames of the window the question's object must be seen. ``task``: the benchmark's own task
    name (the dynamic types: the STI-Bench task they stand for). ``motion`` (rule ``track``): the
    :mod:`vistest.motion` quantity the answer is.
    """

    name: str
    benchmarks: tuple[str, ...]
    answer: str
    rule: str
    min_objects: int = 0
    subjects: tuple[str, ...] = ()
    window_frames: int = 0
    task: str = ""
    motion: str = ""
    needs_3d: bool = False  # the answer needs 3D boxes or camera poses: unanswerable on a 2D scene (needs_3d)


# STI-Bench's eight tasks (MINT-SJTU/STI-Bench qa.parquet ``Task``; ReSTI README "Coverage") -> (vistest
# question type, sampled frames the window needs: a displacement, a speed, a heading change, a trajectory or
# a pose relative to the initial one compares >= 2 instants; a size, a relation or a grounding needs one)
STI_TASKS: dict[str, tuple[str, int]] = {
    "3D Video Grounding": ("sti_3d_video_grounding", 1),
    "Dimensional Measurement": ("sti_dimensional_measurement", 1),
    "Displacement & Path Length": ("sti_displacement_path_length", 2),
    "Ego-Centric Orientation": ("sti_ego_centric_orientation", 2),
    "Pose Estimation": ("sti_pose_estimation", 2),
    "Spatial Relation": ("sti_spatial_relation", 1),
    "Speed & Acceleration": ("sti_speed_acceleration", 2),
    "Trajectory Description": ("sti_trajectory_description", 2),
}

# the dynamic types generated from tracks -> (vistest.motion quantity, sampled frames seeing the object
# that the window needs (vistest.motion.MIN_FRAMES), the STI-Bench task it stands for)
MOTION_TYPES: dict[str, tuple[str, int, str]] = {
    "motion_displacement": ("displacement", 2, "Displacement & Path Length"),
    "motion_path_length": ("path_length", 2, "Displacement & Path Length"),
    "motion_speed": ("speed", 2, "Speed & Acceleration"),
    "motion_acceleration": ("acceleration", 3, "Speed & Acceleration"),
    "motion_direction": ("heading", 2, "Trajectory Description"),
    "motion_instant_speed": ("instant_speed", 2, "Speed & Acceleration"),
    # the camera's own motion (no object; rule camera): vistest.motion.CAMERA_QUANTITIES
    "camera_orientation_change": ("camera_heading_change", 2, "Ego-Centric Orientation"),
    "camera_displacement": ("camera_displacement", 2, "Displacement & Path Length"),
    "camera_path_length": ("camera_path_length", 2, "Displacement & Path Length"),
}
CAMERA_MOTION_TYPES = ("camera_orientation_change", "camera_displacement", "camera_path_length")
# the dynamic types asked at an instant (``time``; ReSTI's rows with time_start == time_end): their anchors
# (vistest.motion.ANCHORS) must each have a sampled frame seeing the object
INSTANT_MOTION_TYPES = ("motion_instant_speed",)
# STI-Bench's Speed & Acceleration asked at an instant (ReSTI: time_start == time_end == t; "What is the speed of
# the blue chevrolet suv at t=12 s? (unit: m/s)", "What is the magnitude of the acceleration of ... at t=11 s, from
# velocities over 1-second central windows? (unit: m/s²)"): the quantity is read from the row's
# ``instant_quantity`` column when given (one of INSTANT_QUANTITIES; the importers write it), else from its
# wording (:func:`instant_quantity`); the budget stage then needs a sampled frame at each of its anchors
# (vistest.motion.ANCHORS: speed t -/+ 0.5 s, acceleration t - 1, t, t + 1)
STI_SPEED_ACCELERATION = "sti_speed_acceleration"
INSTANT_QUANTITY_FIELD = "instant_quantity"
INSTANT_QUANTITIES = ("instant_speed", "instant_acceleration")  # vistest.motion.INSTANT_SPEED, INSTANT_ACCELERATION
_ACCELERATION_WORDS = re.compile(r"accelerat|m/s\s*(?:²|\^2|2\b)|m/s/s", re.I)
_SPEED_WORDS = re.compile(r"\bspeed\b|\bvelocit|m/s\b", re.I)


def instant_quantity(record: Mapping[str, Any]) -> tuple[str | None, str]:
    """(quantity, where it was read) of an STI-Bench Speed & Acceleration row asked at an instant: the
    ``instant_quantity`` column when the row has one; else its wording: ``"instant_acceleration"`` when the
    question (or, failing that, an option) names an acceleration ("acceleration", "m/s²", "m/s^2"),
    ``"instant_speed"`` when it names a speed or a velocity ("speed", "velocity", "m/s"); (None, why) when
    it names neither. Acceleration is looked for first: ReSTI's acceleration rows say "from velocities"."""
    col = record.get(INSTANT_QUANTITY_FIELD)
    if col is not None:
        return (col, f"column {INSTANT_QUANTITY_FIELD}") if col in INSTANT_QUANTITIES else (None, "")
    texts = {"the question's wording": str(record.get("question") or ""),
             "the options' wording": " ".join(str(o) for o in record.get("options") or ())}
    for where, text in texts.items():
        if _ACCELERATION_WORDS.search(text):
            return "instant_acceleration", f"{where}, which names an acceleration"
        if _SPEED_WORDS.search(text):
            return "instant_speed", f"{where}, which names a speed"
    return None, "neither the question nor its options name a speed or an acceleration"


def _types() -> dict[str, QuestionType]:
    vsi, revsi, both, gen = ("VSI-Bench",), ("ReVSI",), ("VSI-Bench", "ReVSI"), ("vistest",)
    mcq, num = ANSWER_MCQ, ANSWER_NUMBER
    obj, cat = ("objects",), ("category",)
    specs = [
        # VSI-Bench (lmms-eval tasks/vsibench/utils.py MCA/NA lists)
        QuestionType("object_counting", vsi, num, RULE_COUNTING, subjects=cat),
        QuestionType("object_size_estimation", both, num, RULE_OBJECTS, 1, obj),
        QuestionType("object_abs_distance", both, num, RULE_OBJECTS, 2, obj),
        QuestionType("object_rel_distance", vsi, mcq, RULE_OBJECTS, 2, obj),
        QuestionType("object_rel_direction_easy", vsi, mcq, RULE_OBJECTS, 2, obj),
        QuestionType("object_rel_direction_medium", vsi, mcq, RULE_OBJECTS, 2, obj),
        QuestionType("object_rel_direction_hard", vsi, mcq, RULE_OBJECTS, 2, obj),
        QuestionType("room_size_estimation", vsi, num, RULE_MIN_BUDGET),
        QuestionType("obj_appearance_order", vsi, mcq, RULE_APPEARANCE, 2, ("objects", "category")),
        QuestionType("route_planning", both, mcq, RULE_MIN_BUDGET, 0, obj),
        # ReVSI (lmms-eval tasks/revsi/utils.py MCQ/NQ lists)
        QuestionType("object_counting_single", revsi, num, RULE_COUNTING, subjects=cat),
        QuestionType("object_counting_multiple", revsi, num, RULE_COUNTING, subjects=cat),
        QuestionType("object_rel_direction_forward_easy", revsi, mcq, RULE_OBJECTS, 2, obj),
        QuestionType("object_rel_direction_backward_easy", revsi, mcq, RULE_OBJECTS, 2, obj),
        QuestionType("object_rel_direction_forward_hard", revsi, mcq, RULE_OBJECTS, 2, obj),
        QuestionType("object_rel_direction_backward_hard", revsi, mcq, RULE_OBJECTS, 2, obj),
        QuestionType("object_rel_distance_closest", revsi, mcq, RULE_OBJECTS, 2, obj),
        QuestionType("object_rel_distance_farthest", revsi, mcq, RULE_OBJECTS, 2, obj),
        QuestionType("room_size_estimation_single", revsi, num, RULE_MIN_BUDGET),
        QuestionType("room_size_estimation_multiple", revsi, num, RULE_MIN_BUDGET),
        # vistest generate: numeric questions asked with numeric options (docs/generate.md)
        QuestionType("object_size_estimation_mcq", gen, mcq, RULE_OBJECTS, 1, obj),
        QuestionType("object_abs_distance_mcq", gen, mcq, RULE_OBJECTS, 2, obj),
        QuestionType("room_size_estimation_mcq", gen, mcq, RULE_MIN_BUDGET),
    ]
    # STI-Bench / ReSTI (vistest.datasets.sti_bench): five-way multiple choice over a time window
    specs += [QuestionType(name, ("STI-Bench", "ReSTI"), mcq, RULE_WINDOW, window_frames=k, task=task)
              for task, (name, k) in STI_TASKS.items()]
    # vistest generate from tracks (docs/questions-format.md "Dynamic questions"): one moving object
    # (``objects``) over a window; (sampled frames seeing it the answer needs: vistest.motion.MIN_FRAMES)
    specs += [QuestionType(name, gen, mcq, RULE_TRACK, 1, obj, window_frames=k, task=task, motion=q)
              for name, (q, k, task) in MOTION_TYPES.items() if name not in CAMERA_MOTION_TYPES]
    specs += [QuestionType(name, gen, mcq, RULE_CAMERA, window_frames=k, task=task, motion=q)
              for name, (q, k, task) in MOTION_TYPES.items() if name in CAMERA_MOTION_TYPES]
    geometric = (RULE_OBJECTS, RULE_MIN_BUDGET, RULE_TRACK, RULE_CAMERA)  # the types above: sizes, distances, ...
    specs = [replace(t, needs_3d=True) if t.rule in geometric else t for t in specs]
    # video QA from 2D tracks (vistest.tracks2d, docs/tracks2d.md): a multiple-choice question about the video
    # whose evidence is its ``objects`` when given (Perception Test's mc_question), and a grounded question whose
    # answer is a set of objects (Perception Test's grounded_question: the answer's objects are its evidence),
    # asked open-ended (answer_kind "text": their labels)
    pt = ("Perception Test",)
    specs += [QuestionType("video_mcq", pt, mcq, RULE_OBJECTS, 0, obj),
              QuestionType("grounded_objects", pt, mcq, RULE_OBJECTS, 1, obj),
              # "Is there a cup?": options "A. yes", "B. no"; its objects or a category (any instance)
              QuestionType("object_presence", gen, mcq, RULE_PRESENCE, 1, ("objects", "category"))]
    return {t.name: t for t in specs}


QUESTION_TYPES: dict[str, QuestionType] = _types()



def option_letter(option: str) -> tuple[str | None, str]:
    """Split ``"A. text"`` (or ``"A) text"``) into (``"A"``, ``"text"``); (None, option) otherwise
    (vistest.answers.split_option, the parse the exported lmms-eval task runs too)."""
    return split_option(option)


OPTION_NUMBER_RE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)")


def option_number(text: str) -> float | None:
    """The number an option's text starts with (``"2.5 m"`` -> 2.5; the ReSTI audit's option
    parse), None when it starts with none."""
    m = OPTION_NUMBER_RE.match(text)
    return float(m.group(1)) if m else None


def answer_labels(text: str) -> tuple[str, ...]:
    """The comma-separated labels of an appearance order, lower-cased and stripped."""
    return tuple(p.strip().lower() for p in text.split(","))


def option_labels(option: str) -> tuple[str, ...]:
    """The comma-separated labels of an appearance-order option, lower-cased and stripped."""
    return answer_labels(option_letter(option)[1])


@dataclass(frozen=True, eq=False)
class Question:
    """One validated question. ``record`` is the line's JSON object as read (read-only).

    ``objects``: referenced object ids (str). ``category``: referenced labels. ``source``
    and ``line`` (1-based) locate it for error messages. ``window``: (``time_start``,
    ``time_end``) in seconds, None without one; ``instant``: ``time`` in seconds, None without.
    """

    id: str
    scene_id: str
    question_type: str
    question: str
    options: tuple[str, ...] | None
    ground_truth: Any
    objects: tuple[str, ...]
    category: tuple[str, ...]
    allow_zero: bool
    record: Mapping[str, Any]
    source: str = "<questions>"
    line: int = 0
    window: tuple[float, float] | None = None
    instant: float | None = None

    @property
    def type(self) -> QuestionType:
        return QUESTION_TYPES[self.question_type]

    @property
    def where(self) -> str:
        """``file:line`` of this question."""
        return f"{self.source}:{self.line}"

    @property
    def kind(self) -> str:
        """How it is answered: ``answer_kind`` when given (an open reformulation), else the type's."""
        return self.record.get("answer_kind") or self.type.answer

    @property
    def reformulation(self) -> str:
        """``reformulation`` (``"base"`` when absent)."""
        return self.record.get("reformulation") or BASE

    @property
    def group_id(self) -> str:
        """The base question's id (``group_id``, else the question's own id)."""
        g = self.record.get("group_id")
        return self.id if g is None else str(g)

    @property
    def offers_abstention(self) -> bool:
        """A "Cannot be determined from the video" option, or ``accepts_abstention``."""
        return abstain_letter(self.options) is not None or bool(self.record.get("accepts_abstention"))

    def unsupported_answer(self) -> Any:
        """The answer when the frames support none of the question's answers about the video
        (evidence removed, or unanswerable at a budget): the letter of the "Cannot be determined
        from the video" option, else of "None of these"; for numbers and texts that accept an
        abstention, vistest.answers.CANNOT_DETERMINE; None otherwise (the row stays
        unanswerable)."""
        if self.options:
            return abstain_letter(self.options) or none_letter(self.options)
        return CANNOT_DETERMINE if self.record.get("accepts_abstention") else None

    def mcq_letter_of(self, labels: tuple[str, ...]) -> str | None:
        """The letter of the option whose label sequence equals ``labels`` (appearance order)."""
        want = tuple(x.lower() for x in labels)
        for opt in self.options or ():
            letter, _ = option_letter(opt)
            if option_labels(opt) == want:
                return letter if letter is not None else opt
        return None


# ---------------------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------------------
class _LineParser:
    """Validates one question line; every error names file, line and field."""

    def __init__(self, source: str, line: int, scene: Any | None):
        self.source, self.line, self.scene = source, line, scene

    def fail(self, fld: str, msg: str) -> QuestionError:
        return QuestionError(f"{self.source}:{self.line}: {fld}: {msg}")

    def string(self, doc: dict, key: str) -> str:
        if key not in doc:
            raise self.fail(key, "missing required field")
        v = doc[key]
        if not isinstance(v, str) or not v.strip():
            raise self.fail(key, f"expected a non-empty string, got {v!r}")
        return v

    def ident(self, v: Any, fld: str) -> str:
        if isinstance(v, int) and not isinstance(v, bool):
            return str(v)
        if isinstance(v, str) and v:
            return v
        raise self.fail(fld, f"expected a non-empty string or an integer id, got {v!r}")

    def number(self, v: Any, fld: str) -> float:
        x: float | None = None
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            x = float(v)
        elif isinstance(v, str):
            try:
                x = float(v.strip())
            except ValueError:
                x = None
        if x is None or not math.isfinite(x):
            raise self.fail(fld, f"expected a number (or a numeric string), got {v!r}")
        return x

    def question(self, doc: Any) -> Question:
        if not isinstance(doc, dict):
            raise self.fail("<line>", f"expected a JSON object, got {type(doc).__name__}")
        if "id" not in doc:
            raise self.fail("id", "missing required field")
        qid = self.ident(doc["id"], "id")
        scene_id = self.string(doc, "scene_id")
        qtype_name = self.string(doc, "question_type")
        qtype = QUESTION_TYPES.get(qtype_name)
        if qtype is None:
            raise self.fail("question_type", f"unknown question type {qtype_name!r}; expected one of "
                                             f"{', '.join(sorted(QUESTION_TYPES))}")
        text = self.string(doc, "question")
        if "ground_truth" not in doc or doc["ground_truth"] is None:
            raise self.fail("ground_truth", "missing required field")
        gt = doc["ground_truth"]
        if self.scene is not None and scene_id != self.scene.scene_id:
            raise self.fail("scene_id", f"expected {self.scene.scene_id!r} (the scene given), got {scene_id!r}")
        options = self.options(doc.get("options"), qtype, order_list=(qtype.rule == RULE_APPEARANCE
                               and isinstance(gt, list)) or doc.get("answer_kind") is not None)
        objects = self.objects(doc.get("objects"), qtype)
        category = self.category(doc.get("category"), qtype)
        allow_zero = doc.get("allow_zero", False)
        if not isinstance(allow_zero, bool):
            raise self.fail("allow_zero", f"expected true or false, got {allow_zero!r}")
        if allow_zero and qtype.rule not in (RULE_COUNTING, RULE_PRESENCE):
            raise self.fail("allow_zero", f"only counting and presence questions take allow_zero, not {qtype_name!r}")
        if qtype.rule == RULE_APPEARANCE and not objects and not category:
            raise self.fail("objects", f"{qtype_name} needs objects (ids) or category (labels) to order")
        if qtype.rule == RULE_APPEARANCE and objects and category:
            raise self.fail("category", f"{qtype_name}: give objects or category, not both")
        if qtype.rule == RULE_APPEARANCE and len(category) == 1:
            raise self.fail("category", f"{qtype_name} needs at least 2 labels to order, got {list(category)}")
        self.reformulation_fields(doc, qtype, options)
        self.ground_truth(gt, qtype, options, objects, category, doc.get("answer_kind"))
        window, instant = self.time_fields(doc)
        if qtype.rule == RULE_WINDOW and window is None and instant is None:
            raise self.fail("time_start", f"{qtype_name!r} needs a window (time_start, time_end) or an instant (time)")
        if qtype.rule == RULE_TRACK and qtype.name in INSTANT_MOTION_TYPES and instant is None:
            raise self.fail("time", f"{qtype_name!r} needs an instant (time, seconds)")
        if qtype.rule in (RULE_TRACK, RULE_CAMERA) and qtype.name not in INSTANT_MOTION_TYPES and window is None:
            raise self.fail("time_start", f"{qtype_name!r} needs a window (time_start, time_end)")
        if doc.get(INSTANT_QUANTITY_FIELD) is not None:
            if qtype_name != STI_SPEED_ACCELERATION or instant is None:
                raise self.fail(INSTANT_QUANTITY_FIELD, f"only {STI_SPEED_ACCELERATION} questions asked at an instant "
                                                        f"(time) take it, not {qtype_name!r}")
            if doc[INSTANT_QUANTITY_FIELD] not in INSTANT_QUANTITIES:
                raise self.fail(INSTANT_QUANTITY_FIELD, f"expected one of {', '.join(INSTANT_QUANTITIES)}, got "
                                                        f"{doc[INSTANT_QUANTITY_FIELD]!r}")
        q = Question(id=qid, scene_id=scene_id, question_type=qtype_name, question=text, options=options,
                     ground_truth=gt, objects=objects, category=category, allow_zero=allow_zero,
                     record=MappingProxyType(dict(doc)), source=self.source, line=self.line,
                     window=window, instant=instant)
        if qtype.rule == RULE_APPEARANCE and (options is not None or q.kind == ANSWER_TEXT):
            self.appearance_options(q)
        return q

    def seconds(self, doc: dict, key: str) -> float | None:
        """A time in seconds from the video's first frame: a number in [0, :data:`MAX_TIME_S`] (not a
        string), or None."""
        v = doc.get(key)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= MAX_TIME_S:
            raise self.fail(key, f"expected seconds from the video's first frame (a number in 0..{MAX_TIME_S:.0f}: "
                                 f"{MAX_BUDGET} frames at 1 frame/s), got {v!r}")
        return float(v)

    def time_fields(self, doc: dict) -> tuple[tuple[float, float] | None, float | None]:
        """(window, instant): ``time_start``/``time_end`` both or neither, start <= end; ``time``
        inside the window when both are given (module docstring)."""
        start, end, t = self.seconds(doc, "time_start"), self.seconds(doc, "time_end"), self.seconds(doc, "time")
        if (start is None) != (end is None):
            missing = "time_end" if end is None else "time_start"
            raise self.fail(missing, "a window needs both time_start and time_end (seconds)")
        window = None if start is None else (start, end)
        if window is not None and start > end:
            raise self.fail("time_end", f"expected time_start <= time_end, got {start!r} > {end!r}")
        if window is not None and t is not None and not start <= t <= end:
            raise self.fail("time", f"expected the instant inside the window [{start!r}, {end!r}], got {t!r}")
        return window, t

    def reformulation_fields(self, doc: dict, qtype: QuestionType, options: tuple[str, ...] | None) -> None:
        """``group_id``, ``reformulation``, ``shift``, ``answer_kind``, ``accepts_abstention``
        (module docstring); special options only where they belong."""
        if doc.get("group_id") is not None:
            self.ident(doc["group_id"], "group_id")
        ref = doc.get("reformulation", BASE)
        if ref not in REFORMULATIONS:
            raise self.fail("reformulation", f"expected one of {', '.join(REFORMULATIONS)}, got {ref!r}")
        shift = doc.get("shift")
        if shift is not None and (ref != CIRCULAR or isinstance(shift, bool) or not isinstance(shift, int)
                                  or shift < 1):
            raise self.fail("shift", f"expected a positive integer on a circular reformulation, got {shift!r}"
                                     f" (reformulation {ref!r})")
        kind = doc.get("answer_kind")
        if kind is not None:
            if kind not in ANSWER_KINDS_WITHOUT_OPTIONS:
                raise self.fail("answer_kind", f"expected one of {', '.join(ANSWER_KINDS_WITHOUT_OPTIONS)}, "
                                               f"got {kind!r}")
            if qtype.answer != ANSWER_MCQ:
                raise self.fail("answer_kind", f"only multiple-choice types are asked without options; "
                                               f"{qtype.name!r} is answered with a number already")
            if options:
                raise self.fail("options", f"a question with answer_kind {kind!r} takes no options, got "
                                           f"{list(options)!r}")
        abstain = doc.get("accepts_abstention", False)
        if not isinstance(abstain, bool):
            raise self.fail("accepts_abstention", f"expected true or false, got {abstain!r}")
        if abstain and options:
            raise self.fail("accepts_abstention", "a question with options offers abstention by an option "
                                                  f"worded {CANNOT_DETERMINE!r}, not by this field")
        specials = [o for o in options or () if is_special_option(o)]
        if len(specials) != len({normalize_text(split_option(o)[1]) for o in specials}):
            raise self.fail("options", f"a special option appears twice: {specials!r}")

    def options(self, v: Any, qtype: QuestionType, order_list: bool = False) -> tuple[str, ...] | None:
        """MCQ options; an appearance order whose ground truth is a list of ids needs none."""
        if qtype.answer == ANSWER_MCQ:
            if v is None and order_list:
                return None
            if v is None:
                raise self.fail("options", f"multiple-choice type {qtype.name!r} needs options (a list of strings)")
            if not isinstance(v, list) or not v:
                raise self.fail("options", f"expected a non-empty list of strings, got {v!r}")
            for i, o in enumerate(v):
                if not isinstance(o, str) or not o.strip():
                    raise self.fail(f"options[{i}]", f"expected a non-empty string, got {o!r}")
            letters = [option_letter(o)[0] for o in v]
            if all(letters) and len(set(letters)) != len(letters):
                raise self.fail("options", f"option letters repeat: {letters}")
            return tuple(v)
        if v is not None and v != []:
            raise self.fail("options", f"numeric-answer type {qtype.name!r} takes no options, got {v!r}")
        return None

    def objects(self, v: Any, qtype: QuestionType) -> tuple[str, ...]:
        if v is None:
            if qtype.min_objects and "category" not in qtype.subjects:
                raise self.fail("objects", f"{qtype.name!r} needs at least {qtype.min_objects} object id(s)")
            return ()
        if "objects" not in qtype.subjects:
            raise self.fail("objects", f"{qtype.name!r} takes no objects"
                            + (" (counting names a category)" if qtype.rule == RULE_COUNTING else ""))
        if not isinstance(v, list):
            raise self.fail("objects", f"expected a list of object ids, got {v!r}")
        ids = tuple(self.ident(x, f"objects[{i}]") for i, x in enumerate(v))
        if len(ids) < qtype.min_objects:
            raise self.fail("objects", f"{qtype.name!r} needs at least {qtype.min_objects} object id(s), "
                                       f"got {len(ids)}")
        for i, oid in enumerate(ids):
            if oid in ids[:i]:
                raise self.fail(f"objects[{i}]", f"object id {oid!r} listed twice")
        if self.scene is not None:
            known = set(self.scene.object_ids)
            for i, oid in enumerate(ids):
                if oid not in known:
                    sample = ", ".join(sorted(known)[:8]) + (" ..." if len(known) > 8 else "")
                    raise self.fail(f"objects[{i}]", f"unknown object id {oid!r}: not in scene "
                                                      f"{self.scene.scene_id!r} (ids: {sample})")
        return ids

    def category(self, v: Any, qtype: QuestionType) -> tuple[str, ...]:
        if v is None:
            if qtype.rule == RULE_COUNTING:
                raise self.fail("category", f"counting type {qtype.name!r} needs a category (a label or a list)")
            return ()
        if "category" not in qtype.subjects:
            raise self.fail("category", f"{qtype.name!r} takes no category (only counting, presence and appearance "
                                        f"order do)")
        labels = [v] if isinstance(v, str) else v
        if not isinstance(labels, list) or not labels:
            raise self.fail("category", f"expected a label or a non-empty list of labels, got {v!r}")
        for i, lab in enumerate(labels):
            fld = "category" if isinstance(v, str) else f"category[{i}]"
            if not isinstance(lab, str) or not lab.strip():
                raise self.fail(fld, f"expected a non-empty string, got {lab!r}")
            if lab in labels[:i]:
                raise self.fail(fld, f"label {lab!r} listed twice")
            if self.scene is not None and not any(o.label == lab for o in self.scene.objects):
                present = sorted({o.label for o in self.scene.objects})
                raise self.fail(fld, f"category {lab!r} is absent from scene {self.scene.scene_id!r} "
                                     f"(labels: {', '.join(present)})")
        return tuple(labels)

    def ground_truth(self, gt: Any, qtype: QuestionType, options: tuple[str, ...] | None,
                     objects: tuple[str, ...], category: tuple[str, ...], answer_kind: str | None = None) -> None:
        if answer_kind == ANSWER_TEXT:
            if not isinstance(gt, str) or not normalize_text(gt):
                raise self.fail("ground_truth", f"expected the answer text (answer_kind 'text'), got {gt!r}")
            return
        if qtype.answer == ANSWER_NUMBER or answer_kind == NUMBER:
            x = self.number(gt, "ground_truth")
            if qtype.rule == RULE_COUNTING and (x < 0 or x != int(x)):
                raise self.fail("ground_truth", f"expected a non-negative integer count, got {gt!r}")
            return
        if qtype.rule == RULE_APPEARANCE and isinstance(gt, list):
            subjects = objects or category
            if sorted(map(str, gt)) != sorted(subjects):
                raise self.fail("ground_truth", f"expected an ordering of {list(subjects)}, got {gt!r}")
            return
        assert options is not None
        if not isinstance(gt, str) or not gt.strip():
            raise self.fail("ground_truth", f"expected an option letter (a string), got {gt!r}")
        letters = [option_letter(o)[0] for o in options]
        if all(letters):
            if gt.strip().upper() not in letters:
                raise self.fail("ground_truth", f"expected one of the option letters {', '.join(letters)}, got {gt!r}")
        elif gt.strip() not in [o.strip() for o in options]:
            raise self.fail("ground_truth", f"expected one of the options {list(options)}, got {gt!r}")

    def appearance_options(self, q: Question) -> None:
        """Each option (but "None of these" and "Cannot be determined from the video") must order
        the question's subjects (by label), so a new order maps to a letter; an open question's
        answer text must be such an order."""
        if q.category:
            labels = [c.lower() for c in q.category]
        elif self.scene is not None:
            by_id = {o.id: o.label for o in self.scene.objects}
            labels = [by_id[oid].lower() for oid in q.objects]
            if len(set(labels)) != len(labels):
                raise self.fail("objects", f"appearance order by options needs objects with distinct labels, got "
                                           f"labels {labels}; use category instead")
        else:
            return
        if q.kind == ANSWER_TEXT:
            if sorted(answer_labels(q.ground_truth)) != sorted(labels):
                raise self.fail("ground_truth", f"expected an ordering of {labels} (comma-separated labels), "
                                                f"got {q.ground_truth!r}")
            return
        for i, opt in enumerate(q.options or ()):
            if not is_special_option(opt) and sorted(option_labels(opt)) != sorted(labels):
                raise self.fail(f"options[{i}]", f"expected an ordering of {labels} "
                                                 f"(comma-separated labels after the letter), got {opt!r}")


def parse_question(doc: dict, source: str = "<questions>", lineno: int = 1, scene: Any | None = None) -> Question:
    """One JSON object of a question file (1-based line ``lineno`` of ``source``, named in
    messages), validated as :func:`parse_questions` validates each line. Raises QuestionError."""
    return _LineParser(source, lineno, scene).question(doc)


def parse_questions(lines: Iterable[str], source: str = "<questions>",
                    scene: Any | None = None) -> tuple[Question, ...]:
    """Validate JSONL text (an iterable of lines). ``scene``: when given, object ids,
    categories and ``scene_id`` are checked against it. Raises QuestionError."""
    out: list[Question] = []
    first_line: dict[str, int] = {}
    for lineno, doc in iter_jsonl(lines, source, QuestionError):
        q = parse_question(doc, source, lineno, scene)
        if q.id in first_line:
            raise QuestionError(f"{source}:{lineno}: id: duplicate question id {q.id!r} "
                                f"(also line {first_line[q.id]})")
        first_line[q.id] = lineno
        out.append(q)
    return tuple(out)


def load_questions(path: str | os.PathLike, scene: Any | None = None) -> tuple[Question, ...]:
    """Load and validate a questions JSONL file (see :func:`parse_questions`)."""
    path = Path(path)
    text = read_text(path, QuestionError, "questions file")
    return parse_questions(text.splitlines(), source=str(path), scene=scene)


def ignored_times(questions: Iterable[Question]) -> list[str]:
    """Warnings (one per file) for questions whose type's ground truth ignores their time window or
    instant (every rule but ``window``, ``track``, ``camera`` and ``counting``, which counts inside the
    window: vistest.budget.rules.base.counted_frames; docs/questions-format.md "Time windows"): the
    budget stage decides them over every selected frame, only their dummies keep to the window's
    frames (vistest.videos.evidence.time_span). Each names the first such line and field."""
    by_file: dict[str, list[Question]] = {}
    for q in questions:
        if (q.window is not None or q.instant is not None) and q.type.rule not in (RULE_WINDOW, RULE_TRACK,
                                                                                  RULE_CAMERA, RULE_COUNTING):
            by_file.setdefault(q.source, []).append(q)
    out = []
    for source, qs in by_file.items():
        q = qs[0]
        fld = "time_start" if q.window is not None else "time"
        out.append(f"{q.where}: {fld}: the ground truth of {q.question_type} ignores time windows and instants "
                   f"(decided over every sampled frame; only its dummies keep to the window's frames); "
                   f"{len(qs)} such question(s) in {source}")
    return out
