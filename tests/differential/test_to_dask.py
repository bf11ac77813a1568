"""``to_dask`` against numpy: ``to_dask(z, s1, blocks)[s2][s3]`` equals
``data[s1][s2][s3]`` (values by their bytes, shape, dtype) for any basic selections,
any ``blocks=`` (the default, ``"auto"``, byte sizes, chunk multiples with ``-1``), on
stored arrays of every layout; each re-slice either re-plans the read
(:class:`~chunkflow.graph.read.ChunkflowDaskArray`) or is dask's own ``getitem``.

A plan has no empty block unless its dimension is empty (then one, as dask has): dask
answers wrongly around empty blocks. Reductions and reversals of the result equal
numpy's, computed on the ``sync``, ``threads`` and ``processes`` schedulers. The block
plans themselves (pure arithmetic, so many more examples) are checked against numpy's
slicing of ``np.arange``: blocks on chunk edges, none empty, counted as
``block_counts`` counts them, and re-slices composed as numpy composes them.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import dask
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from chunkflow import to_dask
from chunkflow.graph.blocks import block_counts, compose_selection, dim_blocks
from chunkflow.graph.read import ChunkflowDaskArray
from chunkflow.testing import strategies as cst
from chunkflow.testing.strategies import StoredArraySpec
from tests.differential.conftest import budget
from tests.helpers.numpy_selections import assert_identical

#: (stored array, blocks=, the selections applied one after another)
Case = tuple[StoredArraySpec, Any, list[Any]]

DTYPES = cst.dtypes(kinds="biufcmMUS", byteorder="any")


def blocks_for(ndim: int) -> st.SearchStrategy[Any]:
    """Every form of ``blocks=``: the default, ``"auto"``, a byte size (as a number or
    text), or chunks per block per dimension (``-1``: the whole dimension)."""
    multiples = st.tuples(*[st.sampled_from([1, 2, 3, -1]) for _ in range(ndim)])
    return st.one_of(st.none(), st.just("auto"), st.integers(1, 4096),
                     st.sampled_from(["100 B", "1 KiB"]), multiples)


@st.composite
def cases(draw: st.DrawFn, *, dtypes: st.SearchStrategy[np.dtype] = DTYPES,
          max_side: int = 7) -> Case:
    """A stored array, ``blocks=`` and one to three basic selections, each of the result
    of the ones before; the chain ends at one that numpy refuses."""
    spec = draw(cst.stored_arrays(dtypes=dtypes, shapes=cst.shapes(max_side=max_side)))
    blocks = draw(blocks_for(spec.data.ndim))
    selections: list[Any] = []
    result: Any = spec.data
    for _ in range(draw(st.integers(1, 3))):
        selection = draw(cst.basic_selections(np.shape(result)))
        selections.append(selection)
        try:
            result = np.asarray(result)[selection]
        except IndexError:
            break
    return spec, blocks, selections


def _expected(data: np.ndarray, selections: list[Any]) -> Iterator[tuple[Any, np.ndarray | None]]:
    """Each selection with numpy's result of the chain up to it (``None``: refused)."""
    result = data
    for selection in selections:
        try:
            result = result[selection]
        except IndexError:
            yield selection, None
            return
        if not isinstance(result, np.ndarray):  # a scalar, of native byte order
            result = np.array(result, dtype=data.dtype)
        yield selection, result


def _check_blocks(x: Any) -> None:
    """A plan of chunkflow's has no empty block, unless its dimension is empty: then
    one empty block, as dask has."""
    if not x.name.startswith("chunkflow-read-"):
        return  # dask's own getitem, whose blocks are dask's
    for size, blocks in zip(x.shape, x.chunks):
        assert blocks == (0,) if size == 0 else 0 not in blocks, (x.shape, x.chunks)


def _compute(x: Any, scheduler: str, **kwargs: Any) -> np.ndarray:
    (value,) = dask.compute(x, scheduler=scheduler, **kwargs)
    if not isinstance(value, np.ndarray):
        # One element, as dask's getitem gives it (numpy's too): a scalar of native
        # byte order; its bits are the element's.
        value = np.array(value, dtype=x.dtype)
    if scheduler == "processes" and value.dtype != x.dtype and \
            value.dtype == x.dtype.newbyteorder("="):
        # numpy pickles a non-contiguous non-native array (a block dask's getitem
        # reversed in a worker) in native byte order, values kept (numpy 2.4.6): the
        # bytes come back from the process swapped to native, by numpy, not chunkflow.
        value = value.astype(x.dtype)
    return value


