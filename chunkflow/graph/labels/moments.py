"""Second-order moments of objects in one pass: ``inertia_tensor``,
``inertia_tensor_eigvals``, ``axis_major_length``, ``axis_minor_length``,
``eccentricity`` and ``orientation`` of ``skimage.measure.regionprops_table``, from
sums merged across blocks instead of from crops.

Per block and label, the partial table keeps integer sums about the block's corner
(its *origin*): the coordinate sums ``s1[i] = sum(x_i)`` and the products
``s2[ij] = sum(x_i * x_j)`` (``i <= j``). Block coordinates are small, so these sums are
exact (``float64`` bincounts of integers under 2**53, then ``int64``). Two parts of
an object merge by moving both to the smaller origin (``x -> x + d``, in integers)::

    s1' = s1 + n d;  s2'[ij] = s2[ij] + d_i s1[j] + d_j s1[i] + n d_i d_j

The central moments are then ``mu[ij] = (n s2[ij] - s1[i] s1[j]) / n``: the numerator is
an exact integer (Python integers where ``int64`` could overflow), so ``mu`` is
rounded once, where scikit-image sums rounded products over the crop. The columns
follow scikit-image's formulas on ``mu`` (its ``inertia_tensor``, eigenvalues by
``numpy.linalg.eigvalsh``, clipped at 0, descending).

Examples
--------
>>> import numpy as np
>>> labels = np.array([[1, 1, 1, 0], [0, 1, 0, 0]])
>>> slots, chosen = labels.reshape(-1), np.array([1])
>>> part = block_sums(slots, labels.shape, chosen, 2, (0, 0))
>>> part["s1"].tolist(), part["s2"].tolist()
([[1, 4]], [[1, 1, 6]])
>>> table = {"count": np.array([4]), **part}
>>> found = inertia_columns(table, ["inertia_tensor", "eccentricity"], 2, None)
>>> from skimage.measure import regionprops_table
>>> expected = regionprops_table(labels, properties=["inertia_tensor", "eccentricity"])
>>> all(np.allclose(found[k], expected[k], rtol=1e-12, atol=1e-15) for k in expected)
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations_with_replacement

import numpy as np

__all__ = ["MOMENT_PROPERTIES", "block_sums", "inertia_columns", "merge_sums", "moment_names"]

#: The properties computed here, and the image dimensions scikit-image computes each
#: in (elsewhere it raises, and the crop pass raises as it does).
MOMENT_PROPERTIES: dict[str, tuple[int, ...]] = {
    "inertia_tensor": (2, 3), "inertia_tensor_eigvals": (2, 3),
    "axis_major_length": (2, 3), "axis_minor_length": (2, 3),
    "eccentricity": (2,), "orientation": (2,),
}


def moment_names(ndim: int) -> list[str]:
    """The properties computed from sums for an image of ``ndim`` dimensions."""
    return [name for name, dims in MOMENT_PROPERTIES.items() if ndim in dims]


def _pairs(ndim: int) -> list[tuple[int, int]]:
    return list(combinations_with_replacement(range(ndim), 2))


def block_sums(slots: np.ndarray, shape: tuple[int, ...], chosen: np.ndarray, size: int,
               origin: Sequence[int]) -> dict[str, np.ndarray]:
    """Per label (``chosen`` slots of the flat ``slots``, ``size`` of them in all) of a
    block of ``shape`` whose first voxel is ``origin``: the origin, ``s1`` and ``s2``."""
    ndim = len(shape)
    coords = [np.broadcast_to(np.arange(n, dtype=np.float64).reshape(
        [n if a == axis else 1 for a in range(ndim)]), shape).reshape(-1)
        for axis, n in enumerate(shape)]

    def per_label(weights: np.ndarray) -> np.ndarray:
        # Integers under 2**53 (a block's coordinates and their products): exact.
        return np.bincount(slots, weights=weights, minlength=size)[chosen].round().astype(np.int64)

    k = len(chosen)
    s1 = np.stack([per_label(c) for c in coords], axis=-1).reshape(k, ndim)
    s2 = np.stack([per_label(coords[i] * coords[j]) for i, j in _pairs(ndim)],
                  axis=-1).reshape(k, len(_pairs(ndim)))
    return {"origin": np.broadcast_to(np.asarray(origin, np.int64), (k, ndim)).copy(),
            "s1": s1, "s2": s2}


def _moved(s1: np.ndarray, s2: np.ndarray, n: np.ndarray,
           d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sums about an origin ``d`` before the current one (``x -> x + d``)."""
    moved2 = np.empty_like(s2)
    for p, (i, j) in enumerate(_pairs(s1.shape[1])):
        moved2[:, p] = s2[:, p] + d[:, i] * s1[:, j] + d[:, j] * s1[:, i] + n * d[:, i] * d[:, j]
    return s1 + n[:, None] * d, moved2


