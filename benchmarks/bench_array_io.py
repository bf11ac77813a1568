"""chunkflow vs zarr-python 3 (with and without zarrs) vs tensorstore: array reads and
writes on a local folder.

Run by hand (not part of the test suite)::

    python benchmarks/bench_array_io.py [--repeat 5] [--folder /tmp/bench]

Cases: an 8192x8192 uint16 array in 1024x1024 chunks, blosc lz4 + byte shuffle,
Zarr v3 in a local folder: full write, full read, one column read; and a 4096x4096
uint16 array in 64x64 chunks (4096 small chunks) read whole. Every library writes and
reads its own copy of the same data (the files are in the page cache for all);
chunkflow twice: with ``cache=False`` (like the peers, which cache nothing by default)
and with no arguments at all (the default cache keeps what a read decodes: emptied
before each timed read). Beside
them, the naive floor: numcodecs Blosc and one plain file per chunk on one thread
(written in place, and with a temporary file renamed over the target, as chunkflow
writes). Prints each time as the median [range] of ``--repeat`` runs (full reads and
writes interleaved between the libraries), chunkflow's ratio to each peer and to the
floor, and chunkflow's cost per small chunk.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from importlib.util import find_spec
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


def timings(repeat: int, func: Callable[[], object]) -> list[float]:
    """Seconds of each of ``repeat`` runs of ``func``."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return times


def best_of(repeat: int, func: Callable[[], object]) -> float:
    return min(timings(repeat, func))


def median_range(times: list[float], scale: float = 1e3) -> str:
    """``median [min-max]`` of ``times`` (in ms by default)."""
    return (f"{statistics.median(times) * scale:.1f} "
            f"[{min(times) * scale:.1f}-{max(times) * scale:.1f}]")


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


class ChunkflowDefaultCase(ChunkflowCase):
    """chunkflow with no arguments at all: the process-wide cache keeps what it reads.

    Each timed read is a first read (the cache is emptied before it, outside the
    timing): it measures reading plus keeping the chunks, not cache hits.
    """

    name = "chunkflow default"

    def __init__(self, path: Path, shape, chunks) -> None:
        self.array = chunkflow.create(shape, chunks=chunks, dtype="uint16", store=str(path),
                                      overwrite=True)

    def prepare(self) -> None:
        chunkflow.cache.get_cache().clear()


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


class ZarrsCase(ZarrCase):
    """zarr-python 3 with the zarrs codec pipeline (Rust), as the issue's peer."""

    name = "zarrs"
    settings = {"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"}

    def __init__(self, path: Path, shape, chunks) -> None:
        with zarr.config.set(self.settings):
            super().__init__(path, shape, chunks)

    def write(self, data: np.ndarray) -> None:
        with zarr.config.set(self.settings):
            super().write(data)

    def read(self) -> np.ndarray:
        with zarr.config.set(self.settings):
            return super().read()

    def column(self, index: int) -> np.ndarray:
        with zarr.config.set(self.settings):
            return super().column(index)


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


