"""The exact one-axis passes of the Euclidean feature transform, as scipy computes them.

``scipy.ndimage.distance_transform_edt`` finds each element's nearest background
element with the separable algorithm of Maurer, Qi and Raghavan (2003), in
``_VoronoiFT`` of ``scipy/ndimage/src/ni_morphology.c``: one pass along axis 0, then
one along axis 1, and so on, each pass working on whole lines of one axis alone. A
line's pass depends on nothing but the line (the features the earlier passes left on
it and its position), so a pass computed on blocks that hold its axis whole is the
pass scipy computes on the whole array.

Here a pass works on many lines at once (an ``(L, B)`` array: ``L`` positions along
the axis, ``B`` lines), replaying scipy's steps line by line with numpy, in float64 and
in scipy's order of operations, so that every comparison falls as scipy's does: the
lower envelope of the parabolas (a stack, popped while the C test
``c * vR - b * uR - a * wR - a * b * c <= 0.0`` fails), then the walk along it that
picks each element's feature (advancing while ``delta1 <= delta2`` fails). Ties go
where scipy sends them, so the features (the indices) equal scipy's everywhere.

A feature is ``None`` (scipy's ``-1``) for an element whose line had none; a pass's
``heights`` are, per element, the squared distance in the earlier axes to its feature
(the sum scipy's ``wR`` makes, axis by axis), and ``tail`` the sum of the terms of
later axes (``0.0``, or NaN where a later sampling is infinite or NaN: scipy adds
``(0 * s) ** 2`` for them).

Examples
--------
>>> import numpy as np
>>> background = np.array([[0, 1, 0, 0, 0, 1, 0]], bool).T  # one line of 7
>>> nearest_background(background, 1.0).ravel().tolist()
[1, 1, 1, 1, 5, 5, 5]
>>> has = background
>>> voronoi_pass(has, np.zeros(has.shape), 1.0, 0.0).ravel().tolist()
[1, 1, 1, 1, 5, 5, 5]
"""

from __future__ import annotations

import numpy as np

__all__ = ["nearest_background", "squares_increase", "voronoi_pass"]


def squares_increase(spacing: float, length: int) -> bool:
    """Whether ``spacing`` is positive and ``(k * spacing) ** 2`` (as scipy computes it,
    in float64) grows strictly for ``k = 0 .. length``: then comparing squared distances
    along one axis is comparing whole offsets, and the first pass needs no envelope
    (with a negative spacing scipy's envelope test pops background elements).

    Examples
    --------
    >>> squares_increase(0.5, 10), squares_increase(1e-200, 3), squares_increase(-2.0, 3)
    (True, False, False)
    """
    if not spacing > 0:
        return False
    steps = np.arange(length + 1, dtype=np.float64) * np.float64(spacing)
    squares = steps * steps
    return bool(np.isfinite(squares).all() and (np.diff(squares) > 0).all())


def nearest_background(background: np.ndarray, spacing: float) -> np.ndarray:
    """The first pass along axis 0 of ``background`` (``(L, B)``, ``True`` where the
    input is zero): per element, the position along its line of the nearest
    background element, the earlier one on a tie (scipy's walk stops on
    ``delta1 <= delta2``), ``-1`` on lines without background.

    Valid where :func:`squares_increase` holds for ``spacing`` and the later axes'
    terms are zero; :func:`voronoi_pass` covers every other case.
    """
    length = background.shape[0]
    position = np.arange(length, dtype=np.int32).reshape((length,) + (1,) * (background.ndim - 1))
    before = np.where(background, position, np.int32(-1))
    np.maximum.accumulate(before, axis=0, out=before)
    after = np.where(background, position, np.int32(length))
    flipped = after[::-1]
    np.minimum.accumulate(flipped, axis=0, out=flipped)
    take_before = (before >= 0) & ((after == length) | (position - before <= after - position))
    return np.where(take_before, before, np.where(after < length, after, np.int32(-1)))


