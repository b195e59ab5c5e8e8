"""The command line's contracts: bad input is `Error: ...` and exit 2, a bug keeps its traceback
(exit 1); shared options are spelled and defaulted the same in every command; old spellings are
hidden aliases that still parse."""
from __future__ import annotations

import json

import click
import numpy as np
import pytest
from click.testing import CliRunner

from conftest import IDENTITY, scene_doc
from vistest.budget.sampling import DEFAULT_PROFILE
from vistest.budget.config import DEFAULT_BUDGETS, DEFAULT_MIN_BUDGET_ROOM_ROUTE
from vistest.budget.windows import DEFAULT_INSTANT_TOLERANCE_S
from vistest.cli import main
from vistest.cli.options import parse_key_value
from vistest.errors import InputError
from vistest.visibility.table import DEFAULT_OCCLUSION, OCCLUSION_CHOICES


def _pose_at(z: float) -> list:
    p = np.eye(4)
    p[2, 3] = z
    return p.tolist()


@pytest.fixture
def scene_json(tmp_path):
    """A 3-frame scene with one box in front of the camera; no video."""
    path = tmp_path / "scene.json"
    path.write_text(json.dumps(scene_doc([((0, 0, 3), (1, 1, 1))], [IDENTITY, _pose_at(0.1), None])))
    return path


@pytest.fixture
def questions_jsonl(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"id": 1, "scene_id": "test", "question_type": "object_counting", "question": "?",
                                "category": "box", "ground_truth": 1}) + "\n")
    return path


# ---- the error contract ----------------------------------------------------------------------
def test_input_error_is_reported_once_with_exit_2(tmp_path, scene_json):
    doc = json.loads(scene_json.read_text())
    doc["objects"][0]["size"] = [1, 0, 1]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    r = CliRunner().invoke(main, ["visibility", str(bad), "-o", str(tmp_path / "v.npz")])
    assert r.exit_code == 2, r.output
    assert r.output.startswith(f"Error: {bad}: objects[0].size: "), r.output
    assert "Traceback" not in r.output and isinstance(r.exception, SystemExit)


def test_input_error_from_a_stage_names_file_and_field(tmp_path, scene_json, questions_jsonl):
    # a visibility table of another scene: the budget stage names the .npz and the field
    r = CliRunner().invoke(main, ["visibility", str(scene_json), "-o", str(tmp_path / "v.npz"), "--quiet"])
    assert r.exit_code == 0, r.output
    doc = json.loads(scene_json.read_text())
    doc["scene_id"] = "other"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    q = tmp_path / "q2.jsonl"
    q.write_text(questions_jsonl.read_text().replace('"test"', '"other"'))
    r = CliRunner().invoke(main, ["budget", str(other), str(q), "-o", str(tmp_path / "out"),
                                  "--visibility", str(tmp_path / "v.npz")])
    assert r.exit_code == 2, r.output
    assert f"Error: {tmp_path / 'v.npz'}: scene_id: expected 'other'" in r.output


def test_unreadable_visibility_file_is_bad_input(tmp_path, scene_json, questions_jsonl):
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not an npz")
    r = CliRunner().invoke(main, ["budget", str(scene_json), str(questions_jsonl), "-o", str(tmp_path / "out"),
                                  "--visibility", str(junk)])
    assert r.exit_code == 2 and f"Error: {junk}: cannot read visibility" in r.output, r.output


@pytest.mark.parametrize("exc", [KeyError("frame_index"), ZeroDivisionError("division by zero"),
                                 ValueError("a plain ValueError is a bug too")])
def test_a_bug_keeps_its_traceback(monkeypatch, tmp_path, scene_json, exc):
    import vistest.visibility.table as table

    def broken(*args, **kwargs):
        raise exc

    monkeypatch.setattr(table, "compute_visibility", broken)
    r = CliRunner().invoke(main, ["visibility", str(scene_json), "-o", str(tmp_path / "v.npz")])
    assert r.exit_code == 1
    assert r.exception is exc  # propagated as it was raised: the traceback is Python's own
    assert "Error:" not in r.output
    assert not (tmp_path / "v.npz").exists()


