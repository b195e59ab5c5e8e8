"""Batch: many scenes, each one task through the whole pipeline, on a process pool or Ray.

``vistest batch SCENES -o RUN_DIR [vistest run's options] [--engine local|ray]`` (docs/batch.md):

* :mod:`.specs`: which scenes (a folder of scene folders, or a list file);
* :mod:`.task`: one scene as one task (:func:`~.task.run_task`: the scene's vistest.job.SceneJob
  with ``vistest run``'s RunConfig) and its outcome; a rerun skips a scene whose record says it
  is current (SceneJob.status, the one rule, :func:`~.run.current_lines`);
* :mod:`.claims`: which task works on a scene; a lost attempt's count and leftovers;
* :mod:`.failures`: input / error / infrastructure, which is retried, ``failed.jsonl``;
* :mod:`.local`, :mod:`.ray_engine`: the engines (worker processes; Ray tasks);
* :mod:`.merge`: the one writer of ``manifest.jsonl``, ``failed.jsonl`` and ``index.html``;
* :mod:`.run`: the driver (:func:`~.run.run_batch`) and its summary table.
"""
