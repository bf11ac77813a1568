"""Decompression that stops at a size limit: no chunk inflates past what it may hold.

A 785-byte bz2 stream can inflate to 1 GiB, and gzip, zlib and zstd frames that do not
announce their size do the same; numcodecs decodes them whole before anyone can check
the size. Here every compressor is run incrementally (zlib, gzip, bz2, lzma) or into a
buffer of at most the limit (zstd), and a chunk that would decode to more than it may
hold is refused with a :class:`~chunkflow.errors.ChunkDecodeError` after producing at
most ``limit + 1`` bytes. Blosc and LZ4 announce their size in a header, which is
checked first.

Examples
--------
>>> import numcodecs
>>> bomb = numcodecs.BZ2().encode(bytes(10**7))
>>> len(bomb) < 100
True
>>> bounded_decode(numcodecs.BZ2(), bomb, 10**6, "bz2")  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
chunkflow.errors.ChunkDecodeError: codec 'bz2': stored data decodes to more than 1000000 bytes, the most this
chunk can hold (a corrupt or hostile chunk?)
>>> len(bounded_decode(numcodecs.Zlib(), numcodecs.Zlib().encode(bytes(10)), 10, "zlib"))
10
"""

from __future__ import annotations

import bz2
import lzma
import re
import zlib
from typing import TYPE_CHECKING, Any

import numcodecs
import numpy as np

from chunkflow.codecs.frames import BufferLike, zstd_content_size
from chunkflow.errors import ChunkDecodeError, InternalError

if TYPE_CHECKING:
    from numcodecs.abc import Codec

__all__ = ["bounded_decode", "limit_for"]

# What a chunk of variable-length items (strings, bytes, objects) may decode to: its
# size is not in the metadata, so a generous cap stands in for it.
VARIABLE_ITEM_BYTES = 1024
VARIABLE_MIN_BYTES = 256 * 2**20

_ZSTD_SIZE = re.compile(r"expected to decompress \d+, got (\d+)")


def limit_for(items: int, itemsize: int | None) -> int:
    """The most one chunk's stored bytes may decode to.

    ``itemsize`` is ``None`` for variable-length items.

    Examples
    --------
    >>> limit_for(1000, 8), limit_for(10, None) == VARIABLE_MIN_BYTES
    (8000, True)
    """
    if itemsize is None:
        return max(VARIABLE_MIN_BYTES, VARIABLE_ITEM_BYTES * items)
    return items * itemsize


def _refuse(name: str, limit: int) -> ChunkDecodeError:
    return ChunkDecodeError(
        f"codec {name!r}: stored data decodes to more than {limit} bytes, the most this "
        "chunk can hold (a corrupt or hostile chunk?)"
    )


def _incremental(decompressor: Any, data: memoryview, limit: int, name: str) -> bytes:
    try:
        out = decompressor.decompress(data, limit + 1)
    except (OSError, ValueError, EOFError, zlib.error, lzma.LZMAError) as err:
        raise ChunkDecodeError(f"codec {name!r}: cannot decode {len(data)} stored bytes: {err}") from err
    if len(out) > limit:
        raise _refuse(name, limit)
    if not decompressor.eof:
        raise ChunkDecodeError(
            f"codec {name!r}: the compressed stream of {len(data)} stored bytes ends early "
            "(truncated chunk?)"
        )
    return out


def _zstd(buf: Any, limit: int, name: str) -> Any:
    size = zstd_content_size(buf)
    if size is not None:
        if size > limit:
            raise _refuse(name, limit)
        return numcodecs.zstd.decompress(buf)
    # No size in the frame: decompress into `limit` bytes at most. numcodecs insists the
    # output fill the buffer exactly and says how much there was; decode again into that.
    capacity = limit
    for retry in (False, True):
        dest = np.empty(capacity, dtype=np.uint8)
        try:
            return numcodecs.zstd.decompress(buf, dest)
        except RuntimeError as err:
            if "too small" in str(err):
                raise _refuse(name, limit) from None
            found = _ZSTD_SIZE.search(str(err))
            if found is None or retry:
                raise ChunkDecodeError(f"codec {name!r}: cannot decode: {err}") from err
            capacity = int(found.group(1))
    raise InternalError("unreachable")


def bounded_decode(codec: Codec, buf: BufferLike, limit: int, name: str) -> Any:
    """``codec.decode(buf)``, refused once the output would exceed ``limit`` bytes.

    Codecs without a bounded decoder (filters, codecs chunkflow does not know) decode
    as usual and have their output checked afterwards.
    """
    data = memoryview(numcodecs.compat.ensure_contiguous_ndarray(buf)).cast("B")
    if isinstance(codec, numcodecs.Zlib):
        return _incremental(zlib.decompressobj(), data, limit, name)
    if isinstance(codec, numcodecs.GZip):
        return _incremental(zlib.decompressobj(16 + zlib.MAX_WBITS), data, limit, name)
    if isinstance(codec, numcodecs.BZ2):
        return _incremental(bz2.BZ2Decompressor(), data, limit, name)
    if isinstance(codec, numcodecs.LZMA):
        raw = codec.format == lzma.FORMAT_RAW
        decompressor = lzma.LZMADecompressor(format=codec.format,
                                             filters=codec.filters if raw else None)
        return _incremental(decompressor, data, limit, name)
    if isinstance(codec, numcodecs.Zstd):
        return _zstd(data, limit, name)
    out = codec.decode(buf)
    if np.asarray(out).nbytes > limit:
        raise _refuse(name, limit)
    return out
