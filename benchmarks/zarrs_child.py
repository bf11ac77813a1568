"""One measurement of bench_zarrs, in a fresh process: one implementation, one
scenario, one dataset. Prints one JSON line: the seconds and CPU seconds of the timed
part, and the process's peak resident set (VmHWM) when it ended.

    python benchmarks/zarrs_child.py IMPL SCENARIO PATH SIDE CHUNK INNER CODEC
                                     CONCURRENCY OUT [--verify]

Everything before the timer starts (imports, opening a handle where the suite opens
it first, creating the round trip's output) is outside the timed part, as in the
suite's scripts. With ``--verify`` every value read (or written, for a round trip)
is compared with the dataset's formula after the timer stops; without it, results
are dropped as the suite drops them.
"""

from __future__ import annotations

import json
import resource
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from benchmarks import zarrs_floors as floors  # noqa: E402
from benchmarks import zarrs_peers as peers  # noqa: E402
from benchmarks.zarrs_data import expected  # noqa: E402

Region = tuple[slice, ...]
Keep = Callable[[Region | None, Any], None]


def peak_rss() -> int:
    """This process's peak resident set in bytes (VmHWM, not inherited ru_maxrss)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def cpu_seconds() -> tuple[float, float, int]:
    """User and system CPU seconds of this process so far, and its page faults."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime, usage.ru_minflt + usage.ru_majflt


class Checker:
    """Collects what was read: compares regions with the formula, sums the rest."""

    def __init__(self, verify: bool) -> None:
        self.verify = verify
        self.lock = threading.Lock()
        self.total = 0
        self.count = 0
        self.bad: list[str] = []

    def keep(self, region: Region | None, value: Any) -> None:
        if not self.verify:
            return
        value = np.asarray(value)
        with self.lock:
            self.count += 1
            if region is None:
                self.total += int(value.sum(dtype="u8"))
            elif not np.array_equal(value, expected(region)):
                self.bad.append(str(region))


# --------------------------------------------------------------------- chunkflow


def _open(path: str, mode: str = "r") -> Any:
    import chunkflow

    return chunkflow.open_array(path, mode=mode)


def cf_read_regions(path: str, regions: Sequence[Region], concurrency: int, keep: Keep) -> None:
    z = _open(path)
    if concurrency == 1:
        for region in regions:
            keep(region, z[region])
        return
    from concurrent.futures import ThreadPoolExecutor

    def one(region: Region) -> None:
        keep(region, z[region])

    with ThreadPoolExecutor(concurrency) as pool:
        for _ in pool.map(one, regions):
            pass


def cf_roundtrip(path: str, out: str) -> None:
    target = _open(out, "r+")
    target[...] = _open(path)  # a chunked source: copied a few chunks at a time


def cf_dask_read_all(path: str) -> Any:
    import chunkflow

    return chunkflow.to_dask(_open(path)).compute()


def cf_dask_read_blocks(path: str, concurrency: int, keep: Keep) -> None:
    import chunkflow

    peers.dask_read_blocks(chunkflow.to_dask(_open(path)), concurrency,
                           lambda value: keep(None, value))


def cf_dask_roundtrip(path: str, out: str) -> None:
    import chunkflow

    chunkflow.store(chunkflow.to_dask(_open(path)), _open(out, "r+"))


# ------------------------------------------------------------------ dispatching


def _imports(impl: str) -> None:
    """Import (and configure) the implementation before the timer starts."""
    if impl.startswith("chunkflow"):
        # chunkflow loads its graph functions on first use: load them before the timer,
        # as the peers' code is loaded.
        import chunkflow.graph  # noqa: F401
        if impl.endswith("dask"):
            import dask.array  # noqa: F401
    elif impl.startswith("zarr"):
        peers.configure_zarr(impl)
        if impl.endswith("dask"):
            import dask.array  # noqa: F401
    elif impl == "tensorstore":
        import tensorstore  # noqa: F401
    else:
        import numcodecs  # noqa: F401


def _regions(side: int, step: int) -> list[Region]:
    starts = range(0, side, step)
    return [(slice(a, a + step), slice(b, b + step), slice(c, c + step))
            for a in starts for b in starts for c in starts]


