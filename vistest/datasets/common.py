"""Shared pieces of the dataset adapters: the boundary types and the conversions
that more than one dataset needs (written once, tested once).

Two frozen types cross the adapter boundary:

* :class:`Capture`: what a frame source (ScanNet, ARKitScenes, ScanNet++,
  EmbodiedScan) read: frames with camera-to-world poses (OpenCV axes, metres, the
  *pose world*), intrinsics for ``image_size``, depth, mesh, and optionally its own
  boxes.
* :class:`BoxSet`: what a box source read: objects in the *box world* and the rigid
  ``boxes_to_world`` (4x4) that maps the box world into the pose world.

:func:`assemble` joins the two into a :class:`~vistest.scene.Scene` and
:func:`write_scene` saves it (``Scene.save``) with a ``provenance.json`` beside it
that says where every piece came from, which facts were relied on, and which
alignment matrices exist for the scene (``vistest audit`` tests them as hypotheses).
"""
from __future__ import annotations

import builtins
import collections
import json
import os
import pickle
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import write_atomic
from ..errors import InputError
from ..jsonl import parse_json, read_text
from ..scene import DepthSpec, Frame, Intrinsics, Scene, SceneError, SceneObject, check_scene_id

PROVENANCE = "provenance.json"


class AdapterError(InputError):
    """Bad dataset input: the message names the file, the field and what was expected."""


# ---------------------------------------------------------------------------------------
# boundary types
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BoxSet:
    """Objects in their own *box world*, and how that world maps into the pose world.

    ``boxes_to_world``: 4x4 rigid transform, box world -> pose world. ``world``: a
    short name of the box world (e.g. ``"scannet axis-aligned"``). ``alignments``:
    named 4x4 matrices known for this scene (e.g. ScanNet's ``axisAlignment``), kept
    in the provenance for the audit. ``relied_on``: facts used that the dataset's own
    code does not state. ``vertex_objects``: the object id of each vertex of the capture's mesh
    ("" for none), when the annotation labels the mesh itself (ScanNet's segments): written
    beside scene.json as its ``mesh_objects`` file. ``notes``: checks made while reading (kept in
    the provenance as ``box_notes``).
    """

    objects: tuple[SceneObject, ...]
    boxes_to_world: np.ndarray
    world: str
    source: str
    room: dict | None = None
    alignments: tuple[tuple[str, np.ndarray], ...] = ()
    relied_on: tuple[str, ...] = ()
    vertex_objects: tuple[str, ...] | None = None
    notes: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ColorFrames:
    """The colour images of a frame source whose native layout has frames, not a video
    (ScanNet ``color/{i}.jpg``, ARKitScenes ``lowres_wide/*.png``, ScanNet++ ``iphone/rgb/*.jpg``,
    3RScan ``sequence/frame-*.color.jpg``), for ``vistest import --video-from-frames``
    (:mod:`vistest.datasets.framevideo`).

    ``images``: (decoded frame number, absolute path) in increasing frame number: the frame
    number is the scene's ``Frame.index`` the image belongs to. ``turn``: the rotation that
    makes the stored image the scene's frame (:func:`rotated_camera`'s 'cw', 'ccw', '180' or
    None). ``resize``: the images are resized to the scene's ``image_size`` (the intrinsics
    were scaled to it; ScanNet++ ``image_size``); otherwise an image of another size is an error.
    ``pattern``: how the files are named, for messages and the provenance. ``frame_step``: the
    adapter takes ``-O frame_step`` (named in the warning for an export of every N-th frame).
    """

    images: tuple[tuple[int, str], ...]
    pattern: str
    turn: str | None = None
    resize: bool = False
    frame_step: bool = True


