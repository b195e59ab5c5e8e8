"""TruthRow: one ground-truth row, the one schema of ``{budget}_frame.jsonl`` and ``dummy_gt.jsonl``.

A row is one question under one *variant* and frame *budget*: the real budget video
(``variant == "budget"``, :data:`REAL_VARIANT`; written by vistest.budget.truth) or a dummy with
the question's evidence removed (``"dummy-{mode}"``; written by vistest.budget.dummy). The JSON
object is the question's own fields (vistest.questions; ``ground_truth`` replaced by the row's,
the question's kept as ``original_ground_truth``) followed by the row's fields, in the order of
:data:`REAL_FIELDS` or :data:`DUMMY_FIELDS` (each field named there with its unit). Writers give
the values by name (:func:`real_row`, :func:`dummy_row`), readers parse a line
(:meth:`TruthRow.from_json`); vistest.eval scores rows and its exporters compose them.

Reading checks what scoring relies on and names file, line, field and the expectation:
``id``, ``question_type`` (a vistest type), ``num_frames`` or ``budget`` (a positive integer
or ``"all"``), ``ground_truth`` (null when unanswerable), ``status`` (kept / changed /
unanswerable / unknown; when absent: unanswerable for a null or ``"unanswerable"`` ground truth, else
changed, a dummy's 0), ``variant`` (``budget`` or a name starting with ``dummy``), and the
reformulation fields (vistest/reformulate.py: ``reformulation``, ``group_id``, ``shift``,
``answer_kind``, ``accepts_abstention``, ``unsupported``, ``skipped_variants``). Every other
field is kept as read (:attr:`TruthRow.fields`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from ..errors import InputError
from ..answers import BASE, REFORMULATIONS, abstain_letter, ground_truth_number, is_abstain_answer, option_letters
from ..questions import ANSWER_MCQ, ANSWER_NUMBER, ANSWER_TEXT, QUESTION_TYPES, RULE_COUNTING
from ..budgets import Budget

REAL_VARIANT = "budget"  # the variant of a real budget video's row
DUMMY_PREFIX = "dummy"   # every dummy variant starts with it: "dummy-{mode}"
KEPT, CHANGED, UNANSWERABLE = "kept", "changed", "unanswerable"
UNKNOWN = "unknown"  # 2D scenes: the answer turns on frames the annotation says nothing of (vistest.budget.truth)
STATUSES = (KEPT, CHANGED, UNANSWERABLE, UNKNOWN)
NO_ANSWER = (UNANSWERABLE, UNKNOWN)  # statuses whose ground truth is null

# VSI-Bench size template: "... longest dimension (length, width, or height) of the bed, measured in
# centimeters?": the label is the last "of the X" that ends at a comma, "?", "(" or the end
_SIZE_LABEL_RE = re.compile(r"\bof the ([^,?()]+?)\s*(?:,|\?|\(|$)")


@dataclass(frozen=True)
class RowField:
    """One field a row adds to its question's: ``name``, ``doc`` (what it holds, with its unit),
    ``optional`` (written only where it applies)."""

    name: str
    doc: str
    optional: bool = False


def _fields(*specs: tuple) -> Mapping[str, RowField]:
    return MappingProxyType({s[0]: RowField(*s) for s in specs})


# the fields of a real row (vistest.budget.truth), in written order; then the question's answer-free fields
REAL_FIELDS = _fields(
    ("num_frames", "the frame budget: a positive integer, or \"all\" (every decoded frame)"),
    ("frame_indices", "0-based decoded source frames the sampler profile selects, in selection order (repeats "
                      "kept); an evaluator's row: the source frames that configuration takes"),
    ("ground_truth", "the answer the selected frames support, the question's JSON type; null when unanswerable"),
    ("status", "kept, changed, unanswerable, or unknown (2D scenes: the answer turns on frames the annotation "
               "says nothing of): the supported answer against the all-frame one"),
    ("reason", "why: a machine-readable code (vistest.budget.truth REASON_*)"),
    ("original_ground_truth", "the question's all-frame answer"),
    ("sampler_profile", "the sampler profile that selected the frames (vistest.budget.sampling)"),
    ("unseen", "referenced object ids (or category labels) seen in no selected frame"),
    ("evidence_frames", "selected frames (sorted, unique) in which a referenced object is seen"),
    ("invalid_frames", "selected frames whose camera pose is invalid (sorted); they witness nothing"),
    ("frames_without_visibility", "selected frames with no visibility row (sorted); they witness nothing"),
    ("reason_text", "the reason in words"),
    ("unseen_detail", "per referenced object counted unseen: frames in view, the most it shows (the seen rule's "
                      "unit) and in which frame, the sentence saying so"),
    ("unsupported", "true: the answer is the one the question offers where the frames support none", True),
    ("unknown_frames", "status unknown: selected frames where a referenced object's state is unknown (2D)", True),
    ("unknown_objects", "status unknown: the objects whose state there is unknown", True),
    ("status_if_unknown_unseen", "status unknown: the status if those objects were unseen there", True),
    ("ground_truth_if_unknown_unseen", "status unknown: the answer if those objects were unseen there", True),
    ("reason_if_unknown_unseen", "status unknown: the reason code if those objects were unseen there", True),
    ("occlusion_sensitive", "true: the status or the answer changes when occlusion is ignored", True),
    ("status_without_occlusion", "with occlusion_sensitive: the status with occlusion ignored", True),
    ("ground_truth_without_occlusion", "with occlusion_sensitive: the answer with occlusion ignored", True),
    ("evaluator", "the evaluator configuration whose frames these are (vistest.budget.evaluators)", True),
    ("evaluator_config", "with evaluator: its profile, options and frames asked", True),
    ("frames_taken", "with evaluator: frames it takes (len(frame_indices))", True),
    ("video_fps", "with a window or an instant: frames/s the times are mapped with (decoded frame i at i / fps s)",
     True),
    ("window_frames", "with time_start/time_end: the selected frames (frame_indices) inside the window, sorted, "
                      "unique; 0-based decoded frames, the window closed at both ends (vistest.budget.windows)", True),
    ("window_frame_count", "with a window: how many distinct selected frames fall inside it (len(window_frames))",
     True),
    ("instant_frame", "with time: the selected frame nearest the instant (the earlier on a tie); null when none", True),
    ("instant_offset_s", "with time: seconds between instant_frame (at i / fps) and the instant; null when none",
     True),
    ("instant_tolerance_s", "with time: seconds; the nearest selected frame serves the instant when "
                            "instant_offset_s is at most this", True),
    ("track_frames", "rule track (the motion_* types): the selected frames inside the window in which the question's "
                     "object is seen (sorted, unique, 0-based decoded frames), the frames its answer is recomputed "
                     "over", True),
    ("track_value", "rule track: the quantity over track_frames (vistest.motion), in track_unit; null when they give "
                    "none (too few frames, no floor displacement)", True),
    ("track_unit", "rule track: the unit of track_value and track_value_all: m (displacement, path length), m/s "
                   "(speed), m/s^2 (acceleration, signed), deg (heading: counter-clockwise from the window's first "
                   "camera's right, seen from above)", True),
    ("track_value_all", "rule track: the quantity over every frame of the window in which the object is seen (the "
                        "all-frame answer's value), in track_unit; null when they give none", True),
    ("seen_threshold", "the seen rule's threshold, in the rule's unit (vistest.budget.seen)"),
    ("seen_rule", "the seen rule in words, e.g. \"> 5% of the image\""),
    ("min_budget_room_route", "frames: the smallest budget at which room size and route planning are answerable"),
)

# the fields of a dummy row (vistest.budget.dummy), in written order
DUMMY_FIELDS = _fields(
    ("variant", "dummy-{mode}: the dummy mode (vistest.videos.plan.DUMMY_MODES)"),
    ("num_frames", "the frame budget an evaluator samples from the dummy: a positive integer or \"all\""),
    ("dummy_mode", "drop, black, mask or allblack"),
    ("dummy_length", "budget (an n-frame budget dummy) or full (the full-length dummy)"),
    ("fill", "mask mode: black, blur or inpaint; null otherwise"),
    ("video", "the dummy video, relative to the run folder; null when not written (warnings say why)"),
    ("video_key", "the video's content key (sha256 hex); null when not written"),
    ("video_frames", "frames the video holds (0 when not written)"),
    ("fps", "frames/s of the video"),
    ("frame_indices", "the 0-based source frame of each frame of the video, in order"),
    ("black_frames", "source frames shown black (sorted, unique)"),
    ("masked_frames", "source frames shown with the removed objects' boxes filled (sorted, unique)"),
    ("timeline_frames", "frames of the full-length dummy (the timeline budget dummies are taken from)"),
    ("fewer_frames_than_budget", "the full-length dummy has fewer frames than the numeric budget"),
    ("ground_truth", "0 (the original's JSON type) for counting, the offered answer of a reformulated question, "
                     "else null"),
    ("original_ground_truth", "the question's all-frame answer"),
    ("status", "kept, changed or unanswerable"),
    ("reason", "evidence_removed or all_black"),
    ("expectation", "zero, abstain or none_of_these: what a model that sees the dummy should answer"),
    ("removed_objects", "object ids whose evidence is removed (none for allblack)"),
    ("evidence_frames", "source frames carrying the removed objects' evidence (sorted)"),
    ("warnings", "what to know about the dummy, e.g. why no video was written"),
    ("unsupported", "true: the answer is the one the question offers where the frames support none", True),
    ("evidence_threshold", "fraction of the image area: a frame carries evidence above it (vistest.videos.plan)"),
)

# the fields a real row adds to its question's (its ground_truth replaces the question's)
ROW_ONLY_FIELDS = frozenset(REAL_FIELDS) - {"ground_truth"}


def _layout(schema: Mapping[str, RowField], question: Mapping[str, Any], values: Mapping[str, Any]) -> dict:
    """The JSON object of a row: the question's fields, then ``values`` in ``schema`` order (a
    field the question has keeps its place). Every required field must be given, and only fields
    of the schema (a programming error otherwise)."""
    unknown = set(values) - set(schema)
    missing = [n for n, f in schema.items() if not f.optional and n not in values]
    if unknown or missing:
        raise TypeError(f"row fields: unknown {sorted(unknown)}, missing {missing}")
    rec = dict(question)
    rec.update((n, values[n]) for n in schema if n in values)
    return rec


def real_row(question: Mapping[str, Any], source: str = "<questions>", line: int = 0, **values: Any) -> "TruthRow":
    """A real row from its question's record (read from ``source``, ``line``: named by an error)
    and the values of :data:`REAL_FIELDS` (optional ones only where they apply), checked as a
    reader checks it."""
    return TruthRow.from_json(_layout(REAL_FIELDS, question, values), source, line, REAL_VARIANT)


def dummy_row(question: Mapping[str, Any], source: str = "<questions>", line: int = 0, **values: Any) -> "TruthRow":
    """A dummy row from its question's record and the values of :data:`DUMMY_FIELDS` (as :func:`real_row`)."""
    return TruthRow.from_json(_layout(DUMMY_FIELDS, question, values), source, line)


