"""The written video shows what scene.json says: decoded pixels of every object against an independent
projection (tests/video_truth.py), for a scenario of every cell (two in the fast tier) and the two demo
scenes; and the objects' shapes (vistest.synth.shapes) are closed, outward and fill their boxes.

Floor of issue 49: per object and frame with >= 200 pixels (in the reference or the video), the median
IoU >= 0.95 and the minimum >= 0.8 in every scene, movers included (and for the movers alone)."""
from __future__ import annotations

import numpy as np
import pytest
from video_truth import box_triangles, flat_id_pass, id_videos, iou_table, raster_labels

from vistest import Scene
from vistest.synth.spec import CELLS

SIZE = (320, 240)
FRAMES = 24
FAST_CELLS = ("vista-egocentric-dynamic",)  # its movers cover 200 px; both one-line bugs fail it
# the fast cell's first 12 frames (3 s; issue 47: half the render and decode time): docs/synth.md's two one-line
# bugs still fail it (the +-x faces wound inward: minimum IoU 0.43; movers drawn a frame late: 0.22)
FAST_FRAMES = 12
# 6 s of video: a mover (and the camera) moves 7.5 times farther between frames than at 30 fps, so a mover
# drawn a frame late leaves its own pixels (the fast cell's movers: minimum IoU 0.097 at 4 fps, 0.917 at 30)
# and each decoded frame is told from its neighbours (at 30 fps a fixed camera's frames differ by a mover's
# few pixels: a frame's own render was not always the nearest)
FPS = 4.0


def scenario_of(cell: str) -> int:
    """The scenario of ``cell`` checked: the first (an egocentric walk), or in an exocentric cell the second, the
    orbit (the first's fixed camera shows an environmental yard's objects under 200 px: nothing to check)."""
    return 1 if "exocentric" in cell else 0
CELL_PARAMS = [c if c in FAST_CELLS else pytest.param(c, marks=pytest.mark.slow) for c in CELLS]


def _floor(rows, what: str, movers=()):
    """Assert the issue's floor on ``rows`` (video_truth.iou_table), and on the movers' rows alone."""
    assert rows, f"{what}: no object-frame of 200 px or more: the check would check nothing"
    for name, sel in (("all", rows), ("movers", [r for r in rows if r[1] in movers])):
        if not sel:
            continue
        iou = np.array([r[2] for r in sel])
        worst = min(sel, key=lambda r: r[2])
        assert np.median(iou) >= 0.95 and iou.min() >= 0.8, (
            f"{what} ({name}): median IoU {np.median(iou):.3f}, min {iou.min():.3f} at frame {worst[0]} object "
            f"{worst[1]} ({worst[3]} px in scene.json's projection, {worst[4]} in the video), {len(sel)} object-frames")


def _reference(scene: Scene, tris_of, static_only: bool = False) -> np.ndarray:
    """(F, H, W) object index per pixel: scene.json's objects (``static_only``: those without a track) at every
    frame's pose, z-buffered here."""
    out = []
    for f, frame in enumerate(scene.frames):
        centers, sizes, rots, present = scene.world_boxes_at(f)
        tris, owner = [], []
        for i, o in enumerate(scene.objects):
            if present[i] and not (static_only and o.track is not None):
                t = tris_of(o, centers[i], sizes[i], rots[i])
                tris.append(t)
                owner.append(np.full(len(t), i))
        out.append(raster_labels(np.concatenate(tris), np.concatenate(owner), frame.camera_to_world, scene.camera,
                                 scene.image_size))
    return np.array(out)


