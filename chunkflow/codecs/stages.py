"""Bytes-to-bytes stages shared by the v2 and v3 codec pipelines.

A stage wraps one numcodecs codec object, built once per pipeline, and adds what
numcodecs leaves to the caller: errors that name the codec and the sizes involved,
and a checked ``decode_into`` that decompresses straight into a caller's buffer.

numcodecs happily decompresses into a destination that is *larger* than the
decoded data (leaving the tail untouched) and Blosc even reads past the end of a
truncated buffer, so the stages read the decoded size from the codec's own header
(Blosc, LZ4, Zstd frames) and compare it with the chunk size before decompressing.

Examples
--------
>>> import numpy as np
>>> stage = make_bytes_stage("zstd", {"id": "zstd", "level": 1})
>>> data = np.arange(100, dtype="<u2").view(np.uint8)
>>> out = np.empty(200, dtype=np.uint8)
>>> stage.decode_into(stage.encode(data), out)
>>> bool((out == data).all())
True
"""

from __future__ import annotations

import pickle
import struct
from typing import Any

import numcodecs
import numpy as np
from numcodecs.abc import Codec
from numcodecs.blosc import decompress as blosc_decompress

from chunkflow.codecs.bounded import bounded_decode
from chunkflow.codecs.checksums import CRC32C_CODECS, NUMCODECS_CRC32C, Crc32c, crc32c
from chunkflow.codecs.frames import BufferLike, as_u8, head_bytes, zstd_content_size
from chunkflow.errors import (
    ChunkDecodeError,
    ChunkEncodeError,
    UnsafeCodecError,
    UnsupportedCodecError,
)

__all__ = [
    "BufferLike",
    "BytesStage",
    "as_u8",
    "build_numcodec",
    "copy_exact",
    "detach",
    "make_bytes_stage",
]

#: numcodecs ids whose decode can run arbitrary code.
UNSAFE_IDS = frozenset({"pickle"})


def _blosc_takes_typesize() -> bool:
    try:
        numcodecs.Blosc(typesize=1)
    except TypeError:  # numcodecs < 0.16
        return False
    return True


#: Whether numcodecs' Blosc takes ``typesize`` (0.16 on); before, its shuffle takes the
#: item size of the buffer, and :func:`build_numcodec` leaves ``typesize`` out.
BLOSC_TAKES_TYPESIZE = _blosc_takes_typesize()
_BLOSC_SIZES = struct.Struct("<4xI4xI")  # nbytes, cbytes of the blosc header


def copy_exact(src: BufferLike, out: np.ndarray, name: str) -> None:
    """Copy decoded bytes `src` into the C-contiguous array `out`, sizes checked.

    Examples
    --------
    >>> out = np.zeros(3, np.uint8)
    >>> copy_exact(b"abc", out, "bytes"); out.tolist()
    [97, 98, 99]
    >>> copy_exact(b"ab", out, "bytes")
    Traceback (most recent call last):
    ...
    chunkflow.errors.ChunkDecodeError: codec 'bytes': decoded 2 bytes, expected 3
    """
    src_u8 = as_u8(src)
    if src_u8.size != out.nbytes:
        raise ChunkDecodeError(
            f"codec {name!r}: decoded {src_u8.size} bytes, expected {out.nbytes}"
        )
    as_u8(out)[...] = src_u8


def detach(buf: BufferLike, source: np.ndarray) -> bytes | memoryview:
    """Bytes-like encode result that never aliases the caller's chunk `source`.

    Examples
    --------
    >>> chunk = np.arange(3, dtype=np.uint8)
    >>> type(detach(chunk, chunk)).__name__, type(detach(chunk + 1, chunk)).__name__
    ('bytes', 'memoryview')
    """
    if isinstance(buf, bytes):
        return buf
    if isinstance(buf, bytearray):  # a codec's own new buffer: no copy needed
        return memoryview(buf)
    u8 = as_u8(buf)
    # A view of the caller's chunk would let later writes to the chunk change the
    # "stored" bytes (MemoryStore keeps references): copy in that one case.
    if np.may_share_memory(u8, source):
        return u8.tobytes()
    return u8.data  # a memoryview of the flat bytes


