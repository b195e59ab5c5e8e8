"""Every rule of the question generator: one frozen dataclass per rule set, every parameter named.

Each field carries ``metadata`` with ``doc`` (what it does, with its unit) and ``source`` (where its
default comes from); docs/generate.md lists them all (a test checks that every parameter is
there). Sources, cited by short name:

* **ReVSI code**: the released generator of ReVSI, ``qa_generation/*.py`` of
  github.com/3dlg-hcvc/revsi (commit 9299454, Apache-2.0): templates, exclusion lists,
  thresholds, sampling probabilities, per-scene caps. The defaults (the ``revsi`` preset)
  reproduce them; each source names the file and the constant.
* **ReVSI paper**: Zhang et al., arXiv:2604.24300, section 3 (shared/reference/revsi-summary.txt):
  single-instance counting, two-category sums, no pairs under 1 m, positioning footprint
  <= 1 m^2, pairwise distances >= 1 m, 5% visibility, "the scene" wording.
* **VLM-3R**: the VSI-Bench-style QA generation of VLM-3R, ``vlm_3r_data_process/src/tasks/vsibench/``
  of github.com/VITA-Group/VLM-3R (commit 6dd1264) and its ``utils/common_utils.py``: the
  ``vlm3r`` preset (:data:`VLM3R_PRESET`), and the numeric options of every preset.
* **VSI-Bench**: Yang et al., CVPR 2025 (templates as reproduced by VLM-3R and lmms-eval).
* **issue #14**: the vistest issue that asked for the generator, where no published value exists.
* **vistest**: a choice made here, explained in docs/generate.md.

Presets (the CLI's ``--rules``): ``Rules()`` / ``Rules.preset("revsi")`` is ReVSI's code,
``Rules.preset("vlm3r")`` VLM-3R's (:data:`VLM3R_PRESET`: each changed value with its source).
Override any parameter with ``Rules.with_overrides(["family.param=value", ...])`` (the CLI's
``--rule``); values are JSON (``1.5``, ``["bed", "toilet"]``, ``true``).
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field, fields
from typing import Any

from ..budget.config import TruthConfig
from ..budget.seen import SEEN_KINDS, SeenRule, seen_rule
from ..budgets import ALL, parse_budget
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


# ReVSI code, obj_count_single_qa.py / obj_count_multiple_qa.py CHALLENGING_OBJ_NAMES
_COUNT_CHALLENGING = ("nightstand", "chair", "trash can", "door", "table", "pillow", "table lamp", "backpack", "desk")
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
    """``object_counting_single`` / ``object_counting_multiple`` (VSI-Bench: ``object_counting``):
    how many instances of a label (or the sum of two labels) the scene holds. Every instance must
    be seen in the video (the ``frames.truth.budgets`` rule)."""

    exclude_labels: tuple[str, ...] = param(_COUNT_EXCLUDE, "labels never counted (case-insensitive)",
                                            f"{REVSI_CODE}: obj_count_single_qa.py EXCLUDE_OBJ_NAMES")
    min_count_single: int = param(2, "a label outside challenging_labels is asked for one label only with at "
                                     "least this many instances", f"{REVSI_CODE}: obj_count_single_qa.py "
                                                                   "_should_generate_question (obj_count > 1)")
    challenging_labels: tuple[str, ...] = param(
        _COUNT_CHALLENGING, "labels asked at any count (1 included), subsampled by challenging_keep_probability",
        f"{REVSI_CODE}: obj_count_single_qa.py CHALLENGING_OBJ_NAMES")
    challenging_keep_probability: tuple[tuple[int, float], ...] = param(
        ((1, 0.4), (2, 0.05)), "(count, probability): a challenging label with that count is kept with that "
                               "probability (other counts always)",
        f"{REVSI_CODE}: obj_count_single_qa.py CHALLENGING_OBJ_KEEP_PROBABILITY_BY_COUNT")
    min_count_each_multiple: int = param(2, "each of the two labels of a sum needs at least this many instances",
                                         f"{REVSI_CODE}: obj_count_multiple_qa.py _is_valid_object (count > 1)")
    challenging_pair_sum: int = param(4, "a sum of two challenging labels equal to this is subsampled",
                                      f"{REVSI_CODE}: obj_count_multiple_qa.py _should_generate_question "
                                      "(first_obj_count + second_obj_count != 4)")
    challenging_pair_keep_probability: float = param(
        0.3, "probability of keeping such a pair", f"{REVSI_CODE}: obj_count_multiple_qa.py "
                                                   "CHALLENGING_PAIR_KEEP_PROBABILITY")
    max_single_per_scene: int = param(0, "cap on single-label questions per scene (0: no cap)",
                                      f"{REVSI_CODE}: obj_count_single_qa.py (one question per label, no cap)")
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
    """``object_rel_distance_closest`` / ``_farthest`` (VSI-Bench: ``object_rel_distance``, closest):
    which of 4 objects is closest to (farthest from) a primary object, by closest-point distance;
    all 5 labels unique in the scene."""

    num_options: int = param(4, "options per question", f"{REVSI_CODE}: obj_rel_dist_closest_qa.py "
                                                        "OBJ_REL_DISTANCE_QUESTION_TEMPLATE (4 choices)")
    min_option_distance_m: float = param(1.0, "every option must be more than this far from the primary object",
                                         f"{REVSI_CODE}: obj_rel_dist_closest_qa.py MIN_OPTION_DISTANCE_TO_PRIMARY")
    min_option_gap_m: float = param(0.3, "every two options' distances to the primary must differ by more than this",
                                    f"{REVSI_CODE}: obj_rel_dist_closest_qa.py MIN_OPTION_DISTANCE_DIFF_TO_PRIMARY")
    exclude_labels: tuple[str, ...] = param(_REL_DIST_EXCLUDE, "labels never used",
                                            f"{REVSI_CODE}: obj_rel_dist_closest_qa.py EXCLUDE_OBJ_NAMES")
    max_closest_per_scene: int = param(9, "cap per scene on closest questions (0: no cap)",
                                       f"{REVSI_CODE}: obj_rel_dist_closest_qa.py --max_samples_per_scene")
    max_farthest_per_scene: int = param(7, "cap per scene on farthest questions (0: no cap)",
                                        f"{REVSI_CODE}: obj_rel_dist_farthest_qa.py --max_samples_per_scene")


@dataclass(frozen=True)
class RelDirectionRules:
    """``object_rel_direction_{forward,backward}_{easy,hard}`` (VSI-Bench:
    ``object_rel_direction_{easy,medium,hard}``): standing by A facing B (forward) or facing away
    from B (backward), where is C: left / right / back (ReVSI easy, VSI-Bench medium), left / right
    (VSI-Bench easy: C in the back region is not asked) or the quadrant (hard). Angles in the floor
    plane, between box centres; A, B, C labels unique."""

    max_object_xy_extent_m: float = param(1.4, "A, B and C: the box's extents along its first two axes at most this "
                                               "(0: no limit)", f"{REVSI_CODE}: obj_rel_dir_qa.py MAX_OBJECT_XY_EXTENT")
    min_separation_m: float = param(1.5, "A, B, C pairwise: closest-point distance of the boxes at least this",
                                    f"{REVSI_CODE}: obj_rel_dir_qa.py MIN_OBJECT_SEPARATION (3D)")
    min_floor_separation_m: float = param(1.5, "A, B, C pairwise: closest-point distance of their footprints on the "
                                               "floor plane at least this",
                                          f"{REVSI_CODE}: obj_rel_dir_qa.py MIN_OBJECT_SEPARATION (XY projection)")
    max_separation_m: float = param(0.0, "A, B, C pairwise: closest-point distance at most this (0: no limit)",
                                    f"{REVSI_CODE}: none")
    min_angle_from_boundary_deg: float = param(35.0, "C's centre at least this far from every answer boundary",
                                               f"{REVSI_CODE}: obj_rel_dir_qa.py MIN_ANGLE_FROM_BOUNDARY")
    max_corners_in_other_region: int = param(
        2, "at most this many of C's 8 box corners in another answer region than its centre",
        f"{REVSI_CODE}: obj_rel_dir_qa.py _get_gt ((quadrant_of_centroid != quadrant_of_vertices).sum() > 2)")
    back_turn_deg: float = param(135.0, "left/right/back: C is 'back' when facing it needs a turn of at least this",
                                 f"{REVSI_CODE}: obj_rel_dir_qa.py _get_gt bins [0, 135, 225, 360]")
    exclude_labels: tuple[str, ...] = param((), "labels never used", f"{REVSI_CODE}: obj_rel_dir_qa.py (none)")
    max_per_scene: int = param(4, "cap per scene and type (0: no cap)",
                               f"{REVSI_CODE}: obj_rel_dir_qa.py --max_samples_per_scene")


@dataclass(frozen=True)
class AppearanceRules:
    """``obj_appearance_order``: the order in which 4 labels first appear in the video (first
    frame in which any instance is seen, from the visibility table)."""

    num_categories: int = param(4, "labels per question", f"{VSIBENCH} template (4 categories)")
    min_gap_s: float = param(1.0, "every two first appearances at least this many seconds apart",
                             f"{VLM3R}: get_spatial_temporal_appearance_order_qa.py SAVE_MARGIN (VSI-Bench's generator "
                             "is unreleased; ReVSI has no appearance order)")
    num_options: int = param(4, "options (orders) per question", f"{VSIBENCH} (4 options)")
    exclude_labels: tuple[str, ...] = param(_COUNT_EXCLUDE, "labels never used", f"{VISTEST} (counting's list)")
    max_per_scene: int = param(4, "cap per scene (0: no cap)", f"{VISTEST} (ReVSI's cap on relative direction; "
                                                               "VLM-3R: 6)")


@dataclass(frozen=True)
class RouteRules:
    """``route_planning``: the turns of the shortest walk from beside A (facing B) to beside G over
    the free floor (vistest.generate.route). Neither VSI-Bench nor ReVSI released a route
    generator (their routes are annotated by hand): the values are vistest's, the 35 degree
    margin ReVSI's direction margin."""

    cell_m: float = param(0.1, "floor grid cell size (metres)", VISTEST)
    clearance_m: float = param(0.2, "the walker's radius: cells this close to a blocking footprint or a wall "
                                     "are not free (metres)", VISTEST)
    obstacle_max_bottom_m: float = param(0.5, "a box blocks the floor when its bottom is at most this above the "
                                              "lowest box bottom (metres)", VISTEST)
    obstacle_min_top_m: float = param(0.1, "... and its top at least this above it (a rug does not block; metres)",
                                      VISTEST)
    max_straight_deg: float = param(10.0, "a heading change of at most this is no turn (degrees)", VISTEST)
    back_turn_deg: float = param(135.0, "a turn of at least this is 'turn back' (degrees)",
                                 f"{REVSI_CODE}: obj_rel_dir_qa.py QUESTION_TEMPLATE_BY_LEVEL ('at least 135 degrees')")
    min_angle_from_boundary_deg: float = param(35.0, "every turn at least this far from 0 and +-back_turn_deg, "
                                                     "else the route is not asked (degrees)",
                                               f"{REVSI_CODE}: obj_rel_dir_qa.py MIN_ANGLE_FROM_BOUNDARY")
    landmark_max_distance_m: float = param(0.6, "a turning point is named by an object whose footprint is at most "
                                                "this far (metres)", VISTEST)
    landmark_margin_m: float = param(0.3, "... and every other object's footprint at least this farther (metres)",
                                     VISTEST)
    min_turns: int = param(2, "routes with fewer left/right turns are not asked (4 options need 2)", VISTEST)
    max_turns: int = param(4, "routes with more turns are not asked", VISTEST)
    num_options: int = param(4, "options per question", f"{VSIBENCH}: route_planning rows (A-D)")
    exclude_labels: tuple[str, ...] = param((), "labels never used as start, facing, goal or landmark", VISTEST)
    max_per_scene: int = param(4, "cap per scene (0: no cap)", f"{VISTEST} (as relative direction)")