def question_record(row: Mapping[str, Any]) -> dict:
    """The question a real row was made from: its fields without the row's (:data:`REAL_FIELDS`),
    ``ground_truth`` the question's own (``original_ground_truth``)."""
    rec = {k: v for k, v in row.items() if k not in ROW_ONLY_FIELDS}
    rec["ground_truth"] = row.get("original_ground_truth", row.get("ground_truth"))
    return rec


def is_size_type(question_type: str) -> bool:
    """Object size questions with a numeric answer (VSI-Bench and ReVSI ``object_size_estimation``;
    not vistest's multiple-choice ``object_size_estimation_mcq``)."""
    return question_type.startswith("object_size") and QUESTION_TYPES[question_type].answer != ANSWER_MCQ


class Keyed:
    """A row read from a file, matched on (id, variant, budget): a ground-truth row and the
    prediction that answers it (vistest.eval.records.Prediction) share these."""

    id: str
    variant: str
    budget: str
    source: str
    line: int

    @property
    def key(self) -> tuple[str, str, str]:
        """(id, variant, budget): what a prediction is matched on."""
        return (self.id, self.variant, self.budget)

    @property
    def where(self) -> str:
        """``file:line`` (1-based) of the row, for error messages."""
        return f"{self.source}:{self.line}"


