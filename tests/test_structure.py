"""The package's shape, read from the source (ast, no imports of the code under test):
no module imports another module's private names, modules form no import cycle (every import
statement counted, those inside functions too: a lazy import is a real dependency, as the stage
table counts it), no module imports a module of a later stage than its own (the README's stage
table, read here), packages form no import cycle, vistest/datasets/ holds importers only, and
every module path and dotted module name the README and docs/*.md mention exists."""
from __future__ import annotations

import ast
import functools
import importlib
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "vistest"

README = ROOT / "README.md"

# Exceptions to the private-import, cycle and layering rules; each entry must still occur.
ALLOWED_PRIVATE: set[tuple[str, str, str]] = set()
ALLOWED_CYCLES: set[frozenset[str]] = set()
ALLOWED_UPWARD: set[tuple[str, str]] = set()  # (importer, imported module of a later stage)
ALLOWED_PACKAGE_CYCLES: set[frozenset[str]] = set()


@functools.lru_cache(maxsize=None)
def _parsed(text: str) -> ast.Module:
    return ast.parse(text)


def _parse(path: Path) -> ast.Module:
    """The module's syntax tree, parsed once per text (the checks read every module several
    times; the trees are only read)."""
    return _parsed(path.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def _walked(text: str) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(_parsed(text)))


def _walk(path: Path) -> tuple[ast.AST, ...]:
    """Every node of the module's tree in ``ast.walk``'s order, listed once per text (the checks
    walk every tree several times: walking them again was most of this module's time, issue 47)."""
    return _walked(path.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def _import_nodes_of(text: str) -> tuple[ast.Import | ast.ImportFrom, ...]:
    return tuple(n for n in _walked(text) if isinstance(n, (ast.Import, ast.ImportFrom)))


def _import_nodes(path: Path) -> tuple[ast.Import | ast.ImportFrom, ...]:
    """The module's import statements anywhere in the file (:func:`_walk`'s, in its order)."""
    return _import_nodes_of(path.read_text(encoding="utf-8"))


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _package_of(name: str) -> str:
    """The package a module's relative imports start from."""
    return name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]


def _resolve(name: str, node: ast.ImportFrom) -> str:
    """The absolute module an ``from X import ...`` statement of module ``name`` names."""
    if not node.level:
        return node.module or ""
    base = _package_of(name).split(".")
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _module_level(body: list[ast.stmt]):
    """Import statements that run when the module is imported (or type-check it): the
    top level and the bodies of top-level if / try blocks, not function bodies."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            yield from _module_level(node.body)
            yield from _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            yield from _module_level(node.body)
            for h in node.handlers:
                yield from _module_level(h.body)
            yield from _module_level(node.orelse)
            yield from _module_level(node.finalbody)


def private_imports() -> set[tuple[str, str, str]]:
    """(importer, module, name) for every private name (``_x``, not dunder) a vistest module
    takes from another module: ``from m import _x`` anywhere in the file, or ``m._x`` where
    ``m`` is bound to a vistest module."""
    found = set()
    for name, path in MODULES.items():
        nodes = _walk(path)
        module_names: dict[str, str] = {}  # local name -> vistest module it is bound to
        for node in nodes:
            if isinstance(node, ast.ImportFrom):
                src = _resolve(name, node)
                if not src.startswith("vistest"):
                    continue
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__") and src != name:
                        found.add((name, src, a.name))
                    if f"{src}.{a.name}" in MODULES:
                        module_names[a.asname or a.name] = f"{src}.{a.name}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in MODULES and a.asname:
                        module_names[a.asname] = a.name
        for node in nodes:
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in module_names and node.attr.startswith("_")
                    and not node.attr.startswith("__") and module_names[node.value.id] != name):
                found.add((name, module_names[node.value.id], node.attr))
    return found


def _imported(name: str, nodes) -> dict[str, int]:
    """The vistest modules the import statements ``nodes`` of module ``name`` load, with the
    line of the first (importing a.b.c runs a, a.b and a.b.c; the importer's own packages,
    which Python has run already, are left out)."""
    found: dict[str, int] = {}
    own = {".".join(name.split(".")[:k]) for k in range(1, len(name.split(".")) + 1)}
    for node in nodes:
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names if a.name.startswith("vistest")]
        elif isinstance(node, ast.ImportFrom):
            src = _resolve(name, node)
            if not src.startswith("vistest"):
                continue
            targets = [f"{src}.{a.name}" if f"{src}.{a.name}" in MODULES else src for a in node.names]
        else:
            continue
        for t in targets:
            parts = t.split(".")
            for k in range(1, len(parts) + 1):
                m = ".".join(parts[:k])
                if m in MODULES and m not in own:
                    found[m] = min(found.get(m, node.lineno), node.lineno)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the vistest modules its module-level imports load (a package's ``__init__``
    counts for every module imported through it)."""
    return {name: set(_imported(name, _module_level(_parse(path).body)))
            for name, path in MODULES.items()}


