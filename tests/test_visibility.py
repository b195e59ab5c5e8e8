"""Visibility engine: analytic cases, the pyrender reference, occlusion modes, I/O, caching."""
import json
import os
import subprocess
import sys

import cv2
import numpy as np
import pytest
import trimesh

from vistest.errors import InputError
from vistest.scene import Scene
from vistest.synthetic import random_box_scene
from vistest.geometry import look_at
from vistest.visibility.table import Visibility, compute_visibility, containment
from conftest import IDENTITY, make_scene, scene_doc

W, H = 640, 480


def one(scene, **kw):
    v = compute_visibility(scene, **kw)
    return v.projected[0], v.visible[0], v.bbox[0]


def test_box_exactly_filling_one_quadrant():
    # fx = 500, principal point at the image centre: the top-left quadrant is
    # x/z in [-320/500, 0], y/z in [-240/500, 0]; a box whose front face at z = 2 spans it.
    s = make_scene([([-0.64, -0.48, 2.5], [1.28, 0.96, 1.0])], [IDENTITY])
    p, v, b = one(s)
    assert p[0] == pytest.approx(0.25, abs=1e-12)
    assert v[0] == pytest.approx(0.25, abs=1e-12)
    np.testing.assert_array_equal(b[0], [0, 0, 320, 240])


def test_box_straddling_the_camera_plane_is_clipped_not_dropped():
    # box x in [0.5, 1.5], z in [-1, 1]: its part with z > 0 projects to u >= 500*0.5/1 + 319.5
    s = make_scene([([1.0, 0.0, 0.0], [1.0, 1.0, 2.0])], [IDENTITY])
    p, v, b = one(s)
    assert p[0] == pytest.approx((639.5 - 569.5) * 480 / (W * H), abs=1e-9)
    assert v[0] == pytest.approx(p[0], abs=1e-12)
    np.testing.assert_array_equal(b[0], [570, 0, 640, 480])
    # mirrored (behind-camera) geometry would cover the left side too: it must not
    assert b[0][0] > 320


def test_camera_inside_a_box_sees_its_walls_and_what_is_inside():
    s = make_scene([([0, 0, 0], [1, 1, 1]), ([0, 0, 0.3], [0.1, 0.1, 0.1])], [IDENTITY])
    p, v, b = one(s)
    assert p[0] == 1.0
    inner = (200 * 200) / (W * H)  # front face of box 1 at z = 0.25: half-width 0.05/0.25*500 px
    assert p[1] == pytest.approx(inner, abs=1e-12)
    assert v[1] == pytest.approx(inner, abs=1e-12)
    assert v[0] == pytest.approx(1.0 - inner, abs=0.005)
    np.testing.assert_array_equal(b[0], [0, 0, W, H])
    np.testing.assert_array_equal(b[1], [220, 140, 420, 340])


def test_box_fully_behind_the_camera_is_invisible():
    s = make_scene([([0, 0, -3], [1, 1, 1]), ([0.3, 0.2, -0.6], [0.5, 0.5, 1.0])], [IDENTITY])
    p, v, b = one(s)
    assert (p == 0).all() and (v == 0).all() and np.isnan(b).all()


def test_off_centre_principal_point_and_partial_overlap_with_the_image():
    cam = {"fx": 400.0, "fy": 300.0, "cx": 100.0, "cy": 50.0}
    # front face z = 2: x in [0, 1] -> u in [100, 300]; y in [0, 0.5] -> v in [50, 125]
    # second box: x in [-1, 0] at z = 2 -> u in [-100, 100], clipped at u = -0.5
    s = make_scene([([0.5, 0.25, 2.5], [1.0, 0.5, 1.0]), ([-0.5, 0.25, 2.5], [1.0, 0.5, 1.0])], [IDENTITY], camera=cam)
    p, v, b = one(s)
    assert p[0] == pytest.approx(200 * 75 / (W * H), abs=1e-12)
    assert p[1] == pytest.approx(100.5 * 75 / (W * H), abs=1e-12)
    np.testing.assert_array_equal(b[0], [100, 50, 301, 126])
    np.testing.assert_array_equal(b[1], [0, 50, 101, 126])
    np.testing.assert_allclose(v, p, atol=1e-12)


