"""Content keys stored in written videos, and which outputs a rerun keeps (stage 5).

Every video vistest writes carries its content key (vistest.videos.plan: ``Variant.key``, or
all_frame's stream-copy key ``Variant.remux_key``) in the container's ``comment`` tag, as
``vistest:<key>``. A rerun keeps an output whose key is an expected one and whose file is
intact (:func:`up_to_date`) and redoes any other. Encodings are named as the manifest names
them: ``stream-copy``, ``x264`` (long-GOP), ``x264-intra`` (from the frame pool).
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Mapping, Sequence

from ..atomic import check_file
from .ffmpeg import VideoError, mp4_intact, mp4_sample_count, probe
from .plan import Variant
from .recipes import STREAM_COPY, X264, X264_INTRA

KEY_TAG = "comment"     # container tag holding the content key
KEY_PREFIX = "vistest:"


def key_metadata(key: str) -> dict[str, str]:
    """The container metadata that stores ``key`` (``{"comment": "vistest:<key>"}``)."""
    return {KEY_TAG: KEY_PREFIX + key}


def stored_key(path: str | os.PathLike) -> str | None:
    """The content key stored in a video written by vistest, None when absent or unreadable."""
    try:
        tag = probe(path).metadata.get(KEY_TAG, "")
    except (OSError, VideoError):
        return None
    return tag[len(KEY_PREFIX):] if tag.startswith(KEY_PREFIX) else None


def encoding_of(v: Variant) -> str:
    """How ``v`` is written when encoded: all-intra from the pool, or long-GOP."""
    return X264_INTRA if v.intra else X264


def _key_encoding(v: Variant, key: str | None) -> str | None:
    """The encoding of an output of ``v`` holding ``key`` (its own key, or all_frame's stream-copy
    key), None for any other key."""
    if key is not None and key == v.key:
        return encoding_of(v)
    return STREAM_COPY if v.remux_key is not None and key == v.remux_key else None


def up_to_date(outdir: Path, variants: Sequence[Variant], records: Mapping[str, Mapping] | None = None,
               verify: bool = False) -> dict[str, str]:
    """{path: encoding} of the variants whose output is there with an expected key (its own, or
    all_frame's stream-copy key) and intact, checked in parallel.

    ``records``: the scene's record of its files (vistest.videos.manifest: ``bytes``,
    ``sha256``, ``mtime_ns``, ``key`` per path). A recorded output is up to date when its
    recorded key is expected and the file matches its record (vistest.atomic.check_file: the
    size, then the sha256 unless the modification time is the recorded one; ``verify``: always
    the sha256); a file that no longer matches is redone. An output without a record (written
    by another run folder's run and linked here, or by a run killed while renaming its outputs)
    is trusted when its ``comment`` tag holds an expected key, its MP4 boxes are whole and its
    sample table holds its frames."""
    records = records or {}

    def check(v: Variant) -> str | None:
        p = outdir / v.path
        rec = records.get(v.path)
        if rec is not None:
            enc = _key_encoding(v, rec.get("key"))
            return enc if enc is not None and check_file(p, rec, verify) is None else None
        if not p.is_file():
            return None
        enc = _key_encoding(v, stored_key(p))
        if enc is None or not mp4_intact(p) or mp4_sample_count(p) != v.num_frames:
            return None
        return enc

    with ThreadPoolExecutor(max_workers=8) as pool:
        return {v.path: enc for v, enc in zip(variants, pool.map(check, variants)) if enc}
