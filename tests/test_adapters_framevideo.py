"""``vistest import ... --video-from-frames``: the colour frames encoded at their own frame numbers.

Fixture: a colour-only SensReader export (no depth/, no intrinsic_depth.txt) whose images are
solid colours, one per frame number, at frames 1, 2, 4 and 7, with poses at 0, 1, 2, 3, 4 and 7.
The expected video is written out by hand: decoded frame 0 is black (before the first image),
1 and 2 their own images, 3 repeats 2, 4 its own, 5 and 6 repeat 4, 7 its own. The scene's
frames, by hand: 0 has a pose but shows no photo, so it becomes invalid; held frames 3, 5 and 6
are photos 2, 4 and 4 (their poses: frame 3's own pose file is replaced). Colours are compared
after JPEG and H.264 (mean over the frame, tolerance 6 levels of 255).
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest
from click.testing import CliRunner

from vistest.budget.config import TruthConfig
from vistest.cli import main as cli
from vistest.datasets import AdapterError, import_scene
from vistest.scene import Scene
from vistest.videos.ffmpeg import count_frames, read_frames

SIZE = (64, 48)
IMAGES = {1: (200, 30, 30), 2: (30, 200, 30), 4: (30, 30, 200), 7: (220, 220, 40)}  # RGB per frame number
POSED = (0, 1, 2, 3, 4, 7)
K = [[60.0, 0, 31.5, 0], [0, 60.0, 23.5, 0], [0, 0, 1, 0], [0, 0, 0, 1]]


def _txt(path: Path, m) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(" ".join(f"{v:f}" for v in row) for row in m) + "\n")


def write_colour_export(root: Path, images=IMAGES, posed=POSED) -> Path:
    """A colour-only SensReader export (see the module docstring); no annotation."""
    scan = root / "scene0007_00"
    (scan / "color").mkdir(parents=True)
    for n, rgb in images.items():
        img = np.empty((SIZE[1], SIZE[0], 3), np.uint8)
        img[:] = rgb[::-1]  # OpenCV writes BGR
        cv2.imwrite(str(scan / "color" / f"{n}.jpg"), img, [cv2.IMWRITE_JPEG_QUALITY, 98])
    for n in posed:
        pose = np.eye(4)
        pose[:3, 3] = [0.1 * n, 0, 1]
        _txt(scan / "pose" / f"{n}.txt", pose)
    _txt(scan / "intrinsic" / "intrinsic_color.txt", K)
    (scan / "scene0007_00.txt").write_text(f"colorWidth = {SIZE[0]}\ncolorHeight = {SIZE[1]}\n")
    return scan


def _mean_rgb(video: Path, n_frames: int) -> np.ndarray:
    return np.array([f.reshape(-1, 3).mean(axis=0) for f in read_frames(video, range(n_frames))])


def test_video_from_frames_keeps_every_image_at_its_frame_number(tmp_path):
    out = tmp_path / "scene"
    path = import_scene("scannet", write_colour_export(tmp_path), out, boxes="none", video_from_frames=True)
    scene = Scene.load(path)
    assert scene.video == "video.mp4" and scene.path(scene.video).is_file()
    video = scene.path(scene.video)
    assert count_frames(video) == 8
    expected = [(0, 0, 0), IMAGES[1], IMAGES[2], IMAGES[2], IMAGES[4], IMAGES[4], IMAGES[4], IMAGES[7]]
    got = _mean_rgb(video, 8)
    print("decoded mean RGB per frame:", got.round(1).tolist())
    np.testing.assert_allclose(got, np.array(expected, float), atol=6)
    # the scene: frame index = decoded frame number; frame 0 (black) has a pose but no photo -> invalid;
    # held frames 3, 5, 6 are photos 2, 4, 4: their pose (x = 0.1 n of the photo), image and the video's time
    assert [f.index for f in scene.frames] == list(range(8))
    assert [f.valid for f in scene.frames] == [False] + [True] * 7
    photo_of = {1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 7}
    for f in scene.frames[1:]:
        assert f.camera_to_world[0, 3] == pytest.approx(0.1 * photo_of[f.index]), f.index
        assert f.image.endswith(f"color/{photo_of[f.index]}.jpg") and f.time == pytest.approx(f.index / scene.fps)
    assert scene.depth is None  # a colour-only export imports without intrinsic_depth.txt
    prov = json.loads((out / "provenance.json").read_text())
    rec = prov["video_from_frames"]
    assert rec["decoded_frames"] == 8 and rec["images"] == 4 and rec["first_image"] == 1
    assert rec["held"] == [[3, 3], [5, 6]] and rec["black"] == [[0, 0]] and rec["made_invalid"] == [0]
    assert rec["held_posed"] == 3
    assert "warning" not in rec
    assert any("OpenCV camera axes" in r for r in prov["relied_on"])
    # a rerun keeps the video (same key), a changed image re-encodes it
    mtime = video.stat().st_mtime_ns
    import_scene("scannet", tmp_path / "scene0007_00", out, boxes="none", video_from_frames=True)
    assert video.stat().st_mtime_ns == mtime
    img = np.full((SIZE[1], SIZE[0], 3), 128, np.uint8)
    cv2.imwrite(str(tmp_path / "scene0007_00" / "color" / "7.jpg"), img)
    os.utime(tmp_path / "scene0007_00" / "color" / "7.jpg", ns=(1, 1))
    import_scene("scannet", tmp_path / "scene0007_00", out, boxes="none", video_from_frames=True)
    np.testing.assert_allclose(_mean_rgb(video, 8)[7], [128, 128, 128], atol=6)


def test_every_tenth_frame_export_warns_and_frame_step_packs_it(tmp_path):
    images = {0: (200, 30, 30), 10: (30, 200, 30), 20: (30, 30, 200)}
    scan = write_colour_export(tmp_path, images, posed=(0, 10, 20))
    res = CliRunner().invoke(cli, ["import", "scannet", str(scan), "-o", str(tmp_path / "a"), "--boxes", "none",
                                   "--video-from-frames", "--quiet"])
    assert res.exit_code == 0, res.output
    assert "-O frame_step=10" in res.output  # the warning (stderr is mixed into output)
    assert count_frames(tmp_path / "a" / "video.mp4") == 21
    res = CliRunner().invoke(cli, ["import", "scannet", str(scan), "-o", str(tmp_path / "b"), "--boxes", "none",
                                   "--video-from-frames", "-O", "frame_step=10", "--quiet"])
    assert res.exit_code == 0, res.output
    scene = Scene.load(tmp_path / "b" / "scene.json")
    assert [f.index for f in scene.frames] == [0, 1, 2] and scene.fps == 3.0
    np.testing.assert_allclose(_mean_rgb(tmp_path / "b" / "video.mp4", 3), np.array(list(images.values()), float),
                               atol=6)


def test_video_from_frames_errors_name_the_file(tmp_path):
    scan = write_colour_export(tmp_path)
    cv2.imwrite(str(scan / "color" / "4.jpg"), np.zeros((10, 10, 3), np.uint8))
    with pytest.raises(AdapterError, match=r"4\.jpg: colour image of frame 4 is 10x10; expected .* 64x48"):
        import_scene("scannet", scan, tmp_path / "o1", boxes="none", video_from_frames=True)
    assert not (tmp_path / "o1" / "video.mp4").exists()  # nothing half-written
    with pytest.raises(AdapterError, match="--video and --video-from-frames"):
        import_scene("scannet", scan, tmp_path / "o2", boxes="none", video="x.mp4", video_from_frames=True)
    (scan / "depth").mkdir()
    cv2.imwrite(str(scan / "depth" / "1.png"), np.zeros((48, 64), np.uint16))
    with pytest.raises(AdapterError, match=r"intrinsic_depth\.txt: not found; .*depth/ holds 1 depth images"):
        import_scene("scannet", scan, tmp_path / "o3", boxes="none")
    res = CliRunner().invoke(cli, ["import", "scannet", str(scan), "-o", str(tmp_path / "o4"), "--boxes", "none",
                                   "-O", "images=depth", "--video-from-frames"])
    assert res.exit_code == 2 and "intrinsic_depth.txt" in res.output


def test_arkitscenes_frames_rotate_with_the_camera(tmp_path):
    """sky_direction=Left: the video holds each lowres_wide frame rotated 90 degrees clockwise, as
    the camera is: a bright pixel at (u, v) = (20, 10) of the 256x192 image lands at (H-1-v, u)."""
    from test_adapters_arkitscenes import STAMPS, VID, write_arkit_video

    vdir = write_arkit_video(tmp_path)
    for ts in STAMPS:
        img = np.zeros((192, 256, 3), np.uint8)
        img[6:15, 16:25] = 255  # a 9x9 white patch centred on (u, v) = (20, 10)
        cv2.imwrite(str(vdir / f"{VID}_frames" / "lowres_wide" / f"{VID}_{ts}.png"), img)
    scene = Scene.load(import_scene("arkitscenes", vdir, tmp_path / "out", options={"sky_direction": "Left"},
                                    video_from_frames=True))
    assert scene.image_size == (192, 256) and count_frames(scene.path(scene.video)) == 3
    frame = next(read_frames(scene.path(scene.video), [0]))
    v, u = np.unravel_index(np.argmax(frame.sum(axis=2)), frame.shape[:2])
    assert abs(u - (192 - 1 - 10)) <= 4 and abs(v - 20) <= 4


def test_every_frame_source_fills_relied_on(tmp_path):
    """provenance.json's relied_on names what each adapter assumes (docs/adapters.md); never empty."""
    from test_adapters_arkitscenes import write_arkit_video
    from test_adapters_embodiedscan import write_infos
    from test_adapters_scannet import write_scannet_scan
    from test_adapters_scannetpp import write_scannetpp_scene

    cases = {"scannet": (write_scannet_scan(tmp_path / "s"), {}),
             "arkitscenes": (write_arkit_video(tmp_path / "a"), {}),
             "scannetpp": (write_scannetpp_scene(tmp_path / "p"), {}),
             "embodiedscan": (write_infos(tmp_path / "e"), {"scene": "scene0000_00",
                                                            "data_root": str(tmp_path / "e" / "scannet")})}
    for name, (path, opts) in cases.items():
        out = tmp_path / f"out-{name}"
        import_scene(name, path, out, options=opts)
        relied = json.loads((out / "provenance.json").read_text())["relied_on"]
        assert relied and all(isinstance(r, str) and len(r) > 20 for r in relied), name


