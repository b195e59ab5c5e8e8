"""Real public files: ScanNet scene0000_00 as mmdetection3d ships it in its test data.

``tests/data/mmdet3d-scannet/`` (origin, licence and checksums: tests/data/SOURCES.md) holds real
ScanNet data: an OpenMMLab info pickle (protocol 2, numpy arrays through ``_codecs.encode``)
with the colour intrinsics, three camera-to-world poses and the paths of three real colour
photos (1296x968), the 27 annotated objects and ``axis_align_matrix``; and every vertex of
``scene0000_00_vh_clean_2.ply`` with its colour (axis-aligned world), its instance label, and
mmdetection3d's own boxes of those instances.

**Conversion (documented here, done by :func:`write_scan`)** into a ScanNet scan folder as
``vistest import scannet`` reads it, in a folder whose name is not the scan id:

* ``color/{0,11,102}.jpg``: the photos; ``pose/{n}.txt``: the pickle's ``extrinsics``;
  ``intrinsic/intrinsic_color.txt``: its ``intrinsics``;
* ``scene0000_00.txt``: ``axisAlignment`` = the pickle's ``axis_align_matrix`` (and the colour size);
* ``scene0000_00_vh_clean_2.ply``: the vertices mapped back to the raw scan world
  (``inverse(axis_align_matrix)``, as ScanNet stores them), with their colours, as a point cloud;
* ``..._vh_clean_2.0.010000.segs.json``: ``segIndices`` = each vertex's instance label;
  ``scene0000_00.aggregation.json``: one ``segGroup`` per box, ``segments = [instance]``, with the
  pickle's label;
* ``depth/{n}.png`` with ``intrinsic_depth.txt`` (the colour camera scaled to 160x120): the
  vertices z-buffered into each view (3x3 splats, nearest wins; millimetres, 0 = no point): the
  only depth there is, for ``--occlusion depth``.

For the mesh z-buffer and instance visibility (``real_meshed``), the point cloud is replaced by a
triangle mesh over the same vertices whose faces are a stand-in (the real faces are not published):
what those tests measure is the engine against pyrender on that mesh, and the coffee table's own
share of frame 102 (1.45%, the issue's render of the real mesh: 1.43%).
"""
from __future__ import annotations

import json
import pickle
import shutil
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest
import trimesh

from vistest.budget.config import TruthConfig
from vistest.datasets import import_scene
from vistest.audit.scene import CheckParams, audit_scene, colour_scores, gather_evidence
from vistest.datasets.common import read_pickle
from vistest.scene import Scene
from vistest.visibility.table import compute_visibility, containment

DATA = Path(__file__).parent / "data" / "mmdet3d-scannet"
INST = DATA / "scannet_train_instance_data"
FRAMES = (0, 11, 102)
DEPTH_SIZE = (160, 120)
SOFA, COFFEE_TABLE = "33", "35"  # instance ids: the L-shaped sectional sofa and the ottoman-table inside its box


def infos() -> dict:
    return read_pickle(DATA / "scannet_infos.pkl", "mmdetection3d info pickle")[0]


def _txt(path: Path, m) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(" ".join(f"{v:f}" for v in row) for row in np.asarray(m)) + "\n")


def splat_depth(points: np.ndarray, c2w: np.ndarray, k: np.ndarray, size: tuple[int, int], radius: int = 1
                ) -> np.ndarray:
    """z-depth (metres, 0 = none) of ``points`` seen by the camera: each point covers the
    (2 radius + 1)^2 pixels around its projection; the nearest point wins."""
    w, h = size
    pc = (points - c2w[:3, 3]) @ c2w[:3, :3]
    pc = pc[pc[:, 2] > 0.05]
    u = np.rint(k[0, 0] * pc[:, 0] / pc[:, 2] + k[0, 2]).astype(int)
    v = np.rint(k[1, 1] * pc[:, 1] / pc[:, 2] + k[1, 2]).astype(int)
    depth = np.full(h * w, np.inf)
    for du in range(-radius, radius + 1):
        for dv in range(-radius, radius + 1):
            uu, vv = u + du, v + dv
            ok = (uu >= 0) & (uu < w) & (vv >= 0) & (vv < h)
            np.minimum.at(depth, vv[ok] * w + uu[ok], pc[ok, 2])
    depth[~np.isfinite(depth)] = 0.0
    return depth.reshape(h, w)


