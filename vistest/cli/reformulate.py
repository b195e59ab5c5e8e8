"""``vistest reformulate``: stress-test variants of questions (vistest.reformulate, docs/questions-format.md)."""
from __future__ import annotations

import click

from .options import output_option, quiet_option


@click.command("reformulate")
@click.argument("questions_jsonl", type=click.Path(dir_okay=False))
@output_option("Output questions .jsonl.")
@click.option("--variants", default="circular,nota-add,nota-replace,open,abstain", show_default=True,
              help="Comma-separated reformulations to add to each question (docs/questions-format.md).")
@quiet_option("No summary.")
def reformulate_cmd(questions_jsonl, output, variants, quiet):
    """Reformulate QUESTIONS_JSONL: each question followed by its circular, none-of-these, open and
    abstain variants, linked by group_id, as question JSONL for 'vistest run'."""
    from ..reformulate import parse_variants, write_reformulated

    res = write_reformulated(questions_jsonl, output, parse_variants(variants))
    if not quiet:
        click.echo(res.summary(), nl=False, err=True)
        click.echo(f"wrote {len(res.records)} questions -> {output}", err=True)
