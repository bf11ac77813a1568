"""TIFF to sharded OME-Zarr with 4 levels: chunkflow.convert against ngff-zarr and
tifffile + zarr-python + ome-zarr-py, and the floor.

Run by hand (not part of the test suite), with nothing else running::

    python benchmarks/bench_convert.py [--gib 4] [--repeat 3] [--kinds ...]

Two sources of ``--gib`` GiB of uint16 (2048^2 pages, a smooth ramp plus noise, as a
microscope's frames compress): a folder of single-page TIFF files (one per z), and one
BigTIFF OME-TIFF of the same pages (OME-XML with physical sizes). Each becomes an
OME-Zarr image (Zarr v3, NGFF 0.5) of 4 levels (mean of 2x2x2), in chunks of 64^3
inside shards of 128x128x256 (chunkflow's defaults; the peers are given the same), by:

- ``chunkflow``: ``chunkflow.convert(source, out, levels=4)``, no other argument;
- ``ngff-zarr``: tifffile's ``imread(aszarr=True)`` as a dask array, ``to_ngff_image``,
  ``to_multiscales(method=DASK_BIN_SHRINK)`` and ``to_ngff_zarr(chunks_per_shard=...)``;
- ``ome-zarr``: the same dask array written by ``ome_zarr.writer.write_image`` with
  ``method=LOCAL_MEAN`` and ``storage_options={"chunks", "shards"}``;
- ``floor``: reading every TIFF byte (``os.pread`` of the pages' rows, in slabs one
  shard deep) and writing level 0's compressed shards with tensorstore (the same
  codecs), nothing else: no pyramid, no metadata, no job records.

Each run is a fresh process (the default threaded scheduler, 2 cores here) that prints
its time and its peak RSS (VmHWM: ``ru_maxrss`` of a child carries its parent's over
``execve``). Figures are medians of ``--repeat`` runs with the range in brackets; the
last lines give the ratios the issue asks for: the peers' best time over chunkflow's
(goal >= 2), chunkflow's peak memory over the peers' lowest (goal <= 1), chunkflow's
time over the floor's (goal <= 1.5); and check that level 3 agrees with numpy's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from bench_graph import _median, _peak_rss, run_child  # noqa: E402

SIDE = 2048
CHUNKS = (64, 64, 64)
SHARDS = (128, 128, 256)
LEVELS = 4
KINDS = ("chunkflow", "ngff-zarr", "ome-zarr", "floor")
SCALE = {"z": 2.0, "y": 0.5, "x": 0.5}


def _page(rng: np.random.Generator, z: int) -> np.ndarray:
    ramp = (np.add.outer(np.arange(SIDE), np.arange(SIDE)) + 7 * z) % 4096
    return (ramp + rng.integers(0, 64, (SIDE, SIDE))).astype("u2")


def make_sources(folder: Path, pages: int) -> tuple[Path, Path]:
    """The folder of TIFF files and the OME-TIFF (made once per size)."""
    import tifffile

    stack, ome = folder / f"stack-{pages}", folder / f"image-{pages}.ome.tif"
    if not stack.exists():
        stack.mkdir()
        rng = np.random.default_rng(0)
        for z in range(pages):
            tifffile.imwrite(stack / f"z{z:04d}.tif", _page(rng, z))
    if not ome.exists():
        rng = np.random.default_rng(0)
        with tifffile.TiffWriter(ome, bigtiff=True, ome=True) as tif:
            tif.write((_page(rng, z) for z in range(pages)), shape=(pages, SIDE, SIDE),
                      dtype="u2", metadata={"axes": "ZYX", "PhysicalSizeX": SCALE["x"],
                                            "PhysicalSizeY": SCALE["y"],
                                            "PhysicalSizeZ": SCALE["z"]})
    return stack, ome


def _tiff_dask(source: str):  # type: ignore[no-untyped-def]
    import dask.array as da
    import tifffile
    import zarr

    if os.path.isdir(source):
        files = sorted(Path(source).glob("*.tif"))
        store = tifffile.TiffSequence(files).aszarr()
    else:
        store = tifffile.imread(source, aszarr=True)
    return da.from_zarr(zarr.open_array(store, mode="r"))


def _chunkflow(source: str, target: str) -> None:
    import chunkflow

    chunkflow.convert(source, target, levels=LEVELS, axes="zyx",
                      scale=[SCALE[a] for a in "zyx"])


def _ngff_zarr(source: str, target: str) -> None:
    import ngff_zarr

    x = _tiff_dask(source).rechunk(CHUNKS)
    image = ngff_zarr.to_ngff_image(x, dims=["z", "y", "x"], scale=SCALE)
    multiscales = ngff_zarr.to_multiscales(image, scale_factors=[2, 4, 8], chunks=CHUNKS[0],
                                           method=ngff_zarr.Methods.DASK_BIN_SHRINK)
    ngff_zarr.to_ngff_zarr(target, multiscales, version="0.5",
                           chunks_per_shard=tuple(s // c for s, c in zip(SHARDS, CHUNKS)))


def _ome_zarr(source: str, target: str) -> None:
    import zarr
    from ome_zarr.format import FormatV05
    from ome_zarr.scale import Methods
    from ome_zarr.writer import write_image

    x = _tiff_dask(source).rechunk(SHARDS)
    group = zarr.open_group(target, mode="w", zarr_format=3)
    write_image(x, group, scale_factors=[2, 4, 8], axes="zyx", method=Methods.LOCAL_MEAN,
                fmt=FormatV05(), storage_options={"chunks": CHUNKS, "shards": SHARDS})


def _pages(source: str) -> list[tuple[str, int]]:
    """(file, byte offset) of every page's uncompressed values."""
    import tifffile

    if os.path.isdir(source):
        found = []
        for path in sorted(Path(source).glob("*.tif")):
            with tifffile.TiffFile(path) as tif:
                found.append((str(path), int(tif.series[0].dataoffset)))
        return found
    with tifffile.TiffFile(source) as tif:
        series = tif.series[0]
        return [(source, int(series.dataoffset) + z * SIDE * SIDE * 2)
                for z in range(series.shape[0])]


