"""Atomic outputs, the names of temporary files, and records of what was written.

* **Atomic writes.** An output is written to a temporary file in the destination folder, then
  renamed onto its name: a killed run never leaves a half-written file under the final name.
* **Unchanged files are left alone.** A write whose bytes are those the destination already
  holds (a regular file, not a link) replaces nothing (:func:`write_atomic`, :func:`atomic_path`,
  :class:`StagedFiles`): the file keeps its modification time, so the records that carry it
  (a scene record's ``mtime_ns``) do not change either, and a rerun that computes the same
  outputs leaves every file byte for byte and time for time as it was. A file's time is then
  when its present content was first written.
* **Temporary names say who made them**: ``.{stem}.{rand}_{pid}_{host}.tmp{suffix}`` (the
  suffix is kept so tools that pick a format from it, such as ffmpeg or numpy, still do), and
  work folders ``{prefix}{rand}_{pid}_{host}``. A later run recognises a stale one
  (:func:`is_stale`: made on this host by a process that no longer runs, or covered by a lock
  the caller holds) and removes it (:func:`remove_stale`). Names of older vistest versions
  (``.{stem}.{rand}.tmp{suffix}``, no process) are stale only under such a lock.
* **Errors name the path.** An OSError the environment causes while writing (a folder that is
  not writable, a full disk, a file size limit: vistest.errors.ENVIRONMENT_ERRNOS) becomes an
  :class:`~vistest.errors.OutputError` naming the destination (exit status 2), never a bare
  ``[Errno 28] No space left on device`` (:func:`output_errors` around the write;
  :func:`replace_output`, the one place a finished temporary file is renamed onto its name).
* **Records** (:func:`file_record`, :func:`check_file`): a file's size, sha256 and
  modification time when it was written; a file matches its record when its size is the
  recorded one and, unless its modification time is the recorded one too, its sha256 is
  (``verify`` always hashes). A set of files (a scene's depth images) has one record of the
  same kind (:func:`files_record`, :func:`check_files`): digests over its files' sizes and
  times, and over their contents.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shutil
import socket
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping

from .errors import is_environment_error, output_error

HASH_CHUNK = 1 << 20  # bytes read at a time when hashing a file
_TAG = r"(?P<rand>[0-9a-f]{8})(?:_(?P<pid>\d+)_(?P<host>[A-Za-z0-9-]*))?"
_TEMP_RE = re.compile(rf"^\.(?P<stem>.+)\.{_TAG}\.tmp(?P<suffix>\.[A-Za-z0-9]+)?$")
_WORK_TAG_RE = re.compile(rf"^(?P<head>.*)\.{_TAG.replace('[0-9a-f]{8}', '[0-9a-z_]{8}')}$")


# ---------------------------------------------------------------------------------------
# who made a temporary name
# ---------------------------------------------------------------------------------------
def host_name() -> str:
    """This machine's name as temporary names carry it (letters, digits and '-', at most 32)."""
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:32]


def process_tag() -> str:
    """``{rand}_{pid}_{host}``: 8 random hex digits, this process's id and :func:`host_name`."""
    return f"{secrets.token_hex(4)}_{os.getpid()}_{host_name()}"


@dataclass(frozen=True)
class Tag:
    """What a temporary name says: ``stem`` (the destination's name without suffix, or the work
    folder's prefix), ``pid`` and ``host`` (None in names of older versions)."""

    stem: str
    pid: int | None
    host: str | None


def parse_temp_name(name: str) -> Tag | None:
    """The :class:`Tag` of a temporary file name (``.{stem}.{tag}.tmp{suffix}``), else None."""
    m = _TEMP_RE.match(name)
    if m is None:
        return None
    return Tag(m["stem"], int(m["pid"]) if m["pid"] else None, m["host"] if m["pid"] else None)


