"""The run folder's bookkeeping: the manifest, the scene locks, the scene records, stale files.

* ``RUN_DIR/manifest.jsonl`` lists every video of every scene of a run folder (vistest.layout),
  one JSON object per line, sorted by (``scene_id``, ``path``); its fields are in
  docs/videos.md (each line carries the video's ``bytes`` and ``sha256``). It is rewritten under
  a short exclusive lock (``.manifest.lock``, :func:`shared_lock`) keeping the lines of other
  scenes byte for byte, so scenes can be written in parallel into one folder.
* **The scene lock** (:class:`SceneLock`, ``RUN_DIR/.vistest/locks/{scene_id}.lock``) is held by
  a run for all its work on a scene: another run of the same scene into the same folder waits
  for it (or, without waiting, stops with an error naming the holder); runs of different scenes
  never wait for each other, except for the moments they hold the shared lock. Locks are
  ``flock`` locks: the system releases them when the holder ends, however it ends.
* **The scene record** (``RUN_DIR/.vistest/records/{scene_id}.json``, :func:`write_scene_record`)
  says what the scene's last completed run wrote: every file (videos, visibility, ground truth)
  with its size, sha256 and modification time, the inputs (scene.json, the video, the questions,
  and as one record the mesh or depth images occlusion read: vistest.atomic.files_record), the
  options and the scene's manifest lines. :func:`check_scene` tells from it, cheaply (sizes and times; hashes only
  when a time changed, or when asked), whether the scene is complete and up to date.
* **Stale files** (:func:`remove_stale_files`): temporary files and work folders left by a run
  that was killed (``kill -9``) are recognised by the process and host in their names
  (vistest.atomic) and removed by the next run of the scene.
"""
from __future__ import annotations

import contextlib
import datetime
import fcntl
import hashlib
import json
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from .. import freshness, layout
from ..atomic import check_file, check_files, ensure_folder, file_record, output_errors, remove_stale, write_atomic
from ..errors import InputError
from ..jsonl import iter_jsonl, parse_json, read_text
from .plan import VariantPlan

RECORD_FORMAT = "vistest.scene-record/1"

REQUIRED = ("scene_id", "path", "variant", "source_frames", "num_frames", "size")


def read_manifest(run_dir: str | os.PathLike) -> list[dict]:
    """The records of ``RUN_DIR/manifest.jsonl`` (docs/videos.md); InputError naming file, line and field."""
    path = layout.manifest_path(run_dir)
    if not path.is_file():
        raise InputError(f"{path}: not found; expected the manifest 'vistest run' writes into its output folder")
    out = []
    for n, rec in iter_jsonl(read_text(path, InputError, "manifest").splitlines(), str(path), InputError):
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
    path = layout.manifest_path(outdir)
    with shared_lock(outdir):
        rows: list[tuple[str, str, str]] = []
        if path.is_file():
            for n, line in enumerate(read_text(path, InputError, "manifest").splitlines(), start=1):
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


# ---------------------------------------------------------------------------------------
# locks
# ---------------------------------------------------------------------------------------
@contextlib.contextmanager
def shared_lock(outdir: str | os.PathLike) -> Iterator[None]:
    """Hold ``RUN_DIR/.manifest.lock`` (exclusive, blocking): the short lock around every
    read-modify-write of a file all scenes share (``manifest.jsonl``, ``index.html``)."""
    outdir = ensure_folder(outdir)
    lock_path = outdir / layout.MANIFEST_LOCK
    with output_errors(lock_path, "cannot open the lock"):
        lock = open(lock_path, "a")
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


class SceneBusy(InputError):
    """Another run holds the scene's lock and the caller would not wait."""


class SceneLock:
    """The lock of one scene's files in a run folder (module docstring), a context manager.

    ``wait``: block until the holder is done (default), else raise :class:`SceneBusy` naming
    it; ``on_wait``: called once with a one-line message when the lock is held by another run.
    While held, the lock file says who holds it (process, host, time, command), for that message.
    """

    def __init__(self, run_dir: str | os.PathLike, scene_id: str, wait: bool = True,
                 on_wait: Callable[[str], None] | None = None, what: str = "the scene lock"):
        self.run_dir, self.scene_id, self.wait, self.on_wait = Path(run_dir), scene_id, wait, on_wait
        self.what = what  # the lock in error messages (an export folder's: "the export lock")
        self.path = layout.scene_lock_path(run_dir, scene_id)
        self._fd: int | None = None

    def holder(self) -> str:
        """Who holds the lock, as its file says (or "another run")."""
        try:
            info = json.loads(self.path.read_text(encoding="utf-8") or "{}")
            return (f"process {info['pid']} on {info['host']} (since {info['since']}: "
                    f"{info.get('command', '?')})")
        except (OSError, ValueError, KeyError, TypeError):
            return "another run"

    def __enter__(self) -> "SceneLock":
        ensure_folder(self.path.parent, "lock folder")
        with output_errors(self.path, f"cannot open {self.what}"):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                who = self.holder()
                if not self.wait:
                    raise SceneBusy(f"{self.run_dir}: scene {self.scene_id} is being written there by {who} (lock "
                                    f"{self.path}); wait for it to finish, or write into another folder") from None
                if self.on_wait is not None:
                    self.on_wait(f"waiting for scene {self.scene_id} in {self.run_dir}: it is being written by {who}")
                fcntl.flock(fd, fcntl.LOCK_EX)
            info = {"pid": os.getpid(), "host": socket.gethostname(),
                    "since": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                    "command": " ".join(sys.argv)[:300]}
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def __exit__(self, *exc) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)  # releases the flock