def _same_as_decoded(scene: Scene, render) -> None:
    """The decoded ``video.mp4`` is ``render(i)``'s frame i for every i (within the codec's error, and
    nearer to it than to the frames before and after)."""
    import imageio_ffmpeg

    reader = imageio_ffmpeg.read_frames(str(scene.path(scene.video)), pix_fmt="rgb24")
    w, h = next(reader)["size"]
    decoded = np.array([np.frombuffer(f, np.uint8).reshape(h, w, 3) for f in reader]).astype(float)
    assert len(decoded) == len(scene.frames)
    rendered = np.array([render(i)[0] for i in range(len(decoded))]).astype(float)
    err = np.abs(decoded - rendered).mean(axis=(1, 2, 3))
    assert err.max() < 4.0, f"video.mp4 differs from the render by {err.max():.2f} grey levels at frame {err.argmax()}"
    for shift in (-1, 1):  # each decoded frame is nearer its own render than a neighbour's
        other = np.abs(decoded[max(0, shift):len(decoded) + min(0, shift)]
                       - rendered[max(0, -shift):len(decoded) + min(0, -shift)]).mean(axis=(1, 2, 3))
        own = err[max(0, shift):len(decoded) + min(0, shift)]
        assert (own <= other + 1e-9).all(), f"video.mp4 is nearer the render {shift:+d} frame(s) away"


def _shape_triangles(o, center, size, rotation) -> np.ndarray:
    from vistest.synth.shapes import object_mesh

    v, f, _ = object_mesh(o.label, size, rotation, center)
    return v[f]


def synth_video_rows(spec, tmp_path):
    """Render ``spec``; returns (IoU rows, mover indices, scene) of its flat id pass against scene.json."""
    import trimesh

    from vistest.synth.layout import build_layout
    from vistest.synth.render import ScenarioRenderer, render_scenario

    scene = Scene.load(render_scenario(spec, tmp_path / "scene", quiet=True))
    layout = build_layout(spec)
    assert [o.id for o in layout.objects] == [o.id for o in scene.objects]
    # mesh.ply holds each static object's shape where scene.json's box puts it: the reference below is
    # the object's own pixels as scene.json and the mesh define them
    mesh = trimesh.load(scene.path(scene.mesh), force="mesh", process=False)
    ids = np.array(scene.path(scene.mesh_objects).read_text().split("\n")[:-1])
    from vistest.synth.shapes import object_mesh

    for o in scene.objects:
        if o.track is None:
            want = object_mesh(o.label, o.size, o.rotation, o.center)[0]
            np.testing.assert_allclose(np.asarray(mesh.vertices)[ids == o.id], want, atol=1e-5, err_msg=o.id)
    r = ScenarioRenderer(layout, scene.camera, spec.resolution)
    try:
        _same_as_decoded(scene, r.render)  # video.mp4 is this renderer's frames, in order
        flat_id_pass(r.scene, r.renderer, {node: i for i, node in enumerate(r.nodes)})
        video = id_videos(r.render, spec.frames, spec.fps, spec.resolution, tmp_path / "ids", len(scene.objects))
    finally:
        r.close()
    ref = _reference(scene, _shape_triangles)
    assert video.shape == ref.shape
    movers = [i for i, o in enumerate(scene.objects) if o.track is not None]
    if movers:  # the static objects' own pixels with the movers taken away (the table's mesh holds no mover)
        hidden = np.isin(video, movers)
        video_static = np.where(hidden, _reference(scene, _shape_triangles, static_only=True), video)
    else:
        video_static = video
    return iou_table(video, ref, len(scene.objects)), movers, scene, video, video_static


def _table_counts_the_video(scene: Scene, video: np.ndarray, video_static: np.ndarray) -> None:
    """The visibility table (occlusion auto: the scene's mesh of shapes) gives each static object the
    share of the image its own pixels cover in the decoded video, within 0.5% of the image (the working
    grid's sampling error, docs/visibility.md); a mover's ``visible`` (its box's evidence) is never less.
    The mesh holds the static shapes only, so a static object's share is counted in ``video_static``: the
    decoded video where a mover's pixels are given to the static object the reference shows behind it (a
    toy car on the table hid 0.6% of the image the table counts)."""
    from vistest import compute_visibility

    vis = compute_visibility(scene)
    assert vis.params["occlusion"] == "mesh" and vis.params["visible"] == "instance"
    share = np.stack([(video == i).mean(axis=(1, 2)) for i in range(len(scene.objects))], 1)
    static = np.array([o.track is None for o in scene.objects])
    share[:, static] = np.stack([(video_static == i).mean(axis=(1, 2)) for i in np.flatnonzero(static)], 1)
    err = np.abs(vis.visible[:, static] - share[:, static])
    assert err.max() <= 0.005, f"visible vs the video's pixels: {err.max():.4f} of the image off"
    assert (vis.visible[:, ~static] >= share[:, ~static] - 0.005).all()


