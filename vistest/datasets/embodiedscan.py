"""EmbodiedScan info files (``embodiedscan_infos_{split}.pkl``).

A pickle ``{"metainfo": {"categories": {name: id}}, "data_list": [sample, ...]}``;
a sample has ``sample_idx`` (``"scannet/scene0000_00"``), ``axis_align_matrix`` (4x4),
``instances`` (``bbox_3d`` = 9-DoF ``(x, y, z, dx, dy, dz, alpha, beta, gamma)``,
``bbox_label_3d``, ``bbox_id``), ``images`` (``img_path``, ``depth_path``,
``cam2global`` 4x4, optional per-image ``cam2img``), and ``cam2img`` /
``depth_cam2img`` (4x4) for the whole scan.

Conventions (EmbodiedScan's code): boxes are in the axis-aligned world and
``cam2global`` in the raw scan world (``explorer.py`` and ``embodiedscan_dataset.py``
use ``axis_align_matrix @ cam2global``), so ``boxes_to_world = inverse(axis_align_matrix)``;
the rotation is ``R = Rz(alpha) Rx(beta) Ry(gamma)`` (``euler_angles_to_matrix(.., 'ZXY')``
in ``rotation_3d_in_euler``); sizes are full extents about the centre (origin
0.5, 0.5, 0.5); depth PNGs are millimetres (``depth_shift`` 1000; 4000 for Matterport3D).
Image paths are relative to the dataset root with the first component dropped
(``explorer.py``): give it as ``data_root``.

The pickle (any protocol: OpenMMLab's ``dump`` writes protocol 2, whose numpy arrays go
through ``_codecs.encode``) is read with :func:`vistest.datasets.common.read_pickle`, which
only builds numpy arrays and plain Python values, never arbitrary objects.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from ..scene import DepthSpec, Frame
from . import common as c
from ..geometry import rigid_inverse


_LOADED: dict[tuple, dict] = {}  # the last pickle read (check_boxes, then read_boxes: read once)


def load_infos(path: Path) -> dict:
    """The info pickle as a dict with ``data_list`` and ``metainfo`` (read safely, any protocol)."""
    st = Path(path).stat()
    key = (str(Path(path).resolve()), st.st_mtime_ns, st.st_size)
    if key in _LOADED:
        return _LOADED[key]
    doc = c.read_pickle(path, "EmbodiedScan info pickle")
    if not isinstance(doc, dict) or not isinstance(doc.get("data_list"), list):
        raise c.AdapterError(f"{path}: data_list: expected a list of samples")
    _LOADED.clear()
    _LOADED[key] = doc
    return doc


def check_boxes(path: Path, opts: dict) -> None:
    """Before the frames are read (``--boxes embodiedscan:PKL``): the pickle's shape (a dict whose
    ``data_list`` is a list of samples) and, with ``-O scene=``, that it holds that scene."""
    doc = load_infos(path)
    if opts.get("scene"):
        find_sample(doc, opts["scene"], path)


def find_sample(doc: dict, scene: str, path: Path) -> dict:
    """The sample whose ``sample_idx`` is ``scene`` or ends with ``/scene``."""
    for s in doc["data_list"]:
        idx = str(s.get("sample_idx", ""))
        if idx == scene or idx.endswith("/" + scene):
            return s
    raise c.AdapterError(f"{path}: no sample_idx matching {scene!r} ({len(doc['data_list'])} samples)")


def _categories(doc: dict) -> dict[int, str]:
    cats = (doc.get("metainfo") or {}).get("categories", {})
    if isinstance(cats, dict):
        return {int(v): str(k) for k, v in cats.items()}
    return {i: str(n) for i, n in enumerate(cats)}


def read_boxes_of(doc: dict, sample: dict, path: Path) -> c.BoxSet:
    """The sample's 9-DoF boxes (axis-aligned world) with ``boxes_to_world = inv(axis_align_matrix)``."""
    where = f"{path}: {sample.get('sample_idx')}"
    align = c.matrix(sample.get("axis_align_matrix", np.eye(4)), (4, 4), f"{where}.axis_align_matrix")
    names = _categories(doc)
    objects = []
    for i, inst in enumerate(sample.get("instances", [])):
        b = c.matrix(inst.get("bbox_3d"), (9,), f"{where}.instances[{i}].bbox_3d")
        if (b[3:6] <= 0).any():
            raise c.AdapterError(f"{where}.instances[{i}].bbox_3d: expected positive sizes, got {b[3:6].tolist()}")
        label = names.get(int(inst.get("bbox_label_3d", -1)), f"class{inst.get('bbox_label_3d')}")
        objects.append(c.SceneObject(str(inst.get("bbox_id", i)), label, b[:3], b[3:6], c.euler_zxy(*b[6:9])))
    return c.BoxSet(objects=tuple(objects), boxes_to_world=rigid_inverse(align),
                    world="EmbodiedScan axis-aligned world",
                    source=f"EmbodiedScan {path.name} {sample.get('sample_idx')}",
                    alignments=(("EmbodiedScan axis_align_matrix (raw scan world -> axis-aligned world)", align),))


