"""One freshness rule (vistest.freshness, docs/faults.md "Rules versions"): each rules version, bumped in
turn, makes stale every stored output that depends on it and none that does not.

``STALE_AFTER`` below is this test's own statement of what depends on what (written from what each
output is made of, not read from vistest.freshness.DEPENDS); each output's staleness is asked of the code
that decides it for real: Visibility.load for a table, check_scene for a run folder's record, the content
key for a video, the frame video's key, the demo's and the synth render's stamp checks, the export's check
of the records it reads, and the generate report's stamp. The fast test builds each output small (the
tiny demo, a table of it, a record, an 8-image frame export); the slow one reruns a real ``vistest run``
after each bump and counts what it wrote again.
"""
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import vistest  # noqa: F401  (sets PYOPENGL_PLATFORM before pyrender is imported)
from vistest import freshness
from vistest.errors import InputError

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT / "examples" / "demo-questions.jsonl"

# rules version -> the stored outputs a bump of it makes stale (every other output stays current)
STALE_AFTER = {
    "visibility": {"visibility table", "scene record", "export"},
    "ground_truth": {"scene record", "export"},
    "videos": {"scene record", "video key", "export"},
    "synth_layout": {"synth render"},
    "synth_render": {"synth render"},
    "demo": {"demo scene"},
    "frames_video": {"frames video"},
    "generate": {"generate report"},
}
OUTPUTS = {"visibility table", "scene record", "video key", "frames video", "demo scene", "synth render", "export",
           "generate report"}


def test_the_table_names_every_rules_version_and_every_output():
    assert set(STALE_AFTER) == set(freshness.VERSIONS)
    assert set().union(*STALE_AFTER.values()) == OUTPUTS == set(freshness.DEPENDS)


@pytest.fixture(scope="module")
def stored(demo_tiny, tmp_path_factory):
    """Each stored output, made small under the current versions: name -> a function that says whether
    it is still current (asked of the code that decides it)."""
    import cv2

    from vistest.config import RunConfig
    from vistest.datasets import common as c, framevideo
    from vistest.synth.demo import DEMO_STAMP, up_to_date
    from vistest.eval.exporters.rundir import check_records
    from vistest.generate import SceneInput, generate
    from vistest.pipeline import record_options
    from vistest.questions import load_questions
    from vistest.scene import Scene
    from vistest.synth import render
    from vistest.videos.config import EncoderSettings
    from vistest.videos.manifest import check_scene, input_record, write_scene_record
    from vistest.videos.recipes import content_key, video_recipe
    from vistest.visibility.table import StaleTable, Visibility, compute_visibility

    tmp = tmp_path_factory.mktemp("fresh")
    scene = Scene.load(demo_tiny)
    vis = compute_visibility(scene, occlusion="boxes", progress=False)
    vis.save(tmp / "vis.npz")

    def table_current():
        try:
            Visibility.load(tmp / "vis.npz")
        except StaleTable:
            return False
        return True

    # a run folder's record, as vistest run writes it (no files: the record's own checks only)
    questions = load_questions(QUESTIONS)
    run_dir = tmp / "run"
    inputs = {"scene": input_record(demo_tiny), "questions": input_record(QUESTIONS)}
    write_scene_record(run_dir, scene.scene_id, {}, inputs, record_options(RunConfig(), questions), "run")

    def record_current():
        options = record_options(RunConfig(), questions)
        return check_scene(run_dir, scene.scene_id, {"scene": demo_tiny, "questions": QUESTIONS}, options).current

    def export_current():
        try:
            check_records(run_dir, [scene.scene_id])
        except InputError:
            return False
        return True

    recipe = video_recipe("0" * 64, (160, 120), 30.0, EncoderSettings(), [0, 5, 9], mode="black", black=[5])
    key = content_key(recipe)

    # an import's frame video key over 3 real image files
    for n in range(3):
        cv2.imwrite(str(tmp / f"{n}.png"), np.full((8, 8, 3), 40 * n, np.uint8))
    color = c.ColorFrames(tuple((n, str(tmp / f"{n}.png")) for n in range(3)), "{n}.png")
    fkey = framevideo.content_key(color, (8, 8), 30.0, 2)

    # the demo's own stamp (demo_tiny: made by make_demo_scene), read back without its rules
    demo_dir = demo_tiny.parent
    demo_params = {k: v for k, v in json.loads((demo_dir / DEMO_STAMP).read_text()).items() if k != "rules"}

    # a synth stamp, written as render_scenario writes it, over a scene folder (the tiny demo's, copied)
    synth_dir = tmp / "synth"
    shutil.copytree(demo_dir, synth_dir, symlinks=True)
    synth_params = {"spec": {"scenario_id": "demo"}}
    freshness.write(synth_dir / render.STAMP, "synth render", synth_params)

    report = generate([SceneInput(scene, vis)], ("object_counting",), seed=0).report.to_dict()

    return {
        "visibility table": table_current,
        "scene record": record_current,
        "video key": lambda: content_key(recipe) == key,
        "frames video": lambda: framevideo.content_key(color, (8, 8), 30.0, 2) == fkey,
        "demo scene": lambda: up_to_date(demo_dir, demo_dir / DEMO_STAMP, demo_params),
        "synth render": lambda: render._up_to_date(synth_dir, synth_dir / render.STAMP, synth_params),
        "export": export_current,
        "generate report": lambda: not freshness.changes(report["rules_versions"], "generate report"),
    }