@dataclass(frozen=True)
class RoomSizeRules:
    """``room_size_estimation_single`` / ``_multiple``: the floor area in m^2 of the scene's
    ``room`` (``room.area_type``: ``single_room`` -> single, else multiple)."""

    decimals: int = param(1, "decimals of the answer (square metres)", f"{REVSI_CODE}: room_size_qa.py gt '{{:.1f}}'")


_MC = f"{VLM3R}: src/utils/common_utils.py generate_multiple_choice"


@dataclass(frozen=True)
class NumericMcqRules:
    """``*_mcq``: a numeric question (size, distance, room area) asked with numeric options.

    The options are a geometric ladder ``answer * step_ratio ** (i - r)``, ``i = 0..k-1``, with
    the answer at rank ``r`` (balanced over the set): every option is ``step_ratio`` times the
    next smaller one, and all lie within ``[min_ratio, max_ratio]`` times the answer."""

    num_options: int = param(4, "options per question", f"{_MC}: 3 distractors")
    step_ratio: float = param(1.2, "each option is this times the next smaller one (20% apart)",
                              f"{_MC}: margin=0.20 (taken relative to the smaller value; docs/generate.md)")
    min_ratio: float = param(0.25, "no option below this times the answer", f"{_MC}: lower_bound=0.25")
    max_ratio: float = param(1.75, "no option above this times the answer", f"{_MC}: upper_bound=1.75")
    significant_digits: int = param(3, "significant digits of the option values", VISTEST)


