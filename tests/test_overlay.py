"""Overlays: the engine's geometry, clipping at the camera plane, fills, the video and the contact sheet."""
import json

import cv2
import numpy as np
import pytest
from click.testing import CliRunner

from vistest.visibility import raster
from vistest.cli import main
from vistest.look.overlay import (
    OverlayStyle,
    default_sheet_frames,
    make_overlay,
    SceneOverlay,
    clip_segment,
    label_images,
    parse_frames,
    parse_objects,
    project_boxes,
    world_corners,
)
from vistest.synthetic import random_box_scene
from vistest.videos.ffmpeg import VideoWriter, count_frames, read_frames
from vistest.visibility.table import DEFAULT_NEAR, compute_visibility
from conftest import IDENTITY, make_scene, scene_doc

W, H = 640, 480
CX = 319.5  # conftest camera: fx = fy = 500, principal point at the image centre


def drawn(scene, objects=None, index=0):
    """The overlay of frame ``index`` on the grey canvas (scene without a video), and the banner's height."""
    vis = compute_visibility(scene)
    ov = SceneOverlay(scene, vis, objects)
    img = np.full((scene.image_size[1], scene.image_size[0], 3), 96, np.uint8)
    ov.draw(img, index, OverlayStyle.for_output(scene.image_size[1]))
    return img, vis


def changed(scene, index=0):
    """Pixels the boxes changed: the overlay with every box vs. the overlay with none (same banner)."""
    with_boxes, vis = drawn(scene, None, index)
    without, _ = drawn(scene, (), index)
    return (with_boxes != without).any(axis=2), with_boxes, vis


def hull_area(pts, w, h):
    """Area of the convex hull of pts clipped to the image, with the engine's own polygon routines."""
    n = len(pts)
    if n < 3:
        return 0.0, None
    hx, hy, tx, ty = (np.empty(raster.MAXV) for _ in range(4))
    bb = np.empty(4)
    m = raster.convex_hull(np.ascontiguousarray(pts[:, 0]), np.ascontiguousarray(pts[:, 1]), n, hx, hy)
    if m < 3:
        return 0.0, None
    return raster._clip_rect_area(hx, hy, m, -0.5, -0.5, w - 0.5, h - 0.5, tx, ty, bb), bb


def test_projected_corners_are_the_engines_geometry():
    """The overlay's vertices, measured like the engine measures a silhouette, give the engine's
    `projected` and `bbox` exactly: same clipping, same projection, same order."""
    scene = random_box_scene(seed=3, num_frames=40, num_boxes=12, inside_frame=3)
    vis = compute_visibility(scene, occlusion="none")
    w, h = scene.image_size
    corners = world_corners(scene)
    straddling = checked = 0
    for fi, frame in enumerate(scene.frames):
        proj = project_boxes(scene, frame, DEFAULT_NEAR, corners)
        if not frame.valid:
            assert proj is None
            continue
        for o in range(len(scene.objects)):
            pts = proj.vertices(o)
            straddling += 0 < np.isfinite(proj.corners[o, :, 0]).sum() < 8
            area, bb = hull_area(pts, w, h)
            assert area / (w * h) == pytest.approx(vis.projected[fi, o], abs=1e-12)
            if vis.projected[fi, o] > 0:
                out = np.empty(4)
                raster._bbox_pixels(bb, -np.inf, -np.inf, np.inf, np.inf, w, h, out)
                np.testing.assert_array_equal(out, vis.bbox[fi, o])
                checked += 1
    assert checked > 50 and straddling > 0  # in-view boxes, and boxes cut by the near plane (frame 3)


def test_corners_in_front_project_like_the_pinhole_model():
    """Sanity of the convention: an unclipped corner lands at fx * x / z + cx (OpenCV pixel centres)."""
    scene = make_scene([([0.2, -0.1, 3.0], [0.4, 0.6, 0.8])], [IDENTITY])
    proj = project_boxes(scene, scene.frames[0], DEFAULT_NEAR)
    pc = scene.objects[0].corners()
    np.testing.assert_allclose(proj.corners[0, :, 0], 500 * pc[:, 0] / pc[:, 2] + CX, atol=1e-9)
    np.testing.assert_allclose(proj.corners[0, :, 1], 500 * pc[:, 1] / pc[:, 2] + 239.5, atol=1e-9)
    assert np.isnan(proj.crossings).all() and len(proj.segments(0)) == 12


def test_box_behind_the_camera_is_not_drawn():
    # a naive pinhole projection of this box (z < 0) lands inside the image, mirrored: u = 500 * 0.3 / -2 + cx
    behind = ([0.3, 0.2, -2.0], [0.5, 0.5, 0.5])
    naive_u = 500 * 0.3 / -2.0 + CX
    assert 0 < naive_u < W
    scene = make_scene([behind], [IDENTITY])
    diff, _, vis = changed(scene)
    assert vis.projected[0, 0] == 0.0
    assert not diff.any()
    proj = project_boxes(scene, scene.frames[0])
    assert len(proj.segments(0)) == 0 and len(proj.vertices(0)) == 0


