"""chunkflow.store and to_chunkflow against numpy assignment.

A dask array of random blocks (unaligned with the output's chunks) goes into a random
selection of a stored array: the array then holds what ``np.copyto(data[selection],
values, casting=...)`` leaves (where the cast is defined: not NaN, inf or out of range
into integers), or both refuse (numpy's ``TypeError`` for a cast the rule
forbids) and the array is unchanged. ``to_chunkflow`` holds ``values.astype(dtype)``.

A chunk equal to the fill value is not stored (``write_empty_chunks=False``), so a chunk
of NaN reads back as the fill value's NaN: NaN payloads are compared as NaN.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import chunkflow
from chunkflow.testing import strategies as cst
from tests.differential.conftest import budget
from tests.differential.test_rechunk import defined_casts

CASTINGS = ("same_kind", "unsafe", "safe", "no")


@dataclass(frozen=True)
class StoreCase:
    """One store: the output, where in it, the values and their dask blocks."""

    spec: cst.StoredArraySpec
    selection: tuple[slice, ...] | None
    values: np.ndarray
    blocks: tuple[tuple[int, ...], ...]
    casting: str = "same_kind"
    scheduler: str = "sync"


def _partition(draw: st.DrawFn, n: int) -> tuple[int, ...]:
    """``n`` cut into blocks of random sizes (dask's chunks along one axis)."""
    if n == 0:
        return (0,)
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=min(n - 1, 4)))) if n > 1 else []
    edges = [0, *cuts, n]
    return tuple(b - a for a, b in zip(edges, edges[1:]))


def _selection(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[slice, ...] | None:
    """Unit-step slices as users write them: open ends, negative and past-the-end bounds."""
    if draw(st.booleans()):
        return None
    bound = st.none() | st.integers(-8, 10)
    entries = tuple(slice(draw(bound), draw(bound)) for _ in shape)
    return entries[:draw(st.integers(0, len(shape)))] if draw(st.booleans()) else entries


@st.composite
def store_cases(draw: st.DrawFn, *, processes: bool = False) -> StoreCase:
    spec = draw(cst.stored_arrays(dtypes=cst.dtypes(kinds="biufc", byteorder="any"),
                                  shapes=cst.shapes(min_dims=1, max_dims=3)))
    selection = _selection(draw, spec.data.shape)
    shape = spec.data[selection if selection is not None else ...].shape
    values = draw(cst.arrays(cst.dtypes(kinds="biufc", byteorder="any")
                             if draw(st.booleans()) else st.just(spec.data.dtype), shape))
    blocks = tuple(_partition(draw, n) for n in shape)
    return StoreCase(spec, selection, values, blocks, draw(st.sampled_from(CASTINGS)),
                     "processes" if processes else draw(cst.schedulers(processes=False)))


def _same(got: np.ndarray, want: np.ndarray, defined: np.ndarray | None = None) -> None:
    assert got.shape == want.shape
    assert got.dtype.newbyteorder("=") == want.dtype.newbyteorder("=")
    want = want.astype(got.dtype)
    if defined is not None:
        got, want = got[defined], want[defined]
    if want.dtype.kind in "fc":
        nan, got_nan = np.isnan(want), np.isnan(got)  # complex: either part
        np.testing.assert_array_equal(got_nan, nan)
        got, want = got[~nan], want[~nan]
    np.testing.assert_array_equal(np.ascontiguousarray(got).view(np.uint8),
                                  np.ascontiguousarray(want).view(np.uint8))


def _check(case: StoreCase, folder: str | None = None) -> None:
    target = case.spec.create(f"{folder}/out.zarr" if folder else None)
    before = target[...]
    want = before.copy()
    where = case.selection if case.selection is not None else ...
    defined = np.ones(want.shape, bool)
    defined[where] = defined_casts(case.values, target.dtype)
    source = da.from_array(case.values, chunks=case.blocks)
    try:
        with np.errstate(invalid="ignore", over="ignore"):
            np.copyto(want[where], case.values, casting=case.casting)
    except TypeError:
        with pytest.raises(TypeError):
            chunkflow.store(source, target, case.selection, casting=case.casting,
                            scheduler=case.scheduler)
        _same(target[...], before)  # nothing written
        return
    with np.errstate(invalid="ignore", over="ignore"):
        chunkflow.store(source, target, case.selection, casting=case.casting,
                        scheduler=case.scheduler)
    _same(target[...], want, defined)
    _same(chunkflow.open_array(target.store, path=target.path, mode="r")[...], want, defined)


@budget(80)
@given(case=store_cases())
# Blocks of 3 over chunks of 4, into a selection that starts and ends inside chunks.
@example(case=StoreCase(cst.StoredArraySpec(np.zeros((9, 10), "i2"), (4, 4)),
                        (slice(1, 8), slice(-9, None)),
                        np.arange(63, dtype="i2").reshape(7, 9), ((3, 3, 1), (3, 3, 3))))
# Blocks of a big-endian source assembled into one write block were made native, and
# casting="no" refused them.
@example(case=StoreCase(cst.StoredArraySpec(np.zeros(4, ">i2"), (2,)), None,
                        np.arange(4, dtype=">i2"), ((1, 1, 1, 1),), casting="no"))
def test_store_equals_numpy_assignment(case: StoreCase) -> None:
    _check(case)


@budget(1)
@given(case=store_cases(processes=True))
def test_store_on_processes_equals_numpy_assignment(case: StoreCase) -> None:
    with tempfile.TemporaryDirectory() as folder:
        _check(case, folder)


@budget(40)
@given(values=cst.arrays(cst.dtypes(kinds="biufc", byteorder="any"),
                         cst.shapes(min_dims=1, max_dims=3)),
       data=st.data())
def test_to_chunkflow_equals_astype(values: np.ndarray, data: st.DataObject) -> None:
    blocks = tuple(_partition(data.draw, n) for n in values.shape)
    chunks = data.draw(st.none() | cst.chunk_shapes(values.shape))
    dtype = data.draw(st.none() | cst.dtypes(kinds="biufc"))
    casting = data.draw(st.sampled_from(CASTINGS))
    zarr_format = data.draw(cst.zarr_formats())
    source = da.from_array(values, chunks=blocks)
    out = chunkflow.MemoryStore()
    kwargs: dict[str, Any] = {"dtype": dtype} if dtype is not None else {}
    target_dtype = np.dtype(dtype) if dtype is not None else values.dtype
    if not np.can_cast(values.dtype, target_dtype, casting):
        with pytest.raises(TypeError):
            chunkflow.to_chunkflow(source, out, chunks=chunks, casting=casting,
                                   zarr_format=zarr_format, **kwargs)
        assert not list(out.list_prefix(""))  # nothing created
        return
    with np.errstate(invalid="ignore", over="ignore"):
        z = chunkflow.to_chunkflow(source, out, chunks=chunks, casting=casting,
                                   zarr_format=zarr_format, **kwargs)
        want = values.astype(target_dtype)
    if chunks is not None:
        assert z.chunks == chunks
    _same(chunkflow.open_array(out, mode="r")[...], want, defined_casts(values, target_dtype))
