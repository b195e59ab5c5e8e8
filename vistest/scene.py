"""Scene: the plain data every later stage reads (stage 1 of the pipeline).

A scene is one ``scene.json`` (format ``vistest.scene/1``, see docs/scene-format.md).
Conventions, stated once here and relied on everywhere:

* World: metres, right-handed, +Z up.
* ``camera_to_world``: 4x4 rigid transform, OpenCV camera axes (x right, y down,
  z forward). An invalid frame (lost tracking) has ``camera_to_world = None``.
* Intrinsics: pixels, OpenCV convention (integer coordinates are pixel centres),
  for frames of ``image_size`` = (W, H).
* Boxes: ``center`` (3,), ``size`` (3,) full extents, ``rotation`` (3, 3) whose
  *columns* are the box axes, all in the *box world*. ``boxes_to_world`` (4x4, rigid)
  maps the box world into the pose world (ScanNet: inverse of ``axisAlignment``).
* ``Frame.index`` is the 0-based decoded frame number in ``video``.
* Moving objects: an object may carry a ``track`` instead of a pose: keys at decoded frame
  numbers (strictly increasing), each a ``center`` and ``rotation`` in the box world; between
  two keys the centre moves linearly and the rotation along the geodesic (slerp); before the
  first key and after the last the object is absent (not in the scene). Its ``size`` is fixed.
  ``SceneObject.center``/``rotation`` of a tracked object are its *first key's* pose (what the
  stages that read static poses see); :meth:`SceneObject.pose_at` gives the pose at a frame.

A 2D scene (format ``vistest.tracks2d/1``: per-frame 2D regions of objects, no poses, no boxes) is
read by the same :meth:`Scene.load` (vistest.tracks2d, docs/tracks2d.md): its ``tracks2d`` holds them,
``camera`` is None, its frames have no pose and its objects no box; :meth:`Scene.require_3d` refuses it.

Everything is validated on load; a bad value raises :class:`SceneError` (a
``ValueError``) naming the file, the field and what was expected. Numeric fields take JSON
numbers only (not strings, not booleans); ``scene_id`` must be able to name files
(:func:`check_scene_id`); a frame index is at most :data:`MAX_FRAME_INDEX`.
"""
from __future__ import annotations

import bisect
import json
import math
import numbers
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from .atomic import write_atomic
from .budgets import MAX_BUDGET
from .errors import InputError
from .geometry import box_corners, polygon_area, rotation_slerp
from .jsonl import parse_json, read_text
from .layout import is_budget_folder
from .tracks2d import FORMAT as TRACKS2D_FORMAT, Tracks2D, Tracks2DError

FORMAT = "vistest.scene/1"
ROOM_AREA_TYPES = ("all_room", "single_room")  # what room.size_m2 / room.polygon cover (ReVSI's scene_area_type)
ROOM_AREA_TOL = 0.01  # relative: room.size_m2 must agree with the area of room.polygon
ORTHO_TOL = 1e-4  # tolerance for orthonormality / det of rotations
# the largest decoded frame number a scene may give: 10 million frames, 3.9 days at 30 frames/s. Every
# stage allocates per frame of the video (last index + 1), so an absurd index would allocate petabytes.
MAX_FRAME_INDEX = MAX_BUDGET - 1  # vistest.budgets.MAX_BUDGET: 10 million frames
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class SceneError(InputError):
    """Invalid scene input: the message names the file, the field and the expectation."""


