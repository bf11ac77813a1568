"""Tests for chunkflow.grid: chunk keys, the regular grid, shape/chunks normalization."""

from __future__ import annotations

import math
from itertools import product

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkflow.errors import BoundsCheckError, InvalidSelectionError
from chunkflow.grid import ChunkKeyEncoding, RegularChunkGrid, normalize_chunks, normalize_shape

FAST = settings(max_examples=100, deadline=None)
MiB = 1024 * 1024

ENCODINGS = [ChunkKeyEncoding(n, s) for n in ("default", "v2") for s in ("/", ".")]


# --------------------------------------------------------------------------- keys


@pytest.mark.parametrize(
    ("name", "sep", "coords", "key"),
    [
        ("default", "/", (1, 2), "c/1/2"),
        ("default", ".", (1, 2), "c.1.2"),
        ("default", "/", (), "c"),
        ("default", ".", (), "c"),
        ("default", "/", (0,), "c/0"),
        ("v2", ".", (1, 2), "1.2"),
        ("v2", "/", (1, 2), "1/2"),
        ("v2", ".", (), "0"),
        ("v2", "/", (), "0"),
        ("v2", ".", (10, 0, 3), "10.0.3"),
    ],
)
def test_encode_known_keys(name: str, sep: str, coords: tuple[int, ...], key: str) -> None:
    enc = ChunkKeyEncoding(name, sep)
    assert enc.encode(coords) == key
    assert enc.decode(key, len(coords)) == coords


@FAST
@given(
    st.sampled_from(ENCODINGS),
    st.lists(st.integers(0, 10**12), min_size=0, max_size=5).map(tuple),
)
def test_decode_inverts_encode(enc: ChunkKeyEncoding, coords: tuple[int, ...]) -> None:
    key = enc.encode(coords)
    assert enc.decode(key, len(coords)) == coords
    # The same key never decodes at another rank (except v2's "0": 0-d and 1-d chunk 0).
    if coords or enc.name == "default":
        assert enc.decode(key, len(coords) + 1) is None
    if coords and (enc.name == "default" or coords != (0,)):
        assert enc.decode(key, len(coords) - 1) is None


@pytest.mark.parametrize("enc", ENCODINGS, ids=lambda e: f"{e.name}{e.separator}")
@pytest.mark.parametrize(
    "key",
    [".zarray", ".zattrs", ".zgroup", "zarr.json", "", "c/", "c//1", "x", "1.2.",
     "c/01", "c.01", "01.2", "c/-1", "-1.2", "c/+1", "+1.2", "c/1/x", "1.x", "c/1.5",
     "c/١", "c/ 1", " 1.2"],
)
def test_decode_rejects_non_chunk_keys(enc: ChunkKeyEncoding, key: str) -> None:
    for ndim in range(4):
        decoded = enc.decode(key, ndim)
        # A key is accepted only if encode() gives it back exactly.
        assert decoded is None or enc.encode(decoded) == key


def test_decode_wrong_encoding_or_rank() -> None:
    assert ChunkKeyEncoding("default", "/").decode("1/2", 2) is None
    assert ChunkKeyEncoding("default", "/").decode("c.1.2", 2) is None
    assert ChunkKeyEncoding("default", ".").decode("c/1/2", 2) is None
    assert ChunkKeyEncoding("v2", ".").decode("c.1.2", 2) is None
    assert ChunkKeyEncoding("v2", ".").decode("1/2", 2) is None
    assert ChunkKeyEncoding("v2", ".").decode("1.2", 3) is None
    assert ChunkKeyEncoding("v2", ".").decode("c", 0) is None
    assert ChunkKeyEncoding("default", "/").decode("0", 0) is None
    assert ChunkKeyEncoding("v2", ".").decode("0", 1) == (0,)  # 1-d chunk 0 and 0-d share "0"


@pytest.mark.parametrize(("name", "sep"), [("v3", "/"), ("default", "-"), ("v2", "")])
def test_key_encoding_validates(name: str, sep: str) -> None:
    with pytest.raises(ValueError, match=repr(name) if name == "v3" else repr(sep)):
        ChunkKeyEncoding(name, sep)


def test_key_encoding_is_hashable_value() -> None:
    assert ChunkKeyEncoding("v2", ".") == ChunkKeyEncoding("v2", ".")
    assert len({ChunkKeyEncoding("v2", "."), ChunkKeyEncoding("v2", ".")}) == 1
    assert ChunkKeyEncoding(*("default", "/")).encode((3,)) == "c/3"


