"""Compiling the Numba kernels before anyone waits on them, and saying so when they must (issue #47).

Numba compiles a kernel the first time it is called and keeps the machine code in its on-disk
cache (:func:`vistest.visibility.raster.njit_cached`); every later process loads it in well under
a second. The first compile is long (:data:`ESTIMATE_S`, most of it the one parallel visibility
kernel), so it is done at set-up: ``make setup`` and ``vistest compile`` run :func:`compile_kernels`.
Where it was not (``pip install`` then ``vistest run``), :func:`ensure_compiled` runs before the
kernels are first used: when Numba's cache holds no current code for a kernel the run needs, it
writes one line on stderr, ``vistest: compiling the visibility kernels (first run only, about N s) ...``,
then a line every :data:`HEARTBEAT_S` seconds (``compiling: step i of n (what), T s elapsed``), and
the time it took at the end. The line is written even under ``--quiet``: a silent minute reads as a
hang.

A kernel "needs compiling" when it has no specialisation in this process and Numba's cache index
for it is missing or stale (its source changed; Numba's own check, ``_load_index``: the index is
keyed by the source file's stamp); where the cache cannot be written at all (a read-only install,
:func:`~vistest.visibility.raster.njit_cached`'s warning) it is compiled again in every process,
and the line says so each time.

The warm-up runs the real entry points on a tiny in-memory scene (2 frames, 3 boxes, 32 x 24
pixels; a cube mesh), so it compiles exactly the specialisations a run uses: every caller goes
through one typed wrapper (:func:`~vistest.visibility.raster.visibility_kernel`), one
specialisation for all occlusion modes and the overlay's labels.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Callable, Sequence

import numpy as np

# CPU seconds the steps take on an empty cache, measured on the 2-core development machine (README
# "First run"; bench/first_run.py measures it again): the estimate the message gives. Wall time is
# about this on an idle machine (the compiler runs on one core), longer on a busy one.
STEP_ESTIMATE_S = {"boxes": 35.0, "mesh": 7.0}
ESTIMATE_S = sum(STEP_ESTIMATE_S.values())
HEARTBEAT_S = 10.0  # seconds between the progress lines while compiling
_warming: list[bool] = []  # set while compile_kernels runs: the warm-up's own calls check nothing


def _dispatchers(step: str) -> list:
    """The top-level kernel of a step (its callees, and the mesh step's block kernels, compile with it)."""
    from . import raster, zbuffer

    if step == "boxes":
        return [raster.visibility_kernel_jit, raster.containment_kernel]
    return [zbuffer.zbuffer_kernel]


def is_compiled(dispatcher) -> bool:
    """Has ``dispatcher`` code in this process, or current code in Numba's on-disk cache?"""
    if dispatcher.signatures:
        return True
    try:
        return bool(dispatcher._cache._cache_file._load_index())
    except Exception:  # NullCache (nowhere to cache), or Numba's internals moved: assume a compile
        return False


def steps_to_compile(occlusion: str | None = None) -> list[str]:
    """The steps whose kernels need compiling: for ``occlusion`` (a resolved mode: ``mesh`` needs
    the z-buffer too), or every step when None."""
    wanted = list(STEP_ESTIMATE_S) if occlusion is None or occlusion == "mesh" else ["boxes"]
    return [s for s in wanted if not all(is_compiled(d) for d in _dispatchers(s))]


def _tiny_scene():
    """2 frames (the camera at the origin, OpenCV axes = world axes; one frame without a pose) x 3
    boxes 3 m ahead (the third inside the second), 32 x 24 pixels."""
    from ..scene import FORMAT, Scene

    eye = np.eye(4).tolist()
    boxes = [([-0.8, 0.0, 3.0], [0.6, 0.6, 0.6]), ([0.6, 0.0, 3.0], [1.0, 1.0, 1.0]), ([0.6, 0.0, 3.0], [0.3] * 3)]
    return Scene.from_dict({
        "format": FORMAT, "scene_id": "compile", "fps": 30.0, "image_size": [32, 24],
        "camera": {"fx": 24.0, "fy": 24.0, "cx": 15.5, "cy": 11.5},
        "frames": [{"index": 0, "time": 0.0, "camera_to_world": eye},
                   {"index": 1, "time": 1 / 30.0, "camera_to_world": None}],
        "objects": [{"id": str(i), "label": "box", "center": c, "size": sz, "rotation": np.eye(3).tolist()}
                    for i, (c, sz) in enumerate(boxes)]})


def _warm_boxes() -> None:
    """Every visibility mode's kernel (one specialisation) and the containment kernel."""
    from .table import compute_visibility

    compute_visibility(_tiny_scene(), occlusion="boxes")


def _warm_mesh() -> None:
    """The mesh z-buffer, through the calls :func:`~vistest.visibility.table.load_scene_mesh` and
    :meth:`~vistest.visibility.table.SceneMesh.render` make, on a unit cube's 12 triangles."""
    from ..geometry import box_corners
    from .table import SceneMesh, frame_cameras
    from .zbuffer import face_blocks

    verts = np.ascontiguousarray(box_corners(np.array([[0.0, 0.0, 3.0]]), np.ones((1, 3)), np.eye(3)[None])[0],
                                 np.float64)
    faces = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1], [2, 3, 7], [2, 7, 6],
                      [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]], np.int64)
    vorder, sorted_faces, _forder, blocks = face_blocks(verts, faces)
    mesh = SceneMesh(np.ascontiguousarray(verts[vorder]), sorted_faces, np.full(len(faces), -1, np.int32), False,
                     np.zeros(1, bool), blocks)
    scene = _tiny_scene()
    w2c, kin = frame_cameras(scene, scene.frames)
    mesh.render(w2c, kin, [f.valid for f in scene.frames], scene.image_size, (16, 12), 0.05)


