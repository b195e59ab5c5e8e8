"""vistest's exports run through the real lmms-eval package (0.7.3): its TaskManager, its evaluator
(``simple_evaluate``, what the ``lmms-eval`` command runs) and its own ``revsi`` task code, offline.

``make test-clients`` runs this in .venv-clients (tests/clients/requirements.txt); ``make test`` does not
collect it (tests/conftest.py). The model is a stand-in registered as an lmms-eval model object: for each
request lmms-eval builds, it opens the videos the task's ``doc_to_visual`` returns (their decoded frame count
is checked against the video the row was exported for) and answers the ground truth, or a constant. lmms-eval
returns normally even when a task fails to load or score, so every check reads its outputs (per-task results
and logged samples), never an exit status.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing may come from the hub: the tasks must run offline
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import pytest  # noqa: E402
import yaml  # noqa: E402

lmms_eval = pytest.importorskip("lmms_eval", reason="make test-clients installs lmms-eval in .venv-clients")
from lmms_eval.api.model import lmms  # noqa: E402
from lmms_eval.evaluator import simple_evaluate  # noqa: E402
from lmms_eval.tasks import TaskManager  # noqa: E402

import vistest  # noqa: E402,F401  (sets PYOPENGL_PLATFORM before pyrender is imported)
from conftest import DEMO_SMALL, cli, config_file, read_jsonl  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = ROOT / "examples" / "demo-questions.jsonl"
SCENE = "demo-seed0"
NUM_FRAMES = DEMO_SMALL["num_frames"]
BUILTIN_REVSI = Path(lmms_eval.__file__).parent / "tasks" / "revsi"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, demo_small):
    """The session's demo (320x240, 60 frames at 30 frames/s) through ``vistest run`` with drop dummies."""
    base = tmp_path_factory.mktemp("clients")
    scene = demo_small
    run = base / "run"
    cli("run", scene, QUESTIONS, "-o", run, "--preset", "ultrafast", "--dummy", "drop", "--quiet")
    return run



class Oracle(lmms):
    """An lmms-eval model answering ``answer(doc)`` for every request, after opening its visuals the way a video
    model does (``doc_to_visual(doc)``, each path a file); ``seen`` keeps (task, doc, paths)."""

    def __init__(self, answer):
        super().__init__()
        self.answer = answer
        self.seen = []

    def generate_until(self, requests):
        out = []
        for req in requests:
            _context, _gen_kwargs, doc_to_visual, doc_id, task, split = req.args
            doc = self.task_dict[task][split][doc_id]
            paths = doc_to_visual(doc)
            assert all(os.path.isfile(p) for p in paths), paths
            self.seen.append((task, doc, paths))
            out.append(self.answer(doc))
        return out

    def loglikelihood(self, requests):
        raise NotImplementedError("generate_until tasks only")

    def generate_until_multi_round(self, requests):
        raise NotImplementedError("generate_until tasks only")


def evaluate(include_path, tasks, answer):
    """lmms-eval's simple_evaluate on ``tasks`` of ``include_path`` with an Oracle; (results, samples, model)."""
    model = Oracle(answer)
    res = simple_evaluate(model=model, tasks=list(tasks), task_manager=TaskManager(include_path=str(include_path)),
                          log_samples=True, bootstrap_iters=0)
    assert res is not None, "lmms-eval returned no results"
    return res["results"], res["samples"], model


def truth(doc):
    return str(doc["ground_truth"])


def constant(doc):
    return "A"


# ---------------------------------------------------------------------------------------
# why the revsi export's tasks have names of their own
# ---------------------------------------------------------------------------------------
def test_a_copied_revsi_task_resolves_to_the_builtin_one(tmp_path):
    """lmms-eval indexes its own tasks first and keeps the first name: a copy of tasks/revsi given with
    --include_path (dataset_path pointed at an export) is not the revsi_16_frame lmms-eval loads."""
    copy = tmp_path / "revsi"
    shutil.copytree(BUILTIN_REVSI, copy, ignore=shutil.ignore_patterns("__pycache__"))
    template = copy / "_default_template_yaml"
    template.write_text(template.read_text().replace("3dlg-hcvc/ReVSI", str(tmp_path / "export")))
    tm = TaskManager(include_path=str(tmp_path))
    assert Path(tm.task_index["revsi_16_frame"]["yaml_path"]).parent == BUILTIN_REVSI


