"""Manifest lines: one line of ``manifest.jsonl`` per written video (fields in docs/videos.md):
what it holds, what each profile and evaluator takes from it, and how it was written.
vistest.videos.manifest writes them into the run folder's manifest."""
from __future__ import annotations

from typing import Any, Mapping

from ..budget.sampling import PROFILES
from ..budgets import ALL, budget_json, budget_label
from .plan import Variant, VariantPlan
from .recipes import STREAM_COPY, X264, X264_INTRA


def manifest_record(plan: VariantPlan, v: Variant, encoding: str | None = None, note: str | None = None) -> dict:
    """One line of ``manifest.jsonl`` for variant ``v`` (see docs/videos.md): what it holds
    (source frames, black and masked frames), what each profile takes from it per budget it
    serves, and how it was written (``encoding``: stream-copy, x264 or x264-intra, as the
    writer reports it; ``note``: why all_frame is not a stream copy)."""
    if encoding is None:
        encoding = X264_INTRA if v.intra else X264
    copied = encoding == STREAM_COPY
    rec: dict[str, Any] = {
        "scene_id": plan.scene_id, "variant": v.kind, "path": v.path,
        "budget": None if v.budget is None else budget_json(v.budget),
        "budgets": [budget_json(b) for b in v.budgets], "length": v.length,
        "profile": v.profile, "mode": v.mode, "fill": v.fill, "source": plan.source,
        "source_key": None if v.source_free else plan.source_key,
        "source_frames": list(v.frames), "black_frames": list(v.black), "masked_frames": list(v.masked_frames),
        "masks": [[f, *r] for f, rs in v.masks for r in rs],
        "num_frames": v.num_frames, "fps": v.fps, "size": list(v.size), "questions": list(v.questions),
        "key": v.remux_key if copied else v.key, "encoding": encoding, "encoding_note": note,
        "crf": None if copied else plan.settings.crf,
        "preset": None if copied else (plan.settings.intra_preset if v.intra else plan.settings.preset),
        "profiles": {name: {budget_label(b): dict(t.to_json()) for b, ts in v.takes for t in ts if t.profile == name}
                     for name in PROFILES if v.takes},
        "evaluators": {e.evaluator.name: {"config": e.evaluator.to_json(),
                                          "takes": {budget_label(b): t.to_json() for b, ts in v.evaluator_takes
                                                    for t in ts if t.evaluator.name == e.evaluator.name}}
                       for e in (v.evaluator_takes[0][1] if v.evaluator_takes else ())},
    }
    if v.timeline is not None:
        rec["timeline"] = {"num_frames": v.timeline[0], "fps": plan.source_fps, "positions": list(v.timeline[1])}
    if v.kind == "dummy":
        rec["objects"] = list(v.objects)
        rec["evidence_frames"] = list(v.evidence_frames)
        timeline = v.timeline[0] if v.timeline is not None else v.num_frames
        rec["short_of_budgets"] = [int(b) for b in v.budgets if b != ALL and int(b) > timeline]
    rec["warnings"] = list(v.warnings) + ([note] if note and not copied else [])
    return rec


def manifest_records(plan: VariantPlan, encodings: Mapping[str, tuple[str, str | None]] | None = None) -> list[dict]:
    """Manifest lines of every variant, sorted by path; ``encodings``: {path: (encoding,
    note)} as the writer reports them (vistest.videos.staging.WriteReport.encodings)."""
    enc = dict(encodings or {})
    return [manifest_record(plan, v, *enc.get(v.path, (None, None)))
            for v in sorted(plan.variants, key=lambda v: v.path)]