@pytest.mark.parametrize("cell", CELL_PARAMS)
def test_decoded_video_shows_scene_json(tmp_path, cell):
    from vistest.synth.grid import GridConfig, laid_out_spec

    frames = FAST_FRAMES if cell in FAST_CELLS else FRAMES  # the grid's spec (drawn again if it cannot be laid out)
    spec = laid_out_spec(cell, scenario_of(cell), GridConfig(n=12, frames=frames, resolution=SIZE, fps=FPS))
    rows, movers, scene, video, video_static = synth_video_rows(spec, tmp_path)
    _floor(rows, cell, movers)
    _table_counts_the_video(scene, video, video_static)
    if cell in FAST_CELLS:
        assert any(r[1] in movers for r in rows), f"{cell}: no mover covers 200 px in any frame: check a bigger one"


@pytest.mark.slow
@pytest.mark.parametrize("dynamic", [False, True])
def test_demo_video_shows_scene_json(tmp_path, dynamic):
    """The same check on the demo scenes (boxes: scene.json's boxes are the objects' shapes)."""
    from vistest.synth import demo, demo_dynamic

    n, size = 60, SIZE
    make = demo_dynamic.make_dynamic_demo_scene if dynamic else demo.make_demo_scene
    scene = Scene.load(make(tmp_path / "scene", num_frames=n, size=size, quiet=True))
    boxes = demo.furniture(np.random.default_rng(0))
    k = demo.demo_intrinsics(size)
    if dynamic:
        poses = demo_dynamic.camera_walk(n)
        r = demo_dynamic._DynamicRenderer(boxes, demo_dynamic.moving_objects(n), k, size)
        render = lambda i: r.render_at(i, poses[i])  # noqa: E731
    else:
        poses = demo.camera_path(boxes, n)
        r = demo.DemoRenderer(boxes, k, size)
        render = lambda i: r.render(poses[i])  # noqa: E731
    try:
        _same_as_decoded(scene, render)
        owner = {id(m): i for i, m in enumerate(r.outward)} | {id(m): i for i, m in enumerate(r.inward)}
        node_object = {node: owner[id(node.mesh)] for node in r.scene.mesh_nodes if id(node.mesh) in owner}
        for j, node in enumerate(getattr(r, "moving_nodes", [])):
            node_object[node] = len(boxes) + j
        video = id_videos(render, n, scene.fps, size, tmp_path / "ids", len(scene.objects)) if not (
            flat_id_pass(r.scene, r.renderer, node_object)) else None
    finally:
        r.close()
    ref = _reference(scene, lambda o, c, s, rot: box_triangles(c, s, rot))
    movers = [i for i, o in enumerate(scene.objects) if o.track is not None]
    rows = iou_table(video, ref, len(scene.objects))
    _floor(rows, scene.scene_id, movers)
    assert not dynamic or any(r[1] in movers for r in rows)


def _catalogue_sizes():
    from vistest.synth.layout import SCALES, catalogue

    rng = np.random.default_rng(0)
    t = SCALES["figural"].table
    cases = {("table", tuple(np.r_[np.mean(t[0]), np.mean(t[1]), t[2]]))}
    for scale in ("figural", "vista", "environmental"):
        for label, (lo, hi) in catalogue(scale).items():
            for size in (lo, hi, rng.uniform(lo, hi)):
                cases.add((label, tuple(float(x) for x in size)))
    return sorted(cases)


def test_every_category_has_a_shape_that_fills_its_box():
    """Every catalogue category has its own builder; its parts lie inside the box and reach all six faces
    (scene.json's box is exactly the shape's bounds)."""
    from vistest.synth.layout import catalogue
    from vistest.synth.shapes import BUILDERS, object_mesh, object_parts

    for scale in ("figural", "vista", "environmental"):
        assert set(catalogue(scale)) <= set(BUILDERS), set(catalogue(scale)) - set(BUILDERS)
    for label, size in _catalogue_sizes():
        size = np.array(size)
        v, f, slots = object_mesh(label, size)
        np.testing.assert_allclose(v.min(0), -size / 2, atol=1e-6, err_msg=label)
        np.testing.assert_allclose(v.max(0), size / 2, atol=1e-6, err_msg=label)
        assert len(object_parts(label, size)) >= (1 if label == "ball" else 2), label
        assert set(slots) <= {0, 1, 2, 3}


