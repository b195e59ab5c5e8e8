"""Where the reference material lies (``shared/reference``: VSI-Bench's meta info, lmms-eval's revsi task files).

It is not part of the repository (not ours to commit whole). Looked for, in order: ``$VISTEST_REFERENCE``; a
``shared/reference`` folder beside the checkout or beside any folder above it (a clone anywhere under the
workplace); ``/work/shared/reference`` (this workplace's, for a clean clone made elsewhere, as CI's). Tests that
need it skip with a reason naming ``VISTEST_REFERENCE`` when none is found.
"""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def reference_dir() -> Path:
    """The first existing candidate of the module docstring (or the first candidate, missing, when none is)."""
    env = os.environ.get("VISTEST_REFERENCE")
    candidates = ([Path(env)] if env else []) + [p / "shared" / "reference" for p in ROOT.parents] \
        + [Path("/work/shared/reference")]
    return next((p for p in candidates if p.is_dir()), candidates[0])


REFERENCE = reference_dir()
META_INFO = REFERENCE / "vsibench-meta-info"
MISSING = f"{META_INFO} not here (set VISTEST_REFERENCE to a shared/reference folder)"
