"""chunkflow.rechunk against rechunker and dask's rechunk, folder to folder.

Run by hand (not part of the test suite), with nothing else running::

    python benchmarks/bench_rechunk.py [--repeat 3] [--quick]

A uint16 array of ``(64, 4096, 4096)`` (2 GiB) in ``(1, 4096, 4096)`` chunks is
rechunked to ``(64, 256, 256)`` with a memory budget of 256 MiB (``--quick``: a
``(64, 1024, 1024)`` array to ``(64, 64, 64)`` in 16 MiB, the same ratios), Zarr v2
to Zarr v2, zstd level 1 everywhere, by:

- ``chunkflow``: ``chunkflow.rechunk(..., max_memory=...)`` (an intermediate array
  in a temporary folder), dask threads;
- ``rechunker``: ``rechunker.rechunk(..., max_mem=...).execute()``, dask threads. Every
  rechunker release needs zarr < 3, so it runs in its own virtual environment, made
  (once) under ``~/.cache/chunkflow-bench/rechunker-venv`` with
  ``pip install rechunker "zarr<3" dask``;
- ``dask p2p``: ``x.rechunk(method="p2p").to_zarr(...)`` on a ``LocalCluster`` of one
  in-process worker with 2 threads (zarr-python 3);
- ``dask tasks``: ``x.rechunk(method="tasks").to_zarr(...)``, dask threads.

Each run is a fresh process that prints its time and peak RSS (VmHWM) and the RSS of
the interpreter with its libraries loaded before it starts (after the same job on a
tiny in-memory array, so that code loaded on first use counts as the interpreter's);
figures are medians of
``--repeat`` runs, with the range in brackets. Every output is checked against the
source on sampled blocks.
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

VENV = Path.home() / ".cache" / "chunkflow-bench" / "rechunker-venv"
FULL = {"shape": (64, 4096, 4096), "source": (1, 4096, 4096), "target": (64, 256, 256),
        "max_memory": 256 * 2**20}
QUICK = {"shape": (64, 1024, 1024), "source": (1, 1024, 1024), "target": (64, 64, 64),
         "max_memory": 16 * 2**20}
KINDS = ("chunkflow", "rechunker", "dask p2p", "dask tasks")

# Runs inside the rechunker virtual environment (zarr 2): no chunkflow there.
RECHUNKER_CHILD = """
import json, sys, time
args = json.loads(sys.argv[1])
import numcodecs, rechunker, zarr, dask
def peak():
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) * 1024 for l in status if l.startswith("VmHWM:"))
# Warm up on a tiny array in memory: the code a job loads belongs to the interpreter.
tiny = zarr.array(__import__("numpy").zeros((8, 16, 16), "u2"), chunks=(1, 16, 16))
rechunker.rechunk(tiny, (8, 4, 4), 10**6, zarr.storage.MemoryStore(),
                  temp_store=zarr.storage.MemoryStore()).execute()
baseline = peak()
start = time.perf_counter()
source = zarr.open_array(args["source"], mode="r")
options = {"compressor": numcodecs.Zstd(level=1)}
plan = rechunker.rechunk(source, tuple(args["target_chunks"]), args["max_memory"],
                         args["out"], temp_store=args["temp"], target_options=options,
                         temp_options=options)
plan.execute()
print(json.dumps({"seconds": time.perf_counter() - start, "rss": peak(),
                  "baseline": baseline}))
"""


def _make(path: Path, case: dict) -> None:
    import numcodecs

    import chunkflow

    if path.exists():
        return
    z = chunkflow.create(case["shape"], chunks=case["source"], dtype="u2", store=str(path),
                         zarr_format=2, compressor=numcodecs.Zstd(level=1))
    rng = np.random.default_rng(0)
    for plane in range(case["shape"][0]):  # 12-bit noise, as a camera gives
        z[plane] = rng.integers(0, 4096, case["shape"][1:], dtype="u2")


def _warm_up(kind: str) -> None:
    """Run the job once on a tiny array in memory: the code it loads on first use
    counts as the interpreter's (the p2p cluster starts within the measured run)."""
    import dask.array as da
    import zarr

    import chunkflow

    tiny = np.zeros((8, 16, 16), "u2")
    if kind == "chunkflow":
        chunkflow.rechunk(chunkflow.array(tiny, chunks=(1, 16, 16)), (8, 4, 4),
                          chunkflow.MemoryStore(), max_memory="64 KiB",
                          temp=chunkflow.MemoryStore())
    elif kind == "dask tasks":
        da.from_array(tiny, chunks=(1, 16, 16)).rechunk((8, 4, 4)).to_zarr(
            zarr.storage.MemoryStore())


