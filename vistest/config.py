"""RunConfig: every setting of a scene's run (``vistest run``, ``vistest videos``, ``vistest
batch``, ``make variants``), as nested frozen configs each owned by its stage, and the run's
one key.

* ``truth``: vistest.budget.config.TruthConfig (budgets, profile, seen rule, ...);
* ``dummy``: vistest.videos.config.DummyConfig (modes, fill, evidence threshold, ...);
* ``encode``: vistest.videos.config.EncodeConfig (libx264 settings, the n-frame videos' rate);
* ``resources``: vistest.videos.config.ResourceConfig (memory, encoders, threads, CPUs, ffmpeg),
  kept apart: never in :meth:`RunConfig.key`, as the outputs do not depend on it;
* the run's own fields below (occlusion, scale_intrinsics, evaluators, budget_files).

:meth:`RunConfig.key` is the one rule for "the options changed": the scene record keeps it
(vistest.job.SceneJob), and ``vistest run``, ``vistest batch`` and ``make variants`` decide
from that record whether a scene is up to date. Every field has ``metadata["doc"]``
(docs/videos.md lists them; a test checks).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Mapping

from .budget.config import TruthConfig, setting
from .budget.evaluators import DEFAULT_EVALUATORS, Evaluator
from .errors import InputError
from .scene import Scene
from .videos.config import DummyConfig, EncodeConfig, ResourceConfig
from .visibility.table import DEFAULT_OCCLUSION, OCCLUSION_CHOICES, choose_occlusion

KEY_EXCLUDED = ("resources",)  # RunConfig fields that never change a scene's outputs


def canonical(value: Any) -> Any:
    """``value`` as plain JSON data with canonical numbers (a whole float is an int:
    ``--max-memory 500`` and ``500.0`` are one value; dataclasses become their fields)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): canonical(x) for k, x in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(x) for x in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


@dataclass(frozen=True)
class RunConfig:
    """Every setting of one scene's run (module docstring)."""

    truth: TruthConfig = setting(TruthConfig(), "the budget ground truth's settings (vistest.budget.config)")
    dummy: DummyConfig = setting(DummyConfig(), "what the dummy videos remove (vistest.videos.config)")
    encode: EncodeConfig = setting(EncodeConfig(), "how videos are encoded (vistest.videos.config)")
    resources: ResourceConfig = setting(ResourceConfig(), "what the writer may use; not in the key "
                                        "(vistest.videos.config)")
    occlusion: str = setting(DEFAULT_OCCLUSION, "occlusion mode of a computed visibility table: auto (the "
                             "scene's mesh, else its depth frames, else boxes; resolved once, by resolved()), "
                             "mesh, depth, boxes, none")
    scale_intrinsics: bool = setting(False, "accept a video whose size differs from image_size: scale the "
                                     "intrinsics to it")
    evaluators: tuple[Evaluator, ...] = setting(DEFAULT_EVALUATORS, "evaluator configurations whose takes the "
                                                "manifest states and whose all ground truth is written")
    budget_files: bool = setting(True, "also write the visibility cache and the {n}_frame.jsonl ground truth "
                                 "(vistest run); false: videos, dummy_gt.jsonl and manifest lines only "
                                 "(vistest videos)")

    def __post_init__(self):
        if self.occlusion not in OCCLUSION_CHOICES:
            raise InputError(f"occlusion: expected one of {', '.join(OCCLUSION_CHOICES)}, got {self.occlusion!r}")

    def resolved(self, scene: Scene) -> tuple["RunConfig", str]:
        """This config with ``occlusion="auto"`` resolved for ``scene`` to the mode it uses
        (vistest.visibility.table.choose_occlusion) and why; the one place ``auto`` is resolved."""
        mode, why = choose_occlusion(scene, self.occlusion)
        return dataclasses.replace(self, occlusion=mode), why

    def to_json(self) -> dict[str, Any]:
        """The settings that decide a scene's outputs, as canonical JSON data: every field but
        :data:`KEY_EXCLUDED` (resources)."""
        return canonical({f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                          if f.name not in KEY_EXCLUDED})

    def key(self) -> str:
        """sha256 of :meth:`to_json` (sorted keys, no spaces): equal exactly when the outputs'
        settings are (resources never count)."""
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()
