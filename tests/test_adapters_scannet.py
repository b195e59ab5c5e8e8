"""ScanNet adapter on a scan folder written in SensReader's export layout.

Hand-derived fixture: axisAlignment A = Rz(90 deg) + (1, 2, 0) maps raw -> aligned,
aligned = (1 - y, x + 2, z). The chair's vertices are the corners of the raw box
[-2, 0] x [0, 1] x [0, 1]; its aligned-world AABB is [0, 1] x [0, 2] x [0, 1], and
mapped back to the pose (raw) world its corners are the chair's raw vertices.
"""
from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
import trimesh

from vistest.datasets import AdapterError, import_scene
from vistest.geometry import box_corners
from vistest.scene import Scene

ALIGN = [[0, -1, 0, 1], [1, 0, 0, 2], [0, 0, 1, 0], [0, 0, 0, 1]]
CHAIR = [[x, y, z] for z in (0, 1) for y in (0, 1) for x in (-2, 0)]
WALL = [[2, 0, 0], [2, 1, 0], [2, 0, 1], [2, 1, 1]]  # vertex mean of chair + wall = (0, 0.5, 0.5)
POSE0 = [[1, 0, 0, 0.5], [0, 0, 1, -3], [0, -1, 0, 1.2], [0, 0, 0, 1]]  # looks along +y, image down = -z
POSE2 = [[0, 0, 1, -4], [-1, 0, 0, 0.5], [0, -1, 0, 1.5], [0, 0, 0, 1]]  # looks along +x
K_COLOR = [[1170.19, 0, 647.75, 0], [0, 1170.19, 483.75, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
K_DEPTH = [[577.59, 0, 318.9, 0], [0, 578.73, 242.68, 0], [0, 0, 1, 0], [0, 0, 0, 1]]


def _matrix_txt(path: Path, m) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(" ".join(f"{v:f}" for v in row) for row in m) + "\n")  # SensReader: fmt='%f'


def write_scannet_scan(root: Path, scene_id: str = "scene0000_00", align=True) -> Path:
    """A 3-frame SensReader export (frame 1 lost tracking) with mesh, segs and aggregation."""
    scan = root / scene_id
    for i, pose in ((0, POSE0), (1, [[float("-inf")] * 4] * 4), (2, POSE2)):
        _matrix_txt(scan / "pose" / f"{i}.txt", pose)
        (scan / "color").mkdir(parents=True, exist_ok=True)
        cv2.imwrite(str(scan / "color" / f"{i}.jpg"), np.zeros((968, 1296, 3), np.uint8))
        (scan / "depth").mkdir(parents=True, exist_ok=True)
        cv2.imwrite(str(scan / "depth" / f"{i}.png"), np.full((480, 640), 1500, np.uint16))
    _matrix_txt(scan / "intrinsic" / "intrinsic_color.txt", K_COLOR)
    _matrix_txt(scan / "intrinsic" / "intrinsic_depth.txt", K_DEPTH)
    info = ["colorHeight = 968", "colorWidth = 1296", "depthHeight = 480", "depthWidth = 640", "numColorFrames = 3"]
    if align:
        info.insert(0, "axisAlignment = " + " ".join(str(v) for row in ALIGN for v in row))
    (scan / f"{scene_id}.txt").write_text("\n".join(info) + "\n")
    verts = np.array(CHAIR + WALL, float)
    trimesh.Trimesh(verts, [[0, 1, 2], [8, 9, 10]], process=False).export(scan / f"{scene_id}_vh_clean_2.ply")
    (scan / f"{scene_id}_vh_clean_2.0.010000.segs.json").write_text(
        json.dumps({"sceneId": scene_id, "segIndices": [7] * 8 + [3] * 4}))
    (scan / f"{scene_id}.aggregation.json").write_text(json.dumps({"sceneId": scene_id, "segGroups": [
        {"id": 0, "objectId": 0, "segments": [7], "label": "chair"},
        {"id": 1, "objectId": 1, "segments": [3], "label": "wall"}]}))
    return scan


def test_scannet_poses_intrinsics_and_invalid_frame(tmp_path):
    scene = Scene.load(import_scene("scannet", write_scannet_scan(tmp_path), tmp_path / "out"))
    assert [f.index for f in scene.frames] == [0, 1, 2]
    assert scene.frames[1].camera_to_world is None  # all -inf: lost tracking, kept as invalid
    np.testing.assert_allclose(scene.frames[0].camera_to_world, POSE0, atol=1e-6)
    np.testing.assert_allclose(scene.frames[2].camera_to_world, POSE2, atol=1e-6)
    assert scene.image_size == (1296, 968) and scene.fps == 30.0
    assert (scene.camera.fx, scene.camera.cx, scene.camera.cy) == (1170.19, 647.75, 483.75)
    assert scene.depth.image_size == (640, 480) and scene.depth.scale == 1000.0
    assert (scene.depth.camera.fx, scene.depth.camera.fy, scene.depth.camera.cx) == (577.59, 578.73, 318.9)
    assert scene.frames[0].depth is not None and scene.path(scene.frames[0].depth).is_file()
    assert scene.mesh is not None and scene.path(scene.mesh).name == "scene0000_00_vh_clean_2.ply"


def test_scannet_boxes_live_in_the_aligned_world(tmp_path):
    out = tmp_path / "out"
    scene = Scene.load(import_scene("scannet", write_scannet_scan(tmp_path), out))
    assert [o.label for o in scene.objects] == ["chair"]  # wall left out
    chair = scene.objects[0]
    np.testing.assert_allclose(chair.center, [0.5, 1.0, 0.5])  # aligned-world AABB [0,1]x[0,2]x[0,1]
    np.testing.assert_allclose(chair.size, [1.0, 2.0, 1.0])
    np.testing.assert_allclose(scene.boxes_to_world, np.linalg.inv(ALIGN), atol=1e-12)
    corners = box_corners(*scene.world_boxes())[0]
    # corner k has +aligned-axis b where bit b is set; aligned (x, y, z) -> raw (y - 2, 1 - x, z):
    # k=0 (0,0,0)->(-2,1,0), k=1 (1,0,0)->(-2,0,0), k=2 (0,2,0)->(0,1,0), k=3 (1,2,0)->(0,0,0), k+4: z=1
    expected = np.array([[-2, 1, 0], [-2, 0, 0], [0, 1, 0], [0, 0, 0], [-2, 1, 1], [-2, 0, 1], [0, 1, 1], [0, 0, 1]])
    np.testing.assert_allclose(corners, expected, atol=1e-9)
    assert sorted(map(tuple, expected.tolist())) == sorted(map(tuple, CHAIR))  # the chair's raw vertices
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["alignments"][0]["matrix"] == ALIGN and prov["box_world"] == "scannet axis-aligned world"


def test_scannet_test_scene_without_alignment_and_depth_images(tmp_path):
    scan = write_scannet_scan(tmp_path, align=False)
    scene = Scene.load(import_scene("scannet", scan, tmp_path / "out", options={"images": "depth"}))
    np.testing.assert_array_equal(scene.boxes_to_world, np.eye(4))
    np.testing.assert_allclose(box_corners(*scene.world_boxes())[0].min(0), [-2, 0, 0])
    assert scene.image_size == (640, 480) and scene.camera.fx == 577.59  # depth images: depth intrinsics


def test_scannet_errors_name_file_and_field(tmp_path):
    scan = write_scannet_scan(tmp_path)
    (scan / "scene0000_00.txt").write_text("axisAlignment = 1 0 0\n")
    with pytest.raises(AdapterError, match=r"scene0000_00\.txt: axisAlignment: expected 16 numbers"):
        import_scene("scannet", scan, tmp_path / "out")
    with pytest.raises(AdapterError, match="option 'bogus'"):
        import_scene("scannet", scan, tmp_path / "out", options={"bogus": 1})


def test_cli_import_writes_scene_and_reports_errors(tmp_path):
    from click.testing import CliRunner

    from vistest.cli import main

    scan = write_scannet_scan(tmp_path)
    res = CliRunner().invoke(main, ["import", "scannet", str(scan), "-o", str(tmp_path / "out"), "-O", "frame_step=2",
                                    "--quiet"])
    assert res.exit_code == 0, res.output
    scene = Scene.load(res.output.strip())
    assert [f.index for f in scene.frames] == [0, 1] and scene.fps == 15.0  # .sens frames 0 and 2
    res = CliRunner().invoke(main, ["import", "nosuch", str(scan), "-o", str(tmp_path / "x")])
    assert res.exit_code == 2
    assert "dataset: expected one of 3rscan, arkitscenes, bdd100k, embodiedscan, mot, multiscan" in res.output


def test_scannet_files_are_found_by_what_the_folder_holds(tmp_path):
    # a folder whose name is not the scan id (how real downloads get renamed): the scan's files are
    # still found by their contents (the one *_vh_clean_2.ply, *.aggregation.json, ...), with its id
    scan = write_scannet_scan(tmp_path)
    renamed = scan.rename(tmp_path / "my scan copy")
    out = tmp_path / "out"
    scene = Scene.load(import_scene("scannet", renamed, out))
    assert scene.scene_id == "scene0000_00" and [o.label for o in scene.objects] == ["chair"]
    np.testing.assert_allclose(scene.boxes_to_world, np.linalg.inv(ALIGN), atol=1e-12)  # the .txt was read
    assert scene.frames[0].image is not None and scene.path(scene.frames[0].image).name == "0.jpg"
    assert json.loads((out / "provenance.json").read_text())["notes"]["scan_info"] == "scene0000_00.txt"
    # the high-resolution mesh's aggregation sits beside it in real downloads: not an ambiguity
    (renamed / "scene0000_00_vh_clean.aggregation.json").write_text("{}")
    assert Scene.load(import_scene("scannet", renamed, tmp_path / "out2")).scene_id == "scene0000_00"
    # -O scene=ID names the files explicitly
    assert Scene.load(import_scene("scannet", renamed, tmp_path / "out3",
                                   options={"scene": "scene0000_00"})).objects


def test_scannet_ambiguous_or_partial_scan_folders_are_errors(tmp_path):
    scan = write_scannet_scan(tmp_path)
    (scan / "scene0001_00_vh_clean_2.ply").write_bytes((scan / "scene0000_00_vh_clean_2.ply").read_bytes())
    with pytest.raises(AdapterError, match=r"more than one scan .*scene0000_00, scene0001_00.*-O scene=ID"):
        import_scene("scannet", scan, tmp_path / "out")
    assert Scene.load(import_scene("scannet", scan, tmp_path / "out", options={"scene": "scene0000_00"})).objects
    (scan / "scene0001_00_vh_clean_2.ply").unlink()
    (scan / "scene0000_00_vh_clean_2.0.010000.segs.json").unlink()
    with pytest.raises(AdapterError, match=r"annotation of scene0000_00 is incomplete: missing "
                                           r"scene0000_00_vh_clean_2\.0\.010000\.segs\.json"):
        import_scene("scannet", scan, tmp_path / "out")


def test_an_import_that_finds_no_boxes_is_an_error(tmp_path):
    scan = write_scannet_scan(tmp_path)
    for name in ("scene0000_00.aggregation.json", "scene0000_00_vh_clean_2.0.010000.segs.json"):
        (scan / name).unlink()  # a frames-only export (the test split has no annotation)
    out = tmp_path / "out"
    with pytest.raises(AdapterError, match="scannet found no box annotation there.*--boxes none"):
        import_scene("scannet", scan, out)
    assert not (out / "scene.json").exists()
    assert Scene.load(import_scene("scannet", scan, out, boxes="none")).objects == ()
    # an annotation whose objects are all skipped labels is no annotation either
    scan2 = write_scannet_scan(tmp_path / "b")
    with pytest.raises(AdapterError, match="segGroups: no object left"):
        import_scene("scannet", scan2, out, options={"skip_labels": "chair,wall"})


def test_scannet_room_from_the_mesh_or_a_note_why_not(tmp_path):
    from test_room import l_room  # tests/ is on sys.path (pytest's rootdir conftest)

    scan = write_scannet_scan(tmp_path)
    # the sample's 12-vertex mesh is too sparse for an alpha shape: no room, the provenance says why
    scene = Scene.load(import_scene("scannet", scan, tmp_path / "out"))
    assert scene.room is None
    note = json.loads((tmp_path / "out" / "provenance.json").read_text())["notes"]["room"]
    assert note.startswith("none (scene0000_00_vh_clean_2.ply: no Delaunay triangle")
    # a dense L-shaped room (18 m^2) as the scan's vertices: the scene's room is its area
    pts = l_room()
    segs = json.loads((scan / "scene0000_00_vh_clean_2.0.010000.segs.json").read_text())
    verts = np.concatenate([np.array(CHAIR + WALL, float), pts])
    trimesh.PointCloud(verts).export(scan / "scene0000_00_vh_clean_2.ply")
    segs["segIndices"] += [3] * len(pts)
    (scan / "scene0000_00_vh_clean_2.0.010000.segs.json").write_text(json.dumps(segs))
    scene = Scene.load(import_scene("scannet", scan, tmp_path / "out2"))
    assert 18.0 <= scene.room_area_m2 <= 18.04 and scene.room["area_type"] == "all_room"
    scene = Scene.load(import_scene("scannet", scan, tmp_path / "out3", options={"room": "none"}))
    assert scene.room is None
