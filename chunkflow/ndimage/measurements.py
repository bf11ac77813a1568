"""scipy.ndimage's label statistics over chunked arrays, from tables merged over blocks.

Each function takes scipy's ``input``, ``labels`` and ``index`` (chunkflow arrays,
paths, URLs or numpy arrays; ``input`` and ``labels`` of one shape) and returns what
scipy returns, of the same types: one value for all voxels (``labels=None``), for the
positive labels (``index=None``) or for one label (a scalar ``index``); an array (or a
list) with one entry per ``index`` element otherwise, an absent label giving what scipy
gives (0, NaN, the position 0). The job keywords are ``scheduler``, ``progress`` and
``storage_options``. See :mod:`chunkflow.graph.label_statistics` for the tables.

Integer sums are exact; float sums are rounded in another order than scipy's
(``numpy.bincount``'s line or ``numpy.sum``'s pairs), within a rounding of them.

Examples
--------
>>> import numpy as np
>>> from scipy import ndimage
>>> import chunkflow
>>> image = np.arange(12).reshape(3, 4)
>>> labels = chunkflow.array(np.array([[1, 1, 0, 2]] * 3), chunks=(2, 2))
>>> mean(image, labels, [1, 2, 3]).tolist()
[4.5, 7.0, nan]
>>> maximum_position(image, labels, 1)
(np.int64(2), np.int64(1))
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from chunkflow.errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    InvalidSelectionError,
    ShapeMismatchError,
)
from chunkflow.graph.filters import open_image
from chunkflow.graph.label_medians import values_at_ranks
from chunkflow.graph.label_statistics import Groups, label_table

__all__ = ["center_of_mass", "extrema", "histogram", "labeled_comprehension", "maximum",
           "maximum_position", "mean", "median", "minimum", "minimum_position", "standard_deviation",
           "sum", "sum_labels", "variance"]

_KEYWORDS = ("progress", "scheduler", "storage_options")


class _Job:
    """A statistic's arrays and how its voxels group, by scipy's rules."""

    def __init__(self, what: str, input: Any, labels: Any, index: Any,
                 job: Mapping[str, Any]) -> None:
        for name in job:
            if name not in _KEYWORDS:
                raise ArgumentTypeError(f"{what}: unexpected keyword {name!r} (it is not "
                                        f"scipy.ndimage.{what}'s, nor one of chunkflow's: "
                                        f"{', '.join(_KEYWORDS)})")
        self.what = what
        options = job.get("storage_options")
        self.run = {k: v for k, v in job.items() if k != "storage_options"}
        self.image = open_image(input, options, what)
        self.labels = open_image(labels, options, what) if labels is not None else None
        if self.labels is not None and self.labels.shape != self.image.shape:
            raise ShapeMismatchError(f"{what}: labels have shape {self.labels.shape}, input "
                                     f"{self.image.shape}; chunkflow takes them of one shape")
        self.index = index
        if self.labels is None:
            self.kind = "all"
        elif index is None:
            self.kind = "positive"
        elif np.isscalar(index):
            self.kind = "equal"
        else:
            self.kind = "labels"

    @property
    def single(self) -> bool:
        return self.kind != "labels"

    def groups(self, **kwargs: Any) -> Groups:
        return Groups(self.kind, self.index if self.kind == "equal" else None,
                      nan_propagates=self.single, **kwargs)

    def table(self, stats: set[str], values: bool = True, **kwargs: Any) -> dict[str, np.ndarray]:
        return label_table(self.image if values else None, self.labels, self.groups(**kwargs),
                           stats, **self.run)

    def rows(self, keys: np.ndarray) -> np.ndarray:
        """Per ``index`` element, its row in a table of ``keys``, or -1 (scipy's
        ``found``: by ``numpy.bincount`` over small labels, else by value)."""
        assert self.labels is not None
        dtype = self.labels.dtype
        castable = ((dtype.kind == "i" and dtype.itemsize <= np.dtype(int).itemsize)
                    or (dtype.kind == "u" and dtype.itemsize < np.dtype(int).itemsize))
        present = len(keys) > 0
        if castable and present and keys[0] >= 0 and keys[-1] <= self.image.size:
            idxs = np.asanyarray(self.index, np.int_).copy()
            found = (idxs >= 0) & (idxs <= keys[-1])
        else:
            idxs = np.asarray(self.index)
            found = np.zeros(idxs.shape, bool)
            if present:
                at = np.searchsorted(keys, idxs)
                at[at >= keys.size] = 0
                found = keys[at] == idxs
        if not present:
            return np.full(np.shape(self.index), -1, np.intp)
        at = np.searchsorted(keys, np.where(found, idxs, keys[0]))
        at[at >= keys.size] = 0
        hit = found & (keys[at] == np.where(found, idxs, keys[0]))
        return np.where(hit, at, -1)


def _pick(column: np.ndarray, rows: np.ndarray, absent: Any = 0) -> np.ndarray:
    """``column`` at ``rows``, ``absent`` where a row is -1."""
    taken = column[np.where(rows >= 0, rows, 0)] if len(column) else np.zeros(
        rows.shape + column.shape[1:], column.dtype)
    taken = np.array(taken)
    taken[rows < 0] = absent
    return taken


def _one_sum(job: _Job, table: dict[str, np.ndarray]) -> Any:
    """The sum of the one group, in ``numpy.sum``'s dtype as scipy takes it (float16
    parts are kept wider until here: numpy accumulates them in float32)."""
    return table["sum"][0].astype(np.zeros(1, job.image.dtype).sum().dtype)


def _sums(job: _Job) -> tuple[Any, Any]:
    """scipy's ``_stats``: (count, sum) per group."""
    table = job.table({"count", "sum"})
    if job.single:
        return table["count"][0], _one_sum(job, table)
    rows = job.rows(table["key"])
    return _pick(table["count"], rows), _pick(table["sum"], rows)


