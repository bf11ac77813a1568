"""Array shapes from 0-D to 4-D, zero-length sides included.

Examples
--------
>>> from hypothesis import find
>>> find(shapes(min_dims=2), lambda s: 0 in s)
(0, 0)
"""

from __future__ import annotations

from hypothesis import strategies as st

__all__ = ["shapes"]


def shapes(*, min_dims: int = 0, max_dims: int = 4, max_side: int = 7,
           zero_sides: bool = True) -> st.SearchStrategy[tuple[int, ...]]:
    """A shape of ``min_dims`` to ``max_dims`` sides of up to ``max_side`` (0 sometimes).

    Examples
    --------
    >>> from hypothesis import find
    >>> len(find(shapes(min_dims=3, max_dims=3, zero_sides=False), lambda s: True))
    3
    """
    side = st.integers(0 if zero_sides else 1, max_side)
    return st.lists(side, min_size=min_dims, max_size=max_dims).map(tuple)
