"""Image moments of objects in one pass: ``moments``, ``moments_central``,
``moments_normalized``, ``moments_hu`` and their ``moments_weighted*`` variants of
``skimage.measure.regionprops_table``, from raw moments merged across blocks instead
of from crops.

scikit-image computes an object's moments on its bounding-box crop: the raw moments
``M[p, q] = sum(x**p * y**q * w)`` (``p, q <= 3``; ``w`` 1 or the intensity) about the
box's first corner, then the central moments about the centroid. Here each block
keeps, per label, the raw moments about the label's box *in that block*; two parts
merge by moving both to the merged box's corner, ``x -> x + d`` with ``d >= 0``::

    M'[p, q] = sum_{i <= p, j <= q} C(p, i) C(q, j) d_x**(p - i) d_y**(q - j) M[i, j]

(separable: one 4 x 4 matrix per axis). With ``w >= 0`` every term is non-negative,
so the merge adds no cancellation: the sums carry float64 rounding of the same
order as scikit-image's own sums over the crop. The central moments are the same
transform with ``d = -centroid``, then scikit-image's formulas (spacing, normalized
moments, Hu's invariants) on them.

Examples
--------
>>> import numpy as np
>>> labels = np.array([[0, 1, 1], [0, 1, 0], [2, 2, 0]])
>>> slots, chosen = labels.reshape(-1), np.array([1, 2])
>>> low = np.array([[0, 1], [2, 0]])
>>> part = block_moments(slots, labels.shape, chosen, 3, low)
>>> table = {"count": np.array([3, 2]), "bbox_min": low, "raw": part}
>>> found = moment_columns(table, ["moments_central", "moments_hu"], 2, None)
>>> from skimage.measure import regionprops_table
>>> expected = regionprops_table(labels, properties=["moments_central", "moments_hu"])
>>> all(np.allclose(found[k], expected[k], rtol=1e-12, atol=1e-15) for k in expected)
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import product
from math import comb

import numpy as np

__all__ = ["ORDER", "RAW_MOMENT_PROPERTIES", "block_moments", "merge_moments",
           "moment_columns", "raw_moment_names"]

#: The moments' order along each axis (scikit-image's regionprops: 3).
ORDER = 3
_SIDE = ORDER + 1
#: The properties computed here, and the statistic each needs (``raw``: unweighted,
#: ``wraw``: intensity-weighted).
RAW_MOMENT_PROPERTIES: dict[str, str] = {
    "moments": "raw", "moments_central": "raw", "moments_normalized": "raw",
    "moments_hu": "raw", "moments_weighted": "wraw", "moments_weighted_central": "wraw",
    "moments_weighted_normalized": "wraw", "moments_weighted_hu": "wraw",
}
_HU = ("moments_hu", "moments_weighted_hu")
# Voxels whose powers are held at once (about 200 bytes each in 3-D).
_PIECE = 1 << 16


def raw_moment_names(ndim: int, spacing: np.ndarray | None) -> list[str]:
    """The properties computed here for ``ndim`` dimensions and this ``spacing``
    (elsewhere scikit-image raises, and the crop pass raises as it does): 2-D and
    3-D; Hu's invariants 2-D with a spacing of 1."""
    if ndim not in (2, 3):
        return []
    unit = spacing is None or bool(np.all(np.asarray(spacing) == 1))
    return [name for name in RAW_MOMENT_PROPERTIES
            if name not in _HU or (ndim == 2 and unit)]


