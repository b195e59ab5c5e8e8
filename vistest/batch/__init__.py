"""Batch: many scenes, each one task through the whole pipeline, on a process pool or Ray.

``vistest batch SCENES -o RUN_DIR [vistest run's options] [--engine local|ray]`` (docs/batch.md):

* :mod:`.specs`: which scenes (a folder of scene folders, or a list file);
* :mod:`.task`: one scene as one task (:func:`~.task.run_task`: vistest.pipeline.run_scene
  with ``vistest run``'s options), its options and outcome;
* :mod:`.state`: a finished scene's fragment and :func:`~.state.complete`, the one rule
  deciding whether a rerun skips a scene;
* :mod:`.claims`: which task works on a scene; a lost attempt's count and leftovers;
* :mod:`.failures`: input / error / infrastructure, which is retried, ``failed.jsonl``;
* :mod:`.local`, :mod:`.ray_engine`: the engines (worker processes; Ray tasks);
* :mod:`.merge`: the one writer of ``manifest.jsonl``, ``failed.jsonl`` and ``index.html``;
* :mod:`.run`: the driver (:func:`~.run.run_batch`) and its summary table.
"""
