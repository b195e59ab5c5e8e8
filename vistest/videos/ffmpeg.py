"""Video I/O through ffmpeg: probe, read frames by index, write H.264 atomically.

* :func:`ffmpeg_exe` - the ffmpeg binary: ``$VISTEST_FFMPEG`` if set (the CLI's
  ``--ffmpeg`` sets it), else the one bundled with ``imageio-ffmpeg``. No ffprobe is
  needed anywhere: :func:`probe` parses ``ffmpeg -i`` and counts frames by decoding.
* :func:`probe` - size, frame rate, header frame estimate, container tags; with
  ``count=True`` the true frame count (by decoding).
* :func:`read_frames` - the decoded frames at given indices, streamed (one frame in
  memory at a time); :class:`FrameReader` - every decoded frame in order, as raw bytes.
* :class:`VideoWriter` - H.264 / yuv420p / constant frame rate, fed raw frames (RGB24 or
  yuv420p) through a pipe, or reading a raw file or generating black frames itself. The
  output appears atomically: ffmpeg writes a temporary file in the destination folder,
  the frame count of that file is verified by decoding it, and only then is it renamed
  onto the destination; on any exception (or Ctrl-C) the temporary file is removed and
  the destination is left untouched.
* :func:`count_frames` - the true number of frames, by decoding the whole video.
* :func:`decode_hashes` - every decoded frame's hash and timestamp (ffmpeg ``framehash``);
  :func:`remux_command` / :func:`mux_h264_command` - stream copies (no re-encoding);
  :func:`mp4_sample_count` - the coded frames of an MP4's video track, from its sample table.

Conventions: frame indices are 0-based decoded frame numbers (every frame the decoder
outputs, none dropped or duplicated: ``-fps_mode passthrough``), the numbering of
``Frame.index`` in a scene; times are seconds; sizes are (W, H) in pixels. RGB frames are
``uint8`` (H, W, 3) arrays, row 0 at the top; yuv420p frames are ``uint8`` (H * 3 // 2, W)
arrays in OpenCV's I420 layout (the Y plane, then U, then V, each chroma plane
(H/2, W/2)), i.e. ffmpeg's raw ``yuv420p`` bytes.
"""
from __future__ import annotations

import errno
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

import ffmpeg  # ffmpeg-python: builds the command lines
import numpy as np

from ..atomic import replace_output, temp_path_for
from ..errors import InputError

__all__ = ["ffmpeg_exe", "VideoWriter", "count_frames", "VideoError", "VideoInfo", "probe", "read_frames",
           "FrameReader", "RawFile", "BlackFrames", "frame_bytes", "PIX_FMTS", "X264_PRESETS", "FrameHashes",
           "decode_hashes", "hash_command", "parse_frame_hashes", "remux_command", "mux_h264_command",
           "mp4_sample_count", "mp4_intact", "exit_text"]

PIX_FMTS = ("rgb24", "yuv420p")
X264_PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow",
                "placebo")
PIPE_SIZE = 1 << 20  # bytes: pipe buffer asked of the kernel (Linux's default maximum), fewer context switches


class VideoError(InputError):
    """A video vistest cannot use: bad input, reported as ``Error: ...`` (exit status 2).

    Raised when a video is missing, corrupt, truncated or not decodable (ffmpeg fails on
    it, or it decodes to other frames than asked for or than the scene describes), or when
    the ffmpeg binary (``$VISTEST_FFMPEG``, ``--ffmpeg``) cannot be started or fails while
    writing. Each cause lies outside vistest's code (the file, the scene, the ffmpeg
    installation, the disk) and is named in the message: the file, then ffmpeg's own last
    error lines. Wrong arguments from a caller (sizes, pixel formats, frame order) are
    ValueError instead: those are bugs.
    """


def ffmpeg_exe() -> str:
    """Path of the ffmpeg executable: ``$VISTEST_FFMPEG`` if set, else imageio-ffmpeg's binary."""
    exe = os.environ.get("VISTEST_FFMPEG")
    if exe:
        return exe
    import imageio_ffmpeg

    return imageio_ffmpeg.get_ffmpeg_exe()


def frame_rate(fps: float) -> str:
    """``fps`` as the exact rational ffmpeg expects, e.g. 29.97 -> '30000/1001', 30.0 -> '30'."""
    if isinstance(fps, bool) or not (isinstance(fps, (int, float, np.floating)) and np.isfinite(fps) and fps > 0):
        raise ValueError(f"fps: expected a positive finite number, got {fps!r}")
    r = Fraction(float(fps)).limit_denominator(1001)
    return str(r.numerator) if r.denominator == 1 else f"{r.numerator}/{r.denominator}"


