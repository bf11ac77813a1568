"""A chunk that inflates far past its decoded size is refused before it is inflated:
decoding one chunk never needs much more memory than that chunk holds."""

from __future__ import annotations

import bz2
import lzma
import shutil
import subprocess
import tracemalloc
import zlib
from collections.abc import Callable

import numpy as np
import pytest

import chunkflow
from chunkflow.errors import ChunkDecodeError
from chunkflow.storage import MemoryStore

BOMB_BYTES = 256 * 2**20  # what the hostile chunk inflates to
PIECE = bytes(2**20)


def _stream(compressor: object) -> bytes:
    """Compress BOMB_BYTES of zeros a piece at a time (the test itself stays small)."""
    parts = [compressor.compress(PIECE) for _ in range(BOMB_BYTES // len(PIECE))]  # type: ignore[attr-defined]
    return b"".join(parts) + compressor.flush()  # type: ignore[attr-defined]


def _zstd_without_size() -> bytes:
    if shutil.which("zstd") is None:
        pytest.skip("the zstd command is not installed")
    # Streaming from a pipe: the frame does not announce its content size.
    done = subprocess.run(f"head -c {BOMB_BYTES} /dev/zero | zstd -q -c", shell=True,
                          capture_output=True, check=True)
    return done.stdout


BOMBS: dict[str, tuple[Callable[[], bytes], dict]] = {
    "zlib": (lambda: _stream(zlib.compressobj(9)), {"id": "zlib", "level": 1}),
    "gzip": (lambda: _stream(zlib.compressobj(9, zlib.DEFLATED, 31)), {"id": "gzip", "level": 1}),
    "bz2": (lambda: _stream(bz2.BZ2Compressor(9)), {"id": "bz2", "level": 1}),
    "lzma": (lambda: _stream(lzma.LZMACompressor()), {"id": "lzma"}),
    "zstd": (_zstd_without_size, {"id": "zstd", "level": 1}),
}


def _read_peak(z: chunkflow.Array) -> tuple[BaseException | None, int]:
    tracemalloc.start()
    error = None
    try:
        z[:]
    except Exception as err:  # the point is which error, checked by the caller
        error = err
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return error, peak


@pytest.mark.slow
@pytest.mark.parametrize("name", list(BOMBS))
@pytest.mark.parametrize("fmt", [2, 3])
def test_bomb_is_refused_in_bounded_memory(name: str, fmt: int) -> None:
    make, v2_config = BOMBS[name]
    if fmt == 3 and name in ("bz2", "lzma", "zlib"):
        codecs = [{"name": "bytes", "configuration": {"endian": "little"}},
                  {"name": f"numcodecs.{name}", "configuration": {k: v for k, v in v2_config.items()
                                                                 if k != "id"}}]
    elif fmt == 3:
        level = {"configuration": {"level": 1}}
        codecs = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": name, **level}]
    store = MemoryStore()
    kwargs = {"compressor": v2_config} if fmt == 2 else {"codecs": codecs}
    z = chunkflow.create((4096,), chunks=(1024,), dtype="u1", store=store, path="img",
                         zarr_format=fmt, cache=False, **kwargs)
    bomb = make()
    assert len(bomb) < BOMB_BYTES // 100
    key = "img/0" if fmt == 2 else "img/c/0"
    store[key] = bomb
    error, peak = _read_peak(z)
    assert isinstance(error, ChunkDecodeError), error
    assert "'img'" in str(error) or "img" in str(error)
    assert peak < 16 * 2**20, f"peak {peak / 2**20:.0f} MiB while refusing a {name} bomb"


@pytest.mark.slow
def test_variable_length_chunks_are_capped_too() -> None:
    import numcodecs

    from chunkflow.codecs.bounded import VARIABLE_MIN_BYTES, bounded_decode

    bomb = _stream(zlib.compressobj(9))
    with pytest.raises(ChunkDecodeError, match="more than"):
        bounded_decode(numcodecs.Zlib(), bomb, VARIABLE_MIN_BYTES // 4, "zlib")
    ok = numcodecs.Zlib().encode(np.arange(1000, dtype="u2"))
    assert len(bounded_decode(numcodecs.Zlib(), ok, 2000, "zlib")) == 2000
