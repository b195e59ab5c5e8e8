"""Tiles on a grid (contact sheets) and their PNG bytes: OpenCV and numpy only.

Split from vistest.look.overlay so that the pictures of ``vistest run`` (vistest.look.per_question)
and ``vistest sheet`` (vistest.look.sheets) import no Numba (the overlay's kernels): in a run the
visibility engine's ~0.5 s of Numba and SciPy imports stay in its own process (issue #47).
Pixel conventions: RGB ``uint8`` arrays, row 0 at the top.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np

from . import OVERLAY_COLUMNS
from ..atomic import write_atomic


def contact_sheet(tiles: Sequence[np.ndarray], columns: int = OVERLAY_COLUMNS, captions: Sequence[str] | None = None,
                  title: str | None = None, gap: int = 4, background: tuple[int, int, int] = (24, 24, 24),
                  caption_colours: Sequence[tuple[int, int, int]] | None = None) -> np.ndarray:
    """Tiles (RGB, all the same size) on a grid of ``columns``, row by row, each with an
    optional caption line under it (shrunk to fit the tile; ``caption_colours`` per tile,
    default light grey) and an optional title line on top; returns RGB."""
    import cv2

    if not tiles:
        raise ValueError("contact_sheet: expected at least one tile")
    th, tw = tiles[0].shape[:2]
    if any(t.shape != tiles[0].shape for t in tiles):
        raise ValueError("contact_sheet: expected tiles of one size")
    columns = max(1, min(columns, len(tiles)))
    rows = -(-len(tiles) // columns)
    scale = 0.45
    font = cv2.FONT_HERSHEY_SIMPLEX
    (_, lh), base = cv2.getTextSize("Ag", font, scale, 1)
    line = lh + base + 6
    cap_h = line if captions else 0
    top = line + gap if title else 0
    width = gap + columns * (tw + gap)
    sheet = np.empty((top + gap + rows * (th + cap_h + gap), width, 3), np.uint8)
    cv2.rectangle(sheet, (0, 0), (sheet.shape[1] - 1, sheet.shape[0] - 1), background, cv2.FILLED)  # 25x numpy's
    if title:
        tws = cv2.getTextSize(title, font, scale, 1)[0][0]
        cv2.putText(sheet, title, (gap + 2, gap + lh + 2), font, scale * min(1.0, (width - 8) / max(tws, 1)),
                    (235, 235, 235), 1, cv2.LINE_AA)
    for n, t in enumerate(tiles):
        r, c = divmod(n, columns)
        x = gap + c * (tw + gap)
        y = top + gap + r * (th + cap_h + gap)
        sheet[y:y + th, x:x + tw] = t
        if captions:
            cw = cv2.getTextSize(captions[n], font, scale, 1)[0][0]
            colour = caption_colours[n] if caption_colours else (235, 235, 235)
            cv2.putText(sheet, captions[n], (x + 2, y + th + lh + 2), font, scale * min(1.0, (tw - 4) / max(cw, 1)),
                        colour, 1, cv2.LINE_AA)
    return sheet


def tile(img: np.ndarray, width: int) -> np.ndarray:
    """``img`` resized to ``width`` pixels wide (aspect kept; area filter when shrinking)."""
    import cv2

    h, w = img.shape[:2]
    if width == w:
        return img
    height = max(1, round(h * width / w))
    return cv2.resize(img, (width, height), interpolation=cv2.INTER_AREA if width < w else cv2.INTER_LINEAR)


def png_bytes(rgb: np.ndarray) -> bytes:
    """PNG encoding of an RGB ``uint8`` image."""
    import cv2

    ok, buf = cv2.imencode(".png", cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2BGR))
    if not ok:
        raise RuntimeError("OpenCV could not encode the PNG")
    return buf.tobytes()


def write_png(path: str | os.PathLike, rgb: np.ndarray) -> Path:
    """Write an RGB image as PNG atomically."""
    write_atomic(path, png_bytes(rgb))
    return Path(path)
