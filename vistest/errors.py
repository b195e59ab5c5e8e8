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

import errno
import os
import re


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
        super().__init__(plain_values(message))


# numpy 2's scalar reprs (np.float64(nan), np.int64(3), np.str_('x'), np.True_), not other code (np.linspace(...))
_NUMPY_SCALAR = re.compile(r"\bnp\.(?:(?:float|int|uint|complex)\d+|bool|str_|bytes_|longdouble)\(([^()]*)\)"
                           r"|\bnp\.(True|False)_")


def plain_values(message: str) -> str:
    """``message`` with numpy 2's scalar reprs written as Python's: ``np.float64(nan)`` -> ``nan``,
    ``np.int64(3)`` -> ``3``, ``np.True_`` -> ``True`` (a value a message took from an array)."""
    return _NUMPY_SCALAR.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), message)


# errno values that mean "the environment refuses the write" (a folder that cannot be written,
# a full disk or quota, a file size limit, a path component that is a file), not a bug
ENVIRONMENT_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EFBIG,
                                errno.ENOTDIR, errno.EISDIR, errno.EEXIST, errno.ENAMETOOLONG, errno.EMLINK})


class OutputError(InputError):
    """An output cannot be written: the folder is not writable, the disk or quota is full, a
    path component is a file. The message names the path and the reason; exit status 2 like
    any InputError (the user fixes the folder or the disk, not vistest)."""


def is_environment_error(exc: BaseException) -> bool:
    """Whether ``exc`` is an OSError the environment causes (:data:`ENVIRONMENT_ERRNOS`)."""
    return isinstance(exc, OSError) and exc.errno in ENVIRONMENT_ERRNOS


def output_error(path: str | os.PathLike, exc: OSError, what: str = "cannot write") -> OutputError:
    """An :class:`OutputError` for ``exc`` raised while writing ``path``: ``PATH: cannot write
    (No space left on device)``; the path the OS names, when it names another one, is added."""
    named = getattr(exc, "filename", None)
    extra = f" ({named})" if named and os.path.abspath(str(named)) != os.path.abspath(str(path)) else ""
    hint = {errno.ENOSPC: "; free some space or write elsewhere", errno.EDQUOT: "; the disk quota is exhausted",
            errno.EFBIG: "; the file size limit was reached (ulimit -f)",
            errno.EACCES: "; permission denied", errno.EPERM: "; permission denied",
            errno.EROFS: "; the file system is read-only", errno.EEXIST: "; a file is in the way (expected a folder)",
            errno.ENOTDIR: "; a part of the path is a file, not a folder"}
    return OutputError(f"{path}: {what} ({exc.strerror or exc}){extra}{hint.get(exc.errno, '')}")