@dataclass(frozen=True)
class TruthRow(Keyed):
    """The ground truth of one (question ``id``, ``variant``, ``budget``), as read or written.

    ``budget``: the label (``"16"``, ``"all"``; vistest.budget.sampling.budget_label).
    ``ground_truth``: an option letter (MCQ) or a number / numeric string; None when the row is
    unanswerable. ``options``: the MCQ options (``"A. text"``), None for numeric types and open
    reformulations. ``label``: the object category of a size question (for the category-mean
    size prior), None when unknown. ``group``: the benchmark's source dataset (``dataset`` field,
    e.g. ``scannet``), "" when absent; it splits rank-attack cells as the ReSTI audit does.
    ``source``/``line`` locate the record (1-based line; a written row: its question's).

    ``scene_id`` and ``question`` (the text) feed the held-out blind baselines (folds by scene)
    and the learned blind model. Reformulations: ``group_id`` (the base question's id; the
    row's own id when absent), ``reformulation`` (``base`` when absent), ``shift``
    (circular), ``answer_kind`` (``text`` / ``number`` for a multiple-choice type asked
    without options), ``accepts_abstention``, ``unsupported`` (the frames support no answer;
    the ground truth is the one the question offers for that), ``skipped_variants`` (a base
    row: (variant, why) of each variant vistest reformulate did not write).
    ``fields``: the JSON object as written or read, every field in order (:meth:`to_json`).
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
    fields: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), compare=False, repr=False)

    # ---- the JSON object ----------------------------------------------------------------
    def to_json(self) -> dict:
        """The row's JSON object, every field in written order."""
        return dict(self.fields)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], source: str, line: int, variant: str | None = None,
                  error: type[InputError] = InputError) -> "TruthRow":
        """A row from one JSON object (module docstring: what is checked). ``variant``: fixed by
        the caller (budget files), else the record's (default ``"budget"``). ``error``: the
        InputError class raised, its message ``SOURCE:LINE: FIELD: expectation``."""
        where = f"{source}:{line}"

        def fail(fld: str, msg: str) -> InputError:
            return error(f"{where}: {fld}: {msg}")

        if "id" not in doc:
            raise fail("id", "missing required field")
        qid = ident(doc["id"], where, "id", error)
        qtype = doc.get("question_type")
        if qtype not in QUESTION_TYPES:
            raise fail("question_type", f"expected one of {', '.join(sorted(QUESTION_TYPES))}, got {qtype!r}")
        bkey = "budget" if "budget" in doc else "num_frames"
        if bkey not in doc:
            raise fail("num_frames", "missing required field (the frame budget: an integer or 'all')")
        budget = budget_field(doc[bkey], where, bkey, error)
        var = variant if variant is not None else variant_field(doc.get("variant", REAL_VARIANT), where, error=error)
        gt, status = _answer(doc, fail)
        answer_kind = doc.get("answer_kind")
        mcq = QUESTION_TYPES[qtype].answer == ANSWER_MCQ
        if answer_kind is not None and (answer_kind not in (ANSWER_TEXT, ANSWER_NUMBER) or not mcq):
            raise fail("answer_kind", f"expected 'text' or 'number' on a multiple-choice type asked without options, "
                                      f"got {answer_kind!r} on {qtype!r}")
        options = doc.get("options")
        if mcq and answer_kind is None and options is not None:
            if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
                raise fail("options", f"expected a list of strings, got {options!r}")
            options = tuple(options)
        else:
            options = None
        ref = doc.get("reformulation") or BASE
        if ref not in REFORMULATIONS:
            raise fail("reformulation", f"expected one of {', '.join(REFORMULATIONS)}, got {ref!r}")
        group_id = ident(doc["group_id"], where, "group_id", error) if doc.get("group_id") is not None else qid
        shift = doc.get("shift")
        if shift is not None and (isinstance(shift, bool) or not isinstance(shift, int)):
            raise fail("shift", f"expected an integer (a circular reformulation's shift), got {shift!r}")
        flags = {}
        for key in ("accepts_abstention", "unsupported"):
            flags[key] = doc.get(key, False)
            if not isinstance(flags[key], bool):
                raise fail(key, f"expected true or false, got {flags[key]!r}")
        skipped = doc.get("skipped_variants") or {}
        if not isinstance(skipped, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                    for k, v in skipped.items()):
            raise fail("skipped_variants", f"expected an object mapping a variant to why vistest reformulate did not "
                                           f"write it, got {skipped!r}")
        return cls(qid, var, budget, qtype, gt, status, options, _size_label(doc) if is_size_type(qtype) else None,
                   doc.get("dataset") if isinstance(doc.get("dataset"), str) else "", source, line,
                   scene_id=str(doc.get("scene_id") or ""), question=str(doc.get("question") or ""),
                   group_id=group_id, reformulation=ref, shift=shift, answer_kind=answer_kind,
                   skipped_variants=tuple(skipped.items()), fields=MappingProxyType(dict(doc)), **flags)

    # ---- fields kept as written ---------------------------------------------------------
    @property
    def reason(self) -> str | None:
        """The reason code (vistest.budget.truth REASON_*, a dummy's ``evidence_removed``...)."""
        return self.fields.get("reason")

    @property
    def original_ground_truth(self) -> Any:
        """The question's all-frame answer (the row's ``ground_truth`` where not recorded)."""
        return self.fields.get("original_ground_truth", self.fields.get("ground_truth"))

    @property
    def frame_indices(self) -> tuple[int, ...]:
        """The source frames of the row's selection or video, in order (empty when not recorded)."""
        return tuple(self.fields.get("frame_indices") or ())

    # ---- derived --------------------------------------------------------------------------
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
        return self.status not in NO_ANSWER and self.ground_truth is not None

    @property
    def evidence_removed(self) -> bool:
        """Dummy, unanswerable and unsupported rows: scored for hallucination (an unsupported
        real row is scored for accuracy too). An ``unknown`` row (2D: nothing says whether the evidence
        shows) is neither: scored for nothing."""
        if self.status == UNKNOWN and not self.is_dummy:
            return False
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


