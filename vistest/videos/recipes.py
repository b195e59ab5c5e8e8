"""Recipes and content keys: what a written video is made of, and the key that names it.

A *recipe* lists a video's source content, frames (0-based decoded frames of the source), black
frames, mask rectangles, mode, fill, size, frame rate and encoder settings; its *content key*
(:func:`content_key`) is the sha256 of the recipe's canonical JSON and the video rules' version. A
rerun skips an output whose key matches (vistest.videos.write), and a dummy's file name is its key. Full-length dummies
are :func:`dummy_recipe` of a mode; budget dummies take positions of one (:func:`budget_recipe`).
How a video is written (the manifest's ``encoding``): :data:`STREAM_COPY` of the source
(all_frame, when frame-exact), :data:`X264` (long-GOP, full-length videos) or :data:`X264_INTRA`
(all-intra frames from the scene's frame pool, n-frame videos).
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping, Sequence

from .. import freshness
from ..errors import InputError
from .config import DUMMY_MODES, EncoderSettings
from .evidence import Rect
from .ffmpeg import frame_rate

KEY_FORMAT = "vistest.variant"  # + "/" + the videos rules version (vistest.freshness): the key's format tag

# How a video is written (the manifest's ``encoding``): a stream copy of the source (all_frame,
# when frame-exact), a long-GOP libx264 encode (full-length videos), or all-intra libx264 frames
# from the scene's frame pool (n-frame videos).
STREAM_COPY, X264, X264_INTRA = "stream-copy", "x264", "x264-intra"


def content_key(recipe: Mapping[str, Any]) -> str:
    """sha256 (hex) of a recipe's canonical JSON (sorted keys, no spaces), with ``format``:
    ``vistest.variant/{videos rules version}`` (vistest.freshness.VERSIONS["videos"], read when
    called): a bump of the video rules changes every key, so a plain rerun writes every video
    again. (The tag was ``vistest.variant/1`` before the two were one number; the videos version is
    1, so keys written before are still current.)"""
    text = json.dumps({"format": f"{KEY_FORMAT}/{freshness.version('videos')}", **recipe}, sort_keys=True,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def video_recipe(source_key: str | None, size, fps: float, settings: EncoderSettings, frames, black=(), masks=(),
                 mode=None, fill=None, intra: bool = False) -> dict:
    """The recipe of an encoded video (``intra``: all-intra settings; ``source_key`` None: no source pixels)."""
    return {"source": source_key, "size": list(size), "rate": frame_rate(fps), "frames": list(frames),
            "black": list(black), "masks": [[f, [list(r) for r in rs]] for f, rs in masks], "mode": mode,
            "fill": fill, "encoder": settings.to_json(intra)}


def remux_recipe(source_key: str, size, fps: float, frames) -> dict:
    return {"source": source_key, "size": list(size), "rate": frame_rate(fps), "frames": list(frames),
            "encoder": {"codec": STREAM_COPY}}


def dummy_recipe(mode: str, n: int, evidence: Sequence[int], rects: Mapping[int, tuple[Rect, ...]],
                  unknown: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...], tuple]:
    """(frames, black, masks) of a full-length dummy of ``mode`` over ``n`` source frames."""
    everything = tuple(range(n))
    if mode == "drop":
        gone = set(evidence)
        return tuple(f for f in everything if f not in gone), (), ()
    if mode == "black":
        return everything, tuple(evidence), ()
    if mode == "mask":
        black = set(unknown)
        return everything, tuple(sorted(black)), tuple((f, rs) for f, rs in rects.items() if f not in black)
    if mode == "allblack":
        return everything, everything, ()
    raise InputError(f"dummy mode: expected one of {', '.join(DUMMY_MODES)}, got {mode!r}")


def budget_recipe(frames: Sequence[int], black: Sequence[int], masks: Sequence[tuple[int, tuple[Rect, ...]]],
                  positions: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...], tuple]:
    """(frames, black, masks) of the budget dummy holding positions ``positions`` of the
    full-length dummy (``frames``, ``black``, ``masks``): its frames in that order (repeats
    kept), and the black and masked frames among them."""
    sel = tuple(int(frames[p]) for p in positions)
    held = set(sel)
    return sel, tuple(f for f in black if f in held), tuple((f, rs) for f, rs in masks if f in held)
