"""Reading a run directory (the OUTDIR of ``vistest run``) into the rows every exporter writes.

A run directory (docs/videos.md) holds, for any number of scenes::

    {n}_frame/{scene_id}.mp4            budget videos; all_frame/ every frame
    dummy_{mode}/{n}_frame/{scene_id}/{key}.mp4
                                        budget dummies (allblack: dummy_allblack/{n}_frame/{scene_id}.mp4)
    dummy_{mode}/{scene_id}/{key}.mp4   full-length dummies (the all budget; --dummy-length full)
    scenes/{scene_id}/{n}_frame.jsonl   frame-budget ground truth (real videos)
    scenes/{scene_id}/dummy_gt.jsonl    ground truth of every dummy
    manifest.jsonl                      every video: frames, key, profile ...

:func:`load_run` turns it into :class:`ExportRow` records, one per (question, variant,
budget), checked against the manifest: every video a row names must be listed there and
exist, a budget video must hold exactly the row's ``frame_indices``, and a dummy's content
key must be the manifest's (otherwise the ground truth and the videos come from different
runs), and every such video must still be the file the run wrote: its size the manifest's
``bytes`` and, unless its modification time is the one the scene's record kept
(vistest.videos.manifest), its sha256 the manifest's (``verify``: always hashed). The ground
truth itself is read and validated by vistest.eval.records' loaders, so an
export accepts exactly what ``vistest score -r RUN/scenes/{scene_id}`` accepts.

A scene whose record was written under other rules versions (vistest.freshness) is refused
(:func:`check_records`): an export never carries ground truth or videos of old rules.

``evaluator`` (:func:`load_run`): the ``all`` budget's real rows come from that evaluator
configuration's ground truth, ``scenes/{scene_id}/evaluators/{name}/all_frame.jsonl``
(computed over the frames it takes of ``all_frame``; vistest.budget.evaluators), checked
against the frames the manifest says it takes; None: ``all_frame.jsonl`` (every frame).

Conventions: ``budget`` is a label (``"16"``, ``"all"``; vistest.budgets.Budget.label);
``num_frames`` its JSON value (16 or ``"all"``), as in the budget files; video paths are
'/'-separated and relative to the run directory. Errors are vistest.errors.InputError naming the file,
the field and what was expected.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, Sequence

from ... import freshness
from ...errors import InputError
from ...layout import MANIFEST, SCENES_DIR, budget_file_name, budget_video_path, evaluator_dir, scene_record_path
from ...questions import ANSWER_MCQ, QUESTION_TYPES
from ...atomic import check_file
from ...budget.rows import TruthRow
from ...videos.manifest import read_manifest as read_manifest_records
from ...videos.manifest import read_scene_record
from ...answers import is_abstain_answer
from ...budgets import budget_json, budget_sort_key
from ..records import load_budget_file, load_run_dir


# where an evaluator's rows of one budget come from (:func:`evaluator_sources`)
FROM_EVALUATOR = "evaluator"   # its own file, evaluators/{name}/{b}_frame.jsonl: over the frames it takes
FROM_BUDGET = "budget"         # it takes every frame of the budget video once: the budget's rows are its
FROM_NONE = "client_fails"     # its client fails on the budget video: no row at that budget


@dataclass(frozen=True)
class ExportRow:
    """One (question, variant, budget) of a run directory: its ground-truth row and its video.

    ``row``: the row as the run wrote it (vistest.budget.rows.TruthRow: ``id``, ``variant``
    ``"budget"`` or ``"dummy-{mode}"``, ``budget`` label, ``ground_truth`` None when
    unanswerable, ``fields`` every field as read). ``scene_id``: the scene folder's name.
    ``video``: the video the row is asked on, relative to the run directory (None: a dummy with
    no frame left to write); ``video_frames``: its frame count (manifest, verified by decoding
    when written); ``frame_indices``: the source frame of each frame of that video, in order.
    """

    row: TruthRow
    scene_id: str
    video: str | None
    video_frames: int | None
    frame_indices: tuple[int, ...]

    # ---- the row's fields ----------------------------------------------------------------
    @property
    def id(self) -> str:
        return self.row.id

    @property
    def variant(self) -> str:
        return self.row.variant

    @property
    def budget(self) -> str:
        return self.row.budget

    @property
    def question_type(self) -> str:
        return self.row.question_type

    @property
    def question(self) -> str:
        return self.row.question

    @property
    def options(self) -> tuple[str, ...] | None:
        """The MCQ options (``"A. text"``), None for numeric types and open reformulations."""
        return self.row.options or None

    @property
    def ground_truth(self) -> Any:
        return self.row.ground_truth

    @property
    def original_ground_truth(self) -> Any:
        return self.row.original_ground_truth

    @property
    def status(self) -> str:
        return self.row.status

    @property
    def reason(self) -> str | None:
        return self.row.reason

    @property
    def sampler_profile(self) -> str | None:
        return self.row.fields.get("sampler_profile")

    @property
    def record(self) -> Mapping[str, Any]:
        """The run's record as read (every field)."""
        return self.row.fields

    @property
    def source(self) -> str:
        return self.row.source

    @property
    def line(self) -> int:
        return self.row.line

    @property
    def scorable(self) -> bool:
        """Real rows: answerable, with a ground truth lmms-eval's rules can score
        (vistest.budget.rows.TruthRow.scorable: an appearance order given as a list of ids is
        not); dummy rows: always True (they are scored for hallucination)."""
        return self.row.scorable or self.row.is_dummy

    @property
    def num_frames(self) -> int | str:
        """The budget as the budget files write it: an int, or ``"all"``."""
        return budget_json(self.budget)

    @property
    def is_dummy(self) -> bool:
        return self.row.is_dummy

    @property
    def answerable(self) -> bool:
        return self.row.answerable

    @property
    def is_mcq(self) -> bool:
        return QUESTION_TYPES[self.question_type].answer == ANSWER_MCQ

    @property
    def is_counting(self) -> bool:
        return self.row.is_counting

    @property
    def vistest_scored(self) -> bool:
        """A reformulated row only vistest's rules score (the lmms-eval-task export): an open
        answer (``answer_kind``), or the abstention phrase as a number's answer (the revsi and
        VLMEvalKit readers would call ``float()`` on it)."""
        return self.row.answer_kind is not None or (not self.is_mcq and is_abstain_answer(self.ground_truth))

    @property
    def where(self) -> str:
        return self.row.where