def test_scannetpp_extracted_frames_are_resized_to_image_size(tmp_path):
    """ScanNet++: iphone/rgb/frame_NNNNNN.jpg (here 480x360) resized to image_size 240x180; with
    frame_step=2, iPhone frames 0 and 2 are decoded frames 0 and 1 (1 and 3 are left out)."""
    from test_adapters_scannetpp import write_scannetpp_scene

    scene_dir = write_scannetpp_scene(tmp_path)
    (scene_dir / "iphone" / "rgb").mkdir()
    colours = {0: (200, 30, 30), 1: (30, 200, 30), 2: (30, 30, 200), 3: (220, 220, 40)}
    for n, rgb in colours.items():
        img = np.empty((360, 480, 3), np.uint8)
        img[:] = rgb[::-1]
        cv2.imwrite(str(scene_dir / "iphone" / "rgb" / f"frame_{n:06d}.jpg"), img)
    scene = Scene.load(import_scene("scannetpp", scene_dir, tmp_path / "out", video_from_frames=True,
                                    options={"frame_step": 2, "image_size": "240x180"}))
    video = scene.path(scene.video)
    assert count_frames(video) == 2 and scene.image_size == (240, 180)
    assert next(read_frames(video, [0])).shape == (180, 240, 3)
    np.testing.assert_allclose(_mean_rgb(video, 2), [colours[0], colours[2]], atol=6)


