"""Every error chunkflow raises is a chunkflow error, and every one is defined in errors.py.

The library's own raises are read from the source with ``ast`` (nothing is run): a
``raise ValueError(...)`` anywhere in chunkflow/ fails, as does an exception class
defined outside ``chunkflow/errors.py``. Each chunkflow error subclasses the builtin a
caller would catch, so ``except ValueError`` keeps working; these tests check that too.
"""

from __future__ import annotations

import ast
import builtins
import inspect
from pathlib import Path

import pytest

import chunkflow
import chunkflow.errors as errors

ROOT = Path(chunkflow.__file__).resolve().parent

BUILTIN_EXCEPTIONS = {
    name for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}

# The only builtin raises allowed, each because a Python protocol asks for that class.
ALLOWED = {
    # Module-level __getattr__ (PEP 562): Python turns exactly AttributeError into
    # "has no attribute" for `from m import x`, hasattr() and getattr(m, x, default).
    ("__getattr__", "AttributeError"),
    # cli/cleanup: Ctrl-C stays an interrupt when the cleanup is added to its text; an
    # Exception subclass would be caught by `except Exception` handlers on the way out.
    ("_raise_saying", "KeyboardInterrupt"),
}


def _abstract(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A method whose body is only a docstring (or comment) and ``raise NotImplementedError``:
    the subclass provides it."""
    body = [s for s in func.body if not (isinstance(s, ast.Expr)
                                        and isinstance(s.value, ast.Constant))]
    return len(body) == 1 and isinstance(body[0], ast.Raise)


def _bound_names(tree: ast.Module) -> set[str]:
    """Names the module binds itself (imports, classes, assignments): these shadow builtins."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _raised_name(node: ast.Raise) -> str | None:
    """The class name of ``raise X`` / ``raise X(...)`` / ``raise builtins.X(...)``."""
    exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    if isinstance(exc, ast.Name):
        return exc.id
    if (isinstance(exc, ast.Attribute) and isinstance(exc.value, ast.Name)
            and exc.value.id == "builtins"):
        return exc.attr
    return None


def builtin_raises(source: str, filename: str) -> list[str]:
    """``file:line: raise X`` for every raise of a builtin exception class in ``source``."""
    tree = ast.parse(source, filename)
    shadowed = _bound_names(tree)
    found: list[str] = []

    def visit(node: ast.AST, func: ast.FunctionDef | ast.AsyncFunctionDef | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child)
                continue
            if isinstance(child, ast.Raise) and child.exc is not None:
                name = _raised_name(child)
                if name in BUILTIN_EXCEPTIONS and name not in shadowed:
                    allowed = func is not None and (
                        (func.name, name) in ALLOWED
                        or (name == "NotImplementedError" and _abstract(func)))
                    if not allowed:
                        found.append(f"{filename}:{child.lineno}: raise {name}")
            visit(child, func)

    visit(tree, None)
    return found


def test_no_builtin_raises_in_chunkflow():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        found += builtin_raises(path.read_text(), str(path.relative_to(ROOT.parent)))
    assert not found, ("raise a chunkflow error from chunkflow/errors.py (a subclass of "
                       "the builtin) instead:\n" + "\n".join(found))


@pytest.mark.parametrize("source, expected", [
    ("def f():\n    raise ValueError('x')\n", ["m.py:2: raise ValueError"]),
    ("def f():\n    raise KeyError\n", ["m.py:2: raise KeyError"]),
    ("import builtins\nraise builtins.TypeError('x')\n", ["m.py:2: raise TypeError"]),
    # A method that raises NotImplementedError after doing something is not abstract.
    ("def f(x):\n    x.check()\n    raise NotImplementedError('no')\n",
     ["m.py:3: raise NotImplementedError"]),
    ("def f():\n    '''Abstract.'''\n    raise NotImplementedError\n", []),
    ("def __getattr__(name):\n    raise AttributeError(name)\n", []),
    ("from chunkflow.errors import InvalidArgumentError\nraise InvalidArgumentError('x')\n",
     []),
    ("from concurrent.futures import TimeoutError\nraise TimeoutError('x')\n", []),
    ("try:\n    pass\nexcept ValueError as err:\n    raise err\n", []),
])
def test_builtin_raises_finds_what_it_should(source, expected):
    assert builtin_raises(source, "m.py") == expected


def test_every_exception_class_is_defined_in_errors_py():
    # The source, not the imported modules (tests/test_public_api.py walks those): a
    # class defined inside a function never reaches a module's namespace.
    outside = []
    for path in sorted(ROOT.rglob("*.py")):
        if path == ROOT / "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(b, ast.Name) and (b.id in BUILTIN_EXCEPTIONS
                                                 or b.id in errors.__all__)
                    for b in node.bases):
                outside.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: {node.name}")
    assert not outside, "define exception classes in chunkflow/errors.py: " + ", ".join(outside)


def test_errors_are_exported_and_subclass_a_builtin():
    classes = {name: value for name, value in vars(errors).items()
               if inspect.isclass(value) and issubclass(value, BaseException)
               and value.__module__ == "chunkflow.errors"}
    assert sorted(classes) == sorted(errors.__all__)
    for name, cls in classes.items():
        if issubclass(cls, Warning):
            continue
        assert issubclass(cls, errors.ChunkflowError), name
        if cls is not errors.ChunkflowError:
            # The builtin a caller would catch for the same mistake, besides Exception.
            assert any(b.__module__ == "builtins" and b is not Exception
                       for b in cls.__mro__), name
