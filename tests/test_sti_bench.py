"""Time windows (question format, budget rows), the STI-Bench / ReSTI importers, STI-Bench's client
configuration and the window report (issue #25).

The parquet and JSONL files are written here from the documented columns (MINT-SJTU/STI-Bench
qa.parquet as its opensource_test.py reads it; pengzhansun/ReSTI docs/data_format.md). Window
membership is checked against a brute-force computation (frame i at i / fps, closed window), not
against the module's ceil/floor arithmetic.
"""
from __future__ import annotations

import json
import math
import random
import subprocess
from fractions import Fraction

import numpy as np
import pytest
from click.testing import CliRunner

from vistest.budget.evaluators import DEFAULT_EVALUATORS, EVALUATORS, STI_BENCH
from vistest.budget.sampling import select_frames
from vistest.cli import main
from vistest.budget.windows import TIME_EPS_S, frames_in_window, nearest_frame
from vistest.datasets.sti_bench import COLUMNS, QuestionSetError, import_question_set
from vistest.questions import QUESTION_TYPES, STI_TASKS, QuestionError, parse_questions
from vistest.scene import Scene
from conftest import cli, read_jsonl

LETTERS = "ABCDE"
STI_COLUMNS = ("Source", "Task", "Video", "ID", "Question", "Candidates", "Answer", "Answer Detail", "time_start",
               "time_end", "scene")


# ---------------------------------------------------------------------------------------
# the question format
# ---------------------------------------------------------------------------------------
def _q(**kw):
    base = {"id": "q", "scene_id": "s", "question_type": "sti_speed_acceleration", "question": "speed?",
            "options": [f"{k}. {i}" for i, k in enumerate(LETTERS)], "ground_truth": "A",
            "time_start": 1.0, "time_end": 2.0}
    base.update(kw)
    return json.dumps({k: v for k, v in base.items() if v is not None})


@pytest.mark.parametrize("kw, msg", [
    (dict(time_end=None), r"qs.jsonl:1: time_end: a window needs both"),
    (dict(time_start=None), r"qs.jsonl:1: time_start: a window needs both"),
    (dict(time_start=3.0), r"qs.jsonl:1: time_end: expected time_start <= time_end"),
    (dict(time_start=-1.0), r"qs.jsonl:1: time_start: expected seconds"),
    (dict(time_end="2"), r"qs.jsonl:1: time_end: expected seconds"),
    (dict(time=True), r"qs.jsonl:1: time: expected seconds"),
    (dict(time=2.5), r"qs.jsonl:1: time: expected the instant inside the window"),
    (dict(time_start=None, time_end=None), r"qs.jsonl:1: time_start: 'sti_speed_acceleration' needs a window"),
])
def test_bad_time_fields_name_file_line_field(kw, msg):
    with pytest.raises(QuestionError, match=msg):
        parse_questions([_q(**kw)], source="qs.jsonl")


def test_windows_and_instants_are_read_on_any_type():
    (q,) = parse_questions([_q(time=1.5)])
    assert q.window == (1.0, 2.0) and q.instant == 1.5
    (v,) = parse_questions([json.dumps({"id": 1, "scene_id": "s", "question_type": "room_size_estimation",
                                        "question": "?", "ground_truth": 3, "time": 0})])
    assert v.window is None and v.instant == 0.0
    assert {QUESTION_TYPES[t].task for t, _ in STI_TASKS.values()} == set(STI_TASKS)


def _brute_window(frames, ts, te, fps):
    return sorted({f for f in frames if ts - TIME_EPS_S <= f / fps <= te + TIME_EPS_S})


