"""SceneJob: one scene's run, the one way in for ``vistest run``, ``vistest videos``,
``vistest batch`` (vistest.batch.task) and ``make variants`` (bin/vistest-scene).

A job is its inputs (scene.json, questions file, optionally a precomputed visibility table)
and a vistest.config.RunConfig. :meth:`SceneJob.load` reads and validates the inputs and
resolves ``occlusion="auto"`` (the one place for both); :meth:`SceneJob.run` runs the pipeline
(vistest.pipeline.run_scene) into a run folder, which writes the scene's record
(vistest.videos.manifest: every output, every input, the options' key, the manifest lines);
:meth:`SceneJob.status` reads that record back: the scene is *current* when every output is
there as written, every input unchanged and the options (RunConfig.key: resources never count,
the questions' content, given or computed visibility) and the rules versions
(vistest.freshness.stamp("scene record")) the same. That record is the only "is it
done" rule: ``vistest batch`` skips a current scene and merges the manifest lines its record
keeps, ``vistest run --if-stale`` (make) does nothing for one, and videos whose content keys
match are kept by every run (vistest.videos.write).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .config import RunConfig
from .errors import InputError
from .jsonl import parse_json, read_text
from .pipeline import SceneResult, record_options, run_scene
from .questions import Question, load_questions
from .scene import Scene, check_scene_id
from .videos.manifest import SceneStatus, check_scene
from .visibility.table import Visibility


@dataclass(frozen=True)
class LoadedJob:
    """A job's inputs read and validated: the scene, its questions, the given visibility table
    (None: computed), the config with ``occlusion`` resolved when visibility is computed, and
    why that mode (None when given)."""

    scene: Scene
    questions: tuple[Question, ...]
    visibility: Visibility | None
    config: RunConfig
    occlusion_reason: str | None


@dataclass(frozen=True)
class SceneJob:
    """One scene's run (module docstring). ``visibility``: a precomputed table (None: computed
    with ``config.occlusion``)."""

    scene_json: Path
    questions: Path
    config: RunConfig = RunConfig()
    visibility: Path | None = None

    def scene_id(self) -> str:
        """scene.json's ``scene_id``, read without validating the rest (cheap)."""
        doc = parse_json(read_text(self.scene_json, InputError, "scene file"), str(self.scene_json), InputError)
        return check_scene_id(doc.get("scene_id") if isinstance(doc, dict) else None, str(self.scene_json))

    def load(self, scene: Scene | None = None, stage: Callable[[str], None] | None = None) -> LoadedJob:
        """Read and validate the inputs (``scene``: already loaded); resolve ``auto`` occlusion
        for a computed table. ``stage``: called with "questions" before the questions are read and
        "video" before a given visibility table (vistest.pipeline.STAGES)."""
        scene = scene if scene is not None else Scene.load(self.scene_json)
        if stage is not None:
            stage("questions")
        questions = load_questions(self.questions, scene=scene)
        if self.visibility is not None:
            if stage is not None:
                stage("video")
            return LoadedJob(scene, questions, Visibility.load(self.visibility), self.config, None)
        config, why = self.config.resolved(scene)
        return LoadedJob(scene, questions, None, config, why)

    def status(self, outdir: str | os.PathLike, verify: bool = False) -> SceneStatus:
        """Whether :meth:`run` into ``outdir`` would find everything done, from the scene's record
        (vistest.videos.manifest.check_scene): every output as written (sizes always; sha256 when
        a modification time changed, or with ``verify``), the same scene.json, questions file,
        video, visibility table and occlusion files (unchanged), and the same options
        (:func:`vistest.pipeline.record_options`). Cheap: reads scene.json's ``scene_id`` (the
        whole scene only to resolve ``auto`` occlusion), the questions (to key their content),
        then one ``stat`` per file."""
        config = self.config
        if self.visibility is None and config.occlusion == "auto":
            scene = Scene.load(self.scene_json)
            config, _ = config.resolved(scene)
            sid = scene.scene_id
        else:
            sid = self.scene_id()
        options = record_options(config, load_questions(self.questions), self.visibility is not None)
        inputs = {"scene": self.scene_json, "questions": self.questions}
        if self.visibility is not None:
            inputs["visibility"] = self.visibility
        return check_scene(outdir, sid, inputs, options, verify)

    def run(self, outdir: str | os.PathLike, *, loaded: LoadedJob | None = None, progress: bool = True,
            spool_dir: str | os.PathLike | None = None, verify: bool = False, wait: bool = True,
            on_wait: Callable[[str], None] | None = None, manifest: bool = True,
            stage: Callable[[str], None] | None = None) -> SceneResult:
        """Run the scene into ``outdir`` (vistest.pipeline.run_scene; ``loaded``: :meth:`load`'s
        result, else loaded here). Sets ``VISTEST_FFMPEG`` from ``config.resources.ffmpeg`` and,
        with ``config.resources.cpus``, ``NUMBA_NUM_THREADS`` (the visibility child's threads)."""
        res = self.config.resources
        if res.ffmpeg:
            os.environ["VISTEST_FFMPEG"] = str(Path(res.ffmpeg).resolve())
        if res.cpus:
            os.environ["NUMBA_NUM_THREADS"] = str(res.cpus)
        if loaded is None:
            if stage is not None:
                stage("scene")
            loaded = self.load(stage=stage)
        return run_scene(self.scene_json, loaded.questions, outdir, loaded.config, visibility=loaded.visibility,
                         visibility_path=self.visibility, progress=progress, scene=loaded.scene,
                         questions_path=self.questions, spool_dir=spool_dir, verify=verify, wait=wait,
                         on_wait=on_wait, manifest=manifest, stage=stage)
