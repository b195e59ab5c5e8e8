"""Progress reporting: a progress bar on stderr, silent when disabled (``--quiet``)."""
from __future__ import annotations

import contextlib
import sys

import click


class _NoBar:
    def update(self, n: int) -> None:
        pass


@contextlib.contextmanager
def progress_bar(total: int, label: str, enabled: bool = True):
    """Yield an object with ``update(n)``; draws on stderr only when ``enabled``."""
    if not enabled:
        yield _NoBar()
        return
    with click.progressbar(length=total, label=label, file=sys.stderr, show_pos=True, show_eta=True) as bar:
        yield bar
