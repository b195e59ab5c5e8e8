"""ARKitScenes adapter on a video folder written in the 3DOD layout.

Hand-derived fixture: the first trajectory line has axis-angle (0, 0, pi/2) and
translation (1, 2, 3) of the *world-to-camera* transform, so R_w2c = Rz(90 deg) and
camera-to-world = [R^T | -R^T t] = [[0,1,0,-2], [-1,0,0,1], [0,0,1,-3]]. The table's
normalizedAxes rows are the axes (0,1,0), (-1,0,0), (0,0,1) with axesLengths (2, 1, 0.5)
about centroid (1, 2, 0.5): it spans x 0.5..1.5, y 1..3, z 0.25..0.75.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import cv2
import numpy as np

from vistest.datasets import import_scene
from vistest.scene import Scene, box_corners

VID = "41069025"
C2W0 = [[0, 1, 0, -2], [-1, 0, 0, 1], [0, 0, 1, -3], [0, 0, 0, 1]]
STAMPS = ("100.000", "100.100", "100.200")


def write_arkit_video(root: Path) -> Path:
    """Three frames; the third has no trajectory sample within 5 ms (traj has 100.300)."""
    vdir = root / VID
    fdir = vdir / f"{VID}_frames"
    for sub in ("lowres_wide", "lowres_depth", "lowres_wide_intrinsics"):
        (fdir / sub).mkdir(parents=True)
    for ts in STAMPS:
        cv2.imwrite(str(fdir / "lowres_wide" / f"{VID}_{ts}.png"), np.zeros((192, 256, 3), np.uint8))
        depth = np.zeros((192, 256), np.uint16)
        depth[10, 20] = 1234  # marks the orientation for the sky-direction test
        cv2.imwrite(str(fdir / "lowres_depth" / f"{VID}_{ts}.png"), depth)
        (fdir / "lowres_wide_intrinsics" / f"{VID}_{ts}.pincam").write_text("256 192 212.0 211.0 127.5 95.5\n")
    (fdir / "lowres_wide.traj").write_text(
        f"100.0012 0 0 {math.pi / 2} 1 2 3\n"
        "100.1003 0 0 0 0 0 0\n"
        "100.3000 0 0 0 0 0 1\n")
    (vdir / f"{VID}_3dod_annotation.json").write_text(json.dumps({"skipped": False, "data": [
        {"uid": "u1", "label": "table", "segments": {"obbAligned": {
            "centroid": [1, 2, 0.5], "axesLengths": [2, 1, 0.5], "normalizedAxes": [0, 1, 0, -1, 0, 0, 0, 0, 1]}}}]}))
    return vdir


def test_arkitscenes_poses_matched_by_timestamp(tmp_path):
    scene = Scene.load(import_scene("arkitscenes", write_arkit_video(tmp_path), tmp_path / "out"))
    assert [f.index for f in scene.frames] == [0, 1, 2]
    np.testing.assert_allclose(scene.frames[0].camera_to_world, C2W0, atol=1e-9)
    np.testing.assert_allclose(scene.frames[1].camera_to_world, np.eye(4), atol=1e-12)
    assert scene.frames[2].camera_to_world is None  # no pose within the tolerance: invalid, not the previous one
    np.testing.assert_allclose([f.time for f in scene.frames], [0.0, 0.1, 0.2], atol=1e-9)
    assert scene.fps == 10.0 and scene.image_size == (256, 192)
    assert (scene.camera.fx, scene.camera.fy, scene.camera.cx, scene.camera.cy) == (212.0, 211.0, 127.5, 95.5)
    assert scene.depth.scale == 1000.0 and scene.path(scene.frames[0].depth).is_file()


def test_arkitscenes_box_rows_are_axes(tmp_path):
    scene = Scene.load(import_scene("arkitscenes", write_arkit_video(tmp_path), tmp_path / "out"))
    (table,) = scene.objects
    assert (table.id, table.label) == ("u1", "table")
    np.testing.assert_allclose(table.rotation, [[0, -1, 0], [1, 0, 0], [0, 0, 1]])  # columns = the rows given
    corners = box_corners(*scene.world_boxes())[0]
    expected = [[1.5, 1, 0.25], [1.5, 3, 0.25], [0.5, 1, 0.25], [0.5, 3, 0.25],
                [1.5, 1, 0.75], [1.5, 3, 0.75], [0.5, 1, 0.75], [0.5, 3, 0.75]]
    np.testing.assert_allclose(corners, expected, atol=1e-12)


def _project(scene: Scene, frame, point) -> np.ndarray:
    c2w = frame.camera_to_world
    p = c2w[:3, :3].T @ (np.asarray(point, float) - c2w[:3, 3])
    k = scene.intrinsics_for(frame)
    return np.array([k.fx * p[0] / p[2] + k.cx, k.fy * p[1] / p[2] + k.cy])


def test_arkitscenes_sky_direction_rotates_image_intrinsics_pose_and_depth_together(tmp_path):
    vdir = write_arkit_video(tmp_path)
    up = Scene.load(import_scene("arkitscenes", vdir, tmp_path / "up"))
    left = Scene.load(import_scene("arkitscenes", vdir, tmp_path / "left", options={"sky_direction": "Left"}))
    assert left.image_size == (192, 256)  # rotated 90 deg clockwise
    k = left.camera
    assert (k.fx, k.fy, k.cx, k.cy) == (211.0, 212.0, 191 - 95.5, 127.5)
    point = [0.3, -0.2, 2.0]  # in front of frame 1's camera (identity pose)
    u, v = _project(up, up.frames[1], point)
    np.testing.assert_allclose(_project(left, left.frames[1], point), [192 - 1 - v, u], atol=1e-9)
    depth = cv2.imread(str(left.path(left.frames[0].depth)), cv2.IMREAD_UNCHANGED)
    assert depth.shape == (256, 192) and depth[20, 192 - 1 - 10] == 1234  # (u, v) = (20, 10) -> (H-1-v, u)
