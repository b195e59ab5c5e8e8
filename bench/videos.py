"""Benchmark: a scene's variants written by vistest vs bare ffmpeg commands, and peak memory.

In one run, on a long, large synthetic video (ffmpeg ``testsrc2``, default 1296x968, 3000
frames at 30 fps) with a synthetic scene whose two objects are visible in known frame
ranges at known boxes:

1. **Time.** vistest writes the scene's variants (budget videos 16/32/64/all, and drop,
   black, mask dummies of two questions plus allblack) through ``write_plan``; then the
   bare ffmpeg commands producing the same frames (``select`` for budgets and drops,
   ``drawbox`` for black frames and masks, ``lavfi color`` for allblack), each decoding the
   source itself, run with the same libx264 settings and the same number of encoders at a
   time. Printed: both wall times and their ratio (target <= 1.2).
2. **Memory.** Peak RSS of the whole process tree (Python and every ffmpeg child), sampled
   every 20 ms from /proc, for the full video and for one a third as long (target: flat in
   length, <= 500 MB). Sums of RSS count the ffmpeg binary's shared pages once per process
   (an upper bound; PSS is not sampled: reading smaps stalls the measured processes).

    python bench/videos.py [--frames 3000] [--size 1296x968] [--preset medium] [--crf 18]
                           [--questions 2] [--max-memory 500] [--skip-bare]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vistest.budget.truth import budget_truth  # noqa: E402
from vistest.questions import parse_questions  # noqa: E402
from vistest.scene import Scene  # noqa: E402
from vistest.videos.write import is_long, plan_resources, write_plan  # noqa: E402
from vistest.videos.plan import EncoderSettings, file_key, plan_variants  # noqa: E402
from vistest.videos.ffmpeg import ffmpeg_exe, select_expr  # noqa: E402
from vistest.visibility.table import Visibility  # noqa: E402

FPS = 30


# ---------------------------------------------------------------------------------------
# the synthetic scene
# ---------------------------------------------------------------------------------------
def make_source(path: Path, size: tuple[int, int], frames: int) -> None:
    """A testsrc2 video (moving patterns, a frame counter), H.264 ultrafast: quick to make."""
    w, h = size
    subprocess.run([ffmpeg_exe(), "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=s={w}x{h}:r={FPS}",
                    "-frames:v", str(frames), "-c:v", "libx264", "-preset", "ultrafast", "-crf", "18",
                    "-pix_fmt", "yuv420p", str(path)], check=True)


def object_ranges(n: int, size: tuple[int, int]) -> list[tuple[str, list[tuple[int, int]], list[int]]]:
    """(label, visible frame ranges [a, b), fixed box [x0, y0, x1, y1]) of the two objects."""
    w, h = size
    s = n / 3000
    return [("chair", [(int(300 * s), int(900 * s)), (int(1800 * s), int(2100 * s))],
             [int(0.08 * w), int(0.12 * h), int(0.31 * w), int(0.52 * h)]),
            ("table", [(int(1200 * s), int(1500 * s))], [int(0.54 * w), int(0.31 * h), int(0.77 * w), int(0.72 * h)])]


def synthetic_scene(video: Path, size: tuple[int, int], n: int, questions: int):
    """(scene, visibility, questions): poses are valid placeholders; visibility is set by hand."""
    w, h = size
    objs = object_ranges(n, size)[:questions]
    doc = {"format": "vistest.scene/1", "scene_id": "bench", "video": video.name, "fps": float(FPS),
           "image_size": [w, h], "camera": {"fx": 0.8 * w, "fy": 0.8 * w, "cx": w / 2, "cy": h / 2},
           "frames": [{"index": i, "camera_to_world": np.eye(4).tolist()} for i in range(n)],
           "objects": [{"id": str(k + 1), "label": lab, "center": [k, 0, 1], "size": [0.5, 0.5, 0.5],
                        "rotation": np.eye(3).tolist()} for k, (lab, _, _) in enumerate(objs)]}
    scene = Scene.from_dict(doc, root=video.parent)
    visible = np.zeros((n, len(objs)))
    bbox = np.full((n, len(objs), 4), np.nan)
    for k, (_, ranges, box) in enumerate(objs):
        for a, b in ranges:
            visible[a:b, k] = 0.05
            bbox[a:b, k] = box
    vis = Visibility("bench", visible.copy(), visible, bbox, np.array([str(k + 1) for k in range(len(objs))]),
                     np.arange(n), np.ones(n, bool), {})
    lines = [json.dumps({"id": "count", "scene_id": "bench", "question_type": "object_counting",
                         "question": "How many chair(s) are in this room?", "category": "chair", "ground_truth": 1}),
             json.dumps({"id": "size", "scene_id": "bench", "question_type": "object_size_estimation",
                         "question": "How long is the table?", "objects": ["2"], "ground_truth": 100})]
    return scene, vis, parse_questions(lines[:questions], "bench", scene)


def build_plan(video: Path, size, n: int, questions: int, settings: EncoderSettings):
    scene, vis, qs = synthetic_scene(video, size, n, questions)
    truth = budget_truth(scene, vis, qs, budgets=(16, 32, 64, "all"))
    return plan_variants(scene, vis, qs, truth.selections, source=video, source_key=file_key(video), size=size,
                         settings=settings)


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
    until stopped (``include_root=False``: descendants only). Light: /proc/PID/statm only."""

    def __init__(self, root: int, period: float = 0.02, include_root: bool = True):
        super().__init__(daemon=True)
        self.root, self.period, self.include_root = root, period, include_root
        self.peak_rss = 0.0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            pids = [p for p in _tree(self.root) if self.include_root or p != self.root]
            self.peak_rss = max(self.peak_rss, sum(map(_rss_mb, pids)))
            time.sleep(self.period)

    def stop(self) -> "TreeMemory":
        self._done.set()
        self.join()
        return self


