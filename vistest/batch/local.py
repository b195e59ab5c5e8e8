"""``--engine local``: scenes in parallel on this machine, one worker process per scene.

Each scene runs in a fresh process, ``workers`` at a time, like one make target per scene: a
scene's memory is returned when it ends, and a process that dies takes only its own scene with
it. The processes are forked from a server process that has imported vistest once
(multiprocessing's ``forkserver``; ``spawn`` where there is none): a clean process per scene,
started in milliseconds instead of an interpreter start and the imports. Because every scene
has its own process, the engine knows exactly which scene a lost process was running (a shared pool, such as
concurrent.futures.ProcessPoolExecutor, breaks as a whole when one worker is killed and cannot
say which task did it). A process that exits without an outcome (killed by a signal, the
out-of-memory killer; or ended by the task because a child process of it was lost,
vistest.batch.task.EXIT_LOST) is an infrastructure failure: its scene is started again, up to
``retries`` times.

Interrupts: Ctrl-C (SIGINT) or SIGTERM to the driver stops every worker with SIGTERM (each
runs the pipeline's own cleanup: encoders killed, temporary and spool files removed, claim
released; a worker still running after :data:`STOP_SECONDS` is killed) and re-raises. The fork
server and the workers ignore SIGINT (:func:`start_server`): a terminal's Ctrl-C reaches the
whole process group, and only the driver acts on it, so no process still importing prints a
``KeyboardInterrupt`` traceback. If the driver itself dies (``kill -9``), the fork server ends,
and a worker whose parent (the server) ends gets SIGTERM (vistest.workers.die_with_parent),
cleans up and exits silently (its outcome has nobody to go to: no ``BrokenPipeError``).
"""
from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
import time
from collections import Counter, deque
from typing import Callable, Sequence

from ..workers import available_memory_mb, die_with_parent
from .task import EXIT_LOST, Outcome, SceneTask, lost, run_task_or_exit

STOP_SECONDS = 60.0


def available_cpus() -> int:
    """CPUs this process may run on (its affinity), else the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def default_workers(cpus_per_scene: int, memory_per_scene_mb: float) -> int:
    """Scenes at once when ``-j`` is not given: as many as the CPUs and the available memory
    allow, given what each scene declares; at least 1."""
    by_cpu = available_cpus() // max(1, cpus_per_scene)
    by_memory = int(available_memory_mb() // max(1.0, memory_per_scene_mb))
    return max(1, min(by_cpu, by_memory))


def worker_context():
    """The multiprocessing context workers start from: ``forkserver`` with vistest's task
    module preloaded (Unix), else ``spawn``."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload([__name__])
        return ctx
    return multiprocessing.get_context("spawn")


def _worker(task: SceneTask, conn) -> None:
    """A worker process: run the task, send its outcome. SIGTERM raises SystemExit here, so
    the pipeline cleans up as for Ctrl-C; then nothing is sent."""
    from ..videos.processes import signals_as_exit

    die_with_parent(terminate=True)  # the fork server gone (the driver killed): SIGTERM, the cleanup below
    with signals_as_exit():
        try:
            outcome = run_task_or_exit(task)
        except KeyboardInterrupt:  # a SIGINT sent to this process alone (the group's is ignored: start_server)
            raise SystemExit(130) from None  # ends the process quietly (no traceback), as the driver's SIGTERM does
    try:
        conn.send(outcome)
        conn.close()
    except OSError:  # BrokenPipeError & co.: the driver is gone (kill -9); nobody to tell, nothing to print
        sys.stderr.flush()
        os._exit(0)


