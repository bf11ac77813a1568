"""scipy.ndimage's order-statistic filters over chunked arrays, equal to scipy's.

A footprint that is not a full box, and any integer input, is local: windows with the
footprint's reach as halo. Over a full box scipy runs 1-D minimum/maximum passes whose
NaN results depend on the line before the footprint, so floats there run one pass per
axis over whole lines (see :func:`chunkflow.graph.filters.line_passes`), and a 1-D
rank filter (whose path depends on the array's length) runs on the whole line.

Examples
--------
>>> import numpy as np
>>> from scipy import ndimage
>>> import chunkflow
>>> a = np.random.default_rng(0).random((30, 20))
>>> a[4, 5] = np.nan
>>> z = chunkflow.array(a, chunks=(7, 6))
>>> r = minimum_filter(z, size=(3, 4))
>>> np.array_equal(r[...], ndimage.minimum_filter(a, size=(3, 4)), equal_nan=True)
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import ndimage

from chunkflow.core.array import Array
from chunkflow.graph.filters import Pass, filter_windows, line_passes
from chunkflow.ndimage.arguments import (
    Output,
    axes_of,
    box_reach,
    depth_on,
    finish,
    job_options,
    modes_on,
    open_input,
    per_axis,
    probe,
    resolve_output,
)

__all__ = ["maximum_filter", "median_filter", "minimum_filter", "percentile_filter",
           "rank_filter", "separable_passes"]


def _footprint(ndim: int, on: tuple[int, ...], size: Any, footprint: Any,
               structure: Any = None) -> np.ndarray:
    """The footprint as scipy's ``_expand_footprint`` makes it: its own axes in order,
    1 inserted on the axes not filtered (a box of ``size`` without a footprint)."""
    if footprint is not None:
        box = np.asarray(footprint, bool)
    elif structure is not None:
        box = np.ones(np.shape(structure), bool)
    else:
        box = np.ones([int(s) for s in per_axis(size, len(on))], bool)
    if len(on) < ndim:
        box = np.expand_dims(box, tuple(a for a in range(ndim) if a not in on))
    return box


def _origins(ndim: int, on: tuple[int, ...], origin: Any) -> list[int]:
    """The origins as scipy's ``_expand_origin`` makes them."""
    origins = [int(o) for o in per_axis(origin, len(on))]
    if len(on) < ndim:
        full = [0] * ndim
        for o, axis in zip(origins, on):
            full[axis] = o
        return full
    return origins


def separable_passes(func: Callable[..., Any], ndim: int, on: tuple[int, ...], sizes: list[int],
                     origins: list[int], modes: list[str], cval: float,
                     dtype: np.dtype) -> list[Pass]:
    """scipy's 1-D passes of a minimum or maximum over a box: ``func`` (a scipy filter
    taking ``size``) on one axis at a time, in the order of ``on``, sizes of 1 skipped."""
    passes = []
    for axis, n, o, m in zip(on, sizes, origins, modes):
        if n <= 1:
            continue
        size = tuple(n if a == axis else 1 for a in range(ndim))
        origin = tuple(int(o) if a == axis else 0 for a in range(ndim))
        passes.append(Pass(axis, func, {"size": size, "origin": origin, "mode": m,
                                        "cval": cval, "output": dtype}, dtype))
    return passes


def min_max(what: str, func: Callable[..., Any], image: Array, resolved: Output,
            dtype: np.dtype, call: dict[str, Any], axes: Any, repeat: int = 1) -> Any:
    """Run a minimum or maximum (``func``: scipy's, called with ``call``) over windows,
    or by 1-D passes over whole lines where scipy's passes depend on the line.

    ``repeat``: how many such filters ``func`` chains (2 for an opening)."""
    on = axes_of(axes, image.ndim)
    size, footprint, structure = (call.get(k) for k in ("size", "footprint", "structure"))
    box = _footprint(image.ndim, on, size, footprint, structure)
    origins = [int(o) for o in per_axis(call.get("origin", 0), len(on))]
    modes = per_axis(call.get("mode", "reflect"), len(on))
    if structure is None and bool(box.all()) and image.dtype.kind == "f":
        sizes = (list(np.shape(footprint)) if footprint is not None
                 else [int(n) for n in per_axis(size, len(on))])
        passes = separable_passes(func, image.ndim, on, sizes, origins, modes,
                                  call.get("cval", 0.0), dtype)
        return line_passes(passes, image, dtype=dtype, job=resolved.job, what=what)
    depth = depth_on(image.ndim, on, [repeat * box_reach(box.shape, origins)] * len(on))
    return filter_windows(func, image, depth=depth, modes=modes_on(image.ndim, on, modes, depth),
                          dtype=dtype, job=resolved.job, kwargs=call, what=what)