def test_window_membership_and_nearest_frame_against_brute_force():
    rng = random.Random(0)
    for _ in range(2000):
        fps = rng.choice([30.0, 29.97, 24.0, 10.0, 15.0, 59.94, 7.5])
        n = rng.randint(1, 400)
        frames = [rng.randrange(n) for _ in range(rng.randint(0, 40))]
        if rng.random() < 0.5:  # bounds on frame times, written as decimals
            ts = round(rng.randrange(n) / fps, rng.choice([1, 2, 6]))
            te = round(ts + rng.randrange(n) / fps, rng.choice([1, 2, 6]))
        else:
            ts = rng.uniform(0, n / fps)
            te = ts + rng.uniform(0, 3)
        assert frames_in_window(frames, ts, te, fps) == _brute_window(frames, ts, te, fps)
        t = rng.uniform(0, n / fps)
        m = nearest_frame(frames, t, fps)
        if frames:
            best = min(sorted(set(frames)), key=lambda f: (abs(f / fps - t), f))
            assert (m.frame, m.offset_s) == (best, abs(best / fps - t))
        else:
            assert m.frame is None and not m.within
    # closed at both ends: a window on frame times holds both end frames; 2.0 s at 29.97 holds no frame
    assert frames_in_window(range(100), 0.1, 0.2, 30.0) == [3, 4, 5, 6]
    assert frames_in_window(range(100), 2.0, 2.0, 30.0) == [60]
    assert frames_in_window(range(100), 2.0, 2.0, 29.97) == []


# ---------------------------------------------------------------------------------------
# STI-Bench's client
# ---------------------------------------------------------------------------------------
def _sti_bench_frame_count(total, orig_fps, max_frames=30):
    """MINT-SJTU/STI-Bench opensource_test.py compute_sample_fps, then qwen-vl-utils smart_nframes (fps
    mode, FPS_MIN_FRAMES 4, FPS_MAX_FRAMES 768, FRAME_FACTOR 2), written out from those sources."""
    duration = total / orig_fps
    sample_fps = orig_fps if total <= max_frames or duration == 0 else max_frames / duration
    nframes = total / orig_fps * sample_fps
    min_frames = math.ceil(4 / 2) * 2
    cap = math.floor(min(768, total) / 2) * 2
    nframes = min(min(max(nframes, min_frames), cap), total)
    return math.floor(nframes / 2) * 2


@pytest.mark.parametrize("total, fps", [(600, 30.0), (1800, 29.97), (31, 30.0), (20, 10.0), (599, 24.0),
                                        (1234, 15.0), (3000, 10.0)])
def test_sti_bench_client_takes_what_its_script_asks(total, fps):
    e = EVALUATORS[STI_BENCH]
    idx = e.takes(total, fps, "all")
    assert len(idx) == _sti_bench_frame_count(total, fps) and idx[0] == 0 and idx[-1] == total - 1
    assert np.all(np.diff(idx) > 0)
    assert e.to_json()["profile"] == "qwen-vl-utils-fps" and e.to_json()["options"] == {"sample_frames": 30}
    assert STI_BENCH not in {d.name for d in DEFAULT_EVALUATORS}  # the demo's manifest is unchanged


def test_sti_bench_client_takes_28_frames_where_the_float_product_falls_short():
    """30 / duration frames/s times the duration is not always 30.0 in float64: qwen-vl-utils floors it to 28."""
    short = [n for n in range(31, 600) if _sti_bench_frame_count(n, 30.0) == 28]
    assert short and all(len(EVALUATORS[STI_BENCH].takes(n, 30.0, "all")) == 28 for n in short)


def _mp4_rate(path):
    """The average frame rate an MP4 states, read here from its bytes (ISO/IEC 14496-12): the video
    track's mdhd timescale and its stts (sample count, delta) runs: samples x timescale / total delta."""
    import struct
    from fractions import Fraction

    data = path.read_bytes()

    def boxes(a, b):
        while a + 8 <= b:
            size, kind = struct.unpack(">I4s", data[a:a + 8])
            yield kind.decode("latin-1"), a + 8, a + size
            a += size

    def find(a, b, *kinds):
        for kind, x, y in boxes(a, b):
            if kind == kinds[0]:
                return (x, y) if len(kinds) == 1 else find(x, y, *kinds[1:])
        raise AssertionError(kinds)

    moov = find(0, len(data), "moov")
    for kind, x, y in boxes(*moov):
        if kind != "trak":
            continue
        mdia = find(x, y, "mdia")
        hx, _ = find(*mdia, "hdlr")
        if data[hx + 8:hx + 12] != b"vide":
            continue
        mx, _ = find(*mdia, "mdhd")
        timescale = struct.unpack(">I", data[mx + 12:mx + 16])[0] if data[mx] == 0 else \
            struct.unpack(">I", data[mx + 20:mx + 24])[0]
        sx, _ = find(*mdia, "minf", "stbl", "stts")
        (n,) = struct.unpack(">I", data[sx + 4:sx + 8])
        runs = [struct.unpack(">II", data[sx + 8 + 8 * k:sx + 16 + 8 * k]) for k in range(n)]
        return Fraction(sum(c for c, _ in runs) * timescale, sum(c * d for c, d in runs))
    raise AssertionError("no video track")


