"""Fields of structured dtypes in selections: ``z["foo"]``, ``z["foo", 1:3]``, ``fields=``.

zarr-python 2's rules: string entries of a selection name fields, wherever they stand
in it, and the rest is the selection; one field gives that field's values, several a
structured array of those fields (packed, in the order named). numpy's spelling of
several fields, a list of names (``z[["foo", "bar"]]``), is accepted too. Writes take
one field at most (numpy refuses assignment to several).

Examples
--------
>>> import numpy as np
>>> pop_fields(("foo", slice(1, 3)))
('foo', slice(1, 3, None))
>>> pop_fields((0, "foo", "bar")), pop_fields([0, 1])
((['foo', 'bar'], 0), (None, [0, 1]))
>>> dtype = np.dtype([("foo", "S3"), ("bar", "<i4"), ("baz", "<f8")])
>>> fields_dtype(dtype, ["baz", "foo"])
dtype([('baz', '<f8'), ('foo', 'S3')])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
from numpy.lib import recfunctions

from chunkflow.errors import InvalidSelectionError

if TYPE_CHECKING:
    from chunkflow.indexing.predicates import Selection

__all__ = ["Fields", "fields_dtype", "pop_fields", "select_fields", "writable_field"]

#: Fields asked for: one name, several (a list or tuple of names), or ``None`` (all).
Fields: TypeAlias = str | list[str] | tuple[str, ...] | None


def _is_names(entry: object) -> bool:
    return isinstance(entry, list) and bool(entry) and all(isinstance(e, str) for e in entry)


def pop_fields(selection: Selection) -> tuple[Fields, Selection]:
    """Split the field names out of ``selection``: ``(fields, rest)``.

    One name is returned as a string, several as a list; the rest is unwrapped when one
    entry is left, as zarr-python 2 does (``z["foo", [0, 2]]`` selects ``[0, 2]``).
    """
    if isinstance(selection, str):
        return selection, ()
    if _is_names(selection):
        return list(selection), ()  # type: ignore[arg-type]  # _is_names: a sequence of str
    if not isinstance(selection, tuple):
        return None, selection
    names = [entry for entry in selection if isinstance(entry, str)]
    if not names:
        return None, selection
    rest = tuple(entry for entry in selection if not isinstance(entry, str))
    return (names[0] if len(names) == 1 else names), (rest[0] if len(rest) == 1 else rest)


def _check_fields(dtype: np.dtype, fields: Fields, prefix: str) -> list[str] | str | None:
    """``fields`` checked against ``dtype``: a name, a list of names or None (all)."""
    if fields is None:
        return None
    if not isinstance(fields, (str, list, tuple)) or not all(
            isinstance(name, str) for name in ([fields] if isinstance(fields, str) else fields)):
        raise InvalidSelectionError(
            f"{prefix}fields must be a field name or a list of names, got {fields!r}")
    if not isinstance(fields, str) and not fields:
        return None  # fields=[]: every field, as zarr-python 2
    names = dtype.names or ()
    wanted = [fields] if isinstance(fields, str) else list(fields)
    if not names:
        raise InvalidSelectionError(
            f"{prefix}fields {fields!r} asked of an array of dtype {dtype}, which has none")
    missing = [name for name in wanted if name not in names]
    if missing:
        raise InvalidSelectionError(
            f"{prefix}no field {missing[0]!r} in dtype {dtype} (fields: {', '.join(names)})")
    return fields if isinstance(fields, str) else wanted


def fields_dtype(dtype: np.dtype, fields: Fields, prefix: str = "") -> np.dtype:
    """The dtype of ``fields`` of ``dtype``: one field's own dtype, or several packed.

    Raises :class:`~chunkflow.errors.InvalidSelectionError` for names not in ``dtype``.
    """
    checked = _check_fields(dtype, fields, prefix)
    if checked is None:
        return dtype
    if isinstance(checked, str):
        return dtype[checked]
    return np.dtype([(name, dtype[name]) for name in checked])


def select_fields(values: np.ndarray, fields: Fields, prefix: str = "") -> np.ndarray:
    """``fields`` of the structured array ``values``, as a new compact array.

    One field's values take its subarray dimensions, if any, as trailing dimensions (as
    numpy's ``values[name]``); several fields form a packed structured array.

    Examples
    --------
    >>> v = np.array([(1, 2.0)], dtype=[("a", "i2"), ("b", "f4")])
    >>> select_fields(v, "b"), select_fields(v, ["b"]).dtype
    (array([2.], dtype=float32), dtype([('b', '<f4')]))
    """
    checked = _check_fields(values.dtype, fields, prefix)
    if checked is None:
        return values
    if isinstance(checked, str):
        return values[checked].copy()
    return recfunctions.repack_fields(values[checked])


def writable_field(dtype: np.dtype, fields: Fields, prefix: str = "") -> str | None:
    """The one field a write may target (``None``: the whole items).

    Raises
    ------
    InvalidSelectionError
        For several fields (numpy does not assign to several at once) or unknown names.

    Examples
    --------
    >>> dtype = np.dtype([("a", "i2"), ("b", "f4")])
    >>> writable_field(dtype, ["a"]), writable_field(dtype, []), writable_field(dtype, None)
    ('a', None, None)
    """
    checked: Any = _check_fields(dtype, fields, prefix)
    if isinstance(checked, list):
        if len(checked) > 1:
            raise InvalidSelectionError(
                f"{prefix}a write takes one field, got {checked!r}; write them one by one")
        return checked[0]
    return checked
