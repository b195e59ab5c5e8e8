"""`vistest batch`: many scenes on a local process pool or a Ray cluster, resumable, fault-isolated.

Scenes are copies of one tiny demo scene (160x120, 30 frames; ids demo-a, demo-b, demo-c) and
one corrupt scene (demo-bad: its video is truncated, so ffmpeg finds 1 frame where the scene
describes 30). One local-engine batch of the four (module-scoped) is the reference every other
run is compared with byte for byte (visibility tables by their arrays: numpy's zip stamps
times). Workers are killed with SIGKILL by the process id their claim file
(RUN_DIR/.vistest/running/{scene_id}.json) names, while they are in the middle of a scene.
The Ray test starts a real two-node Ray cluster (ray.cluster_utils.Cluster: a head and a
second node, 1 CPU each) on 127.0.0.1 only, and stops it whatever happens; which node ran a
scene is read from the parent (the node's raylet) of the worker process its claim names.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

import vistest  # noqa: F401  (sets PYOPENGL_PLATFORM before pyrender is imported)
from vistest import Visibility, layout
from vistest.batch import claims
from vistest.batch.failures import ERROR, write_failed
from vistest.batch.specs import SceneSpec, discover, read_scene_id
from vistest.batch.task import SceneTask, run_task
from vistest.config import RunConfig
from vistest.synth.demo import demo_batch, make_demo_scene
from vistest.atomic import files_record
from vistest.errors import InputError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
FAST = ["--budgets", "16,all", "--dummy", "drop", "--preset", "ultrafast"]
GOOD = ("demo-a", "demo-b", "demo-c")


def cli(*args, env=None, check=None):
    r = subprocess.run([sys.executable, "-m", "vistest.cli", *map(str, args)], capture_output=True, text=True,
                       env=env)
    if check is not None:
        assert r.returncode == check, r.stdout + r.stderr
    return r


@pytest.fixture(scope="module")
def scenes(tmp_path_factory):
    root = tmp_path_factory.mktemp("batch")
    src = make_demo_scene(root / "demo", num_frames=30, size=(160, 120), quiet=True)
    demo_batch(src, EXAMPLES / "demo-questions.jsonl", root / "scenes", list(GOOD) + ["demo-bad"])
    bad = root / "scenes" / "demo-bad"
    doc = json.loads((bad / "scene.json").read_text())
    (bad / "video.mp4").write_bytes(Path(doc["video"]).read_bytes()[:3000])  # truncated: 1 frame decodes
    (bad / "scene.json").write_text(json.dumps(dict(doc, video="video.mp4")))
    return root / "scenes"


@pytest.fixture(scope="module")
def reference(scenes, tmp_path_factory):
    """One uninterrupted local-engine batch of the four scenes."""
    out = tmp_path_factory.mktemp("reference") / "out"
    r = cli("batch", scenes, "-o", out, "-j", "2", *FAST)
    return out, r


def snapshot(out: Path) -> dict[str, bytes]:
    """{relative path: bytes} of every file but visibility tables, the manifest's lock file and
    the scenes' locks and records (vistest.videos.manifest: a record keeps modification times)."""
    state = {(layout.STATE_DIR, layout.LOCKS_DIR), (layout.STATE_DIR, layout.RECORDS_DIR)}
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.suffix != ".npz" and p.name != layout.MANIFEST_LOCK
            and p.relative_to(out).parts[:2] not in state}


def assert_same_outputs(out: Path, ref: Path) -> None:
    a, b = snapshot(out), snapshot(ref)
    assert sorted(a) == sorted(b)
    assert [k for k in a if a[k] != b[k]] == []
    for sid in GOOD:
        va = Visibility.load(layout.scene_dir(out, sid) / layout.VISIBILITY)
        vb = Visibility.load(layout.scene_dir(ref, sid) / layout.VISIBILITY)
        for name in ("visible", "projected", "bbox"):
            assert np.array_equal(getattr(va, name), getattr(vb, name), equal_nan=True), (sid, name)


def manifest(out: Path) -> list[dict]:
    return [json.loads(ln) for ln in (out / layout.MANIFEST).read_text().splitlines()]


def failed(out: Path) -> list[dict]:
    return [json.loads(ln) for ln in layout.failed_path(out).read_text().splitlines()]


def leftovers(out: Path) -> list[Path]:
    return [p for p in out.rglob("*") if ".tmp" in p.name or ".vistest-spool" in p.name]


def wait_for_claim(out: Path, stages, proc, timeout=120.0, exclude=("demo-bad",)):
    """(scene id, claim) of the first running scene (not in ``exclude``) whose claim is in one
    of ``stages``, while ``proc`` runs."""
    deadline = time.monotonic() + timeout
    folder = out / layout.STAMPS_DIR / layout.CLAIMS_DIR
    while time.monotonic() < deadline and proc.poll() is None:
        for f in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            if f.name.startswith("."):  # a claim being written (vistest.atomic's temporary name), not a claim
                continue
            sid = f.stem
            c = claims.read_claim(out, sid)
            if sid not in exclude and c is not None and c.stage in stages:
                return sid, c
        time.sleep(0.01)
    raise AssertionError(f"no scene reached {stages} (batch exit status {proc.poll()})")


