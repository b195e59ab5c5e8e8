"""Benchmark: ``--occlusion mesh`` against ``--occlusion boxes`` CPU on ScanNet scene0000_00, in one run.

The scene: ScanNet's scene0000_00 as tests/data/mmdet3d-scannet holds it (real vertices with
their instance ids, the real annotation's boxes, the real 1296x968 colour camera), imported with
``vistest import scannet`` like a user's scan. Two things are NOT the real scan, and the output
says so:

* **the faces**: mmdetection3d publishes the vertices of ``scene0000_00_vh_clean_2.ply`` without
  its faces, and no public repository we searched has them. Two stand-ins are measured, each
  :func:`vistest.synthetic.surface_from_points` (manifold-like, about two triangles per
  vertex): over the real 81,369 vertices (154,943 triangles: the real mesh's structure), and over
  those plus the centroids of the stand-in's largest triangles (``--dense``, default 290,000: the
  issue's "290k-triangle" figure taken as the face count, an upper bound if it counted both
  windings of ~145k faces; the same surface, finer). The z-buffer's cost grows with the
  triangles in view;
* **the poses**: the sample has three; the benchmark walks ``--frames`` poses (default 600)
  around the room at 1.5 m, turning to look around (the issue's measurement used 600 real poses).

Printed, per stand-in: CPU seconds (user + system, every thread, measured in the child: robust to
other jobs on the machine, unlike wall time) of the ``vistest visibility`` command in each mode,
``--repeats`` runs of each, interleaved (boxes, mesh, boxes, mesh, ...) after one warm-up run per
mode so that Numba's cache is filled; the ratio mesh / boxes of each pair (target <= 2), as
median [min-max]; the z-buffer kernel alone in this process (ms per frame); and the previous mesh
mode's renderer (pyrender's depth pass of the two-sided mesh, on ``--ref-frames`` frames, scaled
to all frames) for the before figure.

    python bench/visibility_mesh.py [--frames 600] [--repeats 5] [--dense 290000] [--ref-frames 10]
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import vistest  # noqa: F401  (sets PYOPENGL_PLATFORM)
from vistest.datasets import import_scene
from vistest.datasets.common import read_pickle
from vistest.synthetic import surface_from_points
from vistest.geometry import look_at
from vistest.scene import Scene
from vistest.visibility.table import DEFAULT_NEAR, default_scale, frame_cameras, load_scene_mesh

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "mmdet3d-scannet"
INST = DATA / "scannet_train_instance_data"


def _txt(path: Path, m) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(" ".join(f"{v:f}" for v in row) for row in np.asarray(m)) + "\n")


def walk(aligned_vertices: np.ndarray, n: int) -> list[np.ndarray]:
    """``n`` camera-to-world poses (axis-aligned world, OpenCV axes): an ellipse at 35% of the
    room's half-extents around its middle, 1.5 m high, turning 2.5 times while it goes round once,
    looking 22 degrees down."""
    lo, hi = np.percentile(aligned_vertices[:, :2], [5, 95], axis=0)
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    poses = []
    for i in range(n):
        a = 2 * np.pi * i / n
        eye = np.array([mid[0] + 0.35 * half[0] * np.cos(a), mid[1] + 0.35 * half[1] * np.sin(a), 1.5])
        yaw = a + 2.5 * 2 * np.pi * i / n
        poses.append(look_at(eye, eye + np.array([np.cos(yaw), np.sin(yaw), -0.4])))
    return poses


def scan_vertices() -> tuple[dict, np.ndarray, np.ndarray]:
    """The sample's info record, its vertices in the raw scan world (V, 3) and axis-aligned (V, 3)."""
    d = read_pickle(DATA / "scannet_infos.pkl", "mmdetection3d info pickle")[0]
    inv = np.linalg.inv(np.asarray(d["annos"]["axis_align_matrix"], float))
    aligned = np.load(INST / "scene0000_00_vert_all.npy")[:, :3].astype(float)
    return d, aligned, aligned @ inv[:3, :3].T + inv[:3, 3]