def test_occluded_box_loses_exactly_the_covered_part():
    # near box covers the left half of the far box's silhouette (vertical edge at u = 319.5)
    s = make_scene([([0.0, 0.0, 4.5], [2.0, 1.0, 1.0]), ([-0.5, 0.0, 2.0], [1.0, 2.0, 0.5])], [IDENTITY])
    p, v, _ = one(s)
    far_face = (2.0 / 4.0 * 500) * (1.0 / 4.0 * 500) / (W * H)
    assert p[0] == pytest.approx(far_face, abs=1e-12)
    assert v[0] == pytest.approx(far_face / 2, abs=0.002)
    assert v[1] == pytest.approx(p[1], abs=1e-12)
    p1, v1, _ = one(s, occlusion="none")
    np.testing.assert_array_equal(v1, p1)


def test_invalid_frames_are_nan_not_zero():
    s = make_scene([([0, 0, 3], [1, 1, 1])], [IDENTITY, None, IDENTITY])
    v = compute_visibility(s)
    assert np.isnan(v.projected[1]).all() and np.isnan(v.visible[1]).all() and np.isnan(v.bbox[1]).all()
    assert v.projected[0, 0] > 0 and v.projected[2, 0] == v.projected[0, 0]
    assert v.valid.tolist() == [True, False, True]


def test_boxes_to_world_is_applied():
    # box stored in an "aligned" world rotated 90 deg about z; poses in the raw world
    a = np.eye(4)
    a[:3, :3] = [[0, -1, 0], [1, 0, 0], [0, 0, 1]]
    doc = scene_doc([([3.0, 0.0, 0.0], [1, 1, 1])], [IDENTITY], boxes_to_world=np.linalg.inv(a).tolist())
    s = Scene.from_dict(doc)
    c, _, _ = s.world_boxes()
    np.testing.assert_allclose(c[0], [0, -3, 0], atol=1e-12)
    doc["boxes_to_world"] = a.tolist()  # now in front of the camera: (0, 3, 0)? no: (0, 3, 0) is below
    pose = look_at([0, 0, 0], [0, 3, 0], up=(0, 0, 1))
    doc["frames"][0]["camera_to_world"] = pose.tolist()
    v = compute_visibility(Scene.from_dict(doc))
    assert v.projected[0, 0] > 0.05


def rel_errors(scene, vis, ref, check_projected=True):
    w, h = scene.image_size
    contains = containment(*scene.world_boxes())
    ev, ep = [], []
    for fi, f in enumerate(scene.frames):
        if not f.valid:
            assert np.isnan(vis.visible[fi]).all() and np.isnan(vis.projected[fi]).all()
            continue
        k = scene.intrinsics_for(f)
        ev.append(np.abs(ref.counts(f.camera_to_world, k, contains) / (w * h) - vis.visible[fi]))
        if check_projected:
            for o in range(len(scene.objects)):
                lab = ref.labels(f.camera_to_world, k, only=o)
                ep.append(abs((lab > 0).mean() - vis.projected[fi, o]))
    return np.concatenate(ev), np.array(ep)


@pytest.mark.slow  # 1,600 pyrender renders each; fast tier: test_nested_boxes_agree_with_pyrender, test_render.py
@pytest.mark.parametrize("seed", [1, 2])
def test_agrees_with_pyrender_on_random_scenes(seed):
    from vistest.visibility.render import BoxSegRenderer

    scene = random_box_scene(seed=seed, num_frames=40, num_boxes=40, image_size=(320, 240))
    assert not all(f.valid for f in scene.frames)
    ref = BoxSegRenderer(*scene.world_boxes(), 320, 240, near=1e-3)
    try:
        assert ref.contains(scene.frames[3].camera_to_world[:3, 3])[0]  # a camera-inside-box frame is included
        vis = compute_visibility(scene)  # default working scale
        ev, ep = rel_errors(scene, vis, ref)
    finally:
        ref.close()
    assert (vis.visible > 0.01).sum() > 50  # the comparison is not vacuous
    assert ev.max() <= 0.005, f"visible: max error {ev.max():.4f} of image area"
    assert ep.max() <= 0.005, f"projected: max error {ep.max():.4f} of image area"


def write_depth(tmp_path, name, depth_m):
    (tmp_path / "depth").mkdir(exist_ok=True)
    cv2.imwrite(str(tmp_path / "depth" / name), np.round(depth_m * 1000).astype(np.uint16))
    return f"depth/{name}"


