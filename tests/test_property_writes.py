"""Sequences of writes against a numpy model, with a nonzero fill_value, chunks that
start missing, coordinate and mask writes, and both write_empty_chunks settings; the
chunks stored are checked through the raw store."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chunkflow
from chunkflow.storage import MemoryStore

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def layouts(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], str, int, bool, int]:
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 8)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    dtype = draw(st.sampled_from(["u1", "i4", "f8"]))
    fill = draw(st.integers(1, 9))  # never 0: a missing chunk must read as this
    return shape, chunks, dtype, fill, draw(st.booleans()), draw(st.sampled_from([2, 3]))


@st.composite
def writes(draw: st.DrawFn, shape: tuple[int, ...], fill: int) -> list[tuple[str, object, int]]:
    steps = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["basic", "coords", "mask", "orthogonal"]))
        # Values include the fill value, so writes can make a chunk empty again.
        value = draw(st.sampled_from([fill, fill + 1, 0, 50]))
        if kind == "basic":
            sel = tuple(slice(a, a + draw(st.integers(0, n))) for n in shape
                        for a in [draw(st.integers(0, n - 1))])
        elif kind == "coords":
            points = draw(st.lists(st.tuples(*[st.integers(0, n - 1) for n in shape]),
                                   min_size=1, max_size=6, unique=True))
            sel = tuple(np.array(axis, dtype=np.intp) for axis in zip(*points))
        elif kind == "mask":
            seed = draw(st.integers(0, 999))
            sel = np.random.default_rng(seed).random(shape) < 0.4
        else:
            sel = tuple(np.array(sorted(draw(st.sets(st.integers(0, n - 1), min_size=1))),
                                 dtype=np.intp) for n in shape)
        steps.append((kind, sel, value))
    return steps


def _apply(z: chunkflow.Array, model: np.ndarray, kind: str, sel: object, value: int) -> None:
    if kind == "basic":
        z[sel] = value
        model[sel] = value
    elif kind in ("coords", "mask"):
        z.vindex[sel] = value
        model[sel] = value
    else:
        z.oindex[sel] = value
        model[np.ix_(*sel)] = value


def _chunk_key(index: tuple[int, ...], zarr_format: int) -> str:
    joined = ".".join(map(str, index)) if zarr_format == 2 else "c/" + "/".join(map(str, index))
    return "a/" + joined


@SETTINGS
@given(layout=layouts(), data=st.data())
def test_writes_match_a_numpy_model(layout, data) -> None:
    shape, chunks, dtype, fill, write_empty, zarr_format = layout
    store = MemoryStore()
    z = chunkflow.create(shape, chunks=chunks, dtype=dtype, fill_value=fill, store=store,
                         path="a", write_empty_chunks=write_empty, zarr_format=zarr_format)
    model = np.full(shape, fill, dtype=dtype)
    np.testing.assert_array_equal(z[...], model)  # every chunk missing: all fill
    for kind, sel, value in data.draw(writes(shape, fill)):
        _apply(z, model, kind, sel, value)
        np.testing.assert_array_equal(z[...], model, err_msg=f"after a {kind} write")
    fresh = chunkflow.open(store, path="a", mode="r", cache=False)
    np.testing.assert_array_equal(fresh[...], model)
    # The chunks stored, seen through the raw store (not through the array).
    grid = [range(-(-n // c)) for n, c in zip(shape, chunks)]
    for index in itertools.product(*grid):
        region = tuple(slice(i * c, min((i + 1) * c, n)) for i, c, n in zip(index, chunks, shape))
        key = _chunk_key(index, zarr_format)
        if not write_empty and (model[region] == fill).all():
            assert key not in store, f"{key} holds only fill_value yet is stored"
        if not (model[region] == fill).all():
            assert key in store, f"{key} holds data yet is missing"
