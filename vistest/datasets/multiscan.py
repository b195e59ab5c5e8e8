"""MultiScan (``vistest import multiscan``).

PATH is a scan folder ``scene_xxxxx_xx/`` of the MultiScan release, holding (*smartscenes/multiscan*
``docs/read-the-docs/dataset/files/{acquired,annotation,output}.rst``):

* ``{scan}.jsonl``: one JSON line per frame of the RGB stream, with ``intrinsics`` (9 numbers,
  column-major 3x3, for the RGB frames) and ``transform`` (16 numbers, column-major 4x4,
  camera-to-world with ARKit camera axes: x right, y up, z towards the viewer); line ``i`` is
  decoded frame ``i`` of ``{scan}.mp4``. Converted to OpenCV axes as the reconstruction code
  does: ``C = reshape(transform, (4, 4), order='F'); C = C @ diag(1, -1, -1, 1); C /= C[3, 3]``
  (``reconstruction/scripts/bridge.py`` ``all_cameras``: "open3d camera pose (flip y and z)");
* ``{scan}.align.json``: ``coordinate_transform``, 16 numbers, column-major 4x4, "transforms the
  stored meshes back to the original unaligned poses in the same world space as the cameras";
  the stored meshes and the annotation are in the aligned world (+Z up, the floor parallel to the
  xy plane but not at z = 0: the real sample's spans z -1.33 to -1.23; its height comes from the mesh);
* ``{scan}.annotations.json``: ``objects[]`` with ``objectId`` (absent in some files: the label
  is the id then), ``label`` = ``category.index`` and ``obb = {centroid, axesLengths,
  normalizedAxes, min, max, front, up}``: ``axesLengths`` full extents, ``normalizedAxes`` "the
  column major 3x3 rotation matrix, where each of the columns represent one of the normalized
  axes", i.e. consecutive triples are the axes (the rows of a C-order ``reshape(3, 3)``, as for
  ARKitScenes), and ``min``/``max`` the corners of the box's axis-aligned bounds: checked on every
  box (2 mm);
* ``{scan}.json`` (metadata, optional): the colour stream's ``resolution`` ``[height, width]``
  and ``frequency`` (frames per second);
* ``{scan}.mp4`` (optional): the RGB video, the scene's ``video`` unless ``--video`` is given;
* ``{scan}.ply`` (optional): the mesh with vertex colours and a per-face ``objectId``, aligned world.

The scene's world is the aligned one (+Z up, the boxes' and the mesh's): each pose is mapped
into it, ``c2w = inverse(coordinate_transform) @ C``, and ``boxes_to_world`` is the identity.
Labels: the category of ``category.index`` with ``_`` read as a space (``wall_cabinet.1`` ->
``wall cabinet``). Depth (``.depth.zlib`` streams) is not read.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..geometry import box_corners, rigid_inverse
from ..jsonl import read_text
from ..progress import progress_bar
from ..scene import Frame
from . import common as c

DEFAULT_SKIP = frozenset({"wall", "floor", "ceiling", "remove"})
DEFAULT_FPS = 60.0  # MultiScan's RGB stream ("frequency": 60 in its metadata example)
AABB_TOL = 0.002  # metres: obb.min/max against the box's axis-aligned bounds
ARKIT_TO_CV = np.diag([1.0, -1.0, -1.0, 1.0])
RELIED_ON = (
    "MultiScan: line i of {scan}.jsonl is decoded frame i of {scan}.mp4 (both hold the RGB stream's "
    "number_of_frames; the docs do not say it in words)",
    "MultiScan: the annotation's aligned world is +Z up in metres (output.rst: 'the z-axis is the up direction, and "
    "the floor of the scan is aligned to the xy plane')",
)


def _column_major(value, n: int, where: str) -> np.ndarray:
    """An n x n matrix from n*n numbers stored column by column."""
    return c.matrix(value, (n * n,), where).reshape(n, n, order="F")


def _scan_id(path: Path, opts: dict) -> str:
    if "scene" in opts:
        return opts["scene"]
    found = sorted(p.name[: -len(".jsonl")] for p in path.glob("*.jsonl"))
    if len(found) > 1:
        listing = ", ".join(f + ".jsonl" for f in found)
        raise c.AdapterError(f"{path}: several camera files ({listing}); give -O scene=ID")
    return found[0] if found else path.name


def read_alignment(path: Path) -> np.ndarray:
    """``coordinate_transform`` of ``{scan}.align.json``: aligned world -> camera world (4x4)."""
    doc = c.read_json(path, "MultiScan alignment")
    if not isinstance(doc, dict) or "coordinate_transform" not in doc:
        raise c.AdapterError(f"{path}: coordinate_transform: expected 16 numbers (column-major 4x4)")
    m = _column_major(doc["coordinate_transform"], 4, f"{path}: coordinate_transform")
    if c.pose_or_invalid(m, f"{path}: coordinate_transform") is None:
        raise c.AdapterError(f"{path}: coordinate_transform: expected finite numbers")
    return m


def _metadata(path: Path) -> dict:
    """The colour stream's ``{size: (W, H), fps, frames}`` from ``{scan}.json`` (empty when absent)."""
    if not path.is_file():
        return {}
    doc = c.read_json(path, "MultiScan metadata")
    streams = doc.get("streams") if isinstance(doc, dict) else None
    colour = next((s for s in streams or [] if isinstance(s, dict) and s.get("type") == "color_camera"), None)
    if colour is None:
        return {}
    out = {}
    res = colour.get("resolution")
    if isinstance(res, list) and len(res) == 2:
        out["size"] = (int(res[1]), int(res[0]))  # [height, width]
    if isinstance(colour.get("frequency"), (int, float)) and colour["frequency"] > 0:
        out["fps"] = float(colour["frequency"])
    if isinstance(colour.get("number_of_frames"), int):
        out["frames"] = colour["number_of_frames"]
    return out


