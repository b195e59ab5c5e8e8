"""The demo scene: loads, decodes to the right frames, is deterministic, has its planned
events (camera inside a box, a box straddling the camera plane), and its depth agrees
with the geometry. Geometry here is recomputed from scene.json, independently of
vistest.synth.demo. The demo checked is the session's ``demo_small`` (conftest.py: seed 0,
60 frames, 320x240); the determinism test renders the smallest one (``demo_tiny``) again."""
import hashlib
import re
import subprocess

import cv2
import numpy as np
import pytest

import vistest  # noqa: F401  (sets PYOPENGL_PLATFORM before pyrender is imported)
from vistest import Scene
from vistest.synth.demo import MIN_FRAMES, make_demo_scene
from vistest.videos.ffmpeg import count_frames, ffmpeg_exe
from conftest import DEMO_TINY

N, W, H = 60, 320, 240


@pytest.fixture(scope="module")
def demo(demo_small):
    return demo_small  # seed 0, N frames, W x H


@pytest.fixture(scope="module")
def scene(demo):
    return Scene.load(demo)


def digest(folder):
    """sha256 of every output file except the video (x264 threading is not our contract)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix != ".mp4")
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def cam_coords(scene, frame, points):
    c2w = frame.camera_to_world
    return (np.asarray(points) - c2w[:3, 3]) @ c2w[:3, :3]


def corners(o):
    s = np.array([[(k >> i) & 1 for i in range(3)] for k in range(8)]) * 2 - 1
    return o.center + (s * o.size / 2) @ o.rotation.T


# ---- structure ---------------------------------------------------------------------------
def test_scene_loads_with_all_parts(demo, scene):
    assert demo.name == "scene.json"
    assert scene.image_size == (W, H)
    assert len(scene.frames) == N and [f.index for f in scene.frames] == list(range(N))
    assert all(f.valid and f.depth == f"depth/{f.index:06d}.png" for f in scene.frames)
    assert np.allclose([f.time for f in scene.frames], np.arange(N) / 30.0)
    assert scene.video == "video.mp4" and scene.mesh == "mesh.ply" and scene.depth.scale == 1000
    assert 10 <= len(scene.objects) <= 20
    assert [o.id for o in scene.objects] == [str(i + 1) for i in range(len(scene.objects))]
    labels = [o.label for o in scene.objects]
    assert labels.count("chair") == 3 and {"bed", "sofa", "table", "tv", "cabinet", "plant"} <= set(labels)
    assert scene.room["size_m2"] == pytest.approx(20.0)
    assert scene.room["polygon"] == [[0.0, 0.0], [5.0, 0.0], [5.0, 4.0], [0.0, 4.0]]
    assert [p.name for p in demo.parent.glob(".*")] == [".demo-params.json"]  # no temporary files or folders


def test_some_boxes_rotated_tilted_and_stacked(scene):
    rot = [o.rotation for o in scene.objects]
    assert sum(abs(r[0, 1]) > 0.05 for r in rot) >= 3  # rotated about Z
    assert sum(abs(r[2, 2]) < 0.999 for r in rot) >= 1  # tilted (the TV at least)
    bottoms = {o.id: corners(o)[:, 2].min() for o in scene.objects}
    assert sum(b > 0.3 for b in bottoms.values()) >= 2  # resting on another box (box on table, TV on stand)


def test_mesh_holds_room_and_boxes(demo, scene):
    import trimesh

    mesh = trimesh.load(demo.parent / "mesh.ply", force="mesh")
    assert len(mesh.faces) == 2 * 5 + 12 * len(scene.objects)  # floor + 4 walls, 12 triangles per box
    assert np.allclose(mesh.bounds, [[0, 0, 0], [5, 4, 2.6]])


def test_video_decodes_to_every_frame(demo):
    video = demo.parent / "video.mp4"
    assert count_frames(video) == N
    err = subprocess.run([ffmpeg_exe(), "-hide_banner", "-i", str(video)], capture_output=True, text=True).stderr
    assert re.search(rf"Video: h264.*yuv420p.*\b{W}x{H}\b.*\b30 fps", err), err


# ---- determinism ---------------------------------------------------------------------------
@pytest.mark.slow  # renders the demo three times
def test_same_seed_same_outputs_other_seed_differs(demo_tiny, tmp_path):
    """The session's smallest demo (rendered by another process under xdist) rendered again."""
    demo = demo_tiny
    again = make_demo_scene(tmp_path / "again", **DEMO_TINY, quiet=True)
    assert again.read_bytes() == demo.read_bytes()
    assert digest(again.parent) == digest(demo.parent)
    other = make_demo_scene(tmp_path / "other", **{**DEMO_TINY, "seed": 1}, quiet=True)
    a, b = Scene.load(demo), Scene.load(other)
    assert other.read_bytes() != demo.read_bytes()
    assert [o.center.tolist() for o in a.objects] != [o.center.tolist() for o in b.objects]