@dataclass(frozen=True)
class VideoEntry:
    """One manifest line: ``path`` (relative to the run directory), ``num_frames``,
    ``source_frames``, ``black_frames``, ``key``, ``fps``, ``profile`` (budget videos),
    ``source`` (the source video, absolute), ``source_key``, ``evaluators`` (per evaluator
    configuration, per budget label, the positions of the video's frames it takes); ``bytes``
    and ``sha256`` of the file as written (None in manifests of older versions) and
    ``mtime_ns``, its modification time then (from the scene's record; None when unknown)."""

    scene_id: str
    path: str
    num_frames: int
    source_frames: tuple[int, ...]
    black_frames: tuple[int, ...]
    key: str | None
    fps: float | None
    profile: str | None
    source: str | None
    source_key: str | None
    evaluators: Mapping[str, Mapping[str, tuple[int, ...] | None]] = field(default_factory=dict)
    bytes: int | None = None
    sha256: str | None = None
    mtime_ns: int | None = None


@dataclass(frozen=True)
class RunData:
    """Everything an exporter reads from a run directory. ``root``: the run directory
    (absolute); ``rows``: real rows (budget order, then scene, then question order) followed
    by dummy rows (scene, then the order of dummy_gt.jsonl); ``videos``: manifest lines by
    path; ``scenes``: scene ids, sorted; ``budgets``: budget labels present, in budget order;
    ``evaluator``: the evaluator configuration whose rows these are (None: the budgets' own);
    ``evaluator_sources``: with ``evaluator``, per scene and budget label, where that budget's rows
    come from (:func:`evaluator_sources`: its own file, the budget's, or none)."""

    root: Path
    rows: tuple[ExportRow, ...]
    videos: Mapping[str, VideoEntry]
    scenes: tuple[str, ...]
    budgets: tuple[str, ...]
    evaluator: str | None = None
    evaluator_sources: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def export_info(self) -> dict[str, Any]:
        """What every export's record says of the rows' origin: ``evaluator`` (None: the budgets' own
        ground truth) and, with one, ``evaluator_rows``: per budget label, the scenes whose rows are the
        evaluator's own (``evaluators/{name}/{b}_frame.jsonl``), the budget's (its client takes every frame
        of that budget video once) or none (its client fails on the video)."""
        if self.evaluator is None:
            return {"evaluator": None}
        per: dict[str, dict[str, list[str]]] = {}
        for scene, by_budget in sorted(self.evaluator_sources.items()):
            for b, src in by_budget.items():
                per.setdefault(b, {}).setdefault(src, []).append(scene)
        return {"evaluator": self.evaluator, "evaluator_rows": {b: per[b] for b in sorted(per, key=budget_sort_key)}}

    @property
    def warnings(self) -> tuple[str, ...]:
        """The rows an evaluator's client leaves without ground truth (its client fails on a budget video)."""
        fails = sorted((b, s) for s, by in self.evaluator_sources.items() for b, src in by.items() if src == FROM_NONE)
        return tuple(f"scene {s}: evaluator {self.evaluator!r} fails on the {b}-frame budget video (the manifest "
                     f"states its error): its {b}-frame rows are left out" for b, s in fails)

    def video_abspath(self, rel: str) -> Path:
        """The absolute path of a video given relative to the run directory."""
        return self.root / rel

    @property
    def real_rows(self) -> tuple[ExportRow, ...]:
        return tuple(r for r in self.rows if not r.is_dummy)

    @property
    def dummy_rows(self) -> tuple[ExportRow, ...]:
        return tuple(r for r in self.rows if r.is_dummy)

    def profile(self, scene_id: str) -> str | None:
        """The sampler profile of the scene's budget videos (None when it has none)."""
        profiles = sorted({v.profile for v in self.videos.values() if v.scene_id == scene_id and v.profile})
        return profiles[0] if profiles else None