def _command(stream, *global_args: str) -> list[str]:
    """[ffmpeg, global options..., stream arguments...]: global options go first, where
    every ffmpeg version honours them (ffmpeg-python would append them at the end)."""
    return [ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error", *global_args, *ffmpeg.get_args(stream)]


def stderr_tail(data: bytes, lines: int = 15) -> str:
    """The last ``lines`` lines of ffmpeg's stderr, for error messages."""
    return "\n".join(data.decode("utf-8", "replace").strip().splitlines()[-lines:])


def exit_text(rc: int) -> str:
    """``exit 1``, or for a process ended by a signal ``killed by SIGXFSZ`` (with what that signal
    usually means: a full disk makes ffmpeg exit 1 with "No space left on device" instead)."""
    if rc >= 0:
        return f"exit {rc}"
    import signal

    try:
        name = signal.Signals(-rc).name
    except ValueError:
        return f"killed by signal {-rc}"
    why = {"SIGXFSZ": ": the file size limit (ulimit -f) was reached", "SIGKILL": " (out of memory, or killed)"}
    return f"killed by {name}{why.get(name, '')}"


# what ffmpeg's stderr says when the environment refuses its output -> the errno (vistest.errors.output_error)
WRITE_FAILURES = {"No space left on device": errno.ENOSPC, "Disk quota exceeded": errno.EDQUOT,
                  "File too large": errno.EFBIG}


def ffmpeg_failure(path: str | os.PathLike, rc: int, stderr: bytes, what: str = "ffmpeg failed") -> InputError:
    """The error for an ffmpeg that failed (exit status or ``-signal`` ``rc``) writing ``path``: the
    contract's OutputError (``PATH: cannot write (No space left on device); free some space or write
    elsewhere``) when its stderr says the disk or quota is full or the file is too large, or SIGXFSZ
    killed it; else a VideoError with ``what``, how it ended and ffmpeg's last lines."""
    import signal

    from ..errors import output_error

    text = stderr.decode("utf-8", "replace")
    code = next((e for words, e in WRITE_FAILURES.items() if words in text), None)
    if code is None and rc == -signal.SIGXFSZ:
        code = errno.EFBIG
    if code is not None:
        return output_error(path, OSError(code, os.strerror(code)))
    return VideoError(f"{path}: {what} ({exit_text(rc)}):\n{stderr_tail(stderr)}")


def frame_bytes(size: tuple[int, int], pix_fmt: str) -> int:
    """Bytes of one raw frame of ``size`` (W, H) in ``pix_fmt`` (``rgb24`` or ``yuv420p``;
    odd yuv420p sizes get chroma planes of ceil(W/2) x ceil(H/2), as ffmpeg writes them)."""
    w, h = size
    if pix_fmt == "rgb24":
        return w * h * 3
    if pix_fmt == "yuv420p":
        return w * h + 2 * ((w + 1) // 2) * ((h + 1) // 2)
    raise ValueError(f"pix_fmt: expected one of {', '.join(PIX_FMTS)}, got {pix_fmt!r}")


def _frame_shape(size: tuple[int, int], pix_fmt: str) -> tuple[int, ...]:
    """numpy shape of one frame: (H, W, 3) for rgb24, (H * 3 // 2, W) for (even-sized) yuv420p."""
    w, h = size
    return (h, w, 3) if pix_fmt == "rgb24" else (h * 3 // 2, w)


# ---------------------------------------------------------------------------------------
# probe
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VideoInfo:
    """What ``ffmpeg -i`` says about the first video stream of a file (plus, optionally, a count).

    ``size``: (W, H) of the *decoded* frames in pixels (a display rotation of +-90 degrees,
    which ffmpeg applies when decoding, swaps the stored size). ``fps``: the stream's
    average frame rate in frames per second (``tbr`` when no ``fps`` is printed).
    ``duration``: container duration in seconds (None when unknown). ``frames_estimate``:
    ``round(duration * fps)``, the header's claim. ``num_frames``: the decoded frame count,
    only when counted (``probe(..., count=True)``), else None. ``metadata``: the container's
    global tags (vistest stores its content key in ``comment``). ``container``: ffmpeg's
    demuxer names, e.g. ``"mov,mp4,m4a,3gp,3g2,mj2"`` or ``"avi"``. ``full_range``: the
    frames use the full 0-255 range (``yuvj*`` or ``pc``: MJPEG, many phone videos), not
    video range (16-235), which vistest's raw frames and outputs use.
    """

    path: str
    size: tuple[int, int]
    fps: float
    codec: str
    pix_fmt: str
    duration: float | None
    frames_estimate: int | None
    num_frames: int | None = None
    rotation: float = 0.0
    metadata: Mapping[str, str] = field(default_factory=dict)
    container: str = ""
    full_range: bool = False


_INPUT_RE = re.compile(r"^Input #0, (.+), from '")
_VIDEO_LINE_RE = re.compile(r"Stream #\d+:\d+.*?: Video: (.*)$")
_SIZE_RE = re.compile(r", (\d+)x(\d+)(?=[ ,]|$)")
_FPS_RE = re.compile(r", (\d+(?:\.\d+)?)(k?) (fps|tbr)\b")
_DURATION_RE = re.compile(r"Duration: (\d+):(\d\d):(\d\d(?:\.\d+)?)")
_ROTATION_RE = re.compile(r"rotation of (-?\d+(?:\.\d+)?) degrees")


def _global_metadata(lines: list[str]) -> dict[str, str]:
    """Tags of the first input's own ``Metadata:`` block (2-space header, 4-space entries)."""
    out: dict[str, str] = {}
    inside = False
    for ln in lines:
        if ln.startswith("Input #"):
            if out or inside:
                break
            continue
        if ln == "  Metadata:":
            inside = True
            continue
        if inside:
            if not ln.startswith("    "):
                break
            key, _, value = ln.strip().partition(":")
            if key.strip():  # continuation lines of a multi-line value have no key
                out[key.strip()] = value.strip()
    return out


def parse_probe(path: str, stderr: str) -> VideoInfo:
    """Parse the stderr of ``ffmpeg -i path`` (see :func:`probe`); VideoError when there is
    no video stream or a field cannot be read."""
    lines = stderr.splitlines()
    video = next((m for m in map(_VIDEO_LINE_RE.search, lines) if m), None)
    if video is None:
        raise VideoError(f"{path}: no video stream found by ffmpeg:\n{stderr_tail(stderr.encode())}")
    desc = video.group(1)
    size = _SIZE_RE.search(desc)
    if size is None:
        raise VideoError(f"{path}: video stream: cannot read the frame size (WxH) from ffmpeg's line {desc!r}")
    rates = {m.group(3): float(m.group(1)) * (1000 if m.group(2) else 1) for m in _FPS_RE.finditer(desc)}
    fps = rates.get("fps") or rates.get("tbr")
    if not fps:
        raise VideoError(f"{path}: video stream: cannot read the frame rate (fps/tbr) from ffmpeg's line {desc!r}")
    codec = desc.split(",", 1)[0].split(" ", 1)[0]
    pix_fmt = desc.split(",")[1].strip().split("(", 1)[0].strip() if "," in desc else ""
    w, h = int(size.group(1)), int(size.group(2))
    rot = next((float(m.group(1)) for m in map(_ROTATION_RE.search, lines) if m), 0.0)
    if round(abs(rot)) % 180 == 90:
        w, h = h, w
    dur = _DURATION_RE.search(stderr)
    duration = int(dur.group(1)) * 3600 + int(dur.group(2)) * 60 + float(dur.group(3)) if dur else None
    estimate = int(round(duration * fps)) if duration is not None else None
    container = next((m.group(1) for m in map(_INPUT_RE.search, lines) if m), "")
    full_range = pix_fmt.startswith("yuvj") or bool(re.search(r"\(pc[,)]", desc))
    return VideoInfo(str(path), (w, h), float(fps), codec, pix_fmt, duration, estimate, None, rot,
                     _global_metadata(lines), container, full_range)


def probe(path: str | os.PathLike, count: bool = False) -> VideoInfo:
    """Probe the first video stream of ``path`` by parsing ``ffmpeg -i`` (no ffprobe).

    ``count``: also decode the whole video to count its frames (``num_frames``); the
    header's ``frames_estimate`` is a claim that variable frame rates, edit lists and
    broken muxers make wrong. Raises VideoError naming the file.
    """
    path = Path(path)
    if not path.is_file():
        raise VideoError(f"{path}: video file not found")
    try:
        res = subprocess.run([ffmpeg_exe(), "-hide_banner", "-nostdin", "-i", str(path)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    except OSError as e:
        raise VideoError(f"{path}: cannot start ffmpeg {ffmpeg_exe()!r}: {e}") from None
    info = parse_probe(str(path), res.stderr.decode("utf-8", "replace"))
    if count:
        info = VideoInfo(**{**info.__dict__, "num_frames": count_frames(path)})
    return info


# ---------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------
def select_expr(indices: Iterable[int]) -> str:
    """An ffmpeg ``select`` expression true exactly on the given decoded frame numbers,
    with consecutive runs written as ``between(n,a,b)`` (short and cheap to evaluate)."""
    uniq = sorted(set(int(i) for i in indices))
    terms, k = [], 0
    while k < len(uniq):
        j = k
        while j + 1 < len(uniq) and uniq[j + 1] == uniq[j] + 1:
            j += 1
        terms.append(f"eq(n,{uniq[k]})" if j == k else f"between(n,{uniq[k]},{uniq[j]})")
        k = j + 1
    return "+".join(terms) if terms else "0"


class FrameReader:
    """Decode a video to raw frames through an ffmpeg pipe, in decode order, streaming.

    >>> with FrameReader("in.mp4", (640, 480), "yuv420p") as r:   # doctest: +SKIP
    ...     for buf in r:           # a bytearray reused for every frame
    ...         ...

    ``size`` (W, H): the decoded size (from :func:`probe`); ``pad_even`` pads odd sizes
    with black on the right/bottom to even ones (``size`` is then the padded size).
    ``select``: decoded frame numbers to keep (None: all). ``threads``: decoder threads
    (None: ffmpeg's default). ``hash_path``: also write the per-frame hashes of every
    decoded frame (as decoded, before any padding) there, from the same decode
    (:func:`decode_hashes`' format). ``full_range``: the source is full range (VideoInfo):
    its frames are converted to video range, as every raw frame here is. ``scale_to`` (W, H): each
    frame is scaled by ffmpeg to that size (area filter; thumbnails read a small frame, not a full
    one; ``size`` stays the decoded size). Iterating yields one
    reused ``bytearray`` per frame (copy it to keep it); ``frames_read`` counts them. A short
    final frame, or ffmpeg failing, is a VideoError naming the file; leaving the ``with`` block early stops ffmpeg.
    """

    def __init__(self, path: str | os.PathLike, size: tuple[int, int], pix_fmt: str = "rgb24",
                 select: Iterable[int] | None = None, threads: int | None = None, pad_even: bool = False,
                 hash_path: str | os.PathLike | None = None, full_range: bool = False,
                 scale_to: tuple[int, int] | None = None):
        self.path = Path(path)
        w0, h0 = w, h = size if scale_to is None else scale_to
        if pad_even:
            w, h = w + w % 2, h + h % 2
        self.size = (int(w), int(h))
        self.pix_fmt = pix_fmt
        self.nbytes = frame_bytes(self.size, pix_fmt)
        self.frames_read = 0
        filters = []
        if select is not None:
            filters.append(f"select='{select_expr(select)}'")
        if full_range:
            filters.append("scale=in_range=full:out_range=limited")
        if scale_to is not None:
            filters.append(f"scale={int(scale_to[0])}:{int(scale_to[1])}:flags=area")
        if pad_even and (w0 % 2 or h0 % 2):
            filters.append(f"pad={w}:{h}:0:0:black")
        in_opts = {"threads": threads} if threads else {}
        out_opts = {"format": "rawvideo", "pix_fmt": pix_fmt, "map": "0:v:0", "fps_mode": "passthrough"}
        if filters:
            out_opts["vf"] = ",".join(filters)
        self.args = _command(ffmpeg.output(ffmpeg.input(str(self.path), **in_opts), "pipe:1", **out_opts))
        if hash_path is not None:
            self.args += HASH_ARGS + [str(hash_path)]
        self._proc: subprocess.Popen | None = None
        self._err = None

    def __enter__(self) -> "FrameReader":
        if not self.path.is_file():
            raise VideoError(f"{self.path}: video file not found")
        self._err = tempfile.TemporaryFile()
        try:
            self._proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=self._err, bufsize=0,
                                          pipesize=PIPE_SIZE)
        except OSError as e:
            self._err.close()
            raise VideoError(f"{self.path}: cannot start ffmpeg {ffmpeg_exe()!r}: {e}") from None
        return self

    def __iter__(self) -> Iterator[bytearray]:
        buf = bytearray(self.nbytes)
        view = memoryview(buf)
        while True:
            got = 0
            while got < self.nbytes:
                n = self._proc.stdout.readinto(view[got:])
                if not n:
                    break
                got += n
            if got == 0:
                break
            if got < self.nbytes:
                self._check_exit()
                raise VideoError(f"{self.path}: frame {self.frames_read}: ffmpeg delivered {got} of "
                                 f"{self.nbytes} bytes (truncated frame)")
            self.frames_read += 1
            yield buf
        self._check_exit()

    def _check_exit(self) -> None:
        rc = self._proc.wait()
        if rc != 0:
            self._err.seek(0)
            raise VideoError(f"{self.path}: ffmpeg could not decode the video ({exit_text(rc)}):\n"
                             f"{stderr_tail(self._err.read())}")

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop ffmpeg (if still running) and release its pipes."""
        proc = self._proc
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stdout.close()
            self._proc = None
        if self._err is not None:
            self._err.close()
            self._err = None


def read_frames(path: str | os.PathLike, indices: Iterable[int], pix_fmt: str = "rgb24",
                size: tuple[int, int] | None = None, scale_to: tuple[int, int] | None = None
                ) -> Iterator[np.ndarray]:
    """Yield the decoded frames at ``indices`` (0-based decoded frame numbers, in
    non-decreasing order, repeats allowed), each a new ``uint8`` array (see the module
    docstring for shapes), streaming: ffmpeg's ``select`` keeps only the wanted frames and
    one frame is in memory at a time. ``size``: decoded (W, H), probed when None; ``scale_to``:
    (W, H) ffmpeg scales each frame to (area filter), None: as decoded.
    Raises ValueError for unordered or negative indices, VideoError (naming the file and
    the missing index) when the video has fewer frames than asked for.
    """
    wanted = [int(i) for i in indices]
    if any(i < 0 for i in wanted) or any(b < a for a, b in zip(wanted, wanted[1:])):
        raise ValueError(f"{path}: indices: expected non-negative frame numbers in non-decreasing order, "
                         f"got {wanted[:20]}{' ...' if len(wanted) > 20 else ''}")
    if not wanted:
        return
    if size is None:  # the decoded size matters only when the frames are read at it
        size = probe(path).size if scale_to is None else scale_to
    uniq = sorted(set(wanted))
    shape = _frame_shape(size if scale_to is None else scale_to, pix_fmt)
    pos = 0
    with FrameReader(path, size, pix_fmt, select=uniq, scale_to=scale_to) as reader:
        for k, buf in enumerate(reader):
            frame = np.frombuffer(bytes(buf), np.uint8).reshape(shape)
            while pos < len(wanted) and wanted[pos] == uniq[k]:
                yield frame
                pos += 1
            if pos == len(wanted):
                return
    raise VideoError(f"{path}: frame {wanted[pos]} was asked for, but the video ends before it "
                     f"(0-based decoded frame numbers)")


# ---------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RawFile:
    """A VideoWriter input: ``num_frames`` raw frames (the writer's ``pix_fmt`` and size) in a file."""

    path: Path
    num_frames: int


@dataclass(frozen=True)
class BlackFrames:
    """A VideoWriter input: ``num_frames`` black frames that ffmpeg generates itself."""

    num_frames: int


class VideoWriter:
    """Write an H.264 (libx264, yuv420p, constant frame rate) video atomically.

    >>> with VideoWriter("out.mp4", fps=30.0, size=(640, 480)) as w:   # doctest: +SKIP
    ...     for frame in frames:          # (480, 640, 3) uint8, RGB, row 0 = top
    ...         w.write(frame)

    ``size`` is (W, H) in pixels; both must be even (yuv420p halves the chroma planes).
    ``crf`` (0-51, lower = better) and ``preset`` are libx264's; ``threads`` its thread
    count (None: libx264's default, 1.5 x cores). ``pix_fmt``: the raw frames given to
    :meth:`write` (``rgb24`` or ``yuv420p``, see the module docstring). ``metadata``:
    container tags (e.g. ``{"comment": ...}``). ``source``: None to feed frames through
    :meth:`write`/:meth:`write_raw`, or a :class:`RawFile` / :class:`BlackFrames` that ffmpeg
    reads or generates itself. The container follows the suffix of ``path`` (.mp4, .mkv,
    ...); mp4 gets ``+faststart``. Frame i is shown at time i / fps. ``verify``: decode the
    finished file and require exactly the frames given (VideoError otherwise) before it is
    renamed into place. Writing zero frames is an error (nothing is written). ``intra``:
    every frame an IDR frame (libx264 ``-g 1``; a ``.h264`` path gives a raw Annex-B stream
    whose every access unit carries its parameter sets).

    Besides the ``with`` block, :meth:`start`, :meth:`close_input`, :meth:`finish` and
    :meth:`abort` let a caller drive many writers at once.
    """

    def __init__(self, path: str | os.PathLike, fps: float, size: tuple[int, int], crf: int = 18,
                 preset: str = "medium", *, pix_fmt: str = "rgb24", threads: int | None = None,
                 metadata: Mapping[str, str] | None = None, source: RawFile | BlackFrames | None = None,
                 verify: bool = True, intra: bool = False):
        self.path = Path(path)
        self.fps = float(fps)
        self.rate = frame_rate(fps)
        try:
            w, h = (int(v) for v in size)
        except (TypeError, ValueError):
            raise ValueError(f"{self.path}: size: expected (W, H) as two integers, got {size!r}") from None
        if w <= 0 or h <= 0 or w % 2 or h % 2:
            raise ValueError(f"{self.path}: size: expected positive even (W, H) for yuv420p H.264, got {size!r}; "
                             f"crop or pad the frames to an even size")
        if pix_fmt not in PIX_FMTS:
            raise ValueError(f"{self.path}: pix_fmt: expected one of {', '.join(PIX_FMTS)}, got {pix_fmt!r}")
        if isinstance(crf, bool) or not isinstance(crf, (int, np.integer)) or not 0 <= crf <= 51:
            raise ValueError(f"{self.path}: crf: expected an integer in 0..51 (libx264), got {crf!r}")
        if preset not in X264_PRESETS:
            raise ValueError(f"{self.path}: preset: expected one of {', '.join(X264_PRESETS)}, got {preset!r}")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise ValueError(f"{self.path}: threads: expected a positive integer or None, got {threads!r}")
        self.size = (w, h)
        self.crf = int(crf)
        self.preset = preset
        self.pix_fmt = pix_fmt
        self.threads = threads
        self.metadata = dict(metadata or {})
        self.source = source
        self.verify = verify
        self.intra = intra
        self.nbytes = frame_bytes(self.size, pix_fmt)
        self.frames_written = 0
        self._proc: subprocess.Popen | None = None
        self._tmp: Path | None = None
        self._err = None

    # ---- command ---------------------------------------------------------------------
    def _input(self):
        w, h = self.size
        if isinstance(self.source, BlackFrames):
            return ffmpeg.input(f"color=c=black:s={w}x{h}:r={self.rate}", f="lavfi")
        name = "pipe:0" if self.source is None else str(self.source.path)
        return ffmpeg.input(name, format="rawvideo", pix_fmt=self.pix_fmt, s=f"{w}x{h}", framerate=self.rate)

    def command(self, out: str | os.PathLike) -> list[str]:
        """The ffmpeg argument list that encodes this writer's input into ``out``."""
        opts = {"vcodec": "libx264", "pix_fmt": "yuv420p", "crf": self.crf, "preset": self.preset,
                "r": self.rate, "fps_mode": "cfr", "map_metadata": -1}
        if self.threads is not None:
            opts["threads"] = self.threads
        if self.intra:
            opts["g"] = 1
        if self.source is not None:
            opts["frames:v"] = self.source.num_frames
        if Path(out).suffix.lower() in (".mp4", ".m4v", ".mov"):
            opts["movflags"] = "+faststart"
        args = _command(ffmpeg.output(self._input(), str(out), **opts), "-y")
        tags = [a for k, v in sorted(self.metadata.items()) for a in ("-metadata", f"{k}={v}")]
        return args[:-1] + tags + args[-1:]

    # ---- lifecycle -------------------------------------------------------------------
    def start(self) -> "VideoWriter":
        """Start ffmpeg on a temporary file beside ``path`` (same suffix, so ffmpeg picks the
        container from it)."""
        if self.source is not None and self.source.num_frames < 1:
            raise ValueError(f"{self.path}: no frames were written; refusing to create an empty video")
        temp_path_for(self.path, lambda t: setattr(self, "_tmp", t))
        self._err = tempfile.TemporaryFile()  # a file, not a pipe: ffmpeg can never block on it
        stdin = subprocess.PIPE if self.source is None else subprocess.DEVNULL
        try:
            self._proc = subprocess.Popen(self.command(self._tmp), stdin=stdin, stdout=subprocess.DEVNULL,
                                          stderr=self._err, pipesize=PIPE_SIZE)
        except OSError as e:
            self._cleanup()
            raise VideoError(f"{self.path}: cannot start ffmpeg {ffmpeg_exe()!r}: {e}") from None
        if self.source is not None:
            self.frames_written = self.source.num_frames
        return self

    def __enter__(self) -> "VideoWriter":
        return self.start()

    def write(self, frame: np.ndarray) -> None:
        """Append one frame: ``uint8`` array, (H, W, 3) RGB for ``rgb24``, (H * 3 // 2, W)
        I420 for ``yuv420p``; row 0 at the top."""
        shape = _frame_shape(self.size, self.pix_fmt)
        if not isinstance(frame, np.ndarray) or frame.shape != shape or frame.dtype != np.uint8:
            got = f"{frame.dtype} {frame.shape}" if isinstance(frame, np.ndarray) else type(frame).__name__
            raise ValueError(f"{self.path}: frame {self.frames_written}: expected uint8 array of shape "
                             f"{shape} ({self.pix_fmt}), got {got}")
        self.write_raw(np.ascontiguousarray(frame).data)

    def write_raw(self, data) -> None:
        """Append one frame given as raw bytes (any bytes-like object of exactly one frame)."""
        if self._proc is None or self.source is not None:
            raise RuntimeError(f"{self.path}: VideoWriter.write called outside its 'with' block "
                               f"(or on a writer with its own source)")
        if len(memoryview(data).cast("B")) != self.nbytes:
            raise ValueError(f"{self.path}: frame {self.frames_written}: expected {self.nbytes} bytes of "
                             f"{self.pix_fmt} {self.size[0]}x{self.size[1]}, got {len(memoryview(data).cast('B'))}")
        try:
            self._proc.stdin.write(data)
        except BrokenPipeError:
            self._proc.wait()
            raise ffmpeg_failure(self.path, self._proc.returncode, self._stderr_bytes(),
                                 f"ffmpeg exited while receiving frame {self.frames_written}") from None
        self.frames_written += 1

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()
            return None  # re-raise the caller's exception
        try:
            self.finish()
        except BaseException:
            self.abort()
            raise
        return None

    def close_input(self) -> None:
        """Signal the end of the frames (ffmpeg then flushes the encoder)."""
        if self._proc is not None and self._proc.stdin is not None and not self._proc.stdin.closed:
            try:
                self._proc.stdin.close()
            except BrokenPipeError:
                pass

    @property
    def temp_path(self) -> Path | None:
        """The temporary file ffmpeg writes (beside ``path``), once started; None after :meth:`finish`."""
        return self._tmp

    def finish(self, place: bool = True) -> Path:
        """Close ffmpeg's input, wait for it, check it, verify the frame count, and move the
        result into place (returns ``path``). ``place=False``: leave the verified file under its
        temporary name and return that (the caller renames or removes it; the writer no longer
        owns it). On failure the temporary file stays until :meth:`abort`."""
        proc = self._proc
        self.close_input()
        rc = proc.wait()
        if rc != 0:
            raise ffmpeg_failure(self.path, rc, self._stderr_bytes())
        if self.frames_written == 0:
            raise ValueError(f"{self.path}: no frames were written; refusing to create an empty video")
        if self.verify:
            got = count_frames(self._tmp)
            if got != self.frames_written:
                raise VideoError(f"{self.path}: {self.frames_written} frames were encoded but the written file "
                                 f"decodes to {got}; not keeping it")
        done = self.path
        if place:
            replace_output(self._tmp, self.path)
        else:
            done = self._tmp
        self._tmp = None
        self._cleanup()
        return done

    def abort(self) -> None:
        """Stop ffmpeg (if running) and delete the temporary file. Safe to call twice."""
        proc = self._proc
        if proc is not None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        self._cleanup()

    # ---- internals -------------------------------------------------------------------
    def _stderr(self) -> str:
        return stderr_tail(self._stderr_bytes())

    def _stderr_bytes(self) -> bytes:
        self._err.seek(0)
        return self._err.read()

    def _cleanup(self) -> None:
        if self._tmp is not None and self._tmp.exists():
            self._tmp.unlink()
        self._tmp = None
        if self._err is not None:
            self._err.close()
            self._err = None
        self._proc = None


_FRAME_RE = re.compile(rb"^frame=\s*(\d+)\s*$", re.MULTILINE)


def run_decode(path: str | os.PathLike, args: list[str]) -> subprocess.CompletedProcess:
    """Run the ffmpeg decode command ``args`` of the video ``path`` to its end (stdout and
    stderr captured, bytes). VideoError naming ``path`` when ffmpeg cannot start or fails."""
    try:
        res = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        raise VideoError(f"{path}: cannot start ffmpeg {ffmpeg_exe()!r}: {e}") from None
    if res.returncode != 0:
        raise VideoError(f"{path}: ffmpeg could not decode the video ({exit_text(res.returncode)}):\n"
                         f"{stderr_tail(res.stderr)}")
    return res


def count_frames(path: str | os.PathLike) -> int:
    """Number of frames in the first video stream of ``path``, by decoding all of it.

    Runs ``ffmpeg -i path -map 0:v:0 -fps_mode passthrough -f null -progress pipe:1 -``
    (every decoded frame is counted once, none duplicated or dropped) and reads the last
    ``frame=`` line of the progress report. Container metadata is never trusted.
    """
    path = Path(path)
    if not path.is_file():
        raise VideoError(f"{path}: video file not found")
    stream = ffmpeg.output(ffmpeg.input(str(path)), "-", format="null", map="0:v:0", fps_mode="passthrough")
    res = run_decode(path, _command(stream, "-nostats", "-progress", "pipe:1"))
    counts = _FRAME_RE.findall(res.stdout)
    if not counts:
        raise VideoError(f"{path}: ffmpeg reported no progress (no 'frame=' line); is there a video stream?")
    return int(counts[-1])


# ---------------------------------------------------------------------------------------
# frame hashes, stream copies, MP4 sample tables
# ---------------------------------------------------------------------------------------
HASH = "murmur3"  # ffmpeg framehash: fast, 128 bits; equality checks, not security
HASH_ARGS = ["-map", "0:v:0", "-fps_mode", "passthrough", "-enc_time_base", "demux", "-f", "framehash", "-hash",
             HASH]  # every decoded frame once, with the container's own timestamps


@dataclass(frozen=True)
class FrameHashes:
    """Per decoded frame: presentation time (``pts`` in units of ``time_base`` seconds),
    duration and the hash of its raw pixels (:data:`HASH`), in decode output order."""

    time_base: Fraction
    pts: tuple[int, ...]
    durations: tuple[int, ...]
    hashes: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.hashes)


_TB_RE = re.compile(r"^#tb 0: (\d+)/(\d+)$")


def parse_frame_hashes(text: str, where: str = "framehash") -> FrameHashes:
    """Parse ffmpeg's ``framehash`` output (format version 2: ``#tb 0: N/D`` then one line
    ``stream, dts, pts, duration, size, hash`` per frame)."""
    tb, pts, dur, hashes = None, [], [], []
    for line in text.splitlines():
        if line.startswith("#"):
            m = _TB_RE.match(line)
            if m:
                tb = Fraction(int(m.group(1)), int(m.group(2)))
            continue
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 6 or parts[0] != "0":
            continue
        pts.append(int(parts[2]))
        dur.append(int(parts[3]))
        hashes.append(parts[5])
    if tb is None:
        raise VideoError(f"{where}: no '#tb 0:' line in ffmpeg's framehash output")
    return FrameHashes(tb, tuple(pts), tuple(dur), tuple(hashes))


def hash_command(path: str | os.PathLike, threads: int | None = None) -> list[str]:
    """ffmpeg arguments decoding ``path`` and writing its frame hashes to stdout (:func:`decode_hashes`)."""
    args = [ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error"]
    args += ["-threads", str(threads)] if threads else []
    return args + ["-i", str(path), *HASH_ARGS, "-"]


def decode_hashes(path: str | os.PathLike, threads: int | None = None) -> FrameHashes:
    """Decode the first video stream of ``path`` and hash every frame (passthrough: none
    dropped or duplicated), with its presentation time. VideoError naming the file on failure."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: video file not found")
    res = run_decode(path, hash_command(path, threads))
    return parse_frame_hashes(res.stdout.decode("ascii", "replace"), str(path))


def average_frame_rate(path: str | os.PathLike) -> tuple[Fraction, int]:
    """(the exact average frame rate of the first video stream of ``path``, its packet count), read
    from its packets without decoding (``-c copy -f framehash``: each packet's duration in the stream's
    time base): packets / their total duration, the average rate libavformat gives for a constant-rate
    stream (``avg_frame_rate``: what decord's ``get_avg_fps()`` and PyAV's ``average_rate`` return),
    e.g. 30000/1001 where ``ffmpeg -i`` prints "29.97 fps". VideoError naming the file when the stream
    has no packet or no duration."""
    path = Path(path)
    if not path.is_file():
        raise VideoError(f"{path}: video file not found")
    cmd = [ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error", "-i", str(path), "-map", "0:v:0",
           "-c", "copy", "-f", "framehash", "-"]
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if res.returncode != 0:
        raise VideoError(f"{path}: ffmpeg cannot read the video stream's packets: {stderr_tail(res.stderr)}")
    fh = parse_frame_hashes(res.stdout.decode("utf-8", "replace"), str(path))
    total = sum(fh.durations)
    if not fh.durations or total <= 0:
        raise VideoError(f"{path}: video stream: no packet durations to compute the frame rate from")
    return Fraction(len(fh.durations)) / (total * fh.time_base), len(fh.durations)


def remux_command(src: str | os.PathLike, out: str | os.PathLike, metadata: Mapping[str, str]) -> list[str]:
    """ffmpeg arguments copying the first video stream of ``src`` into ``out`` without
    re-encoding (no other stream, no source tags; ``metadata`` set; ``+faststart`` for MP4)."""
    args = [ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error", "-y", "-i", str(src), "-map", "0:v:0",
            "-c", "copy", "-map_metadata", "-1"]
    args += [a for k, v in sorted(metadata.items()) for a in ("-metadata", f"{k}={v}")]
    if Path(out).suffix.lower() in (".mp4", ".m4v", ".mov"):
        args += ["-movflags", "+faststart"]
    return args + [str(out)]


def mux_h264_command(jobs: Sequence[tuple[str | os.PathLike, str | os.PathLike, Mapping[str, str]]],
                     fps: float) -> list[str]:
    """One ffmpeg process muxing several raw H.264 (Annex-B) inputs, each given as a
    ``concatf:`` list file, into MP4 files by stream copy at ``fps`` frames/s: ``jobs`` is
    (list file, output, metadata) per output."""
    args = [ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error", "-y"]
    for lst, _, _ in jobs:  # the parameter sets lead each stream: probing 4 KB finds them without decoding frames
        args += ["-f", "h264", "-probesize", "4096", "-analyzeduration", "0", "-framerate", frame_rate(fps),
                 "-i", f"concatf:{Path(lst).resolve()}"]
    for k, (_, out, meta) in enumerate(jobs):
        args += ["-map", f"{k}:v:0", "-c", "copy", "-map_metadata", "-1"]
        args += [a for key, val in sorted(meta.items()) for a in ("-metadata", f"{key}={val}")]
        args += ["-movflags", "+faststart", str(out)]
    return args


def _boxes(f, end: int):
    """(type, payload start, payload end) of the ISO BMFF boxes in ``[f.tell(), end)``."""
    import struct

    pos = f.tell()
    while pos + 8 <= end:
        f.seek(pos)
        size, kind = struct.unpack(">I4s", f.read(8))
        head = 8
        if size == 1:
            size = struct.unpack(">Q", f.read(8))[0]
            head = 16
        elif size == 0:
            size = end - pos
        if size < head:
            return
        yield kind.decode("latin-1"), pos + head, pos + size
        pos += size


def mp4_sample_count(path: str | os.PathLike) -> int | None:
    """Samples (coded frames) of the first video track of an MP4/MOV file, from its sample
    table (``moov/trak/mdia/minf/stbl/stsz``), without decoding; None when the file has no
    such table (not MP4, fragmented, truncated)."""
    import struct

    path = Path(path)
    try:
        with open(path, "rb") as f:
            end = f.seek(0, 2)
            f.seek(0)
            for kind, a, b in list(_boxes(f, end)):
                if kind != "moov":
                    continue
                f.seek(a)
                for tk, ta, tb in list(_boxes(f, b)):
                    if tk != "trak":
                        continue
                    found = _video_stsz(f, ta, tb)
                    if found is not None:
                        return found
    except (OSError, struct.error):
        return None
    return None


def mp4_intact(path: str | os.PathLike) -> bool:
    """Whether an MP4/MOV file is whole: its top-level boxes tile the file exactly (none cut
    short, nothing after the last) and include ``moov`` and ``mdat``. A file truncated or
    extended after it was written fails this; reads only the box headers."""
    import struct

    try:
        with open(path, "rb") as f:
            end = f.seek(0, 2)
            f.seek(0)
            kinds, pos = set(), 0
            for kind, _, stop in list(_boxes(f, end)):
                kinds.add(kind)
                pos = stop
    except (OSError, struct.error):
        return False
    return pos == end and {"moov", "mdat"} <= kinds


def _video_stsz(f, a: int, b: int) -> int | None:
    """The stsz sample count of a ``trak`` box whose handler is ``vide``, else None."""
    import struct

    def child(start, stop, name):
        f.seek(start)
        return next(((ca, cb) for ck, ca, cb in list(_boxes(f, stop)) if ck == name), None)

    mdia = child(a, b, "mdia")
    if mdia is None:
        return None
    hdlr = child(*mdia, "hdlr")
    if hdlr is None:
        return None
    f.seek(hdlr[0] + 8)
    if f.read(4) != b"vide":
        return None
    minf = child(*mdia, "minf")
    stbl = child(*minf, "stbl") if minf else None
    stsz = child(*stbl, "stsz") if stbl else None
    if stsz is None:
        return None
    f.seek(stsz[0] + 8)
    return struct.unpack(">I", f.read(4))[0]
