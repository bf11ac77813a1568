"""scipy.ndimage's binary and grey morphology over chunked arrays, equal to scipy's.

The halo is the structure's reach times ``iterations`` (twice that for an opening or a
closing), so each window's result over its block is scipy's on the whole array; the
border (``border_value``, ``mode``) is applied by scipy at the array's edge, where the
windows stop. Iterating until nothing changes (``iterations < 1``) is not local and is
refused; :func:`chunkflow.ndimage.binary_fill_holes` is the global operation most
such loops compute.

Examples
--------
>>> import numpy as np
>>> from scipy import ndimage
>>> import chunkflow
>>> a = np.random.default_rng(0).random((30, 20)) > 0.4
>>> z = chunkflow.array(a, chunks=(7, 6))
>>> r = binary_opening(z, iterations=2)
>>> bool((r[...] == ndimage.binary_opening(a, iterations=2)).all())
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import ndimage

from chunkflow.errors import InvalidArgumentError
from chunkflow.graph.filters import filter_windows, line_passes
from chunkflow.ndimage.arguments import (
    axes_of,
    box_reach,
    check_origin,
    depth_on,
    finish,
    job_options,
    open_input,
    per_axis,
    probe,
    resolve_output,
)
from chunkflow.ndimage.order import min_max, separable_passes

__all__ = ["binary_closing", "binary_dilation", "binary_erosion", "binary_opening",
           "grey_closing", "grey_dilation", "grey_erosion", "grey_opening", "masked"]


def masked(image: np.ndarray, mask: np.ndarray, *, operation: str, **kwargs: Any) -> np.ndarray:
    """scipy.ndimage's ``operation`` on a window of the image and of its ``mask``."""
    result: np.ndarray = getattr(ndimage, operation)(image, mask=mask, **kwargs)
    return result


def _binary_job(what: str, input: Any, structure: Any, iterations: int, mask: Any,
                output: Any, border_value: Any, origin: Any, brute_force: bool, axes: Any,
                job: dict[str, Any], stages: int) -> Any:
    options = job_options(what, job)
    if not isinstance(iterations, (int, np.integer)) or iterations < 1:
        raise InvalidArgumentError(
            f"{what}: iterations={iterations!r} repeats until nothing changes, which no halo "
            "bounds; pass a number of iterations >= 1 (binary_fill_holes fills holes)")
    image = open_input(what, input, options)
    resolved = resolve_output(what, output, image.shape, options)
    on = axes_of(axes, image.ndim)
    shape = np.shape(structure) if structure is not None else (3,) * len(on)
    check_origin(what, shape, origin)
    # scipy's changed-pixel path (brute_force=False, iterations > 1) writes outside its
    # buffers when the structure is large against the array (scipy issue 11400, open in
    # 1.17: a 4x3x3 structure over a 2x4x4 window corrupted the heap). Brute force
    # gives the same result ("a memory condition", in scipy's words).
    call: dict[str, Any] = dict(structure=structure, iterations=int(iterations),
                                border_value=border_value, origin=origin,
                                brute_force=bool(brute_force) or int(iterations) > 1, axes=axes)
    func = getattr(ndimage, what)
    if mask is not None:
        mask_array = open_input(what, mask, options)
        probe(func, image.dtype, image.ndim, **call, output=resolved.dtype,
              mask=np.zeros((3,) * mask_array.ndim, mask_array.dtype))
    dtype = probe(func, image.dtype, image.ndim, **call, output=resolved.dtype)
    depth = depth_on(image.ndim, on,
                     [stages * int(iterations) * box_reach(shape, origin)] * len(on))
    kwargs = {**call, "output": dtype}
    if mask is None:
        result = filter_windows(func, image, depth=depth, modes=["constant"], dtype=dtype,
                                job=resolved.job, kwargs=kwargs, what=what)
    else:
        result = filter_windows(masked, image, depth=depth, modes=["constant"], dtype=dtype,
                                job=resolved.job, kwargs={**kwargs, "operation": what},
                                sources=[mask_array], what=what)
    return finish(result, resolved.fill)


def binary_erosion(input: Any, structure: Any = None, iterations: int = 1, mask: Any = None,
                   output: Any = None, border_value: Any = 0, origin: Any = 0,
                   brute_force: bool = False, *, axes: Any = None, **job: Any) -> Any:
    """scipy.ndimage.binary_erosion, exact across chunks (``iterations >= 1``; ``mask``
    an array of the input's shape, read with the same halo).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.ones((6, 7), bool)
    >>> r = binary_erosion(a, border_value=1, iterations=2)
    >>> bool((r[...] == ndimage.binary_erosion(a, border_value=1, iterations=2)).all())
    True
    """
    return _binary_job("binary_erosion", input, structure, iterations, mask, output,
                       border_value, origin, brute_force, axes, job, 1)


def binary_dilation(input: Any, structure: Any = None, iterations: int = 1, mask: Any = None,
                    output: Any = None, border_value: Any = 0, origin: Any = 0,
                    brute_force: bool = False, *, axes: Any = None, **job: Any) -> Any:
    """scipy.ndimage.binary_dilation, exact across chunks (``iterations >= 1``).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.zeros((6, 7), bool); a[2, 3] = True
    >>> s = ndimage.generate_binary_structure(2, 2)
    >>> bool((binary_dilation(a, s)[...] == ndimage.binary_dilation(a, s)).all())
    True
    """
    return _binary_job("binary_dilation", input, structure, iterations, mask, output,
                       border_value, origin, brute_force, axes, job, 1)


