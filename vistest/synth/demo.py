"""The embedded demo scene: a furnished room, a camera walk, a rendered video.

:func:`make_demo_scene` writes, into one folder::

    scene.json        the Scene (format vistest.scene/1), written last
    video.mp4         H.264 render of the walk (pyrender, offscreen EGL)
    depth/000000.png  per frame z-depth, 16-bit PNG, millimetres, 0 = no surface
    mesh.ply          room (floor + walls) and every box, one mesh with face colours
    mesh_objects.txt  the object id of each mesh vertex (empty for the room's)

Conventions (those of :mod:`vistest.scene`): world in metres, +Z up; the room is
``[0, 5] x [0, 4]`` m on the floor ``z = 0`` with walls 2.6 m high and *no ceiling*
(looking over a wall gives background pixels: colour ``BACKGROUND``, depth 0 =
missing, which exercises missing-depth handling downstream). ``camera_to_world`` uses
OpenCV axes (x right, y down, z forward); intrinsics follow OpenCV (integer pixel
coordinates are pixel centres). Boxes are solids seen from outside; when the camera
centre is inside a box, that box is drawn inside-out for the frame so its inner walls
are its surface (the convention of :mod:`vistest.visibility.table`).

pyrender findings (verified by rendering a box whose silhouette edges fall at known
sub-pixel OpenCV positions, edge at u = 40 + k/8, off-centre principal point):

* ``IntrinsicsCamera`` must get ``(cx + 0.5, cy + 0.5)``: OpenGL window coordinates put
  pixel j's centre at j + 0.5. With it, the 4x MSAA colour coverage of the edge pixel
  matches the exact area fraction (to the 1/4 sample quantum) and a pixel is covered
  iff its centre is inside; passing (cx, cy) shifts everything by half a pixel.
* The colour pass is 4x multisampled, and pyrender's depth readback of it keeps *one*
  sample, sample 0, at (-0.125, +0.375) px from the pixel centre: depth edges land up
  to 0.375 px off. So depth comes from a second pass, ``SEG | DEPTH_ONLY``, which
  disables multisampling: z-depth at exact pixel centres (SEG passes always cull back
  faces, which is why boxes containing the camera are inverted rather than drawn
  double-sided). Float depth error from the 24-bit buffer, against ray casting, is
  below 0.3 mm in this room (then rounded to whole mm).
* Materials need float colours: integer ``baseColorFactor`` is read as 0-255.

The camera path is a function of a parameter ``t`` in [0, 1] (frame i has
``t = i / (num_frames - 1)``) and of the furniture, so its two planned events happen
for every seed and every ``num_frames >= MIN_FRAMES``: around ``t = STRADDLE_T`` it
walks 0.22 m past the wardrobe's front (the wardrobe straddles the camera plane, in
view), and for ``t`` in ``INSIDE_T`` it stands still inside the plant and turns
around. :func:`make_demo_scene` checks both geometrically before writing anything.
"""
from __future__ import annotations

import colorsys
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .. import freshness
from ..atomic import write_atomic
from ..errors import InputError
from ..progress import progress_bar
from ..geometry import box_corners, boxes_contain, cross3, look_rotation, rot_x, rot_y, rot_z
from ..scene import DepthSpec, Frame, Intrinsics, Scene, SceneObject
from ..videos.ffmpeg import VideoWriter

DEMO_STAMP = ".demo-params.json"  # the parameters of the demo in a folder, written last
ROOM_SIZE = (5.0, 4.0, 2.6)  # x extent, y extent, wall height (m)
CAMERA_HEIGHT = 1.4  # m
ZNEAR, ZFAR = 0.01, 20.0  # m
MIN_FRAMES = 16
STRADDLE_T = 0.31  # path parameter of the wardrobe pass
INSIDE_T = (0.76, 0.86)  # path parameter interval spent standing inside the plant
BACKGROUND = (0.93, 0.95, 1.0)
FLOOR_COLOUR = (0.55, 0.50, 0.45)
WALL_COLOURS = ((0.86, 0.85, 0.82), (0.80, 0.81, 0.84))
# 20 distinct saturated colours (10 hues, each bright and dark; none near the neutral
# walls/floor), RGB 0-1; permuted per seed.
PALETTE = tuple(tuple(float(c) for c in colorsys.hsv_to_rgb(h / 10.0, s, v))
                for s, v in ((0.85, 0.95), (0.8, 0.55)) for h in range(10))


# ---------------------------------------------------------------------------------------
# geometry helpers
# ---------------------------------------------------------------------------------------
def half_height(size: np.ndarray, rotation: np.ndarray) -> float:
    """Half of the world-Z extent of a box (size = full extents, rotation columns = axes)."""
    return float(np.abs(rotation[2]) @ (np.asarray(size) / 2.0))


