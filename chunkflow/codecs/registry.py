"""Codec lookup by name, and the ``"numcodecs.<id>"`` codecs outside the v3 spec.

Examples
--------
>>> codec_from_json({"name": "zstd", "configuration": {"level": 3}})
ZstdCodec(level=3, checksum=False)
>>> codec_from_json({"name": "numcodecs.delta", "configuration": {"dtype": "<i4"}}).kind
'array_to_array'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeGuard, Union

from chunkflow.codecs.sharding import ShardingCodec
from chunkflow.codecs.v3_codecs import (
    ARRAY_TO_ARRAY,
    ARRAY_TO_BYTES,
    BYTES_TO_BYTES,
    BloscCodec,
    BytesCodec,
    CodecBase,
    Crc32cCodec,
    GzipCodec,
    TransposeCodec,
    VLenBytesCodec,
    VLenUTF8Codec,
    ZstdCodec,
)
from chunkflow.errors import UnsupportedCodecError

if TYPE_CHECKING:
    from chunkflow.metadata.json import JSONValue

__all__ = ["NUMCODECS_KINDS", "NumcodecsCodec", "V3Codec", "codec_from_json", "is_v3_codec"]

# The kinds zarr-python 3.1 assigns in zarr/codecs/numcodecs/_codecs.py; the object
# codecs (vlen-*, json2, msgpack2, pickle, vlen-array) turn an array into bytes.
NUMCODECS_KINDS: dict[str, str] = {
    **dict.fromkeys(
        ["delta", "bitround", "fixedscaleoffset", "quantize", "packbits", "astype", "categorize"],
        ARRAY_TO_ARRAY,
    ),
    **dict.fromkeys(
        ["pcodec", "zfpy", "vlen-utf8", "vlen-bytes", "vlen-array", "json2", "msgpack2", "pickle"],
        ARRAY_TO_BYTES,
    ),
    **dict.fromkeys(
        ["blosc", "lz4", "zstd", "zlib", "gzip", "bz2", "lzma", "shuffle", "base64",
         "crc32", "crc32c", "adler32", "fletcher32", "jenkins_lookup3"],
        BYTES_TO_BYTES,
    ),
}
NUMCODECS_PREFIX = "numcodecs."


@dataclass(frozen=True)
class NumcodecsCodec(CodecBase):
    """A numcodecs codec outside the v3 spec, stored as ``"numcodecs.<id>"``.

    Examples
    --------
    >>> c = NumcodecsCodec("bz2", {"level": 1})
    >>> c.to_json(), c.kind
    ({'name': 'numcodecs.bz2', 'configuration': {'level': 1}}, 'bytes_to_bytes')
    """

    codec_id: str
    configuration: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.codec_id not in NUMCODECS_KINDS:
            raise UnsupportedCodecError(
                f"unknown codec 'numcodecs.{self.codec_id}': chunkflow knows "
                f"numcodecs.{{{', '.join(sorted(NUMCODECS_KINDS))}}}"
            )
        config = {k: v for k, v in self.configuration.items() if k != "id"}
        object.__setattr__(self, "configuration", config)

    @property
    def name(self) -> str:
        return NUMCODECS_PREFIX + self.codec_id

    @property
    def kind(self) -> str:
        return NUMCODECS_KINDS[self.codec_id]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": dict(self.configuration)}

    def numcodecs_config(self) -> dict[str, Any]:
        return {"id": self.codec_id, **self.configuration}

    @classmethod
    def from_json(cls, doc: JSONValue) -> NumcodecsCodec:
        doc = {"name": doc} if isinstance(doc, str) else doc
        if not isinstance(doc, dict) or not isinstance(doc.get("name"), str):
            raise UnsupportedCodecError(f"expected a numcodecs codec document, got {doc!r}")
        config = doc.get("configuration") or {}
        if not isinstance(config, dict):
            raise UnsupportedCodecError(f"codec {doc['name']!r}: configuration must be an object")
        return cls(doc["name"].removeprefix(NUMCODECS_PREFIX), dict(config))


# typing.Union, not ``X | Y``: the API reference shows a typing.Union as "alias of ...",
# where a types.UnionType would show the docstring of types.UnionType itself.
V3Codec = Union[  # noqa: UP007
    BytesCodec, TransposeCodec, BloscCodec, GzipCodec, ZstdCodec, Crc32cCodec,
    VLenUTF8Codec, VLenBytesCodec, NumcodecsCodec, ShardingCodec,
]



def is_v3_codec(obj: object) -> TypeGuard[V3Codec]:
    """Whether ``obj`` is one of chunkflow's v3 codec objects (not a document).

    Examples
    --------
    >>> is_v3_codec(Crc32cCodec()), is_v3_codec({"name": "crc32c"})
    (True, False)
    """
    return isinstance(obj, (BytesCodec, TransposeCodec, BloscCodec, GzipCodec, ZstdCodec,
                            Crc32cCodec, VLenUTF8Codec, VLenBytesCodec, NumcodecsCodec,
                            ShardingCodec))


_BY_NAME: dict[str, Any] = {
    cls.name: cls
    for cls in (BytesCodec, TransposeCodec, BloscCodec, GzipCodec, ZstdCodec,
                Crc32cCodec, VLenUTF8Codec, VLenBytesCodec, ShardingCodec)
}


def codec_from_json(doc: JSONValue) -> V3Codec:
    """Parse one v3 codec document (or a bare name string) into a codec object.

    Examples
    --------
    >>> codec_from_json("crc32c")
    Crc32cCodec()
    >>> codec_from_json({"name": "lzw"})  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    chunkflow.errors.UnsupportedCodecError: unknown v3 codec 'lzw'; supported: blosc, bytes, crc32c, gzip,
    sharding_indexed, transpose, vlen-bytes, vlen-utf8, zstd, numcodecs.<id>
    """
    name = doc if isinstance(doc, str) else doc.get("name") if isinstance(doc, dict) else None
    if not isinstance(name, str):
        raise UnsupportedCodecError(f"a v3 codec must be an object with a string 'name', got {doc!r}")
    if name in _BY_NAME:
        try:
            return _BY_NAME[name].from_json(doc)
        except TypeError as err:  # e.g. a configuration value of the wrong type
            raise UnsupportedCodecError(f"codec {name!r}: invalid configuration in {doc!r}: {err}") from err
    if name.startswith(NUMCODECS_PREFIX):
        return NumcodecsCodec.from_json(doc)
    raise UnsupportedCodecError(
        f"unknown v3 codec {name!r}; supported: {', '.join(sorted(_BY_NAME))}, numcodecs.<id>"
    )
