"""Rooms from real layouts: the boxes and labels of the VSI-Bench meta info (288 ScanNet /
ARKitScenes / ScanNet++ validation scans, ``shared/reference/vsibench-meta-info``) with a camera
walk through each, for the generator's tests and benchmarks (issue #43: rooms like users' rooms,
touching objects and real label vocabularies included; the random rooms of
vistest.synthetic use labels the world prior mostly does not know).

* **Boxes**: every box of every label as vistest.datasets.vsibench reads them (``axesLengths``
  full extents, the *rows* of ``normalizedAxes`` the box axes), in the meta info's own world
  (ScanNet's is the scan world less the mesh's mean: the floor near z = -0.8 m; the walk is placed
  relative to the boxes, so the offset does not matter). Labels in lower case, ids ``0`` ...
  in (label, box) order.
* **Room**: ``size_m2`` the scan's ``room_size`` (VSI-Bench's alpha-shape floor area),
  ``area_type`` ``all_room``; no polygon (route planning then plans in the hull of the footprints).
* **Camera walk** (:func:`walk`): the floor is the lowest box bottom; the camera at 1.4 m above it
  walks two loops on ellipses about the centre of the boxes' floor-plane bounds (radii 0.36 and
  0.18 of their extents: near the walls, then the middle), turning 2.5 times round while it
  walks, looking 0.6 m down per metre ahead, as vistest.synthetic.random_room_scene's walk.
  Not the scan's real trajectory (the meta info has none): what the video shows is what this walk
  sees, with box occlusion.

:func:`split_scans` cross-fits: the rooms and the scans the world prior is fitted on never
overlap (the prior is not judged on its own data).
"""
from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..geometry import look_at
from ..scene import FORMAT, Scene
from .prior_tables import meta_boxes

EYE_HEIGHT_M = 1.4
META_NAMES = ("scannet", "arkitscenes", "scannetpp")


def meta_files(folder: str | Path) -> list[Path]:
    """The three meta-info files of ``folder`` (``{dataset}_meta_info_val.json``) that exist."""
    return [p for p in (Path(folder) / f"{d}_meta_info_val.json" for d in META_NAMES) if p.exists()]


def read_scans(paths: list[Path]) -> dict[str, dict]:
    """Every scan of the meta-info files, by ``{dataset}-{scan id}`` (sorted), each its JSON
    object plus ``_source`` (the file). InputError on a file that is not a JSON object."""
    out: dict[str, dict] = {}
    for p in paths:
        try:
            doc = json.loads(Path(p).read_text())
        except (OSError, ValueError) as e:
            raise InputError(f"{p}: expected a VSI-Bench meta-info JSON file; {e}") from None
        if not isinstance(doc, dict):
            raise InputError(f"{p}: expected a JSON object of scans")
        for sid, scan in doc.items():
            out[f"{scan.get('dataset') or Path(p).name.split('_')[0]}-{sid}"] = {**scan, "_source": str(p)}
    return dict(sorted(out.items()))


def split_scans(keys: list[str], rooms: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """(room scans, prior scans): ``rooms`` scans drawn at random (seeded) as rooms, every other
    one left to fit the world prior on (module docstring: cross-fitting). Both sorted."""
    keys = sorted(keys)
    if not 0 < rooms < len(keys):
        raise InputError(f"real rooms: expected between 1 and {len(keys) - 1} rooms of {len(keys)} scans, got {rooms}")
    pick = set(np.random.default_rng(seed).permutation(len(keys))[:rooms].tolist())
    return [k for i, k in enumerate(keys) if i in pick], [k for i, k in enumerate(keys) if i not in pick]


def walk(lo: np.ndarray, hi: np.ndarray, floor_z: float, num_frames: int, rng: np.random.Generator) -> list:
    """Camera-to-world poses (OpenCV axes) of the walk of the module docstring inside the floor
    rectangle ``lo`` .. ``hi`` (x, y in metres)."""
    centre, ext = (lo + hi) / 2, np.maximum(hi - lo, 1.0)
    phase, turn = rng.uniform(0, 2 * np.pi), rng.choice([-1.0, 1.0])
    poses = []
    for i in range(num_frames):
        u = i / num_frames
        a = phase + 4 * np.pi * u
        r = 0.36 if u < 0.5 else 0.18
        eye = np.array([centre[0] + r * ext[0] * np.cos(a), centre[1] + r * ext[1] * np.sin(a),
                        floor_z + EYE_HEIGHT_M])
        yaw = a + turn * 2.5 * 2 * np.pi * u
        poses.append(look_at(eye, eye + np.array([np.cos(yaw), np.sin(yaw), -0.6])).tolist())
    return poses


def real_layout_scene(key: str, scan: dict, num_frames: int = 90, image_size=(160, 120), fps: float = 10.0,
                      seed: int = 0, ids: str = "index") -> Scene:
    """The scene of one meta-info scan (module docstring); ``key`` its scene id. ``ids``: ``index``
    (``0`` ... in (label, box) order) or ``label`` (``{label}_{i}``, i the box's place in its label's
    list: the ids ``vistest import ... --boxes vsibench:`` gives, vistest.datasets.vsibench)."""
    if ids not in ("index", "label"):
        raise ValueError(f"ids: expected 'index' or 'label', got {ids!r}")
    objects = []
    source = f"{scan.get('_source', '<meta info>')}: {key}"
    for label in sorted(scan.get("object_bbox") or {}):
        for i, (center, size, rot) in enumerate(meta_boxes(scan["object_bbox"][label], source, label)):
            oid = str(len(objects)) if ids == "index" else f"{label}_{i}"
            objects.append({"id": oid, "label": label.strip().lower(), "center": center.tolist(),
                            "size": size.tolist(), "rotation": rot.tolist()})
    if not objects:
        raise InputError(f"{source}: object_bbox: expected at least one box")
    corners = np.concatenate([_corners(o) for o in objects])
    lo, hi = corners[:, :2].min(0), corners[:, :2].max(0)
    rng = np.random.default_rng([seed, zlib.crc32(key.encode())])
    frames = [{"index": i, "time": i / fps, "camera_to_world": p}
              for i, p in enumerate(walk(lo, hi, float(corners[:, 2].min()), num_frames, rng))]
    iw, ih = image_size
    doc = {"format": FORMAT, "scene_id": key, "fps": fps, "image_size": [iw, ih],
           "camera": {"fx": 1.1 * iw, "fy": 1.1 * iw, "cx": (iw - 1) / 2, "cy": (ih - 1) / 2},
           "frames": frames, "objects": objects}
    if scan.get("room_size"):
        doc["room"] = {"size_m2": float(scan["room_size"]), "area_type": "all_room"}
    return Scene.from_dict(doc)


def _corners(o: dict) -> np.ndarray:
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    return np.asarray(o["center"]) + (signs * np.asarray(o["size"]) / 2) @ np.asarray(o["rotation"]).T
