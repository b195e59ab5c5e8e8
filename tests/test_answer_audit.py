"""Answer audit: 3D answers given in the camera frame at an instant (grounding centres) are
back-projected with that instant's pose; correct ones land on their boxes, and each planted
convention error is found and named. Static answers (size, distance, room size, relative distance
and direction, counting, appearance order) are recomputed from the scene: wrong ones are flagged
with the recomputed value, right ones pass (values checked against mmdetection3d's own boxes).

Real data: ScanNet scene0000_00 as mmdetection3d ships it (tests/data/SOURCES.md, converted
by ``tests/test_real_scannet.py``'s ``write_scan``). The test computes the centres itself from
the published files, independently of the importer: mmdetection3d's own boxes
(``*_bbox.npy``, axis-aligned world), the pickle's ``axis_align_matrix`` A and its three
camera-to-world poses P (raw scan world): right = ``P(t)^-1 A^-1 c``, ReSTI's grounding bug =
``P(t)^-1 c`` (the alignment inverse skipped), wrong instant = the next frame's pose.

Synthetic: the demo room with its boxes moved into an aligned world (as tests/test_audit.py),
every convention error planted in turn.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from vistest.cli import main
from vistest.datasets import import_scene
from vistest.audit.answers import (
    AS_GIVEN,
    NONE_FITS,
    AnswerAuditConfig,
    audit_answers,
    frame_at,
    name_fit,
    point_box_distance,
)
from vistest.geometry import rot_z
from vistest.scene import Scene
from conftest import scene_copy
from test_audit import aligned
from test_real_scannet import FRAMES, INST, infos, write_scan

SWAP = np.array([[1.0, 0, 0], [0, 0, 1], [0, 1, 0]])


def to_camera(c2w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """World point -> OpenCV camera frame of ``c2w``: P^-1 x."""
    return c2w[:3, :3].T @ (x - c2w[:3, 3])


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# ---------------------------------------------------------------------------------------
# geometry
# ---------------------------------------------------------------------------------------
def test_point_box_distance_against_sampled_boxes():
    rng = np.random.default_rng(0)
    centers, sizes = rng.normal(size=(4, 3)), rng.uniform(0.2, 2.0, size=(4, 3))
    rots = np.stack([rot_z(a) for a in rng.uniform(0, 360, 4)])
    pts = rng.normal(scale=2.0, size=(50, 3))
    got = point_box_distance(pts, centers, sizes, rots)
    # reference: nearest of a dense grid over each solid box; of its outer layer, which holds the nearest
    # grid point to any point outside (moving a grid point's coordinate to the face that point is beyond
    # brings it no farther), so the distances are those of the whole grid, at a seventh of the points
    g = np.linspace(-0.5, 0.5, 41)
    cube = np.stack(np.meshgrid(g, g, g), -1).reshape(-1, 3)
    cube = cube[(np.abs(cube) == 0.5).any(1)]
    for o in range(4):
        solid = centers[o] + (cube * sizes[o]) @ rots[o].T
        ref = np.linalg.norm(pts[:, None] - solid[None], axis=-1).min(1)
        inside = (np.abs((pts - centers[o]) @ rots[o]) <= sizes[o] / 2).all(1)
        assert np.all(got[inside, o] == 0.0)
        np.testing.assert_allclose(got[~inside, o], ref[~inside], atol=0.03 * sizes[o].max() + 1e-9)
        assert np.all(got[:, o] <= ref + 1e-9)


# ---------------------------------------------------------------------------------------
# real ScanNet: ReSTI's grounding bug planted
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real(tmp_path_factory) -> Scene:
    root = tmp_path_factory.mktemp("real-answers")
    return Scene.load(import_scene("scannet", write_scan(root), root / "scene"))


def real_rows(how: str, frames=(0, 1, 2), offset: int = 0) -> list[dict]:
    """Grounding rows for every third of the 27 objects at each instant of ``frames``
    (positions in the three posed frames), centres from the published files (module doc)."""
    d = infos()
    a = np.asarray(d["annos"]["axis_align_matrix"], float)
    boxes = np.load(INST / "scene0000_00_bbox.npy")
    ids = np.load(INST / "scene0000_00_bbox_idx.npy").astype(int)
    rows = []
    for i in frames:
        for n in range(i, 27, 3):
            c = boxes[n, :3]
            world = c if how == "skipped" else np.linalg.inv(a)[:3, :3] @ c + np.linalg.inv(a)[:3, 3]
            pose = np.asarray(d["extrinsics"][i + offset], float)
            rows.append({"id": f"g{i}-{n}", "scene_id": "scene0000_00", "question_type": "3d_video_grounding",
                         "time": FRAMES[i] / 30.0, "objects": [str(ids[n])],
                         "answer_center": to_camera(pose, world).tolist()})
    return rows


def test_real_correct_centres_are_named_as_given(real, tmp_path):
    r = audit_answers(real, write_rows(tmp_path / "q.jsonl", real_rows("right")))
    assert r.passed and r.best == AS_GIVEN, r.markdown()
    assert len(r.rows) == 27 and r.evidence == "mesh"
    assert [x.frame for x in r.rows[::9]] == list(FRAMES)
    for row in r.rows:
        assert row.best == AS_GIVEN and row.named is not None
        assert row.fits[0].box_dist < 1e-6  # the centre of its own box
    assert r.summary[0].median_point_dist < 0.3  # a centre sits among its object's vertices


def test_real_resti_grounding_bug_is_named_alignment_inverse_skipped(real, tmp_path):
    rows = real_rows("skipped")
    for row in rows:
        del row["objects"]  # as STI-Bench: the nearest box, whichever it is
    r = audit_answers(real, write_rows(tmp_path / "q.jsonl", rows))
    print(r.markdown(per_row=False))
    assert not r.passed and r.best == "alignment inverse skipped", r.markdown()
    s = {x.name: x for x in r.summary}
    assert s[AS_GIVEN].median_box_dist > 1.0 and s[AS_GIVEN].median_point_dist > 0.5  # ReSTI: a median 2.61 m
    assert s["alignment inverse skipped"].median_box_dist < 1e-6
    # per row, a misplaced centre that happens to fall inside another box stays "as given" (3 of 27 here)
    assert s["alignment inverse skipped"].named >= 20 and s[AS_GIVEN].named <= 7


def test_real_wrong_instant_is_named(real, tmp_path):
    r = audit_answers(real, write_rows(tmp_path / "q.jsonl", real_rows("right", frames=(0, 1), offset=1)))
    assert not r.passed and r.best == "wrong instant (+1)", r.markdown()
    print(r.markdown())
    assert sum(row.best == "wrong instant (+1)" for row in r.rows) >= 0.7 * len(r.rows)
    back = audit_answers(real, write_rows(tmp_path / "b.jsonl", real_rows("right", frames=(1, 2), offset=-1)))
    assert back.best == "wrong instant (-1)", back.markdown()


def test_real_cli_reads_the_keyed_option_and_writes_json_and_markdown(real, tmp_path):
    rows = []
    for k, row in enumerate(real_rows("skipped")[:9]):
        x, y, z = row.pop("answer_center")
        letters = "ABCDE"
        key = letters[k % 5]
        row["options"] = [f"{ch}. ({x + 0.5 * (ch != key):.4f}, {y:.4f}, {z:.4f})" for ch in letters]
        row["ground_truth"] = key
        rows.append(row)
    rows.append({"id": "other", "scene_id": "scene0000_00", "question_type": "object_counting", "category": "table",
                 "question": "?", "ground_truth": "2"})  # the scene has 3 tables: the static audit flags it
    rows.append({"id": "pose", "question_type": "camera_pose", "time": 0.0, "options": ["A. (1, 2, 3)"],
                 "ground_truth": "A"})
    q = write_rows(tmp_path / "q.jsonl", rows)
    out = CliRunner().invoke(main, ["audit", str(Path(real.source)), "--questions", str(q), "--json",
                                    str(tmp_path / "r.json"), "--markdown", str(tmp_path / "r.md"), "--objects"])
    assert out.exit_code == 1, out.output
    assert "alignment inverse skipped" in out.output
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["format"] == "vistest.answer_audit/1" and doc["best"] == "alignment inverse skipped"
    assert len(doc["rows"]) == 9 and doc["rows"][0]["source"] == "option A"
    assert [x["id"] for x in doc["skipped"]] == ["other", "pose"] and doc["skipped"][0]["reason"] == "no time"
    assert doc["static"]["summary"]["counting"] == {"checked": 1, "agree": 0, "disagree": 1, "not checkable": 0}
    assert (tmp_path / "r.md").read_text().startswith("# Answer audit") and "# Static answers" in out.output
    bad = write_rows(tmp_path / "bad.jsonl", [{"id": 1, "time": 0.0, "answer_center": [1, "2", 3]}])
    out = CliRunner().invoke(main, ["audit", str(Path(real.source)), "--questions", str(bad)])
    assert out.exit_code == 2 and "bad.jsonl:1: answer_center" in out.output
    out = CliRunner().invoke(main, ["audit", str(Path(real.source)), "--markdown", str(tmp_path / "x.md")])
    assert out.exit_code == 2 and "--markdown goes with --questions" in out.output


# ---------------------------------------------------------------------------------------
# synthetic: every convention error planted in the demo room
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo(tmp_path_factory, demo_tiny) -> Scene:
    """The 40-frame demo with its boxes in an aligned world: boxes_to_world = inverse(A)."""
    return aligned(Scene.load(scene_copy(demo_tiny, tmp_path_factory.mktemp("answers"))))


def in_view(s: Scene, frame, x: np.ndarray) -> bool:
    """Does the pose-world point ``x`` project into ``frame``'s image, in front of the camera?"""
    p = to_camera(frame.camera_to_world, x)
    k = s.intrinsics_for(frame)
    u, v = k.fx * p[0] / p[2] + k.cx, k.fy * p[1] / p[2] + k.cy
    return p[2] > 0.3 and 0 <= u < s.image_size[0] and 0 <= v < s.image_size[1]