def check_safe(codec_id: str, allow_pickle: bool) -> None:
    """Refuse codecs that execute code on decode unless explicitly allowed."""
    if codec_id in UNSAFE_IDS and not allow_pickle:
        raise UnsafeCodecError(
            f"codec {codec_id!r} can run arbitrary code when decoding; pass "
            "allow_pickle=True only for stores you trust"
        )


class TrustedPickle(numcodecs.Pickle):
    """numcodecs' Pickle for a pipeline whose caller passed ``allow_pickle=True``.

    numcodecs gates unpickling behind one process-wide switch; chunkflow's opt-in is
    per array instead, so that trusting one store does not trust every store.
    """

    def decode(self, buf: BufferLike, out: np.ndarray | None = None) -> Any:
        decoded = pickle.loads(numcodecs.compat.ensure_contiguous_ndarray(buf))
        if out is None:
            return decoded
        np.copyto(out, decoded)
        return out


def build_numcodec(config: dict[str, Any], *, allow_pickle: bool = False) -> Codec:
    """Build a numcodecs codec from its config dict, with chunkflow errors.

    Examples
    --------
    >>> build_numcodec({"id": "zlib", "level": 1})
    Zlib(level=1)
    >>> build_numcodec({"id": "nope"})
    Traceback (most recent call last):
    ...
    chunkflow.errors.UnsupportedCodecError: unknown codec id 'nope' (numcodecs has no such codec)
    """
    if not isinstance(config, dict) or not isinstance(config.get("id"), str):
        raise UnsupportedCodecError(f"a codec config needs a string 'id', got {config!r}")
    check_safe(config["id"], allow_pickle)
    if config["id"] == "blosc" and not BLOSC_TAKES_TYPESIZE:
        config = {key: value for key, value in config.items() if key != "typesize"}
    if config["id"] == "pickle":
        return TrustedPickle(**{k: v for k, v in config.items() if k != "id"})
    try:
        if config["id"] == "crc32c" and NUMCODECS_CRC32C is None:
            return Crc32c(**{key: value for key, value in config.items() if key != "id"})
        # get_codec pops "id" from its argument: hand it a copy.
        return numcodecs.get_codec(dict(config))
    except Exception as err:  # numcodecs raises ValueError/TypeError/KeyError...
        if "not available" in str(err):
            raise UnsupportedCodecError(
                f"unknown codec id {config['id']!r} (numcodecs has no such codec)"
            ) from err
        raise UnsupportedCodecError(f"invalid codec config {config!r}: {err}") from err


def _nbytes(buf: BufferLike) -> int:
    return buf.nbytes if isinstance(buf, (np.ndarray, memoryview)) else len(buf)


