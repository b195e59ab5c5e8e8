"""Benchmark: a whole batch of scenes by `vistest batch` (local engine, Ray) against `make -j2 variants`.

In one run, on the same 8 small scenes (copies of the demo scene, default 320x240 and 90
frames, with the 12 demo questions; ``vistest.synth.demo.demo_batch``), each into a fresh
output folder, with the same `vistest run` options:

1. ``vistest batch SCENES -o OUT -j 2`` (local engine: 2 worker processes, 1 CPU per scene);
2. ``make -j2 variants SCENES=... OUT=...`` (the Makefile loop: one `vistest run` per scene,
   through bin/vistest-scene), the reference;
3. ``vistest batch SCENES -o OUT --engine ray`` on a Ray cluster of 2 CPUs started beforehand
   on 127.0.0.1 (its start-up time is printed apart: a cluster is started once for many batches).

Printed: wall time of each, and make's time divided by each (>= 1: the batch command is no
slower than make -j2; the issue's target). With ``--repeat N`` the three are run N times in
rotating order (the machine may be shared: a slow moment then hits each in turn) and the
median is printed. Also checked: every run lists the same videos in its manifest, and the local
and Ray runs wrote the same bytes (both 1 CPU per scene).

    python bench/batch.py [--scenes 8] [--frames 90] [--size 320x240] [--opts "--preset fast"]
                          [--repeat 1] [--skip-ray] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vistest.synth.demo import demo_batch, make_demo_scene  # noqa: E402

VISTEST = [sys.executable, "-m", "vistest.cli"]


def timed(cmd: list[str], env: dict | None = None) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return time.perf_counter() - t0


def manifest_paths(out: Path) -> list[str]:
    return sorted(json.loads(ln)["path"] for ln in (out / "manifest.jsonl").read_text().splitlines())


def video_bytes(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*.mp4"))}


def start_ray(tmp: Path, cpus: int):
    """A one-node Ray cluster of ``cpus`` CPUs on 127.0.0.1 (files under ``tmp``); (cluster, env)."""
    env = {"RAY_TMPDIR": str(tmp), "RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    os.environ.update(env)
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args=dict(
        num_cpus=cpus, object_store_memory=100 * 2**20, node_ip_address="127.0.0.1", include_dashboard=False))
    return cluster, {**os.environ, **env, "RAY_ADDRESS": cluster.address}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenes", type=int, default=8)
    ap.add_argument("--frames", type=int, default=90)
    ap.add_argument("--size", default="320x240")
    ap.add_argument("--opts", default="", help="extra `vistest run` options for every run")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each, in rotating order; the median is printed")
    ap.add_argument("--skip-ray", action="store_true")
    ap.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it")
    a = ap.parse_args()
    work = a.keep or Path(tempfile.mkdtemp(prefix="vistest-bench-batch-"))
    work.mkdir(parents=True, exist_ok=True)
    opts = shlex.split(a.opts)
    try:
        w, h = (int(v) for v in a.size.split("x"))
        src = make_demo_scene(work / "demo", num_frames=a.frames, size=(w, h), quiet=True)
        scenes = work / "scenes"
        shutil.rmtree(scenes, ignore_errors=True)
        demo_batch(src, ROOT / "examples" / "demo-questions.jsonl", scenes, [f"scene{k:02d}" for k in range(a.scenes)])
        names = ["local", "make"] + ([] if a.skip_ray else ["ray"])
        outs = {name: work / f"out-{name}" for name in names}
        print(f"{a.scenes} scenes ({w}x{h}, {a.frames} frames, 12 questions each), options: {a.opts or '(defaults)'}; "
              f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
        env, cluster, startup = None, None, 0.0
        if not a.skip_ray:
            t0 = time.perf_counter()
            cluster, env = start_ray(Path(tempfile.mkdtemp(prefix="vt-ray-", dir="/tmp")), cpus=2)
            startup = time.perf_counter() - t0
        commands = {
            "local": (VISTEST + ["batch", str(scenes), "-o", str(outs["local"]), "-j", "2", "--quiet", *opts], None),
            "make": (["make", "-C", str(ROOT), "-o", ".venv/.installed", "-j2", "variants", f"SCENES={scenes}",
                      f"OUT={outs['make']}", f"VARIANT_OPTS={a.opts}"], None),
            "ray": (VISTEST + ["batch", str(scenes), "-o", str(outs["ray"]), "--engine", "ray", "--quiet", *opts], env)}
        times: dict[str, list[float]] = {name: [] for name in names}
        try:
            for r in range(a.repeat):
                for name in names[r % len(names):] + names[:r % len(names)]:
                    shutil.rmtree(outs[name], ignore_errors=True)
                    times[name].append(timed(*commands[name]))
        finally:
            if cluster is not None:
                cluster.shutdown()
        med = {name: statistics.median(t) for name, t in times.items()}
        labels = {"local": "vistest batch -j2 (local engine)", "make": "make -j2 variants (reference)",
                  "ray": "vistest batch --engine ray (2 CPUs)"}
        print(f"{'run':<36} {'seconds':>8} {'make / this':>12}   runs")
        for name in names:
            runs = ", ".join(f"{t:.1f}" for t in times[name])
            print(f"{labels[name]:<36} {med[name]:8.1f} {med['make'] / med[name]:11.2f}x   {runs}")
        if cluster is not None:
            print(f"(Ray cluster start-up, once, not included above: {startup:.1f} s)")
        paths = {name: manifest_paths(outs[name]) for name in names}
        same = all(p == paths["make"] for p in paths.values())
        print(f"same videos listed in every manifest: {same} ({len(paths['make'])} videos)")
        if cluster is not None:
            print(f"local and Ray runs byte-identical: {video_bytes(outs['local']) == video_bytes(outs['ray'])}")
    finally:
        if a.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
