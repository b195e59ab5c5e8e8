"""The options several commands share, each with its default, defined once.

Every command spells a shared option the same way: ``-o/--output`` for what it writes,
``--budgets`` for frame budgets, ``-p/--profile`` with ``-O/--option KEY=VALUE``,
``--occlusion``, ``--visibility``, ``--seen-rule`` with ``--seen-threshold``, ``--min-budget-room-route``,
``--instant-tolerance``, ``--quiet``, ``-r/--run-dir``. Defaults come from the stage that owns them
(vistest.budget.config, vistest.budget.sampling, vistest.budget.windows, vistest.visibility.table).

The budget ground truth's settings (vistest.budget.config.TruthConfig) come as one set:
:func:`truth_options` gives a command every option of them (``run``, ``videos``, ``batch``, ``budget``,
``timeline``, ``generate``) and :func:`truth_config` builds the TruthConfig from the parsed values; a
field declared with vistest.budget.config.truth_setting gets its option from the field alone.

Spellings of vistest 0.1 that changed are kept for one release (until 0.2) as *hidden
aliases*: accepted, not shown in ``--help`` (:class:`AliasOption`): :data:`OUTDIR_ALIAS`
(``--outdir`` of budget, score, sheet, videos, run) and :data:`BUDGET_ALIASES`
(``--budget``/``-n`` of timeline).
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any, Callable, Mapping

import click

from ..budget.config import CHECK, DEFAULT_BUDGETS, FLAG, TruthConfig
from ..budget.evaluators import DEFAULT, EVALUATORS, parse_evaluators
from ..budget.sampling import DEFAULT_PROFILE, PROFILES
from ..budgets import budget_label, parse_budgets
from ..budget.seen import DEFAULT_SEEN_KIND, SEEN_KINDS, seen_rule
from ..errors import InputError
from ..visibility.table import DEFAULT_OCCLUSION, OCCLUSION_CHOICES

DEFAULT_BUDGETS_TEXT = ",".join(budget_label(b) for b in DEFAULT_BUDGETS)  # "16,32,64,all"
OUTDIR_ALIAS = ("--outdir",)  # -o/--output was -o/--outdir in budget, score, sheet, videos, run
BUDGET_ALIASES = ("--budget", "-n")  # timeline --budgets was --budget/-n
RUN_DIR_HELP = ("The output folder of 'vistest run' (every scene), or one scene's folder RUN_DIR/scenes/ID "
                "(any folder of {n}_frame.jsonl files and dummy_gt.jsonl).")
PROFILE_HELP = "Sampler profile: " + ", ".join(PROFILES) + "."
PROFILE_OPTION_HELP = ("Profile option KEY=VALUE (repeatable), e.g. sample_fps=1 for llava-vid, "
                       "fma=false for qwen-vl-utils; see docs/sampling.md.")

Decorator = Callable[[Callable], Callable]


class AliasOption(click.Option):
    """A click option that also accepts ``hidden_aliases`` (old spellings): they parse like
    the option's own names but are left out of ``--help`` and of error messages."""

    def __init__(self, param_decls, hidden_aliases: tuple[str, ...] = (), **attrs):
        super().__init__(list(param_decls) + list(hidden_aliases), **attrs)
        self.hidden_aliases = tuple(hidden_aliases)

    def _shown(self, method: Callable, ctx):
        opts, self.opts = self.opts, [o for o in self.opts if o not in self.hidden_aliases]
        try:
            return method(ctx)
        finally:
            self.opts = opts

    def get_help_record(self, ctx):
        return self._shown(super().get_help_record, ctx)

    def get_error_hint(self, ctx):
        return self._shown(super().get_error_hint, ctx)


def compose(*decorators: Decorator) -> Decorator:
    """One decorator applying ``decorators`` so that --help lists them in the order given."""
    def apply(f: Callable) -> Callable:
        for d in reversed(decorators):
            f = d(f)
        return f
    return apply


def warn(message: str) -> None:
    """One ``warning: ...`` line on stderr (shown with ``--quiet`` too)."""
    click.echo(f"warning: {message}", err=True)


# ---- parsing ---------------------------------------------------------------------------
def parse_key_value(text: str, option: str = "--option") -> tuple[str, Any]:
    """``KEY=VALUE`` with VALUE read as JSON when it parses (``2.5``, ``true``), else a string;
    dashes in KEY become underscores."""
    if "=" not in text:
        raise InputError(f"{option}: expected KEY=VALUE, got {text!r}")
    key, raw = text.split("=", 1)
    key = key.strip().replace("-", "_")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key, value