@dataclass(frozen=True)
class Capture:
    """Frames and cameras read from a frame source, in the pose world (see module doc).

    ``mesh`` and every ``Frame.depth`` / ``Frame.image`` are absolute paths here; :func:`write_scene`
    makes them relative to the scene file. ``boxes`` is the source's own annotation
    (None when it has none). ``room``: the room the capture's own data give (from its mesh), used
    unless the boxes' source gives one. ``dataset``/``scene_id`` identify the scan for box
    sources that need them. ``color``: the colour images, for a layout that has frames
    rather than a video (None otherwise). ``video``: the scan's own video whose decoded frame
    numbers the frame indices are (MultiScan's ``.mp4``), used when no other video is given.
    """

    dataset: str
    scene_id: str
    source: str
    fps: float
    image_size: tuple[int, int]
    camera: Intrinsics
    frames: tuple[Frame, ...]
    depth: DepthSpec | None = None
    mesh: str | None = None
    boxes: BoxSet | None = None
    alignments: tuple[tuple[str, np.ndarray], ...] = ()
    relied_on: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict)
    room: dict | None = None  # the scene's room from the capture's own data (its mesh: vistest.datasets.room)
    color: ColorFrames | None = None
    video: str | None = None


# ---------------------------------------------------------------------------------------
# small readers
# ---------------------------------------------------------------------------------------
def read_json(path: str | os.PathLike, what: str) -> Any:
    """Parse a JSON file; errors name the file and what it should have been."""
    path = Path(path)
    return parse_json(read_text(path, AdapterError, what), f"{path}: {what}", AdapterError)


class _SafeUnpickler(pickle.Unpickler):
    """Rebuilds plain Python values and numpy arrays/scalars/dtypes; refuses every other global.

    Allowed globals (each mapped to one fixed callable, whatever module spelling the pickle
    uses): numpy's array and scalar reconstructors under their numpy 1.x (``numpy.core.*``)
    and 2.x (``numpy._core.*``) names, ``numpy.ndarray``, ``numpy.dtype``, ``_codecs.encode``
    restricted to latin-1 (how protocols 0-2 store ``bytes``, hence numpy buffers), builtin
    containers and scalars (``__builtin__`` is protocol 0-2's name for ``builtins``) and
    ``collections.OrderedDict``. Nothing is imported by name, so a pickle can never reach
    ``os.system``, ``eval`` or any other callable.
    """

    def find_class(self, module: str, name: str):
        allowed = _pickle_globals()
        module = {"__builtin__": "builtins", "copy_reg": "copyreg"}.get(module, module)
        try:
            return allowed[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name} (only numpy arrays and plain Python "
                                         f"values are read)") from None


def _latin1_encode(text, encoding: str = "latin1"):
    """``_codecs.encode`` as protocols 0-2 use it for ``bytes``: latin-1 only."""
    if encoding.lower().replace("_", "-") not in ("latin1", "latin-1", "iso-8859-1") or not isinstance(text, str):
        raise pickle.UnpicklingError(f"refusing _codecs.encode(..., {encoding!r}): only latin-1 text encodes bytes")
    return text.encode("latin-1")


_PICKLE_GLOBALS: dict = {}


