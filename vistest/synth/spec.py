"""Scenario specs (format ``vistest.synth/1``): what ``vistest synth`` renders (docs/synth.md).

A spec is a small JSON (or YAML, when PyYAML is installed) document: the spatial scale, the
objects (category, count, size range, placement relation), the camera (perspective and mode), the
dynamics (objects moving along straight paths with a speed and an acceleration), the frame count,
resolution, frame rate and seed. :func:`load_spec` / :func:`spec_from_dict` validate it; a bad value
raises :class:`SpecError` naming the file, the field and what was expected, as scene.json's loader
does. Defaults are filled in here, once (each constant below names its unit).

Conventions: metres, seconds, degrees; world +Z up (vistest.scene). Everything drawn from the spec
(sizes, places, paths, colours) is drawn from ``seed`` by vistest.synth.layout.
"""
from __future__ import annotations

import json
import numbers
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..scene import check_scene_id

FORMAT = "vistest.synth/1"
SCALES = ("figural", "vista", "environmental")
PERSPECTIVES = ("egocentric", "exocentric")
CAMERA_MODES = {"egocentric": ("walk",), "exocentric": ("fixed", "orbit", "pan")}
RELATIONS = ("ground", "on", "next_to", "inside")
DEFAULT_FRAMES, DEFAULT_FPS, DEFAULT_RESOLUTION = 300, 30.0, (640, 480)
MIN_FRAMES = 8  # a path needs a few frames
MAX_OBJECTS = 60  # instances in one scenario (placement is quadratic in them)
MAX_PIXELS = 3840 * 2160


class SpecError(InputError):
    """Invalid scenario spec: the message names the file, the field and the expectation."""


@dataclass(frozen=True)
class ObjectSpec:
    """One kind of object. ``count``: (min, max) instances, drawn uniformly. ``size_min``/``size_max``:
    full extents (x, y, z) in metres, each instance's drawn uniformly between them (None: the scale's
    catalogue, vistest.synth.layout.CATALOGUES). ``relation``: ``ground`` (anywhere on the scale's
    ground: the table top, the room's or the yard's floor), ``on`` (resting on top of an instance of
    category ``target``), ``next_to`` (beside an instance of ``target``, a gap of at most the scale's
    NEXT_GAP_M), ``inside`` (on the ground, footprint inside ``region``: (x0, y0, x1, y1) fractions of
    the ground's extent, 0-1)."""

    category: str
    count: tuple[int, int] = (1, 1)
    size_min: tuple[float, float, float] | None = None
    size_max: tuple[float, float, float] | None = None
    relation: str = "ground"
    target: str | None = None
    region: tuple[float, float, float, float] | None = None


@dataclass(frozen=True)
class CameraSpec:
    """The camera. ``perspective`` egocentric (``mode`` walk: a walk along a path at eye height,
    looking where it goes and around) or exocentric (``mode`` fixed: a tripod; orbit: circling the
    ground's centre; pan: a tripod turning). ``height_m``: the eye height above the floor (None: the
    scale's default, drawn from its range); ``distance_m``: horizontal distance of an exocentric camera
    from the ground's centre (None: the scale's); ``sweep_deg``: an orbit's arc or a pan's turn
    (None: 270 and 90)."""

    perspective: str = "exocentric"
    mode: str = "orbit"
    height_m: float | None = None
    distance_m: float | None = None
    sweep_deg: float | None = None


@dataclass(frozen=True)
class MoverSpec:
    """An object that moves: the ``instance``-th (0-based) instance of ``category`` slides along a
    straight line on its support. At rest until ``start_s`` seconds, it speeds up at ``ramp_mps2`` (m/s^2;
    None: the scale's, vistest.synth.layout.SCALES) to a speed drawn from ``speed_mps`` (min, max), then
    keeps a constant acceleration drawn from ``accel_mps2`` (min, max; each at most ``ramp_mps2`` in
    magnitude); speed never below 0 (it stops and stays), and it brakes at ``ramp_mps2`` to stop at the
    end of its lane (the path is drawn to fit the ground). No step in speed: every acceleration is at most
    ``ramp_mps2`` in magnitude."""

    category: str
    instance: int = 0
    speed_mps: tuple[float, float] = (0.2, 0.6)
    accel_mps2: tuple[float, float] = (0.0, 0.0)
    start_s: float = 0.0
    ramp_mps2: float | None = None


