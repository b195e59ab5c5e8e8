"""Which task is working on a scene: ``RUN_DIR/.vistest/running/{scene_id}.json``, a *claim*.

A batch task writes its claim (batch run id, attempt, host, process id and start time, the
stage it is in) before anything else, rewrites it as the scene moves from stage to stage, and
removes it when it ends, whatever the outcome. A claim therefore outlives its task only when
the task's process was lost (SIGKILL, out-of-memory killer, node lost). The next attempt
finds it and:

* counts the attempt (attempts of one batch run: the lost claim's attempt + 1);
* removes what the lost attempt left half-written: temporary files beside the scene's
  outputs (vistest.atomic) and its spool folders (vistest.layout.SPOOL_PREFIX);
* notes in its outcome which attempt was lost, where, and in which stage.

A claim of a process that is still alive on this host means another run is writing the scene
now: the task stops (:class:`SceneClaimed`) instead of writing beside it, and its batch reports the
scene ``busy`` and leaves everything of it alone (issue #44: it used to fail the scene and remove
the other run's finished outputs). A claim is read and written under a short ``flock`` lock
(vistest.layout.claim_lock_path), so two batches cannot both take it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

from .. import layout
from ..atomic import ensure_folder, output_errors, parse_work_name, temp_target, write_atomic
from ..errors import InputError
from ..layout import SPOOL_PREFIX


@dataclass(frozen=True)
class Claim:
    """``run``: the batch run's id; ``attempt``: 1, 2, ... within it; ``host``, ``pid`` and
    ``pid_start`` (the process's start time in clock ticks since boot, from /proc; 0 when
    unknown) identify the process; ``stage``: vistest.pipeline.STAGES."""

    run: str
    attempt: int
    host: str
    pid: int
    pid_start: int
    stage: str

    def describe(self) -> str:
        return f"attempt {self.attempt} (pid {self.pid} on {self.host}, stage {self.stage})"


def _process_start(pid: int) -> int:
    """Start time of process ``pid`` (clock ticks after boot; /proc/PID/stat field 22), 0 if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return 0


def alive_here(claim: Claim) -> bool:
    """Whether the claim's process is running on this host (same pid and start time)."""
    if claim.host != socket.gethostname() or claim.pid == os.getpid():
        return False
    try:
        os.kill(claim.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return not claim.pid_start or claim.pid_start == _process_start(claim.pid)


def read_claim(run_dir: str | os.PathLike, scene_id: str) -> Claim | None:
    """The scene's claim, None when there is none (or it cannot be read)."""
    try:
        doc = json.loads(layout.claim_path(run_dir, scene_id).read_text(encoding="utf-8"))
        return Claim(str(doc["run"]), int(doc["attempt"]), str(doc["host"]), int(doc["pid"]),
                     int(doc.get("pid_start", 0)), str(doc["stage"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_claim(run_dir: str | os.PathLike, scene_id: str, claim: Claim) -> None:
    path = layout.claim_path(run_dir, scene_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(dataclasses.asdict(claim), sort_keys=True) + "\n")


class SceneClaimed(InputError):
    """The scene is claimed by a live process on this host (another batch writing it now): this run
    leaves it alone (vistest.batch.run: status ``busy``; nothing of the scene removed or recorded)."""


def busy(run_dir: str | os.PathLike, scene_id: str) -> SceneClaimed | None:
    """The :class:`SceneClaimed` error when a live process on this host holds the scene's claim, else None."""
    old = read_claim(run_dir, scene_id)
    if old is None or not alive_here(old):
        return None
    return SceneClaimed(f"{layout.claim_path(run_dir, scene_id)}: scene {scene_id} is being written by pid "
                        f"{old.pid} on {old.host} ({old.stage}); two runs must not write one scene at once")


@contextlib.contextmanager
def _claim_lock(run_dir: str | os.PathLike, scene_id: str):
    """Hold the scene's claim lock (vistest.layout.claim_lock_path, ``flock``) within the block: the
    claim is read and written by one task at a time, so two batches cannot both find it free."""
    path = layout.claim_lock_path(run_dir, scene_id)
    ensure_folder(path.parent, "lock folder")
    with output_errors(path, "cannot open the claim lock"):
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def take(run_dir: str | os.PathLike, scene_id: str, run_id: str) -> tuple[Claim, Claim | None]:
    """Claim the scene for this process, exclusively (issue #44: under the claim lock, so that of two
    batches starting the scene at once one gets it): (our claim, the lost claim found, if any). A lost
    attempt's leftovers are removed. :class:`SceneClaimed` when a live process on this host holds it."""
    with _claim_lock(run_dir, scene_id):
        held = busy(run_dir, scene_id)
        if held is not None:
            raise held
        old = read_claim(run_dir, scene_id)
        attempt = old.attempt + 1 if old is not None and old.run == run_id else 1
        ours = Claim(run_id, attempt, socket.gethostname(), os.getpid(), _process_start(os.getpid()), "scene")
        if old is not None:
            remove_leftovers(run_dir, scene_id)
        write_claim(run_dir, scene_id, ours)
    return ours, old


def release(run_dir: str | os.PathLike, scene_id: str) -> None:
    """Remove the scene's claim (the task ends)."""
    layout.claim_path(run_dir, scene_id).unlink(missing_ok=True)


def leftovers(run_dir: str | os.PathLike, scene_id: str) -> list[Path]:
    """What a lost attempt at ``scene_id`` may have left half-written under ``run_dir``: its
    spool folders (``.vistest-spool-{scene_id}.{tag}``, in the run folder) and every temporary file (vistest.atomic)
    that would have replaced a file of this scene: one whose folder path below the top level
    names the scene (``dummy_*/{scene_id}/``, ``scenes/{scene_id}/``) or whose own name does
    (``16_frame/{scene_id}.mp4``). Scene ids are unique in a run folder."""
    run_dir = Path(run_dir)
    found = []
    for root, dirs, files in os.walk(run_dir):
        rel = Path(root).relative_to(run_dir).parts
        if rel[:1] == (layout.STAMPS_DIR,):
            dirs[:] = []
            continue
        for d in list(dirs):
            tag = parse_work_name(d, SPOOL_PREFIX)
            if tag is not None and tag.stem == scene_id:
                found.append(Path(root) / d)
                dirs.remove(d)
        for f in files:
            target = temp_target(f)
            if target is not None and (scene_id in rel[1:] or Path(target).stem == scene_id):
                found.append(Path(root) / f)
    return sorted(found)


def remove_leftovers(run_dir: str | os.PathLike, scene_id: str) -> list[Path]:
    """Remove :func:`leftovers`; returns what was removed."""
    gone = leftovers(run_dir, scene_id)
    for p in gone:
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
    return gone


def clear_lost(run_dir: str | os.PathLike, scene_id: str) -> Claim | None:
    """After a task was given up (its last attempt lost): remove its leftovers and its claim;
    returns the claim (its stage is where the scene was lost), None when there was none."""
    old = read_claim(run_dir, scene_id)
    if old is not None and not alive_here(old):
        remove_leftovers(run_dir, scene_id)
        release(run_dir, scene_id)
    return old
