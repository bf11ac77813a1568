"""Order statistics without sorting: order-preserving integer keys, and numpy's own
arithmetic for turning order statistics into quantiles.

:mod:`~chunkflow.graph.reductions.quantiles` finds the values at given ranks of an array larger
than memory by counting the bits of integer keys (a radix selection). This module holds
the pure-numpy parts:

- :func:`to_keys` / :func:`from_keys`: each value as an unsigned integer of the same
  width whose order is the values' order (floats: the sign bit flipped, negative values
  fully inverted; signed integers: the sign bit flipped), and back, bit for bit;
- :func:`first_counts`, :func:`digit_counts` and :func:`matching_keys`: what one block
  task of a counting or gathering pass computes;
- :func:`quantile_ranks` and :func:`linear_quantile`: numpy's ``linear`` method (the
  default of ``numpy.quantile``) written as two steps, "which ranks" and "combine the
  values found there", with numpy's very operations, so results are numpy's bit for bit
  (including its result dtype, its weak promotion of a Python-scalar ``q`` and its
  ``_lerp`` formula).

Examples
--------
>>> import numpy as np
>>> values = np.array([-np.inf, -2.5, -0.0, 0.0, 1e-30, 3.0, np.inf], dtype="f4")
>>> keys = to_keys(values)
>>> bool(np.all(np.diff(keys.astype(np.int64)) > 0))
True
>>> np.array_equal(from_keys(keys, values.dtype), values)
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.errors import ArgumentTypeError, InvalidArgumentError

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = [
    "as_index", "bucket_table", "check_dtype", "digit_counts", "first_counts", "from_keys",
    "in_buckets", "linear_quantile", "matching_keys", "median_of", "median_ranks",
    "prepare_q", "quantile_ranks", "to_keys", "wanted_ranks",
]

# Values a block task turns into keys at a time: its temporaries stay a few MiB
# whatever the block size.
STEP = 2**18


def check_dtype(dtype: np.dtype[Any], what: str, booleans: bool = False) -> np.dtype[Any]:
    """The native-endian dtype order statistics are found in, or a clear refusal.

    ``booleans``: whether ``what`` takes booleans (numpy's medians do, averaging the
    middle values; its quantiles cannot interpolate them).

    Examples
    --------
    >>> check_dtype(np.dtype(">f4"), "percentile")
    dtype('float32')
    >>> check_dtype(np.dtype(bool), "median", booleans=True)
    dtype('bool')
    >>> check_dtype(np.dtype(bool), "quantile")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    chunkflow.errors.ArgumentTypeError: quantile of a bool array: numpy refuses it too (it
    cannot subtract booleans); convert it first, e.g. with astype('u1')
    """
    if dtype.kind == "b" and not booleans:
        raise ArgumentTypeError(f"{what} of a bool array: numpy refuses it too (it cannot subtract "
                                "booleans); convert it first, e.g. with astype('u1')")
    if dtype.kind not in "iufb" or dtype.itemsize not in (1, 2, 4, 8):
        raise ArgumentTypeError(
            f"{what} needs booleans, integers or floats of 1 to 8 bytes, got dtype {dtype}; "
            f"for other data, read the selection and call numpy.{what} on it")
    return dtype.newbyteorder("=")


def _unsigned(dtype: np.dtype[Any]) -> np.dtype[Any]:
    return np.dtype(f"u{dtype.itemsize}")


def to_keys(values: np.ndarray) -> np.ndarray:
    """Unsigned keys ordered as ``values`` (native byte order), of the same width.

    NaN has keys too: above ``+inf`` with the sign bit clear, below ``-inf`` with it set.
    """
    utype = _unsigned(values.dtype)
    raw = np.ascontiguousarray(values).view(utype)
    sign = utype.type(1 << (8 * utype.itemsize - 1))
    if values.dtype.kind == "f":
        # Negative floats order backwards by their bits: invert them all (the arithmetic
        # shift spreads the sign bit over the word); positive ones only need the sign
        # bit set, to sort above every negative one.
        signed = raw.view(f"i{utype.itemsize}")
        flip = (signed >> (8 * utype.itemsize - 1)).view(utype)
        flip |= sign
        return np.bitwise_xor(raw, flip, out=flip)
    if values.dtype.kind == "i":
        return raw ^ sign
    return raw


def from_keys(keys: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """The values whose keys are ``keys`` (the inverse of :func:`to_keys`)."""
    keys = np.asarray(keys, _unsigned(dtype))
    sign = keys.dtype.type(1 << (8 * keys.dtype.itemsize - 1))
    if dtype.kind == "f":
        raw = np.where(keys >= sign, keys ^ sign, ~keys)
    elif dtype.kind == "i":
        raw = keys ^ sign
    else:
        raw = keys
    return np.ascontiguousarray(raw).view(dtype)


def as_index(values: np.ndarray) -> np.ndarray:
    """Small unsigned integers as something ``bincount`` and indexing take (uint64 does
    not cast safely to intp; its small values view as intp unchanged)."""
    return values.view(np.intp) if values.dtype.itemsize == 8 else values


def first_counts(block: np.ndarray, digit_bits: int) -> np.ndarray:
    """Counts of the top ``digit_bits`` of every key, then the NaN count and the count
    of NaN with the sign bit set (whose keys sort below ``-inf``)."""
    flat = block.reshape(-1)
    bits = 8 * flat.dtype.itemsize
    counts = np.zeros((1 << digit_bits) + 2, np.int64)
    for start in range(0, flat.size, STEP):
        values = flat[start:start + STEP]
        keys = to_keys(values)
        counts[:-2] += np.bincount(as_index(keys >> (bits - digit_bits)),
                                   minlength=1 << digit_bits)
        if values.dtype.kind == "f":
            nan = np.isnan(values)
            if nan.any():
                counts[-2] += np.count_nonzero(nan)
                counts[-1] += np.count_nonzero(nan & np.signbit(values))
    return counts


def bucket_table(prefixes: np.ndarray, level: int) -> np.ndarray:
    """A lookup on the top (at most 16) bits of a key: the row of its prefix when
    ``level <= 16``, else 0 where some prefix starts with those bits; -1 elsewhere."""
    top = min(level, 16)
    table = np.full(1 << top, -1, np.int32)
    if level <= 16:
        table[as_index(prefixes)] = np.arange(len(prefixes), dtype=np.int32)
    else:
        table[as_index(prefixes >> (level - 16))] = 0
    return table


def in_buckets(keys: np.ndarray, prefixes: np.ndarray, level: int,
                table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The keys whose top ``level`` bits are one of ``prefixes``, and the row of each's
    prefix. A table lookup drops most keys at once; a binary search places the rest."""
    bits = 8 * keys.dtype.itemsize
    hit = table[as_index(keys >> (bits - min(level, 16)))]
    selected = hit >= 0
    keys = keys[selected]
    if level <= 16:
        return keys, hit[selected].astype(np.intp)
    high = keys >> (bits - level)
    where = np.minimum(np.searchsorted(prefixes, high), len(prefixes) - 1)
    match = prefixes[where] == high
    return keys[match], where[match]


