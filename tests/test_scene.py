"""Scene format: validation messages and save/load round trip."""
import json
import re

import numpy as np
import pytest

from vistest.scene import Scene, SceneError
from conftest import IDENTITY, scene_doc


def base():
    return scene_doc([([0, 0, 2], [1, 1, 1]), ([1, 0, 3], [0.5, 0.5, 0.5])], [IDENTITY, IDENTITY, IDENTITY])


def rejects(doc, *fragments, tmp_path=None):
    with pytest.raises(SceneError) as e:
        Scene.from_dict(doc, root=tmp_path or ".", source="s.json")
    for frag in fragments:
        assert frag in str(e.value), str(e.value)
    assert str(e.value).startswith("s.json: ")
    return str(e.value)


def test_valid_scene_loads():
    s = Scene.from_dict(base())
    assert len(s.frames) == 3 and s.num_frames == 3 and s.object_ids == ("0", "1")
    assert all(f.valid for f in s.frames)


def test_rejects_non_finite_numbers():
    d = base()
    d["objects"][0]["center"][1] = float("nan")
    rejects(d, "objects[0].center[1]", "finite")
    d = base()
    d["fps"] = float("inf")
    rejects(d, "fps", "finite")
    d = base()
    d["frames"][1]["camera_to_world"][0][3] = float("nan")
    rejects(d, "frames[1].camera_to_world", "finite")


def test_neg_inf_and_null_pose_mark_invalid_frames():
    d = base()
    d["frames"][1]["camera_to_world"] = [[float("-inf")] * 4] * 4  # ScanNet's lost tracking
    d["frames"][2]["camera_to_world"] = None
    s = Scene.from_dict(d)
    assert [f.valid for f in s.frames] == [True, False, False]


def test_rejects_bad_rotations():
    d = base()
    d["objects"][1]["rotation"] = [[1, 0, 0], [0, 1, 0.01], [0, 0, 1]]
    rejects(d, "objects[1].rotation", "not orthonormal")
    d = base()
    d["objects"][1]["rotation"] = [[1, 0, 0], [0, 1, 0], [0, 0, -1]]
    rejects(d, "objects[1].rotation", "det")
    d = base()
    pose = np.eye(4)
    pose[:3, :3] *= 1.001
    d["frames"][0]["camera_to_world"] = pose.tolist()
    rejects(d, "frames[0].camera_to_world", "not orthonormal")
    # within tolerance is accepted
    d = base()
    d["objects"][1]["rotation"] = [[1, 0, 0], [0, 1, 0.00003], [0, -0.00003, 1]]
    Scene.from_dict(d)


def test_rejects_non_positive_sizes():
    d = base()
    d["objects"][0]["size"] = [1, 0, 1]
    rejects(d, "objects[0].size", "positive")
    d["objects"][0]["size"] = [1, -2, 1]
    rejects(d, "objects[0].size", "positive")


def test_rejects_duplicate_object_ids():
    d = base()
    d["objects"][1]["id"] = "0"
    rejects(d, "objects[1].id", "duplicate object id '0'", "objects[0]")


def test_rejects_frames_out_of_order_or_duplicated():
    d = base()
    d["frames"][2]["index"] = 1
    rejects(d, "frames[2].index", "duplicated frame index 1")
    d = base()
    d["frames"][2]["index"] = 0
    rejects(d, "frames[2].index", "out of order")


def test_rejects_missing_files(tmp_path):
    d = base()
    d["video"] = "video.mp4"
    rejects(d, "video", "file not found", str(tmp_path / "video.mp4"), tmp_path=tmp_path)
    d = base()
    d["frames"][0]["depth"] = "depth/000000.png"
    rejects(d, "frames[0].depth", "file not found", tmp_path=tmp_path)
    d = base()
    d["mesh"] = "mesh.ply"
    rejects(d, "mesh", "file not found", tmp_path=tmp_path)


def test_rejects_bad_shapes_and_fields():
    d = base()
    d["objects"][0]["rotation"] = [[1, 0], [0, 1]]
    rejects(d, "objects[0].rotation", "shape [3, 3]")
    d = base()
    d["image_size"] = [640]
    rejects(d, "image_size", "[W, H]")
    d = base()
    d["format"] = "other/2"
    rejects(d, "format", "vistest.scene/1")
    d = base()
    del d["camera"]["fy"]
    rejects(d, "camera", "missing fy")
    d = base()
    d["boxes_to_world"] = (2 * np.eye(4)).tolist()
    rejects(d, "boxes_to_world")


