"""VSI-Bench, VSI-Bench-Debiased and ReVSI question rows in, vistest question JSONL out, every object
the text names resolved against the imported scenes (docs/adapters.md "VSI-Bench and ReVSI questions").

A VSI-Bench row names no object ids: ``id, dataset, scene_name, question_type, question, options,
ground_truth``. vistest's question format needs ``objects`` (ids) for size, distance, direction and
route questions and ``category`` (labels) for counting and appearance order, so this importer reads
the object names back out of the text with the benchmark's own templates and looks each up among the
labels of the scene the row is about. A name that no object of the scene has, or that several have
where the template means one instance, is refused with the row's id and the scene's labels: it is
never guessed.

Two layouts, each checked column by column:

* ``vsibench-questions``: the rows of the lmms-eval ``vsibench`` and ``vsibench_debiased`` tasks
  (``nyu-visionx/VSI-Bench``, configs ``full`` and ``debiased``: ``test.jsonl`` or the parquet; the task's
  ``utils.py`` reads ``dataset``, ``scene_name``, ``question_type``, ``question``, ``options``,
  ``ground_truth``) with ``id``. Required: ``id``, ``dataset``, ``scene_name``, ``question_type``,
  ``question``, ``ground_truth``; ``options`` for the multiple-choice types.
* ``revsi-questions``: ReVSI's released rows (``3dlg-hcvc/ReVSI``; the lmms-eval ``revsi`` task's
  ``utils.py`` reads ``scene_id``, ``num_frames``, ``question_type``, ``question``, ``options``,
  ``ground_truth``; its ms-swift register reads ``id``). Required: ``id``, ``scene_id``,
  ``question_type``, ``question``, ``ground_truth``. Import one config (``all_frame``): the budget
  configs are subsets of its questions (the budget stage re-derives them), and an id twice stops the import.

Every other column is accepted, and every column of the row is kept verbatim under ``original``.

**Templates** (``vistest.generate.templates``, one wording per type, the same constants the generator
writes): VSI-Bench's own generator is not released (github.com/vision-x-nyu/thinking-in-space, commit
51e089c, holds the evaluation task and the meta info only); its wording is that of its rows and of the
paper's appendix, which VLM-3R's ``vlm_3r_data_process/src/question_templates.py`` reproduces
(``OBJ_REL_DIRECTION_V1/V2/V3_TEMPLATE`` are VSI-Bench's hard, medium and easy directions).
ReVSI's are the constants of its released generator (github.com/3dlg-hcvc/revsi, commit 9299454,
``qa_generation/*.py``: ``OBJ_COUNT_QUESTION_TEMPLATE``, ``OBJ_SIZE_QUESTION_TEMPLATE``,
``OBJ_ABS_DISTANCE_QUESTION_TEMPLATE``, ``OBJ_REL_DISTANCE_QUESTION_TEMPLATE``,
``QUESTION_TEMPLATE_BY_LEVEL``, ``ROOM_SIZE_TEMPLATE_BY_ROOM_TYPE``). Whitespace runs match any
whitespace; the text is otherwise matched exactly.

**What each type resolves to** (the generators' own uniqueness rules):

* counting (``object_counting``, ``object_counting_single``, ``object_counting_multiple``): ``category``,
  the label(s) named; the scene must have the label (VSI-Bench counts categories seen at least twice,
  ReVSI at least once);
* size, absolute distance, relative direction: ``objects``, the one instance of each label named
  (ReVSI ``_is_valid_object``: ``obj_count == 1``; VSI-Bench: "a unique object", "unique categories");
* relative distance: ``objects`` = the anchor's one instance, then every instance of each option's label
  in the options' order. The anchor must be unique (VSI-Bench: "an anchor object that is unique in
  the scene"); an option label may have several instances in a *closest* question (ReVSI's closest
  generator takes ``multi_instance_obj_names``; the distance is to the nearest instance) and must have
  one in a *farthest* question (ReVSI's farthest generator: ``obj_count == 1``). The options'
  labels must be the text's choices;
* appearance order: ``category``, the four labels (the first appearance of any instance);
* route planning: ``objects``, the start, the facing object, the destination, then each "Go forward until
  the {X}" landmark that is not one of them (vistest.generate.route's order), each unique;
* room size: no object (its wording is not checked: nothing is read from it).

``scene_id`` is the imported scene's id: ``--scene-id`` formats it from the row (``{scene_name}``: the
row's scene column, ``scene_name`` or ``scene_id``; ``{dataset}``: its ``dataset``; default
``{scene_name}``, the id ``vistest import`` gives ScanNet, ARKitScenes and ScanNet++ scans). A row whose
scene is not among the scenes given is refused. ``ground_truth`` and ``options`` are kept as given
(the answer audit, ``vistest audit --questions``, recomputes them from the boxes).
"""
from __future__ import annotations

