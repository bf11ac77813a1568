"""The exact oracle of float sums, means and variances, and the rounding it allows.

numpy's float reductions round at every step, in an order of its own (pairwise sums),
so no chunked reduction can equal them bit for bit. What both must satisfy is checked
here against the exact value (rational arithmetic, :class:`fractions.Fraction`):

- NaN, ±inf and the sign of an infinite result follow from the data alone (a NaN in,
  inf and -inf in, a variance of anything not finite...);
- a finite result lies within the classical bound of a sum of ``n`` values computed in
  precision ``u`` (``(n + 1) u sum(|x|)``, with a factor of safety), plus the final
  rounding into the result's dtype;
- an overflow to inf is allowed only where the sum of the magnitudes reaches the
  largest finite value of the arithmetic (the order of the sums then decides).

A wrong answer (a count off by one in a merge, a part left out, a NaN where no value
was missing) is far outside the bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

# The factor of safety over the classical error bounds.
SAFETY = 4


@dataclass(frozen=True)
class Arithmetic:
    """Where a reduction computes: unit roundoff and largest finite value."""

    unit: Fraction
    largest: Fraction
    tiny: Fraction  # the smallest subnormal: what a product or quotient may lose

    @classmethod
    def of(cls, dtype: Any) -> Arithmetic:
        info = np.finfo(np.dtype(dtype))
        return cls(Fraction(float(info.eps)) / 2, Fraction(float(info.max)),
                   Fraction(float(info.smallest_subnormal)))


@dataclass(frozen=True)
class Part:
    """One real part (the real or the imaginary) of the values at one output position."""

    n: int
    nan: bool
    positive_inf: bool
    negative_inf: bool
    total: Fraction  # of the finite values
    magnitudes: Fraction  # sum of |x| over the finite values
    squares: Fraction  # sum of x^2 over the finite values
    largest: Fraction  # max |x| over the finite values

    @classmethod
    def of(cls, values: np.ndarray) -> Part:
        if values.dtype.kind == "f":
            finite = values[np.isfinite(values)]
            exact = [Fraction(float(v)) for v in finite.astype(np.float64)]
            flags = (bool(np.isnan(values).any()), bool((values == np.inf).any()),
                     bool((values == -np.inf).any()))
        else:  # integers and booleans, as Python's exact integers
            exact = [Fraction(int(v)) for v in values.tolist()]
            flags = (False, False, False)
        return cls(len(values), *flags, sum(exact, Fraction(0)),
                   sum((abs(v) for v in exact), Fraction(0)),
                   sum((v * v for v in exact), Fraction(0)),
                   max((abs(v) for v in exact), default=Fraction(0)))

    @property
    def finite(self) -> bool:
        return not (self.nan or self.positive_inf or self.negative_inf)


def parts(values: np.ndarray) -> list[Part]:
    """The parts of ``values`` (a flat native array): one, or two for complex."""
    if values.dtype.kind == "c":
        return [Part.of(values.real), Part.of(values.imag)]
    return [Part.of(values.astype(np.int64) if values.dtype.kind == "b" else values)]


def _magnitude(value: Fraction) -> str:
    if abs(value) >= Fraction(10) ** 300:
        return "huge"
    return f"{float(value):.3g}" if value == 0 or abs(value) > Fraction(10) ** -300 else \
        f"{float(value * 2**1100):.3g}*2**-1100"


def assert_close(got: Any, exact: Fraction, tolerance: Fraction, dtype: np.dtype[Any],
                 what: str) -> None:
    """``got`` (a finite or infinite value of ``dtype``) is ``exact`` to within
    ``tolerance`` plus one rounding into ``dtype``."""
    result = Arithmetic.of(dtype)
    tiny = Fraction(float(np.finfo(dtype).smallest_subnormal))
    allowed = tolerance * (1 + result.unit) + result.unit * abs(exact) + tiny
    if math.isnan(got):
        raise AssertionError(f"{what}: NaN, expected {_magnitude(exact)} +- {_magnitude(allowed)}")
    if math.isinf(got):
        # Overflow is right only where the value (give or take the bound) rounds to inf.
        reach = exact + allowed if got > 0 else -(exact - allowed)
        assert reach >= result.largest, (
            f"{what}: {got}, expected {_magnitude(exact)} +- {_magnitude(allowed)}")
        return
    error = abs(Fraction(float(got)) - exact)
    assert error <= allowed, (f"{what}: {got!r} is {_magnitude(error)} from the exact "
                              f"{_magnitude(exact)}, more than {_magnitude(allowed)}")


def _special_sum(part: Part) -> float | None:
    """The NaN or infinity a sum of ``part`` must be (None: finite, or an overflow the
    order decides)."""
    if part.nan or (part.positive_inf and part.negative_inf):
        return math.nan
    if part.positive_inf or part.negative_inf:
        return math.inf if part.positive_inf else -math.inf
    return None


def _overflows(magnitude: Fraction, n: int, arithmetic: Arithmetic) -> bool:
    return magnitude * (1 + SAFETY * (n + 1) * arithmetic.unit) >= arithmetic.largest


def check_sum(got: float, part: Part, arithmetic: Arithmetic, dtype: np.dtype[Any],
              what: str, divisor: int = 1) -> None:
    """A sum (``divisor`` 1) or mean (``divisor`` n) of one real part."""
    overflow = _overflows(part.magnitudes, part.n, arithmetic)
    special = _special_sum(part)
    if special is not None and math.isnan(special):
        assert math.isnan(got), f"{what}: {got}, expected NaN (NaN, or inf and -inf, in the data)"
        return
    if special is not None:
        # The finite values can overflow on the way only toward the other infinity.
        ok = got == special or (overflow and math.isnan(got))
        assert ok, f"{what}: {got}, expected {special}"
        return
    if overflow and not math.isfinite(got):
        return  # the sum of the magnitudes overflows: the order decides
    tolerance = SAFETY * (part.n + 1) * arithmetic.unit * part.magnitudes
    if divisor > 1:  # and the division's rounding (subnormal quotients included)
        tolerance = tolerance / divisor + arithmetic.unit * abs(part.total) / divisor + \
            arithmetic.tiny
    assert_close(got, part.total / divisor, tolerance, dtype, what)


def check_mean(got: Any, values: np.ndarray, arithmetic: Arithmetic, dtype: np.dtype[Any],
               what: str) -> None:
    """numpy's mean of ``values`` (flat): NaN when there are none."""
    n = len(values)
    if n == 0:
        assert np.isnan(got).all(), f"{what}: {got}, expected NaN (no values)"
        return
    found = parts(values)
    if len(found) == 1:
        check_sum(float(got), found[0], arithmetic, dtype, what, divisor=n)
        return
    # A complex sum divided by n + 0j: a part not finite spreads NaN to the other
    # part (numpy's complex division), as in numpy's own mean.
    specials = [_special_sum(p) for p in found]
    if any(_overflows(p.magnitudes, n, arithmetic) for p in found):
        # A part may overflow on the way (the order decides), and spread NaN.
        for name, value, special, p in zip(("real", "imag"), (got.real, got.imag), specials,
                                           found):
            if math.isfinite(value) or (special is not None and math.isnan(special)):
                check_sum(float(value), p, arithmetic, dtype, f"{what} ({name})", divisor=n)
        return
    if any(s is not None for s in specials):
        with np.errstate(invalid="ignore"):
            stand_in = complex(*[1.0 if s is None else s for s in specials]) / np.complex128(n)
        for name, value, expected, p in zip(("real", "imag"), (got.real, got.imag),
                                            (stand_in.real, stand_in.imag), found):
            if not math.isfinite(expected):
                assert value == expected or (math.isnan(expected) and math.isnan(value)), (
                    f"{what} ({name}): {value}, expected {expected}")
            else:
                check_sum(float(value), p, arithmetic, dtype, f"{what} ({name})", divisor=n)
        return
    for name, value, p in zip(("real", "imag"), (got.real, got.imag), found):
        check_sum(float(value), p, arithmetic, dtype, f"{what} ({name})", divisor=n)


