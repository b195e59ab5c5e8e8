"""The summary on top of a run folder's ``index.html``: what a person reads in ten seconds.

Read from the run folder only (nothing is recomputed), per scene and totalled:

* **per budget**: how many questions the budget's frames keep (``kept``: the all-frame answer
  stands), change (``changed``: another answer) or leave ``unanswerable``, from the ``status``
  of ``scenes/{scene_id}/{n}_frame.jsonl`` (vistest.budget.truth.STATUSES);
* **per dummy mode**: the dummy rows that have a video (``scenes/{scene_id}/dummy_gt.jsonl``,
  ``video`` not null; rows whose dummy has no frame left are counted apart: exports leave them out
  as ``no_video``, so no model sees them) and, when ``vistest score`` wrote a report under the scene
  folder (``*/report.json``), the scored model's hallucination rate on that mode's dummies:
  hallucinated / rows, pooled over budgets and types, over the rows that have a video (from the
  ``rows.jsonl`` beside the report; without it, the report's ``hallucination`` cells of variant
  ``dummy-{mode}``);
* **warnings**, ranked (the page: errors, then what changes answers, then the notes collapsed):
  ``errors``: an audit that fails (a ``vistest audit --json`` report, ``format: vistest.audit/1``,
  named ``audit*.json`` in the scene folder of the run or beside the scene file), a scene with no
  pose at all; ``warnings`` (what changes answers): decoded frames without a camera pose (they
  witness nothing), from the scene's ``visibility.npz`` ``valid`` and ``frame_index`` (a decoded
  frame the table does not list counts as without pose; else from the scene file the run's record
  names); an audit that passes is listed after them; the notes are the videos' sampling notes
  (``manifest.jsonl`` ``warnings``) collapsed to one line per kind of note: notes that differ only
  in numbers and frame lists are one kind, shown once with how many videos have it.

Unreadable inputs are skipped (the page is a view; the commands that wrote them check them).
"""
from __future__ import annotations

import json
import re
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import layout
from ..budgets import budget_sort_key
from ..videos.manifest import read_scene_record

AUDIT_GLOB = "audit*.json"
AUDIT_FORMAT = "vistest.audit/1"
_LIST = re.compile(r"\[[^\]]*\]")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


@dataclass
class SceneSummary:
    """One scene's figures: ``budgets`` {label: Counter(status)}, ``dummies`` {mode: Counter(status)}
    over the dummy rows with a video, ``no_video`` {mode: rows without one}, ``hallucination``
    {mode: (hallucinated, rows)} from ``score_report`` (a path, or None), ``errors`` and
    ``warnings`` (what changes answers) as text, ``audit``."""

    scene_id: str
    budgets: dict[str, Counter] = field(default_factory=dict)
    dummies: dict[str, Counter] = field(default_factory=dict)
    no_video: Counter = field(default_factory=Counter)
    hallucination: dict[str, tuple[int, int]] = field(default_factory=dict)
    score_report: Path | None = None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    audit: tuple[bool, str, Path] | None = None


def jsonl_objects(path: Path) -> list[dict]:
    """The JSON objects of a JSONL file (unreadable lines and files skipped)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    out = []
    for ln in lines:
        try:
            doc = json.loads(ln)
        except ValueError:
            continue
        if isinstance(doc, dict):
            out.append(doc)
    return out


def _json(path: Path) -> dict | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return doc if isinstance(doc, dict) else None


def pose_coverage(run_dir: Path, scene_id: str) -> tuple[int, int] | None:
    """(frames without a pose, decoded frames) of the scene, or None when unknown (module docstring)."""
    npz = layout.scene_dir(run_dir, scene_id) / layout.VISIBILITY
    try:
        with np.load(npz, allow_pickle=False) as z:
            valid, index = np.asarray(z["valid"], bool), np.asarray(z["frame_index"])
        n = int(index.max()) + 1 if index.size else 0
        return n - int(valid.sum()), n
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        pass
    scene = scene_file(run_dir, scene_id)
    doc = _json(scene) if scene else None
    frames = doc.get("frames") if doc else None
    if not isinstance(frames, list) or not frames:
        return None
    try:
        n = max(int(f["index"]) for f in frames) + 1
    except (KeyError, TypeError, ValueError):
        return None
    posed = sum(1 for f in frames if isinstance(f, dict) and f.get("camera_to_world") is not None)
    return n - posed, n


def scene_file(run_dir: Path, scene_id: str) -> Path | None:
    """The scene file the run's record names (None when there is no record)."""
    rec = read_scene_record(run_dir, scene_id) or {}
    path = (rec.get("inputs") or {}).get("scene", {}).get("path")
    return Path(path) if isinstance(path, str) else None


