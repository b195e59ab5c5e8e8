"""Sampler profiles against hand-computed values of each evaluator's formula.

Each expected list below is worked out by hand in the comment next to it (float64 for
Python/numpy arithmetic, float32 for torch.linspace, round-half-to-even everywhere an
evaluator rounds, truncation where it calls int()).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from vistest import layout
from vistest.budget.sampling import PROFILES, qwen_smart_nframes, select_frames, torch_linspace_f32
from vistest.budgets import Budget, budget_json, budget_label, budget_sort_key, parse_budget, parse_budgets
from vistest.errors import InputError


def sel(profile, n_frames, budget, fps=None, **opts):
    out = select_frames(profile, n_frames, budget, fps=fps, **opts)
    assert out.dtype == np.int64
    return out.tolist()


# ---- uniform: np.linspace(0, N-1, n, dtype=int) ----------------------------------------
@pytest.mark.parametrize("n_frames,budget,expected", [
    (13, 5, [0, 3, 6, 9, 12]),      # step 12/4 = 3 exactly
    (11, 4, [0, 3, 6, 10]),         # 0, 3.33, 6.67, 10 -> floor
    (3, 5, [0, 0, 1, 1, 2]),        # N < n: step 0.5 -> 0, .5, 1, 1.5, 2 -> duplicates
    (10, 1, [0]),                   # n = 1: only the start
    (1, 3, [0, 0, 0]),              # one decoded frame
])
def test_uniform(n_frames, budget, expected):
    assert sel("uniform", n_frames, budget) == expected


# ---- vlmevalkit-uniform-tail: uniform + N-1 when absent ---------------------------------
def test_uniform_tail_appends_only_when_last_frame_missing():
    assert sel("vlmevalkit-uniform-tail", 11, 4) == [0, 3, 6, 10]  # linspace already ends on N-1
    assert sel("vlmevalkit-uniform-tail", 10, 1) == [0, 9]         # n = 1: [0] + [N-1]: two frames
    assert sel("vlmevalkit-uniform-tail", 1, 1) == [0]             # 0 == N-1: nothing appended
    assert sel("vlmevalkit-uniform-tail", 3, 5) == [0, 0, 1, 1, 2]


# ---- vlmevalkit-chunk-center: seg = N/n; int(seg/2 + np.round(seg*i)), clipped -----------
def test_chunk_center_ties_round_half_even():
    # seg = 2.5, seg/2 = 1.25; seg*i = 0, 2.5, 5, 7.5 -> np.round: 0, 2 (tie -> even), 5, 8 (tie -> even)
    # -> 1.25, 3.25, 6.25, 9.25 -> int: 1, 3, 6, 9 (round-half-up would give 1, 4, 6, 9)
    assert sel("vlmevalkit-chunk-center", 10, 4) == [1, 3, 6, 9]


def test_chunk_center_clips_when_n_exceeds_frames():
    # N=2, n=4: seg = .5, seg/2 = .25; seg*i = 0, .5, 1, 1.5 -> round: 0, 0 (tie), 1, 2 (tie)
    # -> .25, .25, 1.25, 2.25 -> 0, 0, 1, 2 -> clip to [0, 1] -> 0, 0, 1, 1
    assert sel("vlmevalkit-chunk-center", 2, 4) == [0, 0, 1, 1]
    assert sel("vlmevalkit-chunk-center", 10, 1) == [5]  # seg = 10 -> 5


# ---- vlmevalkit-generic: step = N/(n+1); int(i*step), i = 1..n -----------------------------
@pytest.mark.parametrize("n_frames,budget,expected", [
    (10, 4, [2, 4, 6, 8]),          # step 2
    (10, 3, [2, 5, 7]),             # step 2.5 -> 2.5, 5, 7.5 truncated
    (10, 1, [5]),                   # step 5
    (3, 5, [0, 1, 1, 2, 2]),        # step .5 -> .5, 1, 1.5, 2, 2.5
    (1, 1, [0]),                    # step .5
])
def test_vlmevalkit_generic(n_frames, budget, expected):
    assert sel("vlmevalkit-generic", n_frames, budget) == expected


# ---- internvl: seg = (N-1)/n; int(seg/2 + np.round(seg*i)) ---------------------------------
def test_internvl():
    # seg = 10/4 = 2.5, seg/2 = 1.25; round(0, 2.5, 5, 7.5) = 0, 2, 5, 8 -> 1, 3, 6, 9
    assert sel("internvl", 11, 4) == [1, 3, 6, 9]
    assert sel("internvl", 11, 1) == [5]                    # seg = 10 -> 5
    # N < n: seg = 2/5 = .4, seg/2 = .2; round(0, .4, .8, 1.2, 1.6) = 0, 0, 1, 1, 2
    assert sel("internvl", 3, 5) == [0, 0, 1, 1, 2]
    assert sel("internvl", 1, 3) == [0, 0, 0]               # seg = 0


def test_internvl_fps_clamp_is_reproduced():
    # end_idx = min(round(100000 * fps), N-1): with fps = 1e-4 that is 10, not 100
    # seg = 10/2 = 5 -> 2.5 + round(0) = 2, 2.5 + round(5) = 7
    assert sel("internvl", 101, 2, fps=1e-4) == [2, 7]
    assert sel("internvl", 101, 2) == [25, 75]              # seg = 50
    assert sel("internvl", 101, 2, fps=30.0) == [25, 75]    # clamp inactive


# ---- qwen-vl-utils -------------------------------------------------------------------------
def test_qwen_nframes_rounds_budget_to_even_with_ties_to_even():
    assert qwen_smart_nframes(100, nframes=3) == 4   # round(1.5) = 2 -> 4
    assert qwen_smart_nframes(100, nframes=5) == 4   # round(2.5) = 2 -> 4
    assert qwen_smart_nframes(100, nframes=7) == 8   # round(3.5) = 4 -> 8
    # N=10, nframes 4: float32 linspace(0, 9, 4) = 0, 3, 6, 9
    assert sel("qwen-vl-utils", 10, 5) == [0, 3, 6, 9]
    assert sel("qwen-vl-utils", 10, 3) == [0, 3, 6, 9]


def test_qwen_nframes_values():
    # linspace(0, 99, 16): step 6.6 -> 0, 6.6, 13.2, 19.8, 26.4, 33, 39.6, 46.2, 52.8, 59.4, 66, 72.6, 79.2,
    # 85.8, 92.4, 99 -> rounded (note 6.6 -> 7, where np.linspace(dtype=int) truncates to 6)
    assert sel("qwen-vl-utils", 100, 16) == [0, 7, 13, 20, 26, 33, 40, 46, 53, 59, 66, 73, 79, 86, 92, 99]
    assert sel("qwen-vl-utils", 8, 8) == list(range(8))


def test_qwen_nframes_out_of_range_raises_like_the_evaluator():
    with pytest.raises(ValueError, match=r"nframes should be in \[2, 10\].*got 0"):
        select_frames("qwen-vl-utils", 10, 1)          # n = 1 -> round(0.5) = 0
    with pytest.raises(ValueError, match=r"nframes should be in \[2, 5\].*got 8"):
        select_frames("qwen-vl-utils", 5, 8)           # N < n


def test_torch_linspace_float32_half_split():
    # linspace(0, 47, 23): step = f32(47)/f32(22); index 11 = steps//2 is in the second half:
    # 47 - 11*step, rounded once to float32, lands just below 23.5 -> round gives 23, while the
    # exact value 47*11/22 = 23.5 rounds half-to-even to 24.
    v = torch_linspace_f32(0, 47, 23)
    assert v.dtype == np.float32
    step = Fraction(float(np.float32(47) / np.float32(22)))
    expected = np.float32(float(47 - 11 * step))
    assert v[11] == expected and expected < np.float32(23.5)
    assert int(np.rint(v[11])) == 23 and round(Fraction(47 * 11, 22)) == 24
    # first half: start + step*i
    assert v[5] == np.float32(float(5 * step))
    assert torch_linspace_f32(3, 9, 1).tolist() == [3.0]  # steps == 1 -> [start]


def test_qwen_float32_differs_from_float64():
    # N=12342, nframes 768: index 528 (second half, k = 767-528 = 239):
    # float32 12341 - 239*step = 8495.5 exactly -> half-even -> 8496; the exact value
    # 12341*528/767 = 8495 + 383/767 rounds to 8495 (so does a float64 linspace).
    idx = select_frames("qwen-vl-utils", 12342, 768)
    step = Fraction(float(np.float32(12341) / np.float32(767)))
    assert np.float32(float(12341 - 239 * step)) == np.float32(8495.5)
    assert idx[528] == 8496
    assert round(Fraction(12341 * 528, 767)) == 8495
    assert int(np.rint(np.linspace(0, 12341, 768)[528])) == 8495


def test_qwen_fma_option():
    # N=10631, nframes 768, index 593 (k = 174): contracted (one rounding) gives 8218.501 -> 8219,
    # the DEFAULT build (product rounded first) gives 8218.5 -> 8218 (tie to even).
    step32 = np.float32(10630) / np.float32(767)
    fused = np.float32(float(10630 - 174 * Fraction(float(step32))))
    plain = np.float32(10630) - np.float32(step32 * np.float32(174))
    assert int(np.rint(fused)) == 8219 and int(np.rint(plain)) == 8218
    assert select_frames("qwen-vl-utils", 10631, 768)[593] == 8219
    assert select_frames("qwen-vl-utils", 10631, 768, fma=False)[593] == 8218


def test_qwen_fps_mode():
    # N=90 at 30 fps: 3 s * 2 fps = 6 frames; linspace(0, 89, 6): step 17.8 -> 0, 17.8, 35.6, 53.4, 71.2, 89
    assert sel("qwen-vl-utils-fps", 90, 64, fps=30.0) == [0, 18, 36, 53, 71, 89]
    # min_frames: 30 frames at 30 fps -> 2, raised to 4: 0, 9.67, 19.33, 29
    assert sel("qwen-vl-utils-fps", 30, 64, fps=30.0) == [0, 10, 19, 29]
    # budget as max_frames: 20 wanted, cap 4 (5 floors to 4): 0, 99.67, 199.33, 299
    assert sel("qwen-vl-utils-fps", 300, 4, fps=30.0) == [0, 100, 199, 299]
    assert sel("qwen-vl-utils-fps", 300, 5, fps=30.0) == [0, 100, 199, 299]
    # capped by N (odd) then floored to even: 5 frames at 1 fps * 2 = 10 -> 5 -> 4: 0, 1.33, 2.67, 4
    assert sel("qwen-vl-utils-fps", 5, 64, fps=1.0) == [0, 1, 3, 4]
    # sample_fps 1: 3 frames, raised to min_frames 4: 0, 29.67, 59.33, 89
    assert sel("qwen-vl-utils-fps", 90, 64, fps=30.0, sample_fps=1.0) == [0, 30, 59, 89]
    with pytest.raises(ValueError, match="got 0"):
        select_frames("qwen-vl-utils-fps", 300, 1, fps=30.0)
    with pytest.raises(ValueError, match="fps"):
        select_frames("qwen-vl-utils-fps", 300, 4)


def test_lmms_eval_qwen2_5_vl():
    # decoded (fps mode, 2 fps): N=90 at 30 fps -> [0, 18, 36, 53, 71, 89]; positions
    # np.linspace(0, 5, 4, dtype=int) = 0, 1, 3, 5
    assert sel("lmms-eval-qwen2.5-vl", 90, 4, fps=30.0) == [0, 18, 53, 89]
    assert sel("lmms-eval-qwen2.5-vl", 90, 1, fps=30.0) == [0, 89]    # [0] + last position appended
    assert sel("lmms-eval-qwen2.5-vl", 90, 16, fps=30.0) == [0, 18, 36, 53, 71, 89]  # unique positions


# ---- llava-vid: step = round(fps / sample_fps); uniform when that exceeds n -----------------
def test_llava_vid():
    assert sel("llava-vid", 100, 16, fps=30.0) == [0, 30, 60, 90]        # step 30, 4 <= 16
    assert sel("llava-vid", 100, 3, fps=30.0) == [0, 49, 99]             # 4 > 3 -> linspace(0, 99, 3): 0, 49.5, 99
    assert sel("llava-vid", 10, 8, fps=2.5) == [0, 2, 4, 6, 8]           # round(2.5) = 2 (tie -> even)
    assert sel("llava-vid", 10, 8, fps=3.5) == [0, 4, 8]                 # round(3.5) = 4
    assert sel("llava-vid", 100, 4, fps=30.0, force_sample=True) == [0, 33, 66, 99]
    assert sel("llava-vid", 100, 16, fps=30.0, sample_fps=2) == [0, 15, 30, 45, 60, 75, 90]
    assert sel("llava-vid", 10, 16, fps=30.0) == [0]                     # N < step
    with pytest.raises(ValueError, match="step 0"):
        select_frames("llava-vid", 10, 4, fps=0.4)                        # round(0.4) = 0
    with pytest.raises(ValueError, match="fps"):
        select_frames("llava-vid", 10, 4)


# ---- all, "all" budget, validation ---------------------------------------------------------
def test_all_profile_and_all_budget():
    assert sel("all", 5, 2) == [0, 1, 2, 3, 4]
    for name in PROFILES:
        assert sel(name, 7, "all", fps=30.0) == list(range(7))


def test_every_profile_stays_in_range_and_is_sorted():
    for name in PROFILES:
        for n_frames in (2, 3, 17, 100, 1000):
            for budget in (2, 4, 16, 32, 64):
                try:
                    idx = select_frames(name, n_frames, budget, fps=30.0)
                except ValueError:
                    assert name.startswith("qwen")  # the evaluator raises for N < n
                    continue
                assert idx.min() >= 0 and idx.max() <= n_frames - 1
                assert (np.diff(idx) >= 0).all(), (name, n_frames, budget)


def test_validation_errors():
    with pytest.raises(ValueError, match="unknown sampler profile 'nope'"):
        select_frames("nope", 10, 4)
    with pytest.raises(ValueError, match="num_frames: expected a positive integer"):
        select_frames("uniform", 0, 4)
    with pytest.raises(ValueError, match="budget: expected a positive integer or 'all'"):
        select_frames("uniform", 10, 0)
    with pytest.raises(ValueError, match="unknown option"):
        select_frames("uniform", 10, 4, fma=False)
    with pytest.raises(ValueError, match="fps: expected a positive number"):
        select_frames("llava-vid", 10, 4, fps=-1.0)


def test_parse_budgets():
    assert parse_budgets("16,32, 64,all") == (16, 32, 64, "all")
    assert parse_budget("all_frame") == "all" and parse_budget(8) == 8
    for bad in ("16,16", "0", "", "16,x", "-4"):
        with pytest.raises(ValueError, match="--budgets"):
            parse_budgets(bad)


def test_a_budget_is_spelled_once():
    """Budget: the value, label, JSON value, ReVSI folder and file names (written out here as
    ReVSI names them), numeric order with all last; the run folder's names come from it."""
    for text, frames, value, label in (("16", 16, 16, "16"), (" 64 ", 64, 64, "64"), (np.int64(8), 8, 8, "8"),
                                       ("ALL", None, "all", "all"), ("all_frame", None, "all", "all")):
        b = Budget.parse(text)
        assert (b.frames, b.to_json(), b.label, b.is_all) == (frames, value, label, frames is None)
        assert Budget.from_json(b.to_json()) == b and Budget.parse(b.label) == b
        assert (b.folder, b.file_name) == (f"{label}_frame", f"{label}_frame.jsonl")
        assert (parse_budget(text), budget_label(value), budget_json(label)) == (value, label, value)
    assert layout.budget_file_name("all") == "all_frame.jsonl" and layout.budget_of_file("32_frame.jsonl") == "32"
    assert layout.budget_video_path("s", 16) == "16_frame/s.mp4" and layout.is_budget_folder("all_frame")
    assert sorted([Budget.parse("all"), Budget(64), Budget(8)]) == [Budget(8), Budget(64), Budget(None)]
    labels = ["all", "64", "x", "8", "16"]  # what the score tables sort: numbers, then all, then anything else
    assert sorted(labels, key=budget_sort_key) == ["8", "16", "64", "all", "x"]
    for bad in (0, -3, True, 2.0, "1.5", None, "al"):
        with pytest.raises(InputError, match="^f: expected a positive integer or 'all', got"):
            Budget.parse(bad, "f")


