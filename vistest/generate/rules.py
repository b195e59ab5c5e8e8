"""Every rule of the question generator: one frozen dataclass per rule set, every parameter named.

Each field carries ``metadata`` with ``doc`` (what it does, with its unit) and ``source`` (where its
default comes from); docs/generate.md lists them all (a test checks that every parameter is
there). Sources, cited by short name:

* **ReVSI code**: the released generator of ReVSI, ``qa_generation/*.py`` of
  github.com/3dlg-hcvc/revsi (commit 9299454, Apache-2.0): templates, exclusion lists,
  subsampling rules, per-scene caps.
* **ReVSI paper**: Zhang et al., arXiv:2604.24300, section 3 (shared/reference/revsi-summary.txt):
  single-instance counting, two-category sums, no pairs under 1 m, positioning footprint
  <= 1 m^2, pairwise distances >= 1 m, 5% visibility, "the scene" wording.
* **VLM-3R**: the VSI-Bench-style QA generation of VLM-3R (``get_obj_rel_direction_v*_qa.py``,
  ``get_obj_rel_distance_v1_qa.py``, ``common_utils.generate_multiple_choice``): 10 degree
  direction margin, 0.15 m distance margins, numeric distractors in 0.25-1.75x the answer
  with a 20% margin.
* **VSI-Bench**: Yang et al., CVPR 2025 (templates as reproduced by VLM-3R and lmms-eval).
* **issue #14**: the vistest issue that asked for the generator, where no published value exists.
* **vistest**: a choice made here, explained in docs/generate.md.

Override any parameter with ``Rules.with_overrides(["family.param=value", ...])`` (the CLI's
``--rule``); values are JSON (``1.5``, ``["bed", "toilet"]``, ``true``).
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field, fields
from typing import Any

from ..budget.seen import DEFAULT_SEEN_KIND, SeenRule, seen_rule
from ..budget.truth import DEFAULT_MIN_BUDGET_ROOM_ROUTE, DEFAULT_SEEN_THRESHOLD
from ..errors import InputError

REVSI_CODE = "ReVSI code"
REVSI_PAPER = "ReVSI paper"
VLM3R = "VLM-3R"
VSIBENCH = "VSI-Bench"
ISSUE = "issue #14"
VISTEST = "vistest"


def param(default: Any, doc: str, source: str) -> Any:
    """A rule parameter: its default, what it does (with its unit), where the default comes from."""
    return field(default=default, metadata={"doc": doc, "source": source})


# ReVSI code, obj_count_single_qa.py / obj_count_multiple_qa.py EXCLUDE_OBJ_NAMES
_COUNT_EXCLUDE = ("window", "bi-fold door", "light switch", "blinds", "roller blind", "shoes", "slippers", "clothes")
# ReVSI code, obj_size_qa.py EXCLUDE_OBJ_NAMES (near-fixed or ill-defined sizes), duplicates removed
_SIZE_EXCLUDE = (
    "window", "bi-fold door", "room door", "wooden door", "wooden room door", "room entrance door", "light switch",
    "blinds", "roller blind", "shoes", "slippers", "clothes", "towel", "shower towel", "jacket", "shower curtain",
    "pot", "mirror", "scissor", "sink", "comforter", "curtain", "backpack", "dog", "bed", "bed frame", "adult bed",
    "mattress", "bunk beds", "toilet", "bidet", "laptop", "smoke detector", "tv remote", "tv remote control",
    "remote controller", "projector remote", "football", "toilet paper", "toilet paper roll", "paper towel",
    "paper towel roll", "computer mouse", "door", "intercom", "toothpaste", "electric kettle", "iron", "steam iron",
    "range hood", "toilet brush", "washer", "washing machine", "dryer", "monitor", "fireplace", "cup", "mug",
    "coffee cup", "starbucks cup", "dryer sheets box", "ceiling light", "recessed downlight", "wall light",
    "shower seat", "power strip", "keyboard", "computer tower", "microwave", "dishwasher", "apron", "kitchen apron",
    "potted plant", "wall clock", "hair dryer", "tissue box", "telephone", "yoga mat", "yoga mat roll",
    "table phone", "desk phone", "range oven", "water filter pitcher", "headphones", "exhaust fan", "smartphone",
    "projector", "ceiling-mounted projector", "thermostat")
# ReVSI code, obj_size_qa.py OBJ_SIZE_SUBSAMPLING_RULE_BY_NAME: (label, min cm, max cm, keep probability)
_SIZE_SUBSAMPLE = (
    ("radiator", 70.0, 100.0, 0.01), ("chair", 75.0, 95.0, 0.05), ("armchair", 75.0, 95.0, 0.05),
    ("office chair", 75.0, 95.0, 0.05), ("sofa chair", 75.0, 95.0, 0.05), ("bathtub", 150.0, 170.0, 0.005),
    ("trash can", 20.0, 40.0, 0.05), ("trash bin", 20.0, 40.0, 0.05), ("refrigerator", 170.0, 200.0, 0.05),
    ("double-bowl kitchen sink", 70.0, 90.0, 0.1), ("clock", 20.0, 40.0, 0.4), ("wardrobe", 180.0, 200.0, 0.1),
    ("tv", -math.inf, math.inf, 0.2), ("oven", -math.inf, math.inf, 0.4), ("table", -math.inf, math.inf, 0.4))
# ReVSI code, obj_abs_dist_qa.py EXCLUDE_OBJ_NAMES
_DIST_EXCLUDE = ("L-shape sofa", "L-shape couch", "u-shape couch", "L-shape bench", "shower seat", "bed")
# ReVSI code, obj_rel_dist_closest_qa.py EXCLUDE_OBJ_NAMES
_REL_DIST_EXCLUDE = ("ceiling light", "ceiling lamp", "bathroom ceiling heater", "ceiling fan with light",
                     "ceiling fan", "recessed downlight") + _DIST_EXCLUDE


@dataclass(frozen=True)
class CountingRules:
    """``object_counting_single`` / ``object_counting_multiple``: how many instances of a label
    (or the sum of two labels) the scene holds. Every instance must be seen in the video
    (the ``frames.answerable_at`` rule)."""

    exclude_labels: tuple[str, ...] = param(_COUNT_EXCLUDE, "labels never counted (case-insensitive)",
                                            f"{REVSI_CODE}: obj_count_single_qa.py EXCLUDE_OBJ_NAMES")
    min_count_single: int = param(1, "smallest count asked for one label (1: single-instance questions)",
                                  f"{REVSI_PAPER}: single-instance counting reintroduced")
    min_count_each_multiple: int = param(2, "each of the two labels of a sum needs at least this many instances",
                                         f"{REVSI_CODE}: obj_count_multiple_qa.py (count > 1)")
    max_single_per_scene: int = param(0, "cap on single-label questions per scene (0: no cap)",
                                      f"{REVSI_CODE}: one question per label, no cap")
    max_multiple_per_scene: int = param(3, "cap on two-label sums per scene (0: no cap)",
                                        f"{REVSI_CODE}: obj_count_multiple_qa.py --max_samples_per_scene")


@dataclass(frozen=True)
class SizeRules:
    """``object_size_estimation``: the longest side, in centimetres, of an object whose label is
    unique in the scene."""

    exclude_labels: tuple[str, ...] = param(_SIZE_EXCLUDE, "near-fixed-size or ill-defined labels never asked",
                                            f"{REVSI_CODE}: obj_size_qa.py EXCLUDE_OBJ_NAMES (e.g. toilet, bed)")
    subsample: tuple[tuple[str, float, float, float], ...] = param(
        _SIZE_SUBSAMPLE, "(label, min cm, max cm, keep probability): a typical-sized instance (strictly inside "
                         "the range) is kept only with that probability",
        f"{REVSI_CODE}: obj_size_qa.py OBJ_SIZE_SUBSAMPLING_RULE_BY_NAME")
    max_per_scene: int = param(6, "cap per scene (0: no cap)", f"{REVSI_CODE}: obj_size_qa.py --max_samples_per_scene")
    decimals: int = param(0, "decimals of the answer (centimetres)", f"{REVSI_CODE}: obj_size_qa.py gt '{{:.0f}}'")


@dataclass(frozen=True)
class AbsDistanceRules:
    """``object_abs_distance``: the closest-point distance, in metres, between two objects whose
    labels are unique in the scene."""

    min_distance_m: float = param(1.0, "pairs closer than this are dropped (answerable from one frame)",
                                  f"{REVSI_PAPER}/{REVSI_CODE} (--distance_threshold 1); VLM-3R used 0.2 m")
    exclude_labels: tuple[str, ...] = param(_DIST_EXCLUDE, "labels never used (closest point ill-defined)",
                                            f"{REVSI_CODE}: obj_abs_dist_qa.py EXCLUDE_OBJ_NAMES")
    skip_probability: tuple[tuple[float, float, float], ...] = param(
        ((1.0, 2.0, 0.8), (2.0, 3.0, 0.5)), "(min m, max m, probability): a pair whose distance is strictly "
                                            "inside the range is skipped with that probability (more long pairs)",
        f"{REVSI_CODE}: obj_abs_dist_qa.py DISTANCE_SUBSAMPLING_RULES")
    max_per_scene: int = param(5, "cap per scene (0: no cap)",
                               f"{REVSI_CODE}: obj_abs_dist_qa.py --max_samples_per_scene")
    decimals: int = param(1, "decimals of the answer (metres)", f"{REVSI_CODE}: obj_abs_dist_qa.py gt '{{:.1f}}'")


@dataclass(frozen=True)
class RelDistanceRules:
    """``object_rel_distance_closest`` / ``_farthest``: which of 4 objects is closest to (farthest
    from) a primary object, by closest-point distance; all 5 labels unique in the scene."""

    num_options: int = param(4, "options per question", f"{VSIBENCH}/{REVSI_CODE} template (4 choices)")
    min_winner_margin_m: float = param(0.15, "dropped when the winner is within this of the runner-up",
                                       f"{VLM3R}: get_obj_rel_distance_v1_qa.py ambiguous() threshold 0.15 m")
    min_option_gap_m: float = param(0.0, "every two options' distances must differ by more than this "
                                         "(0: only the winner's margin counts)",
                                    f"{VISTEST} (VLM-3R: 0.15 m, ReVSI code: 0.3 m on every pair)")
    min_option_distance_m: float = param(0.15, "every option must be at least this far from the primary object",
                                         f"{VLM3R}: distance_to_object_threshold 0.15 m (ReVSI code: 1 m)")
    exclude_labels: tuple[str, ...] = param(_REL_DIST_EXCLUDE, "labels never used",
                                            f"{REVSI_CODE}: obj_rel_dist_closest_qa.py EXCLUDE_OBJ_NAMES")
    max_closest_per_scene: int = param(9, "cap per scene on closest questions (0: no cap)",
                                       f"{REVSI_CODE}: obj_rel_dist_closest_qa.py --max_samples_per_scene")
    max_farthest_per_scene: int = param(7, "cap per scene on farthest questions (0: no cap)",
                                        f"{REVSI_CODE}: obj_rel_dist_farthest_qa.py --max_samples_per_scene")


@dataclass(frozen=True)
class RelDirectionRules:
    """``object_rel_direction_{forward,backward}_{easy,hard}``: standing at A facing B (forward) or
    facing away from B (backward), where is C: left / right / back (easy) or the quadrant
    (hard). Angles in the floor plane, between box centres; A, B, C labels unique."""

    max_positioning_footprint_m2: float = param(1.0, "A's footprint (floor-plane outline) area at most this",
                                                f"{REVSI_PAPER} (ReVSI code: every side <= 1.4 m for A, B and C)")
    min_pairwise_distance_m: float = param(1.0, "A, B, C pairwise at least this far apart (closest points of "
                                                "their footprints on the floor plane)",
                                           f"{REVSI_PAPER} (ReVSI code: 1.5 m, in 3D and on the floor plane)")
    min_angle_from_boundary_deg: float = param(10.0, "C's centre at least this far from an answer boundary",
                                               f"{VLM3R}: ambiguity_threshold 10 deg (ReVSI code: 35 deg)")
    back_turn_deg: float = param(135.0, "easy: C is 'back' when facing it needs a turn of at least this",
                                 f"{VSIBENCH}/{REVSI_CODE} template ('at least 135 degrees')")
    box_may_span_answers: bool = param(False, "keep a question whose C box reaches into a second answer region",
                                       f"{ISSUE} (VLM-3R/ReVSI code tolerate 2 of 8 corners)")
    exclude_labels: tuple[str, ...] = param((), "labels never used", f"{REVSI_CODE}: none")
    max_per_scene: int = param(4, "cap per scene and type (0: no cap)",
                               f"{REVSI_CODE}: obj_rel_dir_qa.py --max_samples_per_scene")


@dataclass(frozen=True)
class AppearanceRules:
    """``obj_appearance_order``: the order in which 4 labels first appear in the video (first
    frame in which any instance is seen, from the visibility table)."""

    num_categories: int = param(4, "labels per question", f"{VSIBENCH} template (4 categories)")
    min_gap_s: float = param(1.0, "consecutive first appearances at least this many seconds apart", ISSUE)
    num_options: int = param(4, "options (orders) per question", f"{VSIBENCH} (4 options)")
    exclude_labels: tuple[str, ...] = param(_COUNT_EXCLUDE, "labels never used", f"{VISTEST} (counting's list)")
    max_per_scene: int = param(4, "cap per scene (0: no cap)", f"{VISTEST} (VSI-Bench's generator is unreleased)")


@dataclass(frozen=True)
class RoomSizeRules:
    """``room_size_estimation_single`` / ``_multiple``: the floor area in m^2 of the scene's
    ``room`` (``room.area_type``: ``single_room`` -> single, else multiple)."""

    decimals: int = param(1, "decimals of the answer (square metres)", f"{REVSI_CODE}: room_size_qa.py gt '{{:.1f}}'")


@dataclass(frozen=True)
class NumericMcqRules:
    """``*_mcq``: a numeric question (size, distance, room area) asked with numeric options.

    The options are a geometric ladder ``answer * step_ratio ** (i - r)``, ``i = 0..k-1``, with
    the answer at rank ``r`` (balanced over the set): every option is ``step_ratio`` times the
    next smaller one, and all lie within ``[min_ratio, max_ratio]`` times the answer."""

    num_options: int = param(4, "options per question", f"{VLM3R}: generate_multiple_choice (3 distractors)")
    step_ratio: float = param(1.2, "each option is this times the next smaller one (20% apart)",
                              f"{VLM3R}: margin 0.20 (taken relative to the smaller value; docs/generate.md)")
    min_ratio: float = param(0.25, "no option below this times the answer", f"{VLM3R}: lower_bound 0.25")
    max_ratio: float = param(1.75, "no option above this times the answer", f"{VLM3R}: upper_bound 1.75")
    significant_digits: int = param(3, "significant digits of the option values", VISTEST)


@dataclass(frozen=True)
class BalanceRules:
    """Debiasing over the whole set of generated questions (all scenes together)."""

    max_count_share: float = param(0.25, "no counting answer above this share of its type's questions", ISSUE)
    letter_tolerance: float = param(0.05, "each correct letter within 1/k +- this per type (reported; the "
                                          "assignment itself is exact to one question)", ISSUE)
    direction_answer_tolerance: float = param(0.05, "each direction word (left, back-right ...) at most 1/k + "
                                                    "this of its type's answers", VISTEST)
    blind_margin: float = param(0.04, "numeric types: questions are pruned until every blind baseline scores at "
                                      "most chance + this (the issue's goal is 5 points)", VISTEST)
    max_prune_fraction: float = param(0.8, "never prune more than this share of a type's questions", VISTEST)
    prune_step: float = param(0.02, "share of a type's questions pruned per round (at least one)", VISTEST)
    min_questions: int = param(8, "types with fewer questions are not pruned", VISTEST)
    min_judged: int = param(20, "the report judges a type's blind baselines against chance only from this many "
                                "questions on (the standard error of a mean MRA is about 0.3/sqrt(n): 7 points at "
                                "20); the pooled 'overall' row is always judged", VISTEST)
    pool_per_scene: int = param(40, "candidates kept per scene and type before the budget check, drawn at random "
                                    "(bounds the work on scenes with thousands of object triples; 0: all)", VISTEST)


@dataclass(frozen=True)
class FrameRules:
    """What the video shows: the visibility table and the budget stage decide answerability."""

    seen_threshold: float = param(DEFAULT_SEEN_THRESHOLD,
                                  "an object is seen in a frame when its visible fraction of the image "
                                  "exceeds this (first appearances, answerability); under another seen_rule, "
                                  "that rule's threshold in its unit",
                                  "the budget stage's default (vistest.budget.truth), ReVSI's 5%")
    seen_rule: str = param(DEFAULT_SEEN_KIND, "the seen rule's kind, KIND[@ARRAY]: image, silhouette or pixels "
                                              "(vistest.budget.seen, docs/questions-format.md)",
                           "the budget stage's default (vistest.budget.seen), ReVSI's")

    @property
    def seen(self) -> SeenRule:
        """The seen rule these parameters name (validated)."""
        return seen_rule(self.seen_threshold, self.seen_rule, "--rule: frames.seen_threshold")
    answerable_at: tuple[str, ...] = param(("all",), "keep a question only when the budget stage keeps its answer "
                                                     "at every one of these budgets", ISSUE)
    profile: str = param("uniform", "sampler profile of the budget stage (docs/sampling.md)", VISTEST)
    report_budgets: tuple[str, ...] = param(("16", "32", "64", "all"), "budgets of the answerability report",
                                            f"{REVSI_PAPER} (16/32/64/all)")
    min_budget_room_route: int = param(DEFAULT_MIN_BUDGET_ROOM_ROUTE,
                                       "budget stage: room size needs at least this many frames",
                                       "the budget stage's default (ReVSI excludes room size at 16)")


@dataclass(frozen=True)
class Rules:
    """Every rule set, by family name (the ``family`` of ``family.param=value`` overrides)."""

    counting: CountingRules = CountingRules()
    size: SizeRules = SizeRules()
    abs_distance: AbsDistanceRules = AbsDistanceRules()
    rel_distance: RelDistanceRules = RelDistanceRules()
    rel_direction: RelDirectionRules = RelDirectionRules()
    appearance: AppearanceRules = AppearanceRules()
    room_size: RoomSizeRules = RoomSizeRules()
    numeric_mcq: NumericMcqRules = NumericMcqRules()
    balance: BalanceRules = BalanceRules()
    frames: FrameRules = FrameRules()

    def with_overrides(self, items: tuple[str, ...] | list[str], source: str = "--rule") -> "Rules":
        """A copy with ``family.param=value`` overrides applied (value: JSON, else a string).
        Raises InputError naming the override and what was expected."""
        rules = self
        for item in items:
            key, sep, raw = item.partition("=")
            family, dot, name = key.strip().partition(".")
            if not sep or not dot:
                raise InputError(f"{source}: expected FAMILY.PARAM=VALUE, got {item!r}")
            sets = {f.name: getattr(rules, f.name) for f in fields(rules)}
            if family not in sets:
                raise InputError(f"{source}: {key}: unknown rule family {family!r}; expected one of "
                                 f"{', '.join(sets)}")
            group = sets[family]
            known = {f.name: f for f in fields(group)}
            if name not in known:
                raise InputError(f"{source}: {key}: unknown parameter {name!r}; {family} takes "
                                 f"{', '.join(known)}")
            try:
                value = json.loads(raw)
            except json.JSONDecodeError:
                value = raw
            value = _coerce(value, getattr(group, name), f"{source}: {key}")
            rules = dataclasses.replace(rules, **{family: dataclasses.replace(group, **{name: value})})
        rules.validate()
        return rules

    def validate(self) -> None:
        """Raise InputError on values no rule can work with."""
        m = self.numeric_mcq
        if m.num_options < 2 or m.step_ratio <= 1.0:
            raise InputError("--rule: numeric_mcq: expected num_options >= 2 and step_ratio > 1")
        span = m.step_ratio ** (m.num_options - 1)
        if span > m.max_ratio + 1e-9 or 1.0 / span < m.min_ratio - 1e-9:
            raise InputError(f"--rule: numeric_mcq: step_ratio {m.step_ratio} over {m.num_options} options spans "
                             f"{span:.3f}x, outside [{m.min_ratio}, {m.max_ratio}] times the answer")
        for name, v in (("appearance.num_categories", self.appearance.num_categories),
                        ("appearance.num_options", self.appearance.num_options),
                        ("rel_distance.num_options", self.rel_distance.num_options)):
            if v < 2:
                raise InputError(f"--rule: {name}: expected at least 2, got {v}")
        if math.factorial(self.appearance.num_categories) < self.appearance.num_options:
            raise InputError("--rule: appearance.num_options: more options than orders of the categories")
        self.frames.seen  # noqa: B018 (validates frames.seen_rule with frames.seen_threshold)
        if not 0.0 < self.balance.max_count_share <= 1.0:
            raise InputError("--rule: balance.max_count_share: expected a share in (0, 1]")


def _coerce(value: Any, default: Any, where: str) -> Any:
    """``value`` converted to the type of ``default`` (tuples from JSON lists), or InputError."""
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
    elif isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(default, float):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
    elif isinstance(default, str):
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return str(value)
    elif isinstance(default, tuple):
        if isinstance(value, list):
            items = [tuple(v) if isinstance(v, list) else v for v in value]
            if default and isinstance(default[0], str):  # a list of labels or budgets: ["all", 32]
                items = [str(v) for v in items]
            return tuple(items)
    raise InputError(f"{where}: expected a value like {json.dumps(_jsonable(default))}, got {value!r}")


def _jsonable(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return v


def rule_table() -> list[tuple[str, str, str, str]]:
    """(``family.param``, default as JSON, doc, source) for every parameter, in declaration order."""
    out = []
    for fam in fields(Rules):
        group = fam.default
        for f in fields(group):
            out.append((f"{fam.name}.{f.name}", json.dumps(_jsonable(getattr(group, f.name))),
                        f.metadata["doc"], f.metadata["source"]))
    return out
