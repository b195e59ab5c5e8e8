"""The budget stage owns its config (issue #46; docs/truth.md): every command that computes the ground
truth takes every TruthConfig option from one decorator, a new setting reaches them from its field alone,
and the rules are a table over modules of their own. Cheap: no scene is rendered."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import click
import pytest
from click.testing import CliRunner

from vistest.budget.config import FLAG, TruthConfig, seconds, truth_setting
from vistest.budget.rules import RULES
from vistest.cli import main
from vistest.cli import options
from vistest.config import RunConfig
from vistest.errors import InputError
from vistest.generate.rules import FrameRules, Rules, rule_table
from vistest.questions import QUESTION_TYPES

TRUTH_COMMANDS = ("run", "videos", "batch", "budget", "timeline", "generate")


def test_every_truth_command_has_every_setting_option():
    """Each command that computes the ground truth has --profile, -O, --seen-rule, --seen-threshold and
    the option of every truth_setting field (--budgets: all but generate, whose budgets are
    --answerable-at), so a new field is on every one of them."""
    flags = {f.metadata[FLAG] for f in dataclasses.fields(TruthConfig) if FLAG in f.metadata}
    assert {"--min-budget-room-route", "--instant-tolerance"} <= flags
    for name in TRUTH_COMMANDS:
        opts = {o for p in main.commands[name].params for o in p.opts}
        assert flags | {"--profile", "-O", "--seen-rule", "--seen-threshold"} <= opts, name
        assert ("--budgets" in opts) == (name != "generate"), name


def test_a_new_setting_reaches_the_commands_the_run_key_and_the_generator(monkeypatch):
    """docs/truth.md "Adding a setting": a field declared with truth_setting (here a fake one, on a
    subclass) is an option of truth_options with its default and check, truth_config puts its value in
    the config, RunConfig's key holds it, TruthConfig.checked checks it, and the generator's --rule
    frames.truth.FIELD sets it and its report lists it: no command, run or generator code names it."""

    @dataclass(frozen=True)
    class Extended(TruthConfig):
        fake_margin_s: float = truth_setting(0.25, "seconds: a setting only this test has", "--fake-margin",
                                             seconds, "SECONDS")

    monkeypatch.setattr(options, "TruthConfig", Extended)
    monkeypatch.setattr(options, "TRUTH_SETTINGS",
                        tuple(f for f in dataclasses.fields(Extended) if FLAG in f.metadata))
    got = []

    @click.command()
    @options.truth_options("Budget GT: ")
    def probe(**kw):
        got.append(options.truth_config(kw))

    for args, want in (([], 0.25), (["--fake-margin", "0.5"], 0.5)):
        r = CliRunner().invoke(probe, args)
        assert r.exit_code == 0, r.output
        assert isinstance(got[-1], Extended) and got[-1].fake_margin_s == want
    shown = " ".join(CliRunner().invoke(probe, ["--help"]).output.split())
    assert "--fake-margin SECONDS Budget GT: Seconds: a setting only this test has. [default: 0.25]" in shown
    r = CliRunner().invoke(probe, ["--fake-margin", "-1"])
    assert isinstance(r.exception, InputError) and str(r.exception).startswith("--fake-margin: expected seconds")
    with pytest.raises(InputError, match="^fake_margin_s: expected seconds"):
        Extended(fake_margin_s=float("inf")).checked()
    assert RunConfig(truth=Extended(fake_margin_s=0.5)).key() != RunConfig(truth=Extended()).key()
    rules = dataclasses.replace(Rules(), frames=FrameRules(truth=Extended(budgets=("all",))))
    rules = rules.with_overrides(["frames.truth.fake_margin_s=0.75"])
    assert rules.frames.truth.fake_margin_s == 0.75
    assert ("frames.truth.fake_margin_s", "0.75") in [(n, v) for n, v, _, _ in rule_table(rules)]


def test_every_rule_has_its_function_in_its_own_module():
    """vistest.budget.rules.RULES maps every question type's rule to a function of a module of its own
    (vistest/budget/rules/NAME.py): no type without a rule, no rule without a type."""
    used = {t.rule for t in QUESTION_TYPES.values()}
    assert used == set(RULES)
    modules = {fn.__module__ for fn in RULES.values()}
    assert len(modules) == len(RULES) and all(m.startswith("vistest.budget.rules.") for m in modules)