def _child(kind: str, args: dict) -> None:
    import dask
    import dask.array as da
    import numcodecs
    import zarr

    import chunkflow

    # chunkflow loads its graph functions on first use: load them before the
    # baseline and the timer, as the peers' code is loaded.
    import chunkflow.graph  # noqa: F401

    zstd = numcodecs.Zstd(level=1)
    _warm_up(kind)
    baseline = _peak_rss()
    start = time.perf_counter()
    if kind == "chunkflow":
        chunkflow.rechunk(args["source"], tuple(args["target_chunks"]), args["out"],
                          max_memory=args["max_memory"], temp=args["temp"], compressors=zstd)
    else:
        x = da.from_zarr(zarr.open_array(args["source"], mode="r"))
        method = "p2p" if kind == "dask p2p" else "tasks"
        y = x.rechunk(tuple(args["target_chunks"]), method=method)
        pending = y.to_zarr(args["out"], zarr_format=2, compressors=zstd, compute=False)
        if method == "p2p":
            from distributed import Client, LocalCluster

            with LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                              dashboard_address=None) as cluster, Client(cluster) as client:
                client.compute(pending).result()
        else:
            dask.compute(pending, scheduler="threads")
    print(json.dumps({"seconds": time.perf_counter() - start, "rss": _peak_rss(),
                      "baseline": baseline}))


def _rechunker_python() -> Path | None:
    """The rechunker environment's interpreter, made on first use; ``None`` if it cannot be."""
    python = VENV / "bin" / "python"
    if not python.exists():
        try:
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
            subprocess.run([str(python), "-m", "pip", "install", "-q", "rechunker", "zarr<3",
                            "dask"], check=True)
        except (subprocess.CalledProcessError, OSError) as err:
            print(f"   (rechunker skipped: its environment could not be made: {err})")
            return None
    return python


def _run(kind: str, args: dict) -> dict[str, float] | None:
    for path in (args["out"], args["temp"]):
        shutil.rmtree(path, ignore_errors=True)
    if kind == "rechunker":
        python = _rechunker_python()
        if python is None:
            return None
        command = [str(python), "-c", RECHUNKER_CHILD, json.dumps(args)]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    else:
        command = [sys.executable, __file__, "--child", kind, json.dumps(args)]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)
    if done.returncode:
        print(f"   ({kind} failed: {done.stderr.strip().splitlines()[-1:]})")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def _check(source: Path, out: Path, target: tuple[int, ...]) -> bool:
    """Sampled target-sized blocks of ``out`` equal the source's."""
    import chunkflow

    a = chunkflow.open_array(str(source), mode="r", cache=False)
    b = chunkflow.open_array(str(out), mode="r", cache=False)
    rng = np.random.default_rng(1)
    for _ in range(4):
        corner = [int(rng.integers(0, max(1, n - t))) for n, t in zip(a.shape, target)]
        region = tuple(slice(c, c + t) for c, t in zip(corner, target))
        if not np.array_equal(a[region], b[region]):
            return False
    return b.chunks == target


def bench(folder: Path, case: dict, repeat: int) -> None:
    source = folder / "source.zarr"
    _make(source, case)
    results: dict[str, list[dict[str, float]]] = {}
    for kind in KINDS:
        args = {"source": str(source), "target_chunks": case["target"],
                "max_memory": case["max_memory"], "out": str(folder / f"{kind}.zarr"),
                "temp": str(folder / f"{kind}-temp.zarr")}
        runs = [_run(kind, args) for _ in range(repeat)]
        if all(r is not None for r in runs):
            results[kind] = runs  # type: ignore[assignment]
            if not _check(source, Path(args["out"]), case["target"]):
                print(f"   ({kind}: the output differs from the source!)")
        shutil.rmtree(args["out"], ignore_errors=True)
        shutil.rmtree(args["temp"], ignore_errors=True)
    budget = case["max_memory"] / 2**20
    nbytes = np.prod(case["shape"]) * 2 / 2**30
    print(f"rechunk {case['shape']} uint16 ({nbytes:.2f} GiB) {case['source']} -> "
          f"{case['target']}, max_memory {budget:.0f} MiB, median [range] of {repeat}")
    for kind, runs in results.items():
        rss = [r["rss"] / 2**20 for r in runs]
        above = [(r["rss"] - r["baseline"]) / 2**20 for r in runs]
        print(f"   {kind:11s} {_median([r['seconds'] for r in runs])} s   peak RSS "
              f"{_median(rss)} MiB   above the interpreter {_median(above)} MiB")
    if "chunkflow" not in results:
        return
    ours = results["chunkflow"]
    mine = statistics.median(r["seconds"] for r in ours)
    for kind, runs in results.items():
        if kind != "chunkflow":
            print(f"   speed-up over {kind}: "
                  f"{statistics.median(r['seconds'] for r in runs) / mine:.2f}x")
    above = statistics.median((r["rss"] - r["baseline"]) / 2**20 for r in ours)
    # max_memory is one task's budget: the threads running tasks at once may hold it each.
    threads = os.cpu_count() or 1
    print(f"   chunkflow peak above the interpreter {above:.0f} MiB; max_memory {budget:.0f} "
          f"MiB per task x {threads} threads = {budget * threads:.0f} MiB: "
          f"{'within' if above <= budget * threads else 'OVER'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="(64, 1024, 1024) in 16 MiB")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--keep", type=Path, help="reuse this folder for the data")
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], json.loads(args.child[1]))
        return
    folder = args.keep or Path(tempfile.mkdtemp(prefix="chunkflow-bench-rechunk-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        bench(folder, QUICK if args.quick else FULL, args.repeat)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