def point_in_box(p: np.ndarray, center: np.ndarray, size: np.ndarray, rotation: np.ndarray) -> bool:
    """True when world point ``p`` is strictly inside the oriented box."""
    return bool(boxes_contain(p, center[None], np.asarray(size)[None], rotation[None])[0])


def corners_of(box: "Box") -> np.ndarray:
    """The 8 corners (8, 3) of a demo box, in world coordinates."""
    return box_corners(box.center[None], box.size[None], box.rotation[None])[0]


def demo_intrinsics(size: tuple[int, int]) -> Intrinsics:
    """Intrinsics for a (W, H) image: fx = fy = 0.8 W (about 64 deg horizontal field of view)
    and a principal point deliberately off the image centre by (W/64, -H/96) pixels."""
    w, h = size
    return Intrinsics(fx=0.8 * w, fy=0.8 * w, cx=(w - 1) / 2 + w / 64, cy=(h - 1) / 2 - h / 96)


# ---------------------------------------------------------------------------------------
# furniture
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Box:
    """A labelled furniture box: centre (m), full extents (m), rotation (columns = axes), RGB 0-1."""

    label: str
    center: np.ndarray
    size: np.ndarray
    rotation: np.ndarray
    colour: tuple[float, float, float] = (0.5, 0.5, 0.5)

    @property
    def top(self) -> float:
        """World z of the box's highest point."""
        return float(self.center[2]) + half_height(self.size, self.rotation)


def _place(label: str, xy, size, rotation, support: float = 0.0) -> Box:
    """A box at floor position ``xy`` resting on height ``support`` (its lowest point)."""
    size = np.asarray(size, float)
    z = support + half_height(size, rotation)
    return Box(label, np.array([xy[0], xy[1], z], float), size, np.asarray(rotation, float))


def furniture(rng: np.random.Generator) -> list[Box]:
    """The room's boxes for one seed: 12 fixed pieces (jittered) plus 0-8 optional ones.

    Fixed: bed, wardrobe and TV stand (cabinets), sofa, coffee table and desk (tables),
    a box on the coffee table, a TV on its stand (tilted back 4 deg), a tall plant, and
    three chairs. Optional: two pillows on the bed (tilted), a nightstand (cabinet) with
    a lamp on it, a trash bin, a tilted box on the floor with a box stacked on it, and a
    pillow on the sofa. The wardrobe (index 1) and the plant (index 7) carry the camera
    events; they are the only boxes taller than the camera height. Jitter is redrawn
    (from the same generator, so still deterministic) until no two boxes interpenetrate
    and every box is inside the room; colours are a per-seed permutation of PALETTE.
    """
    for _ in range(100):
        boxes = _sample_furniture(rng)
        if _layout_ok(boxes):
            break
    else:  # pragma: no cover - the nominal layout is valid, jitter only rarely collides
        raise RuntimeError("demo furniture: no valid layout in 100 draws")
    order = rng.permutation(len(PALETTE))
    return [Box(b.label, b.center, b.size, b.rotation, PALETTE[order[k]]) for k, b in enumerate(boxes)]


