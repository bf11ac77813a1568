"""``perimeter`` of 2-D objects in one pass, equal to scikit-image's bit for bit.

scikit-image (``skimage.measure.perimeter``, 4-neighbourhood) takes an object's
*border* pixels (those with a 4-neighbour outside the object), gives each a code (1,
plus 2 per border pixel of the object among its 4-neighbours, plus 10 per one among
its diagonal neighbours), and sums the weights of the codes: ``histogram @ weights``.
A pixel's code depends on the labels up to 2 pixels away, so a block task reads its
block with a halo of 2 (0 beyond the image), counts the codes of its own border
pixels per label, and the counts (integers) add up across blocks. The perimeter is
then ``counts @ weights`` per object, as scikit-image computes it from the same
counts: the same float operations, the same value.

Examples
--------
>>> import numpy as np
>>> labels = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 2]])
>>> counts = code_counts(np.pad(labels, 2), labels.reshape(-1), np.array([1, 2]), 3)
>>> perimeters(counts, None).tolist()
[4.0, 0.0]
"""

from __future__ import annotations

from math import sqrt

import numpy as np

from chunkflow.errors import UnsupportedOperationError

__all__ = ["HALO", "code_counts", "perimeters", "with_halo"]

#: The pixels around a block its codes depend on.
HALO = 2
_CODES = 50
WEIGHTS = np.zeros(_CODES, dtype=np.float64)
WEIGHTS[[5, 7, 15, 17, 25, 27]] = 1
WEIGHTS[[21, 33]] = sqrt(2)
WEIGHTS[[13, 23]] = (1 + sqrt(2)) / 2


def with_halo(region: tuple[slice, ...], shape: tuple[int, ...]) -> tuple[
        tuple[slice, ...], list[tuple[int, int]]]:
    """The window to read around ``region`` (clipped to ``shape``) and the zero
    padding that completes it to ``HALO`` pixels on every side."""
    window = tuple(slice(max(0, r.start - HALO), min(n, r.stop + HALO))
                   for r, n in zip(region, shape))
    pad = [(HALO - (r.start - w.start), HALO - (w.stop - r.stop)) for r, w in zip(region, window)]
    return window, pad


def code_counts(padded: np.ndarray, slots: np.ndarray, chosen: np.ndarray,
                size: int) -> np.ndarray:
    """Per label (the ``chosen`` slots of the block's flat ``slots``; ``size`` slots),
    how many of its border pixels in the block have each code: ``(len(chosen), 50)``.
    ``padded``: the block's labels with ``HALO`` pixels around it."""
    lab = padded
    centre = lab[1:-1, 1:-1]
    # Border pixels of the block and of a ring of 1 around it.
    border = (centre != 0) & ((lab[:-2, 1:-1] != centre) | (lab[2:, 1:-1] != centre)
                              | (lab[1:-1, :-2] != centre) | (lab[1:-1, 2:] != centre))
    own, mine = border[1:-1, 1:-1], centre[1:-1, 1:-1]
    code = own.astype(np.uint8)
    for dy, dx in ((-1, 0), (1, 0), (0, -1), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1)):
        rows = slice(1 + dy, border.shape[0] - 1 + dy)
        cols = slice(1 + dx, border.shape[1] - 1 + dx)
        weight = 2 if dy == 0 or dx == 0 else 10
        code += (weight * (border[rows, cols] & (centre[rows, cols] == mine))).astype(np.uint8)
    # Only the block's border pixels: the other codes are even, of weight 0.
    picked = np.flatnonzero(own.reshape(-1))
    rank = np.full(size, -1, np.int64)
    rank[chosen] = np.arange(len(chosen))
    ranks = rank[slots[picked]]
    keep = ranks >= 0  # negative labels are background (as skimage has them)
    found = np.bincount(ranks[keep] * _CODES + code.reshape(-1)[picked[keep]],
                        minlength=len(chosen) * _CODES)
    return found.reshape(len(chosen), _CODES).astype(np.int64)


def perimeters(counts: np.ndarray, spacing: np.ndarray | None) -> np.ndarray:
    """Each object's perimeter from its merged code counts, as scikit-image computes
    it (``histogram @ weights``, times the spacing).

    Raises
    ------
    UnsupportedOperationError
        ``spacing`` is not the same along both axes (a ``NotImplementedError``, as
        scikit-image raises).
    """
    if spacing is not None and len(np.unique(spacing)) != 1:
        raise UnsupportedOperationError(
            "measure: perimeter supports isotropic spacings only (as "
            f"skimage.measure.regionprops), got spacing {np.asarray(spacing).tolist()}")
    scale = np.float64(1.0 if spacing is None else spacing[0])
    # One product per object, as skimage's (the same vector and call: the same sum).
    return np.array([row @ WEIGHTS for row in counts], np.float64) * scale
