"""EmbodiedScan adapter on an info pickle written in the released format.

Hand-derived fixture: bbox_3d = (1, 2, 0.5, 2, 1, 0.5, pi/2, pi/2, 0), so
R = Rz(90) Rx(90) = [[0,0,1],[1,0,0],[0,1,0]]: box axis 0 is aligned-world +y (half 1),
axis 1 is +z (half 0.5), axis 2 is +x (half 0.25). In the aligned world corner k (signs
s_b = +1 where bit b is set) is (1 + 0.25 s2, 2 + s0, 0.5 + 0.5 s1); axis_align_matrix
maps raw -> aligned as (x, y, z) -> (1 - y, x + 2, z), so in the raw (pose) world the
corner is (s0, -0.25 s2, 0.5 + 0.5 s1). (Rx(90) Rz(90) would put axis 0 on +z instead.)
"""
from __future__ import annotations

import math
import pickle
from pathlib import Path

import cv2
import numpy as np
import pytest

from vistest.datasets import AdapterError, import_scene
from vistest.geometry import box_corners
from vistest.scene import Scene

ALIGN = np.array([[0, -1, 0, 1], [1, 0, 0, 2], [0, 0, 1, 0], [0, 0, 0, 1]], float)
C2G0 = np.array([[1, 0, 0, 0.5], [0, 0, 1, -3], [0, -1, 0, 1.2], [0, 0, 0, 1]])
K = np.array([[577.6, 0, 319.5, 0], [0, 578.7, 239.5, 0], [0, 0, 1, 0], [0, 0, 0, 1]])


def write_infos(root: Path) -> Path:
    posed = root / "scannet" / "posed_images" / "scene0000_00"
    posed.mkdir(parents=True)
    images = []
    for n in (0, 10):
        cv2.imwrite(str(posed / f"{n:05d}.jpg"), np.zeros((480, 640, 3), np.uint8))
        cv2.imwrite(str(posed / f"{n:05d}.png"), np.full((480, 640), 1000, np.uint16))
        images.append({"img_path": f"scannet/posed_images/scene0000_00/{n:05d}.jpg",
                       "depth_path": f"scannet/posed_images/scene0000_00/{n:05d}.png",
                       "cam2global": C2G0 if n == 0 else np.eye(4), "visible_instance_ids": [0]})
    doc = {"metainfo": {"categories": {"chair": 5, "table": 7}, "dataset": "embodiedscan"},
           "data_list": [{"sample_idx": "scannet/scene0000_00", "axis_align_matrix": ALIGN, "cam2img": K,
                          "depth_cam2img": K, "images": images,
                          "instances": [{"bbox_3d": [1, 2, 0.5, 2, 1, 0.5, math.pi / 2, math.pi / 2, 0],
                                         "bbox_label_3d": 7, "bbox_id": 3}]}]}
    path = root / "embodiedscan_infos_val.pkl"
    path.write_bytes(pickle.dumps(doc))
    return path


def test_embodiedscan_euler_zxy_boxes_in_the_aligned_world(tmp_path):
    infos = write_infos(tmp_path)
    scene = Scene.load(import_scene("embodiedscan", infos, tmp_path / "out",
                                    options={"scene": "scene0000_00", "data_root": str(tmp_path / "scannet")}))
    (table,) = scene.objects
    assert (table.id, table.label) == ("3", "table")
    np.testing.assert_allclose(table.rotation, [[0, 0, 1], [1, 0, 0], [0, 1, 0]], atol=1e-12)
    np.testing.assert_allclose(scene.boxes_to_world, np.linalg.inv(ALIGN), atol=1e-12)
    corners = box_corners(*scene.world_boxes())[0]
    expected = [[-1, 0.25, 0], [1, 0.25, 0], [-1, 0.25, 1], [1, 0.25, 1],
                [-1, -0.25, 0], [1, -0.25, 0], [-1, -0.25, 1], [1, -0.25, 1]]
    np.testing.assert_allclose(corners, expected, atol=1e-12)


def test_embodiedscan_frames_from_posed_images(tmp_path):
    infos = write_infos(tmp_path)
    scene = Scene.load(import_scene("embodiedscan", infos, tmp_path / "out",
                                    options={"scene": "scannet/scene0000_00", "data_root": str(tmp_path / "scannet")}))
    assert [f.index for f in scene.frames] == [0, 10] and scene.image_size == (640, 480)
    np.testing.assert_allclose(scene.frames[0].camera_to_world, C2G0)  # cam2global: raw world
    assert (scene.camera.fx, scene.camera.cy) == (577.6, 239.5)
    assert scene.depth.scale == 1000.0 and scene.path(scene.frames[1].depth).is_file()


def test_embodiedscan_boxes_on_scannet_frames_and_safe_unpickling(tmp_path):
    from test_adapters_scannet import write_scannet_scan

    infos = write_infos(tmp_path)
    scan = write_scannet_scan(tmp_path)
    scene = Scene.load(import_scene("scannet", scan, tmp_path / "out", boxes=f"embodiedscan:{infos}"))
    np.testing.assert_allclose(box_corners(*scene.world_boxes())[0][7], [1, -0.25, 1], atol=1e-12)
    evil = tmp_path / "evil.pkl"
    evil.write_bytes(pickle.dumps({"data_list": [Path("x")]}))
    with pytest.raises(AdapterError, match="refusing to load"):
        import_scene("scannet", scan, tmp_path / "out2", boxes=f"embodiedscan:{evil}")


def test_a_wrong_embodiedscan_box_file_fails_before_the_frames_are_read(tmp_path, monkeypatch):
    """``import scannet --boxes embodiedscan:PKL`` checks the pickle's shape (a list of samples under
    ``data_list``; with -O scene=, that scene among them) before the scan's frames are read: the
    error contract's message and exit status 2, and the frame reader never called."""
    import dataclasses

    from click.testing import CliRunner
    from test_adapters_scannet import write_scannet_scan

    from vistest import datasets
    from vistest.cli import main

    scan = write_scannet_scan(tmp_path)
    read = []

    def reader(*a, **kw):
        read.append(a)
        raise AssertionError("the frames were read before the box file was checked")

    monkeypatch.setitem(datasets.IMPORTERS, "scannet", dataclasses.replace(datasets.IMPORTERS["scannet"],
                                                                          read_capture=reader))
    cases = (({"data_list": {"scannet/scene0000_00": {}}}, [], "data_list: expected a list"),
             ([{"sample_idx": "scannet/scene0000_00"}], [], "data_list: expected a list"),
             ({"data_list": [{"sample_idx": "scannet/scene0001_00"}]}, ["-O", "scene=scene0000_00"],
              "no sample_idx matching 'scene0000_00'"))
    for n, (doc, opts, msg) in enumerate(cases):
        bad = tmp_path / f"bad{n}.pkl"
        bad.write_bytes(pickle.dumps(doc))
        out = tmp_path / f"out{n}"
        r = CliRunner().invoke(main, ["import", "scannet", str(scan), "-o", str(out), "--boxes",
                                      f"embodiedscan:{bad}", *opts, "--quiet"])
        assert r.exit_code == 2, r.output
        assert f"Error: {bad}: " in r.output and msg in r.output, r.output
        assert not (out / "scene.json").exists()
    assert read == []
    # the check reads the pickle that the import then uses (a good file still imports)
    monkeypatch.undo()
    infos = write_infos(tmp_path / "good")
    r = CliRunner().invoke(main, ["import", "scannet", str(scan), "-o", str(tmp_path / "ok"), "--boxes",
                                  f"embodiedscan:{infos}", "--quiet"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "ok" / "scene.json").exists()
