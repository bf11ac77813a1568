"""Decoding only the blocks of a blosc frame that a region of a chunk needs.

Blosc (version 1 frames, as numcodecs, zarr-python and tensorstore write them) splits
a chunk's bytes into blocks compressed one by one, and its header lists where each
block starts. A window that reads a slab of an inner chunk (the planes it crosses,
in C order) needs only the blocks holding those bytes: with 512 KiB inner chunks in
256 KiB blocks, a random window skips a quarter of the decoding.

numcodecs has no call to decode part of a frame, so :func:`blocks_frame` writes a
smaller frame of the blocks needed: the same header with the size of their bytes,
their starts, and their compressed bytes, which blosc decodes like any frame. A
frame this module does not know for certain how to cut (another format version,
stored uncompressed, a single block) gives ``None``: decode it whole.

Examples
--------
>>> import numpy as np
>>> from numcodecs import Blosc
>>> from numcodecs.blosc import decompress
>>> data = np.arange(100_000, dtype="u2")
>>> frame = Blosc("lz4", blocksize=16384).encode(data)
>>> part, start, stop = blocks_frame(frame, 150_000, 150_010)  # bytes of items 75000..
>>> out = np.zeros(200_000, "u1")
>>> _ = decompress(part, out[start:stop])
>>> out[150_000:150_010].view("u2").tolist() == data[75_000:75_005].tolist()
True
>>> stop - start < 200_000, blocks_frame(frame, 0, 200_000) is None  # all: decode whole
(True, True)
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

__all__ = ["blocks_frame", "region_bytes"]

# version, versionlz, flags, typesize, nbytes, blocksize, cbytes
_HEAD = struct.Struct("<BBBBIII")
_FORMAT_VERSION = 2  # c-blosc 1.x frames
_MEMCPYED = 0x02  # stored uncompressed: no block starts


def region_bytes(selection: Sequence[object], shape: Sequence[int],
                 itemsize: int) -> tuple[int, int] | None:
    """The first and one past the last byte that ``selection`` reads of a C-ordered
    chunk of ``shape``, for a selection of in-bounds integers and slices of step 1 that
    selects something; else ``None``.

    Examples
    --------
    >>> region_bytes((slice(2, 4), slice(1, 3)), (4, 8), 2)  # items 17..26
    (34, 54)
    >>> region_bytes((1, slice(0, 8)), (4, 8), 1), region_bytes((slice(0, 4, 2),), (4,), 1)
    ((8, 16), None)
    """
    if len(selection) != len(shape):
        return None
    first = last = 0
    stride = itemsize
    for entry, size in zip(reversed(selection), reversed(shape)):
        if isinstance(entry, slice):
            if entry.step not in (None, 1):
                return None
            start, stop, _ = entry.indices(size)
        elif isinstance(entry, int) and 0 <= entry < size:
            start, stop = entry, entry + 1
        else:
            return None
        if start >= stop:
            return None
        first += start * stride
        last += (stop - 1) * stride
        stride *= size
    return first, last + itemsize


def blocks_frame(frame: bytes | bytearray | memoryview, first: int,
                 last: int) -> tuple[bytes, int, int] | None:
    """A blosc frame of the blocks of ``frame`` that hold decoded bytes ``first`` to
    ``last`` (exclusive), and where its bytes start and stop in the decoded chunk; or
    ``None`` when the whole frame should be decoded (every block is needed, or a frame
    this module does not cut)."""
    if len(frame) < _HEAD.size:
        return None
    version, versionlz, flags, typesize, nbytes, blocksize, cbytes = _HEAD.unpack_from(frame)
    if version != _FORMAT_VERSION or flags & _MEMCPYED or blocksize <= 0 \
            or nbytes <= blocksize or cbytes > len(frame) or not 0 <= first < last <= nbytes:
        return None
    count = -(-nbytes // blocksize)
    if _HEAD.size + 4 * count > cbytes:
        return None
    stored_from = _HEAD.size + 4 * count  # where block data may start
    low, high = first // blocksize, (last - 1) // blocksize + 1
    if low > 0 and min(high * blocksize, nbytes) - low * blocksize < blocksize:
        # A frame of the last, short block alone is refused by blosc now and then:
        # take the block before it too.
        low -= 1
    if low == 0 and high >= count:
        return None
    starts = struct.unpack_from(f"<{count}i", frame, _HEAD.size)
    # Blocks may be stored in any order (threads append them as they finish): each
    # ends where the next one in the frame starts.
    ends = sorted(starts) + [cbytes]
    after = {start: ends[i + 1] for i, start in enumerate(ends[:-1])}
    head = _HEAD.size + 4 * (high - low)
    pieces, moved, position = [], [], head
    for block in range(low, high):
        start = starts[block]
        stop = after[start]
        if not stored_from <= start < stop <= cbytes:
            return None  # not a frame written by blosc: let blosc judge it whole
        pieces.append(frame[start:stop])
        moved.append(position)
        position += stop - start
    stop = min(high * blocksize, nbytes)
    header = _HEAD.pack(version, versionlz, flags, typesize, stop - low * blocksize,
                        blocksize, position)
    return b"".join([header, struct.pack(f"<{high - low}i", *moved), *pieces]), \
        low * blocksize, stop