# ---------------------------------------------------------------------------------------
# the manifest
# ---------------------------------------------------------------------------------------
def _int_list(v: Any, where: str, fld: str) -> tuple[int, ...]:
    if not isinstance(v, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in v):
        raise InputError(f"{where}: {fld}: expected a list of frame numbers, got {v!r}")
    return tuple(v)


def manifest_videos(root: Path, scene_records: Mapping[str, dict | None] | None = None) -> dict[str, VideoEntry]:
    """``manifest.jsonl`` of the run directory, by video path (docs/videos.md). ``scene_records``: the
    scene records already read (scene id -> :func:`vistest.videos.manifest.read_scene_record`'s value);
    a scene not among them is read here."""
    path = root / MANIFEST
    out: dict[str, VideoEntry] = {}
    known = scene_records or {}
    records: dict[str, dict] = {}  # scene id -> the files of its record
    for line, doc in enumerate(read_manifest_records(root), start=1):
        where = f"{path}: record {line}"
        if not isinstance(doc["num_frames"], int) or doc["num_frames"] < 0:
            raise InputError(f"{where}: num_frames: expected a frame count, got {doc['num_frames']!r}")
        size, sha = doc.get("bytes"), doc.get("sha256")
        if (size is not None or sha is not None) and not (isinstance(size, int) and isinstance(sha, str)):
            raise InputError(f"{where}: bytes, sha256: expected the size (an integer) and sha256 (hex) of the video, "
                             f"got {size!r}, {sha!r}")
        sid = str(doc["scene_id"])
        if sid not in records:
            rec = known[sid] if sid in known else read_scene_record(root, sid)
            records[sid] = (rec or {}).get("files", {})
        rec = records[sid].get(str(doc["path"]), {})
        mtime = rec.get("mtime_ns") if rec.get("sha256") == sha and rec.get("bytes") == size else None
        out[str(doc["path"])] = VideoEntry(
            sid, str(doc["path"]), doc["num_frames"],
            _int_list(doc.get("source_frames", []), where, "source_frames"),
            _int_list(doc.get("black_frames", []), where, "black_frames"),
            doc.get("key"), doc.get("fps"), doc.get("profile"), doc.get("source"), doc.get("source_key"),
            _evaluator_frames(doc.get("evaluators"), where), size, sha, mtime)
    return out


