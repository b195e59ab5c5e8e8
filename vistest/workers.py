"""Work in child processes that die quietly with their parent.

* :func:`call_in_child` runs one function in a fresh (spawned) Python process and returns its
  result, or raises its exception here (an InputError stays an InputError, so the error
  contract holds across the process boundary). ``vistest run`` computes visibility this way so
  that the Numba engine's compiled code never joins the video writer's process.
* :func:`die_with_parent` (called in every child this module starts; usable as the
  ``initializer`` of a ``multiprocessing`` or ``concurrent.futures`` pool) makes a worker exit
  at once, silently, when its parent process ends, however it ends (``kill -9`` included):
  no orphan keeps computing, and none prints a ``BrokenPipeError`` traceback when it finally
  tries to hand back a result nobody reads.
* A child ignores Ctrl-C (SIGINT): a terminal sends it to the whole process group, and the
  parent, which gets it too, stops the child. A child that ends without an answer (killed by a
  signal: the out-of-memory killer, a kill) raises :class:`ChildLost` in the parent, never a hang;
  vistest.batch treats it as an infrastructure failure (retried), not as bad input.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import traceback
from typing import Any, Callable

PARENT_POLL_S = 0.2  # how often a child checks that its parent still runs


def available_memory_mb() -> float:
    """Memory available to new processes (MB): MemAvailable of /proc/meminfo, else the total."""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20


class ChildLost(RuntimeError):
    """A child process ended without an answer: killed by a signal, not by bad input or a bug.
    ``exitcode``: the child's exit status (negative: killed by that signal)."""

    def __init__(self, message: str, exitcode: int | None = None):
        super().__init__(message)
        self.exitcode = exitcode


def describe_exit(code: int | None) -> str:
    """``killed by SIGKILL`` for a negative exit status (multiprocessing's convention), else
    ``exit status N``."""
    import signal

    if code is not None and code < 0 and -code in signal.valid_signals():
        return f"killed by {signal.Signals(-code).name}"
    return f"exit status {code}"


def die_with_parent(parent_pid: int | None = None, poll_s: float = PARENT_POLL_S, terminate: bool = False) -> None:
    """Start a daemon thread that ends this process as soon as its parent is gone (the parent id
    changes, e.g. to 1 or a subreaper, once the parent died): at once and silently
    (``os._exit(0)``), or with ``terminate`` by sending it SIGTERM, so that a handler
    (vistest.videos.processes.signals_as_exit) runs the cleanup a stopped run owes (a batch worker
    removes its temporary files and releases its claim). ``parent_pid``: the parent to watch
    (default: the current parent)."""
    import signal

    parent = os.getppid() if parent_pid is None else parent_pid

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        if terminate:
            os.kill(os.getpid(), signal.SIGTERM)
        else:
            os._exit(0)

    threading.Thread(target=watch, name="vistest-die-with-parent", daemon=True).start()


def _child(conn, parent_pid: int, fn: Callable, args: tuple, kwargs: dict) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops this process
    die_with_parent(parent_pid)
    try:
        msg = ("ok", fn(*args, **kwargs))
    except BaseException as e:  # handed to the parent, which raises it there
        msg = ("error", e, traceback.format_exc())
    try:
        conn.send(msg)
    except (BrokenPipeError, ConnectionResetError, EOFError):  # the parent is gone: nobody to tell
        os._exit(0)
    except Exception as e:  # the exception cannot be pickled: send its text
        conn.send(("error", RuntimeError(f"{type(e).__name__} in a vistest worker: {msg[-1]}"), ""))
    finally:
        conn.close()
    # The answer is sent: end now. The interpreter's own shutdown (module teardown, the Numba
    # and OpenGL libraries' exit handlers) takes most of a second and has nothing left to do.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


@contextlib.contextmanager
def _main_not_rerun():
    """While a child is spawned, the parent's ``__main__`` is not named to it: multiprocessing's
    spawn would otherwise run the parent's main script again in the child (for the ``vistest``
    console script, ``from vistest.cli import main``: every command's imports, ~0.2 s of CPU per
    child, issue #47). :func:`_child` and the functions given to :func:`call_in_child` live in
    importable modules (they pickle by module name), so the child needs nothing of ``__main__``."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or path is None or getattr(main.__spec__, "name", None) is not None:
        yield
        return
    del main.__file__
    try:
        yield
    finally:
        main.__file__ = path


def call_in_child(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` in a spawned child process (which :func:`die_with_parent`); its
    return value, or its exception raised here. ``fn`` and the arguments must pickle. Leaving
    early (Ctrl-C, SIGTERM as SystemExit) kills the child. A child that dies without an answer
    (killed, out of memory) raises :class:`ChildLost` naming its exit status."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, os.getpid(), fn, args, kwargs), daemon=True)
    with _main_not_rerun():
        proc.start()
    send.close()
    try:
        try:
            msg = recv.recv()
        except EOFError:
            proc.join()
            raise ChildLost(f"vistest worker process {proc.pid} ended without an answer "
                            f"({describe_exit(proc.exitcode)})", proc.exitcode) from None
        proc.join()
    finally:
        recv.close()
        if proc.is_alive():
            proc.kill()
            proc.join()
    if msg[0] == "ok":
        return msg[1]
    from .errors import InputError

    if isinstance(msg[1], InputError) or not msg[2]:
        raise msg[1]
    raise msg[1] from RemoteTraceback(msg[2])


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker (shown as the cause of the re-raised one)."""

    def __str__(self) -> str:
        return "\n" + self.args[0]