# ---------------------------------------------------------------------------------------
# stale files
# ---------------------------------------------------------------------------------------
def remove_stale_files(outdir: str | os.PathLike, scene_id: str, spool: str | os.PathLike | None = None) -> list[Path]:
    """Remove what killed runs left (vistest.atomic.remove_stale), with the scene's lock held:
    every temporary file of the scene's own files (its videos, its ``scenes/{scene_id}/``
    files and those of ``scenes/{scene_id}/evaluators/*/``, its record) and its work folders
    in ``outdir``, whoever made them; in ``outdir``'s shared places (``manifest.jsonl``,
    ``index.html``) and in ``spool`` (another work folder location), those of
    processes of this host that have ended."""
    outdir = Path(outdir)
    gone = remove_stale(outdir, work_prefix=layout.SPOOL_PREFIX)
    gone += remove_stale(outdir, [scene_id], locked=True, work_prefix=layout.SPOOL_PREFIX)
    if spool is not None and Path(spool).resolve() != outdir.resolve():
        gone += remove_stale(spool, work_prefix=layout.SPOOL_PREFIX)
    own = set(layout.dummy_scene_dirs(outdir, scene_id)) | {layout.scene_dir(outdir, scene_id)}
    for d in layout.scene_video_dirs(outdir, scene_id):
        gone += remove_stale(d, None if d in own else [scene_id], locked=True)
    gone += remove_stale(layout.scene_dir(outdir, scene_id), locked=True)
    evaluators = layout.scene_dir(outdir, scene_id) / layout.EVALUATORS_DIR
    for d in sorted(evaluators.iterdir()) if evaluators.is_dir() else ():
        if d.is_dir():  # each evaluator configuration's ground truth (vistest.pipeline.commit_scene)
            gone += remove_stale(d, locked=True)
    gone += remove_stale(layout.scene_record_path(outdir, scene_id).parent, [scene_id], locked=True)
    gone += remove_stale(outdir / layout.STATE_DIR)
    return gone


