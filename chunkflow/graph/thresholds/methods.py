"""Thresholds from a histogram, by scikit-image's arithmetic (``skimage.filters``).

Each function takes the counts and bin centers of
:func:`~chunkflow.graph.thresholds.histograms.image_histogram` (or a histogram the user
gives, as scikit-image's ``hist=``) and performs scikit-image 0.26's operations in the
same dtypes and the same order, so its value is scikit-image's, bit for bit: float32
counts, numpy's cumulative sums (sequential), and for Multi-Otsu the float32 lookup
table and the first maximum in the order scikit-image's search visits.

Examples
--------
>>> import numpy as np
>>> counts, centers = np.array([4, 0, 1, 6, 2]), np.arange(10, 15)
>>> otsu(counts, centers), yen(counts, centers), triangle(counts, centers)
(np.int64(10), np.int64(12), np.int64(12))
>>> multiotsu(counts, centers, 3).tolist()
[12, 13]
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from chunkflow.errors import InvalidArgumentError

__all__ = ["MAX_SEARCH", "given_histogram", "multiotsu", "otsu", "triangle", "yen"]

#: Multi-Otsu searches at most this many combinations of thresholds (scikit-image
#: searches them all, in C), in at most a thousandth as many vector operations: a few
#: seconds.
MAX_SEARCH = 20_000_000


def given_histogram(hist: Any, what: str) -> tuple[np.ndarray, np.ndarray]:
    """A user's ``hist=`` (counts, or counts and centers) as scikit-image reads it:
    zero counts trimmed from both ends."""
    if isinstance(hist, (tuple, list)):
        if len(hist) != 2:
            raise InvalidArgumentError(f"{what}: hist= is the counts or (counts, bin_centers); "
                                       f"got a sequence of {len(hist)}")
        counts, centers = (np.asarray(h) for h in hist)
    else:
        counts = np.asarray(hist)
        centers = np.arange(counts.size)
    if counts.ndim != 1 or counts.size == 0:
        raise InvalidArgumentError(f"{what}: hist= counts must be a non-empty 1-d array; got "
                                   f"shape {counts.shape}")
    if counts[0] == 0 or counts[-1] == 0:
        kept = counts > 0
        start = int(np.argmax(kept))
        end = kept.size - int(np.argmax(kept[::-1]))
        counts, centers = counts[start:end], centers[start:end]
    return counts, centers


def otsu(counts: np.ndarray, centers: np.ndarray) -> Any:
    """Otsu's threshold: the center maximising the between-class variance."""
    counts = counts.astype("float32", copy=False)
    below = np.cumsum(counts)
    above = np.cumsum(counts[::-1])[::-1]
    mean_below = np.cumsum(counts * centers) / below
    mean_above = (np.cumsum((counts * centers)[::-1]) / above[::-1])[::-1]
    # Class 1 up to and including a bin, class 2 from the next one on.
    variance = below[:-1] * above[1:] * (mean_below[:-1] - mean_above[1:]) ** 2
    return centers[np.argmax(variance)]


