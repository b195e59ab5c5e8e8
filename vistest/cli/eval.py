"""Commands of the evaluation stage: ``score``, ``baseline`` (vistest.eval, docs/scoring.md) and
``export`` (vistest.eval.exporters, docs/export.md)."""
from __future__ import annotations

import click

from .options import OUTDIR_ALIAS, output_option, quiet_option, run_dir_option


def _protocols() -> list[str]:
    from ..eval.metrics import PROTOCOL_CHOICES

    return list(PROTOCOL_CHOICES)


def _blind_models() -> list[str]:
    from ..eval.baselines import BLIND_MODELS

    return list(BLIND_MODELS)


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
@click.option("--splits", type=click.IntRange(1), default=200, show_default=True, help="Held-out rank-attack splits.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the held-out splits.")
@quiet_option("No table on the terminal.")
def score(predictions, run_dir, output, protocol, splits, seed, quiet):
    """Score PREDICTIONS (plain JSONL or lmms-eval --log_samples files, or folders of them)
    against the ground truth of RUN_DIR: accuracy / MRA per budget and type, hallucination,
    blind baselines."""
    from ..eval.report import render_text, run_score

    report, written = run_score(predictions, run_dir, output, protocol, splits, seed)
    if not quiet:
        click.echo(render_text(report), nl=False)
        click.echo("wrote " + ", ".join(str(p) for p in written.values()), err=True)


@click.command("baseline")
@run_dir_option()
@output_option("Output predictions .jsonl.")
@click.option("--model", type=click.Choice(_blind_models()), default=_blind_models()[0], show_default=True,
              help="Blind model: most-frequent answer, or category-mean size prior on size questions.")
def baseline(run_dir, output, model):
    """Write a blind model's predictions for the questions of RUN_DIR as plain JSONL (score them
    with 'vistest score')."""
    from ..eval.baselines import write_baseline

    n = write_baseline(run_dir, output, model)
    click.echo(f"{model}: {n} predictions -> {output}", err=True)


@click.command("export")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(_export_choices()[0]))
@click.argument("run_dir", type=click.Path(file_okay=False))
@output_option("Export folder (new, empty, or a previous export of the same FORMAT).", folder=True)
@click.option("--link", type=click.Choice(_export_choices()[1]), default="hard", show_default=True,
              help="revsi: how the budget videos get into the export (hard links fall back to copies).")
@click.option("--protocol", type=click.Choice(_protocols()), default="auto", show_default=True,
              help="lmms-eval-task: parsing and scoring rules (as vistest score).")
@click.option("--name", default="vistest", show_default=True, help="lmms-eval-task: task name prefix.")
@quiet_option("No progress and no summary.")
def export_cmd(fmt, run_dir, output, link, protocol, name, quiet):
    """Export RUN_DIR (the output folder of 'vistest run') as FORMAT: revsi (ReVSI release layout for
    lmms-eval's revsi task and VLMEvalKit), lmms-eval-task (--include_path folder, real and
    dummy videos), vlmevalkit (TSVs), jsonl (every row, absolute paths, provenance)."""
    from ..eval.exporters import ExportOptions, export

    res = export(fmt, run_dir, output, ExportOptions(link, protocol, name, progress=not quiet))
    if not quiet:
        click.echo(res.summary_text(), nl=False)
        click.echo(f"wrote {res.out / 'vistest_export.json'}", err=True)