def start_server(ctx) -> None:
    """Start ``ctx``'s fork server (and multiprocessing's resource tracker) now, with SIGINT
    ignored, so that they and every worker forked from the server ignore Ctrl-C.

    A terminal's Ctrl-C goes to the whole process group: a server or worker still importing
    would print a ``KeyboardInterrupt`` traceback. The driver alone handles Ctrl-C: it stops each
    worker with SIGTERM (the pipeline's cleanup, :func:`_worker`). Python keeps an ignored SIGINT
    ignored at start-up, and the fork server gives its children the disposition it started with.
    A Ctrl-C during the start itself (about 20 ms, once per batch) is lost: press it again.
    Does nothing for other start methods (``spawn``, where there is no fork server).
    """
    if ctx.get_start_method() != "forkserver":
        return
    from multiprocessing import forkserver

    with sigint_ignored():
        forkserver.ensure_running()


@contextlib.contextmanager
def sigint_ignored():
    """SIGINT ignored within the block (main thread only; elsewhere nothing changes): processes
    started in it inherit the ignored disposition. (Blocking it instead would not hold a Ctrl-C
    back: the kernel hands a process's signal to any thread not blocking it, e.g. a BLAS thread.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _how(exitcode: int) -> str:
    if exitcode == EXIT_LOST:
        return "a child process of the worker was lost (killed)"
    if exitcode < 0:
        try:
            return f"worker process killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"worker process killed by signal {-exitcode}"
    return f"worker process exited with status {exitcode} and no outcome"


class LocalEngine:
    """Run tasks in ``workers`` processes at once; a lost process's scene is retried up to
    ``retries`` times."""

    name = "local"

    def __init__(self, workers: int, retries: int):
        self.workers = max(1, workers)
        self.retries = max(0, retries)

    def describe(self) -> str:
        return f"local, {self.workers} worker process(es)"

    def run(self, tasks: Sequence[SceneTask], done: Callable[[Outcome], None]) -> None:
        """Run every task; ``done(outcome)`` is called here, in the caller's thread, once per
        scene as it ends (after its retries). Interrupts stop the workers and propagate."""
        ctx = worker_context()
        start_server(ctx)
        todo = deque(tasks)
        starts: Counter[str] = Counter()
        running: dict = {}  # process -> [task, receiving end, outcome or None]
        try:
            while todo or running:
                while todo and len(running) < self.workers:
                    task = todo.popleft()
                    recv, send = ctx.Pipe(duplex=False)
                    proc = ctx.Process(target=_worker, args=(task, send), name=f"vistest-batch-{task.scene_id}")
                    proc.start()
                    send.close()
                    starts[task.scene_id] += 1
                    running[proc] = [task, recv, None]
                waiting = [p.sentinel for p in running] + [e[1] for e in running.values() if e[2] is None]
                multiprocessing.connection.wait(waiting)
                for proc, entry in list(running.items()):
                    self._receive(entry)
                    if proc.exitcode is None:
                        continue
                    proc.join()
                    self._receive(entry)
                    task, recv, outcome = entry
                    recv.close()
                    del running[proc]
                    if outcome is not None:
                        done(outcome)
                    elif starts[task.scene_id] <= self.retries:
                        todo.appendleft(task)
                    else:
                        done(lost(task, starts[task.scene_id], _how(proc.exitcode)))
        except BaseException:
            self._stop(running, done)
            raise

    @staticmethod
    def _receive(entry: list) -> None:
        recv = entry[1]
        if entry[2] is None and not recv.closed:
            try:
                if recv.poll():
                    entry[2] = recv.recv()
            except (EOFError, OSError):
                pass

    def _stop(self, running: dict, done: Callable[[Outcome], None]) -> None:
        """SIGTERM every worker, wait for them (then SIGKILL), and report the outcomes that
        had already arrived (scenes finished before the interrupt)."""
        for proc in running:
            if proc.exitcode is None:
                proc.terminate()
        deadline = time.monotonic() + STOP_SECONDS
        for proc in running:
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.exitcode is None:
                proc.kill()
                proc.join()
        for entry in running.values():
            self._receive(entry)
            entry[1].close()
            if entry[2] is not None and entry[2].status == "done":
                done(entry[2])
        running.clear()
