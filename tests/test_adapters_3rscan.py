"""3RScan adapter on scan folders written in 3RScan's documented layout (no 3RScan file is
published in a public repository: 3RScan is distributed under its terms of use, so the files
here are written from the format its README, FAQ and C++ readers state; see docs/adapters.md).

Hand-derived fixture (:func:`write_small_scan`): two frames; frame 0's pose file holds
camera-to-world ``[[1,0,0,1],[0,0,1,-2],[0,-1,0,1.5]]`` (the camera looks along world +y, image
down = world -z), kept as is (3RScan stores camera-to-world); the intrinsics row
``877.5 0 479.75 0 0 877.0 269.75 0 ...`` gives fx 877.5, cx 479.75, fy 877.0, cy 269.75. The
chair's ``normalizedAxes`` rows are (0, 1, 0), (0, 0, 1), (1, 0, 0) with ``axesLengths``
(2, 1, 0.5) about (1, 2, 0.5): its axes are world +y (2 m), +z (1 m), +x (0.5 m), so it spans
x 0.75..1.25, y 1..3, z 0..1 (read as columns it would lie along z, 2 m tall).

Demo-derived fixture (:func:`write_demo_as_3rscan`): vistest's rendered demo room written as a
3RScan scan (photos as ``.color.jpg``, poses, depth as 16-bit ``.depth.pgm`` at half size with
its own intrinsics, boxes as ``semseg.v2.json`` rows, each box's surface as labelled vertices):
the import must give back the demo's poses and boxes, and pass the audit against the depth.
"""
from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
import trimesh

from vistest.datasets import AdapterError, import_scene
from vistest.audit.scene import CheckParams, audit_scene
from vistest.scene import Scene
from vistest.videos.ffmpeg import count_frames, read_frames

SCAN = "8eabc405-5af7-2f32-86d2-d757fa7b019d"
POSE0 = [[1, 0, 0, 1], [0, 0, 1, -2], [0, -1, 0, 1.5], [0, 0, 0, 1]]
INFO = """m_versionNumber = 4
m_sensorName = StructureSensor
m_colorWidth = 960
m_colorHeight = 540
m_depthWidth = 224
m_depthHeight = 172
m_depthShift = 1000
m_calibrationColorIntrinsic = 877.5 0 479.75 0 0 877 269.75 0 0 0 1 0 0 0 0 1
m_calibrationColorExtrinsic = 1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1
m_calibrationDepthIntrinsic = 204.75 0 111.69 0 0 280.93 85.66 0 0 0 1 0 0 0 0 1
m_calibrationDepthExtrinsic = 1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1
m_frames.size = 2
"""


def _txt(path: Path, m) -> None:
    path.write_text("\n".join(" ".join(f"{v:.6f}" for v in row) for row in np.asarray(m, float)) + "\n")


def write_labels_ply(path: Path, parts: list[tuple[int, np.ndarray]]) -> None:
    """``labels.instances.annotated.v2.ply`` (ASCII, 3RScan v2's vertex properties): the points of
    each (objectId, points) part; faces left out (the adapter reads vertices)."""
    rows = [f"{x:.6f} {y:.6f} {z:.6f} 255 0 0 {oid} {oid} 5 5 5" for oid, pts in parts for x, y, z in pts]
    head = ["ply", "format ascii 1.0", f"element vertex {len(rows)}"]
    head += [f"property float {a}" for a in "xyz"] + [f"property uchar {a}" for a in ("red", "green", "blue")]
    head += ["property ushort objectId", "property ushort globalId", "property uchar NYU40", "property uchar Eigen13",
             "property uchar RIO27", "element face 0", "property list uchar int vertex_indices", "end_header"]
    path.write_text("\n".join(head + rows) + "\n")


def box_points(center, size, rotation, n: int = 6) -> np.ndarray:
    """Points on the box's surface (a grid on each face), box world."""
    g = np.linspace(-0.5, 0.5, n)
    local = []
    for axis in range(3):
        for sign in (-0.5, 0.5):
            a, b = np.meshgrid(g, g)
            p = np.zeros((a.size, 3))
            p[:, axis] = sign
            p[:, [k for k in range(3) if k != axis]] = np.c_[a.ravel(), b.ravel()]
            local.append(p)
    return np.concatenate(local) * np.asarray(size) @ np.asarray(rotation).T + np.asarray(center)


