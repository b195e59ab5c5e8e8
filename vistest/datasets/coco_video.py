"""COCO-style video annotations: TAO and YouTube-VIS, one video's tracks as a 2D scene
(``vistest import tao|youtube-vis ANNOTATIONS.json -o SCENE_DIR --video VIDEO.mp4 [-O video=NAME]``;
docs/tracks2d.md).

Both are MS COCO JSON with videos (TrackEval ``docs/TAO-format.txt``, from TAO-Dataset/tao
``tao/toolkit/tao/tao.py``; ``docs/YouTube-VIS-format.txt``). Conventions, from the official readers:

* Boxes ``bbox`` / ``bboxes`` are ``[x, y, width, height]`` in COCO's continuous pixel coordinates
  (origin at the top-left corner of the top-left pixel, 0-based), so ``x1 = x + width``: TrackEval
  ``_calculate_box_ious`` (``box_format='xywh'``: ``bboxes[:, 2] = bboxes[:, 0] + bboxes[:, 2]``);
  vistest's edge coordinates without a shift.
* **TAO**: ``images`` are the annotated frames (about one per second), each with ``video_id`` and
  ``frame_index``, its 0-based frame number in the video (TrackEval ``tao.py`` orders a video's
  images by ``frame_index``); ``annotations`` (``image_id``, ``track_id``, ``bbox``) are boxes of
  ``tracks`` (``id``, ``category_id``), labelled by ``categories[].name``. The video is ``--video``
  (TAO's frames are at the source's rate; ``frame_index`` counts them). An object with no box at an
  annotated frame of its video is absent there.
* **YouTube-VIS**: ``videos[]`` (``id``, ``width``, ``height``, ``length``, ``file_names``) and
  ``annotations[]`` per track (``video_id``, ``category_id``, ``segmentations``, ``bboxes``: one
  entry per file name, ``None`` where the object is absent; TrackEval ``youtube_vis.py`` indexes
  ``track['segmentations'][t]`` by the file's position t and skips ``None``). A segmentation is a
  COCO RLE (``counts`` a list, or the compressed string; ``mask_utils.frPyObjects(seg, h, w)`` in
  ``_prepare_gt_data``) decoded column-major (vistest.tracks2d.rle_decode), or polygons (a list of
  flat ``[x1, y1, x2, y2, ...]`` lists, which ``frPyObjects`` also takes), rasterised by
  pycocotools' rule (``common/maskApi.c`` ``rleFrPoly``; vistest.tracks2d.polygon_mask), several
  united, and stored as the region's RLE. The annotated frames are the file names'
  frames: with ``--video`` (the full-rate video), the number in each file name (YouTube-VOS names
  a JPEG by its frame number in the source, ``00005.jpg``); without it, the JPEGs beside the
  annotation (``-O frames=DIR``, ``DIR/file_name``) are encoded into ``SCENE_DIR/video.mp4``, decoded
  frame k = file k, at ``-O fps=`` (default 6: YouTube-VOS keeps every 5th frame of 30 frames/s).
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..tracks2d import (DEFAULT_MAX_GAP_S, FORMAT as TRACKS2D_FORMAT, MAX_FPS, MAX_IMAGE_SIDE, MIN_FPS, mask_box,
                        polygon_mask, rle_decode, rle_encode)
from .common import AdapterError, positive_float, read_json, text
from .tracks2d_import import (format_2d, BOX_SLACK, Imported2D, even_size, image_encoder, option, probe_video,
                              read_image, scene_id_of)

YTVIS_FPS = 6.0  # YouTube-VOS / YouTube-VIS JPEGs: every 5th frame of 30 frames/s videos


def _xywh(b: Any, where: str, size: tuple[int, int]) -> list[float]:
    """A COCO ``[x, y, width, height]`` box as ``[x0, y0, x1, y1]``; AdapterError naming ``where``
    unless it is four finite numbers, width and height >= 0, inside the ``size`` (W, H) image
    (within :data:`BOX_SLACK`: COCO boxes bound pixels of the image; corner pairs ``[x1, y1, x2, y2]``
    given as ``[x, y, w, h]`` reach past it)."""
    if (not isinstance(b, list) or len(b) != 4
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in b)
            or b[2] < 0 or b[3] < 0):
        raise AdapterError(f"{where}: expected [x, y, width, height] (COCO, width and height >= 0), got {b!r}")
    x, y, w, h = (float(v) for v in b)
    W, H = size
    if x < -BOX_SLACK or y < -BOX_SLACK or x + w > W + BOX_SLACK or y + h > H + BOX_SLACK:
        raise AdapterError(f"{where}: expected [x, y, width, height] inside the {W}x{H} image (COCO), got {b!r}, "
                           f"which reaches [{x:g}, {y:g}, {x + w:g}, {y + h:g}] (corner pairs [x1, y1, x2, y2] "
                           f"written where COCO has width and height?)")
    return [x, y, x + w, y + h]


def _records(doc: dict, key: str, path: Path, ids: bool = True) -> list[dict]:
    """``doc[key]``, a list of JSON objects (COCO's record lists), each with a hashable ``id`` (an
    integer or a string) when ``ids``; AdapterError naming the file and the field otherwise."""
    recs = doc.get(key)
    if not isinstance(recs, list):
        raise AdapterError(f"{path}: {key}: expected a list of records, got {type(recs).__name__}")
    for i, r in enumerate(recs):
        if not isinstance(r, dict):
            raise AdapterError(f"{path}: {key}[{i}]: expected a JSON object, got {type(r).__name__}")
        if ids and (isinstance(r.get("id"), bool) or not isinstance(r.get("id"), (int, str))):
            raise AdapterError(f"{path}: {key}[{i}].id: expected an integer or string id, got {r.get('id')!r}")
    return recs


def _ref(rec: dict, fld: str, where: str) -> Any:
    """``rec[fld]``, a reference to another record's id: an integer or a string (None when absent)."""
    v = rec.get(fld)
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, str))):
        raise AdapterError(f"{where}.{fld}: expected an integer or string id, got {v!r}")
    return v


