"""The all-intra frame pool: access units of an Annex-B stream, and videos assembled from them.

A tiny pool (64x48, 12 distinct frames, libx264 -g 1) is split into access units, read whole
and in chunks of every awkward size; a video muxed from a sequence of its units (repeats and
reordering included) must decode to exactly those frames, each equal to the pool's own decode.
"""
import subprocess

import numpy as np
import pytest

from vistest.videos.ffmpeg import VideoWriter, ffmpeg_exe, mp4_sample_count, mux_h264_command, probe, read_frames
from vistest.videos.pool import BLACK, PoolPlan, access_units, concat_list, file_access_units
from vistest.videos.plan import Variant

W, H, N = 64, 48, 12


def frame(k):
    """A distinct yuv420p frame: a gradient shifted by k, a square moving with k."""
    y = ((np.arange(W)[None, :] * 3 + np.arange(H)[:, None] * 2 + 17 * k) % 220 + 16).astype(np.uint8)
    y[4:20, 4 + 3 * k:20 + 3 * k] = 235
    uv = np.full((H // 2 * W // 2 * 2,), 128 - 5 * (k % 7), np.uint8)
    return np.concatenate([y.ravel(), uv]).reshape(H * 3 // 2, W)


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    path = tmp_path_factory.mktemp("pool") / "pool.h264"
    with VideoWriter(path, 1.0, (W, H), crf=10, preset="veryfast", pix_fmt="yuv420p", verify=False,
                     intra=True) as w:
        for k in range(N):
            w.write(frame(k))
    return path


def decoded(path, n):
    return [f.copy() for f in read_frames(path, range(n), "yuv420p", size=(W, H))]


def test_access_units_one_per_frame_whole_or_in_chunks(pool):
    data = pool.read_bytes()
    units = access_units(data)
    assert len(units) == N and units[0].start == 0 and units[-1].end == len(data)
    assert all(a.end == b.start for a, b in zip(units, units[1:]))
    assert all(u.start <= u.vcl < u.end for u in units)
    for chunk in (1, 2, 3, 5, 7, 64, 1000, 1 << 20):
        assert file_access_units(pool, chunk) == units, chunk
    with pytest.raises(ValueError, match="has no slice"):
        access_units(data[:units[0].vcl])  # parameter sets without a picture


def test_a_sequence_of_units_decodes_to_those_frames(pool, tmp_path):
    units = file_access_units(pool)
    ref = decoded(pool, N)
    order = [5, 0, 0, 11, 3, 5, 7]  # repeats, out of order
    lst = tmp_path / "list.txt"
    lst.write_text(concat_list(pool, units, order))
    out = tmp_path / "out.mp4"
    subprocess.run(mux_h264_command([(lst, out, {"comment": "vistest:abc"})], 1.0), check=True)
    assert mp4_sample_count(out) == len(order)
    info = probe(out)
    assert info.fps == 1.0 and info.size == (W, H) and info.metadata["comment"] == "vistest:abc"
    got = decoded(out, len(order))
    assert all(np.array_equal(g, ref[k]) for g, k in zip(got, order))
    r = subprocess.run([ffmpeg_exe(), "-v", "error", "-i", str(out), "-f", "null", "-"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == ""


def test_pool_plan_orders_entries_and_maps_every_frame():
    mask = ((0, 0, 8, 8),)
    a = Variant("s", "budget", "16_frame/s.mp4", 1.0, (W, H), (0, 2, 2, 5), "k1")
    b = Variant("s", "dummy", "dummy_black/16_frame/s/x.mp4", 1.0, (W, H), (0, 2, 2, 5), "k2", black=(2,))
    c = Variant("s", "dummy", "dummy_mask/16_frame/s/y.mp4", 1.0, (W, H), (0, 5), "k3", masks=((5, mask),),
                fill="black")
    p = PoolPlan.of([c, b, a])
    assert p.entries == (BLACK, ("frame", 0), ("frame", 2), ("frame", 5), ("mask", 5, mask, "black"))
    assert p.uses[a.path] == (1, 2, 2, 3) and p.uses[b.path] == (1, 0, 0, 3) and p.uses[c.path] == (1, 4)
    assert p.by_frame()[5] == [("frame", 5), ("mask", 5, mask, "black")]
