"""Synthetic scenes for tests and benchmarks (seeded, no files needed).

All poses are OpenCV camera-to-world (x right, y down, z forward); world +Z up
(vistest.geometry).
"""
from __future__ import annotations

import numpy as np

from .geometry import look_at, random_rotation
from .scene import FORMAT, Scene


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


# (label, size range min (x, y, z), max (x, y, z) in metres, most instances): furniture of a random room
ROOM_CATALOG = (
    ("chair", (0.42, 0.42, 0.75), (0.65, 0.65, 1.10), 10), ("table", (0.60, 0.50, 0.40), (2.00, 1.10, 0.80), 3),
    ("sofa", (1.40, 0.80, 0.70), (2.60, 1.00, 0.95), 2), ("bed", (1.90, 0.90, 0.40), (2.20, 2.00, 0.70), 2),
    ("cabinet", (0.40, 0.35, 0.50), (1.60, 0.65, 2.10), 6), ("tv", (0.70, 0.06, 0.45), (1.60, 0.10, 0.95), 1),
    ("lamp", (0.20, 0.20, 0.30), (0.50, 0.50, 1.70), 3), ("plant", (0.20, 0.20, 0.30), (0.70, 0.70, 1.90), 6),
    ("trash bin", (0.22, 0.22, 0.28), (0.45, 0.45, 0.75), 3), ("box", (0.20, 0.15, 0.10), (0.80, 0.60, 0.60), 8),
    ("shelf", (0.60, 0.25, 0.80), (2.00, 0.45, 2.10), 3), ("desk", (0.90, 0.50, 0.70), (1.80, 0.90, 0.78), 2),
    ("stool", (0.30, 0.30, 0.40), (0.50, 0.50, 0.80), 6), ("refrigerator", (0.55, 0.60, 1.40), (0.95, 0.80, 2.00), 1),
    ("armchair", (0.65, 0.65, 0.70), (1.00, 0.95, 1.05), 3), ("piano", (1.30, 0.50, 1.00), (1.60, 0.70, 1.40), 1),
    ("bench", (0.90, 0.30, 0.40), (2.00, 0.50, 0.50), 2), ("bathtub", (1.40, 0.65, 0.45), (1.90, 0.90, 0.65), 1),
    ("dresser", (0.70, 0.40, 0.70), (1.60, 0.60, 1.30), 2), ("nightstand", (0.35, 0.30, 0.40), (0.60, 0.50, 0.70), 2),
    ("ottoman", (0.40, 0.40, 0.35), (1.00, 0.80, 0.50), 2), ("bookcase", (0.50, 0.25, 1.00), (1.20, 0.40, 2.20), 3),
    ("suitcase", (0.35, 0.20, 0.50), (0.55, 0.30, 0.80), 3), ("basket", (0.25, 0.25, 0.20), (0.60, 0.45, 0.50), 5),
    ("fan", (0.30, 0.30, 0.40), (0.50, 0.50, 1.40), 2), ("speaker", (0.15, 0.15, 0.25), (0.40, 0.40, 1.10), 4),
    ("printer", (0.35, 0.30, 0.20), (0.60, 0.55, 0.45), 1), ("coat rack", (0.35, 0.35, 1.50), (0.60, 0.60, 1.90), 1),
    ("guitar", (0.35, 0.10, 0.95), (0.45, 0.15, 1.10), 2),
    ("washing machine", (0.55, 0.55, 0.80), (0.65, 0.65, 0.90), 1),
    ("radiator", (0.50, 0.08, 0.40), (1.60, 0.15, 0.90), 3), ("crate", (0.30, 0.30, 0.25), (0.70, 0.50, 0.50), 6),
    ("dining table", (1.20, 0.75, 0.72), (2.40, 1.10, 0.78), 1),
    ("side table", (0.35, 0.35, 0.40), (0.60, 0.60, 0.65), 4),
    ("floor mirror", (0.40, 0.05, 1.20), (0.80, 0.10, 1.90), 1), ("rug", (1.20, 0.80, 0.01), (3.00, 2.20, 0.02), 2),
    ("aquarium", (0.50, 0.30, 0.35), (1.50, 0.50, 0.70), 1), ("whiteboard", (0.90, 0.05, 0.60), (2.00, 0.10, 1.20), 1),
)


