"""The generator's parts: rules and their documentation, the balancing steps, the blind-baseline
adapter against vistest.eval, the new question types, and generated questions through the
budget stage, a blind baseline and vistest score."""
from __future__ import annotations

import dataclasses
import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from vistest.budget.config import TruthConfig
from vistest.budget.seen import SeenRule
from vistest.budget.truth import budget_truth, write_budget_files
from vistest.cli import main
from vistest.synthetic import random_room_scene
from vistest.errors import InputError
from vistest.eval.baselines import IN_SAMPLE, SIZE_PRIOR, blind_predictions, holdout_folds
from vistest.answers import mean_relative_accuracy
from vistest.generate import GENERATED_TYPES, Rules, SceneInput, generate, parse_types
from vistest.eval import attacks
from vistest.generate import blind
from vistest.generate.balance import cap_shares, numeric_options, unit_positions
from vistest.generate.candidates import Candidate, significant
from vistest.generate.rules import rule_table
from vistest.questions import QUESTION_TYPES, parse_questions
from vistest.visibility.table import compute_visibility

DOCS = Path(__file__).resolve().parents[1] / "docs" / "generate.md"


def test_every_rule_is_documented_with_its_source():
    text = DOCS.read_text()
    rows = rule_table()
    assert len(rows) > 40
    truth_doc = (DOCS.parent / "truth.md").read_text()
    for name, default, doc, source in rows:
        assert doc and source, name
        if name.startswith("frames.truth."):  # the budget stage's settings: docs/truth.md lists them once
            assert f"`{name.rpartition('.')[2]}`" in truth_doc, f"docs/truth.md does not list {name}"
        else:
            assert f"`{name}`" in text, f"docs/generate.md does not list {name}"
    assert "`frames.truth.FIELD`" in text
    for t in parse_types("all") + parse_types("vsibench"):
        assert f"`{t}`" in text and t in QUESTION_TYPES


def test_rule_overrides_are_typed_and_checked():
    r = Rules().with_overrides(["abs_distance.min_distance_m=0.2", "size.exclude_labels=[\"toilet\"]",
                                "rel_direction.max_corners_in_other_region=0", "counting.max_multiple_per_scene=5",
                                "frames.truth.budgets=[\"all\", 32]", "frames.truth.seen_threshold=\"silhouette\"",
                                "frames.truth.instant_tolerance_s=0.25",
                                "frames.truth.profile=llava-vid", "frames.truth.profile_options={\"sample_fps\": 2}"])
    assert r.abs_distance.min_distance_m == 0.2 and r.size.exclude_labels == ("toilet",)
    assert r.rel_direction.max_corners_in_other_region == 0 and r.counting.max_multiple_per_scene == 5
    assert r.frames.truth.budgets == ("all", 32) and r.frames.truth.instant_tolerance_s == 0.25
    assert r.frames.seen == SeenRule("silhouette") and r.frames.truth.profile_options == {"sample_fps": 2}
    assert Rules().with_overrides(["frames.truth.seen_threshold={\"kind\": \"pixels\", \"threshold\": 500}"]
                                  ).frames.seen == SeenRule("pixels", 500.0)
    for bad, msg in (("numeric_mcq.step_ratio=1.5", "spans"), ("counting.max_multiple_per_scene=1.5", "like 3"),
                     ("size", "FAMILY.PARAM=VALUE"), ("frames.truth.seen_threshold=2", "fraction"),
                     ("frames.truth.min_budget_room_route=0", "frames.truth.min_budget_room_route: expected a"),
                     ("frames.truth.budgets=[16, 16]", "given twice"), ("frames.truth=1", "FIELD=VALUE"),
                     ("frames.truth.speed=1", "unknown budget-stage setting"), ("frames.seen_threshold=0.1", "unknown"),
                     ("counting.challenging_keep_probability=[[1, 1.5]]", "probability"),
                     ("counting.challenging_pair_keep_probability=-0.1", "probability")):
        with pytest.raises(InputError, match=msg):
            Rules().with_overrides([bad])
    assert parse_types("revsi")[0] == "object_counting_single" and "obj_appearance_order" in parse_types("all")
    assert "object_counting" in parse_types("vsibench") and "object_counting_single" not in parse_types("vsibench")
    with pytest.raises(InputError, match="--types"):
        parse_types("object_counting_single,object_rel_direction_easy")  # ReVSI's and VSI-Bench's wording differ
    with pytest.raises(InputError, match="--types"):
        parse_types("object_counting_fuzzy")


