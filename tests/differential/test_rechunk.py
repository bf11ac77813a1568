"""chunkflow.rechunk against the source's values (numpy's ``astype`` for a new dtype,
asked for with ``casting="unsafe"``: the casting rule itself, whose default refuses a
value that changes, is :mod:`tests.differential.test_casting`'s).

Random arrays of every dtype go to random chunks, shards, formats and dtypes, over a
random region, under a random ``max_memory``: from budgets that fit one pass, down to
ones that force the intermediate array, and below what any plan needs. The copy equals
``data[region].astype(dtype)`` bit for bit where that cast is defined (not NaN, inf
or out of range into integers), or the job is refused before anything is created,
and the refusal names a ``max_memory`` (or ``temp=``) with which the same job runs.

A chunk of NaN equal to a NaN fill value is not stored (zarr-python's rule too), so it
reads back as the fill value: NaN payloads are compared as NaN where a chunk of the
output (or the intermediate array) can be all NaN.
"""

from __future__ import annotations

import math
import re
import tempfile
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pytest
from dask.utils import parse_bytes
from hypothesis import event, example, given
from hypothesis import strategies as st

import chunkflow
from chunkflow.errors import MemoryPlanError
from chunkflow.graph.rechunk import prepare_rechunk
from chunkflow.testing import strategies as cst
from tests.differential.conftest import budget

