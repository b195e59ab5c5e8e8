"""The run folder: every file and folder name vistest reads or writes there, defined once.

A *run folder* (``RUN_DIR``) is the output folder of ``vistest run`` (and ``vistest
videos``); any number of scenes share one. Everything later stages read from it (``vistest
score``, ``baseline``, ``export``, ``sheet``, ``index``) is named here::

    RUN_DIR/
      manifest.jsonl                        MANIFEST: every video of every scene (docs/videos.md)
      .manifest.lock                        MANIFEST_LOCK: the lock manifest updates hold
      index.html                            INDEX_HTML: the page linking everything (vistest index)
      sheets/{video path without .mp4}.png  SHEETS_DIR: contact sheets (vistest sheet)
      {n}_frame/{scene_id}.mp4              budget_video_path(): budget videos; all_frame/ every frame
      dummy_{mode}/{n}_frame/{scene_id}/{key16}.mp4
                                            dummy_video_path(budget=n): budget dummies (n frames),
                                            named by their content key
      dummy_{mode}/{scene_id}/{key16}.mp4   dummy_video_path(): full-length dummies (the all budget,
                                            or --dummy-length full)
      dummy_allblack/[{n}_frame/]{scene_id}.mp4
                                            dummy_video_path() of mode allblack
      failed.jsonl                          FAILED: scenes a batch could not finish (vistest batch)
      .vistest/locks/{scene_id}.lock        scene_lock_path(): held while a run writes the scene's files
      .vistest/records/{scene_id}.json      scene_record_path(): size and sha256 of every file of the scene
      .vistest-spool-{scene_id}.{tag}/      SPOOL_PREFIX: a run's work folder (the frame pool), by default
                                            here; --spool-dir / $VISTEST_SPOOL put it elsewhere
      .vistest/running/{scene_id}.json      claim_path(): the batch task working on a scene (host, pid, stage)
      scenes/{scene_id}/                    scene_dir(): one scene's ground truth
        visibility.npz                      VISIBILITY: the visibility table, reused while valid
        {n}_frame.jsonl                     budget_file_name(): frame-budget ground truth
        dummy_gt.jsonl                      DUMMY_GT: the ground truth of every dummy
        evaluators/{name}/all_frame.jsonl   evaluator_file(): the all budget's ground truth over the
                                            frames evaluator configuration {name} takes of all_frame
        score/                              score_dir(): default output of vistest score

A *scene folder* ``RUN_DIR/scenes/{scene_id}`` holds one scene's ground truth on its own; the
``-r/--run-dir`` of ``vistest score`` and ``baseline`` accepts it as well as the whole run
folder. Video paths in the manifest and the ground truth are relative to ``RUN_DIR`` and
'/'-separated (the functions below return them as ``str``); folder helpers return ``Path``.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from .budgets import FOLDER_PATTERN, Budget, BudgetValue

MANIFEST = "manifest.jsonl"
MANIFEST_LOCK = ".manifest.lock"
INDEX_HTML = "index.html"
SHEETS_DIR = "sheets"
SCENES_DIR = "scenes"
STAMPS_DIR = ".vistest"
STATE_DIR = STAMPS_DIR  # RUN_DIR/.vistest: scene locks, records and batch claims (not data: hidden)
LOCKS_DIR = "locks"
RECORDS_DIR = "records"
SPOOL_PREFIX = ".vistest-spool-"  # + "{scene_id}.{rand}_{pid}_{host}" (vistest.atomic.process_tag)
FAILED = "failed.jsonl"
CLAIMS_DIR = "running"    # under STAMPS_DIR
CLAIM_LOCKS_DIR = "claims"  # under STATE_DIR/LOCKS_DIR: held while a batch task reads and writes a claim
VISIBILITY = "visibility.npz"
DUMMY_GT = "dummy_gt.jsonl"
EVALUATORS_DIR = "evaluators"  # scenes/{scene_id}/evaluators/{name}/: ground truth per evaluator configuration
QUESTIONS_DIR = "questions"  # scenes/{scene_id}/questions/{question id}/: index.html's per-question pictures
TIMELINE = "timeline.png"  # scenes/{scene_id}/timeline.png: the timeline vistest run draws
SCORE_DIR = "score"
BUDGET_DIR = "budget"  # RUN_DIR/budget/{n}_frame.jsonl: read by vistest score when RUN_DIR has no budget file
DUMMY_KEY_CHARS = 16  # hex digits of a dummy's content key in its file name
ALLBLACK = "allblack"  # the dummy mode with one video per scene (no key in its name)

_BUDGET_FILE = re.compile(rf"^{FOLDER_PATTERN}\.jsonl$")
_BUDGET_DIR = re.compile(FOLDER_PATTERN)
_DUMMY_FILE = re.compile(rf"[0-9a-f]{{{DUMMY_KEY_CHARS}}}\.mp4")


def budget_video_path(scene_id: str, budget: BudgetValue) -> str:
    """``{n}_frame/{scene_id}.mp4`` (``all_frame`` for all frames): the ReVSI release layout."""
    return f"{Budget.parse(budget).folder}/{scene_id}.mp4"


def dummy_video_path(scene_id: str, mode: str, key: str, budget: BudgetValue | None = None) -> str:
    """Full-length dummies (``budget`` None): ``dummy_{mode}/{scene_id}/{key[:16]}.mp4``
    (``dummy_allblack/{scene_id}.mp4``). Budget dummies: ``dummy_{mode}/{n}_frame/{scene_id}/{key[:16]}.mp4``
    (``dummy_allblack/{n}_frame/{scene_id}.mp4``): the ReVSI ``{n}_frame`` folder inside the mode's."""
    folder = f"dummy_{mode}" if budget is None else f"dummy_{mode}/{Budget.parse(budget).folder}"
    if mode == ALLBLACK:
        return f"{folder}/{scene_id}.mp4"
    return f"{folder}/{scene_id}/{key[:DUMMY_KEY_CHARS]}.mp4"


