"""Atomic outputs: write to a temporary file in the destination folder, then rename.

A killed run therefore never leaves a half-written file under the final name; the
temporary names start with ``.`` and end in ``.tmp<suffix>`` (the suffix is kept so
tools that pick a format from it, such as ffmpeg or numpy, still do).
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def temp_path_for(path: str | os.PathLike) -> Path:
    """Create (empty) and return a temporary file beside ``path``, with the same suffix."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=f".tmp{path.suffix}", dir=path.parent)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; outputs get the mode open() would give
    return Path(tmp)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path to write; on success it replaces ``path``, else it is removed."""
    tmp = temp_path_for(path)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    """Write text or bytes to ``path`` atomically."""
    with atomic_path(path) as tmp:
        if isinstance(data, str):
            tmp.write_text(data)
        else:
            tmp.write_bytes(data)