@dataclass(frozen=True)
class ScenarioSpec:
    """A whole scenario (module docstring); ``dynamic`` when it has movers."""

    scenario_id: str
    scale: str
    objects: tuple[ObjectSpec, ...]
    camera: CameraSpec = field(default_factory=CameraSpec)
    dynamics: tuple[MoverSpec, ...] = ()
    frames: int = DEFAULT_FRAMES
    fps: float = DEFAULT_FPS
    resolution: tuple[int, int] = DEFAULT_RESOLUTION
    seed: int = 0

    @property
    def dynamic(self) -> bool:
        return bool(self.dynamics)

    @property
    def cell(self) -> str:
        """The taxonomy cell: ``{scale}-{perspective}-{static|dynamic}``."""
        return cell_name(self.scale, self.camera.perspective, self.dynamic)

    def with_render(self, frames: int | None = None, resolution: tuple[int, int] | None = None,
                    fps: float | None = None, source: str = "<spec>") -> "ScenarioSpec":
        """The same scenario rendered with other settings (None: unchanged); validated again (errors name
        ``source``)."""
        doc = spec_to_dict(self)
        doc.update({k: v for k, v in (("frames", frames), ("resolution", None if resolution is None
                                                               else list(resolution)), ("fps", fps)) if v is not None})
        return spec_from_dict(doc, source)

    def to_dict(self) -> dict:
        return spec_to_dict(self)


def cell_name(scale: str, perspective: str, dynamic: bool) -> str:
    """``figural-egocentric-static`` ... (scale, perspective, dynamics)."""
    return f"{scale}-{perspective}-{'dynamic' if dynamic else 'static'}"


CELLS = tuple(cell_name(s, p, d) for s in SCALES for p in PERSPECTIVES for d in (False, True))