def _key_values(ctx, param, items) -> dict[str, Any]:
    return dict(parse_key_value(t) for t in items or ())


def _budgets(ctx, param, text) -> tuple:
    return () if text is None else parse_budgets(text, "--budgets")


# ---- the shared options ----------------------------------------------------------------
def output_option(help: str, folder: bool = False, required: bool = True, aliases: tuple[str, ...] = ()
                  ) -> Decorator:
    """``-o/--output``: the file (or ``folder``) a command writes; ``aliases``: old spellings."""
    return click.option("-o", "--output", cls=AliasOption, hidden_aliases=aliases, required=required, help=help,
                        type=click.Path(file_okay=not folder, dir_okay=folder))


def run_dir_option(help: str = RUN_DIR_HELP) -> Decorator:
    """``-r/--run-dir``: the folder of ground truth a scoring command reads."""
    return click.option("-r", "--run-dir", required=True, type=click.Path(file_okay=False), help=help)


def budgets_option(default: str | None = DEFAULT_BUDGETS_TEXT, help: str | None = None,
                   aliases: tuple[str, ...] = ()) -> Decorator:
    """``--budgets 16,32,64,all``, parsed into a tuple of budgets (``()`` when no default)."""
    return click.option("--budgets", cls=AliasOption, hidden_aliases=aliases, default=default,
                        show_default=default is not None, callback=_budgets,
                        help=help or "Comma-separated frame budgets (positive integers and/or 'all').")


def profile_options(help_extra: str = "") -> Decorator:
    """``-p/--profile`` (default :data:`vistest.budget.sampling.DEFAULT_PROFILE`) and
    ``-O/--option KEY=VALUE`` (repeatable; parsed into the dict ``options``)."""
    return compose(
        click.option("--profile", "-p", default=DEFAULT_PROFILE, show_default=True, type=click.Choice(list(PROFILES)),
                     help=PROFILE_HELP + (" " + help_extra if help_extra else "")),
        key_value_option(PROFILE_OPTION_HELP))


def evaluator_option() -> Decorator:
    """``--evaluator SPEC`` (repeatable; parsed into the tuple ``evaluators``, the defaults when
    absent): evaluator configurations (vistest.budget.evaluators, docs/sampling.md)."""
    return click.option("--evaluator", "evaluators", multiple=True, metavar="SPEC",
                        callback=lambda ctx, param, specs: parse_evaluators(specs),
                        help=f"Evaluator configuration whose frames the manifest states for every video and whose "
                             f"all-budget ground truth is written (repeatable): {', '.join(EVALUATORS)}, "
                             f"'{DEFAULT}' (all of them, the default), NAME@FRAMES, or "
                             f"NAME=PROFILE[:frames=K|budget,all_frames=K,OPTION=VALUE,...] (docs/sampling.md).")


def key_value_option(help: str) -> Decorator:
    """``-O/--option KEY=VALUE`` (repeatable), parsed into the dict ``options``."""
    return click.option("--option", "-O", "options", multiple=True, callback=_key_values, help=help)


def occlusion_option(help: str = "Occlusion mode when visibility is computed.") -> Decorator:
    """``--occlusion`` (choices :data:`vistest.visibility.table.OCCLUSION_CHOICES`, default
    ``auto``: the scene's mesh, else its depth frames, else boxes)."""
    return click.option("--occlusion", type=click.Choice(list(OCCLUSION_CHOICES)), default=DEFAULT_OCCLUSION,
                        show_default=True, help=help + " auto: the scene's mesh, else its depth frames, else boxes.")


def visibility_option(help: str = "Visibility .npz from 'vistest visibility' (default: computed now).") -> Decorator:
    """``--visibility VIS.npz``: a precomputed visibility table (``visibility_npz``)."""
    return click.option("--visibility", "visibility_npz", type=click.Path(dir_okay=False), default=None, help=help)


SEEN_RULE_META = "vistest.seen_rule"  # ctx.meta key: --seen-rule's value, read by --seen-threshold


def _seen_kind(ctx, param, value):
    seen_rule(None, value, "--seen-rule")  # a bad kind fails here, before any other option
    ctx.meta[SEEN_RULE_META] = value
    return value


def _seen_threshold(ctx, param, value):
    return seen_rule(value, ctx.meta.get(SEEN_RULE_META), "--seen-threshold").compact()