def test_depth_occlusion_hides_behind_surface_and_missing_depth_counts_visible(tmp_path):
    # box front face at z = 3 covering u in [194.5, 444.5]; a wall at z = 2 over the left half of the
    # image (u < 319.5); right half: far background (z = 10); frame 1: no depth at all (zeros)
    d = np.full((H, W), 10.0)
    d[:, :320] = 2.0
    doc = scene_doc([([0, 0, 3.5], [1.5, 1.0, 1.0])], [IDENTITY, IDENTITY], depth={"scale": 1000.0})
    doc["frames"][0]["depth"] = write_depth(tmp_path, "0.png", d)
    doc["frames"][1]["depth"] = write_depth(tmp_path, "1.png", np.zeros((H, W)))
    s = Scene.from_dict(doc, root=tmp_path)
    v = compute_visibility(s, occlusion="depth")
    p = v.projected[0, 0]
    assert v.visible[0, 0] == pytest.approx(p / 2, abs=0.003)
    assert v.visible[1, 0] == pytest.approx(p, abs=1e-12)  # missing depth: visible (bop19-style)
    assert v.bbox[0, 0, 0] >= 316  # the visible part starts at the wall's edge (one working pixel slack)
    # a depth map of different size and intrinsics (ScanNet-style depth camera): same answer
    small = cv2.resize(d, (320, 240), interpolation=cv2.INTER_NEAREST)
    doc["frames"][0]["depth"] = write_depth(tmp_path, "s.png", small)
    doc["frames"][1]["depth"] = write_depth(tmp_path, "s1.png", np.zeros((240, 320)))
    doc["depth"] = {"scale": 1000.0, "image_size": [320, 240]}
    v2 = compute_visibility(Scene.from_dict(doc, root=tmp_path), occlusion="depth")
    assert v2.visible[0, 0] == pytest.approx(p / 2, abs=0.003)


def test_mesh_occlusion_matches_the_geometry(tmp_path):
    # a wall quad at z = 2 over x < 0 hides the left half of a box centred on the axis
    wall = trimesh.Trimesh(vertices=[[-5, -5, 2], [0, -5, 2], [0, 5, 2], [-5, 5, 2]], faces=[[0, 1, 2], [0, 2, 3]])
    wall.export(tmp_path / "mesh.ply")
    doc = scene_doc([([0, 0, 3.5], [1.5, 1.0, 1.0])], [IDENTITY], mesh="mesh.ply")
    s = Scene.from_dict(doc, root=tmp_path)
    v = compute_visibility(s, occlusion="mesh")
    assert v.visible[0, 0] == pytest.approx(v.projected[0, 0] / 2, abs=0.003)
    with pytest.raises(InputError, match="<scene>: mesh: missing; expected a mesh file for occlusion 'mesh'"):
        compute_visibility(make_scene([([0, 0, 3], [1, 1, 1])], [IDENTITY]), occlusion="mesh")


def test_bad_parameters_are_rejected():
    s = make_scene([([0, 0, 3], [1, 1, 1])], [IDENTITY])
    with pytest.raises(ValueError, match="occlusion: expected one of"):
        compute_visibility(s, occlusion="walls")
    with pytest.raises(ValueError, match="scale"):
        compute_visibility(s, scale=0)
    with pytest.raises(InputError, match=r"<scene>: frames\[\]\.depth: no frame has a depth image"):
        compute_visibility(s, occlusion="depth")


def test_save_load_round_trip(tmp_path):
    scene = random_box_scene(seed=3, num_frames=20, num_boxes=8)
    v = compute_visibility(scene, occlusion="boxes")
    v.save(tmp_path / "v.npz")
    u = Visibility.load(tmp_path / "v.npz")
    for name in ("projected", "visible", "bbox", "frame_index", "valid"):
        np.testing.assert_array_equal(getattr(u, name), getattr(v, name))
    assert u.object_ids.tolist() == v.object_ids.tolist() and u.scene_id == v.scene_id
    assert u.params == v.params
    assert not [p for p in os.listdir(tmp_path) if p != "v.npz"]


