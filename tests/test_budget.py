"""GT(frames): each rule on constructed scenes whose answer is known by hand.

Visibility tables are built directly (no rasterisation): ``visible[frame, object]`` is set
to the fraction given in each test, 0 elsewhere, NaN rows for invalid frames.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from vistest.budget.config import TruthConfig
from vistest.budget.truth import (CHANGED, KEPT, UNANSWERABLE, budget_file_name, budget_jsonl, budget_truth,
                                  summary_table, write_budget_files)
from vistest.budget.rows import REAL_FIELDS, REAL_VARIANT, ROW_ONLY_FIELDS, TruthRow, question_record, real_row
from vistest.cli import main
from vistest.budget.seen import SeenRule
from vistest.errors import InputError
from vistest.questions import parse_questions
from vistest.scene import FORMAT, Scene
from vistest.visibility.table import Visibility


def make_scene(objects, frame_indices, invalid=(), fps=30.0, scene_id="s1") -> Scene:
    """Identity poses (None for ``invalid``); objects [(id, label)] are unit boxes on a line."""
    return Scene.from_dict({
        "format": FORMAT, "scene_id": scene_id, "fps": fps, "image_size": [64, 48],
        "camera": {"fx": 50.0, "fy": 50.0, "cx": 31.5, "cy": 23.5},
        "frames": [{"index": int(f), "time": f / fps,
                    "camera_to_world": None if f in invalid else np.eye(4).tolist()} for f in frame_indices],
        "objects": [{"id": oid, "label": lab, "center": [k, 0, 3], "size": [0.5, 0.5, 0.5],
                     "rotation": np.eye(3).tolist()} for k, (oid, lab) in enumerate(objects)]})


def make_vis(scene: Scene, seen: dict, nan_invalid=True) -> Visibility:
    """``seen``: {object_id: {frame_index: visible fraction}}; rows follow ``scene.frames``."""
    fidx = np.array([f.index for f in scene.frames], dtype=np.int64)
    valid = np.array([f.valid for f in scene.frames], dtype=bool)
    ids = np.array([o.id for o in scene.objects])
    vis = np.zeros((len(fidx), len(ids)))
    row = {int(f): r for r, f in enumerate(fidx)}
    for c, oid in enumerate(ids):
        for f, v in seen.get(str(oid), {}).items():
            vis[row[f], c] = v
    if nan_invalid:
        vis[~valid] = np.nan
    bbox = np.full(vis.shape + (4,), np.nan)
    return Visibility(scene.scene_id, vis.copy(), vis, bbox, ids, fidx, valid, {"occlusion": "test"})


def questions(*rows, scene_id="s1"):
    base = {"scene_id": scene_id, "question": "?"}
    return parse_questions([json.dumps({**base, "id": f"q{i}", **r}) for i, r in enumerate(rows)], source="q.jsonl")


def item(truth, budget, qid):
    [it] = [it for it in truth.for_budget(budget) if it.question.id == qid]
    return it


# uniform, N = 10: budget 4 -> linspace(0, 9, 4) = [0, 3, 6, 9]; budget 2 -> [0, 9]
OBJS = [("c1", "chair"), ("c2", "chair"), ("c3", "chair"), ("t1", "table"), ("l1", "lamp"), ("b1", "bed")]


def counting_case():
    scene = make_scene(OBJS, range(10))
    vis = make_vis(scene, {"c1": {0: 0.2}, "c2": {5: 0.3}, "c3": {7: 0.05, 8: 0.3}, "t1": {9: 0.5},
                           "l1": {5: 0.9}})
    qs = questions(
        {"question_type": "object_counting", "category": "chair", "ground_truth": "3"},
        {"question_type": "object_counting_multiple", "category": ["chair", "table"], "ground_truth": 4},
        {"question_type": "object_counting_single", "category": "lamp", "ground_truth": 1},
        {"question_type": "object_counting_single", "category": "lamp", "ground_truth": 1, "allow_zero": True},
        {"question_type": "object_counting", "category": "chair", "ground_truth": 2},
    )
    return scene, vis, qs


def test_counting_rules():
    scene, vis, qs = counting_case()
    truth = budget_truth(scene, vis, qs, TruthConfig(budgets=(4, "all")))
    # budget 4 -> frames 0, 3, 6, 9: c1 seen (frame 0), c2 only at 5, c3 at 7 (0.05, not > 5%) and 8
    it = item(truth, 4, "q0")
    assert (it.status, it.reason, it.ground_truth) == (CHANGED, "count_reduced", "1")  # string stays string
    assert it.evidence_frames == (0,) and it.original_ground_truth == "3"
    it = item(truth, 4, "q1")  # chairs (1) + table (t1 at 9) = 2
    assert (it.status, it.ground_truth) == (CHANGED, 2)
    it = item(truth, 4, "q2")  # lamp only at 5 -> none seen
    assert (it.status, it.reason, it.ground_truth, it.unseen) == (UNANSWERABLE, "category_unseen", None, ("lamp",))
    it = item(truth, 4, "q3")  # the same, allow_zero: the count 0 is an answer
    assert (it.status, it.reason, it.ground_truth) == (CHANGED, "category_unseen", 0)
    # all frames: chairs 3 (c3 at 8), lamp 1
    assert [item(truth, "all", q).status for q in ("q0", "q1", "q2", "q3")] == [KEPT] * 4
    assert item(truth, "all", "q0").ground_truth == "3"
    it = item(truth, "all", "q4")  # the question says 2 but 3 chairs are seen: reported, not hidden
    assert (it.status, it.reason, it.ground_truth) == (CHANGED, "count_exceeds_original", 3)


def test_seen_threshold_is_strict_and_a_parameter():
    scene = make_scene([("c1", "chair")], range(4))
    vis = make_vis(scene, {"c1": {0: 0.05, 1: 0.05, 2: 0.05, 3: 0.05}})
    qs = questions({"question_type": "object_size_estimation", "objects": ["c1"], "ground_truth": 40})
    assert budget_truth(scene, vis, qs, TruthConfig(budgets=("all",))).items[0].status == UNANSWERABLE
    assert budget_truth(scene, vis, qs, TruthConfig(budgets=("all",), seen_threshold=0.049)).items[0].status == KEPT


def test_object_questions_need_every_object_seen():
    scene = make_scene(OBJS, range(10))
    vis = make_vis(scene, {"c1": {0: 0.2}, "c2": {5: 0.3}, "t1": {9: 0.5, 3: 0.1}})
    qs = questions(
        {"question_type": "object_size_estimation", "objects": ["t1"], "ground_truth": 80},
        {"question_type": "object_abs_distance", "objects": ["c1", "c2"], "ground_truth": "1.5"},
        {"question_type": "object_rel_direction_hard", "objects": ["c1", "t1", "c2"],
         "options": ["A. left", "B. right"], "ground_truth": "A"},
    )
    truth = budget_truth(scene, vis, qs, TruthConfig(budgets=(4, "all")))
    it = item(truth, 4, "q0")
    assert (it.status, it.reason, it.ground_truth, it.evidence_frames) == (KEPT, "objects_seen", 80, (3, 9))
    it = item(truth, 4, "q1")
    assert (it.status, it.reason, it.unseen, it.ground_truth) == (UNANSWERABLE, "object_unseen", ("c2",), None)
    assert item(truth, 4, "q2").unseen == ("c2",)
    assert [it.status for it in truth.for_budget("all")] == [KEPT, KEPT, KEPT]


def appearance_case():
    scene = make_scene(OBJS, range(10))
    # first sightings over all frames: c1 at 1, t1 at 2, l1 at 3 -> chair, table, lamp
    vis = make_vis(scene, {"c1": {1: 0.2, 9: 0.2}, "t1": {2: 0.2, 6: 0.2, 9: 0.2}, "l1": {3: 0.2, 6: 0.2},
                           "c2": {6: 0.3}})
    opts = ["A. chair, table, lamp", "B. lamp, chair, table", "C. table, chair, lamp", "D. lamp, table, chair"]
    qs = questions(
        {"question_type": "obj_appearance_order", "objects": ["c1", "t1", "l1"], "options": opts, "ground_truth": "A"},
        {"question_type": "obj_appearance_order", "objects": ["c1", "t1"], "ground_truth": ["c1", "t1"]},
        {"question_type": "obj_appearance_order", "objects": ["c1", "t1", "l1"], "options": opts[:3],
         "ground_truth": "A"},
        {"question_type": "obj_appearance_order", "category": ["chair", "lamp"],
         "options": ["A. chair, lamp", "B. lamp, chair"], "ground_truth": "A"},
    )
    return scene, vis, qs


def test_appearance_order_recomputed_from_first_sightings():
    scene, vis, qs = appearance_case()
    truth = budget_truth(scene, vis, qs, TruthConfig(budgets=(4, 2, "all")))
    # all frames: the original order
    assert [item(truth, "all", q).status for q in ("q0", "q1", "q2", "q3")] == [KEPT] * 4
    # budget 4 = frames 0, 3, 6, 9: l1 first at 3, t1 at 6, c1 at 9 -> lamp, table, chair = D
    it = item(truth, 4, "q0")
    assert (it.status, it.reason, it.ground_truth) == (CHANGED, "order_changed", "D")
    it = item(truth, 4, "q1")
    assert (it.status, it.ground_truth) == (CHANGED, ["t1", "c1"])
    it = item(truth, 4, "q2")  # the same order, but no option D
    assert (it.status, it.reason) == (UNANSWERABLE, "order_not_in_options")
    # by category: chairs first at 6 (c2; c1 only at 9), lamp at 3 -> B
    it = item(truth, 4, "q3")
    assert (it.status, it.ground_truth) == (CHANGED, "B")
    # budget 2 = frames 0, 9: c1 and t1 both first seen at 9 -> tie; l1 never seen
    it = item(truth, 2, "q1")
    assert (it.status, it.reason) == (UNANSWERABLE, "first_sighting_tie")
    it = item(truth, 2, "q0")
    assert (it.status, it.reason, it.unseen) == (UNANSWERABLE, "object_unseen", ("l1",))


def test_room_size_and_route_need_a_minimum_budget():
    scene = make_scene(OBJS, range(64))
    vis = make_vis(scene, {})
    qs = questions(
        {"question_type": "room_size_estimation", "ground_truth": 20.5},
        {"question_type": "route_planning", "options": ["A. left", "B. right"], "ground_truth": "B"},
    )
    truth = budget_truth(scene, vis, qs, TruthConfig(budgets=(16, 32, "all")))
    assert [(it.status, it.reason) for it in truth.for_budget(16)] == [(UNANSWERABLE, "budget_below_minimum")] * 2
    assert [it.status for it in truth.for_budget(32)] == [KEPT, KEPT]
    assert [it.status for it in truth.for_budget("all")] == [KEPT, KEPT]
    assert item(truth, 32, "q0").ground_truth == 20.5
    truth = budget_truth(scene, vis, qs, TruthConfig(budgets=(16,), min_budget_room_route=16))
    assert [it.status for it in truth.for_budget(16)] == [KEPT, KEPT]


@pytest.mark.parametrize("nan_invalid", [True, False])
def test_invalid_frames_witness_nothing_and_are_reported(nan_invalid):
    # frame 3 has no pose; its row says t1 covers 90% (NaN or not, it must not count)
    scene = make_scene(OBJS, range(10), invalid={3})
    vis = make_vis(scene, {"t1": {3: 0.9}, "c1": {6: 0.2}}, nan_invalid=nan_invalid)
    qs = questions({"question_type": "object_size_estimation", "objects": ["t1"], "ground_truth": 80},
                   {"question_type": "object_size_estimation", "objects": ["c1"], "ground_truth": 50})
    truth = budget_truth(scene, vis, qs, TruthConfig(budgets=(4, "all")))
    sel4 = truth.selections[0]
    assert sel4.frame_indices == (0, 3, 6, 9) and sel4.invalid_frames == (3,) and sel4.witnesses == (0, 6, 9)
    assert (item(truth, 4, "q0").status, item(truth, 4, "q0").reason) == (UNANSWERABLE, "object_unseen")
    assert item(truth, 4, "q1").status == KEPT
    assert truth.selections[1].invalid_frames == (3,)
    assert item(truth, "all", "q0").status == UNANSWERABLE
    rec = truth.row(item(truth, 4, "q0")).to_json()
    assert rec["invalid_frames"] == [3]


def test_selected_frames_without_visibility_rows():
    # the scene describes even frames only (N = 11); uniform 4 -> linspace(0, 10, 4) = [0, 3, 6, 10]
    scene = make_scene(OBJS, range(0, 11, 2))
    vis = make_vis(scene, {"c1": {6: 0.2}})
    qs = questions({"question_type": "object_size_estimation", "objects": ["c1"], "ground_truth": 50})
    truth = budget_truth(scene, vis, qs, TruthConfig(budgets=(4,)))
    sel = truth.selections[0]
    assert sel.frame_indices == (0, 3, 6, 10) and sel.frames_without_visibility == (3,)
    assert sel.witnesses == (0, 6, 10) and truth.items[0].status == KEPT


def test_no_valid_frames():
    scene = make_scene(OBJS, range(10), invalid=set(range(10)) - {5})
    vis = make_vis(scene, {"c1": {5: 0.5}})
    qs = questions({"question_type": "room_size_estimation", "ground_truth": 20.5},
                   {"question_type": "object_counting", "category": "chair", "ground_truth": 1})
    truth = budget_truth(scene, vis, qs, TruthConfig(budgets=(2, "all"), min_budget_room_route=1))
    assert [(it.status, it.reason) for it in truth.for_budget(2)] == [(UNANSWERABLE, "no_valid_frames")] * 2
    assert [it.status for it in truth.for_budget("all")] == [KEPT, KEPT]


def test_same_budget_two_profiles_change_status():
    # N = 10, budget 4: uniform -> [0, 3, 6, 9]; vlmevalkit-generic (step N/(n+1) = 2) -> [2, 4, 6, 8]
    scene = make_scene(OBJS, range(10))
    vis = make_vis(scene, {"c1": {3: 0.3}})
    qs = questions({"question_type": "object_size_estimation", "objects": ["c1"], "ground_truth": 50})
    a = budget_truth(scene, vis, qs, TruthConfig(budgets=(4,), profile="uniform"))
    b = budget_truth(scene, vis, qs, TruthConfig(budgets=(4,), profile="vlmevalkit-generic"))
    assert a.selections[0].frame_indices == (0, 3, 6, 9) and b.selections[0].frame_indices == (2, 4, 6, 8)
    assert a.items[0].status == KEPT and b.items[0].status == UNANSWERABLE


def test_profile_uses_scene_fps():
    # 100 frames at 30 fps: llava-vid budget 16 takes every 30th frame [0, 30, 60, 90];
    # uniform 16 takes floor(6.6 i) = 0, 6, 13, 19, 26, 33, ... (not 30)
    scene = make_scene(OBJS, range(100), fps=30.0)
    vis = make_vis(scene, {"b1": {30: 0.4}})
    qs = questions({"question_type": "object_size_estimation", "objects": ["b1"], "ground_truth": 200})
    assert budget_truth(scene, vis, qs, TruthConfig(budgets=(16,), profile="llava-vid")).items[0].status == KEPT
    assert budget_truth(scene, vis, qs, TruthConfig(budgets=(16,), profile="uniform")).items[0].status == UNANSWERABLE


def test_inconsistent_inputs_raise():
    scene, vis, qs = counting_case()
    other = make_scene(OBJS, range(10), scene_id="s2")
    with pytest.raises(InputError, match="visibility: scene_id: expected 's2' .*, got 's1'"):
        budget_truth(other, vis, questions({"question_type": "object_counting", "category": "chair",
                                            "ground_truth": 1}, scene_id="s2"))
    with pytest.raises(InputError, match=r"q.jsonl:1: scene_id: expected 's2'"):
        budget_truth(other, make_vis(other, {}), qs)
    with pytest.raises(InputError, match="budgets: budget 4 given twice"):
        budget_truth(scene, vis, qs, TruthConfig(budgets=(4, 4)))
    with pytest.raises(InputError, match="unknown sampler profile"):
        budget_truth(scene, vis, qs, TruthConfig(profile="vlm"))
    small = make_scene(OBJS[:2], range(10))
    with pytest.raises(InputError, match="visibility: object_ids: no column for object"):
        budget_truth(scene, make_vis(small, {}), qs)


def test_write_files_and_summary(tmp_path):
    scene, vis, qs = counting_case()
    truth = budget_truth(scene, vis, qs, TruthConfig(budgets=(4, "all")))
    paths = write_budget_files(truth, tmp_path / "out")
    assert [p.name for p in paths] == ["4_frame.jsonl", "all_frame.jsonl"] == [budget_file_name(4), "all_frame.jsonl"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["4_frame.jsonl", "all_frame.jsonl"]  # no temp left
    recs = [json.loads(line) for line in paths[0].read_text().splitlines()]
    assert len(recs) == len(qs)
    r = recs[0]
    assert (r["id"], r["num_frames"], r["frame_indices"], r["ground_truth"], r["status"], r["reason"],
            r["original_ground_truth"]) == ("q0", 4, [0, 3, 6, 9], "1", "changed", "count_reduced", "3")
    assert r["question_type"] == "object_counting" and r["category"] == "chair"
    assert json.loads(paths[1].read_text().splitlines()[0])["num_frames"] == "all"
    before = paths[0].read_bytes()
    write_budget_files(truth, tmp_path / "out")
    assert paths[0].read_bytes() == before  # rerun: same bytes
    text = summary_table(truth)
    lines = text.splitlines()
    # budget 4: q0 changed, q2 unanswerable (object_counting_single: q2 unanswerable, q3 changed)
    assert any(line.split() == ["object_counting", "0", "2", "0"] for line in lines)
    assert any(line.split() == ["object_counting_single", "0", "1", "1"] for line in lines)
    assert any(line.split() == ["total", "0", "4", "1"] for line in lines)
    assert any(line.split() == ["total", "4", "1", "0"] for line in lines)  # all frames


def test_cli_frames():
    runner = CliRunner()
    res = runner.invoke(main, ["frames", "--profile", "vlmevalkit-chunk-center", "--budget", "4", "--num-frames", "10"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output) == [1, 3, 6, 9]
    res = runner.invoke(main, ["frames", "-p", "llava-vid", "-n", "16", "-N", "100", "--fps", "30",
                               "-O", "sample_fps=2"])
    assert json.loads(res.output) == [0, 15, 30, 45, 60, 75, 90]
    res = runner.invoke(main, ["frames", "-p", "uniform", "-n", "zero", "-N", "10"])
    assert res.exit_code == 2 and "Error: --budget: expected a positive integer or 'all'" in res.output


def test_cli_budget(tmp_path):
    scene, vis, qs = counting_case()
    scene.save(tmp_path / "scene.json")
    vis.save(tmp_path / "vis.npz")
    q = tmp_path / "q.jsonl"
    q.write_text("".join(json.dumps(dict(x.record)) + "\n" for x in qs))
    runner = CliRunner()
    args = [str(tmp_path / "scene.json"), str(q), "--budgets", "4,all", "-o", str(tmp_path / "out"),
            "--visibility", str(tmp_path / "vis.npz")]
    res = runner.invoke(main, ["budget", *args])
    assert res.exit_code == 0, res.output
    assert "total" in res.output and "object_counting_multiple" in res.output
    assert json.loads((tmp_path / "out" / "4_frame.jsonl").read_text().splitlines()[0])["ground_truth"] == "1"
    # bad question input: the error names the file, line and field
    q.write_text(q.read_text() + json.dumps({"id": "x", "scene_id": "s1", "question_type": "object_counting",
                                             "question": "?", "category": "sofa", "ground_truth": 1}) + "\n")
    res = runner.invoke(main, ["budget", *args])
    assert res.exit_code == 2
    assert f"Error: {q}:6: category: category 'sofa' is absent from scene 's1'" in res.output


def test_cli_budget_computes_visibility_when_not_given(tmp_path):
    # one 2 m box 3 m in front of every camera: covers ~40% of the image, so it is seen
    doc = make_scene([("c1", "chair")], range(8)).to_dict()
    doc["objects"][0].update(center=[0.0, 0.0, 3.0], size=[2.0, 2.0, 0.5])
    Scene.from_dict(doc).save(tmp_path / "scene.json")
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"id": 1, "scene_id": "s1", "question_type": "object_counting", "question": "?",
                             "category": "chair", "ground_truth": 1}) + "\n")
    res = CliRunner().invoke(main, ["budget", str(tmp_path / "scene.json"), str(q), "--budgets", "2,all",
                                          "-o", str(tmp_path / "out"), "--quiet"])
    assert res.exit_code == 0, res.output
    for name in ("2_frame.jsonl", "all_frame.jsonl"):
        rec = json.loads((tmp_path / "out" / name).read_text())
        assert (rec["status"], rec["ground_truth"]) == ("kept", 1)


# ---- seen rules and the reasons rows give ---------------------------------------------------------
def small_box_scene(tmp_path=None):
    """One 0.3 m x 0.3 m x 0.1 m box 3 m ahead (front face at 2.95 m) of frames 0-5, behind the
    camera in frames 6-9 (turned 180 degrees about y). Its silhouette from frames 0-5 is the front
    face, a square of side fx * 0.3 / 2.95 pixels: under 1% of the 64 x 48 image."""
    doc = make_scene([("c1", "chair")], range(10)).to_dict()
    turned = np.diag([-1.0, 1.0, -1.0, 1.0]).tolist()
    for f in doc["frames"][6:]:
        f["camera_to_world"] = turned
    doc["objects"][0].update(center=[0.0, 0.0, 3.0], size=[0.3, 0.3, 0.1])
    scene = Scene.from_dict(doc)
    if tmp_path is not None:
        scene.save(tmp_path / "scene.json")
    side_px = 50.0 * 0.3 / 2.95
    return scene, side_px ** 2 / (64 * 48), side_px ** 2


def test_an_in_view_object_under_the_threshold_says_why(tmp_path):
    from vistest.visibility.table import compute_visibility

    scene, share, pixels = small_box_scene()
    vis = compute_visibility(scene, occlusion="boxes")
    qs = questions({"question_type": "object_size_estimation", "objects": ["c1"], "ground_truth": 30})
    truth = budget_truth(scene, vis, qs, TruthConfig(budgets=("all",)))
    it = truth.items[0]
    assert (it.status, it.reason, it.unseen) == (UNANSWERABLE, "object_unseen", ("c1",))
    [d] = it.unseen_detail
    assert (d["frames"], d["in_view"], d["in_field_of_view"]) == (10, 6, 6)
    assert d["max"] == pytest.approx(share, rel=1e-9) and d["max_frame"] == 0
    assert 0.001 < share < 0.01  # under 1% of the image: two significant digits
    want = (f"chair c1: in view in 6 of 10 frames, at most {100 * share:.2g}% of the image "
            f"(frame 0; rule: > 5% of the image)")
    assert d["text"] == want and want in it.reason_text
    rec = truth.row(it).to_json()
    assert rec["unseen_detail"][0]["text"] == want and rec["reason_text"] == it.reason_text
    assert "occlusion_sensitive" not in rec  # one box: nothing hides it
    # the alternatives: its whole silhouette shows; its pixel count passes a low bar only
    assert budget_truth(scene, vis, qs, TruthConfig(budgets=("all",), seen_threshold=SeenRule("silhouette",
                                                    0.1))).items[0].status == KEPT
    assert budget_truth(scene, vis, qs, TruthConfig(budgets=("all",), seen_threshold=SeenRule("pixels",
                                                    pixels - 1))).items[0].status == KEPT
    it = budget_truth(scene, vis, qs, TruthConfig(budgets=("all",), seen_threshold=SeenRule("pixels"))).items[0]
    assert it.status == UNANSWERABLE
    assert it.unseen_detail[0]["text"].endswith(f"at most {pixels:.0f} pixels (frame 0; rule: >= 1024 pixels "
                                                f"(native resolution))")
    assert it.unseen_detail[0]["max"] == pytest.approx(pixels, rel=1e-9)


def test_an_object_never_in_view_and_one_hidden_say_so():
    scene = make_scene([("c1", "chair"), ("t1", "table")], range(4))
    vis = make_vis(scene, {"t1": {0: 0.0}})
    proj = vis.projected.copy()
    proj[:, 1] = 0.3  # the table's box is in the field of view, the mesh hides it
    vis = Visibility(vis.scene_id, proj, vis.visible, vis.bbox, vis.object_ids, vis.frame_index, vis.valid,
                     {"occlusion": "mesh"})
    qs = questions({"question_type": "object_abs_distance", "objects": ["c1", "t1"], "ground_truth": 2.0})
    it = budget_truth(scene, vis, qs, TruthConfig(budgets=("all",))).items[0]
    texts = [d["text"] for d in it.unseen_detail]
    assert texts == ["chair c1: outside the field of view in all 4 frames",
                     "table t1: inside the field of view in 4 of 4 frames but hidden there (occlusion mesh)"]


def test_answers_that_depend_on_occlusion_are_flagged():
    scene = make_scene([("c1", "chair")], range(4))
    vis = make_vis(scene, {"c1": {0: 0.02, 1: 0.02}})
    proj = vis.visible.copy()
    proj[:2, 0] = 0.2  # 20% of the image without occlusion, 2% after it
    qs = questions({"question_type": "object_size_estimation", "objects": ["c1"], "ground_truth": 30})
    for occlusion, flagged in (("mesh", True), ("none", False)):
        v = Visibility(vis.scene_id, proj, vis.visible, vis.bbox, vis.object_ids, vis.frame_index, vis.valid,
                       {"occlusion": occlusion})
        truth = budget_truth(scene, v, qs, TruthConfig(budgets=("all",)))
        it = truth.items[0]
        assert it.status == UNANSWERABLE and it.occlusion_sensitive is flagged
        rec = truth.row(it).to_json()
        assert rec.get("occlusion_sensitive", False) is flagged
        assert rec.get("status_without_occlusion") == ("kept" if flagged else None)
        assert ("depends on the occlusion mode" in summary_table(truth)) is flagged


def test_budget_rows_follow_the_one_schema():
    """A written row reads back as itself (TruthRow.from_json / to_json), its own fields in REAL_FIELDS
    order after the question's; a writer cannot add a field the schema does not name, nor leave one out."""
    scene, vis, qs = counting_case()
    truth = budget_truth(scene, vis, qs, TruthConfig(budgets=(4, "all")))
    for b in truth.budgets:
        for i, line in enumerate(budget_jsonl(truth, b).splitlines(), start=1):
            doc = json.loads(line)
            row = TruthRow.from_json(doc, "f.jsonl", i, REAL_VARIANT)
            assert row.to_json() == doc and list(row.to_json()) == list(doc)
            assert (row.id, row.budget, row.status, row.ground_truth) == (doc["id"], str(b), doc["status"],
                                                                         doc["ground_truth"])
            own = [k for k in doc if k in ROW_ONLY_FIELDS]
            assert own == [k for k in REAL_FIELDS if k in own] and list(doc)[-1] == "min_budget_room_route"
            assert question_record(doc) == dict(qs[i - 1].record)
    values = {k: v for k, v in truth.row(truth.items[0]).to_json().items() if k in REAL_FIELDS}
    assert real_row(qs[0].record, **values).to_json() == truth.row(truth.items[0]).to_json()
    with pytest.raises(TypeError, match=r"unknown \['colour'\]"):
        real_row(qs[0].record, **values, colour="red")
    with pytest.raises(TypeError, match=r"missing \['status'\]"):
        real_row(qs[0].record, **{k: v for k, v in values.items() if k != "status"})


