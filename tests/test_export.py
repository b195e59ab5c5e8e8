"""Exports: the ReVSI layout read exactly as lmms-eval's revsi task reads it, the lmms-eval task
folder scoring as vistest score does, VLMEvalKit TSVs, JSONL rows; reruns, refusals, multi-scene.

One run directory (module fixture): the session's demo scene at 160x120, 40 frames
(``demo_tiny`` in conftest.py: the exports do not depend on the frames' size, and the 64-frame budget
still exceeds the scene's length), with the demo questions, plus a copy of the scene under another
scene_id (its questions' ids prefixed), so the run directory holds two scenes, as a shared
``vistest run`` output folder does.
"""
from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

import vistest  # noqa: F401  (sets PYOPENGL_PLATFORM before pyrender is imported)
from vistest.cli import main
from vistest.errors import InputError
from vistest import answers, freshness
from vistest.answers import CANNOT_DETERMINE, PROTOCOLS, STRESS_METRICS, score_answer
from vistest.eval.baselines import blind_predictions
from vistest.eval.exporters import ExportOptions, export
from vistest.eval.exporters.lmms_eval_task import ANSWERS_BEGIN, ANSWERS_END, utils_source
from vistest.eval.exporters.output import RECORD
from vistest.eval.exporters.revsi import REVSI_TYPES, revsi_question_type
from vistest.eval.exporters.rundir import load_run
from vistest.eval.metrics import ALL_TYPES, evaluate_row
from vistest.budget.rows import TruthRow
from vistest.eval.records import Prediction, ScoreError, load_predictions, load_run_dir
from vistest.eval.report import build_report
from vistest.questions import QUESTION_TYPES
from conftest import cli, config_file, read_jsonl
from reference import REFERENCE

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT / "examples" / "demo-questions.jsonl"
SCENE, COPY = "demo-seed0", "demo-copy"
NUM_FRAMES = 40
CONFIGS = ("16_frame", "32_frame", "64_frame", "all_frame")
QUIET = ExportOptions(progress=False)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, demo_tiny):
    """A run directory with two scenes: the demo and a renamed copy (ids prefixed ``copy-``). Depth
    occlusion (the demo's depth frames; exports do not depend on the mode, and no pyrender import
    and renders per run: tests/test_run.py runs the default, mesh)."""
    base = tmp_path_factory.mktemp("export")
    scene = demo_tiny  # NUM_FRAMES frames, 160x120
    run = base / "run"
    cli("run", scene, QUESTIONS, "-o", run, "--preset", "ultrafast", "--occlusion", "depth", "--no-pictures", "--quiet")
    copy = base / "copy"
    shutil.copytree(scene.parent, copy)
    doc = json.loads((copy / "scene.json").read_text())
    doc["scene_id"] = COPY
    (copy / "scene.json").write_text(json.dumps(doc))
    questions = [{**q, "scene_id": COPY, "id": f"copy-{q['id']}"} for q in read_jsonl(QUESTIONS)]
    (copy / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    cli("run", copy / "scene.json", copy / "questions.jsonl", "-o", run, "--preset", "ultrafast",
        "--occlusion", "depth", "--no-pictures", "--quiet", "--dummy", "drop")
    return run


@pytest.fixture(scope="module")
def hf_home(tmp_path_factory):
    """An HF_HOME whose ``revsi`` cache folder is the revsi export (what lmms-eval's task reads)."""
    return tmp_path_factory.mktemp("hf_home")


@pytest.fixture(scope="module")
def revsi(run_dir, hf_home):
    out = hf_home / "revsi"
    r = cli("export", "revsi", run_dir, "-o", out)
    return out, r.output



def budget_rows(run_dir, scene, config):
    return read_jsonl(run_dir / "scenes" / scene / f"{config}.jsonl")


# ---------------------------------------------------------------------------------------
# the ReVSI layout, read as lmms-eval's revsi task reads it
# ---------------------------------------------------------------------------------------
def resolve_cache_dir(cache_dir, base_dir):
    """lmms_eval/utils.py resolve_cache_dir: $VARS and ~ expanded, relative joined to base_dir."""
    resolved = os.path.expanduser(os.path.expandvars(cache_dir))
    return resolved if os.path.isabs(resolved) else os.path.join(base_dir, resolved)


def revsi_doc_to_visual(doc, cache_dir):
    """lmms_eval/tasks/revsi/utils.py revsi_doc_to_visual, with the module's cache_dir given."""
    video_path = os.path.join(cache_dir, f"{doc['num_frames']}_frame", f"{doc['scene_id']}.mp4")
    if not os.path.exists(video_path):
        raise FileNotFoundError(video_path)
    return [video_path]


def load_revsi_config(path, name, cache):
    """What lmms-eval's ConfigurableTask.download does for the revsi task (dataset_kwargs token
    and, after the video step, no cache_dir), with dataset_path set to the export."""
    import datasets  # here, not at the top: ~1 s of import each xdist worker would pay to collect this module

    return datasets.load_dataset(str(path), name=name, split="test", token=True, cache_dir=str(cache),
                                 download_mode=datasets.DownloadMode.REUSE_DATASET_IF_EXISTS)


def test_revsi_rows_resolve_every_video_like_lmms_eval(revsi, run_dir, hf_home, frames_of, tmp_path):
    out, _ = revsi
    cache_dir = resolve_cache_dir("revsi", base_dir=str(hf_home))  # _default_template_yaml: cache_dir: revsi
    seen_scenes = set()
    for config in CONFIGS:
        ds = load_revsi_config(out, config, tmp_path / "hf-datasets")
        assert len(ds) > 0
        for doc in ds:
            assert doc["question_type"] in REVSI_TYPES  # else revsi_doc_to_text returns None
            assert isinstance(doc["ground_truth"], str) and doc["variant"] == "budget" and doc["id"]
            (video,) = revsi_doc_to_visual(doc, cache_dir)
            want = NUM_FRAMES if config == "all_frame" else int(config.split("_")[0])
            assert doc["num_frames"] == ("all" if config == "all_frame" else want)
            assert frames_of(video) == want == doc["video_frames"]
            if doc["options"] is not None:
                assert QUESTION_TYPES[doc["question_type"]].answer == "mcq"
            seen_scenes.add(doc["scene_id"])
    assert seen_scenes == {SCENE, COPY}


def test_revsi_leaves_out_unanswerable_rows_and_counts_them(revsi, run_dir, tmp_path):
    out, printed = revsi
    record = json.loads((out / RECORD).read_text())
    for config in CONFIGS:
        ids = {d["id"] for d in load_revsi_config(out, config, tmp_path / "c")}
        gone = [r for s in (SCENE, COPY) for r in budget_rows(run_dir, s, config) if r["status"] == "unanswerable"]
        assert gone and not ids & {r["id"] for r in gone}
        counted = sum(x["n"] for x in record["left_out"] if x["part"] == config and x["reason"] == "unanswerable")
        assert counted == len(gone)
        kept = [r for s in (SCENE, COPY) for r in budget_rows(run_dir, s, config) if r["status"] != "unanswerable"]
        no_type = sum(x["n"] for x in record["left_out"] if x["part"] == config and x["reason"] != "unanswerable")
        assert len(ids) == len(kept) - no_type
        assert f"unanswerable {len(gone)}" in printed  # the terminal summary says it too
    # demo-10 (object_rel_direction_easy) has no ReVSI type: counted, not silently dropped
    assert any(x["reason"] == "no_revsi_question_type" and x["question_type"] == "object_rel_direction_easy"
               for x in record["left_out"])


def test_revsi_renames_vsibench_types_and_keeps_the_original(revsi, tmp_path):
    out, _ = revsi
    docs = {d["id"]: d for d in load_revsi_config(out, "32_frame", tmp_path / "c")}
    assert docs["demo-1"]["question_type"] == "object_counting_single"
    assert docs["demo-1"]["vistest_question_type"] == "object_counting"
    assert docs["demo-9"]["question_type"] == "object_rel_distance_closest"
    assert docs["demo-12"]["question_type"] == "room_size_estimation_single"
    assert json.loads(docs["demo-1"]["vistest_record"])["category"] == "chair"


def test_revsi_type_names(run_dir):
    rows = {(r.id, r.budget): r for r in load_run(run_dir).real_rows}
    count, dist = rows[("demo-1", "all")], rows[("demo-9", "all")]
    def edited(r, **fields):  # the export row of the same record with ``fields`` changed
        return replace(r, row=TruthRow.from_json({**r.record, **fields}, r.source, r.line))

    assert revsi_question_type(edited(count, category=["chair", "table"])) == "object_counting_multiple"
    assert revsi_question_type(edited(count, category=["chair"])) == "object_counting_single"
    far = edited(dist, question=dist.question.replace("closest", "farthest"))
    assert revsi_question_type(far) == "object_rel_distance_farthest"
    assert revsi_question_type(edited(dist, question="Which is closest, which farthest?")) is None
    assert revsi_question_type(rows[("demo-11", "all")]) is None  # appearance order: no ReVSI type


def test_revsi_suits_vlmevalkits_revsi_dataset(revsi, tmp_path):
    """vlmeval/dataset/revsi.py prepare_dataset adds video = {scene_id}.mp4 (the export must
    not have that column) and reads {root}/{n}_frame/{video}."""
    out, _ = revsi
    ds = load_revsi_config(out, "16_frame", tmp_path / "c")
    ds = ds.add_column("video", [f"{x['scene_id']}.mp4" for x in ds])
    df = ds.to_pandas()
    assert all((out / "16_frame" / v).is_file() for v in df["video"])


def test_revsi_rerun_writes_nothing_and_videos_are_hard_links(revsi, run_dir):
    out, _ = revsi
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.suffix != ".mp4"}
    res = export("revsi", run_dir, out, QUIET)
    assert res.written == 0 and res.unchanged == len(res.files) and not res.removed
    assert {p: p.read_bytes() for p in before} == before
    assert os.path.samefile(out / "16_frame" / f"{SCENE}.mp4", run_dir / "16_frame" / f"{SCENE}.mp4")
    assert not list(out.rglob("*.tmp*"))


