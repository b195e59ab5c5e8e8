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
from typing import Any, Mapping

from ...errors import InputError
from ...layout import MANIFEST, SCENES_DIR, budget_file_name, budget_video_path, evaluator_dir
from ...questions import ANSWER_MCQ, QUESTION_TYPES
from ...atomic import check_file
from ...budget.rows import TruthRow
from ...videos.manifest import read_manifest as read_manifest_records
from ...videos.manifest import read_scene_record
from ...answers import is_abstain_answer
from ...budgets import budget_json, budget_sort_key
from ..records import load_budget_file, load_run_dir


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
    ``evaluator``: the evaluator configuration whose ``all`` ground truth the ``all`` rows are
    (None: every frame)."""

    root: Path
    rows: tuple[ExportRow, ...]
    videos: Mapping[str, VideoEntry]
    scenes: tuple[str, ...]
    budgets: tuple[str, ...]
    evaluator: str | None = None

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


def manifest_videos(root: Path) -> dict[str, VideoEntry]:
    """``manifest.jsonl`` of the run directory, by video path (docs/videos.md)."""
    path = root / MANIFEST
    out: dict[str, VideoEntry] = {}
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
            records[sid] = (read_scene_record(root, sid) or {}).get("files", {})
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


def scene_truths(root: Path, scene_dir: Path, evaluator: str | None = None) -> tuple[list[TruthRow], list[str]]:
    """The truths of one scene folder and their files; with ``evaluator``, its ``all`` rows
    replace ``all_frame.jsonl``'s (an InputError when the run has none for it)."""
    truth = load_run_dir(scene_dir)
    truths, files = list(truth.truths), list(truth.files)
    if evaluator is None:
        return truths, files
    path = evaluator_dir(root, scene_dir.name, evaluator) / budget_file_name("all")
    if not path.is_file():
        raise InputError(f"{path}: not found: the run has no all ground truth for evaluator {evaluator!r} (rerun "
                         f"'vistest run' with the all budget and --evaluator {evaluator}; docs/sampling.md)")
    truths = [t for t in truths if t.is_dummy or t.budget != "all"] + list(load_budget_file(path))
    return truths, files + [str(path)]


def scene_rows(root: Path, scene_dir: Path, videos: Mapping[str, VideoEntry],
               evaluator: str | None = None) -> list[ExportRow]:
    """The rows of one ``scenes/{scene_id}/`` folder (budget files, then dummy_gt.jsonl;
    ``evaluator``: its ``all`` rows instead of ``all_frame.jsonl``'s)."""
    scene_id = scene_dir.name
    rows = []
    for t in scene_truths(root, scene_dir, evaluator)[0]:
        if str(t.fields.get("scene_id", scene_id)) != scene_id:
            raise InputError(f"{t.where}: scene_id: expected {scene_id!r} (the folder's name), got "
                             f"{t.fields.get('scene_id')!r}")
        rel, entry = _video_of(t, scene_id, videos, root)
        frames = t.frame_indices if not t.is_dummy else (entry.source_frames if entry else ())
        rows.append(ExportRow(t, scene_id, rel, entry.num_frames if entry else None, frames))
    return rows


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
    videos = manifest_videos(root)
    rows: list[ExportRow] = []
    for d in scene_dirs:
        rows += scene_rows(root, d, videos, evaluator)
    check_ids_across_scenes(rows)
    verify_videos(root, rows, videos, verify)
    budgets = sorted({r.budget for r in rows}, key=budget_sort_key)
    order = {b: i for i, b in enumerate(budgets)}
    real = sorted((r for r in rows if not r.is_dummy), key=lambda r: order[r.budget])  # stable: scene, question
    dummy = [r for r in rows if r.is_dummy]
    return RunData(root, tuple(real + dummy), MappingProxyType(videos), tuple(d.name for d in scene_dirs),
                   tuple(budgets), evaluator)


def answer_text(v: Any) -> str | None:
    """An answer as the string lmms-eval and VLMEvalKit compare: ``"B"``, ``"3"``, ``"1.91"``
    (numbers by ``str``: 3 -> ``"3"``, 3.5 -> ``"3.5"``); None stays None; a list (an
    appearance order given by ids) becomes its JSON text."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, (list, dict)):
        return json.dumps(v, ensure_ascii=False)
    return str(v)
