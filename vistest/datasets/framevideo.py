"""The video of a scan whose native layout has frames, not a video (``vistest import ... --video-from-frames``).

A SensReader export (``color/{i}.jpg``), ARKitScenes (``lowres_wide/*.png``), ScanNet++ with its
frames extracted (``iphone/rgb/frame_*.jpg``) and 3RScan (``sequence/frame-*.color.jpg``) hold
one image file per frame. :func:`frames_video` encodes them into ``SCENE_DIR/video.mp4`` so that
**decoded frame n of the video is the scene's frame index n**, which is the source frame number
(ScanNet, ScanNet++, 3RScan: the number in the file name, divided by ``frame_step``;
ARKitScenes: the rank of the timestamp). Gaps are kept, never closed up:

* a frame number with no image between two images (a copy that lost files, an export with
  SensReader's ``frame_skip``) repeats the previous image, as a constant-frame-rate
  conversion of a variable-rate sequence does, so every later image stays at its own number;
* frame numbers before the first image (an export that starts late) are black;
* a held frame (one that repeats the previous image) **is that photo**: the scene gets a frame
  there with the photo's pose, intrinsics, depth and image (and its validity: a photo with an
  invalid pose gives invalid held frames), timed at its own place in the video (the photo's
  ``time`` + the frames since it / ``fps``); a pose of the held frame's own (a pose file with no
  image) is replaced, since the video shows the photo there. Visibility, ground truth, dummies
  and overlays then see in a held frame what the photo sees;
* only frames with no photo before them (black), or held frames whose photo has no pose, are
  without a valid pose: a pose of their own is made invalid (pose ``null``), a frame with none
  gets no entry.

``provenance.json`` records it under ``video_from_frames``: the decoded frame count, the
ranges of held and black frames, the frames made invalid, the number of held frames that carry
their photo's pose, the encoder settings and a key
(sha256 of the image list with sizes and times, the settings and the frames-video rules version,
vistest.freshness), kept in the video's comment tag. The video is H.264,
yuv420p, constant frame rate ``fps`` (the scene's), libx264 ``crf`` 18, written atomically and
verified by decoding (:class:`vistest.videos.ffmpeg.VideoWriter`); a rerun with the same key and
an intact ``video.mp4`` keeps it.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import replace
from pathlib import Path

import numpy as np

from .. import freshness
from ..progress import progress_bar
from ..scene import MAX_FRAME_INDEX
from . import common as c

VIDEO_NAME = "video.mp4"
CRF = 18  # libx264 quality (visually lossless for these captures)
PRESET = "veryfast"  # libx264 preset: a 5,000-frame 1296x968 scan in minutes on two cores


def _runs(numbers: list[int]) -> list[list[int]]:
    """Consecutive runs of sorted ints as ``[first, last]`` pairs."""
    out: list[list[int]] = []
    for n in numbers:
        if out and n == out[-1][1] + 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return out


def plan(images: dict[int, str], last: int) -> tuple[list[int | None], list[int], list[int]]:
    """What decoded frame 0..``last`` shows: the source frame number of its image (None: black).

    Returns (shown, held, black): ``shown[n]`` the frame number whose image decoded frame ``n``
    shows; ``held`` the frames that repeat an earlier image; ``black`` the frames before the first image.
    """
    shown: list[int | None] = []
    held, black = [], []
    prev = None
    for n in range(last + 1):
        if n in images:
            prev = n
        elif prev is None:
            black.append(n)
        else:
            held.append(n)
        shown.append(prev)
    return shown, held, black


def content_key(color: c.ColorFrames, size: tuple[int, int], fps: float, last: int) -> str:
    """sha256 of what the video is made of: each image's frame number, path, size and time, the
    rotation, resizing, frame size and rate, the last frame number, the encoder settings and the
    stamp of the ``frames_video`` rules (vistest.freshness: a bump encodes every such video again)."""
    h = hashlib.sha256()
    head = {"size": list(size), "fps": fps, "last": last, "turn": color.turn, "resize": color.resize,
            "crf": CRF, "preset": PRESET, "rules": freshness.stamp("frames video")}
    h.update(json.dumps(head, sort_keys=True).encode())
    for n, p in color.images:
        try:
            st = os.stat(p)
            h.update(f"{n}\0{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        except OSError:
            raise c.AdapterError(f"{p}: colour image of frame {n}: cannot read it") from None
    return h.hexdigest()


def _read_rgb(path: str, n: int, color: c.ColorFrames, size: tuple[int, int]) -> np.ndarray:
    """The image of frame ``n`` as the scene's frame: RGB (H, W, 3) uint8, rotated and resized."""
    import cv2

    img = cv2.imread(path, cv2.IMREAD_COLOR)
    if img is None:
        raise c.AdapterError(f"{path}: colour image of frame {n}: cannot read it as an image")
    img = c.rotate_image(img, color.turn)
    w, h = size
    if img.shape[1] != w or img.shape[0] != h:
        if not color.resize:
            raise c.AdapterError(f"{path}: colour image of frame {n} is {img.shape[1]}x{img.shape[0]}"
                                 f"{' after the rotation' if color.turn else ''}; expected the scene's "
                                 f"image_size {w}x{h} (the size its intrinsics are for)")
        img = cv2.resize(img, (w, h), interpolation=cv2.INTER_AREA)
    return np.ascontiguousarray(img[:, :, ::-1])