def test_load_names_the_file(tmp_path):
    p = tmp_path / "scene.json"
    p.write_text("{not json")
    with pytest.raises(SceneError, match="scene.json: not valid JSON"):
        Scene.load(p)
    d = base()
    d["objects"][0]["size"] = [0, 1, 1]
    p.write_text(json.dumps(d))
    with pytest.raises(SceneError, match=r"scene\.json: objects\[0\]\.size"):
        Scene.load(p)


def test_round_trip(tmp_path):
    d = base()
    (tmp_path / "video.mp4").write_bytes(b"x")
    d["video"] = "video.mp4"
    d["frames"][1]["camera_to_world"] = None
    d["frames"][2]["intrinsics"] = {"fx": 400.0, "fy": 410.0, "cx": 300.0, "cy": 200.0}
    b2w = np.eye(4)
    b2w[:3, :3] = [[0, -1, 0], [1, 0, 0], [0, 0, 1]]
    b2w[:3, 3] = [1, 2, 3]
    d["boxes_to_world"] = b2w.tolist()
    d["room"] = {"size_m2": 12.5}
    s = Scene.from_dict(d, root=tmp_path)
    s.save(tmp_path / "scene.json")
    t = Scene.load(tmp_path / "scene.json")
    assert t.to_dict() == s.to_dict()
    assert t.frames[2].intrinsics.fx == 400.0 and not t.frames[1].valid
    np.testing.assert_array_equal(t.boxes_to_world, b2w)
    # boxes_to_world is applied: box 0 centre (0, 0, 2) -> R @ c + t
    c, _, r = t.world_boxes()
    np.testing.assert_allclose(c[0], [1, 2, 5])
    np.testing.assert_allclose(r[0], b2w[:3, :3])
    assert not list(tmp_path.glob(".*tmp"))  # no temp file left behind


def test_default_time_is_index_over_fps():
    d = base()
    for f in d["frames"]:
        del f["time"]
    s = Scene.from_dict(d)
    assert [f.time for f in s.frames] == [0.0, 1 / 30.0, 2 / 30.0]


def test_saved_files_get_the_usual_permissions(tmp_path):
    """Atomic writes go through mkstemp (mode 0600); the output must be readable like open()'s."""
    import os
    import stat

    mask = os.umask(0)
    os.umask(mask)
    Scene.from_dict(base()).save(tmp_path / "scene.json")
    assert stat.S_IMODE((tmp_path / "scene.json").stat().st_mode) == 0o666 & ~mask


def test_room_area_from_polygon_or_size():
    d = base()
    d["room"] = {"polygon": [[0, 0], [4, 0], [4, 3], [1, 3], [1, 5], [0, 5]], "area_type": "single_room"}
    assert Scene.from_dict(d).room_area_m2 == pytest.approx(4 * 3 + 1 * 2)  # an L-shaped floor
    d["room"] = {"size_m2": 21.5, "source": "kept verbatim"}
    s = Scene.from_dict(d)
    assert s.room_area_m2 == 21.5 and s.room["source"] == "kept verbatim"
    d["room"] = {"polygon": [[0, 0], [2, 0], [2, 2], [0, 2]], "size_m2": 4.02}  # agree within 1%
    assert Scene.from_dict(d).room_area_m2 == pytest.approx(4.0)
    d["room"] = {"height_m": 2.5}
    assert Scene.from_dict(d).room_area_m2 is None


@pytest.mark.parametrize("room, field, expected", [
    ({"size_m2": -3}, "room.size_m2", "positive"),
    ({"size_m2": "big"}, "room.size_m2", "a number"),
    ({"area_type": "kitchen"}, "room.area_type", "all_room, single_room"),
    ({"polygon": [[0, 0], [1, 1]]}, "room.polygon", "at least 3"),
    ({"polygon": [[0, 0], [1, 1], [2, 2]]}, "room.polygon", "positive area"),
    ({"polygon": [[0, 0], [1, 0], [1, "x"]]}, "room.polygon", "numbers of shape"),
    ({"polygon": [[0, 0], [2, 0], [2, 2], [0, 2]], "size_m2": 5.0}, "room.size_m2", "disagrees"),
    ({"center": [1, 2]}, "room.center", "shape"),
    ([1, 2], "room", "an object"),
])
def test_bad_room_fields_are_named(room, field, expected):
    d = base()
    d["room"] = room
    with pytest.raises(SceneError, match=rf"<scene>: {re.escape(field)}: .*{expected}"):
        Scene.from_dict(d)
