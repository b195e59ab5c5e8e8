"""Commands of the evaluation stage: ``score``, ``baseline`` (vistest.eval, docs/scoring.md) and
``export`` (vistest.eval.exporters, docs/export.md)."""
from __future__ import annotations

import click

from .options import OUTDIR_ALIAS, compose, output_option, quiet_option, run_dir_option, warn


def _protocols() -> list[str]:
    from ..eval.metrics import PROTOCOL_CHOICES

    return list(PROTOCOL_CHOICES)


def _composite_choices() -> list[str]:
    from ..eval.metrics import COMPOSITE_CHOICES

    return list(COMPOSITE_CHOICES)


def _blind_models() -> list[str]:
    from ..eval.baselines import BLIND_MODELS, LEARNED

    return list(BLIND_MODELS) + [LEARNED]


def _holdouts() -> list[str]:
    from ..eval.baselines import HOLDOUT_CHOICES

    return list(HOLDOUT_CHOICES)


HOLDOUT_HELP = ("How the blind baselines are held out: auto/scene = leave-one-scene-out (k-fold by scene beyond 10 "
                "scenes; one scene: by question group, with a warning), question = by question group, in-sample = "
                "fitted on the rows they answer.")
FOLDS_HELP = "Folds when there are too many scenes (or question groups) to leave one out."
PRUNE_THRESHOLD_HELP = "Bias score above which pruning removes a question group."


def holdout_options(seed_help: str):
    """``--holdout``, ``--folds``, ``--seed`` (shared by score and baseline)."""
    return compose(
        click.option("--seed", type=int, default=0, show_default=True, help=seed_help),
        click.option("--holdout", type=click.Choice(_holdouts()), default="auto", show_default=True,
                     help=HOLDOUT_HELP),
        click.option("--folds", type=click.IntRange(2), default=5, show_default=True, help=FOLDS_HELP))


def prune_threshold_option():
    """``--prune-threshold`` (shared by score and baseline)."""
    return click.option("--prune-threshold", type=click.FloatRange(0, 1), default=0.5, show_default=True,
                        help=PRUNE_THRESHOLD_HELP)


def _export_choices() -> tuple[list[str], list[str]]:
    from ..eval.exporters import FORMATS, LINK_MODES

    return list(FORMATS), list(LINK_MODES)


@click.command("score")
@click.argument("predictions", nargs=-1, required=True, type=click.Path(exists=True))
@run_dir_option()
@output_option("Output folder for report.json, report.md, rows.jsonl, plots [default: RUN_DIR/score].", folder=True,
               required=False, aliases=OUTDIR_ALIAS)
@click.option("--protocol", type=click.Choice(_protocols()), default="auto", show_default=True,
              help="lmms-eval parsing and aggregation rules (auto: from the question types).")
@click.option("--composites", type=click.Choice(_composite_choices()), default="protocol", show_default=True,
              help="A composite group (relative direction's levels, ...) missing a member: 'present' averages the "
                   "members present (lmms-eval revsi), 'complete' keeps them apart unless all are present "
                   "(VLMEvalKit vsibench); 'protocol': the protocol's own (revsi: present; vsibench: complete).")
@click.option("--splits", type=click.IntRange(1), default=200, show_default=True, help="Held-out rank-attack splits.")
@holdout_options("Seed of the held-out splits and k folds.")
@click.option("--learned/--no-learned", default=True, show_default=True,
              help="Fit the learned blind model and report the blind score before and after bias pruning.")
@prune_threshold_option()
@quiet_option("No table on the terminal.")
def score(predictions, run_dir, output, protocol, composites, splits, seed, holdout, folds, learned, prune_threshold,
          quiet):
    """Score PREDICTIONS (plain JSONL or lmms-eval --log_samples files, or folders of them)
    against the ground truth of RUN_DIR: accuracy / MRA per budget and type, hallucination and
    abstention, the stress tests of reformulated questions, blind baselines (held out by scene)."""
    from ..atomic import check_writable
    from ..eval.records import ScoreError, prediction_files
    from ..layout import score_dir
    from ..eval.report import render_text, run_score
    from ..jsonl import read_text

    for f in prediction_files(predictions):
        if not read_text(f, ScoreError, "predictions file").strip():
            warn(f"{f}: no predictions (the file is empty): nothing of it is scored")
    check_writable(output or score_dir(run_dir))
    report, written = run_score(predictions, run_dir, output, protocol, splits, seed, holdout, folds, learned,
                                prune_threshold, composites)
    if not quiet:
        click.echo(render_text(report), nl=False)
        click.echo("wrote " + ", ".join(str(p) for p in written.values()), err=True)


@click.command("baseline")
@run_dir_option()
@output_option("Output predictions .jsonl.")
@click.option("--model", type=click.Choice(_blind_models()), default=_blind_models()[0], show_default=True,
              help="Blind model: most-frequent answer, category-mean size prior on size questions, or the learned "
                   "model over the question text and options.")
@holdout_options("Seed of the k-fold assignment.")
@click.option("--prune", "prune_out", type=click.Path(dir_okay=False), default=None,
              help="With --model learned: write the questions left after bias pruning (question JSONL).")
@prune_threshold_option()
@click.option("--prune-rounds", type=click.IntRange(1), default=5, show_default=True,
              help="Most fit-and-prune rounds.")
@click.option("--attacks/--no-attacks", default=True, show_default=True,
              help="Print every blind attack (constant, option label, option rank, numeric prior, learned, "
                   "none-of-these position, answer length), held out on the same folds, per type against chance.")
@click.option("--attacks-report", "attacks_out", type=click.Path(dir_okay=False), default=None,
              help="Also write the attack table as JSON.")
