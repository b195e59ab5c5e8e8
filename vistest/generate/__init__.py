"""Generate the benchmark: VSI-Bench / ReVSI question templates from scene ground truth,
debiased over a set of scenes and checked against the frames a model sees (docs/generate.md).

Module map:

* ``rules``: every rule as a named, documented parameter with the source of its default;
* ``templates``: the wording (ReVSI's, "the scene"; VSI-Bench's, "this room", for ``--types vsibench``);
* ``geometry``: exact closest-point distances of boxes, footprints, floor-plane angles;
* ``facts``: what a scene offers (boxes, first appearances from the visibility table, room area);
* ``candidates``: the ``Candidate`` type, question records, seeded generators;
* one module per family: ``counting``, ``size``, ``distance`` (absolute, relative),
  ``direction``, ``appearance``, ``room``, ``route`` (route planning on a floor grid), ``motion``
  (the dynamic types: tracked objects over time windows);
* ``balance``: the debiasing pass over the whole set (answer caps, blind pruning, options);
* ``blind``: vistest's blind baselines (vistest.eval) on generated questions, against chance;
* ``report``: distributions, targets, baselines, answerability per budget;
* ``run``: ``generate()`` (the whole command) and writing the outputs.
"""
from .candidates import ALL_TYPES, DEFAULT_TYPES, GENERATED_TYPES, VSIBENCH_TYPES
from .rules import Rules
from .run import Generated, SceneInput, generate, parse_types, write_questions

__all__ = ["ALL_TYPES", "DEFAULT_TYPES", "GENERATED_TYPES", "VSIBENCH_TYPES", "Generated", "Rules", "SceneInput",
           "generate", "parse_types", "write_questions"]