def _size(v: dict, where: str) -> tuple[int, int]:
    """A video record's ``(width, height)``: positive integers up to MAX_IMAGE_SIDE."""
    out = []
    for key in ("width", "height"):
        x = v.get(key)
        if isinstance(x, bool) or not isinstance(x, int) or not 1 <= x <= MAX_IMAGE_SIDE:
            raise AdapterError(f"{where}.{key}: expected pixels, an integer in 1..{MAX_IMAGE_SIDE}, got {x!r}")
        out.append(x)
    return out[0], out[1]


def _categories(doc: dict, path: Path) -> dict:
    """Category id -> name (``categories`` may be absent: labels are then ``category_ID``)."""
    if doc.get("categories") is None and "categories" not in doc:
        return {}
    return {c["id"]: str(c.get("name", c["id"])) for c in _records(doc, "categories", path)}


def _pick(videos: list, want: Any, path: Path, key: str) -> dict:
    if not isinstance(videos, list) or not videos:
        raise AdapterError(f"{path}: videos: expected a non-empty list")
    _records({"videos": videos}, "videos", path)
    if want is None:
        if len(videos) != 1:
            raise AdapterError(f"{path}: videos: {len(videos)} videos; pick one with -O video=NAME or ID "
                               f"(e.g. {', '.join(str(v.get(key)) for v in videos[:3])})")
        return videos[0]
    for v in videos:
        if str(v.get(key)) == str(want) or str(v.get("id")) == str(want):
            return v
    raise AdapterError(f"{path}: videos: no video {want!r} (by {key} or id)")


def segmentation_mask(seg: Any, h: int, w: int, where: str) -> np.ndarray:
    """The (h, w) bool mask of a COCO segmentation as ``mask_utils.frPyObjects(seg, h, w)`` reads it:
    a dict is a run-length encoding (vistest.tracks2d.rle_decode, column-major), a list is polygons
    (vistest.tracks2d.polygon_mask: pycocotools' rleFrPoly pixel rule; several polygons united).
    AdapterError naming ``where`` for anything else or another size."""
    if isinstance(seg, dict):
        if seg.get("size") != [h, w]:  # before decoding: a [100000, 100000] mask would take 10 GB
            raise AdapterError(f"{where}.size: expected the video's [height, width] = [{h}, {w}], got "
                               f"{seg.get('size')!r}")
        return rle_decode(seg, where)
    if isinstance(seg, list):
        return polygon_mask(seg, h, w, where)
    raise AdapterError(f"{where}: expected a COCO RLE {{size, counts}} or a list of polygons [x1, y1, x2, y2, ...], "
                       f"got {type(seg).__name__}")


