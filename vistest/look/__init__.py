"""Looking at the ground truth: pictures a person checks by eye (docs/looking.md).

* :mod:`.overlay`: the scene's video with every box drawn (``vistest overlay``);
* :mod:`.timeline`: frames x objects coverage, budget selections, dummy removals (``vistest timeline``);
* :mod:`.sheets`: a contact sheet per written video, checked against the manifest (``vistest sheet``);
* :mod:`.index`: the run folder's ``index.html`` (``vistest index``);
* :mod:`.tiles`: tiles on a grid (contact sheets) and their PNG bytes, OpenCV only (no Numba: ``run``'s pictures).

The defaults the command line shows are defined here, so that reading them needs no Numba.
"""
OVERLAY_SHEET_FRAMES = 16  # frames of an overlay --png sheet when --frames is not given
OVERLAY_COLUMNS = 4  # tiles per row of an overlay --png sheet
OVERLAY_TILE_WIDTH = 320  # pixels
SHEET_MAX_FRAMES = 48  # frames shown per video by vistest sheet (longer videos: spread uniformly)
SHEET_COLUMNS = 8
SHEET_TILE_WIDTH = 160  # pixels