def run(impl: str, scenario: str, path: str, geo: floors.Geometry, concurrency: int,
        out: str, checker: Checker) -> Any:
    """The timed part. Returns the whole array for read_all (checked afterwards)."""
    keep = checker.keep
    regions = _regions(geo.side, geo.inner if scenario == "read_inner" else geo.chunk)
    inner = scenario == "read_inner"
    table: dict[str, Callable[[], Any]] = {}
    if scenario == "read_all":
        table = {
            "chunkflow": lambda: _open(path)[...],
            "chunkflow-dask": lambda: cf_dask_read_all(path),
            "zarr": lambda: peers.zarr_read_all(path),
            "zarrs": lambda: peers.zarr_read_all(path),
            "zarr-dask": lambda: peers.zarr_dask_read_all(path),
            "zarrs-dask": lambda: peers.zarr_dask_read_all(path),
            "tensorstore": lambda: peers.ts_read_all(path),
            "floor-decode": lambda: floors.read_all(geo, regions),
            "floor-disk": lambda: floors.disk(geo, regions, concurrency, False),
        }
    elif scenario in ("read_chunks", "read_inner"):
        floor = floors.read_inner if inner else floors.read_chunks
        table = {
            "chunkflow": lambda: cf_read_regions(path, regions, concurrency, keep),
            "chunkflow-dask": lambda: cf_dask_read_blocks(path, concurrency, keep),
            "zarr": lambda: peers.zarr_read_regions(path, regions, concurrency, keep),
            "zarrs": lambda: peers.zarr_read_regions(path, regions, concurrency, keep),
            "zarr-dask": lambda: peers.zarr_dask_read_blocks(
                path, concurrency, lambda value: keep(None, value)),
            "zarrs-dask": lambda: peers.zarr_dask_read_blocks(
                path, concurrency, lambda value: keep(None, value)),
            "tensorstore": lambda: peers.ts_read_regions(path, regions, concurrency, keep),
            "floor-decode": lambda: floor(geo, regions, concurrency,
                                          lambda value: keep(None, value)),
            "floor-disk": lambda: floors.disk(geo, regions, concurrency, inner),
        }
    elif scenario == "roundtrip":
        table = {
            "chunkflow": lambda: cf_roundtrip(path, out),
            "chunkflow-dask": lambda: cf_dask_roundtrip(path, out),
            "zarr": lambda: peers.zarr_roundtrip(path, out),
            "zarrs": lambda: peers.zarr_roundtrip(path, out),
            "zarr-dask": lambda: peers.zarr_dask_roundtrip(path, out),
            "zarrs-dask": lambda: peers.zarr_dask_roundtrip(path, out),
            "tensorstore": lambda: peers.ts_roundtrip(path, out, regions),
            "floor-decode": lambda: floors.roundtrip(geo, regions, out),
            "floor-inplace": lambda: floors.roundtrip(geo, regions, out, atomic=False),
        }
    return table[impl]()


def check(impl: str, scenario: str, result: Any, geo: floors.Geometry, out: str, checker: Checker) -> str:
    """After the timer: compare what was read (or written) with the formula."""
    if scenario == "read_all":
        if result is None:
            return "ok" if impl == "floor-disk" else "nothing was returned"
        whole = np.asarray(result)
        for region in _regions(geo.side, geo.chunk):
            if not np.array_equal(whole[region], expected(region)):
                return f"read_all differs in {region}"
        return "ok"
    if scenario == "roundtrip":
        import zarr

        written = zarr.open_array(out, mode="r")
        for region in _regions(geo.side, geo.chunk):
            if not np.array_equal(written[region], expected(region)):
                return f"round trip output differs in {region}"
        return "ok"
    if checker.bad:
        return f"{len(checker.bad)} regions differ, first {checker.bad[0]}"
    if checker.total:  # blocks read without their regions: every element, once
        want = sum(int(expected(r).sum(dtype="u8")) for r in _regions(geo.side, geo.chunk))
        if checker.total != want:
            return f"the sum of what was read is {checker.total}, expected {want}"
    return "ok" if checker.count or impl == "floor-disk" else "nothing was read"


def main(argv: list[str]) -> None:
    impl, scenario, path, side, chunk, inner, codec, concurrency, out = argv[:9]
    geo = floors.Geometry(path, int(side), int(chunk), int(inner), codec)
    checker = Checker("--verify" in argv)
    _imports(impl)
    before, start = cpu_seconds(), time.perf_counter()
    result = run(impl, scenario, path, geo, int(concurrency), out, checker)
    seconds = time.perf_counter() - start
    user, system, faults = (b - a for a, b in zip(before, cpu_seconds()))
    peak = peak_rss()
    verdict = check(impl, scenario, result, geo, out, checker) if checker.verify else "unchecked"
    print(json.dumps({"seconds": seconds, "cpu": user + system, "user": user, "sys": system,
                      "faults": faults, "rss": peak, "check": verdict}))


if __name__ == "__main__":
    main(sys.argv[1:])
