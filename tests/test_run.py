"""`vistest run` / `vistest videos` from the command line, interrupted runs, and `make variants`.

The session's smallest demo (160x120, 40 frames: ``demo_tiny`` in conftest.py) keeps this
module quick. An interrupted run (SIGINT or SIGTERM sent to the process while it writes) must
leave no temporary file, no new output and no manifest line, and a rerun must then produce
exactly the bytes an uninterrupted run produces. (Faults beyond interrupts, kill -9 included:
tests/test_faults.py.)
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import vistest  # noqa: F401  (sets PYOPENGL_PLATFORM before pyrender is imported)
from vistest import Visibility
from conftest import scene_copy
from vistest.synth.demo import demo_batch


ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
FAST = ["--budgets", "16,32,all", "--crf", "10"]


def cli(*args, check=True):
    r = subprocess.run([sys.executable, "-m", "vistest.cli", *map(str, args)], capture_output=True, text=True)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def invoke(*args, check=True) -> subprocess.CompletedProcess:
    """:func:`cli` in this process (click's runner: the same command, exit status and streams, without a new
    interpreter), where the test needs no process of its own (issue 47)."""
    from click.testing import CliRunner

    from vistest.cli import main

    res = CliRunner().invoke(main, [str(a) for a in args])
    r = subprocess.CompletedProcess(args, res.exit_code, res.stdout, res.stderr)
    if check:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def scene_json(demo_tiny):
    return demo_tiny


@pytest.fixture(scope="module")
def clean(scene_json, tmp_path_factory):
    """An uninterrupted run (the reference for the interrupted ones)."""
    out = tmp_path_factory.mktemp("clean")
    r = invoke("run", scene_json, EXAMPLES / "demo-questions.jsonl", "-o", out, *FAST)
    return out, r


def snapshot(out):
    """{relative path: bytes} of every output except the visibility cache (numpy's zip stamps times)
    and the run folder's state (``.vistest/``: scene records hold file times; locks)."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.suffix != ".npz" and p.name != ".manifest.lock"
            and p.relative_to(out).parts[0] != ".vistest"}


def test_run_writes_the_whole_pipeline(clean, scene_json):
    out, r = clean
    sid = "demo-seed0"
    for rel in ("16_frame", "32_frame", "all_frame"):
        assert (out / rel / f"{sid}.mp4").is_file()
    for f in ("visibility.npz", "16_frame.jsonl", "32_frame.jsonl", "all_frame.jsonl", "dummy_gt.jsonl"):
        assert (out / "scenes" / sid / f).is_file()
    for mode in ("drop", "black", "mask"):  # budget dummies (the default)
        assert list((out / f"dummy_{mode}" / "16_frame" / sid).glob("*.mp4"))
        assert not (out / f"dummy_{mode}" / sid).exists()  # no full-length dummy unless asked for
    rows = [json.loads(ln) for ln in (out / "manifest.jsonl").read_text().splitlines()]
    assert {r["path"] for r in rows} == {str(p.relative_to(out)) for p in out.rglob("*.mp4")}
    assert "videos written" in r.stderr and "manifest:" in r.stderr and "internvl" in r.stderr
    page = (out / "index.html").read_text()  # the run folder's page links every video
    assert all(f'href="{p.relative_to(out).as_posix()}"' in page for p in out.rglob("*.mp4"))
    again = invoke("run", scene_json, EXAMPLES / "demo-questions.jsonl", "-o", out, *FAST)
    assert "0 videos written" in again.stderr and "0 decode pass" in again.stderr


def test_videos_command_with_given_visibility(clean, scene_json, tmp_path):
    out, _ = clean
    vis = out / "scenes" / "demo-seed0" / "visibility.npz"
    invoke("videos", scene_json, EXAMPLES / "demo-questions.jsonl", "-o", tmp_path, "--visibility", vis,
        "--budgets", "16", "--dummy", "drop,allblack", "--preset", "ultrafast", "--quiet")
    rows = [json.loads(ln) for ln in (tmp_path / "manifest.jsonl").read_text().splitlines()]
    assert {r["mode"] for r in rows} == {None, "drop", "allblack"}
    assert not (tmp_path / "scenes" / "demo-seed0" / "16_frame.jsonl").exists()  # budget GT is `run`'s
    assert (tmp_path / "scenes" / "demo-seed0" / "dummy_gt.jsonl").is_file()