def is_budget_folder(name: str) -> bool:
    """Whether ``name`` is a budget folder's name (``16_frame``, ``all_frame``); scene ids may not be."""
    return bool(_BUDGET_DIR.fullmatch(name))


def is_dummy_file(name: str) -> bool:
    """Is ``name`` the file name of a content-keyed dummy (``{key16}.mp4``)?"""
    return _DUMMY_FILE.fullmatch(name) is not None


def dummy_scene_dirs(run_dir: str | os.PathLike, scene_id: str) -> list[Path]:
    """The existing folders of the scene's content-keyed dummies (every mode but allblack):
    ``RUN_DIR/dummy_{mode}/{scene_id}/`` (full length) and ``RUN_DIR/dummy_{mode}/{n}_frame/{scene_id}/``."""
    root = Path(run_dir)
    found = [d for d in root.glob(f"dummy_*/{scene_id}") if d.is_dir()]
    found += [d for d in root.glob(f"dummy_*/*_frame/{scene_id}") if d.is_dir() and is_budget_folder(d.parent.name)]
    return sorted(found)


def budget_file_name(budget: BudgetValue) -> str:
    """``{n}_frame.jsonl`` (the ReVSI subset name: ``16_frame``, ``all_frame``)."""
    return Budget.parse(budget).file_name


def budget_of_file(name: str) -> str | None:
    """The budget label (``"16"``, ``"all"``) of a ``{n}_frame.jsonl`` file name, else None."""
    m = _BUDGET_FILE.match(name)
    return m.group(1) if m else None


def evaluator_dir(run_dir: str | os.PathLike, scene_id: str, name: str) -> Path:
    """``RUN_DIR/scenes/{scene_id}/evaluators/{name}``: a folder of ``{n}_frame.jsonl`` files
    (``all_frame.jsonl``) for one evaluator configuration, readable as a scene folder."""
    return scene_dir(run_dir, scene_id) / EVALUATORS_DIR / name


