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
* what TrackEval keeps as ground truth (``get_preprocessed_seq_data``): MOT16/17/20 keep the rows
  whose ``conf`` is not 0 (``zero_marked``) **and** whose ``class`` is 1, pedestrian
  (``gt_to_keep_mask = not_equal(gt_zero_marked, 0) & equal(gt_classes, cls_id)``); MOT15 keeps the
  rows whose ``conf`` is not 0 ("There are no classes for MOT15"). vistest imports the same rows:
  static persons (7), cars (3), persons on vehicles (2), distractors (8), reflections (12) and the rest
  are skipped (counted in ``provenance.json`` ``rows_skipped``) unless ``-O keep_ignored=true``, which
  keeps every row, each labelled by its class.
* layouts, by the number of values on a line: 9 (MOT16/17/20: ``..., conf, class, visibility``), 10
  (MOT15: ``..., conf, x, y, z``, the world coordinates, -1 in 2D ground truth: ignored; no class,
  every track a ``pedestrian``, as MOT15 annotates pedestrians only), 7 (``..., conf``: as MOT15).
  Any other count is refused, naming the line. MOT17/20 class ids (``class_name_to_class_id``: 1
  pedestrian, 2 person_on_vehicle, 3 car, 4 bicycle, 5 motorbike, 6 non_mot_vehicle, 7 static_person,
  8 distractor, 9 occluder, 10 occluder_on_ground, 11 occluder_full, 12 reflection, 13 crowd) become
  the label.
* ``visibility`` (MOT16+, in [0, 1]): the visible share of the (amodal) box. The region's area is
  the clipped box area times it (the box itself stays the evidence region a dummy removes).

