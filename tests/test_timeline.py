"""Timelines: selected frames marked where the sampler puts them, dummy removals as the video stage plans them."""
import json

import cv2
import numpy as np
import pytest
from click.testing import CliRunner
from matplotlib.colors import to_rgb

from vistest.budget.config import TruthConfig
from vistest.cli import main
from vistest.errors import InputError
from vistest.questions import load_questions
from vistest.budget.sampling import select_frames
from vistest.synthetic import random_box_scene
from vistest.look.timeline import (
    BAD_RGB,
    MARK_RGB,
    REMOVED_RGB,
    build_timeline,
    coverage_rgb,
    figure,
)
from vistest.videos.config import DummyConfig
from vistest.videos.evidence import EvidenceTable
from vistest.videos.plan import plan_dummies
from vistest.visibility.table import compute_visibility

N = 120


@pytest.fixture(scope="module")
def scene_vis():
    scene = random_box_scene(seed=2, num_frames=N, num_boxes=8, invalid_every=17)
    return scene, compute_visibility(scene)


@pytest.fixture
def questions(tmp_path, scene_vis):
    scene, _ = scene_vis
    lines = [{"id": "q1", "scene_id": scene.scene_id, "question_type": "object_counting", "question": "How many?",
              "category": "label1", "ground_truth": "2"},
             {"id": "q2", "scene_id": scene.scene_id, "question_type": "object_size_estimation",
              "question": "How long?", "objects": ["3"], "ground_truth": "50"}]
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def rendered(fig):
    return fig.astype(float) / 255.0


def pixel(fig, ax, x, y):
    """Picture pixel (row, column) of data point (x, y) of ``ax`` (frame x, height y from 0 at the bottom)."""
    return ax.pixel(x, y)


def near_colour(img, row, col, rgb, tol=0.12, reach=1):
    patch = img[row - reach:row + reach + 1, col - reach:col + reach + 1].reshape(-1, 3)
    return (np.abs(patch - np.array(rgb)).max(axis=1) < tol).any()


def test_timeline_marks_the_selected_frames(scene_vis):
    scene, vis = scene_vis
    tl = build_timeline(scene, vis, truth=TruthConfig(budgets=[16], profile="uniform"))
    want = select_frames("uniform", N, 16)
    assert list(tl.selections[0].frame_indices) == want.tolist()
    fig, axes = figure(tl)
    img = rendered(fig)
    ax = axes["budget:16"]
    bad = set(tl.selections[0].invalid_frames)
    for f in want:
        row, col = pixel(fig, ax, f, 0.5)
        assert near_colour(img, row, col, BAD_RGB if f in bad else MARK_RGB), f
    gaps = [(a + b) / 2 for a, b in zip(want[:-1], want[1:]) if b - a >= 4]
    assert gaps
    for x in gaps:  # half-way between two selected frames: background
        row, col = pixel(fig, ax, x, 0.5)
        assert np.allclose(img[row, col], 1.0, atol=0.02), x


def test_evidence_frame_margin_widens_what_drop_and_black_remove(scene_vis, questions):
    """--evidence-frame-margin K: the K frames around each evidence frame count as evidence (clipped
    to the video); drop leaves them out, black blackens them; 0 is the plain evidence."""
    scene, vis = scene_vis
    qs = load_questions(questions, scene=scene)[:2]
    table = EvidenceTable(vis, N, 0.0)

    def dummies(margin):  # (truth, its full-length video's variant) per question and mode
        variants, truths = plan_dummies(scene, table, qs, "key", scene.image_size, ["all"],
                                        DummyConfig(modes=("drop", "black"), evidence_frame_margin=margin))
        by_path = {v.path: v for v in variants}
        return [(t, by_path[t.videos[0].path]) for t in truths]

    plain, wide = dummies(0), dummies(2)
    assert plain[0][0].evidence_frames and len(plain[0][0].evidence_frames) < N - 4
    for (t, v0), (w, v) in zip(plain, wide):
        near = {f + d for f in t.evidence_frames for d in range(-2, 3)} & set(range(N))
        assert set(w.evidence_frames) == near and len(near) > len(t.evidence_frames)
        if w.mode == "drop":
            assert v.frames == tuple(f for f in range(N) if f not in near)
            assert v0.frames == tuple(f for f in range(N) if f not in t.evidence_frames)
        else:
            assert set(v.black) == near and set(v0.black) == set(t.evidence_frames)
    with pytest.raises(InputError, match="evidence_frame_margin"):
        DummyConfig(evidence_frame_margin=-1)


def test_timeline_question_rows_are_the_frames_the_dummy_removes(scene_vis, questions):
    scene, vis = scene_vis
    qs = load_questions(questions, scene=scene)
    tl = build_timeline(scene, vis, qs)
    table = EvidenceTable(vis, N, 0.0)
    _, truths = plan_dummies(scene, table, qs, "key", scene.image_size, [], DummyConfig(modes=("drop",)))
    for r, t in zip(tl.removals, truths):
        assert r.frames == t.evidence_frames and r.objects == t.objects
    unknown = {f.index for f in scene.frames if not f.valid}
    assert unknown <= set(tl.removals[0].frames)  # frames without a pose count as evidence, as in the dummies
    fig, axes = figure(tl)
    img = rendered(fig)
    ax = axes["question:q1"]
    removed = set(tl.removals[0].frames)
    for f in range(N):
        row, col = pixel(fig, ax, f, 0.5)
        if f in removed and f - 1 in removed and f + 1 in removed:
            assert near_colour(img, row, col, REMOVED_RGB, reach=0), f
        elif f not in removed and f - 1 not in removed and f + 1 not in removed:
            assert np.allclose(img[row, col], 1.0, atol=0.02), f


