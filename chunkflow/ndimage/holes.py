"""scipy.ndimage.binary_fill_holes over chunked arrays, exact by construction.

Holes are the background components (connected as ``structure`` says) that do not
reach the border, found with the label job's merge tree; see
:mod:`chunkflow.graph.fill_holes`.

Examples
--------
>>> import numpy as np
>>> from scipy import ndimage
>>> import chunkflow
>>> a = np.ones((7, 9), bool); a[2:5, 2:4] = False; a[0, 6] = False
>>> z = chunkflow.array(a, chunks=(3, 3))
>>> bool((binary_fill_holes(z)[...] == ndimage.binary_fill_holes(a)).all())
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import ndimage

from chunkflow.errors import InvalidArgumentError
from chunkflow.graph.fill_holes import fill_holes
from chunkflow.ndimage.arguments import axes_of, finish, job_options, open_input, per_axis

__all__ = ["binary_fill_holes", "connectivity"]


def connectivity(structure: Any, ndim: int, axes: Any) -> np.ndarray:
    """scipy's ``structure`` (over ``axes``) as the ``(3,) * ndim`` symmetric array the
    label job takes; sides of 1 are centred, other axes get only the centre plane.

    Examples
    --------
    >>> connectivity([[1, 1, 1]], 2, None).astype(int).tolist()
    [[0, 0, 0], [1, 1, 1], [0, 0, 0]]
    """
    on = axes_of(axes, ndim)
    given = (ndimage.generate_binary_structure(len(on), 1) if structure is None
             else np.asarray(structure, bool))
    if any(n not in (1, 3) for n in given.shape):
        raise InvalidArgumentError(
            f"binary_fill_holes: structure of shape {given.shape} reaches past the nearest "
            "neighbours; chunkflow fills holes through connected components, whose "
            "structure has sides of 3 (or 1)")
    grown = np.pad(given, [((3 - n) // 2,) * 2 for n in given.shape])
    if len(on) < ndim:
        grown = np.expand_dims(grown, tuple(a for a in range(ndim) if a not in on))
        grown = np.pad(grown, [(0, 0) if a in on else (1, 1) for a in range(ndim)])
    if not np.array_equal(grown, grown[(slice(None, None, -1),) * ndim]):
        raise InvalidArgumentError(
            "binary_fill_holes: structure is not symmetric about its centre "
            f"({given.astype(int).tolist()}): scipy's dilation then reaches in one "
            "direction only, which connected components do not model")
    return grown


def binary_fill_holes(input: Any, structure: Any = None, output: Any = None, origin: Any = 0,
                      *, axes: Any = None, **job: Any) -> Any:
    """scipy.ndimage.binary_fill_holes, exact across chunks, in bounded memory.

    ``structure`` has sides of 3 (or 1) and is symmetric about its centre; ``origin``
    is 0 (a shifted structure reaches one way only): others are refused by name.
    ``temp=`` is taken and not needed (nothing is stored between passes). As scipy, the result
    is boolean; a numpy ``output`` is filled with it.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> a = np.zeros((5, 6, 7), bool); a[1:4, 1:5, 1:6] = True; a[2, 2:4, 2] = False
    >>> s = ndimage.generate_binary_structure(3, 3)
    >>> r = binary_fill_holes(a, s)
    >>> bool((r[...] == ndimage.binary_fill_holes(a, s)).all()), r.dtype
    (True, dtype('bool'))
    """
    what = "binary_fill_holes"
    options = job_options(what, job)
    if not options.compute:
        raise InvalidArgumentError(f"{what}: compute=False is not available (a label job "
                                   "runs first, then the fill); leave compute=True")
    image = open_input(what, input, options)
    probe = np.zeros((3,) * image.ndim, image.dtype)
    ndimage.binary_fill_holes(probe, structure, origin=origin, axes=axes)  # scipy's checks
    if any(int(o) != 0 for o in per_axis(origin, len(axes_of(axes, image.ndim)))):
        raise InvalidArgumentError(f"{what}: origin={origin!r}: a shifted structure reaches "
                                   "one way only, which connected components do not model; "
                                   "pass origin=0")
    kernel = connectivity(structure, image.ndim, axes)
    fill = output if isinstance(output, np.ndarray) else None
    if fill is not None and fill.shape != image.shape:
        raise InvalidArgumentError(f"{what}: output shape {fill.shape} is not the input's "
                                   f"{image.shape}")
    result = fill_holes(image, kernel, out=options.target() if fill is None else None,
                        temp=options.temp, overwrite=options.overwrite, resume=options.resume,
                        scheduler=options.scheduler, progress=options.progress,
                        max_memory=options.max_memory, storage_options=options.storage_options,
                        blocks=options.blocks)
    return finish(result, fill)