import json
import os
import re
import string
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..generate import templates as T
from ..questions import QUESTION_TYPES, QuestionError, option_letter, parse_question
from ..scene import Scene
from .sti_bench import read_table

VSIBENCH, REVSI = "vsibench-questions", "revsi-questions"
BENCHMARK = {VSIBENCH: "VSI-Bench", REVSI: "ReVSI"}
SCENE_COLUMN = {VSIBENCH: "scene_name", REVSI: "scene_id"}
REQUIRED: dict[str, tuple[str, ...]] = {
    VSIBENCH: ("id", "dataset", "scene_name", "question_type", "question", "ground_truth"),
    REVSI: ("id", "scene_id", "question_type", "question", "ground_truth"),
}
DEFAULT_SCENE_ID = "{scene_name}"
REFUSED_FILE = "refused.jsonl"
MAX_SHOWN = 8  # refused rows named in the error message

# roles: what a placeholder of a template is resolved to
ONE, ANY, LIST_ANY, LIST_ONE, ROUTE = "one instance", "a label", "labels", "one instance each", "route"


@dataclass(frozen=True)
class Template:
    """One question type's wording: ``text`` (placeholders ``{name}``), what it resolves to
    (``target``: ``objects``, ``category`` or ``none``), and per placeholder how it is read
    (``roles``: :data:`ONE` an object id, :data:`ANY` a label, :data:`LIST_ANY` / :data:`LIST_ONE` a
    comma-separated list of labels / of one-instance labels, :data:`ROUTE` the action list)."""

    text: str
    target: str
    roles: dict

    def regex(self) -> re.Pattern:
        """The full-text pattern: placeholders as lazy named groups (a repeated one as a
        back-reference), whitespace runs as ``\\s+``."""
        out, seen = [], set()
        for literal, name, _, _ in string.Formatter().parse(self.text):
            out.append(r"\s+".join(re.escape(part) for part in re.split(r"\s+", literal)))
            if name is not None:
                out.append(f"(?P={name})" if name in seen else f"(?P<{name}>.+?)")
                seen.add(name)
        return re.compile("".join(out), re.S)


def _objects(text: str, **roles: str) -> Template:
    return Template(text, "objects", roles)


