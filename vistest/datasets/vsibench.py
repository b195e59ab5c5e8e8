"""VSI-Bench meta info (``data/meta_info/{dataset}_meta_info_val.json`` of thinking-in-space).

A box source: ``{scene: {"dataset", "object_bbox": {label: [{"centroid",
"axesLengths", "normalizedAxes", "min", "max"}, ...]}, "room_size", "room_center",
"object_counts", "video_path"}}``. The *rows* of ``normalizedAxes.reshape(3, 3)`` are
the box axes (R = ``reshape(3,3).T``), ``axesLengths`` are full extents, and
``min``/``max`` are the box's axis-aligned bounds: every box read is checked against
them, so a wrong reading fails loudly. (Checked on the released val files: all
1,224 ScanNet, 854 ARKitScenes and 1,119 ScanNet++ boxes match to 1e-15 m with the
rows as axes; with the columns, 1,224/202/1,119 do not.)

The box world differs by dataset (relied on; VSI-Bench has not released the script
that wrote these files):

* scannet: the raw scan world *minus the mean of the ``_vh_clean_2.ply`` vertices*
  (the PointGroup/SparseConvNet ``.pth`` preprocessing the boxes were computed from:
  ``coords = v[:, :3] - v[:, :3].mean(0)``); so ``boxes_to_world`` = translation by
  that mean, computed from the scan's mesh. Evidence: the released boxes put the
  floor near z = -0.8 m and their orientations are not axis-aligned;
* arkitscenes, scannetpp: the dataset's own world (identity).

``vistest audit`` checks the result against depth and mesh either way.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from . import common as c
from ..geometry import box_corners, translation

AABB_TOL = 2e-3  # metres: min/max vs. the corners of the box as read


def read_boxes(path: Path, capture: c.Capture | None, opts: dict) -> c.BoxSet:
    """The boxes of one scene (``scene`` option, default: the capture's scene id)."""
    meta = c.read_json(path, "VSI-Bench meta info")
    scene = opts.get("scene") or (capture.scene_id if capture is not None else None)
    if scene is None:
        raise c.AdapterError(f"{path}: which scene? give -O scene=SCENE_ID")
    if not isinstance(meta, dict) or scene not in meta:
        raise c.AdapterError(f"{path}: scene {scene!r} not found ({len(meta) if isinstance(meta, dict) else 0} scenes)")
    entry = meta[scene]
    dataset = entry.get("dataset")
    if capture is not None and dataset != capture.dataset:
        raise c.AdapterError(f"{path}: {scene}.dataset is {dataset!r} but the frames are {capture.dataset!r}")
    bboxes = entry.get("object_bbox")
    if not isinstance(bboxes, dict):
        raise c.AdapterError(f"{path}: {scene}.object_bbox: expected {{label: [box, ...]}}")
    objects = []
    for label, boxes in bboxes.items():
        for i, b in enumerate(boxes):
            where = f"{path}: {scene}.object_bbox[{label!r}][{i}]"
            center, size, rot = c.obb_box(b, where)
            if "min" in b and "max" in b:
                corners = box_corners(center[None], size[None], rot[None])[0]
                lo, hi = c.matrix(b["min"], (3,), f"{where}.min"), c.matrix(b["max"], (3,), f"{where}.max")
                err = max(np.abs(corners.min(0) - lo).max(), np.abs(corners.max(0) - hi).max())
                if err > AABB_TOL:
                    raise c.AdapterError(f"{where}: min/max differ by {err:.3f} m from the box read with "
                                         f"normalizedAxes rows as axes (expected <= {AABB_TOL} m)")
            objects.append(c.SceneObject(f"{label}_{i}", str(label), center, size, rot))
    b2w, world, relied = _box_world(dataset, capture, path)
    room = {"source": f"VSI-Bench meta info {path.name}"}
    if isinstance(entry.get("room_size"), (int, float)):
        # the floor area of everything the scan shows (VSI-Bench's template: "If multiple rooms are
        # shown, estimate the size of the combined space"): ReVSI's "all_room"
        room["size_m2"] = float(entry["room_size"])
        room["area_type"] = "all_room"
    if entry.get("room_center") is not None:
        rc = c.matrix(entry["room_center"], (3,), f"{path}: {scene}.room_center")
        room["center"] = (b2w[:3, :3] @ rc + b2w[:3, 3]).tolist()  # in the pose world
    return c.BoxSet(objects=tuple(objects), boxes_to_world=b2w, world=world, source=f"VSI-Bench meta info {path}",
                    room=room, relied_on=relied)


def _box_world(dataset: str, capture: c.Capture | None, path: Path) -> tuple[np.ndarray, str, tuple[str, ...]]:
    """(boxes_to_world, world name, relied-on facts) for a VSI-Bench dataset name."""
    if dataset == "scannet":
        if capture is None or capture.mesh is None:
            raise c.AdapterError(f"{path}: ScanNet meta-info boxes are centred on the mean vertex of "
                                 f"sceneXXXX_XX_vh_clean_2.ply: import with the ScanNet scan folder that has it")
        mean = c.mesh_vertices(capture.mesh).mean(axis=0)
        return (translation(mean), "VSI-Bench scannet: raw scan world minus the mean _vh_clean_2.ply vertex",
                (f"VSI-Bench ScanNet boxes = raw scan world - mean vertex of _vh_clean_2.ply "
                 f"({np.round(mean, 4).tolist()}); inferred from the released files, not from released code",))
    if dataset in ("arkitscenes", "scannetpp"):
        return np.eye(4), f"VSI-Bench {dataset}: the dataset's own world", (
            f"VSI-Bench {dataset} boxes are in the dataset's own world (inferred from the released files)",)
    raise c.AdapterError(f"{path}: dataset: expected scannet, arkitscenes or scannetpp, got {dataset!r}")


def _adapter():
    from .registry import Importer, Option

    return Importer(name="vsibench", kind="scene",
                    title="VSI-Bench meta info (boxes and room size of one scene)",
                    reads=frozenset({"boxes", "room"}), path_help="a {dataset}_meta_info_val.json file",
                    options=(Option("scene", "scene id in the meta info (default: the frames' scene id)", c.text),),
                    read_boxes=read_boxes)


IMPORTER = _adapter()
