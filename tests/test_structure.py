"""The package's shape, read from the source (ast, no imports of the code under test):
no module imports another module's private names, module-level imports form no cycle, and
every module path and dotted module name the README and docs/*.md mention exists."""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "vistest"

# Exceptions to the private-import and cycle rules; each entry must still occur (none today).
ALLOWED_PRIVATE: set[tuple[str, str, str]] = set()
ALLOWED_CYCLES: set[frozenset[str]] = set()


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
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module_names: dict[str, str] = {}  # local name -> vistest module it is bound to
        for node in ast.walk(tree):
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
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in module_names and node.attr.startswith("_")
                    and not node.attr.startswith("__") and module_names[node.value.id] != name):
                found.add((name, module_names[node.value.id], node.attr))
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the vistest modules its module-level imports load (a package's ``__init__``
    counts for every module imported through it)."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for name, path in MODULES.items():
        for node in _module_level(ast.parse(path.read_text(encoding="utf-8")).body):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("vistest")]
            else:
                src = _resolve(name, node)
                if not src.startswith("vistest"):
                    continue
                targets = [f"{src}.{a.name}" if f"{src}.{a.name}" in MODULES else src for a in node.names]
            for t in targets:
                parts = t.split(".")
                own = {".".join(name.split(".")[:k]) for k in range(1, len(name.split(".")) + 1)}
                for k in range(1, len(parts) + 1):  # importing a.b.c runs a, a.b and a.b.c
                    m = ".".join(parts[:k])
                    if m in MODULES and m not in own:
                        graph[name].add(m)
    return graph


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


def test_no_import_cycles():
    found = set(cycles(import_graph()))
    new = [sorted(c) for c in found - ALLOWED_CYCLES]
    assert not new, f"module-level import cycle(s): {new}"
    stale = [sorted(c) for c in ALLOWED_CYCLES - found]
    assert not stale, f"fixed: remove {stale} from ALLOWED_CYCLES in tests/test_structure.py"


def test_the_checks_can_fail(tmp_path, monkeypatch):
    """The two checks above find what they look for (run on a planted package)."""
    pkg = tmp_path / "vistest"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n_hidden = 1\n")
    (pkg / "sub" / "b.py").write_text("from .. import a\nfrom ..a import _hidden\n\ndef f():\n    return a._hidden\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    monkeypatch.setattr(__import__(__name__), "PACKAGE", pkg)
    monkeypatch.setattr(__import__(__name__), "MODULES", _modules())
    assert private_imports() == {("vistest.sub.b", "vistest.a", "_hidden")}
    assert cycles(import_graph()) == [frozenset({"vistest.a", "vistest.sub.b"})]


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
