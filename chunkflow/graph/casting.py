"""The casting rule of a job's output: no value changes unless asked.

A writer (:func:`chunkflow.map_chunks`, :func:`chunkflow.store`,
:func:`chunkflow.to_chunkflow`, the command line) casts each block it computes to the
output's dtype. By default (``casting="same_value"``, the name numpy 2.4 gives the same
idea) a cast goes through when every value of the block survives it, and is refused
with :class:`~chunkflow.errors.CastingError` (naming the output, the block, the first
value that changes and where it lies) when one does not:

- an integer out of the output integer's range (uint16 ``300`` into uint8);
- a float with a fractional part, NaN or an infinity into an integer;
- a value other than 0 and 1 into bool;
- a finite value that becomes infinite in a narrower float (``1e300`` into float32);
- a complex value with an imaginary part into a real dtype.

Rounding is not a value change here: a float64 into float32, or a large integer into a
float, keeps the nearest value the output holds, as numpy's ``same_kind`` does (numpy's
own ``same_value`` refuses rounding too, and does not check bool outputs). A dtype
that is not a number (strings, dates) casts under ``same_value`` only where numpy calls
the cast ``safe``.

numpy's dtype rules keep their meanings: ``casting="same_kind"`` (or ``"safe"``,
``"equiv"``, ``"no"``) allows what ``np.can_cast`` allows, without looking at values;
``"unsafe"`` casts anything as ``astype`` does. The check runs in each task on the one
block it writes; :data:`~chunkflow.graph.casting.CASTINGS` lists the rules.

Examples
--------
>>> import numpy as np
>>> cast_block(np.array([1.0, 255.0]), np.dtype("u1"), "same_value", "block (0,)")
array([  1, 255], dtype=uint8)
>>> cast_block(np.array([1.0, 300.0]), np.dtype("u1"), "same_value", "block (0,)", (4,))
... # doctest: +ELLIPSIS
Traceback (most recent call last):
...
chunkflow.errors.CastingError: block (0,): the value 300.0 at (5,) changes ... (out of its range 0..255); ...
>>> check_cast(np.dtype("f8"), np.dtype("u1"), "same_kind", "block (0,)")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
chunkflow.errors.CastingError: block (0,): cannot cast the result's dtype float64 to the output's ...
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chunkflow.errors import CastingError, UsageError

__all__ = ["CASTINGS", "DEFAULT_CASTING", "NUMPY_SAME_VALUE", "UNSAFE_HINT", "cast_block",
           "changed_values", "check_cast", "check_casting"]

#: The casting rules, strictest first: numpy's, with ``"same_value"`` (the default).
CASTINGS = ("no", "equiv", "safe", "same_kind", "same_value", "unsafe")

#: What every writer uses unless told: a cast that changes a value is refused.
DEFAULT_CASTING = "same_value"

_NUMBERS = "biufc"

#: The end of a refusal of values: how to cast anyway (the command line says it its way).
UNSAFE_HINT = ("Pass casting='unsafe' to cast anyway (numpy's astype), or write to a dtype "
               "that holds the values")


def _has_numpy_same_value() -> bool:
    try:
        np.zeros(1).astype("u1", casting="same_value")
    except (TypeError, ValueError):
        return False
    return True


#: Whether numpy checks values in its own casts (``astype(casting="same_value")``,
#: numpy >= 2.4): the cast into an integer is then checked in the same pass.
NUMPY_SAME_VALUE = _has_numpy_same_value()


def check_casting(casting: Any, what: str) -> str:
    """``casting`` if it is one of :data:`CASTINGS`.

    Raises
    ------
    UsageError
        Another value; the message lists the rules.

    Examples
    --------
    >>> check_casting("unsafe", "map_chunks")
    'unsafe'
    """
    if casting not in CASTINGS:
        raise UsageError(f"{what}: casting={casting!r}; expected one of "
                         f"{', '.join(map(repr, CASTINGS))}")
    return str(casting)


def _dtype_allows(result: np.dtype, out: np.dtype, casting: str) -> bool:
    if casting == "unsafe":
        return True
    if casting == "same_value":  # numbers by their values; other kinds only where safe
        return (result.kind in _NUMBERS and out.kind in _NUMBERS) or np.can_cast(result, out, "safe")
    return bool(np.can_cast(result, out, casting))  # type: ignore[arg-type]  # one of numpy's names (check_casting)


def check_cast(result: np.dtype, out: np.dtype, casting: str, where: str) -> None:
    """Refuse to cast ``result`` to ``out`` when the dtypes alone rule it out.

    ``same_value`` allows any cast between numbers here (the values decide, in
    :func:`cast_block`); numpy's rules are ``np.can_cast``'s. ``where`` names the
    block (or the source) for the message.

    Raises
    ------
    CastingError
        The rule refuses the pair of dtypes; nothing of the block is written.
    """
    if _dtype_allows(result, out, casting):
        return
    rule = ("(numbers cast when their values survive; other kinds only where numpy "
            "calls the cast safe)" if casting == "same_value" else "(numpy's output rule)")
    raise CastingError(
        f"{where}: cannot cast the result's dtype {result} to the output's dtype {out} "
        f"under casting={casting!r} {rule}; pass casting='unsafe' to cast anyway, or "
        "dtype= of the result's kind")


def cast_block(block: np.ndarray, out: np.dtype, casting: str, where: str,
               origin: tuple[int, ...] | None = None) -> np.ndarray:
    """``block`` cast to ``out`` as numpy's ``astype`` casts it, once ``casting``
    allows it (see the module's rules).

    ``origin`` is the block's first element in the array, so that a refusal names the
    offending value's position in the array (not in the block).

    Raises
    ------
    CastingError
        ``casting="same_value"`` and a value of ``block`` changes (the first one is
        named), or the rule refuses the dtypes (:func:`check_cast`).

    Examples
    --------
    >>> import numpy as np
    >>> cast_block(np.array([1.5, -2.5]), np.dtype("S4"), "unsafe", "block (0,)")
    array([b'1.5', b'-2.5'], dtype='|S4')
    >>> cast_block(np.array([0.1, 1e-30]), np.dtype("f4"), "same_value", "block (0,)")  # rounds
    array([1.e-01, 1.e-30], dtype=float32)
    """
    if block.dtype == out:
        return block
    check_cast(block.dtype, out, casting, where)
    if casting != "same_value" or block.dtype.kind not in _NUMBERS or out.kind not in _NUMBERS:
        return block.astype(out)
    result = _cast_same_value(block, out)
    if result is None:
        raise _refusal(block, out, where, origin)
    return result


def _cast_same_value(block: np.ndarray, out: np.dtype) -> np.ndarray | None:
    """``block.astype(out)``, or ``None`` when a value changes."""
    source = block.dtype
    if np.can_cast(source, out, "safe"):  # every value survives (ints into wide floats round)
        return block.astype(out)
    values = block
    if source.kind == "c" and out.kind != "c":
        if np.any(block.imag):  # NaN counts as a part that is not 0
            return None
        values = block.real
    if out.kind in "iu" and NUMPY_SAME_VALUE:
        checked = _numpy_same_value(values, out)
        if checked is not None:
            return checked
    if out.kind in "fc":  # only a finite value becoming infinite changes
        with np.errstate(over="ignore", invalid="ignore"):
            result = values.astype(out)
        if np.isinf(result).any() and (np.isinf(result) & np.isfinite(values)).any():
            return None
        return result
    if changed_values(values, out).any():  # integers and bool
        return None
    return values.astype(out)


def _numpy_same_value(values: np.ndarray, out: np.dtype) -> np.ndarray | None:
    """numpy's own checked cast into integers: range, fraction, NaN and inf in the
    cast's one pass; ``None`` when numpy refuses (this module's rules then decide and
    find the value to name)."""
    # numpy 2.4 checks nothing when either side is not in native byte order
    # ([0.5] into '>i2' gives 0): cast between native dtypes, swap bytes after.
    native = out.newbyteorder("=")
    if not values.dtype.isnative:
        values = values.astype(values.dtype.newbyteorder("="))
    if values.dtype == np.float16:  # numpy 2.4 refuses float16 -0.0 into integers
        values = values.astype(np.float32)  # exact: float32 holds every float16
    try:
        result = values.astype(native, casting="same_value")
    except ValueError:
        return None
    return result if native == out else result.astype(out)


def changed_values(values: np.ndarray, out: np.dtype) -> np.ndarray:
    """Where a value of ``values`` changes when cast to ``out`` (a boolean mask), by the
    rules of ``casting="same_value"``.

    Examples
    --------
    >>> import numpy as np
    >>> changed_values(np.array([1.0, 2.5, np.nan, 256.0, -0.0]), np.dtype("u1")).tolist()
    [False, True, True, True, False]
    >>> changed_values(np.array([1e300, 1e-300, np.inf]), np.dtype("f4")).tolist()
    [True, False, False]
    """
    source = values.dtype
    changed = np.zeros(values.shape, bool)
    if np.can_cast(source, out, "safe"):
        return changed
    with np.errstate(over="ignore", invalid="ignore"):
        if source.kind == "c" and out.kind != "c":
            changed |= values.imag != 0
            values = values.real
            source = values.dtype
        if out.kind == "b":
            changed |= (values != 0) & (values != 1)
        elif out.kind in "fc":
            changed |= np.isinf(values.astype(out)) & np.isfinite(values)
        elif source.kind in "fc":  # a float into an integer
            low, high = _float_bounds(out)
            # isfinite too: a bound the float type cannot hold becomes inf in the
            # comparison (-2**31 is -inf in float16), which -inf would then pass
            changed |= ~(np.isfinite(values) & (values >= low) & (values < high)) \
                | (np.trunc(values) != values)
        else:
            changed |= _out_of_range(values, out)
    return changed


def _float_bounds(out: np.dtype) -> tuple[float, float]:
    """``[low, high)`` of an integer dtype as floats: both are powers of two (or 0), so
    every float type holds them exactly, or as an infinity (then only finite values
    must be checked against it)."""
    info = np.iinfo(out)
    return float(info.min), float(info.max) + 1.0


def _out_of_range(values: np.ndarray, out: np.dtype) -> np.ndarray:
    """Integers (or bools) outside ``out``'s range, compared in ``values``' own dtype
    (a bound that dtype cannot hold cannot be crossed)."""
    outside = np.zeros(values.shape, bool)
    if values.dtype.kind == "b":
        return outside
    source, info = np.iinfo(values.dtype), np.iinfo(out)
    if source.min < info.min:
        outside |= values < np.array(info.min, values.dtype)
    if source.max > info.max:
        outside |= values > np.array(info.max, values.dtype)
    return outside


def _reason(value: Any, out: np.dtype) -> str:
    """Why one value changes when cast to ``out``."""
    if isinstance(value, complex) and out.kind != "c" and value.imag != 0:
        return "its imaginary part is lost"
    real = value.real if isinstance(value, complex) else value
    if out.kind == "b":
        return "a bool holds 0 and 1 only"
    if out.kind in "fc":
        return f"it overflows to inf (the largest {out} is {np.finfo(out).max})"
    if isinstance(real, float) and real != real:
        return "an integer cannot hold NaN"
    if isinstance(real, float) and real in (float("inf"), -float("inf")):
        return "an integer cannot hold an infinity"
    info = np.iinfo(out)
    if not info.min <= real <= info.max:
        return f"out of its range {info.min}..{info.max}"
    return "its fractional part is lost"


def _refusal(block: np.ndarray, out: np.dtype, where: str,
             origin: tuple[int, ...] | None) -> CastingError:
    """The error naming the first value of ``block`` that changes (found only now: the
    cast itself checks the values without locating them)."""
    changed = changed_values(block, out)
    count = int(changed.sum())
    first = np.unravel_index(int(np.argmax(changed)), block.shape) if block.ndim else ()
    value = block[first].item() if block.size else None
    position = tuple(int(i) + o for i, o in zip(first, origin or (0,) * block.ndim))
    return CastingError(
        f"{where}: the value {value!r} at {position} changes when cast to the output's dtype "
        f"{out} ({_reason(value, out)}); {count} of {block.size} values of this block change. "
        + UNSAFE_HINT)
