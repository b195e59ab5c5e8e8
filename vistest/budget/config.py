"""The budget stage's settings: :class:`TruthConfig`, what the budget ground truth is computed
with (``vistest run --budgets --profile -O --seen-rule --seen-threshold --min-budget-room-route
--instant-tolerance``).

A nested frozen dataclass in the style of vistest.generate.rules: every field has a default
(owned by the budget stage: vistest.budget.truth, vistest.budget.sampling, vistest.budget.seen,
vistest.budget.windows)
and ``metadata["doc"]`` with its unit; vistest.job.RunConfig holds one (docs/videos.md lists the
fields; a test checks).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..budgets import BudgetValue
from .sampling import DEFAULT_PROFILE
from .seen import DEFAULT_SEEN_THRESHOLD, SeenRule
from .truth import DEFAULT_BUDGETS, DEFAULT_MIN_BUDGET_ROOM_ROUTE
from .windows import DEFAULT_INSTANT_TOLERANCE_S


def setting(default: Any, doc: str, factory: Any = None) -> Any:
    """A config field: its default (or ``factory``) and what it does (with its unit); the run's
    configs (vistest.videos.config, vistest.config) use it too."""
    if factory is not None:
        return field(default_factory=factory, metadata={"doc": doc})
    return field(default=default, metadata={"doc": doc})


@dataclass(frozen=True)
class TruthConfig:
    """The budget ground truth's settings (vistest.budget.truth.budget_truth)."""

    budgets: tuple[BudgetValue, ...] = setting(DEFAULT_BUDGETS, "frame budgets: frame counts and/or 'all' (every "
                                          "decoded frame)")
    profile: str = setting(DEFAULT_PROFILE, "sampler profile whose selections the budget videos hold "
                           "(vistest.budget.sampling.PROFILES)")
    profile_options: Mapping[str, Any] = setting(None, "the profile's options KEY: VALUE (e.g. sample_fps, in "
                                                 "frames/s; docs/sampling.md)", factory=dict)
    seen_threshold: float | SeenRule = setting(DEFAULT_SEEN_THRESHOLD, "when an object counts as seen in a "
                                               "frame: a bare fraction of the image area (ReVSI's rule) or a "
                                               "vistest.budget.seen.SeenRule")
    min_budget_room_route: int = setting(DEFAULT_MIN_BUDGET_ROOM_ROUTE, "frames: the smallest budget at which "
                                         "room size and route planning are answerable")
    instant_tolerance_s: float = setting(DEFAULT_INSTANT_TOLERANCE_S, "seconds: the nearest selected frame serves "
                                         "a question's instant (time) when at most this far from it "
                                         "(vistest.budget.windows)")

