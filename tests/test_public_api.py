"""The public surface: ``chunkflow.__all__`` holds functions and classes only, sorted;
``chunkflow.reductions`` is a module of its own; ``__version__`` is the installed one."""

from __future__ import annotations

import builtins
import importlib.metadata
import inspect
import pkgutil
import re
from pathlib import Path

import numpy as np

import chunkflow
from chunkflow import errors, version


def test_all_is_sorted_functions_and_classes() -> None:
    names = chunkflow.__all__
    # isort's order, as ruff's RUF022 keeps it: constants, classes, then functions.
    assert names == sorted(names, key=lambda n: (not n[:1].isupper(), n))
    assert len(set(names)) == len(names)
    for name in names:
        obj = getattr(chunkflow, name)
        assert inspect.isclass(obj) or inspect.isroutine(obj), name
    assert "config" not in names and "reductions" not in names


def test_a_star_import_hides_no_builtin_but_open() -> None:
    shadowed = {n for n in chunkflow.__all__ if hasattr(builtins, n)}
    assert shadowed == {"open"}  # zarr-python's chunkflow.open, as zarr.open
    namespace: dict[str, object] = {}
    exec("from chunkflow import *", namespace)
    assert namespace["MemoryPlanError"] is errors.MemoryPlanError
    assert "sum" not in namespace and "reductions" not in namespace


def test_errors_and_the_job_status_users_need_are_exported() -> None:
    caught = ("ChunkflowError", "MemoryPlanError", "JobMismatchError", "JobTokenError",
              "IncompleteJobWarning", "CastingError", "OutputIsSourceError",
              "TransactionError", "TransactionConflictError", "ArrayNotFoundError",
              "GroupNotFoundError", "NodeNotFoundError", "ContainsArrayError",
              "ContainsGroupError", "ReadOnlyError", "ChunkDecodeError", "StoreRequestError",
              "IncompleteListingError", "LockTimeoutError", "ValuesChangedError",
              "ForeignContentError")
    for name in caught:
        assert name in chunkflow.__all__
        assert getattr(chunkflow, name) is getattr(errors, name)
    # The top level exports no error that errors.py does not define.
    exported = {n for n in chunkflow.__all__ if n.endswith(("Error", "Warning"))}
    assert exported == set(caught)
    assert chunkflow.job_status is chunkflow.jobs.job_status


def test_reductions_is_a_module_without_private_helpers() -> None:
    from chunkflow.reductions import max, mean, sum

    z = chunkflow.array(np.arange(12, dtype="u2").reshape(3, 4), chunks=(2, 2))
    assert (float(mean(z)), int(sum(z)), int(max(z))) == (5.5, 66, 11)
    public = set(chunkflow.reductions.__all__)
    assert not public & {"memory_budget", "reduction_input", "reduction_block_bytes"}
    assert not public & {"sum", "min", "max"}  # importable by name, never by a star
    namespace: dict[str, object] = {}
    exec("from chunkflow.reductions import *", namespace)
    assert "mean" in namespace and "sum" not in namespace


def test_every_error_class_lives_in_errors() -> None:
    elsewhere = []
    for info in pkgutil.walk_packages(chunkflow.__path__, "chunkflow."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseException) and cls.__module__ == info.name != "chunkflow.errors":
                elsewhere.append(f"{info.name}.{cls.__name__}")
    assert elsewhere == []
    # ...and stay importable where they were defined before.
    from chunkflow.cli.cleanup import RemovedOutputError
    from chunkflow.cli.errors import MissingDependencyError, UsageError
    from chunkflow.cli.nodes import OpenError
    from chunkflow.xarray import DimensionNamesError

    for cls in (RemovedOutputError, MissingDependencyError, UsageError, OpenError,
                DimensionNamesError):
        assert getattr(errors, cls.__name__) is cls


def test_version_is_the_installed_one_or_the_checkout_s() -> None:
    assert chunkflow.__version__ == importlib.metadata.version("chunkflow-zarr")
    pyproject = Path(chunkflow.__file__).resolve().parents[1] / "pyproject.toml"
    written = re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text(), re.MULTILINE)
    assert written is not None and version._checkout_version() == written.group(1)