def test_every_part_is_closed_and_wound_outward():
    """Each part is a watertight solid of positive volume whose every triangle winds counter-clockwise
    seen from outside (its geometric normal points away from the part's centre: every part is convex)
    and carries that normal (the renderer culls back faces)."""
    import trimesh

    from vistest.synth.shapes import object_parts, part_arrays

    for label, size in _catalogue_sizes():
        for part in object_parts(label, np.array(size)):
            p, n, t = part_arrays(part)
            m = trimesh.Trimesh(p, t)
            m.merge_vertices()
            assert m.is_watertight and m.volume > 0, (label, part.kind)
            geo = np.cross(p[t[:, 1]] - p[t[:, 0]], p[t[:, 2]] - p[t[:, 0]])
            away = p[t].mean(1) - (np.asarray(part.lo) + np.asarray(part.hi)) / 2
            assert (np.einsum("ij,ij->i", geo, away) > 0).all(), (label, part.kind, "a face wound inward")
            assert (np.einsum("ij,ij->i", geo, n[t[:, 0]]) > 0).all(), (label, part.kind, "a normal inward")


def test_box_faces_wind_outward():
    """box_arrays: every face's winding gives its stated normal (the old ±y faces gave the opposite)."""
    from vistest.synth.shapes import box_arrays

    p, n, _, t = box_arrays(np.array([1.0, 2.0, 3.0]))
    geo = np.cross(p[t[:, 1]] - p[t[:, 0]], p[t[:, 2]] - p[t[:, 0]])
    geo /= np.linalg.norm(geo, axis=1, keepdims=True)
    np.testing.assert_allclose(geo, n[t[:, 0]], atol=1e-6)
    assert sorted(map(tuple, np.unique(n, axis=0).astype(int))) == sorted(
        tuple(int(s) * (np.arange(3) == a)) for a in range(3) for s in (-1, 1))


def test_lit_program_draws_what_pyrenders_own_draws():
    """vistest's lit program (vistest/synth/shaders/lit.*, the videos' shading) and its colour-only read
    (render._read_colour) against pyrender's general metallic-roughness program (its shaders/mesh.*, the
    independent reference) and pyrender's own framebuffer read on the same scene and poses: the
    same pixels but at a few primitive edges (float rounding in another order), on a room with its checker
    floor and walls (the texture path) and objects of every slot colour; a scene it cannot draw right (a point
    light) is refused."""
    import pyrender
    from pyrender.shader_program import ShaderProgramCache

    from vistest.synth.cells import cell_spec
    from vistest.synth.demo import demo_intrinsics
    from vistest.synth.layout import build_layout
    from vistest.synth.render import ScenarioRenderer, check_lit_scene

    spec = cell_spec("vista-egocentric-static", 0, frames=24, resolution=SIZE, fps=FPS)
    r = ScenarioRenderer(build_layout(spec), demo_intrinsics(SIZE), SIZE)
    try:
        frames = range(0, spec.frames, 6)
        ours = np.array([r.render(i)[0] for i in frames]).astype(int)
        assert r.renderer.render(r.scene)[1] is None  # ours reads the colour alone
        r.renderer._renderer._program_cache = ShaderProgramCache()  # pyrender's own programs
        del r.renderer._renderer._read_main_framebuffer  # and pyrender's own read (colour and depth)
        ref = np.array([r.render(i)[0] for i in frames]).astype(int)
    finally:
        r.close()
    assert ref.std() > 20, "the reference frames are nearly blank: nothing would be compared"
    diff = np.abs(ours - ref).max(axis=-1)
    assert (diff > 0).mean() < 2e-4 and (diff > 2).mean() < 1e-4, (
        f"{(diff > 0).mean():.2e} of the pixels differ, {(diff > 2).mean():.2e} by more than 2 levels")
    scene = pyrender.Scene()
    scene.add(pyrender.PointLight())
    with pytest.raises(RuntimeError, match="one directional light"):
        check_lit_scene(scene)
