"""ScanNet++ iPhone captures.

PATH is a scene folder ``data/{scene_id}/`` holding:

* ``iphone/pose_intrinsic_imu.json``: ``{"frame_000000": {"aligned_pose": 4x4,
  "intrinsic": 3x3, "pose": ..., "timestamp": ..., "imu": ...}, ...}``, one entry per
  frame of the 60 fps ``rgb.mkv``; ``aligned_pose`` is camera-to-world in the world of
  ``scans/mesh_aligned_0.05.ply``; ``intrinsic`` is for the 1920x1440 RGB frames;
* ``iphone/depth/frame_000000.png`` (optional): uint16 millimetres, 256x192
  (``prepare_iphone_data.extract_depth``), registered to the RGB camera;
* ``scans/segments_anno.json``: ``segGroups[]`` with ``objectId``, ``label`` and
  ``obb`` = ``{centroid, axesLengths, normalizedAxes}``, R = ``reshape(3,3).T``
  (``semantic/prep/semantics_2d.py`` builds ``OrientedBoundingBox(c, reshape(3,3).T, size)``);
* ``scans/mesh_aligned_0.05.ply`` (optional).

``frame_step``: keep every N-th iPhone frame (2 for a 30 fps video made of every 2nd
frame); the scene's frame ``index`` = iPhone frame number // N and ``fps`` = 60 / N.
``image_size``: the size of the video's frames; the intrinsics are scaled to it.
Relied on (not stated in the scannetpp toolkit): ``aligned_pose`` uses OpenCV camera
axes (x right, y down, z forward); ``vistest audit`` tests the OpenGL alternative.
"""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..progress import progress_bar
from ..scene import DepthSpec, Frame
from . import common as c
from .room import ROOM_OPTIONS, capture_room

CAPTURE_FPS = 60.0
RGB_SIZE = (1920, 1440)
_FRAME = re.compile(r"^frame_(\d+)$")


