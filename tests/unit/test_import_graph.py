"""The import graph of `explorer/` has no circle, imports made only for type checking included.

import-linter's layers see a circle only between layers, and skip `if TYPE_CHECKING:` blocks
when asked to; a circle inside one layer (the app importing its screen, the screen importing
the app for a type) is still a knot a newcomer must untie to read either. This walks every
module with `ast`, so every import statement counts, wherever it stands.
"""

from __future__ import annotations

import ast
from pathlib import Path

import explorer

PACKAGE = Path(explorer.__file__).parent


def module_name(path: Path, root: Path) -> str:
    """`explorer.tui.app` for root/explorer/tui/app.py; a package is its __init__."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(tree: ast.Module, name: str, is_package: bool, known: set[str]) -> set[str]:
    """The modules of `known` that the module `name` imports, anywhere in its body."""
    found: set[str] = set()
    here = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.rsplit(".", node.level - 1)[0] if node.level > 1 else here
                base = f"{anchor}.{base}" if base else anchor
            found.add(base)
            # `from explorer.tui import app` imports the module explorer.tui.app
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {m for m in found if m in known and m != name}


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module → the modules it imports, for every module of the package under `root`."""
    files = {module_name(p, root): p for p in sorted((root / PACKAGE.name).rglob("*.py"))}
    known = set(files)
    return {
        name: imported_modules(
            ast.parse(path.read_text(), str(path)), name, path.name == "__init__.py", known
        )
        for name, path in files.items()
    }


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_walk_sees_type_checking_and_relative_imports(tmp_path: Path) -> None:
    pkg = tmp_path / PACKAGE.name
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from explorer.sub import b\n")
    (pkg / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a import x\n"
    )
    graph = import_graph(tmp_path)
    assert graph["explorer.a"] == {"explorer.sub", "explorer.sub.b"}
    assert graph["explorer.sub.b"] == {"explorer.a"}
    assert circles(graph) == [["explorer.a", "explorer.sub.b"]]


def test_explorer_has_no_import_circle() -> None:
    graph = import_graph(PACKAGE.parent)
    assert len(graph) > 50, "the walk found the package's modules"
    assert circles(graph) == []


RUNNER_PARTS = ("context", "opening", "trial", "rounds_loop", "closing")
"""The runner's parts (`explorer.lab.run.context`): they take the run's context and never
reach back into the runner that conducts them."""


def test_the_runners_parts_never_import_the_runner() -> None:
    graph = import_graph(PACKAGE.parent)
    runner = "explorer.lab.run.runner"
    assert runner in graph and all(f"explorer.lab.run.{p}" in graph for p in RUNNER_PARTS)
    assert {f"explorer.lab.run.{p}" for p in RUNNER_PARTS} <= graph[runner]
    reaching = sorted(p for p in RUNNER_PARTS if runner in graph[f"explorer.lab.run.{p}"])
    assert reaching == [], f"these parts import the runner: {reaching}"
