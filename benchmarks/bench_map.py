"""map_chunks against dask's map_overlap / map_blocks + to_zarr with zarr-python 3.

Run by hand (not part of the test suite), with nothing else running::

    python benchmarks/bench_map.py [--repeat 3] [--quick]

Every chunkflow run takes the default path: ``map_chunks(func, source_path,
out=target_path, depth=..., dtype=...)``, no tuning arguments. Cases:

1. a Gaussian filter (sigma 2, halo 8) of an 8192^2 uint16 image in 512^2 chunks into
   float32 (2048^2 with ``--quick``), folder to folder, against ``map_overlap`` +
   ``to_zarr``;
2. the same of a 512^3 uint16 volume in 128^3 chunks (256^3 with ``--quick``);
3. a per-chunk function over 10^4 chunks (12800^2 uint16 in 128^2 chunks; 2500 chunks
   with ``--quick``) on a 2-worker ``LocalCluster`` (one thread each), against
   ``map_blocks`` + ``to_zarr``: time per chunk, tasks, and the scheduler's share of
   the workers' time (1 - the tasks' compute time / (wall time x threads), from
   distributed's task stream);
4. default blocks: the 2-D filter on a 4096^2 image (2048^2 with ``--quick``) in chunks
   of 64^2, 256^2, 1024^2 and 4096^2.

Cases 1, 2 and 4 run each job in a fresh process, which reports its time, its CPU time
(all threads: a check on a machine that is not quiet), its peak RSS (VmHWM) and its
baseline: the RSS of the interpreter with numpy, dask, zarr and
chunkflow imported, before the job. Peaks are shown above that baseline. Every figure
is the median of ``--repeat`` runs with the range in brackets; ratios are taken between
medians of the same run (speed: dask / chunkflow; memory: chunkflow / dask, above the
baseline).
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from bench_graph import _median, _peak_rss, run_child  # noqa: E402

SIGMA = 2.0
DEPTH = 8  # scipy's radius for sigma 2: int(4 * 2 + 0.5)
KINDS = ("chunkflow", "dask+zarr")


def _make(path: Path, shape: tuple[int, ...], chunks: tuple[int, ...]) -> None:
    import chunkflow

    if path.exists():
        return
    z = chunkflow.create(shape, chunks=chunks, dtype="u2", store=str(path))
    rng = np.random.default_rng(len(shape))
    step = max(chunks[0], 1024 if len(shape) == 2 else chunks[0])
    for row in range(0, shape[0], step):
        block = rng.integers(0, 4096, (min(step, shape[0] - row), *shape[1:]), dtype="u2")
        z[row:row + step] = block


def _filter(block: np.ndarray) -> np.ndarray:
    from scipy import ndimage

    return ndimage.gaussian_filter(block, SIGMA, mode="reflect", output=np.float32)


def _scale(block: np.ndarray) -> np.ndarray:
    return block.astype(np.float32) * np.float32(0.5)


def _child(kind: str, source: str, target: str) -> None:
    """Runs in a fresh process: one job, prints seconds, peak RSS, baseline and tasks."""
    import dask
    import dask.array as da
    import zarr

    import chunkflow

    # chunkflow loads its graph functions on first use: load them before the
    # baseline and the timer, as the peers' code is loaded.
    import chunkflow.graph  # noqa: F401

    shutil.rmtree(target, ignore_errors=True)
    baseline = _peak_rss()  # the interpreter with numpy, dask, zarr and chunkflow loaded
    start, cpu = time.perf_counter(), time.process_time()
    if kind == "chunkflow":  # the default path, by location, no tuning arguments
        pending = chunkflow.map_chunks(_filter, source, out=target, depth=DEPTH, dtype="f4",
                                       compute=False)
    else:
        x = da.from_zarr(zarr.open_array(source, mode="r"))
        y = x.map_overlap(_filter, depth=DEPTH, boundary="reflect", dtype="f4")
        pending = y.to_zarr(target, compute=False)
    tasks = len(dict(dask.optimize(pending)[0].__dask_graph__()))
    dask.compute(pending)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "rss": _peak_rss(), "tasks": tasks,
                      "baseline": baseline, "cpu": time.process_time() - cpu}))


def _run(kind: str, source: Path, target: Path) -> dict[str, float]:
    return run_child(__file__, kind, str(source), str(target))


def _check_same(a: Path, b: Path) -> float:
    import chunkflow

    left = chunkflow.open(str(a), mode="r", cache=False)
    right = chunkflow.open(str(b), mode="r", cache=False)
    return float(np.abs(left[:] - right[:]).max())


def _runs(folder: Path, label: str, source: Path, repeat: int) -> dict[str, list[dict[str, float]]]:
    # Interleaved, so that a change in the machine's load touches both alike.
    results: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    for _ in range(repeat):
        for kind in KINDS:
            results[kind].append(_run(kind, source, folder / f"{label}-{kind}.out.zarr"))
    return results


def _summary(results: dict[str, list[dict[str, float]]]) -> tuple[float, float]:
    """Print one line per kind; return (speed-up, RSS above baseline ratio)."""
    medians = {}
    for kind, runs in results.items():
        secs = [r["seconds"] for r in runs]
        above = [(r["rss"] - r["baseline"]) / 2**20 for r in runs]
        base = statistics.median(r["baseline"] for r in runs) / 2**20
        cpu = statistics.median(r["cpu"] for r in runs)
        medians[kind] = (statistics.median(secs), statistics.median(above))
        print(f"   {kind:10s} {_median(secs)} s (CPU {cpu:.2f} s)   peak RSS above baseline "
              f"{_median(above)} MiB (baseline {base:.0f} MiB)   tasks {int(runs[0]['tasks'])}")
    ours, theirs = medians["chunkflow"], medians["dask+zarr"]
    return theirs[0] / ours[0], ours[1] / max(theirs[1], 1e-9)


def bench_case(folder: Path, label: str, shape: tuple[int, ...], chunks: tuple[int, ...],
               repeat: int) -> tuple[float, float]:
    source = folder / f"{label}.zarr"
    _make(source, shape, chunks)
    print(f"{label}: Gaussian sigma {SIGMA} of {shape} uint16 in {chunks} chunks -> float32")
    speed, memory = _summary(_runs(folder, label, source, repeat))
    diff = _check_same(folder / f"{label}-chunkflow.out.zarr",
                       folder / f"{label}-dask+zarr.out.zarr")
    print(f"   speed-up {speed:.2f}x   peak RSS above baseline, chunkflow / dask+zarr "
          f"{memory:.2f}   max |diff| {diff:.2e}", flush=True)
    return speed, memory


# ------------------------------------------------------------- on a cluster


def _cluster_job(kind: str, client: Any, source: str, target: str) -> tuple[float, int, float]:
    """(seconds, tasks, scheduler share) of one job on ``client``'s cluster."""
    import dask
    import dask.array as da
    import zarr
    from distributed import get_task_stream

    import chunkflow

    shutil.rmtree(target, ignore_errors=True)
    start = time.perf_counter()
    with get_task_stream(client) as stream:
        if kind == "chunkflow":
            pending = chunkflow.map_chunks(_scale, source, out=target, dtype="f4",
                                           scheduler=client, compute=False)
        else:
            x = da.from_zarr(zarr.open_array(source, mode="r"))
            pending = x.map_blocks(_scale, dtype="f4").to_zarr(target, compute=False)
        tasks = len(dict(dask.optimize(pending)[0].__dask_graph__()))
        client.compute(pending).result()
    seconds = time.perf_counter() - start
    busy = sum(part["stop"] - part["start"] for task in stream.data
               for part in task["startstops"] if part["action"] == "compute")
    threads = sum(client.nthreads().values())
    return seconds, tasks, 1 - busy / (seconds * threads)


