"""The same jobs on threads and on a 2-worker ``LocalCluster``, side by side.

Run by hand (not part of the test suite), with nothing else running::

    python benchmarks/bench_cluster.py [--repeat 3] [--quick] [--only histogram,moments]

Each job runs on dask's threads in this process (``scheduler="threads"``, one thread a
core) and on a ``LocalCluster`` of two worker processes with one thread each (what
``LocalCluster(n_workers=2, threads_per_worker=1)`` starts: its nannies pin glibc's
``mmap`` threshold with ``MALLOC_TRIM_THRESHOLD_``, so every temporary of 128 KiB or
more is mapped and faulted in afresh). Runs alternate between the two, ``--repeat``
times after one unmeasured run of each (imports, codecs and caches on the workers).
It prints, per job, the median time with its range, the tasks run (counted by a dask
callback on threads and by distributed's task stream on the cluster), the CPU time
(this process's on threads; the workers', the scheduler's and this client's on the
cluster, less what the idle cluster spends in as long: a figure a loaded machine
disturbs less than the wall time), the CPU per task
on the cluster, and the ratios cluster / threads (goal: 1.3 or less). dask + zarr-python's
equivalent of the job, where one exists, runs the same way as a peer.

The jobs (``--quick`` in brackets):

``histogram``  ``chunkflow.histogram(path, bins=256)`` of 16384^2 (8192^2) uint16 in
               1024^2 (512^2) chunks: 256 chunks, a min/max pass then the counts;
               peer: ``x.min(), x.max()`` then ``da.histogram``
``histogram_f4`` the same of the array as float32 (``to_dask(path).astype("f4")``):
               numpy's float binning and a min/max pass; peer: the same of
               ``da.from_zarr(...).astype("f4")``
``moments``    ``chunkflow.reduce(path, ("mean", "std"))`` of the same array; peer:
               ``dask.compute(x.mean(), x.std())``
``gaussian``   ``map_chunks(gaussian_filter, depth=8)`` of 8192^2 (4096^2) uint16 to a new
               float32 array; peer: ``map_overlap`` + ``to_zarr``
``label``      ``chunkflow.label`` of 16384^2 (8192^2) uint8 blobs in 1024^2 (512^2)
               chunks: about 2 s on threads, so the 1.3x rule applies (no dask peer)
``pyramid``    ``chunkflow.pyramid`` (mean) of the 8192^2 (4096^2) array (no dask peer)
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

JOBS = ("histogram", "histogram_f4", "moments", "gaussian", "label", "pyramid")


def _make(path: Path, side: int, chunk: int, dtype: str = "u2") -> None:
    """A smooth pattern plus noise (uint16) or blobs (uint8), a strip of rows at a time."""
    import chunkflow

    if path.exists():
        return
    z = chunkflow.create((side, side), chunks=(chunk, chunk), dtype=dtype, store=str(path))
    rng = np.random.default_rng(38)
    columns = np.arange(side) / side
    for row in range(0, side, chunk):
        rows = np.arange(row, min(side, row + chunk))[:, None] / side
        pattern = np.sin(40 * columns)[None, :] * np.cos(30 * rows)
        if dtype == "u1":
            z[row:row + len(rows)] = (pattern + rng.normal(0, 0.3, pattern.shape) > 0.5)
        else:
            noisy = 20000 + 15000 * pattern + rng.normal(0, 500, pattern.shape)
            z[row:row + len(rows)] = noisy.astype(dtype)


def _gaussian(block: np.ndarray) -> np.ndarray:
    from scipy import ndimage

    return ndimage.gaussian_filter(block.astype("f4"), 2.0)


# -------------------------------------------------------------------- the jobs


def _chunkflow_job(job: str, data: dict[str, Path], out: Path, scheduler: Any) -> None:
    import chunkflow

    shutil.rmtree(out, ignore_errors=True)
    if job == "histogram":
        chunkflow.histogram(str(data["big"]), bins=256, scheduler=scheduler)
    elif job == "histogram_f4":
        x = chunkflow.to_dask(str(data["big"])).astype("f4")
        chunkflow.histogram(x, bins=256, scheduler=scheduler)
    elif job == "moments":
        chunkflow.reduce(str(data["big"]), ("mean", "std"), scheduler=scheduler)
    elif job == "gaussian":
        chunkflow.map_chunks(_gaussian, str(data["image"]), out=str(out), depth=8,
                             dtype="f4", scheduler=scheduler)
    elif job == "label":
        chunkflow.label(str(data["blobs"]), str(out), scheduler=scheduler)
    elif job == "pyramid":
        chunkflow.pyramid(str(data["image"]), str(out), scheduler=scheduler)


def _dask_job(job: str, data: dict[str, Path], out: Path, scheduler: Any) -> bool:
    """dask + zarr-python's equivalent; False when there is none."""
    import dask
    import dask.array as da
    import zarr

    shutil.rmtree(out, ignore_errors=True)
    if job in ("histogram", "histogram_f4", "moments"):
        x = da.from_zarr(zarr.open_array(str(data["big"]), mode="r"))
        if job == "histogram_f4":
            x = x.astype("f4")
        if job == "moments":
            dask.compute(x.mean(), x.std(), scheduler=scheduler)
        else:
            low, high = dask.compute(x.min(), x.max(), scheduler=scheduler)
            dask.compute(da.histogram(x, bins=256, range=(low, high))[0], scheduler=scheduler)
        return True
    if job == "gaussian":
        x = da.from_zarr(zarr.open_array(str(data["image"]), mode="r"))
        y = x.map_overlap(_gaussian, depth=8, boundary="reflect", dtype="f4")
        dask.compute(y.to_zarr(str(out), compute=False), scheduler=scheduler)
        return True
    return False


