"""``vistest reformulate``: stress-test variants of questions (vistest.reformulate, docs/questions-format.md)."""
from __future__ import annotations

import click

from .options import output_option, quiet_option, warn


@click.command("reformulate")
@click.argument("questions_jsonl", type=click.Path(dir_okay=False))
@output_option("Output questions .jsonl.")
@click.option("--variants", default="circular,nota-add,nota-replace,open,abstain", show_default=True,
              help="Comma-separated reformulations to add to each question (docs/questions-format.md).")
@click.option("--report", "report", type=click.Path(file_okay=False), default=None,
              help="Folder for skipped.jsonl and report.md: every variant not written, per question, and why.")
@quiet_option("No summary.")
def reformulate_cmd(questions_jsonl, output, variants, report, quiet):
    """Reformulate QUESTIONS_JSONL: each question followed by its circular, none-of-these, open and
    abstain variants, linked by group_id, as question JSONL for 'vistest run'. Each variant's text lists
    exactly the options it offers, in their order; a variant no text can offer without giving its answer away
    is not written, and the base row's skipped_variants says why (docs/questions-format.md)."""
    from ..reformulate import parse_variants, write_reformulated

    res = write_reformulated(questions_jsonl, output, parse_variants(variants), report)
    if not res.records:
        warn(f"{questions_jsonl}: no questions (the file holds no question line): {output} is empty")
    if not quiet:
        click.echo(res.summary(), nl=False, err=True)
        click.echo(f"wrote {len(res.records)} questions -> {output}", err=True)
        if report is not None:
            click.echo(f"variants not written: {len(res.skips)} -> {report}/skipped.jsonl, {report}/report.md",
                       err=True)