def write_small_scan(root: Path, rows_as_axes: bool = True) -> Path:
    scan = root / SCAN
    seq = scan / "sequence"
    seq.mkdir(parents=True)
    (seq / "_info.txt").write_text(INFO)
    for n, pose in ((0, POSE0), (1, np.eye(4))):
        _txt(seq / f"frame-{n:06d}.pose.txt", pose)
        cv2.imwrite(str(seq / f"frame-{n:06d}.color.jpg"), np.zeros((540, 960, 3), np.uint8))
        cv2.imwrite(str(seq / f"frame-{n:06d}.depth.pgm"), np.full((172, 224), 1500, np.uint16))
    axes = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], float)  # rows = the chair's axes
    stored = axes if rows_as_axes else axes.T
    (scan / "semseg.v2.json").write_text(json.dumps({"scan_id": SCAN, "segGroups": [
        {"id": 1, "objectId": 1, "label": "floor", "segments": [1],
         "obb": {"centroid": [0, 0, 0], "axesLengths": [5, 5, 0.1], "normalizedAxes": np.eye(3).ravel().tolist()}},
        {"id": 7, "objectId": 7, "label": "chair", "segments": [2, 3],
         "obb": {"centroid": [1, 2, 0.5], "axesLengths": [2, 1, 0.5], "normalizedAxes": stored.ravel().tolist()}}]}))
    write_labels_ply(scan / "labels.instances.annotated.v2.ply", [(7, box_points([1, 2, 0.5], [2, 1, 0.5], axes.T))])
    return scan


def test_3rscan_poses_intrinsics_depth_and_box_rows(tmp_path):
    out = tmp_path / "out"
    scene = Scene.load(import_scene("3rscan", write_small_scan(tmp_path), out))
    assert scene.scene_id == SCAN and [f.index for f in scene.frames] == [0, 1]
    np.testing.assert_allclose(scene.frames[0].camera_to_world, POSE0)  # camera-to-world, as stored
    assert scene.image_size == (960, 540)
    assert (scene.camera.fx, scene.camera.cx, scene.camera.fy, scene.camera.cy) == (877.5, 479.75, 877.0, 269.75)
    assert scene.depth.scale == 1000.0 and scene.depth.image_size == (224, 172)
    assert (scene.depth.camera.fx, scene.depth.camera.fy) == (204.75, 280.93)
    assert scene.frames[0].image and scene.path(scene.frames[0].image).name == "frame-000000.color.jpg"
    assert [o.label for o in scene.objects] == ["chair"]  # floor skipped
    lo, hi = scene.objects[0].corners().min(0), scene.objects[0].corners().max(0)
    np.testing.assert_allclose(lo, [0.75, 1, 0], atol=1e-9)
    np.testing.assert_allclose(hi, [1.25, 3, 1], atol=1e-9)
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["box_notes"]["vertex_check"]["median_inside_share"] == 1.0
    assert len(prov["relied_on"]) == 2 and prov["dataset"] == "3rscan"


def test_3rscan_columns_file_and_missing_sequence_are_errors(tmp_path):
    with pytest.raises(AdapterError, match=r"labels\.instances\.annotated\.v2\.ply: objectId: .* only when "
                                           r"normalizedAxes columns"):
        import_scene("3rscan", write_small_scan(tmp_path / "a", rows_as_axes=False), tmp_path / "o1")
    scan = tmp_path / "b" / SCAN
    scan.mkdir(parents=True)
    (scan / "sequence.zip").write_bytes(b"PK")
    with pytest.raises(AdapterError, match=r"sequence: expected .* \(unzip sequence\.zip into sequence/\)"):
        import_scene("3rscan", scan, tmp_path / "o2")


def test_3rscan_rotate_cw_turns_camera_and_depth(tmp_path):
    scene = Scene.load(import_scene("3rscan", write_small_scan(tmp_path), tmp_path / "out",
                                    options={"rotate": "cw"}))
    assert scene.image_size == (540, 960) and scene.depth.image_size == (172, 224)
    k = scene.camera  # cw: fx' = fy, cx' = H - 1 - cy, fy' = fx, cy' = cx
    assert (k.fx, k.cx, k.fy, k.cy) == (877.0, 540 - 1 - 269.75, 877.5, 479.75)
    # a world point straight ahead of frame 0's camera stays straight ahead; camera x' = -y
    c2w = scene.frames[0].camera_to_world
    np.testing.assert_allclose(c2w[:3, 2], np.asarray(POSE0)[:3, 2])
    np.testing.assert_allclose(c2w[:3, 0], -np.asarray(POSE0)[:3, 1])
    assert scene.frames[0].image is None and scene.path(scene.frames[0].depth).parent.name == "depth"


