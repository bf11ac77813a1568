"""pytest plugin: zarr-python 3's ``tests/test_indexing.py`` on chunkflow arrays.

Loaded with ``-p benchmarks.zarr_suites.indexing_plugin`` by
:mod:`benchmarks.zarr_suites.indexing`. With the environment variable
``CHUNKFLOW_ZARR_SUITE=chunkflow`` the functions the tests create arrays and groups
with (``zarr.create_array``, ``zarr.array``, ``zarr.create``, ``zarr.open_group``,
``zarr.create_group`` and their siblings) make chunkflow arrays and groups instead, on
the same zarr-python store: the module's ``store`` fixture (a ``StorePath`` over a
``MemoryStore``, or a ``LocalStore``), which chunkflow opens through its adapter of
zarr-python stores. A ``StorePath`` is read as its store plus a path inside it.
Everything the tests then do (``z[...]``, ``get_*_selection``, ``oindex``,
``vindex``, ``blocks``, ``out=`` buffers) runs on chunkflow.

The tests that inspect zarr-python itself (its private functions and objects, its
async API) or that assert zarr-python's meaning of ``z[...]`` where numpy's differs
are deselected in the chunkflow run, each with its reason (:data:`DESELECTED`).

The tests marked ``xfail`` in zarr-python because zarr-python 3 lacks a feature that
chunkflow has (structured ``fields``; :data:`LIFTED_XFAILS`) lose the mark in the
chunkflow run: they must pass for real. Without the variable (or ``=zarr``) nothing
is changed: the reference run.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from benchmarks.zarr_suites.baseline import junit_id

#: The environment variable choosing what the tests' arrays are ("zarr" or "chunkflow").
MODE_VARIABLE = "CHUNKFLOW_ZARR_SUITE"

#: The environment variable naming a file for the selected tests' ids (see
#: :func:`_write_collected`).
COLLECTED_VARIABLE = "CHUNKFLOW_ZARR_SUITE_COLLECTED"

#: Functions of ``zarr`` replaced by chunkflow's in the chunkflow run.
REDIRECTED = ("array", "create", "create_array", "create_group", "empty", "full", "group",
              "ones", "open", "open_array", "open_group", "zeros")

_HELPERS = ("tests zarr-python's own indexing helpers (zarr.core.indexing), on no array: "
            "nothing of chunkflow runs")
_NUMPY = ("asserts zarr-python's meaning of z[...] where numpy's differs; chunkflow follows "
          "numpy (issue 26): ")

#: Tests deselected in the chunkflow run: (test id pattern, why).
DESELECTED: tuple[tuple[str, str], ...] = (
    (r"::test_normalize_integer_selection$", _HELPERS),
    (r"::test_replace_ellipsis$", _HELPERS),
    (r"::test_slice_selection_uints$", _HELPERS),
    (r"::test_iter_grid(_invalid)?(\[|$)", _HELPERS),
    (r"::test_iter_regions\[", _HELPERS),
    (r"::test_iter_chunk_regions$",
     "calls the private zarr-python method Array._iter_chunk_regions"),
    (r"TestAsync::", "uses zarr-python's AsyncArray (Array._async_array) and its async "
                       "oindex/vindex getitem"),
    (r"::test_get_block_selection_1d$",
     "reads zarr-python's metadata object (z.metadata.chunk_grid.get_nchunks); chunkflow's "
     "metadata has the documents' fields, not zarr-python's classes (blocks are tested by "
     "test_get_block_selection_2d and test_set_block_selection_*)"),
    (r"::test_vectorized_indexing_incompatible_shape\[",
     "asserts zarr-python's message text ('Attempting to set'); chunkflow raises "
     "ShapeMismatchError, a ValueError too, in its own words"),
    (r"::test_fancy_indexing_doesnt_mix_with_implicit_slicing$",
     _NUMPY + "z[[1, 2, 3], [1, 2, 3]] on a 3-d array and z[..., [1, 2, 3]] are numpy "
              "selections (shapes (3, 5) and (5, 5, 3)), which zarr-python refuses"),
    (r"::test_orthogonal_bool_indexing_like_numpy_ix\[",
     _NUMPY + "z[mask0, mask1] is numpy's a[mask0, mask1] (the masks' nonzero() arrays "
              "broadcast together), an IndexError for these masks, where zarr-python "
              "gives np.ix_'s outer product"),
)

#: zarr-python ``xfail`` marks lifted in the chunkflow run: (test id pattern, why). The
#: 0-d structured parameters of ``test_(get|set)_basic_selection_0d`` keep theirs: they
#: compare a tuple with a structured item, which numpy itself refuses (TypeError).
LIFTED_XFAILS: tuple[tuple[str, str], ...] = (
    (r"test_(get|set)_selections_with_fields$",
     "structured fields: zarr-python 3 has none, chunkflow has zarr-python 2's"),
)

#: Entries of zarr-python's lists of refused selections that numpy accepts, and that
#: chunkflow's ``z[...]`` therefore takes (issue 26): taken out of the lists in the
#: chunkflow run, so those tests check the rest. (list name, what, why)
NUMPY_EXTRAS = (
    ("basic_selections_1d_bad, basic_selections_2d_bad", "negative slice steps",
     "numpy's; chunkflow reads them in every selection method (a numpy-compatible extra)"),
    ("basic_selections_1d_bad, basic_selections_2d_bad", "None (np.newaxis)",
     "numpy's z[None] adds a dimension; get_basic_selection and oindex still refuse it"),
)


def is_numpy_extra(selection: object) -> bool:
    """Whether ``selection`` holds None or a slice with a negative step."""
    entries = selection if isinstance(selection, tuple) else (selection,)
    return any(e is None or (isinstance(e, slice) and e.step is not None and e.step < 0)
               for e in entries)


def _drop_numpy_extras(module: Any) -> None:
    for name in ("basic_selections_1d_bad", "basic_selections_2d_bad"):
        refused = getattr(module, name, None)
        if isinstance(refused, list):
            refused[:] = [s for s in refused if not is_numpy_extra(s)]


def pytest_configure(config: Any) -> None:
    mode = os.environ.get(MODE_VARIABLE, "zarr")
    if mode not in ("zarr", "chunkflow"):
        raise ValueError(f"{MODE_VARIABLE} must be 'zarr' or 'chunkflow', got {mode!r}")
    if mode == "chunkflow":
        _redirect()


def _redirect() -> None:
    import zarr

    import chunkflow

    for name in REDIRECTED:
        setattr(zarr, name, _through_chunkflow(getattr(chunkflow, name)))


def _through_chunkflow(function: Any) -> Any:
    """``function`` with a zarr-python ``StorePath`` store read as store plus path."""

    def call(*args: Any, **kwargs: Any) -> Any:
        if args and _is_store_path(args[0]) and "store" not in kwargs:
            kwargs["store"], args = args[0], args[1:]
        store = kwargs.get("store")
        if _is_store_path(store):
            kwargs["store"] = store.store
            key = "name" if function.__name__ == "create_array" else "path"
            inner = kwargs.get(key)
            joined = "/".join(p for p in (store.path, inner) if p)
            if joined:
                kwargs[key] = joined
        return function(*args, **kwargs)

    call.__name__ = function.__name__
    call.__doc__ = f"chunkflow.{function.__name__}, for the zarr-python tests"
    return call


def _is_store_path(value: object) -> bool:
    from zarr.storage import StorePath

    return isinstance(value, StorePath)


def deselection_reason(test_id: str) -> str | None:
    """Why ``test_id`` is deselected in the chunkflow run (``None``: it is not)."""
    return next((why for pattern, why in DESELECTED if re.search(pattern, test_id)), None)


def lifted_xfail(test_id: str) -> str | None:
    """Why ``test_id`` loses zarr-python's xfail mark in the chunkflow run (``None``: it
    does not): such a test must pass there."""
    return next((why for pattern, why in LIFTED_XFAILS if re.search(pattern, test_id)), None)


@pytest.hookimpl(trylast=True)  # after -k: what is written is what was selected
def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    _write_collected(items)
    if os.environ.get(MODE_VARIABLE, "zarr") != "chunkflow":
        return
    kept, dropped = [], []
    for module in {getattr(item, "module", None) for item in items} - {None}:
        _drop_numpy_extras(module)
    for item in items:
        (dropped if deselection_reason(item.nodeid) else kept).append(item)
        if lifted_xfail(item.nodeid):
            item.own_markers[:] = [m for m in item.own_markers if m.name != "xfail"]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _write_collected(items: list[Any]) -> None:
    """The selected tests' ids, as junit names them, to the file named by
    :data:`COLLECTED_VARIABLE` (when set): the chunkflow run's junit file lacks the
    deselected ones, and the comparison with a baseline needs them all."""
    path = os.environ.get(COLLECTED_VARIABLE)
    if path:
        Path(path).write_text(json.dumps(sorted(junit_id(item.nodeid) for item in items)))


def pytest_report_header(config: Any) -> str:
    return f"zarr-python's indexing tests on {os.environ.get(MODE_VARIABLE, 'zarr')} arrays"