def test_cli_errors_name_file_and_field(scene_json, tmp_path):
    r = invoke("run", scene_json, EXAMPLES / "demo-questions.jsonl", "-o", tmp_path, "--dummy", "drop,blurry",
            check=False)
    assert r.returncode != 0 and "--dummy" in r.stderr and "blurry" in r.stderr
    doc = json.loads(Path(scene_json).read_text())
    doc["image_size"] = [320, 240]
    bad = scene_copy(scene_json, tmp_path / "scene").parent / "bad-size.json"  # its relative paths resolve
    bad.write_text(json.dumps(doc))
    r = invoke("run", bad, EXAMPLES / "demo-questions.jsonl", "-o", tmp_path, check=False)
    assert r.returncode != 0 and "bad-size.json says image_size [320, 240]" in r.stderr
    # its own process: --ffmpeg sets $VISTEST_FFMPEG for the whole process (vistest/job.py)
    r = cli("run", bad, EXAMPLES / "demo-questions.jsonl", "-o", tmp_path, "--ffmpeg", tmp_path / "no-ffmpeg",
            check=False)
    assert r.returncode != 0 and "no-ffmpeg" in r.stderr


# ---- the mesh and depth images occlusion reads are inputs --------------------------------------------
@pytest.mark.slow  # three runs of the demo (the inputs' keys: test_depth_images_are_keyed_by_content)
def test_a_changed_mesh_reruns_the_scene_and_recomputes_its_visibility(scene_json, tmp_path):
    """The demo's mesh (``auto`` occlusion renders it) is an input like scene.json: after it
    changes, the scene is no longer current (named), a rerun computes the table again (equal
    to one computed from the new mesh, unlike the stale one), and its record lists the mesh."""
    import trimesh

    from vistest.budget.config import TruthConfig
    from vistest.config import RunConfig
    from vistest.job import SceneJob
    from vistest.scene import Scene
    from vistest.videos.config import DummyConfig, EncodeConfig, EncoderSettings
    from vistest.visibility.table import compute_visibility

    scene = scene_copy(scene_json, tmp_path / "scene")  # files copied (mesh.ply), depth/ linked
    out, questions = tmp_path / "out", EXAMPLES / "demo-questions.jsonl"
    args = ["--budgets", "16", "--dummy", "drop", "--preset", "ultrafast", "--quiet"]
    job = SceneJob(scene, questions, RunConfig(TruthConfig(budgets=(16,)), DummyConfig(modes=("drop",)),
                                               EncodeConfig(EncoderSettings(preset="ultrafast"))))
    cli("run", scene, questions, "-o", out, *args)
    assert job.status(out).current
    before = Visibility.load(out / "scenes" / "demo-seed0" / "visibility.npz")
    mesh = Scene.load(scene).path(Scene.load(scene).mesh)
    lifted = trimesh.load(mesh, process=False)
    lifted.vertices[:, 2] += 50.0  # walls and furniture out of every view: nothing hides the boxes
    lifted.export(mesh)
    st = job.status(out)
    assert not st.current and any(r.startswith("input occlusion") and "differs" in r for r in st.reasons), st.reasons
    r = cli("run", scene, questions, "-o", out, *args, "--if-stale")
    assert "up to date" not in r.stderr
    after = Visibility.load(out / "scenes" / "demo-seed0" / "visibility.npz")
    fresh = compute_visibility(Scene.load(scene))
    assert np.array_equal(after.visible, fresh.visible, equal_nan=True)
    assert not np.array_equal(after.visible, before.visible, equal_nan=True)
    assert after.params["vistest_key"] != before.params["vistest_key"]
    record = json.loads((out / ".vistest" / "records" / "demo-seed0.json").read_text())
    assert "mesh.ply" in record["inputs"]["occlusion"]["files"]
    assert job.status(out).current
    assert "up to date" in cli("run", scene, questions, "-o", out, *args, "--if-stale").stderr