# ---- the local engine --------------------------------------------------------------------
def test_every_good_scene_completes_and_the_corrupt_one_is_recorded(reference):
    out, r = reference
    assert r.returncode == 1, r.stdout + r.stderr  # a scene failed
    [rec] = failed(out)
    assert rec["scene_id"] == "demo-bad" and rec["kind"] == "input" and rec["stage"] == "video"  # before any output
    assert rec["attempts"] == 1 and rec["error"].startswith(f"{rec['scene_json'][:-len('scene.json')]}video.mp4: ")
    assert "decodes to 1 frames" in rec["error"] and "traceback" not in rec
    rows = manifest(out)
    assert {m["scene_id"] for m in rows} == set(GOOD)
    assert {m["path"] for m in rows} == {p.relative_to(out).as_posix() for p in out.rglob("*.mp4")
                                         if "demo-bad" not in str(p)}
    page = (out / layout.INDEX_HTML).read_text()
    assert all(f'href="{m["path"]}"' in page for m in rows)
    # the summary table: a row per scene, totals, where the failures are
    assert "demo-bad  failed" in r.stdout and "input: " in r.stdout
    assert "4 scene(s): 3 done, 0 up to date, 1 failed (input 1)" in r.stdout
    assert "failed.jsonl" in r.stderr
    assert leftovers(out) == [] and not list((out / ".vistest" / "running").glob("*"))
    assert not layout.scene_dir(out, "demo-bad").exists()  # its partial ground truth went with its lines


def test_default_workers_fit_cpus_and_memory():
    from vistest.batch.local import available_cpus, default_workers

    assert default_workers(1, 1.0) == available_cpus()
    assert default_workers(available_cpus() + 1, 1.0) == 1
    assert default_workers(1, 1e12) == 1  # a terabyte per scene: one at a time


def test_a_batch_scene_is_exactly_what_vistest_run_writes(reference, scenes, tmp_path):
    """The task is the scene's SceneJob with run's options: `vistest run` of one scene, with the threads
    the batch gives each scene (1 CPU each) and without the page's pictures (a batch draws none), writes the
    same bytes and manifest lines."""
    out, _ = reference
    single = tmp_path / "single"
    a = scenes / "demo-a"
    cli("run", a / "scene.json", a / "questions.jsonl", "-o", single, *FAST, "--threads", "1", "--quiet",
        "--no-pictures", check=0)
    mine = snapshot(single)
    for rel in [k for k in mine if k.endswith(".mp4") or k.startswith("scenes/")]:
        assert mine[rel] == (out / rel).read_bytes(), rel
    assert manifest(single) == [m for m in manifest(out) if m["scene_id"] == "demo-a"]


@pytest.mark.slow  # export and score over the merged run
def test_export_and_score_read_the_merged_run(reference, tmp_path):
    out, _ = reference
    cli("export", "jsonl", out, "-o", tmp_path / "jsonl", "--quiet", check=0)
    rows = [json.loads(ln) for f in (tmp_path / "jsonl").glob("*.jsonl") for ln in f.read_text().splitlines()]
    assert {r["scene_id"] for r in rows} == set(GOOD)
    preds = tmp_path / "blind.jsonl"
    cli("baseline", "-r", out, "-o", preds, check=0)
    cli("score", preds, "-r", out, "-o", tmp_path / "score", "--quiet", check=0)
    report = json.loads((tmp_path / "score" / "report.json").read_text())
    assert "demo-a-demo-1" in preds.read_text() and "demo-bad" not in preds.read_text() and report


@pytest.mark.slow  # three batches over the scenes
def test_rerun_skips_complete_scenes_and_redoes_only_what_changed(reference, scenes, tmp_path):
    ref, _ = reference
    work = tmp_path / "scenes"
    shutil.copytree(scenes, work)
    out = tmp_path / "out"
    cli("batch", work, "-o", out, "-j", "2", *FAST, "--quiet", check=1)
    r = cli("batch", work, "-o", out, "-j", "2", *FAST, check=1)
    assert "4 scene(s): 0 done, 3 up to date, 1 failed" in r.stdout  # the corrupt scene is tried again
    os.utime(work / "demo-a" / "questions.jsonl")  # touched, same bytes: still up to date (content key)
    lines = (work / "demo-b" / "questions.jsonl").read_text().splitlines()
    (work / "demo-b" / "questions.jsonl").write_text("\n".join(lines[:-1]) + "\n")  # b's questions changed
    (out / "16_frame" / "demo-c.mp4").unlink()  # c lost an output
    r = cli("batch", work, "-o", out, "-j", "2", *FAST, check=1)
    assert "4 scene(s): 2 done, 1 up to date, 1 failed" in r.stdout, r.stdout
    assert "demo-b    done" in r.stdout and "demo-c    done" in r.stdout and "demo-a    done" not in r.stdout
    rows = manifest(out)
    assert all("demo-b-demo-12" not in m["questions"] for m in rows if m["scene_id"] == "demo-b")
    assert any("demo-a-demo-12" in m["questions"] for m in rows if m["scene_id"] == "demo-a")
    assert (out / "16_frame" / "demo-c.mp4").read_bytes() == (ref / "16_frame" / "demo-c.mp4").read_bytes()


