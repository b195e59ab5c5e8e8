"""Random dynamic scenes for the dynamic question types (tests/test_generate_motion.py,
bench/motion_options.py): a few static boxes, ``num_moving`` tracked objects keyed every frame,
a panning camera, and a visibility table made directly (no rendering).

Each moving object moves on the floor from a random start in a random direction that turns
slowly, with one of three speed profiles: constant speed, constant acceleration (clipped at
rest) or parked-then-pushed (smoothstep); its base speed is log-uniform over
``speed_range`` m/s (near-zero speeds included by default). It is present over a random span
of the video and seen in that span but for random gaps (visible fraction 0.2 where seen, 0
elsewhere: the default seen rule, > 5%, sees it exactly there). The camera stands at a random
place of a 6 x 6 m room looking at its centre and pans by up to +-25 degrees: the heading of a
motion seen from it varies between scenes.
"""
from __future__ import annotations

import numpy as np

from vistest.geometry import look_at
from vistest.scene import FORMAT, Scene
from vistest.visibility.table import Visibility



def _smoothstep(s):
    s = np.clip(s, 0.0, 1.0)
    return s * s * (3.0 - 2.0 * s)


def _path(rng, n, fps, speed_range):
    """(n, 2) floor positions of one moving object, one per frame."""
    t = np.arange(n) / fps
    v = float(np.exp(rng.uniform(np.log(speed_range[0]), np.log(speed_range[1]))))
    kind = rng.integers(3)
    if kind == 0:  # constant speed
        s = v * t
    elif kind == 1:  # constant acceleration from v, clipped at rest
        a = rng.uniform(-1.0, 1.0) * v / max(t[-1], 1e-9) * 2
        speed = np.maximum(v + a * t, 0.0)
        s = np.concatenate([[0.0], np.cumsum((speed[1:] + speed[:-1]) / 2 / fps)])
    else:  # parked, pushed with a smooth start and stop, parked
        a, b = np.sort(rng.uniform(0, t[-1], 2))
        s = v * (b - a) * 1.5 * _smoothstep((t - a) / max(b - a, 1e-9))
    heading = rng.uniform(0, 2 * np.pi) + rng.uniform(-0.15, 0.15) * t  # turning slowly (rad/s)
    step = np.diff(s, prepend=0.0)
    xy = np.cumsum(np.c_[step * np.cos(heading), step * np.sin(heading)], axis=0)
    return rng.uniform(-2, 2, 2) + xy


def random_motion_scene(seed: int, num_moving: int = 3, num_frames: int = 100, fps: float = 10.0,
                        speed_range: tuple[float, float] = (0.03, 1.0), num_static: int = 3
                        ) -> tuple[Scene, Visibility]:
    """A random dynamic scene and its visibility table (module docstring)."""
    rng = np.random.default_rng(seed)
    n = num_frames
    objects = [{"id": f"s{i}", "label": f"shelf{i}", "center": [*rng.uniform(-3, 3, 2), 0.5],
                "size": [0.6, 0.4, 1.0], "rotation": np.eye(3).tolist()} for i in range(num_static)]
    spans = []
    for k in range(num_moving):
        xy = _path(rng, n, fps, speed_range)
        a = int(rng.integers(0, n // 3))
        b = int(rng.integers(2 * n // 3, n))
        track = [{"frame": f, "center": [float(xy[f, 0]), float(xy[f, 1]), 0.25], "rotation": np.eye(3).tolist()}
                 for f in range(a, b + 1)]
        objects.append({"id": f"m{k}", "label": f"mover{k}", "size": [0.5, 0.5, 0.5], "track": track})
        spans.append((a, b))
    eye = np.array([*rng.uniform(-3, 3, 2), 1.5])
    yaw0, pan = rng.uniform(-np.pi, np.pi), np.radians(rng.uniform(-25, 25))
    frames = []
    for i in range(n):
        yaw = yaw0 + pan * i / max(n - 1, 1)
        target = eye + np.array([np.cos(yaw), np.sin(yaw), -0.4])
        frames.append({"index": i, "time": i / fps, "camera_to_world": look_at(eye, target).tolist()})
    doc = {"format": FORMAT, "scene_id": f"motion{seed}", "fps": fps, "image_size": [320, 240],
           "camera": {"fx": 260.0, "fy": 260.0, "cx": 160.0, "cy": 120.0}, "frames": frames, "objects": objects}
    scene = Scene.from_dict(doc)
    vis = np.zeros((n, len(objects)))
    vis[:, :num_static] = 0.2
    for k, (a, b) in enumerate(spans):
        seen = np.zeros(n, bool)
        seen[a:b + 1] = rng.random(b + 1 - a) > 0.1  # random gaps
        vis[seen, num_static + k] = 0.2
    table = Visibility(scene.scene_id, vis.copy(), vis.copy(), np.zeros((n, len(objects), 4)),
                       np.array([o["id"] for o in objects]), np.arange(n, dtype=np.int64), np.ones(n, bool),
                       {"occlusion": "none"}, source=f"<motion{seed}>")
    return scene, table