def digit_counts(block: np.ndarray, prefixes: np.ndarray, level: int,
                  digit_bits: int) -> np.ndarray:
    """Per prefix (the top ``level`` bits of a key), the counts of the next digit."""
    flat = block.reshape(-1)
    bits = 8 * flat.dtype.itemsize
    counts = np.zeros(len(prefixes) << digit_bits, np.int64)
    table = bucket_table(prefixes, level)
    for start in range(0, flat.size, STEP):
        keys, rows = in_buckets(to_keys(flat[start:start + STEP]), prefixes, level, table)
        digit = ((keys >> (bits - level - digit_bits)) & ((1 << digit_bits) - 1))
        counts += np.bincount((rows << digit_bits) + digit.astype(np.intp),
                              minlength=len(counts))
    return counts


def matching_keys(block: np.ndarray, prefixes: np.ndarray, level: int) -> np.ndarray:
    """The keys of ``block`` whose top ``level`` bits are one of ``prefixes``."""
    flat = block.reshape(-1)
    table = bucket_table(prefixes, level)
    found = [in_buckets(to_keys(flat[start:start + STEP]), prefixes, level, table)[0]
             for start in range(0, flat.size, STEP)]
    return np.concatenate(found) if found else np.empty(0, prefixes.dtype)


def prepare_q(q: ArrayLike, percent: bool) -> tuple[np.ndarray, bool]:
    """``q`` as numpy's ``percentile``/``quantile`` hold it (divided by 100 for
    percentiles), and whether it promotes weakly (a Python int or float), with numpy's
    range check."""
    weak_q = type(q) in (int, float)
    # (np.asanyarray(ufunc(...)) rather than numpy 2.3's ufunc(..., out=...): one array
    # even for a 0-d result, on every numpy that pyproject allows.)
    array = np.asanyarray(np.true_divide(q, 100) if percent else q)
    if array.dtype.kind not in "iuf" or array.size == 0 or not (
            array.min() >= 0 and array.max() <= 1):
        name = "Percentiles must be in the range [0, 100]" if percent else \
            "Quantiles must be in the range [0, 1]"
        raise InvalidArgumentError(f"{name}, got q={q!r}")
    return array, weak_q