@pytest.mark.parametrize("name", sorted(STALE_AFTER))
def test_a_version_bump_makes_stale_exactly_what_depends_on_it(stored, name, monkeypatch):
    assert {o for o, current in stored.items() if not current()} == set()  # control: all current
    monkeypatch.setitem(freshness.VERSIONS, name, freshness.VERSIONS[name] + 1)
    stale = {o for o, current in stored.items() if not current()}
    assert stale == STALE_AFTER[name], name


def test_a_stale_table_is_refused_naming_the_rule_set(demo_tiny, tmp_path, monkeypatch):
    """``vistest budget --visibility`` (and every reader of a table) refuses a stale one with exit 2, naming
    the file, the field and the versions; a table written before tables kept a stamp is refused too."""
    from vistest.scene import Scene
    from vistest.visibility.table import Visibility, compute_visibility

    vis = compute_visibility(Scene.load(demo_tiny), occlusion="none", progress=False)
    assert vis.params["rules"] == {"visibility": freshness.VERSIONS["visibility"]}
    vis.save(tmp_path / "v.npz")
    v = freshness.VERSIONS["visibility"]
    monkeypatch.setitem(freshness.VERSIONS, "visibility", v + 1)
    with pytest.raises(InputError, match=rf"v\.npz: params: rules: .*visibility rules version {v} -> {v + 1}"):
        Visibility.load(tmp_path / "v.npz")
    assert Visibility.load(tmp_path / "v.npz", stale_ok=True).params["rules"] == {"visibility": v}
    monkeypatch.setitem(freshness.VERSIONS, "visibility", v)
    old = Visibility.load(tmp_path / "v.npz")  # an older vistest's table: params without "rules"
    import dataclasses

    bare = dataclasses.replace(old, params={k: x for k, x in old.params.items() if k != "rules"})
    with np.load(tmp_path / "v.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays["params"] = np.array(repr(sorted(bare.params.items())))
    np.savez_compressed(tmp_path / "old.npz", **arrays)
    with pytest.raises(InputError, match="no rules versions recorded"):
        Visibility.load(tmp_path / "old.npz")


def test_stamp_files_are_written_atomically_and_compared_whole(tmp_path, monkeypatch):
    p = tmp_path / "stamp.json"
    freshness.write(p, "synth render", {"spec": {"a": 1}})
    doc = json.loads(p.read_text())
    assert doc == {"spec": {"a": 1}, "rules": {"synth_layout": freshness.VERSIONS["synth_layout"],
                                               "synth_render": freshness.VERSIONS["synth_render"]}}
    assert freshness.current(p, "synth render", {"spec": {"a": 1}})
    assert not freshness.current(p, "synth render", {"spec": {"a": 2}})  # other params
    assert not freshness.current(tmp_path / "none.json", "synth render", {"spec": {"a": 1}})
    p.write_text("{not json")
    assert not freshness.current(p, "synth render", {"spec": {"a": 1}})


@pytest.mark.slow  # a real vistest run on the tiny demo, then a plain rerun after each bump (3 s alone, videos encoded)
def test_a_plain_rerun_after_a_bump_redoes_what_depends_on_it(demo_tiny, tmp_path, monkeypatch):
    """A real ``vistest run`` (the tiny demo, budget 16, black dummies); after each of the three run folder
    versions is bumped, the export refuses the folder, the scene is stale, and a plain ``run`` (no
    ``--if-stale``) writes the videos again only for ``videos``, computes the table again only for
    ``visibility``, and leaves the folder current and exportable; any other bump changes nothing."""
    from vistest.cli.videos import run as run_command, run_config
    from vistest.eval.exporters.rundir import check_records
    from vistest import pipeline
    from vistest.job import SceneJob

    # the table is computed in a spawned child (vistest.pipeline.isolated_visibility), which would not see a
    # version moved here; a real bump is a change of the code, which the child runs too
    monkeypatch.setattr(pipeline, "call_in_child", lambda f, *a: f(*a))
    out = tmp_path / "run"
    args = [str(demo_tiny), str(QUESTIONS), "-o", str(out), "--budgets", "16", "--dummy", "black", "--crf", "10",
            "--quiet"]
    config = run_config(run_command.make_context("run", list(args)).params)
    job = SceneJob(demo_tiny, QUESTIONS, config)
    first = job.run(out, progress=False)
    n_videos = len(first.report.written)
    assert n_videos > 0
    sid = first.plan.scene_id
    npz = out / "scenes" / sid / "visibility.npz"
    for name in sorted(STALE_AFTER):
        v = freshness.VERSIONS[name]
        monkeypatch.setitem(freshness.VERSIONS, name, v + 1)
        in_run = name in ("visibility", "ground_truth", "videos")
        assert job.status(out).current is not in_run, name
        if in_run:
            with pytest.raises(InputError, match=f"scene {sid}: rules changed"):
                check_records(out, [sid])
        table_time = npz.stat().st_mtime_ns
        res = job.run(out, progress=False)
        assert len(res.report.written) == (n_videos if name == "videos" else 0), name
        assert (npz.stat().st_mtime_ns != table_time) is (name == "visibility"), name
        assert job.status(out).current
        check_records(out, [sid])
        monkeypatch.setitem(freshness.VERSIONS, name, v)
        if in_run:  # back at the old version: the folder is stale again; rerun to go on from a current one
            assert not job.status(out).current
            job.run(out, progress=False)


@pytest.mark.slow  # a real vistest run on the tiny demo (3 s alone)
def test_same_output_ignores_only_the_stamps(demo_tiny, tmp_path):
    """bench/same_output.py on a real run folder and a copy: the same; the copy's table and record given other
    stamps (rules, cache key, write times): still the same; a ground-truth row or a video byte changed, a
    file removed: each named."""
    import importlib.util

    from vistest.visibility.table import Visibility

    spec = importlib.util.spec_from_file_location("same_output", ROOT / "bench" / "same_output.py")
    same = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(same)
    a, b = tmp_path / "a", tmp_path / "b"
    from click.testing import CliRunner

    from vistest.cli import main
    res = CliRunner().invoke(main, ["run", str(demo_tiny), str(QUESTIONS), "-o", str(a), "--budgets", "16",
                                    "--dummy", "black", "--crf", "10", "--quiet"])
    assert res.exit_code == 0, res.output
    shutil.copytree(a, b)
    assert same.compare(a, b) == []
    [npz] = b.glob("scenes/*/visibility.npz")
    vis = Visibility.load(npz)
    Visibility(**{**{f: getattr(vis, f) for f in ("scene_id", "projected", "visible", "bbox", "object_ids",
                                                  "frame_index", "valid", "source", "evidence")},
                  "params": {**vis.params, "rules": {"visibility": 0}, "vistest_key": "other"}}).save(npz)
    [rec] = b.glob(".vistest/records/*.json")
    doc = json.loads(rec.read_text())
    doc["options"]["rules"] = {"visibility": 0}
    doc["options_key"] = "0"
    doc["vistest_version"] = "9"
    for f in doc["files"].values():
        f["mtime_ns"] = 1
    rec.write_text(json.dumps(doc))
    assert npz.read_bytes() != (a / npz.relative_to(b)).read_bytes()
    assert same.compare(a, b) == []
    [gt] = b.glob("scenes/*/16_frame.jsonl")
    rows = gt.read_text().splitlines()
    gt.write_text("\n".join(rows[:-1] + [rows[-1].replace('"status"', '"statu"')]) + "\n")
    [video] = b.glob("16_frame/*.mp4")
    data = bytearray(video.read_bytes())
    data[-1] ^= 1
    video.write_bytes(bytes(data))
    (b / "index.html").unlink()
    diffs = same.compare(a, b)
    rel = lambda p: p.relative_to(b).as_posix()  # noqa: E731
    assert diffs == [f"index.html: only in {a}", f"{rel(video)}: other bytes ({len(data)} vs {len(data)} bytes)",
                     f"{rel(gt)}: other lines {len(rows)}"], diffs


def test_scene_record_text_is_the_json_of_the_indented_writer(tmp_path):
    """vistest.videos.manifest.record_text (a line per top-level key and per file and manifest line, json's C
    encoder) holds the same JSON as ``json.dumps(indent=1, sort_keys=True, default=str)``, the writer it
    replaced (issue #47), for a record with non-ASCII text, a Path and a tuple (``default=str``, lists),
    empty and filled ``files`` and ``manifest``; write_scene_record writes it and read_scene_record reads it."""
    from vistest.videos.manifest import read_scene_record, record_text, write_scene_record

    files = {"b/x.mp4": {"bytes": 3, "sha256": "ab", "key": "k"}, "a/y.jsonl": {"bytes": 0, "mtime_ns": 12}}
    manifest = [{"path": "b/x.mp4", "questions": ["q1", "q2"], "fps": 1.0, "nested": {"z": [1, {"y": None}]}}]
    for doc in ({"format": "f", "files": files, "manifest": manifest, "inputs": {"scene": {"path": tmp_path}},
                 "options": {"label": "chaise \u00e0 dossier", "budgets": (16, "all")}, "command": "run"},
                {"format": "f", "files": {}, "manifest": [], "scene_id": "s"}):
        want = json.loads(json.dumps(doc, indent=1, sort_keys=True, default=str))
        text = record_text(doc)
        assert json.loads(text) == want and text.endswith("}\n") and text.isascii()
        if doc["files"]:
            assert text.count("\n") == 1 + len(doc) + (len(files) + 1) + (len(manifest) + 1) + 1  # a line each
    write_scene_record(tmp_path, "s1", files, {"scene": {"path": "p"}}, {"o": 1}, "run", manifest)
    rec = read_scene_record(tmp_path, "s1")
    assert rec["files"] == files and rec["manifest"] == manifest and rec["command"] == "run"