def seen_threshold_option(prefix: str = "") -> Decorator:
    """``--seen-rule KIND[@ARRAY]`` (default ReVSI's ``image``; vistest.budget.seen) and
    ``--seen-threshold VALUE`` (in the rule's unit; default the rule's), validated together, once,
    into the value ``seen_threshold``: ReVSI's rule on ``visible`` as its bare threshold (a float,
    what vistest 0.1 passed), any other rule as a :class:`vistest.budget.seen.SeenRule`."""
    kinds = "; ".join(f"{k.name}: {'>' if k.strict else '>='} {k.default:g} {k.unit}" for k in SEEN_KINDS.values())
    return compose(
        click.option("--seen-rule", default=DEFAULT_SEEN_KIND, show_default=True, metavar="KIND[@ARRAY]",
                     is_eager=True, expose_value=False, callback=_seen_kind,
                     help=prefix + f"When an object counts as seen in a frame ({kinds}); @ARRAY reads another "
                                   f"visibility array than visible. See docs/questions-format.md."),
        click.option("--seen-threshold", type=float, default=None, callback=_seen_threshold,
                     help=prefix + "The seen rule's threshold, in its unit (default: the rule's; image: an object "
                                   "is seen when its visible fraction of the image exceeds this)."))


def _setting_option(f: dataclasses.Field, prefix: str) -> Decorator:
    """The option of a TruthConfig field declared with vistest.budget.config.truth_setting: its flag, the
    field's name as the value's, its default, its check (InputError naming the flag) and its doc as help."""
    flag, check = f.metadata[FLAG], f.metadata[CHECK]

    def checked(ctx, param, value):
        problem = check(value)
        if problem:
            raise InputError(f"{flag}: {problem}")
        return value

    doc = f.metadata["doc"]
    return click.option(flag, f.name, type=type(f.default), default=f.default, show_default=True,
                        metavar=f.metadata.get("metavar"), callback=checked,
                        help=prefix + doc[0].upper() + doc[1:] + ".")


TRUTH_SETTINGS = tuple(f for f in dataclasses.fields(TruthConfig) if FLAG in f.metadata)  # options of their own


def setting_option(name: str, prefix: str = "") -> Decorator:
    """The option of one TruthConfig field (declared with vistest.budget.config.truth_setting) alone, for a
    command that reads only it (``windows``: ``setting_option("instant_tolerance_s")``)."""
    return _setting_option(next(f for f in TRUTH_SETTINGS if f.name == name), prefix)


_NO_BUDGETS = object()  # truth_options' default: the shared --budgets option


def truth_options(prefix: str = "", budgets: Decorator | None | object = _NO_BUDGETS, profile_help: str = ""
                  ) -> Decorator:
    """Every option of the budget ground truth's settings (vistest.budget.config.TruthConfig), for
    :func:`truth_config` to build the config from: ``budgets`` (default :func:`budgets_option`; a command
    may give its own, or None: none, the config's default budgets), ``-p/--profile`` with ``-O/--option``
    (:func:`profile_options`, ``profile_help`` added to its help), ``--seen-rule``/``--seen-threshold``
    (:func:`seen_threshold_option`), and one option per field declared with
    vistest.budget.config.truth_setting (``--min-budget-room-route``, ``--instant-tolerance``, ...).
    ``prefix`` starts each help text (``"Budget GT: "``)."""
    parts = [budgets_option() if budgets is _NO_BUDGETS else budgets, profile_options(profile_help),
             seen_threshold_option(prefix), *(_setting_option(f, prefix) for f in TRUTH_SETTINGS)]
    return compose(*(p for p in parts if p is not None))


def truth_config(params: Mapping[str, Any]) -> TruthConfig:
    """The TruthConfig of the values :func:`truth_options` parsed (a command's keyword arguments, or its
    context's ``params``): budgets when the command has the option, the profile with its options, the
    seen rule and every other field by its name."""
    values = {"profile": params["profile"], "profile_options": params["options"],
              "seen_threshold": params["seen_threshold"], **{f.name: params[f.name] for f in TRUTH_SETTINGS}}
    if "budgets" in params:
        values["budgets"] = tuple(params["budgets"])
    return TruthConfig(**values)


def evidence_frame_margin_option(dest: str = "evidence_frame_margin") -> Decorator:
    """``--evidence-frame-margin FRAMES`` (value ``dest``; default 0): what the drop and black dummies
    remove around each evidence frame (vistest.videos.evidence.dummy_evidence); ``vistest videos`` /
    ``run`` and ``vistest timeline`` read it alike."""
    return click.option("--evidence-frame-margin", dest, type=click.IntRange(0), default=0, show_default=True,
                        help="Frames before and after each evidence frame that drop and black dummies remove too.")


def quiet_option(help: str = "No progress bar.") -> Decorator:
    """``--quiet``: no progress bar on stderr (and, where ``help`` says so, no summary)."""
    return click.option("--quiet", is_flag=True, help=help)
