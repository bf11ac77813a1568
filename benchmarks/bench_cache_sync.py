"""Chunk cache and synchronized writes: chunkflow vs zarr-python 3's best cache.

Run by hand (not part of the test suite)::

    python benchmarks/bench_cache_sync.py [--repeat 3]

Cases:

1. 300 random 256x256 windows of an 8192x8192 uint16 array (1024x1024 chunks, blosc
   lz4 + shuffle, local folder), read twice. Prints chunkflow's first and second pass,
   the ratio between them, and zarr-python 3 reading the same windows through its
   ``CacheStore`` (an in-memory cache of encoded chunks; the second pass is its best).
2. One 256x256 window across 4 chunks read from a warm cache, again and again:
   microseconds per read (median [range]) beside a numpy copy of the same window from
   memory, and beside the floor of any cache of decoded chunks: a new array filled
   from the 4 chunks in memory, one numpy assignment each (no lookup, no indexing).
   Read again with nothing else touching the cache, chunkflow copies the window it
   kept; a fourth row reads two such windows in turn, so that every read looks its
   chunks up and assembles them (the general hit path).
   ``--window-only`` runs just this case.
3. The same 8192x8192 data written from dask (threaded scheduler) in blocks of
   1500x1500 into 1024x1024 chunks of an array with a ``ThreadSynchronizer``, against
   the same data written in aligned 1024x1024 blocks with ``da.store``. Two ways to
   write the unaligned blocks: ``chunkflow.store`` (regroups blocks onto the chunk grid
   inside the graph: every chunk written once, by one task) and plain
   ``da.store(lock=False)`` (each shared chunk read-modify-written under its lock once
   per block that touches it). Prints the times and the ratios to the aligned time.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import dask
import dask.array as da
import numpy as np

import chunkflow
from chunkflow.cache import ChunkCache
from chunkflow.sync import ThreadSynchronizer

sys.path.insert(0, str(Path(__file__).parent))
from bench_array_io import make_data

try:
    import zarr
    from zarr.codecs import BloscCodec
    from zarr.experimental.cache_store import CacheStore
    from zarr.storage import LocalStore as ZarrLocalStore
    from zarr.storage import MemoryStore as ZarrMemoryStore
except ImportError:
    zarr = None

SHAPE = (8192, 8192)
CHUNKS = (1024, 1024)
WINDOW = 256


def windows(count: int, seed: int = 0) -> list[tuple[slice, slice]]:
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, SHAPE[0] - WINDOW, size=(count, 2))
    return [(slice(int(r), int(r) + WINDOW), slice(int(c), int(c) + WINDOW)) for r, c in starts]


def timed(func) -> float:
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def read_all(array, regions) -> None:
    for region in regions:
        array[region]


def bench_windows(folder: Path, data: np.ndarray, repeat: int) -> None:
    regions = windows(300)
    path = folder / "windows.zarr"
    chunkflow.array(data, chunks=CHUNKS, store=str(path), overwrite=True)
    first, second = [], []
    for _ in range(repeat):
        z = chunkflow.open(str(path), mode="r", cache=ChunkCache(max_bytes=1 << 30))
        first.append(timed(partial(read_all, z, regions)))
        second.append(timed(partial(read_all, z, regions)))
    ours_first, ours_second = min(first), min(second)
    stats = z.options.resolve_cache().stats
    print(f"300 windows, chunkflow first pass   {ours_first * 1000:8.1f} ms")
    print(f"300 windows, chunkflow second pass  {ours_second * 1000:8.1f} ms   "
          f"x{ours_first / ours_second:.1f} faster than its first pass   ({stats!r})")
    if zarr is None:
        return
    zpath = folder / "windows-zarr.zarr"
    zarr.create_array(store=str(zpath), shape=SHAPE, chunks=CHUNKS, dtype="uint16",
                      compressors=BloscCodec(cname="lz4", clevel=5, shuffle="shuffle"),
                      overwrite=True, fill_value=0)[:] = data
    best = []
    for _ in range(repeat):
        cached = CacheStore(ZarrLocalStore(str(zpath), read_only=True),
                            cache_store=ZarrMemoryStore(), max_size=1 << 30)
        zc = zarr.open_array(cached, mode="r")
        read_all(zc, regions)  # fill its cache
        best.append(timed(partial(read_all, zc, regions)))
    peer = min(best)
    print(f"300 windows, zarr-python CacheStore {peer * 1000:8.1f} ms (second pass)   "
          f"chunkflow second pass x{peer / ours_second:.1f} faster")


def bench_cached_window(folder: Path, data: np.ndarray, repeat: int) -> None:
    """One 256x256 window across 4 chunks, read again and again from a warm cache,
    beside a numpy copy of the same window from memory (the floor)."""
    path = folder / "window.zarr"
    chunkflow.array(data, chunks=CHUNKS, store=str(path), overwrite=True)
    corner = CHUNKS[0] - WINDOW // 2
    region = (slice(corner, corner + WINDOW), slice(corner, corner + WINDOW))
    count = 2000

    def per_read(func) -> float:
        # CPU time of this thread: the reads are single-threaded, and on a busy
        # machine wall time mostly measures the other processes.
        start = time.thread_time()
        for _ in range(count):  # results dropped at once, as a viewer would
            func()
        return (time.thread_time() - start) / count

    readers = {
        # The default path: the process-wide cache, no tuning arguments.
        "chunkflow, default cache": chunkflow.open(str(path), mode="r"),
        "chunkflow, own ChunkCache": chunkflow.open(str(path), mode="r",
                                                    cache=ChunkCache(max_bytes=1 << 30)),
    }
    for array in readers.values():
        np.testing.assert_array_equal(array[region], data[region])  # warm
    # Two windows in turn: each read changes the cache (its chunks become the most
    # recent), so no read finds its window kept.
    other = (slice(corner + 1, corner + WINDOW + 1), region[1])
    in_turn = readers["chunkflow, default cache"]
    np.testing.assert_array_equal(in_turn[other], data[other])
    turns = [region, other]

    def two_windows() -> None:
        in_turn[turns[0]]
        turns.reverse()
    assemble = _assembly(data, region)
    np.testing.assert_array_equal(assemble(), data[region])
    locked = _locked_lru_assembly(data, region)
    np.testing.assert_array_equal(locked(), data[region])
    copy, floor_name = "numpy copy from memory", "numpy assembly from 4 chunks"
    lru_name = "+ a locked LRU lookup, in Python"
    turns_name = "chunkflow, two windows in turn"
    times: dict[str, list[float]] = {name: [] for name in readers}
    times[turns_name], times[copy], times[floor_name], times[lru_name] = [], [], [], []
    for _ in range(max(repeat, 5)):  # interleaved: noise hits all alike
        for name, array in readers.items():
            times[name].append(per_read(partial(array.__getitem__, region)))
        times[turns_name].append(per_read(two_windows))
        times[copy].append(per_read(lambda: data[region].copy()))
        times[floor_name].append(per_read(assemble))
        times[lru_name].append(per_read(locked))
    base = statistics.median(times[copy])
    floor = statistics.median(times[floor_name])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"cached 4-chunk window, {name:<30}{median * 1e6:8.1f} µs (CPU) per read "
              f"[{min(values) * 1e6:.1f}-{max(values) * 1e6:.1f}]   "
              f"{median / base:.2f}x the numpy copy (goal <= 1.5), "
              f"{median / floor:.2f}x the assembly floor")


def _assembly(data: np.ndarray, region: tuple[slice, slice]):
    """The floor of a window read from any cache of decoded chunks: a new array filled
    from the cached chunks it crosses (here, copies of them in memory), one numpy
    assignment per chunk, with no lookup, indexing or checks."""
    rows, cols = region
    parts = []
    for r in range(rows.start // CHUNKS[0], (rows.stop - 1) // CHUNKS[0] + 1):
        for c in range(cols.start // CHUNKS[1], (cols.stop - 1) // CHUNKS[1] + 1):
            top, left = r * CHUNKS[0], c * CHUNKS[1]
            chunk = data[top:top + CHUNKS[0], left:left + CHUNKS[1]].copy()
            y0, y1 = max(rows.start, top), min(rows.stop, top + CHUNKS[0])
            x0, x1 = max(cols.start, left), min(cols.stop, left + CHUNKS[1])
            parts.append(((slice(y0 - rows.start, y1 - rows.start),
                           slice(x0 - cols.start, x1 - cols.start)), chunk,
                          (slice(y0 - top, y1 - top), slice(x0 - left, x1 - left))))
    shape = (rows.stop - rows.start, cols.stop - cols.start)

    def assemble() -> np.ndarray:
        out = np.empty(shape, data.dtype)
        for where, chunk, inside in parts:
            out[where] = chunk[inside]
        return out

    return assemble


def _locked_lru_assembly(data: np.ndarray, region: tuple[slice, slice]):
    """The assembly floor plus the least a thread-safe LRU cache written in Python
    does per read: one lock, and a lookup and a recency bump per chunk (an
    ``OrderedDict``'s C ``move_to_end``), with no freshness or shape checks."""
    from collections import OrderedDict
    from threading import Lock

    rows, cols = region
    plan, entries = [], OrderedDict()
    for r in range(rows.start // CHUNKS[0], (rows.stop - 1) // CHUNKS[0] + 1):
        for c in range(cols.start // CHUNKS[1], (cols.stop - 1) // CHUNKS[1] + 1):
            top, left = r * CHUNKS[0], c * CHUNKS[1]
            key = f"window.zarr/c/{r}/{c}"
            entries[key] = data[top:top + CHUNKS[0], left:left + CHUNKS[1]].copy()
            y0, y1 = max(rows.start, top), min(rows.stop, top + CHUNKS[0])
            x0, x1 = max(cols.start, left), min(cols.stop, left + CHUNKS[1])
            plan.append((key, (slice(y0 - rows.start, y1 - rows.start),
                               slice(x0 - cols.start, x1 - cols.start)),
                         (slice(y0 - top, y1 - top), slice(x0 - left, x1 - left))))
    shape = (rows.stop - rows.start, cols.stop - cols.start)
    lock = Lock()

    def assemble() -> np.ndarray:
        with lock:
            found = []
            for key, _, _ in plan:
                entries.move_to_end(key)
                found.append(entries[key])
        out = np.empty(shape, data.dtype)
        for chunk, (_, where, inside) in zip(found, plan):
            out[where] = chunk[inside]
        return out

    return assemble


def bench_synchronized_writes(folder: Path, data: np.ndarray, repeat: int) -> None:
    def write(blocks: int, synchronizer, writer) -> float:
        z = chunkflow.zeros(SHAPE, chunks=CHUNKS, dtype="uint16", overwrite=True,
                            store=str(folder / "sync.zarr"), synchronizer=synchronizer,
                            cache=False)
        source = da.from_array(data, chunks=(blocks, blocks))
        with dask.config.set(scheduler="threads"):
            seconds = timed(lambda: writer(source, z))
        assert np.array_equal(z[:], data)
        return seconds

    def dask_store(source, z) -> None:
        da.store(source, z, lock=False)

    aligned, ours, plain = [], [], []
    for _ in range(repeat):  # interleaved, so machine noise hits all three alike
        aligned.append(write(1024, None, dask_store))
        ours.append(write(1500, ThreadSynchronizer(), chunkflow.store))
        plain.append(write(1500, ThreadSynchronizer(), dask_store))
    aligned_time = min(aligned)
    rows = (("aligned 1024 blocks, da.store", aligned),
            ("1500 blocks + synchronizer, chunkflow.store", ours),
            ("1500 blocks + synchronizer, da.store(lock=False)", plain))
    for label, times in rows:
        print(f"dask write, {label:<50}{min(times) * 1000:8.1f} ms   "
              f"x{min(times) / aligned_time:.2f} the aligned time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a 2048^2 array")
    parser.add_argument("--window-only", action="store_true",
                        help="only the cached 4-chunk window (case 2)")
    args = parser.parse_args()
    global SHAPE
    if args.quick:
        SHAPE = (2048, 2048)
    folder = Path(tempfile.mkdtemp(prefix="chunkflow-bench-"))
    try:
        data = make_data(SHAPE)
        if args.window_only:
            bench_cached_window(folder, data, args.repeat)
            return
        bench_windows(folder, data, args.repeat)
        bench_cached_window(folder, data, args.repeat)
        bench_synchronized_writes(folder, data, args.repeat)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