def _check_frame_count(cams: Path, lines: int, video: Path, meta_frames: int | None, meta: Path) -> None:
    """Line i of the camera file is decoded frame i of ``{scan}.mp4``: their counts must be equal
    (the video's decoded frame count: its header's estimate when it agrees, else counted by
    decoding, as ``vistest run`` checks it), else, without the video, the metadata's
    ``number_of_frames``. AdapterError naming the camera file."""
    if video.is_file():
        from ..videos.ffmpeg import count_frames, probe

        n = lines if probe(video).frames_estimate == lines else count_frames(video)
        source = f"{video.name} decodes to {n} frames"
    elif meta_frames is not None:
        n, source = meta_frames, f"{meta.name} says number_of_frames {meta_frames}"
    else:
        return
    if n != lines:
        raise c.AdapterError(f"{cams}: {lines} lines, but {source}; expected one line per decoded frame (line i is "
                             f"frame i)")


def read_capture(path: Path, opts: dict, out_dir: Path, progress: bool = False) -> c.Capture:
    """Frames from ``{scan}.jsonl`` mapped into the aligned world, the video, mesh and boxes."""
    if not path.is_dir():
        raise c.AdapterError(f"{path}: expected a MultiScan scan folder scene_xxxxx_xx/")
    scan = _scan_id(path, opts)
    cams = path / f"{scan}.jsonl"
    lines = [ln for ln in read_text(cams, c.AdapterError, "MultiScan camera parameters").splitlines() if ln.strip()]
    if not lines:
        raise c.AdapterError(f"{cams}: expected one JSON line per frame")
    align_path = path / f"{scan}.align.json"
    if not align_path.is_file():
        raise c.AdapterError(f"{align_path}: not found; expected coordinate_transform (the annotation and mesh are in "
                             f"the aligned world, the poses in the capture's world)")
    to_aligned = rigid_inverse(read_alignment(align_path))
    meta = _metadata(path / f"{scan}.json")
    video = path / f"{scan}.mp4"
    fps = opts.get("fps", meta.get("fps", DEFAULT_FPS))
    size = opts.get("image_size") or meta.get("size")
    if size is None:
        if not video.is_file():
            raise c.AdapterError(f"{path / (scan + '.json')}: image size unknown (no metadata, no {video.name}); "
                                 f"give -O image_size=WxH")
        from ..videos.ffmpeg import probe

        size = probe(video).size
    _check_frame_count(cams, len(lines), video, meta.get("frames"), path / f"{scan}.json")
    frames, ks = [], []
    with progress_bar(len(lines), f"MultiScan {scan}", enabled=progress) as bar:
        for i, line in enumerate(lines):
            bar.update(1)
            where = f"{cams}: line {i + 1}"
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise c.AdapterError(f"{where}: expected a JSON object ({e.msg})") from None
            if not isinstance(rec, dict) or "transform" not in rec or "intrinsics" not in rec:
                raise c.AdapterError(f"{where}: expected fields transform (16 numbers) and intrinsics (9 numbers)")
            raw = _column_major(rec["transform"], 4, f"{where}.transform")
            if abs(raw[3, 3]) < 1e-12:
                raise c.AdapterError(f"{where}.transform: element [3][3] is 0; expected a 4x4 pose")
            pose = c.pose_or_invalid(raw / raw[3, 3] @ ARKIT_TO_CV, f"{where}.transform")
            k = c.intrinsics_from_matrix(_column_major(rec["intrinsics"], 3, f"{where}.intrinsics"))
            frames.append(Frame(index=i, time=i / fps, camera_to_world=None if pose is None else to_aligned @ pose,
                                intrinsics=k))
            ks.append(k)
    camera = ks[0]
    frames = [f if f.intrinsics != camera else Frame(f.index, f.time, f.camera_to_world) for f in frames]
    mesh = path / f"{scan}.ply"
    anno = path / f"{scan}.annotations.json"
    notes = {"frames_in_metadata": meta.get("frames"), "frames_in_jsonl": len(lines)}
    return c.Capture(
        dataset="multiscan", scene_id=scan, source=f"MultiScan {cams}", fps=fps, image_size=tuple(size),
        camera=camera, frames=tuple(frames), mesh=str(mesh) if mesh.is_file() else None,
        boxes=read_annotation(anno, opts.get("skip_labels", DEFAULT_SKIP)) if anno.is_file() else None,
        alignments=(("multiscan coordinate_transform (aligned world -> capture world)", rigid_inverse(to_aligned)),),
        relied_on=RELIED_ON, video=str(video) if video.is_file() else None, extra=notes,
        color=c.ColorFrames(images=(), pattern=f"none: MultiScan's layout has the video {video.name} "
                                               f"(the scene's video unless --video is given)"))