def test_revsi_link_modes_and_stale_files(run_dir, tmp_path):
    out = tmp_path / "sym"
    export("revsi", run_dir, out, ExportOptions(link="symlink", progress=False))
    v = out / "32_frame" / f"{SCENE}.mp4"
    assert v.is_symlink() and os.readlink(v) == str(run_dir / "32_frame" / f"{SCENE}.mp4")
    res = export("revsi", run_dir, out, ExportOptions(link="copy", progress=False))
    assert res.written == 4 * 2 and not v.is_symlink() and not os.path.samefile(v, run_dir / v.relative_to(out))
    # a file the previous export owned and this one does not is removed; foreign files stay
    record = json.loads((out / RECORD).read_text())
    (out / "old").mkdir()
    (out / "old" / "stale.mp4").write_bytes(b"x")
    (out / "mine.txt").write_text("user file")
    record["files"].append("old/stale.mp4")
    (out / RECORD).write_text(json.dumps(record))
    res = export("revsi", run_dir, out, ExportOptions(link="copy", progress=False))
    assert res.removed == ("old/stale.mp4",) and not (out / "old").exists() and (out / "mine.txt").is_file()


def test_export_refuses_foreign_or_other_format_folders(run_dir, revsi, tmp_path):
    out, _ = revsi
    with pytest.raises(ValueError, match="holds a 'revsi' export"):
        export("jsonl", run_dir, out, QUIET)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("x")
    r = CliRunner().invoke(main, ["export", "jsonl", str(run_dir), "-o", str(tmp_path / "busy")])
    assert r.exit_code == 2 and "not empty" in r.output
    r = CliRunner().invoke(main, ["export", "revsi", str(run_dir), "-o", str(run_dir)])
    assert r.exit_code == 2 and "run directory itself" in r.output
    r = CliRunner().invoke(main, ["export", "revsi", str(run_dir / "scenes"), "-o", str(tmp_path / "n")])
    assert r.exit_code == 2 and "vistest run" in r.output


def test_question_ids_must_be_unique_across_scenes(run_dir, tmp_path):
    bad = tmp_path / "run"
    shutil.copytree(run_dir, bad, symlinks=True)
    path = bad / "scenes" / COPY / "16_frame.jsonl"
    path.write_text(path.read_text().replace('"copy-demo-1"', '"demo-1"'))
    with pytest.raises(ValueError, match="'demo-1' is also a question of scene"):
        export("jsonl", bad, tmp_path / "out", QUIET)


def test_stale_ground_truth_is_refused(run_dir, tmp_path):
    bad = tmp_path / "run"
    shutil.copytree(run_dir, bad, symlinks=True)
    path = bad / "scenes" / SCENE / "16_frame.jsonl"
    rows = read_jsonl(path)
    rows[0]["frame_indices"] = rows[0]["frame_indices"][::-1]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ValueError, match="frame_indices: differ from the frames of 16_frame"):
        export("revsi", bad, tmp_path / "out", QUIET)


def test_bad_export_input_is_an_input_error_naming_file_and_field(run_dir, tmp_path):
    """Bad input raises vistest.errors.InputError (what the CLI reports as `Error: ...`, exit 2),
    never a bare ValueError; the message names the file or option, the field, the expectation."""
    def raises(match, fn, *args, **kwargs):
        with pytest.raises(InputError, match=match) as e:
            fn(*args, **kwargs)
        assert type(e.value) in (InputError, ScoreError)

    raises(r"FORMAT: expected one of", export, "csv", run_dir, tmp_path / "a", QUIET)
    raises(r"--link: expected one of", export, "revsi", run_dir, tmp_path / "a", replace(QUIET, link="move"))
    raises(r"--name: expected a task name prefix", export, "lmms-eval-task", run_dir, tmp_path / "a",
           replace(QUIET, name="1x"))
    (tmp_path / "file").write_text("x")
    raises(r"file: -o: expected a folder, found a file", export, "jsonl", run_dir, tmp_path / "file", QUIET)
    for text, match in (("{", "not a vistest export record"),
                        ('{"format": "jsonl", "files": 3}', "files: expected the list")):
        (tmp_path / "rec").mkdir(exist_ok=True)
        (tmp_path / "rec" / RECORD).write_text(text)
        raises(rf"{RECORD}: {match}", export, "jsonl", run_dir, tmp_path / "rec", QUIET)
    raises(r"run directory: not a folder", export, "jsonl", tmp_path / "nowhere", tmp_path / "b", QUIET)
    bad = tmp_path / "run"
    shutil.copytree(run_dir, bad, symlinks=True)
    path = bad / "scenes" / SCENE / "16_frame.jsonl"
    path.write_text(path.read_text().replace('"num_frames": 16', '"num_frames": "sixteen"', 1))
    raises(r"16_frame.jsonl:1: num_frames: expected a frame budget", export, "jsonl", bad, tmp_path / "c", QUIET)
    raises(r"--model: expected one of", blind_predictions, (), "oracle")


