"""``vistest synth --grid N``: a benchmark of N scenarios spread over the 12 cells, in one command.

:func:`run_grid` writes into ``OUT``::

    OUT/specs/{id}.json              each scenario's spec (vistest.synth.cells.cell_spec)
    OUT/scenes/{id}/                 each scenario rendered (vistest.synth.render): video.mp4, scene.json,
                                     mesh, its visibility.npz and questions.jsonl
    OUT/run/                         the batch's run folder (vistest batch: budget and dummy videos,
                                     ground truth per budget, manifest.jsonl, index.html)
    OUT/export/lmms-eval-task/       the lmms-eval task folder, OUT/export/vlmevalkit/ the TSVs
    OUT/reports/{cell}/report.md     each cell's generate report (pools, debiasing, blind attacks)
    OUT/report.md, OUT/report.json   the per-cell report: scenarios, questions per type and per level,
                                     a scenario's mean, the cell's dedicated task, budget statuses, blind
                                     attacks, a note per type asked and not generated with the reason
                                     (report.json: each step's seconds too)

Steps: each scenario on ``workers`` processes (``engine`` ray: a Ray task per scenario), from its spec to
its table in one process: the spec (scenario i goes to cell ``i mod 12``, its ``i // 12``-th: counts,
sizes and camera modes cycle inside a cell; a spec that cannot be laid out, or whose movers the camera
sees in under ``MIN_MOVER_IN_VIEW`` of their frames, is drawn again from another seed, up to
``MAX_REDRAWS`` times), its render and its visibility table; the questions of each cell's
task (vistest.synth.cells.CELL_TYPES) generated over the cell's scenes together (the set's debiasing, per
cell), the cells on the local processes, each carrying its ``level``
(L1, L2, L3: vistest.synth.cells.LEVELS); the batch (vistest.batch,
the local pool or Ray) with the table reused; the exports; the report. Reruns skip what is up to date
(renders by their spec and rules stamp, tables by their scene's content and rules stamp, the batch by its
records: vistest.freshness).
"""
from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from ..atomic import write_atomic
from ..errors import InputError
from ..progress import progress_bar
from .cells import (CELL_TASKS, CELL_TYPES, LEVEL_NAMES, SEEN_KIND, cell_spec, level_of, project, split_cell,
                    synth_rules)
from .spec import CELLS, ScenarioSpec, SpecError, spec_to_dict

MAX_REDRAWS = 30  # the 400 figural specs of a 1,200 grid: 321 laid out at once, the last after 9 redraws
# The exports' scoring rules: ReVSI's, the generator's preset (vistest.synth.cells.synth_rules). Named, not
# "auto": an egocentric static cell asks VSI-Bench's appearance order beside ReVSI's types, a mix "auto" refuses
# (vistest.eval.metrics.resolve_protocol); the exported task scores every type by these rules.
PROTOCOL = "revsi"
EXPORTS = ("lmms-eval-task", "vlmevalkit")