def _select(z: Any, x: Any, selection: Any, blocks: Any) -> Any:
    """The first selection plans ``to_dask``; the next ones re-slice its result."""
    return to_dask(z, selection, blocks=blocks) if x is None else x[selection]


def check_chain(z: Any, data: np.ndarray, blocks: Any, selections: list[Any],
                scheduler: str, **kwargs: Any) -> Any:
    """Run the chain of selections on ``to_dask(z)`` and on numpy; returns the last dask
    array (``None`` when numpy refused a selection, and chunkflow did too)."""
    x: Any = None
    for selection, expected in _expected(data, selections):
        if expected is None:
            with pytest.raises(IndexError):
                _select(z, x, selection, blocks)
            return None
        x = _select(z, x, selection, blocks)
        assert isinstance(x, ChunkflowDaskArray)  # re-slices again as numpy
        assert (x.shape, x.dtype) == (expected.shape, expected.dtype), (selection, x, expected)
        _check_blocks(x)
        assert_identical(_compute(x, scheduler, **kwargs), expected, (selections, x.chunks))
    return x


def check_reductions(x: Any, expected: np.ndarray, scheduler: str, **kwargs: Any) -> None:
    """``x`` reversed along every dimension, and summed (integers: exact, wrapping as
    numpy wraps) or its maximum (floats: independent of the order of the blocks)."""
    reverse = (slice(None, None, -1),) * x.ndim
    reversed_ = expected[reverse] if expected.ndim else expected  # not a native scalar
    assert_identical(_compute(x[reverse], scheduler, **kwargs), reversed_, x.chunks)
    kind = expected.dtype.kind
    if kind in "biu":
        assert_identical(_compute(x.sum(), scheduler, **kwargs), expected.sum(), x.chunks)
    elif kind == "f" and expected.size:
        np.testing.assert_array_equal(_compute(x.max(), scheduler, **kwargs), expected.max())


def _run(case: Case, scheduler: str, store: Any = None, **kwargs: Any) -> None:
    spec, blocks, selections = case
    z = spec.create(store)
    data = spec.data.astype(z.dtype)  # a Zarr v3 array's dtype is native
    x = check_chain(z, data, blocks, selections, scheduler, **kwargs)
    if x is not None:
        *_, (_, expected) = _expected(data, selections)
        assert expected is not None
        check_reductions(x, expected, scheduler, **kwargs)


def _spec(data: np.ndarray, chunks: tuple[int, ...], **kwargs: Any) -> StoredArraySpec:
    return StoredArraySpec(data, chunks, **kwargs)


@budget(100)
@given(cases(), cst.schedulers(processes=False))
# The cases of issue 34: an empty re-slice of a reversed plan wrapped round...
@example((_spec(np.arange(8), (2,)), None, [slice(None, None, -1), slice(10, 2)]), "sync")
@example((_spec(np.arange(48).reshape(3, 2, 8), (3, 2, 2)), None,
          [(slice(0, None, -1), Ellipsis), (slice(2, 2), -2, -6)]), "sync")
# ...and a step over chunks made empty blocks, which dask's [::-1] answered with [].
@example((_spec(np.arange(6), (1,)), (1,), [slice(None, None, 2), slice(None, None, -1)]),
         "sync")
@example((_spec(np.arange(6), (1,)), None, [slice(None, None, 2)]), "threads")
@example((_spec(np.arange(40.0).reshape(8, 5), (2, 2), shards=(4, 2)), (1, -1),
          [(slice(None, None, -3), slice(1, None, 3)), (slice(None, None, -1), 0)]), "threads")
# dask's own getitem (most blocks selected) misread a negative step from before the start
# (dask#10555), also on its own result.
@example((_spec(np.array([False]), (1,)), None, [(), (slice(-3, None, -1),)]), "sync")
@example((_spec(np.zeros((1, 0), bool), (1, 1)), None,
          [(slice(3, None, -2), slice(1, None, -2)), (slice(3, None, -2), slice(1, None, -2)),
           (slice(-3, None, -2), Ellipsis, slice(0, None, 3))]), "sync")
@example((_spec(np.zeros((0, 1, 0), "i1"), (1, 1, 1)), None,
          [(slice(None, None, -1), slice(None, 3, 2), slice(None, None, -1)),
           (slice(None, None, -1), slice(-3, -2, -3), Ellipsis)]), "threads")
def test_to_dask_and_its_reslicing_as_numpy(case: Case, scheduler: str) -> None:
    _run(case, scheduler)


@budget(5)
@given(case=cases(dtypes=cst.dtypes(kinds="iuf", byteorder="any"), max_side=5))
# Found by the long profile: a reversed big-endian block comes back native (numpy's pickle).
@example(case=(_spec(np.arange(4, dtype=">i2").reshape(1, 2, 2), (1, 1, 2), zarr_format=2),
               None, [(slice(0, 1, 1), Ellipsis)]))
