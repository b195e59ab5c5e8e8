"""Synthetic scenes for tests and benchmarks (seeded, no files needed).

All poses are OpenCV camera-to-world (x right, y down, z forward); world +Z up
(vistest.geometry).
"""
from __future__ import annotations

import numpy as np

from ..geometry import look_at, random_rotation
from ..scene import FORMAT, Scene


def random_box_scene(seed: int = 0, num_frames: int = 100, num_boxes: int = 30, image_size=(320, 240),
                     invalid_every: int = 17, inside_frame: int | None = 3) -> Scene:
    """A room-sized cloud of rotated, tilted boxes seen from random cameras.

    Every ``invalid_every``-th frame (offset 5) has no pose. When ``inside_frame`` is
    set, that frame's camera sits at the centre of box 0, looking along a tilted axis.
    Intrinsics have an off-centre principal point and fx != fy.
    """
    rng = np.random.default_rng(seed)
    w, h = image_size
    objects = []
    for i in range(num_boxes):
        objects.append({"id": str(i), "label": f"label{i % 7}",
                        "center": rng.uniform([-3, -3, 0], [3, 3, 2]).tolist(),
                        "size": rng.uniform(0.2, 1.2, 3).tolist(), "rotation": random_rotation(rng).tolist()})
    frames = []
    for i in range(num_frames):
        eye = rng.uniform([-3, -3, 0.5], [3, 3, 1.8])
        target = rng.uniform([-2, -2, 0], [2, 2, 1.5])
        if inside_frame is not None and i == inside_frame:
            eye = np.array(objects[0]["center"])
        pose = look_at(eye, target).tolist()
        if invalid_every and i % invalid_every == 5:
            pose = None
        frames.append({"index": i, "time": i / 30.0, "camera_to_world": pose})
    doc = {"format": FORMAT, "scene_id": f"random{seed}", "fps": 30.0, "image_size": [w, h],
           "camera": {"fx": 0.8 * w, "fy": 0.78 * w, "cx": 0.47 * w, "cy": 0.52 * h},
           "frames": frames, "objects": objects}
    return Scene.from_dict(doc)