# ---------------------------------------------------------------------------------------
# the revsi export: lmms-eval's own revsi task on vistest's videos
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def revsi(run_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("revsi") / "export"
    cli("export", "revsi", run_dir, "-o", out, "--quiet")
    return out


def plain(obj):
    """A loaded YAML config with its ``!function`` nodes (kept as yaml nodes in mode="simple") as strings."""
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [plain(v) for v in obj]
    if isinstance(obj, yaml.Node):
        return f"{obj.tag} {obj.value}"
    return obj


def test_revsi_task_settings_are_the_builtin_template_s(revsi):
    """The export's template carries lmms-eval's revsi settings (prompts, generation, metric names and their
    aggregation functions, target); only the data source and doc_to_visual differ."""
    from lmms_eval.utils import load_yaml_config

    ours = plain(load_yaml_config(str(revsi / "lmms_eval" / "_default_template_yaml"), mode="simple"))
    theirs = plain(load_yaml_config(str(BUILTIN_REVSI / "_default_template_yaml"), mode="simple"))
    for key in ("output_type", "doc_to_target", "generation_kwargs", "lmms_eval_specific_kwargs", "metric_list",
                "process_results", "doc_to_text", "process_docs", "test_split"):
        assert ours[key] == theirs[key], key
    assert ours["dataset_path"] == str(revsi) and theirs["dataset_path"] == "3dlg-hcvc/ReVSI"


def test_revsi_export_runs_lmms_evals_own_revsi_task_offline(revsi, run_dir, frames_of):
    """Through TaskManager and simple_evaluate: every config loads from the export (no hub), every row's video
    resolves to the budget video with the right frame count (n, or every frame for all_frame), the prompts are
    lmms-eval's revsi_doc_to_text, the ground truth scores 1.0 and a constant answer low."""
    tasks = [f"vistest_revsi_{c}_frame" for c in ("16", "32", "64", "all")]
    tm = TaskManager(include_path=str(revsi / "lmms_eval"))
    assert all(Path(tm.task_index[t]["yaml_path"]).parent == revsi / "lmms_eval" for t in tasks)
    results, samples, model = evaluate(revsi / "lmms_eval", ["vistest_revsi"], truth)
    manifest = {r["path"]: r for r in read_jsonl(run_dir / "manifest.jsonl")}
    rows = {t: read_jsonl(config_file(revsi, t.removeprefix('vistest_revsi_'))) for t in tasks}
    for t in tasks:
        assert t in results and len(samples[t]) == len(rows[t]) > 0, (t, results.keys())
        assert results[t]["overall_acc,none"] == pytest.approx(1.0), (t, results[t])
    for task, doc, paths in model.seen:
        budget = task.removeprefix("vistest_revsi_").removesuffix("_frame")
        assert paths == [str(revsi / f"{budget}_frame" / f"{doc['scene_id']}.mp4")]
        want = manifest[f"{budget}_frame/{doc['scene_id']}.mp4"]["num_frames"]
        assert frames_of(paths[0]) == want == (NUM_FRAMES if budget == "all" else int(budget))
    from lmms_eval.tasks.revsi.utils import revsi_doc_to_text  # the built-in task's prompt, with its template

    kwargs = yaml.load((BUILTIN_REVSI / "_default_template_yaml").read_text().replace("!function", ""),
                       Loader=yaml.SafeLoader)["lmms_eval_specific_kwargs"]["default"]
    for t in tasks:
        for s in samples[t]:
            assert s["arguments"][0] == revsi_doc_to_text(s["doc"], kwargs) and s["doc"]["question"] in \
                s["arguments"][0], s["arguments"]
    low, _, _ = evaluate(revsi / "lmms_eval", ["vistest_revsi"], constant)
    for t in tasks:
        assert low[t]["overall_acc,none"] < 0.5, (t, low[t])


def test_revsi_export_with_an_evaluator_scores_its_all_ground_truth(run_dir, tmp_path):
    """--evaluator lmms-eval.qwen2_5_vl: all_frame's rows are that client's ground truth (its frames of
    all_frame): the evaluator's answers score 1.0 against them through lmms-eval's own revsi scoring."""
    out = tmp_path / "export"
    cli("export", "revsi", run_dir, "-o", out, "--evaluator", "lmms-eval.qwen2_5_vl", "--quiet")
    rows = read_jsonl(config_file(out, "all_frame"))
    want = {r["id"]: r for r in read_jsonl(run_dir / "scenes" / SCENE / "evaluators" / "lmms-eval.qwen2_5_vl" /
                                           "all_frame.jsonl")}
    assert rows and all(r["evaluator"] == "lmms-eval.qwen2_5_vl" and
                        r["ground_truth"] == want[r["id"]]["ground_truth"] for r in rows)
    results, samples, _ = evaluate(out / "lmms_eval", ["vistest_revsi_all_frame"], truth)
    assert results["vistest_revsi_all_frame"]["overall_acc,none"] == pytest.approx(1.0)
    assert len(samples["vistest_revsi_all_frame"]) == len(rows)


# ---------------------------------------------------------------------------------------
# the lmms-eval-task export: vistest's own task folder
# ---------------------------------------------------------------------------------------
def test_lmms_eval_task_export_runs_through_lmms_eval(run_dir, tmp_path, frames_of):
    """Every group of the task folder loads through TaskManager and runs: each row's video (real budget videos
    and drop dummies) has the frame count the export states, real rows score 1.0 on the ground truth and low on a
    constant answer, and the logged samples carry the keys vistest score joins on."""
    out = tmp_path / "tasks"
    cli("export", "lmms-eval-task", run_dir, "-o", out, "--quiet")
    groups = [f"vistest_{b}_frame" for b in ("16", "32", "64", "all")]
    results, samples, model = evaluate(out, groups, truth)
    real = [f"vistest_{b}_frame_real" for b in ("16", "32", "64", "all")]
    for t in real:
        assert results[t]["overall,none"] == pytest.approx(1.0), (t, results[t])
        assert all({"id", "variant", "num_frames"} <= set(s["doc"]) for s in samples[t])
    assert any(t.endswith("_dummy_drop") for t in samples)
    for _task, doc, paths in model.seen:
        assert len(paths) == 1 and frames_of(paths[0]) == doc["video_frames"]
    low, _, _ = evaluate(out, groups, constant)
    for t in real:
        assert low[t]["overall,none"] < 0.5, (t, low[t])


def test_builtin_revsi_yaml_is_what_docs_describe():
    """docs/export.md names the built-in revsi template's dataset_path and video flag: still so in this lmms-eval."""
    doc = yaml.load((BUILTIN_REVSI / "_default_template_yaml").read_text().replace("!function", ""),
                    Loader=yaml.SafeLoader)
    assert doc["dataset_path"] == "3dlg-hcvc/ReVSI" and doc["dataset_kwargs"]["video"] is True


# ---------------------------------------------------------------------------------------
# the documented commands, as a person types them (docs/export.md)
# ---------------------------------------------------------------------------------------
def lmms_eval_command(*args, cwd):
    """The ``lmms-eval`` console script of this environment, run as a separate process, offline."""
    exe = Path(sys.executable).with_name("lmms-eval")
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    return subprocess.run([str(exe), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def test_documented_lmms_eval_command_runs_end_to_end(run_dir, tmp_path):
    """docs/export.md's `lmms-eval --model MODEL --model_args ... --include_path OUT --tasks vistest_16_frame
    --log_samples --output_path logs/` then `vistest score logs/ -r RUN_DIR/scenes/{scene_id}`: both exit 0.
    MODEL is lmms-eval's own `dummy` (constant answer; read_bytes: it opens every video the task names and
    fails on a missing one). The command prints its results table with pytablewriter after writing the results:
    without pytablewriter in tests/clients/requirements.txt it exits 1 here."""
    out = tmp_path / "tasks"
    cli("export", "lmms-eval-task", run_dir, "-o", out, "--quiet")
    r = lmms_eval_command("--model", "dummy", "--model_args", "response=A,read_bytes=64,fail_on_missing=True",
                          "--include_path", out, "--tasks", "vistest_16_frame", "--log_samples",
                          "--output_path", "logs/", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-4000:]
    results = list((tmp_path / "logs").rglob("*_results.json"))
    assert len(results) == 1, list((tmp_path / "logs").rglob("*"))
    res = json.loads(results[0].read_text())["results"]
    assert "vistest_16_frame_real" in res and res["vistest_16_frame_real"]["overall,none"] < 0.5, res
    rows = read_jsonl(out / "data" / "vistest_16_frame_real.jsonl")
    samples = list((tmp_path / "logs").rglob("*vistest_16_frame_real*.jsonl"))
    assert samples and sum(1 for _ in samples[0].open()) == len(rows) > 0
    assert "vistest_16_frame_real" in r.stdout  # the table pytablewriter prints
    score = tmp_path / "score"
    cli("score", tmp_path / "logs", "-r", run_dir / "scenes" / SCENE, "-o", score, "--quiet")
    assert (score / "report.md").is_file()