def test_ntsc_rate_as_a_ratio_and_read_from_the_video(tmp_path):
    """Issue #45: an NTSC clip's rate is 30000/1001 (what decord's get_avg_fps and PyAV return as a double),
    not the 29.97 ffmpeg prints; for 33 frames STI-Bench's client takes 30 at the exact rate and 28 at 29.97
    (the script's and qwen-vl-utils' arithmetic written out above). `vistest frames` takes --fps 30000/1001,
    and with --video reads the count and the exact rate (checked against the MP4's own stts/mdhd)."""
    from vistest.videos.ffmpeg import average_frame_rate, ffmpeg_exe

    assert _sti_bench_frame_count(33, 30000 / 1001) == 30 and _sti_bench_frame_count(33, 29.97) == 28
    video = tmp_path / "ntsc.mp4"
    r = subprocess.run([ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i",
                        "testsrc=size=64x48:rate=30000/1001", "-frames:v", "33", "-pix_fmt", "yuv420p", str(video)])
    assert r.returncode == 0
    assert _mp4_rate(video) == Fraction(30000, 1001) == average_frame_rate(video)[0]
    args = ["frames", "-p", "qwen-vl-utils-fps", "-O", "sample_frames=30", "-n", "768"]
    runner = CliRunner()
    counts = {}
    for extra in (["-N", "33", "--fps", "29.97"], ["-N", "33", "--fps", "30000/1001"], ["--video", str(video)]):
        res = runner.invoke(main, args + extra)
        assert res.exit_code == 0, res.output
        counts[extra[-1]] = len(json.loads(res.stdout.strip().splitlines()[-1]))
    assert counts == {"29.97": 28, "30000/1001": 30, str(video): 30}
    res = runner.invoke(main, args + ["-N", "33", "--fps", "30000/0"])
    assert res.exit_code == 2 and "--fps: expected a positive frame rate" in res.output


# ---------------------------------------------------------------------------------------
# importers
# ---------------------------------------------------------------------------------------
def _sti_row(i, task="Speed & Acceleration", video="demo-seed0.mp4", legacy=None, ts=0.2, te=0.25, answer="B",
             question=None):
    cands = {k: f"{j + 1}.0 m" for j, k in enumerate(LETTERS)}
    return {"Source": "Omni6DPose" if video.startswith("0") else "ScanNet", "Task": task, "Video": video,
            "ID": i if legacy is None else legacy, "Question": question or f"question {i}?",
            "Candidates": json.dumps(cands), "Answer": answer, "Answer Detail": cands[answer],
            "time_start": ts, "time_end": te, "scene": "indoor"}


def _write_parquet(path, rows):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def _resti_row(i, task="Displacement & Path Length", video="demo-seed0.mp4", ts=0.0, te=1.9):
    cands = {k: f"{j + 1}.00 m" for j, k in enumerate(LETTERS)}
    return {"Video": video, "Source": "ScanNet", "Task": task, "QType": "Single Choice",
            "Question": f"Between {ts} and {te} s, how far? ({i})", "Prompt": "", "time_start": ts, "time_end": te,
            "Candidates": cands, "Answer": "C", "Answer Detail": cands["C"], "ID": i, "scene": "indoor",
            "ReSTI ID": f"resti-v1:ScanNet:{video}:{i}", "Legacy Row Key": f"ScanNet|{task}|{video}|{i}|uid={i:016x}"}