def find_audit(run_dir: Path, scene_id: str) -> tuple[bool, str, Path] | None:
    """(passed, message, file) of the scene's audit report (module docstring), or None."""
    folders = [layout.scene_dir(run_dir, scene_id)]
    scene = scene_file(run_dir, scene_id)
    if scene is not None:
        folders.append(scene.parent)
    for folder in folders:
        for path in sorted(folder.glob(AUDIT_GLOB)) if folder.is_dir() else []:
            doc = _json(path)
            if doc and doc.get("format") == AUDIT_FORMAT and str(doc.get("scene_id", scene_id)) == scene_id:
                return bool(doc.get("passed")), str(doc.get("message", "")), path
    return None


def _row_key(d: dict, budget_field: str) -> tuple[str, str, str]:
    return str(d.get("id")), str(d.get("variant")), str(d.get(budget_field))


def find_score(run_dir: Path, scene_id: str, with_video: set | None = None
               ) -> tuple[dict[str, tuple[int, int]], Path] | None:
    """Hallucination per dummy mode, {mode: (hallucinated, rows)}, from the first ``report.json``
    (sorted by path) under the scene folder with dummy cells; None when there is none. With
    ``with_video`` (the (id, variant, budget) keys of the dummy rows that have a video) and a
    ``rows.jsonl`` beside the report, counted over those rows only."""
    folder = layout.scene_dir(run_dir, scene_id)
    for path in sorted(folder.glob("*/report.json")):
        doc = _json(path)
        cells = doc.get("hallucination") if doc else None
        if not isinstance(cells, list):
            continue
        out: dict[str, list[int]] = {}
        rows = jsonl_objects(path.parent / "rows.jsonl") if with_video is not None else []
        for r in rows:
            variant = str(r.get("variant", ""))
            if variant.startswith("dummy-") and r.get("hallucinated") is not None \
                    and _row_key(r, "budget") in with_video:
                acc = out.setdefault(variant.removeprefix("dummy-"), [0, 0])
                acc[0] += bool(r["hallucinated"])
                acc[1] += 1
        for c in cells if not rows else []:
            variant = str(c.get("variant", "")) if isinstance(c, dict) else ""
            if not variant.startswith("dummy-"):
                continue
            acc = out.setdefault(variant.removeprefix("dummy-"), [0, 0])
            acc[0] += int(c.get("hallucinated") or 0)
            acc[1] += int(c.get("n") or 0)
        if out:
            return {m: (h, n) for m, (h, n) in out.items()}, path
    return None


def scene_summary(run_dir: Path, scene_id: str) -> SceneSummary:
    """Everything :func:`summary_html` shows of one scene."""
    s = SceneSummary(scene_id)
    folder = layout.scene_dir(run_dir, scene_id)
    for path in sorted(folder.glob("*_frame.jsonl")) if folder.is_dir() else []:
        label = layout.budget_of_file(path.name)
        if label is not None:
            s.budgets[label] = Counter(str(d.get("status")) for d in jsonl_objects(path))
    s.budgets = dict(sorted(s.budgets.items(), key=lambda kv: budget_sort_key(kv[0])))
    with_video = set()
    for d in jsonl_objects(folder / layout.DUMMY_GT):
        mode = str(d.get("dummy_mode"))
        if d.get("video") is None:
            s.no_video[mode] += 1
            continue
        s.dummies.setdefault(mode, Counter())[str(d.get("status"))] += 1
        with_video.add(_row_key(d, "num_frames"))
    found = find_score(run_dir, scene_id, with_video)
    if found:
        s.hallucination, s.score_report = found
    cover = pose_coverage(run_dir, scene_id)
    if cover and cover[0]:
        missing, n = cover
        text = (f"{missing} of {n} frames have no pose" + (": no frame has one" if missing == n else "")
                + " (no boxes, no visibility there: no object counts as seen in them; overlays leave them out "
                  "by default)")
        (s.errors if missing == n else s.warnings).append(text)
    s.audit = find_audit(run_dir, scene_id)
    return s


def note_kind(note: str) -> str:
    """A sampling note with its frame lists and numbers blanked: notes of one kind compare equal."""
    return _NUMBER.sub("N", _LIST.sub("[...]", note))


def collapse_notes(recs: list[dict]) -> list[tuple[str, str, int, str]]:
    """One line per kind of video note: (kind, first note, videos with it, first video's path),
    in order of first appearance."""
    kinds: dict[str, list] = {}
    for r in recs:
        seen = set()
        for w in r.get("warnings") or []:
            k = note_kind(str(w))
            if k in seen:
                continue
            seen.add(k)
            if k not in kinds:
                kinds[k] = [str(w), 0, str(r.get("path"))]
            kinds[k][1] += 1
    return [(k, first, n, path) for k, (first, n, path) in kinds.items()]