class FloorCase:
    """The naive floor: numcodecs Blosc on each chunk, one file per chunk, one thread.

    ``write`` encodes and writes each file in place; ``write_atomic`` writes a
    temporary file next to it and renames it over the target, as chunkflow does (the
    difference is what atomic writes cost); ``read`` reads each file and decodes it
    into a chunk buffer, then copies that into the output.
    """

    name = "floor"

    def __init__(self, path: Path, shape, chunks) -> None:
        from numcodecs import Blosc

        self.codec = Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE, typesize=2)
        self.path, self.shape, self.chunks = path, shape, chunks
        self.grid = [(i, j) for i in range(shape[0] // chunks[0])
                     for j in range(shape[1] // chunks[1])]
        path.mkdir(parents=True, exist_ok=True)

    def _region(self, i: int, j: int) -> tuple[slice, slice]:
        rows, cols = self.chunks
        return slice(i * rows, (i + 1) * rows), slice(j * cols, (j + 1) * cols)

    def _file(self, i: int, j: int) -> str:
        return str(self.path / f"{i}.{j}")

    def write(self, data: np.ndarray, atomic: bool = False) -> None:
        for i, j in self.grid:
            encoded = self.codec.encode(np.ascontiguousarray(data[self._region(i, j)]))
            target = self._file(i, j)
            name = f"{target}.{os.urandom(6).hex()}.tmp" if atomic else target
            with open(name, "wb") as file:
                file.write(encoded)
            if atomic:
                os.replace(name, target)

    def write_atomic(self, data: np.ndarray) -> None:
        self.write(data, atomic=True)

    def read(self) -> np.ndarray:
        out = np.empty(self.shape, "uint16")
        chunk = np.empty(self.chunks, "uint16")
        for i, j in self.grid:
            with open(self._file(i, j), "rb") as file:
                self.codec.decode(file.read(), out=chunk)
            out[self._region(i, j)] = chunk
        return out


def run(folder: Path, repeat: int, quick: bool = False) -> None:
    cases = [ChunkflowCase, ChunkflowDefaultCase]
    cases += [ZarrCase] if zarr is not None else []
    cases += [ZarrsCase] if zarr is not None and find_spec("zarrs") is not None else []
    cases += [TensorstoreCase] if ts is not None else []
    big = make_data((2048, 2048) if quick else (8192, 8192))
    small = make_data((1024, 1024) if quick else (4096, 4096), seed=1)
    column = big.shape[1] // 2
    small_chunks = small.size // (64 * 64)
    mb_big, mb_small = big.nbytes / 1e6, small.nbytes / 1e6
    results: dict[str, dict[str, list[float]]] = {}
    floor = FloorCase(folder / "floor-big", big.shape, (1024, 1024))
    floor_times: dict[str, list[float]] = {"full write": [], "full write, temp + rename": [],
                                           "full read": []}
    handles = {case_type.name: case_type(folder / f"{case_type.name}-big", big.shape,
                                         (1024, 1024)) for case_type in cases}
    for name in handles:
        results[name] = {"full write": [], "full read": []}
    # Interleaved, one run of each in turn: noise on a shared machine hits all alike.
    for _ in range(repeat):
        for name, handle in handles.items():
            results[name]["full write"] += timings(1, partial(handle.write, big))
        floor_times["full write"] += timings(1, partial(floor.write, big))
        floor_times["full write, temp + rename"] += timings(1, partial(floor.write_atomic, big))
        for name, handle in handles.items():
            getattr(handle, "prepare", lambda: None)()
            results[name]["full read"] += timings(1, handle.read)
        floor_times["full read"] += timings(1, floor.read)
    assert np.array_equal(floor.read(), big), "floor: full read differs"
    for case_type in cases:
        name = case_type.name
        big_case = handles[name]
        small_case = case_type(folder / f"{name}-small", small.shape, (64, 64))
        prepare = getattr(big_case, "prepare", lambda: None)
        results[name]["column read"] = [timings(1, partial(big_case.column, column))[0]
                                        for _ in range(repeat) if prepare() is None]
        small_case.write(small)
        results[name]["small-chunk read"] = [timings(1, small_case.read)[0]
                                             for _ in range(repeat) if prepare() is None]
        assert np.array_equal(big_case.read(), big), f"{name}: full read differs"
        assert np.array_equal(small_case.read(), small), f"{name}: small read differs"
        assert np.array_equal(big_case.column(column), big[:, column]), f"{name}: column differs"

    print(f"{big.shape[0]}^2 uint16 in 1024^2 chunks, blosc lz4 + shuffle, local folder; "
          f"ms, median [range] of {repeat} runs; ratios = peer's time / chunkflow's "
          "(above 1: chunkflow is faster), floor ratio = chunkflow's time / floor's")
    sizes = {"full write": mb_big, "full read": mb_big, "column read": mb_big,
             "small-chunk read": mb_small}
    print(f"{'case':<18}" + "".join(f"{name:>20}" for name in results) + f"{'floor':>20}"
          + "   ratios")
    for label in sizes:
        row = f"{label:<18}"
        for name in results:
            row += f"{median_range(results[name][label]):>20}"
        ours = statistics.median(results["chunkflow"][label])
        ratios = [f"x{statistics.median(results[name][label]) / ours:.2f} vs {name}"
                  for name in results if name != "chunkflow"]
        if label in floor_times:
            row += f"{median_range(floor_times[label]):>20}"
            ratios.append(f"{ours / statistics.median(floor_times[label]):.2f}x the floor's time")
        else:
            row += f"{'':>20}"
        print(row + "   " + ", ".join(ratios))
    plain = statistics.median(floor_times["full write"])
    atomic = statistics.median(floor_times["full write, temp + rename"])
    ours = statistics.median(results["chunkflow"]["full write"])
    spread = median_range(floor_times["full write, temp + rename"])
    print(f"floor with a temporary file + rename per chunk: {spread} ms, "
          f"{atomic / plain:.2f}x the plain floor; chunkflow {ours / atomic:.2f}x that")
    for label in ("full write", "full read"):
        mbs = mb_big / statistics.median(results["chunkflow"][label])
        print(f"chunkflow {label}: {mbs:.0f} MB/s")
    per_chunk = statistics.median(results["chunkflow"]["small-chunk read"]) / small_chunks * 1e6
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
