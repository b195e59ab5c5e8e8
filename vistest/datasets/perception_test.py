"""Perception Test (google-deepmind/perception_test): one video's object tracks and questions as a
2D scene (``vistest import perception-test ANNOTATIONS.json -o SCENE_DIR [--video VIDEO.mp4]``;
docs/tracks2d.md).

The annotation file maps ``video_id`` to ``{"metadata", "object_tracking", "mc_question",
"grounded_question", ...}`` (README "Perception Test annotations"; ``load_dataset`` of the
notebooks' ``PerceptionDataset`` iterates ``db_dict.items()`` and reads ``val['metadata']``).
Conventions, each from the official reader code (commit 6bd0642):

* ``metadata.resolution`` is ``[height, width]`` (README, "Video metadata": "The height and width
  of the video in pixels"); ``metadata.frame_rate`` frames/s; ``metadata.num_frames`` the decoded
  frames (``get_video_frames`` asserts ``num_frames == vid_frames.shape[0]``).
* ``bounding_boxes`` are ``[x1, y1, x2, y2]`` as *fractions* of the width and height
  (``data_visualisation.ipynb`` ``paint_box``: ``x1 = int(round(box[0] * width))``, ``y1 =
  int(round(box[1] * height))``): continuous coordinates, so x * W is a pixel-edge coordinate
  (vistest.tracks2d), x2 exclusive.
* ``frame_ids`` are 0-based decoded frames (``paint_box`` draws on ``video[frame_id]`` of the
  decoded array), normally one per second (README: "0, 30, 60"); ``timestamps`` are only checked
  against them (a warning beyond one frame): the README says milliseconds, the demo files (and files
  written in microseconds) are read too: the unit that fits the frame ids is taken
  (:data:`TIMESTAMP_UNITS`). The annotated frames of the
  video are the union of its tracks' ``frame_ids`` (the grid the annotators followed); an object with
  no box at one of them is absent.
* ``is_masked`` (README: "Whether the object is masked in the annotated frame"; cups games: the
  object hidden under a cup) is kept per region (``extra``); a masked region's visible ``area`` is 0
  (hidden: it does not count as a sighting), its box stays its evidence region (where it is: a
  ``mask`` dummy fills it).
* ``mc_question``: ``options`` (3), ``answer_id`` the 0-based index of the right one
  (``data_visualisation.ipynb``: ``question['options'][question['answer_id']]``) -> vistest type
  ``video_mcq``, options lettered ``"A. ..."``, ground truth the letter; ``area``, ``reasoning``,
  ``tag`` kept. Its evidence objects are not given by the benchmark: ``-O objects=FILE`` (JSON
  ``{question id: [object ids]}``) names them; without it the question names none.
* ``grounded_question``: ``answers`` are object track ids of the same video (README: "specifically
  the 'id' field for a given object"; ``grounded_vqa.ipynb`` indexes ``gt_tracks[t] for t in
  q['answers']``, where ids equal list positions): vistest type ``grounded_objects``, asked
  open-ended (``answer_kind`` text), ground truth the answer objects' labels, and those objects are
  its evidence (``objects``).
* ``cut_frame_mapping`` (README, "Full Dataset Splits", footnote: "In test videos where the end of
  the video gives away the answer to some questions (e.g. in cup-games, where is the hidden object
  at the end), we cut the end of the video. For the validation and train splits, we provide the
  frame id where the cut should be made: cut_frame_mapping_train.json, cut_frame_mapping_valid.json";
  the files are listed with the mc question annotations): one frame id per video, not a frame-to-frame
  mapping. The cut video is the source's first frames, so its frame k is the source's frame k.
  With ``-O cut_frame_mapping=FILE`` the import is of the cut video the mc questions are asked on:
  ``num_frames`` the frames kept, regions and annotated frames past the cut dropped, the video
  re-encoded to those frames (``SCENE_DIR/video.mp4``), grounded questions left out (a warning).
  Three things the README leaves open are not guessed: whether the frame id is the first frame cut
  off or the last one kept (``-O cut_frame_is=removed|kept`` is required), the file's layout (read
  as the JSON object ``{video_id: frame id}`` its name and the README's wording imply; anything
  else is refused), and how an uncut video is listed (a video not in the file, or a frame outside
  it, is refused: import it without the option).
"""
from __future__ import annotations