def read_capture(path: Path, opts: dict, out_dir: Path, progress: bool = False) -> c.Capture:
    """Frames from ``pose_intrinsic_imu.json`` (+ depth PNGs), mesh and ``segments_anno.json`` boxes."""
    pij = path / "iphone" / "pose_intrinsic_imu.json"
    doc = c.read_json(pij, "pose_intrinsic_imu")
    if not isinstance(doc, dict) or not doc:
        raise c.AdapterError(f"{pij}: expected an object {{'frame_000000': {{aligned_pose, intrinsic}}, ...}}")
    step = opts.get("frame_step", 1)
    size = opts.get("image_size", RGB_SIZE)
    key = opts.get("pose_key", "aligned_pose")
    sx, sy = size[0] / RGB_SIZE[0], size[1] / RGB_SIZE[1]
    frames, cams = [], []
    numbered = []
    for name in doc:
        m = _FRAME.match(name)
        if not m:
            raise c.AdapterError(f"{pij}: {name!r}: expected keys frame_NNNNNN")
        numbered.append((int(m.group(1)), name))
    fps = opts.get("fps", CAPTURE_FPS / step)
    with progress_bar(len(numbered), f"ScanNet++ {path.name}", enabled=progress) as bar:
        for n, name in sorted(numbered):
            bar.update(1)
            if n % step:
                continue
            rec = doc[name]
            where = f"{pij}: {name}"
            if not isinstance(rec, dict) or key not in rec or "intrinsic" not in rec:
                raise c.AdapterError(f"{where}: expected fields {key} (4x4) and intrinsic (3x3)")
            try:
                raw = np.asarray(rec[key], float).reshape(4, 4)
            except (TypeError, ValueError):
                raise c.AdapterError(f"{where}.{key}: expected a 4x4 matrix, got {rec[key]!r}") from None
            pose = c.pose_or_invalid(raw, f"{where}.{key}")
            k = c.intrinsics_from_matrix(c.matrix(rec["intrinsic"], (3, 3), f"{where}.intrinsic"))
            if (sx, sy) != (1.0, 1.0):
                k = k.scaled(sx, sy)
            depth = path / "iphone" / "depth" / f"{name}.png"
            frames.append(Frame(index=n // step, time=(n // step) / fps, camera_to_world=pose, intrinsics=k,
                                depth=str(depth) if depth.is_file() else None))
            cams.append(k)
    if not frames:
        raise c.AdapterError(f"{pij}: no frame left with frame_step={step}")
    camera = cams[0]
    frames = [f if f.intrinsics != camera else replace(f, intrinsics=None) for f in frames]
    first_depth = next((f.depth for f in frames if f.depth), None)
    depth = DepthSpec(scale=1000.0, image_size=c.image_size_of(first_depth)) if first_depth else None
    mesh = path / "scans" / "mesh_aligned_0.05.ply"
    anno = path / "scans" / "segments_anno.json"
    room, room_note = capture_room(mesh if mesh.is_file() else None, opts)
    rgb = {}
    for p in (path / "iphone" / "rgb").glob("frame_*.jpg"):
        m = _FRAME.match(p.stem)
        if m and int(m.group(1)) % step == 0:
            rgb[int(m.group(1)) // step] = str(p)
    color = c.ColorFrames(images=tuple(sorted(rgb.items())), resize=True,
                          pattern=str(path / "iphone" / "rgb" / "frame_NNNNNN.jpg (extracted from rgb.mkv)"))
    return c.Capture(
        dataset="scannetpp", scene_id=opts.get("scene", path.name), source=f"ScanNet++ iPhone {pij}", fps=fps,
        image_size=size, camera=camera, frames=tuple(frames), depth=depth, mesh=str(mesh) if mesh.is_file() else None,
        boxes=read_annotation(anno) if anno.is_file() else None, color=color,
        relied_on=("ScanNet++ aligned_pose: camera-to-world with OpenCV camera axes in the mesh_aligned world "
                   "(third-party loaders use it so; the scannetpp toolkit does not say)",
                   "ScanNet++ intrinsic: for the 1920x1440 RGB frames of rgb.mkv"),
        extra={"frame_step": step, "pose_key": key, "room": room_note}, room=room)


def read_annotation(path: Path) -> c.BoxSet:
    """``segments_anno.json``: one oriented box per ``segGroups[]`` entry (mesh_aligned world)."""
    doc = c.read_json(path, "ScanNet++ segments_anno")
    groups = doc.get("segGroups") if isinstance(doc, dict) else None
    if not isinstance(groups, list):
        raise c.AdapterError(f"{path}: segGroups: expected a list of objects")
    objects = []
    for i, g in enumerate(groups):
        where = f"{path}: segGroups[{i}].obb"
        box = c.obb_box(g.get("obb") if isinstance(g, dict) else None, where)
        objects.append(c.SceneObject(str(g.get("objectId", g.get("id", i))), str(g.get("label", "object")), *box))
    return c.BoxSet(objects=tuple(objects), boxes_to_world=np.eye(4), world="scannet++ mesh_aligned world",
                    source=f"ScanNet++ {path.name}")


def _adapter():
    from .registry import Importer, Option

    return Importer(kind="scene",
        name="scannetpp", title="ScanNet++ iPhone (pose_intrinsic_imu.json, depth PNGs, segments_anno.json)",
        reads=frozenset({"frames", "poses", "intrinsics", "depth", "mesh", "boxes", "room"}),
        path_help="a scene folder data/{scene_id}/ with iphone/ and scans/",
        options=(Option("frame_step", "keep every N-th iPhone frame; 2 for a 30 fps video (default 1)", c.positive_int),
                 Option("fps", "frames per second of the video (default 60 / frame_step)", c.positive_float),
                 Option("image_size", "WxH of the video frames; intrinsics are scaled from 1920x1440", c.size_wh),
                 Option("pose_key", "pose field to read (default aligned_pose)", c.text),
                 Option("scene", "scene id (default: the folder name)", c.scene_id))
        + tuple(Option(*o) for o in ROOM_OPTIONS),
        read_capture=read_capture,
        read_boxes=lambda p, cap, o: read_annotation(p if p.suffix == ".json" else p / "scans" / "segments_anno.json"))


IMPORTER = _adapter()
