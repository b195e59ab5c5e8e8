"""``vistest generate``: scenes and their visibility -> a balanced set of questions.

For each scene (by scene id): its facts (vistest.generate.facts), every candidate of the asked
types (one module per family), a random pool of at most ``balance.pool_per_scene`` per type, the
candidates whose all-frame answer the budget stage keeps at every ``frames.truth.budgets`` budget
(vistest.budget.truth: the answer holds for the frames a model sees). Then over all scenes
together: the balancing pass (stratified per-scene draws, answer caps, Iterative Bias Pruning,
options: vistest.generate.balance), ids, and the report (vistest.generate.report). A candidate
whose question record fails the question parser is dropped and counted in the report's notes.

Randomness: each scene's candidates draw from ``scene_rng(seed, scene_id)`` and the balancing
pass from ``numpy.random.default_rng(seed)``; everything is iterated in sorted order. The same
scenes, visibility, rules and seed give byte-identical questions.
"""
from __future__ import annotations

import json
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..atomic import write_atomic
from ..budget.truth import KEPT, budget_truth
from ..errors import InputError
from ..questions import parse_questions
from ..scene import Scene
from ..visibility.table import Visibility
from . import appearance, counting, direction, distance, motion, room, route, size
from . import templates as tpl
from .balance import Placed, answer_class, balance
from .candidates import (
    ALL_TYPES,
    DEFAULT_TYPES,
    LADDER_TYPES,
    MOTION_TYPES,
    REVSI_TYPES,
    TWIN_FAMILY,
    VSIBENCH_ONLY_TYPES,
    VSIBENCH_TYPES,
    WRITABLE_TYPES,
    Candidate,
    scene_rng,
    to_record,
    twin_key,
)
from .facts import SceneFacts
from .report import GenerateReport, build_report
from .rules import Rules

TYPE_SETS = {"revsi": DEFAULT_TYPES, "all": ALL_TYPES, "vsibench": VSIBENCH_TYPES, "motion": MOTION_TYPES}


@dataclass(frozen=True, eq=False)
class SceneInput:
    """One scene and its visibility table; ``source`` names the table in messages."""

    scene: Scene
    visibility: Visibility
    source: str = "<visibility>"


@dataclass(frozen=True)
class Generated:
    """The questions per scene id (records in output order) and the report."""

    questions: Mapping[str, tuple[dict, ...]]
    report: GenerateReport


def parse_types(text: str) -> tuple[str, ...]:
    """``revsi`` (ReVSI's types, the default), ``all`` (ReVSI's, appearance order, route planning,
    the numeric options and the dynamic types of tracked objects), ``vsibench`` (the stock lmms-eval
    ``vsibench`` task's), ``motion`` (the dynamic types: of tracked objects, from scenes with tracks,
    and of the camera's own motion, from any scene with poses), or
    comma-separated type names; in the generator's order. A list may not mix ReVSI-only and VSI-Bench-only types (the
    types both ask are worded differently). Raises InputError."""
    text = text.strip()
    if text in TYPE_SETS:
        return TYPE_SETS[text]
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in names if t not in WRITABLE_TYPES]
    if bad or not names:
        raise InputError(f"--types: expected {', '.join(repr(k) for k in TYPE_SETS)} or a comma-separated list of "
                         f"{', '.join(WRITABLE_TYPES)}; got {text!r}")
    revsi_only = [t for t in names if t in REVSI_TYPES and t not in VSIBENCH_TYPES]
    vsi_only = [t for t in names if t in VSIBENCH_ONLY_TYPES]
    if revsi_only and vsi_only:
        raise InputError(f"--types: {revsi_only[0]!r} (ReVSI) and {vsi_only[0]!r} (VSI-Bench) in one set; expected "
                         f"the types of one benchmark (their shared types are worded differently)")
    return tuple(t for t in WRITABLE_TYPES if t in names)


def vsibench_wording(types: tuple[str, ...]) -> bool:
    """Does the set use VSI-Bench's wording ("this room") for the types both benchmarks ask."""
    return any(t in VSIBENCH_ONLY_TYPES for t in types)


VSIBENCH_DATASET = "vistest"  # the stock vsibench task's video folder: {HF_HOME}/vsibench/{dataset}/{scene_name}.mp4


def vsibench_record(rec: dict) -> dict:
    """A record with the fields the stock lmms-eval ``vsibench`` task reads besides vistest's
    (lmms_eval/tasks/vsibench/utils.py ``_vsibench_video_path``: ``dataset`` and ``scene_name``)."""
    out = {"id": rec["id"], "dataset": VSIBENCH_DATASET, "scene_name": rec["scene_id"]}
    out.update((k, v) for k, v in rec.items() if k != "id")
    return out


