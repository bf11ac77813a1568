"""Writes of every selection kind against a numpy reference, with a nonzero fill value.

Hypothesis draws an array (shape, chunks, dtype, fill value, format,
``write_empty_chunks``) and a short sequence of writes — basic, orthogonal (``oindex``),
coordinate (``vindex``) and mask — whose values often equal the fill value, so chunks
become "empty" again. After the writes, reads of every kind must equal the reference,
through the written handle and a fresh uncached one, and the raw store must hold
exactly the chunks the contract says:

- ``write_empty_chunks=True``: every chunk a write touched, and no other;
- ``write_empty_chunks=False``: every touched chunk that holds a non-fill element.

Missing and partly written chunks must read as ``fill_value`` (never 0).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chunkflow

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

DTYPES = ["u1", "<i2", ">i4", "<f4", ">f8", "?"]
METADATA = (".zarray", ".zattrs", ".zgroup", "zarr.json")


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 7), min_size=ndim, max_size=ndim)))
    chunks = tuple(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    fill = True if dtype == np.dtype(bool) else draw(st.sampled_from([3, 7, 42]))
    return {"shape": shape, "chunks": chunks, "dtype": dtype, "fill_value": fill,
            "zarr_format": draw(st.sampled_from([2, 3])),
            "write_empty_chunks": draw(st.booleans())}


def values(draw: st.DrawFn, shape: tuple[int, ...], spec: dict[str, Any]) -> np.ndarray:
    """Values that are mostly or wholly the fill value, so chunks empty out again."""
    fill = spec["fill_value"]
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    other = not fill if spec["dtype"] == np.dtype(bool) else fill + 1 + rng.integers(0, 3, size=shape)
    share = draw(st.sampled_from([0.0, 0.3, 1.0]))  # share of non-fill elements
    return np.where(rng.random(shape) < share, other, fill).astype(spec["dtype"])


def unique_ints(draw: st.DrawFn, size: int) -> np.ndarray:
    # Duplicates would make the written value depend on the order of assignment.
    picked = draw(st.lists(st.integers(0, size - 1), unique=True, max_size=size))
    return np.array(picked, dtype=np.intp)


@st.composite
def writes(draw: st.DrawFn, spec: dict[str, Any]) -> tuple[str, Any, np.ndarray]:
    """One write: its kind, its selection and its value."""
    shape = spec["shape"]
    kind = draw(st.sampled_from(["basic", "orthogonal", "coordinate", "mask"]))
    if kind == "basic":
        selection = tuple(
            slice(start, draw(st.integers(start, size)), draw(st.integers(1, 3)))
            for size in shape for start in [draw(st.integers(0, size))]
        )
        target = np.empty(shape)[selection].shape
    elif kind == "orthogonal":
        selection = tuple(unique_ints(draw, size) for size in shape)
        target = tuple(len(s) for s in selection)
    elif kind == "coordinate":
        flat = draw(st.lists(st.integers(0, int(np.prod(shape)) - 1), unique=True, max_size=12))
        selection = np.unravel_index(np.array(flat, dtype=np.intp), shape)
        target = (len(flat),)
    else:
        rng = np.random.default_rng(draw(st.integers(0, 2**16)))
        selection = rng.random(shape) < draw(st.sampled_from([0.0, 0.2, 0.7, 1.0]))
        target = (int(selection.sum()),)
    return kind, selection, values(draw, target, spec)


def apply(z: chunkflow.Array, reference: np.ndarray, touched: np.ndarray,
          write: tuple[str, Any, np.ndarray]) -> None:
    kind, selection, value = write
    numpy_selection = np.ix_(*selection) if kind == "orthogonal" else selection
    reference[numpy_selection] = value
    touched[numpy_selection] = True
    if kind == "basic":
        z[selection] = value
    elif kind == "orthogonal":
        z.oindex[selection] = value
    else:
        z.vindex[selection] = value


def expected_chunk_keys(spec: dict[str, Any], reference: np.ndarray,
                        touched: np.ndarray) -> set[str]:
    grid = [range(-(-size // chunk)) for size, chunk in zip(spec["shape"], spec["chunks"])]
    keys = set()
    for coords in itertools.product(*grid):
        region = tuple(slice(i * c, (i + 1) * c) for i, c in zip(coords, spec["chunks"]))
        if not touched[region].any():
            continue
        if spec["write_empty_chunks"] or (reference[region] != spec["fill_value"]).any():
            keys.add(".".join(map(str, coords)) if spec["zarr_format"] == 2
                     else "c/" + "/".join(map(str, coords)))
    return keys


def check_reads(z: chunkflow.Array, reference: np.ndarray, draw: st.DataObject) -> None:
    np.testing.assert_array_equal(z[...], reference)
    ortho = tuple(draw.draw(st.builds(lambda ints: np.array(ints, dtype=np.intp),
                                      st.lists(st.integers(0, size - 1), max_size=5)))
                  for size in reference.shape)
    np.testing.assert_array_equal(z.oindex[ortho], reference[np.ix_(*ortho)])
    flat = draw.draw(st.lists(st.integers(0, reference.size - 1), max_size=8))
    points = np.unravel_index(np.array(flat, dtype=np.intp), reference.shape)
    np.testing.assert_array_equal(z.vindex[points], reference[points])
    mask = np.random.default_rng(len(flat)).random(reference.shape) < 0.4
    np.testing.assert_array_equal(z.vindex[mask], reference[mask])


@SETTINGS
@given(spec=specs(), data=st.data())
def test_writes_of_every_kind_match_numpy_and_store_the_right_chunks(
        spec: dict[str, Any], data: st.DataObject) -> None:
    store: dict[str, bytes] = {}
    z = chunkflow.create(spec["shape"], chunks=spec["chunks"], dtype=spec["dtype"],
                         fill_value=spec["fill_value"], zarr_format=spec["zarr_format"],
                         write_empty_chunks=spec["write_empty_chunks"], store=store)
    reference = np.full(spec["shape"], spec["fill_value"], dtype=spec["dtype"])
    touched = np.zeros(spec["shape"], dtype=bool)
    check_reads(z, reference, data)  # nothing stored yet: every chunk is missing

    for write in data.draw(st.lists(writes(spec), min_size=1, max_size=4)):
        apply(z, reference, touched, write)
        np.testing.assert_array_equal(z[...], reference, err_msg=f"after {write[0]} write")

    check_reads(z, reference, data)
    check_reads(chunkflow.open(store, mode="r", cache=False), reference, data)
    chunk_keys = {key for key in store if not key.endswith(METADATA)}
    assert chunk_keys == expected_chunk_keys(spec, reference, touched)


def test_missing_and_partial_chunks_read_as_fill_value() -> None:
    store: dict[str, bytes] = {}
    z = chunkflow.create((6,), chunks=(4,), dtype="i2", fill_value=-5, store=store)
    z.vindex[[1, 5]] = np.array([9, 8], dtype="i2")
    np.testing.assert_array_equal(z[:], [-5, 9, -5, -5, -5, 8])
    z.oindex[np.array([5])] = -5  # the second chunk is all fill again: deleted
    assert sorted(key for key in store if key != "zarr.json") == ["c/0"]
    np.testing.assert_array_equal(chunkflow.open(store, cache=False)[:], [-5, 9, -5, -5, -5, -5])