def verify_videos(root: Path, rows: list[ExportRow], videos: Mapping[str, VideoEntry], verify: bool = False) -> None:
    """Every video a row is asked on must be the file the run wrote (module docstring):
    InputError naming the first that is not, and why."""
    for rel in sorted({r.video for r in rows if r.video is not None}):
        entry = videos[rel]
        if entry.bytes is None:
            continue
        why = check_file(root / rel, {"bytes": entry.bytes, "sha256": entry.sha256, "mtime_ns": entry.mtime_ns}, verify)
        if why is not None:
            raise InputError(f"{root / rel}: {why} (manifest.jsonl: bytes, sha256): the video changed after 'vistest "
                             f"run' wrote it (truncated, overwritten?); rerun 'vistest run' to rewrite it")



def _evaluator_frames(doc: Any, where: str) -> Mapping[str, Mapping[str, tuple[int, ...] | None]]:
    """``{name: {budget: positions or None}}`` from a manifest line's ``evaluators``."""
    if doc is None:
        return MappingProxyType({})
    if not isinstance(doc, dict):
        raise InputError(f"{where}: evaluators: expected an object (docs/videos.md), got {type(doc).__name__}")
    out = {}
    for name, e in doc.items():
        takes = e.get("takes") if isinstance(e, dict) else None
        if not isinstance(takes, dict):
            raise InputError(f"{where}: evaluators.{name}.takes: expected an object of budgets")
        out[name] = MappingProxyType({b: None if t.get("frames") is None else
                                      _int_list(t["frames"], where, f"evaluators.{name}.takes.{b}.frames")
                                      for b, t in takes.items()})
    return MappingProxyType(out)


# ---------------------------------------------------------------------------------------
# ground truth rows
# ---------------------------------------------------------------------------------------
def _video_of(truth: TruthRow, scene_id: str, videos: Mapping[str, VideoEntry],
              root: Path) -> tuple[str | None, VideoEntry | None]:
    """The video a row is asked on, checked against the manifest and the disk."""
    where, doc = truth.where, truth.fields
    if truth.is_dummy:
        rel = doc.get("video")
        if rel is None:
            return None, None
        entry = videos.get(str(rel))
        if entry is None:
            raise InputError(f"{where}: video: {rel} is not in {root / MANIFEST}; the dummy ground truth and the "
                             f"videos come from different runs (rerun 'vistest run')")
        if doc.get("video_key") and entry.key and doc["video_key"] != entry.key:
            raise InputError(f"{where}: video_key: {doc['video_key'][:16]}... but {root / MANIFEST} lists {rel} with "
                             f"key {entry.key[:16]}...; rerun 'vistest run'")
    else:
        rel = budget_video_path(scene_id, budget_json(truth.budget))
        entry = videos.get(rel)
        if entry is None:
            raise InputError(f"{where}: num_frames: no budget video {rel} in {root / MANIFEST}; rerun 'vistest run' "
                             f"with this budget, or delete the stale {Path(truth.source).name}")
        fi = doc.get("frame_indices")
        want = entry.source_frames
        if doc.get("evaluator") is not None:  # an evaluator's all row: the frames it takes of the video
            taken = entry.evaluators.get(str(doc["evaluator"]), {}).get(truth.budget)
            if taken is None:
                raise InputError(f"{where}: evaluator: {root / MANIFEST} states no frames that {doc['evaluator']!r} "
                                 f"takes of {rel}; rerun 'vistest run' with --evaluator {doc['evaluator']}")
            want = tuple(entry.source_frames[p] for p in taken)
        if fi is not None and tuple(fi) != want:
            raise InputError(f"{where}: frame_indices: differ from the frames of {rel} in {root / MANIFEST}; the "
                             f"ground truth and the video come from different runs (rerun 'vistest run')")
    if not (root / str(rel)).is_file():
        raise InputError(f"{root / str(rel)}: video file missing (listed in {root / MANIFEST}); rerun 'vistest run'")
    return str(rel), entry


