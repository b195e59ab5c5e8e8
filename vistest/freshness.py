"""Freshness: every rules version of vistest, and the one stamp that says what a stored output was made under.

A *rule set* is the code behind one kind of output; its version (:data:`VERSIONS`) is bumped by hand with
any change to that code that can change what the output holds (the comment beside each says which modules
it covers). A *stamp* is ``{rule set: version}`` for the rule sets an output depends on (:data:`DEPENDS`);
stored beside or inside the output (:func:`write`, or a field its own record keeps), it makes the output
stale as soon as one of those versions moves (:func:`current`, :func:`changes`). Nothing here looks at
modification times, and the package's own ``__version__`` is in no stamp: a release that changes no rule
would otherwise redo every output, and one that changes a rule without a bump would redo nothing
(docs/faults.md, "Rules versions: one freshness rule across upgrades").

Who keeps which stamp (each checks it when it would reuse the output):

* the visibility table (``params["rules"]``: vistest.visibility.table.Visibility.load refuses a stale one;
  ``vistest run`` and ``vistest synth --grid`` compute it again);
* the scene record of a run folder (``options["rules"]``: vistest.videos.manifest.check_scene names each rule
  set that moved; ``vistest run`` redoes the scene, ``--if-stale``, ``batch`` and ``make variants`` too);
* every budget or dummy video's content key (the ``videos`` version is the key's format number:
  vistest.videos.recipes.content_key), so a plain ``run`` after a bump writes the videos again;
* the frame video of an import (``frames_video`` in its key: vistest.datasets.framevideo);
* the demo scenes' and the synth renders' stamp files (vistest.synth.demo, vistest.synth.render);
* exports: the scene records they read must be current (vistest.eval.exporters.rundir.load_run);
* ``vistest generate``'s report (``report.json``: ``rules_versions``, provenance: generate writes afresh).
"""
from __future__ import annotations

import json
import os
from typing import Any, Mapping

from .atomic import write_atomic

VERSIONS: dict[str, int] = {
    # frames x objects tables: vistest/visibility/ (table, raster, zbuffer, render, tracks2d). 2 = containment,
    # entry depth; 3 = mesh z-buffered by vistest (not pyrender), ``visible`` = instance share with mesh_objects,
    # ``evidence`` array; 4 = a 2D scene's interpolated evidence box grown by the neighbours' drift (issue #44)
    "visibility": 4,
    # budget ground truth: vistest/budget/ (truth, rules/, seen, dummy, windows, sampling, evaluators), questions.py:
    # anything that can change a written row. 4: a count with a time window or an instant counts inside its time
    # span (issue #44)
    "ground_truth": 4,
    # what a budget or dummy video holds: vistest/videos/ (plan, recipes, evidence, takes, write): frames chosen,
    # what a dummy removes, how evidence is filled, encoder settings. Also the content keys' format number
    # (vistest.videos.recipes.content_key: "vistest.variant/1" before the two were one)
    "videos": 1,
    # a synth spec's layout and looks for the same seed: vistest/synth/layout.py (was LAYOUT_VERSION there)
    "synth_layout": 4,
    # how the same layout renders: vistest/synth/render.py, shapes.py, shaders/ (2: shapes, closed outward parts;
    # was RENDER_VERSION there; 3: vistest's lit program in place of pyrender's, a few edge pixels differ)
    "synth_render": 3,
    # the demo scenes' geometry, walk and rendering: vistest/synth/demo.py, demo_dynamic.py
    "demo": 1,
    # the video an import encodes from a scan's frames: vistest/datasets/framevideo.py
    "frames_video": 1,
    # the questions vistest generate writes: vistest/generate/
    "generate": 1,
}

DEPENDS: dict[str, tuple[str, ...]] = {
    "visibility table": ("visibility",),
    "scene record": ("visibility", "ground_truth", "videos"),
    "video key": ("videos",),
    "frames video": ("frames_video",),
    "demo scene": ("demo",),
    "synth render": ("synth_layout", "synth_render"),
    "export": ("visibility", "ground_truth", "videos"),
    "generate report": ("generate",),
}
"""Each stored output -> the rule sets its stamp holds (module docstring)."""


def version(name: str) -> int:
    """The current version of rule set ``name`` (read when called, so a test can move it)."""
    try:
        return VERSIONS[name]
    except KeyError:
        raise KeyError(f"no rule set {name!r}; known: {', '.join(VERSIONS)}") from None


def stamp(output: str) -> dict[str, int]:
    """The stamp of output kind ``output`` (a key of :data:`DEPENDS`): ``{rule set: current version}``."""
    return {name: version(name) for name in DEPENDS[output]}


def changes(recorded: Any, output: str, now: Mapping[str, int] | None = None) -> list[str]:
    """One line per rule set of ``output``'s stamp whose recorded version (``recorded``: the stamp an
    output kept; None or not a mapping: kept none, written before vistest kept them) is not the current
    one (``now``: the stamp to compare with, default :func:`stamp` of ``output``); empty: current."""
    now = stamp(output) if now is None else now
    if not isinstance(recorded, Mapping):
        return [f"rules changed: no rules versions recorded (written by an older vistest); now "
                f"{', '.join(f'{k} {v}' for k, v in now.items())}"]
    return [f"rules changed: {k.replace('_', ' ')} rules version {recorded.get(k, 'none')} -> {v} (outputs made "
            f"under the old rules)" for k, v in now.items() if recorded.get(k) != v]


def write(path: str | os.PathLike, output: str, params: Mapping[str, Any]) -> None:
    """Write a stamp file atomically: ``params`` (what else the output was made from, JSON) with
    ``"rules"``: ``output``'s stamp; one line of sorted JSON."""
    write_atomic(path, json.dumps({**params, "rules": stamp(output)}, sort_keys=True) + "\n")


def current(path: str | os.PathLike, output: str, params: Mapping[str, Any]) -> bool:
    """True when ``path`` is the stamp :func:`write` would write now for ``output`` and ``params``
    (missing or unreadable: False)."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc == {**params, "rules": stamp(output)}