def all_imports() -> dict[str, dict[str, int]]:
    """Module -> {vistest module it imports: line}, every import statement of the file: module
    level, inside functions (a lazy import is a real dependency) and under TYPE_CHECKING."""
    return {name: _imported(name, _import_nodes(path))
            for name, path in MODULES.items()}


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(frozenset(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_module_imports_another_modules_private_names():
    found = private_imports()
    new = sorted(found - ALLOWED_PRIVATE)
    assert not new, "import of another module's private name (make it public or move it): " + \
        "; ".join(f"{imp} uses {mod}.{n}" for imp, mod, n in new)
    stale = sorted(ALLOWED_PRIVATE - found)
    assert not stale, f"fixed: remove {stale} from ALLOWED_PRIVATE in tests/test_structure.py"


def module_graph(imports: dict[str, dict[str, int]]) -> dict[str, set[str]]:
    """Module -> the vistest modules it imports anywhere in its file (:func:`all_imports`: module level,
    inside functions, under TYPE_CHECKING)."""
    return {name: set(targets) for name, targets in imports.items()}


def test_no_import_cycles():
    """No module imports itself back through others, lazy imports inside functions included (issue #46:
    datasets/tracks2d_import.py <-> its format modules and visibility/table.py <-> tracks2d.py were
    circles of lazy imports the module-level graph did not see)."""
    assert not cycles(import_graph())  # the module-level graph is a part of the whole one
    found = set(cycles(module_graph(all_imports())))
    new = [sorted(c) for c in found - ALLOWED_CYCLES]
    assert not new, f"module import cycle(s), imports inside functions included: {new}"
    stale = [sorted(c) for c in ALLOWED_CYCLES - found]
    assert not stale, f"fixed: remove {stale} from ALLOWED_CYCLES in tests/test_structure.py"


# ---- layering: the README's stage table ------------------------------------------------------
TABLE_HEADER = "| stage | what | module |"
ROW_PATH_RE = re.compile(r"`(vistest/[A-Za-z0-9_/]*?)(\.py)?`")
LEAVES = 0  # the first row: standard library only


def stage_rows(text: str) -> list[tuple[str, list[str]]]:
    """(stage, module names) of each row of the stage table, in order: ``vistest/videos/`` names
    the package ``vistest.videos`` and every module in it, ``vistest/scene.py`` one module."""
    lines = text.splitlines()
    start = lines.index(TABLE_HEADER) + 2  # header, then |---|
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows.append((cells[0], [m.group(1).rstrip("/").replace("/", ".") for m in ROW_PATH_RE.finditer(cells[-1])]))
    return rows


def stage_ranks(rows: list[tuple[str, list[str]]]) -> dict[str, int]:
    """Module -> the index of its row: the row naming the module or its closest package; a
    package no row names (``vistest.budget``, whose modules are stages 3 and 4) takes its
    modules' lowest. The root package ``vistest`` (the public API) has none: every module's
    ancestor, Python runs it before any of them, whatever is imported."""
    named = {m: i for i, (_, ms) in enumerate(rows) for m in ms}
    ranks: dict[str, int] = {}
    for name in MODULES:
        parts = name.split(".")
        for k in range(len(parts), 1, -1):
            if ".".join(parts[:k]) in named:
                ranks[name] = named[".".join(parts[:k])]
                break
    for name, path in MODULES.items():
        if name not in ranks and name != "vistest" and path.name == "__init__.py":
            inside = [r for m, r in ranks.items() if m.startswith(name + ".")]
            if inside:
                ranks[name] = min(inside)
    return ranks


def upward_imports(ranks: dict[str, int], imports: dict[str, dict[str, int]]) -> dict[tuple[str, str], int]:
    """(importer, imported): line, for every import of a module of a later row than the importer's."""
    return {(a, b): line for a, targets in imports.items() if a in ranks
            for b, line in targets.items() if b in ranks and ranks[b] > ranks[a]}


def non_standard_imports(modules: list[str]) -> dict[str, set[str]]:
    """Module -> the top-level names it imports that are neither the standard library nor a
    module of ``modules`` (relative imports resolved)."""
    out: dict[str, set[str]] = {}
    for name in modules:
        found = set()
        for node in _walk(MODULES[name]):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                src = _resolve(name, node)
                found |= {f"{src}.{a.name}" if f"{src}.{a.name}" in MODULES else src for a in node.names}
        bad = {m for m in found if m.split(".")[0] not in sys.stdlib_module_names and m not in modules
               and m != "__future__"}
        if bad:
            out[name] = bad
    return out


def package_of(name: str) -> str:
    """The package a module belongs to for the package cycle check: ``vistest.X`` (a
    subpackage, or a top-level module on its own)."""
    return ".".join(name.split(".")[:2])


def package_graph(imports: dict[str, dict[str, int]]) -> dict[str, set[str]]:
    """Package -> the packages its modules import (every import statement, lazy ones too); the
    root package ``vistest`` is left out (every module's ancestor)."""
    graph: dict[str, set[str]] = {package_of(m): set() for m in imports if m != "vistest"}
    for a, targets in imports.items():
        if a == "vistest":
            continue
        graph[package_of(a)] |= {package_of(b) for b in targets if b != "vistest" and package_of(b) != package_of(a)}
    return graph


def test_every_module_has_a_stage_in_the_readme():
    rows = stage_rows(README.read_text(encoding="utf-8"))
    assert len(rows) >= 10 and rows[LEAVES][0] == "leaves", rows  # the table is found and starts with the leaves
    named = [m for _, ms in rows for m in ms]
    assert not [m for m in named if m not in MODULES], "the stage table names modules that do not exist"
    missing = sorted(set(MODULES) - set(stage_ranks(rows)) - {"vistest"})
    assert not missing, f"modules in no row of README.md's stage table (add each to its stage's row): {missing}"


def test_no_module_imports_a_later_stage():
    """A module imports only modules of its own row of the README's stage table or of the rows
    above it, lazy imports inside functions included."""
    rows = stage_rows(README.read_text(encoding="utf-8"))
    found = upward_imports(stage_ranks(rows), all_imports())
    stage = {m: rows[r][0] for m, r in stage_ranks(rows).items()}
    new = sorted(set(found) - ALLOWED_UPWARD)
    assert not new, "imports of a later stage (README.md's stage table; move the code to the stage that owns it): " + \
        "; ".join(f"{a} ({stage[a]}, line {found[a, b]}) imports {b} ({stage[b]})" for a, b in new)
    stale = sorted(ALLOWED_UPWARD - set(found))
    assert not stale, f"fixed: remove {stale} from ALLOWED_UPWARD in tests/test_structure.py"


def test_the_leaves_import_only_the_standard_library():
    leaves = stage_rows(README.read_text(encoding="utf-8"))[LEAVES][1]
    assert "vistest.answers" in leaves and "vistest.budgets" in leaves
    assert not non_standard_imports(leaves)


def test_no_package_import_cycle():
    found = set(cycles(package_graph(all_imports())))
    new = [sorted(c) for c in found - ALLOWED_PACKAGE_CYCLES]
    assert not new, f"package-level import cycle(s) (move the code to the lower stage that owns it): {new}"
    stale = [sorted(c) for c in ALLOWED_PACKAGE_CYCLES - found]
    assert not stale, f"fixed: remove {stale} from ALLOWED_PACKAGE_CYCLES in tests/test_structure.py"


def test_the_checks_can_fail(tmp_path, monkeypatch):
    """The two checks above find what they look for (run on a planted package)."""
    pkg = tmp_path / "vistest"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n_hidden = 1\n")
    (pkg / "sub" / "b.py").write_text("from .. import a\nfrom ..a import _hidden\n\ndef f():\n    return a._hidden\n")
    (pkg / "c.py").write_text("def f():\n    from . import d\n    return d\n")  # a circle of lazy imports
    (pkg / "d.py").write_text("def g():\n    from .c import f\n    return f\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    monkeypatch.setattr(__import__(__name__), "PACKAGE", pkg)
    monkeypatch.setattr(__import__(__name__), "MODULES", _modules())
    assert private_imports() == {("vistest.sub.b", "vistest.a", "_hidden")}
    assert cycles(import_graph()) == [frozenset({"vistest.a", "vistest.sub.b"})]
    assert sorted(cycles(module_graph(all_imports())), key=sorted) == [frozenset({"vistest.a", "vistest.sub.b"}),
                                                                       frozenset({"vistest.c", "vistest.d"})]


def test_the_layering_checks_can_fail(tmp_path, monkeypatch):
    """The layering, leaves and package cycle checks find what they look for (a planted package:
    the leaf imports numpy and, lazily, a later stage, which imports it back)."""
    pkg = tmp_path / "vistest"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .sub import top\n")
    (pkg / "leaf.py").write_text("import os\nimport numpy\n\ndef f():\n    from .sub import top\n    return top\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "top.py").write_text("from .. import leaf\nimport vistest.leaf\n")
    table = f"x\n{TABLE_HEADER}\n|---|---|---|\n| leaves | l | `vistest/leaf.py` |\n| top | t | `vistest/sub/` |\n\nend"
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    monkeypatch.setattr(__import__(__name__), "PACKAGE", pkg)
    monkeypatch.setattr(__import__(__name__), "MODULES", _modules())
    rows = stage_rows(table)
    assert rows == [("leaves", ["vistest.leaf"]), ("top", ["vistest.sub"])]
    assert stage_ranks(rows) == {"vistest.leaf": 0, "vistest.sub": 1, "vistest.sub.top": 1}
    imports = all_imports()
    assert imports["vistest.leaf"] == {"vistest.sub": 5, "vistest.sub.top": 5}
    assert upward_imports(stage_ranks(rows), imports) == {("vistest.leaf", "vistest.sub"): 5,
                                                          ("vistest.leaf", "vistest.sub.top"): 5}
    assert non_standard_imports(["vistest.leaf"]) == {"vistest.leaf": {"numpy", "vistest.sub.top"}}
    assert cycles(package_graph(imports)) == [frozenset({"vistest.leaf", "vistest.sub"})]


# ---- datasets/ holds importers only --------------------------------------------------------
DATASETS = "vistest.datasets"


def registered_modules() -> set[str]:
    """The modules of vistest/datasets/ whose importers the package registers: those whose attribute
    (``scannet.IMPORTER``, ``coco_video.TAO``) its ``__init__`` names."""
    subs = {m.rpartition(".")[2]: m for m in MODULES if m.startswith(DATASETS + ".")}
    return {subs[n.value.id] for n in _walk(MODULES[DATASETS])
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in subs}


def not_importers(imports: dict[str, dict[str, int]]) -> list[str]:
    """The modules of vistest/datasets/ that neither register an importer nor serve one: not reached
    from the package's ``__init__`` or a registered module through the imports inside the package."""
    seen, todo = set(), [DATASETS, *registered_modules()]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += [t for t in imports.get(m, {}) if t.startswith(DATASETS + ".")]
    return sorted(m for m in MODULES if m.startswith(DATASETS + ".") and m not in seen)


def test_datasets_holds_importers_only():
    """Issue #46: vistest/datasets/ is importers and what they use (the registry, common readers); an
    audit, a demo or a world prior belongs to its own stage."""
    assert {"vistest.datasets.scannet", "vistest.datasets.mot", "vistest.datasets.sti_bench"} <= registered_modules()
    stray = not_importers(all_imports())
    assert not stray, f"modules in vistest/datasets/ no importer uses (move each to the stage it serves): {stray}"


def test_datasets_check_can_fail(tmp_path, monkeypatch):
    """A planted package: an importer, its helper, and an audit module no importer uses."""
    pkg = tmp_path / "vistest" / "datasets"
    pkg.mkdir(parents=True)
    (tmp_path / "vistest" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from . import scan\n\nIMPORTERS = [scan.IMPORTER]\n")
    (pkg / "scan.py").write_text("from .helper import read\nIMPORTER = read\n")
    (pkg / "helper.py").write_text("def read():\n    return 1\n")
    (pkg / "audit.py").write_text("from . import scan\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    monkeypatch.setattr(__import__(__name__), "PACKAGE", tmp_path / "vistest")
    monkeypatch.setattr(__import__(__name__), "MODULES", _modules())
    assert registered_modules() == {"vistest.datasets.scan"}
    assert not_importers(all_imports()) == ["vistest.datasets.audit"]


# ---- the docs name what exists ---------------------------------------------------------------
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
PATH_RE = re.compile(r"\bvistest/[A-Za-z0-9_/]+\.py\b")
NAME_RE = re.compile(r"\bvistest(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def _mentions() -> list[tuple[str, str]]:
    out = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        out += [(doc.name, m) for m in PATH_RE.findall(text)]
        out += [(doc.name, m) for m in NAME_RE.findall(text)]
    return sorted(set(out))


def _exists(ref: str) -> bool:
    if ref.endswith(".py"):
        return (ROOT / ref).is_file()
    parts = ref.split(".")
    for k in range(len(parts), 0, -1):  # the longest prefix that is a module, then attributes
        mod = ".".join(parts[:k])
        if mod in MODULES:
            obj = importlib.import_module(mod)
            for attr in parts[k:]:
                if not hasattr(obj, attr):
                    return False
                obj = getattr(obj, attr)
            return True
    return False


def test_docs_name_modules_that_exist():
    mentions = _mentions()
    assert len(mentions) > 20  # the pattern finds the docs' references at all
    missing = [f"{doc}: {ref}" for doc, ref in mentions if not _exists(ref)]
    assert not missing, "docs name modules or paths that do not exist: " + "; ".join(missing)


@pytest.mark.parametrize("ref, ok", [("vistest/layout.py", True), ("vistest/nope.py", False),
                                     ("vistest.layout.scene_dir", True), ("vistest.layout.nope", False),
                                     ("vistest.eval.exporters", True), ("vistest.nope", False)])
def test_docs_check_can_fail(ref, ok):
    assert _exists(ref) is ok


# ---- the truth stage owns its config (issue #46) ---------------------------------------------------------------
def truth_fields() -> set[str]:
    """The fields of vistest.budget.config.TruthConfig, read from its class body (no import)."""
    tree = _parse(PACKAGE / "budget" / "config.py")
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "TruthConfig")
    return {n.target.id for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}


# calls that build a value from its fields, not unpacking: dataclasses.replace, a budget row (its fields record the
# settings it was computed with: vistest.budget.rows.real_row), and any class (TruthConfig, a video's Variant, ...)
BUILDERS = {"replace", "real_row"}


def unpack_sites(root: Path = PACKAGE, fields: set[str] | None = None) -> list[str]:
    """Calls under ``root`` that hand TruthConfig's settings over one by one instead of the config whole:
    a keyword argument named after a field whose value is that field of something (``budgets=tc.budgets``),
    a variable of the field's name (``profile=profile``, a command's parsed option passed on) or a
    command's value of it (``profile=kw["profile"]``), and ``**asdict(...)`` / ``**vars(...)`` /
    ``**x.__dict__``. Building a value (:data:`BUILDERS`) is not unpacking. Each site as
    ``path:line: call(keyword)``."""
    fields = truth_fields() if fields is None else fields
    out = []
    for path in sorted(root.rglob("*.py")):
        for node in _walk(path):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            callee = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "?"
            if callee in BUILDERS or callee[:1].isupper():
                continue
            for kw in node.keywords:
                v = kw.value
                if kw.arg is None:
                    inner = v.func if isinstance(v, ast.Call) else None
                    name = inner.id if isinstance(inner, ast.Name) else inner.attr if isinstance(
                        inner, ast.Attribute) else None
                    bad = name in ("asdict", "vars") or (isinstance(v, ast.Attribute) and v.attr == "__dict__")
                elif kw.arg in fields:
                    bad = (isinstance(v, ast.Attribute) and v.attr == kw.arg) or (
                        isinstance(v, ast.Name) and v.id == kw.arg) or (
                        isinstance(v, ast.Subscript) and isinstance(v.slice, ast.Constant) and v.slice.value == kw.arg)
                else:
                    bad = False
                if bad:
                    out.append(f"{path.relative_to(root.parent)}:{node.lineno}: {callee}({kw.arg or '**'})")
    return out


def test_truth_config_is_passed_whole():
    """Every function of the budget stage takes TruthConfig whole: no call in vistest/ unpacks it into
    keyword arguments (docs/truth.md: a setting then costs its field, the rule that reads it and its doc)."""
    assert unpack_sites() == []


def test_the_unpack_check_can_fail(tmp_path):
    """The unpack check finds what main had before issue #46 (pipeline.py's budget_truth call, a command
    passing its parsed options on, **asdict) and leaves a config built or passed whole alone."""
    pkg = tmp_path / "vistest"
    pkg.mkdir()
    (pkg / "bad.py").write_text(
        "truth = budget_truth(scene, vis, qs, budgets=truth_config.budgets, profile=truth_config.profile)\n"
        "t = budget_truth(scene, vis, qs, instant_tolerance_s=instant_tolerance_s)\n"
        "make_timeline(scene_json, out, seen_threshold=kw[\"seen_threshold\"])\n"
        "t = evaluator_truth(scene, vis, qs, e, **dataclasses.asdict(config.truth))\n")
    (pkg / "good.py").write_text(
        "truth = budget_truth(scene, vis, qs, config.truth)\n"
        "c = TruthConfig(budgets=budgets, profile=profile)\n"
        "c = dataclasses.replace(c, budgets=other.budgets)\n"
        "s = select_frames(profile, n, b, fps=fps)\n"
        "row = real_row(record, min_budget_room_route=config.min_budget_room_route)\n"
        "v = Variant(scene_id, profile=selection.profile)\n")
    found = unpack_sites(pkg, truth_fields())
    assert found == ["vistest/bad.py:1: budget_truth(budgets)", "vistest/bad.py:1: budget_truth(profile)",
                     "vistest/bad.py:2: budget_truth(instant_tolerance_s)",
                     "vistest/bad.py:3: make_timeline(seen_threshold)", "vistest/bad.py:4: evaluator_truth(**)"]