# ---------------------------------------------------------------------------------------
# VLMEvalKit TSVs and JSONL rows
# ---------------------------------------------------------------------------------------
def test_vlmevalkit_tsv_columns_and_videos(run_dir, tmp_path, frames_of):
    out = tmp_path / "vlm"
    export("vlmevalkit", run_dir, out, QUIET)
    for name in ("16_frame.tsv", "16_frame_dummy.tsv", "all_frame.tsv"):
        df = pd.read_csv(out / name, sep="\t")  # vlmeval/smp/file.py load_tsv
        # VideoBaseDataset: question, video (index); ReVSI: question_type, options, ground_truth;
        # VsiBench: candidates, answer
        assert {"index", "question", "video", "question_type", "options", "ground_truth", "candidates",
                "answer", "id", "variant", "num_frames"} <= set(df.columns)
        assert list(df["index"]) == list(range(len(df)))
        for _, row in df.iterrows():
            path = os.path.join(run_dir, row["video"])  # VsiBench: os.path.join(self.data_root, line['video'])
            assert os.path.isfile(path) and os.path.samefile(path, row["video_path"])
            if QUESTION_TYPES[row["question_type"]].answer == "mcq":
                assert ast.literal_eval(row["candidates"]) == ast.literal_eval(row["options"])
        if not name.endswith("_dummy.tsv"):
            assert set(df["variant"]) == {"budget"} and not df["ground_truth"].isna().any()
            assert all(frames_of(p) == n for p, n in zip(df["video_path"], df["video_frames"]))
        else:
            assert {v.split("-")[0] for v in df["variant"]} == {"dummy"}


