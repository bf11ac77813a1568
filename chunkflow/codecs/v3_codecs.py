"""Zarr v3 codec objects: small frozen dataclasses mirroring the stored documents.

Each class has ``name`` and ``kind`` (``"array_to_array"``, ``"array_to_bytes"`` or
``"bytes_to_bytes"``), ``to_json()`` giving the document zarr-python 3.1 writes, and
``from_json(doc)``. Bytes->bytes codecs also give ``numcodecs_config()``, the
numcodecs config that does the work. Codecs that are not in the v3 specification
but exist in numcodecs are named ``"numcodecs.<id>"`` as zarr-python 3.1 names them
(:class:`NumcodecsCodec`).

Examples
--------
>>> BloscCodec(typesize=2).to_json()["configuration"]["shuffle"]
'shuffle'
>>> ZstdCodec.from_json({"name": "zstd", "configuration": {"level": 3}})
ZstdCodec(level=3, checksum=False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from chunkflow.errors import UnsupportedCodecError

if TYPE_CHECKING:
    from chunkflow.metadata.json import JSONValue

__all__ = [
    "ARRAY_TO_ARRAY",
    "ARRAY_TO_BYTES",
    "BYTES_TO_BYTES",
    "BloscCodec",
    "BytesCodec",
    "CodecBase",
    "Crc32cCodec",
    "GzipCodec",
    "TransposeCodec",
    "VLenBytesCodec",
    "VLenUTF8Codec",
    "ZstdCodec",
]

ARRAY_TO_ARRAY = "array_to_array"
ARRAY_TO_BYTES = "array_to_bytes"
BYTES_TO_BYTES = "bytes_to_bytes"

BLOSC_CNAMES = ("lz4", "lz4hc", "blosclz", "zstd", "snappy", "zlib")
BLOSC_SHUFFLES = ("noshuffle", "shuffle", "bitshuffle")


class CodecBase:
    """The base of every v3 codec: its document (``to_json``/``from_json``), its numcodecs
    configuration and its stage; each codec class overrides these methods."""

    def to_json(self) -> dict[str, Any]:
        """The ``{"name": ..., "configuration": {...}}`` document zarr-python 3.1 writes."""
        raise NotImplementedError

    @classmethod
    def from_json(cls, doc: JSONValue) -> Any:
        """Parse a codec document (or bare name); unknown keys raise UnsupportedCodecError."""
        raise NotImplementedError

    def numcodecs_config(self) -> dict[str, Any]:
        """The numcodecs config (``{"id": ...}``) of the codec that does the work."""
        name = getattr(self, "name", type(self).__name__)
        raise UnsupportedCodecError(f"codec {name!r} has no numcodecs (Zarr v2) equivalent")


def _configuration(doc: JSONValue, name: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    """The configuration of a codec document, refusing unknown keys."""
    if isinstance(doc, str):
        doc = {"name": doc}
    if not isinstance(doc, dict) or doc.get("name") != name:
        raise UnsupportedCodecError(f"expected a {name!r} codec document, got {doc!r}")
    config = doc.get("configuration") or {}
    if not isinstance(config, dict):
        raise UnsupportedCodecError(f"codec {name!r}: configuration must be an object, got {config!r}")
    unknown = sorted(set(config) - set(allowed))
    if unknown:
        raise UnsupportedCodecError(
            f"codec {name!r}: unknown configuration keys {unknown}, expected some of {list(allowed)}"
        )
    return config


def _check_int(name: str, key: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UnsupportedCodecError(
            f"codec {name!r}: {key} must be an integer in [{low}, {high}], got {value!r}"
        )


@dataclass(frozen=True)
class BytesCodec(CodecBase):
    """``bytes``: array->bytes in the given endianness (None for 1-byte types).

    Examples
    --------
    >>> BytesCodec().to_json()
    {'name': 'bytes', 'configuration': {'endian': 'little'}}
    >>> BytesCodec.from_json({"name": "bytes"})
    BytesCodec(endian=None)
    """

    endian: str | None = "little"
    name: ClassVar[str] = "bytes"
    kind: ClassVar[str] = ARRAY_TO_BYTES

    def __post_init__(self) -> None:
        if self.endian not in (None, "little", "big"):
            raise UnsupportedCodecError(
                f"codec 'bytes': endian must be 'little' or 'big', got {self.endian!r}"
            )

    def to_json(self) -> dict[str, Any]:
        if self.endian is None:
            return {"name": "bytes"}
        return {"name": "bytes", "configuration": {"endian": self.endian}}

    @classmethod
    def from_json(cls, doc: JSONValue) -> BytesCodec:
        return cls(endian=_configuration(doc, "bytes", ("endian",)).get("endian"))


@dataclass(frozen=True)
class TransposeCodec(CodecBase):
    """``transpose``: array->array permutation (encoded = chunk.transpose(order)).

    ``order`` may also be ``"C"`` (identity) or ``"F"`` (reversed axes), spellings
    some writers use; :meth:`permutation` resolves them for a given rank.

    Examples
    --------
    >>> TransposeCodec((1, 0)).to_json()
    {'name': 'transpose', 'configuration': {'order': [1, 0]}}
    >>> TransposeCodec("F").permutation(3)
    (2, 1, 0)
    """

    order: tuple[int, ...] | str
    name: ClassVar[str] = "transpose"
    kind: ClassVar[str] = ARRAY_TO_ARRAY

    def __post_init__(self) -> None:
        order = self.order
        if isinstance(order, str):
            if order not in ("C", "F"):
                raise UnsupportedCodecError(f"codec 'transpose': bad order {order!r}")
            return
        try:
            order = tuple(int(i) for i in order)
        except (TypeError, ValueError) as err:
            raise UnsupportedCodecError(f"codec 'transpose': bad order {self.order!r}") from err
        if sorted(order) != list(range(len(order))):
            raise UnsupportedCodecError(
                f"codec 'transpose': order must be a permutation of 0..{len(order) - 1}, "
                f"got {list(order)}"
            )
        object.__setattr__(self, "order", order)

    def permutation(self, ndim: int) -> tuple[int, ...]:
        """The explicit axis permutation for an array of rank `ndim`."""
        if self.order == "C":
            return tuple(range(ndim))
        if self.order == "F":
            return tuple(range(ndim - 1, -1, -1))
        if len(self.order) != ndim:
            raise UnsupportedCodecError(
                f"codec 'transpose': order {list(self.order)} does not match {ndim} dimensions"
            )
        return tuple(self.order)  # type: ignore[arg-type]  # not 'C' or 'F': a tuple of axes

    def to_json(self) -> dict[str, Any]:
        order = self.order if isinstance(self.order, str) else list(self.order)
        return {"name": "transpose", "configuration": {"order": order}}

    @classmethod
    def from_json(cls, doc: JSONValue) -> TransposeCodec:
        config = _configuration(doc, "transpose", ("order",))
        if "order" not in config:
            raise UnsupportedCodecError("codec 'transpose': configuration needs 'order'")
        return cls(config["order"])


@dataclass(frozen=True)
class BloscCodec(CodecBase):
    """``blosc``: bytes->bytes; string shuffle and an explicit typesize.

    ``shuffle`` also accepts the numcodecs integers 0/1/2; ``typesize=None`` is
    filled with the item size by :func:`chunkflow.codecs.normalize_v3_codecs`.

    Examples
    --------
    >>> BloscCodec(shuffle=2, typesize=4).numcodecs_config()["shuffle"]
    2
    """

    cname: str = "lz4"
    clevel: int = 5
    shuffle: str = "shuffle"
    typesize: int | None = None
    blocksize: int = 0
    name: ClassVar[str] = "blosc"
    kind: ClassVar[str] = BYTES_TO_BYTES

    def __post_init__(self) -> None:
        if isinstance(self.shuffle, int) and not isinstance(self.shuffle, bool):
            if self.shuffle not in (0, 1, 2):
                raise UnsupportedCodecError(f"codec 'blosc': shuffle must be 0, 1 or 2, got {self.shuffle}")
            object.__setattr__(self, "shuffle", BLOSC_SHUFFLES[self.shuffle])
        if self.shuffle not in BLOSC_SHUFFLES:
            raise UnsupportedCodecError(
                f"codec 'blosc': shuffle must be one of {list(BLOSC_SHUFFLES)}, got {self.shuffle!r}"
            )
        if self.cname not in BLOSC_CNAMES:
            raise UnsupportedCodecError(
                f"codec 'blosc': cname must be one of {list(BLOSC_CNAMES)}, got {self.cname!r}"
            )
        _check_int("blosc", "clevel", self.clevel, 0, 9)
        _check_int("blosc", "blocksize", self.blocksize, 0, 2**31 - 1)
        if self.typesize is not None:
            _check_int("blosc", "typesize", self.typesize, 1, 255)

    def to_json(self) -> dict[str, Any]:
        config: dict[str, Any] = {} if self.typesize is None else {"typesize": self.typesize}
        config.update(cname=self.cname, clevel=self.clevel, shuffle=self.shuffle, blocksize=self.blocksize)
        return {"name": "blosc", "configuration": config}

    def numcodecs_config(self) -> dict[str, Any]:
        config = {
            "id": "blosc",
            "cname": self.cname,
            "clevel": self.clevel,
            "shuffle": BLOSC_SHUFFLES.index(self.shuffle),
            "blocksize": self.blocksize,
        }
        if self.typesize is not None:
            config["typesize"] = self.typesize
        return config

    @classmethod
    def from_json(cls, doc: JSONValue) -> BloscCodec:
        config = _configuration(doc, "blosc", ("cname", "clevel", "shuffle", "typesize", "blocksize"))
        return cls(**config)


@dataclass(frozen=True)
class GzipCodec(CodecBase):
    """``gzip``: bytes->bytes (RFC 1952, numcodecs ``GZip``).

    Examples
    --------
    >>> GzipCodec(level=1).to_json()
    {'name': 'gzip', 'configuration': {'level': 1}}
    """

    level: int = 5
    name: ClassVar[str] = "gzip"
    kind: ClassVar[str] = BYTES_TO_BYTES

    def __post_init__(self) -> None:
        _check_int("gzip", "level", self.level, 0, 9)

    def to_json(self) -> dict[str, Any]:
        return {"name": "gzip", "configuration": {"level": self.level}}

    def numcodecs_config(self) -> dict[str, Any]:
        return {"id": "gzip", "level": self.level}

    @classmethod
    def from_json(cls, doc: JSONValue) -> GzipCodec:
        return cls(**_configuration(doc, "gzip", ("level",)))


@dataclass(frozen=True)
class ZstdCodec(CodecBase):
    """``zstd``: bytes->bytes (numcodecs ``Zstd``).

    Examples
    --------
    >>> ZstdCodec(level=3, checksum=True).numcodecs_config()
    {'id': 'zstd', 'level': 3, 'checksum': True}
    """

    level: int = 0
    checksum: bool = False
    name: ClassVar[str] = "zstd"
    kind: ClassVar[str] = BYTES_TO_BYTES

    def __post_init__(self) -> None:
        _check_int("zstd", "level", self.level, -131072, 22)
        if not isinstance(self.checksum, bool):
            raise UnsupportedCodecError(f"codec 'zstd': checksum must be a boolean, got {self.checksum!r}")

    def to_json(self) -> dict[str, Any]:
        return {"name": "zstd", "configuration": {"level": self.level, "checksum": self.checksum}}

    def numcodecs_config(self) -> dict[str, Any]:
        return {"id": "zstd", "level": self.level, "checksum": self.checksum}

    @classmethod
    def from_json(cls, doc: JSONValue) -> ZstdCodec:
        return cls(**_configuration(doc, "zstd", ("level", "checksum")))


@dataclass(frozen=True)
class Crc32cCodec(CodecBase):
    """``crc32c``: bytes->bytes, appends the little-endian CRC32C of its input.

    Examples
    --------
    >>> Crc32cCodec().to_json()
    {'name': 'crc32c'}
    """

    name: ClassVar[str] = "crc32c"
    kind: ClassVar[str] = BYTES_TO_BYTES

    def to_json(self) -> dict[str, Any]:
        return {"name": "crc32c"}

    def numcodecs_config(self) -> dict[str, Any]:
        return {"id": "crc32c"}

    @classmethod
    def from_json(cls, doc: JSONValue) -> Crc32cCodec:
        _configuration(doc, "crc32c", ())
        return cls()


@dataclass(frozen=True)
class VLenUTF8Codec(CodecBase):
    """``vlen-utf8``: array->bytes for variable-length strings (numcodecs ``VLenUTF8``).

    Examples
    --------
    >>> VLenUTF8Codec().to_json()
    {'name': 'vlen-utf8', 'configuration': {}}
    """

    name: ClassVar[str] = "vlen-utf8"
    kind: ClassVar[str] = ARRAY_TO_BYTES

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": {}}

    def numcodecs_config(self) -> dict[str, Any]:
        return {"id": self.name}

    @classmethod
    def from_json(cls, doc: JSONValue) -> VLenUTF8Codec:
        _configuration(doc, cls.name, ())
        return cls()


@dataclass(frozen=True)
class VLenBytesCodec(VLenUTF8Codec):
    """``vlen-bytes``: array->bytes for variable-length bytes (numcodecs ``VLenBytes``).

    Examples
    --------
    >>> VLenBytesCodec().to_json()
    {'name': 'vlen-bytes', 'configuration': {}}
    """

    name: ClassVar[str] = "vlen-bytes"