def _floor(source: str, target: str) -> None:
    """Every TIFF byte read (``os.pread`` of the pages' rows) and level 0's shards
    written by tensorstore (the same codecs as chunkflow's: zstd level 0 inside
    ``sharding_indexed`` with a crc32c index), in slabs one shard deep."""
    from concurrent.futures import ThreadPoolExecutor

    import tensorstore as ts

    pages = _pages(source)
    depth, rows = len(pages), SHARDS[1]
    inner = [{"name": "bytes", "configuration": {"endian": "little"}},
             {"name": "zstd", "configuration": {"level": 0, "checksum": False}}]
    index = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]
    out = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": target},
                   "metadata": {"shape": [depth, SIDE, SIDE], "data_type": "uint16",
                                "chunk_grid": {"name": "regular", "configuration": {
                                    "chunk_shape": [min(SHARDS[0], depth), *SHARDS[1:]]}},
                                "codecs": [{"name": "sharding_indexed", "configuration": {
                                    "chunk_shape": [min(CHUNKS[0], depth), *CHUNKS[1:]],
                                    "codecs": inner, "index_codecs": index}}]},
                   "create": True, "delete_existing": True}).result()

    def band(z0: int, y0: int) -> None:
        z1 = min(z0 + SHARDS[0], depth)
        block = np.empty((z1 - z0, rows, SIDE), "u2")
        for i, (path, offset) in enumerate(pages[z0:z1]):
            fd = os.open(path, os.O_RDONLY)
            try:
                data = os.pread(fd, rows * SIDE * 2, offset + y0 * SIDE * 2)
            finally:
                os.close(fd)
            block[i] = np.frombuffer(data, "<u2").reshape(rows, SIDE)
        out[z0:z1, y0:y0 + rows].write(block).result()

    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        list(pool.map(lambda zy: band(*zy), [(z, y) for z in range(0, depth, SHARDS[0])
                                             for y in range(0, SIDE, rows)]))


def _child(kind: str, source: str, target: str) -> None:
    import chunkflow.graph  # noqa: F401  # loaded before the timer, as the peers' code is

    shutil.rmtree(target, ignore_errors=True)
    run = {"chunkflow": _chunkflow, "ngff-zarr": _ngff_zarr, "ome-zarr": _ome_zarr,
           "floor": _floor}[kind]
    start = time.perf_counter()
    run(source, target)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "rss": _peak_rss()}))