def test_depth_images_are_keyed_by_content(scene_json, tmp_path, monkeypatch):
    """``depth`` occlusion's key covers every depth image by content, under the names scene.json
    gives them (a copy whose depth/ is a link keys alike): a touched file keeps it (and a rerun
    with the earlier record hashes nothing), one changed pixel or a missing file changes it;
    ``boxes`` reads no file."""
    import cv2

    from vistest import atomic
    from vistest.pipeline import occlusion_evidence, visibility_key
    from vistest.scene import Scene

    root = tmp_path / "scene"
    shutil.copytree(Path(scene_json).parent, root)
    scene = Scene.load(root / "scene.json")
    key = visibility_key(root / "scene.json", scene, "depth")
    rec = occlusion_evidence(scene, "depth")
    depth = sorted((root / "depth").iterdir())
    assert rec["files"] == [f"depth/{p.name}" for p in depth] and len(depth) == scene.num_frames
    assert rec["sha256"] in key and "evidence" not in visibility_key(root / "scene.json", scene, "boxes")
    linked = scene_copy(scene_json, tmp_path / "linked")  # depth/ a link to the shared folder: the same key
    assert visibility_key(linked, Scene.load(linked), "depth") == key
    assert occlusion_evidence(scene, "boxes") is None
    os.utime(depth[7], ns=(1, 1))  # touched: same content
    assert atomic.check_files(rec) is None
    assert visibility_key(root / "scene.json", scene, "depth") == key
    hashed = []
    real = atomic.sha256_file
    monkeypatch.setattr(atomic, "sha256_file", lambda p, *a: hashed.append(p) or real(p, *a))
    again = occlusion_evidence(scene, "depth", known=occlusion_evidence(scene, "depth"))
    assert again["sha256"] == rec["sha256"] and len(hashed) == len(depth)  # the second record hashed nothing
    img = cv2.imread(str(depth[7]), cv2.IMREAD_UNCHANGED)
    img[0, 0] += 1
    cv2.imwrite(str(depth[7]), img)
    assert "differs" in atomic.check_files(rec)
    assert visibility_key(root / "scene.json", scene, "depth") != key
    depth[7].unlink()
    assert atomic.check_files(rec) == f"{depth[7]}: missing"


def leftovers(out):
    return [p for p in out.rglob("*") if ".tmp" in p.name or ".vistest-spool" in p.name]


def videos_in_progress(out):
    """Videos being encoded or spooled (not the manifest's temp file, written at the very end)."""
    return [p for p in out.rglob("*") if (".tmp" in p.name and p.suffix == ".mp4") or ".vistest-spool" in p.name]


@pytest.mark.slow  # two runs interrupted, each followed by a rerun
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_run_leaves_nothing_trusted_and_rerun_is_identical(clean, scene_json, tmp_path, sig):
    ref, _ = clean
    out = tmp_path / "out"
    shutil.copytree(ref / "scenes", out / "scenes")  # visibility cached: the run goes straight to the videos
    args = [sys.executable, "-m", "vistest.cli", "run", str(scene_json), str(EXAMPLES / "demo-questions.jsonl"),
            "-o", str(out), *FAST, "--quiet"]
    # A shell without job control starts background commands with SIGINT ignored, and that is
    # inherited (CI may run us so): give the child the default handler, as a terminal would.
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if len([p for p in videos_in_progress(out) if p.suffix == ".mp4"]) >= 3:  # videos written aside
            break
        time.sleep(0.002)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0, err
    assert leftovers(out) == []
    manifest = out / "manifest.jsonl"
    assert not manifest.exists() or "demo-seed0" not in manifest.read_text()
    assert list(out.rglob("*.mp4")) == []  # outputs are renamed into place only once all are written
    r = cli("run", scene_json, EXAMPLES / "demo-questions.jsonl", "-o", out, *FAST)
    assert "0 up to date" in r.stderr
    assert snapshot(out) == snapshot(ref)
    a = Visibility.load(out / "scenes" / "demo-seed0" / "visibility.npz")
    b = Visibility.load(ref / "scenes" / "demo-seed0" / "visibility.npz")
    assert np.array_equal(a.visible, b.visible, equal_nan=True)