class BytesStage:
    """A bytes->bytes step around one numcodecs codec.

    Parameters
    ----------
    name : str
        The codec name used in error messages (``"blosc"``, ``"numcodecs.lz4"``).
    codec : numcodecs.abc.Codec
        The codec, built once and reused for every chunk.
    """

    __slots__ = ("codec", "limit", "name")

    #: True when the decoded size can be read from the encoded header, so that
    #: decompressing straight into a caller's buffer is safe.
    sized = False
    #: True when the codec's output depends on the input's itemsize (numcodecs
    #: Blosc without an explicit typesize): such a stage must be given bytes.
    itemsize_sensitive = False

    def __init__(self, name: str, codec: Codec) -> None:
        self.name = name
        self.codec = codec
        #: The most one chunk may decode to (set by the pipeline): decoding stops
        #: there, so a hostile chunk cannot inflate far past its decoded size.
        self.limit: int | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {self.codec!r})"

    def encode(self, buf: BufferLike) -> BufferLike:
        """Encode `buf`; numcodecs errors become :class:`ChunkEncodeError`."""
        try:
            return self.codec.encode(buf)
        except Exception as err:
            raise ChunkEncodeError(
                f"codec {self.name!r}: cannot encode {_nbytes(buf)} bytes: {err}"
            ) from err

    def decode(self, buf: BufferLike) -> BufferLike:
        """Decode `buf` (to at most :attr:`limit` bytes); any failure becomes
        :class:`ChunkDecodeError`."""
        try:
            if self.limit is not None:
                size = self.decoded_size(buf)
                if size is not None and size > self.limit:
                    raise ChunkDecodeError(
                        f"codec {self.name!r}: stored data announces {size} decoded bytes, "
                        f"more than the {self.limit} this chunk can hold"
                    )
                return bounded_decode(self.codec, buf, self.limit, self.name)
            return self.codec.decode(buf)
        except ChunkDecodeError:
            raise
        except Exception as err:
            raise ChunkDecodeError(
                f"codec {self.name!r}: cannot decode {_nbytes(buf)} stored bytes: {err}"
            ) from err

    def decoded_size(self, buf: BufferLike) -> int | None:
        """Decoded size announced by the header of `buf`, or None if unknown."""
        return None

    def decode_into(self, buf: BufferLike, out: np.ndarray) -> None:
        """Decode `buf` into the C-contiguous array `out` (exact byte size required).

        `out` may have any dtype and shape: numcodecs writes to its memory.
        """
        size = self.decoded_size(buf)
        if size is None:
            # Unknown size: decode at most what `out` holds (a bomb stops there).
            copy_exact(bounded_decode(self.codec, buf, out.nbytes, self.name), out, self.name)
            return
        if size != out.nbytes:
            raise ChunkDecodeError(
                f"codec {self.name!r}: stored data decodes to {size} bytes, "
                f"expected {out.nbytes}"
            )
        try:
            self.codec.decode(buf, out=out)
        except Exception as err:
            raise ChunkDecodeError(
                f"codec {self.name!r}: cannot decode {_nbytes(buf)} stored bytes "
                f"into {out.nbytes} bytes: {err}"
            ) from err


class BloscStage(BytesStage):
    """Blosc, with an explicit typesize for the shuffle and a header check.

    numcodecs >= 0.16 takes ``typesize`` in the constructor; older versions infer it
    from the buffer's itemsize, so for those the buffer is viewed as ``V<typesize>``.
    """

    __slots__ = ("itemsize_sensitive", "view_typesize")
    sized = True

    def __init__(self, name: str, codec: Codec, view_typesize: int = 0) -> None:
        super().__init__(name, codec)
        self.view_typesize = view_typesize
        self.itemsize_sensitive = False

    def encode(self, buf: BufferLike) -> BufferLike:
        ts = self.view_typesize
        if ts > 1:
            u8 = as_u8(buf)
            if u8.size % ts == 0:
                buf = u8.view(f"V{ts}")
        return super().encode(buf)

    def decoded_size(self, buf: BufferLike) -> int | None:
        # Blosc header: version, versionlz, flags, typesize, nbytes<u4, blocksize<u4,
        # cbytes<u4.  Blosc trusts cbytes and would read past a truncated buffer.
        head, size = head_bytes(buf, 16), _nbytes(buf)
        if len(head) < 16:
            raise ChunkDecodeError(
                f"codec {self.name!r}: {size} stored bytes, shorter than the "
                "16-byte blosc header"
            )
        nbytes, cbytes = _BLOSC_SIZES.unpack_from(head)
        if cbytes > size:
            raise ChunkDecodeError(
                f"codec {self.name!r}: header announces {cbytes} compressed bytes, "
                f"got {size} (truncated chunk?)"
            )
        return nbytes

    def decode(self, buf: BufferLike) -> BufferLike:
        self.decoded_size(buf)  # refuse truncated data before blosc reads it
        return super().decode(buf)  # the size it announced is checked against the limit

    def decode_into(self, buf: BufferLike, out: np.ndarray) -> None:
        size = self.decoded_size(buf)
        if size != out.nbytes:
            raise ChunkDecodeError(
                f"codec {self.name!r}: stored data decodes to {size} bytes, "
                f"expected {out.nbytes}"
            )
        try:
            # The module-level function skips Blosc.decode's buffer re-wrapping:
            # about 2 µs of a 5 µs decode for an 8 KiB chunk.
            blosc_decompress(buf, out)
        except Exception as err:
            raise ChunkDecodeError(
                f"codec {self.name!r}: cannot decode {_nbytes(buf)} stored bytes "
                f"into {out.nbytes} bytes: {err}"
            ) from err