def test_sti_bench_parquet_import_and_the_legacy_key_collision(tmp_path):
    rows = [_sti_row(2, video="000070.mp4", question="What is the average speed of the mug?"),
            _sti_row(2, video="000070.mp4", question="What is the acceleration of the mug?", answer="D"),
            _sti_row(1, task="3D Video Grounding", video="scene0041_00.mp4", ts=4.0, te=4.0)]
    rows[1]["Answer Detail"] = "9.9 m/s^2"
    imported = import_question_set("sti-bench", _write_parquet(tmp_path / "qa.parquet", rows))
    ids = [q["id"] for q in imported.questions]
    assert ids == ["000070:2:row0", "000070:2:row1", "scene0041_00:1"]
    assert any("'000070:2'" in w and "names 2 rows" in w for w in imported.warnings)
    assert any("1 of 3 rows have an Answer Detail" in w for w in imported.warnings)
    a, b, g = imported.questions
    assert a["question_type"] == "sti_speed_acceleration" and a["options"][1] == "B. 2.0 m"
    assert (a["time_start"], a["time_end"], a["dataset"], a["scene_id"]) == (0.2, 0.25, "Omni6DPose", "000070")
    assert g["time"] == 4.0 and g["question_type"] == "sti_3d_video_grounding"
    assert b["ground_truth"] == "D"
    # QType and Prompt (ReSTI keeps them as "the original STI-Bench columns") are accepted and kept
    row = {**_sti_row(1), "QType": "Single Choice", "Prompt": ""}
    (q,) = import_question_set("sti-bench", _write_parquet(tmp_path / "qa2.parquet", [row])).questions
    assert (q["qtype"], q["prompt"]) == ("Single Choice", "")
    # the real rows name the scene column `scene`; opensource_test.py also reads `Scene`, and so does vistest
    old = {**{k: v for k, v in _sti_row(1).items() if k != "scene"}, "Scene": "indoor"}
    (q_old,) = import_question_set("sti-bench", _write_parquet(tmp_path / "qa3.parquet", [old])).questions
    (q_new,) = import_question_set("sti-bench", _write_parquet(tmp_path / "qa4.parquet", [_sti_row(1)])).questions
    assert q_old == q_new
    both = {**_sti_row(1), "Scene": "indoor"}
    with pytest.raises(QuestionSetError, match="unknown column"):
        import_question_set("sti-bench", _write_parquet(tmp_path / "qa5.parquet", [both]))


@pytest.mark.parametrize("edit, msg", [
    (lambda r: r.pop("time_end"), r"row 0: missing column\(s\) time_end of the sti-bench layout"),
    (lambda r: r.update(Extra=1), r"row 0: unknown column\(s\) Extra for the sti-bench layout"),
    (lambda r: r.update(Task="Counting"), r"row 0: Task: unknown task 'Counting'"),
    (lambda r: r.update(Answer="F"), r"row 0: Answer: expected one of A, B, C, D, E"),
    (lambda r: r.update(time_start=3.0), r"row 0: time_end: expected time_start <= time_end"),
    (lambda r: r.update(Candidates=json.dumps({"A": "1"})), r"row 0: Candidates: expected the five keys"),
    # issue #35: a TypeError (bytes), a bare NaN written into questions.jsonl, scene id "." (by_scene/..jsonl),
    # an OverflowError later (1e308 s)
    (lambda r: r.update({"Answer Detail": b"\x00\xff"}),
     r"row 0: Answer Detail: expected text, a finite number or null, got b'\\x00\\xff'"),
    (lambda r: r.update({"Answer Detail": float("nan")}), r"row 0: Answer Detail: expected text, a finite number or "
                                                           r"null, got nan"),
    (lambda r: r.update(scene=b"x"), r"row 0: scene: expected text, a finite number or null, got b'x'"),
    (lambda r: r.update(Video="..mp4"), r"row 0: Video '..mp4': scene_id: '.' cannot name files"),
    (lambda r: r.update(Video="dir/.hidden.mp4"), r"row 0: Video 'dir/.hidden.mp4': scene_id: '.hidden' cannot"),
    (lambda r: r.update(time_end=1e308), r"row 0: time_end: expected seconds \(a number in 0..10000000\), got 1e\+308"),
])
def test_sti_bench_refuses_bad_rows_naming_file_row_column(tmp_path, edit, msg):
    row = _sti_row(1)
    edit(row)
    path = _write_parquet(tmp_path / "qa.parquet", [row])
    with pytest.raises(QuestionSetError, match=msg):
        import_question_set("sti-bench", path)


