"""Command-line interface: ``vistest COMMAND``, one module per pipeline stage.

* :mod:`.datasets`: ``demo-scene``, ``import``, ``audit`` (scenes in);
* :mod:`.visibility`: ``visibility``, ``compile`` (the Numba kernels, before a first run waits on them);
* :mod:`.budget`: ``frames``, ``budget``, ``windows`` (sampled frames, frame-budget ground truth, time windows);
* :mod:`.videos`: ``videos``, ``run`` (budget and dummy videos; the whole pipeline of a scene);
* :mod:`.batch`: ``batch`` (many scenes through ``run``'s pipeline, on a process pool or Ray);
* :mod:`.look`: ``overlay``, ``timeline``, ``sheet``, ``index``;
* :mod:`.eval`: ``score``, ``baseline``, ``export``;
* :mod:`.generate`: ``generate`` (questions from scene ground truth);
* :mod:`.reformulate`: ``reformulate`` (circular, none-of-these, open, abstain variants);
* :mod:`.synth`: ``synth`` (scenario specs rendered into scenes; ``--grid N``: a benchmark over the 12 cells);
* :mod:`.options`: the options several commands share, each default defined once.

The error contract (vistest.errors) is kept here, once, for every command: an
:class:`~vistest.errors.InputError` (bad input: its message names the file, the field and
what was expected) becomes ``Error: <message>`` on stderr and exit status 2, and so does an
OSError the environment causes on a path it names (a folder that is not writable, a full
disk, a path component that is a file: vistest.errors.ENVIRONMENT_ERRNOS); any other
exception is a bug and keeps its traceback (exit status 1). ``vistest audit`` also exits 1
when the scene fails the audit. Long work draws a progress bar on stderr unless ``--quiet``.
"""
from __future__ import annotations

import click

from ..errors import InputError, is_environment_error, output_error
from .batch import batch
from .budget import budget, frames, windows
from .datasets import audit_cmd, demo_scene, import_cmd
from .eval import baseline, export_cmd, score
from .generate import generate_cmd
from .reformulate import reformulate_cmd
from .synth import synth_cmd
from .look import index_cmd, overlay_cmd, sheet_cmd, timeline_cmd
from .videos import run, videos
from .visibility import compile_cmd, visibility

__all__ = ["main", "BadInput"]


class BadInput(click.ClickException):
    """An :class:`~vistest.errors.InputError` as click reports it: ``Error: <message>``, exit status 2."""

    exit_code = 2


class VistestGroup(click.Group):
    """The command group; turns an InputError raised by any command, or while parsing its
    options, and an environment OSError naming its path, into :class:`BadInput`. Nothing
    else is caught."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except InputError as e:
            raise BadInput(str(e)) from e
        except OSError as e:
            if not (is_environment_error(e) and e.filename):
                raise
            raise BadInput(str(output_error(e.filename, e, "cannot access"))) from e


@click.group(cls=VistestGroup)
@click.version_option(package_name="vistest")
def main() -> None:
    """vistest: frame-aware ground truth for spatial-reasoning benchmarks."""


for _cmd in (visibility, demo_scene, frames, budget, score, baseline, import_cmd, audit_cmd, videos, run, batch,
             overlay_cmd, timeline_cmd, sheet_cmd, index_cmd, export_cmd, generate_cmd,
             reformulate_cmd, windows, synth_cmd, compile_cmd):
    main.add_command(_cmd)

