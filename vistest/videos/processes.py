"""The ffmpeg processes and temporary files of one write, kept so that a failure or an
interruption can stop and remove them all (stage 5).

A :class:`Processes` registers every encoder it starts, every ffmpeg command it runs and
every temporary output it creates; :meth:`Processes.abort` kills the processes and removes
the temporary files. Ctrl-C raises KeyboardInterrupt; :func:`signals_as_exit` turns SIGTERM
into SystemExit so that the same cleanup runs. Safe to use from several threads (the
stream-copy check and the verification decodes run in threads).
"""
from __future__ import annotations

import contextlib
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

from ..atomic import ensure_folder, temp_path_for
from .ffmpeg import VideoError, VideoWriter, ffmpeg_exe, ffmpeg_failure


class Processes:
    """Every live encoder (:class:`VideoWriter`), ffmpeg command and temporary file of one write."""

    def __init__(self):
        self.live: list[VideoWriter] = []
        self.procs: list[subprocess.Popen] = []
        self.temps: list[Path] = []
        self.aborted = False
        self._lock = threading.Lock()

    def temp(self, dest: Path) -> Path:
        """A new empty temporary file beside ``dest`` (vistest.atomic.temp_path_for), registered."""
        def register(t: Path) -> None:
            with self._lock:
                self.temps.append(t)

        return temp_path_for(dest, register)

    def drop_temp(self, tmp: Path) -> None:
        """Remove the registered temporary file ``tmp`` (an output not kept)."""
        tmp.unlink(missing_ok=True)
        with self._lock:
            self.temps.remove(tmp)

    def release(self) -> None:
        """Forget every temporary file: they are the caller's now (or in place), not removed by
        :meth:`abort`."""
        with self._lock:
            self.temps.clear()

    def start(self, w: VideoWriter) -> VideoWriter:
        """Start the encoder ``w`` (creating its folder), registered until :meth:`finished`."""
        ensure_folder(w.path.parent, "folder")  # w.path already includes outdir
        self.live.append(w)
        w.start()
        with self._lock:
            self.temps.append(w.temp_path)
        return w

    def finished(self, w: VideoWriter) -> None:
        """``w`` has exited (its temporary output stays registered)."""
        self.live.remove(w)

    def run(self, args: list[str], what: str, stdout=subprocess.DEVNULL) -> bytes:
        """Run one ffmpeg command (killed on abort); its standard output (with ``stdout`` PIPE);
        VideoError naming ``what`` on failure."""
        err = tempfile.TemporaryFile()
        with self._lock:
            if self.aborted:
                err.close()
                raise VideoError(f"{what}: not started, the writer was stopped")
            try:
                proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=stdout, stderr=err)
            except OSError as e:
                err.close()
                raise VideoError(f"{what}: cannot start ffmpeg {ffmpeg_exe()!r}: {e}") from None
            self.procs.append(proc)
        try:
            try:
                out, _ = proc.communicate()
            except BaseException:  # interrupted: stop ffmpeg before anyone removes its output
                proc.kill()
                proc.wait()
                raise
            if proc.returncode != 0:
                err.seek(0)
                raise ffmpeg_failure(what, proc.returncode, err.read())
            return out or b""
        finally:
            with self._lock:
                self.procs.remove(proc)
            err.close()

    def abort(self) -> None:
        """Kill every live encoder and ffmpeg process (none starts after this), then remove every
        registered temporary file."""
        for w in self.live:
            w.abort()
        self.live.clear()
        with self._lock:
            self.aborted = True
            procs = list(self.procs)
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        for t in list(self.temps):
            if t.exists():
                t.unlink()
        self.temps.clear()


@contextlib.contextmanager
def signals_as_exit():
    """Within the block, SIGTERM raises SystemExit(143) in the main thread, so that the
    same cleanup as for Ctrl-C (KeyboardInterrupt) runs: encoders killed, temporary and
    work files removed. Outside the main thread it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise SystemExit(128 + signum)

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
