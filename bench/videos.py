"""Benchmark: what `vistest run` costs against one decode of its source and against plain ffmpeg.

In one run, for

  (a) the demo scene (640x480, 300 frames; `vistest demo-scene`) with its 12 questions, and
  (b) a synthetic 1296x968, 3000-frame scene (the demo room's boxes and camera walk, slowed
      down; a testsrc2 video) with 30 questions,

it measures, each in a fresh output folder with the default options (so visibility, budget
ground truth, budget videos, budget dummies of every mode, all_frame and the manifest):

1. **decode**: one bare `ffmpeg -i SRC -f null -` of the source (wall time, median of 3, and
   its CPU time: on a shared machine wall times move with the load, CPU times much less);
2. **vistest**: `vistest run SCENE QUESTIONS -o OUT` in a child process: wall time, the frames
   it encoded (its summary line), the peak RSS of its whole process tree (Python, the
   visibility worker, every ffmpeg), sampled every 20 ms from /proc, and its CPU time;
3. **plain ffmpeg**: for every video of the manifest, the plain ffmpeg command writing the
   same file from the source (`select` for the frames, `drawbox` for black frames and masks,
   `-c copy` where vistest stream-copies, lavfi `color` for all-black videos; libx264 with
   the manifest's settings, `-g 1` for the all-intra n-frame videos), each decoding the source
   itself, `os.cpu_count()` at a time. For (b) the commands are timed on a sample of each kind
   of video (``--plain-sample`` per kind) and the total extrapolated by kind (printed as such).

It prints vistest / decode (targets: (a) <= 20, (b) <= 10), vistest / plain ffmpeg (<= 1.2),
and the peak RSS (<= 500 MB) of (b) at 3000 and at 1000 frames (flat in video length). The
machine's load (`uptime`) is printed before and after: on a shared machine the ratios move.

    python bench/videos.py [--only a|b] [--frames 3000] [--size 1296x968] [--questions 30]
                           [--plain-sample 6] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vistest.synth.demo import camera_path, demo_intrinsics, furniture  # noqa: E402
from vistest.scene import Frame, Scene, SceneObject  # noqa: E402
from vistest.videos.ffmpeg import ffmpeg_exe, select_expr  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FPS = 30


# ---------------------------------------------------------------------------------------
# memory of a process tree
# ---------------------------------------------------------------------------------------
PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20


def _tree(root: int) -> list[int]:
    """``root`` and its descendants, from /proc/PID/task/TID/children (cheap: no scan of /proc)."""
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            continue
    return out


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE_MB
    except (OSError, IndexError, ValueError):
        return 0.0


class TreeMemory(threading.Thread):
    """Samples the summed RSS (MB) of ``root`` and its descendants every ``period`` seconds
    until stopped. Sums of RSS count the ffmpeg binary's shared pages once per process (an
    upper bound; PSS is not sampled: reading smaps stalls the measured processes)."""

    def __init__(self, root: int, period: float = 0.02):
        super().__init__(daemon=True)
        self.root, self.period = root, period
        self.peak_rss = 0.0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            self.peak_rss = max(self.peak_rss, sum(map(_rss_mb, _tree(self.root))))
            time.sleep(self.period)

    def stop(self) -> "TreeMemory":
        self._done.set()
        self.join()
        return self


# ---------------------------------------------------------------------------------------
# the scenes
# ---------------------------------------------------------------------------------------
def demo_scene(folder: Path) -> tuple[Path, Path]:
    """(scene.json, questions) of (a): `vistest demo-scene` (rendered once, then reused)."""
    subprocess.run([sys.executable, "-m", "vistest.cli", "demo-scene", str(folder), "--quiet"], check=True,
                   stdout=subprocess.DEVNULL)
    return folder / "scene.json", ROOT / "examples" / "demo-questions.jsonl"


def make_source(path: Path, size: tuple[int, int], frames: int) -> None:
    """A testsrc2 video (moving patterns, a frame counter), H.264 ultrafast: quick to make (and,
    being simple to decode, a demanding reference for the ratio)."""
    w, h = size
    subprocess.run([ffmpeg_exe(), "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=s={w}x{h}:r={FPS}",
                    "-frames:v", str(frames), "-c:v", "libx264", "-preset", "ultrafast", "-crf", "18",
                    "-pix_fmt", "yuv420p", str(path)], check=True)


def synthetic_questions(scene: Scene, count: int) -> list[dict]:
    """``count`` VSI-Bench-style questions about the scene's objects: counting per label, then
    object sizes, then distances between consecutive objects (ground truths from the boxes)."""
    qs = []
    labels = sorted({o.label for o in scene.objects})
    for lab in labels:
        n = sum(o.label == lab for o in scene.objects)
        qs.append({"question_type": "object_counting", "question": f"How many {lab}(s) are in this room?",
                   "category": lab, "ground_truth": str(n)})
    for o in scene.objects:
        qs.append({"question_type": "object_size_estimation",
                   "question": f"What is the length of the longest dimension of the {o.label} {o.id}, in cm?",
                   "objects": [o.id], "ground_truth": str(int(round(100 * float(np.max(o.size)))))})
    objs = list(scene.objects)
    for a, b in zip(objs, objs[1:] + objs[:1]):
        qs.append({"question_type": "object_abs_distance",
                   "question": f"What is the distance between the {a.label} {a.id} and the {b.label} {b.id} (m)?",
                   "objects": [a.id, b.id],
                   "ground_truth": f"{float(np.linalg.norm(np.asarray(a.center) - np.asarray(b.center))):.2f}"})
    if len(qs) < count:
        raise SystemExit(f"the synthetic scene yields {len(qs)} questions, {count} asked")
    return [{"id": f"b-{k + 1}", "scene_id": scene.scene_id, **q} for k, q in enumerate(qs[:count])]


def synthetic_scene(folder: Path, size: tuple[int, int], frames: int, questions: int) -> tuple[Path, Path]:
    """(scene.json, questions) of (b): the demo room's boxes and camera walk over ``frames``
    frames at ``size``, with a testsrc2 video (vistest never looks at what the pixels show)."""
    folder.mkdir(parents=True, exist_ok=True)
    make_source(folder / "video.mp4", size, frames)
    boxes = furniture(np.random.default_rng(0))
    poses = camera_path(boxes, frames)
    scene = Scene(scene_id="bench", fps=float(FPS), image_size=tuple(size), camera=demo_intrinsics(size),
                  frames=tuple(Frame(index=i, time=i / FPS, camera_to_world=poses[i]) for i in range(frames)),
                  objects=tuple(SceneObject(str(k + 1), b.label, b.center, b.size, b.rotation)
                                for k, b in enumerate(boxes)),
                  video="video.mp4", root=folder)
    scene.save(folder / "scene.json")
    qpath = folder / "questions.jsonl"
    qpath.write_text("".join(json.dumps(q) + "\n" for q in synthetic_questions(scene, questions)))
    return folder / "scene.json", qpath


# ---------------------------------------------------------------------------------------
# the three measurements
# ---------------------------------------------------------------------------------------
def children_cpu() -> float:
    """CPU seconds (user + system) of every reaped child process (and theirs) so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def decode_seconds(source: Path, repeat: int = 3) -> tuple[list[float], list[float]]:
    """(wall seconds, CPU seconds) of each of ``repeat`` bare decodes."""
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), children_cpu()
        subprocess.run([ffmpeg_exe(), "-v", "error", "-i", str(source), "-f", "null", "-"], check=True)
        wall.append(time.perf_counter() - t0)
        cpu.append(children_cpu() - c0)
    return wall, cpu


