"""ScanNet v2: a SensReader export plus the scan's annotation files.

PATH is one scan folder (any name) holding (SensReader ``reader.py`` with
``--export_color_images --export_depth_images --export_poses --export_intrinsics``):

* ``color/{i}.jpg`` (1296x968) and ``depth/{i}.png`` (640x480, uint16, depth_shift
  1000 = millimetres); ``i`` is the frame number in the ``.sens`` file;
* ``pose/{i}.txt``: camera-to-world 4x4 (``RGBDFrame.camera_to_world``), raw scan
  world, OpenCV axes; lost tracking is written as all ``-inf`` -> invalid frame;
* ``intrinsic/intrinsic_color.txt`` and ``intrinsic_depth.txt`` (4x4): the colour
  and depth cameras differ; each is used for the images it belongs to (``intrinsic_depth.txt``
  is needed only with depth images or ``images=depth``: a colour-only export has none);
* ``sceneXXXX_XX.txt``: ``key = value`` lines; ``axisAlignment`` = 16 numbers,
  row-major, raw scan world -> axis-aligned world (test scenes have none);
* ``sceneXXXX_XX_vh_clean_2.ply`` (raw world), ``..._vh_clean_2.0.010000.segs.json``
  (``segIndices``: segment of each vertex) and ``sceneXXXX_XX.aggregation.json``
  (``segGroups``: objectId, label, segments).

The scan's files are found by what the folder holds (:func:`scan_files`): the scan id is
the prefix of its one ``*_vh_clean_2.ply`` / ``*.aggregation.json`` /
``*_vh_clean_2.0.010000.segs.json`` (or ``-O scene=ID``), so a renamed folder still
imports; several scans in one folder, a partial annotation or names that disagree are
errors, never a silent import without boxes.

Native boxes: per object, the axis-aligned box of its vertices in the axis-aligned
world (votenet/mmdetection3d convention), so ``boxes_to_world = inverse(axisAlignment)``;
without ``axisAlignment`` the boxes are axis-aligned in the raw world (identity).
Frame ``index`` = the ``.sens`` frame number (``frame_step`` N: keep every N-th, index
= number // N); ``fps`` defaults to 30 / N (ScanNet's capture rate).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..progress import progress_bar
from ..scene import DepthSpec, Frame
from . import common as c
from ..geometry import rigid_inverse
from .room import ROOM_OPTIONS, capture_room

DEFAULT_SKIP = frozenset({"wall", "floor", "ceiling"})
CAPTURE_FPS = 30.0
RELIED_ON = (
    "ScanNet pose/{i}.txt: camera-to-world with OpenCV camera axes (x right, y down, z forward); the .sens format "
    "does not say, the projection code around ScanNet (e.g. VSI-Bench-style project_single_frame) uses "
    "u = fx x / z + cx with inv(pose); vistest audit tests the OpenGL alternative",
    "ScanNet frame rate 30 frames/s (the capture rate), so fps = 30 / frame_step unless -O fps is given",
    "ScanNet native boxes: the axis-aligned box of each object's _vh_clean_2 vertices in the axis-aligned world "
    "(the votenet / mmdetection3d convention; ScanNet itself annotates segments, not boxes)",
)


def read_info(path: Path) -> dict[str, str]:
    """The ``sceneXXXX_XX.txt`` meta file as ``{key: value}`` (lines ``key = value``)."""
    return c.read_key_values(path, "scan info")


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


MESH_SUFFIX = "_vh_clean_2.ply"
SEGS_SUFFIX = "_vh_clean_2.0.010000.segs.json"
AGG_SUFFIX = ".aggregation.json"
HIRES_AGG_SUFFIX = "_vh_clean.aggregation.json"  # the high-resolution mesh's: not the one paired with _vh_clean_2


@dataclass(frozen=True)
class ScanFiles:
    """The files of one scan found in its folder; None where absent."""

    scene_id: str
    info: Path | None
    mesh: Path | None
    segs: Path | None
    aggregation: Path | None

    @property
    def annotated(self) -> bool:
        return self.aggregation is not None


def scan_files(path: Path, scene: str | None = None) -> ScanFiles:
    """Find the scan's files by what ``path`` holds.

    With ``scene``: ``{scene}.txt``, ``{scene}_vh_clean_2.ply``, ``..._vh_clean_2.0.010000.segs.json``
    and ``{scene}.aggregation.json``. Without: the scan id is the one prefix of the folder's
    ``*_vh_clean_2.ply``, ``*.aggregation.json`` (not ``*_vh_clean.aggregation.json``, which goes
    with the high-resolution mesh) and ``*_vh_clean_2.0.010000.segs.json``; with none of them, the
    one ``*.txt`` holding ``key = value`` lines, else the folder name. Raises AdapterError when
    the folder holds several scans, when those files name different scans, or when the
    annotation is partial (an aggregation without its segments or mesh: boxes need all three).
    """
    def ids(suffix: str, exclude: str | None = None) -> set[str]:
        return {p.name[: -len(suffix)] for p in path.glob(f"*{suffix}")
                if p.is_file() and len(p.name) > len(suffix) and not (exclude and p.name.endswith(exclude))}

    if scene is None:
        found = {"*" + MESH_SUFFIX: ids(MESH_SUFFIX), "*" + AGG_SUFFIX: ids(AGG_SUFFIX, HIRES_AGG_SUFFIX),
                 "*" + SEGS_SUFFIX: ids(SEGS_SUFFIX)}
        every = set().union(*found.values())
        if len(every) > 1:
            listing = "; ".join(f"{k}: {', '.join(sorted(v))}" for k, v in found.items() if v)
            raise c.AdapterError(f"{path}: these ScanNet files name more than one scan ({listing}); "
                                 f"expected one scan per folder, or give -O scene=ID")
        if every:
            scene = every.pop()
        else:
            infos = [p for p in sorted(path.glob("*.txt")) if _looks_like_info(p)]
            if len(infos) > 1:
                raise c.AdapterError(f"{path}: several scan info files ({', '.join(p.name for p in infos)}); "
                                     f"give -O scene=ID")
            scene = infos[0].stem if infos else path.name

    def opt(name: str) -> Path | None:
        p = path / name
        return p if p.is_file() else None

    files = ScanFiles(scene, opt(f"{scene}.txt"), opt(scene + MESH_SUFFIX), opt(scene + SEGS_SUFFIX),
                      opt(scene + AGG_SUFFIX))
    if files.aggregation is not None or files.segs is not None:
        missing = [n for n, p in ((scene + AGG_SUFFIX, files.aggregation), (scene + SEGS_SUFFIX, files.segs),
                                  (scene + MESH_SUFFIX, files.mesh)) if p is None]
        if missing:
            raise c.AdapterError(f"{path}: ScanNet annotation of {scene} is incomplete: missing {', '.join(missing)} "
                                 f"(boxes need the aggregation, its segments and the _vh_clean_2 mesh)")
    return files


def _looks_like_info(p: Path) -> bool:
    """Is ``p`` a ``sceneXXXX_XX.txt`` meta file (``key = value`` lines with a known key)?"""
    try:
        head = p.read_text(errors="replace")[:4096]
    except OSError:
        return False
    return any(line.split("=")[0].strip() in ("axisAlignment", "colorWidth", "sceneType", "numColorFrames")
               for line in head.splitlines() if "=" in line)


def read_capture(path: Path, opts: dict, out_dir: Path, progress: bool = False) -> c.Capture:
    """Frames, cameras, depth, mesh and native boxes of one ScanNet scan folder."""
    if not path.is_dir():
        raise c.AdapterError(f"{path}: expected a ScanNet scan folder (SensReader export + annotation)")
    files = scan_files(path, opts.get("scene"))
    scene_id = files.scene_id
    info = read_info(files.info) if files.info is not None else {}
    info_path = files.info or path / f"{scene_id}.txt"
    align = axis_alignment(info, info_path)
    poses = _numbered(path / "pose", ".txt")
    if not poses:
        raise c.AdapterError(f"{path / 'pose'}: expected SensReader pose files pose/{{i}}.txt")
    colors, depths = _numbered(path / "color", ".jpg"), _numbered(path / "depth", ".png")
    images = opts.get("images", "color")
    k_color = c.intrinsics_from_matrix(c.read_matrix_txt(path / "intrinsic" / "intrinsic_color.txt"))
    k_depth = _depth_camera(path, depths, images)
    first = min(poses)
    color_size = _size(info, "colorWidth", "colorHeight", colors.get(first), (1296, 968), info_path)
    depth_size = _size(info, "depthWidth", "depthHeight", depths.get(first), (640, 480), info_path)
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
            img = (colors if images == "color" else depths).get(n)
            frames.append(Frame(index=n // step, time=(n // step) / fps, camera_to_world=pose, depth=d,
                                image=str(img) if img is not None and images == "color" else None))
    depth = DepthSpec(scale=opts.get("depth_scale", 1000.0), image_size=depth_size, camera=k_depth) if depths else None
    room, room_note = capture_room(files.mesh, opts)
    color = c.ColorFrames(images=tuple((n // step, str(p)) for n, p in sorted(colors.items()) if n % step == 0)
                          if images == "color" else (),
                          pattern=str(path / "color" / "{i}.jpg") + ("" if images == "color" else
                                                                     " not used with images=depth: the frames are the "
                                                                     "depth camera's; import with images=color"))
    capture = c.Capture(
        dataset="scannet", scene_id=scene_id, source=f"ScanNet SensReader export {path}", fps=fps,
        image_size=image_size, camera=camera, frames=tuple(frames), depth=depth,
        mesh=str(files.mesh) if files.mesh is not None else None,
        alignments=((("scannet axisAlignment (raw scan world -> axis-aligned world)", align),)
                    if align is not None else ()),
        relied_on=RELIED_ON, color=color,
        extra={"images": images, "frame_step": step, "axisAlignment": "present" if align is not None else "absent",
               "scan_info": files.info.name if files.info is not None else "absent", "room": room_note,
               "intrinsic_depth": "read" if k_depth is not None else "absent (no depth/ folder)"},
        room=room)
    boxes = native_boxes(files, align, opts.get("skip_labels", DEFAULT_SKIP)) if files.annotated else None
    return replace(capture, boxes=boxes)


def _depth_camera(path: Path, depths: dict, images: str):
    """``intrinsic/intrinsic_depth.txt``, or None when the export has no depth (a colour-only
    export need not have it); required with depth images or ``images=depth``."""
    p = path / "intrinsic" / "intrinsic_depth.txt"
    if p.is_file():
        return c.intrinsics_from_matrix(c.read_matrix_txt(p))
    if depths or images == "depth":
        why = "images=depth uses the depth camera" if images == "depth" else f"depth/ holds {len(depths)} depth images"
        raise c.AdapterError(f"{p}: not found; expected the depth camera's 4x4 intrinsics ({why})")
    return None


def native_boxes(files: ScanFiles, align: np.ndarray | None, skip: frozenset) -> c.BoxSet:
    """Boxes from ``.aggregation.json`` + ``_vh_clean_2.0.010000.segs.json`` + ``_vh_clean_2.ply``.

    Each object is the axis-aligned box of its vertices in the axis-aligned world
    (raw world when the scan has no ``axisAlignment``); the vertices' object ids go with the
    boxes (``BoxSet.vertex_objects``: scene.json's ``mesh_objects``, for instance visibility). Labels in ``skip`` (case-
    insensitive; default wall, floor, ceiling) are left out; an annotation that leaves
    no object is an error.
    """
    agg_path, seg_path, mesh_path = files.aggregation, files.segs, files.mesh
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
    vertex_objects = np.full(len(verts), "", dtype=object)  # the mesh's per-vertex object ids ("" = none)
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
        vertex_objects[mask & (vertex_objects == "")] = oid  # a vertex in two groups stays with the first
    if not objects:
        raise c.AdapterError(f"{agg_path}: segGroups: no object left ({len(agg['segGroups'])} groups, labels "
                             f"{', '.join(sorted(skip)) or '-'} skipped); expected the scan's annotated objects")
    world = "scannet axis-aligned world" if align is not None else "scannet raw scan world (no axisAlignment)"
    return c.BoxSet(objects=tuple(objects), boxes_to_world=rigid_inverse(a), world=world,
                    source=f"ScanNet aggregation {agg_path.name} + {seg_path.name}",
                    vertex_objects=tuple(vertex_objects.tolist()))


ADAPTER_OPTIONS = (
    ("scene", "scan id (default: the prefix of the folder's *_vh_clean_2.ply / *.aggregation.json, else "
              "the folder name)", c.scene_id),
    ("images", "which images the frames are: color (default, 1296x968, intrinsic_color) or depth "
               "(640x480, intrinsic_depth)", c.choice("color", "depth")),
    ("frame_step", "keep every N-th .sens frame; index = number // N (default 1)", c.positive_int),
    ("fps", "frames per second of the video the indices refer to (default 30 / frame_step)", c.positive_float),
    ("depth_scale", "depth PNG units per metre (default 1000)", c.positive_float),
    ("skip_labels", "comma-separated labels left out of the native boxes (default wall,floor,ceiling)", c.label_list),
) + ROOM_OPTIONS


def _adapter():
    from .registry import Importer, Option

    return Importer(name="scannet", kind="scene",
                    title="ScanNet v2 (SensReader export + aggregation/segs annotation)",
                    reads=frozenset({"frames", "poses", "intrinsics", "depth", "mesh", "boxes", "room"}),
                    path_help="a scan folder with color/, depth/, pose/, intrinsic/ and the scan's files",
                    options=tuple(Option(*o) for o in ADAPTER_OPTIONS), read_capture=read_capture,
                    read_boxes=lambda p, cap, o: read_capture(p, {**o, "room": "none"}, p).boxes)  # boxes only: no room


IMPORTER = _adapter()
