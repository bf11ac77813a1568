"""Arrays for testing filters, halos and downsampling: every element drawn on its own.

:func:`~chunkflow.testing.strategies.values.arrays` lets hypothesis fill most of an
array with one value, which finds the corners of chunked reads; a filter, a halo or a
window reduction that is off by one element gives the same result on such an array.
:func:`varied_arrays` draws each element by itself (corner values still one draw in
four), so that neighbours differ.

Examples
--------
>>> from hypothesis import find
>>> import numpy as np
>>> a = find(varied_arrays(np.dtype("u1"), (8,)), lambda a: len(set(a.tolist())) > 4)
>>> a.shape, a.dtype
((8,), dtype('uint8'))
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from chunkflow.testing.strategies.array_shapes import shapes
from chunkflow.testing.strategies.values import dtypes, elements

__all__ = ["varied_arrays"]


def varied_arrays(
    dtype: np.dtype | st.SearchStrategy[np.dtype] | None = None,
    shape: tuple[int, ...] | st.SearchStrategy[tuple[int, ...]] | None = None,
) -> st.SearchStrategy[np.ndarray]:
    """An array of ``dtype`` and ``shape`` (each a value or a strategy; defaults as
    :func:`~chunkflow.testing.strategies.values.arrays`) whose every element is drawn
    from :func:`~chunkflow.testing.strategies.values.elements`, none left to a fill."""
    dtype_strategy = dtype if isinstance(dtype, st.SearchStrategy) else (
        dtypes() if dtype is None else st.just(np.dtype(dtype)))
    shape_strategy = shape if isinstance(shape, st.SearchStrategy) else (
        shapes() if shape is None else st.just(tuple(shape)))

    @st.composite
    def draw_array(draw: st.DrawFn) -> np.ndarray:
        drawn_dtype = draw(dtype_strategy)
        native = drawn_dtype.newbyteorder("=")
        values = draw(hnp.arrays(native, draw(shape_strategy), elements=elements(native),
                                 fill=st.nothing()))
        return values.astype(drawn_dtype)

    return draw_array()
