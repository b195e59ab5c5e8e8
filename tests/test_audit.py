"""Audit: a consistent scene passes; each single convention error fails and the audit
names its fix.

The scene is the demo room (pyrender depth PNGs and mesh) with its boxes moved into an
"aligned world": A = Rz(25 deg) + (1.5, -2, 0.1) maps the pose world to it and the
scene records boxes_to_world = inverse(A), as a ScanNet import does with axisAlignment.
"""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from click.testing import CliRunner

from vistest.audit.scene import CheckParams, audit_scene, hypotheses, load_alignments
from vistest.cli import main
from vistest.geometry import rot_z
from vistest.scene import Scene, SceneObject
from conftest import scene_copy

A = np.eye(4)
A[:3, :3], A[:3, 3] = rot_z(25.0), [1.5, -2.0, 0.1]
# fewer samples than the defaults (the verdicts hold, ~4x faster)
FAST = CheckParams(max_frames=12, grid=64, mesh_samples=60_000, colour_points=30_000)
ALIGN = [("axisAlignment", A)]


def aligned(scene: Scene) -> Scene:
    """``scene`` with its boxes moved by A into an aligned world, boxes_to_world = inverse(A): the
    same frames, poses and pixels, the boxes given as a ScanNet import gives them."""
    objs = tuple(SceneObject(o.id, o.label, A[:3, :3] @ o.center + A[:3, 3], o.size, A[:3, :3] @ o.rotation)
                 for o in scene.objects)
    return replace(scene, objects=objs, boxes_to_world=np.linalg.inv(A))


@pytest.fixture(scope="module")
def good(tmp_path_factory, demo_tiny) -> Scene:
    """The session's 40-frame 160x120 demo (a copy: the CLI test saves scene documents beside it)."""
    return aligned(Scene.load(scene_copy(demo_tiny, tmp_path_factory.mktemp("audit"))))


def skipped(s: Scene) -> Scene:
    return replace(s, boxes_to_world=np.eye(4))


def transposed(s: Scene) -> Scene:
    return replace(s, objects=tuple(replace(o, rotation=o.rotation.T.copy()) for o in s.objects))


def inverted(s: Scene) -> Scene:
    return replace(s, frames=tuple(replace(f, camera_to_world=np.linalg.inv(f.camera_to_world)) for f in s.frames))


def test_consistent_scene_passes(good):
    r = audit_scene(good, alignments=ALIGN, params=FAST)
    assert r.passed, r.text()
    assert r.best == "as given" and r.failures == ()
    assert r.as_is.surface_dist < 0.05 and r.as_is.contradicted_share < 0.05 and r.as_is.far_share == 0.0
    assert set(r.evidence) == {"depth", "mesh", "colour"}
    for f in r.fits[1:]:  # every convention change fits worse
        assert f.score > r.as_is.score


@pytest.mark.parametrize("broken, fix", [
    (skipped, "inverse(axisAlignment) as boxes_to_world"),
    (transposed, "rotation transposed"),
    pytest.param(inverted, "pose inverted", marks=pytest.mark.slow),  # the colour test names it in the fast tier
])
def test_convention_error_fails_and_names_the_fix(good, broken, fix):
    r = audit_scene(broken(good), alignments=ALIGN, params=FAST)
    assert not r.passed
    assert r.best == fix, r.text()
    assert f"better with the fix '{fix}'" in r.message
    best = r.fit(fix)
    assert best.score * 2 <= r.as_is.score
    assert best.surface_dist < 0.05 and best.contradicted_share < 0.05


def test_skipped_alignment_with_mesh_only(good):
    r = audit_scene(skipped(good), alignments=ALIGN, use_depth=False, use_colour=False, params=FAST)
    assert r.evidence == ("mesh",) and not r.passed
    assert r.best == "inverse(axisAlignment) as boxes_to_world"
    assert not any(h.pose for h in hypotheses(good, poses=False))  # a mesh cannot judge poses


def test_skipped_alignment_without_candidates_still_fails(good):
    r = audit_scene(skipped(good), params=FAST)
    assert not r.passed and "--alignment" in r.message