def check_variance(got: Any, values: np.ndarray, ddof: int, arithmetic: Arithmetic,
                   dtype: np.dtype[Any], what: str, root: bool) -> None:
    """numpy's var (or std, ``root``) of ``values`` (flat) with ``ddof``."""
    n = len(values)
    found = parts(values) if n else []
    got = float(got)
    if not all(p.finite for p in found):
        assert math.isnan(got), f"{what}: {got}, expected NaN (a value not finite)"
        return
    deviations = sum((p.squares - p.total * p.total / n for p in found), Fraction(0))
    squares = sum((p.squares for p in found), Fraction(0))
    # Squares of subnormal deviations underflow: each may lose up to the smallest one.
    tolerance = SAFETY * (n + 2) * (arithmetic.unit * squares + arithmetic.tiny)
    largest = max((p.largest for p in found), default=Fraction(0))
    overflow = _overflows(4 * n * largest * largest, n, arithmetic)
    if overflow and not math.isfinite(got):
        return
    divisor = max(n - ddof, 0)
    if divisor == 0:
        # numpy's M2 / 0: NaN for no spread (or one lost to rounding), inf for some.
        if math.isnan(got):
            assert deviations <= tolerance, f"{what}: NaN, expected inf (ddof={ddof}, n={n})"
        else:
            assert got == math.inf and deviations + tolerance > 0, (
                f"{what}: {got}, expected NaN or inf (ddof={ddof}, n={n})")
        return
    variance = deviations / divisor
    tolerance = tolerance / divisor + 2 * arithmetic.unit * variance
    if not root:
        assert_close(got, variance, tolerance, dtype, what)
        return
    _check_root(got, variance, tolerance, arithmetic, dtype, what)


def _check_root(got: float, variance: Fraction, tolerance: Fraction, arithmetic: Arithmetic,
                dtype: np.dtype[Any], what: str) -> None:
    """``got`` is the square root of ``variance`` (+- ``tolerance``), rounded twice."""
    result = Arithmetic.of(dtype)
    tiny = Fraction(float(np.finfo(dtype).smallest_subnormal))
    assert not math.isnan(got) and got >= 0, f"{what}: {got}, expected a square root"
    if math.isinf(got):
        assert variance + tolerance >= result.largest * result.largest, f"{what}: inf"
        return
    root = Fraction(got)
    slack = 3 * (arithmetic.unit + result.unit) * (variance + root * root)
    allowed = tolerance + slack + 2 * (root + tiny) * tiny + tiny * tiny
    error = abs(root * root - variance)
    assert error <= allowed, (f"{what}: {got!r} squared is {_magnitude(error)} from the exact "
                              f"variance {_magnitude(variance)}, more than {_magnitude(allowed)}")
