"""The three datasets of zarrs/zarr_benchmarks, written once into a cache folder.

The suite (``generate_benchmark_array.rs``) writes 1024^3 uint16 arrays (fill value
0) in 256^3 chunks, each element ``(x2 + x1 * x1 // 32 + x0 ** 3) % 65536``:

============  =====================================  ============================
name          codecs                                 the suite's folder
============  =====================================  ============================
uncompressed  bytes                                  ``data/benchmark.zarr``
compressed    bytes, zstd (level 0, no checksum)     ``data/benchmark_compress.zarr``
sharded       256^3 shards of 64^3 inner chunks,     ``data/benchmark_compress_shard.zarr``
              each bytes + zstd (level 0, no
              checksum); the index bytes + crc32c
              at the end (the sharding defaults)
============  =====================================  ============================

chunkflow writes them here (``--quick``: 256^3 in 64^3 chunks of 16^3 inner chunks,
the same proportions), and zarr-python must read every chunk back equal to the
formula before a dataset is used (:func:`ensure`).
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import numpy as np

__all__ = ["DATASETS", "Dataset", "ensure", "expected", "layout"]

ZSTD = {"name": "zstd", "configuration": {"level": 0, "checksum": False}}
DATASETS = ("uncompressed", "compressed", "sharded")


class Dataset:
    """One dataset: its folder, shape, chunk (or shard) and inner chunk shapes."""

    def __init__(self, folder: Path, name: str, side: int) -> None:
        self.name = name
        self.side = side
        self.path = folder / f"{name}-{side}.zarr"
        self.shape = (side,) * 3
        self.chunk = (side // 4,) * 3  # a chunk, or a shard
        self.inner = (side // 16,) * 3 if name == "sharded" else self.chunk

    def chunk_slices(self, inner: bool = False) -> list[tuple[slice, ...]]:
        """The region of every chunk (or inner chunk), in C order."""
        step = self.inner[0] if inner else self.chunk[0]
        starts = range(0, self.side, step)
        return [tuple(slice(s, s + step) for s in corner)
                for corner in itertools.product(starts, repeat=3)]

    def files(self) -> list[Path]:
        """The chunk files (everything but metadata)."""
        return sorted(p for p in self.path.rglob("*") if p.is_file() and p.name != "zarr.json")

    def nbytes_stored(self) -> int:
        return sum(p.stat().st_size for p in self.files())


def layout(folder: Path, side: int) -> dict[str, Dataset]:
    """The three datasets at ``side`` (their folders need not exist yet)."""
    return {name: Dataset(folder, name, side) for name in DATASETS}


def expected(region: tuple[slice, ...]) -> np.ndarray:
    """The suite's values over ``region`` (integer slices with start and stop)."""
    x0, x1, x2 = (np.arange(s.start, s.stop, dtype=np.uint64) for s in region)
    values = (x0 ** 3)[:, None, None] + (x1 * x1 // 32)[None, :, None] + x2[None, None, :]
    return values.astype(np.uint16)  # uint16 wraps: the suite's % 65536


def _write(data: Dataset) -> None:
    import chunkflow  # here: the children import this module and must not load chunkflow

    kwargs: dict[str, object] = {"compressors": None}
    if data.name != "uncompressed":
        kwargs["compressors"] = ZSTD
    if data.name == "sharded":
        kwargs.update(chunks=data.inner, shards=data.chunk)
    else:
        kwargs["chunks"] = data.chunk
    partial = data.path.with_name(data.path.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    z = chunkflow.create_array(str(partial), shape=data.shape, dtype="uint16", fill_value=0,
                               cache=False, **kwargs)
    for region in data.chunk_slices():
        z[region] = expected(region)
    _check_with_zarr(partial, data)
    partial.rename(data.path)  # only a checked dataset gets the name


def _check_with_zarr(path: Path, data: Dataset) -> None:
    import zarr

    z = zarr.open_array(str(path), mode="r")
    assert z.shape == data.shape and z.dtype == np.uint16, (z.shape, z.dtype)
    assert tuple(z.shards or z.chunks) == data.chunk and tuple(z.chunks) == data.inner
    for region in data.chunk_slices():
        if not np.array_equal(z[region], expected(region)):
            raise AssertionError(f"{path}: zarr-python reads {region} differently")


def ensure(folder: Path, side: int) -> dict[str, Dataset]:
    """The three datasets at ``side`` in ``folder``, written (and checked) if missing."""
    folder.mkdir(parents=True, exist_ok=True)
    found = layout(folder, side)
    for data in found.values():
        if not data.path.exists():
            print(f"writing {data.path} (once)", flush=True)
            _write(data)
    return found