# --------------------------------------------------------------------------- grid


def test_grid_basics() -> None:
    grid = RegularChunkGrid((10, 7), (4, 4))
    assert grid.grid_shape == (3, 2)
    assert grid.nchunks == 6
    assert grid.ndim == 2
    assert list(grid.all_chunk_coords()) == list(product(range(3), range(2)))
    assert grid.chunk_region((0, 0)) == (slice(0, 4), slice(0, 4))
    assert grid.chunk_region((2, 1)) == (slice(8, 10), slice(4, 7))
    assert not grid.is_edge_chunk((1, 0))
    assert grid.is_edge_chunk((2, 0))
    assert grid.is_edge_chunk((0, 1))
    assert grid.contains((2, 1))
    assert not grid.contains((3, 0))
    assert not grid.contains((0, -1))
    assert not grid.contains((0,))


def test_grid_zero_d_and_zero_length() -> None:
    grid = RegularChunkGrid((), ())
    assert grid.grid_shape == ()
    assert grid.nchunks == 1
    assert list(grid.all_chunk_coords()) == [()]
    assert grid.chunk_region(()) == ()
    assert not grid.is_edge_chunk(())
    assert list(grid.chunk_coords_in_region(())) == [()]
    empty = RegularChunkGrid((0, 5), (1, 2))
    assert empty.grid_shape == (0, 3)
    assert empty.nchunks == 0
    assert list(empty.all_chunk_coords()) == []
    assert list(empty.chunk_coords_in_region((slice(None),))) == []


def test_grid_normalizes_numpy_ints_and_is_hashable() -> None:
    grid = RegularChunkGrid(tuple(np.array([5, 6])), [np.int32(2), 3])  # type: ignore[arg-type]
    assert grid.shape == (5, 6) and grid.chunks == (2, 3)
    assert all(type(v) is int for v in grid.shape + grid.chunks)
    assert grid == RegularChunkGrid((5, 6), (2, 3))
    assert hash(grid) == hash(RegularChunkGrid((5, 6), (2, 3)))


