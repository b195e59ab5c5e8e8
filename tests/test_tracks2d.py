"""2D object tracks (vistest.tracks2d, vistest.visibility.tracks2d, the budget stage's unknown
status, the perception-test and mot importers; docs/tracks2d.md).

References are independent of the code under test: hand-computed masks and areas, the states a
sparse annotation implies worked out by hand, a compressed RLE string quoted from the official
MOTS format description (TrackEval ``docs/MOTChallenge-format.txt``, MIT licence) whose runs must
add up to its image, and annotation files written here from each format's documentation (no real
Perception Test annotation is in its repository: they are zip downloads; see tests/data/SOURCES.md).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from vistest.budget.config import TruthConfig
from vistest.budget.seen import SeenRule
from vistest.budget.truth import budget_truth
from vistest.cli import main as cli
from vistest.datasets.common import AdapterError
from vistest.datasets.tracks2d_import import import_tracks
from vistest.errors import InputError
from vistest.questions import parse_questions
from vistest.scene import Scene
from vistest.tracks2d import (ABSENT, ANNOTATED, INTERPOLATED, UNKNOWN, Tracks2DError, polygon_mask,
                              rle_counts_from_string, rle_decode, rle_encode)
from vistest.visibility.table import compute_visibility

# TrackEval docs/MOTChallenge-format.txt (MOTS example line: frame 52, image 375 x 1242), MIT licence
MOTS_RLE = "WSV:2d;1O10000O10000O1O100O100O1O100O1000000000000000O100O102N5K00O1O1N2O110OO2O001O1NTga3"


def scene2d(objects, num_frames=40, fps=10.0, size=(100, 50), **kw) -> Scene:
    doc = {"format": "vistest.tracks2d/1", "scene_id": "s2d", "fps": fps, "image_size": list(size),
           "num_frames": num_frames, "objects": objects, **kw}
    return Scene.from_dict(doc, root=".", source="t.json")


# ---------------------------------------------------------------------------------------
# RLE
# ---------------------------------------------------------------------------------------
def test_rle_uncompressed_is_column_major():
    # a 3 x 4 (h x w) mask; runs 0/1 alternate starting with 0, down each column (pycocotools maskApi.c rleDecode)
    m = rle_decode({"size": [3, 4], "counts": [4, 2, 5, 1]})
    want = np.zeros((3, 4), bool)
    want[1, 1] = want[2, 1] = True  # flat (column-major) indices 4, 5: column 1, rows 1 and 2
    want[2, 3] = True                # flat index 11: column 3, row 2
    assert (m == want).all()


def test_rle_compressed_official_example_adds_up():
    counts = rle_counts_from_string(MOTS_RLE)
    assert sum(counts) == 375 * 1242  # the delta coding and sign bits decoded right, or the runs would not add up
    m = rle_decode({"size": [375, 1242], "counts": MOTS_RLE})
    ys, xs = np.nonzero(m)
    # column-major: one compact object (a car); read row-major the same runs would scatter over the rows
    assert 0 < xs.max() - xs.min() < 60 and 0 < ys.max() - ys.min() < 20
    assert m.sum() / ((np.ptp(xs) + 1) * (np.ptp(ys) + 1)) > 0.5


def test_rle_compressed_small_counts_by_hand():
    # counts < 16 are one character each (chr(48 + c)); from the 4th on, the difference to the count two before
    assert rle_counts_from_string("4251") == [4, 2, 5, 2 + 1]
    assert rle_counts_from_string("42" + chr(48 + 5) + chr(48 + (0x1F & -1))) == [4, 2, 5, 1]  # -1: sign bit 0x10


def test_rle_errors_name_the_field():
    with pytest.raises(Tracks2DError, match=r"m\.counts: the runs add up to 5"):
        rle_decode({"size": [2, 3], "counts": [1, 4]}, "m")
    with pytest.raises(Tracks2DError, match="m.size"):
        rle_decode({"size": [2], "counts": [6]}, "m")


# ---------------------------------------------------------------------------------------
# polygons (pycocotools maskApi.c rleFrPoly's pixel rule, worked out by hand)
# ---------------------------------------------------------------------------------------
def test_polygon_square_gives_pycocotools_pixels():
    # rleFrPoly upsamples by 5: x 1 -> 5, 4 -> 20. The top edge's walk crosses the centre lines of
    # columns 1, 2, 3 (upsampled 7|8, 12|13, 17|18) at upsampled y 5: row ceil(5.5 / 5 - .5) = 1;
    # the bottom edge at y 15: row ceil(15.5 / 5 - .5) = 3. Column 1..3 hold rows 1, 2: [1, 4) x [1, 3).
    m = polygon_mask([[1, 1, 4, 1, 4, 3, 1, 3]], 5, 6)
    want = np.zeros((5, 6), bool)
    want[1:3, 1:4] = True
    assert (m == want).all()
    # corners at 1.3 and 3.7: (int)(6.5 + .5) = 7, (int)(18.5 + .5) = 19; columns 1..3 (7|8 .. 17|18 inside
    # 7..19); rows ceil(7.5 / 5 - .5) = 1 to ceil(19.5 / 5 - .5) = 4: the pixels whose centres are inside
    m = polygon_mask([[1.3, 1.3, 3.7, 1.3, 3.7, 3.7, 1.3, 3.7]], 5, 6)
    want = np.zeros((5, 6), bool)
    want[1:4, 1:4] = True
    assert (m == want).all()
    # two parts: their union (pycocotools coco.py annToRLE merges them); the same square clockwise or not
    m = polygon_mask([[1, 3, 1, 1, 4, 1, 4, 3], [0, 4, 2, 4, 2, 5, 0, 5]], 5, 6)
    want[:] = False
    want[1:3, 1:4] = True
    want[4, 0:2] = True
    assert (m == want).all()
    r = rle_encode(m)
    assert r["size"] == [5, 6] and (rle_decode(r) == m).all() and r["counts"][:3] == [4, 1, 1]  # column-major


def test_polygon_triangle_area_within_half_its_perimeter():
    # pixels whose centres are (about) inside: the count differs from the exact area by the pixels the
    # boundary cuts, at most about half the perimeter (measured: -25, -2.1, +2.7 for 85, 56, 69 allowed)
    for pts in ([0, 0, 50, 0, 0, 50], [2.3, 3.1, 40.7, 8.2, 15.5, 35.9], [10.5, 1.25, 48.75, 47.5, 3.3, 30.1]):
        p = np.array(pts, float).reshape(-1, 2)
        x, y = p[:, 0], p[:, 1]
        area = 0.5 * abs(np.dot(x, np.roll(y, 1)) - np.dot(y, np.roll(x, 1)))
        perimeter = np.hypot(*(p - np.roll(p, 1, 0)).T).sum()
        m = polygon_mask([pts], 60, 60)
        assert abs(m.sum() - area) <= perimeter / 2
    # the right triangle by hand: pixel (i, j) is in when its centre is strictly inside, i + j <= 48
    assert polygon_mask([[0, 0, 50, 0, 0, 50]], 60, 60).sum() == 49 * 50 // 2


def test_polygon_errors_name_the_field():
    with pytest.raises(Tracks2DError, match=r"seg\[1\]: expected a polygon .* at least 3 points"):
        polygon_mask([[0, 0, 4, 0, 4, 4], [0, 0, 1, 1]], 5, 5, "seg")
    with pytest.raises(Tracks2DError, match="seg: expected COCO polygons"):
        polygon_mask([], 5, 5, "seg")


# ---------------------------------------------------------------------------------------
# states and visibility
# ---------------------------------------------------------------------------------------
def test_states_interpolate_within_the_gap_only():
    # fps 10, max gap 1 s (+ half a frame): annotated at 0, 10 (cup, ball), 30 (ball); 10 -> 30 is 2 s: unknown
    objs = [{"id": "c", "label": "cup", "regions": [{"frame": 0, "box": [0, 0, 10, 10]},
                                                     {"frame": 10, "box": [10, 0, 20, 10]}]},
            {"id": "b", "label": "ball", "regions": [{"frame": 10, "box": [0, 0, 5, 5]},
                                                      {"frame": 30, "box": [0, 0, 5, 5]}]}]
    s = scene2d(objs)
    st = s.tracks2d.states
    assert st.state[0, 0] == ANNOTATED and st.state[10, 0] == ANNOTATED
    assert (st.state[1:10, 0] == INTERPOLATED).all()
    assert np.allclose(st.box[5, 0], [5, 0, 15, 10])              # halfway
    # the hull of both boxes [0, 0, 20, 10], grown by the neighbours' drift (10 px), clipped to the image
    assert np.allclose(st.evidence_box[5, 0], [0, 0, 30, 20])
    assert st.state[0, 1] == ABSENT                               # annotated frame without its box
    assert (st.state[1:10, 1] == UNKNOWN).all()                   # absent at 0, present at 10: enters somewhere
    assert (st.state[11:30, :] == UNKNOWN).all()                  # 2 s between annotated frames
    assert (st.state[31:, :] == UNKNOWN).all() and st.state[30, 0] == ABSENT
    vis = compute_visibility(s)
    assert vis.params["input"] == "tracks2d" and vis.params["occlusion"] == "none"
    assert vis.visible[0, 0] == pytest.approx(100 / 5000) and vis.visible[5, 0] == pytest.approx(100 / 5000)
    assert vis.evidence[5, 0] == pytest.approx(600 / 5000) and vis.visible[0, 1] == 0.0
    assert np.isnan(vis.visible[5, 1]) and np.isnan(vis.evidence[20, 0]) and vis.valid.all()
    assert vis.bbox[5, 0].tolist() == [0, 0, 30, 20] and np.isnan(vis.bbox[0, 1]).all()
    ok = np.isfinite(vis.visible)
    assert (vis.visible[ok] <= vis.evidence[ok] + 1e-12).all()


def test_absent_at_both_ends_is_absent_and_gap_has_half_a_frame_slack():
    objs = [{"id": "a", "label": "cup", "regions": [{"frame": 0, "box": [0, 0, 4, 4]}, {"frame": 30, "box":
                                                    [0, 0, 4, 4]}]},
            {"id": "z", "label": "pen", "regions": [{"frame": 20, "box": [0, 0, 2, 2]}]}]
    st = scene2d(objs, num_frames=31, fps=20.0, annotated_frames=[0, 10, 20, 30], max_gap_s=0.5).tracks2d.states
    assert (st.state[1:10, 1] == ABSENT).all()         # pen absent at 0 and 10
    assert (st.state[11:20, 1] == UNKNOWN).all()       # absent at 10, present at 20
    assert (st.state[1:10, 0] == UNKNOWN).all()        # cup present at 0, absent at 10
    st2 = scene2d(objs, num_frames=31, fps=20.0, annotated_frames=[0, 10, 20, 30], max_gap_s=0.475).tracks2d.states
    assert (st2.state[1:10, 1] == ABSENT).all()        # 10 frames <= 0.475 * 20 + 0.5
    st3 = scene2d(objs, num_frames=31, fps=20.0, annotated_frames=[0, 10, 20, 30], max_gap_s=0.45).tracks2d.states
    assert (st3.state[1:10, 1] == UNKNOWN).all()       # 10 > 9.5


def test_mask_area_is_the_visible_share_and_its_box_the_evidence():
    # a 4 x 6 image; the mask is column 2, rows 1..3 (3 pixels): runs 0 x 9, 1 x 3, 0 x 12 (column-major)
    objs = [{"id": "m", "label": "cup", "regions": [{"frame": 0, "mask": {"size": [4, 6], "counts": [9, 3, 12]}}]}]
    vis = compute_visibility(scene2d(objs, num_frames=1, size=(6, 4)))
    assert vis.params["visible"] == "mask"
    assert vis.visible[0, 0] == pytest.approx(3 / 24) and vis.evidence[0, 0] == pytest.approx(3 / 24)
    assert vis.bbox[0, 0].tolist() == [2, 1, 3, 4]
    objs[0]["regions"][0]["box"] = [2, 1, 3, 3]  # a box that leaves out the mask's last row: refused
    with pytest.raises(InputError, match=r"regions\[0\]\.box: expected it to hold the mask's pixels"):
        scene2d(objs, num_frames=1, size=(6, 4))
    objs[0]["regions"][0]["box"] = [1, 0, 5, 4]  # a box around it: the evidence, the mask the visible share
    vis = compute_visibility(scene2d(objs, num_frames=1, size=(6, 4)))
    assert vis.visible[0, 0] == pytest.approx(3 / 24) and vis.evidence[0, 0] == pytest.approx(16 / 24)


def test_silhouette_rule_refused_pixels_rule_applies():
    objs = [{"id": "c", "label": "cup", "regions": [{"frame": 0, "box": [0, 0, 10, 10]}]}]
    s = scene2d(objs, num_frames=1)
    vis = compute_visibility(s)
    with pytest.raises(InputError, match="silhouette rule needs the object's 3D silhouette"):
        vis.seen(SeenRule("silhouette"), s.image_size)
    assert vis.seen(SeenRule("pixels", 100.0), s.image_size)[0, 0]
    assert not vis.seen(SeenRule("pixels", 101.0), s.image_size)[0, 0]
    with pytest.raises(InputError, match="expected auto or none"):
        compute_visibility(s, occlusion="boxes")


@pytest.mark.parametrize("bad, match", [
    ({"objects": [{"id": "a", "label": "x", "regions": [{"frame": 3, "box": [0, 0, 1, 1]},
                                                         {"frame": 2, "box": [0, 0, 1, 1]}]}]},
     r"objects\[0\]\.regions\[1\]\.frame: expected frames strictly increasing"),
    ({"objects": [{"id": "a", "label": "x", "regions": [{"frame": 0, "box": [5, 0, 1, 1]}]}]},
     r"objects\[0\]\.regions\[0\]\.box: expected x0 <= x1"),
    ({"objects": [{"id": "a", "label": "x", "regions": [{"frame": 40, "box": [0, 0, 1, 1]}]}]},
     r"regions\[0\]\.frame: expected a decoded frame number below num_frames"),
    ({"objects": [{"id": "a", "label": "x", "regions": []}, {"id": "a", "label": "y", "regions": []}]},
     r"objects\[1\]\.id: duplicate object id"),
    ({"objects": [{"id": "a", "label": "x", "regions": [{"frame": 0, "mask": {"size": [2, 2], "counts": [4]}}]}]},
     r"regions\[0\]\.mask\.size: expected the image's \[h, w\] = \[50, 100\]"),
])
def test_bad_input_names_the_field(bad, match):
    with pytest.raises(InputError, match=match):
        scene2d(**bad)


def test_scene_round_trip_and_3d_refused(tmp_path):
    objs = [{"id": 1, "label": "cup", "regions": [{"frame": 0, "box": [0, 0, 10, 10], "area": 40.0}]}]
    s = scene2d(objs, num_frames=2)
    path = tmp_path / "scene.json"
    s.save(path)
    back = Scene.load(path)
    assert back.tracks2d is not None and back.object_ids == ("1",) and back.num_frames == 2 and not back.has_3d
    assert back.tracks2d.objects[0].regions[0].area == 40.0
    with pytest.raises(InputError, match="needs 3D boxes and camera poses"):
        back.require_3d("vistest audit")


# ---------------------------------------------------------------------------------------
# the budget stage
# ---------------------------------------------------------------------------------------
def _q(**kw) -> dict:
    return {"scene_id": "s2d", "question": "?", **kw}


def _truth(scene, records, budgets):
    qs = parse_questions([json.dumps(r) for r in records], source="q.jsonl", scene=scene)
    return budget_truth(scene, compute_visibility(scene), qs, TruthConfig(budgets=budgets))


def test_unknown_status_when_the_answer_turns_on_unknown_frames():
    # 40 frames at 10 fps; annotated at 0, 10, 20, 30 only for the cup (gap 1 s); the ball at 30 only: frames
    # 21..29 are unknown for the ball (absent at 20, present at 30), and 31..39 for both (after the last)
    big = [0, 0, 50, 50]  # 50% of the 100 x 50 image: seen by the 5% rule
    objs = [{"id": "c", "label": "cup", "regions": [{"frame": f, "box": big} for f in (0, 10, 20, 30)]},
            {"id": "b", "label": "ball", "regions": [{"frame": 30, "box": big}]}]
    s = scene2d(objs, annotated_frames=[0, 10, 20, 30])
    recs = [_q(id="count", question_type="object_counting", category="ball", ground_truth=1),
            _q(id="cup", question_type="video_mcq", options=["A. x", "B. y"], ground_truth="A", objects=["c"]),
            _q(id="none", question_type="video_mcq", options=["A. x", "B. y"], ground_truth="B"),
            _q(id="size", question_type="object_size_estimation", objects=["c"], ground_truth=12)]
    t = _truth(s, recs, [2, 4, "all"])
    rows = {(str(r.budget), r.id): r for b in t.budgets for r in t.rows(b)}
    # budget 2 (uniform): frames 0 and 39; the ball is absent at 0 and unknown at 39
    r = rows[("2", "count")]
    assert r.status == "unknown" and r.ground_truth is None and r.reason == "depends_on_unknown_frames"
    assert r.fields["unknown_frames"] == [39] and r.fields["unknown_objects"] == ["b"]
    assert r.fields["status_if_unknown_unseen"] == "unanswerable"
    assert rows[("2", "cup")].status == "kept"  # the cup is seen at frame 0: settled whatever 39 shows
    assert rows[("all", "count")].status == "kept" and rows[("all", "count")].ground_truth == 1
    assert rows[("2", "none")].reason == "no_objects_named" and rows[("2", "none")].status == "kept"
    assert rows[("all", "size")].status == "unanswerable" and rows[("all", "size")].reason == "needs_3d"


def test_a_subject_unseen_in_every_known_frame_decides_the_row_whatever_the_unknown_frames_show():
    """The review's case: 25 frames annotated at 0, 10, 20, 24; the sock is absent at all four (known
    everywhere), the ball seen at 20 only (unknown 11..19 and 21..23). At 4 frames (0, 8, 16, 24) "every
    object seen" and the order are unanswerable for the sock whatever frame 16 shows: unanswerable, not
    unknown. With the sock seen at 0, "every object seen" turns on the ball at 16: unknown."""
    big = [0, 0, 50, 50]
    annotated = [0, 10, 20, 24]
    objs = [{"id": "s", "label": "sock", "regions": []},
            {"id": "b", "label": "ball", "regions": [{"frame": 20, "box": big}]},
            {"id": "c", "label": "cup", "regions": [{"frame": f, "box": big} for f in annotated]}]
    recs = [_q(id="both", question_type="video_mcq", options=["A. x", "B. y"], ground_truth="A", objects=["s", "b"]),
            _q(id="order", question_type="obj_appearance_order", objects=["s", "b", "c"],
               options=["A. sock, ball, cup", "B. cup, ball, sock"], ground_truth="B")]

    def rows():
        t = _truth(scene2d(objs, num_frames=25, annotated_frames=annotated), recs, [4])
        assert list(t.rows(4)[0].frame_indices) == [0, 8, 16, 24]
        return {r.id: r for r in t.rows(4)}

    r = rows()
    assert (r["both"].status, r["both"].reason) == ("unanswerable", "object_unseen")
    assert (r["order"].status, r["order"].reason) == ("unanswerable", "object_unseen")
    objs[0]["regions"] = [{"frame": 0, "box": big}]
    r = rows()
    assert r["both"].status == "unknown" and r["both"].fields["unknown_objects"] == ["b"]
    assert r["both"].fields["unknown_frames"] == [16]


def test_appearance_order_settled_only_when_first_sightings_cannot_cross():
    big = [0, 0, 50, 50]
    # cup seen from 0; ball first seen at 20, unknown 11..19 (absent at 10): the ball can not come before the cup
    objs = [{"id": "c", "label": "cup", "regions": [{"frame": f, "box": big} for f in (0, 10, 20)]},
            {"id": "b", "label": "ball", "regions": [{"frame": 20, "box": big}]}]
    s = scene2d(objs, num_frames=21, annotated_frames=[0, 10, 20])
    rec = _q(id="order", question_type="obj_appearance_order", objects=["c", "b"],
             options=["A. cup, ball", "B. ball, cup"], ground_truth="A")
    row = _truth(s, [rec], ["all"]).rows("all")[0]
    assert row.status == "kept"
    # now the cup is first seen at 20 too, unknown 11..19; the ball unknown 11..19: either may come first
    objs[0]["regions"] = [{"frame": 20, "box": big}]
    s = scene2d(objs, num_frames=21, annotated_frames=[0, 10, 20])
    row = _truth(s, [rec], ["all"]).rows("all")[0]
    assert row.status == "unknown" and set(row.fields["unknown_objects"]) == {"b", "c"}


# ---------------------------------------------------------------------------------------
# importers
# ---------------------------------------------------------------------------------------
_VIDEOS: dict = {}


def blank_video(path: Path, frames: int, size=(64, 48), fps: float = 30.0) -> Path:
    """A black video (copied from one made once per session for the same arguments: the importers
    decode the video they are given and check it against the annotation)."""
    import shutil
    import tempfile

    from vistest.videos.ffmpeg import VideoWriter

    key = (frames, tuple(size), fps)
    if key not in _VIDEOS:
        made = Path(tempfile.mkdtemp(prefix="vistest-blank-")) / "v.mp4"
        with VideoWriter(made, fps=fps, size=size, preset="ultrafast") as wr:
            for _ in range(frames):
                wr.write(np.zeros((size[1], size[0], 3), np.uint8))
        _VIDEOS[key] = made
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_VIDEOS[key], path)
    return path


def write_perception_test(root: Path) -> Path:
    """One video in the layout the Perception Test README documents ("Perception Test annotations"):
    640 x 480 (resolution [H, W]), 90 frames at 30 fps, boxes as fractions, frame_ids 0, 30, 60."""
    root.mkdir(parents=True, exist_ok=True)
    blank_video(root / "video_9.mp4", 90, (640, 480))
    entry = {"metadata": {"split": "valid", "video_id": "video_9", "frame_rate": 30, "num_frames": 90,
                          "resolution": [480, 640]},
             "object_tracking": [
                 {"id": 0, "label": "cup", "is_occluder": False, "bounding_boxes": [[0.5, 0.5, 0.75, 1.0],
                                                                                     [0.25, 0.5, 0.5, 1.0]],
                  "frame_ids": [0, 30], "timestamps": [0, 1000000], "initial_tracking_box": [1, 0],
                  "is_masked": [False, True]},
                 {"id": 1, "label": "ball", "bounding_boxes": [[0.0, 0.0, 0.1, 0.1]], "frame_ids": [60],
                  "timestamps": [2000000]}],
             "mc_question": [{"id": 3, "question": "What is under the cup?", "options": ["ball", "nothing", "key"],
                              "answer_id": 1, "area": "Memory", "reasoning": "Descriptive", "tag": ["occlusion"]}],
             "grounded_question": [{"id": 7, "question": "Which object is put down?", "answers": [1],
                                    "area": "Physics", "reasoning": "Descriptive"}]}
    path = root / "annotations.json"
    path.write_text(json.dumps({"video_9": entry}))
    return path


def test_perception_test_import(tmp_path):
    ann = write_perception_test(tmp_path / "pt")
    scene_path, imp = import_tracks("perception-test", ann, tmp_path / "out")
    s = Scene.load(scene_path)
    assert s.image_size == (640, 480) and s.num_frames == 90 and s.tracks2d.annotated_frames == (0, 30, 60)
    cup = s.tracks2d.objects[0]
    assert cup.regions[0].box.tolist() == [320, 240, 480, 480]  # fractions x (W, H): pixel edges
    assert cup.regions[1].extra == {"is_masked": True}
    st = s.tracks2d.states
    assert st.state[15, 0] == INTERPOLATED and st.state[60, 0] == ABSENT and st.state[15, 1] == ABSENT
    assert st.state[45, 0] == UNKNOWN and st.state[45, 1] == UNKNOWN and st.state[75, 0] == UNKNOWN
    assert imp.warnings == []  # timestamps (µs) agree with frame_ids at 30 frames/s
    qs = [json.loads(x) for x in (tmp_path / "out" / "questions.jsonl").read_text().splitlines()]
    mc, gq = qs
    assert mc["options"] == ["A. ball", "B. nothing", "C. key"] and mc["ground_truth"] == "B" and mc["objects"] == []
    assert gq["objects"] == ["1"] and gq["ground_truth"] == "ball" and gq["answer_kind"] == "text"


def write_graded_video(path: Path, frames: int, fps: float = 30.0, size=(64, 48)) -> Path:
    """A video whose decoded frame k is a flat grey of level 2 k + 20 (frames identify themselves)."""
    from vistest.videos.ffmpeg import VideoWriter

    with VideoWriter(path, fps=fps, size=size, preset="ultrafast") as wr:
        for k in range(frames):
            wr.write(np.full((size[1], size[0], 3), 2 * k + 20, np.uint8))
    return path


def test_perception_test_cut_frame_mapping(tmp_path):
    from vistest.videos.ffmpeg import count_frames, read_frames

    ann = write_perception_test(tmp_path / "pt")
    doc = json.loads(ann.read_text())
    doc["video_9"]["metadata"]["resolution"] = [48, 64]
    ann.write_text(json.dumps(doc))
    write_graded_video(tmp_path / "pt" / "video_9.mp4", 90)
    cuts = tmp_path / "cut_frame_mapping_valid.json"
    cuts.write_text(json.dumps({"video_9": 45, "video_2": 10}))  # README: the frame id where the cut is made
    opts = {"cut_frame_mapping": str(cuts), "cut_frame_is": "removed"}
    scene_path, imp = import_tracks("perception-test", ann, tmp_path / "out", options=opts)
    s = Scene.load(scene_path)
    # the cut video: source frames 0..44 (frame 45 the first cut off); the ball's only box, at 60, is past the cut
    assert s.num_frames == 45 and s.tracks2d.annotated_frames == (0, 30)
    assert [len(o.regions) for o in s.tracks2d.objects] == [2, 0]
    st = s.tracks2d.states
    assert st.state[15, 0] == INTERPOLATED and st.state[30, 1] == ABSENT
    assert st.state[31, 0] == UNKNOWN and st.state[44, 1] == UNKNOWN  # after the last annotated frame before the cut
    video = tmp_path / "out" / "video.mp4"
    assert count_frames(video) == 45
    levels = [float(f.mean()) for f in read_frames(video, [0, 30, 44])]
    assert levels == pytest.approx([20, 80, 108], abs=2)  # cut frame k = source frame k
    qs = [json.loads(x) for x in (tmp_path / "out" / "questions.jsonl").read_text().splitlines()]
    assert [q["question_type"] for q in qs] == ["video_mcq"]
    assert len(imp.warnings) == 1 and "1 grounded questions left out" in imp.warnings[0]
    assert imp.provenance["cut"]["frames_kept"] == 45 and imp.provenance["cut"]["frame"] == 45
    r = CliRunner().invoke(cli, ["budget", str(scene_path), str(tmp_path / "out" / "questions.jsonl"), "--budgets",
                                 "8,all", "-o", str(tmp_path / "b")])
    assert r.exit_code == 0, r.output
    row = json.loads((tmp_path / "b" / "8_frame.jsonl").read_text())
    assert row["frame_indices"] == [0, 6, 12, 18, 25, 31, 37, 44]  # sampled over the cut's 45 frames
    # the frame id as the last frame kept: one frame more
    scene_path, _ = import_tracks("perception-test", ann, tmp_path / "out2",
                                  options={**opts, "cut_frame_is": "kept"})
    assert Scene.load(scene_path).num_frames == 46 and count_frames(tmp_path / "out2" / "video.mp4") == 46


def test_perception_test_cut_frame_mapping_refuses_what_the_readme_leaves_open(tmp_path):
    ann = write_perception_test(tmp_path / "pt")
    cuts = tmp_path / "cuts.json"

    def refused(mapping, match, **opts):
        cuts.write_text(json.dumps(mapping))
        with pytest.raises(AdapterError, match=match):
            import_tracks("perception-test", ann, tmp_path / "out", options={"cut_frame_mapping": str(cuts), **opts})

    refused({"video_9": 45}, r"cut_frame_is=None: expected one of removed, kept: .*README")
    refused({"video_9": 45}, "cut_frame_is='first'", cut_frame_is="first")
    refused({"video_2": 45}, r"video_9: not in the cut_frame_mapping; .* uncut", cut_frame_is="removed")
    refused({"video_9": "45"}, "video_9: expected an integer frame id", cut_frame_is="removed")
    refused({"video_9": 0}, r"keeps 0 frames; expected 1 \.\. 90", cut_frame_is="removed")
    refused({"video_9": -1}, "keeps 0 frames", cut_frame_is="kept")
    refused({"video_9": 90}, "keeps 91 frames", cut_frame_is="kept")
    refused([["video_9", 45]], r"expected a JSON object \{video_id: frame id", cut_frame_is="removed")
    with pytest.raises(AdapterError, match="cut_frame_is: only with -O cut_frame_mapping"):
        import_tracks("perception-test", ann, tmp_path / "out", options={"cut_frame_is": "kept"})
    assert not (tmp_path / "out").exists()


def test_perception_test_objects_option_and_errors(tmp_path):
    ann = write_perception_test(tmp_path / "pt")
    named = tmp_path / "objects.json"
    named.write_text(json.dumps({"video_9_mc_3": ["0", "1"]}))
    _, imp = import_tracks("perception-test", ann, tmp_path / "out", options={"objects": str(named)})
    assert imp.questions[0]["objects"] == ["0", "1"]
    named.write_text(json.dumps({"video_9_mc_3": "12"}))  # a string is not a list of ids (not ["1", "2"])
    with pytest.raises(AdapterError, match=r"objects.json: video_9_mc_3: expected a list of object track ids"):
        import_tracks("perception-test", ann, tmp_path / "out0", options={"objects": str(named)})
    doc = json.loads(ann.read_text())
    doc["video_9"]["object_tracking"][0]["timestamps"] = [0, 2000000]  # 60 frames at 30 frames/s, not 30
    ann.write_text(json.dumps(doc))
    _, imp = import_tracks("perception-test", ann, tmp_path / "out1")
    assert len(imp.warnings) == 1 and "timestamps (us) disagree with frame_ids by up to 30.0 frames" in imp.warnings[0]
    doc["video_9"]["object_tracking"][0]["timestamps"] = [0, 1000]  # the README's unit, milliseconds: they agree
    doc["video_9"]["object_tracking"][0]["is_masked"] = [False, True]  # hidden under a cup at frame 30
    ann.write_text(json.dumps(doc))
    scene_path, imp = import_tracks("perception-test", ann, tmp_path / "out1b")
    assert imp.warnings == []
    masked = Scene.load(scene_path).tracks2d.objects[0].regions[1]
    assert (masked.frame, masked.area) == (30, 0.0) and masked.box.tolist() != [0, 0, 0, 0]  # not a sighting
    doc["video_9"]["object_tracking"][0]["frame_ids"] = [30, None]
    ann.write_text(json.dumps(doc))
    with pytest.raises(AdapterError, match=r"object_tracking\[0\]\.frame_ids\[1\]: expected a decoded frame"):
        import_tracks("perception-test", ann, tmp_path / "out1c")
    doc["video_9"]["object_tracking"][0]["frame_ids"] = [30, 30]
    ann.write_text(json.dumps(doc))
    with pytest.raises(AdapterError, match=r"annotations.json: video_9.object_tracking\[0\]\.frame_ids: expected each"):
        import_tracks("perception-test", ann, tmp_path / "out1d")
    doc["video_9"]["object_tracking"][0]["frame_ids"] = [0, 30]
    doc["video_9"]["grounded_question"][0]["answers"] = [5]
    ann.write_text(json.dumps(doc))
    with pytest.raises(AdapterError, match=r"grounded_question\[0\]\.answers: \['5'\] are not object track ids"):
        import_tracks("perception-test", ann, tmp_path / "out2")
    doc["video_9"]["object_tracking"][0]["bounding_boxes"][0] = [320, 240, 480, 480]
    ann.write_text(json.dumps(doc))
    with pytest.raises(AdapterError, match=r"bounding_boxes\[0\]: expected fractions"):
        import_tracks("perception-test", ann, tmp_path / "out3")


def write_mot(root: Path) -> Path:
    """A MOT17-style sequence (MOTChallenge-format.txt, TrackEval's reader): 5 frames of 64 x 48."""
    (root / "gt").mkdir(parents=True)
    (root / "seqinfo.ini").write_text("[Sequence]\nname=MOT-TINY\nimDir=img1\nframeRate=25\nseqLength=5\n"
                                      "imWidth=64\nimHeight=48\nimExt=.jpg\n")
    (root / "gt" / "gt.txt").write_text("1,1,1,1,10,20,1,1,1.0\n"     # frame 1 -> 0; pixel (1, 1) -> edge 0
                                        "2,1,3,1,10,20,1,1,0.5\n"      # half visible: area 100
                                        "2,2,30,10,8,8,0,1,1\n"        # conf 0: ignored
                                        "5,3,60,40,10,10,1,3,1\n")     # a car, clipped by the image
    return root


def test_mot_import(tmp_path):
    seq = write_mot(tmp_path / "MOT-TINY")
    video = blank_video(tmp_path / "v.mp4", 5, fps=25.0)
    scene_path, _ = import_tracks("mot", seq, tmp_path / "out", video=str(video))
    s = Scene.load(scene_path)
    # TrackEval's ground truth: conf 0 and classes other than pedestrian (the car) left out
    assert s.scene_id == "MOT-TINY" and s.fps == 25 and s.num_frames == 5 and s.object_ids == ("1",)
    r0, r1 = s.tracks2d.objects[0].regions
    assert (r0.frame, r0.box.tolist(), r0.area) == (0, [0, 0, 10, 20], 200.0)
    assert (r1.frame, r1.box.tolist(), r1.area) == (1, [2, 0, 12, 20], 100.0)
    vis = compute_visibility(s)
    assert vis.visible[2, 0] == 0.0 and vis.visible[1, 0] == pytest.approx(100 / (64 * 48))  # dense: absent, known
    _, imp = import_tracks("mot", seq, tmp_path / "out2", video=str(video), options={"keep_ignored": True})
    assert [o["id"] for o in imp.scene["objects"]] == ["1", "2", "3"]
    car = Scene.load(tmp_path / "out2" / "scene.json").tracks2d.objects[2]
    assert car.label == "car" and car.regions[0].area == pytest.approx(5 * 9)  # [59, 39, 69, 49] inside 64 x 48


@pytest.mark.parametrize("line, msg", [("1,nan,1,1,10,20,1,1,1", r"gt.txt:1: id: expected a finite number, got nan"),
                                       ("1,1,inf,1,10,20,1,1,1", r"gt.txt:1: bb_left: expected a finite number"),
                                       ("nan,1,1,1,10,20,1,1,1", r"gt.txt:1: frame: expected a finite number"),
                                       ("1,1.5,1,1,10,20,1,1,1", r"gt.txt:1: id: expected an integer track id")])
def test_mot_refuses_non_finite_values_naming_line_and_field(tmp_path, line, msg):
    seq = write_mot(tmp_path / "MOT-TINY")
    (seq / "gt" / "gt.txt").write_text(line + "\n")
    with pytest.raises(AdapterError, match=msg):
        import_tracks("mot", seq, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_mot_import_encodes_img1_in_order(tmp_path):
    """Without --video the sequence's img1/000001.jpg.. become the video: decoded frame k is image k + 1
    (uniform grey levels survive JPEG and H.264 within a few levels); an image of another size is refused."""
    import cv2

    from vistest.videos.ffmpeg import read_frames

    seq = write_mot(tmp_path / "MOT-TINY")
    (seq / "img1").mkdir()
    levels = [30, 80, 130, 180, 230]
    for k, level in enumerate(levels):
        cv2.imwrite(str(seq / "img1" / f"{k + 1:06d}.jpg"), np.full((48, 64, 3), level, np.uint8))
    scene_path, _ = import_tracks("mot", seq, tmp_path / "out")
    s = Scene.load(scene_path)
    frames = list(read_frames(s.path(s.video), range(5)))
    assert len(frames) == 5 and frames[0].shape[:2] == (48, 64)
    assert [round(float(f.mean())) for f in frames] == pytest.approx(levels, abs=4)
    cv2.imwrite(str(seq / "img1" / "000003.jpg"), np.zeros((40, 64, 3), np.uint8))
    with pytest.raises(AdapterError, match=r"000003.jpg: a 64x40 image; expected 64x48 \(seqinfo.ini imWidth x "
                                           r"imHeight\)"):
        import_tracks("mot", seq, tmp_path / "out2")


def test_odd_sized_images_become_an_even_video_the_scene_describes(tmp_path):
    """H.264 4:2:0 needs even sizes: a 63 x 47 sequence is padded black on the right and bottom, and the
    scene says the video's 64 x 48 (its boxes where they were), so the video check passes without scaling."""
    import cv2

    from vistest.videos.source import check_video

    seq = write_mot(tmp_path / "MOT-ODD")
    ini = seq / "seqinfo.ini"
    ini.write_text(ini.read_text().replace("imWidth=64", "imWidth=63").replace("imHeight=48", "imHeight=47"))
    (seq / "img1").mkdir()
    for k in range(5):
        cv2.imwrite(str(seq / "img1" / f"{k + 1:06d}.jpg"), np.full((47, 63, 3), 128, np.uint8))
    scene_path, imp = import_tracks("mot", seq, tmp_path / "out")
    s = Scene.load(scene_path)
    assert tuple(s.image_size) == (64, 48) and imp.provenance["seqinfo"]["imWidth"] == 63
    checked, info, _ = check_video(s, scene_path)
    assert tuple(info.size) == (64, 48) and checked is s
    assert s.tracks2d.objects[0].regions[0].box.tolist() == [0, 0, 10, 20]  # not scaled by 64 / 63


def test_import_cli(tmp_path):
    ann = write_perception_test(tmp_path / "pt")
    r = CliRunner().invoke(cli, ["import", "perception-test", str(ann), "-o", str(tmp_path / "out"), "--quiet"])
    assert r.exit_code == 0, r.output
    assert Path(r.output.strip()).name == "scene.json"
    r = CliRunner().invoke(cli, ["import", "mot", str(tmp_path / "nowhere"), "-o", str(tmp_path / "o2")])
    assert r.exit_code == 2 and "PATH for mot not found" in r.output
    r = CliRunner().invoke(cli, ["import", "perception-test", str(ann), "-o", str(tmp_path / "o3"), "-O", "x=1"])
    assert r.exit_code == 2 and "not an option of perception-test" in r.output


def _video(path: Path, n: int, size=(64, 48)) -> Path:
    from vistest.videos.ffmpeg import VideoWriter

    with VideoWriter(path, fps=10.0, size=size, preset="ultrafast") as w:
        for _ in range(n):
            w.write(np.zeros((size[1], size[0], 3), np.uint8))
    return path


def test_tao_import(tmp_path):
    # TAO (docs/TAO-format.txt): images are the annotated frames with frame_index; boxes COCO [x, y, w, h]
    doc = {"videos": [{"id": 1, "name": "train/YFCC/v_1", "width": 64, "height": 48},
                      {"id": 2, "name": "other", "width": 64, "height": 48}],
           "images": [{"id": 10, "video_id": 1, "frame_index": 0}, {"id": 11, "video_id": 1, "frame_index": 10},
                      {"id": 12, "video_id": 2, "frame_index": 0}],
           "tracks": [{"id": 5, "category_id": 3, "video_id": 1}, {"id": 6, "category_id": 4, "video_id": 1}],
           "categories": [{"id": 3, "name": "person"}, {"id": 4, "name": "dog"}],
           "annotations": [{"image_id": 10, "track_id": 5, "bbox": [2, 4, 10, 8]},
                           {"image_id": 11, "track_id": 5, "bbox": [12, 4, 10, 8]},
                           {"image_id": 11, "track_id": 6, "bbox": [0, 0, 4, 4]}]}
    ann = tmp_path / "tao.json"
    ann.write_text(json.dumps(doc))
    video = _video(tmp_path / "v.mp4", 12)
    with pytest.raises(AdapterError, match="2 videos; pick one"):
        import_tracks("tao", ann, tmp_path / "o0", video=str(video))
    scene_path, _ = import_tracks("tao", ann, tmp_path / "out", video=str(video), options={"video": "train/YFCC/v_1"})
    s = Scene.load(scene_path)
    assert s.scene_id == "train_YFCC_v_1" and s.num_frames == 12 and s.tracks2d.annotated_frames == (0, 10)
    person, dog = s.tracks2d.objects
    assert (person.label, person.regions[0].box.tolist()) == ("person", [2, 4, 12, 12])  # x1 = x + w, no shift
    st = s.tracks2d.states
    assert st.state[5, 0] == INTERPOLATED and st.state[5, 1] == UNKNOWN and st.state[0, 1] == ABSENT
    assert st.state[11, 0] == UNKNOWN  # after the last annotated frame


def test_youtube_vis_import_masks(tmp_path):
    import cv2

    frames = tmp_path / "JPEGImages"
    (frames / "abc").mkdir(parents=True)
    for k in range(3):
        cv2.imwrite(str(frames / "abc" / f"{5 * k:05d}.jpg"), np.full((4, 6, 3), 40 * k, np.uint8))
    names = [f"abc/{5 * k:05d}.jpg" for k in range(3)]
    seg = {"size": [4, 6], "counts": [9, 3, 12]}  # column 2, rows 1..3
    doc = {"videos": [{"id": 1, "width": 6, "height": 4, "length": 3, "file_names": names}],
           "categories": [{"id": 1, "name": "cat"}],
           "annotations": [{"id": 7, "video_id": 1, "category_id": 1, "iscrowd": 0,
                            "segmentations": [seg, None, seg], "bboxes": [[2, 1, 1, 3], None, [2, 1, 1, 3]],
                            "areas": [3, None, 3]}]}
    ann = tmp_path / "ytvis.json"
    ann.write_text(json.dumps(doc))
    scene_path, _ = import_tracks("youtube-vis", ann, tmp_path / "out", options={"frames": str(frames)})
    s = Scene.load(scene_path)
    assert s.scene_id == "abc" and s.num_frames == 3 and s.fps == 6.0 and s.tracks2d.annotated_frames == (0, 1, 2)
    r = s.tracks2d.objects[0].regions
    assert [x.frame for x in r] == [0, 2] and r[0].area == 3 and r[0].box.tolist() == [2, 1, 3, 4]
    vis = compute_visibility(s)
    assert vis.visible[0, 0] == pytest.approx(3 / 24) and vis.visible[1, 0] == 0.0  # None at an annotated frame
    assert (tmp_path / "out" / "video.mp4").is_file()


def test_youtube_vis_import_polygons(tmp_path):
    import cv2

    frames = tmp_path / "JPEGImages"
    (frames / "abc").mkdir(parents=True)
    for k in range(2):
        cv2.imwrite(str(frames / "abc" / f"{5 * k:05d}.jpg"), np.full((8, 10, 3), 40 * k, np.uint8))
    names = [f"abc/{5 * k:05d}.jpg" for k in range(2)]
    poly = [[1, 1, 4, 1, 4, 3, 1, 3], [6, 5, 9, 5, 9, 8, 6, 8]]  # two parts: [1, 4) x [1, 3) and [6, 9) x [5, 8)
    doc = {"videos": [{"id": 1, "width": 10, "height": 8, "length": 2, "file_names": names}],
           "categories": [{"id": 1, "name": "cat"}],
           "annotations": [{"id": 7, "video_id": 1, "category_id": 1, "iscrowd": 0,
                            "segmentations": [poly, None], "bboxes": [[1, 1, 8, 7], None], "areas": [15, None]}]}
    ann = tmp_path / "ytvis.json"
    ann.write_text(json.dumps(doc))
    scene_path, imp = import_tracks("youtube-vis", ann, tmp_path / "out", options={"frames": str(frames)})
    assert imp.warnings == []
    r = Scene.load(scene_path).tracks2d.objects[0].regions
    assert [x.frame for x in r] == [0] and r[0].area == 6 + 9 and r[0].box.tolist() == [1, 1, 9, 8]
    want = np.zeros((8, 10), bool)
    want[1:3, 1:4] = want[5:8, 6:9] = True
    assert (rle_decode(r[0].mask) == want).all()
    doc["annotations"][0]["segmentations"][0] = [[1, 1, 4, 1, 4]]
    ann.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"annotations\[0\]\.segmentations\[0\]\[0\]: expected a polygon"):
        import_tracks("youtube-vis", ann, tmp_path / "out2", options={"frames": str(frames)})


def test_3d_commands_refuse_a_2d_scene(tmp_path):
    ann = write_perception_test(tmp_path / "pt")
    scene_path, _ = import_tracks("perception-test", ann, tmp_path / "out")
    r = CliRunner().invoke(cli, ["audit", str(scene_path)])
    assert r.exit_code == 2 and "vistest audit needs 3D boxes and camera poses" in r.output
    r = CliRunner().invoke(cli, ["budget", str(scene_path), str(tmp_path / "out" / "questions.jsonl"), "--budgets",
                                 "4,all", "-o", str(tmp_path / "b"), "--seen-rule", "silhouette"])
    assert r.exit_code == 2 and "silhouette rule needs the object's 3D silhouette" in r.output
    r = CliRunner().invoke(cli, ["budget", str(scene_path), str(tmp_path / "out" / "questions.jsonl"), "--budgets",
                                 "4,all", "-o", str(tmp_path / "b")])
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in (tmp_path / "b" / "4_frame.jsonl").read_text().splitlines()]
    assert [r["status"] for r in rows] == ["kept", "unknown"]  # 4 frames 0, 30, 59, 89: the ball unknown at 89


