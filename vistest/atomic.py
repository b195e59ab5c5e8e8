"""Atomic outputs: write to a temporary file in the destination folder, then rename.

A killed run therefore never leaves a half-written file under the final name; the
temporary names start with ``.`` and end in ``.tmp<suffix>`` (the suffix is kept so
tools that pick a format from it, such as ffmpeg or numpy, still do).
"""
from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path

# the temporary name of temp_path_for(): "." + stem + "." + mkstemp's 8 random characters + ".tmp" + suffix
_TEMP_NAME = re.compile(r"^\.(?P<stem>.+)\.[a-z0-9_]{8}\.tmp(?P<suffix>(\.[^.]*)?)$")


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


def temp_target(name: str) -> str | None:
    """The file name a temporary file named ``name`` (by :func:`temp_path_for`) was to
    replace (``.x.ab12cd34.tmp.mp4`` -> ``x.mp4``), None when ``name`` is not one."""
    m = _TEMP_NAME.match(name)
    return None if m is None else m.group("stem") + m.group("suffix")


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