def denser_points(points: np.ndarray, faces: np.ndarray, triangles: int) -> np.ndarray:
    """``points`` plus the centroids of the largest triangles of ``faces``, as many as a
    :func:`surface_from_points` mesh of about ``triangles`` triangles needs (it makes about 1.95
    per vertex at this density): the same surface, finer where the stand-in's triangles are large."""
    p = points[faces]
    area = np.linalg.norm(np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]), axis=1)
    extra = max(int(triangles / 1.95) - len(points), 0)
    largest = np.sort(np.argsort(-area, kind="stable")[:extra])
    return np.concatenate([points, p[largest].mean(1)])


def build_scan(root: Path, frames: int, points: np.ndarray, faces: np.ndarray) -> Path:
    """A ScanNet scan folder (pose, intrinsic, .txt, mesh, segs, aggregation) of the sample with the
    mesh ``points`` (raw scan world; the first ones the sample's vertices, any further ones take the
    instance id of their nearest sample vertex), ``faces`` and the walk."""
    from scipy.spatial import cKDTree
    import trimesh

    d, aligned, raw = scan_vertices()
    align = np.asarray(d["annos"]["axis_align_matrix"], float)
    inv = np.linalg.inv(align)
    ins = np.load(INST / "scene0000_00_ins_label_all.npy")
    ins = np.concatenate([ins, ins[cKDTree(raw).query(points[len(raw):])[1]]]).astype(int)
    scan = root / "scan"
    scan.mkdir(parents=True)
    trimesh.Trimesh(points, faces, process=False).export(scan / "scene0000_00_vh_clean_2.ply")
    for i, pose in enumerate(walk(aligned, frames)):
        _txt(scan / "pose" / f"{i}.txt", inv @ pose)
    _txt(scan / "intrinsic" / "intrinsic_color.txt", d["intrinsics"])
    _txt(scan / "intrinsic" / "intrinsic_depth.txt", d["intrinsics"])
    (scan / "scene0000_00.txt").write_text("axisAlignment = " + " ".join(f"{v:.6f}" for v in align.ravel())
                                           + "\ncolorWidth = 1296\ncolorHeight = 968\n")
    (scan / "scene0000_00_vh_clean_2.0.010000.segs.json").write_text(json.dumps({"segIndices": ins.tolist()}))
    idx = np.load(INST / "scene0000_00_bbox_idx.npy").astype(int)
    groups = [{"objectId": int(i), "label": str(n), "segments": [int(i)]} for i, n in zip(idx, d["annos"]["name"])]
    (scan / "scene0000_00.aggregation.json").write_text(json.dumps({"sceneId": "scene0000_00", "segGroups": groups}))
    return scan


