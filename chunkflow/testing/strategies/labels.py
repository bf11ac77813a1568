"""Label images, binary images, structuring elements and intensity images: objects
that cross chunk faces, touch the border, hold holes, and carry label values anywhere
in their dtype's range (2**63 and beyond for uint64, negative ones for signed types).

Examples
--------
>>> from hypothesis import find
>>> import numpy as np
>>> image = find(label_images(), lambda a: a.ndim == 2 and len(np.unique(a)) > 2)
>>> image.dtype.kind in "iub"
True
>>> find(structures(2), lambda s: not s[0, 0] and s[0, 1]).astype(int).tolist()
[[0, 1, 0], [1, 1, 1], [0, 1, 0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from chunkflow.testing.strategies.array_shapes import shapes as shape_strategy
from chunkflow.testing.strategies.values import dtypes as dtype_strategy

__all__ = ["binary_images", "intensity_images", "label_images", "structures"]


def _boxes(rng: np.random.Generator, shape: tuple[int, ...]) -> list[tuple[slice, ...]]:
    """One to four random boxes (blobs that cross chunk faces)."""
    found = []
    for _ in range(int(rng.integers(1, 5))):
        lo = [int(rng.integers(0, n)) for n in shape]
        hi = [int(rng.integers(a + 1, n + 1)) for a, n in zip(lo, shape)]
        found.append(tuple(slice(a, b) for a, b in zip(lo, hi)))
    return found


@st.composite
def label_images(
    draw: st.DrawFn,
    *,
    shapes: st.SearchStrategy[tuple[int, ...]] = shape_strategy(min_dims=1, max_dims=3,  # noqa: B008
                                                                 max_side=12),
    dtypes: st.SearchStrategy[np.dtype] = dtype_strategy(kinds="iub"),  # noqa: B008
    max_labels: int = 6,
) -> np.ndarray:
    """An integer (or boolean) image of a few labels in blobs and noise.

    Labels are drawn from the dtype's whole range (its extremes included: negative
    ones, and 2**63 and more for ``uint64``), and the image mixes blobs (boxes, mostly
    filled, that cross chunk faces) with single voxels. The dtype's byte order is
    kept.
    """
    shape = draw(shapes)
    dtype = draw(dtypes)
    native = dtype.newbyteorder("=")
    if native.kind == "b":
        values = np.array([False, True])
    else:
        info = np.iinfo(native)
        extremes = [1, 2, 3, info.max, info.max - 1, info.min, info.max // 2 + 3]
        pool = st.one_of(st.sampled_from(extremes), st.integers(int(info.min), int(info.max)))
        values = np.array(draw(st.lists(pool, min_size=1, max_size=max_labels)), native)
    seed = draw(st.integers(0, 2**32 - 1))
    density = draw(st.sampled_from([0.1, 0.3, 0.5, 0.7]))
    rng = np.random.default_rng(seed)
    image = np.zeros(shape, native)
    if image.size:
        mask = rng.random(shape) < density
        picks = rng.integers(0, len(values), size=shape)
        if draw(st.booleans()):
            # Blobs: each label spreads over boxes, so objects span several chunks.
            for box in _boxes(rng, shape):
                picks[box] = rng.integers(0, len(values))
                mask[box] |= rng.random(mask[box].shape) < 0.85
        image[mask] = values[picks[mask]]
    return image.astype(dtype)


@st.composite
def binary_images(
    draw: st.DrawFn,
    *,
    shapes: st.SearchStrategy[tuple[int, ...]] = shape_strategy(min_dims=1, max_dims=4,  # noqa: B008
                                                                 max_side=9),
    densities: st.SearchStrategy[float] = st.sampled_from(  # noqa: B008
        [0.0, 0.05, 0.2, 0.4, 0.5, 0.6, 0.8, 0.95, 1.0]),
) -> np.ndarray:
    """A boolean image whose voxels are set with a random density (0 and 1
    included), sometimes over filled boxes too, sometimes on one colour of a
    checkerboard only.

    Examples
    --------
    >>> from hypothesis import find
    >>> find(binary_images(), lambda a: a.size > 3 and a.all()).dtype
    dtype('bool')
    """
    shape = draw(shapes)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    image = rng.random(shape) < draw(densities)
    if image.size and draw(st.booleans()):
        for box in _boxes(rng, shape):
            image[box] = True
    if image.size and draw(st.booleans()):
        # Keep one colour of a checkerboard: voxels then touch only across edges and
        # corners, never across faces (what joins blocks diagonally, or not at all).
        image &= np.indices(shape).sum(axis=0) % 2 == draw(st.integers(0, 1))
    return image


@st.composite
def structures(draw: st.DrawFn, ndim: int) -> Any:
    """A structuring element ``scipy.ndimage.label`` takes for ``ndim`` dimensions:
    ``generate_binary_structure(ndim, c)`` at every connectivity ``c``, or a random
    one made symmetric about its centre (any centre value), as booleans, integers,
    floats or nested lists.
    """
    from scipy import ndimage

    if draw(st.booleans()):
        array = ndimage.generate_binary_structure(ndim, draw(st.integers(1, ndim)))
    else:
        bits = np.array(draw(st.lists(st.booleans(), min_size=3**ndim, max_size=3**ndim)),
                        bool).reshape((3,) * ndim)
        array = bits | bits[(slice(None, None, -1),) * ndim]
    form = draw(st.sampled_from(["bool", "int", "float", "list"]))
    if form == "int":
        return array.astype(np.int8) * draw(st.sampled_from([1, 2, -1]))
    if form == "float":
        return array.astype(np.float64) * 0.5
    return array.tolist() if form == "list" else array


@st.composite
def intensity_images(
    draw: st.DrawFn,
    shape: tuple[int, ...],
    *,
    dtypes: st.SearchStrategy[np.dtype] = dtype_strategy(kinds="biuf", byteorder="any"),  # noqa: B008
    max_magnitude: float = 1e6,
) -> np.ndarray:
    """An intensity image of ``shape``: integers over their whole range (``int64``
    and ``uint64`` within ±2**40, where float64 sums stay exact), floats holding NaN,
    ±inf, ±0 and subnormals among values within ``±max_magnitude`` (sums that
    overflow or cancel to nothing measure summation order, not correctness).

    Examples
    --------
    >>> from hypothesis import find
    >>> import numpy as np
    >>> find(intensity_images((4,)), lambda a: a.dtype.kind == "f" and np.isnan(a).any()).size
    4
    """
    dtype = draw(dtypes)
    native = dtype.newbyteorder("=")
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if native.kind == "b":
        data = rng.random(shape) < 0.5
    elif native.kind in "iu":
        info = np.iinfo(native)
        low, high = (max(int(info.min), -(2**40)), min(int(info.max), 2**40)) \
            if native.itemsize == 8 else (int(info.min), int(info.max))
        data = rng.integers(low, high, size=shape, endpoint=True, dtype=native)
    else:
        limit = min(max_magnitude, float(np.finfo(native).max) / 4)
        data = (rng.uniform(-limit, limit, size=shape) if draw(st.booleans())
                else rng.uniform(0, limit, size=shape)).astype(native)
        if data.size and draw(st.booleans()):
            specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0,
                                 float(np.finfo(native).smallest_subnormal)], native)
            where = rng.random(shape) < draw(st.sampled_from([0.05, 0.3]))
            data[where] = specials[rng.integers(0, len(specials), size=int(where.sum()))]
    return data.astype(dtype)