def test_jsonl_rows_have_absolute_paths_and_provenance(run_dir, tmp_path, frames_of):
    out = tmp_path / "jl"
    export("jsonl", run_dir, out, QUIET)
    rows = read_jsonl(out / "vistest.jsonl")
    n_truth = sum(len(read_jsonl(p)) for p in (run_dir / "scenes").rglob("*.jsonl") if "evaluators" not in p.parts)
    assert len(rows) == n_truth
    assert len({(r["id"], r["variant"], r["budget"]) for r in rows}) == len(rows)
    for r in rows:
        assert r["status"] in ("kept", "changed", "unanswerable")
        assert (r["ground_truth"] is None) == (r["status"] == "unanswerable")
        p = r["provenance"]
        assert p["scene_id"] == r["scene_id"] and p["rules"] == freshness.stamp("export")
        assert p["sampler_profile"] == "uniform" and os.path.isabs(p["source_video"])
        if r["video"] is None:
            continue
        assert os.path.isabs(r["video"]) and os.path.isfile(r["video"])
        assert len(r["frame_indices"]) == r["video_frames"]
    for r in rows[:: max(1, len(rows) // 12)]:
        if r["video"]:
            assert frames_of(r["video"]) == r["video_frames"]


# ---------------------------------------------------------------------------------------
# the lmms-eval task folder
# ---------------------------------------------------------------------------------------
class TaskLoader(yaml.SafeLoader):
    """lmms-eval's YAML: ``!function utils.f`` kept as ("function", "utils.f")."""


TaskLoader.add_constructor("!function", lambda loader, node: ("function", loader.construct_scalar(node)))


def load_task_yaml(path: Path) -> dict:
    """lmms_eval/utils.py load_yaml_config: ``include`` is read from the YAML's folder, then
    updated with the file's own keys."""
    cfg = yaml.load(path.read_text(), Loader=TaskLoader)
    if "include" in cfg:
        base = load_task_yaml(path.parent / cfg.pop("include"))
        base.update(cfg)
        cfg = base
    return cfg


def task_name(cfg: dict) -> str:
    """The name lmms-eval indexes a task YAML under: a group file's ``group`` (its ``task`` is the list of
    members), else its ``task``."""
    return cfg.get("group") or cfg["task"]


def import_utils(folder: Path, name: str = "vistest_task_utils"):
    """lmms_eval/utils.py import_function: utils.py beside the YAML, by file location."""
    spec = importlib.util.spec_from_file_location(name, folder / "utils.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RESPONSES = ("0", "3", "B", "A. left", "I cannot tell", "2 chairs", "The answer is 3", "three", " 1.5", "B.", "1e1")


def run_task_like_lmms_eval(folder, task_yaml, utils, cache, logs, responses=RESPONSES, aggregates=None):
    """Load a task as lmms-eval does, answer every doc from ``responses``, score it with the task's
    own functions, aggregate each metric with its own function (into ``aggregates``: metric ->
    value, when given), and write the --log_samples file (per-metric values = the returned row)."""
    import datasets

    cfg = load_task_yaml(task_yaml)
    assert cfg["dataset_path"] == "json" and cfg["output_type"] == "generate_until"
    fn = {k: getattr(utils, cfg[k][1].split(".", 1)[1]) for k in ("doc_to_visual", "doc_to_text", "process_results")}
    ds = datasets.load_dataset("json", data_files=cfg["dataset_kwargs"]["data_files"], split=cfg["test_split"],
                               cache_dir=str(cache))
    kwargs = cfg["lmms_eval_specific_kwargs"]["default"]
    lines, per_metric = [], {}
    for i, doc in enumerate(ds):
        (video,) = fn["doc_to_visual"](doc)
        assert os.path.isfile(video)
        text = fn["doc_to_text"](doc, kwargs)
        assert doc["question"] in text and text.startswith(kwargs["pre_prompt"])
        resp = responses[i % len(responses)]
        res = fn["process_results"](doc, [resp])
        assert set(res) == {m["metric"] for m in cfg["metric_list"]}
        for k, v in res.items():
            per_metric.setdefault(k, []).append(v)
        lines.append({"doc_id": i, "target": doc["ground_truth"], "filtered_resps": [resp], **res})
    for m in cfg["metric_list"]:
        value = getattr(utils, m["aggregation"][1].split(".", 1)[1])(per_metric[m["metric"]])
        assert -1.0 <= value <= 1.0  # the drop and the gap are differences
        if aggregates is not None:
            aggregates[m["metric"]] = value
    (logs / f"20260101_samples_{cfg['task']}.jsonl").write_text("".join(json.dumps(ln) + "\n" for ln in lines))
    return [next(iter(ln.values())) for ln in ({k: v for k, v in x.items() if isinstance(v, dict)} for x in lines)]


@pytest.mark.parametrize("protocol", ["auto", "revsi"])
def test_lmms_eval_task_scores_like_vistest_score(run_dir, tmp_path, protocol):
    out = tmp_path / "task"
    cli("export", "lmms-eval-task", run_dir, "-o", out, "--protocol", protocol, "--quiet")
    utils = import_utils(out, f"utils_{protocol}")
    logs = tmp_path / "logs"
    logs.mkdir()
    group = load_task_yaml(out / "vistest_16_frame.yaml")
    assert group["group"] == "vistest_16_frame" and "vistest_16_frame_dummy_drop" in group["task"]
    scored = []
    for task in group["task"]:
        assert (out / f"{task}.yaml").is_file()
        scored += run_task_like_lmms_eval(out, out / f"{task}.yaml", utils, tmp_path / "cache", logs)
    # vistest score reads the logs back and agrees, row by row, with the task's own scoring
    truth = load_run_dir(run_dir / "scenes" / SCENE)
    preds = [p for f in sorted(logs.iterdir()) for p in load_predictions(f)]
    report = build_report(truth, preds, protocol, splits=2, learned=False)  # rows and the lmms check: no blind model
    mine = {(r["id"], r["variant"], str(r["num_frames"])): r for r in scored if r["scene_id"] == SCENE}
    dummies = [r for r in report.rows if r.truth.is_dummy]
    assert len(dummies) == sum(1 for k in mine if k[1] != "budget") > 0
    for r in dummies:
        row = mine[r.truth.key]
        assert row["hallucinated"] == r.hallucinated, (r.truth.key, r.prediction.prediction)
    assert {True, False} <= {r.hallucinated for r in dummies}
    check = report.lmms_check  # every real row: the task's logged acc == vistest's score
    assert check.compared == sum(1 for k in mine if k[1] == "budget") > 0 and check.agreed == check.compared


def test_task_utils_embeds_answers_py_verbatim_and_copies_no_rule():
    """utils.py = header + vistest/answers.py, byte for byte + the task functions, which
    define none of answers.py's names (no second copy of a rule)."""
    shared = Path(answers.__file__).read_text(encoding="utf-8")
    shared_names = {n.name for n in ast.parse(shared).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    shared_names |= {t.id for n in ast.parse(shared).body if isinstance(n, ast.Assign) for t in n.targets
                     if isinstance(t, ast.Name)}
    for protocol in PROTOCOLS.values():
        src = utils_source(protocol)
        assert src.count(ANSWERS_BEGIN) == src.count(ANSWERS_END) == 1
        embedded = src[src.index(ANSWERS_BEGIN) + len(ANSWERS_BEGIN):src.index(ANSWERS_END)]
        assert embedded == shared
        rest = ast.parse(src[src.index(ANSWERS_END):])
        defined = {n.name for n in rest.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        defined |= {t.id for n in rest.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        assert defined and not defined & shared_names, defined & shared_names
        assert f"PROTOCOL = {protocol.name!r}" in src and "answers import" not in src


# the standalone run: utils.py loaded as lmms-eval loads it, with nothing but the standard library
STANDALONE = """
import importlib.util, json, sys
assert importlib.util.find_spec("vistest") is None and importlib.util.find_spec("numpy") is None, sys.path
spec = importlib.util.spec_from_file_location("utils", "utils.py")
utils = importlib.util.module_from_spec(spec)
spec.loader.exec_module(utils)
out = [utils.process_results(doc, [response]) for doc, response in json.load(open("cases.json"))]
ours = ("utils", "__main__")
foreign = sorted(m for m in sys.modules if m.split(".")[0] not in sys.stdlib_module_names and m not in ours)
print(json.dumps({"results": out, "foreign_modules": foreign}))
"""
TEXTS = RESPONSES + ("", " B", "b", "B\nchair", "(B)", "three hundred and twenty one", ".5", "1_0", "nan", "inf",
                     "-2", "twenty two apples", "one apple, room 2", "1e3 is it", "C) back", "0 chairs",
                     "None of these", "C", "Cannot be determined from the video", "I cannot tell", "Back-left.",
                     "the back left", "2.5 m", "unknown", "cannot be determined from 16 frames")
REAL_METRICS, DUMMY_METRICS = ["overall", "abstention_rate"], ["hallucination_rate", "original_gt_score",
                                                               "abstention_rate"]


def standalone_cases():
    """(doc, response) for real and dummy rows of an MCQ, a counting and a size question, and of
    reformulated questions ("None of these", the abstain option, open texts and numbers, a
    number accepting abstention), over TEXTS; ground truths as the export writes them (strings)
    plus the non-string ones where the two parsers used to differ (an integer MCQ answer, a
    boolean number)."""
    opts = ["A. left", "B) right", " c. back"]
    nota, abstain = ["A. left", "B. right", "C. None of these"], ["A. left", "B. right",
                                                                  "C. Cannot be determined from the video"]
    rows = [("object_rel_distance", opts, gt, {}) for gt in ("B", "b", "C", 3)]
    rows += [(qt, None, gt, {}) for qt in ("object_counting", "object_size_estimation")
             for gt in ("3", "0", "42.5", True)]
    rows += [("object_rel_distance", nota, "C", {"reformulation": "nota-replace", "group_id": "g"}),
             ("object_rel_distance", abstain, "C", {"reformulation": "abstain", "unsupported": True}),
             ("object_rel_distance", abstain, "A", {"reformulation": "abstain"}),
             ("object_rel_distance", None, "back-left", {"reformulation": "open", "answer_kind": "text"}),
             ("object_rel_distance", None, "2.5", {"reformulation": "open", "answer_kind": "number"}),
             ("object_size_estimation", None, "Cannot be determined from the video",
              {"reformulation": "abstain", "accepts_abstention": True, "unsupported": True}),
             ("object_size_estimation", None, "42.5", {"reformulation": "abstain", "accepts_abstention": True}),
             ("object_counting", None, "3", {"reformulation": "abstain", "accepts_abstention": True})]
    cases = []
    for i, (qtype, options, gt, extra) in enumerate(rows):
        for j, text in enumerate(TEXTS):
            base = {"id": f"q{i}-{j}", "scene_id": "s", "num_frames": 16, "question_type": qtype, "question": "?",
                    "options": options, "status": "kept", **extra}
            cases.append(({**base, "variant": "budget", "ground_truth": gt, "original_ground_truth": gt,
                           "vistest_metrics": REAL_METRICS}, text))
            zero = qtype == "object_counting"
            offered = None if zero or not extra.get("unsupported") else gt
            cases.append(({**base, "variant": "dummy-drop", "ground_truth": "0" if zero else offered,
                           "original_ground_truth": gt, "status": "changed" if zero or offered else "unanswerable",
                           "vistest_metrics": DUMMY_METRICS}, text))
    return cases


@pytest.mark.parametrize("protocol", ["revsi", "vsibench", "vsibench-legacy"])
def test_task_utils_runs_on_the_standard_library_alone_and_scores_like_vistest(protocol, tmp_path):
    """The exported utils.py in `python -S -I` (no site-packages: neither vistest nor numpy
    importable) scores every case as vistest's own records and metrics do."""
    proto = PROTOCOLS[protocol]
    (tmp_path / "utils.py").write_text(utils_source(proto))
    cases = standalone_cases()
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    r = subprocess.run([sys.executable, "-S", "-I", "-c", STANDALONE], cwd=tmp_path, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["foreign_modules"] == []
    responses = set()
    for (doc, text), res in zip(cases, got["results"], strict=True):
        t = TruthRow.from_json(doc, "cases.json", 1)
        mine = evaluate_row(proto, t, Prediction(t.id, t.variant, t.budget, text))
        real_gt = doc["original_ground_truth"]
        assert set(res) == set(doc["vistest_metrics"])
        row = res[doc["vistest_metrics"][0]]
        assert row["response"] == mine.response, (doc, text)
        assert row.get("hallucinated") == mine.hallucinated, (doc, text)
        responses.add(mine.response)
        if t.is_dummy:
            assert row["original_gt_score"] == score_answer(proto, t.kind, text, real_gt, t.offers_abstention)
        else:
            expected = mine.score if t.scorable else 0.0  # unscorable: not scored by vistest, 0 in the task
            assert row["acc"] == expected, (doc, text)
    assert responses == {"abstained", "none_of_these", "zero", "confident", "unparsed"}
    # where the two copies used to differ, both now score 0 (lmms-eval would raise or read True as 1)
    assert score_answer(proto, "mcq", "3", 3) == 0.0 and score_answer(proto, "number", "1", True) == 0.0


# ---------------------------------------------------------------------------------------
# a reformulated question set, exported and scored inside lmms-eval's task code
# ---------------------------------------------------------------------------------------
STRESS_RESPONSES = ("A", "B", "C", "D", "E", "None of these", CANNOT_DETERMINE, "I cannot tell", "table", "left",
                    "3", "2 chairs", "bed, plant, sofa", "120", "The answer is B", "b.", "Right.", "0")


@pytest.fixture(scope="module")
def stress_run(tmp_path_factory, demo_tiny):
    """The session's demo (160x120, 40 frames) with its questions reformulated, run at 16 frames
    and all, with drop dummies at both (a 16-frame budget dummy, the full-length one for all)."""
    base = tmp_path_factory.mktemp("stress")
    cli("reformulate", QUESTIONS, "-o", base / "questions.jsonl")
    cli("run", demo_tiny, base / "questions.jsonl", "-o", base / "run", "--budgets", "16,all", "--dummy", "drop",
        "--dummy-budgets", "16,all", "--preset", "ultrafast", "--occlusion", "depth", "--no-pictures", "--quiet")
    return base / "run"


def test_lmms_eval_task_reproduces_vistest_score_on_a_reformulated_set(stress_run, tmp_path):
    """Every row scored inside the exported task (its process_results) equals vistest score's
    row, and every aggregate (overall, stress metrics, accuracy by the correct letter,
    abstention and hallucination rates) equals the report's number."""
    out = tmp_path / "task"
    cli("export", "lmms-eval-task", stress_run, "-o", out, "--quiet")
    utils = import_utils(out, "utils_stress")
    logs = tmp_path / "logs"
    logs.mkdir()
    aggregates, scored = {}, []
    for b in ("16", "all"):
        for task in load_task_yaml(out / f"vistest_{b}_frame.yaml")["task"]:
            aggregates[task] = {}
            scored += run_task_like_lmms_eval(out, out / f"{task}.yaml", utils, tmp_path / "cache", logs,
                                              STRESS_RESPONSES, aggregates[task])
    truth = load_run_dir(stress_run / "scenes" / SCENE)
    report = build_report(truth, [p for f in sorted(logs.iterdir()) for p in load_predictions(f)], splits=2,
                          learned=False)
    # row by row
    mine = {(r["id"], r["variant"], str(r["num_frames"])): r for r in scored}
    assert len(report.rows) == len(mine) and not report.unmatched
    for r in report.rows:
        row = mine[r.truth.key]
        assert (row["response"], row.get("hallucinated")) == (r.response, r.hallucinated), r.truth.key
        if not r.truth.is_dummy:
            assert row["acc"] == r.score, r.truth.key
    assert report.lmms_check.compared == sum(1 for r in report.rows if not r.truth.is_dummy)
    assert report.lmms_check.agreed == report.lmms_check.compared
    responses = {r.response for r in report.rows}
    assert {"abstained", "none_of_these", "confident"} <= responses
    # aggregate by aggregate
    stress = {(c.budget, c.metric): c.overall for c in report.stress}
    positions = {(c.budget, c.letter): c.accuracy for c in report.positions}
    cells = {(c.videos, c.budget): c for c in report.abstention if c.question_type == ALL_TYPES}
    overall = {s.budget: s.values[report.protocol.overall] for s in report.summaries
               if s.model == "predictions" and s.reformulation == "base"}
    for b in ("16", "all"):
        real = aggregates[f"vistest_{b}_frame_real"]
        assert real["overall"] == pytest.approx(overall[b], abs=1e-12)
        task_stress = {m: v for m, v in real.items() if m in STRESS_METRICS}
        mine = {m: v for (bb, m), v in stress.items() if bb == b}
        # a metric the rows give no value (no group with both rows scored at this budget: demo-9's and
        # demo-11's base questions are unanswerable at 16 frames) is the task's 0.0, the report's absence
        assert task_stress == {**{m: 0.0 for m in task_stress}, **mine}
        assert {m: v for m, v in real.items() if m.startswith("accuracy_correct_")} == {
            f"accuracy_correct_{x}": v for (bb, x), v in positions.items() if bb == b}
        assert real["abstention_rate"] == cells[("budget", b)].abstention
        assert real.get("hallucination_rate") == cells[("budget", b)].hallucination
        dummy = aggregates[f"vistest_{b}_frame_dummy_drop"]
        assert (dummy["abstention_rate"], dummy["hallucination_rate"]) == (
            cells[("dummy-drop", b)].abstention, cells[("dummy-drop", b)].hallucination)
    assert {"circular_accuracy", "nota_replace_drop", "open_mcq_gap", "abstain_accuracy"} <= set(
        aggregates["vistest_all_frame_real"])


# ---------------------------------------------------------------------------------------
# budget dummies (the default of vistest run): exports and score
# ---------------------------------------------------------------------------------------
@pytest.mark.slow  # decodes every dummy video of the run
def test_dummy_rows_are_asked_on_budget_dummies_and_scored(run_dir, tmp_path, frames_of):
    """A default run writes budget dummies: every dummy row of budget n is asked on the n-frame
    video ``dummy_{mode}/{n}_frame/{scene}/...`` holding the frames the row lists (uniform: n of
    them); the lmms-eval task's dummy rows point at those videos; `vistest score` scores the
    run's dummies (every dummy row predicted by a blind baseline is paired and counted)."""
    cli("export", "jsonl", run_dir, "-o", tmp_path / "jsonl", "--quiet")
    rows = [r for r in read_jsonl(tmp_path / "jsonl" / "vistest.jsonl") if r["variant"] != "budget"]
    assert rows and {r["budget"] for r in rows} == {16, 32, 64}  # no full-length (all) dummies by default
    for r in rows:
        assert r["video"] is not None and r["dummy_length"] == "budget"
        mode = r["variant"].split("-", 1)[1]
        assert r["video_relpath"].startswith(f"dummy_{mode}/{r['budget']}_frame/{r['scene_id']}")
        assert frames_of(r["video"]) == r["video_frames"] == len(r["frame_indices"]) == r["budget"]
    cli("export", "lmms-eval-task", run_dir, "-o", tmp_path / "task", "--quiet")
    data = read_jsonl(tmp_path / "task" / "data" / "vistest_16_frame_dummy_drop.jsonl")
    assert data and all("/dummy_drop/16_frame/" in d["video_path"] and frames_of(d["video_path"]) == 16
                        for d in data)
    scene_dir = run_dir / "scenes" / SCENE
    preds = tmp_path / "preds.jsonl"
    cli("baseline", "-r", scene_dir, "-o", preds)
    cli("score", preds, "-r", scene_dir, "-o", tmp_path / "score", "--quiet")
    report = json.loads((tmp_path / "score" / "report.json").read_text())
    dummy_rows = [r for r in read_jsonl(scene_dir / "dummy_gt.jsonl")]
    cells = [c for c in report["hallucination"] if c["variant"].startswith("dummy")]
    assert cells and sum(c["n"] for c in cells) == len(dummy_rows)


# ---------------------------------------------------------------------------------------
# column types, an evaluator's all rows, the revsi task folder, VLMEvalKit's classes
# ---------------------------------------------------------------------------------------
def test_revsi_options_have_one_type_in_every_config(revsi, tmp_path):
    """README.md states every column's type per config: ``options`` is a list of strings in every config,
    also in one where no row has options (Arrow would infer null there)."""
    import datasets

    out, _ = revsi
    for name in CONFIGS:
        ds = load_revsi_config(out, name, tmp_path / "c")
        assert ds.features["options"] == datasets.List(datasets.Value("string")), (name, ds.features)
        assert ds.features["num_frames"] == datasets.Value("string" if name == "all_frame" else "int64")
    numeric = tmp_path / "numeric"
    shutil.copytree(out, numeric, ignore=shutil.ignore_patterns("*.mp4"))
    data = config_file(numeric, "16_frame")
    rows = [r for r in read_jsonl(data) if r["options"] is None]
    assert rows, "expected numeric rows at 16 frames"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))  # a config without a multiple-choice row
    ds = load_revsi_config(numeric, "16_frame", tmp_path / "c2")
    assert ds.features["options"] == datasets.List(datasets.Value("string")) and len(ds) == len(rows)


def test_revsi_writes_an_lmms_eval_task_folder_under_names_of_its_own(revsi):
    """lmms_eval/: tasks named {prefix}_revsi_{n}_frame (the built-in revsi_{n}_frame would win the index), on
    this folder as dataset_path, with utils.py importing lmms-eval's own revsi code (tests/clients/ run it)."""
    out, _ = revsi
    folder = out / "lmms_eval"
    builtin = {task_name(load_task_yaml(p))
               for p in (REFERENCE / "lmms-eval-revsi-task").glob("*.yaml")} \
        or {"revsi", "revsi_16_frame", "revsi_32_frame", "revsi_64_frame", "revsi_all_frame"}
    tasks = {load_task_yaml(folder / f"vistest_revsi_{c}.yaml")["task"] for c in CONFIGS}
    assert tasks == {f"vistest_revsi_{c}" for c in CONFIGS} and not tasks & builtin
    assert load_task_yaml(folder / "vistest_revsi.yaml")["task"] == sorted(tasks, key=lambda t: CONFIGS.index(
        t.removeprefix("vistest_revsi_")))
    template = load_task_yaml(folder / "_default_template_yaml")
    assert template["dataset_path"] == str(out) and "dataset_kwargs" not in template
    utils = (folder / "utils.py").read_text()
    assert "from lmms_eval.tasks.revsi import utils" in utils and "def revsi_" not in utils
    record = json.loads((out / RECORD).read_text())
    assert record["info"]["lmms_eval_tasks"] == [f"vistest_revsi_{c}" for c in CONFIGS]


def test_export_with_an_evaluator_takes_its_all_rows(run_dir, tmp_path):
    """--evaluator NAME: the all budget's rows are that evaluator's ground truth (frames it takes of all_frame,
    as the manifest states them); a name the run has no ground truth for, or rows whose frames the manifest does
    not state, stop the export."""
    name = "qwen-vl-utils.fps2"
    out = tmp_path / "q"
    export("revsi", run_dir, out, replace(QUIET, evaluator=name))
    manifest = {r["path"]: r for r in read_jsonl(run_dir / "manifest.jsonl")}
    want = {r["id"]: r for r in read_jsonl(run_dir / "scenes" / SCENE / "evaluators" / name / "all_frame.jsonl")}
    taken = manifest[f"all_frame/{SCENE}.mp4"]["evaluators"][name]["takes"]["all"]["frames"]
    rows = [r for r in read_jsonl(config_file(out, "all_frame")) if r["scene_id"] == SCENE]
    assert rows and len(taken) == 4  # 60 frames at 30 frames/s, 2 frames/s
    for r in rows:
        assert r["evaluator"] == name and r["frame_indices"] == taken
        assert r["ground_truth"] == want[r["id"]]["ground_truth"] and want[r["id"]]["status"] != "unanswerable"
    assert {r["id"] for r in rows} == {i for i, w in want.items() if w["status"] != "unanswerable"
                                       and w["question_type"] not in ("object_rel_direction_easy",
                                                                      "obj_appearance_order")}
    assert all(r["evaluator"] is None for r in read_jsonl(config_file(out, "16_frame")))
    with pytest.raises(InputError, match="no all ground truth for evaluator 'nope'"):
        export("revsi", run_dir, tmp_path / "n", replace(QUIET, evaluator="nope"))
    bad = tmp_path / "bad"
    shutil.copytree(run_dir, bad, copy_function=os.link)
    path = bad / "scenes" / SCENE / "evaluators" / name / "all_frame.jsonl"
    docs = read_jsonl(path)
    docs[0]["frame_indices"] = docs[0]["frame_indices"][:-1]
    path.unlink()
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    with pytest.raises(InputError, match="frame_indices: differ"):
        export("jsonl", bad, tmp_path / "b", replace(QUIET, evaluator=name))


def test_score_against_an_evaluator_s_all_ground_truth(run_dir, tmp_path):
    """docs/sampling.md: ``vistest score PREDS -r RUN/scenes/ID/evaluators/NAME`` scores a client's ``all``
    answers against the ground truth over the frames it takes: its own answers score 1.0 there, and the same
    answers score below 1.0 against every frame's all_frame.jsonl where the two differ."""
    name = "lmms-eval.llava_vid"
    folder = run_dir / "scenes" / SCENE / "evaluators" / name
    rows = [r for r in read_jsonl(folder / "all_frame.jsonl") if r["status"] != "unanswerable"]
    every = {r["id"]: r for r in read_jsonl(run_dir / "scenes" / SCENE / "all_frame.jsonl")}
    assert any(r["ground_truth"] != every[r["id"]]["ground_truth"] for r in rows), "a weak test: nothing differs"
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"id": r["id"], "num_frames": "all", "prediction": str(r["ground_truth"])})
                             + "\n" for r in rows))

    def overall(scene_dir, out):
        cli("score", preds, "-r", scene_dir, "-o", out, "--quiet", "--no-learned")  # the predictions' own score
        summary = json.loads((out / "report.json").read_text())["summary"]
        return next(s["overall"] for s in summary if s["model"] == "predictions" and s["budget"] == "all")
    assert overall(folder, tmp_path / "own") == pytest.approx(1.0)
    assert overall(run_dir / "scenes" / SCENE, tmp_path / "every") < 1.0


# VLMEvalKit: the type sets and preconditions of ReVSI.build_prompt and VsiBench.build_prompt. Its source comes from a
# checkout or bare mirror (the path in VISTEST_VLMEVALKIT_SRC; unset: none), else from an installed ``vlmeval``
# package: `make test-clients` installs ms-vlmeval (VLMEvalKit packaged by ModelScope, --no-deps; its
# vlmeval/dataset/vsibench.py is the one of VLMEvalKit e8e78f05, byte for byte; it has no revsi.py), so CI runs the
# VsiBench checks; the ReVSI ones need a checkout, and are skipped without one.
VLMEVALKIT_SRC = Path(os.environ["VISTEST_VLMEVALKIT_SRC"]) if os.environ.get("VISTEST_VLMEVALKIT_SRC") else None


def installed_vlmeval() -> Path | None:
    """The folder holding an installed ``vlmeval`` package's source (found, not imported), else None."""
    spec = importlib.util.find_spec("vlmeval")
    return Path(spec.origin).parent.parent if spec and spec.origin else None


def vlmevalkit_source(path: str) -> str | None:
    """A file of VLMEvalKit's source from a checkout or bare mirror (git show HEAD:path), else from an installed
    ``vlmeval`` package, else None."""
    if VLMEVALKIT_SRC is not None and (VLMEVALKIT_SRC / path).is_file():
        return (VLMEVALKIT_SRC / path).read_text()
    if VLMEVALKIT_SRC is not None and VLMEVALKIT_SRC.is_dir():
        r = subprocess.run(["git", "-C", str(VLMEVALKIT_SRC), "show", f"HEAD:{path}"], capture_output=True,
                           text=True)
        if r.returncode == 0:
            return r.stdout
    site = installed_vlmeval()
    return (site / path).read_text() if site and (site / path).is_file() else None


def needs_vlmevalkit(path):
    src = vlmevalkit_source(path)
    if src is None:
        where = (f"VISTEST_VLMEVALKIT_SRC={VLMEVALKIT_SRC} has no {path}" if VLMEVALKIT_SRC is not None else
                 "VISTEST_VLMEVALKIT_SRC is unset")
        pytest.skip(f"VLMEvalKit's {path} is not here ({where}: set it to a VLMEvalKit checkout or bare mirror to run "
                    f"this check; no installed vlmeval package has it either: `make test-clients` installs "
                    f"ms-vlmeval, which has vsibench.py only)")
    return src


def literal_list(tree, name):
    """The list of strings assigned to ``name`` anywhere in a parsed module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    raise AssertionError(f"no assignment to {name}")


def vlmevalkit_tsv(run_dir, tmp_path, target):
    """TSVs for ``target`` of the mixed run (:func:`mixed_run`: rows of types neither class prompts whole), as
    --skip-unsupported (the default) leaves them: only the rows that target can prompt."""
    from vistest.eval.exporters import vlmevalkit

    out = tmp_path / f"vlm-{target}"
    vlmevalkit.write(mixed_run(run_dir), out, target=target)
    return out


def vlmevalkit_method(source: str, cls: str, name: str, env: dict):
    """``cls.name`` of a VLMEvalKit module's source, compiled alone into a plain function in ``env`` (the
    module itself is not imported: it needs decord and huggingface_hub)."""
    tree = ast.parse(source)
    node = next(f for c in tree.body if isinstance(c, ast.ClassDef) and c.name == cls
                for f in c.body if isinstance(f, ast.FunctionDef) and f.name == name)
    exec(compile(ast.Module([node], []), f"vlmeval:{cls}.{name}", "exec"), env)
    return env[name]


@pytest.mark.parametrize("levels", [("easy", "medium", "hard"), ("easy", "hard"), ("medium",)])
def test_vsibench_overall_is_vlmevalkits_on_partial_sets(levels, capsys):
    """vistest's vsibench overall (composites: complete, its default) equals VLMEvalKit's ``VsiBench._aggregate``
    run on per-row hits and MRAs, on sets with every relative-direction level and with some missing."""
    import pandas as pd
    from collections import OrderedDict

    from vistest.eval.metrics import lmms_eval_summary, resolve_protocol

    aggregate = vlmevalkit_method(needs_vlmevalkit("vlmeval/dataset/vsibench.py"), "VsiBench", "_aggregate",
                                  {"pd": pd, "OrderedDict": OrderedDict})
    mcq = pd.DataFrame([{"question_type": f"object_rel_direction_{lv}", "hit": h}
                        for i, lv in enumerate(levels) for h in (1.0,) * (i + 1) + (0.0, 0.0)]
                       + [{"question_type": "route_planning", "hit": h} for h in (1.0, 1.0, 0.0, 0.0, 0.0)])
    na = pd.DataFrame([{"question_type": "object_counting", "MRA:.5:.95:.05": m} for m in (0.3, 0.9)])
    theirs = aggregate(None, mcq, na)["overall"] / 100.0
    capsys.readouterr()
    per_type = {**mcq.groupby("question_type")["hit"].mean().to_dict(),
                **na.groupby("question_type")["MRA:.5:.95:.05"].mean().to_dict()}
    proto = resolve_protocol("vsibench", per_type)
    assert proto.composite_rule == "complete"
    assert lmms_eval_summary(per_type, proto)["overall"] == pytest.approx(theirs, abs=1e-12)
    present = lmms_eval_summary(per_type, resolve_protocol("vsibench", per_type, "present"))["overall"]
    assert (present == pytest.approx(theirs, abs=1e-12)) == (len(levels) != 2)  # the rules differ on two levels


@pytest.mark.parametrize("target,module_path,mcq,number", [
    ("ReVSI", "vlmeval/dataset/revsi.py", "MCQ_QUESTION_TYPES", "NQ_QUESTION_TYPES"),
    ("VsiBench", "vlmeval/dataset/vsibench.py", "mcq_items", "na_items")])
def test_vlmevalkit_type_sets_are_the_sources(target, module_path, mcq, number):
    """The documented constants equal the lists in VLMEvalKit's revsi.py and vsibench.py (skipped without the
    source)."""
    from vistest.eval.exporters.vlmevalkit import VLMEVALKIT_TYPES

    tree = ast.parse(needs_vlmevalkit(module_path))
    assert VLMEVALKIT_TYPES[target]["mcq"] == literal_list(tree, mcq)
    assert VLMEVALKIT_TYPES[target]["number"] == literal_list(tree, number)


def test_vlmevalkit_export_checks_types_against_its_target(run_dir, tmp_path):
    """auto picks VsiBench for the demo's VSI-Bench types; every row has a type the target prompts and MCQ rows
    have options ast.literal_eval reads (what build_prompt needs); ReVSI gets ReVSI names (object_counting ->
    object_counting_single) and its real rows' video is {scene_id}.mp4 under {root}/{n}_frame/; a target that
    cannot prompt some rows stops the export naming them."""
    from vistest.eval.exporters.vlmevalkit import VLMEVALKIT_TYPES, known_types

    out = tmp_path / "auto"
    res = export("vlmevalkit", run_dir, out, QUIET)
    assert res.info["target"] == "VsiBench"
    revsi_out = vlmevalkit_tsv(run_dir, tmp_path, "ReVSI")
    for target, folder in (("VsiBench", out), ("ReVSI", revsi_out)):
        for tsv in sorted(folder.glob("*.tsv")):
            df = pd.read_csv(tsv, sep="\t")
            assert set(df["question_type"]) <= known_types(target), (target, tsv.name)
            for _, row in df.iterrows():
                if row["question_type"] in VLMEVALKIT_TYPES[target]["mcq"]:
                    opts = ast.literal_eval(row["candidates" if target == "VsiBench" else "options"])
                    assert isinstance(opts, list) and opts and all(isinstance(o, str) for o in opts)
                if target == "ReVSI" and row["variant"] == "budget":
                    assert (run_dir / f"{row['num_frames']}_frame" / row["video"]).is_file()
    df = pd.read_csv(revsi_out / "16_frame.tsv", sep="\t")
    counting = df[df["vistest_question_type"] == "object_counting"]
    assert len(counting) and set(counting["question_type"]) == {"object_counting_single"}
    with pytest.raises(InputError, match=r"ReVSI cannot build a prompt for \d+ row\(s\).*demo-10 "
                                         r"\(object_rel_direction_easy: \d+ row\(s\), first at .*16_frame.jsonl:\d+\)"
                                         r".*demo-11 \(obj_appearance_order.*--skip-unsupported \(the default\)"):
        export("vlmevalkit", run_dir, tmp_path / "r", replace(QUIET, target="ReVSI", skip_unsupported=False))
    assert not (tmp_path / "r").exists()


# the types each class cannot prompt, written out from VLMEvalKit's lists (revsi.py MCQ_QUESTION_TYPES /
# NQ_QUESTION_TYPES, vsibench.py mcq_items / na_items) and the renames of docs/export.md, not from the module
REVSI_CANNOT = {"object_rel_direction_easy", "object_rel_direction_medium", "object_rel_direction_hard",
                "obj_appearance_order"}
VSIBENCH_CANNOT = {"object_rel_direction_forward_easy", "object_rel_direction_backward_easy",
                   "object_rel_direction_forward_hard", "object_rel_direction_backward_hard"}


def mixed_run(run_dir):
    """The run with demo-9's rows (object_rel_distance) asked as ReVSI's object_rel_direction_forward_easy: a set
    neither class prompts whole (as `vistest generate --types all`'s), VsiBench lacking that type, ReVSI the
    relative-direction level and the appearance order of demo-10 and demo-11."""
    run = load_run(run_dir)
    rows = tuple(replace(r, row=replace(r.row, question_type="object_rel_direction_forward_easy"))
                 if r.id.endswith("demo-9") else r for r in run.rows)
    return replace(run, rows=rows)


@pytest.mark.parametrize("fmt", ["vlmevalkit-ReVSI", "vlmevalkit-VsiBench", "vlmevalkit-auto", "revsi",
                                 "lmms-eval-task"])
def test_exports_leave_out_rows_their_target_cannot_prompt_with_one_warning(run_dir, tmp_path, fmt):
    """--skip-unsupported (the default), the same contract for every prompting export: the rows the target
    cannot prompt are not written, the record counts them per type (reason and part), one warning names the
    counts per type; --refuse-unsupported stops instead, writing nothing. lmms-eval-task prompts every type."""
    from vistest.eval.exporters import lmms_eval_task, revsi, vlmevalkit

    run = mixed_run(run_dir)
    fmt, _, target = fmt.partition("-")
    module = {"vlmevalkit": vlmevalkit, "revsi": revsi, "lmms": lmms_eval_task}[fmt]
    # lmms-eval-task: one scoring protocol per folder; the auto choice refuses a ReVSI-only and VSI-Bench-only mix
    res = module.write(run, tmp_path / "out", target=target or "auto", progress=False, protocol="vsibench")
    if fmt == "vlmevalkit":
        # rows the export would write were every class able to prompt them: answerable budget rows and dummies
        asked = [r for r in run.rows if (r.is_dummy and r.video is not None) or
                 (not r.is_dummy and r.answerable and r.scorable)]
        chosen = res.info["target"]
        cannot = REVSI_CANNOT if chosen == "ReVSI" else VSIBENCH_CANNOT
        if target == "auto":  # the class prompting more rows
            n = {t: sum(r.question_type not in c for r in asked) for t, c in (("ReVSI", REVSI_CANNOT),
                                                                            ("VsiBench", VSIBENCH_CANNOT))}
            assert n[chosen] == max(n.values())
        lost = [r for r in asked if r.question_type in cannot]
        reason = "no_target_question_type"
        written = [row for tsv in sorted((tmp_path / "out").glob("*.tsv")) for _, row in
                   pd.read_csv(tsv, sep="\t").iterrows()]
        assert written and not {row["vistest_question_type"] for row in written} & cannot
        assert len(written) == len(asked) - len(lost)
    elif fmt == "revsi":
        reason, cannot = "no_revsi_question_type", REVSI_CANNOT
        lost = [r for r in run.real_rows if r.answerable and r.scorable and r.question_type in cannot]
        chosen = "ReVSI"
    else:
        assert not res.warnings and not [x for x in res.left_out if x.reason not in ("unanswerable", "no_video")]
        assert lmms_eval_task.write(run, tmp_path / "strict", skip_unsupported=False, protocol="vsibench").parts
        return
    assert lost, "the mixed run must hold rows the target cannot prompt"
    by_type = {}
    for r in lost:
        by_type[r.question_type] = by_type.get(r.question_type, 0) + 1
    counted = {}
    for x in res.left_out:
        if x.reason == reason:
            counted[x.question_type] = counted.get(x.question_type, 0) + x.n
    assert counted == by_type
    mine = [w for w in res.warnings if "cannot prompt for" in w]
    assert len(mine) == 1 and mine[0].startswith(f"{len(lost)} row(s) {chosen} cannot prompt for, left out")
    assert all(f"{t} {n}" in mine[0] for t, n in by_type.items())
    with pytest.raises(InputError, match=r"cannot (build a prompt|prompt) for \d+ row\(s\).*--skip-unsupported"):
        module.write(run, tmp_path / "strict", target=chosen, skip_unsupported=False, progress=False)
    assert not (tmp_path / "strict").exists()


def test_export_warnings_show_with_quiet(run_dir, tmp_path):
    """The CLI: --quiet keeps the one warning (the demo's demo-10 and demo-11 have no ReVSI type);
    --refuse-unsupported exits 2 naming them."""
    r = CliRunner().invoke(main, ["export", "revsi", str(run_dir), "-o", str(tmp_path / "a"), "--quiet"])
    assert r.exit_code == 0, r.output
    lines = [ln for ln in r.output.splitlines() if "cannot prompt for" in ln]
    assert len(lines) == 1 and lines[0].startswith("warning: ") and "obj_appearance_order" in lines[0]
    r = CliRunner().invoke(main, ["export", "vlmevalkit", str(run_dir), "-o", str(tmp_path / "b"), "--target",
                                  "ReVSI", "--refuse-unsupported", "--quiet"])
    assert r.exit_code == 2 and "demo-10" in r.output and not (tmp_path / "b").exists()


def vlmevalkit_class(module_path: str, class_name: str):
    """The real class from VLMEvalKit's source, its module run with stand-ins for the imports it needs to be
    defined (datasets, huggingface_hub, decord, portalocker, PIL, vlmeval's helpers); build_prompt(video_llm=True)
    uses none of them."""
    import types

    src = needs_vlmevalkit(module_path)
    stub_names = ["vlmeval", "vlmeval.smp", "vlmeval.smp.file", "vlmeval.dataset", "vlmeval.dataset.video_base",
                  "datasets", "huggingface_hub", "PIL", "decord", "portalocker", "tqdm"]
    saved = {n: sys.modules.get(n) for n in stub_names}
    stubs = {n: types.ModuleType(n) for n in stub_names}

    class VideoBaseDataset:  # the base: build_prompt reads self.data and self.data_root only
        pass
    stubs["vlmeval.dataset.video_base"].VideoBaseDataset = VideoBaseDataset
    for mod, names in (("vlmeval.smp", ["LMUDataRoot", "get_cache_path", "load", "modelscope_flag_set"]),
                       ("vlmeval.smp.file", ["load"]), ("datasets", ["load_dataset"]),
                       ("huggingface_hub", ["hf_hub_download", "snapshot_download"]), ("PIL", ["Image"]),
                       ("tqdm", ["tqdm"])):
        for n in names:
            setattr(stubs[mod], n, lambda *a, **k: "")
    try:
        sys.modules.update(stubs)
        module = types.ModuleType(f"vlmeval.dataset.{Path(module_path).stem}")
        module.__package__ = "vlmeval.dataset"
        exec(compile(src, module_path, "exec"), module.__dict__)
    finally:
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m
    return getattr(module, class_name)


@pytest.mark.parametrize("target,module_path", [("VsiBench", "vlmeval/dataset/vsibench.py"),
                                                ("ReVSI", "vlmeval/dataset/revsi.py")])
def test_vlmevalkits_real_build_prompt_prompts_every_exported_row(run_dir, tmp_path, target, module_path):
    """VLMEvalKit's own build_prompt (its source, skipped without it) builds a prompt for every row of every TSV
    the export writes for that class, with the question and, for MCQ rows, every option in it."""
    cls = vlmevalkit_class(module_path, target)
    folder = vlmevalkit_tsv(run_dir, tmp_path, target)
    checked = 0
    for tsv in sorted(folder.glob("*.tsv")):
        ds = object.__new__(cls)
        ds.data = pd.read_csv(tsv, sep="\t")  # vlmeval/smp/file.py load (TSV)
        ds.data_root = str(run_dir)
        ds.frame_subset = tsv.name.split("_dummy")[0].removesuffix(".tsv")
        for i, row in ds.data.iterrows():
            message = ds.build_prompt(i if target == "ReVSI" else row, video_llm=True)
            text = message[-1]["value"]
            assert message[-1]["type"] == "text" and row["question"] in text
            if isinstance(row["options"], str):
                assert all(o in text for o in ast.literal_eval(row["options"]))
            checked += 1
    assert checked > 20


def test_vlmevalkits_real_revsi_class_prompts_every_row_of_the_revsi_export(revsi, tmp_path):
    """VLMEvalKit's ReVSI on the revsi export as its prepare_dataset reads it (load_dataset per config, video =
    {scene_id}.mp4, options serialized with the module's own _serialize_options): a prompt for every row, and
    every row's video at {root}/{n}_frame/{video}."""
    cls = vlmevalkit_class("vlmeval/dataset/revsi.py", "ReVSI")
    serialize = cls.__init__.__globals__["_serialize_options"]
    out, _ = revsi
    checked = 0
    for config in CONFIGS:
        ds = load_revsi_config(out, config, tmp_path / "c")
        df = ds.add_column("video", [f"{x['scene_id']}.mp4" for x in ds]).to_pandas()
        df["options"] = df["options"].apply(serialize)
        obj = object.__new__(cls)
        obj.data, obj.data_root, obj.frame_subset = df, str(out), config
        for i in range(len(df)):
            message = obj.build_prompt(i, video_llm=True)
            assert Path(message[0]["value"]).is_file() and df["question"][i] in message[-1]["value"]
            checked += 1
    assert checked == sum(len(read_jsonl(config_file(out, c))) for c in CONFIGS) > 20