# ---- planned events --------------------------------------------------------------------------
def inside_frames(scene):
    out = []
    for f in scene.frames:
        p = f.camera_to_world[:3, 3]
        for o in scene.objects:
            if np.all(np.abs(o.rotation.T @ (p - o.center)) < o.size / 2):
                out.append((f.index, o.label))
    return out


def test_camera_inside_a_box(scene):
    hits = inside_frames(scene)
    assert hits, "no frame has its camera centre inside a box"
    assert {label for _, label in hits} == {"plant"}


def test_a_box_straddles_the_camera_plane(scene):
    found = []
    for f in scene.frames:
        for o in scene.objects:
            z = cam_coords(scene, f, corners(o))[:, 2]
            if z.max() > 0 and z.min() < 0:
                found.append((f.index, o.label))
    assert found
    # besides the frames inside the plant, a box straddles the plane while the camera is outside it
    assert set(found) - set(inside_frames(scene))


def test_events_survive_the_minimum_frame_count(tmp_path, capsys):
    path = make_demo_scene(tmp_path / "min", seed=3, num_frames=MIN_FRAMES, size=(96, 64), quiet=False)
    assert "Rendering demo scene" in capsys.readouterr().err  # the progress bar goes to stderr
    scene = Scene.load(path)
    assert inside_frames(scene)
    assert count_frames(path.parent / "video.mp4") == MIN_FRAMES