def _envelope(has: np.ndarray, heights: np.ndarray, spacing: np.float64,
              tail: np.float64) -> tuple[np.ndarray, np.ndarray]:
    """The stack of each line's lower envelope (positions, ``(L, B)``) and its top
    index per line (``-1``: no feature on the line), built as scipy builds it.

    Arrays are indexed flat (``row * B + line``): one gather instead of numpy's slower
    two-index fancy indexing."""
    length, lines_count = has.shape
    width = np.int64(lines_count)  # int64 products: positions are int32, flat indices not
    stack = np.zeros(length * lines_count, np.int32)
    top = np.full(lines_count, -1, np.int64)
    weights = (heights + tail).ravel()  # scipy's wR, uR and vR: every other axis's terms
    every = np.arange(lines_count)
    full = np.all(has, axis=1).tolist()
    for ii in range(length):
        lines = every if full[ii] else np.flatnonzero(has[ii])
        if not lines.size:
            continue
        candidates, wr = lines, weights[ii * width + lines]
        while candidates.size:
            tops = top[candidates]
            deep = tops >= 1
            if not deep.all():
                candidates, tops, wr = candidates[deep], tops[deep], wr[deep]
                if not candidates.size:
                    break
            at = tops * width + candidates
            idx1 = stack[at]
            idx2 = stack[at - width]
            a = (idx1 - idx2).astype(np.float64) * spacing
            b = (ii - idx1).astype(np.float64) * spacing
            c = a + b
            vr = weights[idx1 * width + candidates]
            ur = weights[idx2 * width + candidates]
            pop = ~(c * vr - b * ur - a * wr - a * b * c <= 0.0)
            candidates, wr = candidates[pop], wr[pop]
            top[candidates] -= 1
        top[lines] += 1
        stack[top[lines] * width + lines] = ii
    return stack.reshape(length, lines_count), top


def voronoi_pass(has: np.ndarray, heights: np.ndarray, spacing: float,
                 tail: float) -> np.ndarray:
    """One pass along axis 0 of ``(L, B)`` lines: per element, the position along its
    line of the element whose feature it takes (``-1`` on lines without features).

    ``has`` marks the elements that carry a feature, ``heights`` their squared
    distance (in the axes before this one) to it, ``spacing`` this axis's sampling and
    ``tail`` the later axes' terms (see the module notes).
    """
    with np.errstate(all="ignore"):  # scipy's C loops raise no floating-point warnings
        return _walk(has, heights, np.float64(spacing), np.float64(tail))


def _walk(has: np.ndarray, heights: np.ndarray, spacing_: np.float64,
          tail_: np.float64) -> np.ndarray:
    """Each element's place on its line's envelope (see :func:`voronoi_pass`): scipy's
    walk, whose pointer only moves forward, so a line whose pointer reached the top of
    its stack leaves the loop for good."""
    stack2, top = _envelope(has, heights, spacing_, tail_)
    length, lines_count = has.shape
    width = np.int64(lines_count)  # int64 products: positions are int32, flat indices not
    owner = np.full((length, lines_count), -1, np.int32)
    lines = np.flatnonzero(top >= 0)
    if not lines.size:
        return owner
    stack, level = stack2.ravel(), heights.ravel()
    at = lines.copy()  # flat index of each line's pointer: pointer * width + line
    live = np.flatnonzero(top[lines] > 0)  # lines whose pointer may still move
    end = top[lines] * width + lines
    for ii in range(length):
        walking = live
        if walking.size:
            here = at[walking]
            current = stack[here]
            t = (current - ii).astype(np.float64) * spacing_
            delta1 = (level[current * width + lines[walking]] + t * t) + tail_
        while walking.size:
            after = stack[here + width]
            t = (after - ii).astype(np.float64) * spacing_
            delta2 = (level[after * width + lines[walking]] + t * t) + tail_
            advance = ~(delta1 <= delta2)
            walking, delta1, here = walking[advance], delta2[advance], here[advance] + width
            at[walking] = here
            more = here < end[walking]
            if not more.all():
                live = live[at[live] < end[live]]
                walking, delta1, here = walking[more], delta1[more], here[more]
        owner[ii, lines] = stack[at]
    return owner