def read_tao(path: Path, options: dict, video: Path | None) -> Imported2D:
    """One video of a TAO annotation file (module docstring). Options: ``video`` (name or id)."""
    doc = read_json(path, "TAO annotations")
    if not isinstance(doc, dict) or not all(k in doc for k in ("videos", "images", "annotations", "tracks")):
        raise AdapterError(f"{path}: expected TAO JSON with videos, images, annotations, tracks (docs/TAO-format.txt)")
    for key in ("images", "annotations", "tracks"):
        _records(doc, key, path, ids=key != "annotations")
    cats = _categories(doc, path)
    v = _pick(doc["videos"], options.get("video"), path, "name")
    vid = v["id"]
    w, h = _size(v, f"{path}: videos[id={vid}]")
    fps, n, size = probe_video(video, path)
    if (w, h) != tuple(size):
        raise AdapterError(f"{video}: --video: decodes to {size[0]}x{size[1]}, {path} says {w}x{h} for video "
                           f"{v.get('name')}")
    images = {im["id"]: im for im in doc["images"] if _ref(im, "video_id", f"{path}: images[id={im['id']}]") == vid}
    frames = {}
    for im in images.values():
        f = im.get("frame_index")
        if isinstance(f, bool) or not isinstance(f, int) or not 0 <= f < n:
            raise AdapterError(f"{path}: images[id={im['id']}].frame_index: expected a 0-based frame of the "
                               f"{n}-frame video, got {f!r}")
        frames[im["id"]] = f
    if not frames:
        raise AdapterError(f"{path}: images: no image of video {v.get('name', vid)!r} (expected its annotated frames, "
                           f"each with video_id and frame_index)")
    tracks = {t["id"]: t for t in doc["tracks"] if _ref(t, "video_id", f"{path}: tracks[id={t['id']}]") == vid}
    regions: dict[Any, list] = {t: [] for t in tracks}
    for i, a in enumerate(doc["annotations"]):
        if _ref(a, "image_id", f"{path}: annotations[{i}]") not in images:
            continue
        if _ref(a, "track_id", f"{path}: annotations[{i}]") not in tracks:
            raise AdapterError(f"{path}: annotations[{i}].track_id: {a.get('track_id')!r} is no track of the video")
        box = _xywh(a.get("bbox"), f"{path}: annotations[{i}].bbox", (w, h))
        regions[a["track_id"]].append({"frame": frames[a["image_id"]], "box": box})
    objects = []
    for tid, t in tracks.items():
        regs = sorted(regions[tid], key=lambda r: r["frame"])
        objects.append({"id": str(tid), "label": cats.get(t.get("category_id"), f"category_{t.get('category_id')}"),
                        "regions": regs})
    gap = option(options, "max_gap_s", positive_float, DEFAULT_MAX_GAP_S)
    scene = {"format": TRACKS2D_FORMAT, "scene_id": scene_id_of(v.get("name", vid)), "fps": fps, "image_size": [w, h],
             "num_frames": n, "max_gap_s": gap, "annotated_frames": sorted(set(frames.values())),
             "source_format": "tao", "objects": objects}
    prov = {"format": "tao", "annotations": str(path), "video": str(video), "video_name": v.get("name"),
            "conventions": {"boxes": "COCO xywh -> [x, y, x + w, y + h]", "frames": "images[].frame_index"}}
    return Imported2D(scene, video, [], prov, [])


