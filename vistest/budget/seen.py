"""Seen rules: when an object counts as *seen* in a frame (the rule; Visibility.seen applies it).

Every stage that asks "did the video show this object?" (the budget ground truth,
``vistest generate``'s first appearances, the timelines' colour break) asks the one predicate
:meth:`vistest.visibility.table.Visibility.seen` with a :class:`SeenRule` from here (the rule is
checked once, when it is made; :func:`seen_rule` reads it from a parameter). A rule reads one
array of the visibility table (vistest.visibility.table;
``visible`` by default: the image share of the object's own pixels where the scene's mesh carries
per-vertex object ids, else of its box silhouette less what hides it) and compares a measure of it
with a threshold. Three kinds (:data:`SEEN_KINDS`, each with its unit, doc and
source):

* ``image`` (the default): the array's value, a fraction of the image area, must **exceed** the
  threshold (default 0.05). ReVSI's rule: an object is visible in a frame when it occupies more than
  5% of the frame area (ReVSI paper, section 3). The ReVSI code (github.com/3dlg-hcvc/revsi at
  9299454) holds no such constant: its ``qa_generation/`` scripts read annotation metadata only and
  its visibility step is not released, so the paper is the source.
* ``silhouette``: the array divided by ``projected`` (the box silhouette ignoring occlusion) must be
  **at least** the threshold (default 0.1): the share of the object's own silhouette that shows,
  BOP's ``visib_fract`` (bop_toolkit docs/bop_datasets_format.md, ``scene_gt_info.json``); 0.1 is
  the minimum visible fraction of BOP-trained pipelines (SurfEmb, github.com/rasmushaugaard/surfemb
  ``surfemb/data/instance.py``: ``min_visib_fract=0.1``). Size-blind: a far, tiny object in full
  view counts as seen.
* ``pixels``: the array times the native image area ``W * H`` (the scene's ``image_size``) must be
  **at least** the threshold (default 1024 = 32 x 32 pixels: BOP's ``px_count_visib``, SurfEmb's
  ``min_px_count_visib=1024``, COCO's small/medium object boundary 32^2). Counted at native
  resolution, not at the size a model's processor resizes frames to.

A rule reads the array it names (``array``, one of :data:`SEEN_ARRAYS`: default ``visible``;
``evidence``, the box bound, and ``projected``, occlusion ignored, are the others). The two
"at least" kinds take a threshold above 0 (at least 0 would count objects never in view as seen).
The silhouette rule always divides by ``projected``, the box silhouette: with a box
``visible`` that is the share of the box silhouette that shows; with an instance ``visible``
(``params["visible"] == "instance"``) it is the object's own visible surface over its box
silhouette, a lower bound of BOP's ``visib_fract`` (whose denominator is the object's own
unoccluded silhouette). Unknown values (invalid frames,
NaN) are never seen. A 2D scene's table (vistest.visibility.tracks2d, ``params["input"] ==
"tracks2d"``) has no silhouette: the silhouette rule refuses it (image and pixels apply as they are).

Spelling on the command line (``--seen-rule KIND[@ARRAY]``, ``--seen-threshold VALUE``;
:func:`seen_rule`): ``--seen-rule silhouette --seen-threshold 0.25``, ``--seen-rule pixels``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError

IMAGE, SILHOUETTE, PIXELS = "image", "silhouette", "pixels"
DEFAULT_SEEN_KIND = IMAGE
DEFAULT_SEEN_ARRAY = "visible"
BOUND_ARRAY = "projected"  # the box silhouette with occlusion ignored: the rule's upper bound
# the visibility table's (frames, objects) image-share arrays (vistest.visibility.table.Visibility) a rule may read
SEEN_ARRAYS = ("visible", "evidence", "projected")
RULE_WHERE = "seen rule"  # what a SeenRule's own errors are prefixed with


@dataclass(frozen=True)
class SeenKind:
    """One kind of seen rule: how it measures an array, how it compares, its default threshold
    with unit, what it does and where the default comes from."""

    name: str
    strict: bool  # True: measure > threshold; False: measure >= threshold
    default: float
    unit: str
    doc: str
    source: str
    fraction: bool  # the threshold is a fraction in [0, 1)


SEEN_KINDS: dict[str, SeenKind] = {k.name: k for k in (
    SeenKind(IMAGE, True, 0.05, "fraction of the image area",
             "seen when the array's share of the image exceeds the threshold",
             "ReVSI paper, section 3 ('occupying >5% of frame area'); ReVSI's released code has no such constant",
             True),
    SeenKind(SILHOUETTE, False, 0.1, "fraction of the object's silhouette (array / projected)",
             "seen when at least this share of the object's silhouette shows (BOP's visib_fract)",
             "BOP visib_fract; SurfEmb surfemb/data/instance.py min_visib_fract=0.1", True),
    SeenKind(PIXELS, False, 1024.0, "pixels at the scene's native image size (array * W * H)",
             "seen when at least this many native-resolution pixels of the object show",
             "BOP px_count_visib; SurfEmb min_px_count_visib=1024 (32 x 32, COCO's small-object bound)", False),
)}
DEFAULT_SEEN_THRESHOLD = SEEN_KINDS[DEFAULT_SEEN_KIND].default  # 0.05: ReVSI's 5%


@dataclass(frozen=True)
class SeenRule:
    """When an object counts as seen in a frame: ``kind`` (:data:`SEEN_KINDS`), ``threshold`` in
    the kind's unit (default: the kind's), ``array`` the visibility table's array it reads.
    Validated on construction (InputError)."""

    kind: str = DEFAULT_SEEN_KIND
    threshold: float = None  # type: ignore[assignment]  # None: the kind's default
    array: str = DEFAULT_SEEN_ARRAY

    def __post_init__(self) -> None:
        if self.threshold is None and self.kind in SEEN_KINDS:
            object.__setattr__(self, "threshold", SEEN_KINDS[self.kind].default)
        problem = _problem(self.kind, self.threshold, self.array)
        if problem:
            raise InputError(f"{RULE_WHERE}: {problem}")

    @property
    def spec(self) -> SeenKind:
        return SEEN_KINDS[self.kind]

    @property
    def kind_option(self) -> str:
        """``KIND`` or ``KIND@ARRAY`` (array other than the default): what ``--seen-rule`` and the
        generator's ``frames.truth.seen_threshold`` take (as a string), read back by :func:`seen_rule`."""
        return self.kind if self.array == DEFAULT_SEEN_ARRAY else f"{self.kind}@{self.array}"

    def measure(self, vis: Any, image_size: tuple[int, int], array: str | None = None) -> np.ndarray:
        """(F, O) float: what the rule compares, per frame and object (NaN where unknown): the
        image share, the silhouette share or the pixel count of ``array`` (default: the rule's)."""
        a = _array(vis, array or self.array)
        if self.kind == IMAGE:
            return a
        if self.kind == PIXELS:
            w, h = image_size
            return a * float(w) * float(h)
        params = getattr(vis, "params", None) or {}
        if params.get("input") == "tracks2d":  # vistest.visibility.tracks2d
            raise InputError(f"{getattr(vis, 'source', 'visibility')}: --seen-rule: the silhouette rule needs the "
                             f"object's 3D silhouette; a 2D scene has only its annotated region (its box or mask "
                             f"is all that is known to show): use --seen-rule image or pixels (docs/tracks2d.md)")
        proj = _array(vis, BOUND_ARRAY)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(proj > 0, a / np.where(proj > 0, proj, 1.0), 0.0)
        return np.where(np.isnan(a) | np.isnan(proj), np.nan, np.minimum(share, 1.0))

    def passes(self, measure: np.ndarray) -> np.ndarray:
        """Bool array: ``measure`` passes the threshold (NaN never does)."""
        m = np.asarray(measure, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            return m > self.threshold if self.spec.strict else m >= self.threshold

    def value_text(self, value: float) -> str:
        """A measured value in the rule's unit, e.g. ``"2.2% of the image"``."""
        if self.kind == IMAGE:
            return f"{_pct(value)} of the image"
        if self.kind == SILHOUETTE:
            return f"{_pct(value)} of its silhouette"
        return f"{value:.0f} pixels"

    @property
    def text(self) -> str:
        """The rule in words, e.g. ``"> 5% of the image"``, ``">= 1024 pixels (native)"``."""
        op = ">" if self.spec.strict else ">="
        arr = "" if self.array == DEFAULT_SEEN_ARRAY else f" ({self.array})"
        unit = " (native resolution)" if self.kind == PIXELS else ""
        return f"{op} {self.value_text(self.threshold)}{unit}{arr}"

    def to_json(self) -> dict:
        return {"kind": self.kind, "threshold": self.threshold, "array": self.array, "text": self.text}

    def compact(self) -> "float | SeenRule":
        """ReVSI's kind on ``visible`` as its bare threshold (what vistest 0.1 wrote and keyed
        outputs by), any other rule as itself."""
        return float(self.threshold) if (self.kind, self.array) == (IMAGE, DEFAULT_SEEN_ARRAY) else self


def _pct(v: float) -> str:
    """A fraction as a percentage: whole numbers as such (``5%``), one decimal from 1% on
    (``2.2%``, ``12.5%``), two significant digits below (``0.84%``)."""
    p = 100.0 * float(v)
    if abs(p - round(p)) < 1e-9:
        return f"{round(p)}%"
    return f"{p:.1f}%" if p >= 1 else f"{p:.2g}%"


def _problem(kind: Any, threshold: Any, array: Any) -> str | None:
    """What is wrong with a rule's parameters (the expectation, for an InputError), None when valid:
    the one check of a seen rule, run when a :class:`SeenRule` is made."""
    if kind not in SEEN_KINDS:
        return f"expected a seen rule kind, one of {', '.join(SEEN_KINDS)}, got {kind!r}"
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        return f"expected a number, got {threshold!r}"
    spec = SEEN_KINDS[kind]
    if spec.fraction and not 0.0 <= float(threshold) < 1.0:
        return f"expected a {spec.unit} in [0, 1) for the {kind} seen rule, got {threshold!r}"
    if not spec.fraction and float(threshold) < 0:
        return f"expected a non-negative number of {spec.unit} for the {kind} seen rule, got {threshold!r}"
    if not spec.strict and float(threshold) <= 0:  # ">= 0" would count objects never in view as seen
        return (f"expected a threshold above 0 for the {kind} seen rule (at least 0 would count objects never in "
                f"view as seen), got {threshold!r}")
    if array not in SEEN_ARRAYS:
        return f"expected one of the visibility table's arrays {', '.join(SEEN_ARRAYS)}, got {array!r}"
    return None


def _array(vis: Any, name: str) -> np.ndarray:
    """The (F, O) float array ``name`` of a visibility table; InputError naming the table when absent."""
    a = getattr(vis, name, None)
    if a is None:
        raise InputError(f"{getattr(vis, 'source', 'visibility')}: {name}: the seen rule reads this array and the "
                         f"visibility table has none (expected e.g. visible or projected)")
    return np.asarray(a, dtype=np.float64)


def seen_rule(value: "float | SeenRule | None" = None, kind: str | None = None, where: str = "--seen-threshold"
              ) -> SeenRule:
    """The rule meant by a parameter: a SeenRule as it is; a number: the threshold of ``kind``
    (default ReVSI's image share: vistest 0.1's ``seen_threshold``); None: ``kind``'s default.
    ``kind`` may carry the array as ``KIND@ARRAY``. Raises InputError naming ``where``."""
    if isinstance(value, SeenRule):
        if kind is not None:
            raise InputError(f"{where}: give a rule or a kind, not both")
        return value
    name, _, array = (kind or DEFAULT_SEEN_KIND).partition("@")
    if name not in SEEN_KINDS:
        raise InputError(f"--seen-rule: expected one of {', '.join(SEEN_KINDS)} (optionally KIND@ARRAY), got "
                         f"{kind!r}")
    threshold = SEEN_KINDS[name].default if value is None else value
    if isinstance(threshold, int) and not isinstance(threshold, bool):
        threshold = float(threshold)
    try:
        return SeenRule(name, threshold, array or DEFAULT_SEEN_ARRAY)
    except InputError as e:  # the rule's own check, reported under the parameter's name
        raise InputError(f"{where}: {str(e).removeprefix(RULE_WHERE + ': ')}") from None