# ---------------------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------------------
class _Parser:
    def __init__(self, source: str):
        self.source = source

    def fail(self, fld: str, expected: str, got: Any = ...) -> SpecError:
        return SpecError(file=self.source, field=fld, expected=expected, got=got)

    def obj(self, v: Any, fld: str, known: tuple[str, ...]) -> dict:
        if not isinstance(v, dict):
            raise self.fail(fld, "an object", v)
        extra = sorted(set(v) - set(known))
        if extra:
            raise self.fail(f"{fld}.{extra[0]}" if fld else extra[0], f"one of the fields {', '.join(known)}")
        return v

    def number(self, v: Any, fld: str, lo: float | None = None, hi: float | None = None,
               positive: bool = False) -> float:
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or v != v or v in (float("inf"), float("-inf")):
            raise self.fail(fld, "a finite number", v)
        v = float(v)
        if positive and v <= 0:
            raise self.fail(fld, "a positive number", v)
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise self.fail(fld, f"a number in [{lo}, {hi}]", v)
        return v

    def integer(self, v: Any, fld: str, lo: int, hi: int | None = None) -> int:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < lo or (hi is not None and v > hi):
            raise self.fail(fld, f"an integer >= {lo}" + (f" and <= {hi}" if hi is not None else ""), v)
        return int(v)

    def string(self, v: Any, fld: str, choices: tuple[str, ...] | None = None) -> str:
        if not isinstance(v, str) or not v.strip():
            raise self.fail(fld, "a non-empty string", v)
        if choices is not None and v not in choices:
            raise self.fail(fld, f"one of {', '.join(choices)}", v)
        return v

    def range2(self, v: Any, fld: str, lo: float | None = None, positive: bool = False) -> tuple[float, float]:
        """A number (a fixed value) or [min, max] with min <= max."""
        if not isinstance(v, (list, tuple)):
            x = self.number(v, fld, lo=lo, positive=positive)
            return (x, x)
        if len(v) != 2:
            raise self.fail(fld, "a number or [min, max]", v)
        a, b = (self.number(x, f"{fld}[{i}]", lo=lo, positive=positive) for i, x in enumerate(v))
        if a > b:
            raise self.fail(fld, "[min, max] with min <= max", list(v))
        return (a, b)

    def vec3(self, v: Any, fld: str) -> tuple[float, float, float]:
        if not isinstance(v, (list, tuple)) or len(v) != 3:
            raise self.fail(fld, "3 positive numbers (x, y, z metres)", v)
        return tuple(self.number(x, f"{fld}[{i}]", positive=True) for i, x in enumerate(v))  # type: ignore

    def spec(self, doc: Any) -> ScenarioSpec:
        doc = self.obj(doc, "", ("format", "scenario_id", "scale", "objects", "camera", "dynamics", "frames", "fps",
                                 "resolution", "seed"))
        fmt = doc.get("format", FORMAT)
        if fmt != FORMAT:
            raise self.fail("format", repr(FORMAT), fmt)
        if "scenario_id" not in doc:
            raise self.fail("scenario_id", "a scenario id (letters, digits, '.', '_', '-')")
        try:
            sid = check_scene_id(doc["scenario_id"], self.source)
        except InputError as e:
            raise SpecError(str(e).replace(": scene_id:", ": scenario_id:")) from None
        scale = self.string(doc.get("scale"), "scale", SCALES)
        objs = doc.get("objects")
        if not isinstance(objs, list) or not objs:
            raise self.fail("objects", "a non-empty list of objects", objs)
        objects = tuple(self.object_spec(o, f"objects[{i}]", objs[:i]) for i, o in enumerate(objs))
        if sum(o.count[1] for o in objects) > MAX_OBJECTS:
            raise self.fail("objects", f"at most {MAX_OBJECTS} instances in all (the counts' maxima)",
                            sum(o.count[1] for o in objects))
        camera = self.camera(doc.get("camera", {}))
        dyn = doc.get("dynamics", [])
        if dyn in (None, "none"):
            dyn = []
        if not isinstance(dyn, list):
            raise self.fail("dynamics", "a list of moving objects, or \"none\"", dyn)
        frames = self.integer(doc.get("frames", DEFAULT_FRAMES), "frames", MIN_FRAMES, 100_000)
        fps = self.number(doc.get("fps", DEFAULT_FPS), "fps", 0.1, 1000.0)  # frames/s
        res = doc.get("resolution", list(DEFAULT_RESOLUTION))
        if not isinstance(res, (list, tuple)) or len(res) != 2:
            raise self.fail("resolution", "[W, H] in pixels", res)
        w, h = (self.integer(x, f"resolution[{i}]", 16) for i, x in enumerate(res))
        if w % 2 or h % 2 or w * h > MAX_PIXELS:
            raise self.fail("resolution", f"even [W, H] (the video is yuv420p), at most {MAX_PIXELS} pixels", res)
        movers = tuple(self.mover(m, f"dynamics[{i}]", objects, frames / fps) for i, m in enumerate(dyn))
        for i, m in enumerate(movers):
            carried = [f"objects[{j}]" for j, o in enumerate(objects) if o.target == m.category]
            if carried:
                raise self.fail(f"{carried[0]}.target", f"a category that does not move ({m.category!r} moves: "
                                f"dynamics[{i}]; what stands on or beside it would be left behind)", m.category)
        seen = set()
        for i, m in enumerate(movers):
            if (m.category, m.instance) in seen:
                raise self.fail(f"dynamics[{i}]", "a different object from the other movers",
                                f"{m.category}[{m.instance}]")
            seen.add((m.category, m.instance))
        seed = self.integer(doc.get("seed", 0), "seed", 0, 2 ** 63 - 1)
        return ScenarioSpec(sid, scale, objects, camera, movers, frames, fps, (w, h), seed)

    def object_spec(self, v: Any, fld: str, before: list) -> ObjectSpec:
        v = self.obj(v, fld, ("category", "count", "size_min", "size_max", "relation", "target", "region"))
        cat = self.string(v.get("category"), f"{fld}.category")
        cnt = v.get("count", 1)
        if isinstance(cnt, (list, tuple)):
            if len(cnt) != 2:
                raise self.fail(f"{fld}.count", "an integer or [min, max]", cnt)
            count = tuple(self.integer(x, f"{fld}.count[{i}]", 0, MAX_OBJECTS) for i, x in enumerate(cnt))
            if count[0] > count[1]:
                raise self.fail(f"{fld}.count", "[min, max] with min <= max", cnt)
        else:
            count = (self.integer(cnt, f"{fld}.count", 0, MAX_OBJECTS),) * 2
        smin = None if v.get("size_min") is None else self.vec3(v["size_min"], f"{fld}.size_min")
        smax = None if v.get("size_max") is None else self.vec3(v["size_max"], f"{fld}.size_max")
        if (smin is None) != (smax is None):
            raise self.fail(f"{fld}.size_max" if smax is None else f"{fld}.size_min",
                            "size_min and size_max together (or neither: the catalogue's sizes)")
        if smin is not None and any(a > b for a, b in zip(smin, smax)):
            raise self.fail(f"{fld}.size_max", "each extent >= size_min's", list(smax))
        rel = self.string(v.get("relation", "ground"), f"{fld}.relation", RELATIONS)
        target, region = v.get("target"), v.get("region")
        if rel in ("on", "next_to"):
            target = self.string(target, f"{fld}.target")
            if target not in [o.get("category") for o in before if isinstance(o, dict)]:
                raise self.fail(f"{fld}.target", "the category of an object listed before this one", target)
        elif target is not None:
            raise self.fail(f"{fld}.target", f"no target for relation {rel!r} (only on and next_to take one)",
                            target)
        if rel == "inside":
            if not isinstance(region, (list, tuple)) or len(region) != 4:
                raise self.fail(f"{fld}.region", "[x0, y0, x1, y1], fractions of the ground (0-1)", region)
            region = tuple(self.number(x, f"{fld}.region[{i}]", 0.0, 1.0) for i, x in enumerate(region))
            if region[0] >= region[2] or region[1] >= region[3]:
                raise self.fail(f"{fld}.region", "x0 < x1 and y0 < y1", list(region))
        elif region is not None:
            raise self.fail(f"{fld}.region", "no region unless relation is 'inside'", region)
        return ObjectSpec(cat, count, smin, smax, rel, target, region)  # type: ignore[arg-type]

    def camera(self, v: Any) -> CameraSpec:
        v = self.obj(v, "camera", ("perspective", "mode", "height_m", "distance_m", "sweep_deg"))
        persp = self.string(v.get("perspective", "exocentric"), "camera.perspective", PERSPECTIVES)
        mode = self.string(v.get("mode", CAMERA_MODES[persp][-1 if persp == "exocentric" else 0]), "camera.mode",
                           CAMERA_MODES[persp])
        h = None if v.get("height_m") is None else self.number(v["height_m"], "camera.height_m", 0.05, 50.0)
        d = None if v.get("distance_m") is None else self.number(v["distance_m"], "camera.distance_m", 0.1, 200.0)
        if d is not None and persp == "egocentric":
            raise self.fail("camera.distance_m", "none for an egocentric walk (it walks the scale's path)", d)
        sw = None if v.get("sweep_deg") is None else self.number(v["sweep_deg"], "camera.sweep_deg", 0.0, 720.0)
        if sw is not None and mode not in ("orbit", "pan"):
            raise self.fail("camera.sweep_deg", "none unless mode is orbit or pan", sw)
        return CameraSpec(persp, mode, h, d, sw)

    def mover(self, v: Any, fld: str, objects: tuple[ObjectSpec, ...], duration: float) -> MoverSpec:
        v = self.obj(v, fld, ("category", "instance", "speed_mps", "accel_mps2", "start_s", "ramp_mps2"))
        cat = self.string(v.get("category"), f"{fld}.category")
        kinds = [o for o in objects if o.category == cat]
        if not kinds:
            raise self.fail(f"{fld}.category", "the category of an object of the scenario", cat)
        inst = self.integer(v.get("instance", 0), f"{fld}.instance", 0)
        least = sum(o.count[0] for o in kinds)
        if inst >= least:
            raise self.fail(f"{fld}.instance", f"an instance every draw has (< {least}, the counts' minimum)", inst)
        bad = [o.relation for o in kinds if o.relation not in ("ground", "inside")]
        if bad:
            raise self.fail(f"{fld}.category", "a category placed on the ground or inside a region (a mover slides "
                            "on the ground)", f"{cat} ({bad[0]})")
        speed = self.range2(v.get("speed_mps", [0.2, 0.6]), f"{fld}.speed_mps", lo=0.0)
        accel = self.range2(v.get("accel_mps2", [0.0, 0.0]), f"{fld}.accel_mps2")
        start = self.number(v.get("start_s", 0.0), f"{fld}.start_s", 0.0)
        if start >= duration:
            raise self.fail(f"{fld}.start_s", f"a time before the video's end ({duration:g} s)", start)
        ramp = None if v.get("ramp_mps2") is None else self.number(v["ramp_mps2"], f"{fld}.ramp_mps2", positive=True)
        if ramp is not None and max(abs(a) for a in accel) > ramp:
            raise self.fail(f"{fld}.ramp_mps2", f"at least the largest |accel_mps2| ({max(abs(a) for a in accel):g}): "
                            "the speed-up and the brake bound every acceleration", ramp)
        return MoverSpec(cat, inst, speed, accel, start, ramp)