# ---------------------------------------------------------------------------------------------
# the demo room written as a 3RScan scan
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo(demo_small) -> Scene:
    """The session's demo at 320x240, 60 frames (read only)."""
    return Scene.load(demo_small)


def write_demo_as_3rscan(demo: Scene, root: Path) -> Path:
    """The module docstring's conversion; returns the scan folder."""
    assert np.allclose(demo.boxes_to_world, np.eye(4))
    scan = root / "0cac7578-8d6f-2d13-8c2d-bfa7a04f8af3"
    seq = scan / "sequence"
    seq.mkdir(parents=True)
    w, h = demo.image_size
    k, kd = demo.camera, demo.camera.scaled(0.5, 0.5)
    (seq / "_info.txt").write_text(
        f"m_colorWidth = {w}\nm_colorHeight = {h}\nm_depthWidth = {w // 2}\nm_depthHeight = {h // 2}\n"
        f"m_depthShift = 1000\nm_calibrationColorIntrinsic = {k.fx} 0 {k.cx} 0 0 {k.fy} {k.cy} 0 0 0 1 0 0 0 0 1\n"
        f"m_calibrationDepthIntrinsic = {kd.fx} 0 {kd.cx} 0 0 {kd.fy} {kd.cy} 0 0 0 1 0 0 0 0 1\n"
        f"m_frames.size = {len(demo.frames)}\n")
    photos = read_frames(demo.path(demo.video), [f.index for f in demo.frames])
    for f, rgb in zip(demo.frames, photos):
        stem = seq / f"frame-{f.index:06d}"
        cv2.imwrite(f"{stem}.color.jpg", rgb[:, :, ::-1], [cv2.IMWRITE_JPEG_QUALITY, 95])
        _txt(Path(f"{stem}.pose.txt"), f.camera_to_world)
        depth = cv2.imread(str(demo.path(f.depth)), cv2.IMREAD_UNCHANGED)
        cv2.imwrite(f"{stem}.depth.pgm", cv2.resize(depth, (w // 2, h // 2), interpolation=cv2.INTER_NEAREST))
    groups = [{"id": int(o.id), "objectId": int(o.id), "label": o.label, "segments": [int(o.id)],
               "obb": {"centroid": o.center.tolist(), "axesLengths": o.size.tolist(),
                       "normalizedAxes": o.rotation.T.ravel().tolist()}} for o in demo.objects]
    (scan / "semseg.v2.json").write_text(json.dumps({"scan_id": scan.name, "segGroups": groups}))
    write_labels_ply(scan / "labels.instances.annotated.v2.ply",
                     [(int(o.id), box_points(o.center, o.size, o.rotation)) for o in demo.objects])
    trimesh.load(demo.path(demo.mesh), process=False).export(scan / "mesh.refined.v2.obj")
    return scan


def test_demo_room_as_3rscan_imports_audits_and_makes_its_video(demo, tmp_path):
    scan = write_demo_as_3rscan(demo, tmp_path)
    scene = Scene.load(import_scene("3rscan", scan, tmp_path / "scene", video_from_frames=True,
                                    options={"fps": demo.fps}))
    assert [f.index for f in scene.frames] == [f.index for f in demo.frames]
    for a, b in zip(scene.frames, demo.frames):
        np.testing.assert_allclose(a.camera_to_world, b.camera_to_world, atol=2e-6)
    assert [o.id for o in scene.objects] == [o.id for o in demo.objects]
    for a, b in zip(scene.objects, demo.objects):
        np.testing.assert_allclose(a.center, b.center, atol=1e-9)
        np.testing.assert_allclose(a.rotation, b.rotation, atol=1e-9)
    assert count_frames(scene.path(scene.video)) == len(demo.frames)
    report = audit_scene(scene, use_mesh=False, params=CheckParams(max_frames=20))
    print(report.text())
    assert report.passed and report.best == "as given", report.text()