def test_the_seen_threshold_is_a_visible_break_in_the_colours():
    thr = 0.05
    below, above = coverage_rgb(np.array([thr, thr + 1e-4]), thr)
    assert np.abs(below - above).max() > 0.4  # pale blue-grey below, dark viridis above
    assert np.allclose(coverage_rgb(np.array([0.0]), thr), 1.0)  # nothing visible: white
    assert np.allclose(coverage_rgb(np.array([np.nan]), thr), to_rgb("#c7c7c7"), atol=0.01)  # unknown: grey


def test_timeline_cli(scene_vis, questions, tmp_path):
    scene, _ = scene_vis
    (tmp_path / "scene.json").write_text(json.dumps(scene.to_dict()))
    out = tmp_path / "timeline.png"
    r = CliRunner().invoke(main, ["timeline", str(tmp_path / "scene.json"), "-o", str(out), "--questions",
                                  str(questions), "--budgets", "16,32", "--quiet"])
    assert r.exit_code == 0, r.output
    img = cv2.imread(str(out))
    assert img is not None and img.shape[1] == 1300
    r = CliRunner().invoke(main, ["timeline", str(tmp_path / "scene.json"), "-o", str(out), "--budgets", "0"])
    assert r.exit_code == 2 and "Error: --budgets: expected a positive integer" in r.output


def test_timeline_rows_use_the_dummies_function_and_options(scene_vis, questions, tmp_path, monkeypatch):
    """`vistest timeline --evidence-frame-margin K --instant-tolerance S` removes what `vistest videos`
    with the same options removes (one function, vistest.videos.evidence.dummy_evidence): the margin
    around each evidence frame and, for a question at an instant, the frames within S seconds of it."""
    import vistest.look.timeline as timeline_module

    scene, vis = scene_vis
    timed = tmp_path / "timed.jsonl"
    timed.write_text(questions.read_text() + json.dumps(
        {"id": "q3", "scene_id": scene.scene_id, "question_type": "object_size_estimation", "question": "How long?",
         "objects": ["3"], "ground_truth": "50", "time": 2.0}) + "\n")
    qs = load_questions(timed, scene=scene)
    table = EvidenceTable(vis, N, 0.0)

    def planned(margin, tolerance):
        _, truths = plan_dummies(scene, table, qs, "key", scene.image_size, [],
                                 DummyConfig(modes=("drop",), evidence_frame_margin=margin),
                                 instant_tolerance_s=tolerance)
        return [t.evidence_frames for t in truths]

    want = planned(2, 1.0)
    assert want != planned(0, 1.0) and want[2] != planned(2, 0.1)[2]  # both options change what is removed
    config = TruthConfig(budgets=(), instant_tolerance_s=1.0)
    assert [r.frames for r in build_timeline(scene, vis, qs, config, evidence_frame_margin=2).removals] == want
    got = []
    monkeypatch.setattr(timeline_module, "write_timeline", lambda path, tl: got.append(tl))
    (tmp_path / "scene.json").write_text(json.dumps(scene.to_dict()))
    r = CliRunner().invoke(main, ["timeline", str(tmp_path / "scene.json"), "-o", str(tmp_path / "t.png"),
                                  "--questions", str(timed), "--evidence-frame-margin", "2", "--instant-tolerance",
                                  "1.0", "--evidence-threshold", "0", "--quiet"])
    assert r.exit_code == 0, r.output
    assert [x.frames for x in got[0].removals] == want


def test_viridis_is_matplotlibs_colour_map():
    """The timeline draws without matplotlib (issue #47); its viridis is matplotlib's, entry for entry."""
    from matplotlib import colormaps

    from vistest.look.timeline import viridis

    x = np.linspace(0, 1, 1001)
    assert np.abs(viridis(x) - colormaps["viridis"](x)[:, :3]).max() <= 1.5 / 255


def test_heat_map_cells_are_the_coverage_colours(scene_vis):
    """Each object's row of the picture shows, frame by frame, the colour of its coverage in that frame."""
    scene, vis = scene_vis
    tl = build_timeline(scene, vis, truth=TruthConfig(budgets=[16], profile="uniform"))
    img, axes = figure(tl)
    heat, no = axes["heat"], len(tl.object_ids)
    want = np.round(coverage_rgb(tl.coverage, tl.break_threshold, tl.seen_mask()) * 255)
    checked = 0
    for r in range(no):
        for f in range(0, N, 7):
            row, col = heat.pixel(f, 1 - (r + 0.5) / no)
            assert np.abs(img[row, col].astype(float) - want[r, f]).max() <= 1, (r, f)
            checked += 1
    assert checked == no * len(range(0, N, 7)) and len({tuple(c) for c in want.reshape(-1, 3)}) > 3
