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
before each timed read). Beside them, the floor (see :class:`FloorCase`): the same chunks
encoded or decoded with numcodecs and written or read with plain file calls on as many
threads as chunkflow's I/O pool, stage by stage (encode alone; written in place; written
to a temporary file renamed over the target, chunkflow's crash-safety contract, which is
the floor of the write row). Prints each time as the median [range] of ``--repeat`` runs
(full reads and writes interleaved between the libraries and the floor stages, in an
order that turns round by one each run),
chunkflow's ratio to each peer and to the floor, chunkflow's cost per small chunk, and
the load average before and after (the machine may be shared). ``--full-only`` runs
the full writes and reads alone.
"""

from __future__ import annotations

import argparse
import itertools
import os
import queue
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from importlib.util import find_spec
from pathlib import Path

import numpy as np

import chunkflow
from chunkflow.storage import replaced

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
    """The floor: the same chunks encoded or decoded with numcodecs and moved with plain
    file calls, on as many threads as chunkflow's I/O pool, no Zarr library in between.

    Each thread takes groups of two chunks as it becomes free (as chunkflow does) and
    reuses its own buffers: a contiguous chunk (numcodecs needs contiguous input, so a
    chunk of a larger array is copied into it first, as every library does) and a read
    buffer. Stages, each timed alone in the same run:

    - ``encode``: copy each chunk into the thread's buffer and compress it, nothing written;
    - ``write_in_place``: ``encode``, then open the chunk's file with ``O_TRUNC`` and write
      it (what zarrs and tensorstore do; a crash can leave a torn chunk);
    - ``write_atomic``: ``encode``, then write a temporary file and rename it over the
      chunk's file, holding the old file open across the rename and closing it on
      background threads (so the rename does not free it under the folder's lock and wait
      for the disk's discard; see ``chunkflow.storage.replaced``): chunkflow's contract
      (a reader or a crash sees the old chunk or the new one) at its lowest cost;
    - ``write_atomic_naive``: the same without holding the old file (the rename frees it);
    - ``read_bytes``: read each file into the thread's buffer, nothing decoded;
    - ``read``: ``read_bytes``, decompress into the thread's chunk buffer and copy it into
      a new output array (a chunk of a larger array is a strided view: no library can
      decompress straight into it).
    """

    name = "floor"

    def __init__(self, path: Path, shape, chunks, threads: int | None = None) -> None:
        from numcodecs import Blosc

        from chunkflow.engine.pool import io_threads

        self.codec = Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE, typesize=2)
        self.path, self.shape, self.chunks = path, shape, chunks
        grid = [(i, j) for i in range(shape[0] // chunks[0]) for j in range(shape[1] // chunks[1])]
        self.groups = [grid[start:start + 2] for start in range(0, len(grid), 2)]
        self.threads = threads or io_threads()
        self.pool = ThreadPoolExecutor(self.threads)
        self.local = threading.local()
        self.closing: queue.Queue[int] = queue.Queue()
        for _ in range(4):  # freeing waits on the disk: a few threads keep up with the writers
            threading.Thread(target=self._closer, daemon=True).start()
        self.count = itertools.count()
        for i in range(shape[0] // chunks[0]):
            (path / str(i)).mkdir(parents=True, exist_ok=True)

    def _closer(self) -> None:
        while True:
            os.close(self.closing.get())
            self.closing.task_done()

    def settle(self) -> None:
        """Wait until the old files ``write_atomic`` replaced are freed."""
        self.closing.join()

    def _buffers(self) -> tuple[np.ndarray, np.ndarray]:
        buffers = getattr(self.local, "buffers", None)
        if buffers is None:
            nbytes = self.chunks[0] * self.chunks[1] * 2
            buffers = self.local.buffers = (np.empty(self.chunks, "uint16"),
                                            np.empty(nbytes + 64, np.uint8))
        return buffers

    def _region(self, i: int, j: int) -> tuple[slice, slice]:
        rows, cols = self.chunks
        return slice(i * rows, (i + 1) * rows), slice(j * cols, (j + 1) * cols)

    def _file(self, i: int, j: int) -> str:
        return str(self.path / str(i) / str(j))

    def _each(self, func: Callable[[int, int], object]) -> None:
        list(self.pool.map(lambda group: [func(i, j) for i, j in group], self.groups))

    def _encoded(self, data: np.ndarray, i: int, j: int) -> bytes:
        chunk = self._buffers()[0]
        np.copyto(chunk, data[self._region(i, j)])
        return self.codec.encode(chunk)

    def encode(self, data: np.ndarray) -> None:
        self._each(partial(self._encoded, data))

    def write_in_place(self, data: np.ndarray) -> None:
        def one(i: int, j: int) -> None:
            encoded = self._encoded(data, i, j)
            fd = os.open(self._file(i, j), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
            os.write(fd, encoded)
            os.close(fd)

        self._each(one)

    def write_atomic(self, data: np.ndarray, hold: bool = True) -> None:
        def one(i: int, j: int) -> None:
            encoded = self._encoded(data, i, j)
            target = self._file(i, j)
            tmp = f"{target}.{next(self.count):x}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            os.write(fd, encoded)
            old = None
            if hold and hasattr(os, "O_PATH"):
                try:
                    old = os.open(target, os.O_PATH | os.O_NOFOLLOW)
                except FileNotFoundError:
                    pass
            os.replace(tmp, target)
            os.close(fd)
            if old is not None:
                self.closing.put(old)

        self._each(one)

    def write_atomic_naive(self, data: np.ndarray) -> None:
        self.write_atomic(data, hold=False)

    def _fetch(self, i: int, j: int) -> memoryview:
        raw = self._buffers()[1]
        fd = os.open(self._file(i, j), os.O_RDONLY)
        try:
            return raw.data[:os.readv(fd, [raw.data])]
        finally:
            os.close(fd)

    def read_bytes(self) -> None:
        self._each(self._fetch)

    def read(self) -> np.ndarray:
        out = np.empty(self.shape, "uint16")

        def one(i: int, j: int) -> None:
            chunk = self._buffers()[0]
            self.codec.decode(self._fetch(i, j), out=chunk)
            out[self._region(i, j)] = chunk

        self._each(one)
        return out


def run(folder: Path, repeat: int, quick: bool = False, full_only: bool = False) -> None:
    cases = [ChunkflowCase, ChunkflowDefaultCase]
    cases += [ZarrCase] if zarr is not None else []
    cases += [ZarrsCase] if zarr is not None and find_spec("zarrs") is not None else []
    cases += [TensorstoreCase] if ts is not None else []
    big = make_data((2048, 2048) if quick else (8192, 8192))
    print(f"load before: {load()}")
    floor = FloorCase(folder / "floor-big", big.shape, (1024, 1024))
    write_stages = {"encode alone": partial(floor.encode, big),
                    "encode + write in place": partial(floor.write_in_place, big),
                    "encode + temp + rename": partial(floor.write_atomic, big),
                    "the same, old file freed in the rename": partial(floor.write_atomic_naive, big)}
    read_stages = {"read bytes alone": floor.read_bytes, "read + decode + copy": floor.read}
    floor_times: dict[str, list[float]] = {stage: [] for stage in [*write_stages, *read_stages]}
    handles = {case_type.name: case_type(folder / f"{case_type.name}-big", big.shape,
                                         (1024, 1024)) for case_type in cases}
    results: dict[str, dict[str, list[float]]] = {
        name: {"full write": [], "full read": []} for name in handles}
    def settle() -> None:
        # Files replaced by the last write are freed in the background (chunkflow's and
        # the floor's): not while the next case is timed.
        replaced.drain()
        floor.settle()

    writes = [(results[name]["full write"], partial(handle.write, big))
              for name, handle in handles.items()]
    writes += [(floor_times[stage], func) for stage, func in write_stages.items()]
    reads = [(results[name]["full read"], handle.read, getattr(handle, "prepare", None))
             for name, handle in handles.items()]
    reads += [(floor_times[stage], func, None) for stage, func in read_stages.items()]
    # Interleaved, one run of each in turn, starting one later each round: noise on a
    # shared machine (and the disk still busy with the writes) hits all alike.
    for round_ in range(repeat):
        for times, func in writes[round_ % len(writes):] + writes[:round_ % len(writes)]:
            settle()
            times += timings(1, func)
        settle()
        for times, func, prepare in reads[round_ % len(reads):] + reads[:round_ % len(reads)]:
            if prepare is not None:
                prepare()
            times += timings(1, func)
    in_a_row = rewrites_in_a_row(handles, big, repeat)
    assert np.array_equal(floor.read(), big), "floor: full read differs"
    for name, handle in handles.items():
        assert np.array_equal(handle.read(), big), f"{name}: full read differs"
    small = make_data((1024, 1024) if quick else (4096, 4096), seed=1)
    if not full_only:
        small_cases(folder, cases, handles, results, big, small, repeat)
    print(f"load after: {load()}")

    print(f"{big.shape[0]}^2 uint16 in 1024^2 chunks, blosc lz4 + shuffle, local folder, "
          f"{floor.threads} I/O threads; ms, median [range] of {repeat} runs; ratios = peer's "
          "time / chunkflow's (above 1: chunkflow is faster), floor ratio = chunkflow's time / "
          "floor's (writes: encode + temp + rename)")
    floors = {"full write": floor_times["encode + temp + rename"],
              "full read": floor_times["read + decode + copy"]}
    print_table(results, floors, big, small)
    print("floor stages (numcodecs and plain files on the same threads):")
    for stage, times in floor_times.items():
        label = "full write" if stage in write_stages else "full read"
        ours = statistics.median(results["chunkflow"][label])
        print(f"  {stage:<40}{median_range(times):>22}   chunkflow's {label}: "
              f"{ours / statistics.median(times):.2f}x this")
    print(f"{REWRITES} rewrites in a row, the replaced files freed at the end (their freeing "
          "counted; ms per write, median [range]): " + ", ".join(
              f"{name} {median_range(times)}" for name, times in in_a_row.items()))
    if not full_only:
        print(f"chunkflow indexer alone: {indexer_cost_per_chunk(repeat) * 1e6:.2f} µs per "
              "chunk (the projections of a whole 4096x4096 array in 64x64 chunks; target under "
              "5 µs)")


#: Writes of the whole array in a row in :func:`rewrites_in_a_row`.
REWRITES = 8


def rewrites_in_a_row(handles, big: np.ndarray, repeat: int) -> dict[str, list[float]]:
    """Seconds per write of :data:`REWRITES` whole writes in a row, until every file they
    replaced is freed: chunkflow frees replaced files in the background (see
    ``chunkflow.storage.replaced``), and a single write's time leaves that work out."""
    times: dict[str, list[float]] = {name: [] for name in ("chunkflow", "zarrs") if name in handles}

    def rewrite(handle) -> None:
        for _ in range(REWRITES):
            handle.write(big)
        replaced.drain()

    for _ in range(max(1, repeat // 2)):
        for name in times:
            replaced.drain()
            times[name] += [t / REWRITES for t in timings(1, partial(rewrite, handles[name]))]
    return times


def load() -> str:
    """The 1, 5 and 15 minute load averages (on a shared machine, read timings with them)."""
    try:
        with open("/proc/loadavg") as file:
            return " ".join(file.read().split()[:3])
    except OSError:
        return "unknown"


def small_cases(folder: Path, cases, handles, results, big: np.ndarray, small: np.ndarray,
                repeat: int) -> None:
    """The column read of the big array and the whole read of the small-chunk array."""
    column = big.shape[1] // 2
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
        assert np.array_equal(small_case.read(), small), f"{name}: small read differs"
        assert np.array_equal(big_case.column(column), big[:, column]), f"{name}: column differs"


def print_table(results, floors, big: np.ndarray, small: np.ndarray) -> None:
    """One row per case: each library's time, the floor's, and the ratios."""
    labels = [label for label in ("full write", "full read", "column read", "small-chunk read")
              if label in results["chunkflow"]]
    print(f"{'case':<18}" + "".join(f"{name:>20}" for name in results) + f"{'floor':>20}"
          + "   ratios")
    for label in labels:
        row = f"{label:<18}"
        for name in results:
            row += f"{median_range(results[name][label]):>20}"
        ours = statistics.median(results["chunkflow"][label])
        ratios = [f"x{statistics.median(results[name][label]) / ours:.2f} vs {name}"
                  for name in results if name != "chunkflow"]
        if label in floors:
            row += f"{median_range(floors[label]):>20}"
            ratios.append(f"{ours / statistics.median(floors[label]):.2f}x the floor's time")
        else:
            row += f"{'':>20}"
        print(row + "   " + ", ".join(ratios))
    for label in ("full write", "full read"):
        mbs = big.nbytes / 1e6 / statistics.median(results["chunkflow"][label])
        print(f"chunkflow {label}: {mbs:.0f} MB/s")
    if "small-chunk read" in labels:
        chunks = small.size // (64 * 64)
        per_chunk = statistics.median(results["chunkflow"]["small-chunk read"]) / chunks * 1e6
        print(f"chunkflow small-chunk read: {per_chunk:.1f} µs per chunk ({chunks} chunks "
              "of 64x64)")


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
    parser.add_argument("--full-only", action="store_true",
                        help="only the full writes and reads (no column or small-chunk reads)")
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="chunkflow-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        run(folder, args.repeat, args.quick, args.full_only)
    finally:
        if args.folder is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