def bench_cluster(folder: Path, side: int, repeat: int) -> float:
    from distributed import Client, LocalCluster

    chunk = 128
    nchunks = (side // chunk) ** 2
    source = folder / f"cluster-{side}.zarr"
    _make(source, (side, side), (chunk, chunk))
    print(f"cluster: x.astype(f4) * 0.5 over {nchunks} chunks ({side}^2 uint16 in {chunk}^2 "
          "chunks), 2-worker LocalCluster, one thread each")
    figures: dict[str, list[tuple[float, int, float]]] = {kind: [] for kind in KINDS}
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0",
                      processes=True, silence_logs=logging.CRITICAL) as cluster, \
            Client(cluster) as client:
        for kind in KINDS:  # once unmeasured: imports and codecs on the workers
            _cluster_job(kind, client, str(source), str(folder / f"cluster-{kind}.out.zarr"))
        for _ in range(repeat):
            for kind in KINDS:
                figures[kind].append(_cluster_job(kind, client, str(source),
                                                  str(folder / f"cluster-{kind}.out.zarr")))
    medians = {}
    for kind, runs in figures.items():
        per_chunk = [1e3 * s / nchunks for s, _, _ in runs]
        share = [100 * sh for _, _, sh in runs]
        medians[kind] = statistics.median(per_chunk)
        print(f"   {kind:10s} {_median(per_chunk)} ms per chunk   tasks {runs[0][1]:6d}   "
              f"scheduler's share {_median(share)} %")
    ratio = medians["dask+zarr"] / medians["chunkflow"]
    diff = _check_same(folder / "cluster-chunkflow.out.zarr", folder / "cluster-dask+zarr.out.zarr")
    print(f"   speed-up {ratio:.2f}x   max |diff| {diff:.2e}", flush=True)
    return ratio


