"""Any basic selection of an array as a lazy dask array whose blocks fall on chunks.

The graph is two layers, whatever the size of the array: the array itself (one key,
pickled with its metadata, so tasks never read ``zarr.json`` again) and one
``Blockwise`` layer whose tasks read one block each. The blocks are described by a
:class:`SelectionDep` (block index -> array selection), computed on demand from a
:class:`~chunkflow.graph.blocks.DimBlocks` per dimension: no task, key or per-chunk object
exists until dask materializes the graph, which it does only for the blocks a
computation needs.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> z = chunkflow.array(np.arange(100).reshape(10, 10), chunks=(4, 4))
>>> x = chunkflow.to_dask(z, (slice(2, 9), 3), blocks=(1, 1))
>>> x.chunks
((2, 4, 1),)
>>> x.compute().tolist()
[23, 33, 43, 53, 63, 73, 83]
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import dask
import dask.array as da
import numpy as np
from dask._task_spec import TaskRef
from dask.base import normalize_token, tokenize
from dask.blockwise import blockwise
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
from dask.layers import ArrayBlockwiseDep
from dask.utils import parse_bytes

from chunkflow.api.hierarchy import open_node
from chunkflow.config.renames import renamed_parameters
from chunkflow.core.array import Array
from chunkflow.engine.pool import batch_chunks, serial_io
from chunkflow.errors import ArgumentTypeError, InvalidArgumentError, InvalidSelectionError
from chunkflow.graph.blocks import (
    DimBlocks,
    auto_per_block,
    block_counts,
    canonical_selection,
    compose_selection,
    default_per_block,
    dim_blocks,
)
from chunkflow.graph.scheduler import worker_threads
from chunkflow.grid import ceil_div
from chunkflow.storage import Store

if TYPE_CHECKING:
    from chunkflow.indexing import Selection

__all__ = [
    "ArraySource", "BlockChunks", "ChunkflowDaskArray", "SelectionDep", "as_source_array",
    "block_multiples", "to_dask", "writer_source",
]

#: An array to read, as the graph functions accept it: an open :class:`~chunkflow.Array`,
#: or the location of one (a path, a URL, a store or a mapping), opened read-only.
ArraySource: TypeAlias = Array | Store | Mapping[str, bytes] | str | os.PathLike[str]

#: Dask blocks in whole chunks (see :func:`block_multiples`): ``None`` for one block per
#: chunk (small chunks grouped), ``"auto"`` or a byte size for blocks near that size, or
#: a number of chunks per block, for every dimension or one per dimension (``-1``: all).
BlockChunks: TypeAlias = int | str | Sequence[int] | None

# The default plan (blocks=None) follows da.from_zarr: one block per stored chunk (per
# shard). Only chunks smaller than this are grouped, up to this many decoded bytes per
# block: a task costs dask about 0.1 ms of scheduling and a few KiB of graph, which
# dwarfs reading an 8 KiB chunk. Measured on 2 cores, 8192^2 uint16, mean + std, fresh
# process (benchmarks/bench_graph.py, case 5): 64^2 chunks one per block 22 s at 463 MB
# peak RSS (da.from_zarr 28 s, 327 MB), grouped to 256 KiB 1.3 s at 161 MB, to 1 MiB
# 1.2 s at 171 MB; 256^2 chunks, 256 KiB 0.8 s at 156 MB, 1 MiB 0.6 s at 166 MB
# (da.from_zarr 1.4 s, 161 MB). 256 KiB: faster than da.from_zarr and no larger.
DEFAULT_MIN_BLOCK_BYTES = 2**18
# ...and grouping never leaves fewer blocks than this many per worker thread, where the
# selection spans that many chunks, so that every thread has work until the end.
BLOCKS_PER_THREAD = 4
# On a latency-bound store (object store, HTTP) a task's time is its requests' round
# trips, not its decoding: one chunk per task kept one request in flight per worker
# thread (2 on 2 cores). There a task streams its chunks (Store.stream_many, one
# thread's share of the in-flight budget out at once), and each task starts with an
# empty pipeline: a round trip before its first chunk arrives. So blocks grow to
# dask's array.chunk-size, with a floor of LATENCY_BLOCKS_PER_THREAD blocks per thread.
# Measured on 2 cores, 20 ms per request over HTTP, 8192x16384 uint16 in 512 chunks of
# 512 KiB, medians of 5: 16 blocks (a share each) 0.69-0.78 s, 8 blocks 0.55-0.66 s,
# 4 blocks 0.53-0.58 s; z[:] 0.44-0.48 s.
LATENCY_BLOCKS_PER_THREAD = 2


class SelectionDep(ArrayBlockwiseDep):
    """Block index -> the selection of the array that block reads.

    Parameters
    ----------
    dims : tuple of DimBlocks
        One plan per array dimension; the blocks run over the kept ones.

    Examples
    --------
    >>> from chunkflow.graph.blocks import dim_blocks
    >>> dep = SelectionDep(dim_blocks((10, 10), (4, 4), (slice(1, 9), 2), (1, 1)))
    >>> dep.numblocks, dep[(1,)]
    ((3,), (slice(4, 8, 1), 2))
    """

    def __init__(self, dims: tuple[DimBlocks, ...]) -> None:
        kept = [dim for dim in dims if dim.kept]
        super().__init__(tuple(dim.chunks for dim in kept))
        self.dims = dims
        self.starts = tuple(dim.edges for dim in kept)

    def __getitem__(self, idx: tuple[int, ...]) -> tuple[int | slice, ...]:
        blocks = iter(zip(idx, self.starts))
        selection: list[int | slice] = []
        for dim in self.dims:
            if dim.kept:
                i, starts = next(blocks)
                selection.append(dim.array_slice(starts[i], starts[i + 1]))
            else:
                selection.append(dim.index)  # type: ignore[arg-type]  # a dimension not kept has an int index
        return tuple(selection)


@normalize_token.register(SelectionDep)
def _tokenize_selection_dep(dep: SelectionDep) -> tuple[Any, ...]:
    # The plans' small tokens determine every block: hashing the chunk tuples of a
    # grid of millions of blocks would cost more than building the graph.
    return ("chunkflow.SelectionDep", tuple(dim.token for dim in dep.dims))


def _is_basic(selection: Selection) -> bool:
    entries = selection if isinstance(selection, tuple) else (selection,)
    return all(
        isinstance(e, slice) or e is Ellipsis
        or (isinstance(e, (int, np.integer)) and not isinstance(e, (bool, np.bool_)))
        for e in entries
    )


class ChunkflowDaskArray(da.Array):
    """The dask array :func:`to_dask` returns: slicing it again re-plans the read.

    ``x[basic selection]`` on it is ``to_dask(array, composed selection)``: a new
    two-layer graph over only the selected chunks, instead of a ``getitem`` layer over
    every block of ``x``. That matters at scale, because dask materializes the keys of
    every block of every layer when it culls a graph (10^6 keys for a 10^6-chunk array),
    whatever a computation needs. A selection of more than half of the blocks stays
    dask's ``getitem``, which shares the reads with other uses of ``x``; it is given
    the selection in its plainest form (:func:`~chunkflow.graph.blocks.canonical_selection`,
    which dask reads as numpy does), and its result slices the same way. Anything else
    behaves as any dask array.
    """

    _chunkflow_blocks: tuple[Array, tuple[DimBlocks, ...], tuple[int, ...]] | None = None

    def __getitem__(self, index: Selection) -> da.Array:
        if not _is_basic(index) or any(math.isnan(n) for n in self.shape):
            return super().__getitem__(index)
        if self._chunkflow_blocks is not None:
            array, dims, multiples = self._chunkflow_blocks
            selection = compose_selection(dims, index)
            selected = math.prod(block_counts(array.shape, array.write_chunks, selection,
                                              multiples))
            if 2 * selected <= math.prod(self.numblocks):
                return to_dask(array, selection, multiples)
        # Most of the blocks: dask's getitem shares their reads with whatever else a
        # computation does with x (x.sum() and x[::3].sum() together read each chunk
        # once, not twice), and its layer is no larger than x's own.
        result = super().__getitem__(canonical_selection(index, self.shape))
        if isinstance(result, ChunkflowDaskArray):
            return result  # x itself (dask returns x for x[:])
        meta = np.empty((0,) * result.ndim, dtype=result.dtype)
        return ChunkflowDaskArray(result.dask, result.name, result.chunks, meta=meta)


# A block of more chunks than this reads them with the I/O pool (a task that reads
# hundreds of chunks would otherwise leave the other cores idle when there are fewer
# blocks than cores); smaller blocks read in the task's thread, as dask supplies the
# parallelism across tasks.
SERIAL_MAX_CHUNKS = 16


def read_block(array: Array, selection: tuple[int | slice, ...], serial: bool = True) -> np.ndarray:
    """The task of every block: read ``selection`` of ``array``."""
    with serial_io() if serial else contextlib.nullcontext():
        value = array.get_basic_selection(selection)
    if isinstance(value, np.ndarray):
        return value
    # One element (every dimension an integer) comes as a numpy scalar, of native byte
    # order: the block keeps the array's dtype, as the dask array's meta says.
    block = np.empty((), dtype=array.dtype)
    block[()] = value
    return block


def block_multiples(array: Array, selection: Selection, blocks: BlockChunks) -> tuple[int, ...]:
    """Chunks per block along each dimension, from ``to_dask``'s ``blocks=`` argument.

    ``None`` (the default): one block per chunk (per shard), as ``da.from_zarr``,
    except that chunks smaller than :data:`DEFAULT_MIN_BLOCK_BYTES` are grouped
    toward that size, never leaving fewer than :data:`BLOCKS_PER_THREAD` blocks per
    worker thread (:func:`~chunkflow.graph.scheduler.worker_threads`) where there are
    that many chunks. On a latency-bound store
    (``Store.latency_bound``: object stores, HTTP) chunks are grouped up to dask's
    ``array.chunk-size`` (at least one thread's share of the in-flight budget,
    :func:`~chunkflow.engine.pool.batch_chunks`), so that each task keeps many
    requests in flight and few tasks wait for a first round trip, with a floor of
    :data:`LATENCY_BLOCKS_PER_THREAD` blocks per thread. ``"auto"``: blocks near
    dask's ``array.chunk-size``; a byte size (int or text such as ``"64 MiB"``):
    blocks near that size; a tuple: that many chunks per block in each dimension
    (``-1`` or ``None``: the whole dimension).

    Examples
    --------
    >>> import chunkflow
    >>> z = chunkflow.zeros((1000, 1000), chunks=(100, 100), dtype="u1")
    >>> block_multiples(z, ..., (2, -1)), block_multiples(z, ..., 40_000)
    ((2, 10), (2, 2))
    >>> block_multiples(chunkflow.zeros((8192, 8192), chunks=(1024, 1024)), ..., None)
    (1, 1)
    """
    unit = array.write_chunks  # the unit of I/O: the shard of a sharded array
    if blocks is None:
        threads = worker_threads()
        itemsize = array.dtype.itemsize
        if getattr(array.store, "latency_bound", False):
            unit_bytes = itemsize * math.prod(unit)
            per_task = max(batch_chunks(unit_bytes, threads) * unit_bytes,
                           parse_bytes(dask.config.get("array.chunk-size")))
            return default_per_block(array.shape, unit, selection, itemsize, per_task,
                                     LATENCY_BLOCKS_PER_THREAD * threads)
        return default_per_block(array.shape, unit, selection, itemsize,
                                 DEFAULT_MIN_BLOCK_BYTES, BLOCKS_PER_THREAD * threads)
    if blocks == "auto":
        blocks = dask.config.get("array.chunk-size")
    if isinstance(blocks, str):
        blocks = parse_bytes(blocks)
    if isinstance(blocks, (int, np.integer)) and not isinstance(blocks, bool):
        return auto_per_block(array.shape, unit, selection, array.dtype.itemsize, int(blocks))
    if not isinstance(blocks, tuple) or len(blocks) != array.ndim:
        raise InvalidSelectionError(
            f"array {array.path or '/'!r}: blocks= must be 'auto', a byte size or a tuple of "
            f"{array.ndim} chunk multiples, got {blocks!r}"
        )
    multiples = []
    for dim, (k, size, chunk) in enumerate(zip(blocks, array.shape, unit)):
        if k is None or k == -1:
            k = max(1, ceil_div(size, chunk))
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
            raise InvalidSelectionError(
                f"array {array.path or '/'!r}: blocks[{dim}] must be a whole number of chunks "
                f">= 1 (or -1 for the whole dimension), got {k!r}"
            )
        multiples.append(int(k))
    return tuple(multiples)


def writer_source(source: ArraySource, storage_options: Mapping[str, Any] | None = None,
                  **open_kwargs: Any) -> Array:
    """:func:`as_source_array` for a job that writes: its ``storage_options`` apply to
    the URLs given (the output's, ``temp``'s, a source's), so an open array source
    takes none of them, rather than refusing them (``out="s3://..."`` needs them).

    Examples
    --------
    >>> import chunkflow
    >>> z = chunkflow.zeros(4, chunks=2)
    >>> writer_source(z, {"anon": True}) is z
    True
    """
    if isinstance(source, Array):
        return source
    return as_source_array(source, storage_options, **open_kwargs)


def as_source_array(source: ArraySource, storage_options: Mapping[str, Any] | None = None,
                    **open_kwargs: Any) -> Array:
    """``source`` as an open chunkflow array (paths, URLs and stores opened read-only,
    with ``open_kwargs`` such as ``cache=False``)."""
    if isinstance(source, Array):
        if storage_options:
            raise InvalidArgumentError("storage_options apply to URLs, not to an open chunkflow.Array")
        return source
    if not isinstance(source, (str, os.PathLike, Store, Mapping)):
        raise ArgumentTypeError(
            f"to_dask needs a chunkflow.Array, a path, a URL or a store, got "
            f"{type(source).__name__}"
        )
    node = open_node(source, mode="r", storage_options=dict(storage_options or {}) or None,
                     **open_kwargs)
    if not isinstance(node, Array):
        raise InvalidSelectionError(f"to_dask: {source!r} holds a group, not an array")
    return node


@renamed_parameters(chunks="blocks")
def to_dask(
    source: ArraySource,
    selection: Selection = Ellipsis,
    blocks: BlockChunks = None,
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> da.Array:
    """A lazy dask array over ``source[selection]``, with blocks on chunk edges.

    Parameters
    ----------
    source : chunkflow.Array, path, URL or store
        The array to read (opened read-only when given by location). Its chunks are
        read past the process-wide chunk cache, as ``da.from_zarr`` reads them, unless
        the array was opened with its own ``cache=ChunkCache(...)`` or ``cache=True``.
    selection : basic selection
        Integers, slices (any step, negative too) and one Ellipsis, as numpy.
    blocks : None, "auto", int, str or tuple
        The dask blocks (``chunks`` of the dask array), each of whole chunks of the
        stored array. ``None`` (default): one block per chunk, as
        ``da.from_zarr`` makes, with chunks under 256 KiB grouped (but never fewer
        than 4 blocks per worker thread where there are that many chunks); on object
        stores and HTTP, chunks are grouped so that each task keeps many requests in
        flight (see :func:`block_multiples`). ``"auto"``: blocks near dask's
        ``array.chunk-size``; a byte size; or a tuple of chunks per block per
        dimension (see :func:`block_multiples`). For a sharded
        array the unit is the shard.
    storage_options : dict, optional
        fsspec options when ``source`` is a URL.

    Returns
    -------
    dask.array.Array
        Two graph layers however many chunks there are: the array, and one
        ``Blockwise`` layer of reads. Task names are deterministic.

    Examples
    --------
    >>> import chunkflow
    >>> z = chunkflow.zeros((10**6, 10**6), chunks=(1000, 1000), dtype="u1")
    >>> x = to_dask(z, blocks=(1, 1))
    >>> x.numblocks, len(x.dask.layers)
    ((1000, 1000), 2)
    >>> int(x[:2000, :3000].sum().compute())
    0

    By default, a block per chunk, as ``da.from_zarr`` makes:

    >>> to_dask(chunkflow.zeros((4096, 4096), chunks=(1024, 1024), dtype="u2")).numblocks
    (4, 4)
    """
    # Read past the process-wide chunk cache, as da.from_zarr reads: a computation reads
    # each chunk once, and caching them held up to the cache budget for nothing (mean +
    # std of 8192^2 uint16: 290-320 MiB peak RSS instead of 160-200 MiB). Reading past
    # the cache is always fresh. An array opened with its own ChunkCache (or cache=True)
    # keeps it.
    array = as_source_array(source, storage_options,
                            **({} if isinstance(source, Array) else {"cache": False}))
    if array.options.cache is None:
        array = array.with_options(cache=False)
    multiples = block_multiples(array, selection, blocks)
    dims = dim_blocks(array.shape, array.write_chunks, selection, multiples)
    dep = SelectionDep(dims)
    array_key = f"chunkflow-array-{tokenize(array)}"
    name = f"chunkflow-read-{tokenize(array_key, dep)}"
    out_ind = tuple(range(len(dep.chunks)))
    serial = math.prod(multiples) <= SERIAL_MAX_CHUNKS
    layer = blockwise(read_block, name, out_ind, TaskRef(array_key), None, dep, out_ind,
                      serial, None, numblocks={}, _data_producer=True)
    graph = HighLevelGraph(
        {array_key: MaterializedLayer({array_key: array}), name: layer},
        {array_key: set(), name: {array_key}},
    )
    meta = np.empty((0,) * len(out_ind), dtype=array.dtype)
    result = ChunkflowDaskArray(graph, name, dep.chunks, meta=meta)
    result._chunkflow_blocks = (array, dims, multiples)
    return result


@renamed_parameters(chunks="blocks")
def _to_dask_method(
    self: Array, selection: Selection = Ellipsis, blocks: BlockChunks = None
) -> da.Array:
    """A lazy dask array over ``self[selection]``; see :func:`chunkflow.to_dask`.

    Examples
    --------
    >>> import chunkflow
    >>> z = chunkflow.ones((8, 8), chunks=(2, 2), dtype="i2")
    >>> int(z.to_dask(blocks=(2, 2)).sum().compute())
    64
    """
    return to_dask(self, selection, blocks)


# The array layer cannot import the graph layer; the graph layer adds the method.
Array.to_dask = _to_dask_method  # type: ignore[attr-defined]  # added here: core cannot import graph
