"""A run folder's contact sheets and index.html, opened in headless Chromium.

The browser check needs Chromium (Debian: ``apt-get install chromium``; ``.ci/run`` installs it);
without it that test is skipped and says why. Its screenshot is kept in ``test-artifacts/``.
"""
import json
import os
import shutil
import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest
from click.testing import CliRunner

from vistest.cli import main
from vistest.look.index import links
from vistest.videos.manifest import read_manifest
from vistest.look.sheets import sheet_path, write_sheets
from vistest.videos.ffmpeg import VideoWriter
from conftest import IDENTITY, scene_doc

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium() -> str | None:
    """The Chromium executable: $VISTEST_CHROMIUM, else chromium / chromium-browser on PATH, else None."""
    exe = os.environ.get("VISTEST_CHROMIUM")
    if exe:
        return exe
    return next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser")) if p), None)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A complete run folder: `vistest run` on a 96x64, 12-frame scene, then overlay, timeline, sheets, index."""
    root = tmp_path_factory.mktemp("looking")
    w, h, n = 96, 64, 12
    poses = [IDENTITY] * n
    poses[7] = None
    doc = scene_doc([([0.0, 0.0, 3.0], [1.0, 0.8, 0.5]), ([0.9, 0.3, 4.0], [0.6, 0.6, 0.6])], poses,
                    image_size=(w, h), camera={"fx": 80.0, "fy": 80.0, "cx": 47.5, "cy": 31.5}, video="video.mp4")
    doc["scene_id"] = "tiny"
    with VideoWriter(root / "video.mp4", fps=30.0, size=(w, h), preset="ultrafast") as vw:
        for i in range(n):
            vw.write(np.full((h, w, 3), 30 + 15 * i, np.uint8))
    (root / "scene.json").write_text(json.dumps(doc))
    (root / "q.jsonl").write_text(json.dumps({"id": "q1", "scene_id": "tiny", "question_type": "object_counting",
                                              "question": "How many boxes?", "category": "box",
                                              "ground_truth": "2"}) + "\n")
    out = root / "run"
    runner = CliRunner()
    r = runner.invoke(main, ["run", str(root / "scene.json"), str(root / "q.jsonl"), "-o", str(out), "--budgets",
                             "4,all", "--preset", "ultrafast", "--quiet"])
    assert r.exit_code == 0, r.output
    scene_dir = out / "scenes" / "tiny"
    for args in (["overlay", str(root / "scene.json"), "-o", str(scene_dir / "overlay.mp4")],
                 ["overlay", str(root / "scene.json"), "--png", "-o", str(scene_dir / "overlay.png")],
                 ["timeline", str(root / "scene.json"), "-o", str(scene_dir / "timeline.png"), "--budgets", "4",
                  "--questions", str(root / "q.jsonl")],
                 ["sheet", str(out)]):
        r = runner.invoke(main, args + ["--quiet"])
        assert r.exit_code == 0, r.output
    assert r.output.strip() == str((out / "index.html").resolve())
    return out


def test_every_video_has_a_sheet_whose_frames_match_the_manifest(run_dir):
    recs = read_manifest(run_dir)
    assert {r["variant"] for r in recs} == {"budget", "dummy"}
    for r in recs:
        img = cv2.imread(str(sheet_path(run_dir / "sheets", r["path"])))
        assert img is not None, r["path"]
    again = write_sheets(run_dir, run_dir / "sheets")
    assert all(not s.mismatched for s in again), [(s.path, s.mismatched) for s in again if s.mismatched]


def test_a_video_that_is_not_what_the_manifest_says_is_flagged(run_dir, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(run_dir, bad)
    recs = read_manifest(bad)
    rec = next(r for r in recs if r["path"].startswith("4_frame/"))
    rec["source_frames"] = list(reversed(rec["source_frames"]))  # claims other source frames
    (bad / "manifest.jsonl").write_text(json.dumps(rec) + "\n")
    res = write_sheets(bad, bad / "sheets")
    assert res[0].mismatched == (0, 1, 2, 3)


def test_index_links_and_images_resolve_on_disk(run_dir):
    page = (run_dir / "index.html").read_text()
    targets = links(page)
    assert any(t.endswith("timeline.png") for t in targets) and any(t.endswith("overlay.mp4") for t in targets)
    assert any(t.startswith("sheets/") for t in targets) and any(t.endswith("manifest.jsonl") for t in targets)
    from urllib.parse import unquote

    missing = [t for t in targets if not t.startswith("#") and not (run_dir / unquote(t)).is_file()]
    assert not missing


HARNESS = """<!doctype html><html><body><pre id="result">pending</pre>
<iframe id="page" src="{src}" width="1280" height="900"></iframe>
<script>
document.getElementById("page").addEventListener("load", () => {{
  const doc = document.getElementById("page").contentDocument;
  const out = {{title: doc.title, images: [], links: []}};
  for (const img of doc.images)
    out.images.push({{src: img.getAttribute("src"), ok: img.complete && img.naturalWidth > 0}});
  for (const a of doc.querySelectorAll("a[href]")) {{
    const href = a.getAttribute("href");
    if (href.startsWith("#")) {{
      out.links.push({{href, ok: !!doc.getElementById(decodeURIComponent(href.slice(1)))}}); continue;
    }}
    let ok = false;
    try {{
      const x = new XMLHttpRequest(); x.open("GET", a.href, false); x.send(); ok = x.status === 0 || x.status === 200;
    }}
    catch (e) {{ ok = false; }}
    out.links.push({{href, ok}});
  }}
  document.getElementById("result").textContent = JSON.stringify(out);
}});
</script></body></html>
"""


def test_index_html_in_headless_chromium(run_dir, tmp_path):
    exe = chromium()
    if exe is None:
        pytest.skip("no Chromium installed (Debian: apt-get install chromium; or set VISTEST_CHROMIUM): "
                    "index.html was not opened in a browser")
    harness = run_dir.parent / "harness.html"
    harness.write_text(HARNESS.format(src="run/index.html"))
    flags = CHROMIUM_FLAGS + [f"--user-data-dir={tmp_path / 'profile'}"]
    r = subprocess.run([exe, *flags, "--allow-file-access-from-files", "--virtual-time-budget=10000", "--dump-dom",
                        harness.as_uri()], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    start = r.stdout.index('<pre id="result">') + len('<pre id="result">')
    result = json.loads(r.stdout[start:r.stdout.index("</pre>", start)].replace("&quot;", '"').replace("&amp;", "&"))
    assert result["title"] == "vistest run: tiny"  # named by its scene
    assert len(result["images"]) >= 4 and len(result["links"]) >= 10
    assert [i["src"] for i in result["images"] if not i["ok"]] == []
    assert [a["href"] for a in result["links"] if not a["ok"]] == []
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "index.png"
    r = subprocess.run([exe, *flags, "--hide-scrollbars", "--window-size=1280,1600", f"--screenshot={shot}",
                        (run_dir / "index.html").as_uri()], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    img = cv2.imread(str(shot))
    assert img is not None and img.shape[:2] == (1600, 1280) and img.std() > 10