def _up_to_date(path: Path, key: str) -> bool:
    """``path`` is an intact MP4 whose stored content key (vistest.videos.stored: the comment tag every
    video vistest writes carries) is ``key``."""
    from ..videos.ffmpeg import mp4_intact
    from ..videos.stored import stored_key

    return path.is_file() and mp4_intact(path) and stored_key(path) == key


def frames_video(capture: c.Capture, out_dir: str | os.PathLike, progress: bool = False
                 ) -> tuple[c.Capture, Path, dict]:
    """Encode ``capture``'s colour images into ``out_dir/video.mp4`` (module docstring).

    Returns the capture with the frames that have no image of their own made invalid, the
    video's path and the ``video_from_frames`` record for ``provenance.json``. AdapterError
    naming the file when the layout has no colour images, an image cannot be read or has
    another size than ``image_size``, or the size is odd (yuv420p needs even sizes).
    """
    from ..videos.ffmpeg import VideoWriter
    from ..videos.stored import key_metadata

    color = capture.color
    if color is None or not color.images:
        where = color.pattern if color is not None else "colour images"
        raise c.AdapterError(f"{capture.source}: --video-from-frames: no colour frames found ({where}); "
                             f"expected the scan's colour images, or give the video with --video")
    w, h = capture.image_size
    if w % 2 or h % 2:
        raise c.AdapterError(f"{capture.source}: --video-from-frames: image_size {w}x{h} is odd; H.264 (yuv420p) "
                             f"needs even sizes: encode the video yourself and pass it with --video")
    images = dict(color.images)
    last = max(max(images), max((f.index for f in capture.frames), default=0))
    if last > MAX_FRAME_INDEX:
        raise c.AdapterError(f"{capture.source}: --video-from-frames: frame number {last} exceeds "
                             f"{MAX_FRAME_INDEX} (the largest frame index a scene may give)")
    shown, held, black = plan(images, last)
    key = content_key(color, (w, h), float(capture.fps), last)
    out = Path(out_dir) / VIDEO_NAME
    if not _up_to_date(out, key):
        out.parent.mkdir(parents=True, exist_ok=True)
        blank = np.zeros((h, w, 3), np.uint8)
        with VideoWriter(out, fps=float(capture.fps), size=(w, h), crf=CRF, preset=PRESET,
                         metadata=key_metadata(key)) as writer, \
                progress_bar(last + 1, f"video from frames {capture.scene_id}", enabled=progress) as bar:
            current, current_n = blank, None
            for src in shown:
                if src is not None and src != current_n:
                    current, current_n = _read_rgb(images[src], src, color, (w, h)), src
                writer.write(current)
                bar.update(1)
    frames, invalid, posed = held_frames(capture.frames, shown, float(capture.fps))
    record = {
        "video": VIDEO_NAME,
        "frame_numbers": "decoded frame n of the video = the scene's frame index n = the source frame number "
                         "(the file's number // frame_step; ARKitScenes: the timestamp's rank)",
        "source_images": color.pattern,
        "decoded_frames": last + 1,
        "images": len(images),
        "first_image": min(images),
        "held": _runs(held),
        "black": _runs(black),
        "made_invalid": invalid,
        "held_posed": posed,
        "held_frames": "a held frame is the photo it repeats: its pose, intrinsics, depth, image and validity; "
                       "time: its own (the photo's time + frames since it / fps)",
        "fps": float(capture.fps),
        "rotation": color.turn,
        "resized": color.resize,
        "encoder": f"libx264 yuv420p crf {CRF} preset {PRESET}, constant frame rate",
        "key": key,
    }
    step = _common_step(sorted(images))
    if step > 1 and len(held) > len(images):
        record["warning"] = (f"the images are every {step}th frame ({len(held)} of {last + 1} decoded frames repeat "
                             f"the previous image, keeping the real timing)"
                             + (f"; -O frame_step={step} makes a video of the images alone"
                                if color.frame_step else ""))
    return replace(capture, frames=frames), out, record