@pytest.mark.slow  # make over two scenes, then a rerun
def test_make_variants_builds_each_scene_once(scene_json, tmp_path):
    if not (ROOT / ".venv" / "bin" / "vistest").exists() or not shutil.which("make"):
        pytest.skip("needs make and the project's .venv")
    scenes = tmp_path / "scenes"
    demo_batch(scene_json, EXAMPLES / "demo-questions.jsonl", scenes, ["demo-a", "demo-b"])
    out = tmp_path / "out"
    opts = 'VARIANT_OPTS=--budgets 16 --dummy drop --preset ultrafast'

    def make():
        r = subprocess.run(["make", "-C", str(ROOT), "-o", ".venv/.installed", "-j2", "variants", f"SCENES={scenes}",
                            f"OUT={out}", opts], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        current = {ln.split(":")[0] for ln in r.stderr.splitlines() if ": up to date in " in ln}
        return sorted({"demo-a", "demo-b"} - current)  # the scenes that ran

    assert make() == ["demo-a", "demo-b"]
    rows = [json.loads(ln) for ln in (out / "manifest.jsonl").read_text().splitlines()]
    assert {r["scene_id"] for r in rows} == {"demo-a", "demo-b"}
    assert make() == []  # nothing changed
    (out / "16_frame" / "demo-b.mp4").unlink()
    assert make() == ["demo-b"]  # b's output is missing: b only
    os.utime(scenes / "demo-a" / "questions.jsonl")
    assert make() == []  # touched, same bytes: the record's content keys decide
    q = scenes / "demo-a" / "questions.jsonl"
    q.write_text("\n".join(q.read_text().splitlines()[:-1]) + "\n")
    assert make() == ["demo-a"]  # a's input changed: a only
    assert make() == []


def test_score_reads_the_whole_run_folder(clean):
    """`vistest score -r OUT` takes every scene of a `vistest run` folder (here: one)."""
    from vistest.eval.records import load_run_dir

    out, _ = clean
    whole, one = load_run_dir(out), load_run_dir(out / "scenes" / "demo-seed0")
    assert sorted(t.key for t in whole.truths) == sorted(t.key for t in one.truths)
    assert any(t.variant.startswith("dummy") for t in whole.truths)


def test_docs_name_every_run_setting():
    """docs/videos.md's settings table names every field of RunConfig and its stage configs (TruthConfig's:
    docs/truth.md), and every field has a doc (with its unit) in the code, as vistest.generate.rules'
    parameters do."""
    import dataclasses

    from vistest.budget.config import TruthConfig
    from vistest.config import RunConfig
    from vistest.videos.config import DummyConfig, EncodeConfig, ResourceConfig

    text = (ROOT / "docs" / "videos.md").read_text()
    table = text[text.index("## Settings: one `RunConfig`"):text.index("## Batch: `make variants`")]
    truth = (ROOT / "docs" / "truth.md").read_text()  # the budget stage's own page lists its settings
    truth = truth[truth.index("## One config"):truth.index("## The rules")]
    for cls in (RunConfig, TruthConfig, DummyConfig, EncodeConfig, ResourceConfig):
        assert f"`{cls.__name__}`" in table
        for f in dataclasses.fields(cls):
            assert f"`{f.name}`" in (truth if cls is TruthConfig else table), (cls.__name__, f.name)
            assert len(f.metadata.get("doc", "")) > 10, (cls.__name__, f.name)


@pytest.mark.slow  # a run, make variants three times, a rerun and two batches
def test_a_rules_version_bump_makes_a_current_run_stale_everywhere(scene_json, tmp_path, monkeypatch):
    """A change to the ground-truth rules (vistest.freshness.VERSIONS["ground_truth"] bumped, as a release
    that changes budget/truth.py does) makes a scene that was current stale, with the reason printed,
    for each entry point: ``vistest run --if-stale``, ``vistest batch`` and ``make variants`` (its
    own ``vistest`` bumped through the Makefile's VENV). Control: at the recorded version each says
    up to date. Three copies of one current run folder, one per entry point."""
    from click.testing import CliRunner

    from vistest.batch.local import LocalEngine
    from vistest.batch.run import DONE, run_batch, summary_table
    from vistest.batch.specs import discover
    from vistest.batch.task import run_task
    from vistest import freshness
    from vistest.cli import main
    from vistest.cli.videos import run as run_command, run_config
    from vistest.job import SceneJob

    scenes = tmp_path / "scenes"
    demo_batch(scene_json, EXAMPLES / "demo-questions.jsonl", scenes, ["demo-a"])
    [spec] = discover(scenes)
    opts = ["--budgets", "16", "--dummy", "drop", "--preset", "ultrafast"]
    args = [str(spec.scene_json), str(spec.questions), "-o"]
    config = run_config(run_command.make_context("run", [*args, "x", *opts]).params)
    v1 = freshness.VERSIONS["ground_truth"]
    cli("run", *args, tmp_path / "out", *opts, "--quiet")
    for name in ("run", "batch", "make"):
        shutil.copytree(tmp_path / "out", tmp_path / name, symlinks=True)  # copy2: times kept, records hold
        assert SceneJob(spec.scene_json, spec.questions, config).status(tmp_path / name).current
    record = json.loads((tmp_path / "out" / ".vistest" / "records" / "demo-a.json").read_text())
    assert record["options"]["rules"] == {"ground_truth": v1, "visibility": freshness.VERSIONS["visibility"],
                                          "videos": freshness.VERSIONS["videos"]}
    why = f"ground truth rules version {v1} -> {v1 + 1}"

    # make variants, its vistest a wrapper that sets the version (control at v1, then bumped)
    if shutil.which("make"):
        venv = tmp_path / "venv"
        (venv / "bin").mkdir(parents=True)
        (venv / ".installed").touch()
        wrapper = venv / "bin" / "vistest"
        wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} -c \"import sys, vistest.freshness as f; "
                           f"f.VERSIONS['ground_truth'] = int(sys.argv.pop(1)); from vistest.cli import main; main()\" "
                           f"\"$RULES\" \"$@\"\n")
        wrapper.chmod(0o755)

        def make(version):
            r = subprocess.run(["make", "-C", str(ROOT), f"VENV={venv}", "-o", f"{venv}/.installed", "variants",
                                f"SCENES={scenes}", f"OUT={tmp_path / 'make'}", "VARIANT_OPTS=" + " ".join(opts)],
                               capture_output=True, text=True, env={**os.environ, "RULES": str(version)})
            assert r.returncode == 0, r.stdout + r.stderr
            return r.stderr

        assert "demo-a: up to date in" in make(v1)
        err = make(v1 + 1)
        assert "demo-a: stale in" in err and why in err and "up to date" not in err, err
        assert "demo-a: up to date in" in make(v1 + 1)  # rerun under the new rules: current again

    monkeypatch.setitem(freshness.VERSIONS, "ground_truth", v1 + 1)
    st = SceneJob(spec.scene_json, spec.questions, config).status(tmp_path / "run")
    assert st.complete and not st.current and any(why in r for r in st.reasons), st.reasons
    assert not any("options differ" in r for r in st.reasons)  # the rules, not the options, changed
    # vistest run --if-stale
    res = CliRunner().invoke(main, ["run", *args, str(tmp_path / "run"), *opts, "--if-stale", "--quiet"])
    assert res.exit_code == 0, res.output
    assert "demo-a: stale in" in res.output and why in res.output and "up to date" not in res.output
    assert SceneJob(spec.scene_json, spec.questions, config).status(tmp_path / "run").current

    # vistest batch (its engine runs the task in this process, under the bumped version)
    class InProcess(LocalEngine):
        def run(self, tasks, done):
            for t in tasks:
                done(run_task(t))

    report = run_batch([spec], tmp_path / "batch", config, InProcess(1, 0), progress=False)
    [scene] = report.scenes
    assert scene.status == DONE and any(why in n for n in scene.notes), scene
    assert why in summary_table(report)
    assert run_batch([spec], tmp_path / "batch", config, InProcess(1, 0), progress=False).count("up to date") == 1