def merge_sums(joined: dict[str, np.ndarray], starts: np.ndarray) -> dict[str, np.ndarray]:
    """The sums of the parts of each label (rows sorted by label, groups beginning at
    ``starts``), about the smallest origin of each group."""
    origin = np.minimum.reduceat(joined["origin"], starts, axis=0)
    group = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(joined["origin"]))))
    s1, s2 = _moved(joined["s1"], joined["s2"], joined["count"].astype(np.int64),
                    joined["origin"] - origin[group])
    return {"origin": origin, "s1": np.add.reduceat(s1, starts, axis=0),
            "s2": np.add.reduceat(s2, starts, axis=0)}


def _central(table: Mapping[str, np.ndarray], ndim: int) -> np.ndarray:
    """``mu`` per label: ``(k, ndim, ndim)`` central second moments (voxel units)."""
    n = table["count"].astype(np.int64)
    s1, s2 = table["s1"], table["s2"]
    mu = np.zeros((len(n), ndim, ndim))
    # n * s2 and s1 * s1 in int64 where they fit (with a margin), else in Python ints.
    big = (np.abs(n.astype(np.float64)[:, None] * s2.astype(np.float64)).max(axis=1, initial=0)
           > 2.0**61) | (np.abs(s1.astype(np.float64)).max(axis=1, initial=0) > 2.0**30)
    for p, (i, j) in enumerate(_pairs(ndim)):
        exact = n * s2[:, p] - s1[:, i] * s1[:, j]
        value = exact / n
        for row in np.flatnonzero(big):
            numerator = int(n[row]) * int(s2[row, p]) - int(s1[row, i]) * int(s1[row, j])
            value[row] = numerator / int(n[row])
        mu[:, i, j] = mu[:, j, i] = value
    return mu


def _tensor(mu: np.ndarray, count: np.ndarray, spacing: np.ndarray) -> np.ndarray:
    """scikit-image's ``inertia_tensor`` of each ``mu`` (as its float operations)."""
    ndim = mu.shape[1]
    mu = mu * (spacing[:, None] * spacing[None, :])
    mu0 = count.astype(np.float64)
    diagonal = mu[:, range(ndim), range(ndim)]
    total = np.zeros(len(mu0))
    for axis in range(ndim):
        total = total + diagonal[:, axis]
    tensor = -mu / mu0[:, None, None]
    tensor[:, range(ndim), range(ndim)] = (total[:, None] - diagonal) / mu0[:, None]
    return tensor


def _eigvals(tensor: np.ndarray) -> np.ndarray:
    values = np.linalg.eigvalsh(tensor) if len(tensor) else np.zeros(tensor.shape[:2])
    return np.clip(values, 0, None)[:, ::-1]


def _orientation(tensor: np.ndarray) -> np.ndarray:
    a, b, c = tensor[:, 0, 0], tensor[:, 0, 1], tensor[:, 1, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        angle = 0.5 * np.arctan2(-2 * b, c - a)
    return np.where(a - c == 0, np.where(b < 0, np.pi / 4.0, -np.pi / 4.0), angle)


def _lengths(ev: np.ndarray, major: bool) -> np.ndarray:
    if ev.shape[1] == 2:
        return 4 * np.sqrt(ev[:, 0 if major else -1])
    sign = 1 if major else -1
    return np.sqrt(np.maximum(0, 10 * (sign * ev[:, 0] + ev[:, 1] - sign * ev[:, 2])))


def inertia_columns(table: Mapping[str, np.ndarray], names: Sequence[str], ndim: int,
                    spacing: np.ndarray | None) -> dict[str, np.ndarray]:
    """The ``regionprops_table`` columns of the moment ``names`` of the merged sums."""
    scale = np.ones(ndim) if spacing is None else np.asarray(spacing, np.float64)
    tensor = _tensor(_central(table, ndim), table["count"], scale)
    ev = _eigvals(tensor)
    found: dict[str, np.ndarray] = {}
    for name in names:
        if name == "inertia_tensor":
            found.update({f"inertia_tensor-{i}-{j}": tensor[:, i, j]
                          for i in range(ndim) for j in range(ndim)})
        elif name == "inertia_tensor_eigvals":
            found.update({f"inertia_tensor_eigvals-{i}": ev[:, i] for i in range(ndim)})
        elif name in ("axis_major_length", "axis_minor_length"):
            found[name] = _lengths(ev, name == "axis_major_length")
        elif name == "eccentricity":
            with np.errstate(invalid="ignore", divide="ignore"):
                found[name] = np.where(ev[:, 0] == 0, 0.0, np.sqrt(1 - ev[:, 1] / ev[:, 0]))
        elif name == "orientation":
            found[name] = _orientation(tensor)
    return found
