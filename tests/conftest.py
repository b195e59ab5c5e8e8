"""Shared fixtures: tiny scenes written in the canonical format, and the demo scenes rendered
once per test session.

Session fixtures (each a scene.json path; built once per ``pytest`` run, also under
pytest-xdist: the first worker that needs one builds it under a file lock in the run's
shared temporary folder, the others wait for it and reuse it):

* ``demo_full``: ``vistest demo-scene --size 320x240`` through the CLI: seed 0, the whole
  300-frame walk that ``examples/demo-questions.jsonl`` is written for (~14 s of CPU).
* ``demo_small``: the demo at 320x240, 60 frames (also the 3RScan and MultiScan conversions' room: one
  render fewer than a 40-frame room of their own, issue 47).
* ``demo_tiny``: the demo at 160x120, 40 frames.

They are shared, so they are read-only: a test that writes beside scene.json takes a
:func:`scene_copy` first, and a test that changes a run folder copies it first
(``shutil.copytree``) instead of running again.

``make test`` runs ``pytest -n auto --dist loadfile --no-loadscope-reorder -m "not slow"`` (the
fast tier; ``make test-slow``: ``-m slow``, the slow tier; CI runs both): each test module
runs on one xdist worker, so a module-scoped fixture is built once, and the longest modules
(``LONGEST_FIRST``) are handed out first; the session fixtures above are built once per run
whichever workers use them.

:func:`pytest_sessionstart` compiles the Numba kernels once before any test runs (and
before xdist starts its workers), so that a fresh clone does not compile them in several
processes at once; with a warm on-disk cache (``vistest/**/__pycache__/*.nbi``) it only
loads them (about a second).
"""
from __future__ import annotations

import blas_threads  # noqa: F401  (first: one BLAS thread per process, before numpy is imported)
import copy
import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vistest  # noqa: F401  (sets PYOPENGL_PLATFORM before pyrender is imported)

# an exception in a blind attack is a bug: the tests see its traceback (vistest.eval.attacks._attack_failed),
# where a user's run reports it and goes on
os.environ["VISTEST_STRICT_ATTACKS"] = "1"
from vistest.scene import FORMAT, Scene

DEMO_SMALL = dict(seed=0, num_frames=60, size=(320, 240))  # make_demo_scene parameters
DEMO_TINY = dict(seed=0, num_frames=40, size=(160, 120))
IDENTITY = np.eye(4).tolist()
CAM = {"fx": 500.0, "fy": 500.0, "cx": 319.5, "cy": 239.5}


def scene_doc(boxes, poses, image_size=(640, 480), camera=None, **extra) -> dict:
    """A scene document with axis-aligned boxes [(center, size), ...] and poses (4x4 or None)."""
    doc = {"format": FORMAT, "scene_id": "test", "fps": 30.0, "image_size": list(image_size),
           "camera": dict(camera or CAM),
           "frames": [{"index": i, "time": i / 30.0, "camera_to_world": copy.deepcopy(p)} for i, p in enumerate(poses)],
           "objects": [{"id": str(i), "label": "box", "center": list(c), "size": list(s),
                        "rotation": np.eye(3).tolist()} for i, (c, s) in enumerate(boxes)]}
    doc.update(extra)
    return doc


def make_scene(boxes, poses, **kw) -> Scene:
    return Scene.from_dict(scene_doc(boxes, poses, **kw))


@pytest.fixture
def scene_factory():
    return make_scene


# ---------------------------------------------------------------------------------------
# the command line and export files (tests/test_export.py, tests/clients/)
# ---------------------------------------------------------------------------------------
def cli(*args):
    """``vistest ARGS`` in this process (click's runner); asserts exit status 0."""
    from click.testing import CliRunner

    from vistest.cli import main

    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r


def read_jsonl(path):
    return [json.loads(ln) for ln in Path(path).read_text().splitlines() if ln.strip()]


def config_file(export_dir, config):
    """The data file of a revsi export's config (``data/{config}-{digest}.jsonl``)."""
    (path,) = Path(export_dir).glob(f"data/{config}-*.jsonl")
    return path


@pytest.fixture(scope="module")
def frames_of():
    """count_frames with a cache (each video is decoded once per module)."""
    from vistest.videos.ffmpeg import count_frames

    cache = {}

    def count(path):
        key = os.path.realpath(path)
        if key not in cache:
            cache[key] = count_frames(path)
        return cache[key]
    return count