def _sample_furniture(rng: np.random.Generator) -> list[Box]:
    """One draw of the jittered layout (see :func:`furniture`); may interpenetrate."""
    def j(s: float) -> float:
        return float(rng.uniform(-s, s))

    def maybe() -> bool:
        return bool(rng.uniform() < 0.6)

    bed = _place("bed", (1.08 + j(0.03), 3.1 + j(0.05)), (2.0, 1.5, 0.5), rot_z(j(2)))
    sofa = _place("sofa", (4.48, 2.05 + j(0.05)), (2.0, 0.9, 0.8), rot_z(90 + j(3)))
    table = _place("table", (3.45 + j(0.05), sofa.center[1] + j(0.05)), (1.0, 0.6, 0.45), rot_z(90 + j(5)))
    stand = _place("cabinet", (3.4 + j(0.1), 0.26), (1.5, 0.45, 0.5), rot_z(0.0))  # TV stand
    desk = _place("table", (2.85 + j(0.05), 3.65), (1.2, 0.6, 0.75), rot_z(j(2)))
    boxes = [
        bed,
        _place("cabinet", (0.65 + j(0.08), 0.36), (1.0, 0.6, 2.0), rot_z(j(3))),  # wardrobe
        sofa,
        table,
        _place("box", table.center[:2] + [j(0.1), j(0.2)], (0.35, 0.25, 0.2), rot_z(rng.uniform(0, 90)),
               support=table.top),
        stand,
        _place("tv", (stand.center[0], 0.26), (1.2, 0.08, 0.7), rot_x(-4.0), support=stand.top),
        _place("plant", (4.6 + j(0.03), 3.58 + j(0.03)), (0.5, 0.5, 1.6), rot_z(rng.uniform(0, 90))),
        desk,
        _place("chair", (desk.center[0] + j(0.05), 3.0), (0.5, 0.5, 0.9), rot_z(90 + j(10))),
        _place("chair", (2.6 + j(0.03), 2.05 + j(0.03)), (0.5, 0.5, 0.9), rot_z(j(15))),
        _place("chair", (3.5 + j(0.05), 1.05), (0.5, 0.5, 0.9), rot_z(90 + j(10))),
    ]
    if maybe():
        boxes.append(_place("pillow", (0.3, bed.center[1] - 0.35), (0.14, 0.6, 0.35), rot_y(-20), support=bed.top))
    if maybe():
        boxes.append(_place("pillow", (0.3, bed.center[1] + 0.35), (0.14, 0.6, 0.35), rot_y(-20), support=bed.top))
    if maybe():
        night = _place("cabinet", (0.28, 1.9), (0.45, 0.4, 0.55), rot_z(j(5)))
        boxes.append(night)
        boxes.append(_place("lamp", (0.28 + j(0.05), 1.9 + j(0.05)), (0.25, 0.25, 0.45), rot_z(rng.uniform(0, 90)),
                            support=night.top))
    if maybe():
        boxes.append(_place("trash bin", (2.3, 0.25), (0.3, 0.3, 0.4), rot_z(rng.uniform(0, 90))))
    if maybe():
        crate = _place("box", (4.6, 0.35), (0.5, 0.4, 0.35), rot_z(j(10)) @ rot_x(6.0))
        boxes.append(crate)
        if maybe():
            boxes.append(_place("box", (4.6 + j(0.05), 0.35 + j(0.05)), (0.35, 0.3, 0.25),
                                rot_z(rng.uniform(0, 90)), support=crate.top))
    if maybe():
        boxes.append(_place("pillow", (sofa.center[0] + 0.1, sofa.center[1] + j(0.5)), (0.45, 0.15, 0.4),
                            rot_z(90 + j(10)) @ rot_x(70), support=sofa.top))
    return boxes


def boxes_overlap(a: Box, b: Box, tol: float = 1e-3) -> bool:
    """True when two oriented boxes interpenetrate by more than ``tol`` metres (boxes that merely
    touch, like a TV resting on its stand, do not overlap): :func:`separating_axis_overlap`, after
    a shortcut for boxes whose circumscribed spheres are that far apart. Along the line between
    their centres each box reaches at most its sphere's radius, so they interpenetrate there by at
    most ``tol``; the separating-axis test's 15 axes hold the direction of least penetration of two
    boxes, so it finds one as good and answers False too (the same answers; a layout's placement
    tests ~10^4 pairs, most of them far apart: a quarter of its CPU time less)."""
    d = b.center - a.center
    if float(np.sqrt(d @ d)) >= float(np.sqrt(a.size @ a.size) + np.sqrt(b.size @ b.size)) / 2 - tol:
        return False
    return separating_axis_overlap(a, b, tol)


def separating_axis_overlap(a: Box, b: Box, tol: float = 1e-3) -> bool:
    """The separating-axis test of :func:`boxes_overlap`: over the 3 + 3 face normals and the 9
    edge cross products, True unless along one of them the boxes' projections overlap by at most
    ``tol`` metres."""
    d = b.center - a.center
    rot_a, rot_b = a.rotation, b.rotation  # read once: a layout's Placed computes its rotation on each read
    axes = [rot_a[:, i] for i in range(3)] + [rot_b[:, i] for i in range(3)]
    axes += list(cross3(rot_a.T[:, None, :], rot_b.T[None, :, :]).reshape(9, 3))
    for ax in axes:
        n = np.linalg.norm(ax)
        if n < 1e-9:
            continue
        ax = ax / n
        ra = np.abs(ax @ rot_a) @ (a.size / 2)
        rb = np.abs(ax @ rot_b) @ (b.size / 2)
        if abs(ax @ d) >= ra + rb - tol:
            return False
    return True


