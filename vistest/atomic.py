"""Atomic outputs: write to a temporary file in the destination folder, then rename.

A killed run therefore never leaves a half-written file under the final name; the
temporary names start with ``.`` and end in ``.tmp<suffix>`` (the suffix is kept so
tools that pick a format from it, such as ffmpeg or numpy, still do).
"""
from __future__ import annotations

import contextlib
import os
import re
import secrets
from pathlib import Path
from typing import Callable

# the temporary name of temp_path_for(): "." + stem + "." + mkstemp's 8 random characters + ".tmp" + suffix
_TEMP_NAME = re.compile(r"^\.(?P<stem>.+)\.[a-z0-9_]{8}\.tmp(?P<suffix>(\.[^.]*)?)$")


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
