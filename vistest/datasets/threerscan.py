"""3RScan (``vistest import 3rscan``).

PATH is a scan folder ``{scan_id}/`` as 3RScan's download script writes it, with
``sequence.zip`` unzipped into ``sequence/`` (*WaldJohannaU/3RScan* ``README.md``,
``c++/rio_lib/src/rio_lib/rio_lib/frame_config.h``):

* ``sequence/frame-{i:06d}.color.jpg`` (960x540), ``.depth.pgm`` (16-bit, millimetres, 224x172),
  ``.pose.txt``: 4x4, "the pose of the RGB sensor as a transformation from the RGB camera to
  the world coordinate system", metres (*FAQ.md*; ``Sequence::LoadPose`` reads 16 numbers
  row by row). Camera axes are OpenCV's: ``Sequence::Backproject`` lifts pixel (col, row)
  with depth d to ``((col - cx) / fx * d, (row - cy) / fy * d, d)`` and applies the pose; the
  renderer's view direction is ``R @ (0, 0, 1)`` and its right ``R @ (1, 0, 0)`` (``rio_renderer/src/data.cc``);
* ``sequence/_info.txt``: ``key = value`` lines; ``m_colorWidth``/``m_colorHeight``,
  ``m_depthWidth``/``m_depthHeight``, ``m_depthShift`` (1000 = mm) and
  ``m_calibrationColorIntrinsic`` / ``m_calibrationDepthIntrinsic``: 16 numbers, a row-major
  4x4 with fx, cx, fy, cy at 0, 2, 5, 6 (``Sequence::LoadInfoIntrinsics``);
* ``semseg.v2.json``: ``segGroups[]`` with ``objectId``, ``label`` and
  ``obb = {centroid, axesLengths, normalizedAxes}``: full extents, and the *rows* of
  ``normalizedAxes.reshape(3, 3)`` are the box axes (as ARKitScenes, ScanNet++), the reading of
  *scene-verse/SceneVerse* ``preprocess/rscan.py`` (``compute_box_3d``: corners =
  ``reshape(3,3).T @ local``); 3RScan's own code does not read the boxes;
* ``labels.instances.annotated.v2.ply``: the mesh's vertices with an ``objectId`` per vertex
  (*README.md*): used to check the box reading (each object's vertices must lie in its box);
* ``mesh.refined.v2.obj``: the textured mesh, "+Z axis in upright orientation" (*README.md*),
  in the world of the poses and boxes (``Backproject``'s clouds "align with the 3D
  reconstructions"); the scene's mesh.

Frame ``index`` = the number ``i`` in the file names (// ``frame_step``). ``rotate``: the frames
as rotated for viewing (``cw``: rio_renderer rotates its renders 90 degrees clockwise), with
intrinsics, poses and depth rotated with them (:func:`vistest.datasets.common.rotated_camera`).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..progress import progress_bar
from ..scene import DepthSpec, Frame, Intrinsics
from . import common as c

DEFAULT_SKIP = frozenset({"wall", "floor", "ceiling"})
DEFAULT_FPS = 30.0
INSIDE_TOL = 0.02  # metres: a vertex counts as inside its box within this margin
_FRAME = re.compile(r"^frame-(\d+)\.pose\.txt$")
RELIED_ON = (
    "3RScan frame rate: not stated by the dataset; fps = 30 / frame_step unless -O fps is given",
    "3RScan obb.normalizedAxes: the rows of reshape(3, 3) are the box axes (SceneVerse preprocess/rscan.py reads "
    "it so; 3RScan's own code does not read the boxes); checked against each object's vertices in "
    "labels.instances.annotated.v2.ply when present",
)


def read_info(path: Path) -> dict[str, str]:
    """``_info.txt`` as ``{key: value}`` (``key = value`` lines)."""
    return c.read_key_values(path, "3RScan _info.txt")


def info_camera(info: dict, kind: str, path: Path) -> tuple[Intrinsics, tuple[int, int]]:
    """(intrinsics, (W, H)) of the ``Color`` or ``Depth`` camera from ``_info.txt``."""
    key = f"m_calibration{kind}Intrinsic"
    wk, hk = f"m_{kind.lower()}Width", f"m_{kind.lower()}Height"
    missing = [k for k in (key, wk, hk) if k not in info]
    if missing:
        raise c.AdapterError(f"{path}: {', '.join(missing)}: missing (expected 3RScan's _info.txt keys)")
    try:
        vals = [float(v) for v in info[key].split()]
        size = (int(float(info[wk])), int(float(info[hk])))
    except ValueError:
        raise c.AdapterError(f"{path}: {key}: expected 16 numbers (a row-major 4x4)") from None
    if len(vals) not in (12, 16):
        raise c.AdapterError(f"{path}: {key}: expected 16 numbers (a row-major 4x4), got {len(vals)}")
    return Intrinsics(vals[0], vals[5], vals[2], vals[6]), size


def read_capture(path: Path, opts: dict, out_dir: Path, progress: bool = False) -> c.Capture:
    """Frames, cameras, depth, mesh and ``semseg.v2.json`` boxes of one 3RScan scan folder."""
    seq = path / "sequence"
    if not seq.is_dir():
        hint = " (unzip sequence.zip into sequence/)" if (path / "sequence.zip").is_file() else ""
        raise c.AdapterError(f"{seq}: expected 3RScan's sequence folder with _info.txt and frame-*.pose.txt{hint}")
    info_path = seq / "_info.txt"
    info = read_info(info_path)
    k_color, color_size = info_camera(info, "Color", info_path)
    numbers = sorted(int(m.group(1)) for p in seq.iterdir() if (m := _FRAME.match(p.name)))
    if not numbers:
        raise c.AdapterError(f"{seq}: expected frame-NNNNNN.pose.txt files")
    step = opts.get("frame_step", 1)
    fps = opts.get("fps", DEFAULT_FPS / step)
    turn = None if opts.get("rotate", "none") == "none" else opts["rotate"]
    camera, image_size, m = c.rotated_camera(k_color, color_size, turn)
    frames, colours = [], []
    depth_spec = None
    with progress_bar(len(numbers), f"3RScan {path.name}", enabled=progress) as bar:
        for n in numbers:
            bar.update(1)
            if n % step:
                continue
            stem = seq / f"frame-{n:06d}"
            raw = c.read_matrix_txt(f"{stem}.pose.txt", allow_neg_inf=True)
            pose = c.pose_or_invalid(raw, f"{stem}.pose.txt")
            colour = Path(f"{stem}.color.jpg")
            d = Path(f"{stem}.depth.pgm")
            i = n // step
            frames.append(Frame(index=i, time=i / fps, camera_to_world=None if pose is None else pose @ m,
                                depth=c.rotated_depth(d if d.is_file() else None, i, turn, out_dir),
                                image=str(colour) if colour.is_file() and turn is None else None))
            if colour.is_file():
                colours.append((i, str(colour)))
    if any(f.depth for f in frames):
        k_depth, depth_size = info_camera(info, "Depth", info_path)
        k_depth, depth_size, _ = c.rotated_camera(k_depth, depth_size, turn)
        scale = opts.get("depth_scale", float(info.get("m_depthShift", 1000.0)))
        depth_spec = DepthSpec(scale=scale, image_size=depth_size, camera=k_depth)
    mesh = path / "mesh.refined.v2.obj"
    anno = path / "semseg.v2.json"
    boxes = read_boxes_file(anno, opts.get("skip_labels", DEFAULT_SKIP)) if anno.is_file() else None
    return c.Capture(
        dataset="3rscan", scene_id=opts.get("scene", path.name), source=f"3RScan sequence {seq}", fps=fps,
        image_size=image_size, camera=camera, frames=tuple(frames), depth=depth_spec,
        mesh=str(mesh) if mesh.is_file() else None, boxes=boxes, relied_on=RELIED_ON[:1],
        color=c.ColorFrames(images=tuple(colours), pattern=str(seq / "frame-NNNNNN.color.jpg"), turn=turn),
        extra={"frame_step": step, "rotate": opts.get("rotate", "none")})


def read_boxes_file(path: Path, skip: frozenset = DEFAULT_SKIP) -> c.BoxSet:
    """``semseg.v2.json`` boxes (scan world), checked against ``labels.instances.annotated.v2.ply``
    beside it when present: with the rows-as-axes reading, the median share of an object's
    vertices inside its box must not be beaten by more than 0.2 by the columns-as-axes reading."""
    doc = c.read_json(path, "3RScan semseg.v2.json")
    groups = doc.get("segGroups") if isinstance(doc, dict) else None
    if not isinstance(groups, list):
        raise c.AdapterError(f"{path}: segGroups: expected a list of objects")
    objects, raw_axes = [], []
    for i, g in enumerate(groups):
        where = f"{path}: segGroups[{i}]"
        if not isinstance(g, dict) or "label" not in g:
            raise c.AdapterError(f"{where}: expected an object with objectId, label and obb")
        if str(g["label"]).lower() in skip:
            continue
        box = c.obb_box(g.get("obb"), f"{where}.obb")
        objects.append(c.SceneObject(str(g.get("objectId", g.get("id", i))), str(g["label"]), *box))
        raw_axes.append(box[2])
    if not objects:
        raise c.AdapterError(f"{path}: segGroups: no object left ({len(groups)} groups, labels "
                             f"{', '.join(sorted(skip)) or '-'} skipped); expected the scan's annotated objects")
    check = _check_with_vertices(path.parent / "labels.instances.annotated.v2.ply", objects)
    return c.BoxSet(objects=tuple(objects), boxes_to_world=np.eye(4), world="3rscan scan world (+Z up)",
                    source=f"3RScan {path.name}", relied_on=RELIED_ON[1:],
                    notes={"vertex_check": check} if check else {})


def _check_with_vertices(ply: Path, objects: list) -> dict | None:
    """The vertex check of :func:`read_boxes_file`; None without the PLY."""
    if not ply.is_file():
        return None
    import trimesh

    try:
        geom = trimesh.load(str(ply), process=False)
        ids = np.asarray(geom.metadata["_ply_raw"]["vertex"]["data"]["objectId"]).astype(np.int64).ravel()
        verts = np.asarray(geom.vertices, float)
    except Exception as e:  # trimesh raises many types for bad files
        raise c.AdapterError(f"{ply}: objectId: cannot read the per-vertex object ids ({e})") from None
    rows, cols = [], []
    for o in objects:
        if not o.id.lstrip("-").isdigit():
            continue
        pts = verts[ids == int(o.id)]
        if len(pts) < 4:
            continue
        rows.append(c.inside_share(pts, o.center, o.size, o.rotation, INSIDE_TOL))
        cols.append(c.inside_share(pts, o.center, o.size, o.rotation.T, INSIDE_TOL))
    if not rows:
        return {"file": ply.name, "objects_checked": 0}
    med_rows, med_cols = float(np.median(rows)), float(np.median(cols))
    if med_cols > med_rows + 0.2:
        raise c.AdapterError(f"{ply}: objectId: the objects' vertices lie in their semseg.v2.json boxes only when "
                             f"normalizedAxes columns are read as axes (median inside {med_cols:.0%}, rows "
                             f"{med_rows:.0%}); expected rows (3RScan's convention): is this file 3RScan's?")
    return {"file": ply.name, "objects_checked": len(rows), "median_inside_share": round(med_rows, 4),
            "median_inside_share_if_columns": round(med_cols, 4), "tolerance_m": INSIDE_TOL}


def _adapter():
    from .registry import Importer, Option

    return Importer(kind="scene",
        name="3rscan", title="3RScan (sequence/ frames + poses + _info.txt, semseg.v2.json oriented boxes)",
        reads=frozenset({"frames", "poses", "intrinsics", "depth", "mesh", "boxes"}),
        path_help="a scan folder {scan_id}/ with sequence/ (unzipped sequence.zip) and semseg.v2.json",
        options=(Option("scene", "scan id (default: the folder name)", c.scene_id),
                 Option("frame_step", "keep every N-th frame; index = number // N (default 1)", c.positive_int),
                 Option("fps", "frames per second of the video (default 30 / frame_step; 3RScan does not state it)",
                        c.positive_float),
                 Option("rotate", "rotate frames, camera and depth: none (default), cw (the upright view of "
                                  "rio_renderer's outputs), ccw, 180", c.choice("none", "cw", "ccw", "180")),
                 Option("depth_scale", "depth units per metre (default m_depthShift of _info.txt, else 1000)",
                        c.positive_float),
                 Option("skip_labels", "comma-separated labels left out (default wall,floor,ceiling)", c.label_list)),
        read_capture=read_capture,
        read_boxes=lambda p, cap, o: read_boxes_file(p if p.suffix == ".json" else p / "semseg.v2.json",
                                                     o.get("skip_labels", DEFAULT_SKIP)))


IMPORTER = _adapter()