@pytest.mark.parametrize("kwargs, match", [
    ({"size": (321, 240)}, "even"),
    ({"num_frames": MIN_FRAMES - 1}, "num_frames"),
])
def test_bad_arguments_rejected(tmp_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_demo_scene(tmp_path, **kwargs)
    assert not list(tmp_path.iterdir())


# ---- depth against analytic ray casting --------------------------------------------------------
NO_SURFACE, FLOOR, WALL, BOX = -1, 0, 1, 100  # surface ids: wall k is WALL + k, box j is BOX + j


def ray_depth(scene, origin, directions):
    """Distance along each of ``directions`` (N, 3) (scaled so their camera z is 1, so this is
    z-depth) from ``origin`` to the first surface: room floor / walls (polygon x height_m, no
    ceiling) or a box, boxes seen from outside, or their inner walls when the ray starts
    inside. Returns (depth, 0 where no surface; surface id, NO_SURFACE where none), both (N,).
    Surfaces are tried in order (floor, walls, boxes), a later one winning only when strictly
    nearer."""
    d = np.asarray(directions, float)
    best = np.full(len(d), np.inf)
    what = np.full(len(d), NO_SURFACE)
    down = d[:, 2] < 0
    with np.errstate(divide="ignore", invalid="ignore"):
        best[down] = -origin[2] / d[down, 2]
    what[down] = FLOOR
    poly = np.array(scene.room["polygon"], float)
    height = scene.room["height_m"]
    for k in range(len(poly)):
        a, b = poly[k], poly[(k + 1) % len(poly)]
        e = b - a
        n = np.array([-e[1], e[0]])
        denom = d[:, :2] @ n
        ok = np.abs(denom) >= 1e-12
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(ok, (n @ (a - origin[:2])) / denom, np.nan)
        hit = origin + t[:, None] * d
        s = (hit[:, :2] - a) @ e / (e @ e)
        win = ok & (0 < t) & (t < best) & (0 <= s) & (s <= 1) & (0 <= hit[:, 2]) & (hit[:, 2] <= height)
        best[win], what[win] = t[win], WALL + k
    for j, o in enumerate(scene.objects):
        lo = o.rotation.T @ (origin - o.center)
        ld = d @ o.rotation  # each row: rotation.T @ direction
        with np.errstate(divide="ignore", invalid="ignore"):
            t1, t2 = (-o.size / 2 - lo) / ld, (o.size / 2 - lo) / ld
            t_in, t_out = np.nanmax(np.minimum(t1, t2), axis=1), np.nanmin(np.maximum(t1, t2), axis=1)
        t = np.where(t_in > 0, t_in, t_out)  # from inside a box: its inner wall
        win = (t_in <= t_out) & (t_out > 0) & (t < best)
        best[win], what[win] = t[win], BOX + j
    return np.where(what == NO_SURFACE, 0.0, best), what


def pixel_rays(scene, frame, u, v):
    """The camera centre and the world directions (camera z = 1) through pixels (u, v) (arrays)."""
    k = scene.camera
    u, v = np.asarray(u, float), np.asarray(v, float)
    d_cam = np.stack([(u - k.cx) / k.fx, (v - k.cy) / k.fy, np.ones_like(u)], axis=-1)
    return frame.camera_to_world[:3, 3], d_cam @ frame.camera_to_world[:3, :3].T


def check_depth(scene, frame, depth, pixels, eps):
    """Compare PNG depth with ray casting at ``pixels`` (u, v), skipping a pixel when a
    silhouette edge passes within ``eps`` px of its centre. Returns how many were checked."""
    u, v = np.asarray(pixels).T
    want, surface = ray_depth(scene, *pixel_rays(scene, frame, u, v))
    checked = np.ones(len(u), bool)
    for du, dv in ((-eps, 0), (eps, 0), (0, -eps), (0, eps)):
        checked &= ray_depth(scene, *pixel_rays(scene, frame, u + du, v + dv))[1] == surface
    got = depth[v, u] / scene.depth.scale
    empty = checked & (surface == NO_SURFACE)
    bad = np.flatnonzero(empty & (depth[v, u] != 0))
    assert not len(bad), [(frame.index, u[i], v[i], "expected no surface (depth 0)") for i in bad[:10]]
    hit = checked & (surface != NO_SURFACE)
    bad = np.flatnonzero(hit & ~(np.abs(got - want) <= 2e-3))
    assert not len(bad), [(frame.index, u[i], v[i], surface[i], got[i], want[i]) for i in bad[:10]]
    return int(checked.sum())


def test_depth_matches_geometry(scene):
    """A sparse grid away from edges (and the centre pixel) in every 7th frame and in the
    first frame inside the plant: the stored z-depth is the ray's distance to the surface."""
    k = scene.camera
    inside = {i for i, _ in inside_frames(scene)}
    checked = 0
    for f in list(scene.frames[::7]) + [scene.frames[min(inside)]]:
        depth = cv2.imread(str(scene.path(f.depth)), cv2.IMREAD_UNCHANGED)
        assert depth.dtype == np.uint16 and depth.shape == (H, W)
        pixels = [(round(k.cx), round(k.cy))] + [(u, v) for u in range(8, W, 50) for v in range(6, H, 45)]
        checked += check_depth(scene, f, depth, pixels, eps=1.0)
    assert checked > 100


def test_depth_edges_at_pixel_centres(scene):
    """Every pixel of a full row and column, up to 0.05 px from a silhouette edge: depth is
    sampled at the OpenCV pixel centre (a half-pixel or MSAA-sample offset fails this)."""
    checked = 0
    for f in scene.frames[5::12]:
        depth = cv2.imread(str(scene.path(f.depth)), cv2.IMREAD_UNCHANGED)
        pixels = [(u, H // 2 + 3) for u in range(W)] + [(W // 2 - 7, v) for v in range(H)]
        checked += check_depth(scene, f, depth, pixels, eps=0.05)
    assert checked > 0.9 * 5 * (W + H)


@pytest.mark.slow  # an interrupted render, then a rerun
def test_interrupted_run_leaves_no_scene(tmp_path, monkeypatch):
    """A run killed mid-render removes the old scene.json first and leaves no temp files."""
    import vistest.synth.demo as demo_mod

    out = tmp_path / "d"
    make_demo_scene(out, num_frames=MIN_FRAMES, size=(96, 64), quiet=True)
    calls = {"n": 0}
    real = demo_mod.depth_to_png16

    def flaky(depth):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return real(depth)

    monkeypatch.setattr(demo_mod, "depth_to_png16", flaky)
    with pytest.raises(KeyboardInterrupt):
        make_demo_scene(out, seed=1, num_frames=MIN_FRAMES, size=(96, 64), quiet=True)
    assert not (out / "scene.json").exists()
    # no .tmp leftovers, no stamp
    assert sorted(p.name for p in out.iterdir()) == ["depth", "mesh.ply", "mesh_objects.txt", "video.mp4"]
    assert len(list((out / "depth").iterdir())) == MIN_FRAMES  # the old depth folder, never half-replaced


@pytest.mark.slow  # renders the demo three times
def test_rerun_keeps_an_up_to_date_demo_and_redoes_a_changed_one(tmp_path):
    """The same parameters leave the folder as it is (the video is not byte-deterministic across
    processes, and derived videos are keyed by its bytes); other parameters, --force, or a
    missing file render again."""
    out = tmp_path / "d"
    make_demo_scene(out, num_frames=MIN_FRAMES, size=(96, 64), quiet=True)
    video = out / "video.mp4"
    first = video.stat().st_mtime_ns
    make_demo_scene(out, num_frames=MIN_FRAMES, size=(96, 64), quiet=True)
    assert video.stat().st_mtime_ns == first
    make_demo_scene(out, num_frames=MIN_FRAMES, size=(96, 64), quiet=True, force=True)
    assert video.stat().st_mtime_ns != first
    second = video.stat().st_mtime_ns
    make_demo_scene(out, seed=5, num_frames=MIN_FRAMES, size=(96, 64), quiet=True)
    assert video.stat().st_mtime_ns != second and Scene.load(out / "scene.json").scene_id == "demo-seed5"
    (out / "depth" / "000003.png").unlink()
    make_demo_scene(out, seed=5, num_frames=MIN_FRAMES, size=(96, 64), quiet=True)
    assert (out / "depth" / "000003.png").is_file()


def test_far_apart_boxes_get_the_separating_axis_tests_answer():
    """boxes_overlap's shortcut (circumscribed spheres that far apart: no overlap) gives the separating-axis
    test's answer on 4,000 random pairs of oriented boxes placed around the spheres' reach: the shortcut's
    side, the test's side, overlapping and apart pairs all drawn."""
    from vistest.synth.demo import Box, boxes_overlap, separating_axis_overlap

    rng = np.random.default_rng(0)

    def rotation():
        q, r = np.linalg.qr(rng.normal(size=(3, 3)))
        q = q * np.sign(np.diag(r))
        return q if np.linalg.det(q) > 0 else -q

    drawn = {"overlap": 0, "apart": 0, "shortcut": 0}
    for _ in range(4000):
        sa, sb = rng.uniform(0.05, 2.0, 3), rng.uniform(0.05, 2.0, 3)
        reach = (np.linalg.norm(sa) + np.linalg.norm(sb)) / 2
        direction = rng.normal(size=3)
        dist = reach * rng.uniform(0.3, 1.1)
        a = Box("a", rng.uniform(-5, 5, 3), sa, rotation())
        b = Box("b", a.center + direction / np.linalg.norm(direction) * dist, sb, rotation())
        want = separating_axis_overlap(a, b)
        assert boxes_overlap(a, b) == want, (sa, sb, dist)
        drawn["overlap" if want else "apart"] += 1
        drawn["shortcut"] += dist >= reach - 1e-3
    assert min(drawn.values()) > 300, drawn
