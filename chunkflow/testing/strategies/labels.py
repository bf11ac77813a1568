"""Label images: objects that cross chunk faces, touch the border, hold holes, and
carry label values anywhere in their dtype's range (2**63 and beyond for uint64).

Examples
--------
>>> from hypothesis import find
>>> import numpy as np
>>> image = find(label_images(), lambda a: a.ndim == 2 and len(np.unique(a)) > 2)
>>> image.dtype.kind in "iu"
True
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from chunkflow.testing.strategies.array_shapes import shapes as shape_strategy
from chunkflow.testing.strategies.values import dtypes as dtype_strategy

__all__ = ["label_images"]


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

    Labels are drawn from the dtype's whole range (its extremes included), and the
    image mixes blobs (random walks that cross chunk faces) with single pixels.
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
            for _ in range(int(rng.integers(1, 5))):
                lo = [int(rng.integers(0, n)) for n in shape]
                hi = [int(rng.integers(a + 1, n + 1)) for a, n in zip(lo, shape)]
                box = tuple(slice(a, b) for a, b in zip(lo, hi))
                picks[box] = rng.integers(0, len(values))
                mask[box] |= rng.random(mask[box].shape) < 0.85
        image[mask] = values[picks[mask]]
    return image.astype(dtype)
