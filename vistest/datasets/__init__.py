"""Importers: datasets' native on-disk layouts, 2D object tracks and question sets in, vistest's
formats out (``vistest import NAME PATH -o OUTPUT``; docs/adapters.md, docs/tracks2d.md).

One registry, :data:`vistest.datasets.registry.IMPORTERS`, maps every name to an
:class:`~vistest.datasets.registry.Importer` of one kind (``scene``, ``tracks2d``, ``question-set``,
``question-rows``) with its :class:`~vistest.datasets.registry.Option` values; this package fills it
from its dataset modules (below). A ``scene`` importer declares what it can read (``reads``: frames,
poses, intrinsics, depth, mesh, boxes, room), what PATH it expects and which options it takes. Frame
sources (ScanNet, ARKitScenes, ScanNet++, EmbodiedScan) read cameras; box sources (every dataset with
annotations, and VSI-Bench meta info) read boxes with the transform from their box world into the
pose world. :func:`import_scene` combines one of each and writes ``scene.json`` (``Scene.save``) plus
``provenance.json``.

Conventions of the output are those of :mod:`vistest.scene`: metres, +Z up,
camera-to-world with OpenCV axes, box rotation columns = box axes, ``size`` = full
extents, ``boxes_to_world`` = box world -> pose world, invalid frame = pose None.
"""
from __future__ import annotations

import os
from pathlib import Path

from .common import AdapterError, BoxSet, Capture, write_scene
from .registry import IMPORTERS, Importer, Option, get_importer, importers, register


def _source(spec: str, what: str) -> tuple[Importer, Path]:
    """Parse ``KIND:PATH`` (e.g. ``vsibench:meta.json``)."""
    kind, sep, path = spec.partition(":")
    if not sep or not path:
        raise AdapterError(f"--{what}: expected KIND:PATH such as vsibench:scannet_meta_info_val.json, got {spec!r}")
    return get_importer(kind, "scene"), Path(path)


def _split_options(options: dict, *adapters: Importer) -> list[dict]:
    """Give each adapter the options it declares (parsed); unknown names are an error."""
    out: list[dict] = [{} for _ in adapters]
    for key, raw in options.items():
        takers = [i for i, a in enumerate(adapters) if any(o.name == key for o in a.options)]
        if not takers:
            known = sorted({o.name for a in adapters for o in a.options})
            raise AdapterError(f"option {key!r}: not an option of {', '.join(a.name for a in adapters)}; "
                               f"expected one of {', '.join(known) or '(none)'}")
        for i in takers:
            opt = next(o for o in adapters[i].options if o.name == key)
            try:
                out[i][key] = opt.parse(raw)
            except (TypeError, ValueError) as e:
                raise AdapterError(f"option {key}={raw!r}: {e}") from None
    return out