def test_every_row_field_is_documented():
    """docs/questions-format.md names every field of a budget row, docs/videos.md every field of a dummy row."""
    from pathlib import Path

    from vistest.budget.rows import DUMMY_FIELDS

    docs = Path(__file__).parent.parent / "docs"
    for schema, name in ((REAL_FIELDS, "questions-format.md"), (DUMMY_FIELDS, "videos.md")):
        text = (docs / name).read_text()
        assert [f for f in schema if f"`{f}`" not in text] == [], name
        assert all(f.doc for f in schema.values())


def test_seen_rules_are_validated_once():
    with pytest.raises(InputError, match="one of image, silhouette, pixels"):
        SeenRule("area", 0.1)
    with pytest.raises(InputError, match="seen_threshold: expected a fraction of the image area in"):
        budget_truth(*counting_case()[:2], [], TruthConfig(seen_threshold=1.5))
    with pytest.raises(InputError, match="non-negative number of pixels"):
        SeenRule("pixels", -1)
    # only the table's frames x objects image shares (issue #35: @bbox, @frame_index, @__class__ were tracebacks)
    for array in ("instance", "bbox", "frame_index", "__class__", "source"):
        with pytest.raises(InputError, match=f"seen rule: expected one of the visibility table's arrays visible, "
                                             f"evidence, projected, got '{array}'"):
            SeenRule("silhouette", 0.5, array)
    # "at least 0" would count objects never in view as seen (issue #35): refused, not read as "> 0"
    for kind in ("pixels", "silhouette"):
        with pytest.raises(InputError, match=f"expected a threshold above 0 for the {kind} seen rule"):
            SeenRule(kind, 0)
    assert SeenRule("image", 0).passes(np.array([0.0, 1e-9])).tolist() == [False, True]  # "> 0": never-seen unseen


