"""ARKitScenes (3DOD / raw layout).

PATH is a video folder ``{video_id}/`` holding ``{video_id}_3dod_annotation.json``,
``{video_id}_3dod_mesh.ply`` and ``{video_id}_frames/`` (or that ``_frames`` folder
itself), which holds:

* ``lowres_wide/{video_id}_{timestamp}.png``: the frames (256x192);
* ``lowres_wide_intrinsics/{video_id}_{timestamp}.pincam``: one line
  ``width height fx fy cx cy`` per frame (``st2_camera_intrinsics``);
* ``lowres_depth/{video_id}_{timestamp}.png``: uint16 millimetres, same size;
* ``lowres_wide.traj``: ``timestamp rx ry rz tx ty tz`` per line, axis-angle (radians)
  and translation of the *world-to-camera* transform; ``TrajStringToMatrix``
  inverts it into camera-to-world, and so do we.

Frames are matched to poses by timestamp: the nearest trajectory sample within
``time_tol`` seconds (default 0.005 s, the tolerance of ``TenFpsDataLoader``); a
frame with none is *invalid* (pose None), never given a neighbour's pose.
Boxes: ``data[].segments.obbAligned`` with ``centroid``, ``axesLengths`` (full
extents) and ``normalizedAxes`` whose rows are the box axes: ``R = reshape(3,3).T``
(``compute_box_3d`` computes ``rotmat.T @ local``). Annotation, mesh and poses share
one world (+Z up: ``rectify_im.decide_pose`` reads the camera's up from row 2 of the pose).

``sky_direction`` (Up/Left/Right/Down, from the dataset's ``metadata.csv``): the
frames are taken as rotated upright the way ``depth_upsampling/dataset.py``
``rotate_image`` does (Left: 90 deg clockwise, Right: counter-clockwise, Down: 180);
intrinsics, image size and poses are rotated with them, and the depth images are
written rotated into ``SCENE_DIR/depth/``. All or nothing: never only some of them.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from ..jsonl import read_text
from ..progress import progress_bar
from ..scene import DepthSpec, Frame, Intrinsics
from . import common as c
from .room import ROOM_OPTIONS, capture_room
from ..geometry import rigid_inverse


RELIED_ON = (
    "ARKitScenes world is +Z up: threedod/README says annotation, mesh and trajectory share one world; the up axis "
    "is inferred from rectify_im.decide_pose, which reads the camera's up from row 2 of the pose",
    "ARKitScenes frame index = the rank of the lowres_wide timestamp, fps = 1 / median frame interval: the video "
    "the indices refer to holds every lowres_wide frame once, in time order",
    "ARKitScenes frames with no trajectory sample within time_tol are invalid (TenFpsDataLoader would reuse the "
    "previous pose)",
)


def traj_pose(line: str, where: str) -> tuple[float, np.ndarray]:
    """(timestamp, camera-to-world 4x4 OpenCV) from one ``lowres_wide.traj`` line."""
    import cv2

    tok = line.split()
    if len(tok) != 7:
        raise c.AdapterError(f"{where}: expected 7 numbers (timestamp, axis-angle 3, translation 3), got {len(tok)}")
    try:
        vals = [float(t) for t in tok]
    except ValueError:
        raise c.AdapterError(f"{where}: expected numbers, got {line.strip()!r}") from None
    w2c = np.eye(4)
    w2c[:3, :3] = cv2.Rodrigues(np.array(vals[1:4]))[0]
    w2c[:3, 3] = vals[4:7]
    return vals[0], rigid_inverse(w2c)


def read_traj(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Timestamps (T,) sorted, and camera-to-world poses (T, 4, 4)."""
    lines = [ln for ln in read_text(path, c.AdapterError, "trajectory").splitlines() if ln.strip()]
    if not lines:
        raise c.AdapterError(f"{path}: trajectory is empty")
    pairs = [traj_pose(ln, f"{path}: line {n}") for n, ln in enumerate(lines, 1)]
    pairs.sort(key=lambda p: p[0])
    return np.array([p[0] for p in pairs]), np.stack([p[1] for p in pairs])


