"""Is a scene of a batch done? Its *fragment*, and the one rule that trusts it (:func:`complete`).

When a batch task has written every output of a scene it writes, last and atomically, the
scene's fragment ``RUN_DIR/.vistest/scenes/{scene_id}.json`` (vistest.layout.fragment_path):

* ``scene_json``, ``questions``: the paths the scene was run from;
* ``options``: the key of the options that decide its outputs (``TaskOptions.key``);
* ``inputs``: each input file (scene.json, questions, source video, a given visibility table)
  with its size, modification time (ns) and sha256, taken before the task read it;
* ``evidence``: the mesh or depth images the scene's occlusion read, as one record
  (vistest.atomic.files_record; null when none: boxes occlusion, or a given table);
* ``outputs``: each output (videos, visibility, budget and dummy ground truth; paths relative
  to RUN_DIR) with its size;
* ``manifest``: the scene's manifest lines, which the batch merges into ``manifest.jsonl``.

A task removes the fragment before it writes anything, so an interrupted or failed scene has
none: nothing it left is trusted. :func:`complete` is the only place that decides whether a
rerun may skip a scene (vistest.batch.run calls nothing else); outputs of ``vistest run``
(which writes no fragment) are never skipped by a batch, but their videos are kept when their
content keys match (vistest.videos.write).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from .. import layout
from ..atomic import check_files, write_atomic
from ..videos.plan import file_key
from .specs import SceneSpec

FORMAT = "vistest-batch-scene/1"


@dataclass(frozen=True)
class InputKey:
    """An input file as a task read it: absolute ``path``, ``size`` (bytes), ``mtime_ns`` and
    ``sha256`` (its content key, vistest.videos.plan.file_key)."""

    path: str
    size: int
    mtime_ns: int
    sha256: str

    @classmethod
    def of(cls, path: str | os.PathLike) -> "InputKey":
        """Key ``path`` now (stat, then hash)."""
        path = os.path.abspath(path)
        st = os.stat(path)
        return cls(path, st.st_size, st.st_mtime_ns, file_key(path))

    def unchanged(self) -> bool:
        """Whether the file still has this content: same size, and the same modification time
        or (when only that differs: touched, copied back) the same sha256. A missing file has
        changed. The time is a shortcut only, as in make and git: an edit keeping both the size
        and the nanosecond modification time is not seen."""
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        if st.st_size != self.size:
            return False
        return st.st_mtime_ns == self.mtime_ns or file_key(self.path) == self.sha256


@dataclass(frozen=True)
class Fragment:
    """A finished scene (see the module docstring). ``outputs``: (path relative to RUN_DIR, size)."""

    scene_id: str
    scene_json: str
    questions: str
    options: str
    inputs: tuple[InputKey, ...]
    outputs: tuple[tuple[str, int], ...]
    manifest: tuple[Mapping[str, Any], ...]
    evidence: Mapping[str, Any] | None = None

    def to_json(self) -> str:
        """The fragment file's text: one JSON object, keys sorted (the same scene, inputs and
        options give the same bytes)."""
        doc = {"format": FORMAT, "scene_id": self.scene_id, "scene_json": self.scene_json,
               "questions": self.questions, "options": self.options,
               "inputs": [vars(k) for k in self.inputs],
               "outputs": [{"path": p, "size": s} for p, s in self.outputs],
               "manifest": [dict(r) for r in self.manifest],
               "evidence": None if self.evidence is None else dict(self.evidence)}
        return json.dumps(doc, ensure_ascii=False, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> "Fragment":
        """Parse :meth:`to_json`'s text; ValueError (KeyError, TypeError) when it is not one."""
        doc = json.loads(text)
        if doc.get("format") != FORMAT:
            raise ValueError(f"format: expected {FORMAT}")
        return cls(str(doc["scene_id"]), str(doc["scene_json"]), str(doc["questions"]), str(doc["options"]),
                   tuple(InputKey(str(k["path"]), int(k["size"]), int(k["mtime_ns"]), str(k["sha256"]))
                         for k in doc["inputs"]),
                   tuple((str(o["path"]), int(o["size"])) for o in doc["outputs"]),
                   tuple(doc["manifest"]), doc["evidence"])


def outputs_of(run_dir: str | os.PathLike, paths: Sequence[str | os.PathLike]) -> tuple[tuple[str, int], ...]:
    """(path relative to ``run_dir``, '/'-separated; size) of each output file, sorted."""
    run_dir = Path(run_dir)
    out = {Path(os.path.relpath(Path(p), run_dir)).as_posix(): Path(p).stat().st_size for p in paths}
    return tuple(sorted(out.items()))


def write_fragment(run_dir: str | os.PathLike, fragment: Fragment) -> Path:
    """Write the scene's fragment atomically (the last thing a task writes); returns its path."""
    path = layout.fragment_path(run_dir, fragment.scene_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, fragment.to_json())
    return path


def read_fragment(run_dir: str | os.PathLike, scene_id: str) -> Fragment | None:
    """The scene's fragment, or None when there is none or it cannot be read (then the scene
    runs again and replaces it)."""
    path = layout.fragment_path(run_dir, scene_id)
    try:
        return Fragment.from_json(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        return None


def remove_fragment(run_dir: str | os.PathLike, scene_id: str) -> None:
    """Forget that the scene was finished (a task does this before it writes anything)."""
    layout.fragment_path(run_dir, scene_id).unlink(missing_ok=True)


def complete(run_dir: str | os.PathLike, spec: SceneSpec, scene_id: str, options_key: str) -> Fragment | None:
    """The scene's fragment when a rerun may skip the scene, else None. The rule, whole:

    * a fragment exists (a task finished the scene and wrote it last);
    * it was run from the same scene.json and questions paths with the same output options;
    * every input is unchanged (:meth:`InputKey.unchanged`: content keys), and so are the
      mesh or depth images its occlusion read (vistest.atomic.check_files: one ``stat`` per
      file; their content digest when a size or time changed);
    * every output it lists exists with the size it had.
    """
    run_dir = Path(run_dir)
    frag = read_fragment(run_dir, scene_id)
    if frag is None or frag.scene_id != scene_id or frag.options != options_key:
        return None
    if frag.scene_json != str(spec.scene_json) or frag.questions != str(spec.questions):
        return None
    if not all(k.unchanged() for k in frag.inputs):
        return None
    if frag.evidence is not None and check_files(frag.evidence) is not None:
        return None
    for rel, size in frag.outputs:
        try:
            if (run_dir / rel).stat().st_size != size:
                return None
        except OSError:
            return None
    return frag
