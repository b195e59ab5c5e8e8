"""Blind baselines: most-frequent answer, category-mean size prior, and the option-rank attack
on constructed option sets whose leak is known."""
from __future__ import annotations

import json

import numpy as np
import pytest

from vistest.answers import PROTOCOLS
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
from vistest.budget.rows import TruthRow
from vistest.eval.records import parse_plain_predictions

REVSI = PROTOCOLS["revsi"]


def in_sample(rows, model=MOST_FREQUENT):
    """The blind model fitted on the very rows it answers (--holdout in-sample)."""
    return blind_predictions(rows, model, holdout_folds(rows, IN_SAMPLE))


def truth(qid, qtype, gt, budget=16, status="kept", options=None, variant="budget", **extra):
    doc = {"id": qid, "question_type": qtype, "question": extra.pop("question", "?"), "ground_truth": gt,
           "num_frames": budget, "status": status, "options": options, "variant": variant, **extra}
    return TruthRow.from_json(doc, "t.jsonl", 1)


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
    assert modal_answer([truth(f"c{i}", "object_counting_single", g) for i, g in enumerate([3, 1, 3, 1])]) in "13"
    # tied counts are drawn at random (seeded by the values), not always the smallest (issue #23)
    picks = [modal_answer([truth(f"c{i}", "object_counting_single", g) for i, g in enumerate([a, b, c])])
             for a, b, c in ((1, 2, 3), (2, 4, 5), (1, 5, 8), (3, 4, 9), (2, 3, 7), (1, 6, 9))]
    assert len({p for p in picks}) > 1 and any(p != min(t) for p, t in zip(
        picks, ("123", "245", "158", "349", "237", "169")))
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


# ---------------------------------------------------------------------------------------
# every blind attack, held out by scene (vistest.eval.attacks)
# ---------------------------------------------------------------------------------------
def _attack_set(seed=0, scenes=12):
    """Per scene: 4 closest-object questions whose options are 4 of 8 labels in random letter
    order, the keyed option "bed" whenever offered (a planted label prior), else a random one;
    4 counting questions, "How many lamp(s)" always 1 (a planted per-label prior), other labels
    2-9 at random."""
    from vistest.eval.attacks import ATTACKS  # noqa: F401 (the module under test)

    rng = np.random.default_rng(seed)
    labels = ["bed", "chair", "table", "lamp", "sofa", "desk", "tv", "sink"]
    rows = []
    for s in range(scenes):
        for q in range(4):
            opts = list(rng.choice(labels, 4, replace=False))
            key = opts.index("bed") if "bed" in opts else int(rng.integers(4))
            rows.append(truth(f"s{s}r{q}", "object_rel_distance_closest", "ABCD"[key], budget="all",
                              options=[f"{'ABCD'[i]}. {o}" for i, o in enumerate(opts)], scene_id=f"s{s}",
                              question=f"Which of these objects is the closest to the {labels[q]}?"))
        for q, lab in enumerate(["lamp", "chair", "table", "sofa"]):
            n = 1 if lab == "lamp" else int(rng.integers(2, 10))
            rows.append(truth(f"s{s}c{q}", "object_counting_single", str(n), budget="all", scene_id=f"s{s}",
                              question=f"How many {lab}(s) are in the scene?"))
    return rows