def test_box_straddling_the_camera_plane_is_drawn_clipped_on_its_own_side():
    # x in [0.4, 0.8] (right of the optical axis), z in [-1.5, 1.5]: only the part in front is drawn,
    # at u >= 500 * 0.4 / 1.5 + cx ~ 453; a mirrored projection would draw left of the centre
    scene = make_scene([([0.6, 0.0, 0.0], [0.4, 0.4, 3.0])], [IDENTITY])
    diff, img, vis = changed(scene)
    assert vis.visible[0, 0] > 0.05
    _, xs = np.nonzero(diff)
    assert len(xs) > 1000
    assert xs.min() > 440  # nothing on the mirrored side (wireframe anti-aliasing: 1 px)
    proj = project_boxes(scene, scene.frames[0])
    assert np.isfinite(proj.crossings[0, :, 0]).sum() == 4  # the four long edges cross the near plane
    # edges are clipped at the near plane, never projected from behind: their far ends run off the right
    segs = proj.segments(0)
    assert (segs[:, [0, 2]] > CX).all()
    # the visible region is filled: the box's colour blended over the grey canvas inside its bbox
    x0, y0, x1, y1 = vis.bbox[0, 0].astype(int)
    inner = img[(y0 + y1) // 2, (x0 + x1) // 2 + 30]
    assert not (inner == 96).all()


def test_occluded_box_is_drawn_thin_and_its_fill_is_only_where_visible():
    # box 1 directly behind box 0: in view, fully hidden (visible 0) -> drawn, but no fill of its own
    scene = make_scene([([0, 0, 3], [1, 1, 0.5]), ([0, 0, 5], [0.6, 0.6, 0.5])], [IDENTITY])
    vis = compute_visibility(scene)
    assert vis.projected[0, 1] > 0 and vis.visible[0, 1] == 0
    labels = label_images(scene, scene.frames, tuple(vis.params["working_size"]), DEFAULT_NEAR)
    assert (labels[0] == 0).any() and not (labels[0] == 1).any()
    alone, _ = drawn(scene, parse_objects("1", scene))
    blank, _ = drawn(scene, ())
    diff = (alone != blank).any(axis=2)
    _, xs = np.nonzero(diff)
    assert len(xs) > 0
    # box 1's outline spans u in cx +- 500*0.3/4.75, its label sits at its corner: nothing is filled inside
    assert not diff[240, 300:340].any()


def test_label_kernel_leaves_the_engine_results_unchanged():
    scene = random_box_scene(seed=5, num_frames=30, num_boxes=10)
    vis = compute_visibility(scene)
    ws, hs = vis.params["working_size"]
    labels = label_images(scene, scene.frames, (ws, hs), DEFAULT_NEAR)
    for fi, f in enumerate(scene.frames):
        if not f.valid:
            assert (labels[fi] == -1).all()
            continue
        present = {int(o) for o in np.unique(labels[fi]) if o >= 0}
        assert all(vis.visible[fi, o] > 0 for o in present)
    # the labelled compilation returns the same numbers as the default one
    from vistest.visibility.table import containment, frame_cameras
    centers, sizes, rots = scene.world_boxes()
    w2c, kin = frame_cameras(scene, scene.frames)
    valid = np.array([f.valid for f in scene.frames])
    out = [np.empty((30, 10)), np.empty((30, 10)), np.empty((30, 10, 4))]
    raster.visibility_kernel(w2c, kin, valid, np.zeros(30, np.int64), world_corners(scene)[None], rots[None],
                             *scene.image_size, ws, hs, DEFAULT_NEAR, True, np.zeros((0, 0)), 0.0,
                             containment(centers, sizes, rots)[None], *out,
                             np.full((30, ws * hs), -1, np.int64))
    for a, b in zip(out, (vis.projected, vis.visible, vis.bbox)):
        np.testing.assert_array_equal(a, b)


def test_clip_segment():
    assert clip_segment((-10, 5, 10, 5), 0, 0, 4, 10) == (0, 5, 4, 5)
    assert clip_segment((-10, -5, -1, -5), 0, 0, 4, 10) is None
    assert clip_segment((1, 1, 2, 2), 0, 0, 4, 10) == (1, 1, 2, 2)


def test_frame_and_object_selections():
    assert parse_frames("0,10,20-23,100-120:10", 200) == (0, 10, 20, 21, 22, 23, 100, 110, 120)
    with pytest.raises(ValueError, match="--frames: '5-400' is outside the video's decoded frames 0-199"):
        parse_frames("5-400", 200)
    with pytest.raises(ValueError, match="--frames: expected frame numbers"):
        parse_frames("a-b", 200)
    scene = make_scene([([0, 0, 3], [1, 1, 1]), ([1, 0, 3], [1, 1, 1])], [IDENTITY])
    assert parse_objects("1", scene) == (1,) and parse_objects("box", scene) == (0, 1)
    with pytest.raises(ValueError, match="--objects: expected object ids or labels .* got sofa"):
        parse_objects("0,sofa", scene)


@pytest.fixture
def video_scene(tmp_path):
    """A 96x64 scene with a 6-frame video (frame 2 has no pose) and two boxes in view."""
    w, h = 96, 64
    cam = {"fx": 80.0, "fy": 80.0, "cx": 47.5, "cy": 31.5}
    poses = [IDENTITY] * 6
    poses[2] = None
    doc = scene_doc([([0.0, 0.0, 3.0], [1.0, 0.8, 0.5]), ([0.9, 0.3, 4.0], [0.6, 0.6, 0.6])], poses,
                    image_size=(w, h), camera=cam, video="video.mp4")
    with VideoWriter(tmp_path / "video.mp4", fps=30.0, size=(w, h), preset="ultrafast") as vw:
        for i in range(6):
            vw.write(np.full((h, w, 3), 40 + 20 * i, np.uint8))
    (tmp_path / "scene.json").write_text(json.dumps(doc))
    return tmp_path / "scene.json"


def test_overlay_video_and_contact_sheet_from_the_cli(video_scene, tmp_path):
    runner = CliRunner()
    out = tmp_path / "overlay.mp4"
    r = runner.invoke(main, ["overlay", str(video_scene), "-o", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    assert count_frames(out) == 5  # by default the posed frames: frame 2 has no pose
    assert "1 of 6 frames have no pose" in r.output
    r = runner.invoke(main, ["overlay", str(video_scene), "-o", str(out), "--frames", "0-5", "--quiet"])
    assert r.exit_code == 0, r.output
    assert count_frames(out) == 6
    frames = list(read_frames(out, range(6)))
    assert abs(int(frames[0][60, 5].mean()) - 40) < 6  # the source pixels show through away from the boxes
    red = frames[2][32, 0]  # the invalid frame has a red border
    assert red[0] > 150 and red[1] < 110
    sheet = tmp_path / "sheet.png"
    r = runner.invoke(main, ["overlay", str(video_scene), "-o", str(sheet), "--png", "--frames", "1-3",
                             "--columns", "3", "--tile-width", "96", "--quiet"])
    assert r.exit_code == 0, r.output
    img = cv2.imread(str(sheet))[..., ::-1]
    assert img.shape[1] == 4 + 3 * (96 + 4)
    assert not list(tmp_path.glob(".*tmp*"))  # atomic: no temporary left behind
    r = runner.invoke(main, ["overlay", str(video_scene), "-o", str(sheet), "--png", "--objects", "sofa"])
    assert r.exit_code != 0 and "--objects" in r.output


@pytest.mark.parametrize("posed, want", [
    ((5, 17, 30), (5, 17, 30)),  # fewer posed frames than the sheet holds: all of them, no unposed one
    (tuple(range(0, 103, 2)), None),  # 52 posed of 103: 16 of them, spread
    ((), None),  # none posed: spread over every frame
])
def test_contact_sheet_defaults_to_posed_frames(tmp_path, posed, want):
    """The issue's scan: most frames without a pose. The default sheet picks only posed frames (spread as the
    uniform sampler spreads them), never a black INVALID POSE tile while a posed frame is left."""
    n = 103
    poses = [IDENTITY if i in posed else None for i in range(n)]
    (tmp_path / "scene.json").write_text(json.dumps(scene_doc([([0.0, 0.0, 3.0], [1.0, 1.0, 1.0])], poses,
                                                              image_size=(64, 48), camera={"fx": 50.0, "fy": 50.0,
                                                                                           "cx": 31.5, "cy": 23.5})))
    notes = []
    chosen = make_overlay(tmp_path / "scene.json", tmp_path / "sheet.png", png=True, tile_width=32,
                          note=notes.append)
    assert (tmp_path / "sheet.png").is_file()
    if posed and len(posed) <= 16:
        assert chosen == want
    elif posed:
        assert len(chosen) == 16 and set(chosen) <= set(posed)
        assert chosen[-1] - chosen[0] > 0.8 * (posed[-1] - posed[0])  # spread over the posed frames
        assert any(f"{n - len(posed)} of {n} frames have no pose" in m for m in notes)
    else:
        assert len(chosen) == 16 and chosen[-1] - chosen[0] > 80 and chosen == default_sheet_frames(n)
        assert notes == [f"none of the {n} frames has a pose: no boxes drawn"]