#: The dtypes an output may be cast to (any numeric source casts to them by ``astype``).
CASTS = ("?", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8", "c8", "c16")


@dataclass(frozen=True)
class RechunkCase:
    """One rechunk call."""

    spec: cst.StoredArraySpec
    chunks: Any  # as rechunk takes them: a tuple, an int, -1 entries or a dict
    region: tuple[slice, ...] | None = None
    shards: tuple[int, ...] | None = None
    zarr_format: int | None = None
    dtype: str | None = None
    # Bytes, or (a float in [0, 1)) where between the least budget of any plan and
    # that of one pass: budgets that force the intermediate array.
    max_memory: int | float = 2**30
    temp: bool = True
    scheduler: str = "sync"

    @property
    def shape(self) -> tuple[int, ...]:
        region = self.region or (slice(None),) * self.spec.data.ndim
        return self.spec.data[region].shape


def _chunks_spelling(draw: st.DrawFn, chunks: tuple[int, ...], shape: tuple[int, ...]) -> Any:
    """``chunks`` as a tuple, with ``-1`` for whole axes, as an int or as a dict."""
    form = draw(st.sampled_from(["tuple", "whole", "int", "dict"]))
    if form == "whole":
        return tuple(-1 if c == max(n, 1) else c for c, n in zip(chunks, shape))
    if form == "int" and len(set(chunks)) == 1:
        return chunks[0]
    if form == "dict":
        return dict(enumerate(chunks))
    return chunks


def _region(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[slice, ...]:
    bounds = [sorted(draw(st.lists(st.integers(0, n), min_size=2, max_size=2))) for n in shape]
    return tuple(slice(lo, hi) for lo, hi in bounds)


def _across(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Source and target chunks across each other (rows to columns): one pass must
    hold the whole array, two passes hold a few rows or columns."""
    ndim = len(shape)
    thin = draw(st.integers(0, ndim - 1))
    wide = draw(st.sampled_from([a for a in range(ndim) if a != thin]))
    source = tuple(draw(st.integers(1, 2)) if a == thin else n for a, n in enumerate(shape))
    target = tuple(draw(st.integers(1, 2)) if a == wide else n for a, n in enumerate(shape))
    return source, target


@st.composite
def rechunk_cases(draw: st.DrawFn, *, processes: bool = False,
                  two_passes: bool = False) -> RechunkCase:
    """A rechunk job: source, target layout and dtype, region, budget, scheduler
    (``two_passes``: chunks across each other, and a budget between the least any plan
    needs and what one pass needs)."""
    shapes = (cst.shapes(min_dims=2, max_dims=3).map(lambda s: tuple(max(n, 3) for n in s))
              if two_passes else cst.shapes(min_dims=1, max_dims=3))
    spec = draw(cst.stored_arrays(dtypes=cst.dtypes(kinds="biufc", byteorder="any"),
                                  shapes=shapes))
    data = spec.data
    if two_passes:
        source_chunks, chunks = _across(draw, data.shape)
        spec = replace(spec, chunks=source_chunks, shards=None)
    region = _region(draw, data.shape) if draw(st.booleans()) else None
    shape = data[region].shape if region is not None else data.shape
    if not two_passes:
        chunks = draw(cst.chunk_shapes(shape))
    zarr_format = draw(st.sampled_from([None, 2, 3]))
    shards = None
    if zarr_format != 2 and draw(st.booleans()):
        shards = draw(cst.shard_shapes(chunks))
    dtype = draw(st.none() | st.sampled_from(CASTS))
    # Budgets around the array's size: from a few bytes (refused) to plenty (one pass).
    nbytes = max(math.prod(shape), 1) * 16
    between = st.floats(0, 1, exclude_max=True)
    max_memory = draw(between if two_passes else (
        st.integers(0, 24).map(lambda k: max(1, int(nbytes * 2 ** (k / 2 - 6)))) | between))
    temp = draw(st.booleans()) or isinstance(max_memory, float)
    return RechunkCase(spec, _chunks_spelling(draw, chunks, shape), region, shards, zarr_format,
                       dtype, max_memory, temp=temp,
                       scheduler="processes" if processes else draw(cst.schedulers(processes=False)))


def defined_casts(values: np.ndarray, dtype: np.dtype | str) -> np.ndarray:
    """Where ``values.astype(dtype)`` is defined: a float (or complex) that is NaN, inf
    or out of an integer type's range casts to whatever the hardware gives, and numpy's
    vectorized and scalar loops give different values (numpy warns "invalid value
    encountered in cast")."""
    dtype = np.dtype(dtype)
    if values.dtype.kind not in "fc" or dtype.kind not in "iu":
        return np.ones(values.shape, bool)
    real = values.real.astype(np.float64) if values.dtype.kind == "c" else values.astype(np.float64)
    info = np.iinfo(dtype)
    with np.errstate(invalid="ignore"):
        return (np.isfinite(real) & (real > float(info.min) - 1) & (real < float(info.max) + 1))


def _expected(case: RechunkCase, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The output's values, and where they are defined (see :func:`defined_casts`)."""
    part = data[case.region] if case.region is not None else data
    if case.dtype is None:
        return part, np.ones(part.shape, bool)
    with np.errstate(invalid="ignore", over="ignore"):
        return part.astype(case.dtype), defined_casts(part, case.dtype)


def _same(got: np.ndarray, want: np.ndarray, defined: np.ndarray | None = None) -> None:
    # A Zarr v3 array's byte order is its bytes codec's: it opens in that order.
    assert got.dtype.newbyteorder("=") == want.dtype.newbyteorder("=")
    assert got.shape == want.shape
    want = want.astype(got.dtype)
    if defined is not None:
        got, want = got[defined], want[defined]
    if want.dtype.kind in "fc":
        # NaN payloads: a chunk of NaN equal to a NaN fill value reads as the fill value.
        nan = np.isnan(want) if want.dtype.kind == "f" else np.isnan(want.real) | np.isnan(want.imag)
        np.testing.assert_array_equal(np.isnan(got) if want.dtype.kind == "f"
                                      else np.isnan(got.real) | np.isnan(got.imag), nan)
        got, want = got[~nan], want[~nan]
    np.testing.assert_array_equal(np.ascontiguousarray(got).view(np.uint8),
                                  np.ascontiguousarray(want).view(np.uint8))


def _call(case: RechunkCase, source: chunkflow.Array, out: Any, temp: Any,
          max_memory: int | float | None = None) -> chunkflow.Array:
    return chunkflow.rechunk(source, case.chunks, out, max_memory=max_memory or case.max_memory,
                             temp=temp if case.temp else None, shards=case.shards,
                             zarr_format=case.zarr_format, dtype=case.dtype, casting="unsafe",
                             selection=case.region, scheduler=case.scheduler)


def _empty(store: chunkflow.MemoryStore) -> bool:
    return not list(store.list_prefix(""))


def _suggestion(message: str) -> tuple[int, bool]:
    """The max_memory a refusal says would fit, and whether that needs temp=."""
    smallest = re.search(r"smallest tasks \((.*?)\) need about .*? max_memory=(.+?) would fit",
                         message)
    if smallest:
        return parse_bytes(smallest.group(2)), "intermediate" in smallest.group(1)
    one_pass = re.search(r"one pass .*? max_memory=(.+?), more than", message)
    assert one_pass, message
    return parse_bytes(one_pass.group(1)), False


def _between(case: RechunkCase, source: chunkflow.Array) -> int:
    """The budget ``case.max_memory`` (a fraction) of the way from the least any plan
    needs to what one pass needs, as a refusal names them."""
    try:
        prepare_rechunk(source, case.chunks, max_memory=1, temp="unused", shards=case.shards,
                        zarr_format=case.zarr_format, dtype=case.dtype, selection=case.region)
    except MemoryPlanError as refusal:
        least, _ = _suggestion(str(refusal))
        one_pass = re.search(r"one pass .*? max_memory=(.+?);", str(refusal))
        assert one_pass, str(refusal)
        return least + int(case.max_memory * max(0, parse_bytes(one_pass.group(1)) - least))
    return 1  # an empty array: nothing to hold


def _check(case: RechunkCase, folder: str | None = None) -> None:
    source = case.spec.create(f"{folder}/source.zarr" if folder else None)
    if isinstance(case.max_memory, float):
        case = replace(case, max_memory=_between(case, source))
    data = source[...]  # what the array holds (see the module's note on NaN)
    want, defined = _expected(case, data)

    def stores(tag: str) -> tuple[Any, Any]:
        if folder:
            return f"{folder}/out-{tag}.zarr", f"{folder}/temp-{tag}"
        return chunkflow.MemoryStore(), chunkflow.MemoryStore()

    out, temp = stores("first")
    try:
        result = _call(case, source, out, temp)
    except MemoryPlanError as refusal:
        event("refused")
        if not folder:
            assert _empty(out) and _empty(temp)  # a refusal creates nothing
        # The same job runs with what the refusal names.
        least, needs_temp = _suggestion(str(refusal))
        assert least > case.max_memory or (needs_temp and not case.temp), str(refusal)
        case = replace(case, temp=True) if needs_temp or "pass temp=" in str(refusal) else case
        out, temp = stores("again")
        max_memory = least if least > case.max_memory else case.max_memory
        result = _call(case, source, out, temp, max_memory=max_memory)
    else:
        max_memory = case.max_memory
    plan = prepare_rechunk(source, case.chunks, max_memory=max_memory, temp=temp,
                           shards=case.shards, zarr_format=case.zarr_format, dtype=case.dtype,
                           selection=case.region, scheduler=case.scheduler)
    event("two passes" if plan.choice.intermediate_chunks is not None else "one pass")
    assert result.shape == want.shape
    expected_chunks = tuple(c for c in result.chunks)  # inner chunks with shards
    assert all(c >= 1 for c in expected_chunks)
    if case.shards is not None:
        assert result.shards == case.shards
    _same(chunkflow.open_array(out, mode="r")[...], want, defined)
    if not folder:
        assert not [k for k in temp.list_prefix("") if not k.endswith("zarr.json")]


@budget(80)
@given(case=rechunk_cases())
# A budget that forces the intermediate array, across a region that cuts source chunks.
@example(case=RechunkCase(cst.StoredArraySpec(np.arange(96, dtype="u2").reshape(8, 12), (1, 12)),
                          (8, 1), region=(slice(1, 8), slice(2, 11)), dtype="f4",
                          max_memory=400))
# An empty array needs no memory (the plan divided by its zero-length chunks).
@example(case=RechunkCase(cst.StoredArraySpec(np.zeros((0, 2), "?"), (1, 1)), (1, 1),
                          max_memory=1, temp=False))
# A refusal named max_memory=0.97 kiB (format_bytes rounds 1000 bytes down to 993),
# which was refused again.
@example(case=RechunkCase(cst.StoredArraySpec(np.zeros((3, 2, 6), "i4"), (3, 4, 6)), (1, 1, 1),
                          zarr_format=2, max_memory=9, temp=False))
# -inf into uint32: undefined (numpy's vectorized cast gives 2**31, its scalar one 0).
@example(case=RechunkCase(cst.StoredArraySpec(np.full((2, 2), -np.inf, "f4"), (1, 1),
                                              zarr_format=2), (1, 1), dtype="u4",
                          max_memory=1, temp=False))
def test_rechunk_equals_the_source_values(case: RechunkCase) -> None:
    _check(case)


@budget(25)
@given(case=rechunk_cases(two_passes=True))
def test_rechunk_through_the_intermediate_array_equals_the_source_values(
        case: RechunkCase) -> None:
    _check(case)


@budget(1)
@given(case=rechunk_cases(processes=True))
def test_rechunk_on_processes_equals_the_source_values(case: RechunkCase) -> None:
    with tempfile.TemporaryDirectory() as folder:
        _check(case, folder)


@budget(20)
@given(spec=cst.stored_arrays(dtypes=cst.dtypes(kinds="iuf"),
                              shapes=cst.shapes(min_dims=1, max_dims=3, zero_sides=False)),
       data=st.data())
def test_a_budget_below_every_plan_is_refused_before_anything_is_created(
        spec: cst.StoredArraySpec, data: st.DataObject) -> None:
    source = spec.create()
    chunks = data.draw(cst.chunk_shapes(source.shape))
    out, temp = chunkflow.MemoryStore(), chunkflow.MemoryStore()
    with pytest.raises(MemoryPlanError, match="would fit"):
        chunkflow.rechunk(source, chunks, out, max_memory=1, temp=temp)
    assert _empty(out) and _empty(temp)