def spec_from_dict(doc: Any, source: str = "<spec>") -> ScenarioSpec:
    """Validate a spec document (module docstring); SpecError naming ``source`` and the field."""
    return _Parser(source).spec(doc)


def load_spec(path: str | os.PathLike) -> ScenarioSpec:
    """Read and validate a spec file: ``.json``, or ``.yaml``/``.yml`` (needs PyYAML)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise SpecError(file=str(p), field="", expected="a readable spec file", got=e.strerror) from None
    if p.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise SpecError(f"{p}: a YAML spec needs PyYAML (pip install pyyaml); or write the spec as JSON") from None
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise SpecError(f"{p}: expected YAML: {e}") from None
    else:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise SpecError(f"{p}: expected JSON: line {e.lineno} column {e.colno}: {e.msg}") from None
    return spec_from_dict(doc, str(p))


def spec_to_dict(spec: ScenarioSpec) -> dict:
    """The spec as a JSON document (every field written; :func:`spec_from_dict` reads it back equal)."""
    def obj(o: ObjectSpec) -> dict:
        d: dict = {"category": o.category, "count": list(o.count), "relation": o.relation}
        if o.size_min is not None:
            d["size_min"], d["size_max"] = list(o.size_min), list(o.size_max)
        if o.target is not None:
            d["target"] = o.target
        if o.region is not None:
            d["region"] = list(o.region)
        return d

    c = spec.camera
    cam = {"perspective": c.perspective, "mode": c.mode}
    cam.update({k: v for k, v in (("height_m", c.height_m), ("distance_m", c.distance_m),
                                  ("sweep_deg", c.sweep_deg)) if v is not None})
    return {"format": FORMAT, "scenario_id": spec.scenario_id, "scale": spec.scale,
            "objects": [obj(o) for o in spec.objects], "camera": cam,
            "dynamics": [{"category": m.category, "instance": m.instance, "speed_mps": list(m.speed_mps),
                          "accel_mps2": list(m.accel_mps2), "start_s": m.start_s,
                          **({} if m.ramp_mps2 is None else {"ramp_mps2": m.ramp_mps2})} for m in spec.dynamics],
            "frames": spec.frames, "fps": spec.fps, "resolution": list(spec.resolution), "seed": spec.seed}


__all__ = ["FORMAT", "SCALES", "PERSPECTIVES", "CAMERA_MODES", "RELATIONS", "CELLS", "SpecError", "ObjectSpec",
           "CameraSpec", "MoverSpec", "ScenarioSpec", "cell_name", "spec_from_dict", "load_spec", "spec_to_dict"]
