"""Whether chunks hold nothing but the fill value, bit for bit.

A chunk left out of the store (``write_empty_chunks=False``) reads back as the fill
value, so it may be left out only when reading it back gives the same bits: ``-0.0``
is not the fill ``0.0``, and a NaN with another payload (or sign) is not the fill
NaN, although ``==`` (or ``isnan``) says they are. The checks compare bit patterns,
vectorized: each element viewed as an unsigned integer of its size (a void item
for other sizes), structured items field by field (their padding bytes are not
data).

Examples
--------
>>> import numpy as np
>>> is_all_fill(np.zeros(3), np.float64(0.0))
True
>>> is_all_fill(np.array([0.0, -0.0]), np.float64(0.0))  # -0.0 must be stored
False
>>> fill_mask(np.array([0.0, -0.0, 1.0]), np.float64(-0.0))
array([False,  True, False])
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["fill_mask", "is_all_fill"]

_UNSIGNED: dict[int, np.dtype] = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32),
             8: np.dtype(np.uint64)}


def fill_item(fill_value: Any, dtype: np.dtype) -> np.ndarray:
    """The fill value as a 0-d array of ``dtype``, with the bits a chunk made by
    ``numpy.full(shape, fill_value, dtype)`` (a missing chunk read back) holds."""
    return np.full((), fill_value, dtype=dtype)


def fill_mask(array: np.ndarray, fill_value: Any) -> np.ndarray:
    """Per element of ``array``: whether its bits are those of ``fill_value``.

    ``array`` may be any view (strided, transposed, read-only); no element is
    copied. Object items are compared with ``==`` and their types.

    Examples
    --------
    >>> import numpy as np
    >>> nan = np.array([0x7FF8000000000000, 0x7FF8000000000001], "u8").view("f8")
    >>> fill_mask(nan, np.float64("nan"))
    array([ True, False])
    >>> fill_mask(np.array([1, 2], ">i2"), 2)
    array([False,  True])
    """
    return _same_bits(array, fill_item(fill_value, array.dtype))


def _same_bits(array: np.ndarray, fill: np.ndarray) -> np.ndarray:
    dtype = array.dtype
    if dtype.names is not None:
        # Field by field: padding between fields holds whatever memory held.
        mask = np.ones(array.shape, dtype=bool)
        for name in dtype.names:
            same = _same_bits(array[name], fill[name])
            if same.ndim > array.ndim:  # a subarray field: every element must match
                same = np.asarray(same.all(axis=tuple(range(array.ndim, same.ndim))))
            mask &= same
        return mask
    if dtype.hasobject:  # an object field of a structured type
        return np.frompyfunc(_same_item, 2, 1)(array, fill).astype(bool)
    # A view with the same item size is valid for any strides.
    bits: np.dtype = _UNSIGNED.get(dtype.itemsize, np.dtype((np.void, dtype.itemsize)))
    return np.asarray(array.view(bits) == fill.view(bits))


def is_all_fill(chunk: np.ndarray, fill_value: Any) -> bool:
    """Whether every element of ``chunk`` has the bits of ``fill_value``: whether the
    chunk may be left out of the store and read back as the fill value unchanged.

    NaN matches a NaN fill value only with the same sign and payload, ``-0.0`` does
    not match ``0.0``. Object items (JSON, variable-length codecs) are compared one
    by one, with ``==`` and their types.

    Examples
    --------
    >>> import numpy as np
    >>> is_all_fill(np.full(4, np.nan), np.float64("nan"))
    True
    >>> is_all_fill(np.array([0, 0, 1]), np.int64(0))
    False
    >>> is_all_fill(np.full(2, -0.0), np.float64(0.0))
    False
    """
    if chunk.size == 0:
        return True
    if chunk.dtype.kind == "O":
        # Items may be lists or arrays (JSON, vlen-array codecs): compare one by one.
        return all(_same_item(item, fill_value) for item in chunk.flat)
    fill = fill_item(fill_value, chunk.dtype)
    # The first element decides most data chunks without a full comparison (indexed,
    # not reshaped: reshaping a strided view would copy the whole chunk).
    if chunk.size > 1 and not _same_bits(chunk[(slice(0, 1),) * chunk.ndim], fill).all():
        return False
    return bool(_same_bits(chunk, fill).all())


def _same_item(item: object, fill_value: object) -> bool:
    if item is fill_value:
        return True
    if isinstance(item, np.ndarray) or isinstance(fill_value, np.ndarray):
        return False
    return type(item) is type(fill_value) and bool(item == fill_value)
