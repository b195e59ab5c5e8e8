"""Commands of what comes in: ``demo-scene`` (vistest.synth.demo and its siblings), ``import`` (every
importer of vistest.datasets.registry, run by its kind's handler, :data:`IMPORTS`) and ``audit``
(vistest.audit; docs/adapters.md, docs/audit.md)."""
from __future__ import annotations

import click

from ..errors import InputError
from .options import key_value_option, output_option, quiet_option


@click.command("demo-scene")
@click.argument("outdir", type=click.Path(file_okay=False))
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--frames", "num_frames", type=int, default=300, show_default=True)
@click.option("--size", default="640x480", show_default=True, help="WxH of the rendered video.")
@click.option("--force", is_flag=True, help="Render again even if OUTDIR holds this demo already.")
@click.option("--dynamic", is_flag=True, help="The dynamic demo: a cart crossing the room and a ball rolling "
                                              "(moving objects with tracks; vistest.synth.demo_dynamic).")
@click.option("--perception-test", "perception_test", type=click.Path(file_okay=False), default=None,
              help="Also write the demo's objects as 2D tracks in Perception Test's layout into this folder "
                   "(annotations.json with boxes projected from the 3D boxes at 1 frame/s, grounded questions, "
                   "the video; input of 'vistest import perception-test'; docs/tracks2d.md).")
@quiet_option()
def demo_scene(outdir, seed, num_frames, size, force, dynamic, perception_test, quiet):
    """Synthesise the demo scene (room, boxes, camera walk, video.mp4, scene.json) into OUTDIR."""
    from ..synth.demo import make_demo_scene
    from ..synth.demo_dynamic import make_dynamic_demo_scene

    try:
        w, h = (int(x) for x in size.lower().split("x"))
    except ValueError:
        raise InputError(f"--size: expected WxH such as 640x480, got {size!r}") from None
    make = make_dynamic_demo_scene if dynamic else make_demo_scene
    scene_json = make(outdir, seed=seed, num_frames=num_frames, size=(w, h), quiet=quiet, force=force)
    if perception_test is not None:
        from ..synth.demo_tracks2d import perception_test_layout

        ann = perception_test_layout(scene_json, perception_test)
        if not quiet:
            click.echo(f"Perception Test layout: {ann} (vistest import perception-test {ann} -o SCENE_DIR)", err=True)
    click.echo(str(scene_json))


# what `vistest import --help` says of each kind of importer (vistest.datasets.registry.KINDS), and what it writes
KIND_HEADINGS = {
    "scene": "Datasets (OUTPUT/scene.json, provenance.json; options: -O KEY=VALUE; see docs/adapters.md)",
    "tracks2d": "2D object tracks (OUTPUT/scene.json as vistest.tracks2d/1, questions.jsonl; docs/tracks2d.md)",
    "question-set": "Question sets (OUTPUT/questions.jsonl, by_scene/, import_report.json)",
    "question-rows": "VSI-Bench / ReVSI question rows, objects resolved against --scenes (OUTPUT/questions.jsonl, "
                     "by_scene/, import_report.json)",
}
KIND_NOUNS = {"scene": "a dataset", "tracks2d": "2D object tracks", "question-set": "a question set",
              "question-rows": "question rows"}


def _import_epilog() -> str:
    from ..datasets import importers
    from ..datasets.registry import KIND_OPTIONS, KINDS

    parts = []
    for kind in KINDS:
        lines = [KIND_HEADINGS[kind] + ":"]
        for i in importers(kind):
            lines.append(f"  {i.name}: {i.title}; PATH = {i.path_help}")
            if "-O" in KIND_OPTIONS[kind]:
                lines.append(f"    options: {', '.join(i.option_names()) or '-'}")
        parts.append("\b\n" + "\n".join(lines))
    return "\n".join(parts)


@click.command("import", epilog=_import_epilog())
@click.argument("dataset")
@click.argument("path", type=click.Path())
@output_option("Scene folder to write (scene.json, provenance.json).", folder=True)
@click.option("--boxes", default=None,
              help="native (default), none, or KIND:PATH such as vsibench:scannet_meta_info_val.json.")
@click.option("--frames", default=None, help="For a box-only DATASET (vsibench): KIND:PATH of the frames.")
@click.option("--video", default=None, type=click.Path(dir_okay=False), help="Video the frame indices refer to.")
@click.option("--video-from-frames", is_flag=True,
              help="Encode the scan's colour frames (ScanNet color/*.jpg, ARKitScenes lowres_wide, ScanNet++ "
                   "iphone/rgb, 3RScan sequence, EmbodiedScan posed images) into OUTPUT/video.mp4, decoded frame "
                   "n = frame index n = the source frame number; gaps repeat the previous image "
                   "(docs/adapters.md).")
