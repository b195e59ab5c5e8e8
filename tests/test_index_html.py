"""A run folder's contact sheets and index.html, opened in headless Chromium.

The browser check needs Chromium (Debian: ``apt-get install chromium``; ``.ci/run`` installs it);
without it that test is skipped and says why. Its screenshot is kept in ``test-artifacts/``.
"""
import json
import os
import re
import shutil
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path

import cv2
import numpy as np
import pytest
from click.testing import CliRunner

from vistest.cli import main
from vistest.look.index import index_html, links
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
                                              "ground_truth": "2"}) + "\n"
                                  + json.dumps({"id": "q2", "scene_id": "tiny", "question_type":
                                                "object_size_estimation", "question": "How long is the box?",
                                                "objects": ["1"], "ground_truth": "60"}) + "\n")
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
                 ["baseline", "-r", str(scene_dir), "-o", str(scene_dir / "baseline.jsonl")],
                 ["score", str(scene_dir / "baseline.jsonl"), "-r", str(scene_dir), "-o", str(scene_dir / "score")],
                 ["sheet", str(out)]):
        r = runner.invoke(main, args + ([] if args[0] == "baseline" else ["--quiet"]))
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


class Cells(HTMLParser):
    """The tables of a page region as rows of cell texts; ``ids``: every element id."""

    def __init__(self):
        super().__init__()
        self.tables, self.ids, self._cell = [], [], None

    def handle_starttag(self, tag, attrs):
        self.ids += [v for k, v in attrs if k == "id"]
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append(self._cell.strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def summary_of(page: str) -> str:
    start = page.index('<section class="summary"')
    return page[start:page.index("</section>", start)]


def test_each_question_has_a_row_and_its_frames_with_the_evidence_boxes(run_dir):
    """The page's question table: a row per question, its status at each budget the budget file's, the
    reason in words where the answer does not stand, the objects by label. The drill-down's picture of
    q2 at 4 frames: 4 tiles; on each tile of a frame where the visibility table gives object 1 a visible
    box, the box's outline (yellow) is drawn at that box (scaled to the tile), and nowhere else."""
    from vistest.look.per_question import BOX_RGB, COLUMNS, TILE_WIDTH, picture_path

    page = (run_dir / "index.html").read_text()
    start = page.index('<table class="questions"')
    p = Cells()
    p.feed(page[start:page.index("</table>", start)])
    (table,) = p.tables
    rows = {r[0].split(":")[0]: r for r in table[1:]}
    assert list(rows) == ["q1", "q2"]
    for label, col in (("4", 4), ("all", 5)):
        for ln in (run_dir / "scenes" / "tiny" / f"{label}_frame.jsonl").open():
            d = json.loads(ln)
            cell = rows[d["id"]][col]
            assert cell.startswith(d["status"])  # no status is the start of another
            assert (d["reason_text"] in html_unescape(cell)) == (d["status"] != "kept")
    assert rows["q2"][2] == "box (1)" and rows["q1"][2] == "box (0), box (1)"
    row = json.loads((run_dir / "scenes" / "tiny" / "4_frame.jsonl").read_text().splitlines()[1])
    assert row["id"] == "q2"
    pic = picture_path(run_dir, "tiny", "q2", "4")
    assert f'src="{pic.relative_to(run_dir).as_posix()}"' in page
    img = cv2.cvtColor(cv2.imread(str(pic)), cv2.COLOR_BGR2RGB).astype(int)
    with np.load(run_dir / "scenes" / "tiny" / "visibility.npz") as z:
        bbox = dict(zip(z["frame_index"].tolist(), z["bbox"][:, 1]))
    k = TILE_WIDTH / 96
    assert BOX_RGB[0] - BOX_RGB[2] > 150  # yellow: the frames are grey levels (R = G = B), the JPEG smears hue
    yellow = (img[..., 0] - img[..., 2] > 50) & (img[..., 1] - img[..., 2] > 40)
    # the sheet's layout (vistest.look.tiles.contact_sheet): a title line, then tiles left to right, 4 px apart
    assert len(row["frame_indices"]) == 4 and COLUMNS >= 4
    drawn = 0
    for n, f in enumerate(row["frame_indices"]):
        x = 4 + n * (TILE_WIDTH + 4)
        cols = yellow[:, x:x + TILE_WIDTH]
        b = bbox[f]
        if np.isfinite(b).all():
            ys, xs = np.nonzero(cols)
            assert len(xs), f"frame {f}: no box drawn"
            assert abs(xs.min() - b[0] * k) <= 2 and abs(xs.max() - b[2] * k) <= 2, (f, xs.min(), xs.max(), b * k)
            drawn += 1
        else:
            assert not cols.any(), f"frame {f}: a box drawn where the object is not visible"
    assert drawn >= 1


def test_prefetched_tiles_are_the_source_frames_at_tile_size(tmp_path, monkeypatch):
    """vistest.look.per_question.SourceTiles: the prefetch (every frame, decoded in a thread while ``vistest
    run``'s visibility child runs) gives, for each frame asked for, the same tile as the decode of the
    asked-for frames alone, and that tile is the video's frame, decoded by OpenCV and area-shrunk to tile
    size (within 3 levels: ffmpeg's and OpenCV's YUV conversion and scaling round differently); each frame's
    own pattern, so a frame numbered wrongly fails. A frame past the end is left out (after a prefetch that
    read the whole video, without decoding it again). A video whose tiles would exceed PREFETCH_MB is not
    prefetched; close() stops a prefetch mid-video."""
    import vistest.videos.ffmpeg as ff
    from vistest.look import per_question as pq

    w, h, n = 160, 120, 24
    rng = np.random.default_rng(3)
    blocks = rng.integers(40, 216, (n, 6, 8, 3)).astype(np.uint8)  # a coarse pattern per frame: survives x264
    with VideoWriter(tmp_path / "v.mp4", fps=30.0, size=(w, h), preset="ultrafast", crf=0) as vw:
        for i in range(n):
            vw.write(np.kron(blocks[i], np.ones((20, 20, 1), np.uint8)))
    frames = [0, 3, 4, 11, 23, 30]
    pre = pq.SourceTiles(tmp_path / "v.mp4", (w, h), n)
    assert pre.prefetch()
    with monkeypatch.context() as m:
        m.setattr(ff, "read_frames", lambda *a, **k: pytest.fail("decoded again after a whole prefetch"))
        got = pre.tiles(frames)
    plain = pq.SourceTiles(tmp_path / "v.mp4", (w, h), n).tiles(frames)  # no prefetch: decoded when asked
    assert sorted(got) == sorted(plain) == frames[:-1]
    cap = cv2.VideoCapture(str(tmp_path / "v.mp4"))
    decoded = [cv2.cvtColor(cap.read()[1], cv2.COLOR_BGR2RGB) for _ in range(n)]
    th = round(h * pq.TILE_WIDTH / w)
    for f in frames[:-1]:
        assert np.array_equal(got[f], plain[f]), f
        ref = cv2.resize(decoded[f], (pq.TILE_WIDTH, th), interpolation=cv2.INTER_AREA).astype(int)
        inner = (slice(3, -3), slice(3, -3))  # block edges: the two scalers' kernels differ there
        assert got[f].shape == (th, pq.TILE_WIDTH, 3)
        assert np.median(np.abs(got[f].astype(int) - ref)[inner]) <= 3, f
    pre.close()
    big = pq.SourceTiles(tmp_path / "v.mp4", (w, h), pq.PREFETCH_MB * 2**20 // (pq.TILE_WIDTH * th * 3) + 1)
    assert not big.prefetch() and sorted(big.tiles([2, 5])) == [2, 5]
    long_video = tmp_path / "long.mp4"
    with VideoWriter(long_video, fps=30.0, size=(w, h), preset="ultrafast") as vw:
        for i in range(600):
            vw.write(np.kron(blocks[i % n], np.ones((20, 20, 1), np.uint8)))
    stopped = pq.SourceTiles(long_video, (w, h), 600)
    assert stopped.prefetch()
    deadline = time.monotonic() + 30
    while not stopped._got and time.monotonic() < deadline:  # mid-video
        time.sleep(0.001)
    stopped.close()
    assert not stopped._thread.is_alive() and stopped._reader._proc is None  # ffmpeg stopped, its pipes closed
    assert stopped._got == {}


def html_unescape(text: str) -> str:
    import html

    return html.unescape(text)


def test_index_opens_with_a_summary_read_from_the_run(run_dir):
    """The summary comes before any scene section and states, counted here from the run's own files: per budget
    kept / changed / unanswerable (the budget files' status), per dummy mode its rows and the scored model's
    hallucination (score/rows.jsonl: hallucinated rows of the mode), the pose coverage (frame 7 of 12 has no
    pose) and the audit verdict once an audit report lies in the scene folder."""
    page = (run_dir / "index.html").read_text()
    assert page.index('id="summary"') < page.index('id="scene-tiny"')
    summary = summary_of(page)
    p = Cells()
    p.feed(summary)
    budget_table, dummy_table = p.tables
    for label, row in (("4", budget_table[1]), ("all", budget_table[2])):
        status = [json.loads(ln)["status"] for ln in (run_dir / "scenes" / "tiny" / f"{label}_frame.jsonl").open()]
        want = [str(status.count(s)) for s in ("kept", "changed", "unanswerable")]
        assert row[0] == (f"{label} frames" if label != "all" else "all") and row[1] == str(len(status))
        assert [c.split()[0] for c in row[2:]] == want, (row, want)
    dummies = [json.loads(ln) for ln in (run_dir / "scenes" / "tiny" / "dummy_gt.jsonl").open()]
    scored = [json.loads(ln) for ln in (run_dir / "scenes" / "tiny" / "score" / "rows.jsonl").open()]
    # dummies: only rows that have a video count (a dummy with no frame left has none; exports leave it out)
    with_video = {(d["id"], d["variant"], str(d["num_frames"])) for d in dummies if d["video"] is not None}
    assert len(with_video) < len(dummies)  # the drop dummies of budget 4 lose every frame here
    for row in dummy_table[1:]:
        mode = row[0]
        mine = [d for d in dummies if d["dummy_mode"] == mode and d["video"] is not None]
        assert row[1] == str(len(mine)) and row[2] == str(sum(d["status"] == "unanswerable" for d in mine))
        assert row[5] == str(sum(d["dummy_mode"] == mode and d["video"] is None for d in dummies))
        rated = [r for r in scored if r["variant"] == f"dummy-{mode}" and r["hallucinated"] is not None
                 and (r["id"], r["variant"], str(r["budget"])) in with_video]
        print(f"dummy {mode}: table {row}; scored rows with a video {len(rated)}, without "
              f"{sum(r['variant'] == f'dummy-{mode}' and r['hallucinated'] is not None for r in scored) - len(rated)}")
        if rated:
            assert row[4].startswith(f"{sum(r['hallucinated'] for r in rated)} of {len(rated)} ")
        else:
            assert row[1] == "0" and row[4] == "no row with a video"
    assert "1 of 12 frames have no pose" in summary
    assert "audit" not in summary
    report = {"format": "vistest.audit/1", "scene_id": "tiny", "passed": False, "message": "boxes sit 2.6 m off"}
    audit = run_dir / "scenes" / "tiny" / "audit.json"
    audit.write_text(json.dumps(report))
    try:
        summary = summary_of(index_html(run_dir))
    finally:
        audit.unlink()
    assert "audit" in summary and "FAIL" in summary and "boxes sit 2.6 m off" in summary
    # ranked: errors (the failed audit), then what changes answers (frames without a pose), then the notes,
    # collapsed in a <details> that lists every kind of sampling note
    errors, answers = summary.index("<h3>Errors</h3>"), summary.index("<h3>Changes answers</h3>")
    assert errors < summary.index("boxes sit 2.6 m off") < answers < summary.index("1 of 12 frames have no pose")
    details = summary[summary.index("<details>"):summary.index("</details>")]
    assert answers < summary.index("<details>") and 'id="note-1"' in details
    assert summary.count('id="note-') == details.count('id="note-')


def test_summary_survives_damaged_files(run_dir, tmp_path):
    """A truncated visibility.npz and a broken line in a budget file: the page is still written, the pose
    coverage then comes from the scene file the run's record names (frame 7 of 12 has no pose there too)."""
    bad = tmp_path / "bad"
    shutil.copytree(run_dir, bad)
    npz = bad / "scenes" / "tiny" / "visibility.npz"
    npz.write_bytes(npz.read_bytes()[:100])
    with (bad / "scenes" / "tiny" / "4_frame.jsonl").open("a") as f:
        f.write("{not json\n")
    summary = summary_of(index_html(bad))
    assert "1 of 12 frames have no pose" in summary


def test_sampling_notes_are_listed_once_per_kind(run_dir, tmp_path):
    """A note that many videos carry (the InternVL one, 35 times on a real scan) is one line of the summary with
    the number of videos; each video's row links to it by number. Checked on a manifest where one note kind is
    carried by 35 videos with different frame numbers: the page holds no note text twice."""
    recs = read_manifest(run_dir)
    many = tmp_path / "many"
    shutil.copytree(run_dir, many)
    lines = []
    for i in range(35):
        r = dict(recs[i % len(recs)], path=f"copy{i}/{recs[i % len(recs)]['path']}")
        r["warnings"] = [f"profile internvl takes {16 + i} frames of this {16 + i}-frame video: misses [{15 + i}], "
                         f"repeats [{8 + i}]"]
        lines.append(json.dumps(r))
    (many / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    page = index_html(many)
    summary = summary_of(page)
    notes = [ln for ln in summary.split("<li") if "profile internvl" in ln]
    assert len(notes) == 1 and "35 of 35 videos" in notes[0]
    assert page.count("profile internvl takes") == 1 + 35  # once in the summary, once per video as hover text
    assert page.count('href="#note-1"') == 35 and 'id="note-1"' in summary
    visible = re.sub(r'title="[^"]*"', "", page)
    assert visible.count("profile internvl takes") == 1


def test_real_vs_dummy_plot_labels_do_not_overlap(tmp_path):
    """The hallucination-on-dummies plot of a --types all set (20 question types x 2 dummy modes = 40 labels):
    rendered, no two tick labels' boxes intersect and every label lies inside the image."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from vistest.eval.metrics import HallucinationCell, SensitivityCell
    from vistest.eval.report import real_vs_dummy_figure
    from vistest.questions import QUESTION_TYPES

    types = sorted(QUESTION_TYPES)[:20]
    assert len(types) == 20
    hall = [HallucinationCell(f"dummy-{m}", "16", t, "confident_answer", 10, i % 10, 0, 0)
            for m in ("drop", "black") for i, t in enumerate(types)]
    sens = [SensitivityCell(f"dummy-{m}", "16", t, 10, 0.8, 0.3) for m in ("drop", "black") for t in types]
    fig = real_vs_dummy_figure(sens, hall)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    width, height = canvas.get_width_height()
    for ax in fig.axes:
        boxes = [t.get_window_extent(renderer) for t in ax.get_yticklabels() if t.get_text()]
        assert len(boxes) == (40 if ax.get_title() == "hallucination on dummies" else 20)
        for a, b in zip(boxes, boxes[1:]):
            assert not a.overlaps(b), (ax.get_title(), a, b)
        assert all(b.x0 >= 0 and b.y0 >= 0 and b.x1 <= width and b.y1 <= height for b in boxes)
    fig.savefig(tmp_path / "plot.png")


HARNESS = """<!doctype html><html><body><pre id="result">pending</pre>
<iframe id="page" src="{src}" width="1280" height="900"></iframe>
<script>
document.getElementById("page").addEventListener("load", async () => {{
  const doc = document.getElementById("page").contentDocument;
  const out = {{title: doc.title, images: [], links: [], questions: {{}}}};
  for (const d of doc.querySelectorAll("details")) d.open = true;  // the drill-down's pictures load too
  for (const img of doc.images) img.loading = "eager";
  await Promise.all(Array.from(doc.images).map(img => img.complete ? null :
    new Promise(done => {{ img.addEventListener("load", done); img.addEventListener("error", done); }})));
  for (const t of doc.querySelectorAll("table.questions"))
    out.questions[t.id] = Array.from(t.rows).slice(1).map(r => [r.id, ...Array.from(r.cells).map(c => c.innerText)]);
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


@pytest.mark.slow  # a headless browser
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
    # the per-question table, as the browser lays it out: a row per question of the questions file, its
    # status at each budget the budget file's
    asked = [json.loads(ln)["id"] for ln in (run_dir.parent / "q.jsonl").open()]
    rows = result["questions"]["questions-tiny"]
    assert [r[0] for r in rows] == [f"row-q-tiny-{q}" for q in asked]
    for label, col in (("4", 5), ("all", 6)):
        status = {(d := json.loads(ln))["id"]: d["status"]
                  for ln in (run_dir / "scenes" / "tiny" / f"{label}_frame.jsonl").open()}
        assert [r[col].split()[0] for r in rows] == [status[q] for q in asked]
    assert len(result["images"]) >= 6 and len(result["links"]) >= 10
    assert any("questions/q1/4.jpg" in i["src"] for i in result["images"])
    assert [i["src"] for i in result["images"] if not i["ok"]] == []
    assert [a["href"] for a in result["links"] if not a["ok"]] == []
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "index.png"
    r = subprocess.run([exe, *flags, "--hide-scrollbars", "--window-size=1280,1600", f"--screenshot={shot}",
                        (run_dir / "index.html").as_uri()], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    img = cv2.imread(str(shot))
    assert img is not None and img.shape[:2] == (1600, 1280) and img.std() > 10