def test_a_resized_video_scales_the_regions():
    from vistest.videos.source import scale_scene

    objs = [{"id": "c", "label": "cup", "regions": [{"frame": 0, "box": [10, 10, 20, 30]}]}]
    s = scale_scene(scene2d(objs, num_frames=1), (200, 100))  # twice the annotation's 100 x 50
    vis = compute_visibility(s)
    assert vis.visible[0, 0] == pytest.approx(200 / 5000) and vis.bbox[0, 0].tolist() == [20, 20, 40, 60]


def test_dummies_remove_a_frame_for_the_question_s_own_unknown_objects_only():
    from vistest.videos.evidence import EvidenceTable, dummy_evidence

    big = [0, 0, 50, 50]
    # cup annotated at 0, 10, 20 (seen everywhere 0..20); ball at 20 only: unknown 11..19 (absent at 10), absent 0..9
    objs = [{"id": "c", "label": "cup", "regions": [{"frame": f, "box": big} for f in (0, 10, 20)]},
            {"id": "b", "label": "ball", "regions": [{"frame": 20, "box": [60, 0, 70, 10]}]}]
    s = scene2d(objs, num_frames=21, annotated_frames=[0, 10, 20])
    table = EvidenceTable(compute_visibility(s), s.num_frames, 0.0)
    q_ball, q_cup = parse_questions([json.dumps(_q(id="b", question_type="grounded_objects", objects=["b"],
                                                   answer_kind="text", ground_truth="ball")),
                                     json.dumps(_q(id="c", question_type="grounded_objects", objects=["c"],
                                                   answer_kind="text", ground_truth="cup"))], source="q", scene=s)
    assert dummy_evidence(table, q_ball, s)[2] == tuple(range(11, 21))  # its unknown frames and its frame 20
    assert dummy_evidence(table, q_cup, s)[2] == tuple(range(21))       # the cup shows everywhere; the ball's
    assert table.unknown_of(["c"]).sum() == 0                            # unknown frames are not the cup's
    rects = table.mask_rects(["b"], (100, 50), 2)
    assert rects == {20: ((58, 0, 72, 12),)}  # the box grown by the 2-pixel margin, even-aligned