def binary_opening(input: Any, structure: Any = None, iterations: int = 1, output: Any = None,
                   origin: Any = 0, mask: Any = None, border_value: Any = 0,
                   brute_force: bool = False, *, axes: Any = None, **job: Any) -> Any:
    """scipy.ndimage.binary_opening, exact across chunks (``iterations >= 1``).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.random.default_rng(1).random((9, 8)) > 0.3
    >>> bool((binary_opening(a)[...] == ndimage.binary_opening(a)).all())
    True
    """
    return _binary_job("binary_opening", input, structure, iterations, mask, output,
                       border_value, origin, brute_force, axes, job, 2)


def binary_closing(input: Any, structure: Any = None, iterations: int = 1, output: Any = None,
                   origin: Any = 0, mask: Any = None, border_value: Any = 0,
                   brute_force: bool = False, *, axes: Any = None, **job: Any) -> Any:
    """scipy.ndimage.binary_closing, exact across chunks (``iterations >= 1``).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.random.default_rng(1).random((9, 8)) > 0.6
    >>> bool((binary_closing(a, iterations=2)[...] == ndimage.binary_closing(a, iterations=2)).all())
    True
    """
    return _binary_job("binary_closing", input, structure, iterations, mask, output,
                       border_value, origin, brute_force, axes, job, 2)


def _grey_job(what: str, stages: tuple[Callable[..., Any], ...], input: Any, size: Any,
              footprint: Any, structure: Any, output: Any, mode: Any, cval: float,
              origin: Any, axes: Any, job: dict[str, Any]) -> Any:
    options = job_options(what, job)
    image = open_input(what, input, options)
    resolved = resolve_output(what, output, image.shape, options)
    func = getattr(ndimage, what)
    call = dict(size=size, footprint=footprint, structure=structure, mode=mode, cval=cval,
                origin=origin, axes=axes)
    dtype = probe(func, image.dtype, image.ndim, **call, output=resolved.dtype)
    separable = structure is None and (footprint is None or bool(np.asarray(footprint).all()))
    if len(stages) == 1 or not (separable and image.dtype.kind == "f"):
        result = min_max(what, func, image, resolved, dtype, {**call, "output": dtype}, axes,
                         repeat=len(stages))
        return finish(result, resolved.fill)
    # An opening or closing of floats over a box: scipy's 1-D passes of the first
    # filter (into the input's dtype), then of the second (into the output's).
    on = axes_of(axes, image.ndim)
    sizes = (list(np.shape(footprint)) if footprint is not None
             else [int(n) for n in per_axis(size, len(on))])
    origins = [int(o) for o in per_axis(origin, len(on))]
    modes = per_axis(mode, len(on))
    passes = [step for stage, kind in zip(stages, (image.dtype, dtype))
              for step in separable_passes(stage, image.ndim, on, sizes, origins, modes, cval,
                                           kind)]
    result = line_passes(passes, image, dtype=dtype, job=resolved.job, what=what)
    return finish(result, resolved.fill)


def grey_erosion(input: Any, size: Any = None, footprint: Any = None, structure: Any = None,
                 output: Any = None, mode: Any = "reflect", cval: float = 0.0, origin: Any = 0,
                 *, axes: Any = None, **job: Any) -> Any:
    """scipy.ndimage.grey_erosion, exact across chunks (NaN included).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.arange(42, dtype="i2").reshape(6, 7) % 5
    >>> s = np.array([[0, 1], [2, 0]])
    >>> bool((grey_erosion(a, structure=s)[...] == ndimage.grey_erosion(a, structure=s)).all())
    True
    """
    return _grey_job("grey_erosion", (ndimage.grey_erosion,), input, size, footprint,
                     structure, output, mode, cval, origin, axes, job)


def grey_dilation(input: Any, size: Any = None, footprint: Any = None, structure: Any = None,
                  output: Any = None, mode: Any = "reflect", cval: float = 0.0, origin: Any = 0,
                  *, axes: Any = None, **job: Any) -> Any:
    """scipy.ndimage.grey_dilation, exact across chunks (NaN included).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.random.default_rng(2).random((6, 7))
    >>> bool((grey_dilation(a, size=(2, 3))[...] == ndimage.grey_dilation(a, size=(2, 3))).all())
    True
    """
    return _grey_job("grey_dilation", (ndimage.grey_dilation,), input, size, footprint,
                     structure, output, mode, cval, origin, axes, job)


def grey_opening(input: Any, size: Any = None, footprint: Any = None, structure: Any = None,
                 output: Any = None, mode: Any = "reflect", cval: float = 0.0, origin: Any = 0,
                 *, axes: Any = None, **job: Any) -> Any:
    """scipy.ndimage.grey_opening, exact across chunks: an erosion, then a dilation.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.random.default_rng(2).random((6, 7))
    >>> bool((grey_opening(a, size=3)[...] == ndimage.grey_opening(a, size=3)).all())
    True
    """
    return _grey_job("grey_opening", (ndimage.grey_erosion, ndimage.grey_dilation), input,
                     size, footprint, structure, output, mode, cval, origin, axes, job)


def grey_closing(input: Any, size: Any = None, footprint: Any = None, structure: Any = None,
                 output: Any = None, mode: Any = "reflect", cval: float = 0.0, origin: Any = 0,
                 *, axes: Any = None, **job: Any) -> Any:
    """scipy.ndimage.grey_closing, exact across chunks: a dilation, then an erosion.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.arange(42, dtype="u1").reshape(6, 7) % 9
    >>> bool((grey_closing(a, size=(3, 2))[...] == ndimage.grey_closing(a, size=(3, 2))).all())
    True
    """
    return _grey_job("grey_closing", (ndimage.grey_dilation, ndimage.grey_erosion), input,
                     size, footprint, structure, output, mode, cval, origin, axes, job)
