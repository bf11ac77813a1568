"""Whole-image numpy/scipy references for pyramid levels (written independently of
chunkflow's block kernels: windows by reshaping a padded image, floats for rounding)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
from scipy import ndimage


def _windows(image: np.ndarray, factors: Sequence[int], fill: float) -> np.ndarray:
    """The image as (out..., window...) with partial windows padded by ``fill``."""
    pad = [(0, -n % f) for n, f in zip(image.shape, factors)]
    padded = np.pad(image.astype(np.float64), pad, constant_values=fill)
    shape = []
    for n, f in zip(padded.shape, factors):
        shape += [n // f, f]
    split = padded.reshape(shape)
    ndim = image.ndim
    return split.transpose(list(range(0, 2 * ndim, 2)) + list(range(1, 2 * ndim, 2)))


def _cast(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.clip(np.round(values), info.min, info.max).astype(dtype)
    return values.astype(dtype)


def _mode(image: np.ndarray, factors: Sequence[int]) -> np.ndarray:
    out_shape = tuple(-(-n // f) for n, f in zip(image.shape, factors))
    out = np.empty(out_shape, dtype=image.dtype)
    for index in itertools.product(*(range(n) for n in out_shape)):
        window = image[tuple(slice(i * f, (i + 1) * f) for i, f in zip(index, factors))]
        values, counts = np.unique(window, return_counts=True)
        out[index] = values[np.argmax(counts)]  # unique sorts: the smallest on a tie
    return out


def next_level(image: np.ndarray, factors: Sequence[int], method: str) -> np.ndarray:
    """One level coarser, computed on the whole image."""
    dtype = image.dtype
    axes = tuple(range(image.ndim, 2 * image.ndim))
    if method == "nearest":
        return image[tuple(slice(None, None, f) for f in factors)]
    if method == "mode":
        return _mode(image, factors)
    if method == "max":
        return _windows(image, factors, -np.inf).max(axis=axes).astype(dtype)
    if method == "mean":
        total = _windows(image, factors, 0).sum(axis=axes)
        count = _windows(np.ones(image.shape), factors, 0).sum(axis=axes)
        return _cast(total / count, dtype)
    if method == "gaussian":
        sigma = [2 * f / 6 if f > 1 else 0 for f in factors]
        smooth = ndimage.gaussian_filter(image.astype(np.float64), sigma, mode="reflect",
                                         truncate=4.0)
        return _cast(smooth[tuple(slice(None, None, f) for f in factors)], dtype)
    raise ValueError(method)


def reference_levels(image: np.ndarray, factors: Sequence[int], method: str,
                     levels: int) -> list[np.ndarray]:
    """Level 0 and ``levels - 1`` coarser levels, each from the one before."""
    result = [image]
    for _ in range(levels - 1):
        result.append(next_level(result[-1], factors, method))
    return result
