"""Scoring: lmms-eval's parsing and MRA against hand-computed values, the readers (plain and
--log_samples), hallucination and evidence sensitivity on constructed dummies, the report."""
from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from vistest.cli import main
from vistest import answers
from vistest.answers import (
    MCQ,
    MRA_THRESHOLDS,
    NUMBER,
    PROTOCOLS,
    extract_number,
    first_token,
    mean_relative_accuracy,
    mra_thresholds,
    option_letters,
    score_answer,
)
from vistest.eval.metrics import (
    evaluate_row,
    hallucination_cells,
    lmms_eval_summary,
    match_predictions,
    resolve_protocol,
    sensitivity_cells,
)
from vistest.budget.rows import TruthRow
from vistest.eval.records import Prediction, ScoreError, load_predictions, load_run_dir
from vistest.eval.report import build_report, render_text, write_report
from vistest.questions import ANSWER_MCQ, ANSWER_NUMBER, QUESTION_TYPES, option_letter

REVSI, VSI, LEGACY = PROTOCOLS["revsi"], PROTOCOLS["vsibench"], PROTOCOLS["vsibench-legacy"]
OPTS = ["A. left", "B. right", "C. back"]


def rec(qid, qtype, gt, budget=16, status="kept", options=None, **extra):
    """A budget-file record (the fields vistest budget writes that scoring reads)."""
    return {"id": qid, "scene_id": "s", "question_type": qtype, "question": "?", "ground_truth": gt,
            "num_frames": budget, "status": status, "options": options, **extra}


def write_jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def truth(**kw):
    return TruthRow.from_json(rec(**kw), "t.jsonl", 1)


# ---------------------------------------------------------------------------------------
# MRA
# ---------------------------------------------------------------------------------------
def test_thresholds_are_lmms_evals_ten_points():
    # int((0.95 - 0.5) / 0.05 + 2) = int(10.999...) = 10
    assert len(MRA_THRESHOLDS) == 10
    assert MRA_THRESHOLDS[0] == 0.5 and MRA_THRESHOLDS[-1] == 0.95


@pytest.mark.parametrize("pred, gt, expected", [
    (10, 10, 1.0),
    (15, 10, 0.1),    # error 0.5 <= 1 - 0.5 exactly: only θ = 0.5 passes
    (5, 10, 0.1),
    (16, 10, 0.0),
    (11, 10, 0.9),    # 0.1 <= 1 - 0.9 = 0.10000000000000009: passes; fails θ = 0.95
    (10.5, 10, 1.0),  # 0.05 <= 0.050000000000000044
    (2, 3, 0.4),      # 1/3: θ = 0.50 .. 0.65
    # float quirks: 1 - 0.8 = 0.19999999999999996 and 1 - 0.55 = 0.44999999999999996, so the
    # decimal boundary fails (exact arithmetic would give 0.7 and 0.2)
    (8, 10, 0.6),
    (12, 10, 0.6),
    (5.5, 10, 0.1),
])
def test_mra_boundaries(pred, gt, expected):
    assert mean_relative_accuracy(pred, gt) == pytest.approx(expected, abs=1e-12)


def test_mra_zero_ground_truth_raises_and_scores_zero():
    with pytest.raises(ZeroDivisionError):
        mean_relative_accuracy(0.0, 0.0)
    assert score_answer(REVSI, "number", "0", "0") == 0.0  # revsi catches it: a dummy's 0 never scores


@pytest.mark.parametrize("start, end, interval", [(0.5, 0.95, 0.05), (0.5, 0.95, 0.1), (0.0, 1.0, 0.05),
                                                    (0.1, 0.9, 0.07), (0.25, 0.75, 0.3)])
def test_thresholds_equal_numpy_linspace(start, end, interval):
    # lmms-eval: np.linspace(start, end, int((end - start) / interval + 2)); answers.py has no numpy
    ref = np.linspace(start, end, int((end - start) / interval + 2))
    assert mra_thresholds(start, end, interval) == tuple(ref.tolist())


