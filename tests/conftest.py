"""Shared fixtures: tiny scenes written in the canonical format."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import vistest  # noqa: F401  (sets PYOPENGL_PLATFORM before pyrender is imported)
from vistest.scene import FORMAT, Scene

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


# tests/clients/ run against the real evaluator packages (lmms-eval, torch): `make test-clients`, in its own
# environment (.venv-clients). Where they are not installed (`make test`), the folder is not collected.
def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


collect_ignore = [] if _has("lmms_eval") else ["clients"]
