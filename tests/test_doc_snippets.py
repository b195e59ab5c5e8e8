"""Every ```python snippet of README.md and docs/*.md runs (found afresh on every run).

Convention (README.md, "Documentation"): a snippet runs in a fresh namespace, in an empty
working folder where

* ``out/demo`` is the demo scene, as ``vistest demo-scene out/demo`` writes it (here 160x120,
  48 frames, to stay quick);
* ``out/run`` is ``vistest run out/demo/scene.json examples/demo-questions.jsonl -o out/run``
  (made only when a snippet names it);
* ``examples/`` is the repository's.

A snippet that shows another tool's code (reading vistest's output with pandas on an
evaluator's file, say) carries ``<!-- snippet: not run: REASON -->`` on the line before its
fence; it must still compile.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
NOT_RUN = re.compile(r"<!--\s*snippet:\s*not run:\s*(\S.*?)\s*-->")


def snippets() -> list:
    out = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            reason = NOT_RUN.search(before)
            out.append(pytest.param(path.relative_to(ROOT), line, m.group(1), reason.group(1) if reason else None,
                                    id=f"{path.name}:{line}"))
    return out


SNIPPETS = snippets()


def test_the_docs_have_python_snippets():
    assert len(SNIPPETS) >= 3  # the discovery itself works (README.md and docs/*.md)


@pytest.fixture(scope="session")
def doc_demo(tmp_path_factory) -> Path:
    from vistest.synth.demo import make_demo_scene

    root = tmp_path_factory.mktemp("doc-demo") / "demo"
    make_demo_scene(root, num_frames=48, size=(160, 120), quiet=True)
    return root


@pytest.fixture(scope="session")
def doc_run(doc_demo, tmp_path_factory) -> Path:
    from click.testing import CliRunner

    from vistest.cli import main

    out = tmp_path_factory.mktemp("doc-run") / "run"
    questions = ROOT / "examples" / "demo-questions.jsonl"
    res = CliRunner().invoke(main, ["run", str(doc_demo / "scene.json"), str(questions), "-o", str(out),
                                    "--budgets", "16,all", "--preset", "ultrafast", "--quiet"])
    assert res.exit_code == 0, res.output
    return out


@pytest.mark.parametrize("path, line, code, not_run", SNIPPETS)
def test_snippet_runs(path, line, code, not_run, request, tmp_path, monkeypatch):
    compiled = compile(code, f"{path}:{line}", "exec")
    if not_run is not None:
        return  # another tool's code: it compiles, and says why it is not run
    (tmp_path / "out").mkdir()
    os.symlink(ROOT / "examples", tmp_path / "examples")
    if "out/demo" in code or "out/run" in code:
        os.symlink(request.getfixturevalue("doc_demo"), tmp_path / "out" / "demo")
    if "out/run" in code:
        os.symlink(request.getfixturevalue("doc_run"), tmp_path / "out" / "run")
    monkeypatch.chdir(tmp_path)
    exec(compiled, {"__name__": "__snippet__"})
