"""Scoring reformulated questions with fixture models whose behaviour is known: the answer rules
(abstention, "None of these", open answers), circular accuracy and the position report, the
none-of-these drop, both sides of abstaining, held-out folds, and the learned blind model on a
planted shortcut."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from vistest.cli import main
from vistest.answers import (
    ABSTAINED,
    CANNOT_DETERMINE,
    PROTOCOLS,
    content_letters,
    is_abstention_text,
    none_letter,
    normalize_text,
    parse_answer,
    response_class,
    score_answer,
)
from vistest.eval.baselines import (
    IN_SAMPLE,
    MOST_FREQUENT,
    blind_predictions,
    holdout_folds,
    rank_attack,
)
from vistest.eval.learned import fit_learned, prune, write_baseline
from vistest.eval.metrics import ALL_TYPES
from vistest.budget.rows import TruthRow
from vistest.eval.records import Prediction, RunTruth
from vistest.eval.report import build_report, render_markdown, write_report
from vistest.questions import parse_questions
from vistest.reformulate import reformulate
from vistest.budget.dummy import dummy_ground_truth

REVSI, VSI = PROTOCOLS["revsi"], PROTOCOLS["vsibench"]


# ---------------------------------------------------------------------------------------
# answer rules
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, norm", [
    ("The TV.", "tv"), ("back-left", "back left"), ("  Chair,  table , lamp ", "chair table lamp"),
    ("A lamp", "lamp"), ("Ｔｖ", "tv"), ("can't", "can t"), ("Café_Table", "café table"),
])
def test_normalize_text(text, norm):
    assert normalize_text(text) == norm


@pytest.mark.parametrize("text, abstains", [
    (CANNOT_DETERMINE, True), ("cannot be determined", True), ("It can't be determined.", True),
    ("I cannot tell", True), ("Unknown", True), ("I don't know", True), ("could not determine it", True),
    ("3", False), ("None of these", False), ("It is 3, I cannot tell more", False), ("determined: 3", False),
])
def test_abstention_in_words(text, abstains):
    assert is_abstention_text(text) is abstains


def test_open_text_abstain_and_none_of_these_scores():
    assert score_answer(REVSI, "text", "Back-left.", "back-left") == 1.0
    assert score_answer(REVSI, "text", "the back left", "back-left") == 1.0
    assert score_answer(REVSI, "text", "left", "back-left") == 0.0
    assert score_answer(REVSI, "text", "", "") == 0.0
    # a number that accepts abstention: the phrase scores 1 against the phrase, 0 against a number
    assert parse_answer(VSI, "number", "cannot be determined from 16 frames", abstain=True) == ABSTAINED
    assert parse_answer(VSI, "number", "cannot be determined from 16 frames") == 16.0  # lmms-eval's parse alone
    assert score_answer(REVSI, "number", "Cannot be determined.", CANNOT_DETERMINE, abstain=True) == 1.0
    assert score_answer(REVSI, "number", "3", CANNOT_DETERMINE, abstain=True) == 0.0
    assert score_answer(REVSI, "number", "Cannot be determined", "3", abstain=True) == 0.0
    assert score_answer(REVSI, "number", "3", "3", abstain=True) == 1.0
    opts = ["A. left", "B. right", "C. None of these", "D) cannot be determined from the video"]
    assert none_letter(opts) == "C" and content_letters(opts) == {"A", "B"}
    cls = {t: response_class("mcq", t, REVSI.mcq_token(t), False, opts) for t in ("A", "C", "d.", "E", "I cannot tell")}
    assert cls == {"A": "confident", "C": "none_of_these", "d.": "abstained", "E": "unparsed",
                   "I cannot tell": "abstained"}
    assert response_class("number", "0", 0.0, True, None) == "zero"
    assert response_class("number", "cannot determine, maybe 3", 3.0, False, None) == "abstained"


# ---------------------------------------------------------------------------------------
# fixture truths: three direction questions, reformulated, on real and dummy videos
# ---------------------------------------------------------------------------------------
def stress_truths(n_groups=3, k=3, budget=16):
    """Base questions with k options whose answers are A, B, C, ... in turn, reformulated; every
    row answerable on its real video, and a dummy row per question (its dummy ground truth)."""
    docs = [{"id": f"g{i}", "scene_id": "s", "question_type": "object_rel_direction_easy", "question": f"Q{i}?",
             "options": [f"{chr(65 + j)}. dir{j}" for j in range(k)], "ground_truth": chr(65 + i % k),
             "objects": ["1", "2"]} for i in range(n_groups)]
    docs.append({"id": "n", "scene_id": "s", "question_type": "object_size_estimation", "question": "Size?",
                 "ground_truth": "100", "objects": ["1"]})
    questions = parse_questions(reformulate(parse_questions([json.dumps(d) for d in docs])).jsonl().splitlines())
    truths = []
    for q in questions:
        truths.append(TruthRow.from_json({**q.record, "num_frames": budget, "status": "kept"}, "real.jsonl", 1))
        gt, status, _reason, _exp = dummy_ground_truth(q, "drop")
        truths.append(TruthRow.from_json({**q.record, "variant": "dummy-drop", "num_frames": budget, "ground_truth": gt,
                                         "status": status, "unsupported": gt is not None}, "dummy.jsonl", 1))
    return truths


def model(truths, answer):
    return [Prediction(t.id, t.variant, t.budget, answer(t)) for t in truths]


def report_of(truths, answer, **kw):
    return build_report(RunTruth(tuple(truths), ("t",)), model(truths, answer), "revsi", splits=2, learned=False, **kw)


def stress(report, metric):
    [c] = [c for c in report.stress if c.metric == metric]
    return c


def test_always_the_first_option_has_circular_accuracy_zero_and_the_position_report_shows_it():
    truths = stress_truths()
    rep = report_of(truths, lambda t: "A" if t.options else "100")
    assert stress(rep, "circular_vanilla_accuracy").overall == pytest.approx(1 / 3)  # right where A is right
    c = stress(rep, "circular_accuracy")
    assert c.overall == 0.0 and c.types["object_rel_direction_easy"][0] == 3  # 3 complete groups
    pos = {p.letter: p for p in rep.positions}
    assert {x: (p.n, p.accuracy, p.picked) for x, p in pos.items()} == {
        "A": (3, 1.0, 1.0), "B": (3, 0.0, 0.0), "C": (3, 0.0, 0.0)}  # each group puts its answer at A once
    # a model that reads the options (right everywhere) keeps every group
    right = report_of(truths, lambda t: str(t.ground_truth) if t.options else "100")
    assert stress(right, "circular_accuracy").overall == 1.0
    assert {p.letter: p.accuracy for p in right.positions} == {"A": 1.0, "B": 1.0, "C": 1.0}
    md = render_markdown(rep, {})
    assert "## Accuracy by position of the correct option" in md and "| A | 1.000 (3) / 1.000 |" in md


def test_ranking_instead_of_verifying_shows_the_none_of_these_drop():
    truths = stress_truths()

    def ranker(t):  # right on every question whose right answer is listed; never picks "None of these"
        if not t.options:
            return "100"
        if t.reformulation == "nota-replace":
            return "A"
        return str(t.ground_truth)
    rep = report_of(truths, ranker)
    values = {c.metric: c.overall for c in rep.stress}
    assert values["nota_add_accuracy"] == 1.0  # V1 keeps base accuracy
    assert values["nota_replace_accuracy"] == 0.0 and values["nota_replace_drop"] == 1.0
    per_ref = {s.reformulation: s.values["overall_acc"] for s in rep.summaries if s.model == "predictions"}
    assert per_ref["base"] == 1.0 and per_ref["nota-replace"] == 0.0


def test_an_always_abstaining_model_abstains_on_dummies_and_is_penalised_on_real_videos(tmp_path):
    truths = stress_truths()
    rep = report_of(truths, lambda t: ("D" if t.reformulation == "abstain" else CANNOT_DETERMINE) if t.options
                    else CANNOT_DETERMINE)
    cells = {(c.videos, c.question_type): c for c in rep.abstention}
    dummy, real = cells[("dummy-drop", ALL_TYPES)], cells[("budget", ALL_TYPES)]
    assert (dummy.abstention, dummy.hallucination) == (1.0, 0.0) and dummy.n == dummy.n_blind == len(truths) // 2
    assert real.abstention == 1.0 and real.score == 0.0 and real.n_blind == 0  # every real row has evidence
    base = {c.question_type: c.score for c in rep.scores if c.model == "predictions" and c.reformulation == "base"}
    assert base == {"object_rel_direction_easy": 0.0, "object_size_estimation": 0.0}
    # the other side: a model that always answers confidently hallucinates on every dummy
    bold = {(c.videos, c.question_type): c for c in report_of(truths, lambda t: "A" if t.options else "100").abstention}
    assert bold[("dummy-drop", ALL_TYPES)].abstention == 0.0
    # hallucination counts the confident answers; the dummy's answer ("None of these", abstain, 0) is none
    assert bold[("dummy-drop", ALL_TYPES)].hallucination == 1.0
    out = write_report(rep, tmp_path)
    doc = json.loads(out["report.json"].read_text())
    assert {"stress", "position", "abstention", "blind_holdout"} <= set(doc) and "stress.png" in out


# ---------------------------------------------------------------------------------------
# held-out blind baselines
# ---------------------------------------------------------------------------------------
def counting_truths(scenes, per_scene=4, answer=lambda s, i: "2"):
    return [TruthRow.from_json({"id": f"{s}-{i}", "scene_id": s, "question_type": "object_counting_single",
                               "question": "How many?", "ground_truth": answer(s, i), "num_frames": 16,
                               "status": "kept", "category": "chair"}, "t.jsonl", 1)
            for s in scenes for i in range(per_scene)]


def test_holdout_folds():
    one = counting_truths(["s0"], per_scene=12)
    f = holdout_folds(one)
    assert f.by == "question" and f.n_folds == 5 and "only 1 scene" in f.warning and len(f.fold_of) == 12
    assert holdout_folds(one, "question").warning is None
    few = counting_truths([f"s{i}" for i in range(4)])
    f = holdout_folds(few)
    assert (f.by, f.n_folds, f.warning, f.scheme) == ("scene", 4, None, "leave-one-scene-out (4 scenes)")
    many = counting_truths([f"s{i:02d}" for i in range(23)], per_scene=1)
    f = holdout_folds(many, k=5, seed=3)
    assert f.n_folds == 5 and f.scheme == "5-fold by scene (23 scenes)"
    assert sorted(np.bincount(list(f.fold_of.values()))) == [4, 4, 5, 5, 5]
    assert f.fold_of == holdout_folds(many, k=5, seed=3).fold_of
    for train, test in f.split(many):
        assert not {t.scene_id for t in train} & {t.scene_id for t in test}
    assert holdout_folds(many, IN_SAMPLE).in_sample


def test_held_out_most_frequent_answers_from_other_scenes():
    # scene a counts 2, scenes b and c count 3: in-sample "3" everywhere; held out, a gets the others' 3
    # and b, c get the tie of the other two scenes (2 and 3: the smaller)
    truths = counting_truths(["a", "b", "c"], answer=lambda s, i: {"a": "2", "b": "3", "c": "3"}[s])
    held = {p.id: p.prediction for p in blind_predictions(truths, MOST_FREQUENT)}
    assert (held["a-0"], held["b-0"], held["c-3"]) == ("3", "2", "2")
    inside = {p.id: p.prediction for p in blind_predictions(truths, MOST_FREQUENT, holdout_folds(truths, IN_SAMPLE))}
    assert set(inside.values()) == {"3"}


# ---------------------------------------------------------------------------------------
# the learned blind model finds a planted shortcut, and pruning removes it
# ---------------------------------------------------------------------------------------
CUES = {"amber": "left", "cobalt": "right", "violet": "front", "olive": "back"}
FILLER = ["quiet", "large", "small", "old", "new", "wooden", "bright", "dark"]


def planted_truths(n_scenes=10, per_scene=20, seed=0):
    """Four-option direction questions; in every other question a colour word names the answer
    (amber: left, ...), in the others the answer is random and the words say nothing."""
    rng = np.random.default_rng(seed)
    rows, planted = [], set()
    for s in range(n_scenes):
        for i in range(per_scene):
            order = list(rng.permutation(list(CUES.values())))
            adj = FILLER[rng.integers(8)]
            if i % 2 == 0:
                cue = list(CUES)[rng.integers(4)]
                answer, question = CUES[cue], f"Standing by the {cue} bed, facing the {adj} sofa, where is the lamp?"
                planted.add(f"s{s}q{i}")
            else:
                answer = order[rng.integers(4)]
                question = f"Standing by the {FILLER[rng.integers(8)]} bed, facing the {adj} sofa, where is the lamp?"
            rows.append(TruthRow.from_json({
                "id": f"s{s}q{i}", "scene_id": f"scene{s}", "question_type": "object_rel_direction_easy",
                "question": question, "options": [f"{'ABCD'[j]}. {d}" for j, d in enumerate(order)],
                "ground_truth": "ABCD"[order.index(answer)], "num_frames": 16, "status": "kept"}, "t.jsonl", 1))
    return rows, planted


def accuracy(predictions, truths):
    pred = {p.key: p.prediction for p in predictions}
    return float(np.mean([pred[t.key] == t.ground_truth for t in truths]))


def test_learned_blind_model_finds_a_planted_shortcut_and_pruning_removes_it():
    truths, planted = planted_truths()
    learned = fit_learned(truths, holdout_folds(truths))  # leave-one-scene-out: never sees its own scene
    assert learned.folds.scheme == "leave-one-scene-out (10 scenes)"
    chance = 0.25
    held = accuracy(learned.predictions, truths)
    assert held >= chance + 0.25, held                                            # far above chance
    assert accuracy(learned.predictions, [t for t in truths if t.id in planted]) >= 0.95
    assert accuracy(learned.predictions, [t for t in truths if t.id not in planted]) <= chance + 0.1
    bias = learned.group_bias(truths)
    assert min(b for (_, g), b in bias.items() if g in planted) > max(b for (_, g), b in bias.items()
                                                                       if g not in planted)
    pr = prune(truths, holdout_folds)
    removed = {g for _, g, _, _ in pr.removed}
    assert removed == planted                                                     # exactly the planted ones
    after = accuracy(pr.after.predictions, list(pr.kept))
    assert after <= chance + 0.1, after                                           # back to chance
    assert {t.id for t in pr.kept} == {t.id for t in truths} - planted


def test_learned_number_shortcut():
    rng = np.random.default_rng(1)
    rows = []
    for s in range(6):
        for i in range(12):
            kitchen = i % 3 == 0
            count = 7 if kitchen else int(rng.integers(1, 4))
            room = "kitchen" if kitchen else ["bedroom", "office", "hall"][i % 3]
            rows.append(TruthRow.from_json({"id": f"s{s}q{i}", "scene_id": f"s{s}", "question_type": "object_counting",
                                           "question": f"How many chairs are in the {room}?", "category": "chair",
                                           "ground_truth": str(count), "num_frames": 16, "status": "kept"}, "t", 1))
    learned = fit_learned(rows, holdout_folds(rows))
    pred = {p.key: float(p.prediction) for p in learned.predictions}
    kitchen = [t for t in rows if "kitchen" in t.question]
    assert all(abs(pred[t.key] - 7) <= 1 for t in kitchen)
    assert np.mean([learned.bias[t.key] for t in kitchen]) >= 0.8


@pytest.mark.slow  # the baseline command's learned attacks on a large set (in process: the tests above)
def test_baseline_cli_writes_held_out_predictions_bias_and_the_pruned_set(tmp_path):
    truths, planted = planted_truths()
    for t in truths:  # a run folder of vistest run: scenes/{scene}/16_frame.jsonl
        d = tmp_path / "run" / "scenes" / t.scene_id
        d.mkdir(parents=True, exist_ok=True)
        rec = {"id": t.id, "scene_id": t.scene_id, "question_type": t.question_type, "question": t.question,
               "options": list(t.options), "ground_truth": t.ground_truth, "objects": ["1", "2", "3"],
               "num_frames": 16, "status": "kept", "reason": "objects_seen", "original_ground_truth": t.ground_truth}
        with open(d / "16_frame.jsonl", "a") as f:
            f.write(json.dumps(rec) + "\n")
    out, pruned = tmp_path / "learned.jsonl", tmp_path / "pruned.jsonl"
    r = CliRunner().invoke(main, ["baseline", "-r", str(tmp_path / "run"), "-o", str(out), "--model", "learned",
                                  "--prune", str(pruned)])
    assert r.exit_code == 0, r.output
    assert "held out leave-one-scene-out (10 scenes)" in r.output and "pruning: removed 100 of 200" in r.output
    preds = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(preds) == len(truths) and all(-1 <= p["bias"] <= 1 for p in preds)
    kept = parse_questions(pruned.read_text().splitlines(), str(pruned))  # valid question JSONL
    assert {q.id for q in kept} <= {t.id for t in truths} and len(kept) < len(truths)
    assert {q.id for q in kept} == {t.id for t in truths} - planted
    assert all(q.record["ground_truth"] == q.ground_truth and "num_frames" not in q.record for q in kept)
    r = CliRunner().invoke(main, ["baseline", "-r", str(tmp_path / "run"), "-o", str(out), "--prune", str(pruned)])
    assert r.exit_code == 2 and "--prune: pruning ranks questions by the learned model's bias" in r.output
    res = write_baseline(tmp_path / "run", out, "most-frequent", holdout="in-sample")
    assert res.folds.in_sample and res.pruning is None


def test_option_rank_attack_per_reformulation():
    """Numeric options, the answer always the second smallest: the attack finds rank 2 on the
    base and circular rows, and on nota-replace "None of these" (ranked last) is always right."""
    rng = np.random.default_rng(5)
    docs = []
    for i in range(12):
        values = sorted(rng.choice(np.arange(1, 100), size=4, replace=False) / 10)
        order = list(rng.permutation(4))
        docs.append({"id": f"q{i}", "scene_id": "s", "question_type": "object_rel_distance_closest", "question": "?",
                     "options": [f"{'ABCD'[j]}. {values[order[j]]:g} m" for j in range(4)],
                     "ground_truth": "ABCD"[order.index(1)], "objects": ["1", "2"]})
    qs = parse_questions(reformulate(parse_questions([json.dumps(d) for d in docs]),
                                     ("circular", "nota-replace")).jsonl().splitlines())
    truths = [TruthRow.from_json({**q.record, "num_frames": 16, "status": "kept"}, "t", 1) for q in qs]
    cells = {c.reformulation: c for c in rank_attack(truths, splits=4).cells}
    assert cells["base"].hits == (0, 12, 0, 0) and cells["circular"].hits == (0, 36, 0, 0)
    assert cells["nota-replace"].best_rank == 3 and cells["nota-replace"].best_accuracy == 1.0
    assert cells["nota-replace"].name == "object_rel_distance_closest [nota-replace]"


def test_the_report_lists_the_variants_reformulate_did_not_write(tmp_path):
    """A left / right question: its nota-replace would leave "left" alone (the answer known
    without the video); the report names it with the reason, the numeric question's skips by reason."""
    docs = [{"id": "lr", "scene_id": "s", "question_type": "object_rel_direction_easy", "question": "Left or right?",
             "options": ["A. left", "B. right"], "ground_truth": "B", "objects": ["1", "2", "3"]},
            {"id": "n", "scene_id": "s", "question_type": "object_size_estimation", "question": "Size?",
             "ground_truth": "100", "objects": ["1"]}]
    qs = parse_questions(reformulate(parse_questions([json.dumps(d) for d in docs])).jsonl().splitlines())
    truths = [TruthRow.from_json({**q.record, "num_frames": 16, "status": "kept"}, "t.jsonl", 1) for q in qs]
    rep = report_of(truths, lambda t: "A" if t.options else "100")
    assert rep.skipped_variants[0] == ("lr", "object_rel_direction_easy", "nota-replace",
                                       "the options are a closed answer set (left / right): the one removed is known "
                                       "without the video")
    assert len(rep.skipped_variants) == 5  # and circular, nota-add, nota-replace, open of the number
    md = render_markdown(rep, {})
    assert "## Variants not written by vistest reformulate" in md
    assert ("| nota-replace | object_rel_direction_easy | lr | the options are a closed answer set (left / right): the "
            "one removed is known without the video |") in md
    assert "| circular |  | 1 questions: n | answered with a number |" in md
    doc = json.loads(write_report(rep, tmp_path)["report.json"].read_text())
    assert doc["skipped_variants"][0] == {"group_id": "lr", "question_type": "object_rel_direction_easy",
                                          "variant": "nota-replace", "reason": rep.skipped_variants[0][3]}
    bad = {**qs[0].record, "num_frames": 16, "status": "kept", "skipped_variants": ["nota-replace"]}
    with pytest.raises(ValueError, match="t.jsonl:1: skipped_variants: expected an object mapping a variant"):
        TruthRow.from_json(bad, "t.jsonl", 1)