def test_mra_equals_lmms_evals_numpy_formula():
    """revsi _mean_relative_accuracy / vsibench mean_relative_accuracy, written with numpy as
    there, on a grid of predictions around each target (every float boundary case included)."""
    conf = np.linspace(0.5, 0.95, int((0.95 - 0.5) / 0.05 + 2))
    for target in (0.3, 1.0, 2.5, 3.0, 10.0, 37.0, 120.0, -4.0):
        for k in range(-40, 121):
            pred = target * (1 + k / 40) if k % 3 else target + k * 0.05
            ref = float(((abs(pred - target) / target) <= (1 - conf)).mean())
            assert mean_relative_accuracy(pred, target) == ref, (pred, target)


# ---------------------------------------------------------------------------------------
# answers.py conventions shared with vistest
# ---------------------------------------------------------------------------------------
def test_answer_kinds_are_vistests():
    assert (MCQ, NUMBER) == (ANSWER_MCQ, ANSWER_NUMBER)
    assert {t.answer for t in QUESTION_TYPES.values()} == {MCQ, NUMBER}


@pytest.mark.parametrize("option", ["A. left", "b) right", "  C .back", "D)", "E.", "12. twelve", "(F) x", "G - x",
                                    "left", "", "H.\nnewline", "ab. c"])
def test_option_letters_read_options_as_vistest_questions_does(option):
    letter = option_letter(option)[0]
    assert option_letters([option]) == (frozenset({letter}) if letter else frozenset())


def test_non_string_ground_truths_score_zero_and_are_not_scorable():
    """lmms-eval: ``gt.lower()`` raises on a non-string MCQ answer; ``float(True)`` is 1. vistest
    (and the exported task, which runs the same code) scores both 0 and never scores such rows."""
    assert score_answer(REVSI, "mcq", "3", 3) == 0.0 and score_answer(REVSI, "mcq", "3", "3") == 1.0
    assert score_answer(REVSI, "number", "1", True) == 0.0 and score_answer(REVSI, "number", "1", 1) == 1.0
    assert not truth(qid="q", qtype="object_rel_distance_closest", gt=3, options=OPTS).scorable
    assert not truth(qid="q", qtype="object_counting_single", gt=True).scorable