def _coarsest(target: Path) -> np.ndarray:
    import zarr

    group = zarr.open_group(str(target), mode="r")
    attrs = group.attrs.asdict()
    paths = [d["path"] for d in attrs.get("ome", attrs)["multiscales"][0]["datasets"]]
    return np.asarray(group[paths[-1]][...])


def _numpy_coarsest(source: Path) -> np.ndarray:
    """Level 3 by numpy: means of 8^3 windows (of 2x2x2 means, rounded half to even,
    as the levels are made one from the other)."""
    import tifffile

    level = None
    if source.is_dir():
        data = [tifffile.memmap(f, mode="r") for f in sorted(source.glob("*.tif"))]
    else:
        data = list(tifffile.memmap(source, mode="r"))
    planes = []
    for z in range(0, len(data), 2):
        pair = np.stack([np.asarray(p) for p in data[z:z + 2]]).astype(np.int64)
        planes.append(np.round(pair.reshape(-1, SIDE // 2, 2, SIDE // 2, 2).sum(axis=(0, 2, 4))
                               / (pair.shape[0] * 4)))
    level = np.stack(planes)
    for _ in range(LEVELS - 2):
        z = level.shape[0] - level.shape[0] % 2
        level = np.round(level[:z].reshape(z // 2, 2, level.shape[1] // 2, 2,
                                           level.shape[2] // 2, 2).mean(axis=(1, 3, 5)))
    return level.astype("u2")


def bench(folder: Path, pages: int, repeat: int, kinds: list[str]) -> None:
    stack, ome = make_sources(folder, pages)
    size = pages * SIDE * SIDE * 2 / 2**30
    print(f"{size:.2f} GiB of uint16 ({pages} x {SIDE}^2) to OME-Zarr v3 (NGFF 0.5), "
          f"{LEVELS} levels, chunks {CHUNKS} in shards {SHARDS}; load {_load()}")
    for name, source in (("TIFF stack of files", stack), ("one OME-TIFF (BigTIFF)", ome)):
        results = {kind: [run_child(__file__, kind, str(source), str(folder / f"{kind}.zarr"))
                          for _ in range(repeat)] for kind in kinds}
        print(f"  {name}: time s [range], peak RSS MiB [range]")
        for kind, runs in results.items():
            print(f"    {kind:10s} {_median([r['seconds'] for r in runs])} s   "
                  f"{_median([r['rss'] / 2**20 for r in runs])} MiB")
        _ratios(results)
        if "chunkflow" in kinds:
            expected = _numpy_coarsest(source)
            found = _coarsest(folder / "chunkflow.zarr")
            print(f"    chunkflow's level {LEVELS - 1} equals numpy's: "
                  f"{found.shape == expected.shape and bool((found == expected).all())}")
        print(f"    load after: {_load()}")


def _ratios(results: dict[str, list[dict[str, float]]]) -> None:
    def med(kind: str, key: str) -> float:
        return statistics.median(r[key] for r in results[kind])

    if "chunkflow" not in results:
        return
    peers = [k for k in ("ngff-zarr", "ome-zarr") if k in results]
    if peers:
        best = min(med(k, "seconds") for k in peers)
        lowest = min(med(k, "rss") for k in peers)
        print(f"    best peer time / chunkflow time  {best / med('chunkflow', 'seconds'):.2f}x "
              "(goal >= 2)")
        print(f"    chunkflow RSS / lowest peer RSS  {med('chunkflow', 'rss') / lowest:.2f} "
              "(goal <= 1)")
    if "floor" in results:
        print(f"    chunkflow time / floor time      "
              f"{med('chunkflow', 'seconds') / med('floor', 'seconds'):.2f} (goal <= 1.5)")


def _load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=4.0, help="size of each source (GiB)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--keep", type=Path, help="reuse this folder for the data")
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    folder = args.keep or Path(tempfile.mkdtemp(prefix="chunkflow-bench-convert-"))
    folder.mkdir(parents=True, exist_ok=True)
    pages = max(2, int(args.gib * 2**30 // (SIDE * SIDE * 2)))
    try:
        bench(folder, pages, args.repeat, args.kinds)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