def check_scene_id(scene_id: str, source: str = "scene") -> str:
    """``scene_id`` if it can name files and folders of a run folder (letters, digits, ``._-``,
    not starting with ``.``, and not a budget folder's name such as ``16_frame``); SceneError
    naming ``source`` (the scene file, or where the id came from) otherwise."""
    if not isinstance(scene_id, str) or not _SAFE_ID.fullmatch(scene_id):
        raise SceneError(f"{source}: scene_id: {scene_id!r} cannot name files; expected letters, digits, '.', '_' "
                         f"or '-', not starting with '.'")
    if is_budget_folder(scene_id):
        raise SceneError(f"{source}: scene_id: {scene_id!r} is the name of a budget folder ({{n}}_frame); "
                         f"choose another id")
    return scene_id


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.float64)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole intrinsics in pixels, OpenCV convention (integer coords = pixel centres)."""

    fx: float
    fy: float
    cx: float
    cy: float

    def matrix(self) -> np.ndarray:
        """The 3x3 camera matrix K."""
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])

    def scaled(self, sx: float, sy: float) -> "Intrinsics":
        """Intrinsics for the image resized by factors (sx, sy) (new = old * s).

        Pixel *edges* scale, pixel centres shift: c' = (c + 0.5) * s - 0.5.
        """
        return Intrinsics(self.fx * sx, self.fy * sy, (self.cx + 0.5) * sx - 0.5, (self.cy + 0.5) * sy - 0.5)

    def to_json(self) -> dict:
        return {"fx": self.fx, "fy": self.fy, "cx": self.cx, "cy": self.cy}


@dataclass(frozen=True, eq=False)
class Frame:
    """One decoded video frame and its camera.

    ``camera_to_world`` is None for an invalid frame (lost tracking); such frames are
    kept (never silently dropped) and every per-frame result for them is NaN.
    ``intrinsics`` overrides the scene camera for this frame when set. ``depth`` is a
    path (relative to the scene file) of a depth image registered to this frame;
    ``image`` the path of this frame's colour image when it exists as a file (a scan's
    posed images; otherwise the frame is only in ``video``).
    """

    index: int
    time: float
    camera_to_world: np.ndarray | None
    intrinsics: Intrinsics | None = None
    depth: str | None = None
    image: str | None = None

    @property
    def valid(self) -> bool:
        return self.camera_to_world is not None


@dataclass(frozen=True, eq=False)
class TrackKey:
    """One key of a moving object's track: its pose at decoded frame ``frame`` (box world:
    ``center`` (3,) metres, ``rotation`` (3, 3) whose columns are the box axes)."""

    frame: int
    center: np.ndarray
    rotation: np.ndarray


@dataclass(frozen=True, eq=False)
class SceneObject:
    """An oriented 3D box in the box world (see module docstring for conventions).

    ``track``: None for a static object; for a moving one its keys (strictly increasing
    ``frame``, at least one), and then ``center``/``rotation`` are the first key's pose."""

    id: str
    label: str
    center: np.ndarray
    size: np.ndarray
    rotation: np.ndarray
    track: tuple[TrackKey, ...] | None = None

    def corners(self) -> np.ndarray:
        """The 8 corners (8, 3) in the box world (numbering: :func:`vistest.geometry.box_corners`);
        a tracked object's at its first key."""
        return box_corners(self.center[None], self.size[None], self.rotation[None])[0]

    @cached_property
    def key_frames(self) -> tuple[int, ...]:
        """The track's key frames (empty for a static object)."""
        return tuple(k.frame for k in self.track) if self.track is not None else ()

    def pose_at(self, frame: float) -> tuple[np.ndarray, np.ndarray] | None:
        """``(center, rotation)`` in the box world at decoded frame ``frame`` (a fractional frame
        is between two decoded ones); None when the object is absent then (a tracked object
        before its first key or after its last). A static object has its pose at every frame; a
        tracked one its key's pose at a key (exactly), and between keys k and k+1 at fraction
        ``s = (frame - f_k) / (f_{k+1} - f_k)``: centre ``(1 - s) c_k + s c_{k+1}``, rotation
        :func:`vistest.geometry.rotation_slerp` ``(R_k, R_{k+1}, s)``."""
        if self.track is None:
            return self.center, self.rotation
        keys = self.track
        if frame < keys[0].frame or frame > keys[-1].frame:
            return None
        k = bisect.bisect_right(self.key_frames, frame) - 1
        a = keys[k]
        if a.frame == frame or k + 1 == len(keys):
            return a.center, a.rotation
        b = keys[k + 1]
        s = (frame - a.frame) / (b.frame - a.frame)
        return (1.0 - s) * a.center + s * b.center, rotation_slerp(a.rotation, b.rotation, s)


