"""An object inside another's bounding box: a coffee table within an L-shaped sofa.

Real annotations are loose and nested. The sofa's mesh is built from its L-shaped parts
(two seats, two backrests) and its box is their loose bounding box; the coffee table stands
in the empty corner of the L, wholly inside the sofa's box. The reference is a pyrender
segmentation render of the *mesh* (the table's faces in their own colour), independent of
the engine: the table's pixel share per frame. ``depth`` (pyrender depth PNGs) and ``mesh``
occlusion must report the table's visible share within 0.5% of the image of it; ``boxes``
occlusion (no observed geometry) must not hide it behind the sofa's box. A dummy for a
question about the table, written by the real video pipeline, must drop every frame where
the table shows.
"""
from __future__ import annotations

import json

import cv2
import numpy as np
import pyrender
import pytest
import trimesh

import vistest  # noqa: F401  (sets PYOPENGL_PLATFORM)
from vistest.geometry import look_at
from vistest.questions import load_questions
from vistest.scene import DepthSpec, Frame, Intrinsics, Scene, SceneObject
from vistest.visibility.render import MeshDepthRenderer, free_renderer, gl_camera, gl_pose
from vistest.visibility.table import compute_visibility

W, H = 320, 240
K = Intrinsics(fx=260.0, fy=260.0, cx=161.3, cy=118.2)
# (x0, y0, z0), (x1, y1, z1) of each part, metres
SOFA_PARTS = [((0.0, 0.0, 0.0), (2.4, 0.9, 0.45)),   # seat along y = 0
              ((0.0, 0.0, 0.45), (2.4, 0.2, 0.85)),  # its backrest
              ((0.0, 0.9, 0.0), (0.9, 2.4, 0.45)),   # seat along x = 0
              ((0.0, 0.9, 0.45), (0.2, 2.4, 0.85))]  # its backrest
TABLE = ((1.2, 1.2, 0.0), (2.0, 1.9, 0.42))
FLOOR = ((-3.0, -3.0, -0.02), (5.0, 5.0, 0.0))
TABLE_ID, SOFA_ID = "2", "1"


def part(lo, hi) -> trimesh.Trimesh:
    lo, hi = np.array(lo, float), np.array(hi, float)
    return trimesh.creation.box(extents=hi - lo, transform=trimesh.transformations.translation_matrix((lo + hi) / 2))


def aabb(parts) -> tuple[np.ndarray, np.ndarray]:
    lo = np.min([p[0] for p in parts], axis=0)
    hi = np.max([p[1] for p in parts], axis=0)
    return (lo + hi) / 2, hi - lo


def poses() -> list[np.ndarray]:
    """Views of the corner: over the open side, along the backrests, from behind a backrest
    (the table partly hidden by the sofa; wholly hidden from low down), from above, and two
    looking away (no table)."""
    eyes_targets = [
        ((3.6, 3.4, 1.5), (1.3, 1.3, 0.3)), ((3.8, 1.5, 1.0), (1.4, 1.5, 0.3)), ((1.6, 3.9, 1.2), (1.5, 1.4, 0.3)),
        ((-1.2, -1.0, 1.4), (1.6, 1.6, 0.2)), ((-1.6, 1.5, 1.7), (1.6, 1.5, 0.2)), ((1.5, -1.4, 1.6), (1.6, 1.5, 0.2)),
        ((-1.6, 1.5, 0.95), (1.6, 1.5, 0.2)),
        ((1.6, 1.5, 3.2), (1.5, 1.4, 0.0)), ((2.6, 2.2, 1.0), (1.7, 1.6, 0.1)),
        ((3.6, 3.4, 1.5), (6.0, 6.0, 1.5)), ((-1.6, 1.5, 0.95), (-4.0, 1.5, 1.0)),
    ]
    return [look_at(e, t) for e, t in eyes_targets]