def test_options_key_is_what_decides_outputs():
    from vistest.budget.config import TruthConfig
    from vistest.videos.config import EncodeConfig, EncoderSettings, ResourceConfig

    base = RunConfig().key()
    for other in (RunConfig(encode=EncodeConfig(EncoderSettings(crf=30))), RunConfig(occlusion="none"),
                  RunConfig(truth=TruthConfig(budgets=(16,))), RunConfig(budget_files=False)):
        assert other.key() != base
    for same in (RunConfig(resources=ResourceConfig(900, jobs=3, threads=2, cpus=4, ffmpeg="/x")),
                 RunConfig(resources=ResourceConfig(500.0))):
        assert same.key() == base


RESOURCES = ["--jobs", "2", "--threads", "1", "--max-memory", "900"]  # how fast, in how much memory: no output
OUTPUT_OPTIONS = [["--crf", "20"], ["--budgets", "16"], ["--dummy", "drop,black"], ["--mask-margin", "3"],
                  ["--evidence-threshold", "0.1"], ["--budget-fps", "2"], ["--occlusion", "none"],
                  ["--seen-threshold", "0.1"], ["--profile", "internvl"], ["--keep-unknown-frames"],
                  ["--evaluator", "every-frame"], ["--dummy-length", "full"]]


@pytest.mark.slow  # a run and a status per option
def test_resources_never_make_a_scene_stale_and_output_options_always_do(scenes, tmp_path):
    """One rule for `vistest run`, `vistest batch` and SceneJob.status (issue #24: run_options
    hashed --jobs, TaskOptions.key did not, so scene_status called a scene stale when only
    --jobs changed). Each command's own option parser builds the config; the scene's record,
    written by a batch, decides for all three."""
    from vistest.batch.run import current_lines
    from vistest.batch.task import scene_job
    from vistest.cli.batch import batch as batch_command
    from vistest.cli.videos import run as run_command, run_config
    from vistest.job import SceneJob
    from vistest.videos.config import ResourceConfig

    work, out = tmp_path / "scenes", tmp_path / "out"
    shutil.copytree(scenes / "demo-a", work / "demo-a")
    spec = discover(work)[0]
    cli("batch", work, "-o", out, *FAST, "--quiet", check=0)

    def run_job(*extra):  # what `vistest run SCENE QUESTIONS -o OUT ...` would run
        kw = run_command.make_context("run", [str(spec.scene_json), str(spec.questions), "-o", str(out), *FAST,
                                              *extra]).params
        return SceneJob(spec.scene_json, spec.questions, run_config(kw))

    def batch_lines(*extra):  # what `vistest batch SCENES -o OUT ...` decides (None: runs the scene)
        kw = batch_command.make_context("batch", [str(work), "-o", str(out), *FAST, *extra]).params
        return current_lines(scene_job(spec, run_config(kw, cpus=kw["cpus_per_scene"])), out)

    base = run_job().config
    assert run_job().status(out).current and batch_lines() == manifest(out)
    assert run_job(*RESOURCES).status(out).current and batch_lines(*RESOURCES, "--cpus-per-scene", "2")
    resources = ResourceConfig(max_memory_mb=900, jobs=2, threads=1, cpus=3, ffmpeg="/elsewhere/ffmpeg")
    assert SceneJob(spec.scene_json, spec.questions, dataclasses.replace(base, resources=resources)).status(out).current
    for option in OUTPUT_OPTIONS:
        st = run_job(*option).status(out)
        assert not st.current and st.complete and "the options differ" in st.reasons[-1], option
        assert batch_lines(*option) is None, option
    r = cli("run", spec.scene_json, spec.questions, "-o", out, *FAST, *RESOURCES, "--if-stale", "--quiet", check=0)
    assert "demo-a: up to date in" in r.stderr
    r = cli("batch", work, "-o", out, *FAST, *RESOURCES, check=0)
    assert "1 scene(s): 0 done, 1 up to date, 0 failed" in r.stdout, r.stdout
    r = cli("batch", work, "-o", out, *FAST, "--crf", "20", check=0)
    assert "1 scene(s): 1 done, 0 up to date, 0 failed" in r.stdout, r.stdout
    assert not run_job().status(out).current and run_job("--crf", "20").status(out).current
    r = cli("run", spec.scene_json, spec.questions, "-o", out, *FAST, "--if-stale", check=0)
    assert "up to date in" not in r.stderr and "videos written" in r.stderr
    assert run_job(*RESOURCES).status(out).current


