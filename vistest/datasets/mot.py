"""MOTChallenge ground truth (MOT15/16/17/20): one sequence's box tracks as a 2D scene
(``vistest import mot SEQUENCE_DIR -o SCENE_DIR [--video VIDEO.mp4]``; docs/tracks2d.md).

A sequence folder holds ``seqinfo.ini`` (``[Sequence]``: ``name``, ``imDir``, ``frameRate``,
``seqLength``, ``imWidth``, ``imHeight``, ``imExt``) and ``gt/gt.txt``, comma-separated, one box per
line: ``frame, id, bb_left, bb_top, bb_width, bb_height, conf, class, visibility``. Conventions,
each from the official readers (JonathonLuiten/TrackEval, ``docs/MOTChallenge-format.txt`` and
``trackeval/datasets/mot_challenge_2d_box.py``):

* frames are 1-based: ``_load_raw_file`` reads timestep t (0-based) from the lines whose frame is
  ``str(t + 1)``; so decoded frame = frame - 1, and the sequence has ``seqLength`` frames
  (``_get_seq_info``), every one annotated (MOT annotates densely: a target with no line in a frame
  is not there, or ignored).
* boxes are ``(left, top, width, height)`` with ``x1 = left + width`` (``_calculate_box_ious``,
  ``box_format='xywh'``: ``bboxes[:, 2] = bboxes[:, 0] + bboxes[:, 2]``), and "all frame numbers,
  target IDs and bounding boxes are 1-based" (MOTChallenge-format.txt): the top-left pixel is
  (1, 1), so vistest's edge coordinates are ``x0 = left - 1``, ``x1 = x0 + width`` (same for y).
* ``conf`` 0 marks a box ignored in evaluation (``zero_marked``, removed from the ground truth in
  ``get_preprocessed_seq_data``): skipped unless ``-O keep_ignored=true``.
* ``class``: MOT17/20 ids (``class_name_to_class_id``: 1 pedestrian, 2 person_on_vehicle, 3 car, 4
  bicycle, 5 motorbike, 6 non_mot_vehicle, 7 static_person, 8 distractor, 9 occluder, 10
  occluder_on_ground, 11 occluder_full, 12 reflection, 13 crowd) become the label; MOT15's -1:
  ``pedestrian``.
* ``visibility`` (MOT16+, in [0, 1]): the visible share of the (amodal) box. The region's area is
  the clipped box area times it (the box itself stays the evidence region a dummy removes).

The video: ``--video``, else the sequence's images (``imDir``/``%06d`` + ``imExt``) encoded into
``SCENE_DIR/video.mp4`` at ``frameRate`` (decoded frame n = image n + 1).
"""
from __future__ import annotations

import configparser
import math
from pathlib import Path


from ..tracks2d import FORMAT as TRACKS2D_FORMAT
from .common import AdapterError
from .tracks2d_import import Format2D, Imported2D, encode_images, even_size, option, scene_id_of

NAME = "mot"
CLASSES = {1: "pedestrian", 2: "person_on_vehicle", 3: "car", 4: "bicycle", 5: "motorbike", 6: "non_mot_vehicle",
           7: "static_person", 8: "distractor", 9: "occluder", 10: "occluder_on_ground", 11: "occluder_full",
           12: "reflection", 13: "crowd"}  # TrackEval mot_challenge_2d_box.py class_name_to_class_id


def flag(v) -> bool:
    """``true``/``false`` (a JSON boolean or the word)."""
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.lower() in ("true", "false"):
        return v.lower() == "true"
    raise ValueError(f"expected true or false, got {v!r}")


def read_seqinfo(path: Path) -> dict:
    """``[Sequence]`` of a ``seqinfo.ini`` with the keys vistest reads, checked."""
    cp = configparser.ConfigParser()
    try:
        cp.read_string(path.read_text(encoding="utf-8"))
        sec = cp["Sequence"]
        info = {"name": sec.get("name", path.parent.name), "imDir": sec.get("imDir", "img1"),
                "imExt": sec.get("imExt", ".jpg"), "frameRate": float(sec["frameRate"]),
                "seqLength": int(sec["seqLength"]), "imWidth": int(sec["imWidth"]), "imHeight": int(sec["imHeight"])}
    except (OSError, configparser.Error, KeyError, ValueError) as e:
        raise AdapterError(f"{path}: [Sequence]: expected frameRate, seqLength, imWidth, imHeight ({e})") from None
    if info["seqLength"] < 1 or info["imWidth"] < 1 or info["imHeight"] < 1 or info["frameRate"] <= 0:
        raise AdapterError(f"{path}: [Sequence]: expected positive frameRate, seqLength, imWidth, imHeight, got {info}")
    return info


GT_FIELDS = ("frame", "id", "bb_left", "bb_top", "bb_width", "bb_height", "conf", "class", "visibility")