def category(label: str) -> str:
    """``wall_cabinet.1`` -> ``wall cabinet`` (MultiScan's ``category.index`` labels)."""
    head, _, tail = label.rpartition(".")
    base = head if head and tail.isdigit() else label
    return base.replace("_", " ")


def read_annotation(path: Path, skip: frozenset = DEFAULT_SKIP) -> c.BoxSet:
    """``{scan}.annotations.json`` boxes (aligned world), every box checked against its ``min``/``max``."""
    doc = c.read_json(path, "MultiScan annotations")
    objs = doc.get("objects") if isinstance(doc, dict) else None
    if not isinstance(objs, list):
        raise c.AdapterError(f"{path}: objects: expected a list of annotated objects")
    objects, checked = [], 0
    for i, o in enumerate(objs):
        where = f"{path}: objects[{i}]"
        if not isinstance(o, dict) or not isinstance(o.get("label"), str):
            raise c.AdapterError(f"{where}: expected an object with label and obb")
        label = category(o["label"])
        if label.lower() in skip or o["label"].lower() in skip:
            continue
        center, size, rot = c.obb_box(o.get("obb"), f"{where}.obb")
        obb = o["obb"]
        if "min" in obb and "max" in obb:
            corners = box_corners(center[None], size[None], rot[None])[0]  # rot: columns are the box axes
            lo, hi = c.matrix(obb["min"], (3,), f"{where}.obb.min"), c.matrix(obb["max"], (3,), f"{where}.obb.max")
            err = float(max(np.abs(corners.min(0) - lo).max(), np.abs(corners.max(0) - hi).max()))
            if err > AABB_TOL:
                raise c.AdapterError(f"{where}.obb: min/max differ by {err:.3f} m from the box read with consecutive "
                                     f"normalizedAxes triples as axes (expected <= {AABB_TOL} m)")
            checked += 1
        oid = str(o["objectId"]) if "objectId" in o else o["label"]
        objects.append(c.SceneObject(oid, label, center, size, rot))
    if not objects:
        raise c.AdapterError(f"{path}: objects: no object left ({len(objs)} objects, labels "
                             f"{', '.join(sorted(skip)) or '-'} skipped); expected the scan's annotated objects")
    if len({o.id for o in objects}) != len(objects):
        raise c.AdapterError(f"{path}: objects: duplicate objectId/label; expected unique object ids")
    return c.BoxSet(objects=tuple(objects), boxes_to_world=np.eye(4), world="multiscan aligned world (+Z up)",
                    source=f"MultiScan {path.name}", notes={"boxes_checked_against_min_max": checked},
                    relied_on=("MultiScan obb.normalizedAxes: column-major 3x3 whose columns are the axes "
                               "(annotation.rst), so consecutive triples are the axes; min/max checked",))


def _adapter():
    from .registry import Importer, Option

    return Importer(kind="scene",
        name="multiscan", title="MultiScan ({scan}.jsonl poses, align.json, annotations.json oriented boxes, mp4)",
        reads=frozenset({"frames", "poses", "intrinsics", "mesh", "boxes"}),
        path_help="a scan folder scene_xxxxx_xx/ with {scan}.jsonl, {scan}.align.json and {scan}.annotations.json",
        options=(Option("scene", "scan id (default: the prefix of the folder's one *.jsonl)", c.scene_id),
                 Option("fps", "frames per second of the video (default: the metadata's frequency, else 60)",
                        c.positive_float),
                 Option("image_size", "WxH of the video frames (default: the metadata's, else the mp4's)",
                        c.size_wh),
                 Option("skip_labels", "comma-separated categories left out (default wall,floor,ceiling,remove)",
                        c.label_list)),
        read_capture=read_capture,
        read_boxes=lambda p, cap, o: read_annotation(
            p if p.suffix == ".json" else p / f"{_scan_id(p, o)}.annotations.json", o.get("skip_labels", DEFAULT_SKIP)))


IMPORTER = _adapter()