_STI = "STI-Bench (MINT-SJTU/STI-Bench qa.parquet: five options per question)"
MIN_WINDOW_STEP_S = 0.001  # seconds: the finest grid whose times the questions write exactly (3 decimals)


@dataclass(frozen=True)
class MotionRules:
    """The dynamic types (``motion_*``, vistest.generate.motion): what a tracked object does over
    a time window (vistest.motion: displacement, path length, STI-Bench's speed, signed acceleration,
    heading relative to the camera at the window's start), or at an instant (the speed over the
    centred second). Windows start and end on a grid of
    ``window_step_s``; the object must be seen (``frames.truth.seen_threshold``) at the first and the last
    frame of the window and the answer is computed over the window's frames where it is seen.

    Numeric types get ``num_options`` options on a geometric ladder ``answer * step_ratio ** (i -
    r)`` with the answer's rank ``r`` drawn first (balanced over the set) and every option of the
    answer's sign (acceleration: a ladder of magnitudes, mirrored below zero): no option is 0
    or crosses zero, whatever the answer's size (docs/generate.md "Dynamic questions")."""

    window_step_s: float = param(0.5, "windows start and end on multiples of this (seconds; the text shows them "
                                      "with one decimal)", f"{VISTEST} (STI-Bench's windows are given to 0.1 s)")
    min_window_s: float = param(1.0, "shortest window (seconds)", VISTEST)
    max_window_s: float = param(8.0, "longest window (seconds; 0: the whole video)", VISTEST)
    min_seen_share: float = param(0.5, "the object seen in at least this share of the window's frames (what the "
                                       "answer is computed from must be mostly in view)", VISTEST)
    min_displacement_m: float = param(0.3, "the object (the camera) moves at least this far in the window "
                                           "(metres): its displacement (displacement, direction, speed), its path "
                                           "length (path length, acceleration); below, a still object and a moving "
                                           "one look alike",
                                      VISTEST)
    min_speed_mps: float = param(0.05, "speed, instant speed: at least this (m/s)", VISTEST)
    min_acceleration_mps2: float = param(0.1, "acceleration: the magnitude of the mean acceleration at least this "
                                              "(m/s^2): speeding up and slowing down are told apart", VISTEST)
    min_speed_change_mps: float = param(0.1, "acceleration: the speeds at the window's two ends differ by at least "
                                             "this (m/s)", VISTEST)
    min_heading_margin_deg: float = param(
        20.0, "direction: the displacement at least this far (degrees) from the boundary of its 90-degree sector "
              "(45: on the camera's axis); ReVSI's 35 (for quadrants) would leave only +-10 degrees about each axis",
        f"{VISTEST} (VLM-3R's direction margin is 10, ReVSI's 35)")
    min_turn_deg: float = param(15.0, "camera orientation change: at least this in magnitude, and at most 180 minus "
                                      "this (degrees; near +-180 the wrapped sign is ambiguous)", VISTEST)
    num_options: int = param(5, "options of a numeric type (the direction type offers the four headings)", _STI)
    step_ratio: float = param(1.2, "each numeric option is this times the next smaller one in magnitude",
                              f"{_MC}: margin=0.20, as numeric_mcq.step_ratio")
    significant_digits: int = param(3, "significant digits of the smallest option (in magnitude); every option of "
                                       "a question has its decimals (equal lengths: the answer-length attack)",
                                    VISTEST)
    max_per_scene: int = param(4, "cap per scene and type (0: no cap)", f"{VISTEST} (as relative direction)")

    def ladder(self) -> NumericMcqRules:
        """The numeric-option rules of the numeric motion types (vistest.generate.balance.numeric_options)."""
        span = self.step_ratio ** (self.num_options - 1)
        return NumericMcqRules(self.num_options, self.step_ratio, 1.0 / span, span, self.significant_digits)


