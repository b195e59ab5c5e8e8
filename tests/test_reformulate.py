"""Reformulated questions: the variants themselves, and their ground truth carried through the
budget stage and the dummy videos (frames and answers worked out by hand)."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from leak_adversary import leaking
from test_budget import item, make_scene, make_vis  # the hand-built scenes of the budget tests
from vistest.budget.config import TruthConfig
from vistest.budget.rows import CHANGED, KEPT, UNANSWERABLE, question_record
from vistest.budget.truth import budget_truth
from vistest.cli import main
from vistest.answers import CANNOT_DETERMINE, NONE_OF_THESE
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
from vistest.budget.dummy import EXPECT_ABSTAIN, EXPECT_NONE, EXPECT_ZERO, dummy_ground_truth

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
    numbers = {(v, "answered with a number"): 9 for v in ("circular", "nota-add", "nota-replace", "open")}
    assert ref.skipped == {**numbers, ("nota-replace", SKIP_CLOSED.format("left / right")): 1}


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
# leak-free texts: every variant lists exactly its options, in their order
# ---------------------------------------------------------------------------------------
def mcq(qid, question, options, answer, qtype="object_rel_distance", objects=("1", "2", "3", "4")):
    return {"id": qid, "scene_id": "s", "question_type": qtype, "question": question,
            "options": [f"{chr(65 + i)}. {o}" for i, o in enumerate(options)], "ground_truth": answer,
            "objects": list(objects)}


def rows_of(*docs, variants=VARIANTS):
    ref = reformulate(parse_questions([json.dumps(d) for d in docs]), variants)
    return {r["id"]: r for r in ref.records}


def test_variant_texts_list_their_options_in_order():
    q = "Which of these objects (table, side table, tv) is the closest to the sofa?"
    rows = rows_of(mcq("d", q, ["table", "side table", "tv"], "A"))
    assert rows["d~circular1"]["question"] == q.replace("table, side table, tv", "side table, tv, table")
    assert rows["d~circular2"]["question"] == q.replace("table, side table, tv", "tv, table, side table")
    assert rows["d~nota-add"]["question"] == rows["d~abstain"]["question"] == rows["d~open"]["question"] == q
    # "table" removed: "side table" does not name it
    assert rows["d~nota-replace"]["question"] == "Which of these objects (side table, tv) is the closest to the sofa?"
    assert rows["d~nota-replace"]["options"] == ["A. side table", "B. tv", f"C. {NONE_OF_THESE}"]
    # a serial comma list of three becomes "x or y"; the separators of the same length are kept
    rows = rows_of(mcq("c", "Is the cup red, green, or blue?", ["red", "green", "blue"], "B"))
    assert rows["c~circular1"]["question"] == "Is the cup green, blue, or red?"
    assert rows["c~nota-replace"]["question"] == "Is the cup red or blue?"
    # VSI-Bench's wording, with articles and any case: rotated; left / right is a closed set
    q = "If I am standing by the bed and facing the sofa, is the tv to the Left or the right of the sofa?"
    rows = rows_of(mcq("v", q, ["left", "right"], "A", "object_rel_direction_easy", ("1", "2", "3")))
    assert rows["v~circular1"]["question"] == ("If I am standing by the bed and facing the sofa, is the tv to the "
                                               "right or the left of the sofa?")
    assert "v~nota-replace" not in rows and rows["v"]["skipped_variants"] == {
        "nota-replace": SKIP_CLOSED.format("left / right")}
    # an order of labels (appearance order): the text lists the labels in the first option's order
    q = "What will be the first-time appearance order of the following categories in the video: bed, plant, sofa?"
    rows = rows_of({**mcq("o", q, ["bed, plant, sofa", "plant, bed, sofa", "sofa, bed, plant"], "A",
                          "obj_appearance_order", ()), "objects": None, "category": ["bed", "plant", "sofa"]})
    assert rows["o~circular1"]["question"].endswith(": plant, bed, sofa?")
    assert rows["o~circular2"]["question"].endswith(": sofa, bed, plant?")
    assert rows["o~nota-replace"]["question"].endswith(": plant, bed, sofa?")  # the removed order is not named
    assert rows["o~nota-add"]["question"] == q
    # the dynamic type motion_direction (vistest.generate.motion): its text lists the four headings
    # in the options' order; they are a closed set
    q = "From 1.0 s to 3.0 s, which of these directions (toward, left, away, right) does the cart move in?"
    doc = {**mcq("m", q, ["toward", "left", "away", "right"], "C", "motion_direction", ("cart",)),
           "time_start": 1.0, "time_end": 3.0}
    rows = rows_of(doc)
    assert rows["m~circular1"]["question"] == q.replace("toward, left, away, right", "left, away, right, toward")
    assert rows["m~circular1"]["options"] == ["A. left", "B. away", "C. right", "D. toward"]
    assert rows["m~circular1"]["ground_truth"] == "B"
    assert "m~nota-replace" not in rows and rows["m"]["skipped_variants"] == {
        "nota-replace": SKIP_CLOSED.format("right / away / left / toward")}
    assert leaking(list(rows.values())) == {}


@pytest.mark.parametrize("doc, variant, reason", [
    # a binary question whose text names both answers: no text names only the one left
    (mcq("b", "Which is closer to the sofa, the table or the tv?", ["table", "tv"], "B"), "nota-replace", SKIP_BINARY),
    # the left / right / back and quadrant spaces: the missing one is the answer's
    (mcq("e", "Is the tv to my left, right, or back?", ["back", "left", "right"], "C", "object_rel_direction_easy",
         ("1", "2", "3")), "nota-replace", SKIP_CLOSED.format("left / right / back")),
    (mcq("h", "Where?", ["front-left", "back-right", "front-right", "back-left"], "A", "object_rel_direction_hard",
         ("1", "2", "3")), "nota-replace", SKIP_CLOSED.format("front-left / front-right / back-left / back-right")),
    # the text lists a choice the options lack: no text lists exactly the options
    (mcq("x", "Which of these objects (table, tv, plant, lamp) is the closest?", ["table", "tv", "plant"], "A"),
     "circular", SKIP_OTHER_LIST),
    (mcq("x", "Which of these objects (lamp, table, tv, plant) is the closest?", ["table", "tv", "plant"], "A"),
     "nota-replace", SKIP_OTHER_LIST),
    (mcq("y", "Which is closer to the sofa, the table or the tv?", ["table", "tv", "plant"], "C"), "nota-replace",
     SKIP_OTHER_LIST),
    # the removed option named outside a list
    (mcq("n", "Which object is the closest to the sofa (the table is by the door)?", ["table", "tv", "plant"], "A"),
     "nota-replace", SKIP_NAMED),
    # numeric ladders with the answer inside: the gap shows it (geometric, arithmetic)
    (mcq("g", "How long?", ["120", "100", "172.8", "144"], "D", "object_size_estimation_mcq", ("1",)), "nota-replace",
     SKIP_LADDER),
    (mcq("a", "How long?", ["4", "2", "3", "5"], "C", "object_size_estimation_mcq", ("1",)), "nota-replace",
     SKIP_LADDER),
])
def test_variants_that_would_give_the_answer_away_are_skipped(doc, variant, reason):
    ref = reformulate(parse_questions([json.dumps(doc)], "q.jsonl"))
    assert not any(r.get("reformulation") == variant for r in ref.records)
    assert ref.records[0]["skipped_variants"][variant] == reason
    assert (doc["id"], "q.jsonl:1", variant, reason, True) in [(s.id, s.where, s.variant, s.reason, s.leak)
                                                               for s in ref.skips]


@pytest.mark.parametrize("doc", [
    mcq("n2", "Which object is the closest to the sofa (the table is by the door)?", ["table", "tv", "plant"], "B"),
    mcq("g2", "How long?", ["120", "100", "172.8", "144"], "B", "object_size_estimation_mcq", ("1",)),  # the end rung
    mcq("r2", "How long?", ["130", "100", "400", "250"], "A", "object_size_estimation_mcq", ("1",)),  # no ladder
])
def test_nota_replace_is_written_where_the_text_names_what_is_offered(doc):
    rows = rows_of(doc, variants=("nota-replace",))
    assert f"{doc['id']}~nota-replace" in rows and "skipped_variants" not in rows[doc["id"]]


def write_lines(path, docs):
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return str(path)


def test_duplicate_options_and_id_collisions_are_input_errors(tmp_path):
    good = mcq("demo-9", "Which?", ["table", "tv"], "A")
    for options, shown in ((["left", "left"], "'A. left' and 'B. left'"),
                           (["Left", " left "], "'A. Left' and 'B.  left '")):
        path = write_lines(tmp_path / "dup.jsonl", [good, mcq("q", "Is it to my left?", options, "B")])
        r = CliRunner().invoke(main, ["reformulate", path, "-o", str(tmp_path / "out.jsonl")])
        assert r.exit_code == 2 and f"Error: {path}:2: options: {shown} offer the same text" in r.output
    path = write_lines(tmp_path / "ids.jsonl", [good, {**good, "id": "demo-9~circular1"}])
    r = CliRunner().invoke(main, ["reformulate", path, "-o", str(tmp_path / "out.jsonl")])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert (f"Error: {path}:2: id: 'demo-9~circular1' is the id vistest reformulate gives a variant of question "
            f"'demo-9' ({path}:1)") in r.output
    path = write_lines(tmp_path / "ids2.jsonl", [{**good, "id": "a~open"}, {**good, "id": "a"}])
    r = CliRunner().invoke(main, ["reformulate", path, "-o", str(tmp_path / "out.jsonl"), "--variants", "open"])
    assert r.exit_code == 2 and f"Error: {path}:1: id: 'a~open'" in r.output
    assert not (tmp_path / "out.jsonl").exists()


def test_cli_report_lists_the_skipped_variants(tmp_path):
    out, rep = tmp_path / "ref.jsonl", tmp_path / "rep"
    r = CliRunner().invoke(main, ["reformulate", str(DEMO_QUESTIONS), "-o", str(out), "--report", str(rep)])
    assert r.exit_code == 0, r.output
    skipped = [json.loads(line) for line in (rep / "skipped.jsonl").read_text().splitlines()]
    assert [s for s in skipped if s["leak"]] == [{
        "id": "demo-10", "question_type": "object_rel_direction_easy", "where": f"{DEMO_QUESTIONS}:10",
        "variant": "nota-replace", "reason": SKIP_CLOSED.format("left / right"), "leak": True}]
    assert len(skipped) == 1 + 9 * 4  # and the numeric questions' four variants that do not apply
    md = (rep / "report.md").read_text()
    assert (f"| demo-10 | object_rel_direction_easy | {DEMO_QUESTIONS}:10 | nota-replace | "
            f"{SKIP_CLOSED.format('left / right')} |") in md
    assert "- answered with a number: circular, nota-add, nota-replace, open (9 questions: demo-1," in md


# ---------------------------------------------------------------------------------------
# the text-only adversary (tests/leak_adversary.py) on every reformulation
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module", params=[(3, 2), pytest.param((6, 4), marks=pytest.mark.slow)], ids=["3+2", "6+4"])
def generated_questions(tmp_path_factory, request):
    """``vistest generate --types all`` on 3 random rooms (box visibility) and ``--types motion`` on 2
    random dynamic scenes (tests/motion_scenes.py), as records (the slow tier: 6 rooms and 4 scenes)."""
    rooms, moving = request.param
    from vistest.synthetic import random_room_scene
    from vistest.visibility.table import compute_visibility

    from motion_scenes import random_motion_scene

    tmp = tmp_path_factory.mktemp("gen")
    static = [(s, compute_visibility(s)) for s in (random_room_scene(seed, num_frames=100) for seed in range(rooms))]
    dynamic = [random_motion_scene(seed) for seed in range(moving)]
    for scenes, types in ((static, "all"), (dynamic, "motion")):
        args = []
        for scene, vis in scenes:
            p = tmp / scene.scene_id / "scene.json"
            scene.save(p)
            vis.save(p.with_name("vis.npz"))
            args += [str(p), "--visibility", str(p.with_name("vis.npz"))]
        # the texts are what this checks, not the balance: no bias pruning (nor the report's held-out chance)
        r = CliRunner().invoke(main, ["generate", *args, "-o", str(tmp / "out" / types), "--types", types, "--quiet",
                                      "--rule", "balance.removal_budget=0", "--rule", "balance.null_permutations=0"])
        assert r.exit_code == 0, r.output
    return [json.loads(line) for f in sorted((tmp / "out").glob("*/*.jsonl")) for line in f.read_text().splitlines()]


def naive(records):
    """What vistest reformulate wrote before its texts were rewritten: each variant with its base
    question's text, and a nota-replace for every MCQ."""
    base = {r["id"]: r for r in records if r["reformulation"] == "base"}
    out = []
    for r in records:
        out.append({**r, "question": base[r["group_id"]]["question"]} if r["reformulation"] != "base" else r)
        if r["reformulation"] == "base" and "nota-replace" in r.get("skipped_variants", {}) and r.get("options"):
            texts = [option_letter(o)[1] for o in r["options"]]
            rest = [t for t, o in zip(texts, r["options"]) if option_letter(o)[0] != r["ground_truth"]]
            out.append({**r, "id": f"{r['id']}~nota-replace", "reformulation": "nota-replace",
                        "options": [f"{chr(65 + i)}. {t}" for i, t in enumerate(rest + [NONE_OF_THESE])],
                        "ground_truth": chr(65 + len(rest))})
    return out