def quantile_ranks(n: int, q: np.ndarray) -> tuple[Any, Any, Any]:
    """numpy's indexes for the ``linear`` method over ``n`` sorted values:
    ``(virtual, previous, next)``; ``previous`` is None when ``virtual`` holds integers
    (numpy then takes those ranks directly). An index ``-1`` means the last value."""
    virtual = np.asanyarray((n - 1) * q)
    if np.issubdtype(virtual.dtype, np.integer):
        return virtual, None, None
    # numpy's _get_indexes, step by step.
    previous = np.asanyarray(np.floor(virtual))
    following = np.asanyarray(np.add(previous, 1))
    above = virtual >= n - 1
    previous[above] = -1
    following[above] = -1
    below = virtual < 0
    previous[below] = 0
    following[below] = 0
    return virtual, previous.astype(np.intp), following.astype(np.intp)


def wanted_ranks(n: int, indexes: Any) -> list[int]:
    """The sorted distinct ranks (0 to n-1) that ``indexes`` name."""
    flat = np.concatenate([np.ravel(i) for i in indexes if i is not None])
    return sorted({int(i) % n for i in flat})


def _lerp(a: Any, b: Any, t: Any) -> Any:
    # numpy's _lerp (numpy/lib/_function_base_impl.py), unchanged but for out=...
    # (numpy >= 2.3): exact at t = 0 and t = 1, and monotonic.
    diff_b_a = b - a
    lerp_interpolation = np.asanyarray(np.add(a, diff_b_a * t))
    np.subtract(b, diff_b_a * (1 - t), out=lerp_interpolation, where=t >= 0.5,
                casting="unsafe", dtype=type(lerp_interpolation.dtype))
    if lerp_interpolation.ndim == 0:
        lerp_interpolation = lerp_interpolation[()]
    return lerp_interpolation


def linear_quantile(n: int, q: np.ndarray, weak_q: bool, dtype: np.dtype[Any],
                    value_at: Callable[[int], Any], has_nan: bool = False) -> Any:
    """numpy's ``quantile(a, q)`` (``linear`` method, ``axis=None``) for an ``a`` of ``n``
    values of ``dtype`` whose sorted value at rank ``r`` is ``value_at(r)``; NaN when
    ``has_nan`` (numpy's result for data holding NaN).

    Examples
    --------
    >>> data = np.array([3, 1, 2, 10], dtype="i2")
    >>> q, weak = prepare_q([0, 40, 100], percent=True)
    >>> ordered = np.sort(data)
    >>> linear_quantile(4, q, weak, data.dtype, lambda r: ordered[r])
    array([ 1. ,  2.2, 10. ])
    """
    virtual, previous, following = quantile_ranks(n, q)
    ranks = wanted_ranks(n, (virtual, previous, following))
    # A small array standing in for the sorted data: indexing it with mapped indexes
    # gives what numpy's arr[indexes] gives (same dtype, same scalar-or-array shape).
    known = np.array([value_at(r) for r in ranks], dtype=dtype)
    last = len(ranks) - 1 if ranks and ranks[-1] == n - 1 else None

    def mapped(indexes: Any) -> Any:
        flat = [last if int(i) == -1 else ranks.index(int(i)) for i in np.ravel(indexes)]
        return np.asarray(flat, np.intp).reshape(np.shape(indexes))

    if previous is None:
        result = np.take(known, mapped(virtual), axis=0)
    else:
        gamma = np.asanyarray(virtual - previous)
        gamma = np.asanyarray(gamma, dtype=virtual.dtype)
        gamma = float(gamma) if weak_q else gamma.reshape(virtual.shape)
        result = _lerp(known[mapped(previous)], known[mapped(following)], gamma)
    if has_nan:
        if np.ndim(result) == 0:
            return dtype.type(np.nan)
        result = np.asarray(result)
        result[...] = np.nan
    return result


def median_ranks(n: int) -> list[int]:
    """The ranks numpy's median averages: the middle one, or the middle two.

    Examples
    --------
    >>> median_ranks(5), median_ranks(6)
    ([2], [2, 3])
    """
    return [n // 2 - 1, n // 2] if n % 2 == 0 else [(n - 1) // 2]


def median_of(middle: np.ndarray, has_nan: bool = False) -> Any:
    """numpy's median from its middle values (``numpy.mean`` of them, as numpy does)."""
    if has_nan:
        return middle.dtype.type(np.nan)
    return np.mean(middle)
