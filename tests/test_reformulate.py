"""Reformulated questions: the variants themselves, and their ground truth carried through the
budget stage and the dummy videos (frames and answers worked out by hand)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from test_budget import item, make_scene, make_vis  # the hand-built scenes of the budget tests
from vistest.budget.truth import CHANGED, KEPT, UNANSWERABLE, budget_truth, question_record
from vistest.cli import main
from vistest.eval.answers import CANNOT_DETERMINE, NONE_OF_THESE
from vistest.questions import QuestionError, load_questions, option_letter, parse_questions
from vistest.reformulate import (
    ABSTAIN_INSTRUCTION,
    SKIP_BINARY,
    SKIP_CLOSED,
    SKIP_LADDER,
    SKIP_NAMED,
    SKIP_OTHER_LIST,
    VARIANTS,
    parse_variants,
    reformulate,
    variant_id,
)
from vistest.videos.plan import EXPECT_ABSTAIN, EXPECT_NONE, EXPECT_ZERO, dummy_ground_truth

ROOT = Path(__file__).resolve().parent.parent
DEMO_QUESTIONS = ROOT / "examples" / "demo-questions.jsonl"


def text_of(options, letter):
    return dict(option_letter(o) for o in options)[letter]


@pytest.fixture(scope="module")
def demo():
    base = load_questions(DEMO_QUESTIONS)
    return base, reformulate(base)


def test_every_variant_keeps_the_answer_or_makes_the_special_option_the_answer(demo):
    base, ref = demo
    back = parse_questions(ref.jsonl().splitlines(), "ref.jsonl")  # the output is ordinary question JSONL
    by_group = {}
    for q in back:
        by_group.setdefault(q.group_id, []).append(q)
    for b in base:
        group = {q.reformulation: q for q in by_group[b.id] if q.reformulation != "circular"}
        circular = [q for q in by_group[b.id] if q.reformulation == "circular"]
        skipped = {v: "answered with a number" for v in ("circular", "nota-add", "nota-replace", "open")}
        if b.options is None:
            assert group["base"].record == {**b.record, "group_id": b.id, "reformulation": "base",
                                            "skipped_variants": skipped}
        elif b.id == "demo-10":  # left or right: removing one leaves the other, a closed set
            assert group["base"].record["skipped_variants"] == {"nota-replace": SKIP_CLOSED.format("left / right")}
        else:
            assert group["base"].record == {**b.record, "group_id": b.id, "reformulation": "base"}
        if b.options is None:  # numbers: only abstain applies
            assert set(group) == {"base", "abstain"} and not circular
            a = group["abstain"]
            assert a.record["accepts_abstention"] and a.question.endswith(ABSTAIN_INSTRUCTION)
            assert a.ground_truth == b.ground_truth and a.unsupported_answer() == CANNOT_DETERMINE
            continue
        k, right = len(b.options), text_of(b.options, b.ground_truth)
        texts = [option_letter(o)[1] for o in b.options]
        # circular: every other cyclic shift; the correct text moves, and takes every letter once
        assert [q.record["shift"] for q in circular] == list(range(1, k))
        for q in circular:
            s = q.record["shift"]
            assert [option_letter(o)[1] for o in q.options] == texts[s:] + texts[:s]
            assert text_of(q.options, q.ground_truth) == right
        assert sorted([b.ground_truth] + [q.ground_truth for q in circular]) == [chr(65 + i) for i in range(k)]
        add = group["nota-add"]
        assert add.options[:-1] == tuple(f"{chr(65 + i)}. {t}" for i, t in enumerate(texts))
        assert text_of(add.options, add.ground_truth) == right and add.options[-1].endswith(NONE_OF_THESE)
        if b.id != "demo-10":
            rep = group["nota-replace"]
            assert len(rep.options) == k and text_of(rep.options, rep.ground_truth) == NONE_OF_THESE
            assert right not in [option_letter(o)[1] for o in rep.options]
            assert rep.options[-1] == f"{chr(64 + k)}. {NONE_OF_THESE}" and rep.unsupported_answer() == rep.ground_truth
        op = group["open"]
        assert op.options is None and op.kind == "text" and op.ground_truth == right
        ab = group["abstain"]
        assert ab.options[-1] == f"{chr(65 + k)}. {CANNOT_DETERMINE}" and ab.ground_truth == b.ground_truth
        assert ab.unsupported_answer() == chr(65 + k)
    assert ref.written == {"base": 12, "circular": 6, "nota-add": 3, "nota-replace": 2, "open": 3, "abstain": 12}
    assert ref.skipped == {**{(v, "answered with a number"): 9 for v in ("circular", "nota-add", "nota-replace", "open")},
                           ("nota-replace", SKIP_CLOSED.format("left / right")): 1}


def test_open_numeric_options_and_ids():
    [q] = parse_questions([json.dumps({
        "id": 7, "scene_id": "s", "question_type": "object_rel_distance_closest", "question": "How far?",
        "options": ["A. 2.5 m", "B. 1 m", "C. 10 m"], "ground_truth": "A", "objects": ["1", "2"]})])
    ref = reformulate([q], ("open", "circular"))
    ids = [r["id"] for r in ref.records]
    assert ids == [7, variant_id("7", "circular", 1), variant_id("7", "circular", 2), "7~open"]
    opened = ref.records[-1]
    assert (opened["answer_kind"], opened["ground_truth"], "options" in opened) == ("number", "2.5", False)
    assert all(r["group_id"] == 7 for r in ref.records)


def test_refusals():
    assert parse_variants("open, circular") == ("circular", "open") and parse_variants(",".join(VARIANTS)) == VARIANTS
    with pytest.raises(QuestionError, match="--variants: expected a comma-separated subset"):
        parse_variants("circular,shuffle")
    [q] = parse_questions([json.dumps({"id": "x~open", "scene_id": "s", "question_type": "object_rel_distance",
                                       "question": "?", "ground_truth": "tv", "answer_kind": "text",
                                       "reformulation": "open", "group_id": "x", "objects": ["1", "2"]})])
    with pytest.raises(QuestionError, match="already a reformulation"):
        reformulate([q])
    bad = {"id": 1, "scene_id": "s", "question_type": "object_rel_distance", "question": "?", "objects": ["1", "2"]}
    for extra, msg in [({"ground_truth": "A", "options": ["A. x"], "answer_kind": "text"}, "options: a question with "
                        "answer_kind 'text' takes no options"),
                       ({"ground_truth": "x", "answer_kind": "words"}, "answer_kind: expected one of text, number"),
                       ({"ground_truth": "A", "options": ["A. x"], "reformulation": "shuffle"}, "reformulation: "),
                       ({"ground_truth": "A", "options": ["A. x"], "shift": 1}, "shift: expected a positive integer"),
                       ({"ground_truth": "A", "options": ["A. x", f"B. {NONE_OF_THESE}", f"C. {NONE_OF_THESE}"]},
                        "options: a special option appears twice"),
                       ({"ground_truth": "A", "options": ["A. x"], "accepts_abstention": True},
                        "accepts_abstention: a question with options offers abstention by an option")]:
        with pytest.raises(QuestionError, match=f"q.jsonl:1: {msg}"):
            parse_questions([json.dumps({**bad, **extra})], "q.jsonl")


def test_cli_reformulate(tmp_path):
    out = tmp_path / "ref.jsonl"
    r = CliRunner().invoke(main, ["reformulate", str(DEMO_QUESTIONS), "-o", str(out), "--variants", "nota-replace"])
    assert r.exit_code == 0, r.output
    assert "nota-replace       2" in r.output and len(out.read_text().splitlines()) == 14
    first = out.read_bytes()
    assert CliRunner().invoke(main, ["reformulate", str(DEMO_QUESTIONS), "-o", str(out), "--variants",
                                     "nota-replace"]).exit_code == 0 and out.read_bytes() == first
    r = CliRunner().invoke(main, ["reformulate", str(DEMO_QUESTIONS), "-o", str(out), "--variants", "x"])
    assert r.exit_code == 2 and "Error: --variants" in r.output
    r = CliRunner().invoke(main, ["reformulate", str(out), "-o", str(tmp_path / "again.jsonl")])
    assert r.exit_code == 2 and "already a reformulation" in r.output


# ---------------------------------------------------------------------------------------
# the ground truth carries over
# ---------------------------------------------------------------------------------------
# uniform, N = 10: budget 4 -> frames [0, 3, 6, 9]; budget 2 -> [0, 9]; "all" -> 0..9
APPEARANCE = {"question_type": "obj_appearance_order", "category": ["lamp", "chair", "table"],
              "options": ["A. lamp, chair, table", "B. lamp, table, chair", "C. chair, table, lamp"],
              "ground_truth": "A"}
DIRECTION = {"question_type": "object_rel_direction_easy", "objects": ["1", "2", "3"],
             "options": ["A. left", "B. right", "C. back"], "ground_truth": "A"}
COUNT = {"question_type": "object_counting", "category": "cup", "ground_truth": "1"}


@pytest.fixture(scope="module")
def carried():
    """First sightings: lamp frame 0, chair frames 1 and 6, table frame 3, cup frame 3. All
    frames: lamp, chair, table (option A). Budget 4: lamp, table, chair (B). Budget 2: the chair,
    table and cup are unseen."""
    scene = make_scene([("1", "chair"), ("2", "table"), ("3", "lamp"), ("4", "cup")], range(10))
    vis = make_vis(scene, {"1": {1: 0.2, 6: 0.2}, "2": {3: 0.2}, "3": {0: 0.2}, "4": {3: 0.2}})
    base = [{**q, "id": n, "scene_id": "s1", "question": "?"} for n, q in
            (("order", APPEARANCE), ("dir", DIRECTION), ("count", COUNT))]
    qs = reformulate(parse_questions([json.dumps(b) for b in base]))
    questions = parse_questions(qs.jsonl().splitlines(), "ref.jsonl")
    return questions, budget_truth(scene, vis, questions, budgets=(2, 4, "all"))


@pytest.mark.parametrize("qid, budget, gt, status, unsupported", [
    ("order", "all", "A", KEPT, False), ("order", 4, "B", CHANGED, False), ("order", 2, None, UNANSWERABLE, False),
    ("order~circular1", 4, "A", CHANGED, False),           # options B, C, A: lamp, table, chair is now A
    ("order~circular2", "all", "B", KEPT, False),
    ("order~nota-replace", "all", "C", KEPT, False),       # lamp, chair, table was removed: none of these
    ("order~nota-replace", 4, "A", CHANGED, False),        # lamp, table, chair is option A
    ("order~nota-replace", 2, "C", KEPT, True),            # nothing to order: none of these
    ("order~nota-add", 2, "D", CHANGED, True),
    ("order~abstain", 2, "D", CHANGED, True), ("order~abstain", 4, "B", CHANGED, False),
    ("order~open", "all", "lamp, chair, table", KEPT, False), ("order~open", 4, "lamp, table, chair", CHANGED, False),
    ("order~open", 2, None, UNANSWERABLE, False),
    ("dir", 4, "A", KEPT, False), ("dir", 2, None, UNANSWERABLE, False),
    ("dir~circular2", 2, None, UNANSWERABLE, False),
    ("dir~abstain", 2, "D", CHANGED, True),
    ("dir~open", 4, "left", KEPT, False),
    ("count~abstain", 2, CANNOT_DETERMINE, CHANGED, True), ("count~abstain", 4, "1", KEPT, False),
    ("count", 2, None, UNANSWERABLE, False),
])
def test_budget_truth_of_reformulations(carried, qid, budget, gt, status, unsupported):
    _, truth = carried
    it = item(truth, budget, qid)
    assert (it.ground_truth, it.status, it.unsupported) == (gt, status, unsupported)
    rec = it.to_record()
    assert rec.get("unsupported", False) == unsupported
    assert question_record({**rec, "seen_threshold": 0.05}) == dict(it.question.record)


def test_dummy_truth_of_reformulations(carried):
    questions, _ = carried
    by = {q.id: q for q in questions}
    assert dummy_ground_truth(by["dir"], "drop") == (None, UNANSWERABLE, "evidence_removed", EXPECT_ABSTAIN)
    assert dummy_ground_truth(by["dir~circular1"], "drop")[:2] == (None, UNANSWERABLE)
    assert "dir~nota-replace" not in by  # left, right, back: a closed set, the removed answer is the one missing
    assert dummy_ground_truth(by["order~nota-replace"], "drop") == ("C", KEPT, "evidence_removed", EXPECT_NONE)
    assert dummy_ground_truth(by["dir~nota-add"], "black") == ("D", CHANGED, "evidence_removed", EXPECT_NONE)
    assert dummy_ground_truth(by["order~abstain"], "allblack") == ("D", CHANGED, "all_black", EXPECT_ABSTAIN)
    assert dummy_ground_truth(by["count~abstain"], "drop") == ("0", CHANGED, "evidence_removed", EXPECT_ZERO)
    assert dummy_ground_truth(by["order~open"], "drop")[:2] == (None, UNANSWERABLE)
