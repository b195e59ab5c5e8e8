"""Audits of what came in (``vistest audit``; docs/audit.md):

* :mod:`.scene`: a scene's boxes, poses and intrinsics checked against its depth frames and mesh, and
  which frame-convention fix fits best;
* :mod:`.answers`: a question file's answers recomputed from the scene (static answers with the
  generator's geometry; 3D answers back-projected at their instant).
"""
