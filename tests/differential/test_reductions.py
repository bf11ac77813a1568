"""``chunkflow.reduce`` and ``chunkflow.reductions.*`` against numpy, on random arrays.

Exactness as chunkflow claims it: ``min``, ``max`` and sums of integers and booleans
equal numpy's exactly (values, dtype, scalar or array; the sign of a zero minimum aside,
which numpy's own SIMD loops choose by position); float sums, means, variances and
standard deviations are the exact value to within the rounding bound of
:mod:`tests.differential.exact`, with numpy's NaN and infinities, numpy's dtype, and
numpy's refusals (an error of the same builtin class).
"""

from __future__ import annotations

import math
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import dask
import dask.array as da
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
from tests.differential.exact import Arithmetic, check_mean, check_sum, check_variance, parts
from tests.differential.pools import process_pool

OPERATIONS = ("mean", "std", "var", "min", "max", "sum")


@dataclass(frozen=True)
class Case:
    """One call of ``chunkflow.reduce``: the array, and the arguments."""

    spec: StoredArraySpec
    selection: Any = Ellipsis
    axis: Any = None
    ddof: int = 0
    ops: tuple[str, ...] = OPERATIONS
    blocks: Any = None
    max_memory: int | None = None

    def kwargs(self) -> dict[str, Any]:
        return {"selection": self.selection, "axis": self.axis, "ddof": self.ddof,
                "blocks": self.blocks, "max_memory": self.max_memory}


@st.composite
def cases(draw: st.DrawFn, dtypes: st.SearchStrategy[np.dtype] | None = None) -> Case:
    if dtypes is None:  # floats and complex half the time (they round), any kind else
        dtypes = st.one_of(cst.dtypes(kinds="fc", byteorder="any"),
                           cst.dtypes(kinds="biufc", byteorder="any"))
    # Corner values (NaN, inf, extremes) half the time; else values whose rounding shows.
    # Any shape (0-d, empty) or one with values along every side: the merges show there.
    shapes = st.one_of(cst.shapes(), cst.shapes(min_dims=1, zero_sides=False))
    values = st.one_of(cst.arrays(dtypes, shapes), cst.ordinary_arrays(dtypes, shapes))
    spec = draw(cst.stored_arrays(data=values))
    # All of it now and then: random bounds and steps leave a few values most often.
    selection = draw(st.one_of(st.just(Ellipsis),
                               cst.basic_selections(spec.data.shape, in_bounds=True)))
    ndim = spec.data[selection].ndim
    ops = tuple(draw(st.lists(st.sampled_from(OPERATIONS), min_size=1, max_size=3, unique=True)))
    max_memory = draw(st.sampled_from([None, None, None, 2**13]))
    # (Blocks of several chunks with a budget: refusals too many to tell apart.)
    blocks = draw(cst.block_arguments(spec.data.shape)) if max_memory is None else None
    return Case(spec, selection, draw(cst.reduction_axes(ndim, invalid=True)),
                draw(st.sampled_from([0, 0, 1, 2, -1])), ops, blocks, max_memory)


# ------------------------------------------------------------------ the oracle


def numpy_answer(data: np.ndarray, op: str, axis: Any, ddof: int) -> Any:
    kwargs = {"ddof": ddof} if op in ("var", "std") else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # empty slices, ddof >= n
        return getattr(np, op)(data, axis=axis, **kwargs)


def _numpy_arithmetic(dtype: np.dtype[Any]) -> Arithmetic:
    """Where numpy computes: float32 for float32 (complex64), float16 for float16 (its
    sums run in float32, but its var subtracts a mean rounded to float16), float64 for
    the rest (integers included)."""
    part = dtype.itemsize // 2 if dtype.kind == "c" else dtype.itemsize
    return Arithmetic.of(f"f{part}" if dtype.kind in "fc" else "f8")


#: chunkflow sums every float and complex part in float64.
CHUNKFLOW = Arithmetic.of("f8")


def _positions(data: np.ndarray, axis: Any) -> Iterator[tuple[tuple[int, ...], np.ndarray]]:
    """(output index, the values reduced into it) for every output position."""
    # (numpy's min, max and sum take axis 0 of a 0-d array: all of it.)
    reduced = tuple(range(data.ndim)) if axis is None or data.ndim == 0 else \
        tuple(sorted(a % data.ndim for a in np.atleast_1d(axis)))
    kept = [d for d in range(data.ndim) if d not in reduced]
    moved = np.transpose(data, kept + list(reduced))
    flat = moved.reshape([data.shape[d] for d in kept] + [math.prod(data.shape[d] for d in reduced)])
    for index in np.ndindex(*flat.shape[:-1]):
        yield index, flat[index]