@click.option("--allow-frame-gaps", is_flag=True,
              help="With --video-from-frames: encode gaps of more than 10 s without images too (held frames; "
                   "refused by default: a stray image far past the others).")
@key_value_option("Adapter option KEY=VALUE (repeatable).")
@click.option("--scenes", "scenes", multiple=True, type=click.Path(exists=True),
              help="vsibench-questions / revsi-questions: the imported scenes the rows are about (a scene.json, a "
                   "scene folder or a folder of scene folders; repeatable); each object the text names is looked "
                   "up among their labels.")
@click.option("--scene-id", "scene_id", default=None,
              help="vsibench-questions / revsi-questions: the scene id of a row, from {scene_name} (the row's "
                   "scene_name or scene_id) and {dataset} (default: {scene_name}).")
@click.option("--skip-refused", is_flag=True,
              help="vsibench-questions / revsi-questions: import the rows that resolve and write the others to "
                   "OUTPUT/refused.jsonl with the reason (default: a refused row stops the import, exit status 2).")
@quiet_option("No progress bar and no summary.")
def import_cmd(dataset, path, output, boxes, frames, video, video_from_frames, allow_frame_gaps, options, scenes,
               scene_id, skip_refused, quiet):
    """Read PATH in DATASET's native layout; write OUTPUT/scene.json in the canonical conventions
    (a question set, sti-bench or resti: OUTPUT/questions.jsonl; 2D object tracks, perception-test, mot,
    tao, youtube-vis or bdd100k: OUTPUT/scene.json as a 2D scene, and OUTPUT/questions.jsonl where it has questions)."""
    from ..datasets import get_importer
    from ..datasets.registry import KIND_OPTIONS

    importer = get_importer(dataset)
    values = {"--boxes": boxes, "--frames": frames, "--video": video, "--video-from-frames": video_from_frames,
              "--allow-frame-gaps": allow_frame_gaps, "-O": options, "--scenes": scenes, "--scene-id": scene_id,
              "--skip-refused": skip_refused}
    takes = KIND_OPTIONS[importer.kind]
    given = [n for n, v in values.items() if v and n not in takes]
    if given:
        raise InputError(f"{', '.join(given)}: {dataset} ({KIND_NOUNS[importer.kind]}) takes "
                         f"{', '.join(takes) + ' only' if takes else 'PATH and -o only'}")
    IMPORTS[importer.kind](dataset, path, output, values, quiet)


def _import_scene(dataset: str, path: str, output: str, values: dict, quiet: bool) -> None:
    """``vistest import DATASET PATH -o OUTPUT`` for a dataset's scan (vistest.datasets.import_scene)."""
    import json
    from pathlib import Path

    from ..datasets import import_scene
    from ..scene import Scene

    video_from_frames = values["--video-from-frames"]
    scene_path = import_scene(dataset, path, output, boxes=values["--boxes"], frames=values["--frames"],
                              video=values["--video"], options=values["-O"], progress=not quiet,
                              video_from_frames=video_from_frames, allow_frame_gaps=values["--allow-frame-gaps"])
    scene = Scene.load(scene_path)
    if video_from_frames:
        record = json.loads((Path(scene_path).parent / "provenance.json").read_text())["video_from_frames"]
        if record.get("warning"):
            click.echo(f"Warning: {record['warning']}", err=True)
        if not quiet:
            click.echo(f"{record['video']}: {record['decoded_frames']} frames from {record['images']} images "
                       f"({sum(b - a + 1 for a, b in record['held'])} repeat the previous image, "
                       f"{sum(b - a + 1 for a, b in record['black'])} black before the first)", err=True)
    if not quiet:
        n_valid = sum(f.valid for f in scene.frames)
        click.echo(f"{scene.scene_id}: {len(scene.frames)} frames ({n_valid} valid), {len(scene.objects)} objects "
                   f"-> {scene_path} (check it: vistest audit {scene_path})", err=True)
    click.echo(str(scene_path))


def _import_tracks(name: str, path: str, output: str, values: dict, quiet: bool) -> None:
    """``vistest import perception-test|mot|tao|youtube-vis|bdd100k PATH -o OUTPUT``
    (vistest.datasets.tracks2d_import)."""
    from ..datasets.tracks2d_import import import_tracks

    scene_path, imported = import_tracks(name, path, output, video=values["--video"], options=values["-O"])
    for w in imported.warnings:
        click.echo(f"Warning: {w}", err=True)
    if not quiet:
        doc = imported.scene
        n_regions = sum(len(o["regions"]) for o in doc["objects"])
        click.echo(f"{doc['scene_id']}: {doc['num_frames']} frames ({len(doc['annotated_frames'])} annotated), "
                   f"{len(doc['objects'])} objects, {n_regions} regions, {len(imported.questions)} questions -> "
                   f"{scene_path}", err=True)
    click.echo(str(scene_path))