class LZ4Stage(BytesStage):
    """numcodecs LZ4: a little-endian uint32 decoded size precedes the block."""

    __slots__ = ()
    sized = True

    def decoded_size(self, buf: BufferLike) -> int | None:
        head = head_bytes(buf, 4)
        if len(head) < 4:
            raise ChunkDecodeError(
                f"codec {self.name!r}: {len(head)} stored bytes, shorter than the "
                "4-byte lz4 size header"
            )
        return int.from_bytes(head, "little")


class ZstdStage(BytesStage):
    """Zstd: the frame header carries the content size when the writer set it."""

    __slots__ = ()
    sized = True

    def decoded_size(self, buf: BufferLike) -> int | None:
        return zstd_content_size(buf)


class Crc32cStage(BytesStage):
    """CRC32C checksum appended little-endian (``crc32c``: numcodecs' or :class:`Crc32c`).

    Decoding verifies the checksum and returns a view of the payload (no copy).
    """

    __slots__ = ()

    def decode(self, buf: BufferLike) -> BufferLike:
        u8 = as_u8(buf)
        if u8.size < 4:
            raise ChunkDecodeError(
                f"codec {self.name!r}: {u8.size} stored bytes, too short for a checksum"
            )
        payload = u8[:-4]
        stored = int.from_bytes(u8[-4:].tobytes(), "little")
        computed = crc32c(payload)
        if stored != computed:
            raise ChunkDecodeError(
                f"codec {self.name!r}: checksum mismatch, stored {stored:#010x}, "
                f"computed {computed:#010x} over {payload.size} bytes"
            )
        return payload


def make_bytes_stage(
    name: str, config: dict[str, Any], *, typesize: int | None = None, allow_pickle: bool = False
) -> BytesStage:
    """Build the stage for a numcodecs config (`typesize` only matters for Blosc).

    Examples
    --------
    >>> make_bytes_stage("blosc", {"id": "blosc", "cname": "lz4"}, typesize=2).sized
    True
    """
    if config.get("id") == "blosc":
        return _blosc_stage(name, config, typesize)
    codec = build_numcodec(config, allow_pickle=allow_pickle)
    if isinstance(codec, numcodecs.LZ4):
        return LZ4Stage(name, codec)
    if isinstance(codec, numcodecs.Zstd):
        return ZstdStage(name, codec)
    if isinstance(codec, CRC32C_CODECS) and getattr(codec, "location", "end") == "end":
        return Crc32cStage(name, codec)
    return BytesStage(name, codec)


def _blosc_stage(name: str, config: dict[str, Any], typesize: int | None) -> BloscStage:
    """Blosc with the item size of its shuffle: ``typesize``, else the config's own.

    numcodecs >= 0.16 takes ``typesize`` in its constructor; older releases shuffle by
    the buffer's item size, so there the stage views the buffer as ``V<typesize>``.
    """
    size = typesize if typesize is not None else config.get("typesize")
    if size is None:
        stage = BloscStage(name, build_numcodec(config))
        stage.itemsize_sensitive = True
        return stage
    if BLOSC_TAKES_TYPESIZE:
        return BloscStage(name, build_numcodec({**config, "typesize": size}))
    return BloscStage(name, build_numcodec(config), view_typesize=size)