@dataclass(frozen=True)
class GridConfig:
    """``n`` scenarios from ``seed``, each ``frames`` frames of ``resolution`` (W, H) at ``fps``; the batch
    on ``engine`` (local or ray; ``address`` for ray) with ``workers`` (None: the CPUs) at ``budgets``, its
    dummies ``dummy_modes`` at ``dummy_budgets`` (vistest run's --dummy and --dummy-budgets; None: its
    defaults, every mode at every numeric budget); ``export``: write the exports; ``force``: render again."""

    n: int
    seed: int = 0
    frames: int = 300
    resolution: tuple[int, int] = (640, 480)
    fps: float = 30.0
    engine: str = "local"
    workers: int | None = None
    address: str | None = None
    budgets: str = "16,32,64,all"
    dummy_modes: tuple[str, ...] | None = None
    dummy_budgets: tuple | None = None
    export: bool = True
    force: bool = False

    def check(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1:
            raise InputError(f"--grid: expected a positive number of scenarios, got {self.n!r}")
        if self.workers is not None and self.workers < 1:
            raise InputError(f"-j/--workers: expected a positive integer, got {self.workers!r}")
        run_config(self)  # --budgets (and the batch's settings) before anything is rendered
        if self.engine == "ray":  # a cluster that does not answer: within seconds, before anything is written
            from ..batch.ray_engine import check_reachable, cluster_address

            check_reachable(cluster_address(self.address))
        try:  # the render options, as every cell's spec will take them, named as options
            cell_spec(CELLS[0], 0, seed=self.seed, frames=self.frames, resolution=self.resolution, fps=self.fps)
        except SpecError as e:
            fld = str(e.field or "").split("[")[0]
            option = {"frames": "--frames", "resolution": "--size", "fps": "--fps"}.get(fld)
            if option is None:
                raise
            raise InputError(f"{option}: {str(e).split(': ', 1)[1]}") from None  # "field: expected ..., got ..."


def grid_cells(n: int) -> list[tuple[str, int]]:
    """(cell, k) of scenario i = 0 .. n-1: cell ``i mod 12``, its ``k = i // 12``-th scenario."""
    return [(CELLS[i % len(CELLS)], i // len(CELLS)) for i in range(n)]


def laid_out_spec(cell: str, k: int, cfg: "GridConfig") -> ScenarioSpec:
    """Scenario ``k`` of ``cell``: its spec from the grid's seed, drawn again from another seed while it
    cannot be laid out (``MAX_REDRAWS`` times; the same id), so that ``specs/{id}.json`` is the spec rendered
    and a rerun finds its render."""
    return laid_out(cell, k, cfg)[0]


def laid_out(cell: str, k: int, cfg: "GridConfig"):
    """(:func:`laid_out_spec`, its Layout): the layout the draw was tested with, rendered without laying it
    out again. A draw whose movers the camera sees too little (:func:`movers_in_view` under
    :data:`MIN_MOVER_IN_VIEW`) is drawn again too, while redraws are left (the last one is kept as it is)."""
    from .layout import build_layout

    for attempt in range(MAX_REDRAWS):
        spec = cell_spec(cell, k, seed=cfg.seed + 1_000_003 * attempt, frames=cfg.frames,
                         resolution=cfg.resolution, fps=cfg.fps)
        try:
            layout = build_layout(spec)
        except SpecError:
            if attempt == MAX_REDRAWS - 1:
                raise
            continue
        if min(movers_in_view(layout), default=1.0) >= MIN_MOVER_IN_VIEW or attempt == MAX_REDRAWS - 1:
            return spec, layout
    raise AssertionError("unreachable")


# the least share of its frames after it starts in which a mover's centre is in view (movers_in_view): the
# movers that questions ask about must be seen (issue #49); the draws of in_view_region alone left 16 of about
# 90 movers of 60 vista-egocentric-dynamic scenarios under it (0.23 the least), 8 of 60 environmental ones
MIN_MOVER_IN_VIEW = 0.4


def movers_in_view(layout) -> list[float]:
    """Per mover of ``layout`` (vistest.synth.layout.Layout), the share of the frames from its start on (the
    first frame at or after ``start_s``) in which its centre projects in front of the camera and inside the
    image (the scenario's intrinsics, vistest.synth.demo.demo_intrinsics; occlusion not counted)."""
    import math

    import numpy as np

    from .demo import demo_intrinsics

    spec = layout.spec
    k, (w, h) = demo_intrinsics(spec.resolution), spec.resolution
    out = []
    for oid, mot in layout.motions.items():
        o = next(b for b in layout.objects if b.id == oid)
        frames = np.arange(min(int(math.ceil(mot.start_s * spec.fps)), spec.frames - 1), spec.frames)
        u, v, z = (a[:, 0] for a in project(layout.poses[frames], o.centres[frames][:, None], k))
        out.append(float(np.mean((z > 0) & (u >= 0) & (u < w) & (v >= 0) & (v < h))))
    return out


def prepare_one(cell: str, k: int, cfg: "GridConfig", specs_dir: str, scenes_dir: str) -> tuple[str, str]:
    """Worker: scenario ``k`` of ``cell`` from its spec to its table, in one process: lay it out
    (:func:`laid_out`), write ``specs_dir/{id}.json``, render it into ``scenes_dir/{id}`` (reused while its
    stamp is current, unless ``cfg.force``) and compute its visibility table (:func:`scene_table`, kept as
    ``visibility.npz``, not returned: the command holds no table). Returns (scenario id, scene.json)."""
    from .render import render_scenario

    spec, layout = laid_out(cell, k, cfg)
    write_atomic(Path(specs_dir) / f"{spec.scenario_id}.json", json.dumps(spec_to_dict(spec), indent=1) + "\n")
    path = render_scenario(spec, Path(scenes_dir) / spec.scenario_id, quiet=True, force=cfg.force, layout=layout)
    scene_table(path)
    return spec.scenario_id, str(path)


def prepare_all(cfg: "GridConfig", out: Path, workers: int, progress: bool) -> dict[str, tuple[str, Path]]:
    """Every scenario of the grid through :func:`prepare_one`, on ``workers`` processes (spawned: each opens
    its own EGL context and loads the Numba kernels once for all its scenarios), or with ``cfg.engine`` ray one
    Ray task per scenario on the cluster at ``cfg.address`` (1 CPU each; every node sees ``out`` at the same
    path); scenario id -> (cell, scene.json), in id order."""
    import multiprocessing

    jobs = [(cell, k, cfg, str((out / "specs").resolve()), str((out / "scenes").resolve()))
            for cell, k in grid_cells(cfg.n)]
    done: dict[str, tuple[str, Path]] = {}
    with progress_bar(len(jobs), "scenarios (lay out, render, visibility)", enabled=progress) as bar, \
            ExitStack() as stack:
        if cfg.engine == "ray":
            results = _on_ray(jobs, cfg.address, workers)
        elif workers <= 1:
            results = ((job, prepare_one(*job)) for job in jobs)
        else:
            pool = stack.enter_context(ProcessPoolExecutor(max_workers=workers,
                                                           mp_context=multiprocessing.get_context("spawn")))
            futs = {pool.submit(prepare_one, *job): job for job in jobs}
            results = ((futs[f], f.result()) for f in as_completed(futs))
        for job, (sid, path) in results:
            done[sid] = (job[0], Path(path))
            bar.update(1)
    return dict(sorted(done.items()))


def _on_ray(jobs: list[tuple], address: str | None, local_cpus: int):
    """Yield (job, :func:`prepare_one`'s result) as each Ray task ends (``address``: HOST:PORT, ``local`` for
    a private instance of ``local_cpus`` CPUs, or None: ``$RAY_ADDRESS``, as vistest.batch.ray_engine); a
    task that raised raises here (bad input: the spec's SpecError)."""
    from ..batch.ray_engine import cluster_address, connect, import_ray

    ray = import_ray()
    connect(ray, cluster_address(address), local_cpus)
    try:
        remote = ray.remote(prepare_one).options(num_cpus=1, max_retries=2, retry_exceptions=False)
        refs = {remote.remote(*job): job for job in jobs}
        while refs:
            ready, _ = ray.wait(list(refs), num_returns=1)
            for ref in ready:
                job = refs.pop(ref)
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayTaskError as e:
                    cause = e.as_instanceof_cause()
                    raise (cause if isinstance(cause, InputError) else e) from None
                yield job, result
    finally:
        ray.shutdown()


def scene_table(path: Path):
    """(Scene, Visibility) of the scene at ``path`` (occlusion auto: the scene's mesh): its ``visibility.npz``
    beside scene.json while the key it keeps is the scene's (vistest.pipeline.visibility_key: scene.json's
    bytes, the mesh's, the occlusion mode) and its rules stamp is current (Visibility.load refuses a stale
    table: vistest.freshness), the rule ``vistest run`` reuses its own table by; else computed and saved."""
    import dataclasses

    from ..pipeline import visibility_key
    from ..scene import Scene
    from ..visibility.table import Visibility, choose_occlusion, compute_visibility

    path = Path(path)
    scene = Scene.load(path)
    npz = path.parent / "visibility.npz"
    occlusion = choose_occlusion(scene)[0]
    key = visibility_key(path, scene, occlusion)
    try:
        vis = Visibility.load(npz) if npz.is_file() else None
    except InputError:  # unreadable or stale: computed again
        vis = None
    if vis is None or vis.params.get("vistest_key") != key:
        vis = compute_visibility(scene, occlusion=occlusion)
        vis = dataclasses.replace(vis, params={**vis.params, "vistest_key": key})
        vis.save(npz)
    return scene, vis


def generate_cells(scenes: dict[str, tuple[str, Path]], seed: int, reports_dir: Path, workers: int,
                   progress: bool) -> dict[str, object]:
    """Each cell's questions (:func:`generate_cell`), the cells on ``workers`` processes (spawned; a process
    holds one cell's tables at a time: a cell's are dropped when it returns); cell -> its
    :class:`CellOutcome`."""
    import multiprocessing

    by_cell: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for sid, (cell, path) in scenes.items():
        by_cell[cell].append((sid, str(path)))
    jobs = [(cell, by_cell[cell], seed, str(reports_dir)) for cell in CELLS if cell in by_cell]
    reports = {}
    with progress_bar(len(jobs), "questions (per cell)", enabled=progress) as bar:
        if min(workers, len(jobs)) <= 1:
            for job in jobs:
                reports[job[0]] = generate_cell(*job)
                bar.update(1)
        else:
            with ProcessPoolExecutor(max_workers=min(workers, len(jobs)),
                                     mp_context=multiprocessing.get_context("spawn")) as pool:
                futs = {pool.submit(generate_cell, *job): job[0] for job in jobs}
                for f in as_completed(futs):
                    reports[futs[f]] = f.result()
                    bar.update(1)
    return {cell: reports[cell] for cell in CELLS if cell in reports}


def generate_cell(cell: str, scenes: list[tuple[str, str]], seed: int, reports_dir: str):
    """The questions of ``cell``'s task (vistest.synth.cells.CELL_TYPES) over its ``scenes`` ((id, scene.json))
    together, debiased as a set, each with its ``level`` (vistest.synth.cells.level_of); written to each
    scene's ``questions.jsonl``, the cell's report to ``reports_dir/{cell}/``; returns what the grid's report
    takes of it, plain data (:class:`CellOutcome`). The tables are each scene's visibility.npz
    (:func:`scene_table`), loaded here and dropped on return."""
    from ..generate import SceneInput, generate
    from ..generate.run import questions_jsonl

    inputs = [SceneInput(*scene_table(Path(path)), str(Path(path).parent / "visibility.npz")) for _, path in scenes]
    gen = generate(inputs, CELL_TYPES[cell], synth_rules(split_cell(cell)[0]), seed=seed, progress=False)
    for sid, path in scenes:
        records = [{**q, "level": level_of(q["question_type"])} for q in gen.questions.get(sid, ())]
        write_atomic(Path(path).parent / "questions.jsonl", questions_jsonl(records))
    write_atomic(Path(reports_dir) / cell / "report.md", gen.report.markdown())
    write_atomic(Path(reports_dir) / cell / "report.json", json.dumps(gen.report.to_dict(), indent=1) + "\n")
    attacks = None if gen.report.attacks is None else [
        {"attack": a.attack, "type": a.question_type, "n": a.n, "gap_points": round(100 * a.gap, 1),
         "judged": a.judged, "ok": a.ok} for a in gen.report.attacks.cells]
    return CellOutcome(tuple(gen.report.funnel), attacks)


@dataclass(frozen=True)
class CellOutcome:
    """What the grid's report takes of a cell's GenerateReport (which holds more than a process can send):
    its funnel (vistest.generate.report.Funnel per type) and its blind attacks (attack, type, n, score -
    chance in points, judged, within margin; None: none were run)."""

    funnel: tuple
    attacks: list[dict] | None


def run_config(cfg: GridConfig):
    """The batch's RunConfig: the grid's budgets and dummies, the synthetic scenarios' seen rule
    (vistest.synth.cells.SEEN_KIND), every other setting vistest run's default."""
    from ..budget.config import TruthConfig
    from ..budget.seen import seen_rule
    from ..budgets import parse_budgets
    from ..config import RunConfig
    from ..videos.config import DummyConfig

    dummy = DummyConfig(**{k: v for k, v in (("modes", cfg.dummy_modes), ("budgets", cfg.dummy_budgets))
                           if v is not None})
    truth = TruthConfig(budgets=tuple(parse_budgets(cfg.budgets, "--budgets")),
                        seen_threshold=seen_rule(None, SEEN_KIND))
    dummy.budgets_of(truth.budgets)  # --dummy-budgets among --budgets
    return RunConfig(truth=truth, dummy=dummy)


def run_batch_of(scenes: dict[str, tuple[str, Path]], run_dir: Path, cfg: GridConfig, progress: bool):
    """This grid's scenes (not other folders an earlier, larger grid left in OUT/scenes) through vistest
    batch (its engine, ``workers``), reusing each scene's visibility.npz."""
    from ..batch.local import LocalEngine, default_workers
    from ..batch.ray_engine import RayEngine
    from ..batch.run import run_batch
    from ..batch.specs import QUESTIONS_FILE, SceneSpec
    from ..batch.task import scene_memory_mb

    config = run_config(cfg)
    memory = scene_memory_mb(config.resources)
    if cfg.engine == "ray":
        engine = RayEngine(cfg.address, 2, 1, memory, in_flight=cfg.workers, local_cpus=cfg.workers)
    else:
        engine = LocalEngine(cfg.workers or default_workers(1, memory), 2)
    specs = [SceneSpec(sid, path.resolve(), path.resolve().parent / QUESTIONS_FILE)
             for sid, (_, path) in scenes.items()]
    return run_batch(specs, run_dir, config, engine, "visibility.npz", progress=progress)


def budget_statuses(run_dir: Path, scene_ids: list[str]) -> dict[str, Counter]:
    """budget label -> Counter of the rows' statuses over ``scene_ids`` (RUN_DIR/scenes/{id}/{n}_frame.jsonl)."""
    from ..layout import budget_of_file, scene_dir

    out: dict[str, Counter] = defaultdict(Counter)
    for sid in scene_ids:
        d = scene_dir(run_dir, sid)
        for f in sorted(d.glob("*_frame.jsonl")) if d.is_dir() else []:
            label = budget_of_file(f.name)
            for line in f.read_text().splitlines():
                if line.strip():
                    out[label][json.loads(line).get("status", "?")] += 1
    return dict(out)


# why a type finds no candidate in a cell's scenes (vistest.generate's rules, docs/generate.md)
NO_CANDIDATE = {
    "motion": "no mover seen (the silhouette rule) at both ends of a window, and in half its frames, over which it "
              "moved beyond the motion rules' thresholds (MotionRules)",
    "camera": "no window over which the camera moved or turned beyond the motion rules' thresholds (a fixed tripod "
              "does not move; a turn must stay under 180 - min_turn_deg)",
    "obj_appearance_order": "no labels, each unique and seen, whose first sightings are far enough apart (a camera "
                            "standing still sees its objects at once)",
    "room_size_estimation_single": "no room (walls) in the scene",
}


def _no_candidate(qtype: str) -> str:
    key = "motion" if qtype.startswith("motion_") else ("camera" if qtype.startswith("camera_") else qtype)
    return NO_CANDIDATE.get(key, "no candidate passes the type's rules (unique labels seen, the ambiguity "
                                 "thresholds: docs/generate.md)")


def missing_types(cell: str, report: CellOutcome, n_scenes: int) -> list[dict]:
    """Each type ``cell`` asks that the generator kept no question of over the cell's ``n_scenes`` scenes,
    with the reason its funnel gives (vistest.generate.report.Funnel): no candidate (why such a type finds
    none), none answerable at the budgets checked, or all removed by the balancing (its steps)."""
    funnel = {f.question_type: f for f in report.funnel}
    out = []
    for t in CELL_TYPES[cell]:
        f = funnel.get(t)
        if f is not None and f.final > 0:
            continue
        if f is None or f.found == 0:
            why = f"no candidate in {n_scenes} scene(s): {_no_candidate(t)}"
        elif f.answerable == 0:
            why = f"{f.found} candidate(s), none answerable at the budgets checked (answerable_at)"
        else:
            steps = ", ".join(f"{s} {n}" for s, n in f.removed if n) or "balancing"
            why = f"{f.answerable} answerable, all removed by the set's balancing ({steps})"
        out.append({"type": t, "reason": why})
    return out


def cell_rows(scenes: dict[str, tuple[str, Path]], reports: dict, run_dir: Path | None) -> dict[str, dict]:
    """The per-cell report's data (module docstring): cell -> scenarios, questions per type, statuses per
    budget, blind attacks (attack, type, n, score - chance in points, judged, within margin)."""
    out = {}
    for cell in CELLS:
        sids = [sid for sid, (c, _) in scenes.items() if c == cell]
        if not sids:
            continue
        per_type: Counter = Counter()
        per_level: Counter = Counter()
        for sid in sids:
            for line in (scenes[sid][1].parent / "questions.jsonl").read_text().splitlines():
                if line.strip():
                    q = json.loads(line)
                    per_type[q["question_type"]] += 1
                    per_level[q["level"]] += 1
        rep = reports.get(cell)
        attacks = rep.attacks or [] if rep is not None else []
        vgenst, dedicated = CELL_TASKS[cell]
        out[cell] = {"scenarios": len(sids), "questions": dict(sorted(per_type.items())),
                     "levels": {lv: per_level.get(lv, 0) for lv in LEVEL_NAMES},
                     "per_scenario": round(sum(per_type.values()) / len(sids), 2),
                     "dedicated": {"vgenst_task": vgenst, "type": dedicated, "questions": per_type.get(dedicated, 0)},
                     "not_generated": missing_types(cell, rep, len(sids)) if rep is not None else [],
                     "budget_statuses": ({b: dict(sorted(c.items())) for b, c in
                                          sorted(budget_statuses(run_dir, sids).items())} if run_dir else {}),
                     "blind_attacks": attacks}
    return out


def report_markdown(rows: dict[str, dict], cfg: GridConfig, notes: list[str]) -> str:
    """The per-cell report as markdown: a paragraph, the table, each cell's task, the notes."""
    w, h = cfg.resolution
    head = (f"# vistest synth --grid {cfg.n}\n\n{sum(r['scenarios'] for r in rows.values())} scenarios over "
            f"{len(rows)} cells, {cfg.frames} frames of {w}x{h} at {cfg.fps:g} fps, seed {cfg.seed}.")
    table = ["| cell | scenarios | questions | a scenario | L1 / L2 / L3 | dedicated task (its questions) | per type "
             "| statuses per budget (kept/changed/unanswerable) "
             "| blind attacks: beyond their margin / judged; the largest gap over chance (points) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for cell, r in rows.items():
        types = ", ".join(f"{t} {n}" for t, n in r["questions"].items()) or "-"
        st = "; ".join(f"{b}: {c.get('kept', 0)}/{c.get('changed', 0)}/{c.get('unanswerable', 0)}"
                       for b, c in r["budget_statuses"].items()) or "-"
        judged = [a for a in r["blind_attacks"] if a["judged"]]
        worst = max(r["blind_attacks"], key=lambda a: a["gap_points"], default=None)
        att = f"{sum(not a['ok'] for a in judged)} / {len(judged)}"
        if worst is not None:
            att += (f"; {worst['attack']} on {worst['type']}: {worst['gap_points']:+.1f} (n {worst['n']}"
                    f"{'' if worst['judged'] else ', too few to judge'})")
        lv = " / ".join(str(r["levels"][k]) for k in LEVEL_NAMES)
        ded = r["dedicated"]
        table.append(f"| {cell} | {r['scenarios']} | {sum(r['questions'].values())} | {r['per_scenario']:g} | {lv} "
                     f"| {ded['type']} ({ded['questions']}) | {types} | {st} | {att} |")
    parts = [head, "\n".join(table),
             "Levels: " + "; ".join(f"{k} {v}" for k, v in LEVEL_NAMES.items()) + ". Each cell's dedicated task: "
             + "; ".join(f"{c}: {CELL_TASKS[c][1]}" + (f" (VGenST: {CELL_TASKS[c][0]})" if CELL_TASKS[c][0] else "")
                         for c in rows) + ".",
             "Each cell's types: " + "; ".join(f"{c}: {', '.join(CELL_TYPES[c])}" for c in rows) + ".",
             "Per cell: reports/{cell}/report.md (the generator's pools, debiasing and every blind attack)."]
    missing = [f"{cell}: {m['type']}: {m['reason']}" for cell, r in rows.items() for m in r["not_generated"]]
    if missing:
        parts.append("## Types a cell asks and did not generate\n\n" + "\n".join(f"- {m}" for m in missing))
    if notes:
        parts.append("## Notes\n\n" + "\n".join(f"- {n}" for n in notes))
    return "\n\n".join(parts) + "\n"


def run_grid(cfg: GridConfig, outdir: str | os.PathLike, progress: bool = True) -> str:
    """The whole benchmark (module docstring); returns the report's markdown."""
    import time

    cfg.check()
    clock, timing = time.perf_counter(), {}

    def lap(step: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timing[step] = round(now - clock, 2)
        clock = now

    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    workers = cfg.workers or os.cpu_count() or 1
    scenes = prepare_all(cfg, out, min(workers, cfg.n), progress)
    lap("render")  # laid out, rendered and the visibility tables, per scenario
    reports = generate_cells(scenes, cfg.seed, out / "reports", workers if cfg.engine == "local" else
                             os.cpu_count() or 1, progress)
    lap("generate")
    notes = []
    batch = run_batch_of(scenes, out / "run", cfg, progress)
    lap("batch")
    if batch.failed:
        notes.append(f"{len(batch.failed)} scene(s) failed in the batch: {out / 'run' / 'failed.jsonl'}")
    if cfg.export:
        from ..eval.exporters import ExportOptions, export

        for fmt in EXPORTS:
            res = export(fmt, out / "run", out / "export" / fmt, ExportOptions(progress=progress, protocol=PROTOCOL))
            notes += [f"export {fmt}: {w}" for w in res.warnings]
        lap("export")
    rows = cell_rows(scenes, reports, out / "run")
    text = report_markdown(rows, cfg, notes)
    write_atomic(out / "report.json", json.dumps({"cells": rows, "notes": notes, "seconds": timing}, indent=1) + "\n")
    write_atomic(out / "report.md", text)
    return text