@click.option("--protocol", type=click.Choice(_protocols()), default="auto", show_default=True,
              help="Scoring rules of the attacks (auto: from the question types).")
@click.option("--null-permutations", type=click.IntRange(0), default=10, show_default=True,
              help="Judge each attack's complement not-X against its held-out chance: its mean gap over this many "
                   "answer keys re-drawn within the type's balances (0: against 1/k; docs/scoring.md).")
@click.option("--transfer-from", "transfer_dir", type=click.Path(exists=True, file_okay=False), default=None,
              help="Also print every attack fitted on the ground truth of this run folder (another set, on other "
                   "scenes) and scored on RUN_DIR's, two-sided against 1/k: what a blind model trained on that set "
                   "scores here (docs/scoring.md).")
@click.option("--transfer-report", "transfer_out", type=click.Path(dir_okay=False), default=None,
              help="With --transfer-from: also write that table as JSON.")
def baseline(run_dir, output, model, seed, holdout, folds, prune_out, prune_threshold, prune_rounds, attacks,
             attacks_out, protocol, null_permutations, transfer_dir, transfer_out):
    """Write a blind model's held-out predictions for the questions of RUN_DIR as plain JSONL
    (score them with 'vistest score'); with --prune, the question set without the most
    guessable questions; print every blind attack against chance (docs/scoring.md)."""
    import json

    from ..atomic import write_atomic
    from ..eval.attacks import run_attacks, run_transfer
    from ..eval.learned import write_baseline
    from ..eval.tables import text_table

    if transfer_out is not None and transfer_dir is None:
        raise click.UsageError("--transfer-report needs --transfer-from")
    # the transfer first: a refused pair of sets (a shared scene or id) writes nothing
    transfer = None if transfer_dir is None else run_transfer(run_dir, transfer_dir, protocol)
    res = write_baseline(run_dir, output, model, holdout, folds, seed, prune_out, prune_threshold, prune_rounds)
    if attacks or attacks_out is not None:
        report = run_attacks(run_dir, holdout, folds, seed, protocol, attacks_out, null_permutations)
        if attacks:
            click.echo(text_table(report.table()))
    if transfer is not None:
        if transfer_out is not None:
            write_atomic(transfer_out, json.dumps(transfer.to_dict(), indent=1) + "\n")
        click.echo(text_table(transfer.table()))
    click.echo(f"{model}: {res.n} predictions, held out {res.folds.scheme} -> {output}", err=True)
    if res.folds.warning:
        click.echo(f"  warning: {res.folds.warning}", err=True)
    if res.pruning is not None:
        pr = res.pruning
        click.echo(f"  pruning: removed {len(pr.removed)} of {pr.n_groups} question groups with bias > "
                   f"{pr.threshold:g} ({pr.rounds} round(s)) -> {prune_out}", err=True)


@click.command("export")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(_export_choices()[0]))
@click.argument("run_dir", type=click.Path(file_okay=False))
@output_option("Export folder (new, empty, or a previous export of the same FORMAT).", folder=True)
@click.option("--link", type=click.Choice(_export_choices()[1]), default="hard", show_default=True,
              help="revsi: how the budget videos get into the export (hard links fall back to copies).")
@click.option("--protocol", type=click.Choice(_protocols()), default="auto", show_default=True,
              help="lmms-eval-task: parsing and scoring rules (as vistest score).")
@click.option("--name", default="vistest", show_default=True,
              help="lmms-eval-task, revsi: lmms-eval task name prefix.")
@click.option("--evaluator", default=None, metavar="NAME",
              help="The all budget's rows: the ground truth of this evaluator configuration of the run "
                   "(scenes/ID/evaluators/NAME/all_frame.jsonl: over the frames it takes; docs/sampling.md). "
                   "Default: every frame (all_frame.jsonl).")
@click.option("--target", type=click.Choice(["auto", "ReVSI", "VsiBench", "STIBench"]), default="auto",
              show_default=True,
              help="vlmevalkit: the VLMEvalKit dataset class the TSVs are for (question types are checked against "
                   "it and mapped where a mapping exists; STIBench: the STI-Bench and dynamic types, over their "
                   "windows; auto: the class that prompts most rows, ReVSI on a tie).")
@click.option("--skip-unsupported/--refuse-unsupported", default=True, show_default=True,
              help="revsi, vlmevalkit, lmms-eval-task: leave out the rows the target cannot prompt for (counted per "
                   "type in vistest_export.json, one warning), or stop naming them. lmms-eval-task prompts every "
                   "type.")
@click.option("--verify", is_flag=True,
              help="Hash every video against the manifest (default: its size, and its hash when its time changed).")
@quiet_option("No progress and no summary (warnings still shown).")
def export_cmd(fmt, run_dir, output, link, protocol, name, evaluator, target, skip_unsupported, verify, quiet):
    """Export RUN_DIR (the output folder of 'vistest run') as FORMAT: revsi (ReVSI release layout for
    lmms-eval's revsi task and VLMEvalKit), lmms-eval-task (--include_path folder, real and
    dummy videos), vlmevalkit (TSVs), jsonl (every row, absolute paths, provenance)."""
    from ..eval.exporters import ExportOptions, export

    res = export(fmt, run_dir, output, ExportOptions(link, protocol, name, progress=not quiet, verify=verify,
                                                     evaluator=evaluator, target=target,
                                                     skip_unsupported=skip_unsupported))
    if not quiet:
        click.echo(res.summary_text(), nl=False)
        click.echo(f"wrote {res.out / 'vistest_export.json'}", err=True)
    else:
        for w in res.warnings:
            warn(w)