def _accumulate(found: np.ndarray, rows: np.ndarray, powers: list[list[np.ndarray]],
                partial: np.ndarray, axis: int, start: int, stride: int) -> None:
    """Add the bincounts of ``partial`` times each product of ``powers`` of the axes
    from ``axis`` on to the columns of ``found`` (products shared along the way)."""
    if axis == len(powers):
        found[:, start] += np.bincount(rows, weights=partial, minlength=len(found))
        return
    for p in range(_SIDE):
        _accumulate(found, rows, powers, partial * powers[axis][p], axis + 1,
                    start + p * stride // _SIDE, stride // _SIDE)


def block_moments(slots: np.ndarray, shape: tuple[int, ...], chosen: np.ndarray, size: int,
                  low: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Per label (the ``chosen`` slots of the flat ``slots``, ``size`` slots in all)
    of a block of ``shape``: the raw moments about its box's first corner ``low``
    (block coordinates, ``(k, ndim)``), weighted by the flat ``weights`` if given;
    ``(k, 4**ndim)``, in C order of the powers."""
    ndim, k = len(shape), len(chosen)
    row = np.full(size, -1, np.intp)
    row[chosen] = np.arange(k)
    rows_all = row[slots]
    voxels = np.flatnonzero(rows_all >= 0)  # the objects' voxels (background costs nothing)
    found = np.zeros((k, _SIDE ** ndim))
    # A piece of the voxels at a time: their powers and products are the temporaries.
    for begin in range(0, len(voxels), _PIECE):
        keep = voxels[begin:begin + _PIECE]
        rows = rows_all[keep]
        coords = np.unravel_index(keep, shape)
        # Each voxel's coordinate in its object's box, as float64: exact (a block's size).
        local = [(coords[a] - low[rows, a]).astype(np.float64) for a in range(ndim)]
        powers = [[np.ones(len(rows)) if p == 0 else x ** p for p in range(_SIDE)]
                  for x in local]
        base = np.ones(len(rows)) if weights is None else weights[keep]
        _accumulate(found, rows, powers, base, 0, 0, _SIDE ** ndim)
    return found


def _transform(moments: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """The raw moments ``(k, 4**ndim)`` about a corner moved by ``-shift``
    (``x -> x + shift``), axis by axis."""
    k, ndim = shift.shape
    cube = moments.reshape((k,) + (_SIDE,) * ndim)
    exponents = np.subtract.outer(np.arange(_SIDE), np.arange(_SIDE))  # p - i
    binomials = np.array([[comb(p, i) for i in range(_SIDE)] for p in range(_SIDE)], np.float64)
    for axis in range(ndim):
        with np.errstate(invalid="ignore", over="ignore"):
            matrix = binomials * np.where(exponents >= 0, shift[:, axis, None, None] ** np.maximum(
                exponents, 0), 0.0)
        moved = np.moveaxis(cube, axis + 1, -1)
        cube = np.moveaxis(np.einsum("kpi,k...i->k...p", matrix, moved), -1, axis + 1)
    return cube.reshape(k, _SIDE ** ndim)


def merge_moments(moments: np.ndarray, low: np.ndarray, merged_low: np.ndarray,
                  group: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The raw moments of the parts of each label (rows sorted by label, part ``r``
    of label ``group[r]``, groups beginning at ``starts``), about each label's merged
    box corner ``merged_low``."""
    moved = _transform(moments, (low - merged_low[group]).astype(np.float64))
    return np.add.reduceat(moved, starts, axis=0)


def _scaled(cube: np.ndarray, spacing: np.ndarray) -> np.ndarray:
    """Moments in voxel units times ``spacing**powers`` (scikit-image's spacing)."""
    factor = np.ones((_SIDE,) * len(spacing))
    for axis, step in enumerate(spacing):
        view = [1] * len(spacing)
        view[axis] = _SIDE
        factor = factor * (step ** np.arange(_SIDE)).reshape(view)
    return cube * factor.reshape(-1)


def _central(raw: np.ndarray, ndim: int) -> np.ndarray:
    """Central moments (voxel units) from raw ones, about the centroid ``M[e_a]/M0``."""
    unit = [_SIDE ** (ndim - 1 - a) for a in range(ndim)]
    with np.errstate(invalid="ignore", divide="ignore"):
        centroid = np.stack([raw[:, u] / raw[:, 0] for u in unit], axis=-1)
    return _transform(raw, -centroid)


def _normalized(mu: np.ndarray, ndim: int, spacing: np.ndarray) -> np.ndarray:
    """scikit-image's ``moments_normalized`` of each row of ``mu`` (order 3)."""
    nu = np.empty_like(mu)
    mu0, scale = mu[:, 0], min(spacing)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for index, powers in enumerate(product(range(_SIDE), repeat=ndim)):
            total = sum(powers)
            nu[:, index] = np.nan if total < 2 else \
                (mu[:, index] / scale ** total) / mu0 ** (total / ndim + 1)
    return nu


def _hu(nu: np.ndarray) -> np.ndarray:
    """Hu's seven invariants of each row of 2-D normalized moments (scikit-image's
    ``moments_hu``, term by term)."""
    n = nu.reshape(-1, _SIDE, _SIDE)
    t0, t1 = n[:, 3, 0] + n[:, 1, 2], n[:, 2, 1] + n[:, 0, 3]
    q0, q1 = t0 * t0, t1 * t1
    n4 = 4 * n[:, 1, 1]
    s, d = n[:, 2, 0] + n[:, 0, 2], n[:, 2, 0] - n[:, 0, 2]
    hu = np.empty((len(n), 7))
    hu[:, 0] = s
    hu[:, 1] = d * d + n4 * n[:, 1, 1]
    hu[:, 3] = q0 + q1
    hu[:, 5] = d * (q0 - q1) + n4 * t0 * t1
    t0, t1 = t0 * (q0 - 3 * q1), t1 * (3 * q0 - q1)
    q0, q1 = n[:, 3, 0] - 3 * n[:, 1, 2], 3 * n[:, 2, 1] - n[:, 0, 3]
    hu[:, 2] = q0 * q0 + q1 * q1
    hu[:, 4] = q0 * t0 + q1 * t1
    hu[:, 6] = q1 * t0 - q0 * t1
    return hu


def _named(name: str, values: np.ndarray, ndim: int) -> dict[str, np.ndarray]:
    if name in _HU:
        return {f"{name}-{i}": values[:, i] for i in range(values.shape[1])}
    return {f"{name}-" + "-".join(map(str, powers)): values[:, index]
            for index, powers in enumerate(product(range(_SIDE), repeat=ndim))}


def moment_columns(table: Mapping[str, np.ndarray], names: Sequence[str], ndim: int,
                   spacing: np.ndarray | None) -> dict[str, np.ndarray]:
    """The ``regionprops_table`` columns of the moment ``names`` of a merged table
    (``raw`` and ``wraw``: moments about ``bbox_min``, voxel units)."""
    scale = np.ones(ndim) if spacing is None else np.asarray(spacing, np.float64)
    found: dict[str, np.ndarray] = {}
    for name in names:
        raw = table["wraw" if RAW_MOMENT_PROPERTIES[name] == "wraw" else "raw"]
        if name in ("moments", "moments_weighted"):
            found.update(_named(name, _scaled(raw, scale), ndim))
            continue
        mu = _scaled(_central(raw, ndim), scale)
        if name.endswith("_central"):
            found.update(_named(name, mu, ndim))
            continue
        nu = _normalized(mu, ndim, scale)
        found.update(_named(name, _hu(nu) if name in _HU else nu, ndim))
    return found
