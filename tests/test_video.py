"""vistest.videos.ffmpeg: streaming H.264 writer (atomic) and frame counting by decoding."""
import re
import subprocess

import numpy as np
import pytest

from vistest.videos.ffmpeg import VideoError, VideoWriter, count_frames, ffmpeg_exe


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
    with pytest.raises(VideoError, match="missing.mp4: video file not found"):
        count_frames(tmp_path / "missing.mp4")
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"not a video")
    with pytest.raises(VideoError, match="bad.mp4"):
        count_frames(bad)


# ---- probe, read_frames, raw writers (the video stage) ----------------------------------
from vistest.videos.ffmpeg import (BlackFrames, FrameReader, RawFile, parse_probe, probe, read_frames,  # noqa: E402
                           select_expr)


def write_video(path, frames_rgb, fps=30.0, **kw):
    h, w = frames_rgb[0].shape[:2]
    with VideoWriter(path, fps=fps, size=(w, h), crf=0, preset="ultrafast", **kw) as wr:
        for f in frames_rgb:
            wr.write(f)
    return path


def test_probe_reads_size_rate_estimate_and_tags(tmp_path):
    path = write_video(tmp_path / "a.mp4", frames(12, 64, 48), fps=30000 / 1001, metadata={"comment": "vistest:k1"})
    info = probe(path)
    assert info.size == (64, 48) and info.codec == "h264" and info.pix_fmt == "yuv420p"
    assert abs(info.fps - 29.97) < 1e-6 and info.frames_estimate == 12 and info.num_frames is None
    assert info.metadata["comment"] == "vistest:k1"
    assert probe(path, count=True).num_frames == 12


def test_probe_parses_rotation_and_tbr_only_streams():
    err = ("Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'x.mp4':\n  Metadata:\n    comment         : hello\n"
           "  Duration: 00:00:02.00, start: 0.000000, bitrate: 67 kb/s\n"
           "  Stream #0:0[0x1](und): Video: h264 (High) (avc1 / 0x31637661), yuv420p(tv, bt709, progressive), "
           "1296x968 [SAR 1:1 DAR 162:121], 42 kb/s, 24 tbr, 12288 tbn (default)\n"
           "    Metadata:\n      handler_name    : VideoHandler\n    Side data:\n"
           "      Display Matrix: rotation of -90.00 degrees\n")
    info = parse_probe("x.mp4", err)
    assert info.size == (968, 1296) and info.rotation == -90.0 and info.fps == 24.0
    assert info.frames_estimate == 48 and info.metadata == {"comment": "hello"}
    with pytest.raises(VideoError, match="x.mp4: no video stream"):
        parse_probe("x.mp4", "Input #0, wav, from 'x.mp4':\n  Stream #0:0: Audio: pcm_s16le\n")


def test_read_frames_by_index_streams_the_right_frames(tmp_path):
    src = frames(20, 64, 48)  # frame i is grey 10 * i
    path = write_video(tmp_path / "a.mp4", src)
    got = list(read_frames(path, [0, 3, 3, 19]))
    greys = [float(np.median(g[0:8, 0:8, 0])) for g in got]
    assert np.allclose(greys, [0, 30, 30, 190], atol=2), greys  # yuv420p rounding: +-1
    yuv = next(read_frames(path, [5], pix_fmt="yuv420p"))
    assert yuv.shape == (72, 64) and abs(int(np.median(yuv[:8, :8])) - (16 + 50 * 219 // 255)) <= 2
    with pytest.raises(ValueError, match="non-decreasing"):
        list(read_frames(path, [3, 1]))
    with pytest.raises(VideoError, match="frame 20 was asked for"):
        list(read_frames(path, [19, 20]))


def test_read_frames_scaled_needs_no_probe(tmp_path, monkeypatch):
    """Frames read at a given size (the page's tiles) need not the decoded size: no probe (an ffmpeg process,
    ~0.04 s of the pictures' time). Read without one, they are those read after a probe."""
    import vistest.videos.ffmpeg as ff

    path = write_video(tmp_path / "a.mp4", frames(20, 64, 48))
    probed = list(read_frames(path, [2, 7, 19], scale_to=(32, 24)))

    def no_probe(p):
        raise AssertionError("probed")

    monkeypatch.setattr(ff, "probe", no_probe)
    got = list(read_frames(path, [2, 7, 19], scale_to=(32, 24)))
    assert [g.shape for g in got] == [(24, 32, 3)] * 3
    assert all(np.array_equal(a, b) for a, b in zip(got, probed))
    assert np.allclose([float(np.median(g)) for g in got], [20, 70, 190], atol=3)  # frame i is grey 10 * i
    with pytest.raises(AssertionError, match="probed"):
        next(read_frames(path, [1]))


def test_select_expr_compresses_runs():
    assert select_expr([5, 1, 2, 3, 9, 9]) == "between(n,1,3)+eq(n,5)+eq(n,9)"
    assert select_expr([]) == "0"


def test_frame_reader_pads_odd_sizes_with_black(tmp_path):
    path = tmp_path / "odd.mp4"
    subprocess.run([ffmpeg_exe(), "-v", "error", "-f", "lavfi", "-i", "color=c=white:s=65x49:r=10", "-frames:v", "3",
                    "-c:v", "libx264", "-pix_fmt", "yuv444p", str(path)], check=True)
    info = probe(path)
    assert info.size == (65, 49)
    with FrameReader(path, info.size, "yuv420p", pad_even=True) as r:
        bufs = [bytes(b) for b in r]
    assert r.size == (66, 50) and len(bufs) == 3
    y = np.frombuffer(bufs[0], np.uint8)[: 66 * 50].reshape(50, 66)
    assert y[:49, :65].min() > 200 and y[49, :].max() <= 20 and y[:, 65].max() <= 20


def test_writer_takes_yuv_raw_files_and_black_frames(tmp_path):
    w, h = 64, 48
    yuv = np.full((h * 3 // 2, w), 128, np.uint8)
    yuv[:h] = 200
    with VideoWriter(tmp_path / "y.mp4", 10.0, (w, h), pix_fmt="yuv420p", threads=1) as wr:
        wr.write(yuv)
        wr.write_raw(yuv.tobytes())
    assert count_frames(tmp_path / "y.mp4") == 2
    raw = tmp_path / "f.yuv"
    raw.write_bytes(yuv.tobytes() * 5)
    with VideoWriter(tmp_path / "r.mp4", 10.0, (w, h), pix_fmt="yuv420p", source=RawFile(raw, 5)):
        pass
    with VideoWriter(tmp_path / "b.mp4", 10.0, (w, h), source=BlackFrames(7), metadata={"comment": "vistest:b"}):
        pass
    assert count_frames(tmp_path / "r.mp4") == 5 and count_frames(tmp_path / "b.mp4") == 7
    assert probe(tmp_path / "b.mp4").metadata["comment"] == "vistest:b"
    assert decode(tmp_path / "b.mp4", w, h).max() <= 2
    assert int(np.median(decode(tmp_path / "r.mp4", w, h))) == int(np.median(decode(tmp_path / "y.mp4", w, h)))
    with pytest.raises(ValueError, match=r"expected 4608 bytes"):
        with VideoWriter(tmp_path / "x.mp4", 10.0, (w, h), pix_fmt="yuv420p") as wr:
            wr.write_raw(b"short")
    assert sorted(p.name for p in tmp_path.glob("*.mp4")) == ["b.mp4", "r.mp4", "y.mp4"]