def test_embodiedscan_posed_images_keep_their_frame_numbers(tmp_path):
    """EmbodiedScan's posed images 00000.jpg and 00010.jpg: an 11-frame video, frames 1..9 repeat
    frame 0, and the warning names the repeat without an option EmbodiedScan does not have."""
    from test_adapters_embodiedscan import write_infos

    infos = write_infos(tmp_path)
    posed = tmp_path / "scannet" / "posed_images" / "scene0000_00"
    cv2.imwrite(str(posed / "00010.jpg"), np.full((480, 640, 3), 200, np.uint8))
    out = tmp_path / "out"
    scene = Scene.load(import_scene("embodiedscan", infos, out, video_from_frames=True,
                                    options={"scene": "scene0000_00", "data_root": str(tmp_path / "scannet")}))
    assert count_frames(scene.path(scene.video)) == 11
    np.testing.assert_allclose(_mean_rgb(scene.path(scene.video), 11)[:, 0], [0] * 10 + [200], atol=6)
    rec = json.loads((out / "provenance.json").read_text())["video_from_frames"]
    assert rec["held"] == [[1, 9]] and "every 10th frame" in rec["warning"] and "frame_step" not in rec["warning"]


# ---------------------------------------------------------------------------------------
# held frames are their photo: a strided export gives the unstrided export's ground truth
# ---------------------------------------------------------------------------------------
STRIDE, LAST = 10, 40


