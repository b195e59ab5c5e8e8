"""MultiScan adapter: the real annotation file MultiScan publishes in its documentation
(``tests/data/multiscan/scene_00000_00.annotations.json``, origin and licence in
tests/data/SOURCES.md), and a scan folder written in MultiScan's documented layout from
vistest's rendered demo room (MultiScan's camera files and videos are not in a public repository).

Real file, hand-checked: ``bag.1``'s ``normalizedAxes`` triples are (0.986, 0.166, 0), (0, 0, 1),
(0.166, -0.986, 0): its second axis is world +z (the ``up`` the file gives), its third is minus
its ``front``; its ``min``/``max`` are the bounds of the box read so, and of none other.

Demo-derived scan (:func:`write_demo_as_multiscan`): the aligned world is the demo's; the
capture world is ARKit's y-up world, reached by ``coordinate_transform`` T = translation
(0.3, 1.2, -2) after Rx(-90 deg) (z up -> y up) after a 30-degree yaw; each camera file line holds
``T @ c2w_cv @ diag(1, -1, -1, 1)`` column-major (ARKit camera axes), the intrinsics column-major;
the boxes' axes as consecutive triples with their min/max; the demo's video as ``{scan}.mp4``;
its mesh as ``{scan}.ply`` with vertex colours and a per-face objectId.
"""
from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import trimesh

from vistest.datasets import AdapterError, import_scene
from vistest.audit.scene import CheckParams, audit_scene
from vistest.datasets.multiscan import category, read_annotation
from vistest.geometry import rot_x, rot_z
from vistest.scene import Scene

DATA = Path(__file__).parent / "data" / "multiscan"
REAL = DATA / "scene_00000_00.annotations.json"
SCAN = "scene_00042_01"


def test_real_multiscan_annotation_reads_with_consecutive_triples_as_axes():
    boxes = read_annotation(REAL)
    raw = json.loads(REAL.read_text())["objects"]
    skipped = [o["label"] for o in raw if category(o["label"]) in ("wall", "floor", "ceiling", "remove")]
    assert sorted(skipped) == ["ceiling.1", "floor.1", "remove", "wall.1", "wall.2"]
    assert len(boxes.objects) == len(raw) - len(skipped) == 23
    assert boxes.notes["boxes_checked_against_min_max"] == 23
    bag = next(o for o in boxes.objects if o.id == "bag.1")  # this file has no objectId: the label is the id
    assert bag.label == "bag"
    np.testing.assert_allclose(bag.rotation[:, 1], [0, 0, 1], atol=1e-12)  # axis 1 = the file's "up"
    np.testing.assert_allclose(bag.rotation[:, 2], [0.16559263798884283, -0.9861942396120026, 0], atol=1e-12)
    np.testing.assert_allclose(bag.size, [0.2522365669610245, 0.33283099532127386, 0.15902812283054288])
    assert category("wall_cabinet.2") == "wall cabinet"


def test_multiscan_box_read_the_other_way_is_refused(tmp_path):
    doc = json.loads(REAL.read_text())
    for o in doc["objects"]:  # store each rotation transposed: min/max no longer fit
        o["obb"]["normalizedAxes"] = np.asarray(o["obb"]["normalizedAxes"]).reshape(3, 3).T.ravel().tolist()
    bad = tmp_path / "scene_00000_00.annotations.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(AdapterError, match=r"objects\[0\]\.obb: min/max differ by .* m from the box read with "
                                           r"consecutive normalizedAxes triples"):
        read_annotation(bad)


@pytest.fixture(scope="module")
def room(demo_small) -> Scene:
    """The session's demo at 320x240, 60 frames (read only)."""
    return Scene.load(demo_small)


def coordinate_transform() -> np.ndarray:
    t = np.eye(4)
    t[:3, :3] = rot_x(-90) @ rot_z(30)
    t[:3, 3] = [0.3, 1.2, -2.0]
    return t


def write_ply(path: Path, mesh: trimesh.Trimesh, face_ids: np.ndarray) -> None:
    """ASCII PLY: every face's own three vertices with the face's colour, faces with objectId, partId."""
    verts = mesh.vertices[mesh.faces].reshape(-1, 3)
    cols = np.repeat(np.asarray(mesh.visual.face_colors)[:, :3], 3, axis=0)
    head = ["ply", "format ascii 1.0", f"element vertex {len(verts)}", "property double x", "property double y",
            "property double z", "property uchar red", "property uchar green", "property uchar blue",
            f"element face {len(mesh.faces)}", "property list uchar int vertex_indices", "property ushort objectId",
            "property ushort partId", "end_header"]
    rows = [f"{x:.6f} {y:.6f} {z:.6f} {r} {g} {b}" for (x, y, z), (r, g, b) in zip(verts, cols)]
    rows += [f"3 {3 * i} {3 * i + 1} {3 * i + 2} {oid} {oid}" for i, oid in enumerate(face_ids)]
    path.write_text("\n".join(head + rows) + "\n")


