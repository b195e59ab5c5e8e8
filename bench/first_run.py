"""Benchmark: the first `vistest run` (empty Numba cache) beside a warm one, and the run against one decode.

In one run, on the demo scene (640x480, 300 frames; `vistest demo-scene`) with its 12 questions and
`make demo`'s options (--budgets 16,32,64,all --profile uniform):

1. **compile**: `vistest compile` with an empty Numba cache (``NUMBA_CACHE_DIR`` a new temporary
   folder): what `make setup` adds, once;
2. **first run**: `vistest run` with another empty cache, as after `pip install` without set-up: it
   compiles what it needs first and says so on stderr (its "compiling" lines are counted);
3. **warm run**: `vistest run` again, the cache now full, into a new output folder (also with
   ``--no-pictures``: the pipeline without the page's pictures);
4. **decode**: one bare `ffmpeg -i video.mp4 -f null -` of the demo video (median of 3).

Rows 3 and 4 are measured in rounds (``--repeat N``), each a warm run, one with ``--no-pictures``
and three decodes, one after another: each ratio is the run against the decodes of its own round
(the machine's load moves both alike), and the median over the rounds is printed.

Each is a child process: wall time and CPU time (user + system of the process and its children:
on a shared machine wall times move with the load, CPU times much less). It prints them side by
side and the ratios warm run / decode (issue #47's target: <= 20) with and without pictures, in wall
and in CPU seconds. The machine's load (`uptime`) is printed before and after.

    python bench/first_run.py [--keep DIR] [--warm-only] [--repeat N]

``--warm-only``: rows 3 and 4 only (the run against one decode, the ratio issue #47 asks for), with
the Numba cache this checkout already has; ``--repeat N``: N rounds, medians kept (on a shared
machine one run's seconds move by 10-20%, one decode's by more).
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vistest.videos.ffmpeg import ffmpeg_exe

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "examples" / "demo-questions.jsonl"
RUN_OPTS = ["--budgets", "16,32,64,all", "--profile", "uniform"]


def vistest() -> list[str]:
    """The vistest command of this interpreter's environment."""
    exe = Path(sys.executable).with_name("vistest")
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "vistest.cli"]


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str], env: dict | None = None) -> tuple[float, float, str]:
    """(wall s, CPU s, stderr) of a child process; raises when it fails."""
    cpu0, t0 = children_cpu(), time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return wall, cpu, r.stderr


def uptime() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", default=None, help="work folder to keep (default: a temporary one, removed)")
    ap.add_argument("--warm-only", action="store_true", help="only the warm runs and the decode (this checkout's "
                                                              "Numba cache), not the compile and the first run")
    ap.add_argument("--repeat", type=int, default=1, help="warm runs of each kind (median kept)")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="vistest-first-run-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"load average before: {uptime()}; {os.cpu_count()} CPUs")
    try:
        timed(vistest() + ["demo-scene", str(work / "scene"), "--quiet"])
        scene = work / "scene" / "scene.json"
        rows = []
        env = None
        if not args.warm_only:
            env = dict(os.environ, NUMBA_CACHE_DIR=str(work / "cache-compile"))
            wall, cpu, _ = timed(vistest() + ["compile"], env)
            rows.append(("vistest compile (empty cache; make setup)", wall, cpu, ""))
            env = dict(os.environ, NUMBA_CACHE_DIR=str(work / "cache-run"))
            wall, cpu, err = timed(vistest() + ["run", str(scene), str(QUESTIONS), "-o", str(work / "first"),
                                                *RUN_OPTS], env)
            said = [ln for ln in err.splitlines() if "compil" in ln]
            rows.append(("vistest run, first (empty cache)", wall, cpu, f"{len(said)} 'compiling' line(s): "
                         + (said[0][:90] if said else "NONE")))

        rounds = []  # (warm run, warm run --no-pictures, decode), each (wall s, CPU s), one after another
        for k in range(max(1, args.repeat)):
            run = [*vistest(), "run", str(scene), str(QUESTIONS), *RUN_OPTS]
            warm = timed(run + ["-o", str(work / f"warm{k}")], env)[:2]
            bare = timed(run + ["-o", str(work / f"bare{k}"), "--no-pictures"], env)[:2]
            decodes = [timed([ffmpeg_exe(), "-v", "error", "-i", str(work / "scene" / "video.mp4"), "-f", "null",
                              "-"]) for _ in range(3)]
            rounds.append((warm, bare, (statistics.median(d[0] for d in decodes),
                                        statistics.median(d[1] for d in decodes))))

        def med(i: int, j: int) -> float:
            """The median over the rounds of item ``i``'s wall (``j`` 0) or CPU (1) seconds."""
            return statistics.median(r[i][j] for r in rounds)

        def ratio(i: int, j: int) -> float:
            """The median over the rounds of item ``i`` / the round's decode (wall: ``j`` 0, CPU: 1)."""
            return statistics.median(r[i][j] / r[2][j] for r in rounds)

        n = len(rounds)
        rows.append((f"vistest run, warm (median of {n})", med(0, 0), med(0, 1), ""))
        rows.append((f"vistest run, warm, --no-pictures (median of {n})", med(1, 0), med(1, 1), ""))
        rows.append((f"one decode of the demo video (median of {n}x3)", med(2, 0), med(2, 1), ""))
        print(f"{'':46s} {'wall s':>8s} {'CPU s':>8s}")
        for name, w, c, note in rows:
            print(f"{name:46s} {w:8.2f} {c:8.2f}  {note}")
        if not args.warm_only:
            print(f"first run / warm run: {rows[1][1] / med(0, 0):.1f}x wall, {rows[1][2] / med(0, 1):.1f}x CPU")
        for name, i in (("warm run", 0), ("warm run --no-pictures", 1)):
            print(f"{name} / one decode: {ratio(i, 0):.1f}x wall, {ratio(i, 1):.1f}x CPU (target <= 20x; median "
                  f"over {n} round(s) of the run against the decodes of its round; per round: "
                  + ", ".join(f"{r[i][0] / r[2][0]:.1f}" for r in rounds) + ")")
    finally:
        print(f"load average after: {uptime()}")
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