def _import_questions(layout: str, path: str, output: str, values: dict, quiet: bool) -> None:
    """``vistest import sti-bench|resti PATH -o OUTPUT`` (vistest.datasets.sti_bench)."""
    from ..datasets import get_importer
    from ..datasets.sti_bench import write_question_set

    imported = get_importer(layout).read(path)
    out = write_question_set(imported, output)
    for w in imported.warnings:
        click.echo(f"Warning: {w}", err=True)
    if not quiet:
        rep = imported.report()
        click.echo(f"{rep['questions']} questions over {rep['scenes']} videos: "
                   + ", ".join(f"{t} {n}" for t, n in rep["per_task"].items()), err=True)
    click.echo(str(out))


def _import_rows(layout: str, path: str, output: str, values: dict, quiet: bool) -> None:
    """``vistest import vsibench-questions|revsi-questions PATH --scenes DIR -o OUTPUT``
    (vistest.datasets.vsibench_questions)."""
    from ..datasets.sti_bench import write_question_set
    from ..datasets import get_importer
    from ..datasets.vsibench_questions import DEFAULT_SCENE_ID, find_scenes, refusal_error, write_refused

    scenes, scene_id, skip_refused = values["--scenes"], values["--scene-id"], values["--skip-refused"]
    if not scenes:
        raise InputError(f"--scenes: {layout} needs the imported scenes the rows are about (their labels resolve "
                         f"the objects the questions name)")
    found = find_scenes(list(scenes))
    imported = get_importer(layout).read(path, found, scene_id or DEFAULT_SCENE_ID)
    if imported.refused and not skip_refused:
        raise refusal_error(imported)
    if not imported.questions:
        raise InputError(f"{path}: no row could be imported ({len(imported.refused)} refused; first: "
                         f"{imported.refused[0].message()})")
    out = write_question_set(imported, output)
    from pathlib import Path

    stale = Path(output) / "refused.jsonl"
    if not imported.refused and stale.exists():  # a previous run's refusals no longer hold
        stale.unlink()
    if imported.refused:
        click.echo(f"Warning: {imported.warnings[0]}; the refused rows and why: {write_refused(imported, output)}",
                   err=True)
    if not quiet:
        rep = imported.report()
        click.echo(f"{rep['questions']} questions over {rep['scenes']} scenes: "
                   + ", ".join(f"{t} {n}" for t, n in rep["per_type"].items()), err=True)
    click.echo(str(out))


# the command's handler per kind of importer (vistest.datasets.registry.KINDS)
IMPORTS = {"scene": _import_scene, "tracks2d": _import_tracks, "question-set": _import_questions,
           "question-rows": _import_rows}


@click.command("audit")
@click.argument("scene_json", type=click.Path())
@click.option("--alignment", "alignments", multiple=True, type=click.Path(dir_okay=False),
              help="Candidate alignment to test: ScanNet sceneXXXX_XX.txt, provenance.json, JSON 4x4 (repeatable).")
@click.option("--no-provenance", is_flag=True, help="Ignore the alignments in provenance.json beside the scene.")
@click.option("--evidence", type=click.Choice(["auto", "depth", "mesh"]), default="auto", show_default=True,
              help="What to check against (auto: depth frames, and the mesh with its colours against the frames, "
                   "whichever exist).")
@click.option("--max-frames", type=click.IntRange(1), default=60, show_default=True,
              help="Frames audited (evenly spaced).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the report as JSON.")
@click.option("--objects", is_flag=True, help="Also print the per-object table (with --questions: the per-row table).")
@click.option("--questions", "questions", type=click.Path(dir_okay=False), default=None,
              help="Audit this question file's answers instead: static answers (size, distance, room size, "
                   "relative distance/direction, counting, appearance order) recomputed from the scene, and 3D "
                   "answers (camera-frame centres at an instant: time + answer_center or a keyed '(x, y, z)' "
                   "option) back-projected; docs/audit.md, answer audit.")
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False), default=None,
              help="With --questions: also write the report as markdown.")
