"""Render a scenario's layout into a scene folder: what ``vistest import`` gives (docs/synth.md).

:func:`render_scenario` writes into one folder::

    scene.json        the Scene (vistest.scene/1): boxes, movers' tracks (a key every frame), poses,
                      intrinsics, room polygon (the floor), mesh and its instance ids; written last
    video.mp4         H.264 render (pyrender, offscreen; the demo's video writer)
    mesh.ply          floor, walls and every *static* object's shape (face colours); movers are not in it
    mesh_objects.txt  the object id of each mesh vertex (empty for the floor's and walls')
    spec.json         the spec, every default written out (vistest.synth.spec.spec_to_dict)

Looks are procedural (no third-party asset): each object is its category's shape, composed of
primitives inside its box (vistest.synth.shapes: a chair a seat on legs with a back, a ball a sphere
...), flat-coloured from its look (colour, second colour, a dark and a pale shade), the floor a faint
checker of 1 m tiles (0.25 m at figural scale), one directional light and an ambient term, all from the
seed (vistest.synth.layout). scene.json keeps each object's axis-aligned box (VSI-Bench's convention),
exactly the box of its shape; ``mesh.ply`` holds the static objects' shapes, so the visibility table
counts an object's own pixels (instance visibility, docs/visibility.md). Every part is closed and wound
counter-clockwise seen from outside: pyrender culls back faces.

Determinism: pyrender draws opaque nodes sorted by the distance of the node's origin from the camera
(its set of nodes has no fixed order). Every object is therefore its own node posed at its centre (a
distinct distance; its parts are primitives in a fixed order), the floor and walls one node of several
primitives; so the draw order, hence every pixel, is fixed, and the same spec gives byte-identical
``video.mp4`` and ``scene.json`` on one machine (libx264 is deterministic for one build and thread count).

Conventions: those of vistest.scene (metres, +Z up, OpenCV camera-to-world; intrinsics of
vistest.synth.demo.demo_intrinsics, fx = fy = 0.8 W).
"""
from __future__ import annotations

import json
import os
import types
from pathlib import Path

import numpy as np

from .. import freshness
from ..atomic import write_atomic
from . import demo
from ..scene import Frame, Intrinsics, Scene, SceneObject, TrackKey
from .layout import Layout, Placed, build_layout
from .shapes import object_mesh, object_parts, part_arrays, slot_colours
from .spec import ScenarioSpec, spec_to_dict

STAMP = ".synth-params.json"  # the spec (and rules versions) a folder was rendered from, written last
TEXTURE_PX = 64  # the floor's checker texture
# (bump vistest.freshness.VERSIONS["synth_render"] when the same layout renders differently)
ZNEAR, ZFAR = 0.02, 120.0  # m


def _quad(corners, colour, cell: float | None):
    """(positions, normals, uvs, triangles) of a quad given counter-clockwise from its front."""
    p = np.array(corners, np.float32)
    n = np.cross(p[1] - p[0], p[2] - p[0])
    n = (n / np.linalg.norm(n)).astype(np.float32)
    uv = (p[:, :2] / cell if cell else np.zeros((4, 2))).astype(np.float32)
    return p, np.tile(n, (4, 1)), uv, np.array([[0, 1, 2], [0, 2, 3]], np.uint32)


def room_quads(layout: Layout) -> list[tuple[list, tuple[float, float, float]]]:
    """The floor and (vista) four walls as (corners counter-clockwise seen from inside, RGB)."""
    fx, fy = layout.ground.floor
    lt = layout.lighting
    quads = [([[0, 0, 0], [fx, 0, 0], [fx, fy, 0], [0, fy, 0]], lt.floor)]
    rz = layout.ground.wall
    if rz > 0:
        quads += [([[0, 0, 0], [0, 0, rz], [fx, 0, rz], [fx, 0, 0]], lt.walls[0]),
                  ([[fx, 0, 0], [fx, 0, rz], [fx, fy, rz], [fx, fy, 0]], lt.walls[1]),
                  ([[fx, fy, 0], [fx, fy, rz], [0, fy, rz], [0, fy, 0]], lt.walls[0]),
                  ([[0, fy, 0], [0, fy, rz], [0, 0, rz], [0, 0, 0]], lt.walls[1])]
    return quads


