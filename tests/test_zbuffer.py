"""The mesh z-buffer and instance visibility against pyrender, on random meshed scenes.

``random_mesh_scene`` writes a room of rotated, tilted ellipsoids, cylinders, cones and boxes
with per-vertex object ids (``mesh_objects``), unannotated clutter, open floor and walls, one
object missing from the mesh, a camera inside an object and invalid frames. The references are
pyrender renders of the same mesh (:class:`MeshSegRenderer`: one node per object, faces in both
windings; :class:`MeshDepthRenderer`: the previous mesh mode's depth), independent of the Numba
kernel: depth and ids per working sample, the instance share at native resolution (within 0.5%
of the image, the issue's bound), back-face culling against single-sided GL, and the evidence
region against the previous pipeline (pyrender depth into the same box test).
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import vistest  # noqa: F401  (sets PYOPENGL_PLATFORM)
from vistest.synthetic import random_mesh_scene
from vistest.errors import InputError
from vistest.geometry import box_corners
from vistest.scene import Scene, SceneError
from vistest.visibility import raster
from vistest.visibility.render import MeshDepthRenderer, MeshSegRenderer
from vistest.visibility.table import (
    Visibility, compute_visibility, frame_cameras, load_scene_mesh, occlusion_inputs, read_mesh_objects)
from vistest.visibility.zbuffer import face_objects

WS, HS = 160, 120


@pytest.fixture(scope="module", params=[0, pytest.param(1, marks=pytest.mark.slow)])  # seed 1: the slow tier
def meshed(request, tmp_path_factory):
    return random_mesh_scene(tmp_path_factory.mktemp(f"mesh{request.param}"), seed=request.param)


def _render(scene, cull_back=False):
    mesh = load_scene_mesh(scene)
    w2c, kin = frame_cameras(scene, scene.frames)
    valid = np.array([f.valid for f in scene.frames])
    depth, counts = mesh.render(w2c, kin, valid, scene.image_size, (WS, HS), 1e-3, cull_back)
    return mesh, depth, counts, valid


def test_depth_and_object_ids_per_sample_match_pyrender(meshed):
    scene = meshed
    mesh, depth, counts, valid = _render(scene)
    k = scene.camera.scaled(WS / scene.image_size[0], HS / scene.image_size[1])
    shown = [i for i, f in enumerate(scene.frames) if f.valid]
    dref = MeshDepthRenderer(scene.path(scene.mesh), WS, HS, near=1e-3)  # one GL context at a time
    try:
        dmaps = {i: dref.render(scene.frames[i].camera_to_world, k).ravel() for i in shown}
    finally:
        dref.close()
    sref = MeshSegRenderer(mesh.verts, mesh.faces, mesh.face_obj, WS, HS, near=1e-3)
    try:
        labels = {i: sref.labels(scene.frames[i].camera_to_world, k).ravel() for i in shown}
    finally:
        sref.close()
    for i, f in enumerate(scene.frames):
        if not f.valid:
            assert not depth[i].any() and not counts[i].any()
            continue
        same = np.abs(depth[i] - dmaps[i]) < 1e-3 * np.maximum(dmaps[i], 1.0)
        assert same.mean() >= 0.985, f"frame {i}: depth agrees on {same.mean():.4f} of the samples"
        # per-object sample counts equal the reference's up to boundary samples
        lab = labels[i]
        ref_counts = np.bincount(lab[lab >= 0], minlength=len(scene.objects))
        assert np.abs(counts[i] - ref_counts).max() <= 0.01 * WS * HS, f"frame {i}"


def test_instance_visible_within_half_a_percent_of_a_native_pyrender_instance_render(meshed, capfd):
    scene = meshed
    vis = compute_visibility(scene)
    err = capfd.readouterr().err
    absent = scene.objects[-1].id
    assert vis.params["occlusion"] == "mesh" and vis.params["visible"] == "instance"
    assert vis.params["box_fallback"] == [absent] and "absent from the reconstruction" in err and absent in err
    mesh = load_scene_mesh(scene)
    w, h = scene.image_size
    ref = MeshSegRenderer(mesh.verts, mesh.faces, mesh.face_obj, w, h, near=1e-3)
    errs, shown = [], 0
    try:
        for i, f in enumerate(scene.frames):
            if not f.valid:
                assert np.isnan(vis.visible[i]).all() and np.isnan(vis.evidence[i]).all()
                continue
            lab = ref.labels(f.camera_to_world, scene.camera)
            share = np.bincount(lab[lab >= 0].ravel(), minlength=len(scene.objects)) / lab.size
            errs.append(np.abs(vis.visible[i, :-1] - share[:-1]).max())
            shown += int((share[:-1] > 0.01).sum())
            assert share[-1] == 0  # the absent object has no pixel: its visible share is the box bound
            np.testing.assert_array_equal(vis.visible[i, -1], vis.evidence[i, -1])
    finally:
        ref.close()
    print(f"instance visible vs pyrender (native {w}x{h}): max error {max(errs) * 100:.3f}% of the image")
    assert shown >= 20 and max(errs) <= 0.005
    assert vis.visible[2, 0] == pytest.approx(1.0, abs=0.005)  # the camera inside object 0 sees its inner walls
    # what counts as seen is always in the region dummies remove, itself within the box silhouette
    ok = np.isfinite(vis.visible)
    assert (vis.visible[ok] <= vis.evidence[ok] + 1e-12).all() and (vis.evidence[ok] <= vis.projected[ok] + 1e-12).all()
    assert (vis.evidence[ok] - vis.visible[ok]).max() > 0.01  # the box bound is looser: not vacuous


def test_evidence_is_the_previous_mesh_rule_on_pyrender_depth(meshed):
    """The evidence region (box silhouette minus what the mesh hides by more than depth_tol in
    front of the box's entry) from the z-buffer's depth equals the same rule on pyrender's depth."""
    scene = meshed
    vis = compute_visibility(scene)
    w, h = scene.image_size
    k = scene.camera.scaled(WS / w, HS / h)
    dref = MeshDepthRenderer(scene.path(scene.mesh), WS, HS, near=1e-3)
    try:
        depth = np.stack([dref.render(f.camera_to_world, k).ravel() if f.valid else np.zeros(WS * HS)
                          for f in scene.frames])
    finally:
        dref.close()
    centers, sizes, rots = scene.world_boxes()
    w2c, kin = frame_cameras(scene, scene.frames)
    nf, no = len(scene.frames), len(scene.objects)
    out = [np.empty((nf, no)), np.empty((nf, no)), np.empty((nf, no, 4))]
    raster.visibility_kernel(w2c, kin, vis.valid, np.zeros(nf, np.int64), box_corners(centers, sizes, rots)[None],
                             rots[None], w, h, WS, HS, 1e-3, True, depth, 0.05, np.zeros((0, no, no), bool), *out)
    ok = vis.valid
    diff = np.abs(vis.evidence[ok] - out[1][ok]).max()
    print(f"evidence: z-buffer vs pyrender depth, max difference {diff * 100:.3f}% of the image")
    assert diff <= 0.005
    np.testing.assert_allclose(vis.projected[ok], out[0][ok], atol=1e-12)


def test_back_face_culling_matches_single_sided_gl(meshed):
    scene = meshed
    mesh, _, counts, valid = _render(scene, cull_back=True)
    k = scene.camera.scaled(WS / scene.image_size[0], HS / scene.image_size[1])
    ref = MeshSegRenderer(mesh.verts, mesh.faces, mesh.face_obj, WS, HS, near=1e-3, two_sided=False)
    try:
        for i, f in enumerate(scene.frames):
            if f.valid:
                lab = ref.labels(f.camera_to_world, k).ravel()
                ref_counts = np.bincount(lab[lab >= 0], minlength=len(scene.objects))
                assert np.abs(counts[i] - ref_counts).max() <= 0.01 * WS * HS, f"frame {i}"
    finally:
        ref.close()
    assert counts[2, 0] == 0  # inside a closed, outward-wound object, culling leaves none of it
    vis = compute_visibility(scene, cull_back=True)
    assert vis.params["cull_back"] is True and vis.visible[2, 0] == 0.0


def test_face_objects_take_the_majority_of_their_vertices():
    faces = np.array([[0, 1, 2], [1, 2, 3], [0, 3, 4]])
    vobj = np.array([5, 5, 7, 7, -1])
    np.testing.assert_array_equal(face_objects(faces, vobj), [5, 7, 5])


def test_mesh_objects_file_is_checked_and_keyed(tmp_path):
    scene = random_mesh_scene(tmp_path, seed=3, num_frames=3)
    path = scene.path(scene.mesh_objects)
    assert scene.to_dict()["mesh_objects"] == "mesh_objects.txt"
    assert path in occlusion_inputs(scene, "mesh")  # a cached table is recomputed when the labels change
    lines = path.read_text().splitlines()
    vobj = read_mesh_objects(path, len(lines), scene.object_ids)
    assert (vobj >= 0).any() and (vobj == -1).any()
    path.write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(InputError, match=r"mesh_objects\.txt: mesh_objects: .* lines, expected one per mesh vertex"):
        compute_visibility(scene, occlusion="mesh")
    path.write_text("\n".join(["nobody"] * len(lines)) + "\n")  # ids of no listed object: surfaces of nobody
    assert (read_mesh_objects(path, len(lines), scene.object_ids) == -1).all()
    doc = json.loads(scene.path("scene.json").read_text())
    doc["mesh_objects"] = "missing.txt"
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(SceneError, match=r"bad\.json: mesh_objects: file not found: .*missing\.txt"):
        Scene.load(tmp_path / "bad.json")
    doc.pop("mesh")  # the ids of a mesh the scene no longer names are ignored
    (tmp_path / "no-mesh.json").write_text(json.dumps(doc))
    assert Scene.load(tmp_path / "no-mesh.json").mesh_objects is None


def test_a_table_without_evidence_reads_its_visible_share(tmp_path):
    """Files written before ``evidence`` existed: their visible share was the box bound."""
    scene = random_mesh_scene(tmp_path, seed=4, num_frames=4)
    vis = compute_visibility(scene, occlusion="boxes")
    assert vis.params["visible"] == "box" and vis.evidence is vis.visible
    vis.save(tmp_path / "v.npz")
    with np.load(tmp_path / "v.npz") as z:
        arrays = {k: z[k] for k in z.files if k != "evidence"}
    np.savez(tmp_path / "old.npz", **arrays)
    old = Visibility.load(tmp_path / "old.npz")
    np.testing.assert_array_equal(old.evidence, old.visible)
    again = Visibility.load(tmp_path / "v.npz")
    np.testing.assert_array_equal(again.evidence, vis.evidence)


def _edge_faces(faces: np.ndarray) -> np.ndarray:
    """How many faces each distinct edge of ``faces`` has."""
    e = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), 1)
    return np.unique(e, axis=0, return_counts=True)[1]


