"""The casting rule of a job's output: numpy's, as a ufunc's ``out=`` applies it.

A writer (:func:`chunkflow.map_chunks`, :func:`chunkflow.store`,
:func:`chunkflow.to_chunkflow`) casts each block it computes to the output's dtype. A
cast that loses the kind of the values (float to integer, signed to unsigned, complex
to float) is refused unless asked for, as numpy refuses it in ``np.add(a, b, out=o)``:
``casting="same_kind"`` by default, ``"unsafe"`` (or numpy's other rules) when passed.
Assignment (``z[...] = v``) is not a job and keeps numpy's assignment semantics.

Examples
--------
>>> import numpy as np
>>> check_cast(np.dtype("i8"), np.dtype("i2"), "same_kind", "block (0,)")  # numpy allows it
>>> check_cast(np.dtype("f8"), np.dtype("u1"), "same_kind", "block (0,)")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
chunkflow.errors.CastingError: block (0,): cannot cast the result's dtype float64 to the output's ...
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chunkflow.errors import CastingError, UsageError

__all__ = ["CASTINGS", "cast_block", "check_cast", "check_casting"]

#: numpy's casting rules, strictest first.
CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def check_casting(casting: Any, what: str) -> str:
    """``casting`` if it is one of numpy's rules.

    Raises
    ------
    UsageError
        Another value; the message lists numpy's rules.

    Examples
    --------
    >>> check_casting("unsafe", "map_chunks")
    'unsafe'
    """
    if casting not in CASTINGS:
        raise UsageError(f"{what}: casting={casting!r}; expected one of numpy's rules "
                         f"{', '.join(map(repr, CASTINGS))}")
    return str(casting)


def check_cast(result: np.dtype, out: np.dtype, casting: str, where: str) -> None:
    """Refuse to cast ``result`` to ``out`` unless numpy's ``casting`` rule allows it.

    ``where`` names the block (or the source) for the message.

    Raises
    ------
    CastingError
        ``np.can_cast(result, out, casting)`` is false; nothing of the block is written.
    """
    if casting == "unsafe" or np.can_cast(result, out, casting):  # type: ignore[arg-type]  # casting is one of numpy's names (check_casting)
        return
    raise CastingError(
        f"{where}: cannot cast the result's dtype {result} to the output's dtype {out} "
        f"under casting={casting!r} (numpy's output rule); pass casting='unsafe' to cast "
        "anyway, or dtype= of the result's kind")


def cast_block(block: np.ndarray, out: np.dtype, casting: str, where: str) -> np.ndarray:
    """``block`` cast to ``out`` as numpy casts it (``astype``), once
    :func:`check_cast` allows it: the values written are numpy's, whatever the kinds
    (numbers to strings and back included, under ``casting="unsafe"``).

    Examples
    --------
    >>> import numpy as np
    >>> cast_block(np.array([1.5, -2.5]), np.dtype("S4"), "unsafe", "block (0,)")
    array([b'1.5', b'-2.5'], dtype='|S4')
    """
    if block.dtype == out:
        return block
    check_cast(block.dtype, out, casting, where)
    return block.astype(out)