def test_to_dask_on_the_processes_scheduler(case: Case, tmp_path_factory: pytest.TempPathFactory,
                                            process_pool: ProcessPoolExecutor) -> None:
    # On disk: an in-memory array does not travel to other processes.
    store = tmp_path_factory.mktemp("to_dask") / "array.zarr"
    _run(case, "processes", str(store), pool=process_pool)


@pytest.fixture(scope="module")
def process_pool() -> Iterator[ProcessPoolExecutor]:
    """One pool for every example: starting worker processes costs seconds each time."""
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield pool


# -- the plans alone: blocks and composed selections against numpy's arithmetic ------

@st.composite
def stepped_selections(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """Slices of any step up to 12 (and integers), bounds in and out of the array: a
    step between 1 and a block's span, and one beyond it, are where plans go wrong."""
    entries: list[Any] = []
    for size in shape:
        if size and draw(st.integers(0, 4)) == 0:
            entries.append(draw(st.integers(-size, size - 1)))
            continue
        bound = st.none() | st.integers(-size - 2, size + 2)
        step = draw(st.integers(-12, 12).filter(bool) | st.none())
        entries.append(slice(draw(bound), draw(bound), step))
    return tuple(entries)


@st.composite
def plan_cases(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...],
                                         Any, Any]:
    """A shape, its chunks, chunks per block, a selection and a re-slice of its result."""
    shape = draw(cst.shapes(min_dims=1, max_dims=3, max_side=40))
    chunks = draw(st.one_of(cst.chunk_shapes(shape), st.tuples(
        *[st.integers(1, max(2, n // 2)) for n in shape])))
    per_block = tuple(draw(st.integers(1, 3)) for _ in shape)
    selections = draw(st.sampled_from([cst.basic_selections, stepped_selections]))
    selection = draw(selections(shape))
    try:
        result_shape = np.empty(shape)[selection].shape
    except IndexError:
        result_shape = ()
    return shape, chunks, per_block, selection, draw(selections(result_shape))


@budget(500)
@given(plan_cases())
@example(((8,), (2,), (1,), slice(None, None, -1), slice(10, 2)))
@example(((3, 2, 8), (3, 2, 2), (1, 1, 1), (slice(0, None, -1), Ellipsis),
          (slice(2, 2), -2, -6)))
@example(((6,), (1,), (1,), slice(None, None, 2), slice(None, None, -1)))
@example(((20,), (3,), (2,), slice(18, None, -7), slice(None, None, -1)))
def test_block_plans_as_numpy(case: tuple[Any, ...]) -> None:
    shape, chunks, per_block, selection, reslice = case
    positions = np.arange(int(np.prod(shape))).reshape(shape)
    try:
        selected = positions[selection]
    except IndexError:
        with pytest.raises(IndexError):
            dim_blocks(shape, chunks, selection, per_block)
        return
    dims = dim_blocks(shape, chunks, selection, per_block)
    kept = [(d, dim) for d, dim in enumerate(dims) if dim.kept]
    assert block_counts(shape, chunks, selection, per_block) == tuple(
        len(dim.chunks) for _, dim in kept)
    for d, dim in kept:
        along = np.arange(shape[d])
        assert sum(dim.chunks) == dim.length == len(along[selection_entry(selection, shape, d)])
        assert dim.chunks == (0,) if dim.length == 0 else 0 not in dim.chunks, dim
        span = chunks[d] * per_block[d]
        pieces = [along[dim.array_slice(lo, hi)] for lo, hi in zip(dim.edges, dim.edges[1:])]
        for piece, size in zip(pieces, dim.chunks):
            assert len(piece) == size and len(set((piece // span).tolist())) <= 1, (dim, piece)
        assert_identical(np.concatenate(pieces), along[selection_entry(selection, shape, d)])
    try:
        expected = selected[reslice]
    except IndexError:
        with pytest.raises(IndexError):
            compose_selection(dims, reslice)
        return
    assert_identical(positions[compose_selection(dims, reslice)], expected, reslice)


def selection_entry(selection: Any, shape: tuple[int, ...], dim: int) -> Any:
    """The entry of a basic ``selection`` that acts on dimension ``dim``."""
    entries = list(selection if isinstance(selection, tuple) else (selection,))
    if Ellipsis in entries:
        at = entries.index(Ellipsis)
        entries[at:at + 1] = [slice(None)] * (len(shape) - len(entries) + 1)
    entries += [slice(None)] * (len(shape) - len(entries))
    return entries[dim]