def test_a_refused_question_set_writes_nothing(tmp_path):
    row = {**_sti_row(1), "Answer Detail": float("nan")}
    path = tmp_path / "qa.jsonl"
    path.write_text(json.dumps(_sti_row(2)) + "\n" + json.dumps(row) + "\n")  # NaN: Python's JSON reads it
    r = CliRunner().invoke(main, ["import", "sti-bench", str(path), "-o", str(tmp_path / "out"), "--quiet"])
    assert r.exit_code == 2 and r.output.startswith(f"Error: {path}:2: Answer Detail: expected text"), r.output
    assert not (tmp_path / "out").exists()


def test_resti_jsonl_import_and_refusals(tmp_path):
    p = tmp_path / "resti.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in [_resti_row(1), _resti_row(2)]))
    imported = import_question_set("resti", p)
    q = imported.questions[0]
    assert q["id"] == "resti-v1:ScanNet:demo-seed0.mp4:1" and q["benchmark"] == "ReSTI"
    assert q["legacy_row_key"].startswith("ScanNet|Displacement") and q["ground_truth"] == "C"
    assert imported.warnings == ()
    # two rows with id x are made x:row0 and x:row1; a real x:row1 elsewhere is an error naming both rows
    rows = [_resti_row(1), _resti_row(2), _resti_row(3)]
    rows[0]["ReSTI ID"] = rows[1]["ReSTI ID"] = "x"
    rows[2]["ReSTI ID"] = "x:row1"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(QuestionSetError) as e:
        import_question_set("resti", p)
    assert str(e.value) == (f"{p}:2: ReSTI ID: id 'x' repeats (2 rows), and its unique form 'x:row1' is the id of "
                            f"{p}:3; expected unique ids")
    # the STI-Bench layout is not ReSTI's: named missing columns
    p.write_text(json.dumps(_sti_row(1)) + "\n")
    with pytest.raises(QuestionSetError, match=r"resti.jsonl:1: missing column\(s\) ReSTI ID, Legacy Row Key"):
        import_question_set("resti", p)
    p.write_text(json.dumps({"key": "k", "legacy_id": 1, "legacy_video": "v.mp4", "source": "Waymo", "task": "t",
                             "reason_codes": ["x"]}) + "\n")
    with pytest.raises(QuestionSetError, match=r"resti.jsonl:1: a ReSTI exclusion record"):
        import_question_set("resti", p)
    assert set(COLUMNS) == {"sti-bench", "resti"}
    # resti.parquet: the same columns (Candidates a struct)
    parquet = _write_parquet(tmp_path / "resti.parquet", [_resti_row(1), _resti_row(2)])
    assert import_question_set("resti", parquet).questions == imported.questions


