"""Raw frames as the writer handles them: black frames and rectangles filled in decoded frames.

Conventions: frames are raw yuv420p (I420: a Y plane of W x H bytes, then U and V of
W/2 x H/2 each), limited range (black: Y = 16, U = V = 128), of even (W, H) pixels; rectangles
``(x0, y0, x1, y1)`` are half-open pixel bounds, even-aligned (vistest.videos.plan).
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from .evidence import Rect


def black_frame(size: tuple[int, int]) -> bytes:
    """One black yuv420p frame (limited range: Y = 16, U = V = 128) of even (W, H)."""
    w, h = size
    return bytes([16]) * (w * h) + bytes([128]) * (w * h // 2)


def _planes(a: np.ndarray, size: tuple[int, int]) -> list[tuple[np.ndarray, int, int]]:
    """(plane view, subsampling, neutral value) of Y, U, V in a flat I420 array."""
    w, h = size
    y = a[: w * h].reshape(h, w)
    u = a[w * h: w * h + w * h // 4].reshape(h // 2, w // 2)
    v = a[w * h + w * h // 4:].reshape(h // 2, w // 2)
    return [(y, 1, 16), (u, 2, 128), (v, 2, 128)]


def _fill_plane(plane: np.ndarray, rect: Rect, fill: str, neutral: int) -> None:
    """Fill ``plane[y0:y1, x0:x1]`` in place: ``black`` (the neutral value), ``blur`` (a Gaussian
    of sigma a quarter of the rectangle's longer side, computed with its surroundings) or
    ``inpaint`` (OpenCV Telea from a 16-pixel ring around it; neutral when no ring exists)."""
    import cv2

    x0, y0, x1, y1 = rect
    ph, pw = plane.shape
    if x1 <= x0 or y1 <= y0:
        return
    whole = x0 == 0 and y0 == 0 and x1 == pw and y1 == ph
    if fill == "black" or (fill == "inpaint" and whole):
        plane[y0:y1, x0:x1] = neutral
        return
    if fill == "blur":
        sigma = max(2.0, max(x1 - x0, y1 - y0) / 4.0)
        m = int(3 * sigma)
    else:
        m = 16
    ya, yb, xa, xb = max(0, y0 - m), min(ph, y1 + m), max(0, x0 - m), min(pw, x1 + m)
    region = np.ascontiguousarray(plane[ya:yb, xa:xb])
    if fill == "blur":
        out = cv2.GaussianBlur(region, (0, 0), sigmaX=sigma)
    elif fill == "inpaint":
        mask = np.zeros(region.shape, np.uint8)
        mask[y0 - ya:y1 - ya, x0 - xa:x1 - xa] = 255
        out = cv2.inpaint(region, mask, 3, cv2.INPAINT_TELEA)
    else:
        raise ValueError(f"fill: expected black, blur or inpaint, got {fill!r}")
    plane[y0:y1, x0:x1] = out[y0 - ya:y1 - ya, x0 - xa:x1 - xa]


def fill_rects(frame, size: tuple[int, int], rects: Iterable[Rect], fill: str = "black") -> np.ndarray:
    """A copy of a raw yuv420p frame (bytes-like, even (W, H)) with each even-aligned
    rectangle ``(x0, y0, x1, y1)`` (half-open, pixels) filled; returns the flat uint8 array."""
    a = np.frombuffer(frame, np.uint8).copy()
    planes = _planes(a, size)
    for x0, y0, x1, y1 in rects:
        for plane, sub, neutral in planes:
            _fill_plane(plane, (x0 // sub, y0 // sub, x1 // sub, y1 // sub), fill, neutral)
    return a