@pytest.mark.slow  # two batches interrupted and rerun (SIGINT to the driver or its process group)
@pytest.mark.parametrize("to", ["driver", "group"])
def test_sigint_leaves_nothing_partial_trusted_and_a_rerun_completes(scenes, reference, tmp_path, to):
    """SIGINT to the driver alone (kill -INT), or to its whole process group as Ctrl-C in a
    terminal sends it (driver, workers, their ffmpeg and visibility processes at once)."""
    ref, _ = reference
    out = tmp_path / "out"
    args = [sys.executable, "-m", "vistest.cli", "batch", str(scenes), "-o", str(out), "-j", "2", *FAST, "--quiet"]

    def own_group_default_sigint():
        os.setpgrp()  # a process group of its own, as a terminal gives a foreground job
        # a shell without job control starts background jobs with SIGINT ignored: restore the default
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=own_group_default_sigint)
    try:
        sid, _ = wait_for_claim(out, ("videos",), proc)
        if to == "driver":
            proc.send_signal(signal.SIGINT)  # it stops its workers
        else:
            os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "interrupted" in err, err
    assert "Traceback" not in err, err
    assert leftovers(out) == [] and not list((out / ".vistest" / "running").glob("*"))
    finished = {p.stem for p in (out / ".vistest" / "scenes").glob("*.json")}
    assert sid not in finished and "demo-bad" not in finished
    assert not layout.scene_dir(out, sid).exists()  # its ground truth went with it
    recorded = failed(out) if layout.failed_path(out).exists() else []
    assert {r["scene_id"] for r in recorded} <= {"demo-bad"}  # an interrupted scene is no failure
    rows = manifest(out)
    assert {m["scene_id"] for m in rows} == finished  # only finished scenes are listed ...
    assert all((out / m["path"]).is_file() for m in rows)  # ... and what is listed exists
    r = cli("batch", scenes, "-o", out, "-j", "2", *FAST, check=1)
    assert f"{len(finished)} up to date" in r.stdout
    assert_same_outputs(out, ref)