def _minmax_job(what: str, func: Callable[..., Any], input: Any, output: Any,
                job: dict[str, Any], call: dict[str, Any]) -> Any:
    options = job_options(what, job)
    image = open_input(what, input, options)
    resolved = resolve_output(what, output, image.shape, options)
    dtype = probe(func, image.dtype, image.ndim, **call, output=resolved.dtype)
    result = min_max(what, func, image, resolved, dtype, {**call, "output": dtype},
                     call.get("axes"))
    return finish(result, resolved.fill)


def minimum_filter(input: Any, size: Any = None, footprint: Any = None, output: Any = None,
                   mode: Any = "reflect", cval: float = 0.0, origin: Any = 0, *,
                   axes: Any = None, **job: Any) -> Any:
    """scipy.ndimage.minimum_filter, exact across chunks (NaN included).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.arange(30, dtype="u2").reshape(5, 6) % 7
    >>> fp = np.array([[0, 1], [1, 1]], bool)
    >>> bool((minimum_filter(a, footprint=fp)[...] == ndimage.minimum_filter(a, footprint=fp)).all())
    True
    """
    return _minmax_job("minimum_filter", ndimage.minimum_filter, input, output, job,
                       dict(size=size, footprint=footprint, mode=mode, cval=cval,
                            origin=origin, axes=axes))


def maximum_filter(input: Any, size: Any = None, footprint: Any = None, output: Any = None,
                   mode: Any = "reflect", cval: float = 0.0, origin: Any = 0, *,
                   axes: Any = None, **job: Any) -> Any:
    """scipy.ndimage.maximum_filter, exact across chunks (NaN included).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.random.default_rng(3).random((9, 8))
    >>> r = maximum_filter(a, size=3, mode="wrap")
    >>> bool((r[...] == ndimage.maximum_filter(a, size=3, mode="wrap")).all())
    True
    """
    return _minmax_job("maximum_filter", ndimage.maximum_filter, input, output, job,
                       dict(size=size, footprint=footprint, mode=mode, cval=cval,
                            origin=origin, axes=axes))


def _rank_of(name: str, value: Any, count: int) -> int:
    """The rank scipy's ``_rank_filter`` computes for ``name`` (already checked by scipy)."""
    if name == "median_filter":
        return count // 2
    if name == "percentile_filter":
        percentile = float(value) + (100.0 if float(value) < 0 else 0.0)
        return count - 1 if percentile == 100.0 else int(float(count) * percentile / 100.0)
    rank = int(value)
    return rank + count if rank < 0 else rank


def _as_a_row(line: np.ndarray, rank_filter: Callable[..., Any], footprint: np.ndarray,
              origin: int, **call: Any) -> np.ndarray:
    """scipy's rank filter of a line longer than... shorter than its footprint, run by
    scipy's N-dimensional code on the line as a 1 x n image.

    scipy 1.17's fast 1-D rank filter (``_rank_filter_1d``, taken for 1-D inputs since
    scipy 1.15; gh-23293 keeps only some large footprints from it) reads outside the
    line when the footprint is longer than the line: its results change from call to
    call (``median_filter(np.array([255, 0], "u1"), 4, mode="mirror")`` gives
    ``[0, 255]`` or ``[255, 255]``). Its N-dimensional code gives the same value every
    time, the value of every footprint no longer than the line is the same by both.
    """
    return rank_filter(line[None], footprint=footprint[None], origin=(0, origin), **call)[0]