def _same_exactly(got: Any, expected: Any, what: str) -> None:
    """Equal values; NaN where numpy has NaN (any payload); a zero of either sign."""
    got_a, expected_a = np.asarray(got), np.asarray(expected)
    if expected_a.dtype.kind in "fc":
        np.testing.assert_array_equal(np.isnan(got_a), np.isnan(expected_a), err_msg=what)
        keep = ~np.isnan(expected_a)
        np.testing.assert_array_equal(got_a[keep], expected_a[keep], err_msg=what)
    else:
        np.testing.assert_array_equal(got_a, expected_a, err_msg=what)


def check_answer(got: Any, expected: Any, data: np.ndarray, op: str, axis: Any, ddof: int,
                 arithmetic: Arithmetic, who: str) -> None:
    """``got`` (chunkflow's or numpy's own, ``who``) is right for ``op`` of ``data``."""
    what = f"{who} {op}(axis={axis!r}, ddof={ddof}) of {data.dtype}{data.shape}"
    assert type(got) is type(expected), (what, type(got), type(expected))
    assert np.shape(got) == np.shape(expected), (what, np.shape(got), np.shape(expected))
    assert np.asarray(got).dtype == np.asarray(expected).dtype, (what, np.asarray(got).dtype)
    if op in ("min", "max") or (op == "sum" and data.dtype.kind in "biu"):
        _same_exactly(got, expected, what)
        return
    dtype = np.dtype(np.asarray(expected).dtype)
    part_dtype = np.dtype(f"f{dtype.itemsize // 2}") if dtype.kind == "c" else dtype
    native = data.astype(data.dtype.newbyteorder("="))
    for index, values in _positions(native, axis):
        value = np.asarray(got)[index]
        where = f"{what} at {index}"
        if op == "sum":
            for name, part_value, part in zip(("real", "imag"), np.atleast_1d(
                    [value.real, value.imag] if dtype.kind == "c" else [value]), parts(values)):
                check_sum(float(part_value), part, arithmetic, part_dtype, f"{where} {name}")
        elif op == "mean":
            check_mean(value, values, arithmetic, part_dtype, where)
        else:
            check_variance(value, values, ddof, arithmetic, dtype, where, root=op == "std")


def builtin_classes(error: BaseException) -> tuple[type, ...]:
    """The builtin exception classes ``error`` is an instance of (numpy's AxisError is
    a ValueError and an IndexError)."""
    return tuple(c for c in type(error).__mro__
                 if c.__module__ == "builtins" and c not in (BaseException, Exception, object))


def _may_refuse(case: Case, error: MemoryPlanError) -> None:
    """A budget refusal is right only when one chunk (shard) and its work exceed it."""
    data = case.spec.data
    unit = case.spec.shards or case.spec.chunks
    need = math.prod(unit) * data.itemsize * task_bytes_per_block_byte(data.itemsize)
    assert case.max_memory is not None and need > case.max_memory, error


def check_case(case: Case, source: Any, data: np.ndarray, scheduler: str,
               single: bool = False) -> None:
    """chunkflow's reductions of ``source`` (holding ``data``) against numpy's: those
    numpy refuses one by one (chunkflow must refuse them alike), the others together;
    with ``single``, the first of those through its own function too."""
    selected = data[case.selection]
    expected: dict[str, Any] = {}
    kwargs = {**case.kwargs(), "scheduler": scheduler}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for op in case.ops:
            try:
                expected[op] = numpy_answer(selected, op, case.axis, case.ddof)
            except Exception as refused:  # numpy refuses: chunkflow must too, alike
                with pytest.raises(builtin_classes(refused)[0]) as caught:
                    chunkflow.reduce(source, (op,), **kwargs)
                assert isinstance(caught.value, builtin_classes(refused)), caught.value
                event(f"both refuse: {type(refused).__name__}")
        if not expected:
            return
        try:
            got = chunkflow.reduce(source, tuple(expected), **kwargs)
        except MemoryPlanError as error:
            _may_refuse(case, error)
            event("budget refused")
            return
        answers = [("chunkflow.reduce", got)]
        if single:
            op = next(iter(expected))
            if op not in ("var", "std"):
                kwargs.pop("ddof")
            answers.append((f"chunkflow.reductions.{op}",
                            {op: getattr(chunkflow.reductions, op)(source, **kwargs)}))
    event("compared")
    assert list(got) == list(expected)
    for op in expected:
        for who, answer in answers:
            if op in answer:
                check_answer(answer[op], expected[op], selected, op, case.axis, case.ddof,
                             CHUNKFLOW, who)
        # The oracle's bounds hold for numpy's own answer too (else the oracle is wrong).
        check_answer(expected[op], expected[op], selected, op, case.axis, case.ddof,
                     _numpy_arithmetic(selected.dtype), "numpy")


