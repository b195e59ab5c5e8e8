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

from vistest.datasets.audit import CheckParams, audit_scene, hypotheses, load_alignments
from vistest.cli import main
from vistest.datasets.demo import rot_z
from vistest.scene import Scene, SceneObject
from conftest import scene_copy

A = np.eye(4)
A[:3, :3], A[:3, 3] = rot_z(25.0), [1.5, -2.0, 0.1]
FAST = CheckParams(max_frames=20)
ALIGN = [("axisAlignment", A)]


@pytest.fixture(scope="module")
def good(tmp_path_factory, demo_tiny) -> Scene:
    """The session's 40-frame 160x120 demo (a copy: the CLI test saves scene documents beside it)."""
    demo = Scene.load(scene_copy(demo_tiny, tmp_path_factory.mktemp("audit")))
    objs = tuple(SceneObject(o.id, o.label, A[:3, :3] @ o.center + A[:3, 3], o.size, A[:3, :3] @ o.rotation)
                 for o in demo.objects)
    return replace(demo, objects=objs, boxes_to_world=np.linalg.inv(A))


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
    assert set(r.evidence) == {"depth", "mesh"}
    for f in r.fits[1:]:  # every convention change fits worse
        assert f.score > r.as_is.score


@pytest.mark.parametrize("broken, fix", [
    (skipped, "inverse(axisAlignment) as boxes_to_world"),
    (transposed, "rotation transposed"),
    (inverted, "pose inverted"),
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
    r = audit_scene(skipped(good), alignments=ALIGN, use_depth=False, params=FAST)
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
                                   "--json", str(report), "--quiet"])
        assert res.exit_code == code, res.output
        doc = json.loads(report.read_text())
        assert doc["passed"] is (code == 0)
        if code:
            assert doc["best"] == "inverse(align) as boxes_to_world"
    res = runner.invoke(main, ["audit", str(tmp_path / "missing.json")])
    assert res.exit_code == 2 and "cannot read scene file" in res.output
