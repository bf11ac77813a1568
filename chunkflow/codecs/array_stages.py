"""Array-side stages of the v3 pipeline: transpose, numcodecs filters, serializers.

Each stage is built once per pipeline with its input (shape, dtype) resolved, so
encoding and decoding a chunk costs only the numpy/numcodecs calls.

Examples
--------
>>> import numpy as np
>>> from chunkflow.codecs.v3_codecs import BytesCodec
>>> stage = RawBytesStage(BytesCodec("big"), ((2,), np.dtype("<u2")))
>>> stage.encode(np.array([1, 2], "<u2")).tobytes().hex()
'00010002'
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from chunkflow.codecs.registry import NumcodecsCodec, V3Codec
from chunkflow.codecs.stages import BufferLike, as_u8, build_numcodec
from chunkflow.codecs.v3_codecs import BytesCodec, VLenUTF8Codec
from chunkflow.errors import ChunkDecodeError, ChunkEncodeError, UnsupportedCodecError

__all__ = [
    "ArrayFilterStage",
    "ObjectBytesStage",
    "RawBytesStage",
    "Spec",
    "TransposeStage",
    "filter_out_spec",
    "has_endianness",
]

Spec = tuple[tuple[int, ...], np.dtype]


def has_endianness(dtype: np.dtype) -> bool:
    """Whether the ``bytes`` codec's endian applies (as zarr-python 3.1's HasEndianness).

    Examples
    --------
    >>> has_endianness(np.dtype("<U2")), has_endianness(np.dtype("u1")), has_endianness(np.dtype("S4"))
    (True, False, False)
    """
    return dtype.itemsize > 1 and dtype.kind in "iufcmMU" and dtype.fields is None


class TransposeStage:
    """``transpose``: encoded = chunk.transpose(perm); decoding undoes it (views)."""

    __slots__ = ("inverse", "perm")

    def __init__(self, perm: tuple[int, ...]) -> None:
        self.perm = perm
        self.inverse = tuple(int(i) for i in np.argsort(perm))

    def encode(self, arr: np.ndarray) -> np.ndarray:
        return arr.transpose(self.perm)

    def decode(self, arr: np.ndarray) -> np.ndarray:
        return arr.transpose(self.inverse)


def filter_out_spec(codec_id: str, config: dict[str, Any], spec: Spec) -> Spec:
    """The (shape, dtype) a numcodecs array->array filter produces from `spec`.

    Examples
    --------
    >>> filter_out_spec("packbits", {}, ((10,), np.dtype(bool)))
    ((3,), dtype('uint8'))
    """
    shape, dtype = spec
    if codec_id == "packbits":
        return (1 + math.ceil(math.prod(shape) / 8),), np.dtype("u1")
    if codec_id == "astype":
        return shape, np.dtype(config["encode_dtype"])
    if codec_id == "categorize":
        return shape, np.dtype(config.get("astype", "u1"))
    if codec_id in ("delta", "fixedscaleoffset", "quantize") and config.get("astype"):
        return shape, np.dtype(config["astype"])
    return shape, dtype


class ArrayFilterStage:
    """A numcodecs filter between two resolved specs (it sees the C-order items)."""

    __slots__ = ("codec", "in_spec", "name", "out_spec")

    def __init__(self, codec: NumcodecsCodec, in_spec: Spec, allow_pickle: bool) -> None:
        self.name = codec.name
        self.codec = build_numcodec(codec.numcodecs_config(), allow_pickle=allow_pickle)
        self.in_spec = in_spec
        self.out_spec = filter_out_spec(codec.codec_id, codec.configuration, in_spec)

    def encode(self, arr: np.ndarray) -> np.ndarray:
        try:
            res = self.codec.encode(np.ascontiguousarray(arr, dtype=self.in_spec[1]))
            return np.asarray(res).reshape(self.out_spec[0])
        except Exception as err:
            raise ChunkEncodeError(f"codec {self.name!r}: cannot encode chunk: {err}") from err

    def decode(self, arr: np.ndarray) -> np.ndarray:
        try:
            # numcodecs filters view their input as their configured dtype: hand it
            # native items again (the bytes codec may have produced big-endian ones).
            encoded = np.ascontiguousarray(arr, dtype=self.out_spec[1])
            res = np.asarray(self.codec.decode(encoded)).reshape(-1)
        except Exception as err:
            raise ChunkDecodeError(f"codec {self.name!r}: cannot decode chunk: {err}") from err
        shape, dtype = self.in_spec
        if res.size != math.prod(shape):
            raise ChunkDecodeError(
                f"codec {self.name!r}: decoded {res.size} items, expected {math.prod(shape)}"
            )
        return res.reshape(shape).astype(dtype, copy=False)


class RawBytesStage:
    """The ``bytes`` codec: raw items, C order, in the configured endianness."""

    __slots__ = ("nbytes", "shape", "stored_dtype")

    def __init__(self, codec: BytesCodec, spec: Spec) -> None:
        self.shape, dtype = spec
        if dtype.hasobject or dtype.kind == "T":
            raise UnsupportedCodecError(
                f"codec 'bytes' cannot store the variable-length data type {dtype}; use 'vlen-utf8'"
            )
        if has_endianness(dtype):
            if codec.endian is None:
                raise UnsupportedCodecError(
                    f"codec 'bytes' needs an 'endian' configuration for the multi-byte data type {dtype}"
                )
            dtype = dtype.newbyteorder("<" if codec.endian == "little" else ">")
        self.stored_dtype = dtype
        self.nbytes = math.prod(self.shape) * dtype.itemsize

    def encode(self, arr: np.ndarray) -> np.ndarray:
        """The items in C order and stored byte order (shaped; numcodecs flattens)."""
        # asarray casts, byte-swaps and makes C order in one pass, and only if needed.
        return np.asarray(arr, dtype=self.stored_dtype, order="C")

    def decode(self, buf: BufferLike) -> np.ndarray:
        u8 = as_u8(buf)
        if u8.size != self.nbytes:
            raise ChunkDecodeError(
                f"codec 'bytes': decoded {u8.size} bytes, expected {self.nbytes} "
                f"(shape {self.shape}, data type {self.stored_dtype.str})"
            )
        return u8.view(self.stored_dtype).reshape(self.shape)


class ObjectBytesStage:
    """vlen-utf8 / vlen-bytes / other numcodecs array->bytes codecs."""

    __slots__ = ("codec", "name", "spec")

    def __init__(self, codec: V3Codec, spec: Spec, allow_pickle: bool) -> None:
        self.name = codec.name
        self.spec = spec
        if isinstance(codec, VLenUTF8Codec):  # also VLenBytesCodec
            dtype = spec[1]
            if not (dtype.hasobject or dtype.kind == "T"):
                raise UnsupportedCodecError(
                    f"codec {codec.name!r} needs a variable-length (object/string) data type, got {dtype}"
                )
        self.codec = build_numcodec(codec.numcodecs_config(), allow_pickle=allow_pickle)

    def encode(self, arr: np.ndarray) -> BufferLike:
        if arr.dtype.kind in "TU" or (arr.dtype.kind == "S" and self.spec[1].hasobject):
            arr = arr.astype(object)
        try:
            return self.codec.encode(np.ascontiguousarray(arr))
        except Exception as err:
            raise ChunkEncodeError(f"codec {self.name!r}: cannot encode chunk: {err}") from err

    def decode(self, buf: BufferLike) -> np.ndarray:
        shape, dtype = self.spec
        try:
            res = np.asarray(self.codec.decode(buf)).reshape(-1)
        except Exception as err:
            raise ChunkDecodeError(f"codec {self.name!r}: cannot decode chunk: {err}") from err
        if res.size != math.prod(shape):
            raise ChunkDecodeError(
                f"codec {self.name!r}: decoded {res.size} items, expected {math.prod(shape)}"
            )
        return res.reshape(shape).astype(dtype, copy=False)