class Reference:
    """pyrender segmentation of the mesh (floor 1, sofa parts 2, table 3) and its depth."""

    def __init__(self):
        self.scene = pyrender.Scene(bg_color=[0, 0, 0, 0], ambient_light=[1, 1, 1])
        self.seg = {}
        for parts, colour in (([FLOOR], 1), (SOFA_PARTS, 2), ([TABLE], 3)):
            for lo, hi in parts:
                node = self.scene.add(pyrender.Mesh.from_trimesh(part(lo, hi), smooth=False))
                self.seg[node] = (colour, colour, colour)
        self.cam = self.scene.add(gl_camera(K, 0.01), pose=np.eye(4))
        self.r = pyrender.OffscreenRenderer(W, H)

    def table_share(self, c2w) -> float:
        self.scene.set_pose(self.cam, gl_pose(c2w))
        col, _ = self.r.render(self.scene, flags=pyrender.RenderFlags.SEG, seg_node_map=self.seg)
        return float((col[..., 0] == 3).mean())

    def close(self):
        free_renderer(self.r)


def mesh_file(path):
    parts = [part(*p) for p in [FLOOR] + SOFA_PARTS + [TABLE]]
    trimesh.util.concatenate(parts).export(path)


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    """(scene with depth frames and mesh, reference table share per frame)."""
    root = tmp_path_factory.mktemp("nested")
    mesh_file(root / "mesh.ply")
    ps = poses()
    (root / "depth").mkdir()
    dr = MeshDepthRenderer(root / "mesh.ply", W, H, near=0.01)
    try:
        for i, p in enumerate(ps):
            cv2.imwrite(str(root / "depth" / f"{i}.png"), np.round(dr.render(p, K) * 1000).astype(np.uint16))
    finally:
        dr.close()
    ref = Reference()
    try:
        share = np.array([ref.table_share(p) for p in ps])
    finally:
        ref.close()
    sofa_c, sofa_s = aabb(SOFA_PARTS)
    table_c, table_s = aabb([TABLE])
    objects = (SceneObject(SOFA_ID, "sofa", sofa_c, sofa_s, np.eye(3)),
               SceneObject(TABLE_ID, "table", table_c, table_s, np.eye(3)))
    frames = tuple(Frame(i, i / 30.0, p, depth=f"depth/{i}.png") for i, p in enumerate(ps))
    scene = Scene("nested", 30.0, (W, H), K, frames, objects, mesh="mesh.ply", depth=DepthSpec(1000.0), root=root)
    return scene, share


def test_the_table_stands_inside_the_sofa_box_and_is_hidden_in_some_views(room):
    scene, share = room
    c, s, _ = scene.world_boxes()
    assert (np.abs(c[1] - c[0]) + s[1] / 2 <= s[0] / 2 + 1e-9).all()  # wholly inside
    assert (share > 0.01).sum() >= 6 and (share == 0).sum() >= 2
    proj = compute_visibility(scene, occlusion="none").projected[:, 1]
    assert ((proj - share) > 0.01).sum() >= 2  # partly hidden by the sofa in some views: not vacuous


@pytest.mark.parametrize("mode", ["depth", "mesh"])
def test_observed_geometry_sees_the_nested_table_like_pyrender(room, mode):
    scene, share = room
    vis = compute_visibility(scene, occlusion=mode)
    assert vis.params["occlusion"] == mode
    err = np.abs(vis.visible[:, 1] - share)
    assert err.max() <= 0.005, f"{mode}: table visible {vis.visible[:, 1].round(4)} vs pyrender {share.round(4)}"
    # the loose sofa box shows wherever the floor behind its faces shows: never less than its own pixels
    assert (vis.visible[:, 0] > 0).any()


def test_boxes_mode_does_not_hide_what_a_box_contains(room):
    scene, share = room
    vis = compute_visibility(scene, occlusion="boxes")
    assert vis.params["contain_share"] == 0.5
    # nothing but the sofa's box is in front of the table's box: visible = projected, never below the truth
    np.testing.assert_allclose(vis.visible[:, 1], vis.projected[:, 1], atol=1e-12)
    assert (vis.visible[:, 1] >= share - 0.005).all()


