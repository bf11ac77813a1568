"""chunkflow vs zarr-python 3 vs tensorstore: array reads and writes on a local folder.

Run by hand (not part of the test suite)::

    python benchmarks/bench_array_io.py [--repeat 5] [--folder /tmp/bench]

Cases: an 8192x8192 uint16 array in 1024x1024 chunks, blosc lz4 + byte shuffle,
Zarr v3 in a local folder: full write, full read, one column read; and a 4096x4096
uint16 array in 64x64 chunks (4096 small chunks) read whole. Every library writes and
reads its own copy of the same data; each timing is the best of ``--repeat`` runs (the
files are in the page cache for all three). Prints MB/s, chunkflow's ratio to each peer,
and chunkflow's cost per small chunk.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

import chunkflow

try:
    import zarr
    from zarr.codecs import BloscCodec
except ImportError:  # the peers are optional for a quick look
    zarr = None
try:
    import tensorstore as ts
except ImportError:
    ts = None


def make_data(shape: tuple[int, int], seed: int = 0) -> np.ndarray:
    """A smooth image plus a little noise: compresses like real microscopy data."""
    rows = np.arange(shape[0], dtype=np.float32)[:, None]
    cols = np.arange(shape[1], dtype=np.float32)[None, :]
    smooth = 2000 + 1000 * np.sin(rows / 300) * np.cos(cols / 500)
    noise = np.random.default_rng(seed).integers(0, 16, size=shape, dtype=np.uint16)
    return (smooth.astype(np.uint16) + noise).astype(np.uint16)


def best_of(repeat: int, func: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


class ChunkflowCase:
    name = "chunkflow"

    def __init__(self, path: Path, shape, chunks) -> None:
        # No decoded-chunk cache: repeated reads must measure reading, not cache hits
        # (neither peer caches decoded chunks by default either).
        self.array = chunkflow.create(shape, chunks=chunks, dtype="uint16", store=str(path),
                                      overwrite=True, cache=False)

    def write(self, data: np.ndarray) -> None:
        self.array[:] = data

    def read(self) -> np.ndarray:
        return self.array[:]

    def column(self, index: int) -> np.ndarray:
        return self.array[:, index]


class ZarrCase:
    name = "zarr-python"

    def __init__(self, path: Path, shape, chunks) -> None:
        self.array = zarr.create_array(
            store=str(path), shape=shape, chunks=chunks, dtype="uint16",
            compressors=BloscCodec(cname="lz4", clevel=5, shuffle="shuffle"),
            overwrite=True, fill_value=0,
        )

    def write(self, data: np.ndarray) -> None:
        self.array[:] = data

    def read(self) -> np.ndarray:
        return self.array[:]

    def column(self, index: int) -> np.ndarray:
        return self.array[:, index]


class TensorstoreCase:
    name = "tensorstore"

    def __init__(self, path: Path, shape, chunks) -> None:
        spec = {
            "driver": "zarr3",
            "kvstore": {"driver": "file", "path": str(path)},
            "metadata": {
                "shape": list(shape),
                "data_type": "uint16",
                "chunk_grid": {"name": "regular",
                               "configuration": {"chunk_shape": list(chunks)}},
                "codecs": [
                    {"name": "bytes", "configuration": {"endian": "little"}},
                    {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                                        "shuffle": "shuffle", "typesize": 2,
                                                        "blocksize": 0}},
                ],
                "fill_value": 0,
            },
        }
        self.array = ts.open(spec, create=True, delete_existing=True).result()

    def write(self, data: np.ndarray) -> None:
        self.array.write(data).result()

    def read(self) -> np.ndarray:
        return self.array.read().result()

    def column(self, index: int) -> np.ndarray:
        return self.array[:, index].read().result()


def run(folder: Path, repeat: int, quick: bool = False) -> None:
    cases = [ChunkflowCase]
    cases += [ZarrCase] if zarr is not None else []
    cases += [TensorstoreCase] if ts is not None else []
    big = make_data((2048, 2048) if quick else (8192, 8192))
    small = make_data((1024, 1024) if quick else (4096, 4096), seed=1)
    column = big.shape[1] // 2
    small_chunks = small.size // (64 * 64)
    mb_big, mb_small = big.nbytes / 1e6, small.nbytes / 1e6
    results: dict[str, dict[str, float]] = {}
    for case_type in cases:
        name = case_type.name
        big_case = case_type(folder / f"{name}-big", big.shape, (1024, 1024))
        small_case = case_type(folder / f"{name}-small", small.shape, (64, 64))
        timings = {
            "full write": best_of(repeat, partial(big_case.write, big)),
            "full read": best_of(repeat, big_case.read),
            "column read": best_of(repeat, partial(big_case.column, column)),
        }
        small_case.write(small)
        timings["small-chunk read"] = best_of(repeat, small_case.read)
        assert np.array_equal(big_case.read(), big), f"{name}: full read differs"
        assert np.array_equal(small_case.read(), small), f"{name}: small read differs"
        assert np.array_equal(big_case.column(column), big[:, column]), f"{name}: column differs"
        results[name] = timings

    sizes = {"full write": mb_big, "full read": mb_big, "column read": mb_big,
             "small-chunk read": mb_small}
    print(f"{'case':<18}" + "".join(f"{name:>16}" for name in results) + "   ratios")
    for label, megabytes in sizes.items():
        row = f"{label:<18}"
        for name in results:
            seconds = results[name][label]
            row += f"{megabytes / seconds:>11.0f} MB/s" if label != "column read" else \
                f"{seconds * 1000:>13.1f} ms"
        ours = results["chunkflow"][label]
        ratios = [f"x{results[name][label] / ours:.2f} vs {name}" for name in results
                  if name != "chunkflow"]
        print(row + "   " + ", ".join(ratios))
    per_chunk = results["chunkflow"]["small-chunk read"] / small_chunks * 1e6
    print(f"chunkflow small-chunk read: {per_chunk:.1f} µs per chunk ({small_chunks} chunks "
          "of 64x64)")
    print(f"chunkflow indexer alone: {indexer_cost_per_chunk(repeat) * 1e6:.2f} µs per chunk "
          "(the projections of a whole 4096x4096 array in 64x64 chunks; target under 5 µs)")


def indexer_cost_per_chunk(repeat: int) -> float:
    """Seconds per chunk to build the projections of a whole-array selection."""
    from chunkflow.grid import RegularChunkGrid
    from chunkflow.indexing import BasicIndexer

    grid = RegularChunkGrid((4096, 4096), (64, 64))
    seconds = best_of(max(repeat, 5), lambda: list(BasicIndexer((slice(None), slice(None)), grid)))
    return seconds / grid.nchunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--folder", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help="2048^2 and 1024^2 arrays")
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="chunkflow-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        run(folder, args.repeat, args.quick)
    finally:
        if args.folder is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
