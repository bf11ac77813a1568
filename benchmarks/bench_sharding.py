"""Random 256x256 windows of a sharded array: chunkflow vs zarr-python 3 vs tensorstore.

Also the 3-D case of issue 30 (:func:`volume`): 512^3 uint16 in 256^3 shards of 64^3
inner chunks, blosc lz4, written, read whole and read in 200 random 64^3 windows, by
chunkflow (``cache=False``), zarr-python 3 with and without zarrs, and tensorstore.

The array is 8192x8192 uint32 in 4096x4096 shards (64 MiB decoded each) of 256x256
inner chunks, zstd-compressed, in a local folder (written once by chunkflow; the three
libraries read the same files). Each library reads the same random windows, not
aligned to inner chunks (so most touch four), from a handle opened once, without a
cache. Figures per window: the median time with its range over ``--repeat`` runs, and
the bytes read from files (``rchar`` of ``/proc/self/io``: every ``read``/``pread``
of the process, so it counts what each library really fetched, index included).

A line reads windows along a panning path (each overlapping the one before)
with chunkflow's decoded-chunk cache on: inner chunks decoded once, bytes read only
for inner chunks not seen before.

The floors: decoding (numcodecs zstd, from bytes in memory) the inner chunks each
window touches, on one thread and on two, timed the same way.

Last, concurrent partial-shard writes: 4 threads each write their own rows (disjoint
cells, but shared shards) of a 512x512 array in 256x256 shards of 32x32 inner chunks;
the share of cells that do not hold what was written afterwards is the share of
lost writes (each library's read-modify-write of a shard starting from a copy that
another thread's write then replaces). chunkflow runs with a thread synchronizer.

Run by hand, with nothing else running::

    python benchmarks/bench_sharding.py [--quick] [--repeat N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import chunkflow

WINDOW = 256


def rchar() -> int:
    """Bytes this process has read with read-like system calls so far."""
    with open("/proc/self/io") as io:
        for line in io:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    raise RuntimeError("/proc/self/io has no rchar line")


def make_array(path: Path, side: int, shard: int, inner: int) -> np.ndarray:
    """Write a smooth image with noise (compresses like a micrograph) and return it."""
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:side, 0:side].astype("f4")
    image = (1000 + 500 * np.sin(x / 97) * np.cos(y / 131)
             + rng.normal(0, 20, (side, side))).astype("u4")
    z = chunkflow.create_array(str(path), shape=(side, side), chunks=(inner, inner),
                               shards=(shard, shard), dtype="u4",
                               compressors={"name": "zstd", "configuration": {"level": 1}})
    z[:] = image
    return image


def windows(side: int, count: int, seed: int) -> list[tuple[slice, slice]]:
    rng = np.random.default_rng(seed)
    corners = rng.integers(0, side - WINDOW, (count, 2))
    return [(slice(int(y), int(y) + WINDOW), slice(int(x), int(x) + WINDOW)) for y, x in corners]


def readers(path: Path) -> dict[str, Callable[[tuple[slice, slice]], np.ndarray]]:
    """One read function per installed library, each over a handle opened once."""
    found: dict[str, Callable[[tuple[slice, slice]], np.ndarray]] = {}
    z = chunkflow.open_array(str(path), mode="r", cache=False)
    found["chunkflow"] = lambda window: z[window]
    try:
        import zarr
        zarray = zarr.open_array(str(path), mode="r")
        found["zarr-python"] = lambda window: zarray[window]
    except ImportError:
        pass
    try:
        import tensorstore as ts
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)},
                "context": {"cache_pool": {"total_bytes_limit": 0}}}
        tarray = ts.open(spec, read=True).result()
        found["tensorstore"] = lambda window: tarray[window].read().result()
    except ImportError:
        pass
    return found


def measure(read: Callable[[Any], np.ndarray], chosen: list[Any], image: np.ndarray,
            repeat: int) -> tuple[list[float], float]:
    """Seconds per window for each run, and bytes read per window (last run)."""
    for window in chosen[:3]:  # warm up imports and thread pools; check correctness
        np.testing.assert_array_equal(read(window), image[window])
    times = []
    per_window = 0.0
    for _ in range(repeat):
        before = rchar()
        start = time.perf_counter()
        for window in chosen:
            read(window)
        times.append((time.perf_counter() - start) / len(chosen))
        per_window = (rchar() - before) / len(chosen)
    return times, per_window


def inner_chunks(path: Path, side: int, shard: int, inner: int,
                 chosen: list[tuple[slice, slice]]) -> list[list[bytes]]:
    """The encoded inner chunks each window touches, cut out of the shard files."""
    from numcodecs import Zstd  # noqa: F401  (the codec the floor decodes with)

    z = chunkflow.open_array(str(path), mode="r", cache=False)
    stage = z._io.shards.stage
    shards: dict[tuple[int, int], tuple[bytes, np.ndarray, np.ndarray]] = {}
    touched = []
    for rows, cols in chosen:
        parts = []
        for y in range(rows.start // inner, (rows.stop - 1) // inner + 1):
            for x in range(cols.start // inner, (cols.stop - 1) // inner + 1):
                sy, sx = y * inner // shard, x * inner // shard
                if (sy, sx) not in shards:
                    data = (path / "c" / str(sy) / str(sx)).read_bytes()
                    start, stop = stage.index_range(len(data))
                    shards[sy, sx] = (data, *stage.parse_index(data[start:stop], len(data)))
                data, offsets, lengths = shards[sy, sx]
                per_side = shard // inner
                flat = (y % per_side) * per_side + x % per_side
                parts.append(data[int(offsets[flat]):int(offsets[flat] + lengths[flat])])
        touched.append(parts)
    return touched


def decode_floor(touched: list[list[bytes]], inner: int, repeat: int,
                 threads: int) -> list[float]:
    """Seconds per window to decode its inner chunks with numcodecs zstd (bytes in
    memory: no file reads, no copies into an output) on ``threads`` threads."""
    from concurrent.futures import ThreadPoolExecutor

    from numcodecs import Zstd

    codec = Zstd(level=1)
    buffers = [np.empty((inner, inner), "u4") for _ in range(4)]

    def decode(items: list[tuple[bytes, np.ndarray]]) -> None:
        for data, out in items:
            codec.decode(data, out=out)

    times = []
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeat):
            start = time.perf_counter()
            for parts in touched:
                items = list(zip(parts, buffers))
                if threads == 1:
                    decode(items)
                else:
                    list(pool.map(decode, [items[i::threads] for i in range(threads)]))
            times.append((time.perf_counter() - start) / len(touched))
    return times


def _median(values: list[float]) -> str:
    return (f"{statistics.median(values) * 1e3:7.2f} ms "
            f"[{min(values) * 1e3:.2f}-{max(values) * 1e3:.2f}]")


def panning(path: Path, image: np.ndarray, side: int, steps: int) -> tuple[float, float, float]:
    """Windows moving by a quarter window: (ms per window, KiB read per window, hit rate)."""
    cache = chunkflow.ChunkCache(512 * 2**20)
    z = chunkflow.open_array(str(path), mode="r", cache=cache)
    y = x = side // 3
    before, start = rchar(), time.perf_counter()
    for step in range(steps):
        window = (slice(y, y + WINDOW), slice(x, x + WINDOW))
        np.testing.assert_array_equal(z[window], image[window])
        x += WINDOW // 4 if step % 8 < 6 else 0
        y += WINDOW // 4 if step % 8 >= 6 else 0
    seconds = (time.perf_counter() - start) / steps
    stats = cache.stats
    return seconds * 1e3, (rchar() - before) / steps / 1024, stats.hits / max(1, stats.hits + stats.misses)


def lost_writes(folder: Path, library: str, rounds: int = 4) -> float:
    """Share of cells lost when 4 threads write disjoint rows into shared shards."""
    import threading

    side, path = 512, folder / f"lost-{library}.zarr"
    if library == "zarr-python":
        import zarr
        array: Any = zarr.create_array(str(path), shape=(side, side), chunks=(32, 32),
                                       shards=(256, 256), dtype="i4", fill_value=0)
    else:
        array = chunkflow.create_array(str(path), shape=(side, side), chunks=(32, 32),
                                       shards=(256, 256), dtype="i4", fill_value=0,
                                       synchronizer="thread")

    def writer(worker: int) -> None:
        for row in range(worker, side, 4):  # rows interleave: every shard is shared
            array[row, :] = worker + 1

    expected = np.tile(np.arange(1, 5, dtype="i4"), side // 4)[:, None].repeat(side, axis=1)
    lost = []
    for _ in range(rounds):
        array[...] = 0
        threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        lost.append(float((np.asarray(array[...]) != expected).mean()))
    return statistics.median(lost)


# ----------------------------------------------------------------- a volume

BLOSC_LZ4 = {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                                "shuffle": "shuffle", "typesize": 2,
                                                "blocksize": 0}}


def _volume_libraries(folder: Path, side: int, shard: int,
                      inner: int) -> dict[str, tuple[Any, Callable[[Any], Any], Callable[[Any, Any], None]]]:
    """Per library: an array handle of its own (created empty), a read and a write
    function (``read(selection)``, ``write(selection, value)``)."""
    found: dict[str, tuple[Any, Callable[[Any], Any], Callable[[Any, Any], None]]] = {}
    z = chunkflow.create_array(str(folder / "vol-chunkflow.zarr"), shape=(side,) * 3,
                               chunks=(inner,) * 3, shards=(shard,) * 3, dtype="u2",
                               compressors=BLOSC_LZ4, fill_value=0, cache=False)
    found["chunkflow"] = (z, z.__getitem__, z.__setitem__)
    try:
        import zarr
    except ImportError:
        return found
    from importlib.util import find_spec

    flavours = {"zarr-python": {}}
    if find_spec("zarrs") is not None:
        flavours["zarrs"] = {"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"}
    for name, settings in flavours.items():
        with zarr.config.set(settings):
            array = zarr.create_array(str(folder / f"vol-{name}.zarr"), shape=(side,) * 3,
                                      chunks=(inner,) * 3, shards=(shard,) * 3, dtype="u2",
                                      compressors=zarr.codecs.BloscCodec(
                                          cname="lz4", clevel=5, shuffle="shuffle"),
                                      fill_value=0)

        def read(selection: Any, array: Any = array, settings: Any = settings) -> Any:
            with zarr.config.set(settings):
                return array[selection]

        def write(selection: Any, value: Any, array: Any = array,
                  settings: Any = settings) -> None:
            with zarr.config.set(settings):
                array[selection] = value

        found[name] = (array, read, write)
    try:
        import tensorstore as ts
    except ImportError:
        return found
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(folder / "vol-ts.zarr")},
            "context": {"cache_pool": {"total_bytes_limit": 0}},
            "metadata": {"shape": [side] * 3, "data_type": "uint16", "fill_value": 0,
                         "chunk_grid": {"name": "regular",
                                        "configuration": {"chunk_shape": [shard] * 3}},
                         "codecs": [{"name": "sharding_indexed", "configuration": {
                             "chunk_shape": [inner] * 3,
                             "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                        BLOSC_LZ4],
                             "index_codecs": [{"name": "bytes",
                                               "configuration": {"endian": "little"}},
                                              {"name": "crc32c"}]}}]}}
    tarray = ts.open(spec, create=True, delete_existing=True).result()
    found["tensorstore"] = (tarray, lambda sel: tarray[sel].read().result(),
                            lambda sel, value: tarray[sel].write(value).result())
    return found


def _volume_chunks(path: Path, shard: int, inner: int,
                   chosen: list[tuple[slice, ...]]) -> list[list[tuple[Path, int, int]]]:
    """Per window, ``(shard file, offset, length)`` of each inner chunk it touches
    (from the shards' indexes, read beforehand)."""
    import itertools

    stage = chunkflow.open_array(str(path), mode="r", cache=False)._io.shards.stage
    per_side = shard // inner
    indexes: dict[tuple[int, ...], tuple[Path, np.ndarray, np.ndarray]] = {}
    touched = []
    for window in chosen:
        parts = []
        ranges = [range(s.start // inner, (s.stop - 1) // inner + 1) for s in window]
        for coords in itertools.product(*ranges):
            key = tuple(c // per_side for c in coords)
            if key not in indexes:
                file = path.joinpath("c", *map(str, key))
                data = file.read_bytes()
                start, stop = stage.index_range(len(data))
                indexes[key] = (file, *stage.parse_index(data[start:stop], len(data)))
            file, offsets, lengths = indexes[key]
            flat = int(np.ravel_multi_index(tuple(c % per_side for c in coords),
                                            (per_side,) * len(coords)))
            parts.append((file, int(offsets[flat]), int(lengths[flat])))
        touched.append(parts)
    return touched


def volume_floor(touched: list[list[tuple[Path, int, int]]], inner: int,
                 threads: int) -> float:
    """Seconds for all windows: each window's inner chunks read (``os.pread`` from the
    shard files, opened once) and decoded (numcodecs blosc, into reused buffers) on
    ``threads`` threads, each reading what it decodes. No copy into a result, no
    indexing: what any library must at least do without a cache."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    from numcodecs.blosc import decompress

    files = {file for parts in touched for file, _, _ in parts}
    fds = {file: os.open(file, os.O_RDONLY) for file in files}
    buffers = [np.empty((inner,) * 3, "u2") for _ in range(threads)]

    def work(items: list[tuple[Path, int, int]], slot: int) -> None:
        for file, offset, length in items:
            decompress(os.pread(fds[file], length, offset), buffers[slot])

    try:
        with ThreadPoolExecutor(threads) as pool:
            start = time.perf_counter()
            for parts in touched:
                futures = [pool.submit(work, parts[i::threads], i) for i in range(1, threads)]
                work(parts[0::threads], 0)
                for future in futures:
                    future.result()
            return time.perf_counter() - start
    finally:
        for fd in fds.values():
            os.close(fd)


def volume(folder: Path, repeat: int, quick: bool) -> None:
    """The issue's 3-D case: 512^3 uint16 in 256^3 shards of 64^3 inner chunks, blosc
    lz4: full write, full read, and 200 random 64^3 windows (unaligned: most touch 8
    inner chunks), each library on its own copy, no decoded-chunk cache anywhere;
    then chunkflow's windows with its default settings (its decoded-chunk cache on,
    emptied before each run: what a user's first pass costs), and the floor."""
    side, shard, inner, count = (256, 128, 32, 50) if quick else (512, 256, 64, 200)
    z = np.arange(side, dtype="f4")
    data = (1000 + 300 * np.sin(z[:, None, None] / 37) * np.cos(z[None, :, None] / 53)
            * np.sin(z[None, None, :] / 41)).astype("u2")
    data += np.random.default_rng(3).integers(0, 8, data.shape, dtype="u2")
    rng = np.random.default_rng(4)
    corners = rng.integers(0, side - inner, (count, 3))
    chosen = [tuple(slice(int(c), int(c) + inner) for c in corner) for corner in corners]
    libraries = _volume_libraries(folder, side, shard, inner)
    ours = folder / "vol-chunkflow.zarr"
    default = "chunkflow default"
    times: dict[str, dict[str, list[float]]] = {
        name: {"write": [], "read": [], "windows": [], "windows cpu": []} for name in libraries}
    times[default] = {"windows": []}
    floors: dict[int, list[float]] = {1: [], 2: []}
    touched = None
    everything = (slice(None),) * 3
    for _ in range(repeat):  # interleaved: noise hits every library alike
        for name, (_, read, write) in libraries.items():
            start = time.perf_counter()
            write(everything, data)
            times[name]["write"].append(time.perf_counter() - start)
            start = time.perf_counter()
            got = read(everything)
            times[name]["read"].append(time.perf_counter() - start)
            start, cpu = time.perf_counter(), time.process_time()
            for window in chosen:
                read(window)
            times[name]["windows"].append(time.perf_counter() - start)
            times[name]["windows cpu"].append(time.process_time() - cpu)
            if name == "chunkflow":  # the same files, through a handle with no options
                chunkflow.cache.get_cache().clear()
                handle = chunkflow.open_array(str(ours), mode="r")
                start = time.perf_counter()
                for window in chosen:
                    handle[window]
                times[default]["windows"].append(time.perf_counter() - start)
        touched = touched or _volume_chunks(ours, shard, inner, chosen)
        for threads in floors:
            floors[threads].append(volume_floor(touched, inner, threads))
    for name, (_, read, _) in libraries.items():
        assert np.array_equal(np.asarray(read(everything)), data), f"{name}: full read differs"
        assert np.array_equal(np.asarray(read(chosen[0])), data[chosen[0]]), f"{name}: window"
    del got
    print(f"\n{side}^3 uint16 in {shard}^3 shards of {inner}^3 inner chunks, blosc lz4; "
          f"seconds, median [range] of {repeat}; ratios: the peer's time / chunkflow's")
    for case, label in (("write", "full write"), ("read", "full read"),
                        ("windows", f"{count} random {inner}^3 windows")):
        base = statistics.median(times["chunkflow"][case])
        line = f"  {label:<26}"
        for name in libraries:
            values = times[name][case]
            line += (f" {name} {statistics.median(values):.3f} "
                     f"[{min(values):.3f}-{max(values):.3f}]")
        ratios = [f"{statistics.median(times[n][case]) / base:.2f}x {n}"
                  for n in libraries if n != "chunkflow"]
        print(line + " | " + ", ".join(ratios))
    # CPU seconds of the process (all its threads) for the windows: the work each
    # library does, which the load of a busy machine changes far less than wall time.
    cpu_base = statistics.median(times["chunkflow"]["windows cpu"])
    print("  windows, CPU time " + " ".join(
        f"{name} {statistics.median(times[name]['windows cpu']):.3f}" for name in libraries)
        + " | " + ", ".join(f"{statistics.median(times[n]['windows cpu']) / cpu_base:.2f}x {n}"
                            for n in libraries if n != "chunkflow"))
    base = statistics.median(times["chunkflow"]["windows"])
    mean_chunks = sum(len(parts) for parts in (touched or [])) / count
    values = times[default]["windows"]
    line = (f"  windows, {default} (cache emptied first) {statistics.median(values):.3f} "
            f"[{min(values):.3f}-{max(values):.3f}]")
    peer = statistics.median(times["tensorstore"]["windows"]) if "tensorstore" in times else None
    if peer is not None:
        line += f" | tensorstore {peer / statistics.median(values):.2f}x its time"
    print(line)
    for threads, values in floors.items():
        floor = statistics.median(values)
        line = (f"  floor: pread + blosc decode of the {mean_chunks:.1f} inner chunks a window "
                f"touches, {threads} thread{'s' if threads > 1 else ''}: {floor:.3f} "
                f"[{min(values):.3f}-{max(values):.3f}]; chunkflow {base / floor:.2f}x")
        if peer is not None:
            line += f", tensorstore {peer / floor:.2f}x"
        print(line + " the floor")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2048^2 in 1024^2 shards")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--windows", type=int, default=50)
    parser.add_argument("--volume-only", action="store_true",
                        help="only the 3-D case (512^3 in 256^3 shards of 64^3 chunks)")
    args = parser.parse_args()
    if args.volume_only:
        folder = Path(tempfile.mkdtemp(prefix="chunkflow-bench-sharding-"))
        try:
            volume(folder, args.repeat, args.quick)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return
    side, shard, inner = (2048, 1024, 256) if args.quick else (8192, 4096, 256)
    folder = Path(tempfile.mkdtemp(prefix="chunkflow-bench-sharding-"))
    try:
        path = folder / "image.zarr"
        image = make_array(path, side, shard, inner)
        shard_mib = shard * shard * 4 / 2**20
        print(f"{side}^2 uint32 in {shard}^2 shards ({shard_mib:.0f} MiB decoded) of {inner}^2 "
              f"inner chunks, zstd; {args.windows} random {WINDOW}^2 windows, "
              f"median [range] of {args.repeat} runs")
        chosen = windows(side, args.windows, seed=1)
        results = {}
        for name, read in readers(path).items():
            results[name] = measure(read, chosen, image, args.repeat)
        touched = inner_chunks(path, side, shard, inner, chosen)
        floors = {threads: decode_floor(touched, inner, args.repeat, threads)
                  for threads in (1, 2)}
        base_time = statistics.median(results["chunkflow"][0])
        base_bytes = results["chunkflow"][1]
        print(f"  {'library':<12} {'time per window':>28} {'KiB read':>10} "
              f"{'time / chunkflow':>17} {'bytes / chunkflow':>18}")
        for name, (times, nbytes) in results.items():
            print(f"  {name:<12} {_median(times):>28} {nbytes / 1024:10.1f} "
                  f"{statistics.median(times) / base_time:16.2f}x {nbytes / base_bytes:17.2f}x")
        mean_chunks = sum(len(parts) for parts in touched) / len(touched)
        for threads, times in floors.items():
            print(f"  floor: numcodecs zstd decode of the {mean_chunks:.1f} inner chunks a window "
                  f"touches (mean), {threads} thread{'s' if threads > 1 else ''}: "
                  f"{_median(times)}, chunkflow "
                  f"{base_time / statistics.median(times):.2f}x that")
        if "tensorstore" in results:
            ts_time = statistics.median(results["tensorstore"][0])
            print(f"  chunkflow vs tensorstore: x{ts_time / base_time:.2f} (tensorstore's time / "
                  f"chunkflow's; goal >= 1.5); tensorstore "
                  f"{ts_time / statistics.median(floors[2]):.2f}x the two-thread floor")
        volume(folder, args.repeat, args.quick)
        ms, kib, hit_rate = panning(path, image, side, steps=16 if args.quick else 64)
        print(f"  chunkflow with its cache, panning by a quarter window: {ms:.2f} ms and "
              f"{kib:.1f} KiB read per window, {hit_rate:.0%} of inner chunks from the cache")
        print("  concurrent partial-shard writes, 4 threads, share of cells lost (median of 4):")
        for library in ("chunkflow", "zarr-python"):
            try:
                print(f"    {library:<12} {lost_writes(folder, library):6.1%}")
            except ImportError:
                pass
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