def read_pincam(path: Path) -> tuple[Intrinsics, tuple[int, int]]:
    """``width height fx fy cx cy`` -> (Intrinsics, (W, H))."""
    text = read_text(path, c.AdapterError, ".pincam")
    try:
        vals = [float(x) for x in text.split()]
    except ValueError as e:
        raise c.AdapterError(f"{path}: expected 6 numbers 'width height fx fy cx cy' ({e})") from None
    if len(vals) != 6:
        raise c.AdapterError(f"{path}: expected 6 numbers 'width height fx fy cx cy', got {len(vals)}")
    w, h, fx, fy, cx, cy = vals
    return Intrinsics(fx, fy, cx, cy), (int(w), int(h))


def _stamped(folder: Path, suffix: str) -> dict[float, Path]:
    """``{timestamp: path}`` for ``{video_id}_{timestamp}{suffix}`` files."""
    out = {}
    if folder.is_dir():
        for p in folder.iterdir():
            if p.name.endswith(suffix):
                try:
                    out[float(p.name[: -len(suffix)].rsplit("_", 1)[-1])] = p
                except ValueError:
                    continue
    return out


def nearest(stamps: np.ndarray, t: float, tol: float) -> int | None:
    """Index of the stamp nearest to ``t`` if within ``tol`` seconds, else None."""
    if len(stamps) == 0:
        return None
    i = int(np.searchsorted(stamps, t))
    best = min((j for j in (i - 1, i) if 0 <= j < len(stamps)), key=lambda j: abs(stamps[j] - t))
    return best if abs(stamps[best] - t) <= tol else None


def _layout(path: Path) -> tuple[str, Path, Path]:
    """(video_id, frames folder, video folder) for PATH = video folder or its _frames folder."""
    if (path / "lowres_wide.traj").is_file():
        return path.name.split("_")[0], path, path.parent
    vid = path.name
    frames_dir = path / f"{vid}_frames"
    if not (frames_dir / "lowres_wide.traj").is_file():
        raise c.AdapterError(f"{path}: expected {vid}_frames/lowres_wide.traj (or PATH = the _frames folder)")
    return vid, frames_dir, path