@dataclass(frozen=True)
class BalanceRules:
    """Debiasing over the whole set of generated questions (all scenes together): balanced draws by
    construction, then Iterative Bias Pruning within a removal budget (vistest.generate.balance)."""

    max_count_share: float = param(0.20, "no counting answer above this share of its type's questions",
                                   "VSI-Bench-Debiased: debias_vsi_clean.py filter_object_counting_dynamic_pct "
                                   "max_pct_threshold=0.20 (vision-x-nyu/test-set-training)")
    letter_tolerance: float = param(0.03, "each correct letter within 1/k +- this per type (reported; the "
                                          "assignment is balanced per fold of scenes, a fold's extra places to the "
                                          "letters used least)", "issue #23 (letters uniform +-3 points)")
    direction_answer_tolerance: float = param(0.02, "each direction word (left, back-right ...) at most 1/k + "
                                                    "this of its type's answers (an answer prior within the "
                                                    "3-point margin)", "vistest (issue #23)")
    stratify: bool = param(True, "the per-scene caps draw stratified: each place goes to the answer class (a "
                                 "direction word, a count, a number's side of its world prior) the set holds "
                                 "fewest of so far (False: at random)",
                           "vistest (issue #34: balance by construction; ReVSI's obj_rel_dir_qa.py "
                           "_process_one_scene takes the first max_samples_per_scene triples that pass, in random "
                           "order, and balances no answer)")
    removal_budget: float = param(0.5, "Iterative Bias Pruning removes at most this share of each type's questions "
                                       "(0: no pruning)",
                                  "VSI-Bench-Debiased v1 removed 54% of VSI-Bench (2,768 of 5,130) (issue #34)")
    stop_score: float = param(0.25, "IBP stops removing from a type when its highest bias score (the attacks' mean "
                                    "held-out score of the gold answer minus chance) is below this",
                              "TsT docs/ibp.md --early_stop (vision-x-nyu/test-set-training); vistest value")
    min_per_type: int = param(10, "IBP never leaves a type with fewer questions than this, nor do the per-scene "
                                  "caps (they draw past the cap up to it when a type's answerable questions sit in "
                                  "a few rooms) nor the answer caps (the draw goes on, then the cap is raised to "
                                  "it when the rooms' rarest answer is too rare)",
                              "TsT docs/ibp.md: VSI-Bench's minimum per question type (10)")
    min_per_large_type: int = param(20, "the same floor for a type of at least large_type answerable questions",
                                    "issue #43 (a type with >= 100 answerable keeps >= 20)")
    large_type: int = param(100, "answerable questions from which a type's floor is min_per_large_type",
                            "issue #43")
    ibp_rounds: int = param(8, "IBP iterations: each removes at most 1/ibp_rounds of a type's budget, then the "
                               "attacks are refitted on what is left", "TsT docs/ibp.md (batch = budget / iterations)")
    blind_margin: float = param(0.05, "the report's target: every blind attack, held out by scene, at most this "
                                      "above chance on every judged type (and every complement not-X)",
                                "issue #34 (chance + 5 points: one fold split moves a 40-question cell by ~5)")
    min_judged: int = param(20, "the report judges a type's blind attacks from this many questions on (smaller "
                                "types pooled per attack, the pool judged from this size on)",
                            "issue #43 (every type of 20 or more on its own: pooled with larger types, counting's "
                            "+38.7 on 16 questions went unseen; issue #34 had 40)")
    pool_stratify: bool = param(True, "the random pool per scene and type (pool_per_scene) is drawn stratified by "
                                      "answer class, as the per-scene caps (a rare direction word of a room reaches "
                                      "the caps' draw; False: uniform)", "vistest (issue #43)")
    judge_fold_seeds: int = param(3, "the report judges every blind attack on this many fold seeds (seed, seed + 1 "
                                     "...; the generation's --seed first) and a cell on its mean gap over them; the "
                                     "pruning scores on other fold seeds", "vistest (issue #23)")
    null_permutations: int = param(10, "the report judges a complement not-X against its held-out chance: its mean "
                                       "gap over this many answer keys re-drawn within the type's balances (letters, "
                                       "option items, length and value ranks), per fold seed (holding out alone "
                                       "puts the most frequent answer 10-17 points below chance on a balanced set; "
                                       "vistest.eval.attacks.held_out_chance); 0: against 1/k",
                                   "Ojala & Garriga, Permutation tests for studying classifier performance, JMLR 11 "
                                   "(2010), test 1, restricted to the design as in Morgan & Rubin, Rerandomization, "
                                   "Ann. Stat. 40 (2012); vistest (issue #23)")
    pool_per_scene: int = param(40, "candidates kept per scene and type before the budget check, drawn at random "
                                    "(bounds the work on scenes with thousands of object triples; 0: all)", VISTEST)


