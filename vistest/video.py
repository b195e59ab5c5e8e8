"""Video I/O through ffmpeg (minimal for now; a later stage extends this module).

* :func:`ffmpeg_exe` - the ffmpeg binary: ``$VISTEST_FFMPEG`` if set, else the one
  bundled with ``imageio-ffmpeg``. No ffprobe is needed anywhere.
* :class:`VideoWriter` - streams raw RGB24 frames (numpy ``uint8`` arrays of shape
  (H, W, 3)) into ffmpeg, which writes H.264 / yuv420p at a constant frame rate. The
  output appears atomically: ffmpeg writes a temporary file in the destination folder
  that is renamed onto the destination only when every frame was encoded; on an
  exception (or Ctrl-C) inside the ``with`` block the temporary file is removed and the
  destination is left untouched.
* :func:`count_frames` - the true number of frames, by decoding the whole video.
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from fractions import Fraction
from pathlib import Path

import ffmpeg  # ffmpeg-python: builds the command lines
import numpy as np

from .atomic import temp_path_for

__all__ = ["ffmpeg_exe", "VideoWriter", "count_frames", "VideoError"]


class VideoError(RuntimeError):
    """ffmpeg failed; the message names the file and ends with ffmpeg's own error lines."""


def ffmpeg_exe() -> str:
    """Path of the ffmpeg executable: ``$VISTEST_FFMPEG`` if set, else imageio-ffmpeg's binary."""
    exe = os.environ.get("VISTEST_FFMPEG")
    if exe:
        return exe
    import imageio_ffmpeg

    return imageio_ffmpeg.get_ffmpeg_exe()


def _rate(fps: float) -> str:
    """``fps`` as the exact rational ffmpeg expects, e.g. 29.97 -> '30000/1001', 30.0 -> '30'."""
    if not (isinstance(fps, (int, float)) and np.isfinite(fps) and fps > 0):
        raise ValueError(f"fps: expected a positive finite number, got {fps!r}")
    r = Fraction(fps).limit_denominator(1001)
    return str(r.numerator) if r.denominator == 1 else f"{r.numerator}/{r.denominator}"