# -------------------------------------------------------------- the harness


def _counted_threads(run: Callable[[], Any]) -> tuple[float, int, float]:
    """(seconds, tasks, CPU seconds) of ``run()`` on dask's threads in this process."""
    from dask.callbacks import Callback

    done = [0]

    class _Count(Callback):
        def _posttask(self, *args: Any) -> None:
            done[0] += 1

    start, cpu = time.perf_counter(), time.process_time()
    with _Count():
        ran = run()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    if ran is False:
        return float("nan"), 0, float("nan")
    return seconds, done[0], cpu


def _counted_cluster(run: Callable[[], Any], client: Any) -> tuple[float, int, float]:
    """(seconds, tasks, CPU seconds) of ``run()`` on ``client``'s cluster (tasks from
    distributed's task stream; CPU of the workers, the scheduler and this client)."""
    from distributed import get_task_stream

    cpu = _cluster_cpu(client)
    start = time.perf_counter()
    with get_task_stream(client) as stream:
        ran = run()
    seconds = time.perf_counter() - start
    # Less what the cluster spends idle meanwhile (heartbeats, the workers' profilers):
    # a loaded machine stretches the wall time, and that CPU with it.
    cpu = _cluster_cpu(client) - cpu - IDLE[0] * seconds
    if ran is False:
        return float("nan"), 0, float("nan")
    return seconds, len(stream.data), cpu


#: CPU seconds a second the idle cluster spends (measured once, in :func:`bench`).
IDLE = [0.0]


def _cluster_cpu(client: Any) -> float:
    """CPU seconds so far of the workers, the scheduler and this process."""
    workers = client.run(time.process_time)
    return sum(workers.values()) + client.run_on_scheduler(time.process_time) + \
        time.process_time()


def _idle_rate(client: Any, seconds: float = 3.0) -> float:
    before = _cluster_cpu(client)
    time.sleep(seconds)
    return (_cluster_cpu(client) - before) / seconds


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f} [{min(values):.2f}-{max(values):.2f}]"


def bench(folder: Path, quick: bool, repeat: int, jobs: list[str]) -> None:
    from distributed import Client, LocalCluster

    big, image, blobs = (8192, 4096, 8192) if quick else (16384, 8192, 16384)
    chunk = 512 if quick else 1024
    data = {"big": folder / f"big-{big}.zarr", "image": folder / f"image-{image}.zarr",
            "blobs": folder / f"blobs-{blobs}.zarr"}
    _make(data["big"], big, chunk)
    _make(data["image"], image, 512)
    _make(data["blobs"], blobs, chunk, "u1")
    print(f"load {open('/proc/loadavg').read().split()[:3]}, {os.cpu_count()} cores; "
          f"threads: dask's pool in this process; cluster: LocalCluster(n_workers=2, "
          f"threads_per_worker=1)", flush=True)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.CRITICAL) as cluster, Client(cluster) as client:
        IDLE[0] = _idle_rate(client)
        print(f"the idle cluster: {IDLE[0]:.3f} CPU seconds a second (taken off its CPU "
              "figures)", flush=True)
        for job in jobs:
            _bench_job(job, data, folder, client, repeat)
    print(f"load {open('/proc/loadavg').read().split()[:3]}", flush=True)


def _bench_job(job: str, data: dict[str, Path], folder: Path, client: Any, repeat: int) -> None:
    out = folder / f"out-{job}.zarr"
    figures: dict[tuple[str, str], list[tuple[float, int, float]]] = {}
    kinds = {"chunkflow": _chunkflow_job, "dask+zarr": _dask_job}
    for lap in range(repeat + 1):
        for kind, runner in kinds.items():
            for where in ("threads", "cluster"):
                def run(runner: Any = runner, where: str = where) -> Any:
                    return runner(job, data, out, "threads" if where == "threads" else client)
                measured = _counted_threads(run) if where == "threads" else \
                    _counted_cluster(run, client)
                if lap:  # the first lap warms both up
                    figures.setdefault((kind, where), []).append(measured)
    print(f"{job}:", flush=True)
    for kind in kinds:
        threads = [s for s, _, _ in figures[(kind, "threads")]]
        cluster = [s for s, _, _ in figures[(kind, "cluster")]]
        if any(np.isnan(threads)):
            print(f"   {kind:10s} (no equivalent)")
            continue
        cpu_t = statistics.median(c for _, _, c in figures[(kind, "threads")])
        cpu_c = statistics.median(c for _, _, c in figures[(kind, "cluster")])
        tasks_t, tasks_c = figures[(kind, "threads")][0][1], figures[(kind, "cluster")][0][1]
        per_task = 1e3 * cpu_c / max(tasks_c, 1)
        print(f"   {kind:10s} threads {_median(threads)} s {tasks_t:6d} tasks CPU {cpu_t:6.2f} s"
              f" | cluster {_median(cluster)} s {tasks_c:6d} tasks CPU {cpu_c:6.2f} s "
              f"({per_task:5.1f} ms a task) | cluster/threads: time "
              f"{statistics.median(cluster) / statistics.median(threads):4.2f} CPU "
              f"{cpu_c / cpu_t:4.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller arrays (quarter size)")
    parser.add_argument("--only", default=",".join(JOBS), help=f"comma-separated subset of {JOBS}")
    parser.add_argument("--keep", type=Path, help="reuse this folder for the data")
    args = parser.parse_args()
    jobs = [job for job in args.only.split(",") if job]
    unknown = set(jobs) - set(JOBS)
    if unknown:
        parser.error(f"unknown jobs {sorted(unknown)}; choose from {JOBS}")
    folder = args.keep or Path(tempfile.mkdtemp(prefix="chunkflow-bench-cluster-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        bench(folder, args.quick, args.repeat, jobs)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
