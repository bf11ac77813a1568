"""xarray: open + load through engine="chunkflow" against xarray's own engine="zarr".

Run by hand (not part of the test suite), with nothing else running::

    python benchmarks/bench_xarray.py [--repeat 5] [--quick]

The dataset: 3 variables of 4096 x 4096 float32 in 512^2 chunks (zstd, as
``to_zarr`` writes by default) plus two coordinates, written by ``ds.to_zarr`` with
consolidated metadata, in Zarr v3 and v2. ``--quick``: 1024 x 1024 in 256^2 chunks.

Cases, each timed from ``xr.open_dataset`` to the values in memory:

1. **open**: ``xr.open_dataset(path, engine=...)`` alone (metadata only);
2. **load, lazy**: ``open_dataset(..., chunks=None).load()`` (xarray's lazy indexing);
3. **load, dask**: ``open_dataset(..., chunks={}).load()`` (one dask task per chunk,
   dask's threaded scheduler).

For reference, the dask case also times the same reads without xarray:
``chunkflow.open_group`` + ``chunkflow.to_dask`` (one block per chunk, no cache) for each
variable, computed together (``to_dask, no xarray``) — what xarray's own chunking of the
engine's variables costs on top. chunkflow runs twice: with ``chunk_cache=False``
(every load decodes every chunk, as zarr-python does: the fair comparison, whose ratio
is printed) and with the
process-wide decoded-chunk cache, warm after the first load (what repeated loads of
the same data cost in one session). One untimed run of each case warms imports and
the page cache first. Every figure is the median of ``--repeat`` runs, with the range
in brackets; the ratio is zarr's median over chunkflow's.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_graph import _median  # noqa: E402

ENGINES = ("zarr", "chunkflow (no cache)", "chunkflow (warm cache)")


def _timed(fn: Callable[[], Any], repeat: int) -> list[float]:
    fn()  # warm-up, untimed
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def write_dataset(path: Path, side: int, chunk: int, zarr_format: int) -> None:
    import xarray as xr

    rng = np.random.default_rng(0)
    base = rng.normal(size=(side, side)).astype("f4")
    names = ("temperature", "pressure", "humidity")
    ds = xr.Dataset(
        {name: (("y", "x"), base + i) for i, name in enumerate(names)},
        coords={"y": np.arange(side, dtype="f8"), "x": np.arange(side, dtype="f8")},
    )
    encoding = {name: {"chunks": (chunk, chunk)} for name in names}
    ds.to_zarr(path, mode="w", zarr_format=zarr_format, consolidated=True, encoding=encoding)


def _opener(engine: str, path: Path, chunks: Any) -> Callable[[], Any]:
    import xarray as xr

    from chunkflow.xarray import ChunkflowBackendEntrypoint

    if engine == "zarr":
        return lambda: xr.open_dataset(path, engine="zarr", consolidated=True, chunks=chunks)
    cache = None if "warm" in engine else False
    return lambda: xr.open_dataset(path, engine=ChunkflowBackendEntrypoint, chunks=chunks,
                                   consolidated=True, chunk_cache=cache)


def _to_dask_only(path: Path) -> Callable[[], Any]:
    import dask

    import chunkflow

    def run() -> Any:
        group = chunkflow.open_group(path, mode="r", cache=False, use_consolidated=True)
        arrays = [chunkflow.to_dask(a, blocks=(1,) * a.ndim) for _, a in group.arrays()]
        return dask.compute(*arrays)

    return run


def bench_format(folder: Path, zarr_format: int, side: int, chunk: int, repeat: int) -> None:
    path = folder / f"v{zarr_format}.zarr"
    write_dataset(path, side, chunk, zarr_format)
    mib = 3 * side * side * 4 / 2**20
    print(f"Zarr v{zarr_format}: 3 x {side}^2 float32 in {chunk}^2 chunks ({mib:.0f} MiB), "
          f"seconds, median [range] of {repeat}")
    cases = (("open", None, False), ("load, lazy", None, True), ("load, dask", {}, True))
    for label, chunks, load in cases:
        results: dict[str, list[float]] = {}
        for engine in ENGINES:
            opener = _opener(engine, path, chunks)
            results[engine] = _timed((lambda o=opener: o().load()) if load else opener, repeat)
        if chunks is not None:
            results["to_dask, no xarray"] = _timed(_to_dask_only(path), repeat)
        zarr_median = statistics.median(results["zarr"])
        fair = statistics.median(results["chunkflow (no cache)"])
        print(f"  {label}")
        for engine in ENGINES:
            print(f"    {engine:24s}{_median(results[engine])}")
        print(f"    ratio zarr / chunkflow  {zarr_median / fair:8.2f}x")
        if "to_dask, no xarray" in results:
            print(f"    (to_dask, no xarray     {_median(results['to_dask, no xarray'])})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="1024^2 in 256^2 chunks")
    parser.add_argument("--keep", type=Path, help="reuse this folder for the data")
    args = parser.parse_args()
    side, chunk = (1024, 256) if args.quick else (4096, 512)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="chunkflow-bench-xarray-"))
    folder.mkdir(parents=True, exist_ok=True)
    warnings.filterwarnings("ignore", message="Consolidated metadata is currently not part")
    try:
        for zarr_format in (3, 2):
            bench_format(folder, zarr_format, side, chunk, args.repeat)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