def run_vistest(scene_json: Path, questions: Path, out: Path) -> tuple[float, float, int, str, float]:
    """(seconds, peak RSS MB, frames encoded, summary line, CPU seconds of the whole tree) of
    `vistest run` into a fresh ``out``."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "vistest.cli", "run", str(scene_json), str(questions), "-o", str(out)]
    t0, c0 = time.perf_counter(), children_cpu()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "COLUMNS": "200"})
    mem = TreeMemory(proc.pid)
    mem.start()
    _, err = proc.communicate()
    seconds = time.perf_counter() - t0
    mem.stop()
    if proc.returncode != 0:
        raise SystemExit(f"vistest run failed (exit {proc.returncode}):\n{err[-3000:]}")
    line = next((ln for ln in err.splitlines() if "videos written" in ln), "")
    m = re.search(r"(\d+) frames encoded", line)
    return seconds, mem.peak_rss, int(m.group(1)) if m else -1, line.strip(), children_cpu() - c0


def plain_command(rec: dict, out: Path) -> list[str]:
    """The plain ffmpeg command writing the same file as manifest record ``rec``."""
    ff = [ffmpeg_exe(), "-v", "error", "-y"]
    if rec["encoding"] == "stream-copy":
        return ff + ["-i", rec["source"], "-map", "0:v:0", "-c", "copy", "-movflags", "+faststart", str(out)]
    w, h = rec["size"]
    rate = f"{rec['fps']:g}"
    enc = ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-crf", str(rec["crf"]), "-preset", rec["preset"],
           "-movflags", "+faststart"] + (["-g", "1"] if rec["encoding"] == "x264-intra" else [])
    if rec["source_key"] is None:  # every frame black
        return ff + ["-f", "lavfi", "-i", f"color=c=black:s={w}x{h}:r={rate}", "-frames:v", str(rec["num_frames"]),
                     *enc, str(out)]
    filters = []  # on the decoded frames (n = source frame number), then the selection
    if rec["black_frames"]:
        filters.append(f"drawbox=x=0:y=0:w=iw:h=ih:color=black:t=fill:enable='{select_expr(rec['black_frames'])}'")
    boxes: dict[tuple, list[int]] = {}
    for f, x0, y0, x1, y1 in rec["masks"]:
        boxes.setdefault((x0, y0, x1, y1), []).append(f)
    for (x0, y0, x1, y1), fr in boxes.items():
        filters.append(f"drawbox=x={x0}:y={y0}:w={x1 - x0}:h={y1 - y0}:color=black:t=fill:"
                       f"enable='{select_expr(fr)}'")
    if rec["length"] == "budget" or rec["source_frames"] != list(range(len(rec["source_frames"]))):
        filters.append(f"select='{select_expr(rec['source_frames'])}',setpts=N/({rate}*TB)")
    vf = ["-vf", ",".join(filters)] if filters else []
    return ff + ["-i", rec["source"], *vf, "-r", rate, "-fps_mode", "cfr", *enc, str(out)]


def kind_of(rec: dict) -> str:
    return f"{rec['encoding']} {rec['variant']} {rec.get('mode') or ''} {rec['length']}".strip()


def run_plain(records: list[dict], folder: Path, sample: int | None) -> tuple[float, int, int]:
    """(seconds, commands run, commands in all): the plain commands, cpu_count at a time; with
    ``sample``, at most that many of each kind of video are run and each kind's time is scaled
    by its count / sampled (extrapolated)."""
    folder.mkdir(parents=True, exist_ok=True)
    kinds: dict[str, list[dict]] = {}
    for r in records:
        kinds.setdefault(kind_of(r), []).append(r)
    total, ran = 0.0, 0
    for kind, recs in sorted(kinds.items()):
        chosen = recs if sample is None or len(recs) <= sample else \
            [recs[int(i)] for i in np.linspace(0, len(recs) - 1, sample)]
        cmds = [plain_command(r, folder / f"{k}.mp4") for k, r in enumerate(chosen)]
        t0 = time.perf_counter()
        running: list[subprocess.Popen] = []
        for c in cmds:
            while len(running) >= (os.cpu_count() or 1):
                running = [p for p in running if p.poll() is None]
                time.sleep(0.005)
            running.append(subprocess.Popen(c))
        for p in running:
            p.wait()
        total += (time.perf_counter() - t0) * len(recs) / len(chosen)
        ran += len(chosen)
    return total, ran, len(records)


def uptime() -> str:
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    return f"load average {', '.join(load)} on {os.cpu_count()} CPUs"


def bench_scene(name: str, scene_json: Path, questions: Path, work: Path, sample: int | None) -> dict:
    scene = Scene.load(scene_json)
    source = scene.path(scene.video)
    dec, dec_cpu = decode_seconds(source)
    d, dc = statistics.median(dec), statistics.median(dec_cpu)
    secs, rss, frames, line, cpu = run_vistest(scene_json, questions, work / f"{name}-run")
    records = [json.loads(ln) for ln in (work / f"{name}-run" / "manifest.jsonl").read_text().splitlines()]
    held = sum(r["num_frames"] for r in records)
    plain, ran, allc = run_plain(records, work / f"{name}-plain", sample)
    w, h = scene.image_size
    print(f"({name}) {w}x{h}, {scene.num_frames} frames, {sum(1 for _ in open(questions))} questions: "
          f"{len(records)} videos holding {held} frames", flush=True)
    print(f"    decode (ffmpeg -i SRC -f null -): {d:.2f} s (runs: {', '.join(f'{x:.2f}' for x in dec)}); "
          f"CPU {dc:.2f} s")
    print(f"    vistest run: {secs:.1f} s = {secs / d:.1f}x the decode; {frames} frames encoded; "
          f"peak RSS {rss:.0f} MB (whole tree); CPU {cpu:.1f} s = {cpu / dc:.1f}x the decode's CPU")
    print(f"        {line}")
    extra = "" if ran == allc else f" (timed {ran} of {allc} commands, extrapolated per kind of video)"
    print(f"    plain ffmpeg commands writing the same {allc} files: {plain:.1f} s{extra}; "
          f"vistest / plain = {secs / plain:.2f}x", flush=True)
    return {"decode": d, "vistest": secs, "rss": rss, "frames": frames, "plain": plain}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("a", "b"), default=None)
    ap.add_argument("--frames", type=int, default=3000)
    ap.add_argument("--size", default="1296x968")
    ap.add_argument("--questions", type=int, default=30)
    ap.add_argument("--plain-sample", type=int, default=6, help="(b): plain commands timed per kind of video")
    ap.add_argument("--keep", default=None, help="work folder to keep (default: a temporary one)")
    args = ap.parse_args()
    size = tuple(int(x) for x in args.size.split("x"))
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="vistest-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"before: {uptime()}", flush=True)
    try:
        if args.only in (None, "a"):
            scene_json, qs = demo_scene(work / "demo")
            a = bench_scene("a", scene_json, qs, work, None)
            print(f"    targets: vistest <= 20x the decode ({a['vistest'] / a['decode']:.1f}x), <= 1.2x plain "
                  f"ffmpeg ({a['vistest'] / a['plain']:.2f}x), peak RSS <= 500 MB ({a['rss']:.0f} MB)", flush=True)
        if args.only in (None, "b"):
            scene_json, qs = synthetic_scene(work / "synthetic", size, args.frames, args.questions)
            b = bench_scene("b", scene_json, qs, work, args.plain_sample)
            third = args.frames // 3
            scene_json3, qs3 = synthetic_scene(work / "synthetic-third", size, third, args.questions)
            secs3, rss3, frames3, _, _ = run_vistest(scene_json3, qs3, work / "b-third-run")
            print(f"    the same scene at {third} frames: vistest run {secs3:.1f} s, {frames3} frames encoded, "
                  f"peak RSS {rss3:.0f} MB")
            print(f"    targets: vistest <= 10x the decode ({b['vistest'] / b['decode']:.1f}x), <= 1.2x plain "
                  f"ffmpeg ({b['vistest'] / b['plain']:.2f}x), peak RSS <= 500 MB and flat in length "
                  f"({b['rss']:.0f} MB at {args.frames} frames, {rss3:.0f} MB at {third})", flush=True)
    finally:
        print(f"after: {uptime()}")
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