@dataclass(frozen=True)
class DepthSpec:
    """How to read the per-frame depth images.

    ``scale``: stored units per metre (1000 for 16-bit PNGs in millimetres); 0 = missing.
    ``image_size``: (W, H) of the depth images. ``camera``: their intrinsics; when None,
    the colour camera scaled to ``image_size``. Depth maps are z-depth (along the
    optical axis) registered to the colour camera's pose.
    """

    scale: float = 1000.0
    image_size: tuple[int, int] | None = None
    camera: Intrinsics | None = None


@dataclass(frozen=True, eq=False)
class Scene:
    """A loaded, validated scene. Paths (video, mesh, depth) are relative to ``root``;
    ``source`` names the file it came from in error messages of later stages."""

    scene_id: str
    fps: float
    image_size: tuple[int, int]
    camera: Intrinsics | None  # None for a 2D scene (no camera model: vistest.tracks2d)
    frames: tuple[Frame, ...]
    objects: tuple[SceneObject, ...]
    boxes_to_world: np.ndarray = field(default_factory=lambda: _readonly(np.eye(4)))
    video: str | None = None
    mesh: str | None = None
    depth: DepthSpec | None = None
    room: dict | None = None
    mesh_objects: str | None = None  # per-vertex object ids of ``mesh`` (docs/scene-format.md)
    root: Path = Path(".")
    source: str = "<scene>"  # where it was read from (the scene.json path), for error messages
    tracks2d: Tracks2D | None = None  # a 2D scene (vistest.tracks2d): no poses, no boxes; None for a 3D one

    # ---- derived views -------------------------------------------------------------
    @property
    def has_3d(self) -> bool:
        """Does the scene give 3D boxes and camera poses (False: a 2D scene, vistest.tracks2d)?"""
        return self.tracks2d is None

    def require_3d(self, what: str) -> None:
        """SceneError naming ``what`` when the scene is a 2D scene (2D tracks: no boxes, no poses)."""
        if self.tracks2d is not None:
            raise SceneError(f"{self.source}: format: {what} needs 3D boxes and camera poses; this scene gives 2D "
                             f"object tracks only (vistest.tracks2d/1, docs/tracks2d.md)")

    @property
    def num_frames(self) -> int:
        """Number of decoded video frames the scene describes (last index + 1)."""
        return self.frames[-1].index + 1 if self.frames else 0

    @property
    def object_ids(self) -> tuple[str, ...]:
        return tuple(o.id for o in self.objects)

    @property
    def dynamic(self) -> bool:
        """Does any object move (carry a track)?"""
        return any(o.track is not None for o in self.objects)

    @property
    def room_area_m2(self) -> float | None:
        """Floor area of ``room`` in m^2: the area of ``room.polygon``, else ``room.size_m2``, else None."""
        if not self.room:
            return None
        if self.room.get("polygon") is not None:
            return polygon_area(np.asarray(self.room["polygon"], float))
        return float(self.room["size_m2"]) if self.room.get("size_m2") is not None else None

    def intrinsics_for(self, frame: Frame) -> Intrinsics:
        """The frame's own intrinsics, else the scene camera."""
        return frame.intrinsics if frame.intrinsics is not None else self.camera

    def world_boxes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Boxes in the *pose* world: centers (O,3), sizes (O,3), rotations (O,3,3); a tracked
        object's at its first key (:meth:`world_boxes_at` gives the boxes at a frame).

        Applies ``boxes_to_world`` (A): R_w = A[:3,:3] @ R, c_w = A[:3,:3] @ c + A[:3,3].
        """
        a = self.boxes_to_world
        if not self.objects:
            return np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 3, 3))
        c = np.stack([o.center for o in self.objects]) @ a[:3, :3].T + a[:3, 3]
        s = np.stack([o.size for o in self.objects])
        r = np.einsum("ij,ojk->oik", a[:3, :3], np.stack([o.rotation for o in self.objects]))
        return c, s, r

    def world_boxes_at(self, frame: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Boxes in the pose world at decoded frame ``frame``: centers (O,3), sizes (O,3), rotations
        (O,3,3) (:meth:`SceneObject.pose_at`, ``boxes_to_world`` applied as in :meth:`world_boxes`)
        and ``present`` (O,) bool; an absent object's centre and rotation are NaN."""
        a = self.boxes_to_world
        c, s, r = self.world_boxes()  # static objects: as there; the tracked ones replaced below
        present = np.ones(len(self.objects), bool)
        for i, o in enumerate(self.objects):
            if o.track is None:
                continue
            pose = o.pose_at(frame)
            if pose is None:
                present[i] = False
                c[i], r[i] = np.nan, np.nan
            else:
                c[i] = a[:3, :3] @ pose[0] + a[:3, 3]
                r[i] = a[:3, :3] @ pose[1]
        return c, s, r, present

    def path(self, rel: str) -> Path:
        """Resolve a scene-relative path."""
        return (self.root / rel).resolve()

    # ---- I/O -------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | os.PathLike) -> "Scene":
        """Load and validate ``scene.json``; raises SceneError naming file and field."""
        path = Path(path)
        doc = parse_json(read_text(path, SceneError, "scene file"), str(path), SceneError)
        return cls.from_dict(doc, root=path.parent, source=str(path))

    @classmethod
    def from_dict(cls, doc: Any, root: str | os.PathLike = ".", source: str = "<scene>") -> "Scene":
        """Validate a parsed scene document (see docs/scene-format.md); a 2D scene
        (``vistest.tracks2d/1``, docs/tracks2d.md) is read by vistest.tracks2d."""
        if isinstance(doc, dict) and doc.get("format") == TRACKS2D_FORMAT:
            return tracks_scene(Tracks2D.from_dict(doc, source), root)
        return _Parser(source, Path(root)).scene(doc)

    def to_dict(self) -> dict:
        """The JSON document for this scene (inverse of from_dict)."""
        if self.tracks2d is not None:
            return self.tracks2d.to_dict()
        doc: dict[str, Any] = {"format": FORMAT, "scene_id": self.scene_id}
        if self.video is not None:
            doc["video"] = self.video
        if self.mesh is not None:
            doc["mesh"] = self.mesh
        if self.mesh_objects is not None:
            doc["mesh_objects"] = self.mesh_objects
        doc["fps"] = self.fps
        doc["image_size"] = list(self.image_size)
        doc["camera"] = self.camera.to_json()
        if self.depth is not None:
            d: dict[str, Any] = {"scale": self.depth.scale}
            if self.depth.image_size is not None:
                d["image_size"] = list(self.depth.image_size)
            if self.depth.camera is not None:
                d["camera"] = self.depth.camera.to_json()
            doc["depth"] = d
        if not np.array_equal(self.boxes_to_world, np.eye(4)):
            doc["boxes_to_world"] = self.boxes_to_world.tolist()
        if self.room is not None:
            doc["room"] = self.room
        frames = []
        for f in self.frames:
            fd: dict[str, Any] = {"index": f.index, "time": f.time,
                                  "camera_to_world": None if f.camera_to_world is None else f.camera_to_world.tolist()}
            if f.intrinsics is not None:
                fd["intrinsics"] = f.intrinsics.to_json()
            if f.depth is not None:
                fd["depth"] = f.depth
            if f.image is not None:
                fd["image"] = f.image
            frames.append(fd)
        doc["frames"] = frames
        doc["objects"] = [_object_doc(o) for o in self.objects]
        return doc

    def save(self, path: str | os.PathLike) -> None:
        """Write ``scene.json`` atomically (temp file + rename). Paths stay as given. SceneError
        naming ``path`` (nothing written) when ``scene_id`` cannot name files (:func:`check_scene_id`)."""
        check_scene_id(self.scene_id, str(path))
        write_atomic(path, json.dumps(self.to_dict(), indent=1) + "\n")


