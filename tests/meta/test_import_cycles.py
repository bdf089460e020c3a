"""Issue 28: the stores package, the run phases, the plugins, the context policies and the
testing kit have no import circle, counting the imports made inside functions and under
TYPE_CHECKING (the import linter's layers see only the package's face)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"


def _modules() -> dict[str, Path]:
    out = {}
    for path in (SRC / "lovia").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _targets(
    node: ast.Import | ast.ImportFrom, module: str, is_package: bool, modules: dict[str, Path]
) -> list[str]:
    """What an import statement loads: ``from pkg import sub`` loads the module ``pkg.sub``
    (its package is the importer's own, being imported already), ``from mod import name``
    the module ``mod``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        parts = module.split(".")
        if not is_package:
            parts = parts[:-1]
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join([*parts, base] if base else parts)
    subs = [f"{base}.{alias.name}" for alias in node.names]
    return [sub if sub in modules else base for sub in subs]


def import_graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (a package's face excluded)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        if not name.startswith(package + "."):
            continue
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(node, name, path.name == "__init__.py", modules):
                    if target in modules and target.startswith(package + ".") and target != name:
                        deps.add(target)
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_imports_inside_functions() -> None:
    graph = import_graph("lovia.stores")
    assert "lovia.stores.memory" in graph["lovia.stores.session"]  # its lazy 0.9.119 names


def test_no_import_circle_inside_stores() -> None:
    assert cycles(import_graph("lovia.stores")) == []


def test_the_graph_sees_imports_under_type_checking() -> None:
    graph = import_graph("lovia._run")
    assert "lovia._run.state" in graph["lovia._run.run"]  # annotations only


def test_no_import_circle_inside_the_run_phases() -> None:
    """The phases take the declared ``Run`` (run.py), not the driver: none imports loop.py."""
    assert cycles(import_graph("lovia._run")) == []
    graph = import_graph("lovia._run")
    assert [m for m, deps in graph.items() if "lovia._run.loop" in deps] == ["lovia._run.runner"]


def test_the_graph_takes_from_package_import_module_as_that_module() -> None:
    """``from . import curate`` loads the module ``curate``: no arrow to the package's face,
    which the importer's own package is loading already."""
    graph = import_graph("lovia.plugins")
    assert "lovia.plugins.memory.curate" in graph["lovia.plugins.memory._tools"]
    assert "lovia.plugins.memory" not in graph["lovia.plugins.memory._tools"]


def test_no_import_circle_inside_the_plugins() -> None:
    """Each plugin's tools take a protocol of what they use (``MemoryForTools``,
    ``ParentRun``) and an MCP connection reads ``ServerSettings``: none imports the module
    that builds it."""
    assert cycles(import_graph("lovia.plugins")) == []


def test_no_import_circle_inside_the_testing_kit() -> None:
    """The conformance kit's two processes share ``_factory``; neither imports the other."""
    assert cycles(import_graph("lovia.testing")) == []


def test_no_import_circle_inside_the_context_policies() -> None:
    """The stages pipeline takes ``CompactionSettings``, not the ``Compaction`` that calls it."""
    assert cycles(import_graph("lovia.context")) == []


def _reached(graph: dict[str, set[str]], start: str) -> set[str]:
    reached: set[str] = set()
    todo = [start]
    while todo:
        for dep in graph.get(todo.pop(), ()):
            if dep not in reached:
                reached.add(dep)
                todo.append(dep)
    return reached


@pytest.mark.parametrize(
    "module",
    [
        "lovia.context._render",  # names the recall tool by RECALL_TOOL_NAME, not the tool
        "lovia.tools._fetch",  # takes the idempotency key from lovia._current_call
        "lovia._current_call",
    ],
)
def test_these_stay_below_the_run(module: str) -> None:
    """They need no run context (which names the agent): the core circle of a run's
    definitions does not take them in."""
    reached = _reached(import_graph("lovia"), module)
    assert not reached & {"lovia.context.recall", "lovia.run_context", "lovia.agent"}