def test_attacks_find_planted_priors_held_out_by_scene():
    from vistest.eval.attacks import attack_cells, blind_attacks, score_rows

    rows = _attack_set()
    folds = holdout_folds(rows)
    assert folds.by == "scene"
    rep = blind_attacks(rows, folds, REVSI, min_judged=20)
    cells = {(c.question_type, c.attack): c for c in rep.cells}
    label = cells[("object_rel_distance_closest", "option-label")]
    offered = [t for t in rows if t.options and any("bed" in o for o in t.options)]
    # every question offering "bed" is answered (held out), the others at chance or so
    assert label.score >= len(offered) / 48 and label.gap > 0.2 and not label.ok and label.ci[0] > 0
    assert cells[("object_rel_distance_closest", "constant")].n == 48  # the letter: no planted signal
    assert abs(cells[("object_rel_distance_closest", "constant")].gap) < 0.2
    prior = cells[("object_counting_single", "numeric-prior")]
    rs = score_rows(rows, folds, REVSI)
    lamp = [i for i, t in enumerate(rs.rows) if "lamp(s)" in t.question]
    assert (rs.scores["numeric-prior"][lamp] == 1.0).all()  # "lamp" learned on other scenes: always 1
    assert prior.gap > 0.1 and not prior.ok
    # without the plant the label prior is near chance, and the cell is judged two-sided
    fair = [truth(t.id, t.question_type, "ABCD"[int(np.random.default_rng(i).integers(4))], budget="all",
                  options=list(t.options), scene_id=t.scene_id, question=t.question)
            for i, t in enumerate(rows) if t.options]
    fair_label = {c.attack: c for c in blind_attacks(fair, holdout_folds(fair), REVSI).cells}["option-label"]
    assert abs(fair_label.gap) < 0.15
    # small types are pooled and not judged below the floor
    small = attack_cells(rs, min_judged=100)
    assert all(c.pooled and not c.judged for c in small)
    assert {c.question_type for c in small if c.attack == "constant"} == {
        "pooled (<100): object_counting_single, object_rel_distance_closest"}


def test_attack_chance_best_constant_and_interval():
    from vistest.eval.attacks import best_constant, chance_scores, gap_interval, mra_matrix

    # best constant for MRA: 10 beats 1 and 100 on {9, 10, 11, 100}
    assert best_constant([9, 10, 11, 100], counting=True) == 10.0
    vals = [2.0, 4.0, 8.0]
    rows = [truth(f"n{i}", "object_abs_distance", str(v), budget="all") for i, v in enumerate(vals)]
    m = mra_matrix(np.array(vals), np.array(vals))
    expect = [(m[i].sum() - m[i, i]) / 2 for i in range(3)]
    np.testing.assert_allclose(chance_scores(rows), expect)
    lo, hi = gap_interval(np.array([0.1, 0.1, -0.1, -0.1]), ["a", "a", "b", "b"])
    assert lo < 0 < hi  # two scenes whose gaps cancel: the interval spans 0
    lo, hi = gap_interval(np.array([0.2, 0.2, 0.2, 0.2]), ["a", "b", "c", "d"])
    assert lo == pytest.approx(0.2) and hi == pytest.approx(0.2)


def test_baseline_cli_prints_the_attacks(tmp_path):
    from click.testing import CliRunner

    from vistest.cli import main

    rows = _attack_set(scenes=4)
    lines = [json.dumps({"id": t.id, "question_type": t.question_type, "question": t.question,
                         "ground_truth": t.ground_truth, "num_frames": "all", "status": "kept",
                         "options": list(t.options) if t.options else None, "scene_id": t.scene_id})
             for t in rows]
    (tmp_path / "all_frame.jsonl").write_text("\n".join(lines) + "\n")
    out = CliRunner().invoke(main, ["baseline", "-r", str(tmp_path), "-o", str(tmp_path / "b.jsonl"),
                                    "--attacks-report", str(tmp_path / "attacks.json")])
    assert out.exit_code == 0, out.output
    assert "Blind attacks vs chance (held out)" in out.output and "option-label" in out.output
    rep = json.loads((tmp_path / "attacks.json").read_text())
    assert rep["holdout"].startswith("leave-one-scene-out") and {c["attack"] for c in rep["cells"]} >= {
        "constant", "option-label", "numeric-prior", "learned"}
    # two-sided: the complements of the multiple-choice attacks, none of the numbers (MRA: one-sided)
    comp = [c for c in rep["cells"] if c["complement"]]
    assert {c["attack"] for c in comp} >= {"not-constant", "not-option-label"} and "not-option-label" in out.output
    assert all(c["question_type"].endswith(": object_rel_distance_closest") for c in comp)  # pooled (<20)