import math
import string
from pathlib import Path
from typing import Any

from ..budgets import MAX_BUDGET
from ..tracks2d import DEFAULT_MAX_GAP_S, FORMAT as TRACKS2D_FORMAT, MAX_FPS, MAX_IMAGE_SIDE, MIN_FPS
from .common import AdapterError, positive_float, read_json, text
from .tracks2d_import import format_2d, Imported2D, check_video, option

NAME = "perception-test"
CUT_CONVENTIONS = ("removed", "kept")  # -O cut_frame_is: the mapping's frame is the first cut off / the last kept


def _num(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise AdapterError(f"{where}: expected a number, got {v!r}")
    return float(v)


def _pick_video(doc: Any, path: Path, video_id: str | None) -> tuple[str, dict]:
    if not isinstance(doc, dict) or not doc:
        raise AdapterError(f"{path}: expected a JSON object mapping video_id to its annotations (Perception Test "
                           f"annotation file)")
    if not any(isinstance(e, dict) and "metadata" in e for e in doc.values()):
        raise AdapterError(f"{path}: expected a Perception Test annotation file, a JSON object {{video_id: "
                           f"{{metadata, object_tracking, ...}}}}; no entry has metadata (its keys: "
                           f"{', '.join(map(str, list(doc)[:5]))}: not a Perception Test file?)")
    if video_id is None:
        if len(doc) != 1:
            raise AdapterError(f"{path}: holds {len(doc)} videos; pick one with -O video_id=ID (e.g. "
                               f"{', '.join(list(doc)[:3])})")
        video_id = next(iter(doc))
    if video_id not in doc:
        raise AdapterError(f"{path}: video_id: {video_id!r} is not in the file (it has {', '.join(list(doc)[:5])}"
                           f"{' ...' if len(doc) > 5 else ''})")
    entry = doc[video_id]
    if not isinstance(entry, dict) or not isinstance(entry.get("metadata"), dict):
        raise AdapterError(f"{path}: {video_id}.metadata: expected an object with frame_rate, num_frames, resolution")
    return video_id, entry


TIMESTAMP_UNITS = {"ms": 1e-3, "us": 1e-6}  # seconds per unit: the README's milliseconds, or microseconds


def _timestamp_offset(stamps: list, frames: list, fps: float) -> tuple[str, float]:
    """(unit, largest |timestamp * fps - frame id| in frames) of the :data:`TIMESTAMP_UNITS` unit that fits
    the track's frame ids best."""
    fits = {u: max(abs(s * k * fps - f) for s, f in zip(stamps, frames)) for u, k in TIMESTAMP_UNITS.items()}
    unit = min(fits, key=fits.get)
    return unit, fits[unit]


def _tracks(entry: dict, where: str, w: int, h: int, n: int, fps: float, warnings: list[str]
            ) -> tuple[list[dict], set[int], dict[str, str]]:
    """The objects (vistest.tracks2d records), the annotated frames and the label by id; a warning
    per track whose ``timestamps`` (ms or µs: :func:`_timestamp_offset`) disagree with its ``frame_ids`` at
    ``fps`` by more than a frame."""
    tracks = entry.get("object_tracking") or []
    if not isinstance(tracks, list):
        raise AdapterError(f"{where}.object_tracking: expected a list of tracks, got {type(tracks).__name__}")
    objects, annotated, labels = [], set(), {}
    for i, t in enumerate(tracks):
        tw = f"{where}.object_tracking[{i}]"
        if not isinstance(t, dict):
            raise AdapterError(f"{tw}: expected an object, got {t!r}")
        for key in ("id", "label", "bounding_boxes", "frame_ids"):
            if key not in t:
                raise AdapterError(f"{tw}.{key}: missing required field")
        if isinstance(t["id"], bool) or not isinstance(t["id"], (int, str)) or t["id"] == "":
            raise AdapterError(f"{tw}.id: expected the track's id, an integer or a non-empty string, got {t['id']!r}")
        if not isinstance(t["label"], str) or not t["label"]:
            raise AdapterError(f"{tw}.label: expected a non-empty string, got {t['label']!r}")
        boxes, frames = t["bounding_boxes"], t["frame_ids"]
        if not isinstance(boxes, list) or not isinstance(frames, list) or len(boxes) != len(frames):
            raise AdapterError(f"{tw}: bounding_boxes and frame_ids: expected two lists of the same length, got "
                               f"{len(boxes) if isinstance(boxes, list) else boxes!r} and "
                               f"{len(frames) if isinstance(frames, list) else frames!r}")
        masked = t.get("is_masked")
        if masked is not None and (not isinstance(masked, list) or len(masked) != len(frames)
                                   or not all(isinstance(m, bool) for m in masked)):
            raise AdapterError(f"{tw}.is_masked: expected one true/false per frame id ({len(frames)}), got "
                               f"{masked!r}")
        for k, f in enumerate(frames):
            if isinstance(f, bool) or not isinstance(f, int) or not 0 <= f < n:
                raise AdapterError(f"{tw}.frame_ids[{k}]: expected a decoded frame number in 0..{n - 1}, got {f!r}")
        if len(set(frames)) != len(frames):
            raise AdapterError(f"{tw}.frame_ids: expected each frame once, got {frames}")
        stamps = t.get("timestamps")
        if frames and isinstance(stamps, list) and len(stamps) == len(frames) and all(
                isinstance(s, (int, float)) and not isinstance(s, bool) and math.isfinite(s) for s in stamps):
            unit, off = _timestamp_offset(stamps, frames, fps)
            if off > 1.0:
                warnings.append(f"{tw}: timestamps ({unit}) disagree with frame_ids by up to {off:.1f} frames at "
                                f"{fps:g} frames/s; frame_ids are used (decoded frames)")
        regions = []
        for k, f in sorted(enumerate(frames), key=lambda kf: kf[1]):
            b = boxes[k]
            if not isinstance(b, list) or len(b) != 4:
                raise AdapterError(f"{tw}.bounding_boxes[{k}]: expected [x1, y1, x2, y2] (fractions of W, H), got "
                                   f"{b!r}")
            x1, y1, x2, y2 = (_num(v, f"{tw}.bounding_boxes[{k}]") for v in b)
            if not (-0.01 <= x1 <= x2 <= 1.01 and -0.01 <= y1 <= y2 <= 1.01):
                raise AdapterError(f"{tw}.bounding_boxes[{k}]: expected fractions of the width and height with x1 <= "
                                   f"x2, y1 <= y2 (data_visualisation.ipynb paint_box multiplies by W and H), got {b}")
            region: dict[str, Any] = {"frame": f, "box": [x1 * w, y1 * h, x2 * w, y2 * h]}
            if masked is not None:
                region["extra"] = {"is_masked": bool(masked[k])}
                if masked[k]:
                    region["area"] = 0.0  # hidden (under a cup): not a sighting; its box stays the evidence
            regions.append(region)
            annotated.add(f)
        oid = str(t["id"])
        labels[oid] = str(t["label"])
        extra = {k: t[k] for k in ("is_occluder",) if k in t}
        objects.append({"id": oid, "label": str(t["label"]), "regions": regions, **({"extra": extra} if extra else {})})
    return objects, annotated, labels


def _questions(entry: dict, where: str, video_id: str, labels: dict[str, str], named: dict,
               grounded: bool = True) -> list[dict]:
    """The mc questions (type ``video_mcq``) and, when ``grounded``, the grounded questions (type
    ``grounded_objects``) of one video as vistest question records (module docstring)."""
    out: list[dict] = []
    for i, q in enumerate(entry.get("mc_question") or []):
        qw = f"{where}.mc_question[{i}]"
        if not isinstance(q, dict) or not all(k in q for k in ("id", "question", "options", "answer_id")):
            raise AdapterError(f"{qw}: expected an object with id, question, options, answer_id")
        opts, ans = q["options"], q["answer_id"]
        if not isinstance(opts, list) or not opts or len(opts) > 26:
            raise AdapterError(f"{qw}.options: expected a list of option texts, got {opts!r}")
        if isinstance(ans, bool) or not isinstance(ans, int) or not 0 <= ans < len(opts):
            raise AdapterError(f"{qw}.answer_id: expected the 0-based index of an option (0..{len(opts) - 1}), got "
                               f"{ans!r}")
        qid = f"{video_id}_mc_{q['id']}"
        objs = [str(o) for o in named.get(qid, named.get(str(q["id"]), []))]
        bad = [o for o in objs if o not in labels]
        if bad:
            raise AdapterError(f"objects: question {qid}: {bad} are not object ids of {video_id} "
                               f"({', '.join(list(labels)[:8])})")
        rec = {"id": qid, "scene_id": video_id, "question_type": "video_mcq", "question": str(q["question"]),
               "options": [f"{string.ascii_uppercase[k]}. {o}" for k, o in enumerate(opts)],
               "ground_truth": string.ascii_uppercase[ans], "objects": objs}
        rec.update({k: q[k] for k in ("area", "reasoning", "tag") if k in q})
        out.append(rec)
    for i, q in enumerate((entry.get("grounded_question") or []) if grounded else []):
        qw = f"{where}.grounded_question[{i}]"
        if not isinstance(q, dict) or not all(k in q for k in ("id", "question", "answers")):
            raise AdapterError(f"{qw}: expected an object with id, question, answers")
        answers = q["answers"]
        if not isinstance(answers, list) or not answers:
            raise AdapterError(f"{qw}.answers: expected a non-empty list of object track ids, got {answers!r}")
        ids = [str(a) for a in answers]
        bad = [a for a in ids if a not in labels]
        if bad:
            raise AdapterError(f"{qw}.answers: {bad} are not object track ids of {video_id} (README: the 'id' field "
                               f"of an object of the same video)")
        rec = {"id": f"{video_id}_gq_{q['id']}", "scene_id": video_id, "question_type": "grounded_objects",
               "question": str(q["question"]), "answer_kind": "text",
               "ground_truth": ", ".join(labels[a] for a in ids), "objects": ids, "answer_object_ids": ids}
        rec.update({k: q[k] for k in ("area", "reasoning") if k in q})
        out.append(rec)
    return out


def cut_length(options: dict, video_id: str, n: int) -> tuple[int, dict] | None:
    """How many frames the cut video keeps (frames 0 .. kept - 1 of the source; module docstring
    "cut_frame_mapping") and its provenance; None without ``-O cut_frame_mapping``. The file must be
    a JSON object ``{video_id: frame id}`` holding this video with an integer; ``-O cut_frame_is``
    says whether that frame is the first one cut off (``removed``: kept = frame) or the last one
    kept (``kept``: kept = frame + 1): the README does not say, so nothing is assumed. AdapterError
    naming the file and field for a missing convention, video or a frame outside the video."""
    if "cut_frame_mapping" not in options:
        if "cut_frame_is" in options:
            raise AdapterError("option cut_frame_is: only with -O cut_frame_mapping=FILE")
        return None
    file = Path(option(options, "cut_frame_mapping", text))
    conv = option(options, "cut_frame_is", text, None)
    if conv not in CUT_CONVENTIONS:
        raise AdapterError(f"option cut_frame_is={conv!r}: expected one of {', '.join(CUT_CONVENTIONS)}: whether "
                           f"{file}'s frame id is the first frame cut off or the last one kept. The Perception Test "
                           f"README gives only \"the frame id where the cut should be made\" (docs/tracks2d.md)")
    doc = read_json(file, "Perception Test cut_frame_mapping (JSON {video_id: frame id})")
    if not isinstance(doc, dict):
        raise AdapterError(f"{file}: expected a JSON object {{video_id: frame id where the cut is made}}, got "
                           f"{type(doc).__name__}")
    if video_id not in doc:
        raise AdapterError(f"{file}: {video_id}: not in the cut_frame_mapping; the README does not say how an uncut "
                           f"video is listed, so import it without -O cut_frame_mapping")
    c = doc[video_id]
    if isinstance(c, bool) or not isinstance(c, int):
        raise AdapterError(f"{file}: {video_id}: expected an integer frame id (0-based decoded frame), got {c!r}")
    kept = c if conv == "removed" else c + 1
    if not 1 <= kept <= n:
        raise AdapterError(f"{file}: {video_id}: frame {c} with cut_frame_is={conv} keeps {kept} frames; expected "
                           f"1 .. {n} (metadata.num_frames); the README defines no other value")
    return kept, {"cut_frame_mapping": str(file), "frame": c, "cut_frame_is": conv, "frames_kept": kept,
                  "source_frames": n, "mapping": "cut frame k = source frame k, k < frames_kept"}


def cut_scene(objects: list[dict], annotated: set[int], kept: int) -> tuple[list[dict], set[int]]:
    """The objects and annotated frames of the cut video (frames 0 .. ``kept`` - 1, the source's
    frames unchanged): regions and annotated frames at ``kept`` or later dropped. The frames after
    the last annotated frame before the cut are then unknown (vistest.tracks2d states): the
    annotation past the cut is not used, though it could bound them."""
    out = [{**o, "regions": [r for r in o["regions"] if r["frame"] < kept]} for o in objects]
    return out, {f for f in annotated if f < kept}


def write_prefix(src: Path, kept: int, fps: float, size: tuple[int, int], out_dir: Path, n: int) -> Path:
    """Frames 0 .. ``kept`` - 1 of ``src`` (decoded, size (W, H), even; ``n`` frames at ``fps``, as the
    metadata says: checked first) re-encoded at ``fps`` into ``out_dir/video.mp4`` (decoded frame k =
    source frame k)."""
    from ..videos.ffmpeg import FrameReader, VideoError, VideoWriter, probe

    check_video(src, {"num_frames": n, "image_size": list(size), "fps": fps}, "metadata", given=True)
    info = probe(src)
    if size[0] % 2 or size[1] % 2:
        raise AdapterError(f"{src}: {size[0]}x{size[1]}: the cut video is H.264 yuv420p, which needs an even size")
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / "video.mp4"
    with FrameReader(src, size, "yuv420p", full_range=info.full_range) as reader, \
            VideoWriter(out, fps=fps, size=size, pix_fmt="yuv420p", preset="veryfast") as wr:
        for buf in reader:
            wr.write_raw(buf)
            if reader.frames_read == kept:
                break
        if reader.frames_read < kept:
            raise VideoError(f"{src}: decodes to {reader.frames_read} frames; the cut keeps {kept}")
    return out


def read(path: Path, options: dict, video: Path | None) -> Imported2D:
    """Read one video of a Perception Test annotation file (module docstring). Options:
    ``video_id`` (needed when the file holds several), ``objects`` (a JSON file naming each mc
    question's objects), ``max_gap_s`` (the longest interpolated gap, default 1 s)."""
    doc = read_json(path, "Perception Test annotations")
    video_id, entry = _pick_video(doc, path, option(options, "video_id", lambda v: text(str(v))))
    where = f"{path}: {video_id}"
    meta = entry["metadata"]
    for key in ("frame_rate", "num_frames", "resolution"):
        if key not in meta:
            raise AdapterError(f"{where}.metadata.{key}: missing required field")
    res = meta["resolution"]
    if not isinstance(res, list) or len(res) != 2 or not all(isinstance(v, int) and v > 0 for v in res):
        raise AdapterError(f"{where}.metadata.resolution: expected [height, width] in pixels, got {res!r}")
    h, w = res
    n = meta["num_frames"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise AdapterError(f"{where}.metadata.num_frames: expected a positive integer, got {n!r}")
    fps = _num(meta["frame_rate"], f"{where}.metadata.frame_rate")
    if not (math.isfinite(fps) and MIN_FPS <= fps <= MAX_FPS):
        raise AdapterError(f"{where}.metadata.frame_rate: expected frames/s in {MIN_FPS:g}..{MAX_FPS:g}, got {fps:g}")
    if n > MAX_BUDGET:
        raise AdapterError(f"{where}.metadata.num_frames: expected at most {MAX_BUDGET} decoded frames, got {n}")
    if max(w, h) > MAX_IMAGE_SIDE:
        raise AdapterError(f"{where}.metadata.resolution: expected at most {MAX_IMAGE_SIDE} pixels a side, got {res}")
    warnings: list[str] = []
    objects, annotated, labels = _tracks(entry, where, w, h, n, fps, warnings)
    cut = cut_length(options, video_id, n)
    if cut is not None:
        objects, annotated = cut_scene(objects, annotated, cut[0])
        if entry.get("grounded_question"):
            warnings.append(f"{video_id}: {len(entry['grounded_question'])} grounded questions left out: the cut "
                            f"is for the mc questions (README); import without -O cut_frame_mapping for them")
    named = {}
    if "objects" in options:
        named = read_json(Path(option(options, "objects", text)), "objects of each question (JSON {id: [ids]})")
        if not isinstance(named, dict):
            raise AdapterError(f"{options['objects']}: expected a JSON object {{question id: [object ids]}}")
        for key, ids in named.items():
            if not isinstance(ids, list) or not all(isinstance(i, (str, int)) and not isinstance(i, bool)
                                                    for i in ids):
                raise AdapterError(f"{options['objects']}: {key}: expected a list of object track ids, got {ids!r}")
    questions = _questions(entry, where, video_id, labels, named, grounded=cut is None)
    gap = option(options, "max_gap_s", positive_float, DEFAULT_MAX_GAP_S)
    if video is None:
        for cand in (path.parent / f"{video_id}.mp4", path.parent / "videos" / f"{video_id}.mp4"):
            if cand.is_file():
                video = cand
                break
    make = None
    if cut is not None:
        if video is None:
            raise AdapterError(f"{where}: --video: the cut needs the source video ({video_id}.mp4) to cut")
        cut[1]["source_video"] = str(video)
        if cut[0] < n:
            src, kept, source_n = video, cut[0], n
            n, video = kept, None
            make = lambda folder: write_prefix(src, kept, fps, (w, h), folder, source_n)  # noqa: E731
    scene = {"format": TRACKS2D_FORMAT, "scene_id": video_id, "fps": fps, "image_size": [w, h], "num_frames": n,
             "max_gap_s": gap, "annotated_frames": sorted(annotated), "source_format": NAME, "objects": objects}
    if not objects:
        warnings.append(f"{video_id}: no object tracks: every question's objects are unknown to vistest")
    prov = {"format": NAME, "annotations": str(path), "video_id": video_id, "video": str(video),
            "conventions": {"boxes": "fractions of [W, H] times W, H -> pixel edges (paint_box)",
                            "frames": "frame_ids are 0-based decoded frames", "resolution": "[height, width]"}}
    if cut is not None:
        prov["cut"] = {**cut[1], "video": str(video) if make is None else "video.mp4 (SCENE_DIR)"}
    return Imported2D(scene, video, questions, prov, warnings, make)


IMPORTER = format_2d(NAME, "Perception Test (object tracks, mc and grounded questions)",
                     "an annotation JSON (video_id -> metadata, object_tracking, mc_question, grounded_question)",
                     {"video_id": "the video to import when the file holds several",
                      "objects": "JSON file {question id: [object ids]}: the objects each mc question concerns",
                      "max_gap_s": f"longest interpolated gap in seconds (default {DEFAULT_MAX_GAP_S:g})",
                      "cut_frame_mapping": "cut_frame_mapping_{train,valid}.json: import the cut video the mc "
                                           "questions are asked on (its first frames; needs cut_frame_is)",
                      "cut_frame_is": "removed (the frame id is the first frame cut off) or kept (the last frame "
                                      "kept)"},
                     read)