def _pickle_globals() -> dict:
    """The (module, name) -> callable table of :class:`_SafeUnpickler` (built once)."""
    if not _PICKLE_GLOBALS:
        arr = np.zeros(1)
        reconstruct = arr.__reduce__()[0]
        frombuffer = arr.__reduce_ex__(5)[0]
        scalar = np.float64(0).__reduce__()[0]
        table = {("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype, ("_codecs", "encode"): _latin1_encode,
                 ("collections", "OrderedDict"): collections.OrderedDict}
        for core in ("numpy.core", "numpy._core"):
            table[(f"{core}.multiarray", "_reconstruct")] = reconstruct
            table[(f"{core}.multiarray", "scalar")] = scalar
            table[(f"{core}.numeric", "_frombuffer")] = frombuffer
        for name in ("list", "dict", "tuple", "set", "frozenset", "str", "int", "float", "bool", "bytes", "bytearray",
                     "complex"):
            table[("builtins", name)] = getattr(builtins, name)
        _PICKLE_GLOBALS.update(table)
    return _PICKLE_GLOBALS


def read_pickle(path: str | os.PathLike, what: str) -> Any:
    """A pickle (any protocol, 0-5) of plain values and numpy arrays, read safely
    (:class:`_SafeUnpickler`); errors name the file and what it should have been."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            return _SafeUnpickler(fh).load()
    except OSError as e:
        raise AdapterError(f"{path}: cannot read {what} ({e.strerror})") from None
    except (pickle.UnpicklingError, EOFError, AttributeError, ValueError, TypeError, IndexError, KeyError) as e:
        raise AdapterError(f"{path}: cannot read {what} ({e})") from None


def read_matrix_txt(path: str | os.PathLike, shape: tuple[int, int] = (4, 4),
                    allow_neg_inf: bool = False) -> np.ndarray:
    """A whitespace-separated numeric matrix file (ScanNet's ``pose/*.txt``, ``intrinsic_*.txt``).

    ``-inf`` entries are accepted only with ``allow_neg_inf`` (ScanNet's lost tracking).
    """
    path = Path(path)
    try:
        m = np.loadtxt(path, dtype=np.float64, ndmin=2)
    except OSError as e:
        raise AdapterError(f"{path}: cannot read matrix ({e})") from None
    except ValueError as e:
        raise AdapterError(f"{path}: expected a {shape[0]}x{shape[1]} numeric matrix ({e})") from None
    if m.shape != shape:
        raise AdapterError(f"{path}: expected a {shape[0]}x{shape[1]} matrix, got {m.shape[0]}x{m.shape[1]}")
    bad = ~np.isfinite(m)
    if allow_neg_inf:
        bad &= ~np.isneginf(m)
    if bad.any():
        raise AdapterError(f"{path}: expected finite numbers, got {float(m[bad][0])!r}")  # nan, not np.float64(nan)
    return m


def matrix(value: Any, shape: tuple[int, ...], where: str) -> np.ndarray:
    """``value`` as a finite float array of ``shape``; ``where`` = "file: field" for errors."""
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise AdapterError(f"{where}: expected numbers of shape {list(shape)}, got {value!r}") from None
    if a.size == int(np.prod(shape)) and a.shape != shape:
        a = a.reshape(shape)
    if a.shape != shape:
        raise AdapterError(f"{where}: expected shape {list(shape)}, got {list(a.shape)}")
    if not np.isfinite(a).all():
        raise AdapterError(f"{where}: expected finite numbers, got {a.tolist()}")
    return a


def image_size_of(path: str | os.PathLike) -> tuple[int, int]:
    """(W, H) of an image file (read with OpenCV)."""
    import cv2

    img = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if img is None:
        raise AdapterError(f"{path}: cannot read image")
    return int(img.shape[1]), int(img.shape[0])


def mesh_vertices(path: str | os.PathLike) -> np.ndarray:
    """(N, 3) vertices of a PLY/OBJ mesh or point cloud, in file order (no merging)."""
    import trimesh

    try:
        geom = trimesh.load(str(path), process=False)
    except Exception as e:  # trimesh raises many types for bad files
        raise AdapterError(f"{path}: cannot read mesh ({e})") from None
    v = np.asarray(getattr(geom, "vertices", np.zeros((0, 3))), np.float64)
    if v.ndim != 2 or v.shape[1] != 3 or len(v) == 0:
        raise AdapterError(f"{path}: expected a mesh or point cloud with vertices")
    return v


# ---------------------------------------------------------------------------------------
# conversions (each dataset's box/pose convention -> canonical)
# ---------------------------------------------------------------------------------------
def intrinsics_from_matrix(k: np.ndarray) -> Intrinsics:
    """Intrinsics from a 3x3 (or 4x4) camera matrix ``[[fx,0,cx],[0,fy,cy],...]``."""
    k = np.asarray(k, float)
    return Intrinsics(float(k[0, 0]), float(k[1, 1]), float(k[0, 2]), float(k[1, 2]))




def orthonormalize(r: np.ndarray) -> np.ndarray:
    """Nearest proper rotation (SVD), for rotations stored in float32 or rounded text."""
    u, _, vt = np.linalg.svd(np.asarray(r, float))
    if np.linalg.det(u @ vt) < 0:
        u[:, -1] = -u[:, -1]
    return u @ vt


def obb_box(obb: Any, where: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(center, size, rotation) of an ``{centroid, axesLengths, normalizedAxes}`` box.

    The oriented-box record of ARKitScenes (``segments.obbAligned``), ScanNet++
    (``segGroups[].obb``) and VSI-Bench's meta info: ``axesLengths`` are full extents and the
    rows of ``normalizedAxes`` are the axes (:func:`rotation_from_axes_rows`).
    """
    if not isinstance(obb, dict) or not {"centroid", "axesLengths", "normalizedAxes"} <= set(obb):
        raise AdapterError(f"{where}: expected centroid, axesLengths and normalizedAxes")
    size = matrix(obb["axesLengths"], (3,), f"{where}.axesLengths")
    if (size <= 0).any():
        raise AdapterError(f"{where}.axesLengths: expected positive full extents, got {size.tolist()}")
    return (matrix(obb["centroid"], (3,), f"{where}.centroid"), size,
            rotation_from_axes_rows(obb["normalizedAxes"], f"{where}.normalizedAxes"))


def rotation_from_axes_rows(normalized_axes, where: str) -> np.ndarray:
    """Box rotation (columns = box axes) from a 9-vector whose *rows* are the axes.

    This is the ``normalizedAxes`` rule of ARKitScenes (``compute_box_3d`` computes
    ``rotmat.T @ local``), ScanNet++ (``OrientedBoundingBox(c, reshape(3,3).T, size)``)
    and VSI-Bench's meta info: ``R = reshape(3, 3).T``. Rejects non-rotations
    (a reflection means the reading is wrong).
    """
    rows = matrix(normalized_axes, (3, 3), where)
    r = rows.T
    err = float(np.abs(r.T @ r - np.eye(3)).max())
    if err > 1e-3:
        raise AdapterError(f"{where}: normalizedAxes is not orthonormal (max |R^T R - I| = {err:.3g})")
    if np.linalg.det(r) < 0:
        raise AdapterError(f"{where}: normalizedAxes has det -1 (a reflection), expected a rotation")
    return orthonormalize(r)


def euler_zxy(alpha: float, beta: float, gamma: float) -> np.ndarray:
    """EmbodiedScan's 9-DoF box rotation: ``R = Rz(alpha) @ Rx(beta) @ Ry(gamma)`` (radians).

    As pytorch3d's ``euler_angles_to_matrix(angles, 'ZXY')`` composes it; box corners
    are ``R @ local`` (EmbodiedScan's ``rotation_3d_in_euler`` multiplies by ``R^T``
    on row vectors), so the columns of R are the box axes.
    """
    ca, sa, cb, sb, cg, sg = np.cos(alpha), np.sin(alpha), np.cos(beta), np.sin(beta), np.cos(gamma), np.sin(gamma)
    rz = np.array([[ca, -sa, 0.0], [sa, ca, 0.0], [0.0, 0.0, 1.0]])
    rx = np.array([[1.0, 0.0, 0.0], [0.0, cb, -sb], [0.0, sb, cb]])
    ry = np.array([[cg, 0.0, sg], [0.0, 1.0, 0.0], [-sg, 0.0, cg]])
    return rz @ rx @ ry


def aabb_object(oid: str, label: str, points: np.ndarray) -> SceneObject:
    """Axis-aligned box (identity rotation) around ``points`` (N, 3)."""
    lo, hi = points.min(axis=0), points.max(axis=0)
    size = np.maximum(hi - lo, 1e-3)  # a flat object still gets a positive extent
    return SceneObject(oid, label, (lo + hi) / 2.0, size, np.eye(3))


def pose_or_invalid(m: np.ndarray, where: str) -> np.ndarray | None:
    """A camera-to-world 4x4, or None for a lost-tracking pose (any non-finite entry).

    A finite pose must be rigid (orthonormal rotation, last row 0 0 0 1 within 1e-3);
    small float32 drift is removed by re-orthonormalizing.
    """
    m = np.asarray(m, float)
    if not np.isfinite(m).all():
        return None
    if not np.allclose(m[3], [0, 0, 0, 1], atol=1e-3):
        raise AdapterError(f"{where}: last row must be [0, 0, 0, 1], got {m[3].tolist()}")
    r = m[:3, :3]
    err = float(np.abs(r.T @ r - np.eye(3)).max())
    if err > 1e-3 or np.linalg.det(r) < 0:
        raise AdapterError(f"{where}: rotation is not a proper rotation (max |R^T R - I| = {err:.3g}, "
                           f"det {np.linalg.det(r):.3f})")
    out = m.copy()
    out[:3, :3] = orthonormalize(r)
    out[3] = [0, 0, 0, 1]
    return out


# ---------------------------------------------------------------------------------------
# sky direction (ARKitScenes): rotate images, K and pose together
# ---------------------------------------------------------------------------------------
SKY_DIRECTIONS = ("Up", "Left", "Right", "Down")
# image rotation applied for each sky direction (ARKitScenes depth_upsampling/dataset.py rotate_image)
SKY_ROTATION = {"Up": None, "Left": "cw", "Right": "ccw", "Down": "180"}


def rotated_camera(k: Intrinsics, size: tuple[int, int],
                   turn: str | None) -> tuple[Intrinsics, tuple[int, int], np.ndarray]:
    """Camera of an image rotated by ``turn`` ('cw' 90 deg clockwise, 'ccw', '180', None).

    Returns the new intrinsics, new (W, H) and ``M`` (4x4) with ``c2w_new = c2w @ M``.
    A pixel (u, v) of the W x H image moves to: cw (H-1-v, u); ccw (v, W-1-u);
    180 (W-1-u, H-1-v) (OpenCV pixel centres), so for cw the new camera axes are
    x' = -y, y' = x: fx' = fy, cx' = H-1-cy, fy' = fx, cy' = cx.
    """
    w, h = size
    m = np.eye(4)
    if turn is None:
        return k, size, m
    if turn == "cw":
        m[:3, :3] = [[0, 1, 0], [-1, 0, 0], [0, 0, 1]]
        return Intrinsics(k.fy, k.fx, h - 1 - k.cy, k.cx), (h, w), m
    if turn == "ccw":
        m[:3, :3] = [[0, -1, 0], [1, 0, 0], [0, 0, 1]]
        return Intrinsics(k.fy, k.fx, k.cy, w - 1 - k.cx), (h, w), m
    if turn == "180":
        m[:3, :3] = [[-1, 0, 0], [0, -1, 0], [0, 0, 1]]
        return Intrinsics(k.fx, k.fy, w - 1 - k.cx, h - 1 - k.cy), (w, h), m
    raise ValueError(f"turn: expected 'cw', 'ccw', '180' or None, got {turn!r}")


def rotate_image(img: np.ndarray, turn: str | None) -> np.ndarray:
    """Rotate an image array as :func:`rotated_camera` describes."""
    import cv2

    codes = {"cw": cv2.ROTATE_90_CLOCKWISE, "ccw": cv2.ROTATE_90_COUNTERCLOCKWISE, "180": cv2.ROTATE_180}
    return img if turn is None else cv2.rotate(img, codes[turn])


def read_key_values(path: Path, what: str) -> dict[str, str]:
    """A ``key = value`` text file (ScanNet's ``sceneXXXX_XX.txt``, 3RScan's ``_info.txt``) as
    ``{key: value}``, both stripped; blank lines skipped; any other line is an error naming the
    file and line. ``what`` names the file in the error of an unreadable file."""
    out = {}
    for n, line in enumerate(read_text(path, AdapterError, what).splitlines(), 1):
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise AdapterError(f"{path}: line {n}: expected 'key = value', got {line!r}")
        out[key.strip()] = value.strip()
    return out


def rotated_depth(src: Path | str | None, i: int, turn: str | None, out_dir: Path) -> str | None:
    """The depth image of frame ``i`` as the scene's frame: the original file (``turn`` None),
    or a copy rotated by ``turn`` (:func:`rotate_image`) written to ``out_dir/depth/{i:06d}.png``."""
    if src is None:
        return None
    if turn is None:
        return str(src)
    import cv2

    img = cv2.imread(str(src), cv2.IMREAD_UNCHANGED)
    if img is None:
        raise AdapterError(f"{src}: cannot read depth image")
    ok, png = cv2.imencode(".png", rotate_image(img, turn))
    dst = Path(out_dir) / "depth" / f"{i:06d}.png"
    write_atomic(dst, png.tobytes())
    return str(dst)


def inside_share(points: np.ndarray, center: np.ndarray, size: np.ndarray, rotation: np.ndarray,
                 tol: float = 0.02) -> float:
    """Share of ``points`` (N, 3) inside the box grown by ``tol`` metres on every side."""
    if len(points) == 0:
        return float("nan")
    local = (np.asarray(points, float) - center) @ rotation
    return float((np.abs(local) <= size / 2 + tol).all(axis=1).mean())


# ---------------------------------------------------------------------------------------
# assembling and writing
# ---------------------------------------------------------------------------------------
def assemble(capture: Capture, boxes: BoxSet | None, out_dir: str | os.PathLike, video: str | None = None) -> Scene:
    """The Scene for ``capture`` with ``boxes`` (None: no objects), paths relative to ``out_dir``."""
    out_dir = Path(out_dir).resolve()

    def rel(p: str | None) -> str | None:
        return None if p is None else os.path.relpath(Path(p).resolve(), out_dir)

    frames = tuple(Frame(f.index, f.time, f.camera_to_world, f.intrinsics, rel(f.depth), rel(f.image))
                   for f in capture.frames)
    objects = boxes.objects if boxes is not None else ()
    b2w = boxes.boxes_to_world if boxes is not None else np.eye(4)
    room = boxes.room if boxes is not None and boxes.room else capture.room  # a box source's own room wins
    return Scene(scene_id=capture.scene_id, fps=float(capture.fps), image_size=capture.image_size,
                 camera=capture.camera, frames=frames, objects=objects, boxes_to_world=np.asarray(b2w, float),
                 video=rel(video), mesh=rel(capture.mesh), depth=capture.depth, room=room, root=out_dir)


def provenance(capture: Capture, boxes: BoxSet | None, video_record: dict | None = None) -> dict:
    """The ``provenance.json`` document: sources, box world, alignments, relied-on facts, and
    (``video_record``) how the video was made from the colour frames."""
    alignments = list(capture.alignments) + (list(boxes.alignments) if boxes is not None else [])
    return {
        "format": "vistest.provenance/1",
        "dataset": capture.dataset,
        "scene_id": capture.scene_id,
        "frames_from": capture.source,
        "boxes_from": boxes.source if boxes is not None else None,
        "box_world": boxes.world if boxes is not None else None,
        "boxes_to_world": np.asarray(boxes.boxes_to_world if boxes is not None else np.eye(4)).tolist(),
        "alignments": [{"name": n, "matrix": np.asarray(m, float).tolist()} for n, m in alignments],
        "relied_on": list(capture.relied_on) + (list(boxes.relied_on) if boxes is not None else []),
        **({"notes": capture.extra} if capture.extra else {}),
        **({"box_notes": boxes.notes} if boxes is not None and boxes.notes else {}),
        **({"video_from_frames": video_record} if video_record else {}),
    }


MESH_OBJECTS = "mesh_objects.txt"  # per-vertex object ids of the mesh, beside scene.json (docs/scene-format.md)


def write_scene(capture: Capture, boxes: BoxSet | None, out_dir: str | os.PathLike, video: str | None = None,
                video_record: dict | None = None) -> Path:
    """Write ``out_dir/scene.json`` (via ``Scene.save``, validated by a reload),
    ``out_dir/mesh_objects.txt`` when the boxes label the mesh's vertices, and
    ``out_dir/provenance.json``; returns the scene path. Both writes are atomic. A scene id
    that cannot name files (``-O scene=../x``) is refused before anything is written.
    ``video_record``: :func:`vistest.datasets.framevideo.frames_video`'s record, kept in the provenance."""
    out_dir = Path(out_dir)
    check_scene_id(capture.scene_id, f"{out_dir / 'scene.json'} (the id of {capture.source}; -O scene sets it)")
    out_dir.mkdir(parents=True, exist_ok=True)
    scene = assemble(capture, boxes, out_dir, video=video)
    if boxes is not None and boxes.vertex_objects is not None and scene.mesh is not None:
        write_atomic(out_dir / MESH_OBJECTS, "".join(f"{o}\n" for o in boxes.vertex_objects))
        scene = replace(scene, mesh_objects=MESH_OBJECTS)
    path = out_dir / "scene.json"
    write_atomic(out_dir / PROVENANCE, json.dumps(provenance(capture, boxes, video_record), indent=1) + "\n")
    scene.save(path)
    Scene.load(path)  # the written file must validate; raises SceneError naming the field otherwise
    return path


# ---------------------------------------------------------------------------------------
# option parsers (adapter options arrive as JSON scalars or strings)
# ---------------------------------------------------------------------------------------
def positive_int(v: Any) -> int:
    """An integer >= 1."""
    if isinstance(v, bool) or not (isinstance(v, int) or (isinstance(v, str) and v.strip().isdigit())) or int(v) < 1:
        raise ValueError(f"expected a positive integer, got {v!r}")
    return int(v)


def positive_float(v: Any) -> float:
    """A finite number > 0."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"expected a positive number, got {v!r}") from None
    if isinstance(v, bool) or not np.isfinite(x) or x <= 0:
        raise ValueError(f"expected a positive number, got {v!r}")
    return x


def size_wh(v: Any) -> tuple[int, int]:
    """``"WxH"`` or ``[W, H]`` -> (W, H) positive integers."""
    try:
        parts = v.lower().split("x") if isinstance(v, str) else list(v)
        w, h = (positive_int(int(p) if isinstance(p, str) else p) for p in parts)
    except (TypeError, ValueError, AttributeError):
        raise ValueError(f"expected WxH such as 1920x1440, got {v!r}") from None
    return w, h


def text(v: Any) -> str:
    """A non-empty string."""
    if not isinstance(v, str) or not v:
        raise ValueError(f"expected a non-empty string, got {v!r}")
    return v


def scene_id(v: Any) -> str:
    """A scene id that can name files and folders (vistest.scene.check_scene_id): ``-O scene=../x``
    is refused when the options are read, before anything is looked up or written."""
    source = "option scene"
    try:
        return check_scene_id(text(v), source)
    except SceneError as e:
        raise ValueError(str(e).removeprefix(f"{source}: ")) from None


def choice(*choices: str):
    """Parser accepting one of ``choices`` (case-insensitive, returned as spelled here)."""
    def parse(v: Any) -> str:
        for c in choices:
            if isinstance(v, str) and v.lower() == c.lower():
                return c
        raise ValueError(f"expected one of {', '.join(choices)}, got {v!r}")
    return parse


def label_list(v: Any) -> frozenset:
    """Comma-separated labels (``""`` = none) -> frozenset of lower-case labels."""
    if isinstance(v, str):
        return frozenset(s.strip().lower() for s in v.split(",") if s.strip())
    raise ValueError(f"expected comma-separated labels, got {v!r}")