def sum_labels(input: Any, labels: Any = None, index: Any = None, **job: Any) -> Any:
    """scipy.ndimage.sum_labels over chunked arrays.

    Examples
    --------
    >>> import numpy as np
    >>> sum_labels(np.arange(4, dtype="u1"), np.array([0, 1, 1, 2]), [1, 2, 5]).tolist()
    [3.0, 3.0, 0.0]
    """
    return _sums(_Job("sum_labels", input, labels, index, job))[1]


def sum(input: Any, labels: Any = None, index: Any = None, **job: Any) -> Any:  # noqa: A001
    """scipy.ndimage.sum (the old name of :func:`sum_labels`).

    Examples
    --------
    >>> import numpy as np
    >>> sum(np.arange(4, dtype="u1"))
    np.uint64(6)
    """
    return _sums(_Job("sum", input, labels, index, job))[1]


def mean(input: Any, labels: Any = None, index: Any = None, **job: Any) -> Any:
    """scipy.ndimage.mean over chunked arrays (NaN for an absent label).

    Examples
    --------
    >>> import numpy as np
    >>> mean(np.arange(4.0), np.array([0, 1, 1, 2]))
    np.float64(2.0)
    """
    count, total = _sums(_Job("mean", input, labels, index, job))
    with np.errstate(invalid="ignore", divide="ignore"):
        return total / np.asanyarray(count).astype(np.float64)


def variance(input: Any, labels: Any = None, index: Any = None, **job: Any) -> Any:
    """scipy.ndimage.variance over chunked arrays: a first pass for the means, a
    second for the squared deviations from them, as scipy computes it.

    Examples
    --------
    >>> import numpy as np
    >>> variance(np.array([1.0, 2, 4, 8]), np.array([1, 1, 2, 2]), [1, 2]).tolist()
    [0.25, 4.0]
    """
    return _variance(_Job("variance", input, labels, index, job))


def _variance(job: _Job) -> Any:
    first = job.table({"count", "sum"})
    with np.errstate(invalid="ignore", divide="ignore"):
        if job.single:
            mean_dtype = np.mean(np.zeros(1, job.image.dtype)).dtype
            means = np.asarray([_one_sum(job, first) / first["count"][0]]).astype(mean_dtype)
            second = label_table(job.image, job.labels, Groups(
                job.kind, job.index if job.kind == "equal" else None, means=means),
                {"centered"}, **job.run)
            return second["centered"][0] / np.asanyarray(first["count"][0]).astype(float)
        means = first["sum"] / first["count"]
        second = label_table(job.image, job.labels, Groups("labels", first["key"], means=means),
                             {"count", "centered"}, **job.run)
        rows = job.rows(first["key"])
        return (_pick(second["centered"], rows)
                / np.asanyarray(_pick(first["count"], rows)).astype(float))


def standard_deviation(input: Any, labels: Any = None, index: Any = None, **job: Any) -> Any:
    """scipy.ndimage.standard_deviation over chunked arrays.

    Examples
    --------
    >>> import numpy as np
    >>> standard_deviation(np.array([1.0, 2, 4, 8]), np.array([1, 1, 2, 2]), 2)
    np.float64(2.0)
    """
    return np.sqrt(_variance(_Job("standard_deviation", input, labels, index, job)))