def read_capture(path: Path, opts: dict, out_dir: Path, progress: bool = False) -> c.Capture:
    """Frames (pose matched by timestamp), per-frame intrinsics, depth, mesh, boxes."""
    vid, fdir, vdir = _layout(path)
    stamps, poses = read_traj(fdir / "lowres_wide.traj")
    images = _stamped(fdir / "lowres_wide", ".png")
    if not images:
        raise c.AdapterError(f"{fdir / 'lowres_wide'}: expected frames {vid}_{{timestamp}}.png")
    pincams = _stamped(fdir / "lowres_wide_intrinsics", ".pincam")
    pin_stamps = np.array(sorted(pincams))
    depths = _stamped(fdir / "lowres_depth", ".png")
    tol = opts.get("time_tol", 0.005)
    turn = c.SKY_ROTATION[opts.get("sky_direction", "Up")]
    times = sorted(images)
    fps = opts.get("fps") or (round(1.0 / float(np.median(np.diff(times))), 3) if len(times) > 1 else 10.0)
    frames, cams, size = [], [], None
    with progress_bar(len(times), f"ARKitScenes {vid}", enabled=progress) as bar:
        for i, t in enumerate(times):
            j = nearest(pin_stamps, t, tol)
            if j is None:
                raise c.AdapterError(f"{fdir / 'lowres_wide_intrinsics'}: no .pincam within {tol} s of frame "
                                     f"{images[t].name}")
            k, sz = read_pincam(pincams[pin_stamps[j]])
            k, sz, m = c.rotated_camera(k, sz, turn)
            if size is None:
                size = sz
            elif sz != size:
                raise c.AdapterError(f"{pincams[pin_stamps[j]]}: image size {sz} differs from the first frame's {size}")
            p = nearest(stamps, t, tol)
            pose = poses[p] @ m if p is not None else None
            depth = c.rotated_depth(depths.get(t), i, turn, out_dir)
            frames.append(Frame(index=i, time=t - times[0], camera_to_world=pose, intrinsics=k, depth=depth))
            cams.append(k)
            bar.update(1)
    camera = cams[0]
    frames = [f if f.intrinsics != camera else replace(f, intrinsics=None) for f in frames]
    has_depth = any(f.depth for f in frames)
    mesh = vdir / f"{vid}_3dod_mesh.ply"
    anno = vdir / f"{vid}_3dod_annotation.json"
    room, room_note = capture_room(mesh if mesh.is_file() else None, opts)
    capture = c.Capture(
        dataset="arkitscenes", scene_id=vid, source=f"ARKitScenes {fdir}", fps=fps, image_size=size, camera=camera,
        frames=tuple(frames), depth=DepthSpec(scale=1000.0, image_size=size) if has_depth else None,
        mesh=str(mesh) if mesh.is_file() else None,
        boxes=read_annotation(anno) if anno.is_file() else None, relied_on=RELIED_ON,
        color=c.ColorFrames(images=tuple((i, str(images[t])) for i, t in enumerate(times)),
                            pattern=str(fdir / "lowres_wide" / f"{vid}_{{timestamp}}.png"), turn=turn),
        extra={"sky_direction": opts.get("sky_direction", "Up"), "time_tol_s": tol,
               "frames_without_pose": sum(f.camera_to_world is None for f in frames), "room": room_note},
        room=room)
    return capture


def read_annotation(path: Path) -> c.BoxSet:
    """``{video_id}_3dod_annotation.json``: ``data[].segments.obbAligned`` boxes (pose world)."""
    doc = c.read_json(path, "ARKitScenes annotation")
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        raise c.AdapterError(f"{path}: data: expected a list of boxes")
    objects = []
    for i, d in enumerate(data):
        where = f"{path}: data[{i}].segments.obbAligned"
        seg = d.get("segments") if isinstance(d, dict) else None
        box = c.obb_box(seg.get("obbAligned") if isinstance(seg, dict) else None, where)
        objects.append(c.SceneObject(str(d.get("uid", i)), str(d.get("label", "object")), *box))
    return c.BoxSet(objects=tuple(objects), boxes_to_world=np.eye(4), world="arkitscenes world",
                    source=f"ARKitScenes annotation {path.name}")


def _adapter():
    from .registry import Importer, Option

    return Importer(kind="scene",
        name="arkitscenes", title="ARKitScenes (lowres_wide frames, lowres_wide.traj, .pincam, 3dod annotation)",
        reads=frozenset({"frames", "poses", "intrinsics", "depth", "mesh", "boxes", "room"}),
        path_help="a video folder {video_id}/ with {video_id}_frames/ and {video_id}_3dod_annotation.json",
        options=(Option("time_tol", "largest frame-to-pose timestamp gap in seconds (default 0.005)", c.positive_float),
                 Option("sky_direction", "metadata.csv sky_direction: the frames are rotated upright with K and pose "
                                         "(Up, Left, Right, Down; default Up = no rotation)",
                        c.choice(*c.SKY_DIRECTIONS)),
                 Option("fps", "frames per second of the video (default: from the frame timestamps)",
                        c.positive_float)) + tuple(Option(*o) for o in ROOM_OPTIONS),
        read_capture=read_capture,
        read_boxes=lambda p, cap, o: read_annotation(_annotation_path(p)))


def _annotation_path(path: Path) -> Path:
    if path.suffix == ".json":
        return path
    vid, _, vdir = _layout(path)
    return vdir / f"{vid}_3dod_annotation.json"


IMPORTER = _adapter()
