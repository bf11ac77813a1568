"""``skimage.filters``' thresholds, by their names and signatures, on arrays of any size.

Each takes what scikit-image takes (an image, or ``hist=``) and also a chunkflow
array, a path or a URL (with ``storage_options``); it reads the image in blocks, in
bounded memory (``max_memory``, ``scheduler``, ``progress`` as chunkflow's reductions).
The histogram is scikit-image's (every integer value its own bin; ``nbins`` equal
bins between the minimum and maximum of other images), summed exactly from the
blocks, and the arithmetic on it is scikit-image's, so Otsu, Yen, triangle and
Multi-Otsu return scikit-image 0.26's value, dtype and bits. Li does too: on integer
images from the exact histogram, on floats with each step's means rebuilt from the
blocks as numpy's pairwise sums (:mod:`chunkflow.graph.thresholds.cross_entropy`).

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> from chunkflow.skimage import filters
>>> import skimage.filters
>>> data = (np.random.default_rng(0).random((64, 64)) * 1000).astype("u2")
>>> z = chunkflow.array(data, chunks=(16, 16))
>>> filters.threshold_otsu(z) == skimage.filters.threshold_otsu(data)
np.True_
>>> filters.threshold_multiotsu(z, classes=3).tolist() == skimage.filters.threshold_multiotsu(data).tolist()
True
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkflow.errors import InvalidArgumentError
from chunkflow.graph.thresholds import (
    ThresholdInput,
    extrema,
    given_histogram,
    image_histogram,
    li,
    multiotsu,
    open_image,
    otsu,
    triangle,
    yen,
)

if TYPE_CHECKING:
    from chunkflow.graph.reductions import ReductionSource
    from chunkflow.graph.scheduler import ProgressArg, SchedulerLike

__all__ = ["threshold_li", "threshold_multiotsu", "threshold_otsu", "threshold_triangle",
           "threshold_yen"]

StorageOptions = Mapping[str, Any] | None


def _open(image: ReductionSource, what: str, max_memory: int | str | None,
          scheduler: SchedulerLike, progress: ProgressArg,
          storage_options: StorageOptions) -> ThresholdInput:
    found = open_image(image, what, max_memory=max_memory, scheduler=scheduler,
                       progress=progress, storage_options=storage_options)
    shape = found.x.shape
    if len(shape) > 2 and shape[-1] in (3, 4) and what in ("threshold_otsu",
                                                           "threshold_multiotsu"):
        warnings.warn(f"{what} is expected to work correctly only for grayscale images; "
                      f"image shape {shape} looks like that of an RGB image.", stacklevel=3)
    return found


def _histogram(image: ThresholdInput | None, hist: Any, nbins: int, what: str,
               found: Any = None) -> tuple[np.ndarray, np.ndarray]:
    if hist is not None:
        return given_histogram(hist, what)
    if image is None:
        raise InvalidArgumentError(f"{what}: either image or hist must be provided")
    return image_histogram(image.x, nbins, found or extrema(image.x, image), image)


def threshold_otsu(image: ReductionSource | None = None, nbins: int = 256, *, hist: Any = None,
                   max_memory: int | str | None = None, scheduler: SchedulerLike = None,
                   progress: ProgressArg = False, storage_options: StorageOptions = None) -> Any:
    """Otsu's threshold, as ``skimage.filters.threshold_otsu``.

    Parameters
    ----------
    image : chunkflow.Array, path, URL, dask or numpy array, optional
        The grayscale image.
    nbins : int
        Bins of a float image's histogram (integer images have a bin per value).
    hist : array or (counts, bin_centers), optional
        A histogram to use instead of the image's.
    max_memory, scheduler, progress, storage_options
        As :func:`chunkflow.reduce`.

    Returns
    -------
    numpy scalar
        scikit-image's threshold: pixels above it are foreground.

    Examples
    --------
    >>> import numpy as np
    >>> threshold_otsu(np.array([1, 2, 2, 9, 10, 10], dtype="u1"))
    np.int64(2)
    """
    opened = None if image is None else _open(image, "threshold_otsu", max_memory, scheduler,
                                              progress, storage_options)
    found = None
    if opened is not None:
        found = extrema(opened.x, opened)
        if found.constant:
            return found.first
    return otsu(*_histogram(opened, hist, nbins, "threshold_otsu", found))


def threshold_yen(image: ReductionSource | None = None, nbins: int = 256, *, hist: Any = None,
                  max_memory: int | str | None = None, scheduler: SchedulerLike = None,
                  progress: ProgressArg = False, storage_options: StorageOptions = None) -> Any:
    """Yen's threshold, as ``skimage.filters.threshold_yen`` (parameters as
    :func:`threshold_otsu`).

    Examples
    --------
    >>> import numpy as np
    >>> threshold_yen(np.array([1, 2, 2, 9, 10, 10], dtype="u1"))
    np.int64(2)
    """
    opened = None if image is None else _open(image, "threshold_yen", max_memory, scheduler,
                                              progress, storage_options)
    return yen(*_histogram(opened, hist, nbins, "threshold_yen"))


def threshold_triangle(image: ReductionSource, nbins: int = 256, *,
                       max_memory: int | str | None = None, scheduler: SchedulerLike = None,
                       progress: ProgressArg = False,
                       storage_options: StorageOptions = None) -> Any:
    """The triangle threshold, as ``skimage.filters.threshold_triangle`` (parameters
    as :func:`threshold_otsu`, without ``hist``).

    Examples
    --------
    >>> import numpy as np
    >>> threshold_triangle(np.array([1, 2, 2, 2, 3, 9], dtype="u1"))
    np.int64(4)
    """
    opened = _open(image, "threshold_triangle", max_memory, scheduler, progress,
                   storage_options)
    found = extrema(opened.x, opened)
    value = triangle(*image_histogram(opened.x, nbins, found, opened))
    return found.first if value is None else value


def threshold_multiotsu(image: ReductionSource | None = None, classes: int = 3,
                        nbins: int = 256, *, hist: Any = None,
                        max_memory: int | str | None = None, scheduler: SchedulerLike = None,
                        progress: ProgressArg = False,
                        storage_options: StorageOptions = None) -> np.ndarray:
    """The ``classes - 1`` Multi-Otsu thresholds, as
    ``skimage.filters.threshold_multiotsu`` (its lookup table and search, in float32).

    The search visits every combination of bins, as scikit-image's; a search of more
    than :data:`~chunkflow.graph.thresholds.methods.MAX_SEARCH` combinations is refused (``ValueError``).

    Examples
    --------
    >>> import numpy as np
    >>> threshold_multiotsu(np.array([1, 1, 5, 6, 9, 9], dtype="u1")).tolist()
    [2, 6]
    """
    if isinstance(classes, bool) or not isinstance(classes, (int, np.integer)) or classes < 2:
        raise InvalidArgumentError(f"threshold_multiotsu: classes={classes!r}; expected an "
                                   "integer of 2 or more")
    opened = None if image is None else _open(image, "threshold_multiotsu", max_memory,
                                              scheduler, progress, storage_options)
    counts, centers = _histogram(opened, hist, nbins, "threshold_multiotsu")
    return multiotsu(counts, centers, int(classes), normalize=hist is None)


def threshold_li(image: ReductionSource, *, tolerance: float | None = None,
                 initial_guess: float | None = None,
                 iter_callback: Callable[[Any], Any] | None = None,
                 max_memory: int | str | None = None, scheduler: SchedulerLike = None,
                 progress: ProgressArg = False, storage_options: StorageOptions = None) -> Any:
    """Li's minimum cross entropy threshold, as ``skimage.filters.threshold_li``.

    scikit-image's value bit for bit: on integer images from the exact histogram; on
    float images each step's means are numpy's own (its pairwise sums, rebuilt from
    blocks that are C-order runs of the image: two passes per step, one counting,
    one summing; with numpy's default buffer size). ``initial_guess`` is a number (a
    function of the whole image is refused).

    Examples
    --------
    >>> import numpy as np
    >>> float(threshold_li(np.array([1, 2, 2, 9, 10, 10], dtype="u1")))
    4.11896996201024
    """
    opened = _open(image, "threshold_li", max_memory, scheduler, progress, storage_options)
    return li(opened, tolerance=tolerance, initial_guess=initial_guess,
              iter_callback=iter_callback)
