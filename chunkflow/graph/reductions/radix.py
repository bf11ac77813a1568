"""The passes of a radix selection: the values at given ranks of an array larger than
memory, from counts of the top bits of order-preserving keys
(:mod:`~chunkflow.graph.reductions.order_keys`).

:func:`select` starts from the first pass's counts (the top bits of every key) and
narrows each wanted rank's bucket, one digit per counting pass (:func:`count_pass`),
until the values left in the chosen buckets fit the budget; a last pass gathers them
(:func:`gather`) and selects exactly. A pass that finds other counts than the pass
before raises :class:`~chunkflow.errors.ValuesChangedError`.

Examples
--------
>>> import dask.array as da
>>> from chunkflow.graph.reductions.order_keys import first_counts
>>> data = np.array([5.0, -1.0, 3.0, 2.0, 7.0])
>>> x = da.from_array(data, chunks=2)
>>> first = first_counts(data, 16)[:-2]
>>> options = PassOptions("median", "sync", False, 2**20)
>>> {rank: float(value) for rank, value in select(x, first, 16, [0, 2], options).items()}
{0: -1.0, 2: 3.0}
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.errors import ValuesChangedError
from chunkflow.graph.reductions.order_keys import digit_counts, from_keys, matching_keys
from chunkflow.graph.reductions.tree import gather_tree, tree_reduce
from chunkflow.graph.scheduler import ProgressArg, compute

if TYPE_CHECKING:
    import dask.array as da

    from chunkflow.graph.scheduler import SchedulerLike

__all__ = ["MAX_DIGIT_BITS", "PassOptions", "count_pass", "gather", "narrow",
           "next_digit_bits", "select", "values_changed"]

# The widest digit one counting pass resolves (a 2^16-bucket histogram per wanted
# bucket, 512 KiB of counts).
MAX_DIGIT_BITS = 16


@dataclass(frozen=True)
class PassOptions:
    """Where the data comes from and how a pass runs (shared by every pass)."""

    what: str
    scheduler: SchedulerLike
    progress: ProgressArg
    budget: int  # bytes one task may use (max_memory)


def next_digit_bits(bits: int, level: int, buckets: int, budget: int) -> int:
    """Bits the next pass resolves: up to 16, fewer when many buckets are followed
    (their counts, 8 bytes each, take at most a 32nd of a task's budget: a combine
    step holds four of them and its sum)."""
    fits = int(np.log2(max(2, budget // 32 // 8 // max(1, buckets))))
    return max(1, min(MAX_DIGIT_BITS, bits - level, fits))


def count_pass(x: da.Array, prefixes: np.ndarray, level: int, digit_bits: int,
                options: PassOptions) -> np.ndarray:
    lazy = tree_reduce(x, partial(digit_counts, prefixes=prefixes, level=level,
                                  digit_bits=digit_bits), every=4)
    (counts,) = compute(lazy, scheduler=options.scheduler, progress=options.progress)
    return counts.reshape(len(prefixes), 1 << digit_bits)


def values_changed(what: str) -> ValuesChangedError:
    """The error of a pass that found other counts than the pass before."""
    return ValuesChangedError(
        f"the array's values changed between the passes of {what} (a pass found a "
        "different number of values in a bucket than the pass before); nothing was "
        "returned: run it again while nothing writes to the array")


def narrow(counts: np.ndarray, prefixes: np.ndarray, digit_bits: int,
           inside: dict[int, tuple[int, int]]) -> dict[int, tuple[int, int, int]]:
    """For each rank (row of its bucket, rank inside it): the bucket one digit deeper
    that holds it, as (prefix, rank inside, values in it)."""
    cumulative = counts.cumsum(axis=1)
    chosen = {}
    for rank, (row, within) in inside.items():
        bucket = int(np.searchsorted(cumulative[row], within, side="right"))
        before = int(cumulative[row, bucket - 1]) if bucket else 0
        prefix = (int(prefixes[row]) << digit_bits) | bucket
        chosen[rank] = (prefix, within - before, int(counts[row, bucket]))
    return chosen


def select(x: da.Array, first: np.ndarray, first_bits: int, ranks: list[int],
           options: PassOptions) -> dict[int, Any]:
    """The values at ``ranks`` in key order (NaN keys included), from the first pass's
    counts."""
    dtype = x.dtype
    bits = 8 * dtype.itemsize
    ukey = np.dtype(f"u{dtype.itemsize}")
    capacity = max(1, options.budget // 4 // dtype.itemsize)
    prefixes = np.zeros(1, ukey)
    counts, level, digit_bits = first.reshape(1, -1), 0, first_bits
    inside = {r: (0, r) for r in ranks}  # rank -> (row of its bucket, rank inside it)
    while True:
        chosen = narrow(counts, prefixes, digit_bits, inside)
        level += digit_bits
        sizes = {prefix: size for prefix, _, size in chosen.values()}
        wanted = sorted(sizes)
        prefixes = np.array(wanted, ukey)
        if level == bits:  # every bit known: the key is the value
            return {r: from_keys(np.array([p], ukey), dtype)[0]
                    for r, (p, _, _) in chosen.items()}
        if sum(sizes.values()) <= capacity:
            return gather(x, prefixes, level, chosen, options)
        inside = {r: (wanted.index(p), w) for r, (p, w, _) in chosen.items()}
        digit_bits = next_digit_bits(bits, level, len(wanted), options.budget)
        counts = count_pass(x, prefixes, level, digit_bits, options)
        if counts.sum(axis=1).tolist() != [sizes[p] for p in wanted]:
            raise values_changed(options.what)


def gather(x: da.Array, prefixes: np.ndarray, level: int,
           chosen: dict[int, tuple[int, int, int]], options: PassOptions) -> dict[int, Any]:
    """The values at the chosen ranks, from one pass gathering the keys of their buckets
    (``chosen``: rank -> (bucket prefix, rank inside, values in it))."""
    lazy = gather_tree(x, partial(matching_keys, prefixes=prefixes, level=level),
                       dtype=prefixes.dtype)
    (keys,) = compute(lazy, scheduler=options.scheduler, progress=options.progress)
    high = keys >> (8 * keys.dtype.itemsize - level)
    values = {}
    for rank, (prefix, within, size) in chosen.items():
        candidates = keys[high == prefix]
        if len(candidates) != size:
            raise values_changed(options.what)
        values[rank] = from_keys(np.partition(candidates, within)[within:within + 1],
                                 x.dtype)[0]
    return values
