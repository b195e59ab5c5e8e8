"""BDD100K box tracks (MOT 2020, Scalabel format): one video's tracks as a 2D scene
(``vistest import bdd100k VIDEO.json -o SCENE_DIR (--video VIDEO.mp4 | -O frames=IMAGES_DIR)``;
docs/tracks2d.md).

A ground-truth file is one video: a list of frames ``{"name", "videoName", "frameIndex", "labels":
[{"id", "category", "attributes": {"occluded", "truncated", "crowd"}, "box2d": {"x1", "y1", "x2",
"y2"}}]}``. Conventions, from the official readers:

* ``box2d`` corners are **inclusive** pixel indices: Scalabel ``scalabel/label/transforms.py``
  (scalabel/scalabel @ 071d073) ``box2d_to_bbox`` gives COCO ``width = x2 - x1 + 1``, and
  ``mask_to_box2d`` sets ``x2`` to the last column of the mask. vistest's edge box is therefore
  ``[x1, y1, x2 + 1, y2 + 1]``. (TrackEval ``bdd100k.py`` feeds ``x1, y1, x2, y2`` to its IoU as
  ``x0y0x1y1`` directly, one pixel narrower; the format's own library is followed here.)
* frames: TrackEval ``bdd100k.py`` sorts a sequence's frames by ``index`` (older files; newer ones
  name it ``frameIndex``) and counts its timesteps as the file's frames: every listed frame is
  annotated, 0-based, at 5 frames/s (BDD100K MOT annotates its videos at 5 frames/s).
* ignored: TrackEval turns ``crowd`` boxes (``attributes['Crowd']``) and the distractor categories
  ``other person``, ``trailer``, ``other vehicle`` into ignore regions: they are skipped unless
  ``-O keep_ignored=true``.

The video: ``--video`` (decoded frame k = the frame whose index is k), else the images
(``-O frames=DIR``, ``DIR/videoName/name`` or ``DIR/name``) encoded into ``SCENE_DIR/video.mp4`` at
``-O fps=`` (default 5).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..budgets import MAX_BUDGET
from ..tracks2d import FORMAT as TRACKS2D_FORMAT, MAX_FPS, MIN_FPS
from .common import AdapterError, positive_float, read_json, text
from .mot import flag
from .tracks2d_import import (format_2d, BOX_SLACK, Imported2D, even_size, image_encoder, option, probe_video,
                              read_image, scene_id_of)

NAME = "bdd100k"
FPS = 5.0  # BDD100K MOT: boxes at 5 frames/s
DISTRACTORS = ("other person", "trailer", "other vehicle")  # TrackEval bdd100k.py distractor_classes


def _num(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise AdapterError(f"{where}: expected a number, got {v!r}")
    return float(v)


def read(path: Path, options: dict, video: Path | None) -> Imported2D:
    """One BDD100K MOT ground-truth file (module docstring). Options: ``frames``, ``fps``, ``keep_ignored``."""
    doc = read_json(path, "BDD100K box tracks")
    if not isinstance(doc, list) or not doc or not all(isinstance(f, dict) for f in doc):
        raise AdapterError(f"{path}: expected a list of frames {{name, videoName, frameIndex, labels}} (one video)")
    key = "frameIndex" if "frameIndex" in doc[0] else "index"
    bad = next((k for k, f in enumerate(doc) if isinstance(f.get(key), bool) or not isinstance(f.get(key), int)), None)
    if bad is not None:
        raise AdapterError(f"{path}: frames[{bad}].{key}: expected an integer frame index (0-based), got "
                           f"{doc[bad].get(key)!r}")
    if len(doc) > MAX_BUDGET:
        raise AdapterError(f"{path}: expected at most {MAX_BUDGET} frames, got {len(doc)}")
    frames = sorted(doc, key=lambda f: f[key])
    idx = [f[key] for f in frames]
    if idx != list(range(len(idx))):
        raise AdapterError(f"{path}: frames[].{key}: expected 0, 1, 2, ... (every frame of the sequence), got "
                           f"{idx[:6]}{' ...' if len(idx) > 6 else ''}")
    keep = option(options, "keep_ignored", flag, False)
    name = str(frames[0].get("videoName") or path.stem)
    video_encoded = video is None
    make = None
    if video is not None:
        fps, n, size = probe_video(video, path)
        if n != len(frames):  # annotation k is decoded frame k: a longer video (e.g. the raw 30 fps one) would misalign
            raise AdapterError(f"{video}: --video: {n} frames, {path} annotates {len(frames)} (every frame of the "
                               f"sequence: give the video of the annotated frames, or -O frames=DIR with the images)")
    else:
        if "frames" not in options:
            raise AdapterError(f"{path}: --video: give the video of the annotated frames, or -O frames=DIR with "
                               f"the images")
        folder = Path(option(options, "frames", text))
        fps = option(options, "fps", positive_float, FPS)
        if not MIN_FPS <= fps <= MAX_FPS:
            raise AdapterError(f"option fps={options['fps']!r}: expected frames/s in {MIN_FPS:g}..{MAX_FPS:g}")
        files = []
        for f in frames:
            cand = [folder / name / str(f.get("name")), folder / str(f.get("name"))]
            hit = next((c for c in cand if c.is_file()), None)
            if hit is None:
                raise AdapterError(f"{cand[0]}: image of frame {f[key]} not found (nor {cand[1]})")
            files.append(hit)
        first = read_image(files[0])
        size = (first.shape[1], first.shape[0])
        make = image_encoder(files, fps, size, f"the size of {files[0].name}, the first frame's image")
        video, n = None, len(frames)
    w, h = size
    video_size = even_size(w, h) if video_encoded else (w, h)  # an encoded video is padded to even
    tracks: dict[str, dict] = {}
    skipped = 0
    for f in frames:
        for j, lab in enumerate(f.get("labels") or []):
            where = f"{path}: frame {f[key]}: labels[{j}]"
            if not isinstance(lab, dict) or "box2d" not in lab or "id" not in lab:
                raise AdapterError(f"{where}: expected an object with id, category, box2d")
            attrs = lab.get("attributes") or {}
            crowd = bool(attrs.get("crowd", attrs.get("Crowd", False)))
            if not keep and (crowd or lab.get("category") in DISTRACTORS):
                skipped += 1
                continue
            b = lab["box2d"]
            if not isinstance(b, dict):
                raise AdapterError(f"{where}.box2d: expected {{x1, y1, x2, y2}}, got {b!r}")
            x1, y1, x2, y2 = (_num(b.get(k), f"{where}.box2d.{k}") for k in ("x1", "y1", "x2", "y2"))
            if x2 < x1 or y2 < y1:
                raise AdapterError(f"{where}.box2d: expected x1 <= x2, y1 <= y2 (inclusive corners), got {b}")
            if x1 < -BOX_SLACK or y1 < -BOX_SLACK or x2 + 1 > w + BOX_SLACK or y2 + 1 > h + BOX_SLACK:
                raise AdapterError(f"{where}.box2d: expected inclusive pixel corners inside the {w}x{h} image, got {b}")
            tr = tracks.setdefault(str(lab["id"]), {"id": str(lab["id"]), "label": str(lab.get("category", "object")),
                                                    "regions": []})
            region: dict[str, Any] = {"frame": int(f[key]), "box": [x1, y1, x2 + 1.0, y2 + 1.0]}
            extra = {k: attrs[k] for k in ("occluded", "truncated") if k in attrs}
            if extra:
                region["extra"] = extra
            tr["regions"].append(region)
    scene = {"format": TRACKS2D_FORMAT, "scene_id": scene_id_of(name), "fps": fps, "image_size": list(video_size),
             "num_frames": n, "annotated_frames": list(range(len(frames))), "max_gap_s": 0.0, "source_format": NAME,
             "objects": list(tracks.values())}
    prov = {"format": NAME, "annotations": str(path), "video": str(video) if make is None else "video.mp4",
            "ignored_boxes_skipped": skipped,
            "conventions": {"boxes": "inclusive box2d -> [x1, y1, x2 + 1, y2 + 1] (Scalabel box2d_to_bbox)",
                            "frames": f"{key}, 0-based, every frame annotated"}}
    return Imported2D(scene, video, [], prov, [], make)


IMPORTER = format_2d(NAME, "BDD100K MOT box tracks (Scalabel format, one video per file)",
                     "a BDD100K MOT ground-truth JSON (a list of frames with labels and box2d)",
                     {"frames": "folder of the images (videoName/name), without --video",
                      "fps": f"frame rate of the encoded images, without --video (default {FPS:g})",
                      "keep_ignored": "true: keep crowd boxes and distractor categories (ignored in evaluation)"}, read)
