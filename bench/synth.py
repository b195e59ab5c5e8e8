"""Benchmark: `vistest synth --grid N` (render, visibility, questions, batch, exports, report) against the
demo scene's render, in one run.

1. the reference: ``vistest demo-scene`` (the furnished room, pyrender, with its depth frames) at the same
   size and frame count, in a fresh folder;
2. ``vistest synth --grid N -o OUT --frames F --size WxH -j J`` in a fresh folder.

Each runs as a child process; printed: its wall time, the peak resident memory of its largest process
(``ru_maxrss`` of the waited-for children: the largest single process, not their sum), its CPU seconds
(user + system of it and every process it waited for: the render workers, ffmpeg; what a shared machine's
load does not inflate as it does the wall time), the grid's time per scenario and per scenario divided by
the demo's render (the ratio; a shared machine slows both), each step's seconds (the grid's report.json),
per cell the questions (a scenario's mean, per level), and the time for ``--extrapolate`` scenarios at
this per-scenario rate (every step but the exports is per scenario; honest only while memory is no
limit), in wall time and as CPU seconds over 2 cores.

    python bench/synth.py [--n 12] [--frames 300] [--size 640x480] [--jobs 2] [--extrapolate 200] [--keep DIR]
                          [--grid-args "--dummy-budgets 16"] [--reuse]

``--reuse`` (with ``--keep``): the grid without ``--force``, so a run cut short goes on where it stopped
(rendered scenarios whose stamp is current and their visibility tables are kept); its times are then the
rest's, not the whole's.

Also printed: the grid folder's size on disk, and its dummies' (run/dummy_*/).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VISTEST = [sys.executable, "-m", "vistest.cli"]


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run(cmd: list[str]) -> tuple[float, float, float]:
    """(wall seconds, peak RSS in MiB of the largest process so far among waited-for children, CPU seconds
    of ``cmd`` and the processes it waited for)."""
    t0, c0 = time.perf_counter(), _cpu()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}")
    return time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, _cpu() - c0


def disk_gb(folder: Path) -> float:
    """Bytes of the files under ``folder`` (GB, 1e9)."""
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(folder) for f in files) / 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=12, help="scenarios (12: one per cell)")
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--size", default="640x480")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--extrapolate", type=int, default=200)
    ap.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it")
    ap.add_argument("--grid-args", default="", help="more options of vistest synth --grid (one string)")
    ap.add_argument("--reuse", action="store_true", help="keep what an earlier run in --keep rendered")
    a = ap.parse_args()
    if a.reuse and not a.keep:
        ap.error("--reuse needs --keep (the folder of the run to go on with)")
    tmp = a.keep or Path(tempfile.mkdtemp(prefix="bench-synth."))
    tmp.mkdir(parents=True, exist_ok=True)
    t_demo, m_demo, c_demo = run(VISTEST + ["demo-scene", str(tmp / "demo"), "--frames", str(a.frames),
                                            "--size", a.size, "--force", "--quiet"])
    t_grid, m_grid, c_grid = run(VISTEST + ["synth", "--grid", str(a.n), "-o", str(tmp / "grid"),
                                            "--frames", str(a.frames), "--size", a.size, "-j", str(a.jobs),
                                            *([] if a.reuse else ["--force"]), "--quiet",
                                            *shlex.split(a.grid_args)])
    rep = json.loads((tmp / "grid" / "report.json").read_text())
    per = t_grid / a.n
    print(f"demo-scene render ({a.size}, {a.frames} frames): {t_demo:.1f} s, {c_demo:.1f} CPU s, "
          f"peak RSS {m_demo:.0f} MiB")
    print(f"synth --grid {a.n} -j {a.jobs} {a.grid_args}: {t_grid:.1f} s ({per:.1f} s per scenario, "
          f"{per / t_demo:.2f} x the demo's render), {c_grid:.1f} CPU s ({c_grid / a.n:.1f} per scenario), "
          f"peak RSS of one process {m_grid:.0f} MiB")
    dummies = sum(disk_gb(d) for d in (tmp / "grid" / "run").glob("dummy_*"))
    print(f"disk: {disk_gb(tmp / 'grid'):.1f} GB, of which the dummies {dummies:.1f} GB")
    print("steps (s): " + ", ".join(f"{k} {v:.1f}" for k, v in rep["seconds"].items()))
    print(f"questions: {sum(sum(c['questions'].values()) for c in rep['cells'].values())}")
    for cell, row in rep["cells"].items():
        levels = " / ".join(str(v) for v in row["levels"].values())
        print(f"  {cell}: {row['scenarios']} scenarios, {sum(row['questions'].values())} questions "
              f"({row['per_scenario']:g} a scenario; L1 / L2 / L3 {levels}), dedicated "
              f"{row['dedicated']['type']} {row['dedicated']['questions']}")
    print(f"extrapolated: {a.extrapolate} scenarios ~ {per * a.extrapolate / 60:.0f} min at this wall rate, "
          f"~ {c_grid / a.n * a.extrapolate / 2 / 60:.0f} min if their CPU seconds kept 2 cores busy")
    print(f"outputs: {tmp}")


if __name__ == "__main__":
    main()
