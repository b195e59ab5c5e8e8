"""Question JSONL format: the accepted types, and bad input rejected with line and field."""
from __future__ import annotations

import json

import numpy as np
import pytest

from vistest.questions import (ANSWER_MCQ, QUESTION_TYPES, QuestionError, load_questions, option_labels,
                               option_letter, parse_questions)
from vistest.scene import FORMAT, Scene

VSI_BENCH_TYPES = ["object_counting", "object_size_estimation", "object_abs_distance", "object_rel_distance",
                   "object_rel_direction_easy", "object_rel_direction_medium", "object_rel_direction_hard",
                   "room_size_estimation", "obj_appearance_order", "route_planning"]
REVSI_TYPES = ["object_counting_single", "object_counting_multiple", "object_abs_distance", "object_size_estimation",
               "object_rel_direction_forward_easy", "object_rel_direction_backward_easy",
               "object_rel_direction_forward_hard", "object_rel_direction_backward_hard",
               "object_rel_distance_closest", "object_rel_distance_farthest", "room_size_estimation_single",
               "room_size_estimation_multiple", "route_planning"]
REVSI_MCQ = ["object_rel_direction_forward_easy", "object_rel_direction_backward_easy",
             "object_rel_direction_forward_hard", "object_rel_direction_backward_hard",
             "object_rel_distance_closest", "object_rel_distance_farthest", "route_planning"]


def small_scene() -> Scene:
    objs = [("c1", "chair"), ("c2", "chair"), ("t1", "table"), ("l1", "lamp")]
    return Scene.from_dict({
        "format": FORMAT, "scene_id": "room1", "fps": 30.0, "image_size": [64, 48],
        "camera": {"fx": 50.0, "fy": 50.0, "cx": 31.5, "cy": 23.5},
        "frames": [{"index": i, "time": i / 30.0, "camera_to_world": np.eye(4).tolist()} for i in range(4)],
        "objects": [{"id": oid, "label": lab, "center": [0, 0, 3 + k], "size": [0.5, 0.5, 0.5],
                     "rotation": np.eye(3).tolist()} for k, (oid, lab) in enumerate(objs)]})


GOOD = [
    {"id": 1, "scene_id": "room1", "question_type": "object_counting", "question": "How many chairs?",
     "category": "chair", "ground_truth": "2", "dataset": "scannet"},
    {"id": "q2", "scene_id": "room1", "question_type": "object_rel_distance_closest",
     "question": "Which is closest to the lamp?", "options": ["A. chair", "B. table"], "ground_truth": "B",
     "objects": ["c1", "t1", "l1"]},
    {"id": "q3", "scene_id": "room1", "question_type": "obj_appearance_order", "question": "Order?",
     "options": ["A. chair, table", "B. table, chair"], "ground_truth": "A", "category": ["chair", "table"]},
    {"id": "q4", "scene_id": "room1", "question_type": "room_size_estimation_single", "question": "Area?",
     "ground_truth": 23.5},
    {"id": "q5", "scene_id": "room1", "question_type": "object_counting_multiple", "question": "Chairs + lamps?",
     "category": ["chair", "lamp"], "ground_truth": 3, "allow_zero": True},
]


def write(tmp_path, rows, name="q.jsonl"):
    p = tmp_path / name
    p.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return p


def test_all_issue_types_are_accepted():
    for t in VSI_BENCH_TYPES + REVSI_TYPES:
        assert t in QUESTION_TYPES
    for t in REVSI_MCQ + ["obj_appearance_order", "object_rel_distance", "object_rel_direction_easy"]:
        assert QUESTION_TYPES[t].answer == ANSWER_MCQ


def test_load_good_file(tmp_path):
    p = write(tmp_path, GOOD[:2] + [""] + GOOD[2:])  # blank line ignored
    qs = load_questions(p, scene=small_scene())
    assert [q.id for q in qs] == ["1", "q2", "q3", "q4", "q5"]
    assert [q.line for q in qs] == [1, 2, 4, 5, 6]
    assert qs[0].category == ("chair",) and qs[0].record["dataset"] == "scannet"
    assert qs[1].objects == ("c1", "t1", "l1") and qs[1].options == ("A. chair", "B. table")
    assert qs[3].options is None and qs[4].allow_zero
    with pytest.raises(TypeError):
        qs[0].record["id"] = 5  # read-only


def test_option_parsing():
    assert option_letter("B. lamp, chair") == ("B", "lamp, chair")
    assert option_letter("no letter") == (None, "no letter")
    assert option_labels("C) Chair ,table") == ("chair", "table")


@pytest.mark.parametrize("row,field,msg", [
    ({**GOOD[0], "question_type": "object_countin"}, "question_type", "unknown question type 'object_countin'"),
    ({**GOOD[1], "objects": ["c1", "zz"]}, "objects[1]", "unknown object id 'zz'"),
    ({**GOOD[0], "category": "sofa"}, "category", "category 'sofa' is absent from scene 'room1'"),
    ({**GOOD[4], "category": ["chair", "sofa"]}, "category[1]", "'sofa' is absent"),
    ({k: v for k, v in GOOD[1].items() if k != "options"}, "options", "multiple-choice type"),
    ({**GOOD[1], "options": []}, "options", "non-empty list"),
    ({**GOOD[1], "ground_truth": "C"}, "ground_truth", "one of the option letters A, B"),
    ({**GOOD[0], "ground_truth": "2.5"}, "ground_truth", "non-negative integer count"),
    ({**GOOD[3], "ground_truth": "big"}, "ground_truth", "expected a number"),
    ({k: v for k, v in GOOD[0].items() if k != "category"}, "category", "needs a category"),
    ({**GOOD[0], "objects": ["c1"]}, "objects", "takes no objects"),
    ({**GOOD[1], "objects": ["c1"]}, "objects", "at least 2 object id(s)"),
    ({**GOOD[1], "objects": ["c1", "c1"]}, "objects[1]", "listed twice"),
    ({**GOOD[0], "scene_id": "other"}, "scene_id", "expected 'room1'"),
    ({k: v for k, v in GOOD[0].items() if k != "question"}, "question", "missing required field"),
    ({**GOOD[3], "options": ["A. 1"]}, "options", "takes no options"),
    ({**GOOD[2], "options": ["A. chair, table", "B. table, sofa"]}, "options[1]", "ordering of"),
    ({**GOOD[1], "allow_zero": True}, "allow_zero", "only counting"),
])
def test_bad_line_names_line_and_field(tmp_path, row, field, msg):
    p = write(tmp_path, [GOOD[3], row])
    with pytest.raises(QuestionError) as e:
        load_questions(p, scene=small_scene())
    text = str(e.value)
    assert text.startswith(f"{p}:2: {field}: "), text
    assert msg in text


def test_invalid_json_and_duplicates(tmp_path):
    p = write(tmp_path, [GOOD[0], "{not json"])
    with pytest.raises(QuestionError, match=r"q.jsonl:2: <line>: not valid JSON"):
        load_questions(p)
    p = write(tmp_path, [GOOD[0], GOOD[3], {**GOOD[3], "id": 1}])
    with pytest.raises(QuestionError, match=r"q.jsonl:3: id: duplicate question id '1' \(also line 1\)"):
        load_questions(p)
    with pytest.raises(QuestionError, match="cannot read"):
        load_questions(tmp_path / "missing.jsonl")


def test_without_scene_ids_are_not_checked():
    qs = parse_questions([json.dumps({**GOOD[1], "objects": ["x", "y"]})], source="mem")
    assert qs[0].objects == ("x", "y")
