"""``ArrayMap``: the value maps :func:`~chunkflow.skimage.segmentation.relabel_sequential`
returns, with the interface of scikit-image's (``skimage.util._map_array.ArrayMap``).

Examples
--------
>>> import numpy as np
>>> forward = ArrayMap(np.array([0, 10]), np.array([0.25, 1.0]))
>>> forward
ArrayMap(array([ 0, 10]), array([0.25, 1.  ]))
>>> forward[np.array([[0, 10], [10, 3]])]
array([[0.25, 1.  ],
       [1.  , 0.  ]])
>>> len(forward), forward[10], forward.dtype
(11, np.float64(1.0), dtype('float64'))
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["ArrayMap", "map_array"]


def map_array(values: np.ndarray, in_values: np.ndarray, out_values: np.ndarray) -> np.ndarray:
    """``values`` with each of ``in_values`` replaced by the matching ``out_values`` and
    every other value by 0, as ``skimage.util.map_array``."""
    order = np.argsort(in_values, kind="stable")
    keys, mapped = in_values[order], out_values[order]
    result = np.zeros(values.shape, out_values.dtype)
    if keys.size == 0:
        return result
    at = np.searchsorted(keys, values)
    at[at == keys.size] = 0
    found = keys[at] == values
    result[found] = mapped[at[found]]
    return result


class ArrayMap:
    """A map from ``in_values`` to ``out_values`` that indexes like a numpy array
    (``values[indices]``) without one entry per possible value."""

    _max_str_lines = 4

    def __init__(self, in_values: np.ndarray, out_values: np.ndarray) -> None:
        self.in_values = in_values
        self.out_values = out_values
        self._array: np.ndarray | None = None

    def __len__(self) -> int:
        """One more than the largest value mapped."""
        return int(np.max(self.in_values)) + 1

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """The map as a dense array (of ``len(self)`` entries)."""
        output = np.zeros(np.max(self.in_values) + 1, dtype=dtype or self.out_values.dtype)
        output[self.in_values] = self.out_values
        return output

    @property
    def dtype(self) -> np.dtype:
        return self.out_values.dtype

    def __repr__(self) -> str:
        return f"ArrayMap({self.in_values!r}, {self.out_values!r})"

    def __str__(self) -> str:
        rows = list(range(len(self.in_values)))
        if len(rows) > self._max_str_lines + 1:
            half = self._max_str_lines // 2
            lines = [self._line(i) for i in rows[:half]] + ["  ..."] + \
                [self._line(i) for i in rows[-half:]]
        else:
            lines = [self._line(i) for i in rows]
        return "\n".join(["ArrayMap:", *lines])

    def _line(self, i: int) -> str:
        return f"  {self.in_values[i]} → {self.out_values[i]}"

    def __call__(self, values: Any) -> Any:
        return self[values]

    def __getitem__(self, index: Any) -> Any:
        scalar = np.isscalar(index)
        if scalar:
            index = np.array([index])
        elif isinstance(index, slice):
            stop = index.stop if index.stop is not None else len(self)
            index = np.arange(index.start or 0, stop, index.step)
        index = np.asarray(index)
        if index.dtype == bool:
            index = np.flatnonzero(index)
        out = map_array(index, self.in_values.astype(index.dtype, copy=False), self.out_values)
        return out[0] if scalar else out

    def __setitem__(self, indices: Any, values: Any) -> None:
        if self._array is None:
            self._array = self.__array__()
        self._array[indices] = values
        self.in_values = np.flatnonzero(self._array)
        self.out_values = self._array[self.in_values]