def test_cli_writes_exactly_the_arrays_and_csv(tmp_path):
    scene = random_box_scene(seed=4, num_frames=12, num_boxes=5)
    scene.save(tmp_path / "scene.json")
    r = subprocess.run([sys.executable, "-m", "vistest.cli", "visibility", str(tmp_path / "scene.json"),
                        "-o", str(tmp_path / "v.npz"), "--csv", str(tmp_path / "v.csv"), "--quiet"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""  # --quiet: no progress bar
    with np.load(tmp_path / "v.npz") as z:
        assert {"projected", "visible", "bbox", "object_ids", "frame_index"} <= set(z.files)
        assert z["projected"].shape == (12, 5) and z["bbox"].shape == (12, 5, 4)
    rows = (tmp_path / "v.csv").read_text().splitlines()
    assert rows[0].startswith("frame_index,valid,object_id,projected,visible") and len(rows) == 1 + 12 * 5
    # a bad scene: clean error naming file and field, exit status 1, no output written
    doc = json.loads((tmp_path / "scene.json").read_text())
    doc["objects"][2]["size"][0] = -1
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    from click.testing import CliRunner  # in this process (the command's own process: above)

    from vistest.cli import main
    r = CliRunner().invoke(main, ["visibility", str(tmp_path / "bad.json"), "-o", str(tmp_path / "bad.npz")])
    assert r.exit_code == 2 and "bad.json: objects[2].size" in r.output
    assert not (tmp_path / "bad.npz").exists()


@pytest.mark.slow  # compiles the kernels cold in a fresh cache (~15 s of CPU)
def test_compiled_kernels_are_cached_on_disk(tmp_path):
    """A second process loads the kernels from the on-disk cache instead of compiling; only the first says
    that it compiles."""
    code = ("import vistest; from vistest.synthetic import random_box_scene;"
            "from vistest.visibility.table import compute_visibility; from vistest.visibility import raster;"
            "compute_visibility(random_box_scene(num_frames=3, num_boxes=2));"
            "s = raster.visibility_kernel_jit.stats; print(sum(s.cache_hits.values()), sum(s.cache_misses.values()))")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert first.stdout.split() == ["0", "1"]  # compiled (and written to the cache)
    assert second.stdout.split() == ["1", "0"]  # loaded from the cache
    # the first process says that it compiles, with an estimate, before it does (issue #47); the second is silent
    said = first.stderr.splitlines()
    assert said[0].startswith("vistest: compiling the visibility kernels (first run only, about ")
    assert said[-1].startswith("vistest: compiled the visibility kernels in "), first.stderr
    assert "compil" not in second.stderr


@pytest.mark.parametrize("z0, shown", [(3.4, True), (3.6, True), (3.8, False)])
def test_boxes_mode_a_box_does_not_hide_what_it_contains(z0, shown):
    # outer box z in [2, 4]; the inner box (0.5 m cube) starts at z0: share inside = (4 - z0) / 0.5
    # (1.0, 0.8, 0.4); contained from 50%: then visible = projected, else hidden behind the outer's front face
    s = make_scene([([0, 0, 3], [2, 2, 2]), ([0, 0, z0 + 0.25], [0.5, 0.5, 0.5])], [IDENTITY])
    p, v, b = one(s, occlusion="boxes")
    assert p[1] > 0.01
    if shown:
        assert v[1] == pytest.approx(p[1], abs=1e-12)
        assert v[0] == pytest.approx(p[0], abs=1e-12)  # the container is not hidden by what it contains
    else:
        assert v[1] == 0 and np.isnan(b[1]).all()
        assert v[0] == pytest.approx(p[0], abs=1e-12)


def test_observed_depth_is_compared_with_the_box_entry_surface(tmp_path):
    # a loose box z in [2, 4] (front face at 2); the object's surface inside it at z = 3: visible.
    # Something 10 cm in front of the face (z = 1.9, beyond the 5 cm tolerance): hidden. 3 cm in
    # front (z = 1.97): within the tolerance, visible. A second box in front hides nothing.
    doc = scene_doc([([0, 0, 3], [1.0, 1.0, 2.0]), ([0, 0, 1.0], [1.0, 1.0, 0.2])], [IDENTITY] * 3,
                    depth={"scale": 1000.0})
    for i, z in enumerate((3.0, 1.9, 1.97)):
        d = np.full((H, W), z)
        d[:, 320:] = 0.8 if i == 0 else z  # right half: the front box's own surface
        doc["frames"][i]["depth"] = write_depth(tmp_path, f"{i}.png", d)
    v = compute_visibility(Scene.from_dict(doc, root=tmp_path), occlusion="depth")
    p = v.projected[0, 0]
    assert v.visible[0, 0] == pytest.approx(p / 2, abs=0.003)  # left half: the object; right: the front box's surface
    assert v.visible[1, 0] == 0.0
    assert v.visible[2, 0] == pytest.approx(p, abs=1e-12)


def test_observed_depth_camera_inside_a_box_sees_it_everywhere(tmp_path):
    # the camera inside a box: the ray enters it at the near plane, so nothing observed is in front
    doc = scene_doc([([0, 0, 0], [4, 4, 4])], [IDENTITY], depth={"scale": 1000.0})
    doc["frames"][0]["depth"] = write_depth(tmp_path, "0.png", np.full((H, W), 0.3))
    v = compute_visibility(Scene.from_dict(doc, root=tmp_path), occlusion="depth")
    assert v.visible[0, 0] == 1.0 and v.projected[0, 0] == 1.0


def test_nested_boxes_agree_with_pyrender():
    """Boxes nested two deep (a k-buffer of 3) and partly contained ones among random boxes:
    the engine against pyrender, which renders each contained box again without its containers."""
    from vistest.visibility.render import BoxSegRenderer

    base = random_box_scene(seed=5, num_frames=24, num_boxes=12, image_size=(320, 240))
    rng = np.random.default_rng(0)
    doc = base.to_dict()
    for n, o in enumerate(list(doc["objects"][:6])):
        r = np.array(o["rotation"])
        for depth, (shrink, shift) in enumerate(((0.6, 0.15), (0.35, 0.1)) if n % 2 else ((0.7, 0.45),)):
            size = np.array(o["size"]) * shrink
            centre = np.array(o["center"]) + r @ (rng.uniform(-shift, shift, 3) * np.array(o["size"]))
            doc["objects"].append({"id": f"{o['id']}-in{depth}", "label": "inner", "center": centre.tolist(),
                                   "size": size.tolist(), "rotation": o["rotation"]})
            o = doc["objects"][-1]
    scene = Scene.from_dict(doc)
    contains = containment(*scene.world_boxes())
    assert contains.sum(axis=0).max() >= 2  # some box has two containers: k-buffer of 3
    vis = compute_visibility(scene, occlusion="boxes")
    ref = BoxSegRenderer(*scene.world_boxes(), 320, 240, near=1e-3)
    try:
        ev, _ = rel_errors(scene, vis, ref, check_projected=False)
    finally:
        ref.close()
    inner = [i for i, o in enumerate(scene.objects) if o.label == "inner"]
    assert (vis.visible[:, inner] > 0.005).sum() > 10  # nested boxes are seen: not vacuous
    assert ev.max() <= 0.005, f"visible: max error {ev.max():.4f} of image area"


def test_compiling_says_so_first_with_an_estimate_then_every_few_seconds(monkeypatch):
    """What a first run prints while the kernels compile (issue #47), with a stand-in step of 0.35 s and
    heartbeats every 0.1 s: the announcement with the estimate before the work, progress lines naming
    the step while it runs, the time taken at the end; nothing at all when every kernel is compiled."""
    import io
    import time as _time

    from vistest.visibility import compile as comp

    ran = []
    warm = {"boxes": ("stand-in", lambda: (ran.append(1), _time.sleep(0.35)))}
    monkeypatch.setattr(comp, "STEP_ESTIMATE_S", {"boxes": 12.0})
    monkeypatch.setattr(comp, "HEARTBEAT_S", 0.1)
    out = io.StringIO()
    took = comp.compile_kernels(warm, ["boxes"], file=out)
    lines = out.getvalue().splitlines()
    assert ran == [1] and 0.3 < took < 5
    assert lines[0].startswith("vistest: compiling the visibility kernels (first run only, about 12 s ")
    beats = lines[1:-1]
    assert len(beats) >= 2 and all(b.startswith("vistest: compiling: step 1 of 1 (stand-in), ") and
                                   b.endswith("s elapsed of about 12 s") for b in beats), lines
    assert lines[-1].startswith("vistest: compiled the visibility kernels in ")
    # the kernels are compiled in this process (tests/conftest.py): nothing to do, nothing said
    assert comp.steps_to_compile() == []
    assert comp.ensure_compiled("mesh", warm) == 0.0 and ran == [1]
