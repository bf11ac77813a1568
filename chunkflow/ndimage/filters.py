"""scipy.ndimage's filters over chunked arrays, equal to scipy's on the whole array.

Each function takes scipy's arguments, then chunkflow's job keywords (see
:mod:`chunkflow.ndimage.arguments`). The halo is the kernel's reach (``truncate`` or
``radius`` for Gaussians, the footprint's size and ``origin`` otherwise), so every
``mode`` gives scipy's bits (see :mod:`chunkflow.graph.filters`).

Examples
--------
>>> import numpy as np
>>> from scipy import ndimage
>>> import chunkflow
>>> image = np.random.default_rng(0).random((40, 30)).astype("f4")
>>> z = chunkflow.array(image, chunks=(16, 16))
>>> smooth = gaussian_filter(z, 2, mode="wrap")
>>> bool((smooth[...] == ndimage.gaussian_filter(image, 2, mode="wrap")).all())
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import ndimage

from chunkflow.graph.filters import Pass, filter_windows, line_passes
from chunkflow.ndimage.arguments import (
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

__all__ = ["convolve", "correlate", "gaussian_filter", "gaussian_gradient_magnitude",
           "gaussian_laplace", "generic_filter", "laplace", "prewitt", "sobel",
           "uniform_filter"]


def _gaussian_reach(sigma: Any, truncate: float, radius: Any, n: int) -> list[int]:
    sigmas = per_axis(sigma, n)
    if radius is not None:
        return [int(r) for r in per_axis(radius, n)]
    return [int(float(truncate) * float(s) + 0.5) for s in sigmas]


def gaussian_filter(input: Any, sigma: Any, order: Any = 0, output: Any = None,
                    mode: Any = "reflect", cval: float = 0.0, truncate: float = 4.0, *,
                    radius: Any = None, axes: Any = None, **job: Any) -> Any:
    """scipy.ndimage.gaussian_filter, exact across chunks: the halo is each axis's
    kernel radius (``radius``, else ``int(truncate * sigma + 0.5)``).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.arange(50, dtype="u1").reshape(5, 10)
    >>> r = gaussian_filter(a, 1.5, mode="constant", cval=3)
    >>> bool((r[...] == ndimage.gaussian_filter(a, 1.5, mode="constant", cval=3)).all())
    True
    """
    kwargs = dict(sigma=sigma, order=order, mode=mode, cval=cval, truncate=truncate,
                  radius=radius, axes=axes)
    return _gaussian_job("gaussian_filter", ndimage.gaussian_filter, input, output, job,
                         kwargs, sigma, truncate, radius, axes, mode)


def _gaussian_job(what: str, func: Any, input: Any, output: Any, job: dict[str, Any],
                  kwargs: dict[str, Any], sigma: Any, truncate: float, radius: Any,
                  axes: Any, mode: Any) -> Any:
    def reaches_for(n_axes: int) -> list[int]:
        return _gaussian_reach(sigma, truncate, radius, n_axes)

    return _with_axes(what, func, input, output, job, kwargs, axes, mode, reaches_for)


def _with_axes(what: str, func: Any, input: Any, output: Any, job: dict[str, Any],
               kwargs: dict[str, Any], axes: Any, mode: Any,
               reaches_for: Callable[[int], list[int]]) -> Any:
    """Run a filter whose reach and modes are per axis of ``axes``."""
    options = job_options(what, job)
    image = open_input(what, input, options)
    resolved = resolve_output(what, output, image.shape, options)
    call = {**kwargs, "output": resolved.dtype}
    dtype = probe(func, image.dtype, image.ndim, **call)
    call["output"] = dtype
    on = axes_of(axes, image.ndim)
    depth = depth_on(image.ndim, on, reaches_for(len(on)))
    modes = modes_on(image.ndim, on, per_axis(mode, len(on)), depth)
    result = filter_windows(func, image, depth=depth, modes=modes, dtype=dtype,
                            job=resolved.job, kwargs=call, what=what)
    return finish(result, resolved.fill)


def gaussian_laplace(input: Any, sigma: Any, output: Any = None, mode: Any = "reflect",
                     cval: float = 0.0, *, axes: Any = None, **kwargs: Any) -> Any:
    """scipy.ndimage.gaussian_laplace, exact across chunks (``truncate`` and ``radius``
    among ``kwargs`` go to the Gaussian, as in scipy; the rest are job keywords).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.random.default_rng(1).random((12, 9))
    >>> r = gaussian_laplace(a, 1.0)
    >>> bool((r[...] == ndimage.gaussian_laplace(a, 1.0)).all())
    True
    """
    return _derivative_job("gaussian_laplace", ndimage.gaussian_laplace, input, sigma, output,
                           mode, cval, axes, kwargs)


def gaussian_gradient_magnitude(input: Any, sigma: Any, output: Any = None,
                                mode: Any = "reflect", cval: float = 0.0, *, axes: Any = None,
                                **kwargs: Any) -> Any:
    """scipy.ndimage.gaussian_gradient_magnitude, exact across chunks.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.random.default_rng(1).random((12, 9))
    >>> r = gaussian_gradient_magnitude(a, 1.0, mode="nearest")
    >>> bool((r[...] == ndimage.gaussian_gradient_magnitude(a, 1.0, mode="nearest")).all())
    True
    """
    return _derivative_job("gaussian_gradient_magnitude", ndimage.gaussian_gradient_magnitude,
                           input, sigma, output, mode, cval, axes, kwargs)


_GAUSSIAN_KEYWORDS = ("truncate", "radius")


def _derivative_job(what: str, func: Any, input: Any, sigma: Any, output: Any, mode: Any,
                    cval: float, axes: Any, kwargs: dict[str, Any]) -> Any:
    gaussian = {k: v for k, v in kwargs.items() if k in _GAUSSIAN_KEYWORDS}
    job = {k: v for k, v in kwargs.items() if k not in _GAUSSIAN_KEYWORDS}
    call = dict(sigma=sigma, mode=mode, cval=cval, axes=axes, **gaussian)
    truncate = float(gaussian.get("truncate", 4.0))
    radius = gaussian.get("radius")

    def reaches_for(n_axes: int) -> list[int]:
        return _gaussian_reach(sigma, truncate, radius, n_axes)

    return _with_axes(what, func, input, output, job, call, axes, mode, reaches_for)


def sobel(input: Any, axis: int = -1, output: Any = None, mode: Any = "reflect",
          cval: float = 0.0, **job: Any) -> Any:
    """scipy.ndimage.sobel, exact across chunks (a halo of 1 on every axis).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.arange(30, dtype="i2").reshape(5, 6) ** 2
    >>> bool((sobel(a, 0)[...] == ndimage.sobel(a, 0)).all())
    True
    """
    return _with_axes("sobel", ndimage.sobel, input, output, job,
                      dict(axis=axis, mode=mode, cval=cval), None, mode,
                      lambda n: [1] * n)


def prewitt(input: Any, axis: int = -1, output: Any = None, mode: Any = "reflect",
            cval: float = 0.0, **job: Any) -> Any:
    """scipy.ndimage.prewitt, exact across chunks (a halo of 1 on every axis).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.arange(30, dtype="f4").reshape(5, 6) ** 2
    >>> bool((prewitt(a, mode="wrap")[...] == ndimage.prewitt(a, mode="wrap")).all())
    True
    """
    return _with_axes("prewitt", ndimage.prewitt, input, output, job,
                      dict(axis=axis, mode=mode, cval=cval), None, mode,
                      lambda n: [1] * n)


def laplace(input: Any, output: Any = None, mode: Any = "reflect", cval: float = 0.0, *,
            axes: Any = None, **job: Any) -> Any:
    """scipy.ndimage.laplace, exact across chunks (a halo of 1 on ``axes``).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.arange(30, dtype="f8").reshape(5, 6) ** 2
    >>> bool((laplace(a)[...] == ndimage.laplace(a)).all())
    True
    """
    return _with_axes("laplace", ndimage.laplace, input, output, job,
                      dict(mode=mode, cval=cval, axes=axes), axes, mode,
                      lambda n: [1] * n)


def _weights_job(what: str, func: Any, input: Any, weights: Any, output: Any, mode: Any,
                 cval: float, origin: Any, axes: Any, job: dict[str, Any]) -> Any:
    shape = np.shape(weights)

    def reaches_for(n_axes: int) -> list[int]:
        return [box_reach(shape, origin)] * n_axes

    return _with_axes(what, func, input, output, job,
                      dict(weights=np.asarray(weights), mode=mode, cval=cval, origin=origin,
                           axes=axes), axes, mode, reaches_for)


def correlate(input: Any, weights: Any, output: Any = None, mode: Any = "reflect",
              cval: float = 0.0, origin: Any = 0, *, axes: Any = None, **job: Any) -> Any:
    """scipy.ndimage.correlate, exact across chunks (the halo: the weights' reach).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.arange(42, dtype="f4").reshape(6, 7)
    >>> w = np.array([[0, 1, 2], [3, 4, 5]], float)
    >>> bool((correlate(a, w, origin=(0, 1))[...] == ndimage.correlate(a, w, origin=(0, 1))).all())
    True
    """
    return _weights_job("correlate", ndimage.correlate, input, weights, output, mode, cval,
                        origin, axes, job)


def convolve(input: Any, weights: Any, output: Any = None, mode: Any = "reflect",
             cval: float = 0.0, origin: Any = 0, *, axes: Any = None, **job: Any) -> Any:
    """scipy.ndimage.convolve, exact across chunks (the halo: the weights' reach).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.arange(42, dtype="i4").reshape(6, 7)
    >>> w = np.array([[1, -1], [2, 0]])
    >>> bool((convolve(a, w, mode="mirror")[...] == ndimage.convolve(a, w, mode="mirror")).all())
    True
    """
    return _weights_job("convolve", ndimage.convolve, input, weights, output, mode, cval,
                        origin, axes, job)


def generic_filter(input: Any, function: Any, size: Any = None, footprint: Any = None,
                   output: Any = None, mode: Any = "reflect", cval: float = 0.0,
                   origin: Any = 0, extra_arguments: Any = (), extra_keywords: Any = None, *,
                   axes: Any = None, **job: Any) -> Any:
    """scipy.ndimage.generic_filter, exact across chunks (the halo: the footprint's
    reach). ``function`` must pickle for the ``processes`` scheduler.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.arange(42, dtype="f8").reshape(6, 7) % 5
    >>> r = generic_filter(a, np.ptp, size=3)
    >>> bool((r[...] == ndimage.generic_filter(a, np.ptp, size=3)).all())
    True
    """
    sizes = np.shape(footprint) if footprint is not None else None

    def reaches_for(n_axes: int) -> list[int]:
        box = list(sizes) if sizes is not None else [int(s) for s in per_axis(size, n_axes)]
        return [box_reach(box, origin)] * n_axes

    return _with_axes("generic_filter", ndimage.generic_filter, input, output, job,
                      dict(function=function, size=size, footprint=footprint, mode=mode,
                           cval=cval, origin=origin, extra_arguments=extra_arguments,
                           extra_keywords=extra_keywords, axes=axes), axes, mode, reaches_for)


def uniform_filter(input: Any, size: Any = 3, output: Any = None, mode: Any = "reflect",
                   cval: float = 0.0, origin: Any = 0, *, axes: Any = None, **job: Any) -> Any:
    """scipy.ndimage.uniform_filter, exact across chunks.

    scipy keeps a running sum along each line, so an element's bits depend on the
    whole line before it: each axis is one pass (``uniform_filter1d``) over blocks of
    whole lines along that axis, in scipy's order, writing the output's dtype between
    passes as scipy does (through ``temp=``, see :mod:`chunkflow.ndimage.arguments`).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.random.default_rng(2).random((20, 15))
    >>> r = uniform_filter(a, (4, 3), mode="constant")
    >>> bool((r[...] == ndimage.uniform_filter(a, (4, 3), mode="constant")).all())
    True
    """
    what = "uniform_filter"
    options = job_options(what, job)
    image = open_input(what, input, options)
    resolved = resolve_output(what, output, image.shape, options)
    dtype = probe(ndimage.uniform_filter, image.dtype, image.ndim, size=size,
                  output=resolved.dtype, mode=mode, cval=cval, origin=origin, axes=axes)
    on = axes_of(axes, image.ndim)
    sizes, origins, modes = (per_axis(v, len(on)) for v in (size, origin, mode))
    passes = [Pass(axis, ndimage.uniform_filter1d,
                   {"size": int(s), "axis": axis, "mode": m, "cval": cval, "origin": int(o),
                    "output": dtype}, dtype)
              for axis, s, o, m in zip(on, sizes, origins, modes) if s > 1]
    result = line_passes(passes, image, dtype=dtype, job=resolved.job, what=what)
    return finish(result, resolved.fill)
