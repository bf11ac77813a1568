"""``percentile``, ``quantile``, ``median`` and their ``nan*`` variants against numpy.

chunkflow claims numpy's answer bit for bit: the same bits (``-0.0`` included), the same
dtype (numpy's weak promotion of a Python ``q`` included), a scalar where numpy gives
one, NaN where numpy gives NaN (its payload aside: numpy returns whichever NaN its
partition puts last), and numpy's refusals (an error of the same builtin class). One
exception, by position: where the data holds zeros of both signs, numpy's partition
leaves either at a zero's rank, so a zero result is compared by value.
"""

from __future__ import annotations

import math
import tempfile
import warnings
from dataclasses import dataclass
from typing import Any

import dask
import numpy as np
import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st

import chunkflow
from chunkflow.errors import MemoryPlanError
from chunkflow.graph.reductions.plan import task_bytes_per_block_byte
from chunkflow.testing import strategies as cst
from chunkflow.testing.strategies import StoredArraySpec
from tests.differential.conftest import budget
from tests.differential.pools import process_pool

FUNCTIONS = ("percentile", "nanpercentile", "quantile", "nanquantile", "median", "nanmedian")


@dataclass(frozen=True)
class Case:
    """One call: the array, the function, ``q`` and the keywords."""

    spec: StoredArraySpec
    function: str = "quantile"
    q: Any = 0.5
    selection: Any = Ellipsis
    max_memory: int | None = None
    source: str = "stored"  # or "numpy", "dask"
    blocks: Any = None

    def args(self) -> tuple[Any, ...]:
        return () if self.function.endswith("median") else (self.q,)


def q_values(function: str) -> st.SearchStrategy[Any]:
    """``q`` in every form numpy takes: Python numbers (weak), numpy scalars, lists,
    arrays of 0 to 2 dimensions; the ends and the middle often; now and then out of
    range or NaN (numpy's ValueError)."""
    top = 100 if "percentile" in function else 1
    inside = st.one_of(st.sampled_from([0, top, top / 2, top / 4, top / 3]),
                       st.floats(0, top), st.integers(0, top))
    wrong = st.sampled_from([-0.5, top + 1, math.nan])
    scalar = st.one_of(inside, inside, inside, wrong)
    numpy_scalar = st.tuples(scalar, st.sampled_from(["f2", "f4", "f8"])).map(
        lambda p: np.dtype(p[1]).type(p[0]))
    many = st.lists(inside, min_size=1, max_size=5)
    array = st.tuples(many, st.sampled_from(["f4", "f8", "i8", "u1"]), st.booleans()).map(
        lambda p: _as_array(*p))
    return st.one_of(scalar, numpy_scalar, many, array)


def _as_array(values: list[Any], dtype: str, square: bool) -> np.ndarray:
    if dtype[0] in "iu":
        values = [int(v) for v in values]
    array = np.array(values).astype(dtype)
    return array.reshape(len(values), 1) if square else array


@st.composite
def cases(draw: st.DrawFn) -> Case:
    # Floats half the time (they round, tie at -0.0 and hold NaN), any kind else.
    dtypes = st.one_of(cst.dtypes(kinds="f", byteorder="any"),
                       cst.dtypes(kinds="biuf", byteorder="any"))
    # Corner values half the time; else ordinary ones (ties and roundings rather than NaN).
    shapes = st.one_of(cst.shapes(), cst.shapes(min_dims=1, zero_sides=False))
    values = st.one_of(cst.arrays(dtypes, shapes), cst.ordinary_arrays(dtypes, shapes))
    spec = draw(cst.stored_arrays(data=values))
    function = draw(st.sampled_from(FUNCTIONS))
    selection = draw(st.one_of(st.just(Ellipsis),
                               cst.basic_selections(spec.data.shape, in_bounds=True)))
    max_memory = draw(st.sampled_from([None, None, 2**12, 2**14]))
    # (Blocks of several chunks with a budget: refusals too many to tell apart.)
    blocks = draw(cst.block_arguments(spec.data.shape)) if max_memory is None else None
    return Case(spec, function, draw(q_values(function)), selection, max_memory,
                draw(st.sampled_from(["stored", "stored", "numpy", "dask"])), blocks)


