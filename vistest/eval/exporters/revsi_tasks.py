"""The lmms-eval task folder of a ``revsi`` export: lmms-eval's own ``revsi`` task, offline, on this export.

lmms-eval indexes its built-in tasks before any ``--include_path`` folder and keeps the
first entry of a name (lmms_eval/tasks/__init__.py ``TaskManager.initialize_tasks``:
``task_index = {**tasks, **task_index}``), so a copied ``revsi_16_frame`` still resolves to
the built-in YAML, whose ``dataset_path: 3dlg-hcvc/ReVSI`` needs the hub. The folder written
here names its tasks ``{prefix}_revsi_{n}_frame`` (group ``{prefix}_revsi``), which no
built-in task uses, and runs lmms-eval's own revsi code on them: its ``utils.py`` imports
the installed ``lmms_eval.tasks.revsi.utils`` (the prompt ``revsi_doc_to_text``, the scoring
``revsi_process_results``, the aggregations, ``process_docs``) and adds only
``doc_to_visual``, which opens ``{export}/{num_frames}_frame/{scene_id}.mp4`` (the layout
lmms-eval's ``revsi_doc_to_visual`` reads under ``$HF_HOME/revsi``). No lmms-eval code is
copied; the YAML carries the revsi template's settings (prompts, generation, metric names),
and ``utils.py`` checks at import that the installed revsi task scores the metrics the YAML
lists, so a changed lmms-eval fails loudly instead of silently dropping a metric.

Written under ``OUT/lmms_eval/``::

    _default_template_yaml        dataset_path: OUT (the datasets folder), prompts, generation, metrics
    utils.py                      the import of lmms_eval.tasks.revsi.utils, and doc_to_visual
    {prefix}_revsi.yaml           the group: every config written
    {prefix}_revsi_{n}_frame.yaml one task per config (dataset_name: {n}_frame)

Run: ``lmms-eval --model ... --include_path OUT/lmms_eval --tasks {prefix}_revsi_16_frame``.
"""
from __future__ import annotations

import json
from pathlib import Path

from .lmms_eval_task import PROMPTS

FOLDER = "lmms_eval"
# lmms_eval/tasks/revsi/utils.py REVSI_METRICS and their aggregation functions (revsi_aggregate_*)
REVSI_METRICS = ("overall_acc", "object_abs_distance_acc", "object_counting_acc", "object_rel_direction_acc",
                 "object_rel_distance_acc", "object_size_estimation_acc", "room_size_estimation_acc",
                 "route_planning_acc")
REVSI_PROMPT_KEYS = ("pre_prompt", "mcq_post_prompt", "nq_post_prompt")


def aggregation_name(metric: str) -> str:
    """The revsi utils function aggregating ``metric`` (``overall_acc`` -> ``revsi_aggregate_overall``)."""
    return "revsi_aggregate_overall" if metric == "overall_acc" else f"revsi_aggregate_{metric}"


def task_name(prefix: str, config: str) -> str:
    """``vistest_revsi_16_frame`` for prefix ``vistest`` and config ``16_frame``."""
    return f"{prefix}_revsi_{config}"


def template_yaml(dataset: Path) -> str:
    """The shared settings: the datasets folder, and lmms-eval's revsi template's settings."""
    q = json.dumps
    lines = ["# Written by vistest export revsi (do not edit: rerun the export). lmms-eval's revsi task settings,",
             "# on this export's datasets folder; the functions are lmms-eval's own (utils.py).",
             f"dataset_path: {q(str(dataset))}", "test_split: test", "output_type: generate_until",
             "process_docs: !function utils.process_docs", "doc_to_visual: !function utils.doc_to_visual",
             "doc_to_text: !function utils.revsi_doc_to_text", 'doc_to_target: "ground_truth"',
             "generation_kwargs:", "  max_new_tokens: 16", "  temperature: 0", "  do_sample: false",
             "process_results: !function utils.revsi_process_results", "metric_list:"]
    for m in REVSI_METRICS:
        lines += [f"  - metric: {m}", f"    aggregation: !function utils.{aggregation_name(m)}",
                  "    higher_is_better: true"]
    lines += ["lmms_eval_specific_kwargs:", "  default:"]
    lines += [f"    {k}: {q(PROMPTS['revsi'][k])}" for k in REVSI_PROMPT_KEYS]
    lines += ["metadata:", "  - version: 1.0", ""]
    return "\n".join(lines)


def task_yaml(prefix: str, config: str) -> str:
    return "\n".join([f"task: {json.dumps(task_name(prefix, config))}", f"dataset_name: {json.dumps(config)}",
                      "include: _default_template_yaml", ""])


def group_yaml(prefix: str, configs: list[str]) -> str:
    return "\n".join([f"group: {json.dumps(f'{prefix}_revsi')}", "task:",
                      *[f"  - {json.dumps(task_name(prefix, c))}" for c in configs], ""])


UTILS = '''"""lmms-eval task functions of a vistest revsi export (written by vistest export revsi; do not edit).

lmms-eval's own revsi task code, imported from the installed lmms-eval: the prompt
(revsi_doc_to_text), the scoring (revsi_process_results), the aggregations and process_docs.
Only the video path is this export's: {export}/{num_frames}_frame/{scene_id}.mp4, the layout
lmms-eval's revsi_doc_to_visual reads under $HF_HOME/revsi.
"""
import os

from lmms_eval.tasks.revsi import utils as _revsi
from lmms_eval.tasks.revsi.utils import *  # noqa: F401,F403  (revsi_doc_to_text, revsi_process_results, ...)

EXPORT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METRICS = %(metrics)s  # what _default_template_yaml lists

if set(getattr(_revsi, "REVSI_METRICS", ())) != set(METRICS):
    raise ImportError(f"the installed lmms-eval's revsi task scores {getattr(_revsi, 'REVSI_METRICS', None)}, "
                      f"this export's YAML lists {METRICS}: rerun vistest export revsi with a vistest that knows "
                      f"this lmms-eval")


def doc_to_visual(doc):
    """[{export}/{num_frames}_frame/{scene_id}.mp4]; a missing file raises, naming it."""
    path = os.path.join(EXPORT, f"{doc['num_frames']}_frame", f"{doc['scene_id']}.mp4")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"video {path} does not exist (moved export? rerun vistest export revsi)")
    return [path]
'''


def utils_py() -> str:
    return UTILS % {"metrics": repr(list(REVSI_METRICS))}


def write_tasks(folder, out: Path, prefix: str, configs: list[str]) -> list[str]:
    """Write the task folder into the export ``folder`` (an OutputFolder) for ``configs``;
    returns the task names."""
    for c in configs:
        folder.text(f"{FOLDER}/{task_name(prefix, c)}.yaml", task_yaml(prefix, c))
    folder.text(f"{FOLDER}/{prefix}_revsi.yaml", group_yaml(prefix, configs))
    folder.text(f"{FOLDER}/_default_template_yaml", template_yaml(out))
    folder.text(f"{FOLDER}/utils.py", utils_py())
    return [task_name(prefix, c) for c in configs]