@pytest.mark.slow  # two triangulations of 1,200 points (the real vertices: tests/test_real_scannet.py, slow too)
def test_stand_in_surface_tiles_a_sampled_plane_once():
    """``surface_from_points`` on a jittered grid of a tilted plane (nearly co-circular
    quadruples: the hard case for local triangulations): the reference is the plane itself.
    Every test point inside the grid (away from its border) lies in exactly one triangle (no
    overlapping fans, no holes: the previous stand-in covered 88% of them two or three times);
    about two triangles per point, every edge with one or two faces."""
    from vistest.synthetic import surface_from_points

    rng = np.random.default_rng(3)
    g = np.stack(np.meshgrid(np.arange(40.0), np.arange(30.0)), -1).reshape(-1, 2) * 0.05
    uv = g + rng.uniform(-0.015, 0.015, g.shape)
    e1, e2 = np.array([1.0, 0.0, 0.3]), np.array([0.0, 1.0, -0.2])
    pts = uv[:, :1] * e1 + uv[:, 1:] * e2 + np.array([1.0, -2.0, 0.5])
    faces = surface_from_points(pts)
    assert np.array_equal(faces, surface_from_points(pts))  # deterministic
    assert 1.85 * len(pts) <= len(faces) <= 2.0 * len(pts)
    assert _edge_faces(faces).max() <= 2
    a, b, c = (uv[faces[:, k]][:, None] for k in range(3))
    probe = rng.uniform([0.1, 0.1], [1.85, 1.35], (4000, 2))[None]

    def side(p, q):
        return ((q[..., 0] - p[..., 0]) * (probe[..., 1] - p[..., 1])
                - (q[..., 1] - p[..., 1]) * (probe[..., 0] - p[..., 0]))

    d = np.stack([side(a, b), side(b, c), side(c, a)])
    inside = (d >= 0).all(0) | (d <= 0).all(0)
    assert (inside.sum(0) == 1).all(), np.bincount(inside.sum(0))