# ---------------------------------------------------------------------------------------
# field readers (also used for predictions: vistest.eval.records)
# ---------------------------------------------------------------------------------------
def ident(v: Any, where: str, fld: str, error: type[InputError] = InputError) -> str:
    """A question id: a non-empty string, or an integer (as its decimal string)."""
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    if isinstance(v, str) and v:
        return v
    raise error(f"{where}: {fld}: expected a non-empty string or an integer id, got {v!r}")


def budget_field(v: Any, where: str, fld: str, error: type[InputError] = InputError) -> str:
    """A frame budget's label (``"16"``, ``"all"``) from a record's value."""
    try:
        return Budget.parse(v, fld).label
    except ValueError:
        raise error(f"{where}: {fld}: expected a frame budget (a positive integer or 'all'), got {v!r}") from None


def variant_field(v: Any, where: str, fld: str = "variant", error: type[InputError] = InputError) -> str:
    """``"budget"`` or a dummy variant name (starting with ``"dummy"``), stripped."""
    if not isinstance(v, str) or not v.strip():
        raise error(f"{where}: {fld}: expected {REAL_VARIANT!r} or a dummy variant name starting with "
                    f"{DUMMY_PREFIX!r}, got {v!r}")
    v = v.strip()
    if v != REAL_VARIANT and not v.startswith(DUMMY_PREFIX):
        raise error(f"{where}: {fld}: expected {REAL_VARIANT!r} or a name starting with {DUMMY_PREFIX!r}, got {v!r}")
    return v


def _answer(doc: Mapping[str, Any], fail) -> tuple[Any, str]:
    """(ground_truth, status) of a record (module docstring: a missing status)."""
    if "ground_truth" not in doc:
        raise fail("ground_truth", "missing required field (null when unanswerable)")
    gt = doc["ground_truth"]
    status = doc.get("status")
    if status is None:
        status = UNANSWERABLE if gt is None or gt == UNANSWERABLE else CHANGED
    if status not in STATUSES:
        raise fail("status", f"expected one of {', '.join(STATUSES)}, got {status!r}")
    if status in NO_ANSWER:
        return None, status
    if gt is None:
        raise fail("ground_truth", f"expected an answer for status {status!r}, got null")
    return gt, status


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