class ScenarioRenderer:
    """pyrender scene of a layout: the room node, a node per object (posed at its centre and yaw,
    movers re-posed per frame), a directional light, the camera; renders RGB (H, W, 3) uint8."""

    def __init__(self, layout: Layout, k: Intrinsics, size: tuple[int, int]):
        import pyrender

        from ..visibility.render import gl_camera

        self.pyrender = pyrender
        self.layout = layout
        lt = layout.lighting
        self.scene = pyrender.Scene(bg_color=[*lt.background, 1.0], ambient_light=[lt.ambient] * 3)
        prims = []
        cell = 0.25 if layout.spec.scale == "figural" else 1.0
        for corners, colour in room_quads(layout):
            tex = None
            if corners[0][2] == corners[1][2] == corners[2][2] == 0:  # the floor: a faint checker
                c = np.array(colour)
                half = TEXTURE_PX // 2  # a 2 x 2 checker (rows of 3 x 64 bytes: GL's 4-byte row alignment)
                img = np.where(((np.indices((TEXTURE_PX, TEXTURE_PX)) // half).sum(0) % 2 == 1)[..., None], c * 0.85, c)
                tex = pyrender.Texture(source=np.round(img * 255).astype(np.uint8), source_channels="RGB",
                                       sampler=pyrender.Sampler(magFilter=0x2600, minFilter=0x2600))  # GL_NEAREST
            prims.append(self._primitive(*_quad(corners, colour, 2 * cell if tex else None), colour, tex))
        self.scene.add(pyrender.Mesh(prims))
        self.nodes = []
        for o in layout.objects:
            mesh = pyrender.Mesh([self._primitive(*arrays, colour, None) for arrays, colour in object_primitives(o)])
            self.nodes.append(self.scene.add(mesh, pose=_pose(o)))
        self.scene.add(pyrender.DirectionalLight(color=np.ones(3), intensity=lt.intensity),
                       pose=demo.light_pose(lt.light_dir))
        self.cam_node = self.scene.add(gl_camera(k, ZNEAR, ZFAR), pose=np.eye(4))
        self.renderer = lit_renderer(self.scene, *size)

    def _primitive(self, pos, nrm, uv, tri, colour, texture):
        return _primitive(self.pyrender, pos, nrm, uv, tri, colour, texture)

    def render(self, frame: int) -> tuple[np.ndarray, None]:
        """(RGB uint8 (H, W, 3), None) at decoded frame ``frame``."""
        from ..visibility.render import gl_pose

        for o, node in zip(self.layout.objects, self.nodes):
            if o.centres is not None:
                self.scene.set_pose(node, _pose(o.at(frame)))
        self.scene.set_pose(self.cam_node, gl_pose(self.layout.poses[frame]))
        rgb, _ = self.renderer.render(self.scene)
        return np.ascontiguousarray(rgb), None

    def close(self) -> None:
        from ..visibility.render import free_renderer

        free_renderer(self.renderer)


def object_primitives(o: Placed) -> list[tuple[tuple, tuple[float, float, float]]]:
    """An object's shape (vistest.synth.shapes) in its own frame, one primitive per colour slot (in slot
    order, each slot's parts in their order: a fixed draw order): [((positions, normals, uvs, triangles),
    RGB)]; the uvs are zero (no texture)."""
    colours = slot_colours(o.look.colour, o.look.colour2)
    by_slot: dict[int, list] = {}
    for part in object_parts(o.label, o.size):
        by_slot.setdefault(part.slot, []).append(part_arrays(part))
    out = []
    for slot in sorted(by_slot):
        arrays, base, tris = by_slot[slot], 0, []
        for p, _, t in arrays:
            tris.append(t + base)
            base += len(p)
        pos = np.vstack([a[0] for a in arrays])
        out.append(((pos, np.vstack([a[1] for a in arrays]), np.zeros((len(pos), 2), np.float32),
                     np.vstack(tris).astype(np.uint32)), tuple(float(c) for c in colours[slot])))
    return out


def _pose(o: Placed) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3], m[:3, 3] = o.rotation, o.center
    return m


def scene_mesh(layout: Layout):
    """Floor, walls and the static objects' shapes (vistest.synth.shapes, posed by their boxes) as one
    trimesh with face colours (each part's colour, as rendered before lighting), and the ``mesh_objects``
    text (the object id per vertex; empty for the room's)."""
    import trimesh

    parts, lines = [], []
    for corners, colour in room_quads(layout):
        m = trimesh.Trimesh(np.array(corners, float), [[0, 1, 2], [0, 2, 3]], process=False)
        parts.append((m, colour))
        lines += [""] * len(m.vertices)
    meshes = []
    for m, colour in parts:
        m.visual.face_colors = np.tile(np.round(np.array([*colour, 1.0]) * 255).astype(np.uint8), (len(m.faces), 1))
        meshes.append(m)
    for o in layout.objects:
        if o.centres is None:
            v, f, slots = object_mesh(o.label, o.size, o.rotation, o.center)
            m = trimesh.Trimesh(v, f, process=False)
            rgb = np.round(slot_colours(o.look.colour, o.look.colour2) * 255).astype(np.uint8)
            m.visual.face_colors = np.c_[rgb[slots], np.full(len(f), 255, np.uint8)]
            meshes.append(m)
            lines += [o.id] * len(v)
    return trimesh.util.concatenate(meshes), "".join(f"{x}\n" for x in lines)


def layout_scene(layout: Layout, root: Path) -> Scene:
    """The Scene of a layout (module docstring): ids, labels, boxes; a mover's track keys every frame."""
    spec = layout.spec
    w, h = spec.resolution
    frames = tuple(Frame(index=i, time=i / spec.fps, camera_to_world=np.array(p, float))
                   for i, p in enumerate(layout.poses))
    objects = []
    for o in layout.objects:
        rot = o.rotation
        track = None
        if o.centres is not None:
            track = tuple(TrackKey(i, _ro(c), _ro(rot)) for i, c in enumerate(o.centres))
        objects.append(SceneObject(o.id, o.label, _ro(o.center), _ro(o.size), _ro(rot), track))
    fx, fy = layout.ground.floor
    room = {"size_m2": fx * fy, "polygon": [[0.0, 0.0], [fx, 0.0], [fx, fy], [0.0, fy]], "area_type": "single_room"}
    if layout.ground.wall > 0:
        room["height_m"] = layout.ground.wall
    return Scene(scene_id=spec.scenario_id, fps=float(spec.fps), image_size=(w, h),
                 camera=demo.demo_intrinsics((w, h)), frames=frames, objects=tuple(objects), video="video.mp4",
                 mesh="mesh.ply", room=room, mesh_objects="mesh_objects.txt", root=root)


def _ro(a) -> np.ndarray:
    a = np.array(a, np.float64)
    a.setflags(write=False)
    return a


def render_scenario(spec: ScenarioSpec, outdir: str | os.PathLike, quiet: bool = False, force: bool = False,
                    layout: Layout | None = None) -> Path:
    """Lay out and render ``spec`` into ``outdir`` (module docstring); returns its scene.json. ``layout``:
    ``build_layout(spec)`` when the caller already holds it (it is laid out here otherwise).

    Reruns: a folder already holding this spec's render (``STAMP``, written after scene.json: the spec
    and the stamp of the ``synth_layout`` and ``synth_render`` rules, vistest.freshness) is left as it is
    unless ``force``;
    otherwise scene.json and the stamp are removed first and written last, every other file replaced
    atomically, so an interrupted run leaves no scene a rerun trusts."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    scene_path, stamp = outdir / "scene.json", outdir / STAMP
    params = {"spec": spec_to_dict(spec)}
    if not force and _up_to_date(outdir, stamp, params):
        return scene_path
    layout = layout or build_layout(spec)
    stamp.unlink(missing_ok=True)
    scene_path.unlink(missing_ok=True)
    mesh, ids = scene_mesh(layout)
    write_atomic(outdir / "mesh.ply", mesh.export(file_type="ply"))
    write_atomic(outdir / "mesh_objects.txt", ids)
    write_atomic(outdir / "spec.json", json.dumps(spec_to_dict(spec), indent=1) + "\n")
    w, h = spec.resolution
    renderer = ScenarioRenderer(layout, demo.demo_intrinsics((w, h)), (w, h))
    try:
        demo.write_video_and_depth(outdir, renderer.render, spec.frames, spec.fps, (w, h),
                                   f"Rendering {spec.scenario_id}", quiet, depth=False)
    finally:
        renderer.close()
    layout_scene(layout, outdir).save(scene_path)
    freshness.write(stamp, "synth render", params)
    return scene_path


def _up_to_date(outdir: Path, stamp: Path, params: dict) -> bool:
    """The stamp is current for ``params`` (vistest.freshness.current) and scene.json loads (it validates
    and checks the files it names exist)."""
    if not freshness.current(stamp, "synth render", params):
        return False
    try:
        Scene.load(outdir / "scene.json")
    except (OSError, ValueError):
        return False
    return True


def category_sheet(out_png: str | os.PathLike, tile: tuple[int, int] = (128, 96), columns: int = 10,
                   seed: int = 0) -> list[str]:
    """A contact sheet of every catalogue category (vistest.synth.layout: the three scales' and the figural
    table), one tile each: the object at its catalogue's mid size, seen from 35 degrees above, colours
    from ``seed``, its label below; written to ``out_png`` (docs/synth.md shows it). Returns the labels."""
    import cv2
    import pyrender

    from ..geometry import look_at
    from ..visibility.render import gl_camera, gl_pose
    from .layout import SCALES, catalogue, draw_look

    cats: dict[str, np.ndarray] = {}
    for scale in ("figural", "vista", "environmental"):
        for label, (lo, hi) in catalogue(scale).items():
            cats.setdefault(label, (np.array(lo, float) + np.array(hi, float)) / 2)
    t = SCALES["figural"].table
    cats.setdefault("table", np.array([np.mean(t[0]), np.mean(t[1]), t[2]]))
    labels = sorted(cats)
    w, h = tile
    k = demo.demo_intrinsics((w, h))
    rng = np.random.default_rng(seed)
    renderer = None
    tiles = []
    try:
        for label in labels:
            size = cats[label]
            o = Placed("1", label, np.array([0.0, 0.0, size[2] / 2]), size, np.radians(-20), draw_look(rng), 0)
            scene = pyrender.Scene(bg_color=[0.93, 0.93, 0.9, 1.0], ambient_light=[0.4] * 3)
            scene.add(pyrender.Mesh([_primitive(pyrender, *arrays, colour)
                                     for arrays, colour in object_primitives(o)]), pose=_pose(o))
            scene.add(pyrender.DirectionalLight(color=np.ones(3), intensity=2.5),
                      pose=demo.light_pose(np.array([-0.4, -0.6, -0.7])))
            r = 0.5 * float(np.linalg.norm(size))
            d = 1.25 * r / np.sin(np.arctan(min(w, h) / 2 / k.fx))
            el, az = np.radians(30), np.radians(-60)
            eye = o.center + d * np.array([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)])
            scene.add(gl_camera(k, 0.01 * d, 10 * d), pose=gl_pose(look_at(eye, o.center)))
            renderer = renderer or lit_renderer(scene, w, h)
            check_lit_scene(scene)
            rgb, _ = renderer.render(scene)
            img = np.full((h + 16, w, 3), 255, np.uint8)
            img[:h] = rgb
            cv2.putText(img, label, (3, h + 12), cv2.FONT_HERSHEY_SIMPLEX, 0.36, (0, 0, 0), 1, cv2.LINE_AA)
            tiles.append(img)
    finally:
        if renderer is not None:
            from ..visibility.render import free_renderer

            free_renderer(renderer)
    rows = [tiles[i:i + columns] for i in range(0, len(tiles), columns)]
    rows[-1] += [np.full_like(tiles[0], 255)] * (columns - len(rows[-1]))
    sheet = np.vstack([np.hstack(r) for r in rows])
    ok, png = cv2.imencode(".png", sheet[..., ::-1], [cv2.IMWRITE_PNG_COMPRESSION, 9])
    if not ok:
        raise RuntimeError(f"{out_png}: OpenCV could not encode the PNG")
    write_atomic(Path(out_png), png.tobytes())
    return labels


SHADERS = Path(__file__).with_name("shaders")  # lit.vert, lit.frag: the lit mesh program


def lit_renderer(scene, width: int, height: int):
    """A pyrender.OffscreenRenderer (``width`` x ``height``, pyrender's 4x multisampling), colour only (the depth it
    returns is None: :func:`_read_colour`), whose lit mesh program is ``shaders/lit.*``: pyrender's
    metallic-roughness shading for the one case :func:`_primitive` and the scenario's lights make (their docstring),
    2.2-2.9x cheaper on llvmpipe and the same pixels but at a few primitive edges (tests/test_synth_video.py
    compares it with pyrender's own program). ``scene`` is checked to be that case (:func:`check_lit_scene`); every
    other program (segmentation, depth) is pyrender's."""
    import pyrender
    from pyrender.shader_program import ShaderProgramCache

    class LitPrograms(ShaderProgramCache):
        def get_program(self, vertex_shader, fragment_shader, geometry_shader=None, defines=None):
            if (vertex_shader, fragment_shader) == ("mesh.vert", "mesh.frag"):
                vertex_shader, fragment_shader = str(SHADERS / "lit.vert"), str(SHADERS / "lit.frag")
            return super().get_program(vertex_shader, fragment_shader, geometry_shader, defines)

    check_lit_scene(scene)
    renderer = pyrender.OffscreenRenderer(width, height)
    renderer._renderer._program_cache = LitPrograms()  # pyrender 0.1.45: the Renderer's one program cache
    renderer._renderer._read_main_framebuffer = types.MethodType(_read_colour, renderer._renderer)
    return renderer


def _read_colour(renderer, scene, flags):
    """pyrender 0.1.45's ``Renderer._read_main_framebuffer`` for a plain colour render (no flag but
    OFFSCREEN), without the depth image: the same multisampled colour buffer resolved by the same blit and
    read the same way, and None for the depth (pyrender reads the depth buffer and linearises it in numpy
    first, which was a quarter of a scenario frame's CPU time: 2.5-2.7 -> 1.9-2.0 CPU s a hundred 640x480
    frames, the same bytes; tests/test_synth_video.py compares with pyrender's own read). Any other flag:
    pyrender's own read."""
    import pyrender
    from OpenGL import GL

    if flags & ~pyrender.RenderFlags.OFFSCREEN:
        return type(renderer)._read_main_framebuffer(renderer, scene, flags)
    w, h = renderer._main_fb_dims
    GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, renderer._main_fb_ms)
    GL.glBindFramebuffer(GL.GL_DRAW_FRAMEBUFFER, renderer._main_fb)
    GL.glBlitFramebuffer(0, 0, w, h, 0, 0, w, h, GL.GL_COLOR_BUFFER_BIT, GL.GL_LINEAR)
    GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, renderer._main_fb)
    buf = GL.glReadPixels(0, 0, w, h, GL.GL_RGB, GL.GL_UNSIGNED_BYTE)
    return np.flip(np.frombuffer(buf, np.uint8).reshape(h, w, 3), axis=0), None


def check_lit_scene(scene) -> None:
    """Raise RuntimeError unless ``scene`` (a pyrender.Scene) is what ``shaders/lit.frag`` draws right: exactly
    one directional light, no point or spot light, every material metallic-roughness with metallic 0, roughness
    1, no emissive, normal, occlusion or metallic-roughness texture, every primitive with normals and uvs."""
    if len(scene.directional_light_nodes) != 1 or scene.point_light_nodes or scene.spot_light_nodes:
        raise RuntimeError("the lit program draws one directional light and no point or spot light")
    for mesh in scene.meshes:
        for p in mesh.primitives:
            m = p.material
            if (type(m).__name__ != "MetallicRoughnessMaterial" or m.metallicFactor != 0 or m.roughnessFactor != 1
                    or np.any(m.emissiveFactor) or m.normalTexture is not None or m.occlusionTexture is not None
                    or m.emissiveTexture is not None or m.metallicRoughnessTexture is not None
                    or p.normals is None or p.texcoord_0 is None):
                raise RuntimeError(f"the lit program cannot draw a primitive of {mesh.name or 'a mesh'}: "
                                   "metallic 0, roughness 1, normals and uvs, no emissive or other texture expected")


def _primitive(pyrender, pos, nrm, uv, tri, colour, texture=None):
    """A pyrender primitive: matte, single-sided (back faces culled), ``colour`` RGB 0-1 or ``texture``."""
    mat = pyrender.MetallicRoughnessMaterial(
        baseColorFactor=[1.0, 1.0, 1.0, 1.0] if texture is not None else [*map(float, colour), 1.0],
        baseColorTexture=texture, metallicFactor=0.0, roughnessFactor=1.0)
    return pyrender.Primitive(positions=pos, normals=nrm, texcoord_0=uv, indices=tri, material=mat)