def test_no_reformulation_leaks_its_removed_or_rotated_option(generated_questions):
    demo = reformulate(load_questions(DEMO_QUESTIONS)).records
    gen = reformulate(parse_questions([json.dumps(r) for r in generated_questions], "gen.jsonl")).records
    for records in (demo, gen):
        assert leaking(list(records)) == {}
    # the adversary is not blind: the untouched texts of the old reformulation leak, and it says so
    before = leaking(naive(list(demo)))
    assert set(before) == {"demo-9~circular1", "demo-9~circular2", "demo-9~nota-replace", "demo-10~circular1",
                           "demo-10~nota-replace", "demo-11~nota-replace"}
    old = naive([r for r in gen if not r["question_type"].startswith("motion_")])  # the static types' old texts
    before = leaking(old)
    by_kind = Counter(r["reformulation"] for r in old if str(r["id"]) in before)
    assert len(before) > 0.3 * sum(r["reformulation"] != "base" for r in old)  # 38% on this set
    assert by_kind["circular"] > 0 and by_kind["nota-replace"] > 0 and by_kind["nota-add"] > 0
    # what is still written: every MCQ type keeps its circular rows; nota-replace where a leak-free text exists
    kept = Counter((r["question_type"], r["reformulation"]) for r in gen)
    types = {r["question_type"] for r in generated_questions if r.get("options")}
    assert "motion_speed" in types  # motion_direction: test_variant_texts_list_their_options_in_order
    assert all(kept[(t, "circular")] > 0 for t in types)
    for t in ("object_rel_distance_closest", "object_rel_distance_farthest", "obj_appearance_order",
              "object_size_estimation_mcq"):
        assert kept[(t, "nota-replace")] > 0, t
    assert not any(t.startswith("object_rel_direction") for t, v in kept if v == "nota-replace")


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
    return questions, budget_truth(scene, vis, questions, TruthConfig(budgets=(2, 4, "all")))


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
    rec = truth.row(it).to_json()
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
