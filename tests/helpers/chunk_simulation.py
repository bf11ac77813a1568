"""A chunked array simulated as a dict of full-chunk-shaped numpy chunks (edges padded),
read and written through an indexer's projections, to compare indexers with numpy."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from chunkflow.grid import RegularChunkGrid
from chunkflow.indexing import ChunkProjection

__all__ = ["PAD", "UNSET", "assemble", "check_against_numpy", "chunked_read", "chunked_write",
           "expected_chunks", "local_region", "make_chunks"]

PAD = -7  # padding of edge chunks: must never be read into the output nor overwritten
UNSET = -99  # initial output content: every output element must be written

Chunks = dict[tuple[int, ...], np.ndarray]


# --------------------------------------------------------------------------- harness


def make_chunks(data: np.ndarray, grid: RegularChunkGrid) -> Chunks:
    chunks = {}
    for coords in grid.all_chunk_coords():
        chunk = np.full(grid.chunks, PAD, dtype=data.dtype)
        chunk[local_region(grid, coords)] = data[grid.chunk_region(coords)]
        chunks[coords] = chunk
    return chunks


def local_region(grid: RegularChunkGrid, coords: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(0, r.stop - r.start) for r in grid.chunk_region(coords))


def assemble(chunks: Chunks, grid: RegularChunkGrid) -> np.ndarray:
    out = np.full(grid.shape, UNSET, dtype=np.int64)
    for coords, chunk in chunks.items():
        local = local_region(grid, coords)
        out[grid.chunk_region(coords)] = chunk[local]
        padding = np.ones(grid.chunks, dtype=bool)
        padding[local] = False
        assert (chunk[padding] == PAD).all(), f"padding of chunk {coords} was written"
    return out


def check_complete(p: ChunkProjection, grid: RegularChunkGrid) -> None:
    """A complete projection is plain unit slices covering the in-bounds chunk region."""
    for s in p.chunk_selection + p.out_selection:
        assert isinstance(s, slice) and s.step in (None, 1), p
    ids = np.arange(math.prod(grid.chunks)).reshape(grid.chunks)
    np.testing.assert_array_equal(ids[p.chunk_selection], ids[local_region(grid, p.chunk_coords)])


def chunked_read(indexer: Any, chunks: Chunks, grid: RegularChunkGrid) -> tuple[np.ndarray, list]:
    out = np.full(indexer.shape, UNSET, dtype=np.int64)
    touched = []
    for p in indexer:
        assert isinstance(p, ChunkProjection)
        touched.append(p.chunk_coords)
        out[p.out_selection] = chunks[p.chunk_coords][p.chunk_selection]
        if p.is_complete_chunk:
            check_complete(p, grid)
    return indexer.result(out), touched


def chunked_write(indexer: Any, chunks: Chunks, value: np.ndarray) -> None:
    value = indexer.value_in_plan_order(np.broadcast_to(value, indexer.result_shape))
    value = np.broadcast_to(value, indexer.sel_shape).reshape(indexer.shape)
    for p in indexer:
        chunks[p.chunk_coords][p.chunk_selection] = value[p.out_selection]


def expected_chunks(grid: RegularChunkGrid, select: Callable[[np.ndarray], np.ndarray]) -> set:
    """Chunks holding at least one selected element, by brute force."""
    ids = np.arange(math.prod(grid.shape)).reshape(grid.shape)
    picked = np.unique(np.asarray(select(ids)))
    if not grid.shape:
        return {()} if picked.size else set()
    coords = np.unravel_index(picked, grid.shape)
    return {tuple(int(c[i]) // n for c, n in zip(coords, grid.chunks)) for i in range(picked.size)}


def check_against_numpy(
    indexer: Any, grid: RegularChunkGrid, select: Callable[[np.ndarray], np.ndarray],
    assign: Callable[[np.ndarray, np.ndarray], None],
) -> None:
    """Read and write through ``indexer`` and compare with numpy doing the same."""
    data = np.arange(math.prod(grid.shape), dtype=np.int64).reshape(grid.shape)
    chunks = make_chunks(data, grid)
    expected = np.asarray(select(data))

    got, touched = chunked_read(indexer, chunks, grid)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    assert len(touched) == len(set(touched)) == indexer.nchunks == len(indexer)
    assert set(touched) == expected_chunks(grid, select)

    value = 1000 + np.arange(math.prod(indexer.result_shape), dtype=np.int64).reshape(
        indexer.result_shape
    )
    chunked_write(indexer, chunks, value)
    written = data.copy()
    assign(written, value)
    np.testing.assert_array_equal(assemble(chunks, grid), written)