def test_baseline_cli_transfer_from_another_run(tmp_path):
    """vistest baseline --transfer-from: the attacks fitted on another run folder's ground truth
    (other scenes) and scored on RUN_DIR's; the two planted sets key "bed" whenever offered, so
    the option-label prior learned on one answers the other; a shared scene is a clear error."""
    from click.testing import CliRunner

    from vistest.cli import main

    def write(folder, prefix, seed):
        folder.mkdir()
        lines = [json.dumps({"id": prefix + t.id, "question_type": t.question_type, "question": t.question,
                             "ground_truth": t.ground_truth, "num_frames": "all", "status": "kept",
                             "options": list(t.options) if t.options else None, "scene_id": prefix + t.scene_id})
                 for t in _attack_set(seed=seed, scenes=6)]
        (folder / "all_frame.jsonl").write_text("\n".join(lines) + "\n")

    write(tmp_path / "test", "a", 1)
    write(tmp_path / "train", "b", 2)
    out = CliRunner().invoke(main, ["baseline", "-r", str(tmp_path / "test"), "-o", str(tmp_path / "b.jsonl"),
                                    "--no-attacks", "--transfer-from", str(tmp_path / "train"),
                                    "--transfer-report", str(tmp_path / "t.json")])
    assert out.exit_code == 0, out.output
    assert "Blind attacks vs chance (fitted on another set)" in out.output
    rep = json.loads((tmp_path / "t.json").read_text())
    assert rep["holdout"].startswith(f"fitted on {tmp_path / 'train'} (6 scenes)")
    label = [c for c in rep["cells"] if c["attack"] == "option-label"]
    assert label and label[0]["gap"] > 0.2 and label[0]["above"] and label[0]["held_out_chance_gap"] is None
    same = CliRunner().invoke(main, ["baseline", "-r", str(tmp_path / "test"), "-o", str(tmp_path / "c.jsonl"),
                                     "--transfer-from", str(tmp_path / "test"), "--attacks-report",
                                     str(tmp_path / "a.json"), "--transfer-report", str(tmp_path / "u.json")])
    assert same.exit_code == 2 and "--transfer-from" in same.output and "share scene" in same.output
    # issue #35: the refusal came after the predictions were written; now nothing is
    assert not any((tmp_path / f).exists() for f in ("c.jsonl", "a.json", "u.json"))
    usage = CliRunner().invoke(main, ["baseline", "-r", str(tmp_path / "test"), "-o", str(tmp_path / "d.jsonl"),
                                      "--transfer-report", str(tmp_path / "x.json")])
    assert usage.exit_code == 2 and "--transfer-from" in usage.output and not (tmp_path / "d.jsonl").exists()


def test_nota_position_and_answer_length_attacks():
    """Planted: the keyed option is always the one just before "None of these", and always the
    longest text; held out by scene both attacks find it, the letter constant does not."""
    from vistest.eval.attacks import blind_attacks

    rng = np.random.default_rng(3)
    rows = []
    for s in range(8):
        for q in range(6):
            k = int(rng.integers(3, 5))  # 3 or 4 options, "None of these" placed anywhere
            nota = int(rng.integers(1, k))
            texts = ["ab", "abc", "abcd"][: k - 1]
            texts = [texts[i] for i in rng.permutation(len(texts))]
            key_text = "a much longer option"
            texts.insert(nota - 1, key_text)
            opts = texts[:nota] + ["None of these"] + texts[nota:]
            opts = opts[:k]
            if "None of these" not in opts:
                continue
            letters = "ABCD"[:len(opts)]
            key = opts.index(key_text)
            rows.append(truth(f"s{s}q{q}", "object_rel_distance_closest", letters[key], budget="all",
                              options=[f"{a}. {o}" for a, o in zip(letters, opts)], scene_id=f"s{s}",
                              question="Which is it?", reformulation="nota-add"))
    rep = blind_attacks(rows, holdout_folds(rows), REVSI, min_judged=5)
    cells = {(c.question_type.split(" [")[0], c.attack): c for c in rep.cells}  # "type [nota-add]"
    assert cells[("object_rel_distance_closest", "nota-position")].score == 1.0
    assert cells[("object_rel_distance_closest", "answer-length")].score == 1.0
    assert cells[("object_rel_distance_closest", "constant")].score < 0.7


