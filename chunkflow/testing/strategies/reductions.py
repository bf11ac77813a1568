"""What a reduction is asked: axes in numpy's spellings, and dask blocks of any sizes.

- :func:`reduction_axes`: ``None``, one axis or a tuple of them, negative spellings
  included, and (when asked) numpy's refusals: an axis out of range, one given twice;
- :func:`block_arguments`: ``blocks=`` as chunkflow's reductions and ``to_dask`` take
  it: the default, chunks per block (``-1`` for a whole side), or a byte size;
- :func:`ordinary_arrays`: finite values of moderate size, where a mean or variance is
  neither NaN nor overflowing (the corner values of :func:`~.values.arrays` make most
  of them NaN), so that its rounding is what a test sees;
- :func:`dask_chunks`: explicit dask chunks for a shape, with zero-size blocks among
  them (at either end or between), as ``dask.array.from_array(data, chunks=...)``
  takes them: a reduction must give the same answer whatever the blocks.

Examples
--------
>>> from hypothesis import find
>>> find(dask_chunks((5,)), lambda c: 0 in c[0])
((0, 5),)
>>> find(reduction_axes(3), lambda a: isinstance(a, tuple) and len(a) == 2)
(0, 1)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from chunkflow.testing.strategies.array_shapes import shapes as shape_strategy
from chunkflow.testing.strategies.values import dtypes as dtype_strategy

__all__ = ["block_arguments", "dask_chunks", "ordinary_arrays", "reduction_axes"]


@st.composite
def reduction_axes(draw: st.DrawFn, ndim: int, *, invalid: bool = False
                   ) -> int | tuple[int, ...] | None:
    """An ``axis=`` argument for an array of ``ndim`` dimensions.

    Parameters
    ----------
    ndim : int
        The dimensions of the array reduced.
    invalid : bool
        Now and then (one draw in ten) an axis numpy refuses: out of range
        (``AxisError``) or repeated (``ValueError``).
    """
    if invalid and draw(st.sampled_from([False] * 9 + [True])):
        bad = draw(st.sampled_from(["range", "twice"]) if ndim else st.just("range"))
        if bad == "range":
            return draw(st.sampled_from([ndim, -ndim - 1]))
        axis = draw(st.integers(0, ndim - 1))
        return (axis, axis - ndim)  # one axis, spelt twice
    form = draw(st.sampled_from(["none", "int", "tuple"]))
    if form == "none" or (form == "int" and not ndim):
        return None
    if form == "int":
        return draw(st.integers(-ndim, ndim - 1))
    chosen = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim)
                  if ndim else st.just([]))
    # Each axis positive or negative (numpy normalizes both), in any order.
    return tuple(a - ndim if draw(st.booleans()) else a for a in chosen)


def _sizes(n: int) -> st.SearchStrategy[tuple[int, ...]]:
    """Block sizes adding up to ``n``, zeros anywhere among them."""
    @st.composite
    def draw_sizes(draw: st.DrawFn) -> tuple[int, ...]:
        cuts = sorted(draw(st.lists(st.integers(0, n), max_size=4)))
        sizes = [b - a for a, b in zip([0, *cuts], [*cuts, n])]
        return tuple(sizes) if sizes else (n,)

    return draw_sizes()


def dask_chunks(shape: tuple[int, ...]) -> st.SearchStrategy[tuple[tuple[int, ...], ...]]:
    """Explicit dask chunks for ``shape``: per dimension, block sizes that add up to its
    length, some of them zero (repeated cuts, cuts at either end)."""
    return st.tuples(*[_sizes(n) for n in shape])


def block_arguments(shape: tuple[int, ...]) -> st.SearchStrategy[int | tuple[int, ...] | None]:
    """``blocks=`` for an array of ``shape``: ``None`` (the default plan), 1 to 3 chunks
    (or ``-1``, all) per block along each side, or a byte size (tiny ones too: a block
    is at least one chunk).

    Examples
    --------
    >>> from hypothesis import find
    >>> find(block_arguments((4, 4)), lambda b: isinstance(b, tuple) and -1 in b)
    (1, -1)
    """
    # One chunk per block most often: the most partial results to merge.
    multiples = st.tuples(*[st.sampled_from([1, 1, 2, 3, -1]) for _ in shape])
    return st.one_of(multiples, multiples, st.none(), st.integers(1, 4096))


def _ordinary(dtype: np.dtype[Any]) -> st.SearchStrategy[Any]:
    native = dtype.newbyteorder("=")
    if native.kind == "f":
        # (A bound the dtype holds exactly: float16's is 65.5.)
        limit = float(native.type(min(1e4, float(np.finfo(native).max) / 1e3)))
        return hnp.from_dtype(native, allow_nan=False, allow_infinity=False,
                              min_value=-limit, max_value=limit)
    if native.kind == "c":
        part = np.dtype(f"f{native.itemsize // 2}")
        return st.builds(complex, _ordinary(part), _ordinary(part))
    return hnp.from_dtype(native)


def ordinary_arrays(dtypes: st.SearchStrategy[np.dtype[Any]] | None = None,
                    shapes: st.SearchStrategy[tuple[int, ...]] | None = None
                    ) -> st.SearchStrategy[np.ndarray]:
    """Arrays of finite values below 1e4 in magnitude (floats; any integers), of a dtype
    from ``dtypes`` (default: numeric, either byte order) and a shape from ``shapes``.

    Examples
    --------
    >>> from hypothesis import find
    >>> data = find(ordinary_arrays(), lambda a: a.dtype.kind == "f" and a.size > 2)
    >>> bool(np.isfinite(data).all())
    True
    """
    dtype_choice = dtypes if dtypes is not None else dtype_strategy(kinds="biufc", byteorder="any")
    shape_choice = shapes if shapes is not None else shape_strategy()

    @st.composite
    def draw_array(draw: st.DrawFn) -> np.ndarray:
        dtype = draw(dtype_choice)
        values = draw(hnp.arrays(dtype.newbyteorder("="), draw(shape_choice),
                                 elements=_ordinary(dtype)))
        return values.astype(dtype)

    return draw_array()