def _layout_ok(boxes: list[Box]) -> bool:
    """Every box inside the room (1 mm slack) and no two boxes interpenetrating."""
    rx, ry, rz = ROOM_SIZE
    for b in boxes:
        c = corners_of(b)
        if c.min(0)[0] < -1e-3 or c.min(0)[1] < -1e-3 or c.min(0)[2] < -1e-3 \
                or c.max(0)[0] > rx + 1e-3 or c.max(0)[1] > ry + 1e-3 or c.max(0)[2] > rz:
            return False
    return not any(boxes_overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


# ---------------------------------------------------------------------------------------
# camera path
# ---------------------------------------------------------------------------------------
def _hermite(times: np.ndarray, values: np.ndarray, t: np.ndarray, hold: np.ndarray) -> np.ndarray:
    """Piecewise cubic Hermite through ``values`` (K, D) at ``times`` (K,), evaluated at ``t``.

    Tangents are Catmull-Rom (non-uniform), zero at both ends and at keys where
    ``hold`` is True, so two equal held keys give a segment that stands exactly still.
    """
    k = len(times)
    m = np.zeros_like(values)
    for i in range(1, k - 1):
        if not hold[i]:
            m[i] = (values[i + 1] - values[i - 1]) / (times[i + 1] - times[i - 1])
    seg = np.clip(np.searchsorted(times, t, side="right") - 1, 0, k - 2)
    t0, t1 = times[seg], times[seg + 1]
    dt = (t1 - t0)[:, None]
    s = ((t - t0) / (t1 - t0))[:, None]
    h00, h10 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s
    h01, h11 = -2 * s**3 + 3 * s**2, s**3 - s**2
    return h00 * values[seg] + h10 * dt * m[seg] + h01 * values[seg + 1] + h11 * dt * m[seg + 1]


def camera_keys(boxes: list[Box]) -> np.ndarray:
    """Key poses (K, 5): t, x, y, yaw (deg), pitch (deg) of the walk for this furniture.

    The walk starts by the door (south-east), passes the TV, brushes past the wardrobe's
    front at ``STRADDLE_T``, turns north to the bed, crosses the room, walks into the
    plant in the north-east corner, stands inside it turning round (``INSIDE_T``), and
    walks back towards the centre.
    """
    wardrobe, plant = boxes[1], boxes[7]
    front = wardrobe.center + wardrobe.rotation[:, 1] * (wardrobe.size[1] / 2)  # face towards the room
    straddle = front + wardrobe.rotation[:, 1] * 0.22 + wardrobe.rotation[:, 0] * 0.25
    px, py = plant.center[:2]
    sx, sy = straddle[:2]
    t_in, t_out = INSIDE_T
    return np.array([
        (0.00, 4.35, 0.85, 160.0, -12.0),
        (0.12, 3.20, 1.05, 200.0, -10.0),
        (0.22, 1.90, 1.00, 185.0, -8.0),
        (STRADDLE_T, sx, sy, 192.0, -5.0),
        (0.36, sx - 0.25, sy + 0.06, 200.0, -8.0),
        (0.44, 0.75, 1.45, 95.0, -20.0),
        (0.53, 1.60, 1.95, 40.0, -12.0),
        (0.62, 2.75, 2.20, 15.0, -18.0),
        (0.70, 3.95, 3.05, 40.0, -10.0),
        (t_in, px, py, 45.0, -10.0),
        (t_out, px, py, 225.0, -12.0),
        (0.93, 3.50, 2.75, 230.0, -15.0),
        (1.00, 2.60, 1.90, 250.0, -10.0),
    ])


def camera_path(boxes: list[Box], num_frames: int) -> np.ndarray:
    """Camera-to-world poses (N, 4, 4), OpenCV axes, for ``t = i / (N - 1)``.

    Height is ``CAMERA_HEIGHT`` with a 1.5 cm walking bob (still while standing).
    """
    keys = camera_keys(boxes)
    t = np.linspace(0.0, 1.0, num_frames)
    xy = keys[:, 1:3]
    hold = np.zeros(len(keys), bool)
    hold[1:] |= np.all(xy[1:] == xy[:-1], axis=1)
    hold[:-1] |= np.all(xy[:-1] == xy[1:], axis=1)
    pos = _hermite(keys[:, 0], xy, t, hold)
    ang = _hermite(keys[:, 0], keys[:, 3:5], t, np.zeros(len(keys), bool))
    standing = (t >= INSIDE_T[0]) & (t <= INSIDE_T[1])
    z = CAMERA_HEIGHT + np.where(standing, 0.0, 0.015 * np.sin(2 * np.pi * 14 * t))
    poses = np.tile(np.eye(4), (num_frames, 1, 1))
    for i in range(num_frames):
        poses[i, :3, :3] = look_rotation(ang[i, 0], ang[i, 1])
        poses[i, :3, 3] = (pos[i, 0], pos[i, 1], z[i])
    return poses


def straddles_in_view(c2w: np.ndarray, box: Box, k: Intrinsics, size: tuple[int, int]) -> bool:
    """True when ``box`` has corners both in front of and behind the camera plane
    (camera z > 0 and < 0) *and* part of its surface in front of the near plane projects
    into the image (checked on a 9 x 9 grid of points on each face)."""
    r, t = c2w[:3, :3], c2w[:3, 3]
    zc = (corners_of(box) - t) @ r[:, 2]
    if not (zc.max() > 0 and zc.min() < 0):
        return False
    g = np.linspace(-0.5, 0.5, 9)
    a, b = np.meshgrid(g, g)
    pts = []
    for axis in range(3):
        for sign in (-0.5, 0.5):
            local = np.zeros((a.size, 3))
            local[:, axis] = sign
            others = [i for i in range(3) if i != axis]
            local[:, others[0]], local[:, others[1]] = a.ravel(), b.ravel()
            pts.append(box.center + (local * box.size) @ box.rotation.T)
    cam = (np.concatenate(pts) - t) @ r
    cam = cam[cam[:, 2] > ZNEAR]
    u = k.fx * cam[:, 0] / cam[:, 2] + k.cx
    v = k.fy * cam[:, 1] / cam[:, 2] + k.cy
    w, h = size
    return bool(np.any((u >= -0.5) & (u <= w - 0.5) & (v >= -0.5) & (v <= h - 0.5)))


def check_path(boxes: list[Box], poses: np.ndarray, k: Intrinsics, size: tuple[int, int]) -> None:
    """Assert the walk's guarantees: the camera stays in the room (0.1 m from the walls),
    some frame has its centre inside a box, and some frame sees a box that straddles the
    camera plane within 0.5 m of the camera. Raises AssertionError naming what failed."""
    rx, ry, rz = ROOM_SIZE
    p = poses[:, :3, 3]
    assert np.all((p[:, 0] > 0.1) & (p[:, 0] < rx - 0.1) & (p[:, 1] > 0.1) & (p[:, 1] < ry - 0.1)), \
        "demo camera path leaves the room"
    inside = [i for i in range(len(poses)) if any(point_in_box(p[i], b.center, b.size, b.rotation) for b in boxes)]
    assert inside, "demo camera path: no frame has the camera centre inside a box"
    straddle = [i for i in range(len(poses)) for b in boxes
                if not point_in_box(p[i], b.center, b.size, b.rotation)
                and np.linalg.norm(p[i] - _closest_point(b, p[i])) < 0.5
                and straddles_in_view(poses[i], b, k, size)]
    assert straddle, "demo camera path: no frame sees a nearby box straddling the camera plane"


def _closest_point(box: Box, p: np.ndarray) -> np.ndarray:
    """The point of the (solid) box closest to world point ``p``."""
    local = np.clip(box.rotation.T @ (p - box.center), -box.size / 2, box.size / 2)
    return box.center + box.rotation @ local


# ---------------------------------------------------------------------------------------
# meshes and rendering
# ---------------------------------------------------------------------------------------
def room_parts() -> list[tuple["object", tuple[float, float, float]]]:
    """Floor and four walls as (trimesh quad, RGB) with normals facing into the room."""
    import trimesh

    rx, ry, rz = ROOM_SIZE
    quads = [  # counter-clockwise seen from inside the room
        ([[0, 0, 0], [rx, 0, 0], [rx, ry, 0], [0, ry, 0]], FLOOR_COLOUR),
        ([[0, 0, 0], [0, 0, rz], [rx, 0, rz], [rx, 0, 0]], WALL_COLOURS[0]),        # y = 0
        ([[rx, 0, 0], [rx, 0, rz], [rx, ry, rz], [rx, ry, 0]], WALL_COLOURS[1]),    # x = rx
        ([[rx, ry, 0], [rx, ry, rz], [0, ry, rz], [0, ry, 0]], WALL_COLOURS[0]),    # y = ry
        ([[0, ry, 0], [0, ry, rz], [0, 0, rz], [0, 0, 0]], WALL_COLOURS[1]),        # x = 0
    ]
    return [(trimesh.Trimesh(np.array(v, float), [[0, 1, 2], [0, 2, 3]], process=False), c) for v, c in quads]


def scene_mesh(boxes: list[Box]):
    """Room and boxes as one trimesh with per-face RGBA colours (what ``mesh.ply`` holds)."""
    import trimesh

    parts = []
    from ..visibility.render import box_mesh

    for mesh, colour in room_parts() + [(box_mesh(b.center, b.size, b.rotation), b.colour) for b in boxes]:
        mesh = mesh.copy()
        mesh.visual.face_colors = np.tile(np.round(np.array([*colour, 1.0]) * 255).astype(np.uint8),
                                          (len(mesh.faces), 1))
        parts.append(mesh)
    return trimesh.util.concatenate(parts)


def scene_mesh_objects(boxes: list[Box]) -> str:
    """The ``mesh_objects`` file of :func:`scene_mesh`: one line per vertex, in its order, with the
    object id of box n (``n + 1``) on its vertices and an empty line on the room's."""
    from ..visibility.render import box_mesh

    lines = [""] * sum(len(m.vertices) for m, _ in room_parts())
    for n, b in enumerate(boxes):
        lines += [str(n + 1)] * len(box_mesh(b.center, b.size, b.rotation).vertices)
    return "".join(f"{x}\n" for x in lines)


class DemoRenderer:
    """pyrender scene of the room with a movable camera; renders colour and depth.

    Every box has an outward and an inverted (inside-out) mesh node; per frame the
    inverted one is shown instead for boxes that contain the camera centre. Lights
    have explicit poses (pyrender's Scene.bounds uses np.infty, gone in numpy 2).
    """

    def __init__(self, boxes: list[Box], k: Intrinsics, size: tuple[int, int]):
        import pyrender

        from ..visibility.render import box_mesh, gl_camera

        self.pyrender = pyrender
        self.boxes = boxes
        self.scene = pyrender.Scene(bg_color=[*BACKGROUND, 1.0], ambient_light=[0.4, 0.4, 0.4])
        nodes = []
        for mesh, colour in room_parts():
            nodes.append(self.scene.add(self._mesh(mesh, colour)))
        self.outward, self.inward = [], []
        for b in boxes:
            out = box_mesh(b.center, b.size, b.rotation)
            inv = out.copy()
            inv.invert()
            self.outward.append(self._mesh(out, b.colour))
            self.inward.append(self._mesh(inv, b.colour))
            nodes.append(self.scene.add(self.outward[-1]))
            nodes.append(self.scene.add(self.inward[-1]))
        self.seg_map = {n: (255, 255, 255) for n in nodes}
        for direction, intensity in (((-0.35, -0.55, -0.76), 2.0), ((0.6, 0.3, -0.5), 1.0)):
            self.scene.add(pyrender.DirectionalLight(color=np.ones(3), intensity=intensity),
                           pose=light_pose(np.array(direction)))
        self.cam_node = self.scene.add(gl_camera(k, ZNEAR, ZFAR), pose=np.eye(4))
        self.renderer = pyrender.OffscreenRenderer(*size)

    def _mesh(self, mesh, colour):
        mat = self.pyrender.MetallicRoughnessMaterial(baseColorFactor=[float(c) for c in colour] + [1.0],
                                                      metallicFactor=0.0, roughnessFactor=1.0)
        return self.pyrender.Mesh.from_trimesh(mesh, material=mat, smooth=False)

    def render(self, c2w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rgb uint8 (H, W, 3), z-depth float32 (H, W) in metres, 0 = no surface)."""
        from ..visibility.render import gl_pose

        p = c2w[:3, 3]
        for b, out, inv in zip(self.boxes, self.outward, self.inward):
            inside = point_in_box(p, b.center, b.size, b.rotation)
            out.is_visible, inv.is_visible = not inside, inside
        self.scene.set_pose(self.cam_node, gl_pose(c2w))
        rgb, _ = self.renderer.render(self.scene)
        flags = self.pyrender.RenderFlags.SEG | self.pyrender.RenderFlags.DEPTH_ONLY
        depth = self.renderer.render(self.scene, flags=flags, seg_node_map=self.seg_map)
        return np.ascontiguousarray(rgb), depth

    def close(self) -> None:
        from ..visibility.render import free_renderer

        free_renderer(self.renderer)


def light_pose(direction: np.ndarray) -> np.ndarray:
    """Pose of a pyrender directional light shining along ``direction`` (its -Z axis)."""
    z = -direction / np.linalg.norm(direction)
    x = np.cross([0.0, 1.0, 0.0], z)
    x /= np.linalg.norm(x)
    pose = np.eye(4)
    pose[:3, :3] = np.stack([x, np.cross(z, x), z], axis=1)
    return pose


def depth_to_png16(depth_m: np.ndarray) -> np.ndarray:
    """Metres -> uint16 millimetres (rounded; 0 stays 0 = missing; clipped at 65.535 m)."""
    return np.clip(np.round(np.asarray(depth_m, np.float64) * 1000.0), 0, 65535).astype(np.uint16)


# ---------------------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------------------
def write_video_and_depth(outdir: Path, render: Callable[[int], tuple[np.ndarray, np.ndarray]], num_frames: int,
                          fps: float, size: tuple[int, int], label: str, quiet: bool, depth: bool = True) -> None:
    """Render decoded frames 0 .. ``num_frames - 1`` with ``render(i) -> (rgb (H, W, 3) uint8, depth
    (H, W) metres along the optical axis, 0 = nothing)`` into ``outdir/video.mp4`` (``fps`` frames/s,
    ``size`` (W, H)) and ``outdir/depth/{i:06d}.png`` (16-bit millimetres, :func:`depth_to_png16`).
    The depth folder is written aside and put in place whole (:func:`replace_dir`). ``depth=False``:
    the video alone (``render`` may return None for the depth)."""
    import cv2

    if not depth:
        with VideoWriter(outdir / "video.mp4", fps=fps, size=size) as video, \
                progress_bar(num_frames, label, enabled=not quiet) as bar:
            for i in range(num_frames):
                video.write(render(i)[0])
                bar.update(1)
        return
    depth_tmp = Path(tempfile.mkdtemp(prefix=".depth.", suffix=".tmp", dir=outdir))
    try:
        with VideoWriter(outdir / "video.mp4", fps=fps, size=size) as video, \
                progress_bar(num_frames, label, enabled=not quiet) as bar:
            for i in range(num_frames):
                rgb, depth = render(i)
                video.write(rgb)
                ok, png = cv2.imencode(".png", depth_to_png16(depth))
                if not ok:
                    raise RuntimeError(f"{depth_tmp / f'{i:06d}.png'}: OpenCV could not encode the depth PNG")
                (depth_tmp / f"{i:06d}.png").write_bytes(png.tobytes())
                bar.update(1)
        replace_dir(depth_tmp, outdir / "depth")
    finally:
        shutil.rmtree(depth_tmp, ignore_errors=True)


def demo_frames(poses: Sequence[np.ndarray], fps: float) -> tuple[Frame, ...]:
    """The scene's frames: decoded frame i at ``i / fps`` seconds, camera-to-world ``poses[i]`` (OpenCV
    axes), its depth image ``depth/{i:06d}.png`` (:func:`write_video_and_depth`)."""
    return tuple(Frame(index=i, time=i / fps, camera_to_world=np.array(p, float), depth=f"depth/{i:06d}.png")
                 for i, p in enumerate(poses))


def check_demo_params(num_frames: int, size: Sequence[int], fps: float, min_frames: int, why: str
                      ) -> tuple[int, int]:
    """Check a demo's ``num_frames`` (an integer >= ``min_frames``; ``why``: what needs that many),
    ``size`` (positive even (W, H) pixels: the video is yuv420p) and ``fps`` (frames/s, positive);
    returns (W, H). InputError naming the parameter otherwise."""
    if isinstance(num_frames, bool) or not isinstance(num_frames, (int, np.integer)) or num_frames < min_frames:
        raise InputError(f"num_frames: expected an integer >= {min_frames} ({why}), got {num_frames!r}")
    w, h = (int(v) for v in size)
    if w <= 0 or h <= 0 or w % 2 or h % 2:
        raise InputError(f"size: expected positive even (W, H) (the video is yuv420p), got {size!r}")
    if not (np.isfinite(fps) and fps > 0):
        raise InputError(f"fps: expected a positive number, got {fps!r}")
    return w, h


def make_demo_scene(outdir: str | os.PathLike, seed: int = 0, num_frames: int = 300,
                    size: tuple[int, int] = (640, 480), fps: float = 30.0, quiet: bool = False,
                    force: bool = False) -> Path:
    """Synthesise the demo room, render its walk, and write a scene folder; returns scene.json.

    ``outdir`` gets ``video.mp4``, ``depth/{index:06d}.png`` (z-depth, mm, 0 = missing),
    ``mesh.ply`` and ``scene.json`` (see the module docstring). Deterministic for
    (``seed``, ``num_frames``, ``size``, ``fps``). ``size`` is (W, H), both even;
    ``num_frames >= MIN_FRAMES``. An existing ``scene.json`` is removed first and the new
    one written last, so an interrupted run leaves no scene a rerun would trust; every
    other file is replaced atomically. Progress goes to stderr unless ``quiet``.

    A folder already holding the demo made with the same parameters and demo rules version
    (``DEMO_STAMP``, vistest.freshness, written
    after ``scene.json``) is left as it is unless ``force``: the geometry, depth and mesh are
    byte-deterministic, but the video is not across processes (pyrender's draw order of
    nodes with equal depth changes 2-3 anti-aliased edge pixels in some frames), and every
    video derived from the demo is keyed by the source's bytes, so re-rendering would make
    a rerun of the whole pipeline redo everything.
    """
    import trimesh  # noqa: F401  (fail early if missing)

    outdir = Path(outdir)
    w, h = check_demo_params(num_frames, size, fps, MIN_FRAMES, "the walk's planned events need it")
    outdir.mkdir(parents=True, exist_ok=True)
    scene_path, stamp = outdir / "scene.json", outdir / DEMO_STAMP
    params = {"seed": int(seed), "num_frames": int(num_frames), "size": [w, h], "fps": float(fps)}
    if not force and up_to_date(outdir, stamp, params):
        return scene_path
    rng = np.random.default_rng(seed)
    boxes = furniture(rng)
    k = demo_intrinsics((w, h))
    poses = camera_path(boxes, num_frames)
    check_path(boxes, poses, k, (w, h))

    stamp.unlink(missing_ok=True)
    scene_path.unlink(missing_ok=True)
    mesh_bytes = scene_mesh(boxes).export(file_type="ply")
    write_atomic(outdir / "mesh.ply", mesh_bytes)
    write_atomic(outdir / "mesh_objects.txt", scene_mesh_objects(boxes))

    renderer = DemoRenderer(boxes, k, (w, h))
    try:
        write_video_and_depth(outdir, lambda i: renderer.render(poses[i]), num_frames, fps, (w, h),
                              "Rendering demo scene", quiet)
    finally:
        renderer.close()

    frames = demo_frames(poses, fps)
    objects = tuple(SceneObject(str(n + 1), b.label, b.center.copy(), b.size.copy(), b.rotation.copy())
                    for n, b in enumerate(boxes))
    rx, ry, rz = ROOM_SIZE
    room = {"size_m2": rx * ry, "polygon": [[0.0, 0.0], [rx, 0.0], [rx, ry], [0.0, ry]], "height_m": rz}
    scene = Scene(scene_id=f"demo-seed{seed}", fps=float(fps), image_size=(w, h), camera=k, frames=frames,
                  objects=objects, video="video.mp4", mesh="mesh.ply", depth=DepthSpec(scale=1000.0), room=room,
                  mesh_objects="mesh_objects.txt", root=outdir)
    scene.save(scene_path)
    freshness.write(stamp, "demo scene", params)
    return scene_path


def up_to_date(outdir: Path, stamp: Path, params: dict) -> bool:
    """True when ``outdir`` holds a complete demo made with ``params`` under the current demo rules
    (the stamp: vistest.freshness.current; see make_demo_scene)."""
    if not freshness.current(stamp, "demo scene", params):
        return False
    try:
        scene = Scene.load(outdir / "scene.json")  # validates, and checks every file it names exists
    except (OSError, ValueError):
        return False
    return (len(scene.frames) == params["num_frames"] and list(scene.image_size) == params["size"]
            and scene.mesh_objects is not None)


def replace_dir(src: Path, dst: Path) -> None:
    """Move folder ``src`` onto ``dst``, removing an older ``dst`` (renames, no copying)."""
    if dst.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{dst.name}.old.", dir=dst.parent))
        os.replace(dst, old / dst.name)
        os.replace(src, dst)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(src, dst)


def demo_batch(scene_json: str | os.PathLike, questions_jsonl: str | os.PathLike, outdir: str | os.PathLike,
               scene_ids: list[str]) -> list[Path]:
    """A folder of scene folders for ``vistest batch`` from one scene (tests, benchmarks, a
    first try): ``OUTDIR/{scene_id}/scene.json`` is ``scene_json`` under each id, with its
    video by absolute path and without mesh or depth (occlusion none or boxes), and
    ``questions.jsonl`` holds ``questions_jsonl``'s questions of that scene under the new id,
    question ids prefixed ``{scene_id}-`` (ids must be unique across a run). Returns the folders."""
    src = Path(scene_json).resolve()
    doc = json.loads(src.read_text())
    video = (src.parent / doc["video"]).resolve()
    lines = [json.loads(ln) for ln in Path(questions_jsonl).read_text().splitlines() if ln.strip()]
    folders = []
    for sid in scene_ids:
        d = Path(outdir) / sid
        d.mkdir(parents=True, exist_ok=True)
        new = dict(doc, scene_id=sid, video=str(video), mesh=None, frames=[dict(f, depth=None) for f in doc["frames"]])
        new.pop("depth", None)
        write_atomic(d / "scene.json", json.dumps(new))
        qs = [dict(q, scene_id=sid, id=f"{sid}-{q['id']}") for q in lines if q.get("scene_id") == doc["scene_id"]]
        write_atomic(d / "questions.jsonl", "".join(json.dumps(q) + "\n" for q in qs))
        folders.append(d)
    return folders