def evaluator_sources(scene_id: str, evaluator: str, budgets: Sequence[str],
                      videos: Mapping[str, VideoEntry], where: Path) -> dict[str, str]:
    """Per budget label of ``budgets``, where ``evaluator``'s rows of that budget come from, by what
    the manifest says it takes of the budget video (``evaluators[name].takes[budget]``): every frame
    once, :data:`FROM_BUDGET`; an error (its client fails on the video), :data:`FROM_NONE`; other
    frames (STI-Bench's client: 30 of a 32- or 64-frame video), :data:`FROM_EVALUATOR`. ``all``: always
    its own file. InputError when the manifest states nothing for the evaluator (the run did not name
    it). A budget video the manifest lacks is left to :func:`_video_of`'s error."""
    out = {}
    for b in budgets:
        if b == "all":
            out[b] = FROM_EVALUATOR
            continue
        entry = videos.get(budget_video_path(scene_id, budget_json(b)))
        if entry is None:
            out[b] = FROM_BUDGET
            continue
        if evaluator not in entry.evaluators or b not in entry.evaluators[evaluator]:
            raise InputError(f"{where}: evaluators: the manifest states no frames that {evaluator!r} takes of "
                             f"{entry.path}; rerun 'vistest run' with --evaluator {evaluator}")
        taken = entry.evaluators[evaluator][b]
        out[b] = (FROM_NONE if taken is None else FROM_BUDGET if taken == tuple(range(entry.num_frames)) else
                  FROM_EVALUATOR)
    return out


def scene_truths(root: Path, scene_dir: Path, evaluator: str | None = None,
                 videos: Mapping[str, VideoEntry] | None = None) -> tuple[list[TruthRow], list[str], dict[str, str]]:
    """The truths of one scene folder, their files and, with ``evaluator``, where its rows of each
    budget come from (:func:`evaluator_sources`; ``videos``: the manifest's lines): a budget its client
    caps takes the rows of ``evaluators/{name}/{b}_frame.jsonl`` (``all``: ``all_frame.jsonl``, always)
    in place of the budget's (an InputError when the run has none), a budget video its client fails on
    loses its real rows, and a budget it takes whole keeps the budget's rows (an earlier run's file of
    the evaluator for that budget is not read)."""
    truth = load_run_dir(scene_dir)
    truths, files = list(truth.truths), list(truth.files)
    if evaluator is None:
        return truths, files, {}
    folder = evaluator_dir(root, scene_dir.name, evaluator)
    if not (folder / budget_file_name("all")).is_file():  # every run with the all budget writes it
        raise InputError(f"{folder / budget_file_name('all')}: not found: the run has no all ground truth for "
                         f"evaluator {evaluator!r} (rerun 'vistest run' with the all budget and --evaluator "
                         f"{evaluator}; docs/sampling.md)")
    budgets = sorted({t.budget for t in truths if not t.is_dummy} | {"all"}, key=budget_sort_key)
    sources = evaluator_sources(scene_dir.name, evaluator, budgets, videos or {}, root / MANIFEST)
    replaced = {b for b, src in sources.items() if src != FROM_BUDGET}
    truths = [t for t in truths if t.is_dummy or t.budget not in replaced]
    for b in budgets:
        if sources[b] != FROM_EVALUATOR:
            continue
        path = folder / budget_file_name(budget_json(b))
        if not path.is_file():
            raise InputError(f"{path}: not found: the run has no {b}-frame ground truth for evaluator {evaluator!r} "
                             f"(rerun 'vistest run' with the {b} budget and --evaluator {evaluator}; docs/sampling.md)")
        truths += list(load_budget_file(path))
        files.append(str(path))
    return truths, files, sources


def scene_rows(root: Path, scene_dir: Path, videos: Mapping[str, VideoEntry],
               evaluator: str | None = None) -> tuple[list[ExportRow], dict[str, str]]:
    """The rows of one ``scenes/{scene_id}/`` folder (budget files, then dummy_gt.jsonl;
    ``evaluator``: its own rows at every budget its client caps, :func:`scene_truths`) and, with
    ``evaluator``, where each budget's rows come from."""
    scene_id = scene_dir.name
    rows = []
    truths, _, sources = scene_truths(root, scene_dir, evaluator, videos)
    for t in truths:
        if str(t.fields.get("scene_id", scene_id)) != scene_id:
            raise InputError(f"{t.where}: scene_id: expected {scene_id!r} (the folder's name), got "
                             f"{t.fields.get('scene_id')!r}")
        rel, entry = _video_of(t, scene_id, videos, root)
        frames = t.frame_indices if not t.is_dummy else (entry.source_frames if entry else ())
        rows.append(ExportRow(t, scene_id, rel, entry.num_frames if entry else None, frames))
    return rows, sources