def parse_work_name(name: str, prefix: str) -> Tag | None:
    """The :class:`Tag` of a work folder ``{prefix}{head}.{tag}`` (``stem`` = head), else None.
    Older versions named them ``{prefix}{head}.{8 random characters}``."""
    if not name.startswith(prefix):
        return None
    m = _WORK_TAG_RE.match(name[len(prefix):])
    if m is None:
        return None
    return Tag(m["head"], int(m["pid"]) if m["pid"] else None, m["host"] if m["pid"] else None)


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this machine (any user's)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_stale(tag: Tag, locked: bool = False) -> bool:
    """Whether the temporary file or work folder ``tag`` names is left over: ``locked`` (the
    caller holds the lock that covers it: nobody else can be writing it) and not this
    process's, or made on this host by a process that has ended. A name from another host, or
    without a process (older versions), is stale only when ``locked``."""
    mine = tag.pid == os.getpid() and tag.host == host_name()
    if locked:
        return not mine
    return tag.pid is not None and tag.host == host_name() and not mine and not pid_alive(tag.pid)


def remove_stale(folder: str | os.PathLike, stems: Iterable[str] | None = None, locked: bool = False,
                 work_prefix: str | None = None) -> list[Path]:
    """Remove the stale temporary files in ``folder`` (not below it; :func:`is_stale`): with
    ``stems``, only those of files with these stems; with ``work_prefix``, also stale work
    folders ``{work_prefix}{stem}.{tag}`` (of these stems, if given). Returns what was removed."""
    folder = Path(folder)
    want = None if stems is None else set(stems)
    gone = []
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return gone
    for e in entries:
        tag = parse_temp_name(e.name)
        is_dir = False
        if tag is None and work_prefix is not None:
            tag, is_dir = parse_work_name(e.name, work_prefix), True
        if tag is None or (want is not None and tag.stem not in want) or not is_stale(tag, locked):
            continue
        path = Path(e.path)
        if is_dir and e.is_dir(follow_symlinks=False):
            shutil.rmtree(path, ignore_errors=True)
        elif not is_dir:
            path.unlink(missing_ok=True)
        else:
            continue
        gone.append(path)
    return gone


# ---------------------------------------------------------------------------------------
# atomic writes
# ---------------------------------------------------------------------------------------
@contextlib.contextmanager
def output_errors(path: str | os.PathLike, what: str = "cannot write"):
    """Within the block, an OSError the environment causes (vistest.errors.is_environment_error:
    not writable, disk full, ...) becomes an OutputError naming ``path`` (``PATH: WHAT (reason)``);
    any other exception passes unchanged."""
    try:
        yield
    except OSError as e:
        if not is_environment_error(e):
            raise
        raise output_error(path, e, what) from None


def remove_stale_tree(root: str | os.PathLike) -> None:
    """:func:`remove_stale` in ``root`` and every folder below it (symbolic links not followed);
    nothing when ``root`` is not a folder."""
    root = Path(root)
    if root.is_dir():
        for folder in [root, *(p for p in root.rglob("*") if p.is_dir() and not p.is_symlink())]:
            remove_stale(folder)


def ensure_folder(path: str | os.PathLike, what: str = "output folder") -> Path:
    """Create ``path`` (and its parents) if needed; OutputError naming it when the environment
    refuses (a file in the way, not writable, read-only)."""
    path = Path(path)
    with output_errors(path, f"cannot create the {what}"):
        path.mkdir(parents=True, exist_ok=True)
    return path


def check_writable(folder: str | os.PathLike, what: str = "output folder") -> Path:
    """Create ``folder`` if needed and check that a file can be created in it (by creating and
    removing a temporary one); OutputError naming the folder otherwise. The temporary files that
    ended processes of this host left in it (a killed command: :func:`remove_stale`) are removed."""
    folder = ensure_folder(folder, what)
    remove_stale(folder)
    with output_errors(folder, f"cannot write into the {what}"):
        tmp = temp_path_for(folder / "write-test")
    tmp.unlink(missing_ok=True)
    return folder


def temp_path_for(path: str | os.PathLike, register: Callable[[Path], None] | None = None) -> Path:
    """Create (empty) and return a temporary file beside ``path``, with the same suffix, named
    ``.{stem}.{rand}_{pid}_{host}.tmp{suffix}`` (module docstring).

    ``register``: called with the temporary path just before the file is created, so that a
    caller interrupted at any point (Ctrl-C) already knows what to remove. OutputError naming
    ``path`` when the folder cannot be created or written."""
    path = Path(path)
    ensure_folder(path.parent, "folder")
    while True:
        tmp = path.parent / f".{path.stem}.{process_tag()}.tmp{path.suffix}"
        if register is not None:
            register(tmp)
        with output_errors(path):
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the mode open() would give
            except FileExistsError:  # (EEXIST, which output_errors would take for the environment's)
                continue
        os.close(fd)
        return tmp


def temp_target(name: str) -> str | None:
    """The file name a temporary file named ``name`` (by :func:`temp_path_for`) was to
    replace (``.x.ab12cd34.tmp.mp4`` -> ``x.mp4``), None when ``name`` is not one."""
    m = _TEMP_RE.match(name)
    return None if m is None else m["stem"] + (m["suffix"] or "")


def holds(path: str | os.PathLike, data: bytes) -> bool:
    """Whether ``path`` is a regular file (not a link) holding exactly ``data``."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(data):
            return False
        with open(path, "rb") as f:
            return f.read() == data
    except OSError:
        return False


def same_file_bytes(a: str | os.PathLike, b: str | os.PathLike, chunk: int = HASH_CHUNK) -> bool:
    """Whether regular files (not links) ``a`` and ``b`` hold the same bytes (sizes first, then
    ``chunk``-byte pieces: constant memory); False when either is missing or unreadable."""
    try:
        sa, sb = os.lstat(a), os.lstat(b)
        if not (stat.S_ISREG(sa.st_mode) and stat.S_ISREG(sb.st_mode)) or sa.st_size != sb.st_size:
            return False
        with open(a, "rb") as fa, open(b, "rb") as fb:
            while True:
                x, y = fa.read(chunk), fb.read(chunk)
                if x != y:
                    return False
                if not x:
                    return True
    except OSError:
        return False


def replace_output(tmp: str | os.PathLike, dest: str | os.PathLike, keep_same: bool = False) -> bool:
    """Put a finished temporary file in place: rename it onto ``dest`` (``os.replace``: atomic in
    one file system). ``keep_same``: when ``dest`` already holds the same bytes (a regular file),
    remove ``tmp`` instead and leave ``dest`` untouched (its time too). Returns whether ``dest``
    was replaced. A full disk or a permission problem becomes an OutputError naming ``dest``."""
    with output_errors(dest):
        if keep_same and same_file_bytes(tmp, dest):
            os.unlink(tmp)
            return False
        os.replace(tmp, dest)
    return True


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, keep_same: bool = True):
    """Yield a temporary path to write; on success it replaces ``path`` (:func:`replace_output`:
    with ``keep_same``, not when ``path`` already holds the same bytes), else it is removed.
    An environment OSError raised in the block (disk full, ...) becomes an OutputError naming ``path``.

    The temporary file is known before it is created (:func:`temp_path_for`'s ``register``), so an
    interrupt at any point (SIGTERM as SystemExit, Ctrl-C), even while it is being created, removes
    it: a batch worker stopped while rewriting its claim left ``.vistest/running/.{id}.*.tmp.json``."""
    made: list[Path] = []  # the last one registered is the file temp_path_for creates
    try:
        tmp = temp_path_for(path, register=made.append)
        with output_errors(path):
            yield tmp
        replace_output(tmp, path, keep_same)
    finally:
        if made and made[-1].exists():
            made[-1].unlink()


def write_atomic(path: str | os.PathLike, data: str | bytes) -> bool:
    """Write text (UTF-8) or bytes to ``path`` atomically; when ``path`` already holds these
    bytes (:func:`holds`), write nothing and leave it untouched, its modification time included
    (module docstring). Returns whether ``path`` was written."""
    if holds(path, data.encode("utf-8") if isinstance(data, str) else data):
        return False
    with atomic_path(path, keep_same=False) as tmp:
        if isinstance(data, str):
            tmp.write_text(data, encoding="utf-8")
        else:
            tmp.write_bytes(data)
    return True


class StagedFiles:
    """A set of outputs that belong together (a score report, the contact sheets of a run), put
    in place together, as a scene's videos are (vistest.videos.staging: staged, then committed).

    Each file is written to a temporary file beside its destination (:func:`temp_path_for`: the
    name says which process made it); :meth:`commit` renames them all onto their names once every
    one is written (renames in one folder tree: milliseconds; a destination that already holds
    the staged bytes is left untouched, :func:`replace_output` with ``keep_same``) and removes
    the destinations given to :meth:`remove`. An error or interrupt before the commit removes
    the temporary files (:meth:`discard`; the context manager does both), so the previous set
    stays whole; after a ``kill -9`` they are stale and the next command's :func:`remove_stale`
    removes them.
    """

    def __init__(self) -> None:
        self.staged: dict[Path, Path] = {}  # destination -> temporary file
        self.removed: list[Path] = []

    def path(self, dest: str | os.PathLike) -> Path:
        """A new temporary file (empty) to write ``dest``'s content into."""
        dest = Path(dest)
        if dest in self.staged:
            raise AssertionError(f"{dest} staged twice")
        self.staged[dest] = temp_path_for(dest, register=lambda tmp: self.staged.__setitem__(dest, tmp))
        return self.staged[dest]

    def write(self, dest: str | os.PathLike, data: str | bytes) -> None:
        """Stage ``dest`` with text (UTF-8) or bytes."""
        tmp = self.path(dest)
        with output_errors(dest):
            tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)

    def drop(self, dest: str | os.PathLike) -> None:
        """Forget a staged ``dest`` (its temporary file removed): it is not part of the set."""
        tmp = self.staged.pop(Path(dest), None)
        if tmp is not None:
            tmp.unlink(missing_ok=True)

    def remove(self, dest: str | os.PathLike) -> None:
        """Remove ``dest`` at the commit (a file of the previous set that this one has not)."""
        self.drop(dest)
        self.removed.append(Path(dest))

    def commit(self) -> list[Path]:
        """Rename every staged file onto its destination (not those that already hold its
        bytes), remove the :meth:`remove` ones; returns the destinations replaced."""
        done = []
        for dest, tmp in list(self.staged.items()):
            if replace_output(tmp, dest, keep_same=True):
                done.append(dest)
            del self.staged[dest]
        for dest in self.removed:
            dest.unlink(missing_ok=True)
        return done

    def discard(self) -> None:
        """Remove the temporary files not yet committed."""
        for tmp in self.staged.values():
            tmp.unlink(missing_ok=True)
        self.staged.clear()

    def __enter__(self) -> "StagedFiles":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        self.discard()


# ---------------------------------------------------------------------------------------
# records of written files
# ---------------------------------------------------------------------------------------
def sha256_file(path: str | os.PathLike, chunk: int = HASH_CHUNK) -> str:
    """sha256 (hex) of a file's bytes, read in ``chunk``-byte pieces (constant memory)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def file_record(path: str | os.PathLike, known: Mapping | None = None) -> dict:
    """``{"bytes", "sha256", "mtime_ns"}`` of a file. ``known``: an earlier record of it whose
    sha256 is reused when the file still has its size and modification time (no hashing)."""
    st = os.stat(path)
    if known and known.get("bytes") == st.st_size and known.get("mtime_ns") == st.st_mtime_ns and known.get("sha256"):
        sha = known["sha256"]
    else:
        sha = sha256_file(path)
    return {"bytes": st.st_size, "sha256": sha, "mtime_ns": st.st_mtime_ns}


def check_file(path: str | os.PathLike, record: Mapping, verify: bool = False) -> str | None:
    """Why ``path`` does not match ``record`` (``bytes``, ``sha256``, optional ``mtime_ns``),
    or None when it does: missing; another size (always checked); else, when ``verify`` or its
    modification time is not the recorded one, another sha256."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "missing"
    if st.st_size != record.get("bytes"):
        return f"{st.st_size} bytes, {record.get('bytes')} were recorded"
    if not verify and record.get("mtime_ns") is not None and record.get("mtime_ns") == st.st_mtime_ns:
        return None
    if sha256_file(path) != record.get("sha256"):
        return "its sha256 differs from the recorded one"
    return None


def _files_stat(root: Path, files: Iterable[str]) -> tuple[str, int]:
    """(sha256 of each file's ``relative path, size, mtime_ns`` line, total bytes); OSError
    (FileNotFoundError) when one is missing."""
    h, total = hashlib.sha256(), 0
    for rel in files:
        st = os.stat(root / rel)
        total += st.st_size
        h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest(), total


def _files_content(root: Path, files: Iterable[str]) -> str:
    """sha256 of each file's ``relative path, sha256`` line: a content key of the set that
    does not depend on where the folder lies or when its files were written."""
    h = hashlib.sha256()
    for rel in files:
        h.update(f"{rel}\0{sha256_file(root / rel)}\n".encode())
    return h.hexdigest()


def files_record(root: str | os.PathLike, paths: Iterable[str | os.PathLike], known: Mapping | None = None) -> dict:
    """The record of a set of files below ``root`` (e.g. the mesh and depth images a
    visibility table is computed from): ``{"root": absolute root, "files": [paths relative
    to it, '/'-separated, sorted], "bytes": total, "stat": sha256 over each file's relative
    path, size and mtime_ns, "sha256": sha256 over each file's relative path and sha256}``.
    One record however many files (a scan has thousands of depth images). ``known``: an
    earlier record of the same set whose ``sha256`` is reused while ``stat`` is unchanged,
    so that a rerun hashes nothing (the shortcut of :func:`file_record`)."""
    root = Path(os.path.abspath(root))  # links are not resolved: the names are the set's own
    files = sorted({Path(os.path.relpath(os.path.abspath(p), root)).as_posix() for p in paths})
    stat, total = _files_stat(root, files)
    if known and known.get("root") == str(root) and known.get("files") == files and known.get("stat") == stat \
            and known.get("sha256"):
        sha = known["sha256"]
    else:
        sha = _files_content(root, files)
    return {"root": str(root), "files": files, "bytes": total, "stat": stat, "sha256": sha}


def check_files(record: Mapping, verify: bool = False) -> str | None:
    """Why the files of ``record`` (:func:`files_record`) no longer match it, or None when they
    do: a file missing (named); else, when ``verify`` or a size or modification time changed,
    another content digest. As :func:`check_file`, the times are a shortcut only: an edit
    keeping a file's size and nanosecond modification time is not seen without ``verify``."""
    root, files = Path(str(record.get("root", ""))), [str(f) for f in record.get("files") or ()]
    try:
        stat, _ = _files_stat(root, files)
    except FileNotFoundError as e:
        return f"{e.filename}: missing"
    except OSError as e:  # not readable any more: changed, as far as a record can tell
        return f"{e.filename}: {e.strerror}"
    if not verify and stat == record.get("stat"):
        return None
    if _files_content(root, files) != record.get("sha256"):
        return f"the content of its {len(files)} file(s) below {root} differs from the recorded one"
    return None
