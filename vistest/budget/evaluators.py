"""Evaluator configurations: a sampler profile with the settings a real client runs it with (stage 3).

A sampler profile (vistest.budget.sampling) says which frames an evaluator's code takes when
asked for n frames. What it is asked for is a setting of the client: lmms-eval's
``qwen2_5_vl`` model takes ``max_num_frames`` (default 32) whatever the video, qwen-vl-utils
samples 2 frames/s up to 768 frames, VLMEvalKit's ``ReVSI`` asks ``nframe = n`` of an
``{n}_frame`` video and 128 of ``all_frame``. An :class:`Evaluator` is that pair, named: the
profile, its options, and the frame request per budget. Its :meth:`Evaluator.takes` is the
profile's exact function (:func:`vistest.budget.sampling.select_frames`) applied to a video
(frame count, frame rate) with that request, so what the manifest states and what the ``all``
ground truth is computed over come from the same arithmetic that reproduces the client.

The request (:meth:`Evaluator.request`) for budget b:

* ``frames`` = K: K for every budget (a model argument such as ``max_num_frames``);
* ``frames`` = None (``frames=budget``): n for an n-frame budget, and ``all_frames`` for the
  ``all`` budget (VLMEvalKit ReVSI: 128); when ``all_frames`` is None too, ``"all"`` (every
  frame, the convention of vistest.budget.sampling).

Named configurations, on the command line (``vistest run --evaluator SPEC``, repeatable) and
in :func:`parse_evaluators`:

* ``NAME``: one of :data:`EVALUATORS` (``default``: all of :data:`DEFAULT_EVALUATORS`, every one
  but ``sti-bench.qwen2_5_vl``, STI-Bench's client: qwen-vl-utils at 30 / duration frames/s);
* ``NAME@K``: that configuration asking K frames (e.g. ``lmms-eval.qwen2_5_vl@64``);
* ``NAME=PROFILE[:KEY=VALUE,...]``: a new one; keys ``frames`` (an integer or ``budget``),
  ``all_frames`` (an integer) and the profile's options (docs/sampling.md).

Names are file names (letters, digits, ``._@-``): the ``all`` ground truth of each is
written to ``scenes/{scene_id}/evaluators/{name}/all_frame.jsonl`` (vistest.layout).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from ..errors import InputError
from ..budgets import ALL, BudgetValue, parse_budget
from .sampling import QWEN_FPS_MAX_FRAMES, check_options, get_profile, select_frames

EVERY_FRAME = "every-frame"
STI_BENCH = "sti-bench.qwen2_5_vl"  # STI-Bench's own Qwen2.5-VL client (not a default: name it)
STI_BENCH_OLD_ROUNDING = "sti-bench.qwen2_5_vl-0.0.8"  # the same with qwen-vl-utils 0.0.8's rounding
STI_BENCH_MAX_FRAMES = 30  # MINT-SJTU/STI-Bench opensource_test.py MAX_FRAMES ("target frames for time alignment")
DEFAULT = "default"  # the spec naming every default configuration
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]*")


@dataclass(frozen=True)
class Evaluator:
    """A named client configuration: ``profile`` (a sampler profile) with ``options`` (its
    keyword options, as sorted (key, value) pairs), asked ``frames`` frames (None: the budget;
    on the ``all`` budget ``all_frames``, or every frame when that is None too). ``source``:
    the client, its setting and where the default comes from."""

    name: str
    profile: str
    options: tuple[tuple[str, Any], ...] = ()
    frames: int | None = None
    all_frames: int | None = None
    source: str = ""

    def __post_init__(self):
        if not _NAME.fullmatch(self.name or ""):
            raise InputError(f"evaluator: name {self.name!r}: expected letters, digits, '.', '_', '@' or '-', not "
                             f"starting with one of '._@-' (it names a folder)")
        get_profile(self.profile)
        check_options(self.profile, dict(self.options))
        for fld in ("frames", "all_frames"):
            v = getattr(self, fld)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise InputError(f"evaluator {self.name}: {fld}: expected a positive integer, got {v!r}")

    @property
    def option_dict(self) -> dict[str, Any]:
        return dict(self.options)

    def request(self, budget: BudgetValue) -> BudgetValue:
        """What the client is asked for on a video of ``budget`` (module docstring)."""
        b = parse_budget(budget)
        if self.frames is not None:
            return self.frames
        if b != ALL:
            return b
        return ALL if self.all_frames is None else self.all_frames

    def takes(self, num_frames: int, fps: float | None, budget: BudgetValue) -> np.ndarray:
        """The 0-based frames of a ``num_frames``-frame video at ``fps`` frames/s that this
        configuration takes when the video is the one of ``budget`` (selection order, repeats
        kept). InputError where the client fails on that video (e.g. qwen-vl-utils on fewer
        frames than it asks)."""
        return select_frames(self.profile, num_frames, self.request(budget), fps=fps, **self.option_dict)

    def with_frames(self, frames: int) -> "Evaluator":
        """This configuration asking ``frames`` frames for every budget, named ``NAME@frames``."""
        return Evaluator(f"{self.name.split('@')[0]}@{frames}", self.profile, self.options, frames, None,
                         f"{self.source}; asked {frames} frames")

    def to_json(self) -> dict:
        """The configuration as the manifest and the ground truth rows state it."""
        return {"name": self.name, "profile": self.profile, "options": self.option_dict,
                "frames": "budget" if self.frames is None else self.frames, "all_frames": self.all_frames}


def _opts(**kw: Any) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(kw.items()))


# The real clients' defaults (docs/sampling.md, "Evaluator configurations", names each source).
EVALUATORS: dict[str, Evaluator] = {e.name: e for e in (
    Evaluator(EVERY_FRAME, "all", source="every decoded frame: what the all_frame ground truth of ReVSI assumes"),
    Evaluator("lmms-eval.qwen2_5_vl", "lmms-eval-qwen2.5-vl", frames=32,
              source="lmms-eval models/simple/qwen2_5_vl.py, max_num_frames=32 (its default); qwen-vl-utils fps mode "
                     "at 2 frames/s"),
    Evaluator("lmms-eval.llava_vid", "llava-vid", _opts(sample_fps=1), frames=20,
              source="lmms-eval models/simple/llava_vid.py, max_frames_num=20, video_fps=1 (its defaults)"),
    Evaluator("lmms-eval.llava_onevision", "uniform", frames=32,
              source="lmms-eval models/simple/llava_onevision.py, max_frames_num=32 (its default)"),
    Evaluator("lmms-eval.internvl3", "internvl", frames=32,
              source="lmms-eval models/simple/internvl3.py, num_frame=32 (its default)"),
    Evaluator("qwen-vl-utils.fps2", "qwen-vl-utils-fps", _opts(sample_fps=2.0, min_frames=4), frames=768,
              source="qwen-vl-utils 0.0.14 fetch_video with {'fps': 2} (its defaults: FPS 2, FPS_MIN_FRAMES 4, "
                     "FPS_MAX_FRAMES 768)"),
    Evaluator("vlmevalkit.ReVSI", "vlmevalkit-generic", frames=None, all_frames=128,
              source="VLMEvalKit vlmeval/dataset/revsi.py ReVSI: nframe = n for {n}_frame, 128 for all_frame"),
    Evaluator(STI_BENCH, "qwen-vl-utils-fps", _opts(sample_frames=STI_BENCH_MAX_FRAMES), frames=QWEN_FPS_MAX_FRAMES,
              source="MINT-SJTU/STI-Bench opensource_test.py: MAX_FRAMES = 30, compute_sample_fps() = "
                     "MAX_FRAMES / duration (the video's own fps at <= 30 frames), message {'fps': sample_fps, "
                     "'max_pixels': 360*420} to qwen-vl-utils process_vision_info (fps mode: FPS_MIN_FRAMES 4, "
                     "FPS_MAX_FRAMES 768); max_pixels sets the resolution, not the frames; qwen-vl-utils >= 0.0.10 "
                     "(floor_by_factor in fps mode; 0.0.8 rounds: sti-bench.qwen2_5_vl-0.0.8)"),
    Evaluator(STI_BENCH_OLD_ROUNDING, "qwen-vl-utils-fps", _opts(sample_frames=STI_BENCH_MAX_FRAMES, rounding="round"),
              frames=QWEN_FPS_MAX_FRAMES,
              source="STI-Bench's client as sti-bench.qwen2_5_vl, with qwen-vl-utils 0.0.8: round_by_factor where "
                     ">= 0.0.10 has floor_by_factor (30 frames where the float product falls just under 30)"),
)}
# every configuration but STI-Bench's, which only STI-Bench questions need (``--evaluator sti-bench.qwen2_5_vl``)
DEFAULT_EVALUATORS: tuple[Evaluator, ...] = tuple(e for e in EVALUATORS.values()
                                                  if e.name not in (STI_BENCH, STI_BENCH_OLD_ROUNDING))


def _value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def parse_evaluator(spec: str) -> tuple[Evaluator, ...]:
    """The configuration(s) a spec names (module docstring); InputError naming the spec."""
    text = str(spec).strip()
    where = f"--evaluator {text!r}"
    if text == DEFAULT:
        return DEFAULT_EVALUATORS
    if "=" not in text:
        base, _, k = text.partition("@")
        if base not in EVALUATORS:
            raise InputError(f"{where}: unknown evaluator {base!r}; expected one of {', '.join(EVALUATORS)}, "
                             f"'{DEFAULT}', NAME@FRAMES or NAME=PROFILE[:KEY=VALUE,...]")
        if not k:
            return (EVALUATORS[base],)
        if not k.isdigit() or int(k) < 1:
            raise InputError(f"{where}: expected NAME@FRAMES with a positive frame count, got {k!r}")
        return (EVALUATORS[base].with_frames(int(k)),)
    name, _, rest = text.partition("=")
    profile, _, opts_text = rest.partition(":")
    kw: dict[str, Any] = {}
    for item in (s for s in opts_text.split(",") if s.strip()):
        if "=" not in item:
            raise InputError(f"{where}: expected KEY=VALUE after the profile, got {item!r}")
        k, v = item.split("=", 1)
        kw[k.strip().replace("-", "_")] = _value(v.strip())
    frames = kw.pop("frames", "budget")
    all_frames = kw.pop("all_frames", None)
    if frames == "budget":
        frames = None
    try:
        return (Evaluator(name.strip(), profile.strip(), _opts(**kw), frames, all_frames, f"user-defined: {text}"),)
    except InputError as e:
        raise InputError(f"{where}: {e}") from None


def parse_evaluators(specs: Iterable[str]) -> tuple[Evaluator, ...]:
    """Every configuration the specs name, in order, each once (by name); the defaults when
    ``specs`` is empty. Two different configurations under one name are an InputError."""
    out: dict[str, Evaluator] = {}
    specs = list(specs) or [DEFAULT]
    for spec in specs:
        for e in parse_evaluator(spec):
            if e.name in out and out[e.name] != e:
                raise InputError(f"--evaluator: two configurations are named {e.name!r}")
            out[e.name] = e
    return tuple(out.values())


@dataclass(frozen=True)
class EvaluatorTake:
    """The frames of one video an evaluator configuration takes for one budget.

    ``frames``: positions in the video (0-based, selection order), None when the client fails
    on it (``error`` says why). ``request``: what it was asked (frames, or ``"all"``)."""

    evaluator: Evaluator
    budget: BudgetValue
    num_frames: int
    request: BudgetValue
    frames: tuple[int, ...] | None
    error: str | None = None

    @property
    def every_frame(self) -> bool:
        """Every frame of the video, each once, in order."""
        return self.frames == tuple(range(self.num_frames))

    def to_json(self) -> dict:
        out: dict[str, Any] = {"request": self.request}
        if self.error is not None:
            out["error"] = self.error
            return out
        uniq = set(self.frames)
        out.update({"frames": list(self.frames), "taken": len(self.frames), "distinct": len(uniq),
                    "every_frame": self.every_frame})
        if not self.every_frame:
            out["missing"] = sorted(set(range(self.num_frames)) - uniq)
        return out


def evaluator_take(evaluator: Evaluator, num_frames: int, fps: float | None, budget: BudgetValue) -> EvaluatorTake:
    """:meth:`Evaluator.takes` as an :class:`EvaluatorTake` (the error kept, not raised)."""
    req = evaluator.request(budget)
    try:
        idx = evaluator.takes(num_frames, fps, budget)
        return EvaluatorTake(evaluator, budget, num_frames, req, tuple(int(i) for i in idx))
    except InputError as e:
        return EvaluatorTake(evaluator, budget, num_frames, req, None, str(e))