def check_ids_across_scenes(rows: list[ExportRow]) -> None:
    """vistest score joins predictions on (id, variant, budget), without the scene: two
    scenes must not share a question id."""
    seen: dict[tuple[str, str, str], ExportRow] = {}
    for r in rows:
        key = (r.id, r.variant, r.budget)
        other = seen.setdefault(key, r)
        if other.scene_id != r.scene_id:
            raise InputError(f"{r.where}: id: {r.id!r} is also a question of scene {other.scene_id!r} "
                             f"({other.where}); predictions are matched by id, so ids must be unique across the "
                             f"scenes of a run directory")


def check_records(root: Path, scene_ids: Sequence[str],
                  scene_records: Mapping[str, dict | None] | None = None) -> None:
    """InputError naming the first scene whose record (vistest.videos.manifest) was written under other
    rules versions than the current ones (vistest.freshness: ``visibility``, ``ground_truth``, ``videos``):
    its ground truth and videos are stale, so the export would carry them. A scene without a record is
    not checked (nothing says what made it; the videos are still checked against the manifest).
    ``scene_records``: the records already read, by scene id (a scene not among them is read here)."""
    known = scene_records or {}
    for sid in scene_ids:
        rec = known[sid] if sid in known else read_scene_record(root, sid)
        if rec is None:
            continue
        changed = freshness.changes((rec.get("options") or {}).get("rules"), "export")
        if changed:
            raise InputError(f"{scene_record_path(root, sid)}: options: rules: scene {sid}: "
                             f"{'; '.join(changed)}; rerun 'vistest run' (or 'vistest batch') into {root} first")


def load_run(run_dir: str | os.PathLike, verify: bool = False, evaluator: str | None = None) -> RunData:
    """Every row of a ``vistest run`` output folder, checked against its manifest, and every
    video the rows use checked against its record (:func:`verify_videos`; ``verify``: hash all);
    ``evaluator``: the ``all`` rows from that evaluator configuration's ground truth."""
    root = Path(run_dir).resolve()
    if not root.is_dir():
        raise InputError(f"{run_dir}: run directory: not a folder")
    scenes_dir = root / SCENES_DIR
    scene_dirs = sorted(p for p in scenes_dir.iterdir() if p.is_dir()) if scenes_dir.is_dir() else []
    if not scene_dirs:
        raise InputError(f"{root}: run directory: expected the output folder of 'vistest run' "
                         f"({SCENES_DIR}/{{scene_id}}/{{n}}_frame.jsonl and {MANIFEST}), found no scene folder")
    # each scene's record read once: it holds the scene's manifest and file list (1.4 MB for the 40-frame
    # demo run with its dummies), and both checks below read it (issue 47: read twice, 15 ms each time)
    records = {d.name: read_scene_record(root, d.name) for d in scene_dirs}
    check_records(root, [d.name for d in scene_dirs], records)
    videos = manifest_videos(root, records)
    rows: list[ExportRow] = []
    sources: dict[str, dict[str, str]] = {}
    for d in scene_dirs:
        scene, sources[d.name] = scene_rows(root, d, videos, evaluator)
        rows += scene
    check_ids_across_scenes(rows)
    verify_videos(root, rows, videos, verify)
    budgets = sorted({r.budget for r in rows}, key=budget_sort_key)
    order = {b: i for i, b in enumerate(budgets)}
    real = sorted((r for r in rows if not r.is_dummy), key=lambda r: order[r.budget])  # stable: scene, question
    dummy = [r for r in rows if r.is_dummy]
    return RunData(root, tuple(real + dummy), MappingProxyType(videos), tuple(d.name for d in scene_dirs),
                   tuple(budgets), evaluator, MappingProxyType(sources if evaluator is not None else {}))


def answer_text(v: Any) -> str | None:
    """An answer as the string lmms-eval and VLMEvalKit compare: ``"B"``, ``"3"``, ``"1.91"``
    (numbers by ``str``: 3 -> ``"3"``, 3.5 -> ``"3.5"``); None stays None; a list (an
    appearance order given by ids) becomes its JSON text."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, (list, dict)):
        return json.dumps(v, ensure_ascii=False)
    return str(v)
