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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..atomic import write_atomic
from ..errors import InputError
from ..questions import parse_questions
from ..scene import Scene
from .common import AdapterError

QUESTIONS_NAME = "questions.jsonl"


@dataclass(frozen=True)
class Imported2D:
    """What a 2D-track reader found: ``scene`` the ``vistest.tracks2d/1`` document (its ``video``
    set by :func:`write_import`), ``video`` the video file it annotates (None: none found, refused),
    ``questions`` vistest question records, ``provenance`` (format, files, conventions applied),
    ``warnings`` for the user."""

    scene: dict
    video: Path | None
    questions: list[dict] = field(default_factory=list)
    provenance: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Format2D:
    """One 2D-track format: its ``name`` (``vistest import NAME``), ``title``, what PATH is,
    its options (name -> help) and ``read(path, options, video, out_dir) -> Imported2D`` (``out_dir``:
    where a reader may write the video it makes)."""

    name: str
    title: str
    path_help: str
    options: dict[str, str]
    read: Callable[..., Imported2D]


def write_import(imported: Imported2D, out_dir: str | os.PathLike) -> Path:
    """Write the 2D scene (``scene.json``, its ``video`` relative to ``out_dir``), the questions
    (``questions.jsonl``, when any) and ``provenance.json`` into ``out_dir``; every file validated
    first (vistest.scene.Scene, vistest.questions) so a bad import writes nothing. Returns the
    scene's path."""
    out = Path(out_dir)
    if imported.video is None or not Path(imported.video).is_file():
        raise AdapterError(f"{imported.video}: --video: the annotated video was not found; give it with --video")
    out.mkdir(parents=True, exist_ok=True)  # the video's path below is relative to it
    doc = {**imported.scene, "video": os.path.relpath(Path(imported.video).resolve(), out.resolve())}
    path = out / "scene.json"
    src = next((imported.provenance[k] for k in ("annotations", "gt", "sequence") if k in imported.provenance),
               "the annotation")
    try:
        scene = Scene.from_dict(doc, root=out, source=str(path))
    except InputError as e:  # name the input: the scene is not written yet
        raise AdapterError(f"{src}: converted, it is not a valid 2D scene: {e}") from None
    lines = [json.dumps(q, ensure_ascii=False) for q in imported.questions]
    if lines:
        parse_questions(lines, source=str(out / QUESTIONS_NAME), scene=scene)
    write_atomic(path, json.dumps(doc, indent=1) + "\n")
    if lines:
        write_atomic(out / QUESTIONS_NAME, "\n".join(lines) + "\n")
    write_atomic(out / "provenance.json", json.dumps({**imported.provenance, "warnings": imported.warnings},
                                                     indent=1, default=str) + "\n")
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
    """(fps, decoded frames, (W, H)) of the video an annotation ``path`` is of; AdapterError without one."""
    if video is None:
        raise AdapterError(f"{path}: --video: give the video the annotation is of (its frame rate and frame count "
                           f"come from it)")
    from ..videos.ffmpeg import probe

    info = probe(video, count=True)
    return info.fps, int(info.num_frames), info.size


def even_size(w: int, h: int) -> tuple[int, int]:
    """The size :func:`encode_images` writes an image of ``w`` x ``h`` at: padded to even (H.264 4:2:0)."""
    return w + w % 2, h + h % 2


def encode_images(files: list, fps: float, out_dir: Path, size: tuple[int, int] | None = None,
                  size_source: str = "the first image's size") -> tuple[Path, tuple[int, int]]:
    """``files`` (images, all of one size) encoded into ``out_dir/video.mp4`` at ``fps``, decoded frame k =
    ``files[k]`` (padded black to an even size on the right and bottom, :func:`even_size`: a region keeps its
    pixel coordinates, and the scene's ``image_size`` must be the padded size, the video's); returns (video,
    (W, H) of the images).
    ``size``: the (W, H) every image must have (default: the first image's), ``size_source`` says where it
    comes from in the error naming an image of another size."""
    import cv2

    from ..videos.ffmpeg import VideoWriter

    if size is None:
        first = cv2.imread(str(files[0]), cv2.IMREAD_COLOR)
        if first is None:
            raise AdapterError(f"{files[0]}: cannot read the image")
        size = (first.shape[1], first.shape[0])
    w, h = size
    ew, eh = even_size(w, h)
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / "video.mp4"
    with VideoWriter(out, fps=fps, size=(ew, eh), preset="veryfast") as wr:
        for fn in files:
            img = cv2.imread(str(fn), cv2.IMREAD_COLOR)
            if img is None or img.shape[:2] != (h, w):
                raise AdapterError(f"{fn}: expected a {w}x{h} image ({size_source})")
            frame = np.zeros((eh, ew, 3), np.uint8)
            frame[:h, :w] = img[:, :, ::-1]
            wr.write(frame)
    return out, (w, h)


def formats() -> dict[str, Format2D]:
    """The 2D-track formats by name."""
    from . import bdd100k, coco_video, mot, perception_test

    return {f.name: f for f in (perception_test.FORMAT, mot.FORMAT, coco_video.TAO, coco_video.YOUTUBE_VIS,
                                bdd100k.FORMAT)}


def import_tracks(name: str, path: str | os.PathLike, out_dir: str | os.PathLike, video: str | None = None,
                  options: dict | None = None) -> tuple[Path, Imported2D]:
    """Read ``path`` in 2D-track format ``name`` and write the scene (:func:`write_import`);
    ``options``: the format's options by name (unknown ones refused). Returns (scene path, import)."""
    fmt = formats()[name]
    options = dict(options or {})
    unknown = sorted(set(options) - set(fmt.options))
    if unknown:
        raise AdapterError(f"option {unknown[0]!r}: not an option of {name}; expected one of "
                           f"{', '.join(fmt.options) or '(none)'}")
    path = Path(path)
    if not path.exists():
        raise AdapterError(f"{path}: PATH for {name} not found (expected {fmt.path_help})")
    if video is not None and not Path(video).is_file():
        raise AdapterError(f"{video}: --video: file not found")
    imported = fmt.read(path, options, None if video is None else Path(video), Path(out_dir))
    return write_import(imported, out_dir), imported
