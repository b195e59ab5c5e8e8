"""The one registry of importers (vistest.datasets.registry, issue #46): every name `vistest import`
takes, checked against the names docs/adapters.md and docs/tracks2d.md document; the options each kind
takes, refused for the others before anything is read."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from vistest import datasets
from vistest.cli import main
from vistest.datasets.registry import KIND_OPTIONS, KINDS, Importer, Option, register

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _documented() -> dict[str, set[str]]:
    """kind -> the importer names docs/adapters.md documents: the scene datasets' table (first column) and
    the kind table's importers column."""
    text = (DOCS / "adapters.md").read_text(encoding="utf-8")
    scene = set(re.findall(r"^\| `([a-z0-9-]+)` \| (?:frames|boxes)", text, re.M))
    kinds = {m.group(1): set(re.findall(r"`([a-z0-9-]+)`", m.group(2)))
             for m in re.finditer(r"^\| `([a-z0-9-]+)` \| ([^|]*) \|", text, re.M) if m.group(1) in KINDS}
    return {**kinds, "scene": scene}


def test_the_registry_holds_every_documented_importer_once():
    documented = _documented()
    assert set(documented) == set(KINDS) and len(documented["scene"]) == 7 and len(documented["tracks2d"]) == 5
    assert {k: {i.name for i in datasets.importers(k)} for k in KINDS} == documented
    tracks2d_doc = (DOCS / "tracks2d.md").read_text(encoding="utf-8")  # it documents each 2D format too
    assert all(f"vistest import {name}" in tracks2d_doc for name in documented["tracks2d"])


def test_the_question_importers_are_the_layouts_their_readers_know():
    from vistest.datasets import sti_bench, vsibench_questions

    assert {i.name for i in datasets.importers("question-set")} == set(sti_bench.COLUMNS)
    assert {i.name for i in datasets.importers("question-rows")} == set(vsibench_questions.TEMPLATES)


def test_each_importer_has_the_readers_of_its_kind():
    for imp in datasets.IMPORTERS.values():
        assert isinstance(imp, Importer) and all(isinstance(o, Option) for o in imp.options)
        if imp.kind == "scene":
            assert imp.read_capture or imp.read_boxes, imp.name
            assert ("frames" in imp.reads) == (imp.read_capture is not None), imp.name
        else:
            assert imp.read_capture is imp.read_boxes is imp.check_boxes is None, imp.name
        assert (imp.read is None) == (imp.kind == "scene"), imp.name


def test_register_refuses_a_second_name_and_an_unknown_kind():
    with pytest.raises(ValueError, match="already registered"):
        register(datasets.get_importer("mot"))
    with pytest.raises(ValueError, match="unknown kind"):
        register(Importer("nosuch", "t", "audit", "p"))
    assert "nosuch" not in datasets.IMPORTERS


@pytest.mark.parametrize("name, args, flag", [
    ("sti-bench", ["--video", "v.mp4"], "--video"),
    ("mot", ["--scenes", "."], "--scenes"),
    ("scannet", ["--skip-refused"], "--skip-refused"),
    ("vsibench-questions", ["-O", "x=1"], "-O"),
])
def test_an_option_of_another_kind_is_refused_first(tmp_path, name, args, flag):
    """PATH does not exist: the option is refused before the importer looks at it."""
    r = CliRunner().invoke(main, ["import", name, str(tmp_path / "missing"), "-o", str(tmp_path / "out"), *args])
    kind = datasets.get_importer(name).kind
    assert r.exit_code == 2 and f"Error: {flag}: {name} (" in r.output, r.output
    assert ", ".join(KIND_OPTIONS[kind]) in r.output if KIND_OPTIONS[kind] else "PATH and -o only" in r.output
    assert not (tmp_path / "out").exists()


def test_the_help_lists_every_importer():
    r = CliRunner().invoke(main, ["import", "--help"])
    assert r.exit_code == 0
    assert all(f"  {name}: " in r.output for name in datasets.IMPORTERS)