def cli_cpu(scene_json: Path, mode: str, out: Path) -> float:
    """CPU seconds (user + system) of ``vistest visibility --occlusion MODE`` in a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "vistest.cli", "visibility", str(scene_json), "-o", str(out),
                    "--occlusion", mode, "--quiet"], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def kernel_cpu(scene: Scene, repeats: int) -> list[float]:
    """CPU seconds of the mesh z-buffer alone (:meth:`SceneMesh.render` over all frames, this process)."""
    mesh = load_scene_mesh(scene)
    w2c, kin = frame_cameras(scene, scene.frames)
    valid = np.array([f.valid for f in scene.frames])
    ws, hs = (max(1, round(n * default_scale(scene.image_size))) for n in scene.image_size)
    mesh.render(w2c[:4], kin[:4], valid[:4], scene.image_size, (ws, hs), DEFAULT_NEAR)  # load / compile
    out = []
    for _ in range(repeats):
        t0 = time.process_time()
        mesh.render(w2c, kin, valid, scene.image_size, (ws, hs), DEFAULT_NEAR)
        out.append(time.process_time() - t0)
    return out


def pyrender_cpu(scene: Scene, frames: int, size: tuple[int, int]) -> float:
    """CPU seconds of the previous mesh mode's depth renderer (pyrender, two-sided mesh, working grid)
    on the first ``frames`` frames, creation of its GL context included."""
    from vistest.visibility.render import MeshDepthRenderer

    t0 = time.process_time()
    r = MeshDepthRenderer(scene.path(scene.mesh), *size, near=1e-3)
    try:
        k = scene.camera.scaled(size[0] / scene.image_size[0], size[1] / scene.image_size[1])
        for f in scene.frames[:frames]:
            r.render(f.camera_to_world, k)
    finally:
        r.close()
    return time.process_time() - t0


def spread(xs: list[float], fmt: str = ".2f") -> str:
    """``median [min-max]`` of ``xs``."""
    return f"{np.median(xs):{fmt}} [{min(xs):{fmt}}-{max(xs):{fmt}}]"


def measure(root: Path, label: str, points: np.ndarray, faces: np.ndarray, args) -> None:
    """Build, import and time one stand-in: ``--repeats`` interleaved (boxes, mesh) command pairs
    after one warm-up of each, the ratio per pair, and the kernel alone; print the figures."""
    scan = build_scan(root, args.frames, points, faces)
    scene_json = import_scene("scannet", scan, root / "scene")
    scene = Scene.load(scene_json)
    for mode in ("boxes", "mesh"):  # warm-up: Numba's on-disk cache, the file system's
        cli_cpu(scene_json, mode, root / f"{mode}.npz")
    boxes, mesh = [], []
    for _ in range(args.repeats):
        boxes.append(cli_cpu(scene_json, "boxes", root / "boxes.npz"))
        mesh.append(cli_cpu(scene_json, "mesh", root / "mesh.npz"))
    ratio = [m / b for m, b in zip(mesh, boxes)]
    kernel = [t / len(scene.frames) * 1000 for t in kernel_cpu(scene, args.repeats)]
    print(f"{label}: {len(faces):,} triangles over {len(points):,} vertices, two-sided "
          f"(median [min-max] of {args.repeats} interleaved runs)")
    print(f"  vistest visibility CPU: boxes {spread(boxes)} s, mesh {spread(mesh)} s")
    print(f"  ratio mesh / boxes: {spread(ratio)} (target <= 2)")
    print(f"  z-buffer kernel alone: {spread(kernel)} ms per frame")
    if args.ref_frames > 0:
        n = min(args.ref_frames, len(scene.frames))
        ws, hs = (max(1, round(k * default_scale(scene.image_size))) for k in scene.image_size)
        py = pyrender_cpu(scene, n, (ws, hs))
        print(f"  before: pyrender depth pass of the same mesh (the previous mesh mode's renderer): {py:.2f} s CPU "
              f"for {n} frames, ~{py / n * len(scene.frames):.1f} s for {len(scene.frames)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=600)
    ap.add_argument("--repeats", type=int, default=5, help="interleaved timed runs per mode (medians count)")
    ap.add_argument("--dense", type=int, default=290_000, help="triangles of the second, denser stand-in (0: skip)")
    ap.add_argument("--ref-frames", type=int, default=10, help="frames the pyrender depth pass renders (0: skip)")
    args = ap.parse_args()
    _, _, raw = scan_vertices()
    faces = surface_from_points(raw)
    meshes = [("stand-in over the real vertices", raw, faces)]
    if args.dense > 0:
        dense = denser_points(raw, faces, args.dense)
        meshes.append(("denser stand-in (the issue's 290k-triangle size)", dense, surface_from_points(dense)))
    print(f"scene: ScanNet scene0000_00 (real vertices, instance ids, boxes, camera), {args.frames} walk poses "
          f"at 1296x968; stand-in meshes from surface_from_points (NOT the real faces)")
    for n, (label, points, f) in enumerate(meshes):
        root = Path(tempfile.mkdtemp(prefix=f"vistest-bench-mesh{n}."))
        try:
            measure(root, label, points, f, args)
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
