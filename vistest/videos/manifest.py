"""``RUN_DIR/manifest.jsonl``: read it, update one scene's (or many scenes') lines, prune stale dummies.

The manifest lists every video of every scene of a run folder (vistest.layout), one JSON
object per line, sorted by (``scene_id``, ``path``); its fields are in docs/videos.md. It is
rewritten under an exclusive lock (``.manifest.lock``) keeping the lines of other scenes
byte for byte, so scenes can be written in parallel into one folder. ``vistest run``
removes a scene's lines when its run starts and writes them back when it ends: an
interrupted run leaves no manifest line for a video it may have changed.
"""
from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from .. import layout
from ..atomic import write_atomic
from ..errors import InputError
from ..jsonl import iter_jsonl
from .plan import VariantPlan

REQUIRED = ("scene_id", "path", "variant", "source_frames", "num_frames", "size")


def read_manifest(run_dir: str | os.PathLike) -> list[dict]:
    """The records of ``RUN_DIR/manifest.jsonl`` (docs/videos.md); InputError naming file, line and field."""
    path = layout.manifest_path(run_dir)
    if not path.is_file():
        raise InputError(f"{path}: not found; expected the manifest 'vistest run' writes into its output folder")
    out = []
    for n, rec in iter_jsonl(path.read_text(encoding="utf-8").splitlines(), str(path)):
        for key in REQUIRED:
            if key not in rec:
                raise InputError(f"{path}:{n}: {key}: missing (a manifest line of docs/videos.md)")
        out.append(rec)
    return out


def update_manifest(outdir: str | os.PathLike, scene_id: str, records: Sequence[Mapping[str, Any]]) -> Path:
    """Replace ``scene_id``'s lines of ``OUTDIR/manifest.jsonl`` by ``records`` (none: remove
    them): :func:`replace_scenes` for one scene."""
    return replace_scenes(outdir, {scene_id: records})


def replace_scenes(outdir: str | os.PathLike, scenes: Mapping[str, Sequence[Mapping[str, Any]]]) -> Path:
    """Replace the lines of every scene id in ``scenes`` by its records (none: remove them),
    in one rewrite under an exclusive lock, keeping other scenes' lines byte for byte; lines
    are sorted by (scene_id, path) and the file is replaced atomically."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    path = layout.manifest_path(outdir)
    with open(outdir / layout.MANIFEST_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        rows: list[tuple[str, str, str]] = []
        if path.is_file():
            for n, line in enumerate(path.read_text().splitlines(), start=1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                    sid, p = str(rec["scene_id"]), str(rec["path"])
                except (json.JSONDecodeError, KeyError, TypeError):
                    raise InputError(f"{path}:{n}: not a manifest line (a JSON object with scene_id and path); "
                                     f"fix or delete the file") from None
                if sid not in scenes:
                    rows.append((sid, p, line))
        for scene_id, records in scenes.items():
            rows += [(scene_id, str(r["path"]), json.dumps(r, ensure_ascii=False)) for r in records]
        rows.sort(key=lambda r: (r[0], r[1]))
        write_atomic(path, "".join(r[2] + "\n" for r in rows))
    return path


def prune_dummies(outdir: str | os.PathLike, plan: VariantPlan) -> list[Path]:
    """Delete this scene's content-addressed dummy files that the plan no longer lists."""
    outdir = Path(outdir)
    keep = {outdir / v.path for v in plan.variants}
    gone = []
    for d in layout.dummy_scene_dirs(outdir, plan.scene_id):
        for p in d.iterdir():
            if layout.is_dummy_file(p.name) and p not in keep:
                p.unlink()
                gone.append(p)
    return gone