def test_cli_seen_rule_and_threshold(tmp_path):
    scene, share, pixels = small_box_scene(tmp_path)
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"id": 1, "scene_id": "s1", "question_type": "object_size_estimation", "question": "?",
                             "objects": ["c1"], "ground_truth": 30}) + "\n")
    base = ["budget", str(tmp_path / "scene.json"), str(q), "--budgets", "all", "-o", str(tmp_path / "out"),
            "--quiet"]
    runner = CliRunner()
    res = runner.invoke(main, base)
    assert res.exit_code == 0, res.output
    rec = json.loads((tmp_path / "out" / "all_frame.jsonl").read_text())
    assert (rec["status"], rec["seen_threshold"], rec["seen_rule"]) == ("unanswerable", 0.05, "> 5% of the image")
    assert "in view in 6 of 10 frames" in rec["reason_text"]
    res = runner.invoke(main, base + ["--seen-threshold", str(pixels - 1), "--seen-rule", "pixels"])
    assert res.exit_code == 0, res.output
    rec = json.loads((tmp_path / "out" / "all_frame.jsonl").read_text())
    assert (rec["status"], rec["seen_threshold"]) == ("kept", pixels - 1)
    res = runner.invoke(main, base + ["--seen-rule", "area"])
    assert res.exit_code == 2 and "--seen-rule: expected one of image, silhouette, pixels" in res.output
    res = runner.invoke(main, base + ["--seen-threshold", "1.5"])
    assert res.exit_code == 2 and "--seen-threshold: expected a fraction of the image area in [0, 1)" in res.output
    for rule in ("image@bbox", "image@frame_index", "pixels@__class__", "silhouette@source"):
        res = runner.invoke(main, base + ["--seen-rule", rule])
        assert res.exit_code == 2, (rule, res.output)
        assert ("Error: --seen-rule: expected one of the visibility table's arrays visible, evidence, projected, got "
                f"'{rule.partition('@')[2]}'") in res.output, rule
    res = runner.invoke(main, base + ["--seen-rule", "pixels", "--seen-threshold", "0"])
    assert res.exit_code == 2 and "Error: --seen-threshold: expected a threshold above 0 for the pixels" in res.output


