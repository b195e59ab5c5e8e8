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

The warm-up (:data:`vistest.visibility.table.WARM`, passed in: the table's module asks this one
whether to compile, so this one imports nothing of the table's) runs the real entry points on a tiny
in-memory scene (2 frames, 3 boxes, 32 x 24 pixels; a cube mesh), so it compiles exactly the
specialisations a run uses: every caller goes through one typed wrapper
(:func:`~vistest.visibility.raster.visibility_kernel`), one specialisation for all occlusion modes
and the overlay's labels.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Callable, Mapping, Sequence

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


def _heartbeat(stop: threading.Event, state: dict, file) -> None:
    while not stop.wait(HEARTBEAT_S):
        file.write(f"vistest: compiling: step {state['i']} of {state['n']} ({state['what']}), "
                   f"{time.monotonic() - state['t0']:.0f} s elapsed of about {state['estimate']:.0f} s\n")
        file.flush()


def compile_kernels(warm: Mapping[str, tuple[str, Callable[[], None]]], steps: Sequence[str] | None = None,
                    why: str = "first run only", file=None) -> float:
    """Compile (or load from the cache) the kernels of ``steps`` (default: every step) by running
    ``warm[step]`` (a description and the warm-up: :data:`vistest.visibility.table.WARM`, passed in
    so that this module imports nothing of the table's), saying so on ``file`` (stderr): one line
    first with the estimate, a line every :data:`HEARTBEAT_S` seconds, one at the end. Returns the
    seconds it took."""
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
            state["i"], state["what"] = i, warm[step][0]
            warm[step][1]()
    finally:
        _warming.pop()
        stop.set()
        beat.join()
    took = time.monotonic() - state["t0"]
    file.write(f"vistest: compiled the visibility kernels in {took:.0f} s ({time.process_time() - cpu0:.0f} s of "
               f"CPU; later runs load them from the cache)\n")
    file.flush()
    return took


def ensure_compiled(occlusion: str, warm: Mapping[str, tuple[str, Callable[[], None]]]) -> float:
    """Before the kernels of a table in mode ``occlusion`` run: compile those not compiled yet by
    ``warm``'s steps, saying so (:func:`compile_kernels`); 0 when every one is. Returns the seconds
    it took."""
    if _warming:
        return 0.0
    steps = steps_to_compile(occlusion)
    return compile_kernels(warm, steps) if steps else 0.0