# ---------------------------------------------------------------------------------------
# through the pipeline: budget ground truth, export, score; the window report
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sti_run(tmp_path_factory, demo_small):
    """The small demo (60 frames at its fps) with imported STI-Bench and ReSTI questions about its
    video, run through `vistest run` with STI-Bench's client configuration."""
    base = tmp_path_factory.mktemp("sti")
    rows = [_sti_row(1, ts=0.2, te=0.25), _sti_row(2, task="Displacement & Path Length", ts=0.0, te=1.9),
            _sti_row(3, task="3D Video Grounding", ts=1.0, te=1.0),
            _sti_row(4, task="Dimensional Measurement", ts=1.5, te=1.6),
            _sti_row(5, task="Trajectory Description", ts=1.95, te=1.97)]
    cli("import", "sti-bench", _write_parquet(base / "qa.parquet", rows), "-o", base / "sti", "--quiet")
    res = base / "resti.jsonl"
    res.write_text("".join(json.dumps(r) + "\n" for r in [_resti_row(1), _resti_row(2, ts=0.5, te=0.55)]))
    cli("import", "resti", res, "-o", base / "resti", "--quiet")
    questions = base / "questions.jsonl"
    questions.write_text("".join((base / d / "questions.jsonl").read_text() for d in ("sti", "resti")))
    run = base / "run"
    cli("run", demo_small, questions, "-o", run, "--preset", "ultrafast", "--occlusion", "depth", "--quiet",
        "--no-pictures", "--dummy", "none", "--evaluator", "default", "--evaluator", STI_BENCH)
    return base, questions, run, Scene.load(demo_small)


def test_budget_rows_state_the_window_frames(sti_run):
    _, questions, run, scene = sti_run
    qs = {q["id"]: q for q in read_jsonl(questions)}
    files = [run / "scenes" / scene.scene_id / f"{b}_frame.jsonl" for b in (16, 32, 64, "all")]
    files.append(run / "scenes" / scene.scene_id / "evaluators" / STI_BENCH / "all_frame.jsonl")
    for path in files:
        rows = read_jsonl(path)
        assert [r["id"] for r in rows] == list(qs)
        for r in rows:
            q = qs[r["id"]]
            inside = _brute_window(r["frame_indices"], q["time_start"], q["time_end"], scene.fps)
            assert r["window_frames"] == inside and r["window_frame_count"] == len(inside)
            assert r["video_fps"] == scene.fps
            need = QUESTION_TYPES[q["question_type"]].window_frames
            if "time" in q:
                best = min(sorted(set(r["frame_indices"])), key=lambda f: (abs(f / scene.fps - q["time"]), f))
                assert r["instant_frame"] == best and r["instant_tolerance_s"] == 0.5
                assert r["instant_offset_s"] == pytest.approx(abs(best / scene.fps - q["time"]))
                ok = r["instant_offset_s"] <= 0.5
            else:
                assert "instant_frame" not in r
                ok = len(inside) >= need
            assert r["status"] == ("kept" if ok else "unanswerable"), (path.name, r["id"], r["reason_text"])
    sixteen = {r["id"]: r for r in read_jsonl(files[0])}
    assert sixteen["demo-seed0:1"]["status"] == "unanswerable"  # 0.2-0.25 s: one of the 16 frames (speed needs 2)
    sti_all = read_jsonl(files[-1])
    assert sti_all[0]["evaluator"] == STI_BENCH and sti_all[0]["frames_taken"] == 30
    manifest = [json.loads(ln) for ln in (run / "manifest.jsonl").read_text().splitlines() if ln.strip()]
    assert STI_BENCH in json.dumps(manifest)


def test_export_and_score(sti_run, tmp_path):
    _, questions, run, scene = sti_run
    cli("export", "jsonl", run, "-o", tmp_path / "jsonl", "--quiet")
    exported = read_jsonl(tmp_path / "jsonl" / "vistest.jsonl")
    assert {r["id"] for r in exported} == {q["id"] for q in read_jsonl(questions)}
    assert all("time_start" in r for r in exported)
    scene_dir = run / "scenes" / scene.scene_id
    preds = tmp_path / "preds.jsonl"
    rows = read_jsonl(scene_dir / "all_frame.jsonl")
    preds.write_text("".join(json.dumps({"id": r["id"], "budget": "all", "prediction": r["original_ground_truth"]})
                             + "\n" for r in rows))
    cli("score", preds, "-r", scene_dir, "-o", tmp_path / "score", "--quiet", "--splits", "3", "--no-learned")
    report = json.loads((tmp_path / "score" / "report.json").read_text())
    assert report["coverage"] and "sti_speed_acceleration" in json.dumps(report["scores"])


