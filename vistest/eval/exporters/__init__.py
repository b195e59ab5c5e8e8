"""Exports: a run directory of ``vistest run`` in layouts evaluators already read.

``vistest export FORMAT RUN_DIR -o OUT`` (docs/export.md). One module per format, each
with ``write(run, out, **options) -> ExportResult``:

* ``revsi`` (vistest/eval/exporters/revsi.py): the ReVSI release layout, a ``datasets`` folder
  with configs ``{n}_frame`` and the videos ``{n}_frame/{scene_id}.mp4``, for lmms-eval's
  ``revsi`` task and VLMEvalKit's ``ReVSI``;
* ``lmms-eval-task`` (lmms_eval_task.py): a task folder for ``--include_path``, real and
  dummy videos, scored as vistest scores them;
* ``vlmevalkit`` (vlmevalkit.py): TSVs with the columns VLMEvalKit's video datasets read;
* ``jsonl`` (jsonl.py): every (question, variant, budget) with absolute video paths,
  frames, ground truth, status and provenance.

All read the run through :func:`vistest.eval.exporters.rundir.load_run` and write through
:class:`vistest.eval.exporters.output.OutputFolder` (atomic, idempotent, a record of what was
written and left out). This module imports no format module until one is asked for.
"""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from ...errors import InputError
from .output import LINK_MODES, ExportResult

FORMATS = MappingProxyType({"revsi": "revsi", "lmms-eval-task": "lmms_eval_task", "vlmevalkit": "vlmevalkit",
                            "jsonl": "jsonl"})


@dataclass(frozen=True)
class ExportOptions:
    """Options of an export; each format reads the ones it knows.

    ``link`` (revsi): how videos get into OUT, one of :data:`LINK_MODES`. ``protocol``
    (lmms-eval-task): scoring rules, as ``vistest score --protocol``. ``name``
    (lmms-eval-task, revsi): lmms-eval task name prefix. ``progress``: progress on stderr.
    ``verify``: hash every video the export uses against the manifest (default: its size always,
    its hash when its time changed since the run wrote it; vistest.eval.exporters.rundir.verify_videos).
    ``evaluator``: the evaluator configuration whose ``all`` ground truth the ``all`` rows are
    (None: every frame; vistest.eval.exporters.rundir). ``target`` (vlmevalkit): the VLMEvalKit
    class, ``ReVSI``, ``VsiBench`` or ``auto``. ``skip_unsupported`` (revsi, vlmevalkit,
    lmms-eval-task): leave out the rows the target cannot prompt for, counted per type in the
    record and named in one warning (default); False: refuse them (InputError naming the rows).
    lmms-eval-task prompts every vistest type, so it leaves none out either way.
    """

    link: str = "hard"
    protocol: str = "auto"
    name: str = "vistest"
    progress: bool = True
    verify: bool = False
    evaluator: str | None = None
    target: str = "auto"
    skip_unsupported: bool = True


def export(fmt: str, run_dir: str | os.PathLike, out: str | os.PathLike,
           options: ExportOptions = ExportOptions()) -> ExportResult:
    """Export the run directory ``run_dir`` to the folder ``out`` in format ``fmt``.
    Raises vistest.errors.InputError naming the file, the field and what was expected."""
    if fmt not in FORMATS:
        raise InputError(f"FORMAT: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    if options.link not in LINK_MODES:
        raise InputError(f"--link: expected one of {', '.join(LINK_MODES)}, got {options.link!r}")
    from .rundir import load_run

    run = load_run(run_dir, options.verify, options.evaluator)
    module = importlib.import_module(f".{FORMATS[fmt]}", __name__)
    return module.write(run, Path(out), link=options.link, protocol=options.protocol, name=options.name,
                        progress=options.progress, target=options.target,
                        skip_unsupported=options.skip_unsupported)


__all__ = ["FORMATS", "LINK_MODES", "ExportOptions", "ExportResult", "export"]