def test_visibility_is_computed_in_a_child_unless_this_process_holds_the_engine(monkeypatch):
    """vistest.pipeline.isolated_visibility: a process without the Numba engine (vistest run's, a batch
    worker's) computes the table in a child; one that holds it (this test process) computes it here, the
    same table as compute_visibility's, keyed."""
    from vistest import pipeline
    from vistest.synthetic import random_box_scene
    from vistest.visibility.table import compute_visibility

    scene = random_box_scene(seed=3, num_frames=6, num_boxes=3, image_size=(64, 48))
    want = compute_visibility(scene, occlusion="boxes")  # loads the engine in this process
    assert pipeline.engine_loaded()
    children = []
    monkeypatch.setattr(pipeline, "call_in_child", lambda fn, *a: children.append(fn) or fn(*a))
    got = pipeline.isolated_visibility(scene, "k1", "boxes", progress=False)
    assert children == [] and got.params["vistest_key"] == "k1"
    for name in ("visible", "evidence", "projected", "bbox"):
        assert np.array_equal(getattr(got, name), getattr(want, name), equal_nan=True), name
    monkeypatch.setattr(pipeline, "engine_loaded", lambda: False)
    assert pipeline.isolated_visibility(scene, "k2", "boxes", progress=False).params["vistest_key"] == "k2"
    assert len(children) == 1
    r = subprocess.run([sys.executable, "-c", "import sys, vistest.cli, vistest.pipeline, vistest.job; "
                        "print('vistest.visibility.raster' in sys.modules)"], capture_output=True, text=True)
    assert r.stdout.strip() == "False", r.stderr  # vistest run's process: the child is used