def yen(counts: np.ndarray, centers: np.ndarray) -> Any:
    """Yen's threshold: the center maximising Yen's entropic criterion."""
    counts = counts.astype("float32", copy=False)
    if centers.size == 1:
        return centers[0]
    pmf = counts.astype("float32", copy=False) / counts.sum()
    cumulative = np.cumsum(pmf)
    squares_below = np.cumsum(pmf ** 2)
    squares_above = np.cumsum(pmf[::-1] ** 2)[::-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        criterion = np.log(((squares_below[:-1] * squares_above[1:]) ** -1)
                           * (cumulative[:-1] * (1.0 - cumulative[:-1])) ** 2)
    return centers[criterion.argmax()]


def triangle(counts: np.ndarray, centers: np.ndarray) -> Any:
    """The triangle threshold (Zack et al.), on the integer counts; ``None`` when only
    one bin has values (the caller returns the image's value)."""
    nbins = len(counts)
    peak = int(np.argmax(counts))
    peak_height = counts[peak]
    low, high = np.flatnonzero(counts)[[0, -1]]
    if low == high:
        return None
    flip = peak - low < high - peak  # the left tail is the shorter one
    if flip:
        counts = counts[::-1]
        low = nbins - high - 1
        peak = nbins - peak - 1
    width = peak - low
    x1 = np.arange(width)
    y1 = counts[x1 + low]
    norm = np.sqrt(peak_height ** 2 + width ** 2)
    peak_height = peak_height / norm
    width = width / norm
    length = peak_height * x1 - width * y1
    level = np.argmax(length) + low
    if flip:
        level = nbins - level - 1
    return centers[level]


class _ClassTerms:
    """scikit-image's float32 lookup table of between-class terms, computed on demand:
    ``terms(i, j)`` for the classes of bins i..j (0 where a class is empty, and at
    (0, 0), which scikit-image's table never fills)."""

    def __init__(self, prob: np.ndarray) -> None:
        self.nbins = prob.size
        self.zeroth = np.cumsum(prob, dtype=np.float32)
        # The first moment's first term is prob[0] (not 0 * prob[0]), as in scikit-image.
        weighted = np.arange(self.nbins).astype(np.float32) * prob
        weighted[0] = prob[0]
        self.first = np.cumsum(weighted, dtype=np.float32)

    def __call__(self, i: Any, j: Any) -> np.ndarray:
        i, j = np.broadcast_arrays(np.asarray(i, np.intp), np.asarray(j, np.intp))
        before = np.maximum(i - 1, 0)
        from_start = i == 0
        mass = np.where(from_start, self.zeroth[j], self.zeroth[j] - self.zeroth[before])
        moment = np.where(from_start, self.first[j], self.first[j] - self.first[before])
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            term = moment ** 2 / mass  # float32 throughout, as scikit-image's table
        keep = (mass > 0) & ~(from_start & (j == 0))
        return np.where(keep, term, np.float32(0)).astype(np.float32)


def _best_indices(terms: _ClassTerms, count: int) -> np.ndarray:
    """The first threshold indices (in the order of scikit-image's nested loops) whose
    summed class terms are largest, summed in scikit-image's order in float32 and
    compared strictly above 0."""
    nbins = terms.nbins
    best, best_sigma = np.empty(count, np.intp), np.float32(0)
    found = False
    for prefix in itertools.combinations(range(nbins - 1), count - 1):
        last = np.arange(prefix[-1] + 1 if prefix else 0, nbins - 1)
        if last.size == 0:
            continue
        first = prefix[0] if prefix else last
        sigma = terms(0, first) + terms(last + 1, nbins - 1)
        bounds: list[Any] = [*prefix, last]
        for low, high in itertools.pairwise(bounds):
            sigma = sigma + terms(np.asarray(low) + 1, high)
        sigma = np.broadcast_to(sigma, last.shape)
        at = int(np.argmax(sigma))
        if sigma[at] > best_sigma:
            best_sigma, found = sigma[at], True
            best = np.array([*prefix, last[at]], np.intp)
    if not found:
        raise InvalidArgumentError("threshold_multiotsu: no thresholds give a positive "
                                   "between-class variance")
    return best


def multiotsu(counts: np.ndarray, centers: np.ndarray, classes: int,
              normalize: bool = True) -> np.ndarray:
    """The ``classes - 1`` Multi-Otsu thresholds (Liao et al.), as scikit-image finds
    them (it normalizes the counts of an image, not those of a given ``hist=``)."""
    prob = (counts / np.sum(counts) if normalize else counts).astype("float32")
    values = np.count_nonzero(prob)
    if values < classes:
        raise InvalidArgumentError(
            f"After discretization into bins, the input image has only {values} different "
            f"values. It cannot be thresholded in {classes} classes. If there are more unique "
            "values before discretization, try increasing the number of bins (`nbins`).")
    if values == classes:
        return centers[np.flatnonzero(prob)[:-1]]
    if math.comb(prob.size - 1, classes - 1) > MAX_SEARCH or \
            math.comb(prob.size - 1, classes - 2) > MAX_SEARCH // 1000:
        raise InvalidArgumentError(
            f"threshold_multiotsu: {classes} classes over {prob.size} bins is a search of "
            f"more than {MAX_SEARCH} steps; use fewer classes or fewer bins (nbins=)")
    return centers[_best_indices(_ClassTerms(prob), classes - 1)]