def _imports(path):
    """Top-level module names and vistest.eval modules a source file imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                out.add(node.module)
            elif node.level == 1 and path.parent.name == "eval":
                names = [node.module] if node.module else [a.name for a in node.names]
                out |= {f"vistest.eval.{n}" for n in names}
            else:
                out.add("vistest")
    return out


def test_eval_modules_import_one_way_and_answers_only_the_standard_library():
    """world_prior_data <- world_prior <- records <- metrics <- tables <- baselines <- learned <- attacks
    <- report: each module imports only modules before it (no cycle); vistest/answers.py imports the
    standard library alone."""
    order = ["world_prior_data", "world_prior", "records", "metrics", "tables", "baselines", "learned", "attacks",
             "report"]
    folder = Path(answers.__file__).parent / "eval"
    for i, name in enumerate(order):
        imported = {m.rsplit(".", 1)[1] for m in _imports(folder / f"{name}.py") if m.startswith("vistest.eval.")}
        assert imported <= set(order[:i]), (name, imported - set(order[:i]))
    shared = _imports(Path(answers.__file__))
    assert all(m.split(".")[0] in sys.stdlib_module_names for m in shared), shared


# ---------------------------------------------------------------------------------------
# parsing quirks
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, token", [
    ("B. chair", "B"), ("B", "B"), ("b.", "b"), ("3 chairs", "3"), ("The answer is 3", "The"),
    ("B\nchair", "B\nchair"),  # split on spaces only
    ("B..", "B"), ("", ""), ("(B)", "(B)"),
])
def test_first_token(text, token):
    assert first_token(text, strip_first=True) == token


def test_leading_space_differs_between_revsi_and_vsibench():
    assert first_token(" B", strip_first=True) == "B"
    assert first_token(" B", strip_first=False) == ""  # vsibench fuzzy_matching does not strip first
    assert score_answer(REVSI, "mcq", " B", "B") == 1.0
    assert score_answer(VSI, "mcq", " B", "B") == 0.0


@pytest.mark.parametrize("text, gt, expected", [
    ("B. chair", "B", 1.0), ("b", "B", 1.0), ("B.", "B", 1.0), ("The answer is B", "B", 0.0),
    ("B\nchair", "B", 0.0), ("(B)", "B", 0.0), ("", "B", 0.0), ("right", "B", 0.0),
])
def test_revsi_mcq(text, gt, expected):
    assert score_answer(REVSI, "mcq", text, gt) == expected


@pytest.mark.parametrize("text, gt, expected", [
    ("3 chairs", "3", 1.0), ("3.", "3", 1.0), ("The answer is 3", "3", 0.0), ("three", "3", 0.0),
    ("", "3", 0.0), ("garbage", "3", 0.0), ("nan", "3", 0.0), ("inf", "3", 0.0), ("3,", "3", 0.0),
    ("1e1", "10", 1.0), ("1_0", "10", 1.0),  # Python float() accepts both
    ("4", 3, 0.4), ("15", "10.0", 0.1),
])
def test_revsi_numbers(text, gt, expected):
    assert score_answer(REVSI, "number", text, gt) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("text, value", [
    ("3", 3.0), ("There are 3 boxes", 3.0), ("three", 3.0), ("Three boxes.", 3.0), ("twenty-one", 21.0),
    ("three hundred and twenty one", 321.0), ("one apple, room 2", 1.0), ("room 2, one apple", 2.0),
    ("two thousand", 2000.0), ("a hundred", 100.0), ("two two", 4.0), ("-2.5 m", -2.5),
    (".5", 5.0), ("1e3", 1.0), ("3-4", 3.0), ("no idea", None), ("", None), ("someone", None),
])
def test_vsibench_extract_number(text, value):
    assert extract_number(text) == value


def test_vsibench_and_legacy_numbers():
    assert score_answer(VSI, "number", "The answer is 3", "3") == 1.0
    assert score_answer(LEGACY, "number", "The answer is 3", "3") == 0.0
    assert score_answer(LEGACY, "number", "3 chairs", "3") == 1.0
    assert score_answer(LEGACY, "number", " 3", "3") == 0.0  # empty first token


# ---------------------------------------------------------------------------------------
# aggregation and protocol choice
# ---------------------------------------------------------------------------------------
def test_revsi_summary_collapses_composites_then_macro_averages():
    out = lmms_eval_summary({"object_counting_single": 1.0, "object_counting_multiple": 0.5,
                             "object_abs_distance": 0.2, "route_planning": 0.0}, REVSI)
    assert out["object_counting_acc"] == 0.75
    assert "object_counting_single_acc" not in out
    assert out["overall_acc"] == pytest.approx((0.75 + 0.2 + 0.0) / 3)


def test_vsibench_summary_names():
    out = lmms_eval_summary({"object_rel_direction_easy": 1.0, "object_rel_direction_medium": 0.5,
                             "object_rel_direction_hard": 0.0, "object_counting": 0.4}, VSI)
    assert out == {"object_counting_MRA:.5:.95:.05": 0.4, "object_rel_direction_accuracy": 0.5,
                   "overall": pytest.approx(0.45)}


PARTIAL = {"object_rel_direction_easy": 1.0, "object_rel_direction_hard": 0.0, "object_counting": 0.4}


def test_partial_composite_rules():
    """A set without relative direction's medium level: VLMEvalKit's rule (vsibench's default) keeps the two
    levels apart, three subscores in the overall; the revsi rule averages the levels present, two subscores."""
    complete = lmms_eval_summary(PARTIAL, VSI)
    assert complete == {"object_rel_direction_easy_accuracy": 1.0, "object_rel_direction_hard_accuracy": 0.0,
                        "object_counting_MRA:.5:.95:.05": 0.4, "overall": pytest.approx(1.4 / 3)}
    present = lmms_eval_summary(PARTIAL, resolve_protocol("vsibench", PARTIAL, "present"))
    assert present["object_rel_direction_accuracy"] == 0.5 and present["overall"] == pytest.approx(0.45)
    assert resolve_protocol("auto", ["object_counting_single"]).composite_rule == "present"
    assert resolve_protocol("revsi", [], "complete").composite_source.startswith("VLMEvalKit")
    revsi_partial = {"object_counting_single": 1.0, "object_abs_distance": 0.2}
    assert lmms_eval_summary(revsi_partial, REVSI)["object_counting_acc"] == 1.0
    assert lmms_eval_summary(revsi_partial, resolve_protocol("revsi", [], "complete")) == {
        "object_counting_single_acc": 1.0, "object_abs_distance_acc": 0.2, "overall_acc": pytest.approx(0.6)}
    assert answers.partial_composites(PARTIAL, VSI) == {
        "object_rel_direction_accuracy": ("object_rel_direction_medium",)}
    with pytest.raises(ScoreError, match="composites: expected"):
        resolve_protocol("revsi", [], "mean")


def test_resolve_protocol():
    assert resolve_protocol("auto", ["object_counting_single", "object_size_estimation"]).name == "revsi"
    assert resolve_protocol("auto", ["object_counting", "route_planning"]).name == "vsibench"
    assert resolve_protocol("auto", ["route_planning"]).name == "revsi"
    assert resolve_protocol("vsibench-legacy", ["object_counting_single"]).name == "vsibench-legacy"
    with pytest.raises(ScoreError, match="mixes ReVSI-only"):
        resolve_protocol("auto", ["object_counting", "object_counting_single"])


# ---------------------------------------------------------------------------------------
# readers
# ---------------------------------------------------------------------------------------
@pytest.fixture
def run_dir(tmp_path):
    d = tmp_path / "run"
    write_jsonl(d / "16_frame.jsonl", [
        rec("q1", "object_counting_single", "3", category="chair"),
        rec("q2", "object_rel_direction_forward_easy", "B", options=OPTS),
        rec("q3", "object_size_estimation", None, status="unanswerable"),
    ])
    write_jsonl(d / "all_frame.jsonl", [
        rec("q1", "object_counting_single", "4", budget="all", status="changed"),
        rec("q2", "object_rel_direction_forward_easy", "B", budget="all", options=OPTS),
        rec("q3", "object_size_estimation", "120", budget="all"),
    ])
    write_jsonl(d / "dummy_gt.jsonl", [
        {"id": "q1", "variant": "dummy-drop", "budget": 16, "question_type": "object_counting_single",
         "ground_truth": 0, "status": "changed"},
        {"id": "q2", "variant": "dummy-drop", "budget": 16, "question_type": "object_rel_direction_forward_easy",
         "ground_truth": None, "status": "unanswerable", "options": OPTS},
    ])
    return d


def test_load_run_dir(run_dir):
    rt = load_run_dir(run_dir)
    assert [t.key for t in rt.truths][:3] == [("q1", "budget", "16"), ("q2", "budget", "16"), ("q3", "budget", "16")]
    assert len(rt.truths) == 8 and rt.files[-1].endswith("dummy_gt.jsonl")
    by = {t.key: t for t in rt.truths}
    assert by[("q1", "dummy-drop", "16")].evidence_removed and by[("q3", "budget", "16")].evidence_removed
    assert by[("q1", "budget", "16")].scorable and not by[("q3", "budget", "16")].scorable
    assert by[("q2", "budget", "16")].option_letters == {"A", "B", "C"}


def test_run_dir_errors_name_file_line_field(tmp_path, run_dir):
    with pytest.raises(ScoreError, match="expected {budget}_frame.jsonl files"):
        load_run_dir(tmp_path)
    write_jsonl(run_dir / "32_frame.jsonl", [rec("q1", "object_counting_single", "3", budget=16)])
    with pytest.raises(ScoreError, match=r"32_frame.jsonl:1: num_frames: expected 32 \(the file is 32_frame.jsonl\)"):
        load_run_dir(run_dir)
    write_jsonl(run_dir / "32_frame.jsonl", [rec("q1", "object_counting_single", "3", budget=32),
                                             rec("q1", "object_counting_single", "3", budget=32)])
    with pytest.raises(ScoreError,
                       match=r"32_frame.jsonl:2: id: duplicate ground truth .* \(also .*32_frame.jsonl:1\)"):
        load_run_dir(run_dir)
    write_jsonl(run_dir / "32_frame.jsonl", [rec("q1", "object_counting", "3", budget=32, status="maybe")])
    with pytest.raises(ScoreError, match="32_frame.jsonl:1: status: expected one of kept, changed, unanswerable"):
        load_run_dir(run_dir)


def test_plain_predictions_and_errors(tmp_path):
    p = write_jsonl(tmp_path / "p.jsonl", [{"id": 7, "budget": "16", "prediction": "B"},
                                          {"id": "q", "variant": "dummy", "budget": "all", "prediction": 3}])
    a, b = load_predictions(p)
    assert a.key == ("7", "budget", "16") and b.key == ("q", "dummy", "all") and b.prediction == "3"
    for row, msg in [({"id": 1, "budget": 16}, r"p.jsonl:1: prediction: missing"),
                     ({"id": 1, "budget": 0, "prediction": "x"}, r"p.jsonl:1: budget: expected a frame budget"),
                     ({"id": 1, "budget": 16, "prediction": None}, r"p.jsonl:1: prediction: expected"),
                     ({"id": 1, "budget": 16, "prediction": "x", "variant": "blurred"},
                      r"p.jsonl:1: variant: expected 'budget' or a name starting with 'dummy'")]:
        write_jsonl(p, [row])
        with pytest.raises(ScoreError, match=msg):
            load_predictions(p)
    p.write_text('{"id": 1, "budget": 16, "prediction": "x"}\n{nope\n')
    with pytest.raises(ScoreError, match=r"p.jsonl:2: <line>: not valid JSON"):
        load_predictions(p)


# lmms-eval --log_samples lines for the revsi task, as its evaluation_tracker writes them.
# v0.7+: "doc" and "arguments" popped, single-request lists flattened, "resps" dropped when it
# equals "filtered_resps", "target" = str(doc_to_target); every metric field holds the doc
# (revsi_process_results returns {metric: doc}) with the "acc" it computed.
def _revsi_doc(qid, qtype, gt, num_frames, acc, options=None):
    return {"id": qid, "scene_id": "s", "num_frames": num_frames, "question_type": qtype, "question": "?",
            "options": options, "ground_truth": gt, "acc": acc}


REVSI_METRICS = ["overall_acc", "object_abs_distance_acc", "object_counting_acc", "object_rel_direction_acc",
                 "object_rel_distance_acc", "object_size_estimation_acc", "room_size_estimation_acc",
                 "route_planning_acc"]


def _v07_line(doc_id, doc, response):
    return {"doc_id": doc_id, "target": str(doc["ground_truth"]), "filtered_resps": response,
            "token_counts": [None], "doc_hash": "0" * 64, **{m: doc for m in REVSI_METRICS},
            "input": "These are frames of a video.\n?"}


def test_log_samples_all_three_layouts(tmp_path):
    d1 = _revsi_doc("q2", "object_rel_direction_forward_easy", "B", 16, 1.0, OPTS)
    d2 = _revsi_doc("q1", "object_counting_single", "3", 16, 0.4, None)  # "2 chairs" vs 3: 1/3 -> 0.4
    v07 = tmp_path / "logs" / "model" / "20260801_101010_samples_revsi_16_frame.jsonl"
    write_jsonl(v07, [_v07_line(0, d1, "B. right"), _v07_line(1, d2, "2 chairs")])
    # before v0.7: nested lists and "resps" kept; before v0.4: "doc" kept too
    old = {"doc_id": 0, "target": "B", "resps": [["B. right"]], "filtered_resps": ["B. right"], "doc_hash": "x",
           **{m: d1 for m in REVSI_METRICS}}
    oldest = {"doc_id": 0, "doc": {k: v for k, v in d1.items() if k != "acc"}, "target": "B",
              "arguments": [["?", {"max_new_tokens": 16}]], "resps": [["B. right"]], "filtered_resps": ["B. right"],
              "overall_acc": 1.0}
    p_old = write_jsonl(tmp_path / "old_samples_revsi_16_frame.jsonl", [old])
    p_oldest = write_jsonl(tmp_path / "oldest_samples_revsi_16_frame.jsonl", [oldest])
    a, b = load_predictions(v07)
    assert (a.key, a.prediction, a.logged_score, a.logged_ground_truth) == \
        (("q2", "budget", "16"), "B. right", 1.0, "B")
    assert (b.key, b.prediction, b.logged_score) == (("q1", "budget", "16"), "2 chairs", 0.4)
    assert [p.prediction for p in load_predictions(p_old)] == ["B. right"]
    [c] = load_predictions(p_oldest)
    assert c.key == ("q2", "budget", "16") and c.logged_score is None
    # our scores reproduce the logged ones
    rows = [evaluate_row(REVSI, truth(qid="q2", qtype="object_rel_direction_forward_easy", gt="B", options=OPTS), a),
            evaluate_row(REVSI, truth(qid="q1", qtype="object_counting_single", gt="3"), b)]
    assert [r.score for r in rows] == [a.logged_score, pytest.approx(b.logged_score)]


def test_report_checks_logged_scores(run_dir, tmp_path):
    d_ok = _revsi_doc("q2", "object_rel_direction_forward_easy", "B", 16, 1.0, OPTS)
    d_bad = _revsi_doc("q1", "object_counting_single", "3", 16, 1.0)  # "2 chairs" for 3 is 0.4, not 1.0
    d_stale = _revsi_doc("q1", "object_counting_single", "5", "all", 1.0)  # the run says 4
    logs = write_jsonl(tmp_path / "logs" / "x_samples_revsi_16_frame.jsonl",
                       [_v07_line(0, d_ok, "B"), _v07_line(1, d_bad, "2 chairs"), _v07_line(2, d_stale, "5")])
    report = build_report(load_run_dir(run_dir), load_predictions(logs), splits=2, learned=False)
    c = report.lmms_check
    assert (c.compared, c.agreed) == (2, 1)
    assert c.disagreements == ((f"{logs}:2", 1.0, pytest.approx(0.4)),)
    assert c.gt_mismatch == ((f"{logs}:3", "5", "4"),)
    assert "lmms-eval check: 1/2 logged row scores reproduced" in render_text(report)


def test_log_samples_budget_from_task_name_and_errors(tmp_path):
    d = _revsi_doc("q1", "object_counting_single", "3", 32, 1.0)
    del d["num_frames"]
    p = write_jsonl(tmp_path / "x_samples_revsi_32_frame.jsonl", [_v07_line(0, d, "3")])
    assert load_predictions(p)[0].budget == "32"
    del d["id"]
    write_jsonl(p, [_v07_line(0, d, "3")])
    with pytest.raises(ScoreError, match=r"x_samples_revsi_32_frame.jsonl:1: doc.id: missing"):
        load_predictions(p)
    write_jsonl(p, [{"doc_id": 0, "target": "3", "filtered_resps": "3", "exact_match": 1.0}])
    with pytest.raises(ScoreError, match=r":1: doc: no logged dataset row"):
        load_predictions(p)


# ---------------------------------------------------------------------------------------
# hallucination and evidence sensitivity
# ---------------------------------------------------------------------------------------
def _pred(t, text):
    return Prediction(t.id, t.variant, t.budget, text)


def test_hallucination_on_constructed_dummies():
    def mk(qid, qtype, gt, status, options=None):
        return TruthRow.from_json({**rec(qid, qtype, gt, status=status, options=options), "variant": "dummy-black"},
                                 "d.jsonl", 1)
    count = [mk(f"c{i}", "object_counting_single", 0, "changed") for i in range(5)]
    size = [mk(f"s{i}", "object_size_estimation", None, "unanswerable") for i in range(3)]
    mcq = [mk(f"m{i}", "object_rel_distance_closest", None, "unanswerable", OPTS) for i in range(4)]
    preds = ([_pred(t, x) for t, x in zip(count, ["0", "3", "2 chairs", "There are none", "zero"])]
             + [_pred(t, x) for t, x in zip(size, ["120", "unknown", "45.5 cm"])]
             + [_pred(t, x) for t, x in zip(mcq, ["B", "a.", "None of the above", "D"])])
    m = match_predictions(REVSI, count + size + mcq, preds)
    cells = {c.question_type: c for c in hallucination_cells(m.rows)}
    c = cells["object_counting_single"]
    # revsi: "0" -> zero; "3", "2" -> hallucinated; "There", "zero" -> unparsed (revsi takes no words)
    assert (c.rule, c.n, c.hallucinated, c.zero, c.unparsed, c.abstained) == ("nonzero_count", 5, 2, 1, 2, 0)
    s = cells["object_size_estimation"]
    # "unknown" is an abstention in words (vistest.answers.is_abstention_text)
    assert (s.rule, s.n, s.hallucinated, s.abstained, s.rate) == ("confident_answer", 3, 2, 1, pytest.approx(2 / 3))
    q = cells["object_rel_distance_closest"]
    assert (q.hallucinated, q.unparsed, q.abstained) == (2, 2, 0)  # "D" is no option letter here
    # vsibench's parser reads words: "zero" is a count of 0, "There are none" still unparsed
    c2 = {x.question_type: x for x in hallucination_cells(match_predictions(VSI, count, preds[:5]).rows)}
    assert (c2["object_counting_single"].zero, c2["object_counting_single"].hallucinated) == (2, 2)


def test_evidence_sensitivity_pairs_dummy_with_real():
    real = [truth(qid=f"q{i}", qtype="object_counting_single", gt="3") for i in range(2)]
    dummy = [TruthRow.from_json({**rec(f"q{i}", "object_counting_single", 0), "variant": "dummy"}, "d", 1)
             for i in range(2)]
    preds = [_pred(real[0], "3"), _pred(real[1], "3"), _pred(dummy[0], "3"), _pred(dummy[1], "0")]
    [cell] = sensitivity_cells(match_predictions(REVSI, real + dummy, preds).rows)
    # q0: blind to the evidence (3 on both: 1 - 1); q1: looks (3 vs 0: 1 - 0)
    assert (cell.variant, cell.n, cell.real, cell.dummy, cell.sensitivity) == ("dummy", 2, 1.0, 0.5, 0.5)


# ---------------------------------------------------------------------------------------
# the report and the CLI
# ---------------------------------------------------------------------------------------
def test_report_files_and_rerun_is_identical(run_dir, tmp_path):
    preds = write_jsonl(tmp_path / "p.jsonl", [
        {"id": "q1", "budget": 16, "prediction": "3"}, {"id": "q2", "budget": 16, "prediction": "B"},
        {"id": "q3", "budget": 16, "prediction": "80"},  # unanswerable at 16: a hallucination
        {"id": "q1", "budget": "all", "prediction": "2"}, {"id": "q2", "budget": "all", "prediction": "A"},
        {"id": "q1", "variant": "dummy-drop", "budget": 16, "prediction": "3"},
        {"id": "q2", "variant": "dummy-drop", "budget": 16, "prediction": "I cannot tell"},
        {"id": "nope", "budget": 16, "prediction": "1"}])
    rt = load_run_dir(run_dir)
    report = build_report(rt, load_predictions(preds), prediction_sources=[str(preds)], splits=5)
    assert report.protocol.name == "revsi"
    cells = {(c.model, c.budget, c.question_type): c for c in report.scores}
    assert cells[("predictions", "16", "object_counting_single")].score == 1.0
    assert cells[("predictions", "all", "object_counting_single")].score == pytest.approx(0.1)  # |2-4|/4 = 0.5
    assert cells[("predictions", "all", "object_size_estimation")].n == 0
    assert report.n_unmatched == 1
    out = tmp_path / "out"
    written = write_report(report, out)
    assert set(written) == {"report.json", "report.md", "rows.jsonl", "accuracy_vs_budget.png", "real_vs_dummy.png"}
    doc = json.loads((out / "report.json").read_text())
    assert doc["protocol"]["name"] == "revsi" and len(doc["protocol"]["mra_thresholds"]) == 10
    h = {(c["variant"], c["question_type"]): c for c in doc["hallucination"]}
    assert h[("budget", "object_size_estimation")]["hallucinated"] == 1
    assert h[("dummy-drop", "object_counting_single")]["hallucinated"] == 1
    assert h[("dummy-drop", "object_rel_direction_forward_easy")]["abstained"] == 1
    assert doc["evidence_sensitivity"][0]["sensitivity"] == 0.0
    md = (out / "report.md").read_text()
    assert "![score vs frame budget](accuracy_vs_budget.png)" in md and "## Hallucination" in md
    first = {n: p.read_bytes() for n, p in written.items()}
    written2 = write_report(build_report(rt, load_predictions(preds), prediction_sources=[str(preds)], splits=5), out)
    assert {n: p.read_bytes() for n, p in written2.items()} == first
    text = render_text(report)
    assert "overall [lmms-eval overall_acc; composites: present]" in text
    assert "composites: present (a group's members present are averaged" in text
    # the set holds one counting type of two and one relative-direction level of four: both groups are partial
    assert "partial group object_counting_acc: no object_counting_multiple in this set" in text
    assert doc["protocol"]["composite_rule"] == "present"
    assert doc["protocol"]["partial_composites"]["object_counting_acc"] == ["object_counting_multiple"]


def test_cli_score_and_baseline(run_dir, tmp_path):
    runner = CliRunner()
    base = tmp_path / "base.jsonl"
    r = runner.invoke(main, ["baseline", "-r", str(run_dir), "-o", str(base)])
    assert r.exit_code == 0, r.output
    assert len(base.read_text().splitlines()) == 8  # every row, dummies included
    r = runner.invoke(main, ["score", str(base), "-r", str(run_dir), "-o", str(tmp_path / "o"), "--splits", "3"])
    assert r.exit_code == 0, r.output
    assert "Scores on the real videos" in r.output and (tmp_path / "o" / "report.json").exists()
    r = runner.invoke(main, ["score", str(base), "-r", str(run_dir), "-o", str(tmp_path / "c"), "--splits", "3",
                             "--composites", "complete", "--no-learned"])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "c" / "report.json").read_text())
    assert doc["protocol"]["composite_rule"] == "complete"
    summary = next(s for s in doc["summary"] if s["budget"] == "16" and s["model"] == "predictions")
    assert "object_counting_single_acc" in summary and "object_counting_acc" not in summary
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": "q1", "budget": 16}])
    r = runner.invoke(main, ["score", str(bad), "-r", str(run_dir)])
    assert r.exit_code != 0 and "bad.jsonl:1: prediction: missing required field" in r.output