TRUTH_SOURCE = "the budget stage's default (vistest.budget.config.TruthConfig; docs/truth.md)"
# the sources of the generator's budget-stage settings that are not the stage's own defaults
TRUTH_SOURCES = {"budgets": f"{ISSUE} (['all']: the answer holds for the whole video)",
                 "seen_threshold": f"{TRUTH_SOURCE}: ReVSI's 5% of the image"}


@dataclass(frozen=True)
class FrameRules:
    """What the video shows: the visibility table and the budget stage decide answerability, with the
    budget stage's own settings (``truth``, a vistest.budget.config.TruthConfig, whole)."""

    truth: TruthConfig = param(TruthConfig(budgets=(ALL,)),
                               "the budget stage's settings (docs/truth.md), each its own parameter "
                               "frames.truth.FIELD: its seen rule decides first appearances and what is seen; a "
                               "question is kept only when the stage keeps its answer at every one of its budgets "
                               "(with its profile, options, minimum budget of room size and instant tolerance)",
                               TRUTH_SOURCE)
    report_budgets: tuple[str, ...] = param(("16", "32", "64", "all"), "budgets of the answerability report",
                                            f"{REVSI_PAPER} (16/32/64/all)")

    @property
    def seen(self) -> SeenRule:
        """The seen rule of the budget stage's settings (validated)."""
        return seen_rule(self.truth.seen_threshold, where="--rule: frames.truth.seen_threshold")


