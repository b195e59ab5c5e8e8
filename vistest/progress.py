"""Progress reporting: a progress bar on stderr, silent when disabled (``--quiet``).

On a terminal the bar is click's, redrawn in place. Where stderr is not a terminal (``make demo``
piped into a log, CI, a test's captured stderr) click prints the label once and nothing more, so a
long step sat behind one line for minutes (issue #39): there the label line is followed by a plain
line every :data:`LINE_INTERVAL_S` seconds, ``LABEL: DONE/TOTAL (P%), Ts elapsed, about Ts left``.
A step shorter than that prints the label line only, as before.
"""
from __future__ import annotations

import contextlib
import sys
import time

import click

LINE_INTERVAL_S = 10.0  # seconds between the plain progress lines where stderr is not a terminal


class _NoBar:
    def update(self, n: int) -> None:
        pass


class _LineBar:
    """The progress as plain lines on ``file`` (a stream that is not a terminal); ``length``: the
    total, which a caller may raise on the way (as on click's bar)."""

    def __init__(self, total: int, label: str, file, interval: float = LINE_INTERVAL_S, clock=time.monotonic):
        self.length, self.label, self.file, self.interval, self.clock = max(0, int(total)), label, file, interval, clock
        self.pos = 0
        self.start = self.last = clock()
        click.echo(label, file=file)

    def update(self, n: int) -> None:
        self.pos += n
        now = self.clock()
        if now - self.last < self.interval:
            return
        self.last = now
        took = now - self.start
        share = min(1.0, self.pos / self.length) if self.length else 1.0
        left = f", about {took * (1 - share) / share:.0f}s left" if 0 < share < 1 else ""
        click.echo(f"{self.label}: {self.pos}/{self.length} ({100 * share:.0f}%), {took:.0f}s elapsed{left}",
                   file=self.file)


def _is_terminal(file) -> bool:
    try:
        return bool(file.isatty())
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def progress_bar(total: int, label: str, enabled: bool = True):
    """Yield an object with ``update(n)``; draws on stderr only when ``enabled`` (a bar on a
    terminal, else a line every :data:`LINE_INTERVAL_S` seconds)."""
    if not enabled:
        yield _NoBar()
        return
    if not _is_terminal(sys.stderr):
        yield _LineBar(total, label, sys.stderr)
        return
    with click.progressbar(length=total, label=label, file=sys.stderr, show_pos=True, show_eta=True) as bar:
        yield bar
