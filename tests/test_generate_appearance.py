"""Appearance order against an independent render: pyrender draws every box as a segmentation,
the pixels of each box give its visible fraction per frame, and the first frame above 5% gives
each label's first appearance; every generated order must be that order, its gaps >= 1 s."""
from __future__ import annotations

import numpy as np
import pytest

from vistest.synthetic import random_room_scene
from vistest.generate import Rules, SceneInput, generate
from vistest.questions import option_letter
from vistest.visibility.table import compute_visibility


@pytest.mark.parametrize("seed", [3, pytest.param(8, marks=pytest.mark.slow)])
def test_appearance_orders_match_a_pyrender_render(seed):
    from vistest.visibility.render import BoxSegRenderer

    scene = random_room_scene(seed, num_frames=120)
    w, h = scene.image_size
    # the report's held-out chance off: the questions do not depend on it (vistest/generate/report.py alone reads it)
    rules = Rules().with_overrides(["appearance.max_per_scene=0", "balance.null_permutations=0"])
    gen = generate([SceneInput(scene, compute_visibility(scene))], ("obj_appearance_order",), rules, seed=0)
    recs = gen.questions[scene.scene_id]
    assert len(recs) >= 3  # not vacuous

    ref = BoxSegRenderer(*scene.world_boxes(), w, h, near=1e-3)
    try:
        cover = np.array([ref.counts(f.camera_to_world, scene.intrinsics_for(f)) / (w * h) if f.valid
                          else np.zeros(len(scene.objects)) for f in scene.frames])
    finally:
        ref.close()
    times = np.array([f.time for f in scene.frames])
    first: dict[str, float] = {}
    for j, o in enumerate(scene.objects):
        rows = np.flatnonzero(cover[:, j] > 0.05)  # ReVSI's 5% of the image
        if len(rows):
            first[o.label] = min(first.get(o.label, np.inf), times[rows[0]])
    for r in recs:
        letters = [option_letter(o)[0] for o in r["options"]]
        order = option_letter(r["options"][letters.index(r["ground_truth"])])[1].split(", ")
        assert sorted(order) == sorted(r["category"])
        t = [first[lab] for lab in order]
        assert t == sorted(t), (order, t)
        assert np.diff(t).min() >= 1.0 - 0.25  # min_gap_s, within a couple of frames of sampling error
        assert len(set(r["options"])) == 4 and r["question"].endswith(", ".join(r["category"]) + "?")
