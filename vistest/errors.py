"""The error contract: bad input is an :class:`InputError`; anything else is a bug.

Every stage raises :class:`InputError` (or a subclass: ``SceneError``, ``QuestionError``,
``AdapterError``, ``ScoreError`` ...) for input a user can fix: a file, a field, a value. Its
message names the file, the field and what was expected::

    scene.json: objects[1].rotation: expected an orthonormal 3x3 matrix, got det 0.5

The command-line group handles it once (``Error: <message>``, exit status 2). Any other
exception is a bug in vistest and keeps its traceback. ``InputError`` is a ``ValueError`` so
library callers that already catch ``ValueError`` keep working.
"""
from __future__ import annotations

import os


class InputError(ValueError):
    """Bad input: the message names the file, the field and what was expected.

    Either pass the whole message, or build it from parts: ``InputError(file=path,
    field="objects[1].size", expected="3 positive numbers", got=value)`` gives
    ``path: objects[1].size: expected 3 positive numbers, got [1, 0, 2]``. The parts are
    kept as attributes (``file``, ``field``, ``expected``) for callers that want them.
    """

    def __init__(self, message: str | None = None, *, file: str | os.PathLike | None = None,
                 field: str | None = None, expected: str | None = None, got: object = ...):
        self.file = None if file is None else str(file)
        self.field = field
        self.expected = expected
        if message is None:
            parts = [p for p in (self.file, field) if p]
            what = f"expected {expected}" if expected else "invalid"
            if got is not ...:
                what += f", got {got!r}"
            message = ": ".join(parts + [what])
        super().__init__(message)