def evaluator_file(scene_id: str, name: str, budget: BudgetValue = "all") -> str:
    """``scenes/{scene_id}/evaluators/{name}/{budget}_frame.jsonl`` (default ``all_frame.jsonl``),
    relative to the run folder."""
    return f"{SCENES_DIR}/{scene_id}/{EVALUATORS_DIR}/{name}/{budget_file_name(budget)}"


def scene_dir(run_dir: str | os.PathLike, scene_id: str) -> Path:
    """``RUN_DIR/scenes/{scene_id}``."""
    return Path(run_dir) / SCENES_DIR / scene_id


def scene_dirs(run_dir: str | os.PathLike) -> list[Path]:
    """Every ``RUN_DIR/scenes/*/`` folder (sorted; hidden ones left out)."""
    root = Path(run_dir) / SCENES_DIR
    return sorted(p for p in root.glob("*") if p.is_dir() and not p.name.startswith("."))


def scene_lock_path(run_dir: str | os.PathLike, scene_id: str) -> Path:
    """``RUN_DIR/.vistest/locks/{scene_id}.lock``: the lock of the scene's files (vistest.videos.manifest)."""
    return Path(run_dir) / STATE_DIR / LOCKS_DIR / f"{scene_id}.lock"


def scene_record_path(run_dir: str | os.PathLike, scene_id: str) -> Path:
    """``RUN_DIR/.vistest/records/{scene_id}.json``: the record of the scene's files (vistest.videos.manifest)."""
    return Path(run_dir) / STATE_DIR / RECORDS_DIR / f"{scene_id}.json"


def scene_video_dirs(run_dir: str | os.PathLike, scene_id: str) -> list[Path]:
    """Every existing folder that may hold the scene's videos (or their temporary files): the
    budget folders ``{n}_frame/``, the dummy folders of every mode and budget
    (``dummy_allblack/[{n}_frame/]``) and :func:`dummy_scene_dirs`. Folders other scenes share
    are included: only the scene's own names (``{scene_id}.mp4``) in them are its files."""
    root = Path(run_dir)
    found = [d for d in root.glob("*_frame") if d.is_dir() and is_budget_folder(d.name)]
    found += [d for d in root.glob("dummy_*") if d.is_dir()]
    found += [d for d in root.glob("dummy_*/*_frame") if d.is_dir() and is_budget_folder(d.name)]
    return sorted(found) + dummy_scene_dirs(root, scene_id)


def manifest_path(run_dir: str | os.PathLike) -> Path:
    """``RUN_DIR/manifest.jsonl``."""
    return Path(run_dir) / MANIFEST


def failed_path(run_dir: str | os.PathLike) -> Path:
    """``RUN_DIR/failed.jsonl``: one line per scene a batch could not finish (vistest.batch)."""
    return Path(run_dir) / FAILED


def claim_path(run_dir: str | os.PathLike, scene_id: str) -> Path:
    """``RUN_DIR/.vistest/running/{scene_id}.json``: the batch task working on a scene now, or
    one that was lost (vistest.batch.claims)."""
    return Path(run_dir) / STAMPS_DIR / CLAIMS_DIR / f"{scene_id}.json"


def claim_lock_path(run_dir: str | os.PathLike, scene_id: str) -> Path:
    """``RUN_DIR/.vistest/locks/claims/{scene_id}.lock``: the ``flock`` lock a batch task holds while it
    reads the scene's claim and writes its own (vistest.batch.claims.take: one claim at a time). It
    stays, empty, as the scene locks do."""
    return Path(run_dir) / STATE_DIR / LOCKS_DIR / CLAIM_LOCKS_DIR / f"{scene_id}.lock"


def sheets_dir(run_dir: str | os.PathLike) -> Path:
    """``RUN_DIR/sheets``: default folder of ``vistest sheet``."""
    return Path(run_dir) / SHEETS_DIR


def score_dir(run_dir: str | os.PathLike) -> Path:
    """``RUN_DIR/score``: default output folder of ``vistest score -r RUN_DIR``."""
    return Path(run_dir) / SCORE_DIR