def write_walk(root: Path, keep=lambda n: True) -> Path:
    """The real ScanNet sample (tests/test_real_scannet.py) as a SensReader export of a 41-frame walk:
    frame n's pose slerps through the real poses of photos 0, 11 and 102 (at n = 0, 20, 40), its
    depth is the real vertices z-buffered into that view, its photo the nearest real one (content
    does not enter ground truth). Only the frames ``keep(n)`` are written (SensReader's frame_skip)."""
    from scipy.spatial.transform import Rotation, Slerp
    from test_real_scannet import DATA, DEPTH_SIZE, INST, infos, splat_depth, write_scan

    scan = write_scan(root)
    d = infos()
    for sub in ("color", "pose", "depth"):
        for p in (scan / sub).iterdir():
            p.unlink()
    keys = np.asarray(d["extrinsics"], float)
    slerp = Slerp([0, 20, 40], Rotation.from_matrix(keys[:, :3, :3]))
    k_depth = np.loadtxt(scan / "intrinsic" / "intrinsic_depth.txt")
    align = d["annos"]["axis_align_matrix"]
    vert = np.load(INST / "scene0000_00_vert_all.npy")[:, :3].astype(float)
    raw = vert @ np.linalg.inv(align)[:3, :3].T + np.linalg.inv(align)[:3, 3]
    for n in range(LAST + 1):
        if not keep(n):
            continue
        pose = np.eye(4)
        pose[:3, :3] = slerp([n]).as_matrix()[0]
        pose[:3, 3] = [np.interp(n, [0, 20, 40], keys[:, i, 3]) for i in range(3)]
        _txt(scan / "pose" / f"{n}.txt", pose)
        cv2.imwrite(str(scan / "depth" / f"{n}.png"),
                    np.round(splat_depth(raw, pose, k_depth, DEPTH_SIZE) * 1000).astype(np.uint16))
        shutil.copy(DATA / d["img_paths"][min(2, round(n / 20))], scan / "color" / f"{n}.jpg")
    return scan


