"""``--types vsibench``: VSI-Bench's type names and wording, so that the output runs in the stock
lmms-eval ``vsibench`` task, with every answer recomputed independently (the references of
tests/test_generate.py).

The stock task (EvolvingLMMs-Lab/lmms-eval ``lmms_eval/tasks/vsibench/utils.py``) reads
``question``, ``question_type``, ``options``, ``ground_truth``, ``dataset`` and ``scene_name``;
``vsibench_doc_to_text`` raises on a type outside ``MCA_QUESTION_TYPES`` / ``NA_QUESTION_TYPES``;
``exact_match`` compares the reply's first word with the ground-truth letter; MRA parses the
ground truth with ``float``; ``_compute_all_subscores`` pops ``object_rel_direction_easy``,
``_medium`` and ``_hard`` (a set without one of them fails there)."""
from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from test_generate import Ref, answer_text, classify, local_direction

from vistest.synthetic import random_room_scene
from vistest.generate import Rules, SceneInput, generate, parse_types
from vistest.visibility.table import compute_visibility

# lmms_eval/tasks/vsibench/utils.py
MCA_QUESTION_TYPES = ["object_rel_direction_easy", "object_rel_direction_medium", "object_rel_direction_hard",
                      "object_rel_distance", "route_planning", "obj_appearance_order"]
NA_QUESTION_TYPES = ["object_abs_distance", "object_counting", "object_size_estimation", "room_size_estimation"]


@pytest.fixture(scope="module", params=[5, pytest.param(20, marks=pytest.mark.slow)])
def rooms(request):
    """5 random rooms (every type of the stock task occurs: room 4 has routes); the slow tier: 20."""
    scenes = [random_room_scene(seed, num_frames=60) for seed in range(request.param)]
    return [SceneInput(s, compute_visibility(s)) for s in scenes]


@pytest.fixture(scope="module")
def generated(rooms):
    # cluttered rooms; no bias pruning: this module checks the stock task's names and fields, not the balancing
    # (nor the report's held-out chance, null_permutations, and its fold seeds after the first, judge_fold_seeds:
    # read by the report only, the questions are the same)
    rules = Rules().with_overrides(["route.clearance_m=0.15", "route.landmark_margin_m=0.2",
                                    "balance.removal_budget=0", "balance.null_permutations=0",
                                    "balance.judge_fold_seeds=1"])
    return generate(rooms, parse_types("vsibench"), rules, seed=0)


def test_every_type_of_the_stock_task_with_its_fields(generated):
    recs = [r for rs in generated.questions.values() for r in rs]
    types = Counter(r["question_type"] for r in recs)
    assert set(types) == set(MCA_QUESTION_TYPES + NA_QUESTION_TYPES), types
    for r in recs:
        assert r["scene_name"] == r["scene_id"] and r["dataset"] == "vistest"
        assert isinstance(r["question"], str)
        if r["question_type"] in MCA_QUESTION_TYPES:
            letters = [o.split(". ", 1)[0] for o in r["options"]]
            assert letters == list("ABCD"[:len(letters)]) and r["ground_truth"] in letters
        else:
            assert "options" not in r and float(r["ground_truth"]) > 0
    # the stock aggregation: mean per type, the three direction levels averaged (all must be present)
    out = {t: 1.0 for t in types}
    direction = [out.pop(f"object_rel_direction_{lv}") for lv in ("easy", "medium", "hard")]
    assert len(direction) == 3


def test_vsibench_wording_and_answers_recomputed(rooms, generated):
    scenes = {i.scene.scene_id: i.scene for i in rooms}
    for sid, recs in generated.questions.items():
        scene, ref = scenes[sid], Ref(scenes[sid])
        labels = Counter(o.label for o in scene.objects)
        for r in recs:
            t = r["question_type"]
            if t == "object_counting":
                assert r["question"] == f"How many {r['category']}(s) are in this room?"
                assert int(r["ground_truth"]) == labels[r["category"]] and labels[r["category"]] >= 1
            elif t == "object_size_estimation":
                assert r["question"].startswith("What is the length of the longest dimension")
                o = ref.obj[r["objects"][0]]
                signs = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))
                corners = o.center + (signs * o.size / 2) @ o.rotation.T
                longest = max(np.linalg.norm(corners[i] - corners[j]) for i, j in itertools.combinations(range(8), 2)
                              if np.sum(signs[i] != signs[j]) == 1) * 100
                assert abs(float(r["ground_truth"]) - longest) <= 0.5
            elif t == "room_size_estimation":
                assert r["question"].startswith("What is the size of this room (in square meters)?")
                w, d = np.max(scene.room["polygon"], axis=0)
                assert abs(float(r["ground_truth"]) - w * d) <= 0.05
            elif t == "object_rel_distance":
                primary, *opts = r["objects"]
                dist = {ref.obj[o].label: ref.distance(primary, o) for o in opts}
                assert answer_text(r) == min(dist, key=dist.get) and "closest to the" in r["question"]
            elif t.startswith("object_rel_direction_"):
                a, b, c = (ref.obj[o] for o in r["objects"])
                x, y = local_direction(a, b, c.center, backward=False)
                level = t.rsplit("_", 1)[1]
                ans = answer_text(r)
                if level == "easy":  # left or right of B; never a C behind
                    assert r["question"].endswith(f"to the left or the right of the {b.label}?")
                    assert [o.split(". ")[1] for o in r["options"]] in (["left", "right"], ["right", "left"])
                    assert classify(x, y, hard=False) == ans
                elif level == "medium":
                    assert "to my left, right, or back?" in r["question"]
                    assert classify(x, y, hard=False) == ans
                else:
                    assert "positive y-axis" in r["question"] and classify(x, y, hard=True) == ans
                assert "opposite direction" not in r["question"]
            assert "in the scene" not in r["question"]  # VSI-Bench's "this room", not ReVSI's wording


def test_types_of_two_benchmarks_do_not_mix():
    from vistest.errors import InputError
    with pytest.raises(InputError, match="one benchmark"):
        parse_types("object_counting,object_rel_distance_closest")
    assert parse_types("object_counting,route_planning") == ("object_counting", "route_planning")
