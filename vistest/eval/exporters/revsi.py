"""``vistest export revsi``: the layout of the ReVSI release (3dlg-hcvc/ReVSI).

What lmms-eval's ``revsi`` task reads (lmms_eval/tasks/revsi/: ``_default_template_yaml``,
``revsi_{16,32,64,all}_frame.yaml``, ``utils.py``): ``datasets.load_dataset(dataset_path,
name="{n}_frame")``, split ``test``; per row ``question_type`` (one of ReVSI's 13 types: any
other makes ``revsi_doc_to_text`` return None and ``revsi_process_results`` fail),
``question``, ``options`` (MCQ), ``ground_truth`` (a string: ``.lower()`` for MCQ,
``float()`` for numbers), and the video ``{cache_dir}/{num_frames}_frame/{scene_id}.mp4``
(``revsi_doc_to_visual``). VLMEvalKit's ``ReVSI`` (vlmeval/dataset/revsi.py) loads the same
configs, adds a ``video`` column ``{scene_id}.mp4`` (so the export must not have one) and
reads ``{root}/{n}_frame/{video}``.

Written (``OUT``)::

    README.md                    YAML front matter: configs -> data files (what load_dataset reads)
    data/{n}_frame-{digest}.jsonl  one row per answerable question at budget n (digest: of the rows, data_file)
    {n}_frame/{scene_id}.mp4     the budget videos (hard links by default; --link)
    lmms_eval/                   an lmms-eval task folder running lmms-eval's own revsi code on it
                                 (vistest/eval/exporters/revsi_tasks.py)
    vistest_export.json          the record: rows, rows left out and why, files

README.md also states every column's type per config (``dataset_info``:
vistest.eval.exporters.columns.COLUMN_TYPES), so ``options`` is a list of strings in every
config, also where no row has options.

Data files are JSON Lines, not Parquet: vistest needs no pyarrow to write them (``datasets``
brings its own to read them), they are text a user can read and diff, and a rerun writes
the same bytes; the fixed column types of vistest.eval.exporters.columns make Arrow's inference
safe.

Rows left out of a config, counted per question type in the record and on the terminal:
``unanswerable`` at that budget (as in ReVSI), ``unscorable_ground_truth``,
``vistest_scored_answer`` (a reformulated row whose answer is a text or, for a number, the
abstention phrase: revsi would call ``float()`` on it), and ``no_revsi_question_type``: a
VSI-Bench type with no ReVSI counterpart. VSI-Bench types that differ from a ReVSI type only
by name are renamed (the original stays in ``vistest_question_type``): ``object_counting`` ->
``object_counting_single`` (one category) or ``_multiple``; ``room_size_estimation`` ->
``room_size_estimation_single``; ``object_rel_distance`` -> ``_closest`` / ``_farthest`` by the
question's wording. The
relative-direction levels and appearance order have none (use ``lmms-eval-task``).
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from ...errors import InputError
from ...progress import progress_bar
from ...questions import QUESTION_TYPES
from ...budgets import Budget
from ...layout import budget_video_path
from .output import (
    LEFT_NO_REVSI_TYPE,
    unanswerable_rows,
    LEFT_UNSCORABLE,
    LEFT_VISTEST_ONLY,
    ExportResult,
    LeftOut,
    OutputFolder,
    Part,
    count_left_out,
    unsupported_warning,
)
from .columns import COLUMN_TYPES, base_record, features_yaml, jsonl_text
from .revsi_tasks import FOLDER as TASK_FOLDER, write_tasks
from .rundir import ExportRow, RunData

REVSI_TYPES = frozenset(n for n, t in QUESTION_TYPES.items() if "ReVSI" in t.benchmarks)
SPLIT = "test"
_CLOSEST = re.compile(r"\b(closest|nearest)\b", re.I)
_FARTHEST = re.compile(r"\b(farthest|furthest)\b", re.I)


def config_name(budget: str) -> str:
    """``"16"`` -> ``"16_frame"``, ``"all"`` -> ``"all_frame"`` (ReVSI's config names)."""
    return Budget.parse(budget).folder


def data_file(budget: str, text: str) -> str:
    """The data file of a config holding ``text``, relative to OUT: ``data/{n}_frame-{digest}.jsonl``.

    The name carries the first 12 hex digits of the text's sha256 because ``datasets`` caches a
    local folder's configs under the folder's *name* and the data files' *names* (measured with
    datasets 5.2: two folders named ``export`` holding different rows load the first one's rows
    from the cache), so a changed config, or another export in a folder of the same name, must
    change the file name to be read."""
    return f"data/{config_name(budget)}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:12]}.jsonl"


def revsi_question_type(row: ExportRow) -> str | None:
    """The ReVSI type of a row: its own when it is one, the ReVSI name of a VSI-Bench type
    that differs only by name (module docstring), else None."""
    t = row.question_type
    if t in REVSI_TYPES:
        return t
    if t == "object_counting":
        cat = row.record.get("category")
        return "object_counting_single" if isinstance(cat, str) or len(cat or ()) <= 1 else "object_counting_multiple"
    if t == "room_size_estimation":
        return "room_size_estimation_single"
    if t == "object_rel_distance":
        closest, farthest = bool(_CLOSEST.search(row.question)), bool(_FARTHEST.search(row.question))
        if closest != farthest:
            return "object_rel_distance_closest" if closest else "object_rel_distance_farthest"
    return None


def revsi_record(row: ExportRow, revsi_type: str) -> dict:
    """A config row: ReVSI's columns first, then vistest's (vistest.eval.exporters.columns)."""
    rec = base_record(row)
    rec["question_type"] = revsi_type
    rec["vistest_question_type"] = row.question_type
    return rec


def left_out_text(left_out: list[LeftOut]) -> str:
    """``unanswerable 5 (object_counting 1, ...); ...``, or ``-``."""
    reasons: dict[str, list[LeftOut]] = {}
    for x in left_out:
        reasons.setdefault(x.reason, []).append(x)
    return "; ".join(f"{r} {sum(x.n for x in xs)} (" + ", ".join(f"{x.question_type} {x.n}" for x in xs) + ")"
                     for r, xs in reasons.items()) or "-"


def config_features(name: str) -> dict:
    """The column types of a config: :data:`COLUMN_TYPES` plus ``vistest_question_type``;
    ``num_frames`` is a string in ``all_frame`` ("all")."""
    types = {**COLUMN_TYPES, "vistest_question_type": "string"}
    if name == config_name("all"):
        types["num_frames"] = "string"
    return types


def readme(run: RunData, parts: list[Part], left_out: list[LeftOut], tasks: list[str] = ()) -> str:
    """README.md: the ``configs`` and ``dataset_info`` (column types) front matter ``datasets``
    reads, then a short card."""
    front = ["---", "configs:"]
    for p in parts:
        front += [f"- config_name: {json.dumps(p.name)}", "  data_files:",
                  f"  - split: {json.dumps(SPLIT)}", f"    path: {json.dumps(p.file)}"]
    front.append("dataset_info:")
    for p in parts:
        front += [f"- config_name: {json.dumps(p.name)}", *features_yaml(config_features(p.name))]
    front.append("---")
    body = ["", "# ReVSI-layout export of a vistest run", "",
            f"Written by `vistest export revsi` from `{run.root}` (scenes: {', '.join(run.scenes)}).",
            "Ground truth is what the frames of each budget video support (vistest budget ground truth).", "",
            "```python", "import datasets",
            'ds = datasets.load_dataset("/path/to/this/folder", name="16_frame", split="test")', "```", "",
            "Videos: `{num_frames}_frame/{scene_id}.mp4` beside this file. Columns and the rows left out: "
            "vistest's docs/export.md; counts below and in `vistest_export.json`.", "",
            f"lmms-eval's own revsi task on this folder, offline: `lmms-eval --model ... --include_path "
            f"{TASK_FOLDER} --tasks {tasks[0] if tasks else '...'}` (tasks: {', '.join(tasks) or 'none'}; the "
            f"built-in `revsi_*` names would resolve to the hub dataset).", "",
            "| config | rows | left out |", "|---|---|---|"]
    for p in parts:
        body.append(f"| {p.name} | {p.rows} | {left_out_text([x for x in left_out if x.part == p.name])} |")
    return "\n".join(front + body) + "\n"


def rows_text(rows: list[ExportRow], limit: int = 8) -> str:
    """``demo-9 (object_rel_direction_easy), ...`` naming the rows (the first ``limit``)."""
    named = ", ".join(f"{r.id} ({r.question_type}, {r.where})" for r in rows[:limit])
    return named + (f" and {len(rows) - limit} more" if len(rows) > limit else "")


def write(run: RunData, out: str | Path, link: str = "hard", progress: bool = True, name: str = "vistest",
          skip_unsupported: bool = True, **_) -> ExportResult:
    """Export ``run`` to ``out`` in the ReVSI layout, with the lmms-eval task folder of its
    configs under task names prefixed ``name`` (module docstring). Rows of a type ReVSI cannot
    prompt are left out with one warning (``skip_unsupported``) or refused (InputError)."""
    untyped_all = [r for r in run.real_rows if r.answerable and r.scorable and not r.vistest_scored
                   and revsi_question_type(r) is None]
    if untyped_all and not skip_unsupported:
        raise InputError(f"ReVSI cannot prompt for {len(untyped_all)} row(s) (a type it does not know, with no ReVSI "
                         f"counterpart): {rows_text(untyped_all)}; --skip-unsupported (the default) leaves them "
                         f"out; 'vistest export lmms-eval-task' prompts every vistest type")
    folder = OutputFolder(out, "revsi", run.root)
    parts: list[Part] = []
    left: list[LeftOut] = []
    warnings: list[str] = [unsupported_warning("ReVSI", untyped_all)] if untyped_all else []
    data: dict[str, str] = {}
    videos: dict[str, str] = {}  # relative path in OUT -> relative path in the run
    for b in run.budgets:
        config = config_name(b)
        rows = [r for r in run.real_rows if r.budget == b]
        answerable = [r for r in rows if r.answerable]
        left += [x for why, rs in unanswerable_rows(rows) for x in count_left_out(config, why, rs)]
        left += count_left_out(config, LEFT_UNSCORABLE, [r for r in answerable if not r.scorable])
        left += count_left_out(config, LEFT_VISTEST_ONLY, [r for r in answerable if r.scorable and r.vistest_scored])
        typed = [(r, revsi_question_type(r)) for r in answerable if r.scorable and not r.vistest_scored]
        untyped = [r for r, t in typed if t is None]
        left += count_left_out(config, LEFT_NO_REVSI_TYPE, untyped)
        keep = [(r, t) for r, t in typed if t is not None]
        if not keep:
            warnings.append(f"{config}: every row was left out; config not written")
            continue
        data[config] = jsonl_text(revsi_record(r, t) for r, t in keep)
        parts.append(Part(config, data_file(b, data[config]), len(keep)))
        for r, _t in keep:
            rel = budget_video_path(r.scene_id, r.num_frames)
            videos[rel] = r.video
    with progress_bar(len(videos), "export videos", progress) as bar:
        for rel, src in sorted(videos.items()):
            folder.video(rel, run.video_abspath(src), link)
            bar.update(1)
    for p in parts:
        folder.text(p.file, data[p.name])
    tasks = write_tasks(folder, folder.out, name, [p.name for p in parts]) if parts else []
    folder.text("README.md", readme(run, parts, left, tasks))
    return folder.finish(parts, left, [*run.warnings, *warnings],
                         {"split": SPLIT, "link": link, "lmms_eval_tasks": tasks,
                          "lmms_eval_group": f"{name}_revsi" if tasks else None, **run.export_info()})
