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
  dataset root, read as ``os.path.join(root, video)``;
* ``STIBench`` (vlmeval/dataset/stibench.py, open-compass/VLMEvalKit @ 7fdb479, ``build_prompt``,
  ``save_video_frames``, ``evaluate``): ``question``, ``time_start``, ``time_end`` (the prompt opens "From
  {time_start} seconds to {time_end} seconds."), ``options`` (``repr`` of the option texts, which the
  class letters "A ...", "B ..."), ``video`` (``os.path.join(data_root, video)``), ``answer`` (the
  letter, scored per ``task_type``: STI-Bench's task). It takes the motion questions: the imported
  ``sti_*`` types and the dynamic types generated from tracks (``motion_*``, ``camera_*``), which
  neither ReVSI nor VsiBench prompts.

Each export is for one class (``--target``): the rows' ``question_type`` must be a type the
class builds a prompt for, else ``build_prompt`` fails (ReVSI assigns its prompt only for its
13 types: ``UnboundLocalError``; VsiBench's ``get_task_type`` raises ``ValueError``). The type
sets are :data:`VLMEVALKIT_TYPES`, taken from the source (tests/test_export.py checks them
against a VLMEvalKit checkout when one is present). A row of another type is mapped where
the benchmarks name the same question differently (:data:`TO_VSIBENCH`, and to ReVSI
vistest.eval.exporters.revsi.revsi_question_type). Multiple-choice rows must carry options
(both classes parse them with ``ast.literal_eval``). A row the class cannot prompt for (no
type, or an MCQ row without options) is left out (``skip_unsupported``, the default, as the
revsi export does), counted per type in the record (``no_target_question_type``,
``mcq_without_options``) and named in one warning; with ``skip_unsupported=False``
(``--refuse-unsupported``) it stops the export with an InputError naming the rows. ``auto``:
the class that can prompt most of the rows (on a tie the first of ReVSI, VsiBench, STIBench, so
ReVSI when every row has a ReVSI type): none prompts every type of ``vistest generate --types all``
(ReVSI lacks VSI-Bench's relative-direction levels and the appearance order; VsiBench ReVSI's
forward/backward directions; both the motion types, which only STIBench takes).

Written (``OUT``)::

    {n}_frame.tsv          the budget videos' answerable questions (what ReVSI's n_frame subset holds)
    {n}_frame_dummy.tsv    the dummies of budget n (evaluate with the model sampling n frames)
    vistest_export.json    the record (``info.target``: the class)

Columns: ``index`` (0..rows-1), ``id``, ``variant``, ``scene_id``, ``num_frames``,
``question_type`` (the target class's type), ``vistest_question_type`` (the question's own),
``question``, ``options`` and ``candidates`` (``repr`` of the option list; empty for
numbers), ``ground_truth`` and ``answer`` (the answer the video supports; empty where the
dummy makes the question unanswerable), ``video`` (VsiBench: relative to the run directory,
with ``.mp4``, the VsiBench convention with the run directory as the dataset root; ReVSI real
rows: ``{scene_id}.mp4``, which ``ReVSI.video_path`` opens as ``{root}/{n}_frame/{video}``;
ReVSI dummy rows: relative to the run directory), ``video_path`` (absolute),
``video_frames``, ``status``, ``reason``, ``original_ground_truth``, ``dummy_mode``,
``expectation``, ``evaluator``; for ``STIBench`` also ``time_start``, ``time_end``, ``task_type``
(:data:`STI_COLUMNS`). VLMEvalKit keeps every column in its prediction file, so
``id``, ``variant`` and ``num_frames`` turn its predictions into the plain JSONL ``vistest
score`` reads.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path
from types import MappingProxyType

from ...budgets import Budget
from ...errors import InputError
from .output import (
    LEFT_NO_OPTIONS,
    LEFT_NO_TARGET_TYPE,
    LEFT_NO_VIDEO,
    unanswerable_rows,
    LEFT_UNSCORABLE,
    LEFT_VISTEST_ONLY,
    ExportResult,
    OutputFolder,
    Part,
    count_left_out,
    unsupported_warning,
)
from ...questions import ANSWER_MCQ, QUESTION_TYPES, option_letter
from .revsi import revsi_question_type
from .rundir import ExportRow, RunData, answer_text

COLUMNS = ("index", "id", "variant", "scene_id", "num_frames", "question_type", "vistest_question_type", "question",
           "options", "candidates", "ground_truth", "answer", "video", "video_path", "video_frames", "status",
           "reason", "original_ground_truth", "dummy_mode", "expectation", "evaluator")

REVSI, VSIBENCH, STIBENCH = "ReVSI", "VsiBench", "STIBench"
TARGETS = ("auto", REVSI, VSIBENCH, STIBENCH)
# STIBench's own columns (vlmeval/dataset/stibench.py STIBench.build_prompt reads time_start, time_end and options;
# evaluate groups by task_type), written after COLUMNS for that target only
STI_COLUMNS = ("time_start", "time_end", "task_type")
# The question types each class builds a prompt for, from VLMEvalKit's source (commit e8e78f05):
# vlmeval/dataset/revsi.py MCQ_QUESTION_TYPES / NQ_QUESTION_TYPES (ReVSI.build_prompt) and
# vlmeval/dataset/vsibench.py VsiBench.get_task_type mcq_items / na_items.
VLMEVALKIT_TYPES = MappingProxyType({
    REVSI: MappingProxyType({
        "mcq": ("object_rel_direction_forward_easy", "object_rel_direction_backward_easy",
                "object_rel_direction_forward_hard", "object_rel_direction_backward_hard",
                "object_rel_distance_closest", "object_rel_distance_farthest", "route_planning"),
        "number": ("object_counting_single", "object_counting_multiple", "object_abs_distance",
                   "object_size_estimation", "room_size_estimation_single", "room_size_estimation_multiple")}),
    VSIBENCH: MappingProxyType({
        "mcq": ("obj_appearance_order", "object_rel_direction_easy", "object_rel_direction_hard",
                "object_rel_direction_medium", "object_rel_distance", "route_planning"),
        "number": ("object_abs_distance", "object_size_estimation", "object_counting", "room_size_estimation")}),
    # STIBench (vlmeval/dataset/stibench.py, open-compass/VLMEvalKit @ 7fdb479) lists no types: build_prompt
    # prompts any row with question, time_start, time_end and options (a list, lettered by the class) and
    # evaluate scores the letter per task_type; vistest writes the five-way types that stand for an STI-Bench
    # task (QuestionType.task: the imported sti_* types and the dynamic types generated from tracks)
    STIBENCH: MappingProxyType({
        "mcq": tuple(sorted(n for n, t in QUESTION_TYPES.items() if t.task and t.answer == ANSWER_MCQ)),
        "number": ()}),
})
# ReVSI types VSI-Bench asks under another name (the ReVSI relative directions, forward/backward
# easy/hard, are defined differently from VSI-Bench's easy/medium/hard: no mapping)
TO_VSIBENCH = MappingProxyType({
    "object_counting_single": "object_counting", "object_counting_multiple": "object_counting",
    "room_size_estimation_single": "room_size_estimation", "room_size_estimation_multiple": "room_size_estimation",
    "object_rel_distance_closest": "object_rel_distance", "object_rel_distance_farthest": "object_rel_distance",
})


def known_types(target: str) -> frozenset[str]:
    """Every question type ``target``'s build_prompt handles."""
    return frozenset(VLMEVALKIT_TYPES[target]["mcq"]) | frozenset(VLMEVALKIT_TYPES[target]["number"])


def target_type(row: ExportRow, target: str) -> str | None:
    """The row's question type for ``target`` (its own, or mapped), None when there is none."""
    if target == REVSI:
        t = revsi_question_type(row)
    elif target == STIBENCH:
        t = row.question_type
    else:
        t = TO_VSIBENCH.get(row.question_type, row.question_type)
    return t if t in known_types(target) else None


def prompt_problem(row: ExportRow, qtype: str, target: str) -> str | None:
    """Why ``target``'s build_prompt could not prompt the row as ``qtype``, or None: MCQ rows
    need their options (parsed with ast.literal_eval)."""
    if qtype in VLMEVALKIT_TYPES[target]["mcq"] and not row.options:
        return "a multiple-choice type without options"
    return None


def unprompted(row: ExportRow, target: str) -> str | None:
    """Why ``target`` cannot prompt the row (:data:`LEFT_NO_TARGET_TYPE`: no type of its own
    or by mapping; :data:`LEFT_NO_OPTIONS`: an MCQ row without options), None when it can."""
    t = target_type(row, target)
    if t is None:
        return LEFT_NO_TARGET_TYPE
    return LEFT_NO_OPTIONS if prompt_problem(row, t, target) else None


def resolve_target(target: str, rows: list[ExportRow]) -> str:
    """``target``, or for ``auto`` the class that can prompt most of ``rows`` (on a tie the first of ReVSI,
    VsiBench, STIBench)."""
    if target not in TARGETS:
        raise InputError(f"--target: expected one of {', '.join(TARGETS)}, got {target!r}")
    if target != "auto":
        return target
    classes = (REVSI, VSIBENCH, STIBENCH)
    prompted = [sum(1 for r in rows if unprompted(r, t) is None) for t in classes]
    return classes[prompted.index(max(prompted))] if rows else REVSI


def questions_text(bad: list[tuple[ExportRow, str]], limit: int = 8) -> str:
    """The questions of the refused rows, each once (``demo-10 (object_rel_direction_easy: 13 rows,
    first at FILE:LINE)``), the first ``limit`` of them."""
    by_q: dict[tuple[str, str], list[ExportRow]] = {}
    for r, _ in bad:
        by_q.setdefault((r.id, r.question_type), []).append(r)
    named = [f"{qid} ({qtype}: {len(rs)} row(s), first at {rs[0].where})" for (qid, qtype), rs in by_q.items()]
    more = f" and {len(named) - limit} more question(s)" if len(named) > limit else ""
    return ", ".join(named[:limit]) + more


WHY = MappingProxyType({LEFT_NO_TARGET_TYPE: "a type the class does not know, with no mapping",
                        LEFT_NO_OPTIONS: "a multiple-choice type without options"})


def check_rows(rows: list[ExportRow], target: str, skip_unsupported: bool = True
               ) -> tuple[dict[int, str], list[tuple[ExportRow, str]]]:
    """``({id(row): target type}, [(row, LEFT_* reason)])``: the type of every row ``target`` can
    prompt, and the rows it cannot. With ``skip_unsupported`` False, an InputError naming the
    questions and rows it cannot prompt instead."""
    types, bad = {}, []
    for r in rows:
        reason = unprompted(r, target)
        if reason:
            bad.append((r, reason))
        else:
            types[id(r)] = target_type(r, target)
    if bad and not skip_unsupported:
        why = sorted({WHY[p] for _, p in bad})
        raise InputError(f"--target {target}: VLMEvalKit's {target} cannot build a prompt for {len(bad)} row(s) "
                         f"({'; '.join(why)}): {questions_text(bad)}; it knows "
                         f"{', '.join(sorted(known_types(target)))} (docs/export.md: the type mapping). "
                         f"--skip-unsupported (the default) leaves these rows out; 'vistest export lmms-eval-task' "
                         f"prompts every vistest type")
    return types, bad


def options_repr(options: tuple[str, ...] | None) -> str:
    """The options as VLMEvalKit stores them (``repr`` of a list of str; revsi.py
    ``_serialize_options``), "" for numeric questions."""
    return repr([str(o) for o in options]) if options else ""


def sti_options_repr(options: tuple[str, ...] | None) -> str:
    """The options as STIBench reads them: ``repr`` of the option texts without their letters
    (``build_prompt`` letters them itself: ``f'{upper_letters[i]} {options_list[i]}'``)."""
    return repr([option_letter(str(o))[1] for o in options]) if options else ""


def sti_cells(row: ExportRow) -> list:
    """:data:`STI_COLUMNS` of a row: its window (an instant: ``time`` at both ends) and its STI-Bench task."""
    rec = row.record
    ts = rec.get("time_start", rec.get("time"))
    te = rec.get("time_end", rec.get("time"))
    return [ts, te, QUESTION_TYPES[row.question_type].task]


def video_column(row: ExportRow, target: str) -> str:
    """``video``: ``{scene_id}.mp4`` for ReVSI's real rows (its video_path adds ``{root}/{n}_frame/``),
    else the path relative to the run directory."""
    return f"{row.scene_id}.mp4" if target == REVSI and not row.is_dummy else row.video


def tsv_row(run: RunData, index: int, row: ExportRow, qtype: str, target: str) -> list[str]:
    """One TSV row in :data:`COLUMNS` order (``qtype``: the target's question type); None
    becomes the empty cell."""
    gt = answer_text(row.ground_truth)
    opts = sti_options_repr(row.options) if target == STIBENCH else options_repr(row.options)
    values = [index, row.id, row.variant, row.scene_id, row.num_frames, qtype, row.question_type, row.question, opts,
              opts, gt, gt, video_column(row, target), str(run.video_abspath(row.video)), row.video_frames,
              row.status, row.reason, answer_text(row.original_ground_truth), row.record.get("dummy_mode"),
              row.record.get("expectation"), row.record.get("evaluator")]
    if target == STIBENCH:
        values += sti_cells(row)
    return ["" if v is None else str(v) for v in values]


def tsv_text(run: RunData, rows: list[ExportRow], types: dict[int, str], target: str) -> str:
    """A TSV (tab-separated, ``"``-quoted where needed, as pandas reads it) of ``rows``."""
    buf = io.StringIO()
    w = csv.writer(buf, delimiter="\t", lineterminator="\n")
    w.writerow(COLUMNS + (STI_COLUMNS if target == STIBENCH else ()))
    for i, r in enumerate(rows):
        w.writerow(tsv_row(run, i, r, types[id(r)], target))
    return buf.getvalue()


def write(run: RunData, out: str | Path, target: str = "auto", skip_unsupported: bool = True, **_) -> ExportResult:
    """Export ``run`` to ``out`` as VLMEvalKit TSVs for the class ``target``, leaving out
    (``skip_unsupported``) or refusing the rows it cannot prompt for (module docstring)."""
    plan = []
    for b in run.budgets:
        real = [r for r in run.real_rows if r.budget == b]
        dummy = [r for r in run.dummy_rows if r.budget == b]
        folder = Budget.parse(b).folder  # 16_frame: ReVSI's subset name
        for name, rows, gone in (
                (f"{folder}.tsv", [r for r in real if r.answerable and r.scorable and not r.vistest_scored],
                 [*unanswerable_rows(real),
                  (LEFT_UNSCORABLE, [r for r in real if r.answerable and not r.scorable]),
                  (LEFT_VISTEST_ONLY, [r for r in real if r.answerable and r.scorable and r.vistest_scored])]),
                (f"{folder}_dummy.tsv", [r for r in dummy if r.video is not None and not r.vistest_scored],
                 [(LEFT_NO_VIDEO, [r for r in dummy if r.video is None]),
                  (LEFT_VISTEST_ONLY, [r for r in dummy if r.video is not None and r.vistest_scored])])):
            plan.append((name, rows, gone))
    target = resolve_target(target, [r for _, rows, _ in plan for r in rows])
    types, bad = check_rows([r for _, rows, _ in plan for r in rows], target, skip_unsupported)
    unsupported = {id(r): reason for r, reason in bad}
    folder = OutputFolder(out, "vlmevalkit", run.root)
    parts, left, warnings = [], [], [unsupported_warning(target, [r for r, _ in bad])] if bad else []
    for name, rows, gone in plan:
        gone = gone + [(reason, [r for r in rows if unsupported.get(id(r)) == reason])
                       for reason in (LEFT_NO_TARGET_TYPE, LEFT_NO_OPTIONS)]
        rows = [r for r in rows if id(r) not in unsupported]
        for reason, lost in gone:
            left += count_left_out(name, reason, lost)
        if not rows:
            if any(lost for _, lost in gone):
                warnings.append(f"{name}: every row was left out; file not written")
            continue
        folder.text(name, tsv_text(run, rows, types, target))
        parts.append(Part(name, name, len(rows)))
    return folder.finish(parts, left, [*run.warnings, *warnings],
                         {"video_root": str(run.root), "target": target, **run.export_info()})