def test_attacks_over_fold_seeds_worst_and_mean():
    """across_seeds: per cell the gap of each seed, judged on the mean (the generator's report),
    the worst and its seeds listed."""
    from vistest.eval.attacks import across_seeds, blind_attacks

    rows = _attack_set(scenes=15)  # 15 scenes: 5 seeded folds (leave-one-out up to 10)
    reps = [blind_attacks(rows, holdout_folds(rows, seed=s), REVSI, min_judged=20) for s in (0, 1, 2)]
    assert len({tuple(sorted(r.folds.fold_of.items())) for r in reps}) == 3
    for c in across_seeds(reps, (0, 1, 2)):
        gaps = [x.gap for r in reps for x in r.cells if (x.question_type, x.attack) == (c.question_type, c.attack)]
        assert c.worst == max(gaps)
    cells = {(c.question_type, c.attack): c for c in across_seeds(reps, (0, 1, 2))}
    label = cells[("object_rel_distance_closest", "option-label")]  # the planted prior: above on every seed
    assert label.seeds_above == (0, 1, 2) and label.above and not label.ok
    assert label.mean == pytest.approx(np.mean(label.gaps)) and label.worst == max(label.gaps)
    letter = cells[("object_rel_distance_closest", "constant")]
    assert letter.ok == (letter.mean <= 0.03 + 1e-9)


def test_option_order_is_the_rank_attack_order():
    from vistest.eval.baselines import option_order

    assert option_order(["A. 3.5", "B. 1.0", "C. 2", "D. None of these"]) == [1, 2, 0, 3]
    assert option_order(["A. left", "B. 2"]) is None and option_order(["1", "2"]) is None
    assert option_order(["A. None of these", "B. Cannot be determined from the video"]) is None