WARM: dict[str, tuple[str, Callable[[], None]]] = {
    "boxes": ("box silhouettes and occlusion", _warm_boxes),
    "mesh": ("mesh z-buffer", _warm_mesh),
}


def _heartbeat(stop: threading.Event, state: dict, file) -> None:
    while not stop.wait(HEARTBEAT_S):
        file.write(f"vistest: compiling: step {state['i']} of {state['n']} ({state['what']}), "
                   f"{time.monotonic() - state['t0']:.0f} s elapsed of about {state['estimate']:.0f} s\n")
        file.flush()


def compile_kernels(steps: Sequence[str] | None = None, why: str = "first run only", file=None) -> float:
    """Compile (or load from the cache) the kernels of ``steps`` (default: every step), saying so on
    ``file`` (stderr): one line first with the estimate, a line every :data:`HEARTBEAT_S` seconds,
    one at the end. Returns the seconds it took."""
    file = file or sys.stderr
    steps = list(STEP_ESTIMATE_S) if steps is None else list(steps)
    estimate = sum(STEP_ESTIMATE_S[s] for s in steps)
    file.write(f"vistest: compiling the visibility kernels ({why}, about {estimate:.0f} s on an idle machine, "
               f"longer on a busy one; Numba caches them on disk) ...\n")
    file.flush()
    state = {"i": 0, "n": len(steps), "what": "", "t0": time.monotonic(), "estimate": estimate}
    cpu0 = time.process_time()
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(stop, state, file), daemon=True)
    beat.start()
    _warming.append(True)
    try:
        for i, step in enumerate(steps, 1):
            state["i"], state["what"] = i, WARM[step][0]
            WARM[step][1]()
    finally:
        _warming.pop()
        stop.set()
        beat.join()
    took = time.monotonic() - state["t0"]
    file.write(f"vistest: compiled the visibility kernels in {took:.0f} s ({time.process_time() - cpu0:.0f} s of "
               f"CPU; later runs load them from the cache)\n")
    file.flush()
    return took


def ensure_compiled(occlusion: str) -> float:
    """Before the kernels of a table in mode ``occlusion`` run: compile those not compiled yet,
    saying so (:func:`compile_kernels`); 0 when every one is. Returns the seconds it took."""
    if _warming:
        return 0.0
    steps = steps_to_compile(occlusion)
    return compile_kernels(steps) if steps else 0.0
