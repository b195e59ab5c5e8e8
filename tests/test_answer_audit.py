"""Answer audit: 3D answers given in the camera frame at an instant (grounding centres) are
back-projected with that instant's pose; correct ones land on their boxes, and each planted
convention error is found and named.

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
from vistest.datasets.answer_audit import (
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
    # reference: nearest of a dense grid over each solid box
    g = np.linspace(-0.5, 0.5, 41)
    cube = np.stack(np.meshgrid(g, g, g), -1).reshape(-1, 3)
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
    rows.append({"id": "other", "scene_id": "scene0000_00", "question_type": "object_counting", "ground_truth": "2"})
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
    assert (tmp_path / "r.md").read_text().startswith("# Answer audit")
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


@pytest.mark.parametrize("how", [AS_GIVEN] + PLANTED)
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
