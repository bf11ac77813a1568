"""Values that look like the fill value but are not: where storage loses bits.

A chunk that equals the fill value is left out of the store and reads back as the fill
value. ``-0.0 == 0.0`` and every NaN is "like" every other NaN, so a check made with
``==`` (or ``isnan``) drops a chunk of ``-0.0`` (or of another NaN) and reads back
``+0.0`` (the fill's NaN). These strategies draw arrays made mostly of the fill value
and of its twins (same ``==``, other bits), so that whole chunks of twins are common.

Examples
--------
>>> import numpy as np
>>> [float(v) for v in fill_twins(np.dtype("f8"), 0.0)]
[-0.0]
>>> [hex(int(np.array(v).view("u4"))) for v in fill_twins(np.dtype(">f4"), np.nan)][:2]
['0xffc00000', '0x7fc00001']
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from chunkflow.testing.strategies.values import elements, special_values

__all__ = ["fill_twins", "near_fill_arrays"]


def _same_bits(a: Any, b: Any, dtype: np.dtype) -> bool:
    return bool(np.array(a, dtype).tobytes() == np.array(b, dtype).tobytes())


def fill_twins(dtype: np.dtype, fill: Any) -> list[Any]:
    """Values of ``dtype`` (native order) that ``==`` calls equal to ``fill`` (or that
    are NaN, like a NaN fill) but whose bits differ: ``-0.0`` for ``0.0``, other NaNs
    (sign, payload, signalling) for a NaN; in complex types, each part's twins. Other
    kinds have none.

    Examples
    --------
    >>> import numpy as np
    >>> fill_twins(np.dtype("i4"), 0)
    []
    >>> [complex(v) for v in fill_twins(np.dtype("c8"), 0)]
    [-0j, (-0+0j), (-0-0j)]
    """
    native = np.dtype(dtype).newbyteorder("=")
    if native.kind == "f":
        value = native.type(fill)
        if np.isnan(value):
            candidates = [v for v in special_values(native) if np.isnan(v)]
        else:
            candidates = [-value] if value == 0 else []
        return [v for v in candidates if not _same_bits(v, value, native)]
    if native.kind == "c":
        value = native.type(fill)
        part = np.dtype(f"f{native.itemsize // 2}")
        reals = [value.real, *fill_twins(part, value.real)]
        imags = [value.imag, *fill_twins(part, value.imag)]
        out = []
        for r in reals:
            for i in imags:
                twin = np.array([r, i], part).view(native)[0]
                if not _same_bits(twin, value, native):
                    out.append(twin)
        return out
    return []


def near_fill_arrays(dtype: np.dtype, shape: tuple[int, ...], fill: Any
                     ) -> st.SearchStrategy[np.ndarray]:
    """Arrays of ``dtype`` and ``shape`` whose elements are mostly ``fill`` or one of its
    :func:`fill_twins` (one kind per array, so whole chunks of one twin are common), and
    now and then any value of the dtype.

    Examples
    --------
    >>> from hypothesis import find
    >>> import numpy as np
    >>> a = find(near_fill_arrays(np.dtype("f8"), (4,), 0.0), lambda a: np.signbit(a).all())
    >>> a.tolist()
    [-0.0, -0.0, -0.0, -0.0]
    """
    dtype = np.dtype(dtype)
    native = dtype.newbyteorder("=")
    fill_item = np.full((), fill, native)[()]
    pool = [fill_item, *fill_twins(native, fill_item)]

    @st.composite
    def draw_array(draw: st.DrawFn) -> np.ndarray:
        main = draw(st.sampled_from(pool))
        others = st.one_of(st.sampled_from(pool), elements(native))
        size = int(np.prod(shape))
        items = np.full(size, main, native)
        for index in draw(st.lists(st.integers(0, max(size - 1, 0)), max_size=3)) if size else []:
            items[index] = draw(others)
        return items.reshape(shape).astype(dtype)

    return draw_array()