_ONE3 = dict(positioning_object=ONE, orienting_object=ONE, querying_object=ONE)
TEMPLATES: dict[str, dict[str, Template]] = {
    VSIBENCH: {
        "object_counting": Template(T.VSIBENCH_COUNT, "category", {"object_name": ANY}),
        "object_size_estimation": _objects(T.VSIBENCH_SIZE, object_name=ONE),
        "object_abs_distance": _objects(T.VSIBENCH_ABS_DISTANCE, object_name_1=ONE, object_name_2=ONE),
        "object_rel_distance": _objects(T.VSIBENCH_REL_DISTANCE, object_name=ONE, choices=LIST_ANY),
        **{t: _objects(text, **_ONE3) for t, text in T.VSIBENCH_REL_DIRECTION.items()},
        "room_size_estimation": Template(T.VSIBENCH_ROOM_SIZE, "none", {}),
        "obj_appearance_order": Template(T.APPEARANCE_ORDER, "category", {"categories": LIST_ANY}),
        "route_planning": _objects(T.ROUTE_PLAN, start_object=ONE, facing_object=ONE, destination_object=ONE,
                                   actions=ROUTE),
    },
    REVSI: {
        "object_counting_single": Template(T.COUNT_SINGLE, "category", {"object_name": ANY}),
        "object_counting_multiple": Template(T.COUNT_MULTIPLE, "category", {"object_name_1": ANY,
                                                                            "object_name_2": ANY}),
        "object_size_estimation": _objects(T.SIZE, object_name=ONE),
        "object_abs_distance": _objects(T.ABS_DISTANCE, object_name_1=ONE, object_name_2=ONE),
        "object_rel_distance_closest": _objects(T.REL_DISTANCE_CLOSEST, object_name=ONE, choices=LIST_ANY),
        "object_rel_distance_farthest": _objects(T.REL_DISTANCE_FARTHEST, object_name=ONE, choices=LIST_ONE),
        **{f"object_rel_direction_{lvl}": _objects(T.REL_DIRECTION[lvl], **_ONE3) for lvl in T.REL_DIRECTION},
        "room_size_estimation_single": Template(T.ROOM_SIZE_SINGLE, "none", {}),
        "room_size_estimation_multiple": Template(T.ROOM_SIZE_MULTIPLE, "none", {}),
        "route_planning": _objects(T.ROUTE_PLAN, start_object=ONE, facing_object=ONE, destination_object=ONE,
                                   actions=ROUTE),
    },
}
assert all(t in QUESTION_TYPES for types in TEMPLATES.values() for t in types)
_REGEX = {layout: {t: tpl.regex() for t, tpl in types.items()} for layout, types in TEMPLATES.items()}
_STEP = re.compile(r"\s*\d+\.\s+")  # "1. [please fill in] 2. Go forward until the chair 3. ..."
_FORWARD = re.compile(r"go forward until the (.+?)\.?\s*$", re.I)


class QuestionRowError(InputError):
    """A row (or file) that cannot be imported; the message names the file, the row and what was expected."""


@dataclass(frozen=True)
class Refusal:
    """A row not imported: where (file:line or row), its id, its scene and why (the scene's labels included)."""

    where: str
    id: Any
    scene_id: str | None
    reason: str
    row: dict

    def message(self) -> str:
        return f"{self.where}: id {self.id!r}: {self.reason}"


@dataclass(frozen=True)
class ImportedRows:
    """The questions of one file (row order), the rows refused and the warnings."""

    layout: str
    source: str
    questions: tuple[dict, ...]
    refused: tuple[Refusal, ...]
    warnings: tuple[str, ...]

    def report(self) -> dict:
        """Counts per type, per source dataset and per scene, the refusals by reason kind (``import_report.json``)."""
        kinds = Counter(r.reason.split(":", 1)[0] for r in self.refused)
        return {"layout": self.layout, "benchmark": BENCHMARK[self.layout], "source": self.source,
                "questions": len(self.questions), "refused": len(self.refused),
                "per_type": dict(sorted(Counter(q["question_type"] for q in self.questions).items())),
                "per_dataset": dict(sorted(Counter(str(q.get("dataset")) for q in self.questions).items())),
                "scenes": len({q["scene_id"] for q in self.questions}),
                "refused_by_reason": dict(sorted(kinds.items())), "warnings": list(self.warnings)}


# ---------------------------------------------------------------------------------------
# scenes
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SceneLabels:
    """The objects of one imported scene by label: ``ids[label]`` the object ids (scene order),
    ``labels[label]`` the label as the scene spells it; labels compared in lower case with
    whitespace runs as one space (:func:`norm_label`)."""

    scene_id: str
    ids: dict
    labels: dict  # compared form -> the label as the scene spells it

    @classmethod
    def of(cls, scene: Scene) -> "SceneLabels":
        ids: dict[str, list[str]] = defaultdict(list)
        labels: dict[str, str] = {}
        for o in scene.objects:
            ids[norm_label(o.label)].append(o.id)
            labels.setdefault(norm_label(o.label), o.label)
        return cls(scene.scene_id, {k: tuple(v) for k, v in ids.items()}, labels)

    def describe(self) -> str:
        """``scene X has labels: chair (2), sofa (1), ...`` (every label, sorted)."""
        labels = ", ".join(f"{lab} ({len(ids)})" for lab, ids in sorted(self.ids.items()))
        return f"scene {self.scene_id} has labels: {labels or '(none)'}"