_VLM3R_SUB = f"{VLM3R}: base_qa_generator.py --num_subsample (default 6 questions per scene and type)"
# The ``vlm3r`` preset: every value that differs from ReVSI's code, with its source in
# vlm_3r_data_process/src/tasks/vsibench/ (and src/tasks/base_qa_generator.py) of VLM-3R.
VLM3R_PRESET: dict[str, tuple[Any, str]] = {
    "counting.exclude_labels": ((), f"{VLM3R}: get_obj_count_qa.py (no exclusion list)"),
    "counting.challenging_labels": ((), f"{VLM3R}: get_obj_count_qa.py (every label needs count > 1)"),
    "counting.challenging_keep_probability": ((), f"{VLM3R}: get_obj_count_qa.py (no subsampling)"),
    "counting.challenging_pair_keep_probability": (1.0, f"{VLM3R}: no two-label counting type (no subsampling)"),
    "counting.max_single_per_scene": (6, _VLM3R_SUB),
    "size.exclude_labels": ((), f"{VLM3R}: get_obj_size_qa.py (every single-instance label)"),
    "size.subsample": ((), f"{VLM3R}: get_obj_size_qa.py (no subsampling)"),
    "size.max_per_scene": (6, _VLM3R_SUB),
    "abs_distance.min_distance_m": (0.15, f"{VLM3R}: get_obj_abs_distance_qa.py (round(d, 1) < 0.2 skipped: d < 0.15)"),
    "abs_distance.exclude_labels": ((), f"{VLM3R}: get_obj_abs_distance_qa.py (no exclusion list)"),
    "abs_distance.skip_probability": ((), f"{VLM3R}: get_obj_abs_distance_qa.py (no subsampling)"),
    "abs_distance.max_per_scene": (6, _VLM3R_SUB),
    "rel_distance.min_option_distance_m": (0.15, f"{VLM3R}: get_obj_rel_distance_v1_qa.py get_gt "
                                                 "distance_to_object_threshold"),
    "rel_distance.min_option_gap_m": (0.15, f"{VLM3R}: get_obj_rel_distance_v1_qa.py ambiguous() threshold "
                                            "(every pair of options)"),
    "rel_distance.exclude_labels": ((), f"{VLM3R}: get_obj_rel_distance_v1_qa.py (no exclusion list)"),
    "rel_distance.max_closest_per_scene": (6, _VLM3R_SUB),
    "rel_distance.max_farthest_per_scene": (6, _VLM3R_SUB + " (VLM-3R has no farthest type)"),
    "rel_direction.max_object_xy_extent_m": (0.0, f"{VLM3R}: get_obj_rel_direction_v1_qa.py (no extent limit)"),
    "rel_direction.min_separation_m": (0.3, f"{VLM3R}: get_obj_rel_direction_v1_qa.py ambiguous() min_dist"),
    "rel_direction.min_floor_separation_m": (0.0, f"{VLM3R}: get_obj_rel_direction_v1_qa.py (no floor-plane check)"),
    "rel_direction.max_separation_m": (5.0, f"{VLM3R}: get_obj_rel_direction_v1_qa.py ambiguous() max_dist"),
    "rel_direction.min_angle_from_boundary_deg": (10.0, f"{VLM3R}: get_obj_rel_direction_v2_qa.py get_gt "
                                                        "ambiguity_threshold (v1 checks only each quadrant's upper "
                                                        "boundary; applied to every boundary here)"),
    "rel_direction.max_per_scene": (6, _VLM3R_SUB),
    "appearance.max_per_scene": (6, f"{VLM3R}: get_spatial_temporal_appearance_order_qa.py num_subsample"),
}
PRESETS = ("revsi", "vlm3r")