def random_room_scene(seed: int = 0, num_frames: int = 160, image_size=(160, 120), fps: float = 10.0) -> Scene:
    """A furnished rectangular room (labelled, upright furniture boxes that do not overlap) and a
    camera that walks two loops inside it (near the walls, then near the middle), turning to look
    around; for tests of the question generator. ``room`` has ``size_m2`` and its ``polygon``
    (floor outline; ``area_type`` ``single_room`` for odd seeds, ``all_room`` for even ones).
    Labels come from :data:`ROOM_CATALOG`, each with probability 0.4: one instance (40%) or 2 to
    the catalogue's most, sizes uniform in the catalogue's ranges (an open vocabulary of 40
    labels, so a label's size is not the only thing a room asks about).
    """
    rng = np.random.default_rng(seed)
    w, d, height = float(rng.uniform(3.0, 10.0)), float(rng.uniform(3.0, 7.0)), 2.6
    placed: list[tuple[str, np.ndarray, np.ndarray, float]] = []  # label, centre, size, yaw (radians)

    def footprint(c, s, yaw):
        r = np.array([[np.cos(yaw), -np.sin(yaw)], [np.sin(yaw), np.cos(yaw)]])
        return (np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * s[:2] / 2) @ r.T + c[:2]

    def separated(fa, fb, gap=0.05):
        for poly in (fa, fb):
            for k in range(4):
                e = poly[(k + 1) % 4] - poly[k]
                n = np.array([-e[1], e[0]]) / np.linalg.norm(e)
                pa, pb = fa @ n, fb @ n
                if pa.max() + gap <= pb.min() or pb.max() + gap <= pa.min():
                    return True
        return False

    labels = [c for c in ROOM_CATALOG if rng.uniform() < 0.4]
    for label, lo, hi, most in labels:
        for _ in range(1 if most == 1 or rng.uniform() < 0.4 else int(rng.integers(2, most + 1))):
            for _attempt in range(30):
                s = rng.uniform(lo, hi)
                yaw = float(rng.choice([0.0, np.pi / 2, np.pi, 1.5 * np.pi]) + rng.uniform(-0.35, 0.35))
                c = np.array([rng.uniform(0.1, w - 0.1), rng.uniform(0.1, d - 0.1), s[2] / 2])
                fp = footprint(c, s, yaw)
                if fp.min(0)[0] < 0.02 or fp.min(0)[1] < 0.02 or fp.max(0)[0] > w - 0.02 or fp.max(0)[1] > d - 0.02:
                    continue
                if all(separated(fp, footprint(pc, ps, py)) for _, pc, ps, py in placed):
                    placed.append((label, c, s, yaw))
                    break
    objects = []
    for i, (label, c, s, yaw) in enumerate(placed):
        rot = np.array([[np.cos(yaw), -np.sin(yaw), 0.0], [np.sin(yaw), np.cos(yaw), 0.0], [0.0, 0.0, 1.0]])
        objects.append({"id": str(i), "label": label, "center": c.tolist(), "size": s.tolist(),
                        "rotation": rot.tolist()})
    frames = []
    phase = rng.uniform(0, 2 * np.pi)
    turn = rng.choice([-1.0, 1.0])
    for i in range(num_frames):
        u = i / num_frames
        a = phase + 4 * np.pi * u  # two laps: the outer one, then the inner one
        r = 0.36 if u < 0.5 else 0.18
        eye = np.array([w / 2 + r * w * np.cos(a), d / 2 + r * d * np.sin(a), 1.3])
        yaw = a + turn * 2.5 * 2 * np.pi * u
        target = eye + np.array([np.cos(yaw), np.sin(yaw), -0.6])
        frames.append({"index": i, "time": i / fps, "camera_to_world": look_at(eye, target).tolist()})
    iw, ih = image_size
    doc = {"format": FORMAT, "scene_id": f"room{seed}", "fps": fps, "image_size": [iw, ih],
           "camera": {"fx": 1.1 * iw, "fy": 1.1 * iw, "cx": (iw - 1) / 2, "cy": (ih - 1) / 2},
           "room": {"size_m2": w * d, "polygon": [[0.0, 0.0], [w, 0.0], [w, d], [0.0, d]], "height_m": height,
                    "area_type": "single_room" if seed % 2 else "all_room"},
           "frames": frames, "objects": objects}
    return Scene.from_dict(doc)