def test_a_bug_prints_a_traceback_from_the_real_entry_point(tmp_path, scene_json):
    import subprocess
    import sys

    code = ("import sys, vistest.visibility.table as t\n"
            "def broken(*a, **k): raise ZeroDivisionError('boom')\n"
            "t.compute_visibility = broken\n"
            "from vistest.cli import main\n"
            "sys.argv = ['vistest', 'visibility', sys.argv[1], '-o', sys.argv[2]]\n"
            "main()\n")
    res = subprocess.run([sys.executable, "-c", code, str(scene_json), str(tmp_path / "v.npz")],
                         capture_output=True, text=True)
    assert res.returncode == 1
    assert "Traceback (most recent call last)" in res.stderr and "ZeroDivisionError: boom" in res.stderr
    assert "Error:" not in res.stderr.replace("ZeroDivisionError:", "")


def test_option_parsing_errors_are_input_errors():
    with pytest.raises(InputError, match="--option: expected KEY=VALUE, got 'x'"):
        parse_key_value("x")
    assert parse_key_value("sample-fps=2.5") == ("sample_fps", 2.5)
    assert parse_key_value("name=abc") == ("name", "abc")
    r = CliRunner().invoke(main, ["frames", "-n", "4", "-N", "10", "-O", "x"])
    assert r.exit_code == 2 and "Error: --option: expected KEY=VALUE, got 'x'" in r.output
    r = CliRunner().invoke(main, ["frames", "-n", "4", "-N", "10", "-O", "bogus=1"])
    assert r.exit_code == 2 and "Error: profile 'uniform': unknown option(s) bogus" in r.output


def test_audit_exit_codes_keep_bad_input_apart(tmp_path, scene_json):
    # no depth frames and no mesh: nothing to audit against is bad input (2), not a failed audit (1)
    r = CliRunner().invoke(main, ["audit", str(scene_json), "--quiet"])
    assert r.exit_code == 2, r.output
    assert f"Error: {scene_json}: nothing to audit against" in r.output


# ---- shared options: one spelling, one default ---------------------------------------------------
def _params(name: str) -> dict[str, click.Parameter]:
    return {p.name: p for p in main.commands[name].params}


def test_shared_options_have_one_spelling_and_one_default():
    seen = {"output": 0, "budgets": 0, "profile": 0, "occlusion": 0, "seen_threshold": 0,
            "min_budget_room_route": 0, "instant_tolerance_s": 0, "quiet": 0, "visibility_npz": 0, "options": 0}
    for name in main.commands:
        for pname, p in _params(name).items():
            if pname not in seen or not isinstance(p, click.Option):
                continue
            seen[pname] += 1
            shown = [o for o in p.opts if o not in getattr(p, "hidden_aliases", ())]
            if pname == "output":
                assert shown == ["-o", "--output"], (name, p.opts)
            elif pname == "budgets":
                assert shown == ["--budgets"], (name, p.opts)
                assert p.default in (None, ",".join(str(b) for b in DEFAULT_BUDGETS)), name
            elif pname == "profile":
                assert set(p.opts) == {"--profile", "-p"}, (name, p.opts)
                assert p.default == DEFAULT_PROFILE, name
            elif pname == "occlusion":
                assert list(p.type.choices) == list(OCCLUSION_CHOICES) and p.default == DEFAULT_OCCLUSION, name
            elif pname == "seen_threshold":
                assert p.default is None, name  # the seen rule's own default (ReVSI's 5% for --seen-rule image)
                rule = next(q for q in main.commands[name].params if q.name == "seen_rule")
                assert rule.default == "image" and rule.is_eager, name
            elif pname == "min_budget_room_route":
                assert p.default == DEFAULT_MIN_BUDGET_ROOM_ROUTE, name
            elif pname == "instant_tolerance_s":
                assert p.opts == ["--instant-tolerance"] and p.default == DEFAULT_INSTANT_TOLERANCE_S, name
            elif pname == "visibility_npz":
                assert p.opts == ["--visibility"], name
            elif pname == "options":
                assert sorted(p.opts) == ["--option", "-O"] and p.multiple, name
    assert all(n >= 2 for n in seen.values()), seen  # each is shared by at least two commands