def norm_label(name: str) -> str:
    """A label or a name read from a question, as compared: lower case, stripped, whitespace runs as one space."""
    return " ".join(str(name).split()).lower()


def find_scenes(paths: list[str | os.PathLike]) -> dict[str, SceneLabels]:
    """Every scene under ``paths`` by scene id: a ``scene.json`` file, a scene folder holding one, or a
    folder of scene folders (``vistest batch``'s layout). A scene id found twice is an error naming both."""
    found: dict[str, tuple[SceneLabels, Path]] = {}
    for p in paths:
        p = Path(p)
        if p.is_file():
            files = [p]
        elif (p / "scene.json").is_file():
            files = [p / "scene.json"]
        elif p.is_dir():
            files = sorted(p.glob("*/scene.json"))
        else:
            raise QuestionRowError(f"--scenes {p}: expected a scene.json, a scene folder or a folder of scene "
                                   f"folders; it does not exist")
        if not files:
            raise QuestionRowError(f"--scenes {p}: no scene.json in it nor in its sub-folders (import the scans "
                                   f"first: vistest import scannet|arkitscenes|scannetpp ... --boxes vsibench:...)")
        for f in files:
            scene = Scene.load(f)
            if scene.scene_id in found:
                raise QuestionRowError(f"{f}: scene_id: {scene.scene_id!r} is also the id of {found[scene.scene_id][1]}"
                                       f"; expected one scene per id")
            found[scene.scene_id] = (SceneLabels.of(scene), f)
    return {k: v for k, (v, _) in found.items()}


# ---------------------------------------------------------------------------------------
# rows
# ---------------------------------------------------------------------------------------
class _Refused(Exception):
    """A row refused: the reason (module docstring)."""


def _text(row: dict, col: str) -> str:
    v = row.get(col)
    if not isinstance(v, str) or not v.strip():
        raise _Refused(f"{col}: expected a non-empty string, got {v!r}")
    return v


def _scene_id(row: dict, layout: str, pattern: str) -> str:
    fields = {"scene_name": row[SCENE_COLUMN[layout]], "dataset": row.get("dataset")}
    try:
        return pattern.format(**{k: "" if v is None else str(v) for k, v in fields.items()})
    except (KeyError, IndexError, ValueError) as e:
        raise QuestionRowError(f"--scene-id {pattern!r}: expected a pattern of {{scene_name}} and {{dataset}}, "
                               f"got {e!r}") from None


def _options(row: dict, qtype: str) -> list[str] | None:
    v = row.get("options")
    if v is None or (isinstance(v, (list, tuple)) and not v):
        return None
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except json.JSONDecodeError:
            raise _Refused(f"options: expected a list of \"A. text\" strings (or its JSON), got {v[:60]!r}") from None
    if not isinstance(v, (list, tuple)) or not all(isinstance(o, str) for o in v):
        raise _Refused(f"options: expected a list of \"A. text\" strings, got {v!r}")
    return list(v)


def _labels(names: str) -> list[str]:
    return [n for n in (norm_label(x) for x in names.split(",")) if n]


