"""``chunks="auto"`` and ``shards="auto"`` of :func:`chunkflow.create_array`, following
zarr-python 3.1's ``_auto_partition``: inner chunks near 1 MiB when sharding, and an
automatic shard of two chunks along every axis that has more than eight of them.

Examples
--------
>>> auto_partition((1000, 1000), (10, 10), "auto", itemsize=1)
((20, 20), (10, 10))
>>> auto_partition((4096, 4096), "auto", (2048, 2048), itemsize=2)
((2048, 2048), (512, 512))
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from chunkflow.grid import ceil_div, normalize_chunks

if TYPE_CHECKING:
    from chunkflow.grid import ChunksLike

__all__ = ["auto_partition"]

#: zarr-python aims inner chunks of sharded arrays at 1 MiB.
INNER_CHUNK_BYTES = 1 << 20


def _guess_inner(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    """zarr-python's guess (h5py's rule) capped at 1 MiB: a target that grows with the
    array, reached by halving the axes in turn, within 50% of it."""
    chunks = [max(int(s), 1) for s in shape]
    if not chunks:
        return ()
    size = math.prod(chunks) * itemsize
    target = 256 * 1024 * 2 ** math.log10(size / (1024 * 1024))
    target = min(max(target, 128 * 1024), INNER_CHUNK_BYTES)
    turn = 0
    while True:
        size = math.prod(chunks) * itemsize
        close = size < target or abs(size - target) / target < 0.5
        if (close and size < INNER_CHUNK_BYTES) or math.prod(chunks) == 1:
            return tuple(chunks)
        axis = turn % len(chunks)
        chunks[axis] = ceil_div(chunks[axis], 2)
        turn += 1


def _largest_divisor_at_most(n: int, bound: int) -> int:
    return max(d for d in range(1, max(min(n, bound), 1) + 1) if n % d == 0)


def auto_partition(shape: Sequence[int], chunks: ChunksLike | Literal["auto"],
                   shards: Sequence[int] | str | Mapping[str, Any] | None,
                   itemsize: int) -> tuple[Any, Any]:
    """``(shards, chunks)`` with ``"auto"`` resolved where sharding asks for it.

    Without shards nothing changes (chunkflow guesses plain chunks itself). With shards
    and ``chunks="auto"``, inner chunks are guessed near 1 MiB and shrunk to divide
    given shards. ``shards="auto"`` warns, as zarr-python does: the rule may change.
    """
    if shards is None:
        return None, chunks
    if isinstance(chunks, str) and chunks == "auto":
        guess = _guess_inner(shape, max(int(itemsize), 1))
        if isinstance(shards, Mapping):  # zarr-python's {"shape": (...)} form
            shards = tuple(shards["shape"])
        if not isinstance(shards, str):
            guess = tuple(_largest_divisor_at_most(int(s), g) for s, g in zip(shards, guess))
        chunks = guess
    if isinstance(shards, str) and shards == "auto":
        warnings.warn("shards='auto' is experimental (as in zarr-python): the shard shape it "
                      "picks may change; pass shards= explicitly to keep a layout",
                      UserWarning, stacklevel=3)
        inner = normalize_chunks(chunks, tuple(shape), max(int(itemsize), 1))
        shards = tuple(c * 2 if s // c > 8 else c for s, c in zip(shape, inner))
    elif isinstance(shards, Mapping):  # zarr-python's {"shape": (...)} form
        shards = tuple(shards["shape"])
    return tuple(shards), chunks