def import_scene(dataset: str, path: str | os.PathLike, out_dir: str | os.PathLike, boxes: str | None = None,
                 frames: str | None = None, video: str | None = None, options: dict | None = None,
                 progress: bool = False, video_from_frames: bool = False, allow_frame_gaps: bool = False) -> Path:
    """Read ``path`` as ``dataset`` and write ``out_dir/scene.json`` (+ ``provenance.json``).

    For a frame source, ``boxes`` picks the annotation: None / ``"native"`` (the
    dataset's own), ``"none"``, or ``"KIND:PATH"`` (a box source such as
    ``vsibench:meta.json`` or ``embodiedscan:infos.pkl``). Finding no box annotation, or
    one with no objects, is an error unless ``boxes="none"``. For a box-only source
    (VSI-Bench meta info), ``frames`` = ``"KIND:PATH"`` names the frame source.
    ``video``: the video file the frame indices refer to (stored relative); default: the scan's own
    video where its layout has one (MultiScan). ``video_from_frames``: encode the scan's colour
    frames into ``out_dir/video.mp4`` at their frame numbers instead (:mod:`vistest.datasets.framevideo`;
    how is recorded in ``provenance.json``); a gap of more than ``framevideo.MAX_HELD_S`` seconds
    without images is refused unless ``allow_frame_gaps``.
    ``options``: adapter options by name (see each adapter's ``options``).
    ``progress``: draw a progress bar on stderr while frames are read. Returns the path of the written scene.
    """
    options = dict(options or {})
    main = get_importer(dataset, "scene")
    if video is not None and video_from_frames:
        raise AdapterError("--video and --video-from-frames: give one of them (a video file, or the scan's colour "
                           "frames encoded into SCENE_DIR/video.mp4)")
    path = Path(path)
    if not path.exists():
        raise AdapterError(f"{path}: PATH for {dataset} not found (expected {main.path_help})")
    if main.read_capture is None:  # a box-only source: frames come from --frames
        if frames is None:
            raise AdapterError(f"{dataset} reads only boxes: give the frames with --frames KIND:PATH "
                               f"(one of {', '.join(sorted(a.name for a in importers('scene') if a.read_capture))})")
        frame_adapter, frame_path = _source(frames, "frames")
        box_adapter, box_path = main, path
    else:
        if frames is not None:
            raise AdapterError(f"--frames: {dataset} reads its own frames; use --boxes to take boxes from elsewhere")
        frame_adapter, frame_path = main, path
        if boxes in (None, "native", "none"):
            box_adapter, box_path = (main, path) if boxes != "none" and main.read_boxes else (None, None)
        else:
            box_adapter, box_path = _source(boxes, "boxes")
    if frame_adapter.read_capture is None:
        raise AdapterError(f"--frames: {frame_adapter.name} has no frames (it reads "
                           f"{', '.join(sorted(frame_adapter.reads))})")
    if box_adapter is not None and box_adapter.read_boxes is None:
        raise AdapterError(f"--boxes: {box_adapter.name} has no boxes")
    if not frame_path.exists():
        raise AdapterError(f"{frame_path}: frames PATH for {frame_adapter.name} not found")
    if box_path is not None and not box_path.exists():
        raise AdapterError(f"{box_path}: boxes PATH for {box_adapter.name} not found")
    adapters = [frame_adapter] + ([box_adapter] if box_adapter is not None and box_adapter is not frame_adapter else [])
    opts = _split_options(options, *adapters)
    if box_adapter is not None and box_adapter is not frame_adapter and box_adapter.check_boxes is not None:
        box_adapter.check_boxes(box_path, opts[1])  # a wrong box file fails before the frames are read
    capture = frame_adapter.read_capture(frame_path, opts[0], Path(out_dir), progress=progress)
    if box_adapter is None:
        box_set = None
    elif box_adapter is frame_adapter:
        box_set = capture.boxes
    else:
        box_set = box_adapter.read_boxes(box_path, capture, opts[1])
    if box_adapter is not None and (box_set is None or not box_set.objects):
        # a silent import without boxes is the worst failure: the scene would look empty
        what = "no box annotation" if box_set is None else f"an annotation with no objects ({box_set.source})"
        raise AdapterError(f"{box_path}: {box_adapter.name} found {what} there (expected: "
                           f"{box_adapter.path_help}; see docs/adapters.md); pass --boxes none to import the frames "
                           f"without boxes")
    if video is not None and not Path(video).is_file():
        raise AdapterError(f"{video}: --video: file not found")
    record = None
    if video_from_frames:
        from .framevideo import check_gaps, frames_video

        check_gaps(capture, allow_frame_gaps)
        capture, made, record = frames_video(capture, out_dir, progress=progress)
        video = str(made)
    elif video is None and capture.video is not None:
        video = capture.video
    return write_scene(capture, box_set, out_dir, video=video, video_record=record)


# registration: one module per dataset, in the order `vistest import --help` lists them
from . import (arkitscenes, bdd100k, coco_video, embodiedscan, mot, multiscan, perception_test,  # noqa: E402
               scannet, scannetpp, sti_bench, threerscan, vsibench)



def _rows_reader(layout: str):
    """``read(path, scenes, scene_pattern) -> ImportedRows`` of question-rows ``layout``
    (:func:`vistest.datasets.vsibench_questions.import_rows`, imported when called: it takes
    vistest.generate's templates, a tenth of a second every command's start would pay)."""
    def read(path, scenes, scene_pattern):
        from .vsibench_questions import import_rows

        return import_rows(layout, path, scenes, scene_pattern)

    return read


# VSI-Bench / ReVSI question rows (`vistest import vsibench-questions|revsi-questions PATH --scenes DIR -o OUTPUT`;
# vistest.datasets.vsibench_questions.TEMPLATES is keyed by these names)
QUESTION_ROWS = tuple(Importer(name, title, "question-rows", path_help, read=_rows_reader(name))
                      for name, title, path_help in (
    ("vsibench-questions", "VSI-Bench or VSI-Bench-Debiased question rows (nyu-visionx/VSI-Bench)",
     "test.jsonl or a parquet file"),
    ("revsi-questions", "ReVSI question rows, one config (3dlg-hcvc/ReVSI all_frame)",
     "the config's rows (JSONL or parquet)")))

for _i in (scannet.IMPORTER, arkitscenes.IMPORTER, scannetpp.IMPORTER, threerscan.IMPORTER, multiscan.IMPORTER,
           vsibench.IMPORTER, embodiedscan.IMPORTER, perception_test.IMPORTER, mot.IMPORTER, coco_video.TAO,
           coco_video.YOUTUBE_VIS, bdd100k.IMPORTER, *sti_bench.IMPORTERS, *QUESTION_ROWS):
    register(_i)

__all__ = ["IMPORTERS", "AdapterError", "BoxSet", "Capture", "Importer", "Option", "get_importer", "import_scene",
           "importers", "register"]
