"""Reading JSON and JSONL inputs (scenes, questions, predictions, ground truth, the manifest) with
errors that name the file, the line and what was expected.

Text inputs are UTF-8 (a byte that is not is an error naming the file, its line and column);
a JSON document nested deeper than the parser allows is an error, not a RecursionError.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Iterator


def read_text(path: str | os.PathLike, error: type[ValueError] = ValueError, what: str = "file") -> str:
    """The UTF-8 text of ``path``; ``error`` naming the file (and, for a byte that is not UTF-8,
    its line, column and byte offset) when it cannot be read or decoded. ``what``: the kind of
    file, for the message (``scene file``)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise error(f"{path}: cannot read {what} ({e.strerror or e})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise error(f"{path}:{line}: column {col}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}: "
                    f"{e.reason}); expected a UTF-8 encoded {what}") from None


def parse_json(text: str, source: str, error: type[ValueError] = ValueError, where: str = "") -> Any:
    """``json.loads(text)``; ``error`` naming ``source`` (``where``: e.g. ``:12: <line>``) for
    invalid JSON or a document nested deeper than the parser's limit."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise error(f"{source}{where}: not valid JSON (line {e.lineno}, column {e.colno}: "
                    f"{e.msg})") from None
    except RecursionError:
        raise error(f"{source}{where}: JSON nested too deeply (arrays or objects within each other beyond "
                    f"Python's recursion limit); expected the documented format") from None


def iter_jsonl(lines: Iterable[str], source: str, error: type[ValueError] = ValueError) -> Iterator[tuple[int, dict]]:
    """(1-based line number, object) for each non-blank line of ``source``.

    A line that is not valid JSON, nested too deeply, or not a JSON object raises ``error`` with
    the message ``SOURCE:LINE: <line>: what was expected``.
    """
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            doc = json.loads(raw)
        except json.JSONDecodeError as e:
            raise error(f"{source}:{lineno}: <line>: not valid JSON (column {e.colno}: {e.msg})") from None
        except RecursionError:
            raise error(f"{source}:{lineno}: <line>: JSON nested too deeply (beyond Python's recursion limit)") \
                from None
        if not isinstance(doc, dict):
            raise error(f"{source}:{lineno}: <line>: expected a JSON object, got {type(doc).__name__}")
        yield lineno, doc
