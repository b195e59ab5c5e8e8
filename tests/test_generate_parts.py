"""The generator's parts: rules and their documentation, the balancing steps, the blind-baseline
adapter against vistest.eval, the new question types, and generated questions through the
budget stage, a blind baseline and vistest score."""
from __future__ import annotations

import dataclasses
import json
import math
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from vistest.budget.truth import budget_truth, write_budget_files
from vistest.cli import main
from vistest.datasets.synthetic import random_room_scene
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
    for name, default, doc, source in rows:
        assert doc and source, name
        assert f"`{name}`" in text, f"docs/generate.md does not list {name}"
    for t in parse_types("all") + parse_types("vsibench"):
        assert f"`{t}`" in text and t in QUESTION_TYPES


def test_rule_overrides_are_typed_and_checked():
    r = Rules().with_overrides(["abs_distance.min_distance_m=0.2", "size.exclude_labels=[\"toilet\"]",
                                "rel_direction.max_corners_in_other_region=0", "counting.max_multiple_per_scene=5",
                                "frames.answerable_at=[\"all\", 32]"])
    assert r.abs_distance.min_distance_m == 0.2 and r.size.exclude_labels == ("toilet",)
    assert r.rel_direction.max_corners_in_other_region == 0 and r.counting.max_multiple_per_scene == 5
    assert r.frames.answerable_at == ("all", "32")
    for bad, msg in (("numeric_mcq.step_ratio=1.5", "spans"), ("counting.max_multiple_per_scene=1.5", "like 3"),
                     ("size", "FAMILY.PARAM=VALUE"), ("frames.seen_threshold=2", "fraction"),
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
    gen = generate([room], GENERATED_TYPES, Rules(), seed=0)
    recs = gen.questions[room.scene.scene_id]
    assert len({r["question_type"] for r in recs}) >= 8
    qs = parse_questions([json.dumps(r) for r in recs], scene=room.scene)
    bt = budget_truth(room.scene, room.visibility, qs, budgets=[16, 32, "all"])
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


def test_direction_words_are_capped_within_each_fold():
    """A fold whose answers lean one way is capped on its own (the whole set alone would pass):
    otherwise the held-out 'most frequent word' attack lands below chance (issue #23)."""
    from vistest.generate.balance import cap_answers

    def cand(i, scene, word):
        return Candidate(scene, "object_rel_direction_forward_easy", "{x}", (("x", str(i)),), objects=(str(i),),
                         answer=word, distractors=tuple(w for w in ("left", "right", "back") if w != word))

    words = ["left"] * 16 + ["right"] * 12 + ["back"] * 12 + ["left"] * 12 + ["right"] * 16 + ["back"] * 12
    cands = [cand(i, "s0" if i < 40 else "s1", w) for i, w in enumerate(words)]
    b = Rules().balance
    share = 1 / 3 + b.direction_answer_tolerance
    overall, _ = cap_shares(cands, share, np.random.default_rng(0))
    assert len(overall) == 80  # 28 / 80 each of left and right: the set passes as a whole
    kept, _ = cap_answers("object_rel_direction_forward_easy", cands, b, np.random.default_rng(0),
                          {"s0": 0, "s1": 1})
    for scene in ("s0", "s1"):
        got = Counter(c.answer for c in kept if c.scene_id == scene)
        assert max(got.values()) <= share * sum(got.values()) + 1e-9, got
    assert len(kept) < 80


def test_swaps_train_on_the_kept_rows_and_judge_both_sides():
    """Step 6 of the balancing (vistest.generate.balance): the pool is answered by attacks trained
    on the kept rows only; a type's miss counts attacks above the margin minus their slack and
    complements not-X above the margin minus theirs (two-sided); a swap keeps the letters within
    their target and the answer caps (checked after the swap, over the type and per fold for
    directions); numeric twins are swapped in pairs with their numeric-option type; the swaps
    score on fold seeds neither the report nor a pruning round uses."""
    from types import SimpleNamespace

    from vistest.eval.attacks import AttackCell
    from vistest.eval.baselines import scene_folds
    from vistest.generate.balance import (Placed, TrainOn, _swap_groups, answer_share, cap_excess, fold_seeds,
                                          miss, positions_ok, swap_seeds)

    f = scene_folds(["s0", "s1", "s2"], 5, 0)  # leave-one-scene-out
    rows = [SimpleNamespace(scene_id=f"s{i % 3}", key=(str(i),)) for i in range(9)]
    kept = frozenset(r.key for r in rows[:6])
    split = TrainOn(f.by, f.fold_of, f.n_folds, f.n_scenes, f.warning, kept).split(rows)
    assert [len(te) for _, te in split] == [3, 3, 3]  # every row answered
    for tr, te in split:
        assert all(t.key in kept for t in tr) and not {t.scene_id for t in tr} & {t.scene_id for t in te}

    b = Rules().balance

    def cell(attack, gap):
        return AttackCell(attack, "t", 40, 10, 0.25 + gap, 0.25, (gap - 0.1, gap + 0.1), True, b.blind_margin)

    assert miss([cell("constant", -0.05), cell("not-constant", 0.0)], b) == 0.0
    # an attack within the margin but above margin - swap_attack_slack; a complement above margin - swap_slack
    assert miss([cell("option-label", 0.01)], b) == pytest.approx((0.01 - b.blind_margin + b.swap_attack_slack) ** 2)
    assert miss([cell("not-learned", 0.02)], b) == pytest.approx((0.02 - b.blind_margin + b.swap_slack) ** 2)
    c = Candidate("s0", "object_rel_direction_forward_easy", "{x}", (("x", "a"),), answer="left",
                  distractors=("right", "back"))
    assert answer_share(c.question_type, [c], b) == pytest.approx(1 / 3 + b.direction_answer_tolerance)
    counts = [dataclasses.replace(c, question_type="object_counting_single", answer=str(n), distractors=())
              for n in (1, 2, 3)]
    assert answer_share("object_counting_single", counts, b) == pytest.approx(1 / 3)  # 3 answers: raised
    assert answer_share("object_size_estimation", counts, b) == 1.0  # not capped
    # 0.35 of 20: at most 7 of an answer; per fold (0.35 of 10: 3) only when asked
    ans = ["left"] * 7 + ["right"] * 7 + ["back"] * 6
    assert cap_excess(ans, [0] * 10 + [1] * 10, 0.35, False) == 0
    assert cap_excess(ans[:-1] + ["left"], [0] * 20, 0.35, False) == 1
    assert cap_excess(ans, [0] * 10 + [1] * 10, 0.35, True) == 4 + 1 + 3  # fold 0: left 4 over; fold 1: right 1, back 3
    assert _swap_groups(["object_abs_distance", "object_abs_distance_mcq", "object_counting_single",
                         "object_size_estimation_mcq", "room_size_estimation_single"]) == [
        ("object_abs_distance_mcq", "object_abs_distance"), ("object_counting_single",),
        ("object_size_estimation_mcq",), ("room_size_estimation_single",)]
    assert positions_ok([Placed(c, ("right", "left", "back"), x) for x in "ABC" * 10], b)
    assert not positions_ok([Placed(c, ("right", "left", "back"), x) for x in "ABC" * 9 + "AAA"], b)
    assert positions_ok([Placed(c, ("right", "left", "back"), x) for x in "ABC" * 7 + "A"], b)  # 8/22: rounding
    used = set(fold_seeds(0, b)[0]) | {s for r in range(b.max_rounds) for s in fold_seeds(0, b, r)[1]}
    assert len(swap_seeds(0, b)) == b.swap_fold_seeds and not used & set(swap_seeds(0, b))


def test_swap_search_moves_twin_pairs_and_keeps_the_caps():
    """Step 6's search (vistest.generate.balance._swap_search) over units: the judged type and its
    numeric twin keep the same units (pairs), a swap that makes the twin's miss grow or exceeds an
    answer cap is refused, and the same seed gives the same swaps."""
    from vistest.generate.balance import Placed, _swap_search

    b = Rules().balance

    class Part:  # a type's search, its miss a function of the units kept (the attacks stubbed)
        def __init__(self, qtype, answers, cost):
            self.qtype, self.cost = qtype, cost
            self.items = [Placed(Candidate(f"s{i % 4}", qtype, "{x}", (("x", str(i)),), answer=a))
                          for i, a in enumerate(answers)]
            self.unit = np.arange(len(answers))

        def refit_learned(self, keep):
            pass

        def kept(self, keep):
            return [p for p, k in zip(self.items, keep[self.unit]) if k]

        def miss(self, keep):
            return self.cost(keep)

    n, pool = 20, 40
    bad = np.arange(pool) < n  # the units kept first are the "leaky" ones
    head = Part("object_abs_distance_mcq", ["1"] * pool, lambda k: 2.0 * (k & bad).sum())
    odd_new = (np.arange(pool) >= n) & (np.arange(pool) % 2 == 1)  # the twin leaks on these
    twin = Part("object_abs_distance", ["1"] * pool, lambda k: float((k & odd_new).sum()))
    keep, before, after = _swap_search([head, twin], n, np.random.default_rng(0), b, {})
    assert keep.sum() == n and 0 < after < before == 2 * n  # only the 10 even units of the pool come in
    kept_units = set(np.flatnonzero(keep))
    assert {int(u) for u, k in zip(twin.unit, keep[twin.unit]) if k} == kept_units  # pairs: the same units
    assert twin.miss(keep) == 0  # the twin's miss never grew
    again = _swap_search([head, twin], n, np.random.default_rng(0), b, {})[0]
    assert (again == keep).all()
    # a counting type: 5 answers, cap 20% of 20 = 4 each; the pool offers only answer "9" in
    answers = [str(i % 5) for i in range(n)] + ["9"] * n
    count = Part("object_counting_single", answers, lambda k: float((k & bad).sum()))
    keep = _swap_search([count], n, np.random.default_rng(0), b, {})[0]
    got = Counter(answers[i] for i in np.flatnonzero(keep))
    assert max(got.values()) <= 4 and got["9"] <= 4 and got["9"] > 0  # swaps made, the cap held


def _ordered_candidates(prefix: str, scenes: int, rng: np.random.Generator) -> list[Candidate]:
    """20 appearance-order candidates a scene over 4 of 8 labels, with a planted prior: the keyed
    order puts the large categories (bed, sofa, table) first, the small ones (lamp, cup) last;
    3 distractor orders drawn at random, as vistest.generate.appearance draws them."""
    from itertools import permutations

    labels = ["bed", "sofa", "table", "chair", "tv", "plant", "lamp", "cup"]
    out = []
    for s in range(scenes):
        for i in range(20):
            combo = list(rng.choice(labels, 4, replace=False))
            noise = rng.normal(0, 3.0, 4)
            order = [combo[j] for j in np.argsort([labels.index(x) + e for x, e in zip(combo, noise)])]
            others = [p for p in permutations(order) if list(p) != order]
            pick = rng.choice(len(others), 3, replace=False)
            out.append(Candidate(f"{prefix}{s}", "obj_appearance_order", "{x}", (("x", f"{s}-{i}"),),
                                 category=tuple(combo), category_list=True, answer=", ".join(order),
                                 distractors=tuple(", ".join(others[j]) for j in pick)))
    return out


def test_per_scene_caps_counterbalance_the_option_texts():
    """Balancing step 2 (vistest.generate.balance.option_items, cap_per_scene): on candidates with
    a planted "large categories first" prior, the counterbalanced per-scene draw brings the
    (label, place) items' summed imbalance (recomputed here from the keyed and offered orders)
    down to what independent scenes without a prior sum to (``balance.herd_share`` 1: the squared
    total at most the sum of the scenes' own squares), and the option-label prior fitted on
    *another* set (other scenes, a random draw) answers it far below a random draw of the same
    candidates. Herded to exact balance (share 0) the total is far below the scenes' own: the
    scenes cancel each other, what the default stops short of (docs/generate.md)."""
    from vistest.generate.balance import cap_per_scene, option_items, place_options
    from vistest.generate.candidates import to_record
    from vistest.generate.rules import NumericMcqRules

    rng = np.random.default_rng(0)
    cands = _ordered_candidates("a", 30, rng)
    other = cap_per_scene(_ordered_candidates("b", 30, rng), 4, rng)  # a random draw: what it learns

    def imbalance(kept):
        """(squared length of the set's summed item imbalance, sum over scenes of their own)."""
        won, offered = defaultdict(Counter), defaultdict(Counter)
        for c in kept:
            for j, text in enumerate([c.answer, *c.distractors]):
                for place, lab in enumerate(text.split(", ")):
                    offered[c.scene_id][(place, lab)] += 1
                    won[c.scene_id][(place, lab)] += j == 0
        total = defaultdict(float)
        scenes = 0.0
        for sid in offered:
            for x, n in offered[sid].items():
                total[x] += won[sid][x] - n / 4
            scenes += sum((won[sid][x] - n / 4) ** 2 for x, n in offered[sid].items())
        return sum(v * v for v in total.values()), scenes

    def option_label(kept):
        recs = [to_record(p.candidate, f"{p.candidate.scene_id}-{i}", list(p.options), p.letter)
                for i, p in enumerate(place_options(kept, NumericMcqRules(), rng))]
        train = [to_record(p.candidate, f"{p.candidate.scene_id}-{i}", list(p.options), p.letter)
                 for i, p in enumerate(place_options(other, NumericMcqRules(), rng))]
        cells = blind.transfer_report(recs, train).cells
        return next(c for c in cells if c.attack == "option-label")

    drawn = cap_per_scene(cands, 4, np.random.default_rng(1))
    herded = cap_per_scene(cands, 4, np.random.default_rng(1), option_items(cands))
    exact = cap_per_scene(cands, 4, np.random.default_rng(1), option_items(cands), herd_share=0.0)
    assert len(drawn) == len(herded) == len(exact) == 120 and Counter(c.scene_id for c in herded) == Counter(
        c.scene_id for c in drawn)
    (t_drawn, s_drawn), (t_herded, s_herded), (t_exact, s_exact) = map(imbalance, (drawn, herded, exact))
    assert t_drawn > 3 * s_drawn  # the planted prior: the scenes add up
    assert t_herded <= s_herded * 1.1 and t_herded > 0.3 * s_herded, (t_herded, s_herded)
    assert t_exact < 0.3 * s_exact, (t_exact, s_exact)  # herded to balance: the scenes cancel
    prior_drawn, prior_herded, prior_exact = option_label(drawn), option_label(herded), option_label(exact)
    assert prior_drawn.gap > 0.15, prior_drawn  # the planted prior, learned on the other set
    assert prior_herded.gap < prior_drawn.gap - 0.15, prior_herded
    assert prior_exact.gap < 0.06, prior_exact
    assert option_items([dataclasses.replace(cands[0], question_type="object_abs_distance_mcq")]) is None
