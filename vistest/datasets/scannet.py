"""ScanNet v2: a SensReader export plus the scan's annotation files.

PATH is one scan folder ``sceneXXXX_XX/`` holding (SensReader ``reader.py`` with
``--export_color_images --export_depth_images --export_poses --export_intrinsics``):

* ``color/{i}.jpg`` (1296x968) and ``depth/{i}.png`` (640x480, uint16, depth_shift
  1000 = millimetres); ``i`` is the frame number in the ``.sens`` file;
* ``pose/{i}.txt``: camera-to-world 4x4 (``RGBDFrame.camera_to_world``), raw scan
  world, OpenCV axes; lost tracking is written as all ``-inf`` -> invalid frame;
* ``intrinsic/intrinsic_color.txt`` and ``intrinsic_depth.txt`` (4x4): the colour
  and depth cameras differ; each is used for the images it belongs to;
* ``sceneXXXX_XX.txt``: ``key = value`` lines; ``axisAlignment`` = 16 numbers,
  row-major, raw scan world -> axis-aligned world (test scenes have none);
* ``sceneXXXX_XX_vh_clean_2.ply`` (raw world), ``..._vh_clean_2.0.010000.segs.json``
  (``segIndices``: segment of each vertex) and ``sceneXXXX_XX.aggregation.json``
  (``segGroups``: objectId, label, segments).

Native boxes: per object, the axis-aligned box of its vertices in the axis-aligned
world (votenet/mmdetection3d convention), so ``boxes_to_world = inverse(axisAlignment)``;
without ``axisAlignment`` the boxes are axis-aligned in the raw world (identity).
Frame ``index`` = the ``.sens`` frame number (``frame_step`` N: keep every N-th, index
= number // N); ``fps`` defaults to 30 / N (ScanNet's capture rate).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from ..progress import progress_bar
from ..scene import DepthSpec, Frame
from . import common as c
from ..geometry import rigid_inverse

DEFAULT_SKIP = frozenset({"wall", "floor", "ceiling"})
CAPTURE_FPS = 30.0


def read_info(path: Path) -> dict[str, str]:
    """The ``sceneXXXX_XX.txt`` meta file as ``{key: value}`` (lines ``key = value``)."""
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise c.AdapterError(f"{path}: cannot read scan info ({e.strerror})") from None
    out = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise c.AdapterError(f"{path}: line {n}: expected 'key = value', got {line!r}")
        out[key.strip()] = value.strip()
    return out


def axis_alignment(info: dict[str, str], path: Path) -> np.ndarray | None:
    """``axisAlignment`` (raw -> axis-aligned world, 4x4 row-major) or None if absent."""
    if "axisAlignment" not in info:
        return None
    try:
        vals = [float(x) for x in info["axisAlignment"].split()]
    except ValueError:
        raise c.AdapterError(f"{path}: axisAlignment: expected 16 numbers, got {info['axisAlignment']!r}") from None
    if len(vals) != 16:
        raise c.AdapterError(f"{path}: axisAlignment: expected 16 numbers, got {len(vals)}")
    m = np.array(vals).reshape(4, 4)
    if c.pose_or_invalid(m, f"{path}: axisAlignment") is None:
        raise c.AdapterError(f"{path}: axisAlignment: expected finite numbers")
    return m


def _numbered(folder: Path, suffix: str) -> dict[int, Path]:
    """``{n: path}`` for files ``{n}{suffix}`` in ``folder`` (SensReader names)."""
    out = {}
    if folder.is_dir():
        for p in folder.iterdir():
            if p.name.endswith(suffix) and p.name[: -len(suffix)].isdigit():
                out[int(p.name[: -len(suffix)])] = p
    return out


def _size(info: dict, key_w: str, key_h: str, image: Path | None, default: tuple[int, int] | None,
          where: Path) -> tuple[int, int]:
    if key_w in info and key_h in info:
        return int(float(info[key_w])), int(float(info[key_h]))
    if image is not None:
        return c.image_size_of(image)
    if default is not None:
        return default
    raise c.AdapterError(f"{where}: {key_w}/{key_h}: missing, and no image to read the size from")


def read_capture(path: Path, opts: dict, out_dir: Path, progress: bool = False) -> c.Capture:
    """Frames, cameras, depth, mesh and native boxes of one ScanNet scan folder."""
    scene_id = opts.get("scene", path.name)
    info_path = path / f"{scene_id}.txt"
    info = read_info(info_path) if info_path.is_file() else {}
    align = axis_alignment(info, info_path)
    poses = _numbered(path / "pose", ".txt")
    if not poses:
        raise c.AdapterError(f"{path / 'pose'}: expected SensReader pose files pose/{{i}}.txt")
    colors, depths = _numbered(path / "color", ".jpg"), _numbered(path / "depth", ".png")
    k_color = c.intrinsics_from_matrix(c.read_matrix_txt(path / "intrinsic" / "intrinsic_color.txt"))
    k_depth = c.intrinsics_from_matrix(c.read_matrix_txt(path / "intrinsic" / "intrinsic_depth.txt"))
    first = min(poses)
    color_size = _size(info, "colorWidth", "colorHeight", colors.get(first), (1296, 968), info_path)
    depth_size = _size(info, "depthWidth", "depthHeight", depths.get(first), (640, 480), info_path)
    images = opts.get("images", "color")
    camera, image_size = (k_color, color_size) if images == "color" else (k_depth, depth_size)
    step = opts.get("frame_step", 1)
    fps = opts.get("fps", CAPTURE_FPS / step)
    frames = []
    with progress_bar(len(poses), f"ScanNet {scene_id}", enabled=progress) as bar:
        for n in sorted(poses):
            bar.update(1)
            if n % step:
                continue
            m = c.read_matrix_txt(poses[n], allow_neg_inf=True)
            pose = c.pose_or_invalid(m, str(poses[n]))
            d = str(depths[n]) if n in depths else None
            frames.append(Frame(index=n // step, time=(n // step) / fps, camera_to_world=pose, depth=d))
    depth = DepthSpec(scale=opts.get("depth_scale", 1000.0), image_size=depth_size, camera=k_depth) if depths else None
    mesh = path / f"{scene_id}_vh_clean_2.ply"
    capture = c.Capture(
        dataset="scannet", scene_id=scene_id, source=f"ScanNet SensReader export {path}", fps=fps,
        image_size=image_size, camera=camera, frames=tuple(frames), depth=depth,
        mesh=str(mesh) if mesh.is_file() else None,
        alignments=((("scannet axisAlignment (raw scan world -> axis-aligned world)", align),)
                    if align is not None else ()),
        extra={"images": images, "frame_step": step, "axisAlignment": "present" if align is not None else "absent"})
    boxes = native_boxes(path, scene_id, align, opts.get("skip_labels", DEFAULT_SKIP))
    return replace(capture, boxes=boxes)


def native_boxes(path: Path, scene_id: str, align: np.ndarray | None, skip: frozenset) -> c.BoxSet | None:
    """Boxes from ``.aggregation.json`` + ``_vh_clean_2.0.010000.segs.json`` + ``_vh_clean_2.ply``.

    Each object is the axis-aligned box of its vertices in the axis-aligned world
    (raw world when the scan has no ``axisAlignment``). Labels in ``skip`` (case-
    insensitive; default wall, floor, ceiling) are left out. None if a file is missing.
    """
    agg_path = path / f"{scene_id}.aggregation.json"
    seg_path = path / f"{scene_id}_vh_clean_2.0.010000.segs.json"
    mesh_path = path / f"{scene_id}_vh_clean_2.ply"
    if not (agg_path.is_file() and seg_path.is_file() and mesh_path.is_file()):
        return None
    agg = c.read_json(agg_path, "aggregation")
    segs = c.read_json(seg_path, "segments")
    if not isinstance(segs, dict) or not isinstance(segs.get("segIndices"), list):
        raise c.AdapterError(f"{seg_path}: segIndices: expected a list (segment id of each vertex)")
    if not isinstance(agg, dict) or not isinstance(agg.get("segGroups"), list):
        raise c.AdapterError(f"{agg_path}: segGroups: expected a list of objects")
    seg_of_vertex = np.asarray(segs["segIndices"], np.int64)
    verts = c.mesh_vertices(mesh_path)
    if len(verts) != len(seg_of_vertex):
        raise c.AdapterError(f"{seg_path}: segIndices has {len(seg_of_vertex)} entries, expected one per vertex of "
                             f"{mesh_path.name} ({len(verts)})")
    a = align if align is not None else np.eye(4)
    verts_box_world = verts @ a[:3, :3].T + a[:3, 3]
    objects = []
    for i, g in enumerate(agg["segGroups"]):
        where = f"{agg_path}: segGroups[{i}]"
        if not isinstance(g, dict) or "label" not in g or "segments" not in g:
            raise c.AdapterError(f"{where}: expected an object with label, segments and objectId")
        if str(g["label"]).lower() in skip:
            continue
        mask = np.isin(seg_of_vertex, np.asarray(g["segments"], np.int64))
        if not mask.any():
            raise c.AdapterError(f"{where}.segments: no vertex of {mesh_path.name} belongs to these segments")
        oid = str(g.get("objectId", g.get("id", i)))
        objects.append(c.aabb_object(oid, str(g["label"]), verts_box_world[mask]))
    world = "scannet axis-aligned world" if align is not None else "scannet raw scan world (no axisAlignment)"
    return c.BoxSet(objects=tuple(objects), boxes_to_world=rigid_inverse(a), world=world,
                    source=f"ScanNet aggregation {agg_path.name} + {seg_path.name}")


ADAPTER_OPTIONS = (
    ("scene", "scan id (default: the folder name)", c.text),
    ("images", "which images the frames are: color (default, 1296x968, intrinsic_color) or depth "
               "(640x480, intrinsic_depth)", c.choice("color", "depth")),
    ("frame_step", "keep every N-th .sens frame; index = number // N (default 1)", c.positive_int),
    ("fps", "frames per second of the video the indices refer to (default 30 / frame_step)", c.positive_float),
    ("depth_scale", "depth PNG units per metre (default 1000)", c.positive_float),
    ("skip_labels", "comma-separated labels left out of the native boxes (default wall,floor,ceiling)", c.label_list),
)


def _adapter():
    from . import Adapter, Option

    return Adapter(name="scannet", title="ScanNet v2 (SensReader export + aggregation/segs annotation)",
                   reads=frozenset({"frames", "poses", "intrinsics", "depth", "mesh", "boxes"}),
                   path_help="a scan folder sceneXXXX_XX/ with color/, depth/, pose/, intrinsic/",
                   options=tuple(Option(*o) for o in ADAPTER_OPTIONS), read_capture=read_capture,
                   read_boxes=lambda p, cap, o: read_capture(p, o, p).boxes)


ADAPTER = _adapter()
