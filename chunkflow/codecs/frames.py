"""A stored chunk's bytes as a flat view, and what a compressed frame's header says.

Below both the codec stages and the bounded decoder, which reads a Zstandard frame's
content size before it decompresses.

Examples
--------
>>> from numcodecs import Zstd
>>> zstd_content_size(Zstd().encode(bytes(1000))), as_u8(b"ab").tolist()
(1000, [97, 98])
"""

from __future__ import annotations

import numpy as np

__all__ = ["BufferLike", "as_u8", "head_bytes", "zstd_content_size"]

BufferLike = bytes | bytearray | memoryview | np.ndarray

_ZSTD_MAGIC = 0xFD2FB528


def as_u8(data: BufferLike) -> np.ndarray:
    """Return a flat ``uint8`` view of `data` (no copy for contiguous input).

    Examples
    --------
    >>> as_u8(b"ab").tolist()
    [97, 98]
    """
    if isinstance(data, np.ndarray):
        if data.dtype == np.uint8 and data.ndim == 1:
            return data
        return data.reshape(-1).view(np.uint8)
    return np.frombuffer(data, dtype=np.uint8)


def head_bytes(buf: BufferLike, n: int) -> bytes:
    """The first `n` bytes of `buf` (fewer if shorter), cheaply for ``bytes``."""
    if isinstance(buf, bytes):
        return buf[:n]
    return as_u8(buf)[:n].tobytes()


def zstd_content_size(buf: BufferLike) -> int | None:
    """Frame content size from a Zstandard frame header (None if absent/unknown).

    Examples
    --------
    >>> from numcodecs import Zstd
    >>> zstd_content_size(Zstd().encode(bytes(1000)))
    1000
    """
    head = head_bytes(buf, 18)  # magic, descriptor, window, dictionary id <= 4, size <= 8
    if len(head) < 6 or int.from_bytes(head[:4], "little") != _ZSTD_MAGIC:
        return None
    descriptor = head[4]
    fcs_flag, single_segment, dict_flag = descriptor >> 6, (descriptor >> 5) & 1, descriptor & 3
    pos = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[dict_flag]
    width = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    if width == 0 or len(head) < pos + width:
        return None
    size = int.from_bytes(head[pos : pos + width], "little")
    return size + 256 if width == 2 else size
