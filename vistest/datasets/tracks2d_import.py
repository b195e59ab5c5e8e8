"""2D-track importers: video QA benchmarks' per-frame 2D annotations in, a 2D scene out
(``vistest import perception-test | mot | tao | youtube-vis | bdd100k PATH -o SCENE_DIR``; docs/tracks2d.md).

Each format module (vistest.datasets.perception_test, vistest.datasets.mot,
vistest.datasets.coco_video for TAO and YouTube-VIS, vistest.datasets.bdd100k) reads its native
files into an :class:`Imported2D`: the 2D scene document (``vistest.tracks2d/1``: regions in
vistest's pixel-edge coordinates and 0-based decoded frames, converted from the format's own
convention by the reader, which says how and cites the format's official reader), the video it
annotates, the benchmark's questions as vistest question records, and provenance.
:func:`write_import` writes ``SCENE_DIR/scene.json`` (the 2D scene; every command taking a scene
takes it), ``SCENE_DIR/questions.jsonl`` (when the format has questions) and
``SCENE_DIR/provenance.json``, each atomically, after validating the scene and questions as the
pipeline will read them.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InputError
from ..questions import parse_questions
from ..scene import Scene
from ..tracks2d import MAX_FPS, MIN_FPS
from .common import AdapterError
from .registry import Importer, Option, get_importer

QUESTIONS_NAME = "questions.jsonl"


@dataclass(frozen=True)
class Imported2D:
    """What a 2D-track reader found: ``scene`` the ``vistest.tracks2d/1`` document (its ``video``
    set by :func:`write_import`), ``video`` the video file it annotates (None: none given, refused
    unless ``make_video`` makes one), ``questions`` vistest question records, ``provenance`` (format,
    files, conventions applied), ``warnings`` for the user. ``make_video(folder) -> Path``: writes the
    video the scene describes (images encoded, a cut) into ``folder`` (the import's work folder), called
    by :func:`write_import` only once the scene and the questions are validated; the scene's ``video``
    is then ``video.mp4`` beside it."""

    scene: dict
    video: Path | None
    questions: list[dict] = field(default_factory=list)
    provenance: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    make_video: Callable[[Path], Path] | None = None


def format_2d(name: str, title: str, path_help: str, options: dict[str, str],
              read: Callable[..., Imported2D]) -> Importer:
    """One 2D-track format as an importer of kind ``tracks2d``: its ``name`` (``vistest import NAME``),
    ``title``, what PATH is, its options (name -> help; the reader parses each with :func:`option`) and
    ``read(path, options, video) -> Imported2D``. A reader writes nothing: a video it makes is an
    :attr:`Imported2D.make_video`."""
    return Importer(name, title, "tracks2d", path_help, tuple(Option(k, v) for k, v in options.items()), read=read)


VIDEO_NAME = "video.mp4"  # the video an import makes (images encoded, a cut), beside scene.json
WORK_PREFIX = ".vistest-import."  # the import's work folder in SCENE_DIR: {WORK_PREFIX}scene.{rand}_{pid}_{host}
BOX_SLACK = 1.0  # pixels a box of a format whose boxes lie in the image (COCO, Scalabel) may pass its edge by
FPS_TOLERANCE = 0.01  # relative: the annotation's frame rate against the video's (29.97 for 30 passes)
# the files an import writes into SCENE_DIR (questions.jsonl removed when the new import has none)
OUTPUTS = ("scene.json", "questions.jsonl", "provenance.json")


def annotation_file(imported: Imported2D) -> str:
    """The annotation file an import read (its provenance's ``annotations``, ``gt`` or ``sequence``)."""
    return str(next((imported.provenance[k] for k in ("annotations", "gt", "sequence") if k in imported.provenance),
                    "the annotation"))


_PROBED: dict = {}  # (path, size, mtime_ns) -> VideoInfo: a reader's probe and check_video decode a video once


def probe_counted(video: Path):
    """``vistest.videos.ffmpeg.probe(video, count=True)`` (the frames counted by decoding), once per
    file content (path, size and modification time) in this process; VideoError as probe's."""
    from ..videos.ffmpeg import probe

    st = Path(video).stat() if Path(video).is_file() else None
    key = (str(Path(video).resolve()), st.st_size, st.st_mtime_ns) if st is not None else None
    if key is None or key not in _PROBED:
        info = probe(video, count=True)
        if key is None:
            return info
        _PROBED[key] = info
    return _PROBED[key]


def check_video(video: Path, doc: dict, src: str, given: bool) -> None:
    """The video against the scene it will be the video of, as every 2D importer checks it (BDD100K's
    rule, issue #44): its decoded frame count is ``num_frames`` (frame k of the annotation is decoded
    frame k), its decoded size ``image_size``, its frame rate ``fps`` within :data:`FPS_TOLERANCE`.
    ``given``: the video came from ``--video`` (the error names the option), else the import made it.
    AdapterError naming the video, the field and the annotation ``src`` otherwise; a file ffmpeg
    cannot read is one too."""
    from ..videos.ffmpeg import VideoError

    what = f"{video}: --video" if given else f"{video}"
    try:
        info = probe_counted(video)
    except VideoError as e:
        raise AdapterError(f"{what}: expected a video ffmpeg can decode ({e})") from None
    n, (w, h), fps = doc["num_frames"], doc["image_size"], doc["fps"]
    if info.num_frames != n:
        raise AdapterError(f"{what}: decodes to {info.num_frames} frames; {src} annotates num_frames {n} (frame k of "
                           f"the annotation is decoded frame k: give the video the annotation is of)")
    if tuple(info.size) != (w, h):
        raise AdapterError(f"{what}: decodes to {info.size[0]}x{info.size[1]}; {src} says image_size {w}x{h}")
    if abs(info.fps - fps) > FPS_TOLERANCE * fps:
        raise AdapterError(f"{what}: {info.fps:g} frames/s; {src} says fps {fps:g} (expected the same within "
                           f"{FPS_TOLERANCE:.0%})")


def write_import(imported: Imported2D, out_dir: str | os.PathLike) -> Path:
    """Write the 2D scene (``scene.json``, its ``video`` relative to ``out_dir``), the questions
    (``questions.jsonl``, when any; a previous import's removed otherwise), ``provenance.json``, and
    the video an import makes (``video.mp4``) into ``out_dir``, all or nothing (issue #44): the scene
    and questions are validated as the pipeline will read them, then the video is made in a work
    folder inside ``out_dir`` and checked against the scene (:func:`check_video`), then the files are
    staged beside their names and renamed into place together. A failure at any step leaves
    ``out_dir`` as it was (a folder the import created is removed again); a work folder a killed import
    left is removed by the next import into the folder. Returns the scene's path."""
    from ..atomic import StagedFiles, ensure_folder, process_tag, remove_stale

    out = Path(out_dir)
    src = annotation_file(imported)
    if imported.make_video is None and (imported.video is None or not Path(imported.video).is_file()):
        raise AdapterError(f"{src}: --video: the annotated video was not found; give it with --video")
    path = out / "scene.json"
    video_rel = (VIDEO_NAME if imported.make_video is not None
                 else os.path.relpath(Path(imported.video).resolve(), out.resolve()))
    doc = {**imported.scene, "video": video_rel}
    if imported.make_video is None:  # the video a user gave, against the annotation, before the rest is checked
        check_video(Path(imported.video), doc, src, given=True)
    try:
        scene = Scene.from_dict({**doc, "video": None}, root=out, source=str(path))  # the video: check_video
    except InputError as e:  # name the input: the scene is not written yet
        raise AdapterError(f"{src}: converted, it is not a valid 2D scene: {e}") from None
    lines = [json.dumps(q, ensure_ascii=False) for q in imported.questions]
    if lines:
        parse_questions(lines, source=str(out / QUESTIONS_NAME), scene=scene)
    created = not out.exists()
    ensure_folder(out)
    remove_stale(out, work_prefix=WORK_PREFIX)
    work = out / f"{WORK_PREFIX}scene.{process_tag()}"
    staged = StagedFiles()
    try:
        work.mkdir()
        if imported.make_video is not None:
            made = imported.make_video(work)
            check_video(made, doc, src, given=False)
            os.replace(made, staged.path(out / VIDEO_NAME))
        prov = {**imported.provenance, "warnings": imported.warnings}
        if imported.make_video is not None:
            prov["video"] = str(out / VIDEO_NAME)
        staged.write(out / "provenance.json", json.dumps(prov, indent=1, default=str) + "\n")
        if lines:
            staged.write(out / QUESTIONS_NAME, "\n".join(lines) + "\n")
        elif (out / QUESTIONS_NAME).exists():
            staged.remove(out / QUESTIONS_NAME)
        staged.write(path, json.dumps(doc, indent=1) + "\n")
        staged.commit()
    except BaseException:
        staged.discard()
        shutil.rmtree(work, ignore_errors=True)
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise
    shutil.rmtree(work, ignore_errors=True)
    return path


def option(options: dict, name: str, parse: Callable[[Any], Any], default: Any = None) -> Any:
    """``options[name]`` parsed (AdapterError naming the option), ``default`` when absent."""
    if name not in options:
        return default
    try:
        return parse(options[name])
    except (TypeError, ValueError) as e:
        raise AdapterError(f"option {name}={options[name]!r}: {e}") from None


# ---- shared by the importers: scene ids, the annotated video, images encoded into one --------------
def scene_id_of(name: str) -> str:
    """A scene id from a video's name (characters that cannot name files become ``_``)."""
    s = re.sub(r"[^A-Za-z0-9._-]", "_", str(name)).lstrip("._-")
    return s or "video"


def probe_video(video: Path | None, path: Path) -> tuple[float, int, tuple[int, int]]:
    """(fps, decoded frames, (W, H)) of the video an annotation ``path`` is of; AdapterError without
    one or for a file ffmpeg cannot decode (naming ``--video``)."""
    if video is None:
        raise AdapterError(f"{path}: --video: give the video the annotation is of (its frame rate and frame count "
                           f"come from it)")
    from ..videos.ffmpeg import VideoError

    try:
        info = probe_counted(video)
    except VideoError as e:
        raise AdapterError(f"{video}: --video: expected a video ffmpeg can decode ({e})") from None
    if not MIN_FPS <= info.fps <= MAX_FPS:
        raise AdapterError(f"{video}: --video: {info.fps:g} frames/s; expected {MIN_FPS:g}..{MAX_FPS:g}")
    return info.fps, int(info.num_frames), info.size


def even_size(w: int, h: int) -> tuple[int, int]:
    """The size :func:`image_encoder` writes an image of ``w`` x ``h`` at: padded to even (H.264 4:2:0)."""
    return w + w % 2, h + h % 2


def read_image(file: Path, size: tuple[int, int] | None = None, size_source: str = "") -> np.ndarray:
    """The BGR image ``file`` (cv2), AdapterError naming it when it is missing, cannot be decoded
    (truncated, not an image) or, with ``size`` (W, H), has another size (``size_source``: where that
    size comes from)."""
    import cv2

    if not Path(file).is_file():
        raise AdapterError(f"{file}: image not found")
    img = cv2.imread(str(file), cv2.IMREAD_COLOR)
    if img is None:
        raise AdapterError(f"{file}: cannot decode the image (truncated, or not an image file)")
    if size is not None and img.shape[:2] != (size[1], size[0]):
        raise AdapterError(f"{file}: a {img.shape[1]}x{img.shape[0]} image; expected {size[0]}x{size[1]} "
                           f"({size_source})")
    return img


def check_images(files: Sequence[Path], what: str) -> None:
    """Every image file of ``files`` exists (one ``stat`` each, stopping at the first missing one,
    before anything is encoded): AdapterError naming it and ``what`` says how many there should be."""
    for k in range(len(files)):
        if not Path(files[k]).is_file():
            raise AdapterError(f"{files[k]}: image {k + 1} of {len(files)} not found ({what})")


def image_encoder(files: Sequence[Path], fps: float, size: tuple[int, int],
                  size_source: str) -> Callable[[Path], Path]:
    """A :attr:`Imported2D.make_video` that encodes ``files`` (images of ``size`` (W, H), checked
    by :func:`check_images` first) into ``FOLDER/video.mp4`` at ``fps``, decoded frame k =
    ``files[k]``, padded black to an even size on the right and bottom (:func:`even_size`: a region
    keeps its pixel coordinates; the scene's ``image_size`` is the padded size, the video's). An image
    that is missing, cannot be decoded or has another size is an error naming it (``size_source`` says
    where the size comes from)."""
    check_images(files, f"{len(files)} images expected")

    def make(folder: Path) -> Path:
        from ..videos.ffmpeg import VideoWriter

        w, h = size
        ew, eh = even_size(w, h)
        out = folder / VIDEO_NAME
        with VideoWriter(out, fps=fps, size=(ew, eh), preset="veryfast") as wr:
            for k in range(len(files)):
                img = read_image(files[k], size, size_source)
                frame = np.zeros((eh, ew, 3), np.uint8)
                frame[:h, :w] = img[:, :, ::-1]
                wr.write(frame)
        return out

    return make


def import_tracks(name: str, path: str | os.PathLike, out_dir: str | os.PathLike, video: str | None = None,
                  options: dict | None = None) -> tuple[Path, Imported2D]:
    """Read ``path`` in 2D-track format ``name`` and write the scene (:func:`write_import`);
    ``options``: the format's options by name (unknown ones refused). The options are checked first,
    then the annotation is read (nothing written), then the video is made or checked against it, then
    the files are put in place. Returns (scene path, import)."""
    fmt = get_importer(name, "tracks2d")
    options = dict(options or {})
    unknown = sorted(set(options) - set(fmt.option_names()))
    if unknown:
        raise AdapterError(f"option {unknown[0]!r}: not an option of {name}; expected one of "
                           f"{', '.join(fmt.option_names()) or '(none)'}")
    path = Path(path)
    if not path.exists():
        raise AdapterError(f"{path}: PATH for {name} not found (expected {fmt.path_help})")
    if video is not None and not Path(video).is_file():
        raise AdapterError(f"{video}: --video: file not found")
    imported = fmt.read(path, options, None if video is None else Path(video))
    return write_import(imported, out_dir), imported