def test_face_blocks_are_self_contained_runs_with_spheres_that_hold_their_faces():
    """:func:`face_blocks` on a random soup (a face count that is not a multiple of the block
    size): the sorted faces are the same triangles over vertex copies, consecutive runs cover every
    face once, each run's faces use only its own contiguous vertex range (each vertex copied once
    per run, unused vertices dropped), and each run's sphere holds every corner of its faces
    (checked corner by corner)."""
    from vistest.visibility.zbuffer import face_blocks

    rng = np.random.default_rng(5)
    verts = rng.uniform(-3, 3, (700, 3))
    faces = rng.integers(0, 650, (1000, 3))  # vertices 650.. unused: dropped
    vorder, sorted_faces, forder, blocks = face_blocks(verts, faces, size=64)
    assert sorted(forder.tolist()) == list(range(len(faces)))
    np.testing.assert_array_equal(vorder[sorted_faces], faces[forder])
    assert set(vorder.tolist()) == set(faces.ravel().tolist())
    assert blocks[0, 0] == 0 and blocks[-1, 1] == len(faces) and (blocks[1:, 0] == blocks[:-1, 1]).all()
    assert blocks[0, 2] == 0 and blocks[-1, 3] == len(vorder) and (blocks[1:, 2] == blocks[:-1, 3]).all()
    new_verts = verts[vorder]
    for b in blocks:
        run = sorted_faces[int(b[0]):int(b[1])]
        assert run.min() >= b[2] and run.max() < b[3]
        copies = vorder[int(b[2]):int(b[3])]
        assert len(set(copies.tolist())) == len(copies) == len(set(run.ravel().tolist()))
        corners = new_verts[run].reshape(-1, 3)
        assert (np.linalg.norm(corners - b[4:7], axis=1) <= b[7]).all()
