"""The graph builder, read side: chunkflow.to_dask against dask + zarr-python 3.

Run by hand (not part of the test suite), with nothing else running::

    python benchmarks/bench_graph.py [--repeat 5] [--quick]

Cases:

1. **Build** a dask array over 10^6 chunks (10^6 x 10^6 uint8 in 1000^2 chunks):
   ``chunkflow.to_dask(z, blocks=(1, 1))`` against ``da.from_zarr(zarr_array)``.
2. **Slice and sum**: a 10,000-chunk region (100 x 100 chunks of 100^2 uint8) out of
   a 1,000,000-chunk array on a local folder, then ``.sum().compute()``:
   ``chunkflow.to_dask(z)[region].sum()`` against ``da.from_zarr(path)[region].sum()``.
3. **mean + std** of an 8192^2 uint16 array (512^2 chunks, zstd): time and peak RSS of
   ``chunkflow.reduce(z, ("mean", "std"))`` against ``dask.compute(x.mean(), x.std())``
   over ``da.from_zarr``, each in a fresh process.
4. **Peak RSS at two sizes**: the same mean + std at 8192^2 and 16384^2.
5. **Default blocks**: plain dask code on ``chunkflow.to_dask(path)`` with no
   ``blocks=`` against ``da.from_zarr(zarr_array)``, for an 8192^2 uint16 array (2048^2
   with ``--quick``) in chunks of 64^2, 256^2, 1024^2 and 4096^2. Two workloads, each
   in a fresh process per case (time and peak RSS): ``dask.compute(x.mean(), x.std())``,
   and ``dask.compute(x.sum(), x.max(), x[::3, 100:-100].sum(),
   x.map_blocks(np.sqrt).sum())``. Ratios above 1 favour chunkflow.

Every figure is the median of ``--repeat`` runs, with the range in brackets.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):8.3f} [{min(values):.3f}-{max(values):.3f}]"


def _timed(fn: Callable[[], Any], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


# ------------------------------------------------------------------ build


def bench_build(folder: Path, repeat: int) -> None:
    import dask.array as da
    import zarr

    import chunkflow

    path = str(folder / "build.zarr")
    chunkflow.create((10**6, 10**6), chunks=(1000, 1000), dtype="u1", store=path, overwrite=True)
    z = chunkflow.open(path, mode="r")
    zz = zarr.open_array(path, mode="r")
    ours = _timed(lambda: chunkflow.to_dask(z, blocks=(1, 1)), repeat)
    theirs = _timed(lambda: da.from_zarr(zz), max(1, repeat // 2))
    print("1. build a dask array over 10^6 chunks (seconds)")
    print(f"   chunkflow.to_dask         {_median(ours)}")
    print(f"   da.from_zarr (zarr 3)     {_median(theirs)}")
    print(f"   ratio                     {statistics.median(theirs) / statistics.median(ours):8.0f}x")


# --------------------------------------------------------- slice and sum


def bench_slice_sum(folder: Path, repeat: int, quick: bool = False) -> None:
    import dask.array as da
    import zarr

    import chunkflow

    path = str(folder / "slice.zarr")
    side, cut = (10_000, 1_000) if quick else (100_000, 10_000)  # 10^4 or 10^6 chunks
    z = chunkflow.create((side, side), chunks=(100, 100), dtype="u1", store=path,
                         compressor=None, overwrite=True)
    region = (slice(2 * cut, 3 * cut), slice(5 * cut, 6 * cut))  # 1% of the chunks
    z[region] = np.random.default_rng(0).integers(0, 255, (cut, cut), dtype="u1")
    expected = int(z[region].sum(dtype="u8"))

    def ours() -> None:
        fresh = chunkflow.open(path, mode="r", cache=False)
        assert int(chunkflow.to_dask(fresh)[region].sum().compute()) == expected

    def theirs() -> None:
        assert int(da.from_zarr(zarr.open_array(path, mode="r"))[region].sum().compute()) == expected

    ours_t = _timed(ours, repeat)
    theirs_t = _timed(theirs, max(1, repeat // 2))
    print(f"2. slice {(cut // 100) ** 2:,} chunks out of {(side // 100) ** 2:,} and sum "
          "(seconds, threads, cold cache)")
    print(f"   chunkflow                 {_median(ours_t)}")
    print(f"   da.from_zarr (zarr 3)     {_median(theirs_t)}")
    print(f"   ratio                     {statistics.median(theirs_t) / statistics.median(ours_t):8.1f}x")


# ------------------------------------------------------ mean + std (RSS)


def _make_image(path: Path, side: int) -> None:
    import chunkflow

    if path.exists():
        return
    z = chunkflow.create((side, side), chunks=(512, 512), dtype="u2", store=str(path),
                         codecs=[{"name": "bytes", "configuration": {"endian": "little"}},
                                 {"name": "zstd", "configuration": {"level": 1}}])
    rng = np.random.default_rng(side)
    for row in range(0, side, 2048):
        z[row:row + 2048] = rng.integers(0, 4096, (min(2048, side - row), side), dtype="u2")


def _peak_rss() -> int:
    """This process's peak resident set (VmHWM), in bytes.

    Not ``ru_maxrss``: Linux carries it over ``execve`` from the forking parent, so a
    child started by a large benchmark process would report the parent's peak.
    """
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _default_workload(kind: str, path: str, work: str) -> tuple[float, int]:
    """One workload on a default dask array over ``path``: (seconds, peak RSS)."""
    import dask
    import dask.array as da
    import zarr

    import chunkflow

    # chunkflow loads its graph functions on first use: load them before the timer, as
    # the peers' code is loaded.
    import chunkflow.graph  # noqa: F401

    start = time.perf_counter()
    if kind.startswith("to_dask"):
        if "@" in kind:  # to_dask@BYTES: another grouping threshold, to compare
            import chunkflow.graph.read as read

            read.DEFAULT_MIN_BLOCK_BYTES = int(kind.split("@")[1])
        # The user's path from the issue: open the array, then to_dask(z).
        x = chunkflow.to_dask(chunkflow.open(path, mode="r"))
    else:
        x = da.from_zarr(zarr.open_array(path, mode="r"))
    if work == "mean+std":
        dask.compute(x.mean(), x.std())
    else:
        dask.compute(x.sum(), x.max(), x[::3, 100:-100].sum(),
                     x.map_blocks(np.sqrt, dtype="f8").sum())
    return time.perf_counter() - start, _peak_rss()


def _child(kind: str, path: str) -> None:
    """Runs in a fresh process: one mean + std, prints seconds and peak RSS."""
    if "|" in kind:  # case 5: "<kind>|<workload>"
        which, work = kind.split("|")
        seconds, peak = _default_workload(which, path, work)
        print(json.dumps({"seconds": seconds, "rss": peak}))
        return
    import dask
    import dask.array as da
    import zarr

    import chunkflow

    # chunkflow loads its graph functions on first use: load them before the
    # baseline and the timer, as the peers' code is loaded.
    import chunkflow.graph  # noqa: F401

    start = time.perf_counter()
    if kind == "chunkflow":
        stats = chunkflow.reduce(chunkflow.open(path, mode="r", cache=False), ("mean", "std"))
        mean, std = stats["mean"], stats["std"]
    else:
        x = da.from_zarr(zarr.open_array(path, mode="r"))
        mean, std = dask.compute(x.mean(), x.std())
    seconds = time.perf_counter() - start
    peak = _peak_rss()
    print(json.dumps({"seconds": seconds, "rss": peak, "mean": float(mean), "std": float(std)}))


def run_child(script: str, *args: str) -> dict[str, float]:
    """Run ``script --child *args`` in a fresh interpreter; the JSON of its last line."""
    out = subprocess.run(
        [sys.executable, script, "--child", *args],
        capture_output=True, text=True, check=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _run_child(kind: str, path: Path) -> dict[str, float]:
    return run_child(__file__, kind, str(path))


def bench_mean_std(folder: Path, repeat: int, sides: tuple[int, ...]) -> None:
    print("3/4. mean + std of uint16 images, each run in a fresh process (seconds; peak RSS MiB)")
    rss: dict[tuple[str, int], float] = {}
    times: dict[tuple[str, int], float] = {}
    for side in sides:
        path = folder / f"img{side}.zarr"
        _make_image(path, side)
        for kind in ("chunkflow", "dask+zarr"):
            runs = [_run_child(kind, path) for _ in range(repeat)]
            secs = [r["seconds"] for r in runs]
            mib = [r["rss"] / 2**20 for r in runs]
            times[kind, side] = statistics.median(secs)
            rss[kind, side] = statistics.median(mib)
            print(f"   {side}^2 {kind:10s} {_median(secs)} s   RSS {_median(mib)} MiB")
        print(f"   {side}^2 speed ratio dask+zarr / chunkflow: "
              f"{times['dask+zarr', side] / times['chunkflow', side]:.2f}x")
    if len(sides) == 2:
        small, large = sides
        for kind in ("chunkflow", "dask+zarr"):
            print(f"   RSS {large}^2 / {small}^2 ({kind}): {rss[kind, large] / rss[kind, small]:.2f}x")


def _make_chunked(path: Path, side: int, chunk: int) -> None:
    import chunkflow

    if path.exists():
        return
    z = chunkflow.create((side, side), chunks=(chunk, chunk), dtype="u2", store=str(path),
                         codecs=[{"name": "bytes", "configuration": {"endian": "little"}},
                                 {"name": "zstd", "configuration": {"level": 1}}])
    rng = np.random.default_rng(chunk)
    rows = max(chunk, 1024)
    for row in range(0, side, rows):
        z[row:row + rows] = rng.integers(0, 4096, (min(rows, side - row), side), dtype="u2")


def bench_default_blocks(folder: Path, repeat: int, side: int,
                         kinds: tuple[str, ...] = ("to_dask", "from_zarr")) -> None:
    print(f"5. default blocks, {side}^2 uint16, fresh process per run "
          "(seconds; peak RSS MiB; ratios from_zarr / to_dask)")
    for work in ("mean+std", "sum,max,slice,map_blocks"):
        for chunk in (c for c in (64, 256, 1024, 4096) if c <= side):
            path = folder / f"default{side}-{chunk}.zarr"
            _make_chunked(path, side, chunk)
            figures = {}
            for kind in kinds:
                runs = [_run_child(f"{kind}|{work}", path) for _ in range(repeat)]
                figures[kind] = ([r["seconds"] for r in runs],
                                 [r["rss"] / 2**20 for r in runs])
            line = f"   {work:24s} {chunk:5d}^2"
            for kind, (secs, mib) in figures.items():
                line += f" | {kind} {statistics.median(secs):6.2f} s {statistics.median(mib):6.0f} MiB"
            ours, theirs = figures[kinds[0]], figures[kinds[-1]]
            line += (f" | time {statistics.median(theirs[0]) / statistics.median(ours[0]):4.2f}x"
                     f" memory {statistics.median(theirs[1]) / statistics.median(ours[1]):4.2f}x")
            print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true",
                        help="10^4 chunks to slice, 2048^2 and 4096^2 images")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--keep", type=Path, help="reuse this folder for the data")
    parser.add_argument("--only-default", action="store_true",
                        help="only case 5 (default blocks)")
    parser.add_argument("--kinds", default="to_dask,from_zarr", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    folder = args.keep or Path(tempfile.mkdtemp(prefix="chunkflow-bench-graph-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        side = 2048 if args.quick else 8192
        if args.only_default:
            bench_default_blocks(folder, args.repeat, side, tuple(args.kinds.split(",")))
            return
        bench_build(folder, args.repeat)
        bench_slice_sum(folder, args.repeat, args.quick)
        sides = (2048, 4096) if args.quick else (8192, 16384)
        bench_mean_std(folder, args.repeat, sides)
        bench_default_blocks(folder, args.repeat, side)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
