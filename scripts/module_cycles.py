"""Fail when two modules of ``homarus`` import each other at any depth, annotation-only imports
(under ``TYPE_CHECKING``) included.

import-linter (``pyproject.toml``) checks the layers without annotation-only imports, so that a part
may name the type of what it is handed; this check adds that even those names never go round in a
circle: a module that needs the type of its caller takes a ``Protocol`` of what it uses instead.
Run by ``make lint`` with the lint environment's ``grimp`` (the graph library import-linter uses).
"""

from __future__ import annotations

import sys

import grimp


def cycles(package: str) -> list[list[str]]:
    graph = grimp.build_graph(package, include_external_packages=False, exclude_type_checking_imports=False)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def main() -> int:
    found = cycles("homarus")
    for component in found:
        print(f"import cycle ({len(component)} modules, annotation-only imports included): {', '.join(component)}")
    if not found:
        print("no module import cycles, annotation-only imports included")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