@pytest.mark.slow  # two imports and two runs
def test_strided_export_gives_the_unstrided_ground_truth_on_the_same_photos(tmp_path, monkeypatch):
    """Every 10th frame of the walk (photos 0, 10, 20, 30, 40; frames between held) against every
    frame of it, each imported with --video-from-frames and its visibility computed on its own
    (depth occlusion, the scan's depth images): each held frame sees exactly what its photo sees
    in the unstrided scene (each photo's row computed once, not once per held frame); and at budgets
    8, 16 and all, every size question's ground truth on the strided video equals the unstrided
    scene's with only the photos that video shows valid."""
    from vistest.budget.truth import budget_truth
    from vistest.questions import parse_questions
    from vistest.visibility import raster
    from vistest.visibility.table import compute_visibility

    full = Scene.load(import_scene("scannet", write_walk(tmp_path / "full"), tmp_path / "a", video_from_frames=True))
    strided = Scene.load(import_scene("scannet", write_walk(tmp_path / "strided", lambda n: n % STRIDE == 0),
                                      tmp_path / "b", video_from_frames=True))
    assert count_frames(strided.path(strided.video)) == LAST + 1
    assert [f.index for f in strided.frames] == list(range(LAST + 1)) and all(f.valid for f in strided.frames)
    photo = [STRIDE * (n // STRIDE) for n in range(LAST + 1)]
    vf = compute_visibility(full, occlusion="depth")
    kernel, computed = raster.visibility_kernel, []
    monkeypatch.setattr(raster, "visibility_kernel", lambda w2c, *a: (computed.append(len(w2c)), kernel(w2c, *a))[1])
    vs = compute_visibility(strided, occlusion="depth")
    monkeypatch.setattr(raster, "visibility_kernel", kernel)
    assert sum(computed) == LAST // STRIDE + 1  # the photos' frames, not 41
    assert list(vs.frame_index) == list(range(LAST + 1))
    for name in ("visible", "evidence", "projected"):
        np.testing.assert_array_equal(getattr(vs, name), getattr(vf, name)[photo], err_msg=name)
    seen = vs.visible > 0.05  # ReVSI's rule: no held frame unseen where its photo sees the object
    held = [n for n in range(LAST + 1) if n % STRIDE]
    assert seen[held].sum() > 0 and (seen[held] == seen[photo][held]).all()
    print(f"strided walk: {seen[held].sum()} (held frame, object) sightings; {seen.any(0).sum()} objects seen")

    rows = [json.dumps({"id": i, "scene_id": full.scene_id, "question_type": "object_size_estimation",
                        "question": "?", "objects": [o.id], "ground_truth": 100}) for i, o in enumerate(full.objects)]
    questions = parse_questions(rows)
    got = budget_truth(strided, vs, questions, TruthConfig(budgets=(8, 16, "all")))
    statuses = set()
    for sel in got.selections:
        shown = sorted({photo[n] for n in sel.frame_indices})
        restricted = replace(full, frames=tuple(f if f.index in shown else replace(f, camera_to_world=None)
                                                for f in full.frames))
        want = budget_truth(restricted, compute_visibility(restricted, occlusion="depth"), questions,
                                                           TruthConfig(budgets=("all",)))
        mine = [it for it in got.items if it.selection is sel]
        assert len(mine) == len(want.items) == len(questions)
        for a, b in zip(mine, want.items):
            assert (a.status, a.ground_truth, a.unseen) == (b.status, b.ground_truth, b.unseen), \
                (sel.budget, a.question.id)
            assert sorted({photo[n] for n in a.evidence_frames}) == sorted(b.evidence_frames)
            statuses.add(a.status)
    assert statuses == {"kept", "unanswerable"}


@pytest.mark.slow  # the real sample imported as a 103-frame video (held frames by hand: the tests below)
def test_audit_reads_each_photo_once(tmp_path):
    """The real sample's photos 0, 11 and 102 as a 103-frame video: 100 held frames carry a photo's
    pose, depth and image, and the audit still reads three observations (and passes as it does
    without the video, tests/test_real_scannet.py)."""
    from test_real_scannet import FRAMES, write_scan
    from vistest.audit.scene import CheckParams, _audit_frames, audit_scene

    scene = Scene.load(import_scene("scannet", write_scan(tmp_path), tmp_path / "scene", video_from_frames=True))
    assert len(scene.frames) == 103 and all(f.valid for f in scene.frames)
    assert [f.index for f in _audit_frames(scene, CheckParams())] == list(FRAMES)
    r = audit_scene(scene, use_depth=False, params=CheckParams())
    assert r.passed and r.best == "as given", r.text()


def test_held_frames_carry_their_photos_validity():
    """vistest.datasets.framevideo.held_frames by hand: photos at 1 (valid pose), 3 (lost tracking) and
    6 (no pose file); own pose files at 0 (black), 2, 4 and 7. Frame 0: black, its pose made invalid;
    2: photo 1's pose (its own replaced); 4, 5: photo 3's lost tracking (invalid, no new invalidation
    listed for 5, which had no pose file); 6: no entry (a photo without a pose); 7: held frame of
    photo 6, its own pose made invalid."""
    from vistest.datasets.framevideo import held_frames, plan
    from vistest.scene import Frame

    def pose(x):
        m = np.eye(4)
        m[0, 3] = x
        return m

    frames = (Frame(0, 0.0, pose(0)), Frame(1, 0.1, pose(1)), Frame(2, 0.2, pose(2)), Frame(3, 0.3, None),
              Frame(4, 0.4, pose(4)), Frame(7, 0.7, pose(7)))
    shown, held, black = plan({1: "1.jpg", 3: "3.jpg", 6: "6.jpg"}, 7)
    assert shown == [None, 1, 1, 3, 3, 3, 6, 6] and held == [2, 4, 5, 7] and black == [0]
    out, invalid, posed = held_frames(frames, shown, fps=10.0)
    assert [f.index for f in out] == [0, 1, 2, 3, 4, 5, 7]
    assert [f.valid for f in out] == [False, True, True, False, False, False, False]
    assert out[2].camera_to_world[0, 3] == 1.0 and out[2].time == pytest.approx(0.2)
    assert out[5].time == pytest.approx(0.5)  # photo 3's time + 2 frames at 10 frames/s
    assert invalid == [0, 7] and posed == 1


def test_a_gap_above_ten_seconds_is_refused_unless_allowed(tmp_path):
    """Issue #35: a stray color/9999999.jpg made --video-from-frames encode ten million held frames
    (still running after 150 s). A gap of more than MAX_HELD_S (10 s at the scene's 30 fps: 300
    frames) is refused before anything is written, naming the image after it; --allow-frame-gaps
    encodes it."""
    from vistest.datasets.framevideo import MAX_HELD_S

    assert MAX_HELD_S == 10.0
    scan = write_colour_export(tmp_path)
    stray = scan / "color" / "9999999.jpg"
    stray.write_bytes((scan / "color" / "7.jpg").read_bytes())
    out = tmp_path / "o1"
    res = CliRunner().invoke(cli, ["import", "scannet", str(scan), "-o", str(out), "--boxes", "none",
                                   "--video-from-frames", "--quiet"])
    assert res.exit_code == 2, res.output
    assert res.output.startswith(f"Error: {stray}: frame 9999999 comes 9999991 frames after the previous image "
                                 f"({scan / 'color' / '7.jpg'}, frame 7), all holding it: 333333.0 s at 30 fps; "
                                 f"expected gaps of at most 10 s (300 frames) for --video-from-frames: remove a stray "
                                 f"image, or pass --allow-frame-gaps to encode the gap"), res.output
    assert not (out / "video.mp4").exists() and not (out / "scene.json").exists()
    # 301 held frames (10.03 s) are refused, 300 (10 s) are not; the option lets the longer gap through
    stray.unlink()
    for n, ok in ((309, False), (308, True)):
        (scan / "color" / f"{n}.jpg").write_bytes((scan / "color" / "7.jpg").read_bytes())
        try:
            import_scene("scannet", scan, tmp_path / f"g{n}", boxes="none", video_from_frames=True)
            assert ok, n
        except AdapterError as e:
            assert not ok and f"frame {n} comes 301 frames after the previous image" in str(e), e
        (scan / "color" / f"{n}.jpg").unlink()
    (scan / "color" / "309.jpg").write_bytes((scan / "color" / "7.jpg").read_bytes())
    path = import_scene("scannet", scan, tmp_path / "allowed", boxes="none", video_from_frames=True,
                        allow_frame_gaps=True)
    assert count_frames(Scene.load(path).path("video.mp4")) == 310
    # posed frames far past the last image are held frames too: named by the scan
    (scan / "color" / "309.jpg").unlink()
    pose = np.eye(4)
    _txt(scan / "pose" / "5000.txt", pose)
    with pytest.raises(AdapterError, match=r"frame 5000 has a pose, 4993 frames after the last image .*7\.jpg, "
                                           r"frame 7\), all holding it: 166\.4 s at 30 fps"):
        import_scene("scannet", scan, tmp_path / "o2", boxes="none", video_from_frames=True)
