"""VSI-Bench meta info as a box source, on a meta file written in the released format.

Hand-derived fixture: ScanNet meta-info boxes live in the raw scan world minus the mean
``_vh_clean_2.ply`` vertex; the ScanNet fixture's vertices (test_adapters_scannet) have
mean (0, 0.5, 0.5). The box: normalizedAxes rows (0,1,0), (-1,0,0), (0,0,1),
axesLengths (2, 1, 0.5), centroid (1, 1, 0) -> pose-world centre (1, 1.5, 0.5).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from test_adapters_scannet import write_scannet_scan

from vistest.datasets import AdapterError, import_scene
from vistest.scene import Scene, box_corners


def write_meta(path: Path, box: dict | None = None) -> Path:
    box = box or {"centroid": [1, 1, 0], "axesLengths": [2, 1, 0.5], "normalizedAxes": [0, 1, 0, -1, 0, 0, 0, 0, 1],
                  "min": [0.5, 0, -0.25], "max": [1.5, 2, 0.25]}
    path.write_text(json.dumps({"scene0000_00": {
        "room_size": 21.5, "room_center": [0, 0, 0], "object_counts": {"table": 1},
        "object_bbox": {"table": [box]}, "video_path": "/data/scene0000_00.mp4", "dataset": "scannet"}}))
    return path


def test_vsibench_boxes_on_scannet_frames(tmp_path):
    scan = write_scannet_scan(tmp_path)
    meta = write_meta(tmp_path / "scannet_meta_info_val.json")
    scene = Scene.load(import_scene("scannet", scan, tmp_path / "out", boxes=f"vsibench:{meta}"))
    np.testing.assert_allclose(scene.boxes_to_world[:3, 3], [0, 0.5, 0.5])  # + mean vertex
    (table,) = scene.objects
    assert (table.id, table.label) == ("table_0", "table")
    corners = box_corners(*scene.world_boxes())[0]
    expected = [[1.5, 0.5, 0.25], [1.5, 2.5, 0.25], [0.5, 0.5, 0.25], [0.5, 2.5, 0.25],
                [1.5, 0.5, 0.75], [1.5, 2.5, 0.75], [0.5, 0.5, 0.75], [0.5, 2.5, 0.75]]
    np.testing.assert_allclose(corners, expected, atol=1e-12)
    assert scene.room["size_m2"] == 21.5 and scene.room["center"] == [0, 0.5, 0.5]
    assert scene.room["area_type"] == "all_room" and scene.room_area_m2 == 21.5  # the combined space
    assert len(scene.frames) == 3  # the frames are ScanNet's


def test_vsibench_as_dataset_with_frames(tmp_path):
    scan = write_scannet_scan(tmp_path)
    meta = write_meta(tmp_path / "meta.json")
    a = Scene.load(import_scene("vsibench", meta, tmp_path / "a", frames=f"scannet:{scan}",
                                options={"scene": "scene0000_00"}))
    assert [o.label for o in a.objects] == ["table"]
    with pytest.raises(AdapterError, match="--frames"):
        import_scene("vsibench", meta, tmp_path / "b")


def test_vsibench_min_max_catch_a_wrong_reading(tmp_path):
    """min/max are the AABB of the box with rows as axes; columns-as-axes does not match
    (for a tilted box: a yaw-only box has the same AABB either way)."""
    a, b = np.radians(30.0), np.radians(40.0)
    rz = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])
    rx = np.array([[1, 0, 0], [0, np.cos(b), -np.sin(b)], [0, np.sin(b), np.cos(b)]])
    rows = rz @ rx
    size = np.array([2.0, 1.0, 0.5])
    half_cols = np.abs(rows) @ (size / 2)  # AABB half-extents if the columns were the axes
    box = {"centroid": [0, 0, 0], "axesLengths": size.tolist(), "normalizedAxes": rows.ravel().tolist(),
           "min": (-half_cols).tolist(), "max": half_cols.tolist()}
    scan = write_scannet_scan(tmp_path)
    meta = write_meta(tmp_path / "meta.json", box)
    with pytest.raises(AdapterError, match=r"object_bbox\['table'\]\[0\]: min/max differ"):
        import_scene("scannet", scan, tmp_path / "out", boxes=f"vsibench:{meta}")