@dataclass(frozen=True)
class Rules:
    """Every rule set, by family name (the ``family`` of ``family.param=value`` overrides), and
    the preset the values started from (``revsi``: the dataclass defaults; ``vlm3r``)."""

    counting: CountingRules = CountingRules()
    size: SizeRules = SizeRules()
    abs_distance: AbsDistanceRules = AbsDistanceRules()
    rel_distance: RelDistanceRules = RelDistanceRules()
    rel_direction: RelDirectionRules = RelDirectionRules()
    appearance: AppearanceRules = AppearanceRules()
    route: RouteRules = RouteRules()
    room_size: RoomSizeRules = RoomSizeRules()
    numeric_mcq: NumericMcqRules = NumericMcqRules()
    motion: MotionRules = MotionRules()
    balance: BalanceRules = BalanceRules()
    frames: FrameRules = FrameRules()
    preset: str = "revsi"

    @classmethod
    def preset_named(cls, name: str) -> "Rules":
        """The rules of a preset: ``revsi`` (ReVSI's code, the default) or ``vlm3r``
        (:data:`VLM3R_PRESET`). Raises InputError naming the expected presets."""
        name = name.strip()
        if name == "revsi":
            return cls()
        if name == "vlm3r":
            items = [f"{k}={json.dumps(_jsonable(v))}" for k, (v, _) in VLM3R_PRESET.items()]
            return dataclasses.replace(cls().with_overrides(items, source="vlm3r preset"), preset="vlm3r")
        raise InputError(f"--rules: expected one of {', '.join(PRESETS)}, got {name!r}")

    def with_overrides(self, items: tuple[str, ...] | list[str], source: str = "--rule") -> "Rules":
        """A copy with ``family.param=value`` overrides applied (value: JSON, else a string); the budget
        stage's settings as ``frames.truth.FIELD=value`` (:func:`_truth_value`). Raises InputError naming
        the override and what was expected."""
        rules = self
        for item in items:
            key, sep, raw = item.partition("=")
            family, dot, name = key.strip().partition(".")
            if not sep or not dot:
                raise InputError(f"{source}: expected FAMILY.PARAM=VALUE, got {item!r}")
            sets = {f.name: getattr(rules, f.name) for f in _families()}
            if family not in sets:
                raise InputError(f"{source}: {key}: unknown rule family {family!r}; expected one of "
                                 f"{', '.join(sets)}")
            group = sets[family]
            known = {f.name: f for f in fields(group)}
            name, _, sub = name.partition(".")
            if name not in known:
                raise InputError(f"{source}: {key}: unknown parameter {name!r}; {family} takes "
                                 f"{', '.join(known)}")
            try:
                value = json.loads(raw)
            except json.JSONDecodeError:
                value = raw
            current = getattr(group, name)
            if isinstance(current, TruthConfig):
                if not sub:
                    raise InputError(f"{source}: {key}: expected {key}.FIELD=VALUE, FIELD one of "
                                     f"{', '.join(f.name for f in fields(current))}")
                value = dataclasses.replace(current, **{sub: _truth_value(current, sub, value, f"{source}: {key}")})
            elif sub:
                raise InputError(f"{source}: {key}: unknown parameter {name}.{sub!r}; {family} takes "
                                 f"{', '.join(known)}")
            else:
                value = _coerce(value, current, f"{source}: {key}")
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
        mo = self.motion
        if mo.num_options < 2 or mo.step_ratio <= 1.0 or mo.window_step_s <= 0 or mo.min_window_s < 0:
            raise InputError("--rule: motion: expected num_options >= 2, step_ratio > 1, window_step_s > 0 and "
                             f"min_window_s >= 0, got {mo}")
        if mo.window_step_s < MIN_WINDOW_STEP_S:
            raise InputError(f"--rule: motion.window_step_s: expected at least {MIN_WINDOW_STEP_S} s (the questions "
                             f"write times with at most 3 decimals), got {mo.window_step_s}")
        if mo.max_window_s != 0 and not mo.max_window_s >= mo.min_window_s:
            raise InputError(f"--rule: motion.max_window_s: expected 0 (every length up to the whole video) or "
                             f"seconds >= min_window_s ({mo.min_window_s}), got {mo.max_window_s}")
        if not 0.0 <= mo.min_seen_share <= 1.0 or not 0.0 <= mo.min_heading_margin_deg < 45.0:
            raise InputError("--rule: motion: expected min_seen_share in [0, 1] and min_heading_margin_deg in [0, 45)")
        for name, v in (("appearance.num_categories", self.appearance.num_categories),
                        ("appearance.num_options", self.appearance.num_options),
                        ("rel_distance.num_options", self.rel_distance.num_options)):
            if v < 2:
                raise InputError(f"--rule: {name}: expected at least 2, got {v}")
        rt = self.route
        if rt.cell_m <= 0 or rt.clearance_m < 0 or rt.num_options < 2 or 2 ** rt.min_turns < rt.num_options:
            raise InputError("--rule: route: expected cell_m > 0, clearance_m >= 0 and 2 ** min_turns >= num_options "
                             f"(options vary left/right), got {rt}")
        if math.factorial(self.appearance.num_categories) < self.appearance.num_options:
            raise InputError("--rule: appearance.num_options: more options than orders of the categories")
        try:
            self.frames.truth.checked()
        except InputError as e:
            raise InputError(f"--rule: frames.truth.{e}") from None
        c = self.counting
        if any(len(x) != 2 for x in c.challenging_keep_probability):
            raise InputError("--rule: counting.challenging_keep_probability: expected [[count, probability], ...]")
        probs = [("counting.challenging_keep_probability", p) for _, p in c.challenging_keep_probability]
        probs.append(("counting.challenging_pair_keep_probability", c.challenging_pair_keep_probability))
        for name, p in probs:
            if not 0.0 <= p <= 1.0:
                raise InputError(f"--rule: {name}: expected a probability in [0, 1], got {p}")
        if not 0.0 < self.balance.max_count_share <= 1.0:
            raise InputError("--rule: balance.max_count_share: expected a share in (0, 1]")
        b = self.balance
        for name in ("judge_fold_seeds", "ibp_rounds", "min_judged"):
            if getattr(b, name) < 1:
                raise InputError(f"--rule: balance.{name}: expected at least 1, got {getattr(b, name)}")
        if not 0.0 <= b.removal_budget < 1.0:
            raise InputError(f"--rule: balance.removal_budget: expected a share in [0, 1), got {b.removal_budget}")
        if min(b.min_per_type, b.min_per_large_type, b.large_type, b.pool_per_scene, b.null_permutations) < 0 or not (
                0.0 <= b.blind_margin < 1.0):
            raise InputError("--rule: balance: expected min_per_type, min_per_large_type, large_type, "
                             "pool_per_scene and null_permutations >= 0 and "
                             f"blind_margin in [0, 1), got {b.min_per_type}, {b.pool_per_scene}, "
                             f"{b.null_permutations}, {b.blind_margin}")


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


