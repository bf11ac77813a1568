"""A selection read again and again through a cache, around writes, against numpy.

The cache serves a window read wholly twice in a row from what it kept (see
:func:`chunkflow.engine.freshness.serve_hits`). Here every dtype and byte order, Zarr
v2, v3 and sharded arrays, fill values and every basic selection (integers, slices of
any step, ``...``) are read four times, then written through the reading handle, another
cached handle or an uncached one, and read four times again: each read equals numpy's,
byte for byte, and is the caller's own array.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import chunkflow
from chunkflow.cache import ChunkCache
from chunkflow.testing import strategies as cst
from chunkflow.testing.strategies import StoredArraySpec
from tests.differential.conftest import budget
from tests.helpers.numpy_selections import assert_identical

DTYPES = cst.dtypes(kinds="biufcmMUS", byteorder="any")


@st.composite
def _cases(draw: st.DrawFn) -> tuple[StoredArraySpec, Any, Any, Any, str]:
    spec = draw(cst.stored_arrays(dtypes=DTYPES, shapes=cst.shapes(min_dims=1)))
    read = draw(cst.basic_selections(spec.data.shape, in_bounds=True))
    write = draw(cst.basic_selections(spec.data.shape, in_bounds=True))
    target_shape = np.empty(spec.data.shape, "u1")[write].shape
    value = draw(cst.arrays(st.just(spec.data.dtype), st.just(target_shape)))
    writer = draw(st.sampled_from(["reader", "cached", "uncached"]))
    return spec, read, write, value, writer


@budget(120)
@given(_cases())
def test_a_selection_read_again_around_writes_is_numpys(
        case: tuple[StoredArraySpec, Any, Any, Any, str]) -> None:
    spec, read, write, value, writer = case
    store: dict[str, bytes] = {}
    z = spec.create(store)
    cache = ChunkCache(1 << 24)
    reader = chunkflow.open_array(store, mode="r+", cache=cache)
    writers = {"reader": reader, "uncached": chunkflow.open_array(store, mode="r+", cache=False),
               "cached": chunkflow.open_array(store, mode="r+", cache=cache)}
    expected = spec.data.astype(z.dtype)
    results = []
    for _ in range(4):
        got = reader[read]
        assert_identical(got, expected[read], ("before the write", read))
        results.append(got)
    writers[writer][write] = value
    expected[write] = value
    for _ in range(4):
        got = reader[read]
        assert_identical(got, expected[read], ("after the write", read, write))
        results.append(got)
    arrays = [r for r in results if isinstance(r, np.ndarray) and r.size]
    assert len({id(r) for r in arrays}) == len(arrays)  # each read is a new array
    for r in arrays:
        assert r.flags.writeable
