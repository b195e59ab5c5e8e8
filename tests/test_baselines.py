"""Blind baselines: most-frequent answer, category-mean size prior, and the option-rank attack
on constructed option sets whose leak is known."""
from __future__ import annotations

import numpy as np
import pytest

from vistest.eval.answers import PROTOCOLS
from vistest.eval.baselines import (
    IN_SAMPLE,
    MOST_FREQUENT,
    SIZE_PRIOR,
    binomial_tail,
    blind_predictions,
    format_number,
    held_out_accuracies,
    holdout_folds,
    modal_answer,
    option_rank,
    predictions_jsonl,
    rank_attack,
)
from vistest.eval.metrics import match_predictions, score_cells
from vistest.eval.records import parse_plain_predictions, truth_from_record

REVSI = PROTOCOLS["revsi"]


def in_sample(rows, model=MOST_FREQUENT):
    """The blind model fitted on the very rows it answers (--holdout in-sample)."""
    return blind_predictions(rows, model, holdout_folds(rows, IN_SAMPLE))


def truth(qid, qtype, gt, budget=16, status="kept", options=None, variant="budget", **extra):
    doc = {"id": qid, "question_type": qtype, "question": extra.pop("question", "?"), "ground_truth": gt,
           "num_frames": budget, "status": status, "options": options, "variant": variant, **extra}
    return truth_from_record(doc, "t.jsonl", 1)


def numeric_mcq(rng, n, rank_of_answer, k=4, qtype="object_rel_distance_closest", group="", budget=16):
    """``n`` MCQ rows with ``k`` distinct random numeric options in random letter order; the
    keyed option is the one of rank ``rank_of_answer(i)`` (0 = smallest)."""
    rows = []
    for i in range(n):
        values = rng.choice(np.arange(1, 1000), size=k, replace=False) / 10.0
        letters = "ABCDE"[:k]
        order = rng.permutation(k)  # letter j shows value order[j]
        options = [f"{letters[j]}. {values[order[j]]:g} m" for j in range(k)]
        keyed_value = np.sort(values)[rank_of_answer(i)]
        gt = letters[[values[order[j]] for j in range(k)].index(keyed_value)]
        rows.append(truth(f"{group}{qtype}{i}", qtype, gt, budget=budget, options=options, dataset=group or None))
    return rows


# ---------------------------------------------------------------------------------------
# option-rank attack
# ---------------------------------------------------------------------------------------
def test_option_rank():
    opts = ["A. 3.5", "B. 1.0 m", "C. 2", "D. 10"]
    assert option_rank(opts, "C") == (1, 4)   # sorted: B 1.0, C 2, A 3.5, D 10
    assert option_rank(opts, "d") == (3, 4)
    assert option_rank(["A. 2", "B. 2", "C. 1"], "B") == (2, 3)  # ties keep option order
    assert option_rank(["A. left", "B. 2"], "A") is None
    assert option_rank(["1", "2"], "A") is None  # unlettered
    assert option_rank(opts, "E") is None


def test_leak_second_largest_is_found_in_sample_and_held_out():
    rng = np.random.default_rng(1)
    rows = numeric_mcq(rng, 60, lambda i: 2)  # always the 2nd-largest of 4
    ra = rank_attack(rows, splits=50, seed=3)
    [cell] = ra.cells
    assert cell.hits == (0, 0, 60, 0) and cell.best_rank == 2 and cell.best_accuracy == 1.0
    assert cell.chance == 0.25 and cell.p_value == pytest.approx(0.25 ** 60)
    [held] = ra.held_out
    assert held.mean == 1.0 and held.std == 0.0 and held.n == 60
    assert ra.n_mcq == ra.n_numeric == 60


def test_random_placement_is_chance_held_out():
    rng = np.random.default_rng(2)
    ranks = rng.integers(0, 4, size=2000)
    rows = numeric_mcq(rng, 2000, lambda i: int(ranks[i]))
    ra = rank_attack(rows, splits=40, seed=0)
    [cell] = ra.cells
    assert sum(cell.hits) == 2000 and cell.best_accuracy >= 0.25
    assert ra.held_out[0].mean == pytest.approx(0.25, abs=0.03)
    assert cell.p_bonferroni > 0.001  # no leak to report


def test_held_out_learns_the_rank_per_cell():
    # cell a: always the smallest, cell b: always the largest; one global rank would score 50%
    rng = np.random.default_rng(4)
    rows = (numeric_mcq(rng, 40, lambda i: 0, group="a") + numeric_mcq(rng, 40, lambda i: 3, group="b"))
    ra = rank_attack(rows, splits=20, seed=1)
    assert [(c.group, c.best_rank) for c in ra.cells] == [("a", 0), ("b", 3)]
    assert ra.held_out[0].mean == 1.0


