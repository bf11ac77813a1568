"""zarrs/zarr_benchmarks' scenarios, with chunkflow as one more implementation.

The suite (github.com/zarrs/zarr_benchmarks) times Zarr V3 implementations on three
1024^3 uint16 datasets (``benchmarks/zarrs_data.py``: uncompressed 256^3 chunks,
zstd 256^3 chunks, zstd 256^3 shards of 64^3 inner chunks) in four scenarios:

==============  =================================================================
``read_all``    the whole array in one call (``z[:]``; through dask ``.compute()``)
``read_chunks`` chunk by chunk (shard by shard), ``concurrency`` reads at a time
                (through dask: a no-op task per block on ``concurrency`` threads)
``read_inner``  the sharded dataset inner chunk by inner chunk, ``concurrency`` at
                a time (no dask variant, as in the suite)
``roundtrip``   read the array and write it to a new array of the same metadata
                (through dask: ``da.to_zarr`` / ``chunkflow.store``)
==============  =================================================================

Implementations, each measured in a fresh process (``benchmarks/zarrs_child.py``) so
that its peak resident set is its own: ``chunkflow`` (no arguments: its default
path) and ``chunkflow-dask`` (``chunkflow.to_dask(z)``), zarr-python 3 with its
default codec pipeline (``zarr``, ``zarr-dask``) and with
``zarrs.ZarrsCodecPipeline`` (``zarrs``, ``zarrs-dask``; the suite's settings),
``tensorstore``; and two floors on the same cores: ``floor-decode`` (the same bytes
read and decoded with numcodecs, no Zarr library; for the round trip, also encoded
and written with a temporary file + rename, and ``floor-inplace`` without the
rename) and ``floor-disk`` (only reading the bytes). See ``zarrs_peers.py`` and
``zarrs_floors.py`` for exactly what each runs.

The suite takes the best of 5 runs, each after dropping the page cache (``sudo``).
Here each figure is the median of ``--repeat`` runs with its range, the runs of all
implementations interleaved; ``--cache cold`` (the default) evicts the dataset's
files from the page cache before every run (``posix_fadvise(DONTNEED)``, no root
needed), ``--cache warm`` reads them from the page cache. The timed part is the
work itself (as the suite's scripts print it), not the interpreter's start and
imports; peak memory is the process's VmHWM, imports included. Each
implementation's first run of a case checks every value read against the formula
(untimed).

Run by hand, with nothing else running (the datasets, 2.6 GB, are written once into
``--data``, default ``~/.cache/chunkflow-benchmarks/zarrs``)::

    python benchmarks/bench_zarrs.py [--quick] [--repeat 5] [--cache cold|warm]
        [--only read_all,read_chunks,read_inner,roundtrip] [--concurrency 1,2,4,8]
        [--impls chunkflow,zarrs,...] [--datasets uncompressed,compressed,sharded]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks.zarrs_data import DATASETS, Dataset, ensure  # noqa: E402

SCENARIOS = ("read_all", "read_chunks", "read_inner", "roundtrip")
IMPLS = ("chunkflow", "zarr", "zarrs", "tensorstore", "chunkflow-dask", "zarr-dask",
         "zarrs-dask", "floor-decode", "floor-inplace", "floor-disk")
STANDALONE_PEERS = ("zarr", "zarrs", "tensorstore")
DASK_PEERS = ("zarr-dask", "zarrs-dask")
NEEDS = {"zarr": "zarr", "zarrs": "zarrs", "tensorstore": "tensorstore",
         "zarr-dask": "zarr", "zarrs-dask": "zarrs"}
DEFAULT_DATA = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / \
    "chunkflow-benchmarks" / "zarrs"


def impls_for(scenario: str, chosen: tuple[str, ...]) -> list[str]:
    """The implementations a scenario runs (the suite's: no dask for inner chunks)."""
    found = []
    for impl in chosen:
        if impl in NEEDS and importlib.util.find_spec(NEEDS[impl]) is None:
            continue
        if scenario == "read_inner" and impl.endswith("dask"):
            continue
        if impl == "floor-inplace" and scenario != "roundtrip":
            continue
        if impl == "floor-disk" and scenario == "roundtrip":
            continue
        found.append(impl)
    return found


def evict(data: Dataset) -> None:
    """Drop the dataset's files from the page cache (clean pages; no root needed)."""
    for name in data.files():
        fd = os.open(name, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def measure(impl: str, scenario: str, data: Dataset, concurrency: int, cold: bool,
            verify: bool) -> dict[str, float | str]:
    """One fresh child process: the JSON line it prints."""
    out = data.path.with_name(f"roundtrip-{os.getpid()}.zarr")
    if scenario == "roundtrip":
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        shutil.copy(data.path / "zarr.json", out / "zarr.json")
    if cold:
        evict(data)
    codec = "none" if data.name == "uncompressed" else "zstd"
    command = [sys.executable, str(HERE / "zarrs_child.py"), impl, scenario, str(data.path),
               str(data.side), str(data.chunk[0]), str(data.inner[0]), codec,
               str(concurrency), str(out)] + (["--verify"] if verify else [])
    try:
        done = subprocess.run(command, capture_output=True, text=True, cwd=HERE.parent,
                              env={**os.environ, "PYTHONPATH": str(HERE.parent)})
    finally:
        shutil.rmtree(out, ignore_errors=True)
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr else "failed"}
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


class Case:
    """The runs of every implementation on one (scenario, dataset, concurrency)."""

    def __init__(self, scenario: str, data: Dataset, concurrency: int) -> None:
        self.scenario, self.data, self.concurrency = scenario, data, concurrency
        self.seconds: dict[str, list[float]] = {}
        self.cpu: dict[str, list[float]] = {}
        self.rss: dict[str, list[float]] = {}
        self.notes: dict[str, str] = {}

    @property
    def label(self) -> str:
        more = f", concurrency {self.concurrency}" if self.scenario.startswith(("read_c", "read_i")) else ""
        return f"{self.scenario}, {self.data.name}{more}"

    def run(self, impls: list[str], repeat: int, cold: bool, verify_only: bool) -> None:
        for impl in impls:  # the checked run first: correctness, and imports warmed
            got = measure(impl, self.scenario, self.data, self.concurrency, cold, True)
            if "error" in got or got.get("check") != "ok":
                self.notes[impl] = str(got.get("error") or got.get("check"))
            elif verify_only:
                self._add(impl, got)
        if verify_only:
            return
        for _ in range(repeat):  # interleaved: noise hits every implementation alike
            for impl in impls:
                if impl in self.notes:
                    continue
                got = measure(impl, self.scenario, self.data, self.concurrency, cold, False)
                if "error" in got:
                    self.notes[impl] = str(got["error"])
                else:
                    self._add(impl, got)

    def _add(self, impl: str, got: dict[str, float | str]) -> None:
        self.seconds.setdefault(impl, []).append(float(got["seconds"]))
        self.cpu.setdefault(impl, []).append(float(got["cpu"]))
        self.rss.setdefault(impl, []).append(float(got["rss"]) / 2**20)

    def best(self, peers: tuple[str, ...]) -> str | None:
        found = [p for p in peers if p in self.seconds]
        return min(found, key=lambda p: _median(self.seconds[p])) if found else None

    def report(self) -> list[str]:
        lines = [f"{self.label}: seconds median [range] of {len(self.seconds.get('chunkflow', []))}"
                 ", CPU seconds, peak RSS MiB"]
        for impl, secs in self.seconds.items():
            lines.append(f"  {impl:15s} {_median(secs):8.3f} [{min(secs):.3f}-{max(secs):.3f}]"
                         f"  cpu {_median(self.cpu[impl]):7.3f}  rss {_median(self.rss[impl]):7.0f}")
        for impl, note in self.notes.items():
            lines.append(f"  {impl:15s} FAILED: {note}")
        lines += [f"  -> {line}" for line in self.ratios()]
        return lines

    def ratios(self) -> list[str]:
        lines = []
        for ours, peers in (("chunkflow", STANDALONE_PEERS), ("chunkflow-dask", DASK_PEERS)):
            best = self.best(peers)
            if ours not in self.seconds or best is None:
                continue
            mine = _median(self.seconds[ours])
            lowest = min(_median(self.rss[p]) for p in peers if p in self.rss)
            line = (f"{ours}: {_median(self.seconds[best]) / mine:.2f}x the best peer ({best}); "
                    f"memory {_median(self.rss[ours]) / lowest:.2f}x the lowest peer's")
            for floor in ("floor-decode", "floor-inplace", "floor-disk"):
                if floor in self.seconds:
                    line += f"; {mine / _median(self.seconds[floor]):.2f}x {floor}'s time"
            lines.append(line)
        return lines

    def summary_rows(self) -> list[str]:
        """Markdown rows: case | chunkflow | best peer | ratio | floor | memory."""
        rows = []
        for ours, peers in (("chunkflow", STANDALONE_PEERS), ("chunkflow-dask", DASK_PEERS)):
            best = self.best(peers)
            if ours not in self.seconds or best is None:
                continue
            mine, theirs = _median(self.seconds[ours]), _median(self.seconds[best])
            floor = _median(self.seconds.get("floor-decode", []))
            mem = _median(self.rss[ours])
            low = min((_median(self.rss[p]), p) for p in peers if p in self.rss)
            kind = "dask" if ours.endswith("dask") else "standalone"
            rows.append(f"| {self.label} ({kind}) | {mine:.3f} s, {mem:.0f} MiB | {best} "
                        f"{theirs:.3f} s | {theirs / mine:.2f}x | {floor:.3f} s "
                        f"({mine / floor:.2f}x) | {low[1]} {low[0]:.0f} MiB ({mem / low[0]:.2f}x) |")
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="256^3 datasets, one checked run per case, concurrency 2")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--cache", choices=("cold", "warm"), default="cold")
    parser.add_argument("--only", default=",".join(SCENARIOS))
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--concurrency", default=None)
    parser.add_argument("--impls", default=",".join(IMPLS))
    args = parser.parse_args()
    side = 256 if args.quick else 1024
    found = ensure(args.data, side)
    chosen = tuple(args.impls.split(","))
    levels = [int(c) for c in (args.concurrency or ("2" if args.quick else "1,2,4,8")).split(",")]
    print(f"zarrs/zarr_benchmarks scenarios, {side}^3 uint16; page cache {args.cache}; "
          f"{'one checked run each (quick)' if args.quick else f'medians of {args.repeat}'}",
          flush=True)
    summary = []
    for scenario in args.only.split(","):
        for name in args.datasets.split(","):
            if scenario == "read_inner" and name != "sharded":
                continue
            for concurrency in levels if scenario.startswith(("read_c", "read_i")) else [0]:
                case = Case(scenario, found[name], concurrency)
                case.run(impls_for(scenario, chosen), args.repeat, args.cache == "cold",
                         verify_only=args.quick)
                print("\n".join(case.report()), flush=True)
                summary += case.summary_rows()
    print("\n| case | chunkflow | best peer | peer / chunkflow | decode floor (chunkflow / "
          "floor) | lowest peer memory |\n|---|---|---|---|---|---|")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
