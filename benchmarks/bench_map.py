"""map_chunks against dask's map_overlap + to_zarr with zarr-python 3, folder to folder.

Run by hand (not part of the test suite), with nothing else running::

    python benchmarks/bench_map.py [--repeat 3] [--quick]

Cases: a Gaussian filter (sigma 2, halo 8) of

- an 8192^2 uint16 image in 512^2 chunks into float32, and
- a 512^3 uint16 volume in 128^3 chunks into float32,

each run in a fresh process that prints its time and peak RSS (VmHWM). The task
counts of both graphs are printed too.

Default blocks: the same 2-D filter with no arguments but ``depth`` and
``dtype``, on a 4096^2 image (2048^2 with ``--quick``) in chunks of 64^2, 256^2,
1024^2 and 4096^2, against ``map_overlap`` + ``to_zarr``: time, peak RSS and tasks.
Every figure is the median of ``--repeat`` runs, with the range in brackets.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from bench_graph import _median, _peak_rss  # noqa: E402

SIGMA = 2.0
DEPTH = 8  # scipy's radius for sigma 2: int(4 * 2 + 0.5)


def _make(path: Path, shape: tuple[int, ...], chunks: tuple[int, ...]) -> None:
    import chunkflow

    if path.exists():
        return
    z = chunkflow.create(shape, chunks=chunks, dtype="u2", store=str(path))
    rng = np.random.default_rng(len(shape))
    step = chunks[0] * 4
    for row in range(0, shape[0], step):
        block = rng.integers(0, 4096, (min(step, shape[0] - row), *shape[1:]), dtype="u2")
        z[row:row + step] = block


def _filter(block: np.ndarray) -> np.ndarray:
    from scipy import ndimage

    return ndimage.gaussian_filter(block, SIGMA, mode="reflect", output=np.float32)


def _child(kind: str, source: str, target: str) -> None:
    import dask
    import dask.array as da
    import zarr

    import chunkflow

    shutil.rmtree(target, ignore_errors=True)
    baseline = _peak_rss()  # the interpreter with numpy, dask, zarr and chunkflow loaded
    start = time.perf_counter()
    if kind == "chunkflow-nocache":
        pending = chunkflow.map_chunks(_filter, chunkflow.open(source, mode="r", cache=False),
                                       out=target, depth=DEPTH, dtype="f4", compute=False)
        tasks = len(dict(dask.optimize(pending)[0].__dask_graph__()))
        dask.compute(pending)
    elif kind == "chunkflow":
        pending = chunkflow.map_chunks(_filter, source, out=target, depth=DEPTH, dtype="f4",
                                       compute=False)
        tasks = len(dict(dask.optimize(pending)[0].__dask_graph__()))
        dask.compute(pending)
    else:
        x = da.from_zarr(zarr.open_array(source, mode="r"))
        y = x.map_overlap(_filter, depth=DEPTH, boundary="reflect", dtype="f4")
        pending = y.to_zarr(target, compute=False)
        tasks = len(dict(dask.optimize(pending)[0].__dask_graph__()))
        dask.compute(pending)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "rss": _peak_rss(), "tasks": tasks,
                      "baseline": baseline}))


def _run(kind: str, source: Path, target: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(source), str(target)],
        capture_output=True, text=True, check=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _check_same(a: Path, b: Path) -> float:
    import chunkflow

    left = chunkflow.open(str(a), mode="r", cache=False)
    right = chunkflow.open(str(b), mode="r", cache=False)
    return float(np.abs(left[:] - right[:]).max())


def bench_case(folder: Path, label: str, shape: tuple[int, ...], chunks: tuple[int, ...],
               repeat: int) -> None:
    source = folder / f"{label}.zarr"
    _make(source, shape, chunks)
    results: dict[str, list[dict[str, float]]] = {}
    for kind in ("chunkflow", "dask+zarr"):
        results[kind] = [_run(kind, source, folder / f"{label}-{kind}.out.zarr")
                         for _ in range(repeat)]
    print(f"{label}: Gaussian sigma {SIGMA} of {shape} uint16 in {chunks} chunks -> float32")
    for kind, runs in results.items():
        secs = [r["seconds"] for r in runs]
        rss = [r["rss"] / 2**20 for r in runs]
        print(f"   {kind:10s} {_median(secs)} s   peak RSS {_median(rss)} MiB   "
              f"tasks {int(runs[0]['tasks'])}")
    ours, theirs = results["chunkflow"], results["dask+zarr"]
    speed = statistics.median(r["seconds"] for r in theirs) / statistics.median(
        r["seconds"] for r in ours)
    memory = statistics.median(r["rss"] for r in ours) / statistics.median(
        r["rss"] for r in theirs)
    diff = _check_same(folder / f"{label}-chunkflow.out.zarr", folder / f"{label}-dask+zarr.out.zarr")
    print(f"   speed-up {speed:.2f}x   RSS chunkflow / dask+zarr {memory:.2f}   max |diff| {diff:.2e}")


def bench_default_blocks(folder: Path, side: int, repeat: int) -> None:
    print(f"default blocks: Gaussian of {side}^2 uint16 -> float32, map_chunks with no "
          "chunks= vs map_overlap + to_zarr (ratios: dask+zarr / chunkflow)")
    for chunk in (c for c in (64, 256, 1024, 4096) if c <= side):
        label = f"sweep-{side}-{chunk}"
        source = folder / f"{label}.zarr"
        _make(source, (side, side), (chunk, chunk))
        figures = {}
        for kind in ("chunkflow", "dask+zarr"):
            runs = [_run(kind, source, folder / f"{label}-{kind}.out.zarr")
                    for _ in range(repeat)]
            figures[kind] = (statistics.median(r["seconds"] for r in runs),
                             statistics.median(r["rss"] for r in runs) / 2**20,
                             int(runs[0]["tasks"]))
        ours, theirs = figures["chunkflow"], figures["dask+zarr"]
        print(f"   {chunk:5d}^2 chunks | chunkflow {ours[0]:6.2f} s {ours[1]:5.0f} MiB "
              f"{ours[2]:5d} tasks | dask+zarr {theirs[0]:6.2f} s {theirs[1]:5.0f} MiB "
              f"{theirs[2]:5d} tasks | time {theirs[0] / ours[0]:4.2f}x memory "
              f"{theirs[1] / ours[1]:4.2f}x", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2048^2 and 256^3")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--keep", type=Path, help="reuse this folder for the data")
    parser.add_argument("--only-default", action="store_true",
                        help="only the default-blocks sweep")
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    folder = args.keep or Path(tempfile.mkdtemp(prefix="chunkflow-bench-map-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        side, cube = (2048, 256) if args.quick else (8192, 512)
        if args.only_default:
            bench_default_blocks(folder, side // 2 if not args.quick else side, args.repeat)
            return
        bench_case(folder, f"2d-{side}", (side, side), (512, 512), args.repeat)
        bench_case(folder, f"3d-{cube}", (cube,) * 3, (128,) * 3, args.repeat)
        bench_default_blocks(folder, side // 2 if not args.quick else side, args.repeat)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
