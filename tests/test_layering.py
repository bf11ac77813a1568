"""The import graph of chunkflow: no circles, and every import goes leftwards.

The chain (README "Layout", DESIGN.md), leftmost first::

    errors -> config -> metadata -> grid -> indexing -> codecs -> storage -> cache ->
    sync -> jobs -> engine -> core -> api -> graph -> io -> ndimage -> testing -> cli

``buffers``, ``heap`` and ``version`` sit beside ``errors``; the xarray engine beside ``graph``.
The package's own ``__init__`` and the ``chunkflow.reductions`` module, which re-export
the public names, come after ``testing``; the command line (``cli``, ``__main__``) uses
them. Every import counts: at module level, inside functions, and under
``TYPE_CHECKING`` (a type-only circle is still a circle a reader has to untangle).
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

import chunkflow

ROOT = Path(chunkflow.__file__).resolve().parent

CHAIN = [
    ("errors", "buffers", "heap", "version"),
    ("config",),
    ("metadata",),
    ("grid",),
    ("indexing",),
    ("codecs",),
    ("storage",),
    ("cache",),
    ("sync",),
    ("jobs",),
    ("engine",),
    ("core",),
    ("api",),
    ("graph", "xarray_backend", "xarray_engine", "xarray"),
    ("io",),  # readers of other formats (tifffile, h5py, memmap) and convert, over graph
    ("ndimage", "skimage"),  # scipy.ndimage's and scikit-image's names over graph
    ("testing",),
    ("", "reductions"),  # the public names: the package's __init__ and its reductions
    ("cli", "__main__"),  # the command line, a user of the public names
]
RANK = {name: rank for rank, names in enumerate(CHAIN) for name in names}


def module_files(root: Path = ROOT) -> dict[str, tuple[Path, bool]]:
    """Every module of the package: dotted name -> (file, whether it is a package)."""
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        package = parts[-1] == "__init__"
        if package:
            parts.pop()
        found[".".join(parts)] = (path, package)
    return found


def _resolve(name: str, modules: Mapping[str, object]) -> str:
    while name not in modules:
        name = name.rpartition(".")[0]
    return name


def imports_of(name: str, path: Path, package: bool, modules: Mapping[str, object]) -> set[str]:
    """The chunkflow modules ``name`` imports, anywhere in its file."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name if package else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            # "from package import module" imports the module, not only the package.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                       for alias in node.names]
        else:
            continue
        found.update(_resolve(t, modules) for t in targets
                     if t == "chunkflow" or t.startswith("chunkflow."))
    found.discard(name)
    return found


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    modules = module_files(root)
    return {name: imports_of(name, path, package, modules)
            for name, (path, package) in modules.items()}


def layer(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


def rightward(graph: Mapping[str, set[str]]) -> list[str]:
    """Imports that go rightwards in the chain (or from a module the chain does not place)."""
    wrong = []
    for module, targets in sorted(graph.items()):
        if layer(module) not in RANK:
            wrong.append(f"{module} is in no layer of the chain")
            continue
        for target in sorted(targets):
            if RANK.get(layer(target), len(CHAIN)) > RANK[layer(module)]:
                wrong.append(f"{module} -> {target}")
    return wrong


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
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
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for node in sorted(graph):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_no_import_goes_rightwards() -> None:
    assert rightward(import_graph()) == []


def test_no_import_circles() -> None:
    assert cycles(import_graph()) == []


def _submodules() -> Iterator[str]:
    for info in pkgutil.walk_packages(chunkflow.__path__, "chunkflow."):
        yield info.name


@pytest.mark.parametrize("name", sorted(_submodules()))
def test_a_package_attribute_is_its_submodule(name: str) -> None:
    # A package that binds a function to the name of one of its modules (``rechunk``
    # the function over ``rechunk`` the package) makes ``package.name`` mean two things.
    module = importlib.import_module(name)
    parent, _, child = name.rpartition(".")
    assert getattr(sys.modules[parent], child) is module


# ------------------------------------------------- the checks themselves, on a toy tree


def _tree(tmp_path: Path, files: Mapping[str, str]) -> Path:
    root = tmp_path / "chunkflow"
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_checks_see_rightward_and_type_only_imports(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "__init__.py": "",
        "errors.py": "",
        "core/__init__.py": "",
        "core/array.py": "from chunkflow.errors import X\n",
        "storage/__init__.py": "from typing import TYPE_CHECKING\n"
                               "if TYPE_CHECKING:\n    from chunkflow.core.array import Array\n",
        "storage/local.py": "def f():\n    from chunkflow import core\n",
    })
    assert rightward(import_graph(root)) == [
        "chunkflow.storage -> chunkflow.core.array",
        "chunkflow.storage.local -> chunkflow.core",
    ]


def test_the_checks_see_circles_through_relative_and_deferred_imports(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "__init__.py": "",
        "graph/__init__.py": "",
        "graph/a.py": "from . import b\n",
        "graph/b.py": "def f():\n    from chunkflow.graph.c import g\n",
        "graph/c.py": "from .a import x\n",
        "graph/d.py": "from chunkflow.graph import a\n",
    })
    assert cycles(import_graph(root)) == [
        ["chunkflow.graph.a", "chunkflow.graph.b", "chunkflow.graph.c"]]