def test_bdd100k_import_inclusive_corners(tmp_path):
    import cv2

    imgs = tmp_path / "images" / "b1c66a42-6f7d68ca"
    imgs.mkdir(parents=True)
    frames = []
    for k in range(3):
        name = f"b1c66a42-6f7d68ca-{k + 1:07d}.jpg"
        cv2.imwrite(str(imgs / name), np.zeros((20, 30, 3), np.uint8))
        frames.append({"name": name, "videoName": "b1c66a42-6f7d68ca", "frameIndex": k, "labels": []})
    # Scalabel: x2, y2 are the last pixel's indices (box2d_to_bbox: width = x2 - x1 + 1)
    frames[0]["labels"] = [{"id": "7", "category": "car", "attributes": {"occluded": True, "crowd": False},
                            "box2d": {"x1": 2, "y1": 3, "x2": 11, "y2": 7}},
                           {"id": "8", "category": "pedestrian", "attributes": {"crowd": True},
                            "box2d": {"x1": 0, "y1": 0, "x2": 4, "y2": 4}}]
    frames[2]["labels"] = [{"id": "7", "category": "car", "box2d": {"x1": 4, "y1": 3, "x2": 13, "y2": 7}}]
    ann = tmp_path / "b1c66a42-6f7d68ca.json"
    ann.write_text(json.dumps(frames[::-1]))  # any order: sorted by frameIndex
    scene_path, imp = import_tracks("bdd100k", ann, tmp_path / "out", options={"frames": str(tmp_path / "images")})
    s = Scene.load(scene_path)
    assert s.scene_id == "b1c66a42-6f7d68ca" and s.fps == 5.0 and s.num_frames == 3 and s.image_size == (30, 20)
    assert s.object_ids == ("7",) and imp.provenance["ignored_boxes_skipped"] == 1  # the crowd box
    car = s.tracks2d.objects[0]
    assert car.regions[0].box.tolist() == [2, 3, 12, 8] and car.regions[0].area == 50.0  # 10 x 5 pixels
    assert s.tracks2d.states.state[1, 0] == ABSENT  # every frame annotated: no box at frame 1 is absent
    # a video of another length (the raw 30 fps one beside 5 fps labels) would misalign: refused
    from vistest.videos.ffmpeg import VideoWriter

    with VideoWriter(tmp_path / "raw.mp4", fps=30.0, size=(30, 20)) as wr:
        for _ in range(18):
            wr.write(np.zeros((20, 30, 3), np.uint8))
    with pytest.raises(AdapterError, match=r"raw.mp4: --video: 18 frames, .* annotates 3"):
        import_tracks("bdd100k", ann, tmp_path / "out2", video=str(tmp_path / "raw.mp4"))