def resolve(template: Template, regex: re.Pattern, question: str, qtype: str, scene: SceneLabels,
            options: list[str] | None) -> dict:
    """``objects`` / ``category`` of one question (module docstring), or _Refused naming the name,
    the instances found and the scene's labels."""
    if template.target == "none":  # room size: no object to read (the wording is not checked)
        return {}
    m = regex.fullmatch(question.strip())
    if m is None:
        raise _Refused(f"template: the question does not follow the {qtype} template "
                       f"{' '.join(template.text.split())!r}")
    objects: list[str] = []
    labels: list[str] = []

    def one(name: str, role: str) -> str:
        ids = scene.ids.get(name, ())
        if not ids:
            raise _Refused(f"missing label: the {role} {name!r} is no object's label; {scene.describe()}")
        if len(ids) > 1:
            raise _Refused(f"ambiguous label: the {role} {name!r} has {len(ids)} instances ({', '.join(ids)}) where "
                           f"the {qtype} template needs one; {scene.describe()}")
        return ids[0]

    def present(name: str, role: str) -> str:
        if name not in scene.ids:
            raise _Refused(f"missing label: the {role} {name!r} is no object's label; {scene.describe()}")
        return name

    for role, how in template.roles.items():
        raw = m.group(role)
        if how == ONE:
            objects.append(one(norm_label(raw), role.replace("_", " ")))
        elif how == ANY:
            labels.append(present(norm_label(raw), role.replace("_", " ")))
        elif how in (LIST_ANY, LIST_ONE):
            names = _labels(raw)
            if template.target == "category":
                labels += [present(n, "category") for n in names]
                continue
            if options is not None:
                opt = [norm_label(option_letter(o)[1]) for o in options]
                if sorted(opt) != sorted(names):
                    raise _Refused(f"options: the options' labels {opt} are not the question's choices {names}")
                names = opt  # the options' order: the audit and the budget stage read them so
            for n in names:
                if how == LIST_ONE:
                    objects.append(one(n, "option"))
                else:
                    objects += [oid for oid in scene.ids.get(present(n, "option"), ()) if oid not in objects]
        elif how == ROUTE:
            steps = [s.strip() for s in _STEP.split(raw) if s.strip()]
            for s in steps:
                f = _FORWARD.match(s)
                if f is not None:
                    oid = one(norm_label(f.group(1)), "landmark")
                    if oid not in objects:
                        objects.append(oid)
    if template.target == "category":
        spelt = [scene.labels[x] for x in labels]
        return {"category": spelt[0] if len(template.roles) == 1 and "categories" not in template.roles else spelt}
    return {"objects": objects}


def convert_row(layout: str, where: str, row: Any, scenes: dict[str, SceneLabels], scene_pattern: str) -> dict:
    """One row as a vistest question (module docstring); _Refused when it cannot be imported,
    QuestionRowError when the file is not of the layout."""
    if not isinstance(row, dict):
        raise QuestionRowError(f"{where}: expected an object with the {BENCHMARK[layout]} columns, got "
                               f"{type(row).__name__}")
    missing = [c for c in REQUIRED[layout] if c not in row]
    if missing:
        other = REVSI if layout == VSIBENCH else VSIBENCH
        hint = (f" (columns of the {BENCHMARK[other]} layout: vistest import {other})"
                if all(c in row for c in REQUIRED[other]) else "")
        raise QuestionRowError(f"{where}: missing column(s) {', '.join(missing)} of the {BENCHMARK[layout]} layout "
                               f"(expected {', '.join(REQUIRED[layout])}){hint}")
    qtype = _text(row, "question_type")
    if qtype not in TEMPLATES[layout]:
        raise _Refused(f"question_type: {qtype!r} is not a {BENCHMARK[layout]} type; expected one of "
                       f"{', '.join(TEMPLATES[layout])}")
    scene_id = _scene_id(row, layout, scene_pattern)
    if scene_id not in scenes:
        raise _Refused(f"scene: {scene_id!r} ({SCENE_COLUMN[layout]} {row[SCENE_COLUMN[layout]]!r}) is not among "
                       f"the {len(scenes)} scenes given (--scenes)")
    question = _text(row, "question")
    options = _options(row, qtype)
    q: dict[str, Any] = {"id": row["id"] if isinstance(row["id"], (int, str)) else str(row["id"]),
                         "scene_id": scene_id, "question_type": qtype, "question": question}
    if options is not None:
        q["options"] = options
    gt = row["ground_truth"]
    q["ground_truth"] = gt
    q.update(resolve(TEMPLATES[layout][qtype], _REGEX[layout][qtype], question, qtype, scenes[scene_id], options))
    q["benchmark"] = BENCHMARK[layout]
    if row.get("dataset") is not None:
        q["dataset"] = row["dataset"]
    q["original"] = row
    return q