def _nan(shape: tuple[int, ...]) -> np.ndarray:
    a = np.full(shape, np.nan)
    a.setflags(write=False)
    return a


def tracks_scene(tracks: Tracks2D, root: str | os.PathLike = ".") -> Scene:
    """The Scene of a 2D scene (vistest.tracks2d): ``num_frames`` frames (frame i at i / fps
    seconds) with no camera pose (no 3D: which frames witness what is the visibility table's
    business, vistest.visibility.tracks2d), one object per track (id and label; no box: NaN),
    ``camera`` None and ``tracks2d`` the tracks. Its ``scene_id`` must name files
    (:func:`check_scene_id`) and its video exist beside it (relative to ``root``); stages that
    need 3D refuse it (:meth:`Scene.require_3d`)."""
    check_scene_id(tracks.scene_id, tracks.source)
    tracks.check_table_size()  # before a Frame per decoded frame is made (num_frames alone sizes everything)
    if tracks.video is not None and not (Path(root) / tracks.video).is_file():
        raise Tracks2DError(f"{tracks.source}: video: file not found: {Path(root) / tracks.video}")
    frames = tuple(Frame(i, i / tracks.fps, None) for i in range(tracks.num_frames))
    objects = tuple(SceneObject(t.id, t.label, _nan((3,)), _nan((3,)), _nan((3, 3))) for t in tracks.objects)
    return Scene(scene_id=tracks.scene_id, fps=tracks.fps, image_size=tracks.image_size, camera=None, frames=frames,
                 objects=objects, video=tracks.video, root=Path(root), source=tracks.source, tracks2d=tracks)


