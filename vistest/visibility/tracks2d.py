"""Visibility from 2D tracks: the frames x objects table of a 2D scene (vistest.tracks2d), in the
format of :class:`vistest.visibility.table.Visibility`, so that the budget, video, run and export
stages read it unchanged (docs/tracks2d.md).

Per decoded frame f and object o, from the annotation's state there (:attr:`vistest.tracks2d.Tracks2D.states`):

* ``visible[f, o]``: the region's pixels over the image's ``W * H``: the mask's pixel count where a
  mask exists, else the box's area clipped to the image (annotated frames); interpolated linearly
  between two annotated frames within the gap; 0 where the object is absent.
* ``evidence[f, o]`` = ``projected[f, o]``: the area of where the object may be, the *evidence box*
  (the box; between two annotated frames the hull of their two boxes), over the image: what dummies
  remove. ``visible <= evidence`` always (a mask lies inside its box; an interpolated box inside the
  hull).
* ``bbox[f, o]``: the evidence box as integer half-open pixel bounds (``floor`` of x0, y0, ``ceil``
  of x1, y1), NaN where absent or unknown.
* Unknown (no annotation says; :data:`vistest.tracks2d.UNKNOWN`): NaN in ``visible``, ``evidence``,
  ``projected`` and ``bbox``; the frame stays ``valid`` (its other objects are known). A NaN is never
  seen (vistest.budget.seen) and the budget stage reports answers that depend on it (``unknown``).

``params``: ``input`` = ``"tracks2d"``, ``occlusion`` = ``"none"`` (an annotated region is what
shows: nothing of 3D can hide it further), ``visible`` = ``"mask"``/``"box"`` (whether any mask was
given), ``max_gap_s``, ``source_format``, and ``state_counts`` (frames x objects per state).
"""
from __future__ import annotations

import numpy as np

from .. import freshness
from ..errors import InputError
from ..tracks2d import STATE_NAMES, UNKNOWN


def tracks2d_visibility(scene) -> dict:
    """The visibility table of a 2D scene (module docstring), as the fields of
    :class:`vistest.visibility.table.Visibility`: :func:`vistest.visibility.table.compute_visibility`
    checks the occlusion mode (``auto`` or ``none``: a 2D region is what shows) and builds the table,
    so that this module imports nothing of the table's (no import cycle)."""
    tracks = scene.tracks2d
    if tracks is None:
        raise InputError(f"{scene.source}: format: expected a 2D scene (vistest.tracks2d/1)")
    st = tracks.states
    w, h = scene.image_size
    tw, th = tracks.image_size
    if (w, h) != (tw, th):  # the regions are in the annotation's pixels: a resized video scales them
        sx, sy = w / tw, h / th
        ebox = st.evidence_box * np.array([sx, sy, sx, sy])
        area = st.area * (sx * sy)
    else:
        ebox, area = st.evidence_box, st.area
    image = float(w) * float(h)
    unknown = st.state == UNKNOWN
    ext = np.clip(ebox[..., 2] - ebox[..., 0], 0, None) * np.clip(ebox[..., 3] - ebox[..., 1], 0, None)
    evidence = np.where(unknown, np.nan, np.nan_to_num(ext) / image)
    visible = np.where(unknown, np.nan, np.minimum(np.nan_to_num(area) / image, evidence))
    bbox = np.stack([np.floor(ebox[..., 0]), np.floor(ebox[..., 1]), np.ceil(ebox[..., 2]), np.ceil(ebox[..., 3])],
                    axis=-1)
    bbox[~(np.nan_to_num(ext) > 0)] = np.nan
    n = len(scene.frames)
    counts = {name: int((st.state == k).sum()) for k, name in enumerate(STATE_NAMES)}
    params = {"input": "tracks2d", "occlusion": "none", "visible": "mask" if _has_masks(tracks) else "box",
              "max_gap_s": float(tracks.max_gap_s), "source_format": tracks.source_format,
              "state_counts": counts, "rules": freshness.stamp("visibility table")}
    return dict(scene_id=scene.scene_id, projected=evidence.copy(), visible=visible, bbox=bbox,
                object_ids=np.array(scene.object_ids, dtype=str),
                frame_index=np.arange(n, dtype=np.int64), valid=np.ones(n, bool), params=params,
                source=scene.source, evidence=evidence)


def _has_masks(tracks) -> bool:
    return any(r.mask is not None for t in tracks.objects for r in t.regions)