def _jsonable(row: dict, where: str) -> dict:
    """The row as JSON can hold it (parquet gives lists; a value JSON cannot hold is refused)."""
    try:
        return json.loads(json.dumps(row, allow_nan=False))
    except (TypeError, ValueError) as e:
        raise QuestionRowError(f"{where}: a column JSON cannot hold ({e}); expected text, numbers, lists or null") \
            from None


def import_rows(layout: str, path: str | os.PathLike, scenes: dict[str, SceneLabels],
                scene_pattern: str = DEFAULT_SCENE_ID) -> ImportedRows:
    """Read one VSI-Bench (-Debiased) or ReVSI file (module docstring) against ``scenes``
    (:func:`find_scenes`). Rows that cannot be imported are returned in ``refused``; a file that is
    not of the layout raises QuestionRowError. Each imported question is checked as ``vistest
    budget`` reads it (a stored field it refuses, e.g. a count that is not an integer, refuses the row:
    ``invalid``)."""
    if layout not in TEMPLATES:
        raise QuestionRowError(f"question rows: expected one of {', '.join(TEMPLATES)}, got {layout!r}")
    path = Path(path)
    try:
        rows = read_table(path)
    except InputError as e:
        raise QuestionRowError(str(e)) from None
    if not rows:
        raise QuestionRowError(f"{path}: no rows")
    questions, wheres, refused = [], [], []
    for n, (where, row) in enumerate(rows, 1):
        row = _jsonable(row, where) if isinstance(row, dict) else row
        try:
            q = convert_row(layout, where, row, scenes, scene_pattern)
            try:  # as `vistest budget` will read it; a bad stored field refuses this row only
                parse_question(q, str(path), n)
            except QuestionError as e:
                raise _Refused(f"invalid: {str(e).split(': ', 1)[-1]}") from None
            questions.append(q)
            wheres.append(where)
        except _Refused as e:
            scene = row.get(SCENE_COLUMN[layout]) if isinstance(row, dict) else None
            refused.append(Refusal(where, row.get("id"), scene, str(e), row))
    first: dict[str, str] = {}
    for q, where in zip(questions, wheres):
        key = str(q["id"])
        if key in first:
            raise QuestionRowError(f"{where}: id: {q['id']!r} is also the id of {first[key]}; expected unique ids"
                                   + (" (ReVSI: import one config, all_frame; the budget configs repeat its ids)"
                                      if layout == REVSI else ""))
        first[key] = where
    warnings = []
    if refused:
        warnings.append(f"{path}: {len(refused)} of {len(rows)} rows refused ("
                        + ", ".join(f"{n} {k}" for k, n in sorted(Counter(r.reason.split(':', 1)[0]
                                                                         for r in refused).items())) + ")")
    return ImportedRows(layout, str(path), tuple(questions), tuple(refused), tuple(warnings))


def refusal_error(imported: ImportedRows) -> QuestionRowError:
    """The error a refused row stops an import with: the first rows refused, each with its reason."""
    shown = "\n  ".join(r.message() for r in imported.refused[:MAX_SHOWN])
    more = len(imported.refused) - MAX_SHOWN
    return QuestionRowError(f"{imported.source}: {len(imported.refused)} row(s) cannot be imported (nothing "
                            f"written; --skip-refused imports the others and writes the refused rows to "
                            f"{REFUSED_FILE}):\n  {shown}" + (f"\n  ... and {more} more" if more > 0 else ""))


def write_refused(imported: ImportedRows, outdir: str | os.PathLike) -> Path:
    """``OUTDIR/refused.jsonl``: each refused row as read, with ``refused`` (the reason) and ``where``."""
    from ..atomic import write_atomic

    path = Path(outdir) / REFUSED_FILE
    write_atomic(path, "".join(json.dumps({"where": r.where, "refused": r.reason, "row": r.row}, ensure_ascii=False,
                                          default=str) + "\n" for r in imported.refused))
    return path
