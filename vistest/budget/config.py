"""The budget stage's settings: :class:`TruthConfig`, what the budget ground truth is computed
with (``vistest run --budgets --profile -O --seen-rule --seen-threshold --min-budget-room-route
--instant-tolerance``), owned by this stage and passed whole to every function of it.

A frozen dataclass in the style of vistest.generate.rules: every field has a default (owned by
the budget stage: vistest.budget.truth, vistest.budget.sampling, vistest.budget.seen,
vistest.budget.windows) and ``metadata["doc"]`` with its unit; vistest.job.RunConfig holds one,
vistest.generate.rules.FrameRules too. docs/truth.md lists the fields (a test checks).

Adding a setting costs three files (docs/truth.md, "Adding a setting"): a field here declared with
:func:`truth_setting` (its default, doc, command-line flag and check), the rule module that reads it
from the config, and docs/truth.md. Every command that computes the ground truth (``run``, ``videos``,
``budget``, ``timeline``, ``generate``) then has the option (vistest.cli.options.truth_options builds it
from the field), the run's record and key hold it (vistest.config.RunConfig), and the generator's
``--rule frames.truth.FIELD=VALUE`` sets it.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..budgets import ALL, BudgetValue, parse_budget
from ..errors import InputError
from .sampling import DEFAULT_PROFILE, check_options
from .seen import DEFAULT_SEEN_THRESHOLD, SeenRule, seen_rule
from .windows import DEFAULT_INSTANT_TOLERANCE_S

DEFAULT_BUDGETS: tuple[BudgetValue, ...] = (16, 32, 64, ALL)
DEFAULT_MIN_BUDGET_ROOM_ROUTE = 32  # frames: ReVSI excludes room size and route planning at 16
# an open (answer_kind number) dynamic answer is kept within 5% of the original: MRA's strictest threshold
# (vistest.answers.MRA_THRESHOLDS, 0.50 ... 0.95 accuracy: a relative error under 0.05 passes every one)
DEFAULT_OPEN_NUMBER_TOLERANCE = 0.05
FLAG = "flag"  # metadata key: the command-line option of a field that vistest.cli.options.truth_options builds
CHECK = "check"  # metadata key: the field's check, value -> None or what was expected (an InputError's text)


def setting(default: Any, doc: str, factory: Any = None) -> Any:
    """A config field: its default (or ``factory``) and what it does (with its unit); the run's
    configs (vistest.videos.config, vistest.config) use it too."""
    if factory is not None:
        return field(default_factory=factory, metadata={"doc": doc})
    return field(default=default, metadata={"doc": doc})


def truth_setting(default: Any, doc: str, flag: str, check: Callable[[Any], str | None], metavar: str | None = None
                  ) -> Any:
    """A TruthConfig field with a plain value (a number, a string, a flag): its default, what it does
    (with its unit), the command-line option that sets it (``flag``, e.g. ``--instant-tolerance``;
    every command of vistest.cli.options.truth_options gets it) and ``check``: the value -> None when
    valid, else what was expected (checked on the command line and by :meth:`TruthConfig.checked`)."""
    meta = {"doc": doc, FLAG: flag, CHECK: check}
    if metavar is not None:
        meta["metavar"] = metavar
    return field(default=default, metadata=meta)


def positive_int(value: Any) -> str | None:
    """None for a positive integer, else what was expected."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return f"expected a positive integer, got {value!r}"
    return None


def seconds(value: Any) -> str | None:
    """None for a finite number of seconds >= 0, else what was expected."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        return f"expected seconds, a finite number >= 0, got {value!r}"
    return None


def share(value: Any) -> str | None:
    """None for a relative tolerance, a finite number in [0, 1), else what was expected."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        return f"expected a relative tolerance in [0, 1) (0.05: 5%), got {value!r}"
    return None


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
    min_budget_room_route: int = truth_setting(DEFAULT_MIN_BUDGET_ROOM_ROUTE, "frames: the smallest budget at which "
                                               "room size and route planning are answerable",
                                               "--min-budget-room-route", positive_int, "FRAMES")
    instant_tolerance_s: float = truth_setting(DEFAULT_INSTANT_TOLERANCE_S, "seconds: the nearest selected frame "
                                               "serves a question's instant (time) when at most this far from it "
                                               "(vistest.budget.windows; docs/questions-format.md \"Time windows\")",
                                               "--instant-tolerance", seconds, "SECONDS")
    open_number_tolerance: float = truth_setting(DEFAULT_OPEN_NUMBER_TOLERANCE, "relative: an open-number "
                                                 "(answer_kind number) dynamic answer recomputed from the sampled "
                                                 "frames keeps the original when within this share of it (0.05: "
                                                 "MRA's strictest threshold; vistest.budget.rules.track)",
                                                 "--open-number-tolerance", share, "SHARE")

    @property
    def rule(self) -> SeenRule:
        """The seen rule of ``seen_threshold`` (vistest.budget.seen.seen_rule; InputError naming the field)."""
        return seen_rule(self.seen_threshold, where="seen_threshold")

    def checked(self) -> "TruthConfig":
        """This config with its budgets parsed (a tuple, each given once) and its tolerance a float, after
        checking every field:
        the budgets, the profile's options, the seen rule and each :func:`truth_setting`'s check.
        Raises InputError naming the field and what was expected."""
        budgets: list[BudgetValue] = []
        for b in self.budgets:
            pb = parse_budget(b, "budgets")
            if pb in budgets:
                raise InputError(f"budgets: budget {pb!r} given twice")
            budgets.append(pb)
        check_options(self.profile, dict(self.profile_options or {}))
        self.rule  # noqa: B018 (validates seen_threshold)
        for f in dataclasses.fields(self):
            problem = f.metadata[CHECK](getattr(self, f.name)) if CHECK in f.metadata else None
            if problem:
                raise InputError(f"{f.name}: {problem}")
        return dataclasses.replace(self, budgets=tuple(budgets), instant_tolerance_s=float(self.instant_tolerance_s))
