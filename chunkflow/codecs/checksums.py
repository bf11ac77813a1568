"""The ``crc32c`` checksum codec, also with a numcodecs that has none.

numcodecs has a ``crc32c`` codec from 0.14 on, but before 0.16 only when the optional
``crc32c`` package is installed. chunkflow depends on ``google-crc32c`` (what numcodecs
0.16 computes the checksum with), so where ``numcodecs.CRC32C`` is missing,
:func:`chunkflow.codecs.stages.build_numcodec` builds :class:`Crc32c` over that
package: the same id, config and
bytes (the CRC32C of the payload as a little-endian uint32, at the end by default).

Examples
--------
>>> codec = Crc32c()
>>> encoded = bytes(codec.encode(b"abc"))
>>> encoded[:3], int.from_bytes(encoded[3:], "little") == crc32c(b"abc")
(b'abc', True)
>>> bytes(codec.decode(encoded))
b'abc'
"""

from __future__ import annotations

from typing import Any

import google_crc32c
import numcodecs
import numpy as np
from numcodecs.abc import Codec
from numcodecs.compat import ensure_contiguous_ndarray, ndarray_copy

from chunkflow.errors import ChunkDecodeError, UnsupportedCodecError

__all__ = ["CRC32C_CODECS", "NUMCODECS_CRC32C", "Crc32c", "crc32c"]

#: numcodecs' own codec class, or None in the releases that lack it.
NUMCODECS_CRC32C: type[Codec] | None = getattr(numcodecs, "CRC32C", None)


def crc32c(data: Any) -> int:
    """The CRC32C (Castagnoli) checksum of a contiguous buffer.

    Examples
    --------
    >>> hex(crc32c(b"123456789"))  # the standard check value
    '0xe3069283'
    """
    return int(google_crc32c.value(ensure_contiguous_ndarray(data).view("u1")))


class Crc32c(Codec):
    """numcodecs' ``crc32c`` codec, for numcodecs releases without it.

    Parameters
    ----------
    location : {"end", "start"}
        Where the 4 checksum bytes go; ``"end"`` as Zarr v3's ``crc32c`` codec.
    """

    codec_id = "crc32c"

    def __init__(self, location: str = "end") -> None:
        if location not in ("start", "end"):
            raise UnsupportedCodecError(
                f"codec 'crc32c': location must be 'start' or 'end', got {location!r}")
        self.location = location

    def encode(self, buf: Any) -> np.ndarray:
        payload = ensure_contiguous_ndarray(buf).view("u1").reshape(-1)
        encoded = np.empty(payload.size + 4, dtype="u1")
        body, check = ((encoded[:-4], encoded[-4:]) if self.location == "end"
                       else (encoded[4:], encoded[:4]))
        body[...] = payload
        check.view("<u4")[0] = crc32c(payload)
        return encoded

    def decode(self, buf: Any, out: Any = None) -> Any:
        data = ensure_contiguous_ndarray(buf).view("u1").reshape(-1)
        if data.size < 4:
            raise ChunkDecodeError(f"codec 'crc32c': {data.size} bytes, too short for a checksum")
        body, check = (data[:-4], data[-4:]) if self.location == "end" else (data[4:], data[:4])
        stored, computed = int(check.view("<u4")[0]), crc32c(body)
        if stored != computed:
            raise ChunkDecodeError(f"codec 'crc32c': checksum mismatch, stored {stored:#010x}, "
                                   f"computed {computed:#010x} over {body.size} bytes")
        return ndarray_copy(body, out)


#: The classes whose instances are a crc32c codec (for isinstance checks).
CRC32C_CODECS: tuple[type[Codec], ...] = tuple(
    cls for cls in (NUMCODECS_CRC32C, Crc32c) if cls is not None)

