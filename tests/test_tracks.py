"""Moving objects: tracks in the scene format, interpolation, and visibility with moving boxes
(against pyrender, which draws each frame's boxes at their interpolated poses)."""
import json

import numpy as np
import pytest

from vistest.geometry import rot_x, rot_z, rotation_slerp, random_rotation
from vistest.scene import Scene, SceneError
from vistest.synthetic import random_box_scene
from vistest.visibility.table import compute_visibility, containment


def tracked_doc(track, extra=None):
    doc = random_box_scene(seed=0, num_frames=12, num_boxes=2).to_dict()
    doc["objects"].append({"id": "cart", "label": "cart", "size": [0.8, 0.5, 0.9], "track": track, **(extra or {})})
    return doc


def key(frame, center, rot=np.eye(3)):
    return {"frame": frame, "center": list(center), "rotation": np.asarray(rot).tolist()}


def test_pose_between_keys_is_linear_and_geodesic_and_absent_outside():
    scene = Scene.from_dict(tracked_doc([key(2, [0, 0, 0]), key(6, [4, 0, 0], rot_z(90)), key(8, [4, 2, 0])]))
    cart = scene.objects[-1]
    assert scene.dynamic and cart.track is not None and scene.objects[0].track is None
    assert cart.pose_at(1) is None and cart.pose_at(9) is None  # absent outside its keyed span
    c, r = cart.pose_at(3)  # a quarter of the way from key 2 to key 6
    np.testing.assert_allclose(c, [1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(r, rot_z(22.5), atol=1e-12)  # the geodesic: a quarter of the 90 degree turn
    c, r = cart.pose_at(6)
    np.testing.assert_array_equal(c, [4, 0, 0])
    np.testing.assert_allclose(r, rot_z(90), atol=1e-15)
    c, r = cart.pose_at(7)  # from rot_z(90) back to identity, halfway
    np.testing.assert_allclose(c, [4, 1, 0], atol=1e-12)
    np.testing.assert_allclose(r, rot_z(45), atol=1e-12)
    np.testing.assert_array_equal(cart.center, [0, 0, 0])  # a tracked object's static pose: its first key
    # static objects: the same pose at every frame
    np.testing.assert_array_equal(scene.objects[0].pose_at(1000)[0], scene.objects[0].center)
    # boxes_to_world applies to tracks
    doc = tracked_doc([key(0, [1, 0, 0]), key(4, [1, 4, 0])])
    doc["boxes_to_world"] = [[0, -1, 0, 5], [1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
    c, _, r, present = Scene.from_dict(doc).world_boxes_at(2)
    assert present.all()
    np.testing.assert_allclose(c[-1], [5 - 2, 1, 0], atol=1e-12)
    np.testing.assert_allclose(r[-1], rot_z(90), atol=1e-12)
    c, _, r, present = Scene.from_dict(doc).world_boxes_at(5)
    assert not present[-1] and np.isnan(c[-1]).all() and present[:-1].all()


def test_slerp_matches_an_independent_axis_angle_walk():
    rng = np.random.default_rng(3)
    for _ in range(50):
        r0, r1 = random_rotation(rng), random_rotation(rng)
        rel = r0.T @ r1
        angle = np.arccos(np.clip((np.trace(rel) - 1) / 2, -1, 1))
        if angle > 3.1:  # two geodesics half a turn apart
            continue
        axis = np.array([rel[2, 1] - rel[1, 2], rel[0, 2] - rel[2, 0], rel[1, 0] - rel[0, 1]]) / (2 * np.sin(angle))
        for t in (0.0, 0.3, 0.5, 1.0):
            a = t * angle  # Rodrigues
            k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
            expect = r0 @ (np.eye(3) + np.sin(a) * k + (1 - np.cos(a)) * k @ k)
            np.testing.assert_allclose(rotation_slerp(r0, r1, t), expect, atol=1e-9)


def test_round_trip_and_save(tmp_path):
    doc = tracked_doc([key(0, [0, 0, 0]), key(5, [1, 1, 0], rot_x(30))])
    scene = Scene.from_dict(doc)
    again = Scene.from_dict(json.loads(json.dumps(scene.to_dict())))
    assert again.objects[-1].track is not None and len(again.objects[-1].track) == 2
    assert "center" not in again.to_dict()["objects"][-1]
    np.testing.assert_array_equal(again.objects[-1].pose_at(3)[0], scene.objects[-1].pose_at(3)[0])


@pytest.mark.parametrize("track, extra, field, expect", [
    ([], None, "objects[2].track", "non-empty list"),
    ("x", None, "objects[2].track", "non-empty list"),
    ([key(0, [0, 0, 0]), key(0, [1, 0, 0])], None, "objects[2].track[1].frame", "strictly increasing"),
    ([key(3, [0, 0, 0]), key(1, [1, 0, 0])], None, "objects[2].track[1].frame", "strictly increasing"),
    ([{"frame": -1, "center": [0, 0, 0], "rotation": np.eye(3).tolist()}], None, "objects[2].track[0].frame",
     "decoded frame number"),
    ([{"frame": 1.5, "center": [0, 0, 0], "rotation": np.eye(3).tolist()}], None, "objects[2].track[0].frame",
     "decoded frame number"),
    ([{"frame": 0, "rotation": np.eye(3).tolist()}], None, "objects[2].track[0].center", "missing"),
    ([key(0, [0, 0, 0], np.diag([1, 1, -1]))], None, "objects[2].track[0].rotation", "det"),
    ([key(0, [0, 0, "a"])], None, "objects[2].track[0].center[2]", "expected a number"),
    ([key(0, [0, 0, 0])], {"center": [0, 0, 0]}, "objects[2].center", "either center and rotation, or track"),
])
def test_bad_tracks_are_refused_naming_the_field(track, extra, field, expect):
    with pytest.raises(SceneError) as e:
        Scene.from_dict(tracked_doc(track, extra), source="s.json")
    assert f"s.json: {field}:" in str(e.value) and expect in str(e.value)


# ---------------------------------------------------------------------------------------
# visibility with moving boxes
# ---------------------------------------------------------------------------------------
def random_dynamic_scene(seed, num_frames=24, num_boxes=16, image_size=(320, 240)) -> Scene:
    """random_box_scene with half its boxes moving: keys every 1-6 frames over a random span
    (absent before and after), centres wandering up to ~0.5 m per key, random rotations; one
    box moves into and out of another (containment changes with time)."""
    rng = np.random.default_rng(seed)
    doc = random_box_scene(seed=seed, num_frames=num_frames, num_boxes=num_boxes, image_size=image_size).to_dict()
    for n, o in enumerate(doc["objects"]):
        if n % 2 == 0 or n == 1:
            continue
        start, end = int(rng.integers(0, 6)), int(rng.integers(num_frames - 6, num_frames))
        frames = [start]
        while frames[-1] < end:
            frames.append(min(end, frames[-1] + int(rng.integers(1, 7))))
        c = np.array(o.pop("center"))
        o.pop("rotation")
        track = []
        for f in frames:
            c = c + rng.uniform(-0.5, 0.5, 3)
            track.append({"frame": f, "center": c.tolist(), "rotation": random_rotation(rng).tolist()})
        o["track"] = track
    # object 1 moves through object 0's box (a small box, axis-aligned with it)
    big = doc["objects"][0]
    r0 = np.array(big["rotation"])
    mid = np.array(big["center"])
    doc["objects"][1] = {"id": "1", "label": "inner", "size": (np.array(big["size"]) * 0.3).tolist(),
                         "track": [key(0, mid - r0[:, 0] * 2, r0), key(num_frames - 1, mid + r0[:, 0] * 2, r0)]}
    return Scene.from_dict(doc)


def frame_reference(scene, frame, boxes_rule):
    """pyrender's visible counts (O,) and per-box silhouette counts (O,) of one frame, the boxes
    at their interpolated poses (absent ones left out), ``boxes_rule``: containment as the engine's."""
    from vistest.visibility.render import BoxSegRenderer

    c, s, r, present = scene.world_boxes_at(frame.index)
    idx = np.flatnonzero(present)
    w, h = scene.image_size
    k = scene.intrinsics_for(frame)
    ref = BoxSegRenderer(c[idx], s[idx], r[idx], w, h, near=1e-3)
    try:
        contains = containment(c[idx], s[idx], r[idx]) if boxes_rule else None
        counts = ref.counts(frame.camera_to_world, k, contains)
        sil = np.array([(ref.labels(frame.camera_to_world, k, only=j) > 0).sum() for j in range(len(idx))])
    finally:
        ref.close()
    vis, proj = np.zeros(len(scene.objects)), np.zeros(len(scene.objects))
    vis[idx], proj[idx] = counts, sil
    return vis / (w * h), proj / (w * h), present


@pytest.mark.parametrize("seed, step", [(1, 6), pytest.param(1, 1, marks=pytest.mark.slow),
                                        pytest.param(2, 1, marks=pytest.mark.slow)])
def test_moving_boxes_agree_with_pyrender(seed, step):
    """Every ``step``-th frame against pyrender (the fast tier every 6th frame, the slow tier every frame)."""
    scene = random_dynamic_scene(seed)
    boxes = compute_visibility(scene, occlusion="boxes")
    none = compute_visibility(scene, occlusion="none")
    assert boxes.params["tracked"] == [o.id for o in scene.objects if o.track is not None]
    ev, ep, absent = [], [], 0
    for fi, f in enumerate(scene.frames):
        if not f.valid:
            assert np.isnan(boxes.visible[fi]).all()
            continue
        if fi % step:
            continue
        vis, proj, present = frame_reference(scene, f, True)
        ev.append(np.abs(vis - boxes.visible[fi]))
        ep.append(np.abs(proj - boxes.projected[fi]))
        np.testing.assert_array_equal(none.projected[fi], boxes.projected[fi])
        for v in (boxes, none):  # absent: nothing at all
            assert (v.projected[fi, ~present] == 0).all() and (v.visible[fi, ~present] == 0).all()
            assert (v.evidence[fi, ~present] == 0).all() and np.isnan(v.bbox[fi, ~present]).all()
        absent += int((~present).sum())
    ev, ep = np.concatenate(ev), np.concatenate(ep)
    moving = [i for i, o in enumerate(scene.objects) if o.track is not None]
    assert absent > 5 and (boxes.visible[:, moving] > 0.005).sum() > 20  # not vacuous
    assert ev.max() <= 0.005, f"visible: max error {ev.max():.4f} of image area"
    assert ep.max() <= 0.005, f"projected: max error {ep.max():.4f} of image area"


def test_a_box_moving_through_another_is_hidden_only_while_outside_it():
    """Containment is decided per frame: object 1 passes through object 0's box; while inside it,
    0 does not hide it (boxes rule), before and after it is a separate solid."""
    scene = random_dynamic_scene(1)
    inside = []
    for f in scene.frames:
        c, s, r, present = scene.world_boxes_at(f.index)
        inside.append(bool(containment(c[:2], s[:2], r[:2])[0, 1]))
    assert any(inside) and not all(inside)


def moving_in_mesh_room(tmp_path, seed):
    """random_mesh_scene (a static mesh with per-vertex ids) plus four moving boxes that are not in
    the mesh, and a depth image per frame: the mesh's depth (pyrender), as a depth sensor that
    misses the moving boxes would see it (the boxes are then tested against the static surfaces)."""
    import cv2

    from vistest.synthetic import random_mesh_scene
    from vistest.visibility.render import MeshDepthRenderer

    base = random_mesh_scene(tmp_path, seed=seed, num_frames=20)
    rng = np.random.default_rng(seed)
    doc = json.loads((tmp_path / "scene.json").read_text())
    nf = len(doc["frames"])
    for m in range(4):
        a, b = rng.uniform([-2.2, -2.2, 0.3], [2.2, 2.2, 1.5], (2, 3))
        start, end = int(rng.integers(0, 5)), int(rng.integers(nf - 5, nf))
        doc["objects"].append({"id": f"m{m}", "label": "mover", "size": rng.uniform(0.3, 0.9, 3).tolist(),
                               "track": [key(start, a, random_rotation(rng)), key(end, b, random_rotation(rng))]})
    # object o1 (in the mesh, labelled) moves away from where the scan saw it: its vertices are static surface
    o1 = doc["objects"][1]
    o1["track"] = [key(0, o1.pop("center"), o1.pop("rotation")), key(nf - 1, rng.uniform([-2, -2, 0.3], [2, 2, 1.5]))]
    w, h = base.image_size
    ref = MeshDepthRenderer(tmp_path / "mesh.ply", w, h, near=1e-3)
    (tmp_path / "depth").mkdir()
    try:
        for f in base.frames:
            if f.valid:
                d = ref.render(f.camera_to_world, base.camera)
                cv2.imwrite(str(tmp_path / "depth" / f"{f.index}.png"), np.round(d * 1000).astype(np.uint16))
                doc["frames"][f.index]["depth"] = f"depth/{f.index}.png"
    finally:
        ref.close()
    doc["depth"] = {"scale": 1000.0}
    (tmp_path / "scene.json").write_text(json.dumps(doc))
    return Scene.load(tmp_path / "scene.json")


class EntryReference:
    """pyrender: the static mesh's z-depth, and per box its silhouette and entry depth (one-sided
    outward faces: the surface where rays enter it; 0 where clipped away at the near plane)."""

    def __init__(self, mesh_path, w, h):
        import pyrender

        from vistest.visibility.render import MeshDepthRenderer

        self.pyrender = pyrender
        self.mesh = MeshDepthRenderer(mesh_path, w, h, near=1e-3)
        self.w, self.h = w, h

    def box(self, c2w, k, center, size, rot):
        """(silhouette bool (H, W), entry z-depth (H, W), 0 = none)."""
        import pyrender
        import trimesh

        from vistest.visibility.render import box_mesh, gl_camera, gl_pose

        out = box_mesh(center, size, rot)
        inv = out.copy()
        inv.invert()
        scene = pyrender.Scene()
        one = scene.add(pyrender.Mesh.from_trimesh(out, smooth=False))
        both = scene.add(pyrender.Mesh.from_trimesh(trimesh.util.concatenate([out, inv]), smooth=False))
        scene.add(gl_camera(k, 1e-3), pose=gl_pose(c2w))
        flags = pyrender.RenderFlags.DEPTH_ONLY | pyrender.RenderFlags.SEG
        r = self.mesh.renderer
        both.mesh.is_visible = False
        entry = np.asarray(r.render(scene, flags=flags, seg_node_map={one: (255, 255, 255)}), float)
        both.mesh.is_visible, one.mesh.is_visible = True, False
        sil = np.asarray(r.render(scene, flags=flags, seg_node_map={both: (255, 255, 255)}), float) > 0
        return sil, entry

    def close(self):
        self.mesh.close()


@pytest.mark.slow  # pyrender per frame for two modes (the depth mode against pyrender: tests/test_demo_dynamic.py)
@pytest.mark.parametrize("seed", [4])
def test_moving_boxes_against_static_mesh_and_depth_agree_with_pyrender(tmp_path, seed, capfd):
    """Evidence of moving boxes in ``mesh`` and ``depth`` occlusion: a box sample is hidden where the
    static surface is nearer than the box's entry surface by more than depth_tol; pyrender draws
    the mesh's depth and each box alone at its interpolated pose. Moving objects keep
    ``visible = evidence`` (not in the static mesh) and raise no missing-from-mesh warning."""
    from vistest.visibility.table import DEFAULT_DEPTH_TOL

    scene = moving_in_mesh_room(tmp_path, seed)
    moving = [i for i, o in enumerate(scene.objects) if o.track is not None]
    mesh = compute_visibility(scene, occlusion="mesh")
    depth = compute_visibility(scene, occlusion="depth")
    assert mesh.params["tracked"] == ["o1", "m0", "m1", "m2", "m3"] and mesh.params["visible"] == "instance"
    assert mesh.params["box_fallback"] == ["o11"]  # the static object missing from the mesh; no moving one
    assert "o1," not in capfd.readouterr().err
    np.testing.assert_array_equal(mesh.visible[:, moving], mesh.evidence[:, moving])
    w, h = scene.image_size
    ref = EntryReference(scene.path(scene.mesh), w, h)
    errs, hidden = [], 0
    try:
        for fi, f in enumerate(scene.frames):
            if not f.valid:
                continue
            d = ref.mesh.render(f.camera_to_world, scene.camera)
            c, s, r, present = scene.world_boxes_at(f.index)
            for o in moving:
                if not present[o]:
                    for v in (mesh, depth):
                        assert v.evidence[fi, o] == 0 and v.projected[fi, o] == 0
                    continue
                sil, entry = ref.box(f.camera_to_world, scene.camera, c[o], s[o], r[o])
                seen = sil & ((entry == 0) | (d == 0) | (d + DEFAULT_DEPTH_TOL >= entry))
                hidden += int((sil & ~seen).sum() > 0.01 * w * h)
                for v in (mesh, depth):
                    errs.append(abs(seen.mean() - v.evidence[fi, o]))
    finally:
        ref.close()
    assert hidden >= 3 and (mesh.evidence[:, moving] > 0.005).sum() > 10  # occlusion happens: not vacuous
    assert max(errs) <= 0.005, f"evidence: max error {max(errs):.4f} of image area"


def test_static_templates_leave_out_moving_objects_and_their_labels():
    from vistest.generate.facts import SceneFacts

    doc = tracked_doc([key(0, [0, 0, 0]), key(5, [1, 1, 0])])
    doc["objects"].append({"id": "cart2", "label": "cart", "center": [1, 0, 0], "size": [1, 1, 1],
                           "rotation": np.eye(3).tolist()})
    scene = Scene.from_dict(doc)
    facts = SceneFacts(scene, compute_visibility(scene, occlusion="none"), 0.0)
    assert facts.moving_labels == {"cart"}
    assert "cart" not in facts.by_label and set(facts.by_id) == {o.id for o in scene.objects[:2]}


def test_per_frame_containment_is_every_present_pair_decided_afresh():
    """box_geometry decides static pairs once and tests only the boxes near a moving one per frame:
    the same as deciding every present pair of every frame."""
    from vistest.visibility.table import box_geometry

    scene = random_dynamic_scene(2, num_frames=16, num_boxes=30)
    geom, corners, axes, contains = box_geometry(scene, scene.frames, True)
    assert contains.shape == (16, 30, 30) and contains.any()
    for g, f in enumerate(scene.frames):
        c, s, r, present = scene.world_boxes_at(f.index)
        idx = np.flatnonzero(present)
        full = np.zeros((30, 30), bool)
        full[np.ix_(idx, idx)] = containment(c[idx], s[idx], r[idx])
        np.testing.assert_array_equal(contains[g], full)
        assert np.isnan(corners[g, ~present]).all() and not np.isnan(corners[g, present]).any()