def random_mesh_scene(outdir, seed: int = 0, num_frames: int = 24, num_objects: int = 12, image_size=(320, 240),
                      absent: int = 1) -> Scene:
    """A room of random object meshes with per-vertex object ids, written to ``outdir``
    (``mesh.ply``, ``mesh_objects.txt``, ``scene.json``) and loaded; for tests of the mesh
    z-buffer and of instance visibility against pyrender.

    Objects are rotated and tilted ellipsoids, cylinders, cones and boxes (closed, outward-wound)
    standing on or floating above the floor, some touching or intersecting; their boxes are the
    tight bounds of their vertices in their own rotated frame. The floor and walls (open quads,
    normals into the room) and two unannotated clutter shapes belong to no object. The last
    ``absent`` objects have a box but no vertex in the mesh (an object missing from the
    reconstruction). Cameras look at random objects from random points inside the room; every
    ninth frame (offset 4) has no pose, frame 2 stands inside object 0's box.
    """
    from pathlib import Path

    import trimesh

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    parts: list[tuple[trimesh.Trimesh, str]] = []
    objects = []
    for i in range(num_objects):
        kind = i % 4
        size = rng.uniform(0.25, 1.1, 3)
        if kind == 0:
            m = trimesh.creation.icosphere(subdivisions=3)
            m.apply_scale(size / 2)
        elif kind == 1:
            m = trimesh.creation.cylinder(radius=0.5, height=1.0, sections=24)
            m.apply_scale(size)
        elif kind == 2:
            m = trimesh.creation.cone(radius=0.5, height=1.0, sections=24)
            m.apply_translation((0, 0, -0.5))
            m.apply_scale(size)
        else:
            m = trimesh.creation.box(extents=size)
        rot = random_rotation(rng) if i % 3 else np.array(
            trimesh.transformations.rotation_matrix(rng.uniform(0, 2 * np.pi), (0, 0, 1)))[:3, :3]
        centre = rng.uniform([-2.2, -2.2, 0.3], [2.2, 2.2, 1.6])
        local = np.asarray(m.vertices)
        lo, hi = local.min(0), local.max(0)
        m = trimesh.Trimesh(local @ rot.T + centre, m.faces, process=False)
        objects.append({"id": f"o{i}", "label": ("ball", "can", "cone", "crate")[kind],
                        "center": (rot @ ((lo + hi) / 2) + centre).tolist(), "size": (hi - lo).tolist(),
                        "rotation": rot.tolist()})
        if i < num_objects - absent:
            parts.append((m, f"o{i}"))
    for _ in range(2):  # clutter of no object
        m = trimesh.creation.icosphere(subdivisions=2)
        m.apply_scale(rng.uniform(0.2, 0.5, 3))
        m.apply_translation(rng.uniform([-2, -2, 0.2], [2, 2, 1.2]))
        parts.append((m, ""))
    r, top = 3.0, 2.6
    quads = [[(-r, -r, 0), (r, -r, 0), (r, r, 0), (-r, r, 0)],  # floor, up
             [(-r, -r, 0), (-r, -r, top), (r, -r, top), (r, -r, 0)], [(r, r, 0), (r, r, top), (-r, r, top), (-r, r, 0)],
             [(-r, r, 0), (-r, r, top), (-r, -r, top), (-r, -r, 0)], [(r, -r, 0), (r, -r, top), (r, r, top), (r, r, 0)]]
    for q in quads:
        parts.append((trimesh.Trimesh(np.array(q, float), [[0, 1, 2], [0, 2, 3]], process=False), ""))
    mesh = trimesh.util.concatenate([p for p, _ in parts])
    labels = [oid for p, oid in parts for _ in range(len(p.vertices))]
    mesh.export(outdir / "mesh.ply")
    (outdir / "mesh_objects.txt").write_text("".join(f"{x}\n" for x in labels))
    frames = []
    for i in range(num_frames):
        target = np.array(objects[int(rng.integers(num_objects))]["center"]) + rng.normal(0, 0.2, 3)
        eye = rng.uniform([-2.7, -2.7, 0.4], [2.7, 2.7, 2.2])
        if i == 2:
            eye = np.array(objects[0]["center"])
        pose = None if i % 9 == 4 else look_at(eye, target).tolist()
        frames.append({"index": i, "time": i / 30.0, "camera_to_world": pose})
    w, h = image_size
    doc = {"format": FORMAT, "scene_id": f"meshroom{seed}", "fps": 30.0, "image_size": [w, h],
           "camera": {"fx": 0.8 * w, "fy": 0.78 * w, "cx": 0.47 * w, "cy": 0.52 * h},
           "mesh": "mesh.ply", "mesh_objects": "mesh_objects.txt", "frames": frames, "objects": objects}
    import json

    (outdir / "scene.json").write_text(json.dumps(doc))
    return Scene.load(outdir / "scene.json")