def scene_candidates(facts: SceneFacts, rules: Rules, types: tuple[str, ...], rng: np.random.Generator
                     ) -> list[Candidate]:
    """Every candidate of ``types`` in one scene (families in a fixed order)."""
    out = counting.candidates(facts, rules.counting, types, rng)
    size_template = tpl.VSIBENCH_SIZE if vsibench_wording(types) else tpl.SIZE
    out += size.candidates(facts, rules.size, types, rng, template=size_template)  # twins from one draw (#23)
    out += distance.abs_candidates(facts, rules.abs_distance, types, rng)
    out += distance.rel_candidates(facts, rules.rel_distance, types, rng)
    out += direction.candidates(facts, rules.rel_direction, types)
    if appearance.TYPE in types:
        out += appearance.candidates(facts, rules.appearance, rng)
    out += room.candidates(facts, rules.room_size, types)
    if route.TYPE in types:
        out += route.candidates(facts, rules.route, rng)
    out += motion.candidates(facts, rules.motion, types)
    return sorted(out, key=lambda c: c.key)


def draw_pool(cands: Sequence[Candidate], limit: int, rng: np.random.Generator, stratify: bool = False
              ) -> list[Candidate]:
    """At most ``limit`` candidates per type (0: all), drawn at random; key order kept. A
    numeric question and its numeric-option twin are drawn as one (candidates.twin_key). With
    ``stratify`` (``balance.pool_stratify``), the places go round the answer classes
    (vistest.generate.balance.answer_class: a direction word, a count, a side of the world prior),
    each to the class drawn least so far, a unit of it at random: a scene's 20 'back' triples
    among 2,000 reach the per-scene caps' stratified draw (issue #43; drawn uniformly, 40 of
    2,000 hold one 'back' on average)."""
    groups: dict[tuple, list[list[Candidate]]] = defaultdict(list)
    units: dict[tuple, list[Candidate]] = {}
    for c in cands:
        k = twin_key(c)
        if k not in units:
            units[k] = []
            groups[(TWIN_FAMILY.get(c.question_type) or c.question_type,)].append(units[k])
        units[k].append(c)
    out = []
    for fam in sorted(groups):
        g = groups[fam]
        if limit and len(g) > limit:
            pick = _stratified(g, limit, rng) if stratify else rng.choice(len(g), size=limit, replace=False)
            g = [g[i] for i in np.sort(pick)]
        out.extend(c for unit in g for c in unit)
    return sorted(out, key=lambda c: c.key)


def _stratified(units: Sequence[Sequence[Candidate]], limit: int, rng: np.random.Generator) -> list[int]:
    """``limit`` unit indices, round the answer classes of the units' first candidates (draw_pool)."""
    by: dict[str, list[int]] = defaultdict(list)
    for i, u in enumerate(units):
        by[str(answer_class(u[0]))].append(i)
    left = {k: [v[j] for j in rng.permutation(len(v))] for k, v in sorted(by.items())}
    taken: dict[str, int] = dict.fromkeys(left, 0)
    out: list[int] = []
    while len(out) < limit:
        k = min((k for k, v in left.items() if v), key=lambda k: (taken[k], k))
        out.append(left[k].pop())
        taken[k] += 1
    return out


def provisional_record(c: Candidate, qid: str) -> dict:
    """The candidate as a question with its answer as option A (for the budget stage, which does
    not look at option order)."""
    if c.question_type in LADDER_TYPES:
        return to_record(c, qid, [c.answer_text], "A")
    if c.answer is not None:
        return to_record(c, qid, [c.answer, *c.distractors], "A")
    return to_record(c, qid)


def valid(scene: Scene, cands: Sequence[Candidate]) -> tuple[list[Candidate], list[str]]:
    """The candidates whose question records the question parser accepts, and why each other one
    was dropped (a candidate that fails its own checks is a generator bug; it is dropped and
    counted in the report, never the set aborted: issue #34)."""
    recs = [json.dumps(provisional_record(c, f"c{i}")) for i, c in enumerate(cands)]
    try:
        parse_questions(recs, source="<candidates>", scene=scene)
        return list(cands), []
    except InputError:
        pass
    ok, why = [], []
    for c, rec in zip(cands, recs):
        try:
            parse_questions([rec], source="<candidates>", scene=scene)
            ok.append(c)
        except InputError as e:
            why.append(f"{c.question_type} {'/'.join(c.objects)}: {str(e).split(': ', 2)[-1]}")
    return ok, why


