"""Controlled scenarios with exact ground truth: VGenST's 3x2x2 taxonomy (scale x perspective x
dynamics) rendered by vistest (docs/synth.md).

* :mod:`.spec`: the scenario spec (format ``vistest.synth/1``), validated;
* :mod:`.layout`: the spec's geometry and looks drawn from its seed (ground, objects, movers, camera);
* :mod:`.render`: the layout rendered into a scene folder (video.mp4, scene.json, mesh);
* :mod:`.grid`: N scenarios over the 12 cells, their questions, the batch, the per-cell report.
"""
from .spec import CELLS, ScenarioSpec, SpecError, load_spec, spec_from_dict

__all__ = ["CELLS", "ScenarioSpec", "SpecError", "load_spec", "spec_from_dict"]