def test_presence_rule():
    big = [0, 0, 50, 50]
    # cups c1 (seen at 0) and c2 (unknown 11..19, then seen at 20); the ball only at 20 (unknown 11..19, absent 0..10)
    objs = [{"id": "c1", "label": "cup", "regions": [{"frame": 0, "box": big}, {"frame": 10, "box": big}]},
            {"id": "c2", "label": "cup", "regions": [{"frame": 20, "box": big}]},
            {"id": "b", "label": "ball", "regions": [{"frame": 20, "box": big}]},
            {"id": "t", "label": "toy", "regions": [{"frame": 20, "box": [0, 0, 1, 1]}]}]  # too small to be seen
    s = scene2d(objs, num_frames=21, annotated_frames=[0, 10, 20])
    opts = ["A. yes", "B. no"]
    recs = [_q(id="cup", question_type="object_presence", category="cup", options=opts, ground_truth="A"),
            _q(id="ball", question_type="object_presence", objects=["b"], options=opts, ground_truth="A"),
            _q(id="ball0", question_type="object_presence", objects=["b"], options=opts, ground_truth="A",
               allow_zero=True),
            _q(id="toy", question_type="object_presence", category="toy", options=opts, ground_truth="B",
               allow_zero=True)]
    t = _truth(s, recs, ["all", 2, 4])  # uniform: 2 frames 0, 20; 4 frames 0, 6, 13, 20
    rows = {(str(r.budget), r.id): r for b in t.budgets for r in t.rows(b)}
    assert rows[("all", "cup")].status == "kept" and rows[("all", "ball")].status == "kept"
    assert rows[("2", "cup")].status == "kept"       # c1 seen at 0: settled, whatever c2 does
    assert rows[("2", "ball")].status == "kept"      # frames 0 and 20: the ball is seen at 20
    assert rows[("2", "toy")].status == "kept"       # seen nowhere, and no selected frame is unknown for it
    assert rows[("4", "toy")].status == "unknown" and rows[("4", "toy")].fields["unknown_frames"] == [13]
    sel = parse_questions([json.dumps(r) for r in recs], source="q", scene=s)
    vis = compute_visibility(s)
    t5 = budget_truth(s, vis, sel, TruthConfig(budgets=[1]))  # frame 0 only (uniform, 1 frame): the ball is absent
    r = {x.id: x for x in t5.rows(1)}
    assert r["ball"].status == "unanswerable" and r["ball0"].status == "changed" and r["ball0"].ground_truth == "B"
    with pytest.raises(InputError, match='offers "yes" and "no"'):
        _truth(s, [_q(id="x", question_type="object_presence", objects=["b"], options=["A. 1", "B. 2"],
                      ground_truth="A")], ["all"])