def test_one_seen_predicate_for_budget_facts_and_timeline():
    """The budget stage, the generator's first appearances and the timeline agree under every rule."""
    from vistest.generate.facts import SceneFacts
    from vistest.look.timeline import build_timeline
    from vistest.visibility.table import compute_visibility

    scene, share, pixels = small_box_scene()
    vis = compute_visibility(scene, occlusion="boxes")
    qs = questions({"question_type": "object_size_estimation", "objects": ["c1"], "ground_truth": 30})
    for rule, seen in ((0.05, False), (SeenRule("image", share / 2), True), (SeenRule("pixels"), False),
                       (SeenRule("pixels", pixels - 1), True), (SeenRule("silhouette", 0.99), True)):
        it = budget_truth(scene, vis, qs, TruthConfig(budgets=("all",), seen_threshold=rule)).items[0]
        assert (it.status == KEPT) is seen, rule
        assert it.evidence_frames == ((0, 1, 2, 3, 4, 5) if seen else ())
        assert SceneFacts(scene, vis, rule).by_id["c1"].first_frame == (0 if seen else None), rule
        tl = build_timeline(scene, vis, truth=TruthConfig(budgets=(), seen_threshold=rule))
        assert tl.seen_mask()[0].tolist() == [seen] * 6 + [False] * 4, rule


