"""The output folder of an export: atomic, idempotent writes, video links, and the record.

Every export writes into one folder ``OUT`` and ends by writing ``OUT/vistest_export.json``
(:data:`RECORD`): the format, the run directory, the parts written (configs, tasks, files)
with their row counts, the rows left out of each part and why, every file it owns, and
warnings. Rules:

* ``OUT`` must be empty, new, or hold an export of the same format (its record says so);
  anything else is refused, so an export never overwrites files it did not write.
* Files are written atomically (temporary file beside the destination, then rename) and
  only when their bytes change: a rerun on an unchanged run directory rewrites nothing, so
  file times and the caches keyed on them (``datasets``) stay valid.
* A file the previous export owned and this one does not is deleted (with folders left
  empty); files the export never wrote are never touched.
* The record is written last: an interrupted export leaves the previous record, and the
  rerun finishes the job. Into a new or empty folder, a provisional record
  (``"complete": false``, no files) is written first, so a folder left by a killed first export
  is recognised as this format's, and its rerun owns every file in it. Temporary files that
  killed exports left (made on this host by a process that has ended; vistest.atomic) are
  removed when an export starts.

Two exports into one folder are serialised: :class:`OutputFolder` holds the folder's lock
(``OUT/.vistest_export.lock``, :data:`LOCK`: the ``flock`` of vistest.videos.manifest.SceneLock,
released when the holder ends, however it ends) from its check of the folder to the record
written by :meth:`OutputFolder.finish`; a second export waits, saying for whom, then checks the
folder as the first left it. The lock file stays (removing a lock file another process waits on
would let a third one in); it is no file of the export (not listed, never removed by it).

Videos are placed by :meth:`OutputFolder.video` as a hard link (default: no extra disk, and
the export keeps the exact bytes its ground truth was made for even when a later ``vistest
run`` replaces the run's file), a symbolic link (absolute target), or a copy; a hard link
across file systems falls back to a copy, with a warning. The run's videos are checked against
their records before any is placed (vistest.eval.exporters.rundir.verify_videos), and a copy
must have the size of its source before it is renamed into place; a full disk or a folder that
cannot be written is an error naming the file.
"""
from __future__ import annotations

import contextlib
import errno
import gc
import json
import os
import shutil
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from ...errors import InputError, OutputError
from ... import freshness
from ...atomic import output_errors, parse_temp_name, remove_stale_tree, replace_output, temp_path_for, write_atomic
from ...videos.manifest import SceneBusy, SceneLock
from ...videos.plan import file_key

RECORD = "vistest_export.json"
LOCK = ".vistest_export.lock"  # the folder's lock (module docstring)
LINK_MODES = ("hard", "symlink", "copy")

# why a row is not in a part
LEFT_UNANSWERABLE = "unanswerable"                # real row whose frames do not support an answer
LEFT_UNKNOWN = "unknown_frames"                   # 2D: real row whose answer turns on frames the annotation lacks


def unanswerable_rows(rows: Iterable[Any]) -> list[tuple[str, list]]:
    """The real rows with no answer, by why: (LEFT_UNANSWERABLE, rows), (LEFT_UNKNOWN, rows) (status ``unknown``,
    2D scenes: docs/tracks2d.md)."""
    rows = [r for r in rows if not r.answerable]
    return [(LEFT_UNANSWERABLE, [r for r in rows if r.status != "unknown"]),
            (LEFT_UNKNOWN, [r for r in rows if r.status == "unknown"])]
LEFT_UNSCORABLE = "unscorable_ground_truth"       # e.g. an appearance order given as a list of ids
LEFT_NO_REVSI_TYPE = "no_revsi_question_type"     # revsi: a VSI-Bench type the ReVSI task cannot prompt
LEFT_NO_VIDEO = "no_video"                        # dummy with no frame left to write
LEFT_VISTEST_ONLY = "vistest_scored_answer"       # an open answer or the abstention phrase (lmms-eval-task scores it)
LEFT_NO_TARGET_TYPE = "no_target_question_type"   # vlmevalkit: a type the --target class builds no prompt for
LEFT_NO_OPTIONS = "mcq_without_options"           # vlmevalkit: a multiple-choice row without options to prompt