The video: ``--video``, else the sequence's images (``imDir``/``%06d`` + ``imExt``) encoded into
``SCENE_DIR/video.mp4`` at ``frameRate`` (decoded frame n = image n + 1).
"""
from __future__ import annotations

import configparser
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from ..budgets import MAX_BUDGET
from ..tracks2d import FORMAT as TRACKS2D_FORMAT, MAX_FPS, MAX_IMAGE_SIDE, MIN_FPS
from .common import AdapterError
from .tracks2d_import import format_2d, Imported2D, check_images, even_size, image_encoder, option, scene_id_of

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
    if not (math.isfinite(info["frameRate"]) and MIN_FPS <= info["frameRate"] <= MAX_FPS):
        raise AdapterError(f"{path}: [Sequence].frameRate: expected frames/s in {MIN_FPS:g}..{MAX_FPS:g}, got "
                           f"{sec['frameRate']}")
    if not 1 <= info["seqLength"] <= MAX_BUDGET:
        raise AdapterError(f"{path}: [Sequence].seqLength: expected a frame count in 1..{MAX_BUDGET}, got "
                           f"{info['seqLength']}")
    for key in ("imWidth", "imHeight"):
        if not 1 <= info[key] <= MAX_IMAGE_SIDE:
            raise AdapterError(f"{path}: [Sequence].{key}: expected pixels in 1..{MAX_IMAGE_SIDE}, got {info[key]}")
    return info


GT_FIELDS = ("frame", "id", "bb_left", "bb_top", "bb_width", "bb_height", "conf", "class", "visibility")
# the gt.txt layouts by number of values (MOTChallenge-format.txt; TrackEval reads MOT15 without classes)
LAYOUTS = {9: GT_FIELDS, 10: GT_FIELDS[:7] + ("x", "y", "z"), 7: GT_FIELDS[:7]}
PEDESTRIAN = 1  # TrackEval keeps class 1 only in MOT16/17/20 ground truth (get_preprocessed_seq_data)


def label_of(cls: int | None) -> str:
    """A track's label: its MOT17/20 class name, ``pedestrian`` without a class (MOT15 annotates
    pedestrians only; TrackEval: "There are no classes for MOT15")."""
    return "pedestrian" if cls is None else CLASSES.get(cls, f"class_{cls}")


def read_gt(path: Path, n: int, size: tuple[int, int], keep_ignored: bool = False,
            skipped: Counter | None = None) -> list[dict]:
    """The objects (vistest.tracks2d records) of a MOT ``gt.txt`` (module docstring); ``skipped``
    counts the rows left out by what TrackEval leaves out of its ground truth (``zero_marked``, or
    the class name)."""
    skipped = Counter() if skipped is None else skipped
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
        if len(vals) not in LAYOUTS:
            raise AdapterError(f"{path}:{i}: expected 9 values (MOT16/17/20: frame, id, bb_left, bb_top, bb_width, "
                               f"bb_height, conf, class, visibility), 10 (MOT15: ..., conf, x, y, z) or 7 (..., conf), "
                               f"got {len(vals)}")
        bad = next((k for k, v in enumerate(vals) if not math.isfinite(v)), None)
        if bad is not None:
            raise AdapterError(f"{path}:{i}: {LAYOUTS[len(vals)][bad]}: "
                               f"expected a finite number, got {parts[bad].strip()}")
        frame, tid, left, top, bw, bh, conf = vals[:7]
        if tid != int(tid):
            raise AdapterError(f"{path}:{i}: id: expected an integer track id, got {parts[1].strip()}")
        if frame != int(frame) or not 1 <= frame <= n:
            raise AdapterError(f"{path}:{i}: frame: expected a 1-based frame number in 1..{n} (seqLength), got "
                               f"{parts[0]}")
        if bw < 0 or bh < 0:
            raise AdapterError(f"{path}:{i}: bb_width, bb_height: expected non-negative sizes, got {bw}, {bh}")
        cls = int(vals[7]) if len(vals) == 9 else None  # MOT15 (10 values: world x, y, z) and 7 values: no class
        vis = vals[8] if len(vals) == 9 else None
        if vis is not None and not 0 <= vis <= 1:
            raise AdapterError(f"{path}:{i}: visibility: expected the visible share in 0..1, got {parts[8].strip()}")
        if not keep_ignored and (conf == 0 or (cls is not None and cls != PEDESTRIAN)):
            skipped[("zero_marked" if conf == 0 else CLASSES.get(cls, f"class_{cls}"))] += 1
            continue
        x0, y0 = left - 1.0, top - 1.0  # 1-based pixels: the top-left pixel is (1, 1)
        region = {"frame": int(frame) - 1, "box": [x0, y0, x0 + bw, y0 + bh]}
        if vis is not None:
            region["visibility"] = vis
        tr = tracks.setdefault(int(tid), {"id": str(int(tid)), "label": label_of(cls), "regions": []})
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


class SequenceImages(Sequence):
    """The image files of a sequence, ``imDir/%06d imExt`` for frames 1 .. seqLength, made on demand
    (a list of 10 million paths would take gigabytes before the first missing image is found)."""

    def __init__(self, folder: Path, n: int, ext: str):
        self.folder, self.n, self.ext = folder, n, ext

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, k):
        if not isinstance(k, int) or not 0 <= k < self.n:
            raise IndexError(k)
        return self.folder / f"{k + 1:06d}{self.ext}"


def read(path: Path, options: dict, video: Path | None) -> Imported2D:
    """Read a MOT sequence folder (module docstring). Options: ``keep_ignored`` (true: keep the
    boxes whose conf is 0)."""
    seq = path if path.is_dir() else path.parent.parent
    ini = seq / "seqinfo.ini"
    gt = path if path.is_file() else seq / "gt" / "gt.txt"
    if not ini.is_file() or not gt.is_file():
        raise AdapterError(f"{path}: expected a MOTChallenge sequence folder with seqinfo.ini and gt/gt.txt")
    info = read_seqinfo(ini)
    keep = option(options, "keep_ignored", flag, False)
    images = None
    if video is None and (seq / info["imDir"]).is_dir():  # every image there before the annotation is read
        images = SequenceImages(seq / info["imDir"], info["seqLength"], info["imExt"])
        check_images(images, f"seqinfo.ini seqLength {info['seqLength']}")
    skipped: Counter = Counter()
    objects = read_gt(gt, info["seqLength"], (info["imWidth"], info["imHeight"]), keep, skipped)
    sid = scene_id_of(info["name"])
    scene = {"format": TRACKS2D_FORMAT, "scene_id": sid, "fps": info["frameRate"],
             "image_size": [info["imWidth"], info["imHeight"]], "num_frames": info["seqLength"],
             "annotated_frames": list(range(info["seqLength"])), "max_gap_s": 0.0, "source_format": NAME,
             "objects": objects}
    prov = {"format": NAME, "sequence": str(seq), "gt": str(gt), "seqinfo": info, "keep_ignored": keep,
            "rows_skipped": dict(skipped),
            "conventions": {"frames": "1-based -> frame - 1", "boxes": "1-based left, top -> left - 1, top - 1; "
                            "x1 = x0 + width", "ignored": "conf 0 and classes other than pedestrian skipped "
                            "(TrackEval's ground truth)" if not keep else "conf 0 and every class kept"}}
    make = None
    if images is not None:
        make = image_encoder(images, info["frameRate"], (info["imWidth"], info["imHeight"]),
                             "seqinfo.ini imWidth x imHeight")
        prov["video_from_images"] = str(seq / info["imDir"])
        scene["image_size"] = list(even_size(info["imWidth"], info["imHeight"]))  # the video's (padded) size
    elif video is None:
        raise AdapterError(f"{seq}: --video: give the video of the sequence, or its images in "
                           f"{seq / info['imDir']} (seqinfo.ini imDir)")
    return Imported2D(scene, video, [], {**prov, "video": str(video)}, [], make)


IMPORTER = format_2d(NAME, "MOTChallenge ground truth (MOT15/16/17/20 box tracks)",
                     "a sequence folder with seqinfo.ini and gt/gt.txt (or the gt.txt)",
                     {"keep_ignored": "true: keep the rows TrackEval leaves out of its ground truth (conf 0, classes "
                                      "other than pedestrian)"}, read)
