"""FrameSelection: which decoded frames an evaluator feeds the model (stage 3 of the pipeline).

A *sampler profile* maps (decoded frame count ``N``, frame budget ``n``, video fps) to the
exact 0-based decoded frame indices one evaluator samples. Evaluators differ by a frame or
two, and sometimes in count, so each profile re-implements one evaluator's arithmetic
exactly: the same dtype (float64 for Python floats, float32 where torch computes), the same
rounding (Python ``round``/``np.round``/``torch.round`` are all round-half-to-even; ``int()``
and integer ``astype`` truncate toward zero) and the same clipping. Each function's
docstring names the file and function it reproduces (see docs/sampling.md).

Conventions:

* ``num_frames`` (N): decoded frames in the video (``len(decord.VideoReader)``), >= 1.
* ``budget`` (n): a positive int, or ``"all"``. ``"all"`` means the model sees every
  decoded frame (ReVSI's ``all_frame`` condition): ``0..N-1`` for every profile.
* ``fps``: the video's average frame rate (``VideoReader.get_avg_fps()``), frames per
  second; only the profiles that need it (``needs_fps``) read it. An NTSC rate is the rational
  30000/1001 (29.97002997... as a double, what decord and PyAV return), not 29.97: the frame
  count of a client that multiplies by the rate can differ by 2 between the two
  (:func:`parse_rate` reads "30000/1001"; vistest.videos.ffmpeg.average_frame_rate reads a video's).
* Results are ``np.ndarray`` of int64 in selection order. Duplicates are kept (when
  N < n most evaluators sample a frame more than once) and the length may differ from n
  (``vlmevalkit-uniform-tail`` can append a frame, ``qwen-vl-utils`` rounds n to even).

Nothing here imports torch; the float32 arithmetic of ``torch.linspace`` is reproduced
in numpy by :func:`torch_linspace_f32`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Mapping

import numpy as np

from ..budgets import ALL, BudgetValue, parse_budget
from ..errors import InputError

DEFAULT_PROFILE = "uniform"  # the sampler profile of every command unless --profile says otherwise

# qwen-vl-utils constants (qwen_vl_utils/vision_process.py, versions 0.0.8 to 0.0.14)
QWEN_FRAME_FACTOR = 2
QWEN_FPS = 2.0
QWEN_FPS_MIN_FRAMES = 4
QWEN_FPS_MAX_FRAMES = 768


# ---------------------------------------------------------------------------------------
# numeric helpers
# ---------------------------------------------------------------------------------------
def _trunc_int(x: np.ndarray) -> np.ndarray:
    """Python ``int(x)`` elementwise for float64 values: truncation toward zero."""
    return np.trunc(np.asarray(x, dtype=np.float64)).astype(np.int64)


def torch_linspace_f32(start: float, end: float, steps: int, fma: bool = True) -> np.ndarray:
    """``torch.linspace(start, end, steps)`` (default dtype float32) on CPU, in numpy.

    Reproduces ``linspace_kernel`` in pytorch ``aten/src/ATen/native/cpu/RangeFactoriesKernel.cpp``
    (and ``steps == 1`` filling ``start``, from ``native/RangeFactories.cpp``): start and end
    are cast to float32, ``step = (end - start) / (steps - 1)`` in float32, then element i is
    ``start + step * i`` for ``i < steps // 2`` and ``end - step * (steps - 1 - i)`` otherwise.

    ``fma``: the x86-64 AVX2/AVX512 builds of that kernel (what ``torch`` dispatches to on
    any current x86 CPU) are compiled with FMA contraction, so ``end - step * k`` is rounded
    to float32 *once* (the exact product is not rounded first). ``fma=False`` reproduces the
    DEFAULT-capability build (``ATEN_CPU_CAPABILITY=default``), which rounds the product
    and the difference separately. Verified bit-exact against torch 2.13 CPU for both.
    Exactness of the single rounding: step has a 24-bit significand and ``k < 2**24``, so
    ``step * k`` and ``end -/+ step * k`` are exact in float64 for the ranges used here
    (``|start|, |end| < 2**24``, ``steps < 2**24``); one cast to float32 then rounds once.
    """
    if steps < 1:
        raise ValueError(f"steps: expected a positive integer, got {steps!r}")
    s32, e32 = np.float32(start), np.float32(end)
    if steps == 1:
        return np.array([s32], dtype=np.float32)
    step = (e32 - s32) / np.float32(steps - 1)  # float32 / float32 -> float32, one rounding
    half = steps // 2
    i = np.arange(steps, dtype=np.int64)
    k = steps - 1 - i[half:]
    if fma:
        lo = (np.float64(s32) + np.float64(step) * i[:half].astype(np.float64)).astype(np.float32)
        hi = (np.float64(e32) - np.float64(step) * k.astype(np.float64)).astype(np.float32)
    else:
        lo = s32 + step * i[:half].astype(np.float32)
        hi = e32 - step * k.astype(np.float32)
    return np.concatenate([lo, hi]).astype(np.float32)


def _py_round(x: float) -> int:
    """Python 3 ``round(x)`` on a float: nearest integer, ties to even."""
    return int(round(x))


# ---------------------------------------------------------------------------------------
# profiles: each takes (N, n, fps, **opts) with N >= 1 and n a positive int
# ---------------------------------------------------------------------------------------
def uniform(num_frames: int, budget: int, fps: float | None = None) -> np.ndarray:
    """``np.linspace(0, N-1, n, dtype=int)``: float64 grid, floored (all >= 0, so truncated).

    Reproduces lmms-eval ``llava_onevision.py`` / ``longva.py`` ``load_video``
    (``uniform_sampled_frames``), ``llava_vid.py`` when it falls back to uniform, and VLMEvalKit
    ``vlmeval/dataset/vsibench.py`` ``save_video_frames`` with ``sample_strategy='uniform'``.
    The endpoint N-1 is always included (numpy sets it exactly); n = 1 gives [0]; N < n
    repeats frames (e.g. N=3, n=5 -> [0, 0, 1, 1, 2]).
    """
    return np.linspace(0, num_frames - 1, budget, dtype=np.int64)


def vlmevalkit_uniform_tail(num_frames: int, budget: int, fps: float | None = None) -> np.ndarray:
    """Uniform, then append N-1 when it is not the last index.

    Reproduces VLMEvalKit ``vlmeval/dataset/vsibench.py`` ``save_video_frames``,
    ``sample_strategy='uniform_tail'`` (nframe mode). Because ``np.linspace`` already ends
    on N-1, the tail is appended only for n = 1 and N > 1 (giving 2 frames: [0, N-1]).
    """
    idx = uniform(num_frames, budget)
    if idx[-1] != num_frames - 1:
        idx = np.append(idx, num_frames - 1)
    return idx.astype(np.int64)


def vlmevalkit_chunk_center(num_frames: int, budget: int, fps: float | None = None) -> np.ndarray:
    """Centre of each of n equal chunks: ``seg = N / n``; ``int(seg/2 + np.round(seg*i))``, clipped.

    Reproduces VLMEvalKit ``vlmeval/dataset/vsibench.py`` ``save_video_frames``,
    ``sample_strategy='chunk_center'``: float64 ``seg``, ``np.round`` (half to even) of
    ``seg*i``, ``int()`` truncation, then ``np.clip(.., 0, N-1)``.
    """
    seg = float(num_frames) / budget
    i = np.arange(budget, dtype=np.float64)
    idx = _trunc_int(seg / 2 + np.round(seg * i))
    return np.clip(idx, 0, num_frames - 1).astype(np.int64)


def vlmevalkit_generic(num_frames: int, budget: int, fps: float | None = None) -> np.ndarray:
    """``step = N / (n+1)``; ``int(i * step)`` for i = 1..n (never frame 0 unless N <= n).

    Reproduces VLMEvalKit ``vlmeval/dataset/video_base.py`` ``VideoBaseDataset.save_video_frames``
    (nframe mode) and ``vlmeval/dataset/revsi.py`` ``ReVSI.save_video_frames`` (nframe > 0),
    the sampler VLMEvalKit's ReVSI dataset uses (it asks ``nframe = 128`` of the
    ``all_frame`` video).
    """
    step = num_frames / (budget + 1)
    i = np.arange(1, budget + 1, dtype=np.float64)
    return _trunc_int(i * step)


def internvl(num_frames: int, budget: int, fps: float | None = None, first_idx: int = 0) -> np.ndarray:
    """InternVL ``get_index`` with ``bound=None``: ``seg = (N-1)/n``; ``int(seg/2 + np.round(seg*i))``.

    Reproduces ``get_index(bound, fps, max_frame, first_idx=0, num_segments)`` in the
    InternVL README / lmms-eval ``models/simple/internvl2.py`` and ``internvl3.py``:
    ``max_frame = N - 1``; without a bound ``start_idx = max(first_idx, round(-100000 * fps))``
    and ``end_idx = min(round(100000 * fps), max_frame)`` (Python ``round``);
    ``seg = float(end_idx - start_idx) / n``; index ``int(start_idx + seg/2 + np.round(seg*i))``.
    When ``fps`` is None the 100000-second clamps are taken as inactive (start 0 .. N-1),
    which they are for any video shorter than 100000 s. No clipping (none is needed).
    """
    max_frame = num_frames - 1
    if fps is None:
        start_idx, end_idx = max(first_idx, 0), max_frame
    else:
        start_idx = max(first_idx, _py_round(-100000 * fps))
        end_idx = min(_py_round(100000 * fps), max_frame)
    seg = float(end_idx - start_idx) / budget
    i = np.arange(budget, dtype=np.float64)
    return _trunc_int(start_idx + seg / 2 + np.round(seg * i))


def qwen_round_by_factor(number: float, factor: int = QWEN_FRAME_FACTOR) -> int:
    """qwen-vl-utils ``round_by_factor``: ``round(number / factor) * factor`` (ties to even)."""
    return _py_round(number / factor) * factor


def qwen_ceil_by_factor(number: float, factor: int = QWEN_FRAME_FACTOR) -> int:
    """qwen-vl-utils ``ceil_by_factor``: ``math.ceil(number / factor) * factor``."""
    return math.ceil(number / factor) * factor


def qwen_floor_by_factor(number: float, factor: int = QWEN_FRAME_FACTOR) -> int:
    """qwen-vl-utils ``floor_by_factor``: ``math.floor(number / factor) * factor``."""
    return math.floor(number / factor) * factor


def qwen_smart_nframes(num_frames: int, fps: float | None = None, *, nframes: float | None = None,
                       sample_fps: float | None = None, min_frames: float | None = None,
                       max_frames: float | None = None, rounding: str = "floor") -> int:
    """qwen-vl-utils ``smart_nframes(ele, total_frames, video_fps)``: how many frames it decodes.

    ``nframes`` mode (``ele["nframes"]``): ``round_by_factor(nframes, 2)``.
    fps mode (otherwise): ``nf = N / video_fps * sample_fps`` (default 2.0 frames/s), clamped to
    ``[ceil_by_factor(min_frames (4)), floor_by_factor(max_frames (min(768, N)))]`` and to N,
    then ``floor_by_factor(nf, 2)`` (qwen-vl-utils 0.0.10 and later); ``rounding="round"``: qwen-vl-utils
    0.0.8's ``round_by_factor(min(max(nf, min_frames), max_frames), 2)`` (no clamp to N, then the
    check), which takes 30 where the float product falls just under 30 (STI-Bench's client, issue
    #38). Both modes raise InputError unless ``2 <= nf <= N``,
    as qwen-vl-utils does (so N < n, or n = 1, fails in that evaluator too).
    """
    if nframes is not None:
        if sample_fps is not None or min_frames is not None or max_frames is not None:
            raise InputError("qwen-vl-utils: nframes mode takes no sample_fps/min_frames/max_frames "
                             "(qwen-vl-utils asserts 'Only accept either `fps` or `nframes`')")
        nf = qwen_round_by_factor(nframes)
    else:
        if fps is None or not fps > 0:
            raise InputError(f"fps: qwen-vl-utils fps mode needs the video fps (a positive number), got {fps!r}")
        rate = QWEN_FPS if sample_fps is None else float(sample_fps)
        lo = qwen_ceil_by_factor(QWEN_FPS_MIN_FRAMES if min_frames is None else min_frames)
        hi = qwen_floor_by_factor(min(QWEN_FPS_MAX_FRAMES, num_frames) if max_frames is None else max_frames)
        nf_f = num_frames / fps * rate
        if rounding == "round":
            nf = qwen_round_by_factor(min(max(nf_f, lo), hi))
        elif rounding == "floor":
            nf = qwen_floor_by_factor(min(min(max(nf_f, lo), hi), num_frames))
        else:
            raise InputError(f"rounding: expected 'floor' (qwen-vl-utils >= 0.0.10) or 'round' (0.0.8), got "
                             f"{rounding!r}")
    if not (QWEN_FRAME_FACTOR <= nf <= num_frames):
        raise InputError(f"qwen-vl-utils: nframes should be in [{QWEN_FRAME_FACTOR}, {num_frames}] "
                         f"(the decoded frame count), got {nf}; the evaluator raises here too")
    return int(nf)


def qwen_indices(num_frames: int, nframes: int, fma: bool = True) -> np.ndarray:
    """``torch.linspace(0, N-1, nframes).round().long()``: float32 grid, round half to even."""
    return np.rint(torch_linspace_f32(0, num_frames - 1, nframes, fma=fma)).astype(np.int64)


def qwen_vl_utils(num_frames: int, budget: int, fps: float | None = None, fma: bool = True) -> np.ndarray:
    """qwen-vl-utils, ``nframes`` mode: ``{"video": ..., "nframes": n}``.

    Reproduces ``qwen_vl_utils/vision_process.py`` (qwen-vl-utils 0.0.8-0.0.14, QwenLM
    Qwen2.5-VL / Qwen3-VL repos): ``smart_nframes`` (n rounded to a multiple of 2 with
    Python ``round``, so 3 -> 4, 5 -> 4, 1 -> 0 which raises), then ``_read_video_decord`` /
    ``_read_video_torchvision`` ``torch.linspace(0, N-1, nframes).round().long()``, computed in
    float32 as torch's CPU kernel does (see :func:`torch_linspace_f32`; ``fma`` option).
    """
    return qwen_indices(num_frames, qwen_smart_nframes(num_frames, fps, nframes=budget), fma=fma)


def qwen_vl_utils_fps(num_frames: int, budget: int, fps: float | None = None, sample_fps: float = QWEN_FPS,
                      min_frames: float = QWEN_FPS_MIN_FRAMES, max_frames: float | None = None,
                      fma: bool = True, sample_frames: int | None = None, rounding: str = "floor") -> np.ndarray:
    """qwen-vl-utils, fps mode: ``{"video": ..., "fps": sample_fps, "max_frames": n}``.

    Same source as :func:`qwen_vl_utils`; the budget n is passed as ``max_frames`` (the cap
    on decoded frames) unless ``max_frames`` is given explicitly. The frame count is
    ``floor_by_factor(min(max(N / fps * sample_fps, min_frames), max_frames, N), 2)``.

    ``sample_frames`` (STI-Bench's client), when given, sets the rate as MINT-SJTU/STI-Bench
    ``opensource_test.py`` ``compute_sample_fps(video_path, max_frames=MAX_FRAMES)`` does:
    ``duration = N / fps``; ``sample_fps = fps`` when ``N <= sample_frames``, else
    ``sample_frames / duration`` (float64; ``N / fps * sample_fps`` then falls just under
    ``sample_frames`` for some N, and the even floor takes 2 fewer frames). ``rounding``: the
    frame count's last step, ``"floor"`` (qwen-vl-utils >= 0.0.10) or ``"round"`` (0.0.8;
    :func:`qwen_smart_nframes`).
    """
    if sample_frames is not None:
        if isinstance(sample_frames, bool) or not isinstance(sample_frames, int) or sample_frames < 1:
            raise InputError(f"sample_frames: expected a positive integer, got {sample_frames!r}")
        if fps is None or not fps > 0:
            raise InputError(f"fps: qwen-vl-utils fps mode needs the video fps (a positive number), got {fps!r}")
        duration = num_frames / fps
        sample_fps = fps if num_frames <= sample_frames or duration == 0 else sample_frames / duration
    cap = budget if max_frames is None else max_frames
    nf = qwen_smart_nframes(num_frames, fps, sample_fps=sample_fps, min_frames=min_frames, max_frames=cap,
                            rounding=rounding)
    return qwen_indices(num_frames, nf, fma=fma)


def lmms_eval_qwen2_5_vl(num_frames: int, budget: int, fps: float | None = None, fma: bool = True) -> np.ndarray:
    """lmms-eval ``qwen2_5_vl`` model: qwen-vl-utils fps mode with defaults, then uniform over those.

    Reproduces lmms-eval ``lmms_eval/models/simple/qwen2_5_vl.py`` ``generate_until``: the
    video message carries no ``fps``/``nframes``, so ``process_vision_info`` decodes
    ``smart_nframes`` frames in fps mode (2 frames/s, 4 .. min(768, N)) at
    ``torch.linspace(0, N-1, nf).round()``; the model then keeps positions
    ``np.unique(np.linspace(0, nf-1, max_num_frames, dtype=int))`` (plus nf-1 if absent) of
    those decoded frames. ``budget`` is ``max_num_frames``. Result: sorted, without duplicates.
    """
    decoded = qwen_indices(num_frames, qwen_smart_nframes(num_frames, fps), fma=fma)
    nf = len(decoded)
    pos = np.unique(np.linspace(0, nf - 1, budget, dtype=np.int64))
    if nf - 1 not in pos:
        pos = np.unique(np.append(pos, nf - 1))
    return decoded[pos].astype(np.int64)


def llava_vid(num_frames: int, budget: int, fps: float | None = None, sample_fps: float = 1,
              force_sample: bool = False) -> np.ndarray:
    """LLaVA-Video: every ``round(fps / sample_fps)``-th frame, or uniform when that exceeds n.

    Reproduces lmms-eval ``lmms_eval/models/simple/llava_vid.py`` ``load_video`` (and
    LLaVA-NeXT ``playground/demo/video_demo.py`` ``load_video``, where sample_fps is 1):
    ``step = round(avg_fps / sample_fps)`` (Python round, ties to even; lmms-eval's
    ``video_fps`` model argument, default 1, is ``sample_fps`` here);
    ``frame_idx = range(0, N, step)``; if ``len(frame_idx) > n`` or ``force_sample``:
    ``np.linspace(0, N-1, n, dtype=int)``. A step of 0 (fps < sample_fps / 2) raises, as
    Python's ``range`` does in the evaluator.
    """
    if fps is None or not fps > 0:
        raise InputError(f"fps: llava-vid needs the video fps (a positive number), got {fps!r}")
    step = _py_round(fps / sample_fps)
    if step <= 0:
        raise InputError(f"llava-vid: round(fps / sample_fps) = round({fps} / {sample_fps}) = {step}; "
                         "the evaluator's range(0, N, step) raises for step 0")
    idx = np.arange(0, num_frames, step, dtype=np.int64)
    if len(idx) > budget or force_sample:
        idx = uniform(num_frames, budget)
    return idx


def all_frames(num_frames: int, budget: int, fps: float | None = None) -> np.ndarray:
    """Every decoded frame 0..N-1, whatever the budget (ReVSI ``all_frame``)."""
    return np.arange(num_frames, dtype=np.int64)


# ---------------------------------------------------------------------------------------
# registry
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Profile:
    """A named sampler profile: ``func(N, n, fps, **options) -> int64 indices``.

    ``source``: the evaluator file/function it reproduces. ``needs_fps``: whether the
    video fps is required. ``options``: the keyword options it accepts beyond (N, n, fps).
    """

    name: str
    func: Callable[..., np.ndarray]
    source: str
    needs_fps: bool = False
    options: tuple[str, ...] = field(default_factory=tuple)

    @property
    def summary(self) -> str:
        """First line of the function's docstring."""
        return (self.func.__doc__ or "").strip().splitlines()[0]

    def __call__(self, num_frames: int, budget: BudgetValue, fps: float | None = None, **opts: Any) -> np.ndarray:
        return select_frames(self.name, num_frames, budget, fps=fps, **opts)


PROFILES: dict[str, Profile] = {p.name: p for p in (
    Profile("uniform", uniform, "lmms-eval models/simple/llava_onevision.py, longva.py load_video; "
            "VLMEvalKit dataset/vsibench.py save_video_frames (uniform)"),
    Profile("vlmevalkit-uniform-tail", vlmevalkit_uniform_tail,
            "VLMEvalKit vlmeval/dataset/vsibench.py save_video_frames (uniform_tail)"),
    Profile("vlmevalkit-chunk-center", vlmevalkit_chunk_center,
            "VLMEvalKit vlmeval/dataset/vsibench.py save_video_frames (chunk_center)"),
    Profile("vlmevalkit-generic", vlmevalkit_generic,
            "VLMEvalKit vlmeval/dataset/video_base.py save_video_frames; vlmeval/dataset/revsi.py"),
    Profile("internvl", internvl, "InternVL README get_index / lmms-eval models/simple/internvl3.py get_index "
            "(bound=None)", options=("first_idx",)),
    Profile("qwen-vl-utils", qwen_vl_utils, "qwen_vl_utils/vision_process.py smart_nframes (nframes) + "
            "torch.linspace(0, N-1, nf).round()", options=("fma",)),
    Profile("qwen-vl-utils-fps", qwen_vl_utils_fps, "qwen_vl_utils/vision_process.py smart_nframes (fps, "
            "max_frames=n) + torch.linspace(0, N-1, nf).round()", needs_fps=True,
            options=("sample_fps", "min_frames", "max_frames", "fma", "sample_frames", "rounding")),
    Profile("lmms-eval-qwen2.5-vl", lmms_eval_qwen2_5_vl, "lmms-eval models/simple/qwen2_5_vl.py generate_until "
            "(qwen-vl-utils fps mode, then np.linspace over decoded frames)", needs_fps=True, options=("fma",)),
    Profile("llava-vid", llava_vid, "lmms-eval models/simple/llava_vid.py load_video; LLaVA-NeXT "
            "playground/demo/video_demo.py load_video", needs_fps=True, options=("sample_fps", "force_sample")),
    Profile("all", all_frames, "every decoded frame (ReVSI all_frame)"),
)}


def rounding_note(profile: str, options: Mapping[str, Any]) -> str | None:
    """How ``profile`` with ``options`` rounds the frame count, and which qwen-vl-utils versions that
    reproduces (None for profiles that do not round a count: their frame count is the budget).
    fps mode changed between versions: 0.0.8 ``round_by_factor``, 0.0.10 and later ``floor_by_factor``
    (:func:`qwen_smart_nframes`); nframes mode is ``round_by_factor`` in every version."""
    if profile == "qwen-vl-utils":
        return "frame count: round_by_factor(budget, 2), qwen-vl-utils nframes mode (the same in every version)"
    if profile == "lmms-eval-qwen2.5-vl":
        return "frame count: floor_by_factor, qwen-vl-utils 0.0.10 and later fps mode"
    if profile == "qwen-vl-utils-fps":
        if options.get("rounding", "floor") == "round":
            return "frame count: round_by_factor, qwen-vl-utils 0.0.8 fps mode (-O rounding=round)"
        return ("frame count: floor_by_factor, qwen-vl-utils 0.0.10 and later fps mode "
                "(0.0.8 rounds: -O rounding=round)")
    return None


def get_profile(name: str) -> Profile:
    """The registered profile ``name``; InputError listing the known ones otherwise."""
    try:
        return PROFILES[name]
    except KeyError:
        raise InputError(f"profile: unknown sampler profile {name!r}; expected one of "
                         f"{', '.join(sorted(PROFILES))}") from None


def check_options(profile: str, options: Mapping[str, Any]) -> None:
    """InputError unless every key of ``options`` is an option of ``profile`` (-O KEY=VALUE)."""
    prof = get_profile(profile)
    unknown = sorted(set(options) - set(prof.options))
    if unknown:
        raise InputError(f"profile {profile!r}: unknown option(s) {', '.join(unknown)}; "
                         f"expected {', '.join(prof.options) or 'none'}")


def parse_rate(value: Any, where: str = "fps") -> float:
    """A frame rate in frames/s as the clients hold it (a double): a positive finite number, or a string
    holding one (``"29.97"``) or a ratio of two (``"30000/1001"``, NTSC's rate, which a decimal only
    approximates). InputError naming ``where`` otherwise."""
    x: Any = value
    if isinstance(value, str):
        try:
            num, _, den = value.strip().partition("/")
            x = float(Fraction(num.strip()) / Fraction(den.strip())) if den else float(Fraction(num.strip()))
        except (ValueError, ZeroDivisionError):
            x = None
    if isinstance(x, bool) or not isinstance(x, (int, float, np.floating)) or not math.isfinite(x) or x <= 0:
        raise InputError(f"{where}: expected a positive frame rate in frames/s, a number or a ratio such as "
                         f"30000/1001, got {value!r}")
    return float(x)


def select_frames(profile: str, num_frames: int, budget: BudgetValue, fps: float | None = None,
                  **opts: Any) -> np.ndarray:
    """The 0-based decoded frame indices evaluator ``profile`` feeds the model.

    ``num_frames``: decoded frames N (>= 1). ``budget``: positive int or ``"all"`` (every
    frame, for any profile). ``fps``: video frames per second (required by profiles with
    ``needs_fps``). ``opts``: profile options (``Profile.options``). Returns int64 indices in
    selection order, each in [0, N-1]. Raises InputError naming the bad argument.
    """
    prof = get_profile(profile)
    if isinstance(num_frames, bool) or not isinstance(num_frames, (int, np.integer)) or num_frames < 1:
        raise InputError(f"num_frames: expected a positive integer (decoded frames in the video), got {num_frames!r}")
    num_frames = int(num_frames)
    b = parse_budget(budget)
    if fps is not None and (isinstance(fps, bool) or not isinstance(fps, (int, float, np.floating))
                            or not math.isfinite(fps) or fps <= 0):
        raise InputError(f"fps: expected a positive number (video frames per second), got {fps!r}")
    check_options(profile, opts)
    if b == ALL:
        return np.arange(num_frames, dtype=np.int64)
    if prof.needs_fps and fps is None:
        raise InputError(f"fps: profile {profile!r} needs the video fps")
    idx = np.asarray(prof.func(num_frames, b, None if fps is None else float(fps), **opts), dtype=np.int64)
    if idx.ndim != 1 or len(idx) == 0 or idx.min() < 0 or idx.max() >= num_frames:
        raise AssertionError(f"profile {profile!r} produced indices outside [0, {num_frames - 1}]: {idx.tolist()}")
    return idx