def _extremes(job: _Job, names: tuple[str, ...]) -> list[Any]:
    """scipy's ``_select``: the minimum, maximum and their positions per group."""
    table = job.table({"count", *(name.split("_")[0] for name in names)})
    shape = np.asarray(job.image.shape)
    strides = np.cumprod([1] + list(shape[:0:-1]))[::-1]
    results: list[Any] = []
    for name in names:
        if job.single:
            if table["count"][0] == 0:
                raise InvalidArgumentError(f"{job.what}: no voxel is selected (scipy: "
                                           "zero-size array to reduction operation)")
            value = table[name][0]
            if "position" in name:
                if table[name.split("_")[0]][0] != table[name.split("_")[0]][0]:
                    raise InvalidSelectionError(f"{job.what}: the extreme value is NaN, which no voxel "
                                     "equals (scipy raises IndexError too)")
                results.append(tuple((value // strides) % shape))
            else:
                results.append(value)
            continue
        rows = job.rows(table["key"])
        picked = _pick(table[name], rows)
        if "position" in name:
            results.append([tuple(v) for v in (picked.reshape(-1, 1) // strides) % shape])
        else:
            results.append(picked)
    return results


def minimum(input: Any, labels: Any = None, index: Any = None, **job: Any) -> Any:
    """scipy.ndimage.minimum over chunked arrays.

    Examples
    --------
    >>> import numpy as np
    >>> minimum(np.array([5, 3, 9, 1]), np.array([1, 1, 2, 2]), [1, 2, 4]).tolist()
    [3, 1, 0]
    """
    return _extremes(_Job("minimum", input, labels, index, job), ("min",))[0]


def maximum(input: Any, labels: Any = None, index: Any = None, **job: Any) -> Any:
    """scipy.ndimage.maximum over chunked arrays.

    Examples
    --------
    >>> import numpy as np
    >>> maximum(np.array([5, 3, 9, 1]), np.array([1, 1, 2, 2]))
    np.int64(9)
    """
    return _extremes(_Job("maximum", input, labels, index, job), ("max",))[0]


def minimum_position(input: Any, labels: Any = None, index: Any = None, **job: Any) -> Any:
    """scipy.ndimage.minimum_position over chunked arrays (the first voxel in C order
    among equal minima).

    Examples
    --------
    >>> import numpy as np
    >>> minimum_position(np.array([[5, 3], [9, 1]]))
    (np.int64(1), np.int64(1))
    """
    return _extremes(_Job("minimum_position", input, labels, index, job), ("min_position",))[0]


def maximum_position(input: Any, labels: Any = None, index: Any = None, **job: Any) -> Any:
    """scipy.ndimage.maximum_position over chunked arrays.

    Examples
    --------
    >>> import numpy as np
    >>> maximum_position(np.array([[5, 3], [9, 1]]), np.array([[1, 1], [2, 2]]), [1, 2])
    [(np.int64(0), np.int64(0)), (np.int64(1), np.int64(0))]
    """
    return _extremes(_Job("maximum_position", input, labels, index, job), ("max_position",))[0]


def extrema(input: Any, labels: Any = None, index: Any = None, **job: Any) -> Any:
    """scipy.ndimage.extrema over chunked arrays: minimums, maximums and their positions.

    Examples
    --------
    >>> import numpy as np
    >>> extrema(np.array([[5, 3], [9, 1]]))
    (np.int64(1), np.int64(9), (np.int64(1), np.int64(1)), (np.int64(1), np.int64(0)))
    """
    found = _extremes(_Job("extrema", input, labels, index, job),
                      ("min", "max", "min_position", "max_position"))
    return tuple(found)


def center_of_mass(input: Any, labels: Any = None, index: Any = None, **job: Any) -> Any:
    """scipy.ndimage.center_of_mass over chunked arrays.

    Examples
    --------
    >>> import numpy as np
    >>> center_of_mass(np.array([[0, 1], [0, 3]]))
    (np.float64(0.75), np.float64(1.0))
    """
    state = _Job("center_of_mass", input, labels, index, job)
    table = state.table({"count", "sum", "weighted"})
    with np.errstate(invalid="ignore", divide="ignore"):
        if state.single:
            return tuple(table["weighted"][0] / _one_sum(state, table))
        rows = state.rows(table["key"])
        results = _pick(table["weighted"], rows) / _pick(table["sum"], rows)[..., None]
        return [tuple(v) for v in results.reshape(-1, state.image.ndim)]


def histogram(input: Any, min: Any, max: Any, bins: int, labels: Any = None,  # noqa: A002
              index: Any = None, **job: Any) -> Any:
    """scipy.ndimage.histogram over chunked arrays: counts over ``bins`` equal bins
    from ``min`` to ``max`` (an object array of them for several labels, ``None`` for
    an absent one).

    Examples
    --------
    >>> import numpy as np
    >>> histogram(np.arange(4), 0, 3, 3, np.array([0, 1, 1, 2]), [1, 2, 7]).tolist()
    [array([0, 1, 1]), array([0, 0, 1]), None]
    """
    state = _Job("histogram", input, labels, index, job)
    edges = np.linspace(min, max, bins + 1)
    if state.labels is None and index is not None:
        raise InvalidArgumentError("histogram: index without defined labels (as scipy)")
    table = state.table({"count", "histogram"}, edges=edges)
    if state.kind in ("all", "positive"):
        return table["histogram"][0].astype(np.int64)
    assert state.labels is not None
    wanted = np.atleast_1d(index)
    cast = wanted.astype(state.labels.dtype)
    if np.any(cast.astype(wanted.dtype) != wanted):
        raise InvalidArgumentError(f"histogram: cannot convert index values from "
                                   f"<{wanted.dtype}> to <{state.labels.dtype}> (labels' type) "
                                   "without loss of precision")
    if state.kind == "equal":
        counts = table["histogram"][0]
        return counts.astype(np.int64) if table["count"][0] else None
    keys = table["key"]
    at = np.clip(np.searchsorted(keys, cast), 0, np.maximum(len(keys) - 1, 0))
    result = np.empty(wanted.shape, object)
    for i, (row, value) in enumerate(zip(at.ravel(), cast.ravel())):
        hit = len(keys) and keys[row] == value
        result.flat[i] = table["histogram"][row].astype(np.int64) if hit else None
    return result


def median(input: Any, labels: Any = None, index: Any = None, **job: Any) -> Any:
    """scipy.ndimage.median over chunked arrays, exact: the middle values of each group
    found by radix selection (:mod:`chunkflow.graph.label_medians`), averaged as scipy
    averages them.

    Examples
    --------
    >>> import numpy as np
    >>> median(np.array([5, 3, 9, 1, 4]), np.array([1, 1, 1, 2, 2]), [1, 2, 7]).tolist()
    [5.0, 2.5, 3.0]
    >>> float(median(np.array([5, 3, 9, 1])))  # no labels: every element
    4.0
    """
    state = _Job("median", input, labels, index, job)
    dtype = state.image.dtype
    if state.single:
        # Without labels every element counts; with them, the label table says how many.
        count = (math.prod(state.image.shape) if state.labels is None
                 else int(state.table({"count"}, values=False)["count"][0]))
        if count == 0:
            return np.median(np.zeros(0, dtype))
        ranks = [count // 2 - 1, count // 2] if count % 2 == 0 else [(count - 1) // 2]
        found = values_at_ranks(state.image, state.labels, state.groups(), np.zeros(1),
                                [[*ranks, count - 1]], **state.run)[0]
        if found[-1] != found[-1]:  # NaN sorts last: numpy's median is NaN
            return np.median(found[-1:])
        return np.median(found[:-1])
    table = state.table({"count", "min"})
    keys, counts = table["key"], table["count"]
    rows = state.rows(keys)
    wanted = np.unique(rows[rows >= 0])
    middle = values_at_ranks(state.image, state.labels, Groups("labels"), keys[wanted],
                             [[(n - 1) // 2, n // 2] for n in counts[wanted]], **state.run)
    first = table["min"][0] if len(keys) else np.zeros((), dtype)
    low = np.full(rows.shape, first, dtype)
    high = low.copy()
    if len(wanted):  # none of the labels asked for may be present
        at = np.searchsorted(wanted, rows[rows >= 0])
        low[rows >= 0], high[rows >= 0] = middle[at, 0], middle[at, 1]
    if dtype.kind in "biu":  # scipy: no integer overflow, no boolean addition
        return (low.astype("d") + high.astype("d")) / 2.0
    return (low + high) / 2.0


def labeled_comprehension(input: Any, labels: Any, index: Any, func: Any, out_dtype: Any,
                          default: Any, pass_positions: bool = False, **job: Any) -> Any:
    """Refused: scipy calls ``func`` on all the values of each label at once, which no
    bounded memory holds for labels of any size.

    Examples
    --------
    >>> labeled_comprehension([1], [1], 1, max, float, 0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    chunkflow.errors.InvalidArgumentError: labeled_comprehension: ...
    """
    raise InvalidArgumentError(
        "labeled_comprehension: func would get every value of a label at once, which "
        "bounded memory cannot promise; use the statistics (sum_labels, mean, variance, "
        "minimum, maximum, median, extrema, center_of_mass, histogram), or "
        "scipy.ndimage.labeled_comprehension on an array read into memory")