def test_window_report_counts_against_brute_force(sti_run, tmp_path):
    _, questions, run, scene = sti_run
    out = tmp_path / "windows.json"
    cli("windows", questions, "--scene", scene.source, "--json", out,
        "-o", tmp_path / "windows.md")
    report = json.loads(out.read_text())
    qs = read_jsonl(questions)
    n, fps = scene.num_frames, scene.fps
    takes = {e.name: e.takes(n, fps, "all").tolist() for e in EVALUATORS.values()}
    takes.update({f"uniform@{b}": select_frames("uniform", n, b, fps=fps).tolist() for b in (16, 32, 64, "all")})
    assert {c["name"] for c in report["configs"]} == set(takes)
    for name, frames in takes.items():
        want: dict[str, list[int]] = {}
        for q in qs:
            if "time" in q:
                k = int(min(abs(f / fps - q["time"]) for f in frames) <= 0.5)
            else:
                k = len(_brute_window(frames, q["time_start"], q["time_end"], fps))
            for task in (q["task"], "(all tasks)"):
                want.setdefault(task, [0, 0, 0, 0])[min(k, 3)] += 1
        got = report["per_config"][name]
        assert {t: [row["counts"][b] for b in ("0", "1", "2", ">=3")] for t, row in got.items()} == want, name
    md = (tmp_path / "windows.md").read_text()
    assert "## sti-bench.qwen2_5_vl" in md and "| Speed & Acceleration |" in md


def test_window_report_reads_frame_counts_from_the_videos(sti_run, tmp_path):
    """--videos DIR: each question's ``video`` file, its frames counted by decoding, gives the report
    --scene gives (the demo's video is the scene's)."""
    _, questions, run, scene = sti_run
    videos = tmp_path / "videos"
    videos.mkdir()
    (videos / f"{scene.scene_id}.mp4").symlink_to((scene.root / scene.video).resolve())
    cli("windows", questions, "--videos", videos, "--json", tmp_path / "a.json", "--evaluator", STI_BENCH)
    cli("windows", questions, "--scene", scene.source, "--json", tmp_path / "b.json", "--evaluator", STI_BENCH)
    a, b = (json.loads((tmp_path / f).read_text()) for f in ("a.json", "b.json"))
    assert a == b and a["with_window"] == len(read_jsonl(questions))
    from click.testing import CliRunner
    from vistest.cli import main
    r = CliRunner().invoke(main, ["windows", str(questions), "--evaluator", STI_BENCH])
    assert r.exit_code == 2 and "no frame count and fps for 1 video(s) the questions name: demo-seed0" in r.output


def test_sti_bench_client_with_qwen_vl_utils_0_0_8_rounds_to_30():
    """qwen-vl-utils 0.0.8's smart_nframes rounds the fps-mode count (round_by_factor) where 0.0.10+
    floors it: written here, ``round(min(max(N / fps * r, 4), floor(min(768, N) / 2) * 2) / 2) * 2``
    with STI-Bench's ``r = 30 / duration``; where the float product falls just under 30 it takes 30,
    the current client 28; elsewhere both agree."""
    from vistest.budget.evaluators import STI_BENCH_OLD_ROUNDING

    old = EVALUATORS[STI_BENCH_OLD_ROUNDING]
    assert STI_BENCH_OLD_ROUNDING not in {d.name for d in DEFAULT_EVALUATORS}
    differ = 0
    for n in range(31, 400):
        rate = 30 / (n / 30.0)
        nf = min(max(n / 30.0 * rate, 4), math.floor(min(768, n) / 2) * 2)
        count = round(nf / 2) * 2
        want = [int(x) for x in np.round(np.linspace(0, n - 1, count))]
        got = old.takes(n, 30.0, "all").tolist()
        assert len(got) == count == 30 and got == want, n
        differ += len(EVALUATORS[STI_BENCH].takes(n, 30.0, "all")) == 28
    assert differ > 0