def write_demo_as_multiscan(demo: Scene, root: Path) -> Path:
    """The module docstring's conversion; returns the scan folder."""
    scan = root / SCAN
    scan.mkdir(parents=True)
    t = coordinate_transform()
    (scan / f"{SCAN}.align.json").write_text(json.dumps({"version": "multiscan@0.0.1",
                                                         "coordinate_transform": t.ravel(order="F").tolist()}))
    k = demo.camera.matrix()
    lines = []
    for f in demo.frames:
        c = t @ f.camera_to_world @ np.diag([1.0, -1, -1, 1])
        lines.append(json.dumps({"timestamp": f.index, "intrinsics": k.ravel(order="F").tolist(),
                                 "transform": c.ravel(order="F").tolist()}))
    (scan / f"{SCAN}.jsonl").write_text("\n".join(lines) + "\n")
    w, h = demo.image_size
    (scan / f"{SCAN}.json").write_text(json.dumps({"streams": [
        {"id": "color_back_1", "type": "color_camera", "frequency": demo.fps, "number_of_frames": len(demo.frames),
         "resolution": [h, w], "file_extension": "mp4", "encoding": "h264"}]}))
    shutil.copy(demo.path(demo.video), scan / f"{SCAN}.mp4")
    objs = []
    for o in demo.objects:
        corners = np.array([o.center + o.rotation @ (np.array(s) * o.size / 2)
                            for s in itertools.product((-1, 1), repeat=3)])
        objs.append({"objectId": int(o.id), "label": f"{o.label}.{o.id}", "obb": {
            "centroid": o.center.tolist(), "axesLengths": o.size.tolist(),
            "normalizedAxes": o.rotation.ravel(order="F").tolist(),
            "min": corners.min(0).tolist(), "max": corners.max(0).tolist(),
            "front": o.rotation[:, 0].tolist(), "up": o.rotation[:, 2].tolist()}})
    (scan / f"{SCAN}.annotations.json").write_text(json.dumps({"version": "multiscan@0.0.1", "scanId": SCAN,
                                                               "objects": objs}))
    mesh = trimesh.load(demo.path(demo.mesh), process=False)
    centres = mesh.triangles_center
    ids = np.zeros(len(centres), int)
    for o in demo.objects:
        local = (centres - o.center) @ o.rotation
        ids[(np.abs(local) <= o.size / 2 + 1e-3).all(axis=1) & (ids == 0)] = int(o.id)
    write_ply(scan / f"{SCAN}.ply", mesh, ids)
    return scan


def test_demo_room_as_multiscan_imports_into_the_aligned_world_and_audits(room, tmp_path):
    demo = room
    scan = write_demo_as_multiscan(demo, tmp_path)
    out = tmp_path / "scene"
    scene = Scene.load(import_scene("multiscan", scan, out))
    assert scene.scene_id == SCAN and scene.video is not None and scene.path(scene.video).name == f"{SCAN}.mp4"
    assert scene.fps == demo.fps and scene.image_size == demo.image_size
    assert [f.index for f in scene.frames] == [f.index for f in demo.frames]
    for a, b in zip(scene.frames, demo.frames):  # back in the aligned (demo) world, OpenCV axes
        np.testing.assert_allclose(a.camera_to_world, b.camera_to_world, atol=1e-9)
    np.testing.assert_allclose(scene.boxes_to_world, np.eye(4))
    assert [o.label for o in scene.objects] == [o.label for o in demo.objects]
    for a, b in zip(scene.objects, demo.objects):
        np.testing.assert_allclose(a.rotation, b.rotation, atol=1e-12)
    prov = json.loads((out / "provenance.json").read_text())
    np.testing.assert_allclose(prov["alignments"][0]["matrix"], coordinate_transform(), atol=1e-12)
    assert len(prov["relied_on"]) == 3
    report = audit_scene(scene, use_depth=False, params=CheckParams(max_frames=20))
    print(report.text())
    assert report.passed and report.best == "as given" and "colour" in report.evidence, report.text()


def test_multiscan_errors_name_the_file(room, tmp_path):
    scan = write_demo_as_multiscan(room, tmp_path)
    with pytest.raises(AdapterError, match=r"--video-from-frames: no colour frames found \(none: MultiScan's layout "
                                           r"has the video scene_00042_01\.mp4"):
        import_scene("multiscan", scan, tmp_path / "out", video_from_frames=True)
    (scan / f"{SCAN}.align.json").unlink()
    with pytest.raises(AdapterError, match=r"align\.json: not found; expected coordinate_transform"):
        import_scene("multiscan", scan, tmp_path / "out")


def test_more_or_fewer_camera_lines_than_video_frames_are_refused(room, tmp_path):
    """Issue #35: a camera file with 50 lines for a 40-frame video imported as frames 0-49; only a
    later run noticed. Line i is decoded frame i: the counts must agree (the video's, else the
    metadata's number_of_frames), or the import stops naming the camera file, writing nothing."""
    scan = write_demo_as_multiscan(room, tmp_path)
    cams = scan / f"{SCAN}.jsonl"
    lines = cams.read_text().splitlines()
    n = len(room.frames)
    for extra in (lines + lines[:10], lines[:-3]):
        cams.write_text("\n".join(extra) + "\n")
        out = tmp_path / "out"
        with pytest.raises(AdapterError) as e:
            import_scene("multiscan", scan, out)
        assert str(e.value) == (f"{cams}: {len(extra)} lines, but {SCAN}.mp4 decodes to {n} frames; expected one "
                                f"line per decoded frame (line i is frame i)")
        assert not (out / "scene.json").exists()
    (scan / f"{SCAN}.mp4").unlink()  # without the video: the metadata's count
    cams.write_text("\n".join(lines + lines[:10]) + "\n")
    with pytest.raises(AdapterError, match=rf"{SCAN}\.jsonl: {n + 10} lines, but {SCAN}\.json says number_of_frames "
                                           rf"{n}; expected one line per decoded frame"):
        import_scene("multiscan", scan, tmp_path / "out")
