"""What one scene offers the templates: its boxes in the pose world, which objects the video shows
and when each first appears, its room area, and cached pairwise distances.

First appearance: the earliest valid frame in which the object is seen by the budget stage's seen
rule (vistest.budget.seen; ``seen_threshold`` a SeenRule, or a number: the visible fraction of the
image it must exceed, ReVSI's rule), its time the frame's ``time`` in seconds. A label's first
appearance is its earliest instance's.

Moving objects (a scene's tracked objects, docs/scene-format.md) are left out, and so is every
object whose label a moving object carries: the static templates' counts, sizes, distances and
directions assume boxes that stay put (the dynamic rules read tracks). ``SceneFacts.moving_labels``
names the labels left out; ``SceneFacts.tracked`` holds the moving objects themselves and
``SceneFacts.seen_frames`` the frames in which each is seen (the same seen rule), with
``table_frames`` the frames the visibility table has (vistest.generate.motion's windows).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..budget.seen import SeenRule, seen_rule
from ..errors import InputError
from ..scene import Scene
from ..visibility.table import Visibility
from . import geometry as geo


@dataclass(frozen=True, eq=False)
class ObjectFacts:
    """One object: id, label, its box in the pose world, and its first sighting in the video
    (``first_frame``/``first_time`` None when it is never seen)."""

    id: str
    label: str
    center: np.ndarray
    size: np.ndarray
    rotation: np.ndarray
    first_frame: int | None
    first_time: float | None

    @property
    def box(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.center, self.size, self.rotation

    @property
    def seen(self) -> bool:
        return self.first_frame is not None

    @cached_property
    def footprint(self) -> np.ndarray:
        """Floor-plane outline (CCW convex polygon, metres)."""
        return geo.footprint(*self.box)


class SceneFacts:
    """The facts of one scene (see the module docstring). Objects are sorted by id; labels by name."""

    def __init__(self, scene: Scene, visibility: Visibility, seen_threshold: float | SeenRule,
                 source: str = "<visibility>"):
        self.scene_id = scene.scene_id
        self.scene = scene
        first, seen, fidx, col = _sightings(scene, visibility, seen_threshold, source)
        centers, sizes, rots = scene.world_boxes()
        self.moving_labels = frozenset(o.label for o in scene.objects if o.track is not None)
        objs = [ObjectFacts(o.id, o.label, centers[i], sizes[i], rots[i], *first[o.id])
                for i, o in enumerate(scene.objects) if o.label not in self.moving_labels]
        self.objects: tuple[ObjectFacts, ...] = tuple(sorted(objs, key=lambda o: o.id))
        self.by_id = {o.id: o for o in self.objects}
        self.tracked = tuple(sorted((o for o in scene.objects if o.track is not None), key=lambda o: o.id))
        self.table_frames: np.ndarray = fidx
        self.seen_frames: dict[str, np.ndarray] = {o.id: fidx[seen[:, col[o.id]]] for o in self.tracked}
        labels: dict[str, list[str]] = {}
        for o in self.objects:
            labels.setdefault(o.label, []).append(o.id)
        self.by_label: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in sorted(labels.items())}
        self.room_area_m2 = scene.room_area_m2
        self.room_area_type = (scene.room or {}).get("area_type", "all_room")
        self._dist: dict[tuple[str, str], float] = {}
        self._dist2d: dict[tuple[str, str], float] = {}

    def unique(self, exclude: tuple[str, ...] = (), seen_only: bool = True) -> tuple[ObjectFacts, ...]:
        """Objects whose label has one instance in the scene, not in ``exclude`` (case-insensitive),
        seen in the video when ``seen_only``; sorted by id."""
        ex = {x.lower() for x in exclude}
        return tuple(self.by_id[ids[0]] for lab, ids in self.by_label.items()
                     if len(ids) == 1 and lab.lower() not in ex and (self.by_id[ids[0]].seen or not seen_only))

    def label_first_time(self, label: str) -> float | None:
        """Seconds of the label's first appearance (earliest instance), None when never seen."""
        times = [self.by_id[i].first_time for i in self.by_label[label] if self.by_id[i].seen]
        return min(times) if times else None

    def all_seen(self, label: str) -> bool:
        """Is every instance of ``label`` seen in the video."""
        return all(self.by_id[i].seen for i in self.by_label[label])

    def distance(self, a: str, b: str) -> float:
        """Closest-point distance (m) between the solid boxes of objects ``a`` and ``b`` (cached)."""
        key = (a, b) if a <= b else (b, a)
        if key not in self._dist:
            self._dist[key] = geo.box_distance(self.by_id[key[0]].box, self.by_id[key[1]].box)
        return self._dist[key]

    def floor_distance(self, a: str, b: str) -> float:
        """Closest-point distance (m) between the footprints of ``a`` and ``b`` on the floor (cached)."""
        key = (a, b) if a <= b else (b, a)
        if key not in self._dist2d:
            self._dist2d[key] = geo.polygon_distance(self.by_id[key[0]].footprint, self.by_id[key[1]].footprint)
        return self._dist2d[key]


def _sightings(scene: Scene, vis: Visibility, threshold: float | SeenRule, source: str
               ) -> tuple[dict[str, tuple[int | None, float | None]], np.ndarray, np.ndarray, dict[str, int]]:
    """From the visibility table: ``{object id: (first frame index, its time in s)}``, the seen
    matrix (frames x objects, rows sorted by frame), the table's frame numbers (sorted) and each
    object's column."""
    ids = [str(x) for x in np.asarray(vis.object_ids).tolist()]
    col = {oid: j for j, oid in enumerate(ids)}
    missing = [o.id for o in scene.objects if o.id not in col]
    if vis.scene_id and vis.scene_id != scene.scene_id:
        raise InputError(f"{source}: scene_id: expected {scene.scene_id!r} (the scene's), got {vis.scene_id!r}")
    if missing:
        raise InputError(f"{source}: object_ids: no column for scene object(s) {missing[:8]}; expected the table "
                         f"of this scene (stale visibility file?)")
    times = {f.index: f.time for f in scene.frames}
    fidx = np.asarray(vis.frame_index, dtype=np.int64)
    unknown = [int(f) for f in fidx if int(f) not in times]
    if unknown:
        raise InputError(f"{source}: frame_index: frames {unknown[:8]} are not in the scene; expected the table "
                         f"of this scene")
    order = np.argsort(fidx, kind="stable")
    seen = vis.seen(seen_rule(threshold, where="frames.truth.seen_threshold"), scene.image_size)[order]
    fidx = fidx[order]
    out: dict[str, tuple[int | None, float | None]] = {}
    for o in scene.objects:
        rows = np.flatnonzero(seen[:, col[o.id]])
        if len(rows):
            f = int(fidx[rows[0]])
            out[o.id] = (f, float(times[f]))
        else:
            out[o.id] = (None, None)
    return out, seen, fidx, col
