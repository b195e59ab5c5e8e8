"""vistest.video: streaming H.264 writer (atomic) and frame counting by decoding."""
import re
import subprocess

import numpy as np
import pytest

from vistest.video import VideoError, VideoWriter, count_frames, ffmpeg_exe


def stream_info(path):
    """(width, height, pix_fmt, fps) of the first video stream, parsed from `ffmpeg -i` stderr."""
    err = subprocess.run([ffmpeg_exe(), "-hide_banner", "-i", str(path)], capture_output=True, text=True).stderr
    line = next(ln for ln in err.splitlines() if "Video:" in ln)
    m = re.search(r"Video: (\w+).*?, (\w+)(?:\(.*?\))?, (\d+)x(\d+).*?, ([\d.]+) fps", line)
    assert m, line
    return int(m.group(3)), int(m.group(4)), m.group(2), float(m.group(5)), m.group(1)


def decode(path, w, h):
    """All frames as uint8 (N, h, w, 3) RGB."""
    raw = subprocess.run([ffmpeg_exe(), "-v", "error", "-i", str(path), "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                         capture_output=True, check=True).stdout
    return np.frombuffer(raw, np.uint8).reshape(-1, h, w, 3)


def frames(n, w, h):
    """n flat-colour frames, each a different grey with a coloured square."""
    out = []
    for i in range(n):
        f = np.full((h, w, 3), 10 * i, np.uint8)
        f[h // 4: h // 2, w // 4: w // 2] = (200, 40, 90)
        out.append(f)
    return out


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir())


def test_round_trip(tmp_path):
    path = tmp_path / "out.mp4"
    src = frames(25, 64, 48)
    with VideoWriter(path, fps=25.0, size=(64, 48)) as w:
        for f in src:
            w.write(f)
    assert w.frames_written == 25
    assert leftovers(tmp_path) == ["out.mp4"]  # no temporary file left behind
    assert count_frames(path) == 25
    width, height, pix_fmt, fps, codec = stream_info(path)
    assert (width, height, pix_fmt, fps, codec) == (64, 48, "yuv420p", 25.0, "h264")
    got = decode(path, 64, 48)
    assert got.shape == (25, 48, 64, 3)
    err = np.abs(got.astype(int) - np.stack(src).astype(int)).mean(axis=(1, 2, 3))
    assert err.max() < 4.0, err  # crf 18: near-lossless on flat colours


def test_ntsc_rate_is_exact(tmp_path):
    path = tmp_path / "ntsc.mkv"
    with VideoWriter(path, fps=30000 / 1001, size=(32, 32)) as w:
        for f in frames(10, 32, 32):
            w.write(f)
    assert count_frames(path) == 10
    assert abs(stream_info(path)[3] - 29.97) < 1e-6


@pytest.mark.parametrize("size", [(63, 48), (64, 47), (0, 48), (-2, 4)])
def test_odd_or_bad_size_rejected(tmp_path, size):
    with pytest.raises(ValueError, match="even"):
        VideoWriter(tmp_path / "x.mp4", fps=30.0, size=size)


def test_wrong_frame_shape_rejected(tmp_path):
    with pytest.raises(ValueError, match=r"frame 0: expected uint8 array of shape \(48, 64, 3\)"):
        with VideoWriter(tmp_path / "x.mp4", fps=30.0, size=(64, 48)) as w:
            w.write(np.zeros((64, 48, 3), np.uint8))
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_exception_removes_temp_and_keeps_old_output(tmp_path, exc):
    path = tmp_path / "out.mp4"
    path.write_bytes(b"previous good video")
    with pytest.raises(exc):
        with VideoWriter(path, fps=30.0, size=(64, 48)) as w:
            for f in frames(5, 64, 48):
                w.write(f)
            raise exc("boom")
    assert leftovers(tmp_path) == ["out.mp4"]
    assert path.read_bytes() == b"previous good video"


def test_zero_frames_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="no frames"):
        with VideoWriter(tmp_path / "x.mp4", fps=30.0, size=(64, 48)):
            pass
    assert leftovers(tmp_path) == []


def test_ffmpeg_env_override(tmp_path, monkeypatch):
    monkeypatch.setenv("VISTEST_FFMPEG", str(tmp_path / "no-such-ffmpeg"))
    assert ffmpeg_exe() == str(tmp_path / "no-such-ffmpeg")
    with pytest.raises(VideoError, match="no-such-ffmpeg"):
        with VideoWriter(tmp_path / "x.mp4", fps=30.0, size=(64, 48)):
            pass
    assert leftovers(tmp_path) == []


def test_count_frames_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.mp4"):
        count_frames(tmp_path / "missing.mp4")
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"not a video")
    with pytest.raises(VideoError, match="bad.mp4"):
        count_frames(bad)
