"""The import graph of ``anon_dagster`` has no cycle.

Two modules that import each other depend on import order: whichever is imported second sees
the first half-initialized. An import inside a function hides such a cycle from import time but
does not remove the mutual dependency, so every ``import`` statement counts here, wherever it
sits in the module (top level, function, ``if TYPE_CHECKING:``).

The graph has one node per module of the package (a package is its ``__init__``) and an edge
from a module to every module of the package it imports: ``from .keystore import KeyStore``
is an edge to ``…pseudonymize.keystore``, ``from . import core`` an edge to the submodule
``core``. Imports that name no module of the package (third-party code, a module that does not
exist) are no edge.
"""

from __future__ import annotations

import ast
from pathlib import Path

import anon_dagster

PACKAGE_DIR = Path(anon_dagster.__file__).parent


def module_files(package_dir: Path) -> dict[str, tuple[Path, bool]]:
    """Every module under ``package_dir``: dotted name → (file, whether it is a package)."""
    modules = {}
    for file in sorted(package_dir.rglob("*.py")):
        parts = list(file.relative_to(package_dir.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        modules[".".join(parts)] = (file, is_package)
    return modules


def imported_modules(name: str, file: Path, is_package: bool, modules: dict) -> set[str]:
    """The modules of ``modules`` that the module ``name`` (source in ``file``) imports."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"), filename=str(file))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                # ``import a.b.c`` runs a, a.b and a.b.c; the deepest one of ours is the edge
                target = alias.name
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*anchor, node.module] if node.module else anchor)
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule in modules:
                    found.add(submodule)
                elif source in modules:
                    found.add(source)
    found.discard(name)
    return found


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """Module → the modules of the same package it imports."""
    modules = module_files(package_dir)
    return {name: imported_modules(name, file, is_package, modules)
            for name, (file, is_package) in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import one another: strongly connected components of 2+ nodes.

    Tarjan's algorithm; each group is sorted, the groups by their first module.
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def test_anon_dagster_has_no_import_cycle():
    found = cycles(import_graph(PACKAGE_DIR))
    assert not found, "modules that import one another:\n" + "\n".join(", ".join(g) for g in found)


def test_the_graph_sees_the_key_store_package_and_its_lazy_vault_import():
    graph = import_graph(PACKAGE_DIR)
    keystore = "anon_dagster.pseudonymize.keystore"
    # open_keystore imports the Vault backend inside the function: still an edge
    assert f"{keystore}.vault" in graph[f"{keystore}.locate"]
    assert keystore in graph["anon_dagster.pseudonymize.table"]
    # the old import path re-exports the backend; the key store does not import it back
    assert graph["anon_dagster.pseudonymize.vault"] == {f"{keystore}.vault"}
    outside = {target for name, targets in graph.items() if name.startswith(keystore)
               for target in targets
               if target.startswith("anon_dagster.pseudonymize") and not target.startswith(keystore)}
    assert outside == set()


def write_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "pkg"


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    package = write_package(tmp_path, {
        "pkg/__init__.py": "from .store import Store\n",
        "pkg/store.py": "class Store:\n    def open(self):\n        from .backend import Backend\n        return Backend\n",
        "pkg/backend.py": "from .store import Store\n\nclass Backend(Store):\n    pass\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/leaf.py": "import json\nfrom .. import store\nfrom ..missing import nothing\n",
    })
    graph = import_graph(package)
    assert graph["pkg.sub.leaf"] == {"pkg.store"}  # json and a missing module are no edge
    assert cycles(graph) == [["pkg.backend", "pkg.store"]]


def test_an_acyclic_package_has_no_cycle(tmp_path):
    package = write_package(tmp_path, {
        "pkg/__init__.py": "from .store import Store\nfrom .backend import Backend\n",
        "pkg/store.py": "from .backend import Backend\n\nclass Store:\n    backend = Backend\n",
        "pkg/backend.py": "class Backend:\n    pass\n",
    })
    assert cycles(import_graph(package)) == []