def _truth_value(config: TruthConfig, name: str, value: Any, where: str) -> Any:
    """The value of the budget stage's setting ``name`` (a TruthConfig field) that an override's JSON
    ``value`` gives: budgets from a list (``["all", 32]``), profile options from an object, the seen
    rule from a number (ReVSI's image share), a kind ``"KIND[@ARRAY]"`` (its default threshold) or an
    object ``{"kind", "threshold", "array"}`` (what :func:`rule_table` writes); any other field as
    its default's type (checked with the others by :meth:`TruthConfig.checked`)."""
    known = [f.name for f in fields(config)]
    if name not in known:
        raise InputError(f"{where}: unknown budget-stage setting {name!r}; frames.truth takes {', '.join(known)}")
    if name == "budgets":
        if not isinstance(value, list):
            raise InputError(f"{where}: expected a list of budgets like [\"all\", 32], got {value!r}")
        return tuple(parse_budget(v, where) for v in value)
    if name == "profile_options":
        if not isinstance(value, dict):
            raise InputError(f"{where}: expected an object of options like {{\"sample_fps\": 1}}, got {value!r}")
        return value
    if name == "seen_threshold":
        if isinstance(value, str):
            return seen_rule(None, value, where).compact()
        if isinstance(value, dict):
            if set(value) - {"kind", "threshold", "array", "text"} or "kind" not in value:
                raise InputError(f"{where}: expected {{\"kind\": one of {', '.join(SEEN_KINDS)}, \"threshold\": "
                                 f"NUMBER, \"array\": ARRAY}}, got {value!r}")
            rule = value["kind"] + (f"@{value['array']}" if value.get("array") else "")
            return seen_rule(value.get("threshold"), rule, where).compact()
        return seen_rule(value, None, where).compact()
    return _coerce(value, getattr(config, name), where)


def _truth_json(config: TruthConfig, name: str) -> Any:
    """A budget-stage setting as the JSON an override takes back (:func:`_truth_value`)."""
    value = getattr(config, name)
    if name == "budgets":
        return [b if isinstance(b, str) else int(b) for b in value]
    if isinstance(value, SeenRule):
        return {"kind": value.kind, "threshold": value.threshold, "array": value.array}
    return dict(value) if name == "profile_options" else value


def _jsonable(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return v


def _families():
    """The rule families of :class:`Rules` (its fields but ``preset``)."""
    return [f for f in fields(Rules) if f.name != "preset"]


def rule_table(rules: Rules | None = None) -> list[tuple[str, str, str, str]]:
    """(``family.param``, value as JSON, doc, source) for every parameter, in declaration order:
    the defaults (the ``revsi`` preset), or the values of ``rules`` with the sources of its preset."""
    out = []
    for fam in _families():
        group = getattr(rules, fam.name) if rules is not None else fam.default
        for f in fields(group):
            value = getattr(group, f.name)
            if isinstance(value, TruthConfig):  # the budget stage's settings: a row each (docs/truth.md)
                out += [(f"{fam.name}.{f.name}.{g.name}", json.dumps(_truth_json(value, g.name)), g.metadata["doc"],
                         TRUTH_SOURCES.get(g.name, TRUTH_SOURCE)) for g in fields(value)]
                continue
            key = f"{fam.name}.{f.name}"
            source = f.metadata["source"]
            if rules is not None and rules.preset == "vlm3r" and key in VLM3R_PRESET:
                source = VLM3R_PRESET[key][1]
            out.append((key, json.dumps(_jsonable(getattr(group, f.name))), f.metadata["doc"], source))
    return out