def test_presets_reproduce_their_reference_code():
    """The constants of ReVSI's qa_generation/*.py (commit 9299454) and VLM-3R's
    vlm_3r_data_process/src/tasks/vsibench/*.py, as read from the files."""
    r = Rules()
    assert r == Rules.preset_named("revsi") and r.preset == "revsi"
    rd, rl, c = r.rel_direction, r.rel_distance, r.counting
    assert (rd.max_object_xy_extent_m, rd.min_separation_m, rd.min_floor_separation_m,
            rd.min_angle_from_boundary_deg, rd.max_corners_in_other_region) == (1.4, 1.5, 1.5, 35.0, 2)
    assert (rl.min_option_distance_m, rl.min_option_gap_m) == (1.0, 0.3)
    assert dict(c.challenging_keep_probability) == {1: 0.4, 2: 0.05} and c.challenging_pair_keep_probability == 0.3
    assert "chair" in c.challenging_labels and c.min_count_single == 2
    v = Rules.preset_named("vlm3r")
    assert v.preset == "vlm3r" and v.rel_direction.min_angle_from_boundary_deg == 10.0
    assert (v.rel_direction.min_separation_m, v.rel_direction.max_separation_m) == (0.3, 5.0)
    assert (v.rel_distance.min_option_distance_m, v.rel_distance.min_option_gap_m) == (0.15, 0.15)
    assert v.size.exclude_labels == () and v.counting.challenging_labels == ()
    # overrides apply on top of a preset and keep it; the table names the preset's sources
    w = v.with_overrides(["rel_direction.min_angle_from_boundary_deg=20"])
    assert w.preset == "vlm3r" and w.rel_direction.min_angle_from_boundary_deg == 20.0
    sources = {n: src for n, _, _, src in rule_table(v)}
    assert "MIN_ANGLE_FROM_BOUNDARY" in dict((n, src) for n, _, _, src in rule_table())[
        "rel_direction.min_angle_from_boundary_deg"]
    assert sources["rel_direction.min_angle_from_boundary_deg"].startswith("VLM-3R: get_obj_rel_direction")
    with pytest.raises(InputError, match="--rules: expected one of revsi, vlm3r"):
        Rules.preset_named("vsibench")


def _cand(answer: str, i: int) -> Candidate:
    return Candidate("s", "object_counting_single", "{x}", (("x", str(i)),), category=(f"c{i}",),
                     value=float(answer), decimals=0)


def test_answer_caps_keep_the_largest_set_under_the_share():
    counts = {"1": 40, "2": 6, "3": 5, "4": 5, "6": 3}
    cands = [_cand(a, i) for i, (a, n) in enumerate((a, n) for a, n in counts.items() for _ in range(n))]
    cands = [dataclasses.replace(c, fields=(("x", str(i)),)) for i, c in enumerate(cands)]
    kept, note = cap_shares(sorted(cands, key=lambda c: c.key), 0.25, np.random.default_rng(0))
    got = Counter(c.answer_text for c in kept)
    assert max(got.values()) <= 0.25 * len(kept) and not note
    assert len(kept) == 25  # 25 questions: cap floor(0.25 * 25) = 6 -> 6 + 6 + 5 + 5 + 3; 26 would need 7 ones
    few, note = cap_shares([_cand("1", 0), _cand("1", 1), _cand("2", 2)], 0.25, np.random.default_rng(0))
    assert "2 distinct answers" in note and len(few) == 2  # one of each


def test_balanced_positions_and_numeric_ladder():
    pos = unit_positions([0] * 103, 4, np.random.default_rng(1))
    assert sorted(Counter(pos.tolist()).values()) == [25, 26, 26, 26]
    # balanced within each unit (a fold of scenes): 7 = 4 + 3 and 5 = 4 + 1
    units = [0] * 7 + [1] * 5
    pos = unit_positions(units, 4, np.random.default_rng(2))
    for u, n in ((0, 7), (1, 5)):
        got = Counter(int(p) for p, x in zip(pos, units) if x == u)
        assert sum(got.values()) == n and max(got.values()) - min(got.get(i, 0) for i in range(4)) <= 1
    m = Rules().numeric_mcq
    for r in range(4):
        vals = numeric_options(2.0, r, m)
        assert vals[r] == 2.0 and all(math.isclose(b / a, 1.2) for a, b in zip(vals, vals[1:]))
        assert min(vals) >= 0.25 * 2.0 and max(vals) <= 1.75 * 2.0
    assert significant(1.728, 3) == "1.73" and significant(172.8, 3) == "173" and significant(0.5787, 3) == "0.579"