def _object_doc(o: SceneObject) -> dict:
    """The scene.json record of one object: a pose, or a track."""
    if o.track is None:
        return {"id": o.id, "label": o.label, "center": o.center.tolist(), "size": o.size.tolist(),
                "rotation": o.rotation.tolist()}
    return {"id": o.id, "label": o.label, "size": o.size.tolist(),
            "track": [{"frame": k.frame, "center": k.center.tolist(), "rotation": k.rotation.tolist()}
                      for k in o.track]}


# ---------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------
def _short(v: Any, limit: int = 80) -> str:
    """``repr(v)``, cut to ``limit`` characters (a bad field may be huge or deeply nested)."""
    try:
        text = repr(v)
    except RecursionError:
        text = f"<deeply nested {type(v).__name__}>"
    return text if len(text) <= limit else text[:limit - 3] + "..."


class _Parser:
    """Validates a scene document field by field; every error names source and field."""

    def __init__(self, source: str, root: Path):
        self.source = source
        self.root = root

    def fail(self, fld: str, msg: str) -> SceneError:
        return SceneError(f"{self.source}: {fld}: {msg}")

    # -- primitives
    def number(self, v: Any, fld: str, positive: bool = False) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.fail(fld, f"expected a number, got {v!r}")
        x = float(v)
        if not math.isfinite(x):
            raise self.fail(fld, f"expected a finite number, got {v!r}")
        if positive and x <= 0:
            raise self.fail(fld, f"expected a positive number, got {v!r}")
        return x

    def array(self, v: Any, fld: str, shape: tuple[int, ...], allow_neg_inf: bool = False) -> np.ndarray:
        """JSON numbers (nested lists) of ``shape``; strings and booleans are refused, not converted."""
        try:
            o = np.array(v, dtype=object)
        except (TypeError, ValueError):
            o = None
        if o is None or o.shape != shape:
            got = f"shape {list(o.shape)}" if o is not None else "a ragged list"
            raise self.fail(fld, f"expected numbers of shape {list(shape)}, got {got} ({_short(v)})")
        for i, x in zip(np.ndindex(shape), o.flat):
            if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
                raise self.fail(f"{fld}{list(i)}", f"expected a number, got {_short(x)}")
        a = o.astype(np.float64)
        bad = ~np.isfinite(a)
        if allow_neg_inf:
            bad &= ~np.isneginf(a)
        if bad.any():
            i = tuple(int(k) for k in np.argwhere(bad)[0])
            raise self.fail(f"{fld}{list(i)}", f"expected a finite number, got {a[i]!r}")
        return a

    def rotation(self, r: np.ndarray, fld: str) -> None:
        err = float(np.abs(r.T @ r - np.eye(3)).max())
        if err > ORTHO_TOL:
            raise self.fail(fld, f"rotation is not orthonormal (max |R^T R - I| = {err:.3g}, expected <= "
                                 f"{ORTHO_TOL:g}): {r.tolist()}")
        det = float(np.linalg.det(r))
        if abs(det - 1.0) > ORTHO_TOL:
            raise self.fail(fld, f"rotation has det {det:.6g}, expected +1 (a reflection or a transposed axis order?)")

    def rigid(self, v: Any, fld: str, allow_invalid: bool = False) -> np.ndarray | None:
        if v is None and allow_invalid:
            return None
        m = self.array(v, fld, (4, 4), allow_neg_inf=allow_invalid)
        if allow_invalid and np.isneginf(m).any():
            return None  # ScanNet marks lost tracking with -inf: an invalid frame
        if not np.allclose(m[3], [0, 0, 0, 1], atol=ORTHO_TOL):
            raise self.fail(fld, f"last row must be [0, 0, 0, 1], got {m[3].tolist()}")
        self.rotation(m[:3, :3], fld)
        return _readonly(m)

    def intrinsics(self, v: Any, fld: str) -> Intrinsics:
        if not isinstance(v, dict):
            raise self.fail(fld, f"expected an object with fx, fy, cx, cy, got {v!r}")
        missing = [k for k in ("fx", "fy", "cx", "cy") if k not in v]
        if missing:
            raise self.fail(fld, f"missing {', '.join(missing)}")
        return Intrinsics(self.number(v["fx"], f"{fld}.fx", True), self.number(v["fy"], f"{fld}.fy", True),
                          self.number(v["cx"], f"{fld}.cx"), self.number(v["cy"], f"{fld}.cy"))

    def size2(self, v: Any, fld: str) -> tuple[int, int]:
        if (not isinstance(v, (list, tuple)) or len(v) != 2
                or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in v)):
            raise self.fail(fld, f"expected [W, H] as two positive integers, got {v!r}")
        return int(v[0]), int(v[1])

    def string(self, v: Any, fld: str) -> str:
        if not isinstance(v, str) or not v:
            raise self.fail(fld, f"expected a non-empty string, got {v!r}")
        return v

    def file(self, v: Any, fld: str) -> str:
        rel = self.string(v, fld)
        if not (self.root / rel).is_file():
            raise self.fail(fld, f"file not found: {(self.root / rel)}")
        return rel

    # -- document
    def scene(self, doc: Any) -> Scene:
        if not isinstance(doc, dict):
            raise self.fail("<top>", f"expected a JSON object, got {type(doc).__name__}")
        if doc.get("format") != FORMAT:
            raise self.fail("format", f"expected {FORMAT!r} (or {TRACKS2D_FORMAT!r}), got {doc.get('format')!r}")
        for key in ("scene_id", "fps", "image_size", "camera", "frames", "objects"):
            if key not in doc:
                raise self.fail(key, "missing required field")
        scene_id = check_scene_id(self.string(doc["scene_id"], "scene_id"), self.source)
        fps = self.number(doc["fps"], "fps", positive=True)
        image_size = self.size2(doc["image_size"], "image_size")
        camera = self.intrinsics(doc["camera"], "camera")
        video = self.file(doc["video"], "video") if doc.get("video") is not None else None
        mesh = self.file(doc["mesh"], "mesh") if doc.get("mesh") is not None else None
        # per-vertex ids of the mesh: read with it, ignored without it (a copy of a scene without its mesh)
        mesh_objects = (self.file(doc["mesh_objects"], "mesh_objects")
                        if doc.get("mesh_objects") is not None and mesh is not None else None)
        depth = self.depth_spec(doc["depth"]) if doc.get("depth") is not None else None
        b2w = self.rigid(doc["boxes_to_world"], "boxes_to_world") if doc.get("boxes_to_world") is not None else None
        room = self.room(doc["room"]) if doc.get("room") is not None else None
        frames = self.frames(doc["frames"], fps)
        objects = self.objects(doc["objects"])
        return Scene(scene_id=scene_id, fps=fps, image_size=image_size, camera=camera, frames=frames,
                     objects=objects, boxes_to_world=b2w if b2w is not None else _readonly(np.eye(4)),
                     video=video, mesh=mesh, depth=depth, room=room, mesh_objects=mesh_objects, root=self.root,
                     source=self.source)

    def room(self, v: Any) -> dict:
        """The optional room record: known keys are checked, others kept verbatim."""
        if not isinstance(v, dict):
            raise self.fail("room", f"expected an object, got {v!r}")
        if v.get("size_m2") is not None:
            self.number(v["size_m2"], "room.size_m2", positive=True)
        if v.get("height_m") is not None:
            self.number(v["height_m"], "room.height_m", positive=True)
        if v.get("center") is not None:
            self.array(v["center"], "room.center", (3,))
        if v.get("area_type") is not None and v["area_type"] not in ROOM_AREA_TYPES:
            raise self.fail("room.area_type", f"expected one of {', '.join(ROOM_AREA_TYPES)}, got {v['area_type']!r}")
        if v.get("polygon") is not None:
            poly = v["polygon"]
            if not isinstance(poly, list) or len(poly) < 3:
                raise self.fail("room.polygon", f"expected a list of at least 3 [x, y] points (metres), got {poly!r}")
            pts = self.array(poly, "room.polygon", (len(poly), 2))
            area = polygon_area(pts)
            if area <= 0.0:
                raise self.fail("room.polygon", f"expected a floor outline with a positive area, got area {area:g}")
            if v.get("size_m2") is not None and abs(area - float(v["size_m2"])) > ROOM_AREA_TOL * area:
                raise self.fail("room.size_m2", f"{v['size_m2']} m^2 disagrees with the area of room.polygon "
                                                f"({area:.3f} m^2, tolerance {ROOM_AREA_TOL:.0%}); give one of them")
        return v

    def depth_spec(self, v: Any) -> DepthSpec:
        if not isinstance(v, dict):
            raise self.fail("depth", f"expected an object, got {v!r}")
        return DepthSpec(scale=self.number(v.get("scale", 1000.0), "depth.scale", positive=True),
                         image_size=self.size2(v["image_size"], "depth.image_size") if "image_size" in v else None,
                         camera=self.intrinsics(v["camera"], "depth.camera") if "camera" in v else None)

    def frames(self, v: Any, fps: float) -> tuple[Frame, ...]:
        if not isinstance(v, list):
            raise self.fail("frames", f"expected a list, got {type(v).__name__}")
        out: list[Frame] = []
        for i, f in enumerate(v):
            fld = f"frames[{i}]"
            if not isinstance(f, dict):
                raise self.fail(fld, f"expected an object, got {f!r}")
            if "index" not in f:
                raise self.fail(f"{fld}.index", "missing required field")
            idx = f["index"]
            if isinstance(idx, bool) or not isinstance(idx, int) or idx < 0:
                raise self.fail(f"{fld}.index", f"expected a non-negative integer, got {idx!r}")
            if idx > MAX_FRAME_INDEX:
                raise self.fail(f"{fld}.index", f"expected a decoded frame number of the video, at most "
                                                f"{MAX_FRAME_INDEX} (10 million frames), got {idx}")
            if out and idx == out[-1].index:
                raise self.fail(f"{fld}.index", f"duplicated frame index {idx}")
            if out and idx < out[-1].index:
                raise self.fail(f"{fld}.index", f"frames out of order: index {idx} after {out[-1].index}")
            t = self.number(f["time"], f"{fld}.time") if f.get("time") is not None else idx / fps
            if "camera_to_world" not in f:
                raise self.fail(f"{fld}.camera_to_world", "missing (use null for an invalid frame)")
            pose = self.rigid(f["camera_to_world"], f"{fld}.camera_to_world", allow_invalid=True)
            k = self.intrinsics(f["intrinsics"], f"{fld}.intrinsics") if f.get("intrinsics") is not None else None
            d = self.file(f["depth"], f"{fld}.depth") if f.get("depth") is not None else None
            im = self.file(f["image"], f"{fld}.image") if f.get("image") is not None else None
            out.append(Frame(index=idx, time=t, camera_to_world=pose, intrinsics=k, depth=d, image=im))
        return tuple(out)

    def objects(self, v: Any) -> tuple[SceneObject, ...]:
        if not isinstance(v, list):
            raise self.fail("objects", f"expected a list, got {type(v).__name__}")
        out: list[SceneObject] = []
        seen: dict[str, int] = {}
        for i, o in enumerate(v):
            fld = f"objects[{i}]"
            if not isinstance(o, dict):
                raise self.fail(fld, f"expected an object, got {o!r}")
            tracked = "track" in o
            for key in ("id", "label", "size") + (() if tracked else ("center", "rotation")):
                if key not in o:
                    raise self.fail(f"{fld}.{key}", "missing required field")
            for key in ("center", "rotation") if tracked else ():
                if key in o:
                    raise self.fail(f"{fld}.{key}", "a tracked object has no static pose (its pose is the track's); "
                                                    "expected either center and rotation, or track")
            oid = o["id"]
            if isinstance(oid, int) and not isinstance(oid, bool):
                oid = str(oid)
            oid = self.string(oid, f"{fld}.id")
            if oid in seen:
                raise self.fail(f"{fld}.id", f"duplicate object id {oid!r} (also objects[{seen[oid]}])")
            seen[oid] = i
            label = self.string(o["label"], f"{fld}.label")
            size = self.array(o["size"], f"{fld}.size", (3,))
            if (size <= 0).any():
                raise self.fail(f"{fld}.size", f"expected positive full extents, got {size.tolist()}")
            if tracked:
                track = self.track(o["track"], f"{fld}.track")
                out.append(SceneObject(oid, label, track[0].center, _readonly(size), track[0].rotation, track))
                continue
            center = self.array(o["center"], f"{fld}.center", (3,))
            rot = self.array(o["rotation"], f"{fld}.rotation", (3, 3))
            self.rotation(rot, f"{fld}.rotation")
            out.append(SceneObject(oid, label, _readonly(center), _readonly(size), _readonly(rot)))
        return tuple(out)

    def track(self, v: Any, fld: str) -> tuple[TrackKey, ...]:
        """A track: a non-empty list of keys ``{frame, center, rotation}``, frames strictly increasing."""
        if not isinstance(v, list) or not v:
            raise self.fail(fld, f"expected a non-empty list of keys {{frame, center, rotation}}, got {_short(v)}")
        keys: list[TrackKey] = []
        for k, key in enumerate(v):
            kf = f"{fld}[{k}]"
            if not isinstance(key, dict):
                raise self.fail(kf, f"expected an object {{frame, center, rotation}}, got {_short(key)}")
            for name in ("frame", "center", "rotation"):
                if name not in key:
                    raise self.fail(f"{kf}.{name}", "missing required field")
            frame = key["frame"]
            if isinstance(frame, bool) or not isinstance(frame, int) or not 0 <= frame <= MAX_FRAME_INDEX:
                raise self.fail(f"{kf}.frame", f"expected a decoded frame number (an integer in 0..{MAX_FRAME_INDEX})"
                                               f", got {_short(frame)}")
            if keys and frame <= keys[-1].frame:
                raise self.fail(f"{kf}.frame", f"expected frames strictly increasing, got {frame} after "
                                               f"{keys[-1].frame}")
            center = self.array(key["center"], f"{kf}.center", (3,))
            rot = self.array(key["rotation"], f"{kf}.rotation", (3, 3))
            self.rotation(rot, f"{kf}.rotation")
            keys.append(TrackKey(frame, _readonly(center), _readonly(rot)))
        return tuple(keys)
