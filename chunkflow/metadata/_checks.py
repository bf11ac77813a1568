"""Validation helpers shared by the v2 and v3 document parsers.

Every check raises :class:`~chunkflow.errors.MetadataError` with the same message
shape: ``"<node> '<path>': <document> key '<key>' must be <expected>, got <value>"``.

Examples
--------
>>> where = Where("array", "a/b", ".zarray")
>>> where.error("chunks", "a list of positive ints", [0])
MetadataError("array 'a/b': .zarray key 'chunks' must be a list of positive ints, got [0]")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NoReturn

from chunkflow.errors import MetadataError, UnsupportedFormatError
from chunkflow.metadata.json import JSONValue, describe

__all__ = ["Where", "is_int"]

# numpy indexes with int64 and allows at most 64 dimensions.
MAX_EXTENT = 2**63 - 1
MAX_DIMS = 64


def is_int(value: object) -> bool:
    """True for JSON integers (``bool`` is not one)."""
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class Where:
    """The document being validated, for error messages."""

    kind: str  # "array" or "group"
    path: str | None  # None: checking a metadata object built in memory, not a stored node
    document: str  # ".zarray", "zarr.json", ...

    @property
    def node(self) -> str:
        if self.path is None:
            return f"{self.kind} metadata"
        return describe(self.kind, self.path)

    def error(
        self, key: str, expected: str, value: JSONValue, cls: type = MetadataError, part: str = ""
    ) -> Exception:
        """An error for a key (or a ``part`` inside its value) that is not what it must be."""
        inside = f" ({part})" if part else ""
        return cls(
            f"{self.node}: {self.document} key '{key}'{inside} must be {expected}, "
            f"got {_short(value)}"
        )

    def wrap(self, key: str, err: MetadataError) -> NoReturn:
        """Re-raise a lower-level error with the node, document and key in front."""
        raise type(err)(f"{self.node}: {self.document} key '{key}': {err}") from err

    def require(self, doc: dict[str, Any], key: str) -> Any:
        if key not in doc:
            raise MetadataError(f"{self.node}: {self.document} lacks the required key '{key}'")
        return doc[key]

    def zarr_format(self, doc: dict[str, Any], expected: int) -> None:
        value = self.require(doc, "zarr_format")
        if value != expected or not is_int(value):
            raise self.error("zarr_format", str(expected), value, UnsupportedFormatError)

    def shape(self, doc: dict[str, Any], key: str = "shape") -> tuple[int, ...]:
        value = self.require(doc, key)
        if not (isinstance(value, list) and all(is_int(n) and 0 <= n <= MAX_EXTENT for n in value)):
            raise self.error(key, f"a list of non-negative ints up to {MAX_EXTENT}", value)
        if len(value) > MAX_DIMS:
            raise self.error(key, f"a list of at most {MAX_DIMS} ints (numpy's limit)", value)
        return tuple(value)

    def chunks(self, value: JSONValue, key: str, shape: tuple[int, ...],
               part: str = "") -> tuple[int, ...]:
        """The chunk shape; a 0 along a zero-length dimension (zarr-python writes it
        for ``chunks=(0, ...)``) reads as 1, the chunk shape chunkflow writes there."""
        if not (isinstance(value, list) and all(is_int(n) and 0 <= n <= MAX_EXTENT for n in value)):
            raise self.error(key, "a list of positive ints", value, part=part)
        if len(value) != len(shape):
            expected = f"a list of {len(shape)} ints (one per dimension of shape)"
            raise self.error(key, expected, value, part=part)
        if any(n == 0 and size != 0 for n, size in zip(value, shape)):
            raise self.error(key, "a list of positive ints (0 only for a zero-length "
                             "dimension)", value, part=part)
        return tuple(max(n, 1) for n in value)

    def codec_list(self, value: JSONValue, key: str, id_key: str) -> tuple[dict[str, Any], ...]:
        if not isinstance(value, list):
            raise self.error(key, "a list of codec objects", value)
        for item in value:
            self.codec(item, key, id_key)
        return tuple(value)

    def codec(self, value: JSONValue, key: str, id_key: str) -> dict[str, Any]:
        if not (isinstance(value, dict) and isinstance(value.get(id_key), str)):
            raise self.error(key, f"a codec object with a string {id_key!r}", value)
        return value

    def attributes(self, doc: dict[str, Any], key: str = "attributes") -> dict[str, Any]:
        value = doc.get(key, {})
        if not isinstance(value, dict):
            raise self.error(key, "an object", value)
        return value


def _short(value: object, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