def test_complement_of_an_attack_is_judged_two_sided():
    """Two-sided judging (vistest.eval.attacks, issue #23): an attack far below chance leaks
    through its complement "not-X" (uniformly one of the options X does not pick). Planted:
    8 scenes, scene i keys letter "ABCD"[i % 4] on every 4-option question (and "ABC"[i % 3]
    on every 3-option one), so the held-out most frequent letter (leave-one-scene-out) is
    mostly a letter the scene never keys. The complement is recomputed here by enumerating
    the other options of each row, the held-out constant letter by counting the other scenes."""
    from collections import Counter

    from vistest.eval.attacks import blind_attacks

    rows = []
    for s in range(8):
        for q in range(3):
            rows.append(truth(f"s{s}a{q}", "object_rel_distance_closest", "ABCD"[s % 4], budget="all",
                              options=[f"{x}. o{j}" for j, x in enumerate("ABCD")], scene_id=f"s{s}"))
            rows.append(truth(f"s{s}b{q}", "obj_appearance_order", "ABC"[s % 3], budget="all",
                              options=[f"{x}. o{j}" for j, x in enumerate("ABC")], scene_id=f"s{s}"))
            rows.append(truth(f"s{s}n{q}", "object_abs_distance", str(1.0 + s + q), budget="all", scene_id=f"s{s}"))
    rep = blind_attacks(rows, holdout_folds(rows), REVSI, min_judged=20)
    assert rep.folds.by == "scene"
    cells = {(c.question_type, c.attack): c for c in rep.cells}
    for qtype in ("object_rel_distance_closest", "obj_appearance_order"):
        mine = [t for t in rows if t.question_type == qtype]
        comp, attack = [], []
        for t in mine:
            train = Counter(x.ground_truth for x in mine if x.scene_id != t.scene_id)
            pick = min(train, key=lambda a: (-train[a], a))  # held out: the other scenes' most frequent letter
            others = [o.split(".")[0] for o in t.options if o.split(".")[0] != pick]
            attack.append(float(pick == t.ground_truth))
            comp.append(sum(o == t.ground_truth for o in others) / len(others))
        k = len(mine[0].options)
        c, nc = cells[(qtype, "constant")], cells[(qtype, "not-constant")]
        assert c.score == pytest.approx(np.mean(attack)) and nc.score == pytest.approx(np.mean(comp))
        assert nc.chance == pytest.approx(1 / k) and nc.n == c.n == 24 and nc.complement and not c.complement
        assert nc.gap == pytest.approx(-c.gap / (k - 1))  # the identity the docs state
        assert c.gap < -0.1 and c.ok and c.below  # the attack itself passes the upper side ...
        assert nc.judged and nc.above and not nc.ok  # ... its complement fails it
    assert not rep.ok and "not-constant" in {f.attack for f in rep.failing}
    # numbers (MRA) are one-sided: no complement cell
    assert ("object_abs_distance", "constant") in cells
    assert not any(q == "object_abs_distance" and a.startswith("not-") for q, a in cells)
    table = rep.table()
    assert any(r[1] == "not-constant" and r[-1] == "NO" for r in table.rows) and "one-sided" in table.note


def test_complement_is_judged_against_its_held_out_chance():
    """A complement's held-out chance (vistest.eval.attacks.held_out_chance): the keys re-drawn
    within the set's design (permuted_keys: letter swaps, the option items and length ranks no
    less balanced than the set's), the same folds. The planted set of the test above keys one
    letter per scene, 3 questions a scene, every letter 6 times: with *any* re-draw a held-out
    scene shows at most 3 of the 4 letters, so the other scenes' most frequent letter (6 against
    6 - h) is one it never keys and the held-out constant scores exactly 0. Its complement's
    held-out chance is then exactly its gap, (1 - 0) / 3 - 1/4: holding out a balanced set, not
    the questions, puts it there, and the cell is within target. The same holds for a balance
    of the keyed option's text-length rank (one rank a scene, every rank in two scenes). A
    per-scene pattern no balance of the set accounts for (7 scenes, rank 3 in one) is judged."""
    from vistest.eval.attacks import blind_attacks, held_out_chance, permuted_keys

    rows = []
    for s in range(8):
        for q in range(3):
            rows.append(truth(f"s{s}a{q}", "object_rel_distance_closest", "ABCD"[s % 4], budget="all",
                              options=[f"{x}. o{j}" for j, x in enumerate("ABCD")], scene_id=f"s{s}"))
    folds = holdout_folds(rows)
    raw = {c.attack: c for c in blind_attacks(rows, folds, REVSI).cells}
    rep = blind_attacks(rows, folds, REVSI, permutations=6, seed=3)
    cells = {c.attack: c for c in rep.cells}
    nc = cells["not-constant"]
    assert raw["not-constant"].above and raw["not-constant"].null is None
    assert nc.gap == pytest.approx(1 / 3 - 1 / 4) and nc.null == pytest.approx(1 / 3 - 1 / 4)
    assert nc.excess == pytest.approx(0.0) and not nc.above and rep.ok
    assert cells["constant"].null is None and cells["constant"].excess == cells["constant"].gap  # upper side: 1/k
    # the re-draw keeps each letter's count in the cell and moves the keys
    perm = permuted_keys(rows, np.random.default_rng(0))
    assert sorted(t.ground_truth for t in perm) == sorted(t.ground_truth for t in rows)
    assert [t.ground_truth for t in perm] != [t.ground_truth for t in rows]
    assert held_out_chance(rows, folds, REVSI, permutations=2, seed=5) == held_out_chance(
        rows, folds, REVSI, permutations=2, seed=5)  # seeded
    lengths = ["ab", "abcd", "abcdefgh", "abcdefghijklmnop"]

    def by_rank(scenes):
        """4 questions a scene keying the text-length rank s % 4 (0 = shortest), letters at random."""
        rng = np.random.default_rng(1)
        out = []
        for s in range(scenes):
            for q in range(4):
                order = rng.permutation(4)  # letter j shows the text of length rank order[j]
                key = int(np.flatnonzero(order == s % 4)[0])
                out.append(truth(f"s{s}l{q}", "object_rel_distance_farthest", "ABCD"[key], budget="all",
                                 options=[f"{x}. {lengths[order[j]]}" for j, x in enumerate("ABCD")],
                                 scene_id=f"s{s}"))
        return out

    balanced = {c.attack: c for c in blind_attacks(by_rank(8), holdout_folds(by_rank(8)), REVSI, permutations=6,
                                                   seed=3).cells}["not-answer-length"]
    assert balanced.gap == pytest.approx(1 / 3 - 1 / 4)  # the other scenes' most frequent rank: never this one's
    assert balanced.null == pytest.approx(balanced.gap, abs=0.02) and not balanced.above  # the balance's doing
    pattern = {c.attack: c for c in blind_attacks(by_rank(7), holdout_folds(by_rank(7)), REVSI, permutations=6,
                                                  seed=3).cells}["not-answer-length"]
    assert pattern.gap == pytest.approx(1 / 3 - 1 / 4)  # ties go to the smaller rank: never this scene's
    assert pattern.null < 0.04 and pattern.excess > 0.03 and pattern.above