def _rank_job(what: str, func: Callable[..., Any], input: Any, value: Any, size: Any,
              footprint: Any, output: Any, mode: Any, cval: float, origin: Any, axes: Any,
              job: dict[str, Any]) -> Any:
    options = job_options(what, job)
    image = open_input(what, input, options)
    resolved = resolve_output(what, output, image.shape, options)
    call: dict[str, Any] = dict(size=size, footprint=footprint, mode=mode, cval=cval,
                                origin=origin, axes=axes)
    if value is not None:
        call["rank" if what == "rank_filter" else "percentile"] = value
    dtype = probe(func, image.dtype, image.ndim, **call, output=resolved.dtype)
    on = axes_of(axes, image.ndim)
    box = _footprint(image.ndim, on, size, footprint)
    count = int(box.sum())
    rank = _rank_of(what, value, count)
    full_origin = _origins(image.ndim, on, origin)
    if rank in (0, count - 1):  # scipy: a minimum or maximum over the footprint
        extreme = ndimage.minimum_filter if rank == 0 else ndimage.maximum_filter
        result = min_max(what, extreme, image, resolved, dtype,
                         dict(footprint=box, mode=mode, cval=cval, origin=tuple(full_origin),
                              output=dtype), None)
    elif image.ndim == 1 and box.shape[0] > image.shape[0]:
        row = {**{k: v for k, v in call.items() if k not in ("size", "axes", "origin")},
               "footprint": box, "origin": full_origin[0], "output": dtype, "rank_filter": func}
        result = line_passes([Pass(0, _as_a_row, row, dtype)], image, dtype=dtype,
                             job=resolved.job, what=what)
    elif image.ndim == 1:
        result = line_passes([Pass(0, func, {**call, "output": dtype}, dtype)], image,
                             dtype=dtype, job=resolved.job, what=what)
    else:
        depth = depth_on(image.ndim, on, [box_reach(box.shape, full_origin)] * len(on))
        result = filter_windows(func, image, depth=depth,
                                modes=modes_on(image.ndim, on, per_axis(mode, len(on)), depth),
                                dtype=dtype, job=resolved.job,
                                kwargs={**call, "output": dtype}, what=what)
    return finish(result, resolved.fill)


def median_filter(input: Any, size: Any = None, footprint: Any = None, output: Any = None,
                  mode: Any = "reflect", cval: float = 0.0, origin: Any = 0, *,
                  axes: Any = None, **job: Any) -> Any:
    """scipy.ndimage.median_filter, exact across chunks.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.random.default_rng(4).integers(0, 9, (8, 9))
    >>> bool((median_filter(a, 3)[...] == ndimage.median_filter(a, 3)).all())
    True
    """
    return _rank_job("median_filter", ndimage.median_filter, input, None, size, footprint,
                     output, mode, cval, origin, axes, job)


def rank_filter(input: Any, rank: int, size: Any = None, footprint: Any = None,
                output: Any = None, mode: Any = "reflect", cval: float = 0.0, origin: Any = 0,
                *, axes: Any = None, **job: Any) -> Any:
    """scipy.ndimage.rank_filter, exact across chunks.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.random.default_rng(4).random(40)
    >>> bool((rank_filter(a, -2, 5)[...] == ndimage.rank_filter(a, -2, 5)).all())
    True
    """
    return _rank_job("rank_filter", ndimage.rank_filter, input, rank, size, footprint, output,
                     mode, cval, origin, axes, job)


def percentile_filter(input: Any, percentile: float, size: Any = None, footprint: Any = None,
                      output: Any = None, mode: Any = "reflect", cval: float = 0.0,
                      origin: Any = 0, *, axes: Any = None, **job: Any) -> Any:
    """scipy.ndimage.percentile_filter, exact across chunks.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.random.default_rng(4).random((7, 8))
    >>> r = percentile_filter(a, 30, (2, 3), mode="nearest")
    >>> bool((r[...] == ndimage.percentile_filter(a, 30, (2, 3), mode="nearest")).all())
    True
    """
    return _rank_job("percentile_filter", ndimage.percentile_filter, input, percentile, size,
                     footprint, output, mode, cval, origin, axes, job)