def kept_at(scene: Scene, vis: Visibility, cands: Sequence[Candidate], rules: Rules) -> list[Candidate]:
    """The candidates whose answer the budget stage keeps at every budget of ``frames.truth`` (the
    stage's settings, whole)."""
    truth = rules.frames.truth
    if not cands or not truth.budgets:
        return list(cands)
    recs = [provisional_record(c, f"c{i}") for i, c in enumerate(cands)]
    qs = parse_questions([json.dumps(r) for r in recs], source="<candidates>", scene=scene)
    bt = budget_truth(scene, vis, qs, truth)
    bad = {it.question.id for it in bt.items if it.status != KEPT}
    return [c for i, c in enumerate(cands) if f"c{i}" not in bad]


def generate(inputs: Sequence[SceneInput], types: tuple[str, ...] = DEFAULT_TYPES, rules: Rules = Rules(),
             seed: int = 0, progress: bool = False) -> Generated:
    """The whole generator (module docstring). Raises InputError on bad input."""
    from ..progress import progress_bar

    rules.validate()
    by_id: dict[str, SceneInput] = {}
    for inp in inputs:
        sid = inp.scene.scene_id
        inp.scene.require_3d("vistest generate")
        if sid in by_id:
            raise InputError(f"{inp.scene.root}: scene_id: {sid!r} given twice; expected distinct scenes")
        by_id[sid] = inp
    funnel: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(("found", "pooled", "answerable"), 0))
    pool: list[Candidate] = []
    dropped: list[str] = []
    with progress_bar(len(by_id), "generate", enabled=progress) as bar:
        for sid in sorted(by_id):
            inp = by_id[sid]
            facts = SceneFacts(inp.scene, inp.visibility, rules.frames.seen, inp.source)
            rng = scene_rng(seed, sid)
            found = scene_candidates(facts, rules, types, rng)
            b = rules.balance
            pooled, why = valid(inp.scene, draw_pool(found, b.pool_per_scene, rng, b.pool_stratify))
            dropped += [f"{sid}: {w}" for w in why]
            ok = kept_at(inp.scene, inp.visibility, pooled, rules)
            for stage, cs in (("found", found), ("pooled", pooled), ("answerable", ok)):
                for c in cs:
                    funnel[c.question_type][stage] += 1
            pool.extend(ok)
            bar.update(1)
    bal = balance(pool, rules, np.random.default_rng(seed), seed)
    questions, ranks, keys = assign_ids(bal.placed, by_id)
    if vsibench_wording(types):
        questions = {sid: tuple(vsibench_record(r) for r in recs) for sid, recs in questions.items()}
    notes = list(bal.notes)
    if dropped:
        notes.append(f"{len(dropped)} candidate(s) failed their own checks and were dropped (a generator bug; "
                     f"the first: {dropped[0]})")
    bias = {qid: bal.bias[k] for qid, k in keys.items() if k in bal.bias}
    report = build_report(questions, ranks, {k: dict(v) for k, v in funnel.items()}, bal.removals, notes,
                          {sid: (inp.scene, inp.visibility) for sid, inp in by_id.items()}, types, rules, seed,
                          bias, bal.curve, len(dropped))
    return Generated(questions, report)


def assign_ids(placed: Sequence[Placed], scenes: Mapping[str, SceneInput]
               ) -> tuple[dict[str, tuple[dict, ...]], dict[str, int], dict[str, tuple]]:
    """Question records per scene, ids ``{scene_id}-{n:04d}`` in key order, the answer's rank
    among the numeric options by id, and each id's candidate key. Each scene's records are
    validated as vistest questions (a failure here is a bug)."""
    per: dict[str, list[Placed]] = defaultdict(list)
    for p in placed:
        per[p.candidate.scene_id].append(p)
    out, ranks, keys = {}, {}, {}
    for sid in sorted(scenes):
        recs = []
        for n, p in enumerate(sorted(per.get(sid, []), key=lambda p: p.candidate.key), start=1):
            recs.append(to_record(p.candidate, f"{sid}-{n:04d}", list(p.options) if p.options else None, p.letter))
            keys[recs[-1]["id"]] = p.candidate.key
            if p.rank is not None:
                ranks[recs[-1]["id"]] = p.rank
        parse_questions([json.dumps(r) for r in recs], source=f"<generated {sid}>", scene=scenes[sid].scene)
        out[sid] = tuple(recs)
    return out, ranks, keys


def questions_jsonl(records: Sequence[dict]) -> str:
    """The question JSONL text (one object per line, fields in a fixed order)."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def write_questions(gen: Generated, output: str | os.PathLike, folder: bool) -> list[Path]:
    """Write the questions atomically: to ``output`` (one scene) or ``output/{scene_id}.jsonl``."""
    out = Path(output)
    paths = []
    if folder:
        for sid, recs in gen.questions.items():
            paths.append(out / f"{sid}.jsonl")
            write_atomic(paths[-1], questions_jsonl(recs))
    else:
        (recs,) = gen.questions.values()
        write_atomic(out, questions_jsonl(recs))
        paths.append(out)
    return paths