# ------------------------------------------------------------------ the tests

EIGHT = StoredArraySpec(np.arange(8.0), (1,))
MILLION = StoredArraySpec(np.arange(10.0**6), (1000,))


@budget(100)
@given(case=cases(), scheduler=cst.schedulers(processes=False), single=st.booleans())
@example(case=Case(EIGHT, slice(None, None, 3), ops=("var", "std"), blocks=(1,)),
         scheduler="sync", single=False)
@example(case=Case(MILLION, slice(None, None, 300000), ddof=1, ops=("std",)),
         scheduler="threads", single=True)
def test_reduce_matches_numpy(case: Case, scheduler: str, single: bool) -> None:
    check_case(case, case.spec.create(), case.spec.data, scheduler, single)


@st.composite
def dask_cases(draw: st.DrawFn) -> Case:
    """A numpy array to reduce as a dask array with explicit blocks (``blocks`` here),
    empty ones among them."""
    dtypes = cst.dtypes(kinds="biufc")
    data = draw(st.one_of(cst.arrays(dtypes), cst.ordinary_arrays(dtypes)))
    return Case(StoredArraySpec(data, data.shape), axis=draw(cst.reduction_axes(data.ndim)),
                ddof=draw(st.sampled_from([0, 1, 3])), blocks=draw(cst.dask_chunks(data.shape)))


@budget(40)
@given(case=dask_cases())
@example(case=Case(StoredArraySpec(np.arange(8.0)[::3], (3,)), blocks=((1, 0, 0, 1, 0, 0, 1),)))
@example(case=Case(StoredArraySpec(np.arange(10.0**6)[::300000], (4,)), ddof=1,
                   blocks=((0, 1, 0, 1, 0, 1, 0, 1, 0),)))
@example(case=Case(StoredArraySpec(np.array([8.98846567e307j, 8.98846567e307j]), (2,)),
                   blocks=((2,),)))  # imaginary sum overflows: NaN spreads to the real part
@example(case=Case(StoredArraySpec(np.array([np.finfo("f8").tiny / 2, 0.0]), (2,)), ddof=3,
                   blocks=((2,),)))  # squared deviations underflow: M2 is 0, 0 / 0 NaN
@example(case=Case(StoredArraySpec(np.array([np.finfo("f8").tiny / 2, 0.0]), (2,)),
                   blocks=((2,),)))
def test_zero_size_blocks_change_nothing(case: Case) -> None:
    """A dask array whose blocks include empty ones (zero-size partial results)."""
    source = da.from_array(case.spec.data, chunks=case.blocks)
    check_case(Case(case.spec, axis=case.axis, ddof=case.ddof), source, case.spec.data, "sync")


@budget(4)
@given(case=cases(cst.dtypes(kinds="iuf", byteorder="any")))
def test_reduce_on_processes(case: Case) -> None:
    with tempfile.TemporaryDirectory() as folder, dask.config.set(pool=process_pool()):
        path = f"{folder}/a.zarr"
        case.spec.create(path)
        check_case(case, path, case.spec.data, "processes")


def test_the_oracle_catches_a_wrong_count() -> None:
    """The exact oracle's bounds are tight enough to see a merge off by one value."""
    values = np.random.default_rng(0).normal(size=50)
    wrong = np.var(values) * 50 / 49
    with pytest.raises(AssertionError):
        check_variance(wrong, values, 0, CHUNKFLOW, np.dtype("f8"), "var", root=False)
    check_variance(np.var(values), values, 0, CHUNKFLOW, np.dtype("f8"), "var", root=False)
    assert math.isfinite(wrong)