def test_a_lost_worker_without_retries_is_an_infrastructure_failure(scenes, tmp_path):
    one = tmp_path / "one"
    one.mkdir()
    os.symlink(scenes / "demo-a", one / "a")
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "vistest.cli", "batch", str(one), "-o", str(out), *FAST,
                             "--retries", "0", "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        sid, claim = wait_for_claim(out, ("visibility", "budget", "videos"), proc)
        os.kill(claim.pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 1, err
    [rec] = failed(out)
    assert rec["scene_id"] == "demo-a" and rec["kind"] == "infrastructure" and rec["attempts"] == 1
    assert "killed by SIGKILL" in rec["error"] and rec["stage"] in ("visibility", "budget", "videos")
    assert leftovers(out) == [] and claims.read_claim(out, "demo-a") is None
    assert manifest(out) == []


def children(pid: int) -> list[int]:
    """Process ids whose parent is ``pid``."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            pass
    return out


@pytest.mark.slow  # a batch whose visibility child is killed, then retried
def test_a_killed_visibility_process_is_retried_like_a_lost_worker(scenes, reference, tmp_path):
    """The out-of-memory killer takes the task's visibility child process (SIGKILL): the task
    neither hangs nor records a bug; its worker ends as lost and the scene is retried."""
    ref, _ = reference
    one = tmp_path / "one"
    one.mkdir()
    os.symlink(scenes / "demo-a", one / "a")
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "vistest.cli", "batch", str(one), "-o", str(out), *FAST,
                             "--retries", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, claim = wait_for_claim(out, ("visibility",), proc)
        deadline = time.monotonic() + 60
        while not (kids := [k for k in children(claim.pid) if b"resource_tracker" not in
                            Path(f"/proc/{k}/cmdline").read_bytes()]) and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(kids[0], signal.SIGKILL)
        stdout, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, stdout + err
    assert f"lost attempt 1 (pid {claim.pid}" in stdout and "stage visibility" in stdout, stdout
    assert "the visibility process ended without a result (killed by SIGKILL)" in err
    assert not layout.failed_path(out).exists() and leftovers(out) == []
    for rel in [m["path"] for m in manifest(out)] + ["scenes/demo-a/16_frame.jsonl", "scenes/demo-a/dummy_gt.jsonl"]:
        assert (out / rel).read_bytes() == (ref / rel).read_bytes(), rel


# ---- the Ray engine ------------------------------------------------------------------------
@pytest.fixture
def ray_cluster(monkeypatch):
    """A head node and a second node joining it, 1 CPU each, on 127.0.0.1 only; Ray's files in
    a private temporary folder; no dashboard, no usage stats, small object stores. Yields (the
    environment for a driver process (RAY_ADDRESS only there), {raylet pid: node name}). Every
    Ray process is stopped at the end (Cluster.shutdown; its reaper process if this one dies)."""
    pytest.importorskip("ray")
    from ray._private import ray_constants
    from ray.cluster_utils import Cluster

    tmp = tempfile.mkdtemp(prefix="vt-ray-", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    env = {"RAY_TMPDIR": tmp, "RAY_USAGE_STATS_ENABLED": "0",
           # Ray maps a loopback address to this machine's network address unless clusters are
           # "disabled"; that setting keeps the driver and every node on 127.0.0.1
           "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    node = dict(num_cpus=1, object_store_memory=80 * 2**20, node_ip_address="127.0.0.1")
    cluster = Cluster(initialize_head=True, head_node_args=dict(node, include_dashboard=False))
    try:
        cluster.add_node(**node)
        cluster.wait_for_nodes()
        raylets = {n.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid: name
                   for n, name in zip(cluster.list_all_nodes(), ("head", "second node"))}
        assert len(raylets) == 2
        yield {**os.environ, **env, "RAY_ADDRESS": cluster.address}, raylets
    finally:
        cluster.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


def node_of(pid: int, raylets: dict[int, str]) -> str | None:
    """The node (raylet) whose worker process ``pid`` is: the raylet among its ancestors."""
    for _ in range(4):
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])  # the parent
        except (OSError, ValueError, IndexError):
            return None
        if pid in raylets:
            return raylets[pid]
    return None


@pytest.mark.slow  # a two-node Ray cluster, a killed worker, a rerun
def test_ray_two_nodes_killed_worker_retried_corrupt_scene_recorded_rerun_identical(scenes, reference, ray_cluster,
                                                                                      tmp_path):
    ref, _ = reference
    env, raylets = ray_cluster
    out = tmp_path / "out"
    args = [sys.executable, "-m", "vistest.cli", "batch", str(scenes), "-o", str(out), "--engine", "ray",
            "--retries", "2", *FAST]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    nodes: dict[str, set[str]] = {}  # node -> scenes its workers ran (from the claims' pids)
    try:
        sid, claim = wait_for_claim(out, ("visibility", "budget", "videos"), proc)
        nodes.setdefault(node_of(claim.pid, raylets), set()).add(sid)
        os.kill(claim.pid, signal.SIGKILL)  # a Ray worker process, in the middle of a scene
        folder = out / layout.STAMPS_DIR / layout.CLAIMS_DIR
        while proc.poll() is None:
            for f in [f for f in folder.glob("*.json") if not f.name.startswith(".")]:  # not one being written
                c = claims.read_claim(out, f.stem)
                if c is not None and c.pid != claim.pid:
                    nodes.setdefault(node_of(c.pid, raylets), set()).add(f.stem)
            time.sleep(0.01)
        stdout, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 1, stdout + err
    assert set(nodes) == {"head", "second node"}, nodes  # scenes ran on both nodes
    row = next(ln for ln in stdout.splitlines() if ln.startswith(sid))
    assert " done " in row and f"lost attempt 1 (pid {claim.pid}" in row, stdout  # retried and completed
    [rec] = failed(out)  # the corrupt scene only, not retried
    assert rec["scene_id"] == "demo-bad" and rec["kind"] == "input" and rec["attempts"] == 1
    assert "video.mp4: decodes to 1 frames" in rec["error"]
    assert "3 done, 0 up to date, 1 failed (input 1); 1 retried" in stdout
    assert_same_outputs(out, ref)
    r = cli("batch", scenes, "-o", out, "--engine", "ray", *FAST, env=env, check=1)
    assert "0 done, 3 up to date, 1 failed" in r.stdout
    assert_same_outputs(out, ref)


# ---- the parts ---------------------------------------------------------------------------------
def test_batch_takes_exactly_the_options_of_run():
    from vistest.cli import main

    def opts(name):
        return {p.name: (tuple(p.opts), p.default) for p in main.commands[name].params if p.name != "help"}

    run, batch = opts("run"), opts("batch")
    # a batch always skips current scenes; one scene's args; the page's pictures (a batch writes its page once)
    own = ("if_stale", "scene_json", "questions_jsonl", "pictures", "sheets")
    assert {k: v for k, v in batch.items() if k in run} == {k: v for k, v in run.items() if k not in own}
    assert set(run) - set(batch) == set(own)


def test_ray_without_an_address_is_bad_input(scenes, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    r = cli("batch", scenes, "-o", tmp_path / "out", "--engine", "ray", env=env, check=2)
    assert r.stderr.startswith("Error: --address: expected the Ray cluster's address")
    assert not (tmp_path / "out").exists()


def test_scene_lists(tmp_path):
    for name in ("x", "y", "z w"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "scene.json").write_text('{"scene_id": "s"}')
    (tmp_path / "empty").mkdir()
    assert [s.name for s in discover(tmp_path)] == ["x", "y", "z w"]
    assert [s.name for s in discover(tmp_path / "x")] == ["x"]
    lst = tmp_path / "list.txt"
    obj = json.dumps({"scene": "x/scene.json", "questions": "q.jsonl"})
    lst.write_text(f"# scenes\n\nx\ny/scene.json y/questions.jsonl\nz w/scene.json\tother.jsonl\n{obj}\n")
    got = discover(lst)
    assert [(s.scene_json, s.questions) for s in got] == [
        (tmp_path / "x" / "scene.json", tmp_path / "x" / "questions.jsonl"),
        (tmp_path / "y" / "scene.json", tmp_path / "y" / "questions.jsonl"),
        (tmp_path / "z w" / "scene.json", tmp_path / "other.jsonl"),
        (tmp_path / "x" / "scene.json", tmp_path / "q.jsonl")]
    lst.write_text("x\na b c\n")
    with pytest.raises(InputError, match=rf"{lst}:2: expected 'SCENE_JSON QUESTIONS_JSONL'"):
        discover(lst)
    with pytest.raises(InputError, match="no scene folders"):
        discover(tmp_path / "empty")
    bad = SceneSpec("b", tmp_path / "b.json", tmp_path / "q")
    for text, what in (("{", "not valid JSON"), ('{"scene_id": 3}', "scene_id: expected a string"),
                       ('{"scene_id": "../x"}', "cannot name files")):
        bad.scene_json.write_text(text)
        with pytest.raises(InputError, match=what):
            read_scene_id(bad)


def test_a_deeply_nested_or_non_utf8_scene_json_is_an_error_naming_it(tmp_path):
    scene = tmp_path / "s" / "x" / "scene.json"
    scene.parent.mkdir(parents=True)
    scene.write_text('{"scene_id": "x", "objects": ' + "[" * 100_000 + "]" * 100_000 + "}")
    r = cli("batch", tmp_path / "s", "-o", tmp_path / "out", check=1)  # issue: RecursionError
    assert "Traceback" not in r.stderr and "RecursionError" not in r.stdout + r.stderr
    [rec] = failed(tmp_path / "out")  # the scene fails at once, as bad input, naming its scene.json
    assert rec["kind"] == "input" and rec["stage"] == "scene"
    assert rec["error"].startswith(f"{scene}: JSON nested too deeply")
    scene.write_bytes(b'{"scene_id": "x\xff"}')
    with pytest.raises(InputError, match=rf"{re.escape(str(scene))}:1: column 16: not UTF-8 text"):
        read_scene_id(SceneSpec("x", scene, scene.parent / "questions.jsonl"))


def test_duplicate_scene_ids_stop_the_batch_before_anything_runs(tmp_path):
    for name in ("x", "y"):
        (tmp_path / "s" / name).mkdir(parents=True)
        (tmp_path / "s" / name / "scene.json").write_text('{"scene_id": "same"}')
    r = cli("batch", tmp_path / "s", "-o", tmp_path / "out", check=2)
    assert r.stderr.startswith("Error: ") and "'same' is also the id of" in r.stderr
    assert not (tmp_path / "out" / "manifest.jsonl").exists()


def test_completeness_rule(tmp_path):
    """The record's rule (vistest.videos.manifest.check_scene, what SceneJob.status and the batch
    read): same input paths and options, inputs with the same content (a touch is not a change),
    every output as written, the occlusion files unchanged."""
    from vistest.videos.manifest import check_scene, input_record, write_scene_record
    from vistest.atomic import file_record

    out = tmp_path / "out"
    (out / "16_frame").mkdir(parents=True)
    video = out / "16_frame" / "s.mp4"
    video.write_bytes(b"v" * 10)
    spec = SceneSpec("s", tmp_path / "scene.json", tmp_path / "q.jsonl")
    spec.scene_json.write_text('{"scene_id": "s"}')
    spec.questions.write_text("{}\n")
    given = {"scene": spec.scene_json, "questions": spec.questions}

    def write(**extra):
        inputs = {"scene": input_record(spec.scene_json), "questions": input_record(spec.questions), **extra}
        write_scene_record(out, "s", {"16_frame/s.mp4": file_record(video)}, inputs, {"o": 1}, "run",
                           [{"scene_id": "s", "path": "16_frame/s.mp4"}])

    def current(options=None, inputs=None):
        return check_scene(out, "s", inputs or given, options or {"o": 1}).current

    write()
    assert current() and not current({"o": 2})
    assert not current(inputs={**given, "questions": tmp_path / "q2.jsonl"})
    os.utime(spec.questions, ns=(1, 1))  # touched: content key decides
    assert current()
    spec.questions.write_text("[]\n")  # same size, other bytes
    assert not current()
    spec.questions.write_text("{}\n")
    video.write_bytes(b"v" * 9)
    assert not current()
    video.write_bytes(b"v" * 10)
    write()
    mesh = tmp_path / "mesh.ply"  # what occlusion read: one more input
    mesh.write_bytes(b"m" * 10)
    write(occlusion=files_record(tmp_path, [mesh]))
    assert current()
    os.utime(mesh, ns=(1, 1))
    assert current()
    mesh.write_bytes(b"n" * 10)
    assert not current()
    mesh.unlink()
    assert not current()
    layout.scene_record_path(out, "s").unlink()
    assert not current()


def test_leftovers_of_a_scene_are_its_own(tmp_path):
    from vistest.atomic import temp_path_for

    mine = [temp_path_for(tmp_path / "16_frame" / "a.mp4"), temp_path_for(tmp_path / "dummy_drop" / "a" / "k.mp4"),
            temp_path_for(tmp_path / "scenes" / "a" / "dummy_gt.jsonl")]
    spool = tmp_path / ".vistest-spool-a.abcd1234"
    spool.mkdir()
    (spool / "0.yuv").write_bytes(b"x")
    others = [temp_path_for(tmp_path / "16_frame" / "a.b.mp4"), temp_path_for(tmp_path / "dummy_drop" / "ab" / "k.mp4"),
              tmp_path / "16_frame" / "a.mp4", tmp_path / ".vistest-spool-a.b.abcd1234"]
    others[2].write_bytes(b"done")
    others[3].mkdir()
    assert claims.leftovers(tmp_path, "a") == sorted(mine + [spool])
    claims.remove_leftovers(tmp_path, "a")
    assert not any(p.exists() for p in mine + [spool]) and all(p.exists() for p in others)


def test_claims_count_attempts_and_refuse_a_live_holder(tmp_path):
    c1, lost = claims.take(tmp_path, "s", "run1")
    assert c1.attempt == 1 and lost is None
    # our own claim left behind (as if our process had been killed): the next attempt counts it
    c2, lost = claims.take(tmp_path, "s", "run1")
    assert c2.attempt == 2 and lost == c1
    c3, _ = claims.take(tmp_path, "s", "run2")  # another batch run starts counting again
    assert c3.attempt == 1
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        claims.write_claim(tmp_path, "s", claims.Claim("run2", 1, c3.host, proc.pid, 0, "videos"))
        with pytest.raises(InputError, match=f"being written by pid {proc.pid}"):
            claims.take(tmp_path, "s", "run2")
    finally:
        proc.kill()
        proc.wait()
    assert claims.take(tmp_path, "s", "run2")[0].attempt == 2  # dead now: a lost attempt
    claims.release(tmp_path, "s")
    assert claims.read_claim(tmp_path, "s") is None


def test_a_bug_in_a_task_is_recorded_with_its_traceback_not_raised(scenes, tmp_path, monkeypatch):
    import vistest.job

    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")  # run_task sets it for its process: restored after

    def broken(*a, **k):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(vistest.job, "run_scene", broken)
    spec = discover(scenes / "demo-a")[0]
    o = run_task(SceneTask(spec, "demo-a", tmp_path, RunConfig(), None, "run"))
    assert o.status == "failed" and o.failure.kind == ERROR and o.failure.stage == "video"
    assert o.failure.error == "ZeroDivisionError: a bug" and "Traceback" in o.failure.traceback
    assert not o.failure.retried and claims.read_claim(tmp_path, "demo-a") is None
    assert not layout.scene_record_path(tmp_path, "demo-a").exists()


def test_failed_jsonl_keeps_other_scenes_and_clears_fixed_ones(tmp_path):
    a, b, c = (str(tmp_path / n / "scene.json") for n in "abc")
    for p in (a, b, c):  # scenes that exist (the line of a scene.json that is gone is stale)
        Path(p).parent.mkdir()
        Path(p).write_text("{}")
    write_failed(tmp_path, {a: {"scene_json": a, "error": "x"}, b: {"scene_json": b, "error": "y"}})
    write_failed(tmp_path, {a: None, c: {"scene_json": c, "error": "z"}})
    assert [r["scene_json"] for r in failed(tmp_path)] == [b, c]
    assert write_failed(tmp_path, {b: None, c: None}) is None
    assert not layout.failed_path(tmp_path).exists()


# ---- issue #27: no traceback from batch children on kill -9 of the driver or Ctrl-C -----------
def _sigint_ignored(pid: int) -> bool | None:
    """Whether process ``pid`` ignores SIGINT (/proc/PID/status SigIgn); None when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigIgn:"):
                return bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)))
    except OSError:
        return None
    return None


