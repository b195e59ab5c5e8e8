"""``vistest export vlmevalkit``: TSV files with the columns VLMEvalKit's video datasets read.

VLMEvalKit reads a dataset as one TSV (vlmeval/smp/file.py ``load``: ``pd.read_csv(f,
sep='\\t')``). Columns its video datasets use:

* every video dataset (vlmeval/dataset/video_base.py ``VideoBaseDataset.__init__``):
  ``question`` and ``video`` are required, ``index`` is the row key (added when absent);
* ``ReVSI`` (vlmeval/dataset/revsi.py ``prepare_dataset``, ``build_prompt``, ``evaluate``):
  ``question_type`` (one of ReVSI's types), ``options`` (the list's Python ``repr``, read
  with ``ast.literal_eval``), ``ground_truth``, ``scene_id``; ``video`` = ``{scene_id}.mp4``
  under ``{root}/{n}_frame/``;
* ``VsiBench`` (vlmeval/dataset/vsibench.py ``build_prompt``, ``evaluate`` and
  vlmeval/dataset/utils/spatial_bench/cal_scores.py): ``question_type`` (VSI-Bench's types),
  ``candidates`` (``repr`` of the options), ``answer``; ``video`` is a path relative to the
  dataset root, read as ``os.path.join(root, video)``.

Written (``OUT``)::

    {n}_frame.tsv          the budget videos' answerable questions (what ReVSI's n_frame subset holds)
    {n}_frame_dummy.tsv    the dummies of budget n (evaluate with the model sampling n frames)
    vistest_export.json    the record

Columns: ``index`` (0..rows-1), ``id``, ``variant``, ``scene_id``, ``num_frames``,
``question_type`` (the question's own type), ``question``, ``options`` and ``candidates``
(``repr`` of the option list; empty for numbers), ``ground_truth`` and ``answer`` (the
answer the video supports; empty where the dummy makes the question unanswerable),
``video`` (relative to the run directory, with ``.mp4``: the VsiBench convention, with the
run directory as the dataset root), ``video_path`` (absolute), ``video_frames``,
``status``, ``reason``, ``original_ground_truth``, ``dummy_mode``, ``expectation``.
VLMEvalKit keeps every column in its prediction file, so ``id``, ``variant`` and
``num_frames`` turn its predictions into the plain JSONL ``vistest score`` reads.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

from .output import (
    LEFT_NO_VIDEO,
    LEFT_UNANSWERABLE,
    LEFT_UNSCORABLE,
    LEFT_VISTEST_ONLY,
    ExportResult,
    OutputFolder,
    Part,
    count_left_out,
)
from .rundir import ExportRow, RunData, answer_text

COLUMNS = ("index", "id", "variant", "scene_id", "num_frames", "question_type", "question", "options", "candidates",
           "ground_truth", "answer", "video", "video_path", "video_frames", "status", "reason",
           "original_ground_truth", "dummy_mode", "expectation")


def options_repr(options: tuple[str, ...] | None) -> str:
    """The options as VLMEvalKit stores them (``repr`` of a list of str; revsi.py
    ``_serialize_options``), "" for numeric questions."""
    return repr([str(o) for o in options]) if options else ""


def tsv_row(run: RunData, index: int, row: ExportRow) -> list[str]:
    """One TSV row in :data:`COLUMNS` order; None becomes the empty cell."""
    gt = answer_text(row.ground_truth)
    opts = options_repr(row.options)
    values = [index, row.id, row.variant, row.scene_id, row.num_frames, row.question_type, row.question, opts, opts,
              gt, gt, row.video, str(run.video_abspath(row.video)), row.video_frames, row.status, row.reason,
              answer_text(row.original_ground_truth), row.record.get("dummy_mode"), row.record.get("expectation")]
    return ["" if v is None else str(v) for v in values]


def tsv_text(run: RunData, rows: list[ExportRow]) -> str:
    """A TSV (tab-separated, ``"``-quoted where needed, as pandas reads it) of ``rows``."""
    buf = io.StringIO()
    w = csv.writer(buf, delimiter="\t", lineterminator="\n")
    w.writerow(COLUMNS)
    for i, r in enumerate(rows):
        w.writerow(tsv_row(run, i, r))
    return buf.getvalue()


def write(run: RunData, out: str | Path, **_) -> ExportResult:
    """Export ``run`` to ``out`` as VLMEvalKit TSVs (module docstring)."""
    folder = OutputFolder(out, "vlmevalkit", run.root)
    parts, left, warnings = [], [], []
    for b in run.budgets:
        real = [r for r in run.real_rows if r.budget == b]
        dummy = [r for r in run.dummy_rows if r.budget == b]
        for name, rows, gone in (
                (f"{b}_frame.tsv", [r for r in real if r.answerable and r.scorable and not r.vistest_scored],
                 [(LEFT_UNANSWERABLE, [r for r in real if not r.answerable]),
                  (LEFT_UNSCORABLE, [r for r in real if r.answerable and not r.scorable]),
                  (LEFT_VISTEST_ONLY, [r for r in real if r.answerable and r.scorable and r.vistest_scored])]),
                (f"{b}_frame_dummy.tsv", [r for r in dummy if r.video is not None and not r.vistest_scored],
                 [(LEFT_NO_VIDEO, [r for r in dummy if r.video is None]),
                  (LEFT_VISTEST_ONLY, [r for r in dummy if r.video is not None and r.vistest_scored])])):
            for reason, lost in gone:
                left += count_left_out(name, reason, lost)
            if not rows:
                if any(lost for _, lost in gone):
                    warnings.append(f"{name}: every row was left out; file not written")
                continue
            folder.text(name, tsv_text(run, rows))
            parts.append(Part(name, name, len(rows)))
    return folder.finish(parts, left, warnings, {"video_root": str(run.root)})