def read_boxes(path: Path, capture: c.Capture | None, opts: dict) -> c.BoxSet:
    """Box source entry point (``--boxes embodiedscan:INFOS.pkl``)."""
    doc = load_infos(path)
    scene = opts.get("scene") or (capture.scene_id if capture is not None else None)
    if scene is None:
        raise c.AdapterError(f"{path}: which scene? give -O scene=scannet/sceneXXXX_XX")
    return read_boxes_of(doc, find_sample(doc, scene, path), path)


def read_capture(path: Path, opts: dict, out_dir: Path, progress: bool = False) -> c.Capture:
    """Frames (``cam2global``, raw world), intrinsics, depth and boxes of one sample."""
    if "scene" not in opts:
        raise c.AdapterError(f"{path}: which scene? give -O scene=scannet/sceneXXXX_XX")
    doc = load_infos(path)
    sample = find_sample(doc, opts["scene"], path)
    where = f"{path}: {sample.get('sample_idx')}"
    dataset = str(sample.get("sample_idx")).split("/")[0]
    root = Path(opts["data_root"]) if "data_root" in opts else None
    images = sample.get("images") or []
    if not images:
        raise c.AdapterError(f"{where}.images: expected a list of posed images")

    def file(rel) -> Path | None:
        if root is None or not rel:
            return None
        p = root / str(rel)[str(rel).find("/") + 1:]
        return p if p.is_file() else None

    scene_k = sample.get("cam2img")
    stems = [Path(str(im.get("img_path", ""))).stem for im in images]
    numeric = all(s.isdigit() for s in stems)
    order = sorted(range(len(images)), key=lambda i: (int(stems[i]) if numeric else i))
    fps = opts.get("fps", 30.0)
    frames, cams = [], []
    for n, i in enumerate(order):
        im = images[i]
        k_raw = im.get("cam2img", scene_k)
        if k_raw is None:
            raise c.AdapterError(f"{where}.images[{i}]: no cam2img (neither per image nor per scan)")
        k = c.intrinsics_from_matrix(c.matrix(k_raw, (4, 4), f"{where}.cam2img") if np.size(k_raw) == 16
                                     else c.matrix(k_raw, (3, 3), f"{where}.cam2img"))
        pose = c.pose_or_invalid(np.asarray(im.get("cam2global"), float).reshape(4, 4),
                                 f"{where}.images[{i}].cam2global")
        idx = int(stems[i]) if numeric else n
        d = file(im.get("depth_path"))
        colour = file(im.get("img_path"))
        frames.append(Frame(index=idx, time=idx / fps, camera_to_world=pose, intrinsics=k,
                            depth=str(d) if d else None, image=str(colour) if colour else None))
        cams.append(k)
    camera = cams[0]
    frames = [f if f.intrinsics != camera else replace(f, intrinsics=None) for f in frames]
    if "image_size" in opts:
        size = opts["image_size"]
    else:
        first = file(images[order[0]].get("img_path"))
        if first is None:
            raise c.AdapterError(f"{where}: image size unknown: give -O data_root=DIR (to read the images) "
                                 f"or -O image_size=WxH")
        size = c.image_size_of(first)
    first_depth = next((f.depth for f in frames if f.depth), None)
    depth = None
    if first_depth:
        dk = sample.get("depth_cam2img")
        depth = DepthSpec(scale=4000.0 if dataset == "matterport3d" else 1000.0,
                          image_size=c.image_size_of(first_depth),
                          camera=None if dk is None else c.intrinsics_from_matrix(
                              c.matrix(dk, (4, 4), f"{where}.depth_cam2img") if np.size(dk) == 16
                              else c.matrix(dk, (3, 3), f"{where}.depth_cam2img")))
    boxes = read_boxes_of(doc, sample, path)
    return c.Capture(dataset=dataset, scene_id=str(sample.get("sample_idx")).split("/")[-1],
                     source=f"EmbodiedScan {path.name} {sample.get('sample_idx')}", fps=fps, image_size=size,
                     camera=camera, frames=tuple(frames), depth=depth, boxes=boxes, relied_on=RELIED_ON,
                     color=c.ColorFrames(images=tuple((f.index, f.image) for f in frames if f.image),
                                         pattern="images[].img_path under -O data_root", frame_step=False))


RELIED_ON = (
    "EmbodiedScan image paths are relative to the dataset root with their first component dropped (explorer.py "
    "does so); the frame index is the number in the image's file name (its .sens frame number for ScanNet)",
    "EmbodiedScan fps 30 unless -O fps is given: the info pickle does not state the rate its frame numbers refer to",
)


def _adapter():
    from .registry import Importer, Option

    return Importer(kind="scene",
        name="embodiedscan", title="EmbodiedScan info pickle (9-DoF boxes, cam2global poses, posed images)",
        reads=frozenset({"frames", "poses", "intrinsics", "depth", "boxes"}),
        path_help="an embodiedscan_infos_*.pkl file",
        options=(Option("scene", "sample_idx such as scannet/scene0000_00 (a suffix is enough)", c.text),
                 Option("data_root", "folder the image paths are relative to (first component dropped)", c.text),
                 Option("image_size", "WxH of the posed images (default: read from the first image)", c.size_wh),
                 Option("fps", "frames per second the frame numbers refer to (default 30)", c.positive_float)),
        read_capture=read_capture, read_boxes=read_boxes, check_boxes=check_boxes)


IMPORTER = _adapter()