# ---------------------------------------------------------------------------------------
# the scene record
# ---------------------------------------------------------------------------------------
def options_key(options: Mapping[str, Any]) -> str:
    """sha256 of the options' canonical JSON (sorted keys, no spaces)."""
    return hashlib.sha256(json.dumps(options, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


def read_scene_record(outdir: str | os.PathLike, scene_id: str) -> dict | None:
    """The scene's record (module docstring), or None when there is none or it is unreadable
    (then nothing of the scene is trusted: a rerun checks every output)."""
    path = layout.scene_record_path(outdir, scene_id)
    try:
        doc = parse_json(read_text(path, InputError, "scene record"), str(path), InputError)
    except InputError:
        return None
    if not isinstance(doc, dict) or doc.get("format") != RECORD_FORMAT or not isinstance(doc.get("files"), dict):
        return None
    return doc


def write_scene_record(outdir: str | os.PathLike, scene_id: str, files: Mapping[str, Mapping],
                       inputs: Mapping[str, Mapping], options: Mapping[str, Any], command: str,
                       manifest: Sequence[Mapping[str, Any]] = ()) -> Path:
    """Write the scene's record atomically: ``files`` ({path relative to RUN_DIR: {bytes,
    sha256, mtime_ns[, key]}}), ``inputs`` ({name: {path, bytes, sha256, mtime_ns}}; ``occlusion``:
    a vistest.atomic.files_record),
    ``options`` (and their key), ``command`` (``run`` or ``videos``), ``manifest``: the scene's
    manifest lines (what vistest.batch merges into ``manifest.jsonl``)."""
    doc = {"format": RECORD_FORMAT, "scene_id": scene_id, "command": command,
           "inputs": dict(inputs), "options": dict(options), "options_key": options_key(options),
           "files": {p: dict(files[p]) for p in sorted(files)}, "manifest": [dict(r) for r in manifest]}
    path = layout.scene_record_path(outdir, scene_id)
    ensure_folder(path.parent, "record folder")
    write_atomic(path, record_text(doc))
    return path


def record_text(doc: Mapping[str, Any]) -> str:
    """A scene record as JSON text (keys sorted; ``default=str``): a line per top-level key, and a line
    per entry of its ``files`` and ``manifest``, each line written by json's C encoder. (``indent=``
    makes json fall back to its pure-Python encoder: 80 ms of CPU for the demo's 1.5 MB record, a
    tenth of that now; issue #47.)"""
    def one(v: Any) -> str:
        return json.dumps(v, sort_keys=True, default=str)

    lines = []
    for k in sorted(doc):
        v = doc[k]
        if k == "files" and isinstance(v, Mapping) and v:
            text = "{\n" + ",\n".join(f"  {one(str(p))}: {one(v[p])}" for p in sorted(v)) + "\n }"
        elif k == "manifest" and isinstance(v, (list, tuple)) and v:
            text = "[\n" + ",\n".join(f"  {one(r)}" for r in v) + "\n ]"
        else:
            text = one(v)
        lines.append(f" {one(str(k))}: {text}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def input_record(path: str | os.PathLike, known: Mapping | None = None) -> dict:
    """``{path (absolute), bytes, sha256, mtime_ns}`` of an input file (``known``: its earlier
    record, whose hash is reused while the size and time are unchanged)."""
    path = Path(path).resolve()
    return {"path": str(path), **file_record(path, known if known and known.get("path") == str(path) else None)}


@dataclass(frozen=True)
class SceneStatus:
    """What :func:`check_scene` found. ``complete``: the scene's last run completed and every
    file it wrote is there as written; ``current``: also its inputs and options are the ones
    given; ``reasons``: why not (one line each); ``record``: the record read (None: none)."""

    scene_id: str
    complete: bool
    current: bool
    reasons: tuple[str, ...]
    record: Mapping[str, Any] | None


def check_scene(outdir: str | os.PathLike, scene_id: str, inputs: Mapping[str, str | os.PathLike] | None = None,
                options: Mapping[str, Any] | None = None, verify: bool = False) -> SceneStatus:
    """Whether scene ``scene_id`` of run folder ``outdir`` is complete and up to date, from its
    record: every recorded file must match (vistest.atomic.check_file: size always, sha256
    when its modification time changed or ``verify``); every recorded input must still match
    (the video included), and those given in ``inputs`` ({name: path}, e.g. ``scene``,
    ``questions``) must be the recorded files; ``options`` (as the record keeps them) must have
    the recorded key, and their rules versions the recorded ones (each changed rule set is named:
    vistest.freshness.changes). Cheap when nothing changed: one ``stat`` per file. Takes no lock: a run
    of the scene in progress shows as incomplete or not current."""
    outdir = Path(outdir)
    rec = read_scene_record(outdir, scene_id)
    if rec is None:
        return SceneStatus(scene_id, False, False, (f"{layout.scene_record_path(outdir, scene_id)}: no record: the "
                                                    f"scene was never completed in this folder",), None)
    reasons = []
    for p, frec in rec["files"].items():
        why = check_file(outdir / p, frec, verify)
        if why is not None:
            reasons.append(f"{outdir / p}: {why}")
    complete = not reasons
    for name, irec in (rec.get("inputs") or {}).items():
        if not isinstance(irec, dict):
            reasons.append(f"input {name}: not recorded")
        elif "files" in irec:  # a set of files: the mesh or depth images occlusion read
            why = check_files(irec, verify)
            if why is not None:
                reasons.append(f"input {name} ({len(irec['files'])} file(s) below {irec.get('root')}): {why}")
        else:
            why = check_file(irec.get("path", ""), irec, verify)
            if why is not None:
                reasons.append(f"input {name} {irec.get('path')}: {why}")
    for name, given in (inputs or {}).items():
        irec = (rec.get("inputs") or {}).get(name)
        if not isinstance(irec, dict) or irec.get("path") != str(Path(given).resolve()):
            reasons.append(f"input {name}: {given} is not the recorded input "
                           f"{irec.get('path') if isinstance(irec, dict) else '(none)'}")
    if options is not None:
        if "rules" in options:  # the stamp the caller's options carry (vistest.pipeline.record_options)
            reasons += freshness.changes((rec.get("options") or {}).get("rules"), "scene record", options["rules"])
        others = {k: v for k, v in options.items() if k != "rules"}
        kept = {k: v for k, v in (rec.get("options") or {}).items() if k != "rules"}
        if rec.get("options_key") != options_key(options) and options_key(others) != options_key(kept):
            reasons.append("the options differ from the recorded run's")
    return SceneStatus(scene_id, complete, not reasons, tuple(reasons), rec)