def read_youtube_vis(path: Path, options: dict, video: Path | None) -> Imported2D:
    """One video of a YouTube-VIS annotation file (module docstring). Options: ``video`` (the
    first file name's folder or id), ``frames`` (the JPEG folder), ``fps`` (without --video)."""
    doc = read_json(path, "YouTube-VIS annotations")
    if not isinstance(doc, dict) or not all(k in doc for k in ("videos", "annotations")):
        raise AdapterError(f"{path}: expected YouTube-VIS JSON with videos and annotations "
                           f"(docs/YouTube-VIS-format.txt)")
    for v in doc["videos"] if isinstance(doc["videos"], list) else []:
        if isinstance(v, dict) and v.get("file_names"):
            v.setdefault("name", str(v["file_names"][0]).split("/")[0])
    v = _pick(doc["videos"], options.get("video"), path, "name")
    names = v.get("file_names")
    if not isinstance(names, list) or not names:
        raise AdapterError(f"{path}: videos[id={v.get('id')}].file_names: expected the annotated frames' files")
    if not all(isinstance(fn, str) and fn for fn in names):
        raise AdapterError(f"{path}: videos[id={v.get('id')}].file_names: expected file names (strings)")
    _records(doc, "annotations", path, ids=False)
    cats = _categories(doc, path)
    w, h = _size(v, f"{path}: videos[id={v['id']}]")
    vw, vh = w, h  # the video's size: with -O frames, the images padded to even (image_encoder)
    make = None
    warnings: list[str] = []
    prov: dict[str, Any] = {"format": "youtube-vis", "annotations": str(path), "video_name": v["name"]}
    if video is not None:
        fps, n, size = probe_video(video, path)
        if tuple(size) != (w, h):
            raise AdapterError(f"{video}: --video: decodes to {size[0]}x{size[1]}, {path} says {w}x{h}")
        frames = []
        for k, fn in enumerate(names):
            m = re.search(r"(\d+)\D*$", str(fn))
            if m is None or int(m.group(1)) >= n:
                raise AdapterError(f"{path}: file_names[{k}]: {fn!r} names no frame of the {n}-frame video")
            frames.append(int(m.group(1)))
        prov["frames"] = "the number in each file name (frame of --video)"
    else:
        fps = option(options, "fps", positive_float, YTVIS_FPS)
        if not MIN_FPS <= fps <= MAX_FPS:
            raise AdapterError(f"option fps={options['fps']!r}: expected frames/s in {MIN_FPS:g}..{MAX_FPS:g}")
        folder = Path(option(options, "frames", text, str(path.parent)))
        files = [folder / fn for fn in names]
        read_image(files[0], (w, h), f"{path} videos[id={v['id']}] width x height")
        make = image_encoder(files, fps, (w, h), f"{path} videos[id={v['id']}] width x height")
        vw, vh = even_size(w, h)
        prov["images_size"] = [w, h]
        n, frames = len(names), list(range(len(names)))
        prov["frames"] = f"file k = decoded frame k of the encoded video ({folder})"
    objects = []
    for i, a in enumerate(doc["annotations"]):
        if _ref(a, "video_id", f"{path}: annotations[{i}]") != v["id"]:
            continue
        where = f"{path}: annotations[{i}]"
        if "id" in a and (a["id"] is None or _ref(a, "id", where) is None):
            raise AdapterError(f"{where}.id: expected an integer or string id, got None")
        segs, boxes = a.get("segmentations") or [None] * len(names), a.get("bboxes") or [None] * len(names)
        if not isinstance(segs, list) or not isinstance(boxes, list) or len(segs) != len(names) \
                or len(boxes) != len(names):
            raise AdapterError(f"{where}: segmentations, bboxes: expected one entry per file name ({len(names)})")
        regions = []
        for k, (seg, box) in enumerate(zip(segs, boxes)):
            if seg is None and box is None:
                continue
            region: dict[str, Any] = {"frame": frames[k]}
            if seg is not None:
                mask = segmentation_mask(seg, h, w, f"{where}.segmentations[{k}]")
                if not mask.any():
                    continue
                if (vh, vw) != (h, w):  # the padding is outside every object
                    mask = np.pad(mask, ((0, vh - h), (0, vw - w)))
                region["mask"] = seg if isinstance(seg, dict) and (vh, vw) == (h, w) else rle_encode(mask)
                region["box"] = [float(x) for x in mask_box(mask)]
            elif box is not None:
                region["box"] = _xywh(box, f"{where}.bboxes[{k}]", (w, h))
            else:
                continue
            regions.append(region)
        objects.append({"id": str(a.get("id", i)), "label": cats.get(a.get("category_id"),
                                                                     f"category_{a.get('category_id')}"),
                        "regions": regions})
    gap = option(options, "max_gap_s", positive_float, max(DEFAULT_MAX_GAP_S, 1.0))
    scene = {"format": TRACKS2D_FORMAT, "scene_id": scene_id_of(v["name"]), "fps": fps, "image_size": [vw, vh],
             "num_frames": n, "max_gap_s": gap, "annotated_frames": sorted(set(frames)),
             "source_format": "youtube-vis", "objects": objects}
    return Imported2D(scene, video, [], {**prov, "video": str(video) if make is None else "video.mp4"}, warnings,
                      make)


TAO = format_2d("tao", "TAO (COCO-style box tracks at annotated frames)",
                "a TAO annotation JSON (videos, images with frame_index, tracks, annotations); --video its video",
                {"video": "the video's name or id when the file holds several",
                 "max_gap_s": f"longest interpolated gap in seconds (default {DEFAULT_MAX_GAP_S:g})"}, read_tao)
YOUTUBE_VIS = format_2d("youtube-vis", "YouTube-VIS (per-frame RLE or polygon masks and boxes per track)",
                        "a YouTube-VIS annotation JSON (videos with file_names, annotations with segmentations)",
                        {"video": "the video's folder name or id when the file holds several",
                         "frames": "folder of the JPEGs (file_names relative to it), without --video",
                         "fps": f"frame rate of the encoded JPEGs, without --video (default {YTVIS_FPS:g})",
                         "max_gap_s": "longest interpolated gap in seconds (default 1)"}, read_youtube_vis)
