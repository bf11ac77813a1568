"""Decoding the blosc blocks a region needs: the region's values equal numpy's, for
every compressor, shuffle, block size and type size; frames not cut are decoded whole."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from numcodecs import Blosc
from numcodecs.blosc import decompress

from chunkflow.codecs.blosc_blocks import blocks_frame, region_bytes
from chunkflow.codecs.pipeline_v3 import v3_pipeline
from chunkflow.errors import ChunkDecodeError


@st.composite
def _cases(draw: st.DrawFn) -> tuple[np.ndarray, dict, tuple[slice, ...]]:
    dtype = np.dtype(draw(st.sampled_from(["u1", "<u2", "<i4", "<f8"])))
    shape = tuple(draw(st.lists(st.integers(1, 40), min_size=1, max_size=3)))
    seed = draw(st.integers(0, 2**16))
    data = np.random.default_rng(seed).integers(0, 50, shape).cumsum().reshape(shape)
    data = data.astype(dtype)
    codec = {"cname": draw(st.sampled_from(["lz4", "zstd", "blosclz", "lz4hc", "zlib"])),
             "clevel": draw(st.integers(0, 9)),
             "shuffle": draw(st.sampled_from(["noshuffle", "shuffle", "bitshuffle"])),
             "typesize": dtype.itemsize,
             "blocksize": draw(st.sampled_from([0, 256, 1000, 4096]))}
    selection = []
    for size in shape:
        start = draw(st.integers(0, size - 1))
        selection.append(slice(start, draw(st.integers(start + 1, size))))
    return data, codec, tuple(selection)


@settings(max_examples=300, deadline=None)
@given(_cases())
@example((np.arange(30 * 40 * 20, dtype="<u2").reshape(30, 40, 20),
          {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2, "blocksize": 256},
          (slice(29, 30), slice(0, 40), slice(0, 20))))  # the last, short block alone
@example((np.arange(1 << 18, dtype="<u2") // 3,
          {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2, "blocksize": 0},
          (slice(131071, 131074),)))  # one item in the first block (of 256 KiB), two in the next
@example((np.arange(1 << 18, dtype="<u2") // 3,
          {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2, "blocksize": 0},
          (slice(131070, 131073),)))  # two items in the first block, one in the next
def test_a_region_decodes_to_numpy_values(case: tuple[np.ndarray, dict, tuple[slice, ...]]) -> None:
    data, codec, selection = case
    pipeline = v3_pipeline(data.dtype, data.shape, [
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "blosc", "configuration": codec}])
    encoded = pipeline.encode(data)
    out = np.zeros_like(data)
    pipeline.decode_region_into(encoded, out, selection)
    np.testing.assert_array_equal(out[selection].view(f"u{data.dtype.itemsize}"),
                                  data[selection].view(f"u{data.dtype.itemsize}"))


def _reversed_blocks(frame: bytes) -> bytes:
    """The same frame with its blocks stored last first (as blosc's threads may store
    them: each appended when done), the starts pointing at each one."""
    import struct

    nbytes, blocksize = struct.unpack_from("<II", frame, 4)
    count = -(-nbytes // blocksize)
    starts = list(struct.unpack_from(f"<{count}i", frame, 16))
    ends = [*starts[1:], len(frame)]
    blocks = [frame[a:b] for a, b in zip(starts, ends)]
    position, moved = 16 + 4 * count, [0] * count
    for block in reversed(range(count)):
        moved[block] = position
        position += len(blocks[block])
    return (frame[:16] + struct.pack(f"<{count}i", *moved)
            + b"".join(blocks[block] for block in reversed(range(count))))


def test_blocks_stored_out_of_order_are_cut_by_their_starts() -> None:
    data = (np.arange(1 << 20) // 7 % 251).astype("u1")  # compressible: not stored raw
    frame = _reversed_blocks(Blosc("lz4", clevel=1, blocksize=65536).encode(data))
    np.testing.assert_array_equal(np.frombuffer(decompress(frame), "u1"), data)
    for first, last in [(5000, 5001), (100_000, 300_000), ((1 << 20) - 10, 1 << 20)]:
        cut = blocks_frame(frame, first, last)
        assert cut is not None
        part, start, stop = cut
        assert start <= first and last <= stop and stop - start < len(data)
        out = np.zeros(len(data), "u1")
        decompress(part, out[start:stop])
        np.testing.assert_array_equal(out[first:last], data[first:last])


def test_frames_not_cut_and_selections_not_mapped() -> None:
    data = np.arange(1 << 16, dtype="u1")
    frame = Blosc("lz4", blocksize=4096).encode(data)
    assert blocks_frame(frame, 0, 1 << 16) is None  # every block
    assert blocks_frame(frame[:10], 0, 5) is None  # no header
    assert blocks_frame(frame, 10, 5) is None  # nothing asked
    stored = Blosc("lz4", clevel=0).encode(data)  # stored uncompressed: no block starts
    assert blocks_frame(stored, 0, 10) is None
    broken = bytearray(frame)
    broken[16:20] = (10**6).to_bytes(4, "little")  # a block start past the frame
    assert blocks_frame(bytes(broken), 0, 10) is None
    assert region_bytes((slice(0, 4, 2),), (8,), 1) is None
    assert region_bytes((slice(3, 3),), (8,), 1) is None
    assert region_bytes((np.array([1]),), (8,), 1) is None


def test_a_corrupt_frame_is_still_refused() -> None:
    pipeline = v3_pipeline("<u2", (256, 256), [
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle",
                                            "typesize": 2, "blocksize": 4096}}])
    encoded = bytearray(pipeline.encode(np.arange(1 << 16, dtype="<u2").reshape(256, 256)))
    encoded[-100:] = bytes(100)  # the last block's bytes damaged
    out = np.zeros((256, 256), "<u2")
    with pytest.raises(ChunkDecodeError):
        pipeline.decode_region_into(bytes(encoded), out, (slice(255, 256), slice(0, 256)))