def surface_from_points(points: np.ndarray, k: int = 12, max_gap: float = 0.75 * np.pi, votes: int = 2,
                        fill: bool = True) -> np.ndarray:
    """Triangles (T, 3) int64 over the vertices of a mesh published without its faces: a stand-in
    surface for tests and benchmarks, NOT the original mesh. Deterministic, numpy only.

    Each vertex's umbrella is its local 2D Delaunay star: its ``k`` nearest neighbours are
    projected onto its tangent plane (normal: their least principal axis) and a neighbour j is a
    Delaunay neighbour when some circle through the vertex and j holds none of the other
    neighbours (an interval test along the perpendicular bisector of the edge); the umbrella is
    the fan between angularly consecutive Delaunay neighbours less than ``max_gap`` radians apart
    (a larger gap is a boundary or a hole). A triangle is kept, once, when the umbrellas of at
    least ``votes`` of its three corners make it: with ``votes=2`` the umbrellas' disagreements
    are dropped, and with ``fill`` the dropped triangles that close a hole (two or three of their
    edges on its border, none already shared by two faces) are put back, in order. The result is
    manifold-like: about two triangles per vertex, nearly every edge with one or two faces, no
    overlapping fans, and small holes where the decimated scan's vertices are sparse. On ScanNet
    scene0000_00's 81,369 vertices (raw scan world): 154,943 triangles (1.90 per vertex; 217,347
    edges with two faces, 22,509 boundary edges, 2,536 with three or more), where the real ``_vh_clean_2.ply`` has
    about 145k (the issue's 290k-triangle two-sided mesh); at the sample's frame 102, 1.9% of the 160x120
    samples show no face where the vertices' 3x3 splats show a surface (the previous stand-in's overlapping
    fans: 0.85%; the real mesh's holes are not known)."""
    from scipy.spatial import cKDTree

    p = np.asarray(points, np.float64)
    _, nb = cKDTree(p).query(p, k + 1)
    nb = nb[:, 1:]
    q = p[nb] - p[:, None]
    _, vec = np.linalg.eigh(np.einsum("vki,vkj->vij", q, q))
    n = vec[:, :, 0]
    a = np.where(np.abs(n[:, :1]) < 0.9, np.array([[1.0, 0.0, 0.0]]), np.array([[0.0, 1.0, 0.0]]))
    e1 = np.cross(n, a)
    e1 /= np.linalg.norm(e1, axis=1, keepdims=True)
    e2 = np.cross(n, e1)
    x = np.stack([np.einsum("vki,vi->vk", q, e1), np.einsum("vki,vi->vk", q, e2)], -1)  # (V, k, 2) tangent plane
    # circles through the vertex (origin) and x_j: centre x_j / 2 + s perp(x_j); x_i lies outside
    # when s * (x_i . perp_j) <= (|x_i|^2 - x_i . x_j) / 2. The edge exists when some s satisfies all i != j.
    perp = np.stack([-x[..., 1], x[..., 0]], -1)
    lhs = np.einsum("vid,vjd->vji", x, perp)
    rhs = ((x ** 2).sum(-1)[:, None, :] - np.einsum("vid,vjd->vji", x, x)) / 2
    other = ~np.eye(k, dtype=bool)[None]
    with np.errstate(divide="ignore", invalid="ignore"):
        s = rhs / lhs
    lo = np.where((lhs < 0) & other, s, -np.inf).max(-1)
    hi = np.where((lhs > 0) & other, s, np.inf).min(-1)
    edge = (lo < hi) & ~((lhs == 0) & (rhs < 0) & other).any(-1)
    ang = np.where(edge, np.arctan2(x[..., 1], x[..., 0]), np.inf)
    order = np.argsort(ang, axis=1, kind="stable")
    nbs, angs = np.take_along_axis(nb, order, 1), np.take_along_axis(ang, order, 1)
    ne = edge.sum(1)[:, None]
    slot = np.arange(k)[None]
    nxt = np.where(slot + 1 < ne, slot + 1, 0)  # the next Delaunay neighbour, cyclically
    with np.errstate(invalid="ignore"):
        gap = (np.take_along_axis(angs, nxt, 1) - angs) % (2 * np.pi)
    keep = (slot < ne) & (ne >= 2) & (gap > 0) & (gap < max_gap)
    centre = np.repeat(np.arange(len(p))[:, None], k, 1)
    f = np.stack([centre, nbs, np.take_along_axis(nbs, nxt, 1)], -1)[keep]
    _, first, count = np.unique(np.sort(f, 1), axis=0, return_index=True, return_counts=True)
    kept = f[np.sort(first[count >= votes])]
    return np.concatenate([kept, _fill_holes(kept, f[np.sort(first[count < votes])])]) if fill else kept


def _fill_holes(faces: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """The ``candidates`` (in order) that close a hole of ``faces`` without making an edge with
    three faces: at least two of their edges are boundary edges (one face) and none has two."""
    edges: dict[tuple[int, int], int] = {}
    for tri in faces.tolist():
        for a, b in ((tri[0], tri[1]), (tri[1], tri[2]), (tri[2], tri[0])):
            e = (a, b) if a < b else (b, a)
            edges[e] = edges.get(e, 0) + 1
    added = []
    for tri in candidates.tolist():
        es = [(a, b) if a < b else (b, a) for a, b in ((tri[0], tri[1]), (tri[1], tri[2]), (tri[2], tri[0]))]
        used = [edges.get(e, 0) for e in es]
        if max(used) <= 1 and sum(used) >= 2:
            added.append(tri)
            for e in es:
                edges[e] = edges.get(e, 0) + 1
    return np.array(added, np.int64).reshape(-1, 3)