# ---------------------------------------------------------------------------------------
# session-wide demo scenes
# ---------------------------------------------------------------------------------------
def shared_dir(tmp_path_factory: pytest.TempPathFactory, name: str, build) -> Path:
    """``build(folder)`` once per test run, for every xdist worker; returns the folder.

    The folder lies in the run's temporary root (shared by the workers: each worker's
    basetemp is a subfolder of it). A lock file serialises the builders, and a ``.done``
    marker written after ``build`` returns tells the later ones it is complete; a folder
    left by a failed build is removed and built again.
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    shared = root / "shared"
    shared.mkdir(exist_ok=True)
    folder, done = shared / name, shared / f"{name}.done"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir()
            build(folder)
            done.touch()
    return folder


def scene_copy(scene_json: Path, dest: Path) -> Path:
    """A writable copy of a scene folder: its files copied, its subfolders (``depth/``)
    linked. Returns the copy's scene.json. For tests that write beside a shared scene.json
    (other scene documents whose relative paths must resolve)."""
    dest.mkdir(parents=True, exist_ok=True)
    for p in Path(scene_json).parent.iterdir():
        if p.is_dir():
            (dest / p.name).symlink_to(p.resolve(), target_is_directory=True)
        else:
            shutil.copy2(p, dest / p.name)
    return dest / Path(scene_json).name


@pytest.fixture(scope="session")
def demo_full(tmp_path_factory) -> Path:
    """The demo through ``vistest demo-scene``: seed 0, 300 frames, 320x240 (the example
    questions are written for this walk; coverage fractions do not depend on the resolution)."""
    def build(folder):
        r = subprocess.run([sys.executable, "-m", "vistest.cli", "demo-scene", str(folder), "--size", "320x240",
                            "--quiet"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == str(folder / "scene.json")

    return shared_dir(tmp_path_factory, "demo-full", build) / "scene.json"


@pytest.fixture(scope="session")
def demo_small(tmp_path_factory) -> Path:
    """The demo, seed 0, 60 frames at 320x240 (``DEMO_SMALL``)."""
    from vistest.synth.demo import make_demo_scene

    folder = shared_dir(tmp_path_factory, "demo-small", lambda d: make_demo_scene(d, **DEMO_SMALL, quiet=True))
    return folder / "scene.json"


@pytest.fixture(scope="session")
def demo_tiny(tmp_path_factory) -> Path:
    """The demo, seed 0, 40 frames at 160x120 (``DEMO_TINY``)."""
    from vistest.synth.demo import make_demo_scene

    folder = shared_dir(tmp_path_factory, "demo-tiny", lambda d: make_demo_scene(d, **DEMO_TINY, quiet=True))
    return folder / "scene.json"


# ---------------------------------------------------------------------------------------
# session hooks
# ---------------------------------------------------------------------------------------
# The longest modules (seconds of `make test`'s tests, summed per module from `pytest --durations=0` under
# pytest-xdist and from each test's CPU time, issue 47; test_batch.py and test_faults.py wait on their child
# processes: longer in wall than in CPU), longest first. Under pytest-xdist `make test` hands whole modules to
# the workers in collection order (--dist loadfile --no-loadscope-reorder), so these go first and the workers
# finish together; the other modules follow in their usual order. A stale list costs balance only, never
# correctness.
LONGEST_FIRST = ("test_export.py", "test_synth.py", "test_faults.py", "test_batch.py", "test_audit.py",
                 "test_synth_video.py", "test_generate_bias.py", "test_generate_motion.py", "test_track_truth.py",
                 "test_adapters_3rscan.py", "test_demo_dynamic.py", "test_real_scannet.py", "test_faults_2d.py",
                 "test_visibility.py", "test_generate.py", "test_run.py", "test_motion_dummies.py",
                 "test_index_html.py", "test_answer_audit.py", "test_reformulate.py")


def pytest_sessionstart(session):
    """Compile (cold cache) or load (warm cache) the Numba kernels in this process, before
    the tests and before pytest-xdist starts its workers (this hook runs first in the
    controller): a fresh clone then compiles each kernel once, not once per worker and per
    CLI subprocess that starts before the cache is written."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    from vistest.look.overlay import overlay_compiled, warm_overlay
    from vistest.visibility.compile import compile_kernels, steps_to_compile
    from vistest.visibility.table import WARM

    steps = steps_to_compile()
    if steps:
        compile_kernels(WARM, steps, why="before the tests")
    if not overlay_compiled():  # warm: not loaded here (~0.8 s of the controller's, before the workers start)
        warm_overlay()


def pytest_collection_modifyitems(config, items):
    """In xdist workers: the modules of ``LONGEST_FIRST`` first, in that order (a stable sort,
    so each module's tests keep their order and stay together)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


# tests/clients/ run against the real evaluator packages (lmms-eval, torch): `make test-clients`, in its own
# environment (.venv-clients). Where they are not installed (`make test`), the folder is not collected.
def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


collect_ignore = [] if _has("lmms_eval") else ["clients"]