# ---------------------------------------------------------------------------------------
# the two ways of writing the variants
# ---------------------------------------------------------------------------------------
def run_vistest(video: Path, size, n: int, args, outdir: Path) -> tuple[float, TreeMemory, dict]:
    """Write the plan in a child process (so its whole tree is measured); (seconds, memory, report)."""
    cmd = [sys.executable, __file__, "--child", str(video), "--frames", str(n), "--size", f"{size[0]}x{size[1]}",
           "--preset", args.preset, "--crf", str(args.crf), "--questions", str(args.questions),
           "--max-memory", str(args.max_memory), "--out", str(outdir)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    mem = TreeMemory(proc.pid)
    mem.start()
    out, _ = proc.communicate()
    seconds = time.perf_counter() - t0
    mem.stop()
    if proc.returncode != 0:
        raise SystemExit(f"vistest child failed (exit {proc.returncode})")
    return seconds, mem, json.loads(out.strip().splitlines()[-1])


def bare_command(plan, v, out: Path, threads: int) -> list[str]:
    """A plain ffmpeg command producing the same frames as variant ``v`` from the source."""
    w, h = plan.size
    enc = ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-crf", str(plan.settings.crf), "-preset",
           plan.settings.preset, "-threads", str(threads), "-movflags", "+faststart"]
    rate = f"{v.fps:g}"
    if v.source_free:
        return [ffmpeg_exe(), "-v", "error", "-y", "-f", "lavfi", "-i", f"color=c=black:s={w}x{h}:r={rate}",
                "-frames:v", str(v.num_frames), *enc, str(out)]
    filters = []
    if len(v.frames) != plan.num_frames:
        filters.append(f"select='{select_expr(v.frames)}',setpts=N/({rate}*TB)")
    if v.black:
        filters.append(f"drawbox=x=0:y=0:w=iw:h=ih:color=black:t=fill:enable='{select_expr(v.black)}'")
    boxes: dict[tuple, list[int]] = {}
    for f, rects in v.masks:
        for r in rects:
            boxes.setdefault(r, []).append(f)
    for (x0, y0, x1, y1), fr in boxes.items():
        filters.append(f"drawbox=x={x0}:y={y0}:w={x1 - x0}:h={y1 - y0}:color=black:t=fill:"
                       f"enable='{select_expr(fr)}'")
    vf = ["-vf", ",".join(filters)] if filters else []
    return [ffmpeg_exe(), "-v", "error", "-y", "-i", plan.source, *vf, "-r", rate, "-fps_mode", "cfr", *enc,
            str(out)]