def builtin_classes(error: BaseException) -> tuple[type, ...]:
    return tuple(c for c in type(error).__mro__
                 if c.__module__ == "builtins" and c not in (BaseException, Exception, object))


def assert_same(got: Any, expected: Any, what: str, zero_sign: bool = True) -> None:
    """numpy's answer bit for bit (NaN payloads aside; the sign of a zero only when
    ``zero_sign``), same type, dtype and shape."""
    assert type(got) is type(expected), (what, type(got), type(expected))
    got_a, expected_a = np.asarray(got), np.asarray(expected)
    assert got_a.dtype == expected_a.dtype and got_a.shape == expected_a.shape, (
        what, got_a.dtype, got_a.shape, expected_a.dtype, expected_a.shape)
    if expected_a.dtype.kind == "f":
        nan = np.isnan(expected_a)
        np.testing.assert_array_equal(np.isnan(got_a), nan, err_msg=what)
        bits = np.dtype(f"u{expected_a.dtype.itemsize}")
        exact = ~nan if zero_sign else ~nan & (expected_a != 0)
        np.testing.assert_array_equal(got_a[exact].view(bits), expected_a[exact].view(bits),
                                      err_msg=f"{what}: {got_a[exact]} != {expected_a[exact]}")
        np.testing.assert_array_equal(got_a[~nan], expected_a[~nan], err_msg=what)
    else:
        np.testing.assert_array_equal(got_a, expected_a, err_msg=what)


def _mixed_zeros(values: np.ndarray) -> bool:
    """Whether ``values`` hold zeros of both signs: numpy's partition then leaves either
    at a zero's rank, by position (chunkflow's order puts -0.0 first)."""
    if values.dtype.kind != "f":
        return False
    zeros = values[values == 0]
    return bool(np.signbit(zeros).any() and not np.signbit(zeros).all())


def _source(case: Case, store: Any = None) -> Any:
    if case.source == "numpy":
        return case.spec.data
    z = case.spec.create(store)
    # (The selection is chunkflow's plan, not dask's slicing: dask 2026.8 slices
    # [-7:3:-3] of 5 values to one value, numpy to none.)
    return chunkflow.to_dask(z, case.selection) if case.source == "dask" else z


def _may_refuse(case: Case, error: MemoryPlanError) -> None:
    """A budget refusal is right only when one chunk (shard) and its work exceed it."""
    data = case.spec.data
    unit = case.spec.shards or case.spec.chunks
    need = math.prod(unit) * data.itemsize * task_bytes_per_block_byte(data.itemsize)
    assert case.max_memory is not None and need > case.max_memory, error


def check_case(case: Case, scheduler: str, store: Any = None) -> None:
    source = _source(case, store)
    # numpy's oracle on the values as the source holds them: numpy keeps the byte order
    # where it takes values as they are (a Zarr v3 array holds them in native order).
    selected = case.spec.data.astype(source.dtype)[case.selection]
    if case.source == "dask":  # one element is a 0-d dask array, not numpy's scalar
        selected = np.asarray(selected, dtype=source.dtype)
    what = f"{case.function}({case.q!r}) of {selected.dtype}{selected.shape}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # empty and all-NaN slices
        try:
            expected = getattr(np, case.function)(selected, *case.args())
        except Exception as error:  # numpy refuses: so must chunkflow, alike
            refused: BaseException | None = error
        else:
            refused = None
        selection = Ellipsis if case.source == "dask" else case.selection
        call = getattr(chunkflow, case.function)
        kwargs = {"selection": selection, "max_memory": case.max_memory, "scheduler": scheduler,
                  "blocks": case.blocks}
        try:
            if refused is not None:
                with pytest.raises(builtin_classes(refused)[0]) as caught:
                    call(source, *case.args(), **kwargs)
                assert isinstance(caught.value, builtin_classes(refused)), (what, caught.value)
                event(f"both refuse: {type(refused).__name__}")
                return
            got = call(source, *case.args(), **kwargs)
        except MemoryPlanError as error:
            _may_refuse(case, error)
            event("budget refused")
            return
    event("compared")
    assert_same(got, expected, what, zero_sign=not _mixed_zeros(selected))


