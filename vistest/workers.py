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
* :func:`prestart` spawns a child before its work is known, so that it starts Python and imports
  what that work needs while this process reads its inputs; the next :func:`call_in_child`
  hands its call to that child instead of spawning one (the ``vistest`` command starts one for
  ``run`` and ``videos``: vistest.launch). A spare never called exits when this process closes
  its end or ends.
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


def _serve_one(conn, parent_pid: int, prepare: str | None) -> None:
    """A child's life: ignore Ctrl-C, die with the parent, run ``prepare`` (``"module:function"``,
    imports for the work to come; a failure there is left to the call, which meets it again), then
    wait for one call ``(fn, args, kwargs)`` on ``conn``, answer ``("ok", result)`` or
    ``("error", exception, traceback text)``, and end. The parent closing ``conn`` first (a spare it
    never needed): end at once."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops this process
    die_with_parent(parent_pid)
    if prepare:
        try:
            import importlib

            module, _, name = prepare.partition(":")
            getattr(importlib.import_module(module), name)()
        except Exception:
            pass
    try:
        fn, args, kwargs = conn.recv()
    except (EOFError, OSError):  # the parent needed no call: nothing to do
        os._exit(0)
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
    child, issue #47). :func:`_serve_one` and the functions given to :func:`call_in_child` live in
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


class _Child:
    """A spawned child running :func:`_serve_one` (a daemon: multiprocessing ends it if this process
    exits first), and this process's end of its pipe."""

    def __init__(self, prepare: str | None = None):
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        self.environ = dict(os.environ)  # what the child inherits
        self.conn, theirs = ctx.Pipe()
        self.proc = ctx.Process(target=_serve_one, args=(theirs, os.getpid(), prepare), daemon=True)
        with _main_not_rerun():
            self.proc.start()
        theirs.close()

    def call(self, fn: Callable, args: tuple, kwargs: dict) -> tuple | None:
        """Send the call, wait for the answer (a message of :func:`_serve_one`); the child is
        killed if this ends otherwise (Ctrl-C, SIGTERM as SystemExit). None: the child was gone
        before the call could be sent; raises ChildLost when it ends without an answer."""
        try:
            try:
                self.conn.send((fn, args, kwargs))
            except ConnectionError:  # broken pipe, reset: ended already
                return None
            try:
                msg = self.conn.recv()
            except (EOFError, ConnectionError):  # ended (a socket pair: reset when the call was still unread)
                self.proc.join()
                raise ChildLost(f"vistest worker process {self.proc.pid} ended without an answer "
                                f"({describe_exit(self.proc.exitcode)})", self.proc.exitcode) from None
            self.proc.join()
            return msg
        finally:
            self.close()

    def close(self) -> None:
        """Close the pipe (a child still waiting for its call then ends) and kill a child still running."""
        self.conn.close()
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()


_spare: _Child | None = None


def prestart(prepare: str | None = None) -> None:
    """Spawn the child the next :func:`call_in_child` will use, now: it starts Python and runs
    ``prepare`` (``"module:function"``, e.g. the imports of the work to come) while this process
    goes on. One spare at a time (a second call keeps the first). It inherits the environment of
    now: a call made once the environment has changed (``vistest run --ffmpeg`` sets VISTEST_FFMPEG)
    gets a new child instead. Never called, it ends with this process (or once :func:`drop_spare`
    closes its pipe)."""
    global _spare
    if _spare is None:
        _spare = _Child(prepare)


def drop_spare() -> None:
    """End the prestarted child, if any, unused."""
    global _spare
    spare, _spare = _spare, None
    if spare is not None:
        spare.close()


def call_in_child(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` in a spawned child process (which :func:`die_with_parent`; the one
    :func:`prestart` started, when there is one, it still runs and this process's environment is
    the one it inherited); its return value, or its
    exception raised here. ``fn`` and the arguments must pickle. Leaving early (Ctrl-C, SIGTERM as
    SystemExit) kills the child. A child that dies without an answer (killed, out of memory) raises
    :class:`ChildLost` naming its exit status."""
    global _spare
    spare, _spare = _spare, None
    if spare is not None and spare.environ != dict(os.environ):  # it inherited another environment
        spare.close()
        spare = None
    msg = None if spare is None else spare.call(fn, args, kwargs)  # None: no spare, or it was gone
    if msg is None:
        child = _Child()
        msg = child.call(fn, args, kwargs)
        if msg is None:
            raise ChildLost(f"vistest worker process {child.proc.pid} ended before its call "
                            f"({describe_exit(child.proc.exitcode)})", child.proc.exitcode)
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
