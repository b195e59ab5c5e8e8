"""Tables of the score report: built once as data, rendered as terminal text or Markdown.

A :class:`Table` holds strings only (the numbers already formatted by whoever builds it:
vistest.eval.report, vistest.eval.baselines.RankAttack.tables). Text tables pad columns with
spaces; Markdown tables escape ``|``. The first ``text_columns`` columns are left-aligned, the
others (numbers) right-aligned. A table without rows renders as ``(none)`` under its note.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Table:
    """A titled table; ``note`` is a sentence under the title; ``rows`` have one string per
    header. The first ``text_columns`` columns are left-aligned, the others right-aligned."""

    title: str
    note: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    text_columns: int = 1


def _right_aligned(t: Table) -> list[bool]:
    return [i >= t.text_columns for i in range(len(t.headers))]


def text_table(t: Table) -> str:
    """The table as aligned plain text: title, note, header, dashes, rows."""
    if not t.rows:
        return f"{t.title}\n{t.note}\n(none)"
    widths = [max(len(h), *(len(r[i]) for r in t.rows)) for i, h in enumerate(t.headers)]
    right = _right_aligned(t)

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()

    lines = [t.title, t.note, fmt(t.headers), fmt(tuple("-" * w for w in widths))]
    return "\n".join(lines + [fmt(r) for r in t.rows])


def _md_cell(s: str) -> str:
    return s.replace("|", "\\|")


def markdown_table(t: Table) -> str:
    """The table as a Markdown section: ``## title``, the note, a pipe table."""
    lines = [f"## {t.title}", "", t.note, ""]
    if not t.rows:
        return "\n".join(lines + ["(none)"])
    lines.append("| " + " | ".join(map(_md_cell, t.headers)) + " |")
    lines.append("|" + "|".join("---:" if r else "---" for r in _right_aligned(t)) + "|")
    lines += ["| " + " | ".join(map(_md_cell, r)) + " |" for r in t.rows]
    return "\n".join(lines)