def test_vectorised_mra_equals_the_scoring_stage():
    rng = np.random.default_rng(0)
    pred, gt = rng.uniform(0.1, 10, 40), rng.uniform(0.1, 10, 30)
    m = attacks.mra_matrix(pred, gt)
    ref = np.array([[mean_relative_accuracy(p, g) for p in pred] for g in gt])
    np.testing.assert_array_equal(m, ref)
    assert mean_relative_accuracy(8, 10) == attacks.mra_matrix(np.array([8.0]), np.array([10.0]))[0, 0] == 0.6


def test_new_multiple_choice_types_and_the_size_prior():
    """The numeric-option types are MCQ with the objects rule; the size prior skips them (it used
    to average their letters)."""
    assert QUESTION_TYPES["object_size_estimation_mcq"].answer == "mcq"
    rows = blind.truths([
        {"id": "a", "question_type": "object_size_estimation_mcq", "question": "q", "options": ["A. 10", "B. 12"],
         "ground_truth": "B", "object_label": "chair"},
        {"id": "b", "question_type": "object_size_estimation_mcq", "question": "q", "options": ["A. 10", "B. 12"],
         "ground_truth": "A", "object_label": "chair"},
        {"id": "c", "question_type": "object_size_estimation", "question": "q", "ground_truth": "80",
         "object_label": "chair"},
        {"id": "d", "question_type": "object_size_estimation", "question": "q", "ground_truth": "100",
         "object_label": "chair"}])
    # in sample (--holdout in-sample)
    preds = {p.id: p.prediction for p in blind_predictions(rows, SIZE_PRIOR, holdout_folds(rows, IN_SAMPLE))}
    assert preds == {"a": "A", "b": "A", "c": "100", "d": "80"}  # MCQ: the modal letter; size: the other chair
    assert list(blind.chance_scores(rows[:2])) == [0.5, 0.5]


@pytest.fixture(scope="module")
def room():
    scene = random_room_scene(5, num_frames=100)
    return SceneInput(scene, compute_visibility(scene))


def test_generated_questions_through_budget_baseline_and_score(tmp_path, room):
    # the report's attacks on one fold seed, complements against 1/k: only its answerability is read here
    gen = generate([room], GENERATED_TYPES, Rules().with_overrides(["balance.judge_fold_seeds=1",
                                                                    "balance.null_permutations=0"]), seed=0)
    recs = gen.questions[room.scene.scene_id]
    assert len({r["question_type"] for r in recs}) >= 8
    qs = parse_questions([json.dumps(r) for r in recs], scene=room.scene)
    bt = budget_truth(room.scene, room.visibility, qs, TruthConfig(budgets=[16, 32, "all"]))
    write_budget_files(bt, tmp_path / "gt")
    run = CliRunner().invoke(main, ["baseline", "-r", str(tmp_path / "gt"), "-o", str(tmp_path / "b.jsonl")])
    assert run.exit_code == 0, run.output
    run = CliRunner().invoke(main, ["score", str(tmp_path / "b.jsonl"), "-r", str(tmp_path / "gt"), "--protocol",
                                    "revsi", "-o", str(tmp_path / "score"), "--quiet"])
    assert run.exit_code == 0, run.output
    report = json.loads((tmp_path / "score" / "report.json").read_text())
    scored = {c["question_type"] for c in report["scores"] if c["model"] == "predictions" and c["n"]}
    assert scored == {r["question_type"] for r in recs}
    assert report["rank_attack"]["n_numeric_options"] > 0  # the numeric options reach the rank attack
    # the report's answerability is the budget stage's
    ans = {(a.budget, a.question_type): a for a in gen.report.answerability}
    for b in ("16", "32", "all"):
        kept = sum(1 for it in bt.items if str(it.selection.budget) == b and it.status == "kept")
        assert ans[(b, "all types")].kept == kept