CHILD_SCRIPT = """
import pickle, sys
from vistest.synthetic import random_box_scene
from vistest.visibility.table import child_visibility
scene = random_box_scene(seed=3, num_frames=6, num_boxes=3, image_size=(64, 48))
vis = child_visibility(scene, "boxes", False, "k1")
without = "scipy.linalg" not in sys.modules
import scipy.linalg  # importable again once Numba is set up
sys.stdout.buffer.write(pickle.dumps((without, "numba.np.arraymath" in sys.modules, vis)))
"""


def test_the_visibility_child_loads_no_scipy_and_computes_the_same_table():
    """vistest.visibility.table.child_visibility (what vistest run's visibility child runs) sets Numba up
    without its BLAS probe: in a fresh process no ``scipy.linalg`` is imported by the time the table is
    computed (Numba's arraymath would import it; issue #47: ~0.2 s of CPU per run), and the table is the
    one compute_visibility gives with Numba set up as usual (this test process), keyed."""
    import pickle

    from vistest.synthetic import random_box_scene
    from vistest.visibility.table import compute_visibility

    r = subprocess.run([sys.executable, "-c", CHILD_SCRIPT], capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    without, set_up, got = pickle.loads(r.stdout)
    assert without and set_up
    want = compute_visibility(random_box_scene(seed=3, num_frames=6, num_boxes=3, image_size=(64, 48)),
                              occlusion="boxes")
    assert got.params["vistest_key"] == "k1"
    for name in ("visible", "evidence", "projected", "bbox"):
        assert np.array_equal(getattr(got, name), getattr(want, name), equal_nan=True), name