def demo_rows(s: Scene, how: str) -> list[dict]:
    """A centre per object at the middle one of the frames 5..34 whose image its centre projects
    into (a grounding question asks about an object in view), planted with error ``how``."""
    b = np.asarray(s.boxes_to_world)
    rows = []
    for i, o in enumerate(s.objects):
        x = b[:3, :3] @ o.center + b[:3, 3]
        cands = [s.frames[n] for n in range(5, 35) if in_view(s, s.frames[n], x)] or [s.frames[5 + 7 * i % 30]]
        f = cands[len(cands) // 2]
        c = SWAP @ o.center if how == "world y/z swapped" else o.center
        if how == "alignment inverse skipped":
            world = c
        elif how == "alignment inverted":
            world = np.linalg.inv(b)[:3, :3] @ c + np.linalg.inv(b)[:3, 3]
        else:
            world = b[:3, :3] @ c + b[:3, 3]
        k = {"wrong instant (+5)": 5, "wrong instant (-5)": -5}.get(how, 0)
        p = to_camera(s.frames[f.index + k].camera_to_world, world)
        p = {"OpenGL camera axes": np.diag([1.0, -1, -1]) @ p, "camera y/z swapped": SWAP @ p}.get(how, p)
        rows.append({"id": f"d{i}", "time": f.time, "objects": [o.id], "answer_center": p.tolist()})
    return rows


PLANTED = ["alignment inverse skipped", "alignment inverted", "OpenGL camera axes", "camera y/z swapped",
           "world y/z swapped", "wrong instant (+5)", "wrong instant (-5)"]


# the fast tier: the consistent rows and one planted error of each kind (alignment, camera axes, world axes, time);
# the slow tier the other three (issue 47)
SLOW_PLANTED = ("alignment inverted", "camera y/z swapped", "wrong instant (-5)")
assert set(SLOW_PLANTED) <= set(PLANTED)


@pytest.mark.parametrize("how", [AS_GIVEN] + [pytest.param(h, marks=pytest.mark.slow) if h in SLOW_PLANTED else h
                                              for h in PLANTED])
def test_demo_each_planted_error_is_named(demo, tmp_path, how):
    r = audit_answers(demo, write_rows(tmp_path / "q.jsonl", demo_rows(demo, how)))
    assert r.best == how and r.passed == (how == AS_GIVEN), r.markdown()
    win = next(s for s in r.summary if s.name == how)
    assert win.median_box_dist < 1e-6 and win.named >= len(r.rows) // 2


def test_demo_depth_evidence_without_a_mesh(demo, tmp_path):
    s = replace(demo, mesh=None, mesh_objects=None)
    r = audit_answers(s, write_rows(tmp_path / "q.jsonl", demo_rows(s, AS_GIVEN)))
    print(r.markdown(per_row=False))
    assert r.passed and r.evidence == "depth"
    assert all(np.isfinite(f.point_dist) for row in r.rows for f in row.fits[:6])
    s0 = {x.name: x for x in r.summary}
    assert s0[AS_GIVEN].median_point_dist < 0.5  # a centre lies behind the surface its frame's depth sees
    assert all(x.median_point_dist > s0[AS_GIVEN].median_point_dist for x in r.summary[1:6])
    bad = audit_answers(s, write_rows(tmp_path / "b.jsonl", demo_rows(s, "alignment inverse skipped")))
    assert bad.best == "alignment inverse skipped"
    print(bad.markdown(per_row=False))


def test_instant_is_the_nearest_posed_frame(demo):
    pos, gap = frame_at(demo, 5.4 / demo.fps)
    assert demo.frames[pos].index == 5 and gap == pytest.approx(0.4 / demo.fps)
    s = replace(demo, frames=tuple(replace(f, camera_to_world=None) if f.index == 5 else f for f in demo.frames))
    pos, _ = frame_at(s, 5.0 / demo.fps)
    assert [f for f in s.frames if f.valid][pos].index in (4, 6)
    far = AnswerAuditConfig(max_gap_s=0.01)
    rows = [{"id": "late", "time": 100.0, "answer_center": [0, 0, 1]}]
    with pytest.raises(Exception, match="no row to audit"):
        audit_answers(demo, write_rows(Path(demo.source).parent / "late.jsonl", rows), far)


def test_naming_margin_factor_and_same_rows():
    cfg = AnswerAuditConfig()
    order = [AS_GIVEN, "a", "b"]
    assert name_fit({AS_GIVEN: 0.0, "a": 0.0, "b": 0.0}, order, cfg) == AS_GIVEN
    assert name_fit({AS_GIVEN: 0.3, "a": 0.22, "b": 0.5}, order, cfg) == NONE_FITS  # within the margin
    assert name_fit({AS_GIVEN: 0.15, "a": 0.0, "b": 0.5}, order, cfg) == "a"
    assert name_fit({AS_GIVEN: 2.0, "a": 0.05, "b": 0.0}, order, cfg) == "b"
    assert name_fit({AS_GIVEN: 2.0, "a": 1.2, "b": 3.0}, order, cfg) == NONE_FITS  # not 2x lower, far
    # "a" is defined on rows where "as given" fits too: compared over the same rows, it does not beat it
    assert name_fit({AS_GIVEN: 0.2, "a": 0.0, "b": 1.0}, order, cfg, {"a": 0.0, "b": 0.2}) == AS_GIVEN


# ---------------------------------------------------------------------------------------
# static answers recomputed from the scene (real ScanNet)
# ---------------------------------------------------------------------------------------
def _mmdet_boxes() -> dict[str, np.ndarray]:
    """mmdetection3d's own axis-aligned boxes (centre, size; axis-aligned world) by instance id."""
    boxes = np.load(INST / "scene0000_00_bbox.npy")
    ids = np.load(INST / "scene0000_00_bbox_idx.npy").astype(int)
    return {str(i): b[:6] for i, b in zip(ids, boxes)}


def _static_rows(box: dict[str, np.ndarray]) -> tuple[list[dict], dict[str, str]]:
    """Hand-written VSI-Bench / ReVSI rows about the real scan, each right and wrong, and the verdict
    each must get. Expected values computed here from mmdetection3d's boxes alone: the sofa's longest
    side; the desk-sofa gap of two axis-aligned boxes; the refrigerator's angle seen from the sofa
    facing the bed (the axis alignment turns about +Z only, so floor angles are the same)."""
    sofa, desk, bed, fridge, toilet = "33", "8", "38", "34", "37"
    side_cm = 100 * box[sofa][3:].max()
    gap = np.maximum(np.abs(box[desk][:3] - box[sofa][:3]) - (box[desk][3:] + box[sofa][3:]) / 2, 0)
    dist = float(np.linalg.norm(gap))
    f, t = box[bed][:2] - box[sofa][:2], box[fridge][:2] - box[sofa][:2]
    ang = np.degrees(np.arctan2(f[0] * t[1] - f[1] * t[0], f @ t)) % 360
    assert round(side_cm) == 282 and round(dist, 2) == 3.24 and 45 < ang < 135  # the refrigerator is to the left
    lr = ["A. left", "B. right"]
    rows = [  # (id, fields, verdict)
        ("size-wrong", {"question_type": "object_size_estimation", "objects": [sofa], "ground_truth": 100}, "disagree"),
        ("size-right", {"question_type": "object_size_estimation", "objects": [sofa], "ground_truth": 286}, "agree"),
        ("size-exact", {"question_type": "object_size_estimation", "objects": [sofa],
                        "ground_truth": round(side_cm)}, "agree"),
        ("dist-wrong", {"question_type": "object_abs_distance", "objects": [desk, sofa], "ground_truth": 9.9},
         "disagree"),
        ("dist-right", {"question_type": "object_abs_distance", "objects": [desk, sofa],
                        "ground_truth": round(dist, 1)}, "agree"),
        ("dir-wrong", {"question_type": "object_rel_direction_easy", "objects": [sofa, bed, fridge], "options": lr,
                       "ground_truth": "B"}, "disagree"),
        ("dir-right", {"question_type": "object_rel_direction_easy", "objects": [sofa, bed, fridge], "options": lr,
                       "ground_truth": "A"}, "agree"),
        ("dir-backward", {"question_type": "object_rel_direction_backward_easy", "objects": [sofa, bed, fridge],
                          "options": ["A. left", "B. right", "C. back"], "ground_truth": "B"}, "agree"),
        ("count-right", {"question_type": "object_counting", "category": "cabinet", "ground_truth": 7}, "agree"),
        ("count-wrong", {"question_type": "object_counting_multiple", "category": ["cabinet", "door"],
                         "ground_truth": 9}, "disagree"),
        ("room", {"question_type": "room_size_estimation", "ground_truth": 47.3}, "agree"),
        ("closest-wrong", {"question_type": "object_rel_distance_closest", "objects": [sofa, desk, bed, fridge, toilet],
                           "options": ["A. desk", "B. bed", "C. refrigerator", "D. toilet"], "ground_truth": "A"},
         "disagree"),
        ("closest-right", {"question_type": "object_rel_distance_closest", "objects": [sofa, desk, bed, fridge, toilet],
                           "options": ["A. desk", "B. bed", "C. refrigerator", "D. toilet"], "ground_truth": "C"},
         "agree"),
        # first seen: desk and cabinet in frame 0 (0 s), the sofa in frame 102 (3.4 s); bed never
        ("order-right", {"question_type": "obj_appearance_order", "category": ["sofa", "desk", "cabinet"],
                         "options": ["A. cabinet, desk, sofa", "B. sofa, desk, cabinet"], "ground_truth": "A"},
         "agree"),
        ("order-wrong", {"question_type": "obj_appearance_order", "category": ["sofa", "desk", "cabinet"],
                         "options": ["A. cabinet, desk, sofa", "B. sofa, desk, cabinet"], "ground_truth": "B"},
         "disagree"),
        ("order-unseen", {"question_type": "obj_appearance_order", "category": ["sofa", "bed"],
                          "options": ["A. sofa, bed", "B. bed, sofa"], "ground_truth": "A"}, "not checkable"),
    ]
    return ([{"id": i, "scene_id": "scene0000_00", "question": "?", **r} for i, r, _ in rows],
            {i: v for i, _, v in rows})


def test_real_static_answers_wrong_ones_flagged_right_ones_pass(real, tmp_path):
    """The issue's three wrong answers (100 cm for the 282 cm sofa, 9.9 m for 3.24 m, "right" for
    "left") are flagged with the recomputed value; the right ones (286 cm within 10%) pass; counting,
    room size, relative distance and appearance order likewise. Measured on the real scan:
    sofa 282.3 cm, desk-sofa 3.24 m, refrigerator 83 deg from ahead (left), room 47.3 m^2."""
    from vistest.audit.answers import audit_static

    box = _mmdet_boxes()
    rows, want = _static_rows(box)
    rows.append({"id": "ground", "scene_id": "scene0000_00", "question_type": "3d_video_grounding", "time": 0.0,
                 "answer_center": [0.0, 0.0, 1.0]})
    r = audit_static(real, write_rows(tmp_path / "q.jsonl", rows))
    print(r.markdown())
    got = {x.id: x for x in r.rows}
    assert {i: got[i].verdict for i in want} == want
    assert got["ground"].family == "other" and got["ground"].verdict == "not checkable"
    assert got["size-wrong"].recomputed == pytest.approx(100 * box["33"][3:].max(), abs=1e-3)
    assert "282 cm" in got["size-wrong"].why and "65%" in got["size-wrong"].why
    assert got["dist-wrong"].recomputed == pytest.approx(3.24, abs=0.005) and "3.24 m" in got["dist-wrong"].why
    assert got["dir-wrong"].recomputed == "left" and "83 deg" in got["dir-wrong"].why
    assert got["count-wrong"].recomputed == 10 and got["closest-wrong"].recomputed == "refrigerator"
    assert got["order-wrong"].recomputed.startswith(("cabinet, desk", "desk, cabinet"))
    assert "bed never seen" in got["order-unseen"].why
    s = r.summary()
    assert s["size"] == {"checked": 3, "agree": 2, "disagree": 1, "not checkable": 0}
    assert s["relative direction"] == {"checked": 3, "agree": 2, "disagree": 1, "not checkable": 0}
    assert s["other"]["not checkable"] == 1 and not r.passed
    # the command: exit 1, the flagged rows printed; with the right rows alone it passes (exit 0)
    out = CliRunner().invoke(main, ["audit", str(Path(real.source)), "--questions", str(tmp_path / "q.jsonl"),
                                    "--json", str(tmp_path / "r.json")])
    assert out.exit_code == 1, out.output
    assert "| size-wrong |" in out.output and "| size-right |" not in out.output  # disagreements only
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["format"] == "vistest.answer_audit/1" and doc["static"]["passed"] is False
    right = write_rows(tmp_path / "right.jsonl", [x for x in rows if want.get(x["id"]) == "agree"])
    out = CliRunner().invoke(main, ["audit", str(Path(real.source)), "--questions", str(right), "--json",
                                    str(tmp_path / "s.json")])
    assert out.exit_code == 0, out.output
    assert json.loads((tmp_path / "s.json").read_text())["format"] == "vistest.static_answer_audit/1"


def test_static_audit_tolerances_are_the_stated_ones(real, tmp_path):
    """Each tolerance at its edge: 10% relative on numbers (the sofa's 282.3 cm: 254 agrees, 253 not),
    counts exact, a direction within 10 degrees of a boundary accepts either side."""
    from vistest.audit.answers import StaticAuditConfig, audit_static

    side = 100 * _mmdet_boxes()["33"][3:].max()
    rows = [{"id": f"s{g}", "scene_id": "scene0000_00", "question": "?", "question_type": "object_size_estimation",
             "objects": ["33"], "ground_truth": g} for g in (round(side * 0.9) + 1, round(side * 0.9) - 1,
                                                              round(side * 1.1) - 1, round(side * 1.1) + 1)]
    rows.append({"id": "c", "scene_id": "scene0000_00", "question": "?", "question_type": "object_counting",
                 "category": "cabinet", "ground_truth": 6})
    r = audit_static(real, write_rows(tmp_path / "q.jsonl", rows))
    assert [x.verdict for x in r.rows] == ["agree", "disagree", "agree", "disagree", "disagree"]
    wide = audit_static(real, tmp_path / "q.jsonl", StaticAuditConfig(rel_tol=0.5))
    assert [x.verdict for x in wide.rows][:4] == ["agree"] * 4
    # sofa -> bed ahead, refrigerator at 83 deg: "back" (from 135 deg) is 52 deg away, refused even at 40
    dirs = [{"id": "d", "scene_id": "scene0000_00", "question": "?", "question_type": "object_rel_direction_medium",
             "objects": ["33", "38", "34"], "options": ["A. left", "B. right", "C. back"], "ground_truth": "C"}]
    q = write_rows(tmp_path / "d.jsonl", dirs)
    assert audit_static(real, q, StaticAuditConfig(angle_tol_deg=40)).rows[0].verdict == "disagree"
    assert audit_static(real, q, StaticAuditConfig(angle_tol_deg=55)).rows[0].verdict == "agree"