def test_auto_uses_the_mesh(room):
    from vistest.visibility.table import choose_occlusion

    scene, _ = room
    assert choose_occlusion(scene)[0] == "mesh"
    assert compute_visibility(scene).params["occlusion"] == "mesh"


def test_dummy_drops_every_frame_where_the_nested_table_shows(room, tmp_path):
    """Through the real pipeline: a small video of the views, occlusion chosen by default (mesh)."""
    from vistest.budget.config import TruthConfig
    from vistest.config import RunConfig
    from vistest.pipeline import run_scene
    from vistest.videos.config import DummyConfig
    from vistest.videos.ffmpeg import VideoWriter, count_frames

    scene, share = room
    root = scene.root
    ref = Reference()
    try:
        with VideoWriter(root / "video.mp4", fps=30.0, size=(W, H)) as v:
            for f in scene.frames:
                ref.scene.set_pose(ref.cam, gl_pose(f.camera_to_world))
                col, _ = ref.r.render(ref.scene, flags=pyrender.RenderFlags.SEG, seg_node_map=ref.seg)
                v.write(np.ascontiguousarray((col * 80).astype(np.uint8)))
    finally:
        ref.close()
    doc = scene.to_dict()
    doc["video"] = "video.mp4"
    for fr in doc["frames"]:
        fr.pop("depth", None)  # the mesh alone: the default must pick it
    doc.pop("depth", None)
    (root / "scene.json").write_text(json.dumps(doc))
    (root / "q.jsonl").write_text(json.dumps({
        "id": "t1", "scene_id": "nested", "question_type": "object_size_estimation", "objects": [TABLE_ID],
        "question": "What is the length of the longest dimension of the table, in centimeters?",
        "ground_truth": "80"}) + "\n")
    loaded = Scene.load(root / "scene.json")
    qs = load_questions(root / "q.jsonl", scene=loaded)
    out = tmp_path / "run"
    res = run_scene(root / "scene.json", qs, out,
                    RunConfig(TruthConfig(budgets=("all",)), DummyConfig(modes=("drop",), budgets=("all",))),
                    progress=False, scene=loaded)
    rec = next(json.loads(ln) for ln in (out / "manifest.jsonl").read_text().splitlines()
               if json.loads(ln)["mode"] == "drop")
    shows = {i for i in range(len(share)) if share[i] > 0}
    kept = set(rec["source_frames"])
    assert shows and not (kept & shows), f"kept {sorted(kept)}, the table shows in {sorted(shows)}"
    assert kept == set(range(len(share))) - shows  # and nothing else is dropped
    assert count_frames(out / rec["path"]) == len(kept)
    assert res.truth is not None


def test_cli_says_which_occlusion_it_used(room, tmp_path):
    from click.testing import CliRunner

    from vistest.cli import main
    from vistest.visibility.table import Visibility

    scene, share = room
    scene.save(scene.root / "with-depth.json")
    path = str(scene.root / "with-depth.json")
    r = CliRunner().invoke(main, ["visibility", path, "-o", str(tmp_path / "v.npz")])
    assert r.exit_code == 0, r.output
    assert "occlusion: mesh (the scene's mesh (mesh.ply) hides what is behind it)" in r.output
    v = Visibility.load(tmp_path / "v.npz")
    assert v.params["occlusion"] == "mesh" and np.abs(v.visible[:, 1] - share).max() <= 0.005
    r = CliRunner().invoke(main, ["visibility", path, "-o", str(tmp_path / "d.npz"), "--occlusion", "depth"])
    assert r.exit_code == 0 and "occlusion: depth (asked for)" in r.output
    doc = scene.to_dict()
    doc.pop("mesh")
    (scene.root / "no-mesh.json").write_text(json.dumps(doc))
    r = CliRunner().invoke(main, ["visibility", str(scene.root / "no-mesh.json"), "-o", str(tmp_path / "x.npz"),
                                  "--occlusion", "mesh"])
    assert r.exit_code == 2 and "no-mesh.json: mesh: missing; expected a mesh file for occlusion 'mesh'" in r.output
    assert not (tmp_path / "x.npz").exists()
