"""Exact percentiles in bounded memory: chunkflow against numpy in memory and dask.

Run by hand (not part of the test suite), with nothing else running::

    python benchmarks/bench_reductions.py [--repeat 3] [--quick]

The array is the issue's kind of image, a smooth pattern plus noise, float32 in 512^2
chunks: 16384^2 (1 GiB) by default, 4096^2 (64 MiB) with ``--quick``. Each run is a
fresh process, which prints its time, its peak RSS and the percentiles
``[1, 5, 25, 50, 75, 95, 99]``:

- ``chunkflow``: ``chunkflow.percentile(path, q, max_memory="64 MiB")`` (16 MiB with
  ``--quick``), exact;
- ``numpy``: the whole array read into memory, then ``np.percentile`` (the reference;
  the read is timed apart);
- ``dask``: ``da.percentile(da.from_zarr(path).ravel(), q)`` over zarr-python 3, dask's
  approximate merge of per-block percentiles.

The error of each is its largest absolute difference from numpy's answer. An idle
process (the imports alone) gives the RSS every figure starts from.
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
Q = [1, 5, 25, 50, 75, 95, 99]
KINDS = ("idle", "chunkflow", "numpy", "dask")


def _make_image(path: Path, side: int) -> None:
    """A smooth pattern plus noise, written a strip of rows at a time."""
    import chunkflow

    z = chunkflow.create((side, side), chunks=(512, 512), dtype="f4", store=str(path),
                         overwrite=True)
    rng = np.random.default_rng(18)
    columns = np.arange(side, dtype="f4") / side
    for row in range(0, side, 1024):
        rows = np.arange(row, min(side, row + 1024), dtype="f4")[:, None] / side
        pattern = 100 * np.sin(6 * columns)[None, :] * np.cos(4 * rows)
        z[row:row + len(rows)] = (pattern + rng.normal(0, 5, pattern.shape)).astype("f4")


def _peak_rss() -> int:
    """This process's peak resident set (VmHWM), in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _child(kind: str, path: str, budget: str) -> None:
    """Runs in a fresh process: one percentile computation."""
    import dask.array as da
    import zarr

    import chunkflow

    # chunkflow loads its graph functions on first use: load them before the
    # baseline and the timer, as the peers' code is loaded.
    import chunkflow.graph  # noqa: F401

    extra: dict[str, float] = {}
    start = time.perf_counter()
    values: list[float] = []
    if kind == "chunkflow":
        values = chunkflow.percentile(path, Q, max_memory=budget).tolist()
    elif kind == "numpy":
        data = chunkflow.open(path, mode="r", cache=False)[...]
        extra["read"] = time.perf_counter() - start
        start = time.perf_counter()
        values = np.percentile(data, Q).tolist()
    elif kind == "dask":
        x = da.from_zarr(zarr.open_array(path, mode="r")).ravel()
        values = da.percentile(x, Q).compute().tolist()
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "rss": _peak_rss(), "values": values, **extra}))


def _run_child(kind: str, path: Path, budget: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(path), budget],
        capture_output=True, text=True, check=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench(folder: Path, side: int, budget: str, repeat: int) -> None:
    path = folder / "image.zarr"
    if not path.exists():
        _make_image(path, side)
    print(f"percentiles {Q} of a {side}^2 float32 image ({side * side * 4 / 2**30:.2f} GiB, "
          f"512^2 chunks); chunkflow under max_memory={budget!r}")
    runs = {kind: [_run_child(kind, path, budget) for _ in range(repeat)] for kind in KINDS}
    exact = np.array(runs["numpy"][0]["values"])
    idle = statistics.median(r["rss"] for r in runs["idle"]) / 2**20
    seconds = {k: statistics.median(r["seconds"] for r in runs[k]) for k in KINDS}
    print(f"   {'':10s} {'seconds':>9s} {'peak RSS MiB':>13s} {'above idle':>11s} "
          f"{'max abs error':>14s}")
    for kind in KINDS[1:]:
        rss = statistics.median(r["rss"] for r in runs[kind]) / 2**20
        error = float(np.max(np.abs(np.array(runs[kind][0]["values"]) - exact)))
        print(f"   {kind:10s} {seconds[kind]:9.2f} {rss:13.0f} {rss - idle:11.0f} "
              f"{error:14.3g}")
    read = statistics.median(r["read"] for r in runs["numpy"])
    print(f"   (numpy's figure excludes reading the array into memory: {read:.2f} s; idle "
          f"process {idle:.0f} MiB)")
    print(f"   time ratio chunkflow / numpy in memory: "
          f"{seconds['chunkflow'] / seconds['numpy']:.2f}x; / numpy read + percentile: "
          f"{seconds['chunkflow'] / (seconds['numpy'] + read):.2f}x; / dask approximate: "
          f"{seconds['chunkflow'] / seconds['dask']:.2f}x")
    print(f"   numpy     {np.array2string(exact, precision=4)}")
    print(f"   chunkflow {np.array2string(np.array(runs['chunkflow'][0]['values']), precision=4)}")
    print(f"   dask      {np.array2string(np.array(runs['dask'][0]['values']), precision=4)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a 4096^2 image, 16 MiB budget")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--keep", type=Path, help="reuse this folder for the data")
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    folder = args.keep or Path(tempfile.mkdtemp(prefix="chunkflow-bench-reductions-"))
    try:
        side, budget = (4096, "16 MiB") if args.quick else (16384, "64 MiB")
        bench(folder, side, budget, args.repeat)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
