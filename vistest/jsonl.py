"""Reading JSONL inputs (questions, predictions, ground truth, the manifest) with errors that
name the file and the line."""
from __future__ import annotations

import json
from typing import Iterable, Iterator


def iter_jsonl(lines: Iterable[str], source: str, error: type[ValueError] = ValueError) -> Iterator[tuple[int, dict]]:
    """(1-based line number, object) for each non-blank line of ``source``.

    A line that is not valid JSON, or not a JSON object, raises ``error`` with the message
    ``SOURCE:LINE: <line>: what was expected``.
    """
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            doc = json.loads(raw)
        except json.JSONDecodeError as e:
            raise error(f"{source}:{lineno}: <line>: not valid JSON (column {e.colno}: {e.msg})") from None
        if not isinstance(doc, dict):
            raise error(f"{source}:{lineno}: <line>: expected a JSON object, got {type(doc).__name__}")
        yield lineno, doc
