"""Evaluation: score a model's answers on a vistest run, and export the run to evaluators.

Modules, each importing only those listed before it (no cycle):

* ``answers``   lmms-eval's answer rules (parses, MRA, protocols, row score, subscores) and
                vistest's (response classes, abstention, "None of these", open answers, the
                stress metrics); standard library only, embedded verbatim in the exported
                lmms-eval task
* ``records``   Prediction; reading a run folder's ground truth (vistest.budget.rows.TruthRow) and predictions
* ``metrics``   predictions joined to truths and scored; the cells of the report
* ``tables``    report tables as data, rendered as text or Markdown
* ``baselines`` blind baselines held out by scene, and the option-rank attack
* ``learned``   the learned blind model, bias pruning (``vistest baseline``)
* ``report``    the score report: build, render, write, plot (``vistest score``)
* ``exporters`` one module per export format (``vistest export``)

docs/scoring.md and docs/export.md describe the commands and their files.
"""
