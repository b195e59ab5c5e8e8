"""Evaluator configurations (vistest.budget.evaluators): specs, requests, and what each takes.

The frames each default takes of a 300-frame, 30 frames/s video are the real clients' counts (issue #16,
measured with lmms-eval 0.7.3, qwen-vl-utils 0.0.14 and VLMEvalKit's source): the written video's version of
this is tests/test_variants.py (the demo's all_frame, read back from the file).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from vistest.budget.evaluators import (DEFAULT_EVALUATORS, EVALUATORS, EVERY_FRAME, Evaluator, evaluator_take,
                                       parse_evaluator, parse_evaluators)
from vistest.cli import main
from vistest.errors import InputError


@pytest.mark.parametrize("name,taken", [("every-frame", 300), ("lmms-eval.qwen2_5_vl", 20), ("lmms-eval.llava_vid", 10),
                                        ("lmms-eval.llava_onevision", 32), ("lmms-eval.internvl3", 32),
                                        ("qwen-vl-utils.fps2", 20), ("vlmevalkit.ReVSI", 128)])
def test_defaults_take_what_the_clients_take_of_a_full_video(name, taken):
    t = evaluator_take(EVALUATORS[name], 300, 30.0, "all")
    assert t.error is None and len(t.frames) == taken and t.every_frame == (taken == 300)


def test_requests_fixed_count_or_the_budget():
    qwen, revsi = EVALUATORS["lmms-eval.qwen2_5_vl"], EVALUATORS["vlmevalkit.ReVSI"]
    assert [qwen.request(b) for b in (16, 64, "all")] == [32, 32, 32]
    assert [revsi.request(b) for b in (16, 64, "all")] == [16, 64, 128]
    assert EVALUATORS[EVERY_FRAME].request("all") == "all"
    # qwen2.5-vl asked 32 of a 64-frame video at 1 frame/s: decodes 64, keeps np.unique(linspace(0, 63, 32))
    assert qwen.takes(64, 1.0, 64).tolist() == np.unique(np.linspace(0, 63, 32, dtype=int)).tolist()
    assert revsi.takes(300, 30.0, "all").tolist() == [int(i * 300 / 129) for i in range(1, 129)]


def test_specs():
    (e,) = parse_evaluator("lmms-eval.qwen2_5_vl@64")
    assert e.name == "lmms-eval.qwen2_5_vl@64" and e.frames == 64 and e.profile == "lmms-eval-qwen2.5-vl"
    (e,) = parse_evaluator("slow=qwen-vl-utils-fps:frames=8,sample_fps=1,min-frames=2")
    assert (e.profile, e.frames, e.option_dict) == ("qwen-vl-utils-fps", 8, {"sample_fps": 1, "min_frames": 2})
    assert len(e.takes(300, 30.0, "all")) == 8  # 10 s at 1 frame/s, capped at 8
    (e,) = parse_evaluator("vsi=vlmevalkit-uniform-tail:frames=budget,all_frames=32")
    assert (e.frames, e.all_frames, e.request(16), e.request("all")) == (None, 32, 16, 32)
    assert parse_evaluators([]) == DEFAULT_EVALUATORS == parse_evaluator("default")
    assert [e.name for e in parse_evaluators(["default", "every-frame", "lmms-eval.llava_vid@40"])] == \
        [e.name for e in DEFAULT_EVALUATORS] + ["lmms-eval.llava_vid@40"]


@pytest.mark.parametrize("spec,match", [
    ("nope", "unknown evaluator 'nope'"),
    ("lmms-eval.qwen2_5_vl@0", "positive frame count"),
    ("x=nosuchprofile", "unknown sampler profile"),
    ("x=internvl:frames=4,sample_fps=2", r"unknown option\(s\) sample_fps"),
    ("x=internvl:frames=-3", "frames: expected a positive integer"),
    ("../x=internvl:frames=3", "it names a folder"),
    ("x=internvl:frames", "expected KEY=VALUE"),
])
def test_bad_specs_name_what_was_expected(spec, match):
    with pytest.raises(InputError, match=match):
        parse_evaluator(spec)


def test_two_configurations_under_one_name_are_refused():
    with pytest.raises(InputError, match="two configurations are named 'a'"):
        parse_evaluators(["a=uniform:frames=4", "a=uniform:frames=8"])


def test_a_client_failing_on_the_video_is_an_error_not_frames():
    e = Evaluator("q", "qwen-vl-utils", frames=16)  # nframes mode: more frames than the video has
    t = evaluator_take(e, 10, 30.0, "all")
    assert t.frames is None and "nframes should be in [2, 10]" in t.error and "error" in t.to_json()
    with pytest.raises(InputError):
        e.takes(10, 30.0, "all")


def test_cli_rejects_a_bad_evaluator_with_exit_status_2(tmp_path):
    r = CliRunner().invoke(main, ["run", str(tmp_path / "s.json"), str(tmp_path / "q.jsonl"), "-o", str(tmp_path),
                                  "--evaluator", "x=internvl:frames=0"])
    assert r.exit_code == 2 and "Error: --evaluator 'x=internvl:frames=0'" in r.output, r.output


@pytest.mark.parametrize("frames,taken", [(16, 16), (32, 20), (64, 20)])
def test_lmms_eval_qwen2_5_vl_max_num_frames_on_a_full_video(frames, taken):
    """lmms-eval qwen2_5_vl with max_num_frames 16/32/64 on 300 frames at 30 frames/s: qwen-vl-utils decodes 20
    (2 frames/s), the model keeps np.unique(np.linspace(0, 19, max_num_frames, dtype=int)) of them: 16/20/20."""
    (e,) = parse_evaluator(f"lmms-eval.qwen2_5_vl@{frames}")
    decoded = np.rint(np.linspace(0, 299, 20)).astype(int)  # exact here: no .5 ties on this grid
    keep = np.unique(np.linspace(0, 19, frames, dtype=int))
    assert e.takes(300, 30.0, "all").tolist() == decoded[keep].tolist() and len(keep) == taken


@pytest.mark.slow  # a demo of its own and two runs
def test_an_evaluator_failing_on_the_video_gets_no_all_ground_truth(tmp_path):
    """vistest run: a configuration its client would fail with on the video (qwen-vl-utils asked more frames than
    a 24-frame video has) is a warning and has no all_frame.jsonl; a rerun where it fails removes the file an
    earlier run wrote under that name (it is not this video's ground truth); the manifest states the error."""
    from vistest.synth.demo import make_demo_scene
    from vistest.budget.config import TruthConfig
    from vistest.config import RunConfig
    from vistest.pipeline import run_scene
    from vistest.questions import load_questions
    from vistest.scene import Scene
    from vistest.videos.config import DummyConfig, EncodeConfig, EncoderSettings

    scene_json = make_demo_scene(tmp_path / "scene", num_frames=24, size=(160, 120), quiet=True)
    questions = load_questions(Path(__file__).resolve().parent.parent / "examples" / "demo-questions.jsonl",
                               scene=Scene.load(scene_json))
    out = tmp_path / "out"
    fast = EncoderSettings(preset="ultrafast", intra_preset="ultrafast")

    def run(spec):
        opts = RunConfig(TruthConfig(budgets=("all",)), DummyConfig(modes=()), EncodeConfig(fast),
                         evaluators=parse_evaluators([spec]))
        return run_scene(scene_json, questions, out, opts, progress=False)
    gt = out / "scenes" / "demo-seed0" / "evaluators" / "q" / "all_frame.jsonl"
    run("q=uniform:frames=8")
    assert len(json.loads(gt.read_text().splitlines()[0])["frame_indices"]) == 8
    res = run("q=qwen-vl-utils:frames=64")
    assert not gt.exists()
    assert any(w.startswith("evaluator q: no all ground truth") and "removed the earlier run's" in w
               for w in res.warnings), res.warnings
    (rec,) = [json.loads(ln) for ln in (out / "manifest.jsonl").read_text().splitlines()]
    assert "nframes should be in" in rec["evaluators"]["q"]["takes"]["all"]["error"]