def read_gt(path: Path, n: int, size: tuple[int, int], keep_ignored: bool = False) -> list[dict]:
    """The objects (vistest.tracks2d records) of a MOT ``gt.txt`` (module docstring)."""
    try:
        rows = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines()]
    except (OSError, UnicodeDecodeError) as e:
        raise AdapterError(f"{path}: cannot read it ({e}); expected MOTChallenge gt.txt") from None
    tracks: dict[int, dict] = {}
    w, h = size
    for i, ln in enumerate(rows, 1):
        if not ln:
            continue
        parts = ln.split(",")
        try:
            vals = [float(p) for p in parts]
        except ValueError:
            raise AdapterError(f"{path}:{i}: expected comma-separated numbers (frame, id, bb_left, bb_top, bb_width, "
                               f"bb_height, conf, class, visibility), got {ln!r}") from None
        if len(vals) < 7:
            raise AdapterError(f"{path}:{i}: expected at least 7 values (frame, id, bb_left, bb_top, bb_width, "
                               f"bb_height, conf), got {len(vals)}")
        bad = next((k for k, v in enumerate(vals) if not math.isfinite(v)), None)
        if bad is not None:
            raise AdapterError(f"{path}:{i}: {GT_FIELDS[bad] if bad < len(GT_FIELDS) else f'value {bad + 1}'}: "
                               f"expected a finite number, got {parts[bad].strip()}")
        frame, tid, left, top, bw, bh, conf = vals[:7]
        if tid != int(tid):
            raise AdapterError(f"{path}:{i}: id: expected an integer track id, got {parts[1].strip()}")
        if frame != int(frame) or not 1 <= frame <= n:
            raise AdapterError(f"{path}:{i}: frame: expected a 1-based frame number in 1..{n} (seqLength), got "
                               f"{parts[0]}")
        if bw < 0 or bh < 0:
            raise AdapterError(f"{path}:{i}: bb_width, bb_height: expected non-negative sizes, got {bw}, {bh}")
        if conf == 0 and not keep_ignored:
            continue
        cls = int(vals[7]) if len(vals) >= 8 else -1
        vis = vals[8] if len(vals) >= 9 and 0 <= vals[8] <= 1 else None
        x0, y0 = left - 1.0, top - 1.0  # 1-based pixels: the top-left pixel is (1, 1)
        region = {"frame": int(frame) - 1, "box": [x0, y0, x0 + bw, y0 + bh]}
        if vis is not None:
            region["visibility"] = vis
        tr = tracks.setdefault(int(tid), {"id": str(int(tid)), "label": CLASSES.get(cls, "pedestrian" if cls == -1
                                                                                   else f"class_{cls}"), "regions": []})
        tr["regions"].append(region)
    objects = []
    for tr in tracks.values():
        regs = sorted(tr["regions"], key=lambda r: r["frame"])
        frames = [r["frame"] for r in regs]
        if len(set(frames)) != len(frames):
            dup = next(f for f in frames if frames.count(f) > 1)
            raise AdapterError(f"{path}: id {tr['id']}: two boxes in frame {dup + 1}; expected one per frame")
        for r in regs:
            vis = r.pop("visibility", None)
            if vis is not None:
                b = r["box"]
                area = max(0.0, min(b[2], w) - max(b[0], 0.0)) * max(0.0, min(b[3], h) - max(b[1], 0.0))
                r["area"] = area * vis
                r["extra"] = {"visibility": vis}
        objects.append({**tr, "regions": regs})
    return objects


def _encode_images(info: dict, seq: Path, out_dir: Path) -> Path:
    """The sequence's images encoded into ``out_dir/video.mp4`` (frame n = image n + 1)."""
    img_dir = seq / info["imDir"]
    files = [img_dir / f"{k + 1:06d}{info['imExt']}" for k in range(info["seqLength"])]
    video, _ = encode_images(files, info["frameRate"], out_dir, (info["imWidth"], info["imHeight"]),
                             "seqinfo.ini imWidth x imHeight")
    return video


def read(path: Path, options: dict, video: Path | None, out_dir: Path | None = None) -> Imported2D:
    """Read a MOT sequence folder (module docstring). Options: ``keep_ignored`` (true: keep the
    boxes whose conf is 0)."""
    seq = path if path.is_dir() else path.parent.parent
    ini = seq / "seqinfo.ini"
    gt = path if path.is_file() else seq / "gt" / "gt.txt"
    if not ini.is_file() or not gt.is_file():
        raise AdapterError(f"{path}: expected a MOTChallenge sequence folder with seqinfo.ini and gt/gt.txt")
    info = read_seqinfo(ini)
    keep = option(options, "keep_ignored", flag, False)
    objects = read_gt(gt, info["seqLength"], (info["imWidth"], info["imHeight"]), keep)
    sid = scene_id_of(info["name"])
    scene = {"format": TRACKS2D_FORMAT, "scene_id": sid, "fps": info["frameRate"],
             "image_size": [info["imWidth"], info["imHeight"]], "num_frames": info["seqLength"],
             "annotated_frames": list(range(info["seqLength"])), "max_gap_s": 0.0, "source_format": NAME,
             "objects": objects}
    prov = {"format": NAME, "sequence": str(seq), "gt": str(gt), "seqinfo": info, "keep_ignored": keep,
            "conventions": {"frames": "1-based -> frame - 1", "boxes": "1-based left, top -> left - 1, top - 1; "
                            "x1 = x0 + width", "ignored": "conf 0 skipped" if not keep else "conf 0 kept"}}
    if video is None and out_dir is not None and (seq / info["imDir"]).is_dir():
        video = _encode_images(info, seq, out_dir)
        prov["video_from_images"] = str(seq / info["imDir"])
        scene["image_size"] = list(even_size(info["imWidth"], info["imHeight"]))  # the video's (padded) size
    return Imported2D(scene, video, [], {**prov, "video": str(video)}, [])


FORMAT = Format2D(NAME, "MOTChallenge ground truth (MOT15/16/17/20 box tracks)",
                  "a sequence folder with seqinfo.ini and gt/gt.txt (or the gt.txt)",
                  {"keep_ignored": "true: keep boxes whose conf is 0 (ignored in evaluation)"}, read)
