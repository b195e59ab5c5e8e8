"""The demo loop through the CLI: demo scene -> visibility -> frame-budget ground truth."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

# the 300-frame demo the example questions are written for (conftest.py demo_full): slow tier
pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def vistest(*args):
    r = subprocess.run([sys.executable, "-m", "vistest.cli", *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def demo(tmp_path_factory, demo_full):
    """``scene/``: the session's ``vistest demo-scene --size 320x240`` (conftest.py: the
    example questions are written for the default demo, seed 0, 300 frames; coverage
    fractions do not depend on the resolution, so a smaller render answers the same way)."""
    out = tmp_path_factory.mktemp("demo")
    (out / "scene").symlink_to(demo_full.parent, target_is_directory=True)
    vistest("visibility", out / "scene" / "scene.json", "-o", out / "vis.npz", "--quiet")
    return out


def kept(path):
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return sum(r["status"] == "kept" for r in rows), rows


def test_sixteen_frames_keep_fewer_answers_than_all(demo):
    vistest("budget", demo / "scene" / "scene.json", EXAMPLES / "demo-questions.jsonl", "--budgets", "16,all",
            "--visibility", demo / "vis.npz", "-o", demo / "budget", "--quiet")
    k16, rows16 = kept(demo / "budget" / "16_frame.jsonl")
    kall, rows_all = kept(demo / "budget" / "all_frame.jsonl")
    assert len(rows16) == len(rows_all) == 12
    assert k16 < kall
    assert all(len(r["frame_indices"]) == 16 for r in rows16)
    assert all(len(r["frame_indices"]) == 300 for r in rows_all)
    # the pillow is never seen above 5% in the demo walk: unanswerable at every budget
    pillow = {r["id"]: r for r in rows_all}["demo-4"]
    assert pillow["status"] == "unanswerable" and pillow["reason"] == "category_unseen"


def test_demo_scene_has_what_the_demo_promises(demo):
    import numpy as np

    from vistest import Scene, Visibility

    scene = Scene.load(demo / "scene" / "scene.json")
    vis = Visibility.load(demo / "vis.npz")
    assert 10 <= len(scene.objects) <= 20 and len(scene.frames) == 300
    assert (vis.projected == 1.0).any(axis=1).any()  # a frame with the camera inside a box
    labels = [o.label for o in scene.objects]
    assert len(set(labels)) < len(labels)  # repeated labels, for counting questions
    assert np.isfinite(vis.visible).all()


def test_held_out_most_frequent_baseline_is_no_longer_the_ground_truth(demo):
    """In-sample, each question type's most-frequent answer is its own mode, so on the 12 demo
    questions the blind baseline nearly equals the ground truth; held out (one scene: by
    question group, with a warning) it no longer does."""
    from vistest.eval.records import load_run_dir
    from vistest.eval.report import build_report, render_text

    vistest("budget", demo / "scene" / "scene.json", EXAMPLES / "demo-questions.jsonl", "--budgets", "16,32,64,all",
            "--visibility", demo / "vis.npz", "-o", demo / "budget4", "--quiet")
    report = build_report(load_run_dir(demo / "budget4"), [], splits=2, learned=False)
    overall = {(s.model, s.budget): s.values["overall"] for s in report.summaries if s.reformulation == "base"}
    in_sample, held_out = overall[("most-frequent (in-sample)", "all")], overall[("most-frequent", "all")]
    assert in_sample >= 0.85, in_sample   # 0.89 on the demo
    assert held_out <= 0.35, held_out     # 0.26 on the demo
    assert "only 1 scene: too few to hold any out" in report.folds.warning
    text = render_text(report)
    assert "blind baselines held out: 5-fold by question group (12 question groups)" in text and "WARNING" in text
