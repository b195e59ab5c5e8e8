"""The demo as 2D tracks (vistest.synth.demo_tracks2d; docs/tracks2d.md "The demo"): the same
rendered video seen through its objects' 2D boxes (projected from the known 3D boxes) and through
the 3D pipeline.

* 2D vs 3D (fast): every frame annotated, each object's box where some of its own pixels show.
  The 2D coverage (box area / image area) against the 3D table's evidence-bbox coverage of the
  same frames: where the object is unoccluded (evidence within 1% of its silhouette) they are the
  same region's bounds, measured two ways: the 3D bbox is found on the working grid (``scale``:
  one sample is 1 / scale native pixels), so each of its edges may lie up to one sample off,
  ``|difference| <= (w + h) / scale`` pixels for a w x h box (measured on seed 0: 1.6 of the 2
  allowed). Where it is occluded the 2D box is amodal: never smaller than the 3D bbox by more than
  that. Budget statuses at 16/32/64/all agree with the 3D pipeline's, its visible array replaced
  by that bbox coverage, wherever both define one (2D: not ``needs_3d``, not ``unknown``).
* End to end (slow): the demo in Perception Test's layout (boxes at 2 frames/s) through ``vistest
  import perception-test``, ``vistest run`` and ``vistest export lmms-eval-task`` by the command
  line; every dummy of a grounded question holds no pixel of its objects, checked on the decoded
  frames against the mesh's instance render (a pixel shows when the object's own surface is the
  nearest there, the source pixel is not dark, and the dummy's pixel matches the source's).
"""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vistest.budget.config import TruthConfig
from vistest.budget.truth import budget_truth
from vistest.synth.demo_tracks2d import dense_tracks, perception_test_layout, silhouette_bounds
from vistest.questions import parse_questions
from vistest.scene import Scene
from vistest.visibility.table import compute_visibility

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "examples" / "demo-questions.jsonl"


def _bbox_coverage(vis, size) -> np.ndarray:
    b = vis.bbox
    w, h = size
    return np.where(np.isfinite(b).all(-1), (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1]), 0.0) / (w * h)


def test_silhouette_bounds_of_a_box_in_front_of_the_camera():
    # a unit cube 5 m ahead on the optical axis, camera at the origin looking down +z (OpenCV axes)
    doc = {"format": "vistest.scene/1", "scene_id": "cube", "fps": 1, "image_size": [200, 100],
           "camera": {"fx": 100.0, "fy": 100.0, "cx": 99.5, "cy": 49.5},
           "frames": [{"index": 0, "camera_to_world": np.eye(4).tolist()}],
           "objects": [{"id": "a", "label": "cube", "center": [0, 0, 5.5], "size": [1, 1, 1],
                        "rotation": np.eye(3).tolist()}]}
    s = Scene.from_dict(doc)
    b = silhouette_bounds(s, 0)[0]
    # the near face at z = 5 spans x in [-0.5, 0.5]: u = 100 * x / 5 + 99.5, edges + 0.5 -> [90, 110]
    assert np.allclose(b, [90, 40, 110, 60])


def test_2d_boxes_against_3d_evidence_bbox(demo_small):
    s3 = Scene.load(demo_small)
    v3 = compute_visibility(s3)
    s2 = Scene.from_dict(dense_tracks(s3, v3), root=s3.root, source="dense")
    v2 = compute_visibility(s2)
    w, h = s3.image_size
    cov3, cov2 = _bbox_coverage(v3, s3.image_size), np.nan_to_num(v2.visible)
    both = (cov2 > 0) & (cov3 > 0)
    assert both.sum() > 100
    bb = v2.bbox
    allowed = ((bb[..., 2] - bb[..., 0]) + (bb[..., 3] - bb[..., 1])) / v3.params["scale"] / (w * h)
    unocc = both & (v3.evidence >= 0.99 * v3.projected)
    assert unocc.sum() > 50
    diff = cov2 - cov3
    assert (np.abs(diff[unocc]) <= allowed[unocc]).all(), np.max(np.abs(diff[unocc]) / allowed[unocc])
    assert (diff[both] >= -allowed[both]).all()  # amodal: never smaller than the occluded region's bounds
    assert not ((cov2 > 0) & ~(v3.visible > 0)).any()  # a 2D box only where the object's own pixels show

    lines = QUESTIONS.read_text().splitlines()
    v3b = dataclasses.replace(v3, visible=cov3, evidence=cov3, projected=np.maximum(cov3, v3.projected))
    budgets = [16, 32, 64, "all"]
    t3 = budget_truth(s3, v3b, parse_questions(lines, source=str(QUESTIONS), scene=s3), TruthConfig(budgets=budgets))
    t2 = budget_truth(s2, v2, parse_questions(lines, source=str(QUESTIONS), scene=s2), TruthConfig(budgets=budgets))
    compared = 0
    for a, b in zip(t3.items, t2.items):
        assert (a.question.id, a.selection.frame_indices) == (b.question.id, b.selection.frame_indices)
        if b.reason == "needs_3d":
            assert a.question.type.needs_3d
            continue
        assert b.status != "unknown"  # every frame annotated: nothing is unknown
        assert (a.status, a.ground_truth) == (b.status, b.ground_truth), (a.question.id, a.selection.budget)
        compared += 1
    assert compared == 5 * len(budgets)  # 4 counting + 1 appearance order, at every budget