@dataclass(frozen=True)
class Part:
    """One unit an evaluator loads: a ReVSI config, an lmms-eval task, a TSV, a JSONL.
    ``name``: its name; ``file``: its data file (relative to OUT); ``rows``: rows in it."""

    name: str
    file: str
    rows: int


@dataclass(frozen=True)
class LeftOut:
    """``n`` rows of ``question_type`` not written to ``part`` for ``reason`` (LEFT_*)."""

    part: str
    reason: str
    question_type: str
    n: int


def count_left_out(part: str, reason: str, rows: Iterable[Any]) -> list[LeftOut]:
    """LeftOut records of ``rows`` (anything with ``question_type``), one per type, sorted."""
    c = Counter(r.question_type for r in rows)
    return [LeftOut(part, reason, t, n) for t, n in sorted(c.items())]


def unsupported_warning(target: str, rows: Sequence[Any]) -> str:
    """The one warning of an export that left out the rows ``target`` cannot prompt for
    (``--skip-unsupported``, the default): their count, per question type (the row's own)."""
    c = Counter(r.question_type for r in rows)
    return (f"{len(rows)} row(s) {target} cannot prompt for, left out (--skip-unsupported): "
            + ", ".join(f"{t} {n}" for t, n in sorted(c.items()))
            + "; 'vistest export lmms-eval-task' prompts every vistest type (docs/export.md)")


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote. ``files``: every file it owns, relative to ``out``, sorted;
    ``written``/``unchanged``: how many of them were (re)written or already up to date;
    ``removed``: files of the previous export no longer part of it; ``info``: format-specific
    facts (e.g. the scoring protocol of an lmms-eval task folder)."""

    format: str
    run_dir: Path
    out: Path
    parts: tuple[Part, ...]
    left_out: tuple[LeftOut, ...]
    files: tuple[str, ...]
    written: int
    unchanged: int
    removed: tuple[str, ...]
    warnings: tuple[str, ...]
    info: Mapping[str, Any] = field(default_factory=dict)

    def left_out_total(self, part: str | None = None, reason: str | None = None) -> int:
        """Rows left out (of one part / for one reason, or all)."""
        return sum(x.n for x in self.left_out if part in (None, x.part) and reason in (None, x.reason))

    def to_json(self) -> dict:
        """The record (``vistest_export.json``); no time stamps, so a rerun writes the same bytes."""
        return {"format": self.format, "rules": freshness.stamp("export"), "run_dir": str(self.run_dir),
                "info": dict(self.info), "parts": [vars(p) for p in self.parts],
                "left_out": [vars(x) for x in self.left_out], "files": list(self.files),
                "warnings": list(self.warnings)}

    def summary_text(self) -> str:
        """Rows per part and what was left out, as a terminal table."""
        w = max([len("part")] + [len(p.name) for p in self.parts])
        lines = [f"export {self.format}: {self.run_dir} -> {self.out}", f"  {'part':<{w}}  {'rows':>5}  left out"]
        for p in self.parts:
            c = Counter()
            for x in self.left_out:
                if x.part == p.name:
                    c[x.reason] += x.n
            lines.append(f"  {p.name:<{w}}  {p.rows:>5}  " + (", ".join(f"{k} {v}" for k, v in sorted(c.items()))
                                                             or "-"))
        lines.append(f"  files: {self.written} written, {self.unchanged} up to date, {len(self.removed)} removed")
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines) + "\n"


class OutputFolder:
    """The folder of one export (see the module docstring). Call :meth:`text` and
    :meth:`video` for every file, then :meth:`finish`."""

    def __init__(self, out: str | os.PathLike, fmt: str, run_root: Path):
        self.out = Path(out).resolve()
        self.fmt = fmt
        self.run_root = run_root
        self.owned: dict[str, None] = {}  # insertion-ordered set of relative paths
        self.written = 0
        self.unchanged = 0
        self.warnings: list[str] = []
        self.created: list[Path] = []  # files this export made where none was (removed again if it cannot finish)
        self.provisional = False  # this export wrote the provisional record
        self._lock: SceneLock | None = None
        self._precheck()
        self._lock = self._acquire()
        try:
            self.previous = self._check()
        except BaseException:
            self.release()
            raise

    def _precheck(self) -> None:
        """The refusals that need no lock, made before the lock file is created (a refused
        folder gets no file from vistest)."""
        if self.out == self.run_root:
            raise InputError(f"{self.out}: -o: the export folder must not be the run directory itself")
        if self.out.exists() and not self.out.is_dir():
            raise InputError(f"{self.out}: -o: expected a folder, found a file")
        # the lock and temporary files may be another export's first moments: checked again under the lock
        if not (self.out / RECORD).is_file():
            self._refuse_foreign(lambda p: p.name != LOCK and parse_temp_name(p.name) is None)

    def _acquire(self) -> SceneLock:
        """Hold ``OUT/.vistest_export.lock`` (waiting, with one line on stderr, while another
        export holds it). An export of this process that failed may still hold it until its
        object is collected: collected first, before waiting."""
        for wait in (False, True):
            lock = SceneLock(self.out, "export", wait=wait, what="the export lock")
            lock.path = self.out / LOCK
            lock.on_wait = lambda _msg, lock=lock: sys.stderr.write(
                f"vistest: waiting for {self.out}: another export is writing there ({lock.holder()})\n")
            try:
                return lock.__enter__()
            except SceneBusy:
                gc.collect()  # releases the lock of an abandoned OutputFolder of this process, if any
        raise AssertionError("unreachable")

    def release(self) -> None:
        """Release the folder's lock (done by :meth:`finish`; also when the object goes)."""
        lock, self._lock = getattr(self, "_lock", None), None
        if lock is not None:
            lock.__exit__(None, None, None)

    def __del__(self) -> None:
        self.release()

    def _check(self) -> list[str]:
        """Refuse unsafe destinations (after :meth:`_precheck`, under the lock); return the files
        the previous export owned."""
        record = self.out / RECORD
        if record.is_file():
            try:
                prev = json.loads(record.read_text(encoding="utf-8"))
                fmt, files = prev["format"], prev["files"]
            except (OSError, ValueError, KeyError, TypeError):
                raise InputError(f"{record}: not a vistest export record (expected JSON with format and files); "
                                 f"delete it or choose another folder") from None
            if not isinstance(files, list):
                raise InputError(f"{record}: files: expected the list of files the export wrote, got "
                                 f"{type(files).__name__}; delete it or choose another folder")
            if fmt != self.fmt:
                raise InputError(f"{record}: format: this folder holds a {fmt!r} export, not {self.fmt!r}; choose "
                                 f"another folder")
            remove_stale_tree(self.out)  # temporary files of killed exports
            if prev.get("complete") is False:  # a first export into this folder was killed: all of it is ours
                return sorted(p.relative_to(self.out).as_posix() for p in self.out.rglob("*")
                              if (p.is_file() or p.is_symlink()) and p != record and p.name != LOCK)
            return [str(f) for f in files]
        self._refuse_foreign(lambda p: p.name != LOCK)
        write_atomic(record, json.dumps({"format": self.fmt, "complete": False,
                                         "files": []}, indent=1) + "\n")
        self.provisional = True
        return []

    def _refuse_foreign(self, counts) -> None:
        """Refuse an OUT without an export record that holds a file ``counts`` (a Path -> bool) keeps."""
        if self.out.is_dir() and any(counts(p) for p in self.out.iterdir()):
            raise InputError(f"{self.out}: -o: folder is not empty and holds no {RECORD}; an export only writes "
                             f"into a new, empty or previously exported folder")

    def path(self, rel: str) -> Path:
        """The absolute path of ``rel`` ('/'-separated, relative to OUT), now owned."""
        if rel in self.owned:
            raise AssertionError(f"export writes {rel} twice")
        self.owned[rel] = None
        dst = self.out / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        return dst

    def text(self, rel: str, content: str) -> Path:
        """Write ``content`` (UTF-8) to ``OUT/rel`` atomically, unless it already holds it."""
        dst = self.path(rel)
        new = not dst.exists()
        with self._unstage_on_output_error(dst):
            changed = write_atomic(dst, content)
        if new:
            self.created.append(dst)
        if changed:
            self.written += 1
        else:
            self.unchanged += 1
        return dst

    @contextlib.contextmanager
    def _unstage_on_output_error(self, dst: Path) -> Iterator[None]:
        """On an OutputError writing ``dst`` (a full disk, a folder that cannot be written): remove
        the files this export created where none was and, when it wrote the provisional record, that
        record too (files it replaced stay: the previous record still lists them and a rerun rewrites
        them), with the folders left empty, release the lock, and raise it."""
        try:
            yield
        except OutputError:
            for p in [*self.created, *([self.out / RECORD] if self.provisional else [])]:
                if p.is_file() or p.is_symlink():
                    p.unlink()
                    _remove_empty_parents(p.parent, self.out)
            _remove_empty_parents(dst.parent, self.out)
            self.release()
            raise

    def video(self, rel: str, src: Path, mode: str) -> Path:
        """Place ``src`` at ``OUT/rel`` by ``mode`` (:data:`LINK_MODES`), atomically; an up-to-date
        destination (same inode, same link target, or same bytes) is left alone."""
        if mode not in LINK_MODES:
            raise InputError(f"--link: expected one of {', '.join(LINK_MODES)}, got {mode!r}")
        dst = self.path(rel)
        if _up_to_date(dst, src, mode):
            self.unchanged += 1
            return dst
        new = not (dst.exists() or dst.is_symlink())
        made: list[Path] = []  # known before it is created: an interrupt at any point removes it (atomic_path)
        try:
            tmp = temp_path_for(dst, register=made.append)
            with self._unstage_on_output_error(dst):
                with output_errors(dst):
                    tmp.unlink()
                    if mode == "symlink":
                        os.symlink(src, tmp)
                    elif (mode == "hard" and not self._hard_link(src, tmp)) or mode == "copy":
                        shutil.copyfile(src, tmp)
                        if tmp.stat().st_size != src.stat().st_size:
                            raise OutputError(f"{dst}: the copy of {src} holds {tmp.stat().st_size} bytes, the "
                                              f"source {src.stat().st_size}; not keeping it")
                replace_output(tmp, dst)
        finally:
            if made and (made[-1].is_symlink() or made[-1].exists()):
                made[-1].unlink()
        if new:
            self.created.append(dst)
        self.written += 1
        return dst

    def _hard_link(self, src: Path, tmp: Path) -> bool:
        """Hard-link ``src`` to ``tmp``; False (and a warning, once) where the file system refuses."""
        try:
            os.link(src, tmp)
            return True
        except OSError as e:
            if e.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                raise
            msg = f"videos copied: cannot hard-link from {self.run_root} into {self.out} ({e.strerror})"
            if msg not in self.warnings:
                self.warnings.append(msg)
            return False

    def finish(self, parts: Sequence[Part], left_out: Sequence[LeftOut], warnings: Sequence[str] = (),
               info: Mapping[str, Any] | None = None) -> ExportResult:
        """Delete what the previous export owned and this one does not, then write the record."""
        keep = set(self.owned) | {RECORD, LOCK}
        removed = []
        for rel in self.previous:
            p = self.out / rel
            if rel in keep or os.path.isabs(rel) or ".." in Path(rel).parts:
                continue
            if p.is_file() or p.is_symlink():
                p.unlink()
                removed.append(rel)
                _remove_empty_parents(p.parent, self.out)
        result = ExportResult(self.fmt, self.run_root, self.out, tuple(parts), tuple(left_out),
                              tuple(sorted(self.owned)), self.written, self.unchanged, tuple(sorted(removed)),
                              tuple(self.warnings) + tuple(warnings), dict(info or {}))
        record = self.out / RECORD
        text = json.dumps(result.to_json(), indent=1, ensure_ascii=False) + "\n"
        with self._unstage_on_output_error(record):
            write_atomic(record, text)  # not when it holds this text already
        self.release()
        return result


def _up_to_date(dst: Path, src: Path, mode: str) -> bool:
    if mode == "symlink":
        return dst.is_symlink() and os.readlink(dst) == str(src)
    if dst.is_symlink() or not dst.is_file():
        return False
    same = os.path.samefile(dst, src)
    if same:
        return mode == "hard"
    # a copy (or a hard link's fallback copy) is up to date when it holds the same bytes
    return dst.stat().st_size == src.stat().st_size and file_key(dst) == file_key(src)


def _remove_empty_parents(folder: Path, stop: Path) -> None:
    while folder != stop and stop in folder.parents and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent
