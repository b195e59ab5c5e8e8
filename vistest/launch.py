"""The ``vistest`` command's entry point (pyproject's console script): start the visibility
stage's child process first, then the command line interface.

``vistest run`` and ``vistest videos`` compute a scene's visibility in a child process
(vistest.pipeline.isolated_visibility), most of whose time is Python's start, the imports and
Numba's set-up (about 0.45 s on the demo, 2 cores), not the computation (0.08 s). Started here,
before the command imports its modules and reads its inputs, that child gets ready while this
process does so (vistest.workers.prestart), which saves about 0.2 s of the ~2.5 s of a demo
run (issue #47). A command that turns out not to need it (a visibility table given or cached, an
error in the inputs) leaves it unused; it ends with this process. This module imports only the
standard library and vistest.workers, so that the child starts at once (``python -m vistest.cli``
runs the same commands without it).
"""
from __future__ import annotations

import sys
from typing import Sequence

PRESTART_COMMANDS = ("run", "videos")
"""The commands whose pipeline computes visibility in a child process (vistest.pipeline)."""


def wants_visibility_child(argv: Sequence[str]) -> bool:
    """Whether the command line ``argv`` (without the program name) runs a command of
    :data:`PRESTART_COMMANDS` that may compute visibility: not with ``--visibility`` (a table
    given) or ``--help``."""
    if not argv or argv[0] not in PRESTART_COMMANDS:
        return False
    return not any(a == "--help" or a == "--visibility" or a.startswith("--visibility=") for a in argv[1:])


def main() -> None:
    """``vistest``: prestart the visibility child where :func:`wants_visibility_child`, then run
    the command (vistest.cli.main)."""
    if wants_visibility_child(sys.argv[1:]):
        from .workers import prestart

        try:
            prestart("vistest.visibility.table:prepare_engine")
        except Exception:  # no spare (processes cannot be spawned here): the pipeline's own call says why
            pass
    from .cli import main as cli

    cli()
