"""``chunkflow.histogram`` against ``numpy.histogram``, on random arrays.

chunkflow claims numpy's counts and edges exactly: the same edges (values, bits and
dtype: float32 edges for float32 data), the same counts (numpy's dtype), numpy's density,
and numpy's refusals (an error of the same builtin class). Where numpy answers and
chunkflow does not (a bin estimator's name, ``weights=``), the refusal must say what to
give instead.
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

ESTIMATORS = ("auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt")


@dataclass(frozen=True)
class Case:
    """One call of ``chunkflow.histogram``."""

    spec: StoredArraySpec
    bins: Any = 10
    range: Any = None
    density: bool = False
    selection: Any = Ellipsis
    max_memory: int | None = None
    source: str = "stored"  # or "numpy", "dask"
    blocks: Any = None

    def kwargs(self) -> dict[str, Any]:
        return {"bins": self.bins, "range": self.range, "density": self.density}


def _edge_values(data: np.ndarray) -> st.SearchStrategy[float]:
    """Edges near the data: its values, values between, and anything."""
    with np.errstate(invalid="ignore"):  # (signalling NaN payloads)
        values = data.ravel()[:50].astype(np.float64)
    finite = [float(v) for v in values if math.isfinite(v)]
    anything = st.floats(allow_nan=False, allow_infinity=False, width=64)
    if not finite:
        return anything
    return st.one_of(st.sampled_from(finite), st.sampled_from(finite).map(lambda v: v + 0.5),
                     anything)


@st.composite
def bin_choices(draw: st.DrawFn, data: np.ndarray) -> Any:
    """``bins``: a count, edges (increasing, repeated or, rarely, not monotonic; as a list
    or an array), or (rarely) something numpy refuses or estimates."""
    form = draw(st.sampled_from(["count"] * 4 + ["edges"] * 3 + ["odd"]))
    if form == "count":
        return draw(st.integers(1, 20))
    if form == "edges":
        edges = sorted(draw(st.lists(_edge_values(data), min_size=1, max_size=8)))
        if draw(st.booleans()):
            return np.array(edges, dtype=draw(st.sampled_from(["f8", "f4", "i8"]))) \
                if all(abs(e) < 2**62 for e in edges) else edges
        return edges
    return draw(st.sampled_from([0, -2, [3.0, 1.0, 2.0], np.ones((2, 2)), *ESTIMATORS]))


@st.composite
def range_choices(draw: st.DrawFn, data: np.ndarray) -> Any:
    """``range``: none (the data's), around the data, reversed, or not finite."""
    form = draw(st.sampled_from(["none"] * 3 + ["around"] * 3 + ["odd"]))
    if form == "none":
        return None
    if form == "around":
        low, high = sorted(draw(st.tuples(_edge_values(data), _edge_values(data))))
        return (low, high)
    return draw(st.sampled_from([(2.0, 1.0), (0.0, math.inf), (math.nan, 1.0)]))


@st.composite
def cases(draw: st.DrawFn) -> Case:
    # Floats half the time (they round, tie at -0.0 and hold NaN), any kind else.
    dtypes = st.one_of(cst.dtypes(kinds="f", byteorder="any"),
                       cst.dtypes(kinds="biuf", byteorder="any"))
    # Corner values half the time; else ordinary ones (ties and roundings rather than NaN).
    shapes = st.one_of(cst.shapes(), cst.shapes(min_dims=1, zero_sides=False))
    values = st.one_of(cst.arrays(dtypes, shapes), cst.ordinary_arrays(dtypes, shapes))
    spec = draw(cst.stored_arrays(data=values))
    selection = draw(st.one_of(st.just(Ellipsis),
                               cst.basic_selections(spec.data.shape, in_bounds=True)))
    selected = spec.data[selection]
    max_memory = draw(st.sampled_from([None, None, 2**13]))
    blocks = draw(cst.block_arguments(spec.data.shape)) if max_memory is None else None
    return Case(spec, draw(bin_choices(selected)), draw(range_choices(selected)),
                draw(st.booleans()), selection, max_memory,
                draw(st.sampled_from(["stored", "stored", "numpy", "dask"])), blocks)


def builtin_classes(error: BaseException) -> tuple[type, ...]:
    return tuple(c for c in type(error).__mro__
                 if c.__module__ == "builtins" and c not in (BaseException, Exception, object))


def assert_same(got: Any, expected: Any, what: str) -> None:
    """Counts (or densities) and edges: same dtype, same bits (NaN anywhere numpy has)."""
    assert isinstance(got, tuple) and len(got) == 2, (what, got)
    for name, g, e in zip(("counts", "edges"), got, expected):
        assert type(g) is type(e) and g.dtype == e.dtype and g.shape == e.shape, (
            what, name, g.dtype, g.shape, e.dtype, e.shape)
        if e.dtype.kind == "f":
            nan = np.isnan(e)
            np.testing.assert_array_equal(np.isnan(g), nan, err_msg=f"{what} {name}")
            bits = np.dtype(f"u{e.dtype.itemsize}")
            np.testing.assert_array_equal(g[~nan].view(bits), e[~nan].view(bits),
                                          err_msg=f"{what} {name}: {g} != {e}")
        else:
            np.testing.assert_array_equal(g, e, err_msg=f"{what} {name}")


def _source(case: Case, store: Any = None) -> tuple[Any, Any]:
    """What to pass, and the selection to pass with it."""
    if case.source == "numpy":
        return case.spec.data, case.selection
    z = case.spec.create(store)
    if case.source == "dask":  # (chunkflow's plan of the selection, not dask's slicing)
        return chunkflow.to_dask(z, case.selection), Ellipsis
    return z, case.selection


def check_case(case: Case, scheduler: str, store: Any = None) -> None:
    selected = case.spec.data[case.selection]
    what = f"histogram of {selected.dtype}{selected.shape} with {case.kwargs()}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # density of no counts
        try:
            expected = np.histogram(selected, **case.kwargs())
        except Exception as error:  # numpy refuses: so must chunkflow, alike
            refused: BaseException | None = error
        else:
            refused = None
        source, selection = _source(case, store)
        call = {**case.kwargs(), "selection": selection, "max_memory": case.max_memory,
                "scheduler": scheduler, "blocks": case.blocks}
        try:
            if isinstance(case.bins, str):
                # numpy estimates bins from the whole data; chunkflow says what to give.
                with pytest.raises(ValueError, match="give a number of bins or the edges"):
                    chunkflow.histogram(source, **call)
                event("estimator refused")
                return
            if refused is not None:
                with pytest.raises(builtin_classes(refused)[0]) as caught:
                    chunkflow.histogram(source, **call)
                assert isinstance(caught.value, builtin_classes(refused)), (what, caught.value)
                event(f"both refuse: {type(refused).__name__}")
                return
            got = chunkflow.histogram(source, **call)
        except MemoryPlanError as error:
            unit = case.spec.shards or case.spec.chunks
            itemsize = case.spec.data.itemsize
            need = math.prod(unit) * itemsize * task_bytes_per_block_byte(itemsize)
            assert case.max_memory is not None and need > case.max_memory, error
            event("budget refused")
            return
    event("compared")
    assert_same(got, expected, what)


@budget(100)
@given(case=cases(), scheduler=cst.schedulers(processes=False))
@example(case=Case(StoredArraySpec(np.linspace(-1, 1, 100, dtype="f4"), (7,)), 7), scheduler="sync")
@example(case=Case(StoredArraySpec(np.array([[False, True]]), (1, 1)), 1), scheduler="sync")
# The last edge is the array's max: with -0.0 and 0.0 both there, numpy's choice of sign
# (the later of two equal values) must come out of the blocks' maxima too.
@example(case=Case(StoredArraySpec(np.array([[0.0, -1.0, -0.0]], "f4"), (1, 1)), 1),
         scheduler="sync")
@example(case=Case(StoredArraySpec(np.array([[-0.0, 0.0, -1.0]], "f4"), (1, 1)), 1),
         scheduler="threads")
def test_matches_numpy(case: Case, scheduler: str) -> None:
    check_case(case, scheduler)


@budget(3)
@given(case=cases())
def test_matches_numpy_on_processes(case: Case) -> None:
    if case.source != "stored":
        case = Case(case.spec, case.bins, case.range, case.density, case.selection,
                    case.max_memory, blocks=case.blocks)
    with tempfile.TemporaryDirectory() as folder, dask.config.set(pool=process_pool()):
        check_case(case, "processes", f"{folder}/a.zarr")


def test_weights_are_refused_with_what_to_do() -> None:
    z = chunkflow.array(np.arange(6.0), chunks=4)
    with pytest.raises(ValueError, match="weights= is not supported.*weights=None"):
        chunkflow.histogram(z, weights=np.ones(6))