def test_cli_audit_exit_status_and_json(good, tmp_path):
    align = tmp_path / "align.json"
    align.write_text(json.dumps(A.tolist()))
    assert load_alignments(align)[0][0] == "align"
    runner = CliRunner()
    for name, scene, code in (("good", good, 0), ("skipped", skipped(good), 1)):
        path = good.root / f"scene_{name}.json"
        scene.save(path)
        report = tmp_path / f"{name}.json"
        res = runner.invoke(main, ["audit", str(path), "--alignment", str(align), "--max-frames", "10",
                                   "--evidence", "depth", "--json", str(report), "--quiet"])
        assert res.exit_code == code, res.output
        doc = json.loads(report.read_text())
        assert doc["passed"] is (code == 0)
        if code:
            assert doc["best"] == "inverse(align) as boxes_to_world"
    res = runner.invoke(main, ["audit", str(tmp_path / "missing.json")])
    assert res.exit_code == 2 and "cannot read scene file" in res.output


# ---- colour evidence: the mesh's colours against the video, no depth frames ----------------
def no_depth(s: Scene) -> Scene:
    return replace(s, frames=tuple(replace(f, depth=None) for f in s.frames), depth=None)


def opengl(s: Scene) -> Scene:
    return replace(s, frames=tuple(replace(f, camera_to_world=f.camera_to_world @ np.diag([1.0, -1, -1, 1]))
                                   for f in s.frames))


def double_resolution_intrinsics(s: Scene) -> Scene:
    return replace(s, camera=s.camera.scaled(2.0, 2.0))  # K of the 320x240 render given for 160x120 frames


def test_colour_evidence_passes_the_consistent_scene_without_depth(good):
    r = audit_scene(no_depth(good), alignments=ALIGN, params=FAST)
    assert r.evidence == ("mesh", "colour")
    assert r.passed and r.best == "as given", r.text()
    assert r.as_is.colour > 0.6 and len(r.as_is.colour_frames) == r.frames_audited
    for f in r.fits:
        if f.name in ("pose inverted", "OpenGL camera axes") or f.name.startswith("intrinsics for"):
            assert f.colour < r.as_is.colour - 0.3, r.text()
    assert "colour" in r.text() and r.to_dict()["fits"][0]["colour"] == pytest.approx(r.as_is.colour, abs=1e-6)


@pytest.mark.parametrize("broken, fix", [
    (opengl, "OpenGL camera axes"),
    (inverted, "pose inverted"),
    (double_resolution_intrinsics, "intrinsics for 320x240"),
])
def test_colour_evidence_names_the_pose_and_intrinsics_fix_without_depth(good, broken, fix):
    r = audit_scene(broken(no_depth(good)), alignments=ALIGN, params=FAST)
    assert r.evidence == ("mesh", "colour") and not r.passed
    assert r.best == fix, r.text()
    assert f"better with the fix '{fix}'" in r.message and "rank correlation" in r.message
    assert r.fit(fix).colour > 0.6 and r.as_is.colour < 0.25


def test_colour_consistency_is_rank_based_and_pose_sensitive():
    """A coloured plane seen head-on; the image is the plane's own colours per cell (the
    reference), then gamma- and gain-distorted (exposure): still 1; a shifted pose: not."""
    from vistest.audit.scene import colour_consistency
    from vistest.scene import Intrinsics

    rng = np.random.default_rng(0)
    k = Intrinsics(100.0, 100.0, 79.5, 59.5)
    cw, ch = 32, 24
    # one colour per cell: cell (i, j) covers pixels [5j, 5j+5) x [5i, 5i+5) of a 160x120 image
    cells = rng.uniform(0, 255, (ch, cw, 3))
    jj, ii = np.meshgrid(np.arange(cw * 5), np.arange(ch * 5))
    u, v = jj.ravel() + 0.0, ii.ravel() + 0.0
    z = 2.0
    pts = np.stack([(u - k.cx) / k.fx * z, (v - k.cy) / k.fy * z, np.full(u.shape, z)], -1)
    cols = cells[(v // 5).astype(int), (u // 5).astype(int)]
    eye = np.eye(4)
    rho, cover = colour_consistency(pts, cols, cells, eye, k, (160, 120))
    assert rho == pytest.approx(1.0, abs=1e-9) and cover == 1.0
    exposed = 255 * (cells / 255) ** 0.6 * 0.7
    assert colour_consistency(pts, cols, exposed, eye, k, (160, 120))[0] == pytest.approx(1.0, abs=1e-9)
    moved = eye.copy()
    moved[0, 3] = 0.35  # 17.5 px: every cell sees its neighbour's colours
    assert abs(colour_consistency(pts, cols, cells, moved, k, (160, 120))[0]) < 0.2
    behind = eye.copy()
    behind[:3, :3] = np.diag([1.0, -1.0, -1.0])  # OpenGL axes: the plane is behind the camera
    assert colour_consistency(pts, cols, cells, behind, k, (160, 120)) == (0.0, 0.0)