def held_frames(frames: tuple[c.Frame, ...], shown: list[int | None], fps: float
                ) -> tuple[tuple[c.Frame, ...], list[int], int]:
    """The scene's frames for a video whose decoded frame ``n`` shows the image of frame ``shown[n]``
    (:func:`plan`; None: black). ``frames``: the source's frames (a pose file each), any order.

    A frame showing its own image is kept as it is. A held frame (``shown[n] < n``) becomes a
    copy of its photo's frame (pose, intrinsics, depth, image, validity) at index ``n`` and time
    ``photo.time + (n - shown[n]) / fps`` (seconds), replacing any pose of its own. A black
    frame, or a held frame whose photo has no frame, keeps no pose: a valid pose of its own is
    made invalid (listed), and with none it gets no entry. Returns (frames in index order, the
    indices made invalid, the number of held frames given a photo's valid pose).
    """
    by_index = {f.index: f for f in frames}
    out: list[c.Frame] = []
    invalid: list[int] = []
    posed = 0
    for n, src in enumerate(shown):
        own, photo = by_index.get(n), (None if src is None else by_index.get(src))
        if src == n:
            if own is not None:
                out.append(own)
        elif photo is not None:
            out.append(replace(photo, index=n, time=photo.time + (n - src) / fps))
            posed += photo.valid
        elif own is not None:
            if own.valid:
                invalid.append(n)
            out.append(replace(own, camera_to_world=None))
    return tuple(out), invalid, posed


def _common_step(numbers: list[int]) -> int:
    """The greatest common divisor of the gaps between consecutive frame numbers (1 for one image)."""
    diffs = np.diff(numbers)
    return int(np.gcd.reduce(diffs)) if len(diffs) else 1


MAX_HELD_S = 10.0  # seconds: the longest run of frames without an image of their own encoded without being asked


def check_gaps(capture: c.Capture, allow: bool = False) -> None:
    """Refuse (AdapterError naming the image files) a run of more than :data:`MAX_HELD_S` seconds
    of frames without an image of their own (at the scene's fps): frames before the first image,
    between two images or after the last image up to the last posed frame, which the video would
    hold (or show black). A stray ``color/9999999.jpg`` would otherwise encode ten million held
    frames. ``allow`` (``--allow-frame-gaps``): any gap is encoded."""
    if allow or capture.color is None or not capture.color.images:
        return
    images = dict(capture.color.images)
    numbers = sorted(images)
    most = int(MAX_HELD_S * float(capture.fps))  # frames
    last_posed = max((f.index for f in capture.frames), default=0)
    runs = [(numbers[0], f"{images[numbers[0]]}: the first image is frame {numbers[0]}, after {numbers[0]} frames "
                         f"without an image (black in the video)")]
    runs += [(b - a - 1, f"{images[b]}: frame {b} comes {b - a - 1} frames after the previous image "
                         f"({images[a]}, frame {a}), all holding it")
             for a, b in zip(numbers, numbers[1:])]
    tail = last_posed - numbers[-1]
    runs.append((tail, f"{capture.source}: frame {last_posed} has a pose, {tail} frames after the last image "
                       f"({images[numbers[-1]]}, frame {numbers[-1]}), all holding it"))
    gap, what = max(runs, key=lambda r: r[0])
    if gap > most:
        raise c.AdapterError(f"{what}: {gap / float(capture.fps):.1f} s at {float(capture.fps):g} fps; expected "
                             f"gaps of at most {MAX_HELD_S:g} s ({most} frames) for --video-from-frames: remove a "
                             f"stray image, or pass --allow-frame-gaps to encode the gap")
