"""The one registry of importers: every ``vistest import NAME`` is an :class:`Importer` in
:data:`IMPORTERS`, its options :class:`Option` values (``-O NAME=VALUE``).

An importer is of one :data:`KINDS`, which says what it reads, what it writes and which of the
command's options it takes (:data:`KIND_OPTIONS`):

* ``scene``: a dataset's scan (frame source: ``read_capture``) and / or its boxes (box source:
  ``read_boxes``, ``check_boxes``) into ``scene.json`` (:func:`vistest.datasets.import_scene`);
* ``tracks2d``: a benchmark's 2D object tracks into a 2D scene (``read``;
  :func:`vistest.datasets.tracks2d_import.import_tracks`);
* ``question-set``: a question table with its own videos (STI-Bench, ReSTI) into question JSONL
  (:func:`vistest.datasets.sti_bench.import_question_set`);
* ``question-rows``: VSI-Bench / ReVSI question rows, their objects resolved against imported scenes
  (:func:`vistest.datasets.vsibench_questions.import_rows`).

The registry is filled by :mod:`vistest.datasets` (its ``__init__``), one ``IMPORTER`` (or
``IMPORTERS``) per dataset module; this module imports no importer, so that none imports it back.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .common import AdapterError

READS = ("frames", "poses", "intrinsics", "depth", "mesh", "boxes", "room")
KINDS = ("scene", "tracks2d", "question-set", "question-rows")
# the options of `vistest import` each kind takes besides PATH and -o (the command refuses the others)
KIND_OPTIONS: dict[str, tuple[str, ...]] = {
    "scene": ("--boxes", "--frames", "--video", "--video-from-frames", "--allow-frame-gaps", "-O"),
    "tracks2d": ("--video", "-O"),
    "question-set": (),
    "question-rows": ("--scenes", "--scene-id", "--skip-refused"),
}


def _raw(value: Any) -> Any:
    """The value as given (the importer's reader parses it)."""
    return value


@dataclass(frozen=True)
class Option:
    """An importer option (``-O NAME=VALUE`` on the command line). ``parse`` turns the raw value
    into the typed one or raises ValueError saying what was expected (default: the raw value, for
    readers that parse their options themselves, as the 2D-track readers do)."""

    name: str
    help: str
    parse: Callable[[Any], Any] = _raw


@dataclass(frozen=True)
class Importer:
    """One importable format: its ``name`` (``vistest import NAME``), ``title``, ``kind`` (one of
    :data:`KINDS`), what PATH is (``path_help``), its ``options``, and the functions that read it:

    * ``scene``: ``read_capture(path, options, out_dir, progress=False) -> Capture`` for frame sources;
      ``read_boxes(path, capture_or_None, options) -> BoxSet`` for box sources; ``check_boxes(path,
      options) -> None``: a quick check of a box source file's shape (AdapterError naming the field), run
      before the frames are read so that a wrong file fails in seconds; ``reads``: what it reads (some
      of :data:`READS`);
    * ``tracks2d``: ``read(path, options, video) -> Imported2D`` (it writes nothing);
    * ``question-set``: ``read(path) -> ImportedSet`` (vistest.datasets.sti_bench);
    * ``question-rows``: ``read(path, scenes, scene_pattern) -> ImportedRows`` (vistest.datasets.vsibench_questions).
    """

    name: str
    title: str
    kind: str
    path_help: str
    options: tuple[Option, ...] = ()
    reads: frozenset = frozenset()
    read_capture: Callable[..., Any] | None = None
    read_boxes: Callable[..., Any] | None = None
    check_boxes: Callable[..., None] | None = None
    read: Callable[..., Any] | None = None

    def option_names(self) -> list[str]:
        """The names of its options, in order."""
        return [o.name for o in self.options]

    def describe(self) -> str:
        """One line for help texts."""
        reads = ", ".join(r for r in READS if r in self.reads)
        return f"{self.name}: {self.title} ({f'reads {reads}; ' if reads else ''}PATH = {self.path_help})"


IMPORTERS: dict[str, Importer] = {}


def register(importer: Importer) -> Importer:
    """Add ``importer`` to :data:`IMPORTERS` (names are unique, the kind one of :data:`KINDS`)."""
    if importer.name in IMPORTERS:
        raise ValueError(f"importer {importer.name!r} is already registered")
    if importer.kind not in KINDS:
        raise ValueError(f"importer {importer.name!r}: unknown kind {importer.kind!r}; expected one of {KINDS}")
    bad = set(importer.reads) - set(READS)
    if bad:
        raise ValueError(f"importer {importer.name!r}: unknown reads {sorted(bad)}; expected some of {READS}")
    IMPORTERS[importer.name] = importer
    return importer


def importers(kind: str | None = None) -> list[Importer]:
    """The registered importers (of ``kind`` when given), in registration order."""
    return [i for i in IMPORTERS.values() if kind is None or i.kind == kind]


def get_importer(name: str, kind: str | None = None) -> Importer:
    """The registered importer ``name`` (of ``kind`` when given); an AdapterError listing the
    known ones otherwise."""
    found = IMPORTERS.get(name)
    if found is None or (kind is not None and found.kind != kind):
        raise AdapterError(f"dataset: expected one of {', '.join(sorted(i.name for i in importers(kind)))}, "
                           f"got {name!r}")
    return found