def test_transfer_attacks_fit_on_another_set():
    """vistest.eval.attacks.transfer_attacks: every attack fitted on another set (other scenes)
    and scored on this one, against 1/k. Planted: every question offers "bed" and 3 other
    labels; the training set always keys "bed"; a test set that does too is answered by the
    option-label prior (100%), a test set that never keys "bed" leaks the other way (the prior
    scores 0, its complement (1 - 0) / 3 = 1/3), and the letter constant stays near 1/4."""
    from vistest.eval.attacks import transfer_attacks

    labels = ["bed", "chair", "table", "lamp", "sofa", "desk", "tv", "sink"]

    def make(prefix, bed, seed):
        rng = np.random.default_rng(seed)
        rows = []
        for s in range(10):
            for q in range(8):
                opts = list(rng.permutation(["bed", *rng.choice(labels[1:], 3, replace=False)]))
                key = opts.index("bed") if bed else int(rng.choice([i for i, o in enumerate(opts) if o != "bed"]))
                rows.append(truth(f"{prefix}{s}q{q}", "object_rel_distance_closest", "ABCD"[key], budget="all",
                                  options=[f"{'ABCD'[i]}. {o}" for i, o in enumerate(opts)],
                                  scene_id=f"{prefix}{s}", question="Which object is the closest?"))
        return rows

    train = make("t", True, 0)
    same = {c.attack: c for c in transfer_attacks(make("a", True, 1), train, REVSI).cells}
    assert same["option-label"].score == pytest.approx(1.0) and same["option-label"].above
    rev = {c.attack: c for c in transfer_attacks(make("b", False, 2), train, REVSI).cells}
    assert rev["option-label"].score == 0.0 and rev["not-option-label"].score == pytest.approx(1 / 3)
    assert rev["not-option-label"].above and rev["not-option-label"].null is None  # against 1/k: no null
    assert abs(rev["constant"].gap) < 0.12 and rev["constant"].chance == pytest.approx(0.25)
    with pytest.raises(ValueError, match="share scene"):
        transfer_attacks(train[:12], train[12:], REVSI)  # scene t1 on both sides
