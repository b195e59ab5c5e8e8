"""From a SensReader-style folder of JPGs to an exported lmms-eval task, with no hand-written step.

The folder is the real ScanNet scene0000_00 sample of ``tests/data/mmdet3d-scannet`` converted
into SensReader's export layout by ``test_real_scannet.write_scan`` (three real 1296x968 photos
at .sens frames 0, 11 and 102 with their poses, intrinsics, the scan's annotation). Every step
is the command a user types: ``vistest import scannet --video-from-frames`` -> ``vistest
generate`` -> ``vistest run`` -> ``vistest export lmms-eval-task``. What must hold at the end:
the exported task's full-length video has 103 frames and shows each real photo at its own .sens
frame number (compared with the JPG itself), the frames between repeat the previous photo, and
witness as that photo does (held frames carry its pose): evidence comes in whole runs of a photo,
and 16 sampled frames are 16 witnesses, not the two that happen to be photos.
"""
from __future__ import annotations

import json

import cv2
import numpy as np
import pytest
from click.testing import CliRunner

from test_real_scannet import FRAMES, write_scan
from vistest.cli import main as cli
from vistest.videos.ffmpeg import count_frames, read_frames


def _run(*args: str) -> str:
    res = CliRunner().invoke(cli, [*args, "--quiet"])
    assert res.exit_code == 0, f"vistest {' '.join(args)}:\n{res.output}"
    return res.output


@pytest.mark.slow  # the whole chain, import to lmms-eval task (each step: its own module)
def test_sensreader_jpgs_to_lmms_eval_task(tmp_path):
    scan = write_scan(tmp_path)
    scene_dir, run_dir, export = tmp_path / "scene", tmp_path / "run", tmp_path / "export"
    _run("import", "scannet", str(scan), "-o", str(scene_dir), "--video-from-frames")
    _run("generate", str(scene_dir / "scene.json"), "-o", str(tmp_path / "questions.jsonl"))
    _run("run", str(scene_dir / "scene.json"), str(tmp_path / "questions.jsonl"), "-o", str(run_dir),
         "--budgets", "16,all", "--dummy", "black")
    _run("export", "lmms-eval-task", str(run_dir), "-o", str(export))

    tasks = sorted(p.name for p in export.glob("*.yaml"))
    assert "vistest_all_frame_real.yaml" in tasks and "vistest_16_frame_real.yaml" in tasks
    rows = [json.loads(line) for line in (export / "data" / "vistest_all_frame_real.jsonl").read_text().splitlines()]
    assert rows and all(r["video_frames"] == 103 and r["scene_id"] == "scene0000_00" for r in rows)
    photo = [max(m for m in FRAMES if m <= n) for n in range(103)]  # the photo decoded frame n shows
    for r in rows:
        evidence = json.loads(r["vistest_record"]).get("evidence_frames") or []
        # a held frame is its photo: it witnesses with it, so evidence comes in whole runs of one photo
        assert set(evidence) == {n for n in range(103) if photo[n] in {photo[e] for e in evidence}}, evidence
    rows16 = [json.loads(line) for line in (export / "data" / "vistest_16_frame_real.jsonl").read_text().splitlines()]
    print("16 frames:", [json.loads(r["vistest_record"]).get("reason_text") for r in rows16])
    assert rows16 and not any("of 2 frames" in r["vistest_record"] or "all 2 frames" in r["vistest_record"]
                              for r in rows16)  # 16 frames witness, not the 2 that were photos
    manifest = [json.loads(line) for line in (run_dir / "manifest.jsonl").read_text().splitlines()]
    full = next(m for m in manifest if m["variant"] == "budget" and m["budget"] == "all")
    video = run_dir / full["path"]
    assert count_frames(video) == 103
    # each real photo at its own frame number; the frame after 11 repeats it; 12..101 are not photo 102
    wanted = [0, 11, 12, 101, 102]
    got = dict(zip(wanted, read_frames(video, wanted)))
    photos = {n: cv2.imread(str(scan / "color" / f"{n}.jpg"))[:, :, ::-1].astype(float) for n in FRAMES}
    err = {(n, m): float(np.abs(got[n] - photos[m]).mean()) for n in wanted for m in FRAMES}
    print("mean |decoded - photo| (levels):", {f"{n}~{m}": round(e, 1) for (n, m), e in err.items()})
    for n, m in ((0, 0), (11, 11), (12, 11), (101, 11), (102, 102)):
        assert err[(n, m)] < 4.0, (n, m, err[(n, m)])
        assert all(err[(n, o)] > 3 * err[(n, m)] for o in FRAMES if o != m), (n, m)