@budget(100)
@given(case=cases(), scheduler=cst.schedulers(processes=False))
@example(case=Case(StoredArraySpec(np.array([-0.0]), (1,)), "quantile", 0.3), scheduler="sync")
@example(case=Case(StoredArraySpec(np.array([-0.0]), (1,)), "quantile", 0.3, source="numpy"),
         scheduler="sync")
@example(case=Case(StoredArraySpec(np.array([-0.0, -0.0, 1.0]), (2,)), "percentile",
                   [0, 30, 50, 100], max_memory=2**12), scheduler="sync")
# numpy interpolates from the upper value at t >= 0.5: here a + (b - a) t is an ulp off.
@example(case=Case(StoredArraySpec(np.array([0.008216181435011584, 0.000345584192064786]), (1,)),
                   "quantile", 0.5), scheduler="sync")
@example(case=Case(StoredArraySpec(np.array([True, False]), (1,)), "median"), scheduler="sync")
@example(case=Case(StoredArraySpec(np.array([True, False]), (1,)), "quantile"), scheduler="sync")
@example(case=Case(StoredArraySpec(np.arange(4.0), (3,)), "median", selection=slice(2, 2)),
         scheduler="sync")
@example(case=Case(StoredArraySpec(np.arange(4), (3,)), "percentile", [5, 50], slice(2, 2)),
         scheduler="sync")
@example(case=Case(StoredArraySpec(np.arange(4), (3,)), "nanquantile", [0.5, 0.1], slice(2, 2)),
         scheduler="sync")
@example(case=Case(StoredArraySpec(np.zeros((0, 3)), (1, 1)), "nanmedian", source="numpy"),
         scheduler="sync")  # no values in memory: dask's auto blocks divided by zero
@example(case=Case(StoredArraySpec(np.zeros(5, bool), (1,)), "quantile", 0,
                   (slice(-7, 3, -3),), source="dask"), scheduler="sync")
@example(case=Case(StoredArraySpec(np.array(3, ">i2"), ()), "quantile", [0]), scheduler="sync")
@example(case=Case(StoredArraySpec(np.array([3, 1], ">i2"), (1,), zarr_format=2), "quantile", [0]),
         scheduler="sync")  # Zarr v2 keeps the big-endian dtype: so does numpy's take
@example(case=Case(StoredArraySpec(np.array(3, ">i2"), ()), "quantile", [0], ()),
         scheduler="sync")  # numpy's scalar: native byte order; its 0-d array: big-endian
@example(case=Case(StoredArraySpec(np.array(3, ">i2"), ()), "quantile", [0], (), source="dask"),
         scheduler="sync")
@example(case=Case(StoredArraySpec(np.array([0.0, -0.0], "f2"), (1,)), "quantile", 0),
         scheduler="sync")  # numpy: 0.0 (the zero it leaves first), chunkflow: -0.0
def test_matches_numpy(case: Case, scheduler: str) -> None:
    check_case(case, scheduler)


@budget(3)
@given(case=cases())
def test_matches_numpy_on_processes(case: Case) -> None:
    if case.source != "stored":
        case = Case(case.spec, case.function, case.q, case.selection, case.max_memory,
                    blocks=case.blocks)
    with tempfile.TemporaryDirectory() as folder, dask.config.set(pool=process_pool()):
        check_case(case, "processes", f"{folder}/a.zarr")


def test_lazy_results_compute_to_numpy_s() -> None:
    """``compute=False``: one task that computes numpy's answer (empty selections too)."""
    data = np.array([[-0.0, 1.5, np.nan], [2.0, -3.0, 0.0]], "f4")
    z = chunkflow.array(data, chunks=(1, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name, args, selection in (("nanquantile", ([0.0, 0.5],), Ellipsis),
                                      ("median", (), (1,)), ("nanmedian", (), (slice(0, 0),))):
            lazy = getattr(chunkflow, name)(z, *args, selection=selection, compute=False)
            assert dask.is_dask_collection(lazy)
            assert_same(dask.compute(lazy, scheduler="sync")[0],
                        getattr(np, name)(data[selection], *args), name)