def test_run_dir_help_says_run_folder_or_scene_folder():
    for name in ("score", "baseline"):
        r = CliRunner().invoke(main, [name, "--help"])
        assert "output folder of 'vistest run'" in r.output and "RUN_DIR/scenes/ID" in r.output, name
    for name in ("export", "sheet", "index"):
        r = CliRunner().invoke(main, [name, "--help"])
        assert "output folder of 'vistest run'" in " ".join(r.output.split()), name


# ---- hidden aliases: accepted for one release, not shown -----------------------------------------
ALIASES = [  # (command, its arguments, old spelling, value, parameter it sets, parsed value)
    ("budget", ["s.json", "q.jsonl"], "--outdir", "OUT", "output", "OUT"),
    ("videos", ["s.json", "q.jsonl"], "--outdir", "OUT", "output", "OUT"),
    ("run", ["s.json", "q.jsonl"], "--outdir", "OUT", "output", "OUT"),
    ("sheet", ["RUN"], "--outdir", "OUT", "output", "OUT"),
    ("score", ["PRED"], "--outdir", "OUT", "output", "OUT"),
    ("timeline", ["s.json", "-o", "t.png"], "--budget", "16,all", "budgets", (16, "all")),
    ("timeline", ["s.json", "-o", "t.png"], "-n", "8", "budgets", (8,)),
]


@pytest.mark.parametrize("command, args, alias, value, param, parsed", ALIASES)
def test_hidden_alias_parses_and_is_not_shown(tmp_path, command, args, alias, value, param, parsed):
    pred = tmp_path / "p.jsonl"
    pred.write_text("")
    args = [str(pred) if a == "PRED" else a for a in args]
    if command == "score":
        args += ["-r", "RUN"]
    cmd = main.commands[command]
    ctx = cmd.make_context(command, args + [alias, value])
    assert ctx.params[param] == parsed
    new = [o for o in cmd.params if o.name == param][0].opts[0]
    assert cmd.make_context(command, args + [new, value]).params[param] == parsed  # the same as the new spelling
    help_text = CliRunner().invoke(main, [command, "--help"]).output
    assert f"{alias} " not in help_text and f"{alias}," not in help_text, help_text
    assert new in help_text


def test_missing_required_option_names_only_the_new_spelling(tmp_path):
    r = CliRunner().invoke(main, ["budget", "s.json", "q.jsonl"])
    assert r.exit_code == 2 and "Missing option '-o' / '--output'." in r.output, r.output


def test_vistest_runs_one_blas_thread_per_process_unless_told_otherwise():
    """Importing vistest first (as its CLI and every process it spawns do) loads numpy's OpenBLAS with one
    thread (its spinning threads slowed the generator's learned attacks ~3-10x on 2 cores: docs/generate.md);
    a value the user set is left as it is. Asked of OpenBLAS itself (threadpoolctl), in a fresh interpreter
    without the test suite's own setting (tests/blas_threads.py)."""
    import os
    import subprocess
    import sys

    code = ("import os, vistest, numpy\nfrom threadpoolctl import threadpool_info\n"
            "print([i['num_threads'] for i in threadpool_info() if i['internal_api'] == 'openblas'], "
            "os.environ['MKL_NUM_THREADS'])")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    env["MKL_NUM_THREADS"] = "3"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[1]", "3"], out