# ----------------------------------------------------------- default blocks


def bench_default_blocks(folder: Path, side: int, repeat: int) -> None:
    print(f"default blocks: Gaussian of {side}^2 uint16 -> float32, map_chunks with no "
          "blocks= vs map_overlap + to_zarr (time: dask+zarr / chunkflow; memory above the "
          "baseline: chunkflow / dask+zarr)")
    for chunk in (c for c in (64, 256, 1024, 4096) if c <= side):
        label = f"sweep-{side}-{chunk}"
        source = folder / f"{label}.zarr"
        _make(source, (side, side), (chunk, chunk))
        results = _runs(folder, label, source, repeat)
        figures = {kind: (statistics.median(r["seconds"] for r in runs),
                          statistics.median((r["rss"] - r["baseline"]) / 2**20 for r in runs),
                          int(runs[0]["tasks"])) for kind, runs in results.items()}
        ours, theirs = figures["chunkflow"], figures["dask+zarr"]
        print(f"   {chunk:5d}^2 chunks | chunkflow {ours[0]:6.2f} s +{ours[1]:4.0f} MiB "
              f"{ours[2]:5d} tasks | dask+zarr {theirs[0]:6.2f} s +{theirs[1]:4.0f} MiB "
              f"{theirs[2]:5d} tasks | time {theirs[0] / ours[0]:4.2f}x memory "
              f"{ours[1] / max(theirs[1], 1e-9):4.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2048^2, 256^3, 2500 chunks")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--keep", type=Path, help="reuse this folder for the data")
    parser.add_argument("--only", default="2d,3d,cluster,default",
                        help="comma-separated subset of 2d, 3d, cluster, default")
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    folder = args.keep or Path(tempfile.mkdtemp(prefix="chunkflow-bench-map-"))
    folder.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(","))
    side, cube, grid = (2048, 256, 6400) if args.quick else (8192, 512, 12800)
    ratios = []
    try:
        if "2d" in only:
            speed, memory = bench_case(folder, f"2d-{side}", (side, side), (512, 512),
                                       args.repeat)
            ratios.append(f"2-D Gaussian {speed:.2f}x (goal >= 3x), peak RSS above baseline "
                          f"{memory:.2f}x dask's (goal <= 0.5x)")
        if "3d" in only:
            speed, _ = bench_case(folder, f"3d-{cube}", (cube,) * 3, (128,) * 3, args.repeat)
            ratios.append(f"3-D Gaussian {speed:.2f}x (goal >= 2x)")
        if "cluster" in only:
            speed = bench_cluster(folder, grid, args.repeat)
            ratios.append(f"cluster per chunk {speed:.2f}x (goal >= 3x)")
        if "default" in only:
            bench_default_blocks(folder, side // 2 if not args.quick else side, args.repeat)
        print("ratios: " + "; ".join(ratios))
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
