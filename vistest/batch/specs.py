"""Which scenes a batch runs: a folder of scene folders, or a list file of (scene, questions) pairs.

``vistest batch SCENES``, where SCENES is

* a **folder of scene folders**: every ``SCENES/*/`` holding ``scene.json`` is a scene, with
  its questions in ``questions.jsonl`` beside it (the layout ``make variants`` reads); a folder
  that itself holds ``scene.json`` is one scene;
* a **list file**: one scene per line, blank lines and ``#`` comments ignored; a line is either
  ``SCENE_JSON QUESTIONS_JSONL`` (whitespace-separated; a tab when a path holds spaces), a
  ``SCENE_DIR`` alone (its ``scene.json`` and ``questions.jsonl``), or a JSON object
  ``{"scene": SCENE_JSON, "questions": QUESTIONS_JSONL}``. Relative paths are relative to the
  list file's folder.

A missing ``questions.jsonl`` is not an error here: that scene fails (stage ``questions``,
``failed.jsonl``) and the others run. The scene id, which names every output of the scene,
is read from ``scene.json`` by :func:`read_scene_id` before anything runs.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..jsonl import parse_json, read_text
from ..videos.plan import check_scene_id

SCENE_FILE = "scene.json"
QUESTIONS_FILE = "questions.jsonl"


@dataclass(frozen=True)
class SceneSpec:
    """One scene of a batch: ``scene_json`` and ``questions`` (absolute paths) and ``name``, how
    messages and the summary name it before its scene id is known (its folder's name)."""

    name: str
    scene_json: Path
    questions: Path


def _spec(scene_json: Path, questions: Path) -> SceneSpec:
    scene_json, questions = Path(os.path.abspath(scene_json)), Path(os.path.abspath(questions))
    return SceneSpec(scene_json.parent.name, scene_json, questions)


def from_folder(folder: str | os.PathLike) -> list[SceneSpec]:
    """Every scene folder in ``folder`` (sorted by name), or ``folder`` itself when it holds
    ``scene.json``. InputError when there is none."""
    folder = Path(folder)
    if (folder / SCENE_FILE).is_file():
        return [_spec(folder / SCENE_FILE, folder / QUESTIONS_FILE)]
    specs = [_spec(d / SCENE_FILE, d / QUESTIONS_FILE) for d in sorted(folder.iterdir())
             if d.is_dir() and not d.name.startswith(".") and (d / SCENE_FILE).is_file()]
    if not specs:
        raise InputError(f"{folder}: no scene folders; expected folders each holding {SCENE_FILE} and "
                         f"{QUESTIONS_FILE}, or a list file of scenes (docs/batch.md)")
    return specs


def from_list(path: str | os.PathLike) -> list[SceneSpec]:
    """The scenes of a list file (see the module docstring). InputError naming the file and
    line for a line that is none of the three forms, or when there is no scene."""
    path = Path(path)
    base = path.parent
    text = read_text(path, InputError, "list of scenes")
    specs = []
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("{"):
            doc = parse_json(line, str(path), InputError, f":{n}")
            if not isinstance(doc, dict) or "scene" not in doc or "questions" not in doc:
                raise InputError(f"{path}:{n}: expected a JSON object with 'scene' and 'questions' paths")
            fields = [doc["scene"], doc["questions"]]
            if not all(isinstance(f, str) for f in fields):
                raise InputError(f"{path}:{n}: 'scene' and 'questions' must be paths (strings)")
        else:
            fields = line.split("\t") if "\t" in line else line.split()
            fields = [f.strip() for f in fields if f.strip()]
        if len(fields) == 1:
            d = base / fields[0]
            specs.append(_spec(d / SCENE_FILE, d / QUESTIONS_FILE))
        elif len(fields) == 2:
            specs.append(_spec(base / fields[0], base / fields[1]))
        else:
            raise InputError(f"{path}:{n}: expected 'SCENE_JSON QUESTIONS_JSONL', 'SCENE_DIR' or a JSON object, "
                             f"got {len(fields)} fields")
    if not specs:
        raise InputError(f"{path}: lists no scene")
    return specs


def discover(source: str | os.PathLike) -> list[SceneSpec]:
    """The scenes of ``source``: a folder (:func:`from_folder`) or a list file (:func:`from_list`)."""
    source = Path(source)
    if source.is_dir():
        return from_folder(source)
    if source.is_file():
        return from_list(source)
    raise InputError(f"{source}: not found; expected a folder of scene folders or a list file of scenes")


def read_scene_id(spec: SceneSpec) -> str:
    """The ``scene_id`` of ``spec``'s scene.json (JSON read, the id checked to name files; the
    rest is validated by the task). InputError naming the file and field."""
    path = spec.scene_json
    doc = parse_json(read_text(path, InputError, "scene file"), str(path), InputError)
    if not isinstance(doc, dict) or not isinstance(doc.get("scene_id"), str):
        raise InputError(f"{path}: scene_id: expected a string (docs/scene-format.md)")
    return check_scene_id(doc["scene_id"], str(path))
