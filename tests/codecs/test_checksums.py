"""The ``crc32c`` codec: numcodecs' own where it has one, chunkflow's over google-crc32c
where it has none (numcodecs 0.13, and 0.14-0.15 without the ``crc32c`` package).

numcodecs' codec is the oracle where it exists; the lowest-dependencies run (numcodecs
0.13, see .ci/lowest_deps.py) has none, and runs the rest against the fallback.
"""

from __future__ import annotations

import numpy as np
import pytest

import chunkflow
from chunkflow.codecs import checksums, stages
from chunkflow.codecs.checksums import NUMCODECS_CRC32C, Crc32c, crc32c
from chunkflow.codecs.stages import build_numcodec, make_bytes_stage
from chunkflow.errors import ChunkDecodeError, UnsupportedCodecError

pytestmark = pytest.mark.lowest_deps

PAYLOADS = [b"", b"a", bytes(range(256)) * 17,
            np.random.default_rng(0).integers(0, 2**16, 1000, dtype="<u2")]


@pytest.fixture
def without_numcodecs_crc32c(monkeypatch: pytest.MonkeyPatch) -> None:
    """chunkflow as it runs with a numcodecs that has no crc32c codec."""
    monkeypatch.setattr(stages, "NUMCODECS_CRC32C", None)
    monkeypatch.setattr(stages, "CRC32C_CODECS", (Crc32c,))
    monkeypatch.setattr(checksums, "NUMCODECS_CRC32C", None)


def test_the_checksum_is_crc32c() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value (RFC 3720)
    assert crc32c(np.frombuffer(b"123456789", "u1")) == 0xE3069283


@pytest.mark.skipif(NUMCODECS_CRC32C is None, reason="numcodecs has no crc32c to compare with")
@pytest.mark.parametrize("location", ["end", "start"])
@pytest.mark.parametrize("payload", PAYLOADS, ids=["empty", "one", "bytes", "u2"])
def test_the_same_bytes_as_numcodecs(location: str, payload: object) -> None:
    ours, theirs = Crc32c(location), NUMCODECS_CRC32C(location)  # type: ignore[misc]
    encoded = bytes(ours.encode(payload))
    assert encoded == bytes(theirs.encode(payload))
    assert bytes(ours.decode(encoded)) == bytes(theirs.decode(encoded))
    assert Crc32c.codec_id == theirs.codec_id == "crc32c"


def test_decoding_checks_the_checksum() -> None:
    encoded = bytearray(Crc32c().encode(b"payload"))
    assert bytes(Crc32c().decode(bytes(encoded))) == b"payload"
    encoded[0] ^= 1
    with pytest.raises(ChunkDecodeError, match="crc32c.*checksum mismatch"):
        Crc32c().decode(bytes(encoded))
    with pytest.raises(ChunkDecodeError, match="too short"):
        Crc32c().decode(b"abc")
    out = np.empty(7, "u1")
    Crc32c("start").decode(Crc32c("start").encode(b"payload"), out=out)
    assert out.tobytes() == b"payload"
    with pytest.raises(UnsupportedCodecError, match="location"):
        Crc32c("middle")


def test_build_numcodec_falls_back_only_where_numcodecs_has_none(
        without_numcodecs_crc32c: None) -> None:
    codec = build_numcodec({"id": "crc32c"})
    assert type(codec) is Crc32c and codec.location == "end"
    assert build_numcodec({"id": "crc32c", "location": "start"}).location == "start"
    with pytest.raises(UnsupportedCodecError, match="invalid codec config"):
        build_numcodec({"id": "crc32c", "seed": 1})
    stage = make_bytes_stage("crc32c", {"id": "crc32c"})
    assert type(stage).__name__ == "Crc32cStage"  # decodes as a view, checked


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_arrays_with_crc32c_read_and_write_without_numcodecs_codec(
        without_numcodecs_crc32c: None, zarr_format: int) -> None:
    data = np.arange(40 * 30, dtype="i4").reshape(40, 30)
    if zarr_format == 3:  # crc32c as a compressor, and in the shard index
        z = chunkflow.create_array(None, shape=data.shape, chunks=(8, 8), shards=(16, 16),
                                   dtype="i4", compressors=[{"name": "zstd"}, {"name": "crc32c"}])
    else:
        z = chunkflow.create(data.shape, chunks=(8, 8), dtype="i4", zarr_format=2,
                             compressor={"id": "crc32c"})
    z[:] = data
    z[3:9, 5:7] = -1
    data[3:9, 5:7] = -1
    np.testing.assert_array_equal(z[:], data)


@pytest.mark.skipif(NUMCODECS_CRC32C is None, reason="numcodecs has no crc32c to compare with")
def test_a_sharded_array_is_stored_byte_for_byte_as_with_numcodecs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    data = np.arange(32 * 32, dtype="u2").reshape(32, 32)

    def stored() -> dict[str, bytes]:
        z = chunkflow.create_array(None, shape=data.shape, chunks=(8, 8), shards=(16, 16),
                                   dtype="u2", compressors=[{"name": "crc32c"}])
        z[:] = data
        return {key: bytes(z.store[key]) for key in z.store.list_prefix("")}

    with_numcodecs = stored()
    monkeypatch.setattr(stages, "NUMCODECS_CRC32C", None)
    monkeypatch.setattr(stages, "CRC32C_CODECS", (Crc32c,))
    assert stored() == with_numcodecs