def _command(stream, *global_args: str) -> list[str]:
    """[ffmpeg, global options..., stream arguments...]: global options go first, where
    every ffmpeg version honours them (ffmpeg-python would append them at the end)."""
    return [ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error", *global_args, *ffmpeg.get_args(stream)]


def _tail(data: bytes, lines: int = 15) -> str:
    """The last ``lines`` lines of ffmpeg's stderr, for error messages."""
    return "\n".join(data.decode("utf-8", "replace").strip().splitlines()[-lines:])


class VideoWriter:
    """Stream RGB frames into an H.264 (libx264, yuv420p, constant frame rate) video.

    >>> with VideoWriter("out.mp4", fps=30.0, size=(640, 480)) as w:   # doctest: +SKIP
    ...     for frame in frames:          # (480, 640, 3) uint8, RGB, row 0 = top
    ...         w.write(frame)

    ``size`` is (W, H) in pixels; both must be even (yuv420p halves the chroma planes).
    ``crf`` (0-51, lower = better) and ``preset`` are libx264's. The container follows the
    suffix of ``path`` (.mp4, .mkv, ...); mp4 gets ``+faststart``. Frame i is shown at
    time i / fps. Writing zero frames is an error (nothing is written).
    """

    def __init__(self, path: str | os.PathLike, fps: float, size: tuple[int, int], crf: int = 18,
                 preset: str = "medium"):
        self.path = Path(path)
        self.fps = float(fps)
        self.rate = _rate(fps)
        try:
            w, h = (int(v) for v in size)
        except (TypeError, ValueError):
            raise ValueError(f"{self.path}: size: expected (W, H) as two integers, got {size!r}") from None
        if w <= 0 or h <= 0 or w % 2 or h % 2:
            raise ValueError(f"{self.path}: size: expected positive even (W, H) for yuv420p H.264, got {size!r}; "
                             f"crop or pad the frames to an even size")
        self.size = (w, h)
        self.crf = int(crf)
        self.preset = preset
        self.frames_written = 0
        self._proc: subprocess.Popen | None = None
        self._tmp: Path | None = None
        self._err = None

    # ---- command ---------------------------------------------------------------------
    def command(self, out: str | os.PathLike) -> list[str]:
        """The ffmpeg argument list that encodes raw RGB24 from stdin into ``out``."""
        w, h = self.size
        src = ffmpeg.input("pipe:0", format="rawvideo", pix_fmt="rgb24", s=f"{w}x{h}", framerate=self.rate)
        opts = {"vcodec": "libx264", "pix_fmt": "yuv420p", "crf": self.crf, "preset": self.preset,
                "r": self.rate, "fps_mode": "cfr"}
        if Path(out).suffix.lower() in (".mp4", ".m4v", ".mov"):
            opts["movflags"] = "+faststart"
        return _command(ffmpeg.output(src, str(out), **opts), "-y")

    # ---- context manager -------------------------------------------------------------
    def __enter__(self) -> "VideoWriter":
        # the temporary name keeps the suffix so ffmpeg picks the container from it
        self._tmp = temp_path_for(self.path)
        self._err = tempfile.TemporaryFile()  # a file, not a pipe: ffmpeg can never block on it
        try:
            self._proc = subprocess.Popen(self.command(self._tmp), stdin=subprocess.PIPE,
                                          stdout=subprocess.DEVNULL, stderr=self._err)
        except OSError as e:
            self._cleanup()
            raise VideoError(f"{self.path}: cannot start ffmpeg {ffmpeg_exe()!r}: {e}") from None
        return self

    def write(self, frame: np.ndarray) -> None:
        """Append one frame: ``uint8`` array (H, W, 3), RGB, row 0 at the top."""
        if self._proc is None:
            raise RuntimeError(f"{self.path}: VideoWriter.write called outside its 'with' block")
        w, h = self.size
        if not isinstance(frame, np.ndarray) or frame.shape != (h, w, 3) or frame.dtype != np.uint8:
            got = f"{frame.dtype} {frame.shape}" if isinstance(frame, np.ndarray) else type(frame).__name__
            raise ValueError(f"{self.path}: frame {self.frames_written}: expected uint8 array of shape "
                             f"({h}, {w}, 3) (RGB), got {got}")
        try:
            self._proc.stdin.write(np.ascontiguousarray(frame).data)
        except BrokenPipeError:
            self._proc.wait()
            raise VideoError(f"{self.path}: ffmpeg exited while receiving frame {self.frames_written} "
                             f"(exit {self._proc.returncode}):\n{self._stderr()}") from None
        self.frames_written += 1

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self._abort()
            return None  # re-raise the caller's exception
        try:
            self._finish()
        except BaseException:
            self._abort()
            raise
        return None

    # ---- internals -------------------------------------------------------------------
    def _stderr(self) -> str:
        self._err.seek(0)
        return _tail(self._err.read())

    def _finish(self) -> None:
        """Close ffmpeg's input, wait for it, check it, and move the result into place."""
        proc = self._proc
        try:
            proc.stdin.close()
        except BrokenPipeError:
            pass
        rc = proc.wait()
        if rc != 0:
            raise VideoError(f"{self.path}: ffmpeg failed (exit {rc}):\n{self._stderr()}")
        if self.frames_written == 0:
            raise ValueError(f"{self.path}: no frames were written; refusing to create an empty video")
        os.replace(self._tmp, self.path)
        self._tmp = None
        self._cleanup()

    def _abort(self) -> None:
        """Stop ffmpeg (if running) and delete the temporary file."""
        proc = self._proc
        if proc is not None:
            try:
                proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        self._cleanup()

    def _cleanup(self) -> None:
        if self._tmp is not None and self._tmp.exists():
            self._tmp.unlink()
        self._tmp = None
        if self._err is not None:
            self._err.close()
            self._err = None
        self._proc = None


_FRAME_RE = re.compile(rb"^frame=\s*(\d+)\s*$", re.MULTILINE)


def count_frames(path: str | os.PathLike) -> int:
    """Number of frames in the first video stream of ``path``, by decoding all of it.

    Runs ``ffmpeg -i path -map 0:v:0 -fps_mode passthrough -f null -progress pipe:1 -``
    (every decoded frame is counted once, none duplicated or dropped) and reads the last
    ``frame=`` line of the progress report. Container metadata is never trusted.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: video file not found")
    stream = ffmpeg.output(ffmpeg.input(str(path)), "-", format="null", map="0:v:0", fps_mode="passthrough")
    args = _command(stream, "-nostats", "-progress", "pipe:1")
    res = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if res.returncode != 0:
        raise VideoError(f"{path}: ffmpeg could not decode the video (exit {res.returncode}):\n{_tail(res.stderr)}")
    counts = _FRAME_RE.findall(res.stdout)
    if not counts:
        raise VideoError(f"{path}: ffmpeg reported no progress (no 'frame=' line); is there a video stream?")
    return int(counts[-1])
