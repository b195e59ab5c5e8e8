"""The scene's frame pool: every distinct frame of the n-frame videos encoded once, all-intra.

An n-frame video (a budget video or a budget dummy, at the budget rate) is a sequence of
*pool entries*: a decoded source frame as it is, the same frame with rectangles filled, or
the black frame. Many videos share entries (the black and mask dummies of a budget hold the
budget video's frames; every question's dummies share the black frame), so vistest encodes
each distinct entry once, as an IDR frame of one all-intra H.264 stream (the *pool*, libx264
``-g 1``, fed during the scene's decode pass), and assembles every n-frame video by stream
copy of its entries' access units. An IDR frame references no other frame, so any sequence
of them, repeats included, is a valid H.264 stream that decodes to exactly those frames.

* :class:`PoolPlan` - the entries, in a fixed order (black first, then by source frame),
  and for every n-frame variant the entry of each of its frames. The order depends only on
  the variants, so a rerun of the same plan encodes the same pool, byte for byte (libx264 is
  deterministic for a given thread count).
* :func:`access_units` / :func:`file_access_units` - the access units of an Annex-B H.264
  stream (byte ranges; H.264
  7.4.1.2.3: a new unit starts at an AUD, SPS, PPS or SEI after a slice, or at a slice whose
  ``first_mb_in_slice`` is 0).
* :func:`concat_list` - an ffmpeg ``concatf:`` list of ``subfile`` byte ranges of the pool
  that is the Annex-B stream of one video (the parameter sets of the first unit, then each
  frame's slices), which ``ffmpeg -f h264 -framerate R -i concatf:LIST -c copy`` muxes with
  no copy of the pool on disk.

Conventions: frame numbers are 0-based decoded source frames; rectangles ``(x0, y0, x1, y1)``
half-open pixel bounds, even-aligned; byte offsets are into the pool file.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .plan import Variant

BLACK = ("black",)
PoolEntry = tuple  # ("black",) | ("frame", i) | ("mask", i, rects, fill)
_START_CODE = re.compile(b"\x00\x00\x01")
_VCL = range(1, 6)       # NAL unit types of coded slices
_AU_START = (6, 7, 8, 9)  # SEI, SPS, PPS, AUD: a new access unit when they follow a slice


def entry_of(v: Variant, frame: int, black: frozenset, masks: dict) -> PoolEntry:
    """The pool entry of one frame of ``v`` (its ``black`` set and ``masks`` dict given)."""
    if frame in black:
        return BLACK
    if frame in masks:
        return ("mask", frame, masks[frame], v.fill or "black")
    return ("frame", frame)


def _order(e: PoolEntry) -> tuple:
    if e == BLACK:
        return (-1, 0, ())
    return (e[1], 0, ()) if e[0] == "frame" else (e[1], 1, (e[2], e[3]))


@dataclass(frozen=True)
class PoolPlan:
    """``entries``: the pool's frames in encoding order (black first, then by source frame:
    the frame as decoded, then its masked versions); ``index``: entry -> position;
    ``uses``: for each variant path, the entry position of each of its frames."""

    entries: tuple[PoolEntry, ...]
    index: dict
    uses: dict

    @classmethod
    def of(cls, variants: Sequence[Variant]) -> "PoolPlan":
        per: dict[str, list[PoolEntry]] = {}
        for v in variants:
            black, masks = frozenset(v.black), dict(v.masks)
            per[v.path] = [entry_of(v, f, black, masks) for f in v.frames]
        entries = tuple(sorted({e for es in per.values() for e in es}, key=_order))
        index = {e: k for k, e in enumerate(entries)}
        return cls(entries, index, {p: tuple(index[e] for e in es) for p, es in per.items()})

    @property
    def has_black(self) -> bool:
        return bool(self.entries) and self.entries[0] == BLACK

    def by_frame(self) -> dict[int, list[PoolEntry]]:
        """Source frame -> its entries (as decoded and masked), in pool order."""
        out: dict[int, list[PoolEntry]] = {}
        for e in self.entries:
            if e != BLACK:
                out.setdefault(e[1], []).append(e)
        return out


@dataclass(frozen=True)
class AccessUnit:
    """One coded frame of an Annex-B stream: bytes ``[start, end)``; ``vcl``: where its first
    slice NAL unit starts (what precedes it are parameter sets, SEI and delimiters)."""

    start: int
    vcl: int
    end: int


def _nals(data: bytes, base: int, first: int, stop: int) -> list[tuple[int, int, bool]]:
    """(absolute start incl. a 4-byte start code's zero, NAL type, first_mb_in_slice == 0)
    of the NAL units whose start code begins in ``data[first:stop]``; ``base``: the absolute
    offset of ``data``. A start code needs the two bytes after it in ``data``."""
    out = []
    for m in _START_CODE.finditer(data, first, stop + 2):
        s = m.start()
        if s >= stop or m.end() >= len(data):
            continue
        begin = s - 1 if s > 0 and data[s - 1] == 0 else s
        t = data[m.end()] & 0x1F
        first_mb_zero = t in _VCL and m.end() + 1 < len(data) and bool(data[m.end() + 1] & 0x80)  # ue(v) 0 = '1'
        out.append((base + begin, t, first_mb_zero))
    return out


def _group(nals: Sequence[tuple[int, int, bool]], end: int) -> list[AccessUnit]:
    """Access units from NAL units (H.264 7.4.1.2.3); ValueError for a unit with no slice."""
    units: list[list] = []
    prev_vcl = False
    for begin, t, first_mb_zero in nals:
        vcl = t in _VCL
        if not units or (t in _AU_START and prev_vcl) or (vcl and prev_vcl and first_mb_zero):
            units.append([begin, None])
        if vcl and units[-1][1] is None:
            units[-1][1] = begin
        prev_vcl = vcl
    out = []
    for k, (begin, vcl) in enumerate(units):
        stop = units[k + 1][0] if k + 1 < len(units) else end
        if vcl is None:
            raise ValueError(f"H.264 stream: access unit {k} (bytes {begin}..{stop}) has no slice")
        out.append(AccessUnit(begin, vcl, stop))
    return out


def access_units(data: bytes) -> list[AccessUnit]:
    """The access units of an Annex-B H.264 byte stream, in order (ValueError when a unit has
    no slice, i.e. the stream is not H.264 Annex-B or is truncated)."""
    return _group(_nals(data, 0, 0, len(data)), len(data))


def file_access_units(path: str | Path, chunk: int = 1 << 22) -> list[AccessUnit]:
    """:func:`access_units` of a file, read ``chunk`` bytes at a time (constant memory)."""
    nals: list[tuple[int, int, bool]] = []
    keep, base, scanned = b"", 0, 0  # unscanned tail of the last read (from ``base``); its first ``scanned`` bytes were
    with open(path, "rb") as f:
        while True:
            block = f.read(chunk)
            data = keep + block
            stop = len(data) if not block else len(data) - 4  # a start code needs the 2 bytes after it
            if stop > scanned:
                nals += _nals(data, base, scanned, stop)
                keep, base, scanned = data[stop - 1:], base + stop - 1, 1  # one scanned byte: a 4-byte code's zero
            else:
                keep = data
            if not block:
                return _group(nals, base + len(keep))


def concat_list(pool: Path, units: Sequence[AccessUnit], positions: Sequence[int]) -> str:
    """The ``concatf:`` list (one ``subfile`` URL per line) of the Annex-B stream holding the
    pool's units at ``positions`` in order: the first unit's parameter sets and SEI, then the
    slices of each. Every unit is an IDR frame of one encoder, so they share those sets."""
    if not positions:
        raise ValueError("concat_list: no frames")
    src = str(Path(pool).resolve())
    if "\n" in src or ",:" in src:
        raise ValueError(f"{src}: a path with a newline or ',:' cannot be named in an ffmpeg subfile list")
    head = units[0]
    lines = [f"subfile,,start,{head.start},end,{head.vcl},,:{src}"] if head.vcl > head.start else []
    lines += [f"subfile,,start,{units[p].vcl},end,{units[p].end},,:{src}" for p in positions]
    return "\n".join(lines) + "\n"