def test_held_out_is_seeded_and_falls_back_to_pooled_rank():
    cells = {("x",): np.array([1, 1, 1, 1]), ("y",): np.array([1])}  # y has no training row
    acc = held_out_accuracies(cells, k=3, splits=10, seed=7)
    assert np.all(acc == 1.0)
    rnd = {("z",): np.random.default_rng(0).integers(0, 4, 101)}
    assert np.array_equal(held_out_accuracies(rnd, 4, 25, 5), held_out_accuracies(rnd, 4, 25, 5))


def test_binomial_tail_matches_the_resti_audit():
    # Waymo Speed & Acceleration: smallest option keyed on 43 of 92 five-way questions
    p = binomial_tail(43, 92, 0.2)
    assert p == pytest.approx(7.3e-9, rel=0.02)
    assert p * 66 == pytest.approx(4.8e-7, rel=0.02)  # Bonferroni over the 66 tests
    assert binomial_tail(0, 10, 0.3) == 1.0 and binomial_tail(11, 10, 0.3) == 0.0
    assert binomial_tail(3, 3, 0.5) == pytest.approx(0.125)


def test_rank_attack_skips_textual_options():
    rows = [truth("q1", "object_rel_direction_forward_easy", "A", options=["A. left", "B. right"])]
    ra = rank_attack(rows)
    assert (ra.n_mcq, ra.n_numeric, ra.cells, ra.held_out) == (1, 0, (), ())
    assert ra.tables()[0].rows == ()


# ---------------------------------------------------------------------------------------
# most-frequent and size prior
# ---------------------------------------------------------------------------------------
def test_always_two_counting_scores_like_vsibench():
    counts = ["2", "2", "2", "3", "1"]
    rows = [truth(f"c{i}", "object_counting_single", g) for i, g in enumerate(counts)]
    assert modal_answer(rows) == "2"
    preds = in_sample(rows)
    assert {p.prediction for p in preds} == {"2"}
    [cell] = score_cells(MOST_FREQUENT, match_predictions(REVSI, rows, preds).rows, rows)
    # gt 2: 1.0 (x3); gt 3: |2-3|/3 -> 0.4; gt 1: |2-1|/1 = 1 -> 0
    assert cell.score == pytest.approx((3 * 1.0 + 0.4 + 0.0) / 5)


def test_modal_answer_ties_median_and_fallbacks():
    mcq = [truth(f"m{i}", "route_planning", g, options=["A. x", "B. y", "C. z"]) for i, g in enumerate("CBBC")]
    assert modal_answer(mcq) == "B"  # tie B/C: the smaller letter
    assert modal_answer([truth(f"c{i}", "object_counting_single", g) for i, g in enumerate([3, 1, 3, 1])]) == "1"
    dist = [truth(f"d{i}", "object_abs_distance", g) for i, g in enumerate(["1.5", "2.5", "10"])]
    assert modal_answer(dist) == "2.5"  # continuous: the median
    # room size unanswerable at 16 (and a dummy): answered with the type's answer pooled over budgets
    rows = [truth("r", "room_size_estimation_single", None, status="unanswerable"),
            truth("r", "room_size_estimation_single", "20", budget=32),
            truth("r", "room_size_estimation_single", None, status="unanswerable", variant="dummy")]
    assert [(p.key, p.prediction) for p in in_sample(rows)] == [
        (("r", "budget", "16"), "20"), (("r", "budget", "32"), "20"), (("r", "dummy", "16"), "20")]


def test_size_prior_is_leave_one_out_category_mean():
    q = "What is the length of the longest dimension (length, width, or height) of the {}, measured in centimeters?"
    rows = [truth("s1", "object_size_estimation", "50", question=q.format("chair")),
            truth("s2", "object_size_estimation", "70", question=q.format("Chair")),
            truth("s3", "object_size_estimation", "100", question=q.format("table")),
            truth("s4", "object_size_estimation", "90", object_label="lamp"),
            truth("c1", "object_counting_single", "2")]
    assert [t.label for t in rows[:4]] == ["chair", "chair", "table", "lamp"]
    preds = {p.id: p.prediction for p in in_sample(rows, SIZE_PRIOR)}
    assert preds["s1"] == "70" and preds["s2"] == "50"   # the other chair
    assert preds["s3"] == "70"                            # no other table: mean of 50, 70, 90
    assert preds["c1"] == "2"                             # other types: most-frequent
    assert {p.id: p.prediction for p in in_sample(rows)}["s1"] == "80"  # median of 50, 70, 90, 100


def test_format_number_and_jsonl_round_trip():
    assert [format_number(x) for x in (2.0, 1.23456, 0.5, 120, 1e-5)] == ["2", "1.2346", "0.5", "120", "0"]
    rows = [truth("q1", "object_counting_single", "2"), truth("q1", "object_counting_single", "3", budget="all")]
    text = predictions_jsonl(in_sample(rows), MOST_FREQUENT)
    back = parse_plain_predictions(text.splitlines(), "b.jsonl")
    assert [(p.key, p.prediction) for p in back] == [(("q1", "budget", "16"), "2"), (("q1", "budget", "all"), "3")]
