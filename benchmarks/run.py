"""Every chunkflow benchmark, side by side with the peers that are installed.

Run by hand, with nothing else running on the machine::

    python -m benchmarks [--quick] [--repeat N] [--only graph,map] [--markdown FILE]
    python benchmarks/run.py --quick

Runs, one after another, each in its own process:

=============  =====================================================================
``array_io``   store throughput and small chunks (chunkflow, zarr-python 3, tensorstore)
``cache``      the chunk cache and unaligned writes (chunkflow, zarr-python 3's cache)
``graph``      graph build, slice-and-sum, mean + std and peak memory (dask + zarr-python)
``map``        Gaussian filters in 2-D and 3-D, a 10^4-chunk job on a LocalCluster (dask + zarr)
``xarray``     ``xr.open_dataset`` + load, ``engine="chunkflow"`` vs ``engine="zarr"``
``sharding``   random windows of a sharded array: time and bytes read (all three)
``reductions`` exact percentiles of 1 GiB under 64 MiB (numpy in memory, dask approximate)
``objects``    HTTP and S3 (moto) with 20 ms per request: full reads, sharded windows,
               writes and a map job, with request counts (all three; dask + zarr 3)
``resume``     resumable jobs: bookkeeping overhead, a resume after a kill, S3 requests
``rechunk``    2 GiB to new chunks in 256 MiB (rechunker, dask p2p and tasks)
``pyramid``    an OME-Zarr mean pyramid of 16384^2 uint16 (ome-zarr-py, ngff-zarr)
``labels``     label + measure of 8192^2 and 512^3 (dask-image; scipy + skimage in memory)
``zarrs``      zarrs/zarr_benchmarks' scenarios on 1024^3 uint16: read all, chunk by
               chunk, inner chunk by inner chunk, round trip, standalone and through
               dask (zarr-python 3 with and without zarrs, tensorstore; the numcodecs
               and disk floors); ``pip install ".[bench]"`` for the peers
``cluster``    the same jobs on threads and on a 2-worker ``LocalCluster``: time, tasks,
               CPU and their ratios (dask + zarr-python)
``scale``      10^3 to 10^6 synthetic chunks on a 2-worker cluster: build, run, tasks,
               scheduler CPU per task, client and scheduler memory (dask + zarr-python);
               one run per size, curves in ``benchmarks/README.md``
=============  =====================================================================

``--quick`` uses small sizes and one repeat (under a minute or two on 2 cores);
without it, the full sizes the issues name. Each benchmark prints its own table of
figures and ratios; ``--markdown`` also writes everything, with the machine it ran on,
to a file (the README's benchmark section is made this way).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

BENCHMARKS = {
    "array_io": "bench_array_io.py",
    "cache": "bench_cache_sync.py",
    "graph": "bench_graph.py",
    "map": "bench_map.py",
    "xarray": "bench_xarray.py",
    "sharding": "bench_sharding.py",
    "reductions": "bench_reductions.py",
    "objects": "bench_object_storage.py",
    "resume": "bench_resume.py",
    "rechunk": "bench_rechunk.py",
    "pyramid": "bench_pyramid.py",
    "labels": "bench_labels.py",
    "zarrs": "bench_zarrs.py",
    "cluster": "bench_cluster.py",
    "scale": "bench_scale.py",
}
# Benchmarks that run each case once (their figures are curves over sizes, not medians).
ONE_RUN = {"scale"}


def machine() -> str:
    """One line about the machine and the library versions."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        memory = float("nan")
    versions = []
    for package in ("chunkflow", "numpy", "dask", "zarr", "tensorstore", "numcodecs",
                    "xarray"):
        try:
            versions.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            pass
    return (f"{platform.machine()}, {os.cpu_count()} cores, {memory:.0f} GiB RAM, "
            f"Python {platform.python_version()}; " + ", ".join(versions))


def run(name: str, quick: bool, repeat: int | None) -> tuple[str, float]:
    command = [sys.executable, str(HERE / BENCHMARKS[name])]
    if quick:
        command.append("--quick")
    if (repeat is not None or quick) and name not in ONE_RUN:
        command += ["--repeat", str(repeat or 1)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    seconds = time.perf_counter() - start
    output = done.stdout
    if done.returncode:
        output += f"\n(failed with exit code {done.returncode})\n{done.stderr[-2000:]}"
    return output, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    parser.add_argument("--repeat", type=int, default=None, help="runs per figure")
    parser.add_argument("--only", default=",".join(BENCHMARKS),
                        help=f"comma-separated subset of {', '.join(BENCHMARKS)}")
    parser.add_argument("--markdown", type=Path, help="also write the results to this file")
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from "
                     f"{', '.join(BENCHMARKS)}")
    header = f"Machine: {machine()}\nMode: {'quick' if args.quick else 'full'}"
    print(header, flush=True)
    sections = [header]
    failed = False
    for name in chosen:
        print(f"\n== {name} ==", flush=True)
        output, seconds = run(name, args.quick, args.repeat)
        failed |= "(failed with exit code" in output
        print(output.rstrip(), flush=True)
        print(f"({seconds:.0f} s)", flush=True)
        sections.append(f"### {name}\n\n```\n{output.rstrip()}\n```")
    if args.markdown:
        args.markdown.write_text("\n\n".join(sections) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