@pytest.mark.parametrize(
    ("shape", "chunks", "match"),
    [
        ((10,), (0,), "at least 1"),
        ((10,), (-1,), "at least 1"),
        ((10, 10), (5,), "one entry per dimension"),
        ((-1,), (1,), "non-negative"),
        ((10,), (2.5,), "integers"),
    ],
)
def test_grid_validates(shape: tuple, chunks: tuple, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        RegularChunkGrid(shape, chunks)


def test_grid_rejects_bad_coords() -> None:
    grid = RegularChunkGrid((10, 7), (4, 4))
    with pytest.raises(BoundsCheckError, match=r"\(3, 0\).*\(3, 2\)"):
        grid.chunk_region((3, 0))
    with pytest.raises(BoundsCheckError):
        grid.is_edge_chunk((0,))
    with pytest.raises(InvalidSelectionError, match="slices"):
        list(grid.chunk_coords_in_region((1,)))  # type: ignore[arg-type]
    with pytest.raises(InvalidSelectionError, match="more entries"):
        list(grid.chunk_coords_in_region((slice(None),) * 3))
    with pytest.raises(InvalidSelectionError, match="zero"):
        list(grid.chunk_coords_in_region((slice(None, None, 0),)))


def _bound() -> st.SearchStrategy[int | None]:
    return st.none() | st.integers(-14, 14)


@FAST
@given(
    st.lists(st.tuples(st.integers(0, 12), st.integers(1, 5)), min_size=0, max_size=3),
    st.data(),
)
def test_chunk_coords_in_region_matches_brute_force(
    dims: list[tuple[int, int]], data: st.DataObject
) -> None:
    shape = tuple(d[0] for d in dims)
    chunks = tuple(d[1] for d in dims)
    grid = RegularChunkGrid(shape, chunks)
    nregion = data.draw(st.integers(0, len(shape)))
    region = tuple(
        slice(data.draw(_bound()), data.draw(_bound()),
              data.draw(st.none() | st.integers(-5, 5).filter(bool)))
        for _ in range(nregion)
    )
    got = list(grid.chunk_coords_in_region(region))
    full_region = region + (slice(None),) * (len(shape) - nregion)
    ids = np.arange(math.prod(shape)).reshape(shape)[full_region]
    expected = sorted({tuple(int(i) // c for i, c in zip(np.unravel_index(v, shape), chunks))
                       for v in ids.reshape(-1)}) if ids.size else []
    if not shape:
        expected = [()]
    assert got == expected  # C order, each chunk once


def test_chunk_coords_in_region_large_steps_are_cheap() -> None:
    grid = RegularChunkGrid((10**15,), (10,))
    coords = list(grid.chunk_coords_in_region((slice(0, None, 10**12),)))
    assert coords == [(i * 10**11,) for i in range(1000)]


# --------------------------------------------------------------------------- normalize


def test_normalize_shape() -> None:
    assert normalize_shape(5) == (5,)
    assert normalize_shape(np.int64(5)) == (5,)
    assert normalize_shape([2, np.uint8(3)]) == (2, 3)
    assert normalize_shape(()) == ()
    assert normalize_shape(np.array([4, 0])) == (4, 0)
    assert all(type(s) is int for s in normalize_shape(np.array([4, 0])))


@pytest.mark.parametrize("bad", [-1, (3, -2), 2.5, (2.0,), "ab", (True,), None])
def test_normalize_shape_rejects(bad: object) -> None:
    with pytest.raises(ValueError, match="shape"):
        normalize_shape(bad)


@pytest.mark.parametrize(
    ("chunks", "shape", "expected"),
    [
        (10, (100, 30), (10, 10)),
        (50, (10,), (50,)),  # as zarr: an int is used as given, not clipped
        ((5, None), (10, 7), (5, 7)),
        ((-1, 3), (10, 7), (10, 3)),
        ((None, -1), (0, 0), (1, 1)),
        (False, (10, 0, 3), (10, 1, 3)),
        (False, (), ()),
        (7, (), ()),
        ([np.int64(2), 3], (4, 4), (2, 3)),
        (np.array([2, 3]), (4, 4), (2, 3)),
        (True, (10, 10), (10, 10)),
        (None, (0,), (1,)),
    ],
)
def test_normalize_chunks(chunks: object, shape: tuple, expected: tuple) -> None:
    result = normalize_chunks(chunks, shape, 8)
    assert result == expected
    assert all(type(c) is int for c in result)


@pytest.mark.parametrize(
    ("chunks", "shape", "match"),
    [
        ((5,), (10, 10), r"one entry per dimension of shape \(10, 10\)"),
        ((5, 5, 5), (10, 10), "one entry per dimension"),
        (0, (10,), "positive"),
        ((5, -2), (10, 10), r"positive.*-2"),
        ((5, 2.5), (10, 10), "2.5"),
        ((5, True), (10, 10), "True"),
        ("auto", (10,), "auto"),
        (((5, 5), (3, 3)), (10, 6), "irregular"),
    ],
)
def test_normalize_chunks_rejects(chunks: object, shape: tuple, match: str) -> None:
    with pytest.raises(ValueError, match=match) as info:
        normalize_chunks(chunks, shape, 8)
    assert str(shape) in str(info.value)


def test_guess_chunks_examples() -> None:
    assert normalize_chunks(None, (100,), 8) == (100,)  # small arrays: one chunk
    chunks = normalize_chunks(None, (4096, 4096), 8)
    assert 0.75 * MiB < math.prod(chunks) * 8 <= 2 * MiB
    assert normalize_chunks(None, (10, 10**9), 8)[0] == 10  # the largest axis is split
    assert normalize_chunks(None, (5,), 10**9) == (1,)  # huge items: one per chunk
    assert normalize_chunks(None, (10, 10), 0) == (10, 10)


@FAST
@given(
    st.lists(st.integers(0, 10**6), min_size=0, max_size=4).map(tuple),
    st.sampled_from([1, 2, 4, 8, 16, 1000]),
)
def test_guess_chunks_properties(shape: tuple[int, ...], itemsize: int) -> None:
    chunks = normalize_chunks(None, shape, itemsize)
    assert len(chunks) == len(shape)
    assert all(1 <= c <= max(s, 1) for c, s in zip(chunks, shape))
    chunk_bytes = math.prod(chunks) * itemsize
    array_bytes = math.prod(max(s, 1) for s in shape) * itemsize
    assert chunk_bytes <= 64 * MiB
    if array_bytes <= 1.5 * MiB:
        assert chunks == tuple(max(s, 1) for s in shape)
    else:
        assert chunk_bytes > 0.75 * MiB  # "roughly 1 MiB and up"
