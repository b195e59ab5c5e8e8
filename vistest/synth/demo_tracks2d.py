"""The demo as 2D tracks: the rendered demo video with its objects' 2D boxes projected from the
known 3D boxes, as a 2D scene (every frame annotated: :func:`dense_tracks`, to compare 2D and 3D
visibility of the same video) or in Perception Test's layout (one annotated frame per second:
:func:`perception_test_layout`, the input of ``vistest import perception-test``; docs/tracks2d.md).

A box is the exact bounds of the object's 3D box silhouette inside the image (the box clipped by
the near plane, its corners and near-plane crossings projected with the scene's intrinsics, OpenCV
pixel centres at integers, so edge coordinates are ``u + 0.5``; their convex hull clipped to the
image rectangle): an *amodal* box, as drawn around an object's whole extent. An object gets one
at an annotated frame when some of its own pixels show there (the 3D table's ``visible`` > 0, the
mesh's instance share): what an annotator sees.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from ..atomic import write_atomic
from ..generate.geometry import convex_hull_2d
from ..geometry import box_corners, rigid_inverse
from ..scene import Scene
from ..tracks2d import FORMAT as TRACKS2D_FORMAT
from ..visibility.table import DEFAULT_NEAR, Visibility, compute_visibility

PT_STEP_S = 1.0  # Perception Test annotates about one frame per second (README "frame_ids": 0, 30, 60)


def silhouette_bounds(scene: Scene, frame_index: int, near: float = DEFAULT_NEAR) -> np.ndarray:
    """(O, 4) ``[x0, y0, x1, y1]`` pixel-edge bounds (vistest.tracks2d) of each object's 3D box
    silhouette in decoded frame ``frame_index``, clipped to the image; NaN rows where none (behind
    the camera, outside the image, absent, or the frame has no pose)."""
    f = next(fr for fr in scene.frames if fr.index == frame_index)
    no = len(scene.objects)
    out = np.full((no, 4), np.nan)
    if not f.valid:
        return out
    k = scene.intrinsics_for(f)
    w2c = rigid_inverse(f.camera_to_world)
    c, s, r, present = scene.world_boxes_at(frame_index)
    corners = box_corners(c, s, r)  # (O, 8, 3), NaN where absent
    cam = corners @ w2c[:3, :3].T + w2c[:3, 3]
    w, h = scene.image_size
    for o in range(no):
        if not present[o]:
            continue
        p = cam[o]
        z = p[:, 2]
        pts = [p[z > near]]
        i, j = np.triu_indices(8, 1)  # every corner pair: the crossings of edges (and of inner segments, inside)
        cross = (z[i] > near) != (z[j] > near)
        if cross.any():
            t = (near - z[i[cross]]) / (z[j[cross]] - z[i[cross]])
            pts.append(p[i[cross]] + t[:, None] * (p[j[cross]] - p[i[cross]]))
        q = np.concatenate(pts)
        if not len(q):
            continue
        uv = np.stack([k.fx * q[:, 0] / q[:, 2] + k.cx + 0.5, k.fy * q[:, 1] / q[:, 2] + k.cy + 0.5], axis=1)
        poly = clip_polygon(convex_hull_2d(uv), float(w), float(h))
        if len(poly) >= 3:
            x0, y0 = poly.min(axis=0)
            x1, y1 = poly.max(axis=0)
            if x1 > x0 and y1 > y0:
                out[o] = (x0, y0, x1, y1)
    return out


def clip_polygon(poly: np.ndarray, w: float, h: float) -> np.ndarray:
    """A convex polygon (K, 2) clipped to the image rectangle ``[0, w] x [0, h]`` (Sutherland-Hodgman)."""
    out = [tuple(p) for p in poly]
    for axis, bound, keep_below in ((0, 0.0, False), (0, w, True), (1, 0.0, False), (1, h, True)):
        src, out = out, []
        for i, a in enumerate(src):
            b = src[(i + 1) % len(src)]
            ina = a[axis] <= bound if keep_below else a[axis] >= bound
            inb = b[axis] <= bound if keep_below else b[axis] >= bound
            if ina:
                out.append(a)
            if ina != inb:
                t = (bound - a[axis]) / (b[axis] - a[axis])
                out.append((a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])))
        if not out:
            break
    return np.array(out, float).reshape(-1, 2)


def _present(vis: Visibility, row: int, o: int) -> bool:
    v = vis.visible[row, o]
    return bool(np.isfinite(v) and v > 0)


def dense_tracks(scene: Scene, vis: Visibility | None = None) -> dict:
    """The demo as a ``vistest.tracks2d/1`` document annotated at every frame (module docstring):
    each object's box wherever some of its pixels show (``vis``: the scene's 3D table, computed when
    None). Its ``video`` is the scene's, relative to the scene's folder."""
    vis = vis if vis is not None else compute_visibility(scene)
    row = {int(f): r for r, f in enumerate(vis.frame_index)}
    col = {str(o): c for c, o in enumerate(vis.object_ids)}
    regions: list[list[dict]] = [[] for _ in scene.objects]
    for f in scene.frames:
        b = silhouette_bounds(scene, f.index)
        for o, obj in enumerate(scene.objects):
            if np.isfinite(b[o]).all() and _present(vis, row[f.index], col[obj.id]):
                regions[o].append({"frame": f.index, "box": [float(x) for x in b[o]]})
    return {"format": TRACKS2D_FORMAT, "scene_id": scene.scene_id, "video": scene.video, "fps": scene.fps,
            "image_size": list(scene.image_size), "num_frames": scene.num_frames,
            "annotated_frames": [f.index for f in scene.frames], "max_gap_s": 0.0, "source_format": "vistest-demo",
            "objects": [{"id": o.id, "label": o.label, "regions": rs} for o, rs in zip(scene.objects, regions)]}


def perception_test_layout(scene_json: str | Path, out_dir: str | Path, step_s: float = PT_STEP_S,
                           grounded: int = 3) -> Path:
    """Write the demo in Perception Test's layout into ``out_dir``: ``annotations.json`` (one
    video, ``metadata`` with ``resolution`` [H, W], ``object_tracking`` with boxes as fractions of
    W and H at ``frame_ids`` every ``step_s`` seconds and ``timestamps`` in microseconds, one
    ``mc_question`` naming no object, and ``grounded`` grounded questions "Where is the {label}?"
    about the single-instance objects seen in most annotated frames) and ``{video_id}.mp4`` (a copy of
    the demo's video). Track ``id`` = its position in ``object_tracking`` (as the official
    grounded_vqa.ipynb assumes); ``demo_object_id`` keeps the demo's id. Returns the annotation file."""
    scene = Scene.load(scene_json)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    vis = compute_visibility(scene)
    w, h = scene.image_size
    step = max(1, round(step_s * scene.fps))
    frames = list(range(0, scene.num_frames, step))
    row = {int(f): r for r, f in enumerate(vis.frame_index)}
    col = {str(o): c for c, o in enumerate(vis.object_ids)}
    tracks = [{"id": i, "label": o.label, "demo_object_id": o.id, "is_occluder": False, "bounding_boxes": [],
               "frame_ids": [], "timestamps": [], "initial_tracking_box": [], "is_masked": []}
              for i, o in enumerate(scene.objects)]
    for f in frames:
        b = silhouette_bounds(scene, f)
        for i, o in enumerate(scene.objects):
            if np.isfinite(b[i]).all() and _present(vis, row[f], col[o.id]):
                t = tracks[i]
                t["bounding_boxes"].append([b[i, 0] / w, b[i, 1] / h, b[i, 2] / w, b[i, 3] / h])
                t["frame_ids"].append(f)
                t["timestamps"].append(round(f / scene.fps * 1e6))
                t["is_masked"].append(False)
    for t in tracks:
        t["initial_tracking_box"] = [1 if k == 0 else 0 for k in range(len(t["frame_ids"]))]
    tracks = [t for t in tracks if t["frame_ids"]]
    for i, t in enumerate(tracks):
        t["id"] = i
    counts: dict[str, int] = {}
    for o in scene.objects:
        counts[o.label] = counts.get(o.label, 0) + 1
    single = sorted((t for t in tracks if counts[t["label"]] == 1), key=lambda t: -len(t["frame_ids"]))
    gq = [{"id": k, "question": f"Where is the {t['label']}?", "answers": [t["id"]], "area": "Semantics",
           "reasoning": "Descriptive"} for k, t in enumerate(single[:grounded])]
    labels = sorted(counts)
    mc = [{"id": 0, "question": "Which of these is in the room?", "options": [labels[0], "piano", "bicycle"],
           "answer_id": 0, "area": "Semantics", "reasoning": "Descriptive", "tag": ["object recognition"]}]
    vid = scene.scene_id
    entry = {"metadata": {"split": "valid", "video_id": vid, "frame_rate": scene.fps, "num_frames": scene.num_frames,
                          "resolution": [h, w], "is_cup_game": False, "is_camera_moving": True},
             "object_tracking": tracks, "point_tracking": [], "action_localisation": [], "sound_localisation": [],
             "mc_question": mc, "grounded_question": gq}
    shutil.copyfile(scene.path(scene.video), out / f"{vid}.mp4")
    path = out / "annotations.json"
    write_atomic(path, json.dumps({vid: entry}, indent=1) + "\n")
    return path