def write_scan(out: Path) -> Path:
    """The conversion of the module docstring; returns the scan folder."""
    d = infos()
    scan = out / "mmdet3d scannet sample"  # not the scan id: the adapter finds the files by contents
    align = d["annos"]["axis_align_matrix"]
    k = d["intrinsics"]
    w, h = cv2.imread(str(DATA / d["img_paths"][0])).shape[1::-1]
    sx, sy = DEPTH_SIZE[0] / w, DEPTH_SIZE[1] / h
    k_depth = np.array([[k[0, 0] * sx, 0, (k[0, 2] + 0.5) * sx - 0.5, 0],
                        [0, k[1, 1] * sy, (k[1, 2] + 0.5) * sy - 0.5, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
    vert = np.load(INST / "scene0000_00_vert_all.npy").astype(float)
    raw = vert[:, :3] @ np.linalg.inv(align)[:3, :3].T + np.linalg.inv(align)[:3, 3]
    for n, pose, img in zip(FRAMES, d["extrinsics"], d["img_paths"]):
        (scan / "color").mkdir(parents=True, exist_ok=True)
        shutil.copy(DATA / img, scan / "color" / f"{n}.jpg")
        _txt(scan / "pose" / f"{n}.txt", pose)
        (scan / "depth").mkdir(exist_ok=True)
        z = splat_depth(raw, pose, k_depth, DEPTH_SIZE)
        cv2.imwrite(str(scan / "depth" / f"{n}.png"), np.round(z * 1000).astype(np.uint16))
    _txt(scan / "intrinsic" / "intrinsic_color.txt", k)
    _txt(scan / "intrinsic" / "intrinsic_depth.txt", k_depth)
    (scan / "scene0000_00.txt").write_text(
        "axisAlignment = " + " ".join(f"{v:.6f}" for v in align.ravel()) +
        f"\ncolorWidth = {w}\ncolorHeight = {h}\ndepthWidth = {DEPTH_SIZE[0]}\ndepthHeight = {DEPTH_SIZE[1]}\n")
    colours = np.c_[vert[:, 3:6], np.full(len(vert), 255)].astype(np.uint8)
    trimesh.PointCloud(raw, colors=colours).export(scan / "scene0000_00_vh_clean_2.ply")
    ins = np.load(INST / "scene0000_00_ins_label_all.npy")
    (scan / "scene0000_00_vh_clean_2.0.010000.segs.json").write_text(json.dumps({"segIndices": ins.tolist()}))
    idx = np.load(INST / "scene0000_00_bbox_idx.npy").astype(int)
    groups = [{"objectId": int(i), "label": str(name), "segments": [int(i)]}
              for i, name in zip(idx, d["annos"]["name"])]
    (scan / "scene0000_00.aggregation.json").write_text(json.dumps({"sceneId": "scene0000_00", "segGroups": groups}))
    return scan


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> Scene:
    root = tmp_path_factory.mktemp("real")
    return Scene.load(import_scene("scannet", write_scan(root), root / "scene"))


def test_real_openmmlab_pickle_is_read_safely():
    raw = (DATA / "scannet_infos.pkl").read_bytes()
    assert raw[:2] == b"\x80\x02" and b"_codecs\nencode" in raw and b"numpy.core.multiarray\n_reconstruct" in raw
    got = read_pickle(DATA / "scannet_infos.pkl", "info pickle")
    ref = pickle.loads(raw)  # our own committed file: the plain loader is the reference
    assert len(got) == len(ref) == 1
    for key in ("intrinsics", "extrinsics"):
        np.testing.assert_array_equal(np.asarray(got[0][key]), np.asarray(ref[0][key]))
    for key, value in ref[0]["annos"].items():
        np.testing.assert_array_equal(got[0]["annos"][key], value)
    assert got[0]["annos"]["name"].dtype.kind == "U" and got[0]["annos"]["gt_num"] == 27


def test_real_scan_imports_with_the_boxes_mmdetection3d_computed(real):
    d = infos()
    assert real.scene_id == "scene0000_00"  # found by contents, not from the folder name
    assert [f.index for f in real.frames] == list(FRAMES) and all(f.image for f in real.frames)
    assert real.image_size == (1296, 968) and real.camera.fx == pytest.approx(d["intrinsics"][0, 0], abs=1e-5)
    np.testing.assert_allclose(real.boxes_to_world, np.linalg.inv(d["annos"]["axis_align_matrix"]), atol=1e-5)
    # mmdetection3d's own boxes of the same instances (axis-aligned world): centre and size
    ref = np.load(INST / "scene0000_00_bbox.npy")
    assert len(real.objects) == len(ref) == 27
    for o, b in zip(real.objects, ref):
        np.testing.assert_allclose(o.center, b[:3], atol=1e-4)
        np.testing.assert_allclose(o.size, b[3:6], atol=1e-4)
    assert [o.label for o in real.objects] == list(d["annos"]["name"])


def test_real_photos_score_the_right_convention_far_above_the_opengl_flip(real):
    params = CheckParams()
    ev = gather_evidence(real, use_depth=False, use_mesh=True, params=params)
    assert ev.colour_points is not None and all(im is not None for im in ev.images)
    right = np.array(colour_scores(real, ev, params))
    gl = replace(real, frames=tuple(replace(f, camera_to_world=f.camera_to_world @ np.diag([1.0, -1, -1, 1]))
                                    for f in real.frames))
    flipped = np.array(colour_scores(gl, ev, params))
    print("real photos, colour rank correlation: OpenCV", right.round(3), "OpenGL", flipped.round(3))
    assert (right >= 0.4).all() and (right - flipped >= 0.3).all()


def test_real_audit_passes_and_names_the_opengl_fix(real):
    params = CheckParams()
    r = audit_scene(real, use_depth=False, params=params)
    assert "colour" in r.evidence
    assert r.passed and r.best == "as given", r.text()
    # the verdict in words: only what was measured (no depth here: no "depth contradicts - of sightings")
    assert "depth" not in r.message and " - " not in r.message and "colour rank correlation 0." in r.message
    gl = replace(real, frames=tuple(replace(f, camera_to_world=f.camera_to_world @ np.diag([1.0, -1, -1, 1]))
                                    for f in real.frames))
    bad = audit_scene(gl, use_depth=False, params=params)
    assert not bad.passed and bad.best == "OpenGL camera axes", bad.text()


def test_real_loose_nested_boxes_do_not_hide_the_coffee_table(real):
    """Frame 102 looks at the L-shaped sectional with the ottoman-table in its corner: the
    table's box lies inside the sofa's. The old solid-box z-buffer hid it (visible 0); every
    mode now sees it, about as much as its own points show (instance labels, z-buffered)."""
    ids = [o.id for o in real.objects]
    t, s = ids.index(COFFEE_TABLE), ids.index(SOFA)
    assert real.objects[t].label == "table" and real.objects[s].label == "sofa"
    assert containment(*real.world_boxes())[s, t]
    f = FRAMES.index(102)
    # the reference: image share of the pixels whose nearest vertex belongs to the table (160x120 splats)
    d = infos()
    vert = np.load(INST / "scene0000_00_vert_all.npy").astype(float)
    ins = np.load(INST / "scene0000_00_ins_label_all.npy")
    raw = vert[:, :3] @ real.boxes_to_world[:3, :3].T + real.boxes_to_world[:3, 3]
    k = real.depth.camera.matrix()
    everything = splat_depth(raw, d["extrinsics"][f], k, DEPTH_SIZE)
    table_only = splat_depth(raw[ins == int(COFFEE_TABLE)], d["extrinsics"][f], k, DEPTH_SIZE)
    share = float(((table_only > 0) & (np.abs(table_only - everything) < 1e-9)).mean())
    assert share > 0.01
    from vistest.visibility.table import choose_occlusion

    mode, why = choose_occlusion(real)
    assert mode == "depth" and "point cloud" in why  # the default: the splatted depth, not the boxes
    for mode in ("boxes", "depth"):
        vis = compute_visibility(real, occlusion=mode)
        got = vis.visible[f, t]
        print(f"real frame 102, coffee table: {mode} visible {got:.4f}, projected {vis.projected[f, t]:.4f}, "
              f"own points {share:.4f}")
        assert got >= share - 0.005, mode  # never below what its own points show (loose box: above)
        assert got <= vis.projected[f, t] + 1e-12


@pytest.fixture(scope="module")
def real_meshed(tmp_path_factory) -> Scene:
    """The sample with a triangle mesh: mmdetection3d publishes the vertices of
    ``scene0000_00_vh_clean_2.ply`` without its faces (and no public repository we searched has
    them), so the faces are a stand-in surface over the real vertices
    (:func:`vistest.synthetic.surface_from_points`: local 2D Delaunay umbrellas that agree,
    154,943 manifold-like triangles where the real mesh has about 145k): real vertices, instance
    ids, boxes, camera and poses; NOT the real faces."""
    from vistest.synthetic import surface_from_points

    root = tmp_path_factory.mktemp("real-meshed")
    scan = write_scan(root)
    ply = scan / "scene0000_00_vh_clean_2.ply"
    vertices = np.asarray(trimesh.load(ply, process=False).vertices)
    trimesh.Trimesh(vertices, surface_from_points(vertices), process=False).export(ply)
    return Scene.load(import_scene("scannet", scan, root / "scene"))


@pytest.mark.slow  # the stand-in surface over the 81k real vertices (real_meshed)
def test_real_import_labels_the_mesh_vertices(real_meshed):
    scene = real_meshed
    lines = scene.path(scene.mesh_objects).read_text().splitlines()
    ins = np.load(INST / "scene0000_00_ins_label_all.npy")
    assert scene.mesh_objects == "mesh_objects.txt" and len(lines) == len(ins)
    ids = set(scene.object_ids)
    assert all((ln == str(i)) if str(i) in ids else ln == "" for ln, i in zip(lines, ins))


@pytest.mark.slow  # real_meshed (mesh instances against pyrender: tests/test_zbuffer.py)
def test_real_instance_visibility_of_the_coffee_table_matches_pyrender(real_meshed):
    """Frame 102: the table's own faces cover ~1.4% of the image (the issue's pyrender render of
    the real instance mesh: 1.43%); the evidence region (the box bound, what dummies remove) is
    looser and its rectangle holds every pixel of the table."""
    from vistest.visibility.render import MeshSegRenderer
    from vistest.visibility.table import load_scene_mesh

    scene = real_meshed
    vis = compute_visibility(scene)
    assert vis.params["occlusion"] == "mesh" and vis.params["visible"] == "instance" and not vis.params["box_fallback"]
    mesh = load_scene_mesh(scene)
    w, h = scene.image_size
    ref = MeshSegRenderer(mesh.verts, mesh.faces, mesh.face_obj, w, h, near=1e-3)
    try:
        labels = [ref.labels(f.camera_to_world, scene.camera) for f in scene.frames]
    finally:
        ref.close()
    t = list(scene.object_ids).index(COFFEE_TABLE)
    for i, lab in enumerate(labels):
        share = np.bincount(lab[lab >= 0].ravel(), minlength=len(scene.objects)) / lab.size
        err = np.abs(vis.visible[i] - share)
        print(f"real frame {FRAMES[i]}: instance visible vs pyrender {w}x{h}: max error {err.max() * 100:.3f}%")
        assert err.max() <= 0.005
    f = FRAMES.index(102)
    table = labels[f] == t
    print(f"real frame 102, coffee table: visible {vis.visible[f, t]:.4f} (pyrender {table.mean():.4f}), "
          f"evidence {vis.evidence[f, t]:.4f}, projected {vis.projected[f, t]:.4f}")
    assert 0.012 <= vis.visible[f, t] <= 0.016 and abs(vis.visible[f, t] - table.mean()) <= 0.002
    assert vis.evidence[f, t] >= vis.visible[f, t] + 0.005  # the loose box bound: floor and sofa inside its box
    x0, y0, x1, y1 = vis.bbox[f, t]
    ys, xs = np.nonzero(table)
    assert x0 <= xs.min() and xs.max() < x1 and y0 <= ys.min() and ys.max() < y1
    sil = compute_visibility(scene, occlusion="none").bbox[f, t]
    assert (x0, x1) == (sil[0], sil[2])  # the evidence spans the box silhouette's width


def test_real_scan_gets_its_room_and_room_size_questions(real):
    """``vistest import scannet`` gives the scene a room: VSI-Bench's alpha shape of the mesh
    vertices (tests/test_room.py compares it with VSI-Bench's recipe); the generator asks its size."""
    from vistest.datasets.room import ALPHA, room_area
    from vistest.generate.facts import SceneFacts
    from vistest.generate.room import MULTIPLE, candidates
    from vistest.generate.rules import RoomSizeRules

    aligned = np.load(INST / "scene0000_00_vert_all.npy")[:, :3].astype(float)
    want = room_area(aligned).area_m2  # the same vertices in the axis-aligned world: the area does not move
    assert real.room["area_type"] == "all_room" and real.room["alpha"] == ALPHA
    assert real.room_area_m2 == pytest.approx(want, rel=0.005) and "polygon" in real.room
    vis = compute_visibility(real, occlusion="boxes")
    [cand] = candidates(SceneFacts(real, vis, 0.05), RoomSizeRules(), (MULTIPLE,))
    assert cand.value == pytest.approx(real.room_area_m2)


def test_real_coffee_table_under_the_threshold_says_why(real):
    """The ottoman-table is in the photos but under ReVSI's 5% of the image: a size question about
    it is unanswerable, and the row says in how many frames it is in view and how much of the
    image it takes at most; 1024 native pixels see it."""
    import re

    from vistest.budget.seen import SeenRule
    from vistest.budget.truth import budget_truth
    from vistest.questions import parse_questions

    t = [o.id for o in real.objects].index(COFFEE_TABLE)
    vis = compute_visibility(real, occlusion="depth")
    q = parse_questions([json.dumps({"id": 1, "scene_id": real.scene_id, "question_type": "object_size_estimation",
                                     "question": "?", "objects": [COFFEE_TABLE], "ground_truth": 80})])
    it = budget_truth(real, vis, q, TruthConfig(budgets=("all",))).items[0]
    assert it.status == "unanswerable"
    [d] = it.unseen_detail
    col = np.nan_to_num(vis.visible[:, t])
    assert 0 < col.max() < 0.05 and d["max"] == col.max() and d["in_view"] == int((col > 0).sum())
    assert d["max_frame"] == int(vis.frame_index[np.argmax(col)])
    m = re.fullmatch(r"table 35: in view in (\d) of 3 frames, at most (\d\.\d)% of the image \(frame (\d+); "
                     r"rule: > 5% of the image\)", d["text"])
    assert m and int(m[1]) == d["in_view"] and m[2] == f"{100 * col.max():.1f}" and int(m[3]) == d["max_frame"]
    print(f"real coffee table: {it.reason_text}")
    assert budget_truth(real, vis, q, TruthConfig(budgets=("all",),
                                                  seen_threshold=SeenRule("pixels"))).items[0].status == "kept"


@pytest.mark.slow  # the stand-in surface over 81k real vertices (its rule: tests/test_zbuffer.py)
def test_stand_in_surface_has_the_real_meshes_size_and_structure():
    """The stand-in faces over scene0000_00's 81,369 real vertices (NOT the real faces, which
    are not published): about as many triangles as the real ``_vh_clean_2.ply`` (~145k: the
    issue's 290k-triangle two-sided mesh), about two per vertex, nearly every edge with one or
    two faces (a manifold-like surface, not overlapping fans)."""
    from vistest.synthetic import surface_from_points

    vert = np.load(INST / "scene0000_00_vert_all.npy")[:, :3].astype(float)
    faces = surface_from_points(vert)
    e = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), 1)
    per_edge = np.unique(e, axis=0, return_counts=True)[1]
    print(f"stand-in: {len(faces)} triangles ({len(faces) / len(vert):.2f} per vertex); edges with 1 / 2 / 3+ faces: "
          f"{(per_edge == 1).sum()} / {(per_edge == 2).sum()} / {(per_edge >= 3).sum()}")
    assert 145_000 <= len(faces) <= 165_000 and len(np.unique(np.sort(faces, 1), axis=0)) == len(faces)
    assert (per_edge >= 3).mean() < 0.015 and (per_edge == 2).mean() > 0.85
