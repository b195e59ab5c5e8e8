"""The scene's source video, checked against the scene (stage 5: what every command that reads
the video, ``vistest run`` and ``vistest overlay``, does first): its decoded size and frame count
must match ``scene.json``, or, with ``--scale-intrinsics``, the scene is scaled to the video.
"""
from __future__ import annotations

import dataclasses
import os

from ..errors import InputError
from ..scene import Scene
from .ffmpeg import VideoInfo, count_frames, mp4_intact, mp4_sample_count, probe


def scale_scene(scene: Scene, size: tuple[int, int]) -> Scene:
    """The scene for frames resized to ``size`` (W, H): image size and every intrinsics
    scaled (pixel edges scale, :meth:`Intrinsics.scaled`); poses and boxes unchanged. A 2D scene
    (no camera) gets the new image size only: its table scales the annotated regions."""
    sx, sy = size[0] / scene.image_size[0], size[1] / scene.image_size[1]
    if scene.camera is None:  # a 2D scene: its visibility scales the regions to image_size (vistest.tracks2d)
        return dataclasses.replace(scene, image_size=tuple(size))
    frames = tuple(dataclasses.replace(f, intrinsics=f.intrinsics.scaled(sx, sy)) if f.intrinsics else f
                   for f in scene.frames)
    return dataclasses.replace(scene, image_size=tuple(size), camera=scene.camera.scaled(sx, sy), frames=frames)


def check_video(scene: Scene, scene_json: str | os.PathLike, scale_intrinsics: bool = False,
                ) -> tuple[Scene, VideoInfo, list[str]]:
    """Probe the scene's video and check it against the scene: decoded size == ``image_size``
    (else an error, or with ``scale_intrinsics`` the scene scaled to the video), decoded frame
    count == ``scene.num_frames`` (counted by decoding when the header's estimate differs or an
    MP4's boxes are not whole, as in a truncated file; otherwise checked exactly while the
    videos are written, before any output is replaced). Returns (scene, info, warnings).
    """
    if scene.video is None:
        raise InputError(f"{scene_json}: video: missing; writing videos needs the scene's source video")
    path = scene.path(scene.video)
    info = probe(path)
    warnings = []
    if info.size != tuple(scene.image_size):
        if not scale_intrinsics:
            fix = ("pass --scale-intrinsics to scale the annotated regions to the video" if scene.camera is None
                   else "pass --scale-intrinsics to scale the intrinsics to the video")
            raise InputError(f"{path}: decodes to {info.size[0]}x{info.size[1]} frames but {scene_json} says "
                             f"image_size {list(scene.image_size)}; {fix}")
        warnings.append(f"intrinsics scaled from {scene.image_size[0]}x{scene.image_size[1]} to the video's "
                        f"{info.size[0]}x{info.size[1]}")
        scene = scale_scene(scene, info.size)
    if info.frames_estimate != scene.num_frames or (mp4_sample_count(path) is not None and not mp4_intact(path)):
        n = count_frames(path)
        if n != scene.num_frames:
            if scene.tracks2d is not None:  # a 2D scene: no poses, one number
                raise InputError(f"{path}: decodes to {n} frames but {scene_json} says num_frames "
                                 f"{scene.num_frames}; the annotation's frames must be the decoded video's")
            raise InputError(f"{path}: decodes to {n} frames but {scene_json} frames describe {scene.num_frames} "
                             f"(frames[].index: last + 1); the poses must match the decoded video")
    if abs(info.fps - scene.fps) > 0.01 * scene.fps:
        warnings.append(f"{path}: the video says {info.fps:g} fps, {scene_json} says fps {scene.fps:g}; "
                        f"samplers and the all_frame/dummy videos use the scene's")
    return scene, info, warnings