@quiet_option("No progress bar and no report: the exit status only.")
def audit_cmd(scene_json, alignments, no_provenance, evidence, max_frames, json_path, objects, questions,
              markdown_path, quiet):
    """Check that SCENE_JSON's boxes, poses and intrinsics agree with its depth/mesh, and which
    convention fix fits best; with --questions, that a question file's static answers agree with the scene
    and its 3D answers land on its objects (which convention error explains them). With --questions,
    SCENE_JSON may be a folder of scene folders: the static answers of each scene's rows (by scene_id),
    one report over them all. Exit status 0 = pass, 1 = fails (docs/audit.md), 2 = bad input."""
    from pathlib import Path

    from ..audit.scene import CheckParams, audit_scene, load_alignments, provenance_alignments, write_report
    from ..scene import Scene

    if Path(scene_json).is_dir() and not (Path(scene_json) / "scene.json").is_file():
        if questions is None:
            raise InputError(f"{scene_json}: a folder: expected a scene.json (a folder of scenes goes with "
                             f"--questions)")
        if alignments:
            raise click.UsageError("--alignment goes with the scene audit of one scene")
        if not _audit_question_set(scene_json, questions, json_path, markdown_path, objects, quiet):
            click.get_current_context().exit(1)
        return
    if Path(scene_json).is_dir():
        scene_json = str(Path(scene_json) / "scene.json")
    scene = Scene.load(scene_json)
    scene.require_3d("vistest audit")
    if questions is not None:
        if alignments:
            raise click.UsageError("--alignment goes with the scene audit; the answer audit (--questions) uses the "
                                   "scene's boxes_to_world")
        if not _audit_questions(scene, questions, json_path, markdown_path, objects, quiet):
            click.get_current_context().exit(1)
        return
    if markdown_path is not None:
        raise click.UsageError("--markdown goes with --questions (the scene audit writes --json)")
    cands = [] if no_provenance else provenance_alignments(scene_json)
    for a in alignments:
        cands += load_alignments(a)
    report = audit_scene(scene, alignments=cands, use_depth=evidence in ("auto", "depth"),
                         use_mesh=evidence in ("auto", "mesh"), params=CheckParams(max_frames=max_frames),
                         progress=not quiet)
    if json_path:
        write_report(report, json_path)
    if not quiet:
        click.echo(report.text(per_object=objects), nl=False)
    if not report.passed:
        click.get_current_context().exit(1)


def _audit_question_set(folder: str, questions: str, json_path: str | None, markdown_path: str | None,
                        per_row: bool, quiet: bool) -> bool:
    """``vistest audit FOLDER --questions Q``: the static answers of Q's rows on each scene of FOLDER
    (``*/scene.json``) that has rows (vistest.audit.answers.audit_static_set). Returns whether all pass."""
    import json
    from pathlib import Path

    from ..atomic import write_atomic
    from ..audit.answers import audit_static_set

    paths = sorted(Path(folder).glob("*/scene.json"))
    if not paths:
        raise InputError(f"{folder}: no scene folder in it (expected FOLDER/*/scene.json)")

    def progress(i: int, n: int, sid: str) -> None:
        if not quiet:
            click.echo(f"vistest audit: scene {i + 1} of {n}: {sid}", err=True)

    result = audit_static_set(paths, questions, progress=progress)
    text = result.markdown(per_row)
    if json_path is not None:
        write_atomic(json_path, json.dumps(result.to_dict(), indent=1, default=str) + "\n")
    if markdown_path is not None:
        write_atomic(markdown_path, text)
    if not quiet:
        click.echo(text, nl=False)
    return result.passed


def _audit_questions(scene, questions: str, json_path: str | None, markdown_path: str | None, per_row: bool,
                     quiet: bool) -> bool:
    """``vistest audit --questions``: the static answers recomputed from the scene, and the 3D
    (grounding) answers back-projected, each where the file has rows for it (docs/audit.md).
    The JSON: the grounding report (with the static one under ``static`` when it checked a row), or the
    static one alone.
    Returns whether both pass."""
    import json

    from ..atomic import write_atomic
    from ..audit.answers import audit_answers, audit_static, read_answer_rows
    from ..errors import InputError

    static = audit_static(scene, questions)
    grounding, skipped = read_answer_rows(questions, scene.scene_id)
    if not grounding and not static.checked:
        reasons = sorted({r.why for r in static.rows} | {why for _, why in skipped})
        raise InputError(f"{questions}: no row to audit: expected static questions (size, distance, room size, "
                         f"relative distance and direction, counting, appearance order) or rows with time (seconds) "
                         f"and a 3D answer, for scene {scene.scene_id} ({len(static.rows)} rows of this scene: "
                         f"{'; '.join(reasons) or '-'})")
    answers = audit_answers(scene, questions) if grounding else None
    doc = (static.to_dict() if answers is None else
           {**answers.to_dict(), **({"static": static.to_dict()} if static.checked else {})})
    text = "".join(([answers.markdown(per_row)] if answers is not None else [])
                   + ([static.markdown(per_row)] if static.checked else []))
    if json_path is not None:
        write_atomic(json_path, json.dumps(doc, indent=1, default=str) + "\n")
    if markdown_path is not None:
        write_atomic(markdown_path, text)
    if not quiet:
        click.echo(text, nl=False)
    return static.passed and (answers is None or answers.passed)