def run_bare(plan, res, outdir: Path) -> tuple[float, TreeMemory]:
    """The bare commands, ``res.jobs`` at a time with ``res.threads`` threads each."""
    cmds = [bare_command(plan, v, outdir / f"{k}.mp4", res.threads) for k, v in enumerate(plan.variants)]
    mem = TreeMemory(os.getpid(), include_root=False)
    mem.start()
    t0 = time.perf_counter()
    running: list[subprocess.Popen] = []
    for c in cmds:
        while len(running) >= res.jobs:
            running = [p for p in running if p.poll() is None]
            time.sleep(0.01)
        running.append(subprocess.Popen(c))
    for p in running:
        p.wait()
    seconds = time.perf_counter() - t0
    return seconds, mem.stop()


def child(args) -> None:
    """Build the plan and write it; print the report as JSON (run by :func:`run_vistest`)."""
    size = tuple(int(x) for x in args.size.split("x"))
    plan = build_plan(Path(args.child), size, args.frames, args.questions, EncoderSettings(args.crf, args.preset))
    rep = write_plan(plan, args.out, max_memory_mb=args.max_memory, progress=False)
    print(json.dumps({"passes": rep.passes, "written": len(rep.written), "jobs": rep.resources.jobs,
                      "threads": rep.resources.threads, "estimate_mb": rep.resources.estimate_mb,
                      "long": sum(map(is_long, plan.variants)), "variants": len(plan.variants),
                      "frames": sum(v.num_frames for v in plan.variants)}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=3000)
    ap.add_argument("--size", default="1296x968")
    ap.add_argument("--preset", default="medium")
    ap.add_argument("--crf", type=int, default=18)
    ap.add_argument("--questions", type=int, default=2, choices=(1, 2), help="questions with dummies (1 or 2)")
    ap.add_argument("--max-memory", type=float, default=500.0)
    ap.add_argument("--skip-bare", action="store_true", help="memory only: no bare ffmpeg timing")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    size = tuple(int(x) for x in args.size.split("x"))
    with tempfile.TemporaryDirectory(prefix="vistest-bench-") as tmp:
        tmp = Path(tmp)
        rows = []
        for n in (args.frames, args.frames // 3):
            video = tmp / f"src{n}.mp4"
            t0 = time.perf_counter()
            make_source(video, size, n)
            print(f"source: {size[0]}x{size[1]}, {n} frames, testsrc2 ({time.perf_counter() - t0:.1f} s to make)",
                  flush=True)
            secs, mem, rep = run_vistest(video, size, n, args, tmp / f"ours{n}")
            rows.append((n, secs, mem, rep))
            print(f"  vistest: {rep['variants']} variants ({rep['long']} long, {rep['frames']} frames in all), "
                  f"{rep['passes']} decode pass(es), {rep['jobs']} encoder(s) x {rep['threads']} thread(s): "
                  f"{secs:.1f} s; peak RSS {mem.peak_rss:.0f} MB (modelled "
                  f"{rep['estimate_mb']:.0f} MB)", flush=True)
            if n == args.frames and not args.skip_bare:
                plan = build_plan(video, size, n, args.questions, EncoderSettings(args.crf, args.preset))
                res = plan_resources(plan.size, args.preset, max(rep["long"], rep["variants"] - rep["long"]),
                                     max_memory_mb=args.max_memory)
                (tmp / "bare").mkdir()
                bsecs, bmem = run_bare(plan, res, tmp / "bare")
                print(f"  bare ffmpeg: {len(plan.variants)} commands, {res.jobs} at a time x {res.threads} "
                      f"thread(s): {bsecs:.1f} s; peak RSS {bmem.peak_rss:.0f} MB")
                print(f"  ratio vistest / bare ffmpeg: {secs / bsecs:.2f}x (target <= 1.2)", flush=True)
        (n1, _, m1, _), (n2, _, m2, _) = rows
        print(f"peak RSS: {m1.peak_rss:.0f} MB at {n1} frames, {m2.peak_rss:.0f} MB at {n2} frames "
              f"(ratio {m1.peak_rss / m2.peak_rss:.2f}; target: flat, <= 500 MB)")


if __name__ == "__main__":
    main()
