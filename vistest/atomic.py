"""Atomic outputs: write to a temporary file in the destination folder, then rename.

A killed run therefore never leaves a half-written file under the final name; the
temporary names start with ``.`` and end in ``.tmp<suffix>`` (the suffix is kept so
tools that pick a format from it, such as ffmpeg or numpy, still do).
"""
from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import Callable


def temp_path_for(path: str | os.PathLike, register: Callable[[Path], None] | None = None) -> Path:
    """Create (empty) and return a temporary file beside ``path``, with the same suffix.

    ``register``: called with the temporary path just before the file is created, so that a
    caller interrupted at any point (Ctrl-C) already knows what to remove."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        tmp = path.parent / f".{path.stem}.{secrets.token_hex(4)}.tmp{path.suffix}"
        if register is not None:
            register(tmp)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the mode open() would give
        except FileExistsError:
            continue
        os.close(fd)
        return tmp


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
