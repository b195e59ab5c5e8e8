"""``vistest export lmms-eval-task``: a task folder for lmms-eval's ``--include_path``.

lmms-eval (lmms_eval/tasks/__init__.py ``TaskManager._get_task_and_group``) walks every
folder given with ``--include_path`` for ``*.yaml`` files: a file with ``task:`` is a task,
one with ``group:`` and a ``task:`` list a group; ``include:`` merges a template from the
same folder, and ``!function utils.f`` imports ``f`` from ``utils.py`` beside the YAML file
(lmms_eval/utils.py ``load_yaml_config``, ``import_function``). A task with ``dataset_path:
json`` loads ``dataset_kwargs.data_files`` with ``datasets.load_dataset("json", ...)``
(lmms_eval/api/task.py ``ConfigurableTask.download``); the paths are written absolute,
since lmms-eval resolves relative ones against the YAML's folder only since 2026-07.

Written (``OUT``), for a name prefix P (``--name``, default ``vistest``)::

    _default_template_yaml          what every task shares: data loader, prompt, generation
    utils.py                        vistest/answers.py verbatim, then lmms_task_functions.py (below)
    P_{n}_frame.yaml                group of budget n: run it with the model sampling n frames
    P_{n}_frame_real.yaml           the budget video, answerable questions (metrics: overall,
                                    abstention_rate; reformulated sets also the stress metrics,
                                    accuracy_correct_{letter}, hallucination_rate)
    P_{n}_frame_dummy_{mode}.yaml   dummies (metrics: hallucination_rate, original_gt_score, abstention_rate)
    data/{task}.jsonl               the rows of each task
    README.md, vistest_export.json

One group per budget, run with the model sampling the budget's frames: a budget video and a
budget dummy (the default, ``vistest run --dummy-length budget``) hold exactly the frames the
run's sampler takes at that budget, at a rate where every sampler taking n takes them all; a
full-length dummy (the ``all`` budget, or ``--dummy-length full``) holds the source's rate and
length, and the evaluator samples the budget's frames from it, as from the source. Rows carry
vistest's ``id``, ``variant`` and ``num_frames``, and ``process_results`` logs the row, so
``vistest score LOGS -r RUN/scenes/{scene_id}`` reads the ``--log_samples`` output.

The scoring protocol (``--protocol``, default ``auto`` as ``vistest score``: vsibench when a
VSI-Bench-only type is present, else revsi) sets the parse, the subscores and the prompt
(revsi: lmms_eval/tasks/revsi/_default_template_yaml; vsibench: the defaults of
lmms_eval/tasks/vsibench/utils.py ``vsibench_doc_to_text``).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from ...errors import InputError
from ...questions import ANSWER_MCQ, QUESTION_TYPES, RULE_COUNTING
from ...videos.config import DUMMY_MODES
from ... import answers
from ...answers import Protocol
from ..metrics import resolve_protocol
from . import lmms_task_functions
from .output import (LEFT_NO_VIDEO, LEFT_UNSCORABLE, ExportResult, OutputFolder, Part, count_left_out,
                     unanswerable_rows)
from .columns import base_record, jsonl_text
from .rundir import ExportRow, RunData

_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_VISTEST_ONLY = re.compile(r"# ---- VISTEST-ONLY.*?# ---- END VISTEST-ONLY ----\n\n?", re.S)
_GENERATED = re.compile(r"# ---- GENERATED.*?# ---- END GENERATED ----\n", re.S)
ANSWERS_BEGIN = "# ==== BEGIN vistest/answers.py (verbatim) ====\n"
ANSWERS_END = "# ==== END vistest/answers.py ====\n"
FUNCTIONS_BEGIN = "# ==== BEGIN vistest/eval/exporters/lmms_task_functions.py (constants filled in) ====\n"

# open_post_prompt / abstain_post_prompt: vistest's, for reformulated questions (docs/export.md)
_OPEN_PROMPTS = {"open_post_prompt": "Answer the question using a single word or phrase.",
                 "abstain_post_prompt": "Answer the question using a single integer or decimal number, or with "
                                        f"\"{answers.CANNOT_DETERMINE}\"."}
_REVSI_PROMPTS = {"pre_prompt": "These are frames of a video.",
                  "mcq_post_prompt": "Answer with the option's letter from the given choices directly.",
                  "nq_post_prompt": "Answer the question using a single integer or decimal number.", **_OPEN_PROMPTS}
_VSIBENCH_PROMPTS = {"pre_prompt": "These are frames of a video.",
                     "mcq_post_prompt": "Answer with the option's letter from the given choices directly.",
                     "nq_post_prompt": "Please answer the question using a single word or phrase.", **_OPEN_PROMPTS}
PROMPTS = {"revsi": _REVSI_PROMPTS, "vsibench": _VSIBENCH_PROMPTS, "vsibench-legacy": _VSIBENCH_PROMPTS}


# ---------------------------------------------------------------------------------------
# utils.py
# ---------------------------------------------------------------------------------------
def generated_constants(protocol: Protocol) -> str:
    """The GENERATED block of utils.py: the protocol's name and vistest's MCQ and counting
    question types as Python literals, sorted (so the file's bytes depend only on vistest and
    the protocol)."""
    mcq = sorted(n for n, t in QUESTION_TYPES.items() if t.answer == ANSWER_MCQ)
    counting = sorted(n for n, t in QUESTION_TYPES.items() if t.rule == RULE_COUNTING)
    lines = ["# ---- GENERATED by vistest export (do not edit; rerun the export) ----",
             f"PROTOCOL = {protocol.name!r}",
             f"MCQ_TYPES = frozenset({mcq!r})",
             f"COUNTING_TYPES = frozenset({counting!r})",
             "# ---- END GENERATED ----", ""]
    return "\n".join(lines)


def _fill(pattern: re.Pattern, text: str, replacement: str, path: str) -> str:
    out, n = pattern.subn(lambda _m: replacement, text, count=1)
    if n != 1:
        raise AssertionError(f"{path}: no {pattern.pattern[:24]!r} block")
    return out


def utils_source(protocol: Protocol) -> str:
    """utils.py: a header, the text of vistest/answers.py verbatim between
    :data:`ANSWERS_BEGIN` and :data:`ANSWERS_END`, then vistest/eval/exporters/lmms_task_functions.py
    without its VISTEST-ONLY import block and with its GENERATED block filled in
    (:func:`generated_constants`). Standard library only (tests/test_export.py runs it with
    nothing else importable)."""
    shared = Path(answers.__file__).read_text(encoding="utf-8")
    path = lmms_task_functions.__file__
    functions = Path(path).read_text(encoding="utf-8")
    functions = _fill(_GENERATED, _fill(_VISTEST_ONLY, functions, "", path), generated_constants(protocol), path)
    header = ("# utils.py of an lmms-eval task folder written by `vistest export lmms-eval-task` (do not edit: rerun\n"
              "# the export). Standard library only. First vistest's answer rules (vistest/answers.py, the\n"
              "# code `vistest score` runs), then the task functions lmms-eval calls.\n")
    return header + ANSWERS_BEGIN + shared + ANSWERS_END + "\n\n" + FUNCTIONS_BEGIN + functions


# ---------------------------------------------------------------------------------------
# YAML (hand-written: strings as JSON, which YAML reads as double-quoted scalars)
# ---------------------------------------------------------------------------------------
def template_yaml(protocol: Protocol, run: RunData) -> str:
    """``_default_template_yaml``: what every task of the folder shares."""
    q = json.dumps
    prompts = PROMPTS[protocol.name]
    return "\n".join([
        f"# Written by vistest export lmms-eval-task from {run.root} (do not edit: rerun the export).",
        "dataset_path: json", "test_split: test", "output_type: generate_until",
        "doc_to_visual: !function utils.doc_to_visual", "doc_to_text: !function utils.doc_to_text",
        'doc_to_target: "ground_truth"', "generation_kwargs:", "  max_new_tokens: 16", "  temperature: 0",
        "  do_sample: false", "process_results: !function utils.process_results", "lmms_eval_specific_kwargs:",
        "  default:", *[f"    {k}: {q(v)}" for k, v in prompts.items()], "metadata:", "  - version: 1.0", ""])


LOWER_IS_BETTER = frozenset({"hallucination_rate", "original_gt_score", "nota_replace_drop", "open_mcq_gap"})


def _metric(name: str, dummy: bool) -> list[str]:
    """A metric_list entry; abstaining is better on dummies and worse on the real videos."""
    better = dummy if name == "abstention_rate" else name not in LOWER_IS_BETTER
    return [f"  - metric: {name}", f"    aggregation: !function utils.aggregate_{name}",
            f"    higher_is_better: {'true' if better else 'false'}"]


def task_metrics(rows: list[ExportRow], dummy: bool) -> list[str]:
    """The metric names of a task (each aggregated by ``utils.aggregate_{name}``): dummies,
    hallucination_rate, original_gt_score, abstention_rate; real videos, overall and
    abstention_rate, then what the rows give values to: hallucination_rate (unsupported rows),
    the stress metrics of the reformulations present (answers.STRESS_METRICS), and
    accuracy_correct_{letter} per correct letter of the base and circular MCQ rows."""
    if dummy:
        return ["hallucination_rate", "original_gt_score", "abstention_rate"]
    refs = {r.record.get("reformulation") or answers.BASE for r in rows}
    out = ["overall", "abstention_rate"]
    if any(r.record.get("unsupported") for r in rows):
        out.append("hallucination_rate")
    wanted = {"circular_accuracy": answers.CIRCULAR, "circular_vanilla_accuracy": answers.CIRCULAR,
              "nota_add_accuracy": answers.NOTA_ADD, "nota_replace_accuracy": answers.NOTA_REPLACE,
              "nota_replace_drop": answers.NOTA_REPLACE, "open_score": answers.OPEN,
              "open_mcq_gap": answers.OPEN, "abstain_accuracy": answers.ABSTAIN}
    out += [m for m in answers.STRESS_METRICS if wanted[m] in refs]
    letters = {str(r.ground_truth).strip().upper() for r in rows if r.is_mcq and r.options and not
               r.record.get("answer_kind") and (r.record.get("reformulation") or answers.BASE) in
               (answers.BASE, answers.CIRCULAR)}
    return out + [f"accuracy_correct_{x}" for x in sorted(letters)]


def task_yaml(task: str, data_path: Path, metrics: list[str], dummy: bool) -> str:
    """One task: its data file (absolute) and metrics."""
    return "\n".join([f"task: {json.dumps(task)}", "include: _default_template_yaml", "dataset_kwargs:",
                      "  data_files:", f"    test: {json.dumps(str(data_path))}", "metric_list:",
                      *[line for m in metrics for line in _metric(m, dummy)], ""])


def group_yaml(group: str, tasks: list[str], budget: str) -> str:
    """The group of one budget, with the model frame count it needs."""
    frames = "its default number of frames" if budget == "all" else f"{budget} frames"
    return "\n".join([f"# Run with the model sampling {frames} (each video holds the frames of this budget, or the "
                      f"whole timeline for the evaluator to sample).",
                      f"group: {json.dumps(group)}", "task:", *[f"  - {json.dumps(t)}" for t in tasks], ""])


# ---------------------------------------------------------------------------------------
# rows and tasks
# ---------------------------------------------------------------------------------------
REFORMULATION_FIELDS = ("group_id", "reformulation", "shift", "answer_kind", "accepts_abstention", "unsupported")


def task_record(run: RunData, row: ExportRow, metrics: list[str]) -> dict:
    """A data row: the common columns plus ``video_path`` (absolute), for dummies
    ``dummy_mode`` and ``expectation`` (``zero``, ``abstain`` or ``none_of_these``), the
    reformulation fields (:data:`REFORMULATION_FIELDS`, null when absent; ``group_id`` as a
    string) and ``vistest_metrics`` (the task's metric names)."""
    rec = base_record(row)
    rec["video_path"] = str(run.video_abspath(row.video))
    rec["dummy_mode"] = row.record.get("dummy_mode")
    rec["expectation"] = row.record.get("expectation")
    for key in REFORMULATION_FIELDS:
        rec[key] = row.record.get(key)
    if rec["group_id"] is not None:
        rec["group_id"] = str(rec["group_id"])
    rec["vistest_metrics"] = metrics
    return rec


def _variant_order(variant: str) -> tuple[int, str]:
    """dummy-drop, -black, -mask, -allblack (vistest.videos.config.DUMMY_MODES), then others by name."""
    mode = variant.split("-", 1)[-1]
    return (DUMMY_MODES.index(mode) if mode in DUMMY_MODES else len(DUMMY_MODES), variant)


def plan_tasks(run: RunData, name: str) -> tuple[list[tuple[str, str, bool, list[ExportRow]]], list]:
    """[(budget, task, is_dummy, rows)] in budget, then variant order, and the LeftOut counts."""
    tasks, left = [], []
    for b in run.budgets:
        real = [r for r in run.real_rows if r.budget == b]
        task = f"{name}_{b}_frame_real"
        left += [x for why, rs in unanswerable_rows(real) for x in count_left_out(task, why, rs)]
        left += count_left_out(task, LEFT_UNSCORABLE, [r for r in real if r.answerable and not r.scorable])
        tasks.append((b, task, False, [r for r in real if r.answerable and r.scorable]))
        dummies = [r for r in run.dummy_rows if r.budget == b]
        for mode in sorted({r.variant for r in dummies}, key=_variant_order):
            rows = [r for r in dummies if r.variant == mode]
            task = f"{name}_{b}_frame_{mode.replace('-', '_')}"
            left += count_left_out(task, LEFT_NO_VIDEO, [r for r in rows if r.video is None])
            tasks.append((b, task, True, [r for r in rows if r.video is not None]))
    return tasks, left


def write(run: RunData, out: str | Path, protocol: str = "auto", name: str = "vistest", **_) -> ExportResult:
    """Export ``run`` to ``out`` as an lmms-eval task folder (module docstring)."""
    if not _NAME_RE.fullmatch(name):
        raise InputError(f"--name: expected a task name prefix of letters, digits and '_', starting with a letter, "
                         f"got {name!r}")
    proto = resolve_protocol(protocol, {r.question_type for r in run.rows})
    folder = OutputFolder(out, "lmms-eval-task", run.root)
    tasks, left = plan_tasks(run, name)
    parts, warnings, groups = [], [], {}
    for b, task, dummy, rows in tasks:
        if not rows:
            warnings.append(f"{task}: every row was left out; task not written")
            continue
        metrics = task_metrics(rows, dummy)
        data = folder.text(f"data/{task}.jsonl", jsonl_text(task_record(run, r, metrics) for r in rows))
        folder.text(f"{task}.yaml", task_yaml(task, data, metrics, dummy))
        parts.append(Part(task, f"data/{task}.jsonl", len(rows)))
        groups.setdefault(b, []).append(task)
    for b, members in groups.items():
        folder.text(f"{name}_{b}_frame.yaml", group_yaml(f"{name}_{b}_frame", members, b))
    folder.text("_default_template_yaml", template_yaml(proto, run))
    folder.text("utils.py", utils_source(proto))
    folder.text("README.md", readme(run, folder.out, name, groups, proto))
    return folder.finish(parts, left, [*run.warnings, *warnings],
                         {**run.export_info(), "protocol": proto.name, "groups": [f"{name}_{b}_frame" for b in groups]})


def readme(run: RunData, out: Path, name: str, groups: dict[str, list[str]], protocol: Protocol) -> str:
    """How to run the folder's tasks and score them."""
    first = next(iter(groups), "16")
    lines = [f"# lmms-eval tasks for the vistest run {run.root}", "",
             f"Scoring protocol: {protocol.name}. One group per budget; run each with the model sampling that many "
             "frames:", "", "```",
             f"lmms-eval --model MODEL --model_args ... --include_path {out} --tasks {name}_{first}_frame "
             f"--log_samples --output_path logs/",
             f"vistest score logs/ -r {run.root}/scenes/SCENE_ID", "```", "", "Groups and tasks:", ""]
    for b, members in groups.items():
        lines.append(f"- `{name}_{b}_frame`: " + ", ".join(f"`{t}`" for t in members))
    return "\n".join(lines) + "\n"
