"""ScanNet++ adapter on a scene folder written in the iPhone release layout.

Hand-derived fixture: the box's normalizedAxes rows are (0,0,1), (0,1,0), (-1,0,0)
(det +1) with axesLengths (1, 0.4, 0.2) about (2, 1, 1): axis 0 is world +z
(half-length 0.5), axis 1 world +y (0.2), axis 2 world -x (0.1).
"""
from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np

from vistest.datasets import import_scene
from vistest.scene import Scene, box_corners

POSES = {0: [[1, 0, 0, 1], [0, 0, 1, 2], [0, -1, 0, 1.5], [0, 0, 0, 1]],
         1: [[1, 0, 0, 9], [0, 1, 0, 9], [0, 0, 1, 9], [0, 0, 0, 1]],
         2: [[0, 0, 1, 0.5], [-1, 0, 0, 0.5], [0, -1, 0, 1.4], [0, 0, 0, 1]],
         3: [[1, 0, 0, 9], [0, 1, 0, 9], [0, 0, 1, 9], [0, 0, 0, 1]]}
K = [[1500.0, 0, 960.0], [0, 1500.0, 720.0], [0, 0, 1]]


def write_scannetpp_scene(root: Path) -> Path:
    scene = root / "data" / "7b6477cb95"
    (scene / "iphone" / "depth").mkdir(parents=True)
    (scene / "scans").mkdir(parents=True)
    doc = {f"frame_{n:06d}": {"timestamp": n / 60, "intrinsic": K, "pose": np.eye(4).tolist(), "aligned_pose": p,
                              "imu": {}} for n, p in POSES.items()}
    (scene / "iphone" / "pose_intrinsic_imu.json").write_text(json.dumps(doc))
    cv2.imwrite(str(scene / "iphone" / "depth" / "frame_000000.png"), np.full((192, 256), 2000, np.uint16))
    (scene / "scans" / "segments_anno.json").write_text(json.dumps({"sceneId": "7b6477cb95", "segGroups": [
        {"id": 4, "objectId": 4, "label": "monitor", "segments": [1, 2], "obb": {
            "centroid": [2, 1, 1], "axesLengths": [1, 0.4, 0.2], "normalizedAxes": [0, 0, 1, 0, 1, 0, -1, 0, 0]}}]}))
    return scene


def test_scannetpp_every_second_frame_scaled_intrinsics(tmp_path):
    out = tmp_path / "out"
    scene = Scene.load(import_scene("scannetpp", write_scannetpp_scene(tmp_path), out,
                                    options={"frame_step": 2, "image_size": "960x720"}))
    assert [f.index for f in scene.frames] == [0, 1]  # iPhone frames 0 and 2 of the 60 fps capture
    assert scene.fps == 30.0
    np.testing.assert_allclose(scene.frames[0].camera_to_world, POSES[0])
    np.testing.assert_allclose(scene.frames[1].camera_to_world, POSES[2])
    assert scene.image_size == (960, 720)
    k = scene.camera  # scaled by 1/2 from 1920x1440: c' = (c + 0.5) / 2 - 0.5
    assert (k.fx, k.fy, k.cx, k.cy) == (750.0, 750.0, 479.75, 359.75)
    assert scene.frames[0].depth is not None and scene.frames[1].depth is None
    assert scene.depth.image_size == (256, 192)
    assert "OpenCV camera axes" in json.loads((out / "provenance.json").read_text())["relied_on"][0]


def test_scannetpp_obb_rows_are_axes(tmp_path):
    scene = Scene.load(import_scene("scannetpp", write_scannetpp_scene(tmp_path), tmp_path / "out"))
    assert [f.index for f in scene.frames] == [0, 1, 2, 3] and scene.fps == 60.0
    (mon,) = scene.objects
    assert (mon.id, mon.label) == ("4", "monitor")
    corners = box_corners(*scene.world_boxes())[0]
    expected = [[2.1, 0.8, 0.5], [2.1, 0.8, 1.5], [2.1, 1.2, 0.5], [2.1, 1.2, 1.5],
                [1.9, 0.8, 0.5], [1.9, 0.8, 1.5], [1.9, 1.2, 0.5], [1.9, 1.2, 1.5]]
    np.testing.assert_allclose(corners, expected, atol=1e-12)