def test_every_seen_rule_kind_is_documented_with_unit_and_source():
    from pathlib import Path

    from vistest.budget.seen import SEEN_KINDS

    text = (Path(__file__).parent.parent / "docs" / "questions-format.md").read_text()
    for k in SEEN_KINDS.values():
        assert k.unit and k.doc and k.source, k.name
        assert f"| `{k.name}`" in text and f"| {k.default:g} | {k.unit} |" in text, k.name


def test_a_window_on_a_type_whose_ground_truth_ignores_it_warns(tmp_path):
    """Issue #35: a 100-200 s window on a counting question of a 10-frame video gave a kept row in
    silence. The documented handling (docs/questions-format.md "Time windows"): a warning naming the
    line and field; windowed types (sti_*, motion_*) get none, and a count (issue #44) counts inside its
    window: none of the 10 frames is in it."""
    small_box_scene(tmp_path)
    q = tmp_path / "q.jsonl"
    rows = [{"id": 1, "scene_id": "s1", "question_type": "object_counting", "question": "?", "category": "chair",
             "ground_truth": 1, "time_start": 100, "time_end": 200},
            {"id": 2, "scene_id": "s1", "question_type": "object_size_estimation", "question": "?",
             "objects": ["c1"], "ground_truth": 30, "time": 0.1},
            {"id": 3, "scene_id": "s1", "question_type": "sti_spatial_relation", "question": "?", "time": 0.1,
             "options": ["A. 1", "B. 2", "C. 3", "D. 4", "E. 5"], "ground_truth": "A"}]
    q.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = CliRunner().invoke(main, ["budget", str(tmp_path / "scene.json"), str(q), "--budgets", "all", "-o",
                                    str(tmp_path / "out"), "--quiet", "--seen-rule", "silhouette"])
    assert res.exit_code == 0, res.output
    assert res.output.count("warning: ") == 1  # a count counts inside its window (issue #44): no warning for it
    assert (f"warning: {q}:2: time: the ground truth of object_size_estimation ignores time windows and instants "
            f"(decided over every sampled frame; only its dummies keep to the window's frames); 1 such question(s) "
            f"in {q}") in res.output
    count = json.loads((tmp_path / "out" / "all_frame.jsonl").read_text().splitlines()[0])
    assert count["status"] == "unanswerable" and count["reason"] == "category_unseen"  # no frame in 100-200 s
    q.write_text(json.dumps(rows[2]) + "\n")
    res = CliRunner().invoke(main, ["budget", str(tmp_path / "scene.json"), str(q), "--budgets", "all", "-o",
                                    str(tmp_path / "out"), "--quiet"])
    assert res.exit_code == 0 and "warning" not in res.output, res.output