def test_matches_torch_when_available():
    """Only where torch is installed (not a dependency): bit-for-bit against torch.linspace."""
    torch = pytest.importorskip("torch")
    fma = torch.backends.cpu.get_cpu_capability() != "DEFAULT"
    for n_frames in list(range(1, 300, 7)) + [10631, 12342, 33087]:
        for steps in (1, 2, 3, 7, 16, 23, 32, 64, 256, 768):
            ref = torch.linspace(0, n_frames - 1, steps).numpy()
            assert np.array_equal(torch_linspace_f32(0, n_frames - 1, steps, fma=fma), ref), (n_frames, steps)


@pytest.mark.parametrize("rounding, version, expected", [("floor", "0.0.10 and later", 28), ("round", "0.0.8", 30)])
def test_frames_says_which_qwen_vl_utils_rounding_it_used(rounding, version, expected):
    """STI-Bench's client on a 101-frame 29.97 fps clip: sample_fps = 30 / (101 / 29.97) makes the product
    101 / 29.97 * sample_fps fall just under 30 in float arithmetic, so 0.0.10's floor_by_factor takes 28 and
    0.0.8's round_by_factor 30; `vistest frames` prints the indices and names the rounding and version."""
    import json

    from click.testing import CliRunner

    from vistest.cli import main

    product = 101 / 29.97 * (30 / (101 / 29.97))
    assert product < 30 and (int(product // 2) * 2, round(product / 2) * 2) == (28, 30)
    r = CliRunner().invoke(main, ["frames", "-p", "qwen-vl-utils-fps", "-n", "30", "-N", "101", "--fps", "29.97",
                                  "-O", "sample_frames=30", "-O", f"rounding={rounding}"])
    assert r.exit_code == 0, r.output
    assert len(json.loads(r.stdout)) == expected
    assert f"_by_factor, qwen-vl-utils {version} fps mode" in r.stderr and f"; {expected} frames" in r.stderr
    nframes_mode = CliRunner().invoke(main, ["frames", "-p", "qwen-vl-utils", "-n", "7", "-N", "50"])
    assert "round_by_factor" in nframes_mode.stderr
    assert CliRunner().invoke(main, ["frames", "-n", "7", "-N", "50"]).stderr == ""
