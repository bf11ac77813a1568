"""OME-Zarr pyramids: chunkflow.pyramid against ome-zarr-py's and ngff-zarr's writers.

Run by hand (not part of the test suite), with nothing else running::

    python benchmarks/bench_pyramid.py [--repeat 3] [--quick]

A 16384^2 uint16 image (4096^2 with ``--quick``) in 512^2 chunks (Zarr v3) becomes a
mean pyramid down to one chunk, written as OME-Zarr (NGFF 0.5) in 512^2 chunks by:

- ``chunkflow``: :func:`chunkflow.pyramid` (``method="mean"``);
- ``ome-zarr``: ``ome_zarr.writer.write_image`` of ``da.from_zarr`` with
  ``method=LOCAL_MEAN`` and the same scale factors;
- ``ngff-zarr``: ``to_ngff_image`` + ``to_multiscales(method=DASK_BIN_SHRINK)`` (a mean
  over bins) + ``to_ngff_zarr``.

Each run is a fresh process that prints its time, its peak RSS (VmHWM) and the task
count of its graph (for ngff-zarr, the tasks of the levels' arrays, before the writes
it adds). Figures are medians of ``--repeat`` runs with the range in brackets; the last
lines give the ratios (goal: faster than both at no more than half their peak memory)
and check the levels agree.
"""

from __future__ import annotations

import argparse
import json
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

CHUNK = 512
KINDS = ("chunkflow", "ome-zarr", "ngff-zarr")


def _make(path: Path, side: int) -> None:
    import chunkflow

    if path.exists():
        return
    z = chunkflow.create((side, side), chunks=(CHUNK, CHUNK), dtype="u2", store=str(path),
                         zarr_format=3, dimension_names=["y", "x"])
    rng = np.random.default_rng(0)
    for row in range(0, side, 4 * CHUNK):
        smooth = np.add.outer(np.arange(4 * CHUNK), np.arange(side)) % 4096
        noise = rng.integers(0, 256, (4 * CHUNK, side), dtype="u2")
        z[row:row + 4 * CHUNK] = (smooth + noise).astype("u2")


def _factors(side: int) -> list[int]:
    """2, 4, ... until the image fits in one chunk (chunkflow's default levels)."""
    factors, size = [], side
    while size > CHUNK:
        size = -(-size // 2)
        factors.append(side // size)
    return factors


def _chunkflow(source: str, target: str) -> int:
    import chunkflow

    pending = chunkflow.pyramid(source, target, compute=False)
    tasks = len(pending.dask)
    pending.compute()
    return tasks


def _ome_zarr(source: str, target: str) -> int:
    import dask
    import dask.array as da
    import zarr
    from ome_zarr.format import FormatV05
    from ome_zarr.scale import Methods
    from ome_zarr.writer import write_image

    x = da.from_zarr(zarr.open_array(source, mode="r"))
    group = zarr.open_group(target, mode="w", zarr_format=3)
    pending = write_image(x, group, scale_factors=_factors(x.shape[0]), axes="yx",
                          method=Methods.LOCAL_MEAN, fmt=FormatV05(), compute=False,
                          storage_options={"chunks": (CHUNK, CHUNK)})
    tasks = len(dict(dask.optimize(*pending)[0].__dask_graph__())) if pending else 0
    dask.compute(*pending)
    return tasks


def _ngff_zarr(source: str, target: str) -> int:
    import dask.array as da
    import ngff_zarr
    import zarr
    from dask.highlevelgraph import HighLevelGraph

    x = da.from_zarr(zarr.open_array(source, mode="r"))
    image = ngff_zarr.to_ngff_image(x, dims=["y", "x"])
    multiscales = ngff_zarr.to_multiscales(image, scale_factors=_factors(x.shape[0]),
                                           method=ngff_zarr.Methods.DASK_BIN_SHRINK, chunks=CHUNK)
    graphs = [level.data.__dask_graph__() for level in multiscales.images]
    tasks = len(HighLevelGraph.merge(*graphs))
    ngff_zarr.to_ngff_zarr(target, multiscales, version="0.5")
    return tasks


def _child(kind: str, source: str, target: str) -> None:
    # chunkflow loads its graph functions on first use: load them before the
    # baseline and the timer, as the peers' code is loaded.
    import chunkflow.graph  # noqa: F401

    shutil.rmtree(target, ignore_errors=True)
    run = {"chunkflow": _chunkflow, "ome-zarr": _ome_zarr, "ngff-zarr": _ngff_zarr}[kind]
    start = time.perf_counter()
    tasks = run(source, target)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "rss": _peak_rss(), "tasks": tasks}))


def _run(kind: str, source: Path, target: Path) -> dict[str, float]:
    return run_child(__file__, kind, str(source), str(target))


def _level_paths(target: Path) -> list[str]:
    import zarr

    attrs = zarr.open_group(str(target), mode="r").attrs.asdict()
    multiscales = attrs.get("ome", attrs)["multiscales"]
    return [d["path"] for d in multiscales[0]["datasets"]]


def _largest_difference(a: Path, b: Path) -> tuple[int, float]:
    """(levels both have, largest |difference| of their coarsest common level)."""
    import zarr

    left, right = _level_paths(a), _level_paths(b)
    common = min(len(left), len(right))
    x = zarr.open_array(str(a / left[common - 1]), mode="r")[...].astype(float)
    y = zarr.open_array(str(b / right[common - 1]), mode="r")[...].astype(float)
    if x.shape != y.shape:
        return common, float("nan")
    return common, float(np.abs(x - y).max())


def bench(folder: Path, side: int, repeat: int) -> None:
    source = folder / f"image-{side}.zarr"
    _make(source, side)
    results = {kind: [_run(kind, source, folder / f"{kind}.ome.zarr") for _ in range(repeat)]
               for kind in KINDS}
    print(f"mean pyramid of {side}^2 uint16 in {CHUNK}^2 chunks, {len(_factors(side)) + 1} "
          f"levels, NGFF 0.5 (time s, peak RSS MiB, tasks)")
    for kind, runs in results.items():
        print(f"   {kind:10s} {_median([r['seconds'] for r in runs])} s   peak RSS "
              f"{_median([r['rss'] / 2**20 for r in runs])} MiB   tasks {int(runs[0]['tasks'])}")
    ours = results["chunkflow"]
    for peer in KINDS[1:]:
        theirs = results[peer]
        speed = statistics.median(r["seconds"] for r in theirs) / statistics.median(
            r["seconds"] for r in ours)
        memory = statistics.median(r["rss"] for r in ours) / statistics.median(
            r["rss"] for r in theirs)
        common, diff = _largest_difference(folder / "chunkflow.ome.zarr",
                                           folder / f"{peer}.ome.zarr")
        print(f"   vs {peer:10s} speed-up {speed:.2f}x   RSS chunkflow / {peer} {memory:.2f}   "
              f"max |diff| at level {common - 1}: {diff:g} (their rounding and edges)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="4096^2 instead of 16384^2")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--keep", type=Path, help="reuse this folder for the data")
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    folder = args.keep or Path(tempfile.mkdtemp(prefix="chunkflow-bench-pyramid-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        bench(folder, 4096 if args.quick else 16384, args.repeat)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
