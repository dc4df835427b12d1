#!/usr/bin/env python
"""Print the import cycles between the project's modules; exit 1 if any.

Reads the source with `ast` (nothing is imported). An edge A -> B means A's code
imports B: `from agents.services import x` is an edge to `agents.services` (its
__init__), `from agents.runtime import loop` to `agents.runtime.loop`. Imports under
`if TYPE_CHECKING:` never run and are skipped. Imports inside a function body run at
call time: they cannot break loading, so they are reported apart (`--all` counts them;
`make lint` runs it with `--all`: no cycle at all, function bodies included).

    .venv/bin/python bin/import_cycles.py [--all]
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("aihummer", "agents", "sandbox", "workflows")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts:
                found[module_name(path)] = path
    return found


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(path: Path, name: str, known: dict[str, Path]) -> list[tuple[str, bool]]:
    """(imported module, deferred) for each import of `path` that names a project module."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, deferred: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and is_type_checking(child):
                for other in child.orelse:
                    visit(other, deferred)
                continue
            inner = deferred or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            if isinstance(child, ast.Import):
                found.extend((alias.name, inner) for alias in child.names if alias.name in known)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - child.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in child.names:
                    target = f"{base}.{alias.name}"
                    if target in known:
                        found.append((target, inner))
                    elif base in known:
                        found.append((base, inner))
            visit(child, inner)

    visit(tree, False)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), or self-loops."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []
    sys.setrecursionlimit(10_000)

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                result.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return result


def main() -> int:
    known = modules()
    eager: dict[str, set[str]] = {}
    every: dict[str, set[str]] = {}
    for name, path in known.items():
        for target, deferred in imports(path, name, known):
            if target == name:
                continue
            every.setdefault(name, set()).add(target)
            if not deferred:
                eager.setdefault(name, set()).add(target)
    load_cycles = cycles(eager)
    for component in load_cycles:
        sys.stdout.write(f"import cycle (at load): {' <-> '.join(component)}\n")
    call_cycles = [c for c in cycles(every) if c not in load_cycles]
    for component in call_cycles:
        sys.stdout.write(f"cycle through imports in function bodies: {' <-> '.join(component)}\n")
    sys.stdout.write(f"{len(known)} modules, {sum(map(len, eager.values()))} load-time imports between them.\n")
    return 1 if load_cycles or ("--all" in sys.argv and call_cycles) else 0


if __name__ == "__main__":
    raise SystemExit(main())