def _cli(*args, cwd=None) -> str:
    r = subprocess.run([sys.executable, "-m", "vistest.cli", *map(str, args)], capture_output=True, text=True,
                       cwd=cwd)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.slow
def test_perception_test_layout_end_to_end(demo_small, tmp_path):
    from vistest.videos.ffmpeg import read_frames
    from vistest.visibility.render import MeshSegRenderer
    from vistest.visibility.table import load_scene_mesh

    ann = perception_test_layout(demo_small, tmp_path / "pt", step_s=0.5)
    scene_json = Path(_cli("import", "perception-test", ann, "-o", tmp_path / "scene", "-O", "max_gap_s=0.5",
                           "--quiet").strip())
    questions = scene_json.parent / "questions.jsonl"
    run = tmp_path / "run"
    _cli("run", scene_json, questions, "-o", run, "--budgets", "16,32,all", "--dummy-budgets", "16,all",
         "--no-pictures", "--quiet")
    _cli("export", "lmms-eval-task", run, "-o", tmp_path / "export")
    exported = json.loads((tmp_path / "export" / "vistest_export.json").read_text())
    scene_dir = run / "scenes" / json.loads(ann.read_text()).popitem()[0]
    unknown = sum(json.loads(x)["status"] == "unknown" for b in ("16", "32", "all")
                  for x in (scene_dir / f"{b}_frame.jsonl").read_text().splitlines())
    # every unknown row is left out of the export under its own reason, never as plain unanswerable
    assert sum(x["n"] for x in exported["left_out"] if x["reason"] == "unknown_frames") == unknown
    assert list((tmp_path / "export" / "data").glob("*dummy_mask*.jsonl"))

    demo = Scene.load(demo_small)
    track_ids = {str(t["id"]): t["demo_object_id"] for t in json.loads(ann.read_text())[demo.scene_id]
                 ["object_tracking"]}
    col = {o.id: i for i, o in enumerate(demo.objects)}
    mesh = load_scene_mesh(demo)
    w, h = demo.image_size
    seg = MeshSegRenderer(mesh.verts, mesh.faces, mesh.face_obj, w, h, 1e-3)
    src = list(read_frames(demo.path(demo.video), range(demo.num_frames)))
    labels = {}
    checked = masked = 0
    for line in (run / "scenes" / demo.scene_id / "dummy_gt.jsonl").read_text().splitlines():
        d = json.loads(line)
        if d["question_type"] != "grounded_objects" or not d.get("video") or d["dummy_mode"] == "allblack":
            continue
        objs = [col[track_ids[o]] for o in d["removed_objects"]]
        frames = read_frames(run / d["video"], range(len(d["frame_indices"])))
        for fi, img in zip(d["frame_indices"], frames):
            if fi not in labels:
                f = demo.frames[fi]
                labels[fi] = seg.labels(f.camera_to_world, demo.intrinsics_for(f))
            own = np.isin(labels[fi], objs)
            s, dd = src[fi].astype(int), img.astype(int)
            shown = own & (s.max(-1) > 40) & (np.abs(dd - s).max(-1) < 20)
            assert not shown.any(), (d["id"], d["variant"], fi, int(shown.sum()))
            checked += int(own.sum())
        masked += len(d["masked_frames"]) if d["dummy_mode"] == "mask" else 0
    assert checked > 10000 and masked > 5  # the check saw the objects, and masks (not only black frames) hid them