def _stderr_to_the_end(proc: subprocess.Popen, timeout: float = 120.0) -> str:
    """Everything the batch and every process it started write on stderr (the pipe reaches its
    end when the last of them has exited)."""
    import selectors

    sel = selectors.DefaultSelector()
    sel.register(proc.stderr, selectors.EVENT_READ)
    chunks, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sel.select(timeout=1.0):
            data = os.read(proc.stderr.fileno(), 65536)
            if not data:
                return b"".join(chunks).decode(errors="replace")
            chunks.append(data)
    raise AssertionError("a process of the batch still holds stderr: " + b"".join(chunks).decode(errors="replace"))


def _batch(scenes: Path, out: Path) -> subprocess.Popen:
    def own_group_default_sigint():
        os.setpgrp()  # a process group of its own, as a terminal gives a foreground job
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    return subprocess.Popen([sys.executable, "-m", "vistest.cli", "batch", str(scenes), "-o", str(out), "-j", "2",
                             *FAST, "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=own_group_default_sigint)


@pytest.mark.slow  # a batch started and interrupted at once
def test_ctrl_c_while_the_fork_server_is_still_importing_prints_no_traceback(scenes, tmp_path):
    proc = _batch(scenes, tmp_path / "out")
    try:
        deadline, server = time.monotonic() + 120, None
        while server is None and time.monotonic() < deadline and proc.poll() is None:
            for pid in children(proc.pid):
                try:
                    if b"forkserver" in Path(f"/proc/{pid}/cmdline").read_bytes():
                        server = pid
                except OSError:
                    pass
            time.sleep(0.002)
        assert server is not None, "no fork server started"
        while _sigint_ignored(proc.pid):  # the driver starts the server with SIGINT ignored: wait until it is back
            time.sleep(0.001)
        assert _sigint_ignored(server) is True  # the server (still importing vistest) ignores Ctrl-C
        os.killpg(proc.pid, signal.SIGINT)  # issue: "KeyboardInterrupt" traceback from the server's imports
        err = _stderr_to_the_end(proc)
        proc.wait(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "interrupted" in err, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


@pytest.mark.slow  # a batch whose driver is killed mid-scene
def test_kill9_of_the_driver_alone_leaves_children_that_end_silently(scenes, tmp_path):
    out = tmp_path / "out"
    proc = _batch(scenes, out)
    try:
        sid, claim = wait_for_claim(out, ("visibility", "budget", "videos"), proc)
        os.kill(proc.pid, signal.SIGKILL)  # the driver alone: its workers are orphaned
        err = _stderr_to_the_end(proc)  # issue: an orphan printed a BrokenPipeError traceback
    finally:
        proc.kill()
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert leftovers(out) == [] and claims.read_claim(out, sid) is None  # the orphans cleaned up on their way out


# ---- issue #27: a corrected rerun clears stale failures --------------------------------------
@pytest.mark.slow  # three batches of two scenes
def test_a_list_corrected_after_a_missing_folder_ends_as_a_clean_run(scenes, tmp_path):
    typo, fixed = tmp_path / "typo.txt", tmp_path / "fixed.txt"
    typo.write_text(f"{scenes / 'demo-a'}\n{scenes / 'demo-bb'}\n")  # demo-bb: no such folder
    fixed.write_text(f"{scenes / 'demo-a'}\n{scenes / 'demo-b'}\n")
    out, clean = tmp_path / "out", tmp_path / "clean"
    cli("batch", typo, "-o", out, *FAST, "--quiet", check=1)
    assert [r["scene"] for r in failed(out)] == ["demo-bb"]
    cli("batch", fixed, "-o", out, *FAST, "--quiet", check=0)  # issue: kept demo-bb's line
    cli("batch", fixed, "-o", clean, *FAST, "--quiet", check=0)
    assert not layout.failed_path(out).exists()
    assert (out / "index.html").read_bytes() == (clean / "index.html").read_bytes()
    assert_same_outputs_of(out, clean)


def assert_same_outputs_of(out: Path, ref: Path) -> None:
    a, b = snapshot(out), snapshot(ref)
    assert sorted(a) == sorted(b) and [k for k in a if a[k] != b[k]] == []


def test_failed_jsonl_drops_stale_lines(tmp_path):
    here = tmp_path / "a" / "scene.json"
    here.parent.mkdir()
    here.write_text("{}")
    gone, moved = str(tmp_path / "gone" / "scene.json"), str(tmp_path / "old" / "scene.json")
    write_failed(tmp_path, {str(here): {"scene_json": str(here), "scene_id": "a", "error": "x"},
                            gone: {"scene_json": gone, "scene_id": None, "error": "missing"},
                            moved: {"scene_json": moved, "scene_id": "m", "error": "y"}})
    Path(moved).parent.mkdir()
    Path(moved).write_text("{}")
    # a batch of other scenes: the line of a scene.json that is gone goes, the others stay
    write_failed(tmp_path, {"/z/scene.json": None}, ["z"])
    assert [r["scene_json"] for r in failed(tmp_path)] == [str(here), moved]
    # scene "m" run from another path: its old line goes; "a" (not in the batch, still there) stays
    write_failed(tmp_path, {"/new/m/scene.json": None}, ["m"])
    assert [r["scene_json"] for r in failed(tmp_path)] == [str(here)]
