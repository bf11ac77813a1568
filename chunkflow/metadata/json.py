"""Load and dump the JSON documents of a Zarr hierarchy.

Both helpers are pure (bytes in, bytes out). They turn every way a document can be
broken (not UTF-8, truncated, not JSON, not an object) into one
:class:`~chunkflow.errors.MetadataError` that names the node path and the document
key, so a user knows which file to look at.

Examples
--------
>>> load_json_document(b'{"zarr_format": 2}', "a/b", ".zgroup")
{'zarr_format': 2}
>>> load_json_document(b'{"zarr_format": ', "a/b", ".zgroup")  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
chunkflow.errors.MetadataError: node 'a/b': .zgroup is not valid JSON (truncated or malformed: Expecting value
at line 1 column 17)
>>> dump_json_document({"zarr_format": 2})
b'{\\n    "zarr_format": 2\\n}'
"""

from __future__ import annotations

import json
from typing import Any, TypeAlias

import numpy as np

from chunkflow.errors import MetadataError, NotSerializableError

__all__ = ["JSONValue", "describe", "dump_json_document", "load_json_document"]

#: A value of a JSON document as :func:`json.loads` returns it: what the metadata
#: parsers receive, and check, before anything is trusted.
JSONValue: TypeAlias = bool | int | float | str | list[Any] | dict[str, Any] | None


def describe(kind: str, path: str) -> str:
    """Name a node in error messages: ``"array 'a/b'"``, the root as ``'/'``.

    Examples
    --------
    >>> describe("array", "a/b"), describe("group", "")
    ("array 'a/b'", "group '/'")
    """
    return f"{kind} '{path or '/'}'"


def load_json_document(
    data: bytes | bytearray | memoryview, path: str, key: str, kind: str = "node"
) -> dict[str, Any]:
    """Parse a metadata document that must be a JSON object.

    Parameters
    ----------
    data : bytes-like
        The stored document.
    path : str
        Path of the node the document describes (for error messages).
    key : str
        Name of the document, e.g. ``".zarray"`` or ``"zarr.json"``.
    kind : str
        ``"array"``, ``"group"`` or ``"node"`` (for error messages).

    Returns
    -------
    dict
        The decoded object.

    Raises
    ------
    MetadataError
        If the bytes are not UTF-8, not (complete) JSON, or not a JSON object.
    """
    where = describe(kind, path)
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as err:
        raise MetadataError(f"{where}: {key} is not UTF-8 text ({err})") from err
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        problem = f"{err.msg} at line {err.lineno} column {err.colno}"
        raise MetadataError(
            f"{where}: {key} is not valid JSON (truncated or malformed: {problem})"
        ) from err
    except RecursionError:
        raise MetadataError(
            f"{where}: {key} nests JSON arrays or objects too deeply to read (thousands of "
            "levels); expected a metadata document"
        ) from None
    except ValueError as err:  # integers beyond Python's digit limit for str -> int
        raise MetadataError(f"{where}: {key} holds a number too long to read ({err})") from None
    if not isinstance(doc, dict):
        raise MetadataError(
            f"{where}: {key} must hold a JSON object, got {type(doc).__name__} {_short(doc)}"
        )
    return doc


def dump_json_document(doc: dict[str, Any], *, sort_keys: bool = False) -> bytes:
    """Serialize a metadata document: UTF-8, ``indent=4``, keys in insertion order
    (or sorted, at every depth, with ``sort_keys``).

    NaN and infinities are refused (``allow_nan=False``): metadata must encode them
    as strings (``"NaN"``), which every Zarr reader understands. Numpy scalars and
    arrays found inside (e.g. in codec configs) are converted to plain JSON.

    Raises
    ------
    MetadataError
        If the document holds a value JSON cannot represent.

    Examples
    --------
    >>> dump_json_document({"a": np.int64(3), "b": [np.float32(0.5)]})
    b'{\\n    "a": 3,\\n    "b": [\\n        0.5\\n    ]\\n}'
    >>> dump_json_document({"x": float("nan")})  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    chunkflow.errors.MetadataError: cannot serialize metadata document: Out of range float values are not JSON
    compliant: nan
    """
    try:
        text = json.dumps(
            doc, indent=4, sort_keys=sort_keys, allow_nan=False, ensure_ascii=False,
            default=_to_json,
        )
    except (TypeError, ValueError) as err:
        raise MetadataError(f"cannot serialize metadata document: {err}") from err
    return text.encode("utf-8")


def _to_json(obj: object) -> Any:
    # numcodecs configs sometimes carry numpy scalars; JSON wants Python numbers.
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (tuple, set, frozenset)):
        return list(obj)
    raise NotSerializableError(f"Object of type {type(obj).__name__} is not JSON serializable")


def _short(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
