"""The dynamic demo scene: the demo room with a cart crossing it and a ball rolling, a camera walk.

:func:`make_dynamic_demo_scene` (``vistest demo-scene OUT --dynamic``) writes, into one folder, the
files of :mod:`vistest.synth.demo` (``scene.json`` written last, ``video.mp4``,
``depth/000000.png``, ``mesh.ply``, ``mesh_objects.txt``), with two *moving* objects given by
tracks (docs/scene-format.md):

* ``cart`` (0.8 x 0.5 x 0.9 m), parked at ``CART_FROM`` until ``CART_SPAN[0]`` (a fraction of the
  video), pushed along +X to ``CART_TO`` with a smooth start and stop, then parked until the
  last frame. Keyed every ``CART_KEY_EVERY`` frames (and at the last frame): between keys it
  moves linearly, as every track does.
* ``ball`` (a 0.3 m cube drawn as a box, as every demo object), rolling along +Y from
  ``BALL_FROM`` to ``BALL_TO`` over ``BALL_SPAN`` at constant speed, turning about -X by its
  rolled distance over its half size (rolling without slipping); keyed every frame. It exists
  only during its roll: absent (not drawn, no visibility) before its first key and after its last.

The walk (:func:`camera_walk`) stands near the sofa end of the room and turns from the plant
corner (the moving objects out of view) towards the cart's lane, follows the cart, then the
ball's lane, so each moving object is out of view in some frames and in view in others.

What each file holds for the moving objects: the video and the depth frames are rendered with
every object at its pose in that frame (pyrender, as the static demo: the track's interpolated
pose, so the video, the depth and scene.json agree exactly); ``mesh.ply`` is the *static* scene
(room and static objects only) and ``mesh_objects.txt`` labels the static objects' vertices. In
``mesh`` occlusion the moving boxes are therefore tested against the static surfaces (what the
room and furniture hide of them) and their ``visible`` is their evidence (the box bound: they
have no surface in the mesh); in ``depth`` occlusion against the depth frames, which see them.

Deterministic for (``seed``, ``num_frames``, ``size``, ``fps``); the static furniture is the static
demo's for the same seed.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .. import freshness
from ..atomic import write_atomic
from ..geometry import look_at, rot_x
from ..scene import DepthSpec, Scene, SceneObject, TrackKey
from . import demo

MIN_FRAMES = 24
CART_SIZE = (0.8, 0.5, 0.9)  # m, full extents (length along X)
CART_FROM, CART_TO = (0.6, 1.45), (2.55, 1.45)  # m, floor position of its centre
CART_SPAN = (0.12, 0.55)  # fraction of the video during which it moves
CART_KEY_EVERY = 5  # frames between the cart's keys
BALL_SIZE = 0.3  # m, edge of the ball's box
BALL_FROM, BALL_TO = (1.6, 0.35), (1.6, 2.15)  # m, floor position of its centre
BALL_SPAN = (0.6, 0.95)  # fraction of the video during which it exists (rolling)
EYE_FROM, EYE_TO = (4.35, 0.75, 1.55), (3.9, 0.95, 1.5)  # m, the walk's camera centre
# (fraction of the video, look-at point): the plant corner, the cart's lane, the ball's lane
LOOK_KEYS = ((0.0, (4.7, 3.6, 0.9)), (0.2, (1.4, 1.6, 0.4)), (0.55, (2.4, 1.5, 0.4)), (0.7, (1.6, 1.2, 0.2)),
             (1.0, (1.6, 2.2, 0.2)))
CART_COLOUR, BALL_COLOUR = (0.95, 0.55, 0.05), (0.1, 0.35, 0.95)


def _smoothstep(s: np.ndarray) -> np.ndarray:
    s = np.clip(s, 0.0, 1.0)
    return s * s * (3.0 - 2.0 * s)


def moving_objects(num_frames: int) -> tuple[SceneObject, SceneObject]:
    """The cart and the ball as tracked SceneObjects (ids ``cart``, ``ball``; see the module docstring)."""
    last = num_frames - 1
    a, b = (round(f * last) for f in CART_SPAN)
    frames = sorted(set(range(0, last + 1, CART_KEY_EVERY)) | {a, b, last})
    s = _smoothstep((np.array(frames, float) - a) / max(b - a, 1))
    xy0, xy1 = np.array(CART_FROM), np.array(CART_TO)
    cart = tuple(TrackKey(f, _ro(np.append(xy0 + si * (xy1 - xy0), CART_SIZE[2] / 2)), _ro(np.eye(3)))
                 for f, si in zip(frames, s))
    a, b = (round(f * last) for f in BALL_SPAN)
    p0, p1 = np.array(BALL_FROM), np.array(BALL_TO)
    ball = []
    for f in range(a, b + 1):
        si = (f - a) / max(b - a, 1)
        rolled = si * float(np.linalg.norm(p1 - p0))
        ball.append(TrackKey(f, _ro(np.append(p0 + si * (p1 - p0), BALL_SIZE / 2)),
                             _ro(rot_x(-np.degrees(rolled / (BALL_SIZE / 2))))))
    size = _ro(np.array(CART_SIZE))
    return (SceneObject("cart", "cart", cart[0].center, size, cart[0].rotation, cart),
            SceneObject("ball", "ball", ball[0].center, _ro(np.full(3, BALL_SIZE)), ball[0].rotation, tuple(ball)))


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.array(a, np.float64)
    a.setflags(write=False)
    return a


def camera_walk(num_frames: int) -> np.ndarray:
    """(N, 4, 4) OpenCV camera-to-world poses: the eye moves linearly from ``EYE_FROM`` to
    ``EYE_TO``, the look-at point piecewise linearly through ``LOOK_KEYS``."""
    t = np.linspace(0.0, 1.0, num_frames)
    keys_t = np.array([k[0] for k in LOOK_KEYS])
    keys_p = np.array([k[1] for k in LOOK_KEYS])
    target = np.stack([np.interp(t, keys_t, keys_p[:, d]) for d in range(3)], axis=1)
    eye = np.array(EYE_FROM) + t[:, None] * (np.array(EYE_TO) - np.array(EYE_FROM))
    return np.stack([look_at(e, g) for e, g in zip(eye, target)])


class _DynamicRenderer(demo.DemoRenderer):
    """The static demo's renderer plus one node per moving object, posed per frame (hidden while
    the object is absent). Moving boxes are unit-posed meshes whose node pose is the object's
    pose at the frame."""

    def __init__(self, boxes, moving, k, size):
        super().__init__(boxes, k, size)
        from ..visibility.render import box_mesh

        self.moving = moving
        self.moving_nodes = []
        for o, colour in zip(moving, (CART_COLOUR, BALL_COLOUR)):
            node = self.scene.add(self._mesh(box_mesh(np.zeros(3), o.size, np.eye(3)), colour))
            self.moving_nodes.append(node)
            self.seg_map[node] = (255, 255, 255)

    def render_at(self, frame: int, c2w: np.ndarray):
        """(rgb, depth) with the moving objects at their poses in decoded frame ``frame``."""
        for o, node in zip(self.moving, self.moving_nodes):
            pose = o.pose_at(frame)
            node.mesh.is_visible = pose is not None
            if pose is not None:
                m = np.eye(4)
                m[:3, :3], m[:3, 3] = pose[1], pose[0]
                self.scene.set_pose(node, m)
        return self.render(c2w)


def check_walk(boxes, moving, poses) -> None:
    """The camera centre is never inside a box (static, or moving at that frame): the renderer
    draws moving boxes from outside only. RuntimeError otherwise (a bug in the constants)."""
    for i, c2w in enumerate(poses):
        p = c2w[:3, 3]
        inside = [b.label for b in boxes if demo.point_in_box(p, b.center, b.size, b.rotation)]
        inside += [o.id for o in moving if (q := o.pose_at(i)) is not None and demo.point_in_box(p, q[0], o.size, q[1])]
        if inside:
            raise RuntimeError(f"dynamic demo: the camera is inside {inside} at frame {i}")


def make_dynamic_demo_scene(outdir: str | os.PathLike, seed: int = 0, num_frames: int = 300,
                            size: tuple[int, int] = (640, 480), fps: float = 30.0, quiet: bool = False,
                            force: bool = False) -> Path:
    """Synthesise the dynamic demo (module docstring) into ``outdir``; returns its scene.json.

    Same files, parameters and rerun rules as :func:`vistest.synth.demo.make_demo_scene`
    (``scene.json`` removed first and written last, other files replaced atomically, a folder
    holding this demo with the same parameters left as it is unless ``force``);
    ``num_frames >= MIN_FRAMES``. Scene id ``demo-dynamic-seed{seed}``.
    """

    outdir = Path(outdir)
    w, h = demo.check_demo_params(num_frames, size, fps, MIN_FRAMES, "the moving objects' paths need it")
    outdir.mkdir(parents=True, exist_ok=True)
    scene_path, stamp = outdir / "scene.json", outdir / demo.DEMO_STAMP
    params = {"dynamic": True, "seed": int(seed), "num_frames": int(num_frames), "size": [w, h], "fps": float(fps)}
    if not force and demo.up_to_date(outdir, stamp, params):
        return scene_path
    boxes = demo.furniture(np.random.default_rng(seed))
    moving = moving_objects(num_frames)
    k = demo.demo_intrinsics((w, h))
    poses = camera_walk(num_frames)
    check_walk(boxes, moving, poses)

    stamp.unlink(missing_ok=True)
    scene_path.unlink(missing_ok=True)
    write_atomic(outdir / "mesh.ply", demo.scene_mesh(boxes).export(file_type="ply"))  # the static scene only
    write_atomic(outdir / "mesh_objects.txt", demo.scene_mesh_objects(boxes))

    renderer = _DynamicRenderer(boxes, moving, k, (w, h))
    try:
        demo.write_video_and_depth(outdir, lambda i: renderer.render_at(i, poses[i]), num_frames, fps, (w, h),
                                   "Rendering dynamic demo scene", quiet)
    finally:
        renderer.close()

    frames = demo.demo_frames(poses, fps)
    objects = tuple(SceneObject(str(n + 1), b.label, b.center.copy(), b.size.copy(), b.rotation.copy())
                    for n, b in enumerate(boxes)) + moving
    rx, ry, rz = demo.ROOM_SIZE
    room = {"size_m2": rx * ry, "polygon": [[0.0, 0.0], [rx, 0.0], [rx, ry], [0.0, ry]], "height_m": rz}
    scene = Scene(scene_id=f"demo-dynamic-seed{seed}", fps=float(fps), image_size=(w, h), camera=k, frames=frames,
                  objects=objects, video="video.mp4", mesh="mesh.ply", depth=DepthSpec(scale=1000.0), room=room,
                  mesh_objects="mesh_objects.txt", root=outdir)
    scene.save(scene_path)
    freshness.write(stamp, "demo scene", params)
    return scene_path
